/*
** check_prompt.c — checks of the prompt capability (spec §4.16): a
** `prompt` parameter on memory/recall and memory/timeline that adds a
** rendered block and the ids it holds, and changes nothing else.
**
** How the text is laid out is not specified, so the checks hold it only to
** what is: every content it claims (prompt_ids) appears in it whole, no
** content it does not claim appears at all, a budget bounds its length in
** characters (code points), and the template method gives the same text
** for the same records every time.
*/
#include <string.h>

#include "suite.h"

/* Unicode code points in UTF-8 text: the unit of a budget. */
static size_t code_points(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Whether the string array holds s. */
static int lists(const json_t *array, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach(array, i, v) {
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return 1;
	}
	return 0;
}

/* ---- reading ---- */

enum reader { BY_RECALL, BY_TIMELINE };
static const enum reader by_recall = BY_RECALL, by_timeline = BY_TIMELINE;
static const char *const reader_methods[] = {"memory/recall", "memory/timeline"};

/*
** Reads the records tagged m, with prompt (stolen; NULL for none). Returns
** the result after checking it has a records array, or NULL after failing.
*/
static json_t *read_tagged(conf_ctx *cx, enum reader how, const char *m, json_t *prompt)
{
	json_t *p = how == BY_RECALL
		? json_pack("{s:s,s:{s:s},s:i}", "query", m, "where", "cfm", m, "limit", 20)
		: json_pack("{s:{s:s}}", "where", "cfm", m);
	if (prompt)
		json_object_set_new(p, "prompt", prompt);
	json_t *r = conf_result(cx, reader_methods[how], p);
	if (r && !json_is_array(json_object_get(r, "records"))) {
		conf_fail(cx, "%s returned no records array: %s", reader_methods[how],
			  conf_show(cx, r));
		return NULL;
	}
	return r;
}

/* The record in records with id, or NULL. */
static json_t *record_of(const json_t *records, const char *id)
{
	return conf_by_id(records, id);
}

/*
** Whether r carries a well-formed rendering: a prompt string, prompt_ids
** naming records of r, each with its content whole in the text, and no
** content of a record it does not name. Fails the check if not.
*/
static int rendering_ok(conf_ctx *cx, const char *what, const json_t *r)
{
	const char *text = conf_str_of(r, "prompt");
	json_t *pids = json_object_get(r, "prompt_ids"), *records = json_object_get(r, "records");
	if (!text || !json_is_array(pids)) {
		conf_fail(cx, "%s: expected a prompt string and a prompt_ids array, got %s", what,
			  conf_show(cx, r));
		return 0;
	}
	size_t i;
	json_t *id;
	json_array_foreach(pids, i, id) {
		json_t *rec = json_is_string(id) ? record_of(records, json_string_value(id)) : NULL;
		if (!rec) {
			conf_fail(cx, "%s: prompt_ids holds %s, which is not a returned record",
				  what, conf_show(cx, id));
			return 0;
		}
		const char *content = conf_str_of(rec, "content");
		if (!content || !strstr(text, content)) {
			conf_fail(cx, "%s: record %s is in prompt_ids but its content %s is not "
				  "whole in the prompt %s", what, json_string_value(id),
				  conf_show(cx, json_object_get(rec, "content")),
				  conf_show(cx, json_object_get(r, "prompt")));
			return 0;
		}
	}
	json_t *rec;
	json_array_foreach(records, i, rec) {
		const char *rid = conf_str_of(rec, "id"), *content = conf_str_of(rec, "content");
		if (rid && content && *content && !lists(pids, rid) && strstr(text, content)) {
			conf_fail(cx, "%s: the prompt holds the content of %s, which prompt_ids "
				  "omits", what, rid);
			return 0;
		}
	}
	return 1;
}

/*
** A record without the fields a read itself may change: its score (spec
** §5.3 forbids comparing scores across calls, and recency moves between
** two of them), what salience counts of the access, and the tier a
** promotion earned by that access moves it to. Kept.
*/
static json_t *stable_part(conf_ctx *cx, const json_t *rec)
{
	static const char *const volatile_fields[] = {"score", "access_count", "accessed_at",
						      "salience", "tier"};
	json_t *copy = conf_keep(cx, json_deep_copy(rec));
	for (size_t i = 0; copy && i < CONF_COUNT(volatile_fields); i++)
		json_object_del(copy, volatile_fields[i]);
	return copy;
}

/* Whether two results hold the same records, in the same order. */
static int same_records(conf_ctx *cx, const char *what, const json_t *plain,
			const json_t *rendered)
{
	json_t *a = json_object_get(plain, "records"), *b = json_object_get(rendered, "records");
	int same = json_array_size(a) == json_array_size(b);
	for (size_t i = 0; same && i < json_array_size(a); i++)
		same = json_equal(stable_part(cx, json_array_get(a, i)),
				  stable_part(cx, json_array_get(b, i)));
	if (!same)
		conf_fail(cx, "%s: records %s without prompt but %s with it (spec §4.16: "
			  "asking for text must not change what is recalled)", what,
			  conf_show(cx, a), conf_show(cx, b));
	return same;
}

/* Writes one record per text, a tick apart, tagged m; the ids. */
static json_t *write_texts(conf_ctx *cx, const char *m, const char *const *texts, size_t n,
			   const char *role)
{
	json_t *ids = conf_keep(cx, json_array());
	for (size_t i = 0; i < n; i++) {
		if (i)
			conf_tick();
		json_t *rec = conf_record(cx, conf_str(cx, "%s %s", m, texts[i]), m);
		if (role)
			json_object_set_new(rec, "role", json_string(role));
		json_t *one = conf_remember(cx, json_pack("[o]", rec));
		if (!one)
			return NULL;
		json_array_extend(ids, one);
	}
	return ids;
}

/* Three facts of different lengths, two of them not ASCII. */
static const char *const facts[] = {
	"the caf\xc3\xa9 on the corner opens at seven",
	"na\xc3\xafve Bayes beat the baseline by four points in March",
	"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e support shipped in release twelve",
};

/* ---- checks ---- */

static void check_describe(conf_ctx *cx, const void *arg)
{
	(void)arg;
	json_t *p = json_object_get(conf_describe(cx), "prompt");
	json_t *styles = json_object_get(p, "styles"), *methods = json_object_get(p, "methods");
	json_t *model = json_object_get(p, "model");
	if (!json_is_object(p) || !json_is_array(styles) || !json_is_array(methods))
		conf_fail(cx, "describe reports prompt %s, expected styles and methods arrays "
			  "(spec §4.16)", conf_show(cx, p));
	else if (!lists(styles, "auto"))
		conf_fail(cx, "prompt.styles %s lacks \"auto\", which every server supports",
			  conf_show(cx, styles));
	else if (!lists(methods, "template"))
		conf_fail(cx, "prompt.methods %s lacks \"template\", which every server supports",
			  conf_show(cx, methods));
	else if (model && !json_is_string(model) && !json_is_null(model))
		conf_fail(cx, "prompt.model is %s, expected a string or null", conf_show(cx, model));
	else
		conf_pass(cx);
}

static void check_additive(conf_ctx *cx, const void *arg)
{
	enum reader how = *(const enum reader *)arg;
	const char *m = conf_marker(cx);
	json_t *ids = write_texts(cx, m, facts, CONF_COUNT(facts), NULL);
	json_t *plain = ids ? read_tagged(cx, how, m, NULL) : NULL;
	json_t *rendered = plain ? read_tagged(cx, how, m, json_true()) : NULL;
	if (!rendered)
		return;
	const char *what = conf_str(cx, "%s with prompt: true", reader_methods[how]);
	if (json_object_get(plain, "prompt") || json_object_get(plain, "prompt_ids")) {
		conf_fail(cx, "%s without prompt returned a rendering: %s", reader_methods[how],
			  conf_show(cx, plain));
		return;
	}
	if (json_array_size(json_object_get(plain, "records")) != CONF_COUNT(facts)) {
		conf_fail(cx, "%s returned %s, expected the %zu records written",
			  reader_methods[how], conf_show(cx, plain), CONF_COUNT(facts));
		return;
	}
	if (!same_records(cx, what, plain, rendered) || !rendering_ok(cx, what, rendered))
		return;
	if (json_array_size(json_object_get(rendered, "prompt_ids")) != CONF_COUNT(facts))
		conf_fail(cx, "%s and no budget rendered %s of %zu records", what,
			  conf_show(cx, json_object_get(rendered, "prompt_ids")), CONF_COUNT(facts));
	else
		conf_pass(cx);
}

static void check_method_none(conf_ctx *cx, const void *arg)
{
	enum reader how = *(const enum reader *)arg;
	const char *m = conf_marker(cx);
	json_t *r = write_texts(cx, m, facts, 1, NULL)
		? read_tagged(cx, how, m, json_pack("{s:s}", "method", "none")) : NULL;
	if (!r)
		return;
	if (json_object_get(r, "prompt") || json_object_get(r, "prompt_ids"))
		conf_fail(cx, "method \"none\" still rendered: %s", conf_show(cx, r));
	else if (json_array_size(json_object_get(r, "records")) != 1)
		conf_fail(cx, "method \"none\" returned records %s, expected the one written",
			  conf_show(cx, json_object_get(r, "records")));
	else
		conf_pass(cx);
}

static void check_method_refused(conf_ctx *cx, const void *arg)
{
	(void)arg;
	json_t *methods = json_object_get(json_object_get(conf_describe(cx), "prompt"), "methods");
	json_t *cases = conf_keep(cx, json_array());
	json_array_append_new(cases, json_pack("{s:s}", "method", "telepathy"));
	json_array_append_new(cases, json_pack("{s:i}", "method", 42));
	if (!lists(methods, "model"))
		json_array_append_new(cases, json_pack("{s:s}", "method", "model"));
	size_t i;
	json_t *p;
	json_array_foreach(cases, i, p) {
		for (int how = BY_RECALL; how <= BY_TIMELINE; how++) {
			json_t *params = json_pack("{s:O,s:i}", "prompt", p, "limit", 5);
			json_t *resp = conf_call(cx, reader_methods[how], params);
			int code;
			if (!resp)
				return;
			if (!conf_error_code(resp, &code) || code != CONF_INVALID_PARAMS) {
				conf_fail(cx, "%s with prompt %s answered %s, expected -32602 "
					  "(spec §4.16: never substitute a method)",
					  reader_methods[how], conf_show(cx, p), conf_show(cx, resp));
				return;
			}
		}
	}
	conf_pass(cx);
}

/*
** Spec §4.16: a server offers a method only if it can do it, and describe
** says in advance what is available. So every method and every style
** describe lists must be accepted and render: "none" renders nothing,
** anything else a well-formed block.
*/
static void check_offered_work(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *p = json_object_get(conf_describe(cx), "prompt");
	json_t *methods = json_object_get(p, "methods"), *styles = json_object_get(p, "styles");
	const char *m = conf_marker(cx);
	if (!json_is_array(methods) || !json_is_array(styles)) {
		conf_fail(cx, "describe reports prompt %s, expected methods and styles arrays",
			  conf_show(cx, p));
		return;
	}
	if (!write_texts(cx, m, facts, 1, NULL))
		return;
	json_t *cases = conf_keep(cx, json_array());
	size_t i;
	json_t *v;
	json_array_foreach(methods, i, v) json_array_append_new(cases, json_pack("{s:O}", "method", v));
	json_array_foreach(styles, i, v) json_array_append_new(cases, json_pack("{s:O}", "style", v));
	json_array_foreach(cases, i, v) {
		const char *method = conf_str_of(v, "method");
		json_t *r = read_tagged(cx, BY_TIMELINE, m, json_incref(v));
		const char *what = conf_str(cx, "timeline with prompt %s, which describe offers",
					    conf_show(cx, v));
		if (!r)
			return;
		if (method && strcmp(method, "none") == 0) {
			if (json_object_get(r, "prompt") || json_object_get(r, "prompt_ids")) {
				conf_fail(cx, "%s: still rendered %s", what, conf_show(cx, r));
				return;
			}
		} else if (!rendering_ok(cx, what, r)) {
			return;
		} else if (json_array_size(json_object_get(r, "prompt_ids")) != 1) {
			conf_fail(cx, "%s: prompt_ids %s, expected the one record, which no budget "
				  "trims", what, conf_show(cx, json_object_get(r, "prompt_ids")));
			return;
		}
	}
	conf_pass(cx);
}

static void check_model_refused(conf_ctx *cx, const void *arg)
{
	(void)arg;
	json_t *methods = json_object_get(json_object_get(conf_describe(cx), "prompt"), "methods");
	if (!lists(methods, "model")) {
		conf_skip(cx, "method \"model\" is not offered (its refusal is checked above)");
		return;
	}
	json_t *params = json_pack("{s:{s:s,s:s},s:i}", "prompt", "method", "model", "model",
				   conf_str(cx, "cf-no-such-model-%s", conf_marker(cx)), "limit", 5);
	if (conf_expect_error(cx, "memory/recall", params, CONF_INVALID_PARAMS, 0))
		conf_pass(cx);
}

/* Spec §4.16: prompt: true is the template method, and a template is
** deterministic: same records, same text. */
static void check_default_template(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	json_t *a = write_texts(cx, m, facts, CONF_COUNT(facts), NULL)
		? read_tagged(cx, BY_TIMELINE, m, json_true()) : NULL;
	json_t *b = a ? read_tagged(cx, BY_TIMELINE, m, json_pack("{s:s}", "method", "template"))
		      : NULL;
	json_t *c = b ? read_tagged(cx, BY_TIMELINE, m, json_pack("{s:s}", "method", "template"))
		      : NULL;
	if (!c || !rendering_ok(cx, "prompt: true", a))
		return;
	if (!json_equal(json_object_get(b, "prompt"), json_object_get(c, "prompt")))
		conf_fail(cx, "the template rendered the same records two ways: %s and %s",
			  conf_show(cx, json_object_get(b, "prompt")),
			  conf_show(cx, json_object_get(c, "prompt")));
	else if (!json_equal(json_object_get(a, "prompt"), json_object_get(b, "prompt")) ||
		 !json_equal(json_object_get(a, "prompt_ids"), json_object_get(b, "prompt_ids")))
		conf_fail(cx, "prompt: true rendered %s, method \"template\" %s; the default "
			  "must be template", conf_show(cx, json_object_get(a, "prompt")),
			  conf_show(cx, json_object_get(b, "prompt")));
	else
		conf_pass(cx);
}

/*
** The full rendering of the facts for reader how, tagged m, and its length
** in code points; NULL after failing.
*/
static json_t *full_rendering(conf_ctx *cx, enum reader how, const char *m, size_t *length)
{
	json_t *r = write_texts(cx, m, facts, CONF_COUNT(facts), NULL)
		? read_tagged(cx, how, m, json_pack("{s:s}", "method", "template")) : NULL;
	if (!r || !rendering_ok(cx, "the full rendering", r))
		return NULL;
	*length = code_points(conf_str_of(r, "prompt"));
	return r;
}

static void check_budget_drops(conf_ctx *cx, const void *arg)
{
	enum reader how = *(const enum reader *)arg;
	const char *m = conf_marker(cx);
	size_t full;
	json_t *whole = full_rendering(cx, how, m, &full);
	if (!whole)
		return;
	json_int_t budget = (json_int_t)full - 1;
	json_t *r = read_tagged(cx, how, m, json_pack("{s:s,s:I}", "method", "template",
						       "budget", budget));
	const char *what = conf_str(cx, "%s with budget %lld", reader_methods[how],
				    (long long)budget);
	if (!r || !same_records(cx, what, whole, r) || !rendering_ok(cx, what, r))
		return;
	size_t used = code_points(conf_str_of(r, "prompt"));
	size_t kept = json_array_size(json_object_get(r, "prompt_ids"));
	if (used > (size_t)budget)
		conf_fail(cx, "%s: the prompt is %zu characters", what, used);
	else if (kept >= CONF_COUNT(facts))
		conf_fail(cx, "%s, one less than the full %zu, still kept all %zu records", what,
			  full, kept);
	else
		conf_pass(cx);
}

/* A budget of exactly the full length — counted in code points — fits all. */
static void check_budget_exact(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	size_t full;
	json_t *whole = full_rendering(cx, BY_TIMELINE, m, &full);
	json_t *r = whole ? read_tagged(cx, BY_TIMELINE, m,
					json_pack("{s:s,s:I}", "method", "template", "budget",
						  (json_int_t)full)) : NULL;
	if (!r)
		return;
	if (!json_equal(json_object_get(r, "prompt"), json_object_get(whole, "prompt")) ||
	    !json_equal(json_object_get(r, "prompt_ids"), json_object_get(whole, "prompt_ids")))
		conf_fail(cx, "budget %zu, the full text's length in characters, rendered %s; "
			  "without a budget %s", full, conf_show(cx, json_object_get(r, "prompt")),
			  conf_show(cx, json_object_get(whole, "prompt")));
	else
		conf_pass(cx);
}

static void check_budget_one(conf_ctx *cx, const void *arg)
{
	enum reader how = *(const enum reader *)arg;
	const char *m = conf_marker(cx);
	json_t *r = write_texts(cx, m, facts, CONF_COUNT(facts), NULL)
		? read_tagged(cx, how, m, json_pack("{s:i}", "budget", 1)) : NULL;
	if (!r)
		return;
	const char *text = conf_str_of(r, "prompt");
	json_t *pids = json_object_get(r, "prompt_ids");
	if (!text || strcmp(text, "") != 0 || !json_is_array(pids) || json_array_size(pids) != 0)
		conf_fail(cx, "budget 1, shorter than any record, rendered prompt %s with "
			  "prompt_ids %s; expected \"\" and []", conf_show(cx, json_object_get(r, "prompt")),
			  conf_show(cx, pids));
	else if (json_array_size(json_object_get(r, "records")) != CONF_COUNT(facts))
		conf_fail(cx, "budget 1 changed the records: %s",
			  conf_show(cx, json_object_get(r, "records")));
	else
		conf_pass(cx);
}

static void check_nothing_recalled(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	json_t *r = read_tagged(cx, BY_RECALL, m, json_true());
	if (!r)
		return;
	const char *text = conf_str_of(r, "prompt");
	json_t *pids = json_object_get(r, "prompt_ids");
	if (json_array_size(json_object_get(r, "records")) != 0)
		conf_fail(cx, "a fresh marker recalled %s", conf_show(cx, r));
	else if (!text || strcmp(text, "") != 0 || !json_is_array(pids) || json_array_size(pids))
		conf_fail(cx, "no records rendered prompt %s with prompt_ids %s; expected \"\" "
			  "and []", conf_show(cx, json_object_get(r, "prompt")), conf_show(cx, pids));
	else
		conf_pass(cx);
}

static void check_cite(conf_ctx *cx, const void *arg)
{
	(void)arg;
	int keys = conf_has_capability(cx, "keys"), external = conf_has_capability(cx, "external");
	if (!keys && !external) {
		conf_skip(cx, "needs \"keys\" or \"external\" for something to cite");
		return;
	}
	const char *m = conf_marker(cx);
	const char *key = conf_str(cx, "cf/%s/cited", m);
	const char *uri = conf_str(cx, "https://example.org/%s/source.html", m);
	json_t *batch = json_array();
	if (keys) {
		json_t *rec = conf_record(cx, conf_str(cx, "%s a fact with an address", m), m);
		json_object_set_new(rec, "key", json_string(key));
		json_array_append_new(batch, rec);
	}
	if (external) {
		json_t *rec = conf_record(cx, conf_str(cx, "%s a fact from a page", m), m);
		json_object_set_new(rec, "uri", json_string(uri));
		json_array_append_new(batch, rec);
	}
	json_t *ids = conf_remember(cx, batch);
	json_t *r = ids ? read_tagged(cx, BY_TIMELINE, m, json_pack("{s:b}", "cite", 1)) : NULL;
	if (!r || !rendering_ok(cx, "cite: true", r))
		return;
	const char *text = conf_str_of(r, "prompt");
	if (keys && !strstr(text, key))
		conf_fail(cx, "cite: true rendered %s without the key %s",
			  conf_show(cx, json_object_get(r, "prompt")), key);
	else if (external && !strstr(text, uri))
		conf_fail(cx, "cite: true rendered %s without the uri %s",
			  conf_show(cx, json_object_get(r, "prompt")), uri);
	else
		conf_pass(cx);
}

static void check_styles(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const char *const turns[] = {"where is the staging cluster",
					    "it runs in eu-west-1, rebuilt nightly"};
	json_t *styles = json_object_get(json_object_get(conf_describe(cx), "prompt"), "styles");
	if (!lists(styles, "facts") || !lists(styles, "transcript")) {
		conf_skip(cx, "describe does not offer both facts and transcript (a SHOULD)");
		return;
	}
	const char *m = conf_marker(cx);
	json_t *ids = write_texts(cx, m, turns, 1, "user");
	json_t *more = ids ? write_texts(cx, m, turns + 1, 1, "assistant") : NULL;
	json_t *facts_r = more ? read_tagged(cx, BY_TIMELINE, m, json_pack("{s:s}", "style",
									    "facts")) : NULL;
	json_t *chat_r = facts_r ? read_tagged(cx, BY_TIMELINE, m,
					       json_pack("{s:s}", "style", "transcript")) : NULL;
	json_t *auto_r = chat_r ? read_tagged(cx, BY_TIMELINE, m,
					      json_pack("{s:s}", "style", "auto")) : NULL;
	if (!auto_r || !rendering_ok(cx, "style facts", facts_r) ||
	    !rendering_ok(cx, "style transcript", chat_r) || !rendering_ok(cx, "style auto", auto_r))
		return;
	static const char *const names[] = {"facts", "transcript", "auto"};
	json_t *rs[] = {facts_r, chat_r, auto_r};
	for (size_t i = 0; i < CONF_COUNT(rs); i++) {
		if (json_array_size(json_object_get(rs[i], "prompt_ids")) != 2) {
			conf_fail(cx, "style %s rendered %s, expected both turns", names[i],
				  conf_show(cx, json_object_get(rs[i], "prompt")));
			return;
		}
	}
	if (json_equal(json_object_get(facts_r, "prompt"), json_object_get(chat_r, "prompt")))
		conf_fail(cx, "styles facts and transcript rendered the same text %s",
			  conf_show(cx, json_object_get(chat_r, "prompt")));
	else
		conf_pass(cx);
}

static const conf_check checks[] = {
	{"describe reports styles with auto and methods with template", check_describe, NULL},
	{"recall with prompt: true returns the same records plus prompt and prompt_ids",
	 check_additive, &by_recall},
	{"timeline with prompt: true returns the same records plus prompt and prompt_ids",
	 check_additive, &by_timeline},
	{"recall with method none renders nothing", check_method_none, &by_recall},
	{"timeline with method none renders nothing", check_method_none, &by_timeline},
	{"a method not offered is -32602", check_method_refused, NULL},
	{"a model not offered is -32602", check_model_refused, NULL},
	{"every method and style describe offers is accepted and renders", check_offered_work,
	 NULL},
	{"prompt: true is the template, and the template is deterministic",
	 check_default_template, NULL},
	{"a recall budget drops whole records and keeps within it", check_budget_drops,
	 &by_recall},
	{"a timeline budget drops whole records and keeps within it", check_budget_drops,
	 &by_timeline},
	{"a budget of the full length in characters keeps every record", check_budget_exact,
	 NULL},
	{"recall with budget 1 renders \"\" and no ids", check_budget_one, &by_recall},
	{"timeline with budget 1 renders \"\" and no ids", check_budget_one, &by_timeline},
	{"a recall of nothing renders \"\" and no ids", check_nothing_recalled, NULL},
	{"cite shows a record's key or uri", check_cite, NULL},
	{"styles facts and transcript differ and each holds every record", check_styles, NULL},
};

const conf_group conf_group_prompt = {"prompt", "prompt", checks, CONF_COUNT(checks), 0};
