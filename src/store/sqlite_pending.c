/*
** sqlite_pending.c — what a write transaction of the SQLite engine owes the
** file at COMMIT: the records it inserted, counted per (tier, session)
** bucket for a2m_counts, and the highest seq it gave out.
**
** Why: an AFTER INSERT trigger kept a2m_counts, and AUTOINCREMENT kept
** sqlite_sequence, each with a write per inserted record; together about
** a third of a batched remember's CPU (schema step 8, sqlite_schema.c).
** Kept here, a batch of 500 records in one session writes one count row
** and one seq row.
**
** Counts: an insert reserves its bucket before its statement runs (so no
** allocation can fail after the row is in) and adds to it once the row is
** in; a failed insert adds nothing, which is all its undo needs. count()
** by tier or session adds the buckets still pending to a2m_counts' rows
** (sqlite_read.c). A transaction of inserts only leaves its buckets out
** of the file at COMMIT: they join the counts' tail (sqlite_counts.c),
** written with a later commit. The delete and update triggers still keep
** a2m_counts, and they need every record counted: update and remove write
** the tail and the pending buckets first (a2m_sqlite_pending_flush).
**
** Moves: a tier move (sqlite_narrow.c) fires no trigger (schema step 11).
** It reserves the two buckets of its record's session, the one it leaves
** and the one it enters, before its UPDATE, and counts -1 and +1 there
** once the row moved. Its record is counted in a2m_counts (under the
** counts' mark: one above it has the tail written out first), so these
** are written into a2m_counts, never into the tail: at COMMIT, netted per
** bucket (a lone write spilling working into episodic and episodic into
** semantic writes two rows, where the trigger ran twice: ~31 k
** instructions a run), and before any trigger runs (at a flush).
**
** Seqs: records has no AUTOINCREMENT (step 8), so SQLite alone would give
** a removed newest record's seq again. The next seq is one above the
** higher of max(seq) and a2m_meta's row 'seq' (the mark), read at the
** first insert of a transaction (BEGIN IMMEDIATE holds the write lock, so
** another process sharing the file cannot move either meanwhile). The
** mark only has to be at least every seq that was ever removed, so an
** insert leaves it alone (max(seq) already covers its record: a lone
** insert wrote one a2m_meta page for it, about 7 k instructions, 1 of 7.7
** pages) and a remove raises it to max(seq) before its DELETE
** (a2m_sqlite_pending_guard): the first remove after a run of inserts
** writes it, the others find it high enough. While no commit came after
** this connection's last (a2m_sqlite_after_holds), the highest seq that
** commit left is taken instead of read: a lone insert's transaction reads
** nothing.
*/
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_internal.h"
#include "util/text.h"

/*
** Buckets one transaction keeps before writing them out: a batch spread
** over more sessions pays a write per bucket as the triggers did, not a
** search through a long list per insert.
*/
#define PENDING_BUCKETS_MAX 64

#define SQL_SEQ_GET \
	"SELECT max(ifnull((SELECT CAST(value AS INTEGER) FROM a2m_meta" \
	" WHERE name = 'seq'), 0), ifnull((SELECT max(seq) FROM records), 0))"
/* The mark raised to max(seq) when below it; nothing written otherwise. */
#define SQL_SEQ_GUARD \
	"INSERT INTO a2m_meta(name, value) SELECT 'seq', m FROM (SELECT max(seq) AS m" \
	" FROM records) WHERE m > ifnull((SELECT CAST(value AS INTEGER) FROM a2m_meta" \
	" WHERE name = 'seq'), 0) ON CONFLICT(name) DO UPDATE SET value = excluded.value"

static int prepare(sqlstore *s, sqlite3_stmt **st, const char *sql)
{
	if (!*st && sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL)
	    != SQLITE_OK)
		return a2m_sqlite_db_fail(s, "prepare");
	return 0;
}

void a2m_sqlite_pending_drop(sqlstore *s)
{
	a2m_sqlite_buckets_clear(s->buckets, &s->buckets_n);
	a2m_sqlite_buckets_clear(s->moved, &s->moved_n);
	s->seq_known = 0;
}

void a2m_sqlite_pending_free(sqlstore *s)
{
	a2m_sqlite_pending_drop(s);
	free(s->buckets);
	free(s->moved);
	s->buckets = s->moved = NULL;
	s->buckets_cap = s->moved_cap = 0;
	sqlite3_finalize(s->seq_get);
	sqlite3_finalize(s->seq_guard);
	s->seq_get = s->seq_guard = NULL;
}

/*
** The counts of the *n buckets of v into a2m_counts (an insert's or a move's
** plus, a move's minus; a bucket the moves left as it was writes nothing).
** A bucket leaves the list once its row is written, so after a failure
** (the caller then fails its write, and the transaction is rolled back)
** the list still holds exactly what the file lacks.
*/
static int buckets_write(sqlstore *s, a2m_sqlite_bucket *v, size_t *n)
{
	int rc = 0;
	size_t kept = 0;
	for (size_t i = 0; i < *n; i++) {
		a2m_sqlite_bucket *b = &v[i];
		if (!rc && b->n > 0)
			rc = a2m_sqlite_counts_add(s, b->tier, b->session, b->n);
		else if (!rc && b->n < 0)
			rc = a2m_sqlite_counts_take(s, b->tier, b->session, -b->n);
		if (rc && b->n) {
			v[kept++] = *b;
			continue;
		}
		free(b->tier);
		free(b->session);
	}
	*n = kept;
	return rc;
}

