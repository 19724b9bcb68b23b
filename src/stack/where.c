/*
** where.c — evaluating `where` against one record (see where.h).
**
** Equality is JSON equality with one concession to how clients produce
** numbers: an integer and a real are equal when their values are (1 == 1.0),
** since most languages do not keep the two apart.
*/
#include <string.h>

#include "stack/stack.h"
#include "stack/where.h"
#include "util/clock.h"

int a2m_where_validate(const json_t *where, a2m_error *err)
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
			return a2m_error_set(err, A2M_INVALID_PARAMS,
				"where.%s: must be a string, number, boolean, null or an array of them", k);
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

/* True when actual equals want, or any element of want when it is an array. */
static int value_matches(const json_t *actual, const json_t *want)
{
	if (json_is_array(want)) {
		for (size_t i = 0; i < json_array_size(want); i++)
			if (scalar_equal(actual, json_array_get(want, i)))
				return 1;
		return 0;
	}
	return scalar_equal(actual, want);
}

/* The record field named k as a new JSON value (json null when absent), or
** NULL when k is not a record field for this server. */
static json_t *record_field(const a2m_record *rec, const char *k, unsigned fields)
{
	char ts[A2M_TIMESTAMP_LEN];
#define STR(f) ((f) ? json_string(f) : json_null())
	if (strcmp(k, "id") == 0)
		return STR(rec->id);
	if (strcmp(k, "content") == 0)
		return STR(rec->content);
	if (strcmp(k, "role") == 0)
		return STR(rec->role);
	if (strcmp(k, "group") == 0)
		return STR(rec->group);
	if (strcmp(k, "created_at") == 0)
		return json_string(a2m_clock_format(rec->created_at, ts));
	if ((fields & A2M_FIELD_TIER) && strcmp(k, "tier") == 0)
		return STR(rec->tier);
	if (fields & A2M_FIELD_SALIENCE) {
		if (strcmp(k, "salience") == 0)
			return json_real(a2m_salience_clamp(rec->salience));
		if (strcmp(k, "access_count") == 0)
			return json_integer(rec->access_count);
		if (strcmp(k, "accessed_at") == 0)
			return rec->accessed_at ? json_string(a2m_clock_format(rec->accessed_at, ts))
						: json_null();
	}
	if ((fields & A2M_FIELD_OWNER) && strcmp(k, "owner") == 0)
		return STR(rec->owner);
	if ((fields & A2M_FIELD_SESSION) && strcmp(k, "session") == 0)
		return STR(rec->session);
	if (fields & A2M_FIELD_KEY) {
		if (strcmp(k, "key") == 0)
			return STR(rec->key);
		if (strcmp(k, "revision") == 0)
			return json_integer(rec->revision);
	}
	if (fields & A2M_FIELD_EXTERNAL) {
		if (strcmp(k, "uri") == 0)
			return STR(rec->uri);
		if (strcmp(k, "media_type") == 0)
			return STR(rec->media_type);
	}
#undef STR
	return NULL;
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
		json_t *actual = record_field(rec, k, fields);
		if (actual) {
			ok = value_matches(actual, want);
			json_decref(actual);
		} else {
			if (!meta_loaded) {
				meta_loaded = 1;
				if (rec->metadata)
					meta = json_loads(rec->metadata, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
			}
			json_t *mv = meta ? json_object_get(meta, k) : NULL;
			/* A missing metadata key only equals an explicit null. */
			json_t *nullv = json_null();
			ok = value_matches(mv ? mv : nullv, want);
			json_decref(nullv);
		}
		if (!ok)
			break;
	}
	json_decref(meta);
	return ok;
}
