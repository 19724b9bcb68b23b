/*
** buf.c — the growable string (see buf.h).
*/
#include <stdio.h>
#include <stdlib.h>

#include "util/buf.h"

int a2m_buf_reserve(a2m_buf *b, size_t n)
{
	if (b->failed)
		return -1;
	if (b->len + n + 1 <= b->cap)
		return 0;
	/* 256 first: most texts are a few records' worth, and doubling then
	** keeps the copies of a long one linear. */
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n + 1) {
		if (cap > (size_t)-1 / 2) {
			b->failed = 1;
			return -1;
		}
		cap *= 2;
	}
	char *p = realloc(b->p, cap);
	if (!p) {
		b->failed = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void a2m_buf_puts(a2m_buf *b, const char *s)
{
	a2m_buf_put(b, s, strlen(s));
}

void a2m_buf_vprintf(a2m_buf *b, const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	char small[256];
	int n = vsnprintf(small, sizeof small, fmt, ap);
	if (n < 0) {
		b->failed = 1;
	} else if ((size_t)n < sizeof small) {
		a2m_buf_put(b, small, (size_t)n);
	} else if (a2m_buf_reserve(b, (size_t)n) == 0) {
		vsnprintf(b->p + b->len, (size_t)n + 1, fmt, again);
		b->len += (size_t)n;
	}
	va_end(again);
}

void a2m_buf_printf(a2m_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	a2m_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

const char *a2m_buf_str(const a2m_buf *b)
{
	return b->p ? b->p : "";
}

char *a2m_buf_take(a2m_buf *b, size_t *len)
{
	if (b->failed) {
		a2m_buf_free(b);
		return NULL;
	}
	char *s = b->p ? b->p : calloc(1, 1);
	if (len)
		*len = s ? b->len : 0;
	*b = (a2m_buf){0};
	return s;
}

void a2m_buf_free(a2m_buf *b)
{
	free(b->p);
	*b = (a2m_buf){0};
}
