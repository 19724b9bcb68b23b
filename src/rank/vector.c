/*
** vector.c — ranking by the caller's own vectors, and by the server's
** generated ones (see scorer.h).
**
** The metric is the store's, declared in describe (spec §3.7), and the
** comparison really is that metric: cosine divides out both lengths, dot does
** not, l2 measures distance. Each is then mapped monotonically into [0,1] so
** the blend with recency and salience keeps its meaning (DECISIONS 024).
**
** Relevance is measured in float32 with the store's own kernels
** (store/vector_index.h): relevance() converts each candidate's vector and
** measures it, so a record gets the same relevance whichever path judged
** it. candidates() asks the store's vector rows, which skip what the
** caller's filter turns away, for bounds from their 16-bit sketch: the list
** is marked bounded, and the stack judges with relevance() each record it
** reads (store.h, a2m_candidates.bounded). The opt-in quantized mode asks
** instead for an approximate pool measured exactly (vector_candidates).
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "rank/scorer.h"
#include "store/vector_index.h"

typedef struct vector_scorer {
	a2m_scorer base;
	a2m_metric metric;
	size_t     pool;      /* per result wanted; 0: exact (a2m_scorer_vector_new) */
} vector_scorer;

/* a2m_vector_force_exact: read by every search, set by the bench alone. */
static _Atomic int force_exact;

void a2m_vector_force_exact(int on)
{
	force_exact = on != 0;
}

typedef struct gen_scorer {
	a2m_scorer base;
	double     min_cosine;
} gen_scorer;

const char *a2m_metric_name(a2m_metric m)
{
	switch (m) {
	case A2M_METRIC_DOT: return "dot";
	case A2M_METRIC_L2:  return "l2";
	default:             return "cosine";
	}
}

int a2m_metric_parse(const char *name, a2m_metric *m)
{
	if (strcmp(name, "cosine") == 0)
		*m = A2M_METRIC_COSINE;
	else if (strcmp(name, "dot") == 0)
		*m = A2M_METRIC_DOT;
	else if (strcmp(name, "l2") == 0)
		*m = A2M_METRIC_L2;
	else
		return -1;
	return 0;
}

static a2m_vector_measure measure_of(a2m_metric metric)
{
	switch (metric) {
	case A2M_METRIC_DOT: return A2M_VECTOR_DOT;
	case A2M_METRIC_L2:  return A2M_VECTOR_L2;
	default:             return A2M_VECTOR_COSINE;
	}
}

/*
** The relevance of a raw measure: cosine (1 + cos)/2 (a vector without
** direction has cosine 0, neither near nor far), dot a logistic, l2
** 1/(1 + distance). 0 means "no match", and a real comparison is always
** above it.
*/
static double relevance_of(a2m_metric metric, double raw)
{
	double r;
	switch (metric) {
	case A2M_METRIC_DOT: r = 1.0 / (1.0 + exp(-raw)); break;
	case A2M_METRIC_L2:  r = 1.0 / (1.0 + raw); break;
	default:             r = (1.0 + raw) / 2.0; break;
	}
	return r > 1e-12 ? r : 1e-12;
}

/* v as n floats (a fresh array, or NULL when memory runs out). */
static float *floats_of(const double *v, size_t n)
{
	float *f = malloc((n ? n : 1) * sizeof *f);
	for (size_t i = 0; f && i < n; i++)
		f[i] = (float)v[i];
	return f;
}

static int vector_relevance(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			    const a2m_record *const *cands, size_t n, double *scores)
{
	vector_scorer *v = (vector_scorer *)s;
	(void)store;
	if (!q->vector || !q->dims)
		return A2M_SCORER_ABSTAIN;
	if (!n)
		return 0;
	float *qf = floats_of(q->vector, q->dims), *rf = malloc(q->dims * sizeof *rf);
	if (!qf || !rf) {
		free(qf);
		free(rf);
		return A2M_INTERNAL_ERROR;
	}
	a2m_vector_measure m = measure_of(v->metric);
	double qnorm = sqrt((double)a2m_vec_dot(qf, qf, q->dims));
	for (size_t i = 0; i < n; i++) {
		const a2m_record *r = cands[i];
		if (!r->embedding || r->dims != q->dims) {
			scores[i] = 0;
			continue;
		}
		for (size_t k = 0; k < q->dims; k++)
			rf[k] = (float)r->embedding[k];
		/* The norm rounded to float, as the store's rows keep it. */
		double rnorm = (float)sqrt((double)a2m_vec_dot(rf, rf, q->dims));
		scores[i] = relevance_of(v->metric, a2m_vec_measure(m, qf, qnorm, rf, rnorm, q->dims));
	}
	free(qf);
	free(rf);
	return 0;
}

