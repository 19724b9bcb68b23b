/*
** bench.c — `a2m bench`: the benchmarks of DESIGN §7, printed, not asserted.
**
**   a2m bench quality [--data DIR] [--engine memory|sqlite|postgres]
**                     [--postgres URL] [--verbose]
**       Ranking quality on bench/quality/ (docs/BENCHMARKS.md): facts in
**       several languages in deliberately confusable pairs, and queries that
**       paraphrase them, inflect them, or drop their accents. Every query is
**       a memory/recall through a real server in this process (a2m_handle),
**       once with our ranking (bm25) and once with the old plain-scan
**       lexical scorer, side by side: precision@1 and mean reciprocal rank,
**       per language and split (dev: the queries about f01-f12, which tuning
**       looked at; test: f13-f24, and hard: h01-h16, which it did not).
**       Two corpora: "same" loads one language per store and asks in that
**       language (the measure of DECISIONS 014); "mixed" loads every
**       language into one store, where any rendering of the right fact
**       counts.
**
**   a2m bench latency [--records N] [--queries Q] [--engine memory|sqlite]
**                     [--db PATH] [--synchronous-normal] [--read-only]
**       Loads N synthetic records (batches of 1000) and times Q recalls of
**       two or three words, in process: p50, p99 and mean, plus the load
**       rate. A record is 8 to 17 words: a third English function words,
**       the rest drawn by Zipf's law from a made-up 20 000-word vocabulary;
**       a query is 2 or 3 words of that vocabulary, also by Zipf's law, so
**       many queries hold a word found in most records. --read-only
**       (SQLite) reopens the file read-only before the recalls, so they
**       skip the access-count update each recall otherwise commits.
**       --frequent: each query three of the twenty most frequent words.
**       --compare-pruning: each query timed with term-at-a-time pruning
**       only and with document-at-a-time pruning (MaxScore, maxscore.c;
**       the default takes it for queries of 16 384 postings or more);
**       --compare-walks: document at a time walked by WAND with block-max
**       (blockmax.c) and by MaxScore. Either prints, per query walked,
**       the walk's steps, postings scored and blocks decoded (the same on
**       every run: quote them beside the wall clock), and the walks run: a
**       recall asked again, or run again under the exclusive lock to write
**       its touches, walks twice and counts once. --fts5: SQLite
**       FTS5's bm25() over the same records and queries, in this process,
**       each query timed there right after a2m's (bench_fts5.c).
**       --db PATH keeps the file (and the peer's, PATH-fts5); a later run
**       with as many --records reuses it without loading again (the same
**       queries: the records' text is drawn again, unstored; not with
**       --query-file, whose queries do not depend on it).
**       --worst N: the N slowest queries (a2m's default way), each with its
**       text, time and walk counters, to find what the tail does;
**       --query-file F: the queries read from F, one a line (cycled), not
**       drawn: a run of only those (e.g. under callgrind).
**       --now T (RFC 3339, or milliseconds since the epoch): the process's
**       clock pinned, reading T + k ms at the run's k-th call (the load's
**       batches, then the recalls), so the blend's recency, the touches and
**       the records' times are the same on every run; and the analysis
**       runs on the calling thread alone (helper_threads 0: how the load's
**       batches split between threads decides which stem cache a query
**       meets), so the work is the same too: callgrind counts compare
**       exactly (docs/BENCHMARKS.md, the floors).
*/
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "cli/bench.h"
#include "cli/cli.h"
#include "server/bench_switch.h"
#include "server/deployment.h"
#include "util/clock.h"
#include "util/grow.h"
#include "util/progress.h"

#define MAX_LANGS 16

/* `bench quality --engine postgres`: the deployment (a throw-away schema). */
static char *quality_postgres, quality_schema[64];

/* Makes the store fresh: the SQLite file removed, or the deployment dropped. */
static void fresh_store(const char *path)
{
	char err[256];
	if (path)
		bench_remove_db(path);
	if (quality_postgres &&
	    a2m_deployment_drop(quality_postgres, quality_schema, err, sizeof err) != 0)
		fprintf(stderr, "a2m bench: %s\n", err);
}

/* ---- quality ------------------------------------------------------------ */

typedef struct fact {
	char *id, *lang, *text;
} fact;

