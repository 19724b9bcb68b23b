/*
** sqlite_segments_lazy.c — a term's postings read a block at a time: the
** bytes of its lists in the segments, their skip tables (sqlite_segments_
** skip.c) read at once, a block's entries decoded only when a query asks
** for them (store.h a2m_postings_lent, fill).
**
** Why: a query of frequent words read every posting of each of its lists
** from the segments, though block-max WAND (rank/blockmax.c) then stepped
** over most of them unscored: decoding was most of such a recall at 1M
** records, and the postings cache, counting decoded postings, held only a
** few such lists. The bytes are about a sixth of the decoded postings.
**
** When: the term's lists, oldest first, must read as one list without a
** merge: no tombstone in any of them (an entry is then a posting, and a
** block's place in the whole list is known from the counts in the skip
** tables), and their seq ranges disjoint (no posting of a newer segment
** hides one of an older). Records are added in ascending seq, so that is
** the usual case of a growing store; anything else (forgotten or updated
** records still in an older segment) is read whole and merged, as before
** (a2m_seg_lazy_new answers 0). A list without a skip table (short, or of
** the previous layout) is decoded here at once.
*/
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_segments.h"
#include "store/sqlite_segments_skip.h"
#include "store/store_check.h"

/* Where a block's entries are, to decode it. */
typedef struct src_block {
	const unsigned char *at;  /* in raw or in one of owned */
	uint32_t bytes;
	uint8_t  filled;
	int64_t  prev;   /* the seq its first entry's delta is from */
} src_block;

struct a2m_seg_lazy {
	unsigned char *raw;      /* the lists' entries copied (those not owned) */
	unsigned char *owned[A2M_SEG_MAX_LISTS];  /* lists taken as read (a2m_seg_lazy_new) */
	size_t         nraw;     /* bytes held in raw and owned */
	a2m_posting   *v;
	size_t         n, nblocks, decoded;
	size_t        *start;    /* nblocks + 1 */
	int64_t       *last;
	a2m_tf_bound  *bounds;
	a2m_tf_bound   all;
	src_block     *src;
	size_t         cap;      /* what it may hold before a peek stops filling (a2m_seg_lazy_cap) */
	a2m_store     *base;     /* told of a corrupt block (a2m_seg_lazy_name), or NULL */
	char          *term;
	size_t         tlen;
};

/* One input list, as sorted by its first seq. */
typedef struct in_list {
	const unsigned char *p;
	size_t               n;
	a2m_seg_skip         sk;
	int                  has_skip;
	int64_t              first, last, count;
	size_t               nblocks;
	unsigned char       *own;  /* p's buffer when the caller lets it be taken */
} in_list;

static int by_first(const void *a, const void *b)
{
	const in_list *x = a, *y = b;
	return x->first < y->first ? -1 : x->first > y->first;
}

/*
** Reads list l's figures: its first seq, its postings, its blocks, and,
** without a skip table, its last seq (with one, the table is walked once,
** when the blocks are set up: it was a seventh of a 10M recall's
** instructions, walked twice). 1 when it can be read lazily, 0 when not
** (a tombstone), -2 when corrupt.
*/
static int survey(in_list *l)
{
	int got = a2m_seg_skip_open(l->p, l->n, &l->sk);
	if (got < 0)
		return -2;
	l->has_skip = got;
	a2m_seg_list dec;
	a2m_seg_entry e;
	if (got) {
		if (l->sk.live != l->sk.entries)
			return 0;
		a2m_seg_list_init(&dec, l->sk.entries_at, (size_t)(l->sk.end - l->sk.entries_at));
		if (a2m_seg_list_next(&dec, &e) != 1)
			return -2;
		l->first = e.seq;
		l->count = l->sk.entries;
		l->nblocks = l->sk.nblocks;
		return 1;
	}
	a2m_seg_list_init(&dec, l->p, l->n);
	l->count = 0;
	while ((got = a2m_seg_list_next(&dec, &e)) == 1) {
		if (e.deleted)
			return 0;
		if (!l->count++)
			l->first = e.seq;
		l->last = e.seq;
	}
	if (got < 0)
		return -2;
	l->nblocks = (size_t)(l->count + A2M_POSTINGS_BLOCK - 1) / A2M_POSTINGS_BLOCK;
	return 1;
}

/* Frees the bytes lz decodes blocks from. */
static void free_bytes(a2m_seg_lazy *lz)
{
	free(lz->raw);
	lz->raw = NULL;
	for (size_t i = 0; i < A2M_SEG_MAX_LISTS; i++) {
		free(lz->owned[i]);
		lz->owned[i] = NULL;
	}
	lz->nraw = 0;
}

