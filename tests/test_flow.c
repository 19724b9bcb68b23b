/*
** test_flow.c — what the kept counts and groups serve, through a2m_handle,
** against both storage engines:
**
**   - capacity kept exactly now that a write checks only the buckets it
**     entered (stack/flow.c): per session in working memory, whole in
**     episodic, and after a reopen with a smaller layout, every bucket —
**     not only those written — is brought down by the first write (the
**     layout change needs a file, so SQLite only);
**   - memory/timeline with `where` on a session (and more) gives exactly
**     what the unfiltered timeline filtered afterwards gives, on random
**     data: the store answers a session equality itself
**     (stack/select.c, a2m_stack_narrow_by_where); the rest of `where`
**     must still apply;
**   - memory/session/list names each of many sessions (more than the
**     list's first room) once, with its own counts.
*/
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "pg_helper.h"

static a2m *h;
static char path[] = "/tmp/a2m-test-flow-XXXXXX";
static char conf[64];

/* Remembers one turn, no tier given: it lands in working memory. */
static void turn(const char *session, int i)
{
	char text[64];
	snprintf(text, sizeof text, "turn %d of %s", i, session);
	json_decref(check_result_of(h, "memory/remember",
			 json_pack("{s[{ss ss}]}", "records", "content", text, "session", session)));
}

/* The contents in tier (and session, when not NULL), oldest first. */
static json_t *contents(const char *tier, const char *session)
{
	json_t *where = json_pack("{ss}", "tier", tier);
	if (session)
		json_object_set_new(where, "session", json_string(session));
	json_t *res = check_result_of(h, "memory/timeline", json_pack("{so}", "where", where));
	json_t *out = json_array();
	json_t *r;
	size_t i;
	json_array_foreach(json_object_get(res, "records"), i, r)
		json_array_append(out, json_object_get(r, "content"));
	json_decref(res);
	return out;
}

static size_t count_in(const char *tier, const char *session)
{
	json_t *c = contents(tier, session);
	size_t n = json_array_size(c);
	json_decref(c);
	return n;
}

static char pg_schema[64], pg_conninfo[512];

/* sqlite: 0 memory, 1 SQLite, 2 PostgreSQL (tests/pg_helper.h). */
static int open_store(int sqlite, const char *config)
{
	if (sqlite == 2)
		pg_test_conninfo(pg_schema, pg_conninfo, sizeof pg_conninfo);
	h = check_open("engine", pg_test_engine_names[sqlite], "path", path, "config_file", config,
		       "postgres", sqlite == 2 ? pg_conninfo : NULL, NULL);
	return h ? 0 : -1;
}

static const char *const sessions[] = {"a", "b", "c"};

/* 40 turns in each of three interleaved sessions. */
static void test_working_keeps_the_newest_24_of_each_session(void)
{
	for (int i = 0; i < 40; i++)
		for (int s = 0; s < 3; s++)
			turn(sessions[s], i);
	for (int s = 0; s < 3; s++) {
		json_t *c = contents("working", sessions[s]);
		CHECK_INT(json_array_size(c), 24);
		char want[64];
		snprintf(want, sizeof want, "turn 16 of %s", sessions[s]);
		CHECK_STR(json_string_value(json_array_get(c, 0)), want);
		snprintf(want, sizeof want, "turn 39 of %s", sessions[s]);
		CHECK_STR(json_string_value(json_array_get(c, 23)), want);
		json_decref(c);
		CHECK_INT(count_in("episodic", sessions[s]), 16);
	}
}

/* 256 in episodic at most: 100 more turns of a fourth session spill on. */
static void test_episodic_holds_at_most_its_capacity(void)
{
	for (int i = 0; i < 300; i++)
		turn("d", i);
	CHECK_INT(count_in("working", "d"), 24);
	CHECK_INT(count_in("episodic", NULL), 256);
	CHECK_INT(count_in("semantic", NULL), 3 * 16 + 276 - 256);
}

static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

static const char *const tl_sessions[] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7",
				       "s8", "s9", "", NULL};
#define N_TL_SESSIONS (sizeof tl_sessions / sizeof tl_sessions[0])
static const char *const roles[] = {"user", "assistant"};
static const char *const tiers[] = {"semantic", "episodic", "procedural"};

/* 600 records, in batches, over the sessions (NULL: none) at random. */
static void load_conversations(void)
{
	uint64_t x = 7;
	for (int b = 0; b < 30; b++) {
		json_t *recs = json_array();
		for (int i = 0; i < 20; i++) {
			const char *s = tl_sessions[lcg(&x) % N_TL_SESSIONS];
			json_t *r = json_pack("{ss ss ss}", "content", "a turn of some conversation",
					      "role", roles[lcg(&x) % 2],
					      "tier", tiers[lcg(&x) % 3]);
			if (s)
				json_object_set_new(r, "session", json_string(s));
			json_array_append_new(recs, r);
		}
		json_decref(check_result_of(h, "memory/remember", json_pack("{so}", "records", recs)));
	}
}

