/*
** check_tiers.c — checks of the tiers capability (spec §3.4, §4.6,
** §4.7): the layout describe reports, placement on write and promote.
** Consolidate and capacity (spills) are in check_capacity.c.
**
** Everything is derived from describe's "tiers": which tier is bounded,
** where it spills, which kind it is. A check that needs something the
** layout lacks (two tiers, a bounded tier with spill_to) skips and says so.
**
** Records are written with conf_tier_fields: a tier and, when "sessions" is
** declared, a fresh session, so a per-session capacity starts empty and a
** record placed there has room to stay. Tiers are read back with timeline,
** never recall, because a recall counts as an access and may promote.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

/* Spec §7: a referenced tier does not exist. */
enum { UNKNOWN_TIER = -32002 };

/* ---- local helpers ---- */

static int is_kind(const char *kind)
{
	static const char *const kinds[] = {"working", "episodic", "semantic", "procedural"};
	for (size_t i = 0; kind && i < CONF_COUNT(kinds); i++) {
		if (strcmp(kind, kinds[i]) == 0)
			return 1;
	}
	return 0;
}

/* A tier name no server has. */
static const char *bogus_tier(conf_ctx *cx)
{
	return conf_str(cx, "zz-no-such-tier-%s", conf_marker(cx));
}

/* Everything in mine sits in tier, else fails naming the first stray. */
static int all_in(conf_ctx *cx, const char *what, const json_t *mine, const char *tier)
{
	size_t i;
	json_t *rec;
	json_array_foreach(mine, i, rec) {
		const char *t = conf_str_of(rec, "tier");
		if (!t || strcmp(t, tier) != 0) {
			conf_fail(cx, "%s: record %s is in tier %s, expected \"%s\"", what,
				  conf_str_of(rec, "id") ? conf_str_of(rec, "id") : "?",
				  conf_show(cx, json_object_get(rec, "tier")), tier);
			return 0;
		}
	}
	return 1;
}

/* Timeline of the marker's records, limited generously so no default cap
** hides any of them. */
static json_t *mine_of(conf_ctx *cx, const char *marker, size_t expected)
{
	return conf_read(cx, "memory/timeline",
			 json_pack("{s:{s:s},s:I}", "where", "cfm", marker, "limit",
				   (json_int_t)(expected + 16)),
			 marker);
}

static int expect_n(conf_ctx *cx, const char *what, const json_t *records, size_t n)
{
	if (!records)
		return 0;
	if (json_array_size(records) == n)
		return 1;
	conf_fail(cx, "%s: %zu record(s), expected %zu", what, json_array_size(records), n);
	return 0;
}

/*
** Two distinct tiers each with room for n records: unbounded ones first so
** nothing spills while the check runs, and among those, ones without a
** promote_to, so the recalls a check makes move nothing. 1 found, 0 none
** (skipped), -1 failed.
*/
static int pick_two(conf_ctx *cx, size_t n, const json_t **a, const json_t **b)
{
	const json_t *tiers = conf_tier_layout(cx);
	const json_t *found[2] = {NULL, NULL};
	size_t got = 0;
	if (!tiers)
		return -1;
	for (int rank = 0; rank < 4 && got < 2; rank++) {
		for (size_t i = 0; i < json_array_size(tiers) && got < 2; i++) {
			const json_t *t = json_array_get(tiers, i);
			int this_rank = (conf_tier_capacity(t) > 0) * 2 +
					(conf_tier_str(t, "promote_to") != NULL);
			if (this_rank != rank || !conf_tier_str(t, "name"))
				continue;
			int room = conf_tier_room(cx, t, n);
			if (room < 0)
				return -1;
			if (room)
				found[got++] = t;
		}
	}
	if (got < 2) {
		conf_skip(cx, "the layout has no two tiers with room for %zu record(s)", n);
		return 0;
	}
	*a = found[0];
	*b = found[1];
	return 1;
}


/* ---- describe ---- */

