/*
** test_capabilities.c — the tier stack and the capabilities beyond core,
** through the in-process binding, with a small tier layout so capacity,
** spilling, promotion and sessions can be seen at work. Runs against both
** engines.
*/
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "pg_helper.h"

static a2m *h;
/* 0 memory, 1 SQLite, 2 PostgreSQL. */
static int engine_sqlite;
static char db_path[64];

/* working: 3 per session → episodic: 4, promoted after 2 recalls → semantic:
** 5, then dropped; procedural apart. */
static const char layout[] =
	"{\"tiers\":["
	"{\"name\":\"working\",\"kind\":\"working\",\"capacity\":3,\"per_session\":true,"
	" \"spill_to\":\"episodic\",\"half_life_seconds\":300},"
	"{\"name\":\"episodic\",\"kind\":\"episodic\",\"capacity\":4,\"spill_to\":\"semantic\","
	" \"promote_to\":\"semantic\",\"promote_after\":2},"
	"{\"name\":\"semantic\",\"kind\":\"semantic\",\"capacity\":5},"
	"{\"name\":\"procedural\",\"kind\":\"procedural\"}]}";

static json_t *res(json_t *r)
{
	return json_object_get(r, "result");
}

static int code(json_t *r)
{
	return (int)json_integer_value(json_object_get(json_object_get(r, "error"), "code"));
}

static long long count_in(const char *tier, const char *where)
{
	json_t *r = check_call(h, "memory/timeline", "{\"tier\":\"%s\",\"where\":%s}", tier, where);
	long long n = (long long)json_array_size(json_object_get(res(r), "records"));
	json_decref(r);
	return n;
}

static void test_capacity_spills_oldest_without_consolidate(void)
{
	for (int i = 0; i < 5; i++)
		json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"spill %d\",\"session\":\"s-spill\",\"metadata\":{\"t\":\"spill\"}}]}", i));
	CHECK_INT(count_in("working", "{\"t\":\"spill\"}"), 3);
	CHECK_INT(count_in("episodic", "{\"t\":\"spill\"}"), 2);
	json_t *r = check_call(h, "memory/timeline", "{\"tier\":\"episodic\",\"where\":{\"t\":\"spill\"}}");
	json_t *recs = json_object_get(res(r), "records");
	CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 0), "content")), "spill 0");
	CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 1), "content")), "spill 1");
	json_decref(r);
}

static void test_capacity_is_per_session(void)
{
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"quiet\",\"session\":\"s-quiet\",\"metadata\":{\"t\":\"ps\"}}]}"));
	for (int i = 0; i < 6; i++)
		json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"busy %d\",\"session\":\"s-busy\",\"metadata\":{\"t\":\"ps\"}}]}", i));
	CHECK_INT(count_in("working", "{\"session\":\"s-quiet\"}"), 1);
	CHECK_INT(count_in("working", "{\"session\":\"s-busy\"}"), 3);
}

static void test_group_moves_whole(void)
{
	json_decref(check_call(h, "memory/remember", "{\"records\":["
		"{\"content\":\"call\",\"group\":\"g1\",\"session\":\"s-group\",\"role\":\"assistant\"},"
		"{\"content\":\"result\",\"group\":\"g1\",\"session\":\"s-group\",\"role\":\"tool\"}]}"));
	for (int i = 0; i < 2; i++)
		json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"later %d\",\"session\":\"s-group\"}]}", i));
	/* 4 in a tier of 3: the oldest unit (the whole group) left together. */
	CHECK_INT(count_in("working", "{\"group\":\"g1\"}"), 0);
	CHECK_INT(count_in("episodic", "{\"group\":\"g1\"}") + count_in("semantic", "{\"group\":\"g1\"}"), 2);
	CHECK_INT(count_in("working", "{\"session\":\"s-group\"}"), 2);
}

