/*
** bench_postgres.c — `a2m bench postgres`: the PostgreSQL engine's figures
** of DESIGN §7, each beside SQLite's on the same machine in the same run.
**
**   a2m bench postgres [--postgres URL] [--records N] [--big N] [--queries Q]
**                      [--seconds S] [--only PART]
**
** The deployment is $A2M_POSTGRES unless --postgres names one; every part
** runs in a schema of its own (bench_<pid>_<part>), dropped at the end.
** The parts (--only runs one of them):
**
**   batched   durable remember, N records (default 100 000) in calls of
**             500: records/s inside a2m_handle (PostgreSQL with
**             synchronous_commit on; SQLite with synchronous=FULL).
**   single    single-record remember from 16 client threads at once on one
**             server for S seconds (default 5): acknowledgements/s and the
**             latency of each call.
**   read      recall (two or three words) and timeline (limit 20) p50/p99
**             over Q queries (default 1000) at N records and at the --big
**             count (default 1 000 000; 0 skips it), the same corpus as
**             `a2m bench latency`.
**   mixed     4 servers (4 handles in this process, each with its own
**             connections) × 4 client threads each, for S seconds: 70%
**             recall, 20% timeline, 10% single remember, over N records
**             loaded first; operations/s and each kind's latency.
**
** Printed, never asserted (DESIGN §7). A "server" here is an a2m handle in
** this process: it has its own connections, caches and touch buffer, as a
** process would, and the deployment sees it as one; over stdio or HTTP
** each call would also pay its transport.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"
#include "server/deployment.h"
#include "util/grow.h"

/* One engine under test: PostgreSQL in schema (conninfo), or SQLite at path. */
typedef struct target {
	const char *name;        /* "postgres" / "sqlite" */
	char       *conninfo;    /* owned: the URL with the part's schema; NULL for SQLite */
	char        schema[64];
	char        path[128];
} target;

static const char *base_url;

static int target_init(target *t, int postgres, const char *part)
{
	memset(t, 0, sizeof *t);
	t->name = postgres ? "postgres" : "sqlite";
	if (!postgres) {
		snprintf(t->path, sizeof t->path, "/tmp/a2m-bench-pg-%s-%d.db", part, (int)getpid());
		bench_remove_db(t->path);
		return 0;
	}
	char err[256];
	snprintf(t->schema, sizeof t->schema, "bench_%d_%s", (int)getpid(), part);
	if (a2m_deployment_drop(base_url, t->schema, err, sizeof err) != 0) {
		fprintf(stderr, "a2m bench: %s\n", err);
		return -1;
	}
	if (!(t->conninfo = a2m_deployment_with_schema(base_url, t->schema)))
		return -1;
	return 0;
}

static void target_done(target *t)
{
	char err[256];
	if (t->conninfo) {
		if (a2m_deployment_drop(base_url, t->schema, err, sizeof err) != 0)
			fprintf(stderr, "a2m bench: %s\n", err);
		free(t->conninfo);
	} else {
		bench_remove_db(t->path);
	}
	t->conninfo = NULL;
}

/* A server on t: every figure is the durable default (FULL, synchronous_commit on). */
static a2m *target_open(const target *t)
{
	bench_open_opts o = {.path = t->conninfo ? NULL : t->path, .postgres = t->conninfo,
			     .helper_threads = -1};
	return bench_open_with(&o);
}

/* n records of the latency corpus in calls of batch; the ms inside a2m_handle, or -1. */
static double load(a2m *h, long n, long batch)
{
	char text[256];
	double in_server = 0;
	for (long done = 0; done < n;) {
		json_t *recs = json_array();
		for (long k = 0; k < batch && done < n; k++, done++) {
			bench_sentence(text, sizeof text);
			json_array_append_new(recs, json_pack("{s:s,s:s}", "content", text, "tier",
							      "semantic"));
		}
		double ms = 0;
		json_t *r = bench_call(h, "memory/remember", json_pack("{s:o}", "records", recs), &ms);
		if (!r)
			return -1;
		in_server += ms;
		json_decref(r);
	}
	return in_server;
}

/* ---- batched -------------------------------------------------------------------------- */

static int part_batched(int postgres, long records)
{
	target t;
	if (target_init(&t, postgres, "batched") != 0)
		return -1;
	a2m *h = target_open(&t);
	bench_seed(1);
	double ms = h ? load(h, records, 500) : -1;
	a2m_close(h);
	target_done(&t);
	if (ms < 0)
		return -1;
	printf("  %-8s batched remember: %ld records in calls of 500: %.0f ms, %.0f records/s\n",
	       t.name, records, ms, (double)records / (ms / 1000.0));
	return 0;
}

/* ---- client threads ---------------------------------------------------------------------- */