static void check_layout_names_counts(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *tiers = conf_tier_layout(cx);
	if (!tiers)
		return;
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const json_t *t = json_array_get(tiers, i);
		const char *name = conf_tier_str(t, "name");
		json_t *count = json_object_get(t, "count");
		if (!json_is_object(t) || !name || !*name) {
			conf_fail(cx, "tiers[%zu] is %s, expected an object with a non-empty "
				  "string name", i, conf_show(cx, t));
			return;
		}
		if (!json_is_integer(count) || json_integer_value(count) < 0) {
			conf_fail(cx, "tier \"%s\" has count %s, expected an integer >= 0", name,
				  conf_show(cx, count));
			return;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(name, conf_tier_str(json_array_get(tiers, j), "name")) == 0) {
				conf_fail(cx, "tier \"%s\" is described twice", name);
				return;
			}
		}
	}
	conf_pass(cx);
}

/* The optional members of a tier (spec §4.7), checked only when present. */
static const char *bad_optional(conf_ctx *cx, const json_t *t)
{
	json_t *v;
	if ((v = json_object_get(t, "kind")) && !is_kind(json_string_value(v)))
		return conf_str(cx, "kind %s is not one of working, episodic, semantic, "
				"procedural", conf_show(cx, v));
	if ((v = json_object_get(t, "capacity")) && !json_is_null(v) &&
	    (!json_is_integer(v) || json_integer_value(v) < 0))
		return conf_str(cx, "capacity %s is not an integer >= 0", conf_show(cx, v));
	if ((v = json_object_get(t, "promote_after")) && !json_is_null(v) &&
	    (!json_is_integer(v) || json_integer_value(v) < 0))
		return conf_str(cx, "promote_after %s is not an integer >= 0", conf_show(cx, v));
	static const char *const links[] = {"spill_to", "promote_to"};
	for (size_t i = 0; i < CONF_COUNT(links); i++) {
		v = json_object_get(t, links[i]);
		if (v && !json_is_null(v) && !conf_tier(cx, json_string_value(v)))
			return conf_str(cx, "%s %s names no described tier", links[i],
					conf_show(cx, v));
	}
	static const char *const flags[] = {"shared", "per_session"};
	for (size_t i = 0; i < CONF_COUNT(flags); i++) {
		v = json_object_get(t, flags[i]);
		if (v && !json_is_boolean(v))
			return conf_str(cx, "%s %s is not a boolean", flags[i], conf_show(cx, v));
	}
	return NULL;
}

static void check_layout_optional(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *tiers = conf_tier_layout(cx);
	if (!tiers)
		return;
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const json_t *t = json_array_get(tiers, i);
		const char *why = bad_optional(cx, t);
		if (why) {
			conf_fail(cx, "tier %s: %s", conf_show(cx, json_object_get(t, "name")),
				  why);
			return;
		}
	}
	conf_pass(cx);
}

/* Spec §4.11, DECISIONS 006: nothing spills into procedural. */
static void check_layout_no_spill_to_procedural(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *tiers = conf_tier_layout(cx);
	if (!tiers)
		return;
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const json_t *t = json_array_get(tiers, i);
		const char *to = conf_tier_str(t, "spill_to");
		const char *kind = conf_tier_str(conf_tier(cx, to), "kind");
		if (kind && strcmp(kind, "procedural") == 0) {
			conf_fail(cx, "tier \"%s\" spills to \"%s\", a procedural tier",
				  conf_tier_str(t, "name"), to);
			return;
		}
	}
	conf_pass(cx);
}

/* ---- placement ---- */

