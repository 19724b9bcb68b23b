/*
** tiers.c — memory/promote (spec §4.6) and memory/consolidate (§4.7).
*/
#include <stdlib.h>

#include "protocol/protocol.h"

int a2m_method_promote(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	const char *tier;
	a2m_scope scope;
	int rc;
	if ((rc = a2m_param_scope(call, params, &scope, err)) ||
	    (rc = a2m_param_string(params, "tier", &tier, err)))
		return rc;
	if (!tier)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "tier is required");
	double add = 0;
	if ((rc = a2m_param_salience(json_object_get(params, "salience"), "salience", &add, err)))
		return rc;
	const char **ids;
	size_t n;
	if ((rc = a2m_param_ids(call, params, "ids", &ids, &n, err)))
		return rc;
	int64_t promoted = 0;
	rc = a2m_stack_promote(call->srv->stack, &scope, ids, n, tier, add, &promoted, err);
	free(ids);
	if (rc)
		return rc;
	*result = json_pack("{sI}", "promoted", (json_int_t)promoted);
	return *result ? 0 : a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
}

int a2m_method_consolidate(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	(void)params;
	a2m_consolidation cons;
	int64_t *counts = calloc(a2m_stack_tiers(call->srv->stack)->n + 1, sizeof *counts);
	if (!counts)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	int rc = a2m_stack_consolidate(call->srv->stack, &cons, counts, err);
	*result = rc ? NULL : a2m_consolidation_to_json(call, &cons, counts, err);
	free(counts);
	if (rc)
		return rc;
	return *result ? 0 : err->code;
}
