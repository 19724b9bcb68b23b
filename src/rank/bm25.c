/*
** bm25.c — the BM25 scorer (see scorer.h), over the term index the store
** keeps with our analyser (analyze.h).
**
** A query is a list of words, each with several keys (its surface form and
** its stems). A record's score for a word is the best of its keys:
**
**     w · idf(key) · tf·(k1 + 1) / (tf + k1·(1 − b + b·dl/avgdl))
**
** with idf = ln(1 + (N − df + 0.5)/(df + 0.5)) over the whole store (N
** records with terms, df of them holding the key), w the word's weight
** (analyze.h: 1, or less for a partial stopword). Taking the best key, not
** the sum, keeps a word that matches by surface and by stem from counting
** twice; and a surface match, rarer than its stem, naturally weighs more.
** The record's score is the sum over words, divided by the best any record
** could reach, Σ w · max idf · (k1 + 1), so relevance lies in [0,1] and
** keeps BM25's proportions (docs/RANKING.md).
**
** Where the postings come from: the store's index when it has one; else a
** throw-away index of the candidates being judged (memory_index.c), whose
** statistics are then the candidates' own.
**
** Threads: candidates() and relevance() may run on several threads at once
** over one scorer (scorer.h). Each call takes a scratch of its own from the
** scorer's pool (pool.h) and gives it back; the analyser is thread-safe
** itself; nothing else in the scorer changes after creation.
*/
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "rank/accumulator.h"
#include "rank/blockmax.h"
#include "rank/pool.h"
#include "rank/scorer.h"
#include "store/memory_index.h"

#define BM25_K1 1.2
#define BM25_B  0.75

typedef struct bm25 {
	a2m_scorer      base;
	a2m_analyzer   *an;
	a2m_pool        scratches;  /* the free ones (see scratch below) */
	int             pooled;     /* scratches was made (bm25_destroy) */
} bm25;

/* ---- where postings come from ------------------------------------------- */

typedef struct source {
	a2m_store      *store;  /* the store's index, or */
	a2m_mindex     *mem;    /* a throw-away one, */
	a2m_mdoc      **docs;   /*   and the docs it points at */
	size_t          ndocs;
	a2m_index_stats stats;
} source;

static void source_free(source *src)
{
	a2m_mindex_free(src->mem);
	for (size_t i = 0; i < src->ndocs; i++)
		a2m_mdoc_free(src->docs[i]);
	free(src->docs);
	memset(src, 0, sizeof *src);
}

/*
** Lends key's postings (*v, *n) when the source can (no copy); 1 when it
** did, 0 when they must be copied by source_postings, or a negative code.
*/
static int source_view(const source *src, const a2m_term *key, const a2m_posting **v,
		       size_t *n)
{
	int rc;
	if (src->mem)
		rc = a2m_mindex_view(src->mem, key->text, key->len, v, n);
	else if (src->store->ops->index_postings_view)
		rc = src->store->ops->index_postings_view(src->store, key->text, key->len, v, n);
	else
		return 0;
	if (rc == 1)
		return 0;  /* not lent (store.h): copy it */
	return rc < 0 ? rc : 1;
}

static int source_postings(const source *src, const a2m_term *key, a2m_posting_visit visit,
			   void *ctx)
{
	if (src->mem)
		return a2m_mindex_postings(src->mem, key->text, key->len, visit, ctx);
	return src->store->ops->index_postings(src->store, key->text, key->len, visit, ctx);
}

/* Scratch bigger than this (entries) is freed after the query that needed
** it rather than kept: a huge store's rare query must not pin its memory. */
#define SCRATCH_KEEP A2M_ACC_KEEP

/* ---- scoring ---------------------------------------------------------------- */

/*
** A key's postings: lent by the index (a view, store.h) when it can, else
** copied into own. Either way read through v.
*/
typedef struct plist {
	const a2m_posting *v;
	const a2m_tf_bound *blocks;  /* the index's bounds (a2m_postings_lent), or NULL */
	a2m_tf_bound all;            /* valid when has_all */
	int      has_all;
	a2m_posting *own;
	double  *c;      /* each posting's contribution (pruning's, key_contrib) */
	size_t   n, cap; /* cap: own's room */
	size_t   ccap;   /* c's room */
	int      oom;
} plist;

