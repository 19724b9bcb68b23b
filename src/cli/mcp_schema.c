/*
** mcp_schema.c — the subset of JSON Schema validation the bridge needs (see
** mcp_schema.h).
**
** Invalid arguments are answered as a tool result with isError (MCP: input
** validation is a tool execution error, so the model can read it and try
** again), which is why every message here is written for a model to act on.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/mcp_schema.h"

int mcp_schema_is_integer(const json_t *v)
{
	if (json_is_integer(v))
		return 1;
	if (!json_is_real(v))
		return 0;
	double d = json_real_value(v);
	/* Within int64 so it converts exactly. */
	return isfinite(d) && floor(d) == d && fabs(d) < 9.2e18;
}

/* Whether v is of the JSON Schema type named t. */
static int is_type(const json_t *v, const char *t)
{
	if (strcmp(t, "string") == 0)
		return json_is_string(v);
	if (strcmp(t, "integer") == 0)
		return mcp_schema_is_integer(v);
	if (strcmp(t, "number") == 0)
		return json_is_number(v);
	if (strcmp(t, "boolean") == 0)
		return json_is_boolean(v);
	if (strcmp(t, "object") == 0)
		return json_is_object(v);
	if (strcmp(t, "array") == 0)
		return json_is_array(v);
	if (strcmp(t, "null") == 0)
		return json_is_null(v);
	return 1; /* a type we do not emit: do not refuse on it */
}

static const char *type_name_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:  return "an object";
	case JSON_ARRAY:   return "an array";
	case JSON_STRING:  return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL:    return "a number";
	case JSON_TRUE:
	case JSON_FALSE:   return "a boolean";
	default:           return "null";
	}
}

static const char *article(const char *t)
{
	return (t[0] == 'a' || t[0] == 'i' || t[0] == 'o') ? "an" : "a";
}

static int check_type(const json_t *schema, const json_t *v, const char *name, char *why,
		      size_t n)
{
	const json_t *type = json_object_get(schema, "type");
	if (json_is_string(type)) {
		const char *t = json_string_value(type);
		if (is_type(v, t))
			return 0;
		snprintf(why, n, "'%s' must be %s %s, not %s", name, article(t), t, type_name_of(v));
		return -1;
	}
	if (json_is_array(type)) {
		char list[128] = "";
		for (size_t i = 0; i < json_array_size(type); i++) {
			const char *t = json_string_value(json_array_get(type, i));
			if (!t)
				continue;
			if (is_type(v, t))
				return 0;
			size_t used = strlen(list);
			snprintf(list + used, sizeof list - used, "%s%s", used ? " or " : "", t);
		}
		snprintf(why, n, "'%s' must be %s, not %s", name, list, type_name_of(v));
		return -1;
	}
	return 0;
}

static int check_enum(const json_t *schema, const json_t *v, const char *name, char *why,
		      size_t n)
{
	const json_t *values = json_object_get(schema, "enum");
	if (!json_is_array(values))
		return 0;
	for (size_t i = 0; i < json_array_size(values); i++)
		if (json_equal(json_array_get(values, i), (json_t *)v))
			return 0;
	int used = snprintf(why, n, "'%s' must be one of:", name);
	for (size_t i = 0; i < json_array_size(values) && used > 0 && (size_t)used < n; i++) {
		const char *s = json_string_value(json_array_get(values, i));
		used += snprintf(why + used, n - (size_t)used, "%s %s", i ? "," : "", s ? s : "?");
	}
	return -1;
}

static int check_bounds(const json_t *schema, const json_t *v, const char *name, char *why,
			size_t n)
{
	if (json_is_number(v)) {
		const json_t *min = json_object_get(schema, "minimum");
		const json_t *max = json_object_get(schema, "maximum");
		double d = json_number_value(v);
		if (json_is_number(min) && d < json_number_value(min)) {
			snprintf(why, n, "'%s' must be >= %g", name, json_number_value(min));
			return -1;
		}
		if (json_is_number(max) && d > json_number_value(max)) {
			snprintf(why, n, "'%s' must be <= %g", name, json_number_value(max));
			return -1;
		}
	}
	const json_t *min_len = json_object_get(schema, "minLength");
	if (json_is_string(v) && json_is_integer(min_len) &&
	    (json_int_t)json_string_length(v) < json_integer_value(min_len)) {
		snprintf(why, n, "'%s' must not be empty", name);
		return -1;
	}
	const json_t *min_items = json_object_get(schema, "minItems");
	if (json_is_array(v) && json_is_integer(min_items) &&
	    (json_int_t)json_array_size(v) < json_integer_value(min_items)) {
		snprintf(why, n, "'%s' must hold at least %lld item(s)", name,
			 (long long)json_integer_value(min_items));
		return -1;
	}
	return 0;
}

int mcp_schema_check(const json_t *schema, const json_t *value, const char *name, char *why,
		     size_t why_size)
{
	if (!json_is_object(schema))
		return 0;
	if (check_type(schema, value, name, why, why_size) ||
	    check_enum(schema, value, name, why, why_size) ||
	    check_bounds(schema, value, name, why, why_size))
		return -1;
	if (json_is_object(value)) {
		const json_t *required = json_object_get(schema, "required");
		for (size_t i = 0; i < json_array_size(required); i++) {
			const char *r = json_string_value(json_array_get(required, i));
			if (r && !json_object_get(value, r)) {
				snprintf(why, why_size, "'%s' is required", r);
				return -1;
			}
		}
		const json_t *props = json_object_get(schema, "properties");
		const char *key;
		json_t *v;
		json_object_foreach((json_t *)value, key, v) {
			const json_t *sub = json_object_get(props, key);
			/* Unknown arguments are ignored, as A2M ignores unknown
			** parameters (DECISIONS 012). */
			if (sub && mcp_schema_check(sub, v, key, why, why_size) != 0)
				return -1;
		}
	}
	if (json_is_array(value)) {
		const json_t *items = json_object_get(schema, "items");
		char item_name[96];
		for (size_t i = 0; items && i < json_array_size(value); i++) {
			snprintf(item_name, sizeof item_name, "%s[%zu]", name, i);
			if (mcp_schema_check(items, json_array_get(value, i), item_name, why,
					     why_size) != 0)
				return -1;
		}
	}
	return 0;
}
