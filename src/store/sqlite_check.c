/*
** sqlite_check.c — the SQLite engine's consistency check and repair
** (store.h; what each area means is in sqlite_check.h and docs/CHECK.md).
**
** The check reads one snapshot: it opens a read transaction (BEGIN and a
** first read) unless the caller has one open, so a server writing the file
** meanwhile neither disturbs it nor is disturbed. It writes nothing and
** runs on a read-only store. Every failure to read is a finding of its
** area, not a crash or an early exit: a damaged file yields as many
** findings as can be had from it.
**
** The repair rewrites only what is derived from the records, each area in
** a transaction of its own: SQLite's own indexes (REINDEX), the kept counts,
** the seq mark, the generated vectors that are malformed (the embedder
** makes them again), the term index (marked stale, then rebuilt by
** index_attach as at an open), the procedural mirror (reconciled). A
** record's content, and the caller's own vectors, are never touched: what
** is wrong there is reported as not repairable.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_check.h"
#include "store/sqlite_bound.h"
#include "store/sqlite_internal.h"
#include "store/sqlite_segments.h"
#include "store/store_check.h"

/* Findings of one area reported one by one before the rest are only counted. */
#define MAX_EXAMPLES 8

/* The bucket key as a2m_counts keeps it: x'' for none (sqlite_schema.c). */
#define SQL_ALL_BUCKETS \
	"SELECT ifnull(tier, x'') AS tier, ifnull(session, x'') AS session, count(*) AS n" \
	" FROM records GROUP BY 1, 2"
/* The mark of the counts' tail (sqlite_counts.c); none: every record is counted. */
#define SQL_COUNTED \
	"ifnull((SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'counted')," \
	" 9223372036854775807)"
/* The records a2m_counts holds: those up to the mark. */
#define SQL_RECORD_BUCKETS \
	"SELECT ifnull(tier, x'') AS tier, ifnull(session, x'') AS session, count(*) AS n" \
	" FROM records WHERE seq <= " SQL_COUNTED " GROUP BY 1, 2"

/*
** Every bucket where a2m_counts and the records disagree: kept n (NULL when
** a2m_counts has no row), counted n (NULL when no record is there).
*/
#define SQL_COUNTS_DIFFER \
	"SELECT c.tier, c.session, c.n, r.n FROM a2m_counts c" \
	" LEFT JOIN (" SQL_RECORD_BUCKETS ") r ON r.tier = c.tier AND r.session = c.session" \
	" WHERE r.n IS NOT c.n" \
	" UNION ALL" \
	" SELECT r.tier, r.session, NULL, r.n FROM (" SQL_RECORD_BUCKETS ") r" \
	" WHERE NOT EXISTS (SELECT 1 FROM a2m_counts c WHERE c.tier = r.tier" \
	"  AND c.session = r.session)"

#define SQL_COUNTS_REBUILD \
	"DELETE FROM a2m_counts;" \
	"INSERT INTO a2m_counts(tier, session, n) " SQL_ALL_BUCKETS ";" \
	"INSERT INTO a2m_meta(name, value) SELECT 'counted', ifnull(max(seq), 0) FROM records" \
	" WHERE true ON CONFLICT(name) DO UPDATE SET value = excluded.value;"

/*
** The bound on salience (sqlite_bound.c): the row, no record above it. Its
** repair raises it to the records' highest, never lowers it (a bound above
** every record is right, only dearer to recall).
*/
#define SQL_BOUND_CHECK \
	"SELECT (SELECT count(*) FROM a2m_bound), (SELECT salience FROM a2m_bound)," \
	" (SELECT max(0, ifnull(max(salience), 0)) FROM records)"
#define SQL_BOUND_REPAIR \
	"INSERT INTO a2m_bound(id, salience) SELECT 1, max(0, ifnull(max(salience), 0))" \
	" FROM records WHERE true ON CONFLICT(id) DO UPDATE SET salience =" \
	" max(ifnull(salience, 0), excluded.salience);"

