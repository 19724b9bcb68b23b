/*
** bench_store.c — the store-side figures of DESIGN §7 that bench.c does not
** measure (vectors are bench_vectors.c's), and the store helpers
** bench_http.c and bench_vectors.c share (bench.h; the helpers of every
** benchmark are bench_common.c's).
**
**   a2m bench timeline [--records N] [--sessions S] [--queries Q]
**                      [--engine memory|sqlite] [--db PATH]
**       Timeline (limit 20) over N records spread at random over S
**       sessions (interleaved conversations), unfiltered and with
**       where: {"session": ...}; describe (which counts every tier) at that
**       size; and the resident memory the process holds once they are
**       loaded (VmHWM, VmRSS). Default 1 000 000 x 1 000.
**
**   a2m bench remember [--engine memory|sqlite] [--single N] [--records N]
**                      [--batch B] [--prefill N] [--tier NAME|default]
**                      [--synchronous-normal] [--helper-threads T]
**       Remember throughput: N single-record calls into a fresh store, then
**       N records in calls of B into another; records per second. --prefill
**       first loads N records (semantic tier) into each, since a write's
**       cost may grow with the store. --tier default sends no tier, so the
**       stack places each record (and spills). --helper-threads sets
**       a2m_config.helper_threads (default: the server's own default).
**       With --serve stdio|http, lone calls through a server process
**       instead (bench_lone.c).
**
** `a2m bench startup` and `a2m bench corpus`, measured from outside the
** process, are in bench_http.c.
**
** vectors (bench_vectors.c) and timeline with --db PATH keep the store, and use an existing
** one as it is (nothing loaded), so a 1M-record SQLite file is built once.
** remember always starts from a fresh store: --db names the file it
** replaces. Without --db the SQLite engine uses a file in /tmp, removed
** before and after.
*/
#include <math.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "cli/bench.h"
#include "server/bench_switch.h"
#include "federate/federate.h"
#include "util/buf.h"
#include "util/progress.h"
#include "cli/cli.h"

/* ---- local helpers ------------------------------------------------------- */

