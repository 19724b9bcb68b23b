/*
** test_prune.c — BM25's dynamic pruning (docs/RANKING.md §5): a pruned
** candidate list bounds what it leaves out, and recall and select through
** a pruned list return exactly what they return through the complete one
** and through the scan path (every record judged by relevance()): the same
** records, in the same order, with the same scores to the last bit, on both
** engines, under filters that turn the best candidates away.
*/
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

static uint64_t rng(void)
{
	return check_rand(&rng_state);
}

static double unif(void)
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
static void word(char *out, size_t cap, int rare)
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

static void sentence(char *out, size_t cap, size_t words, int rare)
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

static void remove_db(void)
{
	check_remove_db(db_path);
	if (pg_test_server())
		pg_test_schema_drop(pg_schema);
}

static a2m_store *open_engine(int sqlite)
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

static int64_t aged_created(const char *tier)
{
	int64_t span = strcmp(tier, "working") == 0	 ? 300000
		       : strcmp(tier, "episodic") == 0 ? 2 * 86400000LL
						       : 30 * 86400000LL;
	return fill_aged_at - (int64_t)(rng() % (uint64_t)(span / fill_age_div));
}

static int fill(a2m_store *s, int n)
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
static int churn_tx(a2m_store *s, int n, int undo)
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

static int churn(a2m_store *s, int n)
{
	return churn_tx(s, n, 0);
}

/* s churned (churn_commits) and, on SQLite, opened again; NULL when that fails. */
static a2m_store *churned(int sqlite, a2m_store *s, a2m_scorer *sc, int n)
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
static a2m_store *filled_store(int sqlite, a2m_scorer *sc, int n)
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
static a2m_scorer *server_scorer(void)
{
	a2m_scorer *parts[2] = {a2m_scorer_bm25_new(NULL), a2m_scorer_vector_new(A2M_METRIC_COSINE, 0)};
	return a2m_scorer_hybrid_new(parts, 2);
}

/* A stack over store s (NULL: none) scored by h, both its, with the given blend. */
static a2m_stack *stack_over(a2m_store *s, a2m_scorer *h, a2m_blend blend)
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
static a2m_stack *prune_stack(int sqlite, int n, a2m_blend blend)
{
	a2m_scorer *h = server_scorer();
	return stack_over(filled_store(sqlite, h, n), h, blend);
}

/* A query of 1-4 words of the corpus, rarer ones one time in two. */
static void query_text(char *out, size_t cap)
{
	sentence(out, cap, 1 + rng() % 4, rng() % 2 == 0);
}

/*
** A random selection: nothing, a tier, an owner, a scoped reader (the
** working tier is private: only its own records there), a `where` on
** metadata (one record in three, or in 25), or several at once. Turns the
** best candidates away often.
*/
static void random_selection(a2m_selection *sel, json_t **where)
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
static void same_hits(const a2m_hit *a, size_t na, const a2m_hit *b, size_t nb, const char *what)
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

static int recall_as(a2m_stack *st, int mode, const a2m_selection *sel, const char *text,
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

static void recall_same_as_complete(int sqlite, a2m_blend blend, uint64_t seed, int selective)
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

static void test_recall_pruned_same_as_complete_memory(void)
{
	recall_same_as_complete(0, (a2m_blend){0.75, 0.15, 0.10}, 11, 0);
	recall_same_as_complete(0, (a2m_blend){0.5, 0, 0.5}, 12, 0);
}

static void test_recall_pruned_same_as_complete_sqlite(void)
{
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 13, 0);
}

static void test_recall_pruned_same_as_complete_postgres(void)
{
	if (pg_test_server())
		recall_same_as_complete(2, (a2m_blend){0.75, 0.15, 0.10}, 17, 0);
}

/*
** Ages spread over each tier's half-life and beyond, saliences from -4 to
** 8: the blend's floor (stack/blend_least.c) is taken from the tiers'
** oldest records, above the relevance's share, and the pruned recall is
** still the complete one; with ages a hundred times shorter, it is near
** the blend at recency 1.
*/
static void test_recall_pruned_same_as_complete_aged(void)
{
	fill_aged_at = 1796083200000LL;  /* 2026-12-01 */
	for (fill_age_div = 1; fill_age_div <= 100; fill_age_div *= 100) {
		recall_same_as_complete(0, (a2m_blend){0.75, 0.15, 0.10}, 31, 0);
		recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 32, 0);
		recall_same_as_complete(0, (a2m_blend){0.75, 0.15, 0.10}, 33, 1);
	}
	fill_aged_at = 0;
	fill_age_div = 1;
}

/* No blend at all: the score is the relevance, the stop at its tightest. */
static void test_recall_pruned_same_as_complete_unblended(void)
{
	recall_same_as_complete(0, (a2m_blend){0, 0, 0}, 14, 0);
}

/*
** A filter that turns away the pruned list's records: recall reads the
** list to its end without proving its stop, asks for the complete list,
** and returns what the complete list gives.
*/
static void test_recall_falls_back_to_the_complete_list(void)
{
	recall_same_as_complete(0, (a2m_blend){0.75, 0.15, 0.10}, 15, 1);
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 16, 1);
	if (pg_test_server())
		recall_same_as_complete(2, (a2m_blend){0.75, 0.15, 0.10}, 18, 1);
}

