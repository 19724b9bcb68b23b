/*
** check_remember.c — the core/remember group: memory/remember
** (spec §4.2) and the record it stores (§3.1–§3.3): ids, client ids and
** idempotence, atomic batches, metadata that round-trips exactly, the
** limits of describe, timestamps and roles.
**
** Each check writes its own records, tagged with a fresh marker, and finds
** them again by it; nothing here relies on the store being empty or on
** what an earlier check left behind. Where a check needs records with
** distinct creation times it writes them in separate calls a few
** milliseconds apart (conf_tick); where it needs equal ones it writes one
** batch.
*/
#include <stdlib.h>
#include <string.h>

#include "suite.h"

/* ---- core/remember (spec §4.2, §3.1–§3.3) ---- */

static void check_remember_ids(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *texts[] = {conf_str(cx, "%s first alpha", m), conf_str(cx, "%s second bravo", m),
			       conf_str(cx, "%s third charlie", m)};
	json_t *ids = conf_write_batch(cx, m, texts, 3);
	if (!ids)
		return;
	for (size_t i = 0; i < 3; i++) {
		for (size_t j = i + 1; j < 3; j++) {
			if (json_equal(json_array_get(ids, i), json_array_get(ids, j))) {
				conf_fail(cx, "records %zu and %zu got the same id %s", i, j,
					  conf_show(cx, json_array_get(ids, i)));
				return;
			}
		}
	}
	json_t *found = conf_find(cx, m);
	if (!found)
		return;
	for (size_t i = 0; i < 3; i++) {
		const char *id = json_string_value(json_array_get(ids, i));
		json_t *rec = conf_by_id(found, id);
		if (!rec) {
			conf_fail(cx, "id %s (record %zu) is not found by recall", id, i);
			return;
		}
		if (strcmp(conf_str_of(rec, "content") ? conf_str_of(rec, "content") : "", texts[i]) != 0) {
			conf_fail(cx, "ids[%zu] names the record %s, not record %zu", i,
				  conf_show(cx, json_object_get(rec, "content")), i);
			return;
		}
	}
	conf_pass(cx);
}

/* A remember whose params (JSON text) must be refused with -32602. */
static void check_remember_refused(conf_ctx *cx, const void *arg)
{
	if (!conf_need_writes(cx))
		return;
	json_t *params = conf_json(cx, arg);
	if (params && conf_expect_error(cx, "memory/remember", json_incref(params),
					CONF_INVALID_PARAMS, 0))
		conf_pass(cx);
}

/* A single record (JSON text after the marker's content) that must be
** refused with -32602, and leave nothing behind. */
static void check_record_refused(conf_ctx *cx, const void *arg)
{
	if (!conf_need_writes(cx))
		return;
	const char *m = conf_marker(cx);
	json_t *extra = conf_json(cx, arg);
	if (!extra)
		return;
	json_t *rec = conf_record(cx, conf_str(cx, "%s refused", m), m);
	json_object_update(rec, extra);
	if (!conf_expect_error(cx, "memory/remember", json_pack("{s:[o]}", "records", rec),
			       CONF_INVALID_PARAMS, 0))
		return;
	json_t *found = conf_find(cx, m);
	if (found && conf_expect_count(cx, "records written anyway", found, 0))
		conf_pass(cx);
}

static void check_remember_client_id(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *id = conf_str(cx, "client-chosen/%s:1", m);
	json_t *rec = conf_record(cx, conf_str(cx, "%s with my own id", m), m);
	json_object_set_new(rec, "id", json_string(id));
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	if (!ids)
		return;
	const char *got = json_string_value(json_array_get(ids, 0));
	if (strcmp(got, id) != 0) {
		conf_fail(cx, "returned id \"%s\" for client id \"%s\"", got, id);
		return;
	}
	json_t *found = conf_find(cx, m);
	if (found && !conf_by_id(found, id))
		conf_fail(cx, "recall does not return the record under id \"%s\"", id);
	else if (found)
		conf_pass(cx);
}

