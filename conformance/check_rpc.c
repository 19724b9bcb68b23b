/*
** check_rpc.c — checks of the envelope every A2M message travels in:
** the JSON-RPC 2.0 request and response objects (group "rpc") and the stdio
** framing of spec §8.2 (group "stdio").
**
** Most of these send a line no well-behaved client would, byte for byte,
** and read the very next message the server writes: what matters is not
** only the error code but that exactly one answer comes back, with the id
** the rules give it, and that the server is still serving afterwards.
**
** Request ids in the raw lines are strings ("r1", "p2", ...) so they can
** never be mistaken for the integer ids the client gives ordinary requests.
*/
#include <stdlib.h>
#include <string.h>

#include "suite.h"

/* Which id an answer to a refused line must carry. */
enum id_rule {
	ID_NULL,        /* the id could not be read: JSON-RPC says null */
	ID_NULL_OR_ECHO /* the id was readable though the request was not valid:
	                   JSON-RPC allows null, most servers echo it */
};

typedef struct raw_case {
	const char *line;  /* without its '\n' */
	size_t len;        /* 0: strlen(line); set when the line holds a NUL */
	int code, alt;     /* the expected error code, and another allowed (or 0) */
	enum id_rule ids;
	const char *id;    /* for ID_NULL_OR_ECHO: the id the line carries */
} raw_case;

/* A line the server must refuse with one error and then keep serving. */
static void check_refused_line(conf_ctx *cx, const void *arg)
{
	const raw_case *rc = arg;
	size_t len = rc->len ? rc->len : strlen(rc->line);
	if (!conf_send_raw(cx, rc->line, len) || !conf_send_raw(cx, "\n", 1))
		return;
	json_t *msg = conf_recv(cx);
	if (!msg)
		return;
	int code;
	if (!conf_error_code(msg, &code)) {
		conf_fail(cx, "answered %s, expected an error", conf_show(cx, msg));
		return;
	}
	if (code != rc->code && (rc->alt == 0 || code != rc->alt)) {
		conf_fail(cx, "answered error %d, expected %d%s", code, rc->code,
			  rc->alt ? conf_str(cx, " or %d", rc->alt) : "");
		return;
	}
	json_t *id = json_object_get(msg, "id");
	int id_ok = json_is_null(id);
	if (!id_ok && rc->ids == ID_NULL_OR_ECHO)
		id_ok = json_equal(id, conf_json(cx, rc->id));
	if (!id_ok) {
		conf_fail(cx, "the error carried id %s, expected null%s",
			  id ? conf_show(cx, id) : "(absent)",
			  rc->ids == ID_NULL_OR_ECHO ? conf_str(cx, " or %s", rc->id) : "");
		return;
	}
	if (!conf_still_serving(cx, "that line"))
		return;
	if (a2m_client_pending(conf_client(cx)) > 0) {
		json_t *extra = conf_recv(cx);
		conf_fail(cx, "answered the line more than once: also %s", conf_show(cx, extra));
		return;
	}
	conf_pass(cx);
}

/* ---- the request object ---- */

static const raw_case empty_array = {"[]", 0, CONF_INVALID_REQUEST, 0, ID_NULL, NULL};
static const raw_case request_array = {
	"[{\"jsonrpc\":\"2.0\",\"id\":\"b1\",\"method\":\"memory/describe\"},"
	"{\"jsonrpc\":\"2.0\",\"id\":\"b2\",\"method\":\"memory/describe\"}]",
	0, CONF_INVALID_REQUEST, 0, ID_NULL, NULL};
static const raw_case a_number = {"42", 0, CONF_INVALID_REQUEST, 0, ID_NULL, NULL};
static const raw_case a_string = {"\"memory/describe\"", 0, CONF_INVALID_REQUEST, 0,
				  ID_NULL, NULL};
static const raw_case a_null = {"null", 0, CONF_INVALID_REQUEST, 0, ID_NULL, NULL};
static const raw_case no_jsonrpc = {
	"{\"id\":\"r1\",\"method\":\"memory/describe\"}",
	0, CONF_INVALID_REQUEST, 0, ID_NULL_OR_ECHO, "\"r1\""};
