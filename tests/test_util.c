/*
** test_util.c — unit tests of src/util: JSON output, RFC 3339 time, UTF-8
** length, id generation, the growth rule of arrays.
*/
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "store/bloom.h"
#include "store/postings_cache.h"
#include "util/clock.h"
#include "util/grow.h"
#include "util/hash.h"
#include "util/json_write.h"
#include "util/phase.h"
#include "util/text.h"
#include "util/thread.h"

static char *write_text(const char *in)
{
	json_t *v = json_loads(in, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!v)
		return NULL;
	char *out = a2m_json_write(v, NULL);
	json_decref(v);
	return out;
}

static void test_json_reals_are_shortest_roundtrip(void)
{
	const char *cases[][2] = {
		{"0.1", "0.1"}, {"1.5", "1.5"}, {"1e-7", "9.9999999999999995e-08"},
		{"3.141592653589793", "3.141592653589793"}, {"1.0", "1.0"},
		{"100.0", "100.0"}, {"-0.25", "-0.25"}, {"1e300", "1.0000000000000001e+300"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *out = write_text(cases[i][0]);
		CHECK(out != NULL);
		/* Whatever the text, it must read back as the identical double. */
		CHECK(out && strtod(out, NULL) == strtod(cases[i][0], NULL));
		CHECK(out && strpbrk(out, ".e") != NULL);
		free(out);
	}
	char *out = write_text("0.1");
	CHECK_STR(out, "0.1");
	free(out);
	out = write_text("[1.0,2]");
	CHECK_STR(out, "[1.0,2]");
	free(out);
}

/* What a2m_json_format_real promises, the slow way: the first of "%.15g",
** "%.16g", "%.17g" that strtod reads back as d, made to look like a real. */
static void reference_real(double d, char out[40])
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, 40, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			break;
	}
	if (!strpbrk(out, ".eEn"))
		strcat(out, ".0");
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint64_t rng(void)
{
	return check_rand(&rng_state);
}

/* The integer fast path against printf and strtod, over the reals recall
** writes (scores in [0,1]) and everything around the path's edges. */
static void test_json_reals_fast_path_matches_printf(void)
{
	size_t bad = 0, n = 0;
	char got[32], want[40];
	for (int i = 0; i < 400000; i++) {
		double d;
		uint64_t r = rng();
		switch (i % 8) {
		case 0: d = (double)(r >> 11) / 9007199254740992.0; break;     /* [0,1) */
		case 1: d = (double)(r % 1000000) / 1000000.0; break;        /* short decimals */
		case 2: d = (double)(r % 100000) / 1e9; break;               /* small ones */
		case 3: d = ldexp(1.0, (int)(r % 80) - 40); break;           /* powers of two */
		case 4: d = nextafter((double)(r % 1000) / 1000.0, 2.0); break;
		case 5: d = nextafter((double)(r % 1000) / 1000.0, -2.0); break;
		case 6: memcpy(&d, &r, sizeof d); break;                      /* any bits */
		default: d = -(double)(r >> 11) / 9007199254740992.0 * 1e6; break;
		}
		if (!isfinite(d))
			continue;
		a2m_json_format_real(d, got);
		reference_real(d, want);
		n++;
		if (strcmp(got, want) != 0 && bad++ < 5)
			fprintf(stderr, "  %.17g: got %s, want %s\n", d, got, want);
	}
	CHECK(n > 300000);
	CHECK(bad == 0);
	a2m_json_format_real(0.5, got);
	CHECK_STR(got, "0.5");
	a2m_json_format_real(0.1 + 0.2, got);
	CHECK_STR(got, "0.30000000000000004");
	a2m_json_format_real(1.0 / 3.0, got);
	CHECK_STR(got, "0.3333333333333333");
}