/* Spec §3.2, DECISIONS 011: a client id makes the write idempotent. */
static void check_remember_idempotent(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *id = conf_str(cx, "retry-%s", m);
	const char *text = conf_str(cx, "%s written twice", m);
	for (int attempt = 0; attempt < 2; attempt++) {
		json_t *rec = conf_record(cx, text, m);
		json_object_set_new(rec, "id", json_string(id));
		json_t *ids = conf_remember(cx, json_pack("[o]", rec));
		if (!ids)
			return;
		if (strcmp(json_string_value(json_array_get(ids, 0)), id) != 0) {
			conf_fail(cx, "write %d returned %s, expected \"%s\"", attempt + 1,
				  conf_show(cx, json_array_get(ids, 0)), id);
			return;
		}
	}
	json_t *found = conf_find(cx, m);
	if (!conf_expect_count(cx, "recall after writing one id twice", found, 1))
		return;
	json_t *line = conf_timeline_of(cx, m);
	if (conf_expect_count(cx, "timeline after writing one id twice", line, 1))
		conf_pass(cx);
}

static void check_remember_same_id_in_batch(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *id = conf_str(cx, "twin-%s", m);
	const char *text = conf_str(cx, "%s sent twice in one batch", m);
	json_t *a = conf_record(cx, text, m), *b = conf_record(cx, text, m);
	json_object_set_new(a, "id", json_string(id));
	json_object_set_new(b, "id", json_string(id));
	json_t *ids = conf_remember(cx, json_pack("[o,o]", a, b));
	if (!ids)
		return;
	for (size_t i = 0; i < 2; i++) {
		if (strcmp(json_string_value(json_array_get(ids, i)), id) != 0) {
			conf_fail(cx, "ids are %s, expected [\"%s\",\"%s\"]", conf_show(cx, ids),
				  id, id);
			return;
		}
	}
	json_t *found = conf_find(cx, m);
	if (conf_expect_count(cx, "recall", found, 1))
		conf_pass(cx);
}

/* Spec §4.2: a batch SHOULD be atomic and MUST NOT return partial ids. */
static void check_remember_atomic(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_need_writes(cx))
		return;
	const char *m = conf_marker(cx);
	const char *words[5];
	json_t *records = json_array();
	for (size_t i = 0; i < 5; i++) {
		words[i] = conf_marker(cx);
		json_t *rec = conf_record(cx, conf_str(cx, "%s %s batch member", words[i], m), m);
		if (i == 2)
			json_object_set_new(rec, "content", json_integer(42));
		json_array_append_new(records, rec);
	}
	if (!conf_expect_error(cx, "memory/remember", json_pack("{s:o}", "records", records),
			       CONF_INVALID_PARAMS, 0))
		return;
	for (size_t i = 0; i < 5; i++) {
		if (i == 2)
			continue;
		json_t *found = conf_find(cx, words[i]);
		if (!found)
			return;
		if (json_array_size(found) > 0) {
			conf_fail(cx, "record %zu of the refused batch was written", i);
			return;
		}
	}
	json_t *line = conf_timeline_of(cx, m);
	if (conf_expect_count(cx, "timeline of the refused batch", line, 0))
		conf_pass(cx);
}

