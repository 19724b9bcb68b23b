/*
** embed_server.c — a tiny, deterministic embedding server for the tests.
**
**   embed_server [--delay-ms MS] [--key KEY] PORT [DIMS]
**
** Listens on 127.0.0.1:PORT (0: any free port), prints the port it got as
** one line on stdout, and serves until SIGTERM or SIGINT:
**
**   POST /api/embed       Ollama:  {"model","input":[...]} -> {"model","embeddings":[[...]]}
**   POST /v1/embeddings   OpenAI:  {"model","input":[...]} ->
**                                  {"object":"list","data":[{"object","index","embedding"}],...}
**                         (data is answered in REVERSE order, so a client
**                         that reads by position rather than by index fails)
**   GET  /stats           {"requests":N,"texts":M,"model":"last model asked for"}
**
** The vector of a text (width DIMS, default 8) is a pure function of its
** words: each maximal run of ASCII letters and digits (any byte >= 0x80
** counts as a letter), ASCII-lowercased, is hashed with 32-bit FNV-1a to
** dimension hash % DIMS, which gains 1; the counts are then divided by
** their Euclidean norm and rounded to float. A text without words is
** (1, 0, ..., 0). So texts sharing words are near under cosine and
** unrelated ones far, which is enough to test that ranking by vector works.
** tests/test_embed.c computes the same function independently; the two must
** agree bit for bit.
**
** Failures, chosen by a prefix on the path (so a test points an embedder
** at "http://127.0.0.1:PORT/fail/500" and the backend's own path follows):
**   /fail/NNN     status NNN, with an error body in the endpoint's shape
**                 (its message ends in a non-ASCII word)
**   /malformed    200 with truncated JSON
**   /wrongshape   200 with valid JSON of the wrong shape
**   /short        200 with one vector fewer than texts
**   /ragged       200, vectors of widths DIMS and DIMS+1 alternately
**   /alternate    200, all vectors DIMS wide on one request, DIMS+1 on the next
**   /huge         200, a component of 1e300 (finite as a double, not as a float)
**   /dupindex     (OpenAI) 200, every item says "index": 0
**   /noindex      (OpenAI) 200, no "index" at all, in input order (valid)
** --delay-ms stalls every embedding answer (not /stats) by MS; --key makes
** both endpoints answer 401 unless "Authorization: Bearer KEY" is sent.
** Every POST to an embedding endpoint counts as a request, whatever its
** fate; `texts` counts the inputs of the well-formed ones.
*/
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>

#define MAX_BODY (16u << 20)

static size_t dims = 8;
static long delay_ms;
static const char *api_key;
/* Set by main once SIGTERM arrives (sigwait), read by the connection
** threads' stalls: an atomic, since a sig_atomic_t is no help across threads. */
static atomic_int stopping;

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long long n_requests, n_texts, n_alternate;
static char last_model[256];

/* ---- the deterministic vector ---- */

static void text_vector(const char *text, size_t d, float *out)
{
	double *acc = calloc(d, sizeof *acc);
	if (!acc)
		abort();
	const unsigned char *p = (const unsigned char *)text;
	int words = 0;
	while (*p) {
		while (*p && !(*p >= 0x80 || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
			       (*p >= 'A' && *p <= 'Z')))
			p++;
		if (!*p)
			break;
		uint32_t h = 2166136261u;
		while (*p >= 0x80 || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		       (*p >= 'A' && *p <= 'Z')) {
			unsigned char c = *p >= 'A' && *p <= 'Z' ? (unsigned char)(*p + 32) : *p;
			h = (h ^ c) * 16777619u;
			p++;
		}
		acc[h % d] += 1.0;
		words++;
	}
	if (!words)
		acc[0] = 1.0;
	double norm = 0;
	for (size_t i = 0; i < d; i++)
		norm += acc[i] * acc[i];
	norm = sqrt(norm);
	for (size_t i = 0; i < d; i++)
		out[i] = (float)(acc[i] / norm);
	free(acc);
}

static json_t *vector_json(const char *text, size_t d, int huge)
{
	float *v = malloc(d * sizeof *v);
	json_t *arr = json_array();
	if (!v || !arr)
		abort();
	text_vector(text, d, v);
	for (size_t i = 0; i < d; i++)
		json_array_append_new(arr, json_real(huge && i == 0 ? 1e300 : (double)v[i]));
	free(v);
	return arr;
}

/* ---- requests ---- */

