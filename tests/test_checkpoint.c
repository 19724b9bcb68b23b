/*
** test_checkpoint.c — the log's cycle under a lone writer
** (store/sqlite_checkpoint.c): a writer that never pauses between commits
** still sees its log restart, by closes in its own WAL hook, with a bounded
** number of the checkpointer's passes a cycle (not one every few commits);
** and a reader that holds a pass back makes the passes wait for the log to
** grow, not run at every commit.
**
** The stores here checkpoint from SOFT pages on (a test hook; the engine's
** mark is 10 000 with an index), at synchronous=NORMAL, one record a call
** into the default tiers, as `a2m bench remember --serve stdio` writes.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "store/store.h"

#define SOFT 2000            /* pages: the close is 500 frames, the step 250, the hard mark 8 000 */
#define PASSES_IN_A_ROW 4    /* sqlite_checkpoint.c's */

static char tmpdir[] = "/tmp/a2m-test-checkpoint.XXXXXX";

static a2m *open_store(const char *name, char *path, size_t size)
{
	snprintf(path, size, "%s/%s", tmpdir, name);
	return check_open("engine", "sqlite", "path", path, "synchronous", "normal", NULL);
}

/* One lone remember of record i; 0 when acknowledged. */
static int remember(a2m *h, int i)
{
	char req[256];
	snprintf(req, sizeof req, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"memory/remember\","
		 "\"params\":{\"records\":[{\"content\":\"note %d: the deploy key of service %d "
		 "rotates every %d days\"}]}}", i, i, i % 37, 1 + i % 90);
	json_t *r = check_send(h, req);
	int ok = json_object_get(r, "result") != NULL;
	json_decref(r);
	return ok ? 0 : -1;
}

/*
** 3 000 lone commits one after another (~10 frames each: ~75 cycles of the
** soft mark's worth). Each cycle must end in a restart of the log that a
** close brought (a pass on the thread cannot end between two commits of
** this writer), with at most a few passes of the thread: before the
** close, the thread was woken by every commit past the mark and the log
** restarted by luck or at the hard mark.
*/
static void test_a_writer_that_never_pauses_sees_its_log_restart(void)
{
	enum { CALLS = 3000 };
	char path[256];
	uint64_t passes0, in_commit0, closes0, restarts0, passes, in_commit, closes, restarts;
	int longest, largest_commit, missed;
	a2m_sqlite_checkpoint_counts_for_tests(&passes0, &in_commit0);
	a2m_sqlite_checkpoint_cycles_for_tests(&closes0, &restarts0);
	a2m_sqlite_checkpoint_log_for_tests(&longest, &largest_commit, &missed);
	a2m *h = open_store("lone.db", path, sizeof path);
	if (!h)
		return;
	int failed = 0;
	for (int i = 0; i < CALLS && !failed; i++)
		failed = remember(h, i);
	CHECK(!failed);
	a2m_sqlite_checkpoint_counts_for_tests(&passes, &in_commit);
	a2m_sqlite_checkpoint_cycles_for_tests(&closes, &restarts);
	a2m_sqlite_checkpoint_log_for_tests(&longest, &largest_commit, &missed);
	passes -= passes0;
	in_commit -= in_commit0;
	closes -= closes0;
	restarts -= restarts0;
	/* A lone commit is far below the close, so a close copies little. */
	CHECK(largest_commit > 0 && largest_commit < SOFT / 4);
	/* The log cycled: at least as often as the hard mark alone would make it. */
	CHECK(restarts >= (uint64_t)CALLS * 5 / (4 * SOFT));
	/* Most cycles ended in a close (a hard mark may end one the thread
	   could not keep up with, on a loaded machine). */
	CHECK(closes >= restarts / 2);
	/* A bounded number of passes a cycle: at most one wake's passes, and
	   one more wake for a cycle a close did not end. */
	CHECK(passes <= 2 * PASSES_IN_A_ROW * (restarts + 1));
	if (passes > 2 * PASSES_IN_A_ROW * (restarts + 1) || closes < restarts / 2)
		fprintf(stderr, "  %llu passes, %llu closes, %llu restarts, %llu past the hard mark\n",
			(unsigned long long)passes, (unsigned long long)closes,
			(unsigned long long)restarts, (unsigned long long)in_commit);
	a2m_close(h);
	h = open_store("lone.db", path, sizeof path);
	if (!h)
		return;
	CHECK(check_stored(h) == CALLS);
	a2m_close(h);
}

/*
** A reader in a transaction on an old snapshot: no checkpoint can copy the
** frames after it, so no pass or close ends the cycle. The writer goes on
** to below the hard mark (where a commit would wait for the reader); the
** passes must come a step of growth apart (~5 commits), not at every
** commit as before.
*/
static void test_a_reader_that_holds_passes_back_paces_them(void)
{
	char path[256];
	uint64_t passes0, in_commit0, closes0, restarts0, passes, in_commit, closes, restarts;
	int longest, largest_commit, missed;
	a2m *h = open_store("held.db", path, sizeof path);
	if (!h)
		return;
	int failed = remember(h, 0);
	sqlite3 *reader = NULL;
	CHECK(sqlite3_open_v2(path, &reader, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	CHECK(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM sqlite_schema", NULL, NULL,
			   NULL) == SQLITE_OK);
	a2m_sqlite_checkpoint_counts_for_tests(&passes0, &in_commit0);
	a2m_sqlite_checkpoint_cycles_for_tests(&closes0, &restarts0);
	a2m_sqlite_checkpoint_log_for_tests(&longest, &largest_commit, &missed);
	/* From the soft mark to within a few commits of the hard one. */
	int log = 0, calls = 0;
	for (int i = 1; !failed && log < 3 * SOFT; i++, calls++) {
		failed = remember(h, i);
		a2m_sqlite_checkpoint_log_for_tests(&longest, &largest_commit, &missed);
		log = longest;
	}
	CHECK(!failed);
	/* The thread's pass may still be in its sync (a loaded disk): wait for
	   it, 10 s at most. */
	for (int i = 0; i < 1000; i++) {
		a2m_sqlite_checkpoint_counts_for_tests(&passes, &in_commit);
		if (passes > passes0)
			break;
		nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
	}
	a2m_sqlite_checkpoint_counts_for_tests(&passes, &in_commit);
	a2m_sqlite_checkpoint_cycles_for_tests(&closes, &restarts);
	passes -= passes0;
	closes -= closes0;
	CHECK(restarts == restarts0);     /* the reader held the log */
	CHECK(in_commit == in_commit0);   /* below the hard mark */
	/* (3 * SOFT - SOFT) frames past the mark, a step (SOFT / 8) apart:
	   16 wakes, each one pass (held back, it does not go on), and a few
	   more for a thread that ran late. Woken at every commit, the thread ran
	   a pass each time it got to one: ~100 here. */
	CHECK(passes + closes <= 24);
	CHECK(passes >= 1);
	if (passes + closes > 24 || passes < 1)
		fprintf(stderr, "  %d calls: %llu passes, %llu closes\n", calls,
			(unsigned long long)passes, (unsigned long long)closes);
	sqlite3_exec(reader, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(reader);
	a2m_close(h);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	a2m_sqlite_checkpoint_pages_for_tests(SOFT);
	static const test_case tests[] = {
		TEST(test_a_writer_that_never_pauses_sees_its_log_restart),
		TEST(test_a_reader_that_holds_passes_back_paces_them),
		{NULL, NULL}
	};
	int rc = run_tests(tests);
	check_remove_dir(tmpdir);
	return rc;
}
