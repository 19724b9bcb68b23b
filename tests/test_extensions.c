/*
** test_extensions.c — x-expiry, x-history and x-dedup (docs/PROTOCOL.md,
** Extensions) through the protocol, on every engine (PostgreSQL when
** $A2M_TEST_POSTGRES names a server, pg_helper.h): an expired record is
** never returned from the millisecond it expires (the tests' clock, not
** sleeps), then swept with one forgotten event; a key's revisions after
** concurrent writes, bounded, forgotten with the key, undone with a failed
** write; a duplicate write racing itself leaves one record.
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
#include "util/clock.h"

/* 2026-03-01T00:00:00Z: the tests' clock starts here. */
#define T0 1772323200000LL

static a2m *h;
static char db_path[64], cfg_path[64];

/* working dedups and has no ttl; episodic dedups nothing and keeps a
** record an hour; semantic neither. */
static const char layout[] =
	"{\"tiers\":["
	"{\"name\":\"working\",\"kind\":\"working\",\"dedup\":true},"
	"{\"name\":\"episodic\",\"kind\":\"episodic\",\"ttl_seconds\":3600},"
	"{\"name\":\"semantic\",\"kind\":\"semantic\",\"dedup\":true}],"
	"\"history\":{\"revisions\":1000}}";

static json_t *result(json_t *resp)
{
	return json_object_get(resp, "result");
}

static json_t *records_of(json_t *resp)
{
	return json_object_get(result(resp), "records");
}

/* Whether a record with content c is in the records of resp. */
static int holds(json_t *resp, const char *c)
{
	json_t *recs = records_of(resp);
	for (size_t i = 0; i < json_array_size(recs); i++)
		if (!strcmp(json_string_value(json_object_get(json_array_get(recs, i), "content")), c))
			return 1;
	return 0;
}

static char *first_id(json_t *resp)
{
	const char *id = json_string_value(json_array_get(json_object_get(result(resp), "ids"), 0));
	return strdup(id ? id : "");
}

/* ---- x-expiry ------------------------------------------------------------ */