/*
** Spec §3.1: metadata round-trips unchanged. Compared strictly: the same
** keys in the same order, integers exact, reals as the same double, strings
** byte for byte. Sets *why on the first difference.
*/
static int same_json(conf_ctx *cx, const json_t *want, const json_t *got, const char *path,
		     const char **why)
{
	int same;
	switch (json_typeof(want)) {
	case JSON_INTEGER:
		same = json_is_integer(got) && json_integer_value(got) == json_integer_value(want);
		break;
	case JSON_REAL:
		same = json_is_number(got) && json_number_value(got) == json_real_value(want);
		break;
	case JSON_STRING:
		same = json_is_string(got) && json_string_length(got) == json_string_length(want) &&
		       memcmp(json_string_value(got), json_string_value(want),
			      json_string_length(want)) == 0;
		break;
	case JSON_ARRAY:
		if (!json_is_array(got) || json_array_size(got) != json_array_size(want)) {
			same = 0;
			break;
		}
		for (size_t i = 0; i < json_array_size(want); i++) {
			if (!same_json(cx, json_array_get(want, i), json_array_get(got, i),
				       conf_str(cx, "%s[%zu]", path, i), why))
				return 0;
		}
		return 1;
	case JSON_OBJECT: {
		if (!json_is_object(got) || json_object_size(got) != json_object_size(want)) {
			same = 0;
			break;
		}
		void *w = json_object_iter((json_t *)want), *g = json_object_iter((json_t *)got);
		for (; w && g; w = json_object_iter_next((json_t *)want, w),
			       g = json_object_iter_next((json_t *)got, g)) {
			const char *wk = json_object_iter_key(w), *gk = json_object_iter_key(g);
			if (strcmp(wk, gk) != 0) {
				*why = conf_str(cx, "%s: key \"%s\" where \"%s\" was sent "
						"(keys reordered or renamed)", path, gk, wk);
				return 0;
			}
			if (!same_json(cx, json_object_iter_value(w), json_object_iter_value(g),
				       conf_str(cx, "%s.%s", path, wk), why))
				return 0;
		}
		return 1;
	}
	default: /* true, false, null */
		same = got && json_typeof(got) == json_typeof(want);
		break;
	}
	if (!same)
		*why = conf_str(cx, "%s: sent %s, got %s", path, conf_show(cx, want),
				got ? conf_show(cx, got) : "(absent)");
	return same;
}

/* Writes one record with this metadata (JSON text, after cfrun and cfm)
** and checks it comes back identical. */
static void round_trip_metadata(conf_ctx *cx, const char *fields)
{
	const char *m = conf_marker(cx);
	json_t *meta = conf_json(cx, conf_str(cx, "{\"cfrun\":\"%s\",\"cfm\":\"%s\",%s}",
					      conf_run_token(cx), m, fields));
	if (!meta)
		return;
	json_t *rec = json_pack("{s:s,s:O}", "content", conf_str(cx, "%s metadata", m),
				"metadata", meta);
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	json_t *found = ids ? conf_find(cx, m) : NULL;
	if (!conf_expect_count(cx, "recall", found, 1))
		return;
	const char *why = NULL;
	json_t *got = json_object_get(json_array_get(found, 0), "metadata");
	if (same_json(cx, meta, got, "metadata", &why))
		conf_pass(cx);
	else
		conf_fail(cx, "%s", why);
}

static void check_metadata_round_trip(conf_ctx *cx, const void *arg)
{
	(void)arg;
	round_trip_metadata(cx,
		"\"zeta\":1,\"alpha\":{\"nested\":[1,\"two\",{\"three\":3.5}],"
		"\"empty_object\":{},\"empty_array\":[]},"
		"\"città\":\"東京\",\"emoji\":\"🦉 owl 👩‍💻\","
		"\"big\":9007199254740993,\"negative_big\":-9007199254740993,"
		"\"tenth\":0.1,\"tiny\":1e-7,\"pi\":3.141592653589793,"
		"\"yes\":true,\"no\":false,\"nothing\":null,"
		"\"mixed\":[null,true,false,0,-1,\"\",{},[]],"
		"\"escapes\":\"quote \\\" backslash \\\\ newline \\n tab \\t\","
		"\"b\":\"b is sent after a\",\"a\":\"and must stay before b\"");
}

static void check_metadata_nul(conf_ctx *cx, const void *arg)
{
	(void)arg;
	round_trip_metadata(cx, "\"with_nul\":\"before\\u0000after\"");
}

