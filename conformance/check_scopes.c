/*
** check_scopes.c — checks of the scopes capability (spec §3.1, §4.2,
** §6; DECISIONS 004): the owner field, remember's default owner, and what
** each owner sees.
**
** Visibility follows the layout describe reports: a tier marked shared:
** false is private to the owner who wrote there (a transcript), a tier
** marked shared: true is pooled across owners (what a team knows) —
** implementing-a2m §7, "private transcripts, pooled knowledge". Tiers that
** do not say are not used. Over stdio the client's owner is taken at face
** value (§6), which is what lets one client play two owners here.
**
** Owners are fresh words per check, so what another owner wrote earlier
** cannot leak into a count or a result.
*/
#include <string.h>

#include "suite.h"

/* Spec §7: the caller may not act on that owner's records. */
enum { SCOPE_DENIED = -32005 };

/*
** The owners the running check has used. The runner's clean-up reads and
** forgets without an owner, which cannot reach records private to one, so
** each check here forgets what its owners wrote when it ends (tidy).
*/
#define MAX_OWNERS 8
static const char *owners_used[MAX_OWNERS];
static size_t n_owners_used;

static const char *fresh_owner(conf_ctx *cx)
{
	const char *o = conf_str(cx, "cfo-%s", conf_marker(cx));
	if (n_owners_used < MAX_OWNERS)
		owners_used[n_owners_used++] = o;
	return o;
}

/* A check of this file and its arg, run by tidy. */
typedef struct owned_check {
	conf_check_fn run;
	const void *arg;
} owned_check;

/* Runs the check, then forgets, as each owner it used, this run's records.
** After the verdict, so a failure here changes nothing. */
static void tidy(conf_ctx *cx, const void *arg)
{
	const owned_check *c = arg;
	n_owners_used = 0;
	c->run(cx, c->arg);
	for (size_t i = 0; i < n_owners_used; i++)
		conf_call(cx, "memory/forget",
			  json_pack("{s:{s:s},s:s}", "where", "cfrun", conf_run_token(cx), "owner",
				    owners_used[i]));
	n_owners_used = 0;
}

/* The marker's records as owner sees them, by recall or timeline. */
static json_t *seen_by(conf_ctx *cx, const char *method, const char *owner, const char *m)
{
	json_t *params = strcmp(method, "memory/recall") == 0
				 ? json_pack("{s:s,s:i}", "query", m, "limit", 50)
				 : json_pack("{s:{s:s},s:i}", "where", "cfm", m, "limit", 50);
	if (owner)
		json_object_set_new(params, "owner", json_string(owner));
	return conf_read(cx, method, params, m);
}

/* Writes n records as owner (a record field) into tier (NULL: the home
** tier, conf_tier_home). */
static json_t *write_as(conf_ctx *cx, const char *m, size_t n, const char *owner,
			const char *tier)
{
	json_t *fields = json_deep_copy(conf_tier_fields(cx, tier));
	json_object_set_new(fields, "owner", json_string(owner));
	return conf_write_n(cx, m, n, conf_keep(cx, fields));
}

/*
** A tier whose shared flag is want: one with room for n records if there is
** one, else the first (a write there may then push something out); NULL
** after a verdict when no tier says.
*/
static const json_t *tier_shared(conf_ctx *cx, int want, size_t n)
{
	const json_t *tiers = conf_tiers(cx), *first = NULL;
	if (!tiers) {
		conf_skip(cx, "without \"tiers\" the server describes no shared or private tier");
		return NULL;
	}
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const json_t *t = json_array_get(tiers, i);
		if (conf_tier_flag(t, "shared") != want)
			continue;
		int room = conf_tier_room(cx, t, n);
		if (room < 0)
			return NULL;
		if (room)
			return t;
		if (!first)
			first = t;
	}
	if (!first)
		conf_skip(cx, "no tier is described shared: %s", want ? "true" : "false");
	return first;
}

