/*
** test_protocol.c — the JSON-RPC envelope and the core methods, through the
** in-process binding (a2m_handle), against both storage engines.
*/
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "pg_helper.h"
#include "server/inprocess.h"
#include "util/json_read.h"

static a2m *h;   /* the store under test */

static json_t *result(const json_t *resp)
{
	return json_object_get(resp, "result");
}

static size_t count_records(const json_t *resp)
{
	return json_array_size(json_object_get(result(resp), "records"));
}

static void test_parse_error_has_null_id(void)
{
	json_t *r = check_send(h, "{\"jsonrpc\":\"2.0\",\"id\":1,");
	CHECK_INT(check_error_code(r), A2M_PARSE_ERROR);
	CHECK(json_is_null(json_object_get(r, "id")));
	json_decref(r);
	r = check_send(h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/describe\",\"x\":\"\xff\xfe\"}");
	CHECK_INT(check_error_code(r), A2M_PARSE_ERROR);
	json_decref(r);
}

static void test_batch_array_refused(void)
{
	const char *arrays[] = {"[]", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/describe\"}]", "[1]"};
	for (int i = 0; i < 3; i++) {
		json_t *r = check_send(h, arrays[i]);
		CHECK_INT(check_error_code(r), A2M_INVALID_REQUEST);
		CHECK(json_is_null(json_object_get(r, "id")));
		json_decref(r);
	}
	json_t *r = check_send(h, "42");
	CHECK_INT(check_error_code(r), A2M_INVALID_REQUEST);
	json_decref(r);
}

static void test_envelope_rules(void)
{
	json_t *r = check_send(h, "{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"memory/describe\"}");
	CHECK_INT(check_error_code(r), A2M_INVALID_REQUEST);
	CHECK_INT(json_integer_value(json_object_get(r, "id")), 3);
	json_decref(r);
	r = check_send(h, "{\"jsonrpc\":\"2.0\",\"id\":3}");
	CHECK_INT(check_error_code(r), A2M_INVALID_REQUEST);
	json_decref(r);
	r = check_send(h, "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"memory/describe\"}");
	CHECK_INT(check_error_code(r), A2M_INVALID_REQUEST);
	CHECK(json_is_null(json_object_get(r, "id")));
	json_decref(r);
	r = check_send(h, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"memory/describe\",\"params\":[1]}");
	CHECK_INT(check_error_code(r), A2M_INVALID_PARAMS);
	json_decref(r);
	r = check_send(h, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"memory/describe\",\"params\":\"x\"}");
	CHECK_INT(check_error_code(r), A2M_INVALID_REQUEST);
	json_decref(r);
}

static void test_id_echoed_with_type_and_value(void)
{
	const char *ids[] = {"\"abc\"", "1", "0", "-5", "9007199254740993", "1.5", "null", "\"\""};
	for (int i = 0; i < 8; i++) {
		char msg[256];
		snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"memory/describe\"}", ids[i]);
		char *out = check_reply(h, msg);
		char want[64];
		snprintf(want, sizeof want, "\"id\":%s", ids[i]);
		CHECK(out && strstr(out, want) != NULL);
		a2m_free(out);
	}
}

/*
** An error message quotes what it was given, and is cut at 256 bytes: a
** long non-ASCII method name cut in the middle of a character made a
** message that is not UTF-8, which jansson refuses, and the reply was lost
** (a2m_handle said out of memory; stdio answered -32603 with id null).
** Every cut, at each of a character's bytes, still gets its own -32601
** with its id, as valid JSON. Found by fuzzing (docs/FUZZING.md).
*/
static void test_error_message_cut_inside_a_character(void)
{
	for (int shift = 0; shift < 3; shift++) {
		char msg[1024];
		int n = snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"memory/%.*s",
				 7 + shift, shift, "xx");
		for (int i = 0; i < 130; i++)
			n += snprintf(msg + n, sizeof msg - (size_t)n, "\u20ac"); /* 3 bytes each */
		snprintf(msg + n, sizeof msg - (size_t)n, "\"}");
		json_t *r = check_send(h, msg);
		CHECK(r != NULL);
		CHECK_INT((int)json_integer_value(json_object_get(r, "id")), 7 + shift);
		CHECK_INT(check_error_code(r), A2M_METHOD_NOT_FOUND);
		json_decref(r);
	}
}

