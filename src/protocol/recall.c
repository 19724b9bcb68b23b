/*
** recall.c — memory/recall (spec §4.3) and memory/timeline (§4.4), with the
** optional `prompt` rendering of §4.16.
**
** Two methods, two orders, and neither is built from the other (DECISIONS
** 007): recall ranks by relevance, timeline replays in creation order.
** Asking for a prompt never changes what is selected or its order.
*/
#include <stdint.h>
#include <stdlib.h>

#include "compose/prompt.h"
#include "protocol/protocol.h"
#include "util/json_write.h"

/* Wraps records (or hits) into {"records": [...]} plus the rendered prompt
** when asked for. */
static int records_result(const a2m_call *call, a2m_record **recs, const a2m_hit *hits,
			  size_t n, const json_t *params, int chronological, json_t **result,
			  a2m_error *err)
{
	int with_embedding = json_is_true(json_object_get(params, "embeddings"));
	a2m_prompt_opts popts;
	int want_prompt = 0, rc;
	if ((call->caps & A2M_CAP_PROMPT) &&
	    (rc = a2m_prompt_parse(json_object_get(params, "prompt"), &popts, &want_prompt, err)))
		return rc;
	json_t *arr = json_array();
	const a2m_record **order = calloc(n + 1, sizeof *order);
	for (size_t i = 0; arr && order && i < n; i++) {
		const a2m_record *rec = hits ? hits[i].rec : recs[i];
		order[i] = rec;
		json_t *o = a2m_record_to_json(call, rec, with_embedding);
		if (o && hits && json_object_set_new(o, "score", json_real(hits[i].score)) != 0) {
			json_decref(o);
			o = NULL;
		}
		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	*result = arr && order ? json_pack("{so}", "records", arr) : NULL;
	if (!*result) {
		if (!order)
			json_decref(arr);  /* json_pack took it otherwise */
		free(order);
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	if (want_prompt) {
		char *text = NULL;
		json_t *ids = NULL;
		rc = a2m_prompt_render(&popts, order, n, chronological, &text, &ids, err);
		if (rc) {
			free(order);
			json_decref(*result);
			*result = NULL;
			return rc;
		}
		int bad = json_object_set_new(*result, "prompt", json_string(text)) != 0;
		bad |= json_object_set_new(*result, "prompt_ids", ids) != 0;
		free(text);
		if (bad) {
			free(order);
			json_decref(*result);
			*result = NULL;
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		}
	}
	free(order);
	return 0;
}

/* Reads the query vector of recall (§3.7): numbers, of the store's width. */
static int query_vector(a2m_call *call, const json_t *params, double **vec, size_t *dims,
			a2m_error *err)
{
	json_t *v = json_object_get(params, "embedding");
	*vec = NULL;
	*dims = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) == 0)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "embedding must be a non-empty array of numbers");
	size_t n = json_array_size(v);
	int64_t max = call->srv->limits.max_dimensions;
	if ((int64_t)n > max)
		return a2m_limit_exceeded(err, "max_dimensions", max,
					  "embedding has %zu elements; max_dimensions is %lld", n,
					  (long long)max);
	double x;
	for (size_t i = 0; i < n; i++)
		if (!a2m_param_vector_element(json_array_get(v, i), &x))
			return a2m_error_set(err, A2M_INVALID_PARAMS,
					     "embedding[%zu] must be a number from %g to %g", i,
					     -A2M_VECTOR_ELEMENT_MAX, A2M_VECTOR_ELEMENT_MAX);
	/* The width is read once and kept: not for a shared call (stack.h). */
	if (call->shared)
		return a2m_error_set(err, A2M_NEED_EXCLUSIVE, "needs the exclusive lock");
	int64_t want;
	int rc = a2m_stack_dimensions(call->srv->stack, &want, err);
	if (rc)
		return rc;
	if (want && (int64_t)n != want) {
		a2m_error_set(err, A2M_EMBEDDING_MISMATCH,
			      "embedding has %zu dimensions; this store holds %lld", n, (long long)want);
		return a2m_error_data(err, json_pack("{sI sI}", "expected", (json_int_t)want,
						     "got", (json_int_t)n));
	}
	*vec = malloc(n * sizeof **vec);
	if (!*vec)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	for (size_t i = 0; i < n; i++)
		(*vec)[i] = json_number_value(json_array_get(v, i));
	*dims = n;
	return 0;
}

