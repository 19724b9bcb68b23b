/*
** backend.c — the router's side of one backend: connecting it (an
** in-process handle, a child over stdio, a server over HTTP), checking at
** start that it can hold its tiers, calling it through the protocol, and
** calling several at once under one deadline (a recall's fan-out).
**
** A backend that cannot be reached is marked down and the call says so
** (err->data carries "unreachable"); the next call tries again: a stdio
** child is spawned again (at most once a second), an HTTP server is simply
** asked again, so a backend that comes back is used again without a
** restart of the router.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client_json.h"
#include "federate/fed.h"
#include "protocol/protocol.h"
#include "util/clock.h"
#include "util/log.h"

/* How long a stdio backend found dead waits before it is spawned again. */
#define RESPAWN_MS 1000

/* Writes the layout of the tiers f keeps on b as an a2m configuration file
** (unbounded tiers of the same names, kinds, sharing, half-lives and
** dedup marks: the router owns capacity, spills and promotion; the
** backend finds duplicates, write.c). Returns its path (malloc'd;
** the caller unlinks and frees it), or NULL. */
static char *backend_config_file(federation *f, fed_backend *b)
{
	json_t *tiers = json_array();
	for (size_t i = 0; tiers && i < f->layout.n; i++) {
		const a2m_tier *t = &f->layout.tiers[i];
		if (&f->backends[f->tier_backend[i]] != b)
			continue;
		json_array_append_new(tiers, json_pack("{ss ss sb sf sb}", "name", t->name, "kind",
						       t->kind, "shared", t->shared,
						       "half_life_seconds", t->half_life_ms / 1000.0,
						       "dedup", t->dedup));
	}
	json_t *cfg = tiers ? json_pack("{so}", "tiers", tiers) : NULL;
	char tmpl[] = "/tmp/a2m-federate-XXXXXX";
	int fd = cfg ? mkstemp(tmpl) : -1;
	char *path = NULL;
	if (fd >= 0) {
		if (json_dumpfd(cfg, fd, 0) == 0)
			path = strdup(tmpl);
		close(fd);
		if (!path)
			unlink(tmpl);
	}
	json_decref(cfg);
	return path;
}

/* Opens an in-process backend. */
static int open_local(federation *f, fed_backend *b, char *err, size_t errlen)
{
	char *cfg_path = backend_config_file(f, b);
	a2m_config *cfg = NULL;
	char *why = NULL;
	int rc = cfg_path ? a2m_config_new(&cfg) : A2M_NOMEM;
	if (rc == A2M_OK)
		rc = a2m_config_set(cfg, "engine", b->kind == FED_MEMORY ? "memory"
						   : b->kind == FED_SQLITE ? "sqlite" : "postgres");
	if (rc == A2M_OK && b->kind == FED_SQLITE)
		rc = a2m_config_set(cfg, "path", b->url);
	if (rc == A2M_OK && b->kind == FED_POSTGRES)
		rc = a2m_config_set(cfg, "postgres", b->url);
	if (rc == A2M_OK)
		rc = a2m_config_set(cfg, "config_file", cfg_path);
	if (rc == A2M_OK)
		rc = a2m_config_set(cfg, "name", b->name);
	if (rc == A2M_OK && b->ranking)
		rc = a2m_config_set(cfg, "ranking", b->ranking);
	if (rc == A2M_OK)
		rc = a2m_open(cfg, &b->local, &why);
	if (rc != A2M_OK)
		snprintf(err, errlen, "backend '%s': %s", b->name, why ? why : a2m_strerror(rc));
	a2m_free(why);
	a2m_config_free(cfg);
	if (cfg_path) {
		unlink(cfg_path);
		free(cfg_path);
	}
	return rc == A2M_OK ? 0 : -1;
}

/* Connects a remote backend's client (spawn or HTTP handle). */
static int connect_client(fed_backend *b, char *err, size_t errlen)
{
	int rc;
	if (b->kind == FED_STDIO) {
		rc = a2m_client_spawn_stdio(b->argv, &b->client);
		if (rc != A2M_CLIENT_OK) {
			snprintf(err, errlen, "backend '%s': cannot start %s: %s", b->name,
				 b->argv[0], a2m_client_spawn_errmsg());
			return -1;
		}
	} else {
		a2m_client_http_options o;
		a2m_client_http_options_init(&o);
		o.bearer_token = b->token;
		rc = a2m_client_connect_http(b->url, &o, &b->client);
		if (rc != A2M_CLIENT_OK) {
			snprintf(err, errlen, "backend '%s': %s: %s", b->name, b->url,
				 a2m_client_strerror(rc));
			return -1;
		}
	}
	return 0;
}

