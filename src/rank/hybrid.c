/*
** hybrid.c — several scorers as one (see scorer.h).
**
** Each part judges what it can; a part that abstains (no text, or no vector)
** is simply left out, so a text-only query ranks lexically, a vector-only
** query by vectors, and a query with both by their mean — weighted, when
** the parts were given weights (a2m_scorer_hybrid_weighted: the server's
** generated vectors against the text, docs/EMBEDDINGS.md), else plain.
**
** Candidates: each judging part enumerates its own (the text part from the
** term index, the vector part from the store's vector rows) and the lists
** are fused by the same mean, a part that did not list a record counting 0
** for it, exactly as relevance() would judge it; the generated-vector part
** lists every record it judges (those with a generated vector), so a
** record it does not list is left out of that record's mean, as
** relevance() leaves it. A query that some part judges but cannot
** enumerate (a store without vector rows) answers SCAN, and the stack
** scans. A list pruned by its scorer (a2m_candidates.rest_bound), or an
** approximate pool (the quantized vector search), passes through when its
** part is the only one to judge; it is never fused: a text query with a
** vector ranks by the exact vector search in every mode.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "rank/scorer.h"

typedef struct hybrid {
	a2m_scorer   base;
	a2m_scorer **parts;
	double      *w;       /* each part's weight in the mean, all > 0 or all 1 */
	size_t       n;
	char         name[64];
	char         metric[64];
} hybrid;

static int hybrid_relevance(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			    const a2m_record *const *cands, size_t n, double *scores)
{
	hybrid *h = (hybrid *)s;
	double *part = malloc((n ? n : 1) * sizeof *part);
	double *judges = calloc(n ? n : 1, sizeof *judges);
	if (!part || !judges) {
		free(part);
		free(judges);
		return A2M_INTERNAL_ERROR;
	}
	size_t judged = 0;
	for (size_t i = 0; i < n; i++)
		scores[i] = 0;
	for (size_t p = 0; p < h->n; p++) {
		int rc = h->parts[p]->relevance(h->parts[p], store, q, cands, n, part);
		if (rc < 0) {
			free(part);
			free(judges);
			return rc;
		}
		if (rc == A2M_SCORER_ABSTAIN)
			continue;
		judged++;
		/* A part abstaining on one candidate leaves it out of its mean. */
		for (size_t i = 0; i < n; i++) {
			if (part[i] < 0)
				continue;
			scores[i] += h->w[p] * part[i];
			judges[i] += h->w[p];
		}
	}
	free(part);
	for (size_t i = 0; i < n; i++)
		scores[i] = judges[i] > 0 ? scores[i] / judges[i] : 0;
	free(judges);
	return judged ? 0 : A2M_SCORER_ABSTAIN;
}

/* A record of the shorter lists, while fusing. */
typedef struct fused {
	a2m_candidate c;        /* score: the weighted sum of the lists holding it */
	int           taken;    /* the slot holds a record */
	int           used;     /* found in the longest list */
	double        partial;  /* weight of the lists holding it that judge only
	                           what they list */
} fused;

static size_t slot_of(int64_t seq, size_t mask)
{
	return (size_t)(((uint64_t)seq * 0x9E3779B97F4A7C15ULL) >> 17) & mask;
}

/*
** Drops the records listed at 0 (judged: no match), which a list that
** judges only what it lists (a2m_candidates.judged_listed) holds; what is
** left keeps its order, and the list then says what any fused list says:
** a record not listed did not match.
*/
static void drop_unmatched(a2m_candidates *c)
{
	size_t m = 0;
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].score > 0)
			c->v[m++] = c->v[i];
	c->n = m;
	c->sorted = 0;
	c->judged_listed = 0;
}

