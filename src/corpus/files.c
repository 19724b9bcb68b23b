/*
** files.c — the corpus's table of files, in the index's SQLite file (see
** files.h).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "corpus/files.h"
#include "util/grow.h"

#define SQL_SCHEMA \
	"CREATE TABLE IF NOT EXISTS corpus_files(" \
	" path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL," \
	" hash TEXT NOT NULL, ids TEXT NOT NULL) WITHOUT ROWID;" \
	"CREATE TABLE IF NOT EXISTS corpus_meta(" \
	" name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"

/* Every row of a prefix: the path itself, then "prefix/..." ('0' follows '/'). */
#define SQL_LOAD \
	"SELECT path, size, mtime_ns, hash, ids FROM corpus_files" \
	" WHERE ?1 = '' OR path = ?1 OR (path > ?1 || '/' AND path < ?1 || '0')" \
	" ORDER BY path"

/* How long a write waits for the store's connection to let go. */
#define BUSY_TIMEOUT_MS 30000

struct a2m_corpus_table {
	sqlite3      *db;
	sqlite3_stmt *load, *put, *del;
	char          err[256];
};

/* Notes SQLite's reason for what failed; returns -1. */
static int fail(a2m_corpus_table *t, const char *what)
{
	snprintf(t->err, sizeof t->err, "%s: %s", what, sqlite3_errmsg(t->db));
	return -1;
}

const char *a2m_corpus_table_errmsg(const a2m_corpus_table *t)
{
	return t->err;
}

void a2m_corpus_table_close(a2m_corpus_table *t)
{
	if (!t)
		return;
	sqlite3_finalize(t->load);
	sqlite3_finalize(t->put);
	sqlite3_finalize(t->del);
	sqlite3_close(t->db);
	free(t);
}

