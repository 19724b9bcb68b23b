/*
** sqlite.c — the SQLite storage engine: one database file (DESIGN §5).
** This file opens and closes it, holds the ops table and does the writes
** (insert, update, remove, touch) with their postings and mirror notes;
** sqlite_internal.h lists the other files of the engine and their jobs.
**
** The file is opened in WAL mode with synchronous=FULL by default, so a
** write the caller acknowledges after commit() survives a crash or power
** loss; NORMAL trades the last commits on power loss for speed. Every value
** reaches SQLite through a bound parameter: the only SQL text built at run
** time is the WHERE clause of scan/count (sqlite_read.c) and the row list
** of the held inserts (sqlite_held.c), assembled from fixed fragments.
** The schema and its migrations are in sqlite_schema.c.
**
** Read-only (a2m_sqlite_options.read_only) opens with SQLITE_OPEN_READONLY,
** creates and migrates nothing, and refuses every write with A2M_READ_ONLY
** before SQLite sees it, so the refusal is the same whatever the file's
** permissions. With a procedural tier, the engine notes each write that may
** change a mirrored file and hands the notes to mirror.c after the commit
** (sqlite_mirror.c).
**
** Once an analyser is attached (index_attach), every write also keeps the
** term index (sqlite_index.c) in the same transaction: its postings are
** buffered and written just before COMMIT (a write outside a transaction
** gets its own BEGIN IMMEDIATE ... COMMIT), so a record and its postings are
** one change. Without an analyser, a write marks the index stale instead,
** and the next attach rebuilds it.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_check.h"
#include "store/sqlite_bound.h"
#include "store/sqlite_internal.h"
#include "store/sqlite_walvfs.h"

/* WAL pages (4 KiB) between checkpoints once an index is kept (sqlite_checkpoint.c). */
#define A2M_SQLITE_CHECKPOINT_PAGES 10000

/*
** The records kept from reads by seq (row_cache.h): enough for the
** candidates of a few hundred different recalls, within 32 MiB.
*/
#define ROW_CACHE_ROWS   16384
#define ROW_CACHE_BUDGET ((size_t)32 << 20)

/* ?1 is the id; ?2..?20 the other fields, as a2m_sqlite_bind_record() binds them. */
#define SQL_UPDATE \
	"UPDATE records SET content = ?2, created_at = ?3, role = ?4," \
	" metadata = ?5, grp = ?6, tier = ?7, salience = ?8, accessed_at = ?9," \
	" access_count = ?10, owner = ?11, session = ?12, key = ?13," \
	" revision = ?14, embedding = ?15, uri = ?16, media_type = ?17," \
	" gen_embedding = ?18, expires_at = ?19, fp = ?20" \
	" WHERE id = ?1"
/* Written with records_owner_key's own expression so that index serves it. */
#define SQL_GET_BY_KEY \
	"SELECT " COLUMNS " FROM records" \
	" WHERE ifnull(owner, x'') = ifnull(?1, x'') AND key = ?2"
#define SQL_META_SET \
	"INSERT INTO a2m_meta(name, value) VALUES(?1, ?2)" \
	" ON CONFLICT(name) DO UPDATE SET value = excluded.value"
/*
** count() by tier, session or both, from a2m_counts (migration 4): ?1 the
** tier, ?2 the session, NULL for "no session" (stored as x'').
*/
#define SQL_COUNT_TIER \
	"SELECT ifnull(sum(n), 0) FROM a2m_counts WHERE tier = ?1"
#define SQL_COUNT_BUCKET \
	"SELECT ifnull(sum(n), 0) FROM a2m_counts" \
	" WHERE tier = ?1 AND session = ifnull(?2, x'')"
#define SQL_COUNT_SESSION \
	"SELECT ifnull(sum(n), 0) FROM a2m_counts WHERE session = ifnull(?2, x'')"

/* Every write checks this first: a read-only store refuses before SQLite sees it. */
int a2m_sqlite_refuse_read_only(sqlstore *s, const char *op)
{
	if (!s->base.read_only)
		return 0;
	a2m_store_fail(&s->base, "%s: the store is read-only", op);
	return A2M_READ_ONLY;
}

/* ---- one write with its postings ----------------------------------------- */