static int plist_visit(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	plist *p = ctx;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		a2m_posting *v = realloc(p->own, cap * sizeof *v);
		if (!v) {
			p->oom = 1;
			return A2M_INTERNAL_ERROR;
		}
		p->own = v;
		p->cap = cap;
	}
	p->own[p->n++] = (a2m_posting){.seq = seq, .tf = tf, .dl = dl};
	p->v = p->own;
	return 0;
}

/*
** What one query needs beyond its terms, kept by the scorer between
** queries so that scoring does not allocate: a postings list per key and
** the accumulators. Each call has one to itself, from the scorer's pool:
** as many exist as calls ever ran at once, and a single thread gets back
** the one it just gave, its buffers already grown.
*/
struct scratch {
	a2m_pool_item item;  /* first: the pool's link */
	plist  *lists;
	size_t  nlists;   /* lists allocated (each keeps its postings buffer) */
	a2m_acc     a;
	/* Pruning's (score_pruned), per key: its reach, its word, and the
	** keys by decreasing reach. */
	double *reach, *kfloor;  /* kfloor: key_floor's answer, -1 before it */
	size_t *kword, *order;
	size_t  nkeys;    /* keys allocated */
	double *tmp;      /* a copy of one key's contributions (key_floor) */
	size_t  ntmp;
	a2m_bmw      bmw;   /* block-max's (score_blockmax) */
	a2m_bmw_key *bkeys;
	size_t       nbkeys;
};
typedef struct scratch scratch;

/* Ready pruning's arrays for nkeys keys. Returns 0, or -1 when memory runs out. */
static int scratch_keys(scratch *sc, size_t nkeys)
{
	if (nkeys <= sc->nkeys)
		return 0;
	double *reach = realloc(sc->reach, nkeys * sizeof *reach);
	if (reach)
		sc->reach = reach;
	size_t *kword = realloc(sc->kword, nkeys * sizeof *kword);
	if (kword)
		sc->kword = kword;
	size_t *order = realloc(sc->order, nkeys * sizeof *order);
	if (order)
		sc->order = order;
	double *kfloor = realloc(sc->kfloor, nkeys * sizeof *kfloor);
	if (kfloor)
		sc->kfloor = kfloor;
	if (!reach || !kword || !order || !kfloor)
		return -1;
	sc->nkeys = nkeys;
	return 0;
}

/* Ready lists for nkeys keys, each empty. Returns 0, or -1 when memory runs out. */
static int scratch_lists(scratch *sc, size_t nkeys)
{
	if (nkeys > sc->nlists) {
		plist *l = realloc(sc->lists, nkeys * sizeof *l);
		if (!l)
			return -1;
		memset(l + sc->nlists, 0, (nkeys - sc->nlists) * sizeof *l);
		sc->lists = l;
		sc->nlists = nkeys;
	}
	for (size_t k = 0; k < nkeys; k++) {
		plist *p = &sc->lists[k];
		p->n = 0, p->oom = 0, p->v = NULL, p->blocks = NULL, p->has_all = 0;
	}
	return 0;
}

/* After a query: frees the postings buffers that grew huge. */
static void scratch_end(scratch *sc)
{
	for (size_t k = 0; k < sc->nlists; k++)
		if (sc->lists[k].cap > SCRATCH_KEEP || sc->lists[k].ccap > SCRATCH_KEEP) {
			free(sc->lists[k].own);
			free(sc->lists[k].c);
			memset(&sc->lists[k], 0, sizeof sc->lists[k]);
		}
	a2m_acc_end(&sc->a);
}

static void scratch_free(a2m_pool_item *item)
{
	scratch *sc = (scratch *)item;
	for (size_t k = 0; k < sc->nlists; k++) {
		free(sc->lists[k].own);
		free(sc->lists[k].c);
	}
	free(sc->lists);
	free(sc->reach);
	free(sc->kfloor);
	free(sc->kword);
	free(sc->order);
	free(sc->tmp);
	a2m_bmw_free(&sc->bmw);
	free(sc->bkeys);
	a2m_acc_free(&sc->a);
	free(sc);
}

/* A scratch for the caller alone (a free one, else a new one); NULL when
** memory runs out. Give it back with scratch_give. */
static scratch *scratch_take(bm25 *b)
{
	a2m_pool_item *item = a2m_pool_take(&b->scratches);
	return item ? (scratch *)item : calloc(1, sizeof(scratch));
}

