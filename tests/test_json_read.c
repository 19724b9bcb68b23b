/*
** test_json_read.c — the fast JSON reader (src/util/json_read.c) against
** jansson's decoder. The reader's promise: whatever it reads, jansson
** reads too, to the same value with keys in the same order; whatever
** jansson refuses, the reader leaves alone (NULL). Checked on fixed cases,
** on random documents written in random layouts, and on those documents
** mangled byte by byte.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "check.h"
#include "util/json_read.h"

/*
** What each side makes of text: 1 when both read it to the same value (or
** the reader leaves it and jansson reads it), 0 when jansson refuses it
** and the reader leaves it too, -1 when they disagree. *read_it: the
** reader gave a value.
*/
static int compare(const char *text, size_t len, int allow_nul, int *read_it)
{
	size_t flags = JSON_DECODE_ANY | (allow_nul ? JSON_ALLOW_NUL : 0);
	json_t *ours = a2m_json_read(text, len, allow_nul);
	json_t *theirs = json_loadb(text, len, flags, NULL);
	int verdict;
	*read_it = ours != NULL;
	if (!ours) {
		verdict = theirs ? 1 : 0;
	} else if (!theirs) {
		verdict = -1;
	} else {
		/* json_equal ignores key order; the dumps keep it. */
		char *a = json_dumps(ours, JSON_COMPACT | JSON_ENCODE_ANY);
		char *b = json_dumps(theirs, JSON_COMPACT | JSON_ENCODE_ANY);
		verdict = json_equal(ours, theirs) && a && b && strcmp(a, b) == 0 ? 1 : -1;
		free(a);
		free(b);
	}
	json_decref(ours);
	json_decref(theirs);
	return verdict;
}

/* Valid JSON the reader must read, each to jansson's value. */
static void test_reads_what_jansson_reads(void)
{
	static const char *const texts[] = {
		"{}", "[]", " { } ", "[ ]", "0", "-0", "1", "-1", "42",
		"9223372036854775807", "-9223372036854775808", "1.5", "-0.0", "1e2", "1E+2",
		"2.5e-3", "1e-400", "0.1", "123456789.123456789", "true", "false", "null",
		"\"\"", "\"abc\"", "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", "\"\\u00e9\\u00E9\"",
		"\"\\ud83d\\ude00\"", "\"citt\xc3\xa0 K\xc3\xb6ln \xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\x98\x80\"",
		"\"\x7f\"", "{\"a\":1,\"b\":[1,2,{\"c\":null}],\"d\":{\"e\":\"f\"}}",
		"{\"a\":1,\"a\":2,\"b\":3}", "{\"b\":1,\"a\":2}", "{\"\":0}",
		"{\"k\\u00e9y\":\"v\",\"k\\\"2\":[]}", " \t\r\n[1 , 2\t,\n3 ] \n",
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"the cat sat\",\"salience\":0.7,\"tier\":\"semantic\","
		"\"metadata\":{\"source\":\"test\",\"n\":[1,2.5,-3]}}]}}",
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		int read_it = 0;
		int v = compare(texts[i], strlen(texts[i]), 1, &read_it);
		if (v != 1 || !read_it)
			printf("  case %zu: %s (verdict %d, read %d)\n", i, texts[i], v, read_it);
		CHECK(v == 1 && read_it);
	}
}

/* A string with \u0000 is read only when NUL is allowed, as in jansson. */
static void test_nul_only_when_allowed(void)
{
	const char *text = "[\"a\\u0000b\"]";
	json_t *v = a2m_json_read(text, strlen(text), 1);
	CHECK(v && json_string_length(json_array_get(v, 0)) == 3);
	json_decref(v);
	CHECK(a2m_json_read(text, strlen(text), 0) == NULL);
	/* A raw NUL byte is a control character: nobody reads it. */
	int read_it = 1;
	CHECK(compare("\"a\0b\"", 5, 1, &read_it) == 0 && !read_it);
	/* The text need not end in a NUL: its length decides. */
	v = a2m_json_read("[1]xyz", 3, 1);
	CHECK(v && json_is_array(v) && json_array_size(v) == 1);
	json_decref(v);
}

/* Texts jansson refuses: the reader must not read any of them. */
static void test_leaves_what_jansson_refuses(void)
{
	static const char *const texts[] = {
		"", " ", "{", "}", "[", "[1,]", "[,1]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}",
		"{a:1}", "{'a':1}", "01", "-", "1.", ".5", "1e", "1e+", "+1", "0x10", "NaN",
		"Infinity", "tru", "nul", "truex", "[true false]", "\"abc", "\"a\x01\"",
		"\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"\\ud800\"", "\"\\udc00\"",
		"\"\\ud800\\u0041\"", "\"\\ud800x\"", "\"\x80\"", "\"\xc0\xaf\"", "\"\xc3\"",
		"\"\xe0\x80\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xf5\x80\x80\x80\"",
		"\"\xff\"", "{\"a\\u0000b\":1}", "9223372036854775808", "-9223372036854775809",
		"1e400", "-1e400", "[1] [2]", "{} x", "\xef\xbb\xbf{}", "[\"a\"\"b\"]",
	};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		int read_it = 1;
		int v = compare(texts[i], strlen(texts[i]), 1, &read_it);
		if (v != 0 || read_it)
			printf("  case %zu: %s (verdict %d, read %d)\n", i, texts[i], v, read_it);
		CHECK(v == 0 && !read_it);
	}
}