/* The highest seq given out, as the file keeps it (sqlite_pending.c). */
#define SQL_SEQ_MARK "SELECT value, typeof(value) FROM a2m_meta WHERE name = 'seq'"
#define SQL_SEQ_REPAIR \
	"INSERT INTO a2m_meta(name, value)" \
	" SELECT 'seq', max(ifnull((SELECT CAST(value AS INTEGER) FROM a2m_meta" \
	"  WHERE name = 'seq'), 0), ifnull((SELECT max(seq) FROM records), 0)) WHERE true" \
	" ON CONFLICT(name) DO UPDATE SET value = excluded.value"

#define SQL_VECTORS \
	"SELECT seq, id, embedding, gen_embedding FROM records" \
	" WHERE embedding IS NOT NULL OR gen_embedding IS NOT NULL"

/* A finding that SQLite could not answer: the area's, with the reason. */
static void unreadable(sqlstore *s, const a2m_check_options *o, a2m_check_area area,
		       const char *what)
{
	a2m_check_say(o, area, 1, "cannot read %s: %s", what, sqlite3_errmsg(s->db));
}

/* A bucket's value as a2m_counts keeps it: x'' (no tier, no session) is "(none)". */
static const char *bucket_name(sqlite3_stmt *st, int col, char *out, size_t size)
{
	if (sqlite3_column_type(st, col) != SQLITE_TEXT)
		return "(none)";
	const char *t = (const char *)sqlite3_column_text(st, col);
	return a2m_check_quote(t ? t : "", (size_t)sqlite3_column_bytes(st, col), out, size);
}

/* Takes one row of a query; a nonzero return stops the walk. */
typedef int (*row_fn)(sqlite3_stmt *st, void *ctx);

/*
** Runs the fixed query sql, handing each row to row. A failure to read is
** a finding of area ("cannot read what"). Returns 0, row's nonzero code,
** or -1 when SQLite failed (reported).
*/
static int each_row(sqlstore *s, const a2m_check_options *o, a2m_check_area area,
		    const char *sql, const char *what, row_fn row, void *ctx)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
		unreadable(s, o, area, what);
		return -1;
	}
	while (!rc) {
		int step = sqlite3_step(st);
		if (step == SQLITE_DONE)
			break;
		if (step != SQLITE_ROW) {
			unreadable(s, o, area, what);
			rc = -1;
		} else {
			rc = row(st, ctx);
		}
	}
	sqlite3_finalize(st);
	return rc;
}

/* A check's running count of findings, and its options. */
typedef struct findings {
	const a2m_check_options *o;
	sqlstore               *s;
	int64_t                 n;
} findings;

/* ---- the file --------------------------------------------------------------- */

/* A row of integrity_check: "ok", or lines that each say what is wrong. */
static int integrity_row(sqlite3_stmt *st, void *ctx)
{
	findings *f = ctx;
	const char *text = (const char *)sqlite3_column_text(st, 0);
	if (text && strcmp(text, "ok") == 0)
		return 0;
	int64_t before = f->n;
	/* A row may hold several lines ("*** in database main ***\n..."): one finding each. */
	for (const char *line = text ? text : "?"; *line;) {
		size_t n = strcspn(line, "\n");
		if (n && !(n > 3 && strncmp(line, "***", 3) == 0) && f->n++ < 20)
			a2m_check_say(f->o, A2M_CHECK_FILE, 1, "integrity_check: %.*s", (int)n, line);
		line += n + (line[n] == '\n');
	}
	if (f->n == before)
		f->n++;
	return 0;
}

static void check_file(sqlstore *s, const a2m_check_options *o)
{
	findings f = {o, s, 0};
	int64_t pages = 0, size = 0;
	if (each_row(s, o, A2M_CHECK_FILE, "PRAGMA integrity_check(20)", "the file (integrity_check)",
		     integrity_row, &f) != 0 || f.n)
		return;
	sqlite3_stmt *p = NULL;
	if (sqlite3_prepare_v2(s->db, "SELECT * FROM pragma_page_count, pragma_page_size", -1, &p,
			       NULL) == SQLITE_OK && sqlite3_step(p) == SQLITE_ROW) {
		pages = sqlite3_column_int64(p, 0);
		size = sqlite3_column_int64(p, 1);
	}
	sqlite3_finalize(p);
	a2m_check_say(o, A2M_CHECK_FILE, 0, "integrity_check ok (%lld pages of %lld bytes)",
		      (long long)pages, (long long)size);
}

