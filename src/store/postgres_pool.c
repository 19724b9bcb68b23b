/*
** postgres_pool.c — read brackets (store.h, read_begin) in the PostgreSQL
** engine, each on a connection of its own.
**
** A bracket is one REPEATABLE READ, READ ONLY transaction: every read in
** it sees one snapshot, and its first statement reads the deployment's
** version, the index's figures and the term buckets' stamps as of that
** snapshot (BM25 reads the figures; postgres_index.c keys its postings
** cache on the stamps). Brackets of
** several threads run at once (the HTTP workers' recalls): the first takes
** the main connection when no write holds it, the others a reader of the
** pool, opened when first needed, at most POOL_READERS; more wait for one
** to come back. A reader whose server went away reconnects when it is next
** lent. Which connection a thread's bracket holds is thread-local, so the
** read ops find it without a lock.
**
** The pool also lends a reader to callers outside any bracket and any lock
** (a2m_pg_with_conn: the version op, from any thread).
*/
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"

#define POOL_READERS 8

struct a2m_pg_pool {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	int             main_lent;
	pgconn          readers[POOL_READERS];
	int             busy[POOL_READERS];
};

/* This thread's brackets: a thread may read two stores (tests do). */
#define TL_BRACKETS 4
static _Thread_local struct {
	pgstore *s;
	pgconn  *c;
} tl[TL_BRACKETS];

a2m_pg_pool *a2m_pg_pool_new(void)
{
	a2m_pg_pool *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	return p;
}

