/*
** test_http_stop.c — the HTTP binding's stop with group commit
** (transport/http.c stop_daemons, transport/http_durable.c): writes that
** come on kept-alive connections at each point of the stop are answered
** and stored, never left suspended when the workers stop (libmicrohttpd
** aborts the process then); a sync that never ends (a disk that hangs)
** does not hang the stop, nor is its write acknowledged; a write after the
** stop's last look at the workers is dropped unrun (docs/HTTP.md, SIGTERM).
**
** Each test serves a SQLite store in this process over HTTP and talks to
** it through raw sockets, so a request can be sent at an exact point
** inside the stop (a2m_http_stop_hook_for_tests).
*/
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "server/deferred.h"
#include "group_commit_server.h"
#include "transport/http.h"

static char tmpdir[] = "/tmp/a2m-test-http-stop.XXXXXX";

/* ---- a stop with writes coming on kept-alive connections ---- */

/*
** The store tmpdir/name served over HTTP (defer and timeout_s as
** start_group_commit_with says) into *h and *http. Returns 0, or -1 with
** nothing left open.
*/
static int serve_store(const char *name, const a2m_http_defer *defer, unsigned timeout_s,
		       a2m **h, a2m_http **http)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	*http = NULL;
	if (!(*h = check_open("engine", "sqlite", "path", path, NULL)))
		return -1;
	if (!(*http = start_group_commit_with(*h, defer, timeout_s))) {
		CHECK(!"server started");
		a2m_close(*h);
		*h = NULL;
		return -1;
	}
	return 0;
}