/* JSON has no infinity or NaN: the writer says null, and writes nothing
** it did not mean to (the bytes after it stay as they were). */
static void test_json_non_finite_reals_are_null(void)
{
	const double bad[] = {INFINITY, -INFINITY, NAN, -NAN};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char got[32];
		memset(got, 'z', sizeof got);
		CHECK_INT(a2m_json_format_real(bad[i], got), 4);
		CHECK_STR(got, "null");
		CHECK(got[5] == 'z');
		a2m_buf b = {0};
		a2m_json_put_real(&b, bad[i]);
		CHECK_INT(b.len, 4);
		CHECK(b.len == 4 && memcmp(b.p, "null", 4) == 0);
		free(b.p);
	}
}

/* in as a JSON string, escaped byte by byte (the writer's rules). */
static void escape_slowly(const char *in, size_t n, char *out)
{
	*out++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == '"' || c == '\\')
			out += sprintf(out, "\\%c", c);
		else if (c && strchr("\n\r\t\b\f", c))
			out += sprintf(out, "\\%c", "nrtbf"[strchr("\n\r\t\b\f", c) - "\n\r\t\b\f"]);
		else if (c < 0x20)
			out += sprintf(out, "\\u%04x", c);
		else
			*out++ = (char)c;
	}
	*out++ = '"';
	*out = '\0';
}

static void test_json_strings_escaped_in_long_runs(void)
{
	/* Each escape at every position of the 8-byte words the writer skips
	** through, beside bytes above 0x7f that must pass untouched. */
	char in[64], want[256];
	const char specials[] = {'"', '\\', '\n', 1, 0x1f};
	for (int at = 0; at < 24; at++) {
		for (size_t k = 0; k < sizeof specials; k++) {
			memset(in, 'a', 24);
			in[at] = specials[k];
			in[24] = '\xc3', in[25] = '\xa0';
			json_t *v = json_stringn(in, 26);
			char *out = a2m_json_write(v, NULL);
			escape_slowly(in, 26, want);
			CHECK_STR(out, want);
			free(out);
			json_decref(v);
		}
	}
}

/*
** Random strings, dense with bytes to escape (several in one 8-byte word,
** beside bytes above 0x7f, at every offset and length), written as the
** byte-by-byte rules would: the writer jumps to the first escape of a word
** from its flags, and a flag set wrongly would drop or escape a byte.
*/
static void test_json_strings_escaped_at_random(void)
{
	static const unsigned char pool[] = {'a', 'Z', ' ', '"', '\\', '\n', '\r', '\t', '\b',
					     '\f', 0, 1, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f,
					     0x80, 0xa0, 0xc3, 0xff};
	/* Long ones too: the writer reserves its output a piece at a time. */
	enum { LONG = 9000 };
	char *in = malloc(LONG), *want = malloc(LONG * 6 + 3);
	uint64_t r = 0x9E3779B97F4A7C15ULL;
	for (int round = 0; in && want && round < 20100; round++) {
		size_t n = round < 20000 ? (size_t)(round % 80) : LONG - (size_t)(round % 20);
		for (size_t i = 0; i < n; i++) {
			r ^= r << 13, r ^= r >> 7, r ^= r << 17;
			/* Mostly plain letters, so that whole clean words occur too. */
			in[i] = (char)(r % 4 ? 'a' + (r >> 8) % 26 : pool[(r >> 8) % sizeof pool]);
		}
		json_t *v = json_stringn_nocheck(in, n);
		char *out = a2m_json_write(v, NULL);
		escape_slowly(in, n, want);
		CHECK_STR(out, want);
		free(out);
		json_decref(v);
	}
	CHECK(in && want);
	free(in);
	free(want);
}

static void test_json_integers_beyond_2_53_exact(void)
{
	char *out = write_text("{\"a\":9007199254740993,\"b\":-9007199254740993,\"c\":9223372036854775807}");
	CHECK_STR(out, "{\"a\":9007199254740993,\"b\":-9007199254740993,\"c\":9223372036854775807}");
	free(out);
}

