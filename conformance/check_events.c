/*
** check_events.c — the events group: checks of the events capability
** (spec §4.12–§4.14; DECISIONS 026), which is one log read two ways. This
** group polls it with memory/events; "events/push" (check_push.c)
** subscribes and watches the same events arrive as notifications. Reading
** the log is in helpers_event_log.c.
**
** The log belongs to the server process and other activity may land in it
** (a spill under capacity pressure is a `consolidated` event of its own),
** so a check takes the head cursor just before the action it studies and
** then looks only at the events that name its own records — while still
** requiring those to appear exactly once and in order.
*/
#include <ctype.h>
#include <string.h>

#include "suite.h"

/*
** A tier describe reports without a capacity (absent, null or 0), so a
** record written there stays there: no spill moves it before it is read
** back. NULL when every tier is bounded.
*/
static const char *unbounded_tier(conf_ctx *cx)
{
	json_t *tiers = json_object_get(conf_describe(cx), "tiers");
	size_t i;
	json_t *t;
	json_array_foreach(tiers, i, t) {
		json_t *cap = json_object_get(t, "capacity");
		if (conf_str_of(t, "name") && (!cap || json_is_null(cap) ||
					  (json_is_integer(cap) && json_integer_value(cap) == 0)))
			return conf_str_of(t, "name");
	}
	return NULL;
}

/* ---- events: describe and the cursor ---- */

static void check_describe(conf_ctx *cx, const void *arg)
{
	(void)arg;
	json_t *e = json_object_get(conf_describe(cx), "events");
	if (!json_is_object(e) || !json_is_boolean(json_object_get(e, "push")))
		conf_fail(cx, "describe reports events %s, expected an object with a boolean "
			  "push (spec §4.13)", conf_show(cx, e));
	else
		conf_pass(cx);
}

static void check_no_cursor(conf_ctx *cx, const void *arg)
{
	(void)arg;
	/* Something in the log first, so "now" is not merely "empty". */
	int ro = conf_probe_read_only(cx);
	if (ro < 0 || (ro == 0 && !conf_events_write(cx, conf_marker(cx), 2)))
		return;
	if (conf_events_head(cx))
		conf_pass(cx);
}

static void check_written(conf_ctx *cx, const void *arg)
{
	(void)arg;
	int keys = conf_has_capability(cx, "keys"), sessions = conf_has_capability(cx, "sessions");
	const char *m = conf_marker(cx), *c = conf_events_head(cx);
	if (!c || !conf_need_writes(cx))
		return;
	const char *key = conf_str(cx, "cf/%s/written", m), *session = conf_str(cx, "cfs-%s", m);
	/* Placed where no spill moves them, so the tier read back is still the
	** tier they were written to. */
	const char *tier = conf_has_capability(cx, "tiers") ? unbounded_tier(cx) : NULL;
	json_t *batch = json_array();
	for (size_t i = 0; i < 3; i++) {
		json_t *rec = conf_record(cx, conf_str(cx, "%s written %zu", m, i), m);
		if (tier)
			json_object_set_new(rec, "tier", json_string(tier));
		if (keys && i == 1)
			json_object_set_new(rec, "key", json_string(key));
		if (sessions && i == 2)
			json_object_set_new(rec, "session", json_string(session));
		json_array_append_new(batch, rec);
	}
	json_t *ids = conf_remember(cx, batch);
	json_t *events = ids ? conf_events_since(cx, c, NULL, NULL) : NULL;
	json_t *stored = events ? conf_timeline_of(cx, m) : NULL;
	if (!stored)
		return;
	json_t *written = conf_events_of_kind(cx, events, "written", ids);
	if (!conf_written_in_order(cx, written, ids))
		return;
	for (size_t i = 0; i < 3; i++) {
		json_t *ev = json_array_get(written, i);
		json_t *rec = conf_by_id(stored, json_string_value(json_array_get(ids, i)));
		if (tier && !json_equal(json_object_get(ev, "tier"), json_object_get(rec, "tier"))) {
			conf_fail(cx, "written event %s: tier should be the record's, %s",
				  conf_show(cx, ev), conf_show(cx, json_object_get(rec, "tier")));
			return;
		}
		if (!tier && conf_has_capability(cx, "tiers") && !conf_str_of(ev, "tier")) {
			conf_fail(cx, "written event %s has no tier (spec §4.12)", conf_show(cx, ev));
			return;
		}
		if (keys && i == 1 && (!conf_str_of(ev, "key") || strcmp(conf_str_of(ev, "key"), key) != 0 ||
				       !json_is_integer(json_object_get(ev, "revision")) ||
				       json_integer_value(json_object_get(ev, "revision")) != 0)) {
			conf_fail(cx, "written event %s: expected key \"%s\" and revision 0",
				  conf_show(cx, ev), key);
			return;
		}
		if (sessions && i == 2 &&
		    (!conf_str_of(ev, "session") || strcmp(conf_str_of(ev, "session"), session) != 0)) {
			conf_fail(cx, "written event %s: expected session \"%s\"", conf_show(cx, ev),
				  session);
			return;
		}
	}
	conf_pass(cx);
}

