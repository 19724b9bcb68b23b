/*
** analyze.h — text analysis for the lexical index: what a text is indexed
** as, and what a query looks up (DESIGN §4, DECISIONS 015).
**
** The pipeline, the same for records and queries:
**
**   1. fold: NFKC and Unicode case folding (utf8proc), default-ignorable
**      code points dropped; invalid UTF-8 bytes are skipped.
**   2. tokenize: letters and digits of every script (Unicode categories L*
**      and N*, with the marks M* that follow them) form words; everything
**      else separates. An apostrophe between letters splits ("l'acqua" ->
**      "l", "acqua"), and a one-letter piece next to one is dropped ("l",
**      the English "'s" and "'t"). Han, Hiragana and Katakana runs, and
**      Hangul runs, become overlapping character bigrams; a run of one
**      character is a unigram.
**   3. each word has two spellings: `folded` (accents kept, what a stemmer
**      needs) and `text`, with the marks of Latin, Greek and Cyrillic letters
**      stripped ("città" -> "citta", "Köln" -> "koln"; Russian "й" is a letter
**      of its own and kept, "ё" becomes "е"), plus æ/œ/ø/ł/đ/ð/þ/ı spelt out.
**      Marks of other scripts (Devanagari vowel signs...) are kept: there
**      they are letters, not accents.
**   4. language: detected per text from its stopwords and a few distinctive
**      letters (langdetect.c). The answer is a set of candidate languages:
**      one (detected), several (ambiguous: "la casa" is Italian or Spanish),
**      or none (no evidence: unknown).
**   5. stopwords: a word is dropped only when it is a stopword in EVERY
**      candidate language of its text, so a list never deletes a word of a
**      language it does not belong to (DECISIONS 015), and a text of unknown
**      language loses nothing.
**   6. stems: each remaining Latin-script word is stemmed with Snowball
**      under each candidate language (Cyrillic words under Russian); a text
**      of unknown language under every language we know (see
**      a2m_analyzer_options). Stems are stripped of marks like words are.
**
** A record is indexed as the multiset of its words' surface forms and
** stems, the stems in a term space of their own (marked by a leading
** A2M_STEM_MARK, which no surface form contains); a query word looks up its
** own surface form and stems, and matches a record through whichever it
** shares. That is how `rotate` finds `rotates` (both stem to `rotat`) and
** `citta` finds `città` (same surface), whatever languages the two texts
** were detected as; keeping the spaces apart lets an exact match count for
** more than a shared stem ("irmã" is not "irmão", though Portuguese stems
** them alike). A record stores a stem only when it differs from its word;
** a query looks its stems up in both spaces, at the stem's weight.
**
** Threads: every function here may be called by several threads at once
** on the same analyser (queries on the server's reader threads while a
** writer indexes). What a call changes (Snowball's stemmers keep state;
** the stem cache learns) is taken from a pool of workers for that call
** alone and given back after it, never shared; the rest is read only after
** a2m_analyzer_new. Only a2m_analyzer_free must not overlap another call
** on the same analyser. Results do not depend on which worker served a
** call: stemming is deterministic and a cache hit is exactly what the
** stemmer says (docs/RANKING.md §9).
*/
#ifndef A2M_ANALYZE_H
#define A2M_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* The languages with stopwords and a stemmer; a bit each in a language set. */
enum {
	A2M_LANG_EN, A2M_LANG_IT, A2M_LANG_ES, A2M_LANG_FR,
	A2M_LANG_DE, A2M_LANG_PT, A2M_LANG_NL, A2M_LANG_RU,
	A2M_LANG_COUNT
};
#define A2M_LANG_UNKNOWN  (-1)
#define A2M_LANG_BIT(l)   (1u << (l))
#define A2M_LANGS_LATIN   0x7fu  /* en it es fr de pt nl */
#define A2M_LANGS_ALL     0xffu

/* "en", "it", ... ; "unknown" for anything else. */
const char *a2m_lang_code(int lang);

/* The stopword list of lang as written (NULL-terminated), or NULL. */
const char *const *a2m_stopwords(int lang);

/* ---- tokens ------------------------------------------------------------ */

enum { A2M_TOKEN_WORD = 0, A2M_TOKEN_CJK = 1 };

/* Scripts seen in a word (bits). */
#define A2M_SCRIPT_LATIN    1u
#define A2M_SCRIPT_CYRILLIC 2u
#define A2M_SCRIPT_OTHER    4u  /* any other letters (Greek, Arabic, CJK...) */

typedef struct a2m_token {
	const char *text;    /* folded, marks stripped: the surface term */
	size_t      len;
	const char *folded;  /* folded, marks kept (== text when it had none) */
	size_t      flen;
	int         kind;    /* A2M_TOKEN_WORD or A2M_TOKEN_CJK */
	unsigned    script;  /* A2M_SCRIPT_* bits; 0 for digits only */
	unsigned    stop;    /* languages it is a stopword of (A2M_LANG_BIT); set by
	                        a2m_detect_language, looked up once per token */
} a2m_token;

typedef struct a2m_tokens {
	a2m_token *v;
	size_t     n;
	int        has_text;  /* the text holds something other than white space */
	int        ascii;     /* the text is all ASCII */
	void      *priv;
} a2m_tokens;

