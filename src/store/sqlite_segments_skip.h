/*
** sqlite_segments_skip.h — a skip table's walk a block at a time
** (a2m_seg_skip_next; the table's layout: sqlite_segments_skip.c), inline
** for the readers of a long list: a2m_seg_lazy_new walks the whole table
** each time a long list is read from SQLite, and with a call a block and
** one a varint that was 8% of a 10M recall's instructions.
*/
#ifndef A2M_SQLITE_SEGMENTS_SKIP_H
#define A2M_SQLITE_SEGMENTS_SKIP_H

#include "store/sqlite_segments.h"

/*
** A varint where at least 10 bytes remain, so no end to check: 1, or 0
** when it runs past 10 bytes (as a2m_seg_varint answers), having read 10
** bytes at most. One and two bytes, most of a table's, without a loop.
*/
static inline int a2m_seg_varint_near(const unsigned char **p, uint64_t *v)
{
	const unsigned char *q = *p;
	if (q[0] < 0x80) {
		*v = q[0];
		*p = q + 1;
		return 1;
	}
	if (q[1] < 0x80) {
		*v = (uint64_t)(q[0] & 0x7f) | (uint64_t)q[1] << 7;
		*p = q + 2;
		return 1;
	}
	return a2m_seg_varint(p, q + 10, v);
}

/*
** A block's bound from its five varints f[] (tf, the first length, then
** each next length as a delta plus one, 0 for none: sqlite_segments_skip.c,
** put_bound): 1, or 0 when they are not a bound the build writes.
*/
static inline int a2m_seg_skip_bound(const uint64_t *f, a2m_tf_bound *t)
{
	if (f[0] > UINT32_MAX || f[1] > UINT32_MAX)
		return 0;
	uint64_t acc = f[1];
	t->tf = (uint32_t)f[0];
	t->dl[0] = (uint32_t)acc;
	for (int i = 1; i < 4; i++) {
		uint64_t v = f[i + 1];
		if (!v) {
			t->dl[i] = UINT32_MAX;
			acc = UINT32_MAX;
			continue;
		}
		/* A length after none, or past the largest: not a bound the build writes. */
		if (acc == UINT32_MAX || v > UINT32_MAX || acc + v - 1 >= UINT32_MAX)
			return 0;
		acc += v - 1;
		t->dl[i] = (uint32_t)acc;
	}
	return 1;
}

/* A block's figures: seven varints (seq delta, bytes, the bound's five). */
#define A2M_SEG_SKIP_VARINTS 7

/* The next block of the table into *b: 1, 0 after the last, -1 when the table is corrupt. */
static inline int a2m_seg_skip_next(a2m_seg_skip_iter *it, a2m_seg_skip_block *b)
{
	uint64_t f[A2M_SEG_SKIP_VARINTS] = {0};
	int ok = 1;
	if (it->left <= 0)
		return 0;
	/*
	** Away from the table's end no end checks: seven varints read 70 bytes
	** at most. Written out, not a loop (the compiler keeps the loop).
	*/
	if (it->end - it->p >= 10 * A2M_SEG_SKIP_VARINTS) {
		const unsigned char *q = it->p;
		ok &= a2m_seg_varint_near(&q, &f[0]);
		ok &= a2m_seg_varint_near(&q, &f[1]);
		ok &= a2m_seg_varint_near(&q, &f[2]);
		ok &= a2m_seg_varint_near(&q, &f[3]);
		ok &= a2m_seg_varint_near(&q, &f[4]);
		ok &= a2m_seg_varint_near(&q, &f[5]);
		ok &= a2m_seg_varint_near(&q, &f[6]);
		it->p = q;
	} else {
		for (int i = 0; ok && i < A2M_SEG_SKIP_VARINTS; i++)
			ok = a2m_seg_varint(&it->p, it->end, &f[i]);
	}
	uint64_t dseq = f[0], dbytes = f[1];
	if (!ok || !a2m_seg_skip_bound(f + 2, &b->bound) || dseq == 0 ||
	    dseq > (uint64_t)(INT64_MAX - it->last) || dbytes == 0 || dbytes > it->size - it->at)
		return -1;
	b->prev = it->last;
	b->last = it->last + (int64_t)dseq;
	b->at = it->at;
	b->bytes = (size_t)dbytes;
	b->count = it->left < A2M_POSTINGS_BLOCK ? (size_t)it->left : A2M_POSTINGS_BLOCK;
	it->last = b->last;
	it->at += (size_t)dbytes;
	it->left -= (int64_t)b->count;
	return 1;
}

#endif
