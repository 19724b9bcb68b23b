/*
** check_http.c — checks of the HTTP binding itself (spec §8.3, §6,
** §6.1): what the server answers at the HTTP level, which the client API
** deliberately hides (it turns every status but 200 and 202 into an error).
**
** So these checks speak raw HTTP with libcurl, one fresh connection per
** request, and look at the status line, the headers and the body. They run
** only when the suite reaches the server with --http; the JSON-RPC checks
** of every other group run over the same URL through the client.
**
** With --token the suite is an authenticated caller, and the checks of
** §6.1 run too: no token and a wrong token are refused with 401 before the
** protocol sees them, and the owner of everything written is the principal
** the token stands for — a request naming another owner is refused with
** -32005 (the rule this implementation applies; docs/HTTP.md).
*/
#include <stdlib.h>
#include <string.h>
#include <strings.h>


#include "suite.h"
#include "util/buf.h"
#include "util/curl_api.h"

#define CONF_UNKNOWN_TIER  -32002

/* An Origin no deployment allows: .invalid is reserved (RFC 2606). */
#define FOREIGN_ORIGIN "http://a2m-conformance.invalid"
/* A path no server serves. */
#define NO_SUCH_PATH "/a2m-conformance-no-such-path"
#define WELL_KNOWN "/.well-known/a2m-server.json"

/* The oversized body: past the 16 MiB that §8.3 servers commonly allow. */
#define BIG_BODY ((size_t)17 << 20)

static const char describe_body[] =
	"{\"jsonrpc\":\"2.0\",\"id\":\"h1\",\"method\":\"memory/describe\","
	"\"params\":{\"protocol\":\"" CONF_PROTOCOL "\"}}";

/* ---- raw HTTP ---- */

typedef struct raw_req {
	const char *method;          /* NULL: POST */
	const char *path;            /* NULL: the endpoint; else this path on its origin */
	const char *body;            /* NULL: none */
	size_t len;                  /* 0: strlen(body) */
	const char *content_type;    /* NULL: application/json; "": none */
	const char *header1, *header2; /* extra "Name: value" lines, or NULL */
	int no_auth;                 /* do not send --token */
	const char *token;           /* send this token instead of --token */
	int timeout_ms;              /* 0: --timeout */
} raw_req;

typedef struct raw_reply {
	long status;
	const char *body;            /* NUL-terminated; kept until the check ends */
	size_t len;
	const char *headers;         /* the final response's header block */
} raw_reply;

static size_t on_data(char *data, size_t size, size_t n, void *user)
{
	a2m_buf *b = user;
	a2m_buf_put(b, data, size * n);
	return b->failed ? 0 : size * n;
}

static size_t on_header(char *data, size_t size, size_t n, void *user)
{
	a2m_buf *b = user;
	/* A new status line (after a 100 Continue, say): keep only the last
	** response's headers. */
	if (size * n >= 5 && strncmp(data, "HTTP/", 5) == 0)
		b->len = 0;
	a2m_buf_put(b, data, size * n);
	return b->failed ? 0 : size * n;
}

/* libcurl, loaded (util/curl_api.h), or NULL after failing the check. */
static const a2m_curl_api *curl_or_fail(conf_ctx *cx)
{
	const char *why = NULL;
	const a2m_curl_api *cu = a2m_curl(&why);
	if (!cu)
		conf_fail(cx, "%s", why);
	return cu;
}

/* The URL of path on the endpoint's scheme, host and port; kept. NULL after failing. */
static const char *url_of(conf_ctx *cx, const char *path)
{
	if (!path)
		return conf_http_url(cx);
	const a2m_curl_api *cu = curl_or_fail(cx);
	if (!cu)
		return NULL;
	CURLU *u = cu->url();
	char *full = NULL;
	if (!u || cu->url_set(u, CURLUPART_URL, conf_http_url(cx), 0) != CURLUE_OK ||
	    cu->url_set(u, CURLUPART_PATH, path, 0) != CURLUE_OK ||
	    cu->url_set(u, CURLUPART_QUERY, NULL, 0) != CURLUE_OK ||
	    cu->url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK) {
		cu->url_cleanup(u);
		conf_fail(cx, "cannot make a URL of %s and %s", conf_http_url(cx), path);
		return NULL;
	}
	const char *kept = conf_str(cx, "%s", full);
	cu->free(full);
	cu->url_cleanup(u);
	return kept;
}