static void test_bottom_tier_drops_and_procedural_is_untouched(void)
{
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"skill\",\"tier\":\"procedural\",\"metadata\":{\"t\":\"proc\"}}]}"));
	for (int i = 0; i < 12; i++)
		json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"fact %d\",\"tier\":\"semantic\",\"metadata\":{\"t\":\"drop\"}}]}", i));
	json_t *r = check_call(h, "memory/consolidate", "{}");
	CHECK(res(r) != NULL);
	CHECK_INT(json_integer_value(json_object_get(json_object_get(res(r), "counts"), "semantic")), 5);
	json_decref(r);
	CHECK_INT(count_in("procedural", "{\"t\":\"proc\"}"), 1);
}

static void test_promotion_after_recalls(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"zqxpromo earned fact\",\"tier\":\"episodic\"}]}");
	const char *id = json_string_value(json_array_get(json_object_get(res(r), "ids"), 0));
	char idbuf[64];
	snprintf(idbuf, sizeof idbuf, "%s", id);
	json_decref(r);
	json_decref(check_call(h, "memory/recall", "{\"query\":\"zqxpromo\"}"));
	r = check_call(h, "memory/recall", "{\"query\":\"zqxpromo\"}");
	json_t *rec = json_array_get(json_object_get(res(r), "records"), 0);
	CHECK_INT(json_integer_value(json_object_get(rec, "access_count")), 2);
	CHECK_STR(json_string_value(json_object_get(rec, "tier")), "semantic");
	json_decref(r);
	r = check_call(h, "memory/timeline", "{\"where\":{\"id\":\"%s\"}}", idbuf);
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(res(r), "records"), 0), "tier")), "semantic");
	json_decref(r);
}

static void test_promote_counts_and_unknown_tier(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"p1\",\"id\":\"pr-1\",\"tier\":\"episodic\"},{\"content\":\"p2\",\"id\":\"pr-2\",\"tier\":\"semantic\"}]}");
	json_decref(r);
	r = check_call(h, "memory/promote", "{\"ids\":[\"pr-1\",\"pr-2\",\"pr-none\"],\"tier\":\"semantic\",\"salience\":2}");
	CHECK_INT(json_integer_value(json_object_get(res(r), "promoted")), 1);
	json_decref(r);
	r = check_call(h, "memory/promote", "{\"ids\":[\"pr-1\"],\"tier\":\"attic\"}");
	CHECK_INT(code(r), A2M_UNKNOWN_TIER);
	json_decref(r);
	r = check_call(h, "memory/timeline", "{\"where\":{\"id\":\"pr-1\"}}");
	json_t *rec = json_array_get(json_object_get(res(r), "records"), 0);
	CHECK_NEAR(json_number_value(json_object_get(rec, "salience")), 3.0, 1e-9);
	json_decref(r);
}

static void test_session_close_flushes_and_keeps(void)
{
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"c1\",\"session\":\"s-close\"},{\"content\":\"c2\",\"session\":\"s-close\"},"
		"{\"content\":\"howto\",\"session\":\"s-close\",\"tier\":\"procedural\"}]}"));
	json_t *r = check_call(h, "memory/session/close", "{\"session\":\"s-close\"}");
	CHECK_INT(json_integer_value(json_object_get(res(r), "flushed")), 2);
	CHECK_STR(json_string_value(json_object_get(res(r), "closed")), "s-close");
	json_decref(r);
	CHECK_INT(count_in("working", "{\"session\":\"s-close\"}"), 0);
	CHECK_INT(count_in("procedural", "{\"session\":\"s-close\"}"), 1);
	r = check_call(h, "memory/timeline", "{\"where\":{\"session\":\"s-close\"}}");
	CHECK_INT(json_array_size(json_object_get(res(r), "records")), 3);
	json_decref(r);
	r = check_call(h, "memory/session/close", "{\"session\":\"never-opened\"}");
	CHECK_INT(json_integer_value(json_object_get(res(r), "flushed")), 0);
	json_decref(r);
	r = check_call(h, "memory/session/close", "{}");
	CHECK_INT(code(r), A2M_INVALID_PARAMS);
	json_decref(r);
}

