/*
** embedder.c — what both HTTP embedders share: the configuration and its
** defaults, the endpoint URL, one libcurl handle kept alive between calls,
** batching, the HTTP status, and the width check across the requests of one
** call. The backends (ollama.c, openai.c) only write and read the bodies.
**
** Failure is ordinary here: a model server is a separate process that may
** be down, slow or loading a model. So nothing is printed, nothing retried,
** and a failed call leaves the handle as usable as a fresh one — libcurl
** drops a connection it could not finish with and opens a new one on the
** next call. Only the caller knows whether to wait, degrade or give up
** (docs/EMBEDDINGS.md: the stack ranks lexically meanwhile).
*/
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


#include "embed/backend.h"
#include "util/curl_api.h"

/* A body larger than this answers no request of ours: fixed allowance plus
** a generous one per text (a 16k-wide vector printed in full is ~400 KiB). */
#define RESPONSE_BASE_BYTES     (1u << 20)
#define RESPONSE_PER_TEXT_BYTES (512u << 10)
/* How much of a server's error message is quoted back. */
#define SERVER_MESSAGE_MAX 160

typedef struct http_embedder {
	a2m_embedder              base;     /* first: the seam's pointer is ours */
	const a2m_embed_backend  *be;
	pthread_mutex_t           lock;     /* one request at a time on the handle */
	const a2m_curl_api       *cu;       /* libcurl, loaded (util/curl_api.h) */
	CURL                     *curl;
	struct curl_slist        *headers;
	char                     *url;      /* the resolved endpoint */
	char                     *model;
	long                      timeout_ms;
	size_t                    batch;
	/* The response being received. */
	char                     *resp;
	size_t                    resp_len, resp_cap, resp_limit;
	int                       resp_too_big, resp_oom;
	char                      curl_err[CURL_ERROR_SIZE];
} http_embedder;

/* ---- small shared helpers ---- */

const char *a2m_embed_strerror(int status)
{
	switch (status) {
	case A2M_EMBED_OK:           return "ok";
	case A2M_EMBED_EINVAL:       return "invalid argument";
	case A2M_EMBED_ENOMEM:       return "out of memory";
	case A2M_EMBED_EUNREACHABLE: return "unreachable";
	case A2M_EMBED_ETIMEOUT:     return "timed out";
	case A2M_EMBED_EHTTP:        return "HTTP error";
	case A2M_EMBED_EPROTO:       return "bad response";
	default:                     return "unknown";
	}
}

/*
** Drops a UTF-8 sequence that truncation cut short at the end of s, so a
** message can always be put in a JSON string (jansson refuses invalid UTF-8).
*/
static void trim_partial_utf8(char *s)
{
	size_t n = strlen(s), i = n;
	while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
		i--;
	if (i == 0)
		return;
	unsigned char lead = (unsigned char)s[i - 1];
	size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
	if (n - (i - 1) < need)
		s[i - 1] = '\0';
}

int a2m_embed_fail(char *err, size_t errlen, int status, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		int len = vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
		if (len >= 0 && (size_t)len >= errlen)
			trim_partial_utf8(err);
	}
	return status;
}

int a2m_embed_read_vector(const json_t *arr, float *dst, size_t width)
{
	if (!json_is_array(arr) || json_array_size(arr) != width)
		return -1;
	for (size_t i = 0; i < width; i++) {
		const json_t *x = json_array_get(arr, i);
		if (!json_is_number(x))
			return -1;
		/* A double beyond FLT_MAX rounds to infinity: refused, since an
		** infinite component makes every comparison with it meaningless. */
		float f = (float)json_number_value(x);
		if (!isfinite(f))
			return -1;
		dst[i] = f;
	}
	return 0;
}

