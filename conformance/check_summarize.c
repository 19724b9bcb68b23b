/*
** check_summarize.c — checks of the summarize capability (spec
** §4.15): a selection is rewritten into summary records, which are stored
** as ordinary records while the sources stay where they were.
**
** How a summary is produced is not specified, so no check looks at what it
** says; they check what it is (a record in wire form, stored, addressable)
** and what the call reports (how many sources were read, how many
** summaries written). A server may decline to summarize — written 0 — and
** a check that needs a summary then skips rather than fails.
**
** Summaries carry no marker of ours, so the run's clean-up would not find
** them: every check here runs inside run_cleaned(), which forgets the
** summaries the check made, whatever its verdict.
*/
#include <ctype.h>
#include <string.h>

#include "suite.h"

/* ---- running a check with its summaries removed afterwards ---- */

typedef void (*body_fn)(conf_ctx *cx, json_t *made);

typedef struct cleaned {
	body_fn body;
} cleaned;

/*
** Runs the body with an array it appends each summary id to (summarize()
** does), then forgets those. The forget is a plain call: tidying up is not
** what the check is about, and it must not change the verdict.
*/
static void run_cleaned(conf_ctx *cx, const void *arg)
{
	const cleaned *c = arg;
	json_t *made = conf_keep(cx, json_array());
	if (!made)
		return;
	c->body(cx, made);
	if (json_array_size(made) > 0 && a2m_client_alive(conf_client(cx)))
		conf_call(cx, "memory/forget", json_pack("{s:O}", "ids", made));
}

/*
** memory/summarize with params (stolen). Returns the result after checking
** its shape — records in wire form, one per write; read and written
** integers — and noting the summaries in made. NULL after failing.
*/
static json_t *summarize(conf_ctx *cx, json_t *made, json_t *params)
{
	json_t *r = conf_result(cx, "memory/summarize", params);
	if (!r)
		return NULL;
	json_t *records = json_object_get(r, "records");
	json_t *read = json_object_get(r, "read"), *written = json_object_get(r, "written");
	if (!json_is_array(records) || !json_is_integer(read) || !json_is_integer(written) ||
	    json_integer_value(read) < 0) {
		conf_fail(cx, "summarize answered %s, expected records, read and written "
			  "(spec §4.15)", conf_show(cx, r));
		return NULL;
	}
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		if (conf_str_of(rec, "id"))
			json_array_append(made, json_object_get(rec, "id"));
	}
	if ((size_t)json_integer_value(written) != json_array_size(records)) {
		conf_fail(cx, "summarize reported written %lld with %zu record(s)",
			  (long long)json_integer_value(written), json_array_size(records));
		return NULL;
	}
	json_array_foreach(records, i, rec) {
		if (!conf_str_of(rec, "id") || !*conf_str_of(rec, "id") ||
		    !json_is_string(json_object_get(rec, "content")) ||
		    !conf_is_wire_timestamp(conf_str_of(rec, "created_at"))) {
			conf_fail(cx, "summary record %s is not in wire form: id, content and "
				  "created_at are required (spec §3.1)", conf_show(cx, rec));
			return NULL;
		}
	}
	return r;
}

/*
** The one summary a call wrote, or NULL: after failing when it wrote more,
** after skipping when the server declined (spec §4.15 allows it).
*/
static json_t *the_summary(conf_ctx *cx, const json_t *r)
{
	json_t *records = json_object_get(r, "records");
	if (json_array_size(records) == 0) {
		conf_skip(cx, "the server declined to summarize (written 0, which spec §4.15 "
			  "allows)");
		return NULL;
	}
	if (json_array_size(records) != 1) {
		conf_fail(cx, "one selection gave %zu summaries: %s", json_array_size(records),
			  conf_show(cx, records));
		return NULL;
	}
	return json_array_get(records, 0);
}

