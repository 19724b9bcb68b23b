/*
** buf.h — the one growable string of the tree: the JSON writer, the prompt
** renderer, the procedural mirror's files, the analyser's arenas, the
** client commands' output and the benchmarks all build their text in it.
**
** Zero-initialise one (a2m_buf b = {0};), put into it, then take the text
** with a2m_buf_take() or free it with a2m_buf_free(). Running out of memory
** is sticky: the put that could not grow sets `failed` and leaves the
** content as it was, every later put does nothing, and the caller checks
** once, at the end — a2m_buf_take() then returns NULL.
*/
#ifndef A2M_UTIL_BUF_H
#define A2M_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

typedef struct a2m_buf {
	char  *p;       /* NULL until something was put; then NUL-terminated */
	size_t len;     /* bytes put, the NUL not counted */
	size_t cap;     /* bytes allocated */
	int    failed;  /* an allocation failed: the content is incomplete */
} a2m_buf;

/*
** Makes room for n more bytes and the NUL (at least doubling). Returns 0, or
** -1 with b->failed set when memory ran out or b had failed before.
*/
int a2m_buf_reserve(a2m_buf *b, size_t n);

/* Appends n bytes of s (any bytes, NULs included). Inline: the JSON writer
** calls it for every token of a response. */
static inline void a2m_buf_put(a2m_buf *b, const void *s, size_t n)
{
	if (b->failed || (b->len + n + 1 > b->cap && a2m_buf_reserve(b, n) != 0))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* Appends the NUL-terminated s. */
void a2m_buf_puts(a2m_buf *b, const char *s);

/* Appends what printf would print. */
void a2m_buf_printf(a2m_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void a2m_buf_vprintf(a2m_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* The text so far, "" when nothing was put; borrowed, valid until the next put. */
const char *a2m_buf_str(const a2m_buf *b);

/*
** Takes the text out of b (the caller frees it with free(); "" when nothing
** was put), its length in *len when len is not NULL, and leaves b empty.
** Returns NULL, and frees what b held, when b failed along the way.
*/
char *a2m_buf_take(a2m_buf *b, size_t *len);

/* Frees what b holds and leaves it empty. */
void a2m_buf_free(a2m_buf *b);

#endif
