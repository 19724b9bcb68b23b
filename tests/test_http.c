/*
** test_http.c — the bearer token table, and the HTTP client against the HTTP
** server in one process: one test per rule of docs/HTTP.md that the client
** API can see. The statuses and headers themselves are tested from the
** outside by tests/http_test.sh.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "a2m.h"
#include "a2m_client.h"
#include "client/client_json.h"
#include "check.h"
#include "check_a2m.h"
#include "transport/http.h"
#include "transport/tokens.h"

static char tmpdir[] = "/tmp/a2m-test-http.XXXXXX";

/* Writes text to a file in tmpdir; returns its path (static buffer). */
static const char *write_file(const char *name, const char *text)
{
	static char path[256];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	return path;
}

/* ---- the token file ---- */

static void test_tokens_lookup_is_exact(void)
{
	const char *path = write_file("ok", "# who\n\n  tok-alice-1  alice\ntok-bob\tbob \r\n");
	a2m_bearer_tokens *t;
	char err[256];
	CHECK_INT(a2m_bearer_load(path, &t, err, sizeof err), 0);
	if (!t)
		return;
	CHECK_INT(a2m_bearer_count(t), 2);
	CHECK_STR(a2m_bearer_lookup(t, "tok-alice-1", 11), "alice");
	CHECK_STR(a2m_bearer_lookup(t, "tok-bob", 7), "bob");
	CHECK(a2m_bearer_lookup(t, "tok-alice-", 10) == NULL);
	CHECK(a2m_bearer_lookup(t, "tok-alice-12", 12) == NULL);
	CHECK(a2m_bearer_lookup(t, "tok-bob\0", 8) == NULL);
	CHECK(a2m_bearer_lookup(t, "", 0) == NULL);
	CHECK(a2m_bearer_lookup(t, "alice", 5) == NULL);
	a2m_bearer_free(t);
}

