/*
** sqlite_extend.c — the SQLite engine's ops for the extensions
** (docs/PROTOCOL.md, Extensions; store.h): a keyed record's earlier
** revisions (a2m_history), the records that expire (records_expiry) and
** the records of one fingerprint (records_fp), all made by schema step 9
** (sqlite_schema.c).
**
** Apart from sqlite.c because none of this touches the record writes'
** machinery (held rows, postings, counts, the mirror): each op is one
** small statement, prepared at its first use on the connection that runs
** it. Reads go through the thread's read bracket as the other reads do
** (sqlite_pool.c); the one write, history_put, writes the held inserts
** first, as every op but insert does.
*/
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_internal.h"

#define SQL_HISTORY_PUT \
	"INSERT OR REPLACE INTO a2m_history(id, revision, content, role, metadata, owner," \
	" created_at, superseded_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
/* Keeps the newest ?2 revisions of ?1: a range of the primary key. */
#define SQL_HISTORY_PRUNE \
	"DELETE FROM a2m_history WHERE id = ?1 AND revision <=" \
	" (SELECT revision FROM a2m_history WHERE id = ?1 ORDER BY revision DESC" \
	"  LIMIT 1 OFFSET ?2)"
#define SQL_HISTORY_GET \
	"SELECT revision, content, role, metadata, owner, created_at, superseded_at" \
	" FROM a2m_history WHERE id = ?1 ORDER BY revision DESC LIMIT ?2"
/* Written so that the partial indexes serve them (their WHERE is implied). */
#define SQL_NEXT_EXPIRY \
	"SELECT min(expires_at) FROM records WHERE expires_at IS NOT NULL"
#define SQL_EXPIRED \
	"SELECT " COLUMNS " FROM records WHERE expires_at IS NOT NULL AND expires_at <= ?1" \
	" ORDER BY expires_at, seq"
#define SQL_BY_FP "SELECT " COLUMNS " FROM records WHERE fp = ?1"

/* *st prepared on c from sql, at its first use. */
static int ready(sqlstore *c, sqlite3_stmt **st, const char *sql, const char *op)
{
	if (*st)
		return 0;
	if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
		return a2m_sqlite_db_fail(c, op);
	return 0;
}

void a2m_sqlite_extend_close(sqlstore *s)
{
	sqlite3_finalize(s->history_put);
	sqlite3_finalize(s->history_prune);
	sqlite3_finalize(s->history_get);
	sqlite3_finalize(s->next_expiry);
	sqlite3_finalize(s->expired);
	sqlite3_finalize(s->by_fp);
}

/* ---- revision history --------------------------------------------------- */

int a2m_sqlite_history_put(a2m_store *base, const a2m_revision *rev, size_t keep)
{
	sqlstore *s = (sqlstore *)base;
	int rc = a2m_sqlite_refuse_read_only(s, "history_put");
	if (!rc && (!rev || !rev->id || !rev->content))
		rc = a2m_store_fail(base, "history_put: a revision needs an id and content");
	if (!rc)
		rc = a2m_sqlite_held_flush(s);
	if (!rc)
		rc = ready(s, &s->history_put, SQL_HISTORY_PUT, "history_put");
	if (!rc)
		rc = ready(s, &s->history_prune, SQL_HISTORY_PRUNE, "history_put");
	if (rc)
		return rc;
	sqlite3_stmt *st = s->history_put;
	if (a2m_sqlite_bind_text(st, 1, rev->id) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, rev->revision) != SQLITE_OK ||
	    a2m_sqlite_bind_text(st, 3, rev->content) != SQLITE_OK ||
	    a2m_sqlite_bind_text(st, 4, rev->role) != SQLITE_OK ||
	    a2m_sqlite_bind_text(st, 5, rev->metadata) != SQLITE_OK ||
	    a2m_sqlite_bind_text(st, 6, rev->owner) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 7, rev->created_at) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 8, rev->superseded_at) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		rc = a2m_sqlite_db_fail(s, "history_put");
	a2m_sqlite_done(st);
	if (rc)
		return rc;
	st = s->history_prune;
	if (a2m_sqlite_bind_text(st, 1, rev->id) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, (sqlite3_int64)(keep ? keep : 1)) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		rc = a2m_sqlite_db_fail(s, "history_put");
	a2m_sqlite_done(st);
	return rc;
}

