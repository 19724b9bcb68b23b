/*
** recall.c — memory/recall (spec §4.3) and memory/timeline (§4.4).
**
** Two methods, two orders, and neither is built from the other (DECISIONS
** 007): recall ranks by relevance, timeline replays in creation order.
*/
#include <stdint.h>

#include "protocol/protocol.h"

/* Wraps records (or hits) into {"records": [...]}; takes nothing. */
static int records_result(const a2m_server *srv, a2m_record **recs, const a2m_hit *hits,
			  size_t n, int with_embedding, json_t **result, a2m_error *err)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		const a2m_record *rec = hits ? hits[i].rec : recs[i];
		json_t *o = a2m_record_to_json(srv, rec, with_embedding);
		if (o && hits)
			json_object_set_new(o, "score", json_real(hits[i].score));
		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	*result = arr ? json_pack("{so}", "records", arr) : NULL;
	if (!*result)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	return 0;
}

static int wants_embeddings(const json_t *params)
{
	return json_is_true(json_object_get(params, "embeddings"));
}

int a2m_method_recall(a2m_server *srv, json_t *params, json_t **result, a2m_error *err)
{
	a2m_selection sel;
	const char *query;
	int64_t limit = srv->limits.default_recall_limit;
	int has_limit, rc;
	if ((rc = a2m_param_requires(srv, params, "embedding", A2M_CAP_EMBEDDINGS, err)) ||
	    (rc = a2m_param_selection(srv, params, &sel, err)) ||
	    (rc = a2m_param_string(params, "query", &query, err)) ||
	    (rc = a2m_param_count(params, "limit", &limit, &has_limit, err)))
		return rc;
	if (!has_limit)
		limit = srv->limits.default_recall_limit;
	else if (limit == 0)
		/* "No limit" only when no max is declared (spec §4.3); we declare
		** one, so 0 asks for as many as the server allows. */
		limit = srv->limits.max_recall_limit;
	if (limit > srv->limits.max_recall_limit) {
		a2m_error_set(err, A2M_QUOTA_EXCEEDED, "limit %lld exceeds max_recall_limit %lld",
			      (long long)limit, (long long)srv->limits.max_recall_limit);
		return a2m_error_data(err, json_pack("{ss sI}", "limit", "max_recall_limit",
						     "max", (json_int_t)srv->limits.max_recall_limit));
	}
	double min_score = -1;
	json_t *ms = json_object_get(params, "min_score");
	if (ms && !json_is_null(ms)) {
		if (!json_is_number(ms))
			return a2m_error_set(err, A2M_INVALID_PARAMS, "min_score must be a number");
		min_score = json_number_value(ms);
	}
	a2m_hit *hits;
	size_t n;
	rc = a2m_stack_recall(srv->stack, &sel, query, min_score, (size_t)limit, &hits, &n, err);
	if (rc)
		return rc;
	rc = records_result(srv, NULL, hits, n, wants_embeddings(params), result, err);
	a2m_hits_free(hits, n);
	return rc;
}

int a2m_method_timeline(a2m_server *srv, json_t *params, json_t **result, a2m_error *err)
{
	a2m_selection sel;
	int64_t limit = 0;
	int has_limit, rc;
	if ((rc = a2m_param_selection(srv, params, &sel, err)) ||
	    (rc = a2m_param_count(params, "limit", &limit, &has_limit, err)))
		return rc;
	a2m_record **recs;
	size_t n;
	rc = a2m_stack_timeline(srv->stack, &sel, has_limit ? (size_t)limit : 0, &recs, &n, err);
	if (rc)
		return rc;
	rc = records_result(srv, recs, NULL, n, wants_embeddings(params), result, err);
	a2m_record_array_free(recs, n);
	return rc;
}
