/*
** bench_crash.c — `a2m bench crash`: kill -9 at random points, many times
** over, and prove that nothing acknowledged is lost.
**
**   a2m bench crash [--seconds N] [--iterations N] [--seed S] [--max-delay MS]
**                   [--http-every K] [--max-records N] [--dir DIR] [--keep]
**
** One SQLite file, served again and again by `a2m serve --db FILE` (this
** binary), over stdio and every K-th time over HTTP, with a tier layout
** that keeps things moving: a small per-session working tier spilling
** whole groups into a bounded episodic tier, which spills and promotes
** into semantic; a procedural tier, mirrored as files. Each iteration
** starts the server, checks everything acknowledged so far through the
** protocol, then drives a workload that triggers, continuously, what
** must survive a crash at any instruction: batches of every size (large
** ones make the index's segments and their tiered merges, run ahead on a
** helper thread or inline, as --helper-threads is drawn 0, 1 or 2),
** spills of groups under capacity, consolidation, session close,
** promotion, recalls (their touches written behind), keyed replacements
** and forgets in the procedural tier (its mirror's files), forgets. A
** thread kills the server with SIGKILL after a delay drawn log-uniformly
** between 0.05 ms and --max-delay (and one time in ten while it is still
** opening: migrations, the index, the mirror's reconciliation).
**
** The test keeps every id it was told was stored, every forget it was
** told was done, every key with its revision and content. After each
** kill: `a2m check` on the file must find nothing wrong but, possibly, a
** mirror file the killed server had no time to write (the next open
** heals it); after each restart, every acknowledged record must be there
** with its key, revision and content, every acknowledged forget must
** hold, the one request in flight must have landed whole or not at all,
** no record may exist that nobody wrote, and describe's tier counts must
** match the records. Every eighth iteration stops the server cleanly
** instead, and then `a2m check` must find nothing at all, mirror
** included; so does the end of the run.
**
** The seed (printed; --seed to repeat) draws every delay and choice, so a
** failure reproduces as closely as a machine's timing allows. The run
** prints one line per iteration, where each kill landed (the method in
** flight), and "N passed, M failed" (iterations), exiting 1 on a
** failure, with the directory kept for a look.
*/
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/bench.h"
#include "cli/bench_crash.h"
#include "cli/bench_proc.h"
#include "cli/cli.h"
#include "client/client_json.h"
#include "util/buf.h"
#include "util/hash.h"

/* ---- the run ---------------------------------------------------------------- */

static const char *const target_names[T_KINDS] = {
	"", "batch", "consolidate", "close", "mirror", "recall",
};
/* The window each aims in: the delay is drawn uniformly below it (ms). */
static const double target_window_ms[T_KINDS] = {0, 60, 10, 10, 5, 5};

