/*
** analyze.c — the analysis pipeline of analyze.h from tokens on: the
** analyser, stems (Snowball, with a cache), and the term bags of records
** and queries. Folding and tokens are tokenize.c's; which language a text
** is in, and the stopword table, are langdetect.c's.
**
** Thread-safe: what a call changes (Snowball's stemmers keep state, the
** stem cache learns) lives in workers on a pool (pool.h), one worker per
** call at a time; the rest of the analyser is read only after creation.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libstemmer.h>

#include "rank/analyze.h"
#include "rank/analyze_ahead.h"
#include "rank/analyze_internal.h"
#include "rank/langdetect.h"
#include "rank/pool.h"
#include "util/slots.h"
#include "util/hash.h"

#define MAX_STEM_BYTES  (MAX_WORD_BYTES * 2)

/* The stems word_keys() remembers, to skip those a word meets again. */
#define SEEN_STEM_BYTES 31

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
** the words of a store and its queries repeat (Zipf). Set-associative:
** a set is STEM_CACHE_WAYS slots of 32 bytes kept in order of use (a hit
** moves to the front, a new stem enters there and the last one leaves), so
** the cache stays this size and a word survives the rarer ones that share
** its set. 1 MiB, 32 768 stems: at half that, 20 000 texts of the remember
** benchmark (a 20 000-word vocabulary, small for real text) missed 18.5% of
** lookups, against 15.0% now, and a miss costs Snowball ~2 600
** instructions (callgrind). Each worker (below) has a cache of its own. A slot holds its
** word, and its stem as the length of the prefix it shares with the word
** plus the rest: a stem is mostly a prefix, so half the bytes of word +
** stem serve; only words and stems that fit are kept. Stemming is
** deterministic: a hit is exactly what the stemmer would say.
*/
#define STEM_CACHE_SETS  8192  /* a power of two */
#define STEM_CACHE_WAYS  4
#define STEM_SLOT_BYTES  28

typedef struct stem_slot {
	uint8_t lang1;                  /* lang + 1; 0 = empty */
	uint8_t wlen;                   /* the word: bytes[0 .. wlen) */
	uint8_t keep;                   /* the stem: the word's first keep bytes, */
	uint8_t tlen;                   /* then bytes[wlen .. wlen + tlen) */
	char    bytes[STEM_SLOT_BYTES]; /* keep + tlen == 0: cannot be stemmed */
} stem_slot;

typedef struct stem_set {
	stem_slot way[STEM_CACHE_WAYS];  /* most recently used first */
} stem_set;

/*
** What stemming changes, for one call at a time: Snowball's stemmers (each
** keeps its word and result inside) and the stem cache. An analyser keeps
** one worker per call that ever ran at once, on its pool; a worker's
** cache is its own, so a single thread keeps the hit rate it had alone.
*/
typedef struct worker {
	a2m_pool_item       item;     /* first: the pool's link */
	struct sb_stemmer  *stemmer[A2M_LANG_COUNT];
	stem_set           *stems;    /* STEM_CACHE_SETS; NULL: no cache */
} worker;

struct a2m_analyzer {
	a2m_indexer          ix;      /* first: the store's view of us */
	a2m_analyzer_options opt;
	a2m_langdetect      *ld;
	char                 version[128];
	a2m_pool             workers; /* the free ones */
	int                  pooled;  /* workers was made (a2m_analyzer_free) */
	_Atomic(a2m_ahead_pool *) ahead;  /* the batch threads (analyze_ahead.c) */
};

const char *a2m_lang_code(int lang)
{
	return lang >= 0 && lang < A2M_LANG_COUNT ? lang_codes[lang] : "unknown";
}

/* ---- the analyser ---------------------------------------------------------- */

void a2m_analyzer_options_init(a2m_analyzer_options *opt)
{
	memset(opt, 0, sizeof *opt);
	opt->unknown_stems = A2M_UNKNOWN_STEM_ALL;
	opt->query_all_langs = 0;
	opt->batch_threads = -1;
}

