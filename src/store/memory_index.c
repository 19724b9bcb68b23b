/*
** memory_index.c — the in-memory engine's term index (see memory_index.h).
**
**   terms     chained hash table text -> term (FNV-1a); it doubles when it
**             reaches load 1, and failing to is harmless (longer chains).
**   term      its postings: an array of (seq, tf, length) in ascending seq,
**             everything BM25 reads, so scoring a term is one sequential
**             pass over memory; and their bounds (store.h a2m_tf_bound), the
**             list's and, once it outgrows a block, each block's of
**             A2M_POSTINGS_BLOCK, so that block-max pruning (rank/blockmax.c)
**             neither bounds nor reads the blocks it skips.
**             The order is kept by every write, so every list is always lent
**             with its bounds: a posting is found by binary search on its
**             seq, a new record's is appended (seqs only grow), and a
**             removal or a record linked again at its old seq (an update
**             that keeps the seq, an undo) shifts the tail by one with
**             memmove. A shift carries one posting across each block
**             boundary it passes, and the block it enters is widened by it
**             (a bound stays a bound, never too tight; the one that left
**             makes it looser, never wrong). Those widenings are counted,
**             and once they reach a quarter of the list the bounds are
**             rebuilt exact, so they stay tight for an amortised O(1) per
**             shifted posting, the same order as the memmove itself.
**             Why not tombstones: the seam lends (seq, tf, dl) arrays whose
**             length is the term's df (bm25.c's idf), and a dead posting in
**             them would change every score; the memmove of a 1M-record
**             store's most common term is measured in docs/RANKING.md §5.
**   packed    a short list instead: fewer postings than the records with
**             terms / PACK_SHARE, coded in bytes (memory_packed.h, 2-4 bytes
**             a posting against 16 plain) with only the list's bound. It is
**             not lent: lend and view say so and the caller copies it
**             through a2m_mindex_postings, which decodes it. At 1M short
**             records such lists hold about half the postings, and a
**             recall reads few of them, each short; the long lists, where
**             block-max skips most of what it would decode, stay plain. A
**             list changes form only in sweep(), when no undo can need the
**             room it had (both forms put a removed posting back into the
**             room it left, which a change of form would not keep); a write
**             that moves a list across the line marks it dirty for that.
**   doc       seq, length, and for each of its terms the term and its tf.
**             Two arrays after the header, the terms then the tfs, so a
**             term costs the doc 12 bytes, not the 16 of a padded struct.
**             memory.c keeps docs only while a write or its undo needs
**             them, and describes a record's postings again from its text
**             (a2m_mindex_describe) to unlink them.
**   dirty     terms whose postings ran out, to be freed by sweep(), or
**             whose list is to change form there; linked through the terms
**             themselves so that noting one never allocates.
*/
#include <stdlib.h>
#include <string.h>

#include "store/memory_index.h"
#include "store/memory_packed.h"
#include "util/hash.h"

#define INITIAL_BUCKETS 256

/*
** A list of fewer postings than the index's docs / PACK_SHARE is kept
** packed (memory_packed.h), one of as many or more plain; a list becomes
** packed only below half that, and never one of PACK_MAX postings or more
** (a change in the middle of a packed list walks it). The two thresholds
** apart keep a list near the line from going back and forth.
*/
#define PACK_SHARE 256
#define PACK_MAX   16384

typedef struct mterm mterm;

/* (seq, tf, length): store.h's a2m_posting, so a view needs no copy. */
typedef a2m_posting mposting;

struct mterm {
	mterm    *next;        /* hash chain */
	mterm    *dirty_next;  /* on the dirty list while dirty */
	uint64_t  hash;
	mposting *p;           /* plain: the postings; NULL while packed */
	a2m_mpacked pk;        /* packed: the postings coded (memory_packed.h) */
	uint32_t  n, cap;      /* cap (plain's postings) never shrinks (see the header) */
	uint32_t  len;
	uint32_t  loose;       /* widenings by shifts since the bounds were exact */
	uint8_t   dirty;       /* on the dirty list: to free (empty) or to repack */
	uint8_t   packed;
	a2m_tf_bound  all;     /* bounds every posting in p */
	a2m_tf_bound *blocks;  /* NULL while cap <= A2M_POSTINGS_BLOCK, else one per block of cap */
	char      text[];
};

