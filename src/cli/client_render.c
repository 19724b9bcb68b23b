/*
** client_render.c — A2M results as text, for a terminal and for a model (see
** client_render.h).
**
** Nothing here talks to a server or decides anything: each function takes a
** result object exactly as the protocol returned it and tolerates fields it
** does not know and fields that are missing (spec §2: a client must tolerate
** unrecognised record fields), so a result from another implementation
** renders as well as one from ours.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/client_render.h"
#include "util/json_write.h"

/* ---- the buffer ---- */

void cli_buf_json(a2m_buf *b, const json_t *v)
{
	size_t n;
	char *text = a2m_json_write(v, &n);
	if (!text) {
		b->failed = 1;
		return;
	}
	a2m_buf_put(b, text, n);
	free(text);
}

/* ---- small readers that tolerate anything ---- */

/* The string at key, or NULL when it is absent, null or not a string. */
static const char *str_of(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Display width of UTF-8 text, counted in code points: close enough for
** aligning columns of ids, names and roles. */
static size_t width_of(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			w++;
	return w;
}

static void pad(a2m_buf *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a2m_buf_put(b, " ", 1);
}

/* s, then spaces up to width. */
static void cell(a2m_buf *b, const char *s, size_t width)
{
	a2m_buf_puts(b, s);
	size_t w = width_of(s);
	pad(b, width > w ? width - w : 0);
}

/* Text on one line: every control character (newlines, tabs) becomes a
** space, so one record stays one row. */
static void one_line(a2m_buf *b, const char *s)
{
	const char *run = s;
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f) {
			a2m_buf_put(b, run, (size_t)(s - run));
			a2m_buf_put(b, " ", 1);
			run = s + 1;
		}
	}
	a2m_buf_puts(b, run);
}

/* Text with every line after the first indented, for a block under a
** numbered item. Carriage returns are dropped. */
static void indented(a2m_buf *b, const char *s, const char *indent)
{
	for (; *s; s++) {
		if (*s == '\r')
			continue;
		a2m_buf_put(b, s, 1);
		if (*s == '\n' && s[1])
			a2m_buf_puts(b, indent);
	}
}

/* A scalar as short text: strings bare, everything else as JSON. */
static void scalar(a2m_buf *b, const json_t *v)
{
	if (json_is_string(v))
		one_line(b, json_string_value(v));
	else
		cli_buf_json(b, v);
}

/* ---- tables of records ---- */

/* The columns the long form may add, in order. */
static const char *const long_columns[] = {"id", "tier", "key", "session"};
#define N_LONG (sizeof long_columns / sizeof long_columns[0])

void cli_render_table(a2m_buf *b, const json_t *records, enum cli_records_style style,
		      int long_form)
{
	size_t n = json_array_size(records);
	size_t role_w = 1, col_w[N_LONG] = {0};
	for (size_t i = 0; i < n; i++) {
		const json_t *r = json_array_get(records, i);
		const char *role = str_of(r, "role");
		if (role && width_of(role) > role_w)
			role_w = width_of(role);
		for (size_t c = 0; long_form && c < N_LONG; c++) {
			const char *v = str_of(r, long_columns[c]);
			if (v && width_of(v) > col_w[c])
				col_w[c] = width_of(v);
		}
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *r = json_array_get(records, i);
		if (style == CLI_RECORDS_RECALL) {
			const json_t *score = json_object_get(r, "score");
			if (json_is_number(score))
				a2m_buf_printf(b, "%.3f  ", json_number_value(score));
			else
				a2m_buf_puts(b, "    -  ");
		} else {
			const char *at = str_of(r, "created_at");
			/* RFC 3339 with milliseconds is 24 characters (spec §3.3). */
			cell(b, at ? at : "-", 24);
			a2m_buf_puts(b, "  ");
			const char *role = str_of(r, "role");
			cell(b, role ? role : "-", role_w);
			a2m_buf_puts(b, "  ");
		}
		for (size_t c = 0; long_form && c < N_LONG; c++) {
			if (!col_w[c])
				continue; /* no record has this field */
			const char *v = str_of(r, long_columns[c]);
			cell(b, v ? v : "-", col_w[c] > 1 ? col_w[c] : 1);
			a2m_buf_puts(b, "  ");
		}
		/* An external record says where the real thing is (spec §3.8):
		** a corpus's chunk, its file and lines. */
		const char *uri = str_of(r, "uri");
		if (uri) {
			a2m_buf_puts(b, uri);
			a2m_buf_puts(b, "  ");
		}
		const char *content = str_of(r, "content");
		one_line(b, content ? content : "");
		a2m_buf_puts(b, "\n");
	}
}

