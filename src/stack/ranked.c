/*
** ranked.c — the indexed path of recall and select (see
** a2m_stack_ranked in stack_internal.h): the scorer names every
** record its index matches, with its relevance; this file applies the whole
** selection to each and keeps the best, reading as few records as it can.
**
** Filters come first, the limit last: a candidate is checked against the
** store's exact selection, visibility and `where` before it may enter the
** best `limit`, so a filtered recall returns the best matches that pass the
** filter however rare they are, never the leftovers of a top-k taken before
** filtering. Reading stops as soon as no candidate left can enter: a score
** is never above its relevance (a2m_stack_blend_score), so once the next
** relevance is below the worst hit kept (or below min_score), nothing after
** it can beat it. The stop is exact, not a heuristic. A list the scorer
** pruned (a2m_candidates.rest_bound) bounds the records it left out: the
** stop weighs that bound too, and when it cannot be proven from the list
** the scorer is asked for the complete list. An approximate pool (the
** quantized vector search, a2m_candidates.approximate) is taken to hold
** every record that can enter; only when filters leave fewer than the
** limit in it is a wider pool asked for, then the complete list. A list
** whose scores are only bounds of the relevance (a vector list measured on a sketch,
** a2m_candidates.bounded) is read the same way, each candidate read being
** judged exactly first: a relevance is never above its bound either.
*/
#include <stdlib.h>

#include "stack/stack_internal.h"
#include "stack/where.h"
#include "util/clock.h"
#include "util/grow.h"

/*
** The best k hits seen so far (k = 0: all of them): a binary heap whose root
** is the worst kept, so a better newcomer replaces it in O(log k).
*/
typedef struct topk {
	a2m_hit *v;
	size_t   n, cap, k;
} topk;

/* True when a ranks strictly after b in recall's order. */
static int ranks_after(const a2m_hit *a, const a2m_hit *b)
{
	return a2m_stack_hit_cmp(a, b) > 0;
}

static void heap_down(a2m_hit *v, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, worst = i;
		if (l < n && ranks_after(&v[l], &v[worst]))
			worst = l;
		if (r < n && ranks_after(&v[r], &v[worst]))
			worst = r;
		if (worst == i)
			return;
		a2m_hit t = v[i];
		v[i] = v[worst];
		v[worst] = t;
		i = worst;
	}
}

