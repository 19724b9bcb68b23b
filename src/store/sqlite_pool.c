/*
** sqlite_pool.c — the SQLite engine's read connections: several threads may
** each hold a read bracket on one store at once (store.h, read_begin), each
** reading through a connection of its own, while everything else keeps
** using the store's one read-write connection (the main connection).
**
** A connection is one thread's at a time: its prepared statements, its row
** cache (row_cache.h) and its index's postings cache (postings_cache.h) are
** plain memory without locks. So read_begin lends the calling thread a
** whole connection until its read_end: the main one when it is free (its
** caches stay warm across its own commits, sqlite_txn.c), else a reader,
** opened on first need up to POOL_READERS, else it waits for one to come
** back. The thread finds its connection again through a thread-local note
** keyed by the store (a2m_sqlite_conn), so no op changes its signature.
**
** A reader is a read-only connection on the same file (the read-only open:
** no migration, no mirror) with the main connection's analyser attached
** read-only, so it never rebuilds the index. Its caches follow another
** process's commits through the data version, and survive the main
** connection's through the commit journal (sqlite_journal.c), which
** read_begin consults. A database no second connection can open (":memory:", a
** temporary "") gets no readers: brackets then take the main connection in
** turn, which is correct, only not parallel.
**
** The read ops are reached through the wrappers at the end of this file:
** each picks the thread's connection and, when it was a reader, copies a
** failure's message into the store's errmsg, where the caller looks.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_internal.h"
#include "util/clock.h"
#include "util/log.h"

#define POOL_READERS A2M_SQLITE_POOL_READERS

/* Stores one thread may hold a bracket on at the same time. */
#define HELD_MAX 4

enum { SLOT_EMPTY, SLOT_OPENING, SLOT_FREE, SLOT_BUSY };

struct a2m_sqlite_pool {
	pthread_mutex_t mu;
	pthread_cond_t  freed;      /* a connection came back */
	char           *path;       /* the file; NULL: no readers */
	int             synchronous_full;
	size_t          cache_bytes;  /* each reader's postings cache (the main's) */
	size_t          mmap_bytes;   /* each reader's memory map (the main's) */
	int             can_open;   /* the file can have readers (not ":memory:") */
	int64_t         retry_at;   /* after a reader failed to open: not before (ms) */
	a2m_indexer    *ix;         /* attached to every reader; NULL: none */
	unsigned        generation; /* bumped by attach: older readers are closed */
	int             main_busy;  /* the main connection is lent to a bracket */
	int             waiting;    /* threads in pthread_cond_wait */
	sqlstore       *readers[POOL_READERS];
	unsigned        reader_gen[POOL_READERS];
	int             state[POOL_READERS];
	atomic_int      readers_seen; /* a reader was ever opened (sqlite_journal.c) */
};

/* The brackets this thread holds: which connection serves which store. */
typedef struct held_conn {
	a2m_store *store;
	sqlstore  *conn;
} held_conn;

static _Thread_local held_conn held[HELD_MAX];
static _Thread_local int       held_n;

sqlstore *a2m_sqlite_conn(a2m_store *base)
{
	for (int i = 0; held_n && i < HELD_MAX; i++)
		if (held[i].store == base)
			return held[i].conn;
	return (sqlstore *)base;
}

/* The slot of this thread's bracket on base, or -1; base NULL: a free slot. */
static int held_slot(const a2m_store *base)
{
	for (int i = 0; (held_n || !base) && i < HELD_MAX; i++)
		if (held[i].store == base)
			return i;
	return -1;
}

int a2m_sqlite_in_bracket(const a2m_store *base)
{
	return held_slot(base) >= 0;
}

a2m_sqlite_pool *a2m_sqlite_pool_new(sqlstore *m, int synchronous_full)
{
	a2m_sqlite_pool *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	if (pthread_mutex_init(&p->mu, NULL) != 0) {
		free(p);
		return NULL;
	}
	if (pthread_cond_init(&p->freed, NULL) != 0) {
		pthread_mutex_destroy(&p->mu);
		free(p);
		return NULL;
	}
	/* "" (or NULL) for an in-memory or temporary database: nobody else can open it. */
	const char *path = sqlite3_db_filename(m->db, "main");
	if (path && path[0] && !(p->path = strdup(path))) {
		a2m_sqlite_pool_free(p);
		return NULL;
	}
	p->can_open = p->path != NULL;
	p->synchronous_full = synchronous_full;
	/* Unset, a reader keeps the base budget (no more than main's can grow
	** to): eight readers at most, docs/CONFIG.md gives the worst case. */
	p->cache_bytes = m->postings_cache_bytes ? m->postings_cache_bytes
						 : A2M_SQLITE_INDEX_CACHE_BASE;
	p->mmap_bytes = m->mmap_bytes;
	/* Readers keep their caches across the main connection's commits. */
	if (p->path && !m->base.read_only && !(m->journal = a2m_sqlite_journal_new())) {
		a2m_sqlite_pool_free(p);
		return NULL;
	}
	return p;
}