typedef struct query {
	char *lang, *fact, *kind, *text;
	int   split; /* SPLIT_DEV, SPLIT_TEST or SPLIT_HARD */
} query;

typedef struct table {
	char **cols;  /* per row: ncols strings, owned by lines */
	size_t nrows, ncols;
	char  *buf;
} table;

/* Reads a TSV file of ncols columns, skipping blank lines and # comments. */
static int read_tsv(const char *path, size_t ncols, table *t)
{
	FILE *f = fopen(path, "rb");
	memset(t, 0, sizeof t[0]);
	if (!f) {
		fprintf(stderr, "a2m bench: %s: %s\n", path, strerror(errno));
		return -1;
	}
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	t->buf = malloc((size_t)size + 1);
	if (!t->buf || fread(t->buf, 1, (size_t)size, f) != (size_t)size) {
		fclose(f);
		return -1;
	}
	fclose(f);
	t->buf[size] = '\0';
	t->ncols = ncols;
	size_t cap = 0;
	for (char *line = strtok(t->buf, "\n"); line; line = strtok(NULL, "\n")) {
		if (!*line || *line == '#')
			continue;
		if (a2m_grow((void **)&t->cols, &cap, (t->nrows + 1) * ncols, sizeof *t->cols))
			return -1;
		char *p = line;
		for (size_t i = 0; i < ncols; i++) {
			t->cols[t->nrows * ncols + i] = p;
			char *tab = i + 1 < ncols ? strchr(p, '\t') : NULL;
			if (i + 1 < ncols && !tab) {
				fprintf(stderr, "a2m bench: %s: a line with fewer than %zu columns: %s\n",
					path, ncols, line);
				return -1;
			}
			if (tab) {
				*tab = '\0';
				p = tab + 1;
			}
		}
		size_t n = strlen(p);
		if (n && p[n - 1] == '\r')
			p[n - 1] = '\0';
		t->nrows++;
	}
	return 0;
}

typedef struct score {
	double p1, rr;
	int    n;
} score;

/* --federate MERGE: the stores are federations of four backends, the facts
** dealt among their tiers (docs/FEDERATION.md, when each merge wins). */
static const char *federate_merge;

/* Remembers facts (those of lang, or all when lang is NULL) into h. */
static int load_facts(a2m *h, const fact *facts, size_t nf, const char *lang)
{
	json_t *recs = json_array();
	static const char *const dealt[] = {"semantic", "semantic2", "semantic3", "semantic4"};
	for (size_t i = 0; i < nf; i++) {
		if (lang && strcmp(facts[i].lang, lang) != 0)
			continue;
		/* Semantic: no capacity and no decay, so nothing but relevance
		   moves while the queries run. */
		json_array_append_new(recs, json_pack("{ss ss s{ss ss}}", "content", facts[i].text,
			"tier", federate_merge ? dealt[i % 4] : "semantic", "metadata", "fact",
			facts[i].id, "lang", facts[i].lang));
	}
	json_t *r = bench_call(h, "memory/remember", json_pack("{so}", "records", recs), NULL);
	json_decref(r);
	return r ? 0 : -1;
}

/* The rank (1-based) of the first record about q->fact, 0 when absent. */
static int rank_of(a2m *h, const query *q, int verbose, const char *label)
{
	json_t *r = bench_call(h, "memory/recall", json_pack("{ss si}", "query", q->text, "limit", 10), NULL);
	json_t *recs = json_object_get(r, "records");
	int rank = 0;
	for (size_t i = 0; i < json_array_size(recs) && !rank; i++) {
		json_t *meta = json_object_get(json_array_get(recs, i), "metadata");
		const char *f = json_string_value(json_object_get(meta, "fact"));
		if (f && strcmp(f, q->fact) == 0)
			rank = (int)i + 1;
	}
	if (verbose && rank != 1) {
		json_t *top = json_array_get(recs, 0);
		printf("  miss [%s %s %s] %-50s -> rank %d; top: %s %s\n", label, q->lang, q->kind,
		       q->text, rank,
		       top ? json_string_value(json_object_get(json_object_get(top, "metadata"),
							      "fact")) : "-",
		       top ? json_string_value(json_object_get(top, "content")) : "(nothing)");
	}
	json_decref(r);
	return rank;
}

