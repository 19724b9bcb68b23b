/*
** where.c — evaluating `where` against one record (see where.h).
**
** Equality is JSON equality with one concession to how clients produce
** numbers: an integer and a real are equal when their values are (1 == 1.0),
** since most languages do not keep the two apart.
**
** The operators of x-where (docs/PROTOCOL.md, Extensions) are evaluated on
** the same values: a record field (json null when absent) or else the
** metadata key. A range compares numbers with numbers and RFC 3339 times
** with times (created_at, accessed_at, expires_at, or a metadata string
** that is one); a value of any other type is outside every range. Negation
** ($ne, $nin, $not) holds for a missing value, as "not equal to 5" does for
** a record that has no such number.
*/
#include <string.h>

#include "stack/stack.h"
#include "stack/where.h"
#include "util/clock.h"
#include "util/json_read.h"

const char *const a2m_where_operators[] = {
	"$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists", "$prefix", "$not",
	NULL
};

enum { OP_EQ, OP_NE, OP_IN, OP_NIN, OP_GT, OP_GTE, OP_LT, OP_LTE, OP_EXISTS, OP_PREFIX,
       OP_NOT, OP_UNKNOWN };

static int op_of(const char *name)
{
	for (int i = 0; a2m_where_operators[i]; i++)
		if (strcmp(name, a2m_where_operators[i]) == 0)
			return i;
	return OP_UNKNOWN;
}

static int is_scalar(const json_t *v)
{
	return !json_is_object(v) && !json_is_array(v);
}

/* A range's operand: a number, or a string that is an RFC 3339 time. */
static int range_operand(const json_t *v, int64_t *ms)
{
	if (json_is_number(v))
		return 1;
	return json_is_string(v) && a2m_clock_parse(json_string_value(v), ms) == 0;
}

/* Checks one operator object (the value of where.k, or of a $not in it). */
static int validate_ops(const char *k, const json_t *ops, a2m_error *err)
{
	const char *name;
	json_t *v;
	int64_t ms;
	if (json_object_size(ops) == 0)
		return a2m_error_set(err, A2M_INVALID_PARAMS,
				     "where.%s: an operator object needs at least one operator", k);
	json_object_foreach((json_t *)ops, name, v) {
		switch (op_of(name)) {
		case OP_EQ:
		case OP_NE:
			if (!is_scalar(v))
				return a2m_error_set(err, A2M_INVALID_PARAMS,
					"where.%s.%s takes a string, number, boolean or null", k, name);
			break;
		case OP_IN:
		case OP_NIN:
			if (!json_is_array(v))
				return a2m_error_set(err, A2M_INVALID_PARAMS,
					"where.%s.%s takes an array of scalars", k, name);
			for (size_t i = 0; i < json_array_size(v); i++)
				if (!is_scalar(json_array_get(v, i)))
					return a2m_error_set(err, A2M_INVALID_PARAMS,
						"where.%s.%s takes an array of scalars", k, name);
			break;
		case OP_GT:
		case OP_GTE:
		case OP_LT:
		case OP_LTE:
			if (!range_operand(v, &ms))
				return a2m_error_set(err, A2M_INVALID_PARAMS,
					"where.%s.%s takes a number or an RFC 3339 time", k, name);
			break;
		case OP_EXISTS:
			if (!json_is_boolean(v))
				return a2m_error_set(err, A2M_INVALID_PARAMS,
					"where.%s.%s takes true or false", k, name);
			break;
		case OP_PREFIX:
			if (!json_is_string(v))
				return a2m_error_set(err, A2M_INVALID_PARAMS,
					"where.%s.%s takes a string", k, name);
			break;
		case OP_NOT:
			if (!json_is_object(v))
				return a2m_error_set(err, A2M_INVALID_PARAMS,
					"where.%s.%s takes an object of operators", k, name);
			if (validate_ops(k, v, err))
				return err->code;
			break;
		default:
			/* Never read as an equality (issue 23): refused, by name. */
			a2m_error_set(err, A2M_INVALID_PARAMS,
				      "where.%s: unknown operator '%s' (known: $eq, $ne, $in, $nin, "
				      "$gt, $gte, $lt, $lte, $exists, $prefix, $not)", k, name);
			return a2m_error_data(err, json_pack("{ss ss}", "field", k,
							     "operator", name));
		}
	}
	return 0;
}

