/*
** test_index.c — the term index of the storage seam (store.h: index_attach,
** index_stats, index_postings, visit_seqs), each rule against both engines.
**
** The stores are given a trivial analyser (words are runs of ASCII letters
** and digits, lower-cased) that counts its calls, so the rules are about
** the store, not the analysis: what is indexed when, in which transaction,
** and what survives a rollback or a reopen.
*/
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "a2m.h"
#include <sqlite3.h>

#include "store/sqlite_index.h"
#include "store/sqlite_segments.h"
#include "store/store.h"

#include "pg_helper.h"
#include "util/hash.h"

static int n_passed, n_failed;
static char failure[512];

#define EXPECT(cond) do { \
	if (!(cond)) { snprintf(failure, sizeof failure, "line %d: %s", __LINE__, #cond); return; } \
} while (0)

#define EXPECT_INT(got, want) do { \
	long long g_ = (long long)(got), w_ = (long long)(want); \
	if (g_ != w_) { snprintf(failure, sizeof failure, "line %d: %s is %lld, want %lld", \
				 __LINE__, #got, g_, w_); return; } \
} while (0)

#define EXPECT_STR(got, want) do { \
	const char *g_ = (got), *w_ = (want); \
	if (strcmp(g_, w_) != 0) { snprintf(failure, sizeof failure, "line %d: %s is \"%.200s\"", \
					    __LINE__, #got, g_); return; } \
} while (0)

#define EXPECT_OK(call) do { \
	int rc_ = (call); \
	if (rc_ != 0) { snprintf(failure, sizeof failure, "line %d: %s returned %d (%s)", \
				 __LINE__, #call, rc_, t->s->errmsg); return; } \
} while (0)

/* ---- the test analyser ---- */

typedef struct test_ix {
	a2m_indexer base;
	int         calls;
} test_ix;

static int tix_analyze(a2m_indexer *ix, const char *text, a2m_doc_terms *out)
{
	((test_ix *)ix)->calls++;
	size_t cap = strlen(text) / 2 + 2;
	a2m_term *terms = calloc(cap, sizeof *terms);
	char *buf = malloc(strlen(text) + 1);
	if (!terms || !buf) {
		free(terms);
		free(buf);
		return -1;
	}
	strcpy(buf, text);
	memset(out, 0, sizeof *out);
	for (const char *p = text; *p; p++)
		if (!isspace((unsigned char)*p))
			out->has_text = 1;
	for (char *p = buf; *p;) {
		while (*p && !isalnum((unsigned char)*p))
			p++;
		char *w = p;
		while (*p && isalnum((unsigned char)*p)) {
			*p = (char)tolower((unsigned char)*p);
			p++;
		}
		uint32_t len = (uint32_t)(p - w);
		if (!len)
			break;
		out->length++;
		size_t i;
		for (i = 0; i < out->n; i++)
			if (terms[i].len == len && memcmp(terms[i].text, w, len) == 0)
				break;
		if (i == out->n)
			terms[out->n++] = (a2m_term){.text = w, .len = len, .tf = 0};
		terms[i].tf++;
	}
	out->terms = terms;
	out->priv = buf;
	return 0;
}

static void tix_release(a2m_indexer *ix, a2m_doc_terms *dt)
{
	(void)ix;
	free(dt->terms);
	free(dt->priv);
	memset(dt, 0, sizeof *dt);
}

static test_ix tix = {{"test-words/1", tix_analyze, tix_release, NULL, NULL, NULL}, 0};
static test_ix tix2 = {{"test-words/2", tix_analyze, tix_release, NULL, NULL, NULL}, 0};

/* ---- the harness ---- */

typedef struct tctx {
	const char *engine;
	char        path[128];
	char        schema[64];   /* PostgreSQL: the test's schema (pg_helper.h) */
	a2m_store  *s;
} tctx;

static void remove_files(const char *path)
{
	static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
	char name[160];
	for (size_t i = 0; path[0] && i < 4; i++) {
		snprintf(name, sizeof name, "%s%s", path, suffixes[i]);
		unlink(name);
	}
}

/*
** SQLite merges the index inside the commit that fills a level (1), or
** ahead, on a thread, in the next transaction (0: the default). The tests
** written for the first run with it set (RUN_INLINE).
*/
static int merge_inline;

static int open_plain(tctx *t, int read_only)
{
	char err[256];
	if (strcmp(t->engine, "memory") == 0)
		return a2m_store_memory_open(&t->s, err, sizeof err);
	if (strcmp(t->engine, "postgres") == 0) {
		a2m_postgres_options po = {.read_only = read_only, .schema = t->schema};
		return a2m_store_postgres_open(pg_test_server(), &po, &t->s, err, sizeof err);
	}
	a2m_sqlite_options opt = {.read_only = read_only, .merge_inline = merge_inline};
	return a2m_store_sqlite_open(t->path, &opt, &t->s, err, sizeof err);
}

/* Opens the store with ix attached. */
static int open_indexed(tctx *t, test_ix *ix)
{
	int rc = open_plain(t, 0);
	if (rc == 0)
		rc = t->s->ops->index_attach(t->s, &ix->base);
	return rc;
}

static void close_store(tctx *t)
{
	if (t->s)
		t->s->ops->close(t->s);
	t->s = NULL;
}

/* Which engines: every one; SQLite alone (its segments); SQLite merging
** inline; the two that keep an index across a reopen. */
enum { BOTH, SQLITE_ONLY, SQLITE_INLINE, DURABLE };

/* The merge hooks back at their defaults: a rule that failed half-way left them set. */
static void hooks_reset(void)
{
	a2m_segments_merge_factor_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	a2m_segments_ahead_wait_for_tests(0);
	(void)a2m_seg_job_release_for_tests();
}

static void run(const char *name, void (*fn)(tctx *), int which)
{
	static const char *const engines[] = {"memory", "sqlite", "postgres"};
	merge_inline = which == SQLITE_INLINE;
	for (int i = 0; i < 3; i++) {
		if ((which != BOTH && which != DURABLE && i != 1) || (which == DURABLE && i == 0) ||
		    (i == 2 && !pg_test_server()))
			continue;
		tctx t;
		memset(&t, 0, sizeof t);
		t.engine = engines[i];
		if (i == 1)
			snprintf(t.path, sizeof t.path, "/tmp/a2m-test-index-%d.db", (int)getpid());
		remove_files(t.path);
		failure[0] = '\0';
		tix.calls = tix2.calls = 0;
		/* One schema for the program, emptied before each rule. */
		if (i == 2)
			snprintf(t.schema, sizeof t.schema, "a2m_ti_%d", (int)getpid());
		if (i == 2 && pg_test_schema_reset(t.schema) != 0)
			snprintf(failure, sizeof failure, "cannot make a schema on the test server");
		else if (open_indexed(&t, &tix) != 0)
			snprintf(failure, sizeof failure, "cannot open the store");
		else
			fn(&t);
		close_store(&t);
		hooks_reset();
		remove_files(t.path);
		if (failure[0]) {
			n_failed++;
			printf("FAIL %s [%s]: %s\n", name, t.engine, failure);
		} else {
			n_passed++;
			printf("ok %s [%s]\n", name, t.engine);
		}
	}
}

#define RUN(fn)        run(#fn, fn, BOTH)
#define RUN_SQLITE(fn) run(#fn, fn, SQLITE_ONLY)
#define RUN_INLINE(fn) run(#fn, fn, SQLITE_INLINE)
#define RUN_DURABLE(fn) run(#fn, fn, DURABLE)
/* Rules about the segments each commit writes: run without the tail. */
#define RUN_NO_TAIL(how, fn) do { \
	a2m_sqlite_index_tail_for_tests(1); \
	how(fn); \
	a2m_sqlite_index_tail_for_tests(0); \
} while (0)

/* ---- helpers ---- */

static int64_t insert(tctx *t, const char *id, const char *content)
{
	a2m_record r;
	memset(&r, 0, sizeof r);
	r.id = (char *)id;
	r.content = (char *)content;
	r.tier = "semantic";
	r.created_at = 1000;
	r.salience = 1;
	if (t->s->ops->insert(t->s, &r) != 0)
		return -1;
	return r.seq;
}

/* Replaces id's content (and bumps access_count, as a touch would). */
static int update(tctx *t, const char *id, const char *content, int64_t access)
{
	a2m_record *r = NULL;
	int rc = t->s->ops->get(t->s, id, &r);
	if (rc || !r)
		return rc ? rc : -1;
	if (content) {
		free(r->content);
		r->content = strdup(content);
	}
	r->access_count = access;
	rc = t->s->ops->update(t->s, r);
	a2m_record_free(r);
	return rc;
}

typedef struct plist {
	int64_t  seq[64];
	uint32_t tf[64], dl[64];
	int      n;
} plist;

static int collect(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	plist *p = ctx;
	if (p->n < 64) {
		p->seq[p->n] = seq;
		p->tf[p->n] = tf;
		p->dl[p->n] = dl;
		p->n++;
	}
	return 0;
}

/* How many postings term has (-1 on failure). */
static int df(tctx *t, const char *term)
{
	plist p = {0};
	if (t->s->ops->index_postings(t->s, term, strlen(term), collect, &p) != 0)
		return -1;
	return p.n;
}

static a2m_index_stats stats(tctx *t)
{
	a2m_index_stats st;
	if (t->s->ops->index_stats(t->s, &st) != 0)
		st.docs = st.total_len = st.unindexed = -1;
	return st;
}

/* ---- the rules ---- */

static void test_insert_indexes_terms_with_counts_and_length(tctx *t)
{
	int64_t seq = insert(t, "a", "Deploy key, deploy often");
	EXPECT(seq > 0);
	plist p = {0};
	EXPECT_OK(t->s->ops->index_postings(t->s, "deploy", 6, collect, &p));
	EXPECT_INT(p.n, 1);
	EXPECT_INT(p.seq[0], seq);
	EXPECT_INT(p.tf[0], 2);
	EXPECT_INT(p.dl[0], 4);
	EXPECT_INT(df(t, "often"), 1);
	EXPECT_INT(df(t, "nowhere"), 0);
	a2m_index_stats st = stats(t);
	EXPECT_INT(st.docs, 1);
	EXPECT_INT(st.total_len, 4);
	EXPECT_INT(st.unindexed, 0);
}

static void test_text_without_terms_counts_as_unindexed(tctx *t)
{
	EXPECT(insert(t, "a", "!!! ???") > 0);
	EXPECT(insert(t, "b", "   ") > 0);
	EXPECT(insert(t, "c", "words here") > 0);
	a2m_index_stats st = stats(t);
	EXPECT_INT(st.docs, 1);
	EXPECT_INT(st.unindexed, 1);
}

static void test_update_without_new_content_does_not_reindex(tctx *t)
{
	EXPECT(insert(t, "a", "alpha beta") > 0);
	int before = tix.calls;
	EXPECT_OK(update(t, "a", NULL, 5));
	EXPECT_INT(tix.calls, before);
	EXPECT_INT(df(t, "alpha"), 1);
}

static void test_update_with_new_content_moves_postings(tctx *t)
{
	EXPECT(insert(t, "a", "alpha beta") > 0);
	EXPECT(insert(t, "b", "beta gamma") > 0);
	EXPECT_OK(update(t, "a", "gamma delta delta", 0));
	EXPECT_INT(df(t, "alpha"), 0);
	EXPECT_INT(df(t, "beta"), 1);
	EXPECT_INT(df(t, "gamma"), 2);
	EXPECT_INT(df(t, "delta"), 1);
	a2m_index_stats st = stats(t);
	EXPECT_INT(st.docs, 2);
	EXPECT_INT(st.total_len, 5);
}

static void test_remove_drops_postings_and_figures(tctx *t)
{
	int removed = 0;
	EXPECT(insert(t, "a", "alpha beta") > 0);
	EXPECT(insert(t, "b", "beta") > 0);
	EXPECT(insert(t, "c", "...") > 0);
	EXPECT_OK(t->s->ops->remove(t->s, "a", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_OK(t->s->ops->remove(t->s, "c", &removed));
	EXPECT_INT(df(t, "alpha"), 0);
	EXPECT_INT(df(t, "beta"), 1);
	a2m_index_stats st = stats(t);
	EXPECT_INT(st.docs, 1);
	EXPECT_INT(st.total_len, 1);
	EXPECT_INT(st.unindexed, 0);
}

/*
** A term whose list outgrew a block keeps block bounds (memory_index.c):
** removing every record holding it frees the term with them (a leak the
** sanitizer build reports at exit otherwise).
*/
static void test_remove_every_posting_of_a_long_list(tctx *t)
{
	char id[16];
	int removed = 0;
	for (int i = 0; i < 200; i++) {
		snprintf(id, sizeof id, "w%d", i);
		EXPECT(insert(t, id, "walrus on the ice") > 0);
	}
	EXPECT_INT(df(t, "walrus"), 64);  /* collect() keeps 64 */
	for (int i = 0; i < 200; i++) {
		snprintf(id, sizeof id, "w%d", i);
		EXPECT_OK(t->s->ops->remove(t->s, id, &removed));
		EXPECT_INT(removed, 1);
	}
	EXPECT_INT(df(t, "walrus"), 0);
	EXPECT_INT(stats(t).docs, 0);
}

static void test_rollback_restores_the_index(tctx *t)
{
	int removed = 0;
	EXPECT(insert(t, "a", "alpha beta") > 0);
	EXPECT(insert(t, "b", "beta gamma") > 0);
	a2m_index_stats before = stats(t);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "c", "gamma delta") > 0);
	EXPECT_OK(update(t, "a", "epsilon", 0));
	EXPECT_OK(t->s->ops->remove(t->s, "b", &removed));
	EXPECT_INT(df(t, "epsilon"), 1);
	EXPECT_INT(df(t, "beta"), 0);
	t->s->ops->rollback(t->s);
	EXPECT_INT(df(t, "alpha"), 1);
	EXPECT_INT(df(t, "beta"), 2);
	EXPECT_INT(df(t, "gamma"), 1);
	EXPECT_INT(df(t, "delta"), 0);
	EXPECT_INT(df(t, "epsilon"), 0);
	a2m_index_stats after = stats(t);
	EXPECT_INT(after.docs, before.docs);
	EXPECT_INT(after.total_len, before.total_len);
}

static void test_commit_keeps_the_index(tctx *t)
{
	int removed = 0;
	EXPECT(insert(t, "a", "alpha") > 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "b", "alpha beta") > 0);
	EXPECT_OK(t->s->ops->remove(t->s, "a", &removed));
	EXPECT_OK(t->s->ops->commit(t->s));
	EXPECT_INT(df(t, "alpha"), 1);
	EXPECT_INT(df(t, "beta"), 1);
	EXPECT_INT(stats(t).docs, 1);
}

static void test_refused_insert_leaves_index_and_transaction(tctx *t)
{
	EXPECT(insert(t, "a", "alpha") > 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "b", "beta") > 0);
	if (strcmp(t->engine, "memory") != 0) {
		/* SQLite and PostgreSQL may refuse it at a later op (store.h): then
		** all rolls back. */
		int64_t rc = insert(t, "a", "gamma");  /* a duplicate id */
		if (rc > 0)
			rc = t->s->ops->commit(t->s);
		EXPECT(rc == -1 || rc == A2M_INVALID_PARAMS);  /* -1: insert() refused it */
		t->s->ops->rollback(t->s);
		EXPECT_INT(df(t, "gamma"), 0);
		EXPECT_INT(df(t, "beta"), 0);
		EXPECT_INT(stats(t).docs, 1);
		return;
	}
	EXPECT(insert(t, "a", "gamma") < 0);  /* a duplicate id */
	EXPECT_INT(df(t, "gamma"), 0);
	EXPECT_OK(t->s->ops->commit(t->s));
	EXPECT_INT(df(t, "beta"), 1);
	EXPECT_INT(stats(t).docs, 2);
}

static void test_removing_and_reinserting_many_keeps_postings_exact(tctx *t)
{
	/* Swap-removal moves postings around; the survivors must all be found. */
	char id[16], text[64];
	int removed;
	for (int i = 0; i < 60; i++) {
		snprintf(id, sizeof id, "r%d", i);
		snprintf(text, sizeof text, "common w%d %s", i, i % 2 ? "odd" : "even");
		EXPECT(insert(t, id, text) > 0);
	}
	EXPECT_OK(t->s->ops->begin(t->s));
	for (int i = 0; i < 60; i += 3) {
		snprintf(id, sizeof id, "r%d", i);
		EXPECT_OK(t->s->ops->remove(t->s, id, &removed));
	}
	t->s->ops->rollback(t->s);
	EXPECT_INT(df(t, "common"), 60);
	for (int i = 0; i < 60; i += 3) {
		snprintf(id, sizeof id, "r%d", i);
		EXPECT_OK(t->s->ops->remove(t->s, id, &removed));
	}
	EXPECT_INT(df(t, "common"), 40);
	EXPECT_INT(df(t, "w3"), 0);
	EXPECT_INT(df(t, "w4"), 1);
	plist p = {0};
	EXPECT_OK(t->s->ops->index_postings(t->s, "odd", 3, collect, &p));
	EXPECT_INT(p.n, 20);
	EXPECT_INT(stats(t).docs, 40);
}

/*
** One transaction whose flush writes many postings, additions and removals
** interleaved (SQLite writes runs of additions several rows per statement):
** every posting lands exactly.
*/
static void test_large_transaction_writes_every_posting(tctx *t)
{
	char id[16], text[64];
	int removed;
	EXPECT_OK(t->s->ops->begin(t->s));
	for (int i = 0; i < 50; i++) {
		snprintf(id, sizeof id, "r%d", i);
		snprintf(text, sizeof text, "common w%d %s", i, i % 2 ? "odd" : "even");
		EXPECT(insert(t, id, text) > 0);
	}
	EXPECT_OK(t->s->ops->commit(t->s));
	EXPECT_OK(t->s->ops->begin(t->s));
	for (int i = 50; i < 100; i++) {
		snprintf(id, sizeof id, "r%d", i);
		snprintf(text, sizeof text, "common w%d %s", i, i % 2 ? "odd" : "even");
		EXPECT(insert(t, id, text) > 0);
	}
	for (int i = 0; i < 100; i += 5) {
		snprintf(id, sizeof id, "r%d", i);
		EXPECT_OK(t->s->ops->remove(t->s, id, &removed));
		snprintf(id, sizeof id, "r%d", i + 1);
		EXPECT_OK(update(t, id, "quux zebra", 0));
	}
	EXPECT_OK(t->s->ops->commit(t->s));
	EXPECT_INT(df(t, "common"), 60);
	EXPECT_INT(df(t, "quux"), 20);
	EXPECT_INT(df(t, "w0"), 0);
	EXPECT_INT(df(t, "w1"), 0);
	EXPECT_INT(df(t, "w2"), 1);
	EXPECT_INT(df(t, "w98"), 1);
	EXPECT_INT(df(t, "odd"), 30);
	EXPECT_INT(df(t, "even"), 30);
	EXPECT_INT(stats(t).docs, 80);
}

/*
** Terms that share their first 8 bytes or are prefixes of each other, in
** one flush: each keeps exactly its postings (SQLite orders a flush by the
** terms' first 8 bytes before the rest, and finds a term in a block of
** terms by that order).
*/
static void test_terms_sharing_long_prefixes_keep_their_postings(tctx *t)
{
	static const char *const words[] = {"internationalisation", "international", "internat",
					    "interna", "internationale", "internationalise", "i",
					    "internationalisations", "intern", "internatbz", "internataz"};
	size_t nw = sizeof words / sizeof words[0];
	char id[16], text[256];
	EXPECT_OK(t->s->ops->begin(t->s));
	for (size_t i = 0; i < nw; i++) {
		/* Record i holds words i..nw-1, so word k is in k + 1 records. */
		size_t used = 0;
		text[0] = '\0';
		for (size_t k = i; k < nw; k++)
			used += (size_t)snprintf(text + used, sizeof text - used, "%s ", words[k]);
		snprintf(id, sizeof id, "p%zu", i);
		EXPECT(insert(t, id, text) > 0);
	}
	EXPECT_OK(t->s->ops->commit(t->s));
	for (size_t k = 0; k < nw; k++)
		EXPECT_INT(df(t, words[k]), k + 1);
	EXPECT_INT(df(t, "internationa"), 0);
	EXPECT_INT(df(t, "internationalisationsx"), 0);
}

/* The first letters of the ids visited, in order. */
typedef struct visited {
	char ids[8];
	int  n;
} visited;

static int visit_first_letter(const a2m_record *r, void *ctx)
{
	visited *got = ctx;
	if (got->n < 7)
		got->ids[got->n++] = r->id[0];
	return 0;
}

static void test_visit_seqs_keeps_order_and_skips_missing(tctx *t)
{
	int64_t a = insert(t, "a", "x"), b = insert(t, "b", "y"), c = insert(t, "c", "z");
	EXPECT(a > 0 && b > 0 && c > 0);
	int64_t seqs[] = {c, 999999, a, b};
	visited got = {{0}, 0};
	EXPECT_OK(t->s->ops->visit_seqs(t->s, seqs, 4, visit_first_letter, &got));
	EXPECT_INT(got.n, 3);
	EXPECT(strcmp(got.ids, "cab") == 0);
}

static void test_index_survives_reopen_without_rebuild(tctx *t)
{
	EXPECT(insert(t, "a", "alpha beta") > 0);
	close_store(t);
	tix.calls = 0;
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(tix.calls, 0);
	EXPECT_INT(df(t, "alpha"), 1);
	EXPECT_INT(stats(t).docs, 1);
}

static void test_another_analyser_rebuilds_the_index(tctx *t)
{
	EXPECT(insert(t, "a", "alpha beta") > 0);
	EXPECT(insert(t, "b", "gamma") > 0);
	close_store(t);
	EXPECT_OK(open_indexed(t, &tix2));
	EXPECT_INT(tix2.calls, 2);
	EXPECT_INT(df(t, "gamma"), 1);
	EXPECT_INT(stats(t).docs, 2);
}

static void test_write_without_analyser_marks_index_stale(tctx *t)
{
	close_store(t);
	EXPECT_OK(open_plain(t, 0));
	EXPECT(insert(t, "a", "written without an index") > 0);
	close_store(t);
	tix.calls = 0;
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(tix.calls, 1);  /* rebuilt: the new record is found */
	EXPECT_INT(df(t, "index"), 1);
}

static void test_read_only_uses_a_current_index_and_no_stale_one(tctx *t)
{
	EXPECT(insert(t, "a", "alpha") > 0);
	close_store(t);
	EXPECT_OK(open_plain(t, 1));
	EXPECT_OK(t->s->ops->index_attach(t->s, &tix.base));
	EXPECT_INT(df(t, "alpha"), 1);
	close_store(t);
	EXPECT_OK(open_plain(t, 1));
	EXPECT_OK(t->s->ops->index_attach(t->s, &tix2.base));
	a2m_index_stats st;
	EXPECT_INT(t->s->ops->index_stats(t->s, &st), A2M_STORE_NO_INDEX);
	EXPECT_INT(tix2.calls, 0);
}

/* Inserts id with content through a second connection to t's file. */
static int other_insert(tctx *t, const char *id, const char *content)
{
	a2m_store *o = NULL;
	char err[256];
	a2m_sqlite_options opt = {0};
	if (a2m_store_sqlite_open(t->path, &opt, &o, err, sizeof err) != 0)
		return -1;
	a2m_record r;
	memset(&r, 0, sizeof r);
	r.id = (char *)id;
	r.content = (char *)content;
	r.created_at = 2000;
	int rc = o->ops->index_attach(o, &tix.base);
	if (rc == 0)
		rc = o->ops->insert(o, &r);
	o->ops->close(o);
	return rc;
}

/* Begins, touches seq, commits: a commit of this connection with no postings. */
static int touch_commit(tctx *t, int64_t seq)
{
	int rc = t->s->ops->begin(t->s);
	if (rc == 0 && (rc = t->s->ops->touch(t->s, seq, 1, 5)) != 0)
		t->s->ops->rollback(t->s);
	return rc ? rc : t->s->ops->commit(t->s);
}

/*
** The postings cache keeps what it read across this connection's commits
** that write no postings (recall's touches), but never across another
** connection's commit, even one followed by such a commit of this one.
*/
static void test_postings_cache_survives_only_own_commits(tctx *t)
{
	a2m_index_stats st;
	int64_t a = insert(t, "a", "apple pie");
	EXPECT(a > 0);
	EXPECT_OK(t->s->ops->index_stats(t->s, &st));
	EXPECT_INT(df(t, "apple"), 1);              /* read, now cached */
	EXPECT_OK(touch_commit(t, a));
	EXPECT_OK(t->s->ops->index_stats(t->s, &st));
	EXPECT_INT(df(t, "apple"), 1);
	EXPECT_INT(other_insert(t, "b", "apple tart"), 0);
	EXPECT_OK(touch_commit(t, a));
	EXPECT_OK(t->s->ops->index_stats(t->s, &st));
	EXPECT_INT(st.docs, 2);
	EXPECT_INT(df(t, "apple"), 2);
	EXPECT_INT(df(t, "tart"), 1);
}

/*
** A lent array of postings holds what a visit gives, before and after
** writes. SQLite lends inside a read bracket only (store.h), so every
** round is one.
*/
static void test_postings_view_matches_the_visit(tctx *t)
{
	static const char *const terms[] = {"apple", "pie", "tart", "none"};
	EXPECT(t->s->ops->index_postings_view != NULL);
	EXPECT(insert(t, "a", "apple pie apple") > 0);
	EXPECT(insert(t, "b", "apple tart") > 0);
	EXPECT(insert(t, "c", "pie") > 0);
	for (int round = 0; round < 2; round++) {
		EXPECT_OK(t->s->ops->read_begin(t->s));
		for (size_t i = 0; i < sizeof terms / sizeof *terms; i++) {
			plist p = {0};
			const a2m_posting *v = NULL;
			size_t n = 99;
			EXPECT_OK(t->s->ops->index_postings(t->s, terms[i], strlen(terms[i]), collect, &p));
			EXPECT_OK(t->s->ops->index_postings_view(t->s, terms[i], strlen(terms[i]), &v, &n));
			EXPECT_INT(n, p.n);
			for (size_t j = 0; j < n; j++) {
				EXPECT_INT(v[j].seq, p.seq[j]);
				EXPECT_INT(v[j].tf, p.tf[j]);
				EXPECT_INT(v[j].dl, p.dl[j]);
			}
		}
		t->s->ops->read_end(t->s);
		/* A removal moves postings around (swap-removal): lend again. */
		int removed = 0;
		if (round == 0) {
			EXPECT_OK(t->s->ops->remove(t->s, "a", &removed));
			EXPECT_INT(removed, 1);
		}
	}
}

/* The content of record i of the pinning test: terms w0..w39, some repeated. */
static void pin_content(int i, char *buf, size_t cap)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int j = 0; j < 40; j++) {
		if ((i + j) % 4 == 0)
			continue;
		for (int r = 0; r <= (i * j) % 3 && used + 8 < cap; r++)
			used += (size_t)snprintf(buf + used, cap - used, "w%d ", j);
	}
}