/*
** A write and its postings must land together. Inside the caller's
** transaction the postings are buffered (sqlite_index.c), room for them
** reserved before the record statement runs; if the write fails, the buffer
** goes back to where it was, and the statement itself was undone by SQLite.
** Outside a transaction the write is one of its own: a2m_sqlite_begin and
** a2m_sqlite_commit (or rollback), so the held row, the postings, the
** counts and seq mark (sqlite_pending.c) and the readers' journal entry
** land just as a caller's transaction lands them.
*/
typedef struct write_ctx {
	int                    active;
	int                    outer;   /* we opened the transaction */
	a2m_sqlite_index_point mark;
} write_ctx;

static int step_once(sqlstore *s, sqlite3_stmt *st, const char *op)
{
	int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : a2m_sqlite_db_fail(s, op);
	a2m_sqlite_done(st);
	return rc;
}

/* Opens a write whose postings are a and b (either may be NULL). */
static int write_open(sqlstore *s, write_ctx *w, const a2m_doc_terms *a,
		      const a2m_doc_terms *b)
{
	memset(w, 0, sizeof *w);
	int rc = a2m_sqlite_txn_lost(s, "write");
	if (rc)
		return rc;
	w->outer = sqlite3_get_autocommit(s->db);
	/* On its own, a write is a transaction of its own, begun and ended as
	** any other (sqlite_txn.c), so it lands with everything a commit
	** writes: the readers' journal entry too, without which a reader kept
	** the rows and postings such a write changed. Begun first: the begin
	** brings the index's tail up to date, which moves its buffer. */
	rc = w->outer ? a2m_sqlite_begin(&s->base) : 0;
	if (!rc && s->index && a2m_sqlite_index_reserve(s->index, a, b) != 0) {
		rc = a2m_store_fail(&s->base, "index: out of memory");
		if (w->outer)
			a2m_sqlite_rollback(&s->base);
	}
	if (!rc && s->index)
		a2m_sqlite_index_mark(s->index, &w->mark);
	w->active = rc == 0;
	return rc;
}

/* Ends the write with outcome rc: keeps it when 0, undoes it otherwise. */
static int write_close(sqlstore *s, write_ctx *w, int rc)
{
	if (!w->active)
		return rc;
	if (w->outer) {
		if (rc)
			a2m_sqlite_rollback(&s->base);
		else
			rc = a2m_sqlite_commit(&s->base);
	} else if (rc && s->index) {
		a2m_sqlite_index_undo(s->index, &w->mark);
	}
	return rc;
}

/*
** Before a write without an analyser: the index will no longer match the
** records, so forget which analyser built it; the next attach rebuilds.
*/
static int mark_stale(sqlstore *s)
{
	if (s->index)
		return 0;
	int rc = a2m_sqlite_txn_lost(s, "index");
	return rc ? rc : step_once(s, s->stale, "index");
}

/* ---- writes ------------------------------------------------------------ */

/*
** The row itself is held (sqlite_held.c) and written with others in one
** statement, at the latest before the next op's first statement or the
** COMMIT; everything else is done now, so the row's seq, postings, counts
** and vector are pending together. A duplicate id or (owner, key) trips a
** UNIQUE constraint there: the caller hears A2M_INVALID_PARAMS, from this
** insert outside a transaction (nothing written), inside one from the op
** that wrote the rows, and then rolls back.
*/
static int sql_insert(a2m_store *base, a2m_record *rec)
{
	sqlstore *s = (sqlstore *)base;
	s->stamp++;
	a2m_doc_terms dt;
	write_ctx w;
	memset(&dt, 0, sizeof dt);
	int rc = a2m_sqlite_refuse_read_only(s, "insert");
	if (!rc)
		rc = a2m_store_check_record(&s->base, rec, "insert");
	if (!rc && s->index)
		rc = a2m_sqlite_index_analyze(s->index, base, rec->content, &dt);
	if (!rc)
		rc = mark_stale(s);
	if (!rc)
		rc = write_open(s, &w, &dt, NULL);
	if (rc) {
		a2m_sqlite_index_release(s->index, &dt);
		return rc;
	}
#ifdef A2M_TEST_HOOKS
	a2m_sqlite_commit_doom_for_tests(s, rec->key);
#endif
	int64_t seq = 0;
	size_t bucket = 0;
	rc = a2m_sqlite_bound_raise(s, rec->salience);
	if (!rc)
		rc = a2m_sqlite_pending_reserve(s, rec->tier, rec->session, &seq, &bucket);
	if (!rc)
		rc = a2m_sqlite_held_put(s, rec, seq);
	if (!rc) {
		a2m_sqlite_pending_add(s, bucket, seq);
		if (s->index)
			a2m_sqlite_index_apply(s->index, seq, &dt, 1);
	}
	rc = write_close(s, &w, rc);
	a2m_sqlite_index_release(s->index, &dt);
	if (rc == 0) {
		rec->seq = seq;
		a2m_sqlite_vectors_put(s->vectors, rec, seq);
	}
	if (rc == 0 && s->mirror && a2m_sqlite_in_mirror_tier(s, rec->tier)) {
		a2m_mirror_note(s->mirror, rec->id, NULL);
		a2m_sqlite_after_write(s);
	}
	return rc;
}