static void check_remember_tier_gated(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (conf_has_capability(cx, "tiers")) {
		conf_skip(cx, "the server declares \"tiers\"");
		return;
	}
	if (!conf_need_writes(cx))
		return;
	const char *m = conf_marker(cx);
	json_t *rec = conf_record(cx, conf_str(cx, "%s placed in a tier", m), m);
	json_object_set_new(rec, "tier", json_string("episodic"));
	if (!conf_expect_error(cx, "memory/remember", json_pack("{s:[o]}", "records", rec),
			       CONF_CAPABILITY_NOT_SUPPORTED, 0))
		return;
	json_t *found = conf_find(cx, m);
	if (conf_expect_count(cx, "records written anyway", found, 0))
		conf_pass(cx);
}

/* Spec §2, DECISIONS 012: what a server does not recognise, it ignores. */
static void check_remember_unknown_fields(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	json_t *rec = conf_record(cx, conf_str(cx, "%s from a future client", m), m);
	json_object_set_new(rec, "zz_future_field", json_pack("{s:i}", "x", 1));
	json_t *result = conf_result(cx, "memory/remember",
				     json_pack("{s:[o],s:b}", "records", rec, "zz_future_param", 1));
	if (!result)
		return;
	json_t *found = conf_find(cx, m);
	if (conf_expect_count(cx, "recall", found, 1))
		conf_pass(cx);
}

/* Spec §4.2: fields of undeclared capabilities are ignored, except tier. */
static void check_remember_undeclared_fields(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const struct {
		const char *cap, *field, *value;
	} fields[] = {
		{"salience", "salience", "0.5"},
		{"scopes", "owner", "\"someone\""},
		{"sessions", "session", "\"a-session\""},
		{"keys", "key", "\"conformance/key\""},
		{"embeddings", "embedding", "[0.1,0.2,0.3]"},
		{"external", "uri", "\"https://example.com/doc\""},
		{"external", "media_type", "\"text/plain\""},
		/* Our extension (docs/PROTOCOL.md): a time long past, which a
		** server honouring it without declaring it would hide behind. */
		{"x-expiry", "expires_at", "\"2001-01-01T00:00:00.000Z\""},
	};
	const char *m = conf_marker(cx);
	json_t *rec = conf_record(cx, conf_str(cx, "%s with fields it may not know", m), m);
	size_t added = 0;
	for (size_t i = 0; i < CONF_COUNT(fields); i++) {
		if (!conf_has_capability(cx, fields[i].cap)) {
			json_object_set(rec, fields[i].field, conf_json(cx, fields[i].value));
			added++;
		}
	}
	if (added == 0) {
		json_decref(rec);
		conf_skip(cx, "the server declares every capability with a record field");
		return;
	}
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	json_t *found = ids ? conf_find(cx, m) : NULL;
	if (conf_expect_count(cx, "recall", found, 1))
		conf_pass(cx);
}

/* The largest limit a check will actually send. */
#define MAX_SENT_RECORDS 100000
#define MAX_SENT_CHARS ((int64_t)64 << 20)

static void check_remember_max_records(conf_ctx *cx, const void *arg)
{
	(void)arg;
	int64_t max = conf_server_limits(cx)->max_records_per_call;
	if (max == 0) {
		conf_skip(cx, "describe declares no max_records_per_call");
		return;
	}
	if (max > MAX_SENT_RECORDS) {
		conf_skip(cx, "max_records_per_call %lld is too large to send", (long long)max);
		return;
	}
	if (!conf_need_writes(cx))
		return;
	conf_set_timeout(cx, CONF_HEAVY_TIMEOUT_MS);
	const char *m = conf_marker(cx);
	json_t *records = json_array();
	for (int64_t i = 0; i <= max; i++)
		json_array_append_new(records, conf_record(cx, m, NULL));
	if (!conf_expect_error(cx, "memory/remember", json_pack("{s:o}", "records", records),
			       CONF_INVALID_PARAMS, CONF_QUOTA_EXCEEDED))
		return;
	json_t *found = conf_find(cx, m);
	if (conf_expect_count(cx, "records written anyway", found, 0))
		conf_pass(cx);
}

