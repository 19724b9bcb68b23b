/*
** sqlite_rows.c — the SQLite engine's statement helpers and a record's row:
** binding a record to INSERT/UPDATE and reading one back from a SELECT
** (what every write checks first is shared: a2m_store_check_record).
**
** Apart from sqlite.c because every other file of the engine (reads,
** writes, transactions) uses these, and none of them is about how a record
** maps onto the records table's columns (COLUMNS, sqlite_internal.h).
*/
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_internal.h"

/* Reports the connection's last error, prefixed with what was being done. */
int a2m_sqlite_db_fail(sqlstore *s, const char *op)
{
	if (sqlite3_extended_errcode(s->db) == SQLITE_CONSTRAINT_COMMITHOOK)
		return a2m_store_fail(&s->base, "%s: the transaction was rolled back after a "
				      "failure", op);
	return a2m_store_fail(&s->base, "%s: %s", op, sqlite3_errmsg(s->db));
}

/*
** Readies a cached statement for its next use. Clearing the bindings matters:
** values are bound SQLITE_STATIC (no copy of multi-MB content), so they must
** not stay attached to the statement once the caller's record is gone.
*/
void a2m_sqlite_done(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

int a2m_sqlite_bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (!v)
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_text64(st, i, v, strlen(v), SQLITE_STATIC, SQLITE_UTF8);
}

/* Binds ?at+1 = id and ?at+2..?at+20 = the other fields (SQL_UPDATE, held rows). */
int a2m_sqlite_bind_record(sqlite3_stmt *st, int at, const a2m_record *rec)
{
	int rc = SQLITE_OK;
#define B(call) do { if (rc == SQLITE_OK) rc = (call); } while (0)
	B(a2m_sqlite_bind_text(st, at + 1, rec->id));
	B(a2m_sqlite_bind_text(st, at + 2, rec->content));
	B(sqlite3_bind_int64(st, at + 3, rec->created_at));
	B(a2m_sqlite_bind_text(st, at + 4, rec->role));
	B(a2m_sqlite_bind_text(st, at + 5, rec->metadata));
	B(a2m_sqlite_bind_text(st, at + 6, rec->group));
	B(a2m_sqlite_bind_text(st, at + 7, rec->tier));
	B(sqlite3_bind_double(st, at + 8, rec->salience));
	B(sqlite3_bind_int64(st, at + 9, rec->accessed_at));
	B(sqlite3_bind_int64(st, at + 10, rec->access_count));
	B(a2m_sqlite_bind_text(st, at + 11, rec->owner));
	B(a2m_sqlite_bind_text(st, at + 12, rec->session));
	B(a2m_sqlite_bind_text(st, at + 13, rec->key));
	B(sqlite3_bind_int64(st, at + 14, rec->revision));
	/* The doubles as they lie in memory: native byte order, dims = bytes / 8. */
	if (rec->embedding && rec->dims)
		B(sqlite3_bind_blob64(st, at + 15, rec->embedding,
				      (sqlite3_uint64)rec->dims * sizeof(double),
				      SQLITE_STATIC));
	else
		B(sqlite3_bind_null(st, at + 15));
	B(a2m_sqlite_bind_text(st, at + 16, rec->uri));
	B(a2m_sqlite_bind_text(st, at + 17, rec->media_type));
	if (rec->gen_embedding && rec->gen_dims)
		B(sqlite3_bind_blob64(st, at + 18, rec->gen_embedding,
				      (sqlite3_uint64)rec->gen_dims * sizeof(float),
				      SQLITE_STATIC));
	else
		B(sqlite3_bind_null(st, at + 18));
	/* The extensions' columns are NULL when unused: their partial indexes
	** then hold no entry for the record (schema step 9). */
	if (rec->expires_at)
		B(sqlite3_bind_int64(st, at + 19, rec->expires_at));
	else
		B(sqlite3_bind_null(st, at + 19));
	if (rec->fingerprint)
		B(sqlite3_bind_int64(st, at + 20, (sqlite3_int64)rec->fingerprint));
	else
		B(sqlite3_bind_null(st, at + 20));
#undef B
	return rc;
}

