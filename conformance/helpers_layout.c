/*
** helpers_layout.c — the tier layout as describe reports it (spec
** §4.7), and writes placed so they stay put: the helpers declared in
** conformance.h for the tiers, salience, scopes, sessions and keys groups.
** Nothing here hard-codes a layout; a check that needs a kind of tier the
** server lacks skips.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

const json_t *conf_tiers(conf_ctx *cx)
{
	if (!conf_has_capability(cx, "tiers"))
		return NULL;
	const json_t *t = json_object_get(conf_describe(cx), "tiers");
	return json_is_array(t) && json_array_size(t) > 0 ? t : NULL;
}

const json_t *conf_tier_layout(conf_ctx *cx)
{
	const json_t *tiers = conf_tiers(cx);
	if (!tiers)
		conf_fail(cx, "\"tiers\" is declared but describe reports tiers %s, expected a "
			  "non-empty array (spec §4.7)",
			  conf_show(cx, json_object_get(conf_describe(cx), "tiers")));
	return tiers;
}

const char *conf_tier_str(const json_t *tier, const char *member)
{
	return json_string_value(json_object_get(tier, member));
}

const json_t *conf_tier(conf_ctx *cx, const char *name)
{
	const json_t *tiers = conf_tiers(cx);
	for (size_t i = 0; name && i < json_array_size(tiers); i++) {
		const json_t *t = json_array_get(tiers, i);
		const char *n = conf_tier_str(t, "name");
		if (n && strcmp(n, name) == 0)
			return t;
	}
	return NULL;
}

int64_t conf_tier_capacity(const json_t *tier)
{
	json_t *c = json_object_get(tier, "capacity");
	return json_is_integer(c) && json_integer_value(c) > 0 ? json_integer_value(c) : 0;
}

int conf_tier_flag(const json_t *tier, const char *member)
{
	json_t *v = json_object_get(tier, member);
	return json_is_boolean(v) ? json_is_true(v) : -1;
}

int conf_tier_below(conf_ctx *cx, const char *from, const char *name)
{
	const json_t *t = conf_tier(cx, from);
	/* A chain longer than the layout is a cycle: stop rather than loop. */
	size_t steps = json_array_size(conf_tiers(cx));
	for (size_t i = 0; t && i < steps; i++) {
		const char *next = conf_tier_str(t, "spill_to");
		if (!next)
			return 0;
		if (strcmp(next, name) == 0)
			return 1;
		t = conf_tier(cx, next);
	}
	return 0;
}

int conf_tier_can_drop(conf_ctx *cx, const char *from, size_t n)
{
	const json_t *t = conf_tier(cx, from);
	size_t steps = json_array_size(conf_tiers(cx));
	json_t *counts = conf_tier_counts(cx, NULL);
	if (!counts)
		return -1;
	/* Only what is above a tier, or arrives, can flow into it. */
	int64_t above = (int64_t)n;
	for (size_t i = 0; t && i <= steps; i++) {
		int64_t cap = conf_tier_capacity(t);
		int64_t here = conf_tier_count_in(counts, conf_tier_str(t, "name"));
		const char *next = conf_tier_str(t, "spill_to");
		if (cap == 0)
			return 0;
		if (!next)
			return here < 0 || here + above > cap;
		above += here > 0 ? here : 0;
		t = conf_tier(cx, next);
	}
	/* A name describe does not list, or a cycle: nothing can be promised. */
	return 1;
}

json_t *conf_tier_counts(conf_ctx *cx, const char *owner)
{
	json_t *params = json_pack("{s:s}", "protocol", CONF_PROTOCOL);
	if (owner)
		json_object_set_new(params, "owner", json_string(owner));
	json_t *r = conf_result(cx, "memory/describe", params);
	if (!r)
		return NULL;
	json_t *tiers = json_object_get(r, "tiers");
	if (!json_is_array(tiers)) {
		conf_fail(cx, "memory/describe%s reports tiers %s, expected an array",
			  owner ? conf_str(cx, " with owner \"%s\"", owner) : "",
			  conf_show(cx, tiers));
		return NULL;
	}
	json_t *out = conf_keep(cx, json_object());
	size_t i;
	json_t *t;
	json_array_foreach(tiers, i, t) {
		const char *name = conf_tier_str(t, "name");
		json_t *count = json_object_get(t, "count");
		if (!name || !json_is_integer(count) || json_integer_value(count) < 0) {
			conf_fail(cx, "memory/describe reports tier %s, expected a name and an "
				  "integer count >= 0", conf_show(cx, t));
			return NULL;
		}
		json_object_set(out, name, count);
	}
	return out;
}

