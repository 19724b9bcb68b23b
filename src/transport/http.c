/*
** http.c — the HTTP binding (spec §8.3) on libmicrohttpd, started and
** stopped; see http.h for the order of the checks and docs/HTTP.md for the
** why of each.
**
** libmicrohttpd owns the sockets, the HTTP parsing, keep-alive, idle
** timeouts, the connection limit and TLS, on a thread (or a pool of them,
** --threads) of its own. This file starts its daemons (one per worker, on
** one port), and stops them: requests in flight answered, writes waiting
** for a sync resumed, all within a deadline. A request itself, from its
** headers to its completion, is http_request.c's; the checks made from
** its headers are http_gate.c's. The library takes its own lock per
** request, so any number of worker threads may call it at once.
*/
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "transport/http_internal.h"
#include "util/log.h"
#include "util/thread.h"

/*
** Each connection's buffer for the request line, headers and body pieces
** (libmicrohttpd's default is 32 KB). libmicrohttpd zeroes the whole of it
** before every request on a kept-alive connection, which cost 6% of a
** describe; headers beyond it are refused with 431, bodies beyond it
** simply arrive in pieces.
*/
#define CONNECTION_MEMORY (16 * 1024)

/* ---- small helpers ---- */

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* libmicrohttpd's own diagnostics (a malformed request, a timeout) are
** debug noise for an operator; during start-up they are the reason. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	a2m_http *s = cls;
	char msg[256];
	vsnprintf(msg, sizeof msg, fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	if (atomic_load(&s->starting))
		snprintf(s->start_error, sizeof s->start_error, "%s", msg);
	a2m_log(A2M_LOG_DEBUG, "http: %s", msg);
}

/* ---- starting and stopping ---- */

/* Reads a whole (small) PEM file; NUL-terminated. Returns NULL and sets errno. */
static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (cap - n < 4096) {
			if (cap > ((size_t)1 << 20)) {
				errno = EFBIG; /* no certificate is a megabyte */
				goto fail;
			}
			char *grown = realloc(buf, cap + 8192 + 1);
			if (!grown)
				goto fail;
			buf = grown;
			cap += 8192;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		errno = EIO;
		goto fail;
	}
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
fail:
	free(buf);
	fclose(f);
	return NULL;
}

static void wipe_free(char *p, size_t n)
{
	if (!p)
		return;
	volatile char *v = p;
	while (n--)
		*v++ = 0;
	free(p);
}

static int is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
	return 0;
}

/*
** With --ui: the endpoint as a JSON string for the page's configuration.
** Returns -1 when the endpoint lies under the page's own path. Before the
** workers start.
*/
static int ui_endpoint(a2m_http *s)
{
	if (a2m_http_ui_path(s->path))
		return -1;
	/* A path has no quote or control byte that a URL would not have
	** escaped, but nothing is assumed. */
	size_t o = 0;
	s->path_json[0] = '\0';
	for (const char *p = s->path; *p && o + 8 < sizeof s->path_json; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '"' || ch == '\\' || ch < 0x20)
			o += (size_t)snprintf(s->path_json + o, sizeof s->path_json - o, "\\u%04x", ch);
		else
			s->path_json[o++] = (char)ch;
		s->path_json[o] = '\0';
	}
	return 0;
}

/*
** With --ui, once the port is known: the origins a browser gives the page
** this server serves — the address bound as a URL names it, the name it
** was given when that was a name, and localhost when it is loopback.
*/
static void own_origins(a2m_http *s, const char *given, const struct addrinfo *ai,
			const char *host, int tls)
{
	const char *scheme = tls ? "https" : "http";
	int v6 = ai->ai_family == AF_INET6;
	size_t n = 0;
	snprintf(s->own_origins[n++], sizeof s->own_origins[0], "%s://%s%s%s:%u", scheme,
		 v6 ? "[" : "", host, v6 ? "]" : "", s->port);
	if (given && strcmp(given, host) != 0 && !strchr(given, ':'))
		snprintf(s->own_origins[n++], sizeof s->own_origins[0], "%s://%s:%u", scheme, given,
			 s->port);
	if (is_loopback(ai->ai_addr) && (!given || strcmp(given, "localhost") != 0))
		snprintf(s->own_origins[n++], sizeof s->own_origins[0], "%s://localhost:%u", scheme,
			 s->port);
	atomic_store_explicit(&s->n_own, n, memory_order_release);
}

