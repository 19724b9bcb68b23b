/*
** sqlite_counts.c — the kept counts' tail: records committed above
** a2m_meta's row 'counted' (the mark), which a2m_counts does not hold yet.
**
** Why: a2m_counts (schema step 4) answers count() by tier and session in a
** few rows, and a transaction's inserts were added to it at their COMMIT
** (sqlite_pending.c): for a lone insert, an upsert (~8 k instructions) and
** one page of the log of the ~7 it writes. Like the term index's tail
** (sqlite_index_tail.c), a commit that only inserted now leaves its counts
** out of the file; they are written with a later commit's.
**
** What keeps it right: a2m_counts holds exactly the records with a seq up
** to the mark (schema step 10 set it to the last record). The records above
** it are the tail; they are in the file, so a crash loses nothing, and any
** connection counts them again from the rows (seq, tier, session) when the
** data version moved since it last looked: the writer in its transaction,
** a reader in its bracket, another process the same way; from the highest
** seq it counted when the mark stayed put, from the mark when it moved.
** Only inserts may wait: an update or remove writes the whole tail out
** first (a2m_sqlite_pending_flush), since the triggers that keep
** a2m_counts for it need its record counted there; so does a commit that
** would leave more than COUNTS_TAIL_MAX records in the tail, and a clean
** close (sqlite.c, close_write_tail). A tier move (no trigger since schema
** step 11: its -1 and +1 go into a2m_counts at COMMIT, sqlite_pending.c)
** needs the same of its one record only: one at or under the mark is
** counted there already (a2m_sqlite_counts_cover), and the tail and this
** transaction's inserts, all above the mark, are untouched. So a spilling
** write keeps the tail's saving while it moves records older than the
** last write-out.
**
** count() adds the tail's buckets to a2m_counts' rows, read in one snapshot
** (a bracket's, the write transaction's, or one it opens for itself).
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_internal.h"
#include "util/text.h"

/*
** Records a tail may hold before a commit writes it out: what a reader
** opening after a kill counts again at most (a range of the records'
** rowids, about 0.3 k instructions each).
*/
#define COUNTS_TAIL_MAX 512

/* NULL stored as x'', as migration 4 and the triggers do. */
#define SQL_COUNT_ADD \
	"INSERT INTO a2m_counts(tier, session, n)" \
	" VALUES(ifnull(?1, x''), ifnull(?2, x''), ?3)" \
	" ON CONFLICT(tier, session) DO UPDATE SET n = n + excluded.n"
/*
** A move's minus: the row keeps what is left, or goes when nothing is (the
** DELETE below, run only then), as the delete trigger leaves it.
*/
#define SQL_COUNT_TAKE \
	"UPDATE a2m_counts SET n = n - ?3" \
	" WHERE tier = ifnull(?1, x'') AND session = ifnull(?2, x'') AND n > ?3"
#define SQL_COUNT_DROP \
	"DELETE FROM a2m_counts WHERE tier = ifnull(?1, x'') AND session = ifnull(?2, x'')"
/*
** The mark (-1 when the file has none: nothing is in a tail) and the
** records above max(mark, ?1) up to ?2, in one statement: one snapshot.
*/
#define SQL_TAIL_ROWS \
	"SELECT m.v, r.seq, r.tier, r.session FROM (SELECT ifnull((SELECT CAST(value AS" \
	" INTEGER) FROM a2m_meta WHERE name = 'counted'), -1) AS v) AS m" \
	" LEFT JOIN records AS r ON m.v >= 0 AND r.seq > max(m.v, ?1) AND r.seq <= ?2" \
	" ORDER BY r.seq"
/*
** The new mark: every record in the file is counted once the tail and the
** transaction's buckets are written, and ?1 covers its rows still held.
*/
#define SQL_MARK_SET \
	"INSERT INTO a2m_meta(name, value)" \
	" VALUES('counted', max(?1, ifnull((SELECT max(seq) FROM records), 0)))" \
	" ON CONFLICT(name) DO UPDATE SET value = excluded.value" \
	" RETURNING CAST(value AS INTEGER)"

