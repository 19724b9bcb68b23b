/*
** summary.c — the extractive summarizer (see summary.h).
**
** The sources are cut into sentences. A sentence scores by the content words
** it shares with the other sources: each distinct content word adds the
** number of source records that contain it, and the sum is divided by the
** square root of the sentence's distinct content words, so a long sentence
** does not win by length alone. The best few sentences, without repeats, are
** returned in the order the sources had them. Nothing is paraphrased, so the
** summary can only say what a source said (§4.15: a summary that invents
** content is worse than none).
**
** Words are runs of ASCII letters and digits (lowercased) and of non-ASCII
** bytes, so accented and CJK text form words too; common punctuation outside
** ASCII separates them. Words shorter than three bytes and the stopwords of
** the languages the lexical scorer knows carry no topic and are ignored.
**
** On NULL, errno tells the caller why: 0 when there was nothing to say,
** ENOMEM when memory ran out.
*/
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compose/summary.h"
#include "util/grow.h"
#include "util/text.h"
#include "util/hash.h"

/* Shorter words are mostly particles; three bytes also keeps one CJK character. */
#define MIN_WORD_BYTES 3

/*
** Frequent words of English, Italian, Spanish, French and German with at
** least MIN_WORD_BYTES bytes (shorter ones are dropped anyway).
*/
static const char *const stopwords[] = {
	/* English */
	"the", "and", "for", "are", "but", "not", "you", "all", "any", "can", "had",
	"her", "was", "one", "our", "out", "has", "have", "him", "his", "how", "its",
	"may", "now", "see", "who", "did", "get", "let", "say", "she", "too", "use",
	"that", "this", "with", "from", "they", "will", "would", "there", "their",
	"what", "about", "which", "when", "make", "like", "than", "then", "them",
	"these", "those", "been", "were", "into", "more", "some", "such", "only",
	"other", "also", "very", "just", "over", "each", "because", "does", "doing",
	"being", "should", "could", "where", "while", "your", "yours", "here", "both",
	"after", "before", "between", "through", "during", "under", "again", "once",
	"same", "most", "own", "off", "why", "whom", "nor", "few", "itself", "myself",
	/* Italian */
	"che", "non", "per", "una", "uno", "del", "della", "delle", "dei", "degli",
	"dello", "alla", "alle", "allo", "agli", "dal", "dalla", "dai", "nel", "nella",
	"nei", "negli", "sul", "sulla", "sui", "con", "come", "anche", "sono", "questo",
	"questa", "questi", "queste", "quello", "quella", "pi\xc3\xb9", "suo", "sua",
	"suoi", "loro", "mio", "mia", "tuo", "tua", "essere", "stato", "stata",
	"hanno", "era", "erano", "fra", "tra", "gli", "dove", "quando",
	"perch\xc3\xa9", "molto", "tutto", "tutti", "cosa", "ogni",
	/* Spanish */
	"que", "los", "las", "por", "para", "como", "pero", "m\xc3\xa1s", "sus", "les",
	"este", "esta", "estos", "estas", "ese", "esa", "eso", "son", "fue", "ser",
	"hay", "muy", "sin", "sobre", "tambi\xc3\xa9n", "entre", "cuando", "todo",
	"todos", "hasta", "desde", "donde", "porque", "est\xc3\xa1", "est\xc3\xa1n",
	"han", "hab\xc3\xad" "a", "nos", "ella", "ellos", "qu\xc3\xa9",
	/* French */
	"les", "des", "une", "est", "pas", "qui", "dans", "pour", "par", "sur", "avec",
	"sont", "ont", "aux", "ces", "cette", "cet", "ses", "leur", "leurs", "mais",
	"plus", "tout", "tous", "elle", "elles", "nous", "vous", "ils", "\xc3\xa9t\xc3\xa9",
	"\xc3\xaatre", "fait", "tr\xc3\xa8s", "aussi", "sans", "sous", "donc",
	"m\xc3\xaame", "quand",
	/* German */
	"der", "die", "das", "und", "den", "dem", "ein", "eine", "einen", "einem",
	"einer", "eines", "ist", "sind", "war", "waren", "nicht", "mit", "von", "auf",
	"f\xc3\xbcr", "aus", "bei", "nach", "sich", "auch", "als", "wie", "oder",
	"aber", "wenn", "dass", "noch", "nur", "schon", "sie", "ihr", "ihre", "wir",
	"hat", "haben", "wird", "werden", "\xc3\xbc" "ber", "unter", "durch", "zum",
	"zur", "vom", "bis", "ich", "man", "kein", "keine", "dieser", "diese", "dieses",
};

