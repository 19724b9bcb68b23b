/*
** check_sessions.c — checks of the sessions capability (spec §3.5,
** §4.4, §4.10, §4.11; DECISIONS 008): the session field, replaying one
** conversation with timeline, session/list, capacity kept per session, and
** session/close percolating a finished conversation down the stack.
**
** Every check opens its own sessions under fresh names, so a session's
** records are exactly the ones the check wrote. What close must do depends
** on the layout: a working-kind tier with a spill_to is what it flushes, a
** procedural tier is what it must leave alone; a check whose layout lacks
** them skips.
*/
#include <ctype.h>
#include <string.h>

#include "suite.h"

static const char *fresh_session(conf_ctx *cx)
{
	return conf_str(cx, "cfs-%s", conf_marker(cx));
}

/* {"session": session, "tier": tier}, tier NULL meaning conf_tier_home
** (none without "tiers"); kept. */
static json_t *in_session(conf_ctx *cx, const char *session, const char *tier)
{
	json_t *f = conf_keep(cx, json_pack("{s:s}", "session", session));
	if (!tier)
		tier = conf_tier_home(cx);
	if (f && tier)
		json_object_set_new(f, "tier", json_string(tier));
	return f;
}

/* Every record of session, by timeline where {"session": session}. */
static json_t *replay(conf_ctx *cx, const char *session)
{
	return conf_read(cx, "memory/timeline",
			 json_pack("{s:{s:s},s:i}", "where", "session", session, "limit", 5000),
			 NULL);
}

/* session/list's entries; NULL after failing. */
static json_t *sessions(conf_ctx *cx)
{
	json_t *r = conf_result(cx, "memory/session/list", NULL);
	if (!r)
		return NULL;
	json_t *list = json_object_get(r, "sessions");
	if (!json_is_array(list)) {
		conf_fail(cx, "session/list returned %s, expected {\"sessions\": [...]}",
			  conf_show(cx, r));
		return NULL;
	}
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e) {
		const char *s = conf_str_of(e, "session");
		json_t *n = json_object_get(e, "records");
		if (!s || !*s || !json_is_integer(n) || json_integer_value(n) < 0) {
			conf_fail(cx,
				  "session/list has entry %s, expected a non-empty string session "
				  "and an integer records >= 0",
				  conf_show(cx, e));
			return NULL;
		}
	}
	return list;
}

/* The entry of session in list, or NULL after failing. */
static json_t *entry_of(conf_ctx *cx, const json_t *list, const char *session)
{
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e) {
		if (strcmp(conf_str_of(e, "session"), session) == 0)
			return e;
	}
	conf_fail(cx, "session/list does not list \"%s\", which holds records", session);
	return NULL;
}

/* The first tier of kind (a described spill_to required when spills is
** set) with room for n records; NULL after a verdict when there is none. */
static const json_t *tier_of_kind(conf_ctx *cx, const char *kind, int spills, size_t n)
{
	const json_t *tiers = conf_tiers(cx);
	if (!tiers) {
		conf_skip(cx, "without \"tiers\" there is no %s tier", kind);
		return NULL;
	}
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const json_t *t = json_array_get(tiers, i);
		const char *k = conf_tier_str(t, "kind");
		if (!k || strcmp(k, kind) != 0 ||
		    (spills && !conf_tier(cx, conf_tier_str(t, "spill_to"))))
			continue;
		int room = conf_tier_room(cx, t, n);
		if (room < 0)
			return NULL;
		if (room)
			return t;
	}
	conf_skip(cx, "the layout has no tier of kind %s%s with room for %zu records", kind,
		  spills ? " with a spill_to" : "", n);
	return NULL;
}

static int is_kind(conf_ctx *cx, const char *tier, const char *kind)
{
	const char *k = conf_tier_str(conf_tier(cx, tier), "kind");
	return k && strcmp(k, kind) == 0;
}

/* ---- the session field (spec §3.5) ---- */

static void check_session_round_trip(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx), *s = fresh_session(cx);
	json_t *ids = conf_write_n(cx, m, 1, in_session(cx, s, NULL));
	json_t *mine = ids ? conf_read(cx, "memory/timeline",
				       json_pack("{s:{s:s}}", "where", "cfm", m), m)
			   : NULL;
	if (!mine)
		return;
	const char *got = conf_str_of(json_array_get(mine, 0), "session");
	if (json_array_size(mine) != 1)
		conf_fail(cx, "timeline returned %zu of the one record written",
			  json_array_size(mine));
	else if (!got || strcmp(got, s) != 0)
		conf_fail(cx, "written with session \"%s\", read back session %s", s,
			  conf_show(cx, json_object_get(json_array_get(mine, 0), "session")));
	else
		conf_pass(cx);
}