/* The returned cursor continues after what was read: nothing twice. */
static void check_cursor_continues(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx), *c = conf_events_head(cx), *next = NULL;
	if (!c || !conf_need_writes(cx))
		return;
	json_t *first = conf_events_write(cx, m, 2);
	json_t *events = first ? conf_events_since(cx, c, NULL, &next) : NULL;
	if (!events || !conf_written_in_order(cx, conf_events_of_kind(cx, events, "written", first), first))
		return;
	json_t *second = conf_events_write(cx, m, 1);
	json_t *more = second ? conf_events_since(cx, next, NULL, NULL) : NULL;
	if (!more)
		return;
	if (json_array_size(conf_events_of_kind(cx, more, "written", first)) != 0)
		conf_fail(cx, "polling on with the cursor returned the earlier events again: %s",
			  conf_show(cx, more));
	else if (conf_written_in_order(cx, conf_events_of_kind(cx, more, "written", second), second))
		conf_pass(cx);
}

static const int limit_one = 1, limit_two = 2;

static void check_paging(conf_ctx *cx, const void *arg)
{
	int limit = *(const int *)arg;
	const char *m = conf_marker(cx), *c = conf_events_head(cx);
	if (!c || !conf_need_writes(cx))
		return;
	/* Three events, each in its own call: enough to need several pages at
	** either limit, few enough for any sane retention window. */
	json_t *ids = conf_keep(cx, json_array());
	for (int i = 0; i < 3; i++) {
		json_t *one = conf_events_write(cx, m, 1);
		if (!one)
			return;
		json_array_extend(ids, one);
	}
	json_t *whole = conf_events_since(cx, c, NULL, NULL);
	if (!whole)
		return;
	json_t *paged = conf_keep(cx, json_array());
	const char *cursor = c;
	for (int round = 0; round < CONF_MAX_POLLS; round++) {
		json_t *r = conf_events_poll(cx, json_pack("{s:s,s:i}", "cursor", cursor, "limit", limit));
		if (!r)
			return;
		json_t *events = json_object_get(r, "events");
		size_t n = json_array_size(events);
		int more = json_is_true(json_object_get(r, "more"));
		size_t left = json_array_size(whole) - json_array_size(paged);
		if (n > (size_t)limit || n > left) {
			conf_fail(cx, "limit %d returned %zu event(s) with %zu left: %s", limit, n,
				  left, conf_show(cx, events));
			return;
		}
		if (more != (left > n)) {
			conf_fail(cx, "limit %d: a page of %zu with %zu event(s) left said more: "
				  "%s (spec §4.12: more is whether events remain beyond limit)",
				  limit, n, left, more ? "true" : "false");
			return;
		}
		json_array_extend(paged, events);
		cursor = conf_str_of(r, "cursor");
		if (!more)
			break;
	}
	if (!json_equal(paged, whole))
		conf_fail(cx, "paging with limit %d saw %s; one poll saw %s", limit,
			  conf_show(cx, paged), conf_show(cx, whole));
	else if (conf_written_in_order(cx, conf_events_of_kind(cx, paged, "written", ids), ids))
		conf_pass(cx);
}

