/*
** params.c — parameter reading shared by the handlers: types are checked
** exactly, unknown names are never looked at (DECISIONS 012).
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"
#include "stack/where.h"
#include "util/text.h"

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

int a2m_param_salience(const json_t *v, const char *name, double *out, a2m_error *err)
{
	if (!v || json_is_null(v))
		return 0;
	double d = json_is_number(v) ? json_number_value(v) : NAN;
	if (!(fabs(d) <= A2M_SALIENCE_MAX)) {
		a2m_error_set(err, A2M_INVALID_PARAMS, "%s must be a number from %g to %g", name,
			      -A2M_SALIENCE_MAX, A2M_SALIENCE_MAX);
		return a2m_error_data(err, json_pack("{ss sI sI}", "param", name, "min",
						     (json_int_t)-A2M_SALIENCE_MAX, "max",
						     (json_int_t)A2M_SALIENCE_MAX));
	}
	*out = d;
	return 0;
}

int a2m_limit_exceeded(a2m_error *err, const char *name, int64_t max, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	err->code = A2M_QUOTA_EXCEEDED;
	return a2m_error_data(err, json_pack("{ss sI}", "limit", name, "max", (json_int_t)max));
}

/* Whether v's objects and arrays nest deeper than max (v itself is 1). */
static int deeper_than(const json_t *v, int64_t max)
{
	const char *k;
	json_t *item;
	size_t i;
	if ((json_is_object(v) || json_is_array(v)) && max <= 0)
		return 1;
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, item)
			if (deeper_than(item, max - 1))
				return 1;
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item)
			if (deeper_than(item, max - 1))
				return 1;
	}
	return 0;
}

int a2m_param_limits(const a2m_call *call, const json_t *params, a2m_error *err)
{
	const a2m_limits *l = &call->srv->limits;
	if (deeper_than(params, l->max_depth))
		return a2m_limit_exceeded(err, "max_depth", l->max_depth,
					  "params nest deeper than max_depth %lld",
					  (long long)l->max_depth);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)params, k, v) {
		if (!json_is_string(v))
			continue;
		size_t n = json_string_length(v);
		if (strcmp(k, "query") == 0) {
			/* Bytes first: a code point is 1 to 4 of them. */
			if ((int64_t)n > l->max_content_length &&
			    (int64_t)a2m_utf8_length(json_string_value(v), n) > l->max_content_length)
				return a2m_limit_exceeded(err, "max_content_length", l->max_content_length,
							  "query is longer than max_content_length %lld",
							  (long long)l->max_content_length);
		} else if ((int64_t)n > l->max_string_bytes) {
			return a2m_limit_exceeded(err, "max_string_bytes", l->max_string_bytes,
						  "%s has %zu bytes; max_string_bytes is %lld", k, n,
						  (long long)l->max_string_bytes);
		}
	}
	return 0;
}

int a2m_param_vector_element(const json_t *v, double *out)
{
	if (!json_is_number(v))
		return 0;
	*out = json_number_value(v);
	return fabs(*out) <= A2M_VECTOR_ELEMENT_MAX;
}

int a2m_param_requires(const a2m_call *call, const json_t *params, const char *name,
		       unsigned cap, a2m_error *err)
{
	json_t *v = json_object_get(params, name);
	if (!v || json_is_null(v) || (call->caps & cap))
		return 0;
	return a2m_error_capability(err, cap, name);
}

int a2m_param_owner_is_principal(const a2m_call *call, const char **owner, a2m_error *err)
{
	/* Over a network the scope is the authenticated principal, never the
	** client's claim; a claim that disagrees is refused, not ignored, so a
	** misconfigured client learns of it (spec §6, docs/PROTOCOL.md). */
	if (*owner && strcmp(*owner, call->principal) != 0) {
		a2m_error_set(err, A2M_SCOPE_DENIED,
			      "owner '%s' is not the authenticated principal of this request", *owner);
		return a2m_error_data(err, json_pack("{ss}", "owner", *owner));
	}
	*owner = call->principal;
	return 0;
}

int a2m_param_scope(const a2m_call *call, const json_t *params, a2m_scope *scope,
		    a2m_error *err)
{
	int rc;
	memset(scope, 0, sizeof *scope);
	if ((rc = a2m_param_requires(call, params, "owner", A2M_CAP_SCOPES, err)) ||
	    (rc = a2m_param_string(params, "owner", &scope->owner, err)))
		return rc;
	scope->scoped = (call->caps & A2M_CAP_SCOPES) != 0;
	/* Our extension x-all-owners (docs/PROTOCOL.md): every owner's records,
	** for a federating router's own reads and moves. A local caller sees
	** everything anyway; over a network only a router's token may.
	** Undeclared, the parameter is unknown and ignored: the scope stays. */
	const json_t *all = call->caps & A2M_CAP_X_ALL_OWNERS
				    ? json_object_get(params, "all_owners") : NULL;
	if (all && !json_is_boolean(all))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "all_owners must be true or false");
	if (json_is_true(all) && scope->scoped) {
		if (call->network)
			return a2m_error_set(err, A2M_SCOPE_DENIED, "all_owners is for a local caller "
					     "or a federating router's token");
		if (scope->owner)
			return a2m_error_set(err, A2M_INVALID_PARAMS, "all_owners and owner exclude "
					     "each other");
		scope->scoped = 0;
		return 0;
	}
	if (scope->scoped && call->network)
		return a2m_param_owner_is_principal(call, &scope->owner, err);
	return 0;
}