/* ---- a small hash table of byte strings ---- */

typedef struct entry {
	char    *key;        /* NULL: free slot */
	size_t   len;
	int      owned;      /* key was copied and is freed with the table */
	int      stop;       /* a stopword */
	size_t   df;         /* source records containing the word */
	size_t   last_rec;   /* 1 + the record that last counted it */
	size_t   last_sent;  /* 1 + the sentence that last counted it */
} entry;

typedef struct table {
	entry  *slots;
	size_t  cap;         /* a power of two */
	size_t  used;
} table;

static void table_free(table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].owned)
			free(t->slots[i].key);
	free(t->slots);
	memset(t, 0, sizeof *t);
}

/* The slot for key in slots (its own or the free one it would take). */
static entry *probe(entry *slots, size_t cap, const char *key, size_t len)
{
	size_t i = (size_t)a2m_hash_bytes(key, len) & (cap - 1);
	while (slots[i].key && !(slots[i].len == len && memcmp(slots[i].key, key, len) == 0))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static int table_grow(table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	entry *slots = calloc(cap, sizeof *slots);
	if (!slots)
		return -1;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].key)
			*probe(slots, cap, t->slots[i].key, t->slots[i].len) = t->slots[i];
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

/*
** The entry for key, inserted zeroed when new (a copy of key when copy is
** set, else key is borrowed and must outlive the table). NULL when memory
** runs out.
*/
static entry *table_get(table *t, const char *key, size_t len, int copy)
{
	if ((t->used + 1) * 2 > t->cap && table_grow(t) != 0)
		return NULL;
	entry *e = probe(t->slots, t->cap, key, len);
	if (e->key)
		return e;
	if (copy) {
		char *k = malloc(len + 1);
		if (!k)
			return NULL;
		memcpy(k, key, len);
		k[len] = '\0';
		e->key = k;
		e->owned = 1;
	} else {
		/* A borrowed key may be empty; the slot still needs a non-NULL mark. */
		e->key = (char *)key;
	}
	e->len = len;
	t->used++;
	return e;
}

/* ---- words and sentences ---- */