static void test_json_key_order_and_unicode_kept(void)
{
	const char *in = "{\"z\":1,\"a\":{\"y\":[true,false,null],\"b\":\"citt\xc3\xa0 \xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\x98\x80\"}}";
	char *out = write_text(in);
	CHECK_STR(out, in);
	free(out);
}

static void test_json_escapes_control_and_nul(void)
{
	char *out = write_text("\"a\\nb\\u0000c\\u001f\\\"\\\\/\"");
	CHECK_STR(out, "\"a\\nb\\u0000c\\u001f\\\"\\\\/\"");
	CHECK(out && !strchr(out, '\n'));
	free(out);
}

static void test_clock_format_has_millis_and_z(void)
{
	char ts[A2M_TIMESTAMP_LEN];
	CHECK_STR(a2m_clock_format(0, ts), "1970-01-01T00:00:00.000Z");
	CHECK_STR(a2m_clock_format(1785233730123LL, ts), "2026-07-28T10:15:30.123Z");
	CHECK_STR(a2m_clock_format(951782400000LL, ts), "2000-02-29T00:00:00.000Z");
	CHECK_STR(a2m_clock_format(-1, ts), "1969-12-31T23:59:59.999Z");
}

static void test_clock_parse_roundtrip(void)
{
	int64_t ms = 0;
	CHECK_INT(a2m_clock_parse("2026-07-28T10:15:30.123Z", &ms), 0);
	CHECK_INT(ms, 1785233730123LL);
	CHECK_INT(a2m_clock_parse("2026-07-28T10:15:30Z", &ms), 0);
	CHECK_INT(ms, 1785233730000LL);
	CHECK_INT(a2m_clock_parse("2026-07-28T10:15:30.123456Z", &ms), 0);
	CHECK_INT(ms, 1785233730123LL);
	CHECK_INT(a2m_clock_parse("2026-07-28 10:15:30Z", &ms), -1);
	CHECK_INT(a2m_clock_parse("2026-07-28T10:15:30.123+01:00", &ms), -1);
	CHECK_INT(a2m_clock_parse("1785233730123", &ms), -1);
	char ts[A2M_TIMESTAMP_LEN];
	int64_t now = a2m_clock_now_ms();
	CHECK_INT(a2m_clock_parse(a2m_clock_format(now, ts), &ms), 0);
	CHECK_INT(ms, now);
}

static void test_utf8_length_counts_code_points(void)
{
	CHECK_INT(a2m_utf8_length("abc", 3), 3);
	CHECK_INT(a2m_utf8_length("citt\xc3\xa0", 6), 5);
	CHECK_INT(a2m_utf8_length("\xe6\x9d\xb1\xe4\xba\xac", 6), 2);
	CHECK_INT(a2m_utf8_length("\xf0\x9f\x98\x80", 4), 1);
}

static void test_ids_unique_and_well_formed(void)
{
	char a[A2M_ID_LEN], b[A2M_ID_LEN];
	CHECK_INT(a2m_id_generate(1000, a), 0);
	CHECK_INT(a2m_id_generate(1000, b), 0);
	CHECK_INT(strlen(a), 26);
	CHECK(strcmp(a, b) != 0);
	/* Same time prefix, so ids sort roughly by creation. */
	CHECK(strncmp(a, b, 10) == 0);
	CHECK(strspn(a, "0123456789ABCDEFGHJKMNPQRSTVWXYZ") == 26);
}