/* Compares the stored settings with settings; makes every row pending when
** they differ. */
static int check_settings(a2m_corpus_table *t, const char *settings, int *reset)
{
	sqlite3_stmt *st = NULL;
	*reset = 0;
	if (sqlite3_prepare_v2(t->db, "SELECT value FROM corpus_meta WHERE name = 'settings'",
			       -1, &st, NULL) != SQLITE_OK)
		return fail(t, "settings");
	int rc = sqlite3_step(st);
	int had = rc == SQLITE_ROW;
	int same = had && strcmp((const char *)sqlite3_column_text(st, 0), settings) == 0;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return fail(t, "settings");
	if (same)
		return 0;
	if (sqlite3_exec(t->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return fail(t, "settings");
	if (sqlite3_exec(t->db, "UPDATE corpus_files SET size = -1, mtime_ns = -1, hash = ''",
			 NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(t->db, "INSERT OR REPLACE INTO corpus_meta VALUES('settings', ?)",
			       -1, &st, NULL) != SQLITE_OK) {
		fail(t, "settings");
		sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	sqlite3_bind_text(st, 1, settings, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE || sqlite3_exec(t->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		fail(t, "settings");
		sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	*reset = had;
	return 0;
}

int a2m_corpus_table_open(const char *path, const char *settings, a2m_corpus_table **out,
			  int *reset, char *err, size_t errlen)
{
	*out = NULL;
	a2m_corpus_table *t = calloc(1, sizeof *t);
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int rc = sqlite3_open_v2(path, &t->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path, t->db ? sqlite3_errmsg(t->db) : "out of memory");
		a2m_corpus_table_close(t);
		return -1;
	}
	sqlite3_busy_timeout(t->db, BUSY_TIMEOUT_MS);
	/* The index is made again from the folder, so a power cut that loses
	** the last commits loses nothing that cannot be redone; WAL (set by
	** the store) keeps the commits in order, which is what the indexer's
	** order of writes relies on. */
	/* Checkpoints are the store's to run, at its own threshold
	** (src/store/sqlite.c): this connection's small commits would
	** otherwise run one whenever the WAL passes SQLite's default. */
	if (sqlite3_exec(t->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(t->db, "PRAGMA wal_autocheckpoint=0", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(t->db, SQL_SCHEMA, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(t->db, SQL_LOAD, -1, &t->load, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(t->db, "INSERT OR REPLACE INTO corpus_files VALUES(?, ?, ?, ?, ?)",
			       -1, &t->put, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(t->db, "DELETE FROM corpus_files WHERE path = ?", -1, &t->del,
			       NULL) != SQLITE_OK ||
	    check_settings(t, settings, reset) != 0) {
		if (!t->err[0])
			fail(t, "open");
		snprintf(err, errlen, "%s: the table of files: %s", path, t->err);
		a2m_corpus_table_close(t);
		return -1;
	}
	*out = t;
	return 0;
}

static char *dup_column(sqlite3_stmt *st, int col)
{
	const char *s = (const char *)sqlite3_column_text(st, col);
	return strdup(s ? s : "");
}

int a2m_corpus_table_load(a2m_corpus_table *t, const char *prefix, a2m_corpus_row **rows,
			  size_t *n)
{
	a2m_corpus_row *v = NULL;
	size_t len = 0, cap = 0;
	int rc;
	*rows = NULL;
	*n = 0;
	sqlite3_bind_text(t->load, 1, prefix, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(t->load)) == SQLITE_ROW) {
		if (a2m_grow((void **)&v, &cap, len + 1, sizeof *v))
			goto oom;
		a2m_corpus_row *r = &v[len++];
		memset(r, 0, sizeof *r);
		r->path = dup_column(t->load, 0);
		r->size = sqlite3_column_int64(t->load, 1);
		r->mtime_ns = sqlite3_column_int64(t->load, 2);
		r->hash = dup_column(t->load, 3);
		r->ids = dup_column(t->load, 4);
		if (!r->path || !r->hash || !r->ids)
			goto oom;
	}
	sqlite3_reset(t->load);
	if (rc != SQLITE_DONE) {
		a2m_corpus_rows_free(v, len);
		return fail(t, "load");
	}
	*rows = v;
	*n = len;
	return 0;
oom:
	sqlite3_reset(t->load);
	a2m_corpus_rows_free(v, len);
	snprintf(t->err, sizeof t->err, "out of memory");
	return -1;
}

a2m_corpus_row *a2m_corpus_rows_find(a2m_corpus_row *rows, size_t n, const char *path)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(rows[mid].path, path);
		if (c == 0)
			return &rows[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void a2m_corpus_rows_free(a2m_corpus_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(rows[i].path);
		free(rows[i].hash);
		free(rows[i].ids);
	}
	free(rows);
}

int a2m_corpus_table_begin(a2m_corpus_table *t)
{
	return sqlite3_exec(t->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK
		? 0 : fail(t, "begin");
}

int a2m_corpus_table_commit(a2m_corpus_table *t)
{
	if (sqlite3_exec(t->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
		return 0;
	fail(t, "commit");
	a2m_corpus_table_rollback(t);
	return -1;
}

void a2m_corpus_table_rollback(a2m_corpus_table *t)
{
	if (!sqlite3_get_autocommit(t->db))
		sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
}

int a2m_corpus_table_put(a2m_corpus_table *t, const char *path, int64_t size,
			 int64_t mtime_ns, const char *hash, const char *ids)
{
	sqlite3_bind_text(t->put, 1, path, -1, SQLITE_STATIC);
	sqlite3_bind_int64(t->put, 2, size);
	sqlite3_bind_int64(t->put, 3, mtime_ns);
	sqlite3_bind_text(t->put, 4, hash, -1, SQLITE_STATIC);
	sqlite3_bind_text(t->put, 5, ids, -1, SQLITE_STATIC);
	int rc = sqlite3_step(t->put);
	sqlite3_reset(t->put);
	return rc == SQLITE_DONE ? 0 : fail(t, "write");
}

int a2m_corpus_table_delete(a2m_corpus_table *t, const char *path)
{
	sqlite3_bind_text(t->del, 1, path, -1, SQLITE_STATIC);
	int rc = sqlite3_step(t->del);
	sqlite3_reset(t->del);
	return rc == SQLITE_DONE ? 0 : fail(t, "delete");
}

int64_t a2m_corpus_table_count(a2m_corpus_table *t)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(t->db, "SELECT count(*) FROM corpus_files", -1, &st, NULL) !=
	    SQLITE_OK)
		return fail(t, "count");
	int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
	sqlite3_finalize(st);
	return n;
}