/* A string of exactly chars code points: the marker, a space, then "é"s,
** two bytes each, so a server counting bytes is caught. */
static char *text_of_length(const char *marker, int64_t chars)
{
	size_t mlen = strlen(marker);
	if (chars < (int64_t)mlen + 1)
		return NULL;
	size_t fill = (size_t)(chars - (int64_t)mlen - 1);
	char *s = malloc(mlen + 1 + 2 * fill + 1);
	if (!s)
		return NULL;
	memcpy(s, marker, mlen);
	s[mlen] = ' ';
	char *p = s + mlen + 1;
	for (size_t i = 0; i < fill; i++) {
		*p++ = (char)0xc3;
		*p++ = (char)0xa9;
	}
	*p = '\0';
	return s;
}

/* Writes content of the limit plus over characters; the arg is over. */
static void check_remember_content_length(conf_ctx *cx, const void *arg)
{
	int64_t over = *(const int64_t *)arg;
	int64_t max = conf_server_limits(cx)->max_content_length;
	if (max == 0) {
		conf_skip(cx, "describe declares no max_content_length");
		return;
	}
	if (max > MAX_SENT_CHARS) {
		conf_skip(cx, "max_content_length %lld is too large to send", (long long)max);
		return;
	}
	if (!conf_need_writes(cx))
		return;
	conf_set_timeout(cx, CONF_HEAVY_TIMEOUT_MS);
	const char *m = conf_marker(cx);
	char *text = text_of_length(m, max + over);
	if (!text) {
		conf_skip(cx, "max_content_length %lld is shorter than a marker", (long long)max);
		return;
	}
	json_t *rec = conf_record(cx, text, m);
	free(text);
	if (over > 0) {
		if (!conf_expect_error(cx, "memory/remember", json_pack("{s:[o]}", "records", rec),
				       CONF_INVALID_PARAMS, CONF_QUOTA_EXCEEDED))
			return;
		json_t *found = conf_find(cx, m);
		if (conf_expect_count(cx, "records written anyway", found, 0))
			conf_pass(cx);
		return;
	}
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	if (!ids)
		return;
	/* Do not leave a record this size for later recalls to carry. */
	conf_call(cx, "memory/forget", json_pack("{s:O}", "ids", ids));
	conf_pass(cx);
}

static const int64_t one_over = 1, exactly = 0;

static void check_remember_created_at(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *text = conf_str(cx, "%s timestamped", m);
	int64_t before = conf_now_ms();
	json_t *ids = conf_write_batch(cx, m, &text, 1);
	json_t *found = ids ? conf_find(cx, m) : NULL;
	if (!conf_expect_count(cx, "recall", found, 1))
		return;
	json_t *at = json_object_get(json_array_get(found, 0), "created_at");
	int64_t ms;
	if (!conf_is_wire_timestamp(json_string_value(at))) {
		conf_fail(cx, "created_at is %s, expected YYYY-MM-DDTHH:MM:SS.mmmZ",
			  conf_show(cx, at));
		return;
	}
	if (conf_parse_time(json_string_value(at), &ms) != 0 || ms < before - 60000 ||
	    ms > conf_now_ms() + 60000) {
		conf_fail(cx, "created_at %s is not within a minute of now", json_string_value(at));
		return;
	}
	conf_pass(cx);
}

