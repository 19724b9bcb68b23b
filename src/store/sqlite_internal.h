/*
** sqlite_internal.h — what the files of the SQLite engine share, for them
** only: the engine's struct, the column list every SELECT reads, and the
** functions one of its files defines and another calls.
**
** The engine is one storage seam implementation (store.h) spread over
** sqlite.c (open, close, writes, the ops table), sqlite_narrow.c (touch
** and move: a few columns of one row), sqlite_mirror.c (the
** procedural mirror's side: which writes change a mirrored file),
** sqlite_schema.c (connection settings and migrations), sqlite_rows.c
** (a record's row: binding and reading), sqlite_read.c (lookups, scans and
** counts), sqlite_txn.c (transactions and store-level settings),
** sqlite_pending.c (the counts and seq mark a transaction writes at COMMIT),
** sqlite_counts.c (the counts of committed inserts not yet in a2m_counts),
** sqlite_held.c (inserts held back and written several rows per statement)
** sqlite_bound.c (the bound on salience: a2m_bound's row; its functions
** in sqlite_bound.h),
** sqlite_pool.c (read brackets, and the read connections behind them) and
** sqlite_checkpoint.c (the log's checkpoints, on a thread of their own). Nothing
** outside those files includes this header: the rest of the server sees
** only a2m_store_sqlite_open() and the ops.
*/
#ifndef A2M_SQLITE_INTERNAL_H
#define A2M_SQLITE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store/row_cache.h"
#include "store/sqlite_index.h"
#include "store/sqlite_vectors.h"
#include "store/store.h"

/* The columns every SELECT returns, in the order a2m_sqlite_read_row() reads them. */
#define COLUMNS \
	"seq, id, content, created_at, role, metadata, grp, tier, salience," \
	" accessed_at, access_count, owner, session, key, revision, embedding," \
	" uri, media_type, gen_embedding, expires_at, fp"

/*
** What makes a record one a server embedder may owe a vector (store.h,
** scan_unembedded): the WHERE of the partial index records_unembedded
** (sqlite_schema.c) and of the query that reads it, which must match it
** exactly. char(32, 9, 10, 11, 12, 13) is the ASCII white space.
*/
#define A2M_SQLITE_UNEMBEDDED \
	"embedding IS NULL AND gen_embedding IS NULL" \
	" AND trim(content, char(32, 9, 10, 11, 12, 13)) <> ''"

/*
** A tier's key in records_tier (schema step 12): x is the tier's SQL (the
** column, or a parameter, which it names twice). The default flow's tiers
** are 1, 2, 3 in the reverse of a record's path through them (working ->
** episodic -> semantic), every other tier its own name (SQLite sorts text
** after integers) and no tier NULL: one key per tier, so the key alone
** finds a tier exactly. A spill takes a tier's oldest entry and adds it
** as the newest of the next tier, which this order puts beside it in the
** index, on a page the commit writes anyway.
**
** An index on an expression serves only a WHERE that spells the same
** expression; and SQLite rewrites `tier` inside it to the value of a
** `tier = ?` in the same WHERE (its constant propagation), so a query by
** key tests the tier as `+tier = ?` (sqlite_read.c). An UPDATE that leaves
** tier alone (a touch) does not compute it.
*/
#define A2M_SQLITE_TIER_KEY(x) \
	"CASE " x " WHEN 'semantic' THEN 1 WHEN 'episodic' THEN 2" \
	" WHEN 'working' THEN 3 ELSE " x " END"

typedef struct a2m_sqlite_pool a2m_sqlite_pool;
typedef struct a2m_sqlite_journal a2m_sqlite_journal;
typedef struct a2m_sqlite_note a2m_sqlite_note;
typedef struct a2m_sqlite_bucket a2m_sqlite_bucket;

/* Records per (tier, session): a transaction's inserts, or a counts tail. */
struct a2m_sqlite_bucket {
	char   *tier, *session;  /* owned; NULL is "none" */
	int64_t n;
};
typedef struct a2m_sqlite_held a2m_sqlite_held;
typedef struct a2m_sqlite_sync a2m_sqlite_sync;
typedef struct a2m_sqlite_ckpt a2m_sqlite_ckpt;

/*
** Readers a store's pool opens at most (sqlite_pool.c): with the main
** connection, this many plus one read brackets run at once; more wait.
*/
#define A2M_SQLITE_POOL_READERS 8

/*
** Scan statements a connection keeps prepared (sqlite_read.c): a scan's
** SQL is assembled from its query, and a capacity check asks the same few
** shapes on every write, which SQLite would otherwise parse each time.
*/
#define A2M_SQLITE_SCANS_KEPT 8

typedef struct a2m_sqlite_scan_kept {
	char         *sql;   /* NULL: a free slot */
	sqlite3_stmt *st;
	int           busy;  /* stepping now: a nested scan of the shape prepares its own */
	uint64_t      used;  /* when last used (the connection's scans_clock) */
} a2m_sqlite_scan_kept;