static void check_forgotten(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	json_t *ids = conf_need_writes(cx) ? conf_events_write(cx, m, 3) : NULL;
	const char *c = ids ? conf_events_head(cx) : NULL;
	if (!c)
		return;
	json_t *r = conf_result(cx, "memory/forget", json_pack("{s:O}", "ids", ids));
	json_t *events = r ? conf_events_since(cx, c, NULL, NULL) : NULL;
	if (!events)
		return;
	json_t *forgotten = conf_events_of_kind(cx, events, "forgotten", NULL);
	json_t *ev = json_array_get(forgotten, 0);
	json_t *count = json_object_get(ev, "count"), *evids = json_object_get(ev, "ids");
	if (json_array_size(forgotten) != 1) {
		conf_fail(cx, "a forget of 3 records gave %zu forgotten events, expected one "
			  "(spec §4.12): %s", json_array_size(forgotten), conf_show(cx, events));
		return;
	}
	if (!json_is_integer(count) || json_integer_value(count) != 3) {
		conf_fail(cx, "forgotten event %s: count should be 3", conf_show(cx, ev));
		return;
	}
	if (evids) {
		int ok = json_is_array(evids) && json_array_size(evids) == 3;
		for (size_t i = 0; ok && i < 3; i++)
			ok = conf_among(evids, json_array_get(ids, i));
		if (!ok) {
			conf_fail(cx, "forgotten event %s: ids should be the three forgotten, %s",
				  conf_show(cx, ev), conf_show(cx, ids));
			return;
		}
	}
	if (json_array_size(conf_events_of_kind(cx, events, "written", NULL)) != 0)
		conf_fail(cx, "a forget produced written events: %s", conf_show(cx, events));
	else
		conf_pass(cx);
}

/* Whether the one `consolidated` event in events carries result's counts. */
static int consolidated_matches(conf_ctx *cx, const char *what, const json_t *events,
				const json_t *result)
{
	static const char *const counts[] = {"moved", "promoted", "dropped", "summarized"};
	json_t *all = conf_events_of_kind(cx, events, "consolidated", NULL);
	json_t *ev = json_array_get(all, 0);
	if (json_array_size(all) != 1) {
		conf_fail(cx, "%s gave %zu consolidated events, expected one (spec §4.12): %s",
			  what, json_array_size(all), conf_show(cx, events));
		return 0;
	}
	for (size_t i = 0; i < CONF_COUNT(counts); i++) {
		json_t *got = json_object_get(ev, counts[i]);
		if (!json_is_integer(got) || !json_equal(got, json_object_get(result, counts[i]))) {
			conf_fail(cx, "%s: consolidated event %s, but the result's %s is %s", what,
				  conf_show(cx, ev), counts[i],
				  conf_show(cx, json_object_get(result, counts[i])));
			return 0;
		}
	}
	return 1;
}

static void check_consolidated(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_has_capability(cx, "tiers")) {
		conf_skip(cx, "the server does not declare \"tiers\"");
		return;
	}
	const char *c = conf_need_writes(cx) ? conf_events_head(cx) : NULL;
	json_t *r = c ? conf_result(cx, "memory/consolidate", json_object()) : NULL;
	json_t *events = r ? conf_events_since(cx, c, NULL, NULL) : NULL;
	if (events && consolidated_matches(cx, "a consolidate", events, r))
		conf_pass(cx);
}

/* Whether ev's ids are exactly the strings of want, in any order. */
static int ids_are(const json_t *ev, const json_t *want)
{
	json_t *got = json_object_get(ev, "ids");
	if (!json_is_array(got) || json_array_size(got) != json_array_size(want))
		return 0;
	for (size_t i = 0; i < json_array_size(want); i++) {
		if (!conf_among(got, json_array_get(want, i)))
			return 0;
	}
	return 1;
}

static void check_promoted(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *from = conf_has_capability(cx, "tiers") ? unbounded_tier(cx) : NULL;
	if (!conf_has_capability(cx, "tiers")) {
		conf_skip(cx, "the server does not declare \"tiers\"");
		return;
	}
	/* The destination: any other tier. */
	const char *to = NULL;
	json_t *tiers = json_object_get(conf_describe(cx), "tiers");
	size_t i;
	json_t *t;
	json_array_foreach(tiers, i, t) {
		if (!to && conf_str_of(t, "name") && (!from || strcmp(conf_str_of(t, "name"), from) != 0))
			to = conf_str_of(t, "name");
	}
	if (!from || !to) {
		conf_skip(cx, "needs a tier without a capacity and another to promote into");
		return;
	}
	const char *m = conf_marker(cx);
	if (!conf_need_writes(cx))
		return;
	json_t *batch = json_array();
	for (int k = 0; k < 2; k++) {
		json_t *rec = conf_record(cx, conf_str(cx, "%s promoted %d", m, k), m);
		json_object_set_new(rec, "tier", json_string(from));
		json_array_append_new(batch, rec);
	}
	json_t *ids = conf_remember(cx, batch);
	const char *c = ids ? conf_events_head(cx) : NULL;
	json_t *r = c ? conf_result(cx, "memory/promote",
				    json_pack("{s:O,s:s}", "ids", ids, "tier", to)) : NULL;
	json_t *events = r ? conf_events_since(cx, c, NULL, NULL) : NULL;
	if (!events)
		return;
	json_t *promoted = conf_events_of_kind(cx, events, "promoted", NULL);
	json_t *ev = json_array_get(promoted, 0);
	const char *tier = conf_str_of(ev, "tier");
	if (json_array_size(promoted) != 1)
		conf_fail(cx, "a promote of 2 records gave %zu promoted events, expected one "
			  "(spec §4.12): %s", json_array_size(promoted), conf_show(cx, events));
	else if (!ids_are(ev, ids) || !tier || strcmp(tier, to) != 0)
		conf_fail(cx, "promoted event %s: expected ids %s and tier \"%s\"",
			  conf_show(cx, ev), conf_show(cx, ids), to);
	else
		conf_pass(cx);
}

