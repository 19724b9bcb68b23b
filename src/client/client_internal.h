/*
** client_internal.h — what sits behind an a2m_client handle.
**
** client.c does everything that is the same for every transport: ids,
** serialising, parsing, matching a response to its request, the inbox of
** messages nobody has asked for yet, tracing. A transport supplies only the
** byte-level operations in a2m_client_ops. stdio (client_stdio.c) is the
** first; HTTP will be the second, and maps onto the same five operations:
** write_bytes collects a body until its '\n' and POSTs it, read_line hands
** back response bodies in the order they arrived (a 202 produces none).
*/
#ifndef A2M_CLIENT_INTERNAL_H
#define A2M_CLIENT_INTERNAL_H

#include <stdint.h>

#include <jansson.h>

#include "client/client_json.h"

typedef struct a2m_client_ops {
	const char *name; /* "stdio", for messages */

	/*
	** Writes all len bytes before deadline (CLOCK_MONOTONIC milliseconds),
	** reading whatever the server writes meanwhile into the transport's
	** own buffer. Returns an a2m_client_code; on failure fills c->errmsg.
	*/
	int (*write_bytes)(a2m_client *c, const void *buf, size_t len, int64_t deadline);

	/*
	** Produces the next complete line, without its '\n', as a malloc'd
	** buffer (*line, *len) the caller frees, waiting until deadline. Lines
	** already buffered are returned even after the server has exited.
	** Returns an a2m_client_code; on failure fills c->errmsg.
	*/
	int (*read_line)(a2m_client *c, char **line, size_t *len, int64_t deadline);

	/* Ends the client's output (the server sees EOF) and waits for the
	** server to exit until deadline. See a2m_client_close(). */
	int (*close_input)(a2m_client *c, int *exit_status, int64_t deadline);

	/* Whether the peer can still be talked to. */
	int (*alive)(a2m_client *c);

	/* Ends the peer at once. */
	int (*kill)(a2m_client *c);

	/* Releases the transport state (c->impl); the peer is already ended. */
	void (*destroy)(a2m_client *c);
} a2m_client_ops;

struct a2m_client {
	const a2m_client_ops *ops;
	void *impl;

	int timeout_ms;
	int64_t next_id;
	size_t bad_lines;
	char errmsg[512];

	a2m_client_trace_fn trace;
	void *trace_user;

	/* Received and not yet handed out, oldest first (a ring). */
	json_t **inbox;
	size_t inbox_head, inbox_len, inbox_cap;
};

/* Milliseconds on the monotonic clock; the unit of every deadline. */
int64_t a2m_client_now_ms(void);

/* printf into c->errmsg. */
void a2m_client_set_error(a2m_client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Allocates a handle around a transport. NULL when memory ran out. */
a2m_client *a2m_client_new(const a2m_client_ops *ops, void *impl);

#endif
