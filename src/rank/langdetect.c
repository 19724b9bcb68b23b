/*
** langdetect.c — which language is a text in? A small deterministic
** detector, and the stopword table it shares with the analyser.
**
** Evidence, summed per language:
**   - stopwords: each word that is a stopword in k of our languages adds
**     1/k to each of them, so "the" or "und" (one language) counts fully and
**     "a" or "la" (three or four) a little;
**   - distinctive letters: ñ (Spanish), ã õ (Portuguese), ì ò (Italian),
**     ä ö ü (German), œ î û (French), and the shared accents split between
**     the languages that use them; plus a few spellings (th, sch, ij, nh,
**     lh, gli...). Their total is capped per language (LETTER_CAP), so a long
**     text is decided by its words, not its accents;
**   - script: every Cyrillic word adds one to Russian, the only Cyrillic
**     language we stem.
**
** The candidates are the languages scoring at least CANDIDATE_RATIO of the
** best; the text is detected as a language only when that leaves one. A
** text with no evidence at all (a short note, a name, CJK) has no
** candidates and is reported unknown. Nothing is random or trained: the
** same text always gets the same answer, which the index relies on.
*/
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "rank/analyze_internal.h"
#include "rank/langdetect.h"
#include "util/hash.h"

#define CANDIDATE_RATIO 0.5
#define LETTER_CAP      1.5

typedef struct slot {
	char    *word;
	uint32_t len;
	unsigned mask;
} slot;

struct a2m_langdetect {
	slot    *slots;
	size_t   nslots;      /* a power of two */
	/*
	** len_bit(len) of lens[pair_of(w, len)] is set when a stopword of len
	** bytes starts as w does: most words that are no stopword are told so
	** without a hash. By the first byte alone, three words in four still
	** went to the table (callgrind, a folder of prose and code).
	*/
	uint32_t lens[64 * 64];
};

/* A word's first two bytes, six bits each (only a filter: they may collide). */
static size_t pair_of(const char *w, size_t len)
{
	unsigned a = (unsigned char)w[0] & 63u, b = len > 1 ? (unsigned char)w[1] & 63u : 0u;
	return a << 6 | b;
}

/* A word's length as a bit of a2m_langdetect.lens (31: that long or longer). */
static uint32_t len_bit(size_t len)
{
	return 1u << (len < 31 ? len : 31);
}

static slot *find(const a2m_langdetect *ld, const char *w, size_t n)
{
	size_t i = (size_t)a2m_hash_bytes(w, n) & (ld->nslots - 1);
	while (ld->slots[i].word) {
		if (ld->slots[i].len == n && memcmp(ld->slots[i].word, w, n) == 0)
			return &ld->slots[i];
		i = (i + 1) & (ld->nslots - 1);
	}
	return &ld->slots[i];
}

/* Adds lang to word's mask. Returns 0, or -1 when memory runs out. */
static int add(a2m_langdetect *ld, const char *w, size_t n, int lang)
{
	slot *s = find(ld, w, n);
	ld->lens[pair_of(w, n)] |= len_bit(n);
	if (!s->word) {
		if (!(s->word = malloc(n + 1)))
			return -1;
		memcpy(s->word, w, n);
		s->word[n] = '\0';
		s->len = (uint32_t)n;
	}
	s->mask |= A2M_LANG_BIT(lang);
	return 0;
}

a2m_langdetect *a2m_langdetect_new(void)
{
	a2m_langdetect *ld = calloc(1, sizeof *ld);
	size_t total = 0;
	if (!ld)
		return NULL;
	for (int l = 0; l < A2M_LANG_COUNT; l++)
		for (const char *const *w = a2m_stopwords(l); *w; w++)
			total++;
	ld->nslots = 64;
	while (ld->nslots < total * 2)
		ld->nslots *= 2;
	if (!(ld->slots = calloc(ld->nslots, sizeof *ld->slots)))
		goto fail;
	for (int l = 0; l < A2M_LANG_COUNT; l++) {
		for (const char *const *w = a2m_stopwords(l); *w; w++) {
			a2m_tokens t = {0};
			int rc = a2m_tokenize(*w, &t);
			/* A listed word folds to one token; "dell'" and the like to one too. */
			for (size_t i = 0; rc == 0 && i < t.n; i++)
				rc = add(ld, t.v[i].text, t.v[i].len, l);
			a2m_tokens_free(&t);
			if (rc)
				goto fail;
		}
	}
	return ld;
fail:
	a2m_langdetect_free(ld);
	return NULL;
}