/*
** Cuts text (NUL-terminated UTF-8) into tokens, in order. Returns 0, or -1
** when memory runs out. Free with a2m_tokens_free (also after a failure).
*/
int a2m_tokenize(const char *text, a2m_tokens *out);
void a2m_tokens_free(a2m_tokens *t);

/* ---- the analyser ------------------------------------------------------ */

/* What a text with no detected language is stemmed as. */
enum {
	A2M_UNKNOWN_STEM_NONE  = 0,  /* not at all: surface forms only */
	A2M_UNKNOWN_STEM_EN    = 1,  /* English, when the text is all ASCII */
	A2M_UNKNOWN_STEM_ALL   = 2   /* every language of the word's script */
};

typedef struct a2m_analyzer_options {
	int unknown_stems;    /* A2M_UNKNOWN_STEM_*; default ALL (docs/RANKING.md) */
	int query_all_langs;  /* 1: query words are stemmed under every language,
	                         whatever the query was detected as; default 0 */
	int batch_threads;    /* threads that analyse a batch's texts while the
	                         caller writes it (the indexer's prepare, store.h):
	                         -1 (default) a2m_helpers_default (util/thread.h);
	                         0 none: every text on the caller's thread */
} a2m_analyzer_options;

/* The defaults, as measured by the quality benchmark (docs/RANKING.md). */
void a2m_analyzer_options_init(a2m_analyzer_options *opt);

typedef struct a2m_analyzer a2m_analyzer;

/*
** Creates an analyser (opt NULL: the defaults), with one worker ready.
** Returns NULL when memory runs out or a Snowball stemmer is missing.
** Free with a2m_analyzer_free.
*/
a2m_analyzer *a2m_analyzer_new(const a2m_analyzer_options *opt);

/*
** Frees an (NULL: nothing) and every worker it made. No other call on an
** may be running.
*/
void a2m_analyzer_free(a2m_analyzer *an);

/*
** Names the analysis, options included. The index stores it: an index
** built by a different analysis is rebuilt (store.h, index_attach).
*/
const char *a2m_analyzer_version(const a2m_analyzer *an);

/* ---- languages --------------------------------------------------------- */

typedef struct a2m_lang_guess {
	int      lang;    /* the detected language, or A2M_LANG_UNKNOWN */
	unsigned cands;   /* plausible languages (A2M_LANG_BIT); 0: no evidence */
	double   score[A2M_LANG_COUNT];
} a2m_lang_guess;

/*
** Guesses the language of a tokenized text (langdetect.c), after noting in
** each token the languages it is a stopword of (a2m_token.stop).
*/
void a2m_detect_language(const a2m_analyzer *an, a2m_tokens *toks, a2m_lang_guess *g);

/* The languages in which the surface word (len bytes) is a stopword. */
unsigned a2m_stopword_langs(const a2m_analyzer *an, const char *word, size_t len);

/*
** Stems the folded word (len bytes) under lang and strips the marks of the
** result into out (cap bytes). Returns the stem's length, or 0 when it
** cannot be stemmed (too long, or lang has no stemmer) or memory for a
** worker runs out.
*/
size_t a2m_stem(a2m_analyzer *an, int lang, const char *word, size_t len, char *out,
		size_t cap);

/* ---- records and queries ----------------------------------------------- */

/*
** Analyses a record's text into its distinct terms with their counts, and
** its length in tokens (stopwords excluded). Returns 0, or -1 when memory
** runs out. Free with a2m_doc_terms_free (also after a failure), which
** needs no analyser.
*/
int a2m_analyze_doc(a2m_analyzer *an, const char *text, a2m_doc_terms *out);
void a2m_doc_terms_free(a2m_doc_terms *dt);

/* The first byte of a stem term: a surface form never contains it. */
#define A2M_STEM_MARK '~'

/*
** How much a match on a stem counts, against 1 for a match on the surface
** form (docs/RANKING.md).
*/
#define A2M_STEM_KEY_WEIGHT 0.85

/*
** A query: its words, each with the keys (surface form first, then stems)
** any of which matches a record. Repeated words appear once.
*/
typedef struct a2m_query_terms {
	a2m_term      *keys;      /* tf is 1 */
	double        *key_weight;/* of each key: 1, or A2M_STEM_KEY_WEIGHT for a stem */
	size_t         nkeys;
	size_t        *word_at;   /* word i owns keys[word_at[i] .. word_at[i + 1]) */
	double        *weight;    /* of word i: 1, or A2M_PARTIAL_STOP_WEIGHT */
	size_t         nwords;
	a2m_lang_guess guess;
	void          *priv;
} a2m_query_terms;

/*
** A query word that is a stopword in some but not all of the query's
** candidate languages ("la" in a query that may be Italian or Portuguese)
** is kept, since it may carry meaning, but counts for this much.
*/
#define A2M_PARTIAL_STOP_WEIGHT 0.3

/*
** Analyses a query. nwords == 0 means it has no usable terms (empty, or
** only stopwords): the scorer then abstains. Returns 0, or -1 when memory
** runs out. Free with a2m_query_terms_free (also after a failure).
*/
int a2m_analyze_query(a2m_analyzer *an, const char *text, a2m_query_terms *out);
void a2m_query_terms_free(a2m_query_terms *q);

/* The analyser as the store sees it (store.h): borrowed from an. */
a2m_indexer *a2m_analyzer_indexer(a2m_analyzer *an);

#endif