/*
** Sequentially consistent with the store in acquire(): a commit that reads
** 0 after its COMMIT is in the snapshot of every reader opened since
** (sqlite_txn.c, caches_committed).
*/
int a2m_sqlite_pool_readers_seen(a2m_sqlite_pool *p)
{
	return p && atomic_load(&p->readers_seen);
}

#ifdef A2M_TEST_HOOKS
void a2m_sqlite_number_commits_for_tests(a2m_store *s)
{
	a2m_sqlite_pool *p = ((sqlstore *)s)->pool;
	if (p)
		atomic_store(&p->readers_seen, 1);
}
#endif

void a2m_sqlite_pool_free(a2m_sqlite_pool *p)
{
	if (!p)
		return;
	for (int i = 0; i < POOL_READERS; i++)
		if (p->readers[i])
			p->readers[i]->base.ops->close(&p->readers[i]->base);
	pthread_cond_destroy(&p->freed);
	pthread_mutex_destroy(&p->mu);
	free(p->path);
	free(p);
}

/*
** Opens a reader with ix attached (read-only: a missing or stale index
** leaves it without one, as the main connection would be). NULL on failure.
*/
/* A new reader, or NULL with the reason logged (the pool then waits). */
static sqlstore *open_reader(const a2m_sqlite_pool *p, a2m_indexer *ix)
{
	a2m_sqlite_options opt = {.synchronous_full = p->synchronous_full, .read_only = 1,
				  .postings_cache_bytes = p->cache_bytes,
				  .mmap_bytes = p->mmap_bytes};
	a2m_store *r = NULL;
	char err[256];
	if (a2m_sqlite_open_reader(p->path, &opt, &r, err, sizeof err) != 0) {
		a2m_log(A2M_LOG_WARN, "sqlite: cannot open a read connection: %s", err);
		return NULL;
	}
	if (ix && r->ops->index_attach(r, ix) != 0) {
		a2m_log(A2M_LOG_WARN, "sqlite: a read connection cannot read the index: %s",
			r->errmsg);
		r->ops->close(r);
		return NULL;
	}
	return (sqlstore *)r;
}

/* After a reader failed to open, how long the pool makes do without it. */
#define REOPEN_MS 200

void a2m_sqlite_pool_attach(a2m_sqlite_pool *p, a2m_indexer *ix)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->ix = ix;
	p->generation++;
	for (int i = 0; i < POOL_READERS; i++) {
		if (p->state[i] != SLOT_FREE)
			continue;  /* a busy one is closed when it comes back */
		p->readers[i]->base.ops->close(&p->readers[i]->base);
		p->readers[i] = NULL;
		p->state[i] = SLOT_EMPTY;
	}
	pthread_mutex_unlock(&p->mu);
}

/*
** A free connection for a bracket: the main one, a free reader, a new
** reader, or (all busy, or none possible) the first one given back.
** Cannot fail: a reader that cannot be opened only means waiting.
*/
static sqlstore *acquire(a2m_sqlite_pool *p, sqlstore *m)
{
	sqlstore *c = NULL;
	pthread_mutex_lock(&p->mu);
	while (!c) {
		if (!p->main_busy) {
			p->main_busy = 1;
			c = m;
			break;
		}
		int empty = -1;
		for (int i = 0; i < POOL_READERS && !c; i++) {
			if (p->state[i] == SLOT_FREE) {
				p->state[i] = SLOT_BUSY;
				c = p->readers[i];
			} else if (p->state[i] == SLOT_EMPTY && empty < 0) {
				empty = i;
			}
		}
		if (c)
			break;
		int64_t now = a2m_clock_now_ms();
		if (p->can_open && empty >= 0 && now >= p->retry_at) {
			/* Opened outside the lock: it reads the file's schema. */
			a2m_indexer *ix = p->ix;
			unsigned gen = p->generation;
			p->state[empty] = SLOT_OPENING;
			atomic_store(&p->readers_seen, 1);
			pthread_mutex_unlock(&p->mu);
			sqlstore *r = open_reader(p, ix);
			pthread_mutex_lock(&p->mu);
			if (r) {
				p->readers[empty] = r;
				p->reader_gen[empty] = gen;
				p->state[empty] = SLOT_BUSY;
				c = r;
			} else {
				/* Perhaps for a moment (a busy file, memory): try again
				** later; meanwhile wait for a connection given back. */
				p->state[empty] = SLOT_EMPTY;
				p->retry_at = a2m_clock_now_ms() + REOPEN_MS;
			}
			continue;
		}
		p->waiting++;
		if (p->can_open && empty >= 0) {
			/* Not only a release: the retry time may end the wait. */
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			int64_t ns = ts.tv_nsec + (p->retry_at - now) * 1000000;
			ts.tv_sec += (time_t)(ns / 1000000000);
			ts.tv_nsec = (long)(ns % 1000000000);
			pthread_cond_timedwait(&p->freed, &p->mu, &ts);
		} else {
			pthread_cond_wait(&p->freed, &p->mu);
		}
		p->waiting--;
	}
	pthread_mutex_unlock(&p->mu);
	return c;
}

