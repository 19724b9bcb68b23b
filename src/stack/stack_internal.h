/*
** stack_internal.h — what the stack's files share, and nothing the rest of
** the server needs (that is stack.h): the stack's struct, and each file's
** functions for the others, under the file that defines them.
**
** The files call one another in one direction only, from the top of this
** list down (docs/ARCHITECTURE.md, The stack's files, draws the graph):
**
**   stack.c                  the lifecycle: new, free, accessors
**   read.c                   recall and fetch
**   write.c  conversations.c the writes, each ending in finish.c
**   transfer.c               records whole: export, and import (ending in finish.c)
**   expiry.c                 the expiry sweep, a write of its own
**   finish.c                 the one way a write ends
**   flow.c                   moves between tiers: capacity, promotion
**   roster.c                 capacity's memory of its buckets
**   spill_key.c              a full bucket's weakest, by keys the clock does not move
**   select.c                 what a selection picks
**   ranked.c                 recall and select by the scorer's index
**   blend_least.c            the blend's floor for pruning
**   score.c  embed.c         scores and retention; the embedder
**   dedup.c  revisions.c     duplicates found; a key's earlier revisions
**   base.c                   visibility, errors, transactions
**   touches.c                recall's touches waiting to be written
**   layout.c where.c         the layout and `where` (plain data)
**
** A file may call any file below it and none above it. A function that
** needs one above it belongs further up, or its caller further down.
**
** Conventions every function here keeps unless it says otherwise: a
** function that can fail returns 0 or a negative code with err set (the
** code is err->code); records handed in are borrowed; "within an open
** transaction" means the caller began one (base.c) and will end it
** (finish.c, or commit/rollback for the bookkeeping writes).
*/
#ifndef A2M_STACK_INTERNAL_H
#define A2M_STACK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "stack/policy.h"
#include "stack/stack.h"

/* ---- touches.c: recall's touches, waiting to be written ---------------- */

/*
** One entry per record, in the order first touched, with an
** open-addressing index by seq.
*/
typedef struct a2m_touch {
	int64_t  seq;
	int64_t  at;       /* the latest recall's time (ms) */
	int64_t  add;      /* recalls since the last write */
} a2m_touch;

typedef struct a2m_touches {
	/* Held around every use of the fields below: recalls that share the
	** handle's lock note and look up touches at the same time. */
	pthread_mutex_t mu;
	a2m_touch *v;
	size_t     n, cap;
	uint32_t  *slots;   /* index + 1 into v; 0 = free; nslots = 2 * cap */
	size_t     nslots;
	int64_t    oldest;  /* time of the first touch waiting */
	size_t     max;     /* records waiting at which they are due */
	int        applied; /* written into the open transaction: not laid over reads */
} a2m_touches;

/* Age of the oldest touch (ms) at which the touches are written (and
** a2m_touches.max, the records waiting). */
#define A2M_TOUCH_MAX_AGE_MS 1000

#ifdef A2M_TEST_HOOKS  /* the tests' build of the library only (Makefile) */
/*
** For tests: the age at which waiting touches are written (0: the default,
** A2M_TOUCH_MAX_AGE_MS), so a test of the count bound does not depend on
** how fast a slow build runs. Set it between calls, from one thread.
*/
void a2m_touches_max_age_for_tests(int64_t ms);
#endif

/* ---- the stack ---------------------------------------------------------- */

/* Buckets whose facts capacity keeps between writes (roster.c). */
#define A2M_ROSTERS 8

/*
** A fact's place in its bucket's order, whatever the clock says
** (spill_key.c): the log2 of its retention at the roster's base time, and
** the time its decay runs from.
*/
typedef struct a2m_spill_key {
	double  key;   /* NaN: the plan must weigh the bucket (a group, a low salience) */
	int64_t last;  /* its last access, or its creation (a working tier) */
} a2m_spill_key;

