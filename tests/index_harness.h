/*
** index_harness.h — the harness of the rules of the storage seam's term
** index (store.h: index_attach, index_stats, index_postings, visit_seqs;
** tests/test_index*.c, header-only), each rule against both engines.
**
** The stores are given a trivial analyser (words are runs of ASCII letters
** and digits, lower-cased) that counts its calls, so the rules are about
** the store, not the analysis: what is indexed when, in which transaction,
** and what survives a rollback or a reopen.
*/
#ifndef A2M_TEST_INDEX_HARNESS_H
#define A2M_TEST_INDEX_HARNESS_H

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

static inline int tix_analyze(a2m_indexer *ix, const char *text, a2m_doc_terms *out)
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

static inline void tix_release(a2m_indexer *ix, a2m_doc_terms *dt)
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

static inline void remove_files(const char *path)
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

static inline int open_plain(tctx *t, int read_only)
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
static inline int open_indexed(tctx *t, test_ix *ix)
{
	int rc = open_plain(t, 0);
	if (rc == 0)
		rc = t->s->ops->index_attach(t->s, &ix->base);
	return rc;
}

static inline void close_store(tctx *t)
{
	if (t->s)
		t->s->ops->close(t->s);
	t->s = NULL;
}

/* Which engines: every one; SQLite alone (its segments); SQLite merging
** inline; the two that keep an index across a reopen. */
enum { BOTH, SQLITE_ONLY, SQLITE_INLINE, DURABLE };

/* The merge hooks back at their defaults: a rule that failed half-way left them set. */
static inline void hooks_reset(void)
{
	a2m_segments_merge_factor_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	a2m_segments_ahead_wait_for_tests(0);
	(void)a2m_seg_job_release_for_tests();
}

static inline void run(const char *name, void (*fn)(tctx *), int which)
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

static inline int64_t insert(tctx *t, const char *id, const char *content)
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
static inline int update(tctx *t, const char *id, const char *content, int64_t access)
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

static inline int collect(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
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
static inline int df(tctx *t, const char *term)
{
	plist p = {0};
	if (t->s->ops->index_postings(t->s, term, strlen(term), collect, &p) != 0)
		return -1;
	return p.n;
}

static inline a2m_index_stats stats(tctx *t)
{
	a2m_index_stats st;
	if (t->s->ops->index_stats(t->s, &st) != 0)
		st.docs = st.total_len = st.unindexed = -1;
	return st;
}

/* After the rules: drops the program's schema, prints the counts; the exit status. */
static inline int index_harness_end(void)
{
	char schema[64];
	snprintf(schema, sizeof schema, "a2m_ti_%d", (int)getpid());
	pg_test_schema_drop(schema);
	printf("%d passed, %d failed\n", n_passed, n_failed);
	return n_failed ? 1 : 0;
}

#endif
