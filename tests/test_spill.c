/*
** test_spill.c — which units capacity spills, exactly, through a2m_handle,
** on every engine (memory, SQLite, and PostgreSQL with A2M_TEST_POSTGRES):
**
**   - hand-worked outcomes, step by step, with the clock set: a group that
**     spans the bucket's order leaves whole, by its newest member, from a
**     working tier and from an episodic one; records of one millisecond go
**     by seq; per-session buckets do not evict each other (and records with
**     no session are a bucket of their own);
**   - what capacity keeps of a bucket between writes (stack/roster.c) is
**     never used stale: after recall's touches, a reinforce, and another
**     handle's writes to the same store (a second connection to the file
**     or schema: another server), the weakest unit is the one the store
**     now holds;
**   - a random mix of writes, recalls, reinforces and forgets gives the
**     same tiers with the rosters as without them (capacity then reads its
**     bucket at every check);
**   - over such a mix, each keyed pick of the unit that leaves
**     (stack/spill_key.c) is the plan's, and each roster that stood in for
**     the store's count holds as many records as the store counts.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "pg_helper.h"
#include "stack/stack_internal.h"
#include "util/clock.h"

static a2m *h;
static int engine;  /* 0 memory, 1 SQLite, 2 PostgreSQL (pg_helper.h) */
static char path[] = "/tmp/a2m-test-spill-XXXXXX";
static char conf[] = "/tmp/a2m-test-spill-conf-XXXXXX";
static char pg_schema[64], pg_conninfo[512];

#define T0 1700000000000LL

/* Working: 4 a session; episodic: 5, halving every 10 s; semantic: no bound. */
static int write_config(void)
{
	FILE *f = fopen(conf, "w");
	if (!f)
		return -1;
	fputs("{\"tiers\": ["
	      "{\"name\": \"working\", \"kind\": \"working\", \"capacity\": 4,"
	      " \"per_session\": true, \"spill_to\": \"episodic\"},"
	      "{\"name\": \"episodic\", \"kind\": \"episodic\", \"capacity\": 5,"
	      " \"half_life_seconds\": 10, \"spill_to\": \"semantic\"},"
	      "{\"name\": \"semantic\", \"kind\": \"semantic\"}]}\n", f);
	return fclose(f) == 0 ? 0 : -1;
}

static a2m *open_handle(void)
{
	return check_open("engine", pg_test_engine_names[engine], "path", path, "config_file",
			  conf, "postgres", engine == 2 ? pg_conninfo : NULL, NULL);
}

/* A fresh, empty store for each test. */
static void fresh(void)
{
	if (h)
		a2m_close(h);
	check_remove_db(path);
	if (engine == 2)
		pg_test_schema_fresh(pg_schema);
	h = open_handle();
	CHECK(h != NULL);
}

/*
** Remembers content at T0 + at seconds (session, group, tier NULL: none
** given; salience < 0: none given) through handle x; returns its id
** (free()).
*/
static char *put_on(a2m *x, int64_t at, const char *content, const char *session,
		    const char *group, const char *tier, double salience)
{
	a2m_clock_set_for_tests(T0 + at);
	json_t *rec = json_pack("{ss}", "content", content);
	if (session)
		json_object_set_new(rec, "session", json_string(session));
	if (group)
		json_object_set_new(rec, "group", json_string(group));
	if (tier)
		json_object_set_new(rec, "tier", json_string(tier));
	if (salience >= 0)
		json_object_set_new(rec, "salience", json_real(salience));
	json_t *res = check_result_of(x, "memory/remember", json_pack("{s[o]}", "records", rec));
	const char *id = json_string_value(json_array_get(json_object_get(res, "ids"), 0));
	char *out = strdup(id ? id : "");
	json_decref(res);
	return out;
}

static void put(int64_t at, const char *content, const char *session, const char *group)
{
	free(put_on(h, at, content, session, group, NULL, -1));
}

/*
** Every record of x, as "working[a b] episodic[c] semantic[]": each tier's
** contents in timeline order (oldest first). Free with free().
*/
static char *state_of(a2m *x)
{
	static const char *const tiers[] = {"working", "episodic", "semantic"};
	char *out = calloc(1, 1 << 16);
	size_t used = 0;
	/* One timeline of every record, split by tier: each tier's records in
	** the order a timeline of that tier alone gives (one call, not three:
	** the random test reads both stores' state at each of its steps). */
	json_t *res = check_result_of(x, "memory/timeline", json_pack("{si}", "limit", 1000));
	json_t *recs = json_object_get(res, "records"), *r;
	CHECK(json_array_size(recs) < 1000);
	for (size_t t = 0; out && t < 3; t++) {
		used += (size_t)snprintf(out + used, (1 << 16) - used, "%s%s[", t ? " " : "", tiers[t]);
		size_t i;
		int first = 1;
		json_array_foreach(recs, i, r) {
			if (strcmp(json_string_value(json_object_get(r, "tier")), tiers[t]) != 0)
				continue;
			used += (size_t)snprintf(out + used, (1 << 16) - used, "%s%s", first ? "" : " ",
						 json_string_value(json_object_get(r, "content")));
			first = 0;
		}
		used += (size_t)snprintf(out + used, (1 << 16) - used, "]");
	}
	json_decref(res);
	return out;
}