static void add(score *s, int rank)
{
	s->n++;
	if (rank == 1)
		s->p1 += 1;
	if (rank > 0)
		s->rr += 1.0 / rank;
}

enum { SPLIT_DEV, SPLIT_TEST, SPLIT_HARD, NSPLITS };

typedef struct results {
	/* [ranking][lang][split][mode]; lang MAX_LANGS-1 = all */
	score s[2][MAX_LANGS][NSPLITS][2];
} results;

static int lang_index(const char **langs, size_t *nl, const char *lang)
{
	for (size_t i = 0; i < *nl; i++)
		if (strcmp(langs[i], lang) == 0)
			return (int)i;
	if (*nl + 1 >= MAX_LANGS)
		return -1;
	langs[*nl] = lang;
	return (int)(*nl)++;
}

static void print_row(const char *label, const score *a, const score *b)
{
	if (!a->n)
		return;
	printf("  %-8s %4d   %6.1f%%  %5.3f   %6.1f%%  %5.3f\n", label, a->n, 100 * a->p1 / a->n,
	       a->rr / a->n, 100 * b->p1 / b->n, b->rr / b->n);
}

static int bench_quality(int argc, char **argv)
{
	const char *dir = "bench/quality", *db = NULL, *url = getenv("A2M_POSTGRES");
	int verbose = 0, postgres = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc) {
			const char *e = argv[++i];
			db = strcmp(e, "sqlite") == 0 ? "/tmp/a2m-bench-quality.db" : NULL;
			postgres = strcmp(e, "postgres") == 0;
		} else if (strcmp(argv[i], "--postgres") == 0 && i + 1 < argc) {
			url = argv[++i];
		} else if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0)
			verbose = 1;
		else if (strcmp(argv[i], "--federate") == 0 && i + 1 < argc)
			federate_merge = argv[++i];
		else {
			fprintf(stderr, "usage: a2m bench quality [--data DIR]"
				" [--engine memory|sqlite|postgres] [--postgres URL] [--verbose]"
				" [--federate rank-fusion|rerank]\n");
			return A2M_EXIT_USAGE;
		}
	}
	if (postgres) {
		/* A schema of its own, dropped before each store and at the end. */
		snprintf(quality_schema, sizeof quality_schema, "bench_quality_%d", (int)getpid());
		if (!url || !(quality_postgres = a2m_deployment_with_schema(url, quality_schema))) {
			fprintf(stderr, "a2m bench: --engine postgres needs --postgres URL or"
				" $A2M_POSTGRES\n");
			return A2M_EXIT_USAGE;
		}
	}
	char path[1024];
	table ft, qt;
	snprintf(path, sizeof path, "%s/facts.tsv", dir);
	if (read_tsv(path, 3, &ft) != 0)
		return A2M_EXIT_ERROR;
	snprintf(path, sizeof path, "%s/queries.tsv", dir);
	if (read_tsv(path, 4, &qt) != 0)
		return A2M_EXIT_ERROR;
	size_t nf = ft.nrows, nq = qt.nrows;
	fact *facts = calloc(nf + 1, sizeof *facts);
	query *queries = calloc(nq + 1, sizeof *queries);
	results *res = calloc(1, sizeof *res);
	const char *langs[MAX_LANGS];
	size_t nl = 0;
	if (!facts || !queries || !res)
		return A2M_EXIT_ERROR;
	for (size_t i = 0; i < nf; i++) {
		facts[i] = (fact){ft.cols[i * 3], ft.cols[i * 3 + 1], ft.cols[i * 3 + 2]};
		lang_index(langs, &nl, facts[i].lang);
	}
	for (size_t i = 0; i < nq; i++) {
		query *q = &queries[i];
		*q = (query){qt.cols[i * 4], qt.cols[i * 4 + 1], qt.cols[i * 4 + 2], qt.cols[i * 4 + 3], 0};
		/* dev: f01-f12, the only queries looked at while tuning. */
		q->split = q->fact[0] == 'h' ? SPLIT_HARD
			 : strcmp(q->fact, "f12") <= 0 ? SPLIT_DEV : SPLIT_TEST;
	}
	static const char *const rankings[2] = {"bm25", "lexical"};
	double elapsed[2] = {0};
	for (int r = 0; r < 2; r++) {
		double t0 = bench_now_ms();
		/* same: one store per language */
		for (size_t l = 0; l < nl; l++) {
			fresh_store(db);
			bench_open_opts o = {.path = db, .postgres = quality_postgres, .sync_normal = 1,
					     .ranking = rankings[r], .helper_threads = -1,
					     .federate = federate_merge};
			a2m *h = bench_open_with(&o);
			if (!h || load_facts(h, facts, nf, langs[l]) != 0)
				return A2M_EXIT_ERROR;
			for (size_t i = 0; i < nq; i++) {
				const query *q = &queries[i];
				if (strcmp(q->lang, langs[l]) != 0)
					continue;
				int rank = rank_of(h, q, verbose, rankings[r]);
				add(&res->s[r][l][q->split][0], rank);
				add(&res->s[r][MAX_LANGS - 1][q->split][0], rank);
			}
			a2m_close(h);
		}
		/* mixed: every language in one store */
		fresh_store(db);
		bench_open_opts o = {.path = db, .postgres = quality_postgres, .sync_normal = 1,
				     .ranking = rankings[r], .helper_threads = -1,
					     .federate = federate_merge};
		a2m *h = bench_open_with(&o);
		if (!h || load_facts(h, facts, nf, NULL) != 0)
			return A2M_EXIT_ERROR;
		for (size_t i = 0; i < nq; i++) {
			const query *q = &queries[i];
			int rank = rank_of(h, q, verbose > 1, rankings[r]);
			int l = lang_index(langs, &nl, q->lang);
			add(&res->s[r][l][q->split][1], rank);
			add(&res->s[r][MAX_LANGS - 1][q->split][1], rank);
		}
		a2m_close(h);
		elapsed[r] = bench_now_ms() - t0;
	}
	fresh_store(db);
	static const char *const splits[NSPLITS] = {"dev (f01-f12)", "test (f13-f24)",
						    "hard test (h01-h16)"};
	static const char *const modes[2] = {"same-language corpora", "one mixed corpus"};
	printf("a2m bench quality: %zu facts, %zu queries, %zu languages (%s engine%s%s)\n", nf,
	       nq, nl, quality_postgres ? "postgres" : db ? "sqlite" : "memory",
	       federate_merge ? "; a federation of four backends, merged by " : "",
	       federate_merge ? federate_merge : "");
	for (int m = 0; m < 2; m++) {
		for (int sp = 0; sp < NSPLITS; sp++) {
			printf("\n%s, %s split\n", modes[m], splits[sp]);
			printf("  %-8s %4s   %-15s   %-15s\n", "lang", "n", "bm25 (ours)", "lexical (old)");
			printf("  %-8s %4s   %7s  %5s   %7s  %5s\n", "", "", "P@1", "MRR", "P@1", "MRR");
			for (size_t l = 0; l < nl; l++)
				print_row(langs[l], &res->s[0][l][sp][m], &res->s[1][l][sp][m]);
			print_row("all", &res->s[0][MAX_LANGS - 1][sp][m],
				  &res->s[1][MAX_LANGS - 1][sp][m]);
		}
	}
	printf("\ntime: bm25 %.0f ms, lexical %.0f ms (loading and querying, both corpora)\n",
	       elapsed[0], elapsed[1]);
	free(facts);
	free(queries);
	free(res);
	free(ft.cols);
	free(ft.buf);
	free(qt.cols);
	free(qt.buf);
	return A2M_EXIT_OK;
}

