/*
** bench_vectors.c — `a2m bench vectors`: vector recall, exact beside the
** quantized mode, and text recall the server embeds (DESIGN §7; the
** helpers it shares with bench_store.c are in bench.h).
**
**   a2m bench vectors [--records N] [--dims D] [--queries Q]
**                     [--engine memory|sqlite] [--db PATH] [--read-only] [--pool P]
**                     [--clusters C]
**       Vector recall: N records carrying random unit vectors of D
**       dimensions (a fixed seed), then Q recalls with a random unit query
**       vector, limit 10, no text, searched exactly, and the same Q in the
**       quantized mode (vector_search, pool P per result, default 20) with
**       its recall@10 against exact; then Q with a text as well (both
**       rankings fused, exact). Default 100 000 x 384. --clusters C: the
**       vectors (queries too) in C clusters (put_unit_vector).
**       With --embed-url URL (an Ollama-compatible embedder, such as
**       `build/tests/embed_server PORT 384`): N text records and no caller
**       vectors, the server embedding them (docs/EMBEDDINGS.md): the load,
**       the backfill of what the writes left owed (recalls restricted to
**       the empty working tier, so each is the owed lookup and one batch
**       of 64 embedded), a recall when nothing is owed, and Q text recalls
**       (the query embedded, ranked by BM25 and the generated vectors).
**
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "a2m.h"
#include "cli/bench.h"
#include "cli/cli.h"
#include "server/bench_switch.h"
#include "util/buf.h"
#include "util/progress.h"
/* A standard normal deviate (Box-Muller). */
static double gaussian(void)
{
	double u = ((double)(bench_rng() >> 11) + 0.5) / 9007199254740992.0;
	double v = ((double)(bench_rng() >> 11) + 0.5) / 9007199254740992.0;
	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/*
** Appends a random unit vector of dims components (uniform on the sphere)
** as a JSON array, each component with 9 decimals: about the 8 significant
** digits a float32 embedding carries, as embedding services send them.
** x is scratch space of dims doubles. The requests are built as text
** (util/buf.h): printing 100 000 x 384 numbers through jansson's %.17g
** would cost the benchmark more than the server spends parsing them.
*/
/*
** --clusters C: C random centres (bench_vectors makes them), and each vector
** one of them, at random, plus a Gaussian of half its length: neighbours at
** a cosine near 0.8 in clusters of near-equals, a harder case for a coarse
** code than vectors uniform on the sphere.
*/
static double *centres;
static long ncentres;

static void put_unit_vector(a2m_buf *b, double *x, size_t dims)
{
	double len = 0;
	const double *c = ncentres ? centres + (bench_rng() % (uint64_t)ncentres) * dims : NULL;
	for (size_t i = 0; i < dims; i++) {
		x[i] = c ? c[i] + 0.5 * gaussian() / sqrt((double)dims) : gaussian();
		len += x[i] * x[i];
	}
	len = sqrt(len);
	a2m_buf_put(b, "[", 1);
	for (size_t i = 0; i < dims; i++) {
		char num[16], *p = num;
		double v = x[i] / len;
		if (i)
			*p++ = ',';
		if (v < 0)
			*p++ = '-', v = -v;
		uint64_t q = (uint64_t)llround(v * 1e9);
		*p++ = (char)('0' + q / 1000000000u);
		*p++ = '.';
		q %= 1000000000u;
		for (uint64_t d = 100000000u; d; d /= 10)
			*p++ = (char)('0' + (q / d) % 10);
		a2m_buf_put(b, num, (size_t)(p - num));
	}
	a2m_buf_put(b, "]", 1);
}

/* Loads n records with vectors, batch per call; the elapsed ms, or -1. */
static double load_vectors(a2m *h, long n, long batch, size_t dims)
{
	a2m_buf b = {0};
	double *x = malloc(dims * sizeof *x);
	double t0 = bench_now_ms();
	a2m_progress *p = a2m_progress_start("a2m bench loading", "records", n);
	for (long done = 0; x && done < n;) {
		b.len = 0;
		a2m_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\","
			   "\"params\":{\"records\":[");
		for (long k = 0; k < batch && done < n; k++, done++) {
			char head[96];
			snprintf(head, sizeof head, "%s{\"content\":\"vector record %ld\","
				 "\"tier\":\"semantic\",\"embedding\":", k ? "," : "", done);
			a2m_buf_puts(&b, head);
			put_unit_vector(&b, x, dims);
			a2m_buf_put(&b, "}", 1);
		}
		a2m_buf_puts(&b, "]}}");
		json_t *r = b.failed ? NULL : bench_call_text(h, "memory/remember", b.p, NULL);
		if (!r) {
			a2m_progress_erase(p);
			a2m_buf_free(&b);
			free(x);
			return -1;
		}
		json_decref(r);
		a2m_progress_update(p, done);
	}
	a2m_progress_erase(p);
	double ms = x ? bench_now_ms() - t0 : -1;
	a2m_buf_free(&b);
	free(x);
	return ms;
}

