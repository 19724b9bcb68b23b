/*
** sqlite_vectors.h — the SQLite engine's vector rows (vector_index.h): a
** cache of the file's vectors (the caller's and the generated ones),
** built at the first vector search of either space, kept
** current by the engine's own writes, and rebuilt whenever another
** connection has committed to the file since (PRAGMA data_version). The
** file stays the truth; nothing here writes it.
**
** Every hook is a no-op until the cache is built, so a store that never
** answers a vector query pays nothing for it.
*/
#ifndef A2M_SQLITE_VECTORS_H
#define A2M_SQLITE_VECTORS_H

#include <sqlite3.h>

#include "store/store.h"

typedef struct a2m_sqlite_vectors a2m_sqlite_vectors;

/* A cache over db (borrowed; it must outlive the cache), not built yet. NULL: no memory. */
a2m_sqlite_vectors *a2m_sqlite_vectors_new(sqlite3 *db);

/* Frees the cache and its statements. NULL is a no-op. */
void a2m_sqlite_vectors_free(a2m_sqlite_vectors *v);

/* The engine's transaction began, committed, or was rolled back (or its commit failed). */
void a2m_sqlite_vectors_begin(a2m_sqlite_vectors *v);
void a2m_sqlite_vectors_commit(a2m_sqlite_vectors *v);
void a2m_sqlite_vectors_rollback(a2m_sqlite_vectors *v);

/*
** rec (borrowed) was written: inserted (seq the new rowid) or updated (seq
** 0 when the caller does not know it: it is looked up by rec->id).
*/
void a2m_sqlite_vectors_put(a2m_sqlite_vectors *v, const a2m_record *rec, int64_t seq);

/*
** The seq of record id, to be passed to a2m_sqlite_vectors_remove once its
** removal succeeded; 0 when the cache is not built (or there is no such record).
*/
int64_t a2m_sqlite_vectors_seq(a2m_sqlite_vectors *v, const char *id);
void    a2m_sqlite_vectors_remove(a2m_sqlite_vectors *v, int64_t seq);

/* Whether the cache is built (its hooks then keep every vector's tier, owner, salience). */
int a2m_sqlite_vectors_built(const a2m_sqlite_vectors *v);

/* The store's vector_search (store.h) for engine s. */
int a2m_sqlite_vectors_search(a2m_sqlite_vectors *v, a2m_store *s, const a2m_vector_search *q,
			      a2m_candidates *out);

#endif
