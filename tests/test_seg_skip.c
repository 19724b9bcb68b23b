/*
** test_seg_skip.c — the skip tables of the SQLite segments' lists
** (sqlite_segments_skip.c) and the reading of a term a block at a time
** (sqlite_segments_lazy.c), on bytes, with no SQLite: a table says what its
** entries hold (last seqs, byte spans, bounds, to the value), every decoder
** reads a list with a table as the same list without one, a table made
** wrong is found, and a term's lists read a block at a time give exactly
** the postings their merge gives, or are declined when they cannot.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store/sqlite_segments.h"
#include "store/sqlite_segments_skip.h"

static uint64_t rng_state = 0x5EED5EEDULL;

static uint64_t rng(void)
{
	return check_rand(&rng_state);
}

/* n entries from seq first on, one in `dead` a tombstone (0: none), into b and e[]. */
static void make_list(a2m_seg_bytes *b, a2m_seg_entry *e, size_t n, int64_t first, int dead)
{
	int64_t prev = 0, seq = first;
	b->n = 0;
	for (size_t i = 0; i < n; i++) {
		e[i] = (a2m_seg_entry){.seq = seq, .tf = 1 + (uint32_t)(rng() % 5),
				       .dl = 3 + (uint32_t)(rng() % 300),
				       .deleted = dead && rng() % (uint64_t)dead == 0};
		if (e[i].deleted)
			e[i].tf = e[i].dl = 0;
		CHECK_INT(a2m_seg_put(b, &prev, &e[i]), 0);
		seq += 1 + (int64_t)(rng() % 40);
	}
}

static int same_bound(const a2m_tf_bound *a, const a2m_tf_bound *b)
{
	return a->tf == b->tf && !memcmp(a->dl, b->dl, sizeof a->dl);
}

/* Block number blocks's figures b (at bytes into the entries) against the n entries e[]. */
static void check_block(const a2m_seg_skip_block *b, const a2m_seg_entry *e, size_t n,
			size_t blocks, size_t at)
{
	size_t from = blocks * A2M_POSTINGS_BLOCK, to = from + b->count;
	CHECK_INT(b->count, n - from < A2M_POSTINGS_BLOCK ? n - from : A2M_POSTINGS_BLOCK);
	CHECK_INT(b->last, e[to - 1].seq);
	CHECK_INT(b->prev, from ? e[from - 1].seq : 0);
	CHECK_INT(b->at, at);
	a2m_tf_bound want;
	a2m_tf_bound_empty(&want);
	for (size_t i = from; i < to; i++)
		if (!e[i].deleted)
			a2m_tf_bound_add(&want, e[i].tf, e[i].dl);
	CHECK(same_bound(&b->bound, &want));
}

/* Every length of a list's table, its blocks' figures and its entries decoded. */
static void test_a_table_says_what_its_entries_hold(void)
{
	static a2m_seg_entry e[1000];
	size_t sizes[] = {65, 128, 129, 300, 1000};
	for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++) {
		a2m_seg_bytes plain = {0}, with = {0};
		size_t n = sizes[c];
		make_list(&plain, e, n, 1 + (int64_t)(rng() % 1000), c % 2 ? 7 : 0);
		CHECK_INT(a2m_seg_skip_build(plain.p, plain.n, &with), 1);
		a2m_seg_skip sk;
		CHECK_INT(a2m_seg_skip_open(with.p, with.n, &sk), 1);
		CHECK_INT(sk.entries, (int64_t)n);
		CHECK_INT(sk.nblocks, (n + 63) / 64);
		int64_t live = 0;
		for (size_t i = 0; i < n; i++)
			live += !e[i].deleted;
		CHECK_INT(sk.live, live);
		CHECK_INT((size_t)(sk.end - sk.entries_at), plain.n);
		CHECK(!memcmp(sk.entries_at, plain.p, plain.n));
		a2m_seg_skip_iter it;
		a2m_seg_skip_block b;
		a2m_seg_skip_first(&sk, &it);
		size_t blocks = 0, at = 0;
		int got;
		while ((got = a2m_seg_skip_next(&it, &b)) == 1) {
			size_t from = blocks * A2M_POSTINGS_BLOCK, to = from + b.count;
			check_block(&b, e, n, blocks, at);
			/* The block decodes alone from its bytes and its delta base. */
			a2m_seg_list l;
			a2m_seg_entry x;
			a2m_seg_list_init(&l, sk.entries_at + b.at, b.bytes);
			l.seq = b.prev;
			for (size_t i = from; i < to; i++) {
				CHECK_INT(a2m_seg_list_next(&l, &x), 1);
				CHECK_INT(x.seq, e[i].seq);
				CHECK_INT(x.deleted, e[i].deleted);
			}
			CHECK_INT(a2m_seg_list_next(&l, &x), 0);
			at += b.bytes;
			blocks++;
		}
		CHECK_INT(got, 0);
		CHECK_INT(blocks, sk.nblocks);
		/* Read as a list, the table is passed over. */
		a2m_seg_list l;
		a2m_seg_entry x;
		a2m_seg_list_init(&l, with.p, with.n);
		for (size_t i = 0; i < n; i++) {
			CHECK_INT(a2m_seg_list_next(&l, &x), 1);
			CHECK_INT(x.seq, e[i].seq);
			CHECK_INT(x.tf, e[i].tf);
			CHECK_INT(x.dl, e[i].dl);
		}
		CHECK_INT(a2m_seg_list_next(&l, &x), 0);
		CHECK_INT(a2m_seg_skip_verify(with.p, with.n), 1);
		CHECK_INT(a2m_seg_skip_verify(plain.p, plain.n), 0);
		/* A table is never put on a table. */
		a2m_seg_bytes again = {0};
		CHECK_INT(a2m_seg_skip_build(with.p, with.n, &again), 0);
		free(again.p);
		free(plain.p);
		free(with.p);
	}
}

