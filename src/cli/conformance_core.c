/*
** conformance_core.c — checks of the core capability, the five methods
** every A2M server implements (spec §2, §4.1–§4.5), with the ranking rules
** of §5 they depend on. One group per method.
**
** Each check writes its own records, tagged with a fresh marker, and finds
** them again by it; nothing here relies on the store being empty or on
** what an earlier check left behind. Where a check needs records with
** distinct creation times it writes them in separate calls a few
** milliseconds apart (conf_tick); where it needs equal ones it writes one
** batch.
*/
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cli/conformance.h"

/* ---- small helpers ---- */

static const char *str_of(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

static json_t *records_in(conf_ctx *cx, const char *method, json_t *result)
{
	json_t *records = json_object_get(result, "records");
	if (!json_is_array(records)) {
		conf_fail(cx, "%s returned no records array: %s", method, conf_show(cx, result));
		return NULL;
	}
	return records;
}

/* memory/recall with params (stolen); its records, or NULL after failing. */
static json_t *recall(conf_ctx *cx, json_t *params)
{
	json_t *result = conf_result(cx, "memory/recall", params);
	return result ? records_in(cx, "memory/recall", result) : NULL;
}

static json_t *timeline(conf_ctx *cx, json_t *params)
{
	json_t *result = conf_result(cx, "memory/timeline", params);
	return result ? records_in(cx, "memory/timeline", result) : NULL;
}

/* The records carrying metadata cfm = marker, in the order given. */
static json_t *tagged(conf_ctx *cx, const json_t *records, const char *marker)
{
	json_t *out = conf_keep(cx, json_array());
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		const char *cfm = str_of(json_object_get(rec, "metadata"), "cfm");
		if (cfm && strcmp(cfm, marker) == 0)
			json_array_append(out, rec);
	}
	return out;
}

/* Writes texts[0..n) in one batch, each tagged with cfm; returns the ids. */
static json_t *write_batch(conf_ctx *cx, const char *cfm, const char *const *texts, size_t n)
{
	json_t *records = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(records, conf_record(cx, texts[i], cfm));
	return conf_remember(cx, records);
}

/* Writes texts one call each, a tick apart, so their created_at differ. */
static json_t *write_each(conf_ctx *cx, const char *cfm, const char *const *texts, size_t n)
{
	json_t *ids = conf_keep(cx, json_array());
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			conf_tick();
		json_t *one = write_batch(cx, cfm, &texts[i], 1);
		if (!one)
			return NULL;
		json_array_append(ids, json_array_get(one, 0));
	}
	return ids;
}

/* Whether the contents of records are, in order, exactly texts[0..n). */
static int contents_are(conf_ctx *cx, const char *what, const json_t *records,
			const char *const *texts, size_t n)
{
	int same = json_array_size(records) == n;
	for (size_t i = 0; same && i < n; i++) {
		const char *c = str_of(json_array_get(records, i), "content");
		same = c && strcmp(c, texts[i]) == 0;
	}
	if (same)
		return 1;
	json_t *got = conf_keep(cx, json_array());
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec)
		json_array_append(got, json_object_get(rec, "content"));
	json_t *want = conf_keep(cx, json_array());
	for (i = 0; i < n; i++)
		json_array_append_new(want, json_string(texts[i]));
	conf_fail(cx, "%s: got %s, expected %s", what, conf_show(cx, got), conf_show(cx, want));
	return 0;
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ", exactly (spec §3.3). */
static int is_wire_timestamp(const char *s)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ";
	if (!s || strlen(s) != sizeof shape - 1)
		return 0;
	for (size_t i = 0; shape[i]; i++) {
		if (shape[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != shape[i])
			return 0;
	}
	return 1;
}

/* Every record scored in [0, 1], scores never rising (spec §5.3). */
static int scores_ok(conf_ctx *cx, const char *what, const json_t *records)
{
	size_t i;
	json_t *rec;
	double prev = 0;
	json_array_foreach(records, i, rec) {
		json_t *score = json_object_get(rec, "score");
		if (!json_is_number(score)) {
			conf_fail(cx, "%s: record %zu has score %s, expected a number", what, i,
				  score ? conf_show(cx, score) : "(absent)");
			return 0;
		}
		double v = json_number_value(score);
		if (!(v >= 0 && v <= 1)) {
			conf_fail(cx, "%s: score %g is outside [0, 1]", what, v);
			return 0;
		}
		if (i > 0 && v > prev) {
			conf_fail(cx, "%s: score %g follows %g; scores must descend", what, v, prev);
			return 0;
		}
		prev = v;
	}
	return 1;
}

static int expect_count(conf_ctx *cx, const char *what, const json_t *records, size_t n)
{
	if (records && json_array_size(records) == n)
		return 1;
	if (records)
		conf_fail(cx, "%s: %zu record(s), expected %zu", what, json_array_size(records), n);
	return 0;
}

/* ---- core/describe (spec §4.1) ---- */

static const json_t *described(conf_ctx *cx)
{
	const json_t *d = conf_describe(cx);
	if (!d)
		conf_fail(cx, "memory/describe failed: %s", conf_describe_error(cx));
	return d;
}

static void check_describe_identity(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *d = described(cx);
	if (!d)
		return;
	const char *protocol = str_of(d, "protocol");
	if (!protocol || strcmp(protocol, CONF_PROTOCOL) != 0)
		conf_fail(cx, "protocol is %s, expected \"a2m/0.1\"",
			  conf_show(cx, json_object_get(d, "protocol")));
	else if (!json_is_string(json_object_get(d, "name")))
		conf_fail(cx, "name is %s, expected a string",
			  conf_show(cx, json_object_get(d, "name")));
	else
		conf_pass(cx);
}

/* Whether array holds the string s; how many times in *count. */
static int holds(const json_t *array, const char *s, int *count)
{
	size_t i;
	json_t *v;
	*count = 0;
	json_array_foreach(array, i, v) {
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			(*count)++;
	}
	return *count > 0;
}

/* A string array without duplicates; fails the check if not. */
static json_t *string_set(conf_ctx *cx, const json_t *d, const char *field)
{
	json_t *a = json_object_get(d, field);
	size_t i;
	json_t *v;
	int n;
	if (!json_is_array(a)) {
		conf_fail(cx, "%s is %s, expected an array of strings", field, conf_show(cx, a));
		return NULL;
	}
	json_array_foreach(a, i, v) {
		if (!json_is_string(v)) {
			conf_fail(cx, "%s holds %s, expected only strings", field, conf_show(cx, v));
			return NULL;
		}
		if (holds(a, json_string_value(v), &n) && n > 1) {
			conf_fail(cx, "%s lists \"%s\" %d times", field, json_string_value(v), n);
			return NULL;
		}
	}
	return a;
}

static void check_describe_capabilities(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *d = described(cx);
	json_t *caps = d ? string_set(cx, d, "capabilities") : NULL;
	int n;
	if (!caps)
		return;
	if (!holds(caps, "core", &n))
		conf_fail(cx, "capabilities %s lacks \"core\"", conf_show(cx, caps));
	else
		conf_pass(cx);
}

static void check_describe_core_methods(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *d = described(cx);
	json_t *methods = d ? string_set(cx, d, "methods") : NULL;
	int n;
	if (!methods)
		return;
	for (const conf_method *m = conf_methods; m->method; m++) {
		if (strcmp(m->capability, "core") == 0 && !holds(methods, m->method, &n)) {
			conf_fail(cx, "methods lacks %s", m->method);
			return;
		}
	}
	conf_pass(cx);
}

/* Spec §4: every method name is namespaced memory/. */
static void check_describe_namespace(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *d = described(cx);
	json_t *methods = d ? string_set(cx, d, "methods") : NULL;
	size_t i;
	json_t *v;
	if (!methods)
		return;
	json_array_foreach(methods, i, v) {
		if (strncmp(json_string_value(v), "memory/", 7) != 0) {
			conf_fail(cx, "%s is not under memory/", json_string_value(v));
			return;
		}
	}
	conf_pass(cx);
}