/*
** Times `queries` recalls by a random unit query vector, limit 10, and
** prints them under label. With text_of (the records loaded), each also
** has a text: the number of a random record, a rare term, so the figure is
** the vector search and the fusion of both rankings rather than BM25 over
** a common word (docs/RANKING.md). Returns 0, or -1 when a recall failed.
*/
static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
** dims 0: no query vector, and the text is a sentence of the corpus's words
** instead (a text recall the server embeds, with --embed-url). ids: NULL,
** or room for queries × 10 ids, which each recall's hits fill in order
** (strdup'd; NULL past its last).
*/
static int vector_recalls(a2m *h, long queries, size_t dims, long text_of, const char *label,
			  char **ids)
{
	double *lat = calloc((size_t)queries, sizeof *lat);
	double *cpu = calloc((size_t)queries, sizeof *cpu);
	double *x = malloc(dims * sizeof *x);
	a2m_buf b = {0};
	size_t hits = 0;
	int rc = lat && cpu && x ? 0 : -1;
	a2m_progress *p = a2m_progress_start("a2m bench recalling", "recalls", queries);
	for (long q = 0; q < queries && !rc; q++) {
		char head[160];
		a2m_progress_update(p, q);
		b.len = 0;
		if (!dims) {
			char words[100];
			bench_sentence(words, sizeof words);
			snprintf(head, sizeof head, ",\"query\":\"%.60s\"", words);
		} else if (text_of) {
			snprintf(head, sizeof head, ",\"query\":\"%ld\"",
				 (long)(bench_rng() % (uint64_t)text_of));
		} else {
			head[0] = '\0';
		}
		a2m_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/recall\","
			   "\"params\":{\"limit\":10");
		a2m_buf_puts(&b, head);
		if (dims) {
			a2m_buf_puts(&b, ",\"embedding\":");
			put_unit_vector(&b, x, dims);
		}
		a2m_buf_puts(&b, "}}");
		double c0 = cpu_ms();
		json_t *r = b.failed ? NULL : bench_call_text(h, "memory/recall", b.p, &lat[q]);
		cpu[q] = cpu_ms() - c0;
		if (!r)
			rc = -1;
		json_t *recs = json_object_get(r, "records");
		hits += json_array_size(recs);
		for (size_t k = 0; ids && k < 10; k++) {
			const char *id = json_string_value(json_object_get(json_array_get(recs, k), "id"));
			ids[q * 10 + (long)k] = id ? strdup(id) : NULL;
		}
		json_decref(r);
	}
	a2m_progress_erase(p);
	if (!rc && label) {
		bench_print_latency(label, lat, (size_t)queries);
		/* On a shared machine, what the process itself spent. */
		bench_print_latency("  its CPU time", cpu, (size_t)queries);
		printf("  %.1f hits/recall\n", (double)hits / (double)queries);
	}
	a2m_buf_free(&b);
	free(x);
	free(lat);
	free(cpu);
	return rc;
}

/*
** Recalls restricted to the empty working tier, n of them: each pays the
** owed lookup and embeds up to one batch, and ranks nothing. The elapsed
** ms of each into lat (n of them), or -1 when one failed.
*/
static int owed_recalls(a2m *h, long n, double *lat)
{
	for (long k = 0; k < n; k++) {
		json_t *r = bench_call(h, "memory/recall",
				       json_pack("{sssssi}", "query", "backfill", "tier", "working",
						 "limit", 1), &lat[k]);
		if (!r)
			return -1;
		json_decref(r);
	}
	return 0;
}

