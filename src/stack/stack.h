/*
** stack.h — memory policy above the store: where a write lands, how records
** flow between tiers, what a read may see, and in which order.
**
** The stack decides; the store (store/store.h) only keeps bytes, and the
** scorer (rank/scorer.h) only judges relevance. Nothing here speaks SQL or
** JSON-RPC. Every operation that writes runs in one store transaction and
** returns only after it committed, so what the caller acknowledges is
** durable; changes are reported to the change listener after the commit.
**
** Tier policy (spec §4.6–4.7, §4.11, DESIGN.md §3, DECISIONS 006, 008):
**   - a write lands in its `tier`, else the layout's default tier;
**   - capacity is a promise: after every write a tier over capacity spills
**     its weakest units (a group, or a lone record) to spill_to, or drops
**     them when there is nowhere below; per-session tiers count per session;
**   - a group is never split across tiers: every move moves the whole group
**     within the tier it leaves;
**   - promotion (earned by promote_after recalls) runs before spilling;
**   - nothing spills into procedural (the layout refuses it).
** Retention = salience × recency(tier half-life) × (1 + access_count); in a
** working tier, recency alone (a transcript spills its oldest turns).
*/
#ifndef A2M_STACK_H
#define A2M_STACK_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "embed/embedder.h"
#include "rank/scorer.h"
#include "stack/layout.h"
#include "store/store.h"
#include "util/error.h"
#include "util/text.h"

/*
** How recall blends a record's relevance with its recency (its tier's
** half-life) and its salience: score = relevance × (relevance weight +
** recency weight × recency + salience weight × s/(1+s)) / (sum of the
** weights), so a score never exceeds its relevance and stays in [0,1].
*/
typedef struct a2m_blend {
	double relevance, recency, salience;
} a2m_blend;

/*
** Salience is bounded (the spec gives it no range; docs/PROTOCOL.md,
** Salience): a value a request gives (remember's salience, reinforce's
** amount, promote's salience) must lie within ±A2M_SALIENCE_MAX, and a sum
** saturates there, so no request can make a salience, a retention or a
** score non-finite.
*/
#define A2M_SALIENCE_MAX 1e6

/*
** s held within ±A2M_SALIENCE_MAX, NaN read as 0: what the blend and the
** retention weigh, so a value stored before the bound (an infinity on an
** old SQLite file) still ranks instead of poisoning the arithmetic.
*/
static inline double a2m_salience_clamp(double s)
{
	if (!(s > -A2M_SALIENCE_MAX))
		return isnan(s) ? 0 : -A2M_SALIENCE_MAX;
	return s < A2M_SALIENCE_MAX ? s : A2M_SALIENCE_MAX;
}

/* a + b saturated at ±A2M_SALIENCE_MAX: reinforce and promote's additions. */
static inline double a2m_salience_add(double a, double b)
{
	return a2m_salience_clamp(a2m_salience_clamp(a) + a2m_salience_clamp(b));
}

typedef struct a2m_stack_config {
	a2m_tier_layout tiers;        /* taken over by a2m_stack_new */
	a2m_blend       blend;        /* all zero: relevance only */
	unsigned        fields;       /* enum a2m_where_field: record fields `where` sees */
	a2m_metric      metric;       /* how vectors compare */
	double          default_salience;
	int             read_only;    /* never write, not even recall's touch */
	/* The server's own embedder (docs/EMBEDDINGS.md §4), owned by the
	** stack from a2m_stack_new on (also on failure); NULL: none. */
	a2m_embedder   *embedder;
	/* Records whose touches may wait before they are written (touches.c);
	** 0: A2M_TOUCH_BUFFER. */
	size_t          touch_max;
	/* x-history: earlier revisions kept per keyed record (0: none kept;
	** needs the store's history_put). */
	size_t          history_keep;
	/* x-dedup: fingerprint every write, so that a tier marked dedup can
	** find the record a write repeats (needs the store's by_fingerprint). */
	int             fingerprints;
	/* A lone durable write's capacity pass may run apart, while its sync
	** runs (a2m_stack_capacity_apart, finish.c); 0: always in the write's
	** transaction. */
	int             capacity_after_sync;
} a2m_stack_config;

