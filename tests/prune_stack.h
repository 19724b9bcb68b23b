/*
** prune_stack.h — what the tests of BM25's dynamic pruning
** (tests/test_prune.c, test_prune_segments.c; header-only) share: a corpus
** of common and rare words with stems, stores filled and churned on each
** engine, the stack over them with the scorer behind a switch
** (tests/scorer_switch.h), and recall compared pruned, complete and
** scanned, to the last bit.
*/
#ifndef A2M_TEST_PRUNE_STACK_H
#define A2M_TEST_PRUNE_STACK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "pg_helper.h"
#include "rank/blockmax.h"
#include "rank/scorer.h"
#include "scorer_switch.h"
#include "server/server.h"
#include "stack/stack.h"
#include "stack/stack_internal.h"
#include "stack/where.h"
#include "store/postings_cache.h"
#include "store/sqlite_index.h"
#include "store/sqlite_index_internal.h"
#include "store/sqlite_internal.h"
#include "store/sqlite_segments.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/clock.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static inline uint64_t rng(void)
{
	return check_rand(&rng_state);
}

static inline double unif(void)
{
	return (double)(rng() >> 11) / 9007199254740992.0;
}

/* ---- a corpus with common and rare words, and stems ------------------- */

#define VOCAB 600

/*
** Word i of a made-up vocabulary, drawn by rank (1/r, as text): a few very
** common words, many rare ones; an English suffix now and then, so that a
** word's stem is shared by other surface forms (a rare surface form with
** a common stem).
*/
static inline void word(char *out, size_t cap, int rare)
{
	static const char *const syl[] = {"ka", "lo", "mi", "ren", "to", "vas", "qui", "del",
					  "no", "par", "su", "fin"};
	static const char *const suffix[] = {"", "", "", "s", "ing", "ed"};
	double u = unif() * unif() * (rare ? 1 : unif());
	size_t i = (size_t)(u * VOCAB) + 12, n = 0;
	while (i && n + 4 < cap) {
		n += (size_t)snprintf(out + n, cap - n, "%s", syl[i % 12]);
		i /= 12;
	}
	snprintf(out + n, cap - n, "%s", suffix[rng() % 6]);
}

static inline void sentence(char *out, size_t cap, size_t words, int rare)
{
	char w[48];
	size_t n = 0;
	out[0] = '\0';
	for (size_t j = 0; j < words && n + 1 < cap; j++) {
		word(w, sizeof w, rare);
		/* Now and then a word twice: term frequencies above 1. */
		int twice = rng() % 8 == 0;
		n += (size_t)snprintf(out + n, cap - n, "%s%s%s%s", j ? " " : "", w, twice ? " " : "",
				      twice ? w : "");
	}
}

static const char *const tiers[] = {"semantic", "episodic", "working", "procedural"};
static const char *const owners[] = {NULL, "ann", "bob"};
static const char *const langs[] = {"en", "fr", "de"};

/* ---- the stack under test ---------------------------------------------- */

static switched *the_switch;

static char db_path[64];
static char pg_schema[64];  /* the PostgreSQL engine's (pg_helper.h) */

/* The engines (sqlite: 0 memory, 1 SQLite, 2 PostgreSQL) the loops run on. */
static int n_engines = 2;

/* When set, the SQLite file is opened as it is: not removed, not filled. */
static int keep_db;

static inline void remove_db(void)
{
	check_remove_db(db_path);
	if (pg_test_server())
		pg_test_schema_drop(pg_schema);
}

static inline a2m_store *open_engine(int sqlite)
{
	a2m_store *s = NULL;
	char err[256];
	a2m_postgres_options po = {.schema = pg_schema};
	if (sqlite && !keep_db)
		remove_db();
	int rc = sqlite == 2 ? a2m_store_postgres_open(pg_test_server(), &po, &s, err, sizeof err)
		: sqlite ? a2m_store_sqlite_open(db_path, NULL, &s, err, sizeof err)
			 : a2m_store_memory_open(&s, err, sizeof err);
	if (rc)
		fprintf(stderr, "  open: %s\n", err);
	return rc ? NULL : s;
}