int64_t conf_tier_count_in(const json_t *counts, const char *name)
{
	json_t *c = json_object_get(counts, name);
	return json_is_integer(c) ? json_integer_value(c) : -1;
}

/* How many records the home tier must have room for. */
#define HOME_ROOM 16

const char *conf_tier_home(conf_ctx *cx)
{
	const json_t *tiers = conf_tiers(cx);
	const char *best = NULL;
	int best_score = -1;
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const json_t *t = json_array_get(tiers, i);
		const char *name = conf_tier_str(t, "name"), *kind = conf_tier_str(t, "kind");
		if (!name)
			continue;
		int room = conf_tier_room(cx, t, HOME_ROOM);
		if (room < 0)
			return NULL;
		if (!room)
			continue;
		/* Procedural holds what is written deliberately; a bounded tier
		** may move what it holds; promote_to moves what is recalled. */
		int score = (!kind || strcmp(kind, "procedural") != 0) * 4 +
			    (conf_tier_capacity(t) == 0) * 2 + !conf_tier_str(t, "promote_to");
		if (score > best_score) {
			best = name;
			best_score = score;
		}
	}
	return best;
}

json_t *conf_tier_fields(conf_ctx *cx, const char *tier)
{
	json_t *f = conf_keep(cx, json_object());
	if (!f)
		return NULL;
	if (!tier)
		tier = conf_tier_home(cx);
	if (tier)
		json_object_set_new(f, "tier", json_string(tier));
	if (conf_has_capability(cx, "sessions"))
		json_object_set_new(f, "session",
				    json_string(conf_str(cx, "cfs-%s", conf_marker(cx))));
	return f;
}

int conf_tier_room(conf_ctx *cx, const json_t *tier, size_t n)
{
	int64_t cap = conf_tier_capacity(tier);
	if (cap == 0)
		return 1;
	if ((int64_t)n > cap)
		return 0;
	/* A fresh session starts a per-session tier empty (spec §3.5). */
	if (conf_tier_flag(tier, "per_session") == 1 && conf_has_capability(cx, "sessions"))
		return 1;
	json_t *counts = conf_tier_counts(cx, NULL);
	if (!counts)
		return -1;
	int64_t now = conf_tier_count_in(counts, conf_tier_str(tier, "name"));
	return now >= 0 && now + (int64_t)n <= cap;
}

/* How many records one remember may carry here. */
static size_t batch_size(conf_ctx *cx)
{
	enum { MAX_BATCH = 500 };
	int64_t max = conf_server_limits(cx)->max_records_per_call;
	return max > 0 && max < MAX_BATCH ? (size_t)max : MAX_BATCH;
}

json_t *conf_write_n(conf_ctx *cx, const char *marker, size_t n, const json_t *fields)
{
	json_t *ids = conf_keep(cx, json_array());
	size_t batch = batch_size(cx);
	for (size_t done = 0; ids && done < n;) {
		json_t *records = json_array();
		for (; done < n && json_array_size(records) < batch; done++) {
			json_t *rec = conf_record(cx, conf_str(cx, "%s item %zu", marker, done),
						  marker);
			if (fields)
				json_object_update(rec, (json_t *)fields);
			json_array_append_new(records, rec);
		}
		json_t *got = conf_remember(cx, records);
		if (!got)
			return NULL;
		json_array_extend(ids, got);
	}
	return ids;
}

json_t *conf_read(conf_ctx *cx, const char *method, json_t *params, const char *marker)
{
	json_t *result = conf_result(cx, method, params);
	if (!result)
		return NULL;
	json_t *records = json_object_get(result, "records");
	if (!json_is_array(records)) {
		conf_fail(cx, "%s returned no records array: %s", method, conf_show(cx, result));
		return NULL;
	}
	json_t *out = conf_keep(cx, json_array());
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		const char *cfm = json_string_value(
			json_object_get(json_object_get(rec, "metadata"), "cfm"));
		if (!marker || (cfm && strcmp(cfm, marker) == 0))
			json_array_append(out, rec);
	}
	return out;
}
