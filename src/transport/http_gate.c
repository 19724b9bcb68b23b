/*
** http_gate.c — the HTTP binding's gate: everything decided from a
** request's headers before its body is read (http.h has the order, and
** docs/HTTP.md the why of each check): Origin, path, method, bearer token,
** protocol version, content type and announced length.
**
** Apart from http_request.c because this is the security boundary of the binding:
** an unauthenticated or foreign caller never gets past these functions,
** so they are kept where they can be read, and reviewed, on their own.
*/
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "rpc/rpc.h"
#include "transport/http_internal.h"

/* What the version header must name to be ours (spec §8.3.2, §4.1). */
#define VERSION_HEADER "A2M-Protocol-Version"

/* The headers the binding looks at, gathered in one pass. */
typedef struct req_headers {
	const a2m_http *s;
	const char *origin;     /* the first Origin */
	int origin_refused;     /* some Origin is not on the list */
	const char *auth;
	int n_auth;
	const char *content_type;
	const char *version;
	int n_version;
	const char *content_length;
} req_headers;

static int origin_allowed(const a2m_http *s, const char *origin)
{
	for (size_t i = 0; i < s->n_origins; i++) {
		/* Scheme and host are case-insensitive (RFC 6454 serialises them
		** in lower case, but a proxy may not). */
		if (strcasecmp(s->origins[i], origin) == 0)
			return 1;
	}
	/* With --ui, the inspector's own requests: only a page this server
	** served has this origin. A page elsewhere whose name was made to
	** resolve here (DNS rebinding) has its own name in its Origin. */
	size_t n_own = atomic_load_explicit(&s->n_own, memory_order_acquire);
	for (size_t i = 0; i < n_own; i++)
		if (strcasecmp(s->own_origins[i], origin) == 0)
			return 1;
	return 0;
}

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	req_headers *hd = cls;
	(void)kind;
	if (!key)
		return MHD_YES;
	if (!value)
		value = "";
	if (strcasecmp(key, "Origin") == 0) {
		/* Every Origin must pass: a second one must not smuggle a
		** foreign page past a check that read only the first. */
		if (!hd->origin)
			hd->origin = value;
		if (!origin_allowed(hd->s, value))
			hd->origin_refused = 1;
	} else if (strcasecmp(key, "Authorization") == 0) {
		hd->auth = value;
		hd->n_auth++;
	} else if (strcasecmp(key, "Content-Type") == 0) {
		if (!hd->content_type)
			hd->content_type = value;
	} else if (strcasecmp(key, VERSION_HEADER) == 0) {
		hd->version = value;
		hd->n_version++;
	} else if (strcasecmp(key, "Content-Length") == 0) {
		hd->content_length = value;
	}
	return MHD_YES;
}

/* application/json, in any case, with or without parameters (charset=...). */
static int is_json_type(const char *v)
{
	static const char want[] = "application/json";
	if (!v)
		return 0;
	while (*v == ' ' || *v == '\t')
		v++;
	if (strncasecmp(v, want, sizeof want - 1) != 0)
		return 0;
	v += sizeof want - 1;
	while (*v == ' ' || *v == '\t')
		v++;
	return *v == '\0' || *v == ';';
}

/* The principal of a well-formed "Bearer <token>" header, or NULL. */
static const char *authenticate(const a2m_http *s, const req_headers *hd)
{
	/* Two Authorization headers are ambiguous: which one was meant is
	** exactly what an attacker would like to choose. */
	if (hd->n_auth != 1)
		return NULL;
	const char *v = hd->auth;
	while (*v == ' ' || *v == '\t')
		v++;
	if (strncasecmp(v, "Bearer", 6) != 0 || (v[6] != ' ' && v[6] != '\t'))
		return NULL;
	v += 6;
	while (*v == ' ' || *v == '\t')
		v++;
	size_t len = strlen(v);
	while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	if (len == 0)
		return NULL;
	return a2m_bearer_lookup(s->tokens, v, len);
}

/* Spec §8.3.2: a version we do not speak is 400 with a -32007 error object. */
static enum MHD_Result refuse_version(a2m_http *s, struct MHD_Connection *c, request *r)
{
	size_t len;
	char *text = a2m_rpc_error_text(NULL, A2M_PROTOCOL_NOT_SUPPORTED,
					"Protocol not supported: this server speaks " A2M_PROTOCOL,
					json_pack("{s:[s]}", "supported", A2M_PROTOCOL), &len);
	if (!text)
		return MHD_NO;
	return a2m_http_send_json(s, c, r, MHD_HTTP_BAD_REQUEST, text, len);
}