/* The text recalls of `a2m bench vectors --embed-url` (see the top of this file). */
static int bench_generated(int sqlite, long records, long queries, const char *url)
{
	const char *path = sqlite ? "/tmp/a2m-bench-generated.db" : NULL;
	if (path)
		bench_remove_db(path);
	bench_open_opts o = {.path = path, .embed_url = url, .helper_threads = -1};
	a2m *h = bench_open_with(&o);
	if (!h)
		return A2M_EXIT_ERROR;
	long batch = 1000, calls = (records + batch - 1) / batch;
	double load_ms = bench_load(h, records, batch, bench_text_record, "semantic");
	/* Each write paid one batch of 64; what is left is owed. */
	long owed = records - 64 * calls, rounds = owed > 0 ? (owed + 63) / 64 : 0;
	double *lat = calloc((size_t)rounds + 8, sizeof *lat);
	if (load_ms < 0 || !lat || owed_recalls(h, rounds, lat) != 0) {
		free(lat);
		a2m_close(h);
		return A2M_EXIT_ERROR;
	}
	double backfill = 0;
	for (long k = 0; k < rounds; k++)
		backfill += lat[k];
	printf("a2m bench vectors --embed-url: %ld text records (%s), embedded by %s\n", records,
	       sqlite ? "sqlite, synchronous=FULL" : "memory", url);
	printf("  load      %.0f ms (calls of %ld, each embedding one batch of 64)\n", load_ms,
	       batch);
	if (rounds)
		printf("  backfill  %ld owed in %ld recalls: %.0f ms, %.2f ms per batch of 64\n",
		       owed, rounds, backfill, backfill / (double)rounds);
	bench_print_memory("after backfill:");
	int rc = owed_recalls(h, 8, lat);
	if (!rc)
		bench_print_latency("nothing owed (lookup + 1 query text)", lat, 8);
	if (!rc)
		rc = vector_recalls(h, queries, 0, 0, "recall (text, embedded, limit 10)", NULL);
	free(lat);
	a2m_close(h);
	if (path)
		bench_remove_db(path);
	return rc ? A2M_EXIT_ERROR : A2M_EXIT_OK;
}

/* The share of exact's ids (10 per query) that approx also returned, per query. */
static void print_recall_at_10(char **exact, char **approx, long queries)
{
	double sum = 0, worst = 1;
	for (long q = 0; q < queries; q++) {
		int want = 0, got = 0;
		for (int i = 0; i < 10; i++) {
			const char *id = exact[q * 10 + i];
			if (!id)
				continue;
			want++;
			for (int j = 0; j < 10; j++)
				if (approx[q * 10 + j] && strcmp(approx[q * 10 + j], id) == 0) {
					got++;
					break;
				}
		}
		double r = want ? (double)got / want : 1;
		sum += r;
		worst = r < worst ? r : worst;
	}
	printf("  recall@10 against exact: %.4f on average over %ld queries (worst %.2f)\n",
	       sum / (double)queries, queries, worst);
}

/*
** The vector recalls in both modes on the one store, the same queries
** (seeded alike): exact (the default), then quantized with its pool,
** and recall@10 of the second against the first. Each mode's first
** recall, which builds what it reads (SQLite's rows, the codes), is
** timed apart, before, with another query.
*/
static int vector_modes(a2m *h, long queries, size_t dims, long pool)
{
	char **exact = calloc((size_t)queries * 10, sizeof *exact);
	char **approx = calloc((size_t)queries * 10, sizeof *approx);
	char label[96];
	int rc = exact && approx ? 0 : -1;
	for (int mode = 0; mode < 2 && !rc; mode++) {
		a2m_server_bench_vector_exact(mode == 0);
		bench_seed(2 + (uint64_t)mode);
		double t0 = bench_now_ms();
		if ((rc = vector_recalls(h, 1, dims, 0, NULL, NULL)))
			break;
		printf("first %s recall (builds what it reads): %.1f ms\n",
		       mode ? "quantized" : "exact", bench_now_ms() - t0);
		bench_seed(1);
		snprintf(label, sizeof label, mode ? "recall (vector, limit 10, quantized, pool %ld"
			 " per result)" : "recall (vector, limit 10, exact)", pool);
		rc = vector_recalls(h, queries, dims, 0, label, mode ? approx : exact);
	}
	a2m_server_bench_vector_exact(0);
	if (!rc)
		print_recall_at_10(exact, approx, queries);
	for (long i = 0; i < queries * 10 && exact && approx; i++) {
		free(exact[i]);
		free(approx[i]);
	}
	free(exact);
	free(approx);
	return rc;
}