/* The moves' counts: written at COMMIT, at a flush, or when the list is full. */
static int moves_write(sqlstore *s)
{
	return buckets_write(s, s->moved, &s->moved_n);
}

/* The counts' tail, then the inserts' buckets, then the moves', then the mark. */
int a2m_sqlite_pending_flush(sqlstore *s)
{
	int rc = a2m_sqlite_counts_tail_out(s);
	if (!rc)
		rc = buckets_write(s, s->buckets, &s->buckets_n);
	if (!rc)
		rc = moves_write(s);
	return rc ? rc : a2m_sqlite_counts_mark(s, s->seq_known ? s->seq_high : 0);
}

int a2m_sqlite_pending_reserve(sqlstore *s, const char *tier, const char *session,
			       int64_t *seq, size_t *bucket)
{
	if (!s->seq_known && s->after_seq && a2m_sqlite_after_holds(s)) {
		/* As our last commit left them: no one wrote since. */
		s->seq_high = s->seq_base = s->after_seq_high;
		s->seq_known = 1;
	}
	if (!s->seq_known) {
		int rc = prepare(s, &s->seq_get, SQL_SEQ_GET);
		if (rc)
			return rc;
		if (sqlite3_step(s->seq_get) != SQLITE_ROW) {
			rc = a2m_sqlite_db_fail(s, "seq");
			a2m_sqlite_done(s->seq_get);
			return rc;
		}
		s->seq_high = s->seq_base = sqlite3_column_int64(s->seq_get, 0);
		a2m_sqlite_done(s->seq_get);
		/* The mark read is only ours while this transaction holds the lock. */
		s->seq_known = 1;
	}
	*seq = s->seq_high + 1;
	if (s->buckets_n == PENDING_BUCKETS_MAX && a2m_sqlite_pending_flush(s))
		return A2M_INTERNAL_ERROR;
	long k = a2m_sqlite_bucket_slot(&s->buckets, &s->buckets_n, &s->buckets_cap, tier, session);
	if (k >= 0) {
		*bucket = (size_t)k;
		return 0;
	}
	return a2m_store_fail(&s->base, "counts: out of memory");
}

void a2m_sqlite_pending_add(sqlstore *s, size_t bucket, int64_t seq)
{
	s->buckets[bucket].n++;
	if (seq > s->seq_high)
		s->seq_high = seq;
}

int a2m_sqlite_pending_move_reserve(sqlstore *s, const char *from, const char *to,
				    const char *session, size_t *out, size_t *in)
{
	/* Two slots at most are added: a full list is written out first. */
	if (s->moved_n + 2 > PENDING_BUCKETS_MAX && moves_write(s))
		return A2M_INTERNAL_ERROR;
	long o = a2m_sqlite_bucket_slot(&s->moved, &s->moved_n, &s->moved_cap, from, session);
	long i = o < 0 ? -1
		 : a2m_sqlite_bucket_slot(&s->moved, &s->moved_n, &s->moved_cap, to, session);
	if (i < 0)
		return a2m_store_fail(&s->base, "counts: out of memory");
	*out = (size_t)o;
	*in = (size_t)i;
	return 0;
}

void a2m_sqlite_pending_moved(sqlstore *s, size_t out, size_t in)
{
	s->moved[out].n--;
	s->moved[in].n++;
}

/* What list v of n buckets holds for a count by tier and session. */
static int64_t buckets_count(const a2m_sqlite_bucket *v, size_t n, const char *tier,
			     int by_session, const char *session)
{
	int64_t c = 0;
	for (size_t i = 0; i < n; i++)
		if ((!tier || a2m_str_same(v[i].tier, tier)) &&
		    (!by_session || a2m_str_same(v[i].session, session)))
			c += v[i].n;
	return c;
}

int64_t a2m_sqlite_pending_count(const sqlstore *s, const char *tier, int by_session,
				 const char *session)
{
	return buckets_count(s->buckets, s->buckets_n, tier, by_session, session) +
	       buckets_count(s->moved, s->moved_n, tier, by_session, session);
}

int a2m_sqlite_pending_write(sqlstore *s)
{
	if (sqlite3_get_autocommit(s->db))
		return 0;
	/* The moves are of counted records: they go into a2m_counts now. The
	** inserts may wait in the tail. */
	int64_t inserts = buckets_count(s->buckets, s->buckets_n, NULL, 0, NULL);
	if (!a2m_sqlite_counts_defer(s, inserts))
		return a2m_sqlite_pending_flush(s);
	return moves_write(s);
}

int a2m_sqlite_pending_guard(sqlstore *s)
{
	if (prepare(s, &s->seq_guard, SQL_SEQ_GUARD))
		return A2M_INTERNAL_ERROR;
	int rc = sqlite3_step(s->seq_guard) == SQLITE_DONE ? 0 : a2m_sqlite_db_fail(s, "seq");
	a2m_sqlite_done(s->seq_guard);
	return rc;
}