/*
** A tier that promotes after at most 20 recalls (describe's promote_to and
** promote_after); with private_only, one where it and its promote_to both
** say shared: false. NULL when the layout has none.
*/
static const json_t *promoting_tier(conf_ctx *cx, int private_only)
{
	json_t *tiers = json_object_get(conf_describe(cx), "tiers");
	size_t i;
	json_t *t;
	json_array_foreach(tiers, i, t) {
		json_t *after = json_object_get(t, "promote_after");
		const char *to = conf_str_of(t, "promote_to");
		if (!conf_str_of(t, "name") || !to || !json_is_integer(after) ||
		    json_integer_value(after) <= 0 || json_integer_value(after) > 20)
			continue;
		if (!private_only)
			return t;
		const json_t *dest = conf_tier(cx, to);
		if (dest && json_is_false(json_object_get(t, "shared")) &&
		    json_is_false(json_object_get(dest, "shared")))
			return t;
	}
	return NULL;
}

/*
** A record recalled often enough moves to its tier's promote_to (describe's
** promote_after). That is a reorganisation too, and a watcher must be told
** which record went where: a promoted event naming it, or a consolidated
** event counting it.
*/
static void check_recall_promotes(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *from = promoting_tier(cx, 0);
	if (!conf_has_capability(cx, "tiers") || !from) {
		conf_skip(cx, "describe reports no tier with promote_to and promote_after");
		return;
	}
	const char *m = conf_marker(cx), *to = conf_str_of(from, "promote_to");
	if (!conf_need_writes(cx))
		return;
	json_t *rec = conf_record(cx, conf_str(cx, "%s earns promotion", m), m);
	json_object_set_new(rec, "tier", json_string(conf_str_of(from, "name")));
	if (conf_has_capability(cx, "sessions"))
		json_object_set_new(rec, "session", json_string(conf_str(cx, "cfs-%s", m)));
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	const char *c = ids ? conf_events_head(cx) : NULL;
	if (!c)
		return;
	json_int_t times = json_integer_value(json_object_get(from, "promote_after"));
	for (json_int_t k = 0; k < times; k++) {
		if (!conf_result(cx, "memory/recall", json_pack("{s:s,s:{s:s},s:i}", "query", m,
								  "where", "cfm", m, "limit", 5)))
			return;
	}
	json_t *events = conf_events_since(cx, c, NULL, NULL);
	json_t *now = events ? conf_timeline_of(cx, m) : NULL;
	if (!now)
		return;
	const char *tier = conf_str_of(json_array_get(now, 0), "tier");
	if (!tier || strcmp(tier, to) != 0) {
		conf_skip(cx, "%lld recalls left the record in %s, not %s (the salience group "
			  "judges promotion)", (long long)times, tier ? tier : "(nothing)", to);
		return;
	}
	json_t *promoted = conf_events_of_kind(cx, events, "promoted", NULL);
	json_t *consolidated = conf_events_of_kind(cx, events, "consolidated", NULL);
	size_t k;
	json_t *ev;
	json_array_foreach(promoted, k, ev) {
		const char *dest = conf_str_of(ev, "tier");
		if (ids_are(ev, ids) && dest && strcmp(dest, to) == 0) {
			conf_pass(cx);
			return;
		}
	}
	json_array_foreach(consolidated, k, ev) {
		if (json_integer_value(json_object_get(ev, "promoted")) >= 1 &&
		    json_array_size(promoted) == 0) {
			conf_pass(cx);
			return;
		}
	}
	conf_fail(cx, "the record moved to %s after %lld recalls, but the events say %s; "
		  "expected a promoted event naming %s (or a consolidated one counting it)",
		  to, (long long)times, conf_show(cx, events),
		  conf_show(cx, json_array_get(ids, 0)));
}