/* A field of /proc/self/status in kB (VmHWM, VmRSS), or -1. */
static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	size_t n = strlen(field);
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			kb = strtol(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

void bench_print_memory(const char *when)
{
	printf("  resident %-22s VmHWM %.0f MiB, VmRSS %.0f MiB\n", when,
	       (double)status_kb("VmHWM") / 1024.0, (double)status_kb("VmRSS") / 1024.0);
}

/* Records in the store: the sum of describe's tier counts, or -1. */
long long bench_store_count(a2m *h)
{
	json_t *r = bench_call(h, "memory/describe", NULL, NULL);
	json_t *tiers = json_object_get(r, "tiers");
	long long n = r ? 0 : -1;
	for (size_t i = 0; i < json_array_size(tiers); i++)
		n += json_integer_value(json_object_get(json_array_get(tiers, i), "count"));
	json_decref(r);
	return n;
}

static int file_exists(const char *path)
{
	struct stat st;
	return path && stat(path, &st) == 0;
}

/*
** Remembers n records made by make, batch per call. Returns the elapsed ms
** (the whole loop: making the records and their JSON included), or -1
** after printing the error. *server_ms (may be NULL) gets the part spent
** inside a2m_handle: the server's own work, from the request's text to
** the reply's, as a client in another process would see it. calls (may
** be NULL) gets each call's times: in a2m_handle, on a CPU and waiting for
** one, by phase (the calling thread's: the store's helper threads run
** beside it).
*/
static double load_timed(a2m *h, long n, long batch, bench_make_record make, void *ctx,
			 double *server_ms, bench_calls *calls)
{
	double t0 = bench_now_ms(), in_server = 0;
	a2m_progress *p = a2m_progress_start("a2m bench loading", "records", n);
	for (long done = 0, call = 0; done < n; call++) {
		json_t *recs = json_array();
		for (long k = 0; k < batch && done < n; k++, done++)
			json_array_append_new(recs, make(done, ctx));
		double ms = 0;
		if (calls)
			bench_calls_before(calls);
		json_t *r = bench_call(h, "memory/remember", json_pack("{so}", "records", recs), &ms);
		if (calls)
			bench_calls_after(calls, (size_t)call, ms);
		if (!r) {
			a2m_progress_erase(p);
			return -1;
		}
		in_server += ms;
		json_decref(r);
		a2m_progress_update(p, done);
	}
	a2m_progress_erase(p);
	if (server_ms)
		*server_ms = in_server;
	return bench_now_ms() - t0;
}

/* load_timed without the server's part. */
double bench_load(a2m *h, long n, long batch, bench_make_record make, void *ctx)
{
	return load_timed(h, n, batch, make, ctx, NULL, NULL);
}

/*
** Opens the store of a benchmark. db given and present: used as it is
** (*loaded = 0). Otherwise a fresh one (*loaded = 1): db, or the default
** file for sqlite, removed first.
*/
a2m *bench_open_kept(int sqlite, const char *db, const char *tmp_db, long vector_pool,
			   int *loaded)
{
	bench_open_opts o = {.helper_threads = -1, .vector_pool = vector_pool};
	*loaded = 1;
	if (db && file_exists(db)) {
		*loaded = 0;
		o.path = db;
		return bench_open_with(&o);
	}
	o.path = db ? db : sqlite ? tmp_db : NULL;
	if (o.path)
		bench_remove_db(o.path);
	return bench_open_with(&o);
}

static a2m *open_fresh_or_kept(int sqlite, const char *db, const char *tmp_db, int *loaded)
{
	return bench_open_kept(sqlite, db, tmp_db, 0, loaded);
}

/* Parses --engine / --db pairs common to the commands; returns 1 if taken. */
int bench_engine_flag(int argc, char **argv, int *i, int *sqlite, const char **db)
{
	if (strcmp(argv[*i], "--engine") == 0 && *i + 1 < argc) {
		*sqlite = strcmp(argv[++*i], "sqlite") == 0;
		return 1;
	}
	if (strcmp(argv[*i], "--db") == 0 && *i + 1 < argc) {
		*db = argv[++*i];
		*sqlite = 1;
		return 1;
	}
	return 0;
}

/* ---- timeline and resident memory ---------------------------------------- */

static json_t *session_record(long i, void *ctx)
{
	char text[512], session[32];
	(void)i;
	snprintf(session, sizeof session, "s%05ld", (long)(bench_rng() % *(uint64_t *)ctx));
	bench_sentence(text, sizeof text);
	return json_pack("{ss ss ss}", "content", text, "tier", "semantic", "session", session);
}

static int bench_timeline(int argc, char **argv)
{
	long records = 1000000, queries = 1000;
	uint64_t sessions = 1000;
	const char *db = NULL;
	int sqlite = 0;
	for (int i = 1; i < argc; i++) {
		if (bench_engine_flag(argc, argv, &i, &sqlite, &db))
			continue;
		if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
			records = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--sessions") == 0 && i + 1 < argc)
			sessions = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--queries") == 0 && i + 1 < argc)
			queries = strtol(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: a2m bench timeline [--records N] [--sessions S]"
				" [--queries Q] [--engine memory|sqlite] [--db PATH]\n");
			return A2M_EXIT_USAGE;
		}
	}
	if (records < 1 || queries < 1 || sessions < 1)
		return A2M_EXIT_USAGE;
	const char *tmp = "/tmp/a2m-bench-timeline.db";
	int loaded;
	bench_seed(0);
	a2m *h = open_fresh_or_kept(sqlite, db, tmp, &loaded);
	if (!h)
		return A2M_EXIT_ERROR;
	double load_ms = 0;
	if (loaded && (load_ms = bench_load(h, records, 1000, session_record, &sessions)) < 0)
		return A2M_EXIT_ERROR;
	long long count = bench_store_count(h);
	printf("a2m bench timeline: %lld records (%s) over %llu sessions at random,"
	       " %ld timelines of each kind\n", count, sqlite ? "sqlite, synchronous=FULL" : "memory",
	       (unsigned long long)sessions, queries);
	bench_print_allocator();
	if (loaded)
		printf("  load    %.0f ms (%.0f records/s, batches of 1000)\n", load_ms,
		       (double)records / (load_ms / 1000.0));
	else
		printf("  load    (reused %s)\n", db);
	bench_print_memory("after load:");
	double *lat = calloc((size_t)queries, sizeof *lat);
	size_t got = 0;
	if (!lat)
		return A2M_EXIT_ERROR;
	/* describe counts every tier: its cost at this size, for the HTTP figure. */
	long ndescribe = queries < 100 ? queries : 100;
	for (long q = 0; q < ndescribe; q++) {
		json_t *r = bench_call(h, "memory/describe", NULL, &lat[q]);
		if (!r)
			return A2M_EXIT_ERROR;
		json_decref(r);
	}
	bench_print_latency("describe", lat, (size_t)ndescribe);
	for (int kind = 0; kind < 2; kind++) {
		got = 0;
		for (long q = 0; q < queries; q++) {
			char session[32];
			json_t *p = json_pack("{si}", "limit", 20);
			if (kind) {
				snprintf(session, sizeof session, "s%05ld",
					 (long)(bench_rng() % sessions));
				json_object_set_new(p, "where", json_pack("{ss}", "session", session));
			}
			json_t *r = bench_call(h, "memory/timeline", p, &lat[q]);
			if (!r)
				return A2M_EXIT_ERROR;
			got += json_array_size(json_object_get(r, "records"));
			json_decref(r);
		}
		bench_print_latency(kind ? "timeline where session" : "timeline", lat,
				    (size_t)queries);
		printf("  %.1f records/timeline\n", (double)got / (double)queries);
	}
	bench_print_memory("at the end:");
	free(lat);
	a2m_close(h);
	if (sqlite && !db)
		bench_remove_db(tmp);
	return A2M_EXIT_OK;
}

