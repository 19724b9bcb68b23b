/*
** check_salience.c — checks of the salience capability (spec §3.1,
** §4.8; DECISIONS 006): the salience, access_count and accessed_at fields,
** memory/reinforce, the access a recall records, and promotion earned by
** being recalled promote_after times.
**
** Fields are read back with timeline, because a recall is itself an access:
** reading with recall would change what is being read.
*/
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "suite.h"

/* The marker's records by timeline, which is not an access; n expected. */
static json_t *read_back(conf_ctx *cx, const char *m, size_t n)
{
	json_t *mine = conf_read(cx, "memory/timeline",
				 json_pack("{s:{s:s},s:I}", "where", "cfm", m, "limit",
					   (json_int_t)(n + 16)),
				 m);
	if (mine && json_array_size(mine) != n) {
		conf_fail(cx, "timeline of the records written: %zu, expected %zu",
			  json_array_size(mine), n);
		return NULL;
	}
	return mine;
}

/* A number field of rec; fails the check and returns NAN when it is not. */
static double number_of(conf_ctx *cx, const json_t *rec, const char *field)
{
	json_t *v = json_object_get(rec, field);
	if (!json_is_number(v)) {
		conf_fail(cx, "record %s has %s %s, expected a number",
			  conf_str_of(rec, "id") ? conf_str_of(rec, "id") : "?", field,
			  v ? conf_show(cx, v) : "(absent)");
		return NAN;
	}
	return json_number_value(v);
}

/* An integer field >= 0 of rec; -1 after failing. */
static int64_t count_of(conf_ctx *cx, const json_t *rec, const char *field)
{
	json_t *v = json_object_get(rec, field);
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		conf_fail(cx, "record %s has %s %s, expected an integer >= 0",
			  conf_str_of(rec, "id") ? conf_str_of(rec, "id") : "?", field,
			  v ? conf_show(cx, v) : "(absent)");
		return -1;
	}
	return json_integer_value(v);
}

/* Writes one record per word, "<marker> <word>", with a salience when
** salience >= 0; in one call. Returns the ids. */
static json_t *write_words(conf_ctx *cx, const char *m, const char *const *words, size_t n,
			   double salience)
{
	json_t *fields = conf_tier_fields(cx, NULL);
	json_t *records = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *rec = conf_record(cx, conf_str(cx, "%s %s", m, words[i]), m);
		json_object_update(rec, fields);
		if (salience >= 0)
			json_object_set_new(rec, "salience", json_real(salience));
		json_array_append_new(records, rec);
	}
	return conf_remember(cx, records);
}

/* The reinforced count of a reinforce; -1 after failing. */
static int64_t reinforce(conf_ctx *cx, json_t *params)
{
	json_t *r = conf_result(cx, "memory/reinforce", params);
	if (!r)
		return -1;
	json_t *n = json_object_get(r, "reinforced");
	if (!json_is_integer(n) || json_integer_value(n) < 0) {
		conf_fail(cx, "reinforce returned %s, expected {\"reinforced\": integer}",
			  conf_show(cx, r));
		return -1;
	}
	return json_integer_value(n);
}

/* Recalls query, which must return the record id; 1 if it did. */
static int recall_returns(conf_ctx *cx, const char *query, const char *m, const char *id)
{
	json_t *got = conf_read(cx, "memory/recall", json_pack("{s:s}", "query", query), m);
	if (!got)
		return 0;
	size_t i;
	json_t *rec;
	json_array_foreach(got, i, rec) {
		if (strcmp(conf_str_of(rec, "id") ? conf_str_of(rec, "id") : "", id) == 0)
			return 1;
	}
	conf_fail(cx, "recall for \"%s\" did not return the record %s containing it", query, id);
	return 0;
}

/* ---- fields ---- */

