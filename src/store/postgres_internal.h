/*
** postgres_internal.h — what the files of the PostgreSQL engine share, for
** them only: the engine's structs, its statements, and the functions one of
** its files defines and another calls.
**
** The engine is one storage seam implementation (store.h) spread over
** postgres.c (open, close, the writes, the ops table), postgres_conn.c (a
** connection: connecting, reconnecting, statements, pipelines, what a lost
** server looks like), postgres_wire.c (binary parameters, arrays, cells), postgres_schema.c (the numbered
** migrations, under an advisory lock), postgres_rows.c (a record's row:
** binding it, reading it back), postgres_read.c (lookups, scans, counts),
** postgres_txn.c (transactions, the deployment's write lock, store-level
** settings), postgres_pool.c (read brackets on connections of their own),
** postgres_held.c (inserts held back and written many rows per statement),
** postgres_index.c (the term index's postings and figures),
** postgres_segments.c (the index's rows: a term's postings as varints),
** postgres_batches.c (the index's newest rows, one per flush, and each
** connection's cache of them), postgres_fold.c (those folded into the
** terms' rows, a bounded step per write),
** postgres_check.c and postgres_check_extend.c (the consistency check and
** repair; postgres_check.h),
** postgres_vectors.c (vector search from a cache of the rows),
** postgres_extend.c (the extensions' history, expiry and fingerprints),
** postgres_events.c (the shared event log) and postgres_listen.c (the
** listener thread: other servers' commits, by LISTEN/NOTIFY). Nothing
** outside those files includes this header: the rest of the server sees
** only a2m_store_postgres_open() and the ops.
**
** One deployment is one schema of one database: every table lives in the
** schema the connection creates objects in (search_path, or the schema
** option), and the advisory locks and the notification channel are named
** after that schema, so two deployments in one database never meet.
*/
#ifndef A2M_POSTGRES_INTERNAL_H
#define A2M_POSTGRES_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "store/postgres_api.h"
#include "store/postings_cache.h"
#include "store/store.h"
#include "util/buf.h"

/* The columns every record SELECT returns, in the order a2m_pg_read_row() reads them. */
#define PG_COLUMNS \
	"seq, id, content, created_at, role, metadata, grp, tier, salience," \
	" accessed_at, access_count, owner, session, key, revision, embedding," \
	" uri, media_type, gen_embedding, expires_at, fp"
#define PG_NCOLUMNS 21

/*
** The prepared statements every connection may need, by number; the SQL of
** each is in postgres_conn.c's table. A connection prepares one the first
** time it runs it (a2m_pg_run), and again after a reconnect.
*/
typedef enum pg_stmt {
	PG_GET,            /* $1 id */
	PG_GET_BY_KEY,     /* $1 owner is null, $2 owner or '', $3 key */
	PG_BY_SEQ,         /* $1 seq */
	PG_BY_SEQS,        /* $1 int8[] */
	PG_OLD,            /* $1 id: seq, content, tier (a write's old row) */
	PG_UPDATE,         /* $1 id, $2.. the other fields (a2m_pg_bind_record) */
	PG_REMOVE,         /* $1 id */
	PG_MOVE,           /* $1 seq, $2 id, $3 tier, $4 to, $5 salience, $6 session */
	PG_TOUCHES,        /* $1 int8[] seq, $2 int8[] add, $3 int8[] at */
	PG_META_GET,       /* $1 name */
	PG_META_SET,       /* $1 name, $2 value */
	PG_META_DEL,       /* $1 name */
	PG_STATE,          /* the one row of a2m_state */
	PG_COUNT_BUCKET,   /* $1 tier null, $2 tier, $3 session null, $4 session */
	PG_COUNT_TIER,     /* $1 tier null, $2 tier */
	PG_COUNT_SESSION,  /* $1 session null, $2 session */
	PG_COUNT_ALL,
	PG_UNEMBEDDED,     /* $1 tier null, $2 tier, $3 after seq: 256 records */
	PG_VECTORS,        /* every record with a vector: seq, tier, owner, embedding, salience, gen */
	PG_SEQ_OF,         /* $1 id: seq */
	PG_EVENTS_ADD,     /* $1 int8[] at, $2 text[] body, $3 text[] owner, $4 bool[] shared,
	                      $5 text[] audience, $6 retain, $7 how many: the first seq */
	PG_EVENTS_READ,    /* $1 after, $2 limit */
	PG_EVENTS_BOUNDS,  /* oldest retained, head */
	PG_NSTMTS
} pg_stmt;

