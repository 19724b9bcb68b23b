/*
** sqlite_read.c — the SQLite engine's reads: by id, by (owner, key), by
** seq, and scan/count over an a2m_query.
**
** Apart from sqlite.c because it is the only place that builds SQL at run
** time: the WHERE clause of scan and count, assembled from fixed fragments
** with every value bound. count() by tier and/or session reads a2m_counts
** (migration 4, sqlite_schema.c) and the counts' tail (sqlite_counts.c)
** instead of the records.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_internal.h"

/* ---- reads ------------------------------------------------------------- */

int a2m_sqlite_get(a2m_store *base, const char *id, a2m_record **out)
{
	sqlstore *s = (sqlstore *)base;
	*out = NULL;
	if (!id)
		return 0;
	if (a2m_sqlite_bind_text(s->get, 1, id) != SQLITE_OK) {
		int rc = a2m_sqlite_db_fail(s, "get");
		a2m_sqlite_done(s->get);
		return rc;
	}
	return a2m_sqlite_fetch_one(s, s->get, "get", out);
}

int a2m_sqlite_get_by_key(a2m_store *base, const char *owner, const char *key,
			  a2m_record **out)
{
	sqlstore *s = (sqlstore *)base;
	*out = NULL;
	if (!key)
		return 0;
	if (a2m_sqlite_bind_text(s->get_by_key, 1, owner) != SQLITE_OK ||
	    a2m_sqlite_bind_text(s->get_by_key, 2, key) != SQLITE_OK) {
		int rc = a2m_sqlite_db_fail(s, "get_by_key");
		a2m_sqlite_done(s->get_by_key);
		return rc;
	}
	return a2m_sqlite_fetch_one(s, s->get_by_key, "get_by_key", out);
}

/*
** The WHERE clause for an a2m_query: fixed fragments with ? placeholders,
** and the values to bind to them in order.
*/
#define MAX_BINDS 12

typedef struct filter {
	char        sql[1024];
	size_t      used;
	int         overflow;  /* sql[] was too small: never run a truncated query */
	int         nterms;
	const char *text[MAX_BINDS];  /* NULL: bind num[] instead */
	size_t      len[MAX_BINDS];
	int64_t     num[MAX_BINDS];
	int         nbinds;
	char       *upper;     /* owned: key_prefix's upper bound */
} filter;

/*
** Appends fixed SQL. The fragments are literals totalling well under 1024
** bytes, but a cut-off WHERE clause could still parse and select too much,
** so running out of room is an error rather than a truncation.
*/
static void put(filter *f, const char *sql)
{
	size_t n = strlen(sql);
	if (f->used + n >= sizeof f->sql) {
		f->overflow = 1;
		return;
	}
	memcpy(f->sql + f->used, sql, n + 1);
	f->used += n;
}

static void term(filter *f, const char *sql, const char *value, size_t len)
{
	put(f, f->nterms++ ? " AND " : " WHERE ");
	put(f, sql);
	if (value) {
		f->text[f->nbinds] = value;
		f->len[f->nbinds] = len;
		f->nbinds++;
	}
}