/* Gives c back; a reader opened before the last attach is closed instead. */
static void release(a2m_sqlite_pool *p, sqlstore *m, sqlstore *c)
{
	sqlstore *stale = NULL;
	pthread_mutex_lock(&p->mu);
	if (c == m) {
		p->main_busy = 0;
	} else {
		for (int i = 0; i < POOL_READERS; i++) {
			if (p->readers[i] != c)
				continue;
			if (p->reader_gen[i] != p->generation) {
				stale = c;
				p->readers[i] = NULL;
				p->state[i] = SLOT_EMPTY;
			} else {
				p->state[i] = SLOT_FREE;
			}
			break;
		}
	}
	if (p->waiting)
		pthread_cond_signal(&p->freed);
	pthread_mutex_unlock(&p->mu);
	if (stale)
		stale->base.ops->close(&stale->base);
}

/*
** A reader's failure is the caller's: its message goes to the store's
** errmsg. Two threads failing at once may interleave their texts there (a
** rare race on a message for humans; the codes stay right); the copy is
** bounded and the last byte stays a terminator, so nothing reads past it.
*/
int a2m_sqlite_relay(a2m_store *base, const sqlstore *c, int rc)
{
	if (rc < 0 && &c->base != base) {
		memcpy(base->errmsg, c->base.errmsg, sizeof base->errmsg);
		base->errmsg[sizeof base->errmsg - 1] = '\0';
	}
	return rc;
}

/* ---- read brackets ----------------------------------------------------- */

/*
** Outside a transaction every statement is a read transaction of its own:
** in WAL mode a read lock on the shared memory taken and dropped (fcntl
** calls) and a commit at each statement's end, which at 10k records cost a
** recall more than its reads. SQLite ends an implicit transaction only when
** the last active statement finishes, so one statement stepped to its row
** and left there holds one snapshot and its lock for every statement run
** meanwhile, until read_end resets it.
**
** Not a deferred BEGIN: that turns autocommit off, and the postings cache
** (sqlite_index.c) and the vector rows (sqlite_vectors.c) read autocommit
** off as "a write transaction may be open", then pass themselves by (the
** recall was measured slower than without a bracket). Held this way the
** snapshot is one those caches may fill from, and it never asks for the
** write lock, so a read-only connection brackets the same way.
*/
int a2m_sqlite_read_begin(a2m_store *base)
{
	sqlstore *m = (sqlstore *)base;
	if (held_slot(base) >= 0)
		return 0;  /* brackets do not nest */
	int slot = held_slot(NULL);
	if (slot < 0)
		return a2m_store_fail(base, "read_begin: this thread holds %d brackets already",
				      HELD_MAX);
	sqlstore *c = m->pool ? acquire(m->pool, m) : m;
	/* Inside the exclusive holder's write transaction: a no-op (store.h). */
	if (c == m && !sqlite3_get_autocommit(m->db)) {
		if (m->pool)
			release(m->pool, m, c);
		return 0;
	}
	if (sqlite3_step(c->snapshot) != SQLITE_ROW) {
		int rc = a2m_sqlite_relay(base, c, a2m_sqlite_db_fail(c, "read_begin"));
		sqlite3_reset(c->snapshot);
		if (m->pool)
			release(m->pool, m, c);
		return rc;
	}
	if (c != m && m->journal)
		a2m_sqlite_journal_sync(m->journal, c);
	if (c->index)
		a2m_sqlite_index_bracket(c->index);  /* a new period of loans */
	c->reading = 1;
	held[slot] = (held_conn){base, c};
	held_n++;
	return 0;
}

