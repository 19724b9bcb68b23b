/*
** test_pg_servers.c — several `a2m serve` processes on one PostgreSQL
** deployment behave as one memory (docs/POSTGRES.md), checked through the
** protocol only (tests/pg_servers.h).
**
** What is checked: eight servers starting at once against an empty
** database make one schema; a write through one server is what another
** reads (recall, timeline, fetch, describe's counts, forget); client ids
** retried through several servers at once are written once; a key written
** by four servers at once is one record whose revision counts every
** write and whose history keeps every revision it replaced; capacity and whole groups hold with four servers writing one
** session; two servers sweeping the same expired records report each
** once; an idle stdio server removes what another server wrote to expire; a cursor of one server is valid on another and after a
** restart; push delivers other servers' writes; a write and its events
** commit together or not at all; servers of different
** event retentions trim one run of the log; recalls on several
** servers add up their touches and earn the promotion together, a
** record touched twice in one batch counts both, and three servers'
** batches of touches at once lose none; a term
** one server's cache holds shows another server's later writes to it. The
** faults are test_pg_faults.c's.
**
** Needs $A2M_TEST_POSTGRES; without it, it says so and passes nothing.
*/
#include "check.h"
#include "pg_servers.h"

/* ---- one schema from eight servers at once ------------------------------------- */

static void test_eight_servers_started_together_make_one_schema(void)
{
	deployment d;
	a2m_client *c[8];
	deployment_new(&d, "eight", NULL);
	/* Spawned back to back: each opens (and migrates) as it starts. */
	for (int i = 0; i < 8; i++)
		c[i] = serve(&d);
	for (int i = 0; i < 8; i++) {
		json_t *resp = req(c[i], "memory/describe", NULL);
		CHECK(result_of(resp) != NULL);
		json_decref(resp);
	}
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.a2m_schema_version", d.schema);
	CHECK_INT(pg_test_int(sql, NULL), 1);
	snprintf(sql, sizeof sql, "SELECT version FROM %s.a2m_schema_version", d.schema);
	CHECK_INT(pg_test_int(sql, NULL), 9);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.a2m_state", d.schema);
	CHECK_INT(pg_test_int(sql, NULL), 1);
	CHECK_INT(pg_test_int("SELECT count(*) FROM pg_tables WHERE schemaname = $1", d.schema), 9);
	/* And they are one memory: what one writes, all count. */
	json_decref(req(c[3], "memory/remember",
			json_pack("{s:[{s:s,s:s}]}", "records", "content", "one of eight", "tier",
				  "semantic")));
	for (int i = 0; i < 8; i++)
		CHECK_INT(tier_count(c[i], "semantic"), 1);
	for (int i = 0; i < 8; i++)
		a2m_client_free(c[i]);
	deployment_drop(&d);
}

/* ---- one writes, another reads -------------------------------------------------------- */

static void test_write_through_one_read_through_another(void)
{
	deployment d;
	deployment_new(&d, "rw", NULL);
	a2m_client *a = serve(&d), *b = serve(&d);
	json_t *resp = req(a, "memory/remember",
			   json_pack("{s:[{s:s,s:s,s:s},{s:s,s:s}]}", "records", "content",
				     "the harbour lighthouse", "key", "place/light", "tier", "semantic",
				     "content", "a quiet bay", "tier", "semantic"));
	json_t *ids = json_object_get(result_of(resp), "ids");
	CHECK_INT(json_array_size(ids), 2);
	char id2[64] = "";
	snprintf(id2, sizeof id2, "%s", json_string_value(json_array_get(ids, 1)));
	json_decref(resp);

	resp = req(b, "memory/recall", json_pack("{s:s}", "query", "lighthouse"));
	json_t *first = json_array_get(json_object_get(result_of(resp), "records"), 0);
	CHECK_STR(json_string_value(json_object_get(first, "content")), "the harbour lighthouse");
	json_decref(resp);
	json_t *recs = timeline(b, json_pack("{s:s}", "tier", "semantic"));
	CHECK_INT(json_array_size(recs), 2);
	json_decref(recs);
	resp = req(b, "memory/fetch", json_pack("{s:s}", "key", "place/light"));
	CHECK_STR(json_string_value(json_object_get(json_object_get(result_of(resp), "record"),
						    "content")), "the harbour lighthouse");
	json_decref(resp);
	CHECK_INT(tier_count(b, "semantic"), 2);
	/* describe of a, cached before: a's count moves with b's forget. */
	CHECK_INT(tier_count(a, "semantic"), 2);
	resp = req(b, "memory/forget", json_pack("{s:[s]}", "ids", id2));
	CHECK_INT(json_integer_value(json_object_get(result_of(resp), "forgotten")), 1);
	json_decref(resp);
	recs = timeline(a, NULL);
	CHECK_INT(json_array_size(recs), 1);
	json_decref(recs);
	CHECK_INT(tier_count(a, "semantic"), 1);
	a2m_client_free(a);
	a2m_client_free(b);
	deployment_drop(&d);
}

