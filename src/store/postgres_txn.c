/*
** postgres_txn.c — the PostgreSQL engine's write transactions and its
** store-level settings.
**
** The deployment's write lock. Every write transaction, from every server
** of the deployment, begins by taking one transaction-scoped advisory lock
** (pg_advisory_xact_lock on the deployment's key), in the same round trip
** as its BEGIN and the read of a2m_state. So write transactions run one at
** a time across every server, each from the state the previous one
** committed, exactly as they do on one SQLite file (BEGIN IMMEDIATE), and
** the stack's check-then-write steps stay true when several servers write
** at once:
**   - a client id is looked up and then inserted with nobody in between,
**     so a retry that races its original, through another server, finds
**     it and writes nothing (spec §3.2; the INSERT also says ON CONFLICT
**     (id) DO NOTHING, postgres_held.c);
**   - a key is looked up and then replaced, so two servers writing one key
**     end with one record whose revision counts both writes (§3.6);
**   - a tier or session is counted after every write into it, by a
**     transaction that sees every other write into it, so capacity is held
**     and a group moves whole however many servers write the same bucket
**     (§3.4, §4.7): the lock is per deployment, which covers "per tier"
**     and "per session" alike and cannot deadlock, since it is the only
**     lock a transaction of ours waits for;
**   - seqs are given out here, in commit order, from a2m_state.seq.
** Reads never take it: a read bracket is a snapshot (postgres_pool.c).
** A server that dies mid-transaction loses its connection, and PostgreSQL
** rolls the transaction back and releases the lock with it.
**
** The commit writes the state row (version + 1, the seq mark, the index's
** figures), sends NOTIFY on the deployment's channel (the other servers'
** listeners, postgres_listen.c) and COMMITs, in one round trip. With
** synchronous_commit on (the connection makes sure of it) the answer comes
** after the WAL is on disk: an acknowledged write survives a crash of
** PostgreSQL. A relaxed transaction (recall's access counts) commits with
** synchronous_commit off.
*/
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"

void a2m_pg_saw_version(pgstore *s, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(&s->version_seen, memory_order_relaxed);
	while (v > cur && !atomic_compare_exchange_weak_explicit(&s->version_seen, &cur, v,
								  memory_order_acq_rel,
								  memory_order_relaxed))
		;
}

int a2m_pg_state(pgstore *s, pgconn *c, const char *op, pgstate *out)
{
	PGresult *r;
	memset(out, 0, sizeof *out);
	int rc = a2m_pg_run(s, c, PG_STATE, NULL, op, &r);
	if (rc)
		return rc;
	if (s->pq->ntuples(r) != 1) {
		s->pq->clear(r);
		return a2m_store_fail(&s->base, "%s: the deployment has no state row", op);
	}
	out->version = (uint64_t)a2m_pg_int8(s, r, 0, 0);
	out->seq = a2m_pg_int8(s, r, 0, 1);
	out->stats.docs = a2m_pg_int8(s, r, 0, 2);
	out->stats.total_len = a2m_pg_int8(s, r, 0, 3);
	out->stats.unindexed = a2m_pg_int8(s, r, 0, 4);
	s->pq->clear(r);
	a2m_pg_saw_version(s, out->version);
	return 0;
}

void a2m_pg_tx_fail(pgstore *s)
{
	if (s->in_tx)
		s->tx_failed = 1;
}

/* A text cell as a number (the state row comes back from a simple query, as text). */
static int64_t num(pgstore *s, const PGresult *r, int col)
{
	const char *v = s->pq->getisnull(r, 0, col) ? "0" : s->pq->getvalue(r, 0, col);
	return strtoll(v, NULL, 10);
}

/* ROLLBACK on main, if it is still there, keeping the message of why. */
static void quiet_rollback(pgstore *s)
{
	if (a2m_pg_lost(s, &s->main))
		return;
	char keep[sizeof s->base.errmsg];
	memcpy(keep, s->base.errmsg, sizeof keep);
	a2m_pg_exec(s, &s->main, "ROLLBACK", "rollback", NULL);
	memcpy(s->base.errmsg, keep, sizeof keep);
}

/* What open_tx reads of the state row: the fold's state from column 6 on. */
#define STATE_COLUMNS \
	"version, seq, docs, total_len, unindexed, index_version," \
	" batch_last, fold_base, fold_horizon, fold_budget, fold_cursor, salience_max"