void a2m_pg_pool_free(pgstore *s, a2m_pg_pool *p)
{
	if (!p)
		return;
	for (int i = 0; i < POOL_READERS; i++) {
		a2m_pg_disconnect(s, &p->readers[i]);
		a2m_pcache_free(p->readers[i].pcache);
		a2m_pg_batches_free(p->readers[i].batches);
	}
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

static int tl_find(const pgstore *s)
{
	for (int i = 0; i < TL_BRACKETS; i++)
		if (tl[i].s == s)
			return i;
	return -1;
}

pgconn *a2m_pg_conn(pgstore *s)
{
	int i = tl_find(s);
	return i >= 0 ? tl[i].c : &s->main;
}

int a2m_pg_in_bracket(pgstore *s)
{
	return tl_find(s) >= 0;
}

/* Takes a connection: main when allowed and free, else a reader (waiting). */
static pgconn *take(pgstore *s, int main_ok)
{
	a2m_pg_pool *p = s->pool;
	pgconn *c = NULL;
	pthread_mutex_lock(&p->mu);
	while (!c) {
		if (main_ok && !p->main_lent && !s->in_tx) {
			p->main_lent = 1;
			c = &s->main;
			break;
		}
		for (int i = 0; i < POOL_READERS && !c; i++)
			if (!p->busy[i]) {
				p->busy[i] = 1;
				c = &p->readers[i];
			}
		if (!c)
			pthread_cond_wait(&p->cv, &p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return c;
}

static void give_back(pgstore *s, pgconn *c)
{
	a2m_pg_pool *p = s->pool;
	pthread_mutex_lock(&p->mu);
	if (c == &s->main)
		p->main_lent = 0;
	else
		p->busy[c - p->readers] = 0;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/*
** Reads the bucket stamps (postgres_index.c) from their text form, "{v,v,...}",
** into c: known only when there are exactly PG_TERM_BUCKETS of them.
*/
static void read_stamps(pgconn *c, const char *text)
{
	size_t n = 0;
	c->stamps_known = 0;
	if (*text++ != '{')
		return;
	while (n < PG_TERM_BUCKETS) {
		char *end;
		c->term_stamps[n++] = strtoull(text, &end, 10);
		if (end == text || (*end != ',' && *end != '}'))
			return;
		text = end + 1;
		if (*end == '}')
			break;
	}
	c->stamps_known = n == PG_TERM_BUCKETS && text[-1] == '}';
}

/* Opens the snapshot on c (a connection gone stale is replaced: a2m_pg_exec). */
int a2m_pg_snapshot(pgstore *s, pgconn *c)
{
	static const char sql[] =
		"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;"
		" SELECT version, docs, total_len, unindexed, term_stamps, fold_base, batch_last,"
		" salience_max FROM a2m_state";
	PGresult *r = NULL;
	int rc = 0;
	if ((rc = a2m_pg_ready(s, c)) || (rc = a2m_pg_exec(s, c, sql, "read", &r)))
		return rc;
	c->in_tx = 1;
	c->version = 0;
	c->stats_known = 0;
	c->stamps_known = 0;
	c->batch_base = c->batch_last = 0;
	c->salience_known = 0;
	if (s->pq->ntuples(r) == 1) {
		char *end = NULL;
		const char *sal = s->pq->getvalue(r, 0, 7);
		c->salience_max = strtod(sal, &end);
		c->salience_known = end != sal && *end == '\0';
		c->batch_base = strtoll(s->pq->getvalue(r, 0, 5), NULL, 10);
		c->batch_last = strtoll(s->pq->getvalue(r, 0, 6), NULL, 10);
		read_stamps(c, s->pq->getvalue(r, 0, 4));
		c->version = (uint64_t)strtoull(s->pq->getvalue(r, 0, 0), NULL, 10);
		c->stats.docs = strtoll(s->pq->getvalue(r, 0, 1), NULL, 10);
		c->stats.total_len = strtoll(s->pq->getvalue(r, 0, 2), NULL, 10);
		c->stats.unindexed = strtoll(s->pq->getvalue(r, 0, 3), NULL, 10);
		c->stats_known = 1;
		a2m_pg_saw_version(s, c->version);
	}
	s->pq->clear(r);
	return 0;
}

int a2m_pg_read_begin(a2m_store *base)
{
	pgstore *s = (pgstore *)base;
	if (s->in_tx || a2m_pg_in_bracket(s))
		return 0;
	int slot = tl_find(NULL);
	if (slot < 0)
		return 0;  /* more stores than slots on one thread: reads go unbracketed */
	pgconn *c = take(s, 1);
	int rc = a2m_pg_snapshot(s, c);
	if (rc) {
		give_back(s, c);
		return rc;
	}
	tl[slot].s = s;
	tl[slot].c = c;
	a2m_pg_index_bracket(c, 1);
	return 0;
}

int a2m_pg_read_end(a2m_store *base)
{
	pgstore *s = (pgstore *)base;
	int i = tl_find(s);
	if (i < 0)
		return 0;
	pgconn *c = tl[i].c;
	tl[i].s = NULL;
	tl[i].c = NULL;
	a2m_pg_snapshot_end(s, c);
	a2m_pg_index_bracket(c, 0);
	give_back(s, c);
	return 0;
}

void a2m_pg_snapshot_end(pgstore *s, pgconn *c)
{
	/*
	** Ends the snapshot without a word in errmsg, which the other
	** brackets' threads may be writing: a read_end cannot fail, and a
	** connection that failed here is made again at its next use.
	*/
	if (!a2m_pg_lost(s, c)) {
		PGresult *r = s->pq->exec(c->conn, "COMMIT");
		if (!r || s->pq->result_status(r) != PGRES_COMMAND_OK)
			c->broken = 1;
		if (r)
			s->pq->clear(r);
	}
	c->in_tx = 0;
	c->stats_known = 0;
	c->stamps_known = 0;
}

int a2m_pg_with_conn(pgstore *s, int (*fn)(pgstore *s, pgconn *c, void *ctx), void *ctx)
{
	pgconn *c = take(s, 0);
	int rc = a2m_pg_ready(s, c);
	if (!rc)
		rc = fn(s, c, ctx);
	give_back(s, c);
	return rc;
}