/*
** remember {session: S, records: [one without session, one with S2]}: the
** first joins S, the second keeps S2. §3.5 says a server accepts session
** "on memory/remember"; we read that as both places, as §4.2 has owner.
*/
static void check_session_default(conf_ctx *cx, const void *arg)
{
	int own_wins = arg != NULL;
	const char *m = conf_marker(cx), *s = fresh_session(cx), *s2 = fresh_session(cx);
	json_t *plain = conf_record(cx, conf_str(cx, "%s joins the call's session", m), m);
	json_t *own = conf_record(cx, conf_str(cx, "%s names its own session", m), m);
	json_object_set_new(own, "session", json_string(s2));
	const char *home = conf_tier_home(cx);
	if (home) {
		json_object_set_new(plain, "tier", json_string(home));
		json_object_set_new(own, "tier", json_string(home));
	}
	if (!conf_result(cx, "memory/remember",
			 json_pack("{s:s,s:[o,o]}", "session", s, "records", plain, own)))
		return;
	json_t *mine = conf_read(cx, "memory/timeline", json_pack("{s:{s:s}}", "where", "cfm", m),
				 m);
	const char *text = own_wins ? "names its own session" : "joins the call's session";
	const char *want = own_wins ? s2 : s;
	json_t *rec = mine ? conf_by_content(mine, text) : NULL;
	if (!mine)
		return;
	if (!rec) {
		conf_fail(cx, "timeline does not return the record that %s", text);
		return;
	}
	const char *got = conf_str_of(rec, "session");
	if (!got || strcmp(got, want) != 0)
		conf_fail(cx, "the record that %s has session %s, expected \"%s\"", text,
			  conf_show(cx, json_object_get(rec, "session")), want);
	else
		conf_pass(cx);
}

/* ---- replay (spec §3.5, §4.4) ---- */

static void check_replay(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *s = fresh_session(cx), *other = fresh_session(cx);
	/* Three turns of s, interleaved with another session and with none. */
	const char *who[] = {s, other, s, NULL, s};
	json_t *want = conf_keep(cx, json_array());
	const char *home = conf_tier_home(cx);
	for (size_t i = 0; i < CONF_COUNT(who); i++) {
		if (i > 0)
			conf_tick();
		json_t *rec = conf_record(cx, conf_str(cx, "%s turn %zu", m, i), m);
		if (who[i])
			json_object_set_new(rec, "session", json_string(who[i]));
		if (home)
			json_object_set_new(rec, "tier", json_string(home));
		json_t *ids = conf_remember(cx, json_pack("[o]", rec));
		if (!ids)
			return;
		if (who[i] == s)
			json_array_append(want, json_array_get(ids, 0));
	}
	json_t *got = replay(cx, s);
	if (!got)
		return;
	json_t *got_ids = conf_keep(cx, json_array());
	size_t i;
	json_t *rec;
	json_array_foreach(got, i, rec)
		json_array_append(got_ids, json_object_get(rec, "id"));
	if (!json_equal(got_ids, want))
		conf_fail(cx, "timeline where session returned ids %s, expected exactly %s in that "
			  "order", conf_show(cx, got_ids), conf_show(cx, want));
	else
		conf_pass(cx);
}

/* ---- session/list (spec §4.10) ---- */

/* Writes 2 then, a tick later, 1 record into a fresh session. */
static const char *three_in_session(conf_ctx *cx, const char *m)
{
	const char *s = fresh_session(cx);
	if (!conf_write_n(cx, m, 2, in_session(cx, s, NULL)))
		return NULL;
	conf_tick();
	return conf_write_n(cx, m, 1, in_session(cx, s, NULL)) ? s : NULL;
}

static void check_list_records(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *s = three_in_session(cx, m);
	json_t *list = s ? sessions(cx) : NULL;
	json_t *e = list ? entry_of(cx, list, s) : NULL;
	if (!e)
		return;
	json_int_t n = json_integer_value(json_object_get(e, "records"));
	if (n != 3)
		conf_fail(cx, "session/list gives \"%s\" %lld records, expected 3", s,
			  (long long)n);
	else
		conf_pass(cx);
}