/*
** Bytes of the separator at p (< end), or 0 when p starts or continues a
** word. Beyond ASCII, the punctuation blocks that commonly sit between words
** separate too: Latin-1 punctuation (no-break space, ¡ ¿ « »), General
** Punctuation (dashes, curly quotes, …), CJK punctuation and the fullwidth
** forms of ASCII punctuation.
*/
static size_t sep_len(const unsigned char *p, const unsigned char *end)
{
	size_t left = (size_t)(end - p);
	if (p[0] < 0x80)
		return (p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z') ||
		       (p[0] >= '0' && p[0] <= '9') ? 0 : 1;
	if (p[0] == 0xC2 && left >= 2 && p[1] >= 0xA0 && p[1] <= 0xBF)
		return 2;
	if (left < 3)
		return 0;
	if (p[0] == 0xE2 && (p[1] == 0x80 || p[1] == 0x81))
		return 3;
	if (p[0] == 0xE3 && p[1] == 0x80)
		return 3;
	if (p[0] == 0xEF && p[1] == 0xBC &&
	    ((p[2] >= 0x81 && p[2] <= 0x8F) || (p[2] >= 0x9A && p[2] <= 0xA0)))
		return 3;
	return 0;
}

/*
** Finds the next word in [*p, end), lowercases it into out (room for
** end - *p bytes) and advances *p past it. Returns its length, 0 at the end.
*/
static size_t next_word(const unsigned char **p, const unsigned char *end, char *out)
{
	const unsigned char *s = *p;
	size_t k;
	while (s < end && (k = sep_len(s, end)) > 0)
		s += k;
	size_t n = 0;
	while (s < end && sep_len(s, end) == 0) {
		unsigned char c = *s++;
		out[n++] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
	}
	*p = s;
	return n;
}

/* The content word entry for a word, or NULL when it does not count. */
static entry *content_word(table *words, const char *w, size_t n, int *oom)
{
	if (n < MIN_WORD_BYTES)
		return NULL;
	entry *e = table_get(words, w, n, 1);
	if (!e) {
		*oom = 1;
		return NULL;
	}
	return e->stop ? NULL : e;
}

typedef struct sentence {
	const char *text;
	size_t      len;
	size_t      pos;      /* order in the sources */
	double      score;    /* < 0: no content word */
	size_t      chars;    /* code points */
} sentence;

typedef struct sentences {
	sentence *v;
	size_t    n, cap;
} sentences;

/* Adds [s, s+len) trimmed of whitespace; returns -1 when memory runs out. */
static int add_sentence(sentences *ss, const char *s, size_t len)
{
	while (len && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\v' || *s == '\f')) {
		s++;
		len--;
	}
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r' ||
		       s[len - 1] == '\v' || s[len - 1] == '\f'))
		len--;
	if (!len)
		return 0;
	if (a2m_grow((void **)&ss->v, &ss->cap, ss->n + 1, sizeof *ss->v))
		return -1;
	ss->v[ss->n] = (sentence){.text = s, .len = len, .pos = ss->n, .score = -1};
	ss->n++;
	return 0;
}

/* Bytes of the sentence terminator at p, or 0: . ! ? and their CJK forms. */
static size_t terminator_len(const char *p, const char *end)
{
	if (*p == '.' || *p == '!' || *p == '?')
		return 1;
	if (end - p >= 3 && memcmp(p, "\xe3\x80\x82", 3) == 0)  /* 。 */
		return 3;
	if (end - p >= 3 && (memcmp(p, "\xef\xbc\x81", 3) == 0 ||   /* ！ */
			     memcmp(p, "\xef\xbc\x9f", 3) == 0))    /* ？ */
		return 3;
	return 0;
}