/*
** The term index's buckets (postgres_index.c): a term is in bucket
** a2m_pcache_bucket(term, len, PG_TERM_BUCKETS), and a2m_state.term_stamps
** holds, per bucket, the version of the last commit that changed a
** posting of one of its terms: what the postings caches are keyed on.
*/
#define PG_TERM_BUCKETS 256

/* The most rows one held INSERT writes (postgres_held.c). */
#define PG_HELD_ROWS 64

typedef struct a2m_pg_batches a2m_pg_batches;

/* One libpq connection and the statements it has prepared. */
typedef struct pgconn {
	PGconn   *conn;
	uint64_t  prepared;               /* bit i: pg_stmt i is prepared here */
	char    **scans;                  /* statements prepared here by name (a scan's
	                                     shape, the n-row INSERTs, ...) */
	size_t    nscans;
	int       broken;                 /* the server went away: reconnect before use */
	int       in_tx;                  /* a transaction is open on it */
	/* The postings this connection read in read brackets (postgres_index.c),
	** NULL until its first; an entry is kept while its bucket's stamp stays. */
	a2m_pcache *pcache;
	/* A read bracket's snapshot (postgres_pool.c): */
	uint64_t  version;                /* a2m_state.version it sees */
	a2m_index_stats stats;            /* the index's figures it sees */
	int       stats_known;
	uint64_t  term_stamps[PG_TERM_BUCKETS]; /* a2m_state.term_stamps it sees */
	int       stamps_known;
	int64_t   batch_base, batch_last; /* the batch rows it sees: ids (base, last] */
	double    salience_max;           /* a2m_state.salience_max it sees (store.h, */
	int       salience_known;         /* salience_bound) */
	/* The batch rows (postgres_batches.c) this connection read, NULL until its
	** first; kept across brackets and reconnects: a committed row never changes. */
	a2m_pg_batches *batches;
} pgconn;

typedef struct a2m_pg_pool a2m_pg_pool;
typedef struct a2m_pg_held a2m_pg_held;
typedef struct a2m_pg_index a2m_pg_index;
typedef struct a2m_pg_vectors a2m_pg_vectors;
typedef struct a2m_pg_listen a2m_pg_listen;

/*
** The fold's state, as a2m_state holds it (batch_last, fold_base,
** fold_horizon, fold_budget, fold_cursor) and a write transaction moves
** it: a pass folds the rows (base, horizon] term by term, budget terms per
** transaction, terms after cursor next (has_cursor 0: from the first).
*/
typedef struct pg_fold {
	int64_t       last, base, horizon;
	int64_t       budget;
	int           has_cursor;
	unsigned char *cursor;   /* the last term folded by the pass (malloc'd) */
	size_t        cursor_len;
	int           dirty;     /* moved in this transaction: the commit writes it */
} pg_fold;

