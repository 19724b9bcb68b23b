/*
** bench_soak.c — `a2m bench soak`: a mixed load for a bounded time, with
** the servers' resident memory, open descriptors and threads sampled; none
** may grow once warmed up.
**
**   a2m bench soak [--seconds N] [--warmup S] [--interval S] [--records N]
**                  [--memory-margin PCT] [--dir DIR]
**
** Two servers share one SQLite file, as two a2m processes may: one over
** HTTP, one over stdio, both this binary, with the tier layout of `a2m
** bench crash` (spills, promotion, a mirrored procedural tier). The load,
** from threads of this process:
**   - two HTTP clients, each reconnecting every few dozen requests;
**   - one stdio client of the long-lived stdio server, subscribed to its
**     push events and draining them;
**   - stdio clients that come and go: each starts a short-lived server of
**     its own on the same file, makes a few requests and closes it;
** each drawing remember (1 to 50 records, some grouped, some keyed into
** the procedural tier), recall, timeline, forget, session close, events
** polling with its cursor, and describe. Each client forgets its oldest
** records beyond --records / 4, so the data, and with it every cache, is
** bounded: what grows after that is a leak.
**
** After --warmup seconds of load, both long-lived servers are sampled
** from /proc every --interval seconds (VmRSS, the entries of fd/,
** Threads). The verdict, per server and figure, counts the first quarter
** of the samples as more warm-up and compares what follows with the
** second quarter: resident memory moves by a few MiB with each moment's
** transient allocations, so the median of the last quarter may exceed the
** median of the second by at most 5% (--memory-margin; the sanitizers'
** allocator needs more) or 1.5 MiB, whichever is more (a
** steady leak moves the median; noise does not); descriptors and threads
** are counts that only a leak raises for good, so the highest of the last
** half may exceed the highest of the second quarter by at most 4
** descriptors (the connections a moment may hold) and 3 threads (the
** helpers a write may start). Then both servers are stopped (SIGTERM, end
** of input) and must exit 0, which under the sanitizers also means no
** leak at exit. Any error answer or lost connection fails the run. It
** prints the samples, each verdict, and "N passed, M failed".
*/
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/bench.h"
#include "cli/bench_proc.h"
#include "cli/cli.h"
#include "client/client_json.h"

#define CLIENT_MS    60000
#define MAX_SAMPLES  4096
#define SESSIONS     8

/* The shared state of a run. */
typedef struct soak {
	char            dir[512], db[600], config[600], log[600], url[256];
	pid_t           http_pid, stdio_pid;
	a2m_client     *stdio;        /* the long-lived stdio server's client */
	size_t          keep;         /* records each client keeps before forgetting */
	atomic_int      stop;
	atomic_long     requests, reconnects, transients, notifications;
	pthread_mutex_t mu;           /* the failure below */
	char            why[1024];
} soak;