void cli_render_record(a2m_buf *b, const json_t *record, int long_form)
{
	if (long_form) {
		const char *key;
		json_t *v;
		int first = 1;
		json_object_foreach((json_t *)record, key, v) {
			if (strcmp(key, "content") == 0 || json_is_null(v))
				continue;
			a2m_buf_printf(b, "%s%s=", first ? "" : "  ", key);
			scalar(b, v);
			first = 0;
		}
		a2m_buf_puts(b, "\n");
	}
	const char *content = str_of(record, "content");
	a2m_buf_puts(b, content ? content : "");
	a2m_buf_puts(b, "\n");
}

/* ---- describe ---- */

static void string_list(a2m_buf *b, const json_t *a)
{
	for (size_t i = 0; i < json_array_size(a); i++) {
		if (i)
			a2m_buf_puts(b, ", ");
		scalar(b, json_array_get(a, i));
	}
}

/* An integer field of a tier as text, "-" when absent or null. */
static void int_text(const json_t *o, const char *key, char out[32])
{
	const json_t *v = json_object_get(o, key);
	if (json_is_integer(v))
		snprintf(out, 32, "%lld", (long long)json_integer_value(v));
	else
		snprintf(out, 32, "-");
}

static void render_tiers(a2m_buf *b, const json_t *tiers)
{
	size_t n = json_array_size(tiers);
	size_t name_w = 4, kind_w = 4;
	for (size_t i = 0; i < n; i++) {
		const char *name = str_of(json_array_get(tiers, i), "name");
		const char *kind = str_of(json_array_get(tiers, i), "kind");
		if (name && width_of(name) > name_w)
			name_w = width_of(name);
		if (kind && width_of(kind) > kind_w)
			kind_w = width_of(kind);
	}
	a2m_buf_puts(b, "tiers:\n  ");
	cell(b, "NAME", name_w);
	a2m_buf_puts(b, "  ");
	cell(b, "KIND", kind_w);
	a2m_buf_puts(b, "  COUNT  CAPACITY      SPILL_TO  PROMOTE_TO\n");
	for (size_t i = 0; i < n; i++) {
		const json_t *t = json_array_get(tiers, i);
		const char *name = str_of(t, "name"), *kind = str_of(t, "kind");
		char count[32], cap[48], capn[32];
		int_text(t, "count", count);
		int_text(t, "capacity", capn);
		/* 0 or absent: unbounded (docs/CONFIG.md). */
		if (strcmp(capn, "-") == 0 || strcmp(capn, "0") == 0)
			snprintf(cap, sizeof cap, "-");
		else
			snprintf(cap, sizeof cap, "%s%s", capn,
				 json_is_true(json_object_get(t, "per_session")) ? "/session" : "");
		const char *spill = str_of(t, "spill_to"), *promote = str_of(t, "promote_to");
		a2m_buf_puts(b, "  ");
		cell(b, name ? name : "?", name_w);
		a2m_buf_puts(b, "  ");
		cell(b, kind ? kind : "-", kind_w);
		a2m_buf_printf(b, "  %5s  %-12s  %-8s  %s\n", count, cap, spill ? spill : "-",
			       promote ? promote : "-");
	}
}

