/*
** bench_proc.h — servers started as processes of their own, for the runs
** that watch them from outside (bench_crash.c, bench_soak.c): started
** over stdio or HTTP, found by pid, sampled in /proc, killed; and `a2m
** check` run on their file.
*/
#ifndef A2M_CLI_BENCH_PROC_H
#define A2M_CLI_BENCH_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "a2m_client.h"
#include "util/buf.h"

/*
** The configuration of the crash and soak runs: a tier layout that keeps
** records moving (a per-session working tier of 24 spilling whole groups
** into an episodic tier of 400, which spills and promotes into semantic;
** nothing is ever dropped) and a procedural tier, mirrored as files; a
** recall or timeline limit that lets a run read everything back.
*/
extern const char bench_moving_config[];

/* This binary's absolute path (servers and checks are started from it). Cannot fail. */
const char *bench_self(void);

/*
** Starts `a2m serve ARGS...` (args NULL-terminated, without "a2m serve")
** over stdio: *c the client (its timeout timeout_ms), *pid the server's
** process. Returns 0, or -1 after printing why on stderr.
*/
int bench_spawn_stdio(char *const *args, int timeout_ms, a2m_client **c, pid_t *pid);

/*
** Starts `a2m serve --http 127.0.0.1:0 ARGS...` with its stderr in the
** file log, and waits (at most 60 s) for its start-up line: *pid, and the
** URL it listens on in url (size bytes). Returns 0, or -1 after printing
** why (and the log) on stderr, the process killed.
*/
int bench_spawn_http(char *const *args, const char *log, pid_t *pid, char *url, size_t size);

/*
** Waits for pid to exit, at most ms milliseconds (ms <= 0: forever).
** Returns its exit code, 128 + the signal that ended it, or -1 when it is
** still running (it is left running).
*/
int bench_wait(pid_t pid, int ms);

/* One look at a process in /proc. */
typedef struct bench_sample {
	int64_t rss_kib;   /* VmRSS */
	int64_t fds;       /* entries of /proc/PID/fd */
	int64_t threads;   /* Threads */
} bench_sample;

/* Fills *out from /proc/pid. Returns 0, or -1 when the process is gone. */
int bench_sample_proc(pid_t pid, bench_sample *out);

/*
** Runs this binary with args (NULL-terminated, after its own name), its
** stdout into *out (appended; stderr inherited). Returns its exit status
** as bench_wait does, or -1 when it could not run.
*/
int bench_run_self(char *const *args, a2m_buf *out);

/* Removes dir and everything in it (rm -rf). Cannot fail; what is left stays. */
void bench_remove_tree(const char *dir);

/*
** A seeded generator of the run's own (xorshift64*), apart from
** bench_rng's, so the kill delays and choices of a run follow from its
** seed whatever else draws numbers.
*/
typedef struct bench_prng {
	uint64_t s;
} bench_prng;

void     bench_prng_seed(bench_prng *r, uint64_t seed);
uint64_t bench_prng_next(bench_prng *r);
/* Uniform in [0, n) (n > 0); uniform in [0, 1). */
uint64_t bench_prng_below(bench_prng *r, uint64_t n);
double   bench_prng_unit(bench_prng *r);

#endif