static void check_remember_places(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *tiers = conf_tier_layout(cx);
	if (!tiers)
		return;
	const char *m = conf_marker(cx);
	json_t *want = conf_keep(cx, json_object()); /* id → tier */
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const char *name = conf_tier_str(json_array_get(tiers, i), "name");
		int room = conf_tier_room(cx, json_array_get(tiers, i), 1);
		if (room < 0)
			return;
		if (!room)
			continue;
		json_t *ids = conf_write_n(cx, m, 1, conf_tier_fields(cx, name));
		if (!ids)
			return;
		json_object_set_new(want, json_string_value(json_array_get(ids, 0)),
				    json_string(name));
	}
	if (json_object_size(want) == 0) {
		conf_skip(cx, "no tier has room for one more record");
		return;
	}
	json_t *mine = mine_of(cx, m, json_object_size(want));
	if (!expect_n(cx, "timeline of the placed records", mine, json_object_size(want)))
		return;
	size_t i;
	json_t *rec;
	json_array_foreach(mine, i, rec) {
		const char *tier = json_string_value(json_object_get(want, conf_str_of(rec, "id")));
		if (!tier) {
			conf_fail(cx, "timeline returned id %s, which was not written",
				  conf_show(cx, json_object_get(rec, "id")));
			return;
		}
		json_t *one = conf_keep(cx, json_pack("[O]", rec));
		if (!all_in(cx, "remember with tier", one, tier))
			return;
	}
	conf_pass(cx);
}

/* Spec §7 UNKNOWN_TIER, for remember, recall and timeline (the arg). */
static void check_unknown_tier(conf_ctx *cx, const void *arg)
{
	const char *method = arg;
	const char *tier = bogus_tier(cx);
	if (strcmp(method, "memory/remember") == 0) {
		if (!conf_need_writes(cx))
			return;
		const char *m = conf_marker(cx);
		json_t *rec = conf_record(cx, conf_str(cx, "%s placed nowhere", m), m);
		json_object_set_new(rec, "tier", json_string(tier));
		if (!conf_expect_error(cx, method, json_pack("{s:[o]}", "records", rec),
				       UNKNOWN_TIER, 0))
			return;
		json_t *found = mine_of(cx, m, 1);
		if (expect_n(cx, "records written anyway", found, 0))
			conf_pass(cx);
		return;
	}
	json_t *params = json_pack("{s:s}", "tier", tier);
	if (strcmp(method, "memory/recall") == 0)
		json_object_set_new(params, "query", json_string("anything"));
	if (conf_expect_error(cx, method, params, UNKNOWN_TIER, 0))
		conf_pass(cx);
}

/* recall or timeline (the arg) with tier returns that tier's records only. */
static void check_tier_filter(conf_ctx *cx, const void *arg)
{
	const char *method = arg;
	const json_t *a, *b;
	if (pick_two(cx, 1, &a, &b) <= 0)
		return;
	const char *an = conf_tier_str(a, "name"), *bn = conf_tier_str(b, "name");
	const char *m = conf_marker(cx);
	json_t *in_a = conf_write_n(cx, m, 1, conf_tier_fields(cx, an));
	if (!in_a || !conf_write_n(cx, m, 1, conf_tier_fields(cx, bn)))
		return;
	int recall = strcmp(method, "memory/recall") == 0;
	json_t *params = recall ? json_pack("{s:s,s:s}", "query", m, "tier", an)
				: json_pack("{s:s,s:{s:s}}", "tier", an, "where", "cfm", m);
	/* One read: a second recall would be a second access. */
	json_t *all = conf_read(cx, method, params, NULL);
	if (!all || !all_in(cx, conf_str(cx, "%s with tier \"%s\"", method, an), all, an))
		return;
	json_t *mine = conf_keep(cx, json_array());
	size_t i;
	json_t *rec;
	json_array_foreach(all, i, rec) {
		const char *c = conf_str_of(rec, "content");
		if (c && strstr(c, m))
			json_array_append(mine, rec);
	}
	if (!expect_n(cx, conf_str(cx, "%s with tier \"%s\" of one record there and one in "
				   "\"%s\"", method, an, bn), mine, 1))
		return;
	if (!json_equal(json_object_get(json_array_get(mine, 0), "id"), json_array_get(in_a, 0))) {
		conf_fail(cx, "%s with tier \"%s\" returned %s, not the record written there",
			  method, an, conf_show(cx, json_array_get(mine, 0)));
		return;
	}
	/* Without the filter both come back. */
	json_t *both = recall ? conf_read(cx, method, json_pack("{s:s}", "query", m), m)
			      : mine_of(cx, m, 2);
	if (expect_n(cx, conf_str(cx, "%s without tier", method), both, 2))
		conf_pass(cx);
}

