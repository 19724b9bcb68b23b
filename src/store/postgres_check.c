/*
** postgres_check.c — the PostgreSQL engine's consistency check and repair
** (store.h, check and repair; docs/CHECK.md says what each area means).
**
** A deployment derives from its records what the SQLite engine derives
** from its file's: the kept counts per (tier, session) (a2m_counts, kept
** by triggers), the term index (a2m_postings_seg, a few rows of varints per
** term, written by the servers with their analyser) and its figures (a2m_state),
** the seq mark (a2m_state.seq); and it keeps one thing SQLite keeps in each
** server's memory, the event log (a2m_events, a2m_state.event_head). The
** check compares each with what the records make, inside one REPEATABLE
** READ, READ ONLY transaction: one snapshot of the whole deployment, which
** takes no lock, so a live deployment is checked while its servers write
** (what they commit meanwhile is simply not seen). Large tables are read
** through cursors of that transaction, a page at a time: memory stays a
** page and the index comparison's one entry per distinct term
** (store_check.h).
**
** The repair runs each area in a write transaction of its own, which takes
** the deployment's write lock (postgres_txn.c), so every server's writes
** wait for it and none is lost or half counted: the counts counted again,
** the seq mark and the event head raised to what the tables hold, the
** generated vectors that are malformed or of another width dropped (the
** embedder makes them again), the term index rebuilt from every record by
** index_attach, as at the first open of a deployment. A record's content,
** and the caller's own vectors, are never changed.
**
** Each area is one entry of a table (check, repair SQL, repair function);
** the term index's check is postgres_check_index.c's, the extensions'
** areas (history, expiry, dedup) are postgres_check_extend.c's.
** The vectors area reads every vector, through a cursor, for elements that
** are not finite.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_check.h"
#include "store/sqlite_segments.h"

#define MAX_EXAMPLES PG_CHECK_EXAMPLES
/* Rows one FETCH of a cursor brings. */
#define PAGE "5000"

/* ---- reading ------------------------------------------------------------------ */

/* a2m_pg_check_query, _num and _fetch (postgres_check.h), by short names in this file. */
static PGresult *query(pgcheck *k, a2m_check_area area, const char *sql, const char *what)
{
	PGresult *r = NULL;
	if (a2m_pg_exec(k->s, &k->s->main, sql, "check", &r) != 0) {
		a2m_check_say(k->o, area, 1, "cannot read %s: %s", what, k->s->base.errmsg);
		return NULL;
	}
	return r;
}

static int64_t num(pgcheck *k, const PGresult *r, int row, int col)
{
	if (k->s->pq->getisnull(r, row, col))
		return 0;
	return strtoll(k->s->pq->getvalue(r, row, col), NULL, 10);
}

/* A text cell quoted for a message ("(none)" for NULL). */
static const char *quoted(pgcheck *k, const PGresult *r, int row, int col, char *out, size_t size)
{
	if (k->s->pq->getisnull(r, row, col))
		return "(none)";
	return a2m_check_quote(k->s->pq->getvalue(r, row, col),
			       (size_t)k->s->pq->getlength(r, row, col), out, size);
}

static PGresult *fetch(pgcheck *k, a2m_check_area area, const char *name, int binary,
		       const char *what)
{
	char sql[96];
	pgstore *s = k->s;
	snprintf(sql, sizeof sql, "FETCH " PAGE " FROM %s", name);
	PGresult *r = s->pq->exec_params(s->main.conn, sql, 0, NULL, NULL, NULL, NULL, binary);
	if (a2m_pg_check(s, &s->main, r, "check") != 0) {
		a2m_check_say(k->o, area, 1, "cannot read %s: %s", what, s->base.errmsg);
		return NULL;
	}
	return r;
}