/* ---- the kept counts ---------------------------------------------------------- */

static int counts_row(sqlite3_stmt *st, void *ctx)
{
	findings *f = ctx;
	char t[A2M_CHECK_QUOTED], u[A2M_CHECK_QUOTED];
	if (f->n++ < MAX_EXAMPLES)
		a2m_check_say(f->o, A2M_CHECK_COUNTS, 1, "tier %s, session %s: kept %lld, the records "
			      "make %lld", bucket_name(st, 0, t, sizeof t), bucket_name(st, 1, u, sizeof u),
			      (long long)sqlite3_column_int64(st, 2),
			      (long long)sqlite3_column_int64(st, 3));
	return 0;
}

/*
** The bound on salience, checked with the counts: a figure kept of the
** records, which recall trusts. Reports a problem and returns 1, or
** returns 0 with what was found in said (for the area's ok line). A file
** read-only below step 13 has none.
*/
static int check_bound(sqlstore *s, const a2m_check_options *o, char *said, size_t len)
{
	if (!s->bound_table) {
		snprintf(said, len, "; no bound on salience (a file below schema step 13, read "
			 "as it is: recall does without)");
		return 0;
	}
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db, SQL_BOUND_CHECK, -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		unreadable(s, o, A2M_CHECK_COUNTS, "a2m_bound");
		sqlite3_finalize(st);
		return 1;
	}
	int64_t rows = sqlite3_column_int64(st, 0);
	int null = sqlite3_column_type(st, 1) == SQLITE_NULL;
	double bound = sqlite3_column_double(st, 1), most = sqlite3_column_double(st, 2);
	sqlite3_finalize(st);
	if (rows != 1 || null) {
		a2m_check_say(o, A2M_CHECK_COUNTS, 1, "a2m_bound holds %lld rows%s, not one bound "
			      "on salience", (long long)rows, null && rows ? " and no value" : "");
		return 1;
	}
	if (!(bound >= most)) {
		a2m_check_say(o, A2M_CHECK_COUNTS, 1, "the bound on salience %.17g is below a "
			      "record's salience %.17g (recall would miss records)", bound, most);
		return 1;
	}
	snprintf(said, len, "; the bound on salience %.17g, no record above it (the highest "
		 "%.17g)", bound, most);
	return 0;
}

static void check_counts(sqlstore *s, const a2m_check_options *o)
{
	findings f = {o, s, 0};
	char bound[200];
	int bad_bound = check_bound(s, o, bound, sizeof bound);
	if (each_row(s, o, A2M_CHECK_COUNTS, SQL_COUNTS_DIFFER, "a2m_counts", counts_row, &f) != 0)
		return;
	if (f.n > MAX_EXAMPLES)
		a2m_check_say(o, A2M_CHECK_COUNTS, 1, "%lld buckets differ in all", (long long)f.n);
	if (f.n || bad_bound)
		return;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db, "SELECT count(*), ifnull(sum(n), 0), (SELECT count(*) FROM"
			       " records WHERE seq > " SQL_COUNTED ") FROM a2m_counts", -1, &st,
			       NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
		unreadable(s, o, A2M_CHECK_COUNTS, "a2m_counts");
	} else {
		int64_t buckets = sqlite3_column_int64(st, 0), records = sqlite3_column_int64(st, 1);
		int64_t tail = sqlite3_column_int64(st, 2);
		a2m_check_say(o, A2M_CHECK_COUNTS, 0, "%lld records in %lld (tier, session) bucket%s, "
			      "as kept, and %lld above the mark (counted from their rows)%s",
			      (long long)records, (long long)buckets, buckets == 1 ? "" : "s",
			      (long long)tail, bound);
	}
	sqlite3_finalize(st);
}

/* ---- seqs --------------------------------------------------------------------- */