/* Keeps bytes until the check ends, as a NUL-terminated string. */
static const char *keep_bytes(conf_ctx *cx, const a2m_buf *b)
{
	json_t *s = conf_keep(cx, json_stringn_nocheck(a2m_buf_str(b), b->len));
	return s ? json_string_value(s) : "";
}

/*
** Sends one request on a fresh connection. Returns 1 and fills *out, or 0
** after failing the check (no answer at all).
*/
static int raw(conf_ctx *cx, const raw_req *rq, raw_reply *out)
{
	memset(out, 0, sizeof *out);
	out->body = out->headers = "";
	const char *url = url_of(cx, rq->path);
	const a2m_curl_api *cu = url ? curl_or_fail(cx) : NULL;
	if (!cu)
		return 0;
	CURL *k = cu->easy_init();
	struct curl_slist *hl = NULL, *l;
	a2m_buf body = {0}, head = {0};
	char *auth = NULL;
	int ok = 0;
	if (!k) {
		conf_fail(cx, "cannot start libcurl");
		return 0;
	}
	const char *method = rq->method ? rq->method : "POST";
	const char *ctype = rq->content_type ? rq->content_type : "application/json";
	const char *token = rq->token ? rq->token : rq->no_auth ? NULL : conf_http_token(cx);
	const char *lines[4] = {rq->header1, rq->header2, NULL, NULL};
	char ct_line[128];
	snprintf(ct_line, sizeof ct_line, "Content-Type:%s%s", *ctype ? " " : "", ctype);
	lines[2] = ct_line;
	if (token && asprintf(&auth, "Authorization: Bearer %s", token) < 0)
		auth = NULL;
	lines[3] = auth;
	for (size_t i = 0; i < 4; i++) {
		if (!lines[i])
			continue;
		if (!(l = cu->slist_append(hl, lines[i]))) {
			conf_fail(cx, "out of memory");
			goto done;
		}
		hl = l;
	}
	int bad = cu->easy_setopt(k, CURLOPT_URL, url) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_HTTPHEADER, hl) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_WRITEFUNCTION, on_data) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_WRITEDATA, &body) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_HEADERFUNCTION, on_header) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_HEADERDATA, &head) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_TIMEOUT_MS,
				   (long)(rq->timeout_ms ? rq->timeout_ms : conf_timeout(cx))) != CURLE_OK;
	if (conf_http_cacert(cx))
		bad = bad || cu->easy_setopt(k, CURLOPT_CAINFO, conf_http_cacert(cx)) != CURLE_OK;
	if (strcmp(method, "GET") == 0) {
		bad = bad || cu->easy_setopt(k, CURLOPT_HTTPGET, 1L) != CURLE_OK;
	} else if (strcmp(method, "POST") == 0) {
		const char *b = rq->body ? rq->body : "";
		size_t n = rq->len ? rq->len : strlen(b);
		bad = bad || cu->easy_setopt(k, CURLOPT_POSTFIELDS, b) != CURLE_OK ||
		      cu->easy_setopt(k, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n) != CURLE_OK;
	} else {
		bad = bad || cu->easy_setopt(k, CURLOPT_CUSTOMREQUEST, method) != CURLE_OK;
	}
	if (bad) {
		conf_fail(cx, "cannot set up a request with libcurl");
		goto done;
	}
	CURLcode rc = cu->easy_perform(k);
	cu->easy_getinfo(k, CURLINFO_RESPONSE_CODE, &out->status);
	if (rc != CURLE_OK && out->status == 0) {
		conf_fail(cx, "%s %s: %s", method, url, cu->easy_strerror(rc));
		goto done;
	}
	out->body = keep_bytes(cx, &body);
	out->len = body.len;
	out->headers = keep_bytes(cx, &head);
	ok = 1;