/* Spec §2: declarations are truthful, in both directions. */
static void check_describe_methods_match(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *d = described(cx);
	json_t *methods = d ? string_set(cx, d, "methods") : NULL;
	int n;
	if (!methods)
		return;
	for (const conf_method *m = conf_methods; m->method; m++) {
		int declared = conf_has_capability(cx, m->capability);
		int listed = holds(methods, m->method, &n);
		if (declared && !listed) {
			conf_fail(cx, "\"%s\" is declared but methods lacks %s", m->capability,
				  m->method);
			return;
		}
		if (!declared && listed && strcmp(m->capability, "core") != 0) {
			conf_fail(cx, "methods lists %s but \"%s\" is not declared", m->method,
				  m->capability);
			return;
		}
	}
	conf_pass(cx);
}

/*
** Each listed method exists. The params are chosen to be harmless: those
** that write or delete get an empty selection, which a server refuses or
** treats as nothing.
*/
static void check_describe_methods_answer(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const json_t *d = described(cx);
	json_t *methods = d ? string_set(cx, d, "methods") : NULL;
	size_t i;
	json_t *v;
	int subscribed = 0;
	if (!methods)
		return;
	json_array_foreach(methods, i, v) {
		const char *m = json_string_value(v);
		json_t *params = strcmp(m, "memory/remember") == 0 ? json_pack("{s:[]}", "records")
			       : strcmp(m, "memory/forget") == 0   ? json_pack("{s:[]}", "ids")
								   : json_object();
		json_t *resp = conf_call(cx, m, params);
		int code;
		if (!resp)
			return;
		if (conf_error_code(resp, &code) && code == CONF_METHOD_NOT_FOUND) {
			conf_fail(cx, "%s is listed but answers -32601", m);
			return;
		}
		if (strcmp(m, "memory/events/subscribe") == 0 && json_object_get(resp, "result"))
			subscribed = 1;
	}
	if (subscribed && !conf_call(cx, "memory/events/unsubscribe", json_object()))
		return;
	conf_pass(cx);
}

static void check_describe_limits(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const char *const names[] = {"max_records_per_call", "max_recall_limit",
					    "max_content_length"};
	const json_t *d = described(cx);
	if (!d)
		return;
	json_t *limits = json_object_get(d, "limits");
	if (!limits) {
		conf_skip(cx, "describe reports no limits");
		return;
	}
	if (!json_is_object(limits)) {
		conf_fail(cx, "limits is %s, expected an object", conf_show(cx, limits));
		return;
	}
	for (size_t i = 0; i < CONF_COUNT(names); i++) {
		json_t *v = json_object_get(limits, names[i]);
		if (v && (!json_is_integer(v) || json_integer_value(v) <= 0)) {
			conf_fail(cx, "limits.%s is %s, expected a positive integer", names[i],
				  conf_show(cx, v));
			return;
		}
	}
	conf_pass(cx);
}

static void check_describe_declares_01(conf_ctx *cx, const void *arg)
{
	(void)arg;
	json_t *r = conf_result(cx, "memory/describe", json_pack("{s:s}", "protocol", CONF_PROTOCOL));
	if (!r)
		return;
	const char *protocol = str_of(r, "protocol");
	if (!protocol || strcmp(protocol, CONF_PROTOCOL) != 0)
		conf_fail(cx, "answered protocol %s", conf_show(cx, json_object_get(r, "protocol")));
	else
		conf_pass(cx);
}

/*
** Spec §4.1: refusing an unservable version is a MAY, pretending to speak
** it is a MUST NOT. So -32007 passes, an honest "a2m/0.1" is skipped, and
** anything else fails.
*/
static void check_describe_other_version(conf_ctx *cx, const void *arg)
{
	const char *version = arg;
	json_t *resp = conf_call(cx, "memory/describe", json_pack("{s:s}", "protocol", version));
	int code;
	if (!resp)
		return;
	json_t *result = json_object_get(resp, "result");
	if (result) {
		const char *protocol = str_of(result, "protocol");
		if (protocol && strcmp(protocol, CONF_PROTOCOL) == 0)
			conf_skip(cx, "answered as a2m/0.1 instead of refusing (spec §4.1 MAY)");
		else
			conf_fail(cx, "answered protocol %s to a client declaring %s",
				  conf_show(cx, json_object_get(result, "protocol")), version);
		return;
	}
	if (!conf_error_code(resp, &code) || code != CONF_PROTOCOL_NOT_SUPPORTED) {
		conf_fail(cx, "answered %s, expected error -32007", conf_show(cx, resp));
		return;
	}
	conf_pass(cx);
}

/* Whether v holds, anywhere, a string containing s. */
static int mentions_text(const json_t *v, const char *s)
{
	size_t i;
	const char *key;
	json_t *item;
	if (json_is_string(v))
		return strstr(json_string_value(v), s) != NULL;
	if (json_is_array(v)) {
		json_array_foreach(v, i, item) {
			if (mentions_text(item, s))
				return 1;
		}
	}
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, item) {
			if (mentions_text(item, s))
				return 1;
		}
	}
	return 0;
}

/* The data of -32007, which spec §7 makes optional: there, it must be right. */
static void check_describe_version_data(conf_ctx *cx, const void *arg)
{
	(void)arg;
	json_t *resp = conf_call(cx, "memory/describe", json_pack("{s:s}", "protocol", "a2m/0.2"));
	int code;
	if (!resp)
		return;
	if (!conf_error_code(resp, &code) || code != CONF_PROTOCOL_NOT_SUPPORTED) {
		conf_skip(cx, "the server does not answer -32007");
		return;
	}
	json_t *data = json_object_get(json_object_get(resp, "error"), "data");
	if (!data)
		conf_skip(cx, "the error carries no data (optional, spec §7)");
	else if (!mentions_text(data, CONF_PROTOCOL))
		conf_fail(cx, "data %s does not mention a2m/0.1", conf_show(cx, data));
	else
		conf_pass(cx);
}

static void check_describe_unknown_params(conf_ctx *cx, const void *arg)
{
	(void)arg;
	json_t *r = conf_result(cx, "memory/describe",
				json_pack("{s:s,s:{s:b}}", "protocol", CONF_PROTOCOL,
					  "zz_future_param", "nested", 1));
	if (r)
		conf_pass(cx);
}

static void check_describe_no_params(conf_ctx *cx, const void *arg)
{
	(void)arg;
	json_t *r = conf_result(cx, "memory/describe", NULL);
	if (r && str_of(r, "protocol"))
		conf_pass(cx);
	else if (r)
		conf_fail(cx, "answered %s", conf_show(cx, r));
}

static const conf_check describe_checks[] = {
	{"protocol is \"a2m/0.1\" and name is a string", check_describe_identity, NULL},
	{"capabilities include \"core\", without duplicates", check_describe_capabilities, NULL},
	{"methods include the five core methods", check_describe_core_methods, NULL},
	{"every listed method is under memory/", check_describe_namespace, NULL},
	{"methods match the declared capabilities", check_describe_methods_match, NULL},
	{"every listed method answers, never with -32601", check_describe_methods_answer, NULL},
	{"limits, when present, are positive integers", check_describe_limits, NULL},
	{"declaring protocol a2m/0.1 is accepted", check_describe_declares_01, NULL},
	{"declaring protocol a2m/0.2 is refused with -32007", check_describe_other_version,
	 "a2m/0.2"},
	{"declaring protocol a2m/1.0 is refused with -32007", check_describe_other_version,
	 "a2m/1.0"},
	{"the -32007 error's data mentions a2m/0.1", check_describe_version_data, NULL},
	{"unknown params are ignored", check_describe_unknown_params, NULL},
	{"params may be omitted", check_describe_no_params, NULL},
};

const conf_group conf_group_describe = {"core/describe", NULL, describe_checks,
					CONF_COUNT(describe_checks), 0};

/* ---- core/remember (spec §4.2, §3.1–§3.3) ---- */