int a2m_pg_check_declare(pgcheck *k, a2m_check_area area, const char *name, const char *sql,
			 const char *what)
{
	a2m_buf q = {0};
	a2m_buf_printf(&q, "DECLARE %s NO SCROLL CURSOR FOR %s", name, sql);
	PGresult *r = q.failed ? NULL : query(k, area, a2m_buf_str(&q), what);
	if (q.failed)
		a2m_check_say(k->o, area, 1, "out of memory");
	a2m_buf_free(&q);
	if (!r)
		return -1;
	k->s->pq->clear(r);
	return 0;
}

PGresult *a2m_pg_check_query(pgcheck *k, a2m_check_area area, const char *sql, const char *what)
{
	return query(k, area, sql, what);
}

int64_t a2m_pg_check_num(pgcheck *k, const PGresult *r, int row, int col)
{
	return num(k, r, row, col);
}

PGresult *a2m_pg_check_fetch(pgcheck *k, a2m_check_area area, const char *name, int binary,
			     const char *what)
{
	return fetch(k, area, name, binary, what);
}

const char *a2m_pg_check_quoted(pgcheck *k, const PGresult *r, int row, int col, char *out,
				size_t size)
{
	return quoted(k, r, row, col, out, size);
}

/* ---- the file: the schema, the records --------------------------------------- */

static void check_file(pgcheck *k)
{
	PGresult *r = query(k, A2M_CHECK_FILE, "SELECT (SELECT max(version) FROM a2m_schema_version),"
			    " count(*), pg_size_pretty(pg_total_relation_size('a2m_records'))"
			    " FROM a2m_records", "the records");
	if (!r)
		return;
	k->records = num(k, r, 0, 1);
	a2m_check_say(k->o, A2M_CHECK_FILE, 0, "%s: schema version %lld, %lld records (%s with "
		      "their indexes), read in one snapshot", k->s->where, (long long)num(k, r, 0, 0),
		      (long long)k->records, k->s->pq->getvalue(r, 0, 2));
	k->s->pq->clear(r);
}

/* ---- the kept counts ------------------------------------------------------------ */

/* The records per bucket, keyed as a2m_counts keys them (NULL is its own key). */
#define SQL_BUCKETS \
	"SELECT tier IS NULL AS tn, coalesce(tier, '') AS t, session IS NULL AS sn," \
	" coalesce(session, '') AS s, count(*) AS n FROM a2m_records GROUP BY 1, 2, 3, 4"

/*
** The bound on salience (a2m_state.salience_max, postgres_txn.c), checked
** with the counts: a figure kept of the records, which recall trusts.
** Reports a problem and returns 1, or returns 0 with what was found in
** said (for the area's ok line).
*/
static int check_bound(pgcheck *k, char *said, size_t len)
{
	PGresult *r = query(k, A2M_CHECK_COUNTS, "SELECT salience_max >= m, salience_max, m"
			    " FROM a2m_state, (SELECT greatest(0, coalesce(max(salience), 0)) AS m"
			    " FROM a2m_records) x", "the bound on salience");
	if (!r)
		return 1;
	int ok = k->s->pq->ntuples(r) == 1 && strcmp(k->s->pq->getvalue(r, 0, 0), "t") == 0;
	if (k->s->pq->ntuples(r) != 1)
		a2m_check_say(k->o, A2M_CHECK_COUNTS, 1, "a2m_state holds no bound on salience");
	else if (!ok)
		a2m_check_say(k->o, A2M_CHECK_COUNTS, 1, "the bound on salience %s is below a "
			      "record's salience %s (recall would miss records)",
			      k->s->pq->getvalue(r, 0, 1), k->s->pq->getvalue(r, 0, 2));
	else
		snprintf(said, len, "; the bound on salience %s, no record above it (the highest "
			 "%s)", k->s->pq->getvalue(r, 0, 1), k->s->pq->getvalue(r, 0, 2));
	k->s->pq->clear(r);
	return !ok;
}