static void check_list_tiers(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_tiers(cx)) {
		conf_skip(cx, "the server does not declare \"tiers\"");
		return;
	}
	const char *m = conf_marker(cx);
	const char *s = three_in_session(cx, m);
	json_t *list = s ? sessions(cx) : NULL;
	json_t *e = list ? entry_of(cx, list, s) : NULL;
	if (!e)
		return;
	json_t *tiers = json_object_get(e, "tiers");
	if (!tiers) {
		conf_skip(cx, "session/list gives no tiers (optional, spec §4.10)");
		return;
	}
	json_t *mine = replay(cx, s);
	if (!mine)
		return;
	/* Where the records really are, from timeline. */
	json_t *want = conf_keep(cx, json_object());
	size_t i;
	json_t *rec;
	json_array_foreach(mine, i, rec) {
		const char *t = conf_str_of(rec, "tier");
		if (!t) {
			conf_fail(cx, "record %s carries no tier", conf_show(cx, rec));
			return;
		}
		json_int_t had = json_integer_value(json_object_get(want, t));
		json_object_set_new(want, t, json_integer(had + 1));
	}
	if (!json_is_object(tiers)) {
		conf_fail(cx, "tiers is %s, expected an object", conf_show(cx, tiers));
		return;
	}
	const char *name;
	json_t *v;
	json_object_foreach(tiers, name, v) {
		if (!json_is_integer(v)) {
			conf_fail(cx, "tiers gives \"%s\" %s, expected an integer", name,
				  conf_show(cx, v));
			return;
		}
		if (json_integer_value(v) == 0 && !json_object_get(want, name))
			continue;
		if (!json_equal(v, json_object_get(want, name))) {
			conf_fail(cx,
				  "session/list tiers %s, but timeline finds the session's records "
				  "in %s",
				  conf_show(cx, tiers), conf_show(cx, want));
			return;
		}
	}
	json_object_foreach(want, name, v) {
		if (!json_equal(v, json_object_get(tiers, name))) {
			conf_fail(cx,
				  "session/list tiers %s, but timeline finds the session's records "
				  "in %s",
				  conf_show(cx, tiers), conf_show(cx, want));
			return;
		}
	}
	conf_pass(cx);
}

/* A timestamp member of entry; -1 with a skip when absent, -2 after failing. */
static int64_t time_of(conf_ctx *cx, const json_t *e, const char *member)
{
	json_t *v = json_object_get(e, member);
	int64_t ms;
	if (!v) {
		conf_skip(cx, "session/list gives no %s (optional, spec §4.10)", member);
		return -1;
	}
	if (!conf_is_wire_timestamp(json_string_value(v)) ||
	    conf_parse_time(json_string_value(v), &ms) != 0) {
		conf_fail(cx, "%s is %s, expected an RFC 3339 timestamp", member, conf_show(cx, v));
		return -2;
	}
	return ms;
}

/*
** A session is open no later than its first record and touched no earlier
** than its last: the bounds any reading of opened_at and touched_at has.
*/
static void check_list_times(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *s = three_in_session(cx, m);
	json_t *list = s ? sessions(cx) : NULL;
	json_t *e = list ? entry_of(cx, list, s) : NULL;
	json_t *mine = e ? replay(cx, s) : NULL;
	if (!mine)
		return;
	int64_t opened = time_of(cx, e, "opened_at");
	int64_t touched = opened >= 0 ? time_of(cx, e, "touched_at") : -1;
	int64_t first, last;
	if (touched < 0)
		return;
	if (json_array_size(mine) != 3 ||
	    conf_parse_time(conf_str_of(json_array_get(mine, 0), "created_at"), &first) != 0 ||
	    conf_parse_time(conf_str_of(json_array_get(mine, 2), "created_at"), &last) != 0) {
		conf_fail(cx, "timeline of the session returned %s", conf_show(cx, mine));
		return;
	}
	const char *o = conf_str_of(e, "opened_at"), *t = conf_str_of(e, "touched_at");
	if (opened > touched)
		conf_fail(cx, "opened_at %s is after touched_at %s", o, t);
	else if (opened > first)
		conf_fail(cx, "opened_at %s is after the session's first record (%s)", o,
			  conf_str_of(json_array_get(mine, 0), "created_at"));
	else if (touched < last)
		conf_fail(cx, "touched_at %s is before the session's last record (%s)", t,
			  conf_str_of(json_array_get(mine, 2), "created_at"));
	else
		conf_pass(cx);
}