typedef struct body {
	char  *data;
	size_t len;
	int    too_big;
} body;

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, char *text,
				 const char *type)
{
	if (!text)
		return MHD_NO;
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text,
								 MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *v)
{
	char *text = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (!text)
		return MHD_NO;
	return send_text(c, status, text, "application/json");
}

/* An error in the shape the endpoint's real server uses. */
static enum MHD_Result send_error(struct MHD_Connection *c, int openai, unsigned status,
				  const char *msg)
{
	json_t *e = openai ? json_pack("{s{ssss}}", "error", "message", msg, "type",
				       "invalid_request_error")
			   : json_pack("{ss}", "error", msg);
	return send_json(c, status, e);
}

static void stall(void)
{
	for (long left = delay_ms; left > 0 && !atomic_load(&stopping); left -= 10) {
		struct timespec ts = {0, 10 * 1000000L};
		nanosleep(&ts, NULL);
	}
}

/*
** Splits "/MODE[/ARG]/rest" into a mode and the endpoint path. Returns the
** endpoint (a suffix of url); *mode is "" when there is no prefix.
*/
static const char *split_mode(const char *url, char *mode, size_t modelen, long *arg)
{
	static const char *const modes[] = {"fail", "malformed", "wrongshape", "short", "ragged",
					    "alternate", "huge", "dupindex", "noindex"};
	mode[0] = '\0';
	*arg = 0;
	for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
		size_t n = strlen(modes[i]);
		if (url[0] == '/' && strncmp(url + 1, modes[i], n) == 0 && url[n + 1] == '/') {
			snprintf(mode, modelen, "%s", modes[i]);
			url += n + 1;
			if (strcmp(modes[i], "fail") == 0) {
				char *end;
				*arg = strtol(url + 1, &end, 10);
				url = end;
			}
			return url;
		}
	}
	return url;
}

