/*
** bench_federate.c — `a2m bench federate`: what the router costs
** (docs/BENCHMARKS.md, docs/FEDERATION.md). The same synthetic records
** (bench_sentence) in four unbounded tiers, served once by one in-process
** server and once by a router whose four tiers are four backends; recall
** and a one-record remember through each, p50 and p99 of a2m_handle; and
** the cost of one cross-server move (memory/promote between two backends)
** beside the same promote inside one server. With --four-kinds the
** backends are the four kinds (in-process memory, a stdio child, an HTTP
** server, an in-process SQLite file) instead of four in-process memory
** engines, which adds the transports' own cost. Figures are printed,
** never asserted.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/bench_proc.h"
#include "cli/cli.h"
#include "federate/federate.h"

#define TIERS 4

/* The four unbounded tiers, as an a2m configuration file. */
static int write_tiers(const char *path, int only)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\"tiers\": [");
	for (int t = 0, n = 0; t < TIERS; t++)
		if (only < 0 || only == t)
			fprintf(f, "%s{\"name\": \"t%d\", \"kind\": \"semantic\"}", n++ ? ", " : "", t);
	fprintf(f, "]}\n");
	return fclose(f);
}

/* The router's configuration: tier t on backend b<t>. */
static int write_federation(const char *path, const char *dir, int four_kinds,
			    const char *http_url, const char *merge)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\"name\": \"bench\", \"merge\": \"%s\", \"journal\": \"%s/journal\", "
		"\"backends\": {", merge, dir);
	for (int t = 0; t < TIERS; t++) {
		fprintf(f, "%s\"b%d\": ", t ? ", " : "", t);
		if (!four_kinds || t == 0)
			fprintf(f, "{\"kind\": \"memory\"}");
		else if (t == 1)
			fprintf(f, "{\"kind\": \"stdio\", \"command\": [\"%s\", \"serve\", \"--memory\", "
				"\"--config\", \"%s/t1.json\"]}", bench_self(), dir);
		else if (t == 2)
			fprintf(f, "{\"kind\": \"http\", \"url\": \"%s\"}", http_url);
		else
			fprintf(f, "{\"kind\": \"sqlite\", \"path\": \"%s/t3.db\"}", dir);
	}
	fprintf(f, "}, \"tiers\": [");
	for (int t = 0; t < TIERS; t++)
		fprintf(f, "%s{\"name\": \"t%d\", \"kind\": \"semantic\", \"backend\": \"b%d\"}",
			t ? ", " : "", t, t);
	fprintf(f, "]}\n");
	return fclose(f);
}

/* Loads n records, batch by batch, each batch into the next tier. */
static int load(a2m *h, long n)
{
	char text[256];
	bench_seed(1);
	for (long done = 0, b = 0; done < n; b++) {
		json_t *recs = json_array();
		for (int i = 0; i < 1000 && done < n; i++, done++) {
			bench_sentence(text, sizeof text);
			char tier[8];
			snprintf(tier, sizeof tier, "t%ld", b % TIERS);
			json_array_append_new(recs, json_pack("{ss ss}", "content", text, "tier", tier));
		}
		json_t *r = bench_call(h, "memory/remember", json_pack("{so}", "records", recs), NULL);
		if (!r)
			return -1;
		json_decref(r);
	}
	return 0;
}

/* Times q recalls and q one-record remembers; prints both. */
static void measure(a2m *h, const char *label, long q)
{
	double *ms = calloc((size_t)q, sizeof *ms);
	char text[256], name[64];
	if (!ms)
		return;
	bench_seed(2);
	for (long i = 0; i < q; i++) {
		bench_query_text(text, sizeof text);
		json_decref(bench_call(h, "memory/recall", json_pack("{ss si}", "query", text,
				       "limit", 10), &ms[i]));
	}
	snprintf(name, sizeof name, "%s recall", label);
	bench_print_latency(name, ms, (size_t)q);
	for (long i = 0; i < q; i++) {
		bench_sentence(text, sizeof text);
		char tier[8];
		snprintf(tier, sizeof tier, "t%ld", i % TIERS);
		json_decref(bench_call(h, "memory/remember", json_pack("{s[{ss ss}]}", "records",
				       "content", text, "tier", tier), &ms[i]));
	}
	snprintf(name, sizeof name, "%s remember", label);
	bench_print_latency(name, ms, (size_t)q);
	free(ms);
}

