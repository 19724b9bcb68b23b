/*
** params.c — parameter reading shared by the handlers: types are checked
** exactly, unknown names are never looked at (DECISIONS 012).
*/
#include <string.h>

#include "protocol/protocol.h"
#include "stack/where.h"

int a2m_param_string(const json_t *params, const char *name, const char **out,
		     a2m_error *err)
{
	json_t *v = json_object_get(params, name);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "%s must be a string", name);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "%s must not contain NUL", name);
	*out = json_string_value(v);
	return 0;
}

int a2m_param_count(const json_t *params, const char *name, int64_t *out,
		    int *present, a2m_error *err)
{
	json_t *v = json_object_get(params, name);
	*present = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "%s must be an integer", name);
	if (json_integer_value(v) < 0)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "%s must not be negative", name);
	*out = json_integer_value(v);
	*present = 1;
	return 0;
}

int a2m_param_requires(const a2m_server *srv, const json_t *params, const char *name,
		       unsigned cap, a2m_error *err)
{
	json_t *v = json_object_get(params, name);
	if (!v || json_is_null(v) || (srv->caps & cap))
		return 0;
	return a2m_error_capability(err, cap, name);
}

int a2m_param_selection(const a2m_server *srv, const json_t *params,
			a2m_selection *sel, a2m_error *err)
{
	int rc;
	memset(sel, 0, sizeof *sel);
	if ((rc = a2m_param_requires(srv, params, "tier", A2M_CAP_TIERS, err)) ||
	    (rc = a2m_param_requires(srv, params, "owner", A2M_CAP_SCOPES, err)) ||
	    (rc = a2m_param_requires(srv, params, "key_prefix", A2M_CAP_KEYS, err)))
		return rc;
	if ((rc = a2m_param_string(params, "tier", &sel->q.tier, err)) ||
	    (rc = a2m_param_string(params, "key_prefix", &sel->q.key_prefix, err)))
		return rc;
	const char *owner = NULL;
	if ((rc = a2m_param_string(params, "owner", &owner, err)))
		return rc;
	if (owner) {
		sel->q.by_owner = 1;
		sel->q.owner = owner;
	}
	json_t *where = json_object_get(params, "where");
	if (where && !json_is_null(where)) {
		if ((rc = a2m_where_validate(where, err)))
			return rc;
		sel->where = where;
	}
	return 0;
}