done:
	cu->slist_free_all(hl);
	cu->easy_cleanup(k);
	a2m_buf_free(&body);
	a2m_buf_free(&head);
	free(auth);
	return ok;
}

/* The value of header name in the reply (trimmed, kept), or NULL. */
static const char *header_of(conf_ctx *cx, const raw_reply *r, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = r->headers; p && *p;) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		if (len > n && strncasecmp(p, name, n) == 0 && p[n] == ':') {
			const char *v = p + n + 1;
			size_t vlen = len - n - 1;
			while (vlen && (*v == ' ' || *v == '\t')) {
				v++;
				vlen--;
			}
			while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == ' '))
				vlen--;
			return conf_str(cx, "%.*s", (int)vlen, v);
		}
		p = eol ? eol + 1 : NULL;
	}
	return NULL;
}

/* The body as JSON (kept), or NULL. */
static json_t *json_of(conf_ctx *cx, const raw_reply *r)
{
	return conf_keep(cx, json_loadb(r->body, r->len, JSON_DECODE_ANY, NULL));
}

/* Fails the check unless the status is want. */
static int expect_status(conf_ctx *cx, const char *what, const raw_reply *r, long want)
{
	if (r->status == want)
		return 1;
	conf_fail(cx, "%s was answered HTTP %ld, expected %ld (body: %.120s)", what, r->status,
		  want, r->body);
	return 0;
}

/* Fails the check unless the reply is a JSON-RPC error with code. */
static int expect_rpc_error(conf_ctx *cx, const char *what, const raw_reply *r, int code)
{
	json_t *msg = json_of(cx, r);
	int got;
	if (!conf_error_code(msg, &got)) {
		conf_fail(cx, "%s: the body is not a JSON-RPC error: %.160s", what, r->body);
		return 0;
	}
	if (got != code) {
		conf_fail(cx, "%s: error %d, expected %d", what, got, code);
		return 0;
	}
	return 1;
}

/* Whether a Content-Type value is application/json, parameters allowed. */
static int is_json_type(const char *v)
{
	static const char want[] = "application/json";
	return v && strncasecmp(v, want, sizeof want - 1) == 0 &&
	       (v[sizeof want - 1] == '\0' || v[sizeof want - 1] == ';' ||
		v[sizeof want - 1] == ' ');
}

/* ---- Origin (spec §8.3.1) ---- */

static void check_origin_foreign(conf_ctx *cx, const void *arg)
{
	const char *path = arg;
	raw_reply r;
	raw_req rq = {.method = path ? "GET" : "POST", .path = path,
		      .body = path ? NULL : describe_body,
		      .header1 = "Origin: " FOREIGN_ORIGIN};
	if (raw(cx, &rq, &r) && expect_status(cx, "a foreign Origin", &r, 403))
		conf_pass(cx);
}

static void check_origin_absent(conf_ctx *cx, const void *arg)
{
	(void)arg;
	raw_reply r;
	raw_req rq = {.body = describe_body};
	if (!raw(cx, &rq, &r) || !expect_status(cx, "a POST without Origin", &r, 200))
		return;
	if (!json_object_get(json_of(cx, &r), "result"))
		conf_fail(cx, "answered %.160s, expected a describe result", r.body);
	else
		conf_pass(cx);
}

/* ---- the version header (spec §8.3.2) ---- */

static void check_version_foreign(conf_ctx *cx, const void *arg)
{
	(void)arg;
	raw_reply r;
	raw_req rq = {.body = describe_body, .header1 = "A2M-Protocol-Version: a2m/9.9"};
	if (raw(cx, &rq, &r) && expect_status(cx, "A2M-Protocol-Version: a2m/9.9", &r, 400) &&
	    expect_rpc_error(cx, "the 400", &r, CONF_PROTOCOL_NOT_SUPPORTED))
		conf_pass(cx);
}

