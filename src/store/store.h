/*
** store.h — the storage seam: what a storage engine must do for the layers
** above it, and nothing about why.
**
** A store holds records and answers simple, exact selections (by id, by key,
** by tier/owner/session/key prefix, in creation order); it also keeps a few
** named store-level settings (meta_get/meta_set). It never decides
** policy: placement, spilling, scoping rules, ranking and the meaning of
** `where` all live above it (stack/, rank/). Three engines implement it:
** memory.c, sqlite.c and postgres.c; every behavioural test runs against
** each.
**
** Conventions for every function pointer below:
**   - return 0 on success, a negative enum a2m_code on failure (usually
**     A2M_INTERNAL_ERROR), with a message in store->errmsg;
**   - a record passed in is borrowed; a record handed out through `out` is
**     owned by the caller (free with a2m_record_free());
**   - a record passed to a visit callback is borrowed for that call only.
**   - writes between begin() and commit() are one transaction; rollback()
**     undoes every write since begin(). A write outside a transaction
**     commits on its own. begin() inside a transaction and commit() without
**     one are errors. A failed commit() leaves nothing written (the engine
**     rolls back), so the outcome is always all or nothing.
**   - an id or (owner, key) that would collide on insert or update is
**     refused with A2M_INVALID_PARAMS and changes nothing. Inside a
**     transaction, SQLite may refuse a colliding insert only at a later op
**     of that transaction or at commit() (it writes inserts several rows
**     per statement, sqlite_held.c); the transaction can then only be
**     rolled back, and nothing of it lands.
**   - a visit callback may write; records it inserts are not visited by the
**     scan in progress, and no record is visited twice.
**   - a store is used by one thread at a time (the handle's lock sees to it),
**     except for read brackets (read_begin), which threads hold at once.
**   - a store opened read-only (s->read_only set; SQLite and PostgreSQL)
**     refuses every write (insert, update, remove, meta_set) with
**     A2M_READ_ONLY before touching anything. begin(), commit() and rollback() still work there:
**     they bracket reads, which then see one consistent snapshot.
**   - a store whose data lives in a server (PostgreSQL) answers every op
**     with A2M_INTERNAL_ERROR and an errmsg beginning "store unavailable"
**     while that server cannot be reached; the op after it is back
**     reconnects by itself. A transaction the outage cut is gone: its ops
**     fail until rollback().
*/
#ifndef A2M_STORE_H
#define A2M_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "store/record.h"
#include "store/store_index.h"
#include "store/store_open.h"

typedef struct a2m_store a2m_store;

/*
** An exact selection. Zero-initialise, then set what narrows it; every field
** left zero/NULL selects everything.
*/
typedef struct a2m_query {
	const char *tier;       /* only records in this tier */
	int         by_owner;   /* nonzero: only records whose owner equals owner */
	const char *owner;      /*   (NULL then means: records with no owner) */
	int         by_session; /* nonzero: only records whose session equals session */
	const char *session;    /*   (NULL then means: records with no session) */
	const char *key_prefix; /* only records whose key starts with this string */
	const char *group;      /* only records in this group */
	/*
	** Only records created at or after created_min / at or before
	** created_max (ms); 0 leaves that end open. Set by the stack from a
	** `where` range on created_at (x-where), which it still applies to
	** every record: an engine may serve them from its (created_at, seq)
	** order, and one that ignored them would only read more.
	*/
	int64_t     created_min;
	int64_t     created_max;
	int         descending; /* scan newest first; default oldest first */
	/*
	** Nonzero: scan need only fill what capacity weighs (the stack's
	** flow.c): id, seq, created_at, group, tier, session, salience,
	** accessed_at and access_count; every other field may be NULL or 0.
	** An engine that reads rows whole skips the rest of each (SQLite,
	** PostgreSQL); one whose records cost nothing to lend (memory) may
	** fill them all. count ignores it.
	*/
	int         brief;
} a2m_query;

/*
** Called for each selected record in (created_at, seq) order. Return 0 to
** continue, a positive value to stop the scan early (scan then returns 0),
** or a negative code to abort it (scan returns that code).
*/
typedef int (*a2m_record_visit)(const a2m_record *rec, void *ctx);

/*
** ---- Revision history (optional: history_put and history_visit) --------
**
** An engine that keeps the earlier revisions of keyed records (x-history,
** docs/PROTOCOL.md) stores each one the stack hands it in the transaction
** of the write that superseded it, and keeps at most `keep` per record.
** Its remove() then deletes the history of the record it removes, in the
** same transaction: forgetting a key forgets what it used to say.
*/