static void free_server(a2m_http *s)
{
	if (!s)
		return;
	free(s->cert);
	wipe_free(s->key, s->key_len);
	free(s);
}

static int stop_daemons(a2m_http *s);

/* Sets the port of an IPv4 or IPv6 socket address. */
static void set_port(struct sockaddr *sa, unsigned port)
{
	if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
	else if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
}

/*
** True when something already listens on ai's address. The workers bind
** with SO_REUSEPORT, which would let them join another listener of the
** same user on that port and split its connections instead of failing as
** a plain bind does; a plain bind tried first restores the failure.
** SO_REUSEADDR as libmicrohttpd sets it: a port left in TIME_WAIT by a
** server just stopped is free, one with a listener is not.
*/
static int port_taken(const struct addrinfo *ai)
{
	int fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0)
		return 0;  /* the daemons' own bind will say what is wrong */
	int on = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
	int taken = bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno == EADDRINUSE;
	close(fd);
	return taken;
}

unsigned a2m_http_default_threads(void)
{
	unsigned n = (unsigned)a2m_cpus_usable();  /* at least 1 */
	return n > A2M_HTTP_MAX_DEFAULT_THREADS ? A2M_HTTP_MAX_DEFAULT_THREADS : n;
}

int a2m_http_start(a2m *h, const a2m_http_config *cfg, a2m_http **out, char *err,
		   size_t errlen)
{
	*out = NULL;
	const char *why = NULL;
	if (!a2m_mhd_load(&why)) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	a2m_http *s = calloc(1, sizeof *s);
	struct addrinfo *ai = NULL;
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	s->h = h;
	s->path = cfg->path ? cfg->path : A2M_HTTP_DEFAULT_PATH;
	s->origins = cfg->origins;
	s->n_origins = cfg->n_origins;
	s->tokens = cfg->tokens;
	s->ui = cfg->ui;
	if (s->ui && ui_endpoint(s) != 0) {
		snprintf(err, errlen, "the endpoint cannot be under " A2M_HTTP_UI " with the inspector");
		goto fail;
	}
	s->max_body = cfg->max_body ? cfg->max_body : A2M_HTTP_DEFAULT_MAX_BODY;
	s->timeout_s = cfg->timeout_s ? cfg->timeout_s : A2M_HTTP_DEFAULT_TIMEOUT_S;
	atomic_init(&s->in_flight, 0);
	atomic_init(&s->stopping, 0);
	atomic_init(&s->suspended, 0);
	atomic_init(&s->closing, 0);
	atomic_init(&s->finishing, 0);
	atomic_init(&s->shut, 0);
	atomic_init(&s->starting, 0);
	atomic_init(&s->n_own, 0);

	/*
	** One worker per core unless told otherwise (a2m_http_default_threads):
	** recalls and timelines run side by side under the handle's shared
	** lock (server/handle.c), so a core of their own each is what makes them scale;
	** writes still take turns.
	*/
	unsigned threads = cfg->threads ? cfg->threads : a2m_http_default_threads();
	unsigned max_conn = cfg->max_connections ? cfg->max_connections : A2M_HTTP_DEFAULT_MAX_CONN;
	if (threads > A2M_HTTP_MAX_THREADS)
		threads = A2M_HTTP_MAX_THREADS;
	/* The connection limit is split between the workers. */
	if (threads > max_conn)
		threads = max_conn;

	int tls = cfg->tls_cert || cfg->tls_key;
	if (tls) {
		if (!cfg->tls_cert || !cfg->tls_key) {
			snprintf(err, errlen, "TLS needs both a certificate and a key");
			goto fail;
		}
		if (a2m_mhd()->is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			snprintf(err, errlen, "this libmicrohttpd was built without TLS");
			goto fail;
		}
		if (!(s->cert = read_file(cfg->tls_cert, &s->cert_len))) {
			snprintf(err, errlen, "%s: %s", cfg->tls_cert, strerror(errno));
			goto fail;
		}
		if (!(s->key = read_file(cfg->tls_key, &s->key_len))) {
			snprintf(err, errlen, "%s: %s", cfg->tls_key, strerror(errno));
			goto fail;
		}
	}

	const char *addr = cfg->addr ? cfg->addr : A2M_HTTP_DEFAULT_ADDR;
	char port[8];
	snprintf(port, sizeof port, "%u", cfg->port);
	struct addrinfo hints;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	int gai = getaddrinfo(addr, port, &hints, &ai);
	if (gai != 0) {
		snprintf(err, errlen, "cannot use address '%s': %s", addr, gai_strerror(gai));
		goto fail;
	}

	/* TURBO: read and write a socket before asking epoll whether it is
	** ready, which saves a system call per request on a keep-alive
	** connection (the sockets are non-blocking either way). */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG |
			 MHD_USE_TURBO | MHD_ALLOW_SUSPEND_RESUME;
	if (a2m_mhd()->is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES)
		flags |= MHD_USE_EPOLL;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (tls)
		flags |= MHD_USE_TLS;

	/*
	** Why a daemon per worker and not libmicrohttpd's thread pool: the
	** pool's workers share one listening socket, and whichever is awake
	** accepts; a client opening its connections at once (wrk's 16, a
	** connection pool) mostly found them all on one worker while the
	** other core idled (measured: one worker's CPU time grew, the other's
	** not at all, in two runs of three). With a socket each on the same
	** port (SO_REUSEPORT, which Linux allows only to the same user), the
	** kernel spreads connections over the sockets by their addresses.
	*/
	struct MHD_OptionItem extra[4];
	size_t n_extra = 0;
	if (threads > 1)
		extra[n_extra++] = (struct MHD_OptionItem){MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL};
	if (tls) {
		extra[n_extra++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, s->cert};
		extra[n_extra++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, s->key};
	}
	extra[n_extra] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

	if (threads > 1 && cfg->port && port_taken(ai)) {
		snprintf(err, errlen, "cannot serve on %s port %u: %s", addr, cfg->port,
			 strerror(EADDRINUSE));
		goto fail;
	}
	s->defer = cfg->defer && cfg->defer->handle && cfg->defer->run && cfg->defer->finish &&
		   cfg->defer->drop ? cfg->defer : NULL;
	int e = s->defer ? a2m_http_durable_start(s) : 0;
	if (e) {
		snprintf(err, errlen, "cannot start the HTTP binding's sync thread: %s", strerror(e));
		goto fail;
	}
	unsigned per_worker = max_conn / threads;
	s->port = cfg->port;
	atomic_store(&s->starting, 1);
	for (unsigned i = 0; i < threads; i++) {
		/* Port 0: the first daemon picks a free port, the others share it. */
		set_port(ai->ai_addr, s->port);
		s->daemons[i] = a2m_mhd()->start_daemon(
			flags, (uint16_t)s->port, NULL, NULL, a2m_http_on_request, s,
			MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
			MHD_OPTION_SOCK_ADDR, ai->ai_addr,
			MHD_OPTION_CONNECTION_TIMEOUT, s->timeout_s,
			MHD_OPTION_CONNECTION_LIMIT, per_worker,
			MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
			MHD_OPTION_NOTIFY_COMPLETED, a2m_http_on_completed, s,
			MHD_OPTION_ARRAY, extra,
			MHD_OPTION_END);
		if (!s->daemons[i])
			break;
		s->n_daemons++;
		if (i == 0) {
			const union MHD_DaemonInfo *info =
				a2m_mhd()->get_daemon_info(s->daemons[0], MHD_DAEMON_INFO_BIND_PORT);
			if (info && info->port)
				s->port = info->port;
		}
	}
	atomic_store(&s->starting, 0);
	if (s->n_daemons < threads) {
		snprintf(err, errlen, "cannot serve on %s port %u: %s", addr, s->port,
			 s->start_error[0] ? s->start_error : "libmicrohttpd refused to start");
		(void)stop_daemons(s);  /* nothing was served: nothing waits */
		goto fail;
	}

	char host[INET6_ADDRSTRLEN + 16]; /* numeric: fits, scope id and all */
	if (getnameinfo(ai->ai_addr, ai->ai_addrlen, host, sizeof host, NULL, 0, NI_NUMERICHOST))
		snprintf(host, sizeof host, "%s", addr);
	snprintf(s->url, sizeof s->url, "%s://%s%s%s:%u%s", tls ? "https" : "http",
		 ai->ai_family == AF_INET6 ? "[" : "", host, ai->ai_family == AF_INET6 ? "]" : "",
		 s->port, s->path);
	if (s->ui)
		own_origins(s, cfg->addr, ai, host, tls);
	if (!s->tokens && !is_loopback(ai->ai_addr))
		a2m_log(A2M_LOG_WARN, "serving %s without authentication on an address that is "
			"not loopback: anyone who can reach it can read and write every record "
			"(see --tokens)", s->url);
	freeaddrinfo(ai);
	*out = s;
	return 0;

fail:
	if (ai)
		freeaddrinfo(ai);
	free_server(s);
	return -1;
}

