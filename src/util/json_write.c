/*
** json_write.c — compact JSON output with shortest round-trip reals (see
** json_write.h for why this exists beside json_dumps()).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_write.h"

typedef a2m_json_buf buf;

static void put(buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024; /* a describe, a recall of a few */
		while (b->len + n + 1 > cap)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->failed = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void put_string(buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	put(b, "\"", 1);
	size_t run = 0; /* bytes copied verbatim in one put() */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char u[7];
		switch (c) {
		case '"':  esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		default:
			if (c < 0x20) {
				memcpy(u, "\\u00", 4);
				u[4] = hex[c >> 4];
				u[5] = hex[c & 15];
				u[6] = '\0';
				esc = u;
			}
		}
		if (esc) {
			put(b, s + i - run, run);
			run = 0;
			put(b, esc, strlen(esc));
		} else {
			run++;
		}
	}
	put(b, s + n - run, run);
	put(b, "\"", 1);
}

/*
** d as C's "%.*g" with precision p would print it, from sig, its 17
** significant digits, and x, the decimal exponent of the first: the digits
** rounded to p (half up) and trailing zeros dropped. Returns the length,
** or 0 when the digits cut off are exactly a half: rounding the 17-digit
** text could then differ from rounding d itself, and only printf knows.
*/
static size_t format_g(int neg, const char sig[17], int x, int p, char *out)
{
	char dg[17];
	memcpy(dg, sig, (size_t)p);
	if (p < 17 && sig[p] >= '5') {
		int rest = 0;
		for (int i = p + 1; i < 17; i++)
			rest |= sig[i] != '0';
		if (sig[p] == '5' && !rest)
			return 0;
		int i = p - 1;
		while (i >= 0 && dg[i] == '9')
			dg[i--] = '0';
		if (i >= 0) {
			dg[i]++;
		} else {  /* 99.9 → 100: one digit more before the point */
			memmove(dg + 1, dg, (size_t)p - 1);
			dg[0] = '1';
			x++;
		}
	}
	int n = p;
	while (n > 1 && dg[n - 1] == '0')
		n--;
	char *o = out;
	if (neg)
		*o++ = '-';
	if (x < -4 || x >= p) {
		*o++ = dg[0];
		if (n > 1) {
			*o++ = '.';
			memcpy(o, dg + 1, (size_t)n - 1);
			o += n - 1;
		}
		o += sprintf(o, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
	} else if (x < 0) {
		memcpy(o, "0.", 2);
		o += 2;
		for (int i = 0; i < -x - 1; i++)
			*o++ = '0';
		memcpy(o, dg, (size_t)n);
		o += n;
	} else {
		for (int i = 0; i <= x; i++)
			*o++ = i < n ? dg[i] : '0';
		if (n > x + 1) {
			*o++ = '.';
			memcpy(o, dg + x + 1, (size_t)(n - x - 1));
			o += n - x - 1;
		}
	}
	*o = '\0';
	return (size_t)(o - out);
}

/* Whether the 17 digits of sig from the p-th on are all '0'. */
static int zeros_from(const char sig[17], int p)
{
	while (p < 17 && sig[p] == '0')
		p++;
	return p == 17;
}

size_t a2m_json_format_real(double d, char out[32])
{
	/* One exact conversion to 17 digits (always enough to read back as d),
	** then the shortest of 15, 16, 17 digits that does read back: the same
	** text as trying "%.15g", "%.16g", "%.17g" in turn, at a third of the
	** printf calls, which dominated a recall's serialisation. */
	char e[40];
	snprintf(e, sizeof e, "%.16e", d);
	int neg = e[0] == '-';
	const char *m = e + neg;
	char sig[17];
	sig[0] = m[0];
	memcpy(sig + 1, m + 2, 16);
	int x = atoi(m + 19);
	size_t n = 0;
	for (int prec = 15; prec <= 17; prec++) {
		n = format_g(neg, sig, x, prec, out);
		if (!n)
			n = (size_t)snprintf(out, 32, "%.*g", prec, d);
		/* Digits cut off that were all zero: the text is the exact
		** 17-digit one, which reads back as d without asking strtod. */
		if (prec == 17 || zeros_from(sig, prec) || strtod(out, NULL) == d)
			break;
	}
	/* "1" would read back as an integer: keep the value a real. */
	if (!strpbrk(out, ".eEn") && n + 2 < 32) {
		memcpy(out + n, ".0", 3);
		n += 2;
	}
	return n;
}

static void put_value(buf *b, const json_t *v)
{
	char num[32];
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		put(b, "{", 1);
		const char *key;
		json_t *item;
		int first = 1;
		json_object_foreach((json_t *)v, key, item) {
			if (!first)
				put(b, ",", 1);
			first = 0;
			put_string(b, key, strlen(key));
			put(b, ":", 1);
			put_value(b, item);
		}
		put(b, "}", 1);
		break;
	}
	case JSON_ARRAY: {
		put(b, "[", 1);
		for (size_t i = 0; i < json_array_size(v); i++) {
			if (i)
				put(b, ",", 1);
			put_value(b, json_array_get(v, i));
		}
		put(b, "]", 1);
		break;
	}
	case JSON_STRING:
		put_string(b, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER: {
		int n = snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		put(b, num, (size_t)n);
		break;
	}
	case JSON_REAL:
		put(b, num, a2m_json_format_real(json_real_value(v), num));
		break;
	case JSON_TRUE:
		put(b, "true", 4);
		break;
	case JSON_FALSE:
		put(b, "false", 5);
		break;
	case JSON_NULL:
		put(b, "null", 4);
		break;
	}
}

/* The writer's pieces, for text built by hand (json_write.h). */
void a2m_json_put_raw(a2m_json_buf *b, const char *s, size_t n)
{
	put(b, s, n);
}

void a2m_json_put_string(a2m_json_buf *b, const char *s, size_t n)
{
	put_string(b, s, n);
}

void a2m_json_put_real(a2m_json_buf *b, double d)
{
	char num[32];
	/* A whole number below 10^15 (a salience of 1): its digits and ".0",
	** which is what a2m_json_format_real writes for it, without printf. */
	if (d > -1e15 && d < 1e15 && d == (double)(int64_t)d && (d != 0 || !signbit(d))) {
		a2m_json_put_int(b, (int64_t)d);
		put(b, ".0", 2);
		return;
	}
	put(b, num, a2m_json_format_real(d, num));
}

void a2m_json_put_int(a2m_json_buf *b, int64_t v)
{
	/* By hand: snprintf was a visible part of serialising a recall. */
	char num[24], *p = num + sizeof num;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	put(b, p, (size_t)(num + sizeof num - p));
}

void a2m_json_put_value(a2m_json_buf *b, const json_t *v)
{
	put_value(b, v);
}

char *a2m_json_write(const json_t *v, size_t *len)
{
	return a2m_json_write_between("", 0, v, "", 0, len);
}

char *a2m_json_write_between(const char *head, size_t head_len, const json_t *v,
			     const char *tail, size_t tail_len, size_t *len)
{
	buf b = {0};
	put(&b, head, head_len);
	put_value(&b, v);
	put(&b, tail, tail_len);
	if (b.failed || !b.p) {
		free(b.p);
		return NULL;
	}
	if (len)
		*len = b.len;
	return b.p;
}