/*
** The row cache must not outlive a record this connection rewrites: it is
** forgotten now (the cache is not read inside a write transaction, and a
** rollback only costs a read); a record whose seq the index could not give
** empties the whole cache at commit.
*/
static void forget_row(sqlstore *s, int64_t seq)
{
	a2m_sqlite_journal_forget(s, seq);  /* the readers' caches too, at commit */
	if (seq)
		a2m_row_cache_forget(s->rows, seq);
	else
		s->rows_unsure = 1;
}

static int sql_update(a2m_store *base, const a2m_record *rec)
{
	sqlstore *s = (sqlstore *)base;
	s->stamp++;
	char *old_name = NULL;
	int was_in = 0, same = 0, found = 0, changed = 0;
	int64_t seq = 0;
	a2m_doc_terms old_dt, new_dt;
	write_ctx w;
	memset(&old_dt, 0, sizeof old_dt);
	memset(&new_dt, 0, sizeof new_dt);
	int rc = a2m_sqlite_refuse_read_only(s, "update");
	if (!rc)
		rc = a2m_sqlite_held_flush(s);
	if (!rc)
		rc = a2m_store_check_record(&s->base, rec, "update");
	if (!rc && s->mirror)
		rc = a2m_sqlite_mirror_before(s, rec->id, rec, &was_in, &same, &old_name);
	/* Only a change of content re-indexes: touches and tier moves do not. */
	if (!rc && s->index)
		rc = a2m_sqlite_index_old_terms(s->index, base, rec->id, rec->content, &seq,
						&old_dt, &found, &changed);
	if (!rc && changed)
		rc = a2m_sqlite_index_analyze(s->index, base, rec->content, &new_dt);
	if (!rc)
		rc = mark_stale(s);
	if (!rc)
		rc = write_open(s, &w, &old_dt, &new_dt);
	if (rc) {
		a2m_sqlite_index_release(s->index, &old_dt);
		a2m_sqlite_index_release(s->index, &new_dt);
		free(old_name);
		return rc;
	}
	forget_row(s, found ? seq : 0);
	/* The update trigger moves a count between rows that must be there. */
	if ((rc = a2m_sqlite_bound_raise(s, rec->salience)) || (rc = a2m_sqlite_pending_flush(s)))
		goto out;
	if (a2m_sqlite_bind_record(s->update, 0, rec) != SQLITE_OK) {
		rc = a2m_sqlite_db_fail(s, "update");
		goto out;
	}
	int step = sqlite3_step(s->update);
	if (step == SQLITE_DONE) {
		if (sqlite3_changes(s->db) == 0) {
			a2m_store_fail(base, "update: no record \"%s\"", rec->id);
			rc = A2M_UNKNOWN_RECORD;
		}
	} else if ((step & 0xff) == SQLITE_CONSTRAINT && step != SQLITE_CONSTRAINT_COMMITHOOK) {
		a2m_sqlite_db_fail(s, "update");
		rc = A2M_INVALID_PARAMS;
	} else {
		rc = a2m_sqlite_db_fail(s, "update");
	}
out:
	a2m_sqlite_done(s->update);
	if (rc == 0 && changed) {
		a2m_sqlite_index_apply(s->index, seq, &old_dt, -1);
		a2m_sqlite_index_apply(s->index, seq, &new_dt, 1);
	}
	rc = write_close(s, &w, rc);
	a2m_sqlite_index_release(s->index, &old_dt);
	a2m_sqlite_index_release(s->index, &new_dt);
	if (rc == 0)
		a2m_sqlite_vectors_put(s->vectors, rec, found ? seq : 0);
	if (rc == 0 && s->mirror) {
		int now_in = a2m_sqlite_in_mirror_tier(s, rec->tier);
		if ((was_in || now_in) && !(was_in && now_in && same)) {
			a2m_mirror_note(s->mirror, rec->id, old_name);
			a2m_sqlite_after_write(s);
		}
	}
	free(old_name);
	return rc;
}

