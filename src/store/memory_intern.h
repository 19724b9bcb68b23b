/*
** memory_intern.h — the in-memory engine's interned names: one shared,
** reference-counted copy of each combination of tier, session, role and
** owner its records carry, so that a million records of a thousand
** sessions hold a few thousand copies of those names, and each record one
** pointer to its combination (8 bytes, where four pointers took 32).
**
** A combination's strings are plain NUL-terminated char arrays that stay
** put while any reference to it remains, so a record handed out points at
** them directly. get() is the only call that allocates; put() never does
** and never fails, which is what lets the engine's rollback free and
** re-attach entries without needing memory.
**
** Not thread-safe by itself: the engine calls it from writes only, which
** exclude every reader and every other write (store.h).
*/
#ifndef A2M_MEMORY_INTERN_H
#define A2M_MEMORY_INTERN_H

/* One combination; a NULL field is a record without it (apart from ""). */
typedef struct a2m_mnames {
	const char *tier;
	const char *session;
	const char *role;
	const char *owner;
} a2m_mnames;

typedef struct a2m_mintern a2m_mintern;

/* An empty table. Returns NULL when memory runs out. */
a2m_mintern *a2m_mintern_new(void);

/* Frees the table and every combination still in it. NULL is a no-op. */
void a2m_mintern_free(a2m_mintern *t);

/*
** The interned combination equal to want (its strings borrowed), with one
** more reference for the caller to put back. Returns NULL when memory
** runs out.
*/
const a2m_mnames *a2m_mintern_get(a2m_mintern *t, const a2m_mnames *want);

/* Drops one reference (NULL: nothing); the last one frees the combination. */
void a2m_mintern_put(a2m_mintern *t, const a2m_mnames *n);

#endif
