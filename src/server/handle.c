/*
** handle.c — a2m_handle (include/a2m.h): each call's method run under the
** handle's reader-writer lock, which is what makes a handle safe to share
** between threads: the methods the table marks shared (recall, timeline)
** hold it shared and run side by side, everything else holds it
** exclusively; parsing, serialising and a describe from the cache happen
** outside it. Also the notifications' framing, and the library's version
** and status names.
**
** Group commit (store.h, sync_owed): a call that committed a durable
** change is answered only once a sync covered it, and that wait happens
** after the lock is released, so the next writers apply their changes
** meanwhile and share the sync. A transport that would rather not block
** its thread takes the wait apart (server/deferred.h).
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "protocol/events_hook.h"
#include "protocol/protocol.h"
#include "rpc/rpc.h"
#include "server/delegate.h"
#include "server/deferred.h"
#include "server/inprocess.h"
#include "server/server.h"
#include "util/clock.h"
#include "util/json_write.h"
#include "util/log.h"

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
	/* A token whose principal is "*" belongs to a router that authenticated
	** its own callers and names their owner in each request (docs/HTTP.md,
	** docs/FEDERATION.md): it is scoped as a local caller is. */
	if (network && principal && strcmp(principal, "*") == 0) {
		c.network = 0;
		c.principal = NULL;
	}
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
** Expiry (x-expiry): removes what has expired, a batch of SWEEP_BATCH per
** transaction, at most `batches` of them (0: until nothing is due), under
** the exclusive lock; the events go out as any write's do (a shared log's
** appended, a subscriber's pushed), from the calling thread. Returns 0, or -1 when the
** store failed (logged).
*/
#define SWEEP_BATCH 256

static int sweep(a2m *h, int batches)
{
	a2m_stack *st = h->srv.stack;
	int rc = 0;
	if (!a2m_stack_expiry_next(st))
		return 0;  /* no record expires: not even the clock is read */
	for (int done = 0; !batches || done < batches; done++) {
		if (!a2m_stack_expiry_due(st, a2m_clock_now_ms()))
			break;
		a2m_error err = {0};
		size_t removed = 0;
		pthread_rwlock_wrlock(&h->lock);
		rc = a2m_stack_expire(st, SWEEP_BATCH, &removed, &err);
		/* A shared log (PostgreSQL) holds the batch's event until this:
		** logged now, not at the next call's end (there may be none). */
		a2m_events_settle(&h->srv);
		pthread_rwlock_unlock(&h->lock);
		if (rc)
			a2m_log(A2M_LOG_WARN, "removing expired records: %s", err.message);
		a2m_error_clear(&err);
		if (rc || !removed)
			break;
	}
	return rc ? -1 : 0;
}

/*
** On a store other servers write (h->watched: PostgreSQL), what they wrote
** to expire is not in this stack's cache, and were they to stop, nothing
** would remove it: so an idle caller rereads the earliest expiry whenever
** the deployment's version moved (one read of the state row otherwise).
** Removal stays once per record whoever sweeps (postgres_extend.c).
*/
static void reread_expiry(a2m *h)
{
	a2m_store *s = h->watched;
	if (!s || !s->ops->version || h->srv.read_only)
		return;
	uint64_t v = s->ops->version(s);
	if (!v || v == atomic_load(&h->expiry_seen))
		return;
	pthread_rwlock_wrlock(&h->lock);
	if (a2m_stack_expiry_init(h->srv.stack) == 0)
		atomic_store(&h->expiry_seen, v);
	pthread_rwlock_unlock(&h->lock);
}

int a2m_sweep(a2m *h, int64_t *next_ms)
{
	if (next_ms)
		*next_ms = -1;
	if (!h)
		return A2M_MISUSE;
	if (h->delegate)
		return A2M_OK;  /* a federation's backends sweep their own records */
	reread_expiry(h);
	int rc = sweep(h, 0);
	if (next_ms) {
		int64_t at = a2m_stack_expiry_next(h->srv.stack), now = a2m_clock_now_ms();
		*next_ms = !at || h->srv.read_only ? -1 : at > now ? at - now : 0;
	}
	return rc ? A2M_ERROR : A2M_OK;
}