/* Copies text column col into *out (NULL for SQL NULL). */
int a2m_sqlite_column_text(sqlstore *s, sqlite3_stmt *st, int col, char **out)
{
	*out = NULL;
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return 0;
	const unsigned char *t = sqlite3_column_text(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col);
	if (!t)
		return a2m_store_fail(&s->base, "read: out of memory");
	*out = malloc(n + 1);
	if (!*out)
		return a2m_store_fail(&s->base, "read: out of memory");
	memcpy(*out, t, n);
	(*out)[n] = '\0';
	return 0;
}

static int column_embedding(sqlstore *s, sqlite3_stmt *st, int col, a2m_record *rec)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return 0;
	const void *b = sqlite3_column_blob(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col);
	if (n == 0)
		return 0;
	if (!b)
		return a2m_store_fail(&s->base, "read: out of memory");
	if (n % sizeof(double) != 0)
		return a2m_store_fail(&s->base, "read: embedding of %zu bytes is not a "
				      "whole number of doubles", n);
	rec->embedding = malloc(n);
	if (!rec->embedding)
		return a2m_store_fail(&s->base, "read: out of memory");
	memcpy(rec->embedding, b, n);
	rec->dims = n / sizeof(double);
	return 0;
}

/* The server's own vector (column col): floats, native byte order. */
static int column_gen_embedding(sqlstore *s, sqlite3_stmt *st, int col, a2m_record *rec)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return 0;
	const void *b = sqlite3_column_blob(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col);
	if (n == 0 || n % sizeof(float) != 0)
		return 0; /* derived data: an odd blob is simply no vector */
	if (!b)
		return a2m_store_fail(&s->base, "read: out of memory");
	rec->gen_embedding = malloc(n);
	if (!rec->gen_embedding)
		return a2m_store_fail(&s->base, "read: out of memory");
	memcpy(rec->gen_embedding, b, n);
	rec->gen_dims = n / sizeof(float);
	return 0;
}

/* Fills the zeroed rec from the current row (COLUMNS order). Clears it on failure. */
int a2m_sqlite_read_row(sqlstore *s, sqlite3_stmt *st, a2m_record *rec)
{
	rec->seq = sqlite3_column_int64(st, 0);
	rec->created_at = sqlite3_column_int64(st, 3);
	rec->salience = sqlite3_column_double(st, 8);
	rec->accessed_at = sqlite3_column_int64(st, 9);
	rec->access_count = sqlite3_column_int64(st, 10);
	rec->revision = sqlite3_column_int64(st, 14);
	rec->expires_at = sqlite3_column_int64(st, 19);
	rec->fingerprint = (uint64_t)sqlite3_column_int64(st, 20);
	if (a2m_sqlite_column_text(s, st, 1, &rec->id) ||
	    a2m_sqlite_column_text(s, st, 2, &rec->content) ||
	    a2m_sqlite_column_text(s, st, 4, &rec->role) ||
	    a2m_sqlite_column_text(s, st, 5, &rec->metadata) ||
	    a2m_sqlite_column_text(s, st, 6, &rec->group) ||
	    a2m_sqlite_column_text(s, st, 7, &rec->tier) ||
	    a2m_sqlite_column_text(s, st, 11, &rec->owner) ||
	    a2m_sqlite_column_text(s, st, 12, &rec->session) ||
	    a2m_sqlite_column_text(s, st, 13, &rec->key) || column_embedding(s, st, 15, rec) ||
	    a2m_sqlite_column_text(s, st, 16, &rec->uri) ||
	    a2m_sqlite_column_text(s, st, 17, &rec->media_type) ||
	    column_gen_embedding(s, st, 18, rec)) {
		a2m_record_clear(rec);
		return A2M_INTERNAL_ERROR;
	}
	return 0;
}

/* Steps a bound single-row lookup and hands out the row, or NULL for none. */
int a2m_sqlite_fetch_one(sqlstore *s, sqlite3_stmt *st, const char *op,
			 a2m_record **out)
{
	a2m_record *rec = NULL;
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		rc = 0;
		goto out;
	}
	if (rc != SQLITE_ROW) {
		rc = a2m_sqlite_db_fail(s, op);
		goto out;
	}
	rec = a2m_record_new();
	if (!rec) {
		rc = a2m_store_fail(&s->base, "%s: out of memory", op);
		goto out;
	}
	rc = a2m_sqlite_read_row(s, st, rec);
	if (rc) {
		free(rec);
		rec = NULL;
	}
out:
	a2m_sqlite_done(st);
	*out = rec;
	return rc;
}