/*
** How many of the marker's records, as owner sees them, are in tier. An
** owner always sees what it wrote, wherever it went, so seeing none of it
** fails — unless may_drop (conf_tier_can_drop before the write) says a
** full stack may have deleted it. Seeing it only elsewhere means a full
** tier pushed it straight out: 0 and a skip (placement itself is judged
** by the tiers group). -1 after failing.
*/
static int64_t landed(conf_ctx *cx, const char *m, const char *owner, const char *tier,
		      int may_drop)
{
	json_t *mine = seen_by(cx, "memory/timeline", owner, m);
	if (!mine)
		return -1;
	if (json_array_size(mine) == 0) {
		if (may_drop) {
			conf_skip(cx, "tier \"%s\" and those below it are full: what was written "
				  "there was dropped at once", tier);
			return 0;
		}
		conf_fail(cx, "timeline as owner \"%s\" returns none of the records it just wrote "
			  "into \"%s\"", owner, tier);
		return -1;
	}
	int64_t n = 0;
	size_t i;
	json_t *rec;
	json_array_foreach(mine, i, rec) {
		const char *at = conf_str_of(rec, "tier");
		n += at && strcmp(at, tier) == 0;
	}
	if (n == 0)
		conf_skip(cx, "tier \"%s\" is full: what was written there moved on at once",
			  tier);
	return n;
}

/* Writes n records as owner into tier and returns how many stayed there
** (landed); -1 after failing. */
static int64_t write_landed(conf_ctx *cx, const char *m, size_t n, const char *owner,
			    const char *tier)
{
	int may_drop = conf_tier_can_drop(cx, tier, n);
	if (may_drop < 0 || !write_as(cx, m, n, owner, tier))
		return -1;
	return landed(cx, m, owner, tier, may_drop);
}

/* ---- the owner field (spec §3.1, §4.2) ---- */

static void check_owner_round_trip(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx), *a = fresh_owner(cx);
	json_t *mine = write_as(cx, m, 1, a, NULL) ? seen_by(cx, "memory/timeline", a, m) : NULL;
	if (!mine)
		return;
	if (json_array_size(mine) != 1) {
		conf_fail(cx, "owner \"%s\" sees %zu of the one record it wrote", a,
			  json_array_size(mine));
		return;
	}
	const char *got = conf_str_of(json_array_get(mine, 0), "owner");
	if (!got || strcmp(got, a) != 0)
		conf_fail(cx, "written with owner \"%s\", read back owner %s", a,
			  conf_show(cx, json_object_get(json_array_get(mine, 0), "owner")));
	else
		conf_pass(cx);
}

/*
** remember {owner: A, records: [one without owner, one with owner B]}:
** the first is A's (the default), the second B's (its own wins). The arg
** picks which of the two this check judges.
*/
static void check_owner_default(conf_ctx *cx, const void *arg)
{
	int own_wins = arg != NULL;
	const char *m = conf_marker(cx), *a = fresh_owner(cx), *b = fresh_owner(cx);
	json_t *fields = conf_tier_fields(cx, NULL);
	json_t *plain = conf_record(cx, conf_str(cx, "%s takes the default owner", m), m);
	json_t *own = conf_record(cx, conf_str(cx, "%s names its own owner", m), m);
	json_object_update(plain, fields);
	json_object_update(own, fields);
	json_object_set_new(own, "owner", json_string(b));
	json_t *r = conf_result(cx, "memory/remember",
				json_pack("{s:s,s:[o,o]}", "owner", a, "records", plain, own));
	if (!r)
		return;
	const char *who = own_wins ? b : a;
	const char *text = own_wins ? "names its own owner" : "takes the default owner";
	json_t *mine = seen_by(cx, "memory/timeline", who, m);
	json_t *rec = mine ? conf_by_content(mine, text) : NULL;
	if (!mine)
		return;
	if (!rec) {
		conf_fail(cx, "owner \"%s\" does not see the record that should be its own", who);
		return;
	}
	const char *got = conf_str_of(rec, "owner");
	if (!got || strcmp(got, who) != 0)
		conf_fail(cx, "the record that %s has owner %s, expected \"%s\"", text,
			  conf_show(cx, json_object_get(rec, "owner")), who);
	else
		conf_pass(cx);
}

/* ---- visibility (spec §6; implementing-a2m §7) ---- */

