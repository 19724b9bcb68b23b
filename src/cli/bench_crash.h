/*
** bench_crash.h — what the two files of `a2m bench crash` share, for them
** only: bench_crash.c (the run: the killer thread, the iterations, the
** servers started and stopped, `a2m check` on the file) and
** bench_crash_work.c (the model of what was acknowledged, the workload
** that grows it, and its verification after each restart).
*/
#ifndef A2M_BENCH_CRASH_H
#define A2M_BENCH_CRASH_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "cli/bench.h"
#include "cli/bench_proc.h"
#include "client/client_json.h"

#define SESSIONS   6
#define KEYS       40   /* per key space */
#define CLIENT_MS  60000

/* ---- what the test knows ------------------------------------------------- */

/* One record the test wrote, as it was told it is. */
typedef struct krec {
	char    *id;
	int      key_space, key_no;  /* key_space < 0: no key */
	int      present;            /* acknowledged stored (1) or forgotten (0) */
	int      flying;             /* part of the request in flight */
	int64_t  revision;           /* keyed: acknowledged revision; -1 unknown yet */
	uint64_t hash;               /* keyed: of its acknowledged content */
} krec;

enum { F_NONE, F_REMEMBER, F_FORGET, F_KEYED, F_OTHER };

/* The one request sent and not answered. */
typedef struct flight {
	int         kind;
	const char *method;
	size_t     *recs;     /* remember: the new records; forget: those asked to go */
	size_t      n, cap;
	int         key_space, key_no;
	uint64_t    new_hash; /* keyed: the content sent */
	int         big;      /* a remember of 64 records or more */
} flight;

typedef struct model {
	krec   *v;
	size_t  n, cap;
	size_t *slots;        /* id hash table: index + 1; 0 empty */
	size_t  nslots;
	size_t  present;
	long    keyed[2][KEYS];   /* the record holding each key, or -1 */
	flight  f;
	int64_t next_id;
	int64_t acknowledged;     /* writes acknowledged in all */
} model;

static const char *const key_spaces[2] = {"skill", "fact"};
static const char *const key_tiers[2] = {"procedural", "semantic"};

/* ---- the run ---------------------------------------------------------------- */

/*
** What a kill may be aimed at: the delay then runs from the moment such a
** request is sent (and is short), rather than from the start of the work.
*/
enum { T_NONE, T_BATCH, T_CONSOLIDATE, T_CLOSE, T_MIRROR, T_RECALL, T_KINDS };
/* Where kills landed: the method in flight, or between two calls. */
#define MAX_LANDINGS 24
typedef struct landing {
	char name[64];
	int  n;
} landing;

typedef struct run {
	bench_prng  rng;
	uint64_t    seed;
	char        dir[512], db[600], config[600], log[600];
	double      max_delay_ms;
	int         http_every;
	size_t      max_records;
	model       m;
	landing     landed[MAX_LANDINGS];
	int         nlanded;
	char        why[1024];   /* the first failure */
	/* The killer: SIGKILL to pid at deadline, unless disarmed first. */
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	pid_t       victim;
	struct timespec deadline;
	int         armed, fired, quit;
	int64_t     threads_at_kill;  /* the server's threads just before the kill */
	pid_t       pid;              /* the server of the iteration */
	int         target;           /* T_NONE, or what the kill waits for */
	double      target_ms;        /* its delay from that request's sending */
	int         target_armed;
	pthread_t   killer;
	/* Evidence of where kills landed, from outside the server. */
	int         helper_kills;     /* a helper thread (analysis, merge ahead) was running */
	int         mirror_lagged;    /* the check after the kill found the mirror behind */
	int         mirror_torn;      /* a temporary mirror file was left half written */
	int         no_store;         /* a kill in a first open left none (no file, no schema,
	                                 or a hot journal of its making) */
} run;

/* ---- bench_crash.c ---- */

/* Records the run's first failure (later ones are dropped). */
void bench_crash_fail(run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Arms the killer: SIGKILL to pid in ms milliseconds, unless disarmed first. */
void bench_crash_arm(run *r, pid_t pid, double ms);

/* ---- bench_crash_work.c ---- */

/*
** Sends one request (params: the caller's reference, taken) and waits for
** its answer: 1 with *result (the caller's reference) when answered, 0 when
** the connection died (the kill), -1 on an error answer (recorded).
*/
int bench_crash_call(run *r, a2m_client *c, const char *method, json_t *params,
		     json_t **result);

/* One request of the workload drawn and sent; the model updated: as bench_crash_call. */
int bench_crash_step(run *r, a2m_client *c);

/*
** After a restart: every acknowledged record, key and forget checked
** through the protocol, the request in flight settled. 1 when all holds,
** 0 when the server died meanwhile, -1 on a failure (recorded).
*/
int bench_crash_verify(run *r, a2m_client *c);

/* Frees what the model holds. */
void bench_crash_model_free(model *m);

#endif
