/*
** fuzz.h — what the libFuzzer targets of fuzz/ share: a scratch directory,
** opening a handle from named options, a store with a few records to start
** from, and the oracle every reply and notification is judged by.
**
** The oracle (docs/FUZZING.md) holds the library to its contract for any
** bytes at all: a2m_handle returns A2M_OK; a reply is one line of JSON, a
** JSON-RPC 2.0 response object with exactly one of result and error; its id
** is the request's id, the same type and value (null when the request's
** could not be read); a notification gets no reply unless it is not even a
** valid request; the numbers the schema types as numbers are numbers, never
** the null a non-finite value is written as; and no reply is
** INTERNAL_ERROR (-32603), which a fuzzer
** with sane limits never earns, so one means a fault the server hid. A
** broken promise aborts, and libFuzzer keeps the input that broke it.
**
** Included by each target (one program per fuzz/fuzz_*.c); every function is
** static, so a target that leaves one unused says so with FUZZ_UNUSED.
*/
#ifndef A2M_FUZZ_H
#define A2M_FUZZ_H

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"

#define FUZZ_UNUSED __attribute__((unused))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Says what broke, with the text that broke it, and aborts: libFuzzer saves
** the input as a crash. */
FUZZ_UNUSED __attribute__((format(printf, 3, 4), noreturn))
static void fuzz_fail(const char *text, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "\nfuzz oracle: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (text)
		fprintf(stderr, "\n  text: %.*s\n", (int)(len > 2000 ? 2000 : len), text);
	else
		fputc('\n', stderr);
	abort();
}

#define FUZZ_ASSERT(cond, text, len, ...) \
	do { if (!(cond)) fuzz_fail((text), (len), __VA_ARGS__); } while (0)

/* ---- a scratch directory, removed when the process exits ---------------- */

static char fuzz_dir_path[256];

static int fuzz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* Removes path and everything under it; a path that is not there is fine. */
static void fuzz_rmtree(const char *path)
{
	if (nftw(path, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT) {
		perror(path);
		abort();
	}
}

static void fuzz_dir_remove(void)
{
	if (fuzz_dir_path[0])
		fuzz_rmtree(fuzz_dir_path);
}

/* A directory of this process's own, made on first use: under
** $A2M_FUZZ_DIR when set (scripts/fuzz.sh sets it, and removes it, so a
** crash that skips atexit leaves nothing behind), else in /dev/shm when
** there is one (the SQLite targets write a file per input), else /tmp. */
FUZZ_UNUSED static const char *fuzz_dir(void)
{
	if (!fuzz_dir_path[0]) {
		const char *base = getenv("A2M_FUZZ_DIR");
		if (!base || !*base)
			base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		if (snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/a2m-fuzz.XXXXXX", base) >=
		    (int)sizeof fuzz_dir_path) {
			fprintf(stderr, "fuzz: %s is too long a directory\n", base);
			abort();
		}
		if (!mkdtemp(fuzz_dir_path)) {
			perror("fuzz: mkdtemp");
			abort();
		}
		atexit(fuzz_dir_remove);
	}
	return fuzz_dir_path;
}

/* A fresh directory of the scratch directory for one SQLite store (its
** file, -wal, -shm and procedural mirror), emptied first; returns the
** store's path in it, in a static buffer. */
FUZZ_UNUSED static const char *fuzz_fresh_store(const char *name)
{
	static char path[400];
	snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
	fuzz_rmtree(path);
	if (mkdir(path, 0700) != 0) {
		perror(path);
		abort();
	}
	snprintf(path, sizeof path, "%s/%s/a2m.db", fuzz_dir(), name);
	return path;
}

/* Writes len bytes to path; aborts when it cannot (the fuzzer's fault). */
FUZZ_UNUSED static void fuzz_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
		perror(path);
		abort();
	}
}

/* ---- handles ------------------------------------------------------------- */

/*
** Opens a handle from name/value pairs ended by NULL; an option the handle
** refuses, or a store that does not open, aborts (the fuzzer's own options
** are always valid). Helper threads are off: one thread per input keeps a
** crash reproducible.
*/
FUZZ_UNUSED static a2m *fuzz_open(const char *first, ...)
{
	a2m_config *cfg;
	a2m *h = NULL;
	char *err = NULL;
	if (a2m_config_new(&cfg) != A2M_OK)
		abort();
	int rc = a2m_config_set(cfg, "helper_threads", "0");
	va_list ap;
	va_start(ap, first);
	for (const char *name = first; name && rc == A2M_OK; name = va_arg(ap, const char *))
		rc = a2m_config_set(cfg, name, va_arg(ap, const char *));
	va_end(ap);
	if (rc != A2M_OK)
		fuzz_fail(NULL, 0, "option refused: %s", a2m_config_errmsg(cfg));
	rc = a2m_open(cfg, &h, &err);
	if (rc != A2M_OK)
		fuzz_fail(NULL, 0, "open: %s", err ? err : a2m_strerror(rc));
	a2m_config_free(cfg);
	return h;
}

