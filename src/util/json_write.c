/*
** json_write.c — compact JSON output with shortest round-trip reals (see
** json_write.h for why this exists beside json_dumps()).
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_write.h"

typedef a2m_buf buf;

static inline void put(buf *b, const char *s, size_t n)
{
	a2m_buf_put(b, s, n);
}

/*
** The bytes of v (8 of a string, the first in the low byte) that must be
** escaped in a JSON string, a control character (below 0x20), '"' or
** '\\', flagged by their high bits: the usual bit tricks for "has a zero
** byte" (applied to v ^ '"' and v ^ '\\') and "has a byte below n". A
** borrow can flag a byte that needs nothing, but only above one that does,
** so the lowest flag is always a byte to escape.
*/
#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
static uint64_t escapes8(uint64_t v)
{
	uint64_t q = v ^ (ONES * '"'), bs = v ^ (ONES * '\\');
	return (((q - ONES) & ~q) | ((bs - ONES) & ~bs) | ((v - ONES * 0x20) & ~v)) & HIGHS;
}

/* Eight bytes of p, the first in the low byte whatever the machine. */
static uint64_t load8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
	       (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
	       (uint64_t)p[7] << 56;
}

/* Writes the escape of c, a byte that needs one, at o; returns the end. */
static char *escape(char *o, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char e = 0;
	switch (c) {
	case '"':  e = '"'; break;
	case '\\': e = '\\'; break;
	case '\n': e = 'n'; break;
	case '\r': e = 'r'; break;
	case '\t': e = 't'; break;
	case '\b': e = 'b'; break;
	case '\f': e = 'f'; break;
	}
	*o++ = '\\';
	if (e) {
		*o++ = e;
		return o;
	}
	memcpy(o, "u00", 3);
	o[3] = hex[c >> 4];
	o[4] = hex[c & 15];
	return o + 5;
}

/* Input bytes escaped per reservation: at most 6 bytes out for each. */
#define STRING_PIECE 4096

