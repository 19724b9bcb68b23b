/*
** memory_internal.h — what the files of the in-memory engine share, for
** them only: the engine's structs and the functions one of its files
** defines and another calls. memory.c's opening comment describes the
** layout these structs make up.
**
** The engine is one storage seam implementation (store.h) spread over
** memory.c (entries, the writes, open and close, the ops table),
** memory_tables.c (the hash tables and the ordered array that find
** records), memory_intern.c (the interned names), memory_narrow.c (touch
** and move, in place), memory_txn.c (the journal, transactions and
** store-level settings) and memory_scan.c (the reads). Nothing outside those files
** includes this header: the rest of the server sees only
** a2m_store_memory_open() and the ops.
*/
#ifndef A2M_MEMORY_INTERNAL_H
#define A2M_MEMORY_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "store/memory_counts.h"
#include "store/memory_index.h"
#include "store/memory_intern.h"
#include "store/store.h"
#include "store/vector_index.h"
#include "util/text.h"

/* An entry's slot while it is in no place of order[]. order[] positions are
** 32-bit: a store holds fewer than 4G - 1 records (order_reserve refuses more). */
#define NO_SLOT         UINT32_MAX

/*
** An entry's optional fields, one bit each in entry.has. A field the
** record lacks (no key, no role, no expiry, revision 0, ...) takes no
** room; one it has takes OPT_WIDTH slots of 8 bytes in entry.tail, in bit
** order, which is also the order a2m_mem_entry_view() reads them. The two
** the hash tables walk (the fingerprint's and the key's chains) come
** first, so that finding them passes over as few bits as possible.
*/
enum {
	OPT_FP,       /* fingerprint, fp_next */
	OPT_KEY,      /* key, key_next, key_hash */
	OPT_EXPIRES,  /* expires_at */
	OPT_REVISION, /* revision (when nonzero) */
	OPT_META,     /* metadata */
	OPT_GROUP,    /* group */
	OPT_URI,      /* uri */
	OPT_MEDIA,    /* media_type */
	OPT_EMB,      /* embedding, dims */
	OPT_GEN,      /* gen_embedding, gen_dims */
	OPT_COUNT
};

/* One 8-byte slot of an entry's tail. */
typedef union eslot {
	int64_t     i;
	uint64_t    u;
	uint32_t    u32;
	size_t      n;
	const char *s;
	const void *p;
	struct entry *e;
} eslot;

typedef struct entry entry;

/*
** One record: the fields every record has in a 72-byte header, then the
** optional fields it has (see OPT_*), then its id and content and its
** other strings, then its vectors, all in one allocation
** (a2m_mem_entry_new). Tier, session, role and owner are one pointer to
** their interned combination (memory_intern.h). Readers never see an entry: they get an
** a2m_record filled from it (a2m_mem_entry_view) whose pointers lead into
** it. An entry never changes size; an update makes a new one and puts it
** in the old one's place (memory.c), so an entry's address is fixed
** while it is in the store, and the tables and the journal point at it.
*/
struct entry {
	const a2m_mnames *names; /* tier, session, role, owner (interned; never NULL) */
	int64_t     seq;
	int64_t     created_at;
	int64_t     accessed_at;
	int64_t     access_count;
	double      salience;
	uint32_t    slot;     /* index in order[], NO_SLOT while not placed */
	/* The low 32 bits of the id's hash: it picks the first slot probed (a
	** table has fewer than 4G) and rejects most probes before a strcmp. */
	uint32_t    id_hash;
	a2m_mlink   link;     /* its place in its groups (counts) */
	uint16_t    has;      /* 1 << OPT_x for each optional field present */
	uint8_t     nslots;   /* slots of tail the optional fields take */
	uint8_t     id_len;   /* the id's length; 255 for 255 or more (strlen it) */
	eslot       tail[];   /* optional fields, then id, content, strings, vectors */
};

/* The 8-byte slots each optional field takes, by OPT_ bit. */
extern const uint8_t a2m_mem_opt_width[OPT_COUNT];

/* The first slot of optional field bit, which e must have. */
static inline eslot *a2m_mem_opt(const entry *e, unsigned bit)
{
	unsigned at = 0;
	for (unsigned b = 0; b < bit; b++)
		if (e->has & (1u << b))
			at += a2m_mem_opt_width[b];
	return (eslot *)(uintptr_t)(e->tail + at);
}

static inline const char *a2m_mem_id(const entry *e)
{
	return (const char *)(e->tail + e->nslots);
}

static inline const char *a2m_mem_content(const entry *e)
{
	const char *id = a2m_mem_id(e);
	return id + (e->id_len < 255 ? e->id_len : strlen(id)) + 1;
}