static void test_key_replaces_with_revision(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"Bologna\",\"key\":\"user/city\",\"owner\":\"a\"}]}");
	char id[64];
	snprintf(id, sizeof id, "%s", json_string_value(json_array_get(json_object_get(res(r), "ids"), 0)));
	json_decref(r);
	r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"Milano\",\"key\":\"user/city\",\"owner\":\"a\"}]}");
	CHECK_STR(json_string_value(json_array_get(json_object_get(res(r), "ids"), 0)), id);
	json_decref(r);
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"Paris\",\"key\":\"user/city\",\"owner\":\"b\"}]}"));
	r = check_call(h, "memory/fetch", "{\"key\":\"user/city\",\"owner\":\"a\"}");
	json_t *rec = json_object_get(res(r), "record");
	CHECK_STR(json_string_value(json_object_get(rec, "content")), "Milano");
	CHECK_INT(json_integer_value(json_object_get(rec, "revision")), 1);
	json_decref(r);
	r = check_call(h, "memory/fetch", "{\"key\":\"user/none\"}");
	CHECK(json_is_null(json_object_get(res(r), "record")));
	json_decref(r);
	r = check_call(h, "memory/fetch", "{\"key\":\"\"}");
	CHECK_INT(code(r), A2M_INVALID_PARAMS);
	json_decref(r);
}

static void test_private_working_shared_durable(void)
{
	json_decref(check_call(h, "memory/remember", "{\"owner\":\"alice\",\"records\":[{\"content\":\"zqxscope private turn\",\"session\":\"s-a\"},"
		"{\"content\":\"zqxscope pooled fact\",\"tier\":\"semantic\"}]}"));
	json_t *r = check_call(h, "memory/recall", "{\"query\":\"zqxscope\",\"owner\":\"bob\"}");
	json_t *recs = json_object_get(res(r), "records");
	CHECK_INT(json_array_size(recs), 1);
	CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 0), "content")), "zqxscope pooled fact");
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"query\":\"zqxscope\",\"owner\":\"alice\"}");
	CHECK_INT(json_array_size(json_object_get(res(r), "records")), 2);
	json_decref(r);
}

static void test_embeddings_fixed_width_and_metric(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"v-near\",\"embedding\":[1,0,0]},"
		"{\"content\":\"v-far\",\"embedding\":[0,1,0]},{\"content\":\"v-long\",\"embedding\":[10,10,0]}]}");
	CHECK(res(r) != NULL);
	json_decref(r);
	r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"v-bad\",\"embedding\":[1,2]}]}");
	CHECK_INT(code(r), A2M_EMBEDDING_MISMATCH);
	json_decref(r);
	r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"v-nan\",\"embedding\":[1,\"x\",3]}]}");
	CHECK_INT(code(r), A2M_INVALID_PARAMS);
	json_decref(r);
	r = check_call(h, "memory/describe", "{}");
	CHECK_INT(json_integer_value(json_object_get(json_object_get(res(r), "embeddings"), "dimensions")), 3);
	json_decref(r);
	/* Cosine (the default): direction only, so [1,0,0] beats the longer [10,10,0]. */
	r = check_call(h, "memory/recall", "{\"embedding\":[1,0,0],\"limit\":3,\"embeddings\":true}");
	json_t *recs = json_object_get(res(r), "records");
	CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 0), "content")), "v-near");
	CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 1), "content")), "v-long");
	CHECK_INT(json_array_size(json_object_get(json_array_get(recs, 0), "embedding")), 3);
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"embedding\":[1,0,0],\"limit\":1}");
	CHECK(json_object_get(json_array_get(json_object_get(res(r), "records"), 0), "embedding") == NULL);
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"embedding\":[1,0]}");
	CHECK_INT(code(r), A2M_EMBEDDING_MISMATCH);
	json_decref(r);
}