/* One block or less: no table, the list as it is (and as postings/5 wrote every list). */
static void test_a_short_list_stays_plain(void)
{
	static a2m_seg_entry e[64];
	a2m_seg_bytes plain = {0}, with = {0};
	make_list(&plain, e, 64, 5, 0);
	CHECK_INT(a2m_seg_skip_build(plain.p, plain.n, &with), 0);
	CHECK_INT(with.n, 0);
	a2m_seg_skip sk;
	CHECK_INT(a2m_seg_skip_open(plain.p, plain.n, &sk), 0);
	free(plain.p);
	free(with.p);
}

/* A wrong table (a bound, a last seq) is found; a head that cannot be read is corrupt. */
static void test_a_wrong_table_is_found(void)
{
	static a2m_seg_entry e[200];
	a2m_seg_bytes plain = {0}, with = {0};
	make_list(&plain, e, 200, 1, 0);
	CHECK_INT(a2m_seg_skip_build(plain.p, plain.n, &with), 1);
	a2m_seg_skip sk;
	CHECK_INT(a2m_seg_skip_open(with.p, with.n, &sk), 1);
	size_t head = (size_t)(sk.blocks - with.p), table = (size_t)(sk.blocks_end - sk.blocks);
	/* Every byte of the blocks' figures matters. */
	int found = 0;
	for (size_t i = 0; i < table; i++) {
		unsigned char *p = with.p + head + i, was = *p;
		*p = (unsigned char)(was ^ 1);
		found += a2m_seg_skip_verify(with.p, with.n) == -1;
		*p = was;
	}
	CHECK_INT(found, (int)table);
	CHECK_INT(a2m_seg_skip_verify(with.p, with.n), 1);
	/* A head longer than the list: the list reads as corrupt, not empty. */
	with.p[1] = 0x7f;
	a2m_seg_list l;
	a2m_seg_entry x;
	a2m_seg_list_init(&l, with.p, 3);
	CHECK_INT(a2m_seg_list_next(&l, &x), -1);
	CHECK_INT(a2m_seg_skip_open(with.p, 3, &sk), -1);
	free(plain.p);
	free(with.p);
}

static int collect(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	a2m_seg_bytes *b = ctx;
	if (a2m_seg_reserve(b, sizeof(a2m_posting)) != 0)
		return -1;
	a2m_posting p = {seq, tf, dl};
	memcpy(b->p + b->n, &p, sizeof p);
	b->n += sizeof p;
	return 0;
}

