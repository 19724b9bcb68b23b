/*
** bm25_internal.h — what the three files of the BM25 scorer share, for them
** only: bm25.c (the scorer, its sources and its pool of scratches),
** bm25_postings.c (reading a query's postings and what each adds) and
** bm25_prune.c (leaving out the records that cannot make the caller's
** list: MaxScore term at a time, block-max document at a time).
*/
#ifndef A2M_BM25_INTERNAL_H
#define A2M_BM25_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "rank/accumulator.h"
#include "rank/blockmax.h"
#include "rank/pool.h"
#include "rank/scorer.h"
#include "store/memory_index.h"

#define BM25_K1 1.2
#define BM25_B  0.75

/* The most words a pruned query may have (bm25_prune.c, rest_from's mask). */
#define BM25_PRUNE_WORDS 32

/*
** Where a query's postings come from: the store's index when it has one;
** else a throw-away index of the candidates being judged (memory_index.c),
** whose statistics are then the candidates' own.
*/
typedef struct bm25_source {
	a2m_store      *store;  /* the store's index, or */
	a2m_mindex     *mem;    /* a throw-away one, */
	a2m_mdoc      **docs;   /*   and the docs it points at */
	size_t          ndocs;
	a2m_index_stats stats;
} bm25_source;

/*
** A key's postings: lent by the index (a view, store.h) when it can, else
** copied into own. Either way read through v.
*/
typedef struct bm25_plist {
	const a2m_posting *v;
	const a2m_tf_bound *blocks;  /* the index's bounds (a2m_postings_lent), or NULL */
	a2m_tf_bound all;            /* valid when has_all */
	int      has_all;
	a2m_postings_lent lent;      /* as lent (lent.fill: read a block at a time) */
	a2m_posting *own;
	double  *c;      /* each posting's contribution (pruning's, key_contrib) */
	size_t   n, cap; /* cap: own's room */
	size_t   ccap;   /* c's room */
	int      oom;
} bm25_plist;

/*
** What one query needs beyond its terms, kept by the scorer between
** queries so that scoring does not allocate: a postings list per key and
** the accumulators. Each call has one to itself, from the scorer's pool
** (bm25.c): as many exist as calls ever ran at once, and a single thread
** gets back the one it just gave, its buffers already grown.
*/
typedef struct bm25_scratch {
	a2m_pool_item item;  /* first: the pool's link */
	bm25_plist *lists;
	size_t  nlists;   /* lists allocated (each keeps its postings buffer) */
	a2m_acc     a;
	/* Pruning's (bm25_prune.c), per key: its reach, its word, and the
	** keys by decreasing reach. */
	double *reach, *kfloor;  /* kfloor: key_floor's answer, -1 before it */
	size_t *kword, *order;
	size_t  nkeys;    /* keys allocated */
	double *tmp;      /* a copy of one key's contributions (key_floor) */
	size_t  ntmp;
	a2m_bmw      bmw;   /* block-max's (score_blockmax) */
	a2m_bmw_key *bkeys;
	size_t       nbkeys;
} bm25_scratch;

/* BM25's constants for one query over one source. */
typedef struct bm25_norm {
	double n_docs;
	double k0, k1;  /* the length normalisation: k0 + k1 · dl */
} bm25_norm;

/* A key's idf, ln(1 + (N − df + 0.5)/(df + 0.5)), its df its postings. */
static inline double bm25_key_idf(const bm25_norm *norm, const bm25_plist *p)
{
	double df = (double)p->n;
	return log(1.0 + (norm->n_docs - df + 0.5) / (df + 0.5));
}

/* ---- bm25_postings.c ------------------------------------------------------ */

/*
** Reads the postings of every key of q into sc->lists (a word's idf needs
** its df before its postings can be scored): lent with the index's bounds,
** else lent, else copied. Sets *norm and *postings (how many in all).
** Returns 0, or the store's negative code (A2M_INTERNAL_ERROR when memory
** runs out).
*/
int a2m_bm25_read_lists(const bm25_source *src, const a2m_query_terms *q, bm25_scratch *sc,
			bm25_norm *norm, size_t *postings);

/*
** The most word w can add to a record's sum: w · max over its keys of
** (key weight · idf) · (k1 + 1), the summand of the best sum.
*/
double a2m_bm25_word_bound(const a2m_query_terms *q, const bm25_plist *lists,
			   const bm25_norm *norm, size_t w);

/*
** After a2m_bm25_read_lists: fills each list's c with what each of its
** postings adds to its record's word, each key's largest in sc->reach and
** its word in sc->kword, and sets *best to the best sum a record could
** reach. Returns 0, or A2M_INTERNAL_ERROR when memory runs out.
*/
int a2m_bm25_contribs(const a2m_query_terms *q, bm25_scratch *sc, const bm25_norm *norm,
		      double *best);

/*
** Adds every key's contributions (a2m_bm25_contribs) to the sums of sc->a,
** word by word in q's order and each word's keys in order (a2m_acc_add).
** insert: every record is added to the table; else only the records
** already there are updated. Returns 0, or -1 when memory runs out.
*/
int a2m_bm25_add_words(const a2m_query_terms *q, bm25_scratch *sc, int insert);

/*
** Scores every record holding a key of q into sc->a (a query begun here),
** and sets *best to the best sum a record could reach. Returns 0, or the
** store's negative code.
*/
int a2m_bm25_score_all(const bm25_source *src, const a2m_query_terms *q, bm25_scratch *sc,
		       double *best);

/* ---- bm25_prune.c --------------------------------------------------------- */

/*
** a2m_bm25_score_all, leaving out records that cannot reach the caller's
** list (rq->want records, at rq->floor, above rq->min_relevance): block-max
** document at a time for big queries, else MaxScore term at a time over
** keys. Sets *best as a2m_bm25_score_all does, and *rest to the most a
** record not in sc->a can reach (0: none was left out). q has at most
** BM25_PRUNE_WORDS words. Returns 0, or the store's negative code.
*/
int a2m_bm25_score_pruned(const bm25_source *src, const a2m_query_terms *q,
			  const a2m_rank_query *rq, bm25_scratch *sc, double *best, double *rest);

/* The normalised bound of what a record of sum at most rest reaches, best the best sum. */
double a2m_bm25_rest_relevance(double rest, double best);

#endif