/*
** a2m_utf8_valid judges text as jansson does (the recall writer and the
** JSON reader rely on it): on fixed sequences at every edge, and on random
** bytes drawn mostly from the lead and continuation ranges.
*/
static void test_utf8_valid_agrees_with_jansson(void)
{
	static const char *const fixed[] = {
		"", "abc", "citt\xc3\xa0", "\xe6\x9d\xb1", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf",
		"\x80", "\xc0\xaf", "\xc1\xbf", "\xc2", "\xe0\x80\xaf", "\xe0\xa0\x80",
		"\xed\x9f\xbf", "\xed\xa0\x80", "\xef\xbf\xbf", "\xf0\x8f\xbf\xbf",
		"\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "a\xc3", "\xe6\x9d",
	};
	int wrong = 0;
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
		json_t *v = json_stringn(fixed[i], strlen(fixed[i]));
		wrong += a2m_utf8_valid(fixed[i], strlen(fixed[i])) != (v != NULL);
		json_decref(v);
	}
	CHECK_INT(wrong, 0);
	static const unsigned char pool[] = {'a', 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2,
					     0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff};
	uint64_t rng = 0x2545F4914F6CDD1DULL;
	int valid = 0;
	for (int round = 0; round < 20000; round++) {
		char b[8];
		size_t n = 1 + check_rand(&rng) % sizeof b;
		for (size_t i = 0; i < n; i++)
			b[i] = (char)pool[check_rand(&rng) % sizeof pool];
		json_t *v = json_stringn(b, n);
		int ours = a2m_utf8_valid(b, n);
		wrong += ours != (v != NULL);
		valid += ours;
		json_decref(v);
	}
	CHECK_INT(wrong, 0);
	CHECK(valid > 100);  /* the draw reaches valid text too, not only invalid */
}

/*
** Ids draw their random bits a batch at a time (text.c). Many ids in a row
** are all distinct, and a forked child does not reuse the bits its parent
** had drawn but not yet used: with the fork hook removed, the child's next
** id would equal the parent's.
*/
static void test_ids_differ_across_batches_and_fork(void)
{
	enum { N = 200 };
	static char ids[N][A2M_ID_LEN];
	for (int i = 0; i < N; i++)
		CHECK_INT(a2m_id_generate(1000, ids[i]), 0);
	int dup = 0;
	for (int i = 0; i < N; i++)
		for (int j = i + 1; j < N; j++)
			dup += strcmp(ids[i], ids[j]) == 0;
	CHECK_INT(dup, 0);
	int fd[2];
	CHECK_INT(pipe(fd), 0);
	fflush(NULL);
	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		char c[A2M_ID_LEN];
		int ok = a2m_id_generate(1000, c) == 0 && write(fd[1], c, sizeof c) == sizeof c;
		_exit(ok ? 0 : 1);
	}
	char mine[A2M_ID_LEN], theirs[A2M_ID_LEN];
	CHECK_INT(a2m_id_generate(1000, mine), 0);
	CHECK(read(fd[0], theirs, sizeof theirs) == (ssize_t)sizeof theirs);
	int status = 0;
	CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(strcmp(mine, theirs) != 0);
	close(fd[0]);
	close(fd[1]);
}

/*
** The postings cache holds far more terms than its first buckets (its
** table doubles as it fills): every term comes back with its own postings,
** eviction by budget still works, and a cleared cache finds nothing.
*/
static void test_postings_cache_grows_and_finds_every_term(void)
{
	enum { TERMS = 5000 };
	a2m_pcache *c = a2m_pcache_new(1000000 * sizeof(a2m_posting));
	char term[32];
	CHECK(c != NULL);
	if (!c)
		return;
	for (int i = 0; i < TERMS; i++) {
		a2m_posting p[2] = {{.seq = i, .tf = 1, .dl = 7}, {.seq = i + 1, .tf = 2, .dl = 9}};
		snprintf(term, sizeof term, "term%d", i);
		a2m_pcache_put(c, term, strlen(term), p, (size_t)(1 + i % 2));
	}
	int wrong = 0;
	for (int i = 0; i < TERMS; i++) {
		const a2m_posting *v = NULL;
		size_t n = 0;
		snprintf(term, sizeof term, "term%d", i);
		if (!a2m_pcache_lend(c, term, strlen(term), &v, &n) || n != (size_t)(1 + i % 2) ||
		    v[0].seq != i || (n == 2 && v[1].tf != 2))
			wrong++;
	}
	CHECK_INT(wrong, 0);
	const a2m_posting *v = NULL;
	size_t n = 0;
	CHECK(!a2m_pcache_lend(c, "term5000", 8, &v, &n));
	a2m_pcache_clear(c);
	CHECK(!a2m_pcache_lend(c, "term7", 5, &v, &n));
	a2m_pcache_free(c);
	/* A budget of 100 postings (104 with an entry's own cost of 4 each, at
	** most): the oldest go, the newest stay. */
	c = a2m_pcache_new(100 * sizeof(a2m_posting));
	CHECK(c != NULL);
	if (!c)
		return;
	a2m_posting one = {.seq = 1, .tf = 1, .dl = 1};
	for (int i = 0; i < 3000; i++) {
		a2m_pcache_next_period(c);
		snprintf(term, sizeof term, "t%d", i);
		a2m_pcache_put(c, term, strlen(term), &one, 1);
	}
	CHECK(a2m_pcache_lend(c, "t2999", 5, &v, &n));
	CHECK(!a2m_pcache_lend(c, "t0", 2, &v, &n));
	a2m_pcache_free(c);
}

