/*
 * a2m_minimal.c — an A2M 0.1 server with the `core` capability only, written
 * from the specification (a2m-0.1.md) and nothing else.
 *
 * It keeps its records in memory and speaks JSON-RPC 2.0 over stdio (§8.2):
 * one message per line in on stdin, one per line out on stdout, logs on
 * stderr, and a clean exit when stdin closes. It depends on libc and jansson
 * and on no code of the a2m library: it exists to show that the
 * specification is enough on its own to build a conformant server (DECISIONS
 * 022 and 025), and to be read top to bottom as a worked example of it.
 *
 * Each section uses only those above it; a request arrives at the bottom
 * (8) and works its way up:
 *   1. limits and names            what describe reports
 *   2. errors                      the codes of §7
 *   3. the store                   records in creation order, an id set
 *   4. matching and ranking        where (§5.2), lexical score, recency
 *   5. the five core methods       §4.1–§4.5
 *   6. the method table            every A2M method; undeclared ones -32003
 *   7. the JSON-RPC envelope       parse, check, dispatch, reply
 *   8. the stdio transport         bounded lines, main()
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * 1. Limits and names
 *
 * §4.1 lets a server declare limits and obliges it to enforce them whatever
 * the client does. The first three are reported by memory/describe;
 * MAX_RECORDS and MAX_MESSAGE_BYTES are documented in README.md (a limit a
 * client can read about is a "documented limit" in the sense of
 * QUOTA_EXCEEDED, §7).
 * ---------------------------------------------------------------------- */

#define PROTOCOL             "a2m/0.1"
#define SERVER_NAME          "a2m-minimal"
#define MAX_RECORDS_PER_CALL 1000
#define MAX_RECALL_LIMIT     1000
#define MAX_CONTENT_LENGTH   65536       /* Unicode code points of `content` */
#define DEFAULT_RECALL_LIMIT 10          /* recall without `limit` (§4.3) */
#define MAX_RECORDS          1000000     /* the whole store; README.md */
#define MAX_MESSAGE_BYTES    (16 << 20)  /* one line of stdin; README.md */
#define MAX_QUERY_TERMS      64          /* later words of a query are ignored */
#define MAX_TERM_BYTES       64          /* longer words are cut, alike on both sides */

/* ------------------------------------------------------------------------
 * 2. Errors (§7)
 *
 * A method either returns its result or fills a `struct error` and returns
 * NULL; the envelope (section 7) turns that into a JSON-RPC error object.
 * ---------------------------------------------------------------------- */

enum {
	PARSE_ERROR = -32700,
	INVALID_REQUEST = -32600,
	METHOD_NOT_FOUND = -32601,
	INVALID_PARAMS = -32602,
	INTERNAL_ERROR = -32603,
	CAPABILITY_NOT_SUPPORTED = -32003,
	QUOTA_EXCEEDED = -32006,
	PROTOCOL_NOT_SUPPORTED = -32007,
};

struct error {
	int code;
	char message[256];
	json_t *data; /* optional `data` member; owned by the error */
};

/* Fills *e and returns NULL, so a method can `return fail(...)`. Takes the
 * reference to `data` (which may be NULL). */
__attribute__((format(printf, 4, 5))) static json_t *fail(struct error *e, int code, json_t *data, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
	e->code = code;
	json_decref(e->data);
	e->data = data;
	return NULL;
}

static json_t *out_of_memory(struct error *e)
{
	return fail(e, INTERNAL_ERROR, NULL, "out of memory");
}

/* §2: a field or parameter of a capability this server does not declare.
 * The `data` names the capability, so a client knows what was missing. */
static json_t *not_declared(struct error *e, const char *capability, const char *what)
{
	return fail(e, CAPABILITY_NOT_SUPPORTED, json_pack("{s:s}", "capability", capability),
		    "%s needs the '%s' capability, which this server does not implement", what,
		    capability);
}

/* Is v the JSON string s, exactly? A JSON string may hold U+0000, which
 * strcmp would take for its end: "2.0\u0000x" is not "2.0". */
static int is_string(json_t *v, const char *s)
{
	return json_is_string(v) && json_string_length(v) == strlen(s) &&
	       memcmp(json_string_value(v), s, strlen(s)) == 0;
}

/* ------------------------------------------------------------------------
 * 3. The store
 *
 * Records live in one array in creation order, so memory/timeline is a walk
 * forwards and a recall without a query a walk backwards. Each keeps its
 * wire form — exactly the object memory/recall returns, minus `score` — so
 * metadata round-trips as the client sent it (§3.1). A jansson object keyed
 * by id serves as the set of ids in use: it answers "does this id exist?"
 * for idempotent writes (§3.2) without a scan.
 * ---------------------------------------------------------------------- */

struct record {
	json_t *wire;         /* {id, content, created_at, role?, metadata?, group?} */
	long long created_ms; /* created_at as milliseconds since the epoch */
};

static struct record *store;
static size_t store_len, store_cap;
static json_t *ids_in_use;        /* object: id -> true */
static unsigned long long id_seq; /* the last server-assigned id's number */
static long long last_created_ms; /* the newest created_at handed out */

static int id_exists(const char *id, size_t len)
{
	return json_object_getn(ids_in_use, id, len) != NULL;
}

/* A fresh id, unique in this store (§3.2). A counter makes it unique among
 * the server's own ids; the check makes it unique against ids clients chose,
 * which may look like ours. Never reused, even after a forget. */