/* Sets err from a JSON-RPC error object. */
static int error_of(const json_t *e, a2m_error *err)
{
	json_int_t code = json_integer_value(json_object_get(e, "code"));
	const char *msg = json_string_value(json_object_get(e, "message"));
	a2m_error_set(err, code ? (int)code : A2M_INTERNAL_ERROR, "%s", msg ? msg : "error");
	json_t *data = json_object_get(e, "data");
	if (data)
		a2m_error_data(err, json_incref(data));
	return err->code;
}

static int unreachable(fed_backend *b, a2m_error *err, const char *why)
{
	b->down = 1;
	a2m_error_set(err, A2M_INTERNAL_ERROR, "backend '%s' is unreachable: %s", b->name, why);
	return a2m_error_data(err, json_pack("{ss sb}", "backend", b->name, "unreachable", 1));
}

int fed_unreachable(const a2m_error *err)
{
	return err->data && json_is_true(json_object_get(err->data, "unreachable"));
}

/* The remote call, under b->mu. */
static int call_client(fed_backend *b, const char *method, json_t *params, int timeout_ms,
		       json_t **resp, a2m_error *err)
{
	if (!b->client) {
		int64_t now = a2m_clock_now_ms();
		char why[256];
		if (now < b->retry_at)
			return unreachable(b, err, "restarting");
		if (connect_client(b, why, sizeof why) != 0) {
			b->retry_at = now + RESPAWN_MS;
			return unreachable(b, err, why);
		}
	}
	a2m_client_set_timeout(b->client, timeout_ms);
	int rc = a2m_client_request_json(b->client, method, params, resp);
	if (rc != A2M_CLIENT_OK) {
		char why[256];
		snprintf(why, sizeof why, "%s", a2m_client_errmsg(b->client));
		if (b->kind == FED_STDIO) {
			/* A child that stopped answering is replaced, not waited for. */
			a2m_client_kill(b->client);
			a2m_client_free(b->client);
			b->client = NULL;
			b->retry_at = a2m_clock_now_ms() + RESPAWN_MS;
		} else {
			a2m_client_discard_pending(b->client);
		}
		return unreachable(b, err, why);
	}
	a2m_client_discard_pending(b->client);
	return 0;
}

int fed_backend_call(fed_backend *b, const char *method, json_t *params, int timeout_ms,
		     json_t **result, a2m_error *err)
{
	json_t *resp = NULL, *empty = NULL;
	int rc;
	*result = NULL;
	if (!params)
		params = empty = json_object();
	if (b->local) {
		json_t *msg = json_pack("{ss si ss sO}", "jsonrpc", "2.0", "id", 1, "method", method,
					"params", params);
		char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL, *reply = NULL;
		json_decref(msg);
		rc = text ? a2m_handle(b->local, text, A2M_NUL_TERMINATED, &reply) : A2M_NOMEM;
		free(text);
		if (rc == A2M_OK && reply)
			resp = json_loads(reply, JSON_ALLOW_NUL, NULL);
		a2m_free(reply);
		if (!resp) {
			json_decref(empty);
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "backend '%s': %s", b->name,
					     a2m_strerror(rc == A2M_OK ? A2M_NOMEM : rc));
		}
	} else {
		pthread_mutex_lock(&b->mu);
		rc = call_client(b, method, params, timeout_ms, &resp, err);
		pthread_mutex_unlock(&b->mu);
		if (rc) {
			json_decref(empty);
			return rc;
		}
	}
	json_decref(empty);
	b->down = 0;
	json_t *e = json_object_get(resp, "error");
	if (e)
		rc = error_of(e, err);
	else if ((*result = json_incref(json_object_get(resp, "result"))) == NULL)
		rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "backend '%s' answered without a result",
				   b->name);
	else
		rc = 0;
	json_decref(resp);
	return rc;
}

/* A job and its timeout, as a thread sees them. */
typedef struct job_arg {
	fed_job job;
	int     timeout_ms;
} job_arg;

static void *job_thread(void *arg)
{
	job_arg *a = arg;
	a->job.rc = fed_backend_call(a->job.b, a->job.method, a->job.params, a->timeout_ms,
				     &a->job.result, &a->job.err);
	return NULL;
}