/* One bucket's facts (roster.c), as of the store's stamp. */
typedef struct a2m_roster {
	int          live;     /* 0: a free slot */
	size_t       tier;     /* the bucket: a tier of the layout, */
	char        *session;  /*   and a session in a per-session tier (else NULL) */
	a2m_record **v;        /* the facts, in no order (flow.c, read_facts) */
	size_t       n, cap;
	a2m_spill_key *keys;   /* keys[i] is v[i]'s (NULL: none were made) */
	int64_t      base;     /* the time the keys are taken at */
	uint64_t     stamp;    /* the store's stamp they are current at */
	uint64_t     used;     /* roster_clock when last used */
} a2m_roster;

/*
** blend_least.c: each tier's oldest created_at as last read, for the
** blend's floor (a2m_stack_blend_least). Under mu: recalls that share
** the handle's lock run at once.
*/
typedef struct a2m_stack_oldest {
	pthread_mutex_t mu;
	int             known;    /* 0: not read yet, or a read failed */
	int64_t        *at;       /* per tier of the layout; INT64_MAX: none held
	                             (or the tier does not decay: not read) */
	uint64_t        gen;      /* the stack's generation it was read at */
	int64_t         read_at;  /* the now it was read at (ms) */
	uint64_t        reads;    /* how many times it was read (tests) */
} a2m_stack_oldest;

/* Each field is kept by the file named beside it; the others only read it. */
struct a2m_stack {
	a2m_store       *store;
	a2m_scorer      *scorer;
	a2m_stack_config cfg;
	a2m_change_fn    on_change;   /* set by stack.c, called by finish.c alone */
	void            *on_change_ctx;
	a2m_change_write_fn log_write; /* stack.c: set when the log is written in the
	                                  write's transaction (finish.c) */
	int64_t          dims;        /* base.c: cached embedding width; -1 = not read yet */
	int64_t         *counts;      /* conversations.c: records per tier, cached for describe */
	int              counts_valid;/* 0 after any commit or rollback (base.c) */
	uint64_t         counts_at;   /* conversations.c: a2m_stack_generation() they
	                                 were counted at */
	/* base.c: + 1 at every commit and rollback; read without the handle's
	** lock by the describe cache (a2m_stack_generation). */
	_Atomic uint64_t generation;
	int64_t          embed_retry_at; /* embed.c, the breaker: no embedder
	                                    call before this time (ms); 0 = closed */
	int              embed_failing;  /* the last embedder call failed */
	size_t           gen_dims;       /* width the embedder answered with */
	int              model_checked;  /* the store's vectors are known to be
	                                    of this embedder (embed.c) */
	a2m_touches      touches;        /* recall's, not yet written (touches.c) */
	/* Capacity (flow.c): the bounded buckets records entered since the last
	** capacity pass, so a pass looks only there once a full one has run. */
	struct a2m_arrival *arrivals;
	size_t           n_arrivals, cap_arrivals;
	int              arrivals_lost;  /* one could not be noted: pass over all */
	int              capacity_known; /* a full pass committed since open */
	int              full_pass_run;  /* the open transaction ran a full pass */
	/* finish.c: a lone durable write's capacity pass runs after its commit
	** (a2m_stack_capacity_apart), and the call's ticket is the write's. */
	int              capacity_apart;
	uint64_t         early_ticket;
	/* base.c: a joint transaction (a2m_stack_joint_begin): 0 none, 1 open
	** (begin and commit are its parts), 2 undone by a rollback inside it;
	** and capacity_known as it was when it began, for when it is undone. */
	int              joint;
	int              joint_capacity_known;
	a2m_stack_replay *replay;        /* the part running (a2m_stack_joint_part) */
	a2m_roster       rosters[A2M_ROSTERS]; /* roster.c */
	uint64_t         roster_clock;
	/* ranked.c: indexed recalls and selects that read a pruned list, and
	** the times one had to read the complete list after it; for tests and
	** measurements. */
	_Atomic uint64_t pruned_reads, pruned_retries;
	/* ranked.c: the candidates' records read (visited), for tests and
	** measurements: the stop is weighed before each one. */
	_Atomic uint64_t ranked_rows;
	/* expiry.c: the earliest expires_at of any record as far as the stack
	** knows, never later than the truth (0: none); read without the
	** handle's lock by a2m_stack_expiry_due. */
	_Atomic int64_t  next_expiry;
	a2m_stack_oldest oldest;         /* blend_least.c */
};