/*
** One connection: the store's main (read-write, or the read-only store's
** one) connection, or a reader of its pool (sqlite_pool.c), each with its
** own statements and caches.
*/
typedef struct sqlstore {
	a2m_store     base;
	sqlite3      *db;
	a2m_sqlite_pool *pool;     /* the main connection's readers; NULL in a reader */
	sqlite3_stmt *begin;
	sqlite3_stmt *snapshot;    /* read_begin's: stepped once, held until read_end */
	sqlite3_stmt *commit;
	sqlite3_stmt *rollback;
	sqlite3_stmt *get;
	sqlite3_stmt *get_by_key;
	a2m_sqlite_held *held;     /* inserted rows not yet written (sqlite_held.c) */
	sqlite3_stmt *update;
	sqlite3_stmt *remove;
	sqlite3_stmt *meta_get;
	sqlite3_stmt *meta_set;
	sqlite3_stmt *meta_del;
	sqlite3_stmt *mirror_old;  /* only with a mirror */
	a2m_mirror   *mirror;      /* NULL: no procedural mirror */
	sqlite3_stmt *by_seq;
	sqlite3_stmt *touch;       /* prepared at the first touch */
	sqlite3_stmt *move;        /* prepared at the first move (sqlite_narrow.c) */
	sqlite3_stmt *stale;       /* marks the index stale (no analyser) */
	sqlite3_stmt *count_tier;  /* SQL_COUNT_TIER, _BUCKET, _SESSION */
	sqlite3_stmt *count_bucket;
	sqlite3_stmt *count_session;
	sqlite3_stmt *history_put;  /* the extensions' statements (sqlite_extend.c), */
	sqlite3_stmt *history_prune;/* prepared at first use */
	sqlite3_stmt *history_get;
	sqlite3_stmt *next_expiry;
	sqlite3_stmt *expired;
	sqlite3_stmt *by_fp;
	a2m_sqlite_index *index;   /* NULL until index_attach, or when unusable */
	a2m_sqlite_vectors *vectors; /* vector rows, cached at the first search */
	a2m_row_cache *rows;       /* records read by seq in read brackets (row_cache.h) */
	int           rows_busy;   /* visit_seqs running: a nested one only reads the cache */
	int           unembedded_index; /* records_unembedded exists (schema step 7) */
	uint64_t      txn_version; /* the data version when the write transaction began */
	int           txn_versioned; /* txn_version could be read */
	int           rows_unsure; /* a record of unknown seq was written: empty the row
	                              cache at commit */
	int           synchronous_full; /* the configured level */
	int           merge_inline;     /* a2m_sqlite_options.merge_inline */
	size_t        postings_cache_bytes; /* a2m_sqlite_options' (0: the default) */
	size_t        mmap_bytes;           /* a2m_sqlite_options' (0: no map) */
	int           relaxed;     /* this transaction commits with synchronous=NORMAL */
	int           txn;         /* the caller's write transaction is open (begin() to
	                              commit() or rollback()), whatever SQLite did with it */
	int           txn_relaxed; /* this transaction was begun relaxed (begin_relaxed) */
	int           committing;  /* commit() is stepping its COMMIT (the commit hook) */
	a2m_sqlite_sync *sync;     /* group commit (sqlite_sync.c); NULL: SQLite syncs */
	a2m_sqlite_ckpt *ckpt;     /* the checkpointer (sqlite_checkpoint.c); NULL: none */
#ifdef A2M_TEST_HOOKS
	int           doomed;      /* this transaction's commit fails (tests) */
#endif
	int           reading;     /* a read bracket is open: snapshot is stepped */
	/* The commit journal (sqlite_journal.c). The main connection's: */
	a2m_sqlite_journal *journal; /* NULL: no readers to tell (or read-only) */
	a2m_sqlite_note *notes;    /* what this transaction did to rows, in order */
	size_t        notes_n, notes_cap;
	int           notes_all_rows; /* the readers must forget every row */
	int           staged;      /* this commit's entry is in the journal */
	int           unnumbered;  /* a commit took no number since the last that did */
	sqlite3_stmt *number;      /* main: bumps the commit number; reader: reads it */
	/* A reader's: the snapshot its caches were last synced to. */
	int           synced;      /* 0: none yet, or it could not be read */
	unsigned      synced_version;
	int64_t       synced_no;   /* the commit number then (0: the file had none) */
	int           synced_have; /* the file had a number */
	/* What the write transaction owes the file at COMMIT (sqlite_pending.c): */
	a2m_sqlite_bucket *buckets; /* inserts per (tier, session), not yet in a2m_counts */
	size_t        buckets_n, buckets_cap;
	int           seq_known;   /* seq_high was read in this transaction */
	int64_t       seq_high;    /* the highest seq given out */
	int64_t       seq_base;    /* the highest before this transaction's first insert */
	/* Tier moves of counted records (under the mark): signed counts per
	** bucket, added to a2m_counts at COMMIT or at a flush. */
	a2m_sqlite_bucket *moved;
	size_t        moved_n, moved_cap;
	sqlite3_stmt *seq_get;     /* prepared at first use, as is the one below */
	sqlite3_stmt *seq_guard;
	/* The counts' tail (sqlite_counts.c): committed records above the
	** mark ('counted'), per bucket, as of data version ctail_version. */
	a2m_sqlite_bucket *ctail;
	size_t        ctail_n, ctail_cap;
	int           ctail_known;   /* the fields below are the file's at ctail_version */
	unsigned      ctail_version;
	int64_t       ctail_mark;    /* -1: the file has no mark (nothing in a tail) */
	int64_t       ctail_top;     /* the highest seq counted (the mark when none) */
	int64_t       ctail_records;
	int           counts_out;    /* this transaction wrote the tail into a2m_counts */
	int64_t       counts_out_mark; /* the mark it holds now */
	int           counts_force;  /* the next commit writes the tail out (a close) */
	sqlite3_stmt *count_add;     /* prepared at first use, as are the four below */
	sqlite3_stmt *count_take, *count_drop;
	sqlite3_stmt *ctail_rows;
	sqlite3_stmt *counted_set;
	/* What the main connection's last commit left in the file, good while
	** the data version is the one after it (no other commit since: the
	** next transaction's txn_version says): the commit number and the
	** seq figures, which the next commit then need not read again. */
	int           after_known; /* after_version is the version after our last commit */
	unsigned      after_version;
	int64_t       after_number;  /* the commit number it took (0: none) */
	int           after_seq;     /* after_seq_high is known */
	int64_t       after_seq_high;
	int64_t       staged_no;     /* the number this commit's stage took */
	sqlite3_stmt *number_set;    /* the number's plain update (sqlite_journal.c) */
	/* store.h, stamp: + 1 at every record write, rollback and failed commit
	** (sqlite.c, sqlite_txn.c), and at a begin that finds another commit
	** came after this connection's last. */
	uint64_t      stamp;
	/* The bound on salience (sqlite_bound.c): a2m_bound's row as this
	** connection last read or wrote it, good while the data version is
	** bound_version (bound_known). */
	sqlite3_stmt *bound_get;     /* NULL: the file has no a2m_bound (read-only, < step 13) */
	sqlite3_stmt *bound_raise;   /* read-write only */
	int           bound_table;   /* the file has the row */
	int           bound_known;
	unsigned      bound_version;
	double        bound_row;
	a2m_sqlite_scan_kept scans[A2M_SQLITE_SCANS_KEPT]; /* sqlite_read.c */
	uint64_t      scans_clock;
} sqlstore;

