/*
** sessions.c — memory/session/list (spec §4.10) and memory/session/close
** (§4.11).
*/
#include <stdlib.h>

#include "protocol/protocol.h"
#include "util/clock.h"

int a2m_method_session_list(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	a2m_scope scope;
	int rc;
	if ((rc = a2m_param_scope(call, params, &scope, err)))
		return rc;
	a2m_session_info *s;
	size_t n;
	if ((rc = a2m_stack_sessions(call->srv->stack, &scope, &s, &n, err)))
		return rc;
	const a2m_tier_layout *l = a2m_stack_tiers(call->srv->stack);
	json_t *arr = json_array();
	char opened[A2M_TIMESTAMP_LEN], touched[A2M_TIMESTAMP_LEN];
	for (size_t i = 0; arr && i < n; i++) {
		json_t *tiers = json_object();
		for (size_t t = 0; tiers && t < l->n; t++)
			if (s[i].tier_counts[t] &&
			    json_object_set_new(tiers, l->tiers[t].name,
						json_integer(s[i].tier_counts[t])) != 0) {
				json_decref(tiers);  /* a count left out would be a wrong one */
				tiers = NULL;
			}
		json_t *o = tiers ? json_pack("{ss sI so ss ss}", "session", s[i].session,
					      "records", (json_int_t)s[i].records, "tiers", tiers,
					      "opened_at", a2m_clock_format(s[i].opened_at, opened),
					      "touched_at", a2m_clock_format(s[i].touched_at, touched))
				  : NULL;
		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	a2m_sessions_free(s, n);
	*result = arr ? json_pack("{so}", "sessions", arr) : NULL;
	return *result ? 0 : a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
}

int a2m_method_session_close(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	a2m_scope scope;
	const char *session;
	int rc;
	if ((rc = a2m_param_scope(call, params, &scope, err)) ||
	    (rc = a2m_param_string(params, "session", &session, err)))
		return rc;
	if (!session || !*session)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "session is required");
	int64_t flushed = 0;
	a2m_consolidation cons;
	int64_t *counts = calloc(a2m_stack_tiers(call->srv->stack)->n + 1, sizeof *counts);
	if (!counts)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	rc = a2m_stack_session_close(call->srv->stack, &scope, session, &flushed, &cons, counts,
				     err);
	json_t *o = rc ? NULL : a2m_consolidation_to_json(call, &cons, counts, err);
	free(counts);
	if (rc)
		return rc;
	if (!o)
		return err->code;
	if (json_object_set_new(o, "closed", json_string(session)) != 0 ||
	    json_object_set_new(o, "flushed", json_integer(flushed)) != 0) {
		json_decref(o);
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	*result = o;
	return 0;
}