static void test_notification_gets_no_answer(void)
{
	char *out = check_reply(h, "{\"jsonrpc\":\"2.0\",\"method\":\"memory/describe\"}");
	CHECK(out == NULL);
	/* A notification is still executed. */
	out = check_reply(h, "{\"jsonrpc\":\"2.0\",\"method\":\"memory/remember\","
			    "\"params\":{\"records\":[{\"content\":\"notified zqxnotify\"}]}}");
	CHECK(out == NULL);
	json_t *r = check_call(h, "memory/recall", "{\"query\":\"zqxnotify\"}");
	CHECK_INT(count_records(r), 1);
	json_decref(r);
}

/*
** A message read ahead into a value (server/inprocess.h, the corpus
** indexer's way) is answered exactly as its text is: the same checks, the
** same errors, the same limits, and a write that is really written.
*/
static void test_value_answered_as_its_text(void)
{
	static const char *const msgs[] = {
		"[1]",
		"7",
		"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"memory/describe\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/list\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"memory/recall\",\"params\":[1]}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"memory/describe\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"this content is longer than the sixty-four bytes the "
		"server allows\"}]}}",
		"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{},{},{},{},{},{}]}}",
		"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"memory/forget\",\"params\":"
		"{\"ids\":[\"no-such-id\"]}}",
		"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"id\":\"value-1\",\"content\":\"read ahead zqxvalue\"}]}}",
	};
	for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++) {
		char *text = NULL, *value = NULL;
		int nomem = 0;
		json_t *v = a2m_json_read_ex(msgs[i], strlen(msgs[i]), 1, &nomem);
		CHECK(v != NULL);
		/* The value first: the record of the last is new to it. */
		int rv = a2m_handle_value(h, v, &value);
		int rt = a2m_handle(h, msgs[i], A2M_NUL_TERMINATED, &text);
		CHECK_INT(rv, rt);
		if (text && value)
			CHECK_STR(value, text);
		else
			CHECK(text == NULL && value == NULL);
		a2m_free(text);
		a2m_free(value);
	}
	json_t *r = check_call(h, "memory/recall", "{\"query\":\"zqxvalue\"}");
	CHECK_INT(count_records(r), 1);
	json_decref(r);
	CHECK_INT(a2m_handle_value(h, NULL, NULL), A2M_MISUSE);
}

static void test_unknown_method_is_32601_undeclared_is_32003(void)
{
	json_t *r = check_call(h, "tools/list", "{}");
	CHECK_INT(check_error_code(r), A2M_METHOD_NOT_FOUND);
	json_decref(r);
	r = check_call(h, "memory/nonexistent", "{}");
	CHECK_INT(check_error_code(r), A2M_METHOD_NOT_FOUND);
	json_decref(r);
	const char *undeclared[][2] = {
		{"memory/promote", "tiers"}, {"memory/consolidate", "tiers"},
		{"memory/reinforce", "salience"}, {"memory/fetch", "keys"},
		{"memory/session/list", "sessions"}, {"memory/session/close", "sessions"},
		{"memory/events", "events"}, {"memory/events/subscribe", "events"},
		{"memory/events/unsubscribe", "events"}, {"memory/summarize", "summarize"},
	};
	for (size_t i = 0; i < sizeof undeclared / sizeof *undeclared; i++) {
		r = check_call(h, undeclared[i][0], "{}");
		CHECK_INT(check_error_code(r), A2M_CAPABILITY_NOT_SUPPORTED);
		json_t *data = json_object_get(json_object_get(r, "error"), "data");
		CHECK_STR(json_string_value(json_object_get(data, "capability")), undeclared[i][1]);
		json_decref(r);
	}
}

