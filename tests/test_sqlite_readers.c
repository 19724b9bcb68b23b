/*
** test_sqlite_readers.c — concurrent read brackets on one SQLite store
** (store.h, read_begin: several threads may each hold their own bracket
** while nobody writes; sqlite_pool.c lends each a connection of its own).
**
** Every read is a "task" whose answer is boiled down to a 64-bit hash,
** computed once serially; threads then run the tasks in brackets side by
** side and must get the same hashes. Run it under ThreadSanitizer too
** (make TSAN=1): a connection shared by two brackets is a data race in the
** row and postings caches even when the answers happen to come out right.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "a2m.h"
#include "check.h"
#include "rank/analyze.h"
#include "store/sqlite_internal.h"
#include "store/store.h"

#define RECORDS  3000
#define WORDS    50      /* w0..w49: each record holds w<i % WORDS> */
#define TASKS    70
#define CHANGED  5       /* r5 is rewritten after the concurrent reads */

static a2m_analyzer *analyzer;
static a2m_indexer  *ix;

/* ---- hashing answers ---- */

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

static uint64_t mix_str(uint64_t h, const char *s)
{
	return s ? mix(h, s, strlen(s) + 1) : mix(h, "\xff", 1);
}

static uint64_t mix_int(uint64_t h, int64_t v)
{
	return mix(h, &v, sizeof v);
}

static uint64_t hash_record(uint64_t h, const a2m_record *r)
{
	h = mix_str(h, r->id);
	h = mix_str(h, r->content);
	h = mix_str(h, r->tier);
	h = mix_str(h, r->key);
	h = mix_int(h, r->seq);
	return mix_int(h, r->created_at);
}

static int visit_hash(const a2m_record *r, void *ctx)
{
	uint64_t *h = ctx;
	*h = hash_record(*h, r);
	return 0;
}

/* Postings come in no particular order: a sum of per-posting hashes. */
static int posting_hash(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	uint64_t *h = ctx;
	uint64_t p = mix_int(mix_int(mix_int(14695981039346656037ULL, seq), tf), dl);
	*h += p;
	return 0;
}

/* The term the analyser makes of word (the index keeps analysed terms). */
static int term_of(const char *word, char *out, size_t cap)
{
	a2m_doc_terms dt;
	memset(&dt, 0, sizeof dt);
	int ok = ix->analyze(ix, word, &dt) == 0 && dt.n == 1 && dt.terms[0].len < cap;
	if (ok) {
		memcpy(out, dt.terms[0].text, dt.terms[0].len);
		out[dt.terms[0].len] = '\0';
	}
	ix->release(ix, &dt);
	return ok ? 0 : -1;
}

/*
** The terms tasks 5 and 6 (mod 7) read, analysed once before any thread
** runs (the analyser is not the store's to share): w<k % WORDS>, and
** zebra0, which the change of CHANGED brings.
*/
static char task_term[TASKS][64];

static int prepare_terms(void)
{
	char word[32];
	for (int k = 0; k < TASKS; k++) {
		snprintf(word, sizeof word, k % 7 == 6 ? "zebra0" : "w%d", k % WORDS);
		if (term_of(word, task_term[k], sizeof task_term[k]) != 0)
			return -1;
	}
	return 0;
}

