/*
** check_readonly.c — the read-only profile (spec §2.1; DECISIONS
** 001): a server may refuse every write with -32004 READ_ONLY and still be
** conformant, provided it refuses them all, every time, and keeps serving
** describe, recall and timeline normally.
**
** These checks run only against such a server — one that refused a write,
** or refuses the probe conf_probe_read_only makes — and skip against any
** other. They write nothing, so they judge a pre-existing corpus on what is
** already in it: point the suite at a populated store served read-only.
*/
#include <string.h>

#include "suite.h"

/* How many times each write is sent: a refusal must not wear off. */
#define TRIES 2

/* Whether the server refuses writes; skips the check when it does not. */
static int read_only(conf_ctx *cx)
{
	int ro = conf_probe_read_only(cx);
	if (ro == 0)
		conf_skip(cx, "the server accepts writes");
	return ro == 1;
}

/* Skips the check unless cap is declared. */
static int declared(conf_ctx *cx, const char *cap)
{
	if (conf_has_capability(cx, cap))
		return 1;
	conf_skip(cx, "the server does not declare \"%s\"", cap);
	return 0;
}

/* A few records of the store, newest last; NULL after failing. */
static json_t *some_records(conf_ctx *cx, int limit)
{
	json_t *r = conf_result(cx, "memory/timeline", json_pack("{s:i}", "limit", limit));
	json_t *records = json_object_get(r, "records");
	if (r && !json_is_array(records)) {
		conf_fail(cx, "timeline returned no records array: %s", conf_show(cx, r));
		return NULL;
	}
	return records;
}

/* The id of some record in the store, or a made-up one when it is empty. */
static const char *some_id(conf_ctx *cx)
{
	json_t *records = some_records(cx, 1);
	const char *id = json_string_value(json_object_get(json_array_get(records, 0), "id"));
	return id ? id : conf_str(cx, "cf-no-such-%s", conf_marker(cx));
}

/*
** Sends method with params (stolen; NULL for none) TRIES times and requires
** -32004 each time. alt, when not 0, is also accepted (for a call that is
** malformed as well as a write). Returns 1, or 0 after failing.
*/
static int refused(conf_ctx *cx, const char *method, json_t *params, int alt)
{
	conf_keep(cx, params);
	for (int i = 0; i < TRIES; i++) {
		json_t *resp = conf_call(cx, method, params ? json_incref(params) : NULL);
		int code;
		if (!resp)
			return 0;
		if (!conf_error_code(resp, &code) || (code != CONF_READ_ONLY && code != alt)) {
			conf_fail(cx, "%s %s answered %s%s, expected -32004 (spec §2.1: refuse "
				  "every write, consistently)", method,
				  params ? conf_show(cx, params) : "", conf_show(cx, resp),
				  i ? " the second time" : "");
			return 0;
		}
	}
	return 1;
}

/* The ids of records, in order. */
static json_t *ids_of(conf_ctx *cx, const json_t *records)
{
	json_t *ids = conf_keep(cx, json_array());
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec)
		json_array_append(ids, json_object_get(rec, "id"));
	return ids;
}

/* ---- writes ---- */

static void check_remember(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!read_only(cx))
		return;
	const char *m = conf_marker(cx);
	json_t *plain = json_pack("{s:[o]}", "records",
				  conf_record(cx, conf_str(cx, "%s refused", m), m));
	json_t *with_id = conf_record(cx, conf_str(cx, "%s refused too", m), m);
	json_object_set_new(with_id, "id", json_string(conf_str(cx, "cf-%s", m)));
	if (refused(cx, "memory/remember", plain, 0) &&
	    refused(cx, "memory/remember", json_pack("{s:[o]}", "records", with_id), 0))
		conf_pass(cx);
}

static void check_forget(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!read_only(cx))
		return;
	const char *m = conf_marker(cx);
	if (refused(cx, "memory/forget", json_pack("{s:[s]}", "ids", some_id(cx)), 0) &&
	    refused(cx, "memory/forget", json_pack("{s:{s:s}}", "where", "cfm", m), 0) &&
	    refused(cx, "memory/forget", json_pack("{s:s}", "query", m), 0))
		conf_pass(cx);
}

/* Appendix B: no selector is -32602 "unless the server is read-only". */
static void check_forget_no_selector(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (read_only(cx) && refused(cx, "memory/forget", json_object(), CONF_INVALID_PARAMS))
		conf_pass(cx);
}

static void check_summarize(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!read_only(cx) || !declared(cx, "summarize"))
		return;
	if (refused(cx, "memory/summarize", json_pack("{s:[s]}", "ids", some_id(cx)), 0))
		conf_pass(cx);
}

static void check_tiers(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!read_only(cx) || !declared(cx, "tiers"))
		return;
	json_t *tier = json_object_get(json_array_get(json_object_get(conf_describe(cx), "tiers"),
						      0), "name");
	const char *name = json_is_string(tier) ? json_string_value(tier) : "semantic";
	if (refused(cx, "memory/promote",
		    json_pack("{s:[s],s:s}", "ids", some_id(cx), "tier", name), 0) &&
	    refused(cx, "memory/consolidate", json_object(), 0))
		conf_pass(cx);
}

static void check_reinforce(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!read_only(cx) || !declared(cx, "salience"))
		return;
	if (refused(cx, "memory/reinforce",
		    json_pack("{s:[s],s:i}", "ids", some_id(cx), "amount", 1), 0))
		conf_pass(cx);
}