/* Writes one record as A into a private tier; *a gets A. NULL after a verdict. */
static const char *write_private(conf_ctx *cx, const char **a, const char **tier)
{
	const json_t *t = tier_shared(cx, 0, 1);
	if (!t)
		return NULL;
	const char *m = conf_marker(cx);
	*a = fresh_owner(cx);
	*tier = conf_tier_str(t, "name");
	return write_landed(cx, m, 1, *a, *tier) > 0 ? m : NULL;
}

static void check_private_hidden(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *a, *tier;
	const char *m = write_private(cx, &a, &tier);
	if (!m)
		return;
	const char *b = fresh_owner(cx);
	static const char *const methods[] = {"memory/recall", "memory/timeline"};
	for (size_t i = 0; i < CONF_COUNT(methods); i++) {
		json_t *seen = seen_by(cx, methods[i], b, m);
		if (!seen)
			return;
		if (json_array_size(seen) != 0) {
			conf_fail(cx,
				  "%s as owner \"%s\" returned %s, written by \"%s\" in private "
				  "tier \"%s\"",
				  methods[i], b, conf_show(cx, json_array_get(seen, 0)), a, tier);
			return;
		}
	}
	conf_pass(cx);
}

static void check_private_visible_to_owner(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *a, *tier;
	const char *m = write_private(cx, &a, &tier);
	if (!m)
		return;
	static const char *const methods[] = {"memory/recall", "memory/timeline"};
	for (size_t i = 0; i < CONF_COUNT(methods); i++) {
		json_t *seen = seen_by(cx, methods[i], a, m);
		if (!seen)
			return;
		if (json_array_size(seen) != 1) {
			conf_fail(cx,
				  "%s as owner \"%s\" returned %zu of the one record it wrote in "
				  "private tier \"%s\"",
				  methods[i], a, json_array_size(seen), tier);
			return;
		}
	}
	conf_pass(cx);
}

static void check_shared_visible(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *t = tier_shared(cx, 1, 1);
	if (!t)
		return;
	const char *m = conf_marker(cx), *a = fresh_owner(cx), *b = fresh_owner(cx);
	const char *tier = conf_tier_str(t, "name");
	if (write_landed(cx, m, 1, a, tier) <= 0)
		return;
	static const char *const methods[] = {"memory/recall", "memory/timeline"};
	const char *owners[] = {a, b};
	for (size_t o = 0; o < 2; o++) {
		for (size_t i = 0; i < CONF_COUNT(methods); i++) {
			json_t *seen = seen_by(cx, methods[i], owners[o], m);
			if (!seen)
				return;
			if (json_array_size(seen) != 1) {
				conf_fail(cx, "%s as owner \"%s\" returned %zu records; \"%s\" "
					  "wrote one in shared tier \"%s\"", methods[i], owners[o],
					  json_array_size(seen), a, tier);
				return;
			}
		}
	}
	conf_pass(cx);
}

/*
** describe {owner} counts what that owner sees (spec §4.1 "scope the
** counts"). Records A writes into a private tier must raise A's count of
** it by as many as stayed there, relative to B's — whatever else either
** counts, and whatever a full tier pushed out meanwhile, which both see
** alike.
*/
static void check_describe_scoped(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *t = tier_shared(cx, 0, 2);
	if (!t)
		return;
	const char *m = conf_marker(cx), *a = fresh_owner(cx), *b = fresh_owner(cx);
	const char *tier = conf_tier_str(t, "name");
	json_t *a0 = conf_tier_counts(cx, a), *b0 = a0 ? conf_tier_counts(cx, b) : NULL;
	int64_t stayed = b0 ? write_landed(cx, m, 2, a, tier) : -1;
	if (stayed <= 0)
		return;
	json_t *a1 = conf_tier_counts(cx, a), *b1 = a1 ? conf_tier_counts(cx, b) : NULL;
	if (!b1)
		return;
	int64_t da = conf_tier_count_in(a1, tier) - conf_tier_count_in(a0, tier);
	int64_t db = conf_tier_count_in(b1, tier) - conf_tier_count_in(b0, tier);
	if (da - db != stayed)
		conf_fail(cx, "owner \"%s\" put %lld records into private tier \"%s\"; its scoped "
			  "count changed by %lld and owner \"%s\"'s by %lld", a, (long long)stayed,
			  tier, (long long)da, b, (long long)db);
	else
		conf_pass(cx);
}