/* ---- sqlite_rows.c: statements and a record's row ----------------------- */

/*
** Records the connection's last error in s->base.errmsg, prefixed with op
** (what was being done). Returns A2M_INTERNAL_ERROR (a2m_store_fail()).
*/
int a2m_sqlite_db_fail(sqlstore *s, const char *op);

/*
** Resets a cached statement and clears its bindings (values are bound
** SQLITE_STATIC, so they must not outlive the caller's record). Cannot fail.
*/
void a2m_sqlite_done(sqlite3_stmt *st);

/* Binds v (borrowed, SQLITE_STATIC) to ?i, or NULL when v is. Returns an SQLite code. */
int a2m_sqlite_bind_text(sqlite3_stmt *st, int i, const char *v);

/*
** Binds ?at+1 = rec->id and ?at+2..?at+20 = the other fields, as SQL_UPDATE
** (sqlite.c, at 0) and each row of the held inserts (sqlite_held.c) expect
** them; rec must outlive the statement's step. Returns an SQLite code.
*/
int a2m_sqlite_bind_record(sqlite3_stmt *st, int at, const a2m_record *rec);

/*
** Copies text column col into *out (malloc'd, the caller frees; NULL for
** SQL NULL). Returns 0, or A2M_INTERNAL_ERROR with errmsg set.
*/
int a2m_sqlite_column_text(sqlstore *s, sqlite3_stmt *st, int col, char **out);

/*
** Fills the zeroed rec from the current row (COLUMNS order). Returns 0, or
** A2M_INTERNAL_ERROR with rec cleared and errmsg set.
*/
int a2m_sqlite_read_row(sqlstore *s, sqlite3_stmt *st, a2m_record *rec);

/*
** Steps the bound single-row lookup st and sets *out to the row (a new
** record, the caller frees) or NULL when there is none; resets st either
** way. Returns 0, or an error code with *out NULL.
*/
int a2m_sqlite_fetch_one(sqlstore *s, sqlite3_stmt *st, const char *op,
			 a2m_record **out);