/*
** Runs read task k on s (in the caller's bracket, if any) and sets *h to
** its answer's hash. Returns 0 or the store's error code.
*/
static int run_task(a2m_store *s, int k, uint64_t *h)
{
	char buf[64];
	a2m_record *r = NULL;
	int rc = 0;
	*h = 14695981039346656037ULL + (uint64_t)k;
	switch (k % 7) {
	case 0:  /* by id, CHANGED among them */
		snprintf(buf, sizeof buf, "r%d", k == 0 ? CHANGED : (k * 37) % RECORDS);
		if (!(rc = s->ops->get(s, buf, &r)) && r)
			*h = hash_record(*h, r);
		break;
	case 1: {  /* by seq: 20 of them, CHANGED's (seq CHANGED + 1) first */
		int64_t seqs[20];
		seqs[0] = CHANGED + 1;
		for (int i = 1; i < 20; i++)
			seqs[i] = 1 + (k * 131 + i * 97) % (RECORDS + 10);  /* some name none */
		rc = s->ops->visit_seqs(s, seqs, 20, visit_hash, h);
		break;
	}
	case 2: {  /* a scan of one tier, either way */
		char tier[8];
		snprintf(tier, sizeof tier, "t%d", k % 3);
		a2m_query q = {.tier = tier, .descending = k % 2};
		rc = s->ops->scan(s, &q, visit_hash, h);
		break;
	}
	case 3: {
		char tier[8];
		int64_t n = 0;
		snprintf(tier, sizeof tier, "t%d", k % 3);
		a2m_query q = {.tier = tier, .key_prefix = k % 2 ? "k1" : NULL};
		if (!(rc = s->ops->count(s, &q, &n)))
			*h = mix_int(*h, n);
		break;
	}
	case 4: {
		a2m_index_stats st;
		if (!(rc = s->ops->index_stats(s, &st)))
			*h = mix_int(mix_int(mix_int(*h, st.docs), st.total_len), st.unindexed);
		break;
	}
	case 5:  /* a term's postings, after the figures (as a recall reads them) */
	case 6: {
		a2m_index_stats st;
		const char *term = task_term[k];
		if (!(rc = s->ops->index_stats(s, &st)))
			rc = s->ops->index_postings(s, term, strlen(term), posting_hash, h);
		if (!rc) {  /* and one by key, as the stack reads keys */
			snprintf(buf, sizeof buf, "k%d", (k * 53) % RECORDS);
			if (!(rc = s->ops->get_by_key(s, NULL, buf, &r)) && r)
				*h = hash_record(*h, r);
		}
		break;
	}
	}
	a2m_record_free(r);
	return rc;
}

/* Every task's answer, read serially in one bracket. */
static int expect_all(a2m_store *s, uint64_t *want)
{
	int rc = s->ops->read_begin(s);
	for (int k = 0; k < TASKS && !rc; k++)
		rc = run_task(s, k, &want[k]);
	s->ops->read_end(s);
	return rc;
}

/* ---- stores ---- */

static void fill(a2m_store *s, int n)
{
	char id[16], key[16], tier[8], content[96];
	CHECK_INT(s->ops->begin(s), 0);
	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof id, "r%d", i);
		snprintf(key, sizeof key, "k%d", i);
		snprintf(tier, sizeof tier, "t%d", i % 3);
		snprintf(content, sizeof content, "record number%d w%d w%d common words here",
			 i, i % WORDS, (i * 7) % WORDS);
		a2m_record rec = {.id = id, .key = key, .tier = tier, .content = content,
				  .created_at = 1000 + i / 3};
		if (s->ops->insert(s, &rec) != 0) {
			CHECK(!"insert");
			break;
		}
	}
	CHECK_INT(s->ops->commit(s), 0);
}

/* Opens path (":memory:" too) with the analyser and n records. */
static a2m_store *open_filled(const char *path, int n)
{
	char err[256];
	a2m_store *s = NULL;
	check_remove_db(path);
	if (a2m_store_sqlite_open(path, NULL, &s, err, sizeof err) != 0) {
		fprintf(stderr, "  open %s: %s\n", path, err);
		CHECK(!"open");
		return NULL;
	}
	CHECK_INT(s->ops->index_attach(s, ix), 0);
	fill(s, n);
	return s;
}

/* ---- threads ---- */

typedef struct reader_ctx {
	a2m_store       *s;
	const uint64_t  *want;
	int              brackets;
	uint64_t         seed;
	atomic_int      *wrong;
	pthread_barrier_t *together;  /* non-NULL: every thread holds its bracket at once */
} reader_ctx;

/* Brackets of three random tasks each, every answer checked. */
static void *reader_main(void *arg)
{
	reader_ctx *c = arg;
	for (int b = 0; b < c->brackets; b++) {
		if (c->s->ops->read_begin(c->s) != 0) {
			atomic_fetch_add(c->wrong, 1);
			continue;
		}
		if (c->together)
			pthread_barrier_wait(c->together);
		int n = c->together ? TASKS : 3;
		for (int i = 0; i < n; i++) {
			int k = c->together ? i : (int)(check_rand(&c->seed) % TASKS);
			uint64_t h;
			if (run_task(c->s, k, &h) != 0 || h != c->want[k])
				atomic_fetch_add(c->wrong, 1);
		}
		if (c->together)
			pthread_barrier_wait(c->together);
		c->s->ops->read_end(c->s);
	}
	return NULL;
}