static void check_session_close(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!read_only(cx) || !declared(cx, "sessions"))
		return;
	/* A session the store has, when it has one: closing it would move records. */
	json_t *r = conf_result(cx, "memory/session/list", json_object());
	if (!r)
		return;
	json_t *first = json_array_get(json_object_get(r, "sessions"), 0);
	const char *session = json_string_value(json_object_get(first, "session"));
	if (!session)
		session = conf_str(cx, "cfs-%s", conf_marker(cx));
	if (refused(cx, "memory/session/close", json_pack("{s:s}", "session", session), 0))
		conf_pass(cx);
}

/* ---- reads ---- */

/* The refused writes left the store exactly as it was. */
static void check_nothing_changed(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!read_only(cx))
		return;
	json_t *before = some_records(cx, 50);
	json_t *before_ids = before ? ids_of(cx, before) : NULL;
	const char *m = conf_marker(cx);
	if (!before_ids ||
	    !refused(cx, "memory/remember",
		     json_pack("{s:[o]}", "records", conf_record(cx, m, m)), 0) ||
	    (json_array_size(before_ids) &&
	     !refused(cx, "memory/forget", json_pack("{s:O}", "ids", before_ids), 0)))
		return;
	json_t *after = some_records(cx, 50);
	if (after && !json_equal(ids_of(cx, after), before_ids))
		conf_fail(cx, "the store changed under refused writes: timeline was %s, now %s",
			  conf_show(cx, before_ids), conf_show(cx, ids_of(cx, after)));
	else if (after)
		conf_pass(cx);
}

static void check_describe(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!read_only(cx))
		return;
	json_t *r = conf_result(cx, "memory/describe",
				json_pack("{s:s}", "protocol", CONF_PROTOCOL));
	const char *protocol = json_string_value(json_object_get(r, "protocol"));
	if (r && (!protocol || strcmp(protocol, CONF_PROTOCOL) != 0 ||
		  !json_is_array(json_object_get(r, "capabilities"))))
		conf_fail(cx, "memory/describe answered %s", conf_show(cx, r));
	else if (r)
		conf_pass(cx);
}

/* recall and timeline serve the records that were there before. */
static void check_reads(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!read_only(cx))
		return;
	json_t *all = conf_result(cx, "memory/timeline", json_object());
	json_t *records = json_object_get(all, "records");
	if (!all)
		return;
	if (!json_is_array(records)) {
		conf_fail(cx, "timeline returned no records array: %s", conf_show(cx, all));
		return;
	}
	if (json_array_size(records) == 0) {
		conf_skip(cx, "the store holds no records to read back; populate it first");
		return;
	}
	json_t *r = conf_result(cx, "memory/recall", json_pack("{s:i}", "limit", 5));
	json_t *recalled = json_object_get(r, "records");
	if (!r)
		return;
	if (!json_is_array(recalled) || json_array_size(recalled) == 0) {
		conf_fail(cx, "recall without a query returned %s from a store of %zu records",
			  conf_show(cx, r), json_array_size(records));
		return;
	}
	size_t i;
	json_t *rec;
	json_array_foreach(recalled, i, rec) {
		const char *id = json_string_value(json_object_get(rec, "id"));
		json_t *same = id ? conf_by_id(records, id) : NULL;
		if (!same || !json_equal(json_object_get(same, "content"),
					 json_object_get(rec, "content"))) {
			conf_fail(cx, "recall returned %s, which timeline does not hold",
				  conf_show(cx, rec));
			return;
		}
	}
	conf_pass(cx);
}

static void check_fetch(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!read_only(cx) || !declared(cx, "keys"))
		return;
	json_t *r = conf_result(cx, "memory/timeline", json_object());
	json_t *records = json_object_get(r, "records");
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		const char *key = json_string_value(json_object_get(rec, "key"));
		if (!key)
			continue;
		json_t *f = conf_result(cx, "memory/fetch", json_pack("{s:s}", "key", key));
		json_t *got = json_object_get(f, "record");
		if (f && !json_equal(json_object_get(got, "id"), json_object_get(rec, "id")))
			conf_fail(cx, "fetch of key %s answered %s, expected record %s", key,
				  conf_show(cx, f), conf_show(cx, json_object_get(rec, "id")));
		else if (f)
			conf_pass(cx);
		return;
	}
	if (r)
		conf_skip(cx, "no record in the store has a key");
}

static void check_events(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!read_only(cx) || !declared(cx, "events"))
		return;
	json_t *r = conf_result(cx, "memory/events", json_object());
	if (r && (!json_is_array(json_object_get(r, "events")) ||
		  !json_is_string(json_object_get(r, "cursor"))))
		conf_fail(cx, "memory/events answered %s", conf_show(cx, r));
	else if (r)
		conf_pass(cx);
}

static const conf_check checks[] = {
	{"remember is -32004, every time", check_remember, NULL},
	{"forget by ids, where and query is -32004, every time", check_forget, NULL},
	{"forget without a selector is -32004 or -32602", check_forget_no_selector, NULL},
	{"summarize is -32004, every time", check_summarize, NULL},
	{"promote and consolidate are -32004, every time", check_tiers, NULL},
	{"reinforce is -32004, every time", check_reinforce, NULL},
	{"session/close is -32004, every time", check_session_close, NULL},
	{"refused writes change nothing", check_nothing_changed, NULL},
	{"describe answers normally", check_describe, NULL},
	{"recall and timeline return the records already there", check_reads, NULL},
	{"fetch returns a record already there", check_fetch, NULL},
	{"memory/events polls normally", check_events, NULL},
};

const conf_group conf_group_read_only = {"read-only", NULL, checks, CONF_COUNT(checks), 0};
