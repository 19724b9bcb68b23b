/*
** json_read.c — the fast JSON reader of json_read.h: one pass of recursive
** descent over the text, values made with jansson's API. Whatever it is
** not sure jansson's decoder would read the same way, it leaves to it
** (returns NULL): see json_read.h.
*/
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_read.h"
#include "util/text.h"

/* Deeper nesting is left to jansson, which allows JSON_PARSER_MAX_DEPTH. */
#define MAX_DEPTH 64

/* A number written longer than this is left to jansson. */
#define MAX_NUMBER_BYTES 64

typedef struct reader {
	const unsigned char *p, *end;
	int                  allow_nul;
	int                  depth;
	char                *scratch;   /* the decoded text of a string with escapes */
	size_t               cap;
	int                  oom;       /* gave up because memory ran out */
} reader;

static json_t *read_value(reader *r);

/* v, made by jansson; NULL (memory ran out) is noted. */
static json_t *made(reader *r, json_t *v)
{
	if (!v)
		r->oom = 1;
	return v;
}

/* JSON's white space: space, tab, line feed, carriage return. */
static void skip_space(reader *r)
{
	while (r->p < r->end &&
	       (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
		r->p++;
}

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* The four hex digits at p as a number, or -1. */
static long hex4(const unsigned char *p, const unsigned char *end)
{
	long v = 0;
	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		unsigned c = p[i];
		if (c >= '0' && c <= '9')
			v = v << 4 | (long)(c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			v = v << 4 | (long)((c | 0x20) - 'a' + 10);
		else
			return -1;
	}
	return v;
}

/* Writes code point cp (valid, not a surrogate) as UTF-8; returns its length. */
static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/*
** Decodes the escapes of the string body [s, q) into r->scratch, which
** can hold it: no escape decodes to more bytes than it is written with.
** Returns the decoded length, or -1 for an escape jansson refuses (or
** leaves out: \u0000 without allow_nul).
*/
static long unescape(reader *r, const unsigned char *s, const unsigned char *q)
{
	char *o = r->scratch;
	while (s < q) {
		const unsigned char *bs = memchr(s, '\\', (size_t)(q - s));
		size_t run = (size_t)((bs ? bs : q) - s);
		memcpy(o, s, run);
		o += run;
		s += run;
		if (!bs)
			break;
		s++;  /* the backslash; the first pass saw a byte follow it */
		unsigned char c = *s++;
		switch (c) {
		case '"': case '\\': case '/': *o++ = (char)c; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			long cp = hex4(s, q);
			if (cp < 0)
				return -1;
			s += 4;
			if (cp >= 0xDC00 && cp <= 0xDFFF)
				return -1;  /* a low surrogate first */
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				long lo = q - s >= 6 && s[0] == '\\' && s[1] == 'u' ? hex4(s + 2, q) : -1;
				if (lo < 0xDC00 || lo > 0xDFFF)
					return -1;
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				s += 6;
			}
			if (cp == 0 && !r->allow_nul)
				return -1;
			o += put_utf8(o, (uint32_t)cp);
			break;
		}
		default:
			return -1;
		}
	}
	return (long)(o - r->scratch);
}

/*
** Whether the 8 bytes at p are all plain in a string: ASCII, not a control
** character, not '"' nor '\\'. The bit tricks for "has a byte equal to"
** and "has a byte below" may flag a wrong byte only above one that did
** match, so the answer for the eight as a whole is exact.
*/
static int plain8(const unsigned char *p)
{
	const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
	uint64_t v;
	memcpy(&v, p, 8);
	uint64_t q = v ^ (ones * '"'), bs = v ^ (ones * '\\');
	uint64_t hit = ((q - ones) & ~q) | ((bs - ones) & ~bs) | ((v - ones * 0x20) & ~v) | v;
	return (hit & highs) == 0;
}

/*
** Reads the string at r->p (its opening quote): *text and *len get its
** bytes, in the input when it has no escapes, else in r->scratch (valid
** until the next string). Returns 0, or -1.
*/
static int read_string(reader *r, const char **text, size_t *len)
{
	const unsigned char *s = ++r->p, *p = s;
	int escaped = 0;
	for (;;) {
		/* Text is mostly plain ASCII: eight such bytes at a time. */
		while (r->end - p >= 8 && plain8(p))
			p += 8;
		if (p >= r->end)
			return -1;
		unsigned char c = *p;
		if (c == '"')
			break;
		if (c < 0x20)
			return -1;  /* a control character must be escaped */
		if (c == '\\') {
			escaped = 1;
			if (++p >= r->end)
				return -1;
			p++;  /* whatever it escapes: unescape() judges it */
			continue;
		}
		size_t n = c < 0x80 ? 1 : a2m_utf8_sequence(p, r->end);
		if (!n)
			return -1;
		p += n;
	}
	r->p = p + 1;
	if (!escaped) {
		*text = (const char *)s;
		*len = (size_t)(p - s);
		return 0;
	}
	size_t need = (size_t)(p - s) + 1;
	if (need > r->cap) {
		char *grown = realloc(r->scratch, need);
		if (!grown) {
			r->oom = 1;
			return -1;
		}
		r->scratch = grown;
		r->cap = need;
	}
	long n = unescape(r, s, p);
	if (n < 0)
		return -1;
	*text = r->scratch;
	*len = (size_t)n;
	return 0;
}

/* The C locale, for reals: jansson reads "1.5" alike in every locale. */
static locale_t c_numeric;
static pthread_once_t c_numeric_once = PTHREAD_ONCE_INIT;