#define CHECK_STATE(want) do { \
	char *got_ = state_of(h); \
	CHECK_STR(got_, want); \
	free(got_); \
} while (0)

/* r1 and r4 are one group: it leaves working when its newest member is the oldest. */
static void test_a_group_spanning_the_order_leaves_whole_by_its_newest(void)
{
	fresh();
	put(1, "r1", "s", "g");
	put(2, "r2", "s", NULL);
	put(3, "r3", "s", NULL);
	put(4, "r4", "s", "g");
	put(5, "r5", "s", NULL);
	CHECK_STATE("working[r1 r3 r4 r5] episodic[r2] semantic[]");
	put(6, "r6", "s", NULL);
	CHECK_STATE("working[r1 r4 r5 r6] episodic[r2 r3] semantic[]");
	put(7, "r7", "s", NULL);
	CHECK_STATE("working[r5 r6 r7] episodic[r1 r2 r3 r4] semantic[]");
	put(8, "r8", "s", NULL);
	put(9, "r9", "s", NULL);
	CHECK_STATE("working[r6 r7 r8 r9] episodic[r1 r2 r3 r4 r5] semantic[]");
	/* Episodic over by one: the group is as strong as r4, so r2 goes. */
	put(10, "r10", "s", NULL);
	CHECK_STATE("working[r7 r8 r9 r10] episodic[r1 r3 r4 r5 r6] semantic[r2]");
	put(11, "r11", "s", NULL);
	CHECK_STATE("working[r8 r9 r10 r11] episodic[r1 r4 r5 r6 r7] semantic[r2 r3]");
	/* Now the group is the weakest unit there: both leave, for one over. */
	put(12, "r12", "s", NULL);
	CHECK_STATE("working[r9 r10 r11 r12] episodic[r5 r6 r7 r8] semantic[r1 r2 r3 r4]");
}

/* One millisecond for every write: seq orders them, groups still by newest. */
static void test_records_of_one_millisecond_go_by_seq(void)
{
	fresh();
	static const char *const group[] = {NULL, "gg", NULL, NULL, NULL, "gg", NULL, NULL,
					    NULL, NULL};
	char name[24];
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof name, "q%d", i + 1);
		put(0, name, "s", group[i]);
		if (i == 5)
			CHECK_STATE("working[q2 q4 q5 q6] episodic[q1 q3] semantic[]");
		if (i == 8)
			CHECK_STATE("working[q7 q8 q9] episodic[q2 q3 q4 q5 q6] semantic[q1]");
	}
	CHECK_STATE("working[q7 q8 q9 q10] episodic[q2 q3 q4 q5 q6] semantic[q1]");
}

/* Each session's working memory is its own; no session is one more. */
static void test_sessions_do_not_evict_each_other(void)
{
	fresh();
	static const char *const who[] = {"a", "b", "a", NULL, "a", "a", NULL, "a", "b", "a",
					  NULL, NULL, NULL};
	char name[24];
	for (int i = 0; i < 13; i++) {
		snprintf(name, sizeof name, "%s%d", who[i] ? who[i] : "n", i + 1);
		put(i + 1, name, who[i], NULL);
	}
	CHECK_STATE("working[b2 a5 a6 n7 a8 b9 a10 n11 n12 n13] episodic[a1 a3 n4] semantic[]");
}

/* Episodic e1..e5 full; e6 spills e1; returns nothing. The roster is now kept. */
static void fill_episodic(a2m *x)
{
	static const char *const text[] = {"e1 plain", "e2 alpha", "e3 plain", "e4 plain",
					   "e5 plain", "e6 plain"};
	for (int i = 0; i < 6; i++)
		free(put_on(x, 100 + i, text[i], NULL, NULL, "episodic", 0.5));
}

/* A recall's touches make e2 stronger: the next write spills e3 instead. */
static void test_touches_are_weighed_at_the_next_spill(void)
{
	fresh();
	fill_episodic(h);
	CHECK_STATE("working[] episodic[e2 alpha e3 plain e4 plain e5 plain e6 plain]"
		    " semantic[e1 plain]");
	a2m_clock_set_for_tests(T0 + 107 * 1000);
	json_decref(check_result_of(h, "memory/recall", json_pack("{ss}", "query", "alpha")));
	free(put_on(h, 108, "e7 plain", NULL, NULL, "episodic", 0.5));
	CHECK_STATE("working[] episodic[e2 alpha e4 plain e5 plain e6 plain e7 plain]"
		    " semantic[e1 plain e3 plain]");
}