json_t *a2m_embed_request_inputs(const char *model, const char *const *texts, size_t n,
				 size_t *bad_text)
{
	*bad_text = n;
	json_t *input = json_array();
	json_t *req = json_object();
	if (!input || !req || json_object_set_new(req, "model", json_string(model)) != 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_string(texts[i]);
		if (!s) {
			/* json_string refuses invalid UTF-8. */
			*bad_text = i;
			goto fail;
		}
		if (json_array_append_new(input, s) != 0)
			goto fail;
	}
	if (json_object_set(req, "input", input) != 0)
		goto fail;
	json_decref(input);
	return req;
fail:
	json_decref(input);
	json_decref(req);
	return NULL;
}

/* ---- the endpoint ---- */

static int ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);
	return len >= n && strncasecmp(s + len - n, suffix, n) == 0;
}

/*
** The endpoint for a configured URL (see a2m_embedder_config.url), or NULL
** when memory runs out. The path is what precedes any '?' or '#'; trailing
** slashes on it are dropped; a query string is kept after the new path.
*/
static char *resolve_url(const a2m_embed_backend *be, const char *url)
{
	size_t path_end = strcspn(url, "?#");
	size_t len = path_end;
	while (len > 0 && url[len - 1] == '/')
		len--;
	const char *add;
	if (ends_with(url, len, be->endpoint))
		add = "";
	else if (be->base_suffix && ends_with(url, len, be->base_suffix))
		add = be->after_base;
	else
		add = be->path;
	char *out = NULL;
	if (asprintf(&out, "%.*s%s%s", (int)len, url, add, url + path_end) < 0)
		return NULL;
	return out;
}

/* ---- receiving ---- */

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
	http_embedder *h = user;
	size_t len = size * n;
	if (h->resp_len + len > h->resp_limit) {
		h->resp_too_big = 1;
		return 0; /* fails the transfer with CURLE_WRITE_ERROR */
	}
	if (h->resp_len + len + 1 > h->resp_cap) {
		size_t cap = h->resp_cap ? h->resp_cap : 16384;
		while (cap < h->resp_len + len + 1)
			cap *= 2;
		char *grown = realloc(h->resp, cap);
		if (!grown) {
			h->resp_oom = 1;
			return 0;
		}
		h->resp = grown;
		h->resp_cap = cap;
	}
	memcpy(h->resp + h->resp_len, data, len);
	h->resp_len += len;
	h->resp[h->resp_len] = '\0';
	return len;
}

/* Copies a server's message into buf, one line, control bytes blanked. */
static void quote_message(const char *msg, char *buf, size_t len)
{
	size_t i = 0;
	for (; msg && msg[i] && i + 1 < len && i < SERVER_MESSAGE_MAX; i++)
		buf[i] = (unsigned char)msg[i] < 0x20 || msg[i] == 0x7f ? ' ' : msg[i];
	if (len) {
		buf[i < len ? i : len - 1] = '\0';
		trim_partial_utf8(buf);
	}
}

/* Maps a failed transfer onto the seam's statuses. */
static int transfer_failed(http_embedder *h, CURLcode cc, char *err, size_t errlen)
{
	const char *kind = h->be->kind;
	const char *detail = h->curl_err[0] ? h->curl_err : h->cu->easy_strerror(cc);
	if (h->resp_oom)
		return a2m_embed_fail(err, errlen, A2M_EMBED_ENOMEM, "embedder %s: out of memory",
				      kind);
	if (h->resp_too_big)
		return a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
				      "embedder %s: response larger than %zu bytes", kind,
				      h->resp_limit);
	if (cc == CURLE_OPERATION_TIMEDOUT)
		return a2m_embed_fail(err, errlen, A2M_EMBED_ETIMEOUT,
				      "embedder %s: no answer within %ld ms (%s)", kind,
				      h->timeout_ms, detail);
	if (cc == CURLE_OUT_OF_MEMORY)
		return a2m_embed_fail(err, errlen, A2M_EMBED_ENOMEM, "embedder %s: out of memory",
				      kind);
	return a2m_embed_fail(err, errlen, A2M_EMBED_EUNREACHABLE, "embedder %s: %s", kind,
			      detail);
}