void a2m_seg_lazy_free(a2m_seg_lazy *lz)
{
	if (!lz)
		return;
	free_bytes(lz);
	free(lz->v);
	free(lz->start);
	free(lz->last);
	free(lz->bounds);
	free(lz->src);
	free(lz->term);
	free(lz);
}

void a2m_seg_lazy_name(a2m_seg_lazy *lz, a2m_store *base, const char *term, size_t len)
{
	lz->base = base;
	free(lz->term);
	lz->tlen = 0;
	if ((lz->term = malloc(len ? len : 1)) != NULL) {
		memcpy(lz->term, term, len);
		lz->tlen = len;
	}
}

/*
** Block b's bytes are not what the skip table says: told to the store, in
** the words a2m check uses for it (sqlite_check_index.c). Returns -1.
*/
static int corrupt(const a2m_seg_lazy *lz, size_t b)
{
	if (lz->base) {
		char q[A2M_CHECK_QUOTED];
		a2m_store_fail(lz->base, "index postings: a corrupt segment: block %zu of the list of "
			       "%s does not match its skip table (a2m check reports it; "
			       "a2m check --repair rebuilds the index)", b,
			       a2m_check_quote(lz->term ? lz->term : "", lz->tlen, q, sizeof q));
	}
	return -1;
}

/* Closes block b of lz at posting end (its bound from the postings there). */
static void close_filled(a2m_seg_lazy *lz, size_t b, size_t from, size_t end)
{
	lz->start[b] = from;
	lz->last[b] = lz->v[end - 1].seq;
	a2m_tf_bound_empty(&lz->bounds[b]);
	for (size_t i = from; i < end; i++)
		a2m_tf_bound_add(&lz->bounds[b], lz->v[i].tf, lz->v[i].dl);
	lz->src[b] = (src_block){.filled = 1};  /* no bytes: never decoded again */
	lz->decoded += end - from;
}