/* One earlier revision of a record. Strings are NUL-terminated UTF-8. */
typedef struct a2m_revision {
	const char *id;            /* the record's id (a key replacement keeps it) */
	int64_t     revision;      /* the revision this was */
	const char *content;
	const char *role;          /* NULL when absent */
	const char *metadata;      /* JSON text; NULL when absent */
	const char *owner;         /* who wrote it; NULL when no owner */
	int64_t     created_at;    /* when this revision was written (ms); 0 = unknown */
	int64_t     superseded_at; /* when the next revision replaced it (ms) */
} a2m_revision;

/* Called for each revision, borrowed for the call. Return as a2m_record_visit. */
typedef int (*a2m_revision_visit)(const a2m_revision *rev, void *ctx);

/* What vector_search measures for each row r against the query q. */
typedef enum a2m_vector_measure {
	A2M_VECTOR_COSINE = 0,  /* q·r / (|q| |r|), in [-1,1]; 0 when either is zero */
	A2M_VECTOR_DOT    = 1,  /* q·r */
	A2M_VECTOR_L2     = 2   /* |q − r| */
} a2m_vector_measure;

/* A tier's rule in a filter: no row, every row, or the rows of one owner. */
enum { A2M_VF_SKIP = 0, A2M_VF_ALL = 1, A2M_VF_OWNER = 2 };

/*
** Which rows a search may leave out because the caller would turn them away
** anyway. For each tier the store holds rows of (name NULL: records without
** a tier), tier() answers A2M_VF_SKIP, A2M_VF_ALL, or A2M_VF_OWNER with
** *owner set (borrowed; NULL = rows without an owner). It may only narrow:
** the caller still checks every candidate.
*/
typedef struct a2m_vector_filter {
	int  (*tier)(void *ctx, const char *name, const char **owner);
	void *ctx;
} a2m_vector_filter;

typedef struct a2m_vector_search {
	const float        *vector;
	size_t              dims;
	a2m_vector_measure  measure;
	const a2m_vector_filter *filter;   /* NULL: every row */
	/*
	** 0: each score is the measure. 1: each score only bounds it, from a
	** 16-bit sketch of the rows (a fraction of the bytes to read): at least
	** the cosine or dot product, at most the distance, that the float32
	** measure of vector_index.h gives for the pair.
	*/
	int                 bound;
	/*
	** 0: the caller's vectors (a record's embedding). 1: the server's own
	** (gen_embedding, docs/EMBEDDINGS.md §4), a second space searched
	** apart: the two are never compared with each other.
	*/
	int                 generated;
	/*
	** 0: every row that passes the filter is listed (exact, or bounds).
	** Above 0 (bound ignored): the approximate search of the server's
	** quantized mode. Every row is read as an 8-bit code; the pool rows
	** whose code measures best are then measured exactly, in float32, and
	** only they are listed, each with its exact figure, out->approximate
	** set and out->approx_rest the best code figure of a row left out
	** (the raw measure: least distance for l2). When no more than pool
	** rows pass the filter, every one is listed and the list is exact
	** (out->approximate 0).
	*/
	size_t              pool;
} a2m_vector_search;

/*
** ---- Consistency (optional: check and repair) ----------------------------
**
** What a store derives from its records (its term index, kept counts, seq
** mark, vector rows, procedural mirror) must agree with them; `a2m check`
** (server/check.c) asks the engine to verify that, and to rebuild what
** disagrees. The engine reports what it found, one line at a time, under
** the area it concerns; it never changes a record's content.
*/
typedef enum a2m_check_area {
	A2M_CHECK_FILE = 0,   /* the storage itself (SQLite: integrity_check, schema) */
	A2M_CHECK_COUNTS,     /* the kept counts per (tier, session) */
	A2M_CHECK_INDEX,      /* the term index: exactly the postings the records' text yields */
	A2M_CHECK_SEQS,       /* seqs unique and at most the seq mark */
	A2M_CHECK_VECTORS,    /* vectors and the rows kept of them */
	A2M_CHECK_MIRROR,     /* the procedural mirror's files */
	A2M_CHECK_EVENTS,     /* a shared event log (PostgreSQL): one run of seqs up to its head */
	A2M_CHECK_HISTORY,    /* x-history: revisions of live keys, below the live one, bounded */
	A2M_CHECK_EXPIRY,     /* x-expiry: expiry times sane, the expiry index as the records say */
	A2M_CHECK_DEDUP,      /* x-dedup: each fingerprint that of its record's content */
	A2M_CHECK_GROUPS,     /* no group across tiers: checked above the store */
	A2M_CHECK_AREAS
} a2m_check_area;