static void check_counts(pgcheck *k)
{
	char bound[200];
	int bad_bound = check_bound(k, bound, sizeof bound);
	PGresult *r = query(k, A2M_CHECK_COUNTS,
			    "WITH r AS (" SQL_BUCKETS ")"
			    " SELECT CASE WHEN coalesce(c.tnull, r.tn) THEN NULL"
			    "  ELSE coalesce(c.tier, r.t) END,"
			    " CASE WHEN coalesce(c.snull, r.sn) THEN NULL ELSE coalesce(c.session, r.s) END,"
			    " c.n, coalesce(r.n, 0) FROM a2m_counts c FULL JOIN r ON c.tnull = r.tn"
			    " AND c.tier = r.t AND c.snull = r.sn AND c.session = r.s"
			    " WHERE c.n IS DISTINCT FROM r.n ORDER BY 1, 2", "a2m_counts");
	if (!r)
		return;
	int n = k->s->pq->ntuples(r);
	for (int i = 0; i < n && i < MAX_EXAMPLES; i++) {
		char t[A2M_CHECK_QUOTED], u[A2M_CHECK_QUOTED];
		a2m_check_say(k->o, A2M_CHECK_COUNTS, 1, "tier %s, session %s: kept %s, the records "
			      "make %lld", quoted(k, r, i, 0, t, sizeof t), quoted(k, r, i, 1, u, sizeof u),
			      k->s->pq->getisnull(r, i, 2) ? "none" : k->s->pq->getvalue(r, i, 2),
			      (long long)num(k, r, i, 3));
	}
	if (n > MAX_EXAMPLES)
		a2m_check_say(k->o, A2M_CHECK_COUNTS, 1, "%d buckets differ in all", n);
	k->s->pq->clear(r);
	if (n || bad_bound || !(r = query(k, A2M_CHECK_COUNTS, "SELECT count(*), coalesce(sum(n), 0)"
			     " FROM a2m_counts", "a2m_counts")))
		return;
	int64_t buckets = num(k, r, 0, 0);
	a2m_check_say(k->o, A2M_CHECK_COUNTS, 0, "%lld records in %lld (tier, session) bucket%s, as "
		      "kept%s", (long long)num(k, r, 0, 1), (long long)buckets, buckets == 1 ? "" : "s",
		      bound);
	k->s->pq->clear(r);
}

#define SQL_REPAIR_COUNTS \
	"DELETE FROM a2m_counts;" \
	" INSERT INTO a2m_counts (tnull, tier, snull, session, n) " SQL_BUCKETS ";" \
	" UPDATE a2m_state SET salience_max = greatest(salience_max," \
	"  (SELECT greatest(0, coalesce(max(salience), 0)) FROM a2m_records))"

/* ---- seqs ---------------------------------------------------------------------------- */

static void check_seqs(pgcheck *k)
{
	PGresult *r = query(k, A2M_CHECK_SEQS, "SELECT count(*), coalesce(min(seq), 0),"
			    " coalesce(max(seq), 0), (SELECT seq FROM a2m_state) FROM a2m_records",
			    "the records' seqs");
	if (!r)
		return;
	int64_t n = num(k, r, 0, 0), lo = num(k, r, 0, 1), hi = num(k, r, 0, 2);
	int64_t mark = num(k, r, 0, 3);
	k->s->pq->clear(r);
	int problems = 0;
	if (n && lo < 1) {
		problems++;
		a2m_check_say(k->o, A2M_CHECK_SEQS, 1, "a record has seq %lld (seqs start at 1)",
			      (long long)lo);
	}
	if (hi > mark) {
		problems++;
		a2m_check_say(k->o, A2M_CHECK_SEQS, 1, "seq %lld is above the mark %lld (a2m_state.seq):"
			      " the next write would be given a seq a record holds", (long long)hi,
			      (long long)mark);
	}
	if (!problems)
		a2m_check_say(k->o, A2M_CHECK_SEQS, 0, "%lld records, seqs unique, %lld to %lld, mark "
			      "%lld", (long long)n, (long long)lo, (long long)hi, (long long)mark);
}

