/*
** client_http.c — the HTTP transport of an a2m_client (spec §8.3), on
** libcurl.
**
** The handle's byte stream is cut into lines as stdio would cut it, and each
** line becomes one POST; the body of each answer becomes one received line.
** That is all client.c needs (client_internal.h), so ids, the inbox and
** tracing work exactly as they do over stdio. One CURL easy handle is kept
** for the life of the client: libcurl keeps its connection open between
** transfers, which is the keep-alive the binding is meant to be used with.
**
** libcurl is run with CURLOPT_NOSIGNAL, so it never touches the process's
** signal handlers; a SIGPIPE from writing to a server that has gone is
** blocked on this thread for the duration of the transfer and consumed, as
** client_stdio.c does, so it cannot end the caller's process.
*/
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "client/client_internal.h"
#include "util/curl_api.h"
#include "util/log.h"

/* How much of a refused answer's body an error message shows. */
#define SHOWN_BODY 160

typedef struct body {
	struct body *next;
	size_t len;
	char data[];
} body;

typedef struct http_impl {
	const a2m_curl_api *cu;  /* libcurl, loaded (util/curl_api.h) */
	CURL *curl;
	struct curl_slist *headers;
	char *url;
	int failed;          /* the connection could not be made or broke */
	long status;         /* of the last answer */

	char *line;          /* bytes written, waiting for their '\n' */
	size_t line_len, line_cap;

	char *resp;          /* the answer being received */
	size_t resp_len, resp_cap;
	int resp_too_big;

	body *head, *tail;   /* answers received, not yet read: oldest first */
} http_impl;

static http_impl *impl_of(const a2m_client *c)
{
	return c->impl;
}

/* ---- receiving ---- */

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
	http_impl *s = user;
	size_t len = size * n;
	if (s->resp_len + len > A2M_CLIENT_MAX_LINE) {
		s->resp_too_big = 1;
		return 0; /* makes libcurl fail the transfer */
	}
	if (s->resp_len + len + 1 > s->resp_cap) {
		size_t cap = s->resp_cap ? s->resp_cap : 4096;
		while (cap < s->resp_len + len + 1)
			cap *= 2;
		char *grown = realloc(s->resp, cap);
		if (!grown)
			return 0;
		s->resp = grown;
		s->resp_cap = cap;
	}
	memcpy(s->resp + s->resp_len, data, len);
	s->resp_len += len;
	return len;
}

static int queue_body(http_impl *s, const char *data, size_t len)
{
	body *b = malloc(sizeof *b + len + 1);
	if (!b)
		return A2M_CLIENT_ERR_NOMEM;
	b->next = NULL;
	b->len = len;
	memcpy(b->data, data, len);
	b->data[len] = '\0';
	if (s->tail)
		s->tail->next = b;
	else
		s->head = b;
	s->tail = b;
	return A2M_CLIENT_OK;
}

/* ---- one POST ---- */