/*
** The end of a call that owed a sync: waits for it, and when it failed
** turns the answer into an error (the change was applied but is not known
** to be durable, so it must not be acknowledged). id: the request's (NULL
** for a notification, which gets no answer either way).
*/
static int await_durable(a2m *h, uint64_t ticket, const json_t *id, char **reply)
{
	char msg[256];
	if (a2m_stack_sync_wait(h->srv.stack, ticket, msg, sizeof msg) == 0)
		return A2M_OK;
	a2m_log(A2M_LOG_ERROR, "%s", msg);
	free(*reply);
	*reply = NULL;
	if (!id)
		return A2M_OK;
	*reply = a2m_rpc_error_text(id, A2M_INTERNAL_ERROR, msg, NULL, NULL);
	return *reply ? A2M_OK : A2M_NOMEM;
}

void a2m_handle_swept(a2m *h)
{
	sweep(h, 1);
}

/*
** Parsing and serialising happen outside the lock: they touch only the
** request and the response. Only running the method holds it — shared for
** the methods the table marks so, exclusive for the rest — except for a
** describe a network caller gets from the cache (describe_cached). With
** pending, a sync the call owes is left to a2m_deferred_finish().
*/
static int run(a2m *h, a2m_call *callp, a2m_rpc_request *reqp, int network, char **reply,
	       void **pending);

static int handle(a2m *h, const char *message, size_t len, int network, const char *principal,
		  char **reply, void **pending)
{
	if (!h || !message || !reply) {
		if (reply)
			*reply = NULL;
		return A2M_MISUSE;
	}
	if (len == A2M_NUL_TERMINATED)
		len = strlen(message);
	if (h->delegate)
		return h->delegate->handle(h->delegate_ctx, message, len, network, principal,
					   reply);
	a2m_rpc_request req;
	int rc;
	a2m_call call = call_of(h, network, principal);
	if (describe_quick(&call, message, len, reply))
		return A2M_OK;
	if ((rc = a2m_rpc_parse(message, len, &req, reply, NULL)) != 1)
		return rc;
	return run(h, &call, &req, network, reply, pending);
}

/*
** Runs the request req (released here) that passed the envelope checks:
** the rest of handle() and of a2m_handle_value().
*/
static int run(a2m *h, a2m_call *callp, a2m_rpc_request *reqp, int network, char **reply,
	       void **pending)
{
	a2m_call call = *callp;
	a2m_rpc_request req = *reqp;
	a2m_rpc_outcome o;
	int rc;
	if (describe_parsed(&call, &req, reply)) {
		a2m_rpc_request_free(&req);
		return A2M_OK;
	}
	if (req.method->shared && call_shared(h, &call, &req, &o)) {
		settle(h);
		sweep(h, 1);
		rc = a2m_rpc_reply(&req, &o, reply, NULL);
		a2m_rpc_request_free(&req);
		return rc;
	}
	/* A write to run with others in one transaction (deferred.c). */
	if (pending && network && req.method->writes && a2m_stack_joins(h->srv.stack) &&
	    (*pending = a2m_deferred_queue(&call, &req)) != NULL) {
		*reply = NULL;
		return A2M_OK;
	}
	/* Writers on several threads: one runs, the others' writes join (deferred.c). */
	int joined = !pending && req.method->writes && a2m_stack_joins(h->srv.stack)
		     ? a2m_deferred_join(h, &call, &req, reply) : A2M_JOIN_ALONE;
	if (joined != A2M_JOIN_RUN && joined != A2M_JOIN_ALONE) {
		a2m_rpc_request_free(&req);  /* taken: zeroed */
		return joined;
	}
	pthread_rwlock_wrlock(&h->lock);
	call.push = network ? 0 : h->srv.can_push;
	/* This thread waits for the ticket itself: a lone write's capacity pass
	** may run while its sync does (stack.h, a2m_stack_capacity_apart). */
	a2m_stack_capacity_apart(h->srv.stack, !pending);
	a2m_rpc_call(&call, &req, &o);
	/* A shared log's events, logged before the answer (events_hook.h). */
	a2m_events_settle(&h->srv);
	/* A result holding the event log's objects is written before the lock
	** goes, while they cannot change. */
	uint64_t ticket = a2m_stack_sync_owed(h->srv.stack);
	a2m_stack_capacity_apart(h->srv.stack, 0);
	int shares = req.method->shares;
	if (shares)
		rc = a2m_rpc_reply(&req, &o, reply, NULL);
	pthread_rwlock_unlock(&h->lock);
	if (joined == A2M_JOIN_RUN)
		a2m_deferred_join_drain(h);
	/* A record that expired since is removed now, its event told before
	** this response (one batch: a call never waits for a large sweep). */
	sweep(h, 1);
	if (!shares)
		rc = a2m_rpc_reply(&req, &o, reply, NULL);
	void *d = ticket && pending && rc == A2M_OK ? a2m_deferred_applied(ticket, req.id) : NULL;
	if (d) {
		*pending = d;
	} else if (ticket && rc == A2M_OK) {
		rc = await_durable(h, ticket, req.id, reply);
	} else if (ticket) {
		/* No answer to give (out of memory): the wait still orders it. */
		a2m_stack_sync_wait(h->srv.stack, ticket, NULL, 0);
	}
	a2m_rpc_request_free(&req);
	return rc;
}

