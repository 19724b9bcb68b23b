/*
** bench.h — the benchmarks of bench_store.c (vectors, timeline, remember),
** and bench_http.c (startup, and corpus for bench/http.sh), and the helpers
** they share. bench.c (quality, latency) hands every subcommand it does not
** know to a2m_bench_more().
**
** Every figure goes through the real server in this process (a2m_handle):
** a JSON-RPC string in, a JSON-RPC string out, as an embedding program would
** call it. Figures are printed, never asserted (DESIGN §7).
*/
#ifndef A2M_CLI_BENCH_H
#define A2M_CLI_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "a2m.h"
#include "a2m_client.h"
#include "util/phase.h"

/*
** Runs `a2m bench NAME ...` (argv[0] is NAME) for the subcommands of
** bench_store.c and bench_http.c. Returns the exit status, or -1 when NAME
** is none of them.
*/
int a2m_bench_more(int argc, char **argv);

/* Their part of `a2m bench --help`: the usage lines, and what each measures. */
extern const char a2m_bench_more_usage[];
extern const char a2m_bench_more_help[];

/* bench_postgres.c: `a2m bench postgres` (argv[0] "postgres"); the exit status. */
int a2m_bench_postgres(int argc, char **argv);

/* bench_vectors.c: `a2m bench vectors` (argv[0] "vectors"); the exit status. */
int a2m_bench_vectors(int argc, char **argv);

/* ---- bench_store.c's helpers, shared with bench_vectors.c ---- */

/* Prints the process's resident memory (VmHWM, VmRSS), labelled when. */
void bench_print_memory(const char *when);

/* Records in the store: the sum of describe's tier counts, or -1. */
long long bench_store_count(a2m *h);

/* Makes one record for a loader; i counts from 0. Returns NULL on OOM. */
typedef json_t *(*bench_make_record)(long i, void *ctx);

/*
** Remembers n records made by make, batch per call. Returns the elapsed
** ms, or -1 after printing the error.
*/
double bench_load(a2m *h, long n, long batch, bench_make_record make, void *ctx);

/* A record of a Zipf sentence (bench_sentence); ctx, when not NULL, its tier name. */
json_t *bench_text_record(long i, void *ctx);

/*
** Opens the store of a benchmark. db given and present: used as it is
** (*loaded = 0). Otherwise a fresh one (*loaded = 1): db, or tmp_db for
** sqlite, removed first. vector_pool: the quantized mode's pool (0: the
** default). NULL after printing why it could not be opened.
*/
a2m *bench_open_kept(int sqlite, const char *db, const char *tmp_db, long vector_pool,
		     int *loaded);

/* Parses an --engine or --db argument at argv[*i]; returns 1 if taken. */
int bench_engine_flag(int argc, char **argv, int *i, int *sqlite, const char **db);

/* bench_http.c: `a2m bench corpus` (the bodies bench/http.sh posts) and
** `a2m bench startup`. argv[0] is the subcommand; they return exit statuses. */
int a2m_bench_corpus(int argc, char **argv);
int a2m_bench_startup(int argc, char **argv);

/* bench_corpus.c: `a2m bench corpus-index`, what a2m corpus costs. */
int a2m_bench_corpus_index(int argc, char **argv);
/* bench_federate.c: `a2m bench federate`, what the router costs. */
int a2m_bench_federate(int argc, char **argv);

/* bench_crash.c: `a2m bench crash`; bench_soak.c: `a2m bench soak`. */
int a2m_bench_crash(int argc, char **argv);
int a2m_bench_soak(int argc, char **argv);

/*
** bench_memory.c: `a2m bench memory`, the long-conversation memory
** benchmark (docs/BENCHMARKS.md). argv[0] is "memory"; returns the exit
** status.
*/
int a2m_bench_memory(int argc, char **argv);

/* ---- bench_common.c: the helpers of every benchmark ---- */

/* A monotonic clock in milliseconds. */
double bench_now_ms(void);

/*
** The machine's pace: the milliseconds a fixed single-thread loop (FNV-1a
** over 32 MiB, best of three) takes now. This machine's speed wanders by
** up to 2x from minute to minute with nothing else running, so a figure
** means little without the pace it was taken at (docs/BENCHMARKS.md).
*/
double bench_pace_ms(void);

/*
** Prints the allocator this binary runs on, under the header of a figure:
** "mimalloc 2.0.9" when the Makefile linked mimalloc (ALLOC=mimalloc), else
** "glibc malloc".
*/
void bench_print_allocator(void);

/*
** Sends one request and returns its "result" (the caller json_decref()s it),
** or NULL after printing the error on stderr. When ms is not NULL it gets the
** time a2m_handle() took: the server's work, string in to string out,
** without building the request or parsing the response here.
*/
json_t *bench_call(a2m *h, const char *method, json_t *params, double *ms);

/* bench_call with the params already in text (a JSON object). */
json_t *bench_call_text(a2m *h, const char *method, const char *text, double *ms);

/* How a benchmark's in-process server is opened (bench_open_with). */
typedef struct bench_open_opts {
	const char *path;        /* the SQLite file; NULL: the memory engine */
	const char *postgres;    /* a PostgreSQL deployment instead (libpq string) */
	int         sync_normal; /* synchronous=NORMAL instead of FULL */
	int         read_only;
	const char *ranking;     /* NULL: the default (bm25) */
	const char *embed_url;   /* an Ollama-compatible embedder; NULL: none */
	int         helper_threads;  /* -1: the default */
	const char *federate;    /* a merge: a router over four in-process backends
	                            (tiers semantic, semantic2..4) instead; NULL: none */
	long        vector_pool; /* above 0: vector_search quantized with this pool */
	long        postings_cache_mb; /* above 0: the option postings_cache_mb; 0: the default */
} bench_open_opts;

