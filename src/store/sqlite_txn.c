/*
** sqlite_txn.c — the SQLite engine's transactions (begin, relaxed begin,
** commit, rollback) and store-level settings (meta_get, meta_set); the
** read brackets are sqlite_pool.c's.
**
** Apart from sqlite.c because a commit is where the engine's side state
** lands or is dropped together with the records: the held inserts' rows
** (sqlite_held.c), the term index's buffered postings, the counts of the
** inserts (sqlite_pending.c, or the counts' tail: sqlite_counts.c), the vector rows' staged changes
** (sqlite_vectors.c) and the procedural mirror's notes.
*/
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_bound.h"
#include "store/sqlite_internal.h"
#include "util/phase.h"

#ifdef A2M_TEST_HOOKS
static char *doom_prefix;

void a2m_sqlite_fail_commits_for_tests(const char *prefix)
{
	free(doom_prefix);
	doom_prefix = prefix ? strdup(prefix) : NULL;
}

void a2m_sqlite_commit_doom_for_tests(sqlstore *s, const char *key)
{
	if (doom_prefix && key && strncmp(key, doom_prefix, strlen(doom_prefix)) == 0)
		s->doomed = 1;
}
#endif

/* ---- transactions ------------------------------------------------------ */

/*
** BEGIN IMMEDIATE takes the write lock up front (waiting up to the busy
** timeout). A deferred BEGIN would take it at the first write, and if another
** connection had written since our first read, that write would fail with
** SQLITE_BUSY half way through the batch, which busy_timeout cannot cure.
*/
int a2m_sqlite_begin(a2m_store *base)
{
	sqlstore *s = (sqlstore *)base;
	/* A read bracket's snapshot may be older than the file: upgrading it
	** to a writer would fail with SQLITE_BUSY_SNAPSHOT (store.h). */
	a2m_sqlite_read_end(base);
	int rc = s->base.read_only ? 0 : a2m_sqlite_sync_refuse(s);
	if (rc)
		return rc;
	s->txn_relaxed = 0;
#ifdef A2M_TEST_HOOKS
	s->doomed = 0;
#endif
	a2m_phase was = a2m_phase_enter(A2M_PHASE_BEGIN);
	rc = sqlite3_step(s->begin);
	a2m_phase_leave(was);
	rc = rc == SQLITE_DONE ? 0 : a2m_sqlite_db_fail(s, "begin");
	a2m_sqlite_done(s->begin);
	if (!rc) {
		s->txn = 1;
		a2m_sqlite_vectors_begin(s->vectors);
		/* With the write lock held, this version counts every commit
		** but the ones this transaction will make (see caches_committed). */
		unsigned v = 0;
		s->txn_versioned = a2m_sqlite_data_version(s->db, &v);
		s->txn_version = v;
		if (!a2m_sqlite_after_holds(s))
			s->stamp++;  /* another commit may have changed records */
		s->rows_unsure = 0;
		a2m_sqlite_journal_drop(s);
		a2m_sqlite_pending_drop(s);
		a2m_sqlite_held_drop(s);
		if (s->index && !s->base.read_only &&
		    (rc = a2m_sqlite_index_begin(s->index, base)) != 0)
			a2m_sqlite_rollback(base);  /* the tail could not be read */
	}
	return rc;
}

int a2m_sqlite_after_holds(const sqlstore *s)
{
	return s->after_known && s->txn_versioned && (unsigned)s->txn_version == s->after_version;
}

/*
** After this connection's commit: the caches read at the version the
** transaction began from stay valid at the new one, but for what the
** transaction wrote (postings empty their cache when written, records are
** forgotten one by one as they are written). Anything unsure empties them.
** And what the commit left in the file, for the next one (after_*):
** seq_known is the transaction's, read before the pending state is dropped.
*/
static void caches_committed(sqlstore *s, int seq_known)
{
	unsigned v = 0;
	int known = s->txn_versioned && a2m_sqlite_data_version(s->db, &v);
	int carry = a2m_sqlite_after_holds(s);
	if (seq_known) {
		/* The highest seq given out: the next insert's base. */
		s->after_seq = 1;
		s->after_seq_high = s->seq_high;
	} else if (!carry) {
		s->after_seq = 0;  /* no insert, and another commit came before */
	}
	/* No number taken (no reader yet): the file's is still the last one's. */
	s->after_number = s->staged ? s->staged_no : carry ? s->after_number : 0;
	/* A commit without a number that was in before any reader began to
	** open is in every reader's first snapshot: nothing to answer for. */
	if (s->staged || !a2m_sqlite_pool_readers_seen(s->pool))
		s->unnumbered = 0;
	s->after_known = known;
	s->after_version = v;
	if (s->rows) {
		if (known && !s->rows_unsure)
			a2m_row_cache_adopt(s->rows, s->txn_version, v);
		else
			a2m_row_cache_clear(s->rows);
	}
	if (s->index && known)
		a2m_sqlite_index_committed(s->index, s->txn_version, v);
	a2m_sqlite_bound_committed(s, known, v);
	s->txn_versioned = 0;
	s->rows_unsure = 0;
}