static int notes;
static char last_note[4096];

static void on_note(const char *text, void *user)
{
	(void)user;
	notes++;
	snprintf(last_note, sizeof last_note, "%s", text);
}

static void test_events_poll_and_push(void)
{
	json_t *r = check_call(h, "memory/events", "{}");
	char cursor[256];
	snprintf(cursor, sizeof cursor, "%s", json_string_value(json_object_get(res(r), "cursor")));
	CHECK_INT(json_array_size(json_object_get(res(r), "events")), 0);
	json_decref(r);
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"ev1\",\"id\":\"ev-1\"},{\"content\":\"ev2\",\"id\":\"ev-2\"}]}"));
	json_decref(check_call(h, "memory/forget", "{\"ids\":[\"ev-1\",\"ev-2\"]}"));
	/* Spills of the session-less working bucket add consolidated events;
	** this poll asks for the two kinds it checks. */
	r = check_call(h, "memory/events", "{\"cursor\":\"%s\",\"kinds\":[\"written\",\"forgotten\"]}", cursor);
	json_t *evs = json_object_get(res(r), "events");
	CHECK_INT(json_array_size(evs), 3);
	CHECK_STR(json_string_value(json_object_get(json_array_get(evs, 0), "kind")), "written");
	CHECK_STR(json_string_value(json_object_get(json_array_get(evs, 1), "id")), "ev-2");
	CHECK_STR(json_string_value(json_object_get(json_array_get(evs, 2), "kind")), "forgotten");
	CHECK_INT(json_integer_value(json_object_get(json_array_get(evs, 2), "count")), 2);
	json_decref(r);
	r = check_call(h, "memory/events", "{\"cursor\":\"not-a-cursor\"}");
	CHECK(json_is_true(json_object_get(res(r), "reset")) || code(r) == A2M_INVALID_PARAMS);
	json_decref(r);
	/* In-process push needs a callback (spec §8.1). */
	r = check_call(h, "memory/events/subscribe", "{}");
	CHECK_INT(code(r), A2M_CAPABILITY_NOT_SUPPORTED);
	json_decref(r);
	a2m_set_notify(h, on_note, NULL);
	r = check_call(h, "memory/describe", "{}");
	CHECK(json_is_true(json_object_get(json_object_get(res(r), "events"), "push")));
	json_decref(r);
	r = check_call(h, "memory/events/subscribe", "{\"kinds\":[\"written\"]}");
	CHECK(json_is_true(json_object_get(res(r), "subscribed")));
	json_decref(r);
	notes = 0;
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"pushed\",\"id\":\"ev-push\"}]}"));
	CHECK_INT(notes, 1);
	CHECK(strstr(last_note, "\"method\":\"memory/event\"") && strstr(last_note, "\"id\":\"ev-push\""));
	CHECK(strstr(last_note, "\"jsonrpc\":\"2.0\"") && !strstr(last_note, "\"id\":1"));
	json_decref(check_call(h, "memory/forget", "{\"ids\":[\"ev-push\"]}"));
	CHECK_INT(notes, 1); /* forgotten is not among the subscribed kinds */
	json_decref(check_call(h, "memory/events/unsubscribe", "{}"));
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"quiet\"}]}"));
	CHECK_INT(notes, 1);
	a2m_set_notify(h, NULL, NULL);
}