/*
** Opens an in-process server with the default configuration but what o
** says. Prints the error and returns NULL on failure.
*/
a2m *bench_open_with(const bench_open_opts *o);

/* bench_open_with() for path (NULL: memory), with the default ranking,
** no embedder and the default helper threads. */
a2m *bench_open(const char *path, int sync_normal, int read_only);

/*
** The disk's own pace for durable writes: fsyncs a second of a file beside
** path (a 4 KiB pwrite then fdatasync, n times, over 16 pages), the
** ceiling of a one-writer durable commit rate. -1 when the file cannot
** be written.
*/
double bench_fsync_rate(const char *path, int n);

/* ---- bench_lone.c ---- */

/*
** a2m bench remember --serve stdio|http ...: lone remembers through a
** server process of its own (bench_lone.c says which options). Returns an
** A2M_EXIT_* code.
*/
int a2m_bench_remember_serve(int argc, char **argv);

/*
** One lone remember of record i (its text made from i; tier NULL: none
** given) through c, waiting for the answer. Returns 0 when the server
** acknowledged it, else -1 after saying why on stderr.
*/
int bench_lone_call(a2m_client *c, long i, const char *tier);

/* The 1-minute load average, or -1. */
double bench_load_average(void);

/*
** bench_fsync.c: `a2m bench fsync`, the durable lone commit's ceiling on
** this disk, by the frames a commit writes, bare and through stdio; and
** `a2m bench fsync-peer LOG PAGES`, the stdio peer it starts. argv[0] is
** the subcommand; each returns an A2M_EXIT_* code.
*/
int a2m_bench_fsync(int argc, char **argv);
int a2m_bench_fsync_peer(int argc, char **argv);

/*
** The disk's pace for n durable commits of pages frames each, made as the
** store makes them (bench_fsync.c), in a file beside path: commits a
** second, and their median time in *p50_ms; -1 when the file cannot be
** written.
*/
double bench_commit_rate(const char *path, int pages, long n, double *p50_ms);

/* Removes a SQLite file and its -wal, -shm and -journal companions. */
void bench_remove_db(const char *path);

/* A deterministic generator (xorshift64); bench_seed() restarts it. */
uint64_t bench_rng(void);
void bench_seed(uint64_t seed);

/*
** Text as `a2m bench latency` makes it, so the corpora compare: a record of
** 8 to 17 words, a third English function words, the rest drawn by Zipf's
** law from a made-up 20 000-word vocabulary; a query of 2 or 3 vocabulary
** words, also by Zipf's law. out gets at most cap bytes, NUL included.
*/
void bench_sentence(char *out, size_t cap);
void bench_query_text(char *out, size_t cap);

/*
** A query of three of the vocabulary's twenty most frequent words (the
** commonest is in about half the records): the queries that score every
** candidate without dynamic pruning (`bench latency --frequent`).
*/
void bench_query_frequent(char *out, size_t cap);

/*
** SQLite FTS5 beside a2m in `bench latency --fts5` (bench_fts5.c): a table
** at path (NULL: in memory; removed again by close unless keep, when an
** existing table is opened as it is, for `bench latency --db` to reuse)
** holding the records added, queried with bm25() for the best ten holding
** any query word. open prints its error and returns NULL; rows counts the
** table (-1 on an error); add and flush return 0 or -1 (add commits every
** 1 000 rows; flush commits the rest); query adds the rows it got to *hits
** and its time to *ms.
*/
typedef struct bench_fts5 bench_fts5;
bench_fts5 *bench_fts5_open(const char *path, int keep);
long        bench_fts5_rows(bench_fts5 *f);
int         bench_fts5_add(bench_fts5 *f, const char *text);
int         bench_fts5_flush(bench_fts5 *f);
int         bench_fts5_query(bench_fts5 *f, const char *text, double *ms, long *hits);
void        bench_fts5_close(bench_fts5 *f);

/* Orders doubles ascending, for qsort. */
int         bench_cmp_double(const void *a, const void *b);

/* p (0..1) of n sorted values. */
double bench_percentile(const double *sorted, size_t n, double p);

/*
** bench_stalls.c: each call's time in `bench remember`, on a CPU, waiting
** for one and blocked, phase by phase (util/phase.h), and the report of
** the calls over 100 ms. init allocates for n calls (0 or -1); before and
** after bracket call number call (ms: its time in a2m_handle), counting
** the calling thread's phases meanwhile; free stops that and frees.
*/
typedef struct bench_calls {
	size_t          n;
	double         *ms;      /* in a2m_handle */
	double         *cpu;     /* the calling thread on a CPU meanwhile */
	double         *queued;  /* runnable, waiting for a CPU; -1: unknown */
	a2m_phase_time *phases;  /* A2M_PHASE_COUNT per call */
	a2m_phase_clock clock;
	int             watching;
} bench_calls;
int  bench_calls_init(bench_calls *c, size_t n);
void bench_calls_before(bench_calls *c);
void bench_calls_after(bench_calls *c, size_t call, double ms);
void bench_calls_free(bench_calls *c);

/*
** The calls' p99, worst and count over 100 ms per 100 000 records (per:
** records a call); nothing for a run of 100 000 records or fewer.
*/
void bench_print_windows(const bench_calls *c, long per);

/*
** The calls over 100 ms: how many, the worst and its phases, their time
** by phase; then the same less each call's wait for a CPU, one line per
** call left over 100 ms naming the phases it was in.
*/
void bench_print_stalls(const bench_calls *c, long per);

/* Sorts n latencies (ms) and prints "label  p50 .. p99 .. mean .." on one line. */
void bench_print_latency(const char *label, double *ms, size_t n);

#endif