struct a2m_mdoc {
	int64_t   seq;
	uint32_t  length;
	uint32_t  n;
	uint8_t   has_text;
	uint8_t   linked;
	mterm    *terms[];  /* n of them, then n uint32_t: see doc_tf() */
};

/* The doc's term frequencies, after its terms. */
static uint32_t *doc_tf(a2m_mdoc *d)
{
	return (uint32_t *)(void *)(d->terms + d->n);
}

struct a2m_mindex {
	mterm         **buckets;
	size_t          nbuckets;  /* a power of two */
	size_t          nterms;
	mterm          *dirty;
	a2m_index_stats stats;
};

a2m_mindex *a2m_mindex_new(void)
{
	a2m_mindex *ix = calloc(1, sizeof *ix);
	if (!ix)
		return NULL;
	ix->buckets = calloc(INITIAL_BUCKETS, sizeof *ix->buckets);
	if (!ix->buckets) {
		free(ix);
		return NULL;
	}
	ix->nbuckets = INITIAL_BUCKETS;
	return ix;
}

static void term_free(mterm *t)
{
	free(t->p);
	a2m_mpacked_free(&t->pk);
	free(t->blocks);
	free(t);
}

void a2m_mindex_free(a2m_mindex *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->nbuckets; i++) {
		mterm *t = ix->buckets[i];
		while (t) {
			mterm *next = t->next;
			term_free(t);
			t = next;
		}
	}
	free(ix->buckets);
	free(ix);
}

static mterm *find(const a2m_mindex *ix, const char *s, size_t len, uint64_t h)
{
	for (mterm *t = ix->buckets[h & (ix->nbuckets - 1)]; t; t = t->next)
		if (t->hash == h && t->len == len && memcmp(t->text, s, len) == 0)
			return t;
	return NULL;
}

static void grow(a2m_mindex *ix)
{
	size_t n = ix->nbuckets * 2;
	mterm **b = calloc(n, sizeof *b);
	if (!b)
		return;
	for (size_t i = 0; i < ix->nbuckets; i++) {
		mterm *t = ix->buckets[i];
		while (t) {
			mterm *next = t->next;
			size_t j = (size_t)(t->hash & (n - 1));
			t->next = b[j];
			b[j] = t;
			t = next;
		}
	}
	free(ix->buckets);
	ix->buckets = b;
	ix->nbuckets = n;
}

static void mark_dirty(a2m_mindex *ix, mterm *t)
{
	if (t->dirty)
		return;
	t->dirty = 1;
	t->dirty_next = ix->dirty;
	ix->dirty = t;
}

/* The term s, created (empty, dirty) when missing. NULL when memory runs out. */
static mterm *intern(a2m_mindex *ix, const char *s, size_t len)
{
	uint64_t h = a2m_hash_bytes(s, len);
	mterm *t = find(ix, s, len, h);
	if (t)
		return t;
	t = calloc(1, sizeof *t + len);
	if (!t)
		return NULL;
	memcpy(t->text, s, len);
	t->len = (uint32_t)len;
	t->hash = h;
	a2m_tf_bound_empty(&t->all);
	if (ix->nterms >= ix->nbuckets)
		grow(ix);
	size_t j = (size_t)(h & (ix->nbuckets - 1));
	t->next = ix->buckets[j];
	ix->buckets[j] = t;
	ix->nterms++;
	/* Until a posting arrives it is garbage, should the write not happen. */
	mark_dirty(ix, t);
	return t;
}

/*
** The blocks' bounds of t, one per block of its cap, those of its postings
** kept. Without memory for them t keeps none (they are optional: a query
** then bounds the blocks it reaches itself), so this cannot fail.
*/
static void blocks_grow(mterm *t)
{
	int had = t->blocks != NULL;
	size_t nb = (t->cap + A2M_POSTINGS_BLOCK - 1) / A2M_POSTINGS_BLOCK;
	a2m_tf_bound *b = realloc(t->blocks, nb * sizeof *b);
	if (!b) {
		free(t->blocks);
		t->blocks = NULL;
		return;
	}
	t->blocks = b;
	if (!had) {
		/* Bound what the list holds now: from here on, links widen them. */
		for (size_t i = 0; i < nb; i++)
			a2m_tf_bound_empty(&b[i]);
		for (uint32_t i = 0; i < t->n; i++)
			a2m_tf_bound_add(&b[i / A2M_POSTINGS_BLOCK], t->p[i].tf, t->p[i].dl);
	}
}

