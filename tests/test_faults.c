/*
** test_faults.c — a2m under failing storage and failing allocations
** (docs/FAULTS.md): for every fault point n of a mixed workload, the run
** with fault n armed must end as a run without the request that failed.
**
** Storage (fault_vfs.h): the nth read, write, fsync or file open of SQLite
** fails once, or the disk is full from the nth write on, or SQLite's own nth
** allocation fails. Allocations (fault_alloc.h): liba2m's own nth
** allocation (malloc and its family, and jansson's) fails once, against
** both engines. At every point the test checks that
**   - every request got exactly one reply, one line of JSON with its id;
**     a failed one is -32603 naming the store's failure (storage), or
**     -32603 or A2M_NOMEM (allocation); a store that cannot open says why;
**   - every other reply, the records on the same handle afterwards and the
**     records in the file reopened with a fresh handle equal those of a
**     run without the failed request (fault_workload.h): nothing
**     acknowledged is lost, a failed batch left nothing, no group is split;
**   - PRAGMA integrity_check passes and a2m_counts agrees with the records;
**   - the procedural mirror's files agree with the database after reopen;
**   - the same handle stores and recalls a record once the fault is gone;
**   - nothing liba2m allocated is left after a2m_close (fault_alloc.h).
**
** The test command runs a bounded sweep: the first SWEEP_HEAD points of
** each kind and SWEEP_SAMPLE more spread evenly over the rest. With
** A2M_FAULTS=full every point is run (make faults, docs/FAULTS.md); with
** A2M_FAULTS=KIND:N only that point, with what it did printed; with
** A2M_FAULTS=count each sweep of the workload only counts its points.
**
** The sweeps themselves are fault_sweep.h's. This file holds the tests: a
** check that the oracle can fail, the regression test of each bug the
** sweeps found (a sweep of the one request that showed it, whole in the
** test command), and the workload's sweep of each kind; the tests of
** opening and reopening are fault_reopen.h's.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "a2m.h"
#include "check.h"
#include "rank/scorer.h"
#include "store/sqlite_internal.h"
#include "store/sqlite_segments.h"
#include "store/store.h"

#include "fault_sweep.h"
#include "fault_reopen.h"
#include "fault_threads.h"

/* ---- the tests --------------------------------------------------------------- */

/* The setup of the request sweeps: a few records of every kind. */
static const wl_msg small_store[] = {
	{"memory/remember", "{\"records\":["
	 "{\"id\":\"s1\",\"content\":\"harbour question\",\"session\":\"s\",\"group\":\"g\"},"
	 "{\"id\":\"s2\",\"content\":\"harbour answer\",\"session\":\"s\",\"group\":\"g\"},"
	 "{\"id\":\"s3\",\"content\":\"the river bank\",\"tier\":\"semantic\",\"key\":\"k/1\",\"metadata\":{\"topic\":\"geo\"}},"
	 "{\"id\":\"s4\",\"content\":\"Deploy with make.\",\"tier\":\"procedural\"}]}"},
	{NULL, NULL},
};

/* A batch lands whole or not at all, whichever write of it fails. */
static void test_batch_all_or_nothing_under_write_faults(void)
{
	request_sweep(1, FAULT_WRITE, small_store, "memory/remember", "{\"records\":["
		      "{\"id\":\"n1\",\"content\":\"a new harbour fact\",\"session\":\"s\",\"group\":\"h\"},"
		      "{\"id\":\"n2\",\"content\":\"its tool result\",\"session\":\"s\",\"group\":\"h\"},"
		      "{\"id\":\"n3\",\"content\":\"a skill\",\"tier\":\"procedural\",\"key\":\"k/2\"},"
		      "{\"content\":\"the river changed\",\"key\":\"k/1\",\"tier\":\"semantic\",\"id\":\"n4\"}]}");
}

/*
** Found by the sweep at memory malloc:10638 (session/list), 7574
** (consolidate) and 7697 (session/close): short of memory, these replies
** left out what they could not add (a tier's count in a session, the
** counts of every tier, closed and flushed): a wrong answer rather than
** an error.
*/
static void test_session_list_under_malloc_faults(void)
{
	request_sweep(0, KIND_ALLOC, small_store, "memory/session/list", "{}");
}

