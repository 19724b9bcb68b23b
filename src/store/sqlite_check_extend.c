/*
** sqlite_check_extend.c — the SQLite engine's check and repair of the
** extensions' data (sqlite_check.h; the extensions are in
** docs/PROTOCOL.md, the tables in sqlite_schema.c step 9).
**
** history: every row of a2m_history belongs to a live record with a key,
** is below its live revision, ascends with the times the revisions were
** superseded, and a record keeps at most the configured number
** (store_check.c walks the rows). A repair deletes the rows that break a
** rule (what no reader may see anyway: a gone record's, or one past the
** bound, oldest first).
**
** expiry: every expires_at is a time (an integer after the clock's start;
** NULL is "never"), and records_expiry, which the sweep reads, lists every
** record that has one. A bad time is the record's data, reported only; a
** repair rebuilds the index (REINDEX).
**
** dedup: every fp is the fingerprint of its record's content and role, as
** the stack computes it (o->fingerprint), never 0 (that is NULL), and
** records_fp, which a write's duplicate search reads, lists every record
** that has one. A repair rebuilds the index and sets each fingerprint to
** its content's.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_check.h"
#include "store/sqlite_internal.h"
#include "store/store_check.h"

#define MAX_EXAMPLES 8

#define SQL_HISTORY \
	"SELECT id, revision, created_at, superseded_at FROM a2m_history ORDER BY id, revision"

/* A bad expiry: not an integer, or not after the clock's start (NULL is "never"). */
#define BAD_TIME "(typeof(expires_at) <> 'integer' OR expires_at <= 0)"
/* A bad fingerprint: not an integer, or 0 (NULL is "none"; the 64 bits are kept signed). */
#define BAD_FP "(typeof(fp) <> 'integer' OR fp = 0)"

/*
** The rows that have col, as the table holds them and as its partial index
** lists them; those of a bad value; the least good value.
*/
#define SQL_INDEXED(col, index, bad) \
	"SELECT (SELECT count(*) FROM records NOT INDEXED WHERE " col " IS NOT NULL)," \
	" (SELECT count(*) FROM records INDEXED BY " index " WHERE " col " IS NOT NULL)," \
	" (SELECT count(*) FROM records NOT INDEXED WHERE " col " IS NOT NULL AND " bad ")," \
	" (SELECT min(" col ") FROM records NOT INDEXED WHERE " col " IS NOT NULL AND NOT " \
	bad ")"

/* ---- history -------------------------------------------------------------------- */

static void check_history(sqlite3 *db, a2m_store *base, const a2m_check_options *o)
{
	sqlite3_stmt *st = NULL;
	a2m_check_history h;
	if (sqlite3_prepare_v2(db, SQL_HISTORY, -1, &st, NULL) != SQLITE_OK) {
		a2m_check_say(o, A2M_CHECK_HISTORY, 1, "cannot read a2m_history: %s",
			      sqlite3_errmsg(db));
		return;
	}
	a2m_check_history_begin(&h, base, o);
	for (;;) {
		int step = sqlite3_step(st);
		if (step == SQLITE_DONE)
			break;
		if (step != SQLITE_ROW) {
			a2m_check_say(o, A2M_CHECK_HISTORY, 1, "cannot read a2m_history: %s",
				      sqlite3_errmsg(db));
			h.failed = 1;
			break;
		}
		a2m_revision rev;
		memset(&rev, 0, sizeof rev);
		rev.id = (const char *)sqlite3_column_text(st, 0);
		rev.revision = sqlite3_column_int64(st, 1);
		rev.created_at = sqlite3_column_int64(st, 2);
		rev.superseded_at = sqlite3_column_int64(st, 3);
		if (a2m_check_history_visit(&rev, &h) != 0)
			break;
	}
	sqlite3_finalize(st);
	a2m_check_history_end(&h);
}

