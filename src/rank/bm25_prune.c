/*
** bm25_prune.c — the BM25 scorer's pruning (docs/RANKING.md §5): when the
** caller wants a top list, not every record's score, the records that
** cannot make that list are left out and the most they could have reached
** is told (a2m_candidates.rest_bound). Term at a time over keys with
** MaxScore's bounds for most queries; document at a time with block-max
** bounds (blockmax.c) for queries of many postings.
**
** Threads: each call works on the caller's scratch; the block-max switch
** and its counters are atomics.
*/
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "rank/bm25_internal.h"

/*
** A pruned list holds at least this many records that will beat every
** record left out, at the caller's floor (PRUNE_PER per record the caller
** keeps, at least PRUNE_MIN): enough, usually, for the caller's filters to
** turn some away and still fill its limit from the list. Fewer, and the
** caller asks again for the complete list more often; more, and pruning
** saves less (docs/RANKING.md §5). A caller without filters (keeps_all)
** needs only as many as it keeps: the admit-th best is then higher, and
** so is the threshold.
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

/* The records a pruned list holds at least (PRUNE_PER per record kept, at least PRUNE_MIN;
** want when the caller keeps all). */
static size_t admit_of(const a2m_rank_query *rq)
{
	if (rq->keeps_all)
		return rq->want ? rq->want : 1;
	size_t admit = rq->want > SIZE_MAX / PRUNE_PER ? SIZE_MAX : PRUNE_PER * rq->want;
	return admit < PRUNE_MIN ? PRUNE_MIN : admit;
}

double a2m_bm25_rest_relevance(double rest, double best)
{
	return best > 0 ? rest * (1.0 + PRUNE_REL) / best + PRUNE_ABS : 0;
}

/*
** The most a record holding none of the keys order[0..from) can reach: per
** word, the best reach of its keys left (order is by decreasing reach, so
** the first one met), summed.
*/
static double rest_from(const bm25_scratch *sc, size_t from, size_t nkeys)
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
static double key_floor(bm25_scratch *sc, size_t k, size_t admit)
{
	const bm25_plist *p = &sc->lists[k];
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
static ptrdiff_t keys_needed(bm25_scratch *sc, size_t nkeys, const a2m_rank_query *rq, double best,
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
		     a2m_bm25_rest_relevance(*rest, best) + PRUNE_REL < rq->min_relevance))
			return (ptrdiff_t)j;
	}
	*rest = 0;
	return (ptrdiff_t)nkeys;
}

/*
** A query of at least this many postings is pruned document at a time with
** block-max bounds (blockmax.c); a smaller one term at a time (below),
** whose cost is the same as scoring it all when it cannot prune.
*/
#define BMW_MIN_POSTINGS 16384

/*
** a2m_bm25_blockmax's mode, the postings the walk stepped over, the
** queries it gave back to term at a time (a list out of order) and what it
** did (a2m_bm25_walked). On (1) by default: on the bench's Zipf corpus a
** query of frequent words at 1M records took 13-29 ms with WAND against
** 45-104 ms term at a time; below 16 384 postings it costs more
** instructions than term at a time (at 10 000 records, taken from 4 096
** postings, a third more per recall on the bench's queries:
** docs/RANKING.md §5).
*/
static atomic_int    bmw_mode = 1;
static atomic_size_t bmw_skipped;
static atomic_size_t bmw_fallbacks;
static atomic_size_t bmw_walks, bmw_steps, bmw_scored, bmw_filled;

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

void a2m_bm25_blockmax_walked(a2m_bm25_walked *out)
{
	out->walks = atomic_load_explicit(&bmw_walks, memory_order_relaxed);
	out->steps = atomic_load_explicit(&bmw_steps, memory_order_relaxed);
	out->scored = atomic_load_explicit(&bmw_scored, memory_order_relaxed);
	out->filled = atomic_load_explicit(&bmw_filled, memory_order_relaxed);
}