/* A hex digit's value, or -1. */
static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The batch rows and the fold as the state row holds them (text cells) into s->fold. */
static int read_fold(pgstore *s, const PGresult *r)
{
	pg_fold *f = &s->fold;
	f->last = num(s, r, 6);
	f->base = num(s, r, 7);
	f->horizon = num(s, r, 8);
	f->budget = num(s, r, 9);
	f->has_cursor = 0;
	f->cursor_len = 0;
	f->dirty = 0;
	s->fold_last0 = f->last;
	if (s->pq->getisnull(r, 0, 10))
		return 0;
	/* bytea as text: "\x" and two hex digits a byte. */
	const char *t = s->pq->getvalue(r, 0, 10);
	size_t len = (size_t)s->pq->getlength(r, 0, 10);
	if (len < 2 || t[0] != '\\' || t[1] != 'x' || len % 2)
		return a2m_store_fail(&s->base, "begin: the fold's cursor is not a bytea");
	size_t n = (len - 2) / 2;
	unsigned char *c = realloc(f->cursor, n ? n : 1);
	if (!c)
		return a2m_store_fail(&s->base, "begin: out of memory");
	f->cursor = c;
	for (size_t i = 0; i < n; i++) {
		int hi = hex(t[2 + 2 * i]), lo = hex(t[3 + 2 * i]);
		if (hi < 0 || lo < 0)
			return a2m_store_fail(&s->base, "begin: the fold's cursor is not a bytea");
		c[i] = (unsigned char)(hi << 4 | lo);
	}
	f->cursor_len = n;
	f->has_cursor = 1;
	return 0;
}

/*
** BEGIN, the lock, and the state row, in one round trip on main.
*/
static int open_tx(pgstore *s, int relaxed)
{
	char sql[400];
	PGresult *r = NULL;
	int rc;
	if (s->base.read_only)
		snprintf(sql, sizeof sql, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;"
			 " SELECT " STATE_COLUMNS " FROM a2m_state");
	else
		snprintf(sql, sizeof sql, "BEGIN;%s SELECT pg_advisory_xact_lock(%d, %d);"
			 " SELECT " STATE_COLUMNS " FROM a2m_state",
			 relaxed ? " SET LOCAL synchronous_commit = off;" : "",
			 (int)s->lock_class, (int)s->lock_write);
	/* A connection gone stale while idle is replaced and BEGIN sent again (a2m_pg_exec). */
	if (!(rc = a2m_pg_ready(s, &s->main)))
		rc = a2m_pg_exec(s, &s->main, sql, "begin", &r);
	if (rc) {
		/* A half-begun transaction (the lock failed) must not stay open. */
		quiet_rollback(s);
		return rc;
	}
	if (s->pq->ntuples(r) != 1) {
		s->pq->clear(r);
		quiet_rollback(s);
		return a2m_store_fail(&s->base, "begin: the deployment has no state row");
	}
	s->tx_version = (uint64_t)num(s, r, 0);
	s->tx_salience = strtod(s->pq->getvalue(r, 0, 11), NULL);
	s->tx_raised = 0;
	s->seq_next = num(s, r, 1) + 1;
	s->seq_start = s->seq_next;
	const char *iv = s->pq->getisnull(r, 0, 5) ? NULL : s->pq->getvalue(r, 0, 5);
	/*
	** Every server of a deployment must index with one analysis: a server
	** of another a2m version would otherwise add postings the others'
	** queries cannot find. Refused plainly rather than mixed.
	*/
	if (s->index && !s->base.read_only && iv && strcmp(iv, s->index_version) != 0) {
		a2m_store_fail(&s->base, "the deployment's term index was built with analysis"
			       " '%s'; this server's is '%s': every server of a deployment must"
			       " run the same a2m", iv, s->index_version);
		s->pq->clear(r);
		quiet_rollback(s);
		return A2M_INTERNAL_ERROR;
	}
	rc = read_fold(s, r);
	s->pq->clear(r);
	if (rc) {
		quiet_rollback(s);
		return rc;
	}
	a2m_pg_saw_version(s, s->tx_version);
	/* Another server committed since this store last looked: any record may
	** have changed (store.h, stamp). Under the write lock, so it is final. */
	if (!s->stamp_known || s->tx_version != s->stamp_version)
		s->stamp++;
	s->stamp_version = s->tx_version;
	s->stamp_known = 1;
	s->main.in_tx = 1;
	s->in_tx = 1;
	s->tx_failed = 0;
	s->wrote = 0;
	s->logged = 0;
	s->relaxed = relaxed;
	a2m_pg_vectors_begin(s->vectors);
	return 0;
}