int a2m_seg_lazy_new(const unsigned char *const *lists, const size_t *sizes, size_t k,
		     const a2m_posting *tail, size_t ntail, unsigned char **own,
		     a2m_seg_lazy **out)
{
	in_list in[A2M_SEG_MAX_LISTS];
	size_t n = 0, nblocks = 0, nraw = 0;
	int any_skip = 0;
	*out = NULL;
	if (k > A2M_SEG_MAX_LISTS)
		return 0;
	for (size_t i = 0; i < k; i++) {
		memset(&in[i], 0, sizeof in[i]);
		in[i].p = lists[i];
		in[i].n = sizes[i];
		in[i].own = own ? own[i] : NULL;
		int got = survey(&in[i]);
		if (got <= 0)
			return got;
		any_skip |= in[i].has_skip;
		n += (size_t)in[i].count;
		nblocks += in[i].nblocks;
		if (in[i].has_skip && !in[i].own)
			nraw += sizes[i];
	}
	if (!any_skip)
		return 0;
	qsort(in, k, sizeof *in, by_first);
	n += ntail;
	nblocks += (ntail + A2M_POSTINGS_BLOCK - 1) / A2M_POSTINGS_BLOCK;
	a2m_seg_lazy *lz = calloc(1, sizeof *lz);
	if (!lz)
		return -1;
	lz->n = n;
	lz->nblocks = nblocks;
	lz->cap = SIZE_MAX;
	lz->raw = malloc(nraw ? nraw : 1);
	lz->v = malloc((n ? n : 1) * sizeof *lz->v);
	lz->start = malloc((nblocks + 1) * sizeof *lz->start);
	lz->last = malloc((nblocks ? nblocks : 1) * sizeof *lz->last);
	lz->bounds = malloc((nblocks ? nblocks : 1) * sizeof *lz->bounds);
	/* Not zeroed: every block's is set below (a tenth of a long list's set-up). */
	lz->src = malloc((nblocks ? nblocks : 1) * sizeof *lz->src);
	if (!lz->raw || !lz->v || !lz->start || !lz->last || !lz->bounds || !lz->src) {
		a2m_seg_lazy_free(lz);
		return -1;
	}
	a2m_tf_bound_empty(&lz->all);
	size_t at = 0, b = 0, rawat = 0;
	int rc = 1;
	for (size_t i = 0; i < k && rc == 1; i++) {
		in_list *l = &in[i];
		if (!l->has_skip) {
			/* Decoded now: a short list, or one of the previous layout. */
			a2m_seg_list dec;
			a2m_seg_entry e;
			size_t from = at;
			a2m_seg_list_init(&dec, l->p, l->n);
			while (at < n && a2m_seg_list_next(&dec, &e) == 1)
				lz->v[at++] = (a2m_posting){e.seq, e.tf, e.dl};
			for (size_t j = from; j < at; j += A2M_POSTINGS_BLOCK) {
				close_filled(lz, b, j, j + A2M_POSTINGS_BLOCK < at ? j + A2M_POSTINGS_BLOCK : at);
				a2m_tf_bound_merge(&lz->all, &lz->bounds[b]);
				b++;
			}
			continue;
		}
		/*
		** Its bytes, kept: taken as they are when the caller lets go of
		** them (a frequent word's lists are megabytes at 10M records, and
		** a copy of them was much of a read), else copied. Its blocks, from
		** the skip table.
		*/
		size_t ebytes = (size_t)(l->sk.end - l->sk.entries_at);
		const unsigned char *bytes = l->sk.entries_at;
		if (!l->own) {
			memcpy(lz->raw + rawat, bytes, ebytes);
			bytes = lz->raw + rawat;
			rawat += ebytes;
		}
		a2m_seg_skip_iter it;
		a2m_seg_skip_block sb;
		a2m_seg_skip_first(&l->sk, &it);
		int got;
		while ((got = a2m_seg_skip_next(&it, &sb)) == 1 && sb.bytes <= UINT32_MAX &&
		       b < nblocks) {
			lz->start[b] = at;
			lz->last[b] = sb.last;
			lz->bounds[b] = sb.bound;
			lz->src[b] = (src_block){bytes + sb.at, (uint32_t)sb.bytes, 0, sb.prev};
			a2m_tf_bound_merge(&lz->all, &sb.bound);
			l->last = sb.last;
			at += sb.count;
			b++;
		}
		if (got != 0)
			rc = -2;
	}
	/*
	** The lists (and the tail after them) must be disjoint ranges of seq,
	** else they read as one list only through a merge: known now that
	** each table's last block is.
	*/
	for (size_t i = 0; i + 1 < k && rc == 1; i++)
		if (in[i].count && in[i + 1].count && in[i].last >= in[i + 1].first)
			rc = 0;
	if (rc == 1 && ntail && k && in[k - 1].last >= tail[0].seq)
		rc = 0;
	/* The tables' counts said as much as their headers (else corrupt). */
	if (rc == 1 && at != n - ntail)
		rc = -2;
	/* The tail's postings last: their seqs are above every segment's. */
	for (size_t i = 0; i < ntail && rc == 1; i += A2M_POSTINGS_BLOCK) {
		size_t end = i + A2M_POSTINGS_BLOCK < ntail ? i + A2M_POSTINGS_BLOCK : ntail;
		memcpy(lz->v + at, tail + i, (end - i) * sizeof *tail);
		close_filled(lz, b, at, at + end - i);
		a2m_tf_bound_merge(&lz->all, &lz->bounds[b]);
		at += end - i;
		b++;
	}
	if (rc == 1 && (at != n || b != nblocks))
		rc = -2;
	if (rc != 1) {
		a2m_seg_lazy_free(lz);
		return rc;
	}
	lz->start[nblocks] = n;
	lz->nraw = rawat;
	/* The lists taken: the caller's no more. */
	for (size_t i = 0, j = 0; i < k; i++)
		if (in[i].own && in[i].has_skip) {
			lz->owned[j++] = in[i].own;
			lz->nraw += in[i].n;
		}
	for (size_t i = 0; own && i < k; i++)
		for (size_t j = 0; j < A2M_SEG_MAX_LISTS && lz->owned[j]; j++)
			if (own[i] == lz->owned[j])
				own[i] = NULL;
	*out = lz;
	return 1;
}

int a2m_seg_lazy_fill(void *ctx, size_t b)
{
	a2m_seg_lazy *lz = ctx;
	if (b >= lz->nblocks)
		return -1;
	src_block *s = &lz->src[b];
	if (s->filled)
		return 0;
	size_t i = lz->start[b], end = lz->start[b + 1];
	int64_t last = 0;
	/* The skip table said these are postings, end - i of them, up to last[b]. */
	if (a2m_seg_decode_block(s->at, s->bytes, s->prev, lz->v + i, end - i, &last) != 0 ||
	    last != lz->last[b])
		return corrupt(lz, b);
	s->filled = 1;
	lz->decoded += end - lz->start[b];
	/* Every block decoded (term at a time reads them all): the bytes are not needed. */
	if (lz->decoded == lz->n)
		free_bytes(lz);
	return 0;
}

#ifdef A2M_TEST_HOOKS
static atomic_size_t sheds, peeks;

size_t a2m_seg_lazy_sheds(void)
{
	return atomic_load_explicit(&sheds, memory_order_relaxed);
}

size_t a2m_seg_lazy_peeks(void)
{
	return atomic_load_explicit(&peeks, memory_order_relaxed);
}
#endif

void a2m_seg_lazy_cap(a2m_seg_lazy *lz, size_t cap)
{
	lz->cap = cap;
}

