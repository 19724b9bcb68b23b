/*
** test_mindex.c — the memory engine's term index at its own seam
** (store/memory_index.h) and the byte coding of its short lists
** (store/memory_packed.h): every change against a plain model, at the
** edges the coding has (a posting inserted before the first, removed from
** the middle, the end and the front, rewritten longer and shorter, seq gaps
** over 32 bits, tf and lengths past the one-byte form), and the lists
** changing form as they cross the share of the records that decides it.
** The protocol-level behaviour (recall, check, churn) is tested against
** both engines in test_store_*.c, test_index.c and test_prune.c.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store/memory_index.h"
#include "store/memory_packed.h"

/* ---- the coding, against a sorted array ----------------------------------- */

typedef struct model {
	a2m_posting v[4096];
	size_t      n;
} model;

static size_t model_find(const model *m, int64_t seq)
{
	size_t i = 0;
	while (i < m->n && m->v[i].seq < seq)
		i++;
	return i;
}

/* Whether pk decodes to exactly m, its last seq included. */
static int packed_is(const a2m_mpacked *pk, const model *m)
{
	a2m_mpacked_cursor c;
	a2m_posting x;
	size_t i = 0;
	for (a2m_mpacked_start(pk, &c); a2m_mpacked_next(&c, &x); i++)
		if (i >= m->n || x.seq != m->v[i].seq || x.tf != m->v[i].tf || x.dl != m->v[i].dl)
			return 0;
	return i == m->n && pk->last == (m->n ? m->v[m->n - 1].seq : 0) && pk->used <= pk->cap;
}

/* A seq gap of one of the kinds the coding meets: 1, small, a few bytes, over 32 bits. */
static int64_t gap(uint64_t *rng)
{
	switch (check_rand(rng) % 4) {
	case 0: return 1;
	case 1: return 1 + (int64_t)(check_rand(rng) % 100);
	case 2: return 1 + (int64_t)(check_rand(rng) % 1000000);
	default: return (int64_t)(1ull << 32) + (int64_t)(check_rand(rng) % (1ull << 40));
	}
}

static a2m_posting random_posting(uint64_t *rng, int64_t seq)
{
	/* Mostly the one-byte form (tf 1..4, dl < 64); sometimes past it. */
	uint32_t tf = 1 + (uint32_t)(check_rand(rng) % 6);
	uint32_t dl = (uint32_t)(check_rand(rng) % 5 ? check_rand(rng) % 64 : check_rand(rng) % 100000);
	return (a2m_posting){.seq = seq, .tf = tf, .dl = dl};
}

static void test_packed_list_follows_its_model(void)
{
	uint64_t rng = 12345;
	for (int round = 0; round < 20; round++) {
		a2m_mpacked pk = {0};
		model m = {.n = 0};
		int64_t top = 0;
		for (int step = 0; step < 1500; step++) {
			unsigned op = (unsigned)(check_rand(&rng) % 10);
			if (op < 5 || !m.n) {
				/* Insert: mostly appended, else in a hole below the last. */
				int64_t seq;
				if (op < 3 || !m.n) {
					seq = top + gap(&rng);
				} else {
					size_t at = (size_t)(check_rand(&rng) % m.n);
					int64_t lo = at ? m.v[at - 1].seq : 0;
					if (m.v[at].seq - lo < 2)
						continue;
					seq = lo + 1 + (int64_t)(check_rand(&rng) % (uint64_t)(m.v[at].seq - lo - 1));
				}
				if (m.n == sizeof m.v / sizeof m.v[0])
					continue;
				if (seq > top)
					top = seq;
				a2m_posting x = random_posting(&rng, seq);
				CHECK_INT(a2m_mpacked_reserve(&pk), 0);
				uint32_t room = pk.cap - pk.used;
				CHECK(room >= A2M_MPACKED_MAX);
				a2m_mpacked_insert(&pk, x);
				size_t i = model_find(&m, seq);
				memmove(&m.v[i + 1], &m.v[i], (m.n - i) * sizeof m.v[0]);
				m.v[i] = x;
				m.n++;
			} else if (op < 8) {
				/* Remove: the front, the end or the middle; never grows. */
				size_t i = op == 5 ? 0 : op == 6 ? m.n - 1 : (size_t)(check_rand(&rng) % m.n);
				uint32_t used = pk.used;
				CHECK_INT(a2m_mpacked_remove(&pk, m.v[i].seq), 1);
				CHECK(pk.used < used);
				/* A seq it does not hold: nothing. */
				CHECK_INT(a2m_mpacked_remove(&pk, m.v[i].seq), 0);
				memmove(&m.v[i], &m.v[i + 1], (m.n - i - 1) * sizeof m.v[0]);
				m.n--;
			} else {
				/* Rewrite in place, to a longer or shorter coding. */
				size_t i = (size_t)(check_rand(&rng) % m.n);
				a2m_posting x = random_posting(&rng, m.v[i].seq);
				CHECK_INT(a2m_mpacked_reserve(&pk), 0);
				CHECK_INT(a2m_mpacked_rewrite(&pk, x), 1);
				m.v[i] = x;
			}
			if (!packed_is(&pk, &m)) {
				fprintf(stderr, "  round %d step %d: the list differs from its model\n",
					round, step);
				check_failures_in_test++;
				break;
			}
		}
		/* Coded afresh, the same postings in the same bytes. */
		if (m.n) {
			a2m_mpacked fresh = {0};
			CHECK_INT(a2m_mpacked_encode(&fresh, m.v, m.n), 0);
			CHECK(packed_is(&fresh, &m));
			CHECK_INT(fresh.used, pk.used);
			CHECK(fresh.used && memcmp(fresh.b, pk.b, fresh.used) == 0);
			CHECK(fresh.cap - fresh.used >= A2M_MPACKED_MAX);
			a2m_mpacked_free(&fresh);
		}
		a2m_mpacked_free(&pk);
	}
}