/* where's members, and the values of each any-of list, within the limits. */
static int where_limits(const a2m_call *call, const json_t *where, a2m_error *err)
{
	const a2m_limits *l = &call->srv->limits;
	if ((int64_t)json_object_size(where) > l->max_where_fields)
		return a2m_limit_exceeded(err, "max_where_fields", l->max_where_fields,
					  "where has %zu members; max_where_fields is %lld",
					  json_object_size(where), (long long)l->max_where_fields);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)where, k, v) {
		/* An operator's list ($in, $nin) is bounded as an any-of list is. */
		size_t n = json_array_size(v);
		const char *op;
		json_t *arg;
		if (json_is_object(v))
			json_object_foreach(v, op, arg)
				if (json_array_size(arg) > n)
					n = json_array_size(arg);
		if ((int64_t)n > l->max_where_values)
			return a2m_limit_exceeded(err, "max_where_values", l->max_where_values,
						  "where.%s lists %zu values; max_where_values is %lld",
						  k, n, (long long)l->max_where_values);
	}
	return 0;
}

int a2m_param_selection(const a2m_call *call, const json_t *params,
			a2m_selection *sel, a2m_error *err)
{
	int rc;
	memset(sel, 0, sizeof *sel);
	sel->shared = call->shared;
	if ((rc = a2m_param_requires(call, params, "tier", A2M_CAP_TIERS, err)) ||
	    (rc = a2m_param_requires(call, params, "key_prefix", A2M_CAP_KEYS, err)) ||
	    (rc = a2m_param_scope(call, params, &sel->scope, err)))
		return rc;
	if ((rc = a2m_param_string(params, "tier", &sel->q.tier, err)) ||
	    (rc = a2m_param_string(params, "key_prefix", &sel->q.key_prefix, err)))
		return rc;
	if (sel->q.tier && !a2m_tiers_find(a2m_stack_tiers(call->srv->stack), sel->q.tier)) {
		a2m_error_set(err, A2M_UNKNOWN_TIER, "no tier named '%s'", sel->q.tier);
		return a2m_error_data(err, json_pack("{ss}", "tier", sel->q.tier));
	}
	json_t *where = json_object_get(params, "where");
	if (where && !json_is_null(where)) {
		if ((rc = a2m_where_validate(where, (call->caps & A2M_CAP_X_WHERE) != 0, err)) ||
		    (rc = where_limits(call, where, err)))
			return rc;
		sel->where = where;
	}
	return 0;
}

int a2m_param_ids(const a2m_call *call, const json_t *params, const char *name,
		  const char ***ids, size_t *n, a2m_error *err)
{
	json_t *arr = json_object_get(params, name);
	int64_t max = call->srv->limits.max_ids_per_call;
	*ids = NULL;
	*n = 0;
	if (!json_is_array(arr))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "%s must be an array of strings", name);
	size_t len = json_array_size(arr);
	if ((int64_t)len > max)
		return a2m_limit_exceeded(err, "max_ids_per_call", max,
					  "%s lists %zu ids; max_ids_per_call is %lld", name, len,
					  (long long)max);
	const char **v = calloc(len + 1, sizeof *v);
	if (!v)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	for (size_t i = 0; i < len; i++) {
		json_t *item = json_array_get(arr, i);
		if (!json_is_string(item)) {
			free(v);
			return a2m_error_set(err, A2M_INVALID_PARAMS, "%s[%zu] must be a string", name, i);
		}
		v[i] = json_string_value(item);
	}
	*ids = v;
	*n = len;
	return 0;
}

json_t *a2m_consolidation_to_json(a2m_call *call, const a2m_consolidation *c,
				  const int64_t *counts, a2m_error *err)
{
	const a2m_tier_layout *l = a2m_stack_tiers(call->srv->stack);
	json_t *by_tier = json_object();
	for (size_t i = 0; by_tier && i < l->n; i++)
		if (json_object_set_new(by_tier, l->tiers[i].name, json_integer(counts[i])) != 0) {
			json_decref(by_tier);  /* counts left out would be wrong ones */
			by_tier = NULL;
		}
	json_t *o = by_tier ? json_pack("{sI sI sI sI so}", "moved", (json_int_t)c->moved,
					"promoted", (json_int_t)c->promoted,
					"dropped", (json_int_t)c->dropped,
					"summarized", (json_int_t)c->summarized, "counts", by_tier)
			    : NULL;
	if (!o)
		a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	return o;
}