/*
** n random records into s: tier, owner, salience and metadata (lang) at
** random; created in the future, so that recency is 1 at every recall and
** two recalls of one query compare to the last bit.
*/
/* When set, fill() commits that many times (SQLite: as many segments, merged at 8). */
static int fill_commits;
/*
** When set, fill() makes records of every age up to a tier's scale before
** this time (the working tier's 5 minutes, the episodic's 2 days, 30 days
** elsewhere, each divided by fill_age_div) and saliences from -4 to 8, and
** recall_same_as_complete stands the clock there, so that its three
** recalls of a query blend at one now.
*/
static int64_t fill_aged_at;
static int64_t fill_age_div = 1;

static inline int64_t aged_created(const char *tier)
{
	int64_t span = strcmp(tier, "working") == 0	 ? 300000
		       : strcmp(tier, "episodic") == 0 ? 2 * 86400000LL
						       : 30 * 86400000LL;
	return fill_aged_at - (int64_t)(rng() % (uint64_t)(span / fill_age_div));
}

static inline int fill(a2m_store *s, int n)
{
	char text[1024], id[32], meta[64];
	/* One transaction: a remember's, not n of them. */
	int rc = s->ops->begin(s);
	for (int i = 0; i < n && !rc; i++) {
		if (fill_commits > 1 && i && i % (n / fill_commits) == 0 &&
		    ((rc = s->ops->commit(s)) || (rc = s->ops->begin(s))))
			break;
		a2m_record *r = a2m_record_new();
		if (!r) {
			s->ops->rollback(s);
			return -1;
		}
		snprintf(id, sizeof id, "r%d", i);
		sentence(text, sizeof text, 4 + rng() % 14, 0);
		snprintf(meta, sizeof meta, "{\"lang\":\"%s\",\"bucket\":%d}", langs[rng() % 3],
			 (int)(rng() % 25));
		const char *o = owners[rng() % 3];
		r->id = strdup(id);
		r->content = strdup(text);
		r->metadata = strdup(meta);
		r->tier = strdup(tiers[rng() % 4]);
		r->owner = o ? strdup(o) : NULL;
		r->created_at = 4102444800000LL + i;  /* 2100 */
		r->salience = unif() * 3;
		if (fill_aged_at) {
			r->created_at = aged_created(r->tier);
			r->salience = unif() * 12 - 4;
		}
		rc = s->ops->insert(s, r);
		a2m_record_free(r);
	}
	if (!rc)
		return s->ops->commit(s);
	s->ops->rollback(s);
	return rc;
}

/*
** When set, filled_store churns what it filled: this many commits, each
** forgetting and rewriting records at random (SQLite: segments merged on
** the way), then, on SQLite, closes the file and opens it again.
*/
static int churn_commits;

/*
** One transaction of churn over the n records fill() made: about one in
** 40 forgotten, as many rewritten with new text (their seq kept: in
** memory, a posting put back at its place in its lists), committed, or
** rolled back when undo is set (memory: every posting linked and unlinked
** again).
*/
static inline int churn_tx(a2m_store *s, int n, int undo)
{
	char id[32], text[1024];
	int rc = s->ops->begin(s);
	for (int i = 0; i < n / 40 && !rc; i++) {
		int removed = 0;
		snprintf(id, sizeof id, "r%d", (int)(rng() % (uint64_t)n));
		rc = s->ops->remove(s, id, &removed);
		snprintf(id, sizeof id, "r%d", (int)(rng() % (uint64_t)n));
		a2m_record *r = NULL;
		if (!rc)
			rc = s->ops->get(s, id, &r);
		if (!rc && r) {
			sentence(text, sizeof text, 4 + rng() % 14, 0);
			free(r->content);
			r->content = strdup(text);
			rc = r->content ? s->ops->update(s, r) : -1;
		}
		a2m_record_free(r);
	}
	if (!rc && !undo)
		return s->ops->commit(s);
	s->ops->rollback(s);
	return rc;
}

static inline int churn(a2m_store *s, int n)
{
	return churn_tx(s, n, 0);
}

/* s churned (churn_commits) and, on SQLite, opened again; NULL when that fails. */
static inline a2m_store *churned(int sqlite, a2m_store *s, a2m_scorer *sc, int n)
{
	char err[256];
	int rc = 0;
	for (int c = 0; c < churn_commits && !rc; c++)
		rc = churn(s, n);
	if (rc || sqlite != 1) {
		if (rc)
			s->ops->close(s);
		return rc ? NULL : s;
	}
	s->ops->close(s);
	s = NULL;
	if (a2m_store_sqlite_open(db_path, NULL, &s, err, sizeof err) != 0 ||
	    s->ops->index_attach(s, sc->indexer) != 0) {
		fprintf(stderr, "  reopen: %s\n", err);
		if (s)
			s->ops->close(s);
		return NULL;
	}
	return s;
}