/* ---- remember ------------------------------------------------------------ */

json_t *bench_text_record(long i, void *ctx)
{
	char text[512];
	(void)i;
	bench_sentence(text, sizeof text);
	json_t *rec = json_pack("{ss}", "content", text);
	if (ctx)
		json_object_set_new(rec, "tier", json_string(ctx));
	return rec;
}

static int bench_remember(int argc, char **argv)
{
	long single = 2000, records = 100000, batch = 500, prefill = 0, threads = -1;
	const char *db = NULL, *tier = "semantic";
	int sqlite = 0, sync_normal = 0;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--serve") == 0)
			return a2m_bench_remember_serve(argc, argv);  /* bench_lone.c */
	for (int i = 1; i < argc; i++) {
		if (bench_engine_flag(argc, argv, &i, &sqlite, &db))
			continue;
		if (strcmp(argv[i], "--single") == 0 && i + 1 < argc)
			single = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
			records = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
			batch = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--tier") == 0 && i + 1 < argc)
			tier = argv[++i];
		else if (strcmp(argv[i], "--prefill") == 0 && i + 1 < argc)
			prefill = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--synchronous-normal") == 0)
			sync_normal = 1;
		else if (strcmp(argv[i], "--helper-threads") == 0 && i + 1 < argc)
			threads = strtol(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: a2m bench remember [--engine memory|sqlite] [--db PATH]"
				" [--single N] [--records N] [--batch B] [--prefill N]"
				" [--tier NAME|default] [--synchronous-normal] [--helper-threads T]\n");
			return A2M_EXIT_USAGE;
		}
	}
	if (single < 0 || records < 0 || batch < 1 || batch > 1000 || prefill < 0 ||
	    threads < -1 || threads > A2M_HELPER_THREADS_MAX)
		return A2M_EXIT_USAGE;
	/* "default": no tier in the request, so the stack places the record. */
	void *tier_ctx = strcmp(tier, "default") == 0 ? NULL : (void *)tier;
	const char *path = sqlite ? (db ? db : "/tmp/a2m-bench-remember.db") : NULL;
	char threads_say[32] = "the default";
	if (threads >= 0)
		snprintf(threads_say, sizeof threads_say, "%ld", threads);
	printf("a2m bench remember: %s, tier %s, a fresh store for each part holding %ld"
	       " records first, helper threads: %s\n",
	       sqlite ? (sync_normal ? "sqlite, synchronous=NORMAL" : "sqlite, synchronous=FULL")
		      : "memory", tier_ctx ? tier : "(none given: the default tier)", prefill,
	       threads_say);
	bench_print_allocator();
	printf("  pace before: %.1f ms (bench_pace_ms; lower is a faster phase)\n", bench_pace_ms());
	if (path)
		printf("  the disk: %.0f fsyncs/s (4 KiB pwrite + fdatasync beside the store, 200"
		       " times): a durable lone writer's ceiling\n", bench_fsync_rate(path, 200));
	bench_seed(0);
	for (int part = 0; part < 2; part++) {
		long n = part ? records : single, per = part ? batch : 1;
		if (!n)
			continue;
		if (path)
			bench_remove_db(path);
		bench_open_opts o = {.path = path, .sync_normal = sync_normal,
				     .helper_threads = (int)threads};
		a2m *h = bench_open_with(&o);
		if (!h)
			return A2M_EXIT_ERROR;
		/* Semantic prefill: it stays put, whatever tier the figure writes to. */
		if (prefill && bench_load(h, prefill, 1000, bench_text_record, "semantic") < 0)
			return A2M_EXIT_ERROR;
		/* Each call's time too: a merge or a checkpoint shows as a slow one. */
		size_t calls = (size_t)((n + per - 1) / per);
		bench_calls c;
		double server = 0, ms = bench_calls_init(&c, calls) == 0
				       ? load_timed(h, n, per, bench_text_record, tier_ctx, &server, &c)
				       : -1;
		long long count = bench_store_count(h);
		a2m_close(h);
		if (ms < 0) {
			bench_calls_free(&c);
			return A2M_EXIT_ERROR;
		}
		/*
		** The figure is the server's: the time inside a2m_handle. The
		** benchmark making its sentences and JSON (a client's work, in
		** another process over stdio or HTTP) is shown beside it.
		*/
		printf("  %-8s %7ld records in calls of %4ld: %8.0f ms  %9.0f records/s"
		       "  (%.3f ms/call; with the client's own work %.0f ms, %.0f records/s;"
		       " %lld in the store after)\n", part ? "batched" : "single", n, per, server,
		       (double)n / (server / 1000.0), server / (double)((n + per - 1) / per), ms,
		       (double)n / (ms / 1000.0), count);
		bench_print_windows(&c, per);
		bench_print_stalls(&c, per);
		bench_print_latency(part ? "  each batched call" : "  each single call", c.ms,
				    calls);
		bench_calls_free(&c);
	}
	printf("  pace after: %.1f ms\n", bench_pace_ms());
	if (path && !db)
		bench_remove_db(path);
	return A2M_EXIT_OK;
}