static int prepare(sqlstore *s, sqlite3_stmt **st, const char *sql)
{
	if (!*st && sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL)
	    != SQLITE_OK)
		return a2m_sqlite_db_fail(s, "prepare");
	return 0;
}

long a2m_sqlite_bucket_slot(a2m_sqlite_bucket **v, size_t *n, size_t *cap, const char *tier,
			    const char *session)
{
	for (size_t i = 0; i < *n; i++)
		if (a2m_str_same((*v)[i].tier, tier) && a2m_str_same((*v)[i].session, session))
			return (long)i;
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 4;
		a2m_sqlite_bucket *w = realloc(*v, c * sizeof *w);
		if (!w)
			return -1;
		*v = w;
		*cap = c;
	}
	int oom = 0;
	a2m_sqlite_bucket b = {a2m_str_dup_opt(tier, &oom), a2m_str_dup_opt(session, &oom), 0};
	if (oom) {
		free(b.tier);
		free(b.session);
		return -1;
	}
	(*v)[*n] = b;
	return (long)(*n)++;
}

void a2m_sqlite_buckets_clear(a2m_sqlite_bucket *v, size_t *n)
{
	for (size_t i = 0; i < *n; i++) {
		free(v[i].tier);
		free(v[i].session);
	}
	*n = 0;
}

/* Empties the tail's buckets. */
static void tail_clear(sqlstore *s)
{
	a2m_sqlite_buckets_clear(s->ctail, &s->ctail_n);
	s->ctail_records = 0;
}

/* The tail is not known: the next use counts it again from the mark. */
static void tail_lost(sqlstore *s)
{
	tail_clear(s);
	s->ctail_known = 0;
}

void a2m_sqlite_counts_free(sqlstore *s)
{
	tail_clear(s);
	free(s->ctail);
	s->ctail = NULL;
	s->ctail_cap = 0;
	sqlite3_finalize(s->count_add);
	sqlite3_finalize(s->count_take);
	sqlite3_finalize(s->count_drop);
	sqlite3_finalize(s->ctail_rows);
	sqlite3_finalize(s->counted_set);
	s->count_add = s->count_take = s->count_drop = s->ctail_rows = s->counted_set = NULL;
}

int a2m_sqlite_counts_add(sqlstore *s, const char *tier, const char *session, int64_t n)
{
	if (prepare(s, &s->count_add, SQL_COUNT_ADD))
		return A2M_INTERNAL_ERROR;
	int rc = 0;
	if (a2m_sqlite_bind_text(s->count_add, 1, tier) != SQLITE_OK ||
	    a2m_sqlite_bind_text(s->count_add, 2, session) != SQLITE_OK ||
	    sqlite3_bind_int64(s->count_add, 3, n) != SQLITE_OK ||
	    sqlite3_step(s->count_add) != SQLITE_DONE)
		rc = a2m_sqlite_db_fail(s, "counts");
	a2m_sqlite_done(s->count_add);
	return rc;
}

int a2m_sqlite_counts_take(sqlstore *s, const char *tier, const char *session, int64_t n)
{
	for (int drop = 0; drop < 2; drop++) {
		sqlite3_stmt **st = drop ? &s->count_drop : &s->count_take;
		if (prepare(s, st, drop ? SQL_COUNT_DROP : SQL_COUNT_TAKE))
			return A2M_INTERNAL_ERROR;
		int rc = 0;
		if (a2m_sqlite_bind_text(*st, 1, tier) != SQLITE_OK ||
		    a2m_sqlite_bind_text(*st, 2, session) != SQLITE_OK ||
		    (!drop && sqlite3_bind_int64(*st, 3, n) != SQLITE_OK) ||
		    sqlite3_step(*st) != SQLITE_DONE)
			rc = a2m_sqlite_db_fail(s, "counts");
		a2m_sqlite_done(*st);
		if (rc || sqlite3_changes(s->db) > 0)
			return rc;  /* taken (or failed): no row to drop */
	}
	return 0;
}

