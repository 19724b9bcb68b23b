/*
** check_read.c — the core/recall and core/timeline groups: the two
** read methods (spec §4.3, §4.4) with the ranking rules of §5 recall
** depends on, and the `where` filter they share, checked the same way for
** both.
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

/* ---- core/recall (spec §4.3, §5) ---- */

/* Every record scored in [0, 1], scores never rising (spec §5.3). */
static int scores_ok(conf_ctx *cx, const char *what, const json_t *records)
{
	size_t i;
	json_t *rec;
	double prev = 0;
	json_array_foreach(records, i, rec) {
		json_t *score = json_object_get(rec, "score");
		if (!json_is_number(score)) {
			conf_fail(cx, "%s: record %zu has score %s, expected a number", what, i,
				  score ? conf_show(cx, score) : "(absent)");
			return 0;
		}
		double v = json_number_value(score);
		if (!(v >= 0 && v <= 1)) {
			conf_fail(cx, "%s: score %g is outside [0, 1]", what, v);
			return 0;
		}
		if (i > 0 && v > prev) {
			conf_fail(cx, "%s: score %g follows %g; scores must descend", what, v, prev);
			return 0;
		}
		prev = v;
	}
	return 1;
}

/* Three records written a tick apart; with no query they come newest first. */
static void recency_order(conf_ctx *cx, json_t *params)
{
	const char *m = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s oldest", m), conf_str(cx, "%s middle", m),
			       conf_str(cx, "%s newest", m)};
	const char *newest_first[] = {texts[2], texts[1], texts[0]};
	if (!conf_write_each(cx, m, texts, 3)) {
		json_decref(params);
		return;
	}
	json_object_set_new(params, "where", json_pack("{s:s}", "cfm", m));
	json_t *records = conf_recall(cx, params);
	if (records && scores_ok(cx, "recall", records) &&
	    conf_contents_are(cx, "recall without a query", conf_tagged(cx, records, m), newest_first, 3))
		conf_pass(cx);
}

static void check_recall_no_query(conf_ctx *cx, const void *arg)
{
	(void)arg;
	recency_order(cx, json_object());
}

static void check_recall_empty_query(conf_ctx *cx, const void *arg)
{
	(void)arg;
	recency_order(cx, json_pack("{s:s}", "query", ""));
}

static void check_recall_finds_word(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx), *word = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s the lighthouse keeper logs %s at dusk", m, word),
			       conf_str(cx, "%s an unrelated note about bread", m)};
	if (!conf_write_batch(cx, m, texts, 2))
		return;
	json_t *records = conf_recall(cx, json_pack("{s:s}", "query", word));
	if (!records)
		return;
	if (!conf_by_content(records, word))
		conf_fail(cx, "recall for \"%s\" did not return the record containing it", word);
	else
		conf_pass(cx);
}

static void check_recall_ranks_topic(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[] = {
		conf_str(cx, "%s the cafeteria serves tomato soup on tuesdays", m),
		conf_str(cx, "%s the deploy key rotates every ninety days; deploy key rotation "
			 "is automatic", m),
		conf_str(cx, "%s the parking garage closes at midnight", m),
	};
	if (!conf_write_batch(cx, m, texts, 3))
		return;
	json_t *records = conf_recall(cx, json_pack("{s:s,s:{s:s}}", "query", "deploy key rotation",
					       "where", "cfm", m));
	if (!records)
		return;
	if (json_array_size(records) == 0) {
		conf_fail(cx, "recall for \"deploy key rotation\" returned nothing");
		return;
	}
	const char *first = conf_str_of(json_array_get(records, 0), "content");
	if (!first || strcmp(first, texts[1]) != 0)
		conf_fail(cx, "ranked %s first, above the record about deploy key rotation",
			  conf_show(cx, json_object_get(json_array_get(records, 0), "content")));
	else
		conf_pass(cx);
}

static void check_recall_no_match(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *text = conf_str(cx, "%s something that is stored", m);
	if (!conf_write_batch(cx, m, &text, 1))
		return;
	const char *never = conf_marker(cx);
	json_t *records = conf_recall(cx, json_pack("{s:s}", "query", never));
	if (records && conf_expect_count(cx, conf_str(cx, "recall for \"%s\", written nowhere", never),
				    records, 0))
		conf_pass(cx);
}

