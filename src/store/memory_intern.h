/*
** memory_intern.h — the in-memory engine's interned strings: one shared,
** reference-counted copy of each tier, session, role and owner its
** records name, so that a million records of a thousand sessions hold a
** thousand copies of the names, and each record a pointer to one.
**
** An interned string is a plain NUL-terminated char array that stays put
** while any reference to it remains, so a record handed out points at it
** directly. get() is the only call that allocates; ref() and put() never
** do and never fail, which is what lets the engine's rollback free and
** re-attach entries without needing memory.
**
** Not thread-safe by itself: the engine calls it from writes only, which
** exclude every reader and every other write (store.h).
*/
#ifndef A2M_MEMORY_INTERN_H
#define A2M_MEMORY_INTERN_H

typedef struct a2m_mintern a2m_mintern;

/* An empty table. Returns NULL when memory runs out. */
a2m_mintern *a2m_mintern_new(void);

/* Frees the table and every string still in it. NULL is a no-op. */
void a2m_mintern_free(a2m_mintern *t);

/*
** The interned copy of str, with one more reference for the caller to put
** back. NULL str gives NULL (no reference taken). Returns NULL with
** *oom set when memory runs out (*oom is left alone otherwise).
*/
const char *a2m_mintern_get(a2m_mintern *t, const char *str, int *oom);

/* One more reference to an interned string (NULL: nothing). Cannot fail. */
void a2m_mintern_ref(const char *str);

/* Drops one reference (NULL: nothing); the last one frees the string. */
void a2m_mintern_put(a2m_mintern *t, const char *str);

/* How many distinct strings the table holds (for tests and the check). */
unsigned long a2m_mintern_count(const a2m_mintern *t);

#endif
