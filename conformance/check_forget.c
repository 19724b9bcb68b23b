/*
** check_forget.c — the core/forget group: memory/forget (spec §4.5)
** by ids, where and query; a forget that selects nothing is refused, and
** one forgets only the caller's records.
**
** Each check writes its own records, tagged with a fresh marker, and finds
** them again by it; nothing here relies on the store being empty or on
** what an earlier check left behind. Where a check needs records with
** distinct creation times it writes them in separate calls a few
** milliseconds apart (conf_tick); where it needs equal ones it writes one
** batch.
*/
#include <stdlib.h>
#include <string.h>

#include "suite.h"

/* ---- core/forget (spec §4.5) ---- */

/* A forget that selects nothing must be refused (params JSON text or NULL). */
static void check_forget_no_selector(conf_ctx *cx, const void *arg)
{
	if (!conf_need_writes(cx))
		return;
	json_t *params = arg ? conf_json(cx, arg) : NULL;
	if (arg && !params)
		return;
	if (conf_expect_error(cx, "memory/forget", json_incref(params), CONF_INVALID_PARAMS, 0))
		conf_pass(cx);
}

/*
** Only owner selects nothing either (spec §4.5). Without scopes, owner is
** also a field of an undeclared capability, which §7 lets a server refuse
** with -32003 — and refusing it is the safer reading for a delete, since
** ignoring it would widen what a later forget with a selector removes.
*/
static void check_forget_only_owner(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_need_writes(cx))
		return;
	int alt = conf_has_capability(cx, "scopes") ? 0 : CONF_CAPABILITY_NOT_SUPPORTED;
	if (conf_expect_error(cx, "memory/forget", json_pack("{s:s}", "owner", "someone"),
			      CONF_INVALID_PARAMS, alt))
		conf_pass(cx);
}

/* The forgotten count of a forget result; fails the check if malformed. */
static int forgotten(conf_ctx *cx, json_t *result, int64_t *n)
{
	json_t *f = json_object_get(result, "forgotten");
	if (!json_is_integer(f) || json_integer_value(f) < 0) {
		conf_fail(cx, "forget returned %s, expected {\"forgotten\": integer}",
			  conf_show(cx, result));
		return 0;
	}
	*n = json_integer_value(f);
	return 1;
}

static int forget_counts(conf_ctx *cx, json_t *params, int64_t want)
{
	/* Kept, so the failure message below can still show it. */
	conf_keep(cx, params);
	json_t *result = conf_result(cx, "memory/forget", json_incref(params));
	int64_t n;
	if (!result || !forgotten(cx, result, &n))
		return 0;
	if (n != want) {
		conf_fail(cx, "forget %s reported %lld forgotten, expected %lld",
			  conf_show(cx, params), (long long)n, (long long)want);
		return 0;
	}
	return 1;
}

static void check_forget_ids(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s doomed one", m), conf_str(cx, "%s survivor", m),
			       conf_str(cx, "%s doomed two", m)};
	json_t *ids = conf_write_batch(cx, m, texts, 3);
	if (!ids)
		return;
	if (!forget_counts(cx, json_pack("{s:[O,O]}", "ids", json_array_get(ids, 0),
					 json_array_get(ids, 2)), 2))
		return;
	json_t *found = conf_find(cx, m);
	if (!found || !conf_contents_are(cx, "recall after forgetting two of three", found,
				    &texts[1], 1))
		return;
	json_t *line = conf_timeline_of(cx, m);
	if (line && conf_contents_are(cx, "timeline after forgetting two of three", line, &texts[1], 1))
		conf_pass(cx);
}

static void check_forget_unknown_ids(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *text = conf_str(cx, "%s real", m);
	json_t *ids = conf_write_batch(cx, m, &text, 1);
	if (!ids)
		return;
	const char *ghost = conf_str(cx, "no-such-id-%s", m);
	if (!forget_counts(cx, json_pack("{s:[s]}", "ids", ghost), 0))
		return;
	if (forget_counts(cx, json_pack("{s:[s,O]}", "ids", ghost, json_array_get(ids, 0)), 1))
		conf_pass(cx);
}