#define SQL_REPAIR_SEQS \
	"UPDATE a2m_state SET seq = greatest(seq, (SELECT coalesce(max(seq), 0) FROM a2m_records))"

/* ---- the event log ------------------------------------------------------------------- */

/*
** Appends number the events head + 1, head + 2, ... and retention drops
** the oldest (postgres_events.c): what is kept is one run of seqs ending
** at the head. A gap is events lost; a head below the newest would give a
** cursor's position out twice (and fail every append on the key).
*/
static void check_events(pgcheck *k)
{
	PGresult *r = query(k, A2M_CHECK_EVENTS, "SELECT count(*), coalesce(min(seq), 0),"
			    " coalesce(max(seq), 0), (SELECT event_head FROM a2m_state),"
			    " count(*) FILTER (WHERE body NOT LIKE '{%}'),"
			    " (SELECT event_tail FROM a2m_state) FROM a2m_events", "a2m_events");
	if (!r)
		return;
	int64_t n = num(k, r, 0, 0), lo = num(k, r, 0, 1), hi = num(k, r, 0, 2);
	int64_t head = num(k, r, 0, 3), bad = num(k, r, 0, 4), tail = num(k, r, 0, 5);
	k->s->pq->clear(r);
	int problems = 0;
	/* The trims delete from the tail on, and the oldest is looked for there. */
	if (n && lo < tail) {
		problems++;
		a2m_check_say(k->o, A2M_CHECK_EVENTS, 1, "event %lld is below the tail %lld "
			      "(a2m_state.event_tail): no trim would delete it, and the oldest "
			      "retained would be misreported", (long long)lo, (long long)tail);
	}
	if (n && hi > head) {
		problems++;
		a2m_check_say(k->o, A2M_CHECK_EVENTS, 1, "event %lld is above the head %lld "
			      "(a2m_state.event_head): its position would be given out again",
			      (long long)hi, (long long)head);
	} else if (n && hi < head) {
		problems++;
		a2m_check_say(k->o, A2M_CHECK_EVENTS, 1, "the newest event is %lld, the head %lld: "
			      "events %lld to %lld are missing", (long long)hi, (long long)head,
			      (long long)hi + 1, (long long)head);
	}
	if (n && n != hi - lo + 1) {
		problems++;
		a2m_check_say(k->o, A2M_CHECK_EVENTS, 1, "%lld events between %lld and %lld, which "
			      "make %lld: a reader's cursor would skip the missing ones (not repairable)",
			      (long long)n, (long long)lo, (long long)hi, (long long)(hi - lo + 1));
	}
	if (bad) {
		problems++;
		a2m_check_say(k->o, A2M_CHECK_EVENTS, 1, "%lld event%s whose body is not a JSON object "
			      "(not repairable)", (long long)bad, bad == 1 ? "" : "s");
	}
	if (!problems)
		a2m_check_say(k->o, A2M_CHECK_EVENTS, 0, "%lld events kept, %lld to %lld, in order, "
			      "head %lld", (long long)n, (long long)lo, (long long)hi, (long long)head);
}

#define SQL_REPAIR_EVENTS \
	"UPDATE a2m_state SET event_head = greatest(event_head," \
	" (SELECT coalesce(max(seq), 0) FROM a2m_events))," \
	" event_tail = least(event_tail, (SELECT coalesce(min(seq), event_tail) FROM a2m_events))"

/* ---- vectors ------------------------------------------------------------------------- */

/*
** The vectors of whole elements that hold a NaN or an infinity, which no
** search can rank by, walked through a cursor (binary: the bytes as
** stored, little-endian): the first few reported by id, each counted per
** space (0: the caller's float64, 1: generated float32); with collect, the
** seqs of such generated vectors gathered for the repair. Vectors not of
** whole elements are the width query's findings, skipped here. Returns 0,
** or -1 after a finding (a read failed, or memory ran out).
*/
typedef struct finite_walk {
	int      report, collect;
	int64_t  bad[2];
	pgarray  drop;      /* collect: int8[] of the seqs */
} finite_walk;