/* Times m promotes of one record each from t0 to t1. */
static void moves(a2m *h, const char *label, long m)
{
	double *ms = calloc((size_t)m, sizeof *ms);
	char text[256], name[64];
	if (!ms)
		return;
	for (long i = 0; i < m; i++) {
		bench_sentence(text, sizeof text);
		json_t *r = bench_call(h, "memory/remember", json_pack("{s[{ss ss s[fff]}]}", "records",
				       "content", text, "tier", "t0", "embedding", 0.1, 0.2, 0.3),
				       NULL);
		json_t *ids = r ? json_incref(json_object_get(r, "ids")) : NULL;
		json_decref(r);
		json_decref(bench_call(h, "memory/promote", json_pack("{so ss}", "ids", ids, "tier",
				       "t1"), &ms[i]));
	}
	snprintf(name, sizeof name, "%s move t0->t1", label);
	bench_print_latency(name, ms, (size_t)m);
	free(ms);
}

int a2m_bench_federate(int argc, char **argv)
{
	long records = 10000, queries = 1000, m = 200;
	int four = 0;
	const char *merge = "rank-fusion";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
			records = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--queries") == 0 && i + 1 < argc)
			queries = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--moves") == 0 && i + 1 < argc)
			m = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--four-kinds") == 0)
			four = 1;
		else if (strcmp(argv[i], "--merge") == 0 && i + 1 < argc)
			merge = argv[++i];
		else {
			fprintf(stderr, "usage: a2m bench federate [--records N] [--queries Q] "
				"[--moves M] [--four-kinds] [--merge rank-fusion|rerank]\n");
			return A2M_EXIT_USAGE;
		}
	}
	if (records < 1 || queries < 1 || m < 1)
		return a2m_cli_usage("bench federate", "counts must be at least 1");
	char dir[] = "/tmp/a2m-bench-federate-XXXXXX", path[512], url[256] = "";
	if (!mkdtemp(dir))
		return A2M_EXIT_ERROR;
	pid_t http = -1;
	int rc = A2M_EXIT_ERROR;
	snprintf(path, sizeof path, "%s/tiers.json", dir);
	if (write_tiers(path, -1) != 0)
		goto out;
	for (int t = 1; t <= 2; t++) {
		char one[512];
		snprintf(one, sizeof one, "%s/t%d.json", dir, t);
		if (write_tiers(one, t) != 0)
			goto out;
	}
	if (four) {
		char cfg2[512], log[512];
		snprintf(cfg2, sizeof cfg2, "%s/t2.json", dir);
		snprintf(log, sizeof log, "%s/http.log", dir);
		char *args[] = {"--memory", "--config", cfg2, NULL};
		if (bench_spawn_http(args, log, &http, url, sizeof url) != 0)
			goto out;
	}
	printf("a2m bench federate: %ld records in %d tiers, %ld recalls and remembers, "
	       "%ld moves; backends: %s; merge: %s\n", records, TIERS, queries, m,
	       four ? "memory, stdio, http, sqlite" : "four in-process memory engines", merge);
	bench_print_allocator();

	/* One server. */
	a2m_config *cfg = NULL;
	a2m *one = NULL;
	char *why = NULL;
	if (a2m_config_new(&cfg) || a2m_config_set(cfg, "engine", "memory") ||
	    a2m_config_set(cfg, "config_file", path) || a2m_open(cfg, &one, &why) != A2M_OK) {
		fprintf(stderr, "a2m bench: %s\n", why ? why : "cannot open a server");
		a2m_free(why);
		a2m_config_free(cfg);
		goto out;
	}
	a2m_config_free(cfg);
	if (load(one, records) == 0) {
		measure(one, "one server", queries);
		moves(one, "one server", m);
	}
	a2m_close(one);

	/* The router. */
	char fpath[512], err[512];
	snprintf(fpath, sizeof fpath, "%s/federation.json", dir);
	a2m *fed = NULL;
	if (write_federation(fpath, dir, four, url, merge) != 0 ||
	    a2m_federate_open(fpath, &fed, err, sizeof err) != A2M_OK) {
		fprintf(stderr, "a2m bench: %s\n", err);
		goto out;
	}
	if (load(fed, records) == 0) {
		measure(fed, "router", queries);
		moves(fed, "router", m);
	}
	a2m_close(fed);
	rc = A2M_EXIT_OK;
out:
	if (http > 0) {
		kill(http, SIGTERM);
		bench_wait(http, 10000);
	}
	bench_remove_tree(dir);
	return rc;
}
