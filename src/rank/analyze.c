/*
** analyze.c — the analysis pipeline of analyze.h: folding, tokens, stems,
** and the term bags of records and queries. Which language a text is in,
** and the stopword table, are langdetect.c's.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libstemmer.h>
#include <utf8proc.h>

#include "rank/analyze.h"
#include "rank/langdetect.h"
#include "util/slots.h"

/*
** A word longer than this is cut at a character boundary: a term is for
** finding things, and nobody types the 500-letter run of a base64 blob.
** Long enough for a SHA-256 in hex.
*/
#define MAX_WORD_BYTES  128
#define MAX_STEM_BYTES  (MAX_WORD_BYTES * 2)
/* A longer query is cut: its first words are what it asks. */
#define MAX_QUERY_WORDS 256

static const char *const stemmer_names[A2M_LANG_COUNT] = {
	"english", "italian", "spanish", "french", "german", "portuguese", "dutch", "russian"
};
static const char *const lang_codes[A2M_LANG_COUNT] = {
	"en", "it", "es", "fr", "de", "pt", "nl", "ru"
};

/*
** A remembered stem: Snowball is the dearest step of analysing a short
** text (a word of unknown language is stemmed under seven languages), and
** the words of a store and its queries repeat (Zipf). Direct-mapped, a new
** stem replacing whatever shared its slot, so the cache stays this size;
** only short words are kept. Stemming is deterministic: a hit is exactly
** what the stemmer would say.
*/
#define STEM_CACHE_SLOTS 8192   /* a power of two */
#define STEM_CACHE_BYTES 30

typedef struct stem_slot {
	uint8_t lang1;               /* lang + 1; 0 = empty */
	uint8_t wlen, slen;          /* slen 0: the word cannot be stemmed */
	char    word[STEM_CACHE_BYTES];
	char    stem[STEM_CACHE_BYTES];
} stem_slot;

struct a2m_analyzer {
	a2m_indexer          ix;      /* first: the store's view of us */
	a2m_analyzer_options opt;
	struct sb_stemmer   *stemmer[A2M_LANG_COUNT];
	a2m_langdetect      *ld;
	char                 version[128];
	stem_slot           *stems;   /* STEM_CACHE_SLOTS; NULL: no cache */
};

const char *a2m_lang_code(int lang)
{
	return lang >= 0 && lang < A2M_LANG_COUNT ? lang_codes[lang] : "unknown";
}

/* ---- a growable byte buffer -------------------------------------------- */

typedef struct sbuf {
	char  *p;
	size_t n, cap;
	int    oom;
} sbuf;