/*
** The default of a2m_stack_config.touch_max. Under a steady recall load
** every record recalled in the last second waits, so a bound below the
** records recalled per second writes them several times a second, each
** time under the exclusive lock (at 10 000 recalls/s of 10 hits, 4096
** meant about 20 flushes a second); at this size the one-second age
** writes them, once.
*/
#define A2M_TOUCH_BUFFER 65536

/* The counts of a reorganisation (spec §4.7). */
typedef struct a2m_consolidation {
	int64_t moved;       /* changed tier under capacity pressure */
	int64_t promoted;    /* changed tier because they earned it */
	int64_t dropped;     /* deleted: over capacity with nowhere below */
	int64_t summarized;  /* groups rewritten (never, by the built-in policy) */
} a2m_consolidation;

typedef enum a2m_change_kind {
	A2M_CHANGE_WRITTEN,
	A2M_CHANGE_FORGOTTEN,
	A2M_CHANGE_PROMOTED,
	A2M_CHANGE_CONSOLIDATED,
	A2M_CHANGE_SESSION_CLOSED
} a2m_change_kind;

/* Who could recall one record a change names: its owner, and whether it
** sits in a shared tier (then anyone could). */
typedef struct a2m_audience {
	const char *owner;
	int         shared;
} a2m_audience;

/*
** One committed change, as reported to the listener. Everything is borrowed
** for the duration of the call. `owner` and `shared` say who may see it:
** anyone when shared, else only a caller whose owner equals owner (NULL
** equals NULL) — the same rule as for reading the records (spec §4.12).
** A change naming records that may belong to several owners (a forget or
** promote reaching shared tiers, promotions earned at recall) also carries
** `audience`, one per id: a scoped reader then sees the event cut down to
** the ids it could have recalled, and not at all when there are none.
*/
typedef struct a2m_change {
	a2m_change_kind     kind;
	int64_t             at;
	const a2m_record   *rec;      /* WRITTEN: the record as stored */
	const char *const  *ids;      /* FORGOTTEN, PROMOTED */
	const a2m_audience *audience; /* NULL, or one per id */
	size_t              n_ids;
	const char         *tier;     /* PROMOTED: the destination */
	int64_t             count;    /* FORGOTTEN */
	a2m_consolidation   cons;     /* CONSOLIDATED */
	const char         *session;  /* SESSION_CLOSED */
	const char         *owner;
	int                 shared;
	int                 expired;  /* FORGOTTEN: by the expiry sweep, not a client */
} a2m_change;

typedef void (*a2m_change_fn)(void *ctx, const a2m_change *change);

typedef struct a2m_stack a2m_stack;

/* Who is asking: with scoped set, reads see shared tiers plus the records of
** owner (NULL = records without an owner); unscoped reads see everything. */
typedef struct a2m_scope {
	int         scoped;
	const char *owner;
} a2m_scope;

/* What a read or a forget selects. */
typedef struct a2m_selection {
	a2m_query     q;       /* exact part the store applies (tier, key_prefix, session...) */
	const json_t *where;   /* borrowed; NULL = no filter */
	a2m_scope     scope;
	/*
	** The caller holds the handle's lock only shared (server/handle.c): other reads
	** run at the same time, so this one must change nothing but recall's
	** waiting touches. Where it would do more (write a promotion or the
	** touches, embed, search vectors) the stack answers A2M_NEED_EXCLUSIVE
	** before changing anything, and the caller runs it again exclusively.
	*/
	int           shared;
	/* A look, not a use (recall's `touch: false`, docs/PROTOCOL.md): the
	** hits are not touched, so nothing is counted and nothing promoted. */
	int           peek;
	/*
	** Records past their expiry (x-expiry) are never returned by a read:
	** every selection leaves them out, unless this is set (the stack's
	** own scans, which move and count what the store holds).
	*/
	int           with_expired;
} a2m_selection;