/* ---- dispatch ------------------------------------------------------------ */

const char a2m_bench_more_usage[] =
	"       a2m bench vectors [--records N] [--dims D] [--queries Q]\n"
	"                         [--engine memory|sqlite] [--db PATH] [--read-only]\n"
	"                         [--pool P] [--clusters C] [--embed-url URL]\n"
	"       a2m bench timeline [--records N] [--sessions S] [--queries Q]\n"
	"                          [--engine memory|sqlite] [--db PATH]\n"
	"       a2m bench remember [--engine memory|sqlite] [--db PATH] [--single N]\n"
	"                          [--records N] [--batch B] [--prefill N]\n"
	"                          [--tier NAME|default] [--synchronous-normal]\n"
	"                          [--helper-threads T]\n"
	"       a2m bench remember --serve stdio|http [--engine memory|sqlite] [--db PATH]\n"
	"                          [--records N] [--warmup N] [--tier NAME|default]\n"
	"                          [--synchronous-normal]\n"
	"       a2m bench postgres [--postgres URL] [--records N] [--big N] [--queries Q]\n"
	"                          [--seconds S] [--only batched|single|read|mixed]\n"
	"       a2m bench startup [--records N] [--db PATH] [--runs R]\n"
	"       a2m bench corpus --out DIR [--records N] [--queries Q]\n"
	"       a2m bench corpus-index [--files N] [--dir DIR] [--queries Q]\n"
	"                              [--chunk-size BYTES]\n"
	"       a2m bench fsync [--db PATH] [--pages A-B] [--syncs N] [--no-stdio]\n"
	"       a2m bench crash [--seconds N] [--iterations N] [--seed S] [--max-delay MS]\n"
	"                       [--http-every K] [--max-records N] [--dir DIR] [--keep]\n"
	"       a2m bench soak [--seconds N] [--warmup S] [--interval S] [--records N]\n"
	"                      [--memory-margin PCT] [--dir DIR]\n"
	"       a2m bench federate [--records N] [--queries Q] [--moves M] [--four-kinds]\n"
	"                          [--merge rank-fusion|rerank]\n"
	"       a2m bench memory [--embed-url URL] [--weights W,W,...] [--seed N] [--users U]\n";

