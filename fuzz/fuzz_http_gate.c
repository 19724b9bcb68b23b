/*
** fuzz_http_gate.c — the HTTP binding's gate (src/transport/http_gate.c):
** everything decided from a request's method, path and headers, driven
** without a socket.
**
** The gate reaches libmicrohttpd only through the table of
** transport/mhd_api.h. Once the real library is loaded, this program swaps
** the table's entries for fakes: the headers come from the input, and a
** queued response is recorded instead of sent. The input, split at '\n':
** byte 0 (bit 0: tokens configured), then the method, the path, and
** header lines "Name: value".
**
** What must hold, besides no crash or leak: the gate either admits the
** request or queues exactly one refusal with a status of docs/HTTP.md's
** table; any Origin off the allow-list is refused with 403, whatever else
** the request says; an admitted request went to the endpoint (POST) or the
** well-known profile (GET, HEAD); with tokens configured it carried
** exactly one "Authorization: Bearer" header whose token is one of ours,
** and the principal the gate took is that token's; an admitted POST
** announced no more than the body limit.
*/
#include <strings.h>

#include "fuzz.h"
#include "transport/http_internal.h"
#include "transport/tokens.h"

#define MAX_HEADERS 32
#define MAX_BODY    4096

static const char *const origins[] = {"http://localhost:3000", "https://app.example"};
static const char tokens_text[] = "tok-alice alice\ntok-bob bob\n";

static a2m_bearer_tokens *tokens;
static struct {
	const char *key[MAX_HEADERS], *value[MAX_HEADERS];
	int n;
} hd;
static int queued, queued_status, live_responses;

/* A response: only what must be freed. */
typedef struct fake_response {
	void *buf;
	MHD_ContentReaderFreeCallback crfc;
	void *cls;
	int has_cls;
} fake_response;

static int fake_values(struct MHD_Connection *c, enum MHD_ValueKind kind,
		       MHD_KeyValueIterator it, void *cls)
{
	(void)c;
	int i;
	for (i = 0; i < hd.n; i++)
		if (it && it(cls, kind, hd.key[i], hd.value[i]) != MHD_YES)
			break;
	return i;
}

static struct MHD_Response *new_response(void *buf, MHD_ContentReaderFreeCallback crfc,
					 void *cls, int has_cls)
{
	fake_response *r = malloc(sizeof *r);
	if (!r)
		abort();
	*r = (fake_response){buf, crfc, cls, has_cls};
	live_responses++;
	return (struct MHD_Response *)(void *)r;
}

static struct MHD_Response *fake_from_buffer(size_t size, void *buf, enum MHD_ResponseMemoryMode m)
{
	(void)size;
	(void)m;
	return new_response(buf, NULL, NULL, 0);
}

static struct MHD_Response *fake_from_buffer_free(size_t size, void *buf,
						  MHD_ContentReaderFreeCallback crfc)
{
	(void)size;
	return new_response(buf, crfc, NULL, 0);
}

static struct MHD_Response *fake_from_buffer_free_cls(size_t size, void *buf,
						      MHD_ContentReaderFreeCallback crfc, void *cls)
{
	(void)size;
	return new_response(buf, crfc, cls, 1);
}

static void fake_destroy(struct MHD_Response *resp)
{
	fake_response *r = (fake_response *)(void *)resp;
	if (r->crfc)
		r->crfc(r->has_cls ? r->cls : r->buf);
	free(r);
	live_responses--;
}

static enum MHD_Result fake_header(struct MHD_Response *resp, const char *h, const char *v)
{
	(void)resp;
	return h && v ? MHD_YES : MHD_NO;
}

static enum MHD_Result fake_queue(struct MHD_Connection *c, unsigned int status,
				  struct MHD_Response *resp)
{
	(void)c;
	(void)resp;
	queued++;
	queued_status = (int)status;
	return MHD_YES;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *why = NULL;
	a2m_mhd_api *api = (a2m_mhd_api *)(uintptr_t)a2m_mhd_load(&why);
	if (!api) {
		fprintf(stderr, "fuzz_http_gate: libmicrohttpd: %s\n", why);
		abort();
	}
	/* The table is the library's own (a static, not const, object): only
	** the calls the gate and its responses make are replaced. */
	api->get_connection_values = fake_values;
	api->create_response_from_buffer = fake_from_buffer;
	api->create_response_from_buffer_with_free_callback = fake_from_buffer_free;
	api->create_response_from_buffer_with_free_callback_cls = fake_from_buffer_free_cls;
	api->destroy_response = fake_destroy;
	api->add_response_header = fake_header;
	api->queue_response = fake_queue;
	char path[400], err[256];
	snprintf(path, sizeof path, "%s/tokens", fuzz_dir());
	fuzz_write_file(path, tokens_text, sizeof tokens_text - 1);
	if (a2m_bearer_load(path, &tokens, err, sizeof err) != 0) {
		fprintf(stderr, "fuzz_http_gate: %s\n", err);
		abort();
	}
	return 0;
}