static void next_id(char *buf, size_t size)
{
	do
		snprintf(buf, size, "m%llx", ++id_seq);
	while (id_exists(buf, strlen(buf)));
}

/* The store's clock, in milliseconds since the epoch: the wall clock, but
 * never earlier than a time it has already given. A wall clock can step
 * backwards; holding still instead keeps creation order and created_at order
 * the same thing, which memory/timeline (§4.4) relies on. */
static long long store_clock_ms(void)
{
	struct timespec ts;
	long long ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (ms < last_created_ms)
		ms = last_created_ms;
	last_created_ms = ms;
	return ms;
}

/* §3.3: RFC 3339, UTC, milliseconds, `Z`: "2026-07-28T10:15:30.123Z".
 * (The buffer is roomier than the 24 bytes needed because the compiler
 * cannot know a year has four digits.) */
static void format_timestamp(long long ms, char buf[80])
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(buf, 80, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* Appends a record; takes the reference to `wire`. Returns 0, or -1 when
 * memory runs out (the store is then unchanged and `wire` released). */
static int store_append(json_t *wire, long long created_ms)
{
	json_t *id = json_object_get(wire, "id");

	if (store_len == store_cap) {
		size_t cap = store_cap ? store_cap * 2 : 64;
		struct record *grown = realloc(store, cap * sizeof *grown);
		if (!grown)
			goto fail;
		store = grown;
		store_cap = cap;
	}
	if (json_object_setn_new(ids_in_use, json_string_value(id), json_string_length(id),
				 json_true()))
		goto fail;
	store[store_len++] = (struct record){wire, created_ms};
	return 0;
fail:
	json_decref(wire);
	return -1;
}

/* Removes the record at `i` from the id set and releases it. The caller
 * closes the gap in the array. */
static void store_release(size_t i)
{
	json_t *id = json_object_get(store[i].wire, "id");

	json_object_deln(ids_in_use, json_string_value(id), json_string_length(id));
	json_decref(store[i].wire);
}

/* ------------------------------------------------------------------------
 * 4. Matching and ranking
 *
 * §5.1 leaves ranking to the server. This one is plain lexical relevance:
 * a query is cut into words (runs of ASCII letters and digits, or of any
 * non-ASCII bytes, so "café" stays one word), lowercased, with a plural `s`
 * folded away; a record's score is the share of the query's words it
 * contains, each word weighted by how rare it is among the records searched
 * (an inverse document frequency), so "deploy" counts for more than "the".
 * That gives a score in (0, 1], 1 when every word is present. A record
 * containing none of the words is not returned. Without a query, recency
 * ranks (§4.3 recommends it): the score halves with each day of age.
 * ---------------------------------------------------------------------- */

struct terms {
	char word[MAX_QUERY_TERMS][MAX_TERM_BYTES];
	size_t len[MAX_QUERY_TERMS];
	size_t n;
};

static int is_word_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c >= 0x80;
}

/* Finds the next word of s[0..n) from *pos, writes its normal form to
 * out[MAX_TERM_BYTES] and its length to *out_len, and advances *pos.
 * Returns 0 when no word is left. */
static int next_word(const char *s, size_t n, size_t *pos, char *out, size_t *out_len)
{
	size_t i = *pos, len = 0;

	while (i < n && !is_word_byte((unsigned char)s[i]))
		i++;
	if (i == n) {
		*pos = i;
		return 0;
	}
	for (; i < n && is_word_byte((unsigned char)s[i]); i++)
		if (len < MAX_TERM_BYTES)
			out[len++] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] - 'A' + 'a') : s[i];
	if (len > 3 && out[len - 1] == 's' && out[len - 2] != 's')
		len--; /* "keys" finds "key"; "class" stays */
	*pos = i;
	*out_len = len;
	return 1;
}

/* The distinct words of a query, at most MAX_QUERY_TERMS of them. */
static void query_terms(const char *q, size_t n, struct terms *t)
{
	size_t pos = 0, len;
	char word[MAX_TERM_BYTES];

	t->n = 0;
	while (t->n < MAX_QUERY_TERMS && next_word(q, n, &pos, word, &len)) {
		size_t k;
		for (k = 0; k < t->n; k++)
			if (t->len[k] == len && memcmp(t->word[k], word, len) == 0)
				break;
		if (k < t->n)
			continue;
		memcpy(t->word[t->n], word, len);
		t->len[t->n++] = len;
	}
}

/* Which of the query's words a record's content holds: bit k for word k. */
static uint64_t words_present(const struct record *r, const struct terms *t)
{
	json_t *content = json_object_get(r->wire, "content");
	const char *s = json_string_value(content);
	size_t n = json_string_length(content), pos = 0, len;
	char word[MAX_TERM_BYTES];
	uint64_t found = 0;

	while (next_word(s, n, &pos, word, &len))
		for (size_t k = 0; k < t->n; k++)
			if (t->len[k] == len && memcmp(t->word[k], word, len) == 0)
				found |= (uint64_t)1 << k;
	return found;
}

/* Equality as JSON means it: 1 equals 1.0; everything else by value. */
static int same_value(json_t *a, json_t *b)
{
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	return json_equal(a, b);
}

/* §5.2: `where` is a conjunction of equality tests. A key naming one of the
 * core record fields tests that field; any other key tests the metadata key
 * of that name. An array value means "any of". A record without the field
 * does not match, whatever the value. */