/* ---- latency ------------------------------------------------------------- */

/* What `bench latency` times beside a2m's recall (each query in turn, alternating). */
typedef struct latency_runs {
	double *ours, *bmw, *fts;  /* per query (ours: the default, or the other way when bmw
	                              is document at a time, mode 2); NULL: not run */
	int     other;             /* ours' mode when bmw is run: 0 term at a time, 3 WAND */
	long    hits, fts_hits;
	a2m_server_walked walked[2];  /* what the walks did, ours' and bmw's */
	a2m_server_walked *each;      /* --worst: per query, ours' walk counters */
	char (*text)[64];             /* and its text */
} latency_runs;

/* Times query i: a2m's recall, then, when asked, the same walked another way, then FTS5. */
static int time_query(a2m *h, bench_fts5 *fts, const char *text, long i, latency_runs *r)
{
	/* Each way first on every other query: the first pays what a cache then spares the second. */
	for (int n = 0; n < (r->bmw ? 2 : 1); n++) {
		int pass = r->bmw && i % 2 ? 1 - n : n;
		a2m_server_walked before, after;
		if (r->bmw)
			a2m_server_bench_blockmax(pass ? 2 : r->other);
		a2m_server_bench_walked(&before);
		/* Timed: a2m_handle() alone, the server's work from request text to
		** reply text, not building the request or parsing the reply here
		** (which cost as much as the recall itself). */
		json_t *res = bench_call(h, "memory/recall", json_pack("{ss si}", "query", text,
								      "limit", 10),
					 pass ? &r->bmw[i] : &r->ours[i]);
		a2m_server_bench_blockmax(1);  /* the default */
		a2m_server_bench_walked(&after);
		a2m_server_walked *sum = &r->walked[pass];
		size_t walks = after.walks - before.walks;
		sum->walks += walks;
		sum->queries += walks > 0;  /* walked, once or more */
		sum->steps += after.steps - before.steps;
		sum->scored += after.scored - before.scored;
		sum->filled += after.filled - before.filled;
		sum->retries += after.retries - before.retries;
		if (!pass && r->each) {
			r->each[i] = (a2m_server_walked){.walks = walks,
							 .steps = after.steps - before.steps,
							 .scored = after.scored - before.scored,
							 .filled = after.filled - before.filled,
							 .retries = after.retries - before.retries,
							 .queries = walks > 0};
			size_t len = strnlen(text, sizeof r->text[i] - 1);
			memcpy(r->text[i], text, len);
			r->text[i][len] = '\0';
		}
		if (!res)
			return -1;
		if (!pass)
			r->hits += (long)json_array_size(json_object_get(res, "records"));
		json_decref(res);
	}
	return fts ? bench_fts5_query(fts, text, &r->fts[i], &r->fts_hits) : 0;
}