/* Spec §5.2's own example: where tests the tier field, an array meaning
** any of. Three tiers' records; the filter names two of them. */
static void check_where_tier(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *tiers = conf_tier_layout(cx);
	if (!tiers)
		return;
	const char *names[3];
	size_t n = 0;
	for (size_t i = 0; i < json_array_size(tiers) && n < 3; i++) {
		int room = conf_tier_room(cx, json_array_get(tiers, i), 1);
		if (room < 0)
			return;
		if (room)
			names[n++] = conf_tier_str(json_array_get(tiers, i), "name");
	}
	if (n < 2) {
		conf_skip(cx, "the layout has no two tiers with room for a record");
		return;
	}
	const char *m = conf_marker(cx);
	json_t *want = conf_keep(cx, json_array());
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			conf_tick(); /* distinct created_at: timeline's order is then fixed */
		json_t *ids = conf_write_n(cx, m, 1, conf_tier_fields(cx, names[i]));
		if (!ids)
			return;
		if (i < 2)
			json_array_append(want, json_array_get(ids, 0));
	}
	json_t *got = conf_read(cx, "memory/timeline",
				json_pack("{s:{s:s,s:[s,s]}}", "where", "cfm", m, "tier", names[0],
					  names[1]),
				m);
	if (!got)
		return;
	json_t *got_ids = conf_keep(cx, json_array());
	size_t i;
	json_t *rec;
	json_array_foreach(got, i, rec)
		json_array_append(got_ids, json_object_get(rec, "id"));
	if (!json_equal(got_ids, want))
		conf_fail(cx,
			  "timeline where {\"tier\": [\"%s\", \"%s\"]} returned %s, expected %s",
			  names[0], names[1], conf_show(cx, got_ids), conf_show(cx, want));
	else
		conf_pass(cx);
}

/* ---- promote (spec §4.6) ---- */

/* The promoted count of a promote result; -1 after failing. */
static int64_t promote(conf_ctx *cx, json_t *params)
{
	conf_keep(cx, params);
	json_t *r = conf_result(cx, "memory/promote", json_incref(params));
	if (!r)
		return -1;
	json_t *n = json_object_get(r, "promoted");
	if (!json_is_integer(n) || json_integer_value(n) < 0) {
		conf_fail(cx, "promote %s returned %s, expected {\"promoted\": integer}",
			  conf_show(cx, params), conf_show(cx, r));
		return -1;
	}
	return json_integer_value(n);
}

static int promoted_is(conf_ctx *cx, json_t *params, int64_t want)
{
	conf_keep(cx, params);
	int64_t got = promote(cx, json_incref(params));
	if (got < 0)
		return 0;
	if (got != want) {
		conf_fail(cx, "promote %s reported %lld promoted, expected %lld",
			  conf_show(cx, params), (long long)got, (long long)want);
		return 0;
	}
	return 1;
}

static void check_promote_moves(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *a, *b;
	if (pick_two(cx, 2, &a, &b) <= 0)
		return;
	const char *an = conf_tier_str(a, "name"), *bn = conf_tier_str(b, "name");
	const char *m = conf_marker(cx);
	json_t *ids = conf_write_n(cx, m, 2, conf_tier_fields(cx, an));
	if (!ids)
		return;
	json_t *before = mine_of(cx, m, 2);
	if (!expect_n(cx, "timeline before promote", before, 2) ||
	    !all_in(cx, "before promote", before, an))
		return;
	if (!promoted_is(cx, json_pack("{s:O,s:s}", "ids", ids, "tier", bn), 2))
		return;
	json_t *after = mine_of(cx, m, 2);
	if (expect_n(cx, "timeline after promote", after, 2) &&
	    all_in(cx, conf_str(cx, "after promote to \"%s\"", bn), after, bn))
		conf_pass(cx);
}