/* Does rec pass where? Only the keys the tests use: session, role, tier. */
static int passes(const json_t *rec, const json_t *where)
{
	const char *k;
	json_t *want;
	json_object_foreach((json_t *)where, k, want) {
		json_t *got = json_object_get(rec, k);
		if (!json_equal(got ? got : json_null(), want))
			return 0;
	}
	return 1;
}

/* The ids of a timeline answer, or of the last `limit` of `all` passing where. */
static char *ids_of(const json_t *records, const json_t *where, size_t limit)
{
	json_t *ids = json_array();
	size_t n = json_array_size(records), start = 0;
	if (where) {
		json_t *kept = json_array();
		for (size_t i = 0; i < n; i++)
			if (passes(json_array_get(records, i), where))
				json_array_append(kept, json_array_get(records, i));
		n = json_array_size(kept);
		start = limit && n > limit ? n - limit : 0;
		for (size_t i = start; i < n; i++)
			json_array_append(ids, json_object_get(json_array_get(kept, i), "id"));
		json_decref(kept);
	} else {
		for (size_t i = 0; i < n; i++)
			json_array_append(ids, json_object_get(json_array_get(records, i), "id"));
	}
	char *s = json_dumps(ids, JSON_COMPACT);
	json_decref(ids);
	return s;
}

static void compare(const json_t *all, json_t *where, size_t limit)
{
	json_t *params = json_pack("{sO}", "where", where);
	if (limit)
		json_object_set_new(params, "limit", json_integer((json_int_t)limit));
	json_t *res = check_result_of(h, "memory/timeline", params);
	char *got = ids_of(json_object_get(res, "records"), NULL, 0);
	char *want = ids_of(all, where, limit);
	CHECK(got && want && strcmp(got, want) == 0);
	if (got && want && strcmp(got, want) != 0) {
		char *w = json_dumps(where, JSON_COMPACT);
		fprintf(stderr, "  where %s limit %zu:\n    got  %.300s\n    want %.300s\n",
			w ? w : "?", limit, got, want);
		free(w);
	}
	free(got);
	free(want);
	json_decref(res);
	json_decref(where);
}

static void test_timeline_by_session_equals_filtering_afterwards(void)
{
	json_t *before = check_result_of(h, "memory/timeline", json_object());
	size_t n0 = json_array_size(json_object_get(before, "records"));
	json_decref(before);
	load_conversations();
	json_t *all = check_result_of(h, "memory/timeline", json_object());
	json_t *records = json_object_get(all, "records");
	CHECK_INT(json_array_size(records), n0 + 600);
	static const size_t limits[] = {0, 1, 7, 20, 1000};
	for (size_t s = 0; s < N_TL_SESSIONS; s++) {
		json_t *sv = tl_sessions[s] ? json_string(tl_sessions[s]) : json_null();
		for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
			compare(records, json_pack("{sO}", "session", sv), limits[l]);
			/* The rest of where still applies. */
			compare(records, json_pack("{sO ss}", "session", sv, "role", "user"),
				limits[l]);
			compare(records, json_pack("{sO ss}", "session", sv, "tier", "episodic"),
				limits[l]);
		}
		json_decref(sv);
	}
	/* A session no record has, and a value no session can equal. */
	compare(records, json_pack("{ss}", "session", "nobody"), 20);
	compare(records, json_pack("{si}", "session", 3), 20);
	compare(records, json_pack("{ss}", "tier", "procedural"), 20);
	json_decref(all);
}