/* ---- writers racing on several servers ----------------------------------------------- */

typedef struct writer {
	const deployment *d;
	int               n;          /* which writer */
	int               rounds;
	int               errors;     /* responses that were not the expected result */
	int               over;       /* reads that found the session over capacity */
	char              why[256];
} writer;

/* Every writer sends the same 50 client ids, in batches of 5: each id is
** written by four servers at once, as retries racing their original. */
static void *retry_writer(void *arg)
{
	writer *w = arg;
	a2m_client *c = serve(w->d);
	for (int b = 0; b < 10 && c; b++) {
		json_t *recs = json_array();
		for (int k = 0; k < 5; k++) {
			char id[32], text[64];
			snprintf(id, sizeof id, "retry-%d", b * 5 + k);
			snprintf(text, sizeof text, "retried record %d", b * 5 + k);
			json_array_append_new(recs, json_pack("{s:s,s:s,s:s}", "id", id, "content", text,
							      "tier", "semantic"));
		}
		json_t *resp = req(c, "memory/remember", json_pack("{s:o}", "records", recs));
		json_t *ids = json_object_get(result_of(resp), "ids");
		for (int k = 0; k < 5; k++) {
			char id[32];
			snprintf(id, sizeof id, "retry-%d", b * 5 + k);
			const char *got = json_string_value(json_array_get(ids, (size_t)k));
			if (!got || strcmp(got, id) != 0) {
				w->errors++;
				snprintf(w->why, sizeof w->why, "%s", message_of(resp));
			}
		}
		json_decref(resp);
	}
	a2m_client_free(c);
	return NULL;
}

static void run_writers(const deployment *d, void *(*fn)(void *), writer *w, int n)
{
	pthread_t t[8];
	for (int i = 0; i < n; i++) {
		w[i] = (writer){.d = d, .n = i};
		pthread_create(&t[i], NULL, fn, &w[i]);
	}
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		CHECK_INT(w[i].errors, 0);
		if (w[i].errors)
			fprintf(stderr, "  writer %d: %s\n", i, w[i].why);
	}
}

static void test_client_ids_retried_through_four_servers_are_written_once(void)
{
	deployment d;
	writer w[4];
	deployment_new(&d, "retry", NULL);
	prepare(&d);
	run_writers(&d, retry_writer, w, 4);
	a2m_client *c = serve(&d);
	json_t *recs = timeline(c, NULL);
	CHECK_INT(json_array_size(recs), 50);
	/* Each id once. */
	int seen[50] = {0};
	json_t *r;
	size_t i;
	json_array_foreach(recs, i, r) {
		int k = -1;
		sscanf(json_string_value(json_object_get(r, "id")), "retry-%d", &k);
		if (k >= 0 && k < 50)
			seen[k]++;
	}
	for (int k = 0; k < 50; k++)
		CHECK_INT(seen[k], 1);
	json_decref(recs);
	a2m_client_free(c);
	deployment_drop(&d);
}

/* o's member name as a string, "" when it is none. */
static const char *str_of(const json_t *o, const char *name)
{
	const char *v = json_string_value(json_object_get(o, name));
	return v ? v : "";
}

/* 25 writes of one key per writer. */
static void *key_writer(void *arg)
{
	writer *w = arg;
	a2m_client *c = serve(w->d);
	for (int k = 0; k < 25 && c; k++) {
		char text[64];
		snprintf(text, sizeof text, "counter written by %d, time %d", w->n, k);
		json_t *resp = req(c, "memory/remember",
				   json_pack("{s:[{s:s,s:s,s:s}]}", "records", "content", text, "key",
					     "shared/counter", "tier", "semantic"));
		if (json_array_size(json_object_get(result_of(resp), "ids")) != 1) {
			w->errors++;
			snprintf(w->why, sizeof w->why, "%s", message_of(resp));
		}
		json_decref(resp);
	}
	a2m_client_free(c);
	return NULL;
}