static int sql_remove(a2m_store *base, const char *id, int *removed)
{
	sqlstore *s = (sqlstore *)base;
	s->stamp++;
	char *old_name = NULL;
	int was_in = 0, same = 0, found = 0, changed = 0;
	int64_t seq = 0;
	a2m_doc_terms old_dt;
	write_ctx w;
	memset(&old_dt, 0, sizeof old_dt);
	int rc = a2m_sqlite_refuse_read_only(s, "remove");
	*removed = 0;
	if (!rc)
		rc = a2m_sqlite_held_flush(s);
	if (rc || !id)
		return rc;
	if (s->mirror && (rc = a2m_sqlite_mirror_before(s, id, NULL, &was_in, &same, &old_name)))
		return rc;
	if (s->index)
		rc = a2m_sqlite_index_old_terms(s->index, base, id, NULL, &seq, &old_dt, &found,
						&changed);
	if (!rc)
		rc = mark_stale(s);
	if (!rc)
		rc = write_open(s, &w, &old_dt, NULL);
	if (rc) {
		a2m_sqlite_index_release(s->index, &old_dt);
		free(old_name);
		return rc;
	}
	forget_row(s, found ? seq : 0);
	int64_t vseq = a2m_sqlite_vectors_seq(s->vectors, id);
	/* The delete trigger takes one off a count row that must be there,
	** and the seq removed must stay under the mark. */
	rc = a2m_sqlite_pending_flush(s);
	if (!rc)
		rc = a2m_sqlite_pending_guard(s);
	if (!rc && (a2m_sqlite_bind_text(s->remove, 1, id) != SQLITE_OK ||
		    sqlite3_step(s->remove) != SQLITE_DONE))
		rc = a2m_sqlite_db_fail(s, "remove");
	else if (!rc)
		*removed = sqlite3_changes(s->db) > 0;
	a2m_sqlite_done(s->remove);
	if (rc == 0 && *removed && found)
		a2m_sqlite_index_apply(s->index, seq, &old_dt, -1);
	rc = write_close(s, &w, rc);
	a2m_sqlite_index_release(s->index, &old_dt);
	if (rc)
		*removed = 0;
	if (*removed)
		a2m_sqlite_vectors_remove(s->vectors, vseq);
	if (rc == 0 && *removed && was_in) {
		a2m_mirror_note(s->mirror, id, old_name);
		a2m_sqlite_after_write(s);
	}
	free(old_name);
	return rc;
}

/* ---- open and close ---------------------------------------------------- */

/*
** How long a close waits for another connection's write lock to write the
** index's tail out: the tail is only a saving for the next open, not worth
** holding a close up for the whole busy timeout.
*/
#define CLOSE_BUSY_MS 100

/*
** A clean close of a store's main connection writes the index's tail out
** as a segment, and the counts' tail into a2m_counts (sqlite_counts.c), in
** a transaction of its own, so that the next open (and every reader, of
** any process) finds the marks at the last record and analyses or counts
** nothing again. Only when no transaction is open (one left open is
** rolled back: nothing unacknowledged persists) and the connection holds a
** tail or has not looked. Any failure leaves the tails where they were:
** their records are committed, the next writer or open reads them back.
*/
static void close_write_tail(sqlstore *s)
{
	int index = s->index && a2m_sqlite_index_may_hold_tail(s->index);
	if (!s->pool || s->base.read_only || s->txn || !sqlite3_get_autocommit(s->db) ||
	    (!index && !a2m_sqlite_counts_may_hold_tail(s)))
		return;
	(void)sqlite3_busy_timeout(s->db, CLOSE_BUSY_MS);
	if (s->index)
		a2m_sqlite_index_closing(s->index);
	if (a2m_sqlite_begin(&s->base) != 0)
		return;  /* busy, or the tail could not be read: it stays */
	index = s->index && a2m_sqlite_index_tail(s->index);
	int counts = a2m_sqlite_counts_sync(s) == 0 && s->ctail_records > 0;
	if (!index && !counts) {
		a2m_sqlite_rollback(&s->base);  /* nothing to write: no commit */
		return;
	}
	if (index)
		a2m_sqlite_index_write_out(s->index);
	s->counts_force = counts;
	(void)a2m_sqlite_commit(&s->base);  /* rolls back on failure */
}

