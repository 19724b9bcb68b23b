/*
** memory_index.c — the in-memory engine's term index (see memory_index.h).
**
**   terms     chained hash table text -> term (FNV-1a); it doubles when it
**             reaches load 1, and failing to is harmless (longer chains).
**   term      its postings: an array of (seq, tf, length), everything BM25
**             reads, so scoring a term is one sequential pass over memory;
**             and their bounds (store.h a2m_tf_bound), the list's and, once
**             it outgrows a block, each block's of A2M_POSTINGS_BLOCK, so
**             that block-max pruning (rank/blockmax.c) neither bounds nor
**             reads the blocks it skips. A link widens its block's bound
**             and the list's; an unlink leaves them as they are (still
**             bounds, looser) but for the block its moved posting lands
**             in, which is widened. Postings are appended, so a list stays
**             in ascending seq until a removal moves its last posting into
**             a hole, or a record is linked again (an undo): then `sorted`
**             is cleared, the list is no longer lent with its bounds (block-
**             max needs the order) and queries prune it term at a time
**             until it runs empty.
**   doc       seq, length, and for each of its terms the term and where its
**             posting sits in that term's array (while unlinked, its tf
**             instead: a linked doc's tf is in its posting). Two arrays
**             after the header, the terms then the positions, so a term
**             costs the doc 12 bytes, not the 16 of a padded struct.
**   docs      chained hash table seq -> linked doc: removing a posting moves
**             the term's last one into its place, and that one's doc is found
**             here to be told where its posting went.
**   dirty     terms whose postings ran out, to be freed by sweep(); linked
**             through the terms themselves so that noting one never
**             allocates.
*/
#include <stdlib.h>
#include <string.h>

#include "store/memory_index.h"
#include "util/hash.h"

#define INITIAL_BUCKETS 256

typedef struct mterm mterm;

/* (seq, tf, length): store.h's a2m_posting, so a view needs no copy. */
typedef a2m_posting mposting;

struct mterm {
	mterm    *next;        /* hash chain */
	mterm    *dirty_next;  /* on the dirty list while dirty */
	uint64_t  hash;
	mposting *p;
	uint32_t  n, cap;      /* cap never shrinks (see the header) */
	uint32_t  len;
	uint8_t   dirty;
	uint8_t   sorted;      /* p is in ascending seq */
	a2m_tf_bound  all;     /* bounds every posting in p */
	a2m_tf_bound *blocks;  /* NULL while cap <= A2M_POSTINGS_BLOCK, else one per block of cap */
	char      text[];
};

struct a2m_mdoc {
	a2m_mdoc *next;  /* chain in the docs table, while linked */
	int64_t   seq;
	uint32_t  length;
	uint32_t  n;
	uint8_t   has_text;
	uint8_t   linked;
	mterm    *terms[];  /* n of them, then n uint32_t: see doc_pos() */
};

/* The doc's positions (linked) or term frequencies (unlinked), after its terms. */
static uint32_t *doc_pos(a2m_mdoc *d)
{
	return (uint32_t *)(void *)(d->terms + d->n);
}

struct a2m_mindex {
	mterm         **buckets;
	size_t          nbuckets;  /* a power of two */
	size_t          nterms;
	a2m_mdoc      **docs;      /* seq -> linked doc */
	size_t          ndocbuckets, ndocs;
	mterm          *dirty;
	a2m_index_stats stats;
};

a2m_mindex *a2m_mindex_new(void)
{
	a2m_mindex *ix = calloc(1, sizeof *ix);
	if (!ix)
		return NULL;
	ix->buckets = calloc(INITIAL_BUCKETS, sizeof *ix->buckets);
	ix->docs = calloc(INITIAL_BUCKETS, sizeof *ix->docs);
	if (!ix->buckets || !ix->docs) {
		free(ix->buckets);
		free(ix->docs);
		free(ix);
		return NULL;
	}
	ix->nbuckets = INITIAL_BUCKETS;
	ix->ndocbuckets = INITIAL_BUCKETS;
	return ix;
}

/* ---- the docs table ------------------------------------------------------- */

static size_t doc_bucket(int64_t seq, size_t n)
{
	return (size_t)(((uint64_t)seq * 0x9E3779B97F4A7C15ULL) >> 20) & (n - 1);
}

/* Doubles the docs table; failing to only makes chains longer. */
static void docs_grow(a2m_mindex *ix)
{
	size_t n = ix->ndocbuckets * 2;
	a2m_mdoc **b = calloc(n, sizeof *b);
	if (!b)
		return;
	for (size_t i = 0; i < ix->ndocbuckets; i++) {
		a2m_mdoc *d = ix->docs[i];
		while (d) {
			a2m_mdoc *next = d->next;
			size_t j = doc_bucket(d->seq, n);
			d->next = b[j];
			b[j] = d;
			d = next;
		}
	}
	free(ix->docs);
	ix->docs = b;
	ix->ndocbuckets = n;
}

static a2m_mdoc *doc_find(const a2m_mindex *ix, int64_t seq)
{
	a2m_mdoc *d = ix->docs[doc_bucket(seq, ix->ndocbuckets)];
	while (d && d->seq != seq)
		d = d->next;
	return d;
}

void a2m_mindex_free(a2m_mindex *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->nbuckets; i++) {
		mterm *t = ix->buckets[i];
		while (t) {
			mterm *next = t->next;
			free(t->p);
			free(t->blocks);
			free(t);
			t = next;
		}
	}
	free(ix->buckets);
	free(ix->docs);
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
	t->sorted = 1;
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

