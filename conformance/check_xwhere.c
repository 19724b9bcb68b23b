/*
** check_xwhere.c — checks of our x-where extension (docs/PROTOCOL.md,
** Extensions): operators in `where` select exactly what they say, on
** recall, timeline and forget alike, and an operator the server does not
** know is refused with -32602, never read as an equality (so nothing is
** deleted by it). Skipped when x-where is not declared.
*/
#include <string.h>

#include "suite.h"

/* Five records tagged m, metadata n = 1..5, written a tick apart. */
static json_t *five(conf_ctx *cx, const char *m)
{
	json_t *recs = json_array();
	for (int i = 1; i <= 5; i++) {
		json_t *r = conf_record(cx, conf_str(cx, "%s number %d", m, i), m);
		json_object_set_new(json_object_get(r, "metadata"), "n", json_integer(i));
		if (i % 2)
			json_object_set_new(json_object_get(r, "metadata"), "odd", json_true());
		json_array_append_new(recs, r);
	}
	return conf_remember(cx, recs);
}

/* timeline {where: {cfm: m, <field>: <ops>}}: the contents' numbers, as a string "1 3 5". */
static const char *numbers(conf_ctx *cx, const char *m, const char *field, const char *ops)
{
	json_t *where = json_pack("{s:s}", "cfm", m);
	json_t *v = conf_json(cx, ops);
	json_object_set_new(where, field, v ? json_incref(v) : json_null());
	json_t *recs = conf_timeline(cx, json_pack("{s:o}", "where", where));
	if (!recs)
		return NULL;
	char buf[64] = "";
	size_t at = 0;
	for (size_t i = 0; i < json_array_size(recs); i++) {
		const char *c = conf_str_of(json_array_get(recs, i), "content");
		const char *d = c ? strrchr(c, ' ') : NULL;
		at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s", at ? " " : "", d ? d + 1 : "?");
		if (at >= sizeof buf)
			break;
	}
	return conf_str(cx, "%s", buf);
}

static void check_operators(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	if (!conf_need_writes(cx) || !five(cx, m))
		return;
	static const struct { const char *field, *ops, *want; } cases[] = {
		{"n", "{\"$gt\":2}", "3 4 5"},
		{"n", "{\"$gte\":2,\"$lt\":4}", "2 3"},
		{"n", "{\"$lte\":1.5}", "1"},
		{"n", "{\"$ne\":3}", "1 2 4 5"},
		{"n", "{\"$in\":[1,5,9]}", "1 5"},
		{"n", "{\"$nin\":[1,5]}", "2 3 4"},
		{"odd", "{\"$exists\":true}", "1 3 5"},
		{"odd", "{\"$exists\":false}", "2 4"},
		{"n", "{\"$not\":{\"$gt\":1,\"$lt\":5}}", "1 5"},
		{"n", "{\"$gt\":\"2020-01-01T00:00:00Z\"}", ""},
		{"content", "{\"$prefix\":\"nothing starts so\"}", ""},
	};
	for (size_t i = 0; i < CONF_COUNT(cases); i++) {
		const char *got = numbers(cx, m, cases[i].field, cases[i].ops);
		if (!got)
			return;
		if (strcmp(got, cases[i].want) != 0) {
			conf_fail(cx, "where {\"%s\": %s} selected %s, expected %s", cases[i].field,
				  cases[i].ops, *got ? got : "nothing",
				  *cases[i].want ? cases[i].want : "nothing");
			return;
		}
	}
	conf_pass(cx);
}

/* A range of created_at selects by time: the records written after a mark. */
static void check_created_range(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[] = {"before", "after one", "after two"};
	if (!conf_need_writes(cx))
		return;
	json_t *ids = conf_write_each(cx, m, texts, 3);
	json_t *all = ids ? conf_timeline_of(cx, m) : NULL;
	if (!all || !conf_expect_count(cx, "timeline of the three", all, 3))
		return;
	const char *second = conf_str_of(json_array_get(all, 1), "created_at");
	json_t *where = json_pack("{s:s, s:{s:s}}", "cfm", m, "created_at", "$gte", second);
	json_t *recs = conf_timeline(cx, json_pack("{s:o}", "where", where));
	if (!recs)
		return;
	const char *want[] = {conf_str(cx, "%s", conf_str_of(json_array_get(all, 1), "content")),
			      conf_str(cx, "%s", conf_str_of(json_array_get(all, 2), "content"))};
	if (conf_contents_are(cx, "timeline where created_at $gte the second's", recs, want, 2))
		conf_pass(cx);
}

/* Unknown operators: refused everywhere, and forget deletes nothing. */
static void check_unknown_refused(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	if (!conf_need_writes(cx) || !five(cx, m))
		return;
	static const char *const methods[] = {"memory/recall", "memory/timeline", "memory/forget"};
	for (size_t i = 0; i < CONF_COUNT(methods); i++) {
		json_t *p = json_pack("{s:{s:s, s:{s:i}}}", "where", "cfm", m, "n", "$between", 2);
		if (!conf_expect_error(cx, methods[i], p, CONF_INVALID_PARAMS, 0))
			return;
	}
	json_t *left = conf_timeline_of(cx, m);
	if (left && conf_expect_count(cx, "records after a refused forget", left, 5))
		conf_pass(cx);
}

static void check_described(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *x = json_object_get(conf_describe(cx), "x-where");
	const json_t *ops = json_object_get(x, "operators");
	if (!json_is_array(ops) || json_array_size(ops) == 0) {
		conf_fail(cx, "describe's x-where is %s, expected {\"operators\": [...]}",
			  conf_show(cx, x));
		return;
	}
	conf_pass(cx);
}

static const conf_check xwhere_checks[] = {
	{"describe lists x-where's operators", check_described, NULL},
	{"$gt, $gte, $lt, $lte, $ne, $in, $nin, $exists, $not and $prefix select exactly",
	 check_operators, NULL},
	{"a range of created_at selects the records written in it", check_created_range, NULL},
	{"an unknown operator is -32602 on recall, timeline and forget, and deletes nothing",
	 check_unknown_refused, NULL},
};

const conf_group conf_group_xwhere = {"x-where", "x-where", xwhere_checks,
				      CONF_COUNT(xwhere_checks), 0};