enum { OP_RECALL, OP_TIMELINE, OP_REMEMBER, OP_KINDS };

typedef struct client {
	a2m          *h;
	int           mix;           /* 0: single remembers only; 1: the mixed load */
	double        until_ms;
	uint64_t      rng;
	double       *lat[OP_KINDS]; /* each call's ms, per kind */
	size_t        n[OP_KINDS], cap[OP_KINDS];
	long          errors;
} client;

static uint64_t next_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void note(client *c, int kind, double ms)
{
	if (a2m_grow((void **)&c->lat[kind], &c->cap[kind], c->n[kind] + 1, sizeof *c->lat[kind]))
		return;
	c->lat[kind][c->n[kind]++] = ms;
}

/* One call of the given kind, timed inside a2m_handle (text made here: no shared rng). */
static void one_call(client *c, int kind)
{
	static const char *const words[] = {"meeting", "deploy", "garden", "invoice", "travel",
					     "kitchen", "report", "music", "river", "budget"};
	char text[160];
	json_t *params;
	const char *method;
	const char *w1 = words[next_rng(&c->rng) % 10], *w2 = words[next_rng(&c->rng) % 10];
	if (kind == OP_RECALL) {
		snprintf(text, sizeof text, "%s %s", w1, w2);
		method = "memory/recall";
		params = json_pack("{s:s,s:i}", "query", text, "limit", 10);
	} else if (kind == OP_TIMELINE) {
		method = "memory/timeline";
		params = json_pack("{s:i}", "limit", 20);
	} else {
		snprintf(text, sizeof text, "a note about the %s and the %s, number %llu", w1, w2,
			 (unsigned long long)(next_rng(&c->rng) % 1000000));
		method = "memory/remember";
		params = json_pack("{s:[{s:s,s:s}]}", "records", "content", text, "tier",
				   "semantic");
	}
	double ms = 0;
	json_t *r = bench_call(c->h, method, params, &ms);
	if (r)
		note(c, kind, ms);
	else
		c->errors++;
	json_decref(r);
}

static void *client_run(void *arg)
{
	client *c = arg;
	while (bench_now_ms() < c->until_ms) {
		int kind = OP_REMEMBER;
		if (c->mix) {
			uint64_t r = next_rng(&c->rng) % 10;
			kind = r < 7 ? OP_RECALL : r < 9 ? OP_TIMELINE : OP_REMEMBER;
		}
		one_call(c, kind);
	}
	return NULL;
}

/*
** Runs nservers × per clients for seconds (over servers h[]), then prints
** the operations per second and each kind's latency.
*/
static void run_clients(a2m **h, int nservers, int per, int mix, double seconds, const char *label)
{
	int n = nservers * per;
	client *c = calloc((size_t)n, sizeof *c);
	pthread_t *t = calloc((size_t)n, sizeof *t);
	if (!c || !t) {
		free(c);
		free(t);
		return;
	}
	double start = bench_now_ms();
	for (int i = 0; i < n; i++) {
		c[i] = (client){.h = h[i % nservers], .mix = mix, .until_ms = start + seconds * 1000,
				.rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1)};
		pthread_create(&t[i], NULL, client_run, &c[i]);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	double elapsed = (bench_now_ms() - start) / 1000.0;
	static const char *const kinds[] = {"recall", "timeline", "remember"};
	long total = 0, errors = 0;
	for (int k = 0; k < OP_KINDS; k++) {
		size_t all = 0;
		for (int i = 0; i < n; i++)
			all += c[i].n[k];
		if (!all)
			continue;
		double *v = malloc(all * sizeof *v);
		size_t at = 0;
		for (int i = 0; v && i < n; i++) {
			memcpy(v + at, c[i].lat[k], c[i].n[k] * sizeof *v);
			at += c[i].n[k];
		}
		total += (long)all;
		char what[96];
		snprintf(what, sizeof what, "%s: %s %.0f/s", label, kinds[k], (double)all / elapsed);
		if (v)
			bench_print_latency(what, v, all);
		free(v);
	}
	for (int i = 0; i < n; i++) {
		errors += c[i].errors;
		for (int k = 0; k < OP_KINDS; k++)
			free(c[i].lat[k]);
	}
	printf("  %s: %.0f operations/s in all over %.1f s (%d servers x %d clients)%s%ld errors\n",
	       label, (double)total / elapsed, elapsed, nservers, per, errors ? ", " : ", ",
	       errors);
	free(c);
	free(t);
}

/* ---- single, read, mixed ----------------------------------------------------------------------- */

static int part_single(int postgres, double seconds)
{
	target t;
	if (target_init(&t, postgres, "single") != 0)
		return -1;
	a2m *h = target_open(&t);
	if (h) {
		char label[64];
		snprintf(label, sizeof label, "%s single remember", t.name);
		run_clients(&h, 1, 16, 0, seconds, label);
	}
	a2m_close(h);
	target_done(&t);
	return h ? 0 : -1;
}