static void test_summarize_and_prompt(void)
{
	json_decref(check_call(h, "memory/remember", "{\"records\":["
		"{\"content\":\"The deploy key rotates every 90 days. Rotation is automatic.\",\"id\":\"sm-1\",\"tier\":\"episodic\"},"
		"{\"content\":\"The deploy key is stored in the vault.\",\"id\":\"sm-2\",\"tier\":\"episodic\"}]}"));
	json_t *r = check_call(h, "memory/summarize", "{}");
	CHECK_INT(code(r), A2M_INVALID_PARAMS);
	json_decref(r);
	r = check_call(h, "memory/summarize", "{\"ids\":[\"sm-1\",\"sm-2\"],\"into\":\"semantic\",\"key\":\"facts/deploy-key\"}");
	CHECK_INT(json_integer_value(json_object_get(res(r), "written")), 1);
	CHECK_INT(json_integer_value(json_object_get(res(r), "read")), 2);
	json_t *rec = json_array_get(json_object_get(res(r), "records"), 0);
	CHECK_STR(json_string_value(json_object_get(rec, "tier")), "semantic");
	CHECK(strstr(json_string_value(json_object_get(rec, "content")), "deploy key") != NULL);
	json_decref(r);
	r = check_call(h, "memory/summarize", "{\"ids\":[\"sm-1\"],\"key\":\"facts/deploy-key\"}");
	CHECK_INT(json_integer_value(json_object_get(json_array_get(json_object_get(res(r), "records"), 0), "revision")), 1);
	json_decref(r);
	CHECK_INT(count_in("episodic", "{\"id\":[\"sm-1\",\"sm-2\"]}"), 2);
	r = check_call(h, "memory/recall", "{\"query\":\"deploy key\",\"prompt\":{\"style\":\"facts\",\"cite\":true}}");
	const char *text = json_string_value(json_object_get(res(r), "prompt"));
	CHECK(text && strstr(text, "[facts/deploy-key]") != NULL);
	CHECK(json_array_size(json_object_get(res(r), "prompt_ids")) >= 1);
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"query\":\"deploy key\",\"prompt\":{\"method\":\"model\"}}");
	CHECK_INT(code(r), A2M_INVALID_PARAMS);
	json_decref(r);
}

static void test_procedural_records_are_files(void)
{
	if (engine_sqlite == 2) {
		/* A networked store has no disk to share: the text stays in the row
		** (DECISIONS 024), whole, and the record is a record like any other. */
		json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"Run make check before pushing.\",\"tier\":\"procedural\",\"key\":\"skills/release\",\"id\":\"skill-1\"}]}"));
		json_t *r = check_call(h, "memory/fetch", "{\"key\":\"skills/release\"}");
		json_t *rec = json_object_get(res(r), "record");
		CHECK_STR(json_string_value(json_object_get(rec, "content")),
			  "Run make check before pushing.");
		CHECK_STR(json_string_value(json_object_get(rec, "tier")), "procedural");
		json_decref(r);
		json_decref(check_call(h, "memory/forget", "{\"ids\":[\"skill-1\"]}"));
		r = check_call(h, "memory/fetch", "{\"key\":\"skills/release\"}");
		CHECK(json_is_null(json_object_get(res(r), "record")));
		json_decref(r);
		return;
	}
	if (!engine_sqlite)
		return;
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"Run make check before pushing.\",\"tier\":\"procedural\",\"key\":\"skills/release\",\"id\":\"skill-1\"}]}"));
	char dir[128], path[256];
	snprintf(dir, sizeof dir, "%.*s.procedural", (int)(strlen(db_path) - 3), db_path);
	snprintf(path, sizeof path, "%s/skills-release--skill-1.md", dir);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	if (f) {
		char buf[1024] = "";
		size_t got = fread(buf, 1, sizeof buf - 1, f);
		buf[got] = '\0';
		CHECK(strstr(buf, "Run make check before pushing.") != NULL);
		fclose(f);
	}
	json_decref(check_call(h, "memory/forget", "{\"ids\":[\"skill-1\"]}"));
	CHECK(access(path, F_OK) != 0);
}

/* Sends one message as a network transport would, on behalf of principal. */
static json_t *call_as(const char *principal, const char *msg)
{
	return check_send_as(h, msg, 1, principal);
}

static int declares(json_t *describe, const char *cap)
{
	json_t *caps = json_object_get(res(describe), "capabilities");
	for (size_t i = 0; i < json_array_size(caps); i++)
		if (strcmp(json_string_value(json_array_get(caps, i)), cap) == 0)
			return 1;
	return 0;
}

