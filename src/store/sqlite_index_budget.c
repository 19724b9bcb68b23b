/*
** sqlite_index_budget.c — how many bytes the SQLite term index's postings
** cache may hold (sqlite_index.h): the option's, else a budget that
** follows the index, scaled as terms are read (a2m_sqlite_index_scale_cache).
** Apart from sqlite_index.c, which opens the index and writes it, as the
** policy is a concern of its own.
*/
#include <stdint.h>
#include <stdlib.h>

#include "store/postings_cache.h"
#include "store/sqlite_index_internal.h"

/*
** The bytes one connection's postings cache may hold start at
** A2M_SQLITE_INDEX_CACHE_BASE (64 MiB). A list read a block at a time
** counts its bytes, its skip table and the blocks decoded so far
** (postings_cache.h); at 10M records the commonest word's is about 18 MB
** before any block is decoded (14 MB of bytes), so the commonest words of
** a workload stay between queries (32 MiB, counted in postings, kept none
** of them: half the budget is the most one entry may hold).
**
** Unless the option sets it, the budget grows with the index: as many
** bytes as its lists hold, estimated from their entries at
** POSTINGS_ENTRY_BYTES each (the lists of the bench's 1M and 10M files:
** 36.5 MB for 8.8 M entries, 340 MB for 88.0 M, 4.2 and 3.9 bytes), up to
** A2M_SQLITE_INDEX_CACHE_MOST. At 10M the twelve commonest words' bytes
** alone are 58 MB, and 75% of the lists a recall copied out of SQLite
** with 64 MiB had been read before and evicted (docs/BENCHMARKS.md).
*/
#define POSTINGS_ENTRY_BYTES 4

#ifdef A2M_TEST_HOOKS
/* a2m_sqlite_index_cache_budget_for_tests: 0 = the option's or the scaled budget. */
static size_t cache_budget_for_tests;
/* a2m_sqlite_index_entry_bytes_for_tests: 0 = POSTINGS_ENTRY_BYTES. */
static size_t entry_bytes_for_tests;

void a2m_sqlite_index_cache_budget_for_tests(size_t postings)
{
	cache_budget_for_tests = postings;
}

void a2m_sqlite_index_entry_bytes_for_tests(size_t bytes)
{
	entry_bytes_for_tests = bytes;
}
#else
#define cache_budget_for_tests ((size_t)0)
#define entry_bytes_for_tests ((size_t)0)
#endif

size_t a2m_sqlite_index_first_budget(void)
{
	return cache_budget_for_tests ? cache_budget_for_tests * sizeof(a2m_posting)
				      : A2M_SQLITE_INDEX_CACHE_BASE;
}

size_t a2m_sqlite_index_scaled_budget(int64_t entries)
{
	uint64_t per = entry_bytes_for_tests ? entry_bytes_for_tests : POSTINGS_ENTRY_BYTES;
	uint64_t most = A2M_SQLITE_INDEX_CACHE_MOST;
	if (entries <= 0 || (uint64_t)entries > most / per)
		return entries <= 0 ? A2M_SQLITE_INDEX_CACHE_BASE : (size_t)most;
	/* Whole MiB, so that a few more entries do not move it. */
	uint64_t b = ((uint64_t)entries * per + ((1u << 20) - 1)) & ~(uint64_t)((1u << 20) - 1);
	return b < A2M_SQLITE_INDEX_CACHE_BASE ? A2M_SQLITE_INDEX_CACHE_BASE : (size_t)b;
}

void a2m_sqlite_index_cache_budget(a2m_sqlite_index *x, size_t bytes)
{
	if (!x->cache || cache_budget_for_tests)
		return;
	/* 0: from the base, scaled at the reads (a2m_sqlite_index_scale_cache). */
	x->cache_scales = bytes == 0;
	x->cache_entries = 0;  /* the base's: scaled again at the next read */
	x->cache_budget = bytes ? bytes : A2M_SQLITE_INDEX_CACHE_BASE;
	a2m_pcache_budget(x->cache, x->cache_budget);
}

void a2m_sqlite_index_rescale_cache(a2m_sqlite_index *x)
{
	x->cache_entries = *x->seg_entries;
	size_t b = a2m_sqlite_index_scaled_budget(x->cache_entries);
	if (b != x->cache_budget) {
		x->cache_budget = b;
		a2m_pcache_budget(x->cache, b);
	}
}

size_t a2m_sqlite_index_cache_bytes(const a2m_sqlite_index *x)
{
	return x->cache ? x->cache_budget : 0;
}