/*
** Fuses the lists of several judging parts (list i weighing w[i]): a
** record's score is the weighted mean of its scores over the parts that
** judge it — every part whose list judges every record (one that did not
** list it gave it 0), and the parts that judge only what they list
** (a2m_candidates.judged_listed) among those that listed it — exactly as
** hybrid_relevance() takes it. The
** longest list (a vector part lists every record with a vector) becomes
** the result in place; the others, usually short, go into a small table of
** seq → summed score that each of its records looks up. Sorting 100 000
** records by seq, or hashing them all, cost more than the search itself.
** The longest list's array is taken over (its v set to NULL).
*/
static int fuse(a2m_candidates *lists, const double *w, size_t nl, a2m_candidates *out)
{
	size_t big = 0, others = 0;
	double full = 0;
	for (size_t i = 0; i < nl; i++) {
		if (lists[i].n > lists[big].n)
			big = i;
		full += lists[i].judged_listed ? 0 : w[i];
	}
	for (size_t i = 0; i < nl; i++)
		others += i == big ? 0 : lists[i].n;
	size_t nslots = 16;
	while (nslots < others * 2)
		nslots *= 2;
	fused *t = calloc(nslots, sizeof *t);
	a2m_candidate *all = realloc(lists[big].v, (lists[big].n + others + 1) * sizeof *all);
	if (!t || !all) {
		free(t);
		return A2M_INTERNAL_ERROR;
	}
	lists[big].v = NULL;
	size_t mask = nslots - 1, m = lists[big].n;
	for (size_t i = 0; i < nl; i++)
		for (size_t j = 0; i != big && j < lists[i].n; j++) {
			const a2m_candidate *c = &lists[i].v[j];
			size_t h = slot_of(c->seq, mask);
			while (t[h].taken && t[h].c.seq != c->seq)
				h = (h + 1) & mask;
			t[h].c.score += w[i] * c->score;
			t[h].c.seq = c->seq;
			t[h].taken = 1;
			t[h].partial += lists[i].judged_listed ? w[i] : 0;
		}
	double own = full + (lists[big].judged_listed ? w[big] : 0);
	for (size_t j = 0; j < m; j++) {
		double judges = own;
		all[j].score *= w[big];
		if (others) {
			size_t h = slot_of(all[j].seq, mask);
			while (t[h].taken && t[h].c.seq != all[j].seq)
				h = (h + 1) & mask;
			if (t[h].taken) {
				all[j].score += t[h].c.score;
				judges += t[h].partial;
				t[h].used = 1;
			}
		}
		all[j].score = judges > 0 ? all[j].score / judges : 0;
	}
	for (size_t h = 0; h < nslots; h++)
		if (t[h].taken && !t[h].used) {
			double judges = full + t[h].partial;
			all[m] = t[h].c;
			all[m++].score = judges > 0 ? t[h].c.score / judges : 0;
		}
	free(t);
	/* The longest list's salience bound still holds if it holds them all. */
	if (lists[big].salience_known && m == lists[big].n) {
		out->salience_known = 1;
		out->salience_max = lists[big].salience_max;
	}
	out->v = all;
	out->n = m;
	drop_unmatched(out);
	return 0;
}