static void test_network_scope_comes_from_principal(void)
{
	/* Unauthenticated network caller: no scopes, no push (spec §6, §8.3). */
	json_t *r = call_as(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/describe\"}");
	CHECK(!declares(r, "scopes"));
	CHECK(declares(r, "tiers"));
	CHECK(json_is_false(json_object_get(json_object_get(res(r), "events"), "push")));
	json_decref(r);
	r = call_as(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/recall\",\"params\":{\"owner\":\"x\"}}");
	CHECK_INT(code(r), A2M_CAPABILITY_NOT_SUPPORTED);
	json_decref(r);
	a2m_set_notify(h, on_note, NULL);
	r = call_as(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/events/subscribe\"}");
	CHECK_INT(code(r), A2M_CAPABILITY_NOT_SUPPORTED);
	json_decref(r);
	a2m_set_notify(h, NULL, NULL);
	/* Authenticated: the principal is the owner; another owner is refused. */
	r = call_as("carol", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/describe\"}");
	CHECK(declares(r, "scopes"));
	json_decref(r);
	r = call_as("carol", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/recall\",\"params\":{\"owner\":\"alice\"}}");
	CHECK_INT(code(r), A2M_SCOPE_DENIED);
	json_decref(r);
	r = call_as("carol", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\",\"params\":{\"records\":[{\"content\":\"mine\",\"owner\":\"alice\"}]}}");
	CHECK_INT(code(r), A2M_SCOPE_DENIED);
	json_decref(r);
	r = call_as("carol", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\",\"params\":{\"records\":[{\"content\":\"zqxnet carol says hi\",\"session\":\"s-net\"}]}}");
	CHECK(res(r) != NULL);
	json_decref(r);
	r = check_call(h, "memory/timeline", "{\"owner\":\"carol\",\"where\":{\"session\":\"s-net\"}}");
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(res(r), "records"), 0), "owner")), "carol");
	json_decref(r);
	/* carol's working record is private: dave, authenticated, cannot see it. */
	r = call_as("dave", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/recall\",\"params\":{\"query\":\"zqxnet\"}}");
	CHECK_INT(json_array_size(json_object_get(res(r), "records")), 0);
	json_decref(r);
	r = call_as("carol", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/recall\",\"params\":{\"query\":\"zqxnet\"}}");
	CHECK_INT(json_array_size(json_object_get(res(r), "records")), 1);
	json_decref(r);
}


/* Salience of the record with id, as the timeline returns it (NAN if absent). */
static double salience_of(const char *id)
{
	json_t *r = check_call(h, "memory/timeline", "{}");
	json_t *recs = json_object_get(res(r), "records");
	double s = NAN;
	for (size_t i = 0; i < json_array_size(recs); i++) {
		json_t *rec = json_array_get(recs, i);
		if (strcmp(json_string_value(json_object_get(rec, "id")), id) == 0 &&
		    json_is_number(json_object_get(rec, "salience")))
			s = json_number_value(json_object_get(rec, "salience"));
	}
	json_decref(r);
	return s;
}

/* Every reply of a read is one JSON text, without a NUL inside it. */
static void check_reads_whole(void)
{
	const char *reads[] = {"memory/recall", "memory/timeline"};
	for (int i = 0; i < 2; i++) {
		char msg[128];
		snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\"}", reads[i]);
		char *out = check_reply(h, msg);
		CHECK(out != NULL);
		json_t *v = out ? json_loads(out, 0, NULL) : NULL;
		CHECK(v != NULL);
		CHECK(json_object_get(v, "result") != NULL);
		json_decref(v);
		a2m_free(out);
	}
}

