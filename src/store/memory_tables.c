/*
** memory_tables.c — how the in-memory engine finds its records: the hash
** tables by id and by seq (probed) and by (owner, key) and fingerprint
** (chained), and order[], the records in
** (created_at, seq) scan order with its tombstones and unsorted tail
** (memory.c's opening comment describes both).
**
** Apart from memory.c because these are plain data structures: they know
** entries and the store's arrays, but nothing of records' meaning, of
** transactions or of the store's ops.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/memory_internal.h"
#include "util/hash.h"

/* Tables start with this many buckets (a power of two) and double at load 1. */
#define INITIAL_BUCKETS 64
#define INITIAL_SLOTS   64

/* ---- hashing ----------------------------------------------------------- */

uint64_t a2m_mem_hash_id(const char *id)
{
	return a2m_hash_str(id);
}

/*
** Hashes (owner, key). A leading tag byte says whether there is an owner, and
** the owner's NUL terminator separates it from the key, so NULL, "" and every
** other owner feed different byte strings.
*/
static uint64_t hash_key(const char *owner, const char *key)
{
	unsigned char tag = owner ? 1 : 0;
	uint64_t h = a2m_hash_bytes(&tag, 1);
	if (owner)
		h = a2m_hash_more(h, owner, strlen(owner) + 1);
	return a2m_hash_more(h, key, strlen(key));
}

/* ---- the hash tables ---------------------------------------------------- */

static uint64_t hash_seq(int64_t seq)
{
	return (uint64_t)seq * 0x9E3779B97F4A7C15ULL;
}

/*
** The chained tables (keys and fingerprints) share this code; `bykey`
** (BY_KEY, BY_FP) selects which chain link and which hash an entry uses. A
** fingerprint is a hash already; multiplying spreads its low bits, which
** pick the bucket.
*/
static entry **next_of(entry *e, int bykey)
{
	if (bykey == BY_KEY)
		return &a2m_mem_opt(e, OPT_KEY)[1].e;
	return &e->tail[1].e;  /* BY_FP: OPT_FP's slots come first */
}

/* The key's hash, kept in the third of OPT_KEY's slots (low 32 bits). */
static uint32_t *key_hash_of(entry *e)
{
	return &a2m_mem_opt(e, OPT_KEY)[2].u32;
}

static uint64_t hash_of(entry *e, int bykey)
{
	switch (bykey) {
	case BY_SEQ: return hash_seq(e->seq);
	case BY_KEY: return *key_hash_of(e);
	case BY_FP:  return hash_seq((int64_t)a2m_mem_fingerprint(e));
	default:     return e->id_hash;
	}
}

/* ---- the probed tables (ids and seqs) ------------------------------------ */

/*
** Open addressing with linear probing over an array of entry pointers, a
** power of two at most 3/4 full, and removal by moving later members of
** the cluster back (no tombstones, so lookups never slow down with
** churn). An entry carries no link for them: 16 bytes of every header.
*/
#define PROBE_INITIAL 64

static int over_load(size_t count, size_t cap)
{
	return count * 4 > cap * 3;
}

int a2m_mem_ptable_init(ptable *t)
{
	t->slots = calloc(PROBE_INITIAL, sizeof *t->slots);
	if (!t->slots)
		return -1;
	t->cap = PROBE_INITIAL;
	t->count = 0;
	return 0;
}

/* The first free slot on entry e's probe path. */
static size_t probe_free(const ptable *t, entry *e, int byseq)
{
	size_t mask = t->cap - 1, i = (size_t)hash_of(e, byseq ? BY_SEQ : BY_ID) & mask;
	while (t->slots[i])
		i = (i + 1) & mask;
	return i;
}

/* Where e sits in t, or t->cap when it is not there. */
static size_t probe_find(const ptable *t, entry *e, int byseq)
{
	size_t mask = t->cap - 1, i = (size_t)hash_of(e, byseq ? BY_SEQ : BY_ID) & mask;
	for (; t->slots[i]; i = (i + 1) & mask)
		if (t->slots[i] == e)
			return i;
	return t->cap;
}