static void check_promote_not_counted(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *a, *b;
	if (pick_two(cx, 2, &a, &b) <= 0)
		return;
	const char *an = conf_tier_str(a, "name"), *bn = conf_tier_str(b, "name");
	const char *m = conf_marker(cx);
	json_t *ids = conf_write_n(cx, m, 2, conf_tier_fields(cx, an));
	if (!ids)
		return;
	json_t *first = json_array_get(ids, 0), *second = json_array_get(ids, 1);
	const char *ghost = conf_str(cx, "no-such-id-%s", m);
	if (!promoted_is(cx, json_pack("{s:[O],s:s}", "ids", first, "tier", bn), 1))
		return;
	/* The first is there already and the ghost does not exist: only the
	** second counts, and neither is an error (spec §4.6). */
	if (!promoted_is(cx, json_pack("{s:[O,O,s],s:s}", "ids", first, second, ghost, "tier", bn),
			 1))
		return;
	if (!promoted_is(cx, json_pack("{s:[s],s:s}", "ids", ghost, "tier", bn), 0))
		return;
	json_t *after = mine_of(cx, m, 2);
	if (expect_n(cx, "timeline after promote", after, 2) &&
	    all_in(cx, "after promote", after, bn))
		conf_pass(cx);
}

static void check_promote_unknown_tier(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	json_t *ids = conf_write_n(cx, m, 1, conf_tier_fields(cx, NULL));
	json_t *before = ids ? mine_of(cx, m, 1) : NULL;
	if (!expect_n(cx, "timeline", before, 1))
		return;
	if (!conf_expect_error(cx, "memory/promote",
			       json_pack("{s:O,s:s}", "ids", ids, "tier", bogus_tier(cx)),
			       UNKNOWN_TIER, 0))
		return;
	json_t *after = mine_of(cx, m, 1);
	const char *was = conf_str_of(json_array_get(before, 0), "tier");
	if (expect_n(cx, "timeline after the refused promote", after, 1) &&
	    (!was || all_in(cx, "after the refused promote", after, was)))
		conf_pass(cx);
}

/* A promote carrying only the param named by arg, which must be -32602:
** ids and tier are both required (spec §4.6). */
static void check_promote_invalid(conf_ctx *cx, const void *arg)
{
	/* A read-only server refuses promote outright (-32004, §2.1). */
	if (!conf_need_writes(cx))
		return;
	const json_t *tiers = conf_tier_layout(cx);
	if (!tiers)
		return;
	const char *only = arg;
	json_t *params = strcmp(only, "ids") == 0
				 ? json_pack("{s:[s]}", "ids", conf_str(cx, "no-such-id-%s",
									  conf_marker(cx)))
				 : json_pack("{s:s}", "tier",
					     conf_tier_str(json_array_get(tiers, 0), "name"));
	if (conf_expect_error(cx, "memory/promote", params, CONF_INVALID_PARAMS, 0))
		conf_pass(cx);
}

static void check_promote_salience(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_has_capability(cx, "salience")) {
		conf_skip(cx, "the server does not declare \"salience\"");
		return;
	}
	const json_t *a, *b;
	if (pick_two(cx, 1, &a, &b) <= 0)
		return;
	const char *an = conf_tier_str(a, "name"), *bn = conf_tier_str(b, "name");
	const char *m = conf_marker(cx);
	json_t *fields = json_deep_copy(conf_tier_fields(cx, an));
	json_object_set_new(fields, "salience", json_real(0.25));
	json_t *ids = conf_write_n(cx, m, 1, conf_keep(cx, fields));
	if (!ids)
		return;
	json_t *before = mine_of(cx, m, 1);
	if (!expect_n(cx, "timeline", before, 1))
		return;
	json_t *s0 = json_object_get(json_array_get(before, 0), "salience");
	if (!json_is_number(s0)) {
		conf_fail(cx, "the record carries salience %s, expected a number",
			  conf_show(cx, s0));
		return;
	}
	double was = json_number_value(s0);
	if (!promoted_is(cx, json_pack("{s:O,s:s,s:f}", "ids", ids, "tier", bn, "salience", 0.5),
			 1))
		return;
	json_t *after = mine_of(cx, m, 1);
	if (!expect_n(cx, "timeline after promote", after, 1))
		return;
	json_t *s1 = json_object_get(json_array_get(after, 0), "salience");
	if (!json_is_number(s1) || fabs(json_number_value(s1) - (was + 0.5)) > 1e-9)
		conf_fail(cx, "salience was %g, promote added 0.5, and it is now %s", was,
			  conf_show(cx, s1));
	else
		conf_pass(cx);
}

