/*
** keys.c — memory/fetch (spec §4.9): the record at an address. An unused key
** is an ordinary answer (record null), a missing key is INVALID_PARAMS.
*/
#include "protocol/protocol.h"

int a2m_method_fetch(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	const char *key;
	a2m_scope scope;
	int rc;
	if ((rc = a2m_param_scope(call, params, &scope, err)) ||
	    (rc = a2m_param_string(params, "key", &key, err)))
		return rc;
	if (!key || !*key)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "key is required");
	a2m_record *rec = NULL;
	if ((rc = a2m_stack_fetch(call->srv->stack, scope.owner, key, &rec, err)))
		return rc;
	json_t *o = json_null();
	if (rec) {
		o = a2m_record_to_json(call, rec, json_is_true(json_object_get(params, "embeddings")));
		a2m_record_free(rec);
	}
	*result = o ? json_pack("{so}", "record", o) : NULL;
	return *result ? 0 : a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
}
