/*
** helpers_records.c — writing records and finding them again
** (conformance.h): the record every write of the suite starts from, with
** its run token and marker; remember and the read-only profile it detects
** (spec §2.1; DECISIONS 001); records picked out of a recall or timeline by
** marker, id or content; and the reads, writes and expectations the core
** groups (check_remember.c, _read.c, _forget.c) share.
*/
#include <stdlib.h>
#include <string.h>

#define A2M_CONFORMANCE_INTERNAL
#include "suite.h"

/* ---- records ---- */

json_t *conf_record(conf_ctx *cx, const char *content, const char *marker)
{
	json_t *meta = json_pack("{s:s}", "cfrun", cx->run);
	if (marker)
		json_object_set_new(meta, "cfm", json_string(marker));
	return json_pack("{s:s,s:o}", "content", content, "metadata", meta);
}

int conf_read_only(conf_ctx *cx)
{
	return cx->read_only;
}

int conf_need_writes(conf_ctx *cx)
{
	if (cx->read_only) {
		conf_skip(cx, "the server is read-only (spec §2.1)");
		return 0;
	}
	return 1;
}

int conf_probe_read_only(conf_ctx *cx)
{
	if (cx->read_only || cx->wrote)
		return cx->read_only;
	json_t *probe = conf_record(cx, "conformance probe: does this server take writes", NULL);
	json_t *resp = conf_call(cx, "memory/remember", json_pack("{s:[o]}", "records", probe));
	int code;
	if (!resp)
		return -1;
	if (conf_error_code(resp, &code) && code == CONF_READ_ONLY)
		cx->read_only = 1;
	else if (json_object_get(resp, "result"))
		cx->wrote = 1;
	else {
		conf_fail(cx, "memory/remember of one plain record answered %s",
			  conf_error_text(cx, resp));
		return -1;
	}
	return cx->read_only;
}

json_t *conf_remember(conf_ctx *cx, json_t *records)
{
	size_t n = json_array_size(records);
	json_t *resp = conf_call(cx, "memory/remember",
				 json_pack("{s:o}", "records", records));
	if (!resp)
		return NULL;
	int code;
	if (conf_error_code(resp, &code) && code == CONF_READ_ONLY) {
		if (cx->wrote) {
			conf_fail(cx, "memory/remember answered -32004 after accepting "
				  "earlier writes: a read-only server must refuse all "
				  "of them (spec §2.1)");
			return NULL;
		}
		cx->read_only = 1;
		conf_skip(cx, "the server is read-only (spec §2.1)");
		return NULL;
	}
	json_t *result = json_object_get(resp, "result");
	if (!result) {
		conf_fail(cx, "memory/remember answered %s, expected a result",
			  conf_error_text(cx, resp));
		return NULL;
	}
	if (cx->read_only) {
		conf_fail(cx, "memory/remember accepted a write after refusing one "
			  "with -32004 (spec §2.1)");
		return NULL;
	}
	cx->wrote = 1;
	json_t *ids = json_object_get(result, "ids");
	if (!json_is_array(ids) || json_array_size(ids) != n) {
		conf_fail(cx, "memory/remember of %zu record(s) returned ids %s", n,
			  conf_show(cx, ids));
		return NULL;
	}
	size_t i;
	json_t *id;
	json_array_foreach(ids, i, id) {
		if (!json_is_string(id) || json_string_length(id) == 0) {
			conf_fail(cx, "memory/remember returned an id that is not a "
				  "non-empty string: %s", conf_show(cx, id));
			return NULL;
		}
	}
	return ids;
}

static int content_has(const json_t *rec, const char *text)
{
	const char *content = json_string_value(json_object_get(rec, "content"));
	return content && strstr(content, text);
}

json_t *conf_by_content(const json_t *records, const char *text)
{
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		if (content_has(rec, text))
			return rec;
	}
	return NULL;
}

json_t *conf_by_id(const json_t *records, const char *id)
{
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		const char *got = json_string_value(json_object_get(rec, "id"));
		if (got && strcmp(got, id) == 0)
			return rec;
	}
	return NULL;
}

/* Whether id (a JSON string) is one of ids. */
int conf_among(const json_t *ids, const json_t *id)
{
	size_t i;
	json_t *v;
	json_array_foreach(ids, i, v) {
		if (json_equal(v, id))
			return 1;
	}
	return 0;
}