static void check_kinds(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx), *c = conf_events_head(cx);
	json_t *ids = c && conf_need_writes(cx) ? conf_events_write(cx, m, 2) : NULL;
	if (!ids || !conf_result(cx, "memory/forget", json_pack("{s:[O]}", "ids",
								json_array_get(ids, 0))))
		return;
	static const char *const only[] = {"forgotten", "written"};
	for (size_t k = 0; k < CONF_COUNT(only); k++) {
		json_t *events = conf_events_since(cx, c, json_pack("{s:[s]}", "kinds", only[k]), NULL);
		if (!events)
			return;
		json_t *wanted = conf_events_of_kind(cx, events, only[k], NULL);
		if (json_array_size(wanted) != json_array_size(events)) {
			conf_fail(cx, "kinds [\"%s\"] also returned other kinds: %s", only[k],
				  conf_show(cx, events));
			return;
		}
		size_t mine = k == 0 ? json_array_size(wanted)
				     : json_array_size(conf_events_of_kind(cx, events, "written", ids));
		if (mine != (k == 0 ? 1 : 2)) {
			conf_fail(cx, "kinds [\"%s\"] returned %s, expected the %s", only[k],
				  conf_show(cx, events), k == 0 ? "one forget" : "two writes");
			return;
		}
	}
	json_t *both = conf_events_since(cx, c, json_pack("{s:[s,s]}", "kinds", "written", "forgotten"), NULL);
	if (!both)
		return;
	if (json_array_size(conf_events_of_kind(cx, both, "written", ids)) != 2 ||
	    json_array_size(conf_events_of_kind(cx, both, "forgotten", NULL)) != 1)
		conf_fail(cx, "kinds [\"written\", \"forgotten\"] returned %s",
			  conf_show(cx, both));
	else
		conf_pass(cx);
}

/*
** Spec §4.12: a cursor that cannot be honoured is answered with reset:
** true; one never issued MAY instead be refused with -32602. An ordinary
** reply would read a position out of a string that names none.
*/
static int cursor_refused(conf_ctx *cx, const char *what, const char *cursor)
{
	json_t *resp = conf_call(cx, "memory/events", json_pack("{s:s}", "cursor", cursor));
	int code;
	if (!resp)
		return 0;
	if (conf_error_code(resp, &code)) {
		if (code == CONF_INVALID_PARAMS)
			return 1;
		conf_fail(cx, "%s %s answered %s, expected reset: true or -32602", what, cursor,
			  conf_show(cx, resp));
		return 0;
	}
	json_t *r = json_object_get(resp, "result");
	if (!json_is_true(json_object_get(r, "reset"))) {
		conf_fail(cx, "%s %s was answered as if valid, without reset: true: %s", what,
			  cursor, conf_show(cx, resp));
		return 0;
	}
	if (!json_is_array(json_object_get(r, "events")) || !conf_str_of(r, "cursor")) {
		conf_fail(cx, "the reset reply %s lacks events or a cursor", conf_show(cx, r));
		return 0;
	}
	return 1;
}

static void check_garbage_cursor(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	if (!cursor_refused(cx, "the garbage cursor", conf_str(cx, "not a cursor: %s", m)) ||
	    !cursor_refused(cx, "the garbage cursor", conf_str(cx, "%s/../../%%00", m)))
		return;
	if (conf_expect_error(cx, "memory/events", json_pack("{s:i}", "cursor", 42),
			      CONF_INVALID_PARAMS, 0))
		conf_pass(cx);
}