/* Ends sc's query (scratch_end) and gives it back to the pool. */
static void scratch_give(bm25 *b, scratch *sc)
{
	scratch_end(sc);
	a2m_pool_give(&b->scratches, &sc->item);
}

/* BM25's constants for one query over one source. */
typedef struct bm25_norm {
	double n_docs;
	double k0, k1;  /* the length normalisation: k0 + k1 · dl */
} bm25_norm;

/*
** Lends key's postings with the bounds the index keeps (store.h
** index_postings_lend) into p; 0 when it did, 1 when they must be had
** another way (source_view), or a negative code.
*/
static int source_lend(const source *src, const a2m_term *key, plist *p)
{
	a2m_postings_lent l;
	if (src->mem || !src->store->ops->index_postings_lend)
		return 1;
	int rc = src->store->ops->index_postings_lend(src->store, key->text, key->len, &l);
	if (rc)
		return rc;
	p->v = l.v;
	p->n = l.n;
	p->blocks = l.blocks;
	p->all = l.all;
	p->has_all = 1;
	return 0;
}

/*
** Reads the postings of every key of q into sc->lists (a word's idf needs
** its df before its postings can be scored), sets *norm and *postings (how
** many in all). Returns 0, or the store's negative code.
*/
static int read_lists(const source *src, const a2m_query_terms *q, scratch *sc,
		      bm25_norm *norm, size_t *postings)
{
	int rc = 0;
	norm->n_docs = (double)src->stats.docs;
	double avgdl = src->stats.docs ? (double)src->stats.total_len / norm->n_docs : 1.0;
	if (avgdl <= 0)
		avgdl = 1.0;
	norm->k0 = BM25_K1 * (1.0 - BM25_B);
	norm->k1 = BM25_K1 * BM25_B / avgdl;
	*postings = 0;
	if (scratch_lists(sc, q->nkeys) != 0)
		return A2M_INTERNAL_ERROR;
	for (size_t k = 0; k < q->nkeys && !rc; k++) {
		plist *p = &sc->lists[k];
		/* Lent with bounds, else lent, else copied. */
		int copy = 0;
		rc = source_lend(src, &q->keys[k], p);
		if (rc == 1) {
			rc = source_view(src, &q->keys[k], &p->v, &p->n);
			copy = rc == 0;
			rc = rc == 1 ? 0 : rc;
		} else if (rc == 2) {
			copy = 1;
			rc = 0;
		}
		if (copy)
			rc = source_postings(src, &q->keys[k], plist_visit, p);
		if (!rc && p->oom)
			rc = A2M_INTERNAL_ERROR;
		*postings += p->n;
	}
	return rc;
}

static double key_idf(const bm25_norm *norm, const plist *p)
{
	double df = (double)p->n;
	return log(1.0 + (norm->n_docs - df + 0.5) / (df + 0.5));
}

/*
** The most word w can add to a record's sum: w · max over its keys of
** (key weight · idf) · (k1 + 1), the summand of the best sum.
*/
static double word_bound(const a2m_query_terms *q, const plist *lists, const bm25_norm *norm,
			 size_t w)
{
	double best_idf = 0;
	for (size_t k = q->word_at[w]; k < q->word_at[w + 1]; k++)
		if (lists[k].n && key_idf(norm, &lists[k]) * q->key_weight[k] > best_idf)
			best_idf = key_idf(norm, &lists[k]) * q->key_weight[k];
	return q->weight[w] * best_idf * (BM25_K1 + 1.0);
}

/*
** Fills p->c with what each posting of key k (of word w) adds to its
** record's word, and returns the largest. Returns -1 when memory runs out.
*/
static double key_contrib(const a2m_query_terms *q, plist *p, const bm25_norm *norm, size_t w,
			  size_t k)
{
	if (p->n > p->ccap) {
		size_t room = p->ccap ? p->ccap : 256;
		while (room < p->n)
			room *= 2;
		double *c = realloc(p->c, room * sizeof *c);
		if (!c)
			return -1;
		p->c = c;
		p->ccap = room;
	}
	double weight = q->weight[w] * q->key_weight[k];
	double scale = weight * key_idf(norm, p) * (BM25_K1 + 1.0);
	double reach = 0;
	for (size_t i = 0; i < p->n; i++) {
		double c = a2m_bm25_contrib(scale, p->v[i].tf, p->v[i].dl, norm->k0, norm->k1);
		p->c[i] = c;
		if (c > reach)
			reach = c;
	}
	return reach;
}