/* n threads, each running brackets brackets; returns the wrong answers. */
static int run_readers(a2m_store *s, const uint64_t *want, int n, int brackets, int together)
{
	pthread_t th[32];
	reader_ctx ctx[32];
	pthread_barrier_t bar;
	atomic_int wrong = 0;
	if (together)
		pthread_barrier_init(&bar, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		ctx[i] = (reader_ctx){s, want, brackets, 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1),
				      &wrong, together ? &bar : NULL};
		if (pthread_create(&th[i], NULL, reader_main, &ctx[i]) != 0) {
			CHECK(!"pthread_create");
			n = i;
			break;
		}
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (together)
		pthread_barrier_destroy(&bar);
	return atomic_load(&wrong);
}

/* Rewrites CHANGED's content (its postings move) and adds a record. */
static void write_change(a2m_store *s)
{
	a2m_record *r = NULL;
	CHECK_INT(s->ops->get(s, "r5", &r), 0);
	if (!r)
		return;
	CHECK_INT(s->ops->begin(s), 0);
	free(r->content);
	r->content = strdup("zebra0 quagga");
	CHECK_INT(s->ops->update(s, r), 0);
	a2m_record fresh = {.id = "fresh", .key = "k17", .owner = "someone", .tier = "t0",
			    .content = "zebra0 okapi", .created_at = 5000};
	CHECK_INT(s->ops->insert(s, &fresh), 0);
	CHECK_INT(s->ops->commit(s), 0);
	a2m_record_free(r);
}

/* ---- the rules ---- */

/* Per process: two runs at once (a normal and a sanitizer build, two
** checkouts) must not share, and delete, one file. */
static char db_path[64];

static void test_concurrent_brackets_read_what_serial_reads_read(void)
{
	static uint64_t want[TASKS];
	a2m_store *s = open_filled(db_path, RECORDS);
	if (!s)
		return;
	CHECK_INT(expect_all(s, want), 0);
	CHECK_INT(run_readers(s, want, 4, 150, 0), 0);
	s->ops->close(s);
	check_remove_db(db_path);
}

static void test_every_connection_sees_the_main_connections_commit(void)
{
	static uint64_t before[TASKS], after[TASKS];
	a2m_store *s = open_filled(db_path, RECORDS);
	if (!s)
		return;
	CHECK_INT(expect_all(s, before), 0);
	/* Fill every connection's row and postings caches at the old version. */
	CHECK_INT(run_readers(s, before, 1 + A2M_SQLITE_POOL_READERS, 1, 1), 0);
	write_change(s);
	CHECK_INT(expect_all(s, after), 0);
	/* The change shows where it must: r5 by id and by seq, w5's and zebra0's
	** postings, the figures; so a stale cache could not pass for current. */
	CHECK(after[0] != before[0]);
	CHECK(after[1] != before[1]);
	CHECK(after[4] != before[4]);
	CHECK(after[5] != before[5]);
	CHECK(after[6] != before[6]);
	CHECK_INT(run_readers(s, after, 1 + A2M_SQLITE_POOL_READERS, 1, 1), 0);
	s->ops->close(s);
	check_remove_db(db_path);
}

static void test_memory_database_serialises_brackets_correctly(void)
{
	static uint64_t want[TASKS];
	a2m_store *s = open_filled(":memory:", 600);
	if (!s)
		return;
	CHECK_INT(expect_all(s, want), 0);
	CHECK_INT(run_readers(s, want, 4, 60, 0), 0);
	s->ops->close(s);
}

static void test_read_only_store_lends_readers_too(void)
{
	static uint64_t want[TASKS];
	char err[256];
	a2m_store *s = open_filled(db_path, 600);
	if (!s)
		return;
	s->ops->close(s);
	a2m_sqlite_options opt = {.read_only = 1};
	s = NULL;
	CHECK_INT(a2m_store_sqlite_open(db_path, &opt, &s, err, sizeof err), 0);
	if (!s)
		return;
	CHECK_INT(s->ops->index_attach(s, ix), 0);
	CHECK_INT(expect_all(s, want), 0);
	CHECK_INT(run_readers(s, want, 1 + A2M_SQLITE_POOL_READERS, 1, 1), 0);
	CHECK_INT(run_readers(s, want, 4, 40, 0), 0);
	s->ops->close(s);
	check_remove_db(db_path);
}