/*
** One entry may hold half the budget (postings_cache.c ENTRY_MOST: at 10M
** records the commonest word's list, 18 MB read a block at a time, was
** over the quarter it had, so every recall read it again): a list of 40%
** of the budget is kept, and stays after other terms come and go while
** the rest fits; one of 60% is not kept; a2m_pcache_entry_most, what
** probes may fill up to, stays a quarter.
*/
static void test_postings_cache_keeps_an_entry_of_half_its_budget(void)
{
	enum { BUDGET = 10000 };
	a2m_pcache *c = a2m_pcache_new(BUDGET * sizeof(a2m_posting));
	static a2m_posting big[BUDGET];
	const a2m_posting *v = NULL;
	size_t n = 0;
	CHECK(c != NULL);
	if (!c)
		return;
	/* Probes fill blocks up to a quarter only. */
	CHECK_INT(a2m_pcache_entry_most(c), BUDGET * sizeof(a2m_posting) / 4 - 64);
	for (size_t i = 0; i < BUDGET; i++)
		big[i] = (a2m_posting){.seq = (int64_t)i, .tf = 1, .dl = 5};
	a2m_pcache_put(c, "forty", 5, big, BUDGET * 4 / 10);
	a2m_pcache_put(c, "sixty", 5, big, BUDGET * 6 / 10);
	/* Small terms after it, a tenth of the budget in all: forty still fits beside them. */
	char term[32];
	for (int i = 0; i < 100; i++) {
		a2m_pcache_next_period(c);
		snprintf(term, sizeof term, "t%d", i);
		a2m_pcache_put(c, term, strlen(term), big, 5);
	}
	CHECK(a2m_pcache_lend(c, "forty", 5, &v, &n));
	CHECK_INT(n, BUDGET * 4 / 10);
	CHECK(!a2m_pcache_lend(c, "sixty", 5, &v, &n));
	a2m_pcache_free(c);
}

/* A stand-in for a list read a block at a time (a2m_pcache_lazy_ops). */
typedef struct fake_lazy {
	size_t bytes, decoded;  /* what it costs: its bytes, and what it decoded */
	int    sheds, *freed;
} fake_lazy;

static void fake_lend(void *obj, a2m_postings_lent *out)
{
	(void)obj;
	memset(out, 0, sizeof *out);
}

static int fake_fill_all(void *obj)
{
	(void)obj;
	return -1;
}

static size_t fake_cost(const void *obj)
{
	const fake_lazy *f = obj;
	return f->bytes + f->decoded;
}

static void fake_shed(void *obj)
{
	fake_lazy *f = obj;
	f->decoded = 0;
	f->sheds++;
}

static int fake_whole(const void *obj)
{
	(void)obj;
	return 0;
}

