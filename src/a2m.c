/*
** a2m.c — the handle of the public API (include/a2m.h): builds a server from
** a config (store engine, scorer, tier stack, events, limits) and runs each
** call's method under one reader-writer lock, which is what makes a handle
** safe to share between threads: reads the method table marks shared
** (recall, timeline) hold it shared and run side by side, everything else
** holds it exclusively (parsing, serialising and a cached describe happen
** outside it).
*/
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "config.h"
#include "events.h"
#include "protocol/events_hook.h"
#include "protocol/protocol.h"
#include "rank/scorer.h"
#include "rpc/rpc.h"
#include "stack/stack.h"
#include "stack/where.h"
#include "util/log.h"
#include "util/thread.h"
#include "store/store.h"

struct a2m {
	/* Writers first: under a steady stream of recalls a write must still
	** get its turn (glibc's default lets readers overtake it forever). */
	pthread_rwlock_t lock;
	a2m_server      srv;
	a2m_notify_fn   notify;
	void           *notify_user;
};

/*
** How recall blends relevance with recency and salience (stack.h,
** a2m_blend; DESIGN §4). describe reports them.
*/
#define BLEND_RELEVANCE 0.75
#define BLEND_RECENCY   0.15
#define BLEND_SALIENCE  0.10

static int open_fail(char **errmsg, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int open_fail(char **errmsg, int code, const char *fmt, ...)
{
	if (errmsg) {
		char buf[512];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(buf, sizeof buf, fmt, ap);
		va_end(ap);
		*errmsg = strdup(buf);
	}
	return code;
}

/*
** The server's embedder, when cfg asks for one (docs/EMBEDDINGS.md): 0
** with *out NULL when it does not, -1 with a message in err for a bad
** configuration. No network I/O: the model server may still be down.
*/
static int make_embedder(const a2m_config *cfg, a2m_embedder **out, char *err,
			 size_t errlen)
{
	*out = NULL;
	if (!cfg->embed_kind)
		return 0;
	a2m_embedder_config ec = {.kind = cfg->embed_kind, .url = cfg->embed_url,
				  .model = cfg->embed_model, .api_key = cfg->embed_api_key,
				  .timeout_ms = (long)cfg->embed_timeout_ms};
	*out = a2m_embedder_new(&ec, err, errlen);
	return *out ? 0 : -1;
}

/*
** The scorer: text ranked by ranking ("bm25", the default, or the old
** "lexical"), fused with the caller's vectors under metric, and with the
** embedder's generated vectors when generated is set; BM25's analyser
** analyses a batch on helper_threads (a2m_config). NULL with a message
** in err.
*/
static a2m_scorer *make_scorer(const char *ranking, a2m_metric metric, int generated,
			       int helper_threads, char *err, size_t errlen)
{
	a2m_scorer *text;
	if (!ranking || strcmp(ranking, "bm25") == 0) {
		a2m_analyzer_options opt;
		a2m_analyzer_options_init(&opt);
		opt.batch_threads = helper_threads;
		text = a2m_scorer_bm25_new(&opt);
	} else if (strcmp(ranking, "lexical") == 0) {
		text = a2m_scorer_lexical_new();
	} else {
		snprintf(err, errlen, "unknown ranking '%s' (use bm25 or lexical)", ranking);
		return NULL;
	}
	/* With an embedder, a third part compares generated vectors only. */
	a2m_scorer *parts[3] = {text, a2m_scorer_vector_new(metric),
				generated ? a2m_scorer_gen_vector_new(A2M_GEN_MIN_COSINE) : NULL};
	a2m_scorer *scorer = a2m_scorer_hybrid_new(parts, generated ? 3 : 2);
	if (!scorer)
		snprintf(err, errlen, "out of memory");
	return scorer;
}

/* The directory procedural records are mirrored into: beside the database
** (DECISIONS 024), "memory.db" → "memory.procedural". */
static char *procedural_dir(const char *db_path)
{
	size_t len = strlen(db_path);
	if (len > 3 && strcmp(db_path + len - 3, ".db") == 0)
		len -= 3;
	char *dir = malloc(len + sizeof ".procedural");
	if (dir) {
		memcpy(dir, db_path, len);
		memcpy(dir + len, ".procedural", sizeof ".procedural");
	}
	return dir;
}

/* Which record fields `where` may test: those of the declared capabilities. */
static unsigned where_fields(unsigned caps)
{
	unsigned f = 0;
	if (caps & A2M_CAP_TIERS)
		f |= A2M_FIELD_TIER;
	if (caps & A2M_CAP_SALIENCE)
		f |= A2M_FIELD_SALIENCE;
	if (caps & A2M_CAP_SCOPES)
		f |= A2M_FIELD_OWNER;
	if (caps & A2M_CAP_SESSIONS)
		f |= A2M_FIELD_SESSION;
	if (caps & A2M_CAP_KEYS)
		f |= A2M_FIELD_KEY;
	if (caps & A2M_CAP_EXTERNAL)
		f |= A2M_FIELD_EXTERNAL;
	return f;
}

static int open_store(const a2m_config *cfg, const a2m_tier_layout *layout, a2m_store **store,
		      char *err, size_t errlen)
{
	if (strcmp(cfg->engine, "memory") == 0) {
		if (cfg->read_only) {
			snprintf(err, errlen, "a read-only server needs an existing database (--db)");
			return A2M_RANGE;
		}
		return a2m_store_memory_open(store, err, errlen) ? A2M_CANTOPEN : A2M_OK;
	}
	a2m_sqlite_options opt = {0};
	opt.synchronous_full = strcmp(cfg->synchronous, "normal") != 0;
	opt.read_only = cfg->read_only != 0;
	opt.unembedded_index = cfg->embed_kind != NULL;
	opt.merge_inline = cfg->helper_threads == 0;
	char *dir = NULL;
	for (size_t i = 0; i < layout->n; i++)
		if (strcmp(layout->tiers[i].kind, "procedural") == 0) {
			opt.procedural_tier = layout->tiers[i].name;
			break;
		}
	if (opt.procedural_tier && strcmp(cfg->path, ":memory:") != 0) {
		if (!(dir = procedural_dir(cfg->path))) {
			snprintf(err, errlen, "out of memory");
			return A2M_NOMEM;
		}
		opt.procedural_dir = dir;
	} else {
		opt.procedural_tier = NULL;
	}
	int rc = a2m_store_sqlite_open(cfg->path, &opt, store, err, errlen);
	free(dir);
	return rc ? A2M_CANTOPEN : A2M_OK;
}

/*
** The server over an opened store: scorer, index, stack, event log, limits.
** Takes store and embedder (closed on failure) and the layout; NULL with a
** message in err, and *code, on failure.
*/
static a2m *make_handle(const a2m_config *cfg, unsigned caps, a2m_metric metric,
			a2m_store *store, a2m_embedder *embedder, a2m_tier_layout *layout,
			int *code, char *err, size_t errlen)
{
	a2m_scorer *scorer = make_scorer(cfg->ranking, metric, embedder != NULL,
					  (int)cfg->helper_threads, err, errlen);
	a2m_stack *stack = NULL;
	a2m *h = NULL;
	*code = A2M_NOMEM;
	if (!scorer)
		goto fail;
	/*
	** The store keeps the scorer's index from now on, in the same
	** transactions as the records; an index built by another analysis is
	** rebuilt here, once (docs/RANKING.md).
	*/
	if (scorer->indexer && store->ops->index_attach &&
	    store->ops->index_attach(store, scorer->indexer) != 0) {
		snprintf(err, errlen, "cannot build the search index: %s", store->errmsg);
		*code = A2M_CANTOPEN;
		goto fail;
	}
	a2m_stack_config scfg = {0};
	scfg.tiers = *layout;
	scfg.fields = where_fields(caps);
	scfg.metric = metric;
	scfg.default_salience = 1.0;
	scfg.blend = (a2m_blend){BLEND_RELEVANCE, BLEND_RECENCY, BLEND_SALIENCE};
	scfg.read_only = cfg->read_only != 0;
	scfg.embedder = embedder;
	scfg.touch_max = (size_t)cfg->touch_buffer;
	/* From here the stack owns the store, the scorer, the embedder and the
	** layout, and a2m_stack_free releases them, also when it fails. */
	memset(layout, 0, sizeof *layout);
	embedder = NULL;
	stack = a2m_stack_new(store, scorer, &scfg);
	store = NULL;
	scorer = NULL;
	h = calloc(1, sizeof *h);
	char *name = strdup(cfg->name);
	a2m_event_log *events = (caps & A2M_CAP_EVENTS)
		? a2m_event_log_new((size_t)cfg->events_retain) : NULL;
	if (!stack || !h || !name || ((caps & A2M_CAP_EVENTS) && !events)) {
		a2m_event_log_free(events);
		free(name);
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* Without a cache describe is only slower. */
	h->srv.describe_cache = a2m_describe_cache_new();
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&h->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	h->srv.name = name;
	h->srv.declared = caps;
	h->srv.stack = stack;
	h->srv.read_only = cfg->read_only != 0;
	h->srv.events = events;
	h->srv.limits.max_records_per_call = cfg->max_records_per_call;
	h->srv.limits.max_content_length = cfg->max_content_length;
	h->srv.limits.max_recall_limit = cfg->max_recall_limit;
	h->srv.limits.default_recall_limit = cfg->default_recall_limit;
	a2m_stack_on_change(stack, a2m_events_on_change, &h->srv);
	*code = A2M_OK;
	return h;
fail:
	if (!stack) {
		if (embedder)
			embedder->destroy(embedder);
		if (scorer)
			scorer->destroy(scorer);
		if (store)
			store->ops->close(store);
		a2m_tiers_free(layout);
	}
	a2m_stack_free(stack);
	free(h);
	return NULL;
}

/*
** The configuration as it will be served: the caller's options over the
** file's over the defaults, and what follows from them. 0, or a status with
** a message in err.
*/
static int resolve(a2m_config *cfg, a2m_tier_layout *layout, unsigned *caps,
		   a2m_metric *metric, char *err, size_t errlen)
{
	if (cfg->config_file && a2m_config_load_file(cfg, cfg->config_file, layout, err, errlen))
		return A2M_RANGE;
	if (!layout->n && a2m_tiers_default(layout) != 0) {
		snprintf(err, errlen, "out of memory");
		return A2M_NOMEM;
	}
	if (cfg->default_recall_limit > cfg->max_recall_limit)
		cfg->default_recall_limit = cfg->max_recall_limit;
	/* After the file: resolved once, for the analyser and the store alike. */
	if (cfg->helper_threads < 0)
		cfg->helper_threads = a2m_helpers_default();
	*caps = ~0u;
	if (cfg->capabilities &&
	    a2m_config_parse_capabilities(cfg->capabilities, caps, err, errlen) != 0)
		return A2M_RANGE;
	*caps &= (A2M_CAP_PROMPT << 1) - 1;
	if (a2m_metric_parse(cfg->metric, metric) != 0) {
		snprintf(err, errlen, "unknown metric '%s' (use cosine, dot or l2)", cfg->metric);
		return A2M_RANGE;
	}
	return A2M_OK;
}

int a2m_open(const a2m_config *cfg_in, a2m **out, char **errmsg)
{
	if (errmsg)
		*errmsg = NULL;
	if (!out)
		return A2M_MISUSE;
	*out = NULL;
	/* A copy: the file fills it, the caller's stays as it was. */
	a2m_config *cfg = a2m_config_copy(cfg_in);
	if (!cfg)
		return open_fail(errmsg, A2M_NOMEM, "out of memory");
	char err[512] = "";
	a2m_tier_layout layout = {0};
	unsigned caps;
	a2m_metric metric;
	a2m_embedder *embedder = NULL;
	a2m_store *store = NULL;
	int rc = resolve(cfg, &layout, &caps, &metric, err, sizeof err);
	/* No network I/O at open: the model server may still be down. */
	if (!rc && make_embedder(cfg, &embedder, err, sizeof err) != 0)
		rc = A2M_RANGE;
	char why[480];
	if (!rc && (rc = open_store(cfg, &layout, &store, why, sizeof why)) != 0)
		snprintf(err, sizeof err, "cannot open store: %s", why);
	if (!rc && !(*out = make_handle(cfg, caps, metric, store, embedder, &layout, &rc, err,
					sizeof err)))
		store = NULL, embedder = NULL;  /* make_handle released them */
	if (rc) {
		if (embedder)
			embedder->destroy(embedder);
		if (store)
			store->ops->close(store);
		a2m_tiers_free(&layout);
		open_fail(errmsg, rc, "%s", err);
	}
	a2m_config_free(cfg);
	return rc;
}

/*
** The call of one request: who sent it (network, principal: NULL for a
** local caller or nobody authenticated) and what that gives it. A server
** that cannot authenticate its caller must not offer scopes over a network
** (spec §6). push starts 0: a network binding cannot push (§8.3), a
** shared method emits nothing, and a local caller's is read under the
** exclusive lock, which a2m_set_notify changes it under (handle).
*/
static a2m_call call_of(a2m *h, int network, const char *principal)
{
	a2m_call c = {.srv = &h->srv, .caps = h->srv.declared, .network = network,
		      .principal = network ? principal : NULL};
	if (network && !principal)
		c.caps &= ~(unsigned)A2M_CAP_SCOPES;
	return c;
}

/*
** The one path of memory/describe that holds no lock: a network caller's
** request whose params hold at most a protocol, answered from the cache
** (a network caller's push is always off, so the variant depends on nothing
** a local caller can change). head is what goes before the result (the
** response's start for this id). 1 with *reply on a hit; 0: let the
** handler answer it under the lock, as every other describe.
*/
static int describe_cached(const a2m_call *call, const char *head, const char *protocol,
			   char **reply)
{
	size_t n;
	return call->network && a2m_describe_cached(call, protocol, head, "}", reply, &n);
}

/* The same for a request known to the parser-free recogniser (rpc.h),
** before any JSON parser runs. */
static int describe_quick(const a2m_call *call, const char *msg, size_t len, char **reply)
{
	a2m_rpc_quick q;
	char head[128], protocol[32];
	if (!call->network || !a2m_rpc_quick_describe(msg, len, &q) ||
	    !a2m_rpc_quick_head(&q, head, sizeof head) ||
	    (q.protocol && q.protocol_len >= sizeof protocol))
		return 0;
	if (q.protocol) {
		memcpy(protocol, q.protocol, q.protocol_len);
		protocol[q.protocol_len] = '\0';
	}
	return describe_cached(call, head, q.protocol ? protocol : NULL, reply);
}

/* describe_cached() for a parsed request. */
static int describe_parsed(const a2m_call *call, const a2m_rpc_request *req, char **reply)
{
	char head[128];
	if (!call->network || !req->id || req->method->text != a2m_describe_text ||
	    !a2m_describe_plain(req->params) || !a2m_rpc_result_head(req->id, head, sizeof head))
		return 0;
	json_t *p = json_object_get(req->params, "protocol");
	return describe_cached(call, head, json_is_string(p) ? json_string_value(p) : NULL, reply);
}

/*
** Runs a method the table marks shared under the shared lock. Returns 1
** with *o the outcome, or 0 with *o empty when the method answered
** A2M_NEED_EXCLUSIVE (it would have had to write: a promotion, the
** touches' flush, an embedding; it changed nothing), and the caller then
** runs it again exclusively.
*/
static int call_shared(a2m *h, a2m_call *call, const a2m_rpc_request *req,
		       a2m_rpc_outcome *o)
{
	call->shared = 1;
	pthread_rwlock_rdlock(&h->lock);
	a2m_rpc_call(call, req, o);
	pthread_rwlock_unlock(&h->lock);
	call->shared = 0;
	if (o->rc != A2M_NEED_EXCLUSIVE)
		return 1;
	json_decref(o->result);
	free(o->text);
	a2m_error_clear(&o->err);
	memset(o, 0, sizeof *o);
	return 0;
}

/*
** After a shared call: writes what it left due (recall's touches, once
** full or old), as an exclusive call would have at its end. A failure is
** only logged: the call has its answer, and the touches wait for the next.
*/
static void settle(a2m *h)
{
	a2m_stack *st = h->srv.stack;
	if (!a2m_stack_settle_due(st))
		return;
	a2m_error err = {0};
	pthread_rwlock_wrlock(&h->lock);
	if (a2m_stack_settle(st, &err) != 0)
		a2m_log(A2M_LOG_WARN, "writing recall's access counts: %s", err.message);
	pthread_rwlock_unlock(&h->lock);
	a2m_error_clear(&err);
}

/*
** Parsing and serialising happen outside the lock: they touch only the
** request and the response. Only running the method holds it — shared for
** the methods the table marks so, exclusive for the rest — except for a
** describe a network caller gets from the cache (describe_cached).
*/
static int handle(a2m *h, const char *message, size_t len, int network, const char *principal,
		  char **reply)
{
	if (!h || !message || !reply) {
		if (reply)
			*reply = NULL;
		return A2M_MISUSE;
	}
	if (len == A2M_NUL_TERMINATED)
		len = strlen(message);
	a2m_rpc_request req;
	a2m_rpc_outcome o;
	int rc;
	a2m_call call = call_of(h, network, principal);
	if (describe_quick(&call, message, len, reply))
		return A2M_OK;
	if ((rc = a2m_rpc_parse(message, len, &req, reply, NULL)) != 1)
		return rc;
	if (describe_parsed(&call, &req, reply)) {
		a2m_rpc_request_free(&req);
		return A2M_OK;
	}
	if (req.method->shared && call_shared(h, &call, &req, &o)) {
		settle(h);
		rc = a2m_rpc_reply(&req, &o, reply, NULL);
		a2m_rpc_request_free(&req);
		return rc;
	}
	pthread_rwlock_wrlock(&h->lock);
	call.push = network ? 0 : h->srv.can_push;
	a2m_rpc_call(&call, &req, &o);
	/* A result holding the event log's objects is written before the lock
	** goes, while they cannot change. */
	int shares = req.method->shares;
	if (shares)
		rc = a2m_rpc_reply(&req, &o, reply, NULL);
	pthread_rwlock_unlock(&h->lock);
	if (!shares)
		rc = a2m_rpc_reply(&req, &o, reply, NULL);
	a2m_rpc_request_free(&req);
	return rc;
}

int a2m_handle(a2m *h, const char *message, size_t len, char **reply)
{
	return handle(h, message, len, 0, NULL, reply);
}

int a2m_handle_network(a2m *h, const char *message, size_t len, const char *principal,
		       char **reply)
{
	return handle(h, message, len, 1, principal, reply);
}

/*
** Frames a notification the server tells (protocol/events.c) as responses
** are framed, and hands it to the user's callback: called with the lock
** held, from inside a2m_handle, right after the change it reports.
*/
static void deliver(void *ctx, const char *method, json_t *params)
{
	a2m *h = ctx;
	if (!h->notify)
		return;
	char *text = a2m_rpc_notification_text(method, json_incref(params), NULL);
	if (text)
		h->notify(text, h->notify_user);
	free(text);
}

void a2m_set_notify(a2m *h, a2m_notify_fn fn, void *user)
{
	pthread_rwlock_wrlock(&h->lock);
	h->notify = fn;
	h->notify_user = user;
	h->srv.notify = fn ? deliver : NULL;
	h->srv.notify_ctx = h;
	h->srv.can_push = fn != NULL;
	if (!fn) {
		/* A subscription cannot outlive the channel that carries it. */
		h->srv.subscribed = 0;
	}
	pthread_rwlock_unlock(&h->lock);
}

void a2m_close(a2m *h)
{
	if (!h)
		return;
	a2m_stack_free(h->srv.stack);
	a2m_event_log_free(h->srv.events);
	a2m_describe_cache_free(h->srv.describe_cache);
	json_decref(h->srv.sub_kinds);
	free(h->srv.sub_owner);
	free((char *)h->srv.name);
	pthread_rwlock_destroy(&h->lock);
	free(h);
}

void a2m_free(void *p)
{
	free(p);
}

const char *a2m_libversion(void)
{
	return A2M_VERSION;
}

int a2m_libversion_number(void)
{
	return A2M_VERSION_NUMBER;
}

const char *a2m_strerror(int code)
{
	switch (code) {
	case A2M_OK:                       return "not an error";
	case A2M_ERROR:                    return "error";
	case A2M_NOMEM:                    return "out of memory";
	case A2M_MISUSE:                   return "library used wrongly";
	case A2M_RANGE:                    return "value out of range";
	case A2M_CANTOPEN:                 return "cannot open the store";
	case A2M_PARSE_ERROR:              return "parse error";
	case A2M_INVALID_REQUEST:          return "invalid request";
	case A2M_METHOD_NOT_FOUND:         return "method not found";
	case A2M_INVALID_PARAMS:           return "invalid params";
	case A2M_INTERNAL_ERROR:           return "internal error";
	case A2M_UNKNOWN_RECORD:           return "unknown record";
	case A2M_UNKNOWN_TIER:             return "unknown tier";
	case A2M_CAPABILITY_NOT_SUPPORTED: return "capability not supported";
	case A2M_READ_ONLY:                return "read-only";
	case A2M_SCOPE_DENIED:             return "scope denied";
	case A2M_QUOTA_EXCEEDED:           return "quota exceeded";
	case A2M_PROTOCOL_NOT_SUPPORTED:   return "protocol not supported";
	case A2M_EMBEDDING_MISMATCH:       return "embedding mismatch";
	default:                           return "unknown error";
	}
}
