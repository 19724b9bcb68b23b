/*
** check_push.c — the events/push group (spec §4.13, §4.14; DECISIONS
** 026): after memory/events/subscribe the events of the log arrive as
** notifications, the same ones a poll returns, and stop after
** memory/events/unsubscribe. Reading the log is in helpers_event_log.c.
*/
#include <string.h>

#include "suite.h"

/* How long a notification that must not come is waited for. */
#define QUIET_MS 300

/* ---- events/push ---- */

/* Whether describe says push is on; skips the check when it is not. */
static int push_on(conf_ctx *cx)
{
	json_t *push = json_object_get(json_object_get(conf_describe(cx), "events"), "push");
	if (!json_is_true(push))
		conf_skip(cx, "describe reports push: false");
	return json_is_true(push);
}

/*
** The next notification, waiting at most ms without sending anything.
** Returns 1 and sets *out, 0 when none came in time, -1 after failing.
*/
static int next_notification(conf_ctx *cx, int ms, json_t **out)
{
	a2m_client *c = conf_client(cx);
	json_t *msg = NULL;
	a2m_client_set_timeout(c, ms);
	int rc = a2m_client_next_notification_json(c, &msg);
	a2m_client_set_timeout(c, conf_timeout(cx));
	*out = conf_keep(cx, msg);
	if (rc == A2M_CLIENT_OK)
		return 1;
	if (rc == A2M_CLIENT_ERR_TIMEOUT)
		return 0;
	conf_fail(cx, "waiting for a notification: %s", a2m_client_errmsg(c));
	return -1;
}

/* The event a notification carries, after checking its envelope. */
static json_t *event_of(conf_ctx *cx, const json_t *msg)
{
	const char *method = conf_str_of(msg, "method");
	json_t *params = json_object_get(msg, "params");
	if (!method || strcmp(method, "memory/event") != 0 || json_object_get(msg, "id") ||
	    !json_is_object(params)) {
		conf_fail(cx, "expected a memory/event notification with params and no id "
			  "(spec §4.13), got %s", conf_show(cx, msg));
		return NULL;
	}
	return conf_event_ok(cx, params) ? params : NULL;
}

/*
** Waits for the `written` notifications of ids, in order, skipping any
** other event; returns them, or NULL after failing.
*/
static json_t *pushed_writes(conf_ctx *cx, const json_t *ids)
{
	json_t *got = conf_keep(cx, json_array());
	while (json_array_size(got) < json_array_size(ids)) {
		json_t *msg, *ev;
		int n = next_notification(cx, conf_timeout(cx), &msg);
		if (n < 0)
			return NULL;
		if (n == 0) {
			conf_fail(cx, "no memory/event notification for the write within %d ms "
				  "(%zu of %zu arrived)", conf_timeout(cx), json_array_size(got),
				  json_array_size(ids));
			return NULL;
		}
		if (!(ev = event_of(cx, msg)))
			return NULL;
		const char *kind = conf_str_of(ev, "kind");
		if (kind && strcmp(kind, "written") == 0 && conf_among(ids, json_object_get(ev, "id")))
			json_array_append(got, ev);
	}
	return conf_written_in_order(cx, got, ids) ? got : NULL;
}

/* Whether no notification arrives within QUIET_MS; fails if one does. */
static int quiet(conf_ctx *cx, const char *after)
{
	json_t *msg;
	int n = next_notification(cx, QUIET_MS, &msg);
	if (n > 0)
		conf_fail(cx, "%s, the server sent %s", after, conf_show(cx, msg));
	return n == 0;
}

static int subscribe(conf_ctx *cx, json_t *params)
{
	json_t *r = conf_result(cx, "memory/events/subscribe", params);
	if (r && !json_is_true(json_object_get(r, "subscribed")))
		conf_fail(cx, "subscribe answered %s, expected {\"subscribed\": true}",
			  conf_show(cx, r));
	return r && json_is_true(json_object_get(r, "subscribed"));
}

static int unsubscribe(conf_ctx *cx)
{
	json_t *r = conf_result(cx, "memory/events/unsubscribe", json_object());
	if (r && !json_is_false(json_object_get(r, "subscribed")))
		conf_fail(cx, "unsubscribe answered %s, expected {\"subscribed\": false}",
			  conf_show(cx, r));
	return r && json_is_false(json_object_get(r, "subscribed"));
}

/* Spec §4.13: declaring the capability does not by itself push anything. */
static void check_not_before_subscribe(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (push_on(cx) && conf_need_writes(cx) && conf_events_write(cx, conf_marker(cx), 2) &&
	    quiet(cx, "before any subscribe, after a write"))
		conf_pass(cx);
}

static void check_push_written(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!push_on(cx) || !conf_need_writes(cx) || !subscribe(cx, json_object()))
		return;
	json_t *ids = conf_events_write(cx, conf_marker(cx), 3);
	int ok = ids && pushed_writes(cx, ids);
	if (unsubscribe(cx) && ok)
		conf_pass(cx);
}

/* Spec §4.13: push and poll are two views of one log. */
static void check_push_is_poll(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *c = push_on(cx) && conf_need_writes(cx) ? conf_events_head(cx) : NULL;
	if (!c || !subscribe(cx, json_object()))
		return;
	json_t *ids = conf_events_write(cx, conf_marker(cx), 2);
	json_t *pushed = ids ? pushed_writes(cx, ids) : NULL;
	if (!unsubscribe(cx) || !pushed)
		return;
	json_t *polled = conf_events_since(cx, c, NULL, NULL);
	if (!polled)
		return;
	json_t *mine = conf_events_of_kind(cx, polled, "written", ids);
	if (!json_equal(mine, pushed))
		conf_fail(cx, "pushed %s, but polling the same log returned %s",
			  conf_show(cx, pushed), conf_show(cx, mine));
	else
		conf_pass(cx);
}