static void check_version_accepted(conf_ctx *cx, const void *arg)
{
	const char *header = arg;
	raw_reply r;
	raw_req rq = {.body = describe_body, .header1 = header};
	if (!raw(cx, &rq, &r) ||
	    !expect_status(cx, header ? header : "a POST without the version header", &r, 200))
		return;
	if (!json_object_get(json_of(cx, &r), "result"))
		conf_fail(cx, "answered %.160s, expected a describe result", r.body);
	else
		conf_pass(cx);
}

/* ---- methods, paths, statuses (spec §8.3) ---- */

static void check_get_405(conf_ctx *cx, const void *arg)
{
	(void)arg;
	raw_reply r;
	raw_req rq = {.method = "GET"};
	if (!raw(cx, &rq, &r) || !expect_status(cx, "GET on the endpoint", &r, 405))
		return;
	/* RFC 9110 §15.5.6: a 405 carries Allow, and here it must name POST. */
	const char *allow = header_of(cx, &r, "Allow");
	if (!allow || !strstr(allow, "POST"))
		conf_fail(cx, "the 405 carries Allow: %s, which does not name POST",
			  allow ? allow : "(absent)");
	else
		conf_pass(cx);
}

static void check_request_200(conf_ctx *cx, const void *arg)
{
	(void)arg;
	raw_reply r;
	raw_req rq = {.body = describe_body};
	if (!raw(cx, &rq, &r) || !expect_status(cx, "a request with an id", &r, 200))
		return;
	const char *ct = header_of(cx, &r, "Content-Type");
	json_t *msg = json_of(cx, &r);
	json_t *id = json_object_get(msg, "id");
	if (!is_json_type(ct))
		conf_fail(cx, "the 200 carries Content-Type: %s", ct ? ct : "(absent)");
	else if (!json_is_string(id) || strcmp(json_string_value(id), "h1") != 0)
		conf_fail(cx, "the body %.160s is not the response to id \"h1\"", r.body);
	else
		conf_pass(cx);
}

static void check_notification_202(conf_ctx *cx, const void *arg)
{
	(void)arg;
	raw_reply r;
	raw_req rq = {.body = "{\"jsonrpc\":\"2.0\",\"method\":\"memory/describe\",\"params\":{}}"};
	if (!raw(cx, &rq, &r) || !expect_status(cx, "a notification", &r, 202))
		return;
	if (r.len != 0)
		conf_fail(cx, "the 202 carries a body: %.160s", r.body);
	else
		conf_pass(cx);
}

static void check_batch_refused(conf_ctx *cx, const void *arg)
{
	(void)arg;
	raw_reply r;
	raw_req rq = {.body = "[{\"jsonrpc\":\"2.0\",\"id\":\"b1\",\"method\":\"memory/describe\"},"
			      "{\"jsonrpc\":\"2.0\",\"id\":\"b2\",\"method\":\"memory/describe\"}]"};
	if (!raw(cx, &rq, &r) || !expect_status(cx, "a batch", &r, 200) ||
	    !expect_rpc_error(cx, "the batch", &r, CONF_INVALID_REQUEST))
		return;
	if (!json_is_null(json_object_get(json_of(cx, &r), "id")))
		conf_fail(cx, "the -32600 carries id %s, expected null",
			  conf_show(cx, json_object_get(json_of(cx, &r), "id")));
	else
		conf_pass(cx);
}

/* Spec §8.3: protocol failures are 200 with an error object, never 404. */
static void check_protocol_error_200(conf_ctx *cx, const void *arg)
{
	(void)arg;
	raw_reply r;
	raw_req rq = {.body = "{\"jsonrpc\":\"2.0\",\"id\":\"e1\",\"method\":\"memory/nonexistent\"}"};
	if (!raw(cx, &rq, &r) || !expect_status(cx, "an unknown method", &r, 200) ||
	    !expect_rpc_error(cx, "the unknown method", &r, CONF_METHOD_NOT_FOUND))
		return;
	if (!conf_has_capability(cx, "tiers")) {
		conf_pass(cx);
		return;
	}
	raw_req tier = {.body = "{\"jsonrpc\":\"2.0\",\"id\":\"e2\",\"method\":\"memory/recall\","
				"\"params\":{\"tier\":\"a2m-conformance-no-such-tier\"}}"};
	if (raw(cx, &tier, &r) && expect_status(cx, "an unknown tier", &r, 200) &&
	    expect_rpc_error(cx, "the unknown tier", &r, CONF_UNKNOWN_TIER))
		conf_pass(cx);
}