static void test_more_threads_than_connections_all_finish(void)
{
	static uint64_t want[TASKS];
	a2m_store *s = open_filled(db_path, 600);
	if (!s)
		return;
	CHECK_INT(expect_all(s, want), 0);
	CHECK_INT(run_readers(s, want, 3 * (1 + A2M_SQLITE_POOL_READERS), 20, 0), 0);
	s->ops->close(s);
	check_remove_db(db_path);
}

/* Holds a bracket (on a reader: the test thread holds the main one). */
static void *failing_read(void *arg)
{
	a2m_store *s = arg;
	char *v = NULL;
	if (s->ops->read_begin(s) != 0)
		return "read_begin";
	int rc = s->ops->meta_get(s, NULL, &v);
	s->ops->read_end(s);
	return rc == A2M_INVALID_PARAMS ? NULL : "meta_get";
}

static void test_a_readers_failure_reaches_the_stores_errmsg(void)
{
	a2m_store *s = open_filled(db_path, 10);
	pthread_t th;
	void *res = "not run";
	if (!s)
		return;
	snprintf(s->errmsg, sizeof s->errmsg, "untouched");
	CHECK_INT(s->ops->read_begin(s), 0);
	if (pthread_create(&th, NULL, failing_read, s) == 0)
		pthread_join(th, &res);
	s->ops->read_end(s);
	CHECK(res == NULL);
	CHECK_STR(s->errmsg, "meta_get: no name");
	s->ops->close(s);
	check_remove_db(db_path);
}

/* Two brackets at once on a file: the second must not wait for the first. */
static void *second_bracket(void *arg)
{
	a2m_store *s = ((void **)arg)[0];
	pthread_barrier_t *bar = ((void **)arg)[1];
	int rc = s->ops->read_begin(s);
	pthread_barrier_wait(bar);  /* the first holds its bracket until here */
	s->ops->read_end(s);
	return rc ? "read_begin" : NULL;
}

static void test_file_brackets_run_side_by_side(void)
{
	a2m_store *s = open_filled(db_path, 10);
	pthread_barrier_t bar;
	pthread_t th;
	void *res = "not run";
	if (!s)
		return;
	pthread_barrier_init(&bar, NULL, 2);
	void *arg[2] = {s, &bar};
	CHECK_INT(s->ops->read_begin(s), 0);
	if (pthread_create(&th, NULL, second_bracket, arg) == 0) {
		pthread_barrier_wait(&bar);
		pthread_join(th, &res);
	}
	s->ops->read_end(s);
	CHECK(res == NULL);
	pthread_barrier_destroy(&bar);
	s->ops->close(s);
	check_remove_db(db_path);
}


/* ---- the commit journal: a reader's caches across the main's commits ---- */

/* What one reader bracket saw (probe). */
typedef struct probe_out {
	int     on_reader;     /* the bracket was served by a reader, not the main */
	size_t  reads;         /* terms read from SQLite, not the postings cache */
	size_t  rows_kept;     /* records in the reader's row cache afterwards */
	int64_t count3, at3;   /* seq 3's access_count and accessed_at */
	char    content5[64];  /* seq 5's content */
	int     zebra;         /* postings of the term of "zebra9" */
	int     fresh;         /* the record "fresh9" is found by id */
} probe_out;

typedef struct probe_ctx {
	a2m_store *s;
	int        wide;       /* visit seqs 1..100, else 1..10 */
	probe_out  out;
} probe_ctx;

static int probe_row(const a2m_record *r, void *ctx)
{
	probe_out *o = ctx;
	if (r->seq == 3) {
		o->count3 = r->access_count;
		o->at3 = r->accessed_at;
	} else if (r->seq == 5) {
		snprintf(o->content5, sizeof o->content5, "%s", r->content);
	}
	return 0;
}

static int count_posting(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	(void)seq, (void)tf, (void)dl;
	++*(int *)ctx;
	return 0;
}

