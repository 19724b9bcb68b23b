/*
** sqlite_narrow.c — the SQLite engine's narrow writes: a few columns of one
** row by its seq, never the whole record, so its text is not read and its
** postings do not move. touch (recall's access count and time) and move (a
** tier and a salience: a spill, a promotion, a session's close).
**
** Apart from sqlite.c, whose writes go through the whole row and its
** postings, because a move keeps its own counts (schema step 11): the
** buckets it leaves and enters, reserved before its UPDATE and counted
** after it (sqlite_pending.c), the counts' tail written out first only
** for a record above the counts' mark (sqlite_counts.c).
*/
#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_bound.h"
#include "store/sqlite_internal.h"

static int step_once(sqlstore *s, sqlite3_stmt *st, const char *op)
{
	int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : a2m_sqlite_db_fail(s, op);
	a2m_sqlite_done(st);
	return rc;
}

/* An increment of the row as it is now (store.h): never a whole-record write. */
int a2m_sqlite_touch(a2m_store *base, int64_t seq, int64_t add, int64_t at)
{
	sqlstore *s = (sqlstore *)base;
	s->stamp++;
	int rc = a2m_sqlite_refuse_read_only(s, "touch");
	if (!rc)
		rc = a2m_sqlite_held_flush(s);
	if (!rc)
		rc = a2m_sqlite_txn_lost(s, "touch");
	if (rc)
		return rc;
	if (!s->touch && a2m_sqlite_prepare(s, &s->touch,
				 "UPDATE records SET access_count = access_count + ?2,"
				 " accessed_at = max(accessed_at, ?3) WHERE seq = ?1"))
		return A2M_INTERNAL_ERROR;
	if (sqlite3_bind_int64(s->touch, 1, seq) != SQLITE_OK ||
	    sqlite3_bind_int64(s->touch, 2, add) != SQLITE_OK ||
	    sqlite3_bind_int64(s->touch, 3, at) != SQLITE_OK)
		rc = a2m_sqlite_db_fail(s, "touch");
	else
		rc = step_once(s, s->touch, "touch");
	a2m_sqlite_done(s->touch);
	if (rc == 0) {
		a2m_row_cache_touch(s->rows, seq, add, at);
		a2m_sqlite_journal_touch(s, seq, add, at);
	} else {
		a2m_row_cache_forget(s->rows, seq);
		a2m_sqlite_journal_forget(s, seq);
	}
	return rc;
}

/*
** A tier move (store.h): tier and salience alone, so SQLite rewrites the row
** and its two indexes on tier (records_tier, records_unembedded), where an
** update of every column rewrites all eight indexes after reading the text
** to see whether it changed (a spill's move: 98k instructions as an
** update, callgrind; docs/BENCHMARKS.md). No trigger counts it (schema step
** 11): the transaction keeps its -1 and +1 and writes them at COMMIT
** (sqlite_pending.c), which needs the record counted in a2m_counts: one
** above the counts' mark has the tail written out first. The whole update
** instead outside a transaction, for a move into or out of the procedural
** mirror's tier (its files change), or once the vector cache is built (it
** keeps each vector's tier).
*/
int a2m_sqlite_move(a2m_store *base, const a2m_record *rec, const char *to, double salience,
		    int *moved)
{
	sqlstore *s = (sqlstore *)base;
	*moved = 0;
	if (!s->txn || a2m_sqlite_vectors_built(s->vectors) ||
	    (s->mirror && (a2m_sqlite_in_mirror_tier(s, rec->tier) ||
			   a2m_sqlite_in_mirror_tier(s, to))))
		return a2m_store_move_whole(base, rec, to, salience, moved);
	s->stamp++;
	int rc = a2m_sqlite_refuse_read_only(s, "move");
	if (!rc)
		rc = a2m_sqlite_held_flush(s);
	if (!rc)
		rc = a2m_sqlite_txn_lost(s, "move");
	/* Its count moves in a2m_counts, which must hold it: a record above
	** the counts' mark is only in the tail (sqlite_counts.c). */
	if (!rc && !a2m_sqlite_counts_cover(s, rec->seq))
		rc = a2m_sqlite_pending_flush(s);
	if (!rc)
		rc = a2m_sqlite_bound_raise(s, salience);
	size_t out = 0, in = 0;
	if (!rc)
		rc = a2m_sqlite_pending_move_reserve(s, rec->tier, to, rec->session, &out, &in);
	if (rc)
		return rc;
	/* The session too: the bucket whose count moves is (tier, session). */
	if (!s->move && a2m_sqlite_prepare(s, &s->move,
				"UPDATE records SET tier = ?4, salience = ?5"
				" WHERE seq = ?1 AND id = ?2 AND tier IS ?3 AND session IS ?6"))
		return A2M_INTERNAL_ERROR;
	if (sqlite3_bind_int64(s->move, 1, rec->seq) != SQLITE_OK ||
	    a2m_sqlite_bind_text(s->move, 2, rec->id) != SQLITE_OK ||
	    a2m_sqlite_bind_text(s->move, 3, rec->tier) != SQLITE_OK ||
	    a2m_sqlite_bind_text(s->move, 4, to) != SQLITE_OK ||
	    sqlite3_bind_double(s->move, 5, salience) != SQLITE_OK ||
	    a2m_sqlite_bind_text(s->move, 6, rec->session) != SQLITE_OK)
		rc = a2m_sqlite_db_fail(s, "move");
	else
		rc = step_once(s, s->move, "move");
	a2m_sqlite_done(s->move);
	if (!rc && sqlite3_changes(s->db) > 0) {
		*moved = 1;
		a2m_sqlite_pending_moved(s, out, in);
		/* The readers' caches too, at commit (sqlite.c, forget_row). */
		a2m_sqlite_journal_forget(s, rec->seq);
		a2m_row_cache_forget(s->rows, rec->seq);
	}
	return rc;
}
