/*
** lexical.c — the old term-overlap scorer (see scorer.h), kept as the
** plain-scan baseline of the quality benchmark (docs/BENCHMARKS.md) and
** selectable with a2m_config.ranking = "lexical".
**
** Deliberately simple: ASCII case folding, no stemming, no stopwords, no
** index (it judges whatever list it is given, so recall scans every
** record). It differs from the first implementations' unnormalised term
** frequency in two ways: rare terms weigh more (IDF over the candidate set),
** and the score is a share of the query, so it stays in [0,1].
*/
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "rank/scorer.h"

#define MAX_QUERY_TERMS 64

typedef struct term {
	char  *text;
	size_t len;
	double weight;  /* IDF over the candidates */
} term;

static int is_term_byte(unsigned char c)
{
	return isalnum(c) || c >= 0x80;
}

/* Splits query into up to MAX_QUERY_TERMS distinct lower-cased terms. */
static size_t query_terms(const char *q, term *terms)
{
	size_t n = 0;
	const unsigned char *p = (const unsigned char *)q;
	while (*p && n < MAX_QUERY_TERMS) {
		while (*p && !is_term_byte(*p))
			p++;
		const unsigned char *start = p;
		while (*p && is_term_byte(*p))
			p++;
		size_t len = (size_t)(p - start);
		if (!len)
			break;
		char *t = malloc(len + 1);
		if (!t)
			break;
		for (size_t i = 0; i < len; i++)
			t[i] = (char)tolower(start[i]);
		t[len] = '\0';
		int dup = 0;
		for (size_t i = 0; i < n; i++)
			if (terms[i].len == len && memcmp(terms[i].text, t, len) == 0)
				dup = 1;
		if (dup) {
			free(t);
			continue;
		}
		terms[n].text = t;
		terms[n].len = len;
		terms[n].weight = 0;
		n++;
	}
	return n;
}

/* Counts whole-term occurrences of each query term in text into tf[]. */
static void count_terms(const char *text, const term *terms, size_t nt, int *tf)
{
	memset(tf, 0, nt * sizeof *tf);
	const unsigned char *p = (const unsigned char *)text;
	while (*p) {
		while (*p && !is_term_byte(*p))
			p++;
		const unsigned char *start = p;
		while (*p && is_term_byte(*p))
			p++;
		size_t len = (size_t)(p - start);
		if (!len)
			break;
		for (size_t i = 0; i < nt; i++) {
			if (terms[i].len != len)
				continue;
			size_t k = 0;
			while (k < len && (char)tolower(start[k]) == terms[i].text[k])
				k++;
			if (k == len)
				tf[i]++;
		}
	}
}

static int lexical_relevance(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			     const a2m_record *const *cands, size_t n, double *scores)
{
	(void)s;
	(void)store;
	term terms[MAX_QUERY_TERMS];
	size_t nt = query_terms(q->text ? q->text : "", terms);
	if (nt == 0)
		return A2M_SCORER_ABSTAIN;
	int rc = 0;
	int *tf = malloc(nt * n * sizeof *tf + 1);
	if (!tf) {
		rc = A2M_INTERNAL_ERROR;
		goto done;
	}
	for (size_t j = 0; j < n; j++)
		count_terms(cands[j]->content ? cands[j]->content : "", terms, nt, tf + j * nt);
	/* IDF with +1 smoothing: a term in every candidate still weighs a little. */
	double total = 0;
	for (size_t i = 0; i < nt; i++) {
		size_t df = 0;
		for (size_t j = 0; j < n; j++)
			df += tf[j * nt + i] > 0;
		terms[i].weight = log(1.0 + ((double)n + 1.0) / ((double)df + 0.5));
		total += terms[i].weight;
	}
	for (size_t j = 0; j < n; j++) {
		double got = 0;
		for (size_t i = 0; i < nt; i++) {
			int f = tf[j * nt + i];
			if (f > 0)
				got += terms[i].weight * (0.9 + 0.1 * (1.0 - 1.0 / (double)f));
		}
		scores[j] = total > 0 ? got / total : 0;
		if (scores[j] > 1)
			scores[j] = 1;
	}
	free(tf);
done:
	for (size_t i = 0; i < nt; i++)
		free(terms[i].text);
	return rc;
}

static void lexical_destroy(a2m_scorer *s)
{
	free(s);
}

a2m_scorer *a2m_scorer_lexical_new(void)
{
	a2m_scorer *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->name = "lexical";
	s->metric = "idf-overlap";
	s->relevance = lexical_relevance;
	s->destroy = lexical_destroy;
	return s;
}