/*
** Builds head + WHERE for q. key_prefix becomes the range
** `key >= prefix AND key < upper`: exact for any bytes ('%', '_', '\' and
** multi-byte UTF-8 alike, where LIKE would treat the first two as wildcards
** and fold ASCII case, and substr() would count characters, not bytes), it
** agrees with a2m_query_matches()'s strncmp, and with by_owner it is a range
** on records_owner_key instead of a test applied to every row.
*/
static int filter_build(sqlstore *s, const a2m_query *q, const char *head, filter *f)
{
	memset(f, 0, sizeof *f);
	put(f, head);
	/*
	** By the tier's key, records_tier's (A2M_SQLITE_TIER_KEY: the
	** expression names ? twice), and the name as +tier, which SQLite does
	** not propagate into the key. With a session named, by name only:
	** records_session serves then (a session's records are few, a
	** tier's may be most of the store), as SQLite chose before step 12;
	** the key would make records_tier the better-looking index to it.
	*/
	if (q->tier) {
		size_t n = strlen(q->tier);
		if (q->by_session && q->session) {
			term(f, "tier = ?", q->tier, n);
		} else {
			term(f, "(" A2M_SQLITE_TIER_KEY("tier") ") = (" A2M_SQLITE_TIER_KEY("?") ")",
			     q->tier, n);
			f->text[f->nbinds] = q->tier;
			f->len[f->nbinds] = n;
			f->nbinds++;
			term(f, "+tier = ?", q->tier, n);
		}
	}
	/*
	** by_owner is spelled with records_owner_key's expression (same meaning:
	** x'' equals no owner string), so owner + key_prefix is an index range.
	*/
	if (q->by_owner) {
		if (q->owner)
			term(f, "ifnull(owner, x'') = ?", q->owner, strlen(q->owner));
		else
			term(f, "ifnull(owner, x'') = x''", NULL, 0);
	}
	if (q->by_session) {
		if (q->session)
			term(f, "session = ?", q->session, strlen(q->session));
		else
			term(f, "session IS NULL", NULL, 0);
	}
	if (q->group)
		term(f, "grp = ?", q->group, strlen(q->group));
	/* Creation bounds: a range of records_created (or of the tier's or
	** session's index, whose next column is created_at). */
	if (q->created_min) {
		term(f, "created_at >= ?", NULL, 0);
		f->num[f->nbinds++] = q->created_min;
	}
	if (q->created_max) {
		term(f, "created_at <= ?", NULL, 0);
		f->num[f->nbinds++] = q->created_max;
	}
	if (q->key_prefix) {
		size_t ulen;
		if (a2m_store_prefix_upper(q->key_prefix, &f->upper, &ulen) != 0)
			return a2m_store_fail(&s->base, "scan: out of memory");
		term(f, "key >= ?", q->key_prefix, strlen(q->key_prefix));
		if (f->upper)
			term(f, "key < ?", f->upper, ulen);
	}
	return 0;
}

/* Binds f's values to st. */
static int filter_bind(sqlstore *s, filter *f, const char *op, sqlite3_stmt *st)
{
	for (int i = 0; i < f->nbinds; i++) {
		int rc = f->text[i] ? sqlite3_bind_text64(st, i + 1, f->text[i], f->len[i],
							  SQLITE_STATIC, SQLITE_UTF8)
				    : sqlite3_bind_int64(st, i + 1, f->num[i]);
		if (rc != SQLITE_OK)
			return a2m_sqlite_db_fail(s, op);
	}
	return 0;
}

/* Prepares f's SQL and binds its values. The caller finalizes *st. */
static int filter_prepare(sqlstore *s, filter *f, const char *op, sqlite3_stmt **st)
{
	*st = NULL;
	if (f->overflow)
		return a2m_store_fail(&s->base, "%s: query text too long", op);
	if (sqlite3_prepare_v2(s->db, f->sql, (int)f->used, st, NULL) != SQLITE_OK)
		return a2m_sqlite_db_fail(s, op);
	return filter_bind(s, f, op, *st);
}

/* ---- the scan statements a connection keeps ------------------------------ */

/*
** A statement for f's SQL, bound, from the ones s keeps (*kept then names
** its slot, to give back with scan_give) or, when every slot is stepping
** (nested scans), prepared for this scan alone (*kept NULL: finalize it).
** The least recently used slot makes room for a new shape.
*/
static int scan_take(sqlstore *s, filter *f, sqlite3_stmt **st,
		     a2m_sqlite_scan_kept **kept)
{
	a2m_sqlite_scan_kept *lru = NULL;
	*st = NULL;
	*kept = NULL;
	if (f->overflow)
		return a2m_store_fail(&s->base, "scan: query text too long");
	for (size_t i = 0; i < A2M_SQLITE_SCANS_KEPT; i++) {
		a2m_sqlite_scan_kept *k = &s->scans[i];
		if (k->busy)
			continue;
		if (k->sql && strcmp(k->sql, f->sql) == 0) {
			lru = k;
			break;
		}
		if (!lru || !k->sql || (lru->sql && k->used < lru->used))
			lru = k;
	}
	if (lru && !(lru->sql && strcmp(lru->sql, f->sql) == 0)) {
		char *sql = strdup(f->sql);
		sqlite3_stmt *p = NULL;
		if (!sql)
			return a2m_store_fail(&s->base, "scan: out of memory");
		if (sqlite3_prepare_v3(s->db, f->sql, (int)f->used, SQLITE_PREPARE_PERSISTENT, &p,
				       NULL) != SQLITE_OK) {
			free(sql);
			return a2m_sqlite_db_fail(s, "scan");
		}
		sqlite3_finalize(lru->st);
		free(lru->sql);
		lru->sql = sql;
		lru->st = p;
	}
	if (!lru)
		return filter_prepare(s, f, "scan", st);
	lru->busy = 1;
	lru->used = ++s->scans_clock;
	*st = lru->st;
	*kept = lru;
	return filter_bind(s, f, "scan", *st);
}

