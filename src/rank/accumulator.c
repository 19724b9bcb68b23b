/*
** accumulator.c — the table of BM25's per-record sums (see accumulator.h):
** making, growing and freeing it.
*/
#include <stdlib.h>
#include <string.h>

#include "rank/accumulator.h"

/* Puts a slot of the current query at its place in slots (a fresh table). */
static void acc_place(a2m_acc_entry *slots, size_t ns, uint32_t *used, size_t i,
		      const a2m_acc_entry *e)
{
	size_t j = a2m_acc_slot(e->seq, ns);
	while (slots[j].stamp == e->stamp)
		j = (j + 1) & (ns - 1);
	slots[j] = *e;
	used[i] = (uint32_t)j;
}

/* Doubles the table (or makes the first), keeping the current query's sums. */
int a2m_acc_grow(a2m_acc *a)
{
	size_t ns = a->nslots ? a->nslots * 2 : 4096;
	if (ns <= a->alloc) {
		/* The allocation is big enough (an earlier query grew it): rehash
		** in place, the current query's slots set aside first. */
		a2m_acc_entry *keep = malloc((a->n ? a->n : 1) * sizeof *keep);
		if (!keep)
			return -1;
		for (size_t i = 0; i < a->n; i++)
			keep[i] = a->slots[a->used[i]];
		for (size_t i = 0; i < ns; i++)
			a->slots[i].stamp = 0;
		for (size_t i = 0; i < a->n; i++)
			acc_place(a->slots, ns, a->used, i, &keep[i]);
		free(keep);
		a->nslots = ns;
		return 0;
	}
	a2m_acc_entry *slots = calloc(ns, sizeof *slots);
	uint32_t *used = malloc(ns / 2 * sizeof *used);
	if (!slots || !used || ns > UINT32_MAX) {
		free(slots);
		free(used);
		return -1;
	}
	for (size_t i = 0; i < a->n; i++)
		acc_place(slots, ns, used, i, &a->slots[a->used[i]]);
	free(a->slots);
	free(a->used);
	a->slots = slots;
	a->used = used;
	a->nslots = a->alloc = ns;
	return 0;
}

/*
** Starts a query that will see at most expected records: every slot of the
** last one becomes free at once (stamps), and the table in use is made just
** big enough. Returns 0, or -1 when memory runs out.
*/
int a2m_acc_begin(a2m_acc *a, size_t expected)
{
	size_t want = 1024;
	while (want < 2 * expected && want < ((size_t)1 << 31))
		want *= 2;
	a->n = 0;
	if (want > a->alloc) {
		a2m_acc_entry *slots = calloc(want, sizeof *slots);
		uint32_t *used = malloc(want / 2 * sizeof *used);
		if (!slots || !used) {
			free(slots);
			free(used);
			return -1;
		}
		free(a->slots);
		free(a->used);
		a->slots = slots;
		a->used = used;
		a->alloc = want;
	}
	a->nslots = want;
	if (++a->stamp == 0) {
		/* After 2^32 queries the stamps come round: clear them once. */
		for (size_t i = 0; i < a->alloc; i++)
			a->slots[i].stamp = 0;
		a->stamp = 1;
	}
	return 0;
}

void a2m_acc_free(a2m_acc *a)
{
	free(a->slots);
	free(a->used);
	memset(a, 0, sizeof *a);
}

/* After a query: keeps the table for the next one unless it grew huge. */
void a2m_acc_end(a2m_acc *a)
{
	if (a->alloc > 2 * A2M_ACC_KEEP)
		a2m_acc_free(a);
}