static void test_session_close_under_malloc_faults(void)
{
	request_sweep(0, KIND_ALLOC, small_store, "memory/session/close", "{\"session\":\"s\"}");
}

static void test_consolidate_under_malloc_faults(void)
{
	request_sweep(0, KIND_ALLOC, small_store, "memory/consolidate", "{}");
}

/*
** Found by the sweep at sqlite-malloc:20620 (step 21, session/close): the
** close committed, moving s1's records to episodic, and then the reply's
** counts per tier were read, after the commit; SQLite, out of memory
** there, failed that read and the close answered -32603 "storage: count:
** out of memory" for a write that stood. The counts are now read inside
** the transaction, before its commit, so a failure rolls the move back.
** The same for consolidate, which answers the same counts. Sent on the
** SQLite engine with each of SQLite's allocations failing in turn.
*/
static void test_session_close_under_sqlite_malloc_faults(void)
{
	request_sweep(1, FAULT_SMALLOC, small_store, "memory/session/close", "{\"session\":\"s\"}");
}

static void test_consolidate_under_sqlite_malloc_faults(void)
{
	static const wl_msg setup[] = {
		{"memory/remember", "{\"records\":["
		 "{\"id\":\"e1\",\"content\":\"an episode at the harbour\",\"tier\":\"episodic\"},"
		 "{\"id\":\"e2\",\"content\":\"another episode\",\"tier\":\"episodic\"}]}"},
		{"memory/recall", "{\"query\":\"harbour\",\"tier\":\"episodic\"}"},
		{"memory/recall", "{\"query\":\"harbour\",\"tier\":\"episodic\"}"},
		{NULL, NULL},
	};
	request_sweep(1, FAULT_SMALLOC, setup, "memory/consolidate", "{}");
}

/*
** Found reading the write methods for the pattern above: summarize stored
** its summary and then read it back to report it as stored (a key
** replacement keeps the older id and advances the revision), after the
** commit; a read that failed there answered -32603 for a summary that
** stood. The remember now leaves the record as stored in the caller's
** hands, and a read back that fails answers with it.
*/
static const char summarize_into_key[] =
	"{\"ids\":[\"s1\",\"s2\"],\"key\":\"k/1\",\"into\":\"semantic\"}";

static void test_summarize_under_read_faults(void)
{
	request_sweep(1, FAULT_READ, small_store, "memory/summarize", summarize_into_key);
}

static void test_summarize_under_sqlite_malloc_faults(void)
{
	request_sweep(1, FAULT_SMALLOC, small_store, "memory/summarize", summarize_into_key);
}