/* Whether a lent array holds exactly what index_postings visits. */
static int same_postings(const a2m_posting *v, size_t n, const plist *p)
{
	if ((int)n != p->n)
		return 0;
	for (size_t j = 0; j < n; j++)
		if (v[j].seq != p->seq[j] || v[j].tf != p->tf[j] || v[j].dl != p->dl[j])
			return 0;
	return 1;
}

/*
** SQLite lends from its postings cache and keeps every array it lent in a
** bracket until the bracket's read_end, even when they add up to more than
** the cache's budget (here 64 postings for 40 terms of 8 to 12 each).
*/
static void test_sqlite_view_keeps_what_it_lent_until_read_end(tctx *t)
{
	enum { TERMS = 40, RECORDS = 12 };
	char buf[1024], term[16], id[16];
	close_store(t);
	a2m_sqlite_index_cache_budget_for_tests(64);
	int rc = open_indexed(t, &tix);
	a2m_sqlite_index_cache_budget_for_tests(0);
	EXPECT_INT(rc, 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	for (int i = 0; i < RECORDS; i++) {
		snprintf(id, sizeof id, "r%d", i);
		pin_content(i, buf, sizeof buf);
		EXPECT(insert(t, id, buf) > 0);
	}
	EXPECT_OK(t->s->ops->commit(t->s));

	const a2m_posting *v[TERMS];
	size_t n[TERMS];
	static plist want[TERMS];
	EXPECT_OK(t->s->ops->read_begin(t->s));
	for (int j = 0; j < TERMS; j++) {
		snprintf(term, sizeof term, "w%d", j);
		EXPECT_OK(t->s->ops->index_postings_view(t->s, term, strlen(term), &v[j], &n[j]));
		EXPECT(n[j] >= 8 && n[j] <= 12);
	}
	for (int j = 0; j < TERMS; j++) {
		snprintf(term, sizeof term, "w%d", j);
		memset(&want[j], 0, sizeof want[j]);
		EXPECT_OK(t->s->ops->index_postings(t->s, term, strlen(term), collect, &want[j]));
	}
	for (int j = 0; j < TERMS; j++)
		EXPECT(same_postings(v[j], n[j], &want[j]));
	t->s->ops->read_end(t->s);

	/* Outside a bracket nothing would end a loan: "copy it" (1). */
	EXPECT_INT(t->s->ops->index_postings_view(t->s, "w1", 2, &v[1], &n[1]), 1);

	/* The main connection commits postings: the next bracket lends them. */
	EXPECT(insert(t, "new", "w1 w1 w1") > 0);
	EXPECT_OK(t->s->ops->read_begin(t->s));
	EXPECT_OK(t->s->ops->index_postings_view(t->s, "w1", 2, &v[1], &n[1]));
	EXPECT_INT(n[1], want[1].n + 1);
	EXPECT_INT(v[1][n[1] - 1].seq, RECORDS + 1);
	EXPECT_INT(v[1][n[1] - 1].tf, 3);
	EXPECT_INT(v[1][n[1] - 1].dl, 3);
	EXPECT(same_postings(v[1], n[1] - 1, &want[1]));
	t->s->ops->read_end(t->s);
}

static void test_autocommit_write_keeps_record_and_postings_together(tctx *t)
{
	/* Outside a transaction, and a failed write: neither half lands. */
	EXPECT(insert(t, "a", "alpha") > 0);
	EXPECT(insert(t, "a", "beta") < 0);
	EXPECT_INT(df(t, "beta"), 0);
	EXPECT_INT(stats(t).docs, 1);
}

/* ---- segments (SQLite): merges, tombstones, rebuild, readers ---- */

/* What the records hold, to recompute every posting by brute force. */
#define MODEL_IDS  40
#define MODEL_WORDS 12

typedef struct model {
	char    content[MODEL_IDS][96];
	char    before[MODEL_IDS][96];  /* the content before the last change */
	int64_t seq[MODEL_IDS];
	int     live[MODEL_IDS];
	uint64_t rand;
} model;

static uint64_t next_rand(model *m)
{
	m->rand ^= m->rand << 13;
	m->rand ^= m->rand >> 7;
	m->rand ^= m->rand << 17;
	return m->rand;
}

/* 1 to 6 words of the vocabulary v0..v11, repeats allowed. */
static void random_content(model *m, char *buf, size_t cap)
{
	int n = 1 + (int)(next_rand(m) % 6);
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && used < cap; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%sv%d", i ? " " : "",
					 (int)(next_rand(m) % MODEL_WORDS));
}