int a2m_handle(a2m *h, const char *message, size_t len, char **reply)
{
	return handle(h, message, len, 0, NULL, reply, NULL);
}

int a2m_handle_foresee(a2m *h, const char *const *texts, size_t n)
{
	/* No lock: the stack's scorer is fixed from open to close, and the
	** analyser's pool has a lock of its own. */
	if (!h || h->delegate || !texts)
		return -1;
	return a2m_stack_foresee(h->srv.stack, texts, n);
}

int a2m_handle_value(a2m *h, json_t *msg, char **reply)
{
	if (!h || !msg || !reply) {
		json_decref(msg);
		if (reply)
			*reply = NULL;
		return A2M_MISUSE;
	}
	if (h->delegate) {
		/* A delegate reads text: the message goes as text. */
		size_t len;
		char *text = a2m_json_write(msg, &len);
		json_decref(msg);
		if (!text) {
			*reply = NULL;
			return A2M_NOMEM;
		}
		int rc = handle(h, text, len, 0, NULL, reply, NULL);
		free(text);
		return rc;
	}
	a2m_rpc_request req;
	a2m_call call = call_of(h, 0, NULL);
	int rc = a2m_rpc_accept(msg, &req, reply, NULL);
	return rc != 1 ? rc : run(h, &call, &req, 0, reply, NULL);
}

int a2m_handle_network(a2m *h, const char *message, size_t len, const char *principal,
		       char **reply)
{
	return handle(h, message, len, 1, principal, reply, NULL);
}

int a2m_handle_network_deferred(a2m *h, const char *message, size_t len,
				const char *principal, char **reply, void **pending)
{
	*pending = NULL;
	return handle(h, message, len, 1, principal, reply, pending);
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

/*
** The store heard another server commit (store.h, watch), on a thread of
** its own: their events reach this connection's subscription in order,
** under the lock like any call. What they wrote may expire, and a caller
** that waits on its own input alone (the stdio loop, idle) would never
** reread the earliest expiry: so it is reread here, what has expired is
** swept, and the store is asked to call again when the next expiry comes.
*/
static int64_t heard(void *ctx)
{
	a2m *h = ctx;
	int64_t next_ms = -1;
	pthread_rwlock_wrlock(&h->lock);
	a2m_events_settle(&h->srv);
	pthread_rwlock_unlock(&h->lock);
	a2m_sweep(h, &next_ms);
	/* The sweep ran until nothing was due or it failed: still due means
	** failed (the store away), and the store's thread must not spin on it. */
	return next_ms == 0 ? 1000 : next_ms;
}

void a2m_set_notify(a2m *h, a2m_notify_fn fn, void *user)
{
	if (h->delegate) {
		h->delegate->set_notify(h->delegate_ctx, fn, user);
		return;
	}
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
	/*
	** Outside the lock: stopping the watch waits for a call of heard() in
	** progress, which takes the lock. The store's thread runs only while
	** a channel can carry what it hears.
	*/
	if (h->watched && fn && !h->watching) {
		if (h->watched->ops->watch(h->watched, heard, h) == 0)
			h->watching = 1;
		else
			a2m_log(A2M_LOG_WARN, "other servers' events will be pushed only at this"
				" server's next request: %s", h->watched->errmsg);
	} else if (h->watched && !fn && h->watching) {
		h->watched->ops->watch(h->watched, NULL, NULL);
		h->watching = 0;
	}
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