static void check_remember_ids(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s first alpha", m), conf_str(cx, "%s second bravo", m),
			       conf_str(cx, "%s third charlie", m)};
	json_t *ids = write_batch(cx, m, texts, 3);
	if (!ids)
		return;
	for (size_t i = 0; i < 3; i++) {
		for (size_t j = i + 1; j < 3; j++) {
			if (json_equal(json_array_get(ids, i), json_array_get(ids, j))) {
				conf_fail(cx, "records %zu and %zu got the same id %s", i, j,
					  conf_show(cx, json_array_get(ids, i)));
				return;
			}
		}
	}
	json_t *found = conf_find(cx, m);
	if (!found)
		return;
	for (size_t i = 0; i < 3; i++) {
		const char *id = json_string_value(json_array_get(ids, i));
		json_t *rec = conf_by_id(found, id);
		if (!rec) {
			conf_fail(cx, "id %s (record %zu) is not found by recall", id, i);
			return;
		}
		if (strcmp(str_of(rec, "content") ? str_of(rec, "content") : "", texts[i]) != 0) {
			conf_fail(cx, "ids[%zu] names the record %s, not record %zu", i,
				  conf_show(cx, json_object_get(rec, "content")), i);
			return;
		}
	}
	conf_pass(cx);
}

/* A remember whose params (JSON text) must be refused with -32602. */
static void check_remember_refused(conf_ctx *cx, const void *arg)
{
	if (!conf_need_writes(cx))
		return;
	json_t *params = conf_json(cx, arg);
	if (params && conf_expect_error(cx, "memory/remember", json_incref(params),
					CONF_INVALID_PARAMS, 0))
		conf_pass(cx);
}

/* A single record (JSON text after the marker's content) that must be
** refused with -32602, and leave nothing behind. */
static void check_record_refused(conf_ctx *cx, const void *arg)
{
	if (!conf_need_writes(cx))
		return;
	const char *m = conf_marker(cx);
	json_t *extra = conf_json(cx, arg);
	if (!extra)
		return;
	json_t *rec = conf_record(cx, conf_str(cx, "%s refused", m), m);
	json_object_update(rec, extra);
	if (!conf_expect_error(cx, "memory/remember", json_pack("{s:[o]}", "records", rec),
			       CONF_INVALID_PARAMS, 0))
		return;
	json_t *found = conf_find(cx, m);
	if (found && expect_count(cx, "records written anyway", found, 0))
		conf_pass(cx);
}

static void check_remember_client_id(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *id = conf_str(cx, "client-chosen/%s:1", m);
	json_t *rec = conf_record(cx, conf_str(cx, "%s with my own id", m), m);
	json_object_set_new(rec, "id", json_string(id));
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	if (!ids)
		return;
	const char *got = json_string_value(json_array_get(ids, 0));
	if (strcmp(got, id) != 0) {
		conf_fail(cx, "returned id \"%s\" for client id \"%s\"", got, id);
		return;
	}
	json_t *found = conf_find(cx, m);
	if (found && !conf_by_id(found, id))
		conf_fail(cx, "recall does not return the record under id \"%s\"", id);
	else if (found)
		conf_pass(cx);
}

/* Spec §3.2, DECISIONS 011: a client id makes the write idempotent. */
static void check_remember_idempotent(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *id = conf_str(cx, "retry-%s", m);
	const char *text = conf_str(cx, "%s written twice", m);
	for (int attempt = 0; attempt < 2; attempt++) {
		json_t *rec = conf_record(cx, text, m);
		json_object_set_new(rec, "id", json_string(id));
		json_t *ids = conf_remember(cx, json_pack("[o]", rec));
		if (!ids)
			return;
		if (strcmp(json_string_value(json_array_get(ids, 0)), id) != 0) {
			conf_fail(cx, "write %d returned %s, expected \"%s\"", attempt + 1,
				  conf_show(cx, json_array_get(ids, 0)), id);
			return;
		}
	}
	json_t *found = conf_find(cx, m);
	if (!expect_count(cx, "recall after writing one id twice", found, 1))
		return;
	json_t *line = conf_timeline_of(cx, m);
	if (expect_count(cx, "timeline after writing one id twice", line, 1))
		conf_pass(cx);
}

static void check_remember_same_id_in_batch(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *id = conf_str(cx, "twin-%s", m);
	const char *text = conf_str(cx, "%s sent twice in one batch", m);
	json_t *a = conf_record(cx, text, m), *b = conf_record(cx, text, m);
	json_object_set_new(a, "id", json_string(id));
	json_object_set_new(b, "id", json_string(id));
	json_t *ids = conf_remember(cx, json_pack("[o,o]", a, b));
	if (!ids)
		return;
	for (size_t i = 0; i < 2; i++) {
		if (strcmp(json_string_value(json_array_get(ids, i)), id) != 0) {
			conf_fail(cx, "ids are %s, expected [\"%s\",\"%s\"]", conf_show(cx, ids),
				  id, id);
			return;
		}
	}
	json_t *found = conf_find(cx, m);
	if (expect_count(cx, "recall", found, 1))
		conf_pass(cx);
}

/* Spec §4.2: a batch SHOULD be atomic and MUST NOT return partial ids. */
static void check_remember_atomic(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_need_writes(cx))
		return;
	const char *m = conf_marker(cx);
	const char *words[5];
	json_t *records = json_array();
	for (size_t i = 0; i < 5; i++) {
		words[i] = conf_marker(cx);
		json_t *rec = conf_record(cx, conf_str(cx, "%s %s batch member", words[i], m), m);
		if (i == 2)
			json_object_set_new(rec, "content", json_integer(42));
		json_array_append_new(records, rec);
	}
	if (!conf_expect_error(cx, "memory/remember", json_pack("{s:o}", "records", records),
			       CONF_INVALID_PARAMS, 0))
		return;
	for (size_t i = 0; i < 5; i++) {
		if (i == 2)
			continue;
		json_t *found = conf_find(cx, words[i]);
		if (!found)
			return;
		if (json_array_size(found) > 0) {
			conf_fail(cx, "record %zu of the refused batch was written", i);
			return;
		}
	}
	json_t *line = conf_timeline_of(cx, m);
	if (expect_count(cx, "timeline of the refused batch", line, 0))
		conf_pass(cx);
}

/*
** Spec §3.1: metadata round-trips unchanged. Compared strictly: the same
** keys in the same order, integers exact, reals as the same double, strings
** byte for byte. Sets *why on the first difference.
*/
static int same_json(conf_ctx *cx, const json_t *want, const json_t *got, const char *path,
		     const char **why)
{
	int same;
	switch (json_typeof(want)) {
	case JSON_INTEGER:
		same = json_is_integer(got) && json_integer_value(got) == json_integer_value(want);
		break;
	case JSON_REAL:
		same = json_is_number(got) && json_number_value(got) == json_real_value(want);
		break;
	case JSON_STRING:
		same = json_is_string(got) && json_string_length(got) == json_string_length(want) &&
		       memcmp(json_string_value(got), json_string_value(want),
			      json_string_length(want)) == 0;
		break;
	case JSON_ARRAY:
		if (!json_is_array(got) || json_array_size(got) != json_array_size(want)) {
			same = 0;
			break;
		}
		for (size_t i = 0; i < json_array_size(want); i++) {
			if (!same_json(cx, json_array_get(want, i), json_array_get(got, i),
				       conf_str(cx, "%s[%zu]", path, i), why))
				return 0;
		}
		return 1;
	case JSON_OBJECT: {
		if (!json_is_object(got) || json_object_size(got) != json_object_size(want)) {
			same = 0;
			break;
		}
		void *w = json_object_iter((json_t *)want), *g = json_object_iter((json_t *)got);
		for (; w && g; w = json_object_iter_next((json_t *)want, w),
			       g = json_object_iter_next((json_t *)got, g)) {
			const char *wk = json_object_iter_key(w), *gk = json_object_iter_key(g);
			if (strcmp(wk, gk) != 0) {
				*why = conf_str(cx, "%s: key \"%s\" where \"%s\" was sent "
						"(keys reordered or renamed)", path, gk, wk);
				return 0;
			}
			if (!same_json(cx, json_object_iter_value(w), json_object_iter_value(g),
				       conf_str(cx, "%s.%s", path, wk), why))
				return 0;
		}
		return 1;
	}
	default: /* true, false, null */
		same = got && json_typeof(got) == json_typeof(want);
		break;
	}
	if (!same)
		*why = conf_str(cx, "%s: sent %s, got %s", path, conf_show(cx, want),
				got ? conf_show(cx, got) : "(absent)");
	return same;
}