/*
** ... and whose history (x-history, room for all of them) holds each of the
** 99 revisions it replaced exactly once, numbered without a gap: none was
** lost to a write that read the record before another server's commit.
*/
static void test_one_key_written_by_four_servers_counts_every_revision(void)
{
	deployment d;
	writer w[4];
	char cfg[64];
	snprintf(cfg, sizeof cfg, "/tmp/a2m-test-pgs-%d.json", (int)getpid());
	FILE *f = fopen(cfg, "w");
	CHECK(f && fputs("{\"history\": {\"revisions\": 200}}", f) >= 0 && fclose(f) == 0);
	deployment_new(&d, "key", NULL);
	d.config = cfg;
	prepare(&d);
	run_writers(&d, key_writer, w, 4);
	a2m_client *c = serve(&d);
	json_t *recs = timeline(c, json_pack("{s:s}", "key_prefix", "shared/"));
	CHECK_INT(json_array_size(recs), 1);
	CHECK_INT(json_integer_value(json_object_get(json_array_get(recs, 0), "revision")), 99);
	json_decref(recs);
	json_t *resp = req(c, "memory/fetch", json_pack("{s:s,s:b}", "key", "shared/counter",
							"history", 1));
	json_t *rec = json_object_get(result_of(resp), "record");
	json_t *hist = json_object_get(result_of(resp), "history");
	CHECK_INT(json_array_size(hist), 99);
	int seen[4][25], bad = 0, wr, k;
	memset(seen, 0, sizeof seen);
	if (sscanf(str_of(rec, "content"),
		   "counter written by %d, time %d", &wr, &k) == 2 && wr >= 0 && wr < 4 && k >= 0 &&
	    k < 25)
		seen[wr][k]++;
	for (size_t i = 0; i < json_array_size(hist); i++) {
		json_t *e = json_array_get(hist, i);
		bad += json_integer_value(json_object_get(e, "revision")) != (json_int_t)(98 - i);
		if (sscanf(str_of(e, "content"),
			   "counter written by %d, time %d", &wr, &k) == 2 && wr >= 0 && wr < 4 &&
		    k >= 0 && k < 25)
			seen[wr][k]++;
		else
			bad++;
	}
	for (wr = 0; wr < 4; wr++)
		for (k = 0; k < 25; k++)
			bad += seen[wr][k] != 1;
	CHECK_INT(bad, 0);
	json_decref(resp);
	a2m_client_free(c);
	deployment_drop(&d);
	unlink(cfg);
}

/*
** 30 writes per writer into one session's working tier (capacity 24), two
** records per write sharing a group; after every write the session's
** working records are counted.
*/
static void *session_writer(void *arg)
{
	writer *w = arg;
	a2m_client *c = serve(w->d);
	for (int k = 0; k < 30 && c; k++) {
		char group[32];
		snprintf(group, sizeof group, "g-%d-%d", w->n, k);
		json_t *resp = req(c, "memory/remember",
				   json_pack("{s:[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s}]}", "records",
					     "content", "a tool call", "group", group, "session", "s1",
					     "role", "assistant", "content", "its result", "group", group,
					     "session", "s1", "role", "tool"));
		if (json_array_size(json_object_get(result_of(resp), "ids")) != 2) {
			w->errors++;
			snprintf(w->why, sizeof w->why, "%s", message_of(resp));
		}
		json_decref(resp);
		json_t *recs = timeline(c, json_pack("{s:s,s:{s:s}}", "tier", "working", "where",
						     "session", "s1"));
		if (json_array_size(recs) > 24)
			w->over++;
		json_decref(recs);
	}
	a2m_client_free(c);
	return NULL;
}