/* Select by query with a limit (memory/summarize's path) prunes too, and agrees. */
static void test_select_pruned_same_as_complete(void)
{
	for (int sqlite = 0; sqlite < n_engines; sqlite++) {
		rng_state = 21 + (uint64_t)sqlite;
		a2m_stack *st = prune_stack(sqlite, 2000, (a2m_blend){0.75, 0.15, 0.10});
		CHECK(st != NULL);
		for (int k = 0; st && k < 150; k++) {
			char text[256];
			query_text(text, sizeof text);
			a2m_selection sel;
			json_t *where;
			random_selection(&sel, &where);
			size_t limit = 1 + rng() % 50;
			a2m_record **r[3] = {NULL, NULL, NULL};
			size_t n[3] = {0, 0, 0};
			a2m_error err = {0};
			/* In a read bracket, as the server's summarize reads (methods.c). */
			CHECK_INT(a2m_stack_read_begin(st, &err), 0);
			for (int mode = 0; mode < 3; mode++) {
				the_switch->mode = mode;
				CHECK_INT(a2m_stack_select(st, &sel, NULL, 0, text, limit, &r[mode],
							   &n[mode], &err), 0);
			}
			a2m_stack_read_end(st, &err);
			for (int mode = 1; mode < 3; mode++) {
				CHECK_INT(n[0], n[mode]);
				for (size_t i = 0; i < n[0] && i < n[mode]; i++)
					CHECK_STR(r[0][i]->id, r[mode][i]->id);
			}
			for (int mode = 0; mode < 3; mode++)
				a2m_record_array_free(r[mode], n[mode]);
			a2m_error_clear(&err);
			json_decref(where);
		}
		if (st)
			CHECK(st->pruned_reads > 10);
		a2m_stack_free(st);
		remove_db();
	}
}

/* limit 0 keeps every match: nothing may be pruned. */
static void test_no_pruning_without_limit(void)
{
	rng_state = 31;
	a2m_stack *st = prune_stack(0, 1500, (a2m_blend){0.75, 0.15, 0.10});
	CHECK(st != NULL);
	for (int k = 0; st && k < 40; k++) {
		char text[256];
		query_text(text, sizeof text);
		a2m_selection sel;
		memset(&sel, 0, sizeof sel);
		a2m_hit *p = NULL, *c = NULL;
		size_t np = 0, nc = 0;
		CHECK_INT(recall_as(st, ASK_AS_IS, &sel, text, 0, 0, &p, &np), 0);
		CHECK_INT(recall_as(st, ASK_COMPLETE, &sel, text, 0, 0, &c, &nc), 0);
		same_hits(p, np, c, nc, "limit 0");
		a2m_hits_free(p, np);
		a2m_hits_free(c, nc);
	}
	if (st)
		CHECK_INT(st->pruned_reads, 0);
	a2m_stack_free(st);
}

/*
** The records read are those that can still enter, the stop weighed before
** each (ranked.c), not a batch at a time: with no blend and no filter, over
** records whose relevances all differ (as many words each, "apple" i times
** in the i-th), a recall of limit k reads k records, the k best.
*/
static void test_recall_reads_only_records_that_can_enter(void)
{
	for (int sqlite = 0; sqlite < n_engines; sqlite++) {
		a2m_scorer *h = server_scorer();
		a2m_store *s = open_engine(sqlite);
		int ok = s && s->ops->index_attach(s, h->indexer) == 0 && s->ops->begin(s) == 0;
		for (int i = 1; ok && i <= 40; i++) {
			char text[512] = "", id[16];
			for (int w = 0; w < 40; w++)
				strcat(text, w < i ? "apple " : "pear ");
			snprintf(id, sizeof id, "a%d", i);
			a2m_record *r = a2m_record_new();
			ok = r && (r->id = strdup(id)) && (r->content = strdup(text)) &&
			     (r->tier = strdup("semantic"));
			if (ok) {
				r->created_at = 4102444800000LL + i;  /* 2100: recency 1 */
				ok = s->ops->insert(s, r) == 0;
			}
			a2m_record_free(r);
		}
		ok = ok && s->ops->commit(s) == 0;
		CHECK(ok);
		if (!ok) {
			if (s)
				s->ops->close(s);
			h->destroy(h);
			continue;
		}
		a2m_stack *st = stack_over(s, h, (a2m_blend){0, 0, 0});
		CHECK(st != NULL);
		for (size_t limit = 1; st && limit <= 12; limit += 11) {
			a2m_selection sel;
			memset(&sel, 0, sizeof sel);
			a2m_hit *p = NULL;
			size_t np = 0;
			uint64_t before = st->ranked_rows;
			CHECK_INT(recall_as(st, ASK_AS_IS, &sel, "apple", 0, limit, &p, &np), 0);
			CHECK_INT(np, limit);
			CHECK_INT(st->ranked_rows - before, limit);
			for (size_t i = 0; i < np; i++) {
				char want[16];
				snprintf(want, sizeof want, "a%zu", 40 - i);
				CHECK_STR(p[i].rec->id, want);
			}
			a2m_hits_free(p, np);
		}
		a2m_stack_free(st);
		remove_db();
	}
}

/* ---- the scorer's bound ------------------------------------------------ */

static int find_seq(const a2m_candidates *c, int64_t seq, double *score)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].seq == seq) {
			*score = c->v[i].score;
			return 1;
		}
	return 0;
}

/* Checks one record's relevance() against its score in the complete list. */
typedef struct judged {
	a2m_scorer           *bm;
	a2m_store            *s;
	const a2m_rank_query *q;
	const a2m_candidates *c;
	size_t                seen;
} judged;

static int judge_one(const a2m_record *rec, void *ctx)
{
	judged *j = ctx;
	double rel = -1, score = -2;
	CHECK_INT(j->bm->relevance(j->bm, j->s, j->q, &rec, 1, &rel), 0);
	CHECK(find_seq(j->c, rec->seq, &score));
	CHECK(rel == score);
	j->seen++;
	return 0;
}