int a2m_bench_vectors(int argc, char **argv)
{
	long records = 100000, queries = 50, pool = 20;
	size_t dims = 384;
	const char *db = NULL, *embed_url = NULL;
	int sqlite = 0, read_only = 0;
	for (int i = 1; i < argc; i++) {
		if (bench_engine_flag(argc, argv, &i, &sqlite, &db))
			continue;
		if (strcmp(argv[i], "--embed-url") == 0 && i + 1 < argc) {
			embed_url = argv[++i];
			continue;
		}
		if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
			records = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--dims") == 0 && i + 1 < argc)
			dims = (size_t)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--queries") == 0 && i + 1 < argc)
			queries = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--read-only") == 0)
			read_only = 1;
		else if (strcmp(argv[i], "--pool") == 0 && i + 1 < argc)
			pool = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--clusters") == 0 && i + 1 < argc)
			ncentres = strtol(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: a2m bench vectors [--records N] [--dims D] [--queries Q]"
				" [--engine memory|sqlite] [--db PATH] [--read-only] [--pool P]"
				" [--clusters C] [--embed-url URL]\n");
			return A2M_EXIT_USAGE;
		}
	}
	if (records < 1 || queries < 1 || dims < 1 || dims > 65536 || pool < 1 || pool > 100000 ||
	    ncentres < 0 || ncentres > 1000000)
		return A2M_EXIT_USAGE;
	if (ncentres) {
		if (!(centres = malloc((size_t)ncentres * dims * sizeof *centres)))
			return A2M_EXIT_ERROR;
		bench_seed(7);
		for (size_t i = 0; i < (size_t)ncentres * dims; i++)
			centres[i] = gaussian() / sqrt((double)dims);
	}
	if (embed_url)
		return bench_generated(sqlite, records, queries, embed_url);
	const char *tmp = "/tmp/a2m-bench-vectors.db";
	int loaded;
	bench_seed(0);
	a2m *h = bench_open_kept(sqlite, db, tmp, pool, &loaded);
	if (!h)
		return A2M_EXIT_ERROR;
	double load_ms = 0;
	if (loaded && (load_ms = load_vectors(h, records, 500, dims)) < 0)
		return A2M_EXIT_ERROR;
	long long count = bench_store_count(h);
	if (read_only && sqlite) {
		a2m_close(h);
		bench_open_opts o = {.path = db ? db : tmp, .read_only = 1, .helper_threads = -1,
				     .vector_pool = pool};
		if (!(h = bench_open_with(&o)))
			return A2M_EXIT_ERROR;
	}
	printf("a2m bench vectors: %lld records x %zu dims (%s%s), %ld recalls by a query vector,"
	       " limit 10\n", count, dims, sqlite ? "sqlite, synchronous=FULL" : "memory",
	       read_only && sqlite ? ", read-only: no touch" : "", queries);
	if (loaded)
		printf("  load    %.0f ms (%.0f records/s, batches of 500)\n", load_ms,
		       (double)records / (load_ms / 1000.0));
	else
		printf("  load    (reused %s)\n", db);
	bench_print_memory("after load:");
	if (vector_modes(h, queries, dims, pool) ||
	    vector_recalls(h, queries, dims, records, "recall (text + vector, limit 10)", NULL))
		return A2M_EXIT_ERROR;
	bench_print_memory("at the end:");
	a2m_close(h);
	if (sqlite && !db)
		bench_remove_db(tmp);
	return A2M_EXIT_OK;
}