/* The id of content in x, or NULL (free()). */
static char *id_of(a2m *x, const char *content)
{
	json_t *res = check_result_of(x, "memory/timeline",
		json_pack("{s{ss} si}", "where", "content", content, "limit", 1));
	const char *id = json_string_value(json_object_get(
		json_array_get(json_object_get(res, "records"), 0), "id"));
	char *out = id ? strdup(id) : NULL;
	json_decref(res);
	return out;
}

/* e2's salience raised (by reinforcer): writer's next write spills e3. */
static void reinforce_e2_then_write(a2m *writer, a2m *reinforcer)
{
	char *id = id_of(reinforcer, "e2 alpha");
	CHECK(id != NULL);
	json_decref(check_result_of(reinforcer, "memory/reinforce",
		json_pack("{s[s] sf}", "ids", id ? id : "", "amount", 2.0)));
	free(id);
	free(put_on(writer, 108, "e7 plain", NULL, NULL, "episodic", 0.5));
}

static void test_a_reinforce_is_weighed_at_the_next_spill(void)
{
	fresh();
	fill_episodic(h);
	reinforce_e2_then_write(h, h);
	CHECK_STATE("working[] episodic[e2 alpha e4 plain e5 plain e6 plain e7 plain]"
		    " semantic[e1 plain e3 plain]");
}

/*
** Another writer of the same store (SQLite: a second connection to the
** file; PostgreSQL: a second server on the schema) reinforces, forgets:
** the first sees it at its next spill.
*/
static void test_another_writer_is_seen_at_the_next_spill(void)
{
	fresh();
	if (engine == 0)
		return;  /* one handle owns a memory store */
	a2m *other = open_handle();
	CHECK(other != NULL);
	if (!other)
		return;
	fill_episodic(h);
	reinforce_e2_then_write(h, other);
	CHECK_STATE("working[] episodic[e2 alpha e4 plain e5 plain e6 plain e7 plain]"
		    " semantic[e1 plain e3 plain]");
	/* The other forgets e4 and writes e8 below e5's strength. */
	json_decref(check_result_of(other, "memory/forget",
		json_pack("{s{ss}}", "where", "content", "e4 plain")));
	free(put_on(other, 50, "e8 weak", NULL, NULL, "episodic", 0.01));
	free(put_on(h, 109, "e9 plain", NULL, NULL, "episodic", 0.5));
	CHECK_STATE("working[] episodic[e2 alpha e5 plain e6 plain e7 plain e9 plain]"
		    " semantic[e8 weak e1 plain e3 plain]");
	a2m_close(other);
}

static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

/* One random step on x: a write (in a group or not, unless grouped is 0),
** a recall, a reinforce or a forget. */
static void random_step(a2m *x, uint64_t op, int64_t at, int i, int grouped)
{
	static const char *const sessions[] = {"a", "b", NULL};
	static const char *const groups[] = {"g1", "g2", NULL, NULL, NULL, NULL};
	static const char *const words[] = {"red", "green", "blue", "gray"};
	char text[64], target[64];
	snprintf(text, sizeof text, "n%d %s", i, words[op % 4]);
	snprintf(target, sizeof target, "n%d %s", (int)(op % (uint64_t)(i + 1)), words[op % 4]);
	a2m_clock_set_for_tests(T0 + at);
	switch ((op >> 8) % 10) {
	case 0: {
		json_decref(check_result_of(x, "memory/recall",
					    json_pack("{ss}", "query", words[(op >> 4) % 4])));
		break;
	}
	case 1: {
		char *id = id_of(x, target);
		if (id)
			json_decref(check_result_of(x, "memory/reinforce",
				json_pack("{s[s] sf}", "ids", id, "amount", 0.3)));
		free(id);
		break;
	}
	case 2:
		json_decref(check_result_of(x, "memory/forget",
			json_pack("{s{ss}}", "where", "content", target)));
		break;
	default:
		free(put_on(x, at / 1000, text, sessions[(op >> 12) % 3],
			    grouped ? groups[(op >> 16) % 6] : NULL,
			    (op >> 20) % 3 == 0 ? "episodic" : NULL,
			    (double)((op >> 24) % 5) / 4.0));
		break;
	}
}

