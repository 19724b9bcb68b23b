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
#include "cli/bench_proc.h"
#include "cli/cli.h"
#include "client/client_json.h"
#include "util/buf.h"
#include "util/hash.h"

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

static size_t slot_of(const model *m, const char *id)
{
	size_t mask = m->nslots - 1, j = (size_t)a2m_hash_str(id) & mask;
	while (m->slots[j] && strcmp(m->v[m->slots[j] - 1].id, id) != 0)
		j = (j + 1) & mask;
	return j;
}

static long find_rec(const model *m, const char *id)
{
	if (!m->nslots)
		return -1;
	size_t j = slot_of(m, id);
	return m->slots[j] ? (long)m->slots[j] - 1 : -1;
}

/* A new record of the model (not present yet). Exits when memory runs out. */
static size_t add_rec(model *m, const char *id, int key_space, int key_no)
{
	if (2 * (m->n + 1) > m->nslots) {
		size_t ns = m->nslots ? m->nslots * 2 : 4096;
		size_t *old = m->slots, on = m->nslots;
		m->slots = calloc(ns, sizeof *m->slots);
		m->nslots = ns;
		if (!m->slots)
			abort();
		for (size_t i = 0; i < on; i++)
			if (old[i])
				m->slots[slot_of(m, m->v[old[i] - 1].id)] = old[i];
		free(old);
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 4096;
		m->v = realloc(m->v, m->cap * sizeof *m->v);
		if (!m->v)
			abort();
	}
	krec *r = &m->v[m->n];
	memset(r, 0, sizeof *r);
	r->id = strdup(id);
	if (!r->id)
		abort();
	r->key_space = key_space;
	r->key_no = key_no;
	r->revision = -1;
	m->slots[slot_of(m, id)] = m->n + 1;
	return m->n++;
}

static void set_present(model *m, size_t i, int present)
{
	krec *r = &m->v[i];
	if (r->present != present)
		m->present += present ? 1 : (size_t)-1;
	r->present = present;
	if (r->key_space >= 0 && !present && m->keyed[r->key_space][r->key_no] == (long)i)
		m->keyed[r->key_space][r->key_no] = -1;
	if (r->key_space >= 0 && present)
		m->keyed[r->key_space][r->key_no] = (long)i;
}

static void flight_add(flight *f, size_t rec)
{
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->recs = realloc(f->recs, f->cap * sizeof *f->recs);
		if (!f->recs)
			abort();
	}
	f->recs[f->n++] = rec;
}

static void flight_clear(model *m)
{
	for (size_t i = 0; i < m->f.n; i++)
		m->v[m->f.recs[i]].flying = 0;
	m->f.kind = F_NONE;
	m->f.method = NULL;
	m->f.n = 0;
	m->f.big = 0;
}

static void model_free(model *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].id);
	free(m->v);
	free(m->slots);
	free(m->f.recs);
}

/* ---- the run ---------------------------------------------------------------- */

/*
** What a kill may be aimed at: the delay then runs from the moment such a
** request is sent (and is short), rather than from the start of the work.
*/
enum { T_NONE, T_BATCH, T_CONSOLIDATE, T_CLOSE, T_MIRROR, T_RECALL, T_KINDS };
static const char *const target_names[T_KINDS] = {
	"", "batch", "consolidate", "close", "mirror", "recall",
};
/* The window each aims in: the delay is drawn uniformly below it (ms). */
static const double target_window_ms[T_KINDS] = {0, 60, 10, 10, 5, 5};

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
} run;

