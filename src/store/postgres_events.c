/*
** postgres_events.c — the event log of spec §4.12 as a table every server
** of the deployment appends to and reads from (store.h, events_append and
** events_read; events.c builds the log's rules on them).
**
** An append is one statement (PG_EVENTS_ADD: insert after the head, move
** the head, trim) under the deployment's write lock (postgres_txn.c), so
** events get their seqs in the order their transactions commit: a reader
** that has seen seq n has seen every event before it, whichever server
** appended it, and a cursor naming n means the same position on every
** server and after any restart. A write's events are appended inside the
** write's own transaction, just before its commit (the stack's
** a2m_stack_log_in_transaction): the write and its events are one commit,
** one WAL flush, kept or lost together by a crash, and the commit's NOTIFY
** on the deployment's channel is how the other servers' listeners
** (postgres_listen.c) learn that there is something to push. Outside a
** transaction an append is one of its own (BEGIN, the lock, the append,
** NOTIFY, COMMIT in one round trip). Retention is by count, as in the
** memory log: each append drops the events beyond the newest `retain`.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"

int a2m_pg_events_append(a2m_store *base, const a2m_event_row *rows, size_t n,
			 int64_t retain, uint64_t *first)
{
	pgstore *s = (pgstore *)base;
	pgarray at, body, owner, shared, audience;
	pgparams p;
	PGresult *r;
	int rc;
	*first = 0;
	if (s->base.read_only) {
		a2m_store_fail(base, "events: the store is read-only");
		return A2M_READ_ONLY;
	}
	if (n == 0)
		return 0;
	a2m_pg_array_begin(&at, PG_OID_INT8);
	a2m_pg_array_begin(&body, PG_OID_TEXT);
	a2m_pg_array_begin(&owner, PG_OID_TEXT);
	a2m_pg_array_begin(&shared, PG_OID_BOOL);
	a2m_pg_array_begin(&audience, PG_OID_TEXT);
	for (size_t i = 0; i < n; i++) {
		a2m_pg_array_int8(&at, rows[i].at);
		a2m_pg_array_add(&body, rows[i].body, strlen(rows[i].body));
		if (rows[i].owner)
			a2m_pg_array_add(&owner, rows[i].owner, strlen(rows[i].owner));
		else
			a2m_pg_array_null(&owner);
		a2m_pg_array_bool(&shared, rows[i].shared);
		if (rows[i].audience)
			a2m_pg_array_add(&audience, rows[i].audience, strlen(rows[i].audience));
		else
			a2m_pg_array_null(&audience);
	}
	int bad = a2m_pg_array_end(&at) | a2m_pg_array_end(&body) | a2m_pg_array_end(&owner) |
		  a2m_pg_array_end(&shared) | a2m_pg_array_end(&audience);
	if (bad) {
		rc = a2m_store_fail(base, "events: out of memory");
		goto out;
	}
	a2m_pg_params_init(&p);
	a2m_pg_param_bytea(&p, at.buf, at.len);
	a2m_pg_param_bytea(&p, body.buf, body.len);
	a2m_pg_param_bytea(&p, owner.buf, owner.len);
	a2m_pg_param_bytea(&p, shared.buf, shared.len);
	a2m_pg_param_bytea(&p, audience.buf, audience.len);
	a2m_pg_param_int8(&p, retain > 0 ? retain : INT64_MAX / 2);
	a2m_pg_param_int8(&p, (int64_t)n);
	if (s->in_tx) {
		/*
		** Part of the write they describe: under its lock already, and its
		** commit sends the NOTIFY and makes both durable at once.
		*/
		if (s->tx_failed) {
			rc = A2M_INTERNAL_ERROR;
			goto out;
		}
		if ((rc = a2m_pg_run(s, &s->main, PG_EVENTS_ADD, &p, "events", &r))) {
			a2m_pg_tx_fail(s);
			goto out;
		}
		*first = s->pq->ntuples(r) > 0 ? (uint64_t)a2m_pg_int8(s, r, 0, 0) : 0;
		s->pq->clear(r);
		s->logged = 1;
		goto out;
	}
	/*
	** One round trip: BEGIN, the write lock (seqs in the order the appends
	** commit), the append, NOTIFY for the other servers' listeners, COMMIT.
	*/
	char lock[96], notify[128];
	snprintf(lock, sizeof lock, "SELECT pg_advisory_xact_lock(%d, %d)", (int)s->lock_class,
		 (int)s->lock_write);
	snprintf(notify, sizeof notify, "NOTIFY %s, '%s'", s->channel, s->origin);
	pgstep steps[] = {
		{.st = PG_NSTMTS, .sql = "BEGIN"},
		{.st = PG_NSTMTS, .sql = lock},
		{.st = PG_EVENTS_ADD, .p = &p, .keep = 1},
		{.st = PG_NSTMTS, .sql = notify},
		{.st = PG_NSTMTS, .sql = "COMMIT"},
	};
	if ((rc = a2m_pg_ready(s, &s->main)))
		goto out;
	if ((rc = a2m_pg_pipeline(s, &s->main, steps, sizeof steps / sizeof *steps, "events"))) {
		/* A transaction a failure left open ends here. */
		if (!a2m_pg_lost(s, &s->main)) {
			char keep[sizeof s->base.errmsg];
			memcpy(keep, s->base.errmsg, sizeof keep);
			a2m_pg_exec(s, &s->main, "ROLLBACK", "events", NULL);
			memcpy(s->base.errmsg, keep, sizeof keep);
		}
		goto out;
	}
	r = steps[2].res;
	*first = r && s->pq->ntuples(r) > 0 ? (uint64_t)a2m_pg_int8(s, r, 0, 0) : 0;
	if (r)
		s->pq->clear(r);