/*
** Reads every key's postings (a word's idf needs its df before its
** postings can be scored) and what each adds (key_contrib, its largest in
** sc->reach), and sets *best to the best sum a record could reach and
** *postings to how many there are. Returns 0, or the store's negative code.
*/
/* prepare's second half: every key's contributions (sc->reach) and *best. */
static int contribs(const a2m_query_terms *q, scratch *sc, const bm25_norm *n, double *best)
{
	bm25_norm norm = *n;
	int rc = 0;
	*best = 0;
	if (scratch_keys(sc, q->nkeys) != 0)
		rc = A2M_INTERNAL_ERROR;
	for (size_t w = 0; w < q->nwords && !rc; w++) {
		*best += word_bound(q, sc->lists, &norm, w);
		for (size_t k = q->word_at[w]; k < q->word_at[w + 1]; k++) {
			sc->kword[k] = w;
			if ((sc->reach[k] = key_contrib(q, &sc->lists[k], &norm, w, k)) < 0)
				rc = A2M_INTERNAL_ERROR;
		}
	}
	return rc;
}

static int prepare(const source *src, const a2m_query_terms *q, scratch *sc, double *best,
		   size_t *postings)
{
	bm25_norm norm;
	*best = 0;
	int rc = read_lists(src, q, sc, &norm, postings);
	return rc ? rc : contribs(q, sc, &norm, best);
}

/*
** Adds every key's contributions (prepare) to the sums of sc->a, word by
** word in q's order and each word's keys in order (acc_add). insert: every
** record is added to the table; else only the records already there are
** updated. Returns 0, or -1 when memory runs out.
*/
static int add_words(const a2m_query_terms *q, scratch *sc, int insert)
{
	a2m_acc *a = &sc->a;
	for (size_t w = 0; w < q->nwords; w++) {
		uint32_t word = (uint32_t)w + 1;
		for (size_t k = q->word_at[w]; k < q->word_at[w + 1]; k++) {
			const plist *p = &sc->lists[k];
			for (size_t i = 0; i < p->n; i++) {
				a2m_acc_entry *e = insert ? a2m_acc_get(a, p->v[i].seq) : a2m_acc_find(a, p->v[i].seq);
				if (e)
					a2m_acc_add(e, word, p->c[i]);
				else if (insert)
					return -1;
			}
		}
	}
	return 0;
}

/*
** Scores every record holding a key of q into sc->a (a query begun here),
** and sets *best to the best sum a record could reach. Returns 0, or the
** store's negative code.
*/
static int score_all(const source *src, const a2m_query_terms *q, scratch *sc, double *best)
{
	size_t postings;
	int rc = prepare(src, q, sc, best, &postings);
	/* No record is scored twice per posting: the postings bound the table. */
	if (!rc && (a2m_acc_begin(&sc->a, postings) != 0 || add_words(q, sc, 1) != 0))
		rc = A2M_INTERNAL_ERROR;
	return rc;
}

/* ---- pruning: MaxScore, term at a time (docs/RANKING.md §5) -------------- */

/*
** A pruned list holds at least this many records that will beat every
** record left out, at the caller's floor (PRUNE_PER per record the caller
** keeps, at least PRUNE_MIN): enough, usually, for the caller's filters to
** turn some away and still fill its limit from the list. Fewer, and the
** caller asks again for the complete list more often; more, and pruning
** saves less (docs/RANKING.md §5).
*/
#define PRUNE_MIN 16
#define PRUNE_PER 2
/*
** A sum of bounds and a record's sum are both computed in floating point,
** each rounded a few times: a bound is widened by this share (and then by
** PRUNE_ABS) so that it holds to the last bit.
*/
#define PRUNE_REL 1e-9
#define PRUNE_ABS 1e-12
/* The most words a pruned query may have (rest_from's mask). */
#define PRUNE_WORDS 32

/* The records a pruned list holds at least (PRUNE_PER per record kept, at least PRUNE_MIN). */
static size_t admit_of(const a2m_rank_query *rq)
{
	size_t admit = rq->want > SIZE_MAX / PRUNE_PER ? SIZE_MAX : PRUNE_PER * rq->want;
	return admit < PRUNE_MIN ? PRUNE_MIN : admit;
}