void a2m_langdetect_free(a2m_langdetect *ld)
{
	if (!ld)
		return;
	for (size_t i = 0; ld->slots && i < ld->nslots; i++)
		free(ld->slots[i].word);
	free(ld->slots);
	free(ld);
}

unsigned a2m_langdetect_stopword(const a2m_langdetect *ld, const char *word, size_t len)
{
	if (!len || !(ld->lens[pair_of(word, len)] & len_bit(len)))
		return 0;  /* no stopword starts so and is so long */
	return find(ld, word, len)->mask;
}

/* ---- letters ------------------------------------------------------------ */

/* A letter's evidence: up to three languages, each with a weight. */
typedef struct cue {
	int32_t cp;
	struct { int lang; double w; } to[4];
} cue;

#define EN A2M_LANG_EN
#define IT A2M_LANG_IT
#define ES A2M_LANG_ES
#define FR A2M_LANG_FR
#define DE A2M_LANG_DE
#define PT A2M_LANG_PT
#define NL A2M_LANG_NL

/* Folded (lower-case, composed) letters; weight per occurrence. */
static const cue letters[] = {
	{0x00F1, {{ES, 1.0}}},                                  /* ñ */
	{0x00E3, {{PT, 1.0}}}, {0x00F5, {{PT, 1.0}}},           /* ã õ */
	{0x00EC, {{IT, 1.0}}}, {0x00F2, {{IT, 1.0}}},           /* ì ò */
	{0x00E4, {{DE, 0.6}}}, {0x00F6, {{DE, 0.6}}},           /* ä ö */
	{0x00FC, {{DE, 0.6}}},                                  /* ü */
	{0x0153, {{FR, 1.0}}}, {0x00EE, {{FR, 0.8}}},           /* œ î */
	{0x00FB, {{FR, 0.8}}},                                  /* û */
	{0x00E7, {{FR, 0.5}, {PT, 0.5}}},                       /* ç */
	{0x00E0, {{IT, 0.4}, {FR, 0.3}, {PT, 0.3}}},            /* à */
	{0x00E8, {{IT, 0.5}, {FR, 0.5}}},                       /* è */
	{0x00F9, {{IT, 0.5}, {FR, 0.5}}},                       /* ù */
	{0x00E9, {{FR, 0.4}, {ES, 0.2}, {PT, 0.2}, {IT, 0.2}}}, /* é */
	{0x00E1, {{ES, 0.5}, {PT, 0.5}}},                       /* á */
	{0x00ED, {{ES, 0.5}, {PT, 0.5}}},                       /* í */
	{0x00F3, {{ES, 0.5}, {PT, 0.5}}},                       /* ó */
	{0x00FA, {{ES, 0.5}, {PT, 0.5}}},                       /* ú */
	{0x00E2, {{FR, 0.5}, {PT, 0.5}}},                       /* â */
	{0x00EA, {{FR, 0.5}, {PT, 0.5}}},                       /* ê */
	{0x00F4, {{FR, 0.5}, {PT, 0.5}}},                       /* ô */
	{0x00EB, {{FR, 0.5}, {NL, 0.5}}},                       /* ë */
	{0x00EF, {{FR, 0.5}, {NL, 0.5}}},                       /* ï */
};