/*
** a2m_bm25_score_pruned for big queries: the records that may reach the
** admit-th best score (times the caller's floor) scored exactly into
** sc->a, whole blocks of postings stepped over (blockmax.h). Sets *best
** and *rest as a2m_bm25_score_pruned does. Returns 0, 1 when a list is
** out of order (term at a time must do it), or A2M_INTERNAL_ERROR.
*/
static int score_blockmax(const a2m_query_terms *q, const a2m_rank_query *rq,
			  bm25_scratch *sc, const bm25_norm *norm, a2m_bmw_walk walk, double *best,
			  double *rest)
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
		*best += a2m_bm25_word_bound(q, sc->lists, norm, w);
		for (size_t k = q->word_at[w]; k < q->word_at[w + 1]; k++) {
			const bm25_plist *p = &sc->lists[k];
			/* As key_contrib computes it, to the bit. */
			double weight = q->weight[w] * q->key_weight[k];
			sc->bkeys[k] = (a2m_bmw_key){.v = p->v, .n = p->n,
						     .scale = weight * bm25_key_idf(norm, p) * (BM25_K1 + 1.0),
						     .word = (uint32_t)w + 1, .blocks = p->blocks,
						     .all = p->has_all ? &p->all : NULL};
			if (p->lent.fill) {
				sc->bkeys[k].nblocks = p->lent.nblocks;
				sc->bkeys[k].start = p->lent.start;
				sc->bkeys[k].last = p->lent.last;
				sc->bkeys[k].fill = p->lent.fill;
				sc->bkeys[k].peek = p->lent.peek;
				sc->bkeys[k].ctx = p->lent.ctx;
			}
		}
	}
	double floor = rq->floor > 0 && rq->floor < 1 ? rq->floor : 1;
	size_t admit = admit_of(rq);
	if (a2m_acc_begin(&sc->a, 4 * admit) != 0)
		return A2M_INTERNAL_ERROR;
	sc->bmw.walk = walk;
	int rc = a2m_bmw_run(&sc->bmw, sc->bkeys, q->nkeys, norm->k0, norm->k1, admit, floor,
			     &sc->a, rest);
	if (rc < 0)
		return A2M_INTERNAL_ERROR;
	if (rc == 0) {
		atomic_fetch_add_explicit(&bmw_skipped, sc->bmw.skipped, memory_order_relaxed);
		atomic_fetch_add_explicit(&bmw_walks, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&bmw_steps, sc->bmw.steps, memory_order_relaxed);
		atomic_fetch_add_explicit(&bmw_scored, sc->bmw.scored, memory_order_relaxed);
		atomic_fetch_add_explicit(&bmw_filled, sc->bmw.filled, memory_order_relaxed);
	}
	return rc;
}

/*
** bm25_internal.h. Term at a time, it is MaxScore over keys: a word's keys
** (its surface form and its stems) differ widely in df, and the common
** stem of a rare word can be left out as well as a common word. Each key's
** reach is the most one of its postings adds. The keys of highest reach
** that suffice (keys_needed) admit their records into sc->a; a record left
** out holds only the other keys, so it reaches at most, per word, the best
** reach of those. The admitted records' sums are then computed exactly as
** a2m_bm25_score_all computes them, looked up, not inserted. A query of
** many postings goes to score_blockmax instead, unless a list is out of
** order.
*/
int a2m_bm25_score_pruned(const bm25_source *src, const a2m_query_terms *q,
			  const a2m_rank_query *rq, bm25_scratch *sc, double *best, double *rest)
{
	size_t postings, nk = q->nkeys;
	bm25_norm norm;
	*rest = 0;
	int rc = a2m_bm25_read_lists(src, q, sc, &norm, &postings);
	int mode = atomic_load_explicit(&bmw_mode, memory_order_relaxed);
	if (!rc && mode && (postings >= BMW_MIN_POSTINGS || mode >= 2) && nk <= A2M_BMW_MAX_KEYS) {
		a2m_bmw_walk walk = mode == 3 ? A2M_BMW_WAND : A2M_BMW_MAXSCORE;
		if ((rc = score_blockmax(q, rq, sc, &norm, walk, best, rest)) != 1)
			return rc;
		/* A list out of order: term at a time. */
		atomic_fetch_add_explicit(&bmw_fallbacks, 1, memory_order_relaxed);
		rc = 0;
		*rest = 0;
	}
	if (!rc)
		rc = a2m_bm25_contribs(q, sc, &norm, best);
	if (rc)
		return rc;
	/* Term at a time pays only when some key can be left out: two at least. */
	if (nk < 2) {
		if (a2m_acc_begin(&sc->a, postings) != 0 || a2m_bm25_add_words(q, sc, 1) != 0)
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
		if (a2m_acc_begin(&sc->a, postings) != 0 || a2m_bm25_add_words(q, sc, 1) != 0)
			return A2M_INTERNAL_ERROR;
		return 0;
	}
	if (a2m_acc_begin(&sc->a, admitted) != 0)
		return A2M_INTERNAL_ERROR;
	for (ptrdiff_t j = 0; j < needed; j++) {
		const bm25_plist *p = &sc->lists[sc->order[j]];
		for (size_t i = 0; i < p->n; i++)
			if (!a2m_acc_get(&sc->a, p->v[i].seq))
				return A2M_INTERNAL_ERROR;
	}
	(void)a2m_bm25_add_words(q, sc, 0);
	return 0;
}
