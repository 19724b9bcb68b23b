/*
** client.c — the transport-independent half of an a2m_client (see
** a2m_client.h for the contract, client_internal.h for the split).
**
** Everything the server sends is received here one line at a time, traced,
** parsed and put in the inbox; the waiting calls then take from the inbox
** what they were asked for. Keeping every message until someone takes it is
** what lets a response arrive after a notification, or before the caller has
** finished sending (spec §8.2), without either being lost.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_internal.h"

int64_t a2m_client_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void a2m_client_set_error(a2m_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
	va_end(ap);
}

a2m_client *a2m_client_new(const a2m_client_ops *ops, void *impl)
{
	a2m_client *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->ops = ops;
	c->impl = impl;
	c->timeout_ms = A2M_CLIENT_DEFAULT_TIMEOUT_MS;
	c->next_id = 1;
	return c;
}

const char *a2m_client_strerror(int code)
{
	switch (code) {
	case A2M_CLIENT_OK:          return "ok";
	case A2M_CLIENT_ERR_NOMEM:   return "out of memory";
	case A2M_CLIENT_ERR_SPAWN:   return "cannot start the server";
	case A2M_CLIENT_ERR_IO:      return "connection failed";
	case A2M_CLIENT_ERR_TIMEOUT: return "timed out";
	case A2M_CLIENT_ERR_CLOSED:  return "the server closed the connection";
	case A2M_CLIENT_ERR_TOOBIG:  return "line too long";
	case A2M_CLIENT_ERR_MISUSE:  return "misuse";
	case A2M_CLIENT_ERR_ENCODE:  return "cannot serialise the message";
	default:                     return "unknown error";
	}
}

const char *a2m_client_errmsg(const a2m_client *c)
{
	return c ? c->errmsg : "no client";
}

int a2m_client_set_timeout(a2m_client *c, int timeout_ms)
{
	int old = c->timeout_ms;
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : A2M_CLIENT_DEFAULT_TIMEOUT_MS;
	return old;
}

void a2m_client_set_trace(a2m_client *c, a2m_client_trace_fn fn, void *user)
{
	c->trace = fn;
	c->trace_user = user;
}

size_t a2m_client_bad_lines(const a2m_client *c)
{
	return c->bad_lines;
}

/* ---- the inbox: a ring of received messages, oldest first ---- */

static json_t *inbox_at(const a2m_client *c, size_t i)
{
	return c->inbox[(c->inbox_head + i) % c->inbox_cap];
}

static int inbox_push(a2m_client *c, json_t *msg)
{
	if (c->inbox_len == c->inbox_cap) {
		size_t cap = c->inbox_cap ? c->inbox_cap * 2 : 16;
		json_t **grown = malloc(cap * sizeof *grown);
		if (!grown)
			return A2M_CLIENT_ERR_NOMEM;
		for (size_t i = 0; i < c->inbox_len; i++)
			grown[i] = inbox_at(c, i);
		free(c->inbox);
		c->inbox = grown;
		c->inbox_cap = cap;
		c->inbox_head = 0;
	}
	c->inbox[(c->inbox_head + c->inbox_len) % c->inbox_cap] = msg;
	c->inbox_len++;
	return A2M_CLIENT_OK;
}

/* Removes and returns the i-th queued message, keeping the others in order. */
static json_t *inbox_take(a2m_client *c, size_t i)
{
	json_t *msg = inbox_at(c, i);
	for (size_t j = i; j + 1 < c->inbox_len; j++)
		c->inbox[(c->inbox_head + j) % c->inbox_cap] = inbox_at(c, j + 1);
	c->inbox_len--;
	if (c->inbox_len == 0)
		c->inbox_head = 0;
	return msg;
}

size_t a2m_client_pending(const a2m_client *c)
{
	return c->inbox_len;
}

void a2m_client_discard_pending(a2m_client *c)
{
	while (c->inbox_len)
		json_decref(inbox_take(c, 0));
}

/* ---- what kind of message is this ---- */

/* A response: an object with an "id" and no "method". */
static int is_response_to(const json_t *msg, const json_t *id)
{
	if (!json_is_object(msg) || json_object_get(msg, "method"))
		return 0;
	json_t *got = json_object_get(msg, "id");
	return got && json_equal(got, id);
}

/* A notification: an object with a "method" and no "id". */
static int is_notification(const json_t *msg)
{
	return json_is_object(msg) && json_object_get(msg, "method") &&
	       !json_object_get(msg, "id");
}

/* ---- receiving ---- */