/* The area's name as check prints it ("file", "counts", ...). */
const char *a2m_check_area_name(a2m_check_area area);

typedef struct a2m_check_options {
	/*
	** The analyser the index must have been built with (borrowed); NULL:
	** the index is not checked (nor rebuilt).
	*/
	a2m_indexer *ix;
	/*
	** The procedural mirror to compare (SQLite; both set, or neither):
	** the directory and the tier it mirrors (store.h, a2m_sqlite_options).
	*/
	const char  *procedural_dir;
	const char  *procedural_tier;
	/*
	** Receives each finding: its area, problem 0 (a summary of what was
	** found right: one per area checked) or 1 (one line per problem, or a
	** few and a count), and a one-line message (borrowed for the call).
	*/
	void (*report)(void *ctx, a2m_check_area area, int problem, const char *msg);
	void  *ctx;
	/*
	** Receives how far a long walk of the check has come (NULL: nobody
	** asks): its area, what it counts ("records", "postings", ...; a
	** literal), done and total (-1: not known). Called with done 0 as a
	** walk starts, then at most once per A2M_CHECK_PROGRESS_EVERY units
	** (and at least every that many), and last with done == total as it
	** ends: only that call has them equal, so the receiver knows a line it
	** shows can go. Same ctx as report.
	*/
	void (*progress)(void *ctx, a2m_check_area area, const char *unit, int64_t done,
			 int64_t total);
	/*
	** x-dedup: the fingerprint a write gives a record's content and role
	** (the stack's); each kept fingerprint must be it. NULL: fingerprints
	** are not recomputed (nor repaired).
	*/
	uint64_t (*fingerprint)(const char *content, const char *role);
	/* x-history: the most earlier revisions kept per record (0: no bound checked). */
	size_t history_keep;
} a2m_check_options;

/* The units between two progress calls of one walk (a2m_check_options.progress). */
#define A2M_CHECK_PROGRESS_EVERY 1024

/*
** ---- What the servers of one deployment share (optional) -----------------
**
** An engine that several server processes write at once (PostgreSQL) keeps
** there what they must agree on: a number that moves with every commit,
** anyone's, so that what a server derived from the store (tier counts,
** describe, the vector width) is known stale; a way to hear of other
** servers' commits as they happen; and the event log of spec §4.12, so a
** cursor one server issued is valid on every other and across restarts.
*/

/*
** Called on a thread of the store's own (see watch). Returns the
** milliseconds after which it wants to be called again even if no other
** server commits meanwhile (0: at once), or -1: only at the next commit.
*/
typedef int64_t (*a2m_store_watch_fn)(void *ctx);

/* One event of a shared log, as the layers above hand it in and read it back. */
typedef struct a2m_event_row {
	uint64_t    seq;        /* its position, given by the store at append */
	int64_t     at;         /* ms since the epoch */
	const char *body;       /* the event object of spec §4.12, as JSON text */
	const char *owner;      /* with shared 0: only this owner sees it (NULL: no owner) */
	int         shared;     /* every caller may see it */
	const char *audience;   /* NULL, or JSON text: one [owner|null, shared] per id */
} a2m_event_row;

/* Events read back: strings owned by the struct (a2m_event_rows_free). */
typedef struct a2m_event_rows {
	a2m_event_row *v;
	size_t         n;
	uint64_t       oldest;  /* the oldest event retained; head + 1 when none is */
	uint64_t       head;    /* the newest event ever appended; 0 before the first */
	char           salt[40];/* the log's: names it in cursors (events.c) */
	char          *arena;   /* the strings' storage */
} a2m_event_rows;

/* Frees what a2m_event_rows holds and zeroes it. */
void a2m_event_rows_free(a2m_event_rows *r);