static void fake_free(void *obj)
{
	fake_lazy *f = obj;
	*f->freed = 1;
	free(f);
}

/*
** Room is made from the blocks lazy lists decoded before whole lists are
** evicted (postings_cache.c, make_room): a list evicted is read again from
** SQLite on its next use, a list shed only decodes again what that use
** asks for. A lazy list of a tenth of the budget that decoded 35% more is
** the oldest when other terms need room: it is shed, not evicted.
*/
static void test_postings_cache_sheds_decoded_blocks_before_evicting(void)
{
	enum { BUDGET = 1000 };  /* postings */
	static const a2m_pcache_lazy_ops ops = {fake_lend, fake_fill_all, fake_cost, fake_shed,
						fake_whole, fake_free};
	a2m_pcache *c = a2m_pcache_new(BUDGET * sizeof(a2m_posting));
	fake_lazy *f = calloc(1, sizeof *f);
	int freed = 0;
	static a2m_posting some[100];
	a2m_postings_lent l;
	CHECK(c != NULL && f != NULL);
	if (!c || !f) {
		a2m_pcache_free(c);
		free(f);
		return;
	}
	f->bytes = BUDGET * sizeof(a2m_posting) / 10;
	f->freed = &freed;
	CHECK_INT(a2m_pcache_put_lazy(c, "lazy", 4, f, &ops), 1);
	CHECK_INT(a2m_pcache_lend_bounds(c, "lazy", 4, &l), 1);
	/* Blocks decoded while lent: counted at its next loan. */
	f->decoded = BUDGET * sizeof(a2m_posting) * 35 / 100;
	a2m_pcache_next_period(c);
	CHECK_INT(a2m_pcache_lend_bounds(c, "lazy", 4, &l), 1);
	CHECK_INT(f->sheds, 0);
	/* Six terms of a tenth each, one period each: the fifth no longer fits. */
	char term[32];
	for (int i = 0; i < 6; i++) {
		a2m_pcache_next_period(c);
		snprintf(term, sizeof term, "t%d", i);
		a2m_pcache_put(c, term, strlen(term), some, 100);
	}
	CHECK_INT(freed, 0);
	CHECK_INT(f->sheds, 1);
	CHECK_INT(a2m_pcache_lend_bounds(c, "lazy", 4, &l), 1);
	for (int i = 0; i < 6; i++) {
		const a2m_posting *v = NULL;
		size_t n = 0;
		snprintf(term, sizeof term, "t%d", i);
		CHECK(a2m_pcache_lend(c, term, strlen(term), &v, &n) && n == 100);
	}
	a2m_pcache_free(c);
	CHECK_INT(freed, 1);
}

/*
** The term filter: every key added is reported as maybe present, and of
** keys never added about 1% are (the size bloom.h promises), never most.
*/
static void test_bloom_filter_has_no_false_negatives(void)
{
	enum { KEYS = 5000, OTHERS = 20000 };
	size_t n = a2m_bloom_bytes(KEYS);
	unsigned char *bits = calloc(1, n);
	char key[32];
	CHECK(bits != NULL && n == (KEYS * 10 + 7) / 8 && a2m_bloom_bytes(0) == 8);
	for (int i = 0; i < KEYS; i++) {
		snprintf(key, sizeof key, "term%d", i);
		a2m_bloom_add(bits, n, a2m_hash_str(key));
	}
	int missed = 0, false_hits = 0;
	for (int i = 0; i < KEYS; i++) {
		snprintf(key, sizeof key, "term%d", i);
		missed += !a2m_bloom_maybe(bits, n, a2m_hash_str(key));
	}
	for (int i = 0; i < OTHERS; i++) {
		snprintf(key, sizeof key, "other%d", i);
		false_hits += a2m_bloom_maybe(bits, n, a2m_hash_str(key));
	}
	CHECK_INT(missed, 0);
	CHECK(false_hits < OTHERS * 3 / 100);
	free(bits);
}