/*
** A few records to start from, one request each: every tier, a session,
** keys, metadata, a group (summarize), so that one fuzzed message finds
** something to read, touch, move or forget. Each must succeed.
*/
static const char *const fuzz_seed_requests[] = {
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\",\"params\":{\"records\":["
	"{\"id\":\"a\",\"content\":\"the deploy key rotates every Monday\",\"tier\":\"semantic\","
	"\"key\":\"facts/deploy\",\"metadata\":{\"t\":\"ops\",\"n\":1}},"
	"{\"id\":\"b\",\"content\":\"Alice prefers tea over coffee\",\"tier\":\"episodic\","
	"\"salience\":2,\"metadata\":{\"t\":\"people\"}},"
	"{\"id\":\"c\",\"content\":\"run make check before every commit\",\"tier\":\"procedural\","
	"\"key\":\"how/commit\"},"
	"{\"id\":\"d\",\"content\":\"we talked about città and Köln\",\"session\":\"s1\","
	"\"role\":\"user\"},"
	"{\"id\":\"e\",\"content\":\"東京の天気は晴れ\",\"session\":\"s1\",\"role\":\"assistant\"},"
	"{\"id\":\"f\",\"content\":\"bob's note\",\"owner\":\"bob\",\"tier\":\"working\"},"
	"{\"id\":\"g\",\"content\":\"bob's fact\",\"owner\":\"bob\",\"tier\":\"semantic\"}]}}",
	("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"memory/summarize\",\"params\":{"
	 "\"ids\":[\"a\",\"b\"],\"key\":\"facts/summary\"}}"),
	"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"memory/recall\",\"params\":{\"query\":\"tea\"}}",
};

/* Sends the seed requests; any error aborts. */
FUZZ_UNUSED static void fuzz_seed(a2m *h)
{
	for (size_t i = 0; i < sizeof fuzz_seed_requests / sizeof fuzz_seed_requests[0]; i++) {
		char *out = NULL;
		const char *req = fuzz_seed_requests[i];
		if (a2m_handle(h, req, A2M_NUL_TERMINATED, &out) != A2M_OK || !out ||
		    strstr(out, "\"error\""))
			fuzz_fail(out, out ? strlen(out) : 0, "seed request %zu failed", i);
		a2m_free(out);
	}
}

/* ---- the oracle ---------------------------------------------------------- */

/* Set by a target whose store is damaged on purpose (fuzz_corrupt_db.c):
** there INTERNAL_ERROR is a fair answer. */
static int fuzz_allow_internal;

/* The id a reply to msg must carry, as jansson reads msg: *expect is a new
** reference (json_null() when the id cannot be read), and the return value
** says whether a reply is owed at all. */
static int fuzz_expected_reply(const char *msg, size_t len, json_t **expect)
{
	*expect = json_null();
	json_t *m = json_loadb(msg, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!m || !json_is_object(m)) {
		json_decref(m);
		return 1;  /* parse error or not one object: answered with id null */
	}
	json_t *id = json_object_get(m, "id");
	int id_valid = id && (json_is_string(id) || json_is_number(id) || json_is_null(id));
	if (id_valid)
		*expect = json_incref(id);
	int owed;
	if (id) {
		owed = 1;
	} else {
		/* A notification: answered only when it is not a valid request. */
		json_t *v = json_object_get(m, "jsonrpc");
		json_t *params = json_object_get(m, "params");
		/* params by position (an array) is valid JSON-RPC: a method
		** of ours refuses it with INVALID_PARAMS, which a notification
		** is not told. */
		int valid = json_is_string(v) && strcmp(json_string_value(v), "2.0") == 0 &&
			    json_is_string(json_object_get(m, "method")) &&
			    (!params || json_is_object(params) || json_is_array(params));
		owed = !valid;
	}
	json_decref(m);
	return owed;
}

/*
** The JSON writer turns a non-finite number into null (json_write.h), so a
** salience or score that overflowed would still read as valid JSON. The
** spec's schema makes these numbers, never null: salience, score, amount,
** and each component of an embedding; access_count and revision are
** integers of at least 0. Checked in every object below v.
*/
static void fuzz_check_numbers(const json_t *v, const char *text, size_t len)
{
	if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++)
			fuzz_check_numbers(json_array_get(v, i), text, len);
		return;
	}
	if (!json_is_object(v))
		return;
	const char *k;
	json_t *m;
	json_object_foreach((json_t *)v, k, m) {
		if (!strcmp(k, "salience") || !strcmp(k, "score") || !strcmp(k, "amount"))
			FUZZ_ASSERT(json_is_number(m), text, len, "%s is not a number", k);
		else if (!strcmp(k, "access_count") || !strcmp(k, "revision"))
			FUZZ_ASSERT(json_is_integer(m) && json_integer_value(m) >= 0, text, len,
				    "%s is not an integer of at least 0", k);
		else if (!strcmp(k, "embedding") && json_is_array(m))
			for (size_t i = 0; i < json_array_size(m); i++)
				FUZZ_ASSERT(json_is_number(json_array_get(m, i)), text, len,
					    "embedding[%zu] is not a number", i);
		fuzz_check_numbers(m, text, len);
	}
}