int a2m_sqlite_history_visit(a2m_store *base, const char *id, size_t max,
			     a2m_revision_visit visit, void *ctx)
{
	int rc;
	sqlstore *c = a2m_sqlite_read_conn(base, &rc);
	if (!rc)
		rc = ready(c, &c->history_get, SQL_HISTORY_GET, "history");
	if (rc || !id)
		return a2m_sqlite_relay(base, c, rc);
	sqlite3_stmt *st = c->history_get;
	if (a2m_sqlite_bind_text(st, 1, id) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, max ? (sqlite3_int64)max : -1) != SQLITE_OK) {
		rc = a2m_sqlite_db_fail(c, "history");
		a2m_sqlite_done(st);
		return a2m_sqlite_relay(base, c, rc);
	}
	for (;;) {
		int step = sqlite3_step(st);
		if (step == SQLITE_DONE)
			break;
		if (step != SQLITE_ROW) {
			rc = a2m_sqlite_db_fail(c, "history");
			break;
		}
		a2m_revision r = {
			.id = id,
			.revision = sqlite3_column_int64(st, 0),
			.content = (const char *)sqlite3_column_text(st, 1),
			.role = (const char *)sqlite3_column_text(st, 2),
			.metadata = (const char *)sqlite3_column_text(st, 3),
			.owner = (const char *)sqlite3_column_text(st, 4),
			.created_at = sqlite3_column_int64(st, 5),
			.superseded_at = sqlite3_column_int64(st, 6),
		};
		if (!r.content) {
			rc = a2m_store_fail(&c->base, "history: out of memory");
			break;
		}
		int v = visit(&r, ctx);
		if (v != 0) {
			rc = v < 0 ? v : 0;
			break;
		}
	}
	a2m_sqlite_done(st);
	return a2m_sqlite_relay(base, c, rc);
}

/* ---- expiry and fingerprints --------------------------------------------- */

int a2m_sqlite_next_expiry(a2m_store *base, int64_t *at)
{
	int rc;
	sqlstore *c = a2m_sqlite_read_conn(base, &rc);
	*at = 0;
	if (!rc)
		rc = ready(c, &c->next_expiry, SQL_NEXT_EXPIRY, "next_expiry");
	if (!rc) {
		if (sqlite3_step(c->next_expiry) == SQLITE_ROW)
			*at = sqlite3_column_int64(c->next_expiry, 0);
		else
			rc = a2m_sqlite_db_fail(c, "next_expiry");
		a2m_sqlite_done(c->next_expiry);
	}
	return a2m_sqlite_relay(base, c, rc);
}

/* Steps the bound st to its end, visiting each record; resets st. */
static int visit_all(sqlstore *c, sqlite3_stmt *st, const char *op, a2m_record_visit visit,
		     void *ctx)
{
	int rc = a2m_sqlite_visit_rows(c, st, op, visit, ctx);
	a2m_sqlite_done(st);
	return rc;
}

int a2m_sqlite_scan_expired(a2m_store *base, int64_t by, a2m_record_visit visit, void *ctx)
{
	int rc;
	sqlstore *c = a2m_sqlite_read_conn(base, &rc);
	if (!rc)
		rc = ready(c, &c->expired, SQL_EXPIRED, "scan_expired");
	if (!rc && sqlite3_bind_int64(c->expired, 1, by) != SQLITE_OK) {
		rc = a2m_sqlite_db_fail(c, "scan_expired");
		a2m_sqlite_done(c->expired);
	}
	if (!rc)
		rc = visit_all(c, c->expired, "scan_expired", visit, ctx);
	return a2m_sqlite_relay(base, c, rc);
}

int a2m_sqlite_by_fingerprint(a2m_store *base, uint64_t fp, a2m_record_visit visit,
			      void *ctx)
{
	int rc;
	if (!fp)
		return 0;
	sqlstore *c = a2m_sqlite_read_conn(base, &rc);
	if (!rc)
		rc = ready(c, &c->by_fp, SQL_BY_FP, "by_fingerprint");
	if (!rc && sqlite3_bind_int64(c->by_fp, 1, (sqlite3_int64)fp) != SQLITE_OK) {
		rc = a2m_sqlite_db_fail(c, "by_fingerprint");
		a2m_sqlite_done(c->by_fp);
	}
	if (!rc)
		rc = visit_all(c, c->by_fp, "by_fingerprint", visit, ctx);
	return a2m_sqlite_relay(base, c, rc);
}