void bench_crash_fail(run *r, const char *fmt, ...)
{
	if (r->why[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof r->why, fmt, ap);
	va_end(ap);
}

static void note_landing(run *r, const char *name)
{
	for (int i = 0; i < r->nlanded; i++)
		if (strcmp(r->landed[i].name, name) == 0) {
			r->landed[i].n++;
			return;
		}
	if (r->nlanded < MAX_LANDINGS) {
		snprintf(r->landed[r->nlanded].name, sizeof r->landed[0].name, "%s", name);
		r->landed[r->nlanded++].n = 1;
	}
}

static void *killer_main(void *arg)
{
	run *r = arg;
	pthread_mutex_lock(&r->mu);
	while (!r->quit) {
		if (!r->armed) {
			pthread_cond_wait(&r->cv, &r->mu);
			continue;
		}
		if (pthread_cond_timedwait(&r->cv, &r->mu, &r->deadline) == ETIMEDOUT && r->armed) {
			bench_sample sample;
			r->threads_at_kill = bench_sample_proc(r->victim, &sample) == 0 ? sample.threads : 0;
			kill(r->victim, SIGKILL);
			r->fired = 1;
			r->armed = 0;
		}
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

void bench_crash_arm(run *r, pid_t pid, double ms)
{
	pthread_mutex_lock(&r->mu);
	clock_gettime(CLOCK_MONOTONIC, &r->deadline);
	long long ns = (long long)r->deadline.tv_nsec + (long long)(ms * 1e6);
	r->deadline.tv_sec += (time_t)(ns / 1000000000LL);
	r->deadline.tv_nsec = (long)(ns % 1000000000LL);
	r->victim = pid;
	r->armed = 1;
	r->fired = 0;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Disarms; returns whether the kill was sent. */
static int disarm(run *r)
{
	pthread_mutex_lock(&r->mu);
	r->armed = 0;
	int fired = r->fired;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return fired;
}

/* ---- a2m check on the file ------------------------------------------------------- */

/*
** Runs `a2m check` on the file. mirror_may_lag: a mirror file a killed
** server had no time to write is fine (the next open writes it). Returns
** 0, or -1 (recorded).
*/
static int check_file(run *r, int mirror_may_lag)
{
	char *args[] = {"check", "--db", r->db, "--config", r->config, "-q", NULL};
	a2m_buf out;
	memset(&out, 0, sizeof out);
	int status = bench_run_self(args, &out);
	const char *text = a2m_buf_str(&out);
	int ok = status == 0;
	/* Killed in the very first open, before its one transaction committed:
	** no file, one without the schema, or one whose switch to a WAL file
	** SQLite must first roll back (a hot journal, which a read-only open
	** cannot), which the next open makes a store. Nothing was written. */
	if (status == 1 && r->m.n == 0 &&
	    (strstr(text, "has no a2m schema") || strstr(text, "No such file or directory") ||
	     strstr(text, "a read-only open cannot roll it back"))) {
		ok = 1;
		r->no_store++;
	}
	else if (status == 1 && mirror_may_lag) {
		ok = 1;
		for (const char *p = strstr(text, "PROBLEM "); p; p = strstr(p + 1, "PROBLEM "))
			if (strncmp(p, "PROBLEM mirror:", 15) != 0)
				ok = 0;
		r->mirror_lagged += ok;
	}
	if (!ok)
		bench_crash_fail(r, "a2m check --db %s (exit %d):\n%s", r->db, status, text);
	a2m_buf_free(&out);
	return ok ? 0 : -1;
}

/* ---- iterations ---------------------------------------------------------------- */

/* The temporary files in the mirror's directory (a write a kill cut leaves one). */
static int mirror_temporaries(const run *r)
{
	char dir[700];
	snprintf(dir, sizeof dir, "%.*s.procedural", (int)(strlen(r->db) - 3), r->db);
	DIR *d = opendir(dir);
	int torn = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		torn += strncmp(e->d_name, ".a2m-tmp-", 9) == 0;
	if (d)
		closedir(d);
	return torn;
}

typedef struct iteration {
	int    no, http, helpers, at_start, clean;
	int    target;        /* T_*: what the kill is aimed at */
	double delay_ms;
	char   landed[64];    /* where the kill landed, as printed */
	char   category[64];  /* the same, as counted */
	int64_t idle_threads; /* the server's threads between calls */
	int64_t steps;
} iteration;

/* Starts the server of it: *c (stdio or HTTP), *pid. */
static int start(run *r, const iteration *it, a2m_client **c, pid_t *pid)
{
	char helpers[8];
	snprintf(helpers, sizeof helpers, "%d", it->helpers);
	char *args[] = {"--db", r->db, "--config", r->config, "--helper-threads", helpers, NULL};
	if (!it->http)
		return bench_spawn_stdio(args, CLIENT_MS, c, pid);
	char url[256];
	if (bench_spawn_http(args, r->log, pid, url, sizeof url) != 0)
		return -1;
	a2m_client_http_options o;
	a2m_client_http_options_init(&o);
	o.timeout_ms = CLIENT_MS;
	if (a2m_client_connect_http(url, &o, c) != A2M_CLIENT_OK) {
		kill(*pid, SIGKILL);
		bench_wait(*pid, 0);
		return -1;
	}
	return 0;
}

/* Ends the server: reaped after its kill, or stopped cleanly (its exit status checked). */
static int stop(run *r, const iteration *it, a2m_client *c, pid_t pid, int clean)
{
	int status = 0;
	if (!clean)
		kill(pid, SIGKILL);
	if (it->http) {
		if (clean)
			kill(pid, SIGTERM);
		status = bench_wait(pid, 120000);
		a2m_client_free(c);
	} else {
		if (clean && a2m_client_close(c, &status) != A2M_CLIENT_OK)
			status = -1;
		a2m_client_free(c);
	}
	if (clean && status != 0) {
		bench_crash_fail(r, "the server did not stop cleanly (status %d)", status);
		return -1;
	}
	return 0;
}

static int one_iteration(run *r, iteration *it)
{
	a2m_client *c = NULL;
	pid_t pid = -1;
	int rc = 0;
	if (it->at_start)
		it->delay_ms = bench_prng_unit(&r->rng) * 30.0;
	else if (it->target)
		/* Half the time in the window's first eighth: a batch's analysis and a
		** merge ahead run in its first milliseconds, before the commit's fsync. */
		it->delay_ms = bench_prng_unit(&r->rng) * target_window_ms[it->target] *
			       (bench_prng_unit(&r->rng) < 0.5 ? 0.125 : 1.0);
	else
		it->delay_ms = exp(log(0.05) + bench_prng_unit(&r->rng) *
				   (log(r->max_delay_ms) - log(0.05)));
	if (start(r, it, &c, &pid) != 0) {
		bench_crash_fail(r, "the server did not start");
		return -1;
	}
	if (it->at_start) {
		/*
		** Killed while it opens (migrations, the index, the mirror's
		** reconciliation) or just after: nothing to verify this time, the
		** next start does. Describe until the kill; none answered: it
		** landed in the open.
		*/
		bench_crash_arm(r, pid, it->delay_ms);
		json_t *res = NULL;
		int answered = 0;
		while (bench_crash_call(r, c, "memory/describe", json_object(), &res) == 1) {
			json_decref(res);
			answered++;
		}
		disarm(r);
		snprintf(it->landed, sizeof it->landed, "%s", answered ? "after the open" : "the open");
		snprintf(it->category, sizeof it->category, "start-up: %s",
			 answered ? "after the open" : "the open");
		stop(r, it, c, pid, 0);
		return r->why[0] ? -1 : check_file(r, 1);
	}
	rc = bench_crash_verify(r, c);
	if (rc != 1) {
		if (rc == 0)
			bench_crash_fail(r, "the server died while its records were read back");
		stop(r, it, c, pid, 0);
		return -1;
	}
	if (it->clean) {
		/* Some work, then a clean stop: every area must check clean. */
		for (int i = 0; i < 20 && rc == 1; i++, it->steps++)
			rc = bench_crash_step(r, c);
		snprintf(it->landed, sizeof it->landed, "clean stop");
		if (rc != 1 || stop(r, it, c, pid, 1) != 0) {
			if (rc == 0)
				bench_crash_fail(r, "the server died without a kill");
			return -1;
		}
		return check_file(r, 0);
	}
	int temporaries = mirror_temporaries(r);
	bench_sample idle;
	it->idle_threads = bench_sample_proc(pid, &idle) == 0 ? idle.threads : 0;
	r->pid = pid;
	r->target = it->target;
	r->target_ms = it->delay_ms;
	r->target_armed = 0;
	if (!it->target)
		bench_crash_arm(r, pid, it->delay_ms);
	while ((rc = bench_crash_step(r, c)) == 1) {
		/* An aim that never comes up (it will: each is drawn often) falls back. */
		if (++it->steps == 2000 && r->target && !r->target_armed)
			bench_crash_arm(r, pid, it->delay_ms), r->target_armed = 1;
	}
	r->target = T_NONE;
	int fired = disarm(r);
	/* Threads beyond the idle server's: a helper was analysing or merging. */
	if (fired && r->threads_at_kill > it->idle_threads)
		r->helper_kills++;
	if (rc < 0) {
		stop(r, it, c, pid, 0);
		return -1;
	}
	if (!fired) {
		bench_crash_fail(r, "the server died without a kill");
		stop(r, it, c, pid, 0);
		return -1;
	}
	const flight *f = &r->m.f;
	snprintf(it->category, sizeof it->category, "%s", f->method ? f->method : "between calls");
	snprintf(it->landed, sizeof it->landed, "%s", it->category);
	if (f->kind == F_REMEMBER) {
		snprintf(it->landed, sizeof it->landed, "%s (%zu records)", f->method, f->n);
		snprintf(it->category, sizeof it->category, "%s, %s", f->method,
			 f->big ? "64 records or more (analysed ahead)" : "under 64 records");
	} else if (f->kind == F_KEYED) {
		snprintf(it->category, sizeof it->category, "%s, keyed (%s tier)", f->method,
			 key_tiers[f->key_space]);
		snprintf(it->landed, sizeof it->landed, "%s", it->category);
	}
	stop(r, it, c, pid, 0);
	r->mirror_torn += mirror_temporaries(r) > temporaries;
	return check_file(r, 1);
}

/* Removes the store's files: the next start is a first open. */
static void remove_store(const run *r)
{
	static const char *const ext[] = {"", "-wal", "-shm"};
	char path[700];
	for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
		snprintf(path, sizeof path, "%s%s", r->db, ext[i]);
		unlink(path);
	}
	snprintf(path, sizeof path, "%.*s.procedural", (int)(strlen(r->db) - 3), r->db);
	bench_remove_tree(path);
}

/*
** --first-opens N: a store's very first open killed N times, each on a
** file removed before, at a delay drawn uniformly below the time one first
** open took until its first answer (measured once, unkilled, before). Each
** kill must leave no store (no file, or one without the schema) or a whole
** one that `a2m check` finds clean. The first open was a dozen commits
** once (a schema step each, then the index), and a kill between two left
** a file whose index tables `a2m check` found missing. Returns 0 or -1.
*/
static int first_opens(run *r, int n)
{
	char *args[] = {"--db", r->db, "--config", r->config, NULL};
	a2m_client *c = NULL;
	pid_t pid = -1;
	json_t *res = NULL;
	int status = -1;
	remove_store(r);
	double t0 = bench_now_ms();
	if (bench_spawn_stdio(args, CLIENT_MS, &c, &pid) != 0 ||
	    bench_crash_call(r, c, "memory/describe", json_object(), &res) != 1 ||
	    a2m_client_close(c, &status) != A2M_CLIENT_OK || status != 0) {
		a2m_client_free(c);
		bench_crash_fail(r, "a first open, not killed, did not answer and stop cleanly");
		return -1;
	}
	double open_ms = bench_now_ms() - t0;
	json_decref(res);
	a2m_client_free(c);
	printf("first opens: one took %.1f ms to its first answer; %d killed below that\n",
	       open_ms, n);
	int in_open = 0;
	for (int i = 1; i <= n && !r->why[0]; i++) {
		iteration it;
		memset(&it, 0, sizeof it);
		it.delay_ms = bench_prng_unit(&r->rng) * open_ms;
		remove_store(r);
		if (bench_spawn_stdio(args, CLIENT_MS, &c, &pid) != 0) {
			bench_crash_fail(r, "the server did not start");
			return -1;
		}
		bench_crash_arm(r, pid, it.delay_ms);
		int answered = 0;
		while (bench_crash_call(r, c, "memory/describe", json_object(), &res) == 1) {
			json_decref(res);
			answered++;
		}
		disarm(r);
		stop(r, &it, c, pid, 0);
		in_open += !answered;
		int rc = r->why[0] ? -1 : check_file(r, 1);
		printf("%4d stdio first open  %8.2f ms  %-16s%s\n", i, it.delay_ms,
		       answered ? "after the open" : "in the open", rc ? "  FAILED" : "");
		fflush(stdout);
	}
	printf("first opens: %d of %d kills landed in the open; %d left no store, the others"
	       " a whole one\n\n", in_open, n, r->no_store);
	if (r->why[0])
		return -1;  /* the file kept as the kill left it */
	remove_store(r);
	return 0;
}

static int write_config(run *r)
{
	FILE *f = fopen(r->config, "w");
	if (!f || fputs(bench_moving_config, f) == EOF) {
		if (f)
			fclose(f);
		return -1;
	}
	return fclose(f) == 0 ? 0 : -1;
}

static const char usage[] =
	"usage: a2m bench crash [--seconds N] [--iterations N] [--seed S] [--max-delay MS]\n"
	"                       [--http-every K] [--max-records N] [--first-opens N]\n"
	"                       [--dir DIR] [--keep]\n";

int a2m_bench_crash(int argc, char **argv)
{
	run *r = calloc(1, sizeof *r);
	double seconds = 60;
	long iterations = 0;
	int keep = 0, seeded = 0, n_first = 0;
	const char *dir = NULL;
	if (!r)
		return A2M_EXIT_ERROR;
	r->max_delay_ms = 2000;
	r->http_every = 4;
	r->max_records = 5000;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--seconds") == 0 && v)
			seconds = atof(v), i++;
		else if (strcmp(a, "--iterations") == 0 && v)
			iterations = atol(v), i++;
		else if (strcmp(a, "--seed") == 0 && v)
			r->seed = strtoull(v, NULL, 0), seeded = 1, i++;
		else if (strcmp(a, "--max-delay") == 0 && v)
			r->max_delay_ms = atof(v), i++;
		else if (strcmp(a, "--http-every") == 0 && v)
			r->http_every = atoi(v), i++;
		else if (strcmp(a, "--max-records") == 0 && v)
			r->max_records = (size_t)atol(v), i++;
		else if (strcmp(a, "--first-opens") == 0 && v)
			n_first = atoi(v), i++;
		else if (strcmp(a, "--dir") == 0 && v)
			dir = v, i++;
		else if (strcmp(a, "--keep") == 0)
			keep = 1;
		else {
			fputs(usage, strcmp(a, "--help") == 0 ? stdout : stderr);
			free(r);
			return strcmp(a, "--help") == 0 ? A2M_EXIT_OK : A2M_EXIT_USAGE;
		}
	}
	if (seconds <= 0 || r->max_delay_ms < 0.1 || r->http_every < 0 || n_first < 0) {
		fputs(usage, stderr);
		free(r);
		return A2M_EXIT_USAGE;
	}
	if (!seeded) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		r->seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
	}
	bench_prng_seed(&r->rng, r->seed);
	bench_seed(r->seed);
	if (dir) {
		snprintf(r->dir, sizeof r->dir, "%s", dir);
		if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
			fprintf(stderr, "a2m bench crash: %s: %s\n", dir, strerror(errno));
			free(r);
			return A2M_EXIT_ERROR;
		}
	} else {
		snprintf(r->dir, sizeof r->dir, "/tmp/a2m-crash.XXXXXX");
		if (!mkdtemp(r->dir)) {
			fprintf(stderr, "a2m bench crash: mkdtemp: %s\n", strerror(errno));
			free(r);
			return A2M_EXIT_ERROR;
		}
	}
	snprintf(r->db, sizeof r->db, "%s/crash.db", r->dir);
	snprintf(r->config, sizeof r->config, "%s/config.json", r->dir);
	snprintf(r->log, sizeof r->log, "%s/http-server.log", r->dir);
	memset(r->m.keyed, 0xff, sizeof r->m.keyed);
	if (write_config(r) != 0) {
		fprintf(stderr, "a2m bench crash: cannot write %s\n", r->config);
		free(r);
		return A2M_EXIT_ERROR;
	}
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_create(&r->killer, NULL, killer_main, r);

	printf("a2m bench crash: seed %llu (--seed %llu repeats it), %s, kill after 0.05 to %.0f ms"
	       " (log-uniform), HTTP every %d, in %s\n", (unsigned long long)r->seed,
	       (unsigned long long)r->seed, iterations ? "iterations as asked" : "for the time given",
	       r->max_delay_ms, r->http_every, r->dir);
	fflush(stdout);
	double t0 = bench_now_ms();
	int done = 0, kills = 0, starts = 0, cleans = 0;
	if (n_first)
		first_opens(r, n_first);
	for (int no = 1; !r->why[0]; no++) {
		if (iterations ? no > iterations : bench_now_ms() - t0 > seconds * 1000)
			break;
		iteration it;
		memset(&it, 0, sizeof it);
		it.no = no;
		it.http = r->http_every > 0 && no % r->http_every == 0;
		it.helpers = (int)bench_prng_below(&r->rng, 3);
		it.clean = no % 8 == 7 || no % 24 == 0;
		it.at_start = !it.clean && !it.http && bench_prng_unit(&r->rng) < 0.1;
		/* Half the kills aimed at what is short and must be whole. */
		double aim = bench_prng_unit(&r->rng);
		if (!it.clean && !it.at_start && aim < 0.5)
			it.target = aim < 0.2 ? T_BATCH : aim < 0.28 ? T_CONSOLIDATE
				  : aim < 0.36 ? T_CLOSE : aim < 0.45 ? T_MIRROR : T_RECALL;
		double s0 = bench_now_ms();
		int rc = one_iteration(r, &it);
		char how[32];
		snprintf(how, sizeof how, "%s%s%s", it.clean ? "clean" : it.at_start ? "kill@open" : "kill",
			 it.target ? "@" : "", target_names[it.target]);
		printf("%4d %-5s helpers %d  %-17s %8.2f ms  %-44s %5lld calls  %6zu records  %.1f s%s\n",
		       no, it.http ? "http" : "stdio", it.helpers, how,
		       it.clean ? 0.0 : it.delay_ms, it.landed, (long long)it.steps, r->m.present,
		       (bench_now_ms() - s0) / 1000, rc ? "  FAILED" : "");
		fflush(stdout);
		if (rc)
			break;
		done++;
		if (it.clean)
			cleans++;
		else if (it.at_start)
			starts++;
		else
			kills++;
		if (!it.clean)
			note_landing(r, it.category[0] ? it.category : "?");
	}
	/* The end: one more start (it verifies), a clean stop, and a check of everything. */
	if (!r->why[0]) {
		iteration it;
		memset(&it, 0, sizeof it);
		it.clean = 1;
		if (one_iteration(r, &it) == 0)
			done++;
	}
	pthread_mutex_lock(&r->mu);
	r->quit = 1;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->killer, NULL);

	printf("\n%d iterations in %.0f s: %d kills while working, %d while opening, %d clean stops;"
	       " %lld writes acknowledged, %zu records at the end\n", done,
	       (bench_now_ms() - t0) / 1000, kills, starts, cleans,
	       (long long)r->m.acknowledged, r->m.present);
	printf("kills landed in (by the request in flight):\n");
	for (int i = 0; i < r->nlanded; i++)
		printf("  %4d  %s\n", r->landed[i].n, r->landed[i].name);
	printf("  %4d  with a helper thread running (a batch's analysis, an index merge ahead)\n",
	       r->helper_kills);
	printf("  %4d  between a commit and its mirror file (the check found the mirror behind)\n",
	       r->mirror_lagged);
	printf("  %4d  while a mirror file was being written (its temporary file left)\n",
	       r->mirror_torn);
	int failed = r->why[0] != 0;
	if (failed)
		printf("\nFAIL (seed %llu; the files are kept in %s): %s\n",
		       (unsigned long long)r->seed, r->dir, r->why);
	else if (!keep)
		bench_remove_tree(r->dir);
	printf("%d passed, %d failed\n", done, failed);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	bench_crash_model_free(&r->m);
	free(r);
	return failed ? A2M_EXIT_ERROR : A2M_EXIT_OK;
}