void fed_fanout(fed_job *jobs, size_t n, int timeout_ms)
{
	pthread_t *th = calloc(n ? n : 1, sizeof *th);
	job_arg *args = calloc(n ? n : 1, sizeof *args);
	char *started = calloc(n ? n : 1, 1);
	/* Remote backends each on a thread of the call; in-process ones on
	** this thread meanwhile (they answer without waiting on anything). */
	for (size_t i = 0; th && args && started && i < n; i++) {
		if (jobs[i].b->local)
			continue;
		args[i].job = jobs[i];
		args[i].timeout_ms = timeout_ms;
		started[i] = pthread_create(&th[i], NULL, job_thread, &args[i]) == 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!started || !started[i])
			jobs[i].rc = fed_backend_call(jobs[i].b, jobs[i].method, jobs[i].params,
						      timeout_ms, &jobs[i].result, &jobs[i].err);
	for (size_t i = 0; started && i < n; i++)
		if (started[i]) {
			pthread_join(th[i], NULL);
			jobs[i] = args[i].job;
		}
	free(th);
	free(args);
	free(started);
}

void fed_jobs_free(fed_job *jobs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_decref(jobs[i].params);
		json_decref(jobs[i].result);
		a2m_error_clear(&jobs[i].err);
	}
	free(jobs);
}

/* Whether arr (a JSON array of strings) holds s. */
static int holds(const json_t *arr, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return 1;
	return 0;
}

/* The capability bits of a describe result. */
static unsigned caps_of(const json_t *d)
{
	unsigned caps = 0;
	for (unsigned bit = 1; bit <= A2M_CAP_PROMPT; bit <<= 1)
		if (holds(json_object_get(d, "capabilities"), a2m_capability_name(bit)))
			caps |= bit;
	/* The extensions the router passes through (router.c): x-where as it
	** is, x-dedup to the tiers that do it (write.c). */
	if (holds(json_object_get(d, "capabilities"), a2m_capability_name(A2M_CAP_X_WHERE)))
		caps |= A2M_CAP_X_WHERE;
	if (holds(json_object_get(d, "capabilities"), a2m_capability_name(A2M_CAP_X_DEDUP)))
		caps |= A2M_CAP_X_DEDUP;
	return caps;
}

/*
** Whether describe d declares our extension cap (x-touch, ...): as a
** capability, or under old_name in "extensions", as servers did before
** these were capabilities (docs/PROTOCOL.md, Extensions).
*/
static int declares(const json_t *d, unsigned cap, const char *old_name)
{
	return holds(json_object_get(d, "capabilities"), a2m_capability_name(cap)) ||
	       holds(json_object_get(d, "extensions"), old_name);
}

/* Checks that b's tier called t->name can hold what the router puts there. */
static int check_tier(const fed_backend *b, const a2m_tier *t, char *err, size_t errlen)
{
	const json_t *tiers = json_object_get(b->describe, "tiers"), *bt = NULL;
	size_t i;
	json_t *v;
	json_array_foreach(tiers, i, v)
		if (json_is_string(json_object_get(v, "name")) &&
		    strcmp(json_string_value(json_object_get(v, "name")), t->name) == 0)
			bt = v;
	if (!bt) {
		snprintf(err, errlen, "backend '%s' has no tier named '%s'", b->name, t->name);
		return -1;
	}
	json_int_t cap = json_integer_value(json_object_get(bt, "capacity"));
	if (cap > 0 || json_is_string(json_object_get(bt, "spill_to")) ||
	    json_is_string(json_object_get(bt, "promote_to"))) {
		snprintf(err, errlen, "backend '%s': its tier '%s' has a policy of its own "
			 "(capacity, spill_to or promote_to); the router owns the policy, so "
			 "give it an unbounded tier with none", b->name, t->name);
		return -1;
	}
	const json_t *sh = json_object_get(bt, "shared");
	if (json_is_boolean(sh) && json_is_true(sh) != !!t->shared) {
		snprintf(err, errlen, "backend '%s': its tier '%s' is %s, the router's is %s",
			 b->name, t->name, json_is_true(sh) ? "shared" : "private",
			 t->shared ? "shared" : "private");
		return -1;
	}
	/* Its records would expire there unseen: the router's log would never
	** say they went (it does not declare x-expiry, docs/FEDERATION.md). */
	if (json_is_number(json_object_get(bt, "ttl_seconds"))) {
		snprintf(err, errlen, "backend '%s': its tier '%s' has a ttl_seconds; a federation "
			 "does not expire records (x-expiry), so give the router a tier without one",
			 b->name, t->name);
		return -1;
	}
	/* The backend finds the duplicates: a router's dedup tier must be one
	** of its dedup tiers (write.c sends such a tier's writes without ids). */
	if (t->dedup && (!(b->caps & A2M_CAP_X_DEDUP) ||
			 !json_is_true(json_object_get(bt, "dedup")))) {
		snprintf(err, errlen, "tier '%s' is marked dedup, but backend '%s' %s", t->name,
			 b->name, b->caps & A2M_CAP_X_DEDUP ? "does not mark its tier of that name"
							    : "does not declare x-dedup");
		return -1;
	}
	return 0;
}