/*
** A cursor another instance of the server issued: valid there, and here
** only when the two are one memory. Servers that share a store (several
** servers of one PostgreSQL deployment) share one event log, and a cursor
** of either is valid on both (spec §4.12 speaks of the server; a
** deployment that behaves as one memory is one). Either answer passes, if
** it is true: refused (reset: true or -32602), or honoured, and then an
** event written here is what the other instance returns after that cursor.
*/
static void check_foreign_cursor(conf_ctx *cx, const void *arg)
{
	(void)arg;
	a2m_client *other;
	json_t *resp = NULL;
	if (!conf_server_argv(cx)) {
		conf_skip(cx, "the server was not started by the suite, so there is no second "
			  "one to take a cursor from");
		return;
	}
	if (a2m_client_spawn_stdio(conf_server_argv(cx), &other) != A2M_CLIENT_OK) {
		conf_skip(cx, "cannot start a second server: %s", a2m_client_spawn_errmsg());
		return;
	}
	a2m_client_set_timeout(other, conf_timeout(cx));
	json_t *p = json_pack("{s:s}", "protocol", CONF_PROTOCOL);
	int rc = a2m_client_request_json(other, "memory/describe", p, &resp);
	json_decref(resp);
	resp = NULL;
	json_object_clear(p);
	if (rc == A2M_CLIENT_OK)
		rc = a2m_client_request_json(other, "memory/events", p, &resp);
	json_decref(p);
	conf_keep(cx, resp);
	const char *cursor = conf_str_of(json_object_get(resp, "result"), "cursor");
	if (!cursor) {
		a2m_client_free(other);
		conf_skip(cx, "the second server gave no cursor: %s", conf_show(cx, resp));
		return;
	}
	json_t *here = conf_call(cx, "memory/events", json_pack("{s:s}", "cursor", cursor));
	json_t *r = json_object_get(here, "result");
	int code;
	if (!here || conf_error_code(here, &code) || json_is_true(json_object_get(r, "reset"))) {
		/* Refused: the ordinary case, judged as every refused cursor is. */
		a2m_client_free(other);
		if (cursor_refused(cx, "a cursor from another server,", cursor))
			conf_pass(cx);
		return;
	}
	/* Honoured: the two must be one log. */
	const char *m = conf_marker(cx);
	if (conf_read_only(cx)) {
		/* Nothing is written: one log has one head, the same on both. */
		a2m_client_free(other);
		json_t *head = conf_call(cx, "memory/events", json_object());
		const char *mine = conf_str_of(json_object_get(head, "result"), "cursor");
		if (mine && strcmp(mine, cursor) == 0)
			conf_pass(cx);
		else
			conf_fail(cx, "a cursor from another server, %s, was honoured here, but this"
				  " server's head is %s: not one log", cursor, conf_show(cx, head));
		return;
	}
	json_t *ids = conf_events_write(cx, m, 1);
	if (!ids) {
		a2m_client_free(other);
		return;
	}
	resp = NULL;
	p = json_pack("{s:s s:i}", "cursor", cursor, "limit", 1000);
	rc = a2m_client_request_json(other, "memory/events", p, &resp);
	json_decref(p);
	a2m_client_free(other);
	conf_keep(cx, resp);
	json_t *events = json_object_get(json_object_get(resp, "result"), "events");
	const char *id = json_string_value(json_array_get(ids, 0));
	size_t i;
	json_t *ev;
	json_array_foreach(events, i, ev) {
		if (conf_str_of(ev, "kind") && strcmp(conf_str_of(ev, "kind"), "written") == 0 &&
		    conf_str_of(ev, "id") && id && strcmp(conf_str_of(ev, "id"), id) == 0) {
			conf_pass(cx);
			return;
		}
	}
	conf_fail(cx, "a cursor from another server, %s, was honoured here, yet that server"
		  " does not report the record %s written here after it: %s", cursor,
		  id ? id : "?", conf_show(cx, resp));
}

static void check_bad_params(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const char *const bad[] = {"{\"kinds\":\"written\"}", "{\"kinds\":[1]}",
					  "{\"limit\":-1}", "{\"limit\":\"ten\"}"};
	for (size_t i = 0; i < CONF_COUNT(bad); i++) {
		json_t *p = conf_json(cx, bad[i]);
		if (!p || !conf_expect_error(cx, "memory/events", json_incref(p),
					     CONF_INVALID_PARAMS, 0))
			return;
	}
	conf_pass(cx);
}

