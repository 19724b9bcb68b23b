/*
** sqlite_index_internal.h — the SQLite term index's state, shared by
** sqlite_index.c (the buffer and its writing out), sqlite_index_flush.c
** (the buffer made into a segment), sqlite_index_read.c (the reads) and
** sqlite_index_tail.c (the tail: committed postings not yet written as a
** segment). Nothing else
** includes it; the rest of the engine sees sqlite_index.h.
*/
#ifndef A2M_SQLITE_INDEX_INTERNAL_H
#define A2M_SQLITE_INDEX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store/postings_cache.h"
#include "store/sqlite_index.h"
#include "store/sqlite_segments.h"

/* One posting waiting to be written (sign +1) or deleted (-1). */
typedef struct pending_op {
	uint64_t prefix;    /* the term's first 8 bytes, big-endian, zero-padded */
	size_t   term;      /* offset in the arena */
	uint32_t len;
	uint32_t tf, dl;
	int      sign;
	int64_t  seq;
	size_t   group;     /* its term's term_group, set by flush */
	uint32_t chain;     /* the op before it in its term's chain (index + 1; 0: none) */
	uint32_t slot;      /* its chain's head in a2m_sqlite_index.heads */
} pending_op;

/*
** The ops of one distinct term, as flush gathers them: a commit of 500
** records buffers ~4 400 ops of ~2 000 terms, so sorting the terms, not
** the ops, is a fraction of the work; a term's ops, in arrival order, are
** already in seq order unless an older record was updated or removed.
*/
typedef struct term_group {
	uint64_t prefix;    /* as pending_op's */
	size_t   term;      /* offset in the arena */
	uint32_t len;
	int      unsorted;  /* an op came with a lower seq than the one before */
	size_t   slot;      /* where the hash table holds it */
	int64_t  last;      /* the seq of its latest op */
	size_t   n, at;     /* its ops; then their end in a2m_sqlite_index.byterm */
} term_group;

/* A term_group as flush sorts them: by prefix first, with no look-up. */
typedef struct group_key {
	uint64_t prefix;
	size_t   group;
} group_key;

/* Chain heads of the buffer's terms (a power of two). */
#define A2M_TAIL_SLOTS 4096

struct a2m_sqlite_index {
	sqlite3        *db;
	a2m_indexer    *ix;
	pending_op     *ops;
	size_t          nops, cap;
	char           *arena;
	size_t          used, acap;
	a2m_segments   *segs;
	a2m_seg_bytes   list;     /* a term's list as flush encodes it */
	term_group     *groups;   /* flush's scratch: the distinct terms, */
	size_t          ngroups, groups_cap;
	size_t         *slots;    /* a hash table of them (index + 1; 0: empty, all between flushes), */
	size_t          slots_cap;
	group_key      *sorted;   /* their keys in term order (and room to sort them), */
	size_t          sorted_cap;
	size_t         *byterm;   /* and the ops' indices by (term, seq, arrival) */
	size_t          byterm_cap;
	sqlite3_stmt   *stats;
	sqlite3_stmt   *stats_add;
	sqlite3_stmt   *old_content;
	a2m_index_stats pending;  /* not yet in a2m_index_stats */
	a2m_pcache     *cache;    /* postings read outside transactions; NULL: none */
	size_t          cache_budget;  /* the bytes it may hold now */
	int             cache_scales;  /* its budget follows the index (no option set it) */
	int64_t         cache_entries; /* the segments' entries it was scaled for */
	const int64_t  *seg_entries;   /* the segments' entries now (a2m_segments_entries) */
	a2m_posting   *rows;     /* a term's postings as they are read */
	size_t          rows_cap;
	int             wrote;    /* postings written since a2m_sqlite_index_take_wrote */
	size_t          reads;    /* terms read from SQLite (a2m_sqlite_index_reads) */
	/* The tail (sqlite_index_tail.c): the buffer's ops up to .committed. */
	uint32_t       *heads;    /* A2M_TAIL_SLOTS chains of ops by term (op index + 1) */
	size_t         *hits;     /* a term's ops as a read collects them */
	size_t          hits_cap;
	size_t          records;  /* records whose postings the buffer holds */
	int64_t         mark;     /* the file's mark: every seq up to it is in the segments */
	int64_t         top;      /* the highest seq the buffer or the segments account for */
	a2m_sqlite_index_point committed; /* the buffer as the file holds it (the tail) */
	int             tail_known;   /* the buffer holds the tail above .mark */
	int             tail_stamped; /* ... as of tail_version (else: look again) */
	unsigned        tail_version;
	int             must_flush;   /* this transaction's ops cannot wait (a removal,
	                                 a rewrite, a seq at or below the mark) */
	int             flushed;      /* this transaction wrote the buffer out */
	int             force;        /* the next commit writes the tail out */
	int             closing;      /* the close's own transaction: begin no merge */
	sqlite3_stmt   *tail_rows;    /* the mark and the records above it */
	sqlite3_stmt   *mark_set;
};