/*
** A forget scoped to B must not reach A's private record: B cannot recall
** it, so B cannot delete it. Refusing with -32005 SCOPE_DENIED (§7) is the
** other acceptable answer; either way the record stays.
*/
static void check_forget_scoped(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *a, *tier;
	const char *m = write_private(cx, &a, &tier);
	if (!m)
		return;
	const char *b = fresh_owner(cx);
	json_t *resp = conf_call(cx, "memory/forget",
				 json_pack("{s:{s:s},s:s}", "where", "cfm", m, "owner", b));
	int code;
	if (!resp)
		return;
	json_t *r = json_object_get(resp, "result");
	if (r) {
		json_t *n = json_object_get(r, "forgotten");
		if (!json_is_integer(n) || json_integer_value(n) != 0) {
			conf_fail(cx,
				  "forget as owner \"%s\" of a record private to \"%s\" returned "
				  "%s, expected forgotten 0",
				  b, a, conf_show(cx, r));
			return;
		}
	} else if (!conf_error_code(resp, &code) || code != SCOPE_DENIED) {
		conf_fail(cx, "forget as another owner answered %s, expected forgotten 0 or -32005",
			  conf_show(cx, resp));
		return;
	}
	json_t *left = seen_by(cx, "memory/timeline", a, m);
	if (!left)
		return;
	if (json_array_size(left) != 1)
		conf_fail(cx, "after a forget as owner \"%s\", owner \"%s\" has %zu of its one "
			  "private record", b, a, json_array_size(left));
	else
		conf_pass(cx);
}

/* Spec §3.6, §4.9: one key, two owners, two records; fetch reads one's own. */
static void check_fetch_per_owner(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_has_capability(cx, "keys")) {
		conf_skip(cx, "the server does not declare \"keys\"");
		return;
	}
	const char *m = conf_marker(cx);
	const char *key = conf_str(cx, "cf/%s/user/city", m);
	const char *owners[] = {fresh_owner(cx), fresh_owner(cx)};
	const char *cities[] = {"lisbon", "osaka"};
	for (size_t i = 0; i < 2; i++) {
		json_t *rec = conf_record(cx, conf_str(cx, "%s lives in %s", m, cities[i]), m);
		json_object_update(rec, conf_tier_fields(cx, NULL));
		json_object_set_new(rec, "owner", json_string(owners[i]));
		json_object_set_new(rec, "key", json_string(key));
		if (!conf_remember(cx, json_pack("[o]", rec)))
			return;
	}
	for (size_t i = 0; i < 2; i++) {
		json_t *r = conf_result(cx, "memory/fetch",
					json_pack("{s:s,s:s}", "key", key, "owner", owners[i]));
		if (!r)
			return;
		const char *content = conf_str_of(json_object_get(r, "record"), "content");
		if (!content || !strstr(content, cities[i])) {
			conf_fail(cx, "fetch of \"%s\" as owner \"%s\" returned %s, expected the "
				  "record saying %s", key, owners[i], conf_show(cx, r), cities[i]);
			return;
		}
	}
	conf_pass(cx);
}

#define OWNED(fn, arg) tidy, &(const owned_check){fn, arg}

static const conf_check scopes_checks[] = {
	{"a record carries the owner it was written with", OWNED(check_owner_round_trip, NULL)},
	{"remember's owner is the default for records without one",
	 OWNED(check_owner_default, NULL)},
	{"a record's own owner wins over remember's", OWNED(check_owner_default, "own")},
	{"a private tier's record is hidden from another owner's recall and timeline",
	 OWNED(check_private_hidden, NULL)},
	{"a private tier's record is seen by its owner's recall and timeline",
	 OWNED(check_private_visible_to_owner, NULL)},
	{"a shared tier's record is seen by every owner's recall and timeline",
	 OWNED(check_shared_visible, NULL)},
	{"describe with owner scopes the tier counts", OWNED(check_describe_scoped, NULL)},
	{"forget as another owner leaves a private record alone", OWNED(check_forget_scoped, NULL)},
	{"fetch reads the key of the owner asking", OWNED(check_fetch_per_owner, NULL)},
};

const conf_group conf_group_scopes = {"scopes", "scopes", scopes_checks,
				      CONF_COUNT(scopes_checks), 0};
