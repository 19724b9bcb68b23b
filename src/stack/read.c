/*
** read.c — what recall and fetch return: recall's hits, found by the
** scorer's index (ranked.c) or by judging a scan of the selection, with
** the query embedded first when the server has an embedder; then handed
** to write.c for the touch that records each recall (see stack.h). And
** fetch's record at a key. Nothing here begins a transaction.
*/
#include <stdlib.h>
#include <string.h>

#include "stack/stack_internal.h"
#include "util/clock.h"

/*
** The scan path of recall: every record the selection picks, judged by the
** scorer's relevance() (judge set) or ranked by recency (judge unset, or
** the scorer abstains).
*/
static int recall_scan(a2m_stack *st, const a2m_selection *sel, const a2m_rank_query *q,
		       int judge, double min_score, size_t limit, a2m_hit **out, size_t *n,
		       a2m_error *err)
{
	*out = NULL;
	*n = 0;
	collect c;
	int rc = a2m_stack_select_records(st, sel, 1, 0, &c, err);
	if (rc)
		return rc;
	a2m_hit *hits = calloc(c.n + 1, sizeof *hits);
	double *rel = calloc(c.n + 1, sizeof *rel);
	if (!hits || !rel) {
		rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		goto done;
	}
	int judged = 0;
	if (judge && c.n) {
		unsigned failures = a2m_store_failures_here();
		rc = st->scorer->relevance(st->scorer, st->store, q,
					   (const a2m_record *const *)c.recs, c.n, rel);
		if (rc < 0) {
			a2m_stack_scorer_error(st, err, rc, failures);
			goto done;
		}
		judged = rc == 0;
		rc = 0;
	}
	int64_t now = a2m_clock_now_ms();
	size_t kept = 0;
	for (size_t i = 0; i < c.n; i++) {
		a2m_record *r = c.recs[i];
		double score;
		if (judged) {
			/* Judged and no match: not recalled (DECISIONS 013). */
			if (rel[i] <= 0)
				continue;
			score = a2m_stack_blend_score(st, rel[i], r, now);
		} else {
			/* No query: newest first, whatever the tier. */
			score = a2m_stack_recency_score(r, now);
		}
		if (score < min_score)
			continue;
		hits[kept].rec = r;
		hits[kept].score = score;
		c.recs[i] = NULL;
		kept++;
	}
	qsort(hits, kept, sizeof *hits, a2m_stack_hit_cmp);
	if (limit && kept > limit) {
		for (size_t i = limit; i < kept; i++)
			a2m_record_free(hits[i].rec);
		kept = limit;
	}
	*out = hits;
	*n = kept;
	hits = NULL;
done:
	free(rel);
	free(hits);
	a2m_record_array_free(c.recs, c.n);
	return rc;
}

/*
** With an embedder, a text query without a vector (docs/EMBEDDINGS.md
** §4.3): first one batch of records still owed a generated vector, then
** the query text itself, into gq->gen_vector (*vec, freed by the caller).
** Any failure leaves gq as q: recall then ranks lexically, never fails.
*/
static void embed_query(a2m_stack *st, const a2m_rank_query *q, a2m_rank_query *gq,
			float **vec)
{
	*gq = *q;
	*vec = NULL;
	if (!a2m_stack_embedder(st) || q->vector || !q->text || !*q->text)
		return;
	size_t done = 0, dims = 0;
	a2m_error e = {0};
	(void)a2m_stack_embed_owed(st, A2M_EMBED_DEFAULT_BATCH, &done, &e);
	a2m_error_clear(&e);
	if (a2m_stack_embed_text(st, q->text, vec, &dims) == 0 && *vec) {
		gq->gen_vector = *vec;
		gq->gen_dims = dims;
	}
}

/* Recall proper, for a query already completed by embed_query(). */
static int recall_ranked(a2m_stack *st, const a2m_selection *sel, const a2m_rank_query *q,
			 double min_score, size_t limit, a2m_hit **out, size_t *n,
			 a2m_error *err);

int a2m_stack_recall(a2m_stack *st, const a2m_selection *sel, const a2m_rank_query *q,
		     double min_score, size_t limit, a2m_hit **out, size_t *n,
		     a2m_error *err)
{
	a2m_rank_query gq;
	float *vec = NULL;
	/* Embedding writes (the owed records) and the vector rows are read
	** through the store's main connection: neither is for a shared read. */
	if (sel->shared && (q->vector || a2m_stack_embedder(st)))
		return a2m_stack_need_exclusive(err);
	embed_query(st, q, &gq, &vec);
	/* The store's vector search skips what the selection turns away. */
	a2m_stack_vfilter vf;
	a2m_stack_vector_filter(st, sel, &vf);
	gq.filter = &vf.f;
	int rc = recall_ranked(st, sel, &gq, min_score, limit, out, n, err);
	free(vec);
	return rc;
}

static int recall_ranked(a2m_stack *st, const a2m_selection *sel, const a2m_rank_query *q,
			 double min_score, size_t limit, a2m_hit **out, size_t *n,
			 a2m_error *err)
{
	a2m_hit *hits = NULL;
	size_t kept = 0;
	int rc;
	*out = NULL;
	*n = 0;
	int asked = (q->text && *q->text) || q->vector;
	int scan_judged = asked;
	if (asked && st->scorer->candidates) {
		/* The index names the candidates: no need to read every record.
		** Judged: what it did not name did not match (DECISIONS 013). */
		rc = a2m_stack_ranked(st, sel, q, limit, min_score, 1, &hits, &kept, err);
		if (rc < 0)
			return rc;
		if (rc == 0)
			goto found;
		/* Abstained: rank by recency. SCAN: judge a scan instead. */
		scan_judged = rc == A2M_SCORER_SCAN;
	}
	if ((rc = recall_scan(st, sel, q, scan_judged, min_score, limit, &hits, &kept, err)))
		return rc;
found:
	if (kept && !st->cfg.read_only && !sel->peek &&
	    (rc = a2m_stack_touch(st, hits, kept, sel->shared, err)) != 0) {
		a2m_hits_free(hits, kept);
		return rc;
	}
	*out = hits;
	*n = kept;
	return 0;
}

int a2m_stack_fetch(a2m_stack *st, const char *owner, const char *key, a2m_record **out,
		    a2m_error *err)
{
	int rc = st->store->ops->get_by_key(st->store, owner, key, out);
	if (rc)
		return a2m_stack_store_error(st, err, rc);
	if (*out && a2m_stack_expired(*out, a2m_clock_now_ms())) {
		/* Expired: no longer there for any read (x-expiry). */
		a2m_record_free(*out);
		*out = NULL;
	}
	if (*out) {
		a2m_record tmp;
		const a2m_record *r = a2m_stack_touched(st, *out, &tmp);
		(*out)->access_count = r->access_count;
		(*out)->accessed_at = r->accessed_at;
	}
	return 0;
}
