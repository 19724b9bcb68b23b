/*
** check_xdedup.c — checks of our x-dedup extension (docs/PROTOCOL.md,
** Extensions): in a tier describe marks dedup, a write whose normalised
** content and role repeat a live record of the same tier, session and
** owner is not stored; remember returns that record's id and counts it in
** `deduplicated`. A write with its own id is never suppressed. Skipped when
** x-dedup is not declared, and each check when no tier dedups.
*/
#include <string.h>

#include "suite.h"

/* The first tier describe marks dedup, or NULL after skipping. */
static const char *dedup_tier(conf_ctx *cx)
{
	const json_t *tiers = conf_tiers(cx);
	for (size_t i = 0; i < json_array_size(tiers); i++)
		if (json_is_true(json_object_get(json_array_get(tiers, i), "dedup")))
			return conf_str_of(json_array_get(tiers, i), "name");
	conf_skip(cx, "no tier is marked dedup in describe");
	return NULL;
}

static json_t *rec(conf_ctx *cx, const char *text, const char *m, const char *tier)
{
	json_t *r = conf_record(cx, text, m);
	json_object_set_new(r, "role", json_string("user"));
	if (tier)
		json_object_set_new(r, "tier", json_string(tier));
	if (conf_has_capability(cx, "sessions"))
		json_object_set_new(r, "session", json_string(conf_str(cx, "cf-%s", m)));
	return r;
}

static void check_duplicate_refreshes(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx), *tier;
	if (!conf_need_writes(cx) || !(tier = dedup_tier(cx)))
		return;
	const char *text = conf_str(cx, "%s the deploy key rotates", m);
	const char *again = conf_str(cx, "%s The DEPLOY key, rotates!", m);
	json_t *first = conf_remember(cx, json_pack("[o]", rec(cx, text, m, tier)));
	if (!first)
		return;
	json_t *r = conf_result(cx, "memory/remember",
				json_pack("{s:[o,o]}", "records", rec(cx, again, m, tier),
					  rec(cx, conf_str(cx, "%s something else", m), m, tier)));
	if (!r)
		return;
	json_t *ids = json_object_get(r, "ids");
	if (!json_equal(json_array_get(ids, 0), json_array_get(first, 0)) ||
	    json_equal(json_array_get(ids, 1), json_array_get(first, 0)) ||
	    json_integer_value(json_object_get(r, "deduplicated")) != 1) {
		conf_fail(cx, "writing a duplicate and a new text answered %s; expected the "
			  "first id %s again, a new one, and deduplicated 1", conf_show(cx, r),
			  conf_show(cx, json_array_get(first, 0)));
		return;
	}
	json_t *t = conf_timeline_of(cx, m);
	if (t && conf_expect_count(cx, "records after the duplicate", t, 2))
		conf_pass(cx);
}

static void check_own_id_kept(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx), *tier;
	if (!conf_need_writes(cx) || !(tier = dedup_tier(cx)))
		return;
	const char *text = conf_str(cx, "%s same words", m);
	if (!conf_remember(cx, json_pack("[o]", rec(cx, text, m, tier))))
		return;
	json_t *mine = rec(cx, text, m, tier);
	const char *id = conf_str(cx, "cf-%s-mine", m);
	json_object_set_new(mine, "id", json_string(id));
	json_t *r = conf_result(cx, "memory/remember", json_pack("{s:[o]}", "records", mine));
	if (!r)
		return;
	const char *got = json_string_value(json_array_get(json_object_get(r, "ids"), 0));
	if (!got || strcmp(got, id) != 0 || json_object_get(r, "deduplicated")) {
		conf_fail(cx, "a duplicate written with its own id answered %s, expected that id "
			  "and no deduplicated", conf_show(cx, r));
		return;
	}
	conf_pass(cx);
}

static const conf_check xdedup_checks[] = {
	{"a duplicate in a dedup tier returns the first record's id, counted in deduplicated",
	 check_duplicate_refreshes, NULL},
	{"a duplicate written with its own id is stored under that id", check_own_id_kept, NULL},
};

const conf_group conf_group_xdedup = {"x-dedup", "x-dedup", xdedup_checks,
				      CONF_COUNT(xdedup_checks), 0};
