/*
** json_write.c — compact JSON output with shortest round-trip reals (see
** json_write.h for why this exists beside json_dumps()).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_write.h"

typedef struct buf {
	char  *p;
	size_t len, cap;
	int    failed;
} buf;

static void put(buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
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

size_t a2m_json_format_real(double d, char out[32])
{
	int n = 0;
	for (int prec = 15; prec <= 17; prec++) {
		n = snprintf(out, 32, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			break;
	}
	/* "1" would read back as an integer: keep the value a real. */
	if (!strpbrk(out, ".eEn") && n + 2 < 32) {
		memcpy(out + n, ".0", 3);
		n += 2;
	}
	return (size_t)n;
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