static void *probe_main(void *arg)
{
	probe_ctx *p = arg;
	a2m_store *s = p->s;
	int64_t seqs[100];
	char w1[64], zebra[64];
	a2m_index_stats st;
	a2m_record *r = NULL;
	if (term_of("w1", w1, sizeof w1) || term_of("zebra9", zebra, sizeof zebra) ||
	    s->ops->read_begin(s) != 0)
		return "setup";
	sqlstore *c = a2m_sqlite_conn(s);
	p->out.on_reader = c != (sqlstore *)s && c->index;
	if (!p->out.on_reader) {
		s->ops->read_end(s);
		return "not a reader";
	}
	size_t reads = a2m_sqlite_index_reads(c->index);
	int n = p->wide ? 100 : 10, bad = 0;
	for (int i = 0; i < n; i++)
		seqs[i] = i + 1;
	bad |= s->ops->visit_seqs(s, seqs, (size_t)n, probe_row, &p->out);
	bad |= s->ops->index_stats(s, &st);
	bad |= s->ops->index_postings(s, w1, strlen(w1), count_posting, &(int){0});
	bad |= s->ops->index_postings(s, zebra, strlen(zebra), count_posting, &p->out.zebra);
	bad |= s->ops->get(s, "fresh9", &r);
	p->out.fresh = r != NULL;
	a2m_record_free(r);
	p->out.reads = a2m_sqlite_index_reads(c->index) - reads;
	p->out.rows_kept = a2m_row_cache_count(c->rows);
	s->ops->read_end(s);
	return bad ? "read" : NULL;
}

/*
** One bracket on a reader connection: the test thread holds the main
** connection in a bracket meanwhile, so the probing thread is lent a reader
** (always the same one: the first free slot).
*/
static probe_out probe(a2m_store *s, int wide)
{
	probe_ctx p = {.s = s, .wide = wide};
	pthread_t th;
	void *res = "not run";
	CHECK_INT(s->ops->read_begin(s), 0);
	if (pthread_create(&th, NULL, probe_main, &p) == 0)
		pthread_join(th, &res);
	s->ops->read_end(s);
	if (res)
		fprintf(stderr, "  probe: %s\n", (const char *)res);
	CHECK(res == NULL);
	return p.out;
}

/* Touches seq 3 by add at at, in a transaction of the main connection. */
static void touch_commit(a2m_store *s, int64_t add, int64_t at)
{
	CHECK_INT(s->ops->begin(s), 0);
	CHECK_INT(s->ops->touch(s, 3, add, at), 0);
	CHECK_INT(s->ops->commit(s), 0);
}

static void test_reader_keeps_caches_across_a_main_commit_of_touches(void)
{
	a2m_store *s = open_filled(db_path, 600);
	if (!s)
		return;
	probe_out a = probe(s, 1);
	CHECK_INT(a.count3, 0);
	CHECK(a.reads >= 2);
	CHECK_INT((int64_t)a.rows_kept, 100);
	touch_commit(s, 5, 777);
	probe_out b = probe(s, 0);
	CHECK_INT(b.count3, 5);      /* the touch, replayed on the cached row */
	CHECK_INT(b.at3, 777);
	CHECK_INT((int64_t)b.reads, 0);        /* postings still cached */
	CHECK_INT((int64_t)b.rows_kept, 100);  /* rows 11..100 still cached */
	/* Ten more, still within the journal: the counts add up. */
	for (int i = 0; i < 10; i++)
		touch_commit(s, 1, 800 + i);
	probe_out c = probe(s, 0);
	CHECK_INT(c.count3, 15);
	CHECK_INT(c.at3, 809);
	CHECK_INT((int64_t)c.reads, 0);
	CHECK_INT((int64_t)c.rows_kept, 100);
	s->ops->close(s);
	check_remove_db(db_path);
}