static void test_packed_list_edges(void)
{
	a2m_mpacked pk = {0};
	/* Seqs at the 64-bit top and 32-bit gaps; tf and dl at the one-byte form's edges. */
	const a2m_posting v[] = {
		{1, 1, 0}, {2, 4, 63}, {3, 5, 63}, {4, 4, 64}, {(int64_t)1 << 32, 1, 1},
		{((int64_t)1 << 32) + 1, UINT32_MAX, UINT32_MAX}, {INT64_MAX - 1, 2, 7},
	};
	size_t n = sizeof v / sizeof v[0];
	for (size_t i = 0; i < n; i++) {
		CHECK_INT(a2m_mpacked_reserve(&pk), 0);
		a2m_mpacked_insert(&pk, v[n - 1 - i]);  /* each before the first */
	}
	model m = {.n = n};
	memcpy(m.v, v, sizeof v);
	CHECK(packed_is(&pk, &m));
	/* Removing the last leaves the one before as last; the only one, empty. */
	CHECK_INT(a2m_mpacked_remove(&pk, INT64_MAX - 1), 1);
	CHECK_INT(pk.last, ((int64_t)1 << 32) + 1);
	m.n--;
	CHECK(packed_is(&pk, &m));
	while (m.n > 1) {
		CHECK_INT(a2m_mpacked_remove(&pk, m.v[0].seq), 1);
		memmove(&m.v[0], &m.v[1], --m.n * sizeof m.v[0]);
		CHECK(packed_is(&pk, &m));
	}
	m.n = 0;
	CHECK_INT(a2m_mpacked_remove(&pk, INT64_MAX - 1), 0);
	CHECK_INT(a2m_mpacked_remove(&pk, ((int64_t)1 << 32) + 1), 1);
	CHECK_INT(pk.used, 0);
	CHECK(packed_is(&pk, &m));
	/* Empty again, it takes an append at any seq. */
	CHECK_INT(a2m_mpacked_reserve(&pk), 0);
	a2m_mpacked_insert(&pk, (a2m_posting){7, 1, 1});
	m.v[0] = (a2m_posting){7, 1, 1};
	m.n = 1;
	CHECK(packed_is(&pk, &m));
	a2m_mpacked_free(&pk);
	CHECK(pk.b == NULL && pk.used == 0 && pk.cap == 0);
}

/* ---- the index: lists that change form ------------------------------------ */

/* A doc of the words given (each tf 1), length = their count. */
static a2m_mdoc *doc_of(a2m_mindex *ix, int64_t seq, const char *const *words, size_t n,
			int describe)
{
	a2m_term t[8];
	for (size_t i = 0; i < n; i++)
		t[i] = (a2m_term){.text = words[i], .len = (uint32_t)strlen(words[i]), .tf = 1};
	a2m_doc_terms dt = {.terms = t, .n = n, .length = (uint32_t)n + 3, .has_text = 1};
	a2m_mdoc *d = NULL;
	int rc = (describe ? a2m_mindex_describe : a2m_mindex_prepare)(ix, &dt, seq, &d);
	CHECK_INT(rc, 0);
	return d;
}

typedef struct seen {
	int64_t seqs[8192];
	size_t  n;
	int     bad;
} seen;

static int see(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	seen *s = ctx;
	if (tf != 1 || dl < 4 || s->n == sizeof s->seqs / sizeof s->seqs[0] ||
	    (s->n && s->seqs[s->n - 1] >= seq))
		s->bad = 1;
	else
		s->seqs[s->n++] = seq;
	return 0;
}