static void check_unsubscribe_stops(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!push_on(cx) || !conf_need_writes(cx) || !subscribe(cx, json_object()) ||
	    !unsubscribe(cx) || !conf_events_write(cx, conf_marker(cx), 2) ||
	    !quiet(cx, "after unsubscribe and a write"))
		return;
	/* A request answered after the write proves the server is past it. */
	if (!conf_still_serving(cx, "unsubscribe"))
		return;
	if (a2m_client_pending(conf_client(cx)) != 0)
		conf_fail(cx, "after unsubscribe, %zu message(s) arrived unasked",
			  a2m_client_pending(conf_client(cx)));
	else
		conf_pass(cx);
}

/* Spec §4.14 says so without condition: also where push is off. */
static void check_unsubscribe_idle(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (unsubscribe(cx) && unsubscribe(cx))
		conf_pass(cx);
}

static void check_push_kinds(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!push_on(cx) || !conf_need_writes(cx) ||
	    !subscribe(cx, json_pack("{s:[s]}", "kinds", "forgotten")))
		return;
	json_t *ids = conf_events_write(cx, conf_marker(cx), 2), *msg = NULL, *ev = NULL;
	int n = ids && conf_result(cx, "memory/forget", json_pack("{s:O}", "ids", ids))
		? next_notification(cx, conf_timeout(cx), &msg) : -1;
	if (n > 0)
		ev = event_of(cx, msg);
	if (!unsubscribe(cx) || n < 0 || (n > 0 && !ev))
		return;
	if (n == 0) {
		conf_fail(cx, "subscribed to forgotten, a forget of 2 pushed nothing within %d ms",
			  conf_timeout(cx));
		return;
	}
	const char *kind = conf_str_of(ev, "kind");
	json_t *count = json_object_get(ev, "count");
	if (!kind || strcmp(kind, "forgotten") != 0 || !json_is_integer(count) ||
	    json_integer_value(count) != 2)
		conf_fail(cx, "subscribed to forgotten only, a write then a forget of 2 pushed "
			  "%s first", conf_show(cx, ev));
	else
		conf_pass(cx);
}

static void check_push_scoped(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *tier = conf_private_tier(cx);
	if (!push_on(cx))
		return;
	if (!conf_has_capability(cx, "scopes") || !conf_has_capability(cx, "tiers") || !tier) {
		conf_skip(cx, "needs \"scopes\" and a tier with shared: false");
		return;
	}
	const char *m = conf_marker(cx);
	const char *a = conf_str(cx, "cfa-%s", m), *b = conf_str(cx, "cfb-%s", m);
	if (!conf_need_writes(cx) || !subscribe(cx, json_pack("{s:s}", "owner", b)))
		return;
	json_t *rec = conf_record(cx, conf_str(cx, "%s private", m), m);
	json_object_set_new(rec, "tier", json_string(tier));
	json_t *r = conf_result(cx, "memory/remember",
				json_pack("{s:s,s:[o]}", "owner", a, "records", rec));
	/* Whatever arrives in the quiet window, none of it may be a's write. */
	json_t *msg = NULL, *leaked = NULL;
	int n = r ? 1 : -1;
	for (int i = 0; n > 0 && i < CONF_MAX_POLLS; i++) {
		n = next_notification(cx, QUIET_MS, &msg);
		json_t *ev = n > 0 ? json_object_get(msg, "params") : NULL;
		if (ev && conf_among(json_object_get(r, "ids"), json_object_get(ev, "id")))
			leaked = msg;
	}
	if (!unsubscribe(cx) || n < 0)
		return;
	if (leaked)
		conf_fail(cx, "a subscriber as owner %s was pushed %s, the write of owner %s "
			  "in tier %s (shared: false)", b, conf_show(cx, leaked), a, tier);
	else
		conf_pass(cx);
}

static void check_push_off(conf_ctx *cx, const void *arg)
{
	(void)arg;
	json_t *push = json_object_get(json_object_get(conf_describe(cx), "events"), "push");
	if (!json_is_false(push)) {
		conf_skip(cx, "describe reports push: true");
		return;
	}
	if (conf_expect_error(cx, "memory/events/subscribe", json_object(),
			      CONF_CAPABILITY_NOT_SUPPORTED, 0))
		conf_pass(cx);
}

static const conf_check push_checks[] = {
	{"nothing is pushed before subscribe", check_not_before_subscribe, NULL},
	{"after subscribe a write is pushed as memory/event notifications, unasked",
	 check_push_written, NULL},
	{"pushed events are the events a poll returns", check_push_is_poll, NULL},
	{"unsubscribe answers subscribed: false and nothing more is pushed",
	 check_unsubscribe_stops, NULL},
	{"unsubscribe when not subscribed is not an error", check_unsubscribe_idle, NULL},
	{"subscribe with kinds pushes only those kinds", check_push_kinds, NULL},
	{"a subscriber is not pushed another owner's private writes", check_push_scoped, NULL},
	{"with push false, subscribe is -32003", check_push_off, NULL},
};

const conf_group conf_group_events_push = {"events/push", "events", push_checks,
					   CONF_COUNT(push_checks), 0};