/* The posting of word w in content: *tf occurrences, *dl words. */
static void count_word(const char *content, int w, uint32_t *tf, uint32_t *dl)
{
	char want[16], word[16];
	snprintf(want, sizeof want, "v%d", w);
	*tf = *dl = 0;
	for (const char *p = content; *p;) {
		size_t n = strcspn(p, " ");
		if (n && n < sizeof word) {
			memcpy(word, p, n);
			word[n] = '\0';
			(*dl)++;
			*tf += strcmp(word, want) == 0;
		}
		p += n;
		p += *p == ' ';
	}
}

/* 1 when store s gives every word the postings m's records make. */
static int postings_match(a2m_store *s, const model *m, char *why, size_t cap)
{
	for (int w = 0; w < MODEL_WORDS; w++) {
		char term[16];
		plist got = {0}, want = {0};
		snprintf(term, sizeof term, "v%d", w);
		/* Live records by ascending seq: ids are inserted in seq order except
		** re-inserts, so sort the few candidates. */
		int64_t order[MODEL_IDS];
		int n = 0;
		for (int i = 0; i < MODEL_IDS; i++)
			if (m->live[i])
				order[n++] = i;
		for (int a = 1; a < n; a++)
			for (int b = a; b > 0 && m->seq[order[b]] < m->seq[order[b - 1]]; b--) {
				int64_t tmp = order[b];
				order[b] = order[b - 1];
				order[b - 1] = tmp;
			}
		for (int k = 0; k < n; k++) {
			uint32_t tf, dl;
			count_word(m->content[order[k]], w, &tf, &dl);
			if (tf)
				collect(m->seq[order[k]], tf, dl, &want);
		}
		if (s->ops->index_postings(s, term, strlen(term), collect, &got) != 0) {
			snprintf(why, cap, "%s: %.100s", term, s->errmsg);
			return 0;
		}
		int same = got.n == want.n;
		for (int k = 0; same && k < got.n; k++)
			same = got.seq[k] == want.seq[k] && got.tf[k] == want.tf[k] &&
				got.dl[k] == want.dl[k];
		if (!same) {
			snprintf(why, cap, "%s: %d postings, want %d", term, got.n, want.n);
			return 0;
		}
	}
	return 1;
}

#define EXPECT_POSTINGS(s, m) do { \
	char why_[128]; \
	if (!postings_match((s), (m), why_, sizeof why_)) { \
		snprintf(failure, sizeof failure, "line %d: %s", __LINE__, why_); return; } \
} while (0)

