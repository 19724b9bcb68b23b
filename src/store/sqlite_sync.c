/*
** sqlite_sync.c — group commit: the SQLite engine's durable commits share
** their fsyncs, and no lock of the caller is held while one runs.
**
** Why: with synchronous=FULL every COMMIT syncs the write-ahead log before
** it returns, under the handle's exclusive lock. Sixteen HTTP clients each
** writing one record then take turns at the disk: one fsync per request,
** whatever the concurrency (2 200 acks/s on this machine, where the disk
** does a few hundred to a few thousand fsyncs a second).
**
** How: a store opened durable with group commit runs its connection at
** synchronous=NORMAL, so a COMMIT writes its frames into the log and
** returns without syncing it. The commit hook (sqlite_txn.c) notes that a
** durable commit happened (the relaxed transactions of sqlite_txn.c excepted). Once the
** caller's call is done, still under its lock, sync_owed() gives that
** call a ticket, a number that orders it after every commit already
** written; the caller releases its lock and sync_wait()s for the ticket.
** The first waiter to find no sync running becomes the leader: it takes
** the highest ticket given out so far, fdatasync()s the log (its own
** descriptor of the -wal file: the main connection is meanwhile someone
** else's), and wakes everyone that ticket covers; the others wait for it,
** and one of those left uncovered leads the next sync. A request is
** answered only after a sync that began after its commit was written, as
** before; many requests now ride on each sync.
**
** Why that is as durable as FULL: fsync applies to the file, whichever
** descriptor asks, and covers every write() that returned before it
** began. The frames of a commit are in the log when COMMIT returns, and a
** ticket is given after that. A checkpoint at synchronous=NORMAL still
** syncs the log before copying it and the database after, so a log that
** restarts from its beginning never holds the only copy of a commit that
** was acknowledged. What differs: a commit is visible to other readers a
** moment before it is durable (a reader may see a record that a power
** loss in that moment would take; its writer was never told it was
** stored). A process crash loses nothing either way: the page cache keeps
** the frames.
**
** A failed fsync: Linux may have dropped the dirty pages and will not say
** so again (a retried fsync succeeds). So every waiter the failed sync was
** for is told the write failed, and the store is poisoned: it refuses
** every later write transaction until reopened, as PostgreSQL panics.
** The failed requests' records may or may not be in the file.
**
** A sync begun early (sync_start, the store op): a lone durable write's
** capacity pass (finish.c) runs in a transaction of its own after the
** write's commit, and its answer waits only for the write's. So the write
** takes its ticket as soon as it committed and the sync thread (started
** at the first such call, one a store) leads that ticket's sync while the
** writer goes on with the pass; the writer then waits as any waiter does.
** The disk syncs while the CPU works, where one thread did one after the
** other. Nothing else changes: the thread leads exactly as a waiter would
** (and a waiter that finds no sync running leads one itself, so a thread
** the scheduler has not run yet delays no one), and the pass's commit owes
** a sync that the next durable call's ticket, or the close, covers.
*/
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_internal.h"
#include "store/sqlite_walvfs.h"
#include "util/log.h"
#include "util/phase.h"
#include "util/thread.h"

struct a2m_sqlite_sync {
	pthread_mutex_t  mu;
	pthread_cond_t   cv;
	char            *wal;       /* the log's path */
	int              fd;        /* -1 until the first sync opens it */
	atomic_uint_fast64_t given; /* tickets given out (the last one given) */
	uint64_t         synced;    /* every ticket up to this one is durable */
	int              leading;   /* a sync is running */
	atomic_int       failed;    /* errno of a failed sync; 0: none */
	uint64_t         syncs;     /* how many fsyncs ran (for the figures) */
	uint64_t         early;     /* of them, led by the sync thread */
	uint64_t         kicks;     /* syncs asked of the thread */
	uint64_t         busy;      /* of them, asked while a sync ran */
	/* The sync thread (sync_start), under mu: */
	pthread_cond_t   kick_cv;   /* the thread waits here for a kick */
	pthread_t        thread;
	int              started;   /* 1 running, -1 could not start, 0 not yet */
	int              kicked;    /* a sync is asked of the thread */
	int              stop;
	/* The main connection's, under the caller's exclusive lock: */
	int              owed;      /* a durable commit since the last ticket */
};

#ifdef A2M_TEST_HOOKS
static atomic_int fail_next;  /* the next sync of any store fails with EIO */

void a2m_sqlite_sync_fail_next_for_tests(int on)
{
	atomic_store(&fail_next, on != 0);
}

static atomic_uint_fast64_t early_led;  /* syncs the sync threads led */

uint64_t a2m_sqlite_sync_early_for_tests(void)
{
	return atomic_load(&early_led);
}

/* How long an armed hang lasts at most: a bound on a broken test, far
** past any stop's deadline. */
#define SYNC_HANG_MAX_S 120