/* Nesting deeper than the reader goes is left to jansson, which reads it. */
static void test_deep_nesting_left_to_jansson(void)
{
	char text[2 * 300 + 2];
	size_t n = 0;
	for (int i = 0; i < 300; i++)
		text[n++] = '[';
	for (int i = 0; i < 300; i++)
		text[n++] = ']';
	text[n] = '\0';
	int read_it = 1;
	CHECK(compare(text, n, 1, &read_it) == 1);
	CHECK(!read_it);
}

/* ---- random documents ---- */

typedef struct out {
	char   buf[16384];
	size_t n;
} out;

static void put(out *o, const char *s, size_t n)
{
	if (o->n + n < sizeof o->buf) {
		memcpy(o->buf + o->n, s, n);
		o->n += n;
	}
}

static void puts_(out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void space(out *o, uint64_t *rng)
{
	static const char *const ws[] = {"", "", "", " ", "\n", "\t", "\r\n  "};
	puts_(o, ws[check_rand(rng) % 7]);
}

/* A random string body: ASCII, escapes of every kind, and UTF-8. */
static void random_string(out *o, uint64_t *rng)
{
	static const char *const pieces[] = {
		"a", "Z", "0", " ", "~", "\x7f", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r",
		"\\t", "\\u0041", "\\u00e9", "\\u20AC", "\\ud83d\\ude00", "\\u0000", "\xc3\xa0",
		"\xe6\x9d\xb1", "\xf0\x9f\x98\x80", "\xd0\xb9", "key", "content",
	};
	size_t len = check_rand(rng) % 12;
	puts_(o, "\"");
	for (size_t i = 0; i < len; i++)
		puts_(o, pieces[check_rand(rng) % (sizeof pieces / sizeof pieces[0])]);
	puts_(o, "\"");
}

static void random_number(out *o, uint64_t *rng)
{
	static const char *const forms[] = {
		"0", "-0", "7", "-12", "123456789012", "9223372036854775807",
		"-9223372036854775808", "0.5", "-3.25", "1e10", "2E-5", "6.02e+23", "1e308",
		"4.9e-324", "0.1", "100.0",
	};
	char b[64];
	if (check_rand(rng) % 2)
		snprintf(b, sizeof b, "%lld", (long long)(check_rand(rng) % 2000000) - 1000000);
	else
		snprintf(b, sizeof b, "%s", forms[check_rand(rng) % (sizeof forms / sizeof forms[0])]);
	puts_(o, b);
}

static void random_value(out *o, uint64_t *rng, int depth)
{
	unsigned kind = (unsigned)(check_rand(rng) % (depth > 4 ? 6 : 8));
	space(o, rng);
	switch (kind) {
	case 0: puts_(o, "true"); break;
	case 1: puts_(o, "false"); break;
	case 2: puts_(o, "null"); break;
	case 3: case 4: random_string(o, rng); break;
	case 5: random_number(o, rng); break;
	case 6: {
		size_t n = check_rand(rng) % 5;
		puts_(o, "[");
		for (size_t i = 0; i < n; i++) {
			if (i)
				puts_(o, ",");
			random_value(o, rng, depth + 1);
		}
		space(o, rng);
		puts_(o, "]");
		break;
	}
	default: {
		size_t n = check_rand(rng) % 5;
		puts_(o, "{");
		for (size_t i = 0; i < n; i++) {
			if (i)
				puts_(o, ",");
			space(o, rng);
			random_string(o, rng);
			space(o, rng);
			puts_(o, ":");
			random_value(o, rng, depth + 1);
		}
		space(o, rng);
		puts_(o, "}");
		break;
	}
	}
	space(o, rng);
}

/*
** Random documents, read with and without NUL allowed, then each mangled:
** a byte changed, dropped or added, or the text cut short. Never may the
** reader read what jansson refuses, nor read differently.
*/
static void test_random_and_mangled_documents_agree(void)
{
	static const char bytes[] = "{}[]\",:\\u0 e.-+1aZ\x80\xc3\xa0\xff\x01";
	uint64_t rng = 0x9E3779B97F4A7C15ULL;
	int disagree = 0;
	size_t read_count = 0, docs = 0;
	for (int round = 0; round < 4000; round++) {
		out o = {.n = 0};
		random_value(&o, &rng, 0);
		for (int variant = 0; variant < 6; variant++) {
			char text[sizeof o.buf + 2];
			size_t n = o.n;
			memcpy(text, o.buf, n);
			size_t at = n ? (size_t)(check_rand(&rng) % n) : 0;
			char b = bytes[check_rand(&rng) % (sizeof bytes - 1)];
			switch (variant) {
			case 0: case 1: break;
			case 2: if (n) text[at] = b; break;
			case 3: if (n) { memmove(text + at, text + at + 1, n - at - 1); n--; } break;
			case 4: memmove(text + at + 1, text + at, n - at); text[at] = b; n++; break;
			default: n = at; break;
			}
			int read_it = 0;
			int v = compare(text, n, variant != 1, &read_it);
			docs++;
			read_count += (size_t)read_it;
			if (v < 0 && disagree++ < 5)
				printf("  disagree (allow_nul %d): %.*s\n", variant != 1, (int)n, text);
		}
	}
	CHECK_INT(disagree, 0);
	/* The unmangled ones are valid: most must be read, not left. */
	CHECK(read_count > docs / 4);
}

int main(void)
{
	static const test_case tests[] = {
		TEST(test_reads_what_jansson_reads),
		TEST(test_nul_only_when_allowed),
		TEST(test_leaves_what_jansson_refuses),
		TEST(test_deep_nesting_left_to_jansson),
		TEST(test_random_and_mangled_documents_agree),
		{NULL, NULL},
	};
	return run_tests(tests);
}