static void test_describe_reports_core(void)
{
	json_t *r = check_call(h, "memory/describe", "{\"protocol\":\"a2m/0.1\",\"unknown\":1}");
	json_t *res = result(r);
	CHECK_STR(json_string_value(json_object_get(res, "protocol")), "a2m/0.1");
	CHECK_STR(json_string_value(json_object_get(res, "name")), "test-server");
	json_t *caps = json_object_get(res, "capabilities");
	CHECK_INT(json_array_size(caps), 1);
	CHECK_STR(json_string_value(json_array_get(caps, 0)), "core");
	CHECK_INT(json_array_size(json_object_get(res, "methods")), 5);
	json_t *limits = json_object_get(res, "limits");
	CHECK_INT(json_integer_value(json_object_get(limits, "max_records_per_call")), 5);
	CHECK_INT(json_integer_value(json_object_get(limits, "max_content_length")), 64);
	CHECK_INT(json_integer_value(json_object_get(limits, "max_recall_limit")), 50);
	json_decref(r);
}

static void test_describe_other_protocol_is_32007(void)
{
	json_t *r = check_call(h, "memory/describe", "{\"protocol\":\"a2m/0.2\"}");
	CHECK_INT(check_error_code(r), A2M_PROTOCOL_NOT_SUPPORTED);
	json_t *sup = json_object_get(json_object_get(json_object_get(r, "error"), "data"), "supported");
	CHECK_STR(json_string_value(json_array_get(sup, 0)), "a2m/0.1");
	json_decref(r);
	r = check_call(h, "memory/describe", "{\"protocol\":\"a2m/0.1.2\"}");
	CHECK(result(r) != NULL);
	json_decref(r);
}

static void test_remember_returns_ids_in_order(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"one\"},{\"content\":\"two\",\"id\":\"given-2\"},{\"content\":\"three\"}]}");
	json_t *ids = json_object_get(result(r), "ids");
	CHECK_INT(json_array_size(ids), 3);
	CHECK_STR(json_string_value(json_array_get(ids, 1)), "given-2");
	CHECK(strcmp(json_string_value(json_array_get(ids, 0)), json_string_value(json_array_get(ids, 2))) != 0);
	json_decref(r);
}

static void test_remember_bad_input_is_32602(void)
{
	const char *bad[] = {
		"{}", "{\"records\":[]}", "{\"records\":{}}", "{\"records\":[{}]}",
		"{\"records\":[{\"content\":5}]}", "{\"records\":[{\"content\":null}]}",
		"{\"records\":[\"x\"]}", "{\"records\":[{\"content\":\"a\",\"metadata\":[1]}]}",
		"{\"records\":[{\"content\":\"a\",\"id\":\"\"}]}",
		"{\"records\":[{\"content\":\"a\",\"id\":7}]}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		json_t *r = check_call(h, "memory/remember", "%s", bad[i]);
		CHECK_INT(check_error_code(r), A2M_INVALID_PARAMS);
		json_decref(r);
	}
}

static void test_remember_tier_without_tiers_is_32003(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"zqxtier\",\"tier\":\"episodic\"}]}");
	CHECK_INT(check_error_code(r), A2M_CAPABILITY_NOT_SUPPORTED);
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"query\":\"zqxtier\"}");
	CHECK_INT(count_records(r), 0);
	json_decref(r);
}

static void test_remember_batch_is_atomic(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"zqxatomic a\"},{\"content\":\"zqxatomic b\"},{\"nope\":1}]}");
	CHECK_INT(check_error_code(r), A2M_INVALID_PARAMS);
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"query\":\"zqxatomic\"}");
	CHECK_INT(count_records(r), 0);
	json_decref(r);
}

static void test_remember_client_id_idempotent(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"zqxidem first\",\"id\":\"idem-1\"},{\"content\":\"zqxidem second\",\"id\":\"idem-1\"}]}");
	json_t *ids = json_object_get(result(r), "ids");
	CHECK_STR(json_string_value(json_array_get(ids, 0)), "idem-1");
	CHECK_STR(json_string_value(json_array_get(ids, 1)), "idem-1");
	json_decref(r);
	r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"zqxidem third\",\"id\":\"idem-1\"}]}");
	CHECK_STR(json_string_value(json_array_get(json_object_get(result(r), "ids"), 0)), "idem-1");
	json_decref(r);
	r = check_call(h, "memory/timeline", "{\"where\":{\"id\":\"idem-1\"}}");
	CHECK_INT(count_records(r), 1);
	json_t *rec = json_array_get(json_object_get(result(r), "records"), 0);
	CHECK_STR(json_string_value(json_object_get(rec, "content")), "zqxidem first");
	json_decref(r);
}