/*
** What a shared read (a2m_selection.shared) answers when it needs the
** exclusive lock. Never reaches a client: the handle retries the call.
*/
#define A2M_NEED_EXCLUSIVE (-32090)

/* One recalled record with its score. */
typedef struct a2m_hit {
	a2m_record *rec;       /* owned by the hit array */
	double      score;     /* in [0,1] */
} a2m_hit;

/* One named session, as memory/session/list reports it. */
typedef struct a2m_session_info {
	char    *session;
	int64_t  records;
	int64_t *tier_counts;  /* one per tier of the layout */
	int64_t  opened_at, touched_at;
} a2m_session_info;

/*
** Creates a stack over store and scorer, taking ownership of both and of
** cfg->tiers (also on failure). Returns NULL when memory runs out.
*/
a2m_stack *a2m_stack_new(a2m_store *store, a2m_scorer *scorer, a2m_stack_config *cfg);

/* Closes the store, frees the scorer and the stack. NULL is a no-op. */
void a2m_stack_free(a2m_stack *st);

/* Sets the listener that receives every committed change (NULL: none). */
void a2m_stack_on_change(a2m_stack *st, a2m_change_fn fn, void *ctx);

/*
** Called with the listener's ctx once a write has reported its changes
** inside its transaction (a2m_stack_log_in_transaction). Returns 0, or the
** store's code (its errmsg set): the write is then rolled back.
*/
typedef int (*a2m_change_write_fn)(void *ctx);

/*
** From now on the listener hears each write's changes inside the write's
** transaction, just before its commit, and then write(ctx) is called: a
** listener that keeps its log in the store itself (a log shared by several
** servers, events/shared.h) puts the events there, so a write and its
** events commit together, in one commit, or not at all. NULL (the
** default): the listener hears them after the commit, as a log kept
** elsewhere must (a crash could still take back what it heard before).
*/
void a2m_stack_log_in_transaction(a2m_stack *st, a2m_change_write_fn write);

/* The layout in force (borrowed). */
const a2m_tier_layout *a2m_stack_tiers(const a2m_stack *st);

/*
** Sets *dims to the store's embedding width, fixed by the first vector; 0
** before that. Returns 0, or the store's failure with err set (*dims 0).
*/
int a2m_stack_dimensions(a2m_stack *st, int64_t *dims, a2m_error *err);

/*
** The fingerprint of a write (x-dedup): its content's normal form (the
** analyser's words in order) hashed with its role; 0 for a text with no
** word, or when memory runs out (the record is then simply never found as
** a duplicate). Public to the server for `a2m check`, which recomputes it.
*/
uint64_t a2m_stack_fingerprint(const char *content, const char *role);

/* Earlier revisions kept per keyed record (x-history; 0: none). */
size_t a2m_stack_history_keep(const a2m_stack *st);

/* The metric vectors are compared with. */
a2m_metric a2m_stack_metric(const a2m_stack *st);

/* The scorer recall uses, and the blend weights in force (both borrowed). */
const a2m_scorer *a2m_stack_scorer(const a2m_stack *st);
const a2m_blend *a2m_stack_blend(const a2m_stack *st);

/*
** The store's term index: *engine = the store's engine name; *out its
** figures. Returns 0, or A2M_STORE_NO_INDEX (out zeroed) when the store
** keeps no usable index (recall then scans), or a negative code with err set.
*/
int a2m_stack_index_stats(a2m_stack *st, a2m_index_stats *out, const char **engine,
			  a2m_error *err);