/* Whether rec's expiry (x-expiry) has come at now: from then on no read
** returns it (a2m_selection.with_expired aside). */
static inline int a2m_stack_expired(const a2m_record *rec, int64_t now)
{
	return rec->expires_at && rec->expires_at <= now;
}

/* ---- touches.c (calls nothing of the stack) ----------------------------- */

/* Readies an empty buffer due at max records waiting (0: A2M_TOUCH_BUFFER)
** and its mutex. Returns 0, or -1. */
int  a2m_touches_init(a2m_touches *b, size_t max);
void a2m_touches_free(a2m_touches *b);

/*
** Counts a recall at time now of each of the n hits, under the buffer's
** mutex. Sets *due when the touches waiting should now be written (full,
** or old). With refuse_due set and the buffer already due, notes nothing
** and returns 1 (a shared read cannot write them). Returns 0, 1, or -1
** when memory runs out (some hits may then be counted).
*/
int  a2m_touches_note(a2m_touches *b, const a2m_hit *hits, size_t n, int64_t now,
		      int refuse_due, int *due);

/* True when the touches waiting should be written now (full, or old). */
int  a2m_touches_due(a2m_touches *b, int64_t now);

/*
** Writes every waiting touch into the store's open transaction, as
** increments (store.h, touch), and marks them applied: reads no longer lay
** them over, commit forgets them (a2m_touches_clear), rollback keeps them
** waiting (applied = 0). Exclusive lock only. Returns 0, or the store's
** code (err is the caller's to fill: base.c).
*/
int  a2m_touches_apply(a2m_touches *b, a2m_store *s);

/* Forgets every touch (they were committed). */
void a2m_touches_clear(a2m_touches *b);

/*
** rec as reads must report it: with the touches still waiting laid over it
** (in *tmp, a shallow copy borrowing rec's strings), or rec itself when it
** has none or they are already in the open transaction. Any lock.
*/
const a2m_record *a2m_stack_touched(const a2m_stack *st, const a2m_record *rec,
				    a2m_record *tmp);

/* The same, in place, for the n hits' records (owned copies), under one
** lock. */
void a2m_stack_touched_hits(const a2m_stack *st, a2m_hit *hits, size_t n);

/* ---- blend_least.c (calls nothing of the stack) ------------------------ */

/* Sets o up for ntiers tiers, nothing read yet / frees it. init returns 0, or -1. */
int  a2m_stack_oldest_init(a2m_stack_oldest *o, size_t ntiers);
void a2m_stack_oldest_free(a2m_stack_oldest *o);

/*
** The least share of a relevance the blend leaves any record the store
** holds at now: the least, over the tiers, of the blend's factor at the
** tier's oldest created_at and half-life and salience 0, less a margin for
** rounding; the relevance weight's share when the ages cannot be read; 1
** when there is no blend or a weight is negative (as ranked.c's floor
** was). A bound while no record older than the one last read was written
** since (see blend_least.c for when it is read again).
*/
double a2m_stack_blend_least(a2m_stack *st, int64_t now);

/* How many times the tiers' oldest records were read from the store (tests). */
uint64_t a2m_stack_oldest_reads(a2m_stack *st);

/*
** 1 when every private tier of the layout (not shared: a scope turns its
** other owners' records away) decays and held nothing at the last read
** of the tiers' oldest records (a2m_stack_blend_least reads them); else 0,
** also when they were never read. A hint for pruning (ranked.c): a record
** written since only costs a recall a second request.
*/
int a2m_stack_private_tiers_empty(a2m_stack *st);

/* ---- base.c (calls touches.c) ------------------------------------------- */