/* Ends a scan's use of st (from scan_take). */
static void scan_give(sqlite3_stmt *st, a2m_sqlite_scan_kept *kept)
{
	if (!kept) {
		sqlite3_finalize(st);
		return;
	}
	a2m_sqlite_done(st);
	kept->busy = 0;
}

void a2m_sqlite_scans_free(sqlstore *s)
{
	for (size_t i = 0; i < A2M_SQLITE_SCANS_KEPT; i++) {
		sqlite3_finalize(s->scans[i].st);
		free(s->scans[i].sql);
		s->scans[i] = (a2m_sqlite_scan_kept){0};
	}
}

/* ---- scans ------------------------------------------------------------- */

/* What a brief scan reads (store.h, a2m_query.brief), in brief_rows' order. */
#define BRIEF_COLUMNS \
	"seq, id, created_at, grp, tier, salience, accessed_at, access_count, session"

/* Lends *out column col's text (NULL for SQL NULL). Returns 0, or -1 out of memory. */
static int lend_text(sqlite3_stmt *st, int col, char **out)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	*out = (char *)(uintptr_t)t;
	return !t && sqlite3_column_type(st, col) != SQLITE_NULL ? -1 : 0;
}

/*
** Steps st (a SELECT of BRIEF_COLUMNS, bound) to its end, visiting each
** row as a record whose strings are lent from the row (good for the visit
** only) and whose other fields are 0, as scan does (stop, abort).
*/
static int brief_rows(sqlstore *s, sqlite3_stmt *st, a2m_record_visit visit, void *ctx)
{
	a2m_record rec;
	for (;;) {
		int step = sqlite3_step(st);
		if (step == SQLITE_DONE)
			return 0;
		if (step != SQLITE_ROW)
			return a2m_sqlite_db_fail(s, "scan");
		memset(&rec, 0, sizeof rec);
		rec.seq = sqlite3_column_int64(st, 0);
		rec.created_at = sqlite3_column_int64(st, 2);
		rec.salience = sqlite3_column_double(st, 5);
		rec.accessed_at = sqlite3_column_int64(st, 6);
		rec.access_count = sqlite3_column_int64(st, 7);
		if (lend_text(st, 1, &rec.id) || !rec.id || lend_text(st, 3, &rec.group) ||
		    lend_text(st, 4, &rec.tier) || lend_text(st, 8, &rec.session))
			return a2m_store_fail(&s->base, "scan: out of memory");
		int r = visit(&rec, ctx);
		if (r != 0)
			return r < 0 ? r : 0;
	}
}

/* Steps st (COLUMNS) to its end, visiting each row as scan does. */
int a2m_sqlite_visit_rows(sqlstore *s, sqlite3_stmt *st, const char *op,
			   a2m_record_visit visit, void *ctx)
{
	a2m_record rec;
	int rc = 0;
	memset(&rec, 0, sizeof rec);
	for (;;) {
		int step = sqlite3_step(st);
		if (step == SQLITE_DONE)
			break;
		if (step != SQLITE_ROW) {
			rc = a2m_sqlite_db_fail(s, op);
			break;
		}
		rc = a2m_sqlite_read_row(s, st, &rec);
		if (rc)
			break;
		int r = visit(&rec, ctx);
		a2m_record_clear(&rec);
		if (r != 0) {
			rc = r < 0 ? r : 0;
			break;
		}
	}
	return rc;
}