void cli_render_describe(a2m_buf *b, const json_t *d)
{
	const char *name = str_of(d, "name"), *proto = str_of(d, "protocol");
	a2m_buf_printf(b, "%s, speaking %s\n", name ? name : "(unnamed server)",
		       proto ? proto : "(no protocol)");
	a2m_buf_puts(b, "capabilities: ");
	string_list(b, json_object_get(d, "capabilities"));
	a2m_buf_puts(b, "\n");
	const json_t *tiers = json_object_get(d, "tiers");
	if (json_array_size(tiers))
		render_tiers(b, tiers);
	const json_t *limits = json_object_get(d, "limits");
	if (json_object_size(limits)) {
		a2m_buf_puts(b, "limits: ");
		const char *key;
		json_t *v;
		int first = 1;
		json_object_foreach((json_t *)limits, key, v) {
			a2m_buf_printf(b, "%s%s ", first ? "" : ", ", key);
			scalar(b, v);
			first = 0;
		}
		a2m_buf_puts(b, "\n");
	}
	/* The capability objects (events, embeddings, summarize, prompt...):
	** one line each, their scalar and list fields as name=value. */
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)d, key, v) {
		if (!json_is_object(v) || strcmp(key, "limits") == 0)
			continue;
		a2m_buf_printf(b, "%s:", key);
		const char *k2;
		json_t *v2;
		json_object_foreach(v, k2, v2) {
			a2m_buf_printf(b, " %s=", k2);
			if (json_is_array(v2))
				string_list(b, v2);
			else
				scalar(b, v2);
		}
		a2m_buf_puts(b, "\n");
	}
}

/* ---- events, sessions, counts ---- */

void cli_render_events(a2m_buf *b, const json_t *events)
{
	for (size_t i = 0; i < json_array_size(events); i++) {
		const json_t *e = json_array_get(events, i);
		const char *at = str_of(e, "at"), *kind = str_of(e, "kind");
		cell(b, at ? at : "-", 24);
		a2m_buf_puts(b, "  ");
		cell(b, kind ? kind : "?", 14);
		const char *key;
		json_t *v;
		json_object_foreach((json_t *)e, key, v) {
			if (strcmp(key, "at") == 0 || strcmp(key, "kind") == 0 || json_is_null(v))
				continue;
			a2m_buf_printf(b, " %s=", key);
			if (json_is_array(v)) {
				a2m_buf_puts(b, "[");
				string_list(b, v);
				a2m_buf_puts(b, "]");
			} else {
				scalar(b, v);
			}
		}
		a2m_buf_puts(b, "\n");
	}
}

void cli_render_sessions(a2m_buf *b, const json_t *sessions)
{
	size_t n = json_array_size(sessions), w = 7;
	for (size_t i = 0; i < n; i++) {
		const char *s = str_of(json_array_get(sessions, i), "session");
		if (s && width_of(s) > w)
			w = width_of(s);
	}
	if (!n)
		return;
	cell(b, "SESSION", w);
	a2m_buf_puts(b, "  RECORDS  OPENED                    TOUCHED\n");
	for (size_t i = 0; i < n; i++) {
		const json_t *s = json_array_get(sessions, i);
		const char *name = str_of(s, "session");
		const char *opened = str_of(s, "opened_at"), *touched = str_of(s, "touched_at");
		char records[32];
		int_text(s, "records", records);
		cell(b, name ? name : "?", w);
		a2m_buf_printf(b, "  %7s  %-24s  %s\n", records, opened ? opened : "-",
			       touched ? touched : "-");
	}
}

void cli_render_counts(a2m_buf *b, const json_t *result)
{
	const char *key;
	json_t *v;
	int first = 1;
	json_object_foreach((json_t *)result, key, v) {
		if (json_is_object(v) || json_is_array(v))
			continue;
		a2m_buf_printf(b, "%s%s ", first ? "" : ", ", key);
		scalar(b, v);
		first = 0;
	}
	if (!first)
		a2m_buf_puts(b, "\n");
	const json_t *counts = json_object_get(result, "counts");
	if (json_object_size(counts)) {
		a2m_buf_puts(b, "counts: ");
		first = 1;
		json_object_foreach((json_t *)counts, key, v) {
			a2m_buf_printf(b, "%s%s ", first ? "" : ", ", key);
			scalar(b, v);
			first = 0;
		}
		a2m_buf_puts(b, "\n");
	}
}

/* ---- for a model ---- */