/*
** The first of v[i .. end) whose seq is at least seq, or end: most peeks
** land a few postings on (a probe per record of a rarer list), so a few
** steps, then halving.
*/
static size_t find_in(const a2m_posting *v, size_t i, size_t end, int64_t seq)
{
	for (size_t stop = i + 8 < end ? i + 8 : end; i < stop; i++)
		if (v[i].seq >= seq)
			return i;
	size_t lo = i, hi = end;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int a2m_seg_lazy_peek(void *ctx, size_t b, int64_t seq, a2m_peek_at *at, a2m_posting *out)
{
	a2m_seg_lazy *lz = ctx;
	if (b >= lz->nblocks)
		return -1;
	src_block *s = &lz->src[b];
	size_t from = lz->start[b], count = lz->start[b + 1] - from;
	/* Where the last peek of b stopped, when it is below seq; else b's start. */
	if (at->block != b + 1 || at->prev >= seq || at->i > count)
		*at = (a2m_peek_at){.block = b + 1, .prev = s->prev};
	/*
	** Filled while the term may hold it (it is kept decoded for the next
	** query, as a fill would); past that, decoded up to seq and not kept:
	** a term too big to keep its blocks would shed them at its next
	** period, and each query would fault its pages in again.
	*/
	if (!s->filled && a2m_seg_lazy_cost(lz) + count * sizeof(a2m_posting) <= lz->cap &&
	    a2m_seg_lazy_fill(lz, b) != 0)
		return -1;
	if (s->filled) {
		size_t i = find_in(lz->v, from + at->i, from + count, seq);
		if (i == from + count)
			return 0;
		*out = lz->v[i];
		at->i = i - from + 1;
		at->prev = out->seq;
		at->off = SIZE_MAX;  /* no byte offset: a decode starts b again */
		return 1;
	}
#ifdef A2M_TEST_HOOKS
	atomic_fetch_add_explicit(&peeks, 1, memory_order_relaxed);
#endif
	if (at->off > s->bytes)
		*at = (a2m_peek_at){.block = b + 1, .prev = s->prev};
	int rc = a2m_seg_decode_until(s->at, s->bytes, count, seq, &at->i, &at->off, &at->prev, out);
	/* Its entries are rising seqs up to the table's last. */
	if (rc < 0 || at->prev > lz->last[b] || (at->i == count && at->prev != lz->last[b]))
		return corrupt(lz, b);
	return rc;
}

int a2m_seg_lazy_fill_all(a2m_seg_lazy *lz)
{
	for (size_t b = 0; b < lz->nblocks; b++)
		if (a2m_seg_lazy_fill(lz, b) != 0)
			return -1;
	return 0;
}

void a2m_seg_lazy_lend(a2m_seg_lazy *lz, a2m_postings_lent *out)
{
	memset(out, 0, sizeof *out);
	out->v = lz->v;
	out->n = lz->n;
	out->blocks = lz->bounds;
	out->all = lz->all;
	out->nblocks = lz->nblocks;
	out->start = lz->start;
	out->last = lz->last;
	out->fill = a2m_seg_lazy_fill;
	out->peek = a2m_seg_lazy_peek;
	out->ctx = lz;
}

size_t a2m_seg_lazy_cost(const a2m_seg_lazy *lz)
{
	/* The bytes and the tables, and what is decoded. */
	size_t table = sizeof(size_t) + sizeof(int64_t) + sizeof(a2m_tf_bound) + sizeof(src_block);
	return lz->nraw + lz->nblocks * table + lz->decoded * sizeof(a2m_posting);
}

int a2m_seg_lazy_whole(const a2m_seg_lazy *lz)
{
	return lz->decoded == lz->n;
}


void a2m_seg_lazy_shed(a2m_seg_lazy *lz)
{
	/* Whole, its bytes let go: nothing can be decoded again. */
	if (a2m_seg_lazy_whole(lz))
		return;
	a2m_posting *v = malloc((lz->n ? lz->n : 1) * sizeof *v);
	if (!v)
		return;  /* kept as it is */
	size_t kept = 0;
	for (size_t b = 0; b < lz->nblocks; b++) {
		size_t from = lz->start[b], count = lz->start[b + 1] - from;
		if (!lz->src[b].at) {
			/* Decoded when read (no skip table, or the tail): no bytes to decode again. */
			memcpy(v + from, lz->v + from, count * sizeof *v);
			kept += count;
		} else {
			lz->src[b].filled = 0;
		}
	}
	free(lz->v);
	lz->v = v;
	lz->decoded = kept;
#ifdef A2M_TEST_HOOKS
	atomic_fetch_add_explicit(&sheds, 1, memory_order_relaxed);
#endif
}