static const raw_case jsonrpc_1 = {
	"{\"jsonrpc\":\"1.0\",\"id\":\"r2\",\"method\":\"memory/describe\"}",
	0, CONF_INVALID_REQUEST, 0, ID_NULL_OR_ECHO, "\"r2\""};
static const raw_case jsonrpc_number = {
	"{\"jsonrpc\":2.0,\"id\":\"r3\",\"method\":\"memory/describe\"}",
	0, CONF_INVALID_REQUEST, 0, ID_NULL_OR_ECHO, "\"r3\""};
static const raw_case no_method = {
	"{\"jsonrpc\":\"2.0\",\"id\":\"r4\",\"params\":{}}",
	0, CONF_INVALID_REQUEST, 0, ID_NULL_OR_ECHO, "\"r4\""};
static const raw_case method_number = {
	"{\"jsonrpc\":\"2.0\",\"id\":\"r5\",\"method\":42}",
	0, CONF_INVALID_REQUEST, 0, ID_NULL_OR_ECHO, "\"r5\""};
static const raw_case id_object = {
	"{\"jsonrpc\":\"2.0\",\"id\":{\"n\":1},\"method\":\"memory/describe\"}",
	0, CONF_INVALID_REQUEST, 0, ID_NULL, NULL};
static const raw_case id_boolean = {
	"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"memory/describe\"}",
	0, CONF_INVALID_REQUEST, 0, ID_NULL, NULL};
/* JSON-RPC says params "MUST be" structured without naming the code for
** breaking that: either "not a valid request" or "bad params" is fair. */
static const raw_case params_string = {
	"{\"jsonrpc\":\"2.0\",\"id\":\"r6\",\"method\":\"memory/describe\",\"params\":\"a2m/0.1\"}",
	0, CONF_INVALID_REQUEST, CONF_INVALID_PARAMS, ID_NULL_OR_ECHO, "\"r6\""};

/*
** Spec §4: servers MUST accept params by name and MAY accept them by
** position. One that does not refuses an array with -32602; one that does
** is conformant, so a success is a skip rather than a failure.
*/
static void check_params_array(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const char line[] =
		"{\"jsonrpc\":\"2.0\",\"id\":\"r7\",\"method\":\"memory/describe\",\"params\":[]}\n";
	if (!conf_send_raw(cx, line, sizeof line - 1))
		return;
	json_t *msg = conf_recv(cx);
	if (!msg)
		return;
	json_t *id = json_object_get(msg, "id");
	if (!json_is_string(id) || strcmp(json_string_value(id), "r7") != 0) {
		conf_fail(cx, "the answer carried id %s, expected \"r7\"", conf_show(cx, id));
		return;
	}
	int code;
	if (json_object_get(msg, "result")) {
		conf_skip(cx, "the server accepts params by position (spec §4 allows it)");
		return;
	}
	if (!conf_error_code(msg, &code) || code != CONF_INVALID_PARAMS) {
		conf_fail(cx, "answered %s, expected error -32602", conf_show(cx, msg));
		return;
	}
	if (conf_still_serving(cx, "that line"))
		conf_pass(cx);
}

/* ---- ids ---- */

/* The id, as JSON text, must come back with the same type and value. */
static void check_id_echo(conf_ctx *cx, const void *arg)
{
	const char *id_text = arg;
	const char *line = conf_str(cx, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"memory/describe\"}\n",
			      id_text);
	json_t *want = conf_json(cx, id_text);
	if (!want || !conf_send_raw(cx, line, strlen(line)))
		return;
	json_t *msg = conf_recv(cx);
	if (!msg)
		return;
	if (!json_object_get(msg, "result")) {
		conf_fail(cx, "answered %s, expected a result", conf_show(cx, msg));
		return;
	}
	json_t *got = json_object_get(msg, "id");
	/* json_equal compares integers as int64 and never equates 1 with 1.0. */
	if (!got || !json_equal(got, want)) {
		conf_fail(cx, "the response carried id %s, expected %s",
			  got ? conf_show(cx, got) : "(absent)", id_text);
		return;
	}
	if (json_is_integer(want) && json_integer_value(got) != json_integer_value(want)) {
		conf_fail(cx, "the id came back as %lld, expected %s",
			  (long long)json_integer_value(got), id_text);
		return;
	}
	conf_pass(cx);
}