/* The principal the Authorization headers name, by the rules of
** docs/HTTP.md, worked out here apart from the gate; NULL: none. */
static const char *expected_principal(void)
{
	const char *v = NULL;
	int n = 0;
	for (int i = 0; i < hd.n; i++)
		if (strcasecmp(hd.key[i], "Authorization") == 0)
			v = hd.value[i], n++;
	if (n != 1)
		return NULL;
	while (*v == ' ' || *v == '\t')
		v++;
	if (strncasecmp(v, "Bearer", 6) != 0 || (v[6] != ' ' && v[6] != '\t'))
		return NULL;
	v += 7;
	while (*v == ' ' || *v == '\t')
		v++;
	size_t len = strlen(v);
	while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	if (len == 9 && memcmp(v, "tok-alice", 9) == 0)
		return "alice";
	if (len == 7 && memcmp(v, "tok-bob", 7) == 0)
		return "bob";
	return NULL;
}

static int origin_refused(void)
{
	for (int i = 0; i < hd.n; i++) {
		if (strcasecmp(hd.key[i], "Origin") != 0)
			continue;
		if (strcasecmp(hd.value[i], origins[0]) != 0 && strcasecmp(hd.value[i], origins[1]) != 0)
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int with_tokens = data[0] & 1;
	char *text = malloc(size);
	if (!text)
		abort();
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';  /* headers are C strings: a NUL ends the input */
	/* Method, path, then headers. */
	char *lines[2 + MAX_HEADERS];
	int nl = 0;
	for (char *p = text; p && nl < 2 + MAX_HEADERS;) {
		lines[nl++] = p;
		char *e = strchr(p, '\n');
		if (e)
			*e++ = '\0';
		p = e;
	}
	const char *method = nl > 0 ? lines[0] : "";
	const char *url = nl > 1 ? lines[1] : "";
	hd.n = 0;
	for (int i = 2; i < nl; i++) {
		char *colon = strchr(lines[i], ':');
		if (!colon)
			continue;
		*colon = '\0';
		char *v = colon + 1;
		while (*v == ' ')
			v++;
		hd.key[hd.n] = lines[i];
		hd.value[hd.n++] = v;
	}

	a2m_http s;
	memset(&s, 0, sizeof s);
	s.path = "/";
	s.origins = origins;
	s.n_origins = 2;
	s.tokens = with_tokens ? tokens : NULL;
	s.max_body = MAX_BODY;
	request r;
	memset(&r, 0, sizeof r);
	queued = 0;
	int admitted = -1;
	enum MHD_Result rc = a2m_http_on_headers(&s, NULL, &r, url, method, &admitted);
	const char *in = (const char *)data + 1;
	if (getenv("FUZZ_TRACE"))
		fprintf(stderr, "%s %s: admitted %d, status %d, principal %s\n", method, url, admitted,
			queued ? queued_status : 0, r.principal ? r.principal : "(none)");

	FUZZ_ASSERT(live_responses == 0, in, size - 1, "%d responses not released", live_responses);
	FUZZ_ASSERT(admitted == 0 || admitted == 1, in, size - 1, "admitted is %d", admitted);
	if (admitted) {
		FUZZ_ASSERT(rc == MHD_YES && queued == 0, in, size - 1,
			    "an admitted request with a response queued");
		FUZZ_ASSERT(!origin_refused(), in, size - 1, "admitted from an Origin off the list");
		int endpoint = strcmp(url, "/") == 0, profile = strcmp(url, A2M_HTTP_WELL_KNOWN) == 0;
		FUZZ_ASSERT(endpoint || profile, in, size - 1, "admitted to another path");
		if (endpoint)
			FUZZ_ASSERT(strcmp(method, "POST") == 0 && r.cap <= MAX_BODY && !r.profile, in,
				    size - 1, "admitted to the endpoint without a POST within the limit");
		else
			FUZZ_ASSERT((strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) &&
					    r.profile,
				    in, size - 1, "admitted to the profile without GET or HEAD");
		if (with_tokens) {
			const char *want = expected_principal();
			FUZZ_ASSERT(want && r.principal && strcmp(want, r.principal) == 0, in, size - 1,
				    "admitted with principal %s, the headers say %s",
				    r.principal ? r.principal : "(none)", want ? want : "(none)");
		} else {
			FUZZ_ASSERT(!r.principal, in, size - 1, "a principal without tokens");
		}
	} else if (rc == MHD_YES) {
		FUZZ_ASSERT(queued == 1, in, size - 1, "refused with %d responses queued", queued);
		static const int allowed[] = {204, 400, 401, 403, 404, 405, 413, 415};
		int ok = 0;
		for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
			ok |= queued_status == allowed[i];
		FUZZ_ASSERT(ok, in, size - 1, "refused with status %d", queued_status);
		if (origin_refused())
			FUZZ_ASSERT(queued_status == 403, in, size - 1,
				    "an Origin off the list answered %d, not 403", queued_status);
	}
	free(text);
	return 0;
}
