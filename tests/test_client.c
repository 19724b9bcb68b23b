/*
** test_client.c — what the client side of liba2m (src/client/) owes a
** server, each duty checked against a peer that puts it to the test: the
** spec's client obligations the claims register (conformance/claims.json)
** names these tests for.
**
**   - spec §8.2: a client tolerates notifications interleaved with the
**     response it awaits, and matches responses by id. The server is this
**     program run again as `test_client serve`: a real handle behind the
**     real stdio transport (a2m_stdio_serve), which pushes each event of a
**     subscription before the response to the write that caused it.
**   - spec §2.1: READ_ONLY is an answer, not a transport failure; the
**     client neither fails nor resends. The server: `test_client serve
**     PATH`, a read-only SQLite store.
**   - spec §8.3.2: over HTTP the client sends A2M-Protocol-Version on every
**     POST, unless told not to. The peer is a listener in this process that
**     records the request's head and answers it, since no A2M server shows
**     a caller the headers it received.
*/
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "a2m.h"
#include "a2m_client.h"
#include "client/client_json.h"
#include "check.h"
#include "check_a2m.h"
#include "transport/stdio.h"

/* ---- the stdio peer: this program, serving ---- */

/* `test_client serve`: a memory store over stdin and stdout; `test_client
** serve PATH`: the SQLite store at PATH, read-only (which needs a file). */
static int serve(const char *read_only_path)
{
	a2m *h = read_only_path
		? check_open("engine", "sqlite", "path", read_only_path, "read_only", "1", NULL)
		: check_open("engine", "memory", NULL);
	if (!h)
		return 1;
	static volatile sig_atomic_t stop;
	sigset_t mask;
	sigemptyset(&mask);
	int rc = a2m_stdio_serve(h, 0, 1, A2M_STDIO_MAX_LINE, &stop, &mask);
	a2m_close(h);
	return rc == 0 ? 0 : 1;
}

/* `test_client quit`: reads one line (or to EOF), then exits without a word:
** a server that dies in the middle of a call. */
static int quit_after_a_line(void)
{
	char ch;
	while (read(0, &ch, 1) == 1 && ch != '\n')
		;
	return 3;
}

/* A client of a fresh `test_client serve [PATH]`, or NULL after failing. */
static a2m_client *spawn_peer(const char *read_only_path)
{
	char *argv[] = {"/proc/self/exe", "serve", (char *)read_only_path, NULL};
	a2m_client *c = NULL;
	CHECK_INT(a2m_client_spawn_stdio(argv, &c), A2M_CLIENT_OK);
	if (c)
		a2m_client_set_timeout(c, 30000);
	return c;
}

/* The result of method with params (JSON text), or NULL after failing. */
static json_t *result_of(a2m_client *c, const char *method, const char *params)
{
	json_t *p = params ? json_loads(params, 0, NULL) : NULL, *resp = NULL;
	CHECK_INT(a2m_client_request_json(c, method, p, &resp), A2M_CLIENT_OK);
	json_decref(p);
	json_t *r = json_incref(json_object_get(resp, "result"));
	CHECK(r != NULL);
	json_decref(resp);
	return r;
}

/* Counts the requests the client writes for each method, by tracing. */
typedef struct sent_count {
	int remember, forget;
} sent_count;

static void count_sent(void *user, enum a2m_client_dir dir, const char *bytes, size_t len)
{
	sent_count *n = user;
	if (dir != A2M_CLIENT_SENT)
		return;
	if (memmem(bytes, len, "\"memory/remember\"", 17))
		n->remember++;
	if (memmem(bytes, len, "\"memory/forget\"", 15))
		n->forget++;
}