/*
** The request bodies for every batch of a call, built before anything is
** sent, so that a text the API cannot carry (invalid UTF-8) fails the call
** with nothing sent rather than after some batches went out. Sets
** *bodies_out to nb compact JSON strings (free with free_bodies).
*/
static int build_bodies(http_embedder *h, const char *const *texts, size_t n, size_t nb,
			char ***bodies_out, char *err, size_t errlen)
{
	const char *kind = h->be->kind;
	char **bodies = calloc(nb, sizeof *bodies);
	*bodies_out = bodies;
	if (!bodies)
		return a2m_embed_fail(err, errlen, A2M_EMBED_ENOMEM, "embedder %s: out of memory",
				      kind);
	for (size_t b = 0; b < nb; b++) {
		size_t start = b * h->batch;
		size_t count = n - start < h->batch ? n - start : h->batch;
		size_t bad = count;
		json_t *req = h->be->request(h->model, texts + start, count, &bad);
		if (!req)
			return bad < count ? a2m_embed_fail(err, errlen, A2M_EMBED_EINVAL,
							    "embedder %s: text %zu is not valid UTF-8",
							    kind, start + bad)
					   : a2m_embed_fail(err, errlen, A2M_EMBED_ENOMEM,
							    "embedder %s: out of memory", kind);
		bodies[b] = json_dumps(req, JSON_COMPACT);
		json_decref(req);
		if (!bodies[b])
			return a2m_embed_fail(err, errlen, A2M_EMBED_ENOMEM,
					      "embedder %s: out of memory", kind);
	}
	return 0;
}

static void free_bodies(char **bodies, size_t nb)
{
	for (size_t b = 0; bodies && b < nb; b++)
		free(bodies[b]);
	free(bodies);
}

/*
** POSTs one request body answering n texts: on success *out holds n * *dims
** floats. Called with h->lock held.
*/
static int request_once(http_embedder *h, const char *body, size_t n, float **out,
			size_t *dims, char *err, size_t errlen)
{
	const char *kind = h->be->kind;
	*out = NULL;
	*dims = 0;
	h->resp_len = 0;
	h->resp_too_big = h->resp_oom = 0;
	h->resp_limit = RESPONSE_BASE_BYTES + n * (size_t)RESPONSE_PER_TEXT_BYTES;
	h->curl_err[0] = '\0';
	if (h->resp)
		h->resp[0] = '\0';
	CURLcode cc = h->cu->easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
	if (cc == CURLE_OK)
		cc = h->cu->easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
				      (curl_off_t)strlen(body));
	if (cc == CURLE_OK)
		cc = h->cu->easy_perform(h->curl);
	/* The handle must not keep a pointer to a body the caller frees. */
	h->cu->easy_setopt(h->curl, CURLOPT_POSTFIELDS, NULL);
	if (cc != CURLE_OK)
		return transfer_failed(h, cc, err, errlen);

	long status = 0;
	h->cu->easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	json_error_t jerr;
	json_t *resp = json_loadb(h->resp ? h->resp : "", h->resp_len, 0, &jerr);
	if (status < 200 || status > 299) {
		char msg[SERVER_MESSAGE_MAX + 1] = "";
		quote_message(resp ? h->be->error_message(resp) : NULL, msg, sizeof msg);
		json_decref(resp);
		return a2m_embed_fail(err, errlen, A2M_EMBED_EHTTP, "embedder %s: HTTP %ld%s%s",
				      kind, status, msg[0] ? ": " : "", msg);
	}
	if (!resp)
		return a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
				      "embedder %s: response is not JSON (%s)", kind, jerr.text);
	char why[200] = "";
	int rc = h->be->parse(resp, n, out, dims, why, sizeof why);
	json_decref(resp);
	if (rc)
		return a2m_embed_fail(err, errlen, rc, "embedder %s: %s", kind, why);
	return 0;
}

/* ---- the seam ---- */