/* Writes n records containing a fresh marker, in one batch; returns it. */
static const char *write_many(conf_ctx *cx, size_t n)
{
	const char *m = conf_marker(cx);
	json_t *records = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(records, conf_record(cx, conf_str(cx, "%s item %zu", m, i), m));
	return conf_remember(cx, records) ? m : NULL;
}

#define MANY 30

static void check_recall_default_limit(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, MANY);
	json_t *records = m ? conf_recall(cx, json_pack("{s:s}", "query", m)) : NULL;
	if (!records)
		return;
	size_t n = json_array_size(records);
	int64_t max = conf_server_limits(cx)->max_recall_limit;
	if (n == 0)
		conf_fail(cx, "recall without a limit returned nothing");
	else if (max && (int64_t)n > max)
		conf_fail(cx, "returned %zu records, over max_recall_limit %lld", n, (long long)max);
	else
		conf_pass(cx);
}

static void check_recall_limit_one(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, 3);
	json_t *records = m ? conf_recall(cx, json_pack("{s:s,s:i}", "query", m, "limit", 1)) : NULL;
	if (!conf_expect_count(cx, "recall with limit 1", records, 1))
		return;
	if (!conf_by_content(records, m))
		conf_fail(cx, "the one record returned does not contain the query");
	else
		conf_pass(cx);
}

/* Spec §4.3: limit 0 is "no limit" only when no max_recall_limit is declared. */
static void check_recall_limit_zero(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, MANY);
	json_t *records = m ? conf_recall(cx, json_pack("{s:s,s:i}", "query", m, "limit", 0)) : NULL;
	if (!records)
		return;
	int64_t max = conf_server_limits(cx)->max_recall_limit;
	size_t n = 0;
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		const char *c = conf_str_of(rec, "content");
		if (c && strstr(c, m))
			n++;
	}
	if (!max) {
		if (n != MANY)
			conf_fail(cx, "limit 0 with no max_recall_limit returned %zu of the %d "
				  "matching records, expected all", n, MANY);
		else
			conf_pass(cx);
	} else if ((int64_t)json_array_size(records) > max) {
		conf_fail(cx, "limit 0 returned %zu records, over max_recall_limit %lld",
			  json_array_size(records), (long long)max);
	} else if (n == 0) {
		conf_fail(cx, "limit 0 returned none of the matching records");
	} else {
		conf_pass(cx);
	}
}

static void check_recall_limit_over_max(conf_ctx *cx, const void *arg)
{
	(void)arg;
	int64_t max = conf_server_limits(cx)->max_recall_limit;
	if (!max) {
		conf_skip(cx, "describe declares no max_recall_limit");
		return;
	}
	if (conf_expect_error(cx, "memory/recall",
			      json_pack("{s:s,s:I}", "query", "anything", "limit",
					(json_int_t)(max + 1)),
			      CONF_INVALID_PARAMS, CONF_QUOTA_EXCEEDED))
		conf_pass(cx);
}

static void check_recall_invalid(conf_ctx *cx, const void *arg)
{
	conf_expect_invalid(cx, "memory/recall", arg);
}

static void check_recall_min_score_high(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, 2);
	json_t *records = m ? conf_recall(cx, json_pack("{s:s,s:f}", "query", m, "min_score", 2.0))
			    : NULL;
	if (records && conf_expect_count(cx, "recall with min_score 2.0", records, 0))
		conf_pass(cx);
}

static void check_recall_min_score_zero(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, 3);
	json_t *records = m ? conf_recall(cx, json_pack("{s:s,s:f,s:{s:s}}", "query", m, "min_score",
						   0.0, "where", "cfm", m))
			    : NULL;
	if (records && conf_expect_count(cx, "recall with min_score 0", conf_tagged(cx, records, m), 3))
		conf_pass(cx);
}

static void check_recall_scores(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[] = {
		conf_str(cx, "%s once", m),
		conf_str(cx, "%s %s twice", m, m),
		conf_str(cx, "%s and a much longer record about other things entirely, "
			 "mentioning it only in passing among many other words", m),
	};
	if (!conf_write_batch(cx, m, texts, 3))
		return;
	json_t *with_query = conf_recall(cx, json_pack("{s:s}", "query", m));
	if (!with_query || !scores_ok(cx, "recall with a query", with_query))
		return;
	if (json_array_size(with_query) == 0) {
		conf_fail(cx, "recall for the marker returned nothing");
		return;
	}
	json_t *without = conf_recall(cx, json_pack("{s:i}", "limit", 10));
	if (without && scores_ok(cx, "recall without a query", without))
		conf_pass(cx);
}