static int read_is(conf_ctx *cx, const char *what, const json_t *r, json_int_t want)
{
	json_int_t got = json_integer_value(json_object_get(r, "read"));
	if (got == want)
		return 1;
	conf_fail(cx, "%s: read %lld, expected %lld", what, (long long)got, (long long)want);
	return 0;
}

/* Sources worth summarizing, tagged m, in tier unless it is NULL; the ids
** (written in one batch). */
static json_t *write_sources_in(conf_ctx *cx, const char *m, const char *tier)
{
	static const char *const facts[] = {
		"The staging cluster runs in eu-west-1 and is rebuilt every night.",
		"Deploys to production happen on Tuesdays at noon, never on Fridays.",
		"The on-call rotation changes hands every Monday at nine.",
	};
	json_t *batch = json_array();
	for (size_t i = 0; i < CONF_COUNT(facts); i++) {
		json_t *rec = conf_record(cx, conf_str(cx, "%s %s", m, facts[i]), m);
		if (tier)
			json_object_set_new(rec, "tier", json_string(tier));
		json_array_append_new(batch, rec);
	}
	return conf_remember(cx, batch);
}

static json_t *write_sources(conf_ctx *cx, const char *m)
{
	return write_sources_in(cx, m, NULL);
}

/* The stored record of id, read back with timeline where {"id": id}. */
static json_t *stored(conf_ctx *cx, const char *id)
{
	json_t *r = conf_result(cx, "memory/timeline", json_pack("{s:{s:s}}", "where", "id", id));
	json_t *records = json_object_get(r, "records");
	if (r && !json_is_array(records)) {
		conf_fail(cx, "timeline returned no records array: %s", conf_show(cx, r));
		return NULL;
	}
	return r ? conf_keep(cx, json_incref(records)) : NULL;
}

/* Whether the sources (ids, tagged m) are all still there. */
static int sources_intact(conf_ctx *cx, const char *m, const json_t *ids)
{
	json_t *left = conf_timeline_of(cx, m);
	if (!left)
		return 0;
	for (size_t i = 0; i < json_array_size(ids); i++) {
		const char *id = json_string_value(json_array_get(ids, i));
		if (!conf_by_id(left, id)) {
			conf_fail(cx, "source %s is gone after summarize (spec §4.15: MUST NOT "
				  "delete the sources)", id);
			return 0;
		}
	}
	return 1;
}

/* The tier a record is in, as stored. */
static const char *tier_of(conf_ctx *cx, const char *id)
{
	json_t *records = stored(cx, id);
	return conf_str_of(json_array_get(records, 0), "tier");
}

/* ---- checks ---- */

static void check_describe(conf_ctx *cx, const void *arg)
{
	(void)arg;
	json_t *s = json_object_get(conf_describe(cx), "summarize");
	json_t *model = json_object_get(s, "model");
	if (!json_is_object(s) || !model || (!json_is_string(model) && !json_is_null(model)))
		conf_fail(cx, "describe reports summarize %s, expected an object whose model "
			  "is a string or null (spec §4.15)", conf_show(cx, s));
	else
		conf_pass(cx);
}

/* Whether a describe tier entry reports no capacity (absent, null or 0). */
static int unbounded(const json_t *tier)
{
	json_t *cap = json_object_get(tier, "capacity");
	return !cap || json_is_null(cap) || (json_is_integer(cap) && json_integer_value(cap) == 0);
}

/*
** The first tier describe lists whose name is not avoid, or NULL. With
** roomy, only a tier without a capacity: a summary placed in a full tier
** may spill on arrival, and the check would blame into for it.
*/
static const char *tier_other_than(conf_ctx *cx, const char *avoid, int roomy)
{
	json_t *tiers = json_object_get(conf_describe(cx), "tiers");
	size_t i;
	json_t *t;
	json_array_foreach(tiers, i, t) {
		const char *name = conf_str_of(t, "name");
		if (name && (!avoid || strcmp(name, avoid) != 0) && (!roomy || unbounded(t)))
			return name;
	}
	return NULL;
}