/*
** The walks' figures per query walked (deterministic: quoted beside the
** wall clock). A query counts once however often it walked: more walks
** than queries are recalls asked again, or run again under the exclusive
** lock to write their touches or a promotion (bench_switch.h); their
** steps count in their query's.
*/
static void print_walked(const a2m_server_walked *w)
{
	if (!w->queries)
		return;
	double q = (double)w->queries;
	printf("    walked document at a time: %zu queries in %zu walks; per query %.0f steps,"
	       " %.0f postings scored, %.0f blocks decoded; %zu recalls asked again\n",
	       w->queries, w->walks, (double)w->steps / q, (double)w->scored / q,
	       (double)w->filled / q, w->retries);
}

/* --worst: the n slowest queries of ours (not yet sorted), slowest first. */
static void print_worst(const latency_runs *r, size_t queries, size_t n)
{
	size_t *idx = malloc(queries * sizeof *idx);
	if (!idx)
		return;
	for (size_t i = 0; i < queries; i++)
		idx[i] = i;
	n = n < queries ? n : queries;
	for (size_t i = 0; i < n; i++) {  /* a partial selection sort: n is small */
		size_t m = i;
		for (size_t j = i + 1; j < queries; j++)
			if (r->ours[idx[j]] > r->ours[idx[m]])
				m = j;
		size_t t = idx[i];
		idx[i] = idx[m];
		idx[m] = t;
		const a2m_server_walked *e = &r->each[idx[i]];
		printf("  worst %2zu: %8.3f ms  walked %zu  steps %zu  scored %zu  filled %zu  \"%s\"\n",
		       i + 1, r->ours[idx[i]], e->walks, e->steps, e->scored, e->filled,
		       r->text[idx[i]]);
	}
	free(idx);
}

/* --query-file: the next query, the file's lines cycled; 0, or -1 when it has none. */
static int next_query_line(FILE *f, char *text, size_t cap)
{
	for (int pass = 0; pass < 2; pass++) {
		while (fgets(text, (int)cap, f)) {
			text[strcspn(text, "\r\n")] = '\0';
			if (text[0])
				return 0;
		}
		rewind(f);
	}
	return -1;
}

