/*
** check_describe.c — the core/describe group: what memory/describe
** must report (spec §4.1) — identity, capabilities, methods, limits — and
** how it answers the protocol version a client asks for (spec §2).
*/
#include <stdlib.h>
#include <string.h>

#include "suite.h"

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
	const char *protocol = conf_str_of(d, "protocol");
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

/*
** Our extensions (docs/PROTOCOL.md, Extensions) are capabilities named
** x-...; a member of describe named as one appears only when it is
** declared, and is an object; the deprecated "extensions" list names
** exactly the router's three that are declared, as they were called before.
*/
static void check_describe_one_vocabulary(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const char *const routed[][2] = {
		{"x-import", "import"}, {"x-touch", "touch"}, {"x-all-owners", "all_owners"}};
	const json_t *d = described(cx);
	json_t *caps = d ? string_set(cx, d, "capabilities") : NULL;
	if (!caps)
		return;
	int n, ours = 0;
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)d, key, v) {
		if (strncmp(key, "x-", 2) != 0)
			continue;
		ours = 1;
		if (!holds(caps, key, &n) || !json_is_object(v)) {
			conf_fail(cx, "describe has a member %s %s, which is not an object of a "
				  "declared capability (capabilities %s)", key, conf_show(cx, v),
				  conf_show(cx, caps));
			return;
		}
	}
	const json_t *old = json_object_get(d, "extensions");
	size_t expected = 0;
	for (size_t i = 0; i < CONF_COUNT(routed); i++) {
		int declared = holds(caps, routed[i][0], &n);
		ours |= declared;
		expected += (size_t)declared;
		if (old && declared != holds(old, routed[i][1], &n)) {
			conf_fail(cx, "capabilities %s and the deprecated extensions %s disagree on %s",
				  conf_show(cx, caps), conf_show(cx, old), routed[i][0]);
			return;
		}
	}
	if (!ours && !old) {
		conf_skip(cx, "the server declares none of our x- extensions");
		return;
	}
	if (old && (!json_is_array(old) || json_array_size(old) != expected)) {
		conf_fail(cx, "the deprecated extensions %s names other than the declared x-import, "
			  "x-touch and x-all-owners", conf_show(cx, old));
		return;
	}
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
	const char *protocol = conf_str_of(r, "protocol");
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
		const char *protocol = conf_str_of(result, "protocol");
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
	if (r && conf_str_of(r, "protocol"))
		conf_pass(cx);
	else if (r)
		conf_fail(cx, "answered %s", conf_show(cx, r));
}

static const conf_check describe_checks[] = {
	{"protocol is \"a2m/0.1\" and name is a string", check_describe_identity, NULL},
	{"capabilities include \"core\", without duplicates", check_describe_capabilities, NULL},
	{"our x- extensions are capabilities, and the deprecated extensions list agrees",
	 check_describe_one_vocabulary, NULL},
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