/* One integer from SQL on t's file, through a connection of its own (-1: error). */
static int64_t sql_int(tctx *t, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = -1;
	if (sqlite3_open_v2(t->path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/*
** The lists with a skip table (sqlite_segments_skip.c) among the rows the
** query lists (their data), each table checked against its entries: the
** count, or -1 when a table is wrong or a row cannot be read.
*/
static int64_t skip_tables(tctx *t, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t n = 0;
	if (sqlite3_open_v2(t->path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		n = -1;
	while (n >= 0 && sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *p = sqlite3_column_blob(st, 0), *term, *list;
		const unsigned char *end = p + sqlite3_column_bytes(st, 0);
		size_t tlen, lsize;
		int got = 0;
		while (n >= 0 && (got = a2m_seg_next_in_block(&p, end, &term, &tlen, &list, &lsize)) == 1) {
			int v = a2m_seg_skip_verify(list, lsize);
			n = v < 0 ? -1 : n + v;
		}
		if (got < 0)
			n = -1;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/*
** One step of the random history: insert an absent id, or change a present
** one's content (to new words, back to its previous content, or to the same
** text), or remove it.
*/
static int model_step(tctx *t, model *m)
{
	int i = (int)(next_rand(m) % MODEL_IDS), removed = 0;
	char id[16];
	snprintf(id, sizeof id, "r%d", i);
	if (!m->live[i]) {
		random_content(m, m->content[i], sizeof m->content[i]);
		strcpy(m->before[i], m->content[i]);
		m->seq[i] = insert(t, id, m->content[i]);
		m->live[i] = m->seq[i] > 0;
		return m->live[i] ? 0 : -1;
	}
	uint64_t what = next_rand(m) % 10;
	if (what < 2) {
		m->live[i] = 0;
		return t->s->ops->remove(t->s, id, &removed) || !removed ? -1 : 0;
	}
	char next[96];
	if (what < 5)
		strcpy(next, m->before[i]);         /* back and forth */
	else if (what < 6)
		strcpy(next, m->content[i]);        /* unchanged */
	else
		random_content(m, next, sizeof next);
	strcpy(m->before[i], m->content[i]);
	strcpy(m->content[i], next);
	return update(t, id, next, 0);
}

/*
** The random history of the merge tests, with a merge factor of 2: 400
** rounds, every ninth a transaction of five steps. Content changed back and
** forth and records forgotten and inserted again put additions and
** tombstones of one (term, seq) in several segments, some in one
** transaction. The postings are checked every 40 rounds and at the end, and
** the store's figures too; *most gets the most segments a level held
** between rounds. A failure is left in failure.
*/
static int check_clean(a2m_store *s, char *why, size_t cap);

static int64_t most_merges;  /* the most merges in steps under way between rounds */

static void merge_history(tctx *t, int64_t *most)
{
	model m;
	char why[128];
	memset(&m, 0, sizeof m);
	m.rand = 88172645463325252u;
	*most = 0;
	a2m_segments_merge_factor_for_tests(2);
	for (int round = 0; round < 400 && !failure[0]; round++) {
		int in_txn = round % 9 == 0;
		if (in_txn && t->s->ops->begin(t->s) != 0)
			break;
		for (int k = 0; k < (in_txn ? 5 : 1); k++)
			if (model_step(t, &m) != 0)
				snprintf(failure, sizeof failure, "round %d: %s", round, t->s->errmsg);
		if (in_txn && t->s->ops->commit(t->s) != 0)
			snprintf(failure, sizeof failure, "commit: %s", t->s->errmsg);
		int64_t fullest = sql_int(t, "SELECT max(n) FROM (SELECT count(*) AS n"
					     " FROM a2m_segdir GROUP BY level)");
		*most = fullest > *most ? fullest : *most;
		int64_t merges = sql_int(t, "SELECT count(*) FROM a2m_segmerge");
		most_merges = merges > most_merges ? merges : most_merges;
		if (!failure[0] && (round % 40 == 39 || round == 399) &&
		    !postings_match(t->s, &m, why, sizeof why))
			snprintf(failure, sizeof failure, "round %d: %s", round, why);
	}
	a2m_segments_merge_factor_for_tests(0);
	int live = 0;
	for (int i = 0; i < MODEL_IDS; i++)
		live += m.live[i];
	EXPECT_INT(stats(t).docs, live);
}

/*
** Merging inside the commit that fills a level (merge_inline): the
** postings stay those the records make, and levels are merged, not piled
** up: one segment per level between rounds, with a factor of 2.
*/
static void test_merged_segments_keep_the_records_postings(tctx *t)
{
	int64_t most;
	merge_history(t, &most);
	EXPECT_INT(most, 1);
	int64_t segs = sql_int(t, "SELECT count(*) FROM a2m_segdir");
	EXPECT(segs >= 1);
	EXPECT_INT(segs, sql_int(t, "SELECT count(DISTINCT level) FROM a2m_segdir"));
	EXPECT(sql_int(t, "SELECT max(level) FROM a2m_segdir") >= 4);
}

/*
** The same with merges ahead (the default): a level is merged on a thread
** while the next transaction goes on, and its commit writes the result. No
** level holds more than the merge factor's segments between rounds.
*/
static void test_merges_ahead_keep_the_records_postings(tctx *t)
{
	int64_t most;
	a2m_segments_ahead_min_for_tests(0);  /* these levels are small */
	a2m_segments_ahead_wait_for_tests(1);  /* every commit waits for its merge */
	merge_history(t, &most);
	a2m_segments_ahead_wait_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	EXPECT_INT(most, 2);
	EXPECT(sql_int(t, "SELECT max(level) FROM a2m_segdir") >= 4);
}

/*
** The same with every merge ahead left pending by the commit that began
** it, as one whose thread had not finished: the next transaction's commit
** writes it (with a merge factor of 2, the level is full again then). The
** level holds its inputs and the new segment between the two: 3.
*/
static void test_merges_ahead_left_pending_keep_the_records_postings(tctx *t)
{
	int64_t most;
	char why[320];
	a2m_segments_ahead_min_for_tests(0);
	a2m_segments_ahead_wait_for_tests(2);
	merge_history(t, &most);
	a2m_segments_ahead_wait_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	EXPECT_INT(most, 3);
	EXPECT(sql_int(t, "SELECT max(level) FROM a2m_segdir") >= 4);
	if (!failure[0] && !check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
}

/*
** A full level too small to be worth a thread (the default minimum, 4 096
** entries) is merged inside the commit that fills it, as inline: one
** segment per level between rounds, with a factor of 2.
*/
static void test_small_levels_are_merged_inside_the_commit(tctx *t)
{
	int64_t most;
	merge_history(t, &most);
	EXPECT_INT(most, 1);
	EXPECT(sql_int(t, "SELECT max(level) FROM a2m_segdir") >= 4);
}

/*
** A level left full by a commit is merged by the next write transaction:
** nothing changes in the file until its commit, which writes the merged
** segment (numbered as the newest input) even when it wrote no posting
** itself; a read inside the transaction sees the same postings throughout.
*/
static void test_a_full_level_is_merged_ahead_by_the_next_transaction(tctx *t)
{
	a2m_segments_merge_factor_for_tests(2);
	a2m_segments_ahead_min_for_tests(0);
	a2m_segments_ahead_wait_for_tests(1);  /* its commit waits for the thread */
	EXPECT(insert(t, "a", "apple one") > 0);
	EXPECT(insert(t, "b", "banana two") > 0);
	/* Full, not merged: that is the next transaction's work. */
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 2);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT_INT(df(t, "apple"), 1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 2);
	EXPECT_OK(t->s->ops->commit(t->s));
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(sql_int(t, "SELECT level FROM a2m_segdir"), 1);
	EXPECT_INT(sql_int(t, "SELECT sum(entries) FROM a2m_segdir"), 4);
	/* Then with postings of its own: the merge, and a new level-0 segment. */
	EXPECT(insert(t, "c", "cherry three") > 0);
	EXPECT(insert(t, "d", "date four") > 0);   /* level 0 full again */
	EXPECT(insert(t, "e", "elder five") > 0);  /* merges c and d ahead, adds e */
	a2m_segments_merge_factor_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	a2m_segments_ahead_wait_for_tests(0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 1"), 2);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 1);
	const char *words[] = {"apple", "banana", "cherry", "date", "elder", "one", "five"};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		EXPECT_INT(df(t, words[i]), 1);
}

/*
** Inserts one record through another connection to t's file, one that
** merges inside its commits (a level it finds full, it merges at once).
** Returns 0, or -1 when it cannot.
*/
static int insert_elsewhere(tctx *t, const char *id, const char *content)
{
	a2m_store *other = NULL;
	char err[256];
	a2m_sqlite_options opt = {.merge_inline = 1};
	if (a2m_store_sqlite_open(t->path, &opt, &other, err, sizeof err) != 0)
		return -1;
	a2m_record r;
	memset(&r, 0, sizeof r);
	r.id = (char *)id;
	r.content = (char *)content;
	r.tier = "semantic";
	int rc = other->ops->index_attach(other, &tix.base) != 0 ||
		 other->ops->insert(other, &r) != 0 ? -1 : 0;
	other->ops->close(other);
	return rc;
}

/*
** A transaction rolled back drops the merge it began: the file keeps the
** full level as it was, and the next transaction looks again. Here another
** connection (merging inline) commits in between and merges that level
** itself, so a merge kept from before would name segments no longer there.
*/
static void test_merge_ahead_is_dropped_with_a_rollback(tctx *t)
{
	int removed = 0;
	a2m_segments_merge_factor_for_tests(2);
	a2m_segments_ahead_min_for_tests(0);
	EXPECT(insert(t, "a", "apple one") > 0);
	EXPECT(insert(t, "b", "banana two") > 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "c", "cherry three") > 0);
	EXPECT_OK(t->s->ops->remove(t->s, "a", &removed));
	t->s->ops->rollback(t->s);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 2);
	EXPECT_INT(df(t, "apple"), 1);
	EXPECT_INT(df(t, "cherry"), 0);
	EXPECT_OK(insert_elsewhere(t, "o", "olive six"));
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 0);
	EXPECT(insert(t, "d", "date four") > 0);
	a2m_segments_merge_factor_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 1"), 1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 1);
	const char *words[] = {"apple", "banana", "date", "olive"};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		EXPECT_INT(df(t, words[i]), 1);
	EXPECT_INT(df(t, "cherry"), 0);
}

/* The findings of a store's check: problems per area, and the last one's message. */
typedef struct found {
	int  problems;
	char last[256];
} found;

static void found_report(void *ctx, a2m_check_area area, int problem, const char *msg)
{
	found *f = ctx;
	if (problem) {
		f->problems++;
		snprintf(f->last, sizeof f->last, "%s: %s", a2m_check_area_name(area), msg);
	}
}

/* 1 when the store's check (the index against tix's analysis) finds nothing wrong. */
static int check_clean(a2m_store *s, char *why, size_t cap)
{
	found f = {0, ""};
	a2m_check_options o = {.ix = &tix.base, .report = found_report, .ctx = &f};
	if (s->ops->check(s, &o) != 0) {
		snprintf(why, cap, "check failed: %s", s->errmsg);
		return 0;
	}
	snprintf(why, cap, "%d problems, the last %s", f.problems, f.last);
	return f.problems == 0;
}

/*
** A commit does not wait for the thread of a merge begun ahead: with the
** thread held before it merges, two commits go through (their segments
** beside the merge's inputs, every posting read right), and the release
** finds the thread still held, as no commit waited for it (a commit that
** waited would stall until the hold's 30 s bound, and the release would
** say so). The merge factor's commit after the begin writes it.
*/
static void test_a_commit_does_not_wait_for_a_merge_ahead(tctx *t)
{
	char why[320];
	a2m_segments_merge_factor_for_tests(3);
	a2m_segments_ahead_min_for_tests(0);
	EXPECT(insert(t, "a", "apple one") > 0);
	EXPECT(insert(t, "b", "banana two") > 0);
	EXPECT(insert(t, "c", "cherry three") > 0);  /* level 0 full */
	a2m_seg_job_hold_for_tests(1);
	EXPECT(insert(t, "d", "date four") > 0);   /* begins the merge; not written */
	EXPECT(insert(t, "e", "elder five") > 0);  /* nor here */
	EXPECT_INT(a2m_seg_job_release_for_tests(), 1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 5);
	const char *words[] = {"apple", "banana", "cherry", "date", "elder", "one", "five"};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		EXPECT_INT(df(t, words[i]), 1);
	EXPECT(insert(t, "f", "fig six") > 0);  /* the third commit: written */
	a2m_segments_merge_factor_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 1"), 1);
	EXPECT_INT(sql_int(t, "SELECT entries FROM a2m_segdir WHERE level = 1"), 6);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 3);
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		EXPECT_INT(df(t, words[i]), 1);
	EXPECT_INT(df(t, "fig"), 1);
	if (!failure[0] && !check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
}

/*
** A merge ahead left pending across commits, whose inputs another writer
** on the file merges meanwhile (the other connection merges inline), is
** dropped by the commit that would write it: the write goes through, and
** the index is the other writer's merge plus the new segment.
*/
static void test_a_pending_merge_whose_inputs_went_is_dropped(tctx *t)
{
	char why[320];
	a2m_segments_merge_factor_for_tests(2);
	a2m_segments_ahead_min_for_tests(0);
	a2m_segments_ahead_wait_for_tests(2);
	EXPECT(insert(t, "a", "apple one") > 0);
	EXPECT(insert(t, "b", "banana two") > 0);
	EXPECT(insert(t, "c", "cherry three") > 0);  /* merges a and b ahead: pending */
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 3);
	EXPECT_OK(insert_elsewhere(t, "o", "olive seven"));
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 0);
	EXPECT(insert(t, "d", "date four") > 0);  /* would write the pending merge */
	a2m_segments_ahead_wait_for_tests(0);
	a2m_segments_merge_factor_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 1);
	const char *words[] = {"apple", "banana", "cherry", "date", "olive", "one", "four"};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		EXPECT_INT(df(t, words[i]), 1);
	if (!failure[0] && !check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
}

/*
** Big levels merged in steps (every full level, here, a few hundred bytes
** of inputs per commit): the postings stay those the records make at every
** point, merges are under way across commits, and the store's check finds
** the index right, with the merges' outputs and retired rows accounted for.
*/
static void test_merges_in_steps_keep_the_records_postings(tctx *t)
{
	int64_t most;
	char why[320];
	most_merges = 0;
	a2m_segments_steps_for_tests(0, 300);
	merge_history(t, &most);
	a2m_segments_steps_for_tests(-1, 0);
	EXPECT(most_merges >= 1);
	EXPECT(most <= 4);
	EXPECT(sql_int(t, "SELECT max(level) FROM a2m_segdir") >= 3);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
}

static int count_posting(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	(void)seq, (void)tf, (void)dl;
	++*(int64_t *)ctx;
	return 0;
}

/*
** A common word's list past a block of 64 entries gets its skip table in
** every segment that writes it: the merges' outputs, whole and in steps,
** and the tables are right (the store's check rebuilds each from its
** entries, as skip_tables does).
*/
static void test_merges_write_skip_tables(tctx *t)
{
	char id[32], text[64], why[320];
	a2m_segments_merge_factor_for_tests(2);
	a2m_sqlite_index_tail_for_tests(1);  /* a segment per commit */
	for (int steps = 0; steps < 2 && !failure[0]; steps++) {
		a2m_segments_steps_for_tests(steps ? 0 : -1, steps ? 300 : 0);
		for (int i = 0; i < 150 && !failure[0]; i++) {
			snprintf(id, sizeof id, "s%d-%d", steps, i);
			snprintf(text, sizeof text, "common w%d", i % 17);
			if (insert(t, id, text) <= 0)
				snprintf(failure, sizeof failure, "insert %s: %s", id, t->s->errmsg);
		}
	}
	a2m_segments_steps_for_tests(-1, 0);
	a2m_segments_merge_factor_for_tests(0);
	a2m_sqlite_index_tail_for_tests(0);
	int64_t all = 0;
	EXPECT_OK(t->s->ops->index_postings(t->s, "common", 6, count_posting, &all));
	EXPECT_INT(all, 300);
	EXPECT(skip_tables(t, "SELECT data FROM a2m_segments WHERE seg IN"
			   " (SELECT seg FROM a2m_segdir WHERE level >= 1)") > 0);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
}

/* The i-th record of the kill test: 40 words of a 3 000-word vocabulary. */
static void kill_content(uint64_t i, char *buf, size_t cap)
{
	size_t used = 0;
	uint64_t r = i * 0x9E3779B97F4A7C15ull + 1;
	for (int k = 0; k < 40 && used < cap; k++) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		used += (size_t)snprintf(buf + used, cap - used, "%sword%u", k ? " " : "",
					 (unsigned)(r % 3000));
	}
}

/*
** The writer of the kill test, in a child: commits of three new records
** and an older one changed (tombstones), or (lone) of one new record
** each, acknowledged on fd after its commit with the count of records
** written; never returns.
*/
static void kill_writer(tctx *t, int fd, uint64_t first, int lone)
{
	char id[32], text[512];
	uint64_t per = lone ? 1 : 3;
	if (open_indexed(t, &tix) != 0)
		_exit(2);
	for (uint64_t n = first;; n += per) {
		if (!lone && t->s->ops->begin(t->s) != 0)
			_exit(3);
		for (uint64_t i = n; i < n + per; i++) {
			snprintf(id, sizeof id, "k%llu", (unsigned long long)i);
			kill_content(i, text, sizeof text);
			if (insert(t, id, text) < 0)
				_exit(4);
		}
		if (n && !lone) {
			snprintf(id, sizeof id, "k%llu", (unsigned long long)((n * 2654435761ull >> 7) % n));
			kill_content(n + 1000000, text, sizeof text);
			if (update(t, id, text, 0) != 0)
				_exit(5);
		}
		if (!lone && t->s->ops->commit(t->s) != 0)
			_exit(6);
		uint64_t done = n + per;
		if (write(fd, &done, sizeof done) != (ssize_t)sizeof done)
			_exit(7);
	}
}

/*
** Runs kill_writer in a child from *acked on, kills it with SIGKILL once
** it acknowledged want records and delay µs more went by, and sets *acked
** to the last count it acknowledged. Returns 0, or -1 (failure set).
*/
static int kill_round(tctx *t, uint64_t *acked, uint64_t want, useconds_t delay, int lone)
{
	int fds[2];
	if (pipe(fds) != 0) {
		snprintf(failure, sizeof failure, "pipe");
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		kill_writer(t, fds[1], *acked, lone);
	}
	close(fds[1]);
	uint64_t done;
	while (*acked < want && read(fds[0], &done, sizeof done) == (ssize_t)sizeof done)
		*acked = done;
	usleep(delay);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	while (read(fds[0], &done, sizeof done) == (ssize_t)sizeof done)
		*acked = done;
	close(fds[0]);
	return 0;
}

/*
** kill -9 at many points of merges in steps (small budgets, so a merge
** spans many commits): after each, the file opens, its check finds the
** index exactly the records' text, every acknowledged record is there, and
** the writer that follows takes the merges under way on from where they
** stopped. Some kills must land inside a merge.
*/
static void test_a_kill_in_a_merge_leaves_the_index_right(tctx *t)
{
	uint64_t acked = 0;
	int mid_merge = 0;
	char why[320];
	a2m_segments_merge_factor_for_tests(4);
	a2m_segments_steps_for_tests(0, 2000);
	close_store(t);
	for (int round = 0; round < 30 && !failure[0]; round++) {
		/* Some commits in, however slow the build (sanitizers, a loaded
		** machine), then a kill at a varying point of the next ones. */
		if (kill_round(t, &acked, acked + 3 * (uint64_t)(4 + round % 7),
			       (useconds_t)((round * 7717) % 20000), 0) != 0)
			break;
		if (open_indexed(t, &tix) != 0) {
			snprintf(failure, sizeof failure, "round %d: cannot open", round);
			break;
		}
		mid_merge += sql_int(t, "SELECT count(*) FROM a2m_segmerge WHERE cursor IS NOT NULL")
			     > 0;
		if (!check_clean(t->s, why, sizeof why))
			snprintf(failure, sizeof failure, "round %d: %s", round, why);
		int64_t have = sql_int(t, "SELECT count(*) FROM records");
		/* Every acknowledged record, and at most the transaction in flight. */
		if (have != (int64_t)acked && have != (int64_t)acked + 3)
			snprintf(failure, sizeof failure, "round %d: %lld records, %llu acknowledged",
				 round, (long long)have, (unsigned long long)acked);
		acked = (uint64_t)have;
		close_store(t);
	}
	a2m_segments_merge_factor_for_tests(0);
	a2m_segments_steps_for_tests(-1, 0);
	EXPECT(acked > 100);
	EXPECT(mid_merge >= 3);
	EXPECT_OK(open_indexed(t, &tix));
}

/*
** One text from SQL on t's file, through a connection of its own: into out
** (cut to cap), and *hash (FNV-1a) and *len of the whole; "" on failure.
*/
static void sql_text(tctx *t, const char *sql, char *out, size_t cap, uint64_t *hash,
		     size_t *len)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	out[0] = '\0';
	*hash = a2m_hash_bytes("", 0);
	*len = 0;
	if (sqlite3_open_v2(t->path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
		const char *v = (const char *)sqlite3_column_text(st, 0);
		snprintf(out, cap, "%s", v);
		*len = strlen(v);
		*hash = a2m_hash_bytes(v, *len);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* The newest segment's rows as "term:HEX(data)" joined by spaces. */
#define SQL_NEWEST_ROWS \
	"SELECT group_concat(term || ':' || hex(data), ' ') FROM" \
	" (SELECT term, data FROM a2m_segments WHERE seg =" \
	"  (SELECT max(seg) FROM a2m_segdir) ORDER BY term)"

/*
** Every segment's directory row (no nonce, no filter) and rows, in order;
** numbers divided by the gap new segments are numbered by (A2M_SEG_GAP),
** which kept the figures taken before it.
*/
#define SQL_ALL_SEGMENTS \
	"SELECT (SELECT group_concat((seg / 64) || ' ' || level || ' ' || entries, ',') FROM" \
	"  (SELECT * FROM a2m_segdir ORDER BY seg)) || ';' ||" \
	" (SELECT group_concat((seg / 64) || ' ' || term || ' ' || hex(data), ',') FROM" \
	"  (SELECT * FROM a2m_segments ORDER BY seg, term))"

/*
** A flush whose postings of one term arrive out of seq order (an update of
** an old record and removals after inserts of newer ones; an insert removed
** again in the same transaction; terms sharing 8-byte prefixes) writes the
** very bytes the sort of every posting by (term, seq, arrival) wrote.
*/
static void test_flush_of_out_of_order_seqs_writes_the_sorted_postings(tctx *t)
{
	int removed = 0;
	char rows[2048];
	uint64_t hash;
	size_t len;
	EXPECT(insert(t, "a", "alpha beta internationalise") > 0);
	EXPECT(insert(t, "b", "beta gamma international") > 0);
	EXPECT(insert(t, "c", "gamma delta alpha") > 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "d", "alpha delta delta internationalisation") > 0);
	EXPECT(insert(t, "e", "epsilon beta") > 0);
	EXPECT_OK(update(t, "a", "beta epsilon internationalist", 0));
	EXPECT_OK(t->s->ops->remove(t->s, "b", &removed));
	EXPECT(insert(t, "f", "alpha zeta gamma") > 0);
	EXPECT_OK(update(t, "d", "delta international", 0));
	EXPECT_OK(t->s->ops->remove(t->s, "e", &removed));
	EXPECT_OK(update(t, "c", "alpha alpha", 0));
	EXPECT(insert(t, "g", "zeta beta internationalise") > 0);
	EXPECT_OK(t->s->ops->commit(t->s));
	sql_text(t, SQL_NEWEST_ROWS, rows, sizeof rows, &hash, &len);
	/* As the code that sorted every posting wrote it (7f291d7). */
	EXPECT_STR(rows, "alpha:05616C7068610703040202060103046265746107020103030A0103"
			  "0564656C7461040702010207657073696C6F6E030201030567616D6D610505030601030D696E7465"
			  "726E6174696F6E616C040504010210696E7465726E6174696F6E616C69736504030C010310696E74"
			  "65726E6174696F6E616C69737403020103047A657461060C0103020103");
	static const struct {
		const char *term;
		int         df;
	} want[] = {{"alpha", 2}, {"beta", 2}, {"epsilon", 1}, {"international", 1}};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		EXPECT_INT(df(t, want[i].term), want[i].df);
}

/*
** Merges at every level (a factor of 3) of segments written by commits of
** several records, with records updated, removed and inserted again (ties
** of one seq across segments, tombstones kept and dropped): the segments
** hold the very bytes a merge that decodes and encodes every entry writes
** (7f291d7's, until merges dropped the tombstones above their run's floor:
** 272 and 106 entries then, 243 and 89 now; the figures below were taken
** from both, the copy of runs turned off and on, and agree).
*/
static void test_merges_write_the_bytes_of_decoding_every_entry(tctx *t)
{
	model m;
	char dump[64];
	uint64_t hash;
	size_t len;
	static const char *const words[] = {
		"internationalisation internat interna i", "internationale intern internataz",
		"internationalise international internatbz internationalisations"};
	memset(&m, 0, sizeof m);
	m.rand = 2463534242u;
	a2m_segments_merge_factor_for_tests(3);
	/* Terms sharing 8-byte prefixes, each in a segment of its own, merged. */
	for (int i = 0; i < 3; i++) {
		char id[16];
		snprintf(id, sizeof id, "w%d", i);
		EXPECT(insert(t, id, words[i]) > 0);
	}
	for (int round = 0; round < 120 && !failure[0]; round++) {
		if (t->s->ops->begin(t->s) != 0)
			break;
		for (int k = 0; k < 1 + round % 7; k++)
			if (model_step(t, &m) != 0)
				snprintf(failure, sizeof failure, "round %d: %s", round, t->s->errmsg);
		if (t->s->ops->commit(t->s) != 0)
			snprintf(failure, sizeof failure, "commit: %s", t->s->errmsg);
	}
	a2m_segments_merge_factor_for_tests(0);
	EXPECT(!failure[0]);
	EXPECT_POSTINGS(t->s, &m);
	sql_text(t, SQL_ALL_SEGMENTS, dump, sizeof dump, &hash, &len);
	EXPECT_STR(dump, "81 4 156,108 3 243,117 2 89;81 i 01690302010406696E7465726E0304");
	EXPECT_INT(len, 2773);
	EXPECT_INT(hash, 8425977374325601952);
}

/* A posting and its tombstone vanish together once a merge reaches the oldest segment. */
static void test_merge_with_the_oldest_segment_drops_tombstones(tctx *t)
{
	int removed = 0;
	a2m_segments_merge_factor_for_tests(2);
	EXPECT(insert(t, "a", "alpha") > 0);
	EXPECT_OK(t->s->ops->remove(t->s, "a", &removed));
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segments"), 0);
	EXPECT(insert(t, "b", "beta") > 0);
	EXPECT(insert(t, "c", "gamma") > 0);          /* [b c] at level 1 */
	EXPECT_OK(t->s->ops->remove(t->s, "b", &removed));  /* tombstone at level 0 */
	EXPECT_INT(sql_int(t, "SELECT sum(entries) FROM a2m_segdir"), 3);
	EXPECT_INT(df(t, "beta"), 0);
	EXPECT(insert(t, "d", "delta") > 0);          /* merges up to the oldest */
	a2m_segments_merge_factor_for_tests(0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(sql_int(t, "SELECT sum(entries) FROM a2m_segdir"), 2);
	EXPECT_INT(df(t, "beta"), 0);
	EXPECT_INT(df(t, "gamma"), 1);
	EXPECT_INT(df(t, "delta"), 1);
}

/*
** A store whose records stay few while their seqs move on (each round
** remembers one and forgets the oldest, 40 alive, 3 terms each): a merge
** drops every tombstone no older segment needs, not only those of a merge
** that reaches the oldest segment, so a segment holds at most the postings
** of the records its window added and kept (120) and the tombstones of
** the older ones it removed (120). Before, the tombstone of every record
** ever forgotten stayed: after 3 000 rounds one segment held 1 564
** entries, 3 196 in all (998 now), and the total grew with the history,
** not with the records.
*/
static void test_churn_keeps_the_index_the_size_of_its_records(tctx *t)
{
	static const char *const words[] = {"amber", "basil", "cedar", "dune", "ember", "fjord"};
	char id[32], text[64];
	int removed = 0;
	a2m_segments_merge_factor_for_tests(2);
	for (int i = 0; i < 3000 && !failure[0]; i++) {
		snprintf(id, sizeof id, "r%d", i);
		snprintf(text, sizeof text, "%s %s n%d", words[i % 6], words[(i / 6) % 6], i % 40);
		EXPECT(insert(t, id, text) > 0);
		if (i >= 40) {
			snprintf(id, sizeof id, "r%d", i - 40);
			EXPECT_OK(t->s->ops->remove(t->s, id, &removed));
			EXPECT_INT(removed, 1);
		}
	}
	a2m_segments_merge_factor_for_tests(0);
	EXPECT(sql_int(t, "SELECT max(entries) FROM a2m_segdir") <= 240);
	EXPECT(sql_int(t, "SELECT sum(entries) - 240 * count(*) FROM a2m_segdir") <= 0);
	EXPECT_INT(stats(t).docs, 40);
	/* The two words of the records alive, once when they are the same word. */
	int want = 0;
	for (int i = 2960; i < 3000; i++)
		want += 2 - (i % 6 == (i / 6) % 6);
	EXPECT_INT(df(t, "amber") + df(t, "basil") + df(t, "cedar") + df(t, "dune") + df(t, "ember") +
		   df(t, "fjord"), want);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE maxseq IS NULL"), 0);
}

/*
** An index an older build wrote has no maxseq column: the first read-write
** open adds it, rows without a value keep every tombstone a merge younger
** than them writes (as those builds did), and the postings stay exact
** through merges of old and new rows alike.
*/
static void test_index_of_an_older_build_gains_maxseq(tctx *t)
{
	model m;
	char why[128];
	memset(&m, 0, sizeof m);
	m.rand = 88172645463325252u;
	a2m_segments_merge_factor_for_tests(3);
	for (int round = 0; round < 60 && !failure[0]; round++)
		if (model_step(t, &m) != 0)
			snprintf(failure, sizeof failure, "round %d: %s", round, t->s->errmsg);
	close_store(t);
	sqlite3 *db = NULL;
	EXPECT(sqlite3_open(t->path, &db) == SQLITE_OK);
	int rc = sqlite3_exec(db, "ALTER TABLE a2m_segdir DROP COLUMN maxseq", NULL, NULL, NULL);
	sqlite3_close(db);
	EXPECT_INT(rc, SQLITE_OK);
	EXPECT_OK(open_indexed(t, &tix));
	int64_t old_rows = sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE maxseq IS NULL");
	EXPECT(old_rows > 0);
	for (int round = 0; round < 300 && !failure[0]; round++) {
		if (model_step(t, &m) != 0)
			snprintf(failure, sizeof failure, "round %d: %s", round, t->s->errmsg);
		if (!failure[0] && round % 30 == 29 && !postings_match(t->s, &m, why, sizeof why))
			snprintf(failure, sizeof failure, "round %d: %s", round, why);
	}
	a2m_segments_merge_factor_for_tests(0);
	EXPECT_POSTINGS(t->s, &m);
}

/*
** A file of the layout before segments (a2m_postings, "postings/1") is
** rebuilt from its records on open, into a single segment, even when the
** rebuild flushes several times on the way.
*/
static void test_old_layout_file_is_rebuilt_into_one_segment(tctx *t)
{
	model m;
	memset(&m, 0, sizeof m);
	m.rand = 2463534242u;
	for (int i = 0; i < MODEL_IDS; i++) {
		char id[16];
		snprintf(id, sizeof id, "r%d", i);
		random_content(&m, m.content[i], sizeof m.content[i]);
		m.seq[i] = insert(t, id, m.content[i]);
		m.live[i] = 1;
		EXPECT(m.seq[i] > 0);
	}
	for (int i = 0; i < 30; i++) {  /* more records than one merge takes segments */
		char id[16];
		snprintf(id, sizeof id, "f%d", i);
		EXPECT(insert(t, id, "filler") > 0);
	}
	close_store(t);
	sqlite3 *db = NULL;
	EXPECT(sqlite3_open(t->path, &db) == SQLITE_OK);
	int rc = sqlite3_exec(db,
		"DROP TABLE a2m_segments; DROP TABLE a2m_segdir;"
		"CREATE TABLE a2m_postings(term TEXT NOT NULL, seq INTEGER NOT NULL,"
		" tf INTEGER NOT NULL, dl INTEGER NOT NULL, PRIMARY KEY(term, seq)) WITHOUT ROWID;"
		"INSERT INTO a2m_postings VALUES('v1', 1, 1, 1), ('bogus', 1, 1, 1);"
		"UPDATE a2m_meta SET value = 'postings/1|test-words/1' WHERE name = 'index';",
		NULL, NULL, NULL);
	sqlite3_close(db);
	EXPECT_INT(rc, SQLITE_OK);
	tix.calls = 0;
	a2m_sqlite_index_rebuild_flush_for_tests(1);  /* > A2M_SEG_MAX_LISTS segments */
	rc = open_indexed(t, &tix);
	a2m_sqlite_index_rebuild_flush_for_tests(0);
	EXPECT_OK(rc);
	EXPECT_INT(tix.calls, MODEL_IDS + 30);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM sqlite_master WHERE name = 'a2m_postings'"), 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(df(t, "bogus"), 0);
	EXPECT_INT(df(t, "filler"), 30);
	EXPECT_POSTINGS(t->s, &m);
	EXPECT_INT(stats(t).docs, MODEL_IDS + 30);
}

/*
** A rebuild that fails before it has made its segments (here DROP TABLE
** meets a view where a2m_segments should be; fuzz_corrupt_db met a damaged
** file) rolls back and refuses to attach the index. Its clean-up cancelled
** a merge on segments that did not exist yet, through NULL (SIGSEGV at
** open; found by fuzz_corrupt_db, docs/FUZZING.md).
*/
static void test_rebuild_failing_before_its_segments_fails_cleanly(tctx *t)
{
	EXPECT(insert(t, "r1", "alpha beta") > 0);
	close_store(t);
	sqlite3 *db = NULL;
	EXPECT(sqlite3_open(t->path, &db) == SQLITE_OK);
	int rc = sqlite3_exec(db,
		"DROP TABLE a2m_segments; CREATE VIEW a2m_segments AS SELECT 1 AS x;"
		"UPDATE a2m_meta SET value = 'postings/1|test-words/1' WHERE name = 'index';",
		NULL, NULL, NULL);
	sqlite3_close(db);
	EXPECT_INT(rc, SQLITE_OK);
	EXPECT(open_indexed(t, &tix) != 0);
	/* Nothing of the rebuild stays: the view and the old version are there. */
	close_store(t);
	EXPECT(sqlite3_open(t->path, &db) == SQLITE_OK);
	sqlite3_stmt *st = NULL;
	EXPECT(sqlite3_prepare_v2(db, "SELECT value FROM a2m_meta WHERE name = 'index'", -1, &st,
				  NULL) == SQLITE_OK);
	EXPECT(sqlite3_step(st) == SQLITE_ROW);
	EXPECT_STR((const char *)sqlite3_column_text(st, 0), "postings/1|test-words/1");
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/*
** Another connection (read-only, its own postings cache) reads what the
** writer reads, before and after the writer's merges, by visit and by loan.
*/
static void test_a_reader_sees_the_same_postings_after_merges(tctx *t)
{
	model m;
	memset(&m, 0, sizeof m);
	m.rand = 1181783497276652981u;
	a2m_segments_merge_factor_for_tests(2);
	for (int i = 0; i < 30; i++)
		EXPECT(model_step(t, &m) == 0);
	a2m_store *r = NULL;
	char err[256];
	a2m_sqlite_options opt = {.read_only = 1};
	EXPECT_OK(a2m_store_sqlite_open(t->path, &opt, &r, err, sizeof err));
	a2m_index_stats st;
	int ok = r->ops->index_attach(r, &tix.base) == 0 && r->ops->index_stats(r, &st) == 0;
	char why[128] = "";
	ok = ok && postings_match(r, &m, why, sizeof why);
	for (int i = 0; ok && i < 60; i++)
		ok = model_step(t, &m) == 0;
	/* As a query does: the figures first, which notice the writer's commits. */
	ok = ok && r->ops->index_stats(r, &st) == 0 && postings_match(r, &m, why, sizeof why);
	const a2m_posting *v = NULL;
	size_t n = 0;
	plist p = {0};
	ok = ok && r->ops->read_begin(r) == 0;
	ok = ok && r->ops->index_postings_view(r, "v3", 2, &v, &n) == 0 &&
		t->s->ops->index_postings(t->s, "v3", 2, collect, &p) == 0 && (int)n == p.n;
	for (size_t k = 0; ok && k < n; k++)
		ok = v[k].seq == p.seq[k] && v[k].tf == p.tf[k] && v[k].dl == p.dl[k];
	r->ops->read_end(r);
	r->ops->close(r);
	a2m_segments_merge_factor_for_tests(0);
	if (why[0])
		snprintf(failure, sizeof failure, "reader: %s", why);
	EXPECT(ok);
	EXPECT_POSTINGS(t->s, &m);
}

/*
** A term read skips the segments whose filter rules the term out: twelve
** segments each holding one word of its own, and each word is read from
** about one segment, not twelve (a filter may let 1% through).
*/
static void test_term_filters_skip_segments_without_the_term(tctx *t)
{
	char id[16], text[32];
	for (int i = 0; i < 12; i++) {
		snprintf(id, sizeof id, "f%d", i);
		snprintf(text, sizeof text, "common only%dword", i);
		EXPECT(insert(t, id, text) > 0);  /* autocommit: a segment each */
	}
	EXPECT(sql_int(t, "SELECT count(*) FROM a2m_segdir") >= 2);
	size_t before = a2m_segments_block_reads();
	for (int i = 0; i < 12; i++) {
		snprintf(text, sizeof text, "only%dword", i);
		EXPECT_INT(df(t, text), 1);
	}
	EXPECT_INT(df(t, "absentword"), 0);
	size_t reads = a2m_segments_block_reads() - before;
	EXPECT(reads >= 12 && reads <= 15);
	/* A word in every segment is read from each. */
	EXPECT_INT(df(t, "common"), 12);
}

/*
** A merge inside a transaction that is rolled back: the read after the
** rollback must list the segments as they are again, not as the merge had
** left them (the data version does not move on a rollback).
*/
static void test_rollback_of_a_merge_restores_the_segments_reads_see(tctx *t)
{
	a2m_segments_merge_factor_for_tests(2);
	EXPECT(insert(t, "a", "apple one") > 0);
	EXPECT(insert(t, "b", "banana two") > 0);  /* merged with a's */
	EXPECT_INT(df(t, "apple"), 1);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "c", "cherry three") > 0);
	EXPECT_INT(df(t, "cherry"), 1);  /* written as a segment of its own */
	EXPECT(insert(t, "d", "date four") > 0);
	EXPECT_INT(df(t, "date"), 1);    /* and merged, up to one with a's and b's */
	EXPECT_INT(df(t, "apple"), 1);
	t->s->ops->rollback(t->s);
	a2m_segments_merge_factor_for_tests(0);
	EXPECT_INT(df(t, "apple"), 1);
	EXPECT_INT(df(t, "banana"), 1);
	EXPECT_INT(df(t, "cherry"), 0);
	EXPECT_INT(df(t, "date"), 0);
}

/*
** A segment number given out again after a rollback must not inherit the
** filter of the segment that had it: the rolled-back one held other terms
** (the same count of them), and a read trusting its filter would skip the
** new one.
*/
static void test_segment_number_reused_after_rollback_gets_its_own_filter(tctx *t)
{
	EXPECT(insert(t, "x1", "alpha beta") > 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "x2", "gamma delta") > 0);
	EXPECT_INT(df(t, "gamma"), 1);  /* its segment is written, and its filter read */
	t->s->ops->rollback(t->s);
	EXPECT(insert(t, "x3", "omega sigma") > 0);  /* the same number, two terms again */
	EXPECT_INT(df(t, "omega"), 1);
	EXPECT_INT(df(t, "sigma"), 1);
	EXPECT_INT(df(t, "gamma"), 0);
	EXPECT_INT(df(t, "alpha"), 1);
}

/*
** A reader outside any transaction that read a term before a writer's
** commit: its next term read lists the live segments again (the list it
** kept may be older than the snapshot the read takes), so a term only in
** the new segment is found even without the figures read first.
*/
static void test_reader_lists_segments_again_after_a_writers_commit(tctx *t)
{
	EXPECT(insert(t, "w1", "apple one") > 0);
	a2m_store *r = NULL;
	char err[256];
	a2m_sqlite_options opt = {.read_only = 1};
	EXPECT_OK(a2m_store_sqlite_open(t->path, &opt, &r, err, sizeof err));
	plist p = {0};
	int ok = r->ops->index_attach(r, &tix.base) == 0 &&
		r->ops->index_postings(r, "apple", 5, collect, &p) == 0 && p.n == 1;
	EXPECT(insert(t, "w2", "quince two") > 0);  /* a new segment, committed */
	memset(&p, 0, sizeof p);
	ok = ok && r->ops->index_postings(r, "quince", 6, collect, &p) == 0;
	EXPECT(ok);
	EXPECT_INT(p.n, 1);
	r->ops->close(r);
}

/* ---- the tail (sqlite_index_tail.c) ---- */

/* A second store on t's file (read-only or not), with tix: a second server. */
static a2m_store *second_store(tctx *t, int read_only)
{
	a2m_store *o = NULL;
	char err[256];
	a2m_sqlite_options opt = {.read_only = read_only};
	if (a2m_store_sqlite_open(t->path, &opt, &o, err, sizeof err) != 0)
		return NULL;
	if (o->ops->index_attach(o, &tix.base) != 0) {
		o->ops->close(o);
		return NULL;
	}
	return o;
}

static a2m_store *second_writer(tctx *t)
{
	return second_store(t, 0);
}

static int df_in(a2m_store *s, const char *term)
{
	plist p = {0};
	if (s->ops->index_postings(s, term, strlen(term), collect, &p) != 0)
		return -1;
	return p.n;
}

/*
** Lone inserts leave their postings in the tail: no segment, the mark
** unmoved, and yet every read (postings, figures) finds them. A removal
** writes the tail out, mark and all, and the index is then exactly the
** records', as the check says.
*/
static void test_lone_inserts_wait_in_the_tail_until_a_removal(tctx *t)
{
	char why[320];
	EXPECT(insert(t, "t1", "apple pear") > 0);
	EXPECT(insert(t, "t2", "apple plum") > 0);
	int64_t s3 = insert(t, "t3", "fig");
	EXPECT(s3 > 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 0);
	EXPECT_INT(sql_int(t, "SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'indexed'"), 0);
	EXPECT_INT(df(t, "apple"), 2);
	EXPECT_INT(df(t, "fig"), 1);
	EXPECT_INT(stats(t).docs, 3);
	EXPECT_INT(stats(t).total_len, 5);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "with a tail: %s", why);
	int removed = 0;
	EXPECT_OK(t->s->ops->remove(t->s, "t2", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(sql_int(t, "SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'indexed'"), s3);
	EXPECT_INT(df(t, "apple"), 1);
	EXPECT_INT(df(t, "plum"), 0);
	EXPECT_INT(stats(t).docs, 2);
	EXPECT_INT(sql_int(t, "SELECT docs FROM a2m_index_stats"), 2);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "after the removal: %s", why);
}

/*
** The tail is written out once it holds the limit of records, not before
** (the test's limit: 4).
*/
static void test_a_full_tail_is_written_out(tctx *t)
{
	a2m_sqlite_index_tail_for_tests(4);
	char id[16];
	for (int i = 0; i < 3; i++) {
		snprintf(id, sizeof id, "f%d", i);
		EXPECT(insert(t, id, "kiwi") > 0);
	}
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 0);
	EXPECT(insert(t, "f3", "kiwi") > 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(sql_int(t, "SELECT sum(entries) FROM a2m_segdir"), 4);
	EXPECT(insert(t, "f4", "kiwi") > 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(df(t, "kiwi"), 5);
	a2m_sqlite_index_tail_for_tests(0);
}

/*
** Two servers on one file: each one's lone writes wait in its tail, and
** each sees the other's, in its reads and in its own tail when it writes;
** whichever writes the tail out writes both's, and a reader (read-only,
** a third connection) sees every record throughout.
*/
static void test_two_writers_on_one_file_see_each_others_tail(tctx *t)
{
	char why[320], err[256];
	a2m_store *o = second_writer(t), *r = NULL;
	EXPECT(o != NULL);
	a2m_sqlite_options ro = {.read_only = 1};
	EXPECT_OK(a2m_store_sqlite_open(t->path, &ro, &r, err, sizeof err));
	if (!o || !r || r->ops->index_attach(r, &tix.base) != 0) {
		snprintf(failure, sizeof failure, "cannot open the other connections");
		goto out;
	}
	EXPECT(insert(t, "a1", "cherry lime") > 0);
	EXPECT_INT(df_in(r, "cherry"), 1);
	EXPECT_INT(df_in(o, "cherry"), 1);
	a2m_record rec;
	memset(&rec, 0, sizeof rec);
	rec.id = "b1";
	rec.content = "cherry mango";
	rec.tier = "semantic";
	EXPECT_OK(o->ops->insert(o, &rec));
	EXPECT(insert(t, "a2", "cherry") > 0);  /* t's tail takes b1 in first */
	EXPECT_INT(df(t, "cherry"), 3);
	EXPECT_INT(df_in(o, "cherry"), 3);
	EXPECT_INT(df_in(r, "cherry"), 3);
	EXPECT_INT(df_in(r, "mango"), 1);
	a2m_index_stats st;
	EXPECT_OK(r->ops->index_stats(r, &st));
	EXPECT_INT(st.docs, 3);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 0);
	/* o rewrites a1 (a rewrite writes the whole tail out, t's records too). */
	a2m_record *a1 = NULL;
	EXPECT_OK(o->ops->get(o, "a1", &a1));
	if (a1) {
		free(a1->content);
		a1->content = strdup("lime only");
		EXPECT_OK(o->ops->update(o, a1));
		a2m_record_free(a1);
	}
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(df_in(r, "cherry"), 2);
	EXPECT_INT(df(t, "cherry"), 2);
	EXPECT_INT(df(t, "lime"), 1);
	EXPECT(insert(t, "a3", "cherry") > 0);  /* a tail again, above the new mark */
	EXPECT_INT(df_in(o, "cherry"), 3);
	EXPECT_INT(df_in(r, "cherry"), 3);
	EXPECT_OK(r->ops->index_stats(r, &st));
	EXPECT_INT(st.docs, 4);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
out:
	if (o)
		o->ops->close(o);
	if (r)
		r->ops->close(r);
}

/*
** A transaction that writes the tail out (a removal, read inside it) and
** is then rolled back: the tail is back in the file, not in a segment,
** and the connection reads it again.
*/
static void test_a_rolled_back_write_out_keeps_the_tail(tctx *t)
{
	EXPECT(insert(t, "r1", "olive") > 0);
	EXPECT(insert(t, "r2", "olive grape") > 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	int removed = 0;
	EXPECT_OK(t->s->ops->remove(t->s, "r1", &removed));
	EXPECT_INT(df(t, "olive"), 1);  /* written out, inside the transaction */
	t->s->ops->rollback(t->s);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 0);
	EXPECT_INT(df(t, "olive"), 2);
	EXPECT(insert(t, "r3", "olive") > 0);
	EXPECT_INT(df(t, "olive"), 3);
	EXPECT_INT(stats(t).docs, 3);
}

/*
** kill -9 of a writer of lone inserts at many points: every acknowledged
** record's words find it after the reopen (those of the tail read from
** the records), the count by tier is every record's (those above the
** counts' mark counted from their rows), and the check finds the index
** and the counts right.
*/
static void test_a_kill_loses_no_record_of_the_tail(tctx *t)
{
	uint64_t acked = 0;
	char why[320], id[32], text[512];
	int tails = 0, counted = 0;
	close_store(t);
	for (int round = 0; round < 12 && !failure[0]; round++) {
		if (kill_round(t, &acked, acked + 20 + (uint64_t)(round * 37 % 90), 0, 1) != 0)
			break;
		if (open_indexed(t, &tix) != 0) {
			snprintf(failure, sizeof failure, "round %d: cannot open", round);
			break;
		}
		int64_t have = sql_int(t, "SELECT count(*) FROM records");
		if (have != (int64_t)acked && have != (int64_t)acked + 1)
			snprintf(failure, sizeof failure, "round %d: %lld records, %llu acknowledged",
				 round, (long long)have, (unsigned long long)acked);
		tails += sql_int(t, "SELECT count(*) FROM records WHERE seq > (SELECT"
				 " CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'indexed')") > 0;
		/* The counts too: those of the tail are counted from the rows. */
		counted += sql_int(t, "SELECT count(*) FROM records WHERE seq > (SELECT"
				   " CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'counted')") > 0;
		int64_t n = -1;
		if (t->s->ops->count(t->s, &(a2m_query){.tier = "semantic"}, &n) != 0 || n != have)
			snprintf(failure, sizeof failure, "round %d: %lld counted, %lld records", round,
				 (long long)n, (long long)have);
		/* Each record's first word lists it. */
		for (uint64_t i = 0; i < acked && !failure[0]; i++) {
			kill_content(i, text, sizeof text);
			char *sp = strchr(text, ' ');
			if (sp)
				*sp = '\0';
			plist p = {0};
			snprintf(id, sizeof id, "k%llu", (unsigned long long)i);
			int listed = 0;
			a2m_record *rec = NULL;
			if (t->s->ops->get(t->s, id, &rec) != 0 || !rec) {
				snprintf(failure, sizeof failure, "round %d: %s is gone", round, id);
				break;
			}
			if (t->s->ops->index_postings(t->s, text, strlen(text), collect, &p) == 0)
				for (int k = 0; k < p.n; k++)
					listed |= p.seq[k] == rec->seq;
			if (!listed && p.n < 64)
				snprintf(failure, sizeof failure, "round %d: %s not under \"%.60s\"", round,
					 id, text);
			a2m_record_free(rec);
		}
		if (!failure[0] && !check_clean(t->s, why, sizeof why))
			snprintf(failure, sizeof failure, "round %d: %s", round, why);
		acked = (uint64_t)have;
		close_store(t);
	}
	EXPECT(tails >= 6);  /* most kills left a tail to read back */
	EXPECT(counted >= 6);
	open_indexed(t, &tix);
}

#define SQL_MARK "SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'indexed'"

/*
** A clean close writes the tail out: the reopened file has its mark at the
** last record and the tail's postings in a segment, and is clean. A reader
** of the file (a second store) finds every record before and after.
*/
static void test_a_clean_close_writes_the_tail_out(tctx *t)
{
	char why[320];
	a2m_store *o = second_writer(t);
	EXPECT(o != NULL);
	if (!o)
		return;
	EXPECT(insert(t, "c1", "quince lime") > 0);
	EXPECT(insert(t, "c2", "quince") > 0);
	int64_t last = insert(t, "c3", "lime date");
	EXPECT(last > 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 0);
	EXPECT_INT(sql_int(t, SQL_MARK), 0);
	EXPECT_INT(df_in(o, "quince"), 2);
	close_store(t);
	EXPECT_INT(sql_int(t, SQL_MARK), last);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(df_in(o, "quince"), 2);
	EXPECT_INT(df_in(o, "lime"), 2);
	o->ops->close(o);
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(df(t, "date"), 1);
	EXPECT_INT(stats(t).docs, 3);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "after the close: %s", why);
	/* A store that wrote nothing since holds no tail: its close writes nothing. */
	int64_t commits = sql_int(t, "SELECT CAST(value AS INTEGER) FROM a2m_meta"
				  " WHERE name = 'commits'");
	close_store(t);
	EXPECT_INT(sql_int(t, "SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'commits'"),
		   commits);
	EXPECT_OK(open_indexed(t, &tix));
}

/*
** A close that cannot have the write lock (another store is in a write)
** leaves the tail where it is, promptly: nothing is lost, and the next
** open reads it back.
*/
static void test_a_close_kept_from_writing_keeps_the_tail(tctx *t)
{
	char why[320];
	a2m_store *o = second_writer(t);
	EXPECT(o != NULL);
	if (!o)
		return;
	EXPECT(insert(t, "d1", "walnut") > 0);
	int64_t last = insert(t, "d2", "walnut pecan");
	EXPECT(last > 0);
	EXPECT_OK(o->ops->begin(o));
	close_store(t);
	o->ops->rollback(o);
	EXPECT_INT(sql_int(t, SQL_MARK), 0);
	EXPECT_INT(sql_int(t, "SELECT max(seq) FROM records"), last);
	EXPECT_INT(df_in(o, "walnut"), 2);
	o->ops->close(o);  /* o's own close writes it out: it read the tail at begin */
	EXPECT_INT(sql_int(t, SQL_MARK), last);
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(df(t, "pecan"), 1);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "after the reopen: %s", why);
}

