/*
** pg_touches.h — the tests of tests/test_pg_servers.c about touches and the
** promotions they earn on a deployment of several servers: recalls on three
** servers add up and earn a promotion together, a record touched twice in
** one batch (the engine writes a batch as one statement, postgres_held.c)
** counts both, and three servers' batches at once lose none. Included once,
** by test_pg_servers.c, after its writers (writer, run_writers).
*/
#ifndef A2M_TEST_PG_TOUCHES_H
#define A2M_TEST_PG_TOUCHES_H

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "check.h"
#include "pg_servers.h"

/* ---- touches and promotions -------------------------------------------------------------------- */

/* Recalls query through c, then writes once, which stores the recall's touch. */
static void recall_then_write(a2m_client *c, const char *query)
{
	json_decref(req(c, "memory/recall", json_pack("{s:s}", "query", query)));
	json_decref(req(c, "memory/remember",
			json_pack("{s:[{s:s,s:s}]}", "records", "content", "unrelated note",
				  "tier", "semantic")));
}

static void test_recalls_on_three_servers_add_up_and_earn_the_promotion(void)
{
	deployment d;
	deployment_new(&d, "touch", NULL);
	a2m_client *s[3];
	for (int i = 0; i < 3; i++)
		s[i] = serve(&d);
	/* The default layout: episodic promotes to semantic after 3 recalls. */
	json_decref(req(s[0], "memory/remember",
			json_pack("{s:[{s:s,s:s,s:s}]}", "records", "id", "zebra", "content",
				  "the zebra crossing", "tier", "episodic")));
	recall_then_write(s[0], "zebra");
	recall_then_write(s[1], "zebra");
	json_decref(req(s[2], "memory/recall", json_pack("{s:s}", "query", "zebra")));
	json_t *recs = timeline(s[0], json_pack("{s:s}", "tier", "semantic"));
	int found = 0;
	json_t *r;
	size_t i;
	json_array_foreach(recs, i, r) {
		if (strcmp(json_string_value(json_object_get(r, "id")), "zebra") == 0) {
			found = 1;
			CHECK_INT(json_integer_value(json_object_get(r, "access_count")), 3);
		}
	}
	CHECK_INT(found, 1);
	json_decref(recs);
	for (int k = 0; k < 3; k++)
		a2m_client_free(s[k]);
	deployment_drop(&d);
}

/*
** A promotion's transaction writes the touches waiting and the earning
** recall's own (write.c, promote_hits): the same record twice in one batch
** of touches, which the engine writes as one statement (postgres_held.c):
** the increments must add up, not the last one win.
*/
static void test_a_record_touched_twice_in_one_batch_counts_both(void)
{
	deployment d;
	deployment_new(&d, "twice", NULL);
	a2m_client *a = serve(&d), *b = serve(&d);
	json_decref(req(a, "memory/remember",
			json_pack("{s:[{s:s,s:s,s:s}]}", "records", "id", "okapi", "content",
				  "the okapi in the forest", "tier", "episodic")));
	for (int i = 0; i < 3; i++)
		json_decref(req(a, "memory/recall", json_pack("{s:s}", "query", "okapi")));
	json_t *recs = timeline(b, json_pack("{s:s}", "tier", "semantic"));
	CHECK_INT(json_array_size(recs), 1);
	CHECK_INT(json_integer_value(json_object_get(json_array_get(recs, 0), "access_count")), 3);
	json_decref(recs);
	a2m_client_free(a);
	a2m_client_free(b);
	deployment_drop(&d);
}

/* Each recaller: ROUNDS recalls of every record, then a write, which stores their touches. */
#define TOUCH_RECORDS 40
#define TOUCH_ROUNDS 5

static void *recaller(void *arg)
{
	writer *w = arg;
	a2m_client *c = serve(w->d);
	for (int r = 0; r < TOUCH_ROUNDS; r++) {
		json_t *resp = req(c, "memory/recall", json_pack("{s:s,s:i}", "query", "lantern",
								   "limit", TOUCH_RECORDS));
		if (json_array_size(json_object_get(result_of(resp), "records")) != TOUCH_RECORDS) {
			w->errors++;
			snprintf(w->why, sizeof w->why, "recall: %s", message_of(resp));
		}
		json_decref(resp);
	}
	json_t *resp = req(c, "memory/remember", json_pack("{s:[{s:s,s:s}]}", "records", "content",
							   "unrelated note", "tier", "semantic"));
	if (!result_of(resp)) {
		w->errors++;
		snprintf(w->why, sizeof w->why, "remember: %s", message_of(resp));
	}
	json_decref(resp);
	a2m_client_free(c);
	return NULL;
}

/*
** Three servers recall the same forty records at once, five times each,
** and each writes its touches as one statement: every record counts
** fifteen accesses, none lost to another server's batch.
*/
static void test_touches_of_three_servers_at_once_add_up(void)
{
	deployment d;
	writer w[3];
	deployment_new(&d, "touches", NULL);
	a2m_client *c = serve(&d);
	json_t *recs = json_array();
	for (int i = 0; i < TOUCH_RECORDS; i++) {
		char text[64];
		snprintf(text, sizeof text, "lantern number %d", i);
		json_array_append_new(recs, json_pack("{s:s,s:s}", "content", text, "tier", "semantic"));
	}
	json_decref(req(c, "memory/remember", json_pack("{s:o}", "records", recs)));
	run_writers(&d, recaller, w, 3);
	json_t *got = timeline(c, json_pack("{s:s}", "tier", "semantic"));
	int counted = 0;
	json_t *r;
	size_t i;
	json_array_foreach(got, i, r) {
		if (strncmp(json_string_value(json_object_get(r, "content")), "lantern", 7) != 0)
			continue;
		counted++;
		CHECK_INT(json_integer_value(json_object_get(r, "access_count")), 3 * TOUCH_ROUNDS);
	}
	CHECK_INT(counted, TOUCH_RECORDS);
	json_decref(got);
	a2m_client_free(c);
	deployment_drop(&d);
}

#endif
