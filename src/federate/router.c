/*
** router.c — the router as a handle (server/delegate.h): each message
** through rpc/'s envelope (the same parse, errors and id echo as a2m
** serve), the capability gate, the scope, then the method; describe and
** the router's own event log (DECISIONS 026: a federation keeps one log,
** since folding the backends' cursors into one would break whenever one
** restarted, and every change passes through the router anyway).
**
** Locking: one reader-writer lock. Reads (recall, timeline, fetch, the
** session list, describe, events) run side by side under it shared;
** every write holds it exclusively, so the policy's view of the backends'
** counts does not change under it.
*/
#include <stdlib.h>
#include <string.h>

#include "compose/prompt.h"
#include "federate/federate.h"
#include "federate/fed.h"
#include "protocol/protocol.h"
#include "rpc/rpc.h"
#include "server/delegate.h"
#include "util/log.h"

fed_backend *fed_tier_backend(federation *f, size_t ti)
{
	return &f->backends[f->tier_backend[ti]];
}

int fed_backend_holds_tiers(const federation *f, size_t b)
{
	for (size_t t = 0; t < f->layout.n; t++)
		if (f->tier_backend[t] == b)
			return 1;
	return 0;
}

int fed_tier_of(const federation *f, const json_t *rec)
{
	const char *t = json_string_value(json_object_get(rec, "tier"));
	return t ? a2m_tiers_index(&f->layout, t) : -1;
}

json_t *fed_params(const fed_call *c, const json_t *params, const char *const *names)
{
	json_t *p = json_object();
	for (size_t i = 0; p && names[i]; i++) {
		json_t *v = json_object_get(params, names[i]);
		if (v)
			json_object_set(p, names[i], v);
	}
	if (p && c && c->scoped)
		json_object_set_new(p, "owner", c->owner ? json_string(c->owner) : json_null());
	return p;
}

/* ---- events ---------------------------------------------------------------- */

void fed_event(federation *f, const a2m_change *c)
{
	pthread_mutex_lock(&f->log_mu);
	a2m_event *ev = a2m_event_log_append(f->events, c);
	if (ev && f->subscribed && f->notify) {
		a2m_scope scope = {.scoped = f->sub_scoped, .owner = f->sub_owner};
		json_t *view = a2m_event_view(ev, &scope, f->sub_kinds, NULL);
		char *text = view ? a2m_rpc_notification_text("memory/event", view, NULL) : NULL;
		if (text)
			f->notify(text, f->notify_user);
		free(text);
	}
	pthread_mutex_unlock(&f->log_mu);
}

/* kinds: absent, null, or an array of strings. */
static int check_kinds(const json_t *kinds, a2m_error *err)
{
	size_t i;
	json_t *v;
	if (!kinds || json_is_null(kinds))
		return 0;
	if (!json_is_array(kinds))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "kinds must be an array of strings");
	json_array_foreach(kinds, i, v)
		if (!json_is_string(v))
			return a2m_error_set(err, A2M_INVALID_PARAMS, "kinds must be an array of strings");
	return 0;
}

static int events_poll(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	int rc0;
	const json_t *cur = json_object_get(params, "cursor");
	const json_t *lim = json_object_get(params, "limit");
	const json_t *kinds = json_object_get(params, "kinds");
	if (cur && !json_is_null(cur) && !json_is_string(cur))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "cursor must be a string");
	if (lim && !json_is_null(lim) && (!json_is_integer(lim) || json_integer_value(lim) < 0))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "limit must be an integer, 0 or more");
	if ((rc0 = check_kinds(kinds, err)))
		return rc0;
	a2m_scope scope = {.scoped = c->scoped, .owner = c->owner};
	pthread_mutex_lock(&c->f->log_mu);
	int rc = a2m_event_log_read(c->f->events, json_string_value(cur),
				    lim ? (size_t)json_integer_value(lim) : 0,
				    json_is_array(kinds) ? kinds : NULL, &scope, result, err);
	/* The result holds the log's objects: written while they cannot change. */
	if (!rc) {
		json_t *copy = json_deep_copy(*result);
		json_decref(*result);
		*result = copy;
		if (!copy)
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	pthread_mutex_unlock(&c->f->log_mu);
	return rc;
}