/* Writes four records with roles and colours, for the where checks. */
static const char *write_palette(conf_ctx *cx, const char *texts[4])
{
	static const char *const roles[] = {"user", "assistant", "user", "tool"};
	static const char *const colours[] = {"red", "blue", "green", "blue"};
	const char *m = conf_marker(cx);
	json_t *records = json_array();
	for (size_t i = 0; i < 4; i++) {
		texts[i] = conf_str(cx, "%s %s record said by the %s", m, colours[i], roles[i]);
		json_t *rec = conf_record(cx, texts[i], m);
		json_object_set_new(rec, "role", json_string(roles[i]));
		json_object_set_new(json_object_get(rec, "metadata"), "colour",
				    json_string(colours[i]));
		json_array_append_new(records, rec);
	}
	return conf_remember(cx, records) ? m : NULL;
}

/* The contents of records, sorted, compared as a set with want[0..n). */
static int same_set(conf_ctx *cx, const char *what, const json_t *records,
		    const char *const *want, size_t n)
{
	int same = json_array_size(records) == n;
	for (size_t i = 0; same && i < n; i++)
		same = conf_by_content(records, want[i]) != NULL;
	if (!same) {
		json_t *got = conf_keep(cx, json_array());
		size_t i;
		json_t *rec;
		json_array_foreach(records, i, rec)
			json_array_append(got, json_object_get(rec, "content"));
		conf_fail(cx, "%s returned %s", what, conf_show(cx, got));
	}
	return same;
}

/* Runs recall or timeline with where = {"cfm": marker} plus filter (JSON
** text), and checks the records are exactly those of texts picked by mask. */
static void check_where(conf_ctx *cx, const char *method, const char *filter, unsigned mask)
{
	const char *texts[4];
	const char *m = write_palette(cx, texts);
	if (!m)
		return;
	json_t *where = conf_json(cx, filter);
	if (!where)
		return;
	json_t *params = json_pack("{s:{s:s}}", "where", "cfm", m);
	json_object_update(json_object_get(params, "where"), where);
	json_t *records = strcmp(method, "memory/recall") == 0 ? conf_recall(cx, params)
							      : conf_timeline(cx, params);
	const char *want[4];
	size_t n = 0;
	for (size_t i = 0; i < 4; i++) {
		if (mask & (1u << i))
			want[n++] = texts[i];
	}
	if (!records)
		return;
	if (strcmp(method, "memory/timeline") == 0) {
		/* One batch: the order written is the order read (spec §4.4). */
		if (conf_contents_are(cx, conf_str(cx, "timeline where %s", filter), records, want, n))
			conf_pass(cx);
	} else if (same_set(cx, conf_str(cx, "recall where %s", filter), records, want, n)) {
		conf_pass(cx);
	}
}

typedef struct where_case {
	const char *filter;
	unsigned mask; /* which of the four palette records match */
} where_case;

static const where_case where_role = {"{\"role\":\"user\"}", 0x5};
static const where_case where_meta = {"{\"colour\":\"blue\"}", 0xa};
static const where_case where_any = {"{\"colour\":[\"red\",\"green\"]}", 0x5};
static const where_case where_none = {"{\"colour\":\"purple\"}", 0x0};
static const where_case where_unknown_key = {"{\"zz_no_such_key\":\"x\"}", 0x0};

static void check_recall_where(conf_ctx *cx, const void *arg)
{
	const where_case *w = arg;
	check_where(cx, "memory/recall", w->filter, w->mask);
}

static void check_timeline_where(conf_ctx *cx, const void *arg)
{
	const where_case *w = arg;
	check_where(cx, "memory/timeline", w->filter, w->mask);
}

/* Spec §3.1: id, content and created_at are required on every record. */
static int records_complete(conf_ctx *cx, const char *what, const json_t *records)
{
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		const char *id = conf_str_of(rec, "id");
		if (!id || !*id || !json_is_string(json_object_get(rec, "content")) ||
		    !conf_is_wire_timestamp(conf_str_of(rec, "created_at"))) {
			conf_fail(cx, "%s: record %s lacks a string id, a string content or an "
				  "RFC 3339 created_at", what, conf_show(cx, rec));
			return 0;
		}
	}
	return 1;
}