/* ---- sqlite_schema.c: settings and migrations ---------------------------- */

/* Runs fixed SQL that returns no values. Returns 0, or A2M_INTERNAL_ERROR. */
int a2m_sqlite_exec(sqlstore *s, const char *sql, const char *op);

/* The smallest file a connection maps: its page cache (A2M_SQLITE_INDEX_CACHE_KIB)
** holds a smaller one whole. */
#define A2M_SQLITE_MMAP_FROM_KIB 65536
#ifdef A2M_TEST_HOOKS
/* Tests: map files of bytes or more (the default A2M_SQLITE_MMAP_FROM_KIB). */
void a2m_sqlite_mmap_from_for_tests(uint64_t bytes);
#endif

/*
** Sets the busy timeout, WAL (read-write only), the synchronous level,
** foreign keys and the memory map (s->mmap_bytes, for a file of
** A2M_SQLITE_MMAP_FROM_KIB or more when the connection opens), reading
** each PRAGMA back but the map's. Returns 0, or A2M_INTERNAL_ERROR.
*/
int a2m_sqlite_configure(sqlstore *s, const char *path, int synchronous_full);

/*
** Brings a read-write file to this build's schema version, one step per
** transaction; refuses a newer file. A new file (no step made) gets every
** step in one transaction, and with ix (NULL: none) its term index, empty,
** in the same one: a kill leaves it empty or whole. Returns 0, or
** A2M_INTERNAL_ERROR with nothing of the failed transaction applied.
*/
int a2m_sqlite_migrate(sqlstore *s, const a2m_indexer *ix);

/*
** Read-only stand-in for a2m_sqlite_migrate(): succeeds only when the file
** is an a2m store at a version this build reads unmigrated (its own, or an
** older one whose later steps change no read: sqlite_schema.c,
** READ_ONLY_SINCE). Returns 0, or A2M_INTERNAL_ERROR with errmsg saying why.
*/
int a2m_sqlite_check_schema(sqlstore *s, const char *path);

/*
** With want (the server has an embedder) and a read-write connection,
** makes the partial index records_unembedded if it is missing; then notes
** in s->unembedded_index whether the file has it. Returns 0, or
** A2M_INTERNAL_ERROR with the store's message set.
*/
int a2m_sqlite_unembedded_index(sqlstore *s, int want);

/* ---- sqlite_read.c: the read ops (store.h says what each returns) -------- */

/*
** Steps st (a SELECT of COLUMNS, bound) to its end, visiting each row as a
** record as scan does (stop, abort). Leaves st to the caller to reset.
*/
int a2m_sqlite_visit_rows(sqlstore *s, sqlite3_stmt *st, const char *op,
			  a2m_record_visit visit, void *ctx);

int a2m_sqlite_get(a2m_store *base, const char *id, a2m_record **out);
int a2m_sqlite_get_by_key(a2m_store *base, const char *owner, const char *key,
			  a2m_record **out);
/* Finalizes the scan statements s keeps (at close). */
void a2m_sqlite_scans_free(sqlstore *s);

int a2m_sqlite_scan(a2m_store *base, const a2m_query *q, a2m_record_visit visit,
		    void *ctx);
#ifdef A2M_TEST_HOOKS
/*
** For the tests: the SQL a scan of q runs (unbound; its ? in order) into
** buf, so a test can ask SQLite for its plan. Returns 0, or an error code
** when it does not fit in len bytes.
*/
int a2m_sqlite_scan_sql_for_tests(a2m_store *base, const a2m_query *q, char *buf, size_t len);
#endif
int a2m_sqlite_count(a2m_store *base, const a2m_query *q, int64_t *out);
int a2m_sqlite_visit_seqs(a2m_store *base, const int64_t *seqs, size_t n,
			  a2m_record_visit visit, void *ctx);
int a2m_sqlite_scan_unembedded(a2m_store *base, const char *tier, a2m_record_visit visit,
			       void *ctx);

/* ---- sqlite_txn.c: the transaction and meta ops (store.h) ---------------- */

int a2m_sqlite_begin(a2m_store *base);
int a2m_sqlite_begin_relaxed(a2m_store *base);
int a2m_sqlite_commit(a2m_store *base);
void a2m_sqlite_rollback(a2m_store *base);
int a2m_sqlite_meta_get(a2m_store *base, const char *name, char **value);
int a2m_sqlite_meta_set(a2m_store *base, const char *name, const char *value);

/* ---- sqlite_pool.c: read brackets and the readers behind them ----------- */

/*
** The connection this thread reads base through: the one its open read
** bracket on base holds, else the main connection (base itself).
*/
sqlstore *a2m_sqlite_conn(a2m_store *base);

