/*
** bench_lone.c — a lone writer as a user meets one: `a2m bench remember
** --serve stdio|http` starts `a2m serve` as a process of its own and
** sends it one record per call through our client (src/client/), each
** call waiting for its answer, as an agent writing a conversation turn by
** turn does.
**
**   a2m bench remember --serve stdio|http [--engine memory|sqlite|postgres]
**                      [--db PATH] [--postgres URL] [--records N] [--warmup N]
**                      [--tier NAME|default] [--synchronous-normal]
**                      [--capacity-after-sync]
**
** Records carry no tier by default (--tier default), so they land in the
** working tier and spill on as the default layout says (working 24 a
** session into episodic 256, into semantic): the warm-up (400 calls)
** fills both, so every timed call spills twice, as a long-running agent's
** does. --tier semantic writes past the bounded tiers. The figure is
** acknowledged writes per second, with each call's time (p50, p99), the
** disk's fsync rate beside a durable SQLite run, and the load average,
** since the machine may be shared. On SQLite, from the server's log at
** its close: the frames its commits appended (a lone commit's pages) and
** group commit's syncs; durable, then the disk's pace for commits of as
** many frames as a sync of this run covered, made as the store makes them
** (`a2m bench fsync`): this run's ceiling, less the round trip. --engine postgres serves a throw-away
** schema of the deployment --postgres (or $A2M_POSTGRES) names, dropped
** before and after. `bench remember` without --serve measures inside the
** process (bench_store.c).
*/
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "cli/bench.h"
#include "cli/bench_proc.h"
#include "cli/cli.h"
#include "client/client_json.h"
#include "server/deployment.h"

int bench_lone_call(a2m_client *c, long i, const char *tier)
{
	char text[128];
	snprintf(text, sizeof text, "note %ld: the deploy key of service %ld rotates every %ld days",
		 i, i % 37, 1 + i % 90);
	json_t *rec = json_pack("{ss}", "content", text);
	if (rec && tier)
		json_object_set_new(rec, "tier", json_string(tier));
	json_t *params = rec ? json_pack("{s[o]}", "records", rec) : NULL;
	json_t *resp = NULL;
	int rc = params ? a2m_client_request_json(c, "memory/remember", params, &resp) : -1;
	json_decref(params);
	int ok = rc == A2M_CLIENT_OK && json_object_get(resp, "result");
	if (!ok) {
		char *said = resp ? json_dumps(resp, JSON_COMPACT) : NULL;
		fprintf(stderr, "remember %ld: %s\n", i,
			said ? said : rc == A2M_CLIENT_OK ? "no answer" : a2m_client_errmsg(c));
		free(said);
	}
	json_decref(resp);
	return ok ? 0 : -1;
}