/*
** Each way of reading, as the first call at the very millisecond a record
** expires (so before any sweep could have removed it), does not return it;
** the millisecond before, it does.
*/
static void test_expired_never_returned_at_the_instant(void)
{
	static const char *const reads[] = {"timeline", "recall", "recall_q", "fetch", "where",
					    "sessions", "promote", "reinforce", "forget"};
	for (size_t k = 0; k < sizeof reads / sizeof *reads; k++) {
		int64_t t = T0 + 100000 * (int64_t)(k + 1);
		char key[32], content[64], at[A2M_TIMESTAMP_LEN];
		snprintf(key, sizeof key, "exp/%zu", k);
		snprintf(content, sizeof content, "ephemeral fact %zu", k);
		a2m_clock_set_for_tests(t);
		json_t *r = check_call(h, "memory/remember",
			"{\"records\":[{\"content\":\"%s\",\"key\":\"%s\",\"session\":\"s-exp-%zu\","
			"\"expires_at\":\"%s\"}]}", content, key, k, a2m_clock_format(t + 1000, at));
		char *id = first_id(r);
		json_decref(r);
		for (int after = 0; after < 2; after++) {
			a2m_clock_set_for_tests(t + 999 + after);
			int seen = 0;
			const char *what = reads[k];
			if (!strcmp(what, "timeline")) {
				r = check_call(h, "memory/timeline", "{\"limit\":0}");
				seen = holds(r, content);
			} else if (!strcmp(what, "recall")) {
				r = check_call(h, "memory/recall", "{\"limit\":100}");
				seen = holds(r, content);
			} else if (!strcmp(what, "recall_q")) {
				r = check_call(h, "memory/recall", "{\"query\":\"ephemeral fact\"}");
				seen = holds(r, content);
			} else if (!strcmp(what, "fetch")) {
				r = check_call(h, "memory/fetch", "{\"key\":\"%s\"}", key);
				seen = json_is_object(json_object_get(result(r), "record"));
			} else if (!strcmp(what, "where")) {
				r = check_call(h, "memory/timeline", "{\"where\":{\"key\":\"%s\"}}", key);
				seen = holds(r, content);
			} else if (!strcmp(what, "sessions")) {
				r = check_call(h, "memory/session/list", "{}");
				json_t *s = json_object_get(result(r), "sessions");
				char name[32];
				snprintf(name, sizeof name, "s-exp-%zu", k);
				for (size_t i = 0; i < json_array_size(s); i++)
					seen |= !strcmp(json_string_value(json_object_get(
						json_array_get(s, i), "session")), name);
			} else if (!strcmp(what, "promote") || !strcmp(what, "reinforce")) {
				int p = what[0] == 'p';
				r = check_call(h, p ? "memory/promote" : "memory/reinforce",
					       "{\"ids\":[\"%s\"],\"tier\":\"semantic\"}", id);
				seen = json_integer_value(json_object_get(result(r),
					p ? "promoted" : "reinforced")) == 1;
				if (p && seen)  /* back, for the second look */
					json_decref(check_call(h, "memory/promote",
						"{\"ids\":[\"%s\"],\"tier\":\"working\"}", id));
			} else {
				/* forget counts what it removes: an expired record is gone. */
				r = check_call(h, "memory/forget", "{\"ids\":[\"%s\"]}", id);
				seen = json_integer_value(json_object_get(result(r), "forgotten")) == 1;
				if (seen) {  /* write it again for the second look */
					json_decref(r);
					a2m_clock_set_for_tests(t);
					r = check_call(h, "memory/remember",
						"{\"records\":[{\"content\":\"%s\",\"key\":\"%s\",\"session\":\"s-exp-%zu\","
						"\"expires_at\":\"%s\"}]}", content, key, k, at);
					free(id);
					id = first_id(r);
				}
			}
			json_decref(r);
			if (seen == after) {
				check_failures_in_test++;
				fprintf(stderr, "  %s: %s at expiry%s\n", what,
					after ? "returned" : "not returned", after ? "" : " - 1 ms");
			}
		}
		free(id);
	}
}

/* The sweep: one forgotten event, marked expired; a2m_sweep says when next. */
static void test_sweep_reports_one_forgotten_event(void)
{
	a2m_clock_set_for_tests(T0 + 5000000);
	json_t *r = check_call(h, "memory/events", "{}");
	char *cursor = strdup(json_string_value(json_object_get(result(r), "cursor")));
	json_decref(r);
	json_decref(check_call(h, "memory/remember", "{\"records\":["
		"{\"content\":\"sweep one\",\"ttl_seconds\":10},"
		"{\"content\":\"sweep two\",\"ttl_seconds\":10},"
		"{\"content\":\"sweep three\",\"ttl_seconds\":20}]}"));
	int64_t next = 0;
	CHECK_INT(a2m_sweep(h, &next), A2M_OK);
	CHECK_INT(next, 10000);
	a2m_clock_set_for_tests(T0 + 5000000 + 10000);
	CHECK_INT(a2m_sweep(h, &next), A2M_OK);
	CHECK_INT(next, 10000);
	r = check_call(h, "memory/events", "{\"cursor\":\"%s\",\"kinds\":[\"forgotten\"]}", cursor);
	json_t *ev = json_object_get(result(r), "events");
	CHECK_INT(json_array_size(ev), 1);
	json_t *e = json_array_get(ev, 0);
	CHECK_INT(json_integer_value(json_object_get(e, "count")), 2);
	CHECK(json_is_true(json_object_get(e, "expired")));
	CHECK_INT(json_array_size(json_object_get(e, "ids")), 2);
	json_decref(r);
	/* Gone from the store, not only hidden: describe's counts say so. */
	r = check_call(h, "memory/timeline", "{\"where\":{\"content\":{\"$prefix\":\"sweep\"}}}");
	CHECK_INT(json_array_size(records_of(r)), 1);
	json_decref(r);
	free(cursor);
}