int a2m_mindex_prepare(a2m_mindex *ix, const a2m_doc_terms *dt, int64_t seq,
		       a2m_mdoc **out)
{
	*out = NULL;
	a2m_mdoc *d = calloc(1, sizeof *d + dt->n * (sizeof d->terms[0] + sizeof(uint32_t)));
	if (!d)
		return -1;
	d->seq = seq;
	d->length = dt->length;
	d->has_text = dt->has_text != 0;
	d->n = (uint32_t)dt->n;  /* doc_pos() needs the final count */
	uint32_t *tf = doc_pos(d);
	for (size_t i = 0; i < dt->n; i++) {
		mterm *t = intern(ix, dt->terms[i].text, dt->terms[i].len);
		if (!t)
			goto fail;
		if (t->n == t->cap) {
			/* 1.5 times: a long list wastes a quarter of its bytes on
			** average, against over a third when doubling. */
			uint32_t cap = t->cap < 2 ? 2 : t->cap + t->cap / 2;
			mposting *p = realloc(t->p, cap * sizeof *p);
			if (!p)
				goto fail;
			t->p = p;
			t->cap = cap;
			if (cap > A2M_POSTINGS_BLOCK)
				blocks_grow(t);
		}
		d->terms[i] = t;
		tf[i] = dt->terms[i].tf;
	}
	*out = d;
	return 0;
fail:
	free(d);
	return -1;
}

void a2m_mindex_link(a2m_mindex *ix, a2m_mdoc *d)
{
	if (d->linked)
		return;
	uint32_t *at = doc_pos(d);
	for (uint32_t i = 0; i < d->n; i++) {
		mterm *t = d->terms[i];
		/* Room is there: prepare made it, or this doc held it before. */
		uint32_t pos = t->n++;
		if (pos && t->p[pos - 1].seq > d->seq)
			t->sorted = 0;
		t->p[pos] = (mposting){.seq = d->seq, .tf = at[i], .dl = d->length};
		at[i] = pos;
		a2m_tf_bound_add(&t->all, t->p[pos].tf, t->p[pos].dl);
		if (t->blocks) {
			a2m_tf_bound *b = &t->blocks[pos / A2M_POSTINGS_BLOCK];
			/* A block's first posting: what it bounded before left it. */
			if (pos % A2M_POSTINGS_BLOCK == 0)
				a2m_tf_bound_empty(b);
			a2m_tf_bound_add(b, t->p[pos].tf, t->p[pos].dl);
		}
	}
	if (ix->ndocs >= ix->ndocbuckets)
		docs_grow(ix);
	size_t j = doc_bucket(d->seq, ix->ndocbuckets);
	d->next = ix->docs[j];
	ix->docs[j] = d;
	ix->ndocs++;
	d->linked = 1;
	if (d->n) {
		ix->stats.docs++;
		ix->stats.total_len += d->length;
	} else if (d->has_text) {
		ix->stats.unindexed++;
	}
}

void a2m_mindex_unlink(a2m_mindex *ix, a2m_mdoc *d)
{
	if (!d->linked)
		return;
	a2m_mdoc **pp = &ix->docs[doc_bucket(d->seq, ix->ndocbuckets)];
	while (*pp && *pp != d)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = d->next;
		ix->ndocs--;
	}
	d->next = NULL;
	uint32_t *at = doc_pos(d);
	for (uint32_t i = 0; i < d->n; i++) {
		mterm *t = d->terms[i];
		uint32_t pos = at[i];
		at[i] = t->p[pos].tf;  /* kept for a later link */
		mposting last = t->p[--t->n];
		if (pos != t->n) {
			/* The last posting moves into the hole: tell its doc. */
			t->p[pos] = last;
			t->sorted = 0;
			if (t->blocks)
				a2m_tf_bound_add(&t->blocks[pos / A2M_POSTINGS_BLOCK], last.tf, last.dl);
			a2m_mdoc *other = doc_find(ix, last.seq);
			for (uint32_t k = 0; other && k < other->n; k++)
				if (other->terms[k] == t) {
					doc_pos(other)[k] = pos;
					break;
				}
		}
		if (!t->n) {
			/* Empty: in order, and bounding nothing again. */
			t->sorted = 1;
			a2m_tf_bound_empty(&t->all);
			mark_dirty(ix, t);
		}
	}
	d->linked = 0;
	if (d->n) {
		ix->stats.docs--;
		ix->stats.total_len -= d->length;
	} else if (d->has_text) {
		ix->stats.unindexed--;
	}
}

void a2m_mdoc_free(a2m_mdoc *d)
{
	free(d);
}

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
			free(t->p);
			free(t->blocks);
			free(t);
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
	if (!t->sorted)
		return 1;
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
	return 0;
}

int a2m_mindex_postings(const a2m_mindex *ix, const char *term, size_t len,
			a2m_posting_visit visit, void *ctx)
{
	const mterm *t = find(ix, term, len, a2m_hash_bytes(term, len));
	for (uint32_t i = 0; t && i < t->n; i++) {
		int rc = visit(t->p[i].seq, t->p[i].tf, t->p[i].dl, ctx);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int a2m_mindex_each(const a2m_mindex *ix, a2m_mindex_term_visit visit, void *ctx)
{
	for (size_t i = 0; i < ix->nbuckets; i++)
		for (const mterm *t = ix->buckets[i]; t; t = t->next) {
			int rc = visit(t->text, t->len, t->p, t->n, ctx);
			if (rc)
				return rc;
		}
	return 0;
}