static int subscribe(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	federation *f = c->f;
	const json_t *kinds = json_object_get(params, "kinds");
	int rc0 = check_kinds(kinds, err);
	if (rc0)
		return rc0;
	pthread_mutex_lock(&f->log_mu);
	int can = !c->network && f->notify;
	if (can) {
		json_decref(f->sub_kinds);
		f->sub_kinds = json_is_array(kinds) ? json_deep_copy(kinds) : NULL;
		free(f->sub_owner);
		f->sub_owner = c->owner ? strdup(c->owner) : NULL;
		f->sub_scoped = c->scoped;
		f->subscribed = 1;
	}
	pthread_mutex_unlock(&f->log_mu);
	if (!can)
		return a2m_error_set(err, A2M_CAPABILITY_NOT_SUPPORTED,
				     "push needs a transport that carries notifications (stdio)");
	*result = json_pack("{sb}", "subscribed", 1);
	return 0;
}

static int unsubscribe(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	(void)params;
	(void)err;
	pthread_mutex_lock(&c->f->log_mu);
	if (!c->network)
		c->f->subscribed = 0;
	pthread_mutex_unlock(&c->f->log_mu);
	*result = json_pack("{sb}", "subscribed", 0);
	return 0;
}

/* ---- describe -------------------------------------------------------------- */

json_t *fed_counts(fed_call *c, a2m_error *err)
{
	federation *f = c->f;
	fed_job *jobs = calloc(f->n_backends, sizeof *jobs);
	static const char *const none[] = {NULL};
	json_t *counts = json_object();
	if (!jobs || !counts) {
		free(jobs);
		json_decref(counts);
		a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < f->n_backends; i++) {
		json_t *p = fed_params(c, NULL, none);
		jobs[i].b = &f->backends[i];
		/* A backend without tiers (a corpus) is counted whole. */
		jobs[i].method = f->backends[i].caps & A2M_CAP_TIERS ? "memory/describe"
								     : "memory/timeline";
		jobs[i].params = fed_adapt(jobs[i].b, jobs[i].method, p);
		json_decref(p);
	}
	fed_fanout(jobs, f->n_backends, f->deadline_ms);
	for (size_t i = 0; i < f->layout.n; i++) {
		fed_job *j = &jobs[f->tier_backend[i]];
		json_int_t n = (json_int_t)json_array_size(json_object_get(j->result, "records"));
		size_t k;
		json_t *t;
		json_array_foreach(json_object_get(j->result, "tiers"), k, t)
			if (strcmp(json_string_value(json_object_get(t, "name")) ?: "",
				   f->layout.tiers[i].name) == 0)
				n = json_integer_value(json_object_get(t, "count"));
		json_object_set_new(counts, f->layout.tiers[i].name, json_integer(n));
	}
	fed_jobs_free(jobs, f->n_backends);
	return counts;
}

