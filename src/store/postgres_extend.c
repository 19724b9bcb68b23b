/*
** postgres_extend.c — the PostgreSQL engine's ops for the extensions
** (docs/PROTOCOL.md, Extensions; store.h): a keyed record's earlier
** revisions (a2m_history), the records that expire (a2m_records_expiry)
** and the records of one fingerprint (a2m_records_fp), all made by schema
** step 4 (postgres_schema.c). The columns expires_at and fp travel with
** every row (PG_COLUMNS); the history leaves with its record by trigger.
**
** Apart from postgres.c because none of this touches the writes' own
** machinery (held rows, postings, vectors): each op is one statement,
** prepared by name on the connection that runs it. Reads take the
** thread's connection as every read does (a2m_pg_read_conn): inside a
** write transaction that is the main connection, which holds the
** deployment's write lock, so what they see is what no other server can
** change before the commit. That is what makes the expiry sweep of several
** servers on one deployment remove each record once: the stack scans for
** expired records after its begin() took the lock, so a second server's
** sweep runs after the first one committed and finds them gone, and
** remove() counts (and the stack reports in its one event) only what it
** did delete. It is also why a key written at once through two servers
** keeps both revisions: each write reads the record it replaces under the
** lock, after the other's commit.
*/
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"

/*
** One round trip: the revision in, and all but the newest $9 revisions
** older than it out. The DELETE sees the table as it was before the
** INSERT (one snapshot), which is why it counts the older ones only: the
** new revision is the newest (revisions only grow), so with it that keeps
** $9 + 1.
*/
#define SQL_HISTORY_PUT \
	"WITH ins AS (INSERT INTO a2m_history (id, revision, content, role, metadata, owner," \
	" created_at, superseded_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)" \
	" ON CONFLICT (id, revision) DO UPDATE SET content = excluded.content," \
	" role = excluded.role, metadata = excluded.metadata, owner = excluded.owner," \
	" created_at = excluded.created_at, superseded_at = excluded.superseded_at)" \
	" DELETE FROM a2m_history WHERE id = $1 AND revision < $2 AND revision <=" \
	" (SELECT revision FROM a2m_history WHERE id = $1 AND revision < $2" \
	"  ORDER BY revision DESC LIMIT 1 OFFSET $9)"
#define SQL_HISTORY_GET \
	"SELECT revision, content, role, metadata, owner, created_at, superseded_at" \
	" FROM a2m_history WHERE id = $1 ORDER BY revision DESC LIMIT $2"
/* Spelled with the partial indexes' WHERE, so the planner may use them. */
#define SQL_NEXT_EXPIRY \
	"SELECT min(expires_at) FROM a2m_records WHERE expires_at IS NOT NULL"
#define EXPIRED_PAGE 256   /* the LIMIT below */
#define SQL_EXPIRED \
	"SELECT " PG_COLUMNS " FROM a2m_records WHERE expires_at IS NOT NULL" \
	" AND expires_at <= $1 AND (expires_at, seq) > ($2, $3)" \
	" ORDER BY expires_at, seq LIMIT 256"
#define SQL_BY_FP \
	"SELECT " PG_COLUMNS " FROM a2m_records WHERE fp IS NOT NULL AND fp = $1"

/* A text cell of r as libpq holds it (NUL-terminated), NULL for SQL NULL. */
static const char *cell(pgstore *s, const PGresult *r, int row, int col)
{
	return s->pq->getisnull(r, row, col) ? NULL : s->pq->getvalue(r, row, col);
}

/* ---- revision history --------------------------------------------------- */

int a2m_pg_history_put(a2m_store *base, const a2m_revision *rev, size_t keep)
{
	pgstore *s = (pgstore *)base;
	pgparams p;
	PGresult *r;
	int own, rc;
	if (s->base.read_only) {
		a2m_store_fail(base, "history_put: the store is read-only");
		return A2M_READ_ONLY;
	}
	if (!rev || !rev->id || !rev->content)
		return a2m_store_fail(base, "history_put: a revision needs an id and content");
	if ((rc = a2m_pg_autocommit_begin(s, &own)))
		return rc;
	a2m_pg_params_init(&p);
	a2m_pg_param_text(&p, rev->id);
	a2m_pg_param_int8(&p, rev->revision);
	a2m_pg_param_text(&p, rev->content);
	a2m_pg_param_text(&p, rev->role);
	a2m_pg_param_text(&p, rev->metadata);
	a2m_pg_param_text(&p, rev->owner);
	a2m_pg_param_int8(&p, rev->created_at);
	a2m_pg_param_int8(&p, rev->superseded_at);
	a2m_pg_param_int8(&p, keep > 1 ? (int64_t)keep - 1 : 0);
	if (!(rc = a2m_pg_held_flush(s)) &&
	    !(rc = a2m_pg_run_named(s, &s->main, "a2m_history_put", SQL_HISTORY_PUT, &p,
				    "history_put", &r))) {
		s->pq->clear(r);
		s->wrote = 1;
	}
	return a2m_pg_autocommit_end(s, own, rc);
}