/*
** The connection a read op runs on (a2m_sqlite_conn), after writing the
** main connection's held inserts when it is that one (*rc: 0, or the
** flush's failure); and a failure on a reader copied into base's errmsg
** (returns rc).
*/
sqlstore *a2m_sqlite_read_conn(a2m_store *base, int *rc);
int a2m_sqlite_relay(a2m_store *base, const sqlstore *c, int rc);

/* Whether this thread holds a read bracket on base (index_postings_view lends only there). */
int a2m_sqlite_in_bracket(const a2m_store *base);

/*
** The main connection m's pool: readers open on m's file, none for a
** database no other connection can open (":memory:", ""). NULL when memory
** runs out.
*/
a2m_sqlite_pool *a2m_sqlite_pool_new(sqlstore *m, int synchronous_full);

/* Closes every reader and frees p. NULL is a no-op. */
void a2m_sqlite_pool_free(a2m_sqlite_pool *p);

/*
** Whether p ever opened a reader (or began to): until then no connection
** replays the commit journal, and a commit need not take a number
** (sqlite_journal.c). 0 for NULL. Cannot fail; any thread.
*/
int a2m_sqlite_pool_readers_seen(a2m_sqlite_pool *p);

/*
** The main connection now keeps its index with ix (NULL: none): readers
** opened from now on attach it read-only, older ones are closed as they
** come back. NULL p is a no-op.
*/
void a2m_sqlite_pool_attach(a2m_sqlite_pool *p, a2m_indexer *ix);

int a2m_sqlite_read_begin(a2m_store *base);
int a2m_sqlite_read_end(a2m_store *base);

/*
** The read ops of the ops table: sqlite_read.c's (and meta_get) on
** a2m_sqlite_conn(), once the main connection's held inserts are written.
*/
int a2m_sqlite_pooled_get(a2m_store *base, const char *id, a2m_record **out);
int a2m_sqlite_pooled_get_by_key(a2m_store *base, const char *owner, const char *key,
				 a2m_record **out);
int a2m_sqlite_pooled_scan(a2m_store *base, const a2m_query *q, a2m_record_visit visit,
			   void *ctx);
int a2m_sqlite_pooled_count(a2m_store *base, const a2m_query *q, int64_t *out);
int a2m_sqlite_pooled_meta_get(a2m_store *base, const char *name, char **value);
int a2m_sqlite_pooled_visit_seqs(a2m_store *base, const int64_t *seqs, size_t n,
				 a2m_record_visit visit, void *ctx);
int a2m_sqlite_pooled_scan_unembedded(a2m_store *base, const char *tier,
				      a2m_record_visit visit, void *ctx);

/* ---- sqlite_extend.c: the extensions' ops (store.h) ----------------------- */

int a2m_sqlite_history_put(a2m_store *base, const a2m_revision *rev, size_t keep);
int a2m_sqlite_history_visit(a2m_store *base, const char *id, size_t max,
			     a2m_revision_visit visit, void *ctx);
int a2m_sqlite_next_expiry(a2m_store *base, int64_t *at);
int a2m_sqlite_scan_expired(a2m_store *base, int64_t by, a2m_record_visit visit, void *ctx);
int a2m_sqlite_by_fingerprint(a2m_store *base, uint64_t fp, a2m_record_visit visit,
			      void *ctx);

/* Finalizes the statements above (at close). Cannot fail. */
void a2m_sqlite_extend_close(sqlstore *s);

/* ---- sqlite_journal.c: the main connection's commits, told to readers --- */

/* A journal, empty. NULL when memory runs out. */
a2m_sqlite_journal *a2m_sqlite_journal_new(void);

/* Frees j. NULL is a no-op. */
void a2m_sqlite_journal_free(a2m_sqlite_journal *j);

/*
** The main connection s, inside a write transaction, applied a touch to the
** row of seq / rewrote or removed the record of seq (0: of unknown seq):
** noted for the readers, as s's own row cache is changed. Cannot fail (a
** note that cannot be kept makes the readers forget every row). No-ops
** without a journal or outside a transaction.
*/
void a2m_sqlite_journal_touch(sqlstore *s, int64_t seq, int64_t add, int64_t at);
void a2m_sqlite_journal_forget(sqlstore *s, int64_t seq);

/* Forgets the transaction's notes (at begin and rollback). Cannot fail. */
void a2m_sqlite_journal_drop(sqlstore *s);

/*
** Just before COMMIT (the index flushed): bumps the file's commit number in
** the transaction and puts the notes into the journal under it. Returns 0
** (also without a journal: nothing done), or A2M_INTERNAL_ERROR with
** errmsg set; the caller then rolls back.
*/
int a2m_sqlite_journal_stage(sqlstore *s);

/* The COMMIT after a stage failed: takes the entry out again. */
void a2m_sqlite_journal_unstage(sqlstore *s);

/*
** Whether what the last commit left (after_*) still holds in this write
** transaction: no commit came between (its txn_version is after_version).
*/
int a2m_sqlite_after_holds(const sqlstore *s);