/*
** Offers rec (borrowed) with score: copied in only if it makes the cut.
** Returns 0, or -1 when memory runs out.
*/
static int topk_offer(topk *t, const a2m_record *rec, double score)
{
	a2m_hit h = {.rec = (a2m_record *)rec, .score = score};
	if (t->k && t->n == t->k) {
		if (!ranks_after(&t->v[0], &h))
			return 0;
		a2m_record *copy = a2m_record_dup(rec);
		if (!copy)
			return -1;
		a2m_record_free(t->v[0].rec);
		t->v[0] = (a2m_hit){.rec = copy, .score = score};
		heap_down(t->v, t->n, 0);
		return 0;
	}
	if (a2m_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v))
		return -1;
	if (!(h.rec = a2m_record_dup(rec)))
		return -1;
	/* Sift up: the root stays the worst. */
	size_t i = t->n++;
	t->v[i] = h;
	while (i > 0 && ranks_after(&t->v[i], &t->v[(i - 1) / 2])) {
		a2m_hit tmp = t->v[i];
		t->v[i] = t->v[(i - 1) / 2];
		t->v[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
	return 0;
}

/* Candidates come out best first: higher relevance, then newer (higher seq). */
static int cand_before(const a2m_candidate *a, const a2m_candidate *b)
{
	return a->score != b->score ? a->score > b->score : a->seq > b->seq;
}

static int cand_cmp(const void *a, const void *b)
{
	return cand_before(a, b) ? -1 : cand_before(b, a);
}

static void cand_swap(a2m_candidate *v, size_t i, size_t j)
{
	a2m_candidate t = v[i];
	v[i] = v[j];
	v[j] = t;
}

/*
** Moves the m best of v[0..n) to the front, sorted (quickselect, then a
** sort of those m): O(n) for the many a common word matches, when only
** the first few hundred are usually read.
*/
static void best_first(a2m_candidate *v, size_t n, size_t m)
{
	size_t lo = 0, hi = n;
	if (m > n)
		m = n;
	while (m < n && hi - lo > 1) {
		/* Median of three as the pivot, parked at hi - 1. */
		size_t mid = lo + (hi - lo) / 2;
		if (cand_before(&v[mid], &v[lo]))
			cand_swap(v, mid, lo);
		if (cand_before(&v[hi - 1], &v[lo]))
			cand_swap(v, hi - 1, lo);
		if (cand_before(&v[mid], &v[hi - 1]))
			cand_swap(v, mid, hi - 1);
		a2m_candidate pivot = v[hi - 1];
		size_t store = lo;
		for (size_t i = lo; i + 1 < hi; i++)
			if (cand_before(&v[i], &pivot))
				cand_swap(v, i, store++);
		cand_swap(v, store, hi - 1);
		if (store == m || store + 1 == m)
			break;
		if (store > m)
			hi = store;
		else
			lo = store + 1;
	}
	qsort(v, m, sizeof *v, cand_cmp);
}

/* How many candidates are ordered at a time (at least): enough for a limit
** and the ones its filters turn away, in the usual case. */
#define RANK_SELECT 64
/* ... or this fraction of a long list (see ranked_collect). */
#define RANK_SLICE  64

/* What the visit of one batch of candidates needs. */
typedef struct ranked {
	a2m_stack           *st;
	const a2m_selection *sel;
	const a2m_candidate *batch;
	size_t               nb, at;
	double               min_score;
	int                  blended;  /* 0: the score is the relevance itself */
	int64_t              now;
	topk                 top;
	int                  oom;
	const a2m_rank_query *judge;   /* scores are bounds: judge with this query */
	int                  judge_rc; /* the scorer's failure, if it failed */
	double               cap, slack, rest;  /* the stop's terms (ranked_collect) */
	int                  stopped;  /* the visit stopped the batch after r->at */
	uint64_t             rows;     /* records visited (a2m_stack.ranked_rows) */
} ranked;

/*
** True when no candidate from one listed with relevance next on can enter:
** the best score any can reach (next, or the bound of the records a pruned
** list left out, times cap) is below min_score or below the worst hit kept
** of a full top. The stop of a2m_stack_ranked.
*/
static int out_of_reach(const ranked *r, double next)
{
	double best = (next > r->rest ? next : r->rest) * r->cap + r->slack;
	return best < r->min_score || (r->top.k && r->top.n == r->top.k && best < r->top.v[0].score);
}

/* Applies the selection to rec, the candidate r->batch[r->at], and offers it. */
static int ranked_judge(ranked *r, const a2m_record *rec)
{
	double rel = r->batch[r->at].score;
	a2m_record tmp;
	/* Only a `where` can read the access counts here (ranking does not:
	** a2m_stack_blend_score, a2m_stack_hit_cmp); without one the touches
	** are laid over the kept hits alone, at the end (one lock, not one
	** per candidate, against the recalls running beside this one). */
	if (r->sel->where)
		rec = a2m_stack_touched(r->st, rec, &tmp);
	if ((!r->sel->with_expired && a2m_stack_expired(rec, r->now)) ||
	    !a2m_query_matches(&r->sel->q, rec) || !a2m_stack_visible(r->st, &r->sel->scope, rec))
		return 0;
	int m = a2m_where_matches(r->sel->where, rec, r->st->cfg.fields);
	if (m < 0) {
		r->oom = 1;
		return -1;
	}
	if (!m)
		return 0;
	if (r->judge) {
		/* The score was a bound (a2m_candidates.bounded): now the relevance. */
		a2m_scorer *sc = r->st->scorer;
		int jr = sc->relevance(sc, r->st->store, r->judge, &rec, 1, &rel);
		if (jr < 0) {
			r->judge_rc = jr;
			return -1;
		}
		if (jr != 0 || rel <= 0)
			return 0;
	}
	double score = r->blended ? a2m_stack_blend_score(r->st, rel, rec, r->now) : rel;
	if (score < r->min_score)
		return 0;
	if (topk_offer(&r->top, rec, score) != 0) {
		r->oom = 1;
		return -1;
	}
	return 0;
}

static int ranked_visit(const a2m_record *rec, void *ctx)
{
	ranked *r = ctx;
	/* visit_seqs keeps the batch's order and skips what is gone. */
	while (r->at < r->nb && r->batch[r->at].seq != rec->seq)
		r->at++;
	if (r->at == r->nb)
		return 0;
	r->rows++;
	int rc = ranked_judge(r, rec);
	/* The stop is weighed before each record is read, not only between
	** batches: a batch read past it costs a row read (a b-tree descent
	** and a decoding in SQLite) for each candidate that cannot enter. */
	if (!rc && r->at + 1 < r->nb && out_of_reach(r, r->batch[r->at + 1].score)) {
		r->stopped = 1;
		return 1;
	}
	return rc;
}

#define RANK_BATCH 64

/*
** The most the blend can keep of a relevance when no candidate's salience
** exceeds smax: a2m_stack_blend_score's factor at recency 1 and salience
** smax. 1 (no bound) when a weight is negative or none is set.
*/
static double blend_cap(const a2m_stack *st, double smax)
{
	const a2m_blend *w = &st->cfg.blend;
	double sum = w->relevance + w->recency + w->salience;
	if (sum <= 0 || w->relevance < 0 || w->recency < 0 || w->salience < 0)
		return 1;
	smax = a2m_salience_clamp(smax);  /* as the blend clamps it: no inf/inf */
	double sal = smax > 0 ? smax / (1.0 + smax) : 0;
	double cap = (w->relevance + w->recency + w->salience * sal) / sum;
	return cap < 1 ? cap : 1;
}

/*
** What ranked_collect answers when its list was pruned (rest_bound) and the
** bound of the records left out does not let it finish: nothing kept, ask
** the scorer for the complete list.
*/
#define RANKED_SHORT 1

/*
** Visits cands best first, applying the whole selection to each before it
** may enter the best `limit` (0: no limit), and stops once no candidate
** left can enter (a2m_stack_ranked). Reorders cands. Returns 0 with *out
** sorted by a2m_stack_hit_cmp (an array even when empty), RANKED_SHORT
** (nothing in *out), or a negative code with err set.
*/
static int ranked_collect(a2m_stack *st, const a2m_selection *sel, a2m_candidates *cands,
			  size_t limit, double min_score, int blended, int64_t now,
			  a2m_hit **out, size_t *n, a2m_error *err)
{
	ranked r = {.st = st, .sel = sel, .min_score = min_score, .blended = blended,
		    .now = now, .judge = cands->bounded};
	unsigned failures = a2m_store_failures_here();
	/*
	** A candidate's score can be no more than its listed figure times cap
	** (salience bounded by the list). Bounds and relevances may differ in
	** their last bits of rounding: slack covers it.
	*/
	r.cap = blended && cands->salience_known ? blend_cap(st, cands->salience_max) : 1;
	r.slack = (cands->bounded ? 1e-9 : 0) + (r.cap < 1 ? 1e-12 : 0);
	int64_t seqs[RANK_BATCH];
	a2m_candidate *v = cands->v;
	size_t total = cands->n, at = 0, ordered = cands->sorted < total ? cands->sorted : total;
	size_t chunk = limit && limit * 4 > RANK_SELECT ? limit * 4 : RANK_SELECT;
	/*
	** A long list (a vector query lists every record with a vector) is
	** usually read further than the limit: the blend lowers the hits kept
	** below their relevance, so the stop comes only where the relevance
	** falls under them. Each doubling is a pass over the rest of the list,
	** so start with a slice of it: one pass, and a sort of the slice.
	*/
	if (chunk < total / RANK_SLICE)
		chunk = total / RANK_SLICE;
	/*
	** Records are read a batch at a time, the first just over the limit
	** (usually all that is needed: reading one is a query in SQLite), then
	** doubling while filters turn candidates away.
	*/
	size_t batch = limit && limit + 4 < RANK_BATCH ? limit + 4 : RANK_BATCH;
	/*
	** A pruned list (rest_bound) left out records of relevance up to rest:
	** the next candidate may be one of them, so the stop weighs both, and
	** a list read to its end without the stop proven leaves them unread.
	*/
	double rest = r.rest = cands->rest_bound;
	int rc = 0, shortfall = 0;
	*out = NULL;
	*n = 0;
	r.top.k = limit;
	while (!rc) {
		if (at < total && at == ordered) {
			/* Doubling: many equal relevances (which the bound cannot
			   cut) cost O(n log n) in all, not a pass over n per chunk. */
			best_first(v + at, total - at, chunk);
			ordered = at + (chunk < total - at ? chunk : total - at);
			chunk *= 2;
		}
		/* Past an approximate pool's end: what its code gave the rest. */
		double next = at < total ? v[at].score : cands->approx_rest;
		if (out_of_reach(&r, next))
			break;
		if (at == total) {
			/* An approximate pool holds the rest to be out of reach, but
			   not when filters left fewer than the limit in it. */
			shortfall = rest > 0 ||
				    (cands->approximate && r.top.k && r.top.n < r.top.k);
			break;
		}
		size_t nb = ordered - at < batch ? ordered - at : batch;
		if (batch < RANK_BATCH)
			batch = batch * 2 < RANK_BATCH ? batch * 2 : RANK_BATCH;
		for (size_t i = 0; i < nb; i++)
			seqs[i] = v[at + i].seq;
		r.batch = v + at;
		r.nb = nb;
		r.at = 0;
		r.stopped = 0;
		rc = st->store->ops->visit_seqs(st->store, seqs, nb, ranked_visit, &r);
		/* Stopped: the next candidate is the loop's to weigh (it stops). */
		at += r.stopped ? r.at + 1 : nb;
	}
	atomic_fetch_add_explicit(&st->ranked_rows, r.rows, memory_order_relaxed);
	if (rc || r.oom) {
		a2m_hits_free(r.top.v, r.top.n);
		if (r.judge_rc)
			return a2m_stack_scorer_error(st, err, r.judge_rc, failures);
		return r.oom ? a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory")
			     : a2m_stack_store_error(st, err, rc);
	}
	if (shortfall) {
		a2m_hits_free(r.top.v, r.top.n);
		return RANKED_SHORT;
	}
	/* Callers expect an array even when it is empty, as the scan path gives. */
	if (!r.top.v && !(r.top.v = calloc(1, sizeof *r.top.v)))
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	if (!sel->where)
		a2m_stack_touched_hits(st, r.top.v, r.top.n);
	qsort(r.top.v, r.top.n, sizeof *r.top.v, a2m_stack_hit_cmp);
	*out = r.top.v;
	*n = r.top.n;
	return 0;
}

/* a2m_stack_pruned_retries_all: every stack's retries, for the bench. */
static _Atomic uint64_t retries_all;

uint64_t a2m_stack_pruned_retries_all(void)
{
	return atomic_load_explicit(&retries_all, memory_order_relaxed);
}

/* How much longer a pruned list is asked for when filters emptied the first. */
#define RETRY_WIDER 16

/*
** 1 when sel turns no record away but an expired one (a2m_rank_query
** keeps_all): none of the fields a2m_query_matches reads, no `where`, and
** no scope or one that has nothing to turn away (the private tiers were
** empty when last read: blend_least.c; a local caller's recall is scoped).
** A field missed here would only cost a second request.
*/
static int selects_all(a2m_stack *st, const a2m_selection *sel)
{
	const a2m_query *q = &sel->q;
	return !q->tier && !q->by_owner && !q->by_session && !q->group && !q->key_prefix &&
	       !q->created_min && !q->created_max && !sel->where &&
	       (!sel->scope.scoped || a2m_stack_private_tiers_empty(st));
}

/* See stack_internal.h. */
int a2m_stack_ranked(a2m_stack *st, const a2m_selection *sel, const a2m_rank_query *q,
		     size_t limit, double min_score, int blended, a2m_hit **out, size_t *n,
		     a2m_error *err)
{
	a2m_rank_query pq = *q;
	a2m_scorer *sc = st->scorer;
	/*
	** Pruning only when the limit is known: limit 0 keeps every match.
	** The floor, the least share of a relevance the blend leaves any
	** record, is taken at the now every candidate is blended at.
	*/
	int64_t now = a2m_clock_now_ms();
	pq.want = q->complete ? 0 : limit;
	pq.floor = blended ? a2m_stack_blend_least(st, now) : 1;
	/*
	** The store's bound on salience (store.h, salience_bound) caps what
	** the blend can keep of a relevance: a record of relevance below the
	** want-th's times floor / cap cannot beat the want-th's score, so the
	** scorer's walk may take that as its threshold. Exactness still rests
	** on the stop, which weighs every list with the same cap.
	*/
	double smax = 0;
	a2m_store *store = st->store;
	int sknown = blended && store->ops->salience_bound &&
		     store->ops->salience_bound(store, &smax);
	if (sknown) {
		double cap = blend_cap(st, smax);
		if (cap > 0 && pq.floor < cap)
			pq.floor /= cap;
	}
	pq.min_relevance = min_score > 0 ? min_score : 0;
	pq.keeps_all = selects_all(st, sel);
	*out = NULL;
	*n = 0;
	for (;;) {
		a2m_candidates cands;
		unsigned failures = a2m_store_failures_here();
		int rc = sc->candidates(sc, st->store, &pq, &cands);
		if (rc < 0)
			return a2m_stack_scorer_error(st, err, rc, failures);
		if (rc)
			return rc;
		/* Both bounds hold for every record listed: the lower is kept. */
		if (sknown && (!cands.salience_known || smax < cands.salience_max)) {
			cands.salience_known = 1;
			cands.salience_max = smax;
		}
		int pruned = cands.rest_bound > 0 || cands.approximate;
		rc = ranked_collect(st, sel, &cands, limit, min_score, blended, now, out, n, err);
		free(cands.v);
		st->pruned_reads += (uint64_t)pruned;
		if (rc != RANKED_SHORT)
			return rc;
		/* The records left out might enter: first a list sixteen times
		** longer (still pruned: filters that turn most records away are
		** common, a complete list of common words is dear), then all. */
		st->pruned_retries++;
		atomic_fetch_add_explicit(&retries_all, 1, memory_order_relaxed);
		if (pq.complete)
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "scorer %s pruned a complete list",
					     sc->name);
		if (pruned && pq.want && pq.want == limit && limit <= SIZE_MAX / RETRY_WIDER) {
			pq.want = limit * RETRY_WIDER;
			continue;
		}
		pq.complete = 1;
		pq.want = 0;
	}
}