typedef struct a2m_store_ops {
	const char *engine;   /* "memory", "sqlite", "postgres" */

	int  (*begin)(a2m_store *s);
	/*
	** Begins a transaction whose commit need not survive a power loss:
	** bookkeeping such as a recall's access counts, never data a client is
	** told was stored. Later durable commits still cover it. An engine with
	** no cheaper commit runs begin().
	*/
	int  (*begin_relaxed)(a2m_store *s);
	/*
	** With a procedural mirror (SQLite), a successful commit then brings
	** the mirror's files up to date; a file that cannot be written does not
	** change commit's answer (see a2m_sqlite_options).
	*/
	int  (*commit)(a2m_store *s);
	void (*rollback)(a2m_store *s);
	/*
	** Optional (NULL: a durable commit is durable when commit() returns):
	** group commit, where durable commits share their fsyncs and commit()
	** returns once the change is written but before it is synced.
	** sync_owed(), called by the exclusive holder after a call's last
	** commit, returns 0 when the call owes no sync (it committed nothing
	** durable), else a ticket, clearing what was owed. sync_wait() — the
	** one op any thread may call at any time, and meant to be called
	** without the caller's lock, so others write meanwhile — returns 0
	** once every commit up to the ticket is durable (at once for ticket
	** 0), or a negative code with a message in msg (msglen bytes; not in
	** errmsg, which the exclusive holder owns) when the sync failed: the
	** ticket's changes were applied and may or may not survive a crash,
	** and the store refuses writes from then on.
	*/
	uint64_t (*sync_owed)(a2m_store *s);
	int  (*sync_wait)(a2m_store *s, uint64_t ticket, char *msg, size_t msglen);
	/*
	** Optional (NULL: none): sync_owed(), and the sync that ticket needs
	** begun now on a thread of the engine's, so the caller may go on with
	** work its answer does not wait for (a write's capacity pass, in a
	** transaction of its own: finish.c) while the disk syncs. The caller
	** still sync_wait()s for the ticket before it reports the write
	** durable. Returns what sync_owed() would.
	*/
	uint64_t (*sync_start)(a2m_store *s);
	/*
	** Optional: NULL in an engine whose reads need no bracket. (The memory
	** engine's tidies its scan order there, so its readers write nothing.)
	** read_begin() brackets a run of reads so they see one snapshot and pay
	** for one lock; read_end() ends the bracket. Both are no-ops inside a
	** write transaction, and brackets do not nest (the first read_end()
	** ends it). begin() ends the calling thread's open bracket first,
	** because a write transaction must start from the newest state, not
	** the bracket's snapshot; the reads after that transaction run
	** unbracketed. A write outside a transaction still commits on its own,
	** but write through begin(): on the bracket's old snapshot it may find
	** the file busy. read_begin() returns 0, or an error code with no
	** bracket open; read_end() cannot fail (also after a failed read) and
	** returns 0.
	**
	** Concurrent reads (the one exception to "one thread at a time"):
	** several threads may each hold their own bracket on the same store at
	** once, provided no write transaction and no write op runs meanwhile
	** (the caller's lock sees to it: brackets under a shared lock,
	** everything else under an exclusive one). The read ops a thread calls
	** between its read_begin() and read_end() (get, get_by_key, scan,
	** count, meta_get, visit_seqs, scan_unembedded, index_stats,
	** index_postings, index_postings_view) read through its own bracket. Ops called outside a
	** bracket are the exclusive holder's only. vector_search is never
	** called in a shared bracket: SQLite answers it from the store's one
	** vector cache. SQLite gives each bracket a connection of its own (a
	** store on ":memory:" has one only, and its brackets take turns);
	** read_begin() may wait for one until another thread's read_end().
	** A failure inside any bracket is reported in errmsg as usual (two at
	** once may mix their texts; the codes stay right).
	*/
	int  (*read_begin)(a2m_store *s);
	int  (*read_end)(a2m_store *s);

	/* *out = the record with this id, or NULL when there is none. */
	int  (*get)(a2m_store *s, const char *id, a2m_record **out);
	/* *out = the record at (owner, key), or NULL. owner NULL = no owner. */
	int  (*get_by_key)(a2m_store *s, const char *owner, const char *key,
			   a2m_record **out);
	/*
	** Inserts rec (id must be new; the caller checks). Assigns rec->seq.
	** Returns A2M_INVALID_PARAMS if the id already exists (inside a
	** transaction perhaps from a later op: see the conventions above),
	** A2M_READ_ONLY on a read-only store. rec may be freed on return.
	*/
	int  (*insert)(a2m_store *s, a2m_record *rec);
	/*
	** Replaces every field of the record with rec->id (seq is kept).
	** Returns A2M_UNKNOWN_RECORD when there is none, A2M_READ_ONLY on a
	** read-only store.
	*/
	int  (*update)(a2m_store *s, const a2m_record *rec);
	/*
	** Deletes the record with this id; *removed = 1 if it existed, else 0.
	** Returns A2M_READ_ONLY (and *removed = 0) on a read-only store.
	*/
	int  (*remove)(a2m_store *s, const char *id, int *removed);
	/*
	** Moves the record rec names (its id, seq and session, as last read)
	** from its tier, rec->tier, to tier `to` (either NULL: no tier) with
	** this salience, and changes nothing else: what a spill, a promotion
	** or a session's close writes. Its text, and so its index, are not
	** read. *moved = 1 when the record was there (in rec->tier and
	** rec->session: the bucket whose count moves), else 0 and nothing
	** changed. Returns as update. An engine with nothing cheaper
	** than update sets it to a2m_store_move_whole.
	*/
	int  (*move)(a2m_store *s, const a2m_record *rec, const char *to, double salience,
		     int *moved);
	/* Visits every record selected by q in (created_at, seq) order. */
	int  (*scan)(a2m_store *s, const a2m_query *q, a2m_record_visit visit,
		     void *ctx);
	/* *out = how many records q selects. */
	int  (*count)(a2m_store *s, const a2m_query *q, int64_t *out);

	/*
	** Store-level settings: named strings the store keeps for the layers
	** above (for instance "embedding_dims", fixed by the first vector ever
	** written). They are not records: scan and count never see them.
	**
	** meta_get sets *value to a copy of the value the caller frees with
	** free(), or to NULL when name is unset. It returns A2M_INVALID_PARAMS
	** for a NULL name and A2M_INTERNAL_ERROR when memory runs out or the
	** engine fails (*value is NULL then too).
	*/
	int  (*meta_get)(a2m_store *s, const char *name, char **value);
	/*
	** Sets name to value, or deletes it when value is NULL (deleting an
	** unset name is not an error). Both strings are borrowed. A write like
	** any other: part of the open transaction, undone by rollback(). Returns
	** A2M_READ_ONLY on a read-only store, A2M_INVALID_PARAMS for a NULL
	** name, A2M_INTERNAL_ERROR when the engine fails; nothing changes then.
	*/
	int  (*meta_set)(a2m_store *s, const char *name, const char *value);
	/* Rolls back any open transaction, closes and frees the store. */
	void (*close)(a2m_store *s);

	/*
	** Visits, in the order given, the records whose seq is among seqs
	** (seqs that name no record are skipped). The visit may stop early
	** (positive) or abort (negative) as for scan; it must not write.
	*/
	int  (*visit_seqs)(a2m_store *s, const int64_t *seqs, size_t n,
			   a2m_record_visit visit, void *ctx);

	/*
	** Adds add to the access_count of the record with this seq and makes
	** its accessed_at at least at; nothing else changes (no re-index, no
	** mirror file). Applied to the row as it is now, so a late touch never
	** brings back a removed record (a seq naming none is skipped: 0) nor
	** undoes another write. A write like any other: part of the open
	** transaction. A2M_READ_ONLY on a read-only store.
	*/
	int  (*touch)(a2m_store *s, int64_t seq, int64_t add, int64_t at);

	/* ---- the term index (see above); NULL in an engine without one ---- */

	/*
	** From now on keeps the index with ix (borrowed: it must outlive the
	** store or a later attach). An index built with another
	** ix->version, or never built, is rebuilt from every record first, in
	** one transaction (no transaction may be open). A read-only store
	** cannot rebuild: it then keeps no index (index_stats answers
	** A2M_STORE_NO_INDEX) and attach still returns 0. Returns 0 or a
	** negative code, the index then unusable.
	*/
	int  (*index_attach)(a2m_store *s, a2m_indexer *ix);
	/* *out = the index's figures; A2M_STORE_NO_INDEX when there is none. */
	int  (*index_stats)(a2m_store *s, a2m_index_stats *out);
	/*
	** Visits every posting of term (len bytes), in no particular order.
	** Returns 0, A2M_STORE_NO_INDEX when there is no index, or a negative
	** code (the visit's, or the engine's).
	*/
	int  (*index_postings)(a2m_store *s, const char *term, size_t len,
			       a2m_posting_visit visit, void *ctx);
	/*
	** Optional (NULL when absent): term's postings as the index keeps them,
	** *n of them at *v in the order index_postings would visit them, lent
	** until the next write to the store or, in SQLite, the end of the read
	** bracket they were lent in (SQLite lends from its postings cache, which
	** keeps them there until then); saves the copy index_postings makes one
	** posting at a time. Returns 0 when lent (*n may be 0); 1 when not lent
	** (SQLite outside a bracket, or a term its cache will not keep; 1 is
	** also A2M_STORE_NO_INDEX), and the caller then copies them with
	** index_postings, which says if there is no index; or a negative code.
	*/
	int  (*index_postings_view)(a2m_store *s, const char *term, size_t len,
				    const a2m_posting **v, size_t *n);
	/*
	** Optional (NULL when absent): index_postings_view with the bounds the
	** index keeps (a2m_postings_lent), lent for as long. Lends only a list
	** in ascending seq: returns 0 when lent, 1 when not (no bounds kept,
	** postings out of order, or as index_postings_view), and the caller
	** then asks index_postings_view; 2 when neither would lend them (the
	** caller copies them with index_postings); or a negative code.
	*/
	int  (*index_postings_lend)(a2m_store *s, const char *term, size_t len,
				    a2m_postings_lent *out);

	/* ---- vector search (see above); NULL in an engine without one ---- */

	/*
	** Sets *out to every record whose vector has q->dims components and
	** passes q->filter, each once, in no particular order, with its measure
	** in score (the raw figure of q->measure), or its bound (q->bound).
	** Exact: no row is approximated away, unless q->pool asks for the
	** approximate pool (best first then, and out->approximate says when
	** rows were left out). Returns 0, A2M_STORE_NO_INDEX when it cannot
	** answer exactly now (the caller then scans), or a negative code.
	*/
	int  (*vector_search)(a2m_store *s, const a2m_vector_search *q, a2m_candidates *out);

	/* ---- records without vectors; NULL in an engine that cannot find them ---- */

	/*
	** Visits, oldest first (by seq), the records of tier (NULL: records
	** without a tier) that carry neither a caller vector (embedding) nor a
	** generated one (gen_embedding) and whose content holds something
	** other than ASCII white space: those a server embedder may owe a
	** vector (docs/EMBEDDINGS.md §4.2), found without reading the rest of
	** the tier (SQLite: a partial index; memory: a bitmap by seq). The
	** visit may stop early (positive) or abort (negative) as for scan; it
	** must not write. Returns 0, A2M_STORE_NO_INDEX when it cannot answer
	** now (the caller scans instead), or a negative code.
	*/
	int  (*scan_unembedded)(a2m_store *s, const char *tier, a2m_record_visit visit,
				void *ctx);

	/* ---- consistency (see above); NULL: not supported by the engine ---- */

	/*
	** Verifies what the store derives from its records, reporting through
	** o->report. Writes nothing (a read-only store can be checked), and
	** reads one consistent state: with no transaction open it opens its
	** own read snapshot. Returns 0 once it has looked (whatever it found),
	** or a negative code, with errmsg set, when it could not look at all
	** (an unreadable file); the problems found so far have been reported.
	*/
	int  (*check)(a2m_store *s, const a2m_check_options *o);
	/*
	** Rebuilds the derived data of the areas whose bit (1u << area) is set
	** in areas, each in a transaction of its own (no transaction may be
	** open; not on a read-only store), reporting each rebuild through
	** o->report (problem 0: done; 1: it could not be). Records keep their
	** content: only what can be derived again is rewritten. Returns 0, or
	** a negative code with errmsg set (what was rebuilt before stays).
	*/
	int  (*repair)(a2m_store *s, const a2m_check_options *o, unsigned areas);
	/*
	** Optional (NULL: the layers above keep nothing they read of the
	** records across writes). A number that changes whenever a record may
	** have changed: at every insert, update, remove and touch of this store,
	** at a rollback or a failed commit, and at a begin() that finds another
	** writer committed since this store's last commit (SQLite: another
	** process sharing the file; PostgreSQL: another server of the
	** deployment, seen in the version its state row holds under the
	** write lock). So the exclusive holder that read the
	** stamp in a write transaction, read records, and finds the same stamp
	** later (in that transaction or a later one) knows they are unchanged.
	** This store's own successful commit leaves it as it was. Cannot fail.
	*/
	uint64_t (*stamp)(a2m_store *s);
	/*
	** Optional (NULL: unknown). 1 with *max set when no record of the
	** store has a salience above *max, 0 when the store cannot say. A
	** bound, never lowered (a remove or rollback leaves it): too high
	** only costs recall reads, too low would make it wrong. Text recall
	** bounds what the blend can add to a relevance with it, as a vector
	** list's a2m_candidates.salience_max does (stack/ranked.c). A read:
	** called in the read bracket the recall holds. Cannot fail.
	*/
	int (*salience_bound)(a2m_store *s, double *max);

	/* ---- shared by several servers (see above); NULL in memory and SQLite ---- */

	/*
	** A number that grows whenever any server of the deployment may have
	** committed a change (this one included): what was computed from the
	** store while it had one value may be stale once it has another. Asks
	** the database, so it is current when it returns; 0 when it cannot be
	** read (a caller then trusts nothing it cached). Any thread, any time.
	*/
	uint64_t (*version)(a2m_store *s);
	/*
	** From now on calls fn(ctx) on a thread of the store's own soon after
	** another server commits (and after the store reconnected, when some
	** may have been missed), and when the time fn's last answer asked for
	** comes: the layers above then look at what changed (and remove what
	** expired), through the store as usual and under their own locks. One watcher per
	** store; fn NULL stops it (and waits for a call in progress). Returns 0,
	** or a negative code when the thread cannot be started.
	*/
	int  (*watch)(a2m_store *s, a2m_store_watch_fn fn, void *ctx);
	/*
	** Appends n events, in order, after every event any server appended
	** before: their seqs, consecutive from *first, are given here; events
	** beyond the newest retain are dropped. Inside an open transaction
	** they are part of it (durable and seen with its commit, gone with its
	** rollback); outside one, in a transaction of their own, durable
	** before it returns.
	*/
	int  (*events_append)(a2m_store *s, const a2m_event_row *rows, size_t n,
			      int64_t retain, uint64_t *first);
	/*
	** The retained events after seq `after`, oldest first, at most max of
	** them (0: none, only the bounds and salt), into *out (zeroed first;
	** free with a2m_event_rows_free, also on failure).
	*/
	int  (*events_read)(a2m_store *s, uint64_t after, size_t max, a2m_event_rows *out);

	/*
	** ---- extensions (docs/PROTOCOL.md, Extensions); each NULL in an
	** engine without it, and the server then does not declare the
	** capability that needs it. A read op here may be called in a read
	** bracket like the others; a visit must not write.
	*/

	/*
	** Revision history (see a2m_revision above). history_put keeps rev (its
	** strings copied) for rev->id, then drops that record's oldest
	** revisions beyond keep (at least 1); a (id, revision) already kept is
	** replaced. A write like any other: part of the open transaction.
	** history_visit visits at most max (0: all) revisions of id, newest
	** first. remove() deletes a removed record's revisions.
	*/
	int  (*history_put)(a2m_store *s, const a2m_revision *rev, size_t keep);
	int  (*history_visit)(a2m_store *s, const char *id, size_t max,
			      a2m_revision_visit visit, void *ctx);

	/*
	** Expiry (x-expiry): an engine with these keeps a2m_record.expires_at.
	** next_expiry sets *at to the earliest expires_at of any record (0:
	** none has one); scan_expired visits the records whose expires_at is
	** set and at or before `by`, soonest first. Both read.
	*/
	int  (*next_expiry)(a2m_store *s, int64_t *at);
	int  (*scan_expired)(a2m_store *s, int64_t by, a2m_record_visit visit, void *ctx);

	/*
	** Duplicate suppression (x-dedup): an engine with this keeps
	** a2m_record.fingerprint and visits every record whose fingerprint is
	** fp (not 0), in no particular order, without reading the others.
	*/
	int  (*by_fingerprint)(a2m_store *s, uint64_t fp, a2m_record_visit visit, void *ctx);
} a2m_store_ops;