/*
** Brackets a run of reads (a method that does not write: recall, timeline,
** fetch, ...) so that they see one snapshot of the store and pay for one
** lock instead of one per statement (store.h, read_begin). A write inside
** the bracket (recall's touches flushed, a promotion earned) still runs in
** its own transaction: the store ends the bracket at its begin, and the
** reads after it run unbracketed. A no-op for a store that needs no bracket
** (memory) and inside a write transaction. Return 0, or a negative code with
** err set as for any store failure; no transaction is left open then.
** Every a2m_stack_read_begin() that returned 0 is followed by one
** a2m_stack_read_end(), also when the reads in between failed.
*/
int a2m_stack_read_begin(a2m_stack *st, a2m_error *err);
int a2m_stack_read_end(a2m_stack *st, a2m_error *err);

/*
** What a shared read left for the exclusive lock: recall's waiting touches
** once they are due (full, or old), which an exclusive recall writes at
** its end (docs/PROTOCOL.md, Salience). a2m_stack_settle_due() says whether
** there is any, under any lock; a2m_stack_settle() writes them and must be
** called with the handle held exclusively. Returns 0, or a code with err
** set (the touches then still wait).
*/
int a2m_stack_settle_due(a2m_stack *st);
int a2m_stack_settle(a2m_stack *st, a2m_error *err);

/*
** Writes n records atomically: all of them or none. recs[i]->tier NULL
** means the default tier; a tier that does not exist is UNKNOWN_TIER. A
** record whose id exists already (in the store or earlier in the batch) is
** not written again (spec §3.2). A record with a key that is occupied for its
** owner replaces the record there: same id, new content, revision + 1 (spec
** §3.6), and the revision it replaced is kept as history (x-history, when
** history_keep is set). Vectors must all have the store's width
** (EMBEDDING_MISMATCH). On success recs[i]->id holds the id to report,
** and a record that replaced a key's holds that record as stored.
** Over-capacity tiers are then consolidated in the same transaction.
**
** recs[i]->expires_at (x-expiry) is the record's expiry; 0 takes its
** tier's ttl from now, when the tier has one. In a tier marked dedup, a
** record with neither id nor key whose normalised content and role equal
** those of a live record of the same tier, session and owner is not
** stored: that record is refreshed (accessed now, the higher salience, the
** later expiry) and its id reported; *deduplicated (when not NULL) counts
** them.
*/
int a2m_stack_remember(a2m_stack *st, a2m_record **recs, size_t n, size_t *deduplicated,
		       a2m_error *err);

/*
** A hint, for a writer that knows the texts of its next remember while it
** waits for the one before to commit: the scorer's indexer starts
** analysing them on other cores (store.h, foresee), and the remember of
** those texts (byte for byte, in order) then finds the work begun. Costs
** a copy of the texts; changes nothing a call returns. Returns 0, or -1
** when the indexer offers no such thing or could not.
*/
int a2m_stack_foresee(a2m_stack *st, const char *const *texts, size_t n);

/* ---- export and import (transfer.c): records whole, out and in ---- */

/* What became of one record given to a2m_stack_import. */
enum a2m_import_outcome {
	A2M_IMPORTED = 0,      /* written as given */
	A2M_IMPORT_SKIPPED,    /* its id exists already: the stored record stands */
	A2M_IMPORT_KEY_HELD    /* its (owner, key) is another id's: not written */
};

/*
** Writes n records whole, as an export gave them: their ids, created_at,
** revision, salience (NaN: the default), access count and accessed_at,
** vector and every other field, in one transaction that ends, like every
** write, through a2m_stack_finish (capacity kept, a `written` event per
** record). Ids are kept, so importing again changes nothing: a record
** whose id exists (in the store, or earlier in the batch) is skipped. A
** record whose key is held for its owner by another id is not written
** either: the record there stands, and the caller is told. Before anything
** is written: a tier that does not exist is UNKNOWN_TIER (NULL: the
** default tier). A vector of another width than the store's is
** EMBEDDING_MISMATCH, and nothing of the batch is written. outcome (NULL,
** or n entries) gets each record's enum a2m_import_outcome.
**
** revs (nrevs of them; NULL, 0: none) are earlier revisions of the batch's
** records (x-history), each naming its record by index (of): kept, in the
** same transaction, for each record that was imported, and dropped with a
** record that was not (its history is another record's), or when the
** store keeps no history. The store's bound on revisions applies.
*/
typedef struct a2m_import_revision {
	a2m_revision rev;   /* rev.id is recs[of]'s */
	size_t       of;
} a2m_import_revision;