static void test_tokens_malformed_line_is_named_not_shown(void)
{
	static const struct {
		const char *text, *line;
	} cases[] = {
		{"a-SECRET1 alice\nb-SECRET2\n", "line 2:"},
		{"a-SECRET1 alice bob\n", "line 1:"},
		{"# c\na-SECRET1 x\na-SECRET1 y\n", "line 3:"},
		{"a-SECRET\x01 x\n", "line 1:"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *path = write_file("bad", cases[i].text);
		a2m_bearer_tokens *t = (a2m_bearer_tokens *)1;
		char err[256] = "";
		CHECK_INT(a2m_bearer_load(path, &t, err, sizeof err), -1);
		CHECK(t == NULL);
		CHECK(strstr(err, cases[i].line) != NULL);
		CHECK(strstr(err, "SECRET") == NULL);
		CHECK(strchr(err, '\n') == NULL);
	}
}

static void test_tokens_empty_file_is_refused(void)
{
	const char *path = write_file("empty", "# nobody\n\n");
	a2m_bearer_tokens *t;
	char err[256];
	CHECK_INT(a2m_bearer_load(path, &t, err, sizeof err), -1);
	CHECK(t == NULL);
}

/* ---- the client against the server ---- */

typedef struct server {
	a2m *h;
	a2m_http *http;
	a2m_bearer_tokens *tokens;
	char url[128];
} server;

/* Starts a memory store behind HTTP on a free loopback port. */
static int start(server *s, const char *tokens_text, size_t max_body)
{
	memset(s, 0, sizeof *s);
	char err[256];
	if (!(s->h = check_open("engine", "memory", NULL)))
		return -1;
	a2m_http_config hc;
	memset(&hc, 0, sizeof hc);
	hc.port = 0;
	hc.threads = 2;
	hc.max_body = max_body;
	if (tokens_text &&
	    a2m_bearer_load(write_file("tokens", tokens_text), &s->tokens, err, sizeof err) != 0)
		return -1;
	hc.tokens = s->tokens;
	if (a2m_http_start(s->h, &hc, &s->http, err, sizeof err) != 0) {
		fprintf(stderr, "  %s\n", err);
		return -1;
	}
	snprintf(s->url, sizeof s->url, "%s", a2m_http_url(s->http));
	return 0;
}

/* start(), and a failure of the test when the server does not start. */
static int started(server *s, const char *tokens_text, size_t max_body)
{
	if (start(s, tokens_text, max_body) == 0)
		return 1;
	CHECK(!"server started");
	return 0;
}

/* Whether a describe response offers the scopes capability. */
static int offers_scopes(const json_t *resp)
{
	json_t *caps = json_object_get(json_object_get(resp, "result"), "capabilities");
	for (size_t k = 0; k < json_array_size(caps); k++)
		if (strcmp(json_string_value(json_array_get(caps, k)), "scopes") == 0)
			return 1;
	return 0;
}

static void stop(server *s)
{
	a2m_http_stop(s->http);
	a2m_close(s->h);
	a2m_bearer_free(s->tokens);
}

static a2m_client *connect_to(const server *s, const char *token)
{
	a2m_client_http_options o;
	a2m_client_http_options_init(&o);
	o.bearer_token = token;
	o.timeout_ms = 30000;
	a2m_client *c = NULL;
	CHECK_INT(a2m_client_connect_http(s->url, &o, &c), A2M_CLIENT_OK);
	return c;
}

static void test_client_requests_share_the_handle(void)
{
	server s;
	if (!started(&s, NULL, 0))
		return;
	a2m_client *c = connect_to(&s, NULL);
	for (int i = 0; c && i < 3; i++) {
		json_t *resp = NULL;
		CHECK_INT(a2m_client_request_json(c, "memory/describe", NULL, &resp), A2M_CLIENT_OK);
		CHECK(json_is_array(json_object_get(json_object_get(resp, "result"), "capabilities")));
		/* Over HTTP without a token nobody is authenticated: no scopes. */
		CHECK(!offers_scopes(resp));
		CHECK_INT(a2m_client_http_status(c), 200);
		json_decref(resp);
	}
	CHECK(a2m_client_alive(c));
	a2m_client_free(c);
	stop(&s);
}

static void test_client_notification_queues_nothing(void)
{
	server s;
	if (!started(&s, NULL, 0))
		return;
	a2m_client *c = connect_to(&s, NULL);
	static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":\"memory/describe\"}";
	CHECK_INT(a2m_client_send_line(c, note, sizeof note - 1), A2M_CLIENT_OK);
	CHECK_INT(a2m_client_http_status(c), 202);
	CHECK_INT(a2m_client_pending(c), 0);
	/* Nothing can arrive unasked over HTTP: the wait ends at once. */
	a2m_client_set_timeout(c, 600000);
	json_t *msg = NULL;
	CHECK_INT(a2m_client_recv_json(c, &msg), A2M_CLIENT_ERR_TIMEOUT);
	CHECK(msg == NULL);
	a2m_client_free(c);
	stop(&s);
}

static void test_client_lines_in_one_write_are_posts_in_order(void)
{
	server s;
	if (!started(&s, NULL, 0))
		return;
	a2m_client *c = connect_to(&s, NULL);
	static const char two[] =
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"memory/describe\"}\n"
		"   \n"
		"[]\n"
		"{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"memory/desc";
	static const char rest[] = "ribe\"}\n";
	CHECK_INT(a2m_client_send_raw(c, two, sizeof two - 1), A2M_CLIENT_OK);
	CHECK_INT(a2m_client_pending(c), 0);
	CHECK_INT(a2m_client_send_raw(c, rest, sizeof rest - 1), A2M_CLIENT_OK);
	json_t *m1 = NULL, *m2 = NULL, *m3 = NULL;
	CHECK_INT(a2m_client_recv_json(c, &m1), A2M_CLIENT_OK);
	CHECK_INT(a2m_client_recv_json(c, &m2), A2M_CLIENT_OK);
	CHECK_INT(a2m_client_recv_json(c, &m3), A2M_CLIENT_OK);
	CHECK_STR(json_string_value(json_object_get(m1, "id")), "a");
	CHECK_INT(json_integer_value(json_object_get(json_object_get(m2, "error"), "code")), -32600);
	CHECK_STR(json_string_value(json_object_get(m3, "id")), "b");
	json_decref(m1);
	json_decref(m2);
	json_decref(m3);
	a2m_client_free(c);
	stop(&s);
}

static void test_client_http_error_is_io_with_status(void)
{
	server s;
	if (!started(&s, "tok-alice alice\n", 0))
		return;
	a2m_client *c = connect_to(&s, NULL);
	json_t *resp = NULL;
	CHECK_INT(a2m_client_request_json(c, "memory/describe", NULL, &resp), A2M_CLIENT_ERR_IO);
	CHECK(resp == NULL);
	CHECK_INT(a2m_client_http_status(c), 401);
	CHECK(strstr(a2m_client_errmsg(c), "HTTP 401") != NULL);
	/* A refusal is an answer: the connection itself still works. */
	CHECK(a2m_client_alive(c));
	a2m_client_free(c);
	stop(&s);
}

static void test_client_token_makes_the_principal_the_owner(void)
{
	server s;
	if (!started(&s, "tok-alice alice\ntok-bob bob\n", 0))
		return;
	a2m_client *alice = connect_to(&s, "tok-alice");
	a2m_client *bob = connect_to(&s, "tok-bob");
	json_t *resp = NULL;
	json_t *p = json_pack("{s:[{s:s,s:s,s:s}]}", "records", "id", "r1", "content",
			      "alice's private note", "tier", "working");
	CHECK_INT(a2m_client_request_json(alice, "memory/remember", p, &resp), A2M_CLIENT_OK);
	CHECK(json_object_get(resp, "result") != NULL);
	json_decref(resp);
	json_decref(p);

	p = json_pack("{s:{s:s}}", "where", "id", "r1");
	CHECK_INT(a2m_client_request_json(alice, "memory/timeline", p, &resp), A2M_CLIENT_OK);
	json_t *rec = json_array_get(json_object_get(json_object_get(resp, "result"), "records"), 0);
	CHECK_STR(json_string_value(json_object_get(rec, "owner")), "alice");
	json_decref(resp);
	CHECK_INT(a2m_client_request_json(bob, "memory/timeline", p, &resp), A2M_CLIENT_OK);
	CHECK_INT(json_array_size(json_object_get(json_object_get(resp, "result"), "records")), 0);
	json_decref(resp);
	json_decref(p);

	p = json_pack("{s:s}", "owner", "alice");
	CHECK_INT(a2m_client_request_json(bob, "memory/recall", p, &resp), A2M_CLIENT_OK);
	CHECK_INT(json_integer_value(json_object_get(json_object_get(resp, "error"), "code")),
		  A2M_SCOPE_DENIED);
	json_decref(resp);
	json_decref(p);
	a2m_client_free(alice);
	a2m_client_free(bob);
	stop(&s);
}

static void test_client_body_over_the_limit_is_413(void)
{
	server s;
	if (!started(&s, NULL, 1024))
		return;
	a2m_client *c = connect_to(&s, NULL);
	char pad[2048];
	memset(pad, 'a', sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	json_t *p = json_pack("{s:s}", "padding", pad);
	json_t *resp = NULL;
	CHECK_INT(a2m_client_request_json(c, "memory/describe", p, &resp), A2M_CLIENT_ERR_IO);
	CHECK_INT(a2m_client_http_status(c), 413);
	json_decref(p);
	/* The next request, within the limit, is served. */
	CHECK_INT(a2m_client_request_json(c, "memory/describe", NULL, &resp), A2M_CLIENT_OK);
	json_decref(resp);
	a2m_client_free(c);
	stop(&s);
}

static void test_client_no_server_is_io_and_not_alive(void)
{
	server s;
	if (!started(&s, NULL, 0))
		return;
	char url[128];
	snprintf(url, sizeof url, "%s", s.url);
	stop(&s); /* the port is free again: nobody listens there */
	a2m_client *c = NULL;
	CHECK_INT(a2m_client_connect_http(url, NULL, &c), A2M_CLIENT_OK);
	json_t *resp = NULL;
	CHECK_INT(a2m_client_request_json(c, "memory/describe", NULL, &resp), A2M_CLIENT_ERR_IO);
	CHECK(!a2m_client_alive(c));
	CHECK_INT(a2m_client_close(c, NULL), A2M_CLIENT_OK);
	a2m_client_free(c);
}

/* ---- describe: cached, yet never stale ---- */

/* The records describe counts over every tier, or -1 when it did not answer. */
static long long described_total(const json_t *resp)
{
	json_t *tiers = json_object_get(json_object_get(resp, "result"), "tiers");
	if (!json_is_array(tiers))
		return -1;
	long long n = 0;
	for (size_t i = 0; i < json_array_size(tiers); i++)
		n += json_integer_value(json_object_get(json_array_get(tiers, i), "count"));
	return n;
}

/* describe over c: its total, or -1. */
static long long describe_total(a2m_client *c)
{
	json_t *resp = NULL;
	if (a2m_client_request_json(c, "memory/describe", NULL, &resp) != A2M_CLIENT_OK)
		return -1;
	long long n = described_total(resp);
	json_decref(resp);
	return n;
}

/* Remembers one record in the semantic tier (no capacity: nothing spills). */
static int remember_one(a2m_client *c, const char *id)
{
	json_t *p = json_pack("{s:[{s:s,s:s,s:s}]}", "records", "id", id, "content",
			      "a fact for the describe cache", "tier", "semantic");
	json_t *resp = NULL;
	int rc = a2m_client_request_json(c, "memory/remember", p, &resp);
	int ok = rc == A2M_CLIENT_OK && json_object_get(resp, "result") != NULL;
	json_decref(p);
	json_decref(resp);
	return ok ? 0 : -1;
}

static void test_describe_after_a_write_is_never_stale(void)
{
	server s;
	if (!started(&s, NULL, 0))
		return;
	a2m_client *c = connect_to(&s, NULL);
	CHECK_INT(describe_total(c), 0);
	CHECK_INT(describe_total(c), 0); /* from the cache now */
	char id[32];
	for (int i = 1; i <= 3; i++) {
		snprintf(id, sizeof id, "fresh-%d", i);
		CHECK_INT(remember_one(c, id), 0);
		CHECK_INT(describe_total(c), i);
		CHECK_INT(describe_total(c), i);
	}
	json_t *p = json_pack("{s:[s]}", "ids", "fresh-2"), *resp = NULL;
	CHECK_INT(a2m_client_request_json(c, "memory/forget", p, &resp), A2M_CLIENT_OK);
	json_decref(p);
	json_decref(resp);
	CHECK_INT(describe_total(c), 2);
	/* An in-process caller shares the handle and the cache: it sees the
	** same counts, with scopes, which HTTP never offers unauthenticated. */
	char *local = check_reply(s.h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/describe\"}");
	json_t *lv = local ? json_loads(local, 0, NULL) : NULL;
	CHECK_INT(described_total(lv), 2);
	CHECK(local && strstr(local, "\"scopes\"") != NULL);
	json_decref(lv);
	a2m_free(local);
	CHECK_INT(a2m_client_request_json(c, "memory/describe", NULL, &resp), A2M_CLIENT_OK);
	CHECK(json_object_get(resp, "result") && !offers_scopes(resp));
	json_decref(resp);
	a2m_client_free(c);
	stop(&s);
}

static void test_describe_counts_stay_the_principal_s(void)
{
	server s;
	if (!started(&s, "tok-alice alice\ntok-bob bob\n", 0))
		return;
	a2m_client *alice = connect_to(&s, "tok-alice");
	a2m_client *bob = connect_to(&s, "tok-bob");
	json_t *p = json_pack("{s:[{s:s,s:s}]}", "records", "content", "alice's working note",
			      "tier", "working"), *resp = NULL;
	CHECK_INT(a2m_client_request_json(alice, "memory/remember", p, &resp), A2M_CLIENT_OK);
	json_decref(p);
	json_decref(resp);
	/* Twice each: a cached answer for one principal must not reach the other. */
	for (int i = 0; i < 2; i++) {
		CHECK_INT(describe_total(alice), 1);
		CHECK_INT(describe_total(bob), 0);
	}
	a2m_client_free(alice);
	a2m_client_free(bob);
	stop(&s);
}

/* The raw reply to text from a local caller, or a network one (nobody
** authenticated); NULL for none. */
static char *handle_as(a2m *h, const char *text, int network)
{
	char *out = NULL;
	int rc = network ? a2m_handle_network(h, text, A2M_NUL_TERMINATED, NULL, &out)
			 : a2m_handle(h, text, A2M_NUL_TERMINATED, &out);
	CHECK_INT(rc, A2M_OK);
	return out;
}

static void test_describe_echoes_the_id_as_sent(void)
{
	a2m *h = check_open("engine", "memory", NULL);
	CHECK(h != NULL);
	if (!h)
		return;
	static const char *const ids[] = {"7", "\"7\"", "1.5", "null", "-3", "\"a\\\"b\\u0001\"",
					  "9007199254740993", "\"\""};
	/* k = 0: a local caller; 1: a network one, nobody authenticated. */
	for (size_t k = 0; k < 2; k++) {
		/* The first of each pair fills the cache, the second is answered from it. */
		for (size_t i = 0; i < 2 * sizeof ids / sizeof *ids; i++) {
			const char *id = ids[i / 2];
			char req[160], want[160];
			snprintf(req, sizeof req,
				 "{\"jsonrpc\":\"2.0\",\"method\":\"memory/describe\",\"id\":%s,"
				 "\"params\":{\"protocol\":\"a2m/0.1\"}}", id);
			snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{", id);
			char *out = handle_as(h, req, (int)k);
			CHECK(out && strncmp(out, want, strlen(want)) == 0);
			CHECK(out && out[strlen(out) - 1] == '}');
			json_t *v = out ? json_loads(out, 0, NULL) : NULL;
			CHECK(json_is_object(json_object_get(v, "result")));
			json_decref(v);
			a2m_free(out);
		}
	}
	/* An id too long for the cache's envelope takes the handler's path. */
	char longid[400], req[512], want[512];
	memset(longid, 'x', 300);
	longid[300] = '\0';
	snprintf(req, sizeof req, "{\"jsonrpc\":\"2.0\",\"method\":\"memory/describe\",\"id\":\"%s\"}",
		 longid);
	snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{", longid);
	for (size_t k = 0; k < 2; k++) {
		char *out = handle_as(h, req, (int)k);
		CHECK(out && strncmp(out, want, strlen(want)) == 0);
		a2m_free(out);
	}
	/* Shapes the parser-free path must leave to the parser, and shapes it
	** takes: the answer is the same either way (network caller). */
	static const struct {
		const char *req, *want;
	} shapes[] = {
		{" {\n\"method\" : \"memory/describe\" ,\t\"id\" : 12 , \"jsonrpc\":\"2.0\","
		 " \"params\" : { } }\r\n", "{\"jsonrpc\":\"2.0\",\"id\":12,\"result\":{"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"memory/describe\"}",
		 "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/describe\"} x",
		 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700"},
		{"{\"jsonrpc\":\"2.0\",\"id\":01,\"method\":\"memory/describe\"}",
		 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700"},
		{"{\"jsonrpc\":\"2.0\",\"id\":-0,\"method\":\"memory/describe\"}",
		 "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1e2,\"method\":\"memory/describe\"}",
		 "{\"jsonrpc\":\"2.0\",\"id\":100.0,\"result\":{"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1234567890123456789,\"method\":\"memory/describe\"}",
		 "{\"jsonrpc\":\"2.0\",\"id\":1234567890123456789,\"result\":{"},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\xa9\",\"method\":\"memory/describe\"}",
		 "{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\xa9\",\"result\":{"},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"m\",\"method\":\"memory/describe\",\"params\":"
		 "{\"protocol\":\"a2m/0.1\",\"owner\":\"x\"}}",
		 "{\"jsonrpc\":\"2.0\",\"id\":\"m\",\"error\":{\"code\":-32003"},
		{"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"memory/describe\",\"params\":"
		 "{\"protocol\":\"a2m/0.1.4\"}}", "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{"},
		{"{\"jsonrpc\":\"1.0\",\"id\":4,\"method\":\"memory/describe\"}",
		 "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32600"},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"memory/describe\"}", NULL},
	};
	for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
		char *out = handle_as(h, shapes[i].req, 1);
		if (!shapes[i].want)
			CHECK(out == NULL);
		else if (!out || strncmp(out, shapes[i].want, strlen(shapes[i].want)) != 0)
			CHECK(!"the answer to an unusual describe");
		if (shapes[i].want && out && strncmp(out, shapes[i].want, strlen(shapes[i].want)))
			fprintf(stderr, "  %s\n  -> %.120s\n", shapes[i].req, out);
		a2m_free(out);
	}
	/* A protocol we do not speak is still refused, cached or not. */
	static const char bad[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"memory/describe\","
				  "\"params\":{\"protocol\":\"a2m/0.2\"}}";
	for (size_t k = 0; k < 2; k++) {
		char *out = handle_as(h, bad, (int)k);
		CHECK(out && strstr(out, "\"code\":-32007") != NULL);
		a2m_free(out);
	}
	a2m_close(h);
}

/* One thread of the storm: writers remember, readers check describe and recall. */
typedef struct storm_arg {
	const server *s;
	int           writer;
	int           n;        /* writes (writer) or describes (reader) */
	int           failures; /* counted here, checked by the main thread */
} storm_arg;

static void *storm(void *p)
{
	storm_arg *a = p;
	a2m_client_http_options o;
	a2m_client_http_options_init(&o);
	o.timeout_ms = 30000;
	a2m_client *c = NULL;
	if (a2m_client_connect_http(a->s->url, &o, &c) != A2M_CLIENT_OK) {
		a->failures++;
		return NULL;
	}
	long long last = 0;
	for (int i = 0; i < a->n; i++) {
		if (a->writer) {
			char id[48];
			snprintf(id, sizeof id, "storm-%p-%d", (void *)a, i);
			/* Once my write is answered, no describe may miss it. */
			if (remember_one(c, id) != 0 || describe_total(c) < i + 1)
				a->failures++;
		} else {
			/* Counts only grow while only writes happen. */
			long long n = describe_total(c);
			if (n < last)
				a->failures++;
			last = n;
			/* Recalls in between: reads that touch what they find. */
			json_t *q = json_pack("{s:s}", "query", "fact describe cache"), *resp = NULL;
			if (a2m_client_request_json(c, "memory/recall", q, &resp) != A2M_CLIENT_OK ||
			    !json_object_get(resp, "result"))
				a->failures++;
			json_decref(q);
			json_decref(resp);
		}
	}
	a2m_client_free(c);
	return NULL;
}

static void test_describe_under_a_write_storm(void)
{
	enum { WRITERS = 3, READERS = 3, WRITES = 40, READS = 150 };
	server s;
	if (!started(&s, NULL, 0))
		return;
	pthread_t t[WRITERS + READERS];
	storm_arg a[WRITERS + READERS];
	for (int i = 0; i < WRITERS + READERS; i++) {
		a[i] = (storm_arg){&s, i < WRITERS, i < WRITERS ? WRITES : READS, 0};
		CHECK_INT(pthread_create(&t[i], NULL, storm, &a[i]), 0);
	}
	for (int i = 0; i < WRITERS + READERS; i++) {
		pthread_join(t[i], NULL);
		CHECK_INT(a[i].failures, 0);
	}
	a2m_client *c = connect_to(&s, NULL);
	CHECK_INT(describe_total(c), WRITERS * WRITES);
	a2m_client_free(c);
	stop(&s);
}

/*
** Each worker listens on the port with SO_REUSEPORT; a second server on a
** port in use must still fail, as a plain bind does, not quietly share the
** first one's connections. Once the first is stopped the port is free.
*/
static void test_port_in_use_is_refused_with_several_workers(void)
{
	server s;
	if (!started(&s, NULL, 0))
		return;
	a2m_http_config hc;
	memset(&hc, 0, sizeof hc);
	hc.port = a2m_http_port(s.http);
	hc.threads = 2;
	a2m_http *second = NULL;
	char err[256] = "";
	CHECK(a2m_http_start(s.h, &hc, &second, err, sizeof err) != 0);
	CHECK(second == NULL);
	CHECK(strstr(err, "in use") != NULL);
	a2m_http_stop(s.http);
	s.http = NULL;
	CHECK(a2m_http_start(s.h, &hc, &second, err, sizeof err) == 0);
	a2m_http_stop(second);
	stop(&s);
}

static void test_client_refuses_other_urls(void)
{
	a2m_client *c = (a2m_client *)1;
	CHECK_INT(a2m_client_connect_http("ftp://127.0.0.1/", NULL, &c), A2M_CLIENT_ERR_MISUSE);
	CHECK(c == NULL);
	CHECK_INT(a2m_client_connect_http(NULL, NULL, &c), A2M_CLIENT_ERR_MISUSE);
	CHECK_INT(a2m_client_http_status(NULL), 0);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	static const test_case tests[] = {
		TEST(test_tokens_lookup_is_exact),
		TEST(test_tokens_malformed_line_is_named_not_shown),
		TEST(test_tokens_empty_file_is_refused),
		TEST(test_client_requests_share_the_handle),
		TEST(test_client_notification_queues_nothing),
		TEST(test_client_lines_in_one_write_are_posts_in_order),
		TEST(test_client_http_error_is_io_with_status),
		TEST(test_client_token_makes_the_principal_the_owner),
		TEST(test_client_body_over_the_limit_is_413),
		TEST(test_client_no_server_is_io_and_not_alive),
		TEST(test_client_refuses_other_urls),
		TEST(test_port_in_use_is_refused_with_several_workers),
		TEST(test_describe_after_a_write_is_never_stale),
		TEST(test_describe_counts_stay_the_principal_s),
		TEST(test_describe_echoes_the_id_as_sent),
		TEST(test_describe_under_a_write_storm),
		{NULL, NULL}
	};
	int rc = run_tests(tests);
	static const char *const names[] = {"ok", "bad", "empty", "tokens"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char path[256];
		snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	rmdir(tmpdir);
	return rc;
}
