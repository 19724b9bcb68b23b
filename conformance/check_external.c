/*
** check_external.c — checks of the external capability (spec §3.8;
** DECISIONS 019): a record may point at something instead of holding it,
** the pointer comes back exactly as written, and the server never follows
** it.
**
** The last rule is checked by pointing records at a listener of our own on
** the loopback interface and then exercising every read the server
** declares: if anything connects, the server dereferenced a caller's uri,
** which is the server-side request forgery the rule exists to prevent.
*/
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

/* How long a server gets to make a connection it should never make. */
#define DEREFERENCE_WAIT_MS 300

/* The records of a recall or timeline (params stolen), or NULL after failing. */
static json_t *read_records(conf_ctx *cx, const char *method, json_t *params)
{
	json_t *result = conf_result(cx, method, params);
	if (!result)
		return NULL;
	json_t *records = json_object_get(result, "records");
	if (!json_is_array(records)) {
		conf_fail(cx, "%s returned no records array: %s", method, conf_show(cx, result));
		return NULL;
	}
	return records;
}

/*
** Whether field of rec holds want exactly; a NULL want means null or
** absent, the record having none.
*/
static int field_is(conf_ctx *cx, const char *what, const json_t *rec, const char *field,
		    const char *want)
{
	json_t *got = json_object_get(rec, field);
	if (!want) {
		if (!got || json_is_null(got))
			return 1;
		conf_fail(cx, "%s: %s is %s, expected null or absent (none was written)", what,
			  field, conf_show(cx, got));
		return 0;
	}
	if (json_is_string(got) && strcmp(json_string_value(got), want) == 0)
		return 1;
	conf_fail(cx, "%s: %s is %s, expected \"%s\" unchanged (spec §3.8)", what, field,
		  conf_show(cx, got), want);
	return 0;
}

/* ---- round trip ---- */

/* References of every shape RFC 3986 allows, and what they point at. */
static const struct {
	const char *uri;
	const char *media_type;
} references[] = {
	{"file:///srv/docs/Quarterly%20Report%202026.pdf", "application/pdf"},
	{"https://example.org/wiki/Stra\xc3\x9f" "e?q=caf\xc3\xa9&lang=de&x=%2F#Geschichte",
	 "text/html; charset=utf-8"},
	{"../notes/2026-07-28.md", "text/markdown"},
	{"s3://bucket/key/with/slashes/and%20spaces?versionId=3", NULL},
	{"urn:isbn:0451450523", "application/octet-stream"},
};

enum reader { BY_RECALL, BY_TIMELINE };
static const enum reader by_recall = BY_RECALL, by_timeline = BY_TIMELINE;

static void check_round_trip(conf_ctx *cx, const void *arg)
{
	enum reader how = *(const enum reader *)arg;
	const char *m = conf_marker(cx);
	json_t *batch = json_array();
	for (size_t i = 0; i < CONF_COUNT(references); i++) {
		json_t *rec = conf_record(cx, conf_str(cx, "%s reference %zu", m, i), m);
		json_object_set_new(rec, "uri", json_string(references[i].uri));
		json_object_set_new(rec, "media_type", references[i].media_type
				    ? json_string(references[i].media_type) : json_null());
		json_array_append_new(batch, rec);
	}
	json_t *ids = conf_remember(cx, batch);
	if (!ids)
		return;
	json_t *records = how == BY_RECALL
		? read_records(cx, "memory/recall", json_pack("{s:s,s:{s:s},s:i}", "query", m,
							       "where", "cfm", m, "limit", 20))
		: read_records(cx, "memory/timeline", json_pack("{s:{s:s}}", "where", "cfm", m));
	if (!records)
		return;
	for (size_t i = 0; i < CONF_COUNT(references); i++) {
		const char *id = json_string_value(json_array_get(ids, i));
		json_t *rec = conf_by_id(records, id);
		const char *what = conf_str(cx, "%s of %s", how == BY_RECALL ? "recall" : "timeline",
					    references[i].uri);
		if (!rec) {
			conf_fail(cx, "%s: the record is missing from %s", what,
				  conf_show(cx, records));
			return;
		}
		if (!field_is(cx, what, rec, "uri", references[i].uri) ||
		    !field_is(cx, what, rec, "media_type", references[i].media_type))
			return;
	}
	conf_pass(cx);
}

/* A record without the fields reports none. */
static void check_plain_record(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	json_t *ids = conf_remember(cx, json_pack("[o]", conf_record(
		cx, conf_str(cx, "%s points nowhere", m), m)));
	json_t *left = ids ? conf_timeline_of(cx, m) : NULL;
	if (!left)
		return;
	json_t *rec = json_array_get(left, 0);
	if (json_array_size(left) != 1)
		conf_fail(cx, "timeline returned %s, expected the one record",
			  conf_show(cx, left));
	else if (field_is(cx, "a record written without uri", rec, "uri", NULL) &&
		 field_is(cx, "a record written without uri", rec, "media_type", NULL))
		conf_pass(cx);
}

