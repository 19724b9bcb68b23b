/*
** rerank.c — the router's own scorer, for the rerank merge (DECISIONS
** 009): every candidate the backends returned is judged again by one
** model, so no backend's numbers are compared with another's. Text is
** scored by BM25 over the candidate pool itself (the analyser of
** src/rank/: the same tokens, stems and stopwords as a2m serve's index), a
** query vector by cosine against the candidates' vectors; with both, the
** mean of the two. Scores are scaled so the best is 1. A query with
** searchable terms keeps only the candidates it matches; with neither
** terms nor a vector, the newest come first (spec §4.3).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "federate/fed.h"
#include "rank/analyze.h"
#include "util/clock.h"

#define BM25_K1 1.2
#define BM25_B  0.75

typedef struct cand {
	json_t *rec;
	double  score;
	int64_t created;
} cand;

static int cmp_cand(const void *a, const void *b)
{
	const cand *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->created != y->created)
		return x->created > y->created ? -1 : 1;  /* ties: the newer */
	/* Then by id, so the order never depends on which backend answered first. */
	return strcmp(json_string_value(json_object_get(x->rec, "id")) ?: "",
		      json_string_value(json_object_get(y->rec, "id")) ?: "");
}

/* How often key occurs in d (0 when not at all). */
static uint32_t tf_of(const a2m_doc_terms *d, const a2m_term *key)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->terms[i].len == key->len && memcmp(d->terms[i].text, key->text, key->len) == 0)
			return d->terms[i].tf;
	return 0;
}

/* BM25 of every candidate for q, into text[]. Returns 0, or -1 (memory). */
static int bm25(a2m_analyzer *an, const a2m_query_terms *q, cand *c, size_t n, double *text)
{
	a2m_doc_terms *docs = calloc(n ? n : 1, sizeof *docs);
	if (!docs)
		return -1;
	double avg = 0;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		const char *content = json_string_value(json_object_get(c[i].rec, "content"));
		rc = a2m_analyze_doc(an, content ? content : "", &docs[i]);
		avg += docs[i].length;
	}
	avg = n && avg > 0 ? avg / (double)n : 1;
	for (size_t w = 0; w < q->nwords && !rc; w++) {
		/* A word's best key in each document: the surface form, or a stem. */
		double *tfw = calloc(n ? n : 1, sizeof *tfw);
		size_t df = 0;
		if (!tfw) {
			rc = -1;
			break;
		}
		for (size_t i = 0; i < n; i++) {
			for (size_t k = q->word_at[w]; k < q->word_at[w + 1]; k++) {
				double t = tf_of(&docs[i], &q->keys[k]) * q->key_weight[k];
				if (t > tfw[i])
					tfw[i] = t;
			}
			df += tfw[i] > 0;
		}
		double idf = log(1 + ((double)n - (double)df + 0.5) / ((double)df + 0.5));
		for (size_t i = 0; i < n; i++) {
			if (tfw[i] <= 0)
				continue;
			double norm = BM25_K1 * (1 - BM25_B + BM25_B * docs[i].length / avg);
			text[i] += q->weight[w] * idf * tfw[i] * (BM25_K1 + 1) / (tfw[i] + norm);
		}
		free(tfw);
	}
	for (size_t i = 0; i < n; i++)
		a2m_doc_terms_free(&docs[i]);
	free(docs);
	return rc;
}

/* The cosine of two vectors of width n. */
static double raw_cosine(const json_t *qv, const json_t *dv, size_t n)
{
	double dot = 0, a = 0, b = 0;
	for (size_t i = 0; i < n; i++) {
		double x = json_number_value(json_array_get(qv, i));
		double y = json_number_value(json_array_get(dv, i));
		dot += x * y;
		a += x * x;
		b += y * y;
	}
	return a > 0 && b > 0 ? dot / sqrt(a * b) : 0;
}

/* Cosine of the query vector with a candidate's, mapped onto [0, 1] (opposite
** 0, orthogonal 0.5, equal 1); 0 without a vector of the same width. */
static double cosine(const json_t *qv, const json_t *dv)
{
	size_t n = json_array_size(qv);
	if (!n || json_array_size(dv) != n)
		return 0;
	return (1 + raw_cosine(qv, dv, n)) / 2;
}


int fed_rerank(federation *f, const json_t *params, json_t *recs, a2m_error *err)
{
	size_t n = json_array_size(recs);
	const char *query = json_string_value(json_object_get(params, "query"));
	const json_t *qv = json_object_get(params, "embedding");
	cand *c = calloc(n ? n : 1, sizeof *c);
	double *text = calloc(n ? n : 1, sizeof *text);
	if (!c || !text) {
		free(c);
		free(text);
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		c[i].rec = json_incref(json_array_get(recs, i));
		const char *t = json_string_value(json_object_get(c[i].rec, "created_at"));
		if (t)
			a2m_clock_parse(t, &c[i].created);
	}
	int terms = 0, rc = 0;
	if (query && *query) {
		a2m_query_terms q = {0};
		pthread_mutex_lock(&f->analyzer_mu);
		if (!f->analyzer)
			f->analyzer = a2m_analyzer_new(NULL);
		if (!f->analyzer || a2m_analyze_query(f->analyzer, query, &q) != 0)
			rc = -1;
		terms = q.nwords > 0;
		if (!rc && terms)
			rc = bm25(f->analyzer, &q, c, n, text);
		a2m_query_terms_free(&q);
		pthread_mutex_unlock(&f->analyzer_mu);
	}
	int vector = json_array_size(qv) > 0;
	double best = 0;
	for (size_t i = 0; i < n; i++) {
		double v = vector ? cosine(qv, json_object_get(c[i].rec, "embedding")) : 0;
		c[i].score = terms && vector ? (text[i] > 0 ? 0.5 * text[i] : 0) + 0.5 * v
			   : terms	     ? text[i]
			   : vector	     ? v
					     : 0;
		if (c[i].score > best)
			best = c[i].score;
	}
	if (terms && vector) {
		/* BM25 is unbounded: scaled into the same range as the cosine first. */
		double tmax = 0;
		for (size_t i = 0; i < n; i++)
			tmax = text[i] > tmax ? text[i] : tmax;
		best = 0;
		for (size_t i = 0; i < n; i++) {
			double v = cosine(qv, json_object_get(c[i].rec, "embedding"));
			c[i].score = 0.5 * (tmax > 0 ? text[i] / tmax : 0) + 0.5 * v;
			best = c[i].score > best ? c[i].score : best;
		}
	}
	if (!terms && !vector) {
		/* No query to judge by: the newest first, scored by position. */
		for (size_t i = 0; i < n; i++)
			c[i].score = 0;
	}
	qsort(c, n, sizeof *c, cmp_cand);
	json_array_clear(recs);
	for (size_t i = 0; i < n; i++) {
		double s = !terms && !vector ? 1.0 / (1.0 + (double)i) : best > 0 ? c[i].score / best : 0;
		if (terms && !vector && c[i].score <= 0) {
			json_decref(c[i].rec);
			continue;  /* the query does not match it */
		}
		json_object_set_new(c[i].rec, "score", json_real(s));
		json_array_append_new(recs, c[i].rec);
	}
	free(c);
	free(text);
	return rc ? a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory") : 0;
}