/*
** A fresh store of n random records indexed for sc (not NULL), churned
** when churn_commits says so, or NULL (and the scorer destroyed) when that
** fails.
*/
static inline a2m_store *filled_store(int sqlite, a2m_scorer *sc, int n)
{
	a2m_store *s = sc ? open_engine(sqlite) : NULL;
	if (s && s->ops->index_attach(s, sc->indexer) == 0 && (keep_db || fill(s, n) == 0)) {
		if (churn_commits && !(s = churned(sqlite, s, sc, n)))
			sc->destroy(sc);
		return s;
	}
	if (s)
		s->ops->close(s);
	if (sc)
		sc->destroy(sc);
	return NULL;
}

/* The server's text scorer: BM25 and the caller's vectors, fused. */
static inline a2m_scorer *server_scorer(void)
{
	a2m_scorer *parts[2] = {a2m_scorer_bm25_new(NULL), a2m_scorer_vector_new(A2M_METRIC_COSINE, 0)};
	return a2m_scorer_hybrid_new(parts, 2);
}

/* A stack over store s (NULL: none) scored by h, both its, with the given blend. */
static inline a2m_stack *stack_over(a2m_store *s, a2m_scorer *h, a2m_blend blend)
{
	switched *w = calloc(1, sizeof *w);
	a2m_stack_config cfg;
	memset(&cfg, 0, sizeof cfg);
	if (!s || !w || a2m_tiers_default(&cfg.tiers) != 0) {
		if (s) {
			s->ops->close(s);
			h->destroy(h);
		}
		free(w);
		return NULL;
	}
	w->base = *h;
	w->base.relevance = sw_relevance;
	w->base.candidates = sw_candidates;
	w->base.destroy = sw_destroy;
	w->inner = h;
	the_switch = w;
	cfg.blend = blend;
	cfg.metric = A2M_METRIC_COSINE;
	cfg.read_only = 1;  /* no touch: a recall changes nothing */
	cfg.fields = A2M_FIELD_TIER | A2M_FIELD_SALIENCE | A2M_FIELD_OWNER | A2M_FIELD_SESSION |
		     A2M_FIELD_KEY;
	return a2m_stack_new(s, &w->base, &cfg);
}

/* A stack over a fresh store of n records with the given blend. */
static inline a2m_stack *prune_stack(int sqlite, int n, a2m_blend blend)
{
	a2m_scorer *h = server_scorer();
	return stack_over(filled_store(sqlite, h, n), h, blend);
}

/* A query of 1-4 words of the corpus, rarer ones one time in two. */
static inline void query_text(char *out, size_t cap)
{
	sentence(out, cap, 1 + rng() % 4, rng() % 2 == 0);
}

/*
** A random selection: nothing, a tier, an owner, a scoped reader (the
** working tier is private: only its own records there), a `where` on
** metadata (one record in three, or in 25), or several at once. Turns the
** best candidates away often.
*/
static inline void random_selection(a2m_selection *sel, json_t **where)
{
	memset(sel, 0, sizeof *sel);
	*where = NULL;
	uint64_t r = rng();
	if (r % 3 == 0)
		sel->q.tier = tiers[rng() % 4];
	if (r % 5 == 1) {
		sel->q.by_owner = 1;
		sel->q.owner = owners[rng() % 3];
	}
	if (r % 4 == 2)
		sel->scope = (a2m_scope){.scoped = 1, .owner = owners[1 + rng() % 2]};
	if (r % 7 < 2)
		*where = json_pack("{ss}", "lang", langs[rng() % 3]);
	else if (r % 7 < 4)  /* one record in 25: the list's best are all turned away */
		*where = json_pack("{si}", "bucket", (int)(rng() % 25));
	sel->where = *where;
}

/* The hits of two reads are the same: ids, order, scores to the bit. */
static inline void same_hits(const a2m_hit *a, size_t na, const a2m_hit *b, size_t nb, const char *what)
{
	CHECK_INT(na, nb);
	for (size_t i = 0; i < na && i < nb; i++) {
		if (strcmp(a[i].rec->id, b[i].rec->id) != 0 || a[i].score != b[i].score) {
			fprintf(stderr, "  %s: hit %zu: %s %.17g, want %s %.17g\n", what, i,
				a[i].rec->id, a[i].score, b[i].rec->id, b[i].score);
			check_failures_in_test++;
			return;
		}
	}
}