int a2m_stack_import(a2m_stack *st, a2m_record **recs, size_t n, unsigned char *outcome,
		     const a2m_import_revision *revs, size_t nrevs, a2m_error *err);

/*
** Visits every record of the store in creation order (created_at, then
** write order), whoever owns it, with recall's waiting touches laid over,
** inside one read bracket (one snapshot on SQLite). *total (when not NULL)
** is set first, to how many records the visit will see, and *revisions
** (when not NULL) to how many earlier revisions (x-history) those records
** keep, all of them, as a2m_stack_history(..., 0, ...) gives them: counted
** in the same snapshot, before the first visit, by a pass over the keyed
** records. visit may stop early (positive) or abort (negative: returned,
** err left alone). It must not write. Returns 0, that code, or a store
** failure with err set.
*/
int a2m_stack_export(a2m_stack *st, int64_t *total, int64_t *revisions, a2m_record_visit visit,
		     void *ctx, a2m_error *err);

/*
** Ranks what sel selects against q and returns at most limit hits by
** descending score (free with a2m_hits_free). With neither text nor vector
** (or when every scorer abstains), ranks by recency. When the scorer judged
** and nothing matched, returns nothing (DECISIONS 013). Hits below
** min_score are dropped. The selection filters every candidate before the
** best limit are kept, never after. Unless read-only, every returned record
** is touched (access_count + 1, accessed_at now) and promoted once it has
** earned it.
*/
int a2m_stack_recall(a2m_stack *st, const a2m_selection *sel, const a2m_rank_query *q,
		     double min_score, size_t limit, a2m_hit **out, size_t *n,
		     a2m_error *err);

/*
** Returns what sel selects in creation order, oldest first; when limit is
** not 0, only the newest limit records (still oldest first). Free *out with
** a2m_record_array_free.
*/
int a2m_stack_timeline(a2m_stack *st, const a2m_selection *sel, size_t limit,
		       a2m_record ***out, size_t *n, a2m_error *err);

/*
** Reads what every given selector selects together, without touching
** anything: ids (when not NULL; unknown ones skipped), sel, and query text
** (when not NULL: only records the scorer judges relevant, most relevant
** first; an abstaining scorer selects nothing). Without a query the order is
** creation order. At most limit records (0 = all). Free with
** a2m_record_array_free.
*/
int a2m_stack_select(a2m_stack *st, const a2m_selection *sel, const char *const *ids,
		     size_t n_ids, const char *query, size_t limit, a2m_record ***out,
		     size_t *n, a2m_error *err);

/*
** Deletes, in one transaction, the records selected by every given selector
** together: ids (when not NULL), sel, and query text (when not NULL: only
** records the scorer judges relevant; an abstaining scorer selects nothing).
*/
int a2m_stack_forget(a2m_stack *st, const a2m_selection *sel,
		     const char *const *ids, size_t n_ids, const char *query,
		     int64_t *forgotten, a2m_error *err);

/*
** Moves the visible records among ids (with their groups) to tier, adding
** salience_add to each. Ids unknown or already there are not counted.
** Returns UNKNOWN_TIER for a tier that does not exist.
*/
int a2m_stack_promote(a2m_stack *st, const a2m_scope *scope, const char *const *ids,
		      size_t n_ids, const char *tier, double salience_add,
		      int64_t *promoted, a2m_error *err);