int a2m_mem_ptable_reserve(ptable *t, int byseq)
{
	if (!over_load(t->count + 1, t->cap))
		return 0;
	size_t cap = t->cap * 2;
	entry **v = calloc(cap, sizeof *v), **old = t->slots;
	if (!v)
		return -1;
	size_t old_cap = t->cap;
	t->slots = v;
	t->cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i])
			v[probe_free(t, old[i], byseq)] = old[i];
	free(old);
	return 0;
}

void a2m_mem_ptable_link(ptable *t, entry *e, int byseq)
{
	if (t->count + 1 >= t->cap)
		return; /* not reserved: a caller bug, but never an endless probe */
	t->slots[probe_free(t, e, byseq)] = e;
	t->count++;
}

void a2m_mem_ptable_unlink(ptable *t, entry *e, int byseq)
{
	size_t mask = t->cap - 1, i = probe_find(t, e, byseq);
	if (i == t->cap)
		return;
	/* Moves back each later member of the cluster whose home lies at or
	** before the hole (cyclically), so every probe path stays unbroken. */
	for (size_t j = (i + 1) & mask; t->slots[j]; j = (j + 1) & mask) {
		size_t home = (size_t)hash_of(t->slots[j], byseq ? BY_SEQ : BY_ID) & mask;
		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i] = NULL;
	t->count--;
}

void a2m_mem_ptable_replace(ptable *t, entry *e, entry *n, int byseq)
{
	size_t i = probe_find(t, e, byseq);
	if (i < t->cap)
		t->slots[i] = n;
}

int a2m_mem_table_init(table *t)
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
void a2m_mem_table_link(table *t, entry *e, int bykey)
{
	if (t->count >= t->nbuckets)
		table_grow(t, bykey);
	size_t i = (size_t)(hash_of(e, bykey) & (t->nbuckets - 1));
	*next_of(e, bykey) = t->buckets[i];
	t->buckets[i] = e;
	t->count++;
}

/* Removes e, which must be in t. */
void a2m_mem_table_unlink(table *t, entry *e, int bykey)
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

entry *a2m_mem_find_id(mstore *s, const char *id)
{
	uint32_t h = (uint32_t)a2m_mem_hash_id(id);
	size_t mask = s->ids.cap - 1;
	for (size_t i = h & mask; s->ids.slots[i]; i = (i + 1) & mask) {
		entry *e = s->ids.slots[i];
		if (e->id_hash == h && strcmp(a2m_mem_id(e), id) == 0)
			return e;
	}
	return NULL;
}

entry *a2m_mem_find_seq(mstore *s, int64_t seq)
{
	size_t mask = s->seqs.cap - 1;
	for (size_t i = (size_t)hash_seq(seq) & mask; s->seqs.slots[i]; i = (i + 1) & mask)
		if (s->seqs.slots[i]->seq == seq)
			return s->seqs.slots[i];
	return NULL;
}

entry *a2m_mem_find_key(mstore *s, const char *owner, const char *key)
{
	uint64_t h = hash_key(owner, key);
	entry *e = s->keys.buckets[(size_t)(h & (s->keys.nbuckets - 1))];
	for (; e; e = *next_of(e, BY_KEY))
		if (*key_hash_of(e) == (uint32_t)h && a2m_str_same(a2m_mem_owner(e), owner) &&
		    strcmp(a2m_mem_key(e), key) == 0)
			return e;
	return NULL;
}

entry *a2m_mem_fp_chain(mstore *s, uint64_t fp)
{
	return s->fps.buckets[(size_t)(hash_seq((int64_t)fp) & (s->fps.nbuckets - 1))];
}