/* The fields after a record's content, as "name value" joined by " · ".
** Scores are printed to three places: they order one list and mean nothing
** finer (spec §5.3). */
static void record_details(a2m_buf *b, const json_t *r)
{
	static const char *const order[] = {"score", "id", "created_at", "role", "tier", "key",
					    "revision", "session", "owner", "group", "uri",
					    "media_type", "salience", "metadata"};
	int first = 1;
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		const json_t *v = json_object_get(r, order[i]);
		if (!v || json_is_null(v))
			continue;
		if (json_is_object(v) && json_object_size(v) == 0)
			continue;
		/* The defaults say nothing: a first revision, the base salience. */
		if ((strcmp(order[i], "revision") == 0 && json_integer_value(v) == 0) ||
		    (strcmp(order[i], "salience") == 0 && json_number_value(v) == 1.0))
			continue;
		a2m_buf_puts(b, first ? "" : " · ");
		first = 0;
		if (strcmp(order[i], "score") == 0 && json_is_number(v)) {
			a2m_buf_printf(b, "score %.3f", json_number_value(v));
			continue;
		}
		a2m_buf_printf(b, "%s ", strcmp(order[i], "created_at") == 0 ? "written" : order[i]);
		scalar(b, v);
	}
}

/* A numbered list of records, each its content then its details. */
static void model_records(a2m_buf *b, const json_t *records)
{
	for (size_t i = 0; i < json_array_size(records); i++) {
		const json_t *r = json_array_get(records, i);
		const char *content = str_of(r, "content");
		a2m_buf_printf(b, "%zu. ", i + 1);
		indented(b, content && *content ? content : "(no content)", "   ");
		a2m_buf_puts(b, "\n   ");
		record_details(b, r);
		a2m_buf_puts(b, "\n");
	}
}

void cli_render_for_model(a2m_buf *b, const char *method, const json_t *result)
{
	const json_t *records = json_object_get(result, "records");
	size_t n = json_array_size(records);
	if (strcmp(method, "memory/recall") == 0) {
		if (!n) {
			a2m_buf_puts(b, "No memory matched.\n");
			return;
		}
		a2m_buf_printf(b, "%zu %s, most relevant first (scores only order this list):\n", n,
			       n == 1 ? "memory" : "memories");
		model_records(b, records);
	} else if (strcmp(method, "memory/timeline") == 0) {
		if (!n) {
			a2m_buf_puts(b, "Nothing in memory here yet.\n");
			return;
		}
		a2m_buf_printf(b, "%zu %s, oldest first:\n", n, n == 1 ? "record" : "records");
		model_records(b, records);
	} else if (strcmp(method, "memory/remember") == 0) {
		const json_t *ids = json_object_get(result, "ids");
		a2m_buf_puts(b, json_array_size(ids) == 1 ? "Remembered, id " : "Remembered, ids ");
		string_list(b, ids);
		a2m_buf_puts(b, ".\n");
	} else if (strcmp(method, "memory/fetch") == 0) {
		const json_t *r = json_object_get(result, "record");
		if (!json_is_object(r)) {
			a2m_buf_puts(b, "Nothing is stored at that key yet.\n");
			return;
		}
		const char *content = str_of(r, "content");
		indented(b, content && *content ? content : "(no content)", "");
		a2m_buf_puts(b, "\n");
		record_details(b, r);
		a2m_buf_puts(b, "\n");
	} else if (strcmp(method, "memory/events") == 0) {
		const json_t *events = json_object_get(result, "events");
		if (json_is_true(json_object_get(result, "reset")))
			a2m_buf_puts(b, "The cursor could not be honoured: events may have been "
				       "missed; what follows starts at the oldest event kept.\n");
		if (!json_array_size(events))
			a2m_buf_puts(b, "No events since the cursor.\n");
		else
			cli_render_events(b, events);
		const char *cursor = str_of(result, "cursor");
		a2m_buf_printf(b, "Next cursor: %s\n", cursor ? cursor : "(none)");
		if (json_is_true(json_object_get(result, "more")))
			a2m_buf_puts(b, "More events are waiting: call again with this cursor.\n");
	} else if (strcmp(method, "memory/session/list") == 0) {
		const json_t *sessions = json_object_get(result, "sessions");
		if (!json_array_size(sessions))
			a2m_buf_puts(b, "No sessions.\n");
		else
			cli_render_sessions(b, sessions);
	} else if (strcmp(method, "memory/summarize") == 0) {
		if (!n) {
			a2m_buf_puts(b, "Nothing durable to summarize; no record was written.\n");
			return;
		}
		a2m_buf_puts(b, "Summary written:\n");
		model_records(b, records);
	} else {
		/* forget, promote, reinforce, consolidate, session/close: counts. */
		cli_render_counts(b, result);
	}
}
