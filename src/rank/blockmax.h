/*
** blockmax.h — BM25's top-k over long postings lists, document at a time
** with block-max bounds (bm25.c's pruned path for big queries;
** docs/RANKING.md §5).
**
** The keys' postings lists (ascending seq) are cut into blocks of
** A2M_BMW_BLOCK postings; a block's bound is the contribution of its
** highest tf at its shortest length, which no posting of the block can
** exceed (a contribution rises with tf and falls with dl). The lists are
** walked together, a record at a time: where the blocks under the current
** record, summed over the keys, cannot beat the threshold (the caller's
** floor times the admit-th best score so far), every record up to the end
** of the first of those blocks is skipped without reading its postings; a
** record whose own keys' blocks cannot beat it is skipped; every other
** record is scored exactly, as bm25.c's complete path scores it, to the
** last bit (a2m_bm25_contrib, a2m_acc_add, keys in the query's order).
*/
#ifndef A2M_BLOCKMAX_H
#define A2M_BLOCKMAX_H

#include <stddef.h>
#include <stdint.h>

#include "rank/accumulator.h"
#include "store/store.h"

#define A2M_BMW_BLOCK 64

/* The most keys a query walked here may have (bm25.c prunes longer ones term at a time). */
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
** One key of the query: its postings (borrowed), scale, and its word
** (1-based; the keys of a word contiguous, words ascending).
*/
typedef struct a2m_bmw_key {
	const a2m_posting *v;
	size_t             n;
	double             scale;
	uint32_t           word;
} a2m_bmw_key;

/* The walk's scratch, kept between queries (zero-initialise; a2m_bmw_free). */
typedef struct a2m_bmw {
	double *bound;    /* every key's block bounds, key after key */
	size_t  nbound;
	size_t *at;       /* per key: where its bounds start, its cursor, its block */
	size_t  nat;
	double *heap;     /* the admit best scores so far, a min-heap */
	size_t  nheap;
	double *reach;    /* per word: its keys' largest block bound */
	size_t  nreach;
	size_t  skipped;  /* the last run's postings never scored (tests, bench) */
	size_t  scored;   /* and scored */
} a2m_bmw;

/*
** Scores into acc (begun by the caller) every record of keys[0..nkeys)
** that may reach the threshold, and sets *rest to a bound of the sum of
** any record left out (0 when none was). admit: how many best records must
** be kept; floor (0, 1]: the least share of a relevance the caller's blend
** keeps. Returns 0, or -1 when memory runs out.
*/
int a2m_bmw_run(a2m_bmw *w, const a2m_bmw_key *keys, size_t nkeys, double k0, double k1,
		size_t admit, double floor, a2m_acc *acc, double *rest);

/* Frees w's arrays. */
void a2m_bmw_free(a2m_bmw *w);

#endif