/*
** At the start of reader c's bracket (its snapshot held): when its data
** version moved since its last sync and the main connection's commits
** explain the move, replays them on c's row and postings caches and lets
** them adopt the new version; else leaves them to empty themselves.
** Cannot fail.
*/
void a2m_sqlite_journal_sync(a2m_sqlite_journal *j, sqlstore *c);

/* ---- sqlite_narrow.c: a few columns of one row ------------------------- */

/* The ops touch and move (store.h). */
int a2m_sqlite_touch(a2m_store *base, int64_t seq, int64_t add, int64_t at);
int a2m_sqlite_move(a2m_store *base, const a2m_record *rec, const char *to, double salience,
		    int *moved);

/* ---- sqlite_pending.c: counts and the seq mark, written at COMMIT ------- */

/*
** Before an insert into (tier, session), inside a write transaction: sets
** *seq to the seq the record gets (reading the file's mark at the first
** insert of the transaction) and *bucket to its count's slot. Returns 0,
** or A2M_INTERNAL_ERROR with errmsg set and nothing pending changed.
*/
int a2m_sqlite_pending_reserve(sqlstore *s, const char *tier, const char *session,
			       int64_t *seq, size_t *bucket);

/* The insert reserved as bucket took seq: counted. Cannot fail. */
void a2m_sqlite_pending_add(sqlstore *s, size_t bucket, int64_t seq);

/*
** Before a tier move of a record a2m_counts counts (a2m_sqlite_counts_cover)
** from tier `from` to tier `to`, both in session, inside a write
** transaction: *out and *in are the slots of the two buckets. Returns 0,
** or A2M_INTERNAL_ERROR with errmsg set and nothing pending changed.
*/
int a2m_sqlite_pending_move_reserve(sqlstore *s, const char *from, const char *to,
				    const char *session, size_t *out, size_t *in);

/* The move reserved as out and in was made: counted. Cannot fail. */
void a2m_sqlite_pending_moved(sqlstore *s, size_t out, size_t in);

/*
** Records of this transaction's inserts and moves not yet in a2m_counts
** that a count by tier (NULL: any) and, with by_session, session (NULL:
** none) selects (a move counts -1 in the bucket it left).
*/
int64_t a2m_sqlite_pending_count(const sqlstore *s, const char *tier, int by_session,
				 const char *session);

/*
** Writes every count the file lacks into a2m_counts, inside the write
** transaction: the counts' tail, the pending buckets, the moves, and the
** mark past them all (before an update or remove, whose triggers need
** every record counted, and before a move of a record above the mark). Returns 0, or A2M_INTERNAL_ERROR with errmsg set and the
** buckets not written still pending; the caller then rolls back.
*/
int a2m_sqlite_pending_flush(sqlstore *s);

/*
** Just before COMMIT: the pending counts, unless they may wait in the
** counts' tail (a transaction of inserts only, the tail short enough).
** A no-op outside a transaction. Returns 0, or A2M_INTERNAL_ERROR with
** errmsg set; the caller then rolls back.
*/
int a2m_sqlite_pending_write(sqlstore *s);

/*
** Before a DELETE from records, inside the write transaction, its held rows
** written: raises the seq mark to max(seq) when it is below, so that no
** seq removed now is ever given out again (inserts leave the mark alone).
** Returns 0, or A2M_INTERNAL_ERROR with errmsg set.
*/
int a2m_sqlite_pending_guard(sqlstore *s);

/* Forgets what is pending (at begin, after COMMIT, at rollback). Cannot fail. */
void a2m_sqlite_pending_drop(sqlstore *s);

/* Frees the pending state and its statements (at close). Cannot fail. */
void a2m_sqlite_pending_free(sqlstore *s);

/* ---- sqlite_counts.c: the kept counts' tail ----------------------------- */

/*
** The slot of (tier, session) in the list *v of *n buckets (room for
** *cap), added with n 0 (the strings copied) when missing. -1 when memory
** runs out, the list unchanged.
*/
long a2m_sqlite_bucket_slot(a2m_sqlite_bucket **v, size_t *n, size_t *cap, const char *tier,
			    const char *session);

/* Frees the strings of the *n buckets of v and empties the list (its array kept). */
void a2m_sqlite_buckets_clear(a2m_sqlite_bucket *v, size_t *n);

/* Adds n to (tier, session)'s row of a2m_counts. 0, or A2M_INTERNAL_ERROR with errmsg set. */
int a2m_sqlite_counts_add(sqlstore *s, const char *tier, const char *session, int64_t n);

/*
** Takes n (> 0) from (tier, session)'s row of a2m_counts, deleting the row
** when nothing is left (as the triggers do). 0, or A2M_INTERNAL_ERROR with
** errmsg set.
*/
int a2m_sqlite_counts_take(sqlstore *s, const char *tier, const char *session, int64_t n);