/* The normalised bound of what a record of sum at most rest reaches. */
static double rest_relevance(double rest, double best)
{
	return best > 0 ? rest * (1.0 + PRUNE_REL) / best + PRUNE_ABS : 0;
}

/*
** The most a record holding none of the keys order[0..from) can reach: per
** word, the best reach of its keys left (order is by decreasing reach, so
** the first one met), summed.
*/
static double rest_from(const scratch *sc, size_t from, size_t nkeys)
{
	uint32_t seen = 0;
	double rest = 0;
	for (size_t j = from; j < nkeys; j++) {
		size_t k = sc->order[j];
		uint32_t bit = (uint32_t)1 << sc->kword[k];
		if (!(seen & bit)) {
			seen |= bit;
			rest += sc->reach[k];
		}
	}
	return rest;
}

static void swap_double(double *v, size_t i, size_t j)
{
	double t = v[i];
	v[i] = v[j];
	v[j] = t;
}

/* The m-th largest of v[0..n) (1 <= m <= n), reordering v (quickselect). */
static double mth_largest(double *v, size_t n, size_t m)
{
	size_t lo = 0, hi = n - 1, want = m - 1;  /* v[lo..hi] holds it */
	while (lo < hi) {
		double pivot = v[lo + (hi - lo) / 2];
		/* Three ways: v[lo..lt) > pivot, v[lt..gt) == pivot, v[gt..hi] < pivot. */
		size_t lt = lo, x = lo, gt = hi + 1;
		while (x < gt) {
			if (v[x] > pivot)
				swap_double(v, lt++, x++);
			else if (v[x] < pivot)
				swap_double(v, x, --gt);
			else
				x++;
		}
		if (want < lt)
			hi = lt - 1;
		else if (want >= gt)
			lo = gt;
		else
			return pivot;
	}
	return v[want];
}

/*
** The least that `admit` records of key k add to their sums: each holding
** k reaches at least that. 0 when fewer records hold it. Returns -1 when
** memory runs out.
*/
static double key_floor(scratch *sc, size_t k, size_t admit)
{
	const plist *p = &sc->lists[k];
	if (p->n < admit)
		return 0;
	if (p->n > sc->ntmp) {
		double *t = realloc(sc->tmp, p->n * sizeof *t);
		if (!t)
			return -1;
		sc->tmp = t;
		sc->ntmp = p->n;
	}
	memcpy(sc->tmp, p->c, p->n * sizeof *p->c);
	return mth_largest(sc->tmp, p->n, admit);
}

/*
** How many keys, by decreasing reach (sc->order), must be read for their
** records to suffice: `admit` records among them must already reach what
** a record holding none of them can (rest_from), at the caller's floor,
** or that must be below the caller's min_relevance. Judged from one key's
** records at a time, without a table: a lower bound of what the union
** holds, so a key is never read for nothing. Sets *rest; returns nkeys
** (and *rest 0) when every key must be read, or -1 when memory runs out.
*/
static ptrdiff_t keys_needed(scratch *sc, size_t nkeys, const a2m_rank_query *rq, double best,
			     double *rest)
{
	size_t admit = admit_of(rq);
	double floor = rq->floor > 0 && rq->floor < 1 ? rq->floor : 1, reached = 0;
	for (size_t j = 1; j < nkeys; j++) {
		*rest = rest_from(sc, j, nkeys);
		double need = *rest * (1.0 + PRUNE_REL) / floor;
		/* A key reaching less than need cannot help (yet): its quickselect
		** waits until need has fallen to its reach, or forever. */
		for (size_t i = 0; i < j; i++) {
			size_t k = sc->order[i];
			if (sc->kfloor[k] >= 0 || sc->reach[k] < need)
				continue;
			if ((sc->kfloor[k] = key_floor(sc, k, admit)) < 0)
				return -1;
			if (sc->kfloor[k] > reached)
				reached = sc->kfloor[k];
		}
		if (*rest <= 0 || reached >= need ||
		    (rq->min_relevance > 0 &&
		     rest_relevance(*rest, best) + PRUNE_REL < rq->min_relevance))
			return (ptrdiff_t)j;
	}
	*rest = 0;
	return (ptrdiff_t)nkeys;
}

