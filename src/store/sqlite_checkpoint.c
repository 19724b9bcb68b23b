/*
** sqlite_checkpoint.c — the write-ahead log's checkpoints, run on a thread
** and a connection of their own instead of inside a writer's commit.
**
** Why: SQLite's automatic checkpoint runs in the COMMIT that takes the log
** past its mark (wal_autocheckpoint), in the caller's thread and under the
** handle's lock. With an index kept the mark is 10 000 pages, and that one
** commit copies up to 40 MB into the database file and syncs it: the call
** that crosses the mark took 300–600 ms where its neighbours took 7 ms
** (docs/BENCHMARKS.md, "no call over 100 ms").
**
** How: the main connection's WAL hook replaces the automatic checkpoint
** (installing a hook turns SQLite's own off). When a commit leaves the log
** at or past the soft mark, the hook wakes the checkpointer, a thread
** started then (once) with its own connection to the file, which runs
** wal_checkpoint(PASSIVE): it copies what no reader still needs and never
** waits for the writer, who goes on committing meanwhile.
**
** The log restarts (the writer's next transaction writes from its
** beginning again) only once a checkpoint has copied all of it and no
** commit came between that checkpoint's end and the writer's next BEGIN.
** A pass on the thread syncs the log first, so it cannot fit between two
** commits of a writer that never pauses: woken at every commit, as it was,
** the thread ran a pass every ~5 commits (each syncing the log and copying
** pages the next commits dirty again) and the log restarted by luck or at
** the hard mark (docs/BENCHMARKS.md, "The checkpointer under a lone
** writer"). So a cycle of the log now goes:
**   1. below the soft mark: no pass;
**   2. past it: the thread runs passes (up to PASSES_IN_A_ROW in a row)
**      until what the writer added since the last one is within the close
**      (a quarter of the soft mark, at most CLOSE_FRAMES frames), or it
**      ran them all (a writer faster than a pass: what is left is then
**      what came during one pass);
**   3. the writer's next commit finds the thread idle and that left,
**      and closes the cycle: a PASSIVE checkpoint in its own WAL hook, on
**      its own connection, between its commit and its next BEGIN, so the
**      log is copied to its end and the next transaction restarts it. The
**      commit that closes pays a short copy and two syncs, once a cycle;
**      the others no wake, no pass, no sync of the checkpointer's.
** A pass or a close that a reader holds back (a snapshot older than the
** log's end) is tried again only after the log grew by an eighth of the
** soft mark (the step), not at every commit.
**
** The bound: if the log reaches the hard mark (four times the soft one: a
** thread that cannot keep up, or a reader that keeps a pass from
** finishing), the commit that finds it so waits for the thread's pass
** to end and runs a RESTART checkpoint itself (copying what the thread has
** not; then waiting, within the busy timeout, for the readers), so the log
** cannot grow without end. If the thread or its connection cannot be had,
** every checkpoint runs in the commit, PASSIVE at the soft mark as SQLite's
** own would.
**
** Crash safety is SQLite's: a checkpoint copies frames already in the log,
** syncing the log before and the file after (the checkpoint connection
** runs at synchronous=NORMAL, which syncs both), and the log restarts only
** after a checkpoint finished; a kill at any moment leaves the log to be
** replayed by the next open. Group commit (sqlite_sync.c) is unaffected:
** its acknowledged commits are in the synced log or, once copied, in the
** synced file.
**
** Stopping: a2m_sqlite_checkpoint_free() asks the thread to stop, waits for
** a pass in progress to end and joins it, before the main connection
** closes (so the main connection remains the last one, and its close
** checkpoints and removes the log as before).
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_internal.h"
#include "util/log.h"
#include "util/phase.h"
#include "util/thread.h"

/* Pages of the log (4 KiB) past which a checkpoint is started, before an index. */
#define SOFT_PAGES_DEFAULT 1000
/* The hard mark, in soft marks: a commit past it checkpoints itself. */
#define HARD_FACTOR 4
/* Passes the thread runs in a row while the writer keeps adding frames. */
#define PASSES_IN_A_ROW 4
/* The most frames a close (in the writer's WAL hook) copies: 4 MiB of log. */
#define CLOSE_FRAMES 1024
/* The step (see the header), in soft marks' parts: an eighth. */
#define STEP_PARTS 8