/* The SQL of a scan of q, in f (whose upper the caller frees). */
static int scan_build(sqlstore *s, const a2m_query *q, filter *f)
{
	int rc = filter_build(s, q, q->brief ? "SELECT " BRIEF_COLUMNS " FROM records"
					     : "SELECT " COLUMNS " FROM records", f);
	if (!rc)
		put(f, q->descending ? " ORDER BY created_at DESC, seq DESC"
				     : " ORDER BY created_at, seq");
	return rc;
}

#ifdef A2M_TEST_HOOKS
int a2m_sqlite_scan_sql_for_tests(a2m_store *base, const a2m_query *q, char *buf, size_t len)
{
	filter f;
	int rc = scan_build((sqlstore *)base, q, &f);
	free(f.upper);
	if (!rc && (f.overflow || (size_t)snprintf(buf, len, "%s", f.sql) >= len))
		rc = a2m_store_fail(base, "scan: query text too long");
	return rc;
}
#endif

int a2m_sqlite_scan(a2m_store *base, const a2m_query *q, a2m_record_visit visit,
		    void *ctx)
{
	sqlstore *s = (sqlstore *)base;
	sqlite3_stmt *st = NULL;
	a2m_sqlite_scan_kept *kept = NULL;
	filter f;
	int rc;

	rc = scan_build(s, q, &f);
	if (rc)
		goto out;
	rc = scan_take(s, &f, &st, &kept);
	if (!rc)
		rc = q->brief ? brief_rows(s, st, visit, ctx)
			      : a2m_sqlite_visit_rows(s, st, "scan", visit, ctx);
	if (st)
		scan_give(st, kept);
out:
	free(f.upper);
	return rc;
}

/*
** Through the partial index records_unembedded when the file has it (made
** at open with an embedder, schema step 7), whose WHERE this query repeats
** word for word: SQLite uses a partial index only for a query whose WHERE
** implies the index's, and INDEXED BY turns any drift between the two into
** an error rather than a silent full scan. Without it (no embedder served
** this file yet), a pass over the table.
*/
#define SQL_UNEMBEDDED_WHERE \
	" WHERE tier IS ?1 AND " A2M_SQLITE_UNEMBEDDED " ORDER BY seq"
#define SQL_UNEMBEDDED \
	"SELECT " COLUMNS " FROM records INDEXED BY records_unembedded" SQL_UNEMBEDDED_WHERE
#define SQL_UNEMBEDDED_SCAN "SELECT " COLUMNS " FROM records" SQL_UNEMBEDDED_WHERE

int a2m_sqlite_scan_unembedded(a2m_store *base, const char *tier, a2m_record_visit visit,
			       void *ctx)
{
	sqlstore *s = (sqlstore *)base;
	sqlite3_stmt *st = NULL;
	const char *sql = s->unembedded_index ? SQL_UNEMBEDDED : SQL_UNEMBEDDED_SCAN;
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK ||
	    a2m_sqlite_bind_text(st, 1, tier) != SQLITE_OK) {
		sqlite3_finalize(st);
		return a2m_sqlite_db_fail(s, "unembedded");
	}
	int rc = a2m_sqlite_visit_rows(s, st, "unembedded", visit, ctx);
	sqlite3_finalize(st);
	return rc;
}