static int describe(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	federation *f = c->f;
	const char *protocol = json_string_value(json_object_get(params, "protocol"));
	if (json_object_get(params, "protocol") && !protocol)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "protocol must be a string");
	if (protocol && !a2m_protocol_compatible(protocol)) {
		a2m_error_set(err, A2M_PROTOCOL_NOT_SUPPORTED,
			      "protocol %s is not supported; this server speaks %s", protocol,
			      A2M_PROTOCOL);
		return a2m_error_data(err, json_pack("{s[s]}", "supported", A2M_PROTOCOL));
	}
	json_t *counts = fed_counts(c, err);
	if (!counts)
		return err->code;
	json_t *caps = json_array(), *methods = json_array(), *tiers = json_array();
	for (unsigned bit = 1; bit <= A2M_CAP_LAST; bit <<= 1)
		if (c->caps & bit)
			json_array_append_new(caps, json_string(a2m_capability_name(bit)));
	for (const a2m_method *m = a2m_methods; m->name; m++)
		if (c->caps & m->cap)
			json_array_append_new(methods, json_string(m->name));
	json_t *backends = json_array();
	for (size_t i = 0; i < f->layout.n; i++) {
		const a2m_tier *t = &f->layout.tiers[i];
		json_t *o = json_pack("{ss ss sO sI sb sb ss}", "name", t->name, "kind", t->kind,
				      "count", json_object_get(counts, t->name), "capacity",
				      (json_int_t)t->capacity, "shared", t->shared, "per_session",
				      t->per_session, "backend", fed_tier_backend(f, i)->name);
		if (t->spill_to)
			json_object_set_new(o, "spill_to", json_string(t->spill_to));
		if (t->promote_to) {
			json_object_set_new(o, "promote_to", json_string(t->promote_to));
			json_object_set_new(o, "promote_after", json_integer(t->promote_after));
		}
		if (t->half_life_ms > 0)
			json_object_set_new(o, "half_life_seconds", json_real(t->half_life_ms / 1000.0));
		if (c->caps & A2M_CAP_X_DEDUP)
			json_object_set_new(o, "dedup", json_boolean(t->dedup));
		json_array_append_new(tiers, o);
	}
	static const char *const kinds[] = {"memory", "sqlite", "stdio", "http", "postgres"};
	for (size_t i = 0; i < f->n_backends; i++)
		json_array_append_new(backends, json_pack("{ss ss sb}", "name", f->backends[i].name,
							  "kind", kinds[f->backends[i].kind],
							  "up", !f->backends[i].down));
	json_t *res = json_pack("{ss ss so so sO so}", "protocol", A2M_PROTOCOL, "name", f->name,
				"capabilities", caps, "methods", methods, "limits", f->limits,
				"tiers", tiers);
	json_decref(counts);
	if (!res) {
		json_decref(backends);
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	if ((c->caps & A2M_CAP_EMBEDDINGS) && f->embeddings) {
		json_t *e = json_copy(f->embeddings);
		if (f->dims)
			json_object_set_new(e, "dimensions", json_integer(f->dims));
		json_object_set_new(res, "embeddings", e);
	}
	if (c->caps & A2M_CAP_EVENTS)
		json_object_set_new(res, "events", json_pack("{sb sI}", "push",
			!c->network && f->notify != NULL,
			"retain", (json_int_t)a2m_event_log_capacity(f->events)));
	if (c->caps & A2M_CAP_SUMMARIZE)
		json_object_set_new(res, "summarize", json_pack("{so ss}", "model", json_null(),
								"method", "extractive"));
	if (c->caps & A2M_CAP_PROMPT)
		json_object_set_new(res, "prompt", a2m_prompt_describe());
	if ((c->caps & A2M_CAP_X_WHERE) && f->xwhere)
		json_object_set_new(res, "x-where", json_deep_copy(f->xwhere));
	if (c->caps & A2M_CAP_X_DEDUP) {
		/* Found by the backends, each in its tiers (backend.c check_tier). */
		json_t *dd = json_array();
		for (size_t i = 0; i < f->layout.n; i++)
			if (f->layout.tiers[i].dedup)
				json_array_append_new(dd, json_string(f->layout.tiers[i].name));
		json_object_set_new(res, "x-dedup", json_pack("{so ss}", "tiers", dd,
							      "normal_form", "analyzer"));
	}
	json_object_set_new(res, "federation", json_pack("{ss si si so}", "merge",
		f->merge == FED_RRF ? "rank-fusion" : "rerank", "k", f->rrf_k,
		"deadline_ms", f->deadline_ms, "backends", backends));
	*result = res;
	return 0;
}

/* ---- dispatch -------------------------------------------------------------- */

typedef int (*fed_fn)(fed_call *c, json_t *params, json_t **result, a2m_error *err);

static const struct {
	const char *name;
	fed_fn      fn;
	int         writes;
} routes[] = {
	{"memory/describe", describe, 0},
	{"memory/remember", fed_remember, 1},
	{"memory/recall", fed_recall, 0},
	{"memory/timeline", fed_timeline, 0},
	{"memory/forget", fed_forget, 1},
	{"memory/promote", fed_promote, 1},
	{"memory/consolidate", fed_consolidate, 1},
	{"memory/reinforce", fed_reinforce, 1},
	{"memory/fetch", fed_fetch, 0},
	{"memory/session/list", fed_session_list, 0},
	{"memory/session/close", fed_session_close, 1},
	{"memory/events", events_poll, 0},
	{"memory/events/subscribe", subscribe, 0},
	{"memory/events/unsubscribe", unsubscribe, 0},
	{"memory/summarize", fed_summarize, 1},
};

/* The scope of a call (spec §6): over a network, the principal, and an
** owner that disagrees is refused; locally, the owner asked for. */
static int scope_of(fed_call *c, const json_t *params, a2m_error *err)
{
	const json_t *o = json_object_get(params, "owner");
	if (!(c->caps & A2M_CAP_SCOPES))
		return 0;
	if (o && !json_is_null(o) && !json_is_string(o))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "owner must be a string");
	if (c->network) {
		if (json_is_string(o) && strcmp(json_string_value(o), c->principal) != 0)
			return a2m_error_set(err, A2M_SCOPE_DENIED, "owner is not the "
					     "authenticated principal");
		c->scoped = 1;
		c->owner = c->principal;
	} else if (o) {
		c->scoped = 1;
		c->owner = json_string_value(o);
	}
	return 0;
}