static void check_unknown_path(conf_ctx *cx, const void *arg)
{
	(void)arg;
	raw_reply r;
	raw_req rq = {.path = NO_SUCH_PATH, .body = describe_body};
	if (raw(cx, &rq, &r) && expect_status(cx, "a POST to " NO_SUCH_PATH, &r, 404))
		conf_pass(cx);
}

static void check_content_type(conf_ctx *cx, const void *arg)
{
	const char *type = arg;
	raw_reply r;
	raw_req rq = {.body = describe_body, .content_type = type};
	const char *what = *type ? conf_str(cx, "Content-Type: %s", type) : "no Content-Type";
	if (raw(cx, &rq, &r) && expect_status(cx, what, &r, 415))
		conf_pass(cx);
}

static void check_content_type_charset(conf_ctx *cx, const void *arg)
{
	(void)arg;
	raw_reply r;
	raw_req rq = {.body = describe_body, .content_type = "application/json; charset=utf-8"};
	if (raw(cx, &rq, &r) &&
	    expect_status(cx, "Content-Type: application/json; charset=utf-8", &r, 200))
		conf_pass(cx);
}

/*
** A body past any sane limit must be refused with 413. The spec names no
** limit, so a server that takes 17 MiB is skipped, not failed; ours takes
** 16 MiB by default.
*/
static void check_body_too_large(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":\"big\",\"method\":"
				   "\"memory/describe\",\"params\":{\"padding\":\"";
	char *big = malloc(BIG_BODY);
	if (!big) {
		conf_fail(cx, "out of memory");
		return;
	}
	memset(big, 'a', BIG_BODY);
	memcpy(big, head, sizeof head - 1);
	memcpy(big + BIG_BODY - 3, "\"}}", 3);
	raw_reply r;
	raw_req rq = {.body = big, .len = BIG_BODY, .timeout_ms = CONF_HEAVY_TIMEOUT_MS};
	int got = raw(cx, &rq, &r);
	free(big);
	if (!got)
		return;
	if (r.status == 200)
		conf_skip(cx, "the server accepts a 17 MiB body");
	else if (expect_status(cx, "a 17 MiB body", &r, 413))
		conf_pass(cx);
}

/* ---- what describe says over HTTP (spec §8.3, §8.3.3, §4.13) ---- */

static void check_well_known(conf_ctx *cx, const void *arg)
{
	(void)arg;
	raw_reply r;
	raw_req rq = {.method = "GET", .path = WELL_KNOWN};
	if (!raw(cx, &rq, &r) || !expect_status(cx, "GET " WELL_KNOWN, &r, 200))
		return;
	json_t *profile = json_of(cx, &r);
	const json_t *d = conf_describe(cx);
	if (!json_is_object(profile)) {
		conf_fail(cx, "the profile is not a JSON object: %.160s", r.body);
		return;
	}
	static const char *const same[] = {"protocol", "capabilities"};
	for (size_t i = 0; i < CONF_COUNT(same); i++) {
		json_t *a = json_object_get(profile, same[i]), *b = json_object_get(d, same[i]);
		if (!a || !json_equal(a, b)) {
			conf_fail(cx, "the profile's %s is %s; memory/describe says %s", same[i],
				  conf_show(cx, a), conf_show(cx, b));
			return;
		}
	}
	json_t *events = json_object_get(profile, "events");
	if (events && !json_is_false(json_object_get(events, "push"))) {
		conf_fail(cx, "the profile's events are %s: over HTTP push must be false",
			  conf_show(cx, events));
		return;
	}
	conf_pass(cx);
}

