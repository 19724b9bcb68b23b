/*
** bench_crash_work.c — the conversation of `a2m bench crash` with its
** server: the model of what the test was told (every id stored, every
** forget done, every key with its revision and content, the one request
** in flight), the workload drawn to keep every crash-sensitive path busy,
** and after each restart the check, through the protocol, that the server
** holds exactly what was acknowledged. Apart from bench_crash.c (processes,
** the killer thread, iterations) because what is sent and what must hold
** change with the protocol, the rest with the machine.
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
#include "util/grow.h"
#include "util/hash.h"

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
	if (a2m_grow((void **)&m->v, &m->cap, m->n + 1, sizeof *m->v))
		abort();
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
	if (a2m_grow((void **)&f->recs, &f->cap, f->n + 1, sizeof *f->recs))
		abort();
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

void bench_crash_model_free(model *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].id);
	free(m->v);
	free(m->slots);
	free(m->f.recs);
}

/* ---- requests ------------------------------------------------------------------ */

/*
** Sends one request and waits for its answer: 1 with *result (the caller's
** reference) when answered, 0 when the connection died (the kill), -1 on
** an error answer (recorded).
*/
int bench_crash_call(run *r, a2m_client *c, const char *method, json_t *params, json_t **result)
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
		bench_crash_fail(r, "%s answered an error: %.400s", method, text ? text : "?");
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
			bench_crash_fail(r, "a keyed remember answered no id");
		} else if (at >= 0) {
			krec *k = &m->v[at];
			if (strcmp(k->id, id) != 0)
				bench_crash_fail(r, "key %s/%d: replaced as \"%s\", the record there is \"%s\"",
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
int bench_crash_step(run *r, a2m_client *c)
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
			bench_crash_arm(r, r->pid, r->target_ms);
			r->target_armed = 1;
		}
	}
	int rc = bench_crash_call(r, c, f->method, params, &result);
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
		bench_crash_fail(r, "record \"%s\" lost its key %s", k->id, key);
		return;
	}
	int replaced_in_flight = f->kind == F_KEYED && f->key_space == k->key_space &&
				 f->key_no == k->key_no;
	int as_acked = (k->revision < 0 || rev == k->revision) && hash == k->hash;
	int as_flown = replaced_in_flight && (k->revision < 0 || rev == k->revision + 1) &&
		       hash == f->new_hash;
	if (!as_acked && !as_flown) {
		bench_crash_fail(r, "key %s: revision %lld and content differ from the acknowledged revision %lld",
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
			bench_crash_fail(r, "%s of %zu records in flight at the kill: %zu of them are there "
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
int bench_crash_verify(run *r, a2m_client *c)
{
	model *m = &r->m;
	json_t *tl = NULL, *desc = NULL;
	int rc = bench_crash_call(r, c, "memory/timeline", json_pack("{si}", "limit", 10000000), &tl);
	if (rc == 1)
		rc = bench_crash_call(r, c, "memory/describe", json_object(), &desc);
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
			bench_crash_fail(r, "acknowledged record \"%s\"%s is gone", x->id,
			     x->key_space >= 0 ? " (keyed)" : "");
		else if (!x->present && there)
			bench_crash_fail(r, "record \"%s\", acknowledged forgotten, is back", x->id);
		else if (x->present && x->key_space >= 0)
			check_keyed(r, &h, k);
	}
	const char *id;
	json_object_foreach(h.by_id, id, rec) {
		if (find_rec(m, id) < 0)
			bench_crash_fail(r, "record \"%s\" is there, and nobody wrote it", id);
	}
	/* describe's counts (the server's cached ones) against the records. */
	json_t *t;
	json_array_foreach(json_object_get(desc, "tiers"), i, t) {
		const char *name = json_string_value(json_object_get(t, "name"));
		int64_t want = json_integer_value(json_object_get(tiers, name ? name : ""));
		int64_t got = json_integer_value(json_object_get(t, "count"));
		if (got != want)
			bench_crash_fail(r, "describe counts %lld records in tier %s, the timeline %lld",
			     (long long)got, name ? name : "?", (long long)want);
	}
	if (json_object_size(h.by_id) != m->present && !r->why[0])
		bench_crash_fail(r, "the server holds %zu records, %zu were acknowledged",
		     json_object_size(h.by_id), m->present);
	flight_clear(m);
	json_decref(h.by_id);
	json_decref(tiers);
	json_decref(tl);
	json_decref(desc);
	return r->why[0] ? -1 : 1;
}