struct a2m_sqlite_ckpt {
	pthread_mutex_t run;        /* held by whoever checkpoints: the thread or a commit */
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	char           *path;       /* the database file */
	pthread_t       thread;
	int             started;    /* the thread was started (it must be joined) */
	int             broken;     /* no thread or no connection: checkpoint in the commit */
	int             wanted;     /* a pass is asked for */
	int             stop;
	/* The cycle of the log, under mu: */
	int             busy;       /* the thread's passes are asked for or running */
	unsigned        cycle;      /* the log's restarts the hook saw */
	int             done;       /* frames the cycle's last checkpoint left copied */
	int             done_all;   /* it copied all it saw (no reader held it back) */
	int             close_any;  /* the thread ran all its passes: close what is left */
	int             next_pass;  /* held back: no pass before the log has this many */
	int             next_close; /* no close before the log has this many */
	/* The main connection's, under the caller's exclusive lock: */
	int             soft;       /* pages */
	int             hard;
	int             close;      /* frames left that a close in the hook copies */
	int             step;
	int             last;       /* the log after the previous commit */
	atomic_int      pages;      /* the same, for the thread */
	/* The figures, under mu (logged at close): */
	uint64_t        passes;
	double          longest;    /* ms, the thread's longest pass */
	uint64_t        closes;     /* closes in a commit's hook */
	double          longest_close;
	double          close_ms;   /* all of them */
	uint64_t        restarts;
	uint64_t        blocking;   /* checkpoints run in a commit */
	double          longest_blocking;
	/* The main connection's, under the caller's exclusive lock (logged at
	** close): what a commit costs the log, for `a2m bench fsync`. */
	uint64_t        commits;    /* commits the hook saw */
	uint64_t        frames;     /* frames they appended */
};

#ifdef A2M_TEST_HOOKS
static atomic_int test_pages;
static atomic_uint_fast64_t test_passes, test_in_commit, test_closes, test_restarts;
static atomic_int test_longest, test_largest_commit, test_missed;

void a2m_sqlite_checkpoint_log_for_tests(int *longest, int *largest_commit, int *missed)
{
	*longest = atomic_exchange(&test_longest, 0);
	*largest_commit = atomic_exchange(&test_largest_commit, 0);
	*missed = atomic_exchange(&test_missed, 0);
}

static void test_raise(atomic_int *to, int value)
{
	int was = atomic_load(to);
	while (value > was && !atomic_compare_exchange_weak(to, &was, value))
		;
}

void a2m_sqlite_checkpoint_pages_for_tests(int pages)
{
	atomic_store(&test_pages, pages);
}

void a2m_sqlite_checkpoint_counts_for_tests(uint64_t *passes, uint64_t *in_commit)
{
	*passes = atomic_load(&test_passes);
	*in_commit = atomic_load(&test_in_commit);
}

void a2m_sqlite_checkpoint_cycles_for_tests(uint64_t *closes, uint64_t *restarts)
{
	*closes = atomic_load(&test_closes);
	*restarts = atomic_load(&test_restarts);
}
#endif

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Opens the checkpointer's connection; NULL (logged) when it cannot. */
static sqlite3 *open_conn(const char *path)
{
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL)
	    != SQLITE_OK ||
	    /* NORMAL: a checkpoint syncs the log before it copies and the file after. */
	    sqlite3_exec(db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK ||
	    /* A read, so that the connection knows the file is in WAL mode and
	    ** opens its log: a checkpoint on a connection that never read does
	    ** nothing. */
	    sqlite3_exec(db, "PRAGMA schema_version", NULL, NULL, NULL) != SQLITE_OK) {
		a2m_log(A2M_LOG_WARN, "checkpoints: cannot open a connection to %s (%s); "
			"the commits checkpoint the log themselves", path,
			db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close_v2(db);
		return NULL;
	}
	/* It commits nothing, but its automatic checkpoint must not stir either. */
	sqlite3_wal_autocheckpoint(db, 0);
	return db;
}