/* The records a store holds: describe's tier counts summed (-1 on an error). */
static long stored_records(a2m *h)
{
	json_t *res = bench_call(h, "memory/describe", json_object(), NULL);
	json_t *tiers = res ? json_object_get(res, "tiers") : NULL, *t;
	long n = tiers ? 0 : -1;
	size_t i;
	json_array_foreach(tiers, i, t)
		n += (long)json_integer_value(json_object_get(t, "count"));
	json_decref(res);
	return n;
}

/*
** A server for `bench latency` (path NULL: memory). one_thread (--now):
** the analysis on the calling thread alone (helper_threads 0), since which
** pooled worker, and so which stem cache, a query's analysis meets depends
** on how the load's batches were split between threads.
*/
static a2m *latency_open(const char *path, int sync_normal, int read_only, int one_thread,
			long cache_mb)
{
	bench_open_opts o = {.path = path, .sync_normal = sync_normal, .read_only = read_only,
			     .helper_threads = one_thread ? 0 : -1, .postings_cache_mb = cache_mb};
	return bench_open_with(&o);
}

/*
** `bench latency --db PATH`: when PATH exists and holds the run's records
** (and, with --fts5, the peer's file as many rows), opens both into *h and
** *fts and returns 1: the run reuses them instead of loading again. Else 0,
** nothing left open.
*/
static int latency_reusable(const char *db, const char *peer_db, long records,
			    int sync_normal, int one_thread, long cache_mb, a2m **h,
			    bench_fts5 **fts)
{
	if (access(db, F_OK) != 0 || (peer_db && access(peer_db, F_OK) != 0))
		return 0;
	if (!(*h = latency_open(db, sync_normal, 0, one_thread, cache_mb)))
		return 0;
	int ok = stored_records(*h) == records;
	if (ok && peer_db)
		ok = (*fts = bench_fts5_open(peer_db, 1)) && bench_fts5_rows(*fts) == records;
	if (!ok) {
		bench_fts5_close(*fts);
		a2m_close(*h);
		*h = NULL;
		*fts = NULL;
	}
	return ok;
}

/* --now's T: RFC 3339, or milliseconds since the epoch (> 0). Returns 0 or -1. */
static int parse_now(const char *text, int64_t *ms)
{
	if (a2m_clock_parse(text, ms) == 0)
		return *ms > 0 ? 0 : -1;
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno || end == text || *end || v <= 0)
		return -1;
	*ms = v;
	return 0;
}

/* --now: the clock at the run's k-th call (T + k ms); nothing without it. */
static void pin_clock(int64_t now, long k)
{
	if (now)
		a2m_clock_pin(now + k);
}