typedef struct pgstore {
	a2m_store        base;
	const a2m_pq_api *pq;
	char            *conninfo;      /* secret: never logged (a2m_pg_describe) */
	char            *where;         /* what may be said of it: host, port, database */
	char            *schema;        /* NULL: whatever search_path creates in */
	int64_t          lock_class;    /* the advisory locks' first key */
	int32_t          lock_write;    /* ... the write lock's second */
	int32_t          lock_schema;   /* ... the migrations' */
	char             channel[64];   /* the notification channel */
	char             origin[20];    /* this store's name in its notifications */
	pgconn           main;          /* the writer's connection */
	a2m_pg_pool     *pool;          /* read brackets' connections */
	/* The write transaction (postgres_txn.c): */
	int              in_tx;         /* begin() ran and no commit/rollback yet */
	int              tx_failed;     /* a statement failed in it: only rollback is left */
	int              relaxed;       /* it commits with synchronous_commit off */
	int64_t          seq_next;      /* the next seq to give out (read at begin) */
	int64_t          seq_start;     /* seq_next when the transaction began */
	uint64_t         tx_version;    /* a2m_state.version when it began */
	double           tx_salience;   /* a2m_state.salience_max when it began, and as
	                                   its writes raised it (salience_bound) */
	int              tx_raised;     /* its commit raises salience_max to tx_salience */
	int              wrote;         /* it changed something: the version moves at commit */
	int              logged;        /* it appended events: its commit sends NOTIFY */
	a2m_pg_held     *held;          /* inserts not yet written (postgres_held.c) */
	pg_fold          fold;          /* the index's batch rows and fold, as it began
	                                   and as it moved them (postgres_fold.c) */
	int64_t          fold_last0;    /* fold.last when it began */
	a2m_pg_index    *index;         /* NULL until index_attach */
	a2m_pg_vectors  *vectors;
	a2m_pg_listen   *listen;        /* the listener thread, once asked for */
	/*
	** The store's stamp (store.h, stamp): moved by every write of a record
	** here, a rollback, and a begin that finds the deployment's version
	** is not stamp_version, the one this store last began or committed at
	** (another server committed in between: open_tx, postgres_txn.c).
	*/
	uint64_t         stamp;
	uint64_t         stamp_version;
	int              stamp_known;   /* stamp_version holds a version */
	/* The newest a2m_state.version this process has seen (any thread). */
	_Atomic uint64_t version_seen;
	int              unembedded_index;
	char             index_version[160]; /* the analysis this server indexes with */
} pgstore;

/* ---- postgres_conn.c, postgres_wire.c: connections, statements, values ----- */

/*
** Statement parameters: up to max values, each text (format 0) or binary
** (format 1), the binary numbers kept in the struct itself.
*/
typedef struct pgparams {
	int          n, max;
	const char **values;
	int         *lengths;
	int         *formats;
	char       (*num)[8];
	/* For the few fixed statements, storage in the struct: */
	const char  *v_[24];
	int          l_[24], f_[24];
	char         num_[24][8];
} pgparams;

/* Zeroed params with room for 24 values. */
void a2m_pg_params_init(pgparams *p);
/* Room for max values (a held INSERT's); returns 0, or -1 when memory runs out. */
int  a2m_pg_params_alloc(pgparams *p, int max);
void a2m_pg_params_free(pgparams *p);
/* Appends a value: text (NULL = SQL NULL), int8, float8, bool, bytea (binary). */
void a2m_pg_param_text(pgparams *p, const char *s);
void a2m_pg_param_int8(pgparams *p, int64_t v);
void a2m_pg_param_float8(pgparams *p, double v);
void a2m_pg_param_bool(pgparams *p, int v);
void a2m_pg_param_bytea(pgparams *p, const void *data, size_t len);

/*
** Opens c (closing what it held) with s's conninfo and settings: UTF-8,
** the schema, no notices on stderr. Returns 0, or A2M_INTERNAL_ERROR with
** s->base.errmsg saying the store is unavailable and why (never the
** connection string).
*/
int  a2m_pg_connect(pgstore *s, pgconn *c);

/* Closes c and forgets what it prepared. */
void a2m_pg_disconnect(pgstore *s, pgconn *c);

/*
** Before using c outside a transaction: reconnects it if the server went
** away since (the next request after an outage finds the server back by
** itself). Returns 0, or A2M_INTERNAL_ERROR with errmsg set.
*/
int  a2m_pg_ready(pgstore *s, pgconn *c);

/*
** Runs statement st on c (preparing it first if c has not), results in
** binary. *res is set on success (PGRES_COMMAND_OK or TUPLES_OK; the
** caller PQclear()s it) and NULL on failure. Returns 0, A2M_INVALID_PARAMS
** for a unique violation (errmsg names op), or A2M_INTERNAL_ERROR with
** errmsg set; a lost server marks c broken and says so.
*/
int  a2m_pg_run(pgstore *s, pgconn *c, pg_stmt st, const pgparams *p, const char *op,
		PGresult **res);

/*
** Runs a statement prepared under name from sql (prepared on c the first
** time that name is run there; a2m_pg_run's answers).
*/
int  a2m_pg_run_named(pgstore *s, pgconn *c, const char *name, const char *sql,
		      const pgparams *p, const char *op, PGresult **res);

