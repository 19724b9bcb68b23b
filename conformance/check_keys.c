/*
** check_keys.c — checks of the keys capability (spec §3.6, §4.9;
** DECISIONS 017): a write to an occupied key replaces the record there,
** keys are unique per owner, memory/fetch reads an address, and key_prefix
** selects a subtree for recall, timeline and forget.
**
** Keys live under "cf/<marker>/", so no check can meet a key another wrote.
*/
#include <string.h>

#include "suite.h"

/* Writes one record "<m> <text>" at key (as owner when not NULL) with
** fields; returns its id, or NULL after failing. */
static const char *write_key(conf_ctx *cx, const char *m, const char *key, const char *text,
			     const char *owner, const json_t *fields)
{
	json_t *rec = conf_record(cx, conf_str(cx, "%s %s", m, text), m);
	if (fields)
		json_object_update(rec, (json_t *)fields);
	json_object_set_new(rec, "key", json_string(key));
	if (owner)
		json_object_set_new(rec, "owner", json_string(owner));
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	return ids ? json_string_value(json_array_get(ids, 0)) : NULL;
}

/* fetch {key, owner}; the record (JSON null when unused), or NULL after
** failing. */
static json_t *fetch(conf_ctx *cx, const char *key, const char *owner)
{
	json_t *params = json_pack("{s:s}", "key", key);
	if (owner)
		json_object_set_new(params, "owner", json_string(owner));
	json_t *r = conf_result(cx, "memory/fetch", params);
	if (!r)
		return NULL;
	json_t *rec = json_object_get(r, "record");
	if (!rec || (!json_is_null(rec) && !json_is_object(rec))) {
		conf_fail(cx, "fetch of \"%s\" returned %s, expected {\"record\": object or null}",
			  key, conf_show(cx, r));
		return NULL;
	}
	return rec;
}

/* fetch that must find the record id at key, saying text, at revision. */
static int fetched_is(conf_ctx *cx, const char *key, const char *owner, const char *id,
		      const char *text, int64_t revision)
{
	json_t *rec = fetch(cx, key, owner);
	if (!rec)
		return 0;
	const char *got_id = conf_str_of(rec, "id"), *content = conf_str_of(rec, "content");
	const char *got_key = conf_str_of(rec, "key");
	json_t *rev = json_object_get(rec, "revision");
	const char *who = owner ? conf_str(cx, " as owner \"%s\"", owner) : "";
	if (!got_id || strcmp(got_id, id) != 0)
		conf_fail(cx, "fetch of \"%s\"%s returned id %s, expected \"%s\"", key, who,
			  conf_show(cx, json_object_get(rec, "id")), id);
	else if (!content || !strstr(content, text))
		conf_fail(cx, "fetch of \"%s\"%s returned content %s, expected the one saying "
			  "\"%s\"", key, who, conf_show(cx, json_object_get(rec, "content")), text);
	else if (!got_key || strcmp(got_key, key) != 0)
		conf_fail(cx, "fetch of \"%s\"%s returned key %s", key, who,
			  conf_show(cx, json_object_get(rec, "key")));
	else if (!json_is_integer(rev) || json_integer_value(rev) != revision)
		conf_fail(cx, "fetch of \"%s\"%s returned revision %s, expected %lld", key, who,
			  conf_show(cx, rev), (long long)revision);
	else
		return 1;
	return 0;
}

/* ---- replacement (spec §3.6) ---- */

static void check_first_write(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *key = conf_str(cx, "cf/%s/user/name", m);
	const char *id = write_key(cx, m, key, "the user is called ada", NULL,
				   conf_tier_fields(cx, NULL));
	if (id && fetched_is(cx, key, NULL, id, "called ada", 0))
		conf_pass(cx);
}

static const char *const versions[] = {"lives in bologna", "lives in milan", "lives in turin"};

/* Writes versions[] one call each at one key; returns the key, or NULL. */
static const char *rewrite_three(conf_ctx *cx, const char *m, int check_each)
{
	const char *key = conf_str(cx, "cf/%s/user/city", m);
	json_t *fields = conf_tier_fields(cx, NULL);
	const char *first = NULL;
	for (size_t i = 0; i < CONF_COUNT(versions); i++) {
		if (i > 0)
			conf_tick();
		const char *id = write_key(cx, m, key, versions[i], NULL, fields);
		if (!id)
			return NULL;
		if (!first)
			first = id;
		if (strcmp(id, first) != 0) {
			conf_fail(cx,
				  "write %zu to occupied key \"%s\" returned id \"%s\"; the record "
				  "there keeps its id \"%s\"",
				  i + 1, key, id, first);
			return NULL;
		}
		if (check_each && !fetched_is(cx, key, NULL, first, versions[i], (int64_t)i))
			return NULL;
	}
	return key;
}