/* A tier's ttl applies to a write without an expiry of its own; a record
** shows expires_at only when it has one. */
static void test_tier_ttl_and_wire_shape(void)
{
	char at[A2M_TIMESTAMP_LEN];
	a2m_clock_set_for_tests(T0 + 9000000);
	json_t *r = check_call(h, "memory/remember", "{\"records\":["
		"{\"content\":\"ttl default\",\"tier\":\"episodic\"},"
		"{\"content\":\"ttl own\",\"tier\":\"episodic\",\"ttl_seconds\":5},"
		"{\"content\":\"ttl none\",\"tier\":\"semantic\"}]}");
	json_decref(r);
	r = check_call(h, "memory/timeline", "{\"where\":{\"content\":{\"$prefix\":\"ttl \"}}}");
	json_t *recs = records_of(r);
	CHECK_INT(json_array_size(recs), 3);
	CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 0), "expires_at")),
		  a2m_clock_format(T0 + 9000000 + 3600000, at));
	CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 1), "expires_at")),
		  a2m_clock_format(T0 + 9000000 + 5000, at));
	CHECK(json_object_get(json_array_get(recs, 2), "expires_at") == NULL);
	json_decref(r);
	/* Ranges on expires_at, like any time. */
	r = check_call(h, "memory/timeline", "{\"where\":{\"expires_at\":{\"$lt\":\"%s\"},"
		       "\"content\":{\"$prefix\":\"ttl \"}}}", a2m_clock_format(T0 + 9010000, at));
	CHECK_INT(json_array_size(records_of(r)), 1);
	json_decref(r);
}

static void test_expiry_params_checked(void)
{
	const char *bad[] = {
		"{\"content\":\"x\",\"expires_at\":\"tomorrow\"}",
		"{\"content\":\"x\",\"expires_at\":12345}",
		"{\"content\":\"x\",\"ttl_seconds\":0}",
		"{\"content\":\"x\",\"ttl_seconds\":\"5\"}",
		"{\"content\":\"x\",\"ttl_seconds\":1e11}",
		"{\"content\":\"x\",\"ttl_seconds\":5,\"expires_at\":\"2030-01-01T00:00:00Z\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		json_t *r = check_call(h, "memory/remember", "{\"records\":[%s]}", bad[i]);
		CHECK_INT(check_error_code(r), A2M_INVALID_PARAMS);
		json_decref(r);
	}
}

/* ---- x-history ------------------------------------------------------------ */

#define WRITERS 4
#define WRITES  25

static void *key_writer(void *arg)
{
	int w = (int)(intptr_t)arg;
	for (int i = 0; i < WRITES; i++) {
		char msg[256];
		snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\","
			 "\"params\":{\"records\":[{\"content\":\"w%d-%d\",\"key\":\"race/k\"}]}}", w, i);
		char *reply = NULL;
		if (a2m_handle(h, msg, A2M_NUL_TERMINATED, &reply) != A2M_OK || !strstr(reply, "\"ids\""))
			fprintf(stderr, "  writer %d: %s\n", w, reply ? reply : "(no reply)");
		a2m_free(reply);
	}
	return NULL;
}