static int ix_analyze(a2m_indexer *ix, const char *text, a2m_doc_terms *out)
{
	if (a2m_analyze_ahead_take((a2m_analyzer *)ix, text, out))
		return 0;
	return a2m_analyze_doc((a2m_analyzer *)ix, text, out);
}

static int ix_prepare(a2m_indexer *ix, const char *const *texts, size_t n)
{
	a2m_analyzer *an = (a2m_analyzer *)ix;
	return a2m_analyze_ahead(an, &an->ahead, texts, n, an->opt.batch_threads);
}

static int ix_foresee(a2m_indexer *ix, const char *const *texts, size_t n)
{
	a2m_analyzer *an = (a2m_analyzer *)ix;
	return a2m_analyze_ahead_foresee(an, &an->ahead, texts, n, an->opt.batch_threads);
}

static void ix_unprepare(a2m_indexer *ix)
{
	(void)ix;
	a2m_analyze_ahead_drop();
}

static void ix_release(a2m_indexer *ix, a2m_doc_terms *dt)
{
	(void)ix;
	a2m_doc_terms_free(dt);
}

static void worker_free(worker *wk)
{
	if (!wk)
		return;
	for (int l = 0; l < A2M_LANG_COUNT; l++)
		sb_stemmer_delete(wk->stemmer[l]);
	free(wk->stems);
	free(wk);
}

static void worker_item_free(a2m_pool_item *item)
{
	worker_free((worker *)item);
}

/* A fresh worker, or NULL when memory runs out or a stemmer is missing. */
static worker *worker_new(void)
{
	worker *wk = calloc(1, sizeof *wk);
	if (!wk)
		return NULL;
	for (int l = 0; l < A2M_LANG_COUNT; l++)
		if (!(wk->stemmer[l] = sb_stemmer_new(stemmer_names[l], "UTF_8"))) {
			worker_free(wk);
			return NULL;
		}
	/* Without room for the cache every stem is computed: slower, not wrong. */
	wk->stems = aligned_alloc(sizeof *wk->stems, STEM_CACHE_SETS * sizeof *wk->stems);
	if (wk->stems)
		memset(wk->stems, 0, STEM_CACHE_SETS * sizeof *wk->stems);
	return wk;
}

/*
** A worker for the caller alone: a free one, else a new one. NULL when
** memory runs out. Give it back with worker_give.
*/
static worker *worker_take(a2m_analyzer *an)
{
	a2m_pool_item *item = a2m_pool_take(&an->workers);
	return item ? (worker *)item : worker_new();
}

static void worker_give(a2m_analyzer *an, worker *wk)
{
	a2m_pool_give(&an->workers, wk ? &wk->item : NULL);
}

a2m_analyzer *a2m_analyzer_new(const a2m_analyzer_options *opt)
{
	static const char *const unknown_names[] = {"none", "en", "all"};
	a2m_analyzer *an = calloc(1, sizeof *an);
	if (!an)
		return NULL;
	atomic_init(&an->ahead, NULL);
	if (opt)
		an->opt = *opt;
	else
		a2m_analyzer_options_init(&an->opt);
	if (an->opt.unknown_stems < 0 || an->opt.unknown_stems > A2M_UNKNOWN_STEM_ALL)
		an->opt.unknown_stems = A2M_UNKNOWN_STEM_ALL;
	if (a2m_pool_init(&an->workers) != 0)
		goto fail;
	an->pooled = 1;
	/* The first worker now: a missing stemmer fails here, not in a query. */
	worker *first = worker_new();
	if (!first)
		goto fail;
	worker_give(an, first);
	if (!(an->ld = a2m_langdetect_new()))
		goto fail;
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
	an->ix.prepare = ix_prepare;
	an->ix.unprepare = ix_unprepare;
	an->ix.foresee = ix_foresee;
	return an;
fail:
	a2m_analyzer_free(an);
	return NULL;
}

