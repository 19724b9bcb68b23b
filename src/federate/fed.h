/*
** fed.h — what the router's files share: the federation (its layout, its
** backends, its log and journal), a backend and how to call it, the
** per-request context, and each file's entry points in the order a
** request meets them (router.c dispatches to read.c, write.c and move.c;
** every one of them reaches a backend through backend.c).
*/
#ifndef A2M_FEDERATE_FED_H
#define A2M_FEDERATE_FED_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "a2m.h"
#include "a2m_client.h"
#include "events/event_log.h"
#include "stack/layout.h"
#include "util/error.h"

/* The kinds of backend (docs/FEDERATION.md, the configuration file). */
typedef enum fed_kind {
	FED_MEMORY,  /* an in-process handle on the memory engine */
	FED_SQLITE,  /* an in-process handle on a SQLite file */
	FED_STDIO,   /* a child spoken to over stdio */
	FED_HTTP,    /* a server reached over HTTP */
	FED_POSTGRES /* an in-process handle on a PostgreSQL deployment */
} fed_kind;

/* One backend: a whole A2M server holding the bytes of one or more tiers. */
typedef struct fed_backend {
	char           *name;       /* its key in the configuration */
	fed_kind        kind;
	a2m            *local;      /* FED_MEMORY, FED_SQLITE, FED_POSTGRES */
	a2m_client     *client;     /* FED_STDIO, FED_HTTP; NULL while down (stdio) */
	char          **argv;       /* FED_STDIO: the command, NULL-terminated */
	char           *url;        /* FED_HTTP; FED_SQLITE's path; FED_POSTGRES's connection string */
	char           *token;      /* FED_HTTP: bearer token, or NULL */
	char           *ranking;    /* in-process: the ranking option, or NULL */
	pthread_mutex_t mu;         /* one call at a time on client */
	int             down;       /* the last call failed at the transport */
	int64_t         retry_at;   /* stdio: when to spawn again (ms) */
	int             read_only;  /* it declared itself read-only */
	unsigned        caps;       /* what it declared (A2M_CAP_*) */
	json_t         *describe;   /* its describe result at start */
} fed_backend;

enum { FED_RRF, FED_RERANK };

typedef struct federation {
	char           *name;
	a2m_tier_layout layout;
	size_t         *tier_backend;   /* per tier of layout: index into backends */
	fed_backend    *backends;
	size_t          n_backends;
	int             merge;          /* FED_RRF or FED_RERANK */
	int             rrf_k;          /* 60 by default */
	int             deadline_ms;    /* recall's overall deadline */
	int64_t         pool;           /* rerank: candidates asked of each backend */
	unsigned        caps;           /* what the router declares */
	json_t         *limits;         /* the tightest of the backends' */
	int64_t         max_recall_limit, default_recall_limit, max_records_per_call;
	int64_t         dims;           /* the vectors' width once known; 0 before */
	json_t         *embeddings;     /* describe's embeddings object, or NULL */
	json_t         *xwhere;         /* describe's x-where object, or NULL */
	pthread_rwlock_t rw;            /* shared: reads; exclusive: writes and policy */
	pthread_mutex_t  log_mu;        /* the event log and the push channel */
	a2m_event_log  *events;
	a2m_notify_fn   notify;
	void           *notify_user;
	int             subscribed;
	json_t         *sub_kinds;
	char           *sub_owner;
	int             sub_scoped;
	char           *journal_path;
	FILE           *journal;
	uint64_t        next_move;
#ifdef A2M_TEST_HOOKS
	const char     *crash_at;       /* tests: a step of a move to die at */
#endif
	struct a2m_analyzer *analyzer;  /* rerank's */
	pthread_mutex_t  analyzer_mu;
} federation;

/* One request: who asks and over what. */
typedef struct fed_call {
	federation *f;
	int         network;
	const char *principal;
	unsigned    caps;       /* the router's, less scopes for an unauthenticated network call */
	const char *owner;      /* the scope's owner (principal, or params.owner) */
	int         scoped;     /* an owner applies */
	json_t     *earned;     /* recall: records whose touches earned promotion,
	                           promoted once the shared lock is let go */
} fed_call;

/* ---- config.c ------------------------------------------------------------ */

/* Reads the configuration file into f (zeroed first) and connects the
** backends. Returns 0, or -1 with the reason in err. */
int fed_config_load(federation *f, const char *path, char *err, size_t errlen);

/* Frees everything f holds (backends closed). */
void fed_free(federation *f);

/* ---- backend.c ----------------------------------------------------------- */

/*
** Calls method on b with params (borrowed; NULL: {}), waiting at most
** timeout_ms (0: the client's default). Returns 0 with *result (a new
** reference), or the backend's JSON-RPC error code with err set as it was
** (message and data), or A2M_INTERNAL_ERROR with err->data {"backend":
** name, "unreachable": true} when the backend could not be reached (b is
** then marked down; the next call tries again).
*/
int fed_backend_call(fed_backend *b, const char *method, json_t *params, int timeout_ms,
		     json_t **result, a2m_error *err);

/* Whether an error from fed_backend_call was the backend being unreachable. */
int fed_unreachable(const a2m_error *err);

/* One call of a fan-out. */
typedef struct fed_job {
	fed_backend *b;
	const char  *method;
	json_t      *params;   /* owned by the job */
	json_t      *result;   /* out */
	a2m_error    err;      /* out */
	int          rc;       /* out */
} fed_job;

