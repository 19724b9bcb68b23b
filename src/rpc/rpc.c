/*
** rpc.c — the JSON-RPC 2.0 envelope (see rpc.h).
**
** The order of checks follows the JSON-RPC specification: bytes that are not
** JSON are -32700 with id null; JSON that is not one request object is -32600
** (with the id when a valid one could be read, else null); then the method
** (-32601 only for names that are not A2M methods at all), then params.
** A message without an id is a notification: it is executed and never
** answered, unless it is not even a valid request, which is reported.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/rpc.h"
#include "util/json_read.h"
#include "util/json_write.h"
#include "util/text.h"

#define HEAD "{\"jsonrpc\":\"2.0\",\"id\":"

/* The start of an envelope, {"jsonrpc":"2.0","id":ID,"KEY": — every
** response begins so, key order included. */
static char *envelope_head(const json_t *id, const char *key, size_t *len)
{
	char tail[16];
	int n = snprintf(tail, sizeof tail, ",\"%s\":", key);
	return a2m_json_write_between(HEAD, sizeof HEAD - 1, id ? id : json_null(), tail,
				      (size_t)n, len);
}

/* Serialises {"jsonrpc":"2.0","id":id, key: value}; takes value. */
static char *envelope(const json_t *id, const char *key, json_t *value, size_t *out_len)
{
	size_t head_len;
	char *head = value ? envelope_head(id, key, &head_len) : NULL;
	char *text = head ? a2m_json_write_between(head, head_len, value, "}", 1, out_len) : NULL;
	free(head);
	json_decref(value);
	return text;
}

/* {"jsonrpc":"2.0","id":ID,"result": around the id's text, into out. */
static size_t result_head(const char *id, size_t id_len, char *out, size_t cap)
{
	static const char tail[] = ",\"result\":";
	size_t n = sizeof HEAD - 1 + id_len + sizeof tail - 1;
	if (n >= cap)
		return 0;
	memcpy(out, HEAD, sizeof HEAD - 1);
	memcpy(out + sizeof HEAD - 1, id, id_len);
	memcpy(out + sizeof HEAD - 1 + id_len, tail, sizeof tail);
	return n;
}

size_t a2m_rpc_result_head(const json_t *id, char *out, size_t cap)
{
	size_t id_len;
	char *text = a2m_json_write(id ? id : json_null(), &id_len);
	size_t n = text ? result_head(text, id_len, out, cap) : 0;
	free(text);
	return n;
}

/* ---- a describe without a parser (rpc.h) ---- */

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/*
** A string of printable ASCII without escapes at p: sets *s and *n to its
** characters and returns the position after it, or NULL for anything else
** (which JSON may well allow: the caller then parses properly).
*/
static const char *plain_string(const char *p, const char *end, const char **s, size_t *n)
{
	if (p >= end || *p != '"')
		return NULL;
	const char *q = ++p;
	while (q < end && *q != '"') {
		if (*q < 0x20 || *q > 0x7e || *q == '\\')
			return NULL;
		q++;
	}
	if (q >= end)
		return NULL;
	*s = p;
	*n = (size_t)(q - p);
	return q + 1;
}

