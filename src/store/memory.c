/*
** memory.c — the in-memory storage engine (A2M_ENGINE_MEMORY).
**
** Everything lives in process memory and is gone at close. It must behave
** exactly like sqlite.c as far as store.h can observe, because every
** behavioural test runs against both and the layers above must not care which
** one they were given.
**
** Layout:
**
**   entry        one record plus its bookkeeping (slot, hashes, chain links).
**                An entry's address never changes while it is in the store,
**                so the tables and the journal can point at it.
**   order[]      entries in (created_at, seq) order, the scan order: a
**                sorted prefix and a (usually empty) unsorted tail. A
**                removed entry leaves a NULL tombstone so that removal is
**                O(1); the array is compacted once more than half of its
**                slots are dead, which keeps a scan O(live records) amortised
**                however removals and scans interleave. Trailing tombstones
**                are dropped at once (outside scans), so appends stay in
**                order and the array does not creep.
**   ids          chained hash table id -> entry (FNV-1a), for get/update/remove.
**   keys         chained hash table (owner, key) -> entry, for get_by_key and
**                the per-owner key uniqueness that sqlite.c gets from its
**                UNIQUE index. A NULL owner hashes and compares differently
**                from every string, "" included.
**   seqs         chained hash table seq -> entry, for visit_seqs.
**   index        the term index (memory_index.c), once attached: each entry
**                then owns the doc of its content. Insert, remove and
**                content-changing updates link and unlink docs; the journal
**                keeps the docs an undo needs, and empty terms are swept
**                only when no undo can need them (commit, end of rollback,
**                a write outside a transaction).
**   journal[]    while a transaction is open, one undo step per write;
**                rollback() replays it backwards.
**   counts       records grouped by tier, (tier, session) and session
**                (memory_counts.c): count() of such a selection is a
**                lookup, and a scan of a small group sorts its members'
**                slots instead of passing over every record (the stack's
**                capacity check; a timeline by session).
**   metas[]      the store-level settings (meta_get/meta_set), a short
**                array searched linearly: a store has a handful. A deleted
**                setting keeps its slot with a NULL value, so that undoing
**                its deletion never needs memory.
**
** There is no procedural mirror here: a memory store has no disk to put
** files on, and its records are gone at close anyway (store.h).
**
** Records normally arrive in created_at order, so an insert is an append to
** the sorted prefix. One that does not (an import with an old created_at, an
** update that moves created_at) goes to the unsorted tail; the next scan
** sorts the tail and merges it in, O(n + k log k) for k such writes. That
** keeps every write O(1), and a batch of out-of-order writes costs one merge
** rather than a memmove each or a full sort per scan.
**
** Writes from inside a visit callback are allowed: while a scan runs the
** array is neither compacted, trimmed nor reordered, and anything appended
** lands beyond every slot the scan has yet to visit. So a scan visits each
** record at most once, never one inserted (or moved by an update) during
** it, and never touches freed memory.
*/
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/memory_counts.h"
#include "store/memory_index.h"
#include "store/store.h"
#include "store/vector_index.h"

/* Tables start with this many buckets (a power of two) and double at load 1. */
#define INITIAL_BUCKETS 64
#define INITIAL_SLOTS   64
#define NO_SLOT         SIZE_MAX

typedef struct entry entry;
struct entry {
	a2m_record rec;
	size_t     slot;     /* index in order[], NO_SLOT while not placed */
	uint64_t   id_hash;
	uint64_t   key_hash; /* meaningful only while rec.key != NULL */
	entry     *id_next;  /* chain in the ids table */
	entry     *key_next; /* chain in the keys table */
	entry     *seq_next; /* chain in the seqs table */
	a2m_mdoc  *doc;      /* the content's postings; NULL without an index */
	a2m_mlink  link;     /* its place in its groups (counts) */
};

/* The three tables an entry can be in. */
enum { BY_ID = 0, BY_KEY = 1, BY_SEQ = 2 };

typedef struct table {
	entry **buckets;
	size_t  nbuckets;    /* a power of two, never 0 once the store is open */
	size_t  count;
} table;

typedef enum undo_kind { UNDO_INSERT, UNDO_UPDATE, UNDO_REMOVE, UNDO_META, UNDO_TOUCH } undo_kind;

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

/* A store-level setting; value NULL = unset (the slot is kept, see above). */
typedef struct meta {
	char *name;
	char *value;
} meta;

typedef struct mstore {
	a2m_store base;
	table     ids;
	table     keys;
	table     seqs;
	a2m_mindex  *index;  /* NULL until index_attach */
	a2m_indexer *ix;     /* borrowed */
	a2m_vindex  *vectors; /* the caller's vectors as float rows (vector_index.h) */
	a2m_mcounts *counts;
	entry   **order;
	size_t    nslots;    /* slots in use in order[], tombstones included */
	size_t    cap;       /* allocated slots; never shrinks (rollback relies on it) */
	size_t    live;      /* non-NULL slots */
	size_t    sorted;    /* order[0..sorted) is in (created_at, seq) order */
	int       scanning;  /* scans in progress (callbacks may nest them) */
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

/* ---- hashing ----------------------------------------------------------- */

#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME  1099511628211ULL

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= FNV_PRIME;
	}
	return h;
}