static int where_matches(json_t *where, const struct record *r)
{
	static const char *const fields[] = {"id", "content", "created_at", "role", "group"};
	json_t *metadata = json_object_get(r->wire, "metadata");

	/* Keys are taken with their length: a JSON key may hold U+0000. */
	for (void *it = json_object_iter(where); it; it = json_object_iter_next(where, it)) {
		const char *key = json_object_iter_key(it);
		size_t key_len = json_object_iter_key_len(it), f;
		json_t *want = json_object_iter_value(it), *have;

		for (f = 0; f < sizeof fields / sizeof fields[0]; f++)
			if (strlen(fields[f]) == key_len && memcmp(key, fields[f], key_len) == 0)
				break;
		have = f < sizeof fields / sizeof fields[0] ? json_object_getn(r->wire, key, key_len)
							   : json_object_getn(metadata, key, key_len);
		if (!have)
			return 0;
		if (json_is_array(want)) {
			size_t i, n = json_array_size(want);
			for (i = 0; i < n; i++)
				if (same_value(have, json_array_get(want, i)))
					break;
			if (i == n)
				return 0;
		} else if (!same_value(have, want)) {
			return 0;
		}
	}
	return 1;
}

/* ------------------------------------------------------------------------
 * 5. The five core methods
 *
 * Each takes `params` (always an object; absent params arrive as {}) and
 * returns the result, or NULL with *e filled. Parameters this server does
 * not know are never looked at, which is how §2's "unknown parameters are
 * ignored" is kept. Parameters of capabilities it does not declare are
 * ignored too, except those that restrict what a call selects (`tier`,
 * `key_prefix`): ignoring them would return or delete records the caller
 * excluded, so they are refused with CAPABILITY_NOT_SUPPORTED, as §4.2
 * requires for `tier` on a record.
 * ---------------------------------------------------------------------- */

/* Reads an optional count (`limit`): a non-negative integer. A JSON number
 * with no fraction (2.0) counts as an integer. Returns 1 with *out set, 0
 * when absent, -1 with *e filled when malformed. */
static int get_count(json_t *params, const char *name, long long *out, struct error *e)
{
	json_t *v = json_object_get(params, name);
	double d = json_real_value(v); /* 0 unless v is a real */

	if (!v)
		return 0;
	if (json_is_integer(v))
		*out = json_integer_value(v);
	else if (json_is_real(v) && d == floor(d))
		*out = d > 9e18 ? (long long)9e18 : d < 0 ? -1 : (long long)d;
	else
		*out = -1;
	if (*out < 0) {
		fail(e, INVALID_PARAMS, NULL, "%s must be a non-negative integer", name);
		return -1;
	}
	return 1;
}

/* Reads an optional parameter of one JSON type. Returns 0 (absent or of the
 * type; *out is NULL when absent), or -1 with *e filled. */
static int get_typed(json_t *params, const char *name, json_type type, const char *type_name,
		     json_t **out, struct error *e)
{
	*out = json_object_get(params, name);
	if (*out && json_typeof(*out) != type) {
		fail(e, INVALID_PARAMS, NULL, "%s must be %s", name, type_name);
		return -1;
	}
	return 0;
}

/* The selection parameters recall, timeline and forget share. */
static int refuse_undeclared_selectors(json_t *params, const char *method, struct error *e)
{
	char what[64];

	if (json_object_get(params, "tier")) {
		snprintf(what, sizeof what, "%s with tier", method);
		not_declared(e, "tiers", what);
		return -1;
	}
	if (json_object_get(params, "key_prefix")) {
		snprintf(what, sizeof what, "%s with key_prefix", method);
		not_declared(e, "keys", what);
		return -1;
	}
	return 0;
}

/* §4.1 memory/describe: what this server is and what it can do. A client
 * declaring a version this server does not speak is told so (§4.1, §9):
 * while the major version is 0 only an exact minor match is compatible, so
 * the one version served is "a2m/0.1" exactly. */
static json_t *memory_describe(json_t *params, struct error *e)
{
	json_t *protocol;

	if (get_typed(params, "protocol", JSON_STRING, "a string", &protocol, e))
		return NULL;
	if (protocol && !is_string(protocol, PROTOCOL))
		return fail(e, PROTOCOL_NOT_SUPPORTED, json_pack("{s:[s]}", "supported", PROTOCOL),
			    "this server speaks %s only", PROTOCOL);
	json_t *r = json_pack("{s:s, s:s, s:[s], s:[s,s,s,s,s], s:{s:i, s:i, s:i}}",
			      "protocol", PROTOCOL, "name", SERVER_NAME, "capabilities", "core",
			      "methods", "memory/describe", "memory/remember", "memory/recall",
			      "memory/timeline", "memory/forget", "limits", "max_records_per_call",
			      MAX_RECORDS_PER_CALL, "max_recall_limit", MAX_RECALL_LIMIT,
			      "max_content_length", MAX_CONTENT_LENGTH);
	return r ? r : out_of_memory(e);
}

static size_t code_points(json_t *s)
{
	const unsigned char *p = (const unsigned char *)json_string_value(s);
	size_t n = json_string_length(s), count = 0;

	for (size_t i = 0; i < n; i++)
		count += (p[i] & 0xC0) != 0x80; /* count every byte but continuations */
	return count;
}