/* The tier rec lives in, or NULL when its tier is unknown. */
/*
** remember's time, and an id for a new record made at now, for the part of
** a joint transaction running (a2m_stack_joint_part: kept the first time,
** given again when it runs again); outside one, the clock and a new id.
** a2m_stack_part_id returns 0, or -1 when no id could be made.
*/
int64_t a2m_stack_part_now(a2m_stack *st);
int a2m_stack_part_id(a2m_stack *st, int64_t now, char out[A2M_ID_LEN]);

const a2m_tier *a2m_stack_tier_of(const a2m_stack *st, const a2m_record *rec);

/* True when rec may be seen by scope (NULL: everything; spec §6,
** implementing-a2m.md §7). */
int a2m_stack_visible(const a2m_stack *st, const a2m_scope *scope, const a2m_record *rec);

/* Equal as optional strings: both NULL, or both set and equal. */
int a2m_stack_same_str(const char *a, const char *b);

/* Fills err from a store failure rc (read-only stays A2M_READ_ONLY, the
** rest is internal, with the store's message) and returns the code. */
int a2m_stack_store_error(a2m_stack *st, a2m_error *err, int rc);

/*
** Fills err from the scorer's failure rc and returns it, naming the store's
** failure when the store failed on this thread since failures was read
** (a2m_store_failures_here()).
*/
int a2m_stack_scorer_error(a2m_stack *st, a2m_error *err, int rc, unsigned failures);

/*
** counts[i] = records in tier i (the layout's order), read from the store
** now, never from the cache describe uses: inside a transaction, what it
** has written so far. Returns 0, or the store's failure with err set.
*/
int a2m_stack_count_tiers(a2m_stack *st, int64_t *counts, a2m_error *err);

/* Sets err to A2M_NEED_EXCLUSIVE (stack.h) and returns it: what a shared
** read answers where it would have to write. */
int a2m_stack_need_exclusive(a2m_error *err);

/* The store meta entry holding the embedding width fixed by the first vector. */
#define A2M_META_DIMS "embedding_dims"

/*
** Within an open transaction: when rec (records[i] of a write) carries a
** vector, checks its width against the store's, or fixes the store's width
** with it when no vector was ever written. EMBEDDING_MISMATCH, with data
** {"expected", "got"}, for another width.
*/
int a2m_stack_check_dims(a2m_stack *st, const a2m_record *rec, size_t i, a2m_error *err);

/*
** Transactions: begin (or begin_relaxed, for bookkeeping whose commit need
** not survive a power loss), then commit on success or rollback otherwise.
** Each returns 0 or fills err from the store's failure. commit and rollback
** also drop the caches the transaction may have made stale (the tier
** counts, the width; the generation moves on). Unless the stack is
** read-only, begin first writes recall's waiting touches into the
** transaction, so everything in it reads the counts; a begin that fails
** leaves no transaction open. A write operation ends with
** a2m_stack_finish, never by calling commit itself: commit and rollback
** are for finish.c, and for the bookkeeping writes that move no record and
** report nothing (recall's touches here, generated vectors in embed.c).
*/
int  a2m_stack_begin(a2m_stack *st, a2m_error *err);
int  a2m_stack_begin_relaxed(a2m_stack *st, a2m_error *err);
int  a2m_stack_commit(a2m_stack *st, a2m_error *err);
void a2m_stack_rollback(a2m_stack *st);

/* Writes the waiting touches in a transaction of their own (durable, or
** relaxed: bookkeeping). Exclusive lock only. Returns 0 or fills err (the
** touches then still wait). */
int  a2m_stack_touches_flush(a2m_stack *st, int durable, a2m_error *err);

/* ---- revisions.c (calls base.c) ----------------------------------------- */

/*
** Keeps old, the record a key write is about to replace, as a revision of
** its own (x-history), within the open transaction: a no-op without
** history_keep or a store that keeps none.
*/
int a2m_stack_keep_revision(a2m_stack *st, const a2m_record *old, int64_t now,
			    a2m_error *err);

/* ---- dedup.c (calls base.c) --------------------------------------------- */


