/*
** forget.c — memory/forget (spec §4.5).
**
** Deleting must be deliberate: a call with no selector, or with selectors
** that select everything by accident (an empty `where`, an empty query), is
** refused with INVALID_PARAMS rather than emptying the store.
*/
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"

int a2m_method_forget(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	a2m_selection sel;
	const char *query;
	int rc;
	if ((rc = a2m_param_selection(call, params, &sel, err)) ||
	    (rc = a2m_param_string(params, "query", &query, err)))
		return rc;
	json_t *ids_in = json_object_get(params, "ids");
	if (ids_in && json_is_null(ids_in))
		ids_in = NULL;
	if (ids_in && !json_is_array(ids_in))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "ids must be an array of strings");
	if (query && !*query)
		query = NULL;
	int selective = ids_in || query || sel.q.tier || sel.q.key_prefix ||
			(sel.where && json_object_size(sel.where) > 0);
	if (!selective)
		return a2m_error_set(err, A2M_INVALID_PARAMS,
			"forget needs a selector: ids, query, tier, where or key_prefix");
	size_t n_ids = 0;
	const char **ids = NULL;
	if (ids_in && (rc = a2m_param_ids(call, params, "ids", &ids, &n_ids, err)))
		return rc;
	int64_t forgotten = 0;
	rc = a2m_stack_forget(call->srv->stack, &sel, ids, n_ids, query, &forgotten, err);
	free(ids);
	if (rc)
		return rc;
	*result = json_pack("{sI}", "forgotten", (json_int_t)forgotten);
	if (!*result)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	return 0;
}