/*
** One statement of a pipeline: a prepared one by number (st), or text
** (st PG_NSTMTS, sql) sent as it is, or, with a name too, prepared under
** that name as a2m_pg_run_named does; either with params p (NULL: none).
** keep: *res gets its result (the caller clears it), else it is dropped.
*/
typedef struct pgstep {
	pg_stmt         st;
	const char     *sql;
	const pgparams *p;
	int             keep;
	PGresult       *res;
	const char     *name;
} pgstep;

/*
** Sends steps[0..n) in one round trip (libpq's pipeline mode) and reads
** their results in order. Returns 0 when every one succeeded, else the
** first failure's code, as a2m_pg_run reports it; the statements after a
** failed one did not run. Statements not yet prepared on c are prepared
** first (a round trip each, once per connection).
*/
int  a2m_pg_pipeline(pgstore *s, pgconn *c, pgstep *steps, size_t n, const char *op);

/* Runs fixed SQL (one or more statements, no parameters, text results). */
int  a2m_pg_exec(pgstore *s, pgconn *c, const char *sql, const char *op, PGresult **res);

/*
** Checks a result: 0 for PGRES_COMMAND_OK / TUPLES_OK, else the code
** a2m_pg_run documents (clears res). For callers of libpq's own calls.
*/
int  a2m_pg_check(pgstore *s, pgconn *c, PGresult *res, const char *op);

/* Whether c lost its server (the last failure was the connection's). */
int  a2m_pg_lost(pgstore *s, pgconn *c);

/* Cell readers for binary results. */
int64_t a2m_pg_int8(pgstore *s, const PGresult *r, int row, int col);
int32_t a2m_pg_int4(pgstore *s, const PGresult *r, int row, int col);
double  a2m_pg_float8(pgstore *s, const PGresult *r, int row, int col);
int     a2m_pg_isnull(pgstore *s, const PGresult *r, int row, int col);
/* A copy of a text cell (NULL for SQL NULL; *oom set when memory runs out). */
char   *a2m_pg_text(pgstore *s, const PGresult *r, int row, int col, int *oom);

/* Big-endian helpers for binary values. */
void    a2m_pg_put64(char *out, uint64_t v);
uint64_t a2m_pg_get64(const char *in);
void    a2m_pg_put32(char *out, uint32_t v);
uint32_t a2m_pg_get32(const char *in);

/*
** A binary array value (PostgreSQL's array wire format) being built: one
** dimension of n elements of type oid, each given as bytes (or NULL).
*/
typedef struct pgarray {
	char  *buf;
	size_t len, cap;
	size_t count_at;     /* where the element count goes */
	int    n;
	int    oom;
} pgarray;

void a2m_pg_array_begin(pgarray *a, unsigned oid);
void a2m_pg_array_add(pgarray *a, const void *data, size_t len);
void a2m_pg_array_null(pgarray *a);
void a2m_pg_array_int8(pgarray *a, int64_t v);
void a2m_pg_array_int4(pgarray *a, int32_t v);
void a2m_pg_array_bool(pgarray *a, int v);
/* Finishes a: returns 0, or -1 when memory ran out (a freed). */
int  a2m_pg_array_end(pgarray *a);
void a2m_pg_array_free(pgarray *a);

/* PostgreSQL type oids the engine sends. */
#define PG_OID_BOOL   16
#define PG_OID_BYTEA  17
#define PG_OID_INT8   20
#define PG_OID_INT4   23
#define PG_OID_TEXT   25

/* ---- postgres_rows.c: a record's row ------------------------------------- */

/*
** Appends the parameters of rec's row in PG_COLUMNS order but seq (id
** first, then content .. gen_embedding), as PG_UPDATE and every row of a
** held INSERT take them. rec must outlive the statement; scratch holds the
** vectors' bytes until the statement ran (the caller frees it with free()).
** Returns 0, or -1 when memory runs out.
*/
int  a2m_pg_bind_record(pgparams *p, const a2m_record *rec, char **scratch);

/* Fills the zeroed rec from row of r (PG_COLUMNS). Returns 0 or fails (rec cleared). */
int  a2m_pg_read_row(pgstore *s, const PGresult *r, int row, a2m_record *rec);

/* ---- postgres_schema.c: migrations ---------------------------------------- */