static int sb_reserve(sbuf *b, size_t more)
{
	if (b->oom)
		return -1;
	if (b->n + more <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->n + more)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

static void sb_put(sbuf *b, const void *s, size_t n)
{
	if (n && sb_reserve(b, n) == 0) {
		memcpy(b->p + b->n, s, n);
		b->n += n;
	}
}

static void sb_put_cp(sbuf *b, int32_t cp)
{
	utf8proc_uint8_t tmp[4];
	utf8proc_ssize_t k = utf8proc_encode_char(cp, tmp);
	sb_put(b, tmp, (size_t)k);
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
static void strip_into(sbuf *b, const char *s, size_t len)
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
			sb_put(b, &c, 1);
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
** NFKC and case folding, default-ignorable code points dropped. All-ASCII
** text (the common case) is only lowercased, which is the same thing for it.
** Invalid UTF-8 bytes are skipped first, so utf8proc can only fail for
** memory. Returns a malloc'd NUL-terminated string, or NULL.
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
	if (*ascii) {
		char *out = malloc(n + 1);
		if (!out)
			return NULL;
		for (size_t i = 0; i < n; i++)
			out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
		out[n] = '\0';
		*len = n;
		return out;
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
	sbuf       arena;
	raw_token *v;
	size_t     n, cap;
	int        oom;
	/* the word being read */
	sbuf       wf, ws;     /* folded and stripped spellings */
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
	t->foff = tz->arena.n;
	sb_put(&tz->arena, f, flen);
	t->flen = flen;
	if (slen == flen && memcmp(s, f, flen) == 0) {
		t->off = t->foff;
	} else {
		t->off = tz->arena.n;
		sb_put(&tz->arena, s, slen);
	}
	t->len = slen;
	t->kind = kind;
	t->script = script;
	if (!tz->arena.oom)
		tz->n++;
}

/* Ends the word being read; apos_after: an apostrophe split it here. */
static void end_word(tokenizer *tz, int apos_after)
{
	if (!tz->in_word)
		return;
	/* A lone letter beside an apostrophe is an elision or a clitic. */
	int clitic = tz->wchars == 1 && (tz->apos_before || apos_after);
	if (!clitic && tz->ws.n)
		emit(tz, tz->wf.p, tz->wf.n, tz->ws.p, tz->ws.n, A2M_TOKEN_WORD, tz->wscript);
	if (tz->wf.oom || tz->ws.oom)
		tz->oom = 1;
	tz->wf.n = tz->ws.n = 0;
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
		if (tz->wf.n + 1 > MAX_WORD_BYTES)
			return;
		sb_put(&tz->wf, &c, 1);
		sb_put(&tz->ws, &c, 1);
		tz->wchars++;
		tz->after_lgc = 1;
		if (c > '9')
			tz->wscript |= A2M_SCRIPT_LATIN;
		return;
	}
	utf8proc_uint8_t enc[4];
	utf8proc_ssize_t k = utf8proc_encode_char(cp, enc);
	if (tz->wf.n + (size_t)k > MAX_WORD_BYTES)
		return;
	sb_put(&tz->wf, enc, (size_t)k);
	if (mark) {
		if (!tz->after_lgc)
			sb_put(&tz->ws, enc, (size_t)k);
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
	sbuf       arena;
	raw_token *raw;
} token_store;

int a2m_tokenize(const char *text, a2m_tokens *out)
{
	tokenizer tz;
	size_t len = 0;
	int ascii = 1;
	memset(out, 0, sizeof *out);
	memset(&tz, 0, sizeof tz);
	char *f = fold(text ? text : "", &len, &ascii);
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
	if (!ts || tz.oom || tz.arena.oom || !(out->v = calloc(tz.n + 1, sizeof *out->v))) {
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

/* ---- the analyser ---------------------------------------------------------- */

void a2m_analyzer_options_init(a2m_analyzer_options *opt)
{
	memset(opt, 0, sizeof *opt);
	opt->unknown_stems = A2M_UNKNOWN_STEM_ALL;
	opt->query_all_langs = 0;
}

static int ix_analyze(a2m_indexer *ix, const char *text, a2m_doc_terms *out)
{
	return a2m_analyze_doc((a2m_analyzer *)ix, text, out);
}

static void ix_release(a2m_indexer *ix, a2m_doc_terms *dt)
{
	(void)ix;
	a2m_doc_terms_free(dt);
}

a2m_analyzer *a2m_analyzer_new(const a2m_analyzer_options *opt)
{
	static const char *const unknown_names[] = {"none", "en", "all"};
	a2m_analyzer *an = calloc(1, sizeof *an);
	if (!an)
		return NULL;
	if (opt)
		an->opt = *opt;
	else
		a2m_analyzer_options_init(&an->opt);
	if (an->opt.unknown_stems < 0 || an->opt.unknown_stems > A2M_UNKNOWN_STEM_ALL)
		an->opt.unknown_stems = A2M_UNKNOWN_STEM_ALL;
	for (int l = 0; l < A2M_LANG_COUNT; l++)
		if (!(an->stemmer[l] = sb_stemmer_new(stemmer_names[l], "UTF_8")))
			goto fail;
	if (!(an->ld = a2m_langdetect_new()))
		goto fail;
	/* Without room for the cache every stem is computed: slower, not wrong. */
	an->stems = calloc(STEM_CACHE_SLOTS, sizeof *an->stems);
	/*
	** Anything that changes which terms a text yields must change this
	** string: stores rebuild an index whose version differs.
	*/
	snprintf(an->version, sizeof an->version,
		 "a2m-text/3 nfkc+casefold+stripmark cjk-bigram stop+snowball:en,it,es,fr,de,pt,nl,ru"
		 " unknown=%s", unknown_names[an->opt.unknown_stems]);
	an->ix.version = an->version;
	an->ix.analyze = ix_analyze;
	an->ix.release = ix_release;
	return an;
fail:
	a2m_analyzer_free(an);
	return NULL;
}

void a2m_analyzer_free(a2m_analyzer *an)
{
	if (!an)
		return;
	for (int l = 0; l < A2M_LANG_COUNT; l++)
		sb_stemmer_delete(an->stemmer[l]);
	a2m_langdetect_free(an->ld);
	free(an->stems);
	free(an);
}

const char *a2m_analyzer_version(const a2m_analyzer *an)
{
	return an->version;
}

a2m_indexer *a2m_analyzer_indexer(a2m_analyzer *an)
{
	return &an->ix;
}

void a2m_detect_language(const a2m_analyzer *an, const a2m_tokens *toks, a2m_lang_guess *g)
{
	a2m_langdetect_guess(an->ld, toks, g);
}

unsigned a2m_stopword_langs(const a2m_analyzer *an, const char *word, size_t len)
{
	return a2m_langdetect_stopword(an->ld, word, len);
}

static size_t stem_uncached(a2m_analyzer *an, int lang, const char *word, size_t len,
			    char *out, size_t cap);

/* FNV-1a of the word, mixed with its language. */
static size_t stem_slot_of(int lang, const char *word, size_t len)
{
	uint64_t h = 14695981039346656037ULL ^ (uint64_t)lang;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)word[i];
		h *= 1099511628211ULL;
	}
	return (size_t)(h >> 20) & (STEM_CACHE_SLOTS - 1);
}

size_t a2m_stem(a2m_analyzer *an, int lang, const char *word, size_t len, char *out,
		size_t cap)
{
	if (lang < 0 || lang >= A2M_LANG_COUNT || !an->stemmer[lang] || !len ||
	    len > MAX_WORD_BYTES)
		return 0;
	if (!an->stems || len > STEM_CACHE_BYTES)
		return stem_uncached(an, lang, word, len, out, cap);
	stem_slot *e = &an->stems[stem_slot_of(lang, word, len)];
	if (e->lang1 == lang + 1 && e->wlen == len && memcmp(e->word, word, len) == 0) {
		if (e->slen > cap)
			return 0;
		memcpy(out, e->stem, e->slen);
		return e->slen;
	}
	char tmp[MAX_STEM_BYTES];
	size_t n = stem_uncached(an, lang, word, len, tmp, sizeof tmp);
	if (n <= STEM_CACHE_BYTES) {
		e->lang1 = (uint8_t)(lang + 1);
		e->wlen = (uint8_t)len;
		e->slen = (uint8_t)n;
		memcpy(e->word, word, len);
		memcpy(e->stem, tmp, n);
	}
	if (n > cap)
		return 0;
	memcpy(out, tmp, n);
	return n;
}

/* a2m_stem without the cache. */
static size_t stem_uncached(a2m_analyzer *an, int lang, const char *word, size_t len,
			    char *out, size_t cap)
{
	const sb_symbol *r = sb_stemmer_stem(an->stemmer[lang], (const sb_symbol *)word,
					     (int)len);
	if (!r)
		return 0;
	size_t rlen = (size_t)sb_stemmer_length(an->stemmer[lang]);
	int ascii = 1;
	for (size_t i = 0; i < rlen && ascii; i++)
		ascii = r[i] < 0x80;
	if (ascii) {
		/* The usual case: nothing to strip. */
		if (rlen > cap)
			return 0;
		memcpy(out, r, rlen);
		return rlen;
	}
	sbuf b = {0};
	strip_into(&b, (const char *)r, rlen);
	size_t n = b.oom || b.n > cap ? 0 : b.n;
	if (n)
		memcpy(out, b.p, n);
	free(b.p);
	return n;
}

/* ---- term bags ------------------------------------------------------------- */

/*
** The distinct terms of a text with their counts. A word adds at most one
** to each of its keys (its surface form and stems often coincide).
*/
typedef struct bag_entry {
	size_t   off;
	uint32_t len, tf;
	size_t   word;     /* the last word that counted it, + 1 */
	int      surface;  /* first added as a word's surface form */
} bag_entry;

typedef struct bag {
	sbuf       arena;
	bag_entry *v;
	size_t     n, cap;
	uint32_t  *slots;   /* index + 1 into v; 0 = free */
	size_t     nslots;  /* a power of two, at least twice n */
	int        oom;
} bag;

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static uint64_t bag_hash(const void *ctx, size_t i)
{
	const bag *b = ctx;
	return hash_bytes(b->arena.p + b->v[i].off, b->v[i].len);
}

static int bag_grow(bag *b)
{
	return a2m_slots_rebuild(&b->slots, &b->nslots, b->nslots ? b->nslots * 2 : 64, b->n,
				 bag_hash, b);
}

/*
** Counts s as a key of word (numbered from 1). Returns 1 when the word had
** not counted it yet, 0 when it had, -1 when memory ran out.
*/
static int bag_add_kind(bag *b, const char *s, size_t len, size_t word, int surface);

static int bag_add(bag *b, const char *s, size_t len, size_t word)
{
	return bag_add_kind(b, s, len, word, 0);
}

static int bag_add_kind(bag *b, const char *s, size_t len, size_t word, int surface)
{
	if (b->oom || !len)
		return b->oom ? -1 : 0;
	if ((b->n + 1) * 2 > b->nslots && bag_grow(b) != 0) {
		b->oom = 1;
		return -1;
	}
	size_t j = (size_t)hash_bytes(s, len) & (b->nslots - 1);
	while (b->slots[j]) {
		bag_entry *e = &b->v[b->slots[j] - 1];
		if (e->len == len && memcmp(b->arena.p + e->off, s, len) == 0) {
			if (e->word == word)
				return 0;
			e->word = word;
			e->tf++;
			return 1;
		}
		j = (j + 1) & (b->nslots - 1);
	}
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 32;
		bag_entry *v = realloc(b->v, cap * sizeof *v);
		if (!v) {
			b->oom = 1;
			return -1;
		}
		b->v = v;
		b->cap = cap;
	}
	size_t off = b->arena.n;
	sb_put(&b->arena, s, len);
	if (b->arena.oom) {
		b->oom = 1;
		return -1;
	}
	b->v[b->n] = (bag_entry){.off = off, .len = (uint32_t)len, .tf = 1, .word = word,
				 .surface = surface};
	b->slots[j] = (uint32_t)(b->n + 1);
	b->n++;
	return 1;
}

static void bag_free(bag *b)
{
	free(b->arena.p);
	free(b->v);
	free(b->slots);
	memset(b, 0, sizeof *b);
}

/* The languages a word of this script can be stemmed under. */
static unsigned script_langs(unsigned script)
{
	if (script == A2M_SCRIPT_LATIN)
		return A2M_LANGS_LATIN;
	if (script == A2M_SCRIPT_CYRILLIC)
		return A2M_LANG_BIT(A2M_LANG_RU);
	return 0;
}

/* The languages a text is stemmed under, given its guess (analyze.h, step 6). */
static unsigned stem_langs(const a2m_analyzer *an, const a2m_lang_guess *g, int ascii)
{
	if (g->cands)
		return g->cands;
	switch (an->opt.unknown_stems) {
	case A2M_UNKNOWN_STEM_ALL: return A2M_LANGS_ALL;
	case A2M_UNKNOWN_STEM_EN:  return ascii ? A2M_LANG_BIT(A2M_LANG_EN) : 0;
	default:                   return 0;
	}
}

/*
** Counts the keys of one word: its surface form, then its stems under each
** language of langs its script allows (a Cyrillic word is always stemmed as
** Russian, the only Cyrillic language we know; a Latin word in a text whose
** languages are all non-Latin is stemmed like one of unknown language).
** Both spellings are stemmed when they differ, so an accented record and an
** unaccented query (or the reverse) meet on at least one stem.
**
** A record keeps a stem only when it differs from the word itself ("cat"
** is not stored twice); so a query, which must find "cat" from "cats",
** looks each of its stems up in both spaces (query set).
*/
static void word_keys(a2m_analyzer *an, bag *b, const a2m_token *t, size_t word,
		      unsigned langs, unsigned unknown_langs, int query)
{
	/* Stems live in their own term space, behind A2M_STEM_MARK. */
	char stem[MAX_STEM_BYTES + 1];
	stem[0] = A2M_STEM_MARK;
	bag_add_kind(b, t->text, t->len, word, 1);
	if (t->kind != A2M_TOKEN_WORD)
		return;
	unsigned allowed = script_langs(t->script);
	unsigned use = langs & allowed;
	if (t->script == A2M_SCRIPT_CYRILLIC)
		use = allowed;
	else if (!use)
		use = unknown_langs & allowed;
	int accented = t->flen != t->len || memcmp(t->folded, t->text, t->len) != 0;
	for (int l = 0; use && l < A2M_LANG_COUNT; l++) {
		if (!(use & A2M_LANG_BIT(l)))
			continue;
		for (int pass = 0; pass < 1 + accented; pass++) {
			size_t n = pass ? a2m_stem(an, l, t->text, t->len, stem + 1, sizeof stem - 1)
					: a2m_stem(an, l, t->folded, t->flen, stem + 1, sizeof stem - 1);
			int same = n == t->len && memcmp(stem + 1, t->text, n) == 0;
			if (!n || (same && !query))
				continue;
			bag_add(b, stem, n + 1, word);
			if (query && !same)
				bag_add(b, stem + 1, n, word);
		}
	}
}

/* True when t is a stopword in every candidate language of its text. */
static int is_stop(const a2m_analyzer *an, const a2m_token *t, unsigned cands)
{
	if (!cands || t->kind != A2M_TOKEN_WORD)
		return 0;
	return (a2m_langdetect_stopword(an->ld, t->text, t->len) & cands) == cands;
}

static unsigned unknown_langs(const a2m_analyzer *an, int ascii)
{
	a2m_lang_guess none;
	memset(&none, 0, sizeof none);
	return stem_langs(an, &none, ascii);
}

int a2m_analyze_doc(a2m_analyzer *an, const char *text, a2m_doc_terms *out)
{
	a2m_tokens toks;
	a2m_lang_guess g;
	memset(out, 0, sizeof *out);
	bag *b = calloc(1, sizeof *b);
	if (!b)
		return -1;
	out->priv = b;
	if (a2m_tokenize(text, &toks) != 0) {
		a2m_tokens_free(&toks);
		return -1;
	}
	out->has_text = toks.has_text;
	a2m_detect_language(an, &toks, &g);
	unsigned langs = stem_langs(an, &g, toks.ascii);
	unsigned fallback = unknown_langs(an, toks.ascii);
	uint32_t length = 0;
	for (size_t i = 0; i < toks.n && !b->oom; i++) {
		if (is_stop(an, &toks.v[i], g.cands))
			continue;
		length++;
		word_keys(an, b, &toks.v[i], i + 1, langs, fallback, 0);
	}
	a2m_tokens_free(&toks);
	if (b->oom || !(out->terms = calloc(b->n + 1, sizeof *out->terms)))
		return -1;
	for (size_t i = 0; i < b->n; i++) {
		out->terms[i].text = b->arena.p + b->v[i].off;
		out->terms[i].len = b->v[i].len;
		out->terms[i].tf = b->v[i].tf;
	}
	out->n = b->n;
	out->length = length;
	return 0;
}

void a2m_doc_terms_free(a2m_doc_terms *dt)
{
	bag *b = dt->priv;
	if (b) {
		bag_free(b);
		free(b);
	}
	free(dt->terms);
	memset(dt, 0, sizeof *dt);
}

/* The query's storage, behind a2m_query_terms.priv. */
typedef struct query_store {
	bag    keys;    /* every key of every word (word = its number) */
	bag    words;   /* surface forms seen, to skip repeated words */
} query_store;

int a2m_analyze_query(a2m_analyzer *an, const char *text, a2m_query_terms *out)
{
	a2m_tokens toks;
	memset(out, 0, sizeof *out);
	query_store *qs = calloc(1, sizeof *qs);
	if (!qs)
		return -1;
	out->priv = qs;
	if (a2m_tokenize(text, &toks) != 0) {
		a2m_tokens_free(&toks);
		return -1;
	}
	a2m_detect_language(an, &toks, &out->guess);
	unsigned langs = stem_langs(an, &out->guess, toks.ascii);
	unsigned fallback = unknown_langs(an, toks.ascii);
	if (an->opt.query_all_langs)
		langs = A2M_LANGS_ALL;
	/* Sized to the query: blocks over 1 KiB leave malloc's fast path. */
	size_t most = toks.n < MAX_QUERY_WORDS ? toks.n : MAX_QUERY_WORDS;
	size_t *word_at = calloc(most + 1, sizeof *word_at);
	double *weight = calloc(most + 1, sizeof *weight);
	out->word_at = word_at;
	out->weight = weight;
	size_t nwords = 0;
	int oom = !word_at || !weight;
	for (size_t i = 0; i < toks.n && !oom && nwords < MAX_QUERY_WORDS; i++) {
		const a2m_token *t = &toks.v[i];
		if (is_stop(an, t, out->guess.cands))
			continue;
		int fresh = bag_add(&qs->words, t->text, t->len, i + 1);
		if (fresh < 0) {
			oom = 1;
			break;
		}
		if (!fresh)
			continue;  /* the same word again: it adds nothing */
		/* Keys new to the query belong to this word; one it shares with an
		   earlier word (two words, one stem) stays with the earlier one. */
		size_t before = qs->keys.n;
		word_keys(an, &qs->keys, t, nwords + 1, langs, fallback, 1);
		if (qs->keys.oom) {
			oom = 1;
			break;
		}
		if (qs->keys.n == before)
			continue;
		unsigned stop = a2m_langdetect_stopword(an->ld, t->text, t->len);
		weight[nwords] = t->kind == A2M_TOKEN_WORD && (stop & out->guess.cands)
			? A2M_PARTIAL_STOP_WEIGHT : 1.0;
		word_at[nwords++] = before;
	}
	a2m_tokens_free(&toks);
	if (oom || !(out->keys = calloc(qs->keys.n + 1, sizeof *out->keys)))
		return -1;
	if (!(out->key_weight = calloc(qs->keys.n + 1, sizeof *out->key_weight)))
		return -1;
	for (size_t i = 0; i < qs->keys.n; i++) {
		out->keys[i].text = qs->keys.arena.p + qs->keys.v[i].off;
		out->keys[i].len = qs->keys.v[i].len;
		out->keys[i].tf = 1;
		out->key_weight[i] = qs->keys.v[i].surface ? 1.0 : A2M_STEM_KEY_WEIGHT;
	}
	out->nkeys = qs->keys.n;
	out->nwords = nwords;
	word_at[nwords] = qs->keys.n;
	return 0;
}

void a2m_query_terms_free(a2m_query_terms *q)
{
	query_store *qs = q->priv;
	if (qs) {
		bag_free(&qs->keys);
		bag_free(&qs->words);
		free(qs);
	}
	free(q->keys);
	free(q->key_weight);
	free(q->word_at);
	free(q->weight);
	memset(q, 0, sizeof *q);
}
