/*
** record.c — a chunk's record, as the indexer sends it (record.h): the
** text whose hash is its id, and the JSON value that text reads as.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus/batch.h"
#include "corpus/record.h"
#include "util/json_write.h"

/* v in decimal at out, as "%zu" prints it; its length. */
static size_t format_uint(char *out, size_t v)
{
	char d[24];
	size_t i = sizeof d;
	do
		d[--i] = (char)('0' + v % 10);
	while (v /= 10);
	memcpy(out, d + i, sizeof d - i);
	return sizeof d - i;
}

/* Appends v in decimal: printf's cost was a tenth of writing a record's
** text, which `a2m corpus` does for every chunk (its id). */
static void put_uint(a2m_buf *b, size_t v)
{
	char d[24];
	a2m_buf_put(b, d, format_uint(d, v));
}

/* The chunk's lines as its uri's fragment, "#L7" or "#L10-L24", at out
** (room for 48 bytes, NUL-terminated); its length. */
static size_t format_lines(char *out, const a2m_chunk *ch)
{
	size_t n = 2;
	memcpy(out, "#L", 2);
	n += format_uint(out + n, ch->first_line);
	if (ch->first_line != ch->last_line) {
		memcpy(out + n, "-L", 2);
		n += 2;
		n += format_uint(out + n, ch->last_line);
	}
	out[n] = '\0';
	return n;
}

void a2m_corpus_record_body(a2m_buf *b, const a2m_corpus_chunk_ref *r)
{
	const a2m_chunk *ch = &r->chunks->v[r->k];
	const char *text = r->text, *rel = r->rel;
	b->len = 0;
	a2m_buf_puts(b, "\"content\":");
	a2m_json_put_string(b, text + ch->start, ch->end - ch->start);
	a2m_buf_puts(b, ",\"group\":");
	a2m_json_put_string(b, rel, strlen(rel));
	a2m_buf_puts(b, ",\"tier\":\"semantic\",\"uri\":\"");
	a2m_buf_put(b, r->uri, r->uri_len);
	char lines[48];
	a2m_buf_put(b, lines, format_lines(lines, ch));
	a2m_buf_put(b, "\"", 1);
	a2m_buf_puts(b, ",\"media_type\":");
	a2m_json_put_string(b, r->media_type, strlen(r->media_type));
	a2m_buf_puts(b, ",\"metadata\":{\"path\":");
	a2m_json_put_string(b, rel, strlen(rel));
	a2m_buf_puts(b, ",\"headings\":[");
	/* The path from the outermost heading: collected innermost first. */
	long up[8];
	int n = 0;
	for (long h = ch->heading; h >= 0 && n < 8; h = r->chunks->h[h].parent)
		up[n++] = h;
	for (int i = n - 1; i >= 0; i--) {
		const a2m_heading *hd = &r->chunks->h[up[i]];
		if (i < n - 1)
			a2m_buf_put(b, ",", 1);
		a2m_json_put_string(b, text + hd->start, hd->len);
	}
	a2m_buf_puts(b, "],\"first_line\":");
	put_uint(b, ch->first_line);
	a2m_buf_puts(b, ",\"last_line\":");
	put_uint(b, ch->last_line);
	a2m_buf_puts(b, ",\"chunk\":");
	put_uint(b, r->k);
	a2m_buf_puts(b, "}}");
}

/* Sets o[key] to v (taken, also on failure); -1 when o or v is NULL or memory ran out. */
static int set(json_t *o, const char *key, json_t *v)
{
	if (!o || !v) {
		json_decref(v);
		return -1;
	}
	return json_object_set_new_nocheck(o, key, v);
}

json_t *a2m_corpus_record_value(const a2m_corpus_chunk_ref *r, const char *id)
{
	const a2m_chunk *ch = &r->chunks->v[r->k];
	const char *text = r->text, *rel = r->rel;
	char lines[48];
	size_t nl = format_lines(lines, ch), ul = r->uri_len;
	json_t *rec = json_object(), *meta = json_object(), *headings = json_array();
	long up[8];
	int n = 0, rc = 0;
	for (long h = ch->heading; h >= 0 && n < 8; h = r->chunks->h[h].parent)
		up[n++] = h;
	for (int i = n - 1; i >= 0 && headings && !rc; i--) {
		const a2m_heading *hd = &r->chunks->h[up[i]];
		rc = json_array_append_new(headings, json_stringn_nocheck(text + hd->start, hd->len));
	}
	/* The uri: the file's, then its lines. */
	char *uri = malloc(ul + nl + 1);
	if (uri) {
		memcpy(uri, r->uri, ul);
		memcpy(uri + ul, lines, nl + 1);
	}
	rc |= set(rec, "id", json_stringn_nocheck(id, A2M_CORPUS_ID_LEN));
	rc |= set(rec, "content", json_stringn_nocheck(text + ch->start, ch->end - ch->start));
	rc |= set(rec, "group", json_stringn_nocheck(rel, strlen(rel)));
	rc |= set(rec, "tier", json_stringn_nocheck("semantic", 8));
	rc |= set(rec, "uri", uri ? json_stringn_nocheck(uri, ul + nl) : NULL);
	rc |= set(rec, "media_type", json_stringn_nocheck(r->media_type, strlen(r->media_type)));
	rc |= set(meta, "path", json_stringn_nocheck(rel, strlen(rel)));
	rc |= set(meta, "headings", headings);
	rc |= set(meta, "first_line", json_integer(ch->first_line));
	rc |= set(meta, "last_line", json_integer(ch->last_line));
	rc |= set(meta, "chunk", json_integer((json_int_t)r->k));
	rc |= set(rec, "metadata", meta);
	free(uri);
	if (rc) {
		json_decref(rec);
		return NULL;
	}
	return rec;
}

