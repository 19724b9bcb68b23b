/*
** summarize.c — memory/summarize (spec §4.15).
**
** Reads the selected sources, distils them with the extractive summarizer
** (summarize.h) and stores the result as one ordinary record, so everything
** else in the protocol applies to it. The sources are never deleted, and a
** `key` makes the summary a page that is rewritten in place (§3.6) rather
** than a pile of copies. Nothing to say is a decline, not an error.
*/
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"
#include "compose/summary.h"
#include "util/json_write.h"
#include "util/log.h"

/* Source records read when limit is absent, and the most ever read: the call
** is synchronous, so the server bounds its own work (§4.15). */
#define SUMMARIZE_DEFAULT_LIMIT 50
#define SUMMARIZE_MAX_LIMIT     200

/* What one summary may hold. */
#define SUMMARY_MAX_SENTENCES 5
#define SUMMARY_MAX_CHARS     2000

/* The role a summary is written with: the store itself produced it. */
#define SUMMARY_ROLE "memory"

/* The tier a summary lands in without `into`: distilled statements are
** facts, so the first semantic tier, else wherever a write goes by default. */
static const char *default_destination(const a2m_call *call)
{
	if (!(call->caps & A2M_CAP_TIERS))
		return NULL;
	const a2m_tier_layout *l = a2m_stack_tiers(call->srv->stack);
	for (size_t i = 0; i < l->n; i++)
		if (l->tiers[i].kind && strcmp(l->tiers[i].kind, "semantic") == 0)
			return l->tiers[i].name;
	return l->n ? l->tiers[l->default_tier].name : NULL;
}

/* {"summary_of": [ids of the sources]} as JSON text (malloc'd), or NULL. */
static char *summary_metadata(a2m_record *const *srcs, size_t n)
{
	json_t *ids = json_array();
	for (size_t i = 0; ids && i < n; i++)
		if (json_array_append_new(ids, json_string(srcs[i]->id))) {
			json_decref(ids);
			ids = NULL;
		}
	json_t *meta = ids ? json_pack("{so}", "summary_of", ids) : NULL;
	char *text = meta ? a2m_json_write(meta, NULL) : NULL;
	json_decref(meta);
	return text;
}

/* The answer: {"records": records, "read": read, "written": written}; takes records. */
static int summary_result(json_t *records, size_t read, size_t written, json_t **result,
			  a2m_error *err)
{
	*result = records ? json_pack("{so sI sI}", "records", records, "read", (json_int_t)read,
				      "written", (json_int_t)written) : NULL;
	return *result ? 0 : a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
}

int a2m_method_summarize(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	a2m_selection sel;
	const char *query, *into, *key;
	int64_t limit = SUMMARIZE_DEFAULT_LIMIT;
	int has_limit, rc;
	const char **ids = NULL;
	size_t n_ids = 0, n_srcs = 0, n_back = 0;
	a2m_record **srcs = NULL, **back = NULL, *rec = NULL;
	json_t *records = NULL;

	if ((rc = a2m_param_requires(call, params, "into", A2M_CAP_TIERS, err)) ||
	    (rc = a2m_param_requires(call, params, "key", A2M_CAP_KEYS, err)) ||
	    (rc = a2m_param_selection(call, params, &sel, err)) ||
	    (rc = a2m_param_string(params, "query", &query, err)) ||
	    (rc = a2m_param_string(params, "into", &into, err)) ||
	    (rc = a2m_param_string(params, "key", &key, err)) ||
	    (rc = a2m_param_count(params, "limit", &limit, &has_limit, err)))
		return rc;
	if (key && !*key)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "key must not be empty");
	if (into && !a2m_tiers_find(a2m_stack_tiers(call->srv->stack), into)) {
		a2m_error_set(err, A2M_UNKNOWN_TIER, "no tier named '%s'", into);
		return a2m_error_data(err, json_pack("{ss}", "tier", into));
	}
	json_t *ids_in = json_object_get(params, "ids");
	int has_ids = ids_in && !json_is_null(ids_in);
	if (has_ids && (rc = a2m_param_ids(call, params, "ids", &ids, &n_ids, err)))
		return rc;
	/* Summarizing a whole store must never be the result of an empty
	** request, nor of selectors that select everything by accident. */
	if (query && !*query)
		query = NULL;
	if (!has_ids && !query && !sel.q.tier && !sel.q.key_prefix &&
	    !(sel.where && json_object_size(sel.where) > 0)) {
		rc = a2m_error_set(err, A2M_INVALID_PARAMS,
				   "summarize needs a selector: ids, query, tier, where or key_prefix");
		goto done;
	}
	if (!has_limit)
		limit = SUMMARIZE_DEFAULT_LIMIT;
	else if (limit == 0 || limit > SUMMARIZE_MAX_LIMIT)
		limit = SUMMARIZE_MAX_LIMIT;  /* 0: as many as the server allows */

	if ((rc = a2m_stack_select(call->srv->stack, &sel, ids, n_ids, query, (size_t)limit, &srcs,
				   &n_srcs, err)))
		goto done;
	errno = 0;
	char *text = a2m_summarize_extract((const a2m_record *const *)srcs, n_srcs,
					   SUMMARY_MAX_SENTENCES, SUMMARY_MAX_CHARS);
	if (!text) {
		if (errno == ENOMEM) {
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
			goto done;
		}
		/* Declining is not an error (§4.15): nothing durable to say. */
		rc = summary_result(json_array(), n_srcs, 0, result, err);
		goto done;
	}

	if (!(rec = a2m_record_new())) {
		free(text);
		goto oom;
	}
	rec->content = text;
	rec->salience = NAN;  /* the stack applies its default */
	const char *dest = into ? into : default_destination(call);
	if (!(rec->role = strdup(SUMMARY_ROLE)) ||
	    (dest && !(rec->tier = strdup(dest))) ||
	    (key && !(rec->key = strdup(key))) ||
	    (sel.scope.owner && !(rec->owner = strdup(sel.scope.owner))) ||
	    !(rec->metadata = summary_metadata(srcs, n_srcs)))
		goto oom;
	if ((rc = a2m_stack_remember(call->srv->stack, &rec, 1, NULL, err)))
		goto done;

	/*
	** Report the record as stored: a key replacement kept an older id and
	** advanced the revision (rec holds them: a2m_stack_remember), and the
	** tiers' capacity may have moved it since. That read comes after the
	** commit, so when it fails the write still stood: it is answered with
	** rec, not with an error for a write that happened.
	*/
	a2m_selection mine = {.scope = sel.scope};
	const char *written_id = rec->id;
	a2m_error read_err = {0};
	if (a2m_stack_select(call->srv->stack, &mine, &written_id, 1, NULL, 0, &back, &n_back,
			     &read_err)) {
		a2m_log(A2M_LOG_WARN, "summarize: the summary %s was stored; reading it back "
			"failed: %s", rec->id, read_err.message);
		back = NULL;
		n_back = 0;
	}
	a2m_error_clear(&read_err);
	/* Gone already only when its tier was over capacity with nowhere to
	** spill; it was still written, so report it as it was sent. */
	json_t *wire = a2m_record_to_json(call, n_back ? back[0] : rec, 0);
	if (!wire || !(records = json_array()) || json_array_append_new(records, wire)) {
		if (!records)
			json_decref(wire);
		goto oom;
	}
	rc = summary_result(records, n_srcs, 1, result, err);
	records = NULL;
	goto done;
oom:
	rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
done:
	json_decref(records);
	a2m_record_free(rec);
	a2m_record_array_free(back, n_back);
	a2m_record_array_free(srcs, n_srcs);
	free(ids);
	return rc;
}
