/*
** accumulator.h — the per-record sums of one BM25 query, seq → score
** (bm25.c), in an open-addressing table the scorer keeps between queries.
**
** The sums live in the slots themselves. A slot belongs to the current
** query only when it carries the query's stamp, so nothing is cleared
** between queries and, once the table has grown to the store's usual
** queries, scoring allocates nothing. The lookups are inline: they run once
** per posting read.
*/
#ifndef A2M_ACCUMULATOR_H
#define A2M_ACCUMULATOR_H

#include <stddef.h>
#include <stdint.h>

/* One record's sums. */
typedef struct a2m_acc_entry {
	int64_t  seq;
	double   total;      /* the sum over the words done so far */
	double   word_best;  /* the best key of the current word */
	uint32_t word;       /* which word word_best belongs to, + 1 */
	uint32_t stamp;      /* the query the slot belongs to */
} a2m_acc_entry;

/* The table: the scorer's, reused by every query. */
typedef struct a2m_acc {
	a2m_acc_entry *slots;
	size_t         alloc;   /* slots allocated */
	size_t         nslots;  /* in use by this query: a power of two, at least
	                           twice n; sized to it, so a small query stays in cache */
	uint32_t      *used;    /* the slots in use, in order of first use */
	size_t         n;
	uint32_t       stamp;
} a2m_acc;

/* A table bigger than this (entries) is freed after the query that needed
** it rather than kept: a huge store's rare query must not pin its memory. */
#define A2M_ACC_KEEP ((size_t)1 << 18)

/*
** Starts a query that will see at most expected records: every slot of the
** last one becomes free at once (stamps), and the table in use is made just
** big enough. Returns 0, or -1 when memory runs out.
*/
int a2m_acc_begin(a2m_acc *a, size_t expected);

/* Doubles the table in use, keeping the current query's sums. Returns 0 or -1. */
int a2m_acc_grow(a2m_acc *a);

/* Frees the table. */
void a2m_acc_free(a2m_acc *a);

/* After a query: keeps the table for the next one unless it grew huge. */
void a2m_acc_end(a2m_acc *a);

/* The slot where seq's probe starts. */
static inline size_t a2m_acc_slot(int64_t seq, size_t nslots)
{
	return (size_t)(((uint64_t)seq * 0x9E3779B97F4A7C15ULL) >> 17) & (nslots - 1);
}

/* seq's entry in the current query, made (zeroed) if new; NULL when memory
** runs out. */
static inline a2m_acc_entry *a2m_acc_get(a2m_acc *a, int64_t seq)
{
	if ((a->n + 1) * 2 > a->nslots && a2m_acc_grow(a) != 0)
		return NULL;
	size_t mask = a->nslots - 1, j = a2m_acc_slot(seq, a->nslots);
	a2m_acc_entry *e;
	while ((e = &a->slots[j])->stamp == a->stamp) {
		if (e->seq == seq)
			return e;
		j = (j + 1) & mask;
	}
	*e = (a2m_acc_entry){.seq = seq, .stamp = a->stamp};
	a->used[a->n++] = (uint32_t)j;
	return e;
}

/* seq's entry in the current query, or NULL. */
static inline a2m_acc_entry *a2m_acc_find(const a2m_acc *a, int64_t seq)
{
	if (!a->nslots)
		return NULL;
	size_t j = a2m_acc_slot(seq, a->nslots);
	a2m_acc_entry *e;
	while ((e = &a->slots[j])->stamp == a->stamp) {
		if (e->seq == seq)
			return e;
		j = (j + 1) & (a->nslots - 1);
	}
	return NULL;
}

/*
** Adds c, what one key of word `word` (1-based) gives e's record, to its
** sum: a word counts with its best key only. The sum's rounding depends on
** the order its keys come in: every path feeds a record its words in the
** query's order and each word's keys in order, so they all give the same
** sums to the last bit.
*/
static inline void a2m_acc_add(a2m_acc_entry *e, uint32_t word, double c)
{
	if (e->word != word) {
		e->word = word;
		e->word_best = 0;
	}
	if (c > e->word_best) {
		e->total += c - e->word_best;
		e->word_best = c;
	}
}

#endif