/* Puts synchronous back to the configured level after a relaxed transaction. */
static void end_relaxed(sqlstore *s)
{
	s->txn_relaxed = 0;
	if (!s->relaxed)
		return;
	s->relaxed = 0;
	if (sqlite3_exec(s->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL) != SQLITE_OK)
		a2m_sqlite_db_fail(s, "synchronous");
}

/*
** In WAL mode a commit under synchronous=NORMAL skips the fsync of the log;
** the frames are still in order, so the next durable commit makes them
** durable too, and a crash of the process loses nothing. Only a power loss
** can take the bookkeeping of the last moments, never acknowledged data.
*/
int a2m_sqlite_begin_relaxed(a2m_store *base)
{
	sqlstore *s = (sqlstore *)base;
	a2m_sqlite_read_end(base);  /* before the PRAGMA, as in a2m_sqlite_begin() */
	if (s->synchronous_full && !s->base.read_only) {
		if (sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK)
			return a2m_sqlite_db_fail(s, "synchronous");
		s->relaxed = 1;
	}
	int rc = a2m_sqlite_begin(base);
	if (rc)
		end_relaxed(s);
	else
		s->txn_relaxed = 1;  /* group commit owes no sync for it (sqlite_sync.c) */
	return rc;
}

/*
** Found by test_faults (a session close under SQLite allocation failures):
** an UPDATE whose statement savepoint could not be released for memory
** made SQLite roll the whole transaction back, and sqlite3_step, finding
** the schema changed since the statement was prepared, prepared it again
** and ran it once more, now outside any transaction: it committed on its
** own and step answered SQLITE_DONE. The first half of a group's move
** stood while the request answered an error. So while the caller's
** transaction is open, any commit but commit()'s own is refused (SQLite
** then undoes it), and the write fails.
*/
static int on_commit(void *ctx)
{
	sqlstore *s = ctx;
	if (s->txn && !s->committing)
		return 1;  /* non-zero: SQLite rolls the commit back */
	a2m_sqlite_sync_committed(s);
	return 0;
}

void a2m_sqlite_txn_hook(sqlstore *s)
{
	sqlite3_commit_hook(s->db, on_commit, s);
}

/*
** A failed COMMIT is rolled back here if SQLite left the transaction open,
** so the outcome is always definite: success, or nothing written.
*/
int a2m_sqlite_txn_lost(sqlstore *s, const char *op)
{
	if (!s->txn || !sqlite3_get_autocommit(s->db))
		return 0;
	return a2m_store_fail(&s->base, "%s: the transaction was rolled back after an earlier "
			      "failure", op);
}