/* A connection to 127.0.0.1:port, or -1. */
static int connect_to_port(unsigned port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Sends one POST of body to / on fd (kept alive: HTTP/1.1). */
static int post_on(int fd, const char *body)
{
	char req[1024];
	int n = snprintf(req, sizeof req, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
			 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
			 strlen(body), body);
	return n > 0 && n < (int)sizeof req && write(fd, req, (size_t)n) == n ? 0 : -1;
}

/*
** Reads one response from fd into buf (NUL-terminated): its status, or 0
** when the connection ended or nothing came within 60 s (a bound on a
** broken server, not a measure).
*/
static int response_on(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = '\0';
	for (;;) {
		const char *end = strstr(buf, "\r\n\r\n");
		const char *cl = strstr(buf, "Content-Length: ");
		if (end && cl && len >= (size_t)(end + 4 - buf) + strtoul(cl + 16, NULL, 10))
			return (int)strtol(buf + 9, NULL, 10);  /* "HTTP/1.1 200" */
		struct pollfd p = {fd, POLLIN, 0};
		if (len + 1 >= cap || poll(&p, 1, 60000) != 1)
			return 0;
		ssize_t got = read(fd, buf + len, cap - 1 - len);
		if (got <= 0)
			return 0;
		len += (size_t)got;
		buf[len] = '\0';
	}
}

static const char *const stop_writes[2] = {
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\",\"params\":{\"records\":"
	"[{\"content\":\"sent once the drain was over\",\"key\":\"after-drain\"}]}}",
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"memory/remember\",\"params\":{\"records\":"
	"[{\"content\":\"sent while closing\",\"key\":\"while-closing\"}]}}",
};
static int stop_fds[2];
static int stop_suspended[2];  /* the write was seen suspended */

/*
** Inside a2m_http_stop (a2m_http_stop_hook_for_tests), at each of its two
** points: a write on a connection kept alive from before the stop. Waits
** until it is suspended (waiting for its sync) or answered, whichever
** comes first, so the stop goes on with it as it stands.
*/
static void write_inside_stop(a2m_http *s, int closing)
{
	if (closing > 1)
		return;
	int fd = stop_fds[closing];
	/* Not resumed until seen suspended (when it is: never, once closing). */
	a2m_http_hold_resumes_for_tests(1);
	CHECK(post_on(fd, stop_writes[closing]) == 0);
	for (int i = 0; i < 600000; i++) {
		struct pollfd p = {fd, POLLIN, 0};
		if (a2m_http_suspended_for_tests(s) > 0) {
			stop_suspended[closing] = 1;
			break;
		}
		if (poll(&p, 1, 0) == 1)
			break;  /* answered (or closed) */
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
	a2m_http_hold_resumes_for_tests(0);
}

/*
** Exit 134 under SIGTERM and write load (tests/http_test.sh, once in CI):
** a kept-alive connection sent a write after the stop's drain saw no
** request in flight; the write suspended its connection waiting for its
** sync, and libmicrohttpd aborts the process when a daemon is stopped with
** a connection suspended. Here a write comes at each of the two points of
** the stop: once the drain is over (it is suspended: the stop must wait
** for its sync and its answer) and once the stop is closing (it must not
** be suspended at all: its worker finishes it). Each is answered, its
** record is in the store, and the process is alive to check it.
*/
static void test_a_stop_waits_for_writes_on_kept_alive_connections(void)
{
	char buf[4096];
	a2m *h;
	a2m_http *http;
	if (serve_store("stop.db", &group_commit_defer, 0, &h, &http) != 0)
		return;
	/* Two connections, each with a write answered before the stop, so
	** they are accepted and kept alive (no "Connection: close" yet). */
	for (int i = 0; i < 2; i++) {
		stop_fds[i] = connect_to_port(a2m_http_port(http));
		CHECK(stop_fds[i] >= 0);
		char before[256];
		snprintf(before, sizeof before,
			 "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"memory/remember\",\"params\":"
			 "{\"records\":[{\"content\":\"before the stop\",\"key\":\"before-%d\"}]}}", i);
		CHECK(post_on(stop_fds[i], before) == 0);
		CHECK_INT(response_on(stop_fds[i], buf, sizeof buf), 200);
		CHECK(strstr(buf, "Connection: close") == NULL);
		stop_suspended[i] = 0;
	}
	a2m_http_stop_hook_for_tests(write_inside_stop);
	CHECK_INT(a2m_http_stop(http), 0);
	a2m_http_stop_hook_for_tests(NULL);
	/* Once the drain was over, the write was still let suspend (so the
	** stop had one to wait for); once closing, never. */
	CHECK_INT(stop_suspended[0], 1);
	CHECK_INT(stop_suspended[1], 0);
	for (int i = 0; i < 2; i++) {
		CHECK_INT(response_on(stop_fds[i], buf, sizeof buf), 200);
		CHECK(strstr(buf, "\"result\"") != NULL);
		CHECK(strstr(buf, "Connection: close") != NULL);
		close(stop_fds[i]);
	}
	CHECK(check_holds(h, "after-drain", "sent once the drain was over"));
	CHECK(check_holds(h, "while-closing", "sent while closing"));
	a2m_close(h);
}

/* ---- a stop whose syncs never end ---- */

/*
** The sync the binding waits for, as the seam gives it (a2m_http_defer):
** while syncs_stuck is set it does not end (at most 60 s, a bound on a
** broken test), as on a disk that hangs; stuck_entered counts the calls
** that came in.
*/
static atomic_int syncs_stuck, stuck_entered;

static void finish_maybe_stuck(a2m *h, void **pending, char **replies, int *status, size_t n)
{
	atomic_fetch_add(&stuck_entered, 1);
	for (int i = 0; i < 600000 && atomic_load(&syncs_stuck); i++) {
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
	a2m_deferred_finish(h, pending, replies, status, n);
}

/* Waits (at most 60 s) until *v reaches want; whether it did. */
static int wait_for(atomic_int *v, int want)
{
	for (int i = 0; i < 600000 && atomic_load(v) < want; i++) {
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
	return atomic_load(v) >= want;
}

/* Whether fd has anything to read (an answer, or its end) right now. */
static int readable(int fd)
{
	struct pollfd p = {fd, POLLIN, 0};
	return poll(&p, 1, 0) == 1;
}

static int stuck_fd;

/* Inside the stop, once it no longer suspends: a write, which its worker
** finishes itself, and which hangs there. */
static void write_while_stuck(a2m_http *s, int closing)
{
	(void)s;
	if (closing != 1)
		return;
	CHECK(post_on(stuck_fd, stop_writes[1]) == 0);
	CHECK(wait_for(&stuck_entered, 1));
}

/*
** A sync that never ends (a disk that hangs) must not hang the stop, nor
** may the stop stop the workers while a connection is suspended (the
** abort) or a worker waits for a sync itself (the join would hang). Each
** in turn: a write suspended before the stop (hung == 0), a write that its
** worker finishes itself inside the stop (1). Once the deadline (the
** connection timeout and a second) has passed, the stop returns -1 with
** the write unanswered, and the server still runs. Once the sync ends,
** the write is answered (it is durable by then), and a second stop stops
** the server.
*/
static void stop_with_a_stuck_sync(int hung)
{
	char name[32], buf[4096];
	snprintf(name, sizeof name, "stuck-%d.db", hung);
	static const a2m_http_defer stuck = {a2m_handle_network_deferred, a2m_deferred_run,
					     finish_maybe_stuck, a2m_deferred_drop};
	a2m *h;
	a2m_http *http;
	/* Connections idle 2 s are closed: the writes come sooner than that. */
	if (serve_store(name, &stuck, 2, &h, &http) != 0)
		return;
	stuck_fd = connect_to_port(a2m_http_port(http));
	CHECK(stuck_fd >= 0);
	CHECK(post_on(stuck_fd, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"memory/remember\","
		      "\"params\":{\"records\":[{\"content\":\"kept\"}]}}") == 0);
	CHECK_INT(response_on(stuck_fd, buf, sizeof buf), 200);
	atomic_store(&stuck_entered, 0);
	atomic_store(&syncs_stuck, 1);
	if (hung == 0) {
		/* Suspended, its sync stuck. */
		CHECK(post_on(stuck_fd, stop_writes[0]) == 0);
		CHECK(wait_for(&stuck_entered, 1));
	} else {
		a2m_http_stop_hook_for_tests(write_while_stuck);
	}
	int rc = a2m_http_stop(http);
	a2m_http_stop_hook_for_tests(NULL);
	CHECK_INT(rc, -1);
	CHECK(!readable(stuck_fd));  /* not acknowledged */
	atomic_store(&syncs_stuck, 0);
	CHECK_INT(response_on(stuck_fd, buf, sizeof buf), 200);
	CHECK(strstr(buf, "\"result\"") != NULL);
	if (rc != 0)
		CHECK_INT(a2m_http_stop(http), 0);
	close(stuck_fd);
	if (hung == 0)
		CHECK(check_holds(h, "after-drain", "sent once the drain was over"));
	else
		CHECK(check_holds(h, "while-closing", "sent while closing"));
	a2m_close(h);
}

static void test_a_stop_gives_up_on_a_sync_that_does_not_end(void)
{
	stop_with_a_stuck_sync(0);
	stop_with_a_stuck_sync(1);
}

static int shut_fd;
static int shut_closed;  /* the server closed the connection, unanswered */

/* Inside the stop, after its last look at the workers: a write, which
** must be dropped unrun and its connection closed (waited for here, so
** it is the worker that closes it, not the daemon's stop). */
static void write_after_shut(a2m_http *s, int closing)
{
	(void)s;
	if (closing != 2)
		return;
	char buf[4096];
	CHECK(post_on(shut_fd, stop_writes[1]) == 0);
	shut_closed = response_on(shut_fd, buf, sizeof buf) == 0;
}

/*
** A write that comes once the stop took its last look at the workers is
** not run: were its sync to hang, the stop would hang joining its worker.
** Its connection is closed without an answer, and it is not stored.
*/
static void test_a_write_after_the_last_look_is_dropped(void)
{
	char buf[4096];
	a2m *h;
	a2m_http *http;
	if (serve_store("shut.db", &group_commit_defer, 0, &h, &http) != 0)
		return;
	shut_fd = connect_to_port(a2m_http_port(http));
	CHECK(shut_fd >= 0);
	CHECK(post_on(shut_fd, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"memory/remember\","
		      "\"params\":{\"records\":[{\"content\":\"kept\"}]}}") == 0);
	CHECK_INT(response_on(shut_fd, buf, sizeof buf), 200);
	shut_closed = 0;
	a2m_http_stop_hook_for_tests(write_after_shut);
	CHECK_INT(a2m_http_stop(http), 0);
	a2m_http_stop_hook_for_tests(NULL);
	CHECK(shut_closed);
	close(shut_fd);
	CHECK(check_holds(h, "while-closing", NULL));
	a2m_close(h);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	static const test_case tests[] = {
		TEST(test_a_stop_waits_for_writes_on_kept_alive_connections),
		TEST(test_a_stop_gives_up_on_a_sync_that_does_not_end),
		TEST(test_a_write_after_the_last_look_is_dropped),
		{NULL, NULL}
	};
	int rc = run_tests(tests);
	check_remove_dir(tmpdir);
	return rc;
}