static void test_capacity_and_groups_hold_with_four_servers_in_one_session(void)
{
	deployment d;
	writer w[4];
	deployment_new(&d, "cap", NULL);
	prepare(&d);
	run_writers(&d, session_writer, w, 4);
	for (int i = 0; i < 4; i++)
		CHECK_INT(w[i].over, 0);
	a2m_client *c = serve(&d);
	json_t *working = timeline(c, json_pack("{s:s,s:{s:s}}", "tier", "working", "where",
						"session", "s1"));
	CHECK_INT(json_array_size(working), 24);
	json_decref(working);
	/* Nothing lost: 240 records in all; every group whole in one tier. */
	json_t *recs = timeline(c, json_pack("{s:{s:s}}", "where", "session", "s1"));
	CHECK_INT(json_array_size(recs), 240);
	json_t *tier_of = json_object();
	json_t *r;
	size_t i;
	int split = 0;
	json_array_foreach(recs, i, r) {
		const char *g = json_string_value(json_object_get(r, "group"));
		const char *t = json_string_value(json_object_get(r, "tier"));
		const char *had = json_string_value(json_object_get(tier_of, g));
		if (had && strcmp(had, t) != 0)
			split++;
		json_object_set_new(tier_of, g, json_string(t));
	}
	CHECK_INT(split, 0);
	CHECK_INT(json_object_size(tier_of), 120);
	json_decref(tier_of);
	json_decref(recs);
	CHECK(tier_count(c, "episodic") <= 256);
	a2m_client_free(c);
	deployment_drop(&d);
}

/* ---- expiry: several servers sweep one deployment -------------------------------------- */

/*
** Two idle servers, each having written a record that expires at the same
** moment (so each knows a sweep is due), both sweep when it comes: each
** record is removed once and named by exactly one forgotten event marked
** expired, since each sweep looks for expired records under the
** deployment's write lock (postgres_extend.c).
*/
static void test_two_servers_sweep_each_expired_record_once(void)
{
	deployment d;
	deployment_new(&d, "expiry", NULL);
	prepare(&d);
	a2m_client *a = serve(&d), *b = serve(&d);
	json_t *head = req(a, "memory/events", json_object());
	char *cursor = strdup(str_of(result_of(head), "cursor"));
	json_decref(head);
	char *ids[2];
	for (int k = 0; k < 2; k++) {
		json_t *resp = req(k ? b : a, "memory/remember",
				   json_pack("{s:[{s:s,s:s,s:i}]}", "records", "content",
					     k ? "expires too" : "expires", "tier", "semantic",
					     "ttl_seconds", 1));
		json_t *got = json_object_get(result_of(resp), "ids");
		ids[k] = strdup(json_string_value(json_array_get(got, 0)) ? json_string_value(
					json_array_get(got, 0)) : "");
		json_decref(resp);
	}
	sleep_ms(2500);  /* both idle past the expiry: their sweeps race */
	json_t *evs = req(b, "memory/events", json_pack("{s:s,s:[s]}", "cursor", cursor,
							"kinds", "forgotten"));
	int named[2] = {0, 0}, unmarked = 0;
	json_t *ev;
	size_t i;
	json_array_foreach(json_object_get(result_of(evs), "events"), i, ev) {
		unmarked += !json_is_true(json_object_get(ev, "expired"));
		json_t *id;
		size_t j;
		json_array_foreach(json_object_get(ev, "ids"), j, id)
			for (int k = 0; k < 2; k++)
				named[k] += strcmp(json_string_value(id), ids[k]) == 0;
	}
	CHECK_INT(named[0], 1);
	CHECK_INT(named[1], 1);
	CHECK_INT(unmarked, 0);
	json_decref(evs);
	json_t *left = timeline(a, NULL);
	CHECK_INT(json_array_size(left), 0);
	json_decref(left);
	for (int k = 0; k < 2; k++)
		free(ids[k]);
	free(cursor);
	a2m_client_free(a);
	a2m_client_free(b);
	deployment_drop(&d);
}

/*
** A stdio server that stays idle, waiting on its input, still removes what
** another server wrote to expire, when it expires, though the writer is gone
** by then: it hears the commit, rereads the earliest expiry, and its store's
** thread calls it back at that time (server/handle.c, heard).
*/
static void test_an_idle_stdio_server_removes_what_another_wrote_to_expire(void)
{
	deployment d;
	deployment_new(&d, "idle", NULL);
	prepare(&d);
	a2m_client *idle = serve(&d);
	json_t *resp = req(idle, "memory/events", NULL);
	char *cursor = strdup(str_of(result_of(resp), "cursor"));
	json_decref(resp);
	a2m_client *w = serve(&d);
	json_decref(req(w, "memory/remember",
			json_pack("{s:[{s:s,s:s,s:s,s:i}]}", "records", "id", "brief", "content",
				  "gone in a second", "tier", "semantic", "ttl_seconds", 1)));
	a2m_client_free(w);  /* before it expires: nobody else is left to sweep it */
	char sql[160];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.a2m_records", d.schema);
	long long left = -1;
	for (int i = 0; i < 50 && left != 0; i++) {
		sleep_ms(100);
		left = i >= 10 ? pg_test_int(sql, NULL) : -1;  /* from one second on */
	}
	CHECK_INT(left, 0);
	/* Reported as any sweep is: one forgotten event, marked expired. */
	resp = req(idle, "memory/events", json_pack("{s:s,s:[s]}", "cursor", cursor, "kinds",
						    "forgotten"));
	json_t *ev = json_array_get(json_object_get(result_of(resp), "events"), 0);
	CHECK(json_is_true(json_object_get(ev, "expired")));
	CHECK_STR(json_string_value(json_array_get(json_object_get(ev, "ids"), 0)), "brief");
	json_decref(resp);
	free(cursor);
	a2m_client_free(idle);
	deployment_drop(&d);
}

