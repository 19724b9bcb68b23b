/*
** bench_fsync.c — `a2m bench fsync`: what the disk allows a durable lone
** writer, with the pages a commit writes.
**
**   a2m bench fsync [--db PATH] [--pages A-B] [--syncs N] [--no-stdio]
**
** A durable lone remember on SQLite (group commit, the default) appends
** its commit's frames to the log with one pwrite (sqlite_walvfs.c: N
** frames of a 24-byte header and a 4 KiB page each, at the log's end),
** then fdatasync()s the log through a descriptor of its own
** (sqlite_sync.c). While the log makes its first pass through its file it
** grows 1 MiB of zeros at a time past the frames (wal_ahead); when a
** checkpoint let it restart, SQLite writes a new 32-byte header at its
** start and syncs it before the first frames (it does so at NORMAL too),
** and the commits after overwrite blocks the file has. The probe does
** exactly that, with nothing else: for each N (default 1 to 12) it
** makes --syncs (default 2 000) commits of N frames in a fresh file beside
** PATH, restarting the log every RESTART_FRAMES frames (where a lone
** writer's log restarted, measured: docs/BENCHMARKS.md), and prints the
** commits a second and each one's time. That is the most a lone durable
** writer of N pages a commit can do on this disk; and the same commits
** synced by a thread while the caller spins, as the store's sync thread
** syncs while the writer runs its capacity pass (capacity_after_sync).
**
** With the stdio round trip (unless --no-stdio): the same commits made by
** a peer process (`a2m bench fsync-peer`, not listed), one for each line
** our client (src/client/) sends it over stdio, each call waiting for its
** answer: the client sends a remember as `bench remember --serve stdio`
** does, the peer reads it (looking again for a while before it sleeps, as
** the server does: util/spin.h), parses it, commits N frames and answers.
** That is the ceiling of the whole path: everything a2m serve does but
** the store's own work. Compare `bench remember --serve stdio --engine
** sqlite`, which prints the frames its commits appended.
*/
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "a2m_client.h"
#include "cli/bench.h"
#include "cli/bench_proc.h"
#include "cli/cli.h"
#include "util/fd.h"
#include "util/spin.h"
#include "util/thread.h"

/* A frame of the log: its header and a page (the store's 4 KiB pages). */
#define FRAME_BYTES (24 + 4096)
/* The log's own header, rewritten at each restart. */
#define HEADER_BYTES 32
/* The log's growth ahead of a durable store's frames (sqlite_walvfs.c). */
#define AHEAD_BYTES (1024 * 1024)
#define ZERO_CHUNK 65536
/*
** Where the log restarts, in frames: the checkpoint mark of a store with
** an index (sqlite_checkpoint.c); a lone writer into full default tiers
** (~9 frames a commit) restarted its log at 41.8 MB, ~10 150 frames
** (strace of `a2m serve --db F` fed 1 300 lone remembers).
*/
#define RESTART_FRAMES 10000
#define PAGES_MAX 64

/* A log written as a durable lone writer's is. */
typedef struct probe_log {
	int    fd;      /* the writes (the main connection's descriptor) */
	int    sync_fd; /* the syncs (group commit's own descriptor) */
	off_t  end;     /* where the next commit's frames go */
	off_t  size;    /* the file's size */
	off_t  restart; /* the log restarts once a commit would pass this */
	size_t bytes;   /* a commit's frames */
	char  *frames;
} probe_log;

static const char zeros[ZERO_CHUNK];