/*
** *out = a copy of the record rec repeats: rec->fingerprint's, in tier,
** with rec's session, owner and role, not expired at now, and whose
** normal form equals rec's. NULL when there is none (or rec has no
** fingerprint, or the store cannot look one up).
*/
int a2m_stack_find_duplicate(a2m_stack *st, const a2m_record *rec, const char *tier,
			     int64_t now, a2m_record **out, a2m_error *err);

/* ---- score.c (calls base.c) --------------------------------------------- */

/* recall's order over a2m_hit (qsort): higher score, then newer, first. */
int a2m_stack_hit_cmp(const void *a, const void *b);

/*
** A judged record's score: relevance rel blended with its recency and
** salience by the weights in force (stack.h, a2m_blend). Never above rel:
** ranked.c's early stop depends on it.
*/
double a2m_stack_blend_score(const a2m_stack *st, double rel, const a2m_record *r,
			     int64_t now);

/* The score of a hit of a recall without a query: 1 now, halving every
** day, whatever the tier (newest first). */
double a2m_stack_recency_score(const a2m_record *r, int64_t now);

/* a2m_stack_retention: stack/policy.h. */

/* ---- embed.c (calls base.c) --------------------------------------------- */

/* How long the breaker keeps a failing embedder off (docs/EMBEDDINGS.md §4.3). */
#define A2M_EMBED_BREAKER_MS 30000

/*
** Embeds text for recall: sets *vec (free with free()) and *dims and
** returns 0, or returns nonzero with *vec NULL when there is no embedder,
** the breaker holds it off, or it failed (logged once per outage). Never
** fails the caller: a recall then ranks lexically.
*/
int a2m_stack_embed_text(a2m_stack *st, const char *text, float **vec, size_t *dims);

/*
** Embeds up to max records owed a server vector (docs/EMBEDDINGS.md §4.2:
** in a non-working tier, no caller vector, no generated one, content not
** blank): reads them, calls the embedder with no store transaction open,
** then in one short transaction stores each vector only if the record is
** unchanged (same revision and content, still no vector). *done = records
** given a vector. Returns 0 (also without an embedder, on a read-only
** stack, or while the breaker holds the embedder off), a negative
** a2m_embed_status when the embedder failed (logged once, nothing
** changed), or a store failure with err set.
*/
int a2m_stack_embed_owed(a2m_stack *st, size_t max, size_t *done, a2m_error *err);

/* After a write's commit (finish.c): one batch of a2m_stack_embed_owed,
** errors ignored (the records stay owed and are embedded later). No-op
** without an embedder or on a read-only stack. */
void a2m_stack_embed_after_write(a2m_stack *st);

/* ---- ranked.c (calls score.c, base.c, touches.c, where.c) --------------- */

/*
** The indexed path of recall and select: asks st's scorer (whose
** candidates() the caller checked is set) for the records q matches, visits
** them best first, applying the whole selection (the store's exact part,
** visibility, where) to each before it may enter the best `limit` (0: no
** limit), and stops once no candidate left can enter. blended: scores are
** a2m_stack_blend_score (recall), else the relevance itself (select); hits
** below min_score are dropped. With a limit the scorer may prune its list
** (docs/RANKING.md §5); when what it left out could still enter, the list
** is asked for again, complete. Returns 0 with *out (free with
** a2m_hits_free) sorted by a2m_stack_hit_cmp, an array even when empty;
** A2M_SCORER_ABSTAIN or A2M_SCORER_SCAN, *out NULL, for the caller to
** handle; or a negative code with err set.
*/
int a2m_stack_ranked(a2m_stack *st, const a2m_selection *sel, const a2m_rank_query *q,
		     size_t limit, double min_score, int blended, a2m_hit **out, size_t *n,
		     a2m_error *err);

/*
** The part of sel a store's vector search can apply during its scan (tier,
** owner, visibility), for a2m_rank_query.filter. It borrows st and sel,
** and must not outlive them.
*/
typedef struct a2m_stack_vfilter {
	a2m_vector_filter    f;
	const a2m_stack     *st;
	const a2m_selection *sel;
} a2m_stack_vfilter;

void a2m_stack_vector_filter(const a2m_stack *st, const a2m_selection *sel,
			     a2m_stack_vfilter *out);