static inline int recall_as(a2m_stack *st, int mode, const a2m_selection *sel, const char *text,
		     double min_score, size_t limit, a2m_hit **out, size_t *n)
{
	a2m_error err = {0};
	the_switch->mode = mode;
	a2m_rank_query q = {.text = text};
	/* In a read bracket, as every recall the server answers is (methods.c). */
	int rc = a2m_stack_read_begin(st, &err);
	if (!rc) {
		rc = a2m_stack_recall(st, sel, &q, min_score, limit, out, n, &err);
		a2m_stack_read_end(st, &err);
	}
	if (rc)
		fprintf(stderr, "  recall: %s\n", err.message);
	a2m_error_clear(&err);
	return rc;
}

/*
** Recall through a pruned list returns exactly what it returns through
** the complete list and through the scan path, for random queries, limits
** 1..50, blends and filters; and the pruned list is both used and, when
** the filters turn its records away, asked for again complete.
*/
/* 0 while a test forces a kind of pruning on every query (see its use). */
static int counts_checked = 1;

static inline void recall_same_as_complete(int sqlite, a2m_blend blend, uint64_t seed, int selective)
{
	rng_state = seed;
	if (fill_aged_at)
		a2m_clock_set_for_tests(fill_aged_at);
	a2m_stack *st = prune_stack(sqlite, 2500, blend);
	CHECK(st != NULL);
	if (!st)
		return;
	/* Aged: the floor is the tiers' oldest's factor, above the share. */
	if (fill_aged_at)
		CHECK(a2m_stack_blend_least(st, fill_aged_at) > 0.78);
	static const double mins[] = {0, 0, 0, 0, 0.2, 0.45, 0.7};
	int unfiltered = 0;
	for (int k = 0; k < 300; k++) {
		char text[256];
		query_text(text, sizeof text);
		a2m_selection sel;
		json_t *where;
		random_selection(&sel, &where);
		size_t limit = 1 + rng() % 50;
		if (k % 4 == 0)
			limit = 1 + rng() % 10;
		double min_score = mins[rng() % 7];
		if (selective) {
			/* One record in 25 passes: the pruned list's best are turned away. */
			json_decref(where);
			sel.where = where = json_pack("{si}", "bucket", (int)(rng() % 25));
			min_score = 0;
		}
		a2m_hit *p = NULL, *c = NULL, *s = NULL;
		size_t np = 0, nc = 0, ns = 0;
		the_switch->keeps_all = -1;
		CHECK_INT(recall_as(st, ASK_AS_IS, &sel, text, min_score, limit, &p, &np), 0);
		/* The scorer is told the caller keeps all exactly when nothing filters. */
		if (the_switch->keeps_all >= 0) {
			int all = !sel.q.tier && !sel.q.by_owner && !sel.scope.scoped && !sel.where;
			CHECK_INT(the_switch->keeps_all, all);
			unfiltered += all;
		}
		CHECK_INT(recall_as(st, ASK_COMPLETE, &sel, text, min_score, limit, &c, &nc), 0);
		CHECK_INT(recall_as(st, ASK_SCAN, &sel, text, min_score, limit, &s, &ns), 0);
		same_hits(p, np, c, nc, "pruned vs complete");
		same_hits(p, np, s, ns, "pruned vs scan");
		a2m_hits_free(p, np);
		a2m_hits_free(c, nc);
		a2m_hits_free(s, ns);
		json_decref(where);
	}
	/* Lists were pruned; under a selective filter some were asked for again
	** (how often depends on the pruning: test_both_prunings_on_every_query
	** forces each kind on lists of every size and checks exactness only). */
	if (counts_checked) {
		CHECK(selective || unfiltered > 10);
		CHECK(st->pruned_reads > (selective ? 5 : 30));
		if (selective)
			CHECK(st->pruned_retries > 3);
		else
			CHECK(st->pruned_retries < st->pruned_reads / 4);
	}
	a2m_stack_free(st);
	a2m_clock_set_for_tests(0);
	remove_db();
}

/* Before the tests: the SQLite file and PostgreSQL schema of this program, the engines. */
static inline void prune_stack_start(void)
{
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-prune-%d.db", (int)getpid());
	snprintf(pg_schema, sizeof pg_schema, "a2m_tp_%d", (int)getpid());
	if (pg_test_server())
		n_engines = 3;
	else
		printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
}

#endif