/*
** Brings the deployment's schema to this build's version, each missing
** step in one transaction, under the migration lock, so any number of
** servers may start together against an empty database; refuses a newer
** schema. Read-only: checks the version only. Returns 0 or fails.
*/
int  a2m_pg_migrate(pgstore *s, int read_only);

/* ---- postgres_txn.c: transactions, the write lock, meta ------------------- */

int  a2m_pg_begin(a2m_store *base);
int  a2m_pg_begin_relaxed(a2m_store *base);
int  a2m_pg_commit(a2m_store *base);
void a2m_pg_rollback(a2m_store *base);
int  a2m_pg_meta_get(a2m_store *base, const char *name, char **value);
int  a2m_pg_meta_set(a2m_store *base, const char *name, const char *value);

/*
** A write op called outside a transaction runs in one of its own: *own is
** set when this call began it, and a2m_pg_autocommit_end() then commits
** (rc 0) or rolls it back. A write op inside a transaction that already
** failed is refused (A2M_INTERNAL_ERROR, the first failure's message kept).
*/
int  a2m_pg_autocommit_begin(pgstore *s, int *own);
int  a2m_pg_autocommit_end(pgstore *s, int own, int rc);

/* A statement of the open transaction failed: only rollback is left. */
void a2m_pg_tx_fail(pgstore *s);

/* The deployment's state row (a2m_state) as one connection reads it. */
typedef struct pgstate {
	uint64_t        version;   /* moves at every commit that wrote */
	int64_t         seq;       /* the last seq given out */
	a2m_index_stats stats;     /* the term index's figures */
} pgstate;

/* Reads the state row on c (and notes its version). Returns 0 or fails. */
int  a2m_pg_state(pgstore *s, pgconn *c, const char *op, pgstate *out);

/* The store-level version advanced to v (seen anywhere): noted, never moved back. */
void a2m_pg_saw_version(pgstore *s, uint64_t v);

/* ---- postgres_pool.c: read brackets --------------------------------------- */

/* The connection this thread reads through: its bracket's, else main. */
pgconn *a2m_pg_conn(pgstore *s);
/* Whether this thread holds a bracket on s. */
int  a2m_pg_in_bracket(pgstore *s);

a2m_pg_pool *a2m_pg_pool_new(void);
void a2m_pg_pool_free(pgstore *s, a2m_pg_pool *p);
int  a2m_pg_read_begin(a2m_store *base);
int  a2m_pg_read_end(a2m_store *base);

/*
** Opens a snapshot on c (one REPEATABLE READ, READ ONLY transaction), its
** state read into c: version, figures, stamps and batch rows. Returns 0
** or fails. a2m_pg_snapshot_end ends it (never fails: a connection that
** failed there is made again at its next use).
*/
int  a2m_pg_snapshot(pgstore *s, pgconn *c);
void a2m_pg_snapshot_end(pgstore *s, pgconn *c);

/*
** Runs fn on a connection of the pool, outside any bracket, from any thread
** (the version op and the listener's reads). Returns fn's answer, or
** A2M_INTERNAL_ERROR when no connection could be had.
*/
int  a2m_pg_with_conn(pgstore *s, int (*fn)(pgstore *s, pgconn *c, void *ctx), void *ctx);

/* ---- postgres_read.c: reads ------------------------------------------------ */

int a2m_pg_get(a2m_store *base, const char *id, a2m_record **out);
int a2m_pg_get_by_key(a2m_store *base, const char *owner, const char *key, a2m_record **out);
int a2m_pg_scan(a2m_store *base, const a2m_query *q, a2m_record_visit visit, void *ctx);
int a2m_pg_count(a2m_store *base, const a2m_query *q, int64_t *out);
int a2m_pg_visit_seqs(a2m_store *base, const int64_t *seqs, size_t n,
		      a2m_record_visit visit, void *ctx);
int a2m_pg_scan_unembedded(a2m_store *base, const char *tier, a2m_record_visit visit,
			   void *ctx);

/*
** The connection a read of this thread uses, made ready (*c): its read
** bracket's, else main (reconnected outside a transaction; inside one,
** the held inserts written first so the read sees them). 0 or fails.
*/
int a2m_pg_read_conn(pgstore *s, pgconn **c);
/* After a read on c failed with rc: a write transaction on main can only
** roll back now. Returns rc. */
int a2m_pg_read_failed(pgstore *s, pgconn *c, int rc);