/* a ranks strictly before b in a best-first list (store.h, a2m_candidates.sorted). */
static int cand_before(const a2m_candidate *a, const a2m_candidate *b)
{
	return a->score != b->score ? a->score > b->score : a->seq > b->seq;
}

static int cand_cmp(const void *a, const void *b)
{
	return cand_before(a, b) ? -1 : cand_before(b, a);
}

/* Sifts heap element i down; the root is the one that ranks last. */
static void heap_down(const a2m_candidate *v, size_t *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, last = i;
		if (l < n && cand_before(&v[h[last]], &v[h[l]]))
			last = l;
		if (r < n && cand_before(&v[h[last]], &v[h[r]]))
			last = r;
		if (last == i)
			return;
		size_t t = h[i];
		h[i] = h[last];
		h[last] = t;
		i = last;
	}
}

/* How many of a long list are put best first: more than a recall reads
** in the usual case (the limit, and the hits the blend lowers). */
#define VECTOR_SORTED 1024

/* See scorer.h. */
void a2m_candidates_best_first(a2m_candidates *out)
{
	size_t k = out->n < VECTOR_SORTED ? out->n : VECTOR_SORTED, n = 0;
	if (k < 2)
		return;
	size_t *h = malloc(k * sizeof *h);
	a2m_candidate *top = malloc(k * sizeof *top);
	if (!h || !top) {
		free(h);
		free(top);
		return;
	}
	for (size_t i = 0; i < out->n; i++) {
		if (n < k) {
			/* Sift up: the root stays the one that ranks last. */
			size_t c = n++;
			h[c] = i;
			while (c > 0 && cand_before(&out->v[h[(c - 1) / 2]], &out->v[h[c]])) {
				size_t t = h[c];
				h[c] = h[(c - 1) / 2];
				h[(c - 1) / 2] = t;
				c = (c - 1) / 2;
			}
		} else if (cand_before(&out->v[i], &out->v[h[0]])) {
			h[0] = i;
			heap_down(out->v, h, n, 0);
		}
	}
	for (size_t i = 0; i < k; i++) {
		top[i] = out->v[h[i]];
		out->v[h[i]].seq = INT64_MIN; /* taken: no record has this seq */
	}
	qsort(top, k, sizeof *top, cand_cmp);
	size_t m = out->n;
	for (size_t i = out->n; i-- > 0;)
		if (out->v[i].seq != INT64_MIN)
			out->v[--m] = out->v[i];
	memcpy(out->v, top, k * sizeof *top);
	out->sorted = k;
	free(h);
	free(top);
}

/*
** The store's vector rows measure every record with a vector of the
** query's width that the filter lets through; each measure becomes its
** relevance here. A store without rows, or one that cannot answer exactly
** now, sends the caller to a scan. In the quantized mode, a recall that
** wants a limited number of records asks for the approximate pool instead
** (store.h, a2m_vector_search.pool): measured exactly, but only the pool.
*/
static int vector_candidates(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			     a2m_candidates *out)
{
	vector_scorer *v = (vector_scorer *)s;
	memset(out, 0, sizeof *out);
	if (!q->vector || !q->dims)
		return A2M_SCORER_ABSTAIN;
	if (!store || !store->ops->vector_search)
		return A2M_SCORER_SCAN;
	float *qf = floats_of(q->vector, q->dims);
	if (!qf)
		return A2M_INTERNAL_ERROR;
	/* Bounds from the rows' sketch; the caller judges what it reads. */
	a2m_vector_search vs = {.vector = qf, .dims = q->dims, .measure = measure_of(v->metric),
				.filter = q->filter, .bound = 1};
	if (v->pool && q->want && !q->complete && !force_exact)
		vs.pool = q->want <= SIZE_MAX / v->pool ? q->want * v->pool : SIZE_MAX;
	int rc = store->ops->vector_search(store, &vs, out);
	free(qf);
	if (rc == A2M_STORE_NO_INDEX)
		return A2M_SCORER_SCAN;
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < out->n; i++)
		out->v[i].score = relevance_of(v->metric, out->v[i].score);
	/* A pool's figures are the measures themselves, not bounds. */
	if (out->approximate)
		out->approx_rest = relevance_of(v->metric, out->approx_rest);
	else if (!vs.pool)
		out->bounded = q;
	a2m_candidates_best_first(out);
	return 0;
}