int a2m_sqlite_commit(a2m_store *base)
{
	sqlstore *s = (sqlstore *)base;
	/* The rows first: the postings, counts and seq mark are theirs. */
	int rc = a2m_sqlite_txn_lost(s, "commit");
	a2m_phase was = a2m_phase_enter(A2M_PHASE_FLUSH);
	if (!rc)
		rc = a2m_sqlite_held_flush(s);
	if (!rc && s->index && !sqlite3_get_autocommit(s->db))
		rc = a2m_sqlite_index_flush(s->index, base);
	if (!rc)
		rc = a2m_sqlite_pending_write(s);
	/* The readers' journal entry, and the number it goes by in the file:
	** the last write, so nothing after it can leave notes out. */
	if (!rc)
		rc = a2m_sqlite_journal_stage(s);
#ifdef A2M_TEST_HOOKS
	if (!rc && s->doomed)
		rc = a2m_store_fail(&s->base, "commit: refused by the test");
	s->doomed = 0;
#endif
	a2m_phase_enter(A2M_PHASE_COMMIT);
	if (!rc) {
		s->committing = 1;
		rc = sqlite3_step(s->commit);
		s->committing = 0;
		rc = rc == SQLITE_DONE ? 0 : a2m_sqlite_db_fail(s, "commit");
		a2m_sqlite_done(s->commit);
		if (rc)
			a2m_sqlite_journal_unstage(s);
	}
	a2m_phase_leave(was);
	int seq_known = s->seq_known;
	if (rc)
		a2m_sqlite_counts_rolled_back(s);
	else
		a2m_sqlite_counts_committed(s, s->txn_versioned, (unsigned)s->txn_version);
	a2m_sqlite_pending_drop(s);  /* written, kept in the counts' tail, or rolled back below */
	a2m_sqlite_held_drop(s);
	if (rc)
		a2m_sqlite_journal_drop(s);
	if (rc && s->index)
		a2m_sqlite_index_discard(s->index);
	if (rc && !sqlite3_get_autocommit(s->db)) {
		sqlite3_step(s->rollback);
		a2m_sqlite_done(s->rollback);
	}
	if (rc)
		a2m_sqlite_vectors_rollback(s->vectors);
	else
		a2m_sqlite_vectors_commit(s->vectors);
	if (!rc && s->index)
		a2m_sqlite_index_txn_done(s->index);
	if (!rc) {
		caches_committed(s, seq_known);
	} else {
		s->stamp++;
		s->after_known = 0;
		a2m_sqlite_bound_forget(s);
		a2m_row_cache_clear(s->rows);  /* it holds the touches just undone */
	}
	if (rc)
		a2m_mirror_discard(s->mirror);
	else
		a2m_sqlite_mirror_apply(s);
	s->txn = 0;
	end_relaxed(s);
	return rc;
}

/* A no-op when no transaction is open (for instance after a failed commit). */
void a2m_sqlite_rollback(a2m_store *base)
{
	sqlstore *s = (sqlstore *)base;
	s->stamp++;
	a2m_sqlite_bound_forget(s);
	a2m_mirror_discard(s->mirror);
	a2m_sqlite_vectors_rollback(s->vectors);
	a2m_row_cache_clear(s->rows);  /* it holds the touches just undone */
	a2m_sqlite_journal_drop(s);
	a2m_sqlite_counts_rolled_back(s);
	a2m_sqlite_pending_drop(s);
	a2m_sqlite_held_drop(s);
	s->after_known = 0;
	if (s->index)
		a2m_sqlite_index_discard(s->index);
	if (!sqlite3_get_autocommit(s->db)) {
		if (sqlite3_step(s->rollback) != SQLITE_DONE)
			a2m_sqlite_db_fail(s, "rollback");
		a2m_sqlite_done(s->rollback);
	}
	s->txn = 0;
	end_relaxed(s);
}

/* ---- store-level settings --------------------------------------------- */

int a2m_sqlite_meta_get(a2m_store *base, const char *name, char **value)
{
	sqlstore *s = (sqlstore *)base;
	int rc = 0;
	*value = NULL;
	if (!name) {
		a2m_store_fail(base, "meta_get: no name");
		return A2M_INVALID_PARAMS;
	}
	if (a2m_sqlite_bind_text(s->meta_get, 1, name) != SQLITE_OK) {
		rc = a2m_sqlite_db_fail(s, "meta_get");
		goto out;
	}
	int step = sqlite3_step(s->meta_get);
	if (step == SQLITE_ROW)
		rc = a2m_sqlite_column_text(s, s->meta_get, 0, value);
	else if (step != SQLITE_DONE)
		rc = a2m_sqlite_db_fail(s, "meta_get");
out:
	a2m_sqlite_done(s->meta_get);
	return rc;
}

int a2m_sqlite_meta_set(a2m_store *base, const char *name, const char *value)
{
	sqlstore *s = (sqlstore *)base;
	sqlite3_stmt *st = value ? s->meta_set : s->meta_del;
	int rc = a2m_sqlite_refuse_read_only(s, "meta_set");
	if (!rc)
		rc = a2m_sqlite_held_flush(s);
	if (!rc)
		rc = a2m_sqlite_txn_lost(s, "meta_set");
	if (rc)
		return rc;
	if (!name) {
		a2m_store_fail(base, "meta_set: no name");
		return A2M_INVALID_PARAMS;
	}
	if (a2m_sqlite_bind_text(st, 1, name) != SQLITE_OK ||
	    (value && a2m_sqlite_bind_text(st, 2, value) != SQLITE_OK) ||
	    sqlite3_step(st) != SQLITE_DONE)
		rc = a2m_sqlite_db_fail(s, "meta_set");
	a2m_sqlite_done(st);
	return rc;
}