/* The part every engine's own struct starts with. */
struct a2m_store {
	const a2m_store_ops *ops;
	char    errmsg[256];      /* the last failure, for humans */
	int     read_only;        /* set by the engine: every write is refused */
	int     group_commit;     /* set by the engine: durable commits share their
	                             syncs (sync_owed, sync_wait), so a caller gains
	                             by running several calls' writes in one
	                             transaction (stack.h, joint transactions) */
	int64_t mirror_failures;  /* procedural mirror: how many times a file
	                             could not be brought up to date after a
	                             successful commit (the message is in
	                             errmsg). Grows only; a caller that logs
	                             compares it with the value it saw last. */
};

/* Sets s->errmsg from a printf-style format. Returns A2M_INTERNAL_ERROR. */
int a2m_store_fail(a2m_store *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
** How many times a2m_store_fail() ran on the calling thread. Read before
** and after a call that reached the store through someone else (a scorer
** reading the index) and failed: when it moved, the store failed there,
** and errmsg says how. Cannot fail.
*/
unsigned a2m_store_failures_here(void);

/*
** What every engine refuses before writing rec, with A2M_INVALID_PARAMS and
** s->errmsg naming op: no id or no content (SQLite's NOT NULL columns), or
** a NaN salience (SQLite would store it as NULL). Returns 0 if rec may be
** written.
*/
int a2m_store_check_record(a2m_store *s, const a2m_record *rec, const char *op);

/*
** The least byte string above every string that starts with prefix, in
** memcmp order (SQLite's BINARY, PostgreSQL's bytea): drop trailing 0xFF
** bytes, then increment the last byte. Sets *upper (malloc'd, *len bytes,
** NUL-terminated) or NULL when nothing is left (the prefix is all 0xFF
** bytes): `key >= prefix` alone then implies the prefix. The engines turn
** key_prefix into the range [prefix, upper) with it. Returns 0, or -1 when
** memory runs out.
*/
int a2m_store_prefix_upper(const char *prefix, char **upper, size_t *len);

/*
** The store op move done as get + update (store.h, move), for an engine
** whose update costs no more than a narrower write would.
*/
int a2m_store_move_whole(a2m_store *s, const a2m_record *rec, const char *to,
			 double salience, int *moved);

/* True when rec matches the exact selection q (every engine shares this). */
int a2m_query_matches(const a2m_query *q, const a2m_record *rec);

/*
** ---- The procedural mirror (mirror.c), for engines, not the layers above.
**
** The engine notes each write that may change a mirrored file while its
** transaction is open, then after a successful commit calls
** a2m_mirror_apply(), which reads the current record of every noted id back
** through s->ops->get and brings its file up to date. Reading back instead
** of remembering contents keeps memory bounded by the number of ids, and
** makes apply correct whatever happened in between (even a transaction
** SQLite rolled back on its own): it always converges on the database.
*/
typedef struct a2m_mirror a2m_mirror;

/*
** A mirror of tier into dir (both copied). Creates nothing on disk. Returns
** NULL when memory runs out.
*/
a2m_mirror *a2m_mirror_new(const char *dir, const char *tier);

/* Frees m and its pending notes. NULL is a no-op. */
void a2m_mirror_free(a2m_mirror *m);

/* The tier m mirrors (borrowed from m). */
const char *a2m_mirror_tier(const a2m_mirror *m);

/*
** Notes that the file of record id may have to change at the next apply.
** old_name (borrowed) is the record's file name before the write when it was
** in the mirrored tier (a2m_mirror_file_name()), NULL when it was not or did
** not exist: apply removes that file unless the record still needs it.
** Cannot fail: when memory runs out the mirror is marked for a full
** reconciliation at the next apply instead.
*/
void a2m_mirror_note(a2m_mirror *m, const char *id, const char *old_name);

/* Forgets the pending notes (the transaction was rolled back). */
void a2m_mirror_discard(a2m_mirror *m);

/*
** Brings the files of every noted id up to date with s (after a commit),
** then forgets the notes. Returns 0, or A2M_INTERNAL_ERROR with a message
** in err when some file could not be written or removed; the mirror then
** reconciles fully at the next apply.
*/
int a2m_mirror_apply(a2m_mirror *m, a2m_store *s, char *err, size_t errlen);

/*
** Makes the directory match s exactly (see a2m_sqlite_options). Returns 0,
** or A2M_INTERNAL_ERROR with a message in err.
*/
int a2m_mirror_reconcile(a2m_mirror *m, a2m_store *s, char *err, size_t errlen);

/* What a2m_mirror_verify() found. */
typedef struct a2m_mirror_tally {
	size_t files;     /* files that agree with the database */
	size_t differ;    /* files missing, stale, or without a record */
	size_t leftover;  /* temporary files a crash left over a minute ago */
} a2m_mirror_tally;

/*
** Compares the directory with s as a2m_mirror_reconcile() would, changing
** nothing: each file it would write (missing, or not holding its record as
** the database has it) or remove (no record) is reported through o
** (A2M_CHECK_MIRROR, problem 1; the first few, the rest counted), and
** counted in *tally with the files that agree and the temporary files a
** crash left (no reader looks at those; reconciling removes them once a
** minute old). Returns 0, or A2M_INTERNAL_ERROR with a message in err
** when the records or the directory could not be read.
*/
int a2m_mirror_verify(a2m_mirror *m, a2m_store *s, const a2m_check_options *o,
		      a2m_mirror_tally *tally, char *err, size_t errlen);

/*
** The file name of rec in a mirror: "<slug>--<id>.md" as described at
** a2m_sqlite_options. Only rec->id, rec->key and rec->content are read.
** Returns a string the caller frees with free(), or NULL when memory runs
** out.
*/
char *a2m_mirror_file_name(const a2m_record *rec);

#endif