/*
** Spellings (in the surface form, marks stripped), per occurrence: th wh
** (English); sch (German, Dutch); ij oe aa (Dutch); nh lh (Portuguese);
** gli zz (Italian); eau aux (French); ei (German, Dutch); w k (the
** Germanic languages, which the Romance ones barely use).
**
** Every spelling but w and k is told by its first two letters, so a table
** of letter pairs finds them: one look-up a letter, and a branch taken
** only where a spelling may start. A switch on every letter (half of all
** letters start some spelling) mispredicted so often that this step alone
** was 4% of a batched remember (perf). The weights are added in the order
** the switch added them, so the sums are the same to the bit.
*/
enum { SP_NONE, SP_TH, SP_WH, SP_SC, SP_IJ, SP_OE, SP_AA, SP_AU, SP_NH, SP_LH, SP_GL,
       SP_ZZ, SP_EA, SP_EI, SP_W, SP_K, SP_W_WH };
#define PAIR(a, b) [(unsigned)(a) << 7 | (unsigned)(b)]
static const uint8_t spelling_pairs[128 * 128] = {
	PAIR('t', 'h') = SP_TH, PAIR('w', 'h') = SP_WH, PAIR('s', 'c') = SP_SC,
	PAIR('i', 'j') = SP_IJ, PAIR('o', 'e') = SP_OE, PAIR('a', 'a') = SP_AA,
	PAIR('a', 'u') = SP_AU, PAIR('n', 'h') = SP_NH, PAIR('l', 'h') = SP_LH,
	PAIR('g', 'l') = SP_GL, PAIR('z', 'z') = SP_ZZ, PAIR('e', 'a') = SP_EA,
	PAIR('e', 'i') = SP_EI,
};
#undef PAIR

/*
** The same pairs with w and k folded in, for spelling_cues_ascii: a byte
** of a word then costs one look-up whatever it is. 'w' before anything
** but 'h' is SP_W, 'w' before 'h' SP_W_WH (the letter's cue, then the
** pair's, in that order), 'k' before anything SP_K (no spelling starts
** with k). Made once from spelling_pairs (cue_table_make).
*/
static uint8_t cue_table[128 * 128];
static pthread_once_t cue_table_once = PTHREAD_ONCE_INIT;

static void cue_table_make(void)
{
	memcpy(cue_table, spelling_pairs, sizeof cue_table);
	for (unsigned d = 0; d < 128; d++) {
		cue_table['w' << 7 | d] = d == 'h' ? SP_W_WH : SP_W;
		cue_table['k' << 7 | d] = SP_K;
	}
}

/* Adds one spelling's weights (the pair starting at w[i], n bytes). */
static void spelling_add(unsigned pair, const unsigned char *w, size_t i, size_t n,
			 double *bonus)
{
	unsigned e = i + 2 < n ? w[i + 2] : 0;
	switch (pair) {
	case SP_W_WH: bonus[EN] += 0.1; bonus[DE] += 0.1; bonus[NL] += 0.1; /* fall through */
	case SP_WH: bonus[EN] += 0.4; break;
	case SP_W: bonus[EN] += 0.1; bonus[DE] += 0.1; bonus[NL] += 0.1; break;
	case SP_K: bonus[EN] += 0.05; bonus[DE] += 0.1; bonus[NL] += 0.1; break;
	case SP_TH: bonus[EN] += 0.3; break;
	case SP_SC: if (e == 'h') { bonus[DE] += 0.3; bonus[NL] += 0.3; } break;
	case SP_IJ: bonus[NL] += 0.5; break;
	case SP_OE: bonus[NL] += 0.2; break;
	case SP_AA: bonus[NL] += 0.4; break;
	case SP_AU: if (e == 'x') bonus[FR] += 0.3; break;
	case SP_NH: case SP_LH: bonus[PT] += 0.4; break;
	case SP_GL: if (e == 'i') bonus[IT] += 0.4; break;
	case SP_ZZ: bonus[IT] += 0.4; break;
	case SP_EA: if (e == 'u') bonus[FR] += 0.5; break;
	case SP_EI: bonus[DE] += 0.2; bonus[NL] += 0.1; break;
	default: break;
	}
}

