/*
** json_write.h — serialise a jansson value to compact JSON text.
**
** Why not json_dumps(): jansson prints every real with 17 significant digits,
** so 0.1 goes out as 0.10000000000000001. That is the same double, but it is
** not what the caller wrote, and scores would read badly. This writer prints
** the shortest text that parses back to the identical double, keeps object key
** order, never escapes non-ASCII (the wire is UTF-8) and handles strings with
** embedded NUL (\u0000). The output never contains a raw newline, which the
** stdio framing relies on (spec §8.2).
*/
#ifndef A2M_JSON_WRITE_H
#define A2M_JSON_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/buf.h"

/*
** Returns the compact JSON text of v as a NUL-terminated string the caller
** frees with free(), and its length in *len when len is not NULL. Returns
** NULL when memory runs out.
*/
char *a2m_json_write(const json_t *v, size_t *len);

/*
** As a2m_json_write(), with head_len bytes of head before the text of v and
** tail_len bytes of tail after it, copied verbatim: one buffer for a value
** wrapped in an envelope. NULL when memory runs out.
*/
char *a2m_json_write_between(const char *head, size_t head_len, const json_t *v,
			     const char *tail, size_t tail_len, size_t *len);

/*
** The same writer, piece by piece, for text built by hand (a recall's
** records, src/protocol/records.c) in a buffer of util/buf.h: put into it,
** then take the text with a2m_buf_take(). Every piece writes exactly what
** a2m_json_write() writes for the same value.
*/
void a2m_json_put_raw(a2m_buf *b, const char *s, size_t n);    /* verbatim */
void a2m_json_put_string(a2m_buf *b, const char *s, size_t n); /* a JSON string */
void a2m_json_put_real(a2m_buf *b, double d);                  /* non-finite: null */
void a2m_json_put_int(a2m_buf *b, int64_t v);
void a2m_json_put_value(a2m_buf *b, const json_t *v);

/*
** Writes the shortest decimal text that strtod() reads back as exactly d into
** out (at least 32 bytes), always containing '.', 'e' or an exponent so it
** reads as a real. Returns the length. JSON has no spelling for an infinity
** or a NaN: those are written as null (as JavaScript's JSON.stringify does),
** so whatever reaches the writer, its output stays JSON.
*/
size_t a2m_json_format_real(double d, char out[32]);

#endif