/*
** Finalizes the statements and closes the connection. An open transaction
** is rolled back, never committed: close() is also the path taken when the
** caller gave up half way, and nothing unacknowledged may persist.
*/
static void sql_free(sqlstore *s)
{
	if (!s)
		return;
	if (s->pool)
		a2m_sqlite_read_end(&s->base);  /* the closing thread's bracket, if any */
	a2m_sqlite_pool_free(s->pool);
	a2m_sqlite_journal_free(s->journal);
	a2m_sqlite_checkpoint_free(s);
	a2m_sqlite_sync_free(s);
	free(s->notes);
	if (s->db && !sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_finalize(s->begin);
	sqlite3_finalize(s->snapshot);
	sqlite3_finalize(s->commit);
	sqlite3_finalize(s->rollback);
	sqlite3_finalize(s->get);
	sqlite3_finalize(s->get_by_key);
	sqlite3_finalize(s->update);
	sqlite3_finalize(s->remove);
	sqlite3_finalize(s->meta_get);
	sqlite3_finalize(s->meta_set);
	sqlite3_finalize(s->meta_del);
	sqlite3_finalize(s->mirror_old);
	sqlite3_finalize(s->by_seq);
	sqlite3_finalize(s->touch);
	sqlite3_finalize(s->move);
	sqlite3_finalize(s->number);
	sqlite3_finalize(s->number_set);
	sqlite3_finalize(s->stale);
	sqlite3_finalize(s->count_tier);
	sqlite3_finalize(s->count_bucket);
	sqlite3_finalize(s->count_session);
	a2m_sqlite_bound_free(s);
	a2m_sqlite_scans_free(s);
	a2m_sqlite_extend_close(s);
	a2m_sqlite_pending_free(s);
	a2m_sqlite_counts_free(s);
	a2m_sqlite_held_free(s);
	a2m_sqlite_index_close(s->index);
	a2m_sqlite_vectors_free(s->vectors);
	a2m_row_cache_free(s->rows);
	sqlite3_close_v2(s->db);
	a2m_mirror_free(s->mirror);
	free(s);
}

static void sql_close(a2m_store *base)
{
	sqlstore *s = (sqlstore *)base;
	if (!s)
		return;
	close_write_tail(s);
	sql_free(s);
}

int a2m_sqlite_prepare(sqlstore *s, sqlite3_stmt **st, const char *sql)
{
	if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL)
	    != SQLITE_OK)
		return a2m_sqlite_db_fail(s, "prepare");
	return 0;
}

static int sql_index_attach(a2m_store *base, a2m_indexer *ix)
{
	sqlstore *s = (sqlstore *)base;
	int rc = a2m_sqlite_held_flush(s);  /* a rebuild reads every record */
	if (rc)
		return rc;
	a2m_sqlite_index_close(s->index);
	s->index = NULL;
	/*
	** Postings are written in term order, not record order, so each
	** remember touches as many b-tree pages as it has terms: SQLite's
	** default 2 MiB cache thrashes from a few ten thousand records on.
	** The same pages are dirtied by commit after commit, so checkpointing
	** every 1 000 WAL pages (the default) copies each of them into the
	** file again and again; a longer WAL copies each once per checkpoint.
	*/
	if (a2m_sqlite_exec(s, "PRAGMA cache_size=-" A2M_SQLITE_INDEX_CACHE_KIB, "cache_size"))
		return A2M_INTERNAL_ERROR;
	if (s->ckpt)
		a2m_sqlite_checkpoint_mark(s, A2M_SQLITE_CHECKPOINT_PAGES);
	else if (a2m_sqlite_exec(s, "PRAGMA wal_autocheckpoint=10000", "wal_autocheckpoint"))
		return A2M_INTERNAL_ERROR;
	rc = a2m_sqlite_index_open(s->db, base, s->base.read_only, ix, &s->index);
	if (s->index) {
		a2m_sqlite_index_merge_inline(s->index, s->merge_inline);
		a2m_sqlite_index_cache_budget(s->index, s->postings_cache_bytes);
	}
	/* The readers read the index this connection now keeps, or none. */
	a2m_sqlite_pool_attach(s->pool, s->index ? ix : NULL);
	return rc;
}