static void run(federation *f, fed_call *c, const a2m_rpc_request *req, a2m_rpc_outcome *o)
{
	const char *name = req->method->name;
	memset(o, 0, sizeof *o);
	if (!(c->caps & req->method->cap)) {
		o->rc = a2m_error_capability(&o->err, req->method->cap, name);
		return;
	}
	if ((o->rc = scope_of(c, req->params, &o->err)))
		return;
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		if (strcmp(routes[i].name, name) != 0)
			continue;
		if (routes[i].writes)
			pthread_rwlock_wrlock(&f->rw);
		else
			pthread_rwlock_rdlock(&f->rw);
		o->rc = routes[i].fn(c, req->params, &o->result, &o->err);
		pthread_rwlock_unlock(&f->rw);
		if (c->earned) {
			/* Recall's touches earned a promotion: a write, done once
			** the shared lock is gone (the answer stands either way). */
			a2m_error e = {0};
			pthread_rwlock_wrlock(&f->rw);
			if (fed_promote_earned(f, c->earned, &e) != 0)
				a2m_log(A2M_LOG_WARN, "promoting what recall earned: %s", e.message);
			pthread_rwlock_unlock(&f->rw);
			a2m_error_clear(&e);
			json_decref(c->earned);
			c->earned = NULL;
		}
		return;
	}
	o->rc = a2m_error_set(&o->err, A2M_METHOD_NOT_FOUND, "%s is not served here", name);
}

static int fed_handle(void *ctx, const char *message, size_t len, int network,
		      const char *principal, char **reply)
{
	federation *f = ctx;
	a2m_rpc_request req;
	a2m_rpc_outcome o;
	int rc;
	if ((rc = a2m_rpc_parse(message, len, &req, reply, NULL)) != 1)
		return rc;
	fed_call c = {.f = f, .network = network, .principal = principal, .caps = f->caps};
	/* Nobody authenticated over a network: no scopes (spec §6). */
	if (network && !principal)
		c.caps &= ~A2M_CAP_SCOPES;
	run(f, &c, &req, &o);
	rc = a2m_rpc_reply(&req, &o, reply, NULL);
	a2m_rpc_request_free(&req);
	return rc;
}

static void fed_set_notify(void *ctx, a2m_notify_fn fn, void *user)
{
	federation *f = ctx;
	pthread_mutex_lock(&f->log_mu);
	f->notify = fn;
	f->notify_user = user;
	if (!fn)
		f->subscribed = 0;
	pthread_mutex_unlock(&f->log_mu);
}

static void fed_close(void *ctx)
{
	federation *f = ctx;
	fed_free(f);
	pthread_rwlock_destroy(&f->rw);
	pthread_mutex_destroy(&f->log_mu);
	pthread_mutex_destroy(&f->analyzer_mu);
	free(f);
}

static const a2m_delegate router = {fed_handle, fed_set_notify, fed_close};

/* ---- open ------------------------------------------------------------------ */

/* The smaller of two limits objects' member name (absent: the other's). */
static void tighten(json_t *limits, const json_t *other)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)other, k, v) {
		json_t *mine = json_object_get(limits, k);
		if (json_is_integer(v) &&
		    (!mine || json_integer_value(v) < json_integer_value(mine)))
			json_object_set_new(limits, k, json_integer(json_integer_value(v)));
	}
}

/*
** Narrows f->xwhere to what the describe's x-where object x also has: the
** operators both read (the first backend's object is taken whole).
*/
static void xwhere_meet(federation *f, const json_t *x)
{
	if (!json_is_object(x))
		return;
	if (!f->xwhere) {
		f->xwhere = json_deep_copy(x);
		return;
	}
	json_t *ops = json_object_get(f->xwhere, "operators");
	const json_t *theirs = json_object_get(x, "operators");
	json_t *keep = json_array();
	size_t i, j;
	json_t *v, *w;
	json_array_foreach(ops, i, v)
		json_array_foreach(theirs, j, w)
			if (json_equal(v, w)) {
				json_array_append(keep, v);
				break;
			}
	json_object_set_new(f->xwhere, "operators", keep);
}