/*
** score_all with MaxScore's pruning, term at a time, over keys: a word's
** keys (its surface form and its stems) differ widely in df, and the
** common stem of a rare word can be left out as well as a common word.
** Each key's reach is the most one of its postings adds. The keys of
** highest reach that suffice (keys_needed) admit their records into sc->a;
** a record left out holds only the other keys, so it reaches at most, per
** word, the best reach of those. The admitted records' sums are then
** computed exactly as score_all computes them, looked up, not inserted.
** Sets *best as score_all does, and *rest to the most a record not in
** sc->a can reach (0: none was left out). Returns 0, or the store's
** negative code.
*/
/*
** A query of at least this many postings is pruned document at a time with
** block-max bounds (blockmax.c); a smaller one term at a time (below),
** whose cost is the same as scoring it all when it cannot prune.
*/
#define BMW_MIN_POSTINGS 16384

/*
** a2m_bm25_blockmax's mode, the postings block-max stepped over and the
** queries it gave back to term at a time (a list out of order). On (1)
** by default: on the bench's Zipf corpus a query of frequent words at 1M
** records took 13-29 ms against 45-104 ms term at a time; below 16 384
** postings it costs more instructions than term at a time (at 10 000
** records, taken from 4 096 postings, a third more per recall on the
** bench's queries: docs/RANKING.md §5).
*/
static atomic_int    bmw_mode = 1;
static atomic_size_t bmw_skipped;
static atomic_size_t bmw_fallbacks;

void a2m_bm25_blockmax(int mode)
{
	atomic_store(&bmw_mode, mode);
}

size_t a2m_bm25_blockmax_skipped(void)
{
	return atomic_load_explicit(&bmw_skipped, memory_order_relaxed);
}

size_t a2m_bm25_blockmax_fallbacks(void)
{
	return atomic_load_explicit(&bmw_fallbacks, memory_order_relaxed);
}

/*
** score_pruned for big queries: the records that may reach the admit-th
** best score (times the caller's floor) scored exactly into sc->a, whole
** blocks of postings stepped over (blockmax.h). Sets *best as score_all
** and *rest as score_pruned do.
*/
static int score_blockmax(const a2m_query_terms *q, const a2m_rank_query *rq, scratch *sc,
			  const bm25_norm *norm, double *best, double *rest)
{
	*best = 0;
	if (q->nkeys > sc->nbkeys) {
		a2m_bmw_key *k = realloc(sc->bkeys, q->nkeys * sizeof *k);
		if (!k)
			return A2M_INTERNAL_ERROR;
		sc->bkeys = k;
		sc->nbkeys = q->nkeys;
	}
	for (size_t w = 0; w < q->nwords; w++) {
		*best += word_bound(q, sc->lists, norm, w);
		for (size_t k = q->word_at[w]; k < q->word_at[w + 1]; k++) {
			const plist *p = &sc->lists[k];
			/* As key_contrib computes it, to the bit. */
			double weight = q->weight[w] * q->key_weight[k];
			sc->bkeys[k] = (a2m_bmw_key){p->v, p->n,
						     weight * key_idf(norm, p) * (BM25_K1 + 1.0),
						     (uint32_t)w + 1, p->blocks,
						     p->has_all ? &p->all : NULL};
		}
	}
	double floor = rq->floor > 0 && rq->floor < 1 ? rq->floor : 1;
	size_t admit = admit_of(rq);
	if (a2m_acc_begin(&sc->a, 4 * admit) != 0)
		return A2M_INTERNAL_ERROR;
	int rc = a2m_bmw_run(&sc->bmw, sc->bkeys, q->nkeys, norm->k0, norm->k1, admit, floor,
			     &sc->a, rest);
	if (rc < 0)
		return A2M_INTERNAL_ERROR;
	if (rc == 0)
		atomic_fetch_add_explicit(&bmw_skipped, sc->bmw.skipped, memory_order_relaxed);
	return rc;
}

