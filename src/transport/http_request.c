/*
** http_request.c — one HTTP request of the binding, from its headers to its
** completion: libmicrohttpd's access handler and completion callback, the
** admitted body read into memory up to the size limit and no further, the
** call into the library (a2m_handle_network(), with the caller's
** principal; or the defer seam when writes share their syncs), the
** well-known profile and the responses every file of the binding queues.
** The gate (http_gate.c) has refused what it would from the headers
** before any body is read; start and stop are http.c's.
*/
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/rpc.h"
#include "transport/http_internal.h"
#include "util/log.h"

/* The first allocation for a body whose length was not announced. */
#define BODY_FIRST_CAP 4096

/* How much of an oversized chunked body is read and thrown away so the 413
** can be delivered; past this the connection is simply closed. */
#define DISCARD_LIMIT ((size_t)1 << 20)

/* ---- responses ---- */

/*
** Queues resp (which it releases) with the headers every response carries.
** Returns what MHD_queue_response does; MHD_NO closes the connection.
*/
enum MHD_Result a2m_http_send_response(a2m_http *s, struct MHD_Connection *c, request *r,
				       unsigned status, struct MHD_Response *resp)
{
	if (!resp)
		return MHD_NO;
	int ok = a2m_mhd()->add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (r && r->origin) {
		ok = ok && a2m_mhd()->add_response_header(resp, "Access-Control-Allow-Origin", r->origin);
	}
	if (s->n_origins || s->ui)
		ok = ok && a2m_mhd()->add_response_header(resp, "Vary", "Origin");
	/* Draining for shutdown: answer, then let the connection go, so a busy
	** keep-alive client cannot hold the server open. */
	if (atomic_load(&s->stopping))
		ok = ok && a2m_mhd()->add_response_header(resp, "Connection", "close");
	enum MHD_Result rc = ok ? a2m_mhd()->queue_response(c, status, resp) : MHD_NO;
	a2m_mhd()->destroy_response(resp);
	return rc;
}

/* A short plain-text answer for a transport-level refusal. */
enum MHD_Result a2m_http_send_text(a2m_http *s, struct MHD_Connection *c, request *r,
				   unsigned status, const char *text, const char *hname,
				   const char *hvalue)
{
	struct MHD_Response *resp =
		a2m_mhd()->create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	if (!a2m_mhd()->add_response_header(resp, "Content-Type", "text/plain; charset=utf-8") ||
	    (hname && !a2m_mhd()->add_response_header(resp, hname, hvalue))) {
		a2m_mhd()->destroy_response(resp);
		return MHD_NO;
	}
	return a2m_http_send_response(s, c, r, status, resp);
}

/* A JSON body the library allocated; the response frees it. */
enum MHD_Result a2m_http_send_json(a2m_http *s, struct MHD_Connection *c, request *r,
				   unsigned status, char *json, size_t len)
{
	struct MHD_Response *resp =
		a2m_mhd()->create_response_from_buffer_with_free_callback(len, json, a2m_free);
	if (!resp) {
		a2m_free(json);
		return MHD_NO;
	}
	if (!a2m_mhd()->add_response_header(resp, "Content-Type", "application/json")) {
		a2m_mhd()->destroy_response(resp);
		return MHD_NO;
	}
	return a2m_http_send_response(s, c, r, status, resp);
}

/* Frees a response body that starts inside the buffer the library made. */
static void free_response(void *cls)
{
	a2m_free(cls);
}