static enum MHD_Result refuse_auth(a2m_http *s, struct MHD_Connection *c, request *r,
				   const req_headers *hd)
{
	/* RFC 6750 §3: say that a token is wanted, and whether the one sent
	** was bad, but never which part of it. */
	return a2m_http_send_text(s, c, r, MHD_HTTP_UNAUTHORIZED,
				  "401 Unauthorized: send Authorization: Bearer <token>\n",
				  "WWW-Authenticate",
				  hd->n_auth ? "Bearer realm=\"a2m\", error=\"invalid_token\""
					     : "Bearer realm=\"a2m\"");
}

/*
** Everything decided from the headers (http.h has the order). Returns
** MHD_YES with nothing queued when the request is a POST to read the body
** of; otherwise a response has been queued (or MHD_NO: close).
*/
enum MHD_Result a2m_http_on_headers(a2m_http *s, struct MHD_Connection *c, request *r,
				    const char *url, const char *method, int *admitted)
{
	req_headers hd;
	memset(&hd, 0, sizeof hd);
	hd.s = s;
	*admitted = 0;
	a2m_mhd()->get_connection_values(c, MHD_HEADER_KIND, scan_header, &hd);

	/* Spec §8.3.1: before anything else, on every path, so a page in a
	** browser learns nothing at all — not even which paths exist. */
	if (hd.origin_refused)
		return a2m_http_send_text(s, c, r, MHD_HTTP_FORBIDDEN,
					  "403 Forbidden: this Origin is not allowed\n",
					  NULL, NULL);
	r->origin = hd.origin;

	int is_endpoint = strcmp(url, s->path) == 0;
	int is_profile = strcmp(url, A2M_HTTP_WELL_KNOWN) == 0;
	if (s->ui && !is_endpoint && a2m_http_ui_path(url))
		return a2m_http_ui(s, c, r, url, method);
	if (!is_endpoint && !is_profile)
		return a2m_http_send_text(s, c, r, MHD_HTTP_NOT_FOUND, "404 Not Found\n",
					  NULL, NULL);

	if (is_profile) {
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
		    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
			return a2m_http_send_text(s, c, r, MHD_HTTP_METHOD_NOT_ALLOWED,
						  "405 Method Not Allowed\n", "Allow", "GET, HEAD");
		if (s->tokens && !(r->principal = authenticate(s, &hd)))
			return refuse_auth(s, c, r, &hd);
		/* Answered once the request is complete: a response queued now,
		** before libmicrohttpd has seen the (empty) body, would cost the
		** client its keep-alive connection. */
		r->profile = 1;
		*admitted = 1;
		return MHD_YES;
	}

	if (strcmp(method, MHD_HTTP_METHOD_OPTIONS) == 0 && hd.origin) {
		/* A browser's CORS preflight from an allowed page: say what it may
		** send. Without an allowed Origin there is nothing to grant. */
		struct MHD_Response *resp =
			a2m_mhd()->create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
		if (!resp ||
		    !a2m_mhd()->add_response_header(resp, "Access-Control-Allow-Methods", "POST") ||
		    !a2m_mhd()->add_response_header(resp, "Access-Control-Allow-Headers",
					     "Authorization, Content-Type, " VERSION_HEADER) ||
		    !a2m_mhd()->add_response_header(resp, "Access-Control-Max-Age", "600")) {
			if (resp)
				a2m_mhd()->destroy_response(resp);
			return MHD_NO;
		}
		return a2m_http_send_response(s, c, r, MHD_HTTP_NO_CONTENT, resp);
	}
	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
		return a2m_http_send_text(s, c, r, MHD_HTTP_METHOD_NOT_ALLOWED,
					  "405 Method Not Allowed: the endpoint takes POST\n",
					  "Allow", "POST");

	/* Spec §6.1: refused before any JSON-RPC processing, and not as a
	** JSON-RPC error, since the request was never admitted. */
	if (s->tokens && !(r->principal = authenticate(s, &hd)))
		return refuse_auth(s, c, r, &hd);

	/* Present and not ours is refused; absent is fine (spec §8.3.2). Two
	** copies are refused too: which one a gateway acted on is a guess. */
	if (hd.n_version > 1 || (hd.version && !a2m_protocol_compatible(hd.version)))
		return refuse_version(s, c, r);

	if (!is_json_type(hd.content_type))
		return a2m_http_send_text(s, c, r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
					  "415 Unsupported Media Type: send Content-Type: application/json\n",
					  "Accept-Post", "application/json");

	if (hd.content_length) {
		/* libmicrohttpd has already refused a malformed length. */
		unsigned long long n = strtoull(hd.content_length, NULL, 10);
		if (n > s->max_body)
			return a2m_http_send_text(s, c, r, MHD_HTTP_CONTENT_TOO_LARGE,
						  "413 Content Too Large\n", NULL, NULL);
		r->cap = (size_t)n;
	}
	*admitted = 1;
	return MHD_YES;
}