static int write_at(int fd, const void *buf, size_t n, off_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, buf, n, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf = (const char *)buf + w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

static int sync_fd(int fd)
{
	while (fdatasync(fd) != 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

/* The log's header, then its sync, as SQLite writes one at a (re)start. */
static int probe_header(probe_log *p)
{
	char header[HEADER_BYTES];
	memset(header, 0x37, sizeof header);
	if (write_at(p->fd, header, sizeof header, 0) != 0 || sync_fd(p->fd) != 0)
		return -1;
	p->end = HEADER_BYTES;
	if (p->size < p->end)
		p->size = p->end;
	return 0;
}

static void probe_close(probe_log *p, const char *name)
{
	if (p->fd >= 0)
		close(p->fd);
	if (p->sync_fd >= 0)
		close(p->sync_fd);
	free(p->frames);
	unlink(name);
}

/* A fresh log in the file name, for commits of pages frames. Returns 0 or -1. */
static int probe_open(probe_log *p, const char *name, int pages)
{
	memset(p, 0, sizeof *p);
	p->fd = open(name, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
	p->sync_fd = p->fd >= 0 ? open(name, O_RDWR | O_CLOEXEC) : -1;
	p->bytes = (size_t)pages * FRAME_BYTES;
	p->restart = HEADER_BYTES + (off_t)RESTART_FRAMES * FRAME_BYTES;
	p->frames = malloc(p->bytes);
	if (p->fd < 0 || p->sync_fd < 0 || !p->frames || probe_header(p) != 0) {
		probe_close(p, name);
		return -1;
	}
	for (size_t i = 0; i < p->bytes; i++)
		p->frames[i] = (char)(i * 131 + 7);
	return 0;
}

/* A durable commit's writes: the frames in one pwrite, and the growth. */
static int probe_write(probe_log *p)
{
	if (p->end + (off_t)p->bytes > p->restart && probe_header(p) != 0)
		return -1;
	if (write_at(p->fd, p->frames, p->bytes, p->end) != 0)
		return -1;
	p->end += (off_t)p->bytes;
	if (p->end >= p->size) {
		off_t to = (p->end / AHEAD_BYTES + 1) * AHEAD_BYTES;
		for (off_t off = p->end; off < to;) {
			size_t n = to - off < ZERO_CHUNK ? (size_t)(to - off) : ZERO_CHUNK;
			if (write_at(p->fd, zeros, n, off) != 0)
				return -1;
			off += (off_t)n;
		}
		p->size = to;
	}
	return 0;
}

/* One durable commit: its writes, then the sync. */
static int probe_commit(probe_log *p)
{
	return probe_write(p) || sync_fd(p->sync_fd);
}

/*
** A thread that syncs while the caller keeps its CPU busy: the store's
** sync thread while the writer runs its capacity pass (sqlite_sync.c,
** capacity_after_sync), with nothing but the spin for the pass. On this
** virtual machine a sync whose thread sleeps alone often took a whole
** 4 ms tick, one begun while the CPU worked did not (docs/BENCHMARKS.md).
*/
typedef struct syncer {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	pthread_t       thread;
	int             fd;   /* to sync; -1: nothing asked */
	int             stop;
	int             rc;   /* the last sync's */
	atomic_int      done; /* the asked sync returned */
} syncer;

static void *syncer_run(void *arg)
{
	syncer *y = arg;
	pthread_mutex_lock(&y->mu);
	while (!y->stop) {
		if (y->fd < 0) {
			pthread_cond_wait(&y->cv, &y->mu);
			continue;
		}
		int fd = y->fd;
		y->fd = -1;
		pthread_mutex_unlock(&y->mu);
		int rc = sync_fd(fd);
		pthread_mutex_lock(&y->mu);
		y->rc = rc;
		atomic_store(&y->done, 1);
	}
	pthread_mutex_unlock(&y->mu);
	return NULL;
}

static int syncer_start(syncer *y)
{
	memset(y, 0, sizeof *y);
	y->fd = -1;
	if (pthread_mutex_init(&y->mu, NULL) != 0)
		return -1;
	if (pthread_cond_init(&y->cv, NULL) != 0) {
		pthread_mutex_destroy(&y->mu);
		return -1;
	}
	if (a2m_thread_start(&y->thread, syncer_run, y) != 0) {
		pthread_cond_destroy(&y->cv);
		pthread_mutex_destroy(&y->mu);
		return -1;
	}
	return 0;
}

static void syncer_stop(syncer *y)
{
	pthread_mutex_lock(&y->mu);
	y->stop = 1;
	pthread_cond_signal(&y->cv);
	pthread_mutex_unlock(&y->mu);
	pthread_join(y->thread, NULL);
	pthread_cond_destroy(&y->cv);
	pthread_mutex_destroy(&y->mu);
}

/* One durable commit synced by y while this thread spins. */
static int probe_commit_busy(probe_log *p, syncer *y)
{
	if (probe_write(p) != 0)
		return -1;
	pthread_mutex_lock(&y->mu);
	atomic_store(&y->done, 0);
	y->fd = p->sync_fd;
	pthread_cond_signal(&y->cv);
	pthread_mutex_unlock(&y->mu);
	while (!atomic_load(&y->done)) {
	}
	return y->rc;
}

double bench_commit_rate(const char *path, int pages, long n, double *p50_ms)
{
	char name[1024];
	snprintf(name, sizeof name, "%s-commit-probe-wal", path);
	double *ms = malloc((size_t)n * sizeof *ms);
	probe_log p;
	if (!ms || pages < 1 || pages > PAGES_MAX || probe_open(&p, name, pages) != 0) {
		free(ms);
		return -1;
	}
	int rc = 0;
	double t0 = bench_now_ms();
	for (long i = 0; i < n && !rc; i++) {
		double t = bench_now_ms();
		rc = probe_commit(&p);
		ms[i] = bench_now_ms() - t;
	}
	double total = bench_now_ms() - t0;
	probe_close(&p, name);
	qsort(ms, (size_t)n, sizeof *ms, bench_cmp_double);
	*p50_ms = bench_percentile(ms, (size_t)n, 0.5);
	free(ms);
	return rc || total <= 0 ? -1 : (double)n / (total / 1000.0);
}

/* The probe's file for pages frames a commit, beside path (name, cap bytes). */
static void probe_name(char *name, size_t cap, const char *path, int pages)
{
	snprintf(name, cap, "%s-fsync-probe-%d-wal", path, pages);
}

/*
** One row of the table: commits of one size, bare in this process and
** through a peer over stdio, each with its commits' times and the time
** they took in all.
*/
typedef struct probe_row {
	int         pages;
	char        name[1024];      /* the bare log */
	char        peer_name[1040]; /* the peer's */
	probe_log   log;
	int         open;
	a2m_client *peer;
	double     *bare_ms, *busy_ms, *via_ms;
	double      bare_total, busy_total, via_total;
} probe_row;

static void row_free(probe_row *r)
{
	if (r->open)
		probe_close(&r->log, r->name);
	/* The peer reads the end of its input and exits; its file is ours. */
	a2m_client_free(r->peer);
	if (r->peer)
		unlink(r->peer_name);
	free(r->bare_ms);
	free(r->busy_ms);
	free(r->via_ms);
}

/* The row's log and its peer, warmed up. Returns 0, or -1 after saying why. */
static int row_open(probe_row *r, const char *path, int pages, long syncs, int stdio)
{
	r->pages = pages;
	probe_name(r->name, sizeof r->name, path, pages);
	r->bare_ms = malloc((size_t)syncs * sizeof *r->bare_ms);
	r->busy_ms = malloc((size_t)syncs * sizeof *r->busy_ms);
	r->via_ms = malloc((size_t)syncs * sizeof *r->via_ms);
	if (!r->bare_ms || !r->busy_ms || !r->via_ms)
		return -1;
	if (probe_open(&r->log, r->name, pages) != 0) {
		fprintf(stderr, "a2m bench fsync: cannot write %s: %s\n", r->name, strerror(errno));
		return -1;
	}
	r->open = 1;
	if (!stdio)
		return 0;
	char n[16];
	snprintf(r->peer_name, sizeof r->peer_name, "%s-peer", r->name);
	snprintf(n, sizeof n, "%d", pages);
	char *argv[] = {(char *)bench_self(), "bench", "fsync-peer", r->peer_name, n, NULL};
	if (a2m_client_spawn_stdio(argv, &r->peer) != A2M_CLIENT_OK) {
		fprintf(stderr, "cannot start the peer: %s\n", a2m_client_spawn_errmsg());
		r->peer = NULL;
		return -1;
	}
	a2m_client_set_timeout(r->peer, 60000);
	int rc = 0;
	for (long i = 0; i < 20 && !rc; i++)  /* both ends started and warm */
		rc = bench_lone_call(r->peer, i, "semantic");
	return rc;
}

/* Commits [from, to) of a row: bare, synced by y while this thread
** spins, then through its peer. Returns 0 or -1. */
static int row_step(probe_row *r, syncer *y, long from, long to)
{
	double t0 = bench_now_ms();
	for (long i = from; i < to; i++) {
		double t = bench_now_ms();
		if (probe_commit(&r->log) != 0) {
			fprintf(stderr, "a2m bench fsync: writing %s: %s\n", r->name, strerror(errno));
			return -1;
		}
		r->bare_ms[i] = bench_now_ms() - t;
	}
	double tb = bench_now_ms();
	r->bare_total += tb - t0;
	for (long i = from; i < to; i++) {
		double t = bench_now_ms();
		if (probe_commit_busy(&r->log, y) != 0) {
			fprintf(stderr, "a2m bench fsync: writing %s: %s\n", r->name, strerror(errno));
			return -1;
		}
		r->busy_ms[i] = bench_now_ms() - t;
	}
	double t1 = bench_now_ms();
	r->busy_total += t1 - tb;
	if (!r->peer)
		return 0;
	for (long i = from; i < to; i++) {
		double t = bench_now_ms();
		if (bench_lone_call(r->peer, i, "semantic") != 0)
			return -1;
		r->via_ms[i] = bench_now_ms() - t;
	}
	r->via_total += bench_now_ms() - t1;
	return 0;
}

/* "rate (p50, p99 ms)" of n commits (sorted in place) in total ms. */
static void format_rate(char *out, size_t cap, double *ms, long n, double total)
{
	qsort(ms, (size_t)n, sizeof *ms, bench_cmp_double);
	snprintf(out, cap, "%.0f (%.3f, %.3f ms)", total > 0 ? (double)n / (total / 1000.0) : 0,
		 bench_percentile(ms, (size_t)n, 0.5), bench_percentile(ms, (size_t)n, 0.99));
}

/* "A-B" or "N" into *lo, *hi. Returns 0 or -1. */
static int parse_pages(const char *s, int *lo, int *hi)
{
	char *end;
	long a = strtol(s, &end, 10), b = a;
	if (*end == '-')
		b = strtol(end + 1, &end, 10);
	if (*end || a < 1 || b < a || b > PAGES_MAX)
		return -1;
	*lo = (int)a;
	*hi = (int)b;
	return 0;
}

/* Commits a round makes of each size, so that every size meets the disk's moods. */
#define ROUND 20

int a2m_bench_fsync(int argc, char **argv)
{
	const char *path = "/tmp/a2m-bench-fsync";
	long syncs = 2000;
	int lo = 1, hi = 12, stdio = 1, bad = 0;
	for (int i = 1; i < argc && !bad; i++) {
		if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
			path = argv[++i];
		else if (strcmp(argv[i], "--pages") == 0 && i + 1 < argc)
			bad = parse_pages(argv[++i], &lo, &hi);
		else if (strcmp(argv[i], "--syncs") == 0 && i + 1 < argc)
			bad = (syncs = strtol(argv[++i], NULL, 10)) < 1;
		else if (strcmp(argv[i], "--no-stdio") == 0)
			stdio = 0;
		else
			bad = 1;
	}
	if (bad) {
		fprintf(stderr, "usage: a2m bench fsync [--db PATH] [--pages A-B] [--syncs N]"
			" [--no-stdio]\n");
		return A2M_EXIT_USAGE;
	}
	int rows = hi - lo + 1, rc = 0;
	probe_row *row = calloc((size_t)rows, sizeof *row);
	if (!row)
		return A2M_EXIT_ERROR;
	for (int i = 0; i < rows && !rc; i++)
		rc = row_open(&row[i], path, lo + i, syncs, stdio);
	printf("a2m bench fsync: a durable lone commit of N frames (%d bytes each) as the store"
	       " writes it (one pwrite at the log's end, 1 MiB grown ahead, a restart every %d"
	       " frames), then fdatasync; %ld commits of each size, %d of each in turn,"
	       " beside %s (load average %.2f)\n", FRAME_BYTES, RESTART_FRAMES, syncs, ROUND,
	       path, bench_load_average());
	syncer y;
	if (!rc && syncer_start(&y) != 0) {
		fprintf(stderr, "a2m bench fsync: cannot start a thread\n");
		rc = -1;
	} else if (!rc) {
		for (long from = 0; from < syncs && !rc; from += ROUND)
			for (int i = 0; i < rows && !rc; i++)
				rc = row_step(&row[i], &y, from, from + ROUND < syncs ? from + ROUND : syncs);
		syncer_stop(&y);
	}
	if (!rc) {
		printf("  %5s  %-30s  %-30s  %s\n", "pages", "the disk alone: commits/s",
		       "synced while a CPU works", stdio ? "through stdio, a client and a peer: acks/s" : "");
		for (int i = 0; i < rows; i++) {
			char bare[64], busy[64], via[64] = "";
			format_rate(bare, sizeof bare, row[i].bare_ms, syncs, row[i].bare_total);
			format_rate(busy, sizeof busy, row[i].busy_ms, syncs, row[i].busy_total);
			if (stdio)
				format_rate(via, sizeof via, row[i].via_ms, syncs, row[i].via_total);
			printf("  %5d  %-30s  %-30s  %s\n", row[i].pages, bare, busy, via);
		}
		printf("  (each: commits/s (p50, p99 of a commit); the second column's sync runs on a\n"
		       "  thread while this one spins, as the store's sync thread while the writer works)\n");
		printf("  (load average %.2f after)\n", bench_load_average());
	}
	for (int i = 0; i < rows; i++)
		row_free(&row[i]);
	free(row);
	return rc ? A2M_EXIT_ERROR : A2M_EXIT_OK;
}

/* The peer's answer to the request in line: its id back, and a result. */
static int peer_answer(const char *line, size_t len)
{
	json_t *req = json_loadb(line, len, 0, NULL);
	json_t *resp = json_pack("{sssOs{s[s]}}", "jsonrpc", "2.0", "id",
				 req ? json_object_get(req, "id") : json_null(), "result", "ids",
				 "0193a5c2-7f00-7000-8000-000000000000");
	char *text = resp ? json_dumps(resp, JSON_COMPACT) : NULL;
	json_decref(resp);
	json_decref(req);
	if (!text)
		return -1;
	size_t n = strlen(text);
	text[n] = '\n';  /* over the terminator: one write a line */
	int rc = a2m_write_all(STDOUT_FILENO, text, n + 1);
	free(text);
	return rc;
}

/* Waits for input as the stdio server does: a spin of poll()s, then poll(). */
static int peer_wait(void)
{
	struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
	int64_t until = a2m_spin_until();
	while (a2m_spin_more(until)) {
		int pr = poll(&pfd, 1, 0);
		if (pr != 0)
			return pr;
	}
	return poll(&pfd, 1, -1);
}

int a2m_bench_fsync_peer(int argc, char **argv)
{
	if (argc != 3)
		return A2M_EXIT_USAGE;
	probe_log p;
	if (probe_open(&p, argv[1], atoi(argv[2])) != 0)
		return A2M_EXIT_ERROR;
	static char in[65536];
	size_t have = 0;
	int rc = 0;
	while (!rc) {
		if (peer_wait() < 0 && errno != EINTR)
			break;
		ssize_t got = read(STDIN_FILENO, in + have, sizeof in - have);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0)
			break;
		have += (size_t)got;
		char *nl, *at = in;
		while (!rc && (nl = memchr(at, '\n', have - (size_t)(at - in)))) {
			rc = probe_commit(&p) || peer_answer(at, (size_t)(nl - at));
			at = nl + 1;
		}
		have -= (size_t)(at - in);
		memmove(in, at, have);
		if (have == sizeof in)
			rc = -1;  /* a line longer than the buffer: not our client's */
	}
	/* The file is the client's to remove: it knows its name. */
	close(p.fd);
	close(p.sync_fd);
	free(p.frames);
	return rc ? A2M_EXIT_ERROR : A2M_EXIT_OK;
}