/* The index of the thread's connection; a failure's message goes to base. */
static int sql_index_stats(a2m_store *base, a2m_index_stats *out)
{
	sqlstore *s = a2m_sqlite_conn(base);
	memset(out, 0, sizeof *out);
	int rc = a2m_sqlite_held_flush((sqlstore *)base);
	if (rc)
		return rc;
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	return a2m_sqlite_index_stats(s->index, base, out);
}

static int sql_index_postings(a2m_store *base, const char *term, size_t len,
			      a2m_posting_visit visit, void *ctx)
{
	sqlstore *s = a2m_sqlite_conn(base);
	int rc = a2m_sqlite_held_flush((sqlstore *)base);
	if (rc)
		return rc;
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	return a2m_sqlite_index_postings(s->index, base, term, len, visit, ctx);
}

/*
** The index a loan may come from: the bracket's connection's, its held
** inserts flushed first. 0 with *ix set; 1 outside a bracket, where nothing
** would end the loan (not lent); or the code to return.
*/
static int loan_index(a2m_store *base, a2m_sqlite_index **ix)
{
	sqlstore *s = a2m_sqlite_conn(base);
	int rc = a2m_sqlite_held_flush((sqlstore *)base);
	if (rc)
		return rc;
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	if (!a2m_sqlite_in_bracket(base))
		return 1;
	*ix = s->index;
	return 0;
}

/* Lends from the postings cache of the bracket's connection, pinned until its read_end. */
static int sql_index_postings_view(a2m_store *base, const char *term, size_t len,
				   const a2m_posting **v, size_t *n)
{
	a2m_sqlite_index *ix;
	int rc = loan_index(base, &ix);
	return rc ? rc : a2m_sqlite_index_view(ix, base, term, len, v, n);
}

/* sql_index_postings_view with the bounds the postings cache keeps (store.h). */
static int sql_index_postings_lend(a2m_store *base, const char *term, size_t len,
				   a2m_postings_lent *out)
{
	a2m_sqlite_index *ix;
	int rc = loan_index(base, &ix);
	return rc ? rc : a2m_sqlite_index_lend(ix, base, term, len, out);
}

/* Always the main connection: never called in a shared bracket (store.h). */
static int sql_vector_search(a2m_store *base, const a2m_vector_search *q,
			     a2m_candidates *out)
{
	sqlstore *s = (sqlstore *)base;
	int rc = a2m_sqlite_held_flush(s);
	return rc ? rc : a2m_sqlite_vectors_search(s->vectors, base, q, out);
}

/*
** Each op here but insert, begin, begin_relaxed, rollback, close, read_begin
** and read_end calls a2m_sqlite_held_flush() before its first statement
** (the reads in sqlite_pool.c's wrappers, commit and meta_set in
** sqlite_txn.c), so it sees, and acts on, every insert made before it.
*/
static uint64_t sql_stamp(a2m_store *base)
{
	return ((sqlstore *)base)->stamp;
}