/* Every revision written by racing writers is in the history exactly once,
** newest first, and each revision's time chains to the next one's. */
static void test_history_after_concurrent_key_writes(void)
{
	a2m_clock_set_for_tests(0);
	pthread_t t[WRITERS];
	for (int w = 0; w < WRITERS; w++)
		pthread_create(&t[w], NULL, key_writer, (void *)(intptr_t)w);
	for (int w = 0; w < WRITERS; w++)
		pthread_join(t[w], NULL);
	json_t *r = check_call(h, "memory/fetch", "{\"key\":\"race/k\",\"history\":true}");
	json_t *rec = json_object_get(result(r), "record");
	json_t *hist = json_object_get(result(r), "history");
	CHECK_INT(json_integer_value(json_object_get(rec, "revision")), WRITERS * WRITES - 1);
	CHECK_INT(json_array_size(hist), WRITERS * WRITES - 1);
	char seen[WRITERS][WRITES];
	memset(seen, 0, sizeof seen);
	int w, i, bad = 0;
	if (sscanf(json_string_value(json_object_get(rec, "content")), "w%d-%d", &w, &i) == 2)
		seen[w][i]++;
	for (size_t k = 0; k < json_array_size(hist); k++) {
		json_t *e = json_array_get(hist, k);
		bad += json_integer_value(json_object_get(e, "revision")) !=
		       (json_int_t)(WRITERS * WRITES - 2 - k);
		if (sscanf(json_string_value(json_object_get(e, "content")), "w%d-%d", &w, &i) == 2 &&
		    w >= 0 && w < WRITERS && i >= 0 && i < WRITES)
			seen[w][i]++;
		else
			bad++;
		/* When a revision was written is when the one before it was superseded. */
		json_t *older = json_array_get(hist, k + 1);
		if (older)
			bad += !json_equal(json_object_get(e, "created_at"),
					   json_object_get(older, "superseded_at"));
		else
			bad += !json_equal(json_object_get(e, "created_at"),
					   json_object_get(rec, "created_at"));
	}
	for (w = 0; w < WRITERS; w++)
		for (i = 0; i < WRITES; i++)
			bad += seen[w][i] != 1;
	CHECK_INT(bad, 0);
	json_decref(r);
	/* A count bounds what fetch returns. */
	r = check_call(h, "memory/fetch", "{\"key\":\"race/k\",\"history\":3}");
	CHECK_INT(json_array_size(json_object_get(result(r), "history")), 3);
	json_decref(r);
}

/* Forgetting a key forgets its revisions: the key written again starts anew. */
static void test_forget_of_a_key_forgets_its_history(void)
{
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"old city\",\"key\":\"f/city\",\"id\":\"fk-1\"}]}"));
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"new city\",\"key\":\"f/city\"}]}"));
	json_t *r = check_call(h, "memory/fetch", "{\"key\":\"f/city\",\"history\":true}");
	CHECK_INT(json_array_size(json_object_get(result(r), "history")), 1);
	const char *id = json_string_value(json_object_get(json_object_get(result(r), "record"), "id"));
	json_t *f = check_call(h, "memory/forget", "{\"ids\":[\"%s\"]}", id);
	CHECK_INT(json_integer_value(json_object_get(result(f), "forgotten")), 1);
	json_decref(f);
	json_decref(r);
	/* The same client id again: the old revisions must not come back with it. */
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"third city\",\"key\":\"f/city\",\"id\":\"fk-1\"}]}"));
	r = check_call(h, "memory/fetch", "{\"key\":\"f/city\",\"history\":true}");
	CHECK_INT(json_integer_value(json_object_get(json_object_get(result(r), "record"), "revision")), 0);
	CHECK_INT(json_array_size(json_object_get(result(r), "history")), 0);
	json_decref(r);
}

/* A write that fails leaves the history as it was (one transaction). */
static void test_failed_write_keeps_no_revision(void)
{
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"v0\",\"key\":\"rb/k\",\"embedding\":[1,2,3]}]}"));
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"v1\",\"key\":\"rb/k\"},"
			       "{\"content\":\"bad width\",\"embedding\":[1,2]}]}");
	CHECK_INT(check_error_code(r), A2M_EMBEDDING_MISMATCH);
	json_decref(r);
	r = check_call(h, "memory/fetch", "{\"key\":\"rb/k\",\"history\":true}");
	CHECK_STR(json_string_value(json_object_get(json_object_get(result(r), "record"), "content")), "v0");
	CHECK_INT(json_array_size(json_object_get(result(r), "history")), 0);
	json_decref(r);
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"v1\",\"key\":\"rb/k\",\"metadata\":{\"why\":\"fix\"}}]}"));
	r = check_call(h, "memory/fetch", "{\"key\":\"rb/k\",\"history\":5}");
	json_t *e = json_array_get(json_object_get(result(r), "history"), 0);
	CHECK_STR(json_string_value(json_object_get(e, "content")), "v0");
	CHECK_INT(json_integer_value(json_object_get(e, "revision")), 0);
	CHECK(json_is_null(json_object_get(e, "owner")));
	json_decref(r);
	r = check_call(h, "memory/fetch", "{\"key\":\"rb/k\",\"history\":-1}");
	CHECK_INT(check_error_code(r), A2M_INVALID_PARAMS);
	json_decref(r);
	/* Without the parameter, fetch answers as without the extension. */
	r = check_call(h, "memory/fetch", "{\"key\":\"rb/k\"}");
	CHECK(json_object_get(result(r), "history") == NULL);
	json_decref(r);
}

