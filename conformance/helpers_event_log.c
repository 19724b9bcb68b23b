/*
** helpers_event_log.c — reading the event log (spec §4.12) for the
** events and events/push groups: polls checked for shape and order, the
** head cursor, everything after a cursor, and picking out the events that
** name a check's own records.
*/
#include <string.h>

#include "suite.h"

/* A wire timestamp (spec §3.3) that also names a real time. */
static int is_wire_timestamp(const char *s)
{
	int64_t ms;
	return conf_is_wire_timestamp(s) && conf_parse_time(s, &ms) == 0;
}

/* Whether an event has a string kind and a wire timestamp; fails if not. */
int conf_event_ok(conf_ctx *cx, const json_t *ev)
{
	if (!json_is_object(ev) || !json_is_string(json_object_get(ev, "kind"))) {
		conf_fail(cx, "event %s has no string kind (spec §4.12)", conf_show(cx, ev));
		return 0;
	}
	if (!is_wire_timestamp(conf_str_of(ev, "at"))) {
		conf_fail(cx, "event %s: at is not an RFC 3339 UTC timestamp with "
			  "milliseconds (spec §3.3)", conf_show(cx, ev));
		return 0;
	}
	return 1;
}

/*
** memory/events with params (stolen). Returns the result after checking its
** shape (an events array of well-formed events, a cursor string, more and
** reset booleans when present), or NULL after failing the check.
*/
json_t *conf_events_poll(conf_ctx *cx, json_t *params)
{
	json_t *r = conf_result(cx, "memory/events", params);
	if (!r)
		return NULL;
	json_t *events = json_object_get(r, "events");
	const char *cursor = conf_str_of(r, "cursor");
	json_t *more = json_object_get(r, "more"), *reset = json_object_get(r, "reset");
	if (!json_is_array(events) || !cursor || !*cursor) {
		conf_fail(cx, "memory/events answered %s, expected an events array and a "
			  "cursor string", conf_show(cx, r));
		return NULL;
	}
	if ((more && !json_is_boolean(more)) || (reset && !json_is_boolean(reset))) {
		conf_fail(cx, "more and reset must be booleans: %s", conf_show(cx, r));
		return NULL;
	}
	size_t i;
	json_t *ev;
	int64_t prev = 0, at;
	json_array_foreach(events, i, ev) {
		if (!conf_event_ok(cx, ev))
			return NULL;
		/* Oldest first (spec §4.12), so `at` never goes back. */
		if (conf_parse_time(conf_str_of(ev, "at"), &at) == 0 && at < prev) {
			conf_fail(cx, "events are not oldest first: %s follows an event at "
				  "%lld ms", conf_show(cx, ev), (long long)prev);
			return NULL;
		}
		prev = at;
	}
	return r;
}

/* The head: a poll without a cursor, which must carry no events. */
const char *conf_events_head(conf_ctx *cx)
{
	json_t *r = conf_events_poll(cx, json_object());
	if (!r)
		return NULL;
	if (json_array_size(json_object_get(r, "events")) != 0) {
		conf_fail(cx, "a poll without a cursor returned events %s; absent means "
			  "\"now\" (spec §4.12)", conf_show(cx, json_object_get(r, "events")));
		return NULL;
	}
	return conf_str_of(r, "cursor");
}

/*
** Every event after cursor, polling with extra params (stolen, may be NULL)
** until more is no longer true. Sets *next to the last cursor when next is
** not NULL. NULL after failing the check.
**
** A check reads at most a handful of events after a cursor it took moments
** before, so reset: true here is a fault, unless the server retains almost
** nothing (spec §4.12 lets it bound the log, not empty it).
*/
json_t *conf_events_since(conf_ctx *cx, const char *cursor, json_t *extra, const char **next)
{
	json_t *all = conf_keep(cx, json_array());
	if (!extra)
		extra = json_object();
	conf_keep(cx, extra);
	for (int round = 0; round < CONF_MAX_POLLS; round++) {
		json_t *p = json_deep_copy(extra);
		json_object_set_new(p, "cursor", json_string(cursor));
		json_t *r = conf_events_poll(cx, p);
		if (!r)
			return NULL;
		if (json_is_true(json_object_get(r, "reset"))) {
			conf_fail(cx, "a cursor issued moments ago, with a handful of events "
				  "since, was answered with reset: true: %s", conf_show(cx, r));
			return NULL;
		}
		json_array_extend(all, json_object_get(r, "events"));
		cursor = conf_str_of(r, "cursor");
		if (!json_is_true(json_object_get(r, "more"))) {
			if (next)
				*next = cursor;
			return all;
		}
	}
	conf_fail(cx, "memory/events still said more: true after %d polls", CONF_MAX_POLLS);
	return NULL;
}

/* The events of kind; when ids is not NULL, only those naming one of ids. */
json_t *conf_events_of_kind(conf_ctx *cx, const json_t *events, const char *kind, const json_t *ids)
{
	json_t *out = conf_keep(cx, json_array());
	size_t i;
	json_t *ev;
	json_array_foreach(events, i, ev) {
		const char *k = conf_str_of(ev, "kind");
		if (k && strcmp(k, kind) == 0 && (!ids || conf_among(ids, json_object_get(ev, "id"))))
			json_array_append(out, ev);
	}
	return out;
}

/*
** Whether written holds exactly one `written` event per id of ids, in that
** order; fails the check if not.
*/
int conf_written_in_order(conf_ctx *cx, const json_t *written, const json_t *ids)
{
	int ok = json_array_size(written) == json_array_size(ids);
	for (size_t i = 0; ok && i < json_array_size(ids); i++)
		ok = json_equal(json_object_get(json_array_get(written, i), "id"),
				json_array_get(ids, i));
	if (!ok)
		conf_fail(cx, "expected one written event per record, in the order written "
			  "(ids %s); got %s", conf_show(cx, ids), conf_show(cx, written));
	return ok;
}

/* Writes texts.. as one batch tagged m (records stolen); the ids. */
json_t *conf_events_write(conf_ctx *cx, const char *m, size_t n)
{
	json_t *batch = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(batch, conf_record(cx, conf_str(cx, "%s event %zu", m, i), m));
	return conf_remember(cx, batch);
}

/* The first tier whose describe entry says shared: false, or NULL. */
const char *conf_private_tier(conf_ctx *cx)
{
	json_t *tiers = json_object_get(conf_describe(cx), "tiers");
	size_t i;
	json_t *t;
	json_array_foreach(tiers, i, t) {
		if (json_is_false(json_object_get(t, "shared")) && conf_str_of(t, "name"))
			return conf_str_of(t, "name");
	}
	return NULL;
}