static const a2m_store_ops sqlite_ops = {
	.engine     = "sqlite",
	.begin      = a2m_sqlite_begin,
	.begin_relaxed = a2m_sqlite_begin_relaxed,
	.commit     = a2m_sqlite_commit,
	.rollback   = a2m_sqlite_rollback,
	.sync_owed  = a2m_sqlite_sync_owed,
	.sync_wait  = a2m_sqlite_sync_wait,
	.sync_start = a2m_sqlite_sync_start,
	.read_begin = a2m_sqlite_read_begin,
	.read_end   = a2m_sqlite_read_end,
	.get        = a2m_sqlite_pooled_get,
	.get_by_key = a2m_sqlite_pooled_get_by_key,
	.insert     = sql_insert,
	.update     = sql_update,
	.remove     = sql_remove,
	.move       = a2m_sqlite_move,
	.scan       = a2m_sqlite_pooled_scan,
	.count      = a2m_sqlite_pooled_count,
	.meta_get   = a2m_sqlite_pooled_meta_get,
	.meta_set   = a2m_sqlite_meta_set,
	.close      = sql_close,
	.visit_seqs = a2m_sqlite_pooled_visit_seqs,
	.touch      = a2m_sqlite_touch,
	.stamp      = sql_stamp,
	.salience_bound = a2m_sqlite_salience_bound,
	.index_attach   = sql_index_attach,
	.index_stats    = sql_index_stats,
	.index_postings = sql_index_postings,
	.index_postings_view = sql_index_postings_view,
	.index_postings_lend = sql_index_postings_lend,
	.vector_search  = sql_vector_search,
	.scan_unembedded = a2m_sqlite_pooled_scan_unembedded,
	.check      = a2m_sqlite_check,
	.repair     = a2m_sqlite_repair,
	.history_put    = a2m_sqlite_history_put,
	.history_visit  = a2m_sqlite_history_visit,
	.next_expiry    = a2m_sqlite_next_expiry,
	.scan_expired   = a2m_sqlite_scan_expired,
	.by_fingerprint = a2m_sqlite_by_fingerprint,
};

