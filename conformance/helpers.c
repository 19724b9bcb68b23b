/*
** helpers.c — the helpers a check is written with
** (conformance.h): verdicts, scratch memory released when the check ends,
** markers, time, what the run knows about the server, and calls to it with
** their expectations. Writing and finding records is in
** helpers_records.c; the runner that drives all this is suite.c.
*/
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define A2M_CONFORMANCE_INTERNAL
#include "suite.h"
#include "util/clock.h"

/* ---- verdicts ---- */

static void verdict(conf_ctx *cx, enum verdict v, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

static void verdict(conf_ctx *cx, enum verdict v, const char *fmt, va_list ap)
{
	if (cx->verdict != V_NONE)
		return;
	cx->verdict = v;
	if (fmt)
		vsnprintf(cx->detail, sizeof cx->detail, fmt, ap);
	else
		cx->detail[0] = '\0';
}

void conf_pass(conf_ctx *cx)
{
	if (cx->verdict == V_NONE) {
		cx->verdict = V_PASS;
		cx->detail[0] = '\0';
	}
}

void conf_fail(conf_ctx *cx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verdict(cx, V_FAIL, fmt, ap);
	va_end(ap);
}

void conf_skip(conf_ctx *cx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verdict(cx, V_SKIP, fmt, ap);
	va_end(ap);
}

/* ---- scratch ---- */

/* Makes room for item n of an array of *cap items of size bytes. Returns
** the array, perhaps moved, or NULL (the old one intact) when out of memory. */
static void *room_for(void *items, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return items;
	size_t grown_cap = *cap ? *cap * 2 : 64;
	void *grown = realloc(items, grown_cap * size);
	if (grown)
		*cap = grown_cap;
	return grown;
}

json_t *conf_keep(conf_ctx *cx, json_t *value)
{
	if (!value)
		return NULL;
	json_t **kept = room_for(cx->kept, &cx->cap_kept, cx->n_kept, sizeof *kept);
	if (!kept) {
		json_decref(value);
		conf_fail(cx, "out of memory");
		return NULL;
	}
	cx->kept = kept;
	cx->kept[cx->n_kept++] = value;
	return value;
}

/* Takes ownership of s (malloc'd) until the check ends. Out of memory fails
** the check and returns "", so a caller can always use the result. */
static const char *keep_str(conf_ctx *cx, char *s)
{
	char **strs = s ? room_for(cx->strs, &cx->cap_strs, cx->n_strs, sizeof *strs) : NULL;
	if (!strs) {
		free(s);
		conf_fail(cx, "out of memory");
		return "";
	}
	cx->strs = strs;
	cx->strs[cx->n_strs++] = s;
	return s;
}

const char *conf_str(conf_ctx *cx, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return keep_str(cx, s);
}

void conf_release_scratch(conf_ctx *cx)
{
	for (size_t i = 0; i < cx->n_kept; i++)
		json_decref(cx->kept[i]);
	cx->n_kept = 0;
	for (size_t i = 0; i < cx->n_strs; i++)
		free(cx->strs[i]);
	cx->n_strs = 0;
}

const char *conf_show(conf_ctx *cx, const json_t *v)
{
	enum { SHOWN = 200 };
	if (!v)
		return "(nothing)";
	char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text)
		return "(unprintable)";
	if (strlen(text) > SHOWN)
		strcpy(text + SHOWN - 3, "...");
	return keep_str(cx, text);
}

json_t *conf_json(conf_ctx *cx, const char *text)
{
	json_error_t err;
	json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	if (!v) {
		conf_fail(cx, "suite bug: bad JSON literal %s: %s", text, err.text);
		return NULL;
	}
	return conf_keep(cx, v);
}