/* ---- notifications ---- */

/* A notification gets no answer: the next line must answer what follows it. */
static void check_notification_silent(conf_ctx *cx, const void *arg)
{
	const char *notification = arg;
	const char *line = conf_str(cx, "%s\n", notification);
	static const char request[] =
		"{\"jsonrpc\":\"2.0\",\"id\":\"after-notification\",\"method\":\"memory/describe\"}\n";
	if (!conf_send_raw(cx, line, strlen(line)) ||
	    !conf_send_raw(cx, request, sizeof request - 1))
		return;
	json_t *msg = conf_recv(cx);
	if (!msg)
		return;
	json_t *id = json_object_get(msg, "id");
	if (!json_is_string(id) || strcmp(json_string_value(id), "after-notification") != 0) {
		conf_fail(cx, "the notification was answered: %s", conf_show(cx, msg));
		return;
	}
	conf_pass(cx);
}

/* ---- methods ---- */

static void check_unknown_method(conf_ctx *cx, const void *arg)
{
	if (conf_expect_error(cx, arg, NULL, CONF_METHOD_NOT_FOUND, 0))
		conf_pass(cx);
}

/* Whether v is, or holds somewhere inside, the string s. */
static int mentions(const json_t *v, const char *s)
{
	size_t i;
	const char *key;
	json_t *item;
	if (json_is_string(v))
		return strcmp(json_string_value(v), s) == 0;
	if (json_is_array(v)) {
		json_array_foreach(v, i, item) {
			if (mentions(item, s))
				return 1;
		}
	}
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, item) {
			if (mentions(item, s))
				return 1;
		}
	}
	return 0;
}

/* Spec §2, DECISIONS 002: undeclared is -32003, never -32601. */
static void check_gated_method(conf_ctx *cx, const void *arg)
{
	const char *method = arg;
	const char *cap = conf_capability_of(method);
	if (conf_has_capability(cx, cap)) {
		conf_skip(cx, "the server declares \"%s\"", cap);
		return;
	}
	if (conf_expect_error(cx, method, json_object(), CONF_CAPABILITY_NOT_SUPPORTED, 0))
		conf_pass(cx);
}

/*
** The data of those errors. Spec §7 makes data optional, so a server that
** sends none is skipped, not failed; data that is there must name the
** capability that was missing, since that is what a client acts on.
*/
static void check_gated_data(conf_ctx *cx, const void *arg)
{
	(void)arg;
	size_t tried = 0, without = 0;
	for (const conf_method *m = conf_methods; m->method; m++) {
		if (strcmp(m->capability, "core") == 0 || conf_has_capability(cx, m->capability))
			continue;
		json_t *resp = conf_call(cx, m->method, json_object());
		int code;
		if (!resp)
			return;
		if (!conf_error_code(resp, &code) || code != CONF_CAPABILITY_NOT_SUPPORTED)
			continue; /* failed by its own check */
		tried++;
		json_t *data = json_object_get(json_object_get(resp, "error"), "data");
		if (!data) {
			without++;
			continue;
		}
		if (!mentions(data, m->capability)) {
			conf_fail(cx, "%s: data %s does not name \"%s\"", m->method,
				  conf_show(cx, data), m->capability);
			return;
		}
	}
	if (tried == 0)
		conf_skip(cx, "no method answered -32003");
	else if (without)
		conf_skip(cx, "%zu of %zu errors carry no data (optional, spec §7)", without, tried);
	else
		conf_pass(cx);
}

/* One check per method of an optional capability (spec §2's table). */
#define GATED(method, cap) {method " without " cap " is -32003", check_gated_method, method}