/* The optional fields' values, or what a record without them holds (NULL, 0). */
static inline const char *a2m_mem_key(const entry *e)
{
	return (e->has & (1u << OPT_KEY)) ? a2m_mem_opt(e, OPT_KEY)->s : NULL;
}

static inline const char *a2m_mem_owner(const entry *e)
{
	return e->names->owner;
}

static inline uint64_t a2m_mem_fingerprint(const entry *e)
{
	return (e->has & (1u << OPT_FP)) ? e->tail[0].u : 0;
}

static inline int64_t a2m_mem_expires(const entry *e)
{
	return (e->has & (1u << OPT_EXPIRES)) ? a2m_mem_opt(e, OPT_EXPIRES)->i : 0;
}

/* The four tables an entry can be in. */
enum { BY_ID = 0, BY_KEY = 1, BY_SEQ = 2, BY_FP = 3 };

/* The tables by id and by seq, which every entry is in: probed, so that
** an entry needs no chain link for them (memory_tables.c). */
typedef struct ptable {
	entry **slots;       /* a power of two of them, at most 3/4 used */
	size_t  cap;
	size_t  count;
} ptable;

/* Visits every entry of store s as e, in no particular order (the ids table). */
#define A2M_MEM_EACH(s, e) \
	for (size_t each_i_ = 0; each_i_ < (s)->ids.cap; each_i_++) \
		for (entry *e = (s)->ids.slots[each_i_]; e; e = NULL)

/* The tables by key and by fingerprint, which few entries are in: chained
** through links in those entries' optional slots. */
typedef struct table {
	entry **buckets;
	size_t  nbuckets;    /* a power of two, never 0 once the store is open */
	size_t  count;
} table;

typedef enum undo_kind {
	UNDO_INSERT, UNDO_UPDATE, UNDO_REMOVE, UNDO_META, UNDO_TOUCH, UNDO_MOVE
} undo_kind;

typedef struct a2m_mhistory a2m_mhistory;

/*
** One step to undo. Entries are never freed while a transaction is open (a
** removed one belongs to its UNDO_REMOVE step until commit, one an update
** replaced to its UNDO_UPDATE step), so the pointer stays valid for every
** later step that names the same entry. An earlier step may name the entry
** an update replaced: rollback puts it back before it reaches that step.
*/
typedef struct undo {
	undo_kind  kind;
	entry     *e;        /* the entry the step is about; UNDO_UPDATE: the new one */
	entry     *old;      /* UNDO_UPDATE: the entry it replaced, in no table */
	a2m_mdoc  *doc;      /* UNDO_INSERT, UNDO_REMOVE: the doc it linked, unlinked;
			     ** UNDO_UPDATE: the new content's (NULL: content kept) */
	a2m_mdoc  *old_doc;  /* UNDO_UPDATE: the old content's, which it unlinked */
	int64_t    access_count, accessed_at; /* UNDO_TOUCH: the values before */
	/* UNDO_MOVE: the names and salience before, the names' reference held
	** until commit (put) or rollback (given back to the entry). */
	const a2m_mnames *names;
	double     salience;
	size_t     meta;     /* UNDO_META: the slot in metas[] */
	char      *old_value; /* UNDO_META: the value replaced, NULL for unset */
} undo;

/* A store-level setting; value NULL = unset (the slot is kept, see memory.c). */
typedef struct meta {
	char *name;
	char *value;
} meta;

typedef struct mstore {
	a2m_store base;
	uint64_t  stamp;     /* store.h, stamp: + 1 at every record write and rollback */
	double    salience_max;  /* store.h, salience_bound: no entry has more
				    (0 at first: a salience at or below 0 adds
				    nothing to the blend); raised by every new
				    entry and move, never lowered */
	ptable    ids;
	table     keys;
	ptable    seqs;
	table     fps;       /* fingerprint -> entries (x-dedup) */
	a2m_mhistory *history; /* earlier revisions of keyed records (memory_history.c) */
	a2m_mindex  *index;  /* NULL until index_attach */
	a2m_indexer *ix;     /* borrowed */
	a2m_vindex  *vectors; /* the caller's vectors as float rows (vector_index.h) */
	a2m_mcounts *counts;
	a2m_mintern *names;  /* entries' tiers, sessions, roles, owners (memory_intern.h) */
	entry   **order;
	size_t    nslots;    /* slots in use in order[], tombstones included */
	size_t    cap;       /* allocated slots; never shrinks (rollback relies on it) */
	size_t    live;      /* non-NULL slots */
	size_t    sorted;    /* order[0..sorted) is in (created_at, seq) order */
	/* Scans in progress (callbacks may nest them). Atomic because readers
	** holding only a shared lock scan at once (a2m_mem_read_begin). */
	_Atomic int scanning;
	/* Held while read_begin tidies order[] (a2m_mem_read_begin). */
	pthread_mutex_t tidy_mu;
	int64_t   next_seq;
	int       in_tx;
	int64_t   tx_next_seq;
	undo     *journal;
	size_t    njournal;
	size_t    jcap;
	meta     *metas;
	size_t    nmetas;
	size_t    mcap;
} mstore;