int a2m_where_validate(const json_t *where, int operators, a2m_error *err)
{
	if (!json_is_object(where))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "where must be an object");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)where, k, v) {
		if (json_is_array(v)) {
			for (size_t i = 0; i < json_array_size(v); i++) {
				json_t *item = json_array_get(v, i);
				if (json_is_object(item) || json_is_array(item))
					return a2m_error_set(err, A2M_INVALID_PARAMS,
						"where.%s: an any-of list holds only strings, numbers, booleans or null", k);
			}
		} else if (json_is_object(v)) {
			if (!operators) {
				a2m_error_set(err, A2M_INVALID_PARAMS,
					"where.%s: must be a string, number, boolean, null or an array of them "
					"(operators need the x-where capability)", k);
				return a2m_error_data(err, json_pack("{ss}", "capability", "x-where"));
			}
			if (validate_ops(k, v, err))
				return err->code;
		}
	}
	return 0;
}

/* Scalar JSON equality, numbers compared by value. */
static int scalar_equal(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b)) {
		if (json_is_integer(a) && json_is_integer(b))
			return json_integer_value(a) == json_integer_value(b);
		return json_number_value(a) == json_number_value(b);
	}
	return json_equal((json_t *)a, (json_t *)b);
}

static int any_equal(const json_t *actual, const json_t *list)
{
	for (size_t i = 0; i < json_array_size(list); i++)
		if (scalar_equal(actual, json_array_get(list, i)))
			return 1;
	return 0;
}

/*
** actual against a range operand: -1, 0 or 1 as actual is below, at or
** above it; 2 when they cannot be compared (another type, a string that is
** no time).
*/
static int compare(const json_t *actual, const json_t *operand)
{
	if (json_is_number(operand)) {
		if (!json_is_number(actual))
			return 2;
		if (json_is_integer(actual) && json_is_integer(operand)) {
			json_int_t a = json_integer_value(actual), b = json_integer_value(operand);
			return (a > b) - (a < b);
		}
		double a = json_number_value(actual), b = json_number_value(operand);
		return (a > b) - (a < b);
	}
	int64_t a, b;
	if (!json_is_string(actual) || a2m_clock_parse(json_string_value(actual), &a) != 0 ||
	    a2m_clock_parse(json_string_value(operand), &b) != 0)
		return 2;
	return (a > b) - (a < b);
}

/* Whether actual (json null when absent) passes every operator of ops. */
static int ops_match(const json_t *actual, const json_t *ops)
{
	const char *name;
	json_t *v;
	json_object_foreach((json_t *)ops, name, v) {
		int ok, c;
		switch (op_of(name)) {
		case OP_EQ:     ok = scalar_equal(actual, v); break;
		case OP_NE:     ok = !scalar_equal(actual, v); break;
		case OP_IN:     ok = any_equal(actual, v); break;
		case OP_NIN:    ok = !any_equal(actual, v); break;
		case OP_GT:     c = compare(actual, v); ok = c == 1; break;
		case OP_GTE:    c = compare(actual, v); ok = c == 1 || c == 0; break;
		case OP_LT:     c = compare(actual, v); ok = c == -1; break;
		case OP_LTE:    c = compare(actual, v); ok = c == -1 || c == 0; break;
		case OP_EXISTS: ok = !json_is_null(actual) == json_is_true(v); break;
		case OP_PREFIX:
			ok = json_is_string(actual) &&
			     json_string_length(actual) >= json_string_length(v) &&
			     memcmp(json_string_value(actual), json_string_value(v),
				    json_string_length(v)) == 0;
			break;
		case OP_NOT:    ok = !ops_match(actual, v); break;
		default:        ok = 0; break;  /* validated away; never a match */
		}
		if (!ok)
			return 0;
	}
	return 1;
}

/* True when actual passes want: equal, any of, or every operator. */
static int value_matches(const json_t *actual, const json_t *want)
{
	if (json_is_array(want))
		return any_equal(actual, want);
	if (json_is_object(want))
		return ops_match(actual, want);
	return scalar_equal(actual, want);
}

