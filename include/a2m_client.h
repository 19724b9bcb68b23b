/*
** a2m_client.h — the client side of liba2m: talk to an A2M server that runs
** somewhere else.
**
** A client handle owns one connection to one server. a2m_client_spawn_stdio()
** starts the server as a child process and speaks the stdio binding of spec
** §8.2 over its stdin and stdout (its stderr is inherited, so its logs land
** where ours do); a2m_client_connect_http() speaks the HTTP binding of spec
** §8.3 to a server that is already running (see there for how the calls
** below map onto POSTs). Every other function is written against the
** handle, not the transport, so a caller works over either.
**
**   char *argv[] = {"a2m", "serve", "--memory", NULL};
**   a2m_client *c;
**   char *response;
**   if (a2m_client_spawn_stdio(argv, &c) != A2M_CLIENT_OK) ...
**   int rc = a2m_client_request(c, "memory/describe", "{\"protocol\":\"a2m/0.1\"}",
**                               &response);
**   if (rc == A2M_CLIENT_OK) { ... a2m_free(response); }
**   else fprintf(stderr, "%s\n", a2m_client_errmsg(c));
**   a2m_client_free(c);
**
** Messages are JSON text, as they cross the wire: parse them with the JSON
** library of your choice. A message handed in is borrowed; one handed out
** through an out-parameter is a compact single-line string the caller frees
** with a2m_free() (include/a2m.h).
**
** Waiting: every call that waits for the server gives up once the handle's
** timeout (a2m_client_set_timeout, 10 seconds by default) has passed since
** the call began, and returns A2M_CLIENT_ERR_TIMEOUT, so a hung server costs
** the caller a bounded delay rather than its thread. a2m_client_request
** waits twice, once to send and once to receive.
**
** Inbox: while waiting for one response a client may receive other messages —
** notifications (spec §8.2 requires a client to tolerate them interleaved),
** or responses nobody is waiting for. Those are queued, in arrival order, and
** handed out by a2m_client_next_notification() and a2m_client_recv().
**
** Broken pipes: writing to a server that has exited returns
** A2M_CLIENT_ERR_IO. The library never lets SIGPIPE kill the calling process,
** and never changes the process's signal dispositions to achieve that.
**
** Threads: a handle is not thread-safe; use one handle per thread, or lock.
*/
#ifndef A2M_CLIENT_H
#define A2M_CLIENT_H

#include <stddef.h>

#include "a2m.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
** Result codes of the client functions. They describe the connection, not
** the protocol: a JSON-RPC error response is a successfully received message
** and is returned with A2M_CLIENT_OK. Name one with a2m_client_strerror();
** a2m_client_errmsg() has the detail of the last failure on a handle.
*/
enum a2m_client_code {
	A2M_CLIENT_OK          =  0,
	A2M_CLIENT_ERR_NOMEM   = -1, /* an allocation failed */
	A2M_CLIENT_ERR_SPAWN   = -2, /* the server command could not be started */
	A2M_CLIENT_ERR_IO      = -3, /* a read or write on the connection failed,
	                                e.g. the server exited mid-write */
	A2M_CLIENT_ERR_TIMEOUT = -4, /* the server did not answer in time */
	A2M_CLIENT_ERR_CLOSED  = -5, /* the server closed its end (EOF) */
	A2M_CLIENT_ERR_TOOBIG  = -6, /* the server sent a line longer than
	                                A2M_CLIENT_MAX_LINE */
	A2M_CLIENT_ERR_MISUSE  = -7, /* bad arguments, or a call on a handle
	                                that was already closed */
	A2M_CLIENT_ERR_ENCODE  = -8  /* a value could not be serialised */
};

/* The default wait, in milliseconds, for every call that waits. */
#define A2M_CLIENT_DEFAULT_TIMEOUT_MS 10000

/*
** The longest line the client accepts from a server, in bytes. A longer one
** ends the connection's usefulness: the call returns A2M_CLIENT_ERR_TOOBIG
** and the handle should be freed.
*/
#define A2M_CLIENT_MAX_LINE ((size_t)256 << 20)

/* A connection to one A2M server. Opaque. */
typedef struct a2m_client a2m_client;

/*
** Starts argv[0] (looked up on PATH when it has no slash) with the arguments
** argv[1..], NULL-terminated, with its stdin and stdout connected to the new
** handle and its stderr inherited. Its stdout is a pipe; its stdin is a
** Unix stream socket (it reads, and sees EOF, as from a pipe), which lets
** the client write without ever raising SIGPIPE. The child starts with
** default signal dispositions and an empty signal mask, whatever the
** caller's are.
**
** Returns A2M_CLIENT_OK and sets *out. On failure returns
** A2M_CLIENT_ERR_SPAWN (the command was not found or could not be executed),
** A2M_CLIENT_ERR_NOMEM or A2M_CLIENT_ERR_MISUSE (argv or out NULL, or argv
** empty), and sets *out to NULL; a2m_client_spawn_errmsg() then says why.
** The caller frees the handle with a2m_client_free().
*/
A2M_API int a2m_client_spawn_stdio(char *const argv[], a2m_client **out);