/* ---- events: cursors and push ------------------------------------------------------------ */

/* The ids of the written events of an events result. */
static void written_ids(const json_t *result, char *out, size_t size)
{
	size_t i, n = 0;
	json_t *ev;
	out[0] = '\0';
	json_array_foreach(json_object_get(result, "events"), i, ev) {
		if (strcmp(json_string_value(json_object_get(ev, "kind")), "written") != 0)
			continue;
		n += (size_t)snprintf(out + n, size - n, "%s%s", n ? "," : "",
				      json_string_value(json_object_get(ev, "id")));
	}
}

static void test_a_cursor_is_valid_on_every_server_and_after_a_restart(void)
{
	deployment d;
	deployment_new(&d, "cursor", NULL);
	a2m_client *a = serve(&d), *b = serve(&d);
	json_t *resp = req(a, "memory/events", NULL);
	char c0[128], c1[128], got[256];
	snprintf(c0, sizeof c0, "%s", json_string_value(json_object_get(result_of(resp), "cursor")));
	json_decref(resp);
	json_decref(req(b, "memory/remember", json_pack("{s:[{s:s,s:s},{s:s,s:s}]}", "records",
							"id", "ev-1", "content", "one", "id", "ev-2",
							"content", "two")));
	resp = req(a, "memory/events", json_pack("{s:s}", "cursor", c0));
	written_ids(result_of(resp), got, sizeof got);
	CHECK_STR(got, "ev-1,ev-2");
	CHECK(!json_is_true(json_object_get(result_of(resp), "reset")));
	snprintf(c1, sizeof c1, "%s", json_string_value(json_object_get(result_of(resp), "cursor")));
	json_decref(resp);
	/* a restarts; b writes meanwhile; a's cursor still means the same place. */
	a2m_client_free(a);
	json_decref(req(b, "memory/remember",
			json_pack("{s:[{s:s,s:s}]}", "records", "id", "ev-3", "content", "three")));
	a = serve(&d);
	resp = req(a, "memory/events", json_pack("{s:s}", "cursor", c1));
	written_ids(result_of(resp), got, sizeof got);
	CHECK_STR(got, "ev-3");
	CHECK(!json_is_true(json_object_get(result_of(resp), "reset")));
	json_decref(resp);
	resp = req(b, "memory/events", json_pack("{s:s}", "cursor", c0));
	written_ids(result_of(resp), got, sizeof got);
	CHECK_STR(got, "ev-1,ev-2,ev-3");
	json_decref(resp);
	a2m_client_free(a);
	a2m_client_free(b);
	deployment_drop(&d);
}

/*
** A write and its events are one transaction (one commit, one WAL flush):
** when its events cannot be appended, the write is refused and leaves
** nothing, rather than standing without the events that report it. The
** log is made to refuse one event by a constraint.
*/
static void test_a_write_and_its_events_commit_together(void)
{
	deployment d;
	deployment_new(&d, "together", NULL);
	prepare(&d);
	char sql[256];
	snprintf(sql, sizeof sql, "ALTER TABLE %s.a2m_events ADD CONSTRAINT no_poison"
		 " CHECK (body NOT LIKE '%%poison%%')", d.schema);
	CHECK_INT(pg_test_exec(sql), 0);
	a2m_client *c = serve(&d);
	json_t *resp = req(c, "memory/remember", json_pack("{s:[{s:s,s:s},{s:s,s:s}]}", "records",
							   "id", "fine-0", "content", "a",
							   "id", "poison-1", "content", "b"));
	CHECK_INT(code_of(resp), -32603);
	json_decref(resp);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.a2m_records", d.schema);
	CHECK_INT(pg_test_int(sql, NULL), 0);
	resp = req(c, "memory/remember", json_pack("{s:[{s:s,s:s}]}", "records", "id", "fine-1",
						   "content", "c"));
	CHECK(result_of(resp) != NULL);
	json_decref(resp);
	CHECK_INT(pg_test_int(sql, NULL), 1);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.a2m_events", d.schema);
	CHECK_INT(pg_test_int(sql, NULL), 1);
	a2m_client_free(c);
	deployment_drop(&d);
}