void a2m_analyzer_free(a2m_analyzer *an)
{
	if (!an)
		return;
	a2m_analyze_ahead_pool_free(atomic_load(&an->ahead));
	if (an->pooled)
		a2m_pool_destroy(&an->workers, worker_item_free);
	a2m_langdetect_free(an->ld);
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

void a2m_detect_language(const a2m_analyzer *an, a2m_tokens *toks, a2m_lang_guess *g)
{
	for (size_t i = 0; i < toks->n; i++) {
		a2m_token *t = &toks->v[i];
		t->stop = t->kind == A2M_TOKEN_WORD ? a2m_langdetect_stopword(an->ld, t->text, t->len)
						    : 0;
	}
	a2m_langdetect_guess(toks, g);
}

unsigned a2m_stopword_langs(const a2m_analyzer *an, const char *word, size_t len)
{
	return a2m_langdetect_stopword(an->ld, word, len);
}

static size_t stem_uncached(worker *wk, int lang, const char *word, size_t len,
			    char *out, size_t cap);

/*
** The set of word (whose FNV-1a is h) under lang: the word is hashed once
** for all its languages.
*/
static size_t stem_set_of(int lang, uint64_t h)
{
	h ^= (uint64_t)(lang + 1) * 0x9E3779B97F4A7C15ULL;
	return (size_t)(h >> 20) & (STEM_CACHE_SETS - 1);
}

/*
** Writes into e the slot of word and its stem (n bytes; 0: none). Returns 0
** when they do not fit in one.
*/
static int stem_slot_make(stem_slot *e, int lang, const char *word, size_t len,
			  const char *stem, size_t n)
{
	size_t keep = 0;
	while (keep < n && keep < len && stem[keep] == word[keep])
		keep++;
	if (len + (n - keep) > STEM_SLOT_BYTES)
		return 0;
	e->lang1 = (uint8_t)(lang + 1);
	e->wlen = (uint8_t)len;
	e->keep = (uint8_t)keep;
	e->tlen = (uint8_t)(n - keep);
	memcpy(e->bytes, word, len);
	memcpy(e->bytes + len, stem + keep, n - keep);
	return 1;
}

/* a2m_stem of word, whose FNV-1a is h. */
static size_t stem_hashed(worker *wk, int lang, const char *word, size_t len,
			  uint64_t h, char *out, size_t cap)
{
	if (lang < 0 || lang >= A2M_LANG_COUNT || !wk->stemmer[lang] || !len ||
	    len > MAX_WORD_BYTES)
		return 0;
	if (!wk->stems || a2m_analyze_slow_path || len > STEM_SLOT_BYTES)
		return stem_uncached(wk, lang, word, len, out, cap);
	stem_set *set = &wk->stems[stem_set_of(lang, h)];
	for (size_t w = 0; w < STEM_CACHE_WAYS; w++) {
		stem_slot *e = &set->way[w];
		if (e->lang1 != lang + 1 || e->wlen != len || memcmp(e->bytes, word, len) != 0)
			continue;
		if (w) {
			/* To the front: the set stays in order of use. */
			stem_slot hit = *e;
			memmove(&set->way[1], &set->way[0], w * sizeof hit);
			set->way[0] = hit;
			e = &set->way[0];
		}
		size_t n = (size_t)e->keep + e->tlen;
		if (n > cap)
			return 0;
		memcpy(out, e->bytes, e->keep);
		memcpy(out + e->keep, e->bytes + e->wlen, e->tlen);
		return n;
	}
	char tmp[MAX_STEM_BYTES];
	size_t n = stem_uncached(wk, lang, word, len, tmp, sizeof tmp);
	stem_slot fresh;
	if (stem_slot_make(&fresh, lang, word, len, tmp, n)) {
		memmove(&set->way[1], &set->way[0], (STEM_CACHE_WAYS - 1) * sizeof fresh);
		set->way[0] = fresh;
	}
	if (n > cap)
		return 0;
	memcpy(out, tmp, n);
	return n;
}

size_t a2m_stem(a2m_analyzer *an, int lang, const char *word, size_t len, char *out,
		size_t cap)
{
	worker *wk = worker_take(an);
	if (!wk)
		return 0;
	size_t n = stem_hashed(wk, lang, word, len, a2m_hash_bytes(word, len), out, cap);
	worker_give(an, wk);
	return n;
}

/* a2m_stem without the cache. */
static size_t stem_uncached(worker *wk, int lang, const char *word, size_t len,
			    char *out, size_t cap)
{
	const sb_symbol *r = sb_stemmer_stem(wk->stemmer[lang], (const sb_symbol *)word,
					     (int)len);
	if (!r)
		return 0;
	size_t rlen = (size_t)sb_stemmer_length(wk->stemmer[lang]);
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
	a2m_buf b = {0};
	a2m_analyze_strip_into(&b, (const char *)r, rlen);
	size_t n = b.failed || b.len > cap ? 0 : b.len;
	if (n)
		memcpy(out, b.p, n);
	a2m_buf_free(&b);
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
	a2m_buf       arena;
	bag_entry *v;
	size_t     n, cap;
	uint32_t  *slots;   /* index + 1 into v; 0 = free */
	size_t     nslots;  /* a power of two, at least twice n */
	int        oom;
} bag;

static uint64_t bag_hash(const void *ctx, size_t i)
{
	const bag *b = ctx;
	return a2m_hash_bytes(b->arena.p + b->v[i].off, b->v[i].len);
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
	size_t j = (size_t)a2m_hash_bytes(s, len) & (b->nslots - 1);
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
	size_t off = b->arena.len;
	a2m_buf_put(&b->arena, s, len);
	if (b->arena.failed) {
		b->oom = 1;
		return -1;
	}
	b->v[b->n] = (bag_entry){.off = off, .len = (uint32_t)len, .tf = 1, .word = word,
				 .surface = surface};
	b->slots[j] = (uint32_t)(b->n + 1);
	b->n++;
	return 1;
}

/*
** Sizes an empty bag's table for the keys of ntok words (a surface form and
** a stem or two each), so that a text's bag seldom grows: grown from 64
** slots by doubling, a chunk of a file rebuilt it twice (callgrind: 1.5%
** of indexing a folder). Only a start: failing here leaves it to grow.
*/
#define BAG_RESERVE_MAX ((size_t)1 << 14)
static void bag_reserve(bag *b, size_t ntok)
{
	size_t ns = 64;
	while (ns < 4 * ntok && ns < BAG_RESERVE_MAX)
		ns *= 2;
	if (ns > 64)
		a2m_slots_rebuild(&b->slots, &b->nslots, ns, 0, bag_hash, b);
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
static void word_keys(worker *wk, bag *b, const a2m_token *t, size_t word,
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
	/* The ASCII tokenizer points both spellings at one string. */
	int accented = t->flen != t->len ||
		       (t->folded != t->text && memcmp(t->folded, t->text, t->len) != 0);
	uint64_t hf = use ? a2m_hash_bytes(t->folded, t->flen) : 0;
	uint64_t ht = accented ? a2m_hash_bytes(t->text, t->len) : hf;
	/*
	** The stems this word had so far: one met again (most languages leave
	** most words alike) would only find its keys counted for this word
	** already, so it skips the bag. Longer stems are not remembered.
	*/
	struct { uint8_t len; char s[SEEN_STEM_BYTES]; } seen[2 * A2M_LANG_COUNT];
	size_t nseen = 0;
	for (int l = 0; use && l < A2M_LANG_COUNT; l++) {
		if (!(use & A2M_LANG_BIT(l)))
			continue;
		for (int pass = 0; pass < 1 + accented; pass++) {
			size_t n = pass ? stem_hashed(wk, l, t->text, t->len, ht, stem + 1, sizeof stem - 1)
					: stem_hashed(wk, l, t->folded, t->flen, hf, stem + 1,
						      sizeof stem - 1);
			int same = n == t->len && memcmp(stem + 1, t->text, n) == 0;
			if (!n || (same && !query))
				continue;
			size_t k = 0;
			while (k < nseen && (seen[k].len != n || memcmp(seen[k].s, stem + 1, n) != 0))
				k++;
			if (k < nseen)
				continue;
			if (n <= SEEN_STEM_BYTES) {
				seen[nseen].len = (uint8_t)n;
				memcpy(seen[nseen++].s, stem + 1, n);
			}
			bag_add(b, stem, n + 1, word);
			if (query && !same)
				bag_add(b, stem + 1, n, word);
		}
	}
}

/* True when t is a stopword in every candidate language of its text. */
static int is_stop(const a2m_token *t, unsigned cands)
{
	if (!cands || t->kind != A2M_TOKEN_WORD)
		return 0;
	return (t->stop & cands) == cands;
}

static unsigned unknown_langs(const a2m_analyzer *an, int ascii)
{
	a2m_lang_guess none;
	memset(&none, 0, sizeof none);
	return stem_langs(an, &none, ascii);
}

int a2m_analyze_doc(a2m_analyzer *an, const char *text, a2m_doc_terms *out)
{
	worker *wk = worker_take(an);
	int rc = a2m_analyze_doc_on(an, wk, text, out);
	worker_give(an, wk);
	return rc;
}

void *a2m_analyzer_worker_take(a2m_analyzer *an)
{
	return worker_take(an);
}

void a2m_analyzer_worker_give(a2m_analyzer *an, void *wk)
{
	worker_give(an, wk);
}

int a2m_analyze_doc_on(a2m_analyzer *an, void *held, const char *text, a2m_doc_terms *out)
{
	worker *wk = held;
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
	bag_reserve(b, toks.n);
	a2m_detect_language(an, &toks, &g);
	unsigned langs = stem_langs(an, &g, toks.ascii);
	unsigned fallback = unknown_langs(an, toks.ascii);
	uint32_t length = 0;
	for (size_t i = 0; i < toks.n && wk && !b->oom; i++) {
		if (is_stop(&toks.v[i], g.cands))
			continue;
		length++;
		word_keys(wk, b, &toks.v[i], i + 1, langs, fallback, 0);
	}
	a2m_tokens_free(&toks);
	if (!wk || b->oom || !(out->terms = calloc(b->n + 1, sizeof *out->terms)))
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

int a2m_doc_terms_pack(a2m_doc_terms *dt)
{
	bag *b = dt->priv;
	if (!b)
		return 0;
	size_t head = (dt->n + 1) * sizeof *dt->terms;
	char *block = malloc(head + b->arena.len);
	if (!block)
		return -1;
	a2m_term *terms = (a2m_term *)(void *)block;
	char *bytes = block + head;
	if (b->arena.len)
		memcpy(bytes, b->arena.p, b->arena.len);
	for (size_t i = 0; i < dt->n; i++) {
		terms[i] = dt->terms[i];
		terms[i].text = bytes + (dt->terms[i].text - b->arena.p);
	}
	memset(&terms[dt->n], 0, sizeof terms[dt->n]);
	bag_free(b);
	free(b);
	free(dt->terms);
	dt->terms = terms;
	dt->priv = NULL;
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
	worker *wk = worker_take(an);
	int oom = !word_at || !weight || !wk;
	for (size_t i = 0; i < toks.n && !oom && nwords < MAX_QUERY_WORDS; i++) {
		const a2m_token *t = &toks.v[i];
		if (is_stop(t, out->guess.cands))
			continue;
		/* Keys new to the query belong to this word; one it shares with an
		   earlier word (two words, one stem) stays with the earlier one, and
		   a word met again, which brings none, is no word of its own. */
		size_t before = qs->keys.n;
		word_keys(wk, &qs->keys, t, nwords + 1, langs, fallback, 1);
		if (qs->keys.oom) {
			oom = 1;
			break;
		}
		if (qs->keys.n == before)
			continue;
		weight[nwords] = t->kind == A2M_TOKEN_WORD && (t->stop & out->guess.cands)
			? A2M_PARTIAL_STOP_WEIGHT : 1.0;
		word_at[nwords++] = before;
	}
	worker_give(an, wk);
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
		free(qs);
	}
	free(q->keys);
	free(q->key_weight);
	free(q->word_at);
	free(q->weight);
	memset(q, 0, sizeof *q);
}