/*
** What a checkpoint of cycle `cycle` left, under mu: where the next pass or
** close stands. Nothing when the log restarted since (a new cycle).
*/
static void record(a2m_sqlite_ckpt *c, unsigned cycle, int rc, int log, int copied,
		   int close_any)
{
	if (cycle != c->cycle)
		return;
	int all = rc == SQLITE_OK && copied >= log;
	if (rc == SQLITE_OK)
		c->done = copied;
	c->done_all = all;
	c->close_any = all && close_any;
	/* Held back (a reader, or another process's checkpoint): a step on. */
	c->next_pass = all ? 0 : (log > 0 ? log : atomic_load(&c->pages)) + c->step;
}

static void *run(void *arg)
{
	a2m_sqlite_ckpt *c = arg;
	sqlite3 *db = open_conn(c->path);
	pthread_mutex_lock(&c->mu);
	if (!db) {
		c->broken = 1;
		c->busy = 0;
	}
	while (db && !c->stop) {
		if (!c->wanted) {
			pthread_cond_wait(&c->cv, &c->mu);
			continue;
		}
		c->wanted = 0;
		unsigned cycle = c->cycle;
		int close = c->close;
		pthread_mutex_unlock(&c->mu);
		/*
		** Passes in a row, each copying what the writer added during the
		** one before, until little enough is left for the writer's next
		** commit to close the cycle (or a reader holds a pass back).
		*/
		int n = 0, rc = SQLITE_OK, log = 0, copied = 0, more = 1;
		double longest = 0;
		pthread_mutex_lock(&c->run);
		for (; more && n < PASSES_IN_A_ROW; n++) {
			double t0 = now_ms();
			rc = sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_PASSIVE,
						       &log, &copied);
			double ms = now_ms() - t0;
			if (ms > longest)
				longest = ms;
			if (rc != SQLITE_OK && rc != SQLITE_BUSY)
				a2m_log(A2M_LOG_WARN, "checkpoints: a pass failed: %s (the next "
					"commit asks again)", sqlite3_errmsg(db));
			/* After a restart the log is below what was copied: stop. */
			more = rc == SQLITE_OK && copied >= log &&
			       atomic_load(&c->pages) - copied > close;
		}
		pthread_mutex_unlock(&c->run);
#ifdef A2M_TEST_HOOKS
		atomic_fetch_add(&test_passes, (uint64_t)n);
#endif
		pthread_mutex_lock(&c->mu);
		record(c, cycle, rc, log, copied, more);
		c->busy = 0;
		c->passes += (uint64_t)n;
		if (longest > c->longest)
			c->longest = longest;
	}
	pthread_mutex_unlock(&c->mu);
	sqlite3_close_v2(db);
	return NULL;
}

/*
** A checkpoint on the main connection, in its WAL hook, after the thread's
** pass in progress (a second checkpointer would be refused SQLITE_BUSY at
** once); what ran is what `what` names in a warning. Returns SQLite's code,
** with the frames and the time it took.
*/
static int checkpoint_in_hook(a2m_sqlite_ckpt *c, sqlite3 *db, const char *name, int mode,
			      const char *what, int *log, int *copied, double *ms)
{
	double t0 = now_ms();
	*log = *copied = 0;
	a2m_phase was = a2m_phase_enter(A2M_PHASE_CHECKPOINT);
	pthread_mutex_lock(&c->run);
	int rc = sqlite3_wal_checkpoint_v2(db, name, mode, log, copied);
	pthread_mutex_unlock(&c->run);
	a2m_phase_leave(was);
	*ms = now_ms() - t0;
	if (rc != SQLITE_OK && rc != SQLITE_BUSY)
		a2m_log(A2M_LOG_WARN, "checkpoints: %s failed: %s", what, sqlite3_errmsg(db));
	return rc;
}