/*
** Cuts text into sentences, each keeping its terminator. A newline ends a
** sentence too (and is dropped). An ASCII terminator ends one only before
** whitespace or the end, so "3.14" and "a2m.c" stay whole; the CJK forms
** need no space after them.
*/
static int split_sentences(sentences *ss, const char *text)
{
	const char *end = text + strlen(text), *start = text, *p = text;
	while (p < end) {
		if (*p == '\n') {
			if (add_sentence(ss, start, (size_t)(p - start)) != 0)
				return -1;
			start = ++p;
			continue;
		}
		size_t t = terminator_len(p, end);
		if (!t) {
			p++;
			continue;
		}
		int cjk = t > 1;
		p += t;
		while (p < end && (t = terminator_len(p, end)) > 0) {  /* "?!", "..." */
			cjk = t > 1;
			p += t;
		}
		while (p < end && (*p == ')' || *p == ']' || *p == '"' || *p == '\''))
			p++;
		if (!cjk && p < end && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			continue;
		if (add_sentence(ss, start, (size_t)(p - start)) != 0)
			return -1;
		start = p;
	}
	return add_sentence(ss, start, (size_t)(end - start));
}

/* Highest score first; the earlier sentence wins a tie, so output is stable. */
static int by_score(const void *a, const void *b)
{
	const sentence *x = *(const sentence *const *)a, *y = *(const sentence *const *)b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Source order. */
static int by_pos(const void *a, const void *b)
{
	const sentence *x = *(const sentence *const *)a, *y = *(const sentence *const *)b;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

char *a2m_summarize_extract(const a2m_record *const *recs, size_t n, size_t max_sentences,
			    size_t max_chars)
{
	table words = {0}, seen = {0};
	sentences ss = {0};
	sentence **rank = NULL;
	char *scratch = NULL, *out = NULL;
	size_t longest = 0;
	int oom = 0;

	for (size_t r = 0; r < n; r++)
		if (recs[r]->content && strlen(recs[r]->content) > longest)
			longest = strlen(recs[r]->content);
	if (!(scratch = malloc(longest + 1)))
		goto fail_oom;
	for (size_t i = 0; i < sizeof stopwords / sizeof *stopwords; i++) {
		entry *e = table_get(&words, stopwords[i], strlen(stopwords[i]), 0);
		if (!e)
			goto fail_oom;
		e->stop = 1;
	}

	/* Document frequency: in how many sources each word occurs. */
	for (size_t r = 0; r < n; r++) {
		const char *c = recs[r]->content ? recs[r]->content : "";
		const unsigned char *p = (const unsigned char *)c, *end = p + strlen(c);
		size_t len;
		while ((len = next_word(&p, end, scratch)) > 0) {
			entry *e = content_word(&words, scratch, len, &oom);
			if (oom)
				goto fail_oom;
			if (e && e->last_rec != r + 1) {
				e->last_rec = r + 1;
				e->df++;
			}
		}
		if (split_sentences(&ss, c) != 0)
			goto fail_oom;
	}

	/* Score each sentence once; a repeat of an earlier one is not a candidate. */
	if (!(rank = calloc(ss.n + 1, sizeof *rank)))
		goto fail_oom;
	size_t candidates = 0;
	for (size_t i = 0; i < ss.n; i++) {
		sentence *s = &ss.v[i];
		entry *dup = table_get(&seen, s->text, s->len, 0);
		if (!dup)
			goto fail_oom;
		if (dup->last_sent)
			continue;
		dup->last_sent = 1;
		const unsigned char *p = (const unsigned char *)s->text, *end = p + s->len;
		size_t len, distinct = 0;
		double sum = 0;
		while ((len = next_word(&p, end, scratch)) > 0) {
			entry *e = content_word(&words, scratch, len, &oom);
			if (oom)
				goto fail_oom;
			if (e && e->last_sent != i + 1) {
				e->last_sent = i + 1;
				sum += (double)e->df;
				distinct++;
			}
		}
		if (!distinct)
			continue;
		s->score = sum / sqrt((double)distinct);
		s->chars = a2m_utf8_length(s->text, s->len);
		rank[candidates++] = s;
	}
	qsort(rank, candidates, sizeof *rank, by_score);

	/* The best that fit, joined by one space each. */
	size_t chosen = 0, total = 0, bytes = 0;
	for (size_t i = 0; i < candidates && chosen < max_sentences; i++) {
		size_t cost = rank[i]->chars + (chosen ? 1 : 0);
		if (max_chars && total + cost > max_chars)
			continue;
		total += cost;
		bytes += rank[i]->len + 1;
		rank[chosen++] = rank[i];
	}
	if (!chosen)
		goto fail_empty;
	qsort(rank, chosen, sizeof *rank, by_pos);
	if (!(out = malloc(bytes + 1)))
		goto fail_oom;
	size_t at = 0;
	for (size_t i = 0; i < chosen; i++) {
		if (i)
			out[at++] = ' ';
		memcpy(out + at, rank[i]->text, rank[i]->len);
		at += rank[i]->len;
	}
	out[at] = '\0';
	free(rank);
	free(ss.v);
	free(scratch);
	table_free(&words);
	table_free(&seen);
	return out;

fail_empty:
	free(rank);
	free(ss.v);
	free(scratch);
	table_free(&words);
	table_free(&seen);
	errno = 0;
	return NULL;
fail_oom:
	free(rank);
	free(ss.v);
	free(scratch);
	table_free(&words);
	table_free(&seen);
	errno = ENOMEM;
	return NULL;
}