/* ---- sqlite_index_budget.c ---------------------------------------------- */

/* The budget a new index's cache starts with: the base, or a test's. */
size_t a2m_sqlite_index_first_budget(void);

/* Makes x's cache budget what the segments' entries now call for. */
void a2m_sqlite_index_rescale_cache(a2m_sqlite_index *x);

/*
** When x's cache budget follows the index, makes it what the live segments
** as last read call for (a2m_sqlite_index_scaled_budget): called after
** each term's read from SQLite, inline, as it costs two loads and a
** comparison unless the segments changed since.
*/
static inline void a2m_sqlite_index_scale_cache(a2m_sqlite_index *x)
{
	if (x->cache_scales && x->seg_entries && *x->seg_entries != x->cache_entries)
		a2m_sqlite_index_rescale_cache(x);
}

/* ---- sqlite_index.c ----------------------------------------------------- */

/*
** Writes the whole buffer out inside the caller's transaction: one segment
** (then the merges due, when merge is set), the figures, the mark. Returns
** 0 or a negative code (the caller rolls back).
*/
int a2m_sqlite_index_write(a2m_sqlite_index *x, a2m_store *base, int merge);

/*
** Writes the buffered postings (x->ops, x->nops > 0) as one new segment,
** then merges when merge is set (sqlite_index_flush.c); leaves the buffer
** for the caller to empty. 0, or a store error (out of memory, SQLite).
*/
int a2m_sqlite_index_write_segment(a2m_sqlite_index *x, a2m_store *base, int merge);

/* ---- sqlite_index_tail.c ------------------------------------------------ */

/* Links op i (just added) into its term's chain. */
void a2m_tail_link(a2m_sqlite_index *x, size_t i);

/* Takes the ops from n on out of their chains (the buffer shrinks to n). */
void a2m_tail_unlink_to(a2m_sqlite_index *x, size_t n);

/* Empties every chain (the buffer was written out). */
void a2m_tail_clear_chains(a2m_sqlite_index *x);

/*
** Visits the buffer's postings of term in ascending seq (every op a +1 above
** the mark: the reads flush the buffer first otherwise). Returns 0, visit's
** negative code, or -1 for memory.
*/
int a2m_tail_visit(a2m_sqlite_index *x, a2m_store *base, const char *term, size_t len,
		   a2m_posting_visit visit, void *ctx);

/*
** Brings the buffer to what the file holds above its mark (outside a write
** transaction: a read; inside: the begin, with the write lock): nothing
** when the data version is the one it was synced at, else the records
** above the mark it lacks, analysed. Returns 0 or a negative code (the
** tail is then unknown and read again next time).
*/
int a2m_tail_sync(a2m_sqlite_index *x, a2m_store *base);

/* Writes the mark (x->top) into a2m_meta, inside the caller's transaction. */
int a2m_tail_mark_write(a2m_sqlite_index *x, a2m_store *base);

/* Finalizes the tail's statements and frees its arrays. */
void a2m_tail_close(a2m_sqlite_index *x);

#endif
