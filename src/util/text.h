/*
** text.h — small UTF-8, identifier and optional-string helpers shared by
** the layers.
*/
#ifndef A2M_TEXT_H
#define A2M_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Room for a generated id and its NUL. */
#define A2M_ID_LEN 27

/*
** Number of Unicode code points in the valid UTF-8 string s of n bytes
** (continuation bytes are not counted).
*/
size_t a2m_utf8_length(const char *s, size_t n);

/*
** The length of the well-formed UTF-8 sequence at p (p < end), or 0 for a
** stray continuation byte, an overlong form, a surrogate, a code point past
** U+10FFFF or a sequence cut by end: exactly what jansson refuses in a
** string (the JSON reader and writer both judge text by it).
*/
size_t a2m_utf8_sequence(const unsigned char *p, const unsigned char *end);

/* Whether s (n bytes; NUL is a character like any other) is well-formed UTF-8. */
int a2m_utf8_valid(const char *s, size_t n);

/*
** Writes a new record id into out: 26 characters of Crockford base32, the
** creation time in milliseconds followed by 80 random bits, so ids are unique
** without coordination and sort roughly by creation. Clients must treat it as
** opaque (spec §3.2); the shape is ours to change. Returns 0, or -1 when the
** system's random source fails.
*/
int a2m_id_generate(int64_t now_ms, char out[A2M_ID_LEN]);

/* Equal as optional strings: both NULL, or both set and equal. */
int a2m_str_same(const char *a, const char *b);

/*
** A copy of the optional string s: NULL for NULL. When memory runs out it
** returns NULL and sets *oom, so several copies can be checked once.
*/
char *a2m_str_dup_opt(const char *s, int *oom);

#endif