static const conf_check rpc_checks[] = {
	{"an empty array is refused with -32600, id null", check_refused_line, &empty_array},
	{"an array of requests is refused with one -32600, id null", check_refused_line,
	 &request_array},
	{"a number is refused with -32600, id null", check_refused_line, &a_number},
	{"a string is refused with -32600, id null", check_refused_line, &a_string},
	{"null is refused with -32600, id null", check_refused_line, &a_null},
	{"jsonrpc missing is refused with -32600", check_refused_line, &no_jsonrpc},
	{"jsonrpc \"1.0\" is refused with -32600", check_refused_line, &jsonrpc_1},
	{"jsonrpc as the number 2.0 is refused with -32600", check_refused_line,
	 &jsonrpc_number},
	{"method missing is refused with -32600", check_refused_line, &no_method},
	{"method not a string is refused with -32600", check_refused_line, &method_number},
	{"an object as id is refused with -32600, id null", check_refused_line, &id_object},
	{"a boolean as id is refused with -32600, id null", check_refused_line, &id_boolean},
	{"params as a string is refused with -32600 or -32602", check_refused_line,
	 &params_string},
	{"params as an array is refused with -32602", check_params_array, NULL},
	{"a string id comes back as the same string", check_id_echo, "\"abc\""},
	{"integer id 1 comes back as 1", check_id_echo, "1"},
	{"integer id 0 comes back as 0", check_id_echo, "0"},
	{"a negative id comes back unchanged", check_id_echo, "-7"},
	{"id 9007199254740993 (over 2^53) comes back exactly", check_id_echo,
	 "9007199254740993"},
	{"a fractional id 1.5 comes back as 1.5", check_id_echo, "1.5"},
	{"a notification to a method gets no response", check_notification_silent,
	 "{\"jsonrpc\":\"2.0\",\"method\":\"memory/describe\",\"params\":{}}"},
	{"a notification to an unknown method gets no response", check_notification_silent,
	 "{\"jsonrpc\":\"2.0\",\"method\":\"foo/bar\"}"},
	{"a notification with invalid params gets no response", check_notification_silent,
	 "{\"jsonrpc\":\"2.0\",\"method\":\"memory/recall\",\"params\":{\"limit\":-1}}"},
	{"an unknown method foo/bar is -32601", check_unknown_method, "foo/bar"},
	{"an unknown method memory/nonexistent is -32601", check_unknown_method,
	 "memory/nonexistent"},
	GATED("memory/promote", "tiers"),
	GATED("memory/consolidate", "tiers"),
	GATED("memory/reinforce", "salience"),
	GATED("memory/session/list", "sessions"),
	GATED("memory/session/close", "sessions"),
	GATED("memory/fetch", "keys"),
	GATED("memory/events", "events"),
	GATED("memory/events/subscribe", "events"),
	GATED("memory/events/unsubscribe", "events"),
	GATED("memory/summarize", "summarize"),
	{"-32003 errors name the missing capability in data", check_gated_data, NULL},
};

const conf_group conf_group_rpc = {"rpc", NULL, rpc_checks, CONF_COUNT(rpc_checks), 0};

/* ---- stdio framing (spec §8.2) ---- */

static const raw_case unterminated = {
	"{\"jsonrpc\":\"2.0\",\"id\":\"p1\",\"method\":\"memory/describe\"",
	0, CONF_PARSE_ERROR, 0, ID_NULL, NULL};
static const raw_case plain_text = {"this is not json", 0, CONF_PARSE_ERROR, 0, ID_NULL, NULL};
static const raw_case trailing_data = {
	"{\"jsonrpc\":\"2.0\",\"id\":\"p2\",\"method\":\"memory/describe\"} x",
	0, CONF_PARSE_ERROR, 0, ID_NULL, NULL};
/* A server that reads a line as a C string would see a valid request. */
static const char nul_line[] =
	"{\"jsonrpc\":\"2.0\",\"id\":\"p3\",\"method\":\"memory/describe\"}\0x";
static const raw_case nul_byte = {nul_line, sizeof nul_line - 1, CONF_PARSE_ERROR, 0,
				  ID_NULL, NULL};