/*
** count() by tier and/or session: a few rows of a2m_counts, the counts'
** tail (committed inserts not yet in them, sqlite_counts.c) and the
** inserts of this connection's transaction (sqlite_pending.c). The tail
** and the rows are read in one snapshot: outside a bracket or a
** transaction, the connection's snapshot statement holds one meanwhile.
*/
static int count_kept(sqlstore *s, const a2m_query *q, int64_t *out)
{
	sqlite3_stmt *st = !q->tier ? s->count_session
			 : q->by_session ? s->count_bucket : s->count_tier;
	int own = sqlite3_txn_state(s->db, "main") == SQLITE_TXN_NONE;
	if (own && sqlite3_step(s->snapshot) != SQLITE_ROW) {
		int rc = a2m_sqlite_db_fail(s, "count");
		sqlite3_reset(s->snapshot);
		return rc;
	}
	int rc = a2m_sqlite_counts_sync(s);
	if (!rc && ((q->tier && a2m_sqlite_bind_text(st, 1, q->tier) != SQLITE_OK) ||
		    (q->by_session && a2m_sqlite_bind_text(st, 2, q->session) != SQLITE_OK) ||
		    sqlite3_step(st) != SQLITE_ROW))
		rc = a2m_sqlite_db_fail(s, "count");
	else if (!rc)
		*out = sqlite3_column_int64(st, 0) +
		       a2m_sqlite_counts_tail(s, q->tier, q->by_session, q->session) +
		       a2m_sqlite_pending_count(s, q->tier, q->by_session, q->session);
	a2m_sqlite_done(st);
	if (own)
		sqlite3_reset(s->snapshot);
	return rc;
}

int a2m_sqlite_count(a2m_store *base, const a2m_query *q, int64_t *out)
{
	sqlstore *s = (sqlstore *)base;
	sqlite3_stmt *st = NULL;
	filter f;
	int rc;

	*out = 0;
	if ((q->tier || q->by_session) && !q->by_owner && !q->key_prefix && !q->group &&
	    !q->created_min && !q->created_max)
		return count_kept(s, q, out);
	rc = filter_build(s, q, "SELECT count(*) FROM records", &f);
	if (rc)
		goto out;
	rc = filter_prepare(s, &f, "count", &st);
	if (rc)
		goto out;
	if (sqlite3_step(st) != SQLITE_ROW) {
		rc = a2m_sqlite_db_fail(s, "count");
		goto out;
	}
	*out = sqlite3_column_int64(st, 0);
out:
	sqlite3_finalize(st);
	free(f.upper);
	return rc;
}

/* ---- by seq ------------------------------------------------------------ */

/*
** In a read bracket, through the row cache (row_cache.h): the snapshot's
** data version says whether the copies are still the database's. Elsewhere
** (in a write transaction, or with no bracket) every row is read.
*/
int a2m_sqlite_visit_seqs(a2m_store *base, const int64_t *seqs, size_t n,
			  a2m_record_visit visit, void *ctx)
{
	sqlstore *s = (sqlstore *)base;
	a2m_record rec;
	int rc = 0;
	unsigned version = 0;
	int cached = s->rows && s->reading && a2m_sqlite_data_version(s->db, &version);
	if (cached)
		a2m_row_cache_validate(s->rows, version);
	/* A visit that reads by seq again must not evict the record it holds. */
	int fill = cached && !s->rows_busy;
	s->rows_busy++;
	memset(&rec, 0, sizeof rec);
	for (size_t i = 0; i < n && !rc; i++) {
		const a2m_record *hit = cached ? a2m_row_cache_get(s->rows, seqs[i]) : NULL;
		if (hit) {
			int r = visit(hit, ctx);
			if (r != 0) {
				rc = r < 0 ? r : 0;
				break;
			}
			continue;
		}
		if (sqlite3_bind_int64(s->by_seq, 1, seqs[i]) != SQLITE_OK) {
			rc = a2m_sqlite_db_fail(s, "visit_seqs");
			break;
		}
		int step = sqlite3_step(s->by_seq);
		if (step == SQLITE_ROW) {
			if (!(rc = a2m_sqlite_read_row(s, s->by_seq, &rec))) {
				a2m_sqlite_done(s->by_seq);
				const a2m_record *kept = fill ? a2m_row_cache_take(s->rows, &rec) : NULL;
				int r = visit(kept ? kept : &rec, ctx);
				a2m_record_clear(&rec);
				if (r != 0) {
					rc = r < 0 ? r : 0;
					break;
				}
				continue;
			}
		} else if (step != SQLITE_DONE) {
			rc = a2m_sqlite_db_fail(s, "visit_seqs");
		}
		a2m_sqlite_done(s->by_seq);
	}
	s->rows_busy--;
	return rc;
}