static void test_push_delivers_the_other_servers_writes(void)
{
	deployment d;
	deployment_new(&d, "push", NULL);
	a2m_client *a = serve(&d), *b = serve(&d);
	json_t *resp = req(b, "memory/events/subscribe", NULL);
	CHECK(json_is_true(json_object_get(result_of(resp), "subscribed")));
	json_decref(resp);
	json_decref(req(a, "memory/remember", json_pack("{s:[{s:s,s:s},{s:s,s:s},{s:s,s:s}]}",
							"records", "id", "p-1", "content", "one", "id",
							"p-2", "content", "two", "id", "p-3", "content",
							"three")));
	/* Then one of b's own: after the others, in the log's order. */
	json_decref(req(b, "memory/remember",
			json_pack("{s:[{s:s,s:s}]}", "records", "id", "p-4", "content", "four")));
	a2m_client_set_timeout(b, 10000);
	char got[256] = "";
	size_t n = 0;
	for (int i = 0; i < 4; i++) {
		json_t *note = NULL;
		if (a2m_client_next_notification_json(b, &note) != A2M_CLIENT_OK)
			break;
		json_t *p = json_object_get(note, "params");
		if (strcmp(json_string_value(json_object_get(p, "kind")), "written") == 0)
			n += (size_t)snprintf(got + n, sizeof got - n, "%s%s", n ? "," : "",
					      json_string_value(json_object_get(p, "id")));
		json_decref(note);
	}
	CHECK_STR(got, "p-1,p-2,p-3,p-4");
	a2m_client_free(a);
	a2m_client_free(b);
	deployment_drop(&d);
}

/*
** The log's retention is each appending server's own (--events-retain), and
** every trim deletes a bounded range from the log's tail (a2m_state.event_tail,
** postgres_events.c): servers of different retentions appending in turn keep
** one run of seqs, the newest the last append's retention allows, with the
** tail at its oldest. A trim that reckoned its range from its own retention
** alone would leave the older events of a larger retention behind it.
*/
static void test_retention_of_several_servers_trims_one_run(void)
{
	deployment d;
	deployment_new(&d, "retain", NULL);
	const char *small_args[] = {"--events-retain", "3"}, *wide_args[] = {"--events-retain", "8"};
	a2m_client *small = serve_args(d.conninfo, small_args, 2);
	a2m_client *wide = serve_args(d.conninfo, wide_args, 2);
	char ids[64];
	for (int i = 0; i < 14; i++) {
		/* 1..10 through the small one, 11..14 through the wide one, one at a time. */
		snprintf(ids, sizeof ids, "r-%d", i + 1);
		json_decref(req(i < 10 ? small : wide, "memory/remember",
				json_pack("{s:[{s:s,s:s}]}", "records", "id", ids, "content", ids)));
	}
	/* The wide server kept its 8 newest: 7..14; then the small one trims to 3. */
	json_decref(req(small, "memory/remember",
			json_pack("{s:[{s:s,s:s}]}", "records", "id", "r-15", "content", "r-15")));
	json_decref(req(wide, "memory/remember",
			json_pack("{s:[{s:s,s:s}]}", "records", "id", "r-16", "content", "r-16")));
	char got[256];
	for (int k = 0; k < 2; k++) {
		/* A cursor of no log: reset, and read from the oldest retained. */
		json_t *resp = req(k ? wide : small, "memory/events",
				   json_pack("{s:s}", "cursor", "c1.0000000000000000.1"));
		written_ids(result_of(resp), got, sizeof got);
		CHECK_STR(got, "r-13,r-14,r-15,r-16");
		CHECK(json_is_true(json_object_get(result_of(resp), "reset")));
		json_decref(resp);
	}
	char sql[160];
	snprintf(sql, sizeof sql, "SELECT event_tail FROM %s.a2m_state", d.schema);
	CHECK_INT(pg_test_int(sql, NULL), 13);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.a2m_events", d.schema);
	CHECK_INT(pg_test_int(sql, NULL), 4);
	a2m_client_free(small);
	a2m_client_free(wide);
	deployment_drop(&d);
}