static int bench_latency(int argc, char **argv)
{
	long records = 10000, queries = 1000;
	int64_t now = 0;  /* --now: the clock pinned from there */
	long calls = 0;   /* made so far, for the pinned clock */
	const char *db = NULL;
	int sync_normal = 0, sqlite = 0, read_only = 0, frequent = 0, compare = 0, peer = 0;
	long worst = 0;
	long cache_mb = 0;  /* --postings-cache-mb: 0, the store's default */
	FILE *qfile = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
			records = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--queries") == 0 && i + 1 < argc)
			queries = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc)
			sqlite = strcmp(argv[++i], "sqlite") == 0;
		else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
			db = argv[++i], sqlite = 1;
		else if (strcmp(argv[i], "--synchronous-normal") == 0)
			sync_normal = 1;
		else if (strcmp(argv[i], "--read-only") == 0)
			read_only = 1;
		else if (strcmp(argv[i], "--frequent") == 0)
			frequent = 1;
		else if (strcmp(argv[i], "--compare-pruning") == 0)
			compare = 1;
		else if (strcmp(argv[i], "--compare-walks") == 0)
			compare = 2;
		else if (strcmp(argv[i], "--fts5") == 0)
			peer = 1;
		else if (strcmp(argv[i], "--worst") == 0 && i + 1 < argc)
			worst = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--postings-cache-mb") == 0 && i + 1 < argc) {
			cache_mb = strtol(argv[++i], NULL, 10);
			if (cache_mb < 1 || cache_mb > 65536) {
				fprintf(stderr, "a2m bench: --postings-cache-mb: 1 to 65536\n");
				return A2M_EXIT_USAGE;
			}
		} else if (strcmp(argv[i], "--now") == 0 && i + 1 < argc) {
			if (parse_now(argv[++i], &now) != 0) {
				fprintf(stderr, "a2m bench: --now %s: not an RFC 3339 time nor "
					"milliseconds since the epoch\n", argv[i]);
				return A2M_EXIT_USAGE;
			}
		} else if (strcmp(argv[i], "--query-file") == 0 && i + 1 < argc && !qfile) {
			if (!(qfile = fopen(argv[++i], "r"))) {
				fprintf(stderr, "a2m bench: %s: %s\n", argv[i], strerror(errno));
				return A2M_EXIT_ERROR;
			}
		} else {
			fprintf(stderr, "usage: a2m bench latency [--records N] [--queries Q]"
				" [--engine memory|sqlite] [--db PATH] [--synchronous-normal]"
				" [--read-only] [--frequent] [--compare-pruning|--compare-walks]"
				" [--fts5] [--worst N] [--query-file F] [--now T]"
				" [--postings-cache-mb N]\n");
			return A2M_EXIT_USAGE;
		}
	}
	if (records < 0 || queries < 1 || worst < 0)
		return A2M_EXIT_USAGE;
	/* --db PATH: the file is kept, and reused by the next run of as many records. */
	int keep = db != NULL;
	if (sqlite && !db)
		db = "/tmp/a2m-bench-latency.db";
	/* The peer on a file beside a2m's (SQLite), or in memory beside the memory engine. */
	char peer_db[4096];
	if (db)
		snprintf(peer_db, sizeof peer_db, "%s-fts5", db);  /* two runs at once do not share it */
	a2m *h = NULL;
	bench_fts5 *fts = NULL;
	int reuse = keep && latency_reusable(db, peer ? peer_db : NULL, records, sync_normal,
					     now != 0, cache_mb, &h, &fts);
	if (!reuse) {
		if (db) {
			bench_remove_db(db);
			bench_remove_db(peer_db);
		}
		if (!(h = latency_open(db, sync_normal, 0, now != 0, cache_mb)))
			return A2M_EXIT_ERROR;
		fts = peer ? bench_fts5_open(db ? peer_db : NULL, keep) : NULL;
		if (peer && !fts)
			return A2M_EXIT_ERROR;
	}
	char text[512];
	double t0 = bench_now_ms();
	a2m_progress *p = a2m_progress_start("a2m bench loading", "records", records);
	/* Reused: the records' text drawn again, unstored, so the queries are the same
	** (not needed when they come from --query-file). */
	for (long done = 0; reuse && !qfile && done < records; done++)
		bench_sentence(text, sizeof text);
	for (long done = reuse ? records : 0; done < records;) {
		json_t *recs = json_array();
		for (int k = 0; k < 1000 && done < records; k++, done++) {
			bench_sentence(text, sizeof text);
			if (fts && bench_fts5_add(fts, text) != 0)
				return A2M_EXIT_ERROR;
			json_array_append_new(recs, json_pack("{ss ss}", "content", text, "tier",
							      "semantic"));
		}
		pin_clock(now, calls++);
		json_t *r = bench_call(h, "memory/remember", json_pack("{so}", "records", recs), NULL);
		if (!r) {
			a2m_progress_erase(p);
			return A2M_EXIT_ERROR;
		}
		json_decref(r);
		a2m_progress_update(p, done);
	}
	a2m_progress_erase(p);
	double load = reuse ? 0 : bench_now_ms() - t0;
	if (fts && bench_fts5_flush(fts) != 0)
		return A2M_EXIT_ERROR;
	if (read_only && db) {
		/* Recall without its touch: reopen the file read-only. */
		a2m_close(h);
		if (!(h = latency_open(db, sync_normal, 1, now != 0, cache_mb)))
			return A2M_EXIT_ERROR;
	}
	latency_runs r = {calloc((size_t)queries, sizeof(double)),
			  compare ? calloc((size_t)queries, sizeof(double)) : NULL,
			  fts ? calloc((size_t)queries, sizeof(double)) : NULL, compare == 2 ? 3 : 0,
			  0, 0, {{0}}, NULL, NULL};
	if (worst) {
		r.each = calloc((size_t)queries, sizeof *r.each);
		r.text = calloc((size_t)queries, sizeof *r.text);
	}
	int rc = !r.ours || (compare && !r.bmw) || (fts && !r.fts) ||
			 (worst && (!r.each || !r.text))
		 ? -1
		 : 0;
	p = a2m_progress_start("a2m bench recalling", "recalls", queries);
	for (long i = 0; i < queries && !rc; i++) {
		a2m_progress_update(p, i);
		if (qfile)
			rc = next_query_line(qfile, text, sizeof text);
		else if (frequent)
			bench_query_frequent(text, sizeof text);
		else
			bench_query_text(text, sizeof text);
		pin_clock(now, calls++);
		if (!rc)
			rc = time_query(h, fts, text, i, &r);
	}
	a2m_progress_erase(p);
	int64_t last = now ? a2m_clock_now_ms() : 0;  /* what the last recall read */
	if (!rc) {
		printf("a2m bench latency: %ld records (%s%s%s), %ld recalls of %s, limit 10\n",
		       records, db ? "sqlite" : "memory",
		       db ? (sync_normal ? ", synchronous=NORMAL" : ", synchronous=FULL") : "",
		       read_only && db ? ", read-only: no touch" : "", queries,
		       frequent ? "3 of the 20 most frequent words" : "2-3 words");
		bench_print_allocator();
		if (now) {
			char from[A2M_TIMESTAMP_LEN], to[A2M_TIMESTAMP_LEN];
			printf("  clock   pinned (--now): %s to %s, 1 ms a call; analysis on one"
			       " thread\n", a2m_clock_format(now, from), a2m_clock_format(last, to));
		}
		if (worst)
			print_worst(&r, (size_t)queries, (size_t)worst);
		if (reuse)
			printf("  load    none: %s reused (it held %ld records)\n", db, records);
		else
			printf("  load    %.0f ms (%.0f records/s, batches of 1000)\n", load,
			       (double)records / (load / 1000.0));
		bench_print_latency(!r.bmw	      ? "  recall"
				    : r.other ? "  recall, WAND (block-max)"
					      : "  recall, term at a time",
				    r.ours, (size_t)queries);
		printf("    %.1f hits/recall\n", (double)r.hits / (double)queries);
		print_walked(&r.walked[0]);
		if (r.bmw) {
			bench_print_latency("  recall, MaxScore (doc at a time)", r.bmw,
					    (size_t)queries);
			print_walked(&r.walked[1]);
		}
		if (r.fts) {
			bench_print_latency("  SQLite FTS5 bm25(), same queries", r.fts, (size_t)queries);
			printf("    %.1f hits/query (%s)\n", (double)r.fts_hits / (double)queries,
			       db ? "a file beside a2m's" : "in memory");
		}
	}
	free(r.each);
	free(r.text);
	if (qfile)
		fclose(qfile);
	free(r.ours);
	free(r.bmw);
	free(r.fts);
	bench_fts5_close(fts);
	a2m_close(h);
	a2m_clock_pin(0);
	if (db && !keep)
		bench_remove_db(db);
	return rc ? A2M_EXIT_ERROR : A2M_EXIT_OK;
}