/*
** The guard that point 527 above needed, met head on: the engine's
** transaction is open, SQLite has ended it behind the engine's back, and a
** statement runs on the same connection. Without the commit hook it would
** commit on its own; it must fail, and leave nothing.
*/
static void test_nothing_commits_inside_a_transaction_sqlite_ended(void)
{
	a2m_store *s = NULL;
	char err[256];
	int64_t n = -1;
	remove_files();
	CHECK_INT(a2m_store_sqlite_open(db_path, NULL, &s, err, sizeof err), 0);
	if (!s)
		return;
	sqlite3 *db = ((sqlstore *)s)->db;
	CHECK_INT(s->ops->begin(s), 0);
	CHECK_INT(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	CHECK(sqlite3_exec(db, "INSERT INTO a2m_meta (name, value) VALUES ('stray', 'x')", NULL,
			   NULL, NULL) != SQLITE_OK);
	CHECK_INT(sqlite3_extended_errcode(db), SQLITE_CONSTRAINT_COMMITHOOK);
	CHECK(s->ops->commit(s) != 0);
	sqlite3_stmt *st = NULL;
	CHECK_INT(sqlite3_prepare_v2(db, "SELECT count(*) FROM a2m_meta WHERE name = 'stray'", -1,
				     &st, NULL), SQLITE_OK);
	CHECK_INT(sqlite3_step(st), SQLITE_ROW);
	n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	CHECK_INT(n, 0);
	/* Outside the transaction the connection writes as before. */
	CHECK_INT(s->ops->meta_set(s, "stray", "y"), 0);
	s->ops->close(s);
}

/*
** The same for describe and for recall's scores and prompt, which left out
** a member they could not add (found reading the code the sweep pointed
** at: every json_object_set_new whose failure went unseen).
*/
static void test_describe_under_malloc_faults(void)
{
	request_sweep(0, KIND_ALLOC, small_store, "memory/describe", "{}");
}

static void test_recall_prompt_under_malloc_faults(void)
{
	request_sweep(0, KIND_ALLOC, small_store, "memory/recall",
		      "{\"query\":\"harbour river\",\"prompt\":true}");
}

/*
** Found by the sweep at memory malloc:3693 (the recall of step 6, with a
** `where` on the session): short of memory, the `where` test could not
** make a field's value, took the field for a metadata key that was not
** there, and judged the record no match: the recall answered one record
** of two, silently. A `where` now answers -1 when memory runs out, and
** the request fails with -32603.
*/
static void test_recall_where_under_malloc_faults(void)
{
	request_sweep(0, KIND_ALLOC, small_store, "memory/recall",
		      "{\"query\":\"harbour\",\"where\":{\"session\":\"s\"}}");
}

static void test_timeline_where_metadata_under_malloc_faults(void)
{
	request_sweep(0, KIND_ALLOC, small_store, "memory/timeline",
		      "{\"where\":{\"topic\":\"geo\"}}");
}

/*
** Found by the sweep at full:330 and on: with the disk full, recall's
** buffered access counts (4 may wait here) could not be written after a
** recall, which is only logged; but the next recall, finding them due,
** wrote them itself, failed with -32603, and so did every recall after it
** until space was freed, each having counted its touches all the same. A
** buffer that cannot be written now waits for the next write, and every
** recall answers.
*/
static void test_recalls_answer_on_a_full_disk(void)
{
	run_out o = {0};
	a2m *h = prepared(1, small_store, &o);
	int64_t count = -1;
	fault_arm(FAULT_FULL, 1);
	for (int i = 0; h && i < 4; i++) {
		int status;
		json_t *v = send(h, i + 1, "memory/recall", "{\"query\":\"harbour river deploy bank\"}",
				 &status, &o);
		json_t *recs = json_object_get(json_object_get(v, "result"), "records");
		if (!recs)
			problem(&o, "recall %d on a full disk: %s", i + 1, wl_text(error_of(v)));
		/* Each recall sees its own touch and those before it. */
		count = json_integer_value(json_object_get(json_array_get(recs, 0), "access_count"));
		CHECK_INT(count, i + 1);
		json_decref(v);
	}
	CHECK(fault_fired() > 0);
	fault_disarm();
	if (h) {
		int status;
		json_t *v = send(h, 9, "memory/timeline", "{\"where\":{\"id\":\"s1\"}}", &status, &o);
		json_t *rec = json_array_get(json_object_get(json_object_get(v, "result"), "records"), 0);
		CHECK_INT(json_integer_value(json_object_get(rec, "access_count")), 4);
		json_decref(v);
		close_store(h);
	}
	check_file(&o, 1);
	CHECK_STR(o.problem, "");
}

/*
** The recall that earns a promotion writes it at once; when that write
** failed, the recall failed but its touches stayed counted, so the
** failed request left access counts behind (found with the one above).
** They are now written in the promotion's own transaction.
*/
static void test_recall_promotion_under_write_faults(void)
{
	static const wl_msg setup[] = {
		{"memory/remember", "{\"records\":[{\"id\":\"e1\",\"content\":\"an episode at the harbour\",\"tier\":\"episodic\"},"
		 "{\"id\":\"e2\",\"content\":\"another episode\",\"tier\":\"episodic\"}]}"},
		{"memory/recall", "{\"query\":\"harbour\"}"},
		{NULL, NULL},
	};
	request_sweep(1, FAULT_WRITE, setup, "memory/recall", "{\"query\":\"harbour\"}");
}

/*
** Found by the sweep at read:34 and on: a recall whose index could not be
** read answered -32603 "scorer bm25+vector failed", which does not say
** that the store failed nor how. It now says "scorer ... failed: storage:"
** and the store's message, when the store failed in the scorer's call.
*/
static void test_recall_under_read_faults(void)
{
	request_sweep(1, FAULT_READ, small_store, "memory/recall",
		      "{\"query\":\"harbour river\"}");
}

/* An insert of a record id with content, through the store's own API. */
static int store_insert(a2m_store *s, const char *id, const char *content)
{
	a2m_record r = {0};
	r.id = (char *)id;
	r.content = (char *)content;
	r.tier = (char *)"semantic";
	return s->ops->insert(s, &r);
}

/*
** Found by the sweep at read:92: a read of the file failed inside the
** transaction of a remember, in a statement whose failure the caller let
** pass (the store's vector width); SQLite rolled the transaction back on
** its own, and each write after it, finding no transaction open, began
** and committed one of its own. The remember answered -32603 and its
** records were there all the same. The engine now knows its transaction
** is open whatever SQLite did, and refuses every write in a transaction
** SQLite has rolled back. Here: for every read that the reads before two
** inserts make, the transaction lands whole or not at all.
*/
static void test_transaction_rolled_back_by_sqlite_writes_nothing(void)
{
	int64_t n, lost = 0;
	for (n = 1;; n++) {
		a2m_store *s = NULL;
		a2m_record *rec = NULL;
		char err[256];
		int64_t before = -1, after = -1;
		a2m_query all = {0};
		remove_files();
		if (a2m_store_sqlite_open(db_path, NULL, &s, err, sizeof err) != 0) {
			fprintf(stderr, "  open: %s\n", err);
			CHECK(0);
			break;
		}
		for (int i = 0; i < 50; i++) {
			char id[16];
			snprintf(id, sizeof id, "old%d", i);
			CHECK_INT(store_insert(s, id, "an older record, read back from the file"), 0);
		}
		run_out o = {0};
		foreign_commit(1, &o);  /* the reads below come from the file */
		CHECK_INT(s->ops->count(s, &all, &before), 0);
		foreign_commit(2, &o);
		fault_arm(FAULT_READ, n);
		int rc = s->ops->begin(s);
		if (!rc) {
			/* Failures the caller lets pass, as the stack did the width's. */
			s->ops->get(s, "old7", &rec);
			a2m_record_free(rec);
			rec = NULL;
			s->ops->get(s, "old42", &rec);
			a2m_record_free(rec);
			store_insert(s, "new1", "a new record");
			store_insert(s, "new2", "another new record");
			rc = s->ops->commit(s);
			if (rc)
				s->ops->rollback(s);
		}
		int64_t fired = fault_fired();
		fault_disarm();
		CHECK_INT(s->ops->count(s, &all, &after), 0);
		CHECK_INT(after, before + (rc ? 0 : 2));
		lost += rc != 0;
		s->ops->close(s);
		if (!fired)
			break;
	}
	printf("# a transaction under read faults: %lld points, %lld lost\n", (long long)n - 1,
	       (long long)lost);
}

/*
** Found by the sweep at read:397: the store's vector width is read once
** and kept, and read again after a rollback; when that read failed, the
** width was kept as 0, "none yet": describe said dimensions null, and a
** remember would have fixed another width over the records' (the sweep's
** remember of a 2-wide vector, step 11, is there to see it). A width that
** cannot be read now fails the request, and is read again next time.
*/
static const wl_msg vector_store[] = {
	{"memory/remember", "{\"records\":[{\"id\":\"v1\",\"content\":\"vector one\",\"tier\":\"semantic\",\"embedding\":[0.1,0.2,0.3]}]}"},
	/* Refused (-32008), and rolled back: the width is to be read again. */
	{"memory/remember", "{\"records\":[{\"id\":\"v0\",\"content\":\"too short\",\"tier\":\"semantic\",\"embedding\":[1,2]}]}"},
	{NULL, NULL},
};

static void test_describe_vector_width_under_read_faults(void)
{
	request_sweep(1, FAULT_READ, vector_store, "memory/describe", "{}");
}

static void test_remember_vector_width_under_read_faults(void)
{
	request_sweep(1, FAULT_READ, vector_store, "memory/remember",
		      "{\"records\":[{\"id\":\"v2\",\"content\":\"too long\",\"tier\":\"semantic\",\"embedding\":[1,2,3,4]}]}");
}

/*
** While memory is short for a while (1, 2, 8 or every allocation from the
** nth on fails), a valid request gets its result, -32603 or A2M_NOMEM:
** never an error that calls it invalid. jansson's decoder reports some
** failed allocations as syntax errors, and the request's JSON, which the
** tree's reader gave up on for memory, was then answered -32700 "not valid
** JSON" (found by this test, span 2, at the first allocation of reading a
** string with escapes). A text that reader could not read for memory is
** now never called invalid.
*/
static void test_valid_requests_stay_valid_when_memory_is_short(void)
{
	static const wl_msg requests[] = {
		{"memory/remember", "{\"records\":[{\"id\":\"m1\",\"content\":\"\\u00e9t\\u00e9 \\\"quoted\\\"\","
		 "\"metadata\":{\"a\":[1,2.5,{\"b\":\"c\\n\"}]},\"session\":\"s\",\"key\":\"k/\\u00e9\"}]}"},
		{"memory/recall", "{\"query\":\"harbour \\u00e9\",\"where\":{\"topic\":\"geo\"},\"limit\":5}"},
		{"memory/timeline", "{\"where\":{\"session\":\"s\"},\"limit\":2,\"prompt\":true}"},
		{"memory/forget", "{\"ids\":[\"s1\",\"nope\"]}"},
		{"memory/promote", "{\"ids\":[\"s3\"],\"tier\":\"procedural\",\"salience\":0.5}"},
		{"memory/reinforce", "{\"ids\":[\"s2\"],\"amount\":2}"},
		{"memory/session/close", "{\"session\":\"s\"}"},
		{"memory/fetch", "{\"key\":\"k/1\"}"},
		{"memory/summarize", "{\"where\":{\"session\":\"s\"}}"},
		{"memory/describe", "{}"},
		{NULL, NULL},
	};
	static const int64_t spans[] = {1, 2, 8, INT64_MAX / 2};
	int64_t points = 0, failed = 0;
	for (int r = 0; requests[r].method; r++) {
		for (size_t k = 0; k < sizeof spans / sizeof spans[0]; k++) {
			for (int64_t n = 1;; n++) {
				run_out o = {0};
				int status;
				size_t live = fault_alloc_live();
				a2m *h = prepared(0, small_store, &o);
				if (!h)
					break;
				fault_alloc_arm_span(n, spans[k]);
				json_t *v = send(h, 1, requests[r].method, requests[r].params, &status, &o);
				int64_t fired = fault_alloc_fired();
				fault_alloc_disarm();
				int code = (int)json_integer_value(json_object_get(error_of(v), "code"));
				if (code && code != A2M_INTERNAL_ERROR)
					problem(&o, "%s, span %lld, allocation %lld: %s", requests[r].method,
						(long long)spans[k], (long long)n, wl_text(error_of(v)));
				failed += code != 0 || status != A2M_OK;
				json_decref(v);
				close_store(h);
				if (fault_alloc_live() != live)
					problem(&o, "%s, span %lld, allocation %lld: a leak",
						requests[r].method, (long long)spans[k], (long long)n);
				if (o.problem[0]) {
					fprintf(stderr, "  %s\n", o.problem);
					CHECK(0);
				}
				if (!fired)
					break;
				points++;
			}
		}
	}
	printf("# valid requests while memory is short: %lld points, %lld failed\n",
	       (long long)points, (long long)failed);
}

static void test_storage_faults_read(void)   { sweep(1, FAULT_READ); }
static void test_storage_faults_write(void)  { sweep(1, FAULT_WRITE); }
static void test_storage_faults_full(void)   { sweep(1, FAULT_FULL); }
static void test_storage_faults_sync(void)   { sweep(1, FAULT_SYNC); }
static void test_storage_faults_open(void)   { sweep(1, FAULT_OPEN); }
static void test_storage_faults_sqlite_malloc(void) { sweep(1, FAULT_SMALLOC); }
static void test_storage_faults_mirror(void) { sweep(1, FAULT_MIRROR); }
/* A second fault while recovering from the first (fault_sweep.h). */
static void test_faults_twice_write_write(void) { sweep_pairs(FAULT_WRITE, FAULT_WRITE); }
static void test_faults_twice_write_read(void)  { sweep_pairs(FAULT_WRITE, FAULT_READ); }
static void test_faults_twice_read_read(void)   { sweep_pairs(FAULT_READ, FAULT_READ); }
static void test_faults_twice_read_write(void)  { sweep_pairs(FAULT_READ, FAULT_WRITE); }
static void test_faults_twice_sync_write(void)  { sweep_pairs(FAULT_SYNC, FAULT_WRITE); }
static void test_faults_twice_sync_read(void)   { sweep_pairs(FAULT_SYNC, FAULT_READ); }
static void test_faults_twice_write_sync(void)  { sweep_pairs(FAULT_WRITE, FAULT_SYNC); }
static void test_faults_twice_sqlite_malloc(void) { sweep_pairs(FAULT_SMALLOC, FAULT_SMALLOC); }
/*
** Faults on the helper threads, the checkpointer's and group commit's
** (fault_threads.h). Not the log's open: it is opened before.
*/
static void test_thread_faults_sync(void)     { sweep_threads(FAULT_SYNC); }
static void test_thread_faults_read(void)     { sweep_threads(FAULT_READ); }
static void test_thread_faults_write(void)    { sweep_threads(FAULT_WRITE); }
static void test_thread_faults_log_sync(void) { sweep_threads(FAULT_LOGSYNC); }
static void test_thread_faults_sqlite_malloc(void) { sweep_threads(FAULT_SMALLOC); }
static void test_thread_faults_malloc(void)   { sweep_threads(KIND_ALLOC); }
static void test_alloc_faults_memory(void)   { sweep(0, KIND_ALLOC); }
static void test_alloc_faults_sqlite(void)   { sweep(1, KIND_ALLOC); }

/* A2M_FAULTS=KIND:N (kind as the summary lines name it, engine first for
** malloc: memory-malloc:N): that point alone, told step by step. */
static int one_point(const char *spec)
{
	char kind[32];
	long long n;
	if (sscanf(spec, "%31[a-z-]:%lld", kind, &n) != 2)
		return -1;
	int sqlite = 1, k = -1;
	if (strcmp(kind, "memory-malloc") == 0)
		sqlite = 0, k = KIND_ALLOC;
	else if (strcmp(kind, "malloc") == 0)
		k = KIND_ALLOC;
	for (int i = 1; i < FAULT_KINDS && k < 0; i++)
		if (strcmp(kind, fault_kind_names[i]) == 0)
			k = i;
	if (k < 0)
		return -1;
	verbose = 1;
	sweep_stats st = {0};
	check_failures_in_test = 0;
	int bad = point(sqlite, k, n, &st);
	printf("%d passed, %d failed\n", !bad, bad);
	return bad;
}

int main(void)
{
	/* Before SQLite or jansson allocate anything. */
	if (fault_vfs_install() != 0) {
		fprintf(stderr, "test_faults: cannot install the fault VFS\n");
		return 1;
	}
	fault_alloc_install();
	signal(SIGALRM, on_alarm);
	setvbuf(stdout, NULL, _IOLBF, 0);  /* what ran is on record, even after a crash */
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(dir, sizeof dir, "%s/a2m-faults-XXXXXX", base);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(db_path, sizeof db_path, "%s/faults.db", dir);
	snprintf(mirror_dir, sizeof mirror_dir, "%s/faults.procedural", dir);
	snprintf(cfg_path, sizeof cfg_path, "%s/layout.json", dir);
	FILE *f = fopen(cfg_path, "w");
	if (!f || fputs(wl_config, f) < 0 || fclose(f) != 0) {
		perror(cfg_path);
		return 1;
	}
	/* Merges at every second segment: the workload merges at several levels. */
	a2m_segments_merge_factor_for_tests(2);
	wl_build();

	static const test_case tests[] = {
		TEST(test_oracle_sees_a_missing_write),
		TEST(test_oracle_sees_a_damaged_index),
		TEST(test_batch_all_or_nothing_under_write_faults),
		TEST(test_index_rebuild_under_sqlite_malloc_faults),
		TEST(test_open_under_malloc_faults),
		TEST(test_reopen_under_mirror_faults),
		TEST(test_session_list_under_malloc_faults),
		TEST(test_session_close_under_malloc_faults),
		TEST(test_consolidate_under_malloc_faults),
		TEST(test_nothing_commits_inside_a_transaction_sqlite_ended),
		TEST(test_session_close_under_sqlite_malloc_faults),
		TEST(test_consolidate_under_sqlite_malloc_faults),
		TEST(test_summarize_under_read_faults),
		TEST(test_summarize_under_sqlite_malloc_faults),
		TEST(test_describe_under_malloc_faults),
		TEST(test_recall_prompt_under_malloc_faults),
		TEST(test_recall_where_under_malloc_faults),
		TEST(test_timeline_where_metadata_under_malloc_faults),
		TEST(test_recalls_answer_on_a_full_disk),
		TEST(test_recall_promotion_under_write_faults),
		TEST(test_recall_under_read_faults),
		TEST(test_transaction_rolled_back_by_sqlite_writes_nothing),
		TEST(test_describe_vector_width_under_read_faults),
		TEST(test_remember_vector_width_under_read_faults),
		TEST(test_valid_requests_stay_valid_when_memory_is_short),
		TEST(test_storage_faults_read),
		TEST(test_storage_faults_write),
		TEST(test_storage_faults_full),
		TEST(test_storage_faults_sync),
		TEST(test_storage_faults_open),
		TEST(test_storage_faults_sqlite_malloc),
		TEST(test_storage_faults_mirror),
		TEST(test_faults_twice_write_write),
		TEST(test_faults_twice_write_read),
		TEST(test_faults_twice_read_read),
		TEST(test_faults_twice_read_write),
		TEST(test_faults_twice_sync_write),
		TEST(test_faults_twice_sync_read),
		TEST(test_faults_twice_write_sync),
		TEST(test_faults_twice_sqlite_malloc),
		TEST(test_thread_faults_read),
		TEST(test_thread_faults_write),
		TEST(test_thread_faults_sync),
		TEST(test_thread_faults_log_sync),
		TEST(test_thread_faults_sqlite_malloc),
		TEST(test_thread_faults_malloc),
		TEST(test_alloc_faults_memory),
		TEST(test_alloc_faults_sqlite),
		{NULL, NULL},
	};
	/*
	** The references first: what a first run allocates once for good
	** (the analyser's tables) is then allocated, and every run after
	** counts the same allocations.
	*/
	reference_of(0, 0);
	reference_of(1, 0);
	verbose = getenv("A2M_FAULTS_VERBOSE") != NULL;  /* every point told */
	const char *only = getenv("A2M_FAULTS");
	const char *pick = getenv("A2M_FAULTS_TEST");  /* run only the tests naming it */
	/* Counting: the sweeps of the workload ("..._faults_..."), not those of
	** one request, which count nothing worth quoting. */
	if (!pick && sweep_count_only())
		pick = "faults_";
	test_case picked[sizeof tests / sizeof tests[0]];
	size_t np = 0;
	for (size_t i = 0; tests[i].name; i++)
		if (!pick || strstr(tests[i].name, pick))
			picked[np++] = tests[i];
	picked[np] = (test_case){NULL, NULL};
	int rc = only && strchr(only, ':') && strncmp(only, "every:", 6) != 0 ? one_point(only)
									       : run_tests(picked);
	if (rc < 0) {
		fprintf(stderr, "A2M_FAULTS: full, every:K, count, or KIND:N with KIND one of read, write, full, "
			"sync, open, sqlite-malloc, mirror, malloc, memory-malloc\n");
		rc = 2;
	}
	for (size_t i = 0; i < nrefs; i++)
		run_free(&refs[i].out);
	for (size_t i = 0; i < wl_n; i++)
		free(wl_steps[i].params);
	remove_files();
	unlink(cfg_path);
	rmdir(dir);
	return rc;
}