static void check_no_selector(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	/* A read-only server may answer -32004 first (spec §2.1, §4.15). */
	int alt = conf_read_only(cx) ? CONF_READ_ONLY : 0;
	json_t *cases = conf_keep(cx, json_array());
	json_array_append_new(cases, json_null());
	json_array_append_new(cases, json_object());
	json_array_append_new(cases, json_pack("{s:i}", "limit", 5));
	if (conf_has_capability(cx, "tiers") && tier_other_than(cx, NULL, 0)) {
		json_array_append_new(cases, json_pack("{s:s}", "into", tier_other_than(cx, NULL, 0)));
		json_array_append_new(cases, json_pack("{s:i,s:s}", "limit", 3, "into",
						       tier_other_than(cx, NULL, 0)));
	}
	if (conf_has_capability(cx, "keys"))
		json_array_append_new(cases, json_pack("{s:s}", "key", conf_str(cx, "cf/%s", m)));
	if (conf_has_capability(cx, "scopes"))
		json_array_append_new(cases, json_pack("{s:s}", "owner", conf_str(cx, "cfo-%s", m)));
	size_t i;
	json_t *p;
	json_array_foreach(cases, i, p) {
		json_t *resp = conf_call(cx, "memory/summarize", json_is_null(p) ? NULL
										  : json_incref(p));
		int code;
		if (!resp)
			return;
		if (!conf_error_code(resp, &code) ||
		    (code != CONF_INVALID_PARAMS && (!alt || code != alt))) {
			conf_fail(cx, "summarize with params %s answered %s, expected -32602 "
				  "(spec §4.15: at least one selector)",
				  json_is_null(p) ? "(none)" : conf_show(cx, p), conf_show(cx, resp));
			return;
		}
	}
	conf_pass(cx);
}

static void body_by_ids(conf_ctx *cx, json_t *made)
{
	const char *m = conf_marker(cx);
	json_t *ids = write_sources(cx, m);
	json_t *r = ids ? summarize(cx, made, json_pack("{s:O}", "ids", ids)) : NULL;
	json_t *rec = r ? the_summary(cx, r) : NULL;
	if (!rec || !read_is(cx, "summarize of 3 ids", r, 3) || !sources_intact(cx, m, ids))
		return;
	json_t *back = stored(cx, conf_str_of(rec, "id"));
	if (!back)
		return;
	json_t *got = json_array_get(back, 0);
	if (json_array_size(back) != 1 || !json_equal(json_object_get(got, "content"),
						      json_object_get(rec, "content")))
		conf_fail(cx, "the summary %s is not stored as returned: timeline has %s",
			  conf_show(cx, rec), conf_show(cx, back));
	else if (conf_among(ids, json_object_get(rec, "id")))
		conf_fail(cx, "the summary took the id of a source: %s", conf_show(cx, rec));
	else
		conf_pass(cx);
}

static void body_by_where(conf_ctx *cx, json_t *made)
{
	const char *m = conf_marker(cx);
	json_t *ids = write_sources(cx, m);
	json_t *r = ids ? summarize(cx, made, json_pack("{s:{s:s}}", "where", "cfm", m)) : NULL;
	if (r && read_is(cx, "summarize by where of 3 records", r, 3) &&
	    sources_intact(cx, m, ids) && the_summary(cx, r))
		conf_pass(cx);
}

static void body_by_query(conf_ctx *cx, json_t *made)
{
	const char *m = conf_marker(cx);
	json_t *ids = write_sources(cx, m);
	json_t *found = ids ? conf_find(cx, m) : NULL;
	json_t *r = found ? summarize(cx, made, json_pack("{s:s}", "query", m)) : NULL;
	if (r && read_is(cx, "summarize by the query that recalls 3 records", r,
			 (json_int_t)json_array_size(found)) &&
	    sources_intact(cx, m, ids) && the_summary(cx, r))
		conf_pass(cx);
}