/*
** Whether term's postings are exactly the seqs in [lo, hi) that keep(seq)
** says, however they are read: visited, lent (with bounds), viewed. *form:
** 0 lent in place, 2 kept packed.
*/
static int term_holds(a2m_mindex *ix, const char *term, int64_t lo, int64_t hi,
		      int (*keep)(int64_t), int *form)
{
	seen s = {.n = 0};
	size_t len = strlen(term);
	CHECK_INT(a2m_mindex_postings(ix, term, len, see, &s), 0);
	size_t k = 0;
	for (int64_t q = lo; q < hi; q++)
		if (keep(q) && (k >= s.n || s.seqs[k++] != q))
			return 0;
	if (s.bad || k != s.n)
		return 0;
	a2m_postings_lent l;
	const a2m_posting *v;
	size_t n;
	*form = a2m_mindex_lend(ix, term, len, &l);
	int viewed = a2m_mindex_view(ix, term, len, &v, &n);
	if (*form == 2)
		return viewed == 1;
	if (*form != 0 || viewed != 0 || l.n != s.n || n != s.n || l.v != v)
		return 0;
	for (size_t i = 0; i < l.n; i++) {
		if (l.v[i].seq != s.seqs[i] || l.all.tf < 1 || l.all.dl[0] > l.v[i].dl)
			return 0;
		if (l.blocks && l.blocks[i / A2M_POSTINGS_BLOCK].dl[0] > l.v[i].dl)
			return 0;
	}
	return 1;
}

static int every(int64_t q) { (void)q; return 1; }
static int odd(int64_t q) { return q % 2 == 1; }
static int tenth(int64_t q) { return q % 10 == 0; }
static int thousandth(int64_t q) { return q % 1000 == 0; }

static void test_index_lists_change_form(void)
{
	a2m_mindex *ix = a2m_mindex_new();
	CHECK(ix != NULL);
	if (!ix)
		return;
	/* 3 000 docs: "all" in each, "some" in every tenth (300 postings: far
	** over 3 000 / 512, plain), "rare" in every thousandth (3: packed). */
	static a2m_mdoc *docs[4000];
	for (int64_t q = 1; q <= 3000; q++) {
		const char *w[3] = {"all", "some", "rare"};
		size_t n = q % 10 == 0 ? (q % 1000 == 0 ? 3 : 2) : 1;
		docs[q] = doc_of(ix, q, w, n, 0);
		a2m_mindex_link(ix, docs[q]);
		a2m_mindex_sweep(ix);
	}
	int form;
	CHECK(term_holds(ix, "all", 1, 3001, every, &form));
	CHECK_INT(form, 0);
	CHECK(term_holds(ix, "some", 1, 3001, tenth, &form));
	CHECK_INT(form, 0);
	/* 3 postings of 3 000 records: packed once a change let sweep see it. */
	CHECK(term_holds(ix, "rare", 1, 3001, thousandth, &form));
	CHECK_INT(form, 2);
	a2m_index_stats st;
	a2m_mindex_stats(ix, &st);
	CHECK_INT(st.docs, 3000);

	/* Forget the even docs in one go, as a transaction would (no sweep):
	** "all" keeps odd seqs in place, then, swept, stays plain (1 500). */
	for (int64_t q = 2; q <= 3000; q += 2) {
		a2m_mindex_unlink(ix, docs[q]);
	}
	CHECK(term_holds(ix, "all", 1, 3001, odd, &form));
	CHECK_INT(form, 0);
	/* Undo: the same docs back at their seqs, into the room they left. */
	for (int64_t q = 2; q <= 3000; q += 2)
		a2m_mindex_link(ix, docs[q]);
	CHECK(term_holds(ix, "all", 1, 3001, every, &form));
	a2m_mindex_sweep(ix);

	/* 999 docs more, each with "rare": it grows past the share and, at
	** the sweep after the change that crossed it, is lent again. */
	for (int64_t q = 3001; q < 4000; q++) {
		const char *w[2] = {"all", "rare"};
		docs[q] = doc_of(ix, q, w, 2, 0);
		a2m_mindex_link(ix, docs[q]);
		a2m_mindex_sweep(ix);
	}
	seen s = {.n = 0};
	CHECK_INT(a2m_mindex_postings(ix, "rare", 4, see, &s), 0);
	CHECK_INT(s.n, 3 + 999);
	CHECK_INT(s.seqs[0], 1000);
	CHECK_INT(s.seqs[3], 3001);
	a2m_postings_lent l;
	CHECK_INT(a2m_mindex_lend(ix, "rare", 4, &l), 0);
	CHECK_INT(l.n, 1002);
	CHECK(l.blocks != NULL);

	/* Shrink "some" below the share: forget its docs but 5; it is packed
	** at the sweep and still reads the same; a rewrite keeps its place. */
	for (int64_t q = 10; q <= 3000; q += 10)
		if (q > 50) {
			a2m_mdoc *d = doc_of(ix, q, (const char *const[]){"all", "some", "rare"},
					     q % 1000 == 0 ? 3 : 2, 1);
			a2m_mindex_unlink(ix, d);
			a2m_mdoc_free(d);
			a2m_mdoc_free(docs[q]);
			docs[q] = NULL;
		}
	a2m_mindex_sweep(ix);
	CHECK_INT(a2m_mindex_lend(ix, "some", 4, &l), 2);
	s.n = 0;
	CHECK_INT(a2m_mindex_postings(ix, "some", 4, see, &s), 0);
	CHECK_INT(s.n, 5);
	CHECK_INT(s.seqs[4], 50);
	/* Doc 30 rewritten to ("some", "new"): "some" rewritten where it is. */
	a2m_mdoc *old = doc_of(ix, 30, (const char *const[]){"all", "some"}, 2, 1);
	a2m_mdoc *nw = doc_of(ix, 30, (const char *const[]){"some", "new"}, 2, 0);
	a2m_mindex_replace(ix, old, nw);
	s.n = 0;
	CHECK_INT(a2m_mindex_postings(ix, "some", 4, see, &s), 0);
	CHECK_INT(s.n, 5);
	CHECK_INT(s.seqs[2], 30);
	/* And back, as a rollback does. */
	a2m_mindex_replace(ix, nw, old);
	s.n = 0;
	CHECK_INT(a2m_mindex_postings(ix, "new", 3, see, &s), 0);
	CHECK_INT(s.n, 0);
	a2m_mdoc_free(old);
	a2m_mdoc_free(nw);
	a2m_mindex_sweep(ix);
	for (int64_t q = 1; q < 4000; q++)
		a2m_mdoc_free(docs[q]);
	a2m_mindex_free(ix);
}