/* Writes one record with this metadata (JSON text, after cfrun and cfm)
** and checks it comes back identical. */
static void round_trip_metadata(conf_ctx *cx, const char *fields)
{
	const char *m = conf_marker(cx);
	json_t *meta = conf_json(cx, conf_str(cx, "{\"cfrun\":\"%s\",\"cfm\":\"%s\",%s}",
					      conf_run_token(cx), m, fields));
	if (!meta)
		return;
	json_t *rec = json_pack("{s:s,s:O}", "content", conf_str(cx, "%s metadata", m),
				"metadata", meta);
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	json_t *found = ids ? conf_find(cx, m) : NULL;
	if (!expect_count(cx, "recall", found, 1))
		return;
	const char *why = NULL;
	json_t *got = json_object_get(json_array_get(found, 0), "metadata");
	if (same_json(cx, meta, got, "metadata", &why))
		conf_pass(cx);
	else
		conf_fail(cx, "%s", why);
}

static void check_metadata_round_trip(conf_ctx *cx, const void *arg)
{
	(void)arg;
	round_trip_metadata(cx,
		"\"zeta\":1,\"alpha\":{\"nested\":[1,\"two\",{\"three\":3.5}],"
		"\"empty_object\":{},\"empty_array\":[]},"
		"\"città\":\"東京\",\"emoji\":\"🦉 owl 👩‍💻\","
		"\"big\":9007199254740993,\"negative_big\":-9007199254740993,"
		"\"tenth\":0.1,\"tiny\":1e-7,\"pi\":3.141592653589793,"
		"\"yes\":true,\"no\":false,\"nothing\":null,"
		"\"mixed\":[null,true,false,0,-1,\"\",{},[]],"
		"\"escapes\":\"quote \\\" backslash \\\\ newline \\n tab \\t\","
		"\"b\":\"b is sent after a\",\"a\":\"and must stay before b\"");
}

static void check_metadata_nul(conf_ctx *cx, const void *arg)
{
	(void)arg;
	round_trip_metadata(cx, "\"with_nul\":\"before\\u0000after\"");
}

static void check_remember_tier_gated(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (conf_has_capability(cx, "tiers")) {
		conf_skip(cx, "the server declares \"tiers\"");
		return;
	}
	if (!conf_need_writes(cx))
		return;
	const char *m = conf_marker(cx);
	json_t *rec = conf_record(cx, conf_str(cx, "%s placed in a tier", m), m);
	json_object_set_new(rec, "tier", json_string("episodic"));
	if (!conf_expect_error(cx, "memory/remember", json_pack("{s:[o]}", "records", rec),
			       CONF_CAPABILITY_NOT_SUPPORTED, 0))
		return;
	json_t *found = conf_find(cx, m);
	if (expect_count(cx, "records written anyway", found, 0))
		conf_pass(cx);
}

/* Spec §2, DECISIONS 012: what a server does not recognise, it ignores. */
static void check_remember_unknown_fields(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	json_t *rec = conf_record(cx, conf_str(cx, "%s from a future client", m), m);
	json_object_set_new(rec, "zz_future_field", json_pack("{s:i}", "x", 1));
	json_t *result = conf_result(cx, "memory/remember",
				     json_pack("{s:[o],s:b}", "records", rec, "zz_future_param", 1));
	if (!result)
		return;
	json_t *found = conf_find(cx, m);
	if (expect_count(cx, "recall", found, 1))
		conf_pass(cx);
}

/* Spec §4.2: fields of undeclared capabilities are ignored, except tier. */
static void check_remember_undeclared_fields(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const struct {
		const char *cap, *field, *value;
	} fields[] = {
		{"salience", "salience", "0.5"},
		{"scopes", "owner", "\"someone\""},
		{"sessions", "session", "\"a-session\""},
		{"keys", "key", "\"conformance/key\""},
		{"embeddings", "embedding", "[0.1,0.2,0.3]"},
		{"external", "uri", "\"https://example.com/doc\""},
		{"external", "media_type", "\"text/plain\""},
	};
	const char *m = conf_marker(cx);
	json_t *rec = conf_record(cx, conf_str(cx, "%s with fields it may not know", m), m);
	size_t added = 0;
	for (size_t i = 0; i < CONF_COUNT(fields); i++) {
		if (!conf_has_capability(cx, fields[i].cap)) {
			json_object_set(rec, fields[i].field, conf_json(cx, fields[i].value));
			added++;
		}
	}
	if (added == 0) {
		json_decref(rec);
		conf_skip(cx, "the server declares every capability with a record field");
		return;
	}
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	json_t *found = ids ? conf_find(cx, m) : NULL;
	if (expect_count(cx, "recall", found, 1))
		conf_pass(cx);
}

/* The largest limit a check will actually send. */
#define MAX_SENT_RECORDS 100000
#define MAX_SENT_CHARS ((int64_t)64 << 20)

static void check_remember_max_records(conf_ctx *cx, const void *arg)
{
	(void)arg;
	int64_t max = conf_server_limits(cx)->max_records_per_call;
	if (max == 0) {
		conf_skip(cx, "describe declares no max_records_per_call");
		return;
	}
	if (max > MAX_SENT_RECORDS) {
		conf_skip(cx, "max_records_per_call %lld is too large to send", (long long)max);
		return;
	}
	if (!conf_need_writes(cx))
		return;
	conf_set_timeout(cx, CONF_HEAVY_TIMEOUT_MS);
	const char *m = conf_marker(cx);
	json_t *records = json_array();
	for (int64_t i = 0; i <= max; i++)
		json_array_append_new(records, conf_record(cx, m, NULL));
	if (!conf_expect_error(cx, "memory/remember", json_pack("{s:o}", "records", records),
			       CONF_INVALID_PARAMS, CONF_QUOTA_EXCEEDED))
		return;
	json_t *found = conf_find(cx, m);
	if (expect_count(cx, "records written anyway", found, 0))
		conf_pass(cx);
}

/* A string of exactly chars code points: the marker, a space, then "é"s,
** two bytes each, so a server counting bytes is caught. */
static char *text_of_length(const char *marker, int64_t chars)
{
	size_t mlen = strlen(marker);
	if (chars < (int64_t)mlen + 1)
		return NULL;
	size_t fill = (size_t)(chars - (int64_t)mlen - 1);
	char *s = malloc(mlen + 1 + 2 * fill + 1);
	if (!s)
		return NULL;
	memcpy(s, marker, mlen);
	s[mlen] = ' ';
	char *p = s + mlen + 1;
	for (size_t i = 0; i < fill; i++) {
		*p++ = (char)0xc3;
		*p++ = (char)0xa9;
	}
	*p = '\0';
	return s;
}

/* Writes content of the limit plus over characters; the arg is over. */
static void check_remember_content_length(conf_ctx *cx, const void *arg)
{
	int64_t over = *(const int64_t *)arg;
	int64_t max = conf_server_limits(cx)->max_content_length;
	if (max == 0) {
		conf_skip(cx, "describe declares no max_content_length");
		return;
	}
	if (max > MAX_SENT_CHARS) {
		conf_skip(cx, "max_content_length %lld is too large to send", (long long)max);
		return;
	}
	if (!conf_need_writes(cx))
		return;
	conf_set_timeout(cx, CONF_HEAVY_TIMEOUT_MS);
	const char *m = conf_marker(cx);
	char *text = text_of_length(m, max + over);
	if (!text) {
		conf_skip(cx, "max_content_length %lld is shorter than a marker", (long long)max);
		return;
	}
	json_t *rec = conf_record(cx, text, m);
	free(text);
	if (over > 0) {
		if (!conf_expect_error(cx, "memory/remember", json_pack("{s:[o]}", "records", rec),
				       CONF_INVALID_PARAMS, CONF_QUOTA_EXCEEDED))
			return;
		json_t *found = conf_find(cx, m);
		if (expect_count(cx, "records written anyway", found, 0))
			conf_pass(cx);
		return;
	}
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	if (!ids)
		return;
	/* Do not leave a record this size for later recalls to carry. */
	conf_call(cx, "memory/forget", json_pack("{s:O}", "ids", ids));
	conf_pass(cx);
}

