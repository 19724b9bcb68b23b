/*
** vector.c — ranking by the caller's own vectors (see scorer.h).
**
** The metric is the store's, declared in describe (spec §3.7), and the
** comparison really is that metric: cosine divides out both lengths, dot does
** not, l2 measures distance. Each is then mapped monotonically into [0,1] so
** the blend with recency and salience keeps its meaning (DECISIONS 024).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "rank/scorer.h"

typedef struct vector_scorer {
	a2m_scorer base;
	a2m_metric metric;
} vector_scorer;

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

static double similarity(a2m_metric metric, const double *a, const double *b, size_t n)
{
	double dot = 0, na = 0, nb = 0, d2 = 0;
	for (size_t i = 0; i < n; i++) {
		dot += a[i] * b[i];
		na += a[i] * a[i];
		nb += b[i] * b[i];
		d2 += (a[i] - b[i]) * (a[i] - b[i]);
	}
	switch (metric) {
	case A2M_METRIC_DOT:
		return 1.0 / (1.0 + exp(-dot));
	case A2M_METRIC_L2:
		return 1.0 / (1.0 + sqrt(d2));
	default:
		if (na == 0 || nb == 0)
			return 0.5; /* no direction: neither near nor far */
		return (1.0 + dot / (sqrt(na) * sqrt(nb))) / 2.0;
	}
}

static int vector_relevance(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			    const a2m_record *const *cands, size_t n, double *scores)
{
	vector_scorer *v = (vector_scorer *)s;
	(void)store;
	if (!q->vector || !q->dims)
		return A2M_SCORER_ABSTAIN;
	for (size_t i = 0; i < n; i++) {
		const a2m_record *r = cands[i];
		if (!r->embedding || r->dims != q->dims) {
			scores[i] = 0;
			continue;
		}
		double sim = similarity(v->metric, q->vector, r->embedding, q->dims);
		/* 0 means "no match"; a real comparison is always above it. */
		scores[i] = sim > 1e-12 ? sim : 1e-12;
	}
	return 0;
}

/* The cosine of two float vectors; 0 when either has no direction. */
static double cosine_f(const float *a, const float *b, size_t n)
{
	double dot = 0, na = 0, nb = 0;
	for (size_t i = 0; i < n; i++) {
		dot += (double)a[i] * b[i];
		na += (double)a[i] * a[i];
		nb += (double)b[i] * b[i];
	}
	return na == 0 || nb == 0 ? 0 : dot / (sqrt(na) * sqrt(nb));
}

/*
** The generated-vector part: gen_vector against gen_embedding only, by
** cosine (embedding models are made for it, whatever metric the caller's
** vectors use). Below min_cosine a candidate is judged "no match" (0), so
** a query near nothing still recalls nothing (DECISIONS 013); above it the
** cosine is rescaled into (0,1].
*/
static int gen_relevance(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			 const a2m_record *const *cands, size_t n, double *scores)
{
	gen_scorer *g = (gen_scorer *)s;
	(void)store;
	if (!q->gen_vector || !q->gen_dims)
		return A2M_SCORER_ABSTAIN;
	for (size_t i = 0; i < n; i++) {
		const a2m_record *r = cands[i];
		if (!r->gen_embedding || r->gen_dims != q->gen_dims) {
			scores[i] = A2M_SCORE_ABSTAIN;
			continue;
		}
		double c = cosine_f(q->gen_vector, r->gen_embedding, q->gen_dims);
		scores[i] = c > g->min_cosine ? (c - g->min_cosine) / (1.0 - g->min_cosine) : 0;
	}
	return 0;
}

static void vector_destroy(a2m_scorer *s)
{
	free(s);
}

a2m_scorer *a2m_scorer_vector_new(a2m_metric metric)
{
	vector_scorer *v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	v->base.name = "vector";
	v->base.metric = a2m_metric_name(metric);
	v->base.relevance = vector_relevance;
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
	g->base.destroy = vector_destroy;
	g->min_cosine = min_cosine < 0 ? 0 : min_cosine >= 1 ? 0.99 : min_cosine;
	return &g->base;
}