/* Makes room for one more posting in t. Returns 0, or -1 when memory runs out. */
static int term_reserve(mterm *t)
{
	if (t->packed)
		return a2m_mpacked_reserve(&t->pk);
	if (t->n < t->cap)
		return 0;
	/* 1.5 times: a long list wastes a quarter of its bytes on average,
	** against over a third when doubling. */
	uint32_t cap = t->cap < 2 ? 2 : t->cap + t->cap / 2;
	mposting *p = realloc(t->p, cap * sizeof *p);
	if (!p)
		return -1;
	t->p = p;
	t->cap = cap;
	if (cap > A2M_POSTINGS_BLOCK)
		blocks_grow(t);
	return 0;
}

/* Whether t should change form (PACK_SHARE): for sweep() to do, when no undo can need the room. */
static int term_repack(const a2m_mindex *ix, const mterm *t)
{
	uint64_t n = t->n, docs = ix->stats.docs > 0 ? (uint64_t)ix->stats.docs : 0;
	if (t->packed)
		return n >= PACK_MAX || n * PACK_SHARE >= docs;
	return n && n < PACK_MAX / 2 && n * 2 * PACK_SHARE < docs;
}

/*
** The doc of record seq from dt: with reserve, each term made (when
** missing) and given room for one more posting; without, a doc of
** postings already linked, whose terms exist (one missing is left out).
*/
static int doc_build(a2m_mindex *ix, const a2m_doc_terms *dt, int64_t seq, int reserve,
		     a2m_mdoc **out)
{
	*out = NULL;
	a2m_mdoc *d = calloc(1, sizeof *d + dt->n * (sizeof d->terms[0] + sizeof(uint32_t)));
	if (!d)
		return -1;
	d->seq = seq;
	d->length = dt->length;
	d->has_text = dt->has_text != 0;
	d->n = (uint32_t)dt->n;  /* doc_tf() needs the final count */
	uint32_t *tf = doc_tf(d);
	uint32_t kept = 0;
	for (size_t i = 0; i < dt->n; i++) {
		const a2m_term *w = &dt->terms[i];
		mterm *t;
		if (reserve) {
			if (!(t = intern(ix, w->text, w->len)) || term_reserve(t) != 0)
				goto fail;
			if (term_repack(ix, t))
				mark_dirty(ix, t);
		} else if (!(t = find(ix, w->text, w->len, a2m_hash_bytes(w->text, w->len)))) {
			continue;  /* not linked: the caller's invariant says never */
		}
		d->terms[kept] = t;
		tf[kept++] = w->tf;
	}
	if (kept < d->n) {
		/* The tfs follow the terms: close the gap the left-out ones made. */
		memmove(d->terms + kept, tf, kept * sizeof *tf);
		d->n = kept;
	}
	d->linked = !reserve;
	*out = d;
	return 0;
fail:
	free(d);
	return -1;
}

int a2m_mindex_prepare(a2m_mindex *ix, const a2m_doc_terms *dt, int64_t seq,
		       a2m_mdoc **out)
{
	return doc_build(ix, dt, seq, 1, out);
}

int a2m_mindex_describe(a2m_mindex *ix, const a2m_doc_terms *dt, int64_t seq,
			a2m_mdoc **out)
{
	return doc_build(ix, dt, seq, 0, out);
}