/*
** A tier without a name, after a tier that spills into a later one: the
** layout is refused with the tier's number. Looking the spill target up
** read every tier's name before the nameless one was checked, and that
** was a NULL read at open (found by fuzz_config, docs/FUZZING.md).
*/
static void test_layout_with_a_nameless_tier_refused(void)
{
	char file[80];
	snprintf(file, sizeof file, "%s.nameless.json", path);
	FILE *f = fopen(file, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs("{\"tiers\": [{\"name\": \"working\", \"kind\": \"working\", \"spill_to\": \"episodic\"},"
	      "{\"kind\": \"episodic\"}, {\"name\": \"episodic\", \"kind\": \"episodic\"}]}", f);
	CHECK_INT(fclose(f), 0);
	a2m_config *cfg;
	a2m *other = NULL;
	char *err = NULL;
	CHECK_INT(a2m_config_new(&cfg), A2M_OK);
	CHECK_INT(a2m_config_set(cfg, "engine", "memory"), A2M_OK);
	CHECK_INT(a2m_config_set(cfg, "config_file", file), A2M_OK);
	CHECK_INT(a2m_open(cfg, &other, &err), A2M_RANGE);
	CHECK(other == NULL);
	CHECK(err && strstr(err, "tier 1 needs a name and a kind"));
	a2m_free(err);
	a2m_config_free(cfg);
	unlink(file);
}

/*
** memory/session/list over more sessions than its list's first room (16,
** stack/conversations.c): 40 sessions "many-N" of N % 3 + 1 turns each,
** each named once, with its own count of records, all in working memory.
*/
static void test_session_list_names_every_one_of_many_sessions(void)
{
	enum { MANY = 40 };
	char name[32];
	for (int i = 0; i < MANY; i++) {
		snprintf(name, sizeof name, "many-%d", i);
		for (int t = 0; t <= i % 3; t++)
			turn(name, t);
	}
	json_t *res = check_result_of(h, "memory/session/list", json_object());
	json_t *list = json_object_get(res, "sessions"), *s;
	int seen[MANY] = {0}, wrong = 0;
	size_t k;
	json_array_foreach(list, k, s) {
		int i;
		const char *got = json_string_value(json_object_get(s, "session"));
		if (!got || sscanf(got, "many-%d", &i) != 1 || i < 0 || i >= MANY)
			continue;
		seen[i]++;
		json_int_t records = json_integer_value(json_object_get(s, "records"));
		json_int_t working = json_integer_value(
			json_object_get(json_object_get(s, "tiers"), "working"));
		if (records != i % 3 + 1 || working != records) {
			wrong++;
			fprintf(stderr, "  %s: %lld records, %lld in working; want %d\n", got,
				(long long)records, (long long)working, i % 3 + 1);
		}
	}
	for (int i = 0; i < MANY; i++)
		CHECK_INT(seen[i], 1);
	CHECK_INT(wrong, 0);
	json_decref(res);
}

static const test_case tests[] = {
	TEST(test_working_keeps_the_newest_24_of_each_session),
	TEST(test_episodic_holds_at_most_its_capacity),
	TEST(test_timeline_by_session_equals_filtering_afterwards),
	TEST(test_layout_with_a_nameless_tier_refused),
	TEST(test_session_list_names_every_one_of_many_sessions),
	{NULL, NULL},
};

/*
** Reopened with working capacity 10, the first write (to session a) brings
** every session down to 10, not only a.
*/
static void test_smaller_layout_applies_to_every_session_at_the_first_write(void)
{
	turn("a", 100);
	CHECK_INT(count_in("working", "a"), 10);
	CHECK_INT(count_in("working", "b"), 10);
	CHECK_INT(count_in("working", "c"), 10);
	CHECK_INT(count_in("working", "d"), 10);
	/* From then on only a's bucket is written, and the others stay. */
	turn("a", 101);
	CHECK_INT(count_in("working", "a"), 10);
	CHECK_INT(count_in("working", "b"), 10);
}

static const test_case reopened[] = {
	TEST(test_smaller_layout_applies_to_every_session_at_the_first_write),
	{NULL, NULL},
};

static int write_config(void)
{
	snprintf(conf, sizeof conf, "%s.json", path);
	FILE *f = fopen(conf, "w");
	if (!f)
		return -1;
	fputs("{\"tiers\": ["
	      "{\"name\": \"working\", \"kind\": \"working\", \"capacity\": 10,"
	      " \"per_session\": true, \"spill_to\": \"episodic\"},"
	      "{\"name\": \"episodic\", \"kind\": \"episodic\", \"capacity\": 256,"
	      " \"spill_to\": \"semantic\"},"
	      "{\"name\": \"semantic\", \"kind\": \"semantic\"},"
	      "{\"name\": \"procedural\", \"kind\": \"procedural\"}]}\n", f);
	return fclose(f) == 0 ? 0 : -1;
}

int main(void)
{
	int fd = mkstemp(path), status = 0;
	if (fd < 0)
		return 1;
	close(fd);
	static const char *const names[] = {"memory", "sqlite", "postgres"};
	snprintf(pg_schema, sizeof pg_schema, "a2m_tf_%d", (int)getpid());
	if (pg_test_server())
		pg_test_schema_fresh(pg_schema);
	else
		printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
	int engines = pg_test_server() ? 3 : 2;
	check_remove_db(path);
	for (int sqlite = 0; sqlite < engines && !status; sqlite++) {
		if (open_store(sqlite, NULL) != 0)
			return 1;
		printf("# engine %s\n", names[sqlite]);
		status = run_tests(tests);
		a2m_close(h);
	}
	/* The durable engines, reopened on what the first open left. */
	for (int sqlite = 1; sqlite < engines && !status; sqlite++) {
		if (write_config() == 0 && open_store(sqlite, conf) == 0) {
			printf("# %s, reopened with working capacity 10\n", names[sqlite]);
			status = run_tests(reopened);
			a2m_close(h);
		} else {
			status = 1;
		}
	}
	pg_test_schema_drop(pg_schema);
	check_remove_db(path);
	unlink(conf);
	return status;
}