static void check_seqs(sqlstore *s, const a2m_check_options *o)
{
	sqlite3_stmt *st = NULL;
	int64_t n = 0, distinct = 0, lo = 0, hi = 0, mark = 0;
	int have_mark = 0, problems = 0;
	if (sqlite3_prepare_v2(s->db, "SELECT count(*), count(DISTINCT seq), ifnull(min(seq), 0),"
			       " ifnull(max(seq), 0) FROM records",
			       -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
		unreadable(s, o, A2M_CHECK_SEQS, "the records' seqs");
		sqlite3_finalize(st);
		return;
	}
	n = sqlite3_column_int64(st, 0);
	distinct = sqlite3_column_int64(st, 1);
	lo = sqlite3_column_int64(st, 2);
	hi = sqlite3_column_int64(st, 3);
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(s->db, SQL_SEQ_MARK, -1, &st, NULL) != SQLITE_OK) {
		unreadable(s, o, A2M_CHECK_SEQS, "the seq mark");
		return;
	}
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(st, 1);
		const char *v = (const char *)sqlite3_column_text(st, 0);
		char *end = NULL;
		mark = v ? strtoll(v, &end, 10) : 0;
		have_mark = 1;
		if (!v || !*v || *end || (type && strcmp(type, "text") != 0 &&
					   strcmp(type, "integer") != 0)) {
			problems++;
			a2m_check_say(o, A2M_CHECK_SEQS, 1, "the seq mark is not a number: \"%s\"",
				      v ? v : "");
			have_mark = 0;
		}
	} else if (step != SQLITE_DONE) {
		unreadable(s, o, A2M_CHECK_SEQS, "the seq mark");
		problems++;
	}
	sqlite3_finalize(st);
	if (distinct != n) {
		problems++;
		a2m_check_say(o, A2M_CHECK_SEQS, 1, "%lld records share a seq", (long long)(n - distinct));
	}
	if (n && lo < 1) {
		problems++;
		a2m_check_say(o, A2M_CHECK_SEQS, 1, "a record has seq %lld (seqs start at 1)",
			      (long long)lo);
	}
	/* Inserts leave the mark below max(seq); only a remove raises it
	** (sqlite_pending.c), so a mark below max(seq) is no finding. */
	if (n && !have_mark && !problems) {
		problems++;
		a2m_check_say(o, A2M_CHECK_SEQS, 1, "%lld records and no seq mark", (long long)n);
	}
	if (!problems)
		a2m_check_say(o, A2M_CHECK_SEQS, 0, "%lld records, seqs unique, %lld to %lld, mark %lld",
			      (long long)n, (long long)lo, (long long)hi, (long long)mark);
}

/* ---- vectors ------------------------------------------------------------------ */

/* The widths one space's vectors come in, and how many of each. */
#define MAX_WIDTHS 8
typedef struct widths {
	int64_t w[MAX_WIDTHS], n[MAX_WIDTHS];
	int     k;
	int64_t total, bad, other;  /* other: widths beyond MAX_WIDTHS */
} widths;

static void count_width(widths *v, int64_t w)
{
	v->total++;
	for (int i = 0; i < v->k; i++)
		if (v->w[i] == w) {
			v->n[i]++;
			return;
		}
	if (v->k == MAX_WIDTHS) {
		v->other++;
		return;
	}
	v->w[v->k] = w;
	v->n[v->k++] = 1;
}

/* The most common width (0: none). */
static int64_t main_width(const widths *v)
{
	int best = -1;
	for (int i = 0; i < v->k; i++)
		if (best < 0 || v->n[i] > v->n[best])
			best = i;
	return best < 0 ? 0 : v->w[best];
}

/* The walk over the stored vectors: widths, malformed ones, and what a repair drops. */
typedef struct vector_walk {
	sqlstore               *s;
	const a2m_check_options *o;
	int                     report;  /* report each malformed vector */
	int                     pass;    /* 0: count; 1: collect the generated ones to drop */
	int64_t                 keep;    /* pass 1: the generated width kept */
	widths                  caller, gen;
	int64_t                *drop;
	size_t                  ndrop, cap;
	int64_t                 rows;    /* read by the check */
	a2m_check_meter         meter;
} vector_walk;