static void fail(run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(run *r, const char *fmt, ...)
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

static void arm(run *r, pid_t pid, double ms)
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

/* ---- requests ------------------------------------------------------------------ */

/*
** Sends one request and waits for its answer: 1 with *result (the caller's
** reference) when answered, 0 when the connection died (the kill), -1 on
** an error answer (recorded).
*/
static int call(run *r, a2m_client *c, const char *method, json_t *params, json_t **result)
{
	json_t *resp = NULL;
	*result = NULL;
	int rc = a2m_client_request_json(c, method, params, &resp);
	json_decref(params);
	if (rc != A2M_CLIENT_OK)
		return 0;
	json_t *res = json_object_get(resp, "result");
	if (!res) {
		char *text = json_dumps(resp, JSON_COMPACT);
		fail(r, "%s answered an error: %.400s", method, text ? text : "?");
		free(text);
		json_decref(resp);
		return -1;
	}
	*result = json_incref(res);
	json_decref(resp);
	return 1;
}

static uint64_t hash_text(const char *s)
{
	return a2m_hash_str(s ? s : "");
}

/* A present record of the model, drawn at random (keyed ones only if keyed); -1 if none found. */
static long pick_present(run *r, int keyed)
{
	for (int tries = 0; tries < 64 && r->m.n; tries++) {
		size_t i = (size_t)bench_prng_below(&r->rng, r->m.n);
		const krec *k = &r->m.v[i];
		if (k->present && !k->flying && (k->key_space >= 0) == keyed)
			return (long)i;
	}
	return -1;
}

/* A batch of new records, all of one tier, some in groups. */
static json_t *batch_params(run *r, int *big)
{
	model *m = &r->m;
	double u = bench_prng_unit(&r->rng);
	size_t n = u < 0.3 ? 1 : u < 0.7 ? 2 + bench_prng_below(&r->rng, 19)
					 : 64 + bench_prng_below(&r->rng, 537);
	double t = bench_prng_unit(&r->rng);
	const char *tier = t < 0.6 ? NULL : t < 0.8 ? "episodic" : "semantic";
	json_t *recs = json_array();
	char text[512], id[64], group[80] = "";
	size_t left_in_group = 0;
	for (size_t i = 0; i < n; i++) {
		snprintf(id, sizeof id, "r%lld", (long long)m->next_id++);
		bench_sentence(text, sizeof text);
		json_t *rec = json_pack("{ss ss ss}", "id", id, "content", text, "session", "s0");
		char session[8];
		snprintf(session, sizeof session, "s%d", (int)bench_prng_below(&r->rng, SESSIONS));
		json_object_set_new(rec, "session", json_string(session));
		if (!left_in_group && bench_prng_unit(&r->rng) < 0.3) {
			snprintf(group, sizeof group, "g-%s", id);
			left_in_group = 2 + bench_prng_below(&r->rng, 3);
		}
		if (left_in_group) {
			json_object_set_new(rec, "group", json_string(group));
			left_in_group--;
		}
		if (tier)
			json_object_set_new(rec, "tier", json_string(tier));
		json_array_append_new(recs, rec);
		size_t k = add_rec(m, id, -1, 0);
		m->v[k].flying = 1;
		flight_add(&m->f, k);
	}
	*big = n >= 64;
	return json_pack("{so}", "records", recs);
}

/* Applies an acknowledged request to the model. */
static void acknowledged(run *r, json_t *result)
{
	model *m = &r->m;
	flight *f = &m->f;
	if (f->kind == F_REMEMBER) {
		for (size_t i = 0; i < f->n; i++)
			set_present(m, f->recs[i], 1);
		m->acknowledged += (int64_t)f->n;
	} else if (f->kind == F_FORGET) {
		for (size_t i = 0; i < f->n; i++)
			set_present(m, f->recs[i], 0);
		m->acknowledged += (int64_t)f->n;
	} else if (f->kind == F_KEYED) {
		const char *id = json_string_value(json_array_get(json_object_get(result, "ids"), 0));
		long at = m->keyed[f->key_space][f->key_no];
		if (!id) {
			fail(r, "a keyed remember answered no id");
		} else if (at >= 0) {
			krec *k = &m->v[at];
			if (strcmp(k->id, id) != 0)
				fail(r, "key %s/%d: replaced as \"%s\", the record there is \"%s\"",
				     key_spaces[f->key_space], f->key_no, id, k->id);
			k->revision = k->revision >= 0 ? k->revision + 1 : -1;
			k->hash = f->new_hash;
		} else {
			size_t k = add_rec(m, id, f->key_space, f->key_no);
			m->v[k].hash = f->new_hash;
			set_present(m, k, 1);
		}
		m->acknowledged++;
	}
	flight_clear(m);
}

/*
** One request of the workload, drawn at random. Returns 1 when answered,
** 0 when the connection died, -1 on a failure (recorded).
*/
static int step(run *r, a2m_client *c)
{
	model *m = &r->m;
	flight *f = &m->f;
	json_t *params = NULL, *result = NULL;
	char text[512];
	double u = bench_prng_unit(&r->rng);
	flight_clear(m);
	f->kind = F_OTHER;
	if (m->present > r->max_records) {
		/* Keep the file bounded: forget a few hundred of the oldest. */
		json_t *ids = json_array();
		for (size_t i = 0; i < m->n && f->n < 300; i++)
			if (m->v[i].present && m->v[i].key_space < 0) {
				json_array_append_new(ids, json_string(m->v[i].id));
				m->v[i].flying = 1;
				flight_add(f, i);
			}
		f->kind = F_FORGET;
		f->method = "memory/forget";
		params = json_pack("{so}", "ids", ids);
	} else if (u < 0.30) {
		f->kind = F_REMEMBER;
		f->method = "memory/remember";
		params = batch_params(r, &f->big);
	} else if (u < 0.40) {
		f->kind = F_KEYED;
		f->method = "memory/remember";
		f->key_space = (int)bench_prng_below(&r->rng, 2);
		f->key_no = (int)bench_prng_below(&r->rng, KEYS);
		long at = m->keyed[f->key_space][f->key_no];
		if (at >= 0)
			m->v[at].flying = 1, flight_add(f, (size_t)at);
		bench_sentence(text, sizeof text);
		f->new_hash = hash_text(text);
		char key[64];
		snprintf(key, sizeof key, "%s/%d", key_spaces[f->key_space], f->key_no);
		params = json_pack("{s[{ss ss ss}]}", "records", "content", text, "key", key, "tier",
				   key_tiers[f->key_space]);
	} else if (u < 0.58) {
		f->method = "memory/recall";
		bench_query_text(text, sizeof text);
		params = json_pack("{ss si}", "query", text, "limit", 10);
		if (bench_prng_unit(&r->rng) < 0.4)
			json_object_set_new(params, "tier", json_string("episodic"));
	} else if (u < 0.63) {
		f->method = "memory/timeline";
		char session[8];
		snprintf(session, sizeof session, "s%d", (int)bench_prng_below(&r->rng, SESSIONS));
		params = json_pack("{si s{ss}}", "limit", 20, "where", "session", session);
	} else if (u < 0.72) {
		f->kind = F_FORGET;
		f->method = "memory/forget";
		int keyed = bench_prng_unit(&r->rng) < 0.2;
		json_t *ids = json_array();
		size_t want = keyed ? 1 : 1 + bench_prng_below(&r->rng, 20);
		for (size_t i = 0; i < want; i++) {
			long k = pick_present(r, keyed);
			if (k < 0 || m->v[k].flying)
				continue;
			json_array_append_new(ids, json_string(m->v[k].id));
			m->v[k].flying = 1;
			flight_add(f, (size_t)k);
		}
		if (!f->n) {
			json_decref(ids);
			f->kind = F_OTHER;
			f->method = "memory/consolidate";
			params = json_object();
		} else {
			params = json_pack("{so}", "ids", ids);
		}
	} else if (u < 0.79) {
		f->method = "memory/consolidate";
		params = json_object();
	} else if (u < 0.87) {
		f->method = "memory/session/close";
		char session[8];
		snprintf(session, sizeof session, "s%d", (int)bench_prng_below(&r->rng, SESSIONS));
		params = json_pack("{ss}", "session", session);
	} else if (u < 0.94) {
		f->method = "memory/promote";
		json_t *ids = json_array();
		for (int i = 0; i < 5; i++) {
			long k = pick_present(r, 0);
			if (k >= 0)
				json_array_append_new(ids, json_string(m->v[k].id));
		}
		params = json_pack("{so ss}", "ids", ids, "tier", "semantic");
	} else {
		f->method = "memory/reinforce";
		json_t *ids = json_array();
		long k = pick_present(r, 0);
		if (k >= 0)
			json_array_append_new(ids, json_string(m->v[k].id));
		params = json_pack("{so sf}", "ids", ids, "amount", 0.25);
	}
	if (r->target && !r->target_armed) {
		int hit = (r->target == T_BATCH && f->kind == F_REMEMBER && f->big) ||
			  (r->target == T_CONSOLIDATE && strcmp(f->method, "memory/consolidate") == 0) ||
			  (r->target == T_CLOSE && strcmp(f->method, "memory/session/close") == 0) ||
			  (r->target == T_MIRROR && f->kind == F_KEYED && f->key_space == 0) ||
			  (r->target == T_RECALL && strcmp(f->method, "memory/recall") == 0);
		if (hit) {
			arm(r, r->pid, r->target_ms);
			r->target_armed = 1;
		}
	}
	int rc = call(r, c, f->method, params, &result);
	if (rc == 1)
		acknowledged(r, result);
	json_decref(result);
	return rc;
}

/* ---- after a restart: what the server holds against what was acknowledged ---- */

/* The server's records by id: id → the record (borrowed from the timeline's answer). */
typedef struct held {
	json_t *by_id;     /* object: id → record */
} held;

static int holds(const held *h, const char *id)
{
	return json_object_get(h->by_id, id) != NULL;
}

/* Checks the record of key slot k (index at) against its acknowledged state, or the flight's. */
static void check_keyed(run *r, const held *h, size_t at)
{
	krec *k = &r->m.v[at];
	const flight *f = &r->m.f;
	json_t *rec = json_object_get(h->by_id, k->id);
	char key[64];
	snprintf(key, sizeof key, "%s/%d", key_spaces[k->key_space], k->key_no);
	if (!rec)
		return;  /* reported as lost by the caller */
	const char *got_key = json_string_value(json_object_get(rec, "key"));
	int64_t rev = json_integer_value(json_object_get(rec, "revision"));
	uint64_t hash = hash_text(json_string_value(json_object_get(rec, "content")));
	if (!got_key || strcmp(got_key, key) != 0) {
		fail(r, "record \"%s\" lost its key %s", k->id, key);
		return;
	}
	int replaced_in_flight = f->kind == F_KEYED && f->key_space == k->key_space &&
				 f->key_no == k->key_no;
	int as_acked = (k->revision < 0 || rev == k->revision) && hash == k->hash;
	int as_flown = replaced_in_flight && (k->revision < 0 || rev == k->revision + 1) &&
		       hash == f->new_hash;
	if (!as_acked && !as_flown) {
		fail(r, "key %s: revision %lld and content differ from the acknowledged revision %lld",
		     key, (long long)rev, (long long)k->revision);
		return;
	}
	k->revision = rev;
	k->hash = hash;
}

/* The flight's outcome: all of it or none. Adopts it into the model. */
static void settle_flight(run *r, const held *h)
{
	model *m = &r->m;
	flight *f = &m->f;
	size_t there = 0;
	for (size_t i = 0; i < f->n; i++)
		there += holds(h, m->v[f->recs[i]].id);
	if (f->kind == F_REMEMBER || f->kind == F_FORGET) {
		if (there != 0 && there != f->n) {
			fail(r, "%s of %zu records in flight at the kill: %zu of them are there "
			     "(half a batch)", f->method, f->n, there);
			return;
		}
		for (size_t i = 0; i < f->n; i++)
			set_present(m, f->recs[i], there == f->n);
	}
	if (f->kind == F_KEYED && m->keyed[f->key_space][f->key_no] < 0) {
		/* A key written for the first time: the server gave the id. */
		char key[64];
		snprintf(key, sizeof key, "%s/%d", key_spaces[f->key_space], f->key_no);
		const char *id;
		json_t *rec;
		json_object_foreach(h->by_id, id, rec) {
			const char *k = json_string_value(json_object_get(rec, "key"));
			if (k && strcmp(k, key) == 0 && find_rec(m, id) < 0) {
				size_t at = add_rec(m, id, f->key_space, f->key_no);
				m->v[at].hash = f->new_hash;
				set_present(m, at, 1);
			}
		}
	}
}

/*
** Reads everything back (timeline, then describe) and holds it against the
** model. Returns 1 when it all agrees, 0 when the server died on the way
** (a kill during verification), -1 on a failure (recorded).
*/
static int verify(run *r, a2m_client *c)
{
	model *m = &r->m;
	json_t *tl = NULL, *desc = NULL;
	int rc = call(r, c, "memory/timeline", json_pack("{si}", "limit", 10000000), &tl);
	if (rc == 1)
		rc = call(r, c, "memory/describe", json_object(), &desc);
	if (rc != 1) {
		json_decref(tl);
		return rc;
	}
	held h = {json_object()};
	json_t *recs = json_object_get(tl, "records"), *rec;
	size_t i;
	json_t *tiers = json_object();
	json_array_foreach(recs, i, rec) {
		const char *id = json_string_value(json_object_get(rec, "id"));
		const char *tier = json_string_value(json_object_get(rec, "tier"));
		if (id)
			json_object_set(h.by_id, id, rec);
		json_t *n = json_object_get(tiers, tier ? tier : "");
		json_object_set_new(tiers, tier ? tier : "", json_integer(json_integer_value(n) + 1));
	}
	settle_flight(r, &h);
	for (size_t k = 0; k < m->n && !r->why[0]; k++) {
		krec *x = &m->v[k];
		int there = holds(&h, x->id);
		if (x->present && !there)
			fail(r, "acknowledged record \"%s\"%s is gone", x->id,
			     x->key_space >= 0 ? " (keyed)" : "");
		else if (!x->present && there)
			fail(r, "record \"%s\", acknowledged forgotten, is back", x->id);
		else if (x->present && x->key_space >= 0)
			check_keyed(r, &h, k);
	}
	const char *id;
	json_object_foreach(h.by_id, id, rec) {
		if (find_rec(m, id) < 0)
			fail(r, "record \"%s\" is there, and nobody wrote it", id);
	}
	/* describe's counts (the server's cached ones) against the records. */
	json_t *t;
	json_array_foreach(json_object_get(desc, "tiers"), i, t) {
		const char *name = json_string_value(json_object_get(t, "name"));
		int64_t want = json_integer_value(json_object_get(tiers, name ? name : ""));
		int64_t got = json_integer_value(json_object_get(t, "count"));
		if (got != want)
			fail(r, "describe counts %lld records in tier %s, the timeline %lld",
			     (long long)got, name ? name : "?", (long long)want);
	}
	if (json_object_size(h.by_id) != m->present && !r->why[0])
		fail(r, "the server holds %zu records, %zu were acknowledged",
		     json_object_size(h.by_id), m->present);
	flight_clear(m);
	json_decref(h.by_id);
	json_decref(tiers);
	json_decref(tl);
	json_decref(desc);
	return r->why[0] ? -1 : 1;
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
	/* Killed in the very first open, before its schema's first step committed:
	** an empty file, which the next open makes a store. Nothing was written. */
	if (status == 1 && r->m.n == 0 && strstr(text, "has no a2m schema"))
		ok = 1;
	else if (status == 1 && mirror_may_lag) {
		ok = 1;
		for (const char *p = strstr(text, "PROBLEM "); p; p = strstr(p + 1, "PROBLEM "))
			if (strncmp(p, "PROBLEM mirror:", 15) != 0)
				ok = 0;
		r->mirror_lagged += ok;
	}
	if (!ok)
		fail(r, "a2m check --db %s (exit %d):\n%s", r->db, status, text);
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
		fail(r, "the server did not stop cleanly (status %d)", status);
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
		fail(r, "the server did not start");
		return -1;
	}
	if (it->at_start) {
		/*
		** Killed while it opens (migrations, the index, the mirror's
		** reconciliation) or just after: nothing to verify this time, the
		** next start does. Describe until the kill; none answered: it
		** landed in the open.
		*/
		arm(r, pid, it->delay_ms);
		json_t *res = NULL;
		int answered = 0;
		while (call(r, c, "memory/describe", json_object(), &res) == 1) {
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
	rc = verify(r, c);
	if (rc != 1) {
		if (rc == 0)
			fail(r, "the server died while its records were read back");
		stop(r, it, c, pid, 0);
		return -1;
	}
	if (it->clean) {
		/* Some work, then a clean stop: every area must check clean. */
		for (int i = 0; i < 20 && rc == 1; i++, it->steps++)
			rc = step(r, c);
		snprintf(it->landed, sizeof it->landed, "clean stop");
		if (rc != 1 || stop(r, it, c, pid, 1) != 0) {
			if (rc == 0)
				fail(r, "the server died without a kill");
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
		arm(r, pid, it->delay_ms);
	while ((rc = step(r, c)) == 1) {
		/* An aim that never comes up (it will: each is drawn often) falls back. */
		if (++it->steps == 2000 && r->target && !r->target_armed)
			arm(r, pid, it->delay_ms), r->target_armed = 1;
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
		fail(r, "the server died without a kill");
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
	"                       [--http-every K] [--max-records N] [--dir DIR] [--keep]\n";

int a2m_bench_crash(int argc, char **argv)
{
	run *r = calloc(1, sizeof *r);
	double seconds = 60;
	long iterations = 0;
	int keep = 0, seeded = 0;
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
	if (seconds <= 0 || r->max_delay_ms < 0.1 || r->http_every < 0) {
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
	model_free(&r->m);
	free(r);
	return failed ? A2M_EXIT_ERROR : A2M_EXIT_OK;
}
