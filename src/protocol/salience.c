/*
** salience.c — memory/reinforce (spec §4.8): raise the salience of records
** that proved useful. The amount defaults to 1.0.
*/
#include <stdlib.h>

#include "protocol/protocol.h"

#define DEFAULT_REINFORCE 1.0

int a2m_method_reinforce(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	a2m_scope scope;
	int rc;
	if ((rc = a2m_param_scope(call, params, &scope, err)))
		return rc;
	double amount = DEFAULT_REINFORCE;
	if ((rc = a2m_param_salience(json_object_get(params, "amount"), "amount", &amount, err)))
		return rc;
	const char **ids;
	size_t n;
	if ((rc = a2m_param_ids(call, params, "ids", &ids, &n, err)))
		return rc;
	int64_t count = 0;
	rc = a2m_stack_reinforce(call->srv->stack, &scope, ids, n, amount, &count, err);
	free(ids);
	if (rc)
		return rc;
	*result = json_pack("{sI}", "reinforced", (json_int_t)count);
	return *result ? 0 : a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
}