static void check_replace(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (rewrite_three(cx, conf_marker(cx), 1))
		conf_pass(cx);
}

static void check_replace_one_record(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *key = rewrite_three(cx, m, 0);
	if (!key)
		return;
	json_t *line = conf_read(cx, "memory/timeline",
				 json_pack("{s:{s:s}}", "where", "cfm", m), m);
	json_t *found = line ? conf_find(cx, m) : NULL;
	if (!found)
		return;
	if (json_array_size(line) != 1)
		conf_fail(cx, "after three writes to \"%s\", timeline finds %zu records", key,
			  json_array_size(line));
	else if (json_array_size(found) != 1)
		conf_fail(cx, "after three writes to \"%s\", recall finds %zu records", key,
			  json_array_size(found));
	else if (!conf_str_of(json_array_get(found, 0), "content") ||
		 !strstr(conf_str_of(json_array_get(found, 0), "content"), versions[2]))
		conf_fail(cx, "recall returns %s, not the latest version",
			  conf_show(cx, json_object_get(json_array_get(found, 0), "content")));
	else
		conf_pass(cx);
}

/* Spec §3.6: key uniqueness is per owner. */
static void per_owner(conf_ctx *cx, const char *m, const char *a, const char *b)
{
	const char *key = conf_str(cx, "cf/%s/user/city", m);
	const char *ida = write_key(cx, m, key, "lives in lisbon", a, conf_tier_fields(cx, NULL));
	const char *idb = ida ? write_key(cx, m, key, "lives in osaka", b,
					  conf_tier_fields(cx, NULL))
			      : NULL;
	if (!idb)
		return;
	if (strcmp(ida, idb) == 0) {
		conf_fail(cx, "owners \"%s\" and \"%s\" writing key \"%s\" got the same record "
			  "\"%s\"", a, b, key, ida);
		return;
	}
	if (fetched_is(cx, key, a, ida, "lisbon", 0) && fetched_is(cx, key, b, idb, "osaka", 0))
		conf_pass(cx);
}

static void check_per_owner(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_has_capability(cx, "scopes")) {
		conf_skip(cx, "the server does not declare \"scopes\"");
		return;
	}
	const char *m = conf_marker(cx);
	const char *owners[] = {conf_str(cx, "cfo-%s", conf_marker(cx)),
				conf_str(cx, "cfo-%s", conf_marker(cx))};
	per_owner(cx, m, owners[0], owners[1]);
	/* The runner's clean-up reads without an owner and may not reach
	** records private to one. */
	for (size_t i = 0; i < 2; i++)
		conf_call(cx, "memory/forget",
			  json_pack("{s:{s:s},s:s}", "where", "cfm", m, "owner", owners[i]));
}

/* ---- fetch (spec §4.9) ---- */

static void check_fetch_unused(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *key = conf_str(cx, "cf/%s/never/written", conf_marker(cx));
	json_t *rec = fetch(cx, key, NULL);
	if (!rec)
		return;
	if (!json_is_null(rec))
		conf_fail(cx, "fetch of unused key \"%s\" returned %s, expected null", key,
			  conf_show(cx, rec));
	else
		conf_pass(cx);
}

static void check_fetch_invalid(conf_ctx *cx, const void *arg)
{
	json_t *params = conf_json(cx, arg);
	if (params && conf_expect_error(cx, "memory/fetch", json_incref(params),
					CONF_INVALID_PARAMS, 0))
		conf_pass(cx);
}

/* ---- key_prefix (spec §3.6) ---- */

/* The leaves written under "cf/<m>/", and which of them the prefix
** "cf/<m>/wf-1/" selects: "wf-10" shares its characters but not its path. */
static const char *const leaves[] = {"wf-1/a", "wf-1/b/c", "wf-10/x"};
static const int under_wf1[] = {1, 1, 0};

/* Writes the leaves in one batch; returns the marker, or NULL. */
static const char *write_tree(conf_ctx *cx)
{
	const char *m = conf_marker(cx);
	json_t *fields = conf_tier_fields(cx, NULL);
	json_t *records = json_array();
	for (size_t i = 0; i < CONF_COUNT(leaves); i++) {
		json_t *rec = conf_record(cx, conf_str(cx, "%s leaf %s", m, leaves[i]), m);
		json_object_update(rec, fields);
		json_object_set_new(rec, "key",
				    json_string(conf_str(cx, "cf/%s/%s", m, leaves[i])));
		json_array_append_new(records, rec);
	}
	return conf_remember(cx, records) ? m : NULL;
}