/*
** Spec §8.3.3: the describe result, live, exactly as this caller would get
** it from memory/describe over this binding (push false; scopes only when
** authenticated).
*/
static enum MHD_Result send_well_known(a2m_http *s, struct MHD_Connection *c, request *r)
{
	static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"memory/describe\","
				  "\"params\":{\"protocol\":\"" A2M_PROTOCOL "\"}}";
	/* What the library writes before a result for this id (rpc.c). */
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{";
	char *out = NULL;
	a2m_handle_network(s->h, req, sizeof req - 1, r->principal, &out);
	size_t len = out ? strlen(out) : 0;
	/* The result is the response less its head and closing brace: no
	** second parse, and the same bytes memory/describe sends. */
	if (!out || len < sizeof head || strncmp(out, head, sizeof head - 1) != 0) {
		a2m_free(out);
		return a2m_http_send_text(s, c, r, MHD_HTTP_INTERNAL_SERVER_ERROR,
					  "500 Internal Server Error: describe failed\n",
					  NULL, NULL);
	}
	size_t skip = sizeof head - 2; /* keeps the result's opening brace */
	struct MHD_Response *mr = a2m_mhd()->create_response_from_buffer_with_free_callback_cls(
		len - skip - 1, out + skip, free_response, out);
	if (!mr) {
		a2m_free(out);
		return MHD_NO;
	}
	/* Advisory and possibly stale by the spec; we at least do not let a
	** cache make it staler. */
	if (!a2m_mhd()->add_response_header(mr, "Content-Type", "application/json") ||
	    !a2m_mhd()->add_response_header(mr, "Cache-Control", "no-store")) {
		a2m_mhd()->destroy_response(mr);
		return MHD_NO;
	}
	return a2m_http_send_response(s, c, r, MHD_HTTP_OK, mr);
}

/* Hands the complete body to the library; the answer waits in r. */
static void execute(a2m_http *s, request *r, const char *body, size_t len)
{
	int rc = s->defer ? s->defer->handle(s->h, body, len, r->principal, &r->reply,
					     &r->pending)
			  : a2m_handle_network(s->h, body, len, r->principal, &r->reply);
	/* No answer is a notification (202, spec §8.3) — unless the library
	** ran out of memory making one, and the request still gets the one
	** response JSON-RPC owes it rather than a silent 202. */
	r->reply_owed = rc != A2M_OK;
	r->answered = 1;
}

/* The request is complete: its answer, executed now unless it was already. */
static enum MHD_Result answer(a2m_http *s, struct MHD_Connection *c, request *r)
{
	if (!r->answered)
		execute(s, r, r->body ? r->body : "", r->len);
	/* Not before the write is durable (group commit): the worker goes on
	** with its other connections meanwhile. */
	int waits = r->pending ? a2m_http_durable_wait(s, c, r) : 0;
	if (waits)
		return waits > 0 ? MHD_YES : MHD_NO;  /* suspended: answered when resumed */
	char *out = r->reply;
	r->reply = NULL;
	if (out)
		return a2m_http_send_json(s, c, r, MHD_HTTP_OK, out, strlen(out));
	if (r->reply_owed) {
		struct MHD_Response *resp = a2m_mhd()->create_response_from_buffer(
			strlen(a2m_rpc_oom_reply), (void *)a2m_rpc_oom_reply, MHD_RESPMEM_PERSISTENT);
		if (!resp || !a2m_mhd()->add_response_header(resp, "Content-Type", "application/json")) {
			if (resp)
				a2m_mhd()->destroy_response(resp);
			return MHD_NO;
		}
		return a2m_http_send_response(s, c, r, MHD_HTTP_OK, resp);
	}
	struct MHD_Response *resp = a2m_mhd()->create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	return a2m_http_send_response(s, c, r, MHD_HTTP_ACCEPTED, resp);
}

/* ---- the access handler ---- */

/* Takes one piece of an admitted body, holding at most max_body bytes. */
static enum MHD_Result take_body(a2m_http *s, request *r, const char *data, size_t n)
{
	if (r->too_big) {
		r->discarded += n;
		/* A body without a length that goes on and on: reading it all
		** to be able to say 413 would let it occupy a worker forever. */
		return r->discarded > DISCARD_LIMIT ? MHD_NO : MHD_YES;
	}
	if (n > s->max_body - r->len) {
		r->too_big = 1;
		r->discarded = n;
		free(r->body);
		r->body = NULL;
		r->len = r->cap = 0;
		return MHD_YES;
	}
	if (r->len + n > r->cap || !r->body) {
		size_t cap = r->cap ? r->cap
				    : (BODY_FIRST_CAP < s->max_body ? BODY_FIRST_CAP : s->max_body);
		while (cap < r->len + n)
			cap = cap > s->max_body / 2 ? s->max_body : cap * 2;
		/* +1 keeps room for a NUL, which the library does not need but a
		** debugger printing the body does. */
		char *grown = realloc(r->body, cap + 1);
		if (!grown)
			return MHD_NO;
		r->body = grown;
		r->cap = cap;
	}
	memcpy(r->body + r->len, data, n);
	r->len += n;
	r->body[r->len] = '\0';
	return MHD_YES;
}

enum MHD_Result a2m_http_on_request(void *cls, struct MHD_Connection *c, const char *url,
				    const char *method, const char *version,
				    const char *upload_data, size_t *upload_data_size,
				    void **con_cls)
{
	a2m_http *s = cls;
	request *r = *con_cls;
	(void)version;
	if (!r) {
		r = calloc(1, sizeof *r);
		if (!r)
			return MHD_NO;
		*con_cls = r;
		atomic_fetch_add(&s->in_flight, 1);
		int admitted;
		enum MHD_Result rc = a2m_http_on_headers(s, c, r, url, method, &admitted);
		if (!admitted)
			a2m_log(A2M_LOG_DEBUG, "http: %s %s refused at the headers", method, url);
		return rc;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		/* The whole announced body in one piece (the usual case): no
		** copy, the library reads it where it is. */
		if (!r->answered && !r->too_big && !r->body && n == r->cap) {
			execute(s, r, upload_data, n);
			return MHD_YES;
		}
		if (r->answered)
			return MHD_NO; /* more than Content-Length said: cannot be */
		return take_body(s, r, upload_data, n);
	}
	if (r->too_big)
		return a2m_http_send_text(s, c, r, MHD_HTTP_CONTENT_TOO_LARGE,
					  "413 Content Too Large\n", NULL, NULL);
	if (r->profile)
		return send_well_known(s, c, r);
	return answer(s, c, r);
}

void a2m_http_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			   enum MHD_RequestTerminationCode toe)
{
	a2m_http *s = cls;
	request *r = *con_cls;
	(void)c;
	(void)toe;
	if (!r)
		return;
	free(r->body);
	a2m_free(r->reply);
	if (r->pending)  /* only if never answered */
		s->defer->drop(r->pending);
	free(r);
	*con_cls = NULL;
	atomic_fetch_sub(&s->in_flight, 1);
}