/* The sum of records over every listed session; -1 after failing. */
static int64_t listed_total(conf_ctx *cx)
{
	json_t *list = sessions(cx);
	if (!list)
		return -1;
	int64_t sum = 0;
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e)
		sum += json_integer_value(json_object_get(e, "records"));
	return sum;
}

/* Spec §3.5: records with no session are no named session's. */
static void check_no_session_unlisted(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	/* Into the home tier, so the write pushes no session's record out of
	** a full one (that would change the total for another reason). */
	const char *home = conf_tier_home(cx);
	json_t *fields = home ? conf_keep(cx, json_pack("{s:s}", "tier", home)) : NULL;
	int64_t before = listed_total(cx);
	if (before < 0 || !conf_write_n(cx, m, 2, fields))
		return;
	int64_t after = listed_total(cx);
	if (after < 0)
		return;
	if (after != before)
		conf_fail(cx, "writing two records with no session changed the records listed "
			  "across sessions from %lld to %lld", (long long)before, (long long)after);
	else
		conf_pass(cx);
}

/* ---- capacity per session (spec §3.5, DECISIONS 008) ---- */

static void check_capacity_per_session(conf_ctx *cx, const void *arg)
{
	(void)arg;
	enum { QUIET = 2, OVER = 3, MAX_CAPACITY = 2000 };
	const json_t *tiers = conf_tiers(cx), *t = NULL;
	for (size_t i = 0; i < json_array_size(tiers) && !t; i++) {
		const json_t *c = json_array_get(tiers, i);
		int64_t cap = conf_tier_capacity(c);
		if (conf_tier_flag(c, "per_session") == 1 && cap >= QUIET && cap <= MAX_CAPACITY)
			t = c;
	}
	if (!t) {
		conf_skip(cx, "no tier is per_session with a capacity of %d to %d", QUIET,
			  MAX_CAPACITY);
		return;
	}
	const char *name = conf_tier_str(t, "name");
	int64_t cap = conf_tier_capacity(t);
	const char *m = conf_marker(cx), *quiet = fresh_session(cx), *busy = fresh_session(cx);
	if (!conf_write_n(cx, m, QUIET, in_session(cx, quiet, name)))
		return;
	conf_tick();
	if (!conf_write_n(cx, m, (size_t)cap + OVER, in_session(cx, busy, name)))
		return;
	json_t *q = replay(cx, quiet), *b = q ? replay(cx, busy) : NULL;
	if (!b)
		return;
	size_t i;
	json_t *rec;
	json_array_foreach(q, i, rec) {
		const char *at = conf_str_of(rec, "tier");
		if (!at || strcmp(at, name) != 0) {
			conf_fail(cx,
				  "session \"%s\" wrote %lld records into \"%s\" (capacity %lld); "
				  "a record of quiet session \"%s\" moved to %s",
				  busy, (long long)cap + OVER, name, (long long)cap, quiet,
				  conf_show(cx, json_object_get(rec, "tier")));
			return;
		}
	}
	int64_t held = 0;
	json_array_foreach(b, i, rec) {
		const char *at = conf_str_of(rec, "tier");
		held += at && strcmp(at, name) == 0;
	}
	if (json_array_size(q) != QUIET)
		conf_fail(cx, "the quiet session has %zu of its %d records", json_array_size(q),
			  QUIET);
	else if (held > cap)
		conf_fail(cx, "session \"%s\" holds %lld records in \"%s\", over its capacity %lld",
			  busy, (long long)held, name, (long long)cap);
	else
		conf_pass(cx);
}

/* ---- session/close (spec §4.11, DECISIONS 008) ---- */

/* The session/close result for session; NULL after failing. */
static json_t *close_session(conf_ctx *cx, const char *session)
{
	json_t *r = conf_result(cx, "memory/session/close", json_pack("{s:s}", "session", session));
	if (!r)
		return NULL;
	const char *closed = conf_str_of(r, "closed");
	json_t *flushed = json_object_get(r, "flushed");
	if (!closed || strcmp(closed, session) != 0) {
		conf_fail(cx, "closing \"%s\" returned closed %s", session,
			  conf_show(cx, json_object_get(r, "closed")));
		return NULL;
	}
	if (!json_is_integer(flushed) || json_integer_value(flushed) < 0) {
		conf_fail(cx, "closing returned flushed %s, expected an integer >= 0",
			  conf_show(cx, flushed));
		return NULL;
	}
	return r;
}