/*
** The rows no reader may see, deleted: a record gone or without a key,
** at or above the live revision, and beyond the bound (the oldest).
*/
static int repair_history(sqlstore *s, const a2m_check_options *o)
{
	char sql[1024];
	int n = snprintf(sql, sizeof sql,
			 "DELETE FROM a2m_history WHERE NOT EXISTS (SELECT 1 FROM records r"
			 " WHERE r.id = a2m_history.id AND r.key IS NOT NULL AND"
			 " r.revision > a2m_history.revision);");
	if (o->history_keep)
		snprintf(sql + n, sizeof sql - (size_t)n,
			 "DELETE FROM a2m_history WHERE (SELECT count(*) FROM a2m_history h"
			 " WHERE h.id = a2m_history.id AND h.revision > a2m_history.revision)"
			 " >= %zu;", o->history_keep);
	return a2m_sqlite_exec(s, sql, "repair history");
}

/* ---- expiry and fingerprints: a column and its partial index ----------------------- */

typedef struct column_area {
	a2m_check_area area;
	const char    *sql;     /* SQL_INDEXED of the column */
	const char    *bad;     /* up to MAX_EXAMPLES of its bad values: id, value */
	const char    *what;    /* "expires at", "fingerprint" */
	const char    *why;     /* what is wrong with a bad value */
	const char    *index;
} column_area;

static const column_area expiry = {
	A2M_CHECK_EXPIRY, SQL_INDEXED("expires_at", "records_expiry", BAD_TIME),
	"SELECT id, quote(expires_at) FROM records WHERE expires_at IS NOT NULL AND " BAD_TIME
	" LIMIT 8", "expires at",
	"not a time after the clock's start (the record's data: not repairable)", "records_expiry",
};
static const column_area dedup = {
	A2M_CHECK_DEDUP, SQL_INDEXED("fp", "records_fp", BAD_FP),
	"SELECT id, quote(fp) FROM records WHERE fp IS NOT NULL AND " BAD_FP " LIMIT 8",
	"fingerprint", "not a fingerprint (0 is none)", "records_fp",
};

/*
** The column's values and its index: the bad values named, the index's
** count against the table's. Returns the problems found (-1: unreadable),
** and the rows that have the column and the least good value in v.
*/
static int64_t check_column(sqlite3 *db, const a2m_check_options *o, const column_area *c,
			    int64_t v[4])
{
	int64_t problems = 0;
	if (a2m_sqlite_check_ints(db, c->sql, v, 4) != SQLITE_OK) {
		a2m_check_say(o, c->area, 1, "cannot read the records' %s: %s", c->what,
			      sqlite3_errmsg(db));
		return -1;
	}
	if (v[0] != v[1]) {
		problems++;
		a2m_check_say(o, c->area, 1, "%lld records have a %s, the index %s lists %lld",
			      (long long)v[0], c->what, c->index, (long long)v[1]);
	}
	if (v[2]) {
		sqlite3_stmt *st = NULL;
		problems += v[2];
		if (sqlite3_prepare_v2(db, c->bad, -1, &st, NULL) == SQLITE_OK)
			while (sqlite3_step(st) == SQLITE_ROW) {
				char q[A2M_CHECK_QUOTED];
				const char *id = (const char *)sqlite3_column_text(st, 0);
				a2m_check_say(o, c->area, 1, "record %s: %s %s, %s",
					      a2m_check_quote(id ? id : "", id ? strlen(id) : 0, q, sizeof q),
					      c->what, (const char *)sqlite3_column_text(st, 1), c->why);
			}
		sqlite3_finalize(st);
		if (v[2] > MAX_EXAMPLES)
			a2m_check_say(o, c->area, 1, "%lld bad values in all", (long long)v[2]);
	}
	return problems;
}

static void check_expiry(sqlite3 *db, const a2m_check_options *o)
{
	int64_t v[4];
	if (check_column(db, o, &expiry, v) == 0)
		a2m_check_say_expiry(o, v[0], v[3], ", each listed by records_expiry");
}

/* Each fingerprinted record's kept fingerprint against its content's. */
typedef struct fp_walk {
	const a2m_check_options *o;
	size_t                   problems;
	char                   **ids;       /* repair: the records to fingerprint again */
	uint64_t                *fps;
	size_t                   n, cap;
	int                      oom;
} fp_walk;

