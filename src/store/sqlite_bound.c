/*
** sqlite_bound.c — the SQLite engine's bound on salience (store.h,
** salience_bound): a2m_bound's one row (schema step 13), which no record's
** salience exceeds. Text recall caps the blend with it and divides its
** walk's floor by it (stack/ranked.c): without it a recall walks as if a
** record could keep all of its relevance.
**
** The row is only ever raised, in the write transaction of the write that
** needs it raised (an insert, an update, a move), by an UPDATE that cannot
** lower it (`WHERE salience < ?1`): a remove or a rollback leaves it, too
** high being safe. Each connection keeps the value it last read, with the
** data version it read it at (SQLite's file control: it moves at every
** commit, this connection's too, so a commit of its own carries the value
** over to the version after it, as its other caches do): a write compares its salience
** with that only when the transaction began at the same version, else it
** reads the row again first, so a stale value never decides that no raise
** is needed; a read reads it again when the version moved. A write that
** raises nothing thus costs a comparison, and a recall a file control.
**
** A read-only open of a file below step 13 has no row: its answer is
** "unknown" (0), and recall walks as before.
*/
#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_bound.h"
#include "store/sqlite_internal.h"

#define SQL_BOUND_GET "SELECT salience FROM a2m_bound"
#define SQL_BOUND_RAISE "UPDATE a2m_bound SET salience = ?1 WHERE salience < ?1"

int a2m_sqlite_bound_open(sqlstore *s)
{
	s->bound_table = 0;
	s->bound_known = 0;
	if (sqlite3_prepare_v3(s->db, SQL_BOUND_GET, -1, SQLITE_PREPARE_PERSISTENT,
			       &s->bound_get, NULL) != SQLITE_OK) {
		/* A read-only open of a file below step 13 (READ_ONLY_SINCE). */
		if (s->base.read_only)
			return 0;
		return a2m_sqlite_db_fail(s, "bound");
	}
	if (!s->base.read_only && a2m_sqlite_prepare(s, &s->bound_raise, SQL_BOUND_RAISE))
		return A2M_INTERNAL_ERROR;
	s->bound_table = 1;
	return 0;
}

void a2m_sqlite_bound_free(sqlstore *s)
{
	sqlite3_finalize(s->bound_get);
	sqlite3_finalize(s->bound_raise);
	s->bound_get = s->bound_raise = NULL;
}

/* Reads the row into s->bound_row. Returns 0, or A2M_INTERNAL_ERROR. */
static int read_row(sqlstore *s)
{
	int step = sqlite3_step(s->bound_get);
	int rc = 0;
	if (step == SQLITE_ROW && sqlite3_column_type(s->bound_get, 0) != SQLITE_NULL)
		s->bound_row = sqlite3_column_double(s->bound_get, 0);
	else if (step == SQLITE_ROW || step == SQLITE_DONE)
		rc = a2m_store_fail(&s->base, "bound: a2m_bound has no row");
	else
		rc = a2m_sqlite_db_fail(s, "bound");
	sqlite3_reset(s->bound_get);
	return rc;
}

int a2m_sqlite_bound_raise(sqlstore *s, double salience)
{
	if (!s->bound_table)
		return 0;
	/* What this connection knows is the row only when no other commit
	** came between its read and this transaction's begin. */
	if (!s->bound_known || !s->txn_versioned || s->bound_version != (unsigned)s->txn_version) {
		s->bound_known = 0;
		int rc = read_row(s);
		if (rc)
			return rc;
		s->bound_known = s->txn_versioned;
		s->bound_version = (unsigned)s->txn_version;
	}
	if (!(salience > s->bound_row))  /* NaN raises nothing, as in memory */
		return 0;
	int rc = sqlite3_bind_double(s->bound_raise, 1, salience) != SQLITE_OK ||
		 sqlite3_step(s->bound_raise) != SQLITE_DONE
		 ? a2m_sqlite_db_fail(s, "bound") : 0;
	a2m_sqlite_done(s->bound_raise);
	if (rc)
		s->bound_known = 0;
	else
		s->bound_row = salience;  /* the row held less: it holds this now */
	return rc;
}

void a2m_sqlite_bound_forget(sqlstore *s)
{
	s->bound_known = 0;
}

void a2m_sqlite_bound_committed(sqlstore *s, int known, unsigned v)
{
	if (s->bound_known && known && s->txn_versioned &&
	    s->bound_version == (unsigned)s->txn_version)
		s->bound_version = v;
	else
		s->bound_known = 0;
}

int a2m_sqlite_salience_bound(a2m_store *base, double *max)
{
	sqlstore *c = a2m_sqlite_conn(base);
	unsigned v = 0;
	*max = 0;
	if (!c->bound_table)
		return 0;
	int versioned = a2m_sqlite_data_version(c->db, &v);
	if (!c->bound_known || !versioned || c->bound_version != v) {
		c->bound_known = 0;
		if (read_row(c))
			return 0;  /* cannot say: recall walks with no cap */
		c->bound_known = versioned;
		c->bound_version = v;
	}
	*max = c->bound_row;
	return 1;
}