/* ---- memory_tables.c: the hash tables ----------------------------------- */


/* The hash an entry's id_hash must hold for id (FNV-1a). */
uint64_t a2m_mem_hash_id(const char *id);

/* Gives t its first buckets. Returns 0, or -1 when memory runs out. */
int a2m_mem_table_init(table *t);

/*
** Adds e (its hash already set) to t under bykey (BY_KEY, BY_FP).
** Cannot fail, which is what lets rollback never fail.
*/
void a2m_mem_table_link(table *t, entry *e, int bykey);

/* Removes e, which must be in t (bykey as for link). */
void a2m_mem_table_unlink(table *t, entry *e, int bykey);

/*
** The ids (byseq 0) and seqs (byseq 1) tables. init gives t its first
** slots; reserve makes room for one more entry, so that a later link
** cannot fail (0, or -1 when memory runs out; t never shrinks, so
** rollback relinks into room it had). link adds e (its id hash or seq
** set), unlink removes it, replace puts n (the same id and seq) where e
** is. None of the last three fails.
*/
int  a2m_mem_ptable_init(ptable *t);
int  a2m_mem_ptable_reserve(ptable *t, int byseq);
void a2m_mem_ptable_link(ptable *t, entry *e, int byseq);
void a2m_mem_ptable_unlink(ptable *t, entry *e, int byseq);
void a2m_mem_ptable_replace(ptable *t, entry *e, entry *n, int byseq);

/* The entry with this id, seq or (owner, key), or NULL. */
entry *a2m_mem_find_id(mstore *s, const char *id);
entry *a2m_mem_find_seq(mstore *s, int64_t seq);
entry *a2m_mem_find_key(mstore *s, const char *owner, const char *key);

/* The first entry of the chain fingerprint fp hashes to (follow
** a2m_mem_fp_next, and test a2m_mem_fingerprint: the chain holds others too). */
entry *a2m_mem_fp_chain(mstore *s, uint64_t fp);

/* The next entry in e's fingerprint chain; e must have a fingerprint. */
static inline entry *a2m_mem_fp_next(const entry *e)
{
	return e->tail[1].e;
}

/*
** Links e into, or unlinks it from, the tables keyed on what a write may
** change: keys (if it has a key) and fingerprints (if it has one). Every
** write and undo that replaces an entry's record unlinks before and links
** after.
*/
void a2m_mem_key_link(mstore *s, entry *e);
void a2m_mem_key_unlink(mstore *s, entry *e);

/* ---- memory_tables.c: the ordered array --------------------------------- */

/* Makes room for one more slot in order[]. Returns 0, or -1 when memory
** runs out or order[] already has NO_SLOT slots. */
int a2m_mem_order_reserve(mstore *s);

/* Appends e to order[] (room reserved): to the sorted prefix when it can. */
void a2m_mem_order_append(mstore *s, entry *e);

/* Leaves a tombstone where e was (nothing if e has no slot). */
void a2m_mem_order_remove(mstore *s, entry *e);

/* Compacts order[] once more than half its slots are dead; never during a scan. */
void a2m_mem_maybe_compact(mstore *s);

/* Drops trailing tombstones; never during a scan. */
void a2m_mem_order_trim(mstore *s);

/* Brings order[] to fully sorted before a scan reads it. Cannot fail. */
void a2m_mem_order_normalize(mstore *s);

/* Refills order[] from the ids table (rollback). Cannot fail. */
void a2m_mem_order_rebuild(mstore *s);

/* ---- memory.c: entries -------------------------------------------------- */

/*
** A new entry holding rec's fields (a2m_mem_entry_new: rec->id must be
** set; seq, slot, links and doc are left for the caller). An embedding
** pointer without dims, or dims without a pointer, is kept as no
** embedding, as SQLite would keep it. Returns NULL when memory runs out.
*/
entry *a2m_mem_entry_new(mstore *s, const a2m_record *rec);

/* Frees e, its doc and its names' references; e must be in no table (or
** the store going away). NULL is a no-op. */
void a2m_mem_entry_free(mstore *s, entry *e);