static enum MHD_Result embed(struct MHD_Connection *c, int openai, const char *mode, long arg,
			     const body *b)
{
	pthread_mutex_lock(&stats_lock);
	n_requests++;
	pthread_mutex_unlock(&stats_lock);
	stall();

	if (api_key) {
		const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							       MHD_HTTP_HEADER_AUTHORIZATION);
		char want[300];
		snprintf(want, sizeof want, "Bearer %s", api_key);
		if (!auth || strcmp(auth, want) != 0)
			return send_error(c, openai, 401, "missing or wrong API key");
	}
	if (strcmp(mode, "fail") == 0)
		return send_error(c, openai, (unsigned)arg, "failing as asked (citt\xc3\xa0)");
	if (b->too_big)
		return send_error(c, openai, 413, "body too large");

	json_error_t jerr;
	json_t *req = json_loadb(b->data ? b->data : "", b->len, 0, &jerr);
	const char *model = json_string_value(json_object_get(req, "model"));
	json_t *input = json_object_get(req, "input");
	int ok = model && *model && (json_is_string(input) || json_is_array(input));
	for (size_t i = 0; ok && json_is_array(input) && i < json_array_size(input); i++)
		ok = json_is_string(json_array_get(input, i));
	if (!ok) {
		json_decref(req);
		return send_error(c, openai, 400, "want {\"model\": string, \"input\": string or [string]}");
	}
	size_t n = json_is_array(input) ? json_array_size(input) : 1;
	long long alt;
	pthread_mutex_lock(&stats_lock);
	n_texts += (long long)n;
	snprintf(last_model, sizeof last_model, "%s", model);
	alt = strcmp(mode, "alternate") == 0 ? n_alternate++ : 0;
	pthread_mutex_unlock(&stats_lock);

	if (strcmp(mode, "malformed") == 0) {
		json_decref(req);
		return send_text(c, 200, strdup(openai ? "{\"data\":[{\"embedding\":[0.5,"
						       : "{\"embeddings\":[[0.5,"),
				 "application/json");
	}
	if (strcmp(mode, "wrongshape") == 0) {
		json_decref(req);
		return send_json(c, 200, openai ? json_pack("{s{}}", "data")
						: json_pack("{ss}", "embeddings", "none"));
	}
	size_t answer = strcmp(mode, "short") == 0 && n > 0 ? n - 1 : n;
	json_t *vecs = json_array();
	for (size_t k = 0; k < answer; k++) {
		/* OpenAI: answered in reverse order, each with its index. */
		size_t i = openai && strcmp(mode, "noindex") != 0 ? answer - 1 - k : k;
		const char *text = json_is_array(input) ? json_string_value(json_array_get(input, i))
							: json_string_value(input);
		size_t d = dims;
		if (strcmp(mode, "ragged") == 0)
			d += i % 2;
		if (strcmp(mode, "alternate") == 0)
			d += (size_t)(alt % 2);
		json_t *v = vector_json(text, d, strcmp(mode, "huge") == 0);
		if (!openai) {
			json_array_append_new(vecs, v);
			continue;
		}
		json_t *item = json_pack("{ss so}", "object", "embedding", "embedding", v);
		if (strcmp(mode, "noindex") != 0)
			json_object_set_new(item, "index",
					    json_integer(strcmp(mode, "dupindex") == 0 ? 0 : (json_int_t)i));
		json_array_append_new(vecs, item);
	}
	json_t *resp = openai ? json_pack("{ss so ss s{sIsI}}", "object", "list", "data", vecs,
					  "model", model, "usage", "prompt_tokens", (json_int_t)n,
					  "total_tokens", (json_int_t)n)
			      : json_pack("{ss so}", "model", model, "embeddings", vecs);
	json_decref(req);
	return send_json(c, 200, resp);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	(void)cls;
	(void)version;
	body *b = *con_cls;
	if (!b) {
		if (!(b = calloc(1, sizeof *b)))
			return MHD_NO;
		*con_cls = b;
		return MHD_YES;
	}
	if (*upload_size) {
		if (b->len + *upload_size > MAX_BODY) {
			b->too_big = 1;
		} else {
			char *grown = realloc(b->data, b->len + *upload_size + 1);
			if (!grown)
				return MHD_NO;
			b->data = grown;
			memcpy(b->data + b->len, upload, *upload_size);
			b->len += *upload_size;
			b->data[b->len] = '\0';
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(url, "/stats") == 0 && strcmp(method, "GET") == 0) {
		pthread_mutex_lock(&stats_lock);
		json_t *s = json_pack("{sIsIss}", "requests", (json_int_t)n_requests, "texts",
				      (json_int_t)n_texts, "model", last_model);
		pthread_mutex_unlock(&stats_lock);
		return send_json(c, 200, s);
	}
	char mode[32];
	long arg;
	const char *path = split_mode(url, mode, sizeof mode, &arg);
	int ollama = strcmp(path, "/api/embed") == 0;
	int openai = strcmp(path, "/v1/embeddings") == 0;
	if (!ollama && !openai)
		return send_error(c, 0, 404, "no such endpoint");
	if (strcmp(method, "POST") != 0)
		return send_error(c, openai, 405, "POST only");
	return embed(c, openai, mode, arg, b);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)c;
	(void)toe;
	body *b = *con_cls;
	if (b) {
		free(b->data);
		free(b);
		*con_cls = NULL;
	}
}

static int usage(void)
{
	fprintf(stderr, "usage: embed_server [--delay-ms MS] [--key KEY] PORT [DIMS]\n");
	return 2;
}

int main(int argc, char **argv)
{
	long port = -1;
	int positional = 0;
	for (int i = 1; i < argc; i++) {
		char *end;
		if (strcmp(argv[i], "--delay-ms") == 0 && i + 1 < argc) {
			delay_ms = strtol(argv[++i], &end, 10);
			if (*end || delay_ms < 0)
				return usage();
		} else if (strcmp(argv[i], "--key") == 0 && i + 1 < argc) {
			api_key = argv[++i];
		} else if (positional == 0) {
			port = strtol(argv[i], &end, 10);
			if (*end || port < 0 || port > 65535)
				return usage();
			positional++;
		} else if (positional == 1) {
			long d = strtol(argv[i], &end, 10);
			if (*end || d < 1 || d > 65536)
				return usage();
			dims = (size_t)d;
			positional++;
		} else {
			return usage();
		}
	}
	if (port < 0)
		return usage();

	/* Signals are taken by sigwait below, in this thread only. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct sockaddr_in addr;
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t)port,
		NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
		MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)30, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "embed_server: cannot listen on 127.0.0.1:%ld: %s\n", port,
			strerror(errno));
		return 1;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	printf("%u\n", info ? (unsigned)info->port : (unsigned)port);
	fflush(stdout);

	int sig = 0;
	sigwait(&set, &sig);
	atomic_store(&stopping, 1);
	MHD_stop_daemon(d);
	return 0;
}
