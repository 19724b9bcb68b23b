/*
** test_walks.c — BM25's two document-at-a-time walks (rank/blockmax.h:
** MaxScore over windows, maxscore.c; WAND with block-max, blockmax.c) on
** made-up postings lists, against brute force: every record a walk keeps
** has the complete sum to the bit, every record it leaves out sums to at
** most the bound it reports. tests/test_prune.c checks the same through
** the stores and the stack.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rank/accumulator.h"
#include "rank/blockmax.h"
#include "store/store.h"

static uint64_t rng_state;

static uint64_t rng(void)
{
	return check_rand(&rng_state);
}

static double unif(void)
{
	return (double)(rng() >> 11) / 9007199254740992.0;
}

/* A list lent a block at a time: v poisoned until fill copies a block in. */
typedef struct lazy_list {
	const a2m_posting *real;
	a2m_posting       *v;
	size_t             nblocks, start[64];
	int64_t            last[64];
	a2m_tf_bound       bounds[64];
} lazy_list;

static int lazy_fill(void *ctx, size_t b)
{
	lazy_list *z = ctx;
	memcpy(z->v + z->start[b], z->real + z->start[b],
	       (z->start[b + 1] - z->start[b]) * sizeof *z->v);
	return 0;
}

/*
** store.h's peek for a lazy_list: block b searched in the real postings,
** from where the last peek of b stopped; v stays poisoned (a walk reading
** v for a posting it peeked sees seq -1, tf 1000).
*/
static size_t peek_calls;

static int lazy_peek(void *ctx, size_t b, int64_t seq, a2m_peek_at *at, a2m_posting *out)
{
	lazy_list *z = ctx;
	peek_calls++;
	size_t from = z->start[b], count = z->start[b + 1] - from;
	if (at->block != b + 1 || at->prev >= seq)
		*at = (a2m_peek_at){.block = b + 1};
	for (size_t i = at->i; i < count; i++)
		if (z->real[from + i].seq >= seq) {
			*out = z->real[from + i];
			at->i = i + 1;
			at->prev = out->seq;
			return 1;
		}
	at->i = count;
	return 0;
}