static void check_remember_roles(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const char *const roles[] = {"user", "assistant", "tool", "system", "memory",
					    "narrator"};
	const char *m = conf_marker(cx);
	json_t *records = json_array();
	const char *words[CONF_COUNT(roles)];
	for (size_t i = 0; i < CONF_COUNT(roles); i++) {
		words[i] = conf_marker(cx);
		json_t *rec = conf_record(cx, conf_str(cx, "%s %s spoke", m, words[i]), m);
		json_object_set_new(rec, "role", json_string(roles[i]));
		json_array_append_new(records, rec);
	}
	json_t *ids = conf_remember(cx, records);
	json_t *found = ids ? conf_find(cx, m) : NULL;
	if (!conf_expect_count(cx, "recall", found, CONF_COUNT(roles)))
		return;
	for (size_t i = 0; i < CONF_COUNT(roles); i++) {
		json_t *rec = conf_by_content(found, words[i]);
		const char *role = conf_str_of(rec, "role");
		if (!role || strcmp(role, roles[i]) != 0) {
			conf_fail(cx, "role \"%s\" came back as %s", roles[i],
				  conf_show(cx, json_object_get(rec, "role")));
			return;
		}
	}
	conf_pass(cx);
}

static void check_remember_content_exact(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	const char *text = conf_str(cx, "%s line one\nline two\t\"quoted\" \\ città 東京 🦉 "
				    "\xe2\x80\xa8 end", m);
	json_t *ids = conf_write_batch(cx, m, &text, 1);
	json_t *found = ids ? conf_find(cx, m) : NULL;
	if (!conf_expect_count(cx, "recall", found, 1))
		return;
	const char *got = conf_str_of(json_array_get(found, 0), "content");
	if (!got || strcmp(got, text) != 0)
		conf_fail(cx, "content came back as %s",
			  conf_show(cx, json_object_get(json_array_get(found, 0), "content")));
	else
		conf_pass(cx);
}

static const conf_check remember_checks[] = {
	{"returns one distinct string id per record, in order", check_remember_ids, NULL},
	{"content null is -32602", check_record_refused, "{\"content\":null}"},
	{"content as a number is -32602", check_record_refused, "{\"content\":42}"},
	{"content as an object is -32602", check_record_refused, "{\"content\":{\"text\":\"x\"}}"},
	{"content missing is -32602", check_remember_refused,
	 "{\"records\":[{\"role\":\"user\",\"metadata\":{\"k\":1}}]}"},
	{"records missing is -32602", check_remember_refused, "{}"},
	{"records not an array is -32602", check_remember_refused,
	 "{\"records\":{\"content\":\"not in an array\"}}"},
	{"records empty is -32602", check_remember_refused, "{\"records\":[]}"},
	{"a record that is not an object is -32602", check_remember_refused,
	 "{\"records\":[\"just a string\"]}"},
	{"metadata as a string is -32602", check_record_refused, "{\"metadata\":\"x\"}"},
	{"metadata as an array is -32602", check_record_refused, "{\"metadata\":[1,2]}"},
	{"a client-supplied id is returned as-is", check_remember_client_id, NULL},
	{"writing a client id again returns it and adds no record", check_remember_idempotent,
	 NULL},
	{"one client id twice in a batch is one record", check_remember_same_id_in_batch, NULL},
	{"a batch with an invalid third record writes nothing", check_remember_atomic, NULL},
	{"metadata round-trips exactly", check_metadata_round_trip, NULL},
	{"metadata strings holding U+0000 round-trip", check_metadata_nul, NULL},
	{"tier without the tiers capability is -32003", check_remember_tier_gated, NULL},
	{"unknown record fields and params are ignored", check_remember_unknown_fields, NULL},
	{"fields of undeclared capabilities are ignored", check_remember_undeclared_fields,
	 NULL},
	{"more than max_records_per_call records is refused", check_remember_max_records, NULL},
	{"content over max_content_length is refused, nothing written",
	 check_remember_content_length, &one_over},
	{"content of exactly max_content_length is accepted", check_remember_content_length,
	 &exactly},
	{"created_at is RFC 3339 UTC with milliseconds, and recent", check_remember_created_at,
	 NULL},
	{"role round-trips", check_remember_roles, NULL},
	{"content round-trips exactly", check_remember_content_exact, NULL},
};

const conf_group conf_group_remember = {"core/remember", NULL, remember_checks,
					CONF_COUNT(remember_checks), 0};