static int walk_finite(pgcheck *k, finite_walk *w)
{
	pgstore *s = k->s;
	if (a2m_pg_check_declare(k, A2M_CHECK_VECTORS, "a2m_check_vectors",
				 "SELECT seq, id, embedding, gen_embedding FROM a2m_records"
				 " WHERE embedding IS NOT NULL OR gen_embedding IS NOT NULL",
				 "the vectors") != 0)
		return -1;
	for (;;) {
		PGresult *r = fetch(k, A2M_CHECK_VECTORS, "a2m_check_vectors", 1, "the vectors");
		if (!r)
			return -1;
		int rows = s->pq->ntuples(r);
		for (int i = 0; i < rows; i++)
			for (int space = 0; space < 2; space++) {
				int col = 2 + space;
				size_t size = space ? 4 : 8, len = (size_t)s->pq->getlength(r, i, col);
				if (s->pq->getisnull(r, i, col) || !len || len % size ||
				    a2m_check_vector_ok(s->pq->getvalue(r, i, col), len, size, 1))
					continue;
				if (w->report && w->bad[0] + w->bad[1] < MAX_EXAMPLES) {
					char q[A2M_CHECK_QUOTED];
					a2m_check_say(k->o, A2M_CHECK_VECTORS, 1, "record %s: its %s vector "
						      "holds a value that is not finite (NaN or infinite)%s",
						      quoted(k, r, i, 1, q, sizeof q),
						      space ? "generated" : "own", space ? "" :
						      " (the caller's data: not repairable)");
				}
				w->bad[space]++;
				if (w->collect && space)
					a2m_pg_array_int8(&w->drop, a2m_pg_int8(s, r, i, 0));
			}
		s->pq->clear(r);
		if (!rows)
			break;
	}
	PGresult *r = query(k, A2M_CHECK_VECTORS, "CLOSE a2m_check_vectors", "the vectors");
	if (r)
		s->pq->clear(r);
	return r ? 0 : -1;
}

/* The width of each vector in bytes, per space (0: the caller's float64, 1: generated float32). */
static void check_vectors(pgcheck *k)
{
	PGresult *r = query(k, A2M_CHECK_VECTORS,
			    "SELECT 0, length(embedding), count(*) FROM a2m_records"
			    " WHERE embedding IS NOT NULL GROUP BY 2"
			    " UNION ALL SELECT 1, length(gen_embedding), count(*) FROM a2m_records"
			    " WHERE gen_embedding IS NOT NULL GROUP BY 2 ORDER BY 1, 3 DESC, 2",
			    "the vectors");
	if (!r)
		return;
	int64_t total[2] = {0, 0}, width[2] = {0, 0}, widths[2] = {0, 0}, bad[2] = {0, 0};
	for (int i = 0; i < k->s->pq->ntuples(r); i++) {
		int space = (int)num(k, r, i, 0);
		int64_t bytes = num(k, r, i, 1), n = num(k, r, i, 2), size = space ? 4 : 8;
		total[space] += n;
		if (!bytes || bytes % size) {
			bad[space] += n;
			continue;
		}
		/* Ordered by count: the first whole width is the most common. */
		if (!widths[space]++)
			width[space] = bytes / size;
	}
	k->s->pq->clear(r);
	int problems = 0;
	for (int space = 0; space < 2; space++) {
		const char *whose = space ? "generated" : "the records' own";
		const char *fix = space ? "" : " (the callers' data: not repairable)";
		if (bad[space]) {
			problems++;
			a2m_check_say(k->o, A2M_CHECK_VECTORS, 1, "%lld %s vector%s malformed (not whole "
				      "%s)%s", (long long)bad[space], whose, bad[space] == 1 ? " is" : "s are",
				      space ? "floats" : "doubles", fix);
		}
		if (widths[space] > 1) {
			problems++;
			a2m_check_say(k->o, A2M_CHECK_VECTORS, 1, "%s vectors come in %lld widths, %lld "
				      "in all (the most common: %lld; a store keeps one)%s", whose,
				      (long long)widths[space], (long long)total[space],
				      (long long)width[space], fix);
		}
	}
	finite_walk w = {.report = 1};
	if (walk_finite(k, &w) != 0)
		return;
	if (w.bad[0] + w.bad[1] > MAX_EXAMPLES)
		a2m_check_say(k->o, A2M_CHECK_VECTORS, 1, "%lld vectors not finite in all",
			      (long long)(w.bad[0] + w.bad[1]));
	if (!problems && !w.bad[0] && !w.bad[1])
		a2m_check_say(k->o, A2M_CHECK_VECTORS, 0, "%lld records' own vectors (width %lld), %lld "
			      "generated (width %lld), each space of one width, all finite",
			      (long long)total[0], (long long)width[0], (long long)total[1],
			      (long long)width[1]);
}