static int hybrid_candidates(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			     a2m_candidates *out)
{
	hybrid *h = (hybrid *)s;
	a2m_candidates *lists = calloc(h->n + 1, sizeof *lists);
	double *w = calloc(h->n + 1, sizeof *w);
	size_t nl = 0;
	int rc = 0;
	memset(out, 0, sizeof *out);
	if (!lists || !w) {
		free(lists);
		free(w);
		return A2M_INTERNAL_ERROR;
	}
	/*
	** A pruned list cannot be fused: a record one part left out has an
	** unknown score there, hence in the mean. The first part to judge may
	** prune (it may be the only one); the next ones are asked for their
	** complete lists, and so is the first again once a second judges.
	*/
	a2m_rank_query full = *q;
	full.complete = 1;
	full.want = 0;
	size_t first = SIZE_MAX;
	for (size_t p = 0; p < h->n && rc >= 0 && rc != A2M_SCORER_SCAN; p++) {
		a2m_scorer *part = h->parts[p];
		if (part->candidates) {
			rc = part->candidates(part, store, nl ? &full : q, &lists[nl]);
			if (rc == 0 && !nl)
				first = p;
			if (rc == 0)
				w[nl++] = h->w[p];
		} else {
			/* Judging an empty list says whether it would judge at all. */
			rc = part->relevance(part, store, q, NULL, 0, NULL);
			if (rc == 0)
				rc = A2M_SCORER_SCAN;
		}
		if (rc == A2M_SCORER_ABSTAIN)
			rc = 0;
	}
	if (rc == 0 && nl > 1 && (lists[0].rest_bound > 0 || lists[0].approximate)) {
		a2m_scorer *part = h->parts[first];
		free(lists[0].v);
		memset(&lists[0], 0, sizeof lists[0]);
		rc = part->candidates(part, store, &full, &lists[0]);
		if (rc > 0) {
			/* It judged this query a moment ago: it cannot now abstain. */
			memset(&lists[0], 0, sizeof lists[0]);
			rc = A2M_INTERNAL_ERROR;
		}
	}
	if (rc == 0 && nl == 0) {
		rc = A2M_SCORER_ABSTAIN;
	} else if (rc == 0 && nl == 1) {
		*out = lists[0], lists[0].v = NULL;
		if (out->judged_listed) {
			drop_unmatched(out);
			a2m_candidates_best_first(out);
		}
	} else if (rc == 0 && (rc = fuse(lists, w, nl, out)) == 0) {
		/* The mean of bounds and relevances bounds the mean. */
		for (size_t i = 0; i < nl; i++)
			if (lists[i].bounded)
				out->bounded = q;
		a2m_candidates_best_first(out);
	}
	for (size_t i = 0; i < nl; i++)
		free(lists[i].v);
	free(lists);
	free(w);
	return rc;
}

static void hybrid_destroy(a2m_scorer *s)
{
	hybrid *h = (hybrid *)s;
	for (size_t i = 0; i < h->n; i++)
		h->parts[i]->destroy(h->parts[i]);
	free(h->parts);
	free(h->w);
	free(h);
}

a2m_scorer *a2m_scorer_hybrid_new(a2m_scorer **parts, size_t n)
{
	return a2m_scorer_hybrid_weighted(parts, NULL, n);
}

a2m_scorer *a2m_scorer_hybrid_weighted(a2m_scorer **parts, const double *weights, size_t n)
{
	hybrid *h = calloc(1, sizeof *h);
	a2m_scorer **copy = calloc(n ? n : 1, sizeof *copy);
	double *w = calloc(n ? n : 1, sizeof *w);
	int missing = 0;
	for (size_t i = 0; i < n; i++) {
		missing |= !parts[i];
		if (w) {
			w[i] = weights ? weights[i] : 1;
			missing |= !(w[i] >= 0);
		}
	}
	if (!h || !copy || !w || missing) {
		free(h);
		free(copy);
		free(w);
		for (size_t i = 0; i < n; i++)
			if (parts[i])
				parts[i]->destroy(parts[i]);
		return NULL;
	}
	size_t nn = 0, nm = 0;
	for (size_t i = 0; i < n; i++) {
		copy[i] = parts[i];
		nn += (size_t)snprintf(h->name + nn, sizeof h->name - nn, "%s%s", i ? "+" : "",
				       parts[i]->name);
		nm += (size_t)snprintf(h->metric + nm, sizeof h->metric - nm, "%s%s", i ? "+" : "",
				       parts[i]->metric ? parts[i]->metric : parts[i]->name);
		if (nn >= sizeof h->name)
			nn = sizeof h->name - 1;
		if (nm >= sizeof h->metric)
			nm = sizeof h->metric - 1;
		if (parts[i]->vector_pool > h->base.vector_pool)
			h->base.vector_pool = parts[i]->vector_pool;
		if (parts[i]->analyzer && !h->base.analyzer) {
			h->base.analyzer = parts[i]->analyzer;
			h->base.indexer = parts[i]->indexer;
			h->base.k1 = parts[i]->k1;
			h->base.b = parts[i]->b;
		}
	}
	h->base.name = h->name;
	h->base.metric = h->metric;
	h->base.relevance = hybrid_relevance;
	h->base.candidates = hybrid_candidates;
	h->base.destroy = hybrid_destroy;
	h->parts = copy;
	h->w = w;
	h->n = n;
	return &h->base;
}