/*
** The reproducer of issue 16: a salience of 1e308, then a reinforce of 1e308,
** made the salience infinite; recall then wrote uninitialised bytes and a
** NUL, timeline claimed "out of memory". Values past the bound are refused.
*/
static void test_salience_past_its_bound_is_refused(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"id\":\"sal-big\",\"content\":\"x\",\"salience\":1e308}]}");
	CHECK_INT(code(r), A2M_INVALID_PARAMS);
	json_decref(r);
	r = check_call(h, "memory/remember", "{\"records\":[{\"id\":\"sal-big\",\"content\":\"x\",\"salience\":1000001}]}");
	CHECK_INT(code(r), A2M_INVALID_PARAMS);
	json_decref(r);
	r = check_call(h, "memory/remember", "{\"records\":[{\"id\":\"sal-big\",\"content\":\"x\",\"salience\":-1000001}]}");
	CHECK_INT(code(r), A2M_INVALID_PARAMS);
	json_decref(r);
	r = check_call(h, "memory/remember", "{\"records\":[{\"id\":\"sal-big\",\"content\":\"x\",\"salience\":1000000}]}");
	CHECK_INT(code(r), 0);
	json_decref(r);
	r = check_call(h, "memory/reinforce", "{\"ids\":[\"sal-big\"],\"amount\":1e308}");
	CHECK_INT(code(r), A2M_INVALID_PARAMS);
	json_decref(r);
	r = check_call(h, "memory/promote", "{\"ids\":[\"sal-big\"],\"tier\":\"semantic\",\"salience\":-1e308}");
	CHECK_INT(code(r), A2M_INVALID_PARAMS);
	json_decref(r);
	CHECK(salience_of("sal-big") == 1e6);
	check_reads_whole();
	json_decref(check_call(h, "memory/forget", "{\"ids\":[\"sal-big\"]}"));
}

/* Additions within the bound saturate at it instead of growing past it. */
static void test_salience_sums_saturate_at_the_bound(void)
{
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"id\":\"sal-sat\",\"content\":\"x\",\"salience\":999999}]}"));
	for (int i = 0; i < 3; i++) {
		json_t *r = check_call(h, "memory/reinforce", "{\"ids\":[\"sal-sat\"],\"amount\":1000000}");
		CHECK_INT(json_integer_value(json_object_get(res(r), "reinforced")), 1);
		json_decref(r);
	}
	CHECK(salience_of("sal-sat") == 1e6);
	json_decref(check_call(h, "memory/reinforce", "{\"ids\":[\"sal-sat\"],\"amount\":-1000000}"));
	CHECK(salience_of("sal-sat") == 0);
	for (int i = 0; i < 2; i++)
		json_decref(check_call(h, "memory/reinforce", "{\"ids\":[\"sal-sat\"],\"amount\":-1000000}"));
	CHECK(salience_of("sal-sat") == -1e6);
	json_t *r = check_call(h, "memory/promote", "{\"ids\":[\"sal-sat\"],\"tier\":\"semantic\",\"salience\":-1000000}");
	CHECK_INT(json_integer_value(json_object_get(res(r), "promoted")), 1);
	json_decref(r);
	CHECK(salience_of("sal-sat") == -1e6);
	check_reads_whole();
	json_decref(check_call(h, "memory/forget", "{\"ids\":[\"sal-sat\"]}"));
}

/* A vector element that float32 cannot hold (or whose products overflow)
** is refused on write and on query, not stored as an infinity. */
static void test_vector_elements_past_their_bound_are_refused(void)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"v\",\"embedding\":[1e300,1,0]}]}");
	CHECK_INT(code(r), A2M_INVALID_PARAMS);
	json_decref(r);
	r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"v\",\"embedding\":[1,-1.0000001e15,0]}]}");
	CHECK_INT(code(r), A2M_INVALID_PARAMS);
	json_decref(r);
	r = check_call(h, "memory/recall", "{\"embedding\":[1e39,0,0]}");
	CHECK_INT(code(r), A2M_INVALID_PARAMS);
	json_decref(r);
	check_reads_whole();
}

