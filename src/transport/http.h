/*
** http.h — the HTTP binding (spec §8.3): one POST endpoint carrying one
** JSON-RPC message per request, served by libmicrohttpd.
**
** Everything the binding adds to the protocol is decided here, before a
** byte reaches the library, in this order (docs/HTTP.md has the table):
**
**   Origin not on the allow-list, nor    403  (any path, any method)
**     (with --ui) the server's own
**   path neither the endpoint nor the    404
**     well-known profile (nor, with --ui,
**     the inspector's files: http_ui.c)
**   a method the path does not take      405  with Allow
**   missing or unknown bearer token      401  with WWW-Authenticate: Bearer
**     (only with tokens)
**   A2M-Protocol-Version not ours        400  with a -32007 error object
**   Content-Type not application/json    415
**   body over the size limit             413
**
** What passes is handed to the library as a network caller (a2m_request_ctx,
** network = 1) with the authenticated principal, so `scopes` is declared
** only to an authenticated caller, owner is the principal, and push is
** never offered (spec §6, §4.13). A response is 200 with the JSON-RPC
** response; a notification is 202 with an empty body.
*/
#ifndef A2M_TRANSPORT_HTTP_H
#define A2M_TRANSPORT_HTTP_H

#include <stddef.h>

#include "a2m.h"
#include "transport/tokens.h"

/* Defaults: docs/HTTP.md, and `a2m serve --help`, say the same. */
#define A2M_HTTP_DEFAULT_ADDR        "127.0.0.1"
#define A2M_HTTP_DEFAULT_PORT        8778
#define A2M_HTTP_DEFAULT_PATH        "/"
#define A2M_HTTP_DEFAULT_TIMEOUT_S   30
#define A2M_HTTP_DEFAULT_MAX_CONN    256
#define A2M_HTTP_DEFAULT_MAX_BODY    ((size_t)16 << 20)
#define A2M_HTTP_WELL_KNOWN          "/.well-known/a2m-server.json"
#define A2M_HTTP_UI                  "/ui"  /* the inspector's files, with --ui */

/*
** How the binding runs a call whose answer waits for durability (group
** commit) without blocking its worker, given by the layer that owns the
** handle (src/server/deferred.h; `a2m serve` sets it): handle() takes the
** call and returns at once, with *pending non-NULL when the answer must
** wait (a write may not even have run yet); finish() finishes every call
** pending together — the writes run in one transaction, one sync for
** all — and makes their answers (replies[i] in and out; status[i]
** A2M_NOMEM when an answer owed could not be made); run() is its first
** half, the writes run and no wait, on the binding's first thread,
** finish() then only waits, on its second;
** drop() forgets a pending whose request will not be answered. Without
** it, each call waits on its worker.
*/
typedef struct a2m_http_defer {
	int  (*handle)(a2m *h, const char *message, size_t len, const char *principal,
		       char **reply, void **pending);
	void (*run)(a2m *h, void **pending, char **replies, int *status, size_t n);
	void (*finish)(a2m *h, void **pending, char **replies, int *status, size_t n);
	void (*drop)(void *pending);
} a2m_http_defer;

typedef struct a2m_http_config {
	const char *addr;          /* host or address to bind; NULL: 127.0.0.1 */
	unsigned port;             /* 0: any free port (see a2m_http_port) */
	const char *path;          /* the endpoint; NULL: "/" */
	unsigned threads;          /* worker threads; 0: a2m_http_default_threads() */
	unsigned timeout_s;        /* a connection idle this long is closed;
	                              0: A2M_HTTP_DEFAULT_TIMEOUT_S */
	unsigned max_connections;  /* open at once; 0: A2M_HTTP_DEFAULT_MAX_CONN */
	size_t max_body;           /* bytes; 0: A2M_HTTP_DEFAULT_MAX_BODY */
	const char *const *origins;/* the Origin values allowed (exact match) */
	size_t n_origins;
	const a2m_bearer_tokens *tokens;  /* NULL: no authentication; borrowed, must
	                              outlive the server */
	const char *tls_cert;      /* PEM files; both or neither */
	const char *tls_key;
	const a2m_http_defer *defer; /* NULL: writes wait on their worker (above) */
	int         ui;            /* serve the memory inspector under A2M_HTTP_UI
	                              (http_ui.c), and accept the server's own
	                              origin: the page's requests */
} a2m_http_config;

typedef struct a2m_http a2m_http;

/* Worker threads when none are asked for: one per usable core (the
** process's CPU affinity, a2m_cpus_usable), at most
** A2M_HTTP_MAX_DEFAULT_THREADS (past that the writers' turns dominate);
** --threads may ask for up to A2M_HTTP_MAX_THREADS. */
#define A2M_HTTP_MAX_DEFAULT_THREADS 16
#define A2M_HTTP_MAX_THREADS         64
unsigned a2m_http_default_threads(void);

/*
** Starts serving h as cfg says, on threads of its own, and returns at once.
** Returns 0 and sets *out. On failure (the address cannot be bound, a TLS
** file cannot be read, TLS is not compiled into libmicrohttpd) returns -1,
** sets *out to NULL and writes a one-line reason to err. h and cfg's
** strings must outlive the server.
*/
int a2m_http_start(a2m *h, const a2m_http_config *cfg, a2m_http **out, char *err,
		   size_t errlen);

#ifdef A2M_TEST_HOOKS  /* the tests' build of the library only (Makefile) */
/*
** For tests: fn (NULL: none) runs inside a2m_http_stop, on its thread,
** three times: with closing 0 once the requests in flight are done (a
** request sent then on a kept-alive connection is one the drain did not
** wait for), with closing 1 once the suspended connections were resumed
** (a write then is no longer suspended but finished on its worker), and
** with closing 2 just before the last look at the workers (a write then
** is dropped unrun, its connection closed unanswered).
*/
void a2m_http_stop_hook_for_tests(void (*fn)(a2m_http *s, int closing));

/* For tests: how many connections are suspended, waiting for a sync. */
int a2m_http_suspended_for_tests(a2m_http *s);

/* For tests: while on, the writes whose sync is over are not resumed (at
** most 30 s), so a test can count on one staying suspended. */
void a2m_http_hold_resumes_for_tests(int on);
#endif

/* The port actually bound (the one chosen when cfg->port was 0). */
unsigned a2m_http_port(const a2m_http *s);

/* The endpoint's URL as a client would reach it, e.g. "http://127.0.0.1:8778/". */
const char *a2m_http_url(const a2m_http *s);

/*
** Stops cleanly: stops accepting connections, lets the requests already
** being handled finish and their responses go out (waiting at most the
** connection timeout for a slow one), then closes every connection and
** frees s. Requests that arrive meanwhile on open keep-alive connections
** are still served, with "Connection: close". Returns 0; the caller
** closes h afterwards. NULL is a no-op (0).
**
** Returns -1 when writes still waited for their sync (cfg->defer) once
** the connection timeout and a second more had passed (a disk that hangs):
** their answers were not given, and s is left running, since its workers
** cannot be stopped while those wait (libmicrohttpd aborts the process),
** and those calls still use h. The caller then either calls
** a2m_http_stop(s) again, or exits the process without closing h (the
** clients see their connections close, unanswered; a2m serve does that).
*/
int a2m_http_stop(a2m_http *s);

#endif