static int score_pruned(const source *src, const a2m_query_terms *q, const a2m_rank_query *rq,
			scratch *sc, double *best, double *rest)
{
	size_t postings, nk = q->nkeys;
	bm25_norm norm;
	*rest = 0;
	int rc = read_lists(src, q, sc, &norm, &postings);
	int mode = atomic_load_explicit(&bmw_mode, memory_order_relaxed);
	if (!rc && mode && (postings >= BMW_MIN_POSTINGS || mode == 2) && nk <= A2M_BMW_MAX_KEYS) {
		if ((rc = score_blockmax(q, rq, sc, &norm, best, rest)) != 1)
			return rc;
		/* A list out of order: term at a time. */
		atomic_fetch_add_explicit(&bmw_fallbacks, 1, memory_order_relaxed);
		rc = 0;
		*rest = 0;
	}
	if (!rc)
		rc = contribs(q, sc, &norm, best);
	if (rc)
		return rc;
	/* Term at a time pays only when some key can be left out: two at least. */
	if (nk < 2) {
		if (a2m_acc_begin(&sc->a, postings) != 0 || add_words(q, sc, 1) != 0)
			return A2M_INTERNAL_ERROR;
		return 0;
	}
	for (size_t k = 0; k < nk; k++) {
		sc->order[k] = k;
		sc->kfloor[k] = -1;  /* not judged yet (keys_needed) */
	}
	/* Highest reach first; ties in q's order. nk is a query's keys: few. */
	for (size_t i = 1; i < nk; i++)
		for (size_t j = i; j > 0 && sc->reach[sc->order[j]] > sc->reach[sc->order[j - 1]]; j--) {
			size_t t = sc->order[j];
			sc->order[j] = sc->order[j - 1];
			sc->order[j - 1] = t;
		}
	ptrdiff_t needed = keys_needed(sc, nk, rq, *best, rest);
	if (needed < 0)
		return A2M_INTERNAL_ERROR;
	size_t admitted = 0;
	for (ptrdiff_t j = 0; j < needed; j++)
		admitted += sc->lists[sc->order[j]].n;
	if ((size_t)needed == nk) {
		if (a2m_acc_begin(&sc->a, postings) != 0 || add_words(q, sc, 1) != 0)
			return A2M_INTERNAL_ERROR;
		return 0;
	}
	if (a2m_acc_begin(&sc->a, admitted) != 0)
		return A2M_INTERNAL_ERROR;
	for (ptrdiff_t j = 0; j < needed; j++) {
		const plist *p = &sc->lists[sc->order[j]];
		for (size_t i = 0; i < p->n; i++)
			if (!a2m_acc_get(&sc->a, p->v[i].seq))
				return A2M_INTERNAL_ERROR;
	}
	(void)add_words(q, sc, 0);
	return 0;
}

static double normalised(double total, double best)
{
	if (best <= 0 || total <= 0)
		return 0;
	return total >= best ? 1.0 : total / best;
}

/* The store's index as a source; A2M_STORE_NO_INDEX when it has none. */
static int store_source(a2m_store *store, source *src)
{
	memset(src, 0, sizeof *src);
	if (!store || !store->ops->index_stats)
		return A2M_STORE_NO_INDEX;
	src->store = store;
	return store->ops->index_stats(store, &src->stats);
}

static int bm25_candidates(a2m_scorer *s, a2m_store *store, const a2m_rank_query *rq,
			   a2m_candidates *out)
{
	bm25 *b = (bm25 *)s;
	a2m_query_terms q;
	source src;
	double best;
	memset(out, 0, sizeof *out);
	if (!rq->text || !*rq->text)
		return A2M_SCORER_ABSTAIN;
	int rc = store_source(store, &src);
	if (rc == A2M_STORE_NO_INDEX)
		return A2M_SCORER_SCAN;
	if (rc)
		return rc;
	if (a2m_analyze_query(b->an, rq->text, &q) != 0) {
		a2m_query_terms_free(&q);
		return A2M_INTERNAL_ERROR;
	}
	if (!q.nwords) {
		a2m_query_terms_free(&q);
		return A2M_SCORER_ABSTAIN;
	}
	scratch *sc = scratch_take(b);
	if (!sc) {
		a2m_query_terms_free(&q);
		return A2M_INTERNAL_ERROR;
	}
	double rest = 0;
	if (rq->want && !rq->complete && q.nwords <= PRUNE_WORDS)
		rc = score_pruned(&src, &q, rq, sc, &best, &rest);
	else
		rc = score_all(&src, &q, sc, &best);
	a2m_query_terms_free(&q);
	const a2m_acc *a = &sc->a;
	if (!rc && a->n && !(out->v = malloc(a->n * sizeof *out->v)))
		rc = A2M_INTERNAL_ERROR;
	for (size_t i = 0; !rc && i < a->n; i++) {
		const a2m_acc_entry *e = &a->slots[a->used[i]];
		double score = normalised(e->total, best);
		if (score > 0)
			out->v[out->n++] = (a2m_candidate){.seq = e->seq, .score = score};
	}
	scratch_give(b, sc);
	if (rc) {
		free(out->v);
		memset(out, 0, sizeof *out);
	} else if (rest > 0) {
		out->rest_bound = rest_relevance(rest, best);
	}
	return rc;
}