static const int64_t one_over = 1, exactly = 0;

static void check_remember_created_at(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *text = conf_str(cx, "%s timestamped", m);
	int64_t before = conf_now_ms();
	json_t *ids = write_batch(cx, m, &text, 1);
	json_t *found = ids ? conf_find(cx, m) : NULL;
	if (!expect_count(cx, "recall", found, 1))
		return;
	json_t *at = json_object_get(json_array_get(found, 0), "created_at");
	int64_t ms;
	if (!is_wire_timestamp(json_string_value(at))) {
		conf_fail(cx, "created_at is %s, expected YYYY-MM-DDTHH:MM:SS.mmmZ",
			  conf_show(cx, at));
		return;
	}
	if (conf_parse_time(json_string_value(at), &ms) != 0 || ms < before - 60000 ||
	    ms > conf_now_ms() + 60000) {
		conf_fail(cx, "created_at %s is not within a minute of now", json_string_value(at));
		return;
	}
	conf_pass(cx);
}

static void check_remember_roles(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const char *const roles[] = {"user", "assistant", "tool", "system", "memory",
					    "narrator"};
	const char *m = conf_marker(cx);
	json_t *records = json_array();
	const char *words[CONF_COUNT(roles)];
	for (size_t i = 0; i < CONF_COUNT(roles); i++) {
		words[i] = conf_marker(cx);
		json_t *rec = conf_record(cx, conf_str(cx, "%s %s spoke", m, words[i]), m);
		json_object_set_new(rec, "role", json_string(roles[i]));
		json_array_append_new(records, rec);
	}
	json_t *ids = conf_remember(cx, records);
	json_t *found = ids ? conf_find(cx, m) : NULL;
	if (!expect_count(cx, "recall", found, CONF_COUNT(roles)))
		return;
	for (size_t i = 0; i < CONF_COUNT(roles); i++) {
		json_t *rec = conf_by_content(found, words[i]);
		const char *role = str_of(rec, "role");
		if (!role || strcmp(role, roles[i]) != 0) {
			conf_fail(cx, "role \"%s\" came back as %s", roles[i],
				  conf_show(cx, json_object_get(rec, "role")));
			return;
		}
	}
	conf_pass(cx);
}

static void check_remember_content_exact(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *text = conf_str(cx, "%s line one\nline two\t\"quoted\" \\ città 東京 🦉 "
				    "\xe2\x80\xa8 end", m);
	json_t *ids = write_batch(cx, m, &text, 1);
	json_t *found = ids ? conf_find(cx, m) : NULL;
	if (!expect_count(cx, "recall", found, 1))
		return;
	const char *got = str_of(json_array_get(found, 0), "content");
	if (!got || strcmp(got, text) != 0)
		conf_fail(cx, "content came back as %s",
			  conf_show(cx, json_object_get(json_array_get(found, 0), "content")));
	else
		conf_pass(cx);
}

static const conf_check remember_checks[] = {
	{"returns one distinct string id per record, in order", check_remember_ids, NULL},
	{"content null is -32602", check_record_refused, "{\"content\":null}"},
	{"content as a number is -32602", check_record_refused, "{\"content\":42}"},
	{"content as an object is -32602", check_record_refused, "{\"content\":{\"text\":\"x\"}}"},
	{"content missing is -32602", check_remember_refused,
	 "{\"records\":[{\"role\":\"user\",\"metadata\":{\"k\":1}}]}"},
	{"records missing is -32602", check_remember_refused, "{}"},
	{"records not an array is -32602", check_remember_refused,
	 "{\"records\":{\"content\":\"not in an array\"}}"},
	{"records empty is -32602", check_remember_refused, "{\"records\":[]}"},
	{"a record that is not an object is -32602", check_remember_refused,
	 "{\"records\":[\"just a string\"]}"},
	{"metadata as a string is -32602", check_record_refused, "{\"metadata\":\"x\"}"},
	{"metadata as an array is -32602", check_record_refused, "{\"metadata\":[1,2]}"},
	{"a client-supplied id is returned as-is", check_remember_client_id, NULL},
	{"writing a client id again returns it and adds no record", check_remember_idempotent,
	 NULL},
	{"one client id twice in a batch is one record", check_remember_same_id_in_batch, NULL},
	{"a batch with an invalid third record writes nothing", check_remember_atomic, NULL},
	{"metadata round-trips exactly", check_metadata_round_trip, NULL},
	{"metadata strings holding U+0000 round-trip", check_metadata_nul, NULL},
	{"tier without the tiers capability is -32003", check_remember_tier_gated, NULL},
	{"unknown record fields and params are ignored", check_remember_unknown_fields, NULL},
	{"fields of undeclared capabilities are ignored", check_remember_undeclared_fields,
	 NULL},
	{"more than max_records_per_call records is refused", check_remember_max_records, NULL},
	{"content over max_content_length is refused, nothing written",
	 check_remember_content_length, &one_over},
	{"content of exactly max_content_length is accepted", check_remember_content_length,
	 &exactly},
	{"created_at is RFC 3339 UTC with milliseconds, and recent", check_remember_created_at,
	 NULL},
	{"role round-trips", check_remember_roles, NULL},
	{"content round-trips exactly", check_remember_content_exact, NULL},
};

const conf_group conf_group_remember = {"core/remember", NULL, remember_checks,
					CONF_COUNT(remember_checks), 0};

/* ---- core/recall (spec §4.3, §5) ---- */

/* Three records written a tick apart; with no query they come newest first. */
static void recency_order(conf_ctx *cx, json_t *params)
{
	const char *m = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s oldest", m), conf_str(cx, "%s middle", m),
			       conf_str(cx, "%s newest", m)};
	const char *newest_first[] = {texts[2], texts[1], texts[0]};
	if (!write_each(cx, m, texts, 3)) {
		json_decref(params);
		return;
	}
	json_object_set_new(params, "where", json_pack("{s:s}", "cfm", m));
	json_t *records = recall(cx, params);
	if (records && scores_ok(cx, "recall", records) &&
	    contents_are(cx, "recall without a query", tagged(cx, records, m), newest_first, 3))
		conf_pass(cx);
}

static void check_recall_no_query(conf_ctx *cx, const void *arg)
{
	(void)arg;
	recency_order(cx, json_object());
}

static void check_recall_empty_query(conf_ctx *cx, const void *arg)
{
	(void)arg;
	recency_order(cx, json_pack("{s:s}", "query", ""));
}

static void check_recall_finds_word(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx), *word = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s the lighthouse keeper logs %s at dusk", m, word),
			       conf_str(cx, "%s an unrelated note about bread", m)};
	if (!write_batch(cx, m, texts, 2))
		return;
	json_t *records = recall(cx, json_pack("{s:s}", "query", word));
	if (!records)
		return;
	if (!conf_by_content(records, word))
		conf_fail(cx, "recall for \"%s\" did not return the record containing it", word);
	else
		conf_pass(cx);
}

static void check_recall_ranks_topic(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[] = {
		conf_str(cx, "%s the cafeteria serves tomato soup on tuesdays", m),
		conf_str(cx, "%s the deploy key rotates every ninety days; deploy key rotation "
			 "is automatic", m),
		conf_str(cx, "%s the parking garage closes at midnight", m),
	};
	if (!write_batch(cx, m, texts, 3))
		return;
	json_t *records = recall(cx, json_pack("{s:s,s:{s:s}}", "query", "deploy key rotation",
					       "where", "cfm", m));
	if (!records)
		return;
	if (json_array_size(records) == 0) {
		conf_fail(cx, "recall for \"deploy key rotation\" returned nothing");
		return;
	}
	const char *first = str_of(json_array_get(records, 0), "content");
	if (!first || strcmp(first, texts[1]) != 0)
		conf_fail(cx, "ranked %s first, above the record about deploy key rotation",
			  conf_show(cx, json_object_get(json_array_get(records, 0), "content")));
	else
		conf_pass(cx);
}