static const test_case tests[] = {
	TEST(test_salience_past_its_bound_is_refused),
	TEST(test_salience_sums_saturate_at_the_bound),
	TEST(test_vector_elements_past_their_bound_are_refused),
	TEST(test_capacity_spills_oldest_without_consolidate),
	TEST(test_capacity_is_per_session),
	TEST(test_group_moves_whole),
	TEST(test_bottom_tier_drops_and_procedural_is_untouched),
	TEST(test_promotion_after_recalls),
	TEST(test_promote_counts_and_unknown_tier),
	TEST(test_session_close_flushes_and_keeps),
	TEST(test_key_replaces_with_revision),
	TEST(test_private_working_shared_durable),
	TEST(test_embeddings_fixed_width_and_metric),
	TEST(test_events_poll_and_push),
	TEST(test_summarize_and_prompt),
	TEST(test_procedural_records_are_files),
	TEST(test_network_scope_comes_from_principal),
	{NULL, NULL}
};

static void remove_tree(const char *dir)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

int main(void)
{
	char cfg_path[] = "/tmp/a2m-test-caps-XXXXXX";
	int fd = mkstemp(cfg_path);
	if (fd < 0 || write(fd, layout, strlen(layout)) != (ssize_t)strlen(layout))
		return 1;
	close(fd);
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-caps-%d.db", (int)getpid());
	int status = 0;
	/* 0 memory, 1 SQLite, 2 PostgreSQL (a schema of the test server). */
	char pg_schema[64], pg_conninfo[512];
	int engines = pg_test_engines("a2m_tc", pg_schema, sizeof pg_schema, pg_conninfo,
				      sizeof pg_conninfo);
	for (engine_sqlite = 0; engine_sqlite < engines; engine_sqlite++) {
		if (!(h = check_open("engine", pg_test_engine_names[engine_sqlite], "path", db_path,
				     "config_file", cfg_path, "postgres",
				     engine_sqlite == 2 ? pg_conninfo : NULL, NULL)))
			return 1;
		printf("# engine %s\n", pg_test_engine_names[engine_sqlite]);
		status |= run_tests(tests);
		a2m_close(h);
	}
	/* A read-only server over what was written: reads work, writes refused. */
	for (int e = 1; e < engines; e++) {
	int passed = 0, failed = 0;
	if ((h = check_open("engine", pg_test_engine_names[e], "path", db_path, "config_file",
			    cfg_path, "read_only", "1", "postgres", e == 2 ? pg_conninfo : NULL,
			    NULL))) {
		const char *writes[] = {"memory/remember", "memory/forget", "memory/summarize",
					"memory/promote", "memory/consolidate", "memory/reinforce",
					"memory/session/close"};
		for (int i = 0; i < 7; i++) {
			json_t *r = check_call(h, writes[i], "{\"records\":[{\"content\":\"x\"}],\"ids\":[\"a\"],\"tier\":\"semantic\",\"session\":\"s\"}");
			code(r) == A2M_READ_ONLY ? passed++ : failed++;
			json_decref(r);
		}
		json_t *r = check_call(h, "memory/timeline", "{\"tier\":\"semantic\"}");
		json_array_size(json_object_get(res(r), "records")) > 0 ? passed++ : failed++;
		json_decref(r);
		a2m_close(h);
	} else {
		failed++;
	}
	printf("# read-only %s\n%d passed, %d failed\n", e == 2 ? "postgres" : "sqlite", passed,
	       failed);
	status |= failed != 0;
	}
	pg_test_schema_drop(pg_schema);
	unlink(cfg_path);
	char side[128];
	unlink(db_path);
	snprintf(side, sizeof side, "%s-wal", db_path);
	unlink(side);
	snprintf(side, sizeof side, "%s-shm", db_path);
	unlink(side);
	snprintf(side, sizeof side, "%.*s.procedural", (int)(strlen(db_path) - 3), db_path);
	remove_tree(side);
	return status;
}