/* The general loop: any bytes (a spelling is told only in ASCII). */
static void spelling_cues(const char *word, size_t n, double *bonus)
{
	const unsigned char *w = (const unsigned char *)word;
	for (size_t i = 0; i < n; i++) {
		unsigned c = w[i], d = i + 1 < n ? w[i + 1] : 0;
		if (c == 'w')
			spelling_add(SP_W, w, i, n, bonus);
		else if (c == 'k')
			spelling_add(SP_K, w, i, n, bonus);
		unsigned pair = (c | d) < 128 ? spelling_pairs[c << 7 | d] : SP_NONE;
		if (pair != SP_NONE)
			spelling_add(pair, w, i, n, bonus);
	}
}

/*
** spelling_cues for a word all of whose bytes are ASCII: one look-up a
** byte (a third of language detection went to the general loop's tests,
** callgrind). The same additions in the same order: the same sums.
*/
static void spelling_cues_ascii(const char *word, size_t n, double *bonus)
{
	const unsigned char *w = (const unsigned char *)word;
	for (size_t i = 0; i < n; i++) {
		unsigned pair = cue_table[(unsigned)w[i] << 7 | (i + 1 < n ? w[i + 1] : 0u)];
		if (pair != SP_NONE)
			spelling_add(pair, w, i, n, bonus);
	}
}

#undef EN
#undef IT
#undef ES
#undef FR
#undef DE
#undef PT
#undef NL

static const cue *letter_cue(int32_t cp)
{
	if (cp < 0xE0)
		return NULL;
	for (size_t i = 0; i < sizeof letters / sizeof letters[0]; i++)
		if (letters[i].cp == cp)
			return &letters[i];
	return NULL;
}

/*
** Adds the letters and spellings of one word to bonus[]. ascii: the text
** is all ASCII, which holds no letter cue.
*/
static void word_cues(const a2m_token *t, int ascii, double *bonus)
{
	const uint8_t *p = (const uint8_t *)t->folded;
	utf8proc_ssize_t left = ascii ? 0 : (utf8proc_ssize_t)t->flen;
	while (left > 0) {
		int32_t cp;
		if (*p < 0x80) {  /* no ASCII letter is a cue of its own */
			p++;
			left--;
			continue;
		}
		utf8proc_ssize_t k = utf8proc_iterate(p, left, &cp);
		if (k <= 0)
			break;
		const cue *c = letter_cue(cp);
		for (size_t i = 0; c && i < 4 && c->to[i].w > 0; i++)
			bonus[c->to[i].lang] += c->to[i].w;
		p += k;
		left -= k;
	}
	if (ascii && !a2m_analyze_slow_path)
		spelling_cues_ascii(t->text, t->len, bonus);
	else
		spelling_cues(t->text, t->len, bonus);
}

void a2m_langdetect_guess(const a2m_tokens *toks, a2m_lang_guess *g)
{
	double bonus[A2M_LANG_COUNT] = {0};
	pthread_once(&cue_table_once, cue_table_make);
	memset(g, 0, sizeof *g);
	g->lang = A2M_LANG_UNKNOWN;
	for (size_t i = 0; i < toks->n; i++) {
		const a2m_token *t = &toks->v[i];
		if (t->kind != A2M_TOKEN_WORD)
			continue;
		if (t->script & A2M_SCRIPT_CYRILLIC)
			g->score[A2M_LANG_RU] += 1.0;
		unsigned m = t->stop;
		if (m) {
			int k = __builtin_popcount(m);
			for (int l = 0; l < A2M_LANG_COUNT; l++)
				if (m & A2M_LANG_BIT(l))
					g->score[l] += 1.0 / k;
		}
		if (t->script == A2M_SCRIPT_LATIN)
			word_cues(t, toks->ascii, bonus);
	}
	double best = 0;
	for (int l = 0; l < A2M_LANG_COUNT; l++) {
		g->score[l] += bonus[l] < LETTER_CAP ? bonus[l] : LETTER_CAP;
		if (g->score[l] > best)
			best = g->score[l];
	}
	if (best <= 0)
		return;
	for (int l = 0; l < A2M_LANG_COUNT; l++)
		if (g->score[l] >= best * CANDIDATE_RATIO)
			g->cands |= A2M_LANG_BIT(l);
	if (__builtin_popcount(g->cands) == 1)
		g->lang = __builtin_ctz(g->cands);
}
