/*
** check_xexpiry.c — checks of our x-expiry extension (docs/PROTOCOL.md,
** Extensions): a record carrying expires_at says so and is returned until
** then; one whose time has come is returned by no read, and is removed
** without a client asking, with a forgotten event marked expired. The
** suite has no hold on the server's clock, so the expiring record is
** written with a time in the past, or one a second and a half ahead that
** the check waits out. Skipped when x-expiry is not declared.
*/
#include <errno.h>
#include <string.h>
#include <time.h>

#include "suite.h"

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" for ms. */
static const char *wire_time(conf_ctx *cx, int64_t ms)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	return conf_str(cx, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
			tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* expires_at round-trips; ttl_seconds becomes created_at + ttl. */
static void check_round_trip(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	if (!conf_need_writes(cx))
		return;
	json_t *a = conf_record(cx, conf_str(cx, "%s lasts", m), m);
	json_object_set_new(a, "expires_at", json_string("2099-01-02T03:04:05.678Z"));
	json_t *b = conf_record(cx, conf_str(cx, "%s ttl", m), m);
	json_object_set_new(b, "ttl_seconds", json_integer(3600));
	json_t *c = conf_record(cx, conf_str(cx, "%s forever", m), m);
	if (!conf_remember(cx, json_pack("[o,o,o]", a, b, c)))
		return;
	json_t *recs = conf_timeline_of(cx, m);
	if (!recs || !conf_expect_count(cx, "timeline", recs, 3))
		return;
	const char *at = conf_str_of(json_array_get(recs, 0), "expires_at");
	if (!at || strcmp(at, "2099-01-02T03:04:05.678Z") != 0) {
		conf_fail(cx, "a record written with expires_at 2099-01-02T03:04:05.678Z reads "
			  "back with %s", conf_show(cx, json_object_get(json_array_get(recs, 0),
									 "expires_at")));
		return;
	}
	int64_t created, expires;
	json_t *rb = json_array_get(recs, 1);
	if (conf_parse_time(conf_str_of(rb, "created_at"), &created) != 0 ||
	    !conf_str_of(rb, "expires_at") || conf_parse_time(conf_str_of(rb, "expires_at"), &expires) != 0 ||
	    expires - created < 3599000 || expires - created > 3601000) {
		conf_fail(cx, "a record written with ttl_seconds 3600 reads back as %s",
			  conf_show(cx, rb));
		return;
	}
	json_t *rc = json_array_get(recs, 2);
	if (json_object_get(rc, "expires_at") && !json_is_null(json_object_get(rc, "expires_at"))) {
		conf_fail(cx, "a record written without an expiry reads back with expires_at %s",
			  conf_show(cx, json_object_get(rc, "expires_at")));
		return;
	}
	conf_pass(cx);
}

/* A record already expired when written is returned by no read. */
static void check_past_never_returned(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	if (!conf_need_writes(cx))
		return;
	json_t *r = conf_record(cx, conf_str(cx, "%s already expired", m), m);
	json_object_set_new(r, "expires_at", json_string("2001-01-01T00:00:00.000Z"));
	if (conf_has_capability(cx, "keys"))
		json_object_set_new(r, "key", json_string(conf_str(cx, "cf/%s/expired", m)));
	if (!conf_remember(cx, json_pack("[o]", r)))
		return;
	json_t *t = conf_timeline_of(cx, m);
	if (!t || !conf_expect_count(cx, "timeline of an expired record", t, 0))
		return;
	json_t *found = conf_find(cx, m);
	if (!found || !conf_expect_count(cx, "recall of an expired record", found, 0))
		return;
	if (conf_has_capability(cx, "keys")) {
		json_t *f = conf_result(cx, "memory/fetch",
					json_pack("{s:s}", "key", conf_str(cx, "cf/%s/expired", m)));
		if (!f)
			return;
		if (!json_is_null(json_object_get(f, "record"))) {
			conf_fail(cx, "fetch of an expired record's key returned %s", conf_show(cx, f));
			return;
		}
	}
	conf_pass(cx);
}

/*
** A record expiring a second and a half after it was written: returned
** before, not after; and removed by then with no call of ours in between,
** so the first poll after it already holds its forgotten event.
*/
static void check_expires_and_is_removed(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	if (!conf_need_writes(cx))
		return;
	int events = conf_has_capability(cx, "events");
	const char *cursor = events ? conf_events_head(cx) : NULL;
	if (events && !cursor)
		return;
	json_t *probe = conf_remember(cx, json_pack("[o]", conf_record(cx, conf_str(cx, "%s clock", m), NULL)));
	json_t *clock = probe ? conf_timeline(cx, json_pack("{s:{s:s}}", "where", "id",
		json_string_value(json_array_get(probe, 0)))) : NULL;
	int64_t now;
	if (!clock || conf_parse_time(conf_str_of(json_array_get(clock, 0), "created_at"), &now) != 0) {
		if (clock)
			conf_fail(cx, "cannot read the server's time from a record it wrote");
		return;
	}
	json_t *r = conf_record(cx, conf_str(cx, "%s expiring", m), m);
	json_object_set_new(r, "expires_at", json_string(wire_time(cx, now + 1500)));
	json_t *ids = conf_remember(cx, json_pack("[o]", r));
	json_t *before = ids ? conf_timeline_of(cx, m) : NULL;
	if (!before || !conf_expect_count(cx, "timeline before the expiry", before, 1))
		return;
	/* Wait it out (plus slack for a loaded machine), calling nothing. */
	int64_t start = conf_now_ms();
	pause_ms(2500);
	if (events) {
		json_t *evs = conf_events_since(cx, cursor, NULL, NULL);
		json_t *gone = evs ? conf_events_of_kind(cx, evs, "forgotten", NULL) : NULL;
		int found = 0;
		for (size_t i = 0; gone && i < json_array_size(gone); i++) {
			json_t *e = json_array_get(gone, i);
			json_t *eids = json_object_get(e, "ids");
			if (json_is_true(json_object_get(e, "expired")) && (!eids || conf_among(eids, json_array_get(ids, 0))))
				found = 1;
		}
		if (!evs)
			return;
		if (!found) {
			conf_fail(cx, "%lld ms after a record's expiry, with no call in between, the "
				  "log holds no forgotten event marked expired naming it: %s",
				  (long long)(conf_now_ms() - start - 1500), conf_show(cx, evs));
			return;
		}
	}
	json_t *after = conf_timeline_of(cx, m);
	if (after && conf_expect_count(cx, "timeline after the expiry", after, 0))
		conf_pass(cx);
}

static void check_invalid(conf_ctx *cx, const void *arg)
{
	int ro = conf_probe_read_only(cx);
	if (ro == 1)
		conf_skip(cx, "the server is read-only (spec §2.1)");
	if (ro == 0)
		conf_expect_invalid(cx, "memory/remember", arg);
}

static const conf_check xexpiry_checks[] = {
	{"expires_at round-trips; ttl_seconds is created_at + ttl; no expiry, no field",
	 check_round_trip, NULL},
	{"a record written already expired is returned by no read", check_past_never_returned, NULL},
	{"a record is returned until it expires, then removed with no call, one forgotten "
	 "event marked expired", check_expires_and_is_removed, NULL},
	{"expires_at that is not an RFC 3339 time is -32602", check_invalid,
	 "{\"records\":[{\"content\":\"x\",\"expires_at\":\"next week\"}]}"},
	{"ttl_seconds of 0 is -32602", check_invalid,
	 "{\"records\":[{\"content\":\"x\",\"ttl_seconds\":0}]}"},
	{"expires_at and ttl_seconds together are -32602", check_invalid,
	 "{\"records\":[{\"content\":\"x\",\"ttl_seconds\":5,\"expires_at\":\"2099-01-01T00:00:00Z\"}]}"},
};

const conf_group conf_group_xexpiry = {"x-expiry", "x-expiry", xexpiry_checks,
				       CONF_COUNT(xexpiry_checks), 0};