/* ---- select.c (calls ranked.c, score.c, base.c, touches.c, where.c) ----- */

/* Copies of the visible records a selection picks, as a scan collects them. */
typedef struct collect {
	a2m_stack           *st;
	const a2m_selection *sel;
	a2m_record         **recs;     /* owned: a2m_record_array_free(recs, n) */
	size_t               n, cap;
	size_t               stop_at;  /* 0 = collect all */
	int                  oom;
	int64_t              now;      /* what "expired" is measured against */
} collect;

/*
** Fills c with copies of what sel selects (its exact part, scope and
** `where`, touches laid over), in creation order (newest first when
** descending), stopping after stop_at records (0 = all). On failure c
** holds nothing. A scan with no scope and no `where` reads every record
** the query names, whoever owns it: how flow.c and conversations.c find what
** to move.
*/
int a2m_stack_select_records(a2m_stack *st, const a2m_selection *sel, int descending,
			     size_t stop_at, collect *c, a2m_error *err);

/* The scan visitor behind collect: visibility and `where`, then a copy. */
int a2m_stack_collect_visit(const a2m_record *rec, void *ctx);

/*
** Narrows q by the tests of `where` the store can apply itself: a string
** or null `session`, a string `tier`, a `key` or its `$prefix` (when those
** are record fields and q does not already select them), and a range of
** `created_at` (x-where), so that a scan by session reads that session's
** records through the store's index instead of every record. `where` must
** still be applied after. Strings are borrowed from where.
*/
void a2m_stack_narrow_by_where(const a2m_stack *st, const json_t *where, a2m_query *q);

/* ---- roster.c (calls spill_key.c, score.c, base.c, layout.c) -------------- */

/*
** A record's facts: a new record (a2m_record_free) holding only what
** capacity weighs (store.h, a2m_query.brief), copied from rec. NULL when
** memory runs out.
*/
a2m_record *a2m_stack_facts_of(const a2m_record *rec);

/* The store's stamp (store.h), or 0 in an engine without one. */
uint64_t a2m_stack_roster_stamp(a2m_stack *st);

/* A roster's keys as lent by a2m_stack_roster_get. */
typedef struct a2m_roster_keys {
	const a2m_spill_key *v;  /* v[i] is the i-th fact's; NULL: none */
	int64_t              base;
} a2m_roster_keys;

/*
** The facts kept of the bucket (tier: its index in the layout; session:
** NULL unless the tier is per session), *n of them, and their keys
** (*keys), lent until the next roster call; NULL when none is kept or they
** may be stale (then dropped). A caller that reorders the facts must not
** read the keys after.
*/
a2m_record **a2m_stack_roster_get(a2m_stack *st, size_t tier, const char *session,
				  size_t *n, a2m_roster_keys *keys);

/*
** Keeps v[0..n) (malloc'd facts, a2m_stack_facts_of's kind, taken over
** when it returns 1) as the bucket's, current at the store's stamp now,
** replacing any kept and, when every slot is taken, the least recently
** used bucket. Returns 0, v still the caller's, when the engine has no
** stamp or memory runs out.
*/
int a2m_stack_roster_put(a2m_stack *st, size_t tier, const char *session,
			 a2m_record **v, size_t n);

/*
** After a write of the stack: `before` is the stamp read just before it,
** seq the record written, was the record as it was before (its tier and
** session; NULL: a new record, which no roster holds), now as it is after
** (NULL: removed). Every roster current at `before` follows (seq out, now
** in when it belongs) and is current again; every other is dropped.
** Cannot fail: a roster that cannot follow is dropped.
*/
void a2m_stack_roster_note(a2m_stack *st, uint64_t before, int64_t seq,
			   const a2m_record *was, const a2m_record *now);

/* Drops every roster (stack.c, at free). */
void a2m_stack_rosters_free(a2m_stack *st);

#ifdef A2M_TEST_HOOKS
/*
** For tests: with off set, no stack keeps a roster (capacity reads its
** bucket at every check), so a test can compare the two. Between calls,
** from one thread.
*/
void a2m_stack_rosters_off_for_tests(int off);
#endif