static void check_forget_result_shape(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_need_writes(cx))
		return;
	json_t *result = conf_result(cx, "memory/forget",
				     json_pack("{s:[s]}", "ids",
					       conf_str(cx, "no-such-id-%s", conf_marker(cx))));
	int64_t n;
	if (result && forgotten(cx, result, &n))
		conf_pass(cx);
}

/*
** Before a forget by a filter, the same filter is read back: if it selects
** anything but this check's records, the server's filtering is broken and a
** forget with it could delete records that are not ours. Fails the check
** and returns 0 then.
*/
static int selects_only(conf_ctx *cx, const json_t *records, const char *word)
{
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		const char *c = conf_str_of(rec, "content");
		if (!c || !strstr(c, word)) {
			conf_skip(cx, "reading the filter back returns %s, which it should not "
				  "select: not risking a forget with it",
				  conf_show(cx, json_object_get(rec, "content")));
			return 0;
		}
	}
	return 1;
}

static void check_forget_where(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *doomed = conf_marker(cx), *kept = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s first", doomed), conf_str(cx, "%s second", doomed),
			       conf_str(cx, "%s third", doomed)};
	const char *keep_text = conf_str(cx, "%s stays", kept);
	if (!conf_write_batch(cx, doomed, texts, 3) || !conf_write_batch(cx, kept, &keep_text, 1))
		return;
	json_t *preview = conf_timeline(cx, json_pack("{s:{s:s}}", "where", "cfm", doomed));
	if (!preview || !selects_only(cx, preview, doomed))
		return;
	if (!forget_counts(cx, json_pack("{s:{s:s}}", "where", "cfm", doomed), 3))
		return;
	json_t *gone = conf_find(cx, doomed);
	if (!conf_expect_count(cx, "recall after forget by where", gone, 0))
		return;
	json_t *still = conf_find(cx, kept);
	if (conf_expect_count(cx, "the record outside the filter", still, 1))
		conf_pass(cx);
}

static void check_forget_query(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx), *doomed = conf_marker(cx), *kept = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s %s goes", m, doomed),
			       conf_str(cx, "%s %s stays", m, kept)};
	if (!conf_write_batch(cx, m, texts, 2))
		return;
	json_t *preview = conf_recall(cx, json_pack("{s:s,s:i}", "query", doomed, "limit", 0));
	if (!preview || !selects_only(cx, preview, doomed))
		return;
	if (!forget_counts(cx, json_pack("{s:s}", "query", doomed), 1))
		return;
	json_t *left = conf_timeline_of(cx, m);
	if (left && conf_contents_are(cx, "after forget by query", left, &texts[1], 1))
		conf_pass(cx);
}

static void check_forget_invalid(conf_ctx *cx, const void *arg)
{
	if (conf_need_writes(cx))
		conf_expect_invalid(cx, "memory/forget", arg);
}

/* Spec §2.1: a read-only server refuses both write methods. */
static void check_forget_read_only(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_read_only(cx)) {
		conf_skip(cx, "the server accepts writes");
		return;
	}
	if (conf_expect_error(cx, "memory/forget", json_pack("{s:[s]}", "ids", "any"),
			      CONF_READ_ONLY, 0))
		conf_pass(cx);
}

static const conf_check forget_checks[] = {
	{"no params at all is -32602", check_forget_no_selector, NULL},
	{"empty params are -32602", check_forget_no_selector, "{}"},
	{"only owner is refused (-32602; -32003 also without scopes)", check_forget_only_owner,
	 NULL},
	{"forget by ids counts them and removes them from recall and timeline",
	 check_forget_ids, NULL},
	{"unknown ids are not counted", check_forget_unknown_ids, NULL},
	{"the result is {\"forgotten\": integer}", check_forget_result_shape, NULL},
	{"forget by where removes exactly the matches", check_forget_where, NULL},
	{"forget by query removes only matching records", check_forget_query, NULL},
	{"ids that are not an array are -32602", check_forget_invalid, "{\"ids\":\"abc\"}"},
	{"a read-only server refuses forget with -32004 too", check_forget_read_only, NULL},
};

const conf_group conf_group_forget = {"core/forget", NULL, forget_checks,
				      CONF_COUNT(forget_checks), 0};