/*
** A2M_TEST_SYNC_HANG_WHILE=PATH: every sync of the log waits, before its
** fdatasync, while a file PATH exists, as on a disk that does not answer.
** An environment variable, so the binary built with the hooks
** (tests/a2m-hooks) can be made to hang from outside, at the moment a
** test chooses (by creating the file) and for as long (until it removes
** it); the release build has no such code.
*/
static void hang_while_asked(void)
{
	const char *path = getenv("A2M_TEST_SYNC_HANG_WHILE");
	if (!path || !*path || access(path, F_OK) != 0)
		return;
	a2m_log(A2M_LOG_WARN, "the log's sync hangs while %s exists "
		"(A2M_TEST_SYNC_HANG_WHILE)", path);
	for (int i = 0; i < SYNC_HANG_MAX_S * 10 && access(path, F_OK) == 0; i++) {
		struct timespec ts = {0, 100000000L};
		nanosleep(&ts, NULL);
	}
}
#endif

/* SQLite's commit hook: runs inside every COMMIT of the main connection. */
void a2m_sqlite_sync_committed(sqlstore *s)
{
	if (s->sync && !s->txn_relaxed)
		s->sync->owed = 1;
}

int a2m_sqlite_sync_open(sqlstore *s)
{
	const char *db = sqlite3_db_filename(s->db, "main");
	const char *wal = db && *db ? sqlite3_filename_wal(db) : NULL;
	if (!wal || !*wal)
		return 0;  /* no file (":memory:"): nothing to make durable */
	a2m_sqlite_sync *y = calloc(1, sizeof *y);
	if (!y || !(y->wal = strdup(wal))) {
		free(y);
		return a2m_store_fail(&s->base, "sqlite store: out of memory");
	}
	if (pthread_mutex_init(&y->mu, NULL) != 0) {
		free(y->wal);
		free(y);
		return a2m_store_fail(&s->base, "sqlite store: cannot make a mutex");
	}
	if (pthread_cond_init(&y->cv, NULL) != 0) {
		pthread_mutex_destroy(&y->mu);
		free(y->wal);
		free(y);
		return a2m_store_fail(&s->base, "sqlite store: cannot make a condition");
	}
	if (pthread_cond_init(&y->kick_cv, NULL) != 0) {
		pthread_cond_destroy(&y->cv);
		pthread_mutex_destroy(&y->mu);
		free(y->wal);
		free(y);
		return a2m_store_fail(&s->base, "sqlite store: cannot make a condition");
	}
	y->fd = -1;
	s->sync = y;
	s->base.group_commit = 1;
	/* The log is synced after every durable commit: grow it ahead (sqlite_walvfs.c). */
	(void)a2m_sqlite_walvfs_durable(s->db);
	return 0;
}

void a2m_sqlite_sync_free(sqlstore *s)
{
	a2m_sqlite_sync *y = s->sync;
	if (!y)
		return;
	if (y->started == 1) {
		pthread_mutex_lock(&y->mu);
		y->stop = 1;
		pthread_cond_signal(&y->kick_cv);
		pthread_mutex_unlock(&y->mu);
		pthread_join(y->thread, NULL);
		y->started = 0;
	}
	/* A durable commit made outside a2m_handle (`a2m import`, `a2m check
	** --repair`) has had no ticket: it is synced here, not left to the
	** checkpoint of the last connection to close, which another process
	** still holding the file would skip. */
	if (y->owed && a2m_sqlite_sync_wait(&s->base, a2m_sqlite_sync_owed(&s->base), NULL, 0))
		a2m_log(A2M_LOG_ERROR, "group commit: the last sync of the log at close failed");
	uint64_t given = atomic_load(&y->given);
	if (y->syncs)
		a2m_log(A2M_LOG_INFO, "group commit: %llu durable calls in %llu syncs of the log "
			"(%.1f a sync; %llu begun early, of %llu asked of the sync thread, %llu "
			"while a sync ran)", (unsigned long long)given,
			(unsigned long long)y->syncs, (double)given / (double)y->syncs,
			(unsigned long long)y->early, (unsigned long long)y->kicks,
			(unsigned long long)y->busy);
	if (y->fd >= 0)
		close(y->fd);
	pthread_cond_destroy(&y->kick_cv);
	pthread_cond_destroy(&y->cv);
	pthread_mutex_destroy(&y->mu);
	free(y->wal);
	free(y);
	s->sync = NULL;
	s->base.group_commit = 0;
}

int a2m_sqlite_sync_refuse(sqlstore *s)
{
	int e = s->sync ? atomic_load(&s->sync->failed) : 0;
	if (!e)
		return 0;
	return a2m_store_fail(&s->base, "an earlier fsync of the log failed (%s): the store "
			      "refuses writes until it is reopened", strerror(e));
}

uint64_t a2m_sqlite_sync_owed(a2m_store *base)
{
	sqlstore *s = (sqlstore *)base;
	a2m_sqlite_sync *y = s->sync;
	if (!y || !y->owed)
		return 0;
	y->owed = 0;
	/* Release: the leader that reads this ticket syncs after our write()s. */
	return atomic_fetch_add_explicit(&y->given, 1, memory_order_acq_rel) + 1;
}

