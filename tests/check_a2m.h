/*
** check_a2m.h — what the unit tests that drive an a2m handle share: opening
** one from named options, and sending it a request, always through the
** public API and always as JSON text, exactly as a transport would.
** Include after check.h.
*/
#ifndef A2M_TEST_CHECK_A2M_H
#define A2M_TEST_CHECK_A2M_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "a2m.h"
#include "check.h"

/*
** Opens a store from name/value pairs of options (include/a2m.h), the
** list ended by NULL: check_open("engine", "memory", NULL). A NULL value
** leaves its option unset. Prints why and returns NULL on failure.
*/
static inline a2m *check_open(const char *first, ...)
{
	a2m_config *cfg;
	a2m *h = NULL;
	char *err = NULL;
	if (a2m_config_new(&cfg) != A2M_OK)
		return NULL;
	va_list ap;
	va_start(ap, first);
	int rc = A2M_OK;
	for (const char *name = first; name && rc == A2M_OK; name = va_arg(ap, const char *)) {
		const char *value = va_arg(ap, const char *);
		if (value)
			rc = a2m_config_set(cfg, name, value);
	}
	va_end(ap);
	if (rc != A2M_OK)
		fprintf(stderr, "  option: %s\n", a2m_config_errmsg(cfg));
	else if (a2m_open(cfg, &h, &err) != A2M_OK)
		fprintf(stderr, "  open: %s\n", err ? err : a2m_strerror(rc));
	a2m_free(err);
	a2m_config_free(cfg);
	return h;
}

/*
** Hands text to h as a local caller and returns its reply as the library
** wrote it (free with a2m_free; NULL for a notification). A failed call
** fails the test.
*/
static inline char *check_reply(a2m *h, const char *text)
{
	char *out = NULL;
	CHECK_INT(a2m_handle(h, text, A2M_NUL_TERMINATED, &out), A2M_OK);
	return out;
}

/*
** Hands text to h as a local caller (or as a network one when network is
** set, with principal) and returns the parsed response, or NULL for none (a
** notification). A reply that is not one line of JSON fails the test.
*/
static inline json_t *check_send_as(a2m *h, const char *text, int network,
				    const char *principal)
{
	char *out = NULL;
	int rc = network ? a2m_handle_network(h, text, A2M_NUL_TERMINATED, principal, &out)
			 : a2m_handle(h, text, A2M_NUL_TERMINATED, &out);
	CHECK_INT(rc, A2M_OK);
	if (!out)
		return NULL;
	CHECK(strchr(out, '\n') == NULL);
	json_t *v = json_loads(out, 0, NULL);
	CHECK(v != NULL);
	a2m_free(out);
	return v;
}

static inline json_t *check_send(a2m *h, const char *text)
{
	return check_send_as(h, text, 0, NULL);
}

/* Calls method (id 1) with params written by a printf-style format. */
static inline json_t *check_call(a2m *h, const char *method, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline json_t *check_call(a2m *h, const char *method, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *params = malloc((size_t)n + 1);
	char *msg = malloc((size_t)n + strlen(method) + 64);
	json_t *v = NULL;
	if (params && msg) {
		va_start(ap, fmt);
		vsnprintf(params, (size_t)n + 1, fmt, ap);
		va_end(ap);
		sprintf(msg, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\",\"params\":%s}", method,
			params);
		v = check_send(h, msg);
	}
	free(params);
	free(msg);
	return v;
}

/* Calls method (id 1) with params (the reference is taken; NULL: none). */
static inline json_t *check_call_json(a2m *h, const char *method, json_t *params)
{
	json_t *req = json_pack("{ss si ss}", "jsonrpc", "2.0", "id", 1, "method", method);
	if (req && params)
		json_object_set_new(req, "params", params);
	else
		json_decref(params);
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	json_t *v = text ? check_send(h, text) : NULL;
	free(text);
	return v;
}

/* check_call_json()'s result, which the test expects to be there (a new
** reference, or NULL after a failed check). */
static inline json_t *check_result_of(a2m *h, const char *method, json_t *params)
{
	json_t *resp = check_call_json(h, method, params);
	json_t *res = json_incref(json_object_get(resp, "result"));
	CHECK(res != NULL);
	json_decref(resp);
	return res;
}

/* The error code of a response, 0 when it is a success. */
static inline int check_error_code(const json_t *resp)
{
	json_t *e = json_object_get(resp, "error");
	return e ? (int)json_integer_value(json_object_get(e, "code")) : 0;
}

/* 1 when key is in h with content (NULL: absent), checked through memory/fetch. */
static inline int check_holds(a2m *h, const char *key, const char *content)
{
	char req[256];
	snprintf(req, sizeof req,
		 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/fetch\","
		 "\"params\":{\"key\":\"%s\"}}", key);
	char *out = check_reply(h, req);
	json_t *resp = out ? json_loads(out, 0, NULL) : NULL;
	a2m_free(out);
	json_t *rec = json_object_get(json_object_get(resp, "result"), "record");
	int ok;
	if (!content)
		ok = json_is_null(rec);
	else
		ok = json_is_object(rec) &&
		     strcmp(json_string_value(json_object_get(rec, "content")) ?: "", content) == 0;
	json_decref(resp);
	return ok;
}

/* The message of resp's error, or "" (borrowed from resp). */
static inline const char *check_error_message(const json_t *resp)
{
	const char *m = json_string_value(json_object_get(json_object_get(resp, "error"),
							  "message"));
	return m ? m : "";
}

/* Records in h: the sum of describe's tier counts. */
static inline long long check_stored(a2m *h)
{
	json_t *r = check_send(h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/describe\"}");
	json_t *tiers = json_object_get(json_object_get(r, "result"), "tiers");
	long long n = 0;
	for (size_t i = 0; i < json_array_size(tiers); i++)
		n += json_integer_value(json_object_get(json_array_get(tiers, i), "count"));
	json_decref(r);
	return n;
}

#endif