/*
** Promotion, then capacity, across the whole store. counts, when not NULL
** (one per tier, the layout's order), receives the records per tier the
** commit leaves, read inside the transaction: a failure to read them
** rolls the consolidation back rather than answering an error for a write
** that stood.
*/
int a2m_stack_consolidate(a2m_stack *st, a2m_consolidation *out, int64_t *counts,
			  a2m_error *err);

/* Adds amount to the salience of each visible record among ids. */
int a2m_stack_reinforce(a2m_stack *st, const a2m_scope *scope, const char *const *ids,
			size_t n_ids, double amount, int64_t *reinforced, a2m_error *err);

/* *out = the record at key for owner, or NULL when the key is unused (or
** its record expired). */
int a2m_stack_fetch(a2m_stack *st, const char *owner, const char *key, a2m_record **out,
		    a2m_error *err);

/*
** x-history: visits at most max (0: all the store keeps) earlier revisions
** of the record with id, newest first (store.h, a2m_revision). Nothing
** when the store keeps none. Returns 0, or a negative code with err set.
*/
int a2m_stack_history(a2m_stack *st, const char *id, size_t max, a2m_revision_visit visit,
		      void *ctx, a2m_error *err);

/*
** x-expiry. a2m_stack_expiry_due says, under any lock or none, whether a
** record may have expired by now (a cheap test of a cached time), and
** a2m_stack_expiry_next when (ms; 0: no record has an expiry, as far as
** the stack knows). a2m_stack_expire removes, in one transaction, at most
** max records whose expiry has passed, and reports them as one forgotten
** event marked expired; *removed counts them. Exclusive lock only; a
** read-only stack removes nothing. Returns 0, or a code with err set.
*/
int     a2m_stack_expiry_due(a2m_stack *st, int64_t now);
int64_t a2m_stack_expiry_next(a2m_stack *st);
int     a2m_stack_expire(a2m_stack *st, size_t max, size_t *removed, a2m_error *err);

/*
** Reads the store's earliest expiry into the stack's cache again. The cache
** learns of this stack's own writes as they happen; on a store that other
** servers write too (PostgreSQL) their records' expiries reach it only
** this way, so that this server sweeps them should theirs stop. Exclusive
** lock (the store's read runs on the writer's connection). Returns 0, or a
** negative code (the cache then says none).
*/
int     a2m_stack_expiry_init(a2m_stack *st);

/*
** Closes a session: its records leave the working (per-session) tiers for
** their spill_to at once, then promotion and capacity run over the stack
** (spec §4.11). Deletes nothing the tiers' own rules would not. An unknown
** session is a no-op. *flushed = records that left the working tiers;
** counts, when not NULL, as a2m_stack_consolidate's.
*/
int a2m_stack_session_close(a2m_stack *st, const a2m_scope *scope, const char *session,
			    int64_t *flushed, a2m_consolidation *out, int64_t *counts,
			    a2m_error *err);

/* The named sessions visible in scope. Free with a2m_sessions_free. */
int a2m_stack_sessions(a2m_stack *st, const a2m_scope *scope, a2m_session_info **out,
		       size_t *n, a2m_error *err);

/*
** A number that changes whenever the store may have changed: + 1 at every
** commit and rollback. What was computed from the store at one generation
** is still true while the number is the same. Safe to call from any
** thread, without the handle's lock.
*/
uint64_t a2m_stack_generation(const a2m_stack *st);

/*
** How many indexed recalls and selects of the process, on any stack, read
** a pruned list whose bound could not prove their stop and asked the
** scorer again (docs/RANKING.md §5): `a2m bench latency` prints it.
*/
uint64_t a2m_stack_pruned_retries_all(void);

/*
** Group commit (store.h, sync_owed and sync_wait). a2m_stack_sync_owed(),
** under the handle's exclusive lock at the end of a call: 0 when the
** call's commits are durable already (or it made none), else a ticket to
** wait for. a2m_stack_sync_wait(), from any thread and without the lock:
** 0 once the ticket's commits are durable, or A2M_INTERNAL_ERROR with a
** message in msg when they could not be made so.
*/
uint64_t a2m_stack_sync_owed(a2m_stack *st);
int a2m_stack_sync_wait(a2m_stack *st, uint64_t ticket, char *msg, size_t msglen);