static void check_fields_typed(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *word = "fresh";
	json_t *mine = write_words(cx, m, &word, 1, -1) ? read_back(cx, m, 1) : NULL;
	if (!mine)
		return;
	json_t *rec = json_array_get(mine, 0);
	int64_t n;
	if (isnan(number_of(cx, rec, "salience")) || (n = count_of(cx, rec, "access_count")) < 0)
		return;
	if (n != 0)
		conf_fail(cx, "a record never recalled has access_count %lld, expected 0",
			  (long long)n);
	else
		conf_pass(cx);
}

static void check_salience_stored(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *word = "weighed";
	json_t *mine = write_words(cx, m, &word, 1, 0.25) ? read_back(cx, m, 1) : NULL;
	double s = mine ? number_of(cx, json_array_get(mine, 0), "salience") : NAN;
	if (isnan(s))
		return;
	if (s != 0.25)
		conf_fail(cx, "written with salience 0.25, read back %g", s);
	else
		conf_pass(cx);
}

/* ---- reinforce (spec §4.8) ---- */

static void check_reinforce_counts(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *words[] = {"useful", "helpful"};
	json_t *ids = write_words(cx, m, words, 2, -1);
	if (!ids)
		return;
	const char *ghost = conf_str(cx, "no-such-id-%s", m);
	int64_t n = reinforce(cx, json_pack("{s:[O,s,O]}", "ids", json_array_get(ids, 0), ghost,
					    json_array_get(ids, 1)));
	if (n < 0)
		return;
	if (n != 2) {
		conf_fail(cx, "reinforce of two records and one unknown id reported %lld, "
			  "expected 2", (long long)n);
		return;
	}
	n = reinforce(cx, json_pack("{s:[s]}", "ids", ghost));
	if (n == 0)
		conf_pass(cx);
	else if (n > 0)
		conf_fail(cx, "reinforce of an unknown id reported %lld, expected 0", (long long)n);
}

/* Reinforces one record; with amount when it is >= 0. Returns the salience
** before and after through *was and *now; 0 after failing. */
static int reinforced(conf_ctx *cx, double amount, double *was, double *now)
{
	const char *m = conf_marker(cx);
	const char *word = "proven";
	json_t *ids = write_words(cx, m, &word, 1, 0.25);
	json_t *before = ids ? read_back(cx, m, 1) : NULL;
	if (!before || isnan(*was = number_of(cx, json_array_get(before, 0), "salience")))
		return 0;
	json_t *params = json_pack("{s:O}", "ids", ids);
	if (amount >= 0)
		json_object_set_new(params, "amount", json_real(amount));
	int64_t n = reinforce(cx, params);
	if (n < 0)
		return 0;
	if (n != 1) {
		conf_fail(cx, "reinforce of one record reported %lld", (long long)n);
		return 0;
	}
	json_t *after = read_back(cx, m, 1);
	return after && !isnan(*now = number_of(cx, json_array_get(after, 0), "salience"));
}

static void check_reinforce_amount(conf_ctx *cx, const void *arg)
{
	(void)arg;
	double was, now;
	if (!reinforced(cx, 0.5, &was, &now))
		return;
	if (fabs(now - (was + 0.5)) > 1e-9)
		conf_fail(cx, "salience %g reinforced by 0.5 became %g, expected %g", was, now,
			  was + 0.5);
	else
		conf_pass(cx);
}

static void check_reinforce_default(conf_ctx *cx, const void *arg)
{
	(void)arg;
	double was, now;
	if (!reinforced(cx, -1, &was, &now))
		return;
	if (!(now > was))
		conf_fail(cx, "salience %g reinforced without an amount became %g; the default "
			  "must raise it", was, now);
	else
		conf_pass(cx);
}

static void check_reinforce_invalid(conf_ctx *cx, const void *arg)
{
	/* A read-only server refuses reinforce outright (-32004, §2.1). */
	if (!conf_need_writes(cx))
		return;
	json_t *params = conf_json(cx, arg);
	if (params && conf_expect_error(cx, "memory/reinforce", json_incref(params),
					CONF_INVALID_PARAMS, 0))
		conf_pass(cx);
}