static int http_embed(a2m_embedder *e, const char *const *texts, size_t n, float **vectors_out,
		      size_t *dims_out, char *err, size_t errlen)
{
	http_embedder *h = (http_embedder *)e;
	if (err && errlen)
		err[0] = '\0';
	if (!vectors_out || !dims_out)
		return a2m_embed_fail(err, errlen, A2M_EMBED_EINVAL,
				      "embedder: no place for the vectors");
	*vectors_out = NULL;
	*dims_out = 0;
	if (n == 0)
		return 0;
	if (!texts)
		return a2m_embed_fail(err, errlen, A2M_EMBED_EINVAL, "embedder: no texts");
	for (size_t i = 0; i < n; i++)
		if (!texts[i])
			return a2m_embed_fail(err, errlen, A2M_EMBED_EINVAL,
					      "embedder: text %zu is NULL", i);

	size_t nb = (n + h->batch - 1) / h->batch;
	char **bodies = NULL;
	int rc = build_bodies(h, texts, n, nb, &bodies, err, errlen);
	if (rc) {
		free_bodies(bodies, nb);
		return rc;
	}
	float *all = NULL;
	size_t dims = 0;
	pthread_mutex_lock(&h->lock);
	for (size_t b = 0; b < nb && !rc; b++) {
		size_t start = b * h->batch;
		size_t count = n - start < h->batch ? n - start : h->batch;
		float *part = NULL;
		size_t width = 0;
		rc = request_once(h, bodies[b], count, &part, &width, err, errlen);
		if (rc)
			break;
		if (!all) {
			dims = width;
			if (dims > SIZE_MAX / sizeof *all / n || !(all = malloc(n * dims * sizeof *all)))
				rc = a2m_embed_fail(err, errlen, A2M_EMBED_ENOMEM,
						    "embedder %s: out of memory", h->be->kind);
		} else if (width != dims) {
			/* One call, one space: a server that changed model between two
			** requests must not hand back vectors that cannot be compared. */
			rc = a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
					    "embedder %s: vectors of width %zu, then %zu", h->be->kind,
					    dims, width);
		}
		if (!rc)
			memcpy(all + start * dims, part, count * dims * sizeof *all);
		free(part);
	}
	pthread_mutex_unlock(&h->lock);
	free_bodies(bodies, nb);
	if (rc) {
		free(all);
		return rc;
	}
	*vectors_out = all;
	*dims_out = dims;
	return 0;
}

static const char *http_model(a2m_embedder *e)
{
	return ((http_embedder *)e)->model;
}

static void http_destroy(a2m_embedder *e)
{
	http_embedder *h = (http_embedder *)e;
	if (!h)
		return;
	if (h->curl)
		h->cu->easy_cleanup(h->curl);
	/* The list holds the API key: wipe it before it goes back to malloc. */
	for (struct curl_slist *l = h->headers; l; l = l->next)
		if (l->data)
			explicit_bzero(l->data, strlen(l->data));
	h->cu->slist_free_all(h->headers);
	pthread_mutex_destroy(&h->lock);
	free(h->url);
	free(h->model);
	free(h->resp);
	free(h);
}

/* ---- construction ---- */

static int add_header(http_embedder *h, const char *line)
{
	struct curl_slist *l = h->cu->slist_append(h->headers, line);
	if (!l)
		return -1;
	h->headers = l;
	return 0;
}