/*
** One tier's rule for a vector search: the selection's tier, its owner, and
** visibility (a scoped read sees a private tier's rows of its own owner
** only), the same three checks ranked_visit makes on each record.
*/
static int vfilter_tier(void *ctx, const char *name, const char **owner)
{
	const a2m_stack_vfilter *vf = ctx;
	const a2m_selection *sel = vf->sel;
	int need = 0;
	const char *who = NULL;
	if (sel->q.tier && !a2m_stack_same_str(sel->q.tier, name))
		return A2M_VF_SKIP;
	if (sel->q.by_owner) {
		need = 1;
		who = sel->q.owner;
	}
	if (sel->scope.scoped) {
		const a2m_tier *t = a2m_tiers_find(&vf->st->cfg.tiers, name);
		if (!t || !t->shared) {
			if (need && !a2m_stack_same_str(who, sel->scope.owner))
				return A2M_VF_SKIP;
			need = 1;
			who = sel->scope.owner;
		}
	}
	if (!need)
		return A2M_VF_ALL;
	*owner = who;
	return A2M_VF_OWNER;
}

void a2m_stack_vector_filter(const a2m_stack *st, const a2m_selection *sel,
			     a2m_stack_vfilter *out)
{
	out->st = st;
	out->sel = sel;
	out->f.tier = vfilter_tier;
	out->f.ctx = out;
}