static void make_c_numeric(void)
{
	c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* Reads the number at r->p, as jansson does: an integer, or a real. */
static json_t *read_number(reader *r)
{
	const unsigned char *s = r->p, *p = s, *end = r->end;
	int real = 0;
	if (p < end && *p == '-')
		p++;
	if (p < end && *p == '0')
		p++;
	else if (p < end && is_digit(*p))
		while (p < end && is_digit(*p))
			p++;
	else
		return NULL;
	if (p < end && *p == '.') {
		real = 1;
		if (++p >= end || !is_digit(*p))
			return NULL;
		while (p < end && is_digit(*p))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		real = 1;
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || !is_digit(*p))
			return NULL;
		while (p < end && is_digit(*p))
			p++;
	}
	char buf[MAX_NUMBER_BYTES];
	size_t n = (size_t)(p - s);
	if (n >= sizeof buf)
		return NULL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	r->p = p;
	errno = 0;
	if (!real) {
		long long v = strtoll(buf, NULL, 10);
		if (errno == ERANGE)
			return NULL;  /* out of range: jansson's error */
		return made(r, json_integer(v));
	}
	pthread_once(&c_numeric_once, make_c_numeric);
	if (c_numeric == (locale_t)0)
		return NULL;
	double d = strtod_l(buf, NULL, c_numeric);
	if (isinf(d) && errno == ERANGE)
		return NULL;  /* overflow: jansson's error; underflow reads as 0 there too */
	return made(r, json_real(d));
}

/* Reads true, false or null at r->p. */
static json_t *read_word(reader *r)
{
	static const struct { const char *text; size_t len; } words[] = {
		{"true", 4}, {"false", 5}, {"null", 4}
	};
	for (size_t i = 0; i < 3; i++) {
		size_t n = words[i].len;
		if ((size_t)(r->end - r->p) >= n && memcmp(r->p, words[i].text, n) == 0) {
			r->p += n;
			return i == 0 ? json_true() : i == 1 ? json_false() : json_null();
		}
	}
	return NULL;
}

/*
** After an element of an array or object: 1 when a comma brings another,
** 0 when close ends it (both taken), -1 for anything else.
*/
static int after_element(reader *r, unsigned char close)
{
	skip_space(r);
	if (r->p < r->end && (*r->p == ',' || *r->p == close))
		return *r->p++ == ',';
	return -1;
}

/* Takes the opening bracket at r->p; 1 when close follows it (taken too). */
static int empty_after_open(reader *r, unsigned char close)
{
	r->p++;
	skip_space(r);
	if (r->p < r->end && *r->p == close) {
		r->p++;
		return 1;
	}
	return 0;
}

static json_t *read_array(reader *r)
{
	json_t *a = made(r, json_array());
	if (empty_after_open(r, ']'))
		return a;
	while (a) {
		json_t *v = read_value(r);
		if (!v)
			break;
		if (json_array_append_new(a, v) != 0) {
			r->oom = 1;
			break;
		}
		int more = after_element(r, ']');
		if (more == 0)
			return a;
		if (more < 0)
			break;
	}
	json_decref(a);
	return NULL;
}

static json_t *read_object(reader *r)
{
	json_t *o = made(r, json_object());
	if (empty_after_open(r, '}'))
		return o;
	while (o) {
		const char *key;
		size_t klen;
		char *copy = NULL;
		if (r->p >= r->end || *r->p != '"' || read_string(r, &key, &klen) != 0)
			break;
		/* jansson refuses a NUL in a key whatever the flags. */
		if (memchr(key, '\0', klen))
			break;
		/* A decoded key lives in the scratch the value's strings reuse. */
		if (key == r->scratch) {
			if (!(copy = malloc(klen ? klen : 1))) {
				r->oom = 1;
				break;
			}
			memcpy(copy, key, klen);
			key = copy;
		}
		skip_space(r);
		json_t *v = NULL;
		if (r->p < r->end && *r->p == ':') {
			r->p++;
			v = read_value(r);
		}
		/* The last of duplicate keys stands, in the first one's place, as
		** in jansson's decoder. */
		int set = v ? json_object_setn_new_nocheck(o, key, klen, v) : -1;
		free(copy);
		if (set != 0) {
			r->oom |= v != NULL;  /* the key and value were fine: memory */
			break;
		}
		int more = after_element(r, '}');
		if (more == 0)
			return o;
		if (more < 0)
			break;
		skip_space(r);
	}
	json_decref(o);
	return NULL;
}

static json_t *read_value(reader *r)
{
	skip_space(r);
	if (r->p >= r->end)
		return NULL;
	unsigned char c = *r->p;
	if (c == '"') {
		const char *text;
		size_t len;
		return read_string(r, &text, &len) == 0 ? made(r, json_stringn_nocheck(text, len))
							 : NULL;
	}
	if (c == '-' || is_digit(c))
		return read_number(r);
	if (c != '{' && c != '[')
		return read_word(r);
	if (r->depth >= MAX_DEPTH)
		return NULL;
	r->depth++;
	json_t *v = c == '{' ? read_object(r) : read_array(r);
	r->depth--;
	return v;
}

json_t *a2m_json_read(const char *text, size_t len, int allow_nul)
{
	return a2m_json_read_ex(text, len, allow_nul, NULL);
}

json_t *a2m_json_read_ex(const char *text, size_t len, int allow_nul, int *oom)
{
	reader r = {.p = (const unsigned char *)text, .end = (const unsigned char *)text + len,
		    .allow_nul = allow_nul};
	if (oom)
		*oom = 0;
	if (!text)
		return NULL;
	json_t *v = read_value(&r);
	skip_space(&r);
	if (v && r.p != r.end) {
		json_decref(v);  /* more after the value: jansson's error */
		v = NULL;
	}
	free(r.scratch);
	if (oom)
		*oom = !v && r.oom;
	return v;
}