static int begin_any(a2m_store *base, int relaxed)
{
	pgstore *s = (pgstore *)base;
	if (s->in_tx)
		return a2m_store_fail(base, "begin: a transaction is already open");
	/* A write starts from the newest state, not the bracket's snapshot. */
	a2m_pg_read_end(base);
	return open_tx(s, relaxed);
}

int a2m_pg_begin(a2m_store *base)
{
	return begin_any(base, 0);
}

int a2m_pg_begin_relaxed(a2m_store *base)
{
	return begin_any(base, 1);
}

/* Ends the transaction's bookkeeping, whichever way it went. */
static void tx_over(pgstore *s, int committed)
{
	uint64_t from = s->tx_version, to = s->tx_version + (s->wrote ? 1 : 0);
	a2m_pg_held_drop(s->held);
	a2m_pg_index_end(s);
	/* The ids this transaction gave its batch rows are given again by the next. */
	if (!committed) {
		a2m_pg_batches_evict_above(&s->main, s->fold_last0);
		s->stamp++;  /* what it wrote is undone (store.h, stamp) */
	} else {
		s->stamp_version = to;  /* its own commit: the stamp stays */
	}
	if (committed)
		a2m_pg_vectors_commit(s->vectors, from, to);
	else
		a2m_pg_vectors_rollback(s->vectors);
	s->in_tx = 0;
	s->main.in_tx = 0;
	s->tx_failed = 0;
	s->wrote = 0;
	s->logged = 0;
	s->relaxed = 0;
}

void a2m_pg_rollback(a2m_store *base)
{
	pgstore *s = (pgstore *)base;
	if (!s->in_tx)
		return;
	quiet_rollback(s);
	tx_over(s, 0);
}

/* The assignments of the commit's UPDATE of a2m_state that store the fold's state, if it moved. */
static void fold_sql(const pg_fold *f, a2m_buf *sql)
{
	if (!f->dirty)
		return;
	a2m_buf_printf(sql, ", batch_last = %" PRId64 ", fold_base = %" PRId64 ","
		       " fold_horizon = %" PRId64 ", fold_budget = %" PRId64 ", fold_cursor = ",
		       f->last, f->base, f->horizon, f->budget);
	if (!f->has_cursor) {
		a2m_buf_puts(sql, "NULL");
		return;
	}
	a2m_buf_puts(sql, "'\\x");
	for (size_t i = 0; i < f->cursor_len; i++)
		a2m_buf_printf(sql, "%02x", f->cursor[i]);
	a2m_buf_puts(sql, "'::bytea");
}

int a2m_pg_commit(a2m_store *base)
{
	pgstore *s = (pgstore *)base;
	int rc;
	if (!s->in_tx)
		return a2m_store_fail(base, "commit: no transaction is open");
	if (s->tx_failed) {
		char keep[sizeof s->base.errmsg];
		memcpy(keep, s->base.errmsg, sizeof keep);
		a2m_pg_rollback(base);
		memcpy(s->base.errmsg, keep, sizeof keep);
		return A2M_INTERNAL_ERROR;
	}
	if ((rc = a2m_pg_held_flush(s)) || (rc = a2m_pg_index_flush(s)) ||
	    (rc = a2m_pg_index_fold(s))) {
		a2m_pg_rollback(base);
		return rc;
	}
	if (!s->wrote) {
		/* Events alone move no version, but the other servers must hear of them. */
		char sql[160];
		if (s->logged)
			snprintf(sql, sizeof sql, "NOTIFY %s, '%s'; COMMIT", s->channel, s->origin);
		rc = a2m_pg_exec(s, &s->main, s->logged ? sql : "COMMIT", "commit", NULL);
		if (rc && s->in_tx) {
			a2m_pg_rollback(base);
			return rc;
		}
		tx_over(s, rc == 0);
		return rc;
	}
	a2m_index_stats d;
	a2m_pg_index_pending(s, &d);
	a2m_buf sql = {0};
	a2m_buf_printf(&sql,
		       "UPDATE a2m_state SET version = version + 1, seq = greatest(seq, %" PRId64 "),"
		       " docs = docs + %" PRId64 ", total_len = total_len + %" PRId64 ","
		       " unindexed = unindexed + %" PRId64,
		       s->seq_next - 1, d.docs, d.total_len, d.unindexed);
	a2m_pg_index_stamp_sql(s, &sql);
	fold_sql(&s->fold, &sql);
	/* Under the write lock, from what begin read: never lowers it. */
	if (s->tx_raised) {
		char v[40];
		if (isinf(s->tx_salience))
			snprintf(v, sizeof v, "'Infinity'");
		else
			snprintf(v, sizeof v, "%.17g", s->tx_salience);
		a2m_buf_printf(&sql, ", salience_max = greatest(salience_max, %s::float8)", v);
	}
	a2m_buf_printf(&sql, "; NOTIFY %s, '%s'; COMMIT", s->channel, s->origin);
	if (sql.failed) {
		a2m_buf_free(&sql);
		a2m_store_fail(base, "commit: out of memory");
		a2m_pg_rollback(base);
		return A2M_INTERNAL_ERROR;
	}
	rc = a2m_pg_exec(s, &s->main, a2m_buf_str(&sql), "commit", NULL);
	a2m_buf_free(&sql);
	if (rc) {
		/* An aborted transaction still needs its ROLLBACK; a lost one is gone. */
		a2m_pg_rollback(base);
		return rc;
	}
	a2m_pg_saw_version(s, s->tx_version + 1);
	tx_over(s, 1);
	return 0;
}