static void test_remember_limits_enforced(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"a\"},{\"content\":\"b\"},{\"content\":\"c\"},{\"content\":\"d\"},{\"content\":\"e\"},{\"content\":\"f\"}]}");
	CHECK_INT(check_error_code(r), A2M_QUOTA_EXCEEDED);
	json_decref(r);
	/* 64 code points is fine, 65 is not, whatever the bytes: each 'à' is two. */
	char content[200] = "";
	for (int i = 0; i < 64; i++)
		strcat(content, "\xc3\xa0");
	r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"%s\"}]}", content);
	CHECK(result(r) != NULL);
	json_decref(r);
	strcat(content, "a");
	r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"%s\"}]}", content);
	CHECK_INT(check_error_code(r), A2M_QUOTA_EXCEEDED);
	json_decref(r);
}

static void test_metadata_roundtrips_exactly(void)
{
	const char *meta = "{\"z\":1,\"a\":{\"n\":[1,2.5,\"x\",null,true]},\"big\":9007199254740993,"
			   "\"neg\":-9007199254740993,\"f\":0.1,\"tiny\":1e-07,\"u\":\"citt\xc3\xa0 \xe6\x9d\xb1\"}";
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"zqxmeta\",\"id\":\"meta-1\",\"metadata\":%s}]}", meta);
	json_decref(r);
	char *out = check_reply(h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/timeline\",\"params\":{\"where\":{\"id\":\"meta-1\"}}}");
	CHECK(out && strstr(out, "\"metadata\":{\"z\":1,\"a\":{\"n\":[1,2.5,\"x\",null,true]},\"big\":9007199254740993,"
			   "\"neg\":-9007199254740993,\"f\":0.1,\"tiny\":1e-07,\"u\":\"citt\xc3\xa0 \xe6\x9d\xb1\"}"));
	a2m_free(out);
}

static void test_recall_ranks_and_scores_descending(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":["
		"{\"content\":\"zqxrank the deploy key rotates every 90 days\",\"role\":\"user\"},"
		"{\"content\":\"zqxrank lunch was pasta\",\"role\":\"assistant\"},"
		"{\"content\":\"zqxrank deploy happens on fridays\",\"role\":\"user\",\"metadata\":{\"topic\":\"ops\"}}]}");
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"query\":\"deploy key rotates\"}");
	json_t *recs = json_object_get(result(r), "records");
	CHECK(json_array_size(recs) >= 2);
	CHECK(strstr(json_string_value(json_object_get(json_array_get(recs, 0), "content")), "rotates") != NULL);
	double prev = 2;
	for (size_t i = 0; i < json_array_size(recs); i++) {
		double s = json_number_value(json_object_get(json_array_get(recs, i), "score"));
		CHECK(s >= 0 && s <= 1 && s <= prev);
		prev = s;
	}
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"query\":\"zqxnothingmatchesthis\"}");
	CHECK_INT(count_records(r), 0);
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"query\":\"zqxrank\",\"where\":{\"role\":\"user\",\"topic\":\"ops\"}}");
	CHECK_INT(count_records(r), 1);
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"query\":\"zqxrank\",\"where\":{\"role\":[\"user\",\"assistant\"]}}");
	CHECK_INT(count_records(r), 3);
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"query\":\"zqxrank\",\"min_score\":2}");
	CHECK_INT(count_records(r), 0);
	json_decref(r);
}