static void check_key_replaced(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_has_capability(cx, "keys")) {
		conf_skip(cx, "the server does not declare \"keys\"");
		return;
	}
	const char *m = conf_marker(cx), *c = conf_events_head(cx);
	const char *key = conf_str(cx, "cf/%s/fact", m);
	json_t *ids = conf_keep(cx, json_array());
	for (int i = 0; c && i < 2; i++) {
		json_t *rec = conf_record(cx, conf_str(cx, "%s version %d", m, i), m);
		json_object_set_new(rec, "key", json_string(key));
		json_t *one = conf_remember(cx, json_pack("[o]", rec));
		if (!one)
			return;
		json_array_extend(ids, one);
	}
	json_t *events = c ? conf_events_since(cx, c, NULL, NULL) : NULL;
	json_t *fetched = events ? conf_result(cx, "memory/fetch", json_pack("{s:s}", "key", key))
				 : NULL;
	if (!fetched)
		return;
	json_t *written = conf_events_of_kind(cx, events, "written", ids);
	json_t *rev = json_object_get(json_array_get(written, 1), "revision");
	json_t *stored = json_object_get(json_object_get(fetched, "record"), "revision");
	if (json_array_size(written) != 2)
		conf_fail(cx, "two writes to one key gave written events %s", conf_show(cx, written));
	else if (!json_is_integer(rev) || json_integer_value(rev) <= 0 || !json_equal(rev, stored))
		conf_fail(cx, "the replacement's written event %s: revision should be above 0 "
			  "and the record's (%s)", conf_show(cx, json_array_get(written, 1)),
			  conf_show(cx, stored));
	else
		conf_pass(cx);
}

static void check_session_closed(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_has_capability(cx, "sessions")) {
		conf_skip(cx, "the server does not declare \"sessions\"");
		return;
	}
	const char *m = conf_marker(cx), *session = conf_str(cx, "cfs-%s", m);
	json_t *rec = conf_record(cx, conf_str(cx, "%s in a session", m), m);
	json_object_set_new(rec, "session", json_string(session));
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	const char *c = ids ? conf_events_head(cx) : NULL;
	json_t *r = c ? conf_result(cx, "memory/session/close",
				    json_pack("{s:s}", "session", session)) : NULL;
	json_t *events = r ? conf_events_since(cx, c, NULL, NULL) : NULL;
	if (!events)
		return;
	json_t *closed = conf_events_of_kind(cx, events, "session_closed", NULL);
	const char *got = conf_str_of(json_array_get(closed, 0), "session");
	if (json_array_size(closed) != 1 || !got || strcmp(got, session) != 0)
		conf_fail(cx, "closing session %s gave %s, expected one session_closed event "
			  "naming it", session, conf_show(cx, events));
	else if (consolidated_matches(cx, "memory/session/close", events, r))
		conf_pass(cx);
}

/* Spec §4.12: an event reaches only a caller who could recall its record. */
static void check_scoped(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *tier = conf_private_tier(cx);
	if (!conf_has_capability(cx, "scopes") || !conf_has_capability(cx, "tiers")) {
		conf_skip(cx, "needs \"scopes\" and \"tiers\"");
		return;
	}
	if (!tier) {
		conf_skip(cx, "describe reports no tier with shared: false");
		return;
	}
	const char *m = conf_marker(cx), *c = conf_events_head(cx);
	const char *a = conf_str(cx, "cfa-%s", m), *b = conf_str(cx, "cfb-%s", m);
	json_t *batch = json_array();
	for (int i = 0; i < 2; i++) {
		json_t *rec = conf_record(cx, conf_str(cx, "%s private %d", m, i), m);
		json_object_set_new(rec, "tier", json_string(tier));
		json_array_append_new(batch, rec);
	}
	if (!c || !conf_need_writes(cx)) {
		json_decref(batch);
		return;
	}
	json_t *resp = conf_result(cx, "memory/remember",
				   json_pack("{s:s,s:o}", "owner", a, "records", batch));
	json_t *ids = json_object_get(resp, "ids");
	if (!resp)
		return;
	json_t *seen_b = conf_events_since(cx, c, json_pack("{s:s}", "owner", b), NULL);
	json_t *seen_a = seen_b ? conf_events_since(cx, c, json_pack("{s:s}", "owner", a), NULL) : NULL;
	if (!seen_a)
		return;
	if (json_array_size(conf_events_of_kind(cx, seen_b, "written", ids)) != 0)
		conf_fail(cx, "owner %s saw the written events of owner %s's records in tier "
			  "%s (shared: false): %s", b, a, tier, conf_show(cx, seen_b));
	else if (conf_written_in_order(cx, conf_events_of_kind(cx, seen_a, "written", ids), ids))
		conf_pass(cx);
}

/* How many promoted events of events name id. */
static size_t promotions_of(conf_ctx *cx, const json_t *events, const json_t *id)
{
	json_t *promoted = conf_events_of_kind(cx, events, "promoted", NULL);
	size_t i, n = 0;
	json_t *ev;
	json_array_foreach(promoted, i, ev) {
		json_t *ids = json_object_get(ev, "ids");
		n += json_is_array(ids) && conf_among(ids, id);
	}
	return n;
}