/*
** Steps a single-row lookup's result: *out = a new record or NULL. Clears r.
*/
int a2m_pg_fetch_one(pgstore *s, PGresult *r, a2m_record **out);

/* ---- postgres_held.c: inserts held back ------------------------------------ */

a2m_pg_held *a2m_pg_held_new(void);
void a2m_pg_held_free(a2m_pg_held *h);
/* Copies rec (its seq given) to be written later. Returns 0 or fails. */
int  a2m_pg_held_add(pgstore *s, const a2m_record *rec);
/* Writes what is held, in multi-row INSERTs and one UPDATE of the touches.
** Returns 0, or fails (the transaction can only be rolled back then). */
int  a2m_pg_held_flush(pgstore *s);
/*
** Holds a touch (store.h), written after the held inserts, with every
** other touch held, in one statement. Returns 0 or fails (out of memory).
*/
int  a2m_pg_held_touch(pgstore *s, int64_t seq, int64_t add, int64_t at);
/* Forgets what is held (rollback). */
void a2m_pg_held_drop(a2m_pg_held *h);
/* Whether id is held (an insert not yet written). */
int  a2m_pg_held_has(const a2m_pg_held *h, const char *id);
/*
** Whether a get of id must write what is held first: a held insert has
** the id, or a touch is held (it may be of that record). For any other
** id the table answers as it would after the flush.
*/
int  a2m_pg_held_for_get(const a2m_pg_held *h, const char *id);
#ifdef A2M_TEST_HOOKS
/* How many flushes wrote something, since the process started (tests). */
long a2m_pg_held_flushes_for_tests(void);
#endif

/* ---- postgres_index.c: the term index ---------------------------------------- */

/*
** The index kept with ix, built (or rebuilt, when the deployment's index
** was made by another analysis, or never) inside the caller's transaction.
*/
int  a2m_pg_index_attach(pgstore *s, a2m_indexer *ix);
void a2m_pg_index_free(a2m_pg_index *x);
/* Analyses text with the index's analyser (release with a2m_pg_index_release). */
int  a2m_pg_index_analyze(pgstore *s, const char *text, a2m_doc_terms *dt);
void a2m_pg_index_release(pgstore *s, a2m_doc_terms *dt);
/* Buffers the addition (+1) or removal (-1) of record seq's postings. */
int  a2m_pg_index_apply(pgstore *s, int64_t seq, const a2m_doc_terms *dt, int sign);
/* Writes the buffered postings (before any read of the index, and at commit). */
int  a2m_pg_index_flush(pgstore *s);
/*
** The fold's step of a write transaction that wrote postings (at its
** commit, after the last flush; postgres_fold.c). Returns 0 or fails.
*/
int  a2m_pg_index_fold(pgstore *s);
/* The figures the transaction adds to a2m_state at commit. */
void a2m_pg_index_pending(const pgstore *s, a2m_index_stats *out);
/*
** Appends to the commit's UPDATE of a2m_state the assignments that move
** the stamps of the buckets whose terms the transaction changed to the
** commit's version (", term_stamps[i] = version + 1" each; nothing when it
** changed none). Running out of memory is sql's (a2m_buf: failed).
*/
void a2m_pg_index_stamp_sql(const pgstore *s, a2m_buf *sql);
/* The transaction ended, either way: forget its buffer and its buckets. */
void a2m_pg_index_end(pgstore *s);
int  a2m_pg_index_stats(a2m_store *base, a2m_index_stats *out);
int  a2m_pg_index_view(a2m_store *base, const char *term, size_t len,
		       const a2m_posting **v, size_t *n);
/* A read bracket began (its snapshot's version known) or ends on c. */
void a2m_pg_index_bracket(pgconn *c, int begins);
int  a2m_pg_index_postings(a2m_store *base, const char *term, size_t len,
			   a2m_posting_visit visit, void *ctx);

/* ---- postgres_segments.c: the term index's rows ---------------------------------- */