/* Links e into the keys table under its current (owner, key), if it has a
** key, and into the fingerprints table, if it has one. */
void a2m_mem_key_link(mstore *s, entry *e)
{
	if (e->has & (1u << OPT_FP))
		a2m_mem_table_link(&s->fps, e, BY_FP);
	if (!(e->has & (1u << OPT_KEY)))
		return;
	*key_hash_of(e) = (uint32_t)hash_key(a2m_mem_owner(e), a2m_mem_key(e));
	a2m_mem_table_link(&s->keys, e, BY_KEY);
}

void a2m_mem_key_unlink(mstore *s, entry *e)
{
	if (e->has & (1u << OPT_FP))
		a2m_mem_table_unlink(&s->fps, e, BY_FP);
	if (e->has & (1u << OPT_KEY))
		a2m_mem_table_unlink(&s->keys, e, BY_KEY);
}

/* ---- the ordered array ------------------------------------------------- */

static int cmp_order(const entry *a, const entry *b)
{
	if (a->created_at != b->created_at)
		return a->created_at < b->created_at ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return 0;
}

static int cmp_slots(const void *a, const void *b)
{
	return cmp_order(*(entry *const *)a, *(entry *const *)b);
}

/*
** Makes room for one more slot. Returns 0, or -1 when memory runs out or
** order[] reaches NO_SLOT slots (an entry keeps its slot in 32 bits).
*/
int a2m_mem_order_reserve(mstore *s)
{
	if (s->nslots < s->cap)
		return 0;
	if (s->cap >= NO_SLOT)
		return -1;
	size_t n = s->cap ? s->cap * 2 : INITIAL_SLOTS;
	if (n > NO_SLOT)
		n = NO_SLOT;
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
void a2m_mem_order_append(mstore *s, entry *e)
{
	int in_order = s->sorted == s->nslots &&
		(s->nslots == 0 ||
		 (s->order[s->nslots - 1] && cmp_order(s->order[s->nslots - 1], e) < 0));
	e->slot = (uint32_t)s->nslots;
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
		e->slot = (uint32_t)j;
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
void a2m_mem_maybe_compact(mstore *s)
{
	if (!s->scanning && s->nslots - s->live > s->live)
		order_compact(s);
}

/*
** Drops trailing tombstones. Not during a scan: a descending one could then
** meet a record appended below its cursor a second time.
*/
void a2m_mem_order_trim(mstore *s)
{
	if (s->scanning)
		return;
	while (s->nslots > 0 && !s->order[s->nslots - 1])
		s->nslots--;
	if (s->sorted > s->nslots)
		s->sorted = s->nslots;
}

/* Leaves a tombstone where e was. */
void a2m_mem_order_remove(mstore *s, entry *e)
{
	if (e->slot == NO_SLOT)
		return;
	s->order[e->slot] = NULL;
	e->slot = NO_SLOT;
	s->live--;
	a2m_mem_order_trim(s);
}

/*
** Brings order[] back to fully sorted before a scan reads it: sorts the tail
** and merges it into the prefix from the back, through a copy of the tail.
** If that copy cannot be had, sorting the whole array in place does the
** same job more slowly, so this cannot fail.
*/
void a2m_mem_order_normalize(mstore *s)
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
		s->order[i]->slot = (uint32_t)i;
	s->sorted = s->nslots;
}

/*
** Refills order[] from the ids table. Used by rollback, which may put back
** records in any order. Cannot fail: cap never shrinks, so it still holds
** every record that was live at begin().
*/
void a2m_mem_order_rebuild(mstore *s)
{
	size_t n = 0;
	A2M_MEM_EACH(s, e)
		s->order[n++] = e;
	for (size_t i = n; i < s->nslots; i++)
		s->order[i] = NULL;
	s->nslots = n;
	s->live = n;
	s->sorted = 0;
	for (size_t i = 0; i < n; i++)
		s->order[i]->slot = (uint32_t)i;
	a2m_mem_order_normalize(s);
}