static void check_recall_no_match(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *text = conf_str(cx, "%s something that is stored", m);
	if (!write_batch(cx, m, &text, 1))
		return;
	const char *never = conf_marker(cx);
	json_t *records = recall(cx, json_pack("{s:s}", "query", never));
	if (records && expect_count(cx, conf_str(cx, "recall for \"%s\", written nowhere", never),
				    records, 0))
		conf_pass(cx);
}

/* Writes n records containing a fresh marker, in one batch; returns it. */
static const char *write_many(conf_ctx *cx, size_t n)
{
	const char *m = conf_marker(cx);
	json_t *records = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(records, conf_record(cx, conf_str(cx, "%s item %zu", m, i), m));
	return conf_remember(cx, records) ? m : NULL;
}

#define MANY 30

static void check_recall_default_limit(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, MANY);
	json_t *records = m ? recall(cx, json_pack("{s:s}", "query", m)) : NULL;
	if (!records)
		return;
	size_t n = json_array_size(records);
	int64_t max = conf_server_limits(cx)->max_recall_limit;
	if (n == 0)
		conf_fail(cx, "recall without a limit returned nothing");
	else if (max && (int64_t)n > max)
		conf_fail(cx, "returned %zu records, over max_recall_limit %lld", n, (long long)max);
	else
		conf_pass(cx);
}

static void check_recall_limit_one(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, 3);
	json_t *records = m ? recall(cx, json_pack("{s:s,s:i}", "query", m, "limit", 1)) : NULL;
	if (!expect_count(cx, "recall with limit 1", records, 1))
		return;
	if (!conf_by_content(records, m))
		conf_fail(cx, "the one record returned does not contain the query");
	else
		conf_pass(cx);
}

/* Spec §4.3: limit 0 is "no limit" only when no max_recall_limit is declared. */
static void check_recall_limit_zero(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, MANY);
	json_t *records = m ? recall(cx, json_pack("{s:s,s:i}", "query", m, "limit", 0)) : NULL;
	if (!records)
		return;
	int64_t max = conf_server_limits(cx)->max_recall_limit;
	size_t n = 0;
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		const char *c = str_of(rec, "content");
		if (c && strstr(c, m))
			n++;
	}
	if (!max) {
		if (n != MANY)
			conf_fail(cx, "limit 0 with no max_recall_limit returned %zu of the %d "
				  "matching records, expected all", n, MANY);
		else
			conf_pass(cx);
	} else if ((int64_t)json_array_size(records) > max) {
		conf_fail(cx, "limit 0 returned %zu records, over max_recall_limit %lld",
			  json_array_size(records), (long long)max);
	} else if (n == 0) {
		conf_fail(cx, "limit 0 returned none of the matching records");
	} else {
		conf_pass(cx);
	}
}

static void check_recall_limit_over_max(conf_ctx *cx, const void *arg)
{
	(void)arg;
	int64_t max = conf_server_limits(cx)->max_recall_limit;
	if (!max) {
		conf_skip(cx, "describe declares no max_recall_limit");
		return;
	}
	if (conf_expect_error(cx, "memory/recall",
			      json_pack("{s:s,s:I}", "query", "anything", "limit",
					(json_int_t)(max + 1)),
			      CONF_INVALID_PARAMS, CONF_QUOTA_EXCEEDED))
		conf_pass(cx);
}

/* A method call whose params (JSON text) must be refused with -32602. */
static void expect_invalid(conf_ctx *cx, const char *method, const char *params_text)
{
	json_t *params = conf_json(cx, params_text);
	if (params && conf_expect_error(cx, method, json_incref(params), CONF_INVALID_PARAMS, 0))
		conf_pass(cx);
}

static void check_recall_invalid(conf_ctx *cx, const void *arg)
{
	expect_invalid(cx, "memory/recall", arg);
}

static void check_recall_min_score_high(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, 2);
	json_t *records = m ? recall(cx, json_pack("{s:s,s:f}", "query", m, "min_score", 2.0))
			    : NULL;
	if (records && expect_count(cx, "recall with min_score 2.0", records, 0))
		conf_pass(cx);
}

static void check_recall_min_score_zero(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, 3);
	json_t *records = m ? recall(cx, json_pack("{s:s,s:f,s:{s:s}}", "query", m, "min_score",
						   0.0, "where", "cfm", m))
			    : NULL;
	if (records && expect_count(cx, "recall with min_score 0", tagged(cx, records, m), 3))
		conf_pass(cx);
}

static void check_recall_scores(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[] = {
		conf_str(cx, "%s once", m),
		conf_str(cx, "%s %s twice", m, m),
		conf_str(cx, "%s and a much longer record about other things entirely, "
			 "mentioning it only in passing among many other words", m),
	};
	if (!write_batch(cx, m, texts, 3))
		return;
	json_t *with_query = recall(cx, json_pack("{s:s}", "query", m));
	if (!with_query || !scores_ok(cx, "recall with a query", with_query))
		return;
	if (json_array_size(with_query) == 0) {
		conf_fail(cx, "recall for the marker returned nothing");
		return;
	}
	json_t *without = recall(cx, json_pack("{s:i}", "limit", 10));
	if (without && scores_ok(cx, "recall without a query", without))
		conf_pass(cx);
}

/* Writes four records with roles and colours, for the where checks. */
static const char *write_palette(conf_ctx *cx, const char *texts[4])
{
	static const char *const roles[] = {"user", "assistant", "user", "tool"};
	static const char *const colours[] = {"red", "blue", "green", "blue"};
	const char *m = conf_marker(cx);
	json_t *records = json_array();
	for (size_t i = 0; i < 4; i++) {
		texts[i] = conf_str(cx, "%s %s record said by the %s", m, colours[i], roles[i]);
		json_t *rec = conf_record(cx, texts[i], m);
		json_object_set_new(rec, "role", json_string(roles[i]));
		json_object_set_new(json_object_get(rec, "metadata"), "colour",
				    json_string(colours[i]));
		json_array_append_new(records, rec);
	}
	return conf_remember(cx, records) ? m : NULL;
}

/* The contents of records, sorted, compared as a set with want[0..n). */
static int same_set(conf_ctx *cx, const char *what, const json_t *records,
		    const char *const *want, size_t n)
{
	int same = json_array_size(records) == n;
	for (size_t i = 0; same && i < n; i++)
		same = conf_by_content(records, want[i]) != NULL;
	if (!same) {
		json_t *got = conf_keep(cx, json_array());
		size_t i;
		json_t *rec;
		json_array_foreach(records, i, rec)
			json_array_append(got, json_object_get(rec, "content"));
		conf_fail(cx, "%s returned %s", what, conf_show(cx, got));
	}
	return same;
}

/* Runs recall or timeline with where = {"cfm": marker} plus filter (JSON
** text), and checks the records are exactly those of texts picked by mask. */
static void check_where(conf_ctx *cx, const char *method, const char *filter, unsigned mask)
{
	const char *texts[4];
	const char *m = write_palette(cx, texts);
	if (!m)
		return;
	json_t *where = conf_json(cx, filter);
	if (!where)
		return;
	json_t *params = json_pack("{s:{s:s}}", "where", "cfm", m);
	json_object_update(json_object_get(params, "where"), where);
	json_t *records = strcmp(method, "memory/recall") == 0 ? recall(cx, params)
							      : timeline(cx, params);
	const char *want[4];
	size_t n = 0;
	for (size_t i = 0; i < 4; i++) {
		if (mask & (1u << i))
			want[n++] = texts[i];
	}
	if (!records)
		return;
	if (strcmp(method, "memory/timeline") == 0) {
		/* One batch: the order written is the order read (spec §4.4). */
		if (contents_are(cx, conf_str(cx, "timeline where %s", filter), records, want, n))
			conf_pass(cx);
	} else if (same_set(cx, conf_str(cx, "recall where %s", filter), records, want, n)) {
		conf_pass(cx);
	}
}