/* ---- x-dedup --------------------------------------------------------------- */

#define RACERS 4
#define ROUNDS 20

typedef struct racer {
	int    n;
	char  *ids[ROUNDS];
	long   dups;
} racer;

static void *dup_writer(void *arg)
{
	racer *r = arg;
	for (int i = 0; i < ROUNDS; i++) {
		char *reply = NULL;
		const char *msg = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\",\"params\":"
				  "{\"records\":[{\"content\":\"The same thing, said again!\",\"role\":\"user\","
				  "\"session\":\"race\"}]}}";
		if (a2m_handle(h, msg, A2M_NUL_TERMINATED, &reply) == A2M_OK && reply) {
			json_t *v = json_loads(reply, 0, NULL);
			json_t *res = json_object_get(v, "result");
			const char *id = json_string_value(json_array_get(json_object_get(res, "ids"), 0));
			r->ids[r->n++] = strdup(id ? id : "");
			r->dups += (long)json_integer_value(json_object_get(res, "deduplicated"));
			json_decref(v);
		}
		a2m_free(reply);
	}
	return NULL;
}

/* A duplicate write racing itself: one record, every id the same. */
static void test_duplicate_racing_itself(void)
{
	racer rs[RACERS];
	pthread_t t[RACERS];
	memset(rs, 0, sizeof rs);
	for (int i = 0; i < RACERS; i++)
		pthread_create(&t[i], NULL, dup_writer, &rs[i]);
	for (int i = 0; i < RACERS; i++)
		pthread_join(t[i], NULL);
	long dups = 0;
	int bad = 0;
	for (int i = 0; i < RACERS; i++) {
		dups += rs[i].dups;
		for (int k = 0; k < rs[i].n; k++)
			bad += strcmp(rs[i].ids[k], rs[0].ids[0]) != 0;
		bad += rs[i].n != ROUNDS;
	}
	for (int i = 0; i < RACERS; i++)
		for (int k = 0; k < rs[i].n; k++)
			free(rs[i].ids[k]);
	CHECK_INT(bad, 0);
	CHECK_INT(dups, RACERS * ROUNDS - 1);
	json_t *r = check_call(h, "memory/timeline", "{\"where\":{\"session\":\"race\"}}");
	CHECK_INT(json_array_size(records_of(r)), 1);
	json_decref(r);
}