/* The same 400 random steps on two stores, one with rosters, one without. */
static void test_rosters_change_no_outcome(void)
{
	fresh();
	a2m *with = h;
	h = NULL;
	char saved_path[sizeof path];
	memcpy(saved_path, path, sizeof path);
	static char path2[] = "/tmp/a2m-test-spill2-XXXXXX";
	int fd = mkstemp(path2);
	if (fd >= 0)
		close(fd);
	unlink(path2);
	memcpy(path, path2, sizeof path2 < sizeof path ? sizeof path2 : sizeof path);
	path[sizeof path - 1] = '\0';
	char saved_schema[64];
	memcpy(saved_schema, pg_schema, sizeof pg_schema);
	if (engine == 2) {
		snprintf(pg_schema, sizeof pg_schema, "%.50s_b", saved_schema);
		pg_test_schema_fresh(pg_schema);
		pg_test_conninfo(pg_schema, pg_conninfo, sizeof pg_conninfo);
	}
	a2m *without = open_handle();
	CHECK(without != NULL);
	uint64_t seed = 42;
	int64_t at = 1000;
	for (int i = 0; i < 400 && without; i++) {
		uint64_t op = lcg(&seed) ^ (lcg(&seed) << 31);
		at += (int64_t)(lcg(&seed) % 4) * 700;  /* a quarter of the steps share a ms */
		a2m_stack_rosters_off_for_tests(0);
		random_step(with, op, at, i, 1);
		a2m_stack_rosters_off_for_tests(1);
		random_step(without, op, at, i, 1);
		a2m_stack_rosters_off_for_tests(0);
		char *a = state_of(with), *b = state_of(without);
		if (strcmp(a, b) != 0) {
			printf("  step %d differs:\n  with    %s\n  without %s\n", i, a, b);
			CHECK(0);
			i = 400;
		}
		free(a);
		free(b);
	}
	a2m_close(without);
	check_remove_db(path);
	if (engine == 2) {
		pg_test_schema_drop(pg_schema);
		memcpy(pg_schema, saved_schema, sizeof pg_schema);
		pg_test_conninfo(pg_schema, pg_conninfo, sizeof pg_conninfo);
	}
	memcpy(path, saved_path, sizeof path);
	h = with;
}

/*
** Capacity's shortcuts (the tests' build checks each against the long
** way, a2m_stack_pick_check_for_tests), on every engine (each keeps a
** stamp, store.h): over a random run without groups,
** with the clock moving, every keyed pick (spill_key.c) names the unit the
** plan over the same facts sends, and every bucket a roster answered for
** without a count is as many records as the store counts.
*/
static void test_keyed_picks_are_the_plans(void)
{
	fresh();
	a2m_stack_pick_check_for_tests(1, NULL);
	uint64_t seed = 7;
	int64_t at = 1000;
	for (int i = 0; i < 400 && h; i++) {
		uint64_t op = lcg(&seed) ^ (lcg(&seed) << 31);
		at += (int64_t)(lcg(&seed) % 4) * 700;
		random_step(h, op, at, i, 0);
	}
	a2m_pick_stats stats;
	a2m_stack_pick_check_for_tests(0, &stats);
	printf("  %llu keyed picks, %llu rosters for a count\n", (unsigned long long)stats.picks,
	       (unsigned long long)stats.rosters);
	CHECK(stats.picks > 50);
	CHECK_INT(stats.picks_wrong, 0);
	CHECK(stats.rosters > 50);
	CHECK_INT(stats.rosters_wrong, 0);
}

static const test_case tests[] = {
	TEST(test_a_group_spanning_the_order_leaves_whole_by_its_newest),
	TEST(test_records_of_one_millisecond_go_by_seq),
	TEST(test_sessions_do_not_evict_each_other),
	TEST(test_touches_are_weighed_at_the_next_spill),
	TEST(test_a_reinforce_is_weighed_at_the_next_spill),
	TEST(test_another_writer_is_seen_at_the_next_spill),
	TEST(test_rosters_change_no_outcome),
	TEST(test_keyed_picks_are_the_plans),
	{NULL, NULL},
};

int main(void)
{
	int fd = mkstemp(path), status = 0;
	if (fd < 0)
		return 1;
	close(fd);
	if ((fd = mkstemp(conf)) < 0 || write_config() != 0)
		return 1;
	close(fd);
	static const char *const names[] = {"memory", "sqlite", "postgres"};
	snprintf(pg_schema, sizeof pg_schema, "a2m_tsp_%d", (int)getpid());
	if (pg_test_server())
		pg_test_conninfo(pg_schema, pg_conninfo, sizeof pg_conninfo);
	else
		printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
	int engines = pg_test_server() ? 3 : 2;
	for (engine = 0; engine < engines && !status; engine++) {
		printf("# engine %s\n", names[engine]);
		status = run_tests(tests);
		if (h)
			a2m_close(h);
		h = NULL;
	}
	a2m_clock_set_for_tests(0);
	pg_test_schema_drop(pg_schema);
	check_remove_db(path);
	unlink(conf);
	return status;
}