/*
** Spec §4.12: a promotion earned by one owner's recalls names a private
** record, so another owner's poll must not see that event — it could not
** have recalled the record, before the move or after it.
*/
static void check_scoped_promotion(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_has_capability(cx, "scopes") || !conf_has_capability(cx, "tiers")) {
		conf_skip(cx, "needs \"scopes\" and \"tiers\"");
		return;
	}
	const json_t *from = promoting_tier(cx, 1);
	if (!from) {
		conf_skip(cx, "describe reports no private tier promoting to a private tier "
			  "within 20 recalls");
		return;
	}
	const char *m = conf_marker(cx);
	const char *a = conf_str(cx, "cfa-%s", m), *b = conf_str(cx, "cfb-%s", m);
	if (!conf_need_writes(cx))
		return;
	json_t *rec = conf_record(cx, conf_str(cx, "%s private promotion", m), m);
	json_object_set_new(rec, "tier", json_string(conf_str_of(from, "name")));
	if (conf_has_capability(cx, "sessions"))
		json_object_set_new(rec, "session", json_string(conf_str(cx, "cfs-%s", m)));
	json_t *resp = conf_result(cx, "memory/remember",
				   json_pack("{s:s,s:[o]}", "owner", a, "records", rec));
	json_t *ids = json_object_get(resp, "ids");
	const char *c = ids ? conf_events_head(cx) : NULL;
	if (!c)
		return;
	json_int_t times = json_integer_value(json_object_get(from, "promote_after"));
	for (json_int_t k = 0; k < times; k++) {
		if (!conf_result(cx, "memory/recall",
				 json_pack("{s:s,s:s,s:{s:s},s:i}", "query", m, "owner", a, "where",
					   "cfm", m, "limit", 5)))
			return;
	}
	json_t *seen_a = conf_events_since(cx, c, json_pack("{s:s}", "owner", a), NULL);
	json_t *seen_b = seen_a ? conf_events_since(cx, c, json_pack("{s:s}", "owner", b), NULL)
				: NULL;
	if (!seen_b)
		return;
	const json_t *id = json_array_get(ids, 0);
	if (promotions_of(cx, seen_a, id) == 0)
		conf_skip(cx, "%lld recalls by owner %s gave it no promoted event naming the "
			  "record (%s); the check above judges that", (long long)times, a,
			  conf_show(cx, seen_a));
	else if (promotions_of(cx, seen_b, id) != 0)
		conf_fail(cx, "owner %s saw the promotion of owner %s's private record: %s", b,
			  a, conf_show(cx, seen_b));
	else
		conf_pass(cx);
}

static const conf_check checks[] = {
	{"describe reports events with a boolean push", check_describe, NULL},
	{"a poll without a cursor returns no events and a cursor", check_no_cursor, NULL},
	{"each remembered record is one written event, in order, with its fields",
	 check_written, NULL},
	{"the returned cursor continues after the events read", check_cursor_continues, NULL},
	{"limit 1 pages through every event once, in order, with more", check_paging,
	 &limit_one},
	{"limit 2 pages through every event once, in order, with more", check_paging,
	 &limit_two},
	{"a forget of three records is one forgotten event with count 3", check_forgotten,
	 NULL},
	{"a consolidate is one consolidated event carrying its counts", check_consolidated,
	 NULL},
	{"a promote is one promoted event naming the records and the tier", check_promoted,
	 NULL},
	{"a promotion earned by recall is an event naming the record", check_recall_promotes,
	 NULL},
	{"kinds restricts the events to those kinds", check_kinds, NULL},
	{"a garbage cursor is answered with reset: true or -32602", check_garbage_cursor, NULL},
	{"a cursor from another server is reset or -32602, unless the two share one log",
	 check_foreign_cursor, NULL},
	{"malformed kinds and limit are -32602", check_bad_params, NULL},
	{"a key replacement is a written event with revision above 0", check_key_replaced,
	 NULL},
	{"closing a session is one session_closed and one consolidated event",
	 check_session_closed, NULL},
	{"an owner does not see events of another owner's private records", check_scoped,
	 NULL},
	{"an owner does not see the promotion earned by another owner's recalls",
	 check_scoped_promotion, NULL},
};

const conf_group conf_group_events = {"events", "events", checks, CONF_COUNT(checks), 0};