/* The generated vectors dropped: malformed, or not of the most common whole width. */
#define SQL_REPAIR_VECTORS \
	"WITH w AS (SELECT length(gen_embedding) AS l FROM a2m_records" \
	"  WHERE gen_embedding IS NOT NULL AND length(gen_embedding) > 0" \
	"  AND length(gen_embedding) % 4 = 0 GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1)" \
	" UPDATE a2m_records SET gen_embedding = NULL WHERE gen_embedding IS NOT NULL" \
	" AND length(gen_embedding) IS DISTINCT FROM (SELECT l FROM w)"

/* After that SQL, in its transaction: the generated vectors not finite dropped too. */
static int repair_vectors(pgcheck *k)
{
	pgstore *s = k->s;
	finite_walk w = {.collect = 1};
	a2m_pg_array_begin(&w.drop, PG_OID_INT8);
	int rc = walk_finite(k, &w) != 0 ? A2M_INTERNAL_ERROR : 0;
	if (a2m_pg_array_end(&w.drop) != 0)
		return rc ? rc : a2m_store_fail(&s->base, "repair vectors: out of memory");
	if (!rc && w.drop.n) {
		pgparams p;
		PGresult *r;
		a2m_pg_params_init(&p);
		a2m_pg_param_bytea(&p, w.drop.buf, w.drop.len);
		rc = a2m_pg_run_named(s, &s->main, "a2m_repair_vectors", "UPDATE a2m_records SET"
				      " gen_embedding = NULL WHERE seq = ANY($1::int8[])", &p,
				      "repair vectors", &r);
		if (!rc)
			s->pq->clear(r);
	}
	a2m_pg_array_free(&w.drop);
	return rc;
}

/* Marked as built by no analysis; index_attach then rebuilds it from every record. */
#define SQL_REPAIR_INDEX "UPDATE a2m_state SET index_version = NULL"

/* ---- the areas ------------------------------------------------------------------------- */

typedef struct area_ops {
	a2m_check_area area;
	int            needs_ix;               /* only with an analyser (o->ix) */
	void         (*check)(pgcheck *k);     /* inside the snapshot */
	const char    *repair;                 /* SQL run in a write transaction; NULL: none */
	int          (*repair_fn)(pgcheck *k); /* then this, in it; NULL: none */
	const char    *repaired;               /* what the repair says it did */
} area_ops;

/* The extensions' indexes, derived from their columns. */
#define SQL_REPAIR_EXPIRY "REINDEX INDEX a2m_records_expiry"
#define SQL_REPAIR_DEDUP  "REINDEX INDEX a2m_records_fp"