/*
** A throw-away index of the candidates (seq = their position), for a store
** that keeps none: its statistics are the candidates'.
*/
static int candidate_source(bm25 *b, const a2m_record *const *cands, size_t n, source *src)
{
	memset(src, 0, sizeof *src);
	if (!(src->mem = a2m_mindex_new()) || !(src->docs = calloc(n + 1, sizeof *src->docs)))
		return A2M_INTERNAL_ERROR;
	for (size_t i = 0; i < n; i++) {
		a2m_doc_terms dt;
		a2m_mdoc *d = NULL;
		int rc = a2m_analyze_doc(b->an, cands[i]->content ? cands[i]->content : "", &dt);
		if (rc == 0)
			rc = a2m_mindex_prepare(src->mem, &dt, (int64_t)i, &d);
		a2m_doc_terms_free(&dt);
		if (rc)
			return A2M_INTERNAL_ERROR;
		a2m_mindex_link(src->mem, d);
		src->docs[src->ndocs++] = d;
	}
	a2m_mindex_stats(src->mem, &src->stats);
	return 0;
}

static int bm25_relevance(a2m_scorer *s, a2m_store *store, const a2m_rank_query *rq,
			  const a2m_record *const *cands, size_t n, double *scores)
{
	bm25 *b = (bm25 *)s;
	a2m_query_terms q;
	source src;
	double best = 0;
	if (!rq->text || !*rq->text)
		return A2M_SCORER_ABSTAIN;
	if (a2m_analyze_query(b->an, rq->text, &q) != 0) {
		a2m_query_terms_free(&q);
		return A2M_INTERNAL_ERROR;
	}
	if (!q.nwords) {
		a2m_query_terms_free(&q);
		return A2M_SCORER_ABSTAIN;
	}
	int own = 0;
	int rc = store_source(store, &src);
	if (rc == A2M_STORE_NO_INDEX) {
		own = 1;
		rc = candidate_source(b, cands, n, &src);
	}
	scratch *sc = rc ? NULL : scratch_take(b);
	if (!rc && !sc)
		rc = A2M_INTERNAL_ERROR;
	if (!rc)
		rc = score_all(&src, &q, sc, &best);
	for (size_t i = 0; !rc && i < n; i++) {
		const a2m_acc_entry *e = a2m_acc_find(&sc->a, own ? (int64_t)i : cands[i]->seq);
		scores[i] = e ? normalised(e->total, best) : 0;
	}
	a2m_query_terms_free(&q);
	if (sc)
		scratch_give(b, sc);
	if (own)
		source_free(&src);
	return rc;
}

static void bm25_destroy(a2m_scorer *s)
{
	bm25 *b = (bm25 *)s;
	a2m_analyzer_free(b->an);
	if (b->pooled)
		a2m_pool_destroy(&b->scratches, scratch_free);
	free(b);
}

a2m_scorer *a2m_scorer_bm25_new(const a2m_analyzer_options *opt)
{
	bm25 *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->pooled = a2m_pool_init(&b->scratches) == 0;
	if (!b->pooled || !(b->an = a2m_analyzer_new(opt))) {
		bm25_destroy(&b->base);
		return NULL;
	}
	b->base.name = "bm25";
	b->base.metric = "bm25";
	b->base.analyzer = a2m_analyzer_version(b->an);
	b->base.k1 = BM25_K1;
	b->base.b = BM25_B;
	b->base.indexer = a2m_analyzer_indexer(b->an);
	b->base.relevance = bm25_relevance;
	b->base.candidates = bm25_candidates;
	b->base.destroy = bm25_destroy;
	return &b->base;
}