/* What is a duplicate and what is not. */
static void test_what_counts_as_a_duplicate(void)
{
	a2m_clock_set_for_tests(T0 + 20000000);
	json_t *r = check_call(h, "memory/remember", "{\"records\":["
		"{\"content\":\"Coffee, black.\",\"role\":\"user\",\"session\":\"d\",\"salience\":2},"
		"{\"content\":\"coffee black\",\"role\":\"user\",\"session\":\"d\"},"
		"{\"content\":\"COFFEE   BLACK!\",\"role\":\"user\",\"session\":\"d\",\"salience\":5},"
		"{\"content\":\"coffee black\",\"role\":\"assistant\",\"session\":\"d\"},"
		"{\"content\":\"coffee black\",\"role\":\"user\",\"session\":\"e\"},"
		"{\"content\":\"coffee black\",\"role\":\"user\",\"session\":\"d\",\"owner\":\"o\"},"
		"{\"content\":\"coffee black\",\"role\":\"user\",\"session\":\"d\",\"id\":\"mine\"},"
		"{\"content\":\"coffee black\",\"role\":\"user\",\"session\":\"d\",\"key\":\"d/k\"},"
		"{\"content\":\"coffee black\",\"role\":\"user\",\"session\":\"d\",\"tier\":\"episodic\"},"
		"{\"content\":\"coffee, black, please\",\"role\":\"user\",\"session\":\"d\"}]}");
	json_t *ids = json_object_get(result(r), "ids");
	CHECK_INT(json_integer_value(json_object_get(result(r), "deduplicated")), 2);
	const char *first = json_string_value(json_array_get(ids, 0));
	CHECK_STR(json_string_value(json_array_get(ids, 1)), first);
	CHECK_STR(json_string_value(json_array_get(ids, 2)), first);
	for (size_t i = 3; i < json_array_size(ids); i++)
		CHECK(strcmp(json_string_value(json_array_get(ids, i)), first) != 0);
	CHECK_STR(json_string_value(json_array_get(ids, 6)), "mine");
	json_t *got = check_call(h, "memory/timeline", "{\"where\":{\"id\":\"%s\"}}", first);
	json_t *rec = json_array_get(records_of(got), 0);
	/* Refreshed: the higher salience, accessed now, content as first written. */
	CHECK_NEAR(json_number_value(json_object_get(rec, "salience")), 5.0, 1e-9);
	CHECK_STR(json_string_value(json_object_get(rec, "content")), "Coffee, black.");
	char at[A2M_TIMESTAMP_LEN];
	CHECK_STR(json_string_value(json_object_get(rec, "accessed_at")),
		  a2m_clock_format(T0 + 20000000, at));
	json_decref(got);
	json_decref(r);
	/* An expired record is no one's original. */
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"short lived\",\"ttl_seconds\":1}]}"));
	a2m_clock_set_for_tests(T0 + 20001000);
	r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"short lived\"}]}");
	CHECK(json_object_get(result(r), "deduplicated") == NULL);
	json_decref(r);
	r = check_call(h, "memory/timeline", "{\"where\":{\"content\":\"short lived\"}}");
	CHECK_INT(json_array_size(records_of(r)), 1);
	json_decref(r);
}

static const test_case tests[] = {
	TEST(test_expired_never_returned_at_the_instant),
	TEST(test_sweep_reports_one_forgotten_event),
	TEST(test_tier_ttl_and_wire_shape),
	TEST(test_expiry_params_checked),
	TEST(test_history_after_concurrent_key_writes),
	TEST(test_forget_of_a_key_forgets_its_history),
	TEST(test_failed_write_keeps_no_revision),
	TEST(test_duplicate_racing_itself),
	TEST(test_what_counts_as_a_duplicate),
	{NULL, NULL}
};

/*
** A record brought in whole (remember's import form, the shape of an a2m
** export's line) keeps its expiry only where x-expiry is declared: spec
** §4.2 has a server ignore the fields of capabilities it does not declare,
** and a past expiry kept anyway hid the record from every read.
*/
static int import_expiry_needs_the_capability(void)
{
	static const char *const caps[] = {
		"core,tiers,salience,scopes,sessions,keys,embeddings,external,events,summarize,"
		"prompt,x-where,x-history,x-dedup",
		NULL};
	int failed = 0;
	for (int declared = 0; declared < 2; declared++) {
		a2m *s = check_open("engine", "memory", "capabilities", caps[declared], NULL);
		if (!s)
			return 1;
		json_t *r = check_call(s, "memory/remember", "{\"import\":true,\"records\":[{"
				       "\"id\":\"imp-1\",\"content\":\"imported long ago\","
				       "\"created_at\":\"2000-06-01T00:00:00.000Z\","
				       "\"expires_at\":\"2001-01-01T00:00:00.000Z\"}]}");
		failed |= json_object_get(result(r), "ids") == NULL;
		json_decref(r);
		r = check_call(s, "memory/timeline", "{}");
		failed |= (int)json_array_size(records_of(r)) != (declared ? 0 : 1);
		failed |= !declared && json_object_get(json_array_get(records_of(r), 0),
							"expires_at") != NULL;
		json_decref(r);
		a2m_close(s);
	}
	printf("%s an imported expiry is kept only with x-expiry declared\n%d passed, %d failed\n",
	       failed ? "FAIL" : "ok  ", !failed, failed);
	return failed;
}