/* Checks one record of a memory/remember call (§3.1, §4.2) without writing. */
static int check_record(json_t *r, size_t i, struct error *e)
{
	static const char *const strings[] = {"role", "group"};
	json_t *v;

	if (!json_is_object(r)) {
		fail(e, INVALID_PARAMS, NULL, "records[%zu] must be an object", i);
		return -1;
	}
	v = json_object_get(r, "content");
	if (!json_is_string(v)) {
		fail(e, INVALID_PARAMS, NULL, "records[%zu].content must be a string", i);
		return -1;
	}
	if (code_points(v) > MAX_CONTENT_LENGTH) {
		fail(e, QUOTA_EXCEEDED, json_pack("{s:i}", "max_content_length", MAX_CONTENT_LENGTH),
		     "records[%zu].content is longer than max_content_length (%d)", i,
		     MAX_CONTENT_LENGTH);
		return -1;
	}
	v = json_object_get(r, "id");
	if (v && (!json_is_string(v) || json_string_length(v) == 0)) {
		fail(e, INVALID_PARAMS, NULL, "records[%zu].id must be a non-empty string", i);
		return -1;
	}
	for (size_t k = 0; k < 2; k++) {
		v = json_object_get(r, strings[k]);
		if (v && !json_is_string(v)) {
			fail(e, INVALID_PARAMS, NULL, "records[%zu].%s must be a string", i,
			     strings[k]);
			return -1;
		}
	}
	/* §3.1: metadata is an object; anything else is refused, never dropped. */
	v = json_object_get(r, "metadata");
	if (v && !json_is_object(v)) {
		fail(e, INVALID_PARAMS, NULL, "records[%zu].metadata must be an object", i);
		return -1;
	}
	/* §4.2: every other field of an undeclared capability is ignored, but a
	 * tier silently dropped would put the record somewhere the caller did
	 * not ask for. */
	if (json_object_get(r, "tier")) {
		not_declared(e, "tiers", "a record with tier");
		return -1;
	}
	return 0;
}

/* The wire form of a new record: the core fields the client gave, an id and
 * created_at. The values are shared with the request, not copied. */
static json_t *new_wire(json_t *in, const char *id, size_t id_len, long long created_ms)
{
	static const char *const kept[] = {"content", "role", "metadata", "group"};
	char stamp[80];
	json_t *wire = json_object();

	format_timestamp(created_ms, stamp);
	if (!wire || json_object_set_new(wire, "id", json_stringn(id, id_len)) ||
	    json_object_set_new(wire, "created_at", json_string(stamp)))
		goto fail;
	for (size_t k = 0; k < sizeof kept / sizeof kept[0]; k++) {
		json_t *v = json_object_get(in, kept[k]);
		if (v && json_object_set(wire, kept[k], v))
			goto fail;
	}
	return wire;
fail:
	json_decref(wire);
	return NULL;
}

/* §4.2 memory/remember. Every record is checked before any is written, and
 * a failure part-way (a full store, no memory) takes back what this call
 * wrote: a call writes all its records or none, and never returns a partial
 * `ids`. A client-supplied id that exists already — in the store, or earlier
 * in the same call — writes nothing and returns that id (§3.2). */
static json_t *memory_remember(json_t *params, struct error *e)
{
	json_t *records = json_object_get(params, "records"), *ids;
	size_t n = json_array_size(records), before = store_len;

	if (!json_is_array(records) || n == 0)
		return fail(e, INVALID_PARAMS, NULL, "records must be a non-empty array of records");
	if (n > MAX_RECORDS_PER_CALL)
		return fail(e, QUOTA_EXCEEDED,
			    json_pack("{s:i}", "max_records_per_call", MAX_RECORDS_PER_CALL),
			    "at most %d records per call", MAX_RECORDS_PER_CALL);
	for (size_t i = 0; i < n; i++)
		if (check_record(json_array_get(records, i), i, e))
			return NULL;

	ids = json_array();
	if (!ids)
		return out_of_memory(e);
	for (size_t i = 0; i < n; i++) {
		json_t *in = json_array_get(records, i), *given = json_object_get(in, "id");
		char fresh[32];
		const char *id = fresh;
		size_t id_len;

		if (given) {
			id = json_string_value(given);
			id_len = json_string_length(given);
		} else {
			next_id(fresh, sizeof fresh);
			id_len = strlen(fresh);
		}
		if (json_array_append_new(ids, json_stringn(id, id_len))) {
			out_of_memory(e);
			goto undo;
		}
		if (given && id_exists(id, id_len))
			continue;
		if (store_len >= MAX_RECORDS) {
			fail(e, QUOTA_EXCEEDED, NULL, "the store is full (%d records)", MAX_RECORDS);
			goto undo;
		}
		long long created_ms = store_clock_ms();
		json_t *wire = new_wire(in, id, id_len, created_ms);
		if (!wire || store_append(wire, created_ms)) {
			out_of_memory(e);
			goto undo;
		}
	}
	json_t *result = json_pack("{s:o}", "ids", ids);
	return result ? result : out_of_memory(e);
undo:
	while (store_len > before)
		store_release(--store_len);
	json_decref(ids);
	return NULL;
}

/* One record in a recall result: its wire form plus its score. */
struct hit {
	size_t index;
	double score;
};

/* Descending score; among equals, the newer record first. */
static int by_score(const void *pa, const void *pb)
{
	const struct hit *a = pa, *b = pb;

	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	return a->index < b->index ? 1 : a->index > b->index ? -1 : 0;
}

/* Scores every record `where` admits against the query terms, keeping those
 * that contain at least one (see section 4 for the formula). Fills hits[]
 * and returns how many. */