/* A term's lists read a block at a time: the postings their merge gives, block by block. */
static void test_a_term_read_a_block_at_a_time(void)
{
	static a2m_seg_entry e[3][700];
	a2m_seg_bytes plain[3] = {{0}}, with[3] = {{0}};
	const unsigned char *p[3];
	size_t n[3];
	/* An old segment of 700, a short one, a middle one of 130; disjoint, newest lowest. */
	size_t counts[3] = {700, 40, 130};
	int64_t firsts[3] = {30000, 60000, 1};
	for (int i = 0; i < 3; i++) {
		make_list(&plain[i], e[i], counts[i], firsts[i], 0);
		int got = a2m_seg_skip_build(plain[i].p, plain[i].n, &with[i]);
		CHECK_INT(got, counts[i] > 64);
		p[i] = got ? with[i].p : plain[i].p;
		n[i] = got ? with[i].n : plain[i].n;
	}
	a2m_posting tail[70];
	for (int i = 0; i < 70; i++)
		tail[i] = (a2m_posting){100000 + i, 1, 9};
	a2m_seg_lazy *lz = NULL;
	CHECK_INT(a2m_seg_lazy_new(p, n, 3, tail, 70, NULL, &lz), 1);
	if (lz) {
		a2m_postings_lent l;
		a2m_seg_lazy_lend(lz, &l);
		CHECK_INT(l.n, 940);
		CHECK(l.fill != NULL);
		size_t before = a2m_seg_lazy_cost(lz);
		/* Filled out of order, each block's postings as the merge has them. */
		a2m_seg_term_lists tl = {.k = 3};
		for (int i = 0; i < 3; i++)
			tl.p[i] = p[i], tl.n[i] = n[i];
		a2m_seg_bytes merged = {0};
		a2m_seg_list lists[3];
		CHECK_INT(a2m_segments_merge_term(NULL, &tl, collect, &merged, lists), 0);
		CHECK_INT(merged.n / sizeof(a2m_posting), 870);
		const a2m_posting *m = (const a2m_posting *)merged.p;
		a2m_tf_bound all;
		a2m_tf_bound_empty(&all);
		for (size_t b = l.nblocks; b-- > 0;) {
			CHECK_INT(l.fill(l.ctx, b), 0);
			for (size_t i = l.start[b]; i < l.start[b + 1]; i++) {
				const a2m_posting *want = i < 870 ? &m[i] : &tail[i - 870];
				CHECK_INT(l.v[i].seq, want->seq);
				CHECK_INT(l.v[i].tf, want->tf);
				CHECK_INT(l.v[i].dl, want->dl);
				a2m_tf_bound one;
				a2m_tf_bound_empty(&one);
				a2m_tf_bound_add(&one, want->tf, want->dl);
				a2m_tf_bound_add(&all, want->tf, want->dl);
				a2m_tf_bound_merge(&one, &l.blocks[b]);
				CHECK(same_bound(&one, &l.blocks[b]));  /* bounded by its block */
			}
			CHECK_INT(l.last[b], l.v[l.start[b + 1] - 1].seq);
		}
		CHECK(same_bound(&all, &l.all));
		CHECK(a2m_seg_lazy_cost(lz) > before);
		free(merged.p);
		a2m_seg_lazy_free(lz);
	}
	/* Overlapping ranges, or a tombstone: declined (merged instead). */
	lz = NULL;
	const unsigned char *q[2] = {p[0], p[0]};
	size_t qn[2] = {n[0], n[0]};
	CHECK_INT(a2m_seg_lazy_new(q, qn, 2, NULL, 0, NULL, &lz), 0);
	CHECK(lz == NULL);
	/*
	** Ranges that meet only at the last entry of a table's last block (the
	** last seq is known once the table is walked): the tail at the old
	** segment's last seq, or a list with a table that starts before the
	** old one and runs into it.
	*/
	a2m_posting at_last = {e[0][699].seq, 1, 9}, after_last = {e[0][699].seq + 1, 1, 9};
	CHECK_INT(a2m_seg_lazy_new(p, n, 1, &at_last, 1, NULL, &lz), 0);
	CHECK(lz == NULL);
	CHECK_INT(a2m_seg_lazy_new(p, n, 1, &after_last, 1, NULL, &lz), 1);
	a2m_seg_lazy_free(lz);
	lz = NULL;
	a2m_seg_bytes reach = {0}, reach_with = {0};
	static a2m_seg_entry r[130];
	make_list(&reach, r, 130, e[0][0].seq - 10, 0);
	CHECK_INT(a2m_seg_skip_build(reach.p, reach.n, &reach_with), 1);
	const unsigned char *rq[2] = {p[0], reach_with.p};
	size_t rn[2] = {n[0], reach_with.n};
	CHECK_INT(a2m_seg_lazy_new(rq, rn, 2, NULL, 0, NULL, &lz), 0);
	a2m_seg_lazy_free(lz);
	lz = NULL;
	free(reach.p);
	free(reach_with.p);
	a2m_seg_bytes dead = {0}, dead_with = {0};
	static a2m_seg_entry d[300];
	make_list(&dead, d, 300, 1, 50);
	CHECK_INT(a2m_seg_skip_build(dead.p, dead.n, &dead_with), 1);
	int any = 0;
	for (int i = 0; i < 300; i++)
		any |= d[i].deleted;
	const unsigned char *dp = dead_with.p;
	size_t dn = dead_with.n;
	CHECK_INT(a2m_seg_lazy_new(&dp, &dn, 1, NULL, 0, NULL, &lz), any ? 0 : 1);
	a2m_seg_lazy_free(lz);
	/* Plain lists only (the previous layout): merged as before. */
	lz = NULL;
	const unsigned char *pp = plain[0].p;
	CHECK_INT(a2m_seg_lazy_new(&pp, &plain[0].n, 1, NULL, 0, NULL, &lz), 0);
	/* A block whose bytes are not what its table says fails to fill. */
	const unsigned char *wp = with[0].p;
	lz = NULL;
	a2m_seg_skip sk;
	CHECK_INT(a2m_seg_skip_open(with[0].p, with[0].n, &sk), 1);
	unsigned char *entries = (unsigned char *)sk.entries_at;
	entries[0] ^= 0x7e;  /* the first seq moves */
	CHECK_INT(a2m_seg_lazy_new(&wp, &with[0].n, 1, NULL, 0, NULL, &lz), 1);
	if (lz) {
		CHECK_INT(a2m_seg_lazy_fill(lz, 0), -1);
		a2m_seg_lazy_free(lz);
	}
	for (int i = 0; i < 3; i++) {
		free(plain[i].p);
		free(with[i].p);
	}
	free(dead.p);
	free(dead_with.p);
}