/* Invalid UTF-8 in an unknown param, where a lenient decoder would pass it. */
#define WITH_BYTES(b) \
	"{\"jsonrpc\":\"2.0\",\"id\":\"u1\",\"method\":\"memory/describe\"," \
	"\"params\":{\"note\":\"a" b "z\"}}"
static const raw_case utf8_ff = {WITH_BYTES("\xff"), 0, CONF_PARSE_ERROR, 0, ID_NULL, NULL};
static const raw_case utf8_overlong = {WITH_BYTES("\xc0\xaf"), 0, CONF_PARSE_ERROR, 0,
				       ID_NULL, NULL};
static const raw_case utf8_surrogate = {WITH_BYTES("\xed\xa0\x80"), 0, CONF_PARSE_ERROR, 0,
					ID_NULL, NULL};
static const raw_case utf8_truncated = {WITH_BYTES("\xe6\x9d"), 0, CONF_PARSE_ERROR, 0,
					ID_NULL, NULL};

static void check_blank_lines(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const char lines[] =
		"\n   \n\t\t\n"
		"{\"jsonrpc\":\"2.0\",\"id\":\"after-blank\",\"method\":\"memory/describe\"}\n";
	if (!conf_send_raw(cx, lines, sizeof lines - 1))
		return;
	json_t *msg = conf_recv(cx);
	if (!msg)
		return;
	json_t *id = json_object_get(msg, "id");
	if (!json_is_string(id) || strcmp(json_string_value(id), "after-blank") != 0) {
		conf_fail(cx, "a blank line was answered: %s", conf_show(cx, msg));
		return;
	}
	conf_pass(cx);
}

/* The size of the long line, and of each piece it is sent in. */
#define LONG_LINE_BYTES ((size_t)17 << 20)
#define LONG_LINE_PIECE ((size_t)1 << 20)

/*
** A line past any sane size limit. It is a valid describe padded with an
** unknown param, sent a megabyte at a time so the suite never holds it. The
** spec sets no line limit, so a server may answer it normally; one that
** enforces a limit answers with an error whose id it could not know, and in
** both cases answers once and goes on serving.
*/
static void check_long_line(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":\"big\",\"method\":"
				   "\"memory/describe\",\"params\":{\"padding\":\"";
	static const char tail[] = "\"}}\n";
	char *piece = malloc(LONG_LINE_PIECE);
	if (!piece) {
		conf_fail(cx, "out of memory");
		return;
	}
	memset(piece, 'a', LONG_LINE_PIECE);
	conf_set_timeout(cx, CONF_HEAVY_TIMEOUT_MS);
	int ok = conf_send_raw(cx, head, sizeof head - 1);
	for (size_t sent = 0; ok && sent < LONG_LINE_BYTES; sent += LONG_LINE_PIECE)
		ok = conf_send_raw(cx, piece, LONG_LINE_PIECE);
	free(piece);
	ok = ok && conf_send_raw(cx, tail, sizeof tail - 1);
	json_t *msg = ok ? conf_recv(cx) : NULL;
	if (!msg)
		return;
	json_t *id = json_object_get(msg, "id");
	int code;
	if (conf_error_code(msg, &code)) {
		if (!json_is_null(id) && !(json_is_string(id) &&
					   strcmp(json_string_value(id), "big") == 0)) {
			conf_fail(cx, "the error carried id %s, expected null", conf_show(cx, id));
			return;
		}
	} else if (!json_object_get(msg, "result") || !json_is_string(id) ||
		   strcmp(json_string_value(id), "big") != 0) {
		conf_fail(cx, "answered %s, expected an error with id null", conf_show(cx, msg));
		return;
	}
	if (!conf_still_serving(cx, "a 17 MiB line"))
		return;
	if (a2m_client_pending(conf_client(cx)) > 0) {
		json_t *extra = conf_recv(cx);
		conf_fail(cx, "answered the line more than once: also %s", conf_show(cx, extra));
		return;
	}
	conf_pass(cx);
}

#define NESTING 100000