/*
** The log's own descriptor, opened at the first sync: the log exists once
** a commit wrote it, and stays the same file while the main connection is
** open. Its directory entry is synced once, as SQLite does for a log it
** creates under synchronous=FULL. Under y->mu's leadership. Returns 0 or
** an errno.
*/
static int open_log(a2m_sqlite_sync *y)
{
	if (y->fd >= 0)
		return 0;
	int fd = open(y->wal, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno;
	char *dir = strdup(y->wal);
	if (!dir) {
		close(fd);
		return ENOMEM;
	}
	char *slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (dfd >= 0) {
		(void)fsync(dfd);  /* best effort, as SQLite's own directory sync */
		close(dfd);
	}
	y->fd = fd;
	return 0;
}

/* One fsync of the log. Returns 0 or an errno. */
static int sync_log(a2m_sqlite_sync *y)
{
	int e = open_log(y);
	if (e)
		return e;
#ifdef A2M_TEST_HOOKS
	if (atomic_exchange(&fail_next, 0))
		return EIO;
	hang_while_asked();
#endif
	while (fdatasync(y->fd) != 0) {
		if (errno != EINTR)
			return errno;
	}
	return 0;
}

/*
** One sync led: every ticket given before it began is durable after it (or
** the store is poisoned), and the waiters are told. Called and returns
** with y->mu held, y->leading 0.
*/
static void lead(a2m_sqlite_sync *y)
{
	y->leading = 1;
	uint64_t upto = atomic_load_explicit(&y->given, memory_order_acquire);
	pthread_mutex_unlock(&y->mu);
	int got = sync_log(y);
	pthread_mutex_lock(&y->mu);
	y->leading = 0;
	y->syncs++;
	if (got)
		atomic_store(&y->failed, got);
	else if (upto > y->synced)
		y->synced = upto;
	pthread_cond_broadcast(&y->cv);
}

/* The sync thread: leads a sync when kicked and one is still owed. */
static void *sync_thread(void *arg)
{
	a2m_sqlite_sync *y = arg;
	pthread_mutex_lock(&y->mu);
	while (!y->stop) {
		if (!y->kicked || y->leading) {
			pthread_cond_wait(&y->kick_cv, &y->mu);
			continue;
		}
		y->kicked = 0;
		/* A waiter may have led it meanwhile. */
		if (y->synced >= atomic_load(&y->given) || atomic_load(&y->failed))
			continue;
		y->early++;
#ifdef A2M_TEST_HOOKS
		atomic_fetch_add(&early_led, 1);
#endif
		/* The pass's frames, committed meanwhile, are written by the next
		** sync: starting their writeback here (sync_file_range) cost a
		** device write a call and was no faster (docs/BENCHMARKS.md). */
		lead(y);
	}
	pthread_mutex_unlock(&y->mu);
	return NULL;
}

uint64_t a2m_sqlite_sync_start(a2m_store *base)
{
	sqlstore *s = (sqlstore *)base;
	a2m_sqlite_sync *y = s->sync;
	uint64_t ticket = a2m_sqlite_sync_owed(base);
	if (!ticket)
		return 0;
	pthread_mutex_lock(&y->mu);
	/* One core: the thread could only take turns with the caller. */
	if (!y->started)
		y->started = a2m_cpus_usable() > 1 &&
			     a2m_thread_start(&y->thread, sync_thread, y) == 0 ? 1 : -1;
	if (y->started == 1) {
		/* A sync already running began before this commit: the thread
		** waits for the next kick (lead() does not wake it), so the
		** writer, waiting for its ticket, leads the next sync itself. */
		y->kicked = 1;
		y->kicks++;
		y->busy += y->leading != 0;
		pthread_cond_signal(&y->kick_cv);
	}
	pthread_mutex_unlock(&y->mu);
	return ticket;
}

int a2m_sqlite_sync_wait(a2m_store *base, uint64_t ticket, char *msg, size_t msglen)
{
	sqlstore *s = (sqlstore *)base;
	a2m_sqlite_sync *y = s->sync;
	if (!y || !ticket)
		return 0;
	int e = 0;
	a2m_phase was = a2m_phase_enter(A2M_PHASE_SYNC);
	pthread_mutex_lock(&y->mu);
	while (y->synced < ticket && !(e = atomic_load(&y->failed))) {
		if (y->leading)
			pthread_cond_wait(&y->cv, &y->mu);
		else
			lead(y);
	}
	pthread_mutex_unlock(&y->mu);
	a2m_phase_leave(was);
	if (!e)
		return 0;
	if (msg && msglen)
		snprintf(msg, msglen, "the write was applied but could not be made durable "
			 "(fsync of the log: %s); the store refuses writes until it is reopened",
			 strerror(e));
	return A2M_INTERNAL_ERROR;
}