/* curl_easy_perform() with SIGPIPE held off this thread (see the top). */
static CURLcode perform_quietly(const a2m_curl_api *cu, CURL *curl)
{
	sigset_t pipe_only, old, pending;
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
	sigpending(&pending);
	int was_pending = sigismember(&pending, SIGPIPE);
	CURLcode rc = cu->easy_perform(curl);
	if (!was_pending) {
		sigpending(&pending);
		if (sigismember(&pending, SIGPIPE)) {
			struct timespec zero = {0, 0};
			while (sigtimedwait(&pipe_only, NULL, &zero) < 0 && errno == EINTR)
				;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Whether the line holds anything but blanks (spec §8.2's framing skips them). */
static int has_content(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return 1;
	return 0;
}

/* POSTs one message and queues the answer. Returns an a2m_client_code. */
static int post(a2m_client *c, http_impl *s, const char *msg, size_t len, int64_t deadline)
{
	int64_t left = deadline - a2m_client_now_ms();
	if (left <= 0) {
		a2m_client_set_error(c, "timed out after %d ms before sending", c->timeout_ms);
		return A2M_CLIENT_ERR_TIMEOUT;
	}
	s->resp_len = 0;
	s->resp_too_big = 0;
	s->status = 0;
	/* A NUL or invalid UTF-8 inside msg goes out as it is: the length is
	** given, and libcurl never looks at the bytes. */
	if (s->cu->easy_setopt(s->curl, CURLOPT_POSTFIELDS, msg) != CURLE_OK ||
	    s->cu->easy_setopt(s->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len) != CURLE_OK ||
	    s->cu->easy_setopt(s->curl, CURLOPT_TIMEOUT_MS, (long)left) != CURLE_OK) {
		a2m_client_set_error(c, "cannot set up the request");
		return A2M_CLIENT_ERR_NOMEM;
	}
	CURLcode rc = perform_quietly(s->cu, s->curl);
	long status = 0;
	s->cu->easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
	s->status = status;
	if (rc != CURLE_OK) {
		if (s->resp_too_big) {
			a2m_client_set_error(c, "the server sent a body longer than %zu bytes",
					     A2M_CLIENT_MAX_LINE);
			return A2M_CLIENT_ERR_TOOBIG;
		}
		if (rc == CURLE_OPERATION_TIMEDOUT) {
			a2m_client_set_error(c, "timed out after %d ms waiting for %s",
					     c->timeout_ms, s->url);
			return A2M_CLIENT_ERR_TIMEOUT;
		}
		if (rc == CURLE_OUT_OF_MEMORY || rc == CURLE_WRITE_ERROR) {
			a2m_client_set_error(c, "out of memory receiving from %s", s->url);
			return A2M_CLIENT_ERR_NOMEM;
		}
		/* The next request starts a new connection; until one works the
		** handle is not alive, which tells a caller to stop or retry. */
		s->failed = 1;
		a2m_client_set_error(c, "POST %s: %s", s->url, s->cu->easy_strerror(rc));
		return A2M_CLIENT_ERR_IO;
	}
	s->failed = 0;
	if (status == 202 || status == 204)
		return A2M_CLIENT_OK; /* a notification: nothing to read */
	if (status != 200) {
		size_t shown = s->resp_len < SHOWN_BODY ? s->resp_len : SHOWN_BODY;
		while (shown && (s->resp[shown - 1] == '\n' || s->resp[shown - 1] == '\r'))
			shown--;
		a2m_client_set_error(c, "HTTP %ld from %s%s%.*s", status, s->url,
				     shown ? ": " : "", (int)shown, shown ? s->resp : "");
		return A2M_CLIENT_ERR_IO;
	}
	int qrc = queue_body(s, s->resp ? s->resp : "", s->resp_len);
	if (qrc != A2M_CLIENT_OK)
		a2m_client_set_error(c, "out of memory queueing an answer");
	return qrc;
}

/* ---- the transport operations ---- */

static int http_write_bytes(a2m_client *c, const void *buf, size_t len, int64_t deadline)
{
	http_impl *s = impl_of(c);
	const char *p = buf, *end = p + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t take = (size_t)((nl ? nl : end) - p);
		if (s->line_len + take > A2M_CLIENT_MAX_LINE) {
			s->line_len = 0;
			a2m_client_set_error(c, "a message longer than %zu bytes",
					     A2M_CLIENT_MAX_LINE);
			return A2M_CLIENT_ERR_TOOBIG;
		}
		if (s->line_len + take > s->line_cap) {
			size_t cap = s->line_cap ? s->line_cap : 4096;
			while (cap < s->line_len + take)
				cap *= 2;
			char *grown = realloc(s->line, cap);
			if (!grown) {
				a2m_client_set_error(c, "out of memory buffering a message");
				return A2M_CLIENT_ERR_NOMEM;
			}
			s->line = grown;
			s->line_cap = cap;
		}
		if (take)
			memcpy(s->line + s->line_len, p, take);
		s->line_len += take;
		if (!nl)
			break;
		p = nl + 1;
		size_t n = s->line_len;
		s->line_len = 0;
		if (has_content(s->line, n)) {
			int rc = post(c, s, s->line, n, deadline);
			if (rc != A2M_CLIENT_OK)
				return rc;
		}
	}
	return A2M_CLIENT_OK;
}

static int http_read_line(a2m_client *c, char **line, size_t *len, int64_t deadline)
{
	http_impl *s = impl_of(c);
	(void)deadline;
	body *b = s->head;
	if (!b) {
		/* Over HTTP an answer arrives only with the POST that asked for
		** it; waiting longer cannot bring one. */
		a2m_client_set_error(c, "nothing to read: over HTTP a message arrives only "
				     "as the answer to a request");
		return A2M_CLIENT_ERR_TIMEOUT;
	}
	char *copy = malloc(b->len + 1);
	if (!copy) {
		a2m_client_set_error(c, "out of memory reading an answer");
		return A2M_CLIENT_ERR_NOMEM;
	}
	memcpy(copy, b->data, b->len + 1);
	*line = copy;
	*len = b->len;
	s->head = b->next;
	if (!s->head)
		s->tail = NULL;
	free(b);
	return A2M_CLIENT_OK;
}

static int http_close_input(a2m_client *c, int *exit_status, int64_t deadline)
{
	(void)c;
	(void)deadline;
	*exit_status = 0; /* the server is not ours to end */
	return A2M_CLIENT_OK;
}

static int http_alive(a2m_client *c)
{
	return !impl_of(c)->failed;
}

static int http_kill(a2m_client *c)
{
	(void)c;
	return A2M_CLIENT_OK;
}

static void free_impl(http_impl *s)
{
	if (!s)
		return;
	if (s->curl)
		s->cu->easy_cleanup(s->curl);
	s->cu->slist_free_all(s->headers);
	while (s->head) {
		body *next = s->head->next;
		free(s->head);
		s->head = next;
	}
	free(s->url);
	free(s->line);
	free(s->resp);
	free(s);
}

static void http_destroy(a2m_client *c)
{
	free_impl(impl_of(c));
	c->impl = NULL;
}

static const a2m_client_ops http_ops = {
	.name = "http",
	.write_bytes = http_write_bytes,
	.read_line = http_read_line,
	.close_input = http_close_input,
	.alive = http_alive,
	.kill = http_kill,
	.destroy = http_destroy,
};

/* ---- making one ---- */

void a2m_client_http_options_init(a2m_client_http_options *o)
{
	memset(o, 0, sizeof *o);
}

long a2m_client_http_status(const a2m_client *c)
{
	return c && c->ops == &http_ops ? impl_of(c)->status : 0;
}

/* Appends one header line; returns 0, or -1 when memory ran out. */
static int add_header(http_impl *s, const char *line)
{
	struct curl_slist *l = s->cu->slist_append(s->headers, line);
	if (!l)
		return -1;
	s->headers = l;
	return 0;
}

static int is_http_url(const char *url)
{
	return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

int a2m_client_connect_http(const char *url, const a2m_client_http_options *opts,
			    a2m_client **out)
{
	a2m_client_http_options defaults;
	if (!out)
		return A2M_CLIENT_ERR_MISUSE;
	*out = NULL;
	if (!url || !is_http_url(url))
		return A2M_CLIENT_ERR_MISUSE;
	if (!opts) {
		a2m_client_http_options_init(&defaults);
		opts = &defaults;
	}
	const char *why = NULL;
	const a2m_curl_api *cu = a2m_curl(&why);
	if (!cu) {
		a2m_log(A2M_LOG_ERROR, "HTTP client: %s", why);
		return A2M_CLIENT_ERR_IO;
	}

	http_impl *s = calloc(1, sizeof *s);
	if (!s)
		return A2M_CLIENT_ERR_NOMEM;
	s->cu = cu;
	s->url = strdup(url);
	s->curl = s->cu->easy_init();
	if (!s->url || !s->curl)
		goto nomem;

	/* The headers of every POST. libcurl's "Expect: 100-continue" on large
	** bodies is kept: it costs a round trip, and lets a server refuse a
	** body over its limit (413) before it is sent, so the caller sees the
	** status rather than a connection reset. */
	const char *version = opts->protocol_version ? opts->protocol_version : "a2m/0.1";
	char line[128];
	if (add_header(s, "Content-Type: application/json") ||
	    add_header(s, "Accept: application/json"))
		goto nomem;
	if (*version) {
		snprintf(line, sizeof line, "A2M-Protocol-Version: %s", version);
		if (add_header(s, line))
			goto nomem;
	}
	if (opts->bearer_token) {
		char *auth = NULL;
		if (asprintf(&auth, "Authorization: Bearer %s", opts->bearer_token) < 0)
			goto nomem;
		int bad = add_header(s, auth);
		/* libcurl copied it; our copy of the secret goes now. */
		memset(auth, 0, strlen(auth));
		free(auth);
		if (bad)
			goto nomem;
	}
	for (const char *const *h = opts->headers; h && *h; h++)
		if (add_header(s, *h))
			goto nomem;

	CURL *k = s->curl;
	/* Redirects never followed: one would replay the body, token and all. */
	int bad = a2m_curl_post_setup(s->cu, k, s->url, s->headers, on_body, s,
				      "a2m-client/0.1") != 0;
	if (opts->ca_file)
		bad = bad || s->cu->easy_setopt(k, CURLOPT_CAINFO, opts->ca_file) != CURLE_OK;
	if (opts->insecure)
		bad = bad || s->cu->easy_setopt(k, CURLOPT_SSL_VERIFYPEER, 0L) != CURLE_OK ||
		      s->cu->easy_setopt(k, CURLOPT_SSL_VERIFYHOST, 0L) != CURLE_OK;
	if (bad)
		goto nomem;

	a2m_client *c = a2m_client_new(&http_ops, s);
	if (!c)
		goto nomem;
	if (opts->timeout_ms > 0)
		a2m_client_set_timeout(c, opts->timeout_ms);
	*out = c;
	return A2M_CLIENT_OK;

nomem:
	free_impl(s);
	return A2M_CLIENT_ERR_NOMEM;
}
