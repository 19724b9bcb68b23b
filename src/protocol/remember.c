/*
** remember.c — memory/remember (spec §4.2).
**
** The whole batch is validated before anything is written, and then written
** in one transaction by the stack, so a batch is atomic: every id comes back
** in input order, or an error comes back and nothing was stored.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"
#include "util/clock.h"
#include "util/json_write.h"
#include "util/text.h"

/*
** The fields of a wire record this server reads, found with one walk over
** the record's keys: asking the object for each of the sixteen names cost a
** hash of each name, most of them absent (2.3 k instructions a record of a
** batch, callgrind), where the walk costs a few comparisons per key given.
*/
enum {
	F_CONTENT, F_URI, F_TIER, F_ID, F_ROLE, F_GROUP, F_METADATA, F_SALIENCE, F_OWNER,
	F_SESSION, F_KEY, F_EMBEDDING, F_MEDIA_TYPE, F_EXPIRES_AT, F_TTL_SECONDS, F_COUNT
};
static const char *const field_names[F_COUNT] = {
	"content", "uri", "tier", "id", "role", "group", "metadata", "salience", "owner",
	"session", "key", "embedding", "media_type", "expires_at", "ttl_seconds"
};

/* The longest ttl_seconds a write may ask for (about 317 years): now + it
** stays far from overflowing. */
#define TTL_SECONDS_MAX 1e10

/*
** x-expiry: records[i].expires_at (an RFC 3339 time) or ttl_seconds (a
** number above 0, from now), not both, into rec->expires_at; neither (or
** null) leaves it 0, for the tier's ttl. A time at or before the epoch is
** kept as its first millisecond, long past.
*/
static int take_expiry(json_t *const f[F_COUNT], size_t i, a2m_record *rec, a2m_error *err)
{
	const json_t *at = f[F_EXPIRES_AT], *ttl = f[F_TTL_SECONDS];
	int has_at = at && !json_is_null(at), has_ttl = ttl && !json_is_null(ttl);
	if (has_at && has_ttl)
		return a2m_error_set(err, A2M_INVALID_PARAMS,
				     "records[%zu]: give expires_at or ttl_seconds, not both", i);
	if (has_at) {
		int64_t ms;
		if (!json_is_string(at) || a2m_clock_parse(json_string_value(at), &ms) != 0)
			return a2m_error_set(err, A2M_INVALID_PARAMS,
					     "records[%zu].expires_at must be an RFC 3339 UTC time "
					     "(\"2026-07-28T10:15:30.123Z\")", i);
		rec->expires_at = ms > 0 ? ms : 1;
	} else if (has_ttl) {
		double v = json_is_number(ttl) ? json_number_value(ttl) : -1;
		if (!(v > 0 && v <= TTL_SECONDS_MAX))
			return a2m_error_set(err, A2M_INVALID_PARAMS,
					     "records[%zu].ttl_seconds must be a number above 0, "
					     "at most %g", i, TTL_SECONDS_MAX);
		int64_t ms = (int64_t)(v * 1000.0 + 0.5);
		rec->expires_at = a2m_clock_now_ms() + (ms > 0 ? ms : 1);
	}
	return 0;
}

/* Points f[] at the values of in's known fields; NULL for those absent. */
static void find_fields(const json_t *in, json_t *f[F_COUNT])
{
	const char *key;
	json_t *v;
	memset(f, 0, F_COUNT * sizeof *f);
	json_object_foreach((json_t *)in, key, v) {
		for (int k = 0; k < F_COUNT; k++)
			if (strcmp(key, field_names[k]) == 0) {
				f[k] = v;
				break;
			}
	}
}

/* Copies the optional string field k of f[] into *dst (NULL when absent or
** null). Fails with INVALID_PARAMS naming records[i].field, or
** QUOTA_EXCEEDED when it is longer than max_string_bytes (content has its
** own limit, checked before: pass NULL). */
static int take_string(json_t *const f[F_COUNT], int k, size_t i, const a2m_limits *l,
		       char **dst, a2m_error *err)
{
	const json_t *v = f[k];
	const char *field = field_names[k];
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "records[%zu].%s must be a string",
				     i, field);
	if (l && (int64_t)json_string_length(v) > l->max_string_bytes)
		return a2m_limit_exceeded(err, "max_string_bytes", l->max_string_bytes,
					  "records[%zu].%s has %zu bytes; max_string_bytes is %lld",
					  i, field, json_string_length(v),
					  (long long)l->max_string_bytes);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return a2m_error_set(err, A2M_INVALID_PARAMS,
				     "records[%zu].%s must not contain NUL", i, field);
	*dst = strdup(json_string_value(v));
	if (!*dst)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	return 0;
}