static void check_recall_record_fields(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, 3);
	json_t *records = m ? conf_recall(cx, json_pack("{s:s}", "query", m)) : NULL;
	if (!records)
		return;
	if (json_array_size(records) == 0)
		conf_fail(cx, "recall for the marker returned nothing");
	else if (records_complete(cx, "recall", records))
		conf_pass(cx);
}

static void check_recall_unknown_params(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, 1);
	json_t *records = m ? conf_recall(cx, json_pack("{s:s,s:{s:i},s:s}", "query", m,
						   "zz_future_param", "x", 1, "zz_mode", "fast"))
			    : NULL;
	if (records && conf_expect_count(cx, "recall", conf_tagged(cx, records, m), 1))
		conf_pass(cx);
}

/*
** Spec §4.16: a server that does not declare "prompt" ignores the parameter
** as it ignores any it does not know (§2), and answers with the records
** alone — on recall and on timeline, whatever shape the parameter takes.
*/
static void check_prompt_ignored(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (conf_has_capability(cx, "prompt")) {
		conf_skip(cx, "the server declares \"prompt\"; the prompt group checks it");
		return;
	}
	const char *m = write_many(cx, 1);
	if (!m)
		return;
	static const char *const shapes[] = {"true", "{\"method\":\"template\",\"budget\":1}",
					     "\"yes\""};
	for (size_t i = 0; i < CONF_COUNT(shapes) * 2; i++) {
		const char *method = i % 2 ? "memory/timeline" : "memory/recall";
		json_t *params = i % 2 ? json_pack("{s:{s:s}}", "where", "cfm", m)
				       : json_pack("{s:s}", "query", m);
		json_object_set_new(params, "prompt", json_incref(conf_json(cx, shapes[i / 2])));
		json_t *r = conf_result(cx, method, params);
		json_t *records = json_object_get(r, "records");
		if (!r)
			return;
		const char *what = conf_str(cx, "%s with prompt %s", method, shapes[i / 2]);
		if (json_object_get(r, "prompt") || json_object_get(r, "prompt_ids")) {
			conf_fail(cx, "%s rendered, though the server does not declare \"prompt\": %s",
				  what, conf_show(cx, r));
			return;
		}
		if (!conf_expect_count(cx, what, conf_tagged(cx, records, m), 1))
			return;
	}
	conf_pass(cx);
}

static const conf_check recall_checks[] = {
	{"without a query, records come newest first", check_recall_no_query, NULL},
	{"an empty query behaves like no query", check_recall_empty_query, NULL},
	{"a query finds the record containing its word", check_recall_finds_word, NULL},
	{"a topical match ranks above unrelated records", check_recall_ranks_topic, NULL},
	{"a query matching nothing returns no records", check_recall_no_match, NULL},
	{"without a limit, a default applies", check_recall_default_limit, NULL},
	{"limit 1 returns one record", check_recall_limit_one, NULL},
	{"limit 0 is no limit, or capped by max_recall_limit", check_recall_limit_zero, NULL},
	{"limit over max_recall_limit is refused", check_recall_limit_over_max, NULL},
	{"a negative limit is -32602", check_recall_invalid, "{\"query\":\"x\",\"limit\":-1}"},
	{"a fractional limit is -32602", check_recall_invalid, "{\"query\":\"x\",\"limit\":1.5}"},
	{"a string limit is -32602", check_recall_invalid, "{\"query\":\"x\",\"limit\":\"3\"}"},
	{"a query that is not a string is -32602", check_recall_invalid, "{\"query\":42}"},
	{"where that is not an object is -32602", check_recall_invalid,
	 "{\"query\":\"x\",\"where\":\"role=user\"}"},
	{"min_score 2.0 returns nothing", check_recall_min_score_high, NULL},
	{"min_score 0 returns every match", check_recall_min_score_zero, NULL},
	{"every score is a number in [0, 1], descending", check_recall_scores, NULL},
	{"where matches a record field (role)", check_recall_where, &where_role},
	{"where matches a metadata key", check_recall_where, &where_meta},
	{"where with an array value means any of", check_recall_where, &where_any},
	{"where with a value nobody has returns nothing", check_recall_where, &where_none},
	{"where on a key nobody has returns nothing", check_recall_where, &where_unknown_key},
	{"records carry id, content and created_at", check_recall_record_fields, NULL},
	{"unknown params are ignored", check_recall_unknown_params, NULL},
	{"prompt is ignored, on recall and timeline, when it is not declared",
	 check_prompt_ignored, NULL},
};