/* Two handles on the deployment pg names, the tests' clock at T0. Returns 0, or 1 (none open). */
static int open_two(const char *pg, a2m **idle, a2m **writer)
{
	a2m_clock_set_for_tests(T0);
	*idle = check_open("engine", "postgres", "postgres", pg, NULL);
	*writer = *idle ? check_open("engine", "postgres", "postgres", pg, NULL) : NULL;
	if (*writer)
		return 0;
	a2m_close(*idle);
	return 1;
}

/*
** PostgreSQL: a record another server of the deployment wrote to expire is
** swept by an idle server that never saw it written (a2m_sweep rereads
** the earliest expiry once the deployment moved), and a second sweep finds
** nothing more to report.
*/
static int idle_server_sweeps_what_another_wrote(const char *pg)
{
	int failed = 0;
	char at[A2M_TIMESTAMP_LEN];
	a2m *idle, *writer;
	if (open_two(pg, &idle, &writer) != 0)
		return 1;
	int64_t next = 0;
	failed |= a2m_sweep(idle, &next) != A2M_OK || next != -1;
	json_t *r = check_call(idle, "memory/events", "{}");
	char *cursor = strdup(json_string_value(json_object_get(result(r), "cursor")));
	json_decref(r);
	json_decref(check_call(writer, "memory/remember", "{\"records\":[{\"content\":\"theirs\","
			       "\"tier\":\"semantic\",\"expires_at\":\"%s\"}]}",
			       a2m_clock_format(T0 + 5000, at)));
	a2m_close(writer);   /* it will not sweep it */
	failed |= a2m_sweep(idle, &next) != A2M_OK || next != 5000;
	a2m_clock_set_for_tests(T0 + 5000);
	failed |= a2m_sweep(idle, &next) != A2M_OK || next != -1;
	r = check_call(idle, "memory/events", "{\"cursor\":\"%s\",\"kinds\":[\"forgotten\"]}",
		       cursor);
	json_t *evs = json_object_get(result(r), "events");
	failed |= json_array_size(evs) != 1 ||
		  !json_is_true(json_object_get(json_array_get(evs, 0), "expired"));
	json_decref(r);
	r = check_call(idle, "memory/timeline", "{}");
	failed |= json_array_size(records_of(r)) != 0;
	json_decref(r);
	free(cursor);
	a2m_close(idle);
	a2m_clock_set_for_tests(0);
	printf("%s an idle server sweeps what another server wrote to expire\n"
	       "%d passed, %d failed\n", failed ? "FAIL" : "ok  ", !failed, failed);
	return failed;
}

static void ignore_note(const char *notification, void *user)
{
	(void)notification;
	(void)user;
}

/*
** PostgreSQL: the same with nobody calling a2m_sweep: a handle with a
** notify callback (a stdio server's) hears the other server's commit on
** its store's thread, rereads the earliest expiry there, and is called
** back on that thread when it comes (server/handle.c, heard), so the
** record goes while this thread only waits. Checked by SQL, since a call
** on the handle would sweep it itself.
*/
static int listener_sweeps_what_another_wrote(const char *pg, const char *schema)
{
	int failed = 0;
	char at[A2M_TIMESTAMP_LEN], sql[160];
	a2m *idle, *writer;
	if (open_two(pg, &idle, &writer) != 0)
		return 1;
	a2m_set_notify(idle, ignore_note, NULL);
	json_decref(check_call(idle, "memory/describe", "{}"));
	json_decref(check_call(writer, "memory/remember", "{\"records\":[{\"content\":\"heard\","
			       "\"tier\":\"semantic\",\"expires_at\":\"%s\"}]}",
			       a2m_clock_format(T0 + 5000, at)));
	a2m_close(writer);
	a2m_clock_set_for_tests(T0 + 5000);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.a2m_records", schema);
	long long left = -1;
	for (int i = 0; i < 100 && left != 0; i++) {
		usleep(50000);
		left = pg_test_int(sql, NULL);
	}
	failed |= left != 0;
	a2m_set_notify(idle, NULL, NULL);
	a2m_close(idle);
	a2m_clock_set_for_tests(0);
	printf("%s an idle handle with a notify callback sweeps what another server wrote to "
	       "expire, from its store's thread\n%d passed, %d failed\n", failed ? "FAIL" : "ok  ",
	       !failed, failed);
	return failed;
}