/*
** Summarizes the three sources of a fresh marker with limit, and passes
** when between 1 and at_most of them were read.
*/
static void read_within(conf_ctx *cx, json_t *made, json_int_t limit, json_int_t at_most)
{
	const char *m = conf_marker(cx);
	json_t *ids = write_sources(cx, m);
	json_t *r = ids ? summarize(cx, made, json_pack("{s:{s:s},s:I}", "where", "cfm", m,
							"limit", limit))
			: NULL;
	if (!r)
		return;
	json_int_t read = json_integer_value(json_object_get(r, "read"));
	if (read < 1 || read > at_most)
		conf_fail(cx, "limit %lld over 3 matching records read %lld, expected 1 to %lld",
			  (long long)limit, (long long)read, (long long)at_most);
	else
		conf_pass(cx);
}

static void body_limit(conf_ctx *cx, json_t *made)
{
	read_within(cx, made, 2, 2);
}

/*
** Spec §4.15: the call is synchronous, and a server that could not
** summarize so much in time reduces the limit (it MAY cap it) rather than
** answer later or refuse. A limit far past anything a server reads is
** answered now, with the matching sources read, or fewer.
*/
static void body_huge_limit(conf_ctx *cx, json_t *made)
{
	read_within(cx, made, (json_int_t)1 << 40, 3);
}

static void body_nothing(conf_ctx *cx, json_t *made)
{
	const char *m = conf_marker(cx);
	json_t *cases = conf_keep(cx, json_array());
	json_array_append_new(cases, json_pack("{s:[s]}", "ids", conf_str(cx, "cf-no-such-%s", m)));
	json_array_append_new(cases, json_pack("{s:{s:s}}", "where", "cfm", m));
	json_array_append_new(cases, json_pack("{s:s}", "query", m));
	if (!conf_need_writes(cx))
		return;
	size_t i;
	json_t *p;
	json_array_foreach(cases, i, p) {
		json_t *r = summarize(cx, made, json_incref(p));
		if (!r)
			return;
		if (json_integer_value(json_object_get(r, "written")) != 0 ||
		    json_integer_value(json_object_get(r, "read")) != 0) {
			conf_fail(cx, "summarize %s selects nothing, yet answered %s",
				  conf_show(cx, p), conf_show(cx, r));
			return;
		}
	}
	conf_pass(cx);
}

static void body_ordinary(conf_ctx *cx, json_t *made)
{
	const char *m = conf_marker(cx);
	json_t *ids = write_sources(cx, m);
	json_t *r = ids ? summarize(cx, made, json_pack("{s:O}", "ids", ids)) : NULL;
	json_t *rec = r ? the_summary(cx, r) : NULL;
	if (!rec)
		return;
	const char *sid = conf_str_of(rec, "id");
	json_t *found = conf_result(cx, "memory/recall",
				    json_pack("{s:{s:s},s:i}", "where", "id", sid, "limit", 10));
	if (!found)
		return;
	if (!conf_by_id(json_object_get(found, "records"), sid)) {
		conf_fail(cx, "recall with where {\"id\": the summary's} returned %s",
			  conf_show(cx, found));
		return;
	}
	json_t *f = conf_result(cx, "memory/forget", json_pack("{s:[s]}", "ids", sid));
	if (!f)
		return;
	if (json_integer_value(json_object_get(f, "forgotten")) != 1) {
		conf_fail(cx, "forget of the summary answered %s, expected forgotten 1",
			  conf_show(cx, f));
		return;
	}
	json_t *left = stored(cx, sid);
	if (left && json_array_size(left) != 0)
		conf_fail(cx, "the summary is still there after forget: %s", conf_show(cx, left));
	else if (left && sources_intact(cx, m, ids))
		conf_pass(cx);
}