/*
** A writer keeps its last commit's number and seq figures while no other
** commit came: two writers taking turns on one file (and one writing twice
** in a row) still give out each seq once and take each commit number once.
*/
static void test_two_writers_taking_turns_share_seqs_and_numbers(tctx *t)
{
	a2m_store *o = second_writer(t);
	EXPECT(o != NULL);
	if (!o)
		return;
	/* Numbers are taken once a store has readers to replay them. */
	a2m_sqlite_number_commits_for_tests(t->s);
	a2m_sqlite_number_commits_for_tests(o);
	char id[16];
	int64_t before = sql_int(t, "SELECT ifnull(max(CAST(value AS INTEGER)), 0) FROM a2m_meta"
				 " WHERE name = 'commits'");
	for (int i = 0; i < 12; i++) {
		a2m_record r;
		memset(&r, 0, sizeof r);
		snprintf(id, sizeof id, "turn%d", i);
		r.id = id;
		r.content = "turn word";
		r.tier = "semantic";
		a2m_store *w = i % 3 == 2 ? o : t->s;  /* t twice, then o */
		EXPECT_OK(w->ops->insert(w, &r));
		if (i == 5) {
			int removed = 0;
			EXPECT_OK(o->ops->remove(o, "turn4", &removed));  /* the newest, by o */
			EXPECT_INT(removed, 1);
		}
	}
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM records"), 11);
	EXPECT_INT(sql_int(t, "SELECT count(DISTINCT seq) FROM records"), 11);
	EXPECT_INT(sql_int(t, "SELECT max(seq) FROM records"), 12);
	EXPECT_INT(sql_int(t, "SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'commits'"),
		   before + 13);
	EXPECT_INT(df(t, "turn"), 11);
	EXPECT_INT(df_in(o, "turn"), 11);
	o->ops->close(o);
}

