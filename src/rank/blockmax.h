/*
** blockmax.h — BM25's top-k over long postings lists, document at a time
** with block-max bounds (bm25_prune.c's pruned path for big queries;
** docs/RANKING.md §5).
**
** The keys' postings lists (ascending seq) are walked together, a record
** at a time, WAND over a word's distinct lists: where the lists under the
** current records cannot beat the threshold (the caller's floor times the
** admit-th best score so far) with their reaches, they are moved on unread;
** where the bounds of the blocks of A2M_BMW_BLOCK postings under them
** cannot, every record up to the first of those blocks' end is stepped
** over; every other record is scored exactly, as bm25.c's complete path
** scores it, to the last bit (a2m_bm25_contrib, a2m_acc_add, keys in the
** query's order). A block's bound is the best contribution over its (tf,
** dl) frontier (store.h a2m_tf_bound), kept by the index when it lends the
** postings, else computed here.
*/
#ifndef A2M_BLOCKMAX_H
#define A2M_BLOCKMAX_H

#include <stddef.h>
#include <stdint.h>

#include "rank/accumulator.h"
#include "store/store.h"

#define A2M_BMW_BLOCK A2M_POSTINGS_BLOCK

/* The most keys a query walked here may have (bm25_prune.c prunes longer ones term at a time). */
#define A2M_BMW_MAX_KEYS 256

/*
** What one posting of a key adds to its record's word: scale · tf / (tf +
** k0 + k1 · dl). One function for every path, so that their sums agree to
** the bit.
*/
static inline double a2m_bm25_contrib(double scale, uint32_t tf, uint32_t dl, double k0,
				      double k1)
{
	double t = tf;
	return scale * t / (t + k0 + k1 * dl);
}

/*
** The most a posting bounded by b (store.h) adds, at this query's scale
** and length normalisation; 0 for an empty bound. Exact while b's tf is at
** most 3 (the contribution of one of its postings), a bound above that.
** Not widened for rounding: the caller widens it.
*/
static inline double a2m_bm25_bound(double scale, const a2m_tf_bound *b, double k0, double k1)
{
	double best = 0;
	for (uint32_t t = 1; t <= 3 && t <= b->tf; t++) {
		double c = a2m_bm25_contrib(scale, t, b->dl[t - 1], k0, k1);
		best = c > best ? c : best;
	}
	if (b->tf >= 4) {
		double c = a2m_bm25_contrib(scale, b->tf, b->dl[3], k0, k1);
		best = c > best ? c : best;
	}
	return best;
}

/*
** One key of the query: its postings (borrowed, ascending seq), scale, and
** its word (1-based; the keys of a word contiguous, words ascending), with
** the bounds its index keeps (store.h a2m_postings_lent): blocks, one per
** A2M_BMW_BLOCK postings, and all, the whole list's; NULL when the index
** keeps none (then bounded here, all by a pass over the list, a block when
** the walk first asks for it).
*/
typedef struct a2m_bmw_key {
	const a2m_posting  *v;
	size_t              n;
	double              scale;
	uint32_t            word;
	const a2m_tf_bound *blocks;
	const a2m_tf_bound *all;
	/*
	** A list read a block at a time (store.h a2m_postings_lent; fill NULL:
	** v is whole and its blocks are of A2M_BMW_BLOCK): nblocks blocks,
	** start, last and blocks given, a block's postings read only after
	** fill(ctx, b). The walk fills the blocks its cursors stop in, and no
	** other.
	*/
	size_t              nblocks;
	const size_t       *start;
	const int64_t      *last;
	int               (*fill)(void *ctx, size_t b);
	/*
	** With fill, or NULL: store.h's peek. MaxScore probes a list it only
	** probes through it (a block not filled then, past what its owner
	** keeps decoded).
	*/
	int               (*peek)(void *ctx, size_t b, int64_t seq, a2m_peek_at *at,
				  a2m_posting *out);
	void               *ctx;
} a2m_bmw_key;

/* Per key, and per list, the walk's state (blockmax.c). */
typedef struct a2m_bmw_cursor a2m_bmw_cursor;
typedef struct lists a2m_bmw_lists;

/* Which walk a2m_bmw_run takes (a2m_bmw.walk). */
typedef enum a2m_bmw_walk {
	A2M_BMW_MAXSCORE = 0,  /* MaxScore over windows of seqs (maxscore.c): the default */
	A2M_BMW_WAND = 1       /* WAND with block-max bounds (blockmax.c) */
} a2m_bmw_walk;

/* The walk's scratch, kept between queries (zero-initialise; a2m_bmw_free). */
typedef struct a2m_bmw {
	a2m_bmw_cursor *cur;   /* per key */
	size_t          ncur;
	a2m_bmw_lists  *ls;
	double         *heap;  /* the admit best scores so far, a min-heap */
	size_t          nheap;
	double         *win;      /* MaxScore's window: per seq, its essential lists' sum */
	void           *winbits;  /* and which seqs of the window they hold */
	size_t          nwinbits; /* its bytes */
	void           *tabs;     /* per list, its usual contributions */
	a2m_bmw_walk    walk;     /* set by the caller before a run */
	size_t  skipped;  /* the last run's postings never scored (tests, bench) */
	size_t  filled;   /* the last run's blocks it had decoded (lists read a block at a time) */
	size_t  scored;   /* and scored */
	size_t  steps;    /* its steps: WAND's pivots, MaxScore's candidates (bench) */
} a2m_bmw;

/*
** Scores into acc (begun by the caller) every record of keys[0..nkeys)
** that may reach the threshold, walking the lists as w->walk says (both
** exact: the same records kept, the same sums, the same *rest bound them), and sets *rest to a bound of the sum of
** any record left out (0 when none was). admit: how many best records must
** be kept; floor (0, 1]: the least share of a relevance the caller's blend
** keeps. Returns 0; 1 when a list without bounds is not in ascending seq
** (nothing scored: score it another way); -1 when memory runs out.
*/
int a2m_bmw_run(a2m_bmw *w, const a2m_bmw_key *keys, size_t nkeys, double k0, double k1,
		size_t admit, double floor, a2m_acc *acc, double *rest);

/* Frees w's arrays. */
void a2m_bmw_free(a2m_bmw *w);

#ifdef A2M_TEST_HOOKS  /* the tests' build of the library only (Makefile) */
/*
** For tests: every list's reach, the bound
** both walks trust most, multiplied by share (1: as computed; below 1, too
** tight: a walk must then miss records, which tests/test_prune.c must
** catch).
*/
void a2m_bmw_reach_for_tests(double share);
#endif

#endif