static int fingerprints(sqlite3 *db, fp_walk *w, int collect)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT id, content, role, fp FROM records NOT INDEXED"
				    " WHERE fp IS NOT NULL", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = SQLITE_ROW;
	while (rc == SQLITE_ROW && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(st, 0);
		const char *content = (const char *)sqlite3_column_text(st, 1);
		const char *role = (const char *)sqlite3_column_text(st, 2);
		uint64_t kept = (uint64_t)sqlite3_column_int64(st, 3);
		if (!collect) {
			a2m_check_fingerprint(w->o, id, content, role, kept, &w->problems);
			continue;
		}
		uint64_t want = w->o->fingerprint(content, role);
		if (want == kept)
			continue;
		if (w->n == w->cap) {
			size_t cap = w->cap ? w->cap * 2 : 64;
			char **ids = realloc(w->ids, cap * sizeof *ids);
			uint64_t *fps = ids ? realloc(w->fps, cap * sizeof *fps) : NULL;
			if (ids)
				w->ids = ids;
			if (!fps) {
				w->oom = 1;
				break;
			}
			w->fps = fps;
			w->cap = cap;
		}
		if (!(w->ids[w->n] = strdup(id ? id : ""))) {
			w->oom = 1;
			break;
		}
		w->fps[w->n++] = want;
	}
	sqlite3_finalize(st);
	/* ROW: stopped for want of memory (w->oom says so). */
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : rc;
}

static void check_dedup(sqlite3 *db, const a2m_check_options *o)
{
	int64_t v[4];
	fp_walk w;
	memset(&w, 0, sizeof w);
	w.o = o;
	int64_t problems = check_column(db, o, &dedup, v);
	if (problems < 0)
		return;
	if (o->fingerprint && fingerprints(db, &w, 0) != 0) {
		a2m_check_say(o, A2M_CHECK_DEDUP, 1, "cannot read the records: %s", sqlite3_errmsg(db));
		return;
	}
	if (w.problems > MAX_EXAMPLES)
		a2m_check_say(o, A2M_CHECK_DEDUP, 1, "%zu records whose fingerprint is not their "
			      "content's", w.problems);
	if (!problems && !w.problems)
		a2m_check_say(o, A2M_CHECK_DEDUP, 0, "%lld fingerprinted record%s, each listed by "
			      "records_fp%s", (long long)v[0], v[0] == 1 ? "" : "s",
			      o->fingerprint ? ", each its content's" : "");
}

/* The index rebuilt; each fingerprint set to its content's (0 is NULL). */
static int repair_dedup(sqlstore *s, const a2m_check_options *o)
{
	fp_walk w;
	sqlite3_stmt *st = NULL;
	memset(&w, 0, sizeof w);
	w.o = o;
	int rc = a2m_sqlite_exec(s, "REINDEX records_fp", "repair dedup");
	if (!rc && o->fingerprint && fingerprints(s->db, &w, 1) != 0)
		rc = a2m_sqlite_db_fail(s, "repair dedup");
	if (!rc && w.oom)
		rc = a2m_store_fail(&s->base, "repair dedup: out of memory");
	if (!rc && w.n && sqlite3_prepare_v2(s->db, "UPDATE records SET fp = nullif(?2, 0)"
					     " WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
		rc = a2m_sqlite_db_fail(s, "repair dedup");
	for (size_t i = 0; !rc && i < w.n; i++) {
		sqlite3_bind_text(st, 1, w.ids[i], -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)w.fps[i]);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = a2m_sqlite_db_fail(s, "repair dedup");
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	for (size_t i = 0; i < w.n; i++)
		free(w.ids[i]);
	free(w.ids);
	free(w.fps);
	return rc;
}

/* ---- the entry points ----------------------------------------------------------------- */

void a2m_sqlite_check_extensions(sqlite3 *db, a2m_store *base, const a2m_check_options *o)
{
	check_history(db, base, o);
	check_expiry(db, o);
	check_dedup(db, o);
}

int a2m_sqlite_repair_extension(a2m_store *base, const a2m_check_options *o, a2m_check_area area)
{
	sqlstore *s = (sqlstore *)base;
	switch (area) {
	case A2M_CHECK_HISTORY:
		return repair_history(s, o);
	case A2M_CHECK_EXPIRY:
		return a2m_sqlite_exec(s, "REINDEX records_expiry", "repair expiry");
	case A2M_CHECK_DEDUP:
		return repair_dedup(s, o);
	default:
		return 0;
	}
}
