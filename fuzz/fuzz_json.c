/*
** fuzz_json.c — the JSON reader (src/util/json_read.c) and writer
** (src/util/json_write.c) against jansson.
**
** Byte 0: bit 0 allows NUL in strings (JSON_ALLOW_NUL, as requests are
** read). The rest is JSON text, or not. What must hold:
**   - the reader yields a value only when jansson's decoder yields one, and
**     then the very same one: same types, same numbers to the bit, same
**     strings, keys in the same order (json_read.h's promise);
**   - whatever jansson reads, the writer writes: one line, text jansson
**     reads back as the identical value (round trip), which the reader,
**     when it takes it, reads identically too; writing that again gives the
**     same bytes; the piecewise writer (a2m_json_put_value) writes the
**     same bytes as a2m_json_write;
**   - the first 8 bytes, as a double, format (a2m_json_format_real) to text
**     strtod reads back as the same double, or "null" when not finite.
*/
#include <math.h>

#include "fuzz.h"
#include "util/buf.h"
#include "util/json_read.h"
#include "util/json_write.h"

/* Identical: same type, same value to the bit, objects in the same order. */
static int same(const json_t *a, const json_t *b)
{
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_OBJECT: {
		if (json_object_size(a) != json_object_size(b))
			return 0;
		void *ia = json_object_iter((json_t *)a), *ib = json_object_iter((json_t *)b);
		for (; ia && ib; ia = json_object_iter_next((json_t *)a, ia),
				 ib = json_object_iter_next((json_t *)b, ib)) {
			if (strcmp(json_object_iter_key(ia), json_object_iter_key(ib)) != 0 ||
			    !same(json_object_iter_value(ia), json_object_iter_value(ib)))
				return 0;
		}
		return !ia && !ib;
	}
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!same(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
	case JSON_INTEGER:
		return json_integer_value(a) == json_integer_value(b);
	case JSON_REAL: {
		double x = json_real_value(a), y = json_real_value(b);
		return memcmp(&x, &y, sizeof x) == 0;
	}
	default:
		return 1;
	}
}

static void check_format_real(const uint8_t *data, size_t size)
{
	double d;
	char out[32];
	if (size < sizeof d)
		return;
	memcpy(&d, data, sizeof d);
	memset(out, 0x55, sizeof out);
	size_t n = a2m_json_format_real(d, out);
	FUZZ_ASSERT(n < sizeof out && out[n] == '\0' && strlen(out) == n, out, n,
		    "format_real's length");
	if (!isfinite(d)) {
		FUZZ_ASSERT(strcmp(out, "null") == 0, out, n, "a non-finite real is not null");
		return;
	}
	FUZZ_ASSERT(strpbrk(out, ".eE") != NULL, out, n, "a real that reads as an integer");
	char *end;
	double back = strtod(out, &end);
	FUZZ_ASSERT(*end == '\0' && memcmp(&back, &d, sizeof d) == 0, out, n,
		    "format_real does not read back as %.17g", d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	check_format_real(data + 1, size - 1);
	int allow_nul = data[0] & 1;
	size_t flags = JSON_DECODE_ANY | (allow_nul ? JSON_ALLOW_NUL : 0);
	const char *text = (const char *)data + 1;
	size_t len = size - 1;

	json_t *ours = a2m_json_read(text, len, allow_nul);
	json_t *theirs = json_loadb(text, len, flags, NULL);
	if (ours) {
		FUZZ_ASSERT(theirs, text, len, "the reader took text jansson refuses");
		FUZZ_ASSERT(same(ours, theirs), text, len, "the reader's value is not jansson's");
	}
	if (theirs) {
		size_t wlen;
		char *w = a2m_json_write(theirs, &wlen);
		FUZZ_ASSERT(w, text, len, "the writer failed");
		FUZZ_ASSERT(wlen == strlen(w) || memchr(w, '\0', wlen) == NULL, w, wlen,
			    "a raw NUL in the written text");
		FUZZ_ASSERT(!memchr(w, '\n', wlen) && !memchr(w, '\r', wlen), w, wlen,
			    "a raw line break in the written text");
		json_error_t e;
		json_t *back = json_loadb(w, wlen, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
		FUZZ_ASSERT(back, w, wlen, "jansson cannot read what was written: %s", e.text);
		FUZZ_ASSERT(same(back, theirs), w, wlen, "the round trip changed the value");
		json_t *back2 = a2m_json_read(w, wlen, 1);
		if (back2)
			FUZZ_ASSERT(same(back2, theirs), w, wlen, "the reader misreads what was written");
		size_t w2len;
		char *w2 = a2m_json_write(back, &w2len);
		FUZZ_ASSERT(w2 && w2len == wlen && memcmp(w, w2, wlen) == 0, w2, w2 ? w2len : 0,
			    "writing the round trip gives other text");
		a2m_buf b = {0};
		a2m_json_put_value(&b, theirs);
		size_t blen;
		char *bt = a2m_buf_take(&b, &blen);
		FUZZ_ASSERT(bt && blen == wlen && memcmp(bt, w, wlen) == 0, bt, bt ? blen : 0,
			    "the piecewise writer differs");
		free(bt);
		free(w2);
		json_decref(back2);
		json_decref(back);
		free(w);
	}
	json_decref(ours);
	json_decref(theirs);
	return 0;
}