/*
** Cannot fail: resetting the held statement ends the implicit transaction
** (unless a caller's statement is still active, which then ends it), and
** SQLite rolled back whatever an error inside the bracket began.
*/
int a2m_sqlite_read_end(a2m_store *base)
{
	sqlstore *m = (sqlstore *)base;
	int slot = held_slot(base);
	if (slot < 0)
		return 0;
	sqlstore *c = held[slot].conn;
	held[slot] = (held_conn){NULL, NULL};
	held_n--;
	c->reading = 0;
	if (c->index)
		a2m_sqlite_index_bracket(c->index);  /* the bracket's loans end */
	sqlite3_reset(c->snapshot);
	if (m->pool)
		release(m->pool, m, c);
	return 0;
}

/* ---- the read ops, through the thread's connection --------------------- */

/*
** Inside the main connection's write transaction a read must see the
** inserts it holds (sqlite_held.c): they are written first. A read on a
** reader connection (a bracket) leaves main alone: it could not see main's
** uncommitted rows anyway, and main may be another thread's to use.
*/
sqlstore *a2m_sqlite_read_conn(a2m_store *base, int *rc)
{
	sqlstore *c = a2m_sqlite_conn(base);
	*rc = c == (sqlstore *)base ? a2m_sqlite_held_flush(c) : 0;
	return c;
}

int a2m_sqlite_pooled_get(a2m_store *base, const char *id, a2m_record **out)
{
	/*
	** The held rows are written first only when one has the id: the
	** table answers for any other id as it would once they were written.
	** A remember of records with ids asks for each one before its insert,
	** and a flush each time wrote the rows one per statement (`a2m
	** corpus`: 8 000 a batch; docs/BENCHMARKS.md).
	*/
	int rc = 0;
	sqlstore *c = a2m_sqlite_conn(base);
	if (c == (sqlstore *)base && a2m_sqlite_held_has_id(c, id))
		rc = a2m_sqlite_held_flush(c);
	*out = NULL;
	return rc ? rc : a2m_sqlite_relay(base, c, a2m_sqlite_get(&c->base, id, out));
}

int a2m_sqlite_pooled_get_by_key(a2m_store *base, const char *owner, const char *key,
				 a2m_record **out)
{
	int rc;
	sqlstore *c = a2m_sqlite_read_conn(base, &rc);
	*out = NULL;
	return rc ? rc : a2m_sqlite_relay(base, c, a2m_sqlite_get_by_key(&c->base, owner, key, out));
}

int a2m_sqlite_pooled_scan(a2m_store *base, const a2m_query *q, a2m_record_visit visit,
			   void *ctx)
{
	int rc;
	sqlstore *c = a2m_sqlite_read_conn(base, &rc);
	return rc ? rc : a2m_sqlite_relay(base, c, a2m_sqlite_scan(&c->base, q, visit, ctx));
}

int a2m_sqlite_pooled_count(a2m_store *base, const a2m_query *q, int64_t *out)
{
	int rc;
	sqlstore *c = a2m_sqlite_read_conn(base, &rc);
	*out = 0;
	return rc ? rc : a2m_sqlite_relay(base, c, a2m_sqlite_count(&c->base, q, out));
}

int a2m_sqlite_pooled_meta_get(a2m_store *base, const char *name, char **value)
{
	int rc;
	sqlstore *c = a2m_sqlite_read_conn(base, &rc);
	*value = NULL;
	return rc ? rc : a2m_sqlite_relay(base, c, a2m_sqlite_meta_get(&c->base, name, value));
}

int a2m_sqlite_pooled_visit_seqs(a2m_store *base, const int64_t *seqs, size_t n,
				 a2m_record_visit visit, void *ctx)
{
	int rc;
	sqlstore *c = a2m_sqlite_read_conn(base, &rc);
	return rc ? rc : a2m_sqlite_relay(base, c, a2m_sqlite_visit_seqs(&c->base, seqs, n, visit, ctx));
}

int a2m_sqlite_pooled_scan_unembedded(a2m_store *base, const char *tier,
				      a2m_record_visit visit, void *ctx)
{
	int rc;
	sqlstore *c = a2m_sqlite_read_conn(base, &rc);
	return rc ? rc : a2m_sqlite_relay(base, c, a2m_sqlite_scan_unembedded(&c->base, tier, visit, ctx));
}