static size_t rank_lexical(const struct terms *t, json_t *where, struct hit *hits,
			   uint64_t *present)
{
	size_t df[MAX_QUERY_TERMS] = {0}, n = 0, searched = 0;
	double weight[MAX_QUERY_TERMS], total = 0;

	for (size_t i = 0; i < store_len; i++) {
		if (where && !where_matches(where, &store[i]))
			continue;
		searched++;
		present[i] = words_present(&store[i], t);
		for (size_t k = 0; k < t->n; k++)
			df[k] += (present[i] >> k) & 1;
		if (present[i])
			hits[n++] = (struct hit){i, 0};
	}
	for (size_t k = 0; k < t->n; k++) {
		weight[k] = log(1.0 + ((double)searched + 1.0) / ((double)df[k] + 0.5));
		total += weight[k];
	}
	for (size_t h = 0; h < n; h++) {
		double got = 0;
		for (size_t k = 0; k < t->n; k++)
			if ((present[hits[h].index] >> k) & 1)
				got += weight[k];
		hits[h].score = got / total;
	}
	return n;
}

/* Every record `where` admits, newest first, scored by age: 1 now, halving
 * with each day. The store is in creation order, so no sort is needed. */
static size_t rank_recent(json_t *where, struct hit *hits)
{
	long long now = store_clock_ms();
	size_t n = 0;

	for (size_t i = store_len; i-- > 0;) {
		if (where && !where_matches(where, &store[i]))
			continue;
		double days = (double)(now - store[i].created_ms) / 86400000.0;
		hits[n++] = (struct hit){i, pow(0.5, days > 0 ? days : 0)};
	}
	return n;
}

/* Reads the `where` parameter: absent (NULL) or an object. */
static int get_where(json_t *params, json_t **where, struct error *e)
{
	return get_typed(params, "where", JSON_OBJECT, "an object (§5.2)", where, e);
}

/* §4.3 memory/recall: records ranked by relevance, best first. */
static json_t *memory_recall(json_t *params, struct error *e)
{
	json_t *query, *where, *min_score = json_object_get(params, "min_score"), *out = NULL;
	long long limit = DEFAULT_RECALL_LIMIT;
	struct terms t = {.n = 0};
	struct hit *hits = NULL;
	uint64_t *present = NULL;
	size_t n;

	if (refuse_undeclared_selectors(params, "memory/recall", e) ||
	    get_typed(params, "query", JSON_STRING, "a string", &query, e) ||
	    get_where(params, &where, e) || get_count(params, "limit", &limit, e) < 0)
		return NULL;
	if (min_score && !json_is_number(min_score))
		return fail(e, INVALID_PARAMS, NULL, "min_score must be a number");
	/* §4.3: 0 means "no limit" only for a server without max_recall_limit;
	 * this one has one, so 0 asks for as many as it allows. */
	if (limit == 0)
		limit = MAX_RECALL_LIMIT;
	if (limit > MAX_RECALL_LIMIT)
		return fail(e, QUOTA_EXCEEDED,
			    json_pack("{s:i}", "max_recall_limit", MAX_RECALL_LIMIT),
			    "limit is over max_recall_limit (%d)", MAX_RECALL_LIMIT);

	if (query)
		query_terms(json_string_value(query), json_string_length(query), &t);
	hits = malloc((store_len ? store_len : 1) * sizeof *hits);
	present = malloc((store_len ? store_len : 1) * sizeof *present);
	if (!hits || !present) {
		out_of_memory(e);
		goto done;
	}
	/* §4.3: an absent or empty query (or one with no words in it) is not an
	 * error; it asks for the most useful records, and that is the newest. */
	if (t.n > 0) {
		n = rank_lexical(&t, where, hits, present);
		qsort(hits, n, sizeof *hits, by_score);
	} else {
		n = rank_recent(where, hits);
	}

	json_t *records = json_array();
	out = json_pack("{s:o}", "records", records);
	if (!out) {
		out_of_memory(e);
		goto done;
	}
	for (size_t h = 0; h < n && json_array_size(records) < (size_t)limit; h++) {
		if (min_score && hits[h].score < json_number_value(min_score))
			break; /* scores descend: none after this one qualifies either */
		json_t *r = json_copy(store[hits[h].index].wire);
		if (!r || json_object_set_new(r, "score", json_real(hits[h].score)) ||
		    json_array_append_new(records, r)) {
			json_decref(out);
			out = out_of_memory(e);
			break;
		}
	}
done:
	free(hits);
	free(present);
	return out;
}

/* §4.4 memory/timeline: records in creation order, oldest first; with
 * `limit` the newest `limit` of them, still oldest first. Never ranked:
 * recall and timeline answer different questions (§4.4). */
static json_t *memory_timeline(json_t *params, struct error *e)
{
	json_t *where, *records, *out;
	long long limit = 0;
	size_t first = 0, matched = 0;

	if (refuse_undeclared_selectors(params, "memory/timeline", e) ||
	    get_where(params, &where, e) || get_count(params, "limit", &limit, e) < 0)
		return NULL;

	/* Walk back from the newest to find where the newest `limit` begin. */
	if (limit > 0) {
		for (first = store_len; first > 0 && matched < (unsigned long long)limit; first--)
			if (!where || where_matches(where, &store[first - 1]))
				matched++;
	}
	records = json_array();
	out = json_pack("{s:o}", "records", records);
	if (!out)
		return out_of_memory(e);
	for (size_t i = first; i < store_len; i++) {
		if (where && !where_matches(where, &store[i]))
			continue;
		if (json_array_append(records, store[i].wire)) {
			json_decref(out);
			return out_of_memory(e);
		}
	}
	return out;
}

