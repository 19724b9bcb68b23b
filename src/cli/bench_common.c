/*
** bench_common.c — the helpers every benchmark shares (bench.h): clocks
** and the machine's pace, the allocator in use, timed calls, opening a
** benchmark's store (memory, SQLite, PostgreSQL or a federation), the
** fsync rate, the seeded random numbers and the Zipf-distributed text of
** records and queries, latency percentiles. Apart from bench_store.c (the
** timeline and remember benchmarks) because bench.c, bench_http.c,
** bench_vectors.c and the rest use them as much.
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

/* ---- shared helpers (bench.h) ------------------------------------------- */

double bench_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static volatile uint64_t pace_sink;

double bench_pace_ms(void)
{
	static unsigned char buf[256 * 1024];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (unsigned char)(i * 131 + 7);
	double best = 0;
	for (int run = 0; run < 3; run++) {
		double t0 = bench_now_ms();
		uint64_t h = 14695981039346656037u;
		for (int pass = 0; pass < 128; pass++)
			for (size_t i = 0; i < sizeof buf; i++)
				h = (h ^ buf[i]) * 1099511628211u;
		double ms = bench_now_ms() - t0;
		pace_sink = h;  /* kept, so the loop is not optimised away */
		if (!run || ms < best)
			best = ms;
	}
	return best;
}

/*
** mimalloc's version call, resolved only when the binary links mimalloc: a
** weak reference, so the same source builds with ALLOC=libc and says so.
*/
extern int mi_version(void) __attribute__((weak));

void bench_print_allocator(void)
{
	if (mi_version) {
		int v = mi_version();
		printf("  allocator: mimalloc %d.%d.%d\n", v / 100, v / 10 % 10, v % 10);
	} else {
		printf("  allocator: glibc malloc\n");
	}
}

/* Sends a request already in text; returns its result like bench_call(). */
json_t *bench_call_text(a2m *h, const char *method, const char *text, double *ms)
{
	double t0 = bench_now_ms();
	char *reply = NULL;
	a2m_handle(h, text, A2M_NUL_TERMINATED, &reply);
	if (ms)
		*ms = bench_now_ms() - t0;
	json_t *resp = reply ? json_loads(reply, 0, NULL) : NULL;
	a2m_free(reply);
	json_t *result = json_incref(json_object_get(resp, "result"));
	if (!result) {
		char *e = json_dumps(json_object_get(resp, "error"), JSON_COMPACT);
		fprintf(stderr, "a2m bench: %s failed: %s\n", method, e ? e : "no response");
		free(e);
	}
	json_decref(resp);
	return result;
}

json_t *bench_call(a2m *h, const char *method, json_t *params, double *ms)
{
	json_t *req = json_pack("{ss si ss so}", "jsonrpc", "2.0", "id", 1, "method", method,
				"params", params ? params : json_object());
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!text) {
		fprintf(stderr, "a2m bench: out of memory\n");
		return NULL;
	}
	json_t *result = bench_call_text(h, method, text, ms);
	free(text);
	return result;
}

/* bench_open_with() for o->federate: a router over four in-process
** backends of o's engine and ranking, one semantic tier each. */
static a2m *open_federation(const bench_open_opts *o)
{
	char path[] = "/tmp/a2m-bench-fed-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f)
		return NULL;
	fprintf(f, "{\"merge\": \"%s\", \"journal\": \"%s.journal\", \"backends\": {",
		o->federate, path);
	for (int i = 0; i < 4; i++) {
		if (o->path)
			fprintf(f, "%s\"b%d\": {\"kind\": \"sqlite\", \"path\": \"%s.%d\"", i ? ", " : "",
				i, o->path, i);
		else
			fprintf(f, "%s\"b%d\": {\"kind\": \"memory\"", i ? ", " : "", i);
		fprintf(f, ", \"ranking\": \"%s\"}", o->ranking ? o->ranking : "bm25");
	}
	fprintf(f, "}, \"tiers\": [");
	for (int i = 0; i < 4; i++)
		fprintf(f, "%s{\"name\": \"semantic%s\", \"kind\": \"semantic\", \"backend\": "
			"\"b%d\"}", i ? ", " : "", i ? (const char *[]){"", "2", "3", "4"}[i] : "", i);
	fprintf(f, "]}\n");
	fclose(f);
	a2m *h = NULL;
	char err[512];
	if (a2m_federate_open(path, &h, err, sizeof err) != A2M_OK)
		fprintf(stderr, "a2m bench: %s\n", err);
	unlink(path);
	return h;
}

a2m *bench_open_with(const bench_open_opts *o)
{
	if (o->federate)
		return open_federation(o);
	a2m_config *cfg = NULL;
	a2m *h = NULL;
	char *err = NULL;
	char threads[16];
	snprintf(threads, sizeof threads, "%d", o->helper_threads);
	int rc = a2m_config_new(&cfg);
	if (!rc)
		rc = a2m_config_set(cfg, "engine",
				    o->postgres ? "postgres" : o->path ? "sqlite" : "memory");
	if (!rc && o->postgres)
		rc = a2m_config_set(cfg, "postgres", o->postgres);
	if (!rc && o->path)
		rc = a2m_config_set(cfg, "path", o->path);
	if (!rc && o->sync_normal)
		rc = a2m_config_set(cfg, "synchronous", "normal");
	if (!rc && o->read_only)
		rc = a2m_config_set(cfg, "read_only", "1");
	if (!rc && o->ranking)
		rc = a2m_config_set(cfg, "ranking", o->ranking);
	if (!rc && o->helper_threads >= 0)
		rc = a2m_config_set(cfg, "helper_threads", threads);
	if (!rc && o->vector_pool > 0) {
		char pool[24];
		snprintf(pool, sizeof pool, "%ld", o->vector_pool);
		rc = a2m_config_set(cfg, "vector_search", "quantized");
		if (!rc)
			rc = a2m_config_set(cfg, "vector_pool", pool);
	}
	if (!rc && o->postings_cache_mb > 0) {
		char mb[24];
		snprintf(mb, sizeof mb, "%ld", o->postings_cache_mb);
		rc = a2m_config_set(cfg, "postings_cache_mb", mb);
	}
	if (!rc && o->embed_url) {
		rc = a2m_config_set(cfg, "embed_kind", "ollama");
		if (!rc)
			rc = a2m_config_set(cfg, "embed_url", o->embed_url);
		if (!rc)
			rc = a2m_config_set(cfg, "embed_timeout_ms", "30000");
	}
	if (rc) {
		fprintf(stderr, "a2m bench: %s\n", cfg ? a2m_config_errmsg(cfg) : "out of memory");
	} else if (a2m_open(cfg, &h, &err) != A2M_OK) {
		fprintf(stderr, "a2m bench: %s\n", err ? err : "cannot open a server");
		a2m_free(err);
	}
	a2m_config_free(cfg);
	return h;
}