/* What a close check writes and where. */
typedef struct closing {
	const char *session, *other; /* closed; left open */
	const char *working;         /* a working-kind tier with a spill_to */
	const char *procedural;      /* a procedural tier, or NULL */
	size_t n_working;            /* the session's records written to working */
	size_t n_total;              /* all the session's records */
	json_t *proc_id;             /* the procedural record's id */
} closing;

/*
** Writes into a fresh session three records in a working tier and, when
** the layout has one, one in a procedural tier; and one record of another
** session in the same working tier. Returns 1, or 0 after a verdict.
*/
static int prepare_close(conf_ctx *cx, closing *c)
{
	enum { IN_WORKING = 3 };
	/* Room for the other session's record too, should the tier not be
	** per-session. */
	const json_t *w = tier_of_kind(cx, "working", 1, IN_WORKING + 1);
	if (!w)
		return 0;
	memset(c, 0, sizeof *c);
	c->session = fresh_session(cx);
	c->other = fresh_session(cx);
	c->working = conf_tier_str(w, "name");
	const json_t *tiers = conf_tiers(cx);
	for (size_t i = 0; i < json_array_size(tiers) && !c->procedural; i++) {
		const char *name = conf_tier_str(json_array_get(tiers, i), "name");
		if (is_kind(cx, name, "procedural"))
			c->procedural = name;
	}
	const char *m = conf_marker(cx);
	if (!conf_write_n(cx, m, IN_WORKING, in_session(cx, c->session, c->working)) ||
	    !conf_write_n(cx, m, 1, in_session(cx, c->other, c->working)))
		return 0;
	c->n_working = IN_WORKING;
	c->n_total = IN_WORKING;
	if (c->procedural) {
		json_t *ids = conf_write_n(cx, m, 1, in_session(cx, c->session, c->procedural));
		if (!ids)
			return 0;
		c->proc_id = json_array_get(ids, 0);
		c->n_total++;
	}
	return 1;
}

static void check_close_result(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const char *const ints[] = {"moved", "promoted", "dropped", "summarized"};
	const json_t *tiers = conf_tiers(cx);
	closing c;
	if (tiers && !prepare_close(cx, &c))
		return;
	if (!tiers) {
		/* Without tiers there is nothing to flush, but closed and flushed
		** are still owed. */
		c.session = fresh_session(cx);
		if (!conf_write_n(cx, conf_marker(cx), 1, in_session(cx, c.session, NULL)))
			return;
	}
	json_t *r = close_session(cx, c.session);
	if (!r || !tiers) {
		if (r)
			conf_pass(cx);
		return;
	}
	for (size_t i = 0; i < CONF_COUNT(ints); i++) {
		json_t *v = json_object_get(r, ints[i]);
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			conf_fail(cx, "close returned %s %s; it carries consolidate's result (spec "
				  "§4.11), an integer >= 0", ints[i], conf_show(cx, v));
			return;
		}
	}
	json_t *counts = json_object_get(r, "counts");
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const char *name = conf_tier_str(json_array_get(tiers, i), "name");
		if (!json_is_integer(json_object_get(counts, name))) {
			conf_fail(cx,
				  "close returned counts %s, without an integer for tier \"%s\"",
				  conf_show(cx, counts), name);
			return;
		}
	}
	conf_pass(cx);
}

static void check_close_flushes(conf_ctx *cx, const void *arg)
{
	(void)arg;
	closing c;
	if (!prepare_close(cx, &c))
		return;
	json_t *r = close_session(cx, c.session);
	json_t *left = r ? replay(cx, c.session) : NULL;
	if (!left)
		return;
	size_t i;
	json_t *rec;
	json_array_foreach(left, i, rec) {
		const char *at = conf_str_of(rec, "tier");
		if (at && is_kind(cx, at, "working")) {
			conf_fail(cx,
				  "after close, a record of the session is still in working tier "
				  "\"%s\"",
				  at);
			return;
		}
	}
	json_int_t flushed = json_integer_value(json_object_get(r, "flushed"));
	if (flushed != (json_int_t)c.n_working)
		conf_fail(cx, "close flushed %lld; the session had %zu records in \"%s\"",
			  (long long)flushed, c.n_working, c.working);
	else
		conf_pass(cx);
}