/*
** Inside a transaction (a bracket's, a write's): brings the connection's
** counts tail to the file's data version, counting the records above the
** mark it has not counted. 0, or A2M_INTERNAL_ERROR with errmsg set and
** the tail unknown (counted again at the next call).
*/
int a2m_sqlite_counts_sync(sqlstore *s);

/* The records of the synced tail a count by tier and session selects (as pending_count). */
int64_t a2m_sqlite_counts_tail(const sqlstore *s, const char *tier, int by_session,
			       const char *session);

/*
** Inside the write transaction: adds the tail's buckets to a2m_counts,
** once per transaction (synced first). 0, or A2M_INTERNAL_ERROR with
** errmsg set (the caller rolls back).
*/
int a2m_sqlite_counts_tail_out(sqlstore *s);

/*
** After counts_tail_out and the pending buckets: moves the mark past every
** record counted, high being the transaction's highest seq (0: none); no
** write when nothing is above it. 0, or A2M_INTERNAL_ERROR with errmsg set.
*/
int a2m_sqlite_counts_mark(sqlstore *s, int64_t high);

/*
** Inside the write transaction: 1 when a2m_counts already counts the record
** of seq (seq at or under the mark this transaction sees: the tail synced,
** or written out by it), so that the update trigger may move its count
** without the tail and the pending inserts written first; else 0 (a sync
** that fails included: the flush then reports it).
*/
int a2m_sqlite_counts_cover(sqlstore *s, int64_t seq);

/*
** At COMMIT, inside the write transaction: 1 when the transaction's
** pending inserts may stay out of a2m_counts, in the tail (it wrote no
** counts, the file has a mark, the tail stays within its bound), else 0.
*/
int a2m_sqlite_counts_defer(sqlstore *s, int64_t pending);

/* Whether the connection may hold a counts tail a close should write out. */
int a2m_sqlite_counts_may_hold_tail(const sqlstore *s);

/*
** After a successful COMMIT, before the pending buckets are dropped: the
** tail takes the deferred inserts' counts, or empties when it was written
** out. txn_known and txn_version: the data version the transaction began
** from. Cannot fail (a tail it cannot keep is counted again).
*/
void a2m_sqlite_counts_committed(sqlstore *s, int txn_known, unsigned txn_version);

/* After a rollback or a failed COMMIT. Cannot fail. */
void a2m_sqlite_counts_rolled_back(sqlstore *s);

/* Frees the tail and its statements (at close). Cannot fail. */
void a2m_sqlite_counts_free(sqlstore *s);

/* ---- sqlite_held.c: inserts written several rows per statement --------- */

/*
** Holds rec's row (copied: rec may be freed on return) with seq, to be
** written by a later a2m_sqlite_held_flush(); inside a write transaction
** only. A full buffer is written first. Returns 0, or a negative code with
** errmsg set and this row not held (A2M_INVALID_PARAMS: writing the rows
** held before tripped a UNIQUE constraint, see a2m_sqlite_held_flush).
*/
int a2m_sqlite_held_put(sqlstore *s, const a2m_record *rec, int64_t seq);

/*
** Writes every held row, in the order held. Every op but insert calls it
** before its first statement, and the COMMIT path before the postings.
** Returns 0 (also when nothing is held), A2M_INVALID_PARAMS when a row's id
** or (owner, key) is taken (errmsg names the constraint), or
** A2M_INTERNAL_ERROR; after a failure the rows stay held, so every later
** flush (the commit's too) fails, and the transaction can only be rolled
** back (the rows a failed statement wrote before the refused one then go).
*/
int a2m_sqlite_held_flush(sqlstore *s);

/* Whether a held row has this id (NULL: none has). */
int a2m_sqlite_held_has_id(const sqlstore *s, const char *id);

/* Forgets the held rows (at rollback, and after a failed COMMIT). Cannot fail. */
void a2m_sqlite_held_drop(sqlstore *s);

/* Frees the buffer and its statements (at close). Cannot fail. */
void a2m_sqlite_held_free(sqlstore *s);

/* ---- sqlite.c: what the transactions need of the writes' side ------------ */

/*
** Opens a reader for a pool: a2m_store_sqlite_open() without a pool of its
** own (opt should be read-only). Same returns.
*/
int a2m_sqlite_open_reader(const char *path, const a2m_sqlite_options *opt,
			   a2m_store **out, char *err, size_t errlen);


/*
** Brings the procedural mirror up to date after a commit; a failure is kept
** in errmsg and counted in mirror_failures, not returned (the commit stands).
*/
void a2m_sqlite_mirror_apply(sqlstore *s);