/*
** A store reopened still knows what expires, and the bound on revisions:
** the SQLite file, or the PostgreSQL deployment pg names (NULL: SQLite).
*/
static int reopened(const char *pg)
{
	int failed = 0;
	char at[A2M_TIMESTAMP_LEN];
	const char *engine = pg ? "postgres" : "sqlite";
	check_remove_db(db_path);
	a2m_clock_set_for_tests(T0);
	a2m *s = check_open("engine", engine, "path", db_path, "postgres", pg,
			    "history_revisions", "3", NULL);
	if (!s)
		return 1;
	json_decref(check_call(s, "memory/remember", "{\"records\":[{\"content\":\"later\",\"expires_at\":\"%s\"}]}",
			       a2m_clock_format(T0 + 60000, at)));
	for (int i = 0; i < 10; i++)
		json_decref(check_call(s, "memory/remember", "{\"records\":[{\"content\":\"v%d\",\"key\":\"b/k\"}]}", i));
	json_t *r = check_call(s, "memory/fetch", "{\"key\":\"b/k\",\"history\":true}");
	json_t *hist = json_object_get(result(r), "history");
	failed |= json_array_size(hist) != 3;
	failed |= json_integer_value(json_object_get(json_array_get(hist, 2), "revision")) != 6;
	json_decref(r);
	a2m_close(s);
	if (!(s = check_open("engine", engine, "path", db_path, "postgres", pg,
			     "history_revisions", "3", NULL)))
		return 1;
	int64_t next = 0;
	failed |= a2m_sweep(s, &next) != A2M_OK || next != 60000;
	a2m_clock_set_for_tests(T0 + 60000);
	failed |= a2m_sweep(s, &next) != A2M_OK || next != -1;
	a2m_close(s);
	check_remove_db(db_path);
	a2m_clock_set_for_tests(0);
	printf("%s reopened (%s): expiry and revisions kept\n%d passed, %d failed\n",
	       failed ? "FAIL" : "ok  ", engine, !failed, failed);
	return failed;
}

int main(void)
{
	snprintf(cfg_path, sizeof cfg_path, "/tmp/a2m-test-ext-%d.json", (int)getpid());
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-ext-%d.db", (int)getpid());
	FILE *f = fopen(cfg_path, "w");
	if (!f || fputs(layout, f) < 0 || fclose(f) != 0)
		return 1;
	int status = 0;
	/* 0 memory, 1 SQLite, 2 PostgreSQL (a schema of the test server). */
	char pg_schema[64], pg_conninfo[512];
	int engines = pg_test_engines("a2m_tx", pg_schema, sizeof pg_schema, pg_conninfo,
				      sizeof pg_conninfo);
	for (int e = 0; e < engines; e++) {
		check_remove_db(db_path);
		a2m_clock_set_for_tests(T0);
		if (!(h = check_open("engine", pg_test_engine_names[e], "path", db_path,
				     "config_file", cfg_path, "postgres", e == 2 ? pg_conninfo : NULL,
				     NULL)))
			return 1;
		printf("# engine %s\n", pg_test_engine_names[e]);
		status |= run_tests(tests);
		a2m_close(h);
	}
	a2m_clock_set_for_tests(0);
	unlink(cfg_path);
	status |= import_expiry_needs_the_capability();
	status |= reopened(NULL);
	if (engines == 3 && pg_test_schema_fresh(pg_schema) == 0)
		status |= reopened(pg_conninfo);
	if (engines == 3 && pg_test_schema_fresh(pg_schema) == 0)
		status |= idle_server_sweeps_what_another_wrote(pg_conninfo);
	if (engines == 3 && pg_test_schema_fresh(pg_schema) == 0)
		status |= listener_sweeps_what_another_wrote(pg_conninfo, pg_schema);
	pg_test_schema_drop(pg_schema);
	check_remove_db(db_path);
	return status;
}
