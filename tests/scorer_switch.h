/*
** scorer_switch.h — a scorer behind a switch, for the tests that compare
** pruned recall with complete and scan recall (test_prune.c,
** test_prune_segments.c, test_salience_bound.c): how its candidates()
** answers each recall, as the wrapped scorer does, asking it for the
** complete list, or "cannot enumerate" (the stack then judges every
** record: the scan path).
*/
#ifndef A2M_TEST_SCORER_SWITCH_H
#define A2M_TEST_SCORER_SWITCH_H

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rank/scorer.h"

/*
** The server's scorer (BM25 and vectors, fused) behind a switch: how its
** candidates() answers each recall.
*/
enum { ASK_AS_IS, ASK_COMPLETE, ASK_SCAN };

typedef struct switched {
	a2m_scorer  base;
	a2m_scorer *inner;
	int         mode;
	int         keeps_all;  /* what the last candidates() was told */
} switched;

static int sw_relevance(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			const a2m_record *const *cands, size_t n, double *scores)
{
	switched *w = (switched *)s;
	return w->inner->relevance(w->inner, store, q, cands, n, scores);
}

static int sw_candidates(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			 a2m_candidates *out)
{
	switched *w = (switched *)s;
	memset(out, 0, sizeof *out);
	if (w->mode == ASK_SCAN)
		return A2M_SCORER_SCAN;
	a2m_rank_query cq = *q;
	if (w->mode == ASK_COMPLETE)
		cq.complete = 1;
	w->keeps_all = q->keeps_all;
	int rc = w->inner->candidates(w->inner, store, &cq, out);
	/* What the stack is handed must say honestly whether it is complete. */
	if (rc == 0 && w->mode == ASK_COMPLETE)
		CHECK(out->rest_bound == 0);
	return rc;
}

static void sw_destroy(a2m_scorer *s)
{
	switched *w = (switched *)s;
	w->inner->destroy(w->inner);
	free(w);
}

#endif