/* ---- spill_key.c (calls score.c) ----------------------------------------- */

/*
** f's key in its bucket of tier t (by_age: a2m_stack_weighs_age(t)), taken
** at time base: the log2 of its retention then, so the order of keys is
** the order of retentions at any time (spill_key.c says why, and when the
** key is NaN: the plan weighs the bucket then).
*/
void a2m_stack_spill_key(const a2m_tier *t, int by_age, const a2m_record *f,
			 int64_t base, a2m_spill_key *out);

/*
** The unit that leaves v[0..n), one bucket of tier t over its capacity by
** one, with keys[i] v[i]'s key taken at base: *pick is its index, the
** very record a2m_stack_spill_plan(t, v, n, now) would have leave. Returns
** 1, or 0 when the keys cannot vouch for it (more than one to leave, a
** group, a NaN key, a record too old or in the future): the plan decides.
*/
int a2m_stack_spill_pick(const a2m_tier *t, int by_age, a2m_record *const *v,
			 const a2m_spill_key *keys, size_t n, int64_t base, int64_t now,
			 size_t *pick);

/* ---- flow.c (calls roster, spill_key, select, score, base, touches, layout .c) */

#ifdef A2M_TEST_HOOKS
/* What capacity's shortcuts did since the last a2m_stack_pick_check_for_tests. */
typedef struct a2m_pick_stats {
	uint64_t picks;          /* spills the keys picked (spill_key.c) */
	uint64_t picks_wrong;    /* ... where the plan would have sent another unit */
	uint64_t rosters;        /* capacity checks a roster answered without a count */
	uint64_t rosters_wrong;  /* ... where the store counts another number */
} a2m_pick_stats;

/*
** For tests: with on set, every keyed pick is checked against the plan over
** the same facts, and every roster that answers a capacity check against
** the store's count (both slower; the library's own build never checks).
** *out (when not NULL) gets the tallies since the last call, which are
** reset. Between calls, from one thread.
*/
void a2m_stack_pick_check_for_tests(int on, a2m_pick_stats *out);
#endif

/*
** Moves rec and every record of its group in the same tier to tier `to`
** (to NULL: deletes them), adding salience_add to each moved record, and
** notes the arrivals for capacity. rec needs only its facts (id, seq,
** group, tier, session, salience...: a2m_stack_facts_of); the move writes
** a record's tier and salience alone (store.h, move). Within an open
** transaction. *n = records moved (or deleted).
*/
int a2m_stack_move_unit(a2m_stack *st, const a2m_record *rec, const char *to,
			double salience_add, int64_t *n, a2m_error *err);

/*
** Notes that a record entered tier (with session) in the open transaction,
** for the next a2m_stack_rebalance to check that bucket. Cannot fail: when
** memory runs out, the next pass covers every tier instead.
*/
void a2m_stack_note_arrival(a2m_stack *st, const char *tier, const char *session);

/*
** Promotion (DECISIONS 006), decided here and nowhere else (the test of
** "earned" is a2m_stack_promotion_earned, stack/policy.h):
** a2m_stack_promote_earned moves rec's unit there, within an
** open transaction, when rec (as read, touches counted) has earned it and
** still lives in that tier: it is read again, since an earlier group move
** may have taken it. *to = the destination it moved to (borrowed from the
** layout), NULL when it did not; cons->promoted counts the records moved.
*/
int a2m_stack_promote_earned(a2m_stack *st, const a2m_record *rec, const char **to,
			     a2m_consolidation *cons, a2m_error *err);

/*
** Runs promotion (earned by recalls, in every tier) and capacity, within
** an open transaction, adding to *cons. with_promotion 0 runs capacity
** only. Capacity looks at every bounded tier on the first pass after open
** (the layout may have shrunk since the file was written), then only at the
** buckets noted by a2m_stack_note_arrival, counting each through the store
** and reading its records only when it is over capacity. finish.c calls it.
*/
int a2m_stack_rebalance(a2m_stack *st, int with_promotion, a2m_consolidation *cons,
			a2m_error *err);

