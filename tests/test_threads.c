/*
** test_threads.c — one handle shared by several threads (server/handle.c): recalls
** and timelines run side by side under the shared lock while a writer
** remembers and replaces keys under the exclusive one. Through the public
** API only, against both engines. Built also with ThreadSanitizer
** (make TSAN=1), where any data race fails the run.
**
** What must hold whatever the interleaving:
**   - every call answers a result, never an error;
**   - every recall finds something (each word is in many records) and at
**     most its limit;
**   - every acknowledged write is stored exactly once, and a replaced key
**     never has two records;
**   - each record's access_count is exactly the number of times recalls
**     returned it: a touch is neither lost nor counted twice, also when a
**     shared recall had to be run again exclusively (a promotion earned,
**     the touches due).
*/
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "pg_helper.h"

#define WORDS    24
#define SEMANTIC 400   /* records written before the threads start */
#define EPISODIC 200   /* under episodic's capacity (256): none spills */
#define READERS  4
#define RECALLS  250   /* per reader */
#define TIMELINES 60   /* per reader */
#define WRITES   150   /* the writer's new records */
#define KEYED    60    /* the writer's replacements of one key */

static const char *const words[WORDS] = {
	"amber", "basalt", "cedar", "dune", "ember", "fjord", "glacier", "harbor",
	"island", "jungle", "kelp", "lagoon", "meadow", "nebula", "orchard", "prairie",
	"quarry", "reef", "savanna", "tundra", "upland", "valley", "willow", "zephyr",
};

static a2m *h;
static char db_path[64];

static char pg_schema[64], pg_conninfo[512];

/* A handle on engine, over the test's file or schema (the state it had). */
static a2m *open_on(const char *engine)
{
	int pg = strcmp(engine, "postgres") == 0;
	if (pg)
		pg_test_conninfo(pg_schema, pg_conninfo, sizeof pg_conninfo);
	return check_open("engine", engine, "path", db_path, "synchronous", "normal", "postgres",
			  pg ? pg_conninfo : NULL, NULL);
}

static int open_handle(const char *engine)
{
	check_remove_db(db_path);
	if (strcmp(engine, "postgres") == 0)
		pg_test_schema_fresh(pg_schema);
	h = open_on(engine);
	return h ? 0 : -1;
}

/* Three words of the vocabulary, drawn from *rng. */
static void content_of(uint64_t *rng, const char *prefix, int i, char *buf, size_t len)
{
	snprintf(buf, len, "%s %d %s %s %s", prefix, i, words[check_rand(rng) % WORDS],
		 words[check_rand(rng) % WORDS], words[check_rand(rng) % WORDS]);
}

static int remember(const char *content, const char *tier, const char *key)
{
	json_t *rec = json_pack("{s:s, s:s}", "content", content, "tier", tier);
	if (key)
		json_object_set_new(rec, "key", json_string(key));
	json_t *r = check_call_json(h, "memory/remember", json_pack("{s:[o]}", "records", rec));
	int ok = r && json_object_get(r, "result");
	json_decref(r);
	return ok ? 0 : -1;
}

typedef struct reader {
	pthread_t  thread;
	uint64_t   rng;
	long long  hits;      /* records recalls returned */
	int        errors;    /* calls without a result */
	int        misfits;   /* recalls with no record, or over the limit */
} reader;

static void *read_loop(void *arg)
{
	reader *r = arg;
	for (int i = 0; i < RECALLS + TIMELINES; i++) {
		if (i % 5 == 4 && i / 5 < TIMELINES) {
			json_t *res = check_call_json(h, "memory/timeline", json_pack("{s:i, s:s}", "limit", 20,
							"tier", i % 2 ? "semantic" : "episodic"));
			if (!res || !json_object_get(res, "result"))
				r->errors++;
			json_decref(res);
			continue;
		}
		const char *word = words[check_rand(&r->rng) % WORDS];
		json_t *res = check_call_json(h, "memory/recall", json_pack("{s:s, s:i}", "query", word, "limit", 10));
		json_t *recs = json_object_get(json_object_get(res, "result"), "records");
		if (!json_is_array(recs)) {
			r->errors++;
		} else {
			size_t n = json_array_size(recs);
			r->misfits += n == 0 || n > 10;
			r->hits += (long long)n;
		}
		json_decref(res);
	}
	return NULL;
}