static int equals(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* A plain string equal to lit at p; the position after it, or NULL. */
static const char *literal(const char *p, const char *end, const char *lit)
{
	const char *s;
	size_t n;
	p = plain_string(p, end, &s, &n);
	return p && equals(s, n, lit) ? p : NULL;
}

/* An id at p: a plain string, or an integer JSON and int64 both allow. */
static const char *quick_id(const char *p, const char *end)
{
	const char *s;
	size_t n;
	if (p < end && *p == '"')
		return plain_string(p, end, &s, &n);
	const char *neg = p < end && *p == '-' ? p++ : NULL;
	const char *d = p;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	n = (size_t)(p - d);
	/* No leading zero (not JSON), no "-0" (read as 0, written as 0). */
	if (n == 0 || n > 18 || (*d == '0' && (n > 1 || neg)))
		return NULL;
	return p;
}

/* params at p: {} or {"protocol": plain string}. */
static const char *quick_params(const char *p, const char *end, a2m_rpc_quick *q)
{
	if (p >= end || *p++ != '{')
		return NULL;
	p = skip_ws(p, end);
	if (p < end && *p == '}')
		return p + 1;
	if (!(p = literal(p, end, "protocol")))
		return NULL;
	p = skip_ws(p, end);
	if (p >= end || *p++ != ':')
		return NULL;
	p = skip_ws(p, end);
	if (!(p = plain_string(p, end, &q->protocol, &q->protocol_len)))
		return NULL;
	p = skip_ws(p, end);
	return p < end && *p == '}' ? p + 1 : NULL;
}

int a2m_rpc_quick_describe(const char *msg, size_t len, a2m_rpc_quick *q)
{
	const char *p = msg, *end = msg + len;
	int jsonrpc = 0, method = 0, params = 0;
	memset(q, 0, sizeof *q);
	p = skip_ws(p, end);
	if (p >= end || *p++ != '{')
		return 0;
	for (;;) {
		const char *k;
		size_t kn;
		p = skip_ws(p, end);
		if (!(p = plain_string(p, end, &k, &kn)))
			return 0;
		p = skip_ws(p, end);
		if (p >= end || *p++ != ':')
			return 0;
		p = skip_ws(p, end);
		/* Each member once: a repeated one is the parser's business. */
		if (equals(k, kn, "jsonrpc") && !jsonrpc++)
			p = literal(p, end, "2.0");
		else if (equals(k, kn, "method") && !method++)
			p = literal(p, end, "memory/describe");
		else if (equals(k, kn, "id") && !q->id) {
			q->id = p;
			if ((p = quick_id(p, end)))
				q->id_len = (size_t)(p - q->id);
		} else if (equals(k, kn, "params") && !params++)
			p = quick_params(p, end, q);
		else
			return 0;
		if (!p || (p = skip_ws(p, end)) >= end)
			return 0;
		if (*p == '}')
			break;
		if (*p++ != ',')
			return 0;
	}
	return skip_ws(p + 1, end) == end && jsonrpc && method && q->id;
}

size_t a2m_rpc_quick_head(const a2m_rpc_quick *q, char *out, size_t cap)
{
	return result_head(q->id, q->id_len, out, cap);
}

char *a2m_rpc_result_text(const json_t *id, const char *result, size_t result_len,
			  size_t *out_len)
{
	char small[256];
	size_t head_len = a2m_rpc_result_head(id, small, sizeof small);
	char *head = head_len ? small : envelope_head(id, "result", &head_len);
	char *text = head ? malloc(head_len + result_len + 2) : NULL;
	if (text) {
		memcpy(text, head, head_len);
		memcpy(text + head_len, result, result_len);
		memcpy(text + head_len + result_len, "}", 2);
		if (out_len)
			*out_len = head_len + result_len + 1;
	}
	if (head != small)
		free(head);
	return text;
}

/*
** message as a JSON string, each byte that starts no well-formed UTF-8
** sequence replaced by U+FFFD. A message quotes what it was given, and
** a2m_error_set cuts it at 256 bytes, maybe inside a character; a record
** id read from a damaged file may be anything. jansson refuses a string
** that is not UTF-8, and the reply would be lost with it.
*/
static json_t *message_string(const char *message)
{
	size_t n = strlen(message);
	if (a2m_utf8_valid(message, n))
		return json_stringn(message, n);
	a2m_buf b = {0};
	const unsigned char *p = (const unsigned char *)message, *end = p + n;
	while (p < end) {
		size_t k = a2m_utf8_sequence(p, end);
		if (k) {
			a2m_buf_put(&b, p, k);
			p += k;
		} else {
			a2m_buf_put(&b, "\xef\xbf\xbd", 3);
			p++;
		}
	}
	size_t len;
	char *text = a2m_buf_take(&b, &len);
	json_t *v = text ? json_stringn(text, len) : NULL;
	free(text);
	return v;
}

char *a2m_rpc_error_text(const json_t *id, int code, const char *message, json_t *data,
			 size_t *out_len)
{
	json_t *e = json_pack("{si so}", "code", code, "message", message_string(message));
	if (e && data)
		json_object_set_new(e, "data", data);
	else
		json_decref(data);
	return envelope(id, "error", e, out_len);
}

char *a2m_rpc_notification_text(const char *method, json_t *params, size_t *out_len)
{
	json_t *msg = json_pack("{ss ss so}", "jsonrpc", "2.0", "method", method, "params", params);
	if (!msg)
		return NULL;
	char *text = a2m_json_write(msg, out_len);
	json_decref(msg);
	return text;
}

/* An id JSON-RPC allows: string, number or null. */
static int valid_id(const json_t *id)
{
	return json_is_string(id) || json_is_number(id) || json_is_null(id);
}

/* Checks the request envelope; returns 0 or a code with err set. */
static int check_envelope(const json_t *req, a2m_error *err)
{
	json_t *v = json_object_get(req, "jsonrpc");
	if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
		return a2m_error_set(err, A2M_INVALID_REQUEST, "jsonrpc must be \"2.0\"");
	json_t *id = json_object_get(req, "id");
	if (id && !valid_id(id))
		return a2m_error_set(err, A2M_INVALID_REQUEST, "id must be a string, number or null");
	if (!json_is_string(json_object_get(req, "method")))
		return a2m_error_set(err, A2M_INVALID_REQUEST, "method must be a string");
	json_t *params = json_object_get(req, "params");
	if (params && !json_is_object(params) && !json_is_array(params))
		return a2m_error_set(err, A2M_INVALID_REQUEST, "params must be an object");
	return 0;
}

const char a2m_rpc_oom_reply[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
				  "{\"code\":-32603,\"message\":\"Internal error: out of memory\"}}";

int a2m_rpc_parse(const char *msg, size_t len, a2m_rpc_request *req, char **reply,
		  size_t *reply_len)
{
	json_error_t jerr;
	memset(req, 0, sizeof *req);
	*reply = NULL;
	/* JSON_ALLOW_NUL: "\u0000" is valid JSON; fields that cannot hold it
	** refuse it with INVALID_PARAMS, metadata keeps it. */
	int oom = 0;
	json_t *msgv = a2m_json_read_ex(msg, len, 1, &oom);
	memset(&jerr, 0, sizeof jerr);  /* jansson leaves it unset on some failures */
	if (!msgv)  /* invalid, or unusual: jansson reads it or says why not */
		msgv = json_loadb(msg, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	/*
	** jansson reports some failed allocations as syntax errors: a text the
	** tree's reader gave up on for memory is not called invalid, nor is
	** one jansson stopped at before it could say why (an empty text: its
	** reader's first buffer not allocated).
	*/
	if (!msgv && (oom || json_error_code(&jerr) == json_error_out_of_memory ||
		      jerr.text[0] == '\0'))
		return A2M_NOMEM;
	if (!msgv) {
		json_t *data = json_pack("{ss si}", "detail", jerr.text, "position", jerr.position);
		*reply = a2m_rpc_error_text(NULL, A2M_PARSE_ERROR, "Parse error: not valid JSON",
					    data, reply_len);
		return *reply ? 0 : A2M_NOMEM;
	}
	return a2m_rpc_accept(msgv, req, reply, reply_len);
}

int a2m_rpc_accept(json_t *msgv, a2m_rpc_request *req, char **reply, size_t *reply_len)
{
	a2m_error err = {0};
	memset(req, 0, sizeof *req);
	*reply = NULL;
	if (!json_is_object(msgv)) {
		const char *why = json_is_array(msgv)
			? "Invalid request: batches (arrays) are not accepted; send one request object"
			: "Invalid request: a message must be one JSON object";
		json_decref(msgv);
		*reply = a2m_rpc_error_text(NULL, A2M_INVALID_REQUEST, why, NULL, reply_len);
		return *reply ? 0 : A2M_NOMEM;
	}
	const json_t *id = json_object_get(msgv, "id");
	int owed = 0;  /* a response is owed: without one, memory ran out */
	int rc = check_envelope(msgv, &err);
	if (rc) {
		/* Even without an id, an invalid request is reported (id null). */
		*reply = a2m_rpc_error_text(id && valid_id(id) ? id : NULL, rc, err.message, NULL,
					    reply_len);
		owed = 1;
		goto refused;
	}
	const char *method = json_string_value(json_object_get(msgv, "method"));
	const a2m_method *m = a2m_method_find(method);
	json_t *params = json_object_get(msgv, "params");
	if (!m)
		rc = a2m_error_set(&err, A2M_METHOD_NOT_FOUND,
				   "Method not found: %s is not an A2M method", method);
	else if (json_is_array(params))
		rc = a2m_error_set(&err, A2M_INVALID_PARAMS,
				   "params must be passed by name, as an object");
	if (rc) {
		/* A notification is never answered, not even with an error. */
		if (id)
			*reply = a2m_rpc_error_text(id, rc, err.message, NULL, reply_len);
		owed = id != NULL;
		goto refused;
	}
	req->msg = msgv;
	req->id = id;
	req->method = m;
	req->params = params;
	if (!params) {
		if (!(req->params = json_object())) {
			a2m_rpc_request_free(req);
			return A2M_NOMEM;
		}
		req->own_params = 1;
	}
	return 1;
refused:
	a2m_error_clear(&err);
	json_decref(msgv);
	return owed && !*reply ? A2M_NOMEM : 0;
}

void a2m_rpc_request_free(a2m_rpc_request *req)
{
	if (req->own_params)
		json_decref(req->params);
	json_decref(req->msg);
	memset(req, 0, sizeof *req);
}

void a2m_rpc_call(a2m_call *call, const a2m_rpc_request *req, a2m_rpc_outcome *out)
{
	memset(out, 0, sizeof *out);
	const a2m_method *m = req->method;
	/* The gate's refusals come from a2m_protocol_call, whichever handler. */
	if (m->text && (call->caps & m->cap) && !(call->srv->read_only && m->writes)) {
		if (!(out->rc = a2m_param_limits(call, req->params, &out->err)))
			out->rc = m->text(call, req->params, &out->text, &out->text_len, &out->err);
	} else
		out->rc = a2m_protocol_call(call, m, req->params, &out->result, &out->err);
}

int a2m_rpc_reply(const a2m_rpc_request *req, a2m_rpc_outcome *o, char **reply,
		  size_t *out_len)
{
	char *out = NULL;
	if (!req->id) {
		/* A notification: executed, never answered. */
	} else if (o->rc) {
		json_t *data = o->err.data;
		o->err.data = NULL;
		out = a2m_rpc_error_text(req->id, o->rc, o->err.message[0] ? o->err.message : "error",
					 data, out_len);
	} else if (o->text) {
		out = a2m_rpc_result_text(req->id, o->text, o->text_len, out_len);
	} else {
		out = envelope(req->id, "result", o->result, out_len);
		o->result = NULL;
	}
	json_decref(o->result);
	free(o->text);
	a2m_error_clear(&o->err);
	memset(o, 0, sizeof *o);
	*reply = out;
	return req->id && !out ? A2M_NOMEM : A2M_OK;
}