int fed_backend_start(federation *f, fed_backend *b, char *err, size_t errlen)
{
	if (pthread_mutex_init(&b->mu, NULL) != 0) {
		snprintf(err, errlen, "out of resources");
		return -1;
	}
	int in_process = b->kind == FED_MEMORY || b->kind == FED_SQLITE || b->kind == FED_POSTGRES;
	if (in_process ? open_local(f, b, err, errlen) : connect_client(b, err, errlen))
		return -1;
	a2m_error e = {0};
	json_t *p = json_pack("{ss}", "protocol", "a2m/0.1");
	int rc = fed_backend_call(b, "memory/describe", p, 0, &b->describe, &e);
	json_decref(p);
	if (rc) {
		snprintf(err, errlen, "backend '%s': describe failed: %s", b->name, e.message);
		a2m_error_clear(&e);
		return -1;
	}
	b->caps = caps_of(b->describe);
	b->read_only = json_is_true(json_object_get(b->describe, "read_only"));
	const json_t *d = b->describe;
	/* What the router cannot do without (docs/FEDERATION.md). */
	size_t held = 0;
	for (size_t i = 0; i < f->layout.n; i++)
		held += &f->backends[f->tier_backend[i]] == b;
	/* A read-only backend is read, never written or touched: a plain
	** recall server (a corpus, a RAG service) holds one tier whole. */
	const char *lacks = b->read_only && !(b->caps & A2M_CAP_TIERS) && held > 1
				? "the tiers capability (it holds more than one tier)"
			  : !b->read_only && !(b->caps & A2M_CAP_TIERS) ? "the tiers capability"
			  : !b->read_only && !declares(d, A2M_CAP_X_TOUCH, "touch")
				? "the x-touch extension (recall's touch: false, for reads that "
				  "are not uses)"
			  : !b->read_only && !declares(d, A2M_CAP_X_IMPORT, "import")
				? "the x-import extension (remember's import form, which moves "
				  "records with every field)"
			  : (b->caps & A2M_CAP_SCOPES) && !declares(d, A2M_CAP_X_ALL_OWNERS, "all_owners")
				? "the x-all-owners extension (the policy reads every owner's "
				  "records)"
				: NULL;
	if (lacks) {
		snprintf(err, errlen, "backend '%s' lacks %s, which the router needs", b->name,
			 lacks);
		return -1;
	}
	for (size_t i = 0; i < f->layout.n; i++) {
		const a2m_tier *t = &f->layout.tiers[i];
		if (&f->backends[f->tier_backend[i]] != b)
			continue;
		if ((b->caps & A2M_CAP_TIERS) && check_tier(b, t, err, errlen) != 0)
			return -1;
		if (!b->read_only)
			continue;
		/* Nothing may be written into a read-only tier, by anyone. */
		int target = t->capacity > 0;
		for (size_t k = 0; k < f->layout.n; k++) {
			const a2m_tier *o = &f->layout.tiers[k];
			target |= (o->spill_to && strcmp(o->spill_to, t->name) == 0) ||
				  (o->promote_to && strcmp(o->promote_to, t->name) == 0);
		}
		if (target || f->layout.default_tier == i) {
			snprintf(err, errlen, "backend '%s' is read-only, but tier '%s' is written "
				 "to (a capacity, the default tier, or another tier's spill_to or "
				 "promote_to)", b->name, t->name);
			return -1;
		}
	}
	return 0;
}

void fed_backend_stop(fed_backend *b)
{
	if (b->local)
		a2m_close(b->local);
	if (b->client) {
		int status;
		a2m_client_close(b->client, &status);
		a2m_client_free(b->client);
	}
	b->local = NULL;
	b->client = NULL;
}