static void body_into(conf_ctx *cx, json_t *made)
{
	if (!conf_has_capability(cx, "tiers")) {
		conf_skip(cx, "the server does not declare \"tiers\"");
		return;
	}
	const char *m = conf_marker(cx);
	json_t *ids = write_sources(cx, m);
	/* First where a summary lands by default, so into is shown to move it. */
	json_t *r = ids ? summarize(cx, made, json_pack("{s:O}", "ids", ids)) : NULL;
	json_t *rec = r ? the_summary(cx, r) : NULL;
	const char *into = rec ? tier_other_than(cx, tier_of(cx, conf_str_of(rec, "id")), 1) : NULL;
	if (!rec)
		return;
	if (!into) {
		conf_skip(cx, "describe lists no tier without a capacity other than where a "
			  "summary lands by default");
		return;
	}
	r = summarize(cx, made, json_pack("{s:O,s:s}", "ids", ids, "into", into));
	rec = r ? the_summary(cx, r) : NULL;
	if (!rec)
		return;
	const char *returned = conf_str_of(rec, "tier"), *now = tier_of(cx, conf_str_of(rec, "id"));
	if (!returned || strcmp(returned, into) != 0 || !now || strcmp(now, into) != 0)
		conf_fail(cx, "summarize into \"%s\" returned tier %s and stored it in %s", into,
			  conf_show(cx, json_object_get(rec, "tier")), now ? now : "(nothing)");
	else
		conf_pass(cx);
}

static void body_into_unknown(conf_ctx *cx, json_t *made)
{
	(void)made;
	if (!conf_has_capability(cx, "tiers")) {
		conf_skip(cx, "the server does not declare \"tiers\"");
		return;
	}
	const char *m = conf_marker(cx);
	json_t *ids = write_sources(cx, m);
	if (ids && conf_expect_error(cx, "memory/summarize",
				     json_pack("{s:O,s:s}", "ids", ids, "into",
					       conf_str(cx, "cf-no-tier-%s", m)),
				     -32002, 0))
		conf_pass(cx);
}

static void body_tier_selector(conf_ctx *cx, json_t *made)
{
	if (!conf_has_capability(cx, "tiers")) {
		conf_skip(cx, "the server does not declare \"tiers\"");
		return;
	}
	/* Written where no spill scatters them before they are selected. */
	const char *m = conf_marker(cx), *here = tier_other_than(cx, NULL, 1);
	if (!here) {
		conf_skip(cx, "describe lists no tier without a capacity");
		return;
	}
	const char *elsewhere = tier_other_than(cx, here, 0);
	if (!write_sources_in(cx, m, here))
		return;
	json_t *r = summarize(cx, made, json_pack("{s:s,s:{s:s}}", "tier", here, "where",
						  "cfm", m));
	if (!r || !read_is(cx, conf_str(cx, "tier \"%s\" and where of its 3 records", here), r, 3))
		return;
	if (elsewhere) {
		r = summarize(cx, made, json_pack("{s:s,s:{s:s}}", "tier", elsewhere, "where",
						  "cfm", m));
		if (!r || !read_is(cx, conf_str(cx, "tier \"%s\", where the records are not",
						elsewhere), r, 0))
			return;
	}
	conf_pass(cx);
}