static void test_notifications_interleaved_are_queued_responses_matched_by_id(void)
{
	a2m_client *c = spawn_peer(NULL);
	if (!c)
		return;
	json_t *d = result_of(c, "memory/describe", "{\"protocol\":\"a2m/0.1\"}");
	json_t *s = result_of(c, "memory/events/subscribe", "{\"kinds\":[\"written\"]}");
	CHECK(json_is_true(json_object_get(s, "subscribed")));
	/* The server pushes the two written events before it answers: the
	** request must still return the response, and keep both events. */
	json_t *w = result_of(c, "memory/remember",
			      "{\"records\":[{\"content\":\"one\"},{\"content\":\"two\"}]}");
	json_t *ids = json_object_get(w, "ids");
	CHECK_INT(json_array_size(ids), 2);
	CHECK_INT(a2m_client_pending(c), 2);
	for (size_t i = 0; i < 2; i++) {
		json_t *note = NULL;
		CHECK_INT(a2m_client_next_notification_json(c, &note), A2M_CLIENT_OK);
		CHECK_STR(json_string_value(json_object_get(note, "method")), "memory/event");
		CHECK(json_object_get(note, "id") == NULL);
		json_t *ev = json_object_get(note, "params");
		CHECK_STR(json_string_value(json_object_get(ev, "kind")), "written");
		CHECK_STR(json_string_value(json_object_get(ev, "id")),
			  json_string_value(json_array_get(ids, i)));
		json_decref(note);
	}
	/* Two requests in flight, awaited in the other order: each response
	** is found by its id, and the other is kept for its turn. */
	static const char first[] = "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"memory/timeline\","
				    "\"params\":{\"limit\":1}}";
	static const char second[] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"memory/describe\"}";
	CHECK_INT(a2m_client_send_line(c, first, sizeof first - 1), A2M_CLIENT_OK);
	CHECK_INT(a2m_client_send_line(c, second, sizeof second - 1), A2M_CLIENT_OK);
	char *resp = NULL;
	CHECK_INT(a2m_client_wait_response(c, "7", &resp), A2M_CLIENT_OK);
	CHECK(resp && strstr(resp, "\"capabilities\""));
	a2m_free(resp);
	resp = NULL;
	CHECK_INT(a2m_client_wait_response(c, "\"a\"", &resp), A2M_CLIENT_OK);
	CHECK(resp && strstr(resp, "\"records\""));
	a2m_free(resp);
	CHECK_INT(a2m_client_pending(c), 0);
	json_decref(d);
	json_decref(s);
	json_decref(w);
	int status = -1;
	CHECK_INT(a2m_client_close(c, &status), A2M_CLIENT_OK);
	CHECK_INT(status, 0);
	a2m_client_free(c);
}

/* The error code of a response, or 0 when it is not an error. */
static json_int_t error_code(const json_t *resp)
{
	return json_integer_value(json_object_get(json_object_get(resp, "error"), "code"));
}

static void test_read_only_refusal_is_an_answer_and_is_not_resent(void)
{
	char path[] = "/tmp/a2m-test-client.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	check_remove_db(path);
	a2m *made = check_open("engine", "sqlite", "path", path, NULL);
	CHECK(made != NULL);
	a2m_close(made);
	a2m_client *c = made ? spawn_peer(path) : NULL;
	if (!c) {
		check_remove_db(path);
		return;
	}
	sent_count sent = {0, 0};
	a2m_client_set_trace(c, count_sent, &sent);
	json_t *p = json_loads("{\"records\":[{\"content\":\"x\",\"id\":\"cl-1\"}]}", 0, NULL);
	json_t *resp = NULL;
	CHECK_INT(a2m_client_request_json(c, "memory/remember", p, &resp), A2M_CLIENT_OK);
	CHECK_INT(error_code(resp), A2M_READ_ONLY);
	json_decref(resp);
	json_decref(p);
	resp = NULL;
	p = json_loads("{\"ids\":[\"cl-1\"]}", 0, NULL);
	CHECK_INT(a2m_client_request_json(c, "memory/forget", p, &resp), A2M_CLIENT_OK);
	CHECK_INT(error_code(resp), A2M_READ_ONLY);
	json_decref(resp);
	json_decref(p);
	/* Each was sent once, and the connection still serves reads. */
	CHECK_INT(sent.remember, 1);
	CHECK_INT(sent.forget, 1);
	CHECK(a2m_client_alive(c));
	CHECK_STR(a2m_client_errmsg(c), "");
	json_t *r = result_of(c, "memory/recall", "{\"query\":\"x\"}");
	CHECK(json_is_array(json_object_get(r, "records")));
	json_decref(r);
	a2m_client_free(c);
	check_remove_db(path);
}