/*
** Text is mostly plain, with a line end every few dozen bytes. So the
** output is reserved ahead (6 bytes a byte at worst, a piece at a time)
** and written directly: each word of eight bytes is stored whole, and
** when it has a byte to escape, the first one is found from its flags at
** once and the rest of the word is written over. Copying byte runs by
** a2m_buf_put and testing a flagged word's bytes one at a time was most
** of writing a record's content (`a2m corpus` writes every chunk's record
** as text, for its id).
*/
static void put_string(buf *b, const char *s, size_t n)
{
	put(b, "\"", 1);
	for (size_t at = 0; at < n;) {
		size_t end = n - at > STRING_PIECE ? at + STRING_PIECE : n;
		/* Room checked here first: most strings are short (ids, names)
		** and the buffer has it. */
		size_t room = 6 * (end - at);
		if ((b->failed || b->len + room + 1 > b->cap) && a2m_buf_reserve(b, room) != 0)
			return;
		char *o = b->p + b->len;
		size_t i = at;
		while (end - i >= 8) {
			uint64_t w = load8(s + i), hit = escapes8(w);
			memcpy(o, s + i, 8);
			if (!hit) {
				o += 8;
				i += 8;
				continue;
			}
			size_t j = (size_t)__builtin_ctzll(hit) >> 3;
			o = escape(o + j, (unsigned char)s[i + j]);
			i += j + 1;
		}
		for (; i < end; i++) {
			unsigned char c = (unsigned char)s[i];
			if (c < 0x20 || c == '"' || c == '\\')
				o = escape(o, c);
			else
				*o++ = (char)c;
		}
		b->len = (size_t)(o - b->p);
		b->p[b->len] = '\0';
		at = end;
	}
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
	if (p < 1 || p > 17)  /* never: callers ask for 1..17; says so to gcc */
		return 0;
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

#ifdef __SIZEOF_INT128__
typedef unsigned __int128 u128;

/*
** Exact arithmetic for the usual real (a score, a weight): |d| = m / 2^q
** with m < 2^53 and 1 <= q <= 68, which holds for |d| in [2^-15, 2^52)
** outside whole numbers. Within those bounds every product below fits in
** 128 bits, so the digits and the read-back test need neither printf nor
** strtod, which were most of the cost of writing a recall's scores.
*/
typedef struct exact {
	uint64_t m;  /* 53 significant bits: |d| in [2^(52-q), 2^(53-q)) */
	int      q;
} exact;

static const uint64_t pow10_64[20] = {
	1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
	100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
	10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
	100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL,
};

static u128 pow10_128(int k)
{
	return k < 20 ? pow10_64[k] : (u128)pow10_64[19] * pow10_64[k - 19];
}

static int exact_split(double d, exact *x)
{
	int e;
	if (d == 0 || !isfinite(d))
		return 0;
	double f = frexp(fabs(d), &e);  /* |d| = f · 2^e, f in [0.5, 1) */
	if (e < -14 || e > 52)
		return 0;
	x->m = (uint64_t)ldexp(f, 53);  /* exact: 53 significant bits */
	x->q = 53 - e;
	return 1;
}

/*
** The 17 significant digits of d, rounded half to even as printf's "%.16e"
** rounds them, into sig, and the decimal exponent of the first into *x10.
*/
static void exact_digits(const exact *x, char sig[17], int *x10)
{
	const u128 lo = pow10_64[16], hi = pow10_64[17];
	/* The decimal exponent from the binary one (log10 2 = 0.30103), off by
	** one at most, which the loop puts right: the digits must be 17. */
	int k = 16 - (int)floor((52 - x->q) * 0.30102999566398120);
	u128 n;
	for (;;) {
		u128 num = (u128)x->m * pow10_128(k);
		u128 mask = ((u128)1 << x->q) - 1, rem = num & mask, half = (u128)1 << (x->q - 1);
		n = num >> x->q;
		if (rem > half || (rem == half && (n & 1)))
			n++;
		if (n >= hi && k > 0 && (num >> x->q) >= hi) {
			k--;
			continue;
		}
		if (n < lo) {
			k++;
			continue;
		}
		break;
	}
	if (n == hi) {  /* 9.99…95 rounded up a decade */
		n = lo;
		k--;
	}
	*x10 = 16 - k;
	uint64_t v = (uint64_t)n;
	for (int i = 16; i >= 0; i--) {
		sig[i] = (char)('0' + v % 10);
		v /= 10;
	}
}

/*
** Whether the p significant digits of sig (rounded half up, as format_g
** rounds them) read back as d: the decimal must lie strictly within half an
** ulp of d. 1 yes, 0 no, -1 when only strtod can tell (a power of two, whose
** lower neighbour is nearer; an exact tie; a decimal exponent out of reach).
*/
static int exact_reads_back(const exact *x, const char sig[17], int x10, int p)
{
	uint64_t t = 0;
	for (int i = 0; i < p; i++)
		t = t * 10 + (uint64_t)(sig[i] - '0');
	/* A cut exactly at a half of the 17 digits is printf's to round
	** (format_g gives up on it), from d itself. */
	if (p < 17 && sig[p] == '5' && zeros_from(sig, p + 1))
		return -1;
	if (p < 17 && sig[p] >= '5')
		t++;
	int j = p - 1 - x10;  /* the decimal is t / 10^j */
	if (x->m == (uint64_t)1 << 52 || j < 0 || j > 21)
		return -1;
	u128 a = (u128)t << (x->q + 1), b = (u128)x->m * pow10_128(j) * 2;
	u128 diff = a > b ? a - b : b - a, bound = pow10_128(j);
	if (diff == bound)
		return -1;
	return diff < bound;
}
#endif

size_t a2m_json_format_real(double d, char out[32])
{
	/* The 17 significant digits (always enough to read back as d), then the
	** shortest of 15, 16, 17 digits that does read back: the same text as
	** trying "%.15g", "%.16g", "%.17g" in turn. */
	if (!isfinite(d)) {
		memcpy(out, "null", 5);
		return 4;
	}
	char sig[17];
	int neg = signbit(d) != 0, x = 0, fast = 0;
#ifdef __SIZEOF_INT128__
	exact ex = {0, 0};
	fast = exact_split(d, &ex);
	if (fast)
		exact_digits(&ex, sig, &x);
#endif
	if (!fast) {
		char e[40];
		snprintf(e, sizeof e, "%.16e", d);
		const char *m = e + (e[0] == '-');
		sig[0] = m[0];
		memcpy(sig + 1, m + 2, 16);
		x = atoi(m + 19);
	}
	size_t n = 0;
	for (int prec = 15; prec <= 17; prec++) {
		/* Digits cut off that were all zero: the text is the exact
		** 17-digit one, which reads back as d without asking strtod. */
		int last = prec == 17 || zeros_from(sig, prec);
		/* The fast path knows without writing whether this precision
		** reads back (-1: strtod decides once it is written). */
		int back = -1;
#ifdef __SIZEOF_INT128__
		if (fast && !last)
			back = exact_reads_back(&ex, sig, x, prec);
#endif
		if (back == 0)
			continue;
		n = format_g(neg, sig, x, prec, out);
		if (!n)
			n = (size_t)snprintf(out, 32, "%.*g", prec, d);
		if (last || back == 1 || strtod(out, NULL) == d)
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
void a2m_json_put_raw(a2m_buf *b, const char *s, size_t n)
{
	put(b, s, n);
}

void a2m_json_put_string(a2m_buf *b, const char *s, size_t n)
{
	put_string(b, s, n);
}

void a2m_json_put_real(a2m_buf *b, double d)
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

void a2m_json_put_int(a2m_buf *b, int64_t v)
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

void a2m_json_put_value(a2m_buf *b, const json_t *v)
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
	a2m_buf_reserve(&b, 1024);  /* a describe, a recall of a few */
	put(&b, head, head_len);
	put_value(&b, v);
	put(&b, tail, tail_len);
	return a2m_buf_take(&b, len);
}