int a2m_pg_history_visit(a2m_store *base, const char *id, size_t max,
			 a2m_revision_visit visit, void *ctx)
{
	pgstore *s = (pgstore *)base;
	pgconn *c;
	pgparams p;
	PGresult *r;
	int rc;
	if (!id)
		return 0;
	if ((rc = a2m_pg_read_conn(s, &c)))
		return a2m_pg_read_failed(s, c, rc);
	a2m_pg_params_init(&p);
	a2m_pg_param_text(&p, id);
	if (max)
		a2m_pg_param_int8(&p, (int64_t)max);
	else
		a2m_pg_param_text(&p, NULL);  /* LIMIT NULL: every one */
	if ((rc = a2m_pg_run_named(s, c, "a2m_history_get", SQL_HISTORY_GET, &p, "history", &r)))
		return a2m_pg_read_failed(s, c, rc);
	int rows = s->pq->ntuples(r);
	for (int i = 0; i < rows; i++) {
		a2m_revision rev = {
			.id = id,
			.revision = a2m_pg_int8(s, r, i, 0),
			.content = cell(s, r, i, 1),
			.role = cell(s, r, i, 2),
			.metadata = cell(s, r, i, 3),
			.owner = cell(s, r, i, 4),
			.created_at = a2m_pg_int8(s, r, i, 5),
			.superseded_at = a2m_pg_int8(s, r, i, 6),
		};
		int v = visit(&rev, ctx);
		if (v != 0) {
			rc = v < 0 ? v : 0;
			break;
		}
	}
	s->pq->clear(r);
	return rc;
}

/* ---- expiry and fingerprints --------------------------------------------- */

int a2m_pg_next_expiry(a2m_store *base, int64_t *at)
{
	pgstore *s = (pgstore *)base;
	pgconn *c;
	PGresult *r;
	int rc;
	*at = 0;
	if ((rc = a2m_pg_read_conn(s, &c)) ||
	    (rc = a2m_pg_run_named(s, c, "a2m_next_expiry", SQL_NEXT_EXPIRY, NULL, "next_expiry",
				   &r)))
		return a2m_pg_read_failed(s, c, rc);
	if (s->pq->ntuples(r) > 0)
		*at = a2m_pg_int8(s, r, 0, 0);   /* min() of none is NULL: 0 */
	s->pq->clear(r);
	return 0;
}

/*
** Visits the rows of r in order; *stop set when a visit asked to stop,
** *last the last row read (NULL: none). Returns 0 or the failure (a read,
** or a visit's negative code).
*/
static int visit_rows(pgstore *s, const PGresult *r, a2m_record_visit visit, void *ctx,
		      int *stop, a2m_record *last)
{
	int rows = s->pq->ntuples(r), rc = 0;
	*stop = 0;
	for (int i = 0; i < rows && !rc && !*stop; i++) {
		a2m_record rec;
		memset(&rec, 0, sizeof rec);
		if ((rc = a2m_pg_read_row(s, r, i, &rec)))
			break;
		int v = visit(&rec, ctx);
		if (v < 0)
			rc = v;
		else if (v > 0)
			*stop = 1;
		if (last) {
			last->expires_at = rec.expires_at;
			last->seq = rec.seq;
		}
		a2m_record_clear(&rec);
	}
	return rc;
}

int a2m_pg_scan_expired(a2m_store *base, int64_t by, a2m_record_visit visit, void *ctx)
{
	pgstore *s = (pgstore *)base;
	pgconn *c;
	a2m_record last;
	int rc, stop = 0;
	memset(&last, 0, sizeof last);
	last.expires_at = INT64_MIN;
	if ((rc = a2m_pg_read_conn(s, &c)))
		return a2m_pg_read_failed(s, c, rc);
	/* Pages in (expires_at, seq) order, each continuing after the last. */
	for (;;) {
		pgparams p;
		PGresult *r;
		a2m_pg_params_init(&p);
		a2m_pg_param_int8(&p, by);
		a2m_pg_param_int8(&p, last.expires_at);
		a2m_pg_param_int8(&p, last.seq);
		if ((rc = a2m_pg_run_named(s, c, "a2m_expired", SQL_EXPIRED, &p, "scan_expired", &r)))
			return a2m_pg_read_failed(s, c, rc);
		int rows = s->pq->ntuples(r);
		rc = visit_rows(s, r, visit, ctx, &stop, &last);
		s->pq->clear(r);
		if (rc || stop || rows < EXPIRED_PAGE)
			return rc;
	}
}

int a2m_pg_by_fingerprint(a2m_store *base, uint64_t fp, a2m_record_visit visit, void *ctx)
{
	pgstore *s = (pgstore *)base;
	pgconn *c;
	pgparams p;
	PGresult *r;
	int rc, stop;
	if (!fp)
		return 0;
	if ((rc = a2m_pg_read_conn(s, &c)))
		return a2m_pg_read_failed(s, c, rc);
	a2m_pg_params_init(&p);
	a2m_pg_param_int8(&p, (int64_t)fp);
	if ((rc = a2m_pg_run_named(s, c, "a2m_by_fp", SQL_BY_FP, &p, "by_fingerprint", &r)))
		return a2m_pg_read_failed(s, c, rc);
	rc = visit_rows(s, r, visit, ctx, &stop, NULL);
	s->pq->clear(r);
	return rc;
}