const char a2m_bench_more_help[] =
	"vectors:  vector recall p50/p99, exact and quantized (pool P per result,\n"
	"          default 20) with its recall@10 against exact (default 100 000 x\n"
	"          384 dims); with --embed-url, text recall the server embeds.\n"
	"timeline: timeline (limit 20) p50/p99, plain and by session, and resident\n"
	"          memory after loading (default 1 000 000 records).\n"
	"remember: records/s, single-record calls and batched; with --serve, lone\n"
	"          calls to an a2m serve process over stdio or HTTP, acks/s, p50/p99.\n"
	"postgres: PostgreSQL beside SQLite: batched durable remember, single remember\n"
	"          from 16 clients, recall/timeline p50/p99 at 100k and 1M records, and\n"
	"          4 servers x 4 clients of mixed load ($A2M_POSTGRES or --postgres).\n"
	"startup:  exec of a2m serve to its first describe answer, median of R.\n"
	"corpus:   the request bodies bench/http.sh posts with wrk.\n"
	"corpus-index: a2m corpus on N generated files (default 10 000): the first\n"
	"          index in MB/s and files/s, a restart with nothing changed and with\n"
	"          10 files changed, recall p50/p99 on the read-only handle.\n"
	"fsync:    a durable lone commit of N frames as the store writes it, then\n"
	"          fdatasync, for N = 1..12: commits/s bare and through stdio (the\n"
	"          ceiling beside bench remember --serve stdio --engine sqlite).\n"
	"crash:    kill -9 a2m serve at seeded random points, again and again; after\n"
	"          each restart every acknowledged write must be there, and a2m check\n"
	"          clean (docs/CHECK.md). Prints where kills landed, and N passed.\n"
	"soak:     a mixed load on two servers of one file, their memory, descriptors\n"
	"          and threads sampled; none may grow after warm-up (docs/CHECK.md).\n"
	"federate: recall and remember p50/p99 through a 4-backend router beside one\n"
	"          server holding the same records, and one cross-server move\n"
	"          (docs/FEDERATION.md).\n"
	"memory:   long-conversation recall@1/@5 per question type and abstention;\n"
	"          bench/memory/run.sh adds a real embedder and the fusion weights.\n";

int a2m_bench_more(int argc, char **argv)
{
	if (argc < 1)
		return -1;
	if (strcmp(argv[0], "vectors") == 0)
		return a2m_bench_vectors(argc, argv);
	if (strcmp(argv[0], "timeline") == 0)
		return bench_timeline(argc, argv);
	if (strcmp(argv[0], "remember") == 0)
		return bench_remember(argc, argv);
	if (strcmp(argv[0], "startup") == 0)
		return a2m_bench_startup(argc, argv);
	if (strcmp(argv[0], "postgres") == 0)
		return a2m_bench_postgres(argc, argv);
	if (strcmp(argv[0], "corpus") == 0)
		return a2m_bench_corpus(argc, argv);
	if (strcmp(argv[0], "corpus-index") == 0)
		return a2m_bench_corpus_index(argc, argv);
	if (strcmp(argv[0], "crash") == 0)
		return a2m_bench_crash(argc, argv);
	if (strcmp(argv[0], "fsync") == 0)
		return a2m_bench_fsync(argc, argv);
	if (strcmp(argv[0], "fsync-peer") == 0)
		return a2m_bench_fsync_peer(argc, argv);
	if (strcmp(argv[0], "soak") == 0)
		return a2m_bench_soak(argc, argv);
	if (strcmp(argv[0], "federate") == 0)
		return a2m_bench_federate(argc, argv);
	if (strcmp(argv[0], "memory") == 0)
		return a2m_bench_memory(argc, argv);
	return -1;
}