static int setup_curl(http_embedder *h, const char *api_key)
{
	if (add_header(h, "Content-Type: application/json") ||
	    add_header(h, "Accept: application/json") ||
	    /* No "Expect: 100-continue" round trip before a large batch. */
	    add_header(h, "Expect:"))
		return -1;
	if (api_key && *api_key) {
		char *auth = NULL;
		if (asprintf(&auth, "Authorization: Bearer %s", api_key) < 0)
			return -1;
		int bad = add_header(h, auth);
		explicit_bzero(auth, strlen(auth));
		free(auth);
		if (bad)
			return -1;
	}
	CURL *k = h->curl;
	/* No signals (no SIGALRM for DNS timeouts inside a server), and no
	** redirects (one would replay the key): a2m_curl_post_setup. */
	int bad = a2m_curl_post_setup(h->cu, k, h->url, h->headers, on_body, h,
				      "a2m-embed/0.1") != 0 ||
		  h->cu->easy_setopt(k, CURLOPT_ERRORBUFFER, h->curl_err) != CURLE_OK ||
		  h->cu->easy_setopt(k, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK ||
		  h->cu->easy_setopt(k, CURLOPT_TIMEOUT_MS, h->timeout_ms) != CURLE_OK ||
		  h->cu->easy_setopt(k, CURLOPT_CONNECTTIMEOUT_MS, h->timeout_ms) != CURLE_OK ||
		  /* Whatever compression the server offers (a batch of wide
		  ** vectors as JSON text compresses several-fold). */
		  h->cu->easy_setopt(k, CURLOPT_ACCEPT_ENCODING, "") != CURLE_OK;
	return bad ? -1 : 0;
}

a2m_embedder *a2m_embedder_new(const a2m_embedder_config *cfg, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	const char *kind = cfg && cfg->kind ? cfg->kind : "ollama";
	const a2m_embed_backend *be = NULL;
	if (strcmp(kind, "ollama") == 0)
		be = &a2m_embed_ollama;
	else if (strcmp(kind, "openai") == 0)
		be = &a2m_embed_openai;
	else {
		a2m_embed_fail(err, errlen, A2M_EMBED_EINVAL,
			       "embedder: unknown kind '%.40s' (ollama or openai)", kind);
		return NULL;
	}
	const char *url = cfg && cfg->url && *cfg->url ? cfg->url : be->default_url;
	if (!url) {
		a2m_embed_fail(err, errlen, A2M_EMBED_EINVAL, "embedder %s: a URL is required",
			       be->kind);
		return NULL;
	}
	if (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0) {
		a2m_embed_fail(err, errlen, A2M_EMBED_EINVAL,
			       "embedder %s: the URL must start with http:// or https://", be->kind);
		return NULL;
	}
	const char *why = NULL;
	const a2m_curl_api *cu = a2m_curl(&why);
	if (!cu) {
		a2m_embed_fail(err, errlen, A2M_EMBED_EUNREACHABLE, "embedder %s: %s", be->kind,
			       why);
		return NULL;
	}

	http_embedder *h = calloc(1, sizeof *h);
	if (!h) {
		a2m_embed_fail(err, errlen, A2M_EMBED_ENOMEM, "embedder %s: out of memory",
			       be->kind);
		return NULL;
	}
	if (pthread_mutex_init(&h->lock, NULL) != 0) {
		free(h);
		a2m_embed_fail(err, errlen, A2M_EMBED_ENOMEM, "embedder %s: cannot make a mutex",
			       be->kind);
		return NULL;
	}
	h->cu = cu;
	h->base.kind = be->kind;
	h->base.embed = http_embed;
	h->base.model = http_model;
	h->base.destroy = http_destroy;
	h->be = be;
	h->timeout_ms = cfg && cfg->timeout_ms > 0 ? cfg->timeout_ms : A2M_EMBED_DEFAULT_TIMEOUT_MS;
	h->batch = cfg && cfg->batch ? cfg->batch : A2M_EMBED_DEFAULT_BATCH;
	const char *model = cfg && cfg->model && *cfg->model ? cfg->model
							     : A2M_EMBED_DEFAULT_MODEL;
	if (!(h->model = strdup(model)) || !(h->url = resolve_url(be, url)) ||
	    !(h->curl = h->cu->easy_init()) || setup_curl(h, cfg ? cfg->api_key : NULL) != 0) {
		http_destroy(&h->base);
		a2m_embed_fail(err, errlen, A2M_EMBED_ENOMEM, "embedder %s: out of memory",
			       be->kind);
		return NULL;
	}
	return &h->base;
}