static void test_reader_sees_a_main_commit_of_records_and_postings(void)
{
	a2m_store *s = open_filled(db_path, 600);
	a2m_record *r = NULL;
	if (!s)
		return;
	probe_out a = probe(s, 1);
	CHECK_INT(a.zebra, 0);
	CHECK_INT(a.fresh, 0);
	CHECK_STR(a.content5, "record number4 w4 w28 common words here");
	/* r4 (seq 5) rewritten with the new term, and a new record holding it. */
	CHECK_INT(s->ops->get(s, "r4", &r), 0);
	if (!r)
		return;
	CHECK_INT(s->ops->begin(s), 0);
	free(r->content);
	r->content = strdup("zebra9 rewritten");
	CHECK_INT(s->ops->update(s, r), 0);
	a2m_record fresh = {.id = "fresh9", .tier = "t0", .content = "zebra9 okapi",
			    .created_at = 9000};
	CHECK_INT(s->ops->insert(s, &fresh), 0);
	CHECK_INT(s->ops->commit(s), 0);
	a2m_record_free(r);
	probe_out b = probe(s, 0);
	CHECK_INT(b.zebra, 2);
	CHECK_INT(b.fresh, 1);
	CHECK_STR(b.content5, "zebra9 rewritten");  /* the row was forgotten */
	CHECK(b.reads >= 2);                        /* postings read again */
	CHECK_INT((int64_t)b.rows_kept, 100);       /* kept, seq 5 read again */
	s->ops->close(s);
	check_remove_db(db_path);
}

/*
** A write outside any transaction (the store API allows one) commits by
** itself; a reader that replays a later journaled commit must not keep
** the row that write changed. It once did: such a write left no journal
** entry, and the reader's next bracket, replaying only the later commit,
** served seq 5's old content from its row cache.
*/
static void test_reader_sees_a_write_made_outside_a_transaction(void)
{
	a2m_store *s = open_filled(db_path, 600);
	a2m_record *r = NULL;
	if (!s)
		return;
	probe_out a = probe(s, 1);
	CHECK_STR(a.content5, "record number4 w4 w28 common words here");
	CHECK_INT(s->ops->get(s, "r4", &r), 0);
	if (!r)
		return;
	free(r->content);
	r->content = strdup("zebra9 rewritten alone");
	CHECK_INT(s->ops->update(s, r), 0);  /* no begin: its own commit */
	a2m_record_free(r);
	touch_commit(s, 1, 900);             /* a journaled commit after it */
	probe_out b = probe(s, 0);
	CHECK_STR(b.content5, "zebra9 rewritten alone");
	CHECK_INT(b.zebra, 1);
	CHECK_INT(b.count3, 1);
	s->ops->close(s);
	check_remove_db(db_path);
}