/*
** A width drawn for a varint: mostly one byte (as in a frequent word's
** list), some two, a few three or more, so that every decoder meets the
** usual entry (a2m_seg_decode_block's one test) beside the others.
*/
static uint64_t draw_width(uint64_t one, uint64_t two, uint64_t more)
{
	uint64_t r = rng() % 8;
	if (r < 5)
		return one + rng() % 8;
	if (r < 7)
		return two + rng() % 64;
	return more + rng() % 100000;
}

/*
** Entries of every width decode as a2m_seg_list_next reads them, whole or
** from any entry on; a2m_seg_decode_until finds what a search finds, going
** on from where it stopped; and bytes cut short, a tombstone, or a count
** that does not end the bytes fail, never read past the bytes (each case
** in a buffer of its own exact size: ASan).
*/
static void test_blocks_decode_entries_of_every_width(void)
{
	enum { N = 600 };
	static a2m_seg_entry e[N];
	static size_t off[N + 1];
	static a2m_posting out[N];
	a2m_seg_bytes b = {0};
	int64_t prev = 0, seq = 0;
	for (size_t i = 0; i < N; i++) {
		/* Deltas of 1 and 2 bytes (below 64, below 8 192), and longer. */
		seq += 1 + (int64_t)draw_width(0, 64, 8192);
		e[i] = (a2m_seg_entry){.seq = seq, .tf = 1 + (uint32_t)draw_width(0, 127, 300),
				       .dl = (uint32_t)draw_width(1, 127, 16000)};
		off[i] = b.n;
		CHECK_INT(a2m_seg_put(&b, &prev, &e[i]), 0);
	}
	off[N] = b.n;
	int64_t last = 0;
	CHECK_INT(a2m_seg_decode_block(b.p, b.n, 0, out, N, &last), 0);
	CHECK_INT(last, e[N - 1].seq);
	for (size_t i = 0; i < N; i++) {
		CHECK_INT(out[i].seq, e[i].seq);
		CHECK_INT(out[i].tf, e[i].tf);
		CHECK_INT(out[i].dl, e[i].dl);
	}
	for (int round = 0; round < 200; round++) {
		size_t a = (size_t)(rng() % N), z = a + 1 + (size_t)(rng() % (N - a));
		int64_t from = a ? e[a - 1].seq : 0;
		size_t n = off[z] - off[a];
		/* Its own buffer, exactly its size. */
		unsigned char *p = malloc(n);
		CHECK(p != NULL);
		if (!p)
			return;
		memcpy(p, b.p + off[a], n);
		CHECK_INT(a2m_seg_decode_block(p, n, from, out, z - a, &last), 0);
		CHECK_INT(last, e[z - 1].seq);
		for (size_t i = a; i < z; i++)
			CHECK(out[i - a].seq == e[i].seq && out[i - a].tf == e[i].tf &&
			      out[i - a].dl == e[i].dl);
		/* Rising seqs asked in turn: each the first entry at or after it. */
		size_t at = 0, byte = 0;
		int64_t pv = from;
		for (int64_t want = from + 1; want <= e[z - 1].seq + 1;
		     want += 1 + (int64_t)(rng() % 3000)) {
			a2m_posting got = {0};
			size_t j = a;
			while (j < z && e[j].seq < want)
				j++;
			/* Asked again for what the last call passed: from the start (as a peek). */
			if (pv >= want) {
				at = byte = 0;
				pv = from;
			}
			int rc = a2m_seg_decode_until(p, n, z - a, want, &at, &byte, &pv, &got);
			CHECK_INT(rc, j < z ? 1 : 0);
			if (j < z)
				CHECK(got.seq == e[j].seq && got.tf == e[j].tf && got.dl == e[j].dl);
			if (rc != 1)
				break;
		}
		/* One entry fewer than the bytes hold, or the bytes cut short: corrupt. */
		if (z - a > 1)
			CHECK_INT(a2m_seg_decode_block(p, n, from, out, z - a - 1, &last), -1);
		for (size_t cut = 1; cut <= 2 && cut <= n; cut++) {
			unsigned char *q = malloc(n - cut ? n - cut : 1);
			CHECK(q != NULL);
			if (!q)
				break;
			memcpy(q, p, n - cut);
			CHECK_INT(a2m_seg_decode_block(q, n - cut, from, out, z - a, &last), -1);
			at = byte = 0;
			pv = from;
			a2m_posting got;
			CHECK_INT(a2m_seg_decode_until(q, n - cut, z - a, INT64_MAX, &at, &byte, &pv, &got),
				  -1);
			free(q);
		}
		/* A tombstone where a one-byte delta was: corrupt, not a delta. */
		for (size_t i = a; i < z; i++)
			if (b.p[off[i]] < 0x80) {
				p[off[i] - off[a]] |= 1;
				CHECK_INT(a2m_seg_decode_block(p, n, from, out, z - a, &last), -1);
				at = byte = 0;
				pv = from;
				a2m_posting got;
				CHECK_INT(a2m_seg_decode_until(p, n, z - a, INT64_MAX, &at, &byte, &pv,
							       &got), -1);
				break;
			}
		free(p);
	}
	free(b.p);
}

