/*
** mirror_file.c — what a record's file in the procedural mirror is called
** and what it holds (the contract: a2m_sqlite_options in store.h; the
** directory kept in agreement with the database: mirror.c).
**
** A name is a slug of the key (or of the content's first words), a
** separator, and the id percent-encoded (cut and hashed when long), so it
** never holds '/' and a record's file is found again from the record
** alone. The text is YAML front matter (id, key, owner, created_at,
** revision) and the content.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/mirror_file.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/hash.h"

#define SLUG_MAX      60   /* bytes of slug, so a name stays readable */
#define SLUG_WORDS    6    /* words of content in a slug without a key */
#define SLUG_DEFAULT  "record"
#define ID_ENC_MAX    160  /* longest percent-encoded id kept whole */
#define ID_ENC_CUT    120  /* what is kept of a longer one, before ~hash */
#define SEPARATOR     "--"
#define SUFFIX        ".md"

/* ---- names ------------------------------------------------------------- */

/*
** Decodes the character at p for a slug: returns how many bytes it spans
** (at least 1) and sets *keep when it belongs in a word. ASCII letters and
** digits are kept; so is any well-formed non-ASCII UTF-8 character except
** the C1 controls and the Unicode spaces and invisible formatting
** characters, which separate words like ASCII punctuation does. A malformed
** byte is a separator of its own.
*/
static size_t slug_char(const unsigned char *p, int *keep)
{
	unsigned c = p[0];
	size_t n;
	uint32_t cp;

	*keep = 0;
	if (c < 0x80) {
		*keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9');
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
		cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		cp = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 1;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 1;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 1;
	if (cp <= 0x9F || cp == 0xA0 || cp == 0xAD || cp == 0x1680 ||
	    (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
	    (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF)
		return n;
	*keep = 1;
	return n;
}

/*
** Writes the slug of text into out (SLUG_MAX + 1 bytes): its words, ASCII
** lowercased, joined by single '-', at most max_words of them (0: no limit)
** and at most SLUG_MAX bytes, never cutting a character. A word that does
** not fit is left out whole, unless it is the first, which is cut. So a slug
** has no "--", no leading or trailing '-', no '.', '/' or control character.
*/
static void slug_of(const char *text, int max_words, char *out)
{
	const unsigned char *p = (const unsigned char *)text;
	size_t n = 0, word_start = 0;
	int words = 0, in_word = 0;

	while (*p) {
		int keep;
		size_t len = slug_char(p, &keep);
		if (!keep) {
			in_word = 0;
			p += len;
			continue;
		}
		if (!in_word) {
			if (max_words && words == max_words)
				break;
			if (n + (n ? 1 : 0) + len > SLUG_MAX)
				break;
			if (n)
				out[n++] = '-';
			word_start = n;
			words++;
			in_word = 1;
		} else if (n + len > SLUG_MAX) {
			if (words > 1)
				n = word_start - 1;   /* drop the word and its '-' */
			break;
		}
		for (size_t i = 0; i < len; i++) {
			unsigned char c = p[i];
			out[n++] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
		}
		p += len;
	}
	out[n] = '\0';
}

/* Bytes an id keeps as they are; everything else is %XX. */
static int id_safe(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '_' || c == '.';
}

/*
** The id as it appears in a file name, malloc'd: percent-encoded, so the
** mapping is one to one and no id can spell '/', "..", a control character
** or a name differing from another only in case. Too long for a name
** (NAME_MAX is 255), it keeps its first ID_ENC_CUT bytes (never half an
** escape) and appends '~' and a hash of the whole id; '~' is itself always
** encoded, so such a name cannot equal an encoding kept whole.
*/
static char *encode_id(const char *id)
{
	static const char hex[] = "0123456789ABCDEF";
	/* Cut only when n > ID_ENC_MAX, so there is room for the ~hash. */
	char *out = malloc(strlen(id) * 3 + 1);
	size_t n = 0;

	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
		if (id_safe(*p)) {
			out[n++] = (char)*p;
		} else {
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		}
	}
	if (n > ID_ENC_MAX) {
		n = ID_ENC_CUT;
		if (out[n - 1] == '%')
			n -= 1;
		else if (out[n - 2] == '%')
			n -= 2;
		snprintf(out + n, 18, "~%016llx", (unsigned long long)a2m_hash_str(id));
		n += 17;
	}
	out[n] = '\0';
	return out;
}

char *a2m_mirror_file_name(const a2m_record *rec)
{
	char slug[SLUG_MAX + 1] = "";
	char *id, *name;
	size_t len;

	if (rec->key)
		slug_of(rec->key, 0, slug);
	if (!slug[0] && rec->content)
		slug_of(rec->content, SLUG_WORDS, slug);
	if (!slug[0])
		snprintf(slug, sizeof slug, "%s", SLUG_DEFAULT);
	id = encode_id(rec->id ? rec->id : "");
	if (!id)
		return NULL;
	len = strlen(slug) + strlen(SEPARATOR) + strlen(id) + strlen(SUFFIX) + 1;
	name = malloc(len);
	if (name)
		snprintf(name, len, "%s" SEPARATOR "%s" SUFFIX, slug, id);
	free(id);
	return name;
}

int a2m_mirror_is_file_name(const char *name)
{
	const char *sep = strstr(name, SEPARATOR);
	size_t len = strlen(name), slen = strlen(SUFFIX);
	if (!sep || sep == name || len < slen || strcmp(name + len - slen, SUFFIX) != 0)
		return 0;
	const char *p = sep + strlen(SEPARATOR), *end = name + len - slen;
	if (p >= end)
		return 0;
	for (; p < end; p++) {
		unsigned char c = (unsigned char)*p;
		if (!id_safe(c) && c != '%' && c != '~' && !(c >= 'A' && c <= 'F'))
			return 0;
	}
	return 1;
}

/* ---- file contents ----------------------------------------------------- */

static void put_bytes(a2m_buf *b, const char *s, size_t n)
{
	a2m_buf_put(b, s, n);
}

static void put_str(a2m_buf *b, const char *s)
{
	a2m_buf_puts(b, s);
}

/*
** s as a JSON string, which is also a YAML double-quoted scalar: whatever an
** id, key or owner holds (quotes, newlines, "---"), the front matter parses.
*/
static void put_quoted(a2m_buf *b, const char *s)
{
	put_str(b, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char esc[8];
		switch (*p) {
		case '"':  put_str(b, "\\\""); break;
		case '\\': put_str(b, "\\\\"); break;
		case '\n': put_str(b, "\\n"); break;
		case '\r': put_str(b, "\\r"); break;
		case '\t': put_str(b, "\\t"); break;
		default:
			if (*p < 0x20 || *p == 0x7F) {
				snprintf(esc, sizeof esc, "\\u%04x", *p);
				put_str(b, esc);
			} else {
				put_bytes(b, (const char *)p, 1);
			}
		}
	}
	put_str(b, "\"");
}

int a2m_mirror_file_text(const a2m_record *rec, a2m_buf *b)
{
	char num[32], ts[A2M_TIMESTAMP_LEN];
	size_t clen = strlen(rec->content);

	memset(b, 0, sizeof *b);
	put_str(b, "---\nid: ");
	put_quoted(b, rec->id);
	if (rec->key) {
		put_str(b, "\nkey: ");
		put_quoted(b, rec->key);
	}
	if (rec->owner) {
		put_str(b, "\nowner: ");
		put_quoted(b, rec->owner);
	}
	put_str(b, "\ncreated_at: ");
	put_str(b, a2m_clock_format(rec->created_at, ts));
	snprintf(num, sizeof num, "%lld", (long long)rec->revision);
	put_str(b, "\nrevision: ");
	put_str(b, num);
	put_str(b, "\n---\n");
	put_bytes(b, rec->content, clen);
	if (clen == 0 || rec->content[clen - 1] != '\n')
		put_str(b, "\n");
	if (b->failed) {
		a2m_buf_free(b);
		return -1;
	}
	return 0;
}
