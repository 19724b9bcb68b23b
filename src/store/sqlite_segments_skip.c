/*
** sqlite_segments_skip.c — the skip table of a long list in a segment:
** where each block of A2M_POSTINGS_BLOCK entries starts, the last seq in
** it and the bound of its postings (store.h a2m_tf_bound), written before
** the entries, so that a read can bound a block and decode only the blocks
** a query needs to score inside (sqlite_segments.h, "skip tables").
**
** Why at the head of the list and built from the encoded entries: every
** writer of a segment (a commit's flush, a merge whole, ahead or in steps,
** a rebuild) hands a2m_seg_build_add a plain list, and merges copy runs of
** entries as bytes (a2m_seg_merge_lists); one pass over the finished list
** here serves them all, and every decoder that skips the head
** (a2m_seg_list_init) reads the entries as before. A list of the previous
** layout (no head) is read as it always was.
*/
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_segments.h"

/* Appends v to b (room made by the caller). */
static void put(a2m_seg_bytes *b, uint64_t v)
{
	b->n += a2m_seg_put_varint(b->p + b->n, v);
}

/*
** The bound's lengths as deltas (dl[0] <= dl[1] <= dl[2] <= dl[3] always),
** each after the first plus one, 0 for none (UINT32_MAX: no posting of that
** tf, most blocks' dl[1..3]; one byte, not five).
*/
static void put_bound(a2m_seg_bytes *b, const a2m_tf_bound *t)
{
	put(b, t->tf);
	put(b, t->dl[0]);
	for (int i = 1; i < 4; i++)
		put(b, t->dl[i] == UINT32_MAX ? 0 : (uint64_t)t->dl[i] - t->dl[i - 1] + 1);
}

#ifdef A2M_TEST_HOOKS
static int skip_mode_for_tests;

void a2m_seg_skip_for_tests(int mode)
{
	skip_mode_for_tests = mode;
}
#else
#define skip_mode_for_tests 0
#endif

/* a2m_seg_skip_build, the tests' mode aside (mode: a2m_seg_skip_for_tests). */
static int build(const void *data, size_t n, a2m_seg_bytes *out, int mode)
{
	const unsigned char *p = data;
	a2m_seg_list l;
	a2m_seg_entry e;
	int got;
	out->n = 0;
	/* An entry takes a byte at least: fewer bytes, no second block. */
	if (n <= A2M_POSTINGS_BLOCK || p[0] == A2M_SEG_SKIP_MARK || mode == 1)
		return 0;
	/* Blocks' figures first, in a scratch of their own, then the head. */
	a2m_seg_bytes blocks = {0};
	int64_t entries = 0, live = 0, last = 0;
	size_t at = 0, nblocks = 0;
	a2m_tf_bound b;
	a2m_tf_bound_empty(&b);
	a2m_seg_list_init(&l, p, n);
	const unsigned char *from = l.p;
	int rc = 0;
	for (;;) {
		got = a2m_seg_list_next(&l, &e);
		if (got < 0) {
			rc = -2;
			break;
		}
		if (got) {
			entries++;
			if (!e.deleted) {
				live++;
				a2m_tf_bound_add(&b, e.tf, e.dl);
			}
		}
		/* A block closes at every A2M_POSTINGS_BLOCK entries and at the end. */
		if ((got && entries % A2M_POSTINGS_BLOCK == 0) ||
		    (!got && entries % A2M_POSTINGS_BLOCK)) {
			if (a2m_seg_reserve(&blocks, 70) != 0) {
				rc = -1;
				break;
			}
			put(&blocks, (uint64_t)(l.seq - last));
			put(&blocks, (uint64_t)(l.p - from) - at);
			if (mode == 2 && b.tf) {
				/* Too tight: one occurrence at most, four times as long. */
				b.dl[0] = b.dl[0] < UINT32_MAX / 8 ? b.dl[0] * 4 + 16 : b.dl[0];
				b.dl[1] = b.dl[2] = b.dl[3] = UINT32_MAX;
				b.tf = 1;
			}
			put_bound(&blocks, &b);
			at = (size_t)(l.p - from);
			last = l.seq;
			nblocks++;
			a2m_tf_bound_empty(&b);
		}
		if (!got)
			break;
	}
	if (!rc && nblocks < 2) {
		free(blocks.p);
		return 0;
	}
	unsigned char head[40];
	size_t hn = 0;
	if (!rc) {
		hn += a2m_seg_put_varint(head + hn, (uint64_t)entries);
		hn += a2m_seg_put_varint(head + hn, (uint64_t)live);
		hn += a2m_seg_put_varint(head + hn, nblocks);
		if (a2m_seg_reserve(out, 1 + 10 + hn + blocks.n + n) != 0)
			rc = -1;
	}
	if (!rc) {
		out->p[out->n++] = A2M_SEG_SKIP_MARK;
		put(out, hn + blocks.n);
		memcpy(out->p + out->n, head, hn);
		out->n += hn;
		memcpy(out->p + out->n, blocks.p, blocks.n);
		out->n += blocks.n;
		memcpy(out->p + out->n, p, n);
		out->n += n;
	}
	free(blocks.p);
	return rc ? rc : 1;
}

int a2m_seg_skip_build(const void *data, size_t n, a2m_seg_bytes *out)
{
	return build(data, n, out, skip_mode_for_tests);
}

int a2m_seg_skip_open(const void *data, size_t n, a2m_seg_skip *sk)
{
	const unsigned char *p = data, *end = p + n;
	uint64_t hbytes, entries, live, nblocks;
	memset(sk, 0, sizeof *sk);
	if (!n || p[0] != A2M_SEG_SKIP_MARK) {
		sk->entries_at = p;
		sk->end = end;
		return 0;
	}
	p++;
	if (!a2m_seg_varint(&p, end, &hbytes) || hbytes > (uint64_t)(end - p))
		return -1;
	const unsigned char *hend = p + hbytes;
	if (!a2m_seg_varint(&p, hend, &entries) || !a2m_seg_varint(&p, hend, &live) ||
	    !a2m_seg_varint(&p, hend, &nblocks) || live > entries ||
	    nblocks != (entries + A2M_POSTINGS_BLOCK - 1) / A2M_POSTINGS_BLOCK)
		return -1;
	sk->entries = (int64_t)entries;
	sk->live = (int64_t)live;
	sk->nblocks = (size_t)nblocks;
	sk->blocks = p;
	sk->blocks_end = hend;
	sk->entries_at = hend;
	sk->end = end;
	return 1;
}

void a2m_seg_skip_first(const a2m_seg_skip *sk, a2m_seg_skip_iter *it)
{
	memset(it, 0, sizeof *it);
	it->p = sk->blocks;
	it->end = sk->blocks_end;
	it->size = (size_t)(sk->end - sk->entries_at);
	it->left = sk->entries;
}

int a2m_seg_skip_verify(const void *data, size_t n)
{
	a2m_seg_skip sk;
	int got = a2m_seg_skip_open(data, n, &sk);
	if (got <= 0)
		return got;
	/* The head must be the one a2m_seg_skip_build makes of the entries. */
	a2m_seg_bytes again = {0};
	size_t en = (size_t)(sk.end - sk.entries_at);
	int built = build(sk.entries_at, en, &again, 0);
	int ok = built == 1 && again.n == n && memcmp(again.p, data, n) == 0;
	free(again.p);
	if (built == -1)
		return -2;
	return ok ? 1 : -1;
}