int a2m_cmd_bench(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "quality") == 0)
		return bench_quality(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "latency") == 0)
		return bench_latency(argc - 1, argv + 1);
	int more = argc >= 2 ? a2m_bench_more(argc - 1, argv + 1) : -1;
	if (more >= 0)
		return more;
	int help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
	fprintf(help ? stdout : stderr,
		"usage: a2m bench quality [--data DIR] [--engine memory|sqlite|postgres] [--verbose]\n"
		"                         [--federate rank-fusion|rerank]\n"
		"       a2m bench latency [--records N] [--queries Q] [--engine memory|sqlite]\n"
		"                         [--db PATH] [--synchronous-normal] [--read-only]\n"
		"                         [--frequent] [--compare-pruning|--compare-walks] [--fts5]\n"
		"                         [--worst N] [--query-file F] [--now T]\n"
		"                         [--postings-cache-mb N]\n"
		"%s"
		"\n"
		"quality: precision@1 and MRR of recall on bench/quality/, ours (bm25) beside the\n"
		"         old plain-scan lexical scorer (docs/BENCHMARKS.md).\n"
		"latency: recall p50/p99 over N synthetic records, in process.\n%s",
		a2m_bench_more_usage, a2m_bench_more_help);
	return help ? A2M_EXIT_OK : A2M_EXIT_USAGE;
}