/* ---- the HTTP peer: a listener that records what it was sent ---- */

typedef struct listener {
	int fd;
	int port;
	char head[8192];  /* the request line and headers of the one POST */
	int ok;           /* it was read and answered */
} listener;

static int listen_loopback(listener *l)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0 || bind(l->fd, (struct sockaddr *)&a, sizeof a) != 0 ||
	    listen(l->fd, 4) != 0 || getsockname(l->fd, (struct sockaddr *)&a, &len) != 0)
		return -1;
	l->port = ntohs(a.sin_port);
	return 0;
}

/* Reads until the head and a Content-Length body are in buf; returns the
** length read, or -1. */
static ssize_t read_request(int fd, char *buf, size_t cap, char **body)
{
	size_t got = 0;
	*body = NULL;
	for (;;) {
		struct pollfd pfd = {fd, POLLIN, 0};
		if (poll(&pfd, 1, 30000) != 1)
			return -1;
		ssize_t n = read(fd, buf + got, cap - 1 - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
		buf[got] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		if (!end)
			continue;
		const char *cl = strcasestr(buf, "\r\nContent-Length:");
		size_t want = cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0;
		if (got >= (size_t)(end + 4 - buf) + want) {
			*body = end + 4;
			return (ssize_t)got;
		}
		if (got + 1 >= cap)
			return -1;
	}
}

/* Accepts one connection, reads one POST, answers it with an empty result
** carrying the request's id. */
static void *serve_one(void *arg)
{
	listener *l = arg;
	struct pollfd pfd = {l->fd, POLLIN, 0};
	if (poll(&pfd, 1, 30000) != 1)
		return NULL;
	int fd = accept(l->fd, NULL, NULL);
	if (fd < 0)
		return NULL;
	char buf[16384], *body;
	if (read_request(fd, buf, sizeof buf, &body) > 0) {
		snprintf(l->head, sizeof l->head, "%.*s", (int)(body - buf), buf);
		json_t *req = json_loads(body, 0, NULL);
		json_t *resp = json_pack("{s:s,s:O?,s:{}}", "jsonrpc", "2.0", "id",
					 json_object_get(req, "id"), "result");
		char *text = json_dumps(resp, JSON_COMPACT);
		char out[1024];
		int n = snprintf(out, sizeof out,
				 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
				 text ? strlen(text) : 0, text ? text : "");
		l->ok = n > 0 && write(fd, out, (size_t)n) == n;
		free(text);
		json_decref(resp);
		json_decref(req);
	}
	close(fd);
	return NULL;
}

/* The head of the POST the client sends for one describe, with
** protocol_version as given (NULL: the default). */
static void head_of_a_post(const char *protocol_version, listener *l)
{
	memset(l, 0, sizeof *l);
	pthread_t t;
	if (listen_loopback(l) != 0 || pthread_create(&t, NULL, serve_one, l) != 0) {
		CHECK(!"a loopback listener");
		return;
	}
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/", l->port);
	a2m_client_http_options o;
	a2m_client_http_options_init(&o);
	o.protocol_version = protocol_version;
	o.timeout_ms = 30000;
	a2m_client *c = NULL;
	CHECK_INT(a2m_client_connect_http(url, &o, &c), A2M_CLIENT_OK);
	json_t *resp = NULL;
	if (c)
		CHECK_INT(a2m_client_request_json(c, "memory/describe", NULL, &resp), A2M_CLIENT_OK);
	CHECK(json_is_object(json_object_get(resp, "result")));
	json_decref(resp);
	a2m_client_free(c);
	pthread_join(t, NULL);
	close(l->fd);
	CHECK(l->ok);
}

static void test_http_post_carries_the_protocol_version(void)
{
	listener l;
	head_of_a_post(NULL, &l);
	CHECK(strncmp(l.head, "POST ", 5) == 0);
	CHECK(strcasestr(l.head, "\r\nA2M-Protocol-Version: a2m/0.1\r\n") != NULL);
	/* Told to send none, it sends none. */
	head_of_a_post("", &l);
	CHECK(strncmp(l.head, "POST ", 5) == 0);
	CHECK(strcasestr(l.head, "A2M-Protocol-Version") == NULL);
}

/*
** A server that exits mid-call is an error the caller sees, never a SIGPIPE
** that ends the caller: its disposition here is the default (terminate), so
** a write that raised one would kill this test. Both ways a write meets the
** dead reader are tried: a small line once the server is gone, and a line
** too big for the kernel's buffer, which must wait for room that never comes.
*/
static void test_a_server_that_exits_mid_call_is_an_error_not_a_signal(void)
{
	CHECK(signal(SIGPIPE, SIG_DFL) != SIG_ERR);
	char *argv[] = {"/proc/self/exe", "quit", NULL};
	a2m_client *c = NULL;
	CHECK_INT(a2m_client_spawn_stdio(argv, &c), A2M_CLIENT_OK);
	if (!c)
		return;
	a2m_client_set_timeout(c, 30000);
	/* Through the text API: its params parsed once and freed on this error
	** path too (LeakSanitizer, in the sanitizer build, fails it if not). */
	char *resp = NULL;
	int rc = a2m_client_request(c, "memory/describe", "{}", &resp);
	CHECK(rc == A2M_CLIENT_ERR_CLOSED || rc == A2M_CLIENT_ERR_IO);
	CHECK(resp == NULL);
	/* The server has closed its stdout; once it has exited too, its stdin
	** has no reader and a write fails (EPIPE) instead of being buffered. */
	int sent = A2M_CLIENT_OK;
	for (int i = 0; i < 3000 && sent == A2M_CLIENT_OK; i++) {
		sent = a2m_client_send_line(c, "{}", 2);
		if (sent == A2M_CLIENT_OK)
			usleep(2000);
	}
	CHECK_INT(sent, A2M_CLIENT_ERR_IO);
	sigset_t pending;
	sigpending(&pending);
	CHECK(!sigismember(&pending, SIGPIPE));
	a2m_client_free(c);

	c = NULL;
	CHECK_INT(a2m_client_spawn_stdio(argv, &c), A2M_CLIENT_OK);
	if (!c)
		return;
	a2m_client_set_timeout(c, 30000);
	size_t big = (size_t)8 << 20;
	char *line = malloc(big);
	CHECK(line != NULL);
	if (line) {
		memset(line, '\n', big); /* the server takes the first and quits */
		CHECK_INT(a2m_client_send_raw(c, line, big), A2M_CLIENT_ERR_IO);
		CHECK_INT(a2m_client_send_raw(c, line, 1), A2M_CLIENT_ERR_IO);
	}
	free(line);
	int status = -1;
	CHECK_INT(a2m_client_close(c, &status), A2M_CLIENT_OK);
	CHECK_INT(status, 3);
	a2m_client_free(c);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "serve") == 0)
		return serve(argc > 2 ? argv[2] : NULL);
	if (argc > 1 && strcmp(argv[1], "quit") == 0)
		return quit_after_a_line();
	static const test_case tests[] = {
		TEST(test_notifications_interleaved_are_queued_responses_matched_by_id),
		TEST(test_read_only_refusal_is_an_answer_and_is_not_resent),
		TEST(test_http_post_carries_the_protocol_version),
		TEST(test_a_server_that_exits_mid_call_is_an_error_not_a_signal),
		{NULL, NULL}
	};
	return run_tests(tests);
}