/* §4.5 memory/forget: deletes the records every given selector admits (ids,
 * query, where: all that are given must hold). A call with no selector is
 * refused, so that emptying the store takes a deliberate request; an empty
 * query or an empty `where` selects everything and so counts as none. */
static json_t *memory_forget(json_t *params, struct error *e)
{
	json_t *ids, *query, *where, *wanted = NULL, *r;
	struct terms t = {.n = 0};
	size_t kept = 0, forgotten = 0;

	if (refuse_undeclared_selectors(params, "memory/forget", e) ||
	    get_typed(params, "ids", JSON_ARRAY, "an array of strings", &ids, e) ||
	    get_typed(params, "query", JSON_STRING, "a string", &query, e) ||
	    get_where(params, &where, e))
		return NULL;
	if (query)
		query_terms(json_string_value(query), json_string_length(query), &t);
	if (where && json_object_size(where) == 0)
		where = NULL;
	if (!ids && t.n == 0 && !where)
		return fail(e, INVALID_PARAMS, NULL,
			    "memory/forget needs a selector: ids, a query with words in it, or a "
			    "non-empty where");
	/* The ids as a set, so each record is looked up rather than compared
	 * with every id. */
	if (ids && !(wanted = json_object()))
		return out_of_memory(e);
	for (size_t i = 0; i < json_array_size(ids); i++) {
		json_t *id = json_array_get(ids, i);
		if (!json_is_string(id)) {
			json_decref(wanted);
			return fail(e, INVALID_PARAMS, NULL, "ids must be an array of strings");
		}
		if (json_object_setn_new(wanted, json_string_value(id), json_string_length(id),
					 json_true())) {
			json_decref(wanted);
			return out_of_memory(e);
		}
	}

	for (size_t i = 0; i < store_len; i++) {
		int chosen = 1;
		if (wanted) {
			json_t *id = json_object_get(store[i].wire, "id");
			chosen = json_object_getn(wanted, json_string_value(id),
						  json_string_length(id)) != NULL;
		}
		if (chosen && t.n > 0)
			chosen = words_present(&store[i], &t) != 0;
		if (chosen && where)
			chosen = where_matches(where, &store[i]);
		if (chosen) {
			store_release(i);
			forgotten++;
		} else {
			store[kept++] = store[i];
		}
	}
	store_len = kept;
	json_decref(wanted);
	r = json_pack("{s:I}", "forgotten", (json_int_t)forgotten);
	return r ? r : out_of_memory(e);
}

/* ------------------------------------------------------------------------
 * 6. The method table
 *
 * Every method A2M 0.1 defines is listed, with the capability it belongs
 * to. Those of capabilities this server does not declare have no handler:
 * they answer CAPABILITY_NOT_SUPPORTED, never METHOD_NOT_FOUND (§2,
 * DECISIONS 002), because a client must be able to tell "ask for something
 * else" from "you have a typo". Anything else is METHOD_NOT_FOUND.
 * ---------------------------------------------------------------------- */

static const struct method {
	const char *name;
	const char *capability;
	json_t *(*handler)(json_t *params, struct error *e);
} methods[] = {
	{"memory/describe", "core", memory_describe},
	{"memory/remember", "core", memory_remember},
	{"memory/recall", "core", memory_recall},
	{"memory/timeline", "core", memory_timeline},
	{"memory/forget", "core", memory_forget},
	{"memory/promote", "tiers", NULL},
	{"memory/consolidate", "tiers", NULL},
	{"memory/reinforce", "salience", NULL},
	{"memory/session/list", "sessions", NULL},
	{"memory/session/close", "sessions", NULL},
	{"memory/fetch", "keys", NULL},
	{"memory/events", "events", NULL},
	{"memory/events/subscribe", "events", NULL},
	{"memory/events/unsubscribe", "events", NULL},
	{"memory/summarize", "summarize", NULL},
};

static json_t *call(json_t *method, json_t *params, struct error *e)
{
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
		if (!is_string(method, methods[i].name))
			continue;
		if (!methods[i].handler)
			return not_declared(e, methods[i].capability, methods[i].name);
		return methods[i].handler(params, e);
	}
	return fail(e, METHOD_NOT_FOUND, NULL, "%s is not an A2M method",
		    json_string_value(method));
}

/* ------------------------------------------------------------------------
 * 7. The JSON-RPC 2.0 envelope
 *
 * A response must carry the request's id unchanged, type and value (DECISIONS
 * 022). jansson holds integers in 64 bits and every other number as a
 * double, so an id like 1.10 or 18446744073709551617 would not survive a
 * parse and a print. This server therefore echoes the id's text exactly as
 * it arrived, found in the raw line by the small scanner below (the line is
 * valid JSON by then: jansson has parsed it).
 * ---------------------------------------------------------------------- */

static int is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* s[i] opens a string; returns the index just past its closing quote. */
static size_t skip_string(const char *s, size_t n, size_t i)
{
	for (i++; i < n && s[i] != '"'; i++)
		if (s[i] == '\\')
			i++;
	return i + 1;
}

/* Returns the index just past the JSON value starting at s[i]. */
static size_t skip_value(const char *s, size_t n, size_t i)
{
	size_t depth = 0;

	if (s[i] == '"')
		return skip_string(s, n, i);
	if (s[i] != '{' && s[i] != '[') { /* number, true, false, null */
		while (i < n && !is_json_space(s[i]) && s[i] != ',' && s[i] != '}' && s[i] != ']')
			i++;
		return i;
	}
	do {
		if (s[i] == '"') {
			i = skip_string(s, n, i);
			continue;
		}
		if (s[i] == '{' || s[i] == '[')
			depth++;
		else if (s[i] == '}' || s[i] == ']')
			depth--;
		i++;
	} while (i < n && depth > 0);
	return i;
}