/* A packed list's removals in a transaction are put back into their own room. */
static void test_packed_list_rollback_room(void)
{
	a2m_mindex *ix = a2m_mindex_new();
	CHECK(ix != NULL);
	if (!ix)
		return;
	/* "x" in 10 of 20 000 docs, far apart (gaps over 32 bits too): packed. */
	static a2m_mdoc *docs[20001];
	int64_t base = (int64_t)1 << 33;
	for (int64_t q = 1; q <= 20000; q++) {
		int64_t seq = q % 2000 == 0 ? base * (q / 2000) : q;
		const char *w[2] = {"filler", "x"};
		docs[q] = doc_of(ix, seq, w, q % 2000 == 0 ? 2 : 1, 0);
		a2m_mindex_link(ix, docs[q]);
		if (q % 1000 == 0)
			a2m_mindex_sweep(ix);
	}
	a2m_mindex_sweep(ix);
	a2m_postings_lent l;
	CHECK_INT(a2m_mindex_lend(ix, "x", 1, &l), 2);
	/* A transaction removes the 2nd..9th and adds one at the top; its
	** rollback takes the top one out and puts the others back, last first. */
	for (int64_t q = 4000; q <= 18000; q += 2000)
		a2m_mindex_unlink(ix, docs[q]);
	a2m_mdoc *top = doc_of(ix, base * 11, (const char *const[]){"x"}, 1, 0);
	a2m_mindex_link(ix, top);
	seen mid = {.n = 0};
	CHECK_INT(a2m_mindex_postings(ix, "x", 1, see, &mid), 0);
	CHECK_INT(mid.n, 3);
	CHECK_INT(mid.seqs[2], base * 11);
	a2m_mindex_unlink(ix, top);
	for (int64_t q = 18000; q >= 4000; q -= 2000)
		a2m_mindex_link(ix, docs[q]);
	seen s = {.n = 0};
	CHECK_INT(a2m_mindex_postings(ix, "x", 1, see, &s), 0);
	CHECK_INT(s.n, 10);
	for (size_t i = 0; i < s.n; i++)
		CHECK_INT(s.seqs[i], base * (int64_t)(i + 1));
	a2m_mdoc_free(top);
	for (int64_t q = 1; q <= 20000; q++)
		a2m_mdoc_free(docs[q]);
	a2m_mindex_free(ix);
}

int main(void)
{
	static const test_case tests[] = {
		TEST(test_packed_list_follows_its_model),
		TEST(test_packed_list_edges),
		TEST(test_index_lists_change_form),
		TEST(test_packed_list_rollback_room),
		{NULL, NULL},
	};
	return run_tests(tests);
}
