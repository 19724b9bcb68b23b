/*
** recall_harness.h — what tests/test_recall.c (which includes it once)
** drives: the handle on each engine (memory, SQLite, PostgreSQL), opened
** fresh with a ranking, and the calls most rules make (remember, recall).
*/
#ifndef A2M_TEST_RECALL_HARNESS_H
#define A2M_TEST_RECALL_HARNESS_H

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "stack/stack_internal.h"
#include "store/sqlite_index.h"
#include "pg_helper.h"

static a2m *h;
/* 0 memory, 1 SQLite, 2 PostgreSQL (tests/pg_helper.h); engine_sqlite:
** an engine that keeps what it wrote across a reopen. */
static int engine;
#define engine_sqlite (engine != 0)
static char pg_schema[64];
static char pg_conninfo[512];
static char db_path[64];
static int helper_threads = -1;  /* a2m_config's: -1 its default */

static void remove_db(void)
{
	check_remove_db(db_path);
	if (engine == 2)
		pg_test_schema_fresh(pg_schema);
}

static void open_server(const char *ranking, int fresh)
{
	char threads[16];
	snprintf(threads, sizeof threads, "%d", helper_threads);
	if (fresh && engine_sqlite)
		remove_db();
	/* test_full_touch_buffer_is_written fills it with 5 recalls of 1000. */
	if (engine == 2)
		pg_test_conninfo(pg_schema, pg_conninfo, sizeof pg_conninfo);
	h = check_open("engine", pg_test_engine_names[engine], "path", db_path, "postgres",
		       engine == 2 ? pg_conninfo : NULL, "ranking", ranking, "touch_buffer", "4096",
		       "synchronous", "normal", "helper_threads", helper_threads < 0 ? NULL : threads,
		       NULL);
}

static void fresh(void)
{
	if (h)
		a2m_close(h);
	open_server(NULL, 1);
}

/* Sends memory/remember with params (a reference it takes); checks it is kept. */
static void remember(json_t *params)
{
	char *p = json_dumps(params, JSON_COMPACT);
	json_t *r = check_call(h, "memory/remember", "%s", p);
	CHECK(json_object_get(r, "result") != NULL);
	json_decref(r);
	free(p);
	json_decref(params);
}

/* Writes the texts, oldest first, in tier (NULL: semantic), one per call. */
static void write_texts(const char *tier, const char *const *texts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		remember(json_pack("{s:[{s:s,s:s}]}", "records", "content", texts[i], "tier",
				   tier ? tier : "semantic"));
}

/* The contents recall returns for params, joined by " | ". */
static const char *recall(const char *params)
{
	static char buf[8192];
	json_t *r = check_call(h, "memory/recall", "%s", params);
	json_t *recs = json_object_get(json_object_get(r, "result"), "records");
	size_t n = 0;
	buf[0] = '\0';
	if (!recs)
		snprintf(buf, sizeof buf, "(error)");
	for (size_t i = 0; i < json_array_size(recs); i++) {
		const char *c = json_string_value(json_object_get(json_array_get(recs, i), "content"));
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? " | " : "", c ? c : "?");
		if (n >= sizeof buf)
			break;
	}
	json_decref(r);
	return buf;
}

static const char *recall_q(const char *query)
{
	char p[1024];
	json_t *s = json_string(query);
	char *q = json_dumps(s, JSON_ENCODE_ANY);
	snprintf(p, sizeof p, "{\"query\":%s,\"limit\":10}", q);
	free(q);
	json_decref(s);
	return recall(p);
}

#endif
