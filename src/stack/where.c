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
#include "util/json_read.h"

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