unsigned a2m_http_port(const a2m_http *s)
{
	return s->port;
}

const char *a2m_http_url(const a2m_http *s)
{
	return s->url;
}

#ifdef A2M_TEST_HOOKS
static void (*stop_hook)(a2m_http *s, int closing);

void a2m_http_stop_hook_for_tests(void (*fn)(a2m_http *s, int closing))
{
	stop_hook = fn;
}

int a2m_http_suspended_for_tests(a2m_http *s)
{
	return atomic_load(&s->suspended);
}
#define STOP_HOOK(s, closing) (stop_hook ? stop_hook(s, closing) : (void)0)
#else
#define STOP_HOOK(s, closing) ((void)0)
#endif

/* Waits until *count is 0 or the clock passes until (ms); whether it is 0. */
static int wait_zero(atomic_int *count, int64_t until, long step_ms)
{
	while (atomic_load(count) > 0 && now_ms() < until)
		sleep_ms(step_ms);
	return atomic_load(count) == 0;
}

/*
** Stops accepting on every worker, lets the requests in flight finish and
** be answered, then stops the workers. A request stuck on a silent client
** is cut after the connection timeout, as it would have been anyway.
** Returns 0; -1 when a sync did not end within the deadline: the workers
** are left running (a2m_http_stop, http.h).
*/
static int stop_daemons(a2m_http *s)
{
	/* No new connections from here on; the listening sockets must stay
	** open until the workers are gone (libmicrohttpd may still look at them). */
	if (!s->quiesced) {
		for (unsigned i = 0; i < s->n_daemons; i++)
			s->listen_fds[i] = a2m_mhd()->quiesce_daemon(s->daemons[i]);
		s->quiesced = 1;
	}
	int64_t give_up = now_ms() + (int64_t)s->timeout_s * 1000 + 1000;
	wait_zero(&s->in_flight, give_up, 5);
	/*
	** in_flight reached 0, yet a kept-alive connection may start another
	** request at any moment (one answered before the stop began was not
	** told to close), and a write of it would suspend its connection:
	** libmicrohttpd aborts the process when a daemon is stopped with one
	** suspended (seen as exit 134 under SIGTERM and load). So no more are
	** suspended from here on, and those that are get resumed first, once
	** their sync is done — within a deadline of their own, since a sync
	** may never end (a disk that hangs).
	*/
	STOP_HOOK(s, 0);
	atomic_store(&s->closing, 1);
	int64_t sync_give_up = now_ms() + (int64_t)s->timeout_s * 1000 + 1000;
	wait_zero(&s->suspended, sync_give_up, 1);
	STOP_HOOK(s, 1);
	/* The answers of those just resumed (and of writes finished on their
	** worker) go out before the daemons close their connections. */
	wait_zero(&s->in_flight, give_up, 5);
	/*
	** A worker that waits for a sync itself would hang the join of its
	** daemon: from here on a write is dropped unrun (http_durable.c), and
	** those already waiting get the rest of the deadline. The counts may
	** rise for an instant (a worker that finds shut or closing set takes
	** its count back), hence a short look even past the deadline.
	*/
	atomic_store(&s->shut, 1);
	STOP_HOOK(s, 2);
	int64_t last = now_ms() + 100;
	if (last < sync_give_up)
		last = sync_give_up;
	int suspended_done = wait_zero(&s->suspended, last, 1);
	if (!wait_zero(&s->finishing, last, 1) || !suspended_done) {
		a2m_log(A2M_LOG_ERROR, "http: %d writes still wait for a sync after %u s; the "
			"workers are left running (their answers were not given)",
			atomic_load(&s->suspended) + atomic_load(&s->finishing), s->timeout_s + 1);
		return -1;
	}
	for (unsigned i = 0; i < s->n_daemons; i++) {
		a2m_mhd()->stop_daemon(s->daemons[i]);
		if (s->listen_fds[i] != MHD_INVALID_SOCKET)
			close(s->listen_fds[i]);
	}
	s->n_daemons = 0;
	a2m_http_durable_stop(s);  /* after the workers: they answered what it resumed */
	return 0;
}

int a2m_http_stop(a2m_http *s)
{
	if (!s)
		return 0;
	atomic_store(&s->stopping, 1);
	if (stop_daemons(s) != 0)
		return -1;  /* s still serves the writes that wait */
	free_server(s);
	return 0;
}