#include "pg_touches.h"

/* ---- a server's cached postings after another server's writes ----------------------- */

/* How many records a recall of query through c returns (-1: no result). */
static int recall_count(a2m_client *c, const char *query)
{
	json_t *resp = req(c, "memory/recall", json_pack("{s:s}", "query", query));
	json_t *recs = json_object_get(result_of(resp), "records");
	int n = recs ? (int)json_array_size(recs) : -1;
	json_decref(resp);
	return n;
}

static void remember(a2m_client *c, json_t *record)
{
	json_t *resp = req(c, "memory/remember", json_pack("{s:[o]}", "records", record));
	CHECK(result_of(resp) != NULL);
	json_decref(resp);
}

/*
** Each server keeps the postings its recalls read (postgres_index.c); a
** term cached by b must not hide what a writes to it afterwards: an
** insert, a change of content, a forget. b recalls each term first, so
** the second recall is the one a stale cache would answer.
*/
static void test_a_cached_term_sees_the_other_servers_writes(void)
{
	deployment d;
	deployment_new(&d, "stale", NULL);
	a2m_client *a = serve(&d), *b = serve(&d);
	remember(a, json_pack("{s:s,s:s,s:s}", "content", "the zeppelin hangar", "key", "zep/1",
			      "tier", "semantic"));
	CHECK_INT(recall_count(b, "zeppelin"), 1);
	CHECK_INT(recall_count(b, "airship"), 0);
	CHECK_INT(recall_count(a, "zeppelin"), 1);

	/* A commit of other terms leaves what b answers as it was. */
	remember(a, json_pack("{s:s,s:s}", "content", "an unrelated note", "tier", "semantic"));
	CHECK_INT(recall_count(b, "zeppelin"), 1);

	remember(a, json_pack("{s:s,s:s,s:s}", "id", "zep2", "content",
			      "a zeppelin over the harbour", "tier", "semantic"));
	CHECK_INT(recall_count(b, "zeppelin"), 2);
	CHECK_INT(recall_count(a, "zeppelin"), 2);

	remember(a, json_pack("{s:s,s:s,s:s}", "content", "the airship hangar", "key", "zep/1",
			      "tier", "semantic"));
	CHECK_INT(recall_count(b, "zeppelin"), 1);
	CHECK_INT(recall_count(b, "airship"), 1);

	json_t *resp = req(a, "memory/forget", json_pack("{s:[s]}", "ids", "zep2"));
	CHECK_INT(json_integer_value(json_object_get(result_of(resp), "forgotten")), 1);
	json_decref(resp);
	CHECK_INT(recall_count(b, "zeppelin"), 0);
	CHECK_INT(recall_count(a, "zeppelin"), 0);
	CHECK_INT(recall_count(b, "airship"), 1);
	a2m_client_free(a);
	a2m_client_free(b);
	deployment_drop(&d);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (!servers_init(argv[0]))
		return 0;
	static const test_case tests[] = {
		TEST(test_eight_servers_started_together_make_one_schema),
		TEST(test_write_through_one_read_through_another),
		TEST(test_client_ids_retried_through_four_servers_are_written_once),
		TEST(test_one_key_written_by_four_servers_counts_every_revision),
		TEST(test_capacity_and_groups_hold_with_four_servers_in_one_session),
		TEST(test_two_servers_sweep_each_expired_record_once),
		TEST(test_an_idle_stdio_server_removes_what_another_wrote_to_expire),
		TEST(test_a_cursor_is_valid_on_every_server_and_after_a_restart),
		TEST(test_push_delivers_the_other_servers_writes),
		TEST(test_a_write_and_its_events_commit_together),
		TEST(test_retention_of_several_servers_trims_one_run),
		TEST(test_recalls_on_three_servers_add_up_and_earn_the_promotion),
		TEST(test_a_record_touched_twice_in_one_batch_counts_both),
		TEST(test_touches_of_three_servers_at_once_add_up),
		TEST(test_a_cached_term_sees_the_other_servers_writes),
		{NULL, NULL}
	};
	return run_tests(tests);
}