/* Counts the rows st has yet to give (seq, tier, session in columns 1..3). */
static int tail_add_rows(sqlstore *s, sqlite3_stmt *st, int step)
{
	for (; step == SQLITE_ROW; step = sqlite3_step(st)) {
		if (sqlite3_column_type(st, 1) == SQLITE_NULL)
			continue;  /* the LEFT JOIN's row when nothing is above the mark */
		const char *tier = (const char *)sqlite3_column_text(st, 2);
		const char *session = (const char *)sqlite3_column_text(st, 3);
		long k = a2m_sqlite_bucket_slot(&s->ctail, &s->ctail_n, &s->ctail_cap, tier, session);
		if (k < 0) {
			tail_lost(s);
			return a2m_store_fail(&s->base, "counts tail: out of memory");
		}
		s->ctail[k].n++;
		s->ctail_records++;
		s->ctail_top = sqlite3_column_int64(st, 1);
	}
	if (step == SQLITE_DONE)
		return 0;
	tail_lost(s);
	return a2m_sqlite_db_fail(s, "counts tail");
}

int a2m_sqlite_counts_sync(sqlstore *s)
{
	unsigned v = 0;
	int stamped = a2m_sqlite_data_version(s->db, &v);
	if (s->ctail_known && stamped && v == s->ctail_version)
		return 0;
	if (prepare(s, &s->ctail_rows, SQL_TAIL_ROWS))
		return A2M_INTERNAL_ERROR;
	sqlite3_stmt *st = s->ctail_rows;
	/* In the write transaction, the records it inserted are its pending
	** buckets', not the tail's: they are the seqs above seq_base. */
	int64_t upto = s->txn && s->seq_known ? s->seq_base : INT64_MAX;
	int rc = 0;
	for (int pass = 0; pass < 2; pass++) {
		int known = s->ctail_known;
		if (sqlite3_bind_int64(st, 1, known ? s->ctail_top : -1) != SQLITE_OK ||
		    sqlite3_bind_int64(st, 2, upto) != SQLITE_OK) {
			rc = a2m_sqlite_db_fail(s, "counts tail");
			break;
		}
		int step = sqlite3_step(st);
		if (step != SQLITE_ROW) {
			tail_lost(s);
			rc = a2m_sqlite_db_fail(s, "counts tail");
			break;
		}
		int64_t mark = sqlite3_column_int64(st, 0);
		if (known && mark != s->ctail_mark) {
			/* Written out by another connection: count again from the mark. */
			sqlite3_reset(st);
			tail_lost(s);
			continue;
		}
		if (!known) {
			tail_clear(s);
			s->ctail_mark = mark;
			s->ctail_top = mark;
		}
		s->ctail_known = 1;
		rc = tail_add_rows(s, st, step);
		break;
	}
	sqlite3_reset(st);
	if (!rc && s->ctail_known && stamped)
		s->ctail_version = v;
	else if (!rc)
		s->ctail_known = 0;  /* no version to keep it by: counted again next time */
	return rc;
}

int64_t a2m_sqlite_counts_tail(const sqlstore *s, const char *tier, int by_session,
			       const char *session)
{
	int64_t n = 0;
	if (s->counts_out)
		return 0;  /* written into a2m_counts by this transaction */
	for (size_t i = 0; i < s->ctail_n; i++) {
		const a2m_sqlite_bucket *b = &s->ctail[i];
		if ((!tier || a2m_str_same(b->tier, tier)) &&
		    (!by_session || a2m_str_same(b->session, session)))
			n += b->n;
	}
	return n;
}