/*
** For a call that will wait for its ticket (a2m_stack_sync_owed) before it
** answers, under the handle's exclusive lock: on 1, a durable write's
** capacity pass may run in a transaction of its own after the write
** commits, while the store syncs the write (finish.c says when, and what
** it changes); a2m_stack_sync_owed() then gives the write's ticket, and
** the pass's commit is covered by the next ticket or the close. 0 after
** the call, always. Writes in a joint transaction never do.
*/
void a2m_stack_capacity_apart(a2m_stack *st, int on);

/*
** A joint transaction: the writes of several calls in one transaction of
** the store, committed (and synced) once (server/deferred.c, group
** commit). Under the handle's exclusive lock throughout.
**
** a2m_stack_joins(): whether this stack may run one — its store shares
** its syncs (store.h, group_commit) and the event log is not written into
** each write's transaction (a shared log's events could not be taken back).
**
** a2m_stack_joint_begin() opens the store's transaction (writing recall's
** waiting touches, as every begin does); from then on each operation's
** begin and commit are parts of it, and its changes are reported as they
** end, before anything is committed: the caller takes them back
** (a2m_event_log_truncate) when the transaction does not commit. An
** operation that fails rolls the whole transaction back, as it would its
** own; the stack is then undone (a2m_stack_joint_undone() is 1), every
** later begin fails with A2M_INTERNAL_ERROR until a2m_stack_joint_end(),
** and the caller runs again, in a new joint transaction, the operations
** that had succeeded in it. a2m_stack_joint_commit() commits (0), or
** rolls back and returns the error, with err set; either way the joint
** transaction is over. Returns 0 or a code with err set.
*/
int  a2m_stack_joins(const a2m_stack *st);
int  a2m_stack_joint_begin(a2m_stack *st, a2m_error *err);

/*
** What one part of a joint transaction made (remember's time and the ids
** it gave new records), so that run again after another part undid the
** transaction it makes the same, and its answer says what the first run
** made: a2m_stack_joint_part(st, r) before the part runs (r zeroed the
** first time; r->again set for a run again), NULL after it. The ids are
** given again in the order they were made, as long as they last (the run
** again takes the same path: same store, same time); any further one is
** made new. a2m_stack_replay_free() frees what r holds.
*/
typedef struct a2m_stack_replay {
	int64_t now;          /* remember's time; 0: none read yet */
	char  (*ids)[A2M_ID_LEN]; /* the ids made, in order */
	size_t  n, cap, next; /* made; room; the next to give again */
	int     again;        /* this run gives them again */
} a2m_stack_replay;
void a2m_stack_joint_part(a2m_stack *st, a2m_stack_replay *r);
void a2m_stack_replay_free(a2m_stack_replay *r);
int  a2m_stack_joint_undone(const a2m_stack *st);
void a2m_stack_joint_end(a2m_stack *st);
int  a2m_stack_joint_commit(a2m_stack *st, a2m_error *err);

/* counts[i] = records in tier i visible in scope (NULL scope: all). */
int a2m_stack_tier_counts(a2m_stack *st, const a2m_scope *scope, int64_t *counts,
			  a2m_error *err);

/* The embedder in use (borrowed), or NULL. */
const a2m_embedder *a2m_stack_embedder(const a2m_stack *st);

/* The width of the embedder's vectors, once one answered; 0 before. */
size_t a2m_stack_gen_dims(const a2m_stack *st);

/* Free what a2m_stack_recall and a2m_stack_sessions return: the n
** entries and the array. NULL is a no-op. */
void a2m_hits_free(a2m_hit *hits, size_t n);
void a2m_sessions_free(a2m_session_info *s, size_t n);

#endif