/* ---- access (spec §3.1: access_count, accessed_at) ---- */

static void check_recall_counts_access(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *words[] = {conf_marker(cx), conf_marker(cx)};
	json_t *ids = write_words(cx, m, words, 2, -1);
	if (!ids)
		return;
	const char *hit = json_string_value(json_array_get(ids, 0));
	for (int64_t round = 1; round <= 2; round++) {
		if (!recall_returns(cx, words[0], m, hit))
			return;
		json_t *mine = read_back(cx, m, 2);
		if (!mine)
			return;
		size_t i;
		json_t *rec;
		json_array_foreach(mine, i, rec) {
			int is_hit = strcmp(conf_str_of(rec, "id") ? conf_str_of(rec, "id") : "", hit) == 0;
			int64_t want = is_hit ? round : 0;
			int64_t n = count_of(cx, rec, "access_count");
			if (n < 0)
				return;
			if (n != want) {
				conf_fail(cx,
					  "after %lld recall(s) returning only the first record, "
					  "the %s has access_count %lld, expected %lld",
					  (long long)round,
					  is_hit ? "first" : "second (never returned)",
					  (long long)n, (long long)want);
				return;
			}
		}
	}
	conf_pass(cx);
}

static void check_recall_sets_accessed_at(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *word = conf_marker(cx);
	json_t *ids = write_words(cx, m, &word, 1, -1);
	if (!ids)
		return;
	conf_tick();
	if (!recall_returns(cx, word, m, json_string_value(json_array_get(ids, 0))))
		return;
	json_t *mine = read_back(cx, m, 1);
	if (!mine)
		return;
	json_t *rec = json_array_get(mine, 0);
	const char *at = conf_str_of(rec, "accessed_at");
	int64_t accessed, created;
	if (!conf_is_wire_timestamp(at) || conf_parse_time(at, &accessed) != 0) {
		conf_fail(cx, "after a recall, accessed_at is %s, expected an RFC 3339 timestamp",
			  conf_show(cx, json_object_get(rec, "accessed_at")));
		return;
	}
	if (conf_parse_time(conf_str_of(rec, "created_at") ? conf_str_of(rec, "created_at") : "",
			    &created) != 0) {
		conf_fail(cx, "created_at is %s",
			  conf_show(cx, json_object_get(rec, "created_at")));
		return;
	}
	if (accessed < created)
		conf_fail(cx, "accessed_at %s is before created_at %s", at,
			  conf_str_of(rec, "created_at"));
	else if (accessed > conf_now_ms() + 60000)
		conf_fail(cx, "accessed_at %s is in the future", at);
	else
		conf_pass(cx);
}

/* A timeline replays; it does not recall (spec §3.1: "how often it has
** been recalled"). Counting replays would promote a transcript for being
** read every turn. */
static void check_timeline_not_access(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *word = "replayed";
	if (!write_words(cx, m, &word, 1, -1))
		return;
	for (int i = 0; i < 3; i++) {
		if (!read_back(cx, m, 1))
			return;
	}
	json_t *mine = read_back(cx, m, 1);
	int64_t n = mine ? count_of(cx, json_array_get(mine, 0), "access_count") : -1;
	if (n == 0)
		conf_pass(cx);
	else if (n > 0)
		conf_fail(cx, "after four timelines and no recall, access_count is %lld",
			  (long long)n);
}

/* ---- promotion earned by recall (DECISIONS 006) ---- */

/* A tier with a described promote_to and promote_after >= 1 that has room
** for one record; NULL (and a verdict) when there is none. */
static const json_t *promoting_tier(conf_ctx *cx)
{
	const json_t *tiers = conf_tiers(cx);
	if (!tiers) {
		conf_skip(cx, "the server does not declare \"tiers\"");
		return NULL;
	}
	int some = 0;
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const json_t *t = json_array_get(tiers, i);
		json_t *after = json_object_get(t, "promote_after");
		if (!conf_tier(cx, conf_tier_str(t, "promote_to")) || !json_is_integer(after) ||
		    json_integer_value(after) < 1 || json_integer_value(after) > 100)
			continue;
		some = 1;
		int room = conf_tier_room(cx, t, 1);
		if (room < 0)
			return NULL;
		if (room)
			return t;
	}
	conf_skip(cx, some ? "no tier with promote_to and promote_after has room for a record"
			   : "no tier has both promote_to and promote_after");
	return NULL;
}