static void test_recall_without_query_is_recency(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"zqxrecent old\"}]}");
	json_decref(r);
	usleep(3000);
	r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"zqxrecent new\"}]}");
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"limit\":1}");
	json_t *rec = json_array_get(json_object_get(result(r), "records"), 0);
	CHECK_STR(json_string_value(json_object_get(rec, "content")), "zqxrecent new");
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"query\":\"\",\"limit\":1}");
	rec = json_array_get(json_object_get(result(r), "records"), 0);
	CHECK_STR(json_string_value(json_object_get(rec, "content")), "zqxrecent new");
	json_decref(r);
	/* A query with no terms abstains: recency, not an empty result. */
	r = check_call(h, "memory/recall", "{\"query\":\"?!\",\"limit\":1}");
	CHECK_INT(count_records(r), 1);
	json_decref(r);
}

static void test_recall_limits(void)
{
	json_t *r = check_call(h, "memory/recall", "{\"limit\":51}");
	CHECK_INT(check_error_code(r), A2M_QUOTA_EXCEEDED);
	json_decref(r);
	const char *bad[] = {"{\"limit\":-1}", "{\"limit\":1.5}", "{\"limit\":\"3\"}",
			     "{\"query\":5}", "{\"where\":[1]}", "{\"where\":{\"a\":{\"b\":1}}}",
			     "{\"min_score\":\"x\"}"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		r = check_call(h, "memory/recall", "%s", bad[i]);
		CHECK_INT(check_error_code(r), A2M_INVALID_PARAMS);
		json_decref(r);
	}
	r = check_call(h, "memory/recall", "{\"limit\":0}");
	CHECK(count_records(r) > 10 && count_records(r) <= 50);
	json_decref(r);
	r = check_call(h, "memory/recall", "{}");
	CHECK_INT(count_records(r), 10);
	json_decref(r);
}

static void test_timeline_ascending_newest_n(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"t1\",\"metadata\":{\"tl\":\"zqxtl\"}},"
		"{\"content\":\"t2\",\"metadata\":{\"tl\":\"zqxtl\"}},{\"content\":\"t3\",\"metadata\":{\"tl\":\"zqxtl\"}},"
		"{\"content\":\"t4\",\"metadata\":{\"tl\":\"zqxtl\"}}]}");
	json_decref(r);
	r = check_call(h, "memory/timeline", "{\"where\":{\"tl\":\"zqxtl\"}}");
	json_t *recs = json_object_get(result(r), "records");
	CHECK_INT(json_array_size(recs), 4);
	for (size_t i = 0; i < json_array_size(recs); i++) {
		char want[24];
		snprintf(want, sizeof want, "t%zu", i + 1);
		CHECK_STR(json_string_value(json_object_get(json_array_get(recs, i), "content")), want);
	}
	json_decref(r);
	r = check_call(h, "memory/timeline", "{\"where\":{\"tl\":\"zqxtl\"},\"limit\":2}");
	recs = json_object_get(result(r), "records");
	CHECK_INT(json_array_size(recs), 2);
	CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 0), "content")), "t3");
	CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 1), "content")), "t4");
	json_decref(r);
	r = check_call(h, "memory/timeline", "{\"limit\":-2}");
	CHECK_INT(check_error_code(r), A2M_INVALID_PARAMS);
	json_decref(r);
}

static void test_forget_needs_selector_and_counts(void)
{
	const char *none[] = {"{}", "{\"where\":{}}", "{\"query\":\"\"}"};
	for (int i = 0; i < 3; i++) {
		json_t *r = check_call(h, "memory/forget", "%s", none[i]);
		CHECK_INT(check_error_code(r), A2M_INVALID_PARAMS);
		json_decref(r);
	}
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"zqxforget alpha\",\"id\":\"f-1\"},"
		"{\"content\":\"zqxforget beta\",\"id\":\"f-2\"},{\"content\":\"zqxforget gamma\",\"id\":\"f-3\",\"role\":\"tool\"}]}");
	json_decref(r);
	r = check_call(h, "memory/forget", "{\"ids\":[\"f-1\",\"no-such-id\"]}");
	CHECK_INT(json_integer_value(json_object_get(result(r), "forgotten")), 1);
	json_decref(r);
	r = check_call(h, "memory/forget", "{\"query\":\"beta\"}");
	CHECK_INT(json_integer_value(json_object_get(result(r), "forgotten")), 1);
	json_decref(r);
	r = check_call(h, "memory/forget", "{\"where\":{\"role\":\"tool\"}}");
	CHECK_INT(json_integer_value(json_object_get(result(r), "forgotten")), 1);
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"query\":\"zqxforget\"}");
	CHECK_INT(count_records(r), 0);
	json_decref(r);
	r = check_call(h, "memory/forget", "{\"ids\":\"f-1\"}");
	CHECK_INT(check_error_code(r), A2M_INVALID_PARAMS);
	json_decref(r);
}