static void check_push_false(conf_ctx *cx, const void *arg)
{
	(void)arg;
	json_t *events = json_object_get(conf_describe(cx), "events");
	if (!conf_has_capability(cx, "events")) {
		conf_skip(cx, "the server does not declare \"events\"");
		return;
	}
	if (!json_is_false(json_object_get(events, "push")))
		conf_fail(cx, "memory/describe reports events %s; over HTTP push must be false",
			  conf_show(cx, events));
	else
		conf_pass(cx);
}

static void check_subscribe_refused(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (conf_expect_error(cx, "memory/events/subscribe", json_object(),
			      CONF_CAPABILITY_NOT_SUPPORTED, 0))
		conf_pass(cx);
}

/* Spec §6: a server that cannot authenticate its caller must not offer scopes. */
static void check_no_scopes_unauthenticated(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (conf_http_token(cx)) {
		conf_skip(cx, "the suite is authenticated (--token)");
		return;
	}
	if (conf_has_capability(cx, "scopes"))
		conf_fail(cx, "an unauthenticated caller is offered \"scopes\" over HTTP");
	else
		conf_pass(cx);
}

/* ---- authentication (spec §6.1) ---- */

static int need_token(conf_ctx *cx)
{
	if (!conf_http_token(cx)) {
		conf_skip(cx, "no --token given");
		return 0;
	}
	return 1;
}

static void check_auth_refused(conf_ctx *cx, const void *arg)
{
	const char *how = arg;
	if (!need_token(cx))
		return;
	raw_reply r;
	raw_req rq = {.body = describe_body, .no_auth = 1};
	if (strcmp(how, "wrong") == 0)
		rq.token = conf_str(cx, "%s-not-the-token", conf_http_token(cx));
	else if (strcmp(how, "profile") == 0)
		rq = (raw_req){.method = "GET", .path = WELL_KNOWN, .no_auth = 1};
	if (!raw(cx, &rq, &r) || !expect_status(cx, conf_str(cx, "a request (%s)", how), &r, 401))
		return;
	const char *www = header_of(cx, &r, "WWW-Authenticate");
	if (!www || strncasecmp(www, "Bearer", 6) != 0)
		conf_fail(cx, "the 401 carries WWW-Authenticate: %s, expected Bearer",
			  www ? www : "(absent)");
	else if (json_object_get(json_of(cx, &r), "jsonrpc"))
		conf_fail(cx, "the 401 carries a JSON-RPC body; authentication is refused "
			  "before the protocol (spec §6.1)");
	else
		conf_pass(cx);
}

static void check_scopes_declared(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!need_token(cx))
		return;
	if (conf_has_capability(cx, "scopes"))
		conf_pass(cx);
	else
		conf_skip(cx, "the server offers no scopes, even to an authenticated caller");
}

/*
** The owner a record written without one gets: the principal. Returns it,
** or NULL after a verdict.
*/
static const char *principal_of(conf_ctx *cx)
{
	if (!need_token(cx) || !conf_need_writes(cx))
		return NULL;
	if (!conf_has_capability(cx, "scopes")) {
		conf_skip(cx, "the server does not declare \"scopes\"");
		return NULL;
	}
	const char *m = conf_marker(cx);
	json_t *ids = conf_remember(cx, json_pack("[o]", conf_record(cx, conf_str(cx, "%s by the "
							"token's principal", m), m)));
	json_t *found = ids ? conf_timeline_of(cx, m) : NULL;
	if (!found)
		return NULL;
	if (json_array_size(found) != 1) {
		conf_fail(cx, "timeline found %zu records of the one just written",
			  json_array_size(found));
		return NULL;
	}
	json_t *owner = json_object_get(json_array_get(found, 0), "owner");
	if (!json_is_string(owner) || json_string_length(owner) == 0) {
		conf_fail(cx, "a record written without owner came back with owner %s; over "
			  "HTTP it is the authenticated principal (spec §6)",
			  owner ? conf_show(cx, owner) : "(absent)");
		return NULL;
	}
	return json_string_value(owner);
}

static void check_owner_is_principal(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *p = principal_of(cx);
	if (!p)
		return;
	/* The same principal, named explicitly, is of course accepted. */
	const char *m = conf_marker(cx);
	json_t *rec = conf_record(cx, m, m);
	json_object_set_new(rec, "owner", json_string(p));
	if (conf_remember(cx, json_pack("[o]", rec)))
		conf_pass(cx);
}