/*
** Random keys over seqs spread past several windows (gaps far wider than
** MaxScore's window among them), a word's keys sometimes sharing a list,
** some lists lent a block at a time (blocks of random sizes, their
** postings unreadable until filled, or peeked without filling); both
** walks, MaxScore with and without peeks, at random admit and floor:
** every record they keep has the brute-force sum to the bit, and every
** record they leave out sums to at most *rest.
*/
static void test_walks_against_brute_force(void)
{
	enum { KEYS = 6, MAXN = 1500 };
	static a2m_posting real[KEYS][MAXN], poisoned[KEYS][MAXN];
	static lazy_list lz[KEYS];
	static a2m_tf_bound all[KEYS];
	size_t left[3] = {0, 0, 0};  /* records each walk left out */
	rng_state = 91;
	for (int round = 0; round < 60; round++) {
		a2m_bmw_key keys[KEYS];
		size_t nkeys = 2 + rng() % (KEYS - 1), words = 0, src[KEYS];
		double k0 = 0.3, k1 = 0.9 / (4 + (double)(rng() % 8));
		for (size_t k = 0; k < nkeys; k++) {
			int share = k && rng() % 4 == 0;
			src[k] = share ? src[k - 1] : k;
			if (!share)
				words++;
			keys[k] = (a2m_bmw_key){.word = (uint32_t)words, .scale = 1 + unif() * 4};
			if (share) {
				keys[k].v = keys[k - 1].v, keys[k].n = keys[k - 1].n;
				keys[k].all = keys[k - 1].all;
				keys[k].word = keys[k - 1].word;
				if (keys[k - 1].fill) {
					keys[k].fill = keys[k - 1].fill, keys[k].ctx = keys[k - 1].ctx;
					keys[k].nblocks = keys[k - 1].nblocks, keys[k].start = keys[k - 1].start;
					keys[k].last = keys[k - 1].last, keys[k].blocks = keys[k - 1].blocks;
				}
				continue;
			}
			size_t n = 1 + rng() % (rng() % 3 ? MAXN : 40);
			int64_t seq = (int64_t)(rng() % 50);
			for (size_t i = 0; i < n; i++) {
				/* Mostly dense, now and then a jump past a window or two. */
				seq += rng() % 50 == 0 ? 3000 + (int64_t)(rng() % 9000) : 1 + (int64_t)(rng() % 12);
				real[k][i] = (a2m_posting){.seq = seq, .tf = 1 + (uint32_t)(rng() % 100 == 0 ? 5 : rng() % 3),
							   .dl = 2 + (uint32_t)(rng() % 20)};
			}
			keys[k].n = n;
			keys[k].v = real[k];
			/* The list's bound, as an index lends it (a list read a block
			** at a time cannot be bounded by a pass over it). */
			a2m_tf_bound_empty(&all[k]);
			for (size_t i = 0; i < n; i++)
				a2m_tf_bound_add(&all[k], real[k][i].tf, real[k][i].dl);
			keys[k].all = &all[k];
			if (n > 64 && rng() % 2) {
				/* Lent a block at a time, blocks of 1..100 postings. */
				lazy_list *z = &lz[k];
				z->real = real[k];
				z->v = poisoned[k];
				for (size_t i = 0; i < n; i++)
					z->v[i] = (a2m_posting){.seq = -1, .tf = 1000, .dl = 0};
				z->nblocks = 0;
				for (size_t at = 0; at < n && z->nblocks < 63;) {
					size_t len = 1 + rng() % 100;
					if (len > n - at || z->nblocks == 62)
						len = n - at;
					z->start[z->nblocks] = at;
					a2m_tf_bound_empty(&z->bounds[z->nblocks]);
					for (size_t i = at; i < at + len; i++)
						a2m_tf_bound_add(&z->bounds[z->nblocks], real[k][i].tf, real[k][i].dl);
					at += len;
					z->last[z->nblocks++] = real[k][at - 1].seq;
				}
				z->start[z->nblocks] = n;
				keys[k].v = z->v;
				keys[k].fill = lazy_fill, keys[k].ctx = z;
				keys[k].nblocks = z->nblocks, keys[k].start = z->start;
				keys[k].last = z->last, keys[k].blocks = z->bounds;
			}
		}
		size_t admit = 1 + rng() % 40;
		double floor = rng() % 2 ? 1.0 : 0.5 + unif() / 2;
		for (int walk = 0; walk < 3; walk++) {
			for (size_t k = 0; k < nkeys; k++)
				if (keys[k].fill) {
					for (size_t i = 0; i < keys[k].n; i++)
						poisoned[src[k]][i] = (a2m_posting){.seq = -1, .tf = 1000, .dl = 0};
					/* The third: MaxScore probing through peeks. */
					keys[k].peek = walk == 2 ? lazy_peek : NULL;
				}
			a2m_bmw w = {0};
			a2m_acc acc = {0};
			double rest = -1;
			w.walk = walk == 1 ? A2M_BMW_WAND : A2M_BMW_MAXSCORE;
			CHECK_INT(a2m_acc_begin(&acc, 64), 0);
			CHECK_INT(a2m_bmw_run(&w, keys, nkeys, k0, k1, admit, floor, &acc, &rest), 0);
			/* Brute force: every record of every key, summed in key order. */
			a2m_acc every = {0};
			CHECK_INT(a2m_acc_begin(&every, 4096), 0);
			for (size_t k = 0; k < nkeys; k++)
				for (size_t i = 0; i < keys[k].n; i++) {
					const a2m_posting *p = &real[src[k]][i];
					a2m_acc_entry *e = a2m_acc_get(&every, p->seq);
					CHECK(e != NULL);
					if (e)
						a2m_acc_add(e, keys[k].word,
							    a2m_bm25_contrib(keys[k].scale, p->tf, p->dl, k0, k1));
				}
			int bad = 0;
			for (size_t u = 0; u < every.n; u++) {
				const a2m_acc_entry *e = &every.slots[every.used[u]];
				const a2m_acc_entry *got = a2m_acc_find(&acc, e->seq);
				if (got ? got->total != e->total : e->total > rest)
					bad++;
			}
			if (bad)
				fprintf(stderr, "  round %d walk %d: %d records wrong (rest %g)\n", round, walk,
					bad, rest);
			CHECK_INT(bad, 0);
			CHECK(acc.n <= every.n);
			left[walk] += every.n - acc.n;
			a2m_acc_free(&every);
			a2m_acc_free(&acc);
			a2m_bmw_free(&w);
		}
	}
	CHECK(left[0] > 10000);
	CHECK(left[1] > 10000);
	CHECK(left[2] > 10000);
	CHECK(peek_calls > 100);  /* MaxScore probed through them */
	/*
	** Every record of a rare word kept, each beating the last; a common
	** word's records, far on, then below the threshold: left out unread,
	** and *rest must say so.
	*/
	for (size_t i = 0; i < 30; i++)
		real[0][i] = (a2m_posting){.seq = 1 + (int64_t)i, .tf = 1 + (uint32_t)i, .dl = 2};
	for (size_t i = 0; i < 1000; i++)
		real[1][i] = (a2m_posting){.seq = 20000 + (int64_t)i, .tf = 1, .dl = 20};
	a2m_bmw_key two[2] = {{.v = real[0], .n = 30, .scale = 5, .word = 1},
			      {.v = real[1], .n = 1000, .scale = 1, .word = 2}};
	for (int walk = 0; walk < 2; walk++) {
		a2m_bmw w = {.walk = walk ? A2M_BMW_WAND : A2M_BMW_MAXSCORE};
		a2m_acc acc = {0};
		double rest = -1;
		CHECK_INT(a2m_acc_begin(&acc, 64), 0);
		CHECK_INT(a2m_bmw_run(&w, two, 2, 0.3, 0.1, 20, 1.0, &acc, &rest), 0);
		CHECK_INT(acc.n, 30);
		CHECK(rest >= a2m_bm25_contrib(1, 1, 20, 0.3, 0.1));
		a2m_acc_free(&acc);
		a2m_bmw_free(&w);
	}
}