/* The capabilities, limits and embeddings the router can deliver. */
static int settle_describe(federation *f, char *err, size_t errlen)
{
	/* The router's own: its layout, its log, its summaries and prompts. */
	unsigned common = A2M_CAP_SALIENCE | A2M_CAP_SCOPES | A2M_CAP_SESSIONS | A2M_CAP_KEYS |
			  A2M_CAP_EMBEDDINGS | A2M_CAP_EXTERNAL | A2M_CAP_X_DEDUP;
	const char *metric = NULL;
	json_t *metrics = NULL, *dims = NULL;
	/* x-where: a `where` goes to the backends as it is, so its operators
	** are what every backend reads, read-only ones included (they are read). */
	int where_ops = 1;
	f->limits = json_object();
	for (size_t i = 0; i < f->n_backends; i++) {
		const json_t *d = f->backends[i].describe;
		if (!(f->backends[i].caps & A2M_CAP_X_WHERE))
			where_ops = 0;
		else
			xwhere_meet(f, json_object_get(d, "x-where"));
		/* A read-only backend (a corpus) needs none of them: nothing is
		** written there, and a read it cannot serve skips it (fed_adapt). */
		if (!f->backends[i].read_only)
			common &= f->backends[i].caps;
		tighten(f->limits, json_object_get(d, "limits"));
		const json_t *e = json_object_get(d, "embeddings");
		const char *m = json_string_value(json_object_get(e, "metric"));
		if (!e)
			continue;
		if (metric && m && strcmp(metric, m) != 0) {
			snprintf(err, errlen, "backend '%s' compares vectors by %s, another by %s: "
				 "a record moved between them would be misranked",
				 f->backends[i].name, m, metric);
			json_decref(metrics);
			return -1;
		}
		metric = m;
		const json_t *d2 = json_object_get(e, "dimensions");
		if (json_is_integer(d2) && json_integer_value(d2) > 0)
			dims = (json_t *)d2;
		/* §3.7: only what every vector-holding backend can do. */
		const json_t *ms = json_object_get(e, "metrics");
		if (!metrics) {
			metrics = json_deep_copy(ms);
		} else {
			json_t *keep = json_array();
			size_t k;
			json_t *v;
			json_array_foreach(metrics, k, v) {
				size_t k2;
				json_t *w;
				json_array_foreach(ms, k2, w)
					if (json_equal(v, w))
						json_array_append(keep, v);
			}
			json_decref(metrics);
			metrics = keep;
		}
	}
	/* x-touch is the router's own: it asks every backend with touch: false
	** and touches what its merge kept unless the caller said false. */
	f->caps = A2M_CAP_CORE | A2M_CAP_TIERS | A2M_CAP_EVENTS | A2M_CAP_SUMMARIZE |
		  A2M_CAP_PROMPT | A2M_CAP_X_TOUCH | common;
	if (where_ops && f->xwhere)
		f->caps |= A2M_CAP_X_WHERE;
	if (dims)
		f->dims = json_integer_value(dims);
	if (metric)
		f->embeddings = json_pack("{so ss so}", "dimensions", dims ? json_incref(dims)
								   : json_null(),
					  "metric", metric, "metrics",
					  metrics ? metrics : json_array());
	else
		json_decref(metrics);
	json_t *v = json_object_get(f->limits, "max_recall_limit");
	f->max_recall_limit = v ? json_integer_value(v) : 1000;
	v = json_object_get(f->limits, "default_recall_limit");
	f->default_recall_limit = v ? json_integer_value(v) : 10;
	v = json_object_get(f->limits, "max_records_per_call");
	f->max_records_per_call = v ? json_integer_value(v) : 1000;
	return 0;
}

int a2m_federate_open(const char *path, a2m **out, char *err, size_t errlen)
{
	federation *f = calloc(1, sizeof *f);
	*out = NULL;
	if (!f || pthread_rwlock_init(&f->rw, NULL) != 0) {
		free(f);
		snprintf(err, errlen, "out of memory");
		return A2M_NOMEM;
	}
	pthread_mutex_init(&f->log_mu, NULL);
	pthread_mutex_init(&f->analyzer_mu, NULL);
#ifdef A2M_TEST_HOOKS
	f->crash_at = getenv("A2M_TEST_FEDERATE_CRASH_AT");
#endif
	int rc = fed_config_load(f, path, err, errlen);
	for (size_t i = 0; !rc && i < f->n_backends; i++)
		rc = fed_backend_start(f, &f->backends[i], err, errlen);
	if (!rc)
		rc = settle_describe(f, err, errlen);
	if (!rc && !(f->events = a2m_event_log_new(1024))) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	if (!rc)
		rc = fed_journal_recover(f, err, errlen);
	if (!rc && a2m_open_delegate(&router, f, out) != A2M_OK) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	if (rc) {
		fed_close(f);
		return A2M_ERROR;
	}
	return A2M_OK;
}
