/*
** json_read.h — read JSON text into jansson values, fast, for the messages
** the server parses on every request.
**
** Why not json_loadb() alone: jansson's decoder reads through a stream one
** byte at a time, saving and validating each byte in several passes; it
** spends about 140 instructions a byte. A batch of 500 short records cost
** 18 900 instructions per record to decode, a fifth of a remember on SQLite,
** where making the same values through jansson's API costs 3 700 (callgrind,
** docs/BENCHMARKS.md). This reader walks the text once and makes the values
** with that API.
**
** It reads only what it is sure of: well-formed JSON whose value jansson's
** decoder (with JSON_DECODE_ANY, and JSON_ALLOW_NUL when asked) yields too,
** the very same value, keys in the same order, the last of duplicate keys
** kept. On anything else (invalid JSON, a NUL in a key, an integer out of
** json_int_t, a real that overflows, nesting deeper than it goes) it gives
** up and returns NULL; the caller then calls json_loadb(), which yields the
** value or its precise error. So errors and their messages stay jansson's.
** test_json_read.c checks the two agree, on fixed cases and on random and
** mangled documents.
*/
#ifndef A2M_JSON_READ_H
#define A2M_JSON_READ_H

#include <stddef.h>

#include <jansson.h>

/*
** The value of the JSON text (len bytes; need not be NUL-terminated), as
** json_loadb(text, len, JSON_DECODE_ANY | (allow_nul ? JSON_ALLOW_NUL : 0))
** would give it, or NULL when this reader leaves the text to json_loadb:
** invalid, unusual, or memory ran out. The caller owns the reference.
*/
json_t *a2m_json_read(const char *text, size_t len, int allow_nul);

/*
** As a2m_json_read(); *oom (when oom is not NULL) is then 1 when it gave up
** because memory ran out, 0 otherwise. That is the one answer jansson cannot
** be trusted with: its decoder reports some failed allocations as syntax
** errors ("invalid token"), so a caller that must not call valid text
** invalid when memory is short asks here.
*/
json_t *a2m_json_read_ex(const char *text, size_t len, int allow_nul, int *oom);

#endif