static void soak_fail(soak *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void soak_fail(soak *s, const char *fmt, ...)
{
	pthread_mutex_lock(&s->mu);
	if (!s->why[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(s->why, sizeof s->why, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&s->mu);
	atomic_store(&s->stop, 1);
}

/* ---- one client's load ---------------------------------------------------- */

typedef struct client {
	soak       *s;
	const char *name;
	bench_prng  rng;
	a2m_client *c;
	char      **ids;          /* what it remembered, oldest first (a ring) */
	size_t      head, n, cap;
	json_t     *cursor;       /* its events cursor */
	long        next_id;
} client;

/*
** Text from a vocabulary of VOCAB words drawn by Zipf's law (word i about
** 1/i as often): a record of 8 to 17 words, a query of 2 or 3. Smaller
** than `a2m bench latency`'s, so the caches that hold what queries touch
** are warm within seconds and what grows after that is not a cache.
*/
#define VOCAB 1500
static void text_of(client *k, char *out, size_t cap, int query)
{
	size_t words = query ? 2 + bench_prng_below(&k->rng, 2) : 8 + bench_prng_below(&k->rng, 10);
	size_t at = 0;
	out[0] = '\0';
	for (size_t i = 0; i < words && at + 16 < cap; i++) {
		/* Inverse of the Zipf CDF, roughly: exp(u * ln VOCAB). */
		double u = bench_prng_unit(&k->rng);
		size_t w = (size_t)exp(u * log((double)VOCAB));
		at += (size_t)snprintf(out + at, cap - at, "%sw%zu", i ? " " : "", w);
	}
}

static void keep_id(client *k, const char *id)
{
	if (k->n == k->cap) {
		/* The oldest go first: make room by dropping the ring's head. */
		free(k->ids[k->head]);
		k->head = (k->head + 1) % k->cap;
		k->n--;
	}
	k->ids[(k->head + k->n++) % k->cap] = strdup(id);
}

/* One request; 0 when answered with a result (*result the caller's, may be NULL), else -1. */
static int request(client *k, const char *method, json_t *params, json_t **result)
{
	json_t *resp = NULL;
	if (result)
		*result = NULL;
	int rc = a2m_client_request_json(k->c, method, params, &resp);
	json_decref(params);
	atomic_fetch_add(&k->s->requests, 1);
	if (rc != A2M_CLIENT_OK) {
		soak_fail(k->s, "%s: %s: %s", k->name, method, a2m_client_errmsg(k->c));
		return -1;
	}
	json_t *res = json_object_get(resp, "result");
	if (!res) {
		char *text = json_dumps(resp, JSON_COMPACT);
		soak_fail(k->s, "%s: %s answered an error: %.300s", k->name, method, text ? text : "?");
		free(text);
		json_decref(resp);
		return -1;
	}
	if (result)
		*result = json_incref(res);
	json_decref(resp);
	return 0;
}

/* One request of the mix. Returns 0, or -1 on a failure (recorded). */
static int one_request(client *k)
{
	char text[512];
	json_t *res = NULL;
	double u = bench_prng_unit(&k->rng);
	int rc = 0;
	if (k->n >= k->cap - 64) {
		/* Bounded data: forget the oldest hundred. */
		json_t *ids = json_array();
		for (int i = 0; i < 100 && k->n; i++) {
			json_array_append_new(ids, json_string(k->ids[k->head]));
			free(k->ids[k->head]);
			k->head = (k->head + 1) % k->cap;
			k->n--;
		}
		return request(k, "memory/forget", json_pack("{so}", "ids", ids), NULL);
	}
	if (u < 0.30) {
		size_t n = 1 + bench_prng_below(&k->rng, 50);
		json_t *recs = json_array();
		char id[96], session[16], group[112] = "";
		for (size_t i = 0; i < n; i++) {
			snprintf(id, sizeof id, "%s-%ld", k->name, k->next_id++);
			snprintf(session, sizeof session, "s%d", (int)bench_prng_below(&k->rng, SESSIONS));
			text_of(k, text, sizeof text, 0);
			json_t *rec = json_pack("{ss ss ss}", "id", id, "content", text, "session", session);
			if (i % 4 == 0)
				snprintf(group, sizeof group, "g-%s", id);
			if (bench_prng_unit(&k->rng) < 0.5)
				json_object_set_new(rec, "group", json_string(group));
			json_array_append_new(recs, rec);
		}
		rc = request(k, "memory/remember", json_pack("{so}", "records", recs), &res);
		size_t i;
		json_t *id_v;
		json_array_foreach(json_object_get(res, "ids"), i, id_v)
			keep_id(k, json_string_value(id_v));
	} else if (u < 0.36) {
		char key[64];
		snprintf(key, sizeof key, "%s/skill/%d", k->name, (int)bench_prng_below(&k->rng, 30));
		text_of(k, text, sizeof text, 0);
		rc = request(k, "memory/remember", json_pack("{s[{ss ss ss}]}", "records", "content", text,
							      "key", key, "tier", "procedural"), NULL);
	} else if (u < 0.60) {
		text_of(k, text, sizeof text, 1);
		rc = request(k, "memory/recall", json_pack("{ss si}", "query", text, "limit", 10), NULL);
	} else if (u < 0.70) {
		char session[16];
		snprintf(session, sizeof session, "s%d", (int)bench_prng_below(&k->rng, SESSIONS));
		rc = request(k, "memory/timeline", json_pack("{si s{ss}}", "limit", 20, "where", "session",
							      session), NULL);
	} else if (u < 0.78) {
		json_t *ids = json_array();
		for (int i = 0; i < 5 && k->n; i++)
			json_array_append_new(ids, json_string(
				k->ids[(k->head + bench_prng_below(&k->rng, k->n)) % k->cap]));
		rc = request(k, "memory/forget", json_pack("{so}", "ids", ids), NULL);
	} else if (u < 0.84) {
		char session[16];
		snprintf(session, sizeof session, "s%d", (int)bench_prng_below(&k->rng, SESSIONS));
		rc = request(k, "memory/session/close", json_pack("{ss}", "session", session), NULL);
	} else if (u < 0.96) {
		json_t *params = k->cursor ? json_pack("{sO}", "cursor", k->cursor) : json_object();
		rc = request(k, "memory/events", params, &res);
		json_t *cursor = json_object_get(res, "cursor");
		if (cursor) {
			json_decref(k->cursor);
			k->cursor = json_incref(cursor);
		}
	} else {
		rc = request(k, "memory/describe", json_object(), NULL);
	}
	json_decref(res);
	return rc;
}

static int client_init(client *k, soak *s, const char *name, uint64_t seed)
{
	memset(k, 0, sizeof k[0]);
	k->s = s;
	k->name = name;
	bench_prng_seed(&k->rng, seed);
	k->cap = s->keep;
	k->ids = calloc(k->cap, sizeof *k->ids);
	return k->ids ? 0 : -1;
}

static void client_free(client *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->ids[(k->head + i) % k->cap]);
	free(k->ids);
	json_decref(k->cursor);
}

/* An HTTP client that reconnects every 20 to 80 requests. */
static void *http_main(void *arg)
{
	client *k = arg;
	a2m_client_http_options o;
	a2m_client_http_options_init(&o);
	o.timeout_ms = CLIENT_MS;
	while (!atomic_load(&k->s->stop)) {
		if (a2m_client_connect_http(k->s->url, &o, &k->c) != A2M_CLIENT_OK) {
			soak_fail(k->s, "%s: cannot connect to %s", k->name, k->s->url);
			break;
		}
		atomic_fetch_add(&k->s->reconnects, 1);
		long n = 20 + (long)bench_prng_below(&k->rng, 61);
		for (long i = 0; i < n && !atomic_load(&k->s->stop); i++)
			if (one_request(k) != 0)
				break;
		a2m_client_free(k->c);
		k->c = NULL;
	}
	return NULL;
}

/* The long-lived stdio server's client, subscribed to its push events. */
static void *stdio_main(void *arg)
{
	client *k = arg;
	k->c = k->s->stdio;
	if (request(k, "memory/events/subscribe", json_object(), NULL) != 0)
		return NULL;
	while (!atomic_load(&k->s->stop)) {
		if (one_request(k) != 0)
			break;
		long queued = (long)a2m_client_pending(k->c);
		atomic_fetch_add(&k->s->notifications, queued);
		a2m_client_discard_pending(k->c);
	}
	k->c = NULL;
	return NULL;
}

/* Stdio clients that come and go, each with a short-lived server of its own. */
static void *transient_main(void *arg)
{
	client *k = arg;
	char *args[] = {"--db", k->s->db, "--config", k->s->config, NULL};
	while (!atomic_load(&k->s->stop)) {
		pid_t pid;
		if (bench_spawn_stdio(args, CLIENT_MS, &k->c, &pid) != 0) {
			soak_fail(k->s, "%s: a stdio server did not start", k->name);
			break;
		}
		for (int i = 0; i < 10 && !atomic_load(&k->s->stop); i++)
			if (one_request(k) != 0)
				break;
		int status = -1;
		if (a2m_client_close(k->c, &status) != A2M_CLIENT_OK || status != 0)
			soak_fail(k->s, "%s: a short-lived stdio server exited with status %d", k->name,
				  status);
		a2m_client_free(k->c);
		k->c = NULL;
		atomic_fetch_add(&k->s->transients, 1);
	}
	return NULL;
}

/* ---- samples and the verdict ---------------------------------------------- */

typedef struct series {
	const char  *server;
	pid_t        pid;
	bench_sample v[MAX_SAMPLES];
} series;

static int64_t figure(const bench_sample *v, int f)
{
	return f == 0 ? v->rss_kib : f == 1 ? v->fds : v->threads;
}

/* The highest value of figure f (0 rss, 1 fds, 2 threads) among samples [from, to). */
static int64_t highest(const series *s, int f, size_t from, size_t to)
{
	int64_t m = 0;
	for (size_t i = from; i < to; i++)
		if (figure(&s->v[i], f) > m)
			m = figure(&s->v[i], f);
	return m;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The median of figure f among samples [from, to) (from < to <= MAX_SAMPLES). */
static int64_t median(const series *s, int f, size_t from, size_t to)
{
	int64_t v[MAX_SAMPLES];
	for (size_t i = from; i < to; i++)
		v[i - from] = figure(&s->v[i], f);
	qsort(v, to - from, sizeof *v, cmp_i64);
	return v[(to - from) / 2];
}

/*
** The rule per figure (see the header): resident memory moves with every
** request's transient allocations, so its median is compared, the last
** quarter's against the second's, which a steady leak moves and noise
** does not; descriptors and threads are counts that only a leak raises
** for good, so the last half's highest is compared with the second
** quarter's.
*/
static int64_t margin(int f, int64_t base, int memory_pct)
{
	if (f == 0)
		return base * memory_pct / 100 > 1536 ? base * memory_pct / 100 : 1536;
	return f == 1 ? 4 : 3;
}

/* Prints the verdict of one server's figures; returns how many failed. */
static int verdict(const series *s, size_t n, int memory_pct, int *passed)
{
	static const char *const names[3] = {"resident memory (KiB)", "open descriptors", "threads"};
	int failed = 0;
	for (int f = 0; f < 3; f++) {
		int64_t base = f == 0 ? median(s, f, n / 4, n / 2) : highest(s, f, n / 4, n / 2);
		int64_t late = f == 0 ? median(s, f, 3 * n / 4, n) : highest(s, f, n / 2, n);
		int64_t allowed = base + margin(f, base, memory_pct);
		int ok = late <= allowed;
		printf("  %-5s %-22s %s %8lld, %s %8lld (allowed %lld): %s\n",
		       s->server, names[f], f == 0 ? "2nd quarter median" : "2nd quarter max   ",
		       (long long)base, f == 0 ? "last quarter median" : "last half max      ",
		       (long long)late, (long long)allowed, ok ? "ok" : "GROWTH");
		if (ok)
			++*passed;
		else
			failed++;
	}
	return failed;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int rc = fputs(text, f) == EOF ? -1 : 0;
	return fclose(f) == 0 ? rc : -1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static const char usage[] =
	"usage: a2m bench soak [--seconds N] [--warmup S] [--interval S] [--records N]\n"
	"                      [--memory-margin PCT] [--dir DIR]\n";

int a2m_bench_soak(int argc, char **argv)
{
	double seconds = 60, interval = 0, warmup = 5;
	int memory_pct = 5;
	long records = 4000;
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--seconds") == 0 && v)
			seconds = atof(v), i++;
		else if (strcmp(a, "--interval") == 0 && v)
			interval = atof(v), i++;
		else if (strcmp(a, "--warmup") == 0 && v)
			warmup = atof(v), i++;
		else if (strcmp(a, "--memory-margin") == 0 && v)
			memory_pct = atoi(v), i++;
		else if (strcmp(a, "--records") == 0 && v)
			records = atol(v), i++;
		else if (strcmp(a, "--dir") == 0 && v)
			dir = v, i++;
		else {
			int help = strcmp(a, "--help") == 0;
			fputs(usage, help ? stdout : stderr);
			return help ? A2M_EXIT_OK : A2M_EXIT_USAGE;
		}
	}
	/* At least 16 samples, at most one every 50 ms. */
	if (interval <= 0)
		interval = seconds / 40;
	if (seconds < 4 || records < 400 || warmup < 0 || memory_pct < 1 || memory_pct > 100 || interval < 0.05 || seconds / interval < 16 ||
	    seconds / interval > MAX_SAMPLES) {
		fputs(usage, stderr);
		fprintf(stderr, "(at least 4 seconds, 400 records, and 16 to %d samples)\n", MAX_SAMPLES);
		return A2M_EXIT_USAGE;
	}
	soak *s = calloc(1, sizeof *s);
	series *sr = calloc(2, sizeof *sr);
	if (!s || !sr) {
		free(s);
		free(sr);
		return A2M_EXIT_ERROR;
	}
	pthread_mutex_init(&s->mu, NULL);
	s->keep = (size_t)records / 4;
	if (dir)
		snprintf(s->dir, sizeof s->dir, "%s", dir);
	else
		snprintf(s->dir, sizeof s->dir, "/tmp/a2m-soak.XXXXXX");
	if (dir ? mkdir(s->dir, 0755) != 0 && errno != EEXIST : !mkdtemp(s->dir)) {
		fprintf(stderr, "a2m bench soak: %s: %s\n", s->dir, strerror(errno));
		free(s);
		free(sr);
		return A2M_EXIT_ERROR;
	}
	snprintf(s->db, sizeof s->db, "%s/soak.db", s->dir);
	snprintf(s->config, sizeof s->config, "%s/config.json", s->dir);
	snprintf(s->log, sizeof s->log, "%s/http-server.log", s->dir);
	bench_remove_db(s->db);
	int rc = A2M_EXIT_ERROR, passed = 0, failed = 0;
	char *args[] = {"--db", s->db, "--config", s->config, NULL};
	if (write_file(s->config, bench_moving_config) != 0 ||
	    bench_spawn_http(args, s->log, &s->http_pid, s->url, sizeof s->url) != 0 ||
	    bench_spawn_stdio(args, CLIENT_MS, &s->stdio, &s->stdio_pid) != 0) {
		fprintf(stderr, "a2m bench soak: the servers did not start\n");
		if (s->http_pid > 0) {
			kill(s->http_pid, SIGKILL);
			bench_wait(s->http_pid, 0);
		}
		goto out;
	}
	sr[0].server = "http";
	sr[0].pid = s->http_pid;
	sr[1].server = "stdio";
	sr[1].pid = s->stdio_pid;

	enum { NCLIENTS = 4 };
	static const char *const names[NCLIENTS] = {"http-a", "http-b", "stdio", "transient"};
	void *(*const mains[NCLIENTS])(void *) = {http_main, http_main, stdio_main, transient_main};
	client clients[NCLIENTS];
	pthread_t threads[NCLIENTS];
	int started = 0;
	for (int i = 0; i < NCLIENTS; i++) {
		if (client_init(&clients[i], s, names[i], (uint64_t)i + 1) != 0 ||
		    pthread_create(&threads[i], NULL, mains[i], &clients[i]) != 0) {
			soak_fail(s, "cannot start the clients");
			break;
		}
		started++;
	}

	printf("a2m bench soak: %.0f s of load unsampled, then %.0f s with a sample every %.2f s; http"
	       " server pid %d (%s), stdio server pid %d, one file (%s)\n", warmup, seconds, interval,
	       (int)s->http_pid, s->url, (int)s->stdio_pid, s->db);
	fflush(stdout);
	double w0 = bench_now_ms();
	while (bench_now_ms() - w0 < warmup * 1000 && !atomic_load(&s->stop))
		sleep_ms(50);
	printf("  %6s | %-24s | %-24s | %9s\n", "t (s)", "http: RSS KiB  fds thr", "stdio: RSS KiB  fds thr",
	       "requests");
	double t0 = bench_now_ms();
	size_t n = 0;
	long want = (long)(seconds / interval);
	while (n < (size_t)want && !atomic_load(&s->stop)) {
		double next = t0 + (double)(n + 1) * interval * 1000;
		double now = bench_now_ms();
		if (next > now)
			sleep_ms((long)(next - now));
		if (bench_sample_proc(sr[0].pid, &sr[0].v[n]) != 0 ||
		    bench_sample_proc(sr[1].pid, &sr[1].v[n]) != 0) {
			soak_fail(s, "a server is gone");
			break;
		}
		n++;
		printf("  %6.1f | %10lld %5lld %4lld  | %10lld %5lld %4lld  | %9ld\n",
		       (bench_now_ms() - t0) / 1000, (long long)sr[0].v[n - 1].rss_kib,
		       (long long)sr[0].v[n - 1].fds, (long long)sr[0].v[n - 1].threads,
		       (long long)sr[1].v[n - 1].rss_kib, (long long)sr[1].v[n - 1].fds,
		       (long long)sr[1].v[n - 1].threads, (long)atomic_load(&s->requests));
		fflush(stdout);
	}
	atomic_store(&s->stop, 1);
	for (int i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	double elapsed = (bench_now_ms() - t0) / 1000;
	printf("\n%ld requests in %.0f s (%.0f/s), %ld HTTP connections, %ld short-lived stdio servers,"
	       " %ld push notifications\n", (long)atomic_load(&s->requests), elapsed,
	       (double)atomic_load(&s->requests) / elapsed, (long)atomic_load(&s->reconnects),
	       (long)atomic_load(&s->transients), (long)atomic_load(&s->notifications));
	if (!s->why[0] && n == (size_t)want) {
		printf("verdict (after the warm-up quarter; margins: memory %d%% or 1.5 MiB, descriptors"
		       " 4, threads 3):\n", memory_pct);
		failed += verdict(&sr[0], n, memory_pct, &passed);
		failed += verdict(&sr[1], n, memory_pct, &passed);
	}
	/* Both stop cleanly: exit 0 (under the sanitizers, also no leak at exit). */
	kill(s->http_pid, SIGTERM);
	int status = bench_wait(s->http_pid, 120000);
	if (status < 0) {
		kill(s->http_pid, SIGKILL);
		bench_wait(s->http_pid, 0);
	}
	printf("  http  server stopped with status %d: %s\n", status, status == 0 ? "ok" : "FAIL");
	status == 0 ? passed++ : failed++;
	int stdio_status = -1;
	if (a2m_client_close(s->stdio, &stdio_status) != A2M_CLIENT_OK)
		stdio_status = -1;
	a2m_client_free(s->stdio);
	s->stdio = NULL;
	printf("  stdio server stopped with status %d: %s\n", stdio_status,
	       stdio_status == 0 ? "ok" : "FAIL");
	stdio_status == 0 ? passed++ : failed++;
	for (int i = 0; i < started; i++)
		client_free(&clients[i]);
	if (s->why[0]) {
		printf("FAIL: %s\n", s->why);
		failed++;
	}
	rc = failed ? A2M_EXIT_ERROR : A2M_EXIT_OK;
out:
	if (rc == A2M_EXIT_OK && !dir) {
		bench_remove_tree(s->dir);
	} else if (rc != A2M_EXIT_OK) {
		printf("the files are kept in %s\n", s->dir);
	}
	printf("%d passed, %d failed\n", passed, failed + (rc != A2M_EXIT_OK && !failed));
	pthread_mutex_destroy(&s->mu);
	free(s);
	free(sr);
	return rc;
}