/*
** Reads one line from the transport and, when it is JSON, queues it. Lines
** that are not JSON are counted and dropped. Returns A2M_CLIENT_OK when a
** line was consumed (queued or dropped), or the transport's error.
*/
static int receive_one(a2m_client *c, int64_t deadline)
{
	char *line = NULL;
	size_t len = 0;
	int rc = c->ops->read_line(c, &line, &len, deadline);
	if (rc != A2M_CLIENT_OK)
		return rc;
	if (c->trace)
		c->trace(c->trace_user, A2M_CLIENT_RECEIVED, line, len);
	json_error_t jerr;
	/* JSON_ALLOW_NUL: a server may legitimately echo "\u0000" in content. */
	json_t *msg = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	free(line);
	if (!msg) {
		c->bad_lines++;
		return A2M_CLIENT_OK;
	}
	rc = inbox_push(c, msg);
	if (rc != A2M_CLIENT_OK) {
		json_decref(msg);
		a2m_client_set_error(c, "out of memory queueing a message");
	}
	return rc;
}

/* A JSON value, compact and cut to fit, for an error message. */
static void describe_id(const json_t *v, char *out, size_t size)
{
	char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	snprintf(out, size, "%s", text ? text : "?");
	if (text && strlen(text) >= size && size > 4)
		strcpy(out + size - 4, "...");
	free(text);
}

/*
** The one waiting loop: returns the first queued message accepted by want
** (NULL accepts anything), receiving more until the deadline.
*/
static int wait_for(a2m_client *c, int (*want)(const json_t *, const json_t *),
		    const json_t *arg, const char *what, json_t **out)
{
	*out = NULL;
	if (!c)
		return A2M_CLIENT_ERR_MISUSE;
	int64_t deadline = a2m_client_now_ms() + c->timeout_ms;
	size_t seen = 0;
	for (;;) {
		for (; seen < c->inbox_len; seen++) {
			if (!want || want(inbox_at(c, seen), arg)) {
				*out = inbox_take(c, seen);
				return A2M_CLIENT_OK;
			}
		}
		int rc = receive_one(c, deadline);
		if (rc == A2M_CLIENT_ERR_TIMEOUT) {
			/* What did arrive is often the clue: a response whose id
			** the server changed, say. */
			char first[128] = "";
			if (c->inbox_len)
				describe_id(inbox_at(c, 0), first, sizeof first);
			a2m_client_set_error(c, "timed out after %d ms waiting for %s "
					     "(%zu other message(s) queued%s%s)",
					     c->timeout_ms, what, c->inbox_len,
					     c->inbox_len ? ", the first: " : "", first);
			return rc;
		}
		if (rc != A2M_CLIENT_OK)
			return rc;
	}
}

static int want_notification(const json_t *msg, const json_t *unused)
{
	(void)unused;
	return is_notification(msg);
}

int a2m_client_wait_response_json(a2m_client *c, const json_t *id, json_t **response)
{
	char what[96], idtext[64];
	if (!id) {
		*response = NULL;
		return A2M_CLIENT_ERR_MISUSE;
	}
	describe_id(id, idtext, sizeof idtext);
	snprintf(what, sizeof what, "the response to id %s", idtext);
	return wait_for(c, is_response_to, id, what, response);
}

int a2m_client_next_notification_json(a2m_client *c, json_t **out)
{
	return wait_for(c, want_notification, NULL, "a notification", out);
}

int a2m_client_recv_json(a2m_client *c, json_t **out)
{
	return wait_for(c, NULL, NULL, "a message", out);
}

/* ---- sending ---- */

int a2m_client_send_raw(a2m_client *c, const void *bytes, size_t len)
{
	if (!c || (!bytes && len))
		return A2M_CLIENT_ERR_MISUSE;
	if (c->trace)
		c->trace(c->trace_user, A2M_CLIENT_SENT, bytes, len);
	if (len == 0)
		return A2M_CLIENT_OK;
	return c->ops->write_bytes(c, bytes, len, a2m_client_now_ms() + c->timeout_ms);
}

int a2m_client_send_line(a2m_client *c, const void *bytes, size_t len)
{
	int rc = a2m_client_send_raw(c, bytes, len);
	return rc == A2M_CLIENT_OK ? a2m_client_send_raw(c, "\n", 1) : rc;
}

int a2m_client_send_json(a2m_client *c, const json_t *msg)
{
	if (!c || !msg)
		return A2M_CLIENT_ERR_MISUSE;
	/* Compact output never contains a raw newline: jansson escapes the
	** ones inside strings, which is what spec §8.2 framing needs. */
	char *text = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text) {
		a2m_client_set_error(c, "cannot serialise the message");
		return A2M_CLIENT_ERR_ENCODE;
	}
	size_t len = strlen(text);
	char *line = realloc(text, len + 2);
	if (!line) {
		free(text);
		a2m_client_set_error(c, "out of memory serialising a message");
		return A2M_CLIENT_ERR_NOMEM;
	}
	line[len] = '\n';
	line[len + 1] = '\0';
	int rc = a2m_client_send_raw(c, line, len + 1);
	free(line);
	return rc;
}