const conf_group conf_group_recall = {"core/recall", NULL, recall_checks,
				      CONF_COUNT(recall_checks), 0};

/* ---- core/timeline (spec §4.4) ---- */

static int ascending(conf_ctx *cx, const char *what, const json_t *records)
{
	size_t i;
	json_t *rec;
	int64_t prev = 0;
	json_array_foreach(records, i, rec) {
		int64_t ms;
		const char *at = conf_str_of(rec, "created_at");
		if (!at || conf_parse_time(at, &ms) != 0) {
			conf_fail(cx, "%s: record %zu has created_at %s", what, i,
				  conf_show(cx, json_object_get(rec, "created_at")));
			return 0;
		}
		if (i > 0 && ms < prev) {
			conf_fail(cx, "%s: %s follows a later record; timeline must ascend", what, at);
			return 0;
		}
		prev = ms;
	}
	return 1;
}

static void check_timeline_ascending(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s first", m), conf_str(cx, "%s second", m),
			       conf_str(cx, "%s third", m)};
	if (!conf_write_each(cx, m, texts, 3))
		return;
	json_t *all = conf_timeline(cx, json_pack("{s:i}", "limit", 50));
	if (!all || !ascending(cx, "timeline limit 50", all) ||
	    !records_complete(cx, "timeline", all))
		return;
	json_t *ours = conf_timeline_of(cx, m);
	if (ours && ascending(cx, "timeline of three writes", ours) &&
	    conf_contents_are(cx, "timeline of three writes", ours, texts, 3))
		conf_pass(cx);
}

/* Spec §4.4: limit N is the most recent N, still oldest first. Relies on
** nobody else writing to the store while the suite runs. */
static void check_timeline_limit_newest(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[5];
	for (size_t i = 0; i < 5; i++)
		texts[i] = conf_str(cx, "%s number %zu", m, i + 1);
	if (!conf_write_each(cx, m, texts, 5))
		return;
	json_t *records = conf_timeline(cx, json_pack("{s:i}", "limit", 3));
	if (records && conf_contents_are(cx, "timeline limit 3 after five writes", records, texts + 2, 3))
		conf_pass(cx);
}

static void check_timeline_batch_order(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s one", m), conf_str(cx, "%s two", m),
			       conf_str(cx, "%s three", m), conf_str(cx, "%s four", m),
			       conf_str(cx, "%s five", m)};
	if (!conf_write_batch(cx, m, texts, 5))
		return;
	for (int call = 1; call <= 2; call++) {
		json_t *records = conf_timeline_of(cx, m);
		if (!records || !conf_contents_are(cx, conf_str(cx, "timeline call %d", call), records,
					      texts, 5))
			return;
	}
	json_t *newest = conf_timeline(cx, json_pack("{s:i}", "limit", 5));
	if (newest && conf_contents_are(cx, "timeline limit 5", newest, texts, 5))
		conf_pass(cx);
}

static void check_timeline_invalid(conf_ctx *cx, const void *arg)
{
	conf_expect_invalid(cx, "memory/timeline", arg);
}

static void check_timeline_unknown_params(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, 1);
	json_t *records = m ? conf_timeline(cx, json_pack("{s:{s:s},s:b}", "where", "cfm", m,
						     "zz_future_param", 1))
			    : NULL;
	if (records && conf_expect_count(cx, "timeline", conf_tagged(cx, records, m), 1))
		conf_pass(cx);
}

static const conf_check timeline_checks[] = {
	{"records ascend by created_at", check_timeline_ascending, NULL},
	{"limit N returns the newest N, oldest first", check_timeline_limit_newest, NULL},
	{"one batch reads back in the order written, every time", check_timeline_batch_order,
	 NULL},
	{"where matches a record field (role)", check_timeline_where, &where_role},
	{"where matches a metadata key", check_timeline_where, &where_meta},
	{"where with an array value means any of", check_timeline_where, &where_any},
	{"a negative limit is -32602", check_timeline_invalid, "{\"limit\":-1}"},
	{"a string limit is -32602", check_timeline_invalid, "{\"limit\":\"3\"}"},
	{"unknown params are ignored", check_timeline_unknown_params, NULL},
};

const conf_group conf_group_timeline = {"core/timeline", NULL, timeline_checks,
					CONF_COUNT(timeline_checks), 0};
