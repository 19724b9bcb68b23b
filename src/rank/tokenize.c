/*
** tokenize.c — steps 1 to 3 of analyze.h: folding (NFKC, case folding),
** the classes of characters, the stripping of marks, and the tokenizer
** that cuts folded text into words and CJK bigrams (a2m_tokenize).
**
** Apart from analyze.c because it works on characters alone: it knows no
** language, stopword or stemmer; analyze.c takes its tokens from there.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "rank/analyze.h"
#include "rank/analyze_internal.h"

/* ---- the analyser's buffers (util/buf.h) ------------------------------- */

static void sb_put_cp(a2m_buf *b, int32_t cp)
{
	utf8proc_uint8_t tmp[4];
	utf8proc_ssize_t k = utf8proc_encode_char(cp, tmp);
	a2m_buf_put(b, tmp, (size_t)k);
}

/* ---- characters ---------------------------------------------------------- */

enum { C_SEP, C_WORD, C_MARK, C_APOS, C_HANKANA, C_HANGUL };

/* Han, Hiragana and Katakana: one class, since Japanese mixes them in a word. */
static int cjk_class(int32_t cp)
{
	if ((cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
	    (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x20000 && cp <= 0x3134F) ||
	    cp == 0x3005 || cp == 0x3007 ||
	    (cp >= 0x3041 && cp <= 0x309F) ||                      /* Hiragana */
	    (cp >= 0x30A0 && cp <= 0x30FF && cp != 0x30FB) ||      /* Katakana, not ・ */
	    (cp >= 0x31F0 && cp <= 0x31FF) || (cp >= 0xFF66 && cp <= 0xFF9F))
		return C_HANKANA;
	if ((cp >= 0xAC00 && cp <= 0xD7AF) || (cp >= 0x1100 && cp <= 0x11FF) ||
	    (cp >= 0x3130 && cp <= 0x318F) || (cp >= 0xA960 && cp <= 0xA97F) ||
	    (cp >= 0xD7B0 && cp <= 0xD7FF))
		return C_HANGUL;
	return 0;
}

static int classify(int32_t cp)
{
	if (cp < 0x80) {
		if ((cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z'))
			return C_WORD;
		return cp == '\'' ? C_APOS : C_SEP;
	}
	if (cp == 0x2019 || cp == 0x02BC)  /* ’ and ʼ: apostrophes, not letters */
		return C_APOS;
	int c = cjk_class(cp);
	if (c)
		return c;
	switch (utf8proc_category(cp)) {
	case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
	case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
	case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
		return C_WORD;
	case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
		return C_MARK;
	default:
		return C_SEP;
	}
}

static int is_latin(int32_t cp)
{
	return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
		(cp >= 0x00C0 && cp <= 0x024F && cp != 0x00D7 && cp != 0x00F7) ||
		(cp >= 0x0250 && cp <= 0x02AF) || (cp >= 0x1E00 && cp <= 0x1EFF) ||
		(cp >= 0x2C60 && cp <= 0x2C7F) || (cp >= 0xA720 && cp <= 0xA7FF) ||
		(cp >= 0xAB30 && cp <= 0xAB6F);
}

static int is_greek(int32_t cp)
{
	return (cp >= 0x0370 && cp <= 0x03FF) || (cp >= 0x1F00 && cp <= 0x1FFF);
}

static int is_cyrillic(int32_t cp)
{
	return (cp >= 0x0400 && cp <= 0x052F) || (cp >= 0x1C80 && cp <= 0x1C8F) ||
		(cp >= 0x2DE0 && cp <= 0x2DFF) || (cp >= 0xA640 && cp <= 0xA69F);
}

/*
** The letter cp with its marks stripped, into out (up to 4 code points).
** Only Latin, Greek and Cyrillic letters lose marks: there they are
** accents. Letters with a stroke, which have no decomposition, are spelt
** as their base; ligatures as their two letters.
*/
static size_t strip_letter(int32_t cp, int32_t *out)
{
	switch (cp) {
	case 0x0439: out[0] = cp; return 1;                  /* й: a letter of its own */
	case 0x00F8: out[0] = 'o'; return 1;                 /* ø */
	case 0x0111: case 0x00F0: out[0] = 'd'; return 1;    /* đ ð */
	case 0x0142: out[0] = 'l'; return 1;                 /* ł */
	case 0x0127: out[0] = 'h'; return 1;                 /* ħ */
	case 0x0167: out[0] = 't'; return 1;                 /* ŧ */
	case 0x0131: out[0] = 'i'; return 1;                 /* ı */
	case 0x00E6: out[0] = 'a'; out[1] = 'e'; return 2;   /* æ */
	case 0x0153: out[0] = 'o'; out[1] = 'e'; return 2;   /* œ */
	case 0x00FE: out[0] = 't'; out[1] = 'h'; return 2;   /* þ */
	default: break;
	}
	if (cp < 0xC0 || !(is_latin(cp) || is_greek(cp) || is_cyrillic(cp))) {
		out[0] = cp;
		return 1;
	}
	int boundclass = 0;
	utf8proc_ssize_t n = utf8proc_decompose_char(cp, out, 4,
		UTF8PROC_DECOMPOSE | UTF8PROC_STRIPMARK, &boundclass);
	if (n <= 0 || n > 4) {
		out[0] = cp;
		return 1;
	}
	return (size_t)n;
}

/* Appends the marks-stripped spelling of s (folded UTF-8) to b. */
void a2m_analyze_strip_into(a2m_buf *b, const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;
	utf8proc_ssize_t left = (utf8proc_ssize_t)len;
	int after_lgc = 0;  /* the last letter was Latin, Greek or Cyrillic */
	while (left > 0) {
		int32_t cp, out[4];
		utf8proc_ssize_t k = utf8proc_iterate(p, left, &cp);
		if (k <= 0)
			break;
		p += k;
		left -= k;
		if (cp < 0x80) {
			char c = (char)cp;
			a2m_buf_put(b, &c, 1);
			after_lgc = 1;
			continue;
		}
		if (classify(cp) == C_MARK) {
			if (!after_lgc)
				sb_put_cp(b, cp);
			continue;
		}
		after_lgc = is_latin(cp) || is_greek(cp) || is_cyrillic(cp);
		size_t n = strip_letter(cp, out);
		for (size_t i = 0; i < n; i++)
			sb_put_cp(b, out[i]);
	}
}

/* ---- folding ------------------------------------------------------------- */

/*
** NFKC and case folding, default-ignorable code points dropped. Invalid
** UTF-8 bytes are skipped first, so utf8proc can only fail for memory.
** All-ASCII text comes here only when a test forces the general path:
** tokenize_ascii() lowercases it instead. Returns a malloc'd NUL-terminated
** string, or NULL.
*/
static char *fold(const char *text, size_t *len, int *ascii)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t n = strlen(text);
	*ascii = 1;
	for (size_t i = 0; i < n; i++)
		if (s[i] >= 0x80) {
			*ascii = 0;
			break;
		}
	unsigned char *clean = malloc(n + 1), *out = NULL;
	size_t m = 0;
	if (!clean)
		return NULL;
	for (size_t i = 0; i < n;) {
		int32_t cp;
		utf8proc_ssize_t k = utf8proc_iterate(s + i, (utf8proc_ssize_t)(n - i), &cp);
		if (k <= 0) {
			i++;
			continue;
		}
		memcpy(clean + m, s + i, (size_t)k);
		m += (size_t)k;
		i += (size_t)k;
	}
	clean[m] = '\0';
	utf8proc_ssize_t r = utf8proc_map(clean, (utf8proc_ssize_t)m, &out,
		UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT | UTF8PROC_CASEFOLD |
		UTF8PROC_IGNORE);
	free(clean);
	if (r < 0)
		return NULL;
	*len = (size_t)r;
	return (char *)out;
}

/* ---- tokens ---------------------------------------------------------------- */

typedef struct raw_token {
	size_t   off, len, foff, flen;  /* in the arena */
	int      kind;
	unsigned script;
} raw_token;

typedef struct tokenizer {
	a2m_buf       arena;
	raw_token *v;
	size_t     n, cap;
	int        oom;
	/* the word being read */
	a2m_buf       wf, ws;     /* folded and stripped spellings */
	size_t     wchars;
	unsigned   wscript;
	int        in_word, apos_before, after_lgc;
	/* the CJK run being read */
	int32_t   *run;
	size_t     nrun, runcap;
	int        runclass;
} tokenizer;

static void emit(tokenizer *tz, const char *f, size_t flen, const char *s, size_t slen,
		 int kind, unsigned script)
{
	if (tz->n == tz->cap) {
		/* 16 to start: a query's tokens fit, and a first block under 1 KiB
		** stays on malloc's fast path (larger ones were a query's dearest
		** allocation). */
		size_t cap = tz->cap ? tz->cap * 2 : 16;
		raw_token *v = realloc(tz->v, cap * sizeof *v);
		if (!v) {
			tz->oom = 1;
			return;
		}
		tz->v = v;
		tz->cap = cap;
	}
	raw_token *t = &tz->v[tz->n];
	t->foff = tz->arena.len;
	a2m_buf_put(&tz->arena, f, flen);
	t->flen = flen;
	if (slen == flen && memcmp(s, f, flen) == 0) {
		t->off = t->foff;
	} else {
		t->off = tz->arena.len;
		a2m_buf_put(&tz->arena, s, slen);
	}
	t->len = slen;
	t->kind = kind;
	t->script = script;
	if (!tz->arena.failed)
		tz->n++;
}

/* Ends the word being read; apos_after: an apostrophe split it here. */
static void end_word(tokenizer *tz, int apos_after)
{
	if (!tz->in_word)
		return;
	/* A lone letter beside an apostrophe is an elision or a clitic. */
	int clitic = tz->wchars == 1 && (tz->apos_before || apos_after);
	/* A spelling that could not grow may have no bytes at all (p NULL). */
	if (tz->wf.failed || tz->ws.failed)
		tz->oom = 1;
	else if (!clitic && tz->ws.len)
		emit(tz, tz->wf.p, tz->wf.len, tz->ws.p, tz->ws.len, A2M_TOKEN_WORD, tz->wscript);
	tz->wf.len = tz->ws.len = 0;
	tz->wchars = 0;
	tz->wscript = 0;
	tz->in_word = 0;
	tz->apos_before = 0;
}

/* Appends cp (a letter, a digit or a mark) to the word, within MAX_WORD_BYTES. */
static void word_add(tokenizer *tz, int32_t cp, int mark)
{
	if (cp < 0x80) {
		/* ASCII letters and digits: the same in both spellings. */
		char c = (char)cp;
		if (tz->wf.len + 1 > MAX_WORD_BYTES)
			return;
		a2m_buf_put(&tz->wf, &c, 1);
		a2m_buf_put(&tz->ws, &c, 1);
		tz->wchars++;
		tz->after_lgc = 1;
		if (c > '9')
			tz->wscript |= A2M_SCRIPT_LATIN;
		return;
	}
	utf8proc_uint8_t enc[4];
	utf8proc_ssize_t k = utf8proc_encode_char(cp, enc);
	if (tz->wf.len + (size_t)k > MAX_WORD_BYTES)
		return;
	a2m_buf_put(&tz->wf, enc, (size_t)k);
	if (mark) {
		if (!tz->after_lgc)
			a2m_buf_put(&tz->ws, enc, (size_t)k);
		return;
	}
	tz->wchars++;
	int32_t out[4];
	size_t n = strip_letter(cp, out);
	for (size_t i = 0; i < n; i++)
		sb_put_cp(&tz->ws, out[i]);
	tz->after_lgc = is_latin(cp) || is_greek(cp) || is_cyrillic(cp);
	if (is_latin(cp))
		tz->wscript |= A2M_SCRIPT_LATIN;
	else if (is_cyrillic(cp))
		tz->wscript |= A2M_SCRIPT_CYRILLIC;
	else if (utf8proc_category(cp) <= UTF8PROC_CATEGORY_LO)
		tz->wscript |= A2M_SCRIPT_OTHER;
}

/* Ends the CJK run: overlapping bigrams, or the lone character. */
static void end_run(tokenizer *tz)
{
	utf8proc_uint8_t buf[8];
	if (!tz->nrun)
		return;
	if (tz->nrun == 1) {
		utf8proc_ssize_t k = utf8proc_encode_char(tz->run[0], buf);
		emit(tz, (char *)buf, (size_t)k, (char *)buf, (size_t)k, A2M_TOKEN_CJK,
		     A2M_SCRIPT_OTHER);
	}
	for (size_t i = 0; tz->nrun > 1 && i + 1 < tz->nrun; i++) {
		utf8proc_ssize_t k = utf8proc_encode_char(tz->run[i], buf);
		k += utf8proc_encode_char(tz->run[i + 1], buf + k);
		emit(tz, (char *)buf, (size_t)k, (char *)buf, (size_t)k, A2M_TOKEN_CJK,
		     A2M_SCRIPT_OTHER);
	}
	tz->nrun = 0;
	tz->runclass = 0;
}

static void run_add(tokenizer *tz, int32_t cp, int cls)
{
	if (tz->runclass != cls)
		end_run(tz);
	tz->runclass = cls;
	if (tz->nrun == tz->runcap) {
		size_t cap = tz->runcap ? tz->runcap * 2 : 32;
		int32_t *r = realloc(tz->run, cap * sizeof *r);
		if (!r) {
			tz->oom = 1;
			return;
		}
		tz->run = r;
		tz->runcap = cap;
	}
	tz->run[tz->nrun++] = cp;
}

/* White space and control characters: what "holds no text" is made of. */
static int is_space(int32_t cp)
{
	if (cp <= ' ' || cp == 0x7F)
		return 1;
	switch (utf8proc_category(cp)) {
	case UTF8PROC_CATEGORY_ZS: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP:
	case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF:
		return 1;
	default:
		return 0;
	}
}

/* The tokens' storage, behind a2m_tokens.priv. */
typedef struct token_store {
	a2m_buf       arena;
	raw_token *raw;
} token_store;

/*
** The ASCII characters as tokenize_ascii() sees them: A_WORD, a letter or
** digit (classify()'s C_WORD); A_TEXT, anything but white space and
** control characters (!is_space()); A_UPPER, A to Z, the bit that case
** folding sets.
*/
enum { A_WORD = 1, A_TEXT = 2, A_UPPER = 0x20 };
static const unsigned char ascii_class[128] = {
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
	 0,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,
	 3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  2,  2,  2,  2,  2,  2,
	 2, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35,
	35, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35,  2,  2,  2,  2,  2,
	 2,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,
	 3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  2,  2,  2,  2,  0,
};

static int is_ascii_alnum(unsigned char c)
{
	return ascii_class[c & 0x7F] & A_WORD;
}

/*
** Eight bytes at a time (SWAR): the bytes of a word, all below 0x80, each
** answer a byte's high bit. For such a byte x, x + (0x80 - lo) reaches 0x80
** exactly when x >= lo, with no carry into the next byte (lo >= 1, x <
** 0x80), and x + (0x7f - hi) when x > hi.
*/
#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

static uint64_t in_range8(uint64_t w, unsigned lo, unsigned hi)
{
	return (w + ONES * (0x80 - lo)) & ~(w + ONES * (0x7f - hi)) & HIGHS;
}

/* The letters and digits of w (high bits), all of whose bytes are ASCII. */
static uint64_t alnum8(uint64_t w)
{
	return in_range8(w | ONES * 0x20, 'a', 'z') | in_range8(w, '0', '9');
}

/* The high bits of the eight bytes as the low eight bits, byte i as bit i. */
static unsigned gather8(uint64_t highs)
{
	return (unsigned)(((highs >> 7) * 0x0102040810204080ULL) >> 56);
}

/* Eight bytes of p, little-endian whatever the machine: byte i is bits 8i.. */
static uint64_t load8(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static void store8(unsigned char *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, 8);
}

/*
** The bitmap of the letters and digits of s (n bytes, all ASCII: 1 when
** not), bit i%64 of bits[i/64] for byte i; *runs gets how many runs of
** them there are and *has_text whether any byte is other than white space
** and control characters.
*/
static int ascii_scan(const unsigned char *s, size_t n, uint64_t *bits, size_t *runs,
		      int *has_text)
{
	uint64_t text = 0;
	size_t count = 0;
	unsigned prev = 0;  /* the last byte before, a letter or digit */
	for (size_t i = 0; i < n; i += 8) {
		unsigned char tail[8] = {0};
		const unsigned char *p = s + i;
		if (n - i < 8) {
			memcpy(tail, p, n - i);
			p = tail;
		}
		uint64_t w = load8(p);
		if (w & HIGHS)
			return 1;
		unsigned m = gather8(alnum8(w));
		text |= in_range8(w, 0x21, 0x7e);
		unsigned starts = m & ~(m << 1 | prev);
		starts -= starts >> 1 & 0x55;
		starts = (starts & 0x33) + (starts >> 2 & 0x33);
		count += (starts + (starts >> 4)) & 0x0f;
		prev = m >> 7;
		if (i % 64 == 0)
			bits[i / 64] = 0;
		bits[i / 64] |= (uint64_t)m << (i % 64);
	}
	*runs = count;
	*has_text = text != 0;
	return 0;
}

/* The first byte at or after i (below n) whose bit is want; n when none. */
static size_t next_bit(const uint64_t *bits, size_t i, size_t n, int want)
{
	while (i < n) {
		uint64_t w = bits[i / 64] >> (i % 64);
		if (!want)
			w = ~w;
		if (i % 64)
			w &= ~0ULL >> (i % 64);
		if (w) {
			i += (size_t)__builtin_ctzll(w);
			return i < n ? i : n;
		}
		i = (i / 64 + 1) * 64;
	}
	return n;
}

/*
** a2m_tokenize for all-ASCII text, the common case, in one block: the
** tokens, then the lowercased text they point into. It yields what the
** general path below does, which for ASCII comes to: NFKC is the identity
** and case folding is A-Z to a-z; words are the runs of letters and digits,
** cut after MAX_WORD_BYTES; an apostrophe followed by a letter or digit
** splits, and a one-character piece beside it is dropped; only a letter
** makes a word Latin; white space and control characters are not text.
** test_analyze.c checks the two paths agree (a2m_analyze_slow_path).
** The bytes are classified and folded eight at a time, and the words found
** from a bitmap of letters and digits: a byte at a time, these loops were
** a tenth of indexing a folder (callgrind).
** Returns 0, -1 when memory runs out, or 1 (out untouched) when text is
** not all ASCII.
*/
static int tokenize_ascii(const char *text, a2m_tokens *out)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t n = strlen(text), runs = 0;
	int has_text = 0;
	uint64_t small[32], *bits = small;
	size_t nbits = n / 64 + 1;
	if (nbits > sizeof small / sizeof small[0] && !(bits = malloc(nbits * sizeof *bits)))
		return -1;
	int rc = ascii_scan(s, n, bits, &runs, &has_text);
	a2m_token *v = rc ? NULL : malloc((runs + 1) * sizeof *v + n + 1);
	if (!v) {
		if (bits != small)
			free(bits);
		return rc ? rc : -1;
	}
	unsigned char *f = (unsigned char *)(v + runs + 1);
	size_t i = 0;
	for (; n - i >= 8; i += 8) {
		uint64_t w = load8(s + i);
		store8(f + i, w | in_range8(w, 'A', 'Z') >> 2);
	}
	for (; i < n; i++)
		f[i] = (unsigned char)(s[i] | (ascii_class[s[i]] & A_UPPER));
	f[n] = '\0';
	size_t nt = 0;
	int apos_before = 0;
	for (size_t start = next_bit(bits, 0, n, 1); start < n;
	     start = next_bit(bits, start + 1, n, 1)) {
		size_t end = next_bit(bits, start + 1, n, 0);
		size_t len = end - start < MAX_WORD_BYTES ? end - start : MAX_WORD_BYTES;
		int apos_after = end + 1 < n && s[end] == '\'' && is_ascii_alnum(s[end + 1]);
		unsigned script = 0;
		for (size_t j = start; j < start + len && !script; j++)
			if (f[j] > '9')
				script = A2M_SCRIPT_LATIN;
		/* A lone letter beside an apostrophe is an elision or a clitic. */
		if (!(len == 1 && (apos_before || apos_after)))
			v[nt++] = (a2m_token){.text = (char *)f + start, .len = len,
					      .folded = (char *)f + start, .flen = len,
					      .kind = A2M_TOKEN_WORD, .script = script};
		apos_before = apos_after;
		start = end;
	}
	if (bits != small)
		free(bits);
	memset(&v[nt], 0, sizeof v[nt]);
	out->v = v;
	out->n = nt;
	out->has_text = has_text;
	out->ascii = 1;
	return 0;
}

#ifdef A2M_TEST_HOOKS
/* Set by tests only: every text takes the general path (analyze_internal.h). */
int a2m_analyze_slow_path;
#endif

int a2m_tokenize(const char *text, a2m_tokens *out)
{
	tokenizer tz;
	size_t len = 0;
	int ascii = 1;
	memset(out, 0, sizeof *out);
	memset(&tz, 0, sizeof tz);
	if (!text)
		text = "";
	if (!a2m_analyze_slow_path) {
		int rc = tokenize_ascii(text, out);
		if (rc <= 0)
			return rc;
	}
	char *f = fold(text, &len, &ascii);
	if (!f)
		return -1;
	out->ascii = ascii;
	const uint8_t *p = (const uint8_t *)f;
	size_t i = 0;
	while (i < len && !tz.oom) {
		int32_t cp;
		utf8proc_ssize_t k = utf8proc_iterate(p + i, (utf8proc_ssize_t)(len - i), &cp);
		if (k <= 0) {
			i++;
			continue;
		}
		i += (size_t)k;
		int cls = classify(cp);
		if (!out->has_text && !is_space(cp))
			out->has_text = 1;
		switch (cls) {
		case C_WORD:
			end_run(&tz);
			if (!tz.in_word) {
				tz.in_word = 1;
				tz.after_lgc = 0;
			}
			word_add(&tz, cp, 0);
			break;
		case C_MARK:
			if (tz.in_word)
				word_add(&tz, cp, 1);
			/* A mark in a CJK run (a stray voicing mark) or alone: nothing. */
			break;
		case C_APOS: {
			int32_t next = 0;
			if (i < len)
				utf8proc_iterate(p + i, (utf8proc_ssize_t)(len - i), &next);
			if (tz.in_word && classify(next) == C_WORD) {
				end_word(&tz, 1);
				tz.apos_before = 1;  /* the next piece starts at an apostrophe */
			} else {
				end_word(&tz, 0);
			}
			break;
		}
		case C_HANKANA:
		case C_HANGUL:
			end_word(&tz, 0);
			run_add(&tz, cp, cls);
			break;
		default:
			end_word(&tz, 0);
			end_run(&tz);
			break;
		}
	}
	end_word(&tz, 0);
	end_run(&tz);
	free(f);
	free(tz.wf.p);
	free(tz.ws.p);
	free(tz.run);
	token_store *ts = calloc(1, sizeof *ts);
	if (!ts || tz.oom || tz.arena.failed || !(out->v = calloc(tz.n + 1, sizeof *out->v))) {
		free(ts);
		free(tz.arena.p);
		free(tz.v);
		return -1;
	}
	ts->arena = tz.arena;
	ts->raw = tz.v;
	out->priv = ts;
	out->n = tz.n;
	for (size_t j = 0; j < tz.n; j++) {
		const raw_token *r = &tz.v[j];
		out->v[j].text = ts->arena.p + r->off;
		out->v[j].len = r->len;
		out->v[j].folded = ts->arena.p + r->foff;
		out->v[j].flen = r->flen;
		out->v[j].kind = r->kind;
		out->v[j].script = r->script;
	}
	return 0;
}

void a2m_tokens_free(a2m_tokens *t)
{
	token_store *ts = t->priv;
	if (ts) {
		free(ts->arena.p);
		free(ts->raw);
		free(ts);
	}
	free(t->v);
	memset(t, 0, sizeof *t);
}