static void check_close_keeps(conf_ctx *cx, const void *arg)
{
	(void)arg;
	closing c;
	if (!prepare_close(cx, &c))
		return;
	int may_drop = conf_tier_can_drop(cx, c.working, 0);
	if (may_drop < 0)
		return;
	if (may_drop) {
		conf_skip(cx, "the spill chain below \"%s\" may drop records, which close may "
			  "then do too (spec §4.11)", c.working);
		return;
	}
	json_t *left = close_session(cx, c.session) ? replay(cx, c.session) : NULL;
	if (!left)
		return;
	if (json_array_size(left) != c.n_total)
		conf_fail(cx, "after close, timeline where session finds %zu of the session's %zu "
			  "records", json_array_size(left), c.n_total);
	else
		conf_pass(cx);
}

static void check_close_procedural(conf_ctx *cx, const void *arg)
{
	(void)arg;
	closing c;
	if (!prepare_close(cx, &c))
		return;
	if (!c.procedural) {
		conf_skip(cx, "the layout has no tier of kind procedural");
		return;
	}
	json_t *left = close_session(cx, c.session) ? replay(cx, c.session) : NULL;
	if (!left)
		return;
	json_t *rec = conf_by_id(left, json_string_value(c.proc_id));
	const char *at = conf_str_of(rec, "tier");
	if (!rec)
		conf_fail(cx, "after close, the session's procedural record is gone");
	else if (!at || strcmp(at, c.procedural) != 0)
		conf_fail(cx, "after close, the session's procedural record is in %s, expected "
			  "\"%s\"", conf_show(cx, json_object_get(rec, "tier")), c.procedural);
	else
		conf_pass(cx);
}

static void check_close_others_stay(conf_ctx *cx, const void *arg)
{
	(void)arg;
	closing c;
	if (!prepare_close(cx, &c))
		return;
	json_t *left = close_session(cx, c.session) ? replay(cx, c.other) : NULL;
	if (!left)
		return;
	const char *at = conf_str_of(json_array_get(left, 0), "tier");
	if (json_array_size(left) != 1)
		conf_fail(cx, "the open session has %zu of its one record", json_array_size(left));
	else if (!at || strcmp(at, c.working) != 0)
		conf_fail(cx, "closing one session moved another's record from \"%s\" to %s",
			  c.working,
			  conf_show(cx, json_object_get(json_array_get(left, 0), "tier")));
	else
		conf_pass(cx);
}

static void check_close_unknown(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_need_writes(cx))
		return;
	json_t *r = close_session(cx, fresh_session(cx));
	if (!r)
		return;
	json_int_t flushed = json_integer_value(json_object_get(r, "flushed"));
	if (flushed != 0)
		conf_fail(cx, "closing a session that never existed flushed %lld",
			  (long long)flushed);
	else
		conf_pass(cx);
}

static void check_close_invalid(conf_ctx *cx, const void *arg)
{
	if (!conf_need_writes(cx))
		return;
	json_t *params = conf_json(cx, arg);
	if (params && conf_expect_error(cx, "memory/session/close", json_incref(params),
					CONF_INVALID_PARAMS, 0))
		conf_pass(cx);
}

static const conf_check sessions_checks[] = {
	{"a record carries the session it was written with", check_session_round_trip, NULL},
	{"remember's session is the default for records without one", check_session_default,
	 NULL},
	{"a record's own session wins over remember's", check_session_default, "own"},
	{"timeline where session replays exactly that session, in order", check_replay, NULL},
	{"session/list counts a session's records", check_list_records, NULL},
	{"session/list's tiers count where the session's records are", check_list_tiers, NULL},
	{"session/list's opened_at <= touched_at, spanning the session's records",
	 check_list_times, NULL},
	{"records without a session are in no listed session", check_no_session_unlisted, NULL},
	{"a per-session capacity is kept within each session", check_capacity_per_session, NULL},
	{"close returns closed, flushed and consolidate's counts", check_close_result, NULL},
	{"close moves the session out of working tiers; flushed counts the moved",
	 check_close_flushes, NULL},
	{"close deletes none of the session's records", check_close_keeps, NULL},
	{"close leaves the session's procedural records in place", check_close_procedural, NULL},
	{"close leaves other sessions' working records alone", check_close_others_stay, NULL},
	{"closing a session that does not exist flushes nothing and is no error",
	 check_close_unknown, NULL},
	{"close without session is -32602", check_close_invalid, "{}"},
	{"close with an empty session is -32602", check_close_invalid, "{\"session\":\"\"}"},
	{"close with a session that is not a string is -32602", check_close_invalid,
	 "{\"session\":42}"},
};

const conf_group conf_group_sessions = {"sessions", "sessions", sessions_checks,
					CONF_COUNT(sessions_checks), 0};