typedef struct where_case {
	const char *filter;
	unsigned mask; /* which of the four palette records match */
} where_case;

static const where_case where_role = {"{\"role\":\"user\"}", 0x5};
static const where_case where_meta = {"{\"colour\":\"blue\"}", 0xa};
static const where_case where_any = {"{\"colour\":[\"red\",\"green\"]}", 0x5};
static const where_case where_none = {"{\"colour\":\"purple\"}", 0x0};
static const where_case where_unknown_key = {"{\"zz_no_such_key\":\"x\"}", 0x0};

static void check_recall_where(conf_ctx *cx, const void *arg)
{
	const where_case *w = arg;
	check_where(cx, "memory/recall", w->filter, w->mask);
}

static void check_timeline_where(conf_ctx *cx, const void *arg)
{
	const where_case *w = arg;
	check_where(cx, "memory/timeline", w->filter, w->mask);
}

/* Spec §3.1: id, content and created_at are required on every record. */
static int records_complete(conf_ctx *cx, const char *what, const json_t *records)
{
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		const char *id = str_of(rec, "id");
		if (!id || !*id || !json_is_string(json_object_get(rec, "content")) ||
		    !is_wire_timestamp(str_of(rec, "created_at"))) {
			conf_fail(cx, "%s: record %s lacks a string id, a string content or an "
				  "RFC 3339 created_at", what, conf_show(cx, rec));
			return 0;
		}
	}
	return 1;
}

static void check_recall_record_fields(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, 3);
	json_t *records = m ? recall(cx, json_pack("{s:s}", "query", m)) : NULL;
	if (!records)
		return;
	if (json_array_size(records) == 0)
		conf_fail(cx, "recall for the marker returned nothing");
	else if (records_complete(cx, "recall", records))
		conf_pass(cx);
}

static void check_recall_unknown_params(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, 1);
	json_t *records = m ? recall(cx, json_pack("{s:s,s:{s:i},s:s}", "query", m,
						   "zz_future_param", "x", 1, "zz_mode", "fast"))
			    : NULL;
	if (records && expect_count(cx, "recall", tagged(cx, records, m), 1))
		conf_pass(cx);
}

static const conf_check recall_checks[] = {
	{"without a query, records come newest first", check_recall_no_query, NULL},
	{"an empty query behaves like no query", check_recall_empty_query, NULL},
	{"a query finds the record containing its word", check_recall_finds_word, NULL},
	{"a topical match ranks above unrelated records", check_recall_ranks_topic, NULL},
	{"a query matching nothing returns no records", check_recall_no_match, NULL},
	{"without a limit, a default applies", check_recall_default_limit, NULL},
	{"limit 1 returns one record", check_recall_limit_one, NULL},
	{"limit 0 is no limit, or capped by max_recall_limit", check_recall_limit_zero, NULL},
	{"limit over max_recall_limit is refused", check_recall_limit_over_max, NULL},
	{"a negative limit is -32602", check_recall_invalid, "{\"query\":\"x\",\"limit\":-1}"},
	{"a fractional limit is -32602", check_recall_invalid, "{\"query\":\"x\",\"limit\":1.5}"},
	{"a string limit is -32602", check_recall_invalid, "{\"query\":\"x\",\"limit\":\"3\"}"},
	{"a query that is not a string is -32602", check_recall_invalid, "{\"query\":42}"},
	{"where that is not an object is -32602", check_recall_invalid,
	 "{\"query\":\"x\",\"where\":\"role=user\"}"},
	{"min_score 2.0 returns nothing", check_recall_min_score_high, NULL},
	{"min_score 0 returns every match", check_recall_min_score_zero, NULL},
	{"every score is a number in [0, 1], descending", check_recall_scores, NULL},
	{"where matches a record field (role)", check_recall_where, &where_role},
	{"where matches a metadata key", check_recall_where, &where_meta},
	{"where with an array value means any of", check_recall_where, &where_any},
	{"where with a value nobody has returns nothing", check_recall_where, &where_none},
	{"where on a key nobody has returns nothing", check_recall_where, &where_unknown_key},
	{"records carry id, content and created_at", check_recall_record_fields, NULL},
	{"unknown params are ignored", check_recall_unknown_params, NULL},
};

const conf_group conf_group_recall = {"core/recall", NULL, recall_checks,
				      CONF_COUNT(recall_checks), 0};

/* ---- core/timeline (spec §4.4) ---- */

static int ascending(conf_ctx *cx, const char *what, const json_t *records)
{
	size_t i;
	json_t *rec;
	int64_t prev = 0;
	json_array_foreach(records, i, rec) {
		int64_t ms;
		const char *at = str_of(rec, "created_at");
		if (!at || conf_parse_time(at, &ms) != 0) {
			conf_fail(cx, "%s: record %zu has created_at %s", what, i,
				  conf_show(cx, json_object_get(rec, "created_at")));
			return 0;
		}
		if (i > 0 && ms < prev) {
			conf_fail(cx, "%s: %s follows a later record; timeline must ascend", what, at);
			return 0;
		}
		prev = ms;
	}
	return 1;
}

static void check_timeline_ascending(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s first", m), conf_str(cx, "%s second", m),
			       conf_str(cx, "%s third", m)};
	if (!write_each(cx, m, texts, 3))
		return;
	json_t *all = timeline(cx, json_pack("{s:i}", "limit", 50));
	if (!all || !ascending(cx, "timeline limit 50", all) ||
	    !records_complete(cx, "timeline", all))
		return;
	json_t *ours = conf_timeline_of(cx, m);
	if (ours && ascending(cx, "timeline of three writes", ours) &&
	    contents_are(cx, "timeline of three writes", ours, texts, 3))
		conf_pass(cx);
}

/* Spec §4.4: limit N is the most recent N, still oldest first. Relies on
** nobody else writing to the store while the suite runs. */
static void check_timeline_limit_newest(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[5];
	for (size_t i = 0; i < 5; i++)
		texts[i] = conf_str(cx, "%s number %zu", m, i + 1);
	if (!write_each(cx, m, texts, 5))
		return;
	json_t *records = timeline(cx, json_pack("{s:i}", "limit", 3));
	if (records && contents_are(cx, "timeline limit 3 after five writes", records, texts + 2, 3))
		conf_pass(cx);
}

static void check_timeline_batch_order(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s one", m), conf_str(cx, "%s two", m),
			       conf_str(cx, "%s three", m), conf_str(cx, "%s four", m),
			       conf_str(cx, "%s five", m)};
	if (!write_batch(cx, m, texts, 5))
		return;
	for (int call = 1; call <= 2; call++) {
		json_t *records = conf_timeline_of(cx, m);
		if (!records || !contents_are(cx, conf_str(cx, "timeline call %d", call), records,
					      texts, 5))
			return;
	}
	json_t *newest = timeline(cx, json_pack("{s:i}", "limit", 5));
	if (newest && contents_are(cx, "timeline limit 5", newest, texts, 5))
		conf_pass(cx);
}

static void check_timeline_invalid(conf_ctx *cx, const void *arg)
{
	expect_invalid(cx, "memory/timeline", arg);
}

static void check_timeline_unknown_params(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = write_many(cx, 1);
	json_t *records = m ? timeline(cx, json_pack("{s:{s:s},s:b}", "where", "cfm", m,
						     "zz_future_param", 1))
			    : NULL;
	if (records && expect_count(cx, "timeline", tagged(cx, records, m), 1))
		conf_pass(cx);
}

