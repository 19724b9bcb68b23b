/*
** row_cache.h — the SQLite engine's memory of the records it read by seq
** (sqlite_read.c, visit_seqs).
**
** A recall reads its candidates one by one, best first: a b-tree step and
** the decoding of every column of each, about a third of a SQLite recall at
** 10k records once the locking was paid once per request. The records a
** store's recalls read are mostly the same few hundred, so the engine keeps
** copies of the ones read last, as the postings cache keeps postings
** (postings_cache.h), for as long as the database is the one they were read
** from: the caller passes the database's data version (SQLite's
** SQLITE_FCNTL_DATA_VERSION, which changes at every commit, this
** connection's or another's) and a version other than the one the copies
** were read at empties the cache. The engine fills and reads it only in a
** read bracket (store.h, read_begin), where the version is that of the
** snapshot being read, never inside a write transaction, whose rows may yet
** be rolled back. Least recently used records go first when it is full.
*/
#ifndef A2M_ROW_CACHE_H
#define A2M_ROW_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "store/record.h"

typedef struct a2m_row_cache a2m_row_cache;

/*
** A cache of at most max_rows records taking at most budget bytes in all
** (strings and vectors counted). NULL when memory runs out.
*/
a2m_row_cache *a2m_row_cache_new(size_t max_rows, size_t budget);

/* Frees the cache and its copies. NULL is a no-op. */
void a2m_row_cache_free(a2m_row_cache *c);

/* Forgets every record. */
void a2m_row_cache_clear(a2m_row_cache *c);

/* Empties the cache when version is not the one its records were read at. */
void a2m_row_cache_validate(a2m_row_cache *c, uint64_t version);

/*
** The cached record of seq, or NULL. Borrowed: valid until the next take or
** clear (or validate that empties the cache).
*/
const a2m_record *a2m_row_cache_get(a2m_row_cache *c, int64_t seq);

/*
** Moves rec into the cache (by rec->seq), making room by forgetting the
** least recently used, and returns the cached record (borrowed, as from
** get), rec left zeroed. Returns NULL, rec untouched, when it is not kept:
** bigger than a quarter of the budget, already kept, or no memory (a cache
** only speeds reads up).
*/
const a2m_record *a2m_row_cache_take(a2m_row_cache *c, a2m_record *rec);

/* Forgets the record of seq, if kept: this connection is changing it. */
void a2m_row_cache_forget(a2m_row_cache *c, int64_t seq);

/*
** Applies a touch (store.h) to the kept record of seq, as the database
** applies it to the row: access_count + add, accessed_at at least at. Recall
** touches the very records recalls read, so forgetting them would empty the
** cache of what it is for. The caller empties the cache if the transaction
** is rolled back instead.
*/
void a2m_row_cache_touch(a2m_row_cache *c, int64_t seq, int64_t add, int64_t at);

/*
** After this connection's own commit, which moved the data version from
** "from" to "to" and changed no record still kept (each was forgotten as
** it was written): the records stay, now as of "to". A cache not at "from"
** (another connection committed first) is emptied instead.
*/
void a2m_row_cache_adopt(a2m_row_cache *c, uint64_t from, uint64_t to);

/* How many records the cache holds (for tests). */
size_t a2m_row_cache_count(const a2m_row_cache *c);

#endif