static void test_reader_empties_caches_after_a_foreign_commit(void)
{
	char err[256];
	a2m_store *s = open_filled(db_path, 600), *other = NULL;
	sqlite3 *db = NULL;
	if (!s)
		return;
	probe(s, 1);
	touch_commit(s, 1, 100);  /* the file has a commit number from here on */
	probe_out a = probe(s, 1);
	CHECK_INT(a.count3, 1);
	CHECK_INT((int64_t)a.rows_kept, 100);
	/* A second a2m store on the file: it takes a number of its own. */
	CHECK_INT(a2m_store_sqlite_open(db_path, NULL, &other, err, sizeof err), 0);
	if (other) {
		CHECK_INT(other->ops->index_attach(other, ix), 0);
		touch_commit(other, 7, 200);
		other->ops->close(other);
	}
	probe_out b = probe(s, 0);
	CHECK_INT(b.count3, 8);
	CHECK_INT(b.at3, 200);
	CHECK(b.reads >= 2);
	CHECK_INT((int64_t)b.rows_kept, 10);
	/* Plain SQL: the version moves, the number does not. */
	probe(s, 1);
	CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
	CHECK_INT(sqlite3_exec(db, "UPDATE records SET access_count = access_count + 11"
			       " WHERE seq = 3", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	probe_out c = probe(s, 0);
	CHECK_INT(c.count3, 19);
	CHECK(c.reads >= 2);
	CHECK_INT((int64_t)c.rows_kept, 10);
	/* And the main connection's next commit is replayed again. */
	probe(s, 1);
	touch_commit(s, 1, 300);
	probe_out d = probe(s, 0);
	CHECK_INT(d.count3, 20);
	CHECK_INT((int64_t)d.reads, 0);
	CHECK_INT((int64_t)d.rows_kept, 100);
	s->ops->close(s);
	check_remove_db(db_path);
}

static void test_reader_empties_caches_when_the_journal_overflowed(void)
{
	a2m_store *s = open_filled(db_path, 600);
	if (!s)
		return;
	probe(s, 1);
	for (int i = 0; i < 100; i++)  /* more than the journal holds */
		touch_commit(s, 1, 1000 + i);
	probe_out b = probe(s, 0);
	CHECK_INT(b.count3, 100);
	CHECK_INT(b.at3, 1099);
	CHECK(b.reads >= 2);
	CHECK_INT((int64_t)b.rows_kept, 10);
	s->ops->close(s);
	check_remove_db(db_path);
}

/*
** Until the pool opens a reader, nobody replays the journal, and a commit
** takes no number: a lone insert writes no a2m_meta page. From the first
** reader on, every commit takes one.
*/
static void test_commits_take_a_number_once_a_reader_opened(void)
{
	a2m_store *s = open_filled(db_path, 50);
	char *v = NULL;
	if (!s)
		return;
	touch_commit(s, 1, 100);
	CHECK_INT(s->ops->meta_get(s, "commits", &v), 0);
	CHECK(v == NULL);
	free(v);
	probe(s, 0);
	touch_commit(s, 1, 200);
	CHECK_INT(s->ops->meta_get(s, "commits", &v), 0);
	CHECK_STR(v, "1");
	free(v);
	s->ops->close(s);
	check_remove_db(db_path);
}

/*
** A commit that took no number (the pool had no reader when it was
** staged) may land after a reader that was opening meanwhile synced: the
** numbers then run without a gap, so the next numbered commit empties the
** readers' caches. Here plain SQL stands for that commit, and unnumbered is
** set as its stage would have left it.
*/
static void test_the_first_number_after_an_unnumbered_commit_empties_caches(void)
{
	a2m_store *s = open_filled(db_path, 600);
	sqlite3 *db = NULL;
	if (!s)
		return;
	probe(s, 1);
	touch_commit(s, 1, 100);
	probe_out a = probe(s, 1);
	CHECK_INT(a.count3, 1);
	CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
	CHECK_INT(sqlite3_exec(db, "UPDATE records SET access_count = access_count + 11"
			       " WHERE seq = 3", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	((sqlstore *)s)->unnumbered = 1;
	touch_commit(s, 1, 300);
	probe_out b = probe(s, 0);
	CHECK_INT(b.count3, 13);  /* read again, not 2 from the cached row */
	CHECK_INT((int64_t)b.rows_kept, 10);
	/* Answered for: the next commit is replayed as usual. */
	probe(s, 1);
	touch_commit(s, 1, 400);
	probe_out c = probe(s, 0);
	CHECK_INT(c.count3, 14);
	CHECK_INT((int64_t)c.rows_kept, 100);
	s->ops->close(s);
	check_remove_db(db_path);
}

int main(void)
{
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-sqlite-readers-%d.db", (int)getpid());
	static const test_case tests[] = {
		TEST(test_concurrent_brackets_read_what_serial_reads_read),
		TEST(test_every_connection_sees_the_main_connections_commit),
		TEST(test_memory_database_serialises_brackets_correctly),
		TEST(test_read_only_store_lends_readers_too),
		TEST(test_more_threads_than_connections_all_finish),
		TEST(test_a_readers_failure_reaches_the_stores_errmsg),
		TEST(test_file_brackets_run_side_by_side),
		TEST(test_reader_keeps_caches_across_a_main_commit_of_touches),
		TEST(test_reader_sees_a_main_commit_of_records_and_postings),
		TEST(test_reader_sees_a_write_made_outside_a_transaction),
		TEST(test_reader_empties_caches_after_a_foreign_commit),
		TEST(test_reader_empties_caches_when_the_journal_overflowed),
		TEST(test_commits_take_a_number_once_a_reader_opened),
		TEST(test_the_first_number_after_an_unnumbered_commit_empties_caches),
		{NULL, NULL},
	};
	alarm(600);  /* a deadlock fails the run instead of hanging it */
	analyzer = a2m_analyzer_new(NULL);
	if (!analyzer || !(ix = a2m_analyzer_indexer(analyzer)) || prepare_terms() != 0) {
		fprintf(stderr, "no analyser\n");
		return 1;
	}
	int rc = run_tests(tests);
	a2m_analyzer_free(analyzer);
	return rc;
}
