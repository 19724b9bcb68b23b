/*
** keys.c — memory/fetch (spec §4.9): the record at an address. An unused key
** is an ordinary answer (record null), a missing key is INVALID_PARAMS.
** With x-history (docs/PROTOCOL.md, Extensions), `history: N` adds the
** record's earlier revisions, newest first, at most N.
*/
#include "protocol/protocol.h"
#include "util/clock.h"

/* Collects revisions into a JSON array, as fetch answers them. */
typedef struct history_out {
	const a2m_call *call;
	json_t         *arr;
	int             oom;
} history_out;

json_t *a2m_revision_to_json(const a2m_call *call, const a2m_revision *rev)
{
	char ts[A2M_TIMESTAMP_LEN], ts2[A2M_TIMESTAMP_LEN];
	json_t *o = json_pack("{sI ss so ss}", "revision", (json_int_t)rev->revision,
			      "content", rev->content,
			      "created_at", rev->created_at
				      ? json_string(a2m_clock_format(rev->created_at, ts))
				      : json_null(),
			      "superseded_at", a2m_clock_format(rev->superseded_at, ts2));
	int bad = !o;
	if (o && rev->role)
		bad |= json_object_set_new(o, "role", json_string(rev->role));
	if (o && rev->metadata)
		bad |= json_object_set_new(o, "metadata", json_loads(rev->metadata,
							JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL));
	if (o && (call->caps & A2M_CAP_SCOPES))
		bad |= json_object_set_new(o, "owner", rev->owner ? json_string(rev->owner)
								 : json_null());
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int history_visit(const a2m_revision *rev, void *ctx)
{
	history_out *h = ctx;
	json_t *o = a2m_revision_to_json(h->call, rev);
	if (!o || json_array_append_new(h->arr, o)) {
		h->oom = 1;
		return -1;
	}
	return 0;
}

/* Reads fetch's `history` (x-history): absent 0, true every one kept, or a count. */
static int history_param(const json_t *params, int64_t *max, int *want, a2m_error *err)
{
	json_t *v = json_object_get(params, "history");
	*want = 0;
	*max = 0;
	if (!v || json_is_null(v) || json_is_false(v))
		return 0;
	if (json_is_true(v)) {
		*want = 1;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return a2m_error_set(err, A2M_INVALID_PARAMS,
				     "history must be true or a non-negative integer");
	*max = json_integer_value(v);
	*want = 1;
	return 0;
}

int a2m_method_fetch(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	const char *key;
	a2m_scope scope;
	int64_t max = 0;
	int want_history = 0, rc;
	if ((rc = a2m_param_scope(call, params, &scope, err)) ||
	    (rc = a2m_param_string(params, "key", &key, err)))
		return rc;
	if (!key || !*key)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "key is required");
	if ((call->caps & A2M_CAP_X_HISTORY) && (rc = history_param(params, &max, &want_history, err)))
		return rc;
	a2m_record *rec = NULL;
	if ((rc = a2m_stack_fetch(call->srv->stack, scope.owner, key, &rec, err)))
		return rc;
	json_t *o = json_null();
	json_t *hist = want_history ? json_array() : NULL;
	if (rec) {
		o = a2m_record_to_json(call, rec, json_is_true(json_object_get(params, "embeddings")));
		/* history: 0 asks for the member and no revision. */
		if (hist && (want_history && (max > 0 || json_is_true(json_object_get(params, "history"))))) {
			history_out h = {.call = call, .arr = hist};
			rc = a2m_stack_history(call->srv->stack, rec->id, (size_t)max, history_visit, &h,
					       err);
			if (h.oom || (rc && !err->code))
				rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		}
		a2m_record_free(rec);
	}
	if (rc) {
		json_decref(o);
		json_decref(hist);
		return rc;
	}
	*result = o ? json_pack("{so}", "record", o) : NULL;
	if (*result && want_history)
		json_object_set_new(*result, "history", hist ? hist : json_null());
	else
		json_decref(hist);
	return *result ? 0 : a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
}