/* A cosine as a generated-vector relevance: 0 (no match) at or below the floor. */
static double gen_relevance_of(const gen_scorer *g, double c)
{
	return c > g->min_cosine ? (c - g->min_cosine) / (1.0 - g->min_cosine) : 0;
}

/*
** The generated-vector part: gen_vector against gen_embedding only, by
** cosine (embedding models are made for it, whatever metric the caller's
** vectors use). Below min_cosine a candidate is judged "no match" (0), so
** a query near nothing still recalls nothing (DECISIONS 013); above it the
** cosine is rescaled into (0,1]. Measured with the store's float32 kernels
** and the row's float norm, as the generated rows are, so both paths give
** a record the same relevance.
*/
static int gen_relevance(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			 const a2m_record *const *cands, size_t n, double *scores)
{
	gen_scorer *g = (gen_scorer *)s;
	(void)store;
	if (!q->gen_vector || !q->gen_dims)
		return A2M_SCORER_ABSTAIN;
	size_t d = q->gen_dims;
	double qnorm = sqrt((double)a2m_vec_dot(q->gen_vector, q->gen_vector, d));
	for (size_t i = 0; i < n; i++) {
		const a2m_record *r = cands[i];
		if (!r->gen_embedding || r->gen_dims != d) {
			scores[i] = A2M_SCORE_ABSTAIN;
			continue;
		}
		double rnorm = (float)sqrt((double)a2m_vec_dot(r->gen_embedding, r->gen_embedding, d));
		scores[i] = gen_relevance_of(g, a2m_vec_measure(A2M_VECTOR_COSINE, q->gen_vector, qnorm,
								r->gen_embedding, rnorm, d));
	}
	return 0;
}

/*
** The store's generated rows (a2m_vector_search.generated) give a bound on
** each cosine, from their sketch. Every row of the query's width is listed,
** even those whose bound is at or below the floor (listed at 0): a record
** that is listed has a generated vector and is judged, one that is not is
** abstained on (a2m_candidates.judged_listed), and the hybrid needs to tell
** them apart to take its mean as relevance() does.
*/
static int gen_candidates(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			  a2m_candidates *out)
{
	gen_scorer *g = (gen_scorer *)s;
	memset(out, 0, sizeof *out);
	if (!q->gen_vector || !q->gen_dims)
		return A2M_SCORER_ABSTAIN;
	if (!store || !store->ops->vector_search)
		return A2M_SCORER_SCAN;
	a2m_vector_search vs = {.vector = q->gen_vector, .dims = q->gen_dims,
				.measure = A2M_VECTOR_COSINE, .filter = q->filter, .bound = 1,
				.generated = 1};
	int rc = store->ops->vector_search(store, &vs, out);
	if (rc == A2M_STORE_NO_INDEX)
		return A2M_SCORER_SCAN;
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < out->n; i++)
		out->v[i].score = gen_relevance_of(g, out->v[i].score);
	out->bounded = q;
	out->judged_listed = 1;
	return 0;
}

static void vector_destroy(a2m_scorer *s)
{
	free(s);
}

a2m_scorer *a2m_scorer_vector_new(a2m_metric metric, size_t pool)
{
	vector_scorer *v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	v->pool = pool;
	v->base.vector_pool = pool;
	v->base.name = "vector";
	v->base.metric = a2m_metric_name(metric);
	v->base.relevance = vector_relevance;
	v->base.candidates = vector_candidates;
	v->base.destroy = vector_destroy;
	v->metric = metric;
	return &v->base;
}

a2m_scorer *a2m_scorer_gen_vector_new(double min_cosine)
{
	gen_scorer *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	g->base.name = "generated";
	g->base.metric = "cosine";
	g->base.relevance = gen_relevance;
	g->base.candidates = gen_candidates;
	g->base.destroy = vector_destroy;
	g->min_cosine = min_cosine < 0 ? 0 : min_cosine >= 1 ? 0.99 : min_cosine;
	return &g->base;
}