/* The first of t's postings at or after seq (t->n when none): they are in ascending seq. */
static uint32_t seek(const mterm *t, int64_t seq)
{
	uint32_t lo = 0, hi = t->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->p[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Makes t's bounds exact again: every posting's, and each block's. */
static void bounds_rebuild(mterm *t)
{
	a2m_tf_bound_empty(&t->all);
	t->loose = 0;
	if (t->packed) {
		a2m_mpacked_cursor c;
		a2m_posting x;
		for (a2m_mpacked_start(&t->pk, &c); a2m_mpacked_next(&c, &x);)
			a2m_tf_bound_add(&t->all, x.tf, x.dl);
		return;
	}
	for (uint32_t i = 0; i < t->n; i++)
		a2m_tf_bound_add(&t->all, t->p[i].tf, t->p[i].dl);
	if (t->blocks) {
		for (uint32_t i = 0; i < t->n; i += A2M_POSTINGS_BLOCK) {
			a2m_tf_bound *b = &t->blocks[i / A2M_POSTINGS_BLOCK];
			uint32_t end = t->n - i < A2M_POSTINGS_BLOCK ? t->n : i + A2M_POSTINGS_BLOCK;
			a2m_tf_bound_empty(b);
			for (uint32_t k = i; k < end; k++)
				a2m_tf_bound_add(b, t->p[k].tf, t->p[k].dl);
		}
	}
	t->loose = 0;
}

/*
** Counts `by` more widenings of t's bounds by postings that left or
** crossed a block, and rebuilds them once they reach a quarter of the list
** (one more than that: a short list is rebuilt every few removals, a
** cost of a few postings each).
*/
static void bounds_loosen(mterm *t, uint32_t by)
{
	t->loose += by;
	if (t->loose > t->n / 4 + 1)
		bounds_rebuild(t);
}

/*
** Adds posting x to t at its place in seq order. Room is there: prepare
** made it, or a doc that held it before is linked again.
*/
static void term_insert(mterm *t, mposting x)
{
	if (t->packed) {
		a2m_mpacked_insert(&t->pk, x);
		t->n++;
		a2m_tf_bound_add(&t->all, x.tf, x.dl);
		return;
	}
	uint32_t n = t->n;
	uint32_t pos = n && t->p[n - 1].seq > x.seq ? seek(t, x.seq) : n;
	if (pos < n)
		memmove(&t->p[pos + 1], &t->p[pos], (n - pos) * sizeof *t->p);
	t->p[pos] = x;
	t->n = n + 1;
	a2m_tf_bound_add(&t->all, x.tf, x.dl);
	if (!t->blocks)
		return;
	/* The block after the old end held nothing: what it bounded before left it. */
	if (n % A2M_POSTINGS_BLOCK == 0)
		a2m_tf_bound_empty(&t->blocks[n / A2M_POSTINGS_BLOCK]);
	a2m_tf_bound_add(&t->blocks[pos / A2M_POSTINGS_BLOCK], x.tf, x.dl);
	/* Each later block gained its predecessor's last posting as its first. */
	uint32_t crossed = 0;
	for (uint32_t s = (pos / A2M_POSTINGS_BLOCK + 1) * A2M_POSTINGS_BLOCK; s <= n;
	     s += A2M_POSTINGS_BLOCK, crossed++)
		a2m_tf_bound_add(&t->blocks[s / A2M_POSTINGS_BLOCK], t->p[s].tf, t->p[s].dl);
	if (crossed)
		bounds_loosen(t, crossed);
}

/* Removes t's posting of seq (which it holds), keeping the rest in order. */
static void term_remove(mterm *t, int64_t seq)
{
	uint32_t pos = t->packed ? 0 : seek(t, seq);
	if (t->packed ? !a2m_mpacked_remove(&t->pk, seq) : pos == t->n || t->p[pos].seq != seq)
		return;  /* not linked here: the caller's invariant says never */
	uint32_t n = --t->n;
	if (!t->packed && pos < n)
		memmove(&t->p[pos], &t->p[pos + 1], (n - pos) * sizeof *t->p);
	if (!n) {
		/* Empty: bounding nothing again. */
		a2m_tf_bound_empty(&t->all);
		t->loose = 0;
		return;
	}
	/* Each later block lost its first posting to its predecessor's end. */
	uint32_t crossed = 0;
	if (t->blocks)
		for (uint32_t s = (pos / A2M_POSTINGS_BLOCK + 1) * A2M_POSTINGS_BLOCK - 1; s < n;
		     s += A2M_POSTINGS_BLOCK, crossed++)
			a2m_tf_bound_add(&t->blocks[s / A2M_POSTINGS_BLOCK], t->p[s].tf,
					 t->p[s].dl);
	/* The posting that left keeps its block's bound and the list's loose. */
	bounds_loosen(t, crossed + 1);
}

/* After a posting left t: empty, it is to be freed; shorter, maybe packed (sweep). */
static void term_left(a2m_mindex *ix, mterm *t)
{
	if (!t->n || term_repack(ix, t))
		mark_dirty(ix, t);
}

/* Counts doc d in the index's figures (by 1) or out of them (by -1). */
static void stats_count(a2m_mindex *ix, const a2m_mdoc *d, int by)
{
	if (d->n) {
		ix->stats.docs += by;
		ix->stats.total_len += by * (int64_t)d->length;
	} else if (d->has_text) {
		ix->stats.unindexed += by;
	}
}

void a2m_mindex_link(a2m_mindex *ix, a2m_mdoc *d)
{
	if (d->linked)
		return;
	const uint32_t *tf = doc_tf(d);
	for (uint32_t i = 0; i < d->n; i++)
		term_insert(d->terms[i], (mposting){.seq = d->seq, .tf = tf[i], .dl = d->length});
	d->linked = 1;
	stats_count(ix, d, 1);
}

void a2m_mindex_unlink(a2m_mindex *ix, a2m_mdoc *d)
{
	if (!d->linked)
		return;
	for (uint32_t i = 0; i < d->n; i++) {
		mterm *t = d->terms[i];
		term_remove(t, d->seq);
		term_left(ix, t);
	}
	d->linked = 0;
	stats_count(ix, d, -1);
}

/* Whether doc d has term t (a doc's terms are few: a scan). */
static int doc_has(const a2m_mdoc *d, const mterm *t)
{
	for (uint32_t i = 0; i < d->n; i++)
		if (d->terms[i] == t)
			return 1;
	return 0;
}

void a2m_mindex_replace(a2m_mindex *ix, a2m_mdoc *old, a2m_mdoc *d)
{
	if (!old || !old->linked || old->seq != d->seq || d->linked) {
		if (old)
			a2m_mindex_unlink(ix, old);
		a2m_mindex_link(ix, d);
		return;
	}
	const uint32_t *tf = doc_tf(d);
	for (uint32_t i = 0; i < old->n; i++) {
		mterm *t = old->terms[i];
		if (doc_has(d, t))
			continue;
		term_remove(t, old->seq);
		term_left(ix, t);
	}
	for (uint32_t i = 0; i < d->n; i++) {
		mterm *t = d->terms[i];
		mposting x = {.seq = d->seq, .tf = tf[i], .dl = d->length};
		if (!doc_has(old, t)) {
			term_insert(t, x);
			continue;
		}
		/* Held by both: rewritten where it is, the list's order kept. */
		if (t->packed) {
			if (a2m_mpacked_rewrite(&t->pk, x)) {
				a2m_tf_bound_add(&t->all, x.tf, x.dl);
				bounds_loosen(t, 1);
			}
			continue;
		}
		uint32_t pos = seek(t, x.seq);
		if (pos == t->n || t->p[pos].seq != x.seq)
			continue;  /* not linked here: the caller's invariant says never */
		t->p[pos] = x;
		a2m_tf_bound_add(&t->all, x.tf, x.dl);
		if (t->blocks)
			a2m_tf_bound_add(&t->blocks[pos / A2M_POSTINGS_BLOCK], x.tf, x.dl);
		/* The posting it replaced keeps the bounds loose. */
		bounds_loosen(t, 1);
	}
	old->linked = 0;
	d->linked = 1;
	stats_count(ix, old, -1);
	stats_count(ix, d, 1);
}

void a2m_mdoc_free(a2m_mdoc *d)
{
	free(d);
}

/* Codes t's postings packed. Without memory t stays plain (a later sweep tries again). */
static void term_pack(mterm *t)
{
	if (a2m_mpacked_encode(&t->pk, t->p, t->n) != 0)
		return;
	free(t->p);
	free(t->blocks);
	t->p = NULL;
	t->blocks = NULL;
	t->cap = 0;
	t->packed = 1;
}

/* Decodes t's postings into a plain array. Without memory t stays packed. */
static void term_unpack(mterm *t)
{
	uint32_t cap = t->n + t->n / 2;
	mposting *p = malloc(cap * sizeof *p);
	if (!p)
		return;
	a2m_mpacked_cursor c;
	uint32_t i = 0;
	for (a2m_mpacked_start(&t->pk, &c); a2m_mpacked_next(&c, &p[i]);)
		i++;
	a2m_mpacked_free(&t->pk);
	t->p = p;
	t->cap = cap;
	t->packed = 0;
	if (cap > A2M_POSTINGS_BLOCK)
		blocks_grow(t);
}

/*
** Frees the terms left without postings and packs or unpacks the lists
** that crossed PACK_SHARE: both only here, once no undo step can need the
** room a list had (a rollback puts postings back into the room they left).
*/
void a2m_mindex_sweep(a2m_mindex *ix)
{
	mterm *t = ix->dirty;
	ix->dirty = NULL;
	while (t) {
		mterm *next = t->dirty_next;
		t->dirty = 0;
		t->dirty_next = NULL;
		if (t->n == 0) {
			mterm **pp = &ix->buckets[t->hash & (ix->nbuckets - 1)];
			while (*pp && *pp != t)
				pp = &(*pp)->next;
			if (*pp)
				*pp = t->next;
			ix->nterms--;
			term_free(t);
		} else if (term_repack(ix, t)) {
			if (t->packed)
				term_unpack(t);
			else
				term_pack(t);
		}
		t = next;
	}
}

int a2m_mindex_lend(const a2m_mindex *ix, const char *term, size_t len,
		    a2m_postings_lent *out)
{
	const mterm *t = find(ix, term, len, a2m_hash_bytes(term, len));
	memset(out, 0, sizeof *out);
	a2m_tf_bound_empty(&out->all);
	if (!t)
		return 0;
	if (t->packed && t->n)
		return 2;  /* a short list coded: the caller copies it (a2m_mindex_postings) */
	out->v = t->p;
	out->n = t->n;
	out->blocks = t->blocks;
	out->all = t->all;
	return 0;
}

void a2m_mindex_stats(const a2m_mindex *ix, a2m_index_stats *out)
{
	*out = ix->stats;
}

int a2m_mindex_view(const a2m_mindex *ix, const char *term, size_t len,
		    const a2m_posting **v, size_t *n)
{
	const mterm *t = find(ix, term, len, a2m_hash_bytes(term, len));
	*v = t ? t->p : NULL;
	*n = t ? t->n : 0;
	return t && t->packed && t->n ? 1 : 0;
}

int a2m_mindex_postings(const a2m_mindex *ix, const char *term, size_t len,
			a2m_posting_visit visit, void *ctx)
{
	const mterm *t = find(ix, term, len, a2m_hash_bytes(term, len));
	if (t && t->packed) {
		a2m_mpacked_cursor c;
		a2m_posting x;
		for (a2m_mpacked_start(&t->pk, &c); a2m_mpacked_next(&c, &x);) {
			int rc = visit(x.seq, x.tf, x.dl, ctx);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	for (uint32_t i = 0; t && i < t->n; i++) {
		int rc = visit(t->p[i].seq, t->p[i].tf, t->p[i].dl, ctx);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int a2m_mindex_each(const a2m_mindex *ix, a2m_mindex_term_visit visit, void *ctx)
{
	a2m_posting *tmp = NULL;  /* a packed list decoded */
	size_t room = 0;
	int rc = 0;
	for (size_t i = 0; i < ix->nbuckets && !rc; i++)
		for (const mterm *t = ix->buckets[i]; t && !rc; t = t->next) {
			const a2m_posting *p = t->p;
			if (t->packed) {
				if (t->n > room) {
					a2m_posting *m = realloc(tmp, t->n * sizeof *m);
					if (!m) {
						rc = -1;
						break;
					}
					tmp = m;
					room = t->n;
				}
				a2m_mpacked_cursor c;
				size_t k = 0;
				for (a2m_mpacked_start(&t->pk, &c); k < t->n && a2m_mpacked_next(&c, &tmp[k]);)
					k++;
				p = tmp;
			}
			rc = visit(t->text, t->len, p, t->n, ctx);
		}
	free(tmp);
	return rc;
}