/* What a helper thread finds its signal mask to block. */
static void *mask_of_helper(void *arg)
{
	sigset_t now;
	int *blocked = arg;
	pthread_sigmask(SIG_BLOCK, NULL, &now);
	blocked[0] = sigismember(&now, SIGTERM) == 1;
	blocked[1] = sigismember(&now, SIGINT) == 1;
	blocked[2] = sigismember(&now, SIGUSR1) == 1;
	return NULL;
}

/*
** A helper thread blocks every signal, even when its creator blocks none,
** and the creator's own mask is left as it was.
*/
static void test_helper_threads_block_every_signal(void)
{
	sigset_t none, before, after;
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, &before);
	int blocked[3] = {0, 0, 0};
	pthread_t t;
	CHECK(a2m_thread_start(&t, mask_of_helper, blocked) == 0);
	pthread_join(t, NULL);
	CHECK(blocked[0] && blocked[1] && blocked[2]);
	pthread_sigmask(SIG_BLOCK, NULL, &after);
	CHECK(sigismember(&after, SIGTERM) == 0 && sigismember(&after, SIGUSR1) == 0);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
}

/* The cores usable follow the affinity: 1 in a child bound to one core, and no helper. */
static void test_cpus_usable_follow_the_affinity(void)
{
	CHECK(a2m_cpus_usable() >= 1);
	pid_t pid = fork();
	if (pid == 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(0, &one);
		int ok = sched_setaffinity(0, sizeof one, &one) == 0 && a2m_cpus_usable() == 1 &&
			 a2m_helpers_default() == 0;
		_exit(ok ? 0 : 1);
	}
	int status = -1;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
** A watched thread's time goes to the phase it names: a sleep to the phase
** it slept in (a sleep counted, its wall time there), a nested phase to
** itself and back to the one it interrupted; the phases sum to the whole;
** another thread, not watched, changes nothing.
*/
static void *enter_unwatched(void *arg)
{
	(void)arg;
	a2m_phase was = a2m_phase_enter(A2M_PHASE_COMMIT);
	usleep(2000);
	a2m_phase_leave(was);
	return (void *)(intptr_t)(was == A2M_PHASE_OTHER);
}

static void test_phases_count_where_the_thread_was(void)
{
	a2m_phase_clock c;
	a2m_phase_watch(&c);
	a2m_phase_reset(&c);
	a2m_phase was = a2m_phase_enter(A2M_PHASE_BEGIN);
	CHECK(was == A2M_PHASE_OTHER);
	usleep(5000);
	a2m_phase inner = a2m_phase_enter(A2M_PHASE_SYNC);
	CHECK(inner == A2M_PHASE_BEGIN);
	usleep(3000);
	a2m_phase_leave(inner);
	volatile unsigned spin = 0;
	for (unsigned i = 0; i < 2000000; i++)
		spin += i;
	a2m_phase_leave(was);
	pthread_t th;
	void *res = NULL;
	CHECK(pthread_create(&th, NULL, enter_unwatched, NULL) == 0 && pthread_join(th, &res) == 0);
	CHECK(res == (void *)1);
	a2m_phase_read(&c);
	CHECK(c.t[A2M_PHASE_BEGIN].sleeps >= 1 && c.t[A2M_PHASE_SYNC].sleeps >= 1);
	/* usleep waits at least as long as asked; off a CPU the while */
	CHECK(c.t[A2M_PHASE_BEGIN].ms >= 5.0 && c.t[A2M_PHASE_SYNC].ms >= 3.0);
	CHECK(c.t[A2M_PHASE_BEGIN].cpu < c.t[A2M_PHASE_BEGIN].ms);
	CHECK(c.t[A2M_PHASE_COMMIT].ms == 0 && c.t[A2M_PHASE_COMMIT].sleeps == 0);
	double sum = 0;
	for (int f = 0; f < A2M_PHASE_COUNT; f++)
		sum += c.t[f].ms;
	a2m_phase_reset(&c);
	CHECK(c.t[A2M_PHASE_BEGIN].ms == 0 && sum >= 8.0);
	CHECK(strcmp(a2m_phase_name(A2M_PHASE_SYNC), "sync") == 0);
	CHECK(strcmp(a2m_phase_name(A2M_PHASE_COUNT), "?") == 0);
	a2m_phase_watch(NULL);
	/* Unwatched: nothing is counted. */
	CHECK(a2m_phase_enter(A2M_PHASE_STEPS) == A2M_PHASE_OTHER);
	a2m_phase_leave(A2M_PHASE_OTHER);
	CHECK(c.t[A2M_PHASE_STEPS].ms == 0);
}

/*
** The growth rule: capacity doubles from 16 (or from what it was) until it
** holds n, and an overflowing size fails leaving the array as it was.
*/
static void test_grow_doubles_and_refuses_overflow(void)
{
	CHECK(a2m_grow_cap(0, 1) == 16);
	CHECK(a2m_grow_cap(16, 16) == 16);
	CHECK(a2m_grow_cap(16, 17) == 32);
	CHECK(a2m_grow_cap(24, 100) == 192);
	CHECK(a2m_grow_cap(0, SIZE_MAX) == 0);
	CHECK(a2m_grow_cap((SIZE_MAX >> 1) + 1, SIZE_MAX) == 0);

	int *v = NULL;
	size_t cap = 0;
	for (int i = 0; i < 1000; i++) {
		CHECK(a2m_grow((void **)&v, &cap, (size_t)i + 1, sizeof *v) == 0);
		CHECK(cap >= (size_t)i + 1 && cap < 2 * ((size_t)i + 1) + 16);
		v[i] = i;
	}
	CHECK(cap == 1024);
	int *was = v;
	/* Elements so large the bytes overflow: refused, nothing changed (the
	** sizes volatile, so the compiler cannot see them at build time). */
	volatile size_t huge = SIZE_MAX;
	CHECK(a2m_grow((void **)&v, &cap, huge / 8 + 1, 8 * sizeof *v) == -1);
	CHECK(v == was && cap == 1024);
	CHECK(a2m_resize((void **)&v, huge / 2, 4) == -1 && v == was);
	long sum = 0;
	for (int i = 0; i < 1000; i++)
		sum += v[i];
	CHECK(sum == 999L * 1000 / 2);
	CHECK(a2m_resize((void **)&v, 0, sizeof *v) == 0 && v);
	free(v);
}

int main(void)
{
	static const test_case tests[] = {
		TEST(test_phases_count_where_the_thread_was),
		TEST(test_json_reals_are_shortest_roundtrip),
		TEST(test_helper_threads_block_every_signal),
		TEST(test_cpus_usable_follow_the_affinity),
		TEST(test_json_reals_fast_path_matches_printf),
		TEST(test_json_non_finite_reals_are_null),
		TEST(test_json_strings_escaped_in_long_runs),
		TEST(test_json_strings_escaped_at_random),
		TEST(test_json_integers_beyond_2_53_exact),
		TEST(test_json_key_order_and_unicode_kept),
		TEST(test_json_escapes_control_and_nul),
		TEST(test_clock_format_has_millis_and_z),
		TEST(test_clock_parse_roundtrip),
		TEST(test_utf8_length_counts_code_points),
		TEST(test_utf8_valid_agrees_with_jansson),
		TEST(test_ids_unique_and_well_formed),
		TEST(test_ids_differ_across_batches_and_fork),
		TEST(test_postings_cache_grows_and_finds_every_term),
		TEST(test_postings_cache_keeps_an_entry_of_half_its_budget),
		TEST(test_postings_cache_sheds_decoded_blocks_before_evicting),
		TEST(test_bloom_filter_has_no_false_negatives),
		TEST(test_grow_doubles_and_refuses_overflow),
		{NULL, NULL}
	};
	return run_tests(tests);
}