/* Is the raw JSON string s[a..b) (quotes included) the key "id"? A key may
 * spell its letters as escapes ("\u0069d"), so one with a backslash is
 * decoded first. */
static int key_is_id(const char *s, size_t a, size_t b)
{
	if (!memchr(s + a, '\\', b - a))
		return b - a == 4 && memcmp(s + a, "\"id\"", 4) == 0;
	json_t *k = json_loadb(s + a, b - a, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	int is_id = k && json_string_length(k) == 2 && memcmp(json_string_value(k), "id", 2) == 0;
	json_decref(k);
	return is_id;
}

/* Finds the text of the top-level "id" member of the object in s[0..n). As
 * jansson does, the last of duplicate keys wins. Returns 0 if there is none. */
static int raw_id(const char *s, size_t n, size_t *start, size_t *len)
{
	size_t i = 0;
	int found = 0;

	while (i < n && is_json_space(s[i]))
		i++;
	for (i++; i < n;) { /* just past '{' or ',' */
		while (i < n && is_json_space(s[i]))
			i++;
		if (i >= n || s[i] != '"')
			break; /* '}' of an empty object */
		size_t key = i;
		i = skip_string(s, n, i);
		int is_id = key_is_id(s, key, i);
		while (i < n && (is_json_space(s[i]) || s[i] == ':'))
			i++;
		size_t value = i;
		i = skip_value(s, n, i);
		if (is_id) {
			*start = value;
			*len = i - value;
			found = 1;
		}
		while (i < n && is_json_space(s[i]))
			i++;
		i++; /* ',' or the closing '}' */
	}
	return found;
}

/* Writes a real in the fewest digits that read back as the same double.
 * jansson prints 17 significant digits, so a client's 0.1 would come back as
 * 0.10000000000000001: the same double, but not the text the client sent,
 * and §3.1 wants metadata back unchanged. A whole number keeps its ".0" so a
 * real stays a real. */
static void print_real(double d)
{
	char buf[40];

	if (d == floor(d) && fabs(d) < 1e15) {
		snprintf(buf, sizeof buf, "%.1f", d);
	} else {
		for (int digits = 1; digits <= 17; digits++) {
			snprintf(buf, sizeof buf, "%.*g", digits, d);
			if (strtod(buf, NULL) == d)
				break;
		}
	}
	fputs(buf, stdout);
}

/* Prints JSON text as jansson wrote it, each real through print_real. A
 * number outside a string is a real when it has a '.' or an exponent. */
static void print_json(const char *s)
{
	size_t n = strlen(s), i = 0, j;

	while (i < n) {
		if (s[i] == '"') {
			j = skip_string(s, n, i);
		} else if (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) {
			for (j = i; j < n && strchr("+-.0123456789eE", s[j]); j++)
				;
			if (memchr(s + i, '.', j - i) || memchr(s + i, 'e', j - i) ||
			    memchr(s + i, 'E', j - i)) {
				print_real(strtod(s + i, NULL));
				i = j;
				continue;
			}
		} else {
			j = i + 1;
		}
		fwrite(s + i, 1, j - i, stdout);
		i = j;
	}
}

/* Writes one response line: {"jsonrpc":"2.0","id":ID,"result"|"error":VALUE}.
 * `id` is raw JSON text. A failed write means the client has gone: there is
 * no one left to serve, so the server stops. */
static void reply(const char *id, size_t id_len, const char *member, json_t *value)
{
	char *body = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);

	if (!body) { /* out of memory: answer with what needs no allocation */
		member = "error";
		body = strdup("{\"code\":-32603,\"message\":\"out of memory\"}");
	}
	printf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"%s\":", (int)id_len, id, member);
	print_json(body ? body : "null");
	fputs("}\n", stdout);
	free(body);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: cannot write to stdout: %s\n", SERVER_NAME, strerror(errno));
		exit(1);
	}
}

static void send_error(const char *id, size_t id_len, struct error *e)
{
	json_t *err = json_pack("{s:i, s:s}", "code", e->code, "message", e->message);

	if (err && e->data)
		json_object_set(err, "data", e->data);
	reply(id, id_len, "error", err);
	json_decref(err);
}

/* An error for a message whose id could not be read: the id is null. */
static void refuse(int code, const char *message)
{
	struct error e = {code, "", NULL};

	snprintf(e.message, sizeof e.message, "%s", message);
	send_error("null", 4, &e);
}