int a2m_client_request_json(a2m_client *c, const char *method, const json_t *params,
			    json_t **response)
{
	*response = NULL;
	if (!c || !method)
		return A2M_CLIENT_ERR_MISUSE;
	json_t *id = json_integer(c->next_id++);
	json_t *req = json_object();
	int rc = A2M_CLIENT_ERR_NOMEM;
	if (!id || !req || json_object_set_new(req, "jsonrpc", json_string("2.0")) ||
	    json_object_set(req, "id", id) ||
	    json_object_set_new(req, "method", json_string(method)) ||
	    (params && json_object_set(req, "params", (json_t *)params))) {
		a2m_client_set_error(c, "out of memory building a request");
		goto done;
	}
	rc = a2m_client_send_json(c, req);
	if (rc == A2M_CLIENT_OK)
		rc = a2m_client_wait_response_json(c, id, response);
done:
	json_decref(req);
	json_decref(id);
	return rc;
}

/* ---- the same calls in JSON text (a2m_client.h) ---- */

/* *out as compact text (free with a2m_free), from v, which it releases. */
static int to_text(a2m_client *c, int rc, json_t *v, char **out)
{
	*out = NULL;
	if (rc != A2M_CLIENT_OK)
		return rc;
	*out = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(v);
	if (!*out) {
		a2m_client_set_error(c, "out of memory serialising a message");
		return A2M_CLIENT_ERR_NOMEM;
	}
	return A2M_CLIENT_OK;
}

int a2m_client_request(a2m_client *c, const char *method, const char *params,
		       char **response)
{
	json_t *p = NULL, *v = NULL;
	*response = NULL;
	if (!c || !method)
		return A2M_CLIENT_ERR_MISUSE;
	/* Parsed before the test: json_is_object is a macro that names its
	** argument twice, and a call inside it ran twice and leaked one. */
	if (params)
		p = json_loads(params, JSON_ALLOW_NUL, NULL);
	if (params && !json_is_object(p)) {
		json_decref(p);
		a2m_client_set_error(c, "params must be the JSON text of an object");
		return A2M_CLIENT_ERR_ENCODE;
	}
	int rc = a2m_client_request_json(c, method, p, &v);
	json_decref(p);
	return to_text(c, rc, v, response);
}

int a2m_client_wait_response(a2m_client *c, const char *id, char **response)
{
	json_t *v = NULL, *idv = id ? json_loads(id, JSON_DECODE_ANY, NULL) : NULL;
	*response = NULL;
	if (!c || !idv) {
		json_decref(idv);
		return A2M_CLIENT_ERR_MISUSE;
	}
	int rc = a2m_client_wait_response_json(c, idv, &v);
	json_decref(idv);
	return to_text(c, rc, v, response);
}

int a2m_client_next_notification(a2m_client *c, char **out)
{
	json_t *v = NULL;
	int rc = a2m_client_next_notification_json(c, &v);
	return to_text(c, rc, v, out);
}

int a2m_client_recv(a2m_client *c, char **out)
{
	json_t *v = NULL;
	int rc = a2m_client_recv_json(c, &v);
	return to_text(c, rc, v, out);
}

/* ---- the process at the other end ---- */

int a2m_client_alive(a2m_client *c)
{
	return c && c->ops->alive(c);
}

int a2m_client_close(a2m_client *c, int *exit_status)
{
	if (!c)
		return A2M_CLIENT_ERR_MISUSE;
	int status = 0;
	int rc = c->ops->close_input(c, &status, a2m_client_now_ms() + c->timeout_ms);
	if (rc == A2M_CLIENT_OK && exit_status)
		*exit_status = status;
	return rc;
}

int a2m_client_kill(a2m_client *c)
{
	if (!c)
		return A2M_CLIENT_ERR_MISUSE;
	return c->ops->kill(c);
}

/* How long a2m_client_free() lets a server exit on its own before SIGKILL. */
#define FREE_GRACE_MS 2000

void a2m_client_free(a2m_client *c)
{
	if (!c)
		return;
	int status;
	if (c->ops->close_input(c, &status, a2m_client_now_ms() + FREE_GRACE_MS) !=
	    A2M_CLIENT_OK)
		c->ops->kill(c);
	c->ops->destroy(c);
	a2m_client_discard_pending(c);
	free(c->inbox);
	free(c);
}