/*
** The scorer's pruned list: every record it lists has its exact relevance
** (the complete list's, itself relevance()'s over every record); every
** matching record it leaves out has a relevance of at most rest_bound; and
** a list with rest_bound 0 leaves nothing out.
*/
static void test_rest_bound_bounds_every_unlisted_record(void)
{
	for (int sqlite = 0; sqlite < n_engines; sqlite++) {
		rng_state = 41 + (uint64_t)sqlite;
		a2m_scorer *bm = a2m_scorer_bm25_new(NULL);
		a2m_store *s = filled_store(sqlite, bm, 3000);
		CHECK(s != NULL);
		if (!s)
			return;
		size_t pruned = 0, left_out = 0, listed[2] = {0, 0};
		for (int k = 0; k < 400; k++) {
			char text[256];
			/* Each query twice: odd k keeps all (a caller without filters). */
			if (k % 2 == 0)
				query_text(text, sizeof text);
			a2m_rank_query pq = {.text = text, .want = 1 + rng() % 20,
					     .floor = k % 4 < 2 ? 0.75 : 1, .keeps_all = k % 2},
				       cq = {.text = text, .want = pq.want, .complete = 1};
			a2m_candidates p, c;
			/* One read bracket per query, as a server reads (methods.c). */
			if (s->ops->read_begin)
				CHECK_INT(s->ops->read_begin(s), 0);
			int rp = bm->candidates(bm, s, &pq, &p), rc = bm->candidates(bm, s, &cq, &c);
			CHECK_INT(rp, rc);
			if (rp != 0 || rc != 0) {
				if (s->ops->read_end)
					s->ops->read_end(s);
				continue;
			}
			listed[k % 2] += p.n;
			CHECK(c.rest_bound == 0);
			CHECK(p.n <= c.n);
			if (p.rest_bound > 0)
				pruned++;
			else
				CHECK_INT(p.n, c.n);
			for (size_t i = 0; i < p.n; i++) {
				double score = -1;
				CHECK(find_seq(&c, p.v[i].seq, &score));
				CHECK(score == p.v[i].score);
			}
			for (size_t i = 0; i < c.n; i++) {
				double score;
				if (find_seq(&p, c.v[i].seq, &score))
					continue;
				left_out++;
				CHECK(c.v[i].score <= p.rest_bound);
			}
			/* The complete list is relevance() over every record, to the bit. */
			judged j = {.bm = bm, .s = s, .q = &cq, .c = &c};
			int64_t seqs[40];
			size_t ns = 0;
			for (size_t i = 0; i < c.n && ns < 40; i++)
				seqs[ns++] = c.v[i].seq;
			CHECK_INT(s->ops->visit_seqs(s, seqs, ns, judge_one, &j), 0);
			CHECK_INT(j.seen, ns);
			if (s->ops->read_end)
				s->ops->read_end(s);
			free(p.v);
			free(c.v);
		}
		/* The corpus has rare words beside common ones: pruning happens. */
		if (counts_checked) {
			CHECK(pruned > 20);
			CHECK(left_out > 1000);
			/* Without a spare for filters the lists are shorter. */
			CHECK(listed[1] < listed[0] * 9 / 10);
		}
		bm->destroy(bm);
		s->ops->close(s);
		remove_db();
	}
}

/*
** The hybrid never fuses a pruned list: with a vector beside the text both
** parts judge, and the fused list is complete; with text alone the text
** part's pruned list passes through with its bound.
*/
static void test_hybrid_fuses_only_complete_lists(void)
{
	rng_state = 51;
	a2m_scorer *h = server_scorer();
	a2m_store *s = filled_store(0, h, 3000);
	CHECK(s != NULL);
	if (!s)
		return;
	/* One record with a vector, so the vector part judges. */
	double v[4] = {1, 0, 0, 0};
	a2m_record *r = a2m_record_new();
	r->id = strdup("vec");
	r->content = strdup("kalo");
	r->tier = strdup("semantic");
	r->embedding = malloc(sizeof v);
	memcpy(r->embedding, v, sizeof v);
	r->dims = 4;
	CHECK_INT(s->ops->insert(s, r), 0);
	a2m_record_free(r);
	size_t pruned = 0;
	for (int k = 0; k < 100; k++) {
		char text[256];
		query_text(text, sizeof text);
		a2m_rank_query tq = {.text = text, .want = 5},
			       vq = {.text = text, .want = 5, .vector = v, .dims = 4},
			       fq = {.text = text, .vector = v, .dims = 4, .complete = 1};
		a2m_candidates t, f, full;
		if (h->candidates(h, s, &tq, &t) == 0) {
			pruned += t.rest_bound > 0;
			free(t.v);
		}
		CHECK_INT(h->candidates(h, s, &vq, &f), 0);
		CHECK_INT(h->candidates(h, s, &fq, &full), 0);
		CHECK(f.rest_bound == 0);
		CHECK_INT(f.n, full.n);
		for (size_t i = 0; i < f.n; i++) {
			double score = -1;
			CHECK(find_seq(&full, f.v[i].seq, &score) && score == f.v[i].score);
		}
		free(f.v);
		free(full.v);
	}
	CHECK(pruned > 10);
	h->destroy(h);
	s->ops->close(s);
}

#include "prune_bounds.h"

/*
** Recall's exactness again over churned stores (records forgotten and
** rewritten over ten commits; SQLite's segments merged and the file opened
** again), block-max forced on every pruned query, then by default.
*/
static void test_pruned_same_as_complete_after_churn(void)
{
	for (int mode = 3; mode >= 1; mode--) {
		a2m_bm25_blockmax(mode);
		counts_checked = 0;
		churn_commits = 10;
		for (int e = 0; e < 2; e++) {
			/* Every list stays in seq order: block-max walks every pruned
			** query and hands none back to term at a time. */
			size_t skipped = a2m_bm25_blockmax_skipped();
			size_t fallbacks = a2m_bm25_blockmax_fallbacks();
			recall_same_as_complete(e, (a2m_blend){0.75, 0.15, 0.10}, 31 + (uint64_t)e, 0);
			CHECK_INT(a2m_bm25_blockmax_fallbacks(), fallbacks);
			if (mode >= 2)
				CHECK(a2m_bm25_blockmax_skipped() > skipped + 1000);
		}
		recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 41, 1);
		churn_commits = 0;
		counts_checked = 1;
	}
	a2m_bm25_blockmax(1);
}