double bench_load_average(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/*
** bench_spawn_stdio with the server's stderr in the file log (its info
** lines would fill the terminal). Returns as bench_spawn_stdio does.
*/
static int spawn_stdio_logged(char *const *args, const char *log, a2m_client **c, pid_t *pid)
{
	int fd = open(log, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	int saved = fd >= 0 ? dup(STDERR_FILENO) : -1;
	if (saved < 0 || dup2(fd, STDERR_FILENO) < 0) {
		fprintf(stderr, "cannot write %s: %s\n", log, strerror(errno));
		if (fd >= 0)
			close(fd);
		if (saved >= 0)
			close(saved);
		return -1;
	}
	close(fd);
	int rc = bench_spawn_stdio(args, 60000, c, pid);
	(void)dup2(saved, STDERR_FILENO);
	close(saved);
	return rc;
}

/*
** From the server's log (its close at --log-level info): the frames its
** commits appended to the log, and the syncs they took (group commit);
** its warnings and errors to stderr. Returns the frames a sync of the
** log (a commit's when the log does not count the syncs: the pass's
** commit under capacity_after_sync rides on the next call's sync), or 0
** when the log does not say.
*/
static double print_frames(const char *log)
{
	FILE *f = fopen(log, "r");
	char line[512];
	unsigned long long commits = 0, appended = 0, calls = 0, syncs = 0;
	while (f && fgets(line, sizeof line, f)) {
		const char *at = strstr(line, "the log: ");
		if (at)
			(void)sscanf(at, "the log: %llu commits appended %llu", &commits, &appended);
		else if ((at = strstr(line, "group commit: ")))
			(void)sscanf(at, "group commit: %llu durable calls in %llu syncs", &calls, &syncs);
		if (at)
			printf("  %s", at);
		else if (!strstr(line, ": info: "))
			fputs(line, stderr);
	}
	if (f)
		fclose(f);
	unsigned long long per = syncs ? syncs : commits;
	return per ? (double)appended / (double)per : 0;
}

int a2m_bench_remember_serve(int argc, char **argv)
{
	long records = 5000, warmup = 400;
	const char *db = NULL, *tier = "default", *via = NULL, *url = getenv("A2M_POSTGRES");
	int sqlite = 0, sync_normal = 0, postgres = 0, apart = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc &&
		    strcmp(argv[i + 1], "postgres") == 0) {
			postgres = 1;
			i++;
			continue;
		}
		if (bench_engine_flag(argc, argv, &i, &sqlite, &db))
			continue;
		if (strcmp(argv[i], "--postgres") == 0 && i + 1 < argc)
			url = argv[++i];
		else if (strcmp(argv[i], "--serve") == 0 && i + 1 < argc)
			via = argv[++i];
		else if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
			records = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc)
			warmup = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--tier") == 0 && i + 1 < argc)
			tier = argv[++i];
		else if (strcmp(argv[i], "--synchronous-normal") == 0)
			sync_normal = 1;
		else if (strcmp(argv[i], "--capacity-after-sync") == 0)
			apart = 1;
		else {
			via = NULL;  /* unknown: the usage below */
			break;
		}
	}
	if (!via || (strcmp(via, "stdio") != 0 && strcmp(via, "http") != 0) || records < 1 ||
	    warmup < 0 || (postgres && (!url || !*url))) {
		fprintf(stderr, "usage: a2m bench remember --serve stdio|http"
			" [--engine memory|sqlite|postgres] [--db PATH] [--postgres URL]"
			" [--records N] [--warmup N] [--tier NAME|default] [--synchronous-normal]"
			" [--capacity-after-sync]\n");
		return A2M_EXIT_USAGE;
	}
	/* PostgreSQL: a schema of its own, dropped before and after. */
	char schema[64], err[256];
	char *deployment = NULL;
	if (postgres) {
		sqlite = 0;
		snprintf(schema, sizeof schema, "bench_lone_%d", (int)getpid());
		if (!(deployment = a2m_deployment_with_schema(url, schema))) {
			fprintf(stderr, "a2m bench: out of memory\n");
			return A2M_EXIT_ERROR;
		}
		if (a2m_deployment_drop(url, schema, err, sizeof err) != 0) {
			fprintf(stderr, "a2m bench: %s\n", err);
			free(deployment);
			return A2M_EXIT_ERROR;
		}
	}
	int http = strcmp(via, "http") == 0;
	const char *given = strcmp(tier, "default") == 0 ? NULL : tier;
	const char *path = sqlite ? (db ? db : "/tmp/a2m-bench-lone.db") : NULL;
	printf("a2m bench remember --serve %s: %s, tier %s, one record a call, %ld calls after"
	       " %ld to fill the tiers\n", via,
	       postgres ? "postgres" : sqlite ? (sync_normal ? "sqlite, synchronous=NORMAL"
							     : "sqlite, synchronous=FULL")
		      : "memory", given ? given : "(none given: the default tier)", records, warmup);
	if (path) {
		bench_remove_db(path);
		printf("  the disk: %.0f fsyncs/s (4 KiB pwrite + fdatasync beside the store, 200"
		       " times): a durable lone writer's ceiling\n", bench_fsync_rate(path, 200));
		bench_remove_db(path);
	}
	char *args[8] = {NULL};
	int na = 0;
	if (deployment) {
		args[na++] = "--postgres";
		args[na++] = deployment;
	} else if (path) {
		args[na++] = "--db";
		args[na++] = (char *)path;
		if (sync_normal)
			args[na++] = "--synchronous-normal";
		if (apart)
			args[na++] = "--capacity-after-sync";
		/* Its close says what its commits appended to the log (below). */
		args[na++] = "--log-level";
		args[na++] = "info";
	} else {
		args[na++] = "--memory";
	}
	a2m_client *c = NULL;
	pid_t pid = -1;
	char served[128];
	const char *log = http ? "/tmp/a2m-bench-lone-http.log" : "/tmp/a2m-bench-lone-stdio.log";
	if (http ? bench_spawn_http(args, log, &pid, served, sizeof served) != 0
		 : spawn_stdio_logged(args, log, &c, &pid) != 0) {
		free(deployment);
		return A2M_EXIT_ERROR;
	}
	if (http && a2m_client_connect_http(served, NULL, &c) != A2M_CLIENT_OK) {
		fprintf(stderr, "cannot reach %s\n", served);
		kill(pid, SIGTERM);
		bench_wait(pid, 10000);
		free(deployment);
		return A2M_EXIT_ERROR;
	}
	double *ms = malloc((size_t)records * sizeof *ms);
	int rc = ms ? 0 : -1;
	for (long i = 0; i < warmup && !rc; i++)
		rc = bench_lone_call(c, i, given);
	double load = bench_load_average(), t0 = bench_now_ms();
	for (long i = 0; i < records && !rc; i++) {
		double t = bench_now_ms();
		rc = bench_lone_call(c, warmup + i, given);
		ms[i] = bench_now_ms() - t;
	}
	double total = bench_now_ms() - t0;
	if (!rc) {
		printf("  %ld lone remembers in %.0f ms: %.0f acknowledged writes/s (load average"
		       " %.2f before, %.2f after)\n", records, total, (double)records / (total / 1000.0),
		       load, bench_load_average());
		bench_print_latency("each call", ms, (size_t)records);
	}
	free(ms);
	a2m_client_free(c);  /* stdio: the server reads its end of input and exits */
	if (http)
		kill(pid, SIGTERM);
	bench_wait(pid, 30000);
	double frames = path && !rc ? print_frames(log) : 0;
	if (frames > 0 && !sync_normal) {
		/* The ceiling of this run's commits (`a2m bench fsync`). */
		int pages = (int)(frames + 0.5);
		double p50 = 0, rate = bench_commit_rate(path, pages, 1000, &p50);
		printf("  the disk for commits of %d frames (this run's a sync) as the store makes"
		       " them (pwrite at the log's end, fdatasync), 1 000 times: %.0f commits/s"
		       " (p50 %.3f ms)\n", pages, rate, p50);
	}
	if (path && !db)
		bench_remove_db(path);
	if (deployment && a2m_deployment_drop(url, schema, err, sizeof err) != 0)
		fprintf(stderr, "a2m bench: %s\n", err);
	free(deployment);
	return rc ? A2M_EXIT_ERROR : A2M_EXIT_OK;
}
