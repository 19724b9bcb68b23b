/*
** sqlite_segments_codec.c — how a segment's lists are encoded, read and
** merged, with no SQL: the half of the segments (sqlite_segments.h) that
** works on bytes. sqlite_segments.c stores and finds them.
*/
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_segments.h"

/* ---- encoding ---- */

/*
** Makes the array *p (of *cap items of size bytes) hold at least need
** items, doubling from 64. Returns 0, or -1 when memory runs out (*p kept).
** p is the address of any object pointer, copied with memcpy so no pointer
** is read through a void ** (strict aliasing).
*/
int a2m_seg_grow(void *p, size_t *cap, size_t need, size_t size)
{
	void *old, *q;
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 64;
	while (n < need)
		n *= 2;
	memcpy(&old, p, sizeof old);
	if (!(q = realloc(old, n * size)))
		return -1;
	memcpy(p, &q, sizeof q);
	*cap = n;
	return 0;
}

int a2m_seg_reserve(a2m_seg_bytes *b, size_t more)
{
	return a2m_seg_grow(&b->p, &b->cap, b->n + more, 1);
}

/* Writes v as a LEB128 varint at p; returns the bytes written (at most 10). */
static inline size_t put_varint(unsigned char *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (unsigned char)v;
	return n;
}

size_t a2m_seg_put_varint(unsigned char *p, uint64_t v)
{
	return put_varint(p, v);
}

/* Reads a varint into *v: 1, or 0 when the bytes end or run too long (inline: sqlite_segments.h). */
#define get_varint a2m_seg_varint

int a2m_seg_get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	return get_varint(p, end, v);
}

