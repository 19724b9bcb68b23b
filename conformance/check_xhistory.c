/*
** check_xhistory.c — checks of our x-history extension (docs/PROTOCOL.md,
** Extensions): a keyed record's earlier revisions, newest first, from
** memory/fetch with `history`; bounded by a count; gone with the record
** when its key is forgotten; fetch without the parameter unchanged.
** Skipped when x-history is not declared (it needs keys to mean anything).
*/
#include <string.h>

#include "suite.h"

/* Writes "<m> v<i>" at key for i in [from, to). 1, or 0 after failing. */
static int rewrite(conf_ctx *cx, const char *m, const char *key, int from, int to)
{
	for (int i = from; i < to; i++) {
		json_t *r = conf_record(cx, conf_str(cx, "%s v%d", m, i), m);
		json_object_set_new(r, "key", json_string(key));
		if (!conf_remember(cx, json_pack("[o]", r)))
			return 0;
	}
	return 1;
}

/* fetch {key, history}: the result, checked to carry a history array. */
static json_t *fetch_history(conf_ctx *cx, const char *key, json_t *history)
{
	json_t *r = conf_result(cx, "memory/fetch", json_pack("{s:s, s:o}", "key", key,
							     "history", history));
	if (r && !json_is_array(json_object_get(r, "history"))) {
		conf_fail(cx, "fetch with history answered %s, expected a history array",
			  conf_show(cx, r));
		return NULL;
	}
	return r;
}

static void check_revisions(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *key = conf_str(cx, "cf/%s/fact", m);
	if (!conf_need_writes(cx) || !rewrite(cx, m, key, 0, 3))
		return;
	json_t *r = fetch_history(cx, key, json_true());
	if (!r)
		return;
	json_t *h = json_object_get(r, "history");
	const char *cur = conf_str_of(json_object_get(r, "record"), "content");
	if (!cur || !strstr(cur, " v2") || json_array_size(h) != 2) {
		conf_fail(cx, "after three writes to a key, fetch with history answered %s, "
			  "expected v2 with v1 and v0 behind it", conf_show(cx, r));
		return;
	}
	for (int i = 0; i < 2; i++) {
		json_t *e = json_array_get(h, (size_t)i);
		const char *c = conf_str_of(e, "content");
		json_t *rev = json_object_get(e, "revision");
		int64_t at;
		if (!c || !strstr(c, conf_str(cx, " v%d", 1 - i)) || !json_is_integer(rev) ||
		    json_integer_value(rev) != 1 - i || !conf_str_of(e, "superseded_at") ||
		    conf_parse_time(conf_str_of(e, "superseded_at"), &at) != 0) {
			conf_fail(cx, "history[%d] is %s, expected revision %d saying v%d with a "
				  "superseded_at time", i, conf_show(cx, e), 1 - i, 1 - i);
			return;
		}
	}
	r = fetch_history(cx, key, json_integer(1));
	if (!r)
		return;
	if (json_array_size(json_object_get(r, "history")) != 1) {
		conf_fail(cx, "fetch with history 1 answered %s", conf_show(cx, r));
		return;
	}
	conf_pass(cx);
}

static void check_forgotten_with_the_key(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *key = conf_str(cx, "cf/%s/gone", m);
	if (!conf_need_writes(cx) || !rewrite(cx, m, key, 0, 2))
		return;
	json_t *f = conf_result(cx, "memory/forget", json_pack("{s:s}", "key_prefix", key));
	if (!f || !rewrite(cx, m, key, 5, 6))
		return;
	json_t *r = fetch_history(cx, key, json_true());
	if (!r)
		return;
	if (json_array_size(json_object_get(r, "history")) != 0) {
		conf_fail(cx, "a key forgotten and written again still has history %s",
			  conf_show(cx, json_object_get(r, "history")));
		return;
	}
	conf_pass(cx);
}

static void check_plain_fetch(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *key = conf_str(cx, "cf/%s/plain", m);
	if (!conf_need_writes(cx) || !rewrite(cx, m, key, 0, 2))
		return;
	json_t *r = conf_result(cx, "memory/fetch", json_pack("{s:s}", "key", key));
	if (r && json_object_get(r, "history")) {
		conf_fail(cx, "fetch without history answered %s", conf_show(cx, r));
		return;
	}
	if (r)
		conf_pass(cx);
}

static void check_bad_history(conf_ctx *cx, const void *arg)
{
	(void)arg;
	conf_expect_invalid(cx, "memory/fetch", "{\"key\":\"cf/any\",\"history\":-1}");
}

static void check_described(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *x = json_object_get(conf_describe(cx), "x-history");
	json_t *n = json_object_get(x, "revisions");
	if (!json_is_integer(n) || json_integer_value(n) < 1) {
		conf_fail(cx, "describe's x-history is %s, expected {\"revisions\": N >= 1}",
			  conf_show(cx, x));
		return;
	}
	if (!conf_has_capability(cx, "keys")) {
		conf_fail(cx, "x-history is declared without keys");
		return;
	}
	conf_pass(cx);
}

static const conf_check xhistory_checks[] = {
	{"describe says how many revisions a key keeps", check_described, NULL},
	{"fetch with history returns the earlier revisions, newest first, bounded by a count",
	 check_revisions, NULL},
	{"forgetting a key forgets its history", check_forgotten_with_the_key, NULL},
	{"fetch without history answers as without the extension", check_plain_fetch, NULL},
	{"fetch with a negative history is -32602", check_bad_history, NULL},
};

const conf_group conf_group_xhistory = {"x-history", "x-history", xhistory_checks,
					CONF_COUNT(xhistory_checks), 0};
