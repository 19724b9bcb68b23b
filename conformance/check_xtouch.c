/*
** check_xtouch.c — checks of our x-touch extension (docs/PROTOCOL.md,
** Extensions): a recall with touch: false finds what a plain recall finds
** and counts no access (access_count and accessed_at stay as they were),
** while a plain recall still counts one; touch that is not a boolean is
** -32602. Skipped when x-touch is not declared.
*/
#include <string.h>

#include "suite.h"

/* The record of marker m as timeline shows it (which counts no access). */
static const json_t *seen(conf_ctx *cx, const char *m)
{
	json_t *recs = conf_timeline_of(cx, m);
	if (!recs || !conf_expect_count(cx, "records of the check", recs, 1))
		return NULL;
	return json_array_get(recs, 0);
}

static void check_touch_false(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *word = conf_str(cx, "quokka%s", conf_run_token(cx));
	if (!conf_need_writes(cx) ||
	    !conf_remember(cx, json_pack("[o]", conf_record(cx, conf_str(cx, "the %s sleeps", word), m))))
		return;
	const json_t *before = seen(cx, m);
	if (!before)
		return;
	int64_t n0 = json_integer_value(json_object_get(before, "access_count"));
	json_t *at0 = conf_keep(cx, json_deep_copy(json_object_get(before, "accessed_at")));
	json_t *found = conf_read(cx, "memory/recall",
				  json_pack("{ss sb}", "query", word, "touch", 0), m);
	if (!found || !conf_expect_count(cx, "records recalled with touch: false", found, 1))
		return;
	const json_t *after = seen(cx, m);
	if (!after)
		return;
	const json_t *at1 = json_object_get(after, "accessed_at");
	if (json_integer_value(json_object_get(after, "access_count")) != n0 ||
	    !(at0 ? at1 && json_equal(at0, at1) : !at1 || json_is_null(at1))) {
		conf_fail(cx, "a recall with touch: false changed the record's accesses: %s, then %s",
			  conf_show(cx, before), conf_show(cx, after));
		return;
	}
	found = conf_read(cx, "memory/recall", json_pack("{ss}", "query", word), m);
	if (!found || !conf_expect_count(cx, "records recalled", found, 1))
		return;
	after = seen(cx, m);
	if (!after)
		return;
	if (json_integer_value(json_object_get(after, "access_count")) != n0 + 1) {
		conf_fail(cx, "a plain recall after one with touch: false left access_count at %s, "
			  "expected %lld", conf_show(cx, json_object_get(after, "access_count")),
			  (long long)(n0 + 1));
		return;
	}
	conf_pass(cx);
}

static void check_touch_type(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (conf_expect_error(cx, "memory/recall", json_pack("{ss ss}", "query", "anything",
							     "touch", "no"), -32602, 0))
		conf_pass(cx);
}

static const conf_check xtouch_checks[] = {
	{"recall with touch: false finds the record and counts no access; a plain recall "
	 "counts one", check_touch_false, NULL},
	{"touch that is not true or false is -32602", check_touch_type, NULL},
};

const conf_group conf_group_xtouch = {"x-touch", "x-touch", xtouch_checks,
				      CONF_COUNT(xtouch_checks), 0};