static int vector_row(sqlite3_stmt *st, void *ctx)
{
	vector_walk *w = ctx;
	const char *id = (const char *)sqlite3_column_text(st, 1);
	char q[A2M_CHECK_QUOTED];
	if (w->report)
		a2m_check_meter_at(&w->meter, ++w->rows);
	for (int space = 0; space < 2; space++) {
		int col = space ? 3 : 2;
		size_t size = space ? 4 : 8;
		if (sqlite3_column_type(st, col) == SQLITE_NULL)
			continue;
		const void *b = sqlite3_column_blob(st, col);
		size_t n = (size_t)sqlite3_column_bytes(st, col);
		int ok = a2m_check_vector_ok(b, n, size, 0);
		widths *v = space ? &w->gen : &w->caller;
		if (w->pass == 0) {
			if (ok)
				count_width(v, (int64_t)(n / size));
			else if (v->bad++ < MAX_EXAMPLES && w->report)
				a2m_check_say(w->o, A2M_CHECK_VECTORS, 1, "record %s: its %s vector is "
					      "malformed (%zu bytes, or not all finite)%s",
					      a2m_check_quote(id ? id : "", id ? strlen(id) : 0, q, sizeof q),
					      space ? "generated" : "own", n,
					      space ? "" : " (the caller's data: not repairable)");
		} else if (space && (!ok || (int64_t)(n / size) != w->keep)) {
			if (a2m_seg_grow(&w->drop, &w->cap, w->ndrop + 1, sizeof *w->drop) != 0)
				return a2m_store_fail(&w->s->base, "vectors: out of memory");
			w->drop[w->ndrop++] = sqlite3_column_int64(st, 0);
		}
	}
	return 0;
}

/*
** Walks the stored vectors into w: the widths of each space and the
** malformed ones; with collect, then the seqs of the generated vectors a
** repair drops (malformed, or not of the main width).
*/
static int walk_vectors(vector_walk *w, int collect)
{
	int rc = each_row(w->s, w->o, A2M_CHECK_VECTORS, SQL_VECTORS, "the vectors", vector_row, w);
	if (!rc && collect) {
		w->pass = 1;
		w->keep = main_width(&w->gen);
		rc = each_row(w->s, w->o, A2M_CHECK_VECTORS, SQL_VECTORS, "the vectors", vector_row, w);
	}
	return rc;
}

static void check_vectors(sqlstore *s, const a2m_check_options *o)
{
	vector_walk w;
	memset(&w, 0, sizeof w);
	w.s = s;
	w.o = o;
	w.report = 1;
	a2m_check_meter_start(&w.meter, o, A2M_CHECK_VECTORS, "records with vectors", 0);
	if (walk_vectors(&w, 0) != 0)
		return;
	a2m_check_meter_end(&w.meter, w.rows);
	const widths caller = w.caller, gen = w.gen;
	int problems = caller.bad > 0 || gen.bad > 0;
	if (caller.bad > MAX_EXAMPLES || gen.bad > MAX_EXAMPLES)
		a2m_check_say(o, A2M_CHECK_VECTORS, 1, "%lld malformed vectors in all",
			      (long long)(caller.bad + gen.bad));
	for (int space = 0; space < 2; space++) {
		const widths *v = space ? &gen : &caller;
		if (v->k + (v->other > 0) <= 1)
			continue;
		problems = 1;
		a2m_check_say(o, A2M_CHECK_VECTORS, 1, "%s vectors come in %d widths, %lld in all "
			      "(the most common: %lld; a store keeps one)%s",
			      space ? "generated" : "the records' own", v->k + (v->other > 0),
			      (long long)v->total, (long long)main_width(v),
			      space ? "" : " (the callers' data: not repairable)");
	}
	if (!problems)
		a2m_check_say(o, A2M_CHECK_VECTORS, 0, "%lld records' own vectors (width %lld), %lld "
			      "generated (width %lld), all finite; the rows searched are built from "
			      "them by each process", (long long)caller.total,
			      (long long)main_width(&caller), (long long)gen.total,
			      (long long)main_width(&gen));
}

/* ---- the mirror --------------------------------------------------------------- */