static void test_timestamps_are_rfc3339(void)
{
	json_t *r = check_call(h, "memory/recall", "{\"limit\":1}");
	json_t *rec = json_array_get(json_object_get(result(r), "records"), 0);
	const char *ts = json_string_value(json_object_get(rec, "created_at"));
	CHECK(ts && strlen(ts) == 24 && ts[10] == 'T' && ts[19] == '.' && ts[23] == 'Z');
	json_decref(r);
}

static void *writer(void *arg)
{
	int t = (int)(intptr_t)arg;
	for (int i = 0; i < 50; i++) {
		char msg[256];
		snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"memory/remember\","
			 "\"params\":{\"records\":[{\"content\":\"zqxthread\",\"metadata\":{\"t\":%d}}]}}", i, t);
		a2m_free(check_reply(h, msg));
	}
	return NULL;
}

static void test_handle_shared_between_threads(void)
{
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, writer, (void *)(intptr_t)i);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	json_t *r = check_call(h, "memory/timeline", "{\"where\":{\"content\":\"zqxthread\"}}");
	CHECK_INT(count_records(r), 200);
	json_decref(r);
}

static const test_case tests[] = {
	TEST(test_parse_error_has_null_id),
	TEST(test_batch_array_refused),
	TEST(test_envelope_rules),
	TEST(test_id_echoed_with_type_and_value),
	TEST(test_notification_gets_no_answer),
	TEST(test_error_message_cut_inside_a_character),
	TEST(test_unknown_method_is_32601_undeclared_is_32003),
	TEST(test_value_answered_as_its_text),
	TEST(test_describe_reports_core),
	TEST(test_describe_other_protocol_is_32007),
	TEST(test_remember_returns_ids_in_order),
	TEST(test_remember_bad_input_is_32602),
	TEST(test_remember_tier_without_tiers_is_32003),
	TEST(test_remember_batch_is_atomic),
	TEST(test_remember_client_id_idempotent),
	TEST(test_remember_limits_enforced),
	TEST(test_metadata_roundtrips_exactly),
	TEST(test_recall_ranks_and_scores_descending),
	TEST(test_recall_without_query_is_recency),
	TEST(test_recall_limits),
	TEST(test_timeline_ascending_newest_n),
	TEST(test_forget_needs_selector_and_counts),
	TEST(test_timestamps_are_rfc3339),
	TEST(test_handle_shared_between_threads),
	{NULL, NULL}
};

int main(void)
{
	char path[] = "/tmp/a2m-test-protocol-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 1;
	close(fd);
	int status = 0;
	/* 0 memory, 1 SQLite, 2 PostgreSQL (a schema of the test server). */
	char pg_schema[64], pg_conninfo[512];
	int engines = pg_test_engines("a2m_tpr", pg_schema, sizeof pg_schema, pg_conninfo,
				      sizeof pg_conninfo);
	for (int engine = 0; engine < engines; engine++) {
		unlink(path);
		h = check_open("engine", pg_test_engine_names[engine], "path", path,
			       "name", "test-server", "capabilities", "core",
			       "max_records_per_call", "5", "max_content_length", "64",
			       "max_recall_limit", "50", "postgres",
			       engine == 2 ? pg_conninfo : NULL, NULL);
		if (!h)
			return 1;
		printf("# engine %s\n", pg_test_engine_names[engine]);
		status |= run_tests(tests);
		a2m_close(h);
	}
	pg_test_schema_drop(pg_schema);
	unlink(path);
	char side[600];
	snprintf(side, sizeof side, "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof side, "%s-shm", path);
	unlink(side);
	return status;
}