/* The "records" array of a recall or timeline result, or NULL after failing. */
static json_t *records_of(conf_ctx *cx, const char *method, json_t *result)
{
	json_t *records = json_object_get(result, "records");
	if (!json_is_array(records)) {
		conf_fail(cx, "%s returned no records array: %s", method, conf_show(cx, result));
		return NULL;
	}
	return records;
}

json_t *conf_find(conf_ctx *cx, const char *marker)
{
	int64_t limit = 100;
	if (cx->limits.max_recall_limit && cx->limits.max_recall_limit < limit)
		limit = cx->limits.max_recall_limit;
	json_t *result = conf_result(cx, "memory/recall",
				     json_pack("{s:s,s:I}", "query", marker, "limit",
					       (json_int_t)limit));
	json_t *records = result ? records_of(cx, "memory/recall", result) : NULL;
	if (!records)
		return NULL;
	json_t *found = conf_keep(cx, json_array());
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		if (content_has(rec, marker))
			json_array_append(found, rec);
	}
	return found;
}

json_t *conf_timeline_of(conf_ctx *cx, const char *marker)
{
	json_t *result = conf_result(cx, "memory/timeline",
				     json_pack("{s:{s:s}}", "where", "cfm", marker));
	json_t *records = result ? records_of(cx, "memory/timeline", result) : NULL;
	if (!records)
		return NULL;
	json_t *found = conf_keep(cx, json_array());
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		json_t *cfm = json_object_get(json_object_get(rec, "metadata"), "cfm");
		if (json_is_string(cfm) && strcmp(json_string_value(cfm), marker) == 0)
			json_array_append(found, rec);
	}
	return found;
}

/* ---- what the core groups write and read with ---- */

/* memory/recall with params (stolen); its records, or NULL after failing. */
json_t *conf_recall(conf_ctx *cx, json_t *params)
{
	json_t *result = conf_result(cx, "memory/recall", params);
	return result ? records_of(cx, "memory/recall", result) : NULL;
}

json_t *conf_timeline(conf_ctx *cx, json_t *params)
{
	json_t *result = conf_result(cx, "memory/timeline", params);
	return result ? records_of(cx, "memory/timeline", result) : NULL;
}

/* The records carrying metadata cfm = marker, in the order given. */
json_t *conf_tagged(conf_ctx *cx, const json_t *records, const char *marker)
{
	json_t *out = conf_keep(cx, json_array());
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec) {
		const char *cfm = conf_str_of(json_object_get(rec, "metadata"), "cfm");
		if (cfm && strcmp(cfm, marker) == 0)
			json_array_append(out, rec);
	}
	return out;
}

/* Writes texts[0..n) in one batch, each conf_tagged with cfm; returns the ids. */
json_t *conf_write_batch(conf_ctx *cx, const char *cfm, const char *const *texts, size_t n)
{
	json_t *records = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(records, conf_record(cx, texts[i], cfm));
	return conf_remember(cx, records);
}

/* Writes texts one call each, a tick apart, so their created_at differ. */
json_t *conf_write_each(conf_ctx *cx, const char *cfm, const char *const *texts, size_t n)
{
	json_t *ids = conf_keep(cx, json_array());
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			conf_tick();
		json_t *one = conf_write_batch(cx, cfm, &texts[i], 1);
		if (!one)
			return NULL;
		json_array_append(ids, json_array_get(one, 0));
	}
	return ids;
}

/* Whether the contents of records are, in order, exactly texts[0..n). */
int conf_contents_are(conf_ctx *cx, const char *what, const json_t *records,
			const char *const *texts, size_t n)
{
	int same = json_array_size(records) == n;
	for (size_t i = 0; same && i < n; i++) {
		const char *c = conf_str_of(json_array_get(records, i), "content");
		same = c && strcmp(c, texts[i]) == 0;
	}
	if (same)
		return 1;
	json_t *got = conf_keep(cx, json_array());
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec)
		json_array_append(got, json_object_get(rec, "content"));
	json_t *want = conf_keep(cx, json_array());
	for (i = 0; i < n; i++)
		json_array_append_new(want, json_string(texts[i]));
	conf_fail(cx, "%s: got %s, expected %s", what, conf_show(cx, got), conf_show(cx, want));
	return 0;
}

int conf_expect_count(conf_ctx *cx, const char *what, const json_t *records, size_t n)
{
	if (records && json_array_size(records) == n)
		return 1;
	if (records)
		conf_fail(cx, "%s: %zu record(s), expected %zu", what, json_array_size(records), n);
	return 0;
}