const char *conf_str_of(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* ---- markers ---- */

/* Consonants only: a word without vowels is left alone by every Snowball
** stemmer and no tokenizer splits it, so it is found exactly as written. */
static const char marker_letters[] = "bcfghjkmnpqrtvwxz";
#define MARKER_BASE (sizeof marker_letters - 1)

void conf_make_run_token(conf_ctx *cx)
{
	unsigned char raw[6] = {0};
	FILE *f = fopen("/dev/urandom", "rb");
	if (!f || fread(raw, 1, sizeof raw, f) != sizeof raw) {
		uint64_t x = (uint64_t)conf_now_ms() ^ ((uint64_t)getpid() << 20);
		for (size_t i = 0; i < sizeof raw; i++, x >>= 7)
			raw[i] = (unsigned char)x;
	}
	if (f)
		fclose(f);
	for (size_t i = 0; i < sizeof raw; i++)
		cx->run[i] = marker_letters[raw[i] % MARKER_BASE];
	cx->run[sizeof raw] = '\0';
}

const char *conf_marker(conf_ctx *cx)
{
	unsigned n = cx->seq++;
	char tail[4];
	for (int i = 2; i >= 0; i--, n /= MARKER_BASE)
		tail[i] = marker_letters[n % MARKER_BASE];
	tail[3] = '\0';
	return conf_str(cx, "zq%s%s", cx->run, tail);
}

const char *conf_run_token(conf_ctx *cx)
{
	return cx->run;
}

/* ---- time ---- */

int64_t conf_now_ms(void)
{
	return a2m_clock_now_ms();
}

int conf_parse_time(const char *text, int64_t *ms)
{
	return a2m_clock_parse(text, ms);
}

void conf_tick(void)
{
	struct timespec ts = {0, 3 * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ", exactly (spec §3.3). */
int conf_is_wire_timestamp(const char *s)
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

/* ---- what a check may read about the run and the server ---- */

a2m_client *conf_client(conf_ctx *cx)
{
	return cx->client;
}

char *const *conf_server_argv(conf_ctx *cx)
{
	return cx->server_argv;
}

int conf_over_http(conf_ctx *cx)
{
	return cx->http_url != NULL;
}

const char *conf_http_url(conf_ctx *cx)
{
	return cx->http_url;
}

const char *conf_http_token(conf_ctx *cx)
{
	return cx->token;
}

const char *conf_http_cacert(conf_ctx *cx)
{
	return cx->cacert;
}

const json_t *conf_describe(conf_ctx *cx)
{
	return cx->describe;
}

const char *conf_describe_error(conf_ctx *cx)
{
	return cx->describe_error;
}

int conf_has_capability(conf_ctx *cx, const char *cap)
{
	json_t *caps = json_object_get(cx->describe, "capabilities");
	size_t i;
	json_t *c;
	json_array_foreach(caps, i, c) {
		if (json_is_string(c) && strcmp(json_string_value(c), cap) == 0)
			return 1;
	}
	return 0;
}

const conf_limits *conf_server_limits(conf_ctx *cx)
{
	return &cx->limits;
}

int conf_timeout(conf_ctx *cx)
{
	return cx->timeout_ms;
}

void conf_set_timeout(conf_ctx *cx, int timeout_ms)
{
	if (cx->client)
		a2m_client_set_timeout(cx->client, timeout_ms);
}

/* ---- requests ---- */

static void lost(conf_ctx *cx, const char *doing)
{
	cx->lost = 1;
	conf_fail(cx, "%s: %s", doing,
		  cx->client ? a2m_client_errmsg(cx->client) : "no server");
}

/* Whether params name an owner, for remember's default or on a record. */
static int names_owner(const json_t *params)
{
	if (json_object_get(params, "owner"))
		return 1;
	size_t i;
	json_t *rec;
	json_array_foreach(json_object_get(params, "records"), i, rec) {
		if (json_object_get(rec, "owner"))
			return 1;
	}
	return 0;
}

json_t *conf_call(conf_ctx *cx, const char *method, json_t *params)
{
	json_t *resp = NULL;
	if (!cx->client) {
		json_decref(params);
		conf_fail(cx, "no server to send %s to", method);
		return NULL;
	}
	int claims_owner = names_owner(params);
	int rc = a2m_client_request_json(cx->client, method, params, &resp);
	json_decref(params);
	if (rc != A2M_CLIENT_OK) {
		lost(cx, conf_str(cx, "%s got no response", method));
		return NULL;
	}
	/* Over authenticated HTTP the owner is the token's principal and any
	** other is refused (spec §6): a check that plays several owners from
	** one client cannot run there, as a write check cannot on a read-only
	** server. The http group checks the rule itself. */
	int code;
	if (cx->http_url && cx->token && claims_owner && !cx->scope_denied_expected &&
	    conf_error_code(resp, &code) && code == CONF_SCOPE_DENIED) {
		json_decref(resp);
		conf_skip(cx, "it names an owner other than the token's principal, which "
			  "HTTP refuses with -32005 (spec §6)");
		return NULL;
	}
	return conf_keep(cx, resp);
}

int conf_error_code(const json_t *resp, int *code)
{
	json_t *err = json_object_get(resp, "error");
	json_t *c = json_object_get(err, "code");
	if (!json_is_object(err) || !json_is_integer(c))
		return 0;
	*code = (int)json_integer_value(c);
	return 1;
}

const char *conf_error_text(conf_ctx *cx, const json_t *resp)
{
	int code;
	if (!conf_error_code(resp, &code))
		return conf_show(cx, resp);
	json_t *msg = json_object_get(json_object_get(resp, "error"), "message");
	return conf_str(cx, "error %d (%s)", code,
			json_is_string(msg) ? json_string_value(msg) : "no message");
}

json_t *conf_result(conf_ctx *cx, const char *method, json_t *params)
{
	json_t *resp = conf_call(cx, method, params);
	if (!resp)
		return NULL;
	json_t *result = json_object_get(resp, "result");
	int code;
	if (conf_error_code(resp, &code) && code == CONF_READ_ONLY && cx->read_only) {
		conf_skip(cx, "the server is read-only (spec §2.1)");
		return NULL;
	}
	if (!result) {
		conf_fail(cx, "%s answered %s, expected a result", method, conf_error_text(cx, resp));
		return NULL;
	}
	return result;
}

int conf_expect_error(conf_ctx *cx, const char *method, json_t *params, int code, int alt)
{
	cx->scope_denied_expected = code == CONF_SCOPE_DENIED || alt == CONF_SCOPE_DENIED;
	json_t *resp = conf_call(cx, method, params);
	cx->scope_denied_expected = 0;
	if (!resp)
		return 0;
	int got;
	const char *want = alt ? conf_str(cx, "%d or %d", code, alt) : conf_str(cx, "%d", code);
	if (!conf_error_code(resp, &got)) {
		conf_fail(cx, "%s answered %s, expected error %s", method,
			  conf_show(cx, resp), want);
		return 0;
	}
	if (got != code && (alt == 0 || got != alt)) {
		conf_fail(cx, "%s answered %s, expected error %s", method,
			  conf_error_text(cx, resp), want);
		return 0;
	}
	return 1;
}

int conf_send_raw(conf_ctx *cx, const void *bytes, size_t len)
{
	if (!cx->client) {
		conf_fail(cx, "no server");
		return 0;
	}
	if (a2m_client_send_raw(cx->client, bytes, len) != A2M_CLIENT_OK) {
		lost(cx, "sending");
		return 0;
	}
	return 1;
}

json_t *conf_recv(conf_ctx *cx)
{
	json_t *msg = NULL;
	if (!cx->client) {
		conf_fail(cx, "no server");
		return NULL;
	}
	if (a2m_client_recv_json(cx->client, &msg) != A2M_CLIENT_OK) {
		lost(cx, "waiting for an answer");
		return NULL;
	}
	return conf_keep(cx, msg);
}

int conf_still_serving(conf_ctx *cx, const char *after)
{
	json_t *resp = NULL;
	if (!cx->client) {
		conf_fail(cx, "no server");
		return 0;
	}
	int rc = a2m_client_request_json(cx->client, "memory/describe", NULL, &resp);
	if (rc != A2M_CLIENT_OK) {
		lost(cx, conf_str(cx, "the server stopped answering after %s", after));
		return 0;
	}
	conf_keep(cx, resp);
	json_t *protocol = json_object_get(json_object_get(resp, "result"), "protocol");
	if (!json_is_string(protocol)) {
		conf_fail(cx, "after %s, memory/describe answered %s", after,
			  conf_show(cx, resp));
		return 0;
	}
	return 1;
}

/* A method call whose params (JSON text) must be refused with -32602. */
void conf_expect_invalid(conf_ctx *cx, const char *method, const char *params_text)
{
	json_t *params = conf_json(cx, params_text);
	if (params && conf_expect_error(cx, method, json_incref(params), CONF_INVALID_PARAMS, 0))
		conf_pass(cx);
}