/* Runs jobs[0..n) at once, each bounded by timeout_ms (0: the default), and
** returns when all have answered or given up. */
void fed_fanout(fed_job *jobs, size_t n, int timeout_ms);

/* Frees what the jobs hold. */
void fed_jobs_free(fed_job *jobs, size_t n);

/* Connects b (spawning or opening it) and checks its describe against the
** tiers it is to hold. Returns 0, or -1 with the reason in err. */
int fed_backend_start(federation *f, fed_backend *b, char *err, size_t errlen);

void fed_backend_stop(fed_backend *b);

/* ---- router.c ------------------------------------------------------------ */

/* Appends an event for change c and pushes it to a subscriber. */
void fed_event(federation *f, const a2m_change *c);

/* The backend holding tier ti. */
fed_backend *fed_tier_backend(federation *f, size_t ti);

/* Whether backend b (an index into f->backends) holds any tier. */
int fed_backend_holds_tiers(const federation *f, size_t b);

/* The index of the tier a record names (its "tier" member), or -1. */
int fed_tier_of(const federation *f, const json_t *rec);

/* params for a backend: a copy of the members named (NULL-terminated) that
** params has, plus the scope's owner when the caller is scoped. */
json_t *fed_params(const fed_call *c, const json_t *params, const char *const *names);

/* ---- read.c -------------------------------------------------------------- */

/* params fitted to what b declares (a tier param only where it has tiers,
** an owner only where it has scopes, ...): a new object, or NULL when b
** cannot hold anything method would find there (fetch on a backend
** without keys). */
json_t *fed_adapt(const fed_backend *b, const char *method, const json_t *params);

int fed_recall(fed_call *c, json_t *params, json_t **result, a2m_error *err);
int fed_timeline(fed_call *c, json_t *params, json_t **result, a2m_error *err);
int fed_fetch(fed_call *c, json_t *params, json_t **result, a2m_error *err);
int fed_session_list(fed_call *c, json_t *params, json_t **result, a2m_error *err);

/*
** Every record with one of ids, wherever it lives, whole (embeddings, no
** touch): *found (a new array of records, each with "tier"). Unreachable
** backends are skipped when skip_down, else fail the call.
*/
int fed_lookup(federation *f, const json_t *ids, int skip_down, json_t **found,
	       a2m_error *err);

/*
** The records of tier ti (one session's, when session is not NULL and
** by_session), oldest first, whole, unscoped, untouched; group (NULL: any)
** narrows them. Returns 0 with *out, or an error.
*/
int fed_tier_records(federation *f, size_t ti, int by_session, const char *session,
		     const char *group, json_t **out, a2m_error *err);

/* rerank.c: scores recs (an array of records) against the query text and
** vector of params with the router's own scorer, in place ("score"), and
** orders them; records the query does not match are dropped. */
int fed_rerank(federation *f, const json_t *params, json_t *recs, a2m_error *err);

/* ---- write.c ------------------------------------------------------------- */

int fed_remember(fed_call *c, json_t *params, json_t **result, a2m_error *err);
int fed_forget(fed_call *c, json_t *params, json_t **result, a2m_error *err);
int fed_reinforce(fed_call *c, json_t *params, json_t **result, a2m_error *err);
int fed_summarize(fed_call *c, json_t *params, json_t **result, a2m_error *err);

/* The written event of each record of recs (as stored: id, tier, session,
** key, revision, owner). */
void fed_written_events(federation *f, const json_t *recs);

/* ---- move.c -------------------------------------------------------------- */

/* What a reorganisation did (spec §4.7). */
typedef struct fed_cons {
	int64_t moved, promoted, dropped;
} fed_cons;

/* A bucket records entered, for capacity: a tier and a session. */
typedef struct fed_arrival {
	size_t ti;
	char  *session;
} fed_arrival;

typedef struct fed_arrivals {
	fed_arrival *v;
	size_t       n, cap;
	int          all;   /* memory ran out: check every tier */
} fed_arrivals;

void fed_arrive(federation *f, fed_arrivals *a, size_t ti, const char *session);
void fed_arrivals_free(fed_arrivals *a);

/*
** Moves the unit of rec (a record of tier from, as read whole: its group
** within that tier, or itself) to tier to (-1: drops it), adding
** salience_add: between backends by the move protocol (journal, write with
** the original ids and every field, verify, delete). *n = records moved.
*/
int fed_move_unit(federation *f, const json_t *rec, size_t from, int to, double salience_add,
		  fed_arrivals *arr, int64_t *n, a2m_error *err);

/* Capacity over the buckets noted (every bounded tier when a->all), and
** promotion of what earned it first when with_promotion. */
int fed_rebalance(federation *f, int with_promotion, fed_arrivals *a, fed_cons *cons,
		  a2m_error *err);

/* Promotes the records of recs (as recalled, touches counted) that earned it. */
int fed_promote_earned(federation *f, const json_t *recs, a2m_error *err);

int fed_promote(fed_call *c, json_t *params, json_t **result, a2m_error *err);
int fed_consolidate(fed_call *c, json_t *params, json_t **result, a2m_error *err);
int fed_session_close(fed_call *c, json_t *params, json_t **result, a2m_error *err);

/* The moves the journal says were in progress: finished (or cleaned up). */
int fed_journal_recover(federation *f, char *err, size_t errlen);

/* The counts object: tier name → records (unscoped, or owner's). */
json_t *fed_counts(fed_call *c, a2m_error *err);

#endif
