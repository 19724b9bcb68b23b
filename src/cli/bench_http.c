/*
** bench_http.c — the figures taken from outside the process: the request
** bodies bench/http.sh posts with wrk, and start-up to first answer.
**
**   a2m bench corpus --out DIR [--records N] [--queries Q]
**
** Writes one JSON-RPC request per line, so wrk (bench/wrk-post.lua) and curl
** can post them as they are:
**
**   DIR/describe.jsonl   one memory/describe
**   DIR/load.jsonl       N records (the corpus of `a2m bench latency`, same
**                        seed) as memory/remember calls of 1000, semantic tier
**   DIR/recall.jsonl     Q memory/recall of 2-3 words, limit 10, drawn as
**                        `a2m bench latency` draws them
**   DIR/remember.jsonl   1000 single-record memory/remember calls, semantic
**                        tier, no ids (the server makes them)
**
** The HTTP figures themselves come from wrk against a real `a2m serve
** --http` (bench/http.sh), beside nginx answering a fixed 200 to the same
** POST: the ceiling of this machine and this client.
**
**   a2m bench startup [--records N] [--db PATH] [--runs R]
**
** Start-up to first answer: the time from fork+exec of `a2m serve --db
** FILE` (a file of N records of the latency corpus; with --db kept, and
** used as it is when it exists) to its describe response read back over
** stdio; R runs, median and spread. Then the same for `a2m serve --memory`,
** an empty store: what the process costs before any data.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/bench.h"
#include "cli/cli.h"
#include "util/progress.h"

/* Writes one request line; returns 0 or -1. */
static int put(FILE *f, const char *method, json_t *params)
{
	json_t *req = json_pack("{ss si ss so}", "jsonrpc", "2.0", "id", 1, "method", method,
				"params", params ? params : json_object());
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	int rc = text && fprintf(f, "%s\n", text) > 0 ? 0 : -1;
	free(text);
	return rc;
}

static FILE *open_out(const char *dir, const char *name)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "a2m bench corpus: %s: %s\n", path, strerror(errno));
	return f;
}

static int close_out(FILE *f, int rc)
{
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

int a2m_bench_corpus(int argc, char **argv)
{
	long records = 10000, queries = 1000;
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
			records = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--queries") == 0 && i + 1 < argc)
			queries = strtol(argv[++i], NULL, 10);
		else
			dir = NULL, argc = 0;
	}
	if (!dir || records < 0 || queries < 1) {
		fprintf(stderr, "usage: a2m bench corpus --out DIR [--records N] [--queries Q]\n");
		return A2M_EXIT_USAGE;
	}
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "a2m bench corpus: %s: %s\n", dir, strerror(errno));
		return A2M_EXIT_ERROR;
	}
	char text[512];
	int rc = 0;
	FILE *f;

	if (!(f = open_out(dir, "describe.jsonl")))
		return A2M_EXIT_ERROR;
	rc = close_out(f, put(f, "memory/describe", NULL));

	/* The records first, then the queries: the order bench latency draws. */
	bench_seed(0);
	if (rc || !(f = open_out(dir, "load.jsonl")))
		return A2M_EXIT_ERROR;
	for (long done = 0; done < records && !rc;) {
		json_t *recs = json_array();
		for (long k = 0; k < 1000 && done < records; k++, done++) {
			bench_sentence(text, sizeof text);
			json_array_append_new(recs, json_pack("{ss ss}", "content", text, "tier",
							      "semantic"));
		}
		rc = put(f, "memory/remember", json_pack("{so}", "records", recs));
	}
	rc = close_out(f, rc);

	if (rc || !(f = open_out(dir, "recall.jsonl")))
		return A2M_EXIT_ERROR;
	for (long q = 0; q < queries && !rc; q++) {
		bench_query_text(text, sizeof text);
		rc = put(f, "memory/recall", json_pack("{ss si}", "query", text, "limit", 10));
	}
	rc = close_out(f, rc);

	if (rc || !(f = open_out(dir, "remember.jsonl")))
		return A2M_EXIT_ERROR;
	for (long k = 0; k < 1000 && !rc; k++) {
		bench_sentence(text, sizeof text);
		rc = put(f, "memory/remember", json_pack("{s[{ss ss}]}", "records", "content", text,
							   "tier", "semantic"));
	}
	rc = close_out(f, rc);
	if (rc) {
		fprintf(stderr, "a2m bench corpus: cannot write %s\n", dir);
		return A2M_EXIT_ERROR;
	}
	printf("a2m bench corpus: %s/{describe,load,recall,remember}.jsonl (%ld records, %ld"
	       " queries)\n", dir, records, queries);
	return A2M_EXIT_OK;
}