out:
	a2m_pg_array_free(&at);
	a2m_pg_array_free(&body);
	a2m_pg_array_free(&owner);
	a2m_pg_array_free(&shared);
	a2m_pg_array_free(&audience);
	return rc;
}

/* Copies the cell into the arena at *used; its offset, or SIZE_MAX for NULL. */
static size_t keep(pgstore *s, const PGresult *r, int row, int col, char *arena, size_t *used)
{
	if (s->pq->getisnull(r, row, col))
		return SIZE_MAX;
	size_t len = (size_t)s->pq->getlength(r, row, col), at = *used;
	memcpy(arena + at, s->pq->getvalue(r, row, col), len);
	arena[at + len] = '\0';
	*used += len + 1;
	return at;
}

int a2m_pg_events_read(a2m_store *base, uint64_t after, size_t max, a2m_event_rows *out)
{
	pgstore *s = (pgstore *)base;
	pgconn *c = a2m_pg_conn(s);
	pgparams p;
	PGresult *r;
	int rc = 0;
	memset(out, 0, sizeof *out);
	if (c == &s->main && !s->in_tx && (rc = a2m_pg_ready(s, c)))
		return rc;
	if ((rc = a2m_pg_run(s, c, PG_EVENTS_BOUNDS, NULL, "events", &r)))
		return rc;
	if (s->pq->ntuples(r) != 1) {
		s->pq->clear(r);
		return a2m_store_fail(base, "events: the deployment has no state row");
	}
	out->head = (uint64_t)a2m_pg_int8(s, r, 0, 1);
	out->oldest = s->pq->getisnull(r, 0, 0) ? out->head + 1 : (uint64_t)a2m_pg_int8(s, r, 0, 0);
	snprintf(out->salt, sizeof out->salt, "%s", s->pq->getvalue(r, 0, 2));
	s->pq->clear(r);
	if (max == 0)
		return 0;
	a2m_pg_params_init(&p);
	a2m_pg_param_int8(&p, (int64_t)after);
	a2m_pg_param_int8(&p, max > INT64_MAX ? INT64_MAX : (int64_t)max);
	if ((rc = a2m_pg_run(s, c, PG_EVENTS_READ, &p, "events", &r)))
		return rc;
	int rows = s->pq->ntuples(r);
	size_t bytes = 1;
	for (int i = 0; i < rows; i++)
		for (int col = 2; col <= 5; col++)
			bytes += (size_t)s->pq->getlength(r, i, col) + 1;
	out->v = calloc((size_t)(rows ? rows : 1), sizeof *out->v);
	out->arena = malloc(bytes);
	size_t *offs = malloc((size_t)(rows ? rows : 1) * 3 * sizeof *offs);
	if (!out->v || !out->arena || !offs) {
		free(offs);
		s->pq->clear(r);
		a2m_event_rows_free(out);
		return a2m_store_fail(base, "events: out of memory");
	}
	size_t used = 0;
	for (int i = 0; i < rows; i++) {
		out->v[i].seq = (uint64_t)a2m_pg_int8(s, r, i, 0);
		out->v[i].at = a2m_pg_int8(s, r, i, 1);
		out->v[i].shared = s->pq->getlength(r, i, 4) == 1 && s->pq->getvalue(r, i, 4)[0];
		offs[3 * i] = keep(s, r, i, 2, out->arena, &used);
		offs[3 * i + 1] = keep(s, r, i, 3, out->arena, &used);
		offs[3 * i + 2] = keep(s, r, i, 5, out->arena, &used);
		if (out->v[i].seq > out->head)
			out->head = out->v[i].seq;
	}
	/* Pointers last: the arena no longer moves. */
	for (int i = 0; i < rows; i++) {
		out->v[i].body = offs[3 * i] == SIZE_MAX ? "" : out->arena + offs[3 * i];
		out->v[i].owner = offs[3 * i + 1] == SIZE_MAX ? NULL : out->arena + offs[3 * i + 1];
		out->v[i].audience = offs[3 * i + 2] == SIZE_MAX ? NULL
								: out->arena + offs[3 * i + 2];
	}
	out->n = (size_t)rows;
	free(offs);
	s->pq->clear(r);
	return 0;
}