/* Judges one JSON-RPC message text the server sent (a reply, or a push
** notification when is_push): one line of JSON, the envelope well formed.
** Returns the parsed value (the caller decrefs). */
static json_t *fuzz_check_envelope(const char *text, size_t len, int is_push)
{
	FUZZ_ASSERT(len == strlen(text), text, len, "a NUL inside the message");
	FUZZ_ASSERT(!memchr(text, '\n', len) && !memchr(text, '\r', len), text, len,
		    "a message is not one line");
	json_error_t e;
	/* "\u0000" is valid JSON (a metadata string may hold it). */
	json_t *v = json_loadb(text, len, JSON_ALLOW_NUL, &e);
	FUZZ_ASSERT(v, text, len, "not valid JSON (%s at %d)", e.text, e.position);
	FUZZ_ASSERT(json_is_object(v), text, len, "not a JSON object");
	json_t *ver = json_object_get(v, "jsonrpc");
	FUZZ_ASSERT(json_is_string(ver) && strcmp(json_string_value(ver), "2.0") == 0, text, len,
		    "jsonrpc is not \"2.0\"");
	if (is_push) {
		FUZZ_ASSERT(!json_object_get(v, "id"), text, len, "a notification has an id");
		FUZZ_ASSERT(json_is_string(json_object_get(v, "method")), text, len,
			    "a notification without a method");
		json_t *p = json_object_get(v, "params");
		FUZZ_ASSERT(!p || json_is_object(p), text, len, "a notification's params");
		FUZZ_ASSERT(json_object_size(v) <= 3, text, len, "a notification's members");
		fuzz_check_numbers(p, text, len);
		return v;
	}
	json_t *res = json_object_get(v, "result"), *err = json_object_get(v, "error");
	FUZZ_ASSERT(json_object_get(v, "id"), text, len, "a reply without an id");
	FUZZ_ASSERT((res != NULL) != (err != NULL), text, len,
		    "a reply needs exactly one of result and error");
	FUZZ_ASSERT(json_object_size(v) == 3, text, len, "a reply's members");
	fuzz_check_numbers(res, text, len);
	if (err) {
		json_t *code = json_object_get(err, "code");
		FUZZ_ASSERT(json_is_object(err) && json_is_integer(code) &&
				    json_is_string(json_object_get(err, "message")),
			    text, len, "a malformed error object");
		FUZZ_ASSERT(fuzz_allow_internal || json_integer_value(code) != A2M_INTERNAL_ERROR,
			    text, len,
			    "INTERNAL_ERROR (-32603) without resource exhaustion");
	}
	return v;
}

/*
** Judges what a2m_handle (or a2m_handle_network) did with msg: it returned
** rc and wrote reply. Aborts on any broken promise.
*/
FUZZ_UNUSED static void fuzz_check_reply(const char *msg, size_t len, int rc, const char *reply)
{
	/* FUZZ_TRACE=1 in the environment: every message and its reply on
	** stderr, to see what an input does. */
	static int trace = -1;
	if (trace < 0)
		trace = getenv("FUZZ_TRACE") != NULL;
	if (trace)
		fprintf(stderr, ">> %.*s\n<< %s\n", (int)len, msg, reply ? reply : "(none)");
	FUZZ_ASSERT(rc == A2M_OK, msg, len, "a2m_handle returned %d (%s)", rc, a2m_strerror(rc));
	json_t *expect;
	int owed = fuzz_expected_reply(msg, len, &expect);
	if (!owed) {
		FUZZ_ASSERT(!reply, reply, reply ? strlen(reply) : 0,
			    "a notification was answered; request: %.*s", (int)(len > 500 ? 500 : len),
			    msg);
		json_decref(expect);
		return;
	}
	FUZZ_ASSERT(reply, msg, len, "no reply to a request that is owed one");
	size_t rlen = strlen(reply);
	json_t *v = fuzz_check_envelope(reply, rlen, 0);
	json_t *id = json_object_get(v, "id");
	/* json_equal tells an integer from a real, and compares strings
	** byte for byte, NULs included. */
	FUZZ_ASSERT(json_equal(id, expect), reply, rlen, "the reply's id is not the request's; request: %.*s",
		    (int)(len > 500 ? 500 : len), msg);
	json_decref(expect);
	json_decref(v);
}

/* The a2m_set_notify callback: every push is judged; user counts them. */
FUZZ_UNUSED static void fuzz_on_notify(const char *text, void *user)
{
	json_decref(fuzz_check_envelope(text, strlen(text), 1));
	if (user)
		(*(size_t *)user)++;
}

/* Sends len bytes of msg to h (as a network caller when network is set)
** and judges the outcome. */
FUZZ_UNUSED static void fuzz_send(a2m *h, const char *msg, size_t len, int network,
				  const char *principal)
{
	char *reply = NULL;
	int rc = network ? a2m_handle_network(h, msg, len, principal, &reply)
			 : a2m_handle(h, msg, len, &reply);
	fuzz_check_reply(msg, len, rc, reply);
	a2m_free(reply);
}

#endif
