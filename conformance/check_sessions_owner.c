/*
** check_sessions_owner.c — the owner parameter of memory/session/list
** (spec §4.10) and memory/session/close (§4.11), where sessions meet scopes
** (§6): an owner lists and closes only the sessions it could replay.
**
** Both checks write one record as one owner into a tier described as
** shared: false, in a fresh session, then act as a second owner. They need
** "scopes" and such a tier, and skip without them. Over HTTP with a token
** the owner is the principal, so a check playing two owners skips there
** (conf_call). Private records are out of reach of the runner's clean-up,
** so each check forgets what it wrote, as its owner, before it ends.
*/
#include <string.h>

#include "suite.h"

/* What both checks set up: owner a's record in session s of a private tier. */
typedef struct scoped_session {
	const char *marker, *a, *b, *session, *tier;
	json_t *ids;
} scoped_session;

/*
** The first tier that is shared: false; for close, also of kind working
** with a spill_to, since that is the tier close empties. NULL after a skip.
*/
static const char *private_tier(conf_ctx *cx, int for_close)
{
	if (!conf_has_capability(cx, "scopes")) {
		conf_skip(cx, "needs \"scopes\" for an owner to be scoped by");
		return NULL;
	}
	const json_t *tiers = conf_tiers(cx);
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const json_t *t = json_array_get(tiers, i);
		const char *kind = conf_tier_str(t, "kind");
		if (conf_tier_flag(t, "shared") != 0)
			continue;
		if (for_close && (!kind || strcmp(kind, "working") != 0 ||
				  !conf_tier(cx, conf_tier_str(t, "spill_to"))))
			continue;
		int room = conf_tier_room(cx, t, 1);
		if (room < 0)
			return NULL;
		if (room)
			return conf_tier_str(t, "name");
	}
	conf_skip(cx, "describe reports no tier with shared: false%s and room for a record",
		  for_close ? ", kind working and a spill_to" : "");
	return NULL;
}

/* Writes owner a's record. Returns 1, or 0 after a verdict. */
static int set_up(conf_ctx *cx, scoped_session *s, int for_close)
{
	memset(s, 0, sizeof *s);
	if (!(s->tier = private_tier(cx, for_close)) || !conf_need_writes(cx))
		return 0;
	s->marker = conf_marker(cx);
	s->a = conf_str(cx, "cfa-%s", s->marker);
	s->b = conf_str(cx, "cfb-%s", s->marker);
	s->session = conf_str(cx, "cfs-%s", s->marker);
	json_t *rec = conf_record(cx, conf_str(cx, "%s private session record", s->marker),
				  s->marker);
	json_object_set_new(rec, "owner", json_string(s->a));
	json_object_set_new(rec, "session", json_string(s->session));
	json_object_set_new(rec, "tier", json_string(s->tier));
	s->ids = conf_remember(cx, json_pack("[o]", rec));
	return s->ids != NULL;
}

/* Forgets owner a's record; no verdict of its own (the answer is kept, as
** every helper's is, and released when the check ends). */
static void tidy(conf_ctx *cx, const scoped_session *s)
{
	if (s->ids)
		conf_call(cx, "memory/forget", json_pack("{s:O,s:s}", "ids", s->ids, "owner", s->a));
}

/* The entry of session in owner's session/list, or NULL; *ok is 0 after a
** verdict. */
static const json_t *listed(conf_ctx *cx, const char *owner, const char *session, int *ok)
{
	*ok = 0;
	json_t *r = conf_result(cx, "memory/session/list", json_pack("{s:s}", "owner", owner));
	if (!r)
		return NULL;
	json_t *list = json_object_get(r, "sessions");
	if (!json_is_array(list)) {
		conf_fail(cx, "session/list as owner %s returned %s, expected {\"sessions\": [...]}",
			  owner, conf_show(cx, r));
		return NULL;
	}
	*ok = 1;
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e) {
		const char *name = conf_str_of(e, "session");
		if (name && strcmp(name, session) == 0)
			return e;
	}
	return NULL;
}

static void check_list_owner(conf_ctx *cx, const void *arg)
{
	(void)arg;
	scoped_session s;
	if (!set_up(cx, &s, 0))
		return;
	int ok;
	const json_t *other = listed(cx, s.b, s.session, &ok);
	const json_t *own = ok ? listed(cx, s.a, s.session, &ok) : NULL;
	if (!ok) {
		/* a verdict was given */
	} else if (other) {
		conf_fail(cx, "session/list as owner %s lists %s, a session whose only record "
			  "owner %s wrote into \"%s\" (shared: false)",
			  s.b, conf_show(cx, other), s.a, s.tier);
	} else if (!own) {
		conf_fail(cx, "session/list as owner %s does not list \"%s\", where it wrote a record",
			  s.a, s.session);
	} else if (json_integer_value(json_object_get(own, "records")) != 1 ||
		   !json_is_integer(json_object_get(own, "records"))) {
		conf_fail(cx, "session/list as owner %s lists %s, expected records 1", s.a,
			  conf_show(cx, own));
	} else {
		conf_pass(cx);
	}
	tidy(cx, &s);
}

/* The tier owner a's record is in, or NULL after failing. */
static const char *tier_now(conf_ctx *cx, const scoped_session *s)
{
	json_t *r = conf_result(cx, "memory/timeline",
				json_pack("{s:{s:s},s:s}", "where", "cfm", s->marker, "owner", s->a));
	json_t *recs = json_object_get(r, "records");
	if (!r)
		return NULL;
	if (json_array_size(recs) != 1 || !conf_str_of(json_array_get(recs, 0), "tier")) {
		conf_fail(cx, "timeline as owner %s returned %s, expected its one record with a "
			  "tier", s->a, conf_show(cx, recs));
		return NULL;
	}
	return conf_str_of(json_array_get(recs, 0), "tier");
}

static void check_close_owner(conf_ctx *cx, const void *arg)
{
	(void)arg;
	scoped_session s;
	if (!set_up(cx, &s, 1))
		return;
	json_t *r = conf_result(cx, "memory/session/close",
				json_pack("{s:s,s:s}", "session", s.session, "owner", s.b));
	const char *at = r ? tier_now(cx, &s) : NULL;
	if (!at) {
		/* a verdict was given */
	} else if (strcmp(at, s.tier) != 0) {
		conf_fail(cx, "session/close as owner %s moved owner %s's record of \"%s\" from "
			  "\"%s\" (shared: false) to \"%s\"", s.b, s.a, s.session, s.tier, at);
	} else if (json_integer_value(json_object_get(r, "flushed")) != 0) {
		conf_fail(cx, "session/close as owner %s flushed %s of a session it has no "
			  "record of", s.b, conf_show(cx, json_object_get(r, "flushed")));
	} else {
		/* The owner's own close does move it: the owner was honoured,
		** not merely everything ignored. */
		r = conf_result(cx, "memory/session/close",
				json_pack("{s:s,s:s}", "session", s.session, "owner", s.a));
		at = r ? tier_now(cx, &s) : NULL;
		if (at && strcmp(at, s.tier) == 0)
			conf_fail(cx, "session/close as owner %s left its own record in \"%s\"",
				  s.a, s.tier);
		else if (at)
			conf_pass(cx);
	}
	tidy(cx, &s);
}

static const conf_check checks[] = {
	{"session/list with owner lists only the sessions that owner can replay",
	 check_list_owner, NULL},
	{"close with owner leaves another owner's private session in place", check_close_owner,
	 NULL},
};

const conf_group conf_group_sessions_owner = {"sessions", "sessions", checks, CONF_COUNT(checks),
					      0};
