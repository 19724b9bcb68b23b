/*
** unembedded.c — records without any vector, per tier, as bitmaps by seq
** (see unembedded.h).
**
** Why bitmaps: the memory engine's seqs are dense (one per insert), so a
** bit per seq is a few kilobytes at 100 000 records, membership changes in
** O(1), and the next members in seq order — oldest first, as the stack
** embeds them — come from skipping zero words. A tier's count lets a tier
** with none be answered without reading its words.
*/
#include <stdlib.h>
#include <string.h>

#include "store/unembedded.h"
#include "util/grow.h"

typedef struct bare_tier {
	char     *name;    /* NULL: records without a tier */
	uint64_t *bits;    /* bit seq % 64 of word seq / 64 */
	size_t    nwords;
	size_t    count;   /* bits set */
} bare_tier;

struct a2m_unembedded {
	bare_tier *t;
	size_t     n, cap;
};

a2m_unembedded *a2m_unembedded_new(void)
{
	return calloc(1, sizeof(a2m_unembedded));
}

void a2m_unembedded_clear(a2m_unembedded *u)
{
	for (size_t i = 0; u && i < u->n; i++) {
		free(u->t[i].bits);
		u->t[i].bits = NULL;
		u->t[i].nwords = 0;
		u->t[i].count = 0;
	}
}

void a2m_unembedded_free(a2m_unembedded *u)
{
	if (!u)
		return;
	a2m_unembedded_clear(u);
	for (size_t i = 0; i < u->n; i++)
		free(u->t[i].name);
	free(u->t);
	free(u);
}

int a2m_has_text(const char *text)
{
	for (const char *p = text; p && *p; p++)
		if (!strchr(" \t\n\r\f\v", *p))
			return 1;
	return 0;
}

static int same_name(const char *a, const char *b)
{
	return (!a || !b) ? a == b : strcmp(a, b) == 0;
}

static bare_tier *find(const a2m_unembedded *u, const char *name)
{
	for (size_t i = 0; i < u->n; i++)
		if (same_name(u->t[i].name, name))
			return &u->t[i];
	return NULL;
}

/* The tier name, added when missing. NULL when memory runs out. */
static bare_tier *find_add(a2m_unembedded *u, const char *name)
{
	bare_tier *t = find(u, name);
	if (t)
		return t;
	if (a2m_grow((void **)&u->t, &u->cap, u->n + 1, sizeof *u->t))
		return NULL;
	t = &u->t[u->n];
	memset(t, 0, sizeof *t);
	if (name && !(t->name = strdup(name)))
		return NULL;
	u->n++;
	return t;
}

int a2m_unembedded_put(a2m_unembedded *u, int64_t seq, const char *tier, int in)
{
	if (seq <= 0)
		return 0;
	size_t w = (size_t)seq / 64;
	uint64_t bit = (uint64_t)1 << ((uint64_t)seq % 64);
	for (size_t i = 0; i < u->n; i++) {
		bare_tier *t = &u->t[i];
		if (w < t->nwords && (t->bits[w] & bit)) {
			t->bits[w] &= ~bit;
			t->count--;
		}
	}
	if (!in)
		return 0;
	bare_tier *t = find_add(u, tier);
	if (!t)
		return -1;
	if (w >= t->nwords) {
		size_t n = t->nwords ? t->nwords * 2 : 64;
		while (n <= w)
			n *= 2;
		uint64_t *b = realloc(t->bits, n * sizeof *b);
		if (!b)
			return -1;
		memset(b + t->nwords, 0, (n - t->nwords) * sizeof *b);
		t->bits = b;
		t->nwords = n;
	}
	t->bits[w] |= bit;
	t->count++;
	return 0;
}

size_t a2m_unembedded_next(const a2m_unembedded *u, const char *tier, int64_t after,
			   int64_t *out, size_t max)
{
	const bare_tier *t = find(u, tier);
	size_t k = 0;
	if (!t || !t->count || !max)
		return 0;
	int64_t from = after < 0 ? 0 : after + 1;
	for (size_t w = (size_t)from / 64; w < t->nwords && k < max; w++) {
		uint64_t word = t->bits[w];
		if (w == (size_t)from / 64)
			word &= ~(uint64_t)0 << ((uint64_t)from % 64);
		while (word && k < max) {
			int b = __builtin_ctzll(word);
			out[k++] = (int64_t)(w * 64 + (size_t)b);
			word &= word - 1;
		}
	}
	return k;
}