static const area_ops areas[] = {
	{A2M_CHECK_FILE,    0, check_file,    NULL, NULL, NULL},
	{A2M_CHECK_COUNTS,  0, check_counts,  SQL_REPAIR_COUNTS, NULL,
	 "counted again from the records, the bound on salience raised to their highest"},
	{A2M_CHECK_SEQS,    0, check_seqs,    SQL_REPAIR_SEQS, NULL, "the mark set to the highest seq"},
	{A2M_CHECK_VECTORS, 0, check_vectors, SQL_REPAIR_VECTORS, repair_vectors,
	 "dropped the generated vectors that were malformed, not finite or of another width (the "
	 "embedder makes them again); the records' own vectors are their callers' data and were "
	 "left as they are"},
	{A2M_CHECK_EVENTS,  0, check_events,  SQL_REPAIR_EVENTS, NULL,
	 "the head set to the newest event, the tail to the oldest"},
	{A2M_CHECK_INDEX,   1, a2m_pg_check_index,   SQL_REPAIR_INDEX, NULL, "rebuilt from the records"},
	{A2M_CHECK_HISTORY, 0, a2m_pg_check_history, NULL, a2m_pg_repair_history,
	 "deleted the revisions no reader may see"},
	{A2M_CHECK_EXPIRY,  0, a2m_pg_check_expiry, SQL_REPAIR_EXPIRY, NULL,
	 "REINDEX a2m_records_expiry"},
	{A2M_CHECK_DEDUP,   0, a2m_pg_check_dedup, SQL_REPAIR_DEDUP, a2m_pg_repair_dedup,
	 "REINDEX a2m_records_fp; each fingerprint its content's"},
};
#define NAREAS (sizeof areas / sizeof areas[0])

int a2m_pg_store_check(a2m_store *base, const a2m_check_options *o)
{
	pgstore *s = (pgstore *)base;
	pgcheck k = {s, o, 0};
	if (s->in_tx)
		return a2m_store_fail(base, "check: a transaction is open");
	a2m_pg_read_end(base);
	int rc = a2m_pg_ready(s, &s->main);
	if (!rc)
		rc = a2m_pg_exec(s, &s->main, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
				 "check", NULL);
	if (rc) {
		a2m_check_say(o, A2M_CHECK_FILE, 1, "cannot read the deployment: %s", s->base.errmsg);
		return rc;
	}
	/* Nothing in the snapshot is retried on a new connection (postgres_conn.c). */
	s->main.in_tx = 1;
	for (size_t i = 0; i < NAREAS; i++)
		if (!areas[i].needs_ix || o->ix)
			areas[i].check(&k);
	s->main.in_tx = 0;
	if (!a2m_pg_lost(s, &s->main))
		a2m_pg_exec(s, &s->main, "ROLLBACK", "check", NULL);
	return 0;
}

int a2m_pg_store_repair(a2m_store *base, const a2m_check_options *o, unsigned mask)
{
	pgstore *s = (pgstore *)base;
	pgcheck k = {s, o, 0};
	int rc = 0;
	if (s->base.read_only) {
		a2m_store_fail(base, "repair: the store is read-only");
		return A2M_READ_ONLY;
	}
	for (size_t i = 0; i < NAREAS && !rc; i++) {
		const area_ops *a = &areas[i];
		if (!(mask & (1u << a->area)) || (!a->repair && !a->repair_fn) ||
		    (a->needs_ix && !o->ix))
			continue;
		if ((rc = a2m_pg_begin(base)))
			break;
		if ((a->repair && (rc = a2m_pg_exec(s, &s->main, a->repair, "repair", NULL))) ||
		    (a->repair_fn && (rc = a->repair_fn(&k)))) {
			a2m_pg_rollback(base);
			break;
		}
		s->wrote = 1;
		s->stamp++;  /* a record's derived columns may have changed */
		if ((rc = a2m_pg_commit(base)))
			break;
		/* The index: marked unbuilt above, built again here as an open builds it. */
		if (a->area == A2M_CHECK_INDEX && (rc = a2m_pg_index_attach(s, o->ix)))
			break;
		a2m_check_say(o, a->area, 0, "%s", a->repaired);
	}
	return rc;
}