/*
** Opens one connection; with pooled, the main connection of a store, which
** lends readers to concurrent read brackets (sqlite_pool.c).
*/
static int open_store(const char *path, const a2m_sqlite_options *opt, int pooled,
		      a2m_store **out, char *err, size_t errlen)
{
	static const a2m_sqlite_options defaults;
	/*
	** NOMUTEX: a connection is used by one thread at a time (the caller's
	** lock, and the pool lends each reader to one bracket), so SQLite's
	** own per-connection mutex would be pure overhead.
	*/
	int flags = SQLITE_OPEN_NOMUTEX;
	int rc = A2M_INTERNAL_ERROR;
	struct stat st;

	*out = NULL;
	if (!opt)
		opt = &defaults;
	sqlstore *s = calloc(1, sizeof *s);
	if (!s) {
		if (err && errlen)
			snprintf(err, errlen, "sqlite store: out of memory");
		return A2M_INTERNAL_ERROR;
	}
	s->base.ops = &sqlite_ops;
	s->base.read_only = opt->read_only != 0;
	flags |= s->base.read_only ? SQLITE_OPEN_READONLY
				   : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	if (!path) {
		a2m_store_fail(&s->base, "sqlite store: no path");
		goto fail;
	}
	/* Said here in so many words: SQLite would only say "unable to open". */
	if (s->base.read_only && stat(path, &st) != 0) {
		a2m_store_fail(&s->base, "open %s read-only: %s (a read-only store serves "
			       "an existing database and creates nothing)", path,
			       strerror(errno));
		goto fail;
	}
	/* The log's frames written a commit at a time (sqlite_walvfs.c). */
	if (sqlite3_open_v2(path, &s->db, flags, a2m_sqlite_walvfs_name()) != SQLITE_OK) {
		if (s->db)
			a2m_store_fail(&s->base, "open %s: %s", path, sqlite3_errmsg(s->db));
		else
			a2m_store_fail(&s->base, "open %s: out of memory", path);
		goto fail;
	}
	a2m_sqlite_txn_hook(s);
	/* Group commit syncs the log itself: SQLite's commits must not. */
	int group = opt->synchronous_full && opt->group_commit && !s->base.read_only &&
		    strcmp(path, ":memory:") != 0;
	s->synchronous_full = opt->synchronous_full && !group;
	s->merge_inline = opt->merge_inline;
	s->postings_cache_bytes = opt->postings_cache_bytes;
	s->mmap_bytes = opt->mmap_bytes;
	if (a2m_sqlite_configure(s, path, s->synchronous_full) ||
	    (group && a2m_sqlite_sync_open(s)) ||
	    (pooled && !s->base.read_only && a2m_sqlite_checkpoint_open(s)) ||
	    (s->base.read_only ? a2m_sqlite_check_schema(s, path) : a2m_sqlite_migrate(s, opt->indexer)) ||
	    a2m_sqlite_unembedded_index(s, opt->unembedded_index) ||
	    a2m_sqlite_bound_open(s) ||
	    /* Read-only: a deferred BEGIN, a read transaction; IMMEDIATE would
	       ask for the write lock a read-only connection cannot have. */
	    a2m_sqlite_prepare(s, &s->begin, s->base.read_only ? "BEGIN" : "BEGIN IMMEDIATE") ||
	    a2m_sqlite_prepare(s, &s->snapshot, "PRAGMA schema_version") ||
	    a2m_sqlite_prepare(s, &s->commit, "COMMIT") ||
	    a2m_sqlite_prepare(s, &s->rollback, "ROLLBACK") ||
	    a2m_sqlite_prepare(s, &s->get, "SELECT " COLUMNS " FROM records WHERE id = ?1") ||
	    a2m_sqlite_prepare(s, &s->get_by_key, SQL_GET_BY_KEY) ||
	    a2m_sqlite_prepare(s, &s->update, SQL_UPDATE) ||
	    a2m_sqlite_prepare(s, &s->remove, "DELETE FROM records WHERE id = ?1") ||
	    a2m_sqlite_prepare(s, &s->meta_get, "SELECT value FROM a2m_meta WHERE name = ?1") ||
	    a2m_sqlite_prepare(s, &s->meta_set, SQL_META_SET) ||
	    a2m_sqlite_prepare(s, &s->meta_del, "DELETE FROM a2m_meta WHERE name = ?1") ||
	    a2m_sqlite_prepare(s, &s->by_seq, "SELECT " COLUMNS " FROM records WHERE seq = ?1") ||
	    a2m_sqlite_prepare(s, &s->count_tier, SQL_COUNT_TIER) ||
	    a2m_sqlite_prepare(s, &s->count_bucket, SQL_COUNT_BUCKET) ||
	    a2m_sqlite_prepare(s, &s->count_session, SQL_COUNT_SESSION) ||
	    (!s->base.read_only &&
	     a2m_sqlite_prepare(s, &s->stale, "DELETE FROM a2m_meta WHERE name = 'index'")) ||
	    a2m_sqlite_open_mirror(s, opt))
		goto fail;
	if (!(s->vectors = a2m_sqlite_vectors_new(s->db)) ||
	    !(s->rows = a2m_row_cache_new(ROW_CACHE_ROWS, ROW_CACHE_BUDGET))) {
		a2m_store_fail(&s->base, "sqlite store: out of memory");
		goto fail;
	}
	if (pooled && !(s->pool = a2m_sqlite_pool_new(s, opt->synchronous_full))) {
		a2m_store_fail(&s->base, "sqlite store: out of memory");
		goto fail;
	}
	/* What opening wrote (a migration, the mirror's reconciling) is
	** durable before the store is, as SQLite's own commits made it. */
	if (s->sync && (rc = a2m_sqlite_sync_wait(&s->base, a2m_sqlite_sync_owed(&s->base),
						  s->base.errmsg, sizeof s->base.errmsg)))
		goto fail;
	*out = &s->base;
	return 0;

fail:
	/*
	** A write cut off before its commit left a hot rollback journal (of a
	** new file: a kill while the first open made it a WAL file), which
	** only a read-write open may roll back. SQLite's own words for it
	** ("attempt to write a readonly database") say nothing of the cause.
	*/
	if (s->db && s->base.read_only &&
	    sqlite3_extended_errcode(s->db) == SQLITE_READONLY_ROLLBACK)
		a2m_store_fail(&s->base, "%s has a write that was cut off before its commit "
			       "(its -journal file); a read-only open cannot roll it back, the "
			       "next read-write open does, losing nothing committed", path);
	if (err && errlen)
		snprintf(err, errlen, "%s", s->base.errmsg);
	sql_free(s);  /* half open: nothing of the tail to write */
	return rc;
}

int a2m_store_sqlite_open(const char *path, const a2m_sqlite_options *opt,
			  a2m_store **out, char *err, size_t errlen)
{
	return open_store(path, opt, 1, out, err, errlen);
}

int a2m_sqlite_open_reader(const char *path, const a2m_sqlite_options *opt,
			   a2m_store **out, char *err, size_t errlen)
{
	return open_store(path, opt, 0, out, err, errlen);
}