/*
** Spec §3.8: a uri and no content is legal; the record is then found by
** its metadata (or its key). Content stays a string, as §3.1 requires of
** every record.
*/
static void check_uri_without_content(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *uri = conf_str(cx, "https://example.org/%s/blob.bin", m);
	const char *key = conf_str(cx, "cf/%s/blob", m);
	int keys = conf_has_capability(cx, "keys");
	json_t *meta = json_pack("{s:s,s:s}", "cfrun", conf_run_token(cx), "cfm", m);
	json_t *rec = json_pack("{s:s,s:s,s:o}", "uri", uri, "media_type",
				"application/octet-stream", "metadata", meta);
	if (keys)
		json_object_set_new(rec, "key", json_string(key));
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	json_t *left = ids ? conf_timeline_of(cx, m) : NULL;
	if (!left)
		return;
	json_t *got = json_array_get(left, 0);
	if (json_array_size(left) != 1) {
		conf_fail(cx, "timeline by its metadata returned %s, expected the one record",
			  conf_show(cx, left));
		return;
	}
	if (!field_is(cx, "timeline", got, "uri", uri))
		return;
	if (!json_is_string(json_object_get(got, "content"))) {
		conf_fail(cx, "the record has content %s; spec §3.1 requires a string even "
			  "when none was written", conf_show(cx, json_object_get(got, "content")));
		return;
	}
	if (keys) {
		json_t *result = conf_result(cx, "memory/fetch", json_pack("{s:s}", "key", key));
		if (!result)
			return;
		json_t *fetched = json_object_get(result, "record");
		if (!json_is_object(fetched) ||
		    !json_equal(json_object_get(fetched, "id"), json_array_get(ids, 0))) {
			conf_fail(cx, "fetch of its key returned %s", conf_show(cx, result));
			return;
		}
		if (!field_is(cx, "fetch", fetched, "uri", uri))
			return;
	}
	conf_pass(cx);
}

/* ---- never dereferenced ---- */

/* A listening socket on 127.0.0.1 and a free port; -1 when none can be made. */
static int listen_loopback(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in addr;
	socklen_t len = sizeof addr;
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = 0;
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
	    bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&addr, &len) < 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(addr.sin_port);
	return fd;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
** Every read a server might be tempted to resolve a reference in: recall
** and timeline (with a rendered prompt that cites it, when declared),
** fetch, and a summary of the records, which is where a server that wants
** "the real text" would go and get it. Returns 1, or 0 after failing.
*/
static int exercise(conf_ctx *cx, const char *m, const json_t *ids, const char *key)
{
	json_t *p = json_pack("{s:s,s:{s:s},s:i}", "query", m, "where", "cfm", m, "limit", 20);
	if (conf_has_capability(cx, "prompt"))
		json_object_set_new(p, "prompt", json_pack("{s:b}", "cite", 1));
	if (!read_records(cx, "memory/recall", p))
		return 0;
	if (!read_records(cx, "memory/timeline", json_pack("{s:{s:s}}", "where", "cfm", m)))
		return 0;
	if (key && !conf_result(cx, "memory/fetch", json_pack("{s:s}", "key", key)))
		return 0;
	if (conf_has_capability(cx, "summarize")) {
		json_t *r = conf_result(cx, "memory/summarize", json_pack("{s:O}", "ids", ids));
		if (!r)
			return 0;
		/* The summary carries no marker of ours: remove it here. */
		json_t *written = json_object_get(r, "records");
		json_t *sids = json_array();
		size_t i;
		json_t *rec;
		json_array_foreach(written, i, rec)
			json_array_append(sids, json_object_get(rec, "id"));
		if (json_array_size(sids) == 0)
			json_decref(sids);
		else if (!conf_result(cx, "memory/forget", json_pack("{s:o}", "ids", sids)))
			return 0;
	}
	return 1;
}

static void check_never_dereferenced(conf_ctx *cx, const void *arg)
{
	(void)arg;
	int port;
	if (!conf_need_writes(cx))
		return;
	int fd = listen_loopback(&port);
	if (fd < 0) {
		conf_skip(cx, "cannot listen on 127.0.0.1: %s", strerror(errno));
		return;
	}
	const char *m = conf_marker(cx);
	const char *key = conf_has_capability(cx, "keys") ? conf_str(cx, "cf/%s/ssrf", m) : NULL;
	const char *paths[] = {"x", "report.pdf?download=1", "api/v1/secret"};
	json_t *batch = json_array();
	for (size_t i = 0; i < CONF_COUNT(paths); i++) {
		json_t *rec = conf_record(cx, conf_str(cx, "%s the deploy runbook, part %zu", m, i),
					  m);
		json_object_set_new(rec, "uri", json_string(conf_str(
			cx, "http://127.0.0.1:%d/%s/%s", port, m, paths[i])));
		json_object_set_new(rec, "media_type", json_string("text/html"));
		if (key && i == 0)
			json_object_set_new(rec, "key", json_string(key));
		json_array_append_new(batch, rec);
	}
	json_t *ids = conf_remember(cx, batch);
	int exercised = ids && exercise(cx, m, ids, key);
	sleep_ms(DEREFERENCE_WAIT_MS);
	int conn = accept(fd, NULL, NULL);
	int accept_errno = errno;
	if (conn >= 0)
		close(conn);
	close(fd);
	if (!exercised)
		return;
	if (conn >= 0)
		conf_fail(cx, "the server connected to 127.0.0.1:%d, the address in a record's "
			  "uri (spec §3.8: MUST NOT dereference)", port);
	else if (accept_errno != EAGAIN && accept_errno != EWOULDBLOCK)
		conf_skip(cx, "could not tell: accept failed: %s", strerror(accept_errno));
	else
		conf_pass(cx);
}

static const conf_check checks[] = {
	{"uri and media_type come back unchanged from recall", check_round_trip, &by_recall},
	{"uri and media_type come back unchanged from timeline", check_round_trip,
	 &by_timeline},
	{"a record written without them has neither", check_plain_record, NULL},
	{"a uri without content is accepted and found by its metadata",
	 check_uri_without_content, NULL},
	{"the server never connects to a record's uri", check_never_dereferenced, NULL},
};

const conf_group conf_group_external = {"external", "external", checks, CONF_COUNT(checks),
					0};