/* Reads records[i].embedding: a non-empty array of numbers, kept verbatim. */
static int take_embedding(const json_t *v, size_t i, const a2m_limits *l, a2m_record *rec,
			  a2m_error *err)
{
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) == 0)
		return a2m_error_set(err, A2M_INVALID_PARAMS,
				     "records[%zu].embedding must be a non-empty array of numbers", i);
	size_t n = json_array_size(v);
	if ((int64_t)n > l->max_dimensions)
		return a2m_limit_exceeded(err, "max_dimensions", l->max_dimensions,
					  "records[%zu].embedding has %zu elements; max_dimensions is %lld",
					  i, n, (long long)l->max_dimensions);
	rec->embedding = malloc(n * sizeof *rec->embedding);
	if (!rec->embedding)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	rec->dims = n;
	for (size_t k = 0; k < n; k++) {
		if (!a2m_param_vector_element(json_array_get(v, k), &rec->embedding[k]))
			return a2m_error_set(err, A2M_INVALID_PARAMS,
					     "records[%zu].embedding[%zu] must be a number from %g to %g",
					     i, k, -A2M_VECTOR_ELEMENT_MAX, A2M_VECTOR_ELEMENT_MAX);
	}
	return 0;
}

/* Builds one record from its wire form, enforcing the per-record rules.
** Fields of capabilities this server does not declare are ignored (§4.2),
** except tier. */
static int build_record(a2m_call *call, const json_t *in, size_t i, a2m_record *rec,
			const char *default_owner, const char *default_session, a2m_error *err)
{
	unsigned caps = call->caps;
	int rc;
	json_t *f[F_COUNT];
	if (!json_is_object(in))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "records[%zu] must be an object", i);
	find_fields(in, f);
	json_t *content = f[F_CONTENT];
	json_t *uri = f[F_URI];
	/* An external record may point at something with nothing to index (§3.8). */
	int pointer_only = (caps & A2M_CAP_EXTERNAL) && json_is_string(uri) &&
			   (!content || json_is_null(content));
	if (!content && !pointer_only)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "records[%zu].content is required", i);
	if (!pointer_only && !json_is_string(content))
		return a2m_error_set(err, A2M_INVALID_PARAMS,
				     "records[%zu].content must be a string", i);
	/* A text no longer in bytes than the limit is within it in characters:
	** only a longer one is counted. */
	const a2m_limits *l = &call->srv->limits;
	size_t bytes = pointer_only ? 0 : json_string_length(content);
	if ((int64_t)bytes > l->max_content_length) {
		size_t chars = a2m_utf8_length(json_string_value(content), bytes);
		if ((int64_t)chars > l->max_content_length)
			return a2m_limit_exceeded(err, "max_content_length", l->max_content_length,
						  "records[%zu].content has %zu characters; "
						  "max_content_length is %lld",
						  i, chars, (long long)l->max_content_length);
	}
	/* Placement is meaning: dropping it silently would be a correctness bug
	** (spec §4.2), so `tier` without tiers is refused, unlike other fields. */
	json_t *tier = f[F_TIER];
	if (tier && !json_is_null(tier) && !(caps & A2M_CAP_TIERS))
		return a2m_error_capability(err, A2M_CAP_TIERS, "records[].tier");
	json_t *id = f[F_ID];
	if (id && !json_is_null(id) && (!json_is_string(id) || json_string_length(id) == 0))
		return a2m_error_set(err, A2M_INVALID_PARAMS,
				     "records[%zu].id must be a non-empty string", i);
	if (pointer_only)
		rec->content = strdup("");
	else if ((rc = take_string(f, F_CONTENT, i, NULL, &rec->content, err)))
		return rc;
	if (!rec->content)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	if ((rc = take_string(f, F_ID, i, l, &rec->id, err)) ||
	    (rc = take_string(f, F_ROLE, i, l, &rec->role, err)) ||
	    (rc = take_string(f, F_GROUP, i, l, &rec->group, err)))
		return rc;
	json_t *meta = f[F_METADATA];
	if (meta && !json_is_null(meta)) {
		if (!json_is_object(meta))
			return a2m_error_set(err, A2M_INVALID_PARAMS,
					     "records[%zu].metadata must be an object", i);
		size_t meta_len;
		rec->metadata = a2m_json_write(meta, &meta_len);
		if (!rec->metadata)
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		if ((int64_t)meta_len > l->max_metadata_bytes)
			return a2m_limit_exceeded(err, "max_metadata_bytes", l->max_metadata_bytes,
						  "records[%zu].metadata is %zu bytes of JSON; "
						  "max_metadata_bytes is %lld",
						  i, meta_len, (long long)l->max_metadata_bytes);
	}
	rec->salience = NAN; /* not given: the stack applies the default */
	if ((caps & A2M_CAP_TIERS) && (rc = take_string(f, F_TIER, i, l, &rec->tier, err)))
		return rc;
	if (caps & A2M_CAP_SALIENCE) {
		if (f[F_SALIENCE] && !json_is_null(f[F_SALIENCE])) {
			char name[48];
			snprintf(name, sizeof name, "records[%zu].salience", i);
			if ((rc = a2m_param_salience(f[F_SALIENCE], name, &rec->salience, err)))
				return rc;
		}
	}
	if (caps & A2M_CAP_SCOPES) {
		if ((rc = take_string(f, F_OWNER, i, l, &rec->owner, err)))
			return rc;
		if (call->network) {
			/* The authenticated principal writes as itself (spec §6). */
			const char *claim = rec->owner;
			if ((rc = a2m_param_owner_is_principal(call, &claim, err)))
				return rc;
			free(rec->owner);
			if (!(rec->owner = strdup(claim)))
				return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		}
		if (!rec->owner && !f[F_OWNER] && default_owner &&
		    !(rec->owner = strdup(default_owner)))
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	if (caps & A2M_CAP_SESSIONS) {
		if ((rc = take_string(f, F_SESSION, i, l, &rec->session, err)))
			return rc;
		if (!rec->session && !f[F_SESSION] && default_session &&
		    !(rec->session = strdup(default_session)))
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	if (caps & A2M_CAP_KEYS) {
		if ((rc = take_string(f, F_KEY, i, l, &rec->key, err)))
			return rc;
		if (rec->key && !*rec->key)
			return a2m_error_set(err, A2M_INVALID_PARAMS,
					     "records[%zu].key must not be empty", i);
	}
	if ((caps & A2M_CAP_EMBEDDINGS) && (rc = take_embedding(f[F_EMBEDDING], i, l, rec, err)))
		return rc;
	if ((caps & A2M_CAP_EXTERNAL) &&
	    ((rc = take_string(f, F_URI, i, l, &rec->uri, err)) ||
	     (rc = take_string(f, F_MEDIA_TYPE, i, l, &rec->media_type, err))))
		return rc;
	if ((caps & A2M_CAP_X_EXPIRY) && (rc = take_expiry(f, i, rec, err)))
		return rc;
	return 0;
}

/*
** The import form (`"import": true`, our extension x-import;
** docs/PROTOCOL.md): each record carries every field as it
** was stored — id, created_at, access count and times, revision, salience,
** vector — and is written as `a2m import` writes it (a2m_stack_import): an
** existing id is left as it is, a key held by another id is not taken. This
** is how a federating router moves a record between servers whole
** (docs/FEDERATION.md). Over a network the principal may import only its
** own records (spec §6).
*/
static int remember_import(a2m_call *call, json_t *in, size_t n, json_t **result,
			   a2m_error *err)
{
	a2m_record **recs = calloc(n, sizeof *recs);
	unsigned char *outcome = calloc(n, 1);
	int rc = 0;
	if (!recs || !outcome) {
		free(recs);
		free(outcome);
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	const a2m_limits *l = &call->srv->limits;
	for (size_t i = 0; i < n && !rc; i++) {
		char why[256];
		const json_t *o = json_array_get(in, i);
		if (!(recs[i] = a2m_record_new()))
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		else if (a2m_record_from_wire(o, recs[i], why, sizeof why) != 0)
			rc = a2m_error_set(err, A2M_INVALID_PARAMS, "records[%zu]: %s", i, why);
		else if ((int64_t)strlen(recs[i]->content) > l->max_content_length)
			rc = a2m_limit_exceeded(err, "max_content_length", l->max_content_length,
						"records[%zu].content is longer than "
						"max_content_length (%lld)",
						i, (long long)l->max_content_length);
		else if (recs[i]->tier && !(call->caps & A2M_CAP_TIERS))
			rc = a2m_error_capability(err, A2M_CAP_TIERS, "records[].tier");
		else if (call->network && (call->caps & A2M_CAP_SCOPES)) {
			const char *claim = recs[i]->owner;
			rc = a2m_param_owner_is_principal(call, &claim, err);
			const char *own = recs[i]->owner;
			int same = claim && own ? strcmp(claim, own) == 0 : claim == own;
			if (!rc && !same)
				rc = a2m_error_set(err, A2M_SCOPE_DENIED, "records[%zu].owner is "
						   "not the caller's", i);
		}
	}
	/* An expiry where x-expiry is not declared is ignored, not refused. */
	for (size_t i = 0; i < n && !rc; i++)
		a2m_record_wire_fit(recs[i], call->caps);
	if (!rc)
		rc = a2m_stack_import(call->srv->stack, recs, n, outcome, NULL, 0, err);
	if (!rc) {
		json_t *ids = json_array(), *outs = json_array();
		for (size_t i = 0; ids && outs && i < n; i++) {
			const char *o = outcome[i] == A2M_IMPORTED	  ? "imported"
					: outcome[i] == A2M_IMPORT_SKIPPED ? "exists"
									   : "key_held";
			if (json_array_append_new(ids, json_string(recs[i]->id)) ||
			    json_array_append_new(outs, json_string(o))) {
				json_decref(ids);
				ids = NULL;
			}
		}
		*result = ids && outs ? json_pack("{soso}", "ids", ids, "outcomes", outs) : NULL;
		if (!*result) {
			json_decref(ids);
			json_decref(outs);
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		}
	}
	for (size_t i = 0; i < n; i++)
		a2m_record_free(recs[i]);
	free(recs);
	free(outcome);
	return rc;
}

int a2m_method_remember(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	json_t *in = json_object_get(params, "records");
	if (!json_is_array(in))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "records must be an array of records");
	size_t n = json_array_size(in);
	if (n == 0)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "records must hold at least one record");
	if ((int64_t)n > call->srv->limits.max_records_per_call) {
		a2m_error_set(err, A2M_QUOTA_EXCEEDED,
			      "%zu records in one call; max_records_per_call is %lld", n,
			      (long long)call->srv->limits.max_records_per_call);
		return a2m_error_data(err, json_pack("{ss sI}", "limit", "max_records_per_call",
						     "max", (json_int_t)call->srv->limits.max_records_per_call));
	}
	/* x-import; undeclared, the parameter is unknown and ignored (spec §2). */
	const json_t *import = call->caps & A2M_CAP_X_IMPORT ? json_object_get(params, "import")
							      : NULL;
	if (import && !json_is_boolean(import))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "import must be true or false");
	if (json_is_true(import))
		return remember_import(call, in, n, result, err);
	const char *default_owner = NULL, *default_session = NULL;
	int rc = 0;
	if ((call->caps & A2M_CAP_SCOPES) &&
	    ((rc = a2m_param_string(params, "owner", &default_owner, err)) ||
	     (call->network && (rc = a2m_param_owner_is_principal(call, &default_owner, err)))))
		return rc;
	if ((call->caps & A2M_CAP_SESSIONS) &&
	    (rc = a2m_param_string(params, "session", &default_session, err)))
		return rc;
	a2m_record **recs = calloc(n, sizeof *recs);
	if (!recs)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	for (size_t i = 0; i < n && !rc; i++) {
		recs[i] = a2m_record_new();
		if (!recs[i])
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		else
			rc = build_record(call, json_array_get(in, i), i, recs[i], default_owner,
					  default_session, err);
	}
	size_t dups = 0;
	if (!rc)
		rc = a2m_stack_remember(call->srv->stack, recs, n, &dups, err);
	if (!rc) {
		json_t *ids = json_array();
		for (size_t i = 0; ids && i < n; i++)
			/* An id is valid UTF-8: ours are ASCII, a caller's was read as JSON. */
			if (json_array_append_new(ids, json_stringn_nocheck(recs[i]->id,
									     strlen(recs[i]->id)))) {
				json_decref(ids);
				ids = NULL;
			}
		*result = ids ? json_pack("{so}", "ids", ids) : NULL;
		/* x-dedup: said only when it happened, so a write that was not
		** suppressed answers exactly as without the extension. */
		if (*result && dups && (call->caps & A2M_CAP_X_DEDUP) &&
		    json_object_set_new(*result, "deduplicated", json_integer((json_int_t)dups))) {
			json_decref(*result);
			*result = NULL;
		}
		if (!*result)
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	a2m_record_array_free(recs, n);
	return rc;
}