/*
** A file of the layout before the tail (every record indexed, no mark) is
** taken as it is at a read-write open: no rebuild, its mark set to its last
** record, and its records found; a read-only open uses it too.
*/
static void test_an_untailed_file_is_taken_as_it_is(tctx *t)
{
	char why[320];
	a2m_sqlite_index_tail_for_tests(1);
	EXPECT(insert(t, "u1", "pine cedar") > 0);
	int64_t last = insert(t, "u2", "pine");
	a2m_sqlite_index_tail_for_tests(0);
	EXPECT(last > 0);
	close_store(t);
	sqlite3 *db = NULL;
	EXPECT_INT(sqlite3_open(t->path, &db), SQLITE_OK);
	EXPECT_INT(sqlite3_exec(db, "UPDATE a2m_meta SET value = replace(value, 'postings/7|',"
				" 'postings/4|') WHERE name = 'index';"
				"DELETE FROM a2m_meta WHERE name = 'indexed'", NULL, NULL, NULL),
		   SQLITE_OK);
	sqlite3_close(db);
	a2m_store *r = second_store(t, 1);
	EXPECT(r != NULL);
	if (r) {
		EXPECT_INT(df_in(r, "pine"), 2);
		r->ops->close(r);
	}
	tix.calls = 0;
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(tix.calls, 0);  /* nothing analysed: no rebuild */
	EXPECT_INT(sql_int(t, "SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'indexed'"),
		   last);
	EXPECT_INT(sql_int(t, "SELECT value LIKE 'postings/7|%' FROM a2m_meta WHERE name = 'index'"), 1);
	EXPECT_INT(df(t, "pine"), 2);
	EXPECT(insert(t, "u3", "pine") > 0);
	EXPECT_INT(df(t, "pine"), 3);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
}