static uint64_t hash_id(const char *id)
{
	return fnv1a(FNV_OFFSET, id, strlen(id));
}

/*
** Hashes (owner, key). A leading tag byte says whether there is an owner, and
** the owner's NUL terminator separates it from the key, so NULL, "" and every
** other owner feed different byte strings.
*/
static uint64_t hash_key(const char *owner, const char *key)
{
	unsigned char tag = owner ? 1 : 0;
	uint64_t h = fnv1a(FNV_OFFSET, &tag, 1);
	if (owner)
		h = fnv1a(h, owner, strlen(owner) + 1);
	return fnv1a(h, key, strlen(key));
}

/* Equal as optional strings: both NULL, or both set and equal. */
static int same(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

/* ---- the two hash tables ----------------------------------------------- */

static uint64_t hash_seq(int64_t seq)
{
	return (uint64_t)seq * 0x9E3779B97F4A7C15ULL;
}

/*
** The three tables share this code; `bykey` (BY_ID, BY_KEY, BY_SEQ) selects
** which chain link and which hash an entry uses.
*/
static entry **next_of(entry *e, int bykey)
{
	return bykey == BY_SEQ ? &e->seq_next : bykey ? &e->key_next : &e->id_next;
}

static uint64_t hash_of(const entry *e, int bykey)
{
	return bykey == BY_SEQ ? hash_seq(e->rec.seq) : bykey ? e->key_hash : e->id_hash;
}

static int table_init(table *t)
{
	t->buckets = calloc(INITIAL_BUCKETS, sizeof *t->buckets);
	if (!t->buckets)
		return -1;
	t->nbuckets = INITIAL_BUCKETS;
	t->count = 0;
	return 0;
}

/*
** Doubles the bucket array. Failing to is harmless (chains just get longer),
** which is what lets link() and therefore rollback() never fail.
*/
static void table_grow(table *t, int bykey)
{
	size_t n = t->nbuckets * 2;
	entry **b = calloc(n, sizeof *b);
	if (!b)
		return;
	for (size_t i = 0; i < t->nbuckets; i++) {
		entry *e = t->buckets[i];
		while (e) {
			entry *next = *next_of(e, bykey);
			size_t j = (size_t)(hash_of(e, bykey) & (n - 1));
			*next_of(e, bykey) = b[j];
			b[j] = e;
			e = next;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
}

/* Adds e (its hash already set). Cannot fail. */
static void table_link(table *t, entry *e, int bykey)
{
	if (t->count >= t->nbuckets)
		table_grow(t, bykey);
	size_t i = (size_t)(hash_of(e, bykey) & (t->nbuckets - 1));
	*next_of(e, bykey) = t->buckets[i];
	t->buckets[i] = e;
	t->count++;
}

/* Removes e, which must be in t. */
static void table_unlink(table *t, entry *e, int bykey)
{
	entry **pp = &t->buckets[(size_t)(hash_of(e, bykey) & (t->nbuckets - 1))];
	while (*pp && *pp != e)
		pp = next_of(*pp, bykey);
	if (*pp) {
		*pp = *next_of(e, bykey);
		*next_of(e, bykey) = NULL;
		t->count--;
	}
}

static entry *find_id(mstore *s, const char *id)
{
	uint64_t h = hash_id(id);
	entry *e = s->ids.buckets[(size_t)(h & (s->ids.nbuckets - 1))];
	for (; e; e = e->id_next)
		if (e->id_hash == h && strcmp(e->rec.id, id) == 0)
			return e;
	return NULL;
}

static entry *find_seq(mstore *s, int64_t seq)
{
	entry *e = s->seqs.buckets[(size_t)(hash_seq(seq) & (s->seqs.nbuckets - 1))];
	for (; e; e = e->seq_next)
		if (e->rec.seq == seq)
			return e;
	return NULL;
}

static entry *find_key(mstore *s, const char *owner, const char *key)
{
	uint64_t h = hash_key(owner, key);
	entry *e = s->keys.buckets[(size_t)(h & (s->keys.nbuckets - 1))];
	for (; e; e = e->key_next)
		if (e->key_hash == h && same(e->rec.owner, owner) &&
		    strcmp(e->rec.key, key) == 0)
			return e;
	return NULL;
}

/* Links e into the keys table under its current (owner, key), if it has a key. */
static void key_link(mstore *s, entry *e)
{
	if (!e->rec.key)
		return;
	e->key_hash = hash_key(e->rec.owner, e->rec.key);
	table_link(&s->keys, e, 1);
}

static void key_unlink(mstore *s, entry *e)
{
	if (e->rec.key)
		table_unlink(&s->keys, e, 1);
}

/* ---- the ordered array ------------------------------------------------- */

static int cmp_order(const entry *a, const entry *b)
{
	if (a->rec.created_at != b->rec.created_at)
		return a->rec.created_at < b->rec.created_at ? -1 : 1;
	if (a->rec.seq != b->rec.seq)
		return a->rec.seq < b->rec.seq ? -1 : 1;
	return 0;
}

static int cmp_slots(const void *a, const void *b)
{
	return cmp_order(*(entry *const *)a, *(entry *const *)b);
}

/* Makes room for one more slot. Returns 0, or -1 when memory runs out. */
static int order_reserve(mstore *s)
{
	if (s->nslots < s->cap)
		return 0;
	size_t n = s->cap ? s->cap * 2 : INITIAL_SLOTS;
	entry **o = realloc(s->order, n * sizeof *o);
	if (!o)
		return -1;
	s->order = o;
	s->cap = n;
	return 0;
}

/*
** Appends e (room reserved). It extends the sorted prefix when the tail is
** empty and e sorts after the last record, the usual case.
*/
static void order_append(mstore *s, entry *e)
{
	int in_order = s->sorted == s->nslots &&
		(s->nslots == 0 ||
		 (s->order[s->nslots - 1] && cmp_order(s->order[s->nslots - 1], e) < 0));
	e->slot = s->nslots;
	s->order[s->nslots++] = e;
	s->live++;
	if (in_order)
		s->sorted = s->nslots;
}

/* Squeezes out the tombstones, keeping the order of what is left. */
static void order_compact(mstore *s)
{
	size_t j = 0, sorted = 0;
	for (size_t i = 0; i < s->nslots; i++) {
		entry *e = s->order[i];
		if (!e)
			continue;
		if (i < s->sorted)
			sorted++;
		e->slot = j;
		s->order[j++] = e;
	}
	s->nslots = j;
	s->sorted = sorted;
}

/*
** Compacts once more than half the slots are dead. Each compaction costs
** O(slots) and needs at least slots/2 removals since the last, so removal
** stays O(1) amortised. Never during a scan: it would move records under it.
*/
static void maybe_compact(mstore *s)
{
	if (!s->scanning && s->nslots - s->live > s->live)
		order_compact(s);
}

/*
** Drops trailing tombstones. Not during a scan: a descending one could then
** meet a record appended below its cursor a second time.
*/
static void order_trim(mstore *s)
{
	if (s->scanning)
		return;
	while (s->nslots > 0 && !s->order[s->nslots - 1])
		s->nslots--;
	if (s->sorted > s->nslots)
		s->sorted = s->nslots;
}

/* Leaves a tombstone where e was. */
static void order_remove(mstore *s, entry *e)
{
	if (e->slot == NO_SLOT)
		return;
	s->order[e->slot] = NULL;
	e->slot = NO_SLOT;
	s->live--;
	order_trim(s);
}

/*
** Brings order[] back to fully sorted before a scan reads it: sorts the tail
** and merges it into the prefix from the back, through a copy of the tail.
** If that copy cannot be had, sorting the whole array in place does the
** same job more slowly, so this cannot fail.
*/
static void order_normalize(mstore *s)
{
	if (s->sorted == s->nslots || s->scanning)
		return;
	order_compact(s);
	size_t p = s->sorted, k = s->nslots - p;
	qsort(s->order + p, k, sizeof *s->order, cmp_slots);
	entry **tail = p ? malloc(k * sizeof *tail) : NULL;
	if (p && tail) {
		memcpy(tail, s->order + p, k * sizeof *tail);
		size_t i = p, j = k, to = s->nslots;
		while (j > 0) {
			if (i > 0 && cmp_order(s->order[i - 1], tail[j - 1]) > 0)
				s->order[--to] = s->order[--i];
			else
				s->order[--to] = tail[--j];
		}
		free(tail);
	} else if (p) {
		qsort(s->order, s->nslots, sizeof *s->order, cmp_slots);
	}
	for (size_t i = 0; i < s->nslots; i++)
		s->order[i]->slot = i;
	s->sorted = s->nslots;
}

/*
** Refills order[] from the ids table. Used by rollback, which may put back
** records in any order. Cannot fail: cap never shrinks, so it still holds
** every record that was live at begin().
*/
static void order_rebuild(mstore *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->ids.nbuckets; i++)
		for (entry *e = s->ids.buckets[i]; e; e = e->id_next)
			s->order[n++] = e;
	for (size_t i = n; i < s->nslots; i++)
		s->order[i] = NULL;
	s->nslots = n;
	s->live = n;
	s->sorted = 0;
	for (size_t i = 0; i < n; i++)
		s->order[i]->slot = i;
	order_normalize(s);
}

/* ---- entries and the journal ------------------------------------------- */

/* Frees e and its doc, which must be unlinked (or the index going away). */
static void entry_free(entry *e)
{
	if (!e)
		return;
	a2m_mdoc_free(e->doc);
	a2m_record_clear(&e->rec);
	free(e);
}

/* Frees the terms no posting needs any more, once no undo can need them. */
static void index_settle(mstore *s)
{
	if (s->index && !s->in_tx)
		a2m_mindex_sweep(s->index);
}

/*
** Analyses content into a doc for record seq, ready to link (NULL *out
** without an index). Changes nothing a reader sees. Returns 0 or fails.
*/
static int index_prepare(mstore *s, const char *content, int64_t seq, a2m_mdoc **out)
{
	a2m_doc_terms dt;
	*out = NULL;
	if (!s->index)
		return 0;
	memset(&dt, 0, sizeof dt);
	int rc = s->ix->analyze(s->ix, content, &dt);
	if (rc == 0)
		rc = a2m_mindex_prepare(s->index, &dt, seq, out);
	s->ix->release(s->ix, &dt);
	return rc ? a2m_store_fail(&s->base, "index: out of memory") : 0;
}

/* Makes room for one more undo step, if a transaction is open. */
static int journal_reserve(mstore *s)
{
	if (!s->in_tx || s->njournal < s->jcap)
		return 0;
	size_t n = s->jcap ? s->jcap * 2 : 16;
	undo *j = realloc(s->journal, n * sizeof *j);
	if (!j)
		return -1;
	s->journal = j;
	s->jcap = n;
	return 0;
}

/* Records an undo step (room reserved). */
static void journal_push(mstore *s, undo_kind kind, entry *e, const a2m_record *old)
{
	undo *u = &s->journal[s->njournal++];
	memset(u, 0, sizeof *u);
	u->kind = kind;
	u->e = e;
	if (old)
		u->old = *old;
}

/*
** What a store refuses whatever the engine: sqlite.c's NOT NULL columns, and
** a NaN salience, which SQLite would store as NULL.
*/
static int check_record(mstore *s, const a2m_record *rec, const char *op)
{
	if (!rec || !rec->id || !rec->content) {
		a2m_store_fail(&s->base, "%s: a record needs an id and content", op);
		return A2M_INVALID_PARAMS;
	}
	if (isnan(rec->salience)) {
		a2m_store_fail(&s->base, "%s: salience is NaN", op);
		return A2M_INVALID_PARAMS;
	}
	return 0;
}

/*
** Deep-copies rec into dst. An embedding pointer without dims, or dims
** without a pointer, is stored as no embedding, as SQLite would store it.
*/
static int copy_in(mstore *s, a2m_record *dst, const a2m_record *rec)
{
	if (a2m_record_copy(dst, rec) != 0)
		return a2m_store_fail(&s->base, "out of memory");
	if (!dst->embedding)
		dst->dims = 0;
	return 0;
}

/* ---- transactions ------------------------------------------------------ */

static int mem_begin(a2m_store *base)
{
	mstore *s = (mstore *)base;
	if (s->in_tx)
		return a2m_store_fail(base, "begin: a transaction is already open");
	s->in_tx = 1;
	s->tx_next_seq = s->next_seq;
	s->njournal = 0;
	a2m_vindex_begin(s->vectors);
	return 0;
}

/* Ends the transaction, keeping its writes: frees what undo would have needed. */
static int mem_commit(a2m_store *base)
{
	mstore *s = (mstore *)base;
	if (!s->in_tx)
		return a2m_store_fail(base, "commit: no transaction is open");
	for (size_t i = 0; i < s->njournal; i++) {
		undo *u = &s->journal[i];
		if (u->kind == UNDO_REMOVE) {
			entry_free(u->e);
		} else if (u->kind == UNDO_UPDATE) {
			a2m_record_clear(&u->old);
			a2m_mdoc_free(u->old_doc);
		} else if (u->kind == UNDO_META) {
			free(u->old_value);
		}
	}
	s->njournal = 0;
	s->in_tx = 0;
	a2m_vindex_commit(s->vectors);
	maybe_compact(s);
	index_settle(s);
	a2m_mcounts_settle(s->counts);
	return 0;
}

/*
** Replays the journal backwards. Nothing here allocates (links cannot fail,
** order_rebuild reuses the array), so rollback always restores exactly the
** state at begin(), next seq included, as SQLite does for AUTOINCREMENT.
*/
static void mem_rollback(a2m_store *base)
{
	mstore *s = (mstore *)base;
	int rebuild = 0;
	if (!s->in_tx)
		return;
	for (size_t i = s->njournal; i-- > 0;) {
		undo *u = &s->journal[i];
		entry *e = u->e;
		switch (u->kind) {
		case UNDO_INSERT:
			a2m_mcounts_unlink(s->counts, e->rec.tier, e->rec.session, &e->link, 1);
			table_unlink(&s->ids, e, BY_ID);
			table_unlink(&s->seqs, e, BY_SEQ);
			key_unlink(s, e);
			order_remove(s, e);
			if (e->doc)
				a2m_mindex_unlink(s->index, e->doc);
			entry_free(e);
			break;
		case UNDO_UPDATE:
			key_unlink(s, e);
			if (e->rec.created_at != u->old.created_at)
				rebuild = 1;
			a2m_mcounts_move(s->counts, e->rec.tier, e->rec.session, u->old.tier,
					 u->old.session, &e->link, 1);
			a2m_record_clear(&e->rec);
			e->rec = u->old;
			key_link(s, e);
			if (u->old_doc) {
				if (e->doc)
					a2m_mindex_unlink(s->index, e->doc);
				a2m_mdoc_free(e->doc);
				e->doc = u->old_doc;
				a2m_mindex_link(s->index, e->doc);
			}
			break;
		case UNDO_REMOVE:
			a2m_mcounts_link(s->counts, e->rec.tier, e->rec.session, &e->link);
			table_link(&s->ids, e, BY_ID);
			table_link(&s->seqs, e, BY_SEQ);
			key_link(s, e);
			if (e->doc)
				a2m_mindex_link(s->index, e->doc);
			e->slot = NO_SLOT; /* placed by order_rebuild below */
			rebuild = 1;
			break;
		case UNDO_TOUCH:
			e->rec.access_count = u->old.access_count;
			e->rec.accessed_at = u->old.accessed_at;
			break;
		case UNDO_META:
			free(s->metas[u->meta].value);
			s->metas[u->meta].value = u->old_value;
			break;
		}
	}
	s->njournal = 0;
	s->in_tx = 0;
	a2m_vindex_rollback(s->vectors);
	s->next_seq = s->tx_next_seq;
	if (rebuild)
		order_rebuild(s);
	else
		maybe_compact(s);
	index_settle(s);
	a2m_mcounts_settle(s->counts);
}

/* ---- reads ------------------------------------------------------------- */

/* Hands out a deep copy of e's record (or NULL for no entry). */
static int copy_out(mstore *s, const entry *e, a2m_record **out)
{
	*out = NULL;
	if (!e)
		return 0;
	*out = a2m_record_dup(&e->rec);
	if (!*out)
		return a2m_store_fail(&s->base, "out of memory");
	return 0;
}

static int mem_get(a2m_store *base, const char *id, a2m_record **out)
{
	mstore *s = (mstore *)base;
	*out = NULL;
	if (!id)
		return 0;
	return copy_out(s, find_id(s, id), out);
}

static int mem_get_by_key(a2m_store *base, const char *owner, const char *key,
			  a2m_record **out)
{
	mstore *s = (mstore *)base;
	*out = NULL;
	if (!key)
		return 0;
	return copy_out(s, find_key(s, owner, key), out);
}

/*
** Visits matches in (created_at, seq) order, either way round. order[] is
** re-read every step because a callback's insert may reallocate it; slots
** below the starting count keep their meaning (see the header).
*/
static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return (x > y) - (x < y);
}

/*
** When q selects by tier and/or session and that group is small next to the
** store, sets *slots (free with free(); NULL when the group is empty) to
** its members' slots in scan order and returns 1. Returns 0 when a pass
** over every record is the better scan, or memory runs out. order[] must be
** normalized, so that slot order is (created_at, seq) order.
*/
static int group_slots(mstore *s, const a2m_query *q, size_t **slots, size_t *n)
{
	size_t k;
	*slots = NULL;
	*n = 0;
	if (!q->tier && !q->by_session)
		return 0;
	a2m_mlink *const *m = a2m_mcounts_members(s->counts, q->tier != NULL, q->tier,
						  q->by_session, q->session, &k);
	/* Sorting k slots beats testing every record while k log k is small. */
	if (k > s->live / 8)
		return 0;
	if (k == 0)
		return 1;
	size_t *v = malloc(k * sizeof *v);
	if (!v)
		return 0;
	for (size_t i = 0; i < k; i++)
		v[i] = ((const entry *)((const char *)m[i] - offsetof(entry, link)))->slot;
	qsort(v, k, sizeof *v, cmp_size);
	*slots = v;
	*n = k;
	return 1;
}

/*
** Visits the records at slots[0..n) in scan order. A slot emptied or a
** record changed by a visit is skipped: slots keep their meaning while a
** scan runs (see the header), so nothing is visited twice.
*/
static int scan_slots(mstore *s, const a2m_query *q, const size_t *slots, size_t n,
		      a2m_record_visit visit, void *ctx)
{
	for (size_t j = 0; j < n; j++) {
		entry *e = s->order[slots[q->descending ? n - 1 - j : j]];
		if (!e || !a2m_query_matches(q, &e->rec))
			continue;
		int r = visit(&e->rec, ctx);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	return 0;
}

static int mem_scan(a2m_store *base, const a2m_query *q, a2m_record_visit visit,
		    void *ctx)
{
	mstore *s = (mstore *)base;
	int rc = 0;
	size_t *slots, nslots;

	order_normalize(s);
	int grouped = group_slots(s, q, &slots, &nslots);
	s->scanning++;
	if (grouped) {
		rc = scan_slots(s, q, slots, nslots, visit, ctx);
		free(slots);
	} else if (!q->descending) {
		size_t end = s->nslots;
		for (size_t i = 0; i < end && i < s->nslots; i++) {
			entry *e = s->order[i];
			if (!e || !a2m_query_matches(q, &e->rec))
				continue;
			int r = visit(&e->rec, ctx);
			if (r != 0) {
				rc = r < 0 ? r : 0;
				break;
			}
		}
	} else {
		for (size_t i = s->nslots; i-- > 0;) {
			entry *e = s->order[i];
			if (!e || !a2m_query_matches(q, &e->rec))
				continue;
			int r = visit(&e->rec, ctx);
			if (r != 0) {
				rc = r < 0 ? r : 0;
				break;
			}
		}
	}
	s->scanning--;
	order_trim(s);
	maybe_compact(s);
	return rc;
}

static int mem_count(a2m_store *base, const a2m_query *q, int64_t *out)
{
	mstore *s = (mstore *)base;
	int64_t n = 0;
	if (!q->tier && !q->by_owner && !q->by_session && !q->key_prefix && !q->group) {
		*out = (int64_t)s->live;
		return 0;
	}
	/* By tier, session or both: the group's size (memory_counts.c). */
	if (!q->by_owner && !q->key_prefix && !q->group) {
		size_t n_members;
		a2m_mcounts_members(s->counts, q->tier != NULL, q->tier, q->by_session,
				    q->session, &n_members);
		*out = (int64_t)n_members;
		return 0;
	}
	for (size_t i = 0; i < s->nslots; i++) {
		entry *e = s->order[i];
		if (e && a2m_query_matches(q, &e->rec))
			n++;
	}
	*out = n;
	return 0;
}

/* ---- writes ------------------------------------------------------------ */

static int mem_insert(a2m_store *base, a2m_record *rec)
{
	mstore *s = (mstore *)base;
	int rc = check_record(s, rec, "insert");
	if (rc)
		return rc;
	if (find_id(s, rec->id)) {
		a2m_store_fail(base, "insert: id \"%s\" already exists", rec->id);
		return A2M_INVALID_PARAMS;
	}
	if (rec->key && find_key(s, rec->owner, rec->key)) {
		a2m_store_fail(base, "insert: key \"%s\" is already in use for this owner",
			       rec->key);
		return A2M_INVALID_PARAMS;
	}
	/* Everything that can fail happens before the store changes. */
	if (journal_reserve(s) != 0 || order_reserve(s) != 0 ||
	    a2m_mcounts_reserve(s->counts, rec->tier, rec->session) != 0)
		return a2m_store_fail(base, "out of memory");
	entry *e = calloc(1, sizeof *e);
	if (!e)
		return a2m_store_fail(base, "out of memory");
	rc = copy_in(s, &e->rec, rec);
	if (!rc)
		rc = index_prepare(s, rec->content, s->next_seq, &e->doc);
	if (rc) {
		entry_free(e);
		index_settle(s);
		return rc;
	}

	e->rec.seq = s->next_seq++;
	rec->seq = e->rec.seq;
	e->id_hash = hash_id(e->rec.id);
	table_link(&s->ids, e, BY_ID);
	table_link(&s->seqs, e, BY_SEQ);
	key_link(s, e);
	order_append(s, e);
	a2m_mcounts_link(s->counts, e->rec.tier, e->rec.session, &e->link);
	if (e->doc)
		a2m_mindex_link(s->index, e->doc);
	if (s->in_tx)
		journal_push(s, UNDO_INSERT, e, NULL);
	a2m_vindex_put(s->vectors, &e->rec);
	return 0;
}

static int mem_update(a2m_store *base, const a2m_record *rec)
{
	mstore *s = (mstore *)base;
	a2m_record fresh;
	int rc = check_record(s, rec, "update");
	if (rc)
		return rc;
	entry *e = find_id(s, rec->id);
	if (!e) {
		a2m_store_fail(base, "update: no record \"%s\"", rec->id);
		return A2M_UNKNOWN_RECORD;
	}
	if (rec->key) {
		entry *other = find_key(s, rec->owner, rec->key);
		if (other && other != e) {
			a2m_store_fail(base, "update: key \"%s\" is already in use for this owner",
				       rec->key);
			return A2M_INVALID_PARAMS;
		}
	}
	int moves = rec->created_at != e->rec.created_at;
	int recount = !same(rec->tier, e->rec.tier) || !same(rec->session, e->rec.session);
	if (journal_reserve(s) != 0 || (moves && order_reserve(s) != 0) ||
	    (recount && a2m_mcounts_reserve(s->counts, rec->tier, rec->session) != 0))
		return a2m_store_fail(base, "out of memory");
	rc = copy_in(s, &fresh, rec);
	if (rc)
		return rc;
	/* Only a change of content re-indexes: touches and tier moves do not. */
	a2m_mdoc *doc = NULL;
	int reindex = s->index && strcmp(rec->content, e->rec.content) != 0;
	if (reindex && (rc = index_prepare(s, rec->content, e->rec.seq, &doc)) != 0) {
		a2m_record_clear(&fresh);
		index_settle(s);
		return rc;
	}

	/*
	** Swap the contents in place: the entry keeps its address, slot and id
	** chain, and the old contents go to the journal instead of being copied.
	*/
	fresh.seq = e->rec.seq;
	a2m_record old = e->rec;
	key_unlink(s, e);
	e->rec = fresh;
	key_link(s, e);
	if (recount)
		a2m_mcounts_move(s->counts, old.tier, old.session, e->rec.tier, e->rec.session,
				 &e->link, s->in_tx);
	if (moves) {
		/* Out of its place: to the tail, for the next scan to merge in. */
		order_remove(s, e);
		order_append(s, e);
		maybe_compact(s);
	}
	a2m_mdoc *old_doc = NULL;
	if (reindex) {
		if (e->doc)
			a2m_mindex_unlink(s->index, e->doc);
		old_doc = e->doc;
		e->doc = doc;
		a2m_mindex_link(s->index, doc);
	}
	if (a2m_vindex_differs(&old, &e->rec))
		a2m_vindex_put(s->vectors, &e->rec);
	if (s->in_tx) {
		journal_push(s, UNDO_UPDATE, e, &old);
		s->journal[s->njournal - 1].old_doc = old_doc;
	} else {
		a2m_record_clear(&old);
		a2m_mdoc_free(old_doc);
		index_settle(s);
	}
	return 0;
}

static int mem_remove(a2m_store *base, const char *id, int *removed)
{
	mstore *s = (mstore *)base;
	*removed = 0;
	entry *e = id ? find_id(s, id) : NULL;
	if (!e)
		return 0;
	if (journal_reserve(s) != 0)
		return a2m_store_fail(base, "out of memory");

	table_unlink(&s->ids, e, BY_ID);
	table_unlink(&s->seqs, e, BY_SEQ);
	key_unlink(s, e);
	order_remove(s, e);
	maybe_compact(s);
	a2m_mcounts_unlink(s->counts, e->rec.tier, e->rec.session, &e->link, s->in_tx);
	if (e->doc)
		a2m_mindex_unlink(s->index, e->doc);
	a2m_vindex_remove(s->vectors, e->rec.seq);
	if (s->in_tx) {
		journal_push(s, UNDO_REMOVE, e, NULL);
	} else {
		entry_free(e);
		index_settle(s);
	}
	*removed = 1;
	return 0;
}

/* ---- store-level settings --------------------------------------------- */

/* The slot named name, or NULL. Deleted settings keep their slot. */
static meta *find_meta(mstore *s, const char *name)
{
	for (size_t i = 0; i < s->nmetas; i++)
		if (strcmp(s->metas[i].name, name) == 0)
			return &s->metas[i];
	return NULL;
}

static int mem_meta_get(a2m_store *base, const char *name, char **value)
{
	mstore *s = (mstore *)base;
	*value = NULL;
	if (!name) {
		a2m_store_fail(base, "meta_get: no name");
		return A2M_INVALID_PARAMS;
	}
	meta *m = find_meta(s, name);
	if (!m || !m->value)
		return 0;
	*value = strdup(m->value);
	if (!*value)
		return a2m_store_fail(base, "meta_get: out of memory");
	return 0;
}

/*
** Everything that can fail (the copy, a new slot, journal room) happens
** before the setting changes; the journal then owns the value replaced.
*/
static int mem_meta_set(a2m_store *base, const char *name, const char *value)
{
	mstore *s = (mstore *)base;
	char *copy = NULL;
	if (!name) {
		a2m_store_fail(base, "meta_set: no name");
		return A2M_INVALID_PARAMS;
	}
	meta *m = find_meta(s, name);
	if (!m && !value)
		return 0;
	if (journal_reserve(s) != 0)
		return a2m_store_fail(base, "meta_set: out of memory");
	if (value && !(copy = strdup(value)))
		return a2m_store_fail(base, "meta_set: out of memory");
	if (!m) {
		if (s->nmetas == s->mcap) {
			size_t n = s->mcap ? s->mcap * 2 : 8;
			meta *p = realloc(s->metas, n * sizeof *p);
			if (!p) {
				free(copy);
				return a2m_store_fail(base, "meta_set: out of memory");
			}
			s->metas = p;
			s->mcap = n;
		}
		char *nm = strdup(name);
		if (!nm) {
			free(copy);
			return a2m_store_fail(base, "meta_set: out of memory");
		}
		m = &s->metas[s->nmetas++];
		m->name = nm;
		m->value = NULL;
	}
	char *old = m->value;
	m->value = copy;
	if (s->in_tx) {
		journal_push(s, UNDO_META, NULL, NULL);
		s->journal[s->njournal - 1].meta = (size_t)(m - s->metas);
		s->journal[s->njournal - 1].old_value = old;
	} else {
		free(old);
	}
	return 0;
}

/* ---- open and close ---------------------------------------------------- */

/*
** Frees the store. An open transaction is rolled back first, as sqlite.c
** does: nothing uncommitted may look as if it had been kept.
*/
static void mem_close(a2m_store *base)
{
	mstore *s = (mstore *)base;
	if (!s)
		return;
	mem_rollback(base);
	for (size_t i = 0; s->ids.buckets && i < s->ids.nbuckets; i++) {
		entry *e = s->ids.buckets[i];
		while (e) {
			entry *next = e->id_next;
			entry_free(e);
			e = next;
		}
	}
	free(s->ids.buckets);
	free(s->keys.buckets);
	free(s->seqs.buckets);
	a2m_mindex_free(s->index);
	a2m_vindex_free(s->vectors);
	a2m_mcounts_free(s->counts);
	free(s->order);
	free(s->journal);
	for (size_t i = 0; i < s->nmetas; i++) {
		free(s->metas[i].name);
		free(s->metas[i].value);
	}
	free(s->metas);
	free(s);
}

/* ---- by seq, and the term index --------------------------------------- */

static int mem_visit_seqs(a2m_store *base, const int64_t *seqs, size_t n,
			  a2m_record_visit visit, void *ctx)
{
	mstore *s = (mstore *)base;
	for (size_t i = 0; i < n; i++) {
		entry *e = find_seq(s, seqs[i]);
		if (!e)
			continue;
		int r = visit(&e->rec, ctx);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	return 0;
}

/* In place: a touch changes two numbers, nothing any table is keyed on. */
static int mem_touch(a2m_store *base, int64_t seq, int64_t add, int64_t at)
{
	mstore *s = (mstore *)base;
	entry *e = find_seq(s, seq);
	if (!e)
		return 0;
	if (journal_reserve(s) != 0)
		return a2m_store_fail(base, "out of memory");
	if (s->in_tx) {
		a2m_record old = {.access_count = e->rec.access_count,
				  .accessed_at = e->rec.accessed_at};
		journal_push(s, UNDO_TOUCH, e, &old);
	}
	e->rec.access_count += add;
	if (at > e->rec.accessed_at)
		e->rec.accessed_at = at;
	return 0;
}

/*
** Indexes every record with ix. A memory store starts empty, so this is
** usually instant; should it hold records, a failure half way unlinks what
** was done and leaves the store without an index.
*/
static int mem_index_attach(a2m_store *base, a2m_indexer *ix)
{
	mstore *s = (mstore *)base;
	if (s->in_tx)
		return a2m_store_fail(base, "index_attach: a transaction is open");
	if (s->index) {
		for (size_t i = 0; i < s->ids.nbuckets; i++)
			for (entry *e = s->ids.buckets[i]; e; e = e->id_next) {
				a2m_mdoc_free(e->doc);
				e->doc = NULL;
			}
		a2m_mindex_free(s->index);
		s->index = NULL;
	}
	if (!(s->index = a2m_mindex_new()))
		return a2m_store_fail(base, "index_attach: out of memory");
	s->ix = ix;
	int rc = 0;
	for (size_t i = 0; i < s->ids.nbuckets && !rc; i++)
		for (entry *e = s->ids.buckets[i]; e && !rc; e = e->id_next)
			if ((rc = index_prepare(s, e->rec.content, e->rec.seq, &e->doc)) == 0)
				a2m_mindex_link(s->index, e->doc);
	if (rc) {
		for (size_t i = 0; i < s->ids.nbuckets; i++)
			for (entry *e = s->ids.buckets[i]; e; e = e->id_next) {
				a2m_mdoc_free(e->doc);
				e->doc = NULL;
			}
		a2m_mindex_free(s->index);
		s->index = NULL;
		s->ix = NULL;
		return rc;
	}
	a2m_mindex_sweep(s->index);
	return 0;
}

static int mem_index_stats(a2m_store *base, a2m_index_stats *out)
{
	mstore *s = (mstore *)base;
	memset(out, 0, sizeof *out);
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	a2m_mindex_stats(s->index, out);
	return 0;
}

static int mem_index_postings(a2m_store *base, const char *term, size_t len,
			      a2m_posting_visit visit, void *ctx)
{
	mstore *s = (mstore *)base;
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	return a2m_mindex_postings(s->index, term, len, visit, ctx);
}

/*
** The vector rows follow every write; should one have been lost (memory ran
** out), they are rebuilt here from the records, outside a transaction.
*/
static int mem_vector_search(a2m_store *base, const a2m_vector_search *q, a2m_candidates *out)
{
	mstore *s = (mstore *)base;
	if (!a2m_vindex_valid(s->vectors) && !s->in_tx) {
		a2m_vindex_clear(s->vectors);
		for (size_t i = 0; i < s->ids.nbuckets; i++)
			for (entry *e = s->ids.buckets[i]; e; e = e->id_next)
				a2m_vindex_put(s->vectors, &e->rec);
	}
	int rc = a2m_vindex_search(s->vectors, q, out);
	return rc == A2M_INTERNAL_ERROR ? a2m_store_fail(base, "vector search: out of memory") : rc;
}

static const a2m_store_ops memory_ops = {
	.engine     = "memory",
	.begin      = mem_begin,
	.begin_relaxed = mem_begin,   /* nothing is durable here anyway */
	.commit     = mem_commit,
	.rollback   = mem_rollback,
	.get        = mem_get,
	.get_by_key = mem_get_by_key,
	.insert     = mem_insert,
	.update     = mem_update,
	.remove     = mem_remove,
	.scan       = mem_scan,
	.count      = mem_count,
	.meta_get   = mem_meta_get,
	.meta_set   = mem_meta_set,
	.close      = mem_close,
	.visit_seqs = mem_visit_seqs,
	.touch      = mem_touch,
	.index_attach   = mem_index_attach,
	.index_stats    = mem_index_stats,
	.index_postings = mem_index_postings,
	.vector_search  = mem_vector_search,
};

int a2m_store_memory_open(a2m_store **out, char *err, size_t errlen)
{
	*out = NULL;
	mstore *s = calloc(1, sizeof *s);
	if (!s)
		goto fail;
	s->base.ops = &memory_ops;
	s->next_seq = 1;
	if (table_init(&s->ids) != 0 || table_init(&s->keys) != 0 || table_init(&s->seqs) != 0 ||
	    !(s->counts = a2m_mcounts_new()))
		goto fail;
	if (!(s->vectors = a2m_vindex_new()))
		goto fail;
	*out = &s->base;
	return 0;

fail:
	if (s)
		mem_close(&s->base);
	if (err && errlen)
		snprintf(err, errlen, "memory store: out of memory");
	return A2M_INTERNAL_ERROR;
}