/*
** MaxScore's marks (maxscore.c, mark_floor): once the threshold is up, an
** essential list's postings too weak to lift their record past it, with
** every other list's reach, take no step. Two words whose first 40
** records hold both strongly; the second word's next 5 000 weakly: after
** the first window every one of them is left out unstepped, and the walk
** still keeps exactly the records brute force finds above its bound.
*/
static void test_maxscore_marks(void)
{
	enum { STRONG = 40, WEAK = 5000 };
	static a2m_posting a[STRONG], b[STRONG + WEAK];
	for (size_t i = 0; i < STRONG; i++) {
		a[i] = (a2m_posting){.seq = 1 + (int64_t)i, .tf = 3, .dl = 2};
		b[i] = a[i];
	}
	for (size_t i = 0; i < WEAK; i++)
		b[STRONG + i] = (a2m_posting){.seq = STRONG + 1 + (int64_t)i, .tf = 1, .dl = 30};
	a2m_bmw_key two[2] = {{.v = a, .n = STRONG, .scale = 1, .word = 1},
			      {.v = b, .n = STRONG + WEAK, .scale = 1, .word = 2}};
	a2m_bmw w = {.walk = A2M_BMW_MAXSCORE};
	a2m_acc acc = {0};
	double rest = -1, k0 = 0.3, k1 = 0.1;
	CHECK_INT(a2m_acc_begin(&acc, 64), 0);
	CHECK_INT(a2m_bmw_run(&w, two, 2, k0, k1, 20, 1.0, &acc, &rest), 0);
	double strong = a2m_bm25_contrib(1, 3, 2, k0, k1), weak = a2m_bm25_contrib(1, 1, 30, k0, k1);
	/* The premise: a weak record cannot reach a strong one's sum. */
	CHECK(weak + strong < 2 * strong);
	for (size_t i = 0; i < WEAK; i++)
		CHECK(a2m_acc_find(&acc, b[STRONG + i].seq) == NULL);
	CHECK(rest >= weak);
	CHECK(acc.n >= 20 && acc.n <= STRONG);
	/* The first window (128 seqs) is stepped whole; nothing after it. */
	CHECK(w.steps <= 128);
	a2m_acc_free(&acc);
	a2m_bmw_free(&w);
}

int main(void)
{
	static const test_case tests[] = {
		TEST(test_walks_against_brute_force),
		TEST(test_maxscore_marks),
		{NULL, NULL},
	};
	return run_tests(tests);
}
