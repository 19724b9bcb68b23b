/*
** events.c — memory/events (spec §4.12), memory/events/subscribe (§4.13) and
** memory/events/unsubscribe (§4.14), plus the change listener that feeds
** both views of the one log (DECISIONS 026).
**
** Polling needs no server state: the cursor is the subscription. Push is a
** per-connection opt-in that mirrors each append; it never carries an event
** the log did not take first, so a client that misses a notification can
** always catch up by polling.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/event_log.h"
#include "events/shared.h"
#include "protocol/events_hook.h"
#include "protocol/protocol.h"

/* The most events one poll returns, and what limit 0 or absent means. */
#define EVENTS_MAX_LIMIT 1000

/*
** Reads the optional `kinds` param: *out is the borrowed array, or NULL when
** absent or null. Anything but an array of strings is INVALID_PARAMS. Kinds
** this server never emits are allowed: a client must tolerate new kinds
** (§4.12), so it may also ask for them.
*/
static int param_kinds(const json_t *params, json_t **out, a2m_error *err)
{
	json_t *kinds = json_object_get(params, "kinds");
	*out = NULL;
	if (!kinds || json_is_null(kinds))
		return 0;
	if (!json_is_array(kinds))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "kinds must be an array of strings");
	size_t i;
	json_t *k;
	json_array_foreach(kinds, i, k) {
		if (!json_is_string(k))
			return a2m_error_set(err, A2M_INVALID_PARAMS, "kinds[%zu] must be a string", i);
	}
	*out = kinds;
	return 0;
}

/* The log, or INTERNAL_ERROR: declaring events without one is a build bug. */
static int need_log(const a2m_call *call, a2m_error *err)
{
	if (!call->srv->events)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "the event log is not available");
	return 0;
}

int a2m_method_events(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	const char *cursor;
	int64_t limit = 0;
	int has_limit, rc;
	json_t *kinds;
	a2m_scope scope;
	if ((rc = need_log(call, err)) ||
	    (rc = a2m_param_scope(call, params, &scope, err)) ||
	    (rc = a2m_param_string(params, "cursor", &cursor, err)) ||
	    (rc = a2m_param_count(params, "limit", &limit, &has_limit, err)) ||
	    (rc = param_kinds(params, &kinds, err)))
		return rc;
	/* 0 would mean "all retained" to the log; a reply stays bounded. */
	if (!has_limit || limit == 0 || limit > EVENTS_MAX_LIMIT)
		limit = EVENTS_MAX_LIMIT;
	return a2m_event_log_read(call->srv->events, cursor, (size_t)limit, kinds, &scope, result, err);
}

/* Ends the connection's subscription, if any. */
static void subscription_clear(a2m_call *call)
{
	call->srv->subscribed = 0;
	json_decref(call->srv->sub_kinds);
	call->srv->sub_kinds = NULL;
	free(call->srv->sub_owner);
	call->srv->sub_owner = NULL;
}

int a2m_method_subscribe(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	json_t *kinds, *kinds_copy = NULL;
	char *owner_copy = NULL;
	a2m_scope scope;
	int rc;
	/* Checked first: a connection that cannot carry a notification must
	** refuse however the request is phrased (§4.13). */
	if (!call->push) {
		a2m_error_capability(err, A2M_CAP_EVENTS, "push");
		snprintf(err->message, sizeof err->message,
			 "this connection cannot carry notifications; poll memory/events instead");
		return err->code;
	}
	if ((rc = need_log(call, err)) ||
	    (rc = a2m_param_scope(call, params, &scope, err)) ||
	    (rc = param_kinds(params, &kinds, err)))
		return rc;
	if (kinds && !(kinds_copy = json_deep_copy(kinds)))
		goto oom;
	if (scope.owner && !(owner_copy = strdup(scope.owner)))
		goto oom;
	if (!(*result = json_pack("{sb}", "subscribed", 1)))
		goto oom;
	/* Pushed from here on: what a shared log holds now is history. */
	uint64_t head = 0;
	a2m_event_shared *sh = a2m_event_log_shared(call->srv->events);
	if (sh && a2m_event_shared_head(sh, &head) != 0) {
		json_decref(*result);
		*result = NULL;
		json_decref(kinds_copy);
		free(owner_copy);
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "storage: cannot read the event log");
	}
	/* Subscribing again replaces the filter rather than adding a second
	** stream: one subscription per connection. */
	subscription_clear(call);
	call->srv->push_after = head;
	call->srv->subscribed = 1;
	call->srv->sub_kinds = kinds_copy;
	call->srv->sub_owner = owner_copy;
	return 0;
oom:
	json_decref(kinds_copy);
	free(owner_copy);
	return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
}

int a2m_method_unsubscribe(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	(void)params;
	/* Built before anything changes, so running out of memory leaves the
	** subscription as it was. Not subscribed is a no-op, never an error. */
	if (!(*result = json_pack("{sb}", "subscribed", 0)))
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	subscription_clear(call);
	return 0;
}

void a2m_events_on_change(void *ctx, const a2m_change *c)
{
	a2m_server *srv = ctx;
	if (!srv || !srv->events)
		return;
	a2m_event *ev = a2m_event_log_append(srv->events, c);
	/* A shared log pushes once its events have seqs (a2m_events_settle). */
	if (!ev || !srv->subscribed || !srv->notify)
		return;
	/* The subscriber's scope is fixed when it subscribed, under the same
	** rule a2m_param_scope applies to a request; push is local only, where
	** the declared capabilities are the caller's. */
	a2m_scope scope = {.scoped = (srv->declared & A2M_CAP_SCOPES) != 0,
			   .owner = srv->sub_owner};
	/* The log keeps its own reference to the event. */
	json_t *view = a2m_event_view(ev, &scope, srv->sub_kinds, NULL);
	if (!view)
		return;
	srv->notify(srv->notify_ctx, "memory/event", view);
	json_decref(view);
}

/* Hands one view to the subscriber (the emit of a2m_event_shared_since). */
static void push_view(json_t *view, void *ctx)
{
	a2m_server *srv = ctx;
	srv->notify(srv->notify_ctx, "memory/event", view);
	json_decref(view);
}

int a2m_events_write(void *ctx)
{
	a2m_server *srv = ctx;
	a2m_event_shared *sh = srv ? a2m_event_log_shared(srv->events) : NULL;
	return sh ? a2m_event_shared_write(sh) : 0;
}

void a2m_events_settle(void *ctx)
{
	a2m_server *srv = ctx;
	a2m_event_shared *sh = srv ? a2m_event_log_shared(srv->events) : NULL;
	if (!sh)
		return;
	a2m_event_shared_flush(sh);
	if (!srv->subscribed || !srv->notify)
		return;
	a2m_scope scope = {.scoped = (srv->declared & A2M_CAP_SCOPES) != 0,
			   .owner = srv->sub_owner};
	a2m_event_shared_since(sh, &srv->push_after, &scope, srv->sub_kinds, push_view, srv);
}