/*
** Fills out with e's record, every field. The strings and vectors are
** lent from e: out is valid while e is, and must not be cleared or freed.
** Cheap (no allocation): the reads fill one record on their stack per
** record they visit.
*/
void a2m_mem_entry_view(const entry *e, a2m_record *out);

/*
** Puts n in e's place in every table, order[] and the groups (n's seq and
** id hash must be e's), and moves e's doc to n; e is left in none. Cannot
** fail: the groups n joins and e is not in must have been reserved (or be
** ones n's entry was in before, for rollback).
*/
void a2m_mem_entry_replace(mstore *s, entry *e, entry *n);

/* Frees the index's terms no posting needs any more, when no transaction is open. */
void a2m_mem_index_settle(mstore *s);

/* ---- memory_narrow.c: the writes that change an entry in place ---------- */

/* The ops touch and move (store.h). */
int a2m_mem_touch(a2m_store *base, int64_t seq, int64_t add, int64_t at);
int a2m_mem_move(a2m_store *base, const a2m_record *rec, const char *to, double salience,
		 int *moved);

/* ---- memory_txn.c: the journal ------------------------------------------ */

/*
** Makes room for one more undo step if a transaction is open (else does
** nothing). Returns 0, or -1 when memory runs out.
*/
int a2m_mem_journal_reserve(mstore *s);

/*
** Records an undo step about e (room reserved) and returns it, zeroed
** but for kind and e, for the caller to fill in what the kind keeps.
*/
undo *a2m_mem_journal_push(mstore *s, undo_kind kind, entry *e);

/* ---- memory_txn.c: the transaction and meta ops (store.h) ---------------- */

int a2m_mem_begin(a2m_store *base);
int a2m_mem_commit(a2m_store *base);
void a2m_mem_rollback(a2m_store *base);
int a2m_mem_meta_get(a2m_store *base, const char *name, char **value);
int a2m_mem_meta_set(a2m_store *base, const char *name, const char *value);

/* ---- memory_history.c: earlier revisions (store.h, history_put) ---------- */

/* An empty history; NULL when memory runs out. */
a2m_mhistory *a2m_mhistory_new(void);
void a2m_mhistory_free(a2m_mhistory *h);

/*
** Visits every kept revision, each record's oldest first (the order they
** are kept in), one record after another; stops as a2m_record_visit says.
*/
int a2m_mhistory_each(const a2m_mhistory *h, a2m_revision_visit visit, void *ctx);

/* The ops (store.h). */
int a2m_mem_history_put(a2m_store *base, const a2m_revision *rev, size_t keep);
int a2m_mem_history_visit(a2m_store *base, const char *id, size_t max,
			  a2m_revision_visit visit, void *ctx);

/*
** What remove() needs: room to drop id's revisions later without failing
** (reserve: 0, or -1 when memory runs out), then the drop itself (inside
** a transaction the revisions wait for commit, rollback brings them back).
*/
int  a2m_mem_history_reserve(mstore *s);
void a2m_mem_history_drop(mstore *s, const char *id);

/* The transaction's end, for memory_txn.c: frees what no undo needs any
** more, or undoes every history change since begin. */
void a2m_mem_history_commit(mstore *s);
void a2m_mem_history_rollback(mstore *s);

/* ---- memory_scan.c: the read ops (store.h) ------------------------------- */

/* read_begin tidies order[] so that concurrent readers change nothing;
** read_end has nothing to do. */
int a2m_mem_read_begin(a2m_store *base);
int a2m_mem_read_end(a2m_store *base);

int a2m_mem_get(a2m_store *base, const char *id, a2m_record **out);
int a2m_mem_get_by_key(a2m_store *base, const char *owner, const char *key,
		       a2m_record **out);
int a2m_mem_scan(a2m_store *base, const a2m_query *q, a2m_record_visit visit,
		 void *ctx);
int a2m_mem_count(a2m_store *base, const a2m_query *q, int64_t *out);
int a2m_mem_visit_seqs(a2m_store *base, const int64_t *seqs, size_t n,
		       a2m_record_visit visit, void *ctx);
int a2m_mem_next_expiry(a2m_store *base, int64_t *at);
int a2m_mem_scan_expired(a2m_store *base, int64_t by, a2m_record_visit visit, void *ctx);
int a2m_mem_by_fingerprint(a2m_store *base, uint64_t fp, a2m_record_visit visit, void *ctx);

/* ---- memory_check.c: the consistency ops (store.h) ----------------------- */

int a2m_mem_check(a2m_store *base, const a2m_check_options *o);
int a2m_mem_repair(a2m_store *base, const a2m_check_options *o, unsigned areas);

#endif