/*
** The close (step 3 of the header): a PASSIVE checkpoint on the main
** connection in its WAL hook, the thread idle, the writer's write lock
** released and its next BEGIN not yet begun, so nothing is added while it
** copies the little the thread's passes left.
*/
static void close_here(a2m_sqlite_ckpt *c, sqlite3 *db, const char *name, unsigned cycle,
		       int pages)
{
	int log, copied;
	double ms;
	int rc = checkpoint_in_hook(c, db, name, SQLITE_CHECKPOINT_PASSIVE, "a close", &log,
				    &copied, &ms);
#ifdef A2M_TEST_HOOKS
	atomic_fetch_add(&test_closes, 1);
#endif
	pthread_mutex_lock(&c->mu);
	record(c, cycle, rc, log, copied, 0);
	/* A close the restart did not follow (a reader): the next a step on. */
	if (cycle == c->cycle)
		c->next_close = pages + c->step;
	c->closes++;
	c->close_ms += ms;
	if (ms > c->longest_close)
		c->longest_close = ms;
	pthread_mutex_unlock(&c->mu);
}

/*
** The fallback: a checkpoint in the commit, on the main connection, after
** the thread's pass in progress (a second checkpointer would be refused
** SQLITE_BUSY at once); RESTART then waits, within the connection's busy
** timeout, for the readers, so that the next write starts the log afresh.
*/
static void checkpoint_here(a2m_sqlite_ckpt *c, sqlite3 *db, const char *name, int mode)
{
	int log, copied;
	double ms;
	int rc = checkpoint_in_hook(c, db, name, mode, "a blocking checkpoint", &log, &copied,
				    &ms);
	(void)rc;  /* read by the test hooks only */
#ifdef A2M_TEST_HOOKS
	atomic_fetch_add(&test_in_commit, 1);
	if (mode == SQLITE_CHECKPOINT_RESTART && (rc != SQLITE_OK || copied < log))
		atomic_fetch_add(&test_missed, 1);
#endif
	pthread_mutex_lock(&c->mu);
	c->blocking++;
	if (ms > c->longest_blocking)
		c->longest_blocking = ms;
	pthread_mutex_unlock(&c->mu);
}

/*
** SQLite's WAL hook: called after each commit of the main connection, its
** write lock released, with the pages now in the log. Returns SQLITE_OK:
** a failed checkpoint is not the commit's failure.
*/
static int on_wal(void *ctx, sqlite3 *db, const char *name, int pages)
{
	a2m_sqlite_ckpt *c = ctx;
#ifdef A2M_TEST_HOOKS
	/*
	** The frames this commit added: the growth since the last commit, or
	** the whole log when it started afresh (then at most this commit's).
	*/
	test_raise(&test_longest, pages);
	test_raise(&test_largest_commit, pages > c->last ? pages - c->last : pages);
#endif
	int restarted = pages < c->last;
	c->commits++;
	c->frames += (uint64_t)(restarted ? pages : pages - c->last);
	c->last = pages;
	atomic_store_explicit(&c->pages, pages, memory_order_relaxed);
	if (restarted) {
		/* A new cycle: what the old one's checkpoints left means nothing. */
#ifdef A2M_TEST_HOOKS
		atomic_fetch_add(&test_restarts, 1);
#endif
		pthread_mutex_lock(&c->mu);
		c->cycle++;
		c->restarts++;
		c->done = c->done_all = c->close_any = c->next_pass = c->next_close = 0;
		pthread_mutex_unlock(&c->mu);
	}
	if (pages < c->soft)
		return SQLITE_OK;
	pthread_mutex_lock(&c->mu);
	if (!c->started && !c->broken) {
		if (a2m_thread_start(&c->thread, run, c) == 0) {
			c->started = 1;
		} else {
			c->broken = 1;
			a2m_log(A2M_LOG_WARN, "checkpoints: cannot start a thread; the commits "
				"checkpoint the log themselves");
		}
	}
	int hard = pages >= c->hard, here = c->broken || hard, close = 0;
	unsigned cycle = c->cycle;
	if (!here && !c->busy) {
		int left = pages - c->done;
		if (c->done_all && (left <= c->close || c->close_any))
			close = pages >= c->next_close;
		else if (pages >= c->next_pass) {
			c->busy = c->wanted = 1;
			pthread_cond_signal(&c->cv);
		}
	}
	pthread_mutex_unlock(&c->mu);
	/* The main connection's busy timeout bounds the wait. */
	if (close)
		close_here(c, db, name, cycle, pages);
	else if (here)
		checkpoint_here(c, db, name, hard ? SQLITE_CHECKPOINT_RESTART
						  : SQLITE_CHECKPOINT_PASSIVE);
	return SQLITE_OK;
}