/*
** The reason the last a2m_client_spawn_stdio() on this thread failed, as a
** static string, or "" if it did not. Valid until the next spawn call.
*/
A2M_API const char *a2m_client_spawn_errmsg(void);

/*
** Sets how long, in milliseconds, each waiting call may wait. A value of 0 or
** less restores A2M_CLIENT_DEFAULT_TIMEOUT_MS. Returns the previous value.
** Cannot fail.
*/
A2M_API int a2m_client_set_timeout(a2m_client *c, int timeout_ms);

/*
** Writes len bytes to the server exactly as given: no newline is added, no
** encoding is checked, and the bytes may be any part of a line. This is how
** a caller sends something no well-behaved client would (invalid UTF-8, a
** JSON-RPC batch, a line of many megabytes in pieces). A message is complete
** when its '\n' has been written.
**
** While the server is not reading, the call keeps reading what it writes, so
** a server that answers before the caller has finished sending cannot
** deadlock the two; what it reads is queued for the receiving calls.
**
** Returns A2M_CLIENT_OK, A2M_CLIENT_ERR_IO (the server stopped reading, e.g.
** exited), A2M_CLIENT_ERR_TIMEOUT (not all of it was taken within the
** timeout; how much was is not reported, so the connection is no longer
** usable), A2M_CLIENT_ERR_MISUSE (c NULL, or its input already closed).
*/
A2M_API int a2m_client_send_raw(a2m_client *c, const void *bytes, size_t len);

/*
** Writes len bytes as they are, then '\n': one raw line. The bytes should
** not contain a '\n' of their own, or the server sees two lines. Returns as
** a2m_client_send_raw().
*/
A2M_API int a2m_client_send_line(a2m_client *c, const void *bytes, size_t len);

/*
** Sends {"jsonrpc":"2.0","id":N,"method":method,"params":params} with a fresh
** integer id N (params: the JSON text of an object, or NULL for none) and
** waits for the response carrying that id. Notifications and other messages
** that arrive first are queued, not lost.
**
** Returns A2M_CLIENT_OK and sets *response to the whole response object's
** text (check for "result" or "error" yourself). On failure sets *response
** to NULL and returns A2M_CLIENT_ERR_ENCODE (params is not a JSON object),
** a send error (see a2m_client_send_raw) or a wait error (see
** a2m_client_wait_response).
*/
A2M_API int a2m_client_request(a2m_client *c, const char *method, const char *params,
			       char **response);

/*
** Waits for the response whose id equals id, given as JSON text (same JSON
** type and value: 1 does not match 1.0 or "1"). Messages received meanwhile
** are queued. A matching response already queued is returned at once.
**
** Returns A2M_CLIENT_OK and sets *response. Otherwise sets *response to NULL
** and returns A2M_CLIENT_ERR_TIMEOUT, A2M_CLIENT_ERR_CLOSED (the server
** closed stdout first), A2M_CLIENT_ERR_IO, A2M_CLIENT_ERR_TOOBIG,
** A2M_CLIENT_ERR_NOMEM, or A2M_CLIENT_ERR_MISUSE (id is not JSON).
*/
A2M_API int a2m_client_wait_response(a2m_client *c, const char *id, char **response);

/*
** Takes the oldest queued notification (a message with a "method" and no
** "id"), or waits for the next one to arrive; other messages that arrive
** meanwhile are queued. Returns A2M_CLIENT_OK and sets *out, or sets it to
** NULL and returns a wait error as a2m_client_wait_response().
*/
A2M_API int a2m_client_next_notification(a2m_client *c, char **out);

/*
** Takes the oldest queued message of any kind, or waits for the next one.
** This is the call for a caller that wants to see exactly what the server
** said next, in order. A message is any JSON value the server sent on one
** line, so it may be an array or a number from a broken server; it is handed
** out re-serialised compactly. Returns as a2m_client_next_notification().
*/
A2M_API int a2m_client_recv(a2m_client *c, char **out);

/* How many received messages are queued and not yet handed out. */
A2M_API size_t a2m_client_pending(const a2m_client *c);

/* Drops every queued message. Cannot fail. */
A2M_API void a2m_client_discard_pending(a2m_client *c);

/*
** How many lines the server has sent that were not JSON at all (a log line
** on stdout, a truncated message). They are skipped, never queued: a caller
** that wants to see them installs a trace.
*/
A2M_API size_t a2m_client_bad_lines(const a2m_client *c);

/* The direction of a traced chunk of bytes. */
enum a2m_client_dir {
	A2M_CLIENT_SENT     = 0, /* bytes as written; may be part of a line */
	A2M_CLIENT_RECEIVED = 1  /* one whole line, without its '\n' */
};

/*
** Called with every chunk the client writes and every line it receives,
** before the line is parsed. bytes is borrowed for the duration of the call
** and is not NUL-terminated. The function must not call back into c.
*/
typedef void (*a2m_client_trace_fn)(void *user, enum a2m_client_dir dir,
				    const char *bytes, size_t len);