static void body_key_replaces(conf_ctx *cx, json_t *made)
{
	if (!conf_has_capability(cx, "keys")) {
		conf_skip(cx, "the server does not declare \"keys\"");
		return;
	}
	const char *m = conf_marker(cx), *key = conf_str(cx, "cf/%s/page", m);
	json_t *ids = write_sources(cx, m);
	json_t *r1 = ids ? summarize(cx, made, json_pack("{s:O,s:s}", "ids", ids, "key", key))
			 : NULL;
	json_t *first = r1 ? the_summary(cx, r1) : NULL;
	json_t *r2 = first ? summarize(cx, made, json_pack("{s:O,s:s}", "ids", ids, "key", key))
			   : NULL;
	json_t *second = r2 ? the_summary(cx, r2) : NULL;
	json_t *fetched = second ? conf_result(cx, "memory/fetch", json_pack("{s:s}", "key", key))
				 : NULL;
	if (!fetched)
		return;
	json_t *rev1 = json_object_get(first, "revision"), *rev2 = json_object_get(second, "revision");
	json_t *rec = json_object_get(fetched, "record");
	const char *k1 = conf_str_of(first, "key");
	if (!k1 || strcmp(k1, key) != 0)
		conf_fail(cx, "a summary written with key \"%s\" came back as %s", key,
			  conf_show(cx, first));
	else if (!json_equal(json_object_get(first, "id"), json_object_get(second, "id")))
		conf_fail(cx, "summarizing twice into key \"%s\" wrote ids %s and %s; the second "
			  "must replace the first, keeping its id (spec §3.6, §4.15)", key,
			  conf_show(cx, json_object_get(first, "id")),
			  conf_show(cx, json_object_get(second, "id")));
	else if (!json_is_integer(rev1) || !json_is_integer(rev2) ||
		 json_integer_value(rev2) != json_integer_value(rev1) + 1)
		conf_fail(cx, "the replacing summary has revision %s after %s, expected one more",
			  conf_show(cx, rev2), conf_show(cx, rev1));
	else if (!json_equal(json_object_get(rec, "id"), json_object_get(second, "id")) ||
		 !json_equal(json_object_get(rec, "revision"), rev2))
		conf_fail(cx, "fetch of the key returned %s", conf_show(cx, fetched));
	else
		conf_pass(cx);
}

static void body_key_prefix(conf_ctx *cx, json_t *made)
{
	if (!conf_has_capability(cx, "keys")) {
		conf_skip(cx, "the server does not declare \"keys\"");
		return;
	}
	const char *m = conf_marker(cx), *prefix = conf_str(cx, "cf/%s/", m);
	json_t *batch = json_array();
	for (int i = 0; i < 3; i++) {
		json_t *rec = conf_record(cx, conf_str(cx, "%s keyed fact number %d is kept.", m, i),
					  m);
		json_object_set_new(rec, "key", json_string(conf_str(cx, "%sfact%d", prefix, i)));
		json_array_append_new(batch, rec);
	}
	json_t *ids = conf_remember(cx, batch);
	json_t *r = ids ? summarize(cx, made, json_pack("{s:s}", "key_prefix", prefix)) : NULL;
	if (r && read_is(cx, "key_prefix over 3 keyed records", r, 3))
		conf_pass(cx);
}

static const cleaned by_ids = {body_by_ids}, by_where = {body_by_where},
		     by_query = {body_by_query}, limited = {body_limit},
		     huge_limit = {body_huge_limit}, nothing = {body_nothing},
		     ordinary = {body_ordinary}, into = {body_into},
		     into_unknown = {body_into_unknown}, tier_selector = {body_tier_selector},
		     key_replaces = {body_key_replaces}, key_prefix = {body_key_prefix};

static const conf_check checks[] = {
	{"describe reports summarize with a model string or null", check_describe, NULL},
	{"no selector is -32602 (no params, {}, only limit, into, key or owner)",
	 check_no_selector, NULL},
	{"summarize by ids writes one record in wire form and keeps the sources", run_cleaned,
	 &by_ids},
	{"summarize by where reads exactly the matching records", run_cleaned, &by_where},
	{"summarize by query reads what recall finds", run_cleaned, &by_query},
	{"limit caps the records read", run_cleaned, &limited},
	{"a limit past what the server reads is answered at once, not refused", run_cleaned,
	 &huge_limit},
	{"a selection matching nothing writes nothing and is not an error", run_cleaned,
	 &nothing},
	{"the summary is an ordinary record: recall finds it, forget removes it", run_cleaned,
	 &ordinary},
	{"into puts the summary in that tier", run_cleaned, &into},
	{"into an unknown tier is -32002", run_cleaned, &into_unknown},
	{"tier selects the sources by their tier", run_cleaned, &tier_selector},
	{"key twice replaces the summary: same id, revision one higher", run_cleaned,
	 &key_replaces},
	{"key_prefix selects the records under it", run_cleaned, &key_prefix},
};

const conf_group conf_group_summarize = {"summarize", "summarize", checks,
					 CONF_COUNT(checks), 0};