static void check_mirror(sqlstore *s, const a2m_check_options *o)
{
	char err[sizeof s->base.errmsg];
	a2m_mirror_tally t;
	a2m_mirror *m = a2m_mirror_new(o->procedural_dir, o->procedural_tier);
	if (!m) {
		a2m_check_say(o, A2M_CHECK_MIRROR, 1, "out of memory");
		return;
	}
	if (a2m_mirror_verify(m, &s->base, o, &t, err, sizeof err) != 0)
		a2m_check_say(o, A2M_CHECK_MIRROR, 1, "%s", err);
	else if (t.differ > 8)
		a2m_check_say(o, A2M_CHECK_MIRROR, 1, "%zu files differ from the database in all",
			      t.differ);
	else if (!t.differ)
		a2m_check_say(o, A2M_CHECK_MIRROR, 0, "%zu file%s in %s, each as the database has "
			      "its record%s", t.files, t.files == 1 ? "" : "s", o->procedural_dir,
			      t.leftover ? " (and temporary files a crash left, which the next open "
			      "removes)" : "");
	a2m_mirror_free(m);
}

/* ---- the ops ------------------------------------------------------------------ */

int a2m_sqlite_check(a2m_store *base, const a2m_check_options *o)
{
	sqlstore *s = (sqlstore *)base;
	int rc = a2m_sqlite_held_flush(s);
	if (rc)
		return rc;
	/* One snapshot for every area: a read transaction, taken by its first read. */
	int own = sqlite3_get_autocommit(s->db);
	if (own && (a2m_sqlite_exec(s, "BEGIN", "check") ||
		    a2m_sqlite_exec(s, "SELECT count(*) FROM sqlite_master", "check"))) {
		a2m_check_say(o, A2M_CHECK_FILE, 1, "cannot read the file: %s", s->base.errmsg);
		if (!sqlite3_get_autocommit(s->db))
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return A2M_INTERNAL_ERROR;
	}
	check_file(s, o);
	check_counts(s, o);
	check_seqs(s, o);
	check_vectors(s, o);
	if (o->ix)
		a2m_sqlite_check_index(s->db, base, o);
	if (o->procedural_dir && o->procedural_tier)
		check_mirror(s, o);
	a2m_sqlite_check_extensions(s->db, base, o);
	if (own && !sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return 0;
}

/* Runs sql in a write transaction of its own. Returns 0, or a code with errmsg set. */
static int in_transaction(sqlstore *s, const char *sql, const char *op)
{
	int rc = a2m_sqlite_exec(s, "BEGIN IMMEDIATE", op);
	if (!rc)
		rc = a2m_sqlite_exec(s, sql, op);
	if (!rc)
		rc = a2m_sqlite_exec(s, "COMMIT", op);
	if (rc && !sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* Drops the generated vectors that are malformed or not of the main width. */
static int repair_vectors(sqlstore *s, const a2m_check_options *o)
{
	vector_walk w;
	memset(&w, 0, sizeof w);
	w.s = s;
	w.o = o;
	sqlite3_stmt *st = NULL;
	int rc = a2m_sqlite_exec(s, "BEGIN IMMEDIATE", "repair vectors");
	if (!rc && walk_vectors(&w, 1) != 0)
		rc = a2m_store_fail(&s->base, "repair vectors: cannot read the vectors");
	int64_t *drop = w.drop;
	size_t ndrop = w.ndrop;
	const widths caller = w.caller;
	if (!rc && sqlite3_prepare_v2(s->db, "UPDATE records SET gen_embedding = NULL WHERE seq = ?1",
				      -1, &st, NULL) != SQLITE_OK)
		rc = a2m_sqlite_db_fail(s, "repair vectors");
	for (size_t i = 0; !rc && i < ndrop; i++) {
		if (sqlite3_bind_int64(st, 1, drop[i]) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE)
			rc = a2m_sqlite_db_fail(s, "repair vectors");
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (!rc)
		rc = a2m_sqlite_exec(s, "COMMIT", "repair vectors");
	if (rc && !sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	free(drop);
	if (!rc)
		a2m_check_say(o, A2M_CHECK_VECTORS, 0, "dropped %zu generated vector%s (the embedder "
			      "makes them again)%s", ndrop, ndrop == 1 ? "" : "s",
			      caller.bad || caller.k > 1 ? "; the records' own vectors are their "
			      "callers' data and were left as they are" : "");
	return rc;
}

static int repair_mirror(sqlstore *s, const a2m_check_options *o)
{
	char err[sizeof s->base.errmsg];
	a2m_mirror *m = a2m_mirror_new(o->procedural_dir, o->procedural_tier);
	if (!m)
		return a2m_store_fail(&s->base, "mirror: out of memory");
	int rc = a2m_mirror_reconcile(m, &s->base, err, sizeof err);
	a2m_mirror_free(m);
	if (rc)
		return a2m_store_fail(&s->base, "%s", err);
	a2m_check_say(o, A2M_CHECK_MIRROR, 0, "reconciled %s with the database", o->procedural_dir);
	return 0;
}

/* The index marked stale, then built again from every record, as an open would. */
static int repair_index(sqlstore *s, const a2m_check_options *o)
{
	int rc = in_transaction(s, "DELETE FROM a2m_meta WHERE name = 'index'", "repair index");
	if (!rc)
		rc = s->base.ops->index_attach(&s->base, o->ix);
	if (!rc)
		a2m_check_say(o, A2M_CHECK_INDEX, 0, "rebuilt from the records");
	return rc;
}

int a2m_sqlite_repair(a2m_store *base, const a2m_check_options *o, unsigned areas)
{
	sqlstore *s = (sqlstore *)base;
	int rc = a2m_sqlite_refuse_read_only(s, "repair");
	if (rc)
		return rc;
	if (!sqlite3_get_autocommit(s->db))
		return a2m_store_fail(base, "repair: a transaction is open");
	for (int area = 0; area < A2M_CHECK_AREAS && !rc; area++) {
		if (!(areas & (1u << area)))
			continue;
		switch (area) {
		case A2M_CHECK_FILE:
			/* SQLite's indexes are derived from their tables. */
			if (!(rc = in_transaction(s, "REINDEX", "repair file")))
				a2m_check_say(o, A2M_CHECK_FILE, 0, "REINDEX: SQLite's indexes rebuilt "
					      "from their tables");
			break;
		case A2M_CHECK_COUNTS:
			rc = in_transaction(s, SQL_COUNTS_REBUILD SQL_BOUND_REPAIR, "repair counts");
			a2m_sqlite_bound_forget(s);  /* the row changed under its cache */
			if (!rc)
				a2m_check_say(o, A2M_CHECK_COUNTS, 0, "counted again from the records, "
					      "the bound on salience raised to their highest");
			break;
		case A2M_CHECK_SEQS:
			if (!(rc = in_transaction(s, SQL_SEQ_REPAIR, "repair seqs")))
				a2m_check_say(o, A2M_CHECK_SEQS, 0, "the mark set to the highest seq");
			break;
		case A2M_CHECK_VECTORS:
			rc = repair_vectors(s, o);
			break;
		case A2M_CHECK_INDEX:
			if (o->ix)
				rc = repair_index(s, o);
			break;
		case A2M_CHECK_MIRROR:
			if (o->procedural_dir && o->procedural_tier)
				rc = repair_mirror(s, o);
			break;
		case A2M_CHECK_HISTORY:
		case A2M_CHECK_EXPIRY:
		case A2M_CHECK_DEDUP:
			rc = a2m_sqlite_exec(s, "BEGIN IMMEDIATE", "repair");
			if (!rc)
				rc = a2m_sqlite_repair_extension(base, o, (a2m_check_area)area);
			if (!rc)
				rc = a2m_sqlite_exec(s, "COMMIT", "repair");
			if (rc && !sqlite3_get_autocommit(s->db))
				sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
			if (!rc)
				a2m_check_say(o, (a2m_check_area)area, 0, "%s", area == A2M_CHECK_HISTORY
					      ? "deleted the revisions no reader may see" : area ==
					      A2M_CHECK_EXPIRY ? "REINDEX records_expiry" :
					      "REINDEX records_fp; each fingerprint its content's");
			break;
		default:
			break;
		}
	}
	return rc;
}