/*
** Spec §3.4: a tiered server never leaves part of a group behind. Promoting
** one member must move the group whole, or move nothing; how many it then
** reports is not fixed, so only where the members end up is checked.
*/
static void check_promote_group(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *a, *b;
	if (pick_two(cx, 3, &a, &b) <= 0)
		return;
	const char *an = conf_tier_str(a, "name"), *bn = conf_tier_str(b, "name");
	const char *m = conf_marker(cx);
	json_t *fields = conf_keep(cx, json_deep_copy(conf_tier_fields(cx, an)));
	json_object_set_new(fields, "group", json_string(conf_str(cx, "%s-turn", m)));
	json_t *ids = conf_write_n(cx, m, 3, fields);
	if (!ids || promote(cx, json_pack("{s:[O],s:s}", "ids", json_array_get(ids, 1), "tier",
					  bn)) < 0)
		return;
	json_t *after = mine_of(cx, m, 3);
	if (!expect_n(cx, "timeline of the group after promote", after, 3))
		return;
	const char *first = conf_str_of(json_array_get(after, 0), "tier");
	if (first && all_in(cx, conf_str(cx, "after promoting one member of a group to \"%s\"",
					 bn), after, first))
		conf_pass(cx);
	else if (!first)
		conf_fail(cx, "a record carries tier %s",
			  conf_show(cx, json_object_get(json_array_get(after, 0), "tier")));
}

static const conf_check tiers_checks[] = {
	{"describe lists each tier with a unique name and an integer count",
	 check_layout_names_counts, NULL},
	{"kind is one of the four; capacity, spill_to, promote_to, promote_after, shared and "
	 "per_session have the right types when present", check_layout_optional, NULL},
	{"no tier spills into a procedural tier", check_layout_no_spill_to_procedural, NULL},
	{"remember with tier places the record in that tier", check_remember_places, NULL},
	{"remember with an unknown tier is -32002, nothing written", check_unknown_tier,
	 "memory/remember"},
	{"recall with an unknown tier is -32002", check_unknown_tier, "memory/recall"},
	{"timeline with an unknown tier is -32002", check_unknown_tier, "memory/timeline"},
	{"recall with tier returns only that tier's records", check_tier_filter, "memory/recall"},
	{"timeline with tier returns only that tier's records", check_tier_filter,
	 "memory/timeline"},
	{"where {\"tier\": [a, b]} selects the records of either tier", check_where_tier, NULL},
	{"promote moves the records and counts them", check_promote_moves, NULL},
	{"promote does not count unknown ids or ids already in the tier", check_promote_not_counted,
	 NULL},
	{"promote to an unknown tier is -32002 and moves nothing", check_promote_unknown_tier,
	 NULL},
	{"promote without tier is -32602", check_promote_invalid, "ids"},
	{"promote without ids is -32602", check_promote_invalid, "tier"},
	{"promote with salience adds it to the records' salience", check_promote_salience, NULL},
	{"promoting one member of a group moves the group whole or not at all",
	 check_promote_group, NULL},
};

const conf_group conf_group_tiers = {"tiers", "tiers", tiers_checks, CONF_COUNT(tiers_checks),
				     0};