/* Deep nesting must be refused, not recursed into until the stack ends. */
static void check_deep_nesting(conf_ctx *cx, const void *arg)
{
	(void)arg;
	char *line = malloc(2 * NESTING + 1);
	if (!line) {
		conf_fail(cx, "out of memory");
		return;
	}
	memset(line, '[', NESTING);
	memset(line + NESTING, ']', NESTING);
	line[2 * NESTING] = '\n';
	int sent = conf_send_raw(cx, line, 2 * NESTING + 1);
	free(line);
	if (!sent)
		return;
	json_t *msg = conf_recv(cx);
	if (!msg)
		return;
	int code;
	/* Too deep to parse (-32700), or parsed and found an array (-32600). */
	if (!conf_error_code(msg, &code) ||
	    (code != CONF_PARSE_ERROR && code != CONF_INVALID_REQUEST)) {
		conf_fail(cx, "answered %s, expected error -32700 or -32600", conf_show(cx, msg));
		return;
	}
	if (!json_is_null(json_object_get(msg, "id"))) {
		conf_fail(cx, "the error carried id %s, expected null",
			  conf_show(cx, json_object_get(msg, "id")));
		return;
	}
	if (conf_still_serving(cx, "100000 nested arrays"))
		conf_pass(cx);
}

/* Spec §8.2: nothing but JSON-RPC messages on stdout, over the whole run. */
static void check_stdout_clean(conf_ctx *cx, const void *arg)
{
	(void)arg;
	size_t received;
	const char *first;
	size_t bad = conf_stream_invalid(cx, &received, &first);
	if (received == 0)
		conf_fail(cx, "the server never wrote a line");
	else if (bad)
		conf_fail(cx, "%zu of %zu lines were not JSON-RPC messages; the first: %s",
			  bad, received, first);
	else
		conf_pass(cx);
}

/* How long a server may take to exit, at least: "promptly", with room for
** a final commit or a leak check (tests/valgrind_server.sh). */
#define EXIT_TIMEOUT_MS 5000

/* Spec §8.2: closing stdin terminates the server cleanly. */
static void check_exit_on_eof(conf_ctx *cx, const void *arg)
{
	(void)arg;
	a2m_client *c = conf_client(cx);
	int wait = conf_timeout(cx) > EXIT_TIMEOUT_MS ? conf_timeout(cx) : EXIT_TIMEOUT_MS;
	conf_set_timeout(cx, wait);
	int status = -1;
	int rc = a2m_client_close(c, &status);
	if (rc == A2M_CLIENT_ERR_TIMEOUT) {
		a2m_client_kill(c);
		conf_fail(cx, "still running %.1f s after its stdin was closed", wait / 1000.0);
	} else if (rc != A2M_CLIENT_OK) {
		conf_fail(cx, "%s", a2m_client_errmsg(c));
	} else if (status != 0) {
		conf_fail(cx, "exited with status %d", status);
	} else {
		conf_pass(cx);
	}
}

static const conf_check stdio_checks[] = {
	{"an unterminated object is -32700, id null", check_refused_line, &unterminated},
	{"plain text is -32700, id null", check_refused_line, &plain_text},
	{"data after the object is -32700, id null", check_refused_line, &trailing_data},
	{"a NUL byte after the object is -32700, id null", check_refused_line, &nul_byte},
	{"invalid UTF-8 (a 0xFF byte) is -32700, id null", check_refused_line, &utf8_ff},
	{"invalid UTF-8 (an overlong encoding) is -32700, id null", check_refused_line,
	 &utf8_overlong},
	{"invalid UTF-8 (an encoded surrogate) is -32700, id null", check_refused_line,
	 &utf8_surrogate},
	{"invalid UTF-8 (a truncated sequence) is -32700, id null", check_refused_line,
	 &utf8_truncated},
	{"blank lines get no response", check_blank_lines, NULL},
	{"a 17 MiB line is answered once and the server keeps serving", check_long_line, NULL},
	{"100000 nested arrays are refused with id null", check_deep_nesting, NULL},
	{"stdout carries only JSON-RPC messages", check_stdout_clean, NULL},
	{"closing stdin ends the server with status 0", check_exit_on_eof, NULL},
};

const conf_group conf_group_stdio = {"stdio", NULL, stdio_checks, CONF_COUNT(stdio_checks), 1};
