/*
** record_in.c — a record in wire form with every field as it was stored
** (an a2m export's line, a record a federating router moves), and a
** keyed record's earlier revision as an export's revision line has it: id and
** created_at required, access count and times, revision, expiry
** (x-expiry), salience, vector and the rest kept as given. Shared by `a2m
** import` (server/import.c) and the import form of memory/remember
** (remember.c, docs/PROTOCOL.md).
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"
#include "stack/stack.h"
#include "util/clock.h"
#include "util/json_write.h"

/* Writes the reason into err; always -1. */
__attribute__((format(printf, 3, 4)))
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* An optional string member: NULL when absent or null; -1 when it is not a
** string, or holds a NUL (the store keeps text as C strings). */
static int opt_string(char *err, size_t errlen, const json_t *o, const char *name, char **out)
{
	const json_t *v = json_object_get(o, name);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return bad(err, errlen, "%s must be a string", name);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return bad(err, errlen, "%s must not contain NUL", name);
	if (!(*out = strdup(json_string_value(v))))
		return bad(err, errlen, "%s: out of memory", name);
	return 0;
}

/* An optional timestamp member (RFC 3339): 0 when absent or null. */
static int opt_time(char *err, size_t errlen, const json_t *o, const char *name, int64_t *out)
{
	const json_t *v = json_object_get(o, name);
	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || a2m_clock_parse(json_string_value(v), out) != 0)
		return bad(err, errlen, "%s must be an RFC 3339 timestamp", name);
	return 0;
}

/* An optional integer member, at least 0. */
static int opt_count(char *err, size_t errlen, const json_t *o, const char *name, int64_t *out)
{
	const json_t *v = json_object_get(o, name);
	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return bad(err, errlen, "%s must be an integer, 0 or more", name);
	*out = json_integer_value(v);
	return 0;
}

/* A record of an a2m export, every field as it was stored. */
int a2m_record_from_wire(const json_t *o, a2m_record *rec, char *err, size_t errlen)
{
	if (!json_is_object(o))
		return bad(err, errlen, "%s", "a record must be a JSON object");
	if (opt_string(err, errlen, o, "id", &rec->id) || opt_string(err, errlen, o, "content", &rec->content) ||
	    opt_string(err, errlen, o, "role", &rec->role) || opt_string(err, errlen, o, "group", &rec->group) ||
	    opt_string(err, errlen, o, "tier", &rec->tier) || opt_string(err, errlen, o, "owner", &rec->owner) ||
	    opt_string(err, errlen, o, "session", &rec->session) || opt_string(err, errlen, o, "key", &rec->key) ||
	    opt_string(err, errlen, o, "uri", &rec->uri) ||
	    opt_string(err, errlen, o, "media_type", &rec->media_type))
		return -1;
	if (!rec->id || !*rec->id)
		return bad(err, errlen, "%s", "id is required (a non-empty string)");
	if (!rec->content && !(rec->content = strdup("")))
		return bad(err, errlen, "%s", "out of memory");
	if (rec->key && !*rec->key)
		return bad(err, errlen, "%s", "key must not be empty");
	if (!json_object_get(o, "created_at"))
		return bad(err, errlen, "%s", "created_at is required");
	if (opt_time(err, errlen, o, "created_at", &rec->created_at) ||
	    opt_time(err, errlen, o, "accessed_at", &rec->accessed_at) ||
	    opt_count(err, errlen, o, "access_count", &rec->access_count) ||
	    opt_count(err, errlen, o, "revision", &rec->revision) ||
	    opt_time(err, errlen, o, "expires_at", &rec->expires_at))
		return -1;
	const json_t *meta = json_object_get(o, "metadata");
	if (meta && !json_is_null(meta)) {
		if (!json_is_object(meta))
			return bad(err, errlen, "%s", "metadata must be an object");
		/* Written as remember writes it, so it reads back the same. */
		if (!(rec->metadata = a2m_json_write(meta, NULL)))
			return bad(err, errlen, "%s", "out of memory");
	}
	rec->salience = NAN;  /* absent: the store's default */
	const json_t *sal = json_object_get(o, "salience");
	if (sal && !json_is_null(sal)) {
		if (!json_is_number(sal) || !isfinite(json_number_value(sal)))
			return bad(err, errlen, "%s", "salience must be a number");
		rec->salience = a2m_salience_clamp(json_number_value(sal));
	}
	const json_t *vec = json_object_get(o, "embedding");
	if (vec && !json_is_null(vec)) {
		size_t n = json_array_size(vec);
		if (!json_is_array(vec) || n == 0)
			return bad(err, errlen, "%s", "embedding must be a non-empty array of numbers");
		if (!(rec->embedding = malloc(n * sizeof *rec->embedding)))
			return bad(err, errlen, "%s", "out of memory");
		rec->dims = n;
		for (size_t k = 0; k < n; k++)
			if (!a2m_param_vector_element(json_array_get(vec, k), &rec->embedding[k]))
				return bad(err, errlen, "%s", "embedding holds an element that is not a "
					   "number within +-1e15");
	}
	return 0;
}

void a2m_record_wire_fit(a2m_record *rec, unsigned caps)
{
	if (!(caps & A2M_CAP_X_EXPIRY))
		rec->expires_at = 0;
}

int a2m_revision_from_wire(const json_t *o, a2m_revision *rev, char *err, size_t errlen)
{
	char *id, *content, *role, *owner;
	if (opt_string(err, errlen, o, "id", &id))
		return -1;
	rev->id = id;
	if (opt_string(err, errlen, o, "content", &content))
		return -1;
	rev->content = content;
	if (opt_string(err, errlen, o, "role", &role))
		return -1;
	rev->role = role;
	if (opt_string(err, errlen, o, "owner", &owner))
		return -1;
	rev->owner = owner;
	if (!rev->id || !*rev->id)
		return bad(err, errlen, "%s", "a revision's id is required (its record's)");
	if (!rev->content)
		return bad(err, errlen, "%s", "a revision's content is required");
	if (!json_is_string(json_object_get(o, "superseded_at")))
		return bad(err, errlen, "%s", "a revision's superseded_at is required");
	if (opt_count(err, errlen, o, "revision", &rev->revision) ||
	    opt_time(err, errlen, o, "created_at", &rev->created_at) ||
	    opt_time(err, errlen, o, "superseded_at", &rev->superseded_at))
		return -1;
	const json_t *meta = json_object_get(o, "metadata");
	if (meta && !json_is_null(meta)) {
		if (!json_is_object(meta))
			return bad(err, errlen, "%s", "metadata must be an object");
		if (!(rev->metadata = a2m_json_write(meta, NULL)))
			return bad(err, errlen, "%s", "out of memory");
	}
	return 0;
}

void a2m_revision_wire_free(a2m_revision *rev)
{
	/* Allocated by a2m_revision_from_wire; const for the store's sake. */
	free((char *)rev->id);
	free((char *)rev->content);
	free((char *)rev->role);
	free((char *)rev->owner);
	free((char *)rev->metadata);
	memset(rev, 0, sizeof *rev);
}