static int read_at(const target *t, long records, long queries)
{
	a2m *h = target_open(t);
	if (!h)
		return -1;
	bench_seed(7);
	double load_ms = load(h, records, 1000);
	if (load_ms < 0) {
		a2m_close(h);
		return -1;
	}
	printf("  %-8s %ld records loaded: %.0f records/s\n", t->name, records,
	       (double)records / (load_ms / 1000.0));
	double *lat = malloc((size_t)queries * sizeof *lat);
	char q[128], label[96];
	for (int kind = 0; lat && kind < 2; kind++) {
		/* A warm-up pass first: the figure is the steady state's. */
		for (int pass = 0; pass < 2; pass++) {
			bench_seed(11);
			for (long i = 0; i < queries; i++) {
				json_t *p;
				if (kind == 0) {
					bench_query_text(q, sizeof q);
					p = json_pack("{s:s,s:i}", "query", q, "limit", 10);
				} else {
					p = json_pack("{s:i}", "limit", 20);
				}
				json_decref(bench_call(h, kind ? "memory/timeline" : "memory/recall", p,
						       &lat[i]));
			}
		}
		snprintf(label, sizeof label, "%s %s at %ld", t->name, kind ? "timeline" : "recall",
			 records);
		bench_print_latency(label, lat, (size_t)queries);
	}
	free(lat);
	a2m_close(h);
	return 0;
}

static int part_read(int postgres, long records, long big, long queries)
{
	long counts[2] = {records, big};
	for (int i = 0; i < 2; i++) {
		target t;
		if (!counts[i])
			continue;
		if (target_init(&t, postgres, i ? "big" : "read") != 0)
			return -1;
		int rc = read_at(&t, counts[i], queries);
		target_done(&t);
		if (rc)
			return rc;
	}
	return 0;
}

static int part_mixed(int postgres, long records, double seconds)
{
	target t;
	a2m *h[4] = {NULL};
	if (target_init(&t, postgres, "mixed") != 0)
		return -1;
	int ok = 1;
	for (int i = 0; i < 4 && ok; i++)
		ok = (h[i] = target_open(&t)) != NULL;
	bench_seed(3);
	if (ok && load(h[0], records, 1000) < 0)
		ok = 0;
	if (ok) {
		char label[64];
		snprintf(label, sizeof label, "%s mixed", t.name);
		run_clients(h, 4, 4, 1, seconds, label);
	}
	for (int i = 0; i < 4; i++)
		a2m_close(h[i]);
	target_done(&t);
	return ok ? 0 : -1;
}

int a2m_bench_postgres(int argc, char **argv)
{
	long records = 100000, big = 1000000, queries = 1000;
	double seconds = 5;
	const char *only = NULL;
	base_url = getenv("A2M_POSTGRES");
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--postgres") == 0 && i + 1 < argc)
			base_url = argv[++i];
		else if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
			records = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--big") == 0 && i + 1 < argc)
			big = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--queries") == 0 && i + 1 < argc)
			queries = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = strtod(argv[++i], NULL);
		else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			only = argv[++i];
		else
			return a2m_cli_usage("bench", "postgres [--postgres URL] [--records N] [--big N]"
					     " [--queries Q] [--seconds S] [--only batched|single|read|mixed]");
	}
	if (!base_url || !*base_url)
		return a2m_cli_usage("bench", "postgres needs --postgres URL or $A2M_POSTGRES");
	if (records < 1 || big < 0 || queries < 1 || seconds <= 0)
		return A2M_EXIT_USAGE;
	char *where = a2m_deployment_shown(base_url);
	printf("a2m bench postgres: %s beside SQLite (synchronous=FULL), each part in a fresh"
	       " schema / file\n", where ? where : "?");
	free(where);
	bench_print_allocator();
	printf("  pace before: %.1f ms (bench_pace_ms; lower is a faster phase)\n", bench_pace_ms());
	int rc = 0;
	for (int pg = 1; pg >= 0 && !rc; pg--) {
		if (!only || strcmp(only, "batched") == 0)
			rc = part_batched(pg, records);
		if (!rc && (!only || strcmp(only, "single") == 0))
			rc = part_single(pg, seconds);
		if (!rc && (!only || strcmp(only, "read") == 0))
			rc = part_read(pg, records, big, queries);
		if (!rc && (!only || strcmp(only, "mixed") == 0))
			rc = part_mixed(pg, records, seconds);
	}
	printf("  pace after: %.1f ms\n", bench_pace_ms());
	return rc ? A2M_EXIT_ERROR : A2M_EXIT_OK;
}