/*
** The record field named k as a new JSON value (json null when absent) in
** *out: returns 1, *out NULL when memory ran out; 0 when k is not a record
** field for this server.
*/
static int record_field(const a2m_record *rec, const char *k, unsigned fields, json_t **out)
{
	char ts[A2M_TIMESTAMP_LEN];
#define STR(f) ((f) ? json_string(f) : json_null())
#define FIELD(name, value) do { \
	if (strcmp(k, name) == 0) { \
		*out = (value); \
		return 1; \
	} } while (0)
	FIELD("id", STR(rec->id));
	FIELD("content", STR(rec->content));
	FIELD("role", STR(rec->role));
	FIELD("group", STR(rec->group));
	FIELD("created_at", json_string(a2m_clock_format(rec->created_at, ts)));
	if (fields & A2M_FIELD_TIER)
		FIELD("tier", STR(rec->tier));
	if (fields & A2M_FIELD_SALIENCE) {
		FIELD("salience", json_real(a2m_salience_clamp(rec->salience)));
		FIELD("access_count", json_integer(rec->access_count));
		FIELD("accessed_at", rec->accessed_at
				     ? json_string(a2m_clock_format(rec->accessed_at, ts)) : json_null());
	}
	if (fields & A2M_FIELD_OWNER)
		FIELD("owner", STR(rec->owner));
	if (fields & A2M_FIELD_SESSION)
		FIELD("session", STR(rec->session));
	if (fields & A2M_FIELD_KEY) {
		FIELD("key", STR(rec->key));
		FIELD("revision", json_integer(rec->revision));
	}
	if (fields & A2M_FIELD_EXTERNAL) {
		FIELD("uri", STR(rec->uri));
		FIELD("media_type", STR(rec->media_type));
	}
	if (fields & A2M_FIELD_EXPIRY)
		FIELD("expires_at", rec->expires_at
				    ? json_string(a2m_clock_format(rec->expires_at, ts)) : json_null());
#undef FIELD
#undef STR
	return 0;
}

/*
** rec's metadata as JSON in *out (NULL when it has none). Returns 0, or -1
** when memory ran out: a test of metadata must not read as "no such key"
** then (util/json_read.h says why jansson alone cannot tell).
*/
static int record_metadata(const a2m_record *rec, json_t **out)
{
	int oom = 0;
	*out = NULL;
	if (!rec->metadata)
		return 0;
	*out = a2m_json_read_ex(rec->metadata, strlen(rec->metadata), 1, &oom);
	if (!*out && !oom)
		*out = json_loads(rec->metadata, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	return oom ? -1 : 0;
}

int a2m_where_matches(const json_t *where, const a2m_record *rec, unsigned fields)
{
	if (!where || json_object_size(where) == 0)
		return 1;
	json_t *meta = NULL;
	int meta_loaded = 0, ok = 1;
	const char *k;
	json_t *want;
	json_object_foreach((json_t *)where, k, want) {
		json_t *actual = NULL;
		if (record_field(rec, k, fields, &actual)) {
			ok = actual ? value_matches(actual, want) : -1;
			json_decref(actual);
		} else {
			if (!meta_loaded) {
				meta_loaded = 1;
				if (record_metadata(rec, &meta) != 0) {
					ok = -1;
					break;
				}
			}
			json_t *mv = meta ? json_object_get(meta, k) : NULL;
			/* A missing metadata key only equals an explicit null. */
			json_t *nullv = json_null();
			ok = value_matches(mv ? mv : nullv, want);
			json_decref(nullv);
		}
		if (ok != 1)
			break;
	}
	json_decref(meta);
	return ok;
}

/* Narrows [*min, *max] (0: open) by ops, an operator object on created_at. */
static void narrow_created(const json_t *ops, int64_t *min, int64_t *max)
{
	const char *name;
	json_t *v;
	json_object_foreach((json_t *)ops, name, v) {
		int64_t ms;
		int op = op_of(name);
		if (!json_is_string(v) || a2m_clock_parse(json_string_value(v), &ms) != 0)
			continue;
		/* Times are whole milliseconds: > t is >= t + 1. Only bounds
		** inside the representable range narrow; 0 stays "open". */
		int64_t lo = op == OP_GT ? ms + 1 : (op == OP_GTE || op == OP_EQ) ? ms : 0;
		int64_t hi = op == OP_LT ? ms - 1 : (op == OP_LTE || op == OP_EQ) ? ms : 0;
		if (lo > 0 && (!*min || lo > *min))
			*min = lo;
		if (hi > 0 && (!*max || hi < *max))
			*max = hi;
	}
}

void a2m_where_created_range(const json_t *where, int64_t *min, int64_t *max)
{
	*min = *max = 0;
	const json_t *v = where ? json_object_get(where, "created_at") : NULL;
	if (json_is_object(v))
		narrow_created(v, min, max);
}