int a2m_pg_autocommit_begin(pgstore *s, int *own)
{
	*own = 0;
	if (s->in_tx) {
		if (s->tx_failed)
			return A2M_INTERNAL_ERROR;
		return 0;
	}
	/* Like begin: from the newest state, the thread's bracket ended. */
	a2m_pg_read_end(&s->base);
	int rc = open_tx(s, 0);
	if (rc == 0)
		*own = 1;
	return rc;
}

int a2m_pg_autocommit_end(pgstore *s, int own, int rc)
{
	if (rc && s->in_tx)
		a2m_pg_tx_fail(s);
	if (!own)
		return rc;
	if (rc) {
		char keep[sizeof s->base.errmsg];
		memcpy(keep, s->base.errmsg, sizeof keep);
		a2m_pg_rollback(&s->base);
		memcpy(s->base.errmsg, keep, sizeof keep);
		return rc;
	}
	return a2m_pg_commit(&s->base);
}

/* ---- store-level settings ---------------------------------------------------- */

int a2m_pg_meta_get(a2m_store *base, const char *name, char **value)
{
	pgstore *s = (pgstore *)base;
	pgconn *c = a2m_pg_conn(s);
	pgparams p;
	PGresult *r;
	int rc;
	*value = NULL;
	if (!name) {
		a2m_store_fail(base, "meta_get: no name");
		return A2M_INVALID_PARAMS;
	}
	if (c == &s->main && !s->in_tx && (rc = a2m_pg_ready(s, c)))
		return rc;
	a2m_pg_params_init(&p);
	a2m_pg_param_text(&p, name);
	if ((rc = a2m_pg_run(s, c, PG_META_GET, &p, "meta_get", &r))) {
		if (c == &s->main)
			a2m_pg_tx_fail(s);
		return rc;
	}
	int oom = 0;
	if (s->pq->ntuples(r) > 0)
		*value = a2m_pg_text(s, r, 0, 0, &oom);
	s->pq->clear(r);
	return oom ? a2m_store_fail(base, "meta_get: out of memory") : 0;
}

int a2m_pg_meta_set(a2m_store *base, const char *name, const char *value)
{
	pgstore *s = (pgstore *)base;
	pgparams p;
	PGresult *r;
	int own, rc;
	if (s->base.read_only) {
		a2m_store_fail(base, "meta_set: the store is read-only");
		return A2M_READ_ONLY;
	}
	if (!name) {
		a2m_store_fail(base, "meta_set: no name");
		return A2M_INVALID_PARAMS;
	}
	if ((rc = a2m_pg_autocommit_begin(s, &own)))
		return rc;
	a2m_pg_params_init(&p);
	a2m_pg_param_text(&p, name);
	if (value)
		a2m_pg_param_text(&p, value);
	rc = a2m_pg_run(s, &s->main, value ? PG_META_SET : PG_META_DEL, &p, "meta_set", &r);
	if (rc == 0) {
		s->pq->clear(r);
		s->wrote = 1;
	}
	return a2m_pg_autocommit_end(s, own, rc);
}
