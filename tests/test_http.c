/*
** test_http.c — the bearer token table, and the HTTP client against the HTTP
** server in one process: one test per rule of docs/HTTP.md that the client
** API can see. The statuses and headers themselves are tested from the
** outside by tests/http_test.sh.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "a2m.h"
#include "a2m_client.h"
#include "check.h"
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
	a2m_config cfg;
	a2m_config_init(&cfg);
	cfg.engine = A2M_ENGINE_MEMORY;
	char err[256];
	if (a2m_open(&cfg, &s->h, NULL) != 0)
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
	if (start(&s, NULL, 0) != 0) {
		CHECK(!"server started");
		return;
	}
	a2m_client *c = connect_to(&s, NULL);
	for (int i = 0; c && i < 3; i++) {
		json_t *resp = NULL;
		CHECK_INT(a2m_client_request(c, "memory/describe", NULL, &resp), A2M_CLIENT_OK);
		json_t *caps = json_object_get(json_object_get(resp, "result"), "capabilities");
		CHECK(json_is_array(caps));
		/* Over HTTP without a token nobody is authenticated: no scopes. */
		for (size_t k = 0; k < json_array_size(caps); k++)
			CHECK(strcmp(json_string_value(json_array_get(caps, k)), "scopes") != 0);
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
	if (start(&s, NULL, 0) != 0) {
		CHECK(!"server started");
		return;
	}
	a2m_client *c = connect_to(&s, NULL);
	static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":\"memory/describe\"}";
	CHECK_INT(a2m_client_send_line(c, note, sizeof note - 1), A2M_CLIENT_OK);
	CHECK_INT(a2m_client_http_status(c), 202);
	CHECK_INT(a2m_client_pending(c), 0);
	/* Nothing can arrive unasked over HTTP: the wait ends at once. */
	a2m_client_set_timeout(c, 600000);
	json_t *msg = NULL;
	CHECK_INT(a2m_client_recv(c, &msg), A2M_CLIENT_ERR_TIMEOUT);
	CHECK(msg == NULL);
	a2m_client_free(c);
	stop(&s);
}

static void test_client_lines_in_one_write_are_posts_in_order(void)
{
	server s;
	if (start(&s, NULL, 0) != 0) {
		CHECK(!"server started");
		return;
	}
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
	CHECK_INT(a2m_client_recv(c, &m1), A2M_CLIENT_OK);
	CHECK_INT(a2m_client_recv(c, &m2), A2M_CLIENT_OK);
	CHECK_INT(a2m_client_recv(c, &m3), A2M_CLIENT_OK);
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
	if (start(&s, "tok-alice alice\n", 0) != 0) {
		CHECK(!"server started");
		return;
	}
	a2m_client *c = connect_to(&s, NULL);
	json_t *resp = NULL;
	CHECK_INT(a2m_client_request(c, "memory/describe", NULL, &resp), A2M_CLIENT_ERR_IO);
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
	if (start(&s, "tok-alice alice\ntok-bob bob\n", 0) != 0) {
		CHECK(!"server started");
		return;
	}
	a2m_client *alice = connect_to(&s, "tok-alice");
	a2m_client *bob = connect_to(&s, "tok-bob");
	json_t *resp = NULL;
	json_t *p = json_pack("{s:[{s:s,s:s,s:s}]}", "records", "id", "r1", "content",
			      "alice's private note", "tier", "working");
	CHECK_INT(a2m_client_request(alice, "memory/remember", p, &resp), A2M_CLIENT_OK);
	CHECK(json_object_get(resp, "result") != NULL);
	json_decref(resp);
	json_decref(p);

	p = json_pack("{s:{s:s}}", "where", "id", "r1");
	CHECK_INT(a2m_client_request(alice, "memory/timeline", p, &resp), A2M_CLIENT_OK);
	json_t *rec = json_array_get(json_object_get(json_object_get(resp, "result"), "records"), 0);
	CHECK_STR(json_string_value(json_object_get(rec, "owner")), "alice");
	json_decref(resp);
	CHECK_INT(a2m_client_request(bob, "memory/timeline", p, &resp), A2M_CLIENT_OK);
	CHECK_INT(json_array_size(json_object_get(json_object_get(resp, "result"), "records")), 0);
	json_decref(resp);
	json_decref(p);

	p = json_pack("{s:s}", "owner", "alice");
	CHECK_INT(a2m_client_request(bob, "memory/recall", p, &resp), A2M_CLIENT_OK);
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
	if (start(&s, NULL, 1024) != 0) {
		CHECK(!"server started");
		return;
	}
	a2m_client *c = connect_to(&s, NULL);
	char pad[2048];
	memset(pad, 'a', sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	json_t *p = json_pack("{s:s}", "padding", pad);
	json_t *resp = NULL;
	CHECK_INT(a2m_client_request(c, "memory/describe", p, &resp), A2M_CLIENT_ERR_IO);
	CHECK_INT(a2m_client_http_status(c), 413);
	json_decref(p);
	/* The next request, within the limit, is served. */
	CHECK_INT(a2m_client_request(c, "memory/describe", NULL, &resp), A2M_CLIENT_OK);
	json_decref(resp);
	a2m_client_free(c);
	stop(&s);
}

static void test_client_no_server_is_io_and_not_alive(void)
{
	server s;
	if (start(&s, NULL, 0) != 0) {
		CHECK(!"server started");
		return;
	}
	char url[128];
	snprintf(url, sizeof url, "%s", s.url);
	stop(&s); /* the port is free again: nobody listens there */
	a2m_client *c = NULL;
	CHECK_INT(a2m_client_connect_http(url, NULL, &c), A2M_CLIENT_OK);
	json_t *resp = NULL;
	CHECK_INT(a2m_client_request(c, "memory/describe", NULL, &resp), A2M_CLIENT_ERR_IO);
	CHECK(!a2m_client_alive(c));
	CHECK_INT(a2m_client_close(c, NULL), A2M_CLIENT_OK);
	a2m_client_free(c);
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