static const conf_check timeline_checks[] = {
	{"records ascend by created_at", check_timeline_ascending, NULL},
	{"limit N returns the newest N, oldest first", check_timeline_limit_newest, NULL},
	{"one batch reads back in the order written, every time", check_timeline_batch_order,
	 NULL},
	{"where matches a record field (role)", check_timeline_where, &where_role},
	{"where matches a metadata key", check_timeline_where, &where_meta},
	{"where with an array value means any of", check_timeline_where, &where_any},
	{"a negative limit is -32602", check_timeline_invalid, "{\"limit\":-1}"},
	{"a string limit is -32602", check_timeline_invalid, "{\"limit\":\"3\"}"},
	{"unknown params are ignored", check_timeline_unknown_params, NULL},
};

const conf_group conf_group_timeline = {"core/timeline", NULL, timeline_checks,
					CONF_COUNT(timeline_checks), 0};

/* ---- core/forget (spec §4.5) ---- */

/* A forget that selects nothing must be refused (params JSON text or NULL). */
static void check_forget_no_selector(conf_ctx *cx, const void *arg)
{
	if (!conf_need_writes(cx))
		return;
	json_t *params = arg ? conf_json(cx, arg) : NULL;
	if (arg && !params)
		return;
	if (conf_expect_error(cx, "memory/forget", json_incref(params), CONF_INVALID_PARAMS, 0))
		conf_pass(cx);
}

/*
** Only owner selects nothing either (spec §4.5). Without scopes, owner is
** also a field of an undeclared capability, which §7 lets a server refuse
** with -32003 — and refusing it is the safer reading for a delete, since
** ignoring it would widen what a later forget with a selector removes.
*/
static void check_forget_only_owner(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_need_writes(cx))
		return;
	int alt = conf_has_capability(cx, "scopes") ? 0 : CONF_CAPABILITY_NOT_SUPPORTED;
	if (conf_expect_error(cx, "memory/forget", json_pack("{s:s}", "owner", "someone"),
			      CONF_INVALID_PARAMS, alt))
		conf_pass(cx);
}

/* The forgotten count of a forget result; fails the check if malformed. */
static int forgotten(conf_ctx *cx, json_t *result, int64_t *n)
{
	json_t *f = json_object_get(result, "forgotten");
	if (!json_is_integer(f) || json_integer_value(f) < 0) {
		conf_fail(cx, "forget returned %s, expected {\"forgotten\": integer}",
			  conf_show(cx, result));
		return 0;
	}
	*n = json_integer_value(f);
	return 1;
}

static int forget_counts(conf_ctx *cx, json_t *params, int64_t want)
{
	/* Kept, so the failure message below can still show it. */
	conf_keep(cx, params);
	json_t *result = conf_result(cx, "memory/forget", json_incref(params));
	int64_t n;
	if (!result || !forgotten(cx, result, &n))
		return 0;
	if (n != want) {
		conf_fail(cx, "forget %s reported %lld forgotten, expected %lld",
			  conf_show(cx, params), (long long)n, (long long)want);
		return 0;
	}
	return 1;
}

static void check_forget_ids(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s doomed one", m), conf_str(cx, "%s survivor", m),
			       conf_str(cx, "%s doomed two", m)};
	json_t *ids = write_batch(cx, m, texts, 3);
	if (!ids)
		return;
	if (!forget_counts(cx, json_pack("{s:[O,O]}", "ids", json_array_get(ids, 0),
					 json_array_get(ids, 2)), 2))
		return;
	json_t *found = conf_find(cx, m);
	if (!found || !contents_are(cx, "recall after forgetting two of three", found,
				    &texts[1], 1))
		return;
	json_t *line = conf_timeline_of(cx, m);
	if (line && contents_are(cx, "timeline after forgetting two of three", line, &texts[1], 1))
		conf_pass(cx);
}

static void check_forget_unknown_ids(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *text = conf_str(cx, "%s real", m);
	json_t *ids = write_batch(cx, m, &text, 1);
	if (!ids)
		return;
	const char *ghost = conf_str(cx, "no-such-id-%s", m);
	if (!forget_counts(cx, json_pack("{s:[s]}", "ids", ghost), 0))
		return;
	if (forget_counts(cx, json_pack("{s:[s,O]}", "ids", ghost, json_array_get(ids, 0)), 1))
		conf_pass(cx);
}

static void check_forget_result_shape(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_need_writes(cx))
		return;
	json_t *result = conf_result(cx, "memory/forget",
				     json_pack("{s:[s]}", "ids",
					       conf_str(cx, "no-such-id-%s", conf_marker(cx))));
	int64_t n;
	if (result && forgotten(cx, result, &n))
		conf_pass(cx);
}

/*
** Before a forget by a filter, the same filter is read back: if it selects
** anything but this check's records, the server's filtering is broken and a
** forget with it could delete records that are not ours. Fails the check
** and returns 0 then.
*/
static int selects_only(conf_ctx *cx, const json_t *records, const char *word)
{
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		const char *c = str_of(rec, "content");
		if (!c || !strstr(c, word)) {
			conf_skip(cx, "reading the filter back returns %s, which it should not "
				  "select: not risking a forget with it",
				  conf_show(cx, json_object_get(rec, "content")));
			return 0;
		}
	}
	return 1;
}

static void check_forget_where(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *doomed = conf_marker(cx), *kept = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s first", doomed), conf_str(cx, "%s second", doomed),
			       conf_str(cx, "%s third", doomed)};
	const char *keep_text = conf_str(cx, "%s stays", kept);
	if (!write_batch(cx, doomed, texts, 3) || !write_batch(cx, kept, &keep_text, 1))
		return;
	json_t *preview = timeline(cx, json_pack("{s:{s:s}}", "where", "cfm", doomed));
	if (!preview || !selects_only(cx, preview, doomed))
		return;
	if (!forget_counts(cx, json_pack("{s:{s:s}}", "where", "cfm", doomed), 3))
		return;
	json_t *gone = conf_find(cx, doomed);
	if (!expect_count(cx, "recall after forget by where", gone, 0))
		return;
	json_t *still = conf_find(cx, kept);
	if (expect_count(cx, "the record outside the filter", still, 1))
		conf_pass(cx);
}

static void check_forget_query(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx), *doomed = conf_marker(cx), *kept = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s %s goes", m, doomed),
			       conf_str(cx, "%s %s stays", m, kept)};
	if (!write_batch(cx, m, texts, 2))
		return;
	json_t *preview = recall(cx, json_pack("{s:s,s:i}", "query", doomed, "limit", 0));
	if (!preview || !selects_only(cx, preview, doomed))
		return;
	if (!forget_counts(cx, json_pack("{s:s}", "query", doomed), 1))
		return;
	json_t *left = conf_timeline_of(cx, m);
	if (left && contents_are(cx, "after forget by query", left, &texts[1], 1))
		conf_pass(cx);
}

static void check_forget_invalid(conf_ctx *cx, const void *arg)
{
	if (conf_need_writes(cx))
		expect_invalid(cx, "memory/forget", arg);
}

/* Spec §2.1: a read-only server refuses both write methods. */
static void check_forget_read_only(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_read_only(cx)) {
		conf_skip(cx, "the server accepts writes");
		return;
	}
	if (conf_expect_error(cx, "memory/forget", json_pack("{s:[s]}", "ids", "any"),
			      CONF_READ_ONLY, 0))
		conf_pass(cx);
}

static const conf_check forget_checks[] = {
	{"no params at all is -32602", check_forget_no_selector, NULL},
	{"empty params are -32602", check_forget_no_selector, "{}"},
	{"only owner is refused (-32602; -32003 also without scopes)", check_forget_only_owner,
	 NULL},
	{"forget by ids counts them and removes them from recall and timeline",
	 check_forget_ids, NULL},
	{"unknown ids are not counted", check_forget_unknown_ids, NULL},
	{"the result is {\"forgotten\": integer}", check_forget_result_shape, NULL},
	{"forget by where removes exactly the matches", check_forget_where, NULL},
	{"forget by query removes only matching records", check_forget_query, NULL},
	{"ids that are not an array are -32602", check_forget_invalid, "{\"ids\":\"abc\"}"},
	{"a read-only server refuses forget with -32004 too", check_forget_read_only, NULL},
};

const conf_group conf_group_forget = {"core/forget", NULL, forget_checks,
				      CONF_COUNT(forget_checks), 0};