a2m *bench_open(const char *path, int sync_normal, int read_only)
{
	bench_open_opts o = {.path = path, .sync_normal = sync_normal, .read_only = read_only,
			     .helper_threads = -1};
	return bench_open_with(&o);
}

double bench_fsync_rate(const char *path, int n)
{
	char name[1024];
	static char page[4096];
	snprintf(name, sizeof name, "%s-fsync-probe", path);
	int fd = open(name, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	memset(page, 'x', sizeof page);
	double t0 = bench_now_ms();
	int ok = 1;
	for (int i = 0; i < n && ok; i++)
		ok = pwrite(fd, page, sizeof page, (off_t)(i % 16) * (off_t)sizeof page) ==
			     (ssize_t)sizeof page && fdatasync(fd) == 0;
	double ms = bench_now_ms() - t0;
	close(fd);
	unlink(name);
	return ok && ms > 0 ? n / (ms / 1000.0) : -1;
}

void bench_remove_db(const char *path)
{
	static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
	char name[1024];
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		snprintf(name, sizeof name, "%s%s", path, suffixes[i]);
		unlink(name);
	}
}

/* The same seed as bench.c, so `bench latency` and these see one corpus. */
static uint64_t rng_state = 0x2545F4914F6CDD1DULL;

void bench_seed(uint64_t seed)
{
	rng_state = seed ? seed : 0x2545F4914F6CDD1DULL;
}

uint64_t bench_rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

#define VOCAB 20000

static const char *const function_words[] = {
	"the", "of", "and", "to", "in", "is", "that", "for", "it", "with", "was", "on",
	"as", "by", "at", "from", "this", "be", "or", "an", "are", "which", "not", "but"
};
#define NFUNCTION (sizeof function_words / sizeof function_words[0])

/* Word i of the made-up vocabulary (as bench.c): syllables, little to stem. */
static void word(size_t i, char *out, size_t cap)
{
	static const char *const syl[] = {"ka", "lo", "mi", "ren", "to", "vas", "qui", "del",
					  "no", "par", "su", "fin", "go", "ber", "tal", "zu"};
	size_t n = 0;
	i += 16;
	while (i && n + 4 < cap) {
		n += (size_t)snprintf(out + n, cap - n, "%s", syl[i % 16]);
		i /= 16;
	}
	out[n] = '\0';
}

/* Word ranks by 1/r, the usual shape of text. */
static size_t zipf(void)
{
	double u = (double)(bench_rng() % 1000000) / 1e6;
	size_t r = (size_t)(exp(u * log((double)VOCAB)));
	return r ? r - 1 : 0;
}

void bench_sentence(char *out, size_t cap)
{
	char w[64];
	size_t n = 0, words = 8 + bench_rng() % 10;
	out[0] = '\0';
	for (size_t j = 0; j < words && n + 1 < cap; j++) {
		if (bench_rng() % 3 == 0)
			snprintf(w, sizeof w, "%s", function_words[bench_rng() % NFUNCTION]);
		else
			word(zipf(), w, sizeof w);
		n += (size_t)snprintf(out + n, cap - n, "%s%s", j ? " " : "", w);
	}
}

void bench_query_text(char *out, size_t cap)
{
	char w[64];
	size_t n = 0, words = 2 + bench_rng() % 2;
	out[0] = '\0';
	for (size_t j = 0; j < words && n + 1 < cap; j++) {
		word(zipf(), w, sizeof w);
		n += (size_t)snprintf(out + n, cap - n, "%s%s", j ? " " : "", w);
	}
}

void bench_query_frequent(char *out, size_t cap)
{
	char w[64];
	size_t n = 0;
	out[0] = '\0';
	for (size_t j = 0; j < 3 && n + 1 < cap; j++) {
		word(bench_rng() % 20, w, sizeof w);
		n += (size_t)snprintf(out + n, cap - n, "%s%s", j ? " " : "", w);
	}
}

int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bench_percentile(const double *sorted, size_t n, double p)
{
	if (!n)
		return 0;
	size_t i = (size_t)(p * (double)n);
	return sorted[i < n ? i : n - 1];
}

void bench_print_latency(const char *label, double *ms, size_t n)
{
	double sum = 0;
	qsort(ms, n, sizeof *ms, bench_cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += ms[i];
	printf("  %-28s p50 %8.3f ms  p99 %8.3f ms  mean %8.3f ms  max %8.3f ms  (n=%zu)\n",
	       label, bench_percentile(ms, n, 0.5), bench_percentile(ms, n, 0.99),
	       n ? sum / (double)n : 0, n ? ms[n - 1] : 0, n);
}