/* The tier of the marker's one record; NULL after failing. */
static const char *tier_now(conf_ctx *cx, const char *m)
{
	json_t *mine = read_back(cx, m, 1);
	const char *t = mine ? conf_str_of(json_array_get(mine, 0), "tier") : NULL;
	if (mine && !t)
		conf_fail(cx, "the record carries tier %s, expected a string",
			  conf_show(cx, json_object_get(json_array_get(mine, 0), "tier")));
	return t;
}

/*
** When the move happens is not fixed: at the recall that earns it, or at
** the next consolidation, which "moves what has earned durability" (spec
** §4.7) and runs promotion first (DECISIONS 006). Both pass; not moving by
** then fails, and so does moving early.
*/
static void check_promote_after(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *t = promoting_tier(cx);
	if (!t)
		return;
	const char *from = conf_tier_str(t, "name"), *to = conf_tier_str(t, "promote_to");
	int64_t after = json_integer_value(json_object_get(t, "promote_after"));
	const char *m = conf_marker(cx);
	json_t *ids = conf_write_n(cx, m, 1, conf_tier_fields(cx, from));
	if (!ids)
		return;
	const char *id = json_string_value(json_array_get(ids, 0));
	for (int64_t i = 1; i <= after; i++) {
		if (!recall_returns(cx, m, m, id))
			return;
		const char *at = tier_now(cx, m);
		if (!at)
			return;
		if (i < after && strcmp(at, from) != 0) {
			conf_fail(cx, "after %lld of %lld recalls the record moved from \"%s\" to "
				  "\"%s\"", (long long)i, (long long)after, from, at);
			return;
		}
		if (i == after && strcmp(at, to) == 0) {
			conf_pass(cx);
			return;
		}
	}
	json_t *r = conf_result(cx, "memory/consolidate", NULL);
	const char *at = r ? tier_now(cx, m) : NULL;
	if (!at)
		return;
	if (strcmp(at, to) != 0)
		conf_fail(cx, "recalled promote_after = %lld times and consolidated, the record is "
			  "in \"%s\", expected promote_to \"%s\"", (long long)after, at, to);
	else
		conf_pass(cx);
}

static const conf_check salience_checks[] = {
	{"records carry a number salience and access_count 0 before any recall",
	 check_fields_typed, NULL},
	{"a salience given on write is stored", check_salience_stored, NULL},
	{"reinforce counts existing ids only", check_reinforce_counts, NULL},
	{"reinforce raises salience by amount", check_reinforce_amount, NULL},
	{"reinforce without amount raises salience", check_reinforce_default, NULL},
	{"reinforce without ids is -32602", check_reinforce_invalid, "{\"amount\":1}"},
	{"reinforce with ids not an array is -32602", check_reinforce_invalid,
	 "{\"ids\":\"abc\"}"},
	{"reinforce with an amount that is not a number is -32602", check_reinforce_invalid,
	 "{\"ids\":[\"x\"],\"amount\":\"much\"}"},
	{"recall adds one to access_count of what it returns, and only that",
	 check_recall_counts_access, NULL},
	{"recall sets accessed_at, RFC 3339, not before created_at", check_recall_sets_accessed_at,
	 NULL},
	{"timeline is not an access", check_timeline_not_access, NULL},
	{"a record recalled promote_after times moves to promote_to", check_promote_after, NULL},
};

const conf_group conf_group_salience = {"salience", "salience", salience_checks,
					CONF_COUNT(salience_checks), 0};