typedef struct writer {
	pthread_t thread;
	uint64_t  rng;
	int       errors;
} writer;

static void *write_loop(void *arg)
{
	writer *w = arg;
	char buf[160];
	for (int i = 0; i < WRITES + KEYED; i++) {
		int rc;
		if (i % 3 == 2 && i / 3 < KEYED) {
			content_of(&w->rng, "keyed", i, buf, sizeof buf);
			rc = remember(buf, "semantic", "the-one-key");
		} else {
			content_of(&w->rng, "storm", i, buf, sizeof buf);
			rc = remember(buf, i % 2 ? "episodic" : "semantic", NULL);
		}
		w->errors += rc != 0;
	}
	return NULL;
}

/* Every record, oldest first, with the access counts summed into *touches. */
static json_t *everything(long long *touches)
{
	json_t *res = check_call_json(h, "memory/timeline", json_pack("{s:i}", "limit", 0));
	json_t *recs = json_incref(json_object_get(json_object_get(res, "result"), "records"));
	json_decref(res);
	*touches = 0;
	size_t i;
	json_t *rec;
	json_array_foreach(recs, i, rec)
		*touches += json_integer_value(json_object_get(rec, "access_count"));
	return recs;
}

static void storm(const char *engine)
{
	if (open_handle(engine) != 0) {
		CHECK(h != NULL);
		return;
	}
	uint64_t rng = 0x9E3779B97F4A7C15ULL;
	char buf[160];
	for (int i = 0; i < SEMANTIC + EPISODIC; i++) {
		content_of(&rng, "seed", i, buf, sizeof buf);
		CHECK(remember(buf, i < SEMANTIC ? "semantic" : "episodic", NULL) == 0);
	}
	reader readers[READERS];
	writer w = {.rng = 77};
	for (int t = 0; t < READERS; t++) {
		readers[t] = (reader){.rng = 1000 + (uint64_t)t};
		CHECK(pthread_create(&readers[t].thread, NULL, read_loop, &readers[t]) == 0);
	}
	CHECK(pthread_create(&w.thread, NULL, write_loop, &w) == 0);
	long long hits = 0;
	for (int t = 0; t < READERS; t++) {
		pthread_join(readers[t].thread, NULL);
		CHECK_INT(readers[t].errors, 0);
		CHECK_INT(readers[t].misfits, 0);
		hits += readers[t].hits;
	}
	pthread_join(w.thread, NULL);
	CHECK_INT(w.errors, 0);
	CHECK(hits > 0);

	long long touches = 0;
	json_t *recs = everything(&touches);
	/* The seeds, the writes, and one record for the replaced key. */
	CHECK_INT(json_array_size(recs), SEMANTIC + EPISODIC + WRITES + 1);
	CHECK_INT(touches, hits);
	int storms = 0, keyed = 0;
	size_t i;
	json_t *rec;
	json_array_foreach(recs, i, rec) {
		const char *c = json_string_value(json_object_get(rec, "content"));
		storms += c && strncmp(c, "storm ", 6) == 0;
		keyed += json_is_string(json_object_get(rec, "key"));
	}
	CHECK_INT(storms, WRITES);
	CHECK_INT(keyed, 1);
	json_decref(recs);

	/* Reopened, the file holds the same: every touch was written. */
	a2m_close(h);
	h = NULL;
	if (strcmp(engine, "memory") != 0) {
		h = open_on(engine);
		CHECK(h != NULL);
		if (h) {
			json_decref(everything(&touches));
			CHECK_INT(touches, hits);
			a2m_close(h);
			h = NULL;
		}
	}
	check_remove_db(db_path);
	pg_test_schema_drop(pg_schema);
}

static void test_storm_memory(void)
{
	storm("memory");
}

static void test_storm_sqlite(void)
{
	storm("sqlite");
}

static void test_storm_postgres(void)
{
	if (pg_test_server())
		storm("postgres");
	else
		printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
}

int main(void)
{
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-threads-%d.db", (int)getpid());
	snprintf(pg_schema, sizeof pg_schema, "a2m_tt_%d", (int)getpid());
	static const test_case tests[] = {
		TEST(test_storm_memory),
		TEST(test_storm_sqlite),
		TEST(test_storm_postgres),
		{NULL, NULL}
	};
	return run_tests(tests);
}