/* Installs fn (NULL removes it). Cannot fail. */
A2M_API void a2m_client_set_trace(a2m_client *c, a2m_client_trace_fn fn, void *user);

/*
** Whether the server process can still be talked to: it has not exited and
** the connection has not failed. Cannot fail; a NULL c is not alive.
*/
A2M_API int a2m_client_alive(a2m_client *c);

/*
** Closes the server's stdin — the one portable shutdown signal of spec
** §8.2 — and waits for it to exit. Lines the server writes meanwhile are
** received and queued as usual.
**
** Returns A2M_CLIENT_OK and sets *exit_status (when not NULL) to its exit
** code, or to 128 + the signal number when a signal ended it; a server that
** had already exited reports the same at once. Returns
** A2M_CLIENT_ERR_TIMEOUT if it is still running after the timeout (it is
** left running: follow with a2m_client_kill). Sending after this returns
** A2M_CLIENT_ERR_MISUSE.
*/
A2M_API int a2m_client_close(a2m_client *c, int *exit_status);

/*
** Ends the server with SIGKILL and reaps it. Returns A2M_CLIENT_OK, also when
** it had already exited. Cannot otherwise fail.
*/
A2M_API int a2m_client_kill(a2m_client *c);

/*
** Releases the handle and everything queued in it. A server still running
** gets its stdin closed and a moment (at most 2 seconds) to exit on its own,
** then SIGKILL. NULL is a no-op.
*/
A2M_API void a2m_client_free(a2m_client *c);

/*
** The detail of the last failure on c, e.g. "timed out after 10000 ms
** waiting for the response to id 7". Borrowed; valid until the next call on
** c. "" when nothing has failed.
*/
A2M_API const char *a2m_client_errmsg(const a2m_client *c);

/* A static, human-readable name for a result code. */
A2M_API const char *a2m_client_strerror(int code);

/* ---- HTTP (spec §8.3) ---- */

/*
** How to reach a server over HTTP. Initialise with
** a2m_client_http_options_init(); every field left alone takes the default
** documented beside it.
*/
typedef struct a2m_client_http_options {
	const char *bearer_token;     /* sent as "Authorization: Bearer <token>";
	                                 NULL (default): no Authorization header */
	const char *const *headers;   /* extra header lines, "Name: value" each,
	                                 NULL-terminated; NULL (default): none */
	int timeout_ms;               /* as a2m_client_set_timeout(); 0 (default):
	                                 A2M_CLIENT_DEFAULT_TIMEOUT_MS */
	const char *protocol_version; /* the A2M-Protocol-Version header; NULL
	                                 (default): "a2m/0.1"; "": none sent */
	const char *ca_file;          /* PEM file of the CA (or the self-signed
	                                 certificate) to trust for https; NULL
	                                 (default): the system's store */
	int insecure;                 /* 1: do not verify the server's certificate
	                                 (testing only); default 0 */
} a2m_client_http_options;

/* Fills *o with the defaults. Cannot fail. */
A2M_API void a2m_client_http_options_init(a2m_client_http_options *o);

/*
** Makes a handle that speaks to the A2M endpoint at url ("http://host:port/"
** or "https://..."), one JSON-RPC message per POST, over one kept-alive
** connection that is reused for every request. opts may be NULL for the
** defaults; the handle copies what it needs from it. Nothing is sent until
** the first request, so a server that is not there is reported then, as
** A2M_CLIENT_ERR_IO.
**
** The functions above behave as they do over stdio, with these differences,
** all of them from HTTP having no channel of its own from server to client:
**
**   - Sending: each '\n'-terminated line written with a2m_client_send_raw()
**     (or _send_line) is POSTed as one body when its '\n' is written;
**     lines holding only blanks are not sent, as a stdio server would ignore
**     them. The call returns once the server has answered.
**   - Receiving: the body of each 200 answer is one received message, queued
**     in order; a 202 (a notification's answer) queues nothing. A wait with
**     nothing queued returns A2M_CLIENT_ERR_TIMEOUT at once, since nothing
**     more can arrive. There are never notifications.
**   - Any other HTTP status (401, 403, 413, ...) fails the sending call with
**     A2M_CLIENT_ERR_IO; a2m_client_errmsg() names the status and the start
**     of the body, and a2m_client_http_status() returns it.
**   - a2m_client_close() and a2m_client_kill() end nothing on the server:
**     they report status 0 at once.
**
** Returns A2M_CLIENT_OK and sets *out; A2M_CLIENT_ERR_MISUSE when url or out
** is NULL or url is not an http or https URL; A2M_CLIENT_ERR_NOMEM. On
** failure *out is NULL. The caller frees the handle with a2m_client_free().
*/
A2M_API int a2m_client_connect_http(const char *url, const a2m_client_http_options *opts,
			    a2m_client **out);

/*
** The HTTP status of the last answer received on c (200, 202, 401, ...), or
** 0 when c is not an HTTP handle or nothing was answered yet.
*/
A2M_API long a2m_client_http_status(const a2m_client *c);

#ifdef __cplusplus
}
#endif
#endif /* A2M_CLIENT_H */