/*
** Walks the blocks' figures t[0..n) (copied into a buffer of exactly n
** bytes: ASan) as a table of left entries: the blocks read before it
** stopped into *blocks, the last figures into *last; returns the last
** answer of a2m_seg_skip_next.
*/
static int walk_table(const unsigned char *t, size_t n, int64_t left, size_t *blocks,
		      a2m_seg_skip_block *last)
{
	unsigned char *p = malloc(n ? n : 1);
	CHECK(p != NULL);
	if (!p)
		return -9;
	memcpy(p, t, n);
	a2m_seg_skip_iter it = {.p = p, .end = p + n, .left = left, .size = SIZE_MAX / 2};
	a2m_seg_skip_block b;
	int got;
	*blocks = 0;
	while ((got = a2m_seg_skip_next(&it, &b)) == 1) {
		++*blocks;
		*last = b;
	}
	free(p);
	return got;
}

/* Appends a block's seven figures (as build writes them) to b. */
static void put_block(a2m_seg_bytes *b, const uint64_t f[7])
{
	CHECK_INT(a2m_seg_reserve(b, 70), 0);
	for (int i = 0; i < 7; i++)
		b->n += a2m_seg_put_varint(b->p + b->n, f[i]);
}

/*
** A long table, whose figures are read away from its end without end
** checks (a2m_seg_skip_next), says what its entries hold at every width
** of varint, as a short one does; and a block's figures that are not what
** build writes (a varint of 11 bytes, a length past the largest) are
** refused wherever they stand: far from the table's end, or at it; a table
** cut short is never read past (each table in a buffer of its own exact
** size: ASan).
*/
static void test_a_long_table_reads_as_a_short_one(void)
{
	enum { N = 8000 };
	static a2m_seg_entry e[N];
	a2m_seg_bytes plain = {0}, with = {0};
	int64_t prev = 0, seq = 0;
	for (size_t i = 0; i < N; i++) {
		seq += 1 + (int64_t)draw_width(0, 64, 8192);
		e[i] = (a2m_seg_entry){.seq = seq, .tf = 1 + (uint32_t)draw_width(0, 127, 300),
				       .dl = (uint32_t)draw_width(1, 127, 16000)};
		CHECK_INT(a2m_seg_put(&plain, &prev, &e[i]), 0);
	}
	CHECK_INT(a2m_seg_skip_build(plain.p, plain.n, &with), 1);
	a2m_seg_skip sk;
	CHECK_INT(a2m_seg_skip_open(with.p, with.n, &sk), 1);
	size_t tn = (size_t)(sk.blocks_end - sk.blocks);
	CHECK(tn > 10 * 70);  /* most blocks read far from the end */
	unsigned char *t = malloc(tn);
	CHECK(t != NULL);
	if (!t)
		return;
	memcpy(t, sk.blocks, tn);
	a2m_seg_skip_iter it = {.p = t, .end = t + tn, .left = N, .size = plain.n};
	a2m_seg_skip_block b;
	size_t blocks = 0, at = 0;
	int got;
	while ((got = a2m_seg_skip_next(&it, &b)) == 1) {
		check_block(&b, e, N, blocks, at);
		at += b.bytes;
		blocks++;
	}
	CHECK_INT(got, 0);
	CHECK_INT(blocks, sk.nblocks);
	CHECK_INT(at, plain.n);
	free(t);

	/* Figures written by hand: a good block, and two that build never writes. */
	const uint64_t good[7] = {300000, 20, 2, 100, 1, 5, 0};
	const uint64_t wraps[7] = {300, 20, 2, 100, UINT64_MAX - 1, 0, 0};
	a2m_seg_bytes tb = {0};
	a2m_seg_skip_block last;
	for (int bad = 0; bad < 2; bad++)
		for (int far = 0; far < 2; far++) {
			tb.n = 0;
			put_block(&tb, good);
			if (bad == 0) {
				/* Ten bytes that go on, and an eleventh. */
				CHECK_INT(a2m_seg_reserve(&tb, 11), 0);
				memset(tb.p + tb.n, 0x80, 10);
				tb.p[tb.n + 10] = 1;
				tb.n += 11;
				for (int i = 0; i < 6; i++)
					tb.p[tb.n++] = 1;
			} else {
				put_block(&tb, wraps);
			}
			for (int i = 0; far && i < 12; i++)
				put_block(&tb, good);
			CHECK_INT(walk_table(tb.p, tb.n, 14 * A2M_POSTINGS_BLOCK, &blocks, &last), -1);
			CHECK_INT(blocks, 1);
			CHECK_INT(last.last, 300000);
		}
	/* A table cut short inside its last varint: refused, not read past its end. */
	tb.n = 0;
	put_block(&tb, good);
	put_block(&tb, good);
	tb.p[tb.n - 1] = 0x85;
	CHECK_INT(walk_table(tb.p, tb.n, 2 * A2M_POSTINGS_BLOCK, &blocks, &last), -1);
	CHECK_INT(blocks, 1);
	/* The good ones alone, every one read, far from the end or near it. */
	tb.n = 0;
	for (int i = 0; i < 12; i++)
		put_block(&tb, good);
	CHECK_INT(walk_table(tb.p, tb.n, 12 * A2M_POSTINGS_BLOCK, &blocks, &last), 0);
	CHECK_INT(blocks, 12);
	CHECK_INT(last.last, 12 * 300000);
	CHECK(last.bound.tf == 2 && last.bound.dl[0] == 100 && last.bound.dl[1] == 100 &&
	      last.bound.dl[2] == 104 && last.bound.dl[3] == UINT32_MAX);
	free(tb.p);
	free(plain.p);
	free(with.p);
}

int main(void)
{
	static const test_case tests[] = {
		TEST(test_a_table_says_what_its_entries_hold),
		TEST(test_a_short_list_stays_plain),
		TEST(test_a_wrong_table_is_found),
		TEST(test_a_term_read_a_block_at_a_time),
		TEST(test_blocks_decode_entries_of_every_width),
		TEST(test_a_long_table_reads_as_a_short_one),
		{NULL, NULL},
	};
	return run_tests(tests);
}
