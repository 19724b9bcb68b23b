/*
** postgres_listen.c — the listener: a thread of the store's own, with a
** connection of its own, that hears the other servers' commits (store.h,
** watch).
**
** Every commit that wrote sends NOTIFY on the deployment's channel with the
** committing store's origin (postgres_txn.c). The listener LISTENs there
** and calls the watcher once per burst of notifications from any other
** origin; the watcher (a2m.c) then reads what changed through the store,
** under the handle's lock, like any request. Notifications only wake it:
** what to deliver is decided by the event log's seqs, so one lost or
** merged notification costs nothing, and after the listener reconnects
** (the server restarted) it calls the watcher once anyway, for whatever
** was committed while it was away. The watcher answers when it wants to
** be called again even if nobody commits (an expiry it knows of, store.h
** watch), and is called then too.
**
** A hot standby cannot LISTEN (PostgreSQL refuses it during recovery):
** there the listener polls the event log's head four times a second
** instead, which the standby replays like everything else.
**
** The thread waits in poll() on the connection's socket and on a pipe that
** stop writes to, so stopping it never waits for a timeout. A connection
** that fails is made again with a growing pause (0.1 s to 2 s).
*/
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "a2m.h"
#include "store/postgres_internal.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/thread.h"

struct a2m_pg_listen {
	pgstore           *s;
	pthread_t          thread;
	pthread_mutex_t    mu;         /* guards fn, ctx and calling */
	pthread_cond_t     cv;
	a2m_store_watch_fn fn;
	void              *ctx;
	int                calling;    /* fn runs now */
	int64_t            due;        /* when fn asked to be called again; -1: not (thread's own) */
	int                wake[2];    /* stop writes here */
	_Atomic int        stop;
	pgconn             conn;
};

/*
** Calls the watcher, unless it was just removed, and notes when it asked
** to be called again (l->due, a2m_clock_now_ms; -1: at the next commit).
*/
static void call(a2m_pg_listen *l)
{
	pthread_mutex_lock(&l->mu);
	a2m_store_watch_fn fn = l->fn;
	void *ctx = l->ctx;
	l->calling = fn != NULL;
	pthread_mutex_unlock(&l->mu);
	l->due = -1;
	if (!fn)
		return;
	int64_t again = fn(ctx);
	if (again >= 0)
		l->due = a2m_clock_now_ms() + again;
	pthread_mutex_lock(&l->mu);
	l->calling = 0;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

/*
** The wait before the next look (ms at most): shorter when the watcher's
** time comes first; 0 when it has come (the caller calls it then).
*/
static int wait_ms(const a2m_pg_listen *l, int ms)
{
	if (l->due < 0)
		return ms;
	int64_t left = l->due - a2m_clock_now_ms();
	return left <= 0 ? 0 : left < ms ? (int)left : ms;
}

/* Waits up to ms for the socket (or -1: none) or the stop pipe. 1: socket readable. */
static int wait_for(a2m_pg_listen *l, int sock, int ms)
{
	struct pollfd p[2] = {{.fd = l->wake[0], .events = POLLIN},
			      {.fd = sock, .events = POLLIN}};
	int n = poll(p, sock >= 0 ? 2 : 1, ms);
	if (n <= 0)
		return 0;
	return sock >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

/* The event head and version, on a standby that cannot LISTEN. */
static int poll_state(a2m_pg_listen *l, char *seen, size_t size)
{
	pgstore *s = l->s;
	PGresult *r;
	if (a2m_pg_exec(s, &l->conn, "SELECT version::text || ' ' || event_head::text"
			" FROM a2m_state", "listen", &r) != 0)
		return -1;
	int changed = 0;
	if (s->pq->ntuples(r) == 1) {
		const char *now = s->pq->getvalue(r, 0, 0);
		changed = strcmp(now, seen) != 0;
		snprintf(seen, size, "%s", now);
	}
	s->pq->clear(r);
	return changed;
}

static void *run(void *arg)
{
	a2m_pg_listen *l = arg;
	pgstore *s = l->s;
	int pause = 100, polling = 0;
	char seen[64] = "";
	while (!atomic_load(&l->stop)) {
		if (a2m_pg_lost(s, &l->conn)) {
			char sql[96];
			if (a2m_pg_connect(s, &l->conn) != 0) {
				wait_for(l, -1, pause);
				pause = pause < 1000 ? pause * 2 : 2000;
				continue;
			}
			snprintf(sql, sizeof sql, "LISTEN %s", s->channel);
			polling = a2m_pg_exec(s, &l->conn, sql, "listen", NULL) != 0;
			if (polling && a2m_pg_lost(s, &l->conn))
				continue;
			pause = 100;
			seen[0] = '\0';
			if (polling)
				poll_state(l, seen, sizeof seen);
			call(l);  /* whatever was committed while nobody listened */
			continue;
		}
		int ms = wait_ms(l, polling ? 250 : 1000);
		if (!ms) {
			call(l);  /* the time it asked for came, with or without a commit */
			continue;
		}
		if (polling) {
			wait_for(l, -1, ms);
			if (!atomic_load(&l->stop) && poll_state(l, seen, sizeof seen) > 0)
				call(l);
			continue;
		}
		if (!wait_for(l, s->pq->socket(l->conn.conn), ms))
			continue;
		if (!s->pq->consume_input(l->conn.conn)) {
			l->conn.broken = 1;
			continue;
		}
		int foreign = 0;
		PGnotify *n;
		while ((n = s->pq->notifies(l->conn.conn)) != NULL) {
			if (!n->extra || strcmp(n->extra, s->origin) != 0)
				foreign = 1;
			s->pq->freemem(n);
		}
		if (foreign)
			call(l);
	}
	return NULL;
}

void a2m_pg_listen_free(a2m_pg_listen *l)
{
	if (!l)
		return;
	atomic_store(&l->stop, 1);
	ssize_t w = write(l->wake[1], "x", 1);
	(void)w;
	pthread_join(l->thread, NULL);
	a2m_pg_disconnect(l->s, &l->conn);
	close(l->wake[0]);
	close(l->wake[1]);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

int a2m_pg_watch(a2m_store *base, a2m_store_watch_fn fn, void *ctx)
{
	pgstore *s = (pgstore *)base;
	a2m_pg_listen *l = s->listen;
	if (!fn) {
		if (!l)
			return 0;
		/* Removed first, then waited out, so fn is never called after. */
		pthread_mutex_lock(&l->mu);
		l->fn = NULL;
		l->ctx = NULL;
		while (l->calling)
			pthread_cond_wait(&l->cv, &l->mu);
		pthread_mutex_unlock(&l->mu);
		return 0;
	}
	if (l) {
		pthread_mutex_lock(&l->mu);
		l->fn = fn;
		l->ctx = ctx;
		pthread_mutex_unlock(&l->mu);
		return 0;
	}
	if (!(l = calloc(1, sizeof *l)))
		return a2m_store_fail(base, "watch: out of memory");
	l->s = s;
	l->fn = fn;
	l->ctx = ctx;
	l->due = -1;
	atomic_init(&l->stop, 0);
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	if (pipe(l->wake) != 0) {
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->mu);
		free(l);
		return a2m_store_fail(base, "watch: %s", strerror(errno));
	}
	if (a2m_thread_start(&l->thread, run, l) != 0) {
		close(l->wake[0]);
		close(l->wake[1]);
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->mu);
		free(l);
		return a2m_store_fail(base, "watch: cannot start the listener thread");
	}
	s->listen = l;
	return 0;
}