static int count_visit(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	(void)seq, (void)tf, (void)dl;
	++*(int *)ctx;
	return 0;
}

/* How many postings term has in s, every one counted (-1 on failure). */
static int df_all(a2m_store *s, const char *term)
{
	int n = 0;
	return s->ops->index_postings(s, term, strlen(term), count_visit, &n) ? -1 : n;
}

/* What main's build (postings/6) made of a2m_segments: a WITHOUT ROWID table. */
#define SQL_KEYED_SEGMENTS \
	"CREATE TABLE keyed(seg INTEGER NOT NULL, term TEXT NOT NULL, data BLOB NOT NULL," \
	" PRIMARY KEY(seg, term)) WITHOUT ROWID;" \
	"INSERT INTO keyed SELECT seg, term, data FROM a2m_segments;" \
	"DROP TABLE a2m_segments;ALTER TABLE keyed RENAME TO a2m_segments;" \
	"UPDATE a2m_meta SET value = replace(value, 'postings/7|', 'postings/6|')" \
	" WHERE name = 'index';"
#define SQL_PK_INDEXES \
	"SELECT count(*) FROM pragma_index_list('a2m_segments') WHERE origin = 'pk'"

/*
** A file of the layout before the rowid table (postings/6: a2m_segments
** WITHOUT ROWID) with segments at two levels and long lists (skip tables,
** rows longer than a read's window): a read-only open reads the old table
** as it is; a read-write open moves its rows into the rowid table in
** place (nothing analysed: no rebuild), names it postings/7, and every
** term reads the same; writes go on and the check finds it clean.
*/
static void test_a_keyed_file_is_moved_in_place(tctx *t)
{
	enum { BATCHES = 5, PER = 1200, WORDS = 40 };
	char id[32], text[96], why[320], w[16];
	int want[WORDS + 1];
	a2m_segments_merge_factor_for_tests(2);
	for (int b = 0; b < BATCHES && !failure[0]; b++) {
		EXPECT_OK(t->s->ops->begin(t->s));
		for (int i = 0; i < PER; i++) {
			int k = b * PER + i;
			snprintf(id, sizeof id, "k%d", k);
			snprintf(text, sizeof text, "pine w%d w%d%s", k % WORDS, (k * 7) % WORDS,
				 k % 3 ? " cedar" : "");
			EXPECT(insert(t, id, text) > 0);
		}
		EXPECT_OK(t->s->ops->commit(t->s));
	}
	a2m_segments_merge_factor_for_tests(0);
	EXPECT(sql_int(t, "SELECT count(DISTINCT level) FROM a2m_segdir") >= 2);
	for (int i = 0; i < WORDS; i++) {
		snprintf(w, sizeof w, "w%d", i);
		want[i] = df_all(t->s, w);
	}
	want[WORDS] = df_all(t->s, "cedar");
	EXPECT_INT(df_all(t->s, "pine"), BATCHES * PER);
	int64_t bytes = sql_int(t, "SELECT sum(length(data)) FROM a2m_segments");
	EXPECT(sql_int(t, "SELECT max(length(data)) FROM a2m_segments") > 4500);
	close_store(t);
	sqlite3 *db = NULL;
	EXPECT_INT(sqlite3_open(t->path, &db), SQLITE_OK);
	EXPECT_INT(sqlite3_exec(db, SQL_KEYED_SEGMENTS, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	EXPECT_INT(sql_int(t, SQL_PK_INDEXES), 1);
	/* Read-only: the old table read by its column. */
	a2m_store *r = second_store(t, 1);
	EXPECT(r != NULL);
	if (r) {
		EXPECT_INT(df_all(r, "pine"), BATCHES * PER);
		EXPECT_INT(df_all(r, "w7"), want[7]);
		r->ops->close(r);
	}
	EXPECT_INT(sql_int(t, SQL_PK_INDEXES), 1);
	tix.calls = 0;
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(tix.calls, 0);  /* nothing analysed: no rebuild */
	EXPECT_INT(sql_int(t, SQL_PK_INDEXES), 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM pragma_index_list('a2m_segments')"
			      " WHERE name = 'a2m_segments_key' AND \"unique\""), 1);
	EXPECT_INT(sql_int(t, "SELECT value LIKE 'postings/7|%' FROM a2m_meta WHERE name = 'index'"), 1);
	EXPECT_INT(sql_int(t, "SELECT sum(length(data)) FROM a2m_segments"), bytes);
	EXPECT_INT(df_all(t->s, "pine"), BATCHES * PER);
	for (int i = 0; i < WORDS; i++) {
		snprintf(w, sizeof w, "w%d", i);
		EXPECT_INT(df_all(t->s, w), want[i]);
	}
	EXPECT_INT(df_all(t->s, "cedar"), want[WORDS]);
	EXPECT(insert(t, "after", "pine cedar") > 0);
	EXPECT_INT(df_all(t->s, "pine"), BATCHES * PER + 1);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
	/* The check sees a table its layout's name does not: without its key... */
	close_store(t);
	EXPECT_INT(sqlite3_open(t->path, &db), SQLITE_OK);
	EXPECT_INT(sqlite3_exec(db, "DROP INDEX a2m_segments_key", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(df_all(t->s, "cedar"), want[WORDS] + 1);
	EXPECT(!check_clean(t->s, why, sizeof why) && strstr(why, "a2m_segments_key"));
	/* ... or WITHOUT ROWID under postings/7's name: read by its column, right. */
	close_store(t);
	EXPECT_INT(sqlite3_open(t->path, &db), SQLITE_OK);
	EXPECT_INT(sqlite3_exec(db, SQL_KEYED_SEGMENTS "UPDATE a2m_meta SET value ="
				" replace(value, 'postings/6|', 'postings/7|') WHERE name = 'index';",
				NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(df_all(t->s, "pine"), BATCHES * PER + 1);
	EXPECT_INT(df_all(t->s, "w3"), want[3]);
	EXPECT(!check_clean(t->s, why, sizeof why) && strstr(why, "WITHOUT ROWID"));
}

int main(void)
{
	RUN(test_insert_indexes_terms_with_counts_and_length);
	RUN(test_text_without_terms_counts_as_unindexed);
	RUN(test_update_without_new_content_does_not_reindex);
	RUN(test_update_with_new_content_moves_postings);
	RUN(test_remove_drops_postings_and_figures);
	RUN(test_remove_every_posting_of_a_long_list);
	RUN(test_rollback_restores_the_index);
	RUN(test_commit_keeps_the_index);
	RUN(test_refused_insert_leaves_index_and_transaction);
	RUN(test_removing_and_reinserting_many_keeps_postings_exact);
	RUN(test_large_transaction_writes_every_posting);
	RUN(test_visit_seqs_keeps_order_and_skips_missing);
	RUN(test_terms_sharing_long_prefixes_keep_their_postings);
	RUN(test_autocommit_write_keeps_record_and_postings_together);
	RUN_DURABLE(test_index_survives_reopen_without_rebuild);
	RUN_SQLITE(test_postings_cache_survives_only_own_commits);
	RUN(test_postings_view_matches_the_visit);
	RUN_SQLITE(test_sqlite_view_keeps_what_it_lent_until_read_end);
	RUN_DURABLE(test_another_analyser_rebuilds_the_index);
	RUN_SQLITE(test_write_without_analyser_marks_index_stale);
	RUN_DURABLE(test_read_only_uses_a_current_index_and_no_stale_one);
	RUN_INLINE(test_merged_segments_keep_the_records_postings);
	RUN_SQLITE(test_merges_ahead_keep_the_records_postings);
	RUN_NO_TAIL(RUN_SQLITE, test_merges_ahead_left_pending_keep_the_records_postings);
	RUN_NO_TAIL(RUN_SQLITE, test_a_commit_does_not_wait_for_a_merge_ahead);
	RUN_NO_TAIL(RUN_SQLITE, test_a_pending_merge_whose_inputs_went_is_dropped);
	RUN_SQLITE(test_small_levels_are_merged_inside_the_commit);
	RUN_NO_TAIL(RUN_SQLITE, test_a_full_level_is_merged_ahead_by_the_next_transaction);
	RUN_NO_TAIL(RUN_SQLITE, test_merge_ahead_is_dropped_with_a_rollback);
	RUN_NO_TAIL(RUN_INLINE, test_merge_with_the_oldest_segment_drops_tombstones);
	RUN_NO_TAIL(RUN_SQLITE, test_flush_of_out_of_order_seqs_writes_the_sorted_postings);
	RUN_NO_TAIL(RUN_INLINE, test_merges_write_the_bytes_of_decoding_every_entry);
	RUN_SQLITE(test_old_layout_file_is_rebuilt_into_one_segment);
	RUN_INLINE(test_churn_keeps_the_index_the_size_of_its_records);
	RUN_SQLITE(test_churn_keeps_the_index_the_size_of_its_records);
	RUN_SQLITE(test_index_of_an_older_build_gains_maxseq);
	RUN_SQLITE(test_rebuild_failing_before_its_segments_fails_cleanly);
	RUN_SQLITE(test_a_reader_sees_the_same_postings_after_merges);
	RUN_NO_TAIL(RUN_SQLITE, test_term_filters_skip_segments_without_the_term);
	RUN_INLINE(test_rollback_of_a_merge_restores_the_segments_reads_see);
	RUN_SQLITE(test_segment_number_reused_after_rollback_gets_its_own_filter);
	RUN_SQLITE(test_reader_lists_segments_again_after_a_writers_commit);
	RUN_SQLITE(test_merges_in_steps_keep_the_records_postings);
	RUN_SQLITE(test_merges_write_skip_tables);
	RUN_SQLITE(test_a_kill_in_a_merge_leaves_the_index_right);
	RUN_SQLITE(test_lone_inserts_wait_in_the_tail_until_a_removal);
	RUN_SQLITE(test_a_full_tail_is_written_out);
	RUN_SQLITE(test_two_writers_on_one_file_see_each_others_tail);
	RUN_SQLITE(test_a_rolled_back_write_out_keeps_the_tail);
	RUN_SQLITE(test_a_clean_close_writes_the_tail_out);
	RUN_SQLITE(test_a_close_kept_from_writing_keeps_the_tail);
	RUN_SQLITE(test_two_writers_taking_turns_share_seqs_and_numbers);
	RUN_SQLITE(test_an_untailed_file_is_taken_as_it_is);
	RUN_SQLITE(test_a_kill_loses_no_record_of_the_tail);
	RUN_NO_TAIL(RUN_SQLITE, test_a_keyed_file_is_moved_in_place);
	char schema[64];
	snprintf(schema, sizeof schema, "a2m_ti_%d", (int)getpid());
	pg_test_schema_drop(schema);
	printf("%d passed, %d failed\n", n_passed, n_failed);
	return n_failed ? 1 : 0;
}
