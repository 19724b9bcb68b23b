/*
** memory_internal.h — what the files of the in-memory engine share, for
** them only: the engine's structs and the functions one of its files
** defines and another calls. memory.c's opening comment describes the
** layout these structs make up.
**
** The engine is one storage seam implementation (store.h) spread over
** memory.c (entries, the writes, open and close, the ops table),
** memory_tables.c (the hash tables and the ordered array that find
** records), memory_txn.c (the journal, transactions and store-level
** settings) and memory_scan.c (the reads). Nothing outside those files
** includes this header: the rest of the server sees only
** a2m_store_memory_open() and the ops.
*/
#ifndef A2M_MEMORY_INTERNAL_H
#define A2M_MEMORY_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "store/memory_counts.h"
#include "store/memory_index.h"
#include "store/store.h"
#include "store/vector_index.h"
#include "util/text.h"

/* An entry's slot while it is in no place of order[]. */
#define NO_SLOT         SIZE_MAX

typedef struct entry entry;
struct entry {
	a2m_record rec;
	size_t     slot;     /* index in order[], NO_SLOT while not placed */
	/* The low 32 bits of the hashes: they pick the bucket (a table has
	** fewer than 4G) and reject most of a chain before a strcmp. With the
	** 32-bit positions of link, an entry is 256 bytes, an allocator size
	** class, where 64-bit ones made it 272 (in a class of 320). */
	uint32_t   id_hash;
	uint32_t   key_hash; /* meaningful only while rec.key != NULL */
	entry     *id_next;  /* chain in the ids table */
	entry     *key_next; /* chain in the keys table */
	entry     *seq_next; /* chain in the seqs table */
	entry     *fp_next;  /* chain in the fingerprints table (rec.fingerprint != 0) */
	a2m_mdoc  *doc;      /* the content's postings; NULL without an index */
	a2m_mlink  link;     /* its place in its groups (counts) */
};

/* The four tables an entry can be in. */
enum { BY_ID = 0, BY_KEY = 1, BY_SEQ = 2, BY_FP = 3 };

typedef struct table {
	entry **buckets;
	size_t  nbuckets;    /* a power of two, never 0 once the store is open */
	size_t  count;
} table;

typedef enum undo_kind { UNDO_INSERT, UNDO_UPDATE, UNDO_REMOVE, UNDO_META, UNDO_TOUCH } undo_kind;

typedef struct a2m_mhistory a2m_mhistory;

/*
** One step to undo. Entries are never freed while a transaction is open (a
** removed one belongs to its UNDO_REMOVE step until commit), so the pointer
** stays valid for every later step that names the same entry.
*/
typedef struct undo {
	undo_kind  kind;
	entry     *e;
	a2m_record old;      /* UNDO_UPDATE: the contents the update replaced;
	                        UNDO_TOUCH: only access_count and accessed_at */
	a2m_mdoc  *old_doc;  /* UNDO_UPDATE: the doc it replaced, if content changed */
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
	table     ids;
	table     keys;
	table     seqs;
	table     fps;       /* fingerprint -> entries (x-dedup) */
	a2m_mhistory *history; /* earlier revisions of keyed records (memory_history.c) */
	a2m_mindex  *index;  /* NULL until index_attach */
	a2m_indexer *ix;     /* borrowed */
	a2m_vindex  *vectors; /* the caller's vectors as float rows (vector_index.h) */
	a2m_mcounts *counts;
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
** Adds e (its hash already set) to t under bykey (BY_ID, BY_KEY, BY_SEQ).
** Cannot fail, which is what lets rollback never fail.
*/
void a2m_mem_table_link(table *t, entry *e, int bykey);

/* Removes e, which must be in t (bykey as for link). */
void a2m_mem_table_unlink(table *t, entry *e, int bykey);

/* The entry with this id, seq or (owner, key), or NULL. */
entry *a2m_mem_find_id(mstore *s, const char *id);
entry *a2m_mem_find_seq(mstore *s, int64_t seq);
entry *a2m_mem_find_key(mstore *s, const char *owner, const char *key);

/* The first entry of the chain fingerprint fp hashes to (follow fp_next,
** and test rec.fingerprint: the chain holds others too). */
entry *a2m_mem_fp_chain(mstore *s, uint64_t fp);

/*
** Links e into, or unlinks it from, the tables keyed on what a write may
** change: keys (if it has a key) and fingerprints (if it has one). Every
** write and undo that replaces an entry's record unlinks before and links
** after.
*/
void a2m_mem_key_link(mstore *s, entry *e);
void a2m_mem_key_unlink(mstore *s, entry *e);

/* ---- memory_tables.c: the ordered array --------------------------------- */

/* Makes room for one more slot in order[]. Returns 0, or -1 when memory runs out. */
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

/* Frees e and its doc, which must be unlinked (or the index going away). */
void a2m_mem_entry_free(entry *e);

/*
** Copies src into dst with every string and vector of it in one
** allocation, which begins at dst->id (src->id must be set). Returns 0, or
** -1 when memory runs out (dst zeroed). Free with a2m_mem_record_release,
** never a2m_record_clear: the fields are not allocations of their own.
*/
int a2m_mem_record_pack(a2m_record *dst, const a2m_record *src);

/* Frees a packed record's block and zeroes it. A zeroed record is a no-op. */
void a2m_mem_record_release(a2m_record *rec);

/* Frees the index's terms no posting needs any more, when no transaction is open. */
void a2m_mem_index_settle(mstore *s);

/* ---- memory_txn.c: the journal ------------------------------------------ */

/*
** Makes room for one more undo step if a transaction is open (else does
** nothing). Returns 0, or -1 when memory runs out.
*/
int a2m_mem_journal_reserve(mstore *s);

/*
** Records an undo step (room reserved). old, if given, is copied as it is:
** for UNDO_UPDATE the journal then owns its strings.
*/
void a2m_mem_journal_push(mstore *s, undo_kind kind, entry *e, const a2m_record *old);

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