/*
** The usual entry of a list at p: a delta below 8 192 in one or two bytes
** (not a tombstone), tf and dl below 128 in one byte each, and the seq far
** from INT64_MAX. Answers the bytes of its delta (1 or 2) with the delta
** in *delta, or 0 for any other entry (the caller reads it varint by
** varint, with every check). One test for the three varints: a peek at
** 10M records decodes tens of thousands of entries a query.
*/
static inline size_t usual_entry(const unsigned char *p, const unsigned char *end, int64_t prev,
				 uint64_t *delta)
{
	if (end - p < 4 || prev > INT64_MAX - 0x2000) {
		if (end - p < 3 || prev > INT64_MAX - 0x40 || ((p[0] & 0x81) | ((p[1] | p[2]) & 0x80)))
			return 0;
		*delta = p[0] >> 1;
		return 1;
	}
	size_t h = p[0] & 0x80 ? 2 : 1;
	uint64_t head = h == 1 ? p[0] : (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
	if ((head & 1) || ((p[h - 1] | p[h] | p[h + 1]) & 0x80))
		return 0;
	*delta = head >> 1;
	return h;
}

int a2m_seg_decode_block(const unsigned char *p, size_t n, int64_t prev, a2m_posting *out,
			 size_t count, int64_t *last)
{
	/*
	** One call a block, the varints inline: a block-max query at 10M
	** records fills a block of a frequent word's list for nearly every
	** posting of its rarest word, and a call per entry
	** (a2m_seg_list_next) was half of the filling.
	*/
	const unsigned char *end = p + n;
	uint64_t head, tf, dl;
	for (size_t i = 0; i < count; i++) {
		size_t h = usual_entry(p, end, prev, &head);
		if (h) {
			prev += (int64_t)head;
			out[i] = (a2m_posting){prev, p[h], p[h + 1]};
			p += h + 2;
			continue;
		}
		if (!get_varint(&p, end, &head) || (head & 1) || !get_varint(&p, end, &tf) ||
		    !get_varint(&p, end, &dl) || tf > UINT32_MAX || dl > UINT32_MAX ||
		    (head >> 1) > (uint64_t)(INT64_MAX - prev))
			return -1;
		prev += (int64_t)(head >> 1);
		out[i] = (a2m_posting){prev, (uint32_t)tf, (uint32_t)dl};
	}
	*last = prev;
	return p == end ? 0 : -1;
}

int a2m_seg_decode_until(const unsigned char *p, size_t n, size_t count, int64_t seq, size_t *i,
			 size_t *off, int64_t *prev, a2m_posting *out)
{
	/* As a2m_seg_decode_block decodes, stopping at the entry asked for. */
	const unsigned char *q = p + *off, *end = p + n;
	int64_t s = *prev;
	uint64_t head, tf, dl;
	if (*off > n)
		return -1;
	for (size_t j = *i; j < count; j++) {
		size_t h = usual_entry(q, end, s, &head);
		if (h) {
			s += (int64_t)head;
			tf = q[h];
			dl = q[h + 1];
			q += h + 2;
		} else {
			if (!get_varint(&q, end, &head) || (head & 1) || !get_varint(&q, end, &tf) ||
			    !get_varint(&q, end, &dl) || tf > UINT32_MAX || dl > UINT32_MAX ||
			    (head >> 1) > (uint64_t)(INT64_MAX - s))
				return -1;
			s += (int64_t)(head >> 1);
		}
		if (s >= seq) {
			*i = j + 1;
			*off = (size_t)(q - p);
			*prev = s;
			*out = (a2m_posting){s, (uint32_t)tf, (uint32_t)dl};
			/* The block's last entry ends its bytes. */
			return j + 1 < count || q == end ? 1 : -1;
		}
	}
	*i = count;
	*off = (size_t)(q - p);
	*prev = s;
	return q == end ? 0 : -1;
}

int a2m_seg_next_in_block(const unsigned char **p, const unsigned char *end,
			  const unsigned char **term, size_t *tlen, const unsigned char **list,
			  size_t *lsize)
{
	uint64_t n;
	if (*p == end)
		return 0;
	if (!get_varint(p, end, &n) || n > (uint64_t)(end - *p))
		return -1;
	*term = *p;
	*tlen = (size_t)n;
	*p += n;
	if (!get_varint(p, end, &n) || n > (uint64_t)(end - *p))
		return -1;
	*list = *p;
	*lsize = (size_t)n;
	*p += n;
	return 1;
}

int a2m_seg_cmp_terms(const unsigned char *a, size_t an, const unsigned char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	if (c)
		return c;
	return an < bn ? -1 : (an > bn);
}

int a2m_seg_put(a2m_seg_bytes *b, int64_t *prev, const a2m_seg_entry *e)
{
	if (b->n + 30 > b->cap && a2m_seg_reserve(b, 30) != 0)
		return -1;
	uint64_t delta = (uint64_t)(e->seq - *prev);
	b->n += put_varint(b->p + b->n, delta << 1 | (e->deleted ? 1u : 0u));
	if (!e->deleted) {
		b->n += put_varint(b->p + b->n, e->tf);
		b->n += put_varint(b->p + b->n, e->dl);
	}
	*prev = e->seq;
	return 0;
}

void a2m_seg_list_init(a2m_seg_list *l, const void *p, size_t n)
{
	l->p = p;
	l->end = l->p + n;
	l->seq = 0;
	l->corrupt = 0;
	/* A skip table first (sqlite_segments_skip.c): the entries follow it. */
	if (n && l->p[0] == A2M_SEG_SKIP_MARK) {
		uint64_t hbytes;
		l->p++;
		if (!get_varint(&l->p, l->end, &hbytes) || hbytes > (uint64_t)(l->end - l->p)) {
			l->p = l->end;
			l->corrupt = 1;
			return;
		}
		l->p += hbytes;
	}
}

int a2m_seg_list_next(a2m_seg_list *l, a2m_seg_entry *e)
{
	uint64_t head, tf = 0, dl = 0;
	if (l->p == l->end)
		return l->corrupt ? -1 : 0;
	if (!get_varint(&l->p, l->end, &head))
		return -1;
	e->deleted = (int)(head & 1);
	if (!e->deleted && (!get_varint(&l->p, l->end, &tf) || !get_varint(&l->p, l->end, &dl) ||
			    tf > UINT32_MAX || dl > UINT32_MAX))
		return -1;
	l->seq += (int64_t)(head >> 1);
	e->seq = l->seq;
	e->tf = (uint32_t)tf;
	e->dl = (uint32_t)dl;
	return 1;
}

/*
** Moves l past its entries whose seq is below before, stopping at a
** tombstone whose seq is above floor (one the merge drops: so that each
** passed entry would be kept as it is): returns how many it passed (l->seq
** the last's), or -1 when the bytes are corrupt (as a2m_seg_list_next
** would find them).
*/
static int64_t skip_run(a2m_seg_list *l, int64_t before, int64_t floor)
{
	int64_t count = 0;
	uint64_t head, tf, dl;
	for (const unsigned char *p = l->p; p < l->end; count++) {
		if (!get_varint(&p, l->end, &head))
			return -1;
		int64_t seq = l->seq + (int64_t)(head >> 1);
		if (seq >= before || (head & 1 && seq > floor))
			break;
		if (!(head & 1) && (!get_varint(&p, l->end, &tf) ||
				    !get_varint(&p, l->end, &dl) || tf > UINT32_MAX ||
				    dl > UINT32_MAX))
			return -1;
		l->p = p;
		l->seq = seq;
	}
	return count;
}

int a2m_seg_merge_lists(a2m_seg_list *lists, size_t n, int64_t tombstone_floor,
			a2m_seg_emit emit, a2m_seg_copy copy, void *ctx, int *corrupt)
{
	a2m_seg_entry head[A2M_SEG_MAX_LISTS];
	int live[A2M_SEG_MAX_LISTS];
	*corrupt = 1;
	if (n > A2M_SEG_MAX_LISTS)
		return -1;
	/* A term in one list only (most, in a merge): its entries as they are. */
	if (copy && n == 1) {
		const unsigned char *from = lists[0].p;
		int64_t count = skip_run(&lists[0], INT64_MAX, tombstone_floor);
		int rc = 0;
		if (count < 0)
			return -1;
		if (count && (rc = copy(from, (size_t)(lists[0].p - from), count, lists[0].seq,
					ctx)) < 0) {
			*corrupt = 0;
			return rc;
		}
	}
	for (size_t i = 0; i < n; i++)
		if ((live[i] = a2m_seg_list_next(&lists[i], &head[i])) < 0)
			return -1;
	*corrupt = 0;
	for (;;) {
		/* The smallest seq, the newest list holding it, and the smallest
		** seq of the other lists (a tie when equal). */
		size_t win = n;
		int64_t other = INT64_MAX;
		for (size_t i = 0; i < n; i++) {
			if (!live[i])
				continue;
			if (win != n && head[i].seq > head[win].seq) {
				other = head[i].seq < other ? head[i].seq : other;
				continue;
			}
			if (win != n)
				other = head[win].seq < other ? head[win].seq : other;
			win = i;
		}
		if (win == n)
			return 0;
		/* Then the run of win's entries before any other list's: segments
		** are mostly disjoint ranges of seq (records are added in seq
		** order), so most entries are taken here, not by a scan of n heads. */
		int tie = head[win].seq == other;
		do {
			a2m_seg_entry e = head[win];
			int dropped = e.deleted && e.seq > tombstone_floor;
			int rc = dropped ? 0 : emit(&e, ctx);
			if (rc < 0)
				return rc;
			/* The entries after an emitted one, up to other, as they are. */
			if (copy && !tie && !dropped) {
				const unsigned char *from = lists[win].p;
				int64_t count = skip_run(&lists[win], other, tombstone_floor);
				if (count < 0) {
					*corrupt = 1;
					return -1;
				}
				if (count && (rc = copy(from, (size_t)(lists[win].p - from), count,
							lists[win].seq, ctx)) < 0)
					return rc;
			}
			for (size_t i = tie ? 0 : win; i < (tie ? n : win + 1); i++)
				if (live[i] && head[i].seq == e.seq &&
				    (live[i] = a2m_seg_list_next(&lists[i], &head[i])) < 0) {
					*corrupt = 1;
					return -1;
				}
		} while (!tie && live[win] && head[win].seq < other);
	}
}
