/*
** prune_bounds.h — the check, for tests/test_prune.c and
** test_prune_segments.c, of the bounds an index lends with its postings
** (store.h index_postings_lend), which block-max pruning trusts
** (rank/blockmax.c): every lent posting bounded by its block's bound and
** its list's, in ascending seq, the index's own postings; on fresh and
** churned stores (tests/prune_stack.h: filled_store, churn_commits,
** query_text). Its tests are test_prune.c's
** test_lent_bounds_bound_their_postings_*; test_prune_segments.c runs the
** check again around its own.
*/
#ifndef A2M_TEST_PRUNE_BOUNDS_H
#define A2M_TEST_PRUNE_BOUNDS_H

#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "prune_stack.h"
#include "rank/analyze.h"
#include "store/store.h"

/* Whether b (store.h a2m_tf_bound) bounds posting p. */
static inline int bounds_posting(const a2m_tf_bound *b, const a2m_posting *p)
{
	if (p->tf > b->tf)
		return 0;
	for (uint32_t t = 0; t < 4 && t < p->tf; t++)
		if (p->dl < b->dl[t])
			return 0;
	return 1;
}

/* Lists lent to be read a block at a time, over every run (tests below). */
static int lent_lazily;

static inline int collect_posting(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	a2m_candidates *c = ctx;  /* seq, and tf · 2^32 + dl as the score */
	a2m_candidate *v = realloc(c->v, (c->n + 1) * sizeof *v);
	if (!v)
		return -1;
	c->v = v;
	c->v[c->n++] = (a2m_candidate){.seq = seq, .score = (double)tf * 4294967296.0 + dl};
	return 0;
}

static inline void count_problem(void *ctx, a2m_check_area area, int problem, const char *msg)
{
	if (problem) {
		fprintf(stderr, "  check: %s: %s\n", a2m_check_area_name(area), msg);
		++*(int *)ctx;
	}
}

/*
** The postings an index lends with their bounds (index_postings_lend) are
** its postings, in ascending seq, each bounded by its block's bound and
** the list's; after records were forgotten and rewritten over commits
** (SQLite: merged, the file opened again; memory: also a transaction of
** them rolled back), when every list is still lent, in order.
*/
static inline void lent_bounds_bound_their_postings(int sqlite, int commits)
{
	a2m_scorer *sc = a2m_scorer_bm25_new(NULL);
	a2m_analyzer *an = a2m_analyzer_new(NULL);
	rng_state = 77 + (uint64_t)sqlite;
	churn_commits = commits;
	a2m_store *s = filled_store(sqlite, sc, 3000);
	churn_commits = 0;
	CHECK(s != NULL && an != NULL);
	if (!s || !an) {
		a2m_analyzer_free(an);
		return;
	}
	if (!sqlite && commits) {
		CHECK_INT(churn_tx(s, 3000, 1), 0);
		/* The index holds what the records' texts make, to the tf. */
		int problems = 0;
		a2m_check_options o = {.ix = sc->indexer, .report = count_problem, .ctx = &problems};
		CHECK_INT(s->ops->check(s, &o), 0);
		CHECK_INT(problems, 0);
	}
	int lent = 0, blocked = 0, not_lent = 0, lazy = 0;
	size_t longest_not_lent = 0;
	CHECK_INT(s->ops->read_begin(s), 0);
	for (int i = 0; i < 200; i++) {
		char text[256];
		a2m_query_terms q;
		query_text(text, sizeof text);
		if (a2m_analyze_query(an, text, &q) != 0) {
			CHECK(0);
			a2m_query_terms_free(&q);
			break;
		}
		for (size_t k = 0; k < q.nkeys; k++) {
			a2m_postings_lent l;
			a2m_candidates all = {0};
			const a2m_term *key = &q.keys[k];
			int rc = s->ops->index_postings_lend(s, key->text, key->len, &l);
			CHECK_INT(s->ops->index_postings(s, key->text, key->len, collect_posting, &all), 0);
			if (rc != 0) {
				CHECK(rc == 1 || rc == 2);
				not_lent++;
				if (all.n > longest_not_lent)
					longest_not_lent = all.n;
				free(all.v);
				continue;
			}
			lent++;
			blocked += l.blocks != NULL;
			CHECK_INT(l.n, all.n);
			/* Read a block at a time (SQLite's skip tables): every block
			** filled, in reverse, each bounded as its table says. */
			size_t b = 0;
			if (l.fill) {
				lazy++;
				CHECK(l.blocks != NULL && l.start != NULL && l.last != NULL);
				CHECK_INT(l.start[l.nblocks], l.n);
				for (size_t bi = l.nblocks; bi-- > 0;) {
					CHECK_INT(l.fill(l.ctx, bi), 0);
					CHECK(l.start[bi] < l.start[bi + 1]);
					CHECK_INT(l.last[bi], l.v[l.start[bi + 1] - 1].seq);
				}
			}
			for (size_t j = 0; j < l.n; j++) {
				while (l.fill && j >= l.start[b + 1])
					b++;
				const a2m_tf_bound *bb = !l.blocks ? NULL
					: l.fill ? &l.blocks[b] : &l.blocks[j / A2M_POSTINGS_BLOCK];
				if ((j && l.v[j].seq <= l.v[j - 1].seq) || !bounds_posting(&l.all, &l.v[j]) ||
				    (bb && !bounds_posting(bb, &l.v[j]))) {
					fprintf(stderr, "  %.*s: posting %zu of %zu out of order or unbounded\n",
						(int)key->len, key->text, j, l.n);
					check_failures_in_test++;
					break;
				}
				/* The same postings as index_postings visits. */
				int found = 0;
				for (size_t m = 0; m < all.n && !found; m++)
					found = all.v[m].seq == l.v[j].seq &&
						all.v[m].score == (double)l.v[j].tf * 4294967296.0 + l.v[j].dl;
				if (!found) {
					fprintf(stderr, "  %.*s: posting %zu not in the index\n", (int)key->len,
						key->text, j);
					check_failures_in_test++;
					break;
				}
			}
			free(all.v);
		}
		a2m_query_terms_free(&q);
	}
	CHECK_INT(s->ops->read_end(s), 0);
	CHECK(lent > 100);
	/* Every list is lent, the long ones with their blocks' bounds: in
	** memory, rewritten records' postings went back to their places; only
	** the short lists it keeps packed (fewer postings than 1/256 of the
	** records, memory_packed.h) are copied instead. */
	CHECK(blocked > 10);
	if (!sqlite)
		CHECK(longest_not_lent * 256 < 3000);
	/* SQLite: a fresh store's long lists, one segment each, are read a
	** block at a time (sqlite_segments_lazy.c); churned, fewer are. */
	if (sqlite && !commits)
		CHECK(lazy > 10);
	lent_lazily += lazy;
	a2m_analyzer_free(an);
	s->ops->close(s);
	sc->destroy(sc);
	remove_db();
}

#endif