/*
** Every property above again, on memory and SQLite, with
** document-at-a-time pruning on every pruned query, however short its
** lists (mode 1, the default, takes it only from 16 384 postings, which
** the corpora here never reach), walked
** by WAND with block-max (blockmax.c, mode 3) and by MaxScore (maxscore.c,
** mode 2), then with term-at-a-time pruning on every one: all exact, and
** both walks do leave postings unscored.
*/
static void test_both_prunings_on_every_query(void)
{
	static const int modes[] = {3, 2, 0};
	/*
	** On memory and SQLite: with PostgreSQL too, the walks (blockmax.c,
	** maxscore.c, bm25_prune.c, bm25.c) ran no line more (gcov), and its
	** round trips were most of this test's time. Its one path of its own,
	** a list lent as a view then copied (bm25_postings.c), and its pruned
	** recall, are the tests above (by default: the lists are the same).
	*/
	int engines = n_engines;
	n_engines = 2;
	for (size_t m = 0; m < 3; m++) {
		int mode = modes[m];
		size_t before = a2m_bm25_blockmax_skipped();
		a2m_bm25_blockmax(mode);
		counts_checked = 0;
		test_rest_bound_bounds_every_unlisted_record();
		test_recall_pruned_same_as_complete_memory();
		test_recall_pruned_same_as_complete_sqlite();
		/* test_recall_falls_back_to_the_complete_list's, but PostgreSQL's */
		recall_same_as_complete(0, (a2m_blend){0.75, 0.15, 0.10}, 15, 1);
		recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 16, 1);
		test_select_pruned_same_as_complete();
		a2m_bm25_blockmax(1);
		counts_checked = 1;
		if (mode >= 2)
			CHECK(a2m_bm25_blockmax_skipped() > before + 10000);
		else
			CHECK_INT(a2m_bm25_blockmax_skipped(), before);
	}
	n_engines = engines;
}

/*
** The comparisons above can fail: with every list's reach made too tight
** (a test hook; the bound both walks trust to leave lists unread), each
** walk misses records, on both engines, and recall_same_as_complete says
** so.
*/
static void test_walks_with_reaches_too_tight_miss_records(void)
{
	for (int mode = 3; mode >= 2; mode--) {
		a2m_bm25_blockmax(mode);
		counts_checked = 0;
		int failures = check_failures_in_test;
		fprintf(stderr, "  (mismatches below are expected: reaches made too tight, mode %d)\n",
			mode);
		a2m_bmw_reach_for_tests(0.5);
		for (int e = 0; e < 2; e++)
			recall_same_as_complete(e, (a2m_blend){0.75, 0.15, 0.10}, 71 + (uint64_t)e, 0);
		a2m_bmw_reach_for_tests(1.0);
		int missed = check_failures_in_test - failures;
		check_failures_in_test = failures;
		CHECK(missed > 0);
		counts_checked = 1;
	}
	a2m_bm25_blockmax(1);
}

/*
** SQLite's long lists read a block at a time (skip tables): exact over
** segments of disjoint seq ranges (a store filled over 12 commits: some
** merged, some not, the last ones plain-listed when short), block-max on
** every query; and a skip table whose bounds are too tight (a test hook)
** makes recall miss records, which the comparison and a2m check catch.
*/
static void test_skip_tables_over_segments_and_too_tight(void)
{
	counts_checked = 0;
	fill_commits = 12;
	int lazy_before = lent_lazily;
	a2m_bm25_blockmax(2);  /* MaxScore: probes a block's bound before decoding it */
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 51, 0);
	a2m_bm25_blockmax(3);  /* WAND: seeks by the blocks' last seqs */
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 51, 0);
	lent_bounds_bound_their_postings(1, 0);
	CHECK(lent_lazily > lazy_before + 10);
	/* A cache too small to keep them: lent for their read bracket only. */
	a2m_sqlite_index_cache_budget_for_tests(40);
	lazy_before = lent_lazily;
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 53, 0);
	a2m_bm25_blockmax(2);
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 53, 0);
	a2m_bm25_blockmax(3);
	lent_bounds_bound_their_postings(1, 0);
	CHECK(lent_lazily > lazy_before + 10);
	a2m_sqlite_index_cache_budget_for_tests(0);
	/* Too tight: the same comparison must fail (WAND trusts every block's bound). */
	int failures = check_failures_in_test;
	fprintf(stderr, "  (mismatches below are expected: skip tables made too tight)\n");
	a2m_seg_skip_for_tests(2);
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 51, 0);
	int missed = check_failures_in_test - failures;
	check_failures_in_test = failures;
	CHECK(missed > 0);
	/* ... and a2m check says which table is wrong. */
	a2m_scorer *sc = a2m_scorer_bm25_new(NULL);
	rng_state = 52;
	a2m_store *s = filled_store(1, sc, 2500);
	a2m_seg_skip_for_tests(0);
	CHECK(s != NULL);
	if (s) {
		int problems = 0;
		a2m_check_options o = {.ix = sc->indexer, .report = count_problem, .ctx = &problems};
		fprintf(stderr, "  (problems below are expected: skip tables made too tight)\n");
		CHECK_INT(s->ops->check(s, &o), 0);
		CHECK(problems > 0);
		/* --repair rebuilds the index: its tables right again. */
		CHECK_INT(s->ops->repair(s, &o, 1u << A2M_CHECK_INDEX), 0);
		problems = 0;
		CHECK_INT(s->ops->check(s, &o), 0);
		CHECK_INT(problems, 0);
		s->ops->close(s);
		sc->destroy(sc);
	}
	remove_db();
	fill_commits = 0;
	counts_checked = 1;
	a2m_bm25_blockmax(1);
}