/*
** One term's change in a flush: its entries encoded as one list of the
** segments' codec (sqlite_segments.h, a2m_seg_put: postings and
** tombstones in ascending seq), entries of them, the highest seq last_seq.
*/
typedef struct pg_term_list {
	const char          *term;
	size_t               len;
	const unsigned char *data;
	size_t               size;
	int64_t              entries;
	int64_t              last_seq;
} pg_term_list;

/*
** Writes t[0..n) (in ascending term order, bytes then length) into
** a2m_postings_seg inside the write transaction on main: each list
** appended to its term's tail, and the tails grown past their bound sealed
** (merged with the term's newest sealed rows) into rows numbered seg.
** Returns 0 or fails (the transaction can only roll back).
*/
int a2m_pg_segs_write(pgstore *s, const pg_term_list *t, size_t n, int64_t seg);

/*
** Reads term's rows on c and resolves them with its lists in the batch
** rows of c's snapshot (c->batch_base, c->batch_last; those c's cache
** lacks are read in the same round trip): its live postings, ascending
** seq, in a new array *v (the caller frees; *n of them). Returns 0 or
** fails.
*/
int a2m_pg_segs_read(pgstore *s, pgconn *c, const char *term, size_t len, a2m_posting **v,
		     size_t *n);

/*
** Merges one term's n lists (oldest first; newest wins per seq, every
** tombstone kept) into one list appended to out: *entries of them, the
** highest seq *last. Returns 0, -1 when memory runs out, -2 when a list
** is corrupt.
*/
struct a2m_seg_list;
struct a2m_seg_bytes;
int a2m_pg_segs_merge(struct a2m_seg_list *lists, size_t n, struct a2m_seg_bytes *out,
		      int64_t *entries, int64_t *last);

/*
** Resolves one term's n rows (data[i], size[i] bytes, in seg order: the
** tail, tail[i] set, last) into its live postings, a new array *v of
** *count (hint: room to start with). tail NULL: no row is a tail.
** Returns 0, -1 when memory runs out, -2 when a row is not a list.
*/
int a2m_pg_segs_resolve(const unsigned char *const *data, const size_t *size, const int *tail,
			size_t n, size_t hint, a2m_posting **v, size_t *count);

/* ---- postgres_batches.c: the index's newest rows, one per flush ------------------- */

/* A term of a cached batch row: its bytes and its list's, inside the row. */
typedef struct pg_batch_term {
	const unsigned char *term, *list;
	size_t               tlen, lsize;
} pg_batch_term;

/* A batch row read (or written) by a connection: its bytes, its terms in order. */
typedef struct pg_batch {
	int64_t        id;
	unsigned char *data;
	size_t         size;
	pg_batch_term *terms;
	size_t         nterms;
} pg_batch;

/* A connection's cache of batch rows, ascending id. */
struct a2m_pg_batches {
	pg_batch *v;
	size_t    n, cap;
};

void a2m_pg_batches_free(a2m_pg_batches *b);

/*
** Makes c's cache hold exactly the batch rows (base, last] (those of c's
** snapshot, or of the write transaction on main): drops the others and
** fetches the missing ones in one statement. Returns 0 or fails (a row
** missing or not a block of terms is reported as the index's corruption).
*/
int  a2m_pg_batches_sync(pgstore *s, pgconn *c, int64_t base, int64_t last);

/*
** The fetch of the batch rows c lacks, planned to go with other statements
** in one round trip: a2m_pg_batches_plan drops c's rows outside (base,
** last] and, when some are missing (want of them), makes step the
** statement that reads them; a2m_pg_batches_absorb adds its result to c's
** cache. Either returns 0 or fails as a2m_pg_batches_sync does; the
** caller frees ids (a2m_pg_array_free) whatever happened.
*/
typedef struct pgbatchget {
	pgarray  ids;
	pgparams p;
	pgstep   step;
	size_t   want;
} pgbatchget;
int  a2m_pg_batches_plan(pgstore *s, pgconn *c, int64_t base, int64_t last, pgbatchget *g);
int  a2m_pg_batches_absorb(pgstore *s, pgconn *c, pgbatchget *g, const PGresult *r);

/* Drops c's cached rows of ids above id (a rolled-back transaction's own). */
void a2m_pg_batches_evict_above(pgconn *c, int64_t id);