/*
** The rest of the mirror's side (sqlite_mirror.c), for sqlite.c's writes
** and open. a2m_sqlite_after_write applies the notes at once when the write
** committed on its own. a2m_sqlite_in_mirror_tier: whether tier is the
** mirrored one. a2m_sqlite_mirror_before, before an update (rec) or a
** remove (rec NULL) of id: whether the record is in the mirrored tier
** (*was_in), its file name then (*old_name, malloc'd, the caller frees;
** NULL when not in it), and whether rec leaves that file's bytes unchanged
** (*same); 0 or a store error. a2m_sqlite_open_mirror sets up the mirror
** when opt names a procedural dir and tier, and heals the directory: 0 or
** a store error (s->mirror freed with the store).
*/
void a2m_sqlite_after_write(sqlstore *s);
int  a2m_sqlite_in_mirror_tier(const sqlstore *s, const char *tier);
int  a2m_sqlite_mirror_before(sqlstore *s, const char *id, const a2m_record *rec,
			      int *was_in, int *same, char **old_name);
int  a2m_sqlite_open_mirror(sqlstore *s, const a2m_sqlite_options *opt);

/* Prepares *st (persistent) from sql on s's connection: 0 or a store error. */
int a2m_sqlite_prepare(sqlstore *s, sqlite3_stmt **st, const char *sql);

/*
** Every write calls this first: 0 on a read-write store, else
** A2M_READ_ONLY with errmsg set, before SQLite sees the write.
*/
int a2m_sqlite_refuse_read_only(sqlstore *s, const char *op);

/*
** 0, or A2M_INTERNAL_ERROR with errmsg set when the caller's transaction is
** open but SQLite has rolled it back on its own (after an I/O error or
** running out of memory in one of its statements, even one whose failure
** the caller let pass): nothing more may be written in it, or each write
** would commit alone and the transaction would land in pieces.
*/
int a2m_sqlite_txn_lost(sqlstore *s, const char *op);

/*
** Installs the connection's commit hook (sqlite_txn.c) once s->db is open:
** while the caller's transaction is open (s->txn), nothing commits but
** commit()'s own COMMIT. A statement SQLite runs on its own after it ended
** that transaction is refused and undone, and fails with
** SQLITE_CONSTRAINT_COMMITHOOK (a2m_sqlite_db_fail names it). Also tells
** group commit of every commit (a2m_sqlite_sync_committed).
*/
void a2m_sqlite_txn_hook(sqlstore *s);

/* ---- sqlite_sync.c: group commit --------------------------------------- */

/*
** Starts group commit on the main connection of a file store (the
** connection runs at synchronous=NORMAL; see sqlite_sync.c): s->sync set,
** and the commit hook that notes durable commits. A store on ":memory:"
** gets none. Returns 0, or a code with the message in s->base.errmsg.
*/
int a2m_sqlite_sync_open(sqlstore *s);

/* The commit hook's word to group commit: a commit is happening on s->db. */
void a2m_sqlite_sync_committed(sqlstore *s);

/* Ends group commit (closing the log's descriptor); NULL s->sync is a no-op. */
void a2m_sqlite_sync_free(sqlstore *s);

/*
** 0, or, after a failed fsync poisoned the store, A2M_INTERNAL_ERROR with
** the message in s->base.errmsg: begin() refuses every write from then on.
*/
int a2m_sqlite_sync_refuse(sqlstore *s);

/* The store ops sync_owed and sync_wait (store.h). */
uint64_t a2m_sqlite_sync_owed(a2m_store *base);
int a2m_sqlite_sync_wait(a2m_store *base, uint64_t ticket, char *msg, size_t msglen);
/* The store op sync_start (store.h): the ticket's sync begun on the sync thread. */
uint64_t a2m_sqlite_sync_start(a2m_store *base);

/* ---- sqlite_checkpoint.c: the log's checkpoints, off the writer -------- */

/*
** Takes the main connection of a writable file store off SQLite's
** automatic checkpoint: its WAL hook wakes a thread of the store's own
** (started at the first mark crossed, with a connection of its own) to
** checkpoint, and a commit checkpoints itself only past the hard mark.
** Sets s->ckpt; a store without a file gets none. Returns 0, or a code
** with the message in s->base.errmsg (out of memory).
*/
int a2m_sqlite_checkpoint_open(sqlstore *s);

/*
** The soft mark in pages of the log (the hard one is four times it);
** 0 or less: SQLite's default of 1 000. A no-op without s->ckpt.
*/
void a2m_sqlite_checkpoint_mark(sqlstore *s, int soft_pages);

/*
** Removes the hook, stops the thread (a pass in progress ends first),
** joins it and closes its connection. Before the main connection closes.
** NULL s->ckpt is a no-op.
*/
void a2m_sqlite_checkpoint_free(sqlstore *s);

#ifdef A2M_TEST_HOOKS
/* Dooms the open transaction's commit when key starts with the prefix the
** test set (a2m_sqlite_fail_commits_for_tests, store.h). */
void a2m_sqlite_commit_doom_for_tests(sqlstore *s, const char *key);
#endif

#endif
