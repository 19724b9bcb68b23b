/*
** hybrid.c — several scorers as one (see scorer.h).
**
** Each part judges what it can; a part that abstains (no text, or no vector)
** is simply left out, so a text-only query ranks lexically, a vector-only
** query by vectors, and a query with both by their mean.
*/
#include <stdlib.h>

#include "a2m.h"
#include "rank/scorer.h"

typedef struct hybrid {
	a2m_scorer   base;
	a2m_scorer **parts;
	size_t       n;
} hybrid;

static int hybrid_relevance(a2m_scorer *s, const a2m_rank_query *q,
			    const a2m_record *const *cands, size_t n, double *scores)
{
	hybrid *h = (hybrid *)s;
	double *part = malloc((n ? n : 1) * sizeof *part);
	if (!part)
		return A2M_INTERNAL_ERROR;
	size_t judged = 0;
	for (size_t i = 0; i < n; i++)
		scores[i] = 0;
	for (size_t p = 0; p < h->n; p++) {
		int rc = h->parts[p]->relevance(h->parts[p], q, cands, n, part);
		if (rc < 0) {
			free(part);
			return rc;
		}
		if (rc == A2M_SCORER_ABSTAIN)
			continue;
		judged++;
		for (size_t i = 0; i < n; i++)
			scores[i] += part[i];
	}
	free(part);
	if (!judged)
		return A2M_SCORER_ABSTAIN;
	for (size_t i = 0; i < n; i++)
		scores[i] /= (double)judged;
	return 0;
}

static void hybrid_destroy(a2m_scorer *s)
{
	hybrid *h = (hybrid *)s;
	for (size_t i = 0; i < h->n; i++)
		h->parts[i]->destroy(h->parts[i]);
	free(h->parts);
	free(h);
}

a2m_scorer *a2m_scorer_hybrid_new(a2m_scorer **parts, size_t n)
{
	hybrid *h = calloc(1, sizeof *h);
	a2m_scorer **copy = calloc(n ? n : 1, sizeof *copy);
	if (!h || !copy) {
		free(h);
		free(copy);
		for (size_t i = 0; i < n; i++)
			if (parts[i])
				parts[i]->destroy(parts[i]);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		copy[i] = parts[i];
	h->base.name = "hybrid";
	h->base.relevance = hybrid_relevance;
	h->base.destroy = hybrid_destroy;
	h->parts = copy;
	h->n = n;
	return &h->base;
}
