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
#include <string.h>

#include "rpc/rpc.h"
#include "util/json_write.h"

/* Serialises {"jsonrpc":"2.0","id":id, key: value}; takes value. */
static char *envelope(const json_t *id, const char *key, json_t *value, size_t *out_len)
{
	json_t *msg = json_object();
	if (!msg || !value) {
		json_decref(msg);
		json_decref(value);
		return NULL;
	}
	json_object_set_new(msg, "jsonrpc", json_string("2.0"));
	json_object_set(msg, "id", id ? (json_t *)id : json_null());
	json_object_set_new(msg, key, value);
	char *text = a2m_json_write(msg, out_len);
	json_decref(msg);
	return text;
}

char *a2m_rpc_error_text(const json_t *id, int code, const char *message, json_t *data,
			 size_t *out_len)
{
	json_t *e = json_pack("{si ss}", "code", code, "message", message);
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

char *a2m_rpc_handle(a2m_server *srv, const char *msg, size_t len, size_t *out_len)
{
	json_error_t jerr;
	a2m_error err = {0};
	char *out = NULL;
	/* JSON_ALLOW_NUL: "\u0000" is valid JSON; fields that cannot hold it
	** refuse it with INVALID_PARAMS, metadata keeps it. */
	json_t *req = json_loadb(msg, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!req) {
		json_t *data = json_pack("{ss si}", "detail", jerr.text, "position", jerr.position);
		return a2m_rpc_error_text(NULL, A2M_PARSE_ERROR, "Parse error: not valid JSON",
					  data, out_len);
	}
	if (!json_is_object(req)) {
		const char *why = json_is_array(req)
			? "Invalid request: batches (arrays) are not accepted; send one request object"
			: "Invalid request: a message must be one JSON object";
		json_decref(req);
		return a2m_rpc_error_text(NULL, A2M_INVALID_REQUEST, why, NULL, out_len);
	}
	json_t *id = json_object_get(req, "id");
	int notification = id == NULL;
	int rc = check_envelope(req, &err);
	if (rc) {
		/* Even without an id, an invalid request is reported (id null). */
		const json_t *rid = id && valid_id(id) ? id : NULL;
		out = a2m_rpc_error_text(rid, rc, err.message, NULL, out_len);
		goto done;
	}
	const char *method = json_string_value(json_object_get(req, "method"));
	const a2m_method *m = a2m_method_find(method);
	json_t *result = NULL;
	if (!m) {
		rc = a2m_error_set(&err, A2M_METHOD_NOT_FOUND, "Method not found: %s is not an A2M method",
				   method);
	} else {
		json_t *params = json_object_get(req, "params");
		if (json_is_array(params)) {
			rc = a2m_error_set(&err, A2M_INVALID_PARAMS,
					   "params must be passed by name, as an object");
		} else {
			json_t *empty = params ? NULL : json_object();
			rc = a2m_protocol_call(srv, m, params ? params : empty, &result, &err);
			json_decref(empty);
		}
	}
	if (notification) {
		json_decref(result);
		goto done;
	}
	if (rc) {
		json_t *data = err.data;
		err.data = NULL;
		out = a2m_rpc_error_text(id, rc, err.message[0] ? err.message : "error", data, out_len);
	} else {
		out = envelope(id, "result", result, out_len);
	}
done:
	a2m_error_clear(&err);
	json_decref(req);
	return out;
}