/*
** Whether records' keys are exactly those of the leaves picked by want, in
** any order (one batch shares a created_at, and the order of equals is not
** what these checks are about); fails the check if not.
*/
static int keys_are(conf_ctx *cx, const char *what, const json_t *records, const char *m,
		    const int *want)
{
	json_t *expected = conf_keep(cx, json_array());
	json_t *got = conf_keep(cx, json_array());
	for (size_t i = 0; i < CONF_COUNT(leaves); i++) {
		if (want[i])
			json_array_append_new(expected,
					      json_string(conf_str(cx, "cf/%s/%s", m, leaves[i])));
	}
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec)
		json_array_append(got, json_object_get(rec, "key"));
	int same = json_array_size(got) == json_array_size(expected);
	for (i = 0; same && i < json_array_size(got); i++) {
		int found = 0;
		for (size_t j = 0; j < json_array_size(expected); j++)
			found |= json_equal(json_array_get(got, i), json_array_get(expected, j));
		same = found;
	}
	if (!same)
		conf_fail(cx, "%s selected keys %s, expected %s", what, conf_show(cx, got),
			  conf_show(cx, expected));
	return same;
}

static void check_prefix_read(conf_ctx *cx, const void *arg)
{
	const char *method = arg;
	const char *m = write_tree(cx);
	if (!m)
		return;
	const char *prefix = conf_str(cx, "cf/%s/wf-1/", m);
	int recall = strcmp(method, "memory/recall") == 0;
	json_t *params = recall ? json_pack("{s:s,s:s}", "query", m, "key_prefix", prefix)
				: json_pack("{s:s}", "key_prefix", prefix);
	json_t *got = conf_read(cx, method, params, NULL);
	if (got && keys_are(cx, conf_str(cx, "%s with key_prefix \"%s\"", method, prefix), got,
			    m, under_wf1))
		conf_pass(cx);
}

/* A prefix that is a whole key selects that key ("at or beneath"). */
static void check_prefix_whole_key(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const int only_first[] = {1, 0, 0};
	const char *m = write_tree(cx);
	if (!m)
		return;
	const char *prefix = conf_str(cx, "cf/%s/%s", m, leaves[0]);
	json_t *got = conf_read(cx, "memory/timeline", json_pack("{s:s}", "key_prefix", prefix),
				NULL);
	if (got && keys_are(cx, conf_str(cx, "timeline with key_prefix \"%s\"", prefix), got, m,
			    only_first))
		conf_pass(cx);
}

static void check_prefix_forget(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const int rest[] = {0, 0, 1};
	const char *m = write_tree(cx);
	if (!m)
		return;
	const char *prefix = conf_str(cx, "cf/%s/wf-1/", m);
	/* Read the selection back first: a server whose key_prefix selects
	** too much must not be handed a delete with it. */
	json_t *preview = conf_read(cx, "memory/timeline", json_pack("{s:s}", "key_prefix", prefix),
				    NULL);
	if (!preview || !keys_are(cx, "timeline with the prefix, before forgetting", preview, m,
				  under_wf1))
		return;
	json_t *r = conf_result(cx, "memory/forget", json_pack("{s:s}", "key_prefix", prefix));
	if (!r)
		return;
	json_t *n = json_object_get(r, "forgotten");
	if (!json_is_integer(n) || json_integer_value(n) != 2) {
		conf_fail(cx, "forget with key_prefix \"%s\" returned %s, expected forgotten 2",
			  prefix, conf_show(cx, r));
		return;
	}
	json_t *left = conf_read(cx, "memory/timeline", json_pack("{s:{s:s}}", "where", "cfm", m),
				 m);
	if (left && keys_are(cx, "what is left after the forget", left, m, rest))
		conf_pass(cx);
}

static const conf_check keys_checks[] = {
	{"fetch returns a record written at a key, revision 0", check_first_write, NULL},
	{"a write to an occupied key replaces it: same id, new content, revision 0, 1, 2",
	 check_replace, NULL},
	{"after rewrites, one record holds the key and it is the latest",
	 check_replace_one_record, NULL},
	{"two owners each keep their own record at one key", check_per_owner, NULL},
	{"fetch of an unused key returns {\"record\": null}", check_fetch_unused, NULL},
	{"fetch without key is -32602", check_fetch_invalid, "{}"},
	{"fetch with an empty key is -32602", check_fetch_invalid, "{\"key\":\"\"}"},
	{"fetch with a key that is not a string is -32602", check_fetch_invalid,
	 "{\"key\":42}"},
	{"recall with key_prefix selects keys at or under it, not siblings sharing its "
	 "characters", check_prefix_read, "memory/recall"},
	{"timeline with key_prefix selects keys at or under it", check_prefix_read,
	 "memory/timeline"},
	{"a key_prefix that is a whole key selects that key", check_prefix_whole_key, NULL},
	{"forget with key_prefix removes exactly the keys under it and counts them",
	 check_prefix_forget, NULL},
};

const conf_group conf_group_keys = {"keys", "keys", keys_checks, CONF_COUNT(keys_checks), 0};