int a2m_sqlite_counts_tail_out(sqlstore *s)
{
	int rc = a2m_sqlite_counts_sync(s);
	if (rc || s->counts_out)
		return rc;
	for (size_t i = 0; i < s->ctail_n && !rc; i++)
		if (s->ctail[i].n)
			rc = a2m_sqlite_counts_add(s, s->ctail[i].tier, s->ctail[i].session,
						   s->ctail[i].n);
	if (rc) {
		tail_lost(s);  /* partly written: the caller rolls back */
		return rc;
	}
	s->counts_out = 1;
	s->counts_out_mark = s->ctail_mark;
	return 0;
}

int a2m_sqlite_counts_mark(sqlstore *s, int64_t high)
{
	/* Nothing above the mark (no tail, no insert past it): it stays. */
	if (s->ctail_mark >= 0 && s->ctail_top <= s->counts_out_mark && high <= s->counts_out_mark)
		return 0;
	if (prepare(s, &s->counted_set, SQL_MARK_SET))
		return A2M_INTERNAL_ERROR;
	int rc = 0;
	int64_t m = 0;
	int step = sqlite3_bind_int64(s->counted_set, 1, high) == SQLITE_OK
		? sqlite3_step(s->counted_set) : SQLITE_ERROR;
	if (step == SQLITE_ROW) {
		m = sqlite3_column_int64(s->counted_set, 0);
		step = sqlite3_step(s->counted_set);
	}
	if (step != SQLITE_DONE)
		rc = a2m_sqlite_db_fail(s, "counts mark");
	a2m_sqlite_done(s->counted_set);
	if (rc)
		tail_lost(s);
	else
		s->counts_out_mark = m;
	return rc;
}

int a2m_sqlite_counts_cover(sqlstore *s, int64_t seq)
{
	/* A failed sync answers no: the flush that follows syncs again and
	** reports the failure. */
	if (a2m_sqlite_counts_sync(s) != 0 || !s->ctail_known)
		return 0;
	int64_t mark = s->counts_out ? s->counts_out_mark : s->ctail_mark;
	return mark >= 0 && seq > 0 && seq <= mark;
}

int a2m_sqlite_counts_defer(sqlstore *s, int64_t pending)
{
	if (s->counts_out || s->counts_force || a2m_sqlite_counts_sync(s) != 0)
		return 0;
	return s->ctail_mark >= 0 && s->ctail_records + pending <= COUNTS_TAIL_MAX;
}

int a2m_sqlite_counts_may_hold_tail(const sqlstore *s)
{
	return !s->ctail_known || s->ctail_records > 0;
}

void a2m_sqlite_counts_committed(sqlstore *s, int txn_known, unsigned txn_version)
{
	unsigned v = 0;
	int stamped = a2m_sqlite_data_version(s->db, &v);
	/* The tail is the file's only if it was at the version the
	** transaction began from (synced in it, or before and unchanged). */
	int held = s->ctail_known && txn_known && s->ctail_version == txn_version && stamped;
	if (s->counts_out) {
		tail_clear(s);
		s->ctail_mark = s->ctail_top = s->counts_out_mark;
	} else if (held) {
		/* The inserts' counts join the tail. */
		for (size_t i = 0; i < s->buckets_n && held; i++) {
			a2m_sqlite_bucket *b = &s->buckets[i];
			if (!b->n)
				continue;
			long k = a2m_sqlite_bucket_slot(&s->ctail, &s->ctail_n, &s->ctail_cap, b->tier,
						       b->session);
			if (k < 0) {
				held = 0;
				break;
			}
			s->ctail[k].n += b->n;
			s->ctail_records += b->n;
		}
		if (s->seq_known && s->seq_high > s->ctail_top)
			s->ctail_top = s->seq_high;
	}
	if (held || s->counts_out)
		s->ctail_version = v;
	if (!held && !s->counts_out)
		tail_lost(s);
	else
		s->ctail_known = stamped;
	s->counts_out = 0;
	s->counts_out_mark = 0;
	s->counts_force = 0;
}

void a2m_sqlite_counts_rolled_back(sqlstore *s)
{
	/* The file is as it was: the tail too, unless a write-out failed half way. */
	s->counts_out = 0;
	s->counts_out_mark = 0;
	s->counts_force = 0;
}