/* ---- start-up to first answer ------------------------------------------- */

static const char describe_line[] =
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/describe\"}\n";

/*
** Starts `a2m serve ARGS` (this very binary), writes a describe line on its
** stdin and reads the response line from its stdout. Returns the ms from
** just before fork() to the response's newline, or -1. When records is not
** NULL it gets the sum of the answer's tier counts.
*/
static double first_answer(char *const *args, long long *records)
{
	int in[2], out[2];
	if (pipe(in) != 0 || pipe(out) != 0)
		return -1;
	double t0 = bench_now_ms();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	double ms = -1;
	if (write(in[1], describe_line, sizeof describe_line - 1) ==
	    (ssize_t)(sizeof describe_line - 1)) {
		char buf[65536];
		ssize_t r;
		size_t total = 0;
		while (total + 1 < sizeof buf &&
		       (r = read(out[0], buf + total, sizeof buf - 1 - total)) > 0) {
			total += (size_t)r;
			if (memchr(buf + total - (size_t)r, '\n', (size_t)r)) {
				ms = bench_now_ms() - t0;
				break;
			}
		}
		buf[total] = '\0';
		json_t *resp = ms >= 0 ? json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
		json_t *tiers = json_object_get(json_object_get(resp, "result"), "tiers");
		if (!tiers)
			ms = -1; /* an error line, not a describe result */
		for (size_t i = 0; records && i < json_array_size(tiers); i++)
			*records += json_integer_value(json_object_get(json_array_get(tiers, i),
								       "count"));
		json_decref(resp);
	}
	close(in[1]); /* end of input: the server commits, closes and exits */
	close(out[0]);
	int status;
	waitpid(pid, &status, 0);
	return ms;
}

/* Fills a fresh SQLite file with n records of the latency corpus. */
static int fill(const char *path, long n)
{
	char text[512];
	bench_remove_db(path);
	a2m *h = bench_open(path, 0, 0);
	if (!h)
		return -1;
	bench_seed(0);
	a2m_progress *p = a2m_progress_start("a2m bench loading", "records", n);
	for (long done = 0; done < n;) {
		json_t *recs = json_array();
		for (long k = 0; k < 1000 && done < n; k++, done++) {
			bench_sentence(text, sizeof text);
			json_array_append_new(recs, json_pack("{ss ss}", "content", text, "tier",
							      "semantic"));
		}
		json_t *r = bench_call(h, "memory/remember", json_pack("{so}", "records", recs), NULL);
		if (!r) {
			a2m_progress_erase(p);
			a2m_close(h);
			return -1;
		}
		json_decref(r);
		a2m_progress_update(p, done);
	}
	a2m_progress_erase(p);
	a2m_close(h);
	return 0;
}

int a2m_bench_startup(int argc, char **argv)
{
	long records = 100000, runs = 10;
	const char *db = NULL;
	struct stat st;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
			records = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
			db = argv[++i];
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = strtol(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: a2m bench startup [--records N] [--db PATH] [--runs R]\n");
			return A2M_EXIT_USAGE;
		}
	}
	if (runs < 1 || records < 0)
		return A2M_EXIT_USAGE;
	/* --db: kept, and used as it is when it exists. */
	const char *path = db ? db : "/tmp/a2m-bench-startup.db";
	if (!(db && stat(db, &st) == 0) && fill(path, records) != 0)
		return A2M_EXIT_ERROR;
	printf("a2m bench startup: fork+exec of a2m serve to the describe response over stdio,"
	       " %ld runs each\n", runs);
	double *ms = calloc((size_t)runs, sizeof *ms);
	if (!ms)
		return A2M_EXIT_ERROR;
	char label[128];
	for (int kind = 0; kind < 2; kind++) {
		char *sqlite_args[] = {"a2m", "serve", "--db", (char *)path, NULL};
		char *memory_args[] = {"a2m", "serve", "--memory", NULL};
		long long count = 0;
		for (long r = 0; r < runs; r++) {
			count = 0;
			if ((ms[r] = first_answer(kind ? memory_args : sqlite_args, &count)) < 0) {
				fprintf(stderr, "a2m bench: no describe answer from a2m serve\n");
				free(ms);
				return A2M_EXIT_ERROR;
			}
		}
		if (kind)
			snprintf(label, sizeof label, "serve --memory (empty)");
		else
			snprintf(label, sizeof label, "serve --db (%lld records)", count);
		bench_print_latency(label, ms, (size_t)runs);
	}
	free(ms);
	if (!db)
		bench_remove_db(path);
	return A2M_EXIT_OK;
}