/* One integer from the test's SQLite file (-1 when the query fails). */
static int64_t sql_int64(const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = -1;
	if (sqlite3_open(db_path, &db) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* A SQLite file of n records indexed for sc, closed (sc destroyed): 1, or 0 (checked). */
static int filled_file(a2m_scorer *sc, int n)
{
	a2m_store *s = filled_store(1, sc, n);
	CHECK(s != NULL);
	if (!s)
		return 0;
	s->ops->close(s);
	sc->destroy(sc);
	return 1;
}

/*
** A file of the previous layout (postings/5: no skip table anywhere) is
** taken as it is, renamed postings/6 at a read-write open, and read
** exactly: its plain lists beside the skip tables of the segments
** written after it.
*/
static void test_a_file_without_skip_tables_is_read_as_it_is(void)
{
	a2m_scorer *sc = a2m_scorer_bm25_new(NULL);
	a2m_seg_skip_for_tests(1);
	rng_state = 61;
	fill_commits = 3;
	int made = filled_file(sc, 2000);
	fill_commits = 0;
	a2m_seg_skip_for_tests(0);
	if (!made)
		return;
	sqlite3 *db = NULL;
	CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
	CHECK_INT(sqlite3_exec(db, "UPDATE a2m_meta SET value = replace(value, 'postings/7|',"
			       " 'postings/5|') WHERE name = 'index'", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	/* Opened: the index taken as it is (its rows unchanged), renamed. */
	int64_t bytes = sql_int64("SELECT sum(length(data)) FROM a2m_segments");
	CHECK(bytes > 0);
	CHECK_INT(sql_int64("SELECT value LIKE 'postings/5|%' FROM a2m_meta WHERE name = 'index'"), 1);
	keep_db = 1;
	filled_file(a2m_scorer_bm25_new(NULL), 2000);
	keep_db = 0;
	CHECK_INT(sql_int64("SELECT sum(length(data)) FROM a2m_segments"), bytes);
	CHECK_INT(sql_int64("SELECT value LIKE 'postings/7|%' FROM a2m_meta WHERE name = 'index'"), 1);
	/* Churned (new segments, with tables), compared. */
	a2m_bm25_blockmax(2);
	counts_checked = 0;
	churn_commits = 4;
	keep_db = 1;
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 62, 0);
	keep_db = 0;
	churn_commits = 0;
	counts_checked = 1;
	a2m_bm25_blockmax(1);
	remove_db();
}

/*
** 150 random queries over st, each recalled twice pruned and once
** complete (each in a bracket of its own): the same hits every time.
*/
static void pruned_twice_and_complete(a2m_stack *st)
{
	a2m_selection sel;
	memset(&sel, 0, sizeof sel);
	for (int k = 0; st && k < 150; k++) {
		char text[256];
		query_text(text, sizeof text);
		size_t limit = 1 + rng() % 5;
		a2m_hit *h[3] = {NULL, NULL, NULL};
		size_t n[3] = {0, 0, 0};
		CHECK_INT(recall_as(st, ASK_AS_IS, &sel, text, 0, limit, &h[0], &n[0]), 0);
		CHECK_INT(recall_as(st, ASK_AS_IS, &sel, text, 0, limit, &h[1], &n[1]), 0);
		CHECK_INT(recall_as(st, ASK_COMPLETE, &sel, text, 0, limit, &h[2], &n[2]), 0);
		same_hits(h[1], n[1], h[0], n[0], "pruned again vs pruned");
		same_hits(h[0], n[0], h[2], n[2], "pruned vs complete");
		for (int m = 0; m < 3; m++)
			a2m_hits_free(h[m], n[m]);
	}
}

/* pruned_twice_and_complete over a store of 20 000 records (rng 73), then gone. */
static void pruned_over_20000(void)
{
	rng_state = 73;
	a2m_stack *st = prune_stack(1, 20000, (a2m_blend){0.75, 0.15, 0.10});
	CHECK(st != NULL);
	pruned_twice_and_complete(st);
	a2m_stack_free(st);
	remove_db();
}

/*
** Long lists read into buffers of their own and taken as they are by the
** lazily read term (sqlite_segments_read.c, OWN_BYTES: here every list of
** 64 bytes or more), exact; then with a cache so small that the blocks a
** kept term gathers outweigh what an entry may hold: with probes that
** fill every block they stop in (as before peeks), those blocks are shed
** between queries (decoded again when asked); with peeks (the default),
** a probe decodes its block up to the record and keeps nothing, with the
** cache small or with room for every block. Exact every way.
*/
static void test_long_lists_taken_as_read_and_shed(void)
{
	a2m_bm25_blockmax(2);
	counts_checked = 0;
	fill_commits = 12;
	a2m_segments_own_bytes_for_tests(64);
	int lazy_before = lent_lazily;
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 71, 0);
	lent_bounds_bound_their_postings(1, 0);
	CHECK(lent_lazily > lazy_before + 10);
	/*
	** A kept term's blocks decoded by one pruned recall, shed before the
	** next one's, then the list read whole (complete: too big to keep
	** then, let go at the bracket's end); over 20 000 records, whose
	** frequent words have lists of dozens of blocks (a budget of 5 000
	** bytes: half of it is the most a term may hold).
	*/
	size_t sheds = a2m_seg_lazy_sheds(), peeks = a2m_seg_lazy_peeks();
	a2m_sqlite_index_cache_budget_for_tests(5000);
	a2m_sqlite_index_peeks_fill_for_tests(1);
	pruned_over_20000();
	CHECK(a2m_seg_lazy_sheds() > sheds);
	CHECK(a2m_seg_lazy_peeks() == peeks);
	/* The same with peeks: blocks decoded up to a record, not kept. */
	a2m_sqlite_index_peeks_fill_for_tests(0);
	pruned_over_20000();
	CHECK(a2m_seg_lazy_peeks() > peeks);
	a2m_sqlite_index_cache_budget_for_tests(0);
	/*
	** With the cache's whole budget, room for every block: probes into
	** long lists still peek and keep nothing (sqlite_index_read.c,
	** PEEK_FILL_BYTES, here 4 KiB: 20 000 records' lists are short),
	** exact all the same.
	*/
	peeks = a2m_seg_lazy_peeks();
	a2m_sqlite_index_peek_fill_bytes_for_tests(4096);
	pruned_over_20000();
	CHECK(a2m_seg_lazy_peeks() > peeks);
	a2m_sqlite_index_peek_fill_bytes_for_tests(0);
	a2m_segments_own_bytes_for_tests(0);
	fill_commits = 0;
	counts_checked = 1;
	a2m_bm25_blockmax(1);
}

/* A second connection writing to the file while the test reads it. */
typedef struct writer {
	pthread_t   thread;
	atomic_int  stop;
	atomic_int  queries;  /* the reader's, so far: the writer keeps pace */
	int         commits, rc;
	char      (*texts)[256];
	size_t      ntexts;
} writer;

/*
** Commits of 40 records each until told to stop (segments flushed and
** merged), at most two ahead of the reader's queries: unpaced, it wrote
** 3 781 commits (151 000 records) while the reader ran its 200 queries,
** every one of which scans the store, for nothing the test checks.
*/
static void *write_on(void *arg)
{
	writer *w = arg;
	a2m_scorer *sc = server_scorer();
	a2m_store *s = NULL;
	char err[256], id[32];
	size_t at = 0;
	if (!sc || a2m_store_sqlite_open(db_path, NULL, &s, err, sizeof err) != 0 ||
	    s->ops->index_attach(s, sc->indexer) != 0) {
		w->rc = -1;
		goto out;
	}
	while (!atomic_load(&w->stop) && !w->rc) {
		if (w->commits > atomic_load(&w->queries) + 2) {
			usleep(200);
			continue;
		}
		w->rc = s->ops->begin(s);
		for (int i = 0; i < 40 && !w->rc; i++, at++) {
			a2m_record *r = a2m_record_new();
			if (!r) {
				w->rc = -1;
				break;
			}
			snprintf(id, sizeof id, "w%zu", at);
			r->id = strdup(id);
			r->content = strdup(w->texts[at % w->ntexts]);
			r->tier = strdup(tiers[at % 4]);
			r->created_at = 4102444800000LL + 100000 + (int64_t)at;
			r->salience = 1;
			w->rc = s->ops->insert(s, r);
			a2m_record_free(r);
		}
		if (!w->rc)
			w->rc = s->ops->commit(s);
		else
			s->ops->rollback(s);
		w->commits++;
	}
out:
	if (s)
		s->ops->close(s);
	if (sc)
		sc->destroy(sc);
	return NULL;
}

/*
** Lists read a block at a time while another connection commits to the
** file and merges its segments (rows rewritten, segments dropped): each
** query pruned, complete and scanned in one read bracket, so in one
** snapshot, the same; the lists a bracket reads are its own copies, and
** the cache sees every commit (its data version).
*/
static void test_lists_read_while_another_connection_merges(void)
{
	a2m_bm25_blockmax(2);
	counts_checked = 0;
	fill_commits = 9;
	a2m_segments_own_bytes_for_tests(64);
	rng_state = 81;
	a2m_stack *st = prune_stack(1, 2500, (a2m_blend){0.75, 0.15, 0.10});
	CHECK(st != NULL);
	static char texts[600][256];
	for (size_t i = 0; i < 600; i++)
		sentence(texts[i], sizeof texts[i], 4 + rng() % 14, 0);
	writer w = {.texts = texts, .ntexts = 600};
	atomic_init(&w.stop, 0);
	atomic_init(&w.queries, 0);
	int started = st && pthread_create(&w.thread, NULL, write_on, &w) == 0;
	CHECK(started);
	size_t skipped = a2m_bm25_blockmax_skipped();
	size_t reads_before = a2m_segments_block_reads();
	for (int k = 0; started && k < 200; k++) {
		char text[256];
		query_text(text, sizeof text);
		a2m_selection sel;
		memset(&sel, 0, sizeof sel);
		a2m_error err = {0};
		a2m_hit *h[3] = {NULL, NULL, NULL};
		size_t n[3] = {0, 0, 0};
		size_t limit = 1 + rng() % 20;
		a2m_rank_query q = {.text = text};
		int rc = a2m_stack_read_begin(st, &err);
		CHECK_INT(rc, 0);
		for (int m = 0; !rc && m < 3; m++) {
			the_switch->mode = m;
			rc = a2m_stack_recall(st, &sel, &q, 0, limit, &h[m], &n[m], &err);
			CHECK_INT(rc, 0);
			if (rc)
				fprintf(stderr, "  recall: %s\n", err.message);
		}
		if (!rc)
			a2m_stack_read_end(st, &err);
		a2m_error_clear(&err);
		same_hits(h[ASK_AS_IS], n[ASK_AS_IS], h[ASK_COMPLETE], n[ASK_COMPLETE],
			  "pruned vs complete");
		same_hits(h[ASK_AS_IS], n[ASK_AS_IS], h[ASK_SCAN], n[ASK_SCAN], "pruned vs scan");
		for (int m = 0; m < 3; m++)
			a2m_hits_free(h[m], n[m]);
		atomic_fetch_add(&w.queries, 1);
	}
	if (started) {
		atomic_store(&w.stop, 1);
		pthread_join(w.thread, NULL);
		CHECK_INT(w.rc, 0);
		/* Enough commits for merges (a level is merged at 8 segments). */
		CHECK(w.commits > 8);
		CHECK(a2m_bm25_blockmax_skipped() > skipped);
		CHECK(a2m_segments_block_reads() > reads_before);
	}
	a2m_stack_free(st);
	remove_db();
	a2m_segments_own_bytes_for_tests(0);
	fill_commits = 0;
	counts_checked = 1;
	a2m_bm25_blockmax(1);
}

/*
** A block whose bytes do not decode as its skip table says (one byte of
** the first block of the longest list set to a varint's continuation): a
** recall reading the term a block at a time fails with a store error that
** names the term and says what a2m check says, which reports it too.
*/
static void test_a_corrupt_block_is_a_clear_error(void)
{
	a2m_scorer *sc = a2m_scorer_bm25_new(NULL);
	rng_state = 91;
	if (!filled_file(sc, 2500))
		return;
	/* The longest row: a list long enough to have a skip table. */
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
	CHECK_INT(sqlite3_prepare_v2(db, "SELECT seg, term, data FROM a2m_segments"
				     " ORDER BY length(data) DESC LIMIT 1", -1, &st, NULL), SQLITE_OK);
	CHECK_INT(sqlite3_step(st), SQLITE_ROW);
	int64_t seg = sqlite3_column_int64(st, 0);
	char key[256], term[256] = "";
	snprintf(key, sizeof key, "%s", (const char *)sqlite3_column_text(st, 1));
	size_t n = (size_t)sqlite3_column_bytes(st, 2);
	unsigned char *data = malloc(n);
	CHECK(data != NULL);
	if (data)
		memcpy(data, sqlite3_column_blob(st, 2), n);
	sqlite3_finalize(st);
	/* Its longest list. */
	const unsigned char *p = data, *t, *list = NULL, *l;
	size_t tlen, lsize = 0, ls;
	while (data && a2m_seg_next_in_block(&p, data + n, &t, &tlen, &l, &ls) == 1)
		if (ls > lsize && tlen < sizeof term) {
			list = l;
			lsize = ls;
			memcpy(term, t, tlen);
			term[tlen] = '\0';
		}
	a2m_seg_skip sk;
	CHECK_INT(a2m_seg_skip_open(list, lsize, &sk), 1);
	CHECK(sk.nblocks > 2);
	a2m_seg_skip_iter it;
	a2m_seg_skip_block b;
	a2m_seg_skip_first(&sk, &it);
	CHECK_INT(a2m_seg_skip_next(&it, &b), 1);
	/* Block 0's last byte: its last entry's varint now runs past the block. */
	data[(size_t)(sk.entries_at - data) + b.at + b.bytes - 1] |= 0x80;
	CHECK_INT(sqlite3_prepare_v2(db, "UPDATE a2m_segments SET data = ?3 WHERE seg = ?1"
				     " AND term = ?2", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, seg);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 3, data, (int)n, SQLITE_STATIC);
	CHECK_INT(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(data);
	/* Recalled through block-max: the clear error, naming the term. */
	a2m_bm25_blockmax(2);
	keep_db = 1;
	a2m_stack *stk = prune_stack(1, 2500, (a2m_blend){0.75, 0.15, 0.10});
	keep_db = 0;
	CHECK(stk != NULL);
	if (stk) {
		a2m_selection sel;
		memset(&sel, 0, sizeof sel);
		a2m_error err = {0};
		a2m_hit *h = NULL;
		size_t nh = 0;
		a2m_rank_query q = {.text = term};
		the_switch->mode = ASK_AS_IS;
		int rc = a2m_stack_read_begin(stk, &err);
		CHECK_INT(rc, 0);
		if (!rc) {
			CHECK_INT(a2m_stack_recall(stk, &sel, &q, 0, 5, &h, &nh, &err),
				  A2M_INTERNAL_ERROR);
			a2m_stack_read_end(stk, &(a2m_error){0});
		}
		char want[512];
		snprintf(want, sizeof want, "block 0 of the list of \"%s\" does not match its skip "
			 "table (a2m check reports it", term);
		CHECK(strstr(err.message, want) != NULL);
		if (!strstr(err.message, want))
			fprintf(stderr, "  got: %s\n", err.message);
		a2m_error_clear(&err);
		a2m_hits_free(h, nh);
		/* a2m check names the same table. */
		int problems = 0;
		a2m_check_options o = {.ix = the_switch->inner->indexer, .report = count_problem,
				       .ctx = &problems};
		fprintf(stderr, "  (problems below are expected: a block made corrupt)\n");
		CHECK_INT(stk->store->ops->check(stk->store, &o), 0);
		CHECK(problems > 0);
		a2m_stack_free(stk);
	}
	a2m_bm25_blockmax(1);
	remove_db();
}

/* The ids of a recall of query on h (limit 20), as one string. */
static void recalled_ids(a2m *h, const char *query, char *out, size_t cap)
{
	json_t *r = check_call(h, "memory/recall", "{\"query\":\"%s\",\"limit\":20}", query);
	json_t *recs = json_object_get(json_object_get(r, "result"), "records"), *rec;
	size_t i, n = 0;
	out[0] = '\0';
	json_array_foreach(recs, i, rec)
		n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s ",
				      json_string_value(json_object_get(rec, "id")));
	CHECK(json_array_size(recs) == 20);
	json_decref(r);
}

/* Counts a term's postings (index_postings' visit). */
static int count_postings(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	(void)seq, (void)tf, (void)dl;
	++*(size_t *)ctx;
	return 0;
}

/* The postings cache budget of the connection a bracket on s is lent (0: none). */
typedef struct reader_budget {
	a2m_store *s;
	size_t     budget;
} reader_budget;

static void *budget_on_a_reader(void *arg)
{
	reader_budget *rb = arg;
	if (rb->s->ops->read_begin(rb->s) != 0)
		return NULL;
	sqlstore *c = a2m_sqlite_conn(rb->s);
	if (c != (sqlstore *)rb->s && c->index && c->index->cache)
		(void)a2m_pcache_used(c->index->cache, &rb->budget);
	rb->s->ops->read_end(rb->s);
	return NULL;
}

/*
** What the postings cache of h's store holds once every term of the corpus
** was read through it, and its budget: *main, the main connection's (read
** outside a bracket, so through its cache), *bracket the budget of a
** reader of the pool, as a read bracket is lent one (0: none was). Returns the postings read, 0 when the store could not be reached.
*/
static size_t fill_postings_cache(a2m *h, size_t *used, size_t *main, size_t *bracket)
{
	a2m_store *s = h->srv.stack->store;
	sqlstore *m = (sqlstore *)s;
	*used = *main = *bracket = 0;
	if (strcmp(s->ops->engine, "sqlite") != 0 || !m->index || !m->index->cache)
		return 0;
	/* Every surface form word() can draw, analysed: the corpus's terms. */
	static const char *const syl[] = {"ka", "lo", "mi", "ren", "to", "vas", "qui", "del",
					  "no", "par", "su", "fin"};
	static const char *const suffix[] = {"", "s", "ing", "ed"};
	a2m_buf text = {0};
	for (size_t i = 12; i < VOCAB + 12; i++)
		for (size_t k = 0; k < 4; k++) {
			for (size_t j = i; j; j /= 12)
				a2m_buf_puts(&text, syl[j % 12]);
			a2m_buf_printf(&text, "%s ", suffix[k]);
		}
	a2m_indexer *ix = m->index->ix;
	a2m_doc_terms dt;
	memset(&dt, 0, sizeof dt);
	size_t n = 0;
	if (!text.failed && ix->analyze(ix, text.p, &dt) == 0)
		for (size_t t = 0; t < dt.n; t++)
			CHECK_INT(s->ops->index_postings(s, dt.terms[t].text, dt.terms[t].len,
							 count_postings, &n), 0);
	ix->release(ix, &dt);
	a2m_buf_free(&text);
	*used = a2m_pcache_used(m->index->cache, main);
	/* While this thread holds the main connection in a bracket, another's
	** bracket is lent a reader of the pool. */
	pthread_t t;
	reader_budget rb = {s, 0};
	if (s->ops->read_begin(s) == 0) {
		CHECK(pthread_create(&t, NULL, budget_on_a_reader, &rb) == 0 &&
		      pthread_join(t, NULL) == 0);
		s->ops->read_end(s);
	}
	*bracket = rb.budget;
	return n;
}

/*
** The option postings_cache_mb (1 to 65536) through the library: refused
** out of its bounds; a server keeping 1 MiB of lists gives that budget to
** every connection (the main one, the readers), keeps no more than that of
** a corpus whose lists take more, and recalls what one with the default
** (which keeps them all) recalls, on the same file.
*/
static void test_the_postings_cache_budget_is_an_option(void)
{
	a2m_config *cfg = NULL;
	CHECK_INT(a2m_config_new(&cfg), A2M_OK);
	CHECK(a2m_config_set(cfg, "postings_cache_mb", "0") != A2M_OK);
	CHECK(a2m_config_set(cfg, "postings_cache_mb", "65537") != A2M_OK);
	CHECK_INT(a2m_config_set(cfg, "postings_cache_mb", "1"), A2M_OK);
	a2m_config_free(cfg);
	remove_db();
	a2m *h = check_open("engine", "sqlite", "path", db_path, NULL);
	CHECK(h != NULL);
	char text[256];
	rng_state = 101;
	for (int b = 0; h && b < 6; b++) {
		json_t *recs = json_array();
		for (int i = 0; i < 1000; i++) {
			sentence(text, sizeof text, 4 + rng() % 14, 0);
			json_array_append_new(recs, json_pack("{ss}", "content", text));
		}
		json_t *r = check_call_json(h, "memory/remember", json_pack("{so}", "records", recs));
		CHECK_INT(check_error_code(r), 0);
		json_decref(r);
	}
	char want[2048], got[2048];
	size_t used, main_budget, bracket_budget, postings;
	snprintf(text, sizeof text, "kalo lolo");
	if (h) {
		recalled_ids(h, text, want, sizeof want);
		/* The default keeps every list: more than 1 MiB of them. */
		postings = fill_postings_cache(h, &used, &main_budget, &bracket_budget);
		CHECK(main_budget == (size_t)64 << 20 && bracket_budget == main_budget);
		CHECK(postings * sizeof(a2m_posting) > (size_t)1 << 20);
		CHECK(used > (size_t)1 << 20);
		a2m_close(h);
	}
	h = check_open("engine", "sqlite", "path", db_path, "postings_cache_mb", "1", NULL);
	CHECK(h != NULL);
	if (h) {
		recalled_ids(h, text, got, sizeof got);
		CHECK(strcmp(got, want) == 0);
		postings = fill_postings_cache(h, &used, &main_budget, &bracket_budget);
		CHECK(main_budget == (size_t)1 << 20 && bracket_budget == main_budget);
		CHECK(postings * sizeof(a2m_posting) > (size_t)1 << 20);
		CHECK(used <= (size_t)1 << 20 && used > (size_t)1 << 19);
		a2m_close(h);
	}
	remove_db();
}

int main(void)
{
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-prune-%d.db", (int)getpid());
	snprintf(pg_schema, sizeof pg_schema, "a2m_tp_%d", (int)getpid());
	if (pg_test_server())
		n_engines = 3;
	else
		printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
	static const test_case tests[] = {
		TEST(test_rest_bound_bounds_every_unlisted_record),
		TEST(test_hybrid_fuses_only_complete_lists),
		TEST(test_recall_pruned_same_as_complete_memory),
		TEST(test_recall_pruned_same_as_complete_sqlite),
		TEST(test_recall_pruned_same_as_complete_postgres),
		TEST(test_recall_pruned_same_as_complete_unblended),
		TEST(test_recall_pruned_same_as_complete_aged),
		TEST(test_recall_falls_back_to_the_complete_list),
		TEST(test_select_pruned_same_as_complete),
		TEST(test_no_pruning_without_limit),
		TEST(test_recall_reads_only_records_that_can_enter),
		TEST(test_both_prunings_on_every_query),
		TEST(test_walks_with_reaches_too_tight_miss_records),
		TEST(test_lent_bounds_bound_their_postings_memory),
		TEST(test_lent_bounds_bound_their_postings_sqlite),
		TEST(test_pruned_same_as_complete_after_churn),
		TEST(test_skip_tables_over_segments_and_too_tight),
		TEST(test_a_file_without_skip_tables_is_read_as_it_is),
		TEST(test_long_lists_taken_as_read_and_shed),
		TEST(test_lists_read_while_another_connection_merges),
		TEST(test_a_corrupt_block_is_a_clear_error),
		TEST(test_the_postings_cache_budget_is_an_option),
		{NULL, NULL},
	};
	int rc = run_tests(tests);
	remove_db();
	return rc;
}