/*
** Recall up to the hits (free with a2m_hits_free): the parameters checked
** (the prompt too, before anything is touched), then the stack's recall.
** *want_prompt: the caller asked for a rendered prompt.
*/
static int run_recall(a2m_call *call, json_t *params, a2m_hit **hits, size_t *n,
		      int *want_prompt, a2m_error *err)
{
	a2m_selection sel;
	const char *query;
	int64_t limit = call->srv->limits.default_recall_limit;
	int has_limit, rc;
	if ((rc = a2m_param_requires(call, params, "embedding", A2M_CAP_EMBEDDINGS, err)) ||
	    (rc = a2m_param_selection(call, params, &sel, err)) ||
	    (rc = a2m_param_string(params, "query", &query, err)) ||
	    (rc = a2m_param_count(params, "limit", &limit, &has_limit, err)))
		return rc;
	/* Our extension x-touch: `touch: false` reads without counting a use,
	** for a person looking (the inspector) rather than an agent recalling;
	** undeclared, the parameter is unknown and ignored (spec §2). */
	json_t *touch = call->caps & A2M_CAP_X_TOUCH ? json_object_get(params, "touch") : NULL;
	if (touch && !json_is_boolean(touch))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "touch must be a boolean");
	sel.peek = json_is_false(touch);
	if (!has_limit)
		limit = call->srv->limits.default_recall_limit;
	else if (limit == 0)
		/* "No limit" only when no max is declared (spec §4.3); we declare
		** one, so 0 asks for as many as the server allows. */
		limit = call->srv->limits.max_recall_limit;
	if (limit > call->srv->limits.max_recall_limit) {
		a2m_error_set(err, A2M_QUOTA_EXCEEDED, "limit %lld exceeds max_recall_limit %lld",
			      (long long)limit, (long long)call->srv->limits.max_recall_limit);
		return a2m_error_data(err, json_pack("{ss sI}", "limit", "max_recall_limit",
						     "max", (json_int_t)call->srv->limits.max_recall_limit));
	}
	double min_score = -1;
	json_t *ms = json_object_get(params, "min_score");
	if (ms && !json_is_null(ms)) {
		if (!json_is_number(ms))
			return a2m_error_set(err, A2M_INVALID_PARAMS, "min_score must be a number");
		min_score = json_number_value(ms);
	}
	a2m_rank_query rq = {.text = query};
	double *vec = NULL;
	if ((call->caps & A2M_CAP_EMBEDDINGS) && (rc = query_vector(call, params, &vec, &rq.dims, err)))
		return rc;
	rq.vector = vec;
	/* Validate the prompt before touching anything (recall writes access counts). */
	a2m_prompt_opts popts;
	*want_prompt = 0;
	if ((call->caps & A2M_CAP_PROMPT) &&
	    (rc = a2m_prompt_parse(json_object_get(params, "prompt"), &popts, want_prompt, err))) {
		free(vec);
		return rc;
	}
	rc = a2m_stack_recall(call->srv->stack, &sel, &rq, min_score, (size_t)limit, hits, n, err);
	free(vec);
	return rc;
}

int a2m_method_recall(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	a2m_hit *hits;
	size_t n;
	int want_prompt;
	int rc = run_recall(call, params, &hits, &n, &want_prompt, err);
	if (rc)
		return rc;
	rc = records_result(call, NULL, hits, n, params, 0, result, err);
	a2m_hits_free(hits, n);
	return rc;
}

/*
** memory/recall answering with text: {"records":[...]} written straight
** from the hits, the same JSON as a2m_method_recall's result serialised,
** without building it as objects first. With a prompt, the objects after all.
*/
int a2m_method_recall_text(a2m_call *call, json_t *params, char **text, size_t *len,
			   a2m_error *err)
{
	a2m_hit *hits;
	size_t n;
	int want_prompt;
	*text = NULL;
	int rc = run_recall(call, params, &hits, &n, &want_prompt, err);
	if (rc)
		return rc;
	if (want_prompt) {
		json_t *result = NULL;
		rc = records_result(call, NULL, hits, n, params, 0, &result, err);
		a2m_hits_free(hits, n);
		if (rc)
			return rc;
		*text = a2m_json_write(result, len);
		json_decref(result);
		return *text ? 0 : a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	int with_embedding = json_is_true(json_object_get(params, "embeddings"));
	a2m_buf b = {0};
	a2m_buf_reserve(&b, 1024);  /* a recall of a few: one allocation */
	a2m_json_put_raw(&b, "{\"records\":[", 12);
	for (size_t i = 0; i < n && !rc; i++) {
		if (i)
			a2m_json_put_raw(&b, ",", 1);
		if (a2m_record_write_json(&b, call, hits[i].rec, with_embedding, &hits[i].score))
			rc = b.failed ? a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory")
				      : a2m_error_set(err, A2M_INTERNAL_ERROR,
						      "record %s cannot be written as JSON",
						      hits[i].rec->id);
	}
	a2m_json_put_raw(&b, "]}", 2);
	a2m_hits_free(hits, n);
	if (!rc && b.failed)
		rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	if (rc) {
		a2m_buf_free(&b);
		return rc;
	}
	*text = a2m_buf_take(&b, len);
	return 0;
}

int a2m_method_timeline(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	a2m_selection sel;
	int64_t limit = 0;
	int has_limit, rc;
	if ((rc = a2m_param_selection(call, params, &sel, err)) ||
	    (rc = a2m_param_count(params, "limit", &limit, &has_limit, err)))
		return rc;
	a2m_record **recs;
	size_t n;
	rc = a2m_stack_timeline(call->srv->stack, &sel, has_limit ? (size_t)limit : 0, &recs, &n, err);
	if (rc)
		return rc;
	rc = records_result(call, recs, NULL, n, params, 1, result, err);
	a2m_record_array_free(recs, n);
	return rc;
}