/* The term's entry in row (binary search), or NULL. */
const pg_batch_term *a2m_pg_batch_find(const pg_batch *row, const char *term, size_t len);

/* The first term of row after term (len bytes): where a walk from term starts. */
size_t a2m_pg_batch_after(const pg_batch *row, const unsigned char *term, size_t len);

/* Rows (ascending id) walked in term order: at[i] is row i's next term. */
typedef struct pg_walk {
	const pg_batch *rows;
	size_t          k;
	size_t         *at;
} pg_walk;

/* The smallest next term of w's rows, or NULL when every row is done. */
const pg_batch_term *a2m_pg_walk_next(const pg_walk *w);

/*
** Takes term t (a2m_pg_walk_next's) from w: each row whose next term it
** is moves past it, its list set up in lists[] (oldest first; NULL: not
** wanted), *n of them.
*/
struct a2m_seg_list;
void a2m_pg_walk_take(pg_walk *w, const pg_batch_term *t, struct a2m_seg_list *lists,
		      size_t *n);

/*
** Writes t[0..n) (ascending terms) as the batch row id, on main inside the
** write transaction, and adds it to main's cache. Returns 0 or fails.
*/
int  a2m_pg_batches_put(pgstore *s, int64_t id, const pg_term_list *t, size_t n);

/* ---- postgres_fold.c: batch rows folded into the terms' rows --------------------- */


/*
** One step of the fold inside the write transaction on main (its cache
** synced to (base, last] first): starts a pass when enough rows wait,
** folds the next budget terms of the pass into their tails (sealing as
** a2m_pg_segs_write does), and ends the pass, deleting its rows, when no
** term is left. Returns 0 or fails (the transaction can only roll back).
*/
int  a2m_pg_fold_step(pgstore *s, pg_fold *f);

/* ---- postgres_vectors.c: vector search -------------------------------------- */

a2m_pg_vectors *a2m_pg_vectors_new(void);
void a2m_pg_vectors_free(a2m_pg_vectors *v);
void a2m_pg_vectors_begin(a2m_pg_vectors *v);
/* The transaction committed, moving the version from to to (this server's commit). */
void a2m_pg_vectors_commit(a2m_pg_vectors *v, uint64_t from, uint64_t to);
void a2m_pg_vectors_rollback(a2m_pg_vectors *v);
void a2m_pg_vectors_put(a2m_pg_vectors *v, const a2m_record *rec);
/* Whether the cache is built (it then holds each vector's tier). */
int  a2m_pg_vectors_built(const a2m_pg_vectors *v);
void a2m_pg_vectors_remove(a2m_pg_vectors *v, int64_t seq);
int  a2m_pg_vectors_search(a2m_store *base, const a2m_vector_search *q, a2m_candidates *out);

/* ---- postgres_extend.c: the extensions' ops (store.h) ------------------------ */

int a2m_pg_history_put(a2m_store *base, const a2m_revision *rev, size_t keep);
int a2m_pg_history_visit(a2m_store *base, const char *id, size_t max,
			 a2m_revision_visit visit, void *ctx);
int a2m_pg_next_expiry(a2m_store *base, int64_t *at);
int a2m_pg_scan_expired(a2m_store *base, int64_t by, a2m_record_visit visit, void *ctx);
int a2m_pg_by_fingerprint(a2m_store *base, uint64_t fp, a2m_record_visit visit, void *ctx);

/* ---- postgres_check.c: consistency (store.h, check and repair) -------------- */

int a2m_pg_store_check(a2m_store *base, const a2m_check_options *o);
int a2m_pg_store_repair(a2m_store *base, const a2m_check_options *o, unsigned areas);

/* ---- postgres_events.c, postgres_listen.c: one log for the deployment ------- */

int  a2m_pg_events_append(a2m_store *base, const a2m_event_row *rows, size_t n,
			  int64_t retain, uint64_t *first);
int  a2m_pg_events_read(a2m_store *base, uint64_t after, size_t max, a2m_event_rows *out);
int  a2m_pg_watch(a2m_store *base, a2m_store_watch_fn fn, void *ctx);
uint64_t a2m_pg_version(a2m_store *base);
/* Stops the listener thread and frees it. NULL is a no-op. */
void a2m_pg_listen_free(a2m_pg_listen *l);

#endif