static void check_other_owner_refused(conf_ctx *cx, const void *arg)
{
	const char *method = arg;
	const char *p = principal_of(cx);
	if (!p)
		return;
	const char *other = conf_str(cx, "%s-someone-else", p);
	json_t *params;
	if (strcmp(method, "memory/remember") == 0)
		params = json_pack("{s:[o],s:s}", "records", conf_record(cx, conf_marker(cx), NULL),
				   "owner", other);
	else if (strcmp(method, "memory/recall") == 0)
		params = json_pack("{s:s,s:s}", "query", conf_marker(cx), "owner", other);
	else
		params = json_pack("{s:s}", "owner", other);
	if (conf_expect_error(cx, method, params, CONF_SCOPE_DENIED, 0))
		conf_pass(cx);
}

/* A record's own owner field is a claim as much as remember's. */
static void check_record_owner_refused(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *p = principal_of(cx);
	if (!p)
		return;
	json_t *rec = conf_record(cx, conf_marker(cx), NULL);
	json_object_set_new(rec, "owner", json_string(conf_str(cx, "%s-someone-else", p)));
	if (conf_expect_error(cx, "memory/remember", json_pack("{s:[o]}", "records", rec),
			      CONF_SCOPE_DENIED, 0))
		conf_pass(cx);
}

static const conf_check http_checks[] = {
	{"a POST with a foreign Origin is 403", check_origin_foreign, NULL},
	{"a GET of the profile with a foreign Origin is 403", check_origin_foreign, WELL_KNOWN},
	{"a request without Origin is served", check_origin_absent, NULL},
	{"A2M-Protocol-Version not ours is 400 with -32007", check_version_foreign, NULL},
	{"A2M-Protocol-Version: a2m/0.1 is accepted", check_version_accepted,
	 "A2M-Protocol-Version: " CONF_PROTOCOL},
	{"no A2M-Protocol-Version is accepted", check_version_accepted, NULL},
	{"GET on the endpoint is 405 with Allow: POST", check_get_405, NULL},
	{"a request is 200 with an application/json response", check_request_200, NULL},
	{"a notification is 202 with an empty body", check_notification_202, NULL},
	{"a batch is 200 with -32600, id null", check_batch_refused, NULL},
	{"protocol errors are 200 with an error object, never 404", check_protocol_error_200,
	 NULL},
	{"an unknown path is 404", check_unknown_path, NULL},
	{"Content-Type: text/plain is 415", check_content_type, "text/plain"},
	{"no Content-Type is 415", check_content_type, ""},
	{"Content-Type with a charset parameter is accepted", check_content_type_charset, NULL},
	{"a 17 MiB body is 413", check_body_too_large, NULL},
	{"the well-known profile is the describe result, push false", check_well_known, NULL},
	{"describe reports events.push false", check_push_false, NULL},
	{"memory/events/subscribe is -32003", check_subscribe_refused, NULL},
	{"an unauthenticated caller is not offered scopes", check_no_scopes_unauthenticated,
	 NULL},
	{"no token is 401 with WWW-Authenticate: Bearer", check_auth_refused, "none"},
	{"a wrong token is 401", check_auth_refused, "wrong"},
	{"the profile without a token is 401", check_auth_refused, "profile"},
	{"an authenticated caller is offered scopes", check_scopes_declared, NULL},
	{"a record written without owner is owned by the principal", check_owner_is_principal,
	 NULL},
	{"remember naming another owner is -32005", check_other_owner_refused,
	 "memory/remember"},
	{"a record naming another owner is -32005", check_record_owner_refused, NULL},
	{"recall naming another owner is -32005", check_other_owner_refused, "memory/recall"},
	{"timeline naming another owner is -32005", check_other_owner_refused,
	 "memory/timeline"},
};

const conf_group conf_group_http = {"http", NULL, http_checks, CONF_COUNT(http_checks), 0};