/*
** After the commit of a transaction that ran a2m_stack_rebalance: from now
** on only buckets records enter can exceed their capacity, if that pass
** covered every tier. Skipping the call is safe, only slower.
*/
void a2m_stack_capacity_committed(a2m_stack *st);

/* Frees the arrivals not yet checked (a2m_stack_free). */
void a2m_stack_arrivals_free(a2m_stack *st);

/* ---- finish.c (calls flow.c, embed.c, base.c) --------------------------- */

/* What runs in a write's transaction before its commit (a2m_finish). */
enum a2m_rebalance {
	A2M_REBALANCE_NONE,      /* nothing entered a tier: no rule to apply */
	A2M_REBALANCE_CAPACITY,  /* capacity of the buckets records entered */
	A2M_REBALANCE_ALL        /* promotion earned anywhere, then capacity */
};

/* When a write reports its consolidation (spec §4.12, a2m_finish). */
enum a2m_cons_event {
	A2M_CONS_IF_MOVED,  /* after the write's own changes, if anything moved:
			       a spill is a reorganisation the log must show */
	A2M_CONS_ALWAYS,    /* after them, even when nothing moved: one per
			       memory/consolidate */
	A2M_CONS_FIRST      /* before them, always: memory/session/close reports
			       its consolidation, then that the session closed */
};

/* How one write ends: what its caller fills in for a2m_stack_finish. */
typedef struct a2m_finish {
	int                rebalance;   /* enum a2m_rebalance */
	/* In: what the write moved itself (a promotion at recall); out: plus
	** what the rebalance moved. */
	a2m_consolidation  cons;
	/* The write's own changes, reported in order after the commit
	** (borrowed until a2m_stack_finish returns); an `at` of 0 is the time
	** of the report. */
	const a2m_change  *changes;
	size_t             n_changes;
	int                cons_event;  /* enum a2m_cons_event */
	int                owes;        /* the write itself left records owed a vector */
	int                no_embed;    /* embed nothing after it, whatever moved */
	/* Out, when set: records per tier (the layout's order) as the
	** transaction leaves them, read before its commit. */
	int64_t           *counts;
} a2m_finish;

/*
** Ends the write whose transaction is open: when rc is 0, runs
** f->rebalance and commits; on any failure (rc given, or of either step)
** rolls back and returns the code, err set by whoever failed. After a
** commit: notes the capacity pass committed, reports f->changes and the
** consolidation as f->cons_event says, then embeds one batch of owed
** records when f->owes or the rebalance moved anything (unless
** f->no_embed). With f->counts, the tiers' counts are read after the
** rebalance and before the commit, so a read that fails rolls back.
** Returns 0 once committed: what follows cannot fail it.
** Every write ends here, and nothing else calls the change listener.
*/
int a2m_stack_finish(a2m_stack *st, int rc, a2m_finish *f, a2m_error *err);

/* ---- expiry.c (calls finish.c, base.c) ---------------------------------- */

/* A record now expires at `at` (0: never): the cached earliest moves
** earlier if it must. Any thread. */
void a2m_stack_expiry_noted(a2m_stack *st, int64_t at);


/* ---- write.c (calls finish.c and below) --------------------------------- */

/*
** Touches the n hits a recall returns: access_count + 1 and accessed_at
** now, in the hits at once, in the store later (touches.c: recall writes
** nothing of its own). A touch that earns a promotion is written at once
** with it (the hits are then refreshed from the store), and a full or old
** buffer is written now, or, when it cannot be (a full disk), left to wait
** for the next write: that is never the recall's failure. With shared set
** (the caller holds the handle's lock shared, a2m_selection.shared) it
** does neither: where it would have to, it answers A2M_NEED_EXCLUSIVE
** having counted nothing, so that the exclusive retry counts each touch
** once.
*/
int a2m_stack_touch(a2m_stack *st, a2m_hit *hits, size_t n, int shared, a2m_error *err);

#endif