/* Handles one line of stdin: one JSON-RPC message (§8). */
static void handle_message(const char *line, size_t len)
{
	json_error_t jerr;
	struct error e = {0, "", NULL};
	json_t *msg, *id, *version, *method, *params, *result = NULL;
	size_t id_at = 0, id_len = 4;
	const char *id_text = "null";
	int inexact = 0;

	msg = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!msg && json_error_code(&jerr) == json_error_numeric_overflow) {
		/* Valid JSON, but an integer wider than 64 bits. Parsed again with
		 * integers as doubles, the envelope can still be read and the id
		 * echoed; the request itself is refused below, since a number
		 * this server cannot keep exactly would not round-trip (§3.1).
		 * (A real beyond a double's range fails both parses: README.) */
		msg = json_loadb(line, len,
				 JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &jerr);
		inexact = 1;
	}
	if (!msg) {
		refuse(PARSE_ERROR, "parse error: not one JSON value");
		return;
	}
	if (!json_is_object(msg)) {
		/* §8: A2M does not use batches, so an array is refused like any
		 * other value that is not a request object. */
		refuse(INVALID_REQUEST, json_is_array(msg) ? "batches are not supported (§8)"
							   : "a request must be a JSON object");
		goto done;
	}
	id = json_object_get(msg, "id");
	if (id && !json_is_string(id) && !json_is_number(id) && !json_is_null(id)) {
		refuse(INVALID_REQUEST, "id must be a string, a number or null");
		goto done;
	}
	if (id && raw_id(line, len, &id_at, &id_len))
		id_text = line + id_at;

	version = json_object_get(msg, "jsonrpc");
	method = json_object_get(msg, "method");
	params = json_object_get(msg, "params");
	if (!is_string(version, "2.0"))
		fail(&e, INVALID_REQUEST, NULL, "jsonrpc must be \"2.0\"");
	else if (!json_is_string(method))
		fail(&e, INVALID_REQUEST, NULL, "method must be a string");
	else if (params && !json_is_object(params) && !json_is_array(params))
		fail(&e, INVALID_REQUEST, NULL, "params must be an object");
	if (e.code) {
		send_error(id_text, id_len, &e); /* invalid: answered even without an id */
		goto done;
	}

	/* Errors from here on belong to the call, not the envelope, so a
	 * notification never hears of them. */
	if (json_is_array(params)) { /* §4: by name; by position is optional */
		fail(&e, INVALID_PARAMS, NULL, "params must be an object (by name)");
	} else if (inexact) {
		fail(&e, INVALID_PARAMS, NULL, "an integer in this request is wider than 64 bits");
	} else {
		json_t *empty = params ? NULL : json_object();
		result = call(method, params ? params : empty, &e);
		json_decref(empty);
	}
	/* A notification (no id) is carried out but never answered. */
	if (id) {
		if (result)
			reply(id_text, id_len, "result", result);
		else
			send_error(id_text, id_len, &e);
	}
done:
	json_decref(result);
	json_decref(e.data);
	json_decref(msg);
}

/* ------------------------------------------------------------------------
 * 8. The stdio transport (§8.2)
 *
 * One message per line. A line is read in pieces with read(2) — stdio's
 * fread would wait for a full buffer while the client waits for an answer —
 * into a buffer that never grows past MAX_MESSAGE_BYTES: a longer line is
 * skipped to its end and answered once, and the server reads on.
 * ---------------------------------------------------------------------- */

struct reader {
	char chunk[65536];
	size_t pos, end;
	char *line;
	size_t len, cap;
	int too_long; /* this line outgrew MAX_MESSAGE_BYTES (or memory) */
};

/* Reads the next line into r->line[0..r->len), without its '\n'. Returns 1
 * for a line (check r->too_long), 0 at the end of stdin. A last line with no
 * '\n' still counts. */
static int read_line(struct reader *r)
{
	r->len = 0;
	r->too_long = 0;
	for (;;) {
		if (r->pos == r->end) {
			ssize_t got = read(STDIN_FILENO, r->chunk, sizeof r->chunk);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				if (got < 0)
					fprintf(stderr, "%s: reading stdin: %s\n", SERVER_NAME,
						strerror(errno));
				return r->len > 0 || r->too_long;
			}
			r->pos = 0;
			r->end = (size_t)got;
		}
		char *start = r->chunk + r->pos;
		char *nl = memchr(start, '\n', r->end - r->pos);
		size_t take = nl ? (size_t)(nl - start) : r->end - r->pos;

		r->pos += take + (nl != NULL);
		if (!r->too_long && r->len + take > MAX_MESSAGE_BYTES)
			r->too_long = 1;
		if (!r->too_long && r->len + take > r->cap) {
			size_t cap = r->cap ? r->cap : 4096;
			while (cap < r->len + take)
				cap *= 2;
			char *grown = realloc(r->line, cap);
			if (grown) {
				r->line = grown;
				r->cap = cap;
			} else {
				r->too_long = 1;
			}
		}
		if (!r->too_long) {
			memcpy(r->line + r->len, start, take);
			r->len += take;
		}
		if (nl)
			return 1;
	}
}

static int is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_json_space(s[i]))
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	static struct reader r;

	if (argc > 1) {
		fprintf(stderr,
			"usage: %s\n"
			"An A2M 0.1 server (core capability, records in memory) on stdin and "
			"stdout.\n",
			argv[0]);
		return strcmp(argv[1], "--help") == 0 ? 0 : 2;
	}
	signal(SIGPIPE, SIG_IGN); /* a vanished client is a failed write, not a signal */
	ids_in_use = json_object();
	if (!ids_in_use) {
		fprintf(stderr, "%s: out of memory\n", SERVER_NAME);
		return 1;
	}

	while (read_line(&r)) {
		if (r.too_long) {
			fprintf(stderr, "%s: refused a line longer than %d bytes\n", SERVER_NAME,
				MAX_MESSAGE_BYTES);
			refuse(QUOTA_EXCEEDED, "message longer than the server accepts (16 MiB)");
		} else if (!is_blank(r.line, r.len)) {
			handle_message(r.line, r.len);
		}
	}

	/* §8.2: end of stdin ends the server, cleanly. */
	while (store_len > 0)
		store_release(--store_len);
	free(store);
	free(r.line);
	json_decref(ids_in_use);
	return 0;
}