int a2m_sqlite_checkpoint_open(sqlstore *s)
{
	const char *db = sqlite3_db_filename(s->db, "main");
	if (!db || !*db)
		return 0;  /* no file: no log */
	a2m_sqlite_ckpt *c = calloc(1, sizeof *c);
	if (!c || !(c->path = strdup(db))) {
		free(c);
		return a2m_store_fail(&s->base, "sqlite store: out of memory");
	}
	if (pthread_mutex_init(&c->mu, NULL) != 0) {
		free(c->path);
		free(c);
		return a2m_store_fail(&s->base, "sqlite store: cannot make a mutex");
	}
	if (pthread_mutex_init(&c->run, NULL) != 0) {
		pthread_mutex_destroy(&c->mu);
		free(c->path);
		free(c);
		return a2m_store_fail(&s->base, "sqlite store: cannot make a mutex");
	}
	if (pthread_cond_init(&c->cv, NULL) != 0) {
		pthread_mutex_destroy(&c->run);
		pthread_mutex_destroy(&c->mu);
		free(c->path);
		free(c);
		return a2m_store_fail(&s->base, "sqlite store: cannot make a condition");
	}
	s->ckpt = c;
	a2m_sqlite_checkpoint_mark(s, SOFT_PAGES_DEFAULT);
	sqlite3_wal_hook(s->db, on_wal, c);
	return 0;
}

void a2m_sqlite_checkpoint_mark(sqlstore *s, int soft_pages)
{
	a2m_sqlite_ckpt *c = s->ckpt;
	if (!c)
		return;
#ifdef A2M_TEST_HOOKS
	if (atomic_load(&test_pages) > 0)
		soft_pages = atomic_load(&test_pages);
#endif
	/* Under mu: the thread reads the close and the step (a mark may move
	   once it runs). */
	pthread_mutex_lock(&c->mu);
	c->soft = soft_pages > 0 ? soft_pages : SOFT_PAGES_DEFAULT;
	c->hard = c->soft * HARD_FACTOR;
	c->close = c->soft / 4 < CLOSE_FRAMES ? c->soft / 4 : CLOSE_FRAMES;
	c->step = c->soft / STEP_PARTS > 0 ? c->soft / STEP_PARTS : 1;
	pthread_mutex_unlock(&c->mu);
}

void a2m_sqlite_checkpoint_free(sqlstore *s)
{
	a2m_sqlite_ckpt *c = s->ckpt;
	if (!c)
		return;
	if (s->db)
		sqlite3_wal_hook(s->db, NULL, NULL);
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (c->started)
		pthread_join(c->thread, NULL);
	if (c->commits)
		a2m_log(A2M_LOG_INFO, "the log: %llu commits appended %llu frames (%.2f a commit)",
			(unsigned long long)c->commits, (unsigned long long)c->frames,
			(double)c->frames / (double)c->commits);
	if (c->passes || c->blocking || c->closes)
		a2m_log(A2M_LOG_INFO, "checkpoints: %llu passes on the thread (longest %.1f ms), "
			"%llu closes in a commit's hook (%.1f ms in all, longest %.1f ms), %llu restarts "
			"of the log, "
			"%llu past the hard mark in a commit (longest %.1f ms)",
			(unsigned long long)c->passes, c->longest, (unsigned long long)c->closes,
			c->close_ms, c->longest_close, (unsigned long long)c->restarts,
			(unsigned long long)c->blocking, c->longest_blocking);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->run);
	pthread_mutex_destroy(&c->mu);
	free(c->path);
	free(c);
	s->ckpt = NULL;
}
