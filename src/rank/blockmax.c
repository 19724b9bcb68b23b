/*
** blockmax.c — BM25's top-k over long postings lists with block-max
** bounds, document at a time (see blockmax.h).
**
** Why: bm25_prune.c's term-at-a-time pruning (MaxScore over keys) leaves nothing
** out when every word of a query is common — each key is needed — and
** then computes a contribution and a hash-table update for every posting:
** a three-word query of frequent words on a Zipf corpus of 1M records
** touched over a million accumulator slots. Here the lists are walked in
** seq order together (WAND: a2m_bmw_run below), and a record is scored only
** when the lists' reaches and then the bounds of the blocks under it can
** beat the threshold; whole runs of records are stepped over unread.
**
** Why lists and not words: a word's keys are its surface form and its
** stems, and on that corpus a word's rare stem (a few hundred postings at a
** high idf) reached three times what its common surface form can, so a
** reach per word let every record through. Each distinct list has its own
** reach; sums count a word once, with its largest (sum_add).
**
** Exactness: a record left out has a sum at most the reaches' or the
** bounds' sum over the lists holding it (each widened by BOUND_REL, so
** rounding cannot put a contribution above its bound), which was at most
** the threshold then, and the threshold only rises: *rest, the final
** threshold, bounds every record left out. A record scored gets the sum
** bm25.c's complete path gives it.
*/
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "rank/blockmax_internal.h"

#define BOUND_REL BMW_BOUND_REL

void a2m_bmw_free(a2m_bmw *w)
{
	free(w->cur);
	free(w->ls);
	free(w->heap);
	free(w->win);
	free(w->winbits);
	free(w->tabs);
	memset(w, 0, sizeof *w);
}

/* Makes *p (of *cap items of size bytes) hold n. Returns 0 or -1. */
static int room(void *p, size_t *cap, size_t n, size_t size)
{
	void *old, *q;
	if (n <= *cap)
		return 0;
	memcpy(&old, p, sizeof old);
	if (!(q = realloc(old, n * size)))
		return -1;
	memcpy(p, &q, sizeof q);
	*cap = n;
	return 0;
}

/* ---- the threshold: the admit best scores, a min-heap ---- */

static void heap_push(double *h, size_t *n, size_t admit, double v)
{
	if (*n < admit) {
		size_t i = (*n)++;
		while (i && h[(i - 1) / 2] > v) {
			h[i] = h[(i - 1) / 2];
			i = (i - 1) / 2;
		}
		h[i] = v;
		return;
	}
	if (v <= h[0])
		return;
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = v;
}

/* blockmax_internal.h */
int a2m_bmw_score(a2m_bmw *w, const a2m_bmw_key *keys, size_t nkeys, const a2m_bmw_cursor *cur,
		  const a2m_posting *const *post, int64_t seq, double k0, double k1,
		  a2m_bmw_top *top)
{
	a2m_acc_entry e = {.seq = seq};
	for (size_t k = 0; k < nkeys; k++) {
		if (!keys[k].n)
			continue;
		/* A key sharing its lead's list has the same postings (lists_make). */
		const a2m_posting *p = post[cur[k].list];
		if (p) {
			w->scored++;
			a2m_acc_add(&e, keys[k].word,
				    a2m_bm25_contrib(keys[k].scale, p->tf, p->dl, k0, k1));
		}
	}
	if (!(e.total > top->tau))
		return 0;
	a2m_acc_entry *slot = a2m_acc_get(top->acc, seq);
	if (!slot)
		return -1;
	slot->total = e.total;
	slot->word_best = e.word_best;
	slot->word = e.word;
	heap_push(w->heap, &top->nheap, top->admit, e.total);
	if (top->nheap == top->admit && w->heap[0] * top->floor > top->tau)
		top->tau = w->heap[0] * top->floor;
	return 1;
}

/* ---- the lists ---- */

/* blockmax_internal.h */
size_t a2m_bmw_seek_in(const a2m_bmw_key *k, size_t from, size_t end, int64_t seq)
{
	size_t lo = from, hi = end;
	if (lo >= hi || k->v[lo].seq >= seq)
		return lo;
	/* k->v[lo].seq < seq: gallop, then halve. Most seeks land near. */
	size_t step = 1;
	while (lo + step < hi && k->v[lo + step].seq < seq) {
		lo += step;
		step *= 2;
	}
	if (lo + step < hi)
		hi = lo + step;
	while (lo + 1 < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (k->v[mid].seq < seq)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/* The first posting of k at or after from whose seq is at least seq. */
static size_t seek(const a2m_bmw_key *k, size_t from, int64_t seq)
{
	return a2m_bmw_seek_in(k, from, k->n, seq);
}

/* blockmax_internal.h */
size_t a2m_bmw_block_at(const a2m_bmw_key *k, size_t b, int64_t seq)
{
	if (k->last[b] >= seq)
		return b;
	/* Gallop from b, then halve: most seeks land near. */
	size_t lo = b, step = 1, hi;
	while (lo + step < k->nblocks && k->last[lo + step] < seq) {
		lo += step;
		step *= 2;
	}
	hi = lo + step < k->nblocks ? lo + step : k->nblocks;
	while (lo + 1 < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (k->last[mid] < seq)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/*
** seek for a list read a block at a time: the block of the answer found
** by the blocks' last seqs (galloping from the cursor's, c->cb), filled,
** then searched. *err set when a block cannot be filled.
*/
static size_t seek_lazy(const a2m_bmw_key *k, a2m_bmw_cursor *c, size_t from, int64_t seq,
			int *err, size_t *filled)
{
	size_t b = c->cb;
	if (from >= k->n)
		return from;
	if (k->last[b] < seq) {
		if ((b = a2m_bmw_block_at(k, b, seq)) == k->nblocks)
			return k->n;
		from = k->start[b];
	}
	/* The cursor's block is filled already; another is new to the walk (cursors only go on). */
	if (b != c->cb) {
		c->cb = b;
		(*filled)++;
		if (k->fill(k->ctx, b) != 0) {
			*err = 1;
			return k->n;
		}
	}
	/* last[b] >= seq: the answer is in v[from .. start[b + 1]). */
	return a2m_bmw_seek_in(k, from, k->start[b + 1], seq);
}

/* The block of k at posting at (c: its cursor, or its list's lead's). */
static inline size_t block_of(const a2m_bmw_key *k, const a2m_bmw_cursor *c, size_t at)
{
	return k->fill ? c->cb : at / A2M_BMW_BLOCK;
}

/* The seq of the last posting of block b of k. */
static inline int64_t block_last(const a2m_bmw_key *k, size_t b)
{
	if (k->last)
		return k->last[b];
	size_t end = (b + 1) * A2M_BMW_BLOCK;
	return k->v[(end < k->n ? end : k->n) - 1].seq;
}

/* blockmax_internal.h */
double a2m_bmw_block_bound(const a2m_bmw_key *k, a2m_bmw_cursor *c, size_t b, double k0,
			   double k1)
{
	if (c->block == b)
		return c->bound;
	a2m_tf_bound tb;
	if (k->blocks) {
		tb = k->blocks[b];
	} else {
		size_t end = (b + 1) * A2M_BMW_BLOCK < k->n ? (b + 1) * A2M_BMW_BLOCK : k->n;
		a2m_tf_bound_empty(&tb);
		for (size_t i = b * A2M_BMW_BLOCK; i < end; i++)
			a2m_tf_bound_add(&tb, k->v[i].tf, k->v[i].dl);
	}
	c->block = b;
	c->bound = a2m_bm25_bound(k->scale, &tb, k0, k1) * (1.0 + BOUND_REL);
	return c->bound;
}

/*
** The whole list's bound of key k, widened, from the index's, else from a
** pass over the list, which also checks its order. Returns 0, or 1 when
** the list is not in ascending seq.
*/
static int list_reach(const a2m_bmw_key *k, double k0, double k1, double *reach)
{
	a2m_tf_bound tb;
	if (k->all) {
		tb = *k->all;
	} else {
		a2m_tf_bound_empty(&tb);
		for (size_t i = 0; i < k->n; i++) {
			if (i && k->v[i].seq <= k->v[i - 1].seq)
				return 1;
			a2m_tf_bound_add(&tb, k->v[i].tf, k->v[i].dl);
		}
	}
	*reach = a2m_bm25_bound(k->scale, &tb, k0, k1) * (1.0 + BOUND_REL);
	return 0;
}

/* ---- the walk ---- */

typedef struct lists lists;

/* blockmax_internal.h */
void a2m_bmw_list_seek(a2m_bmw_cursor *cur, const a2m_bmw_key *keys, lists *ls, uint32_t l,
		       int64_t seq)
{
	size_t k = ls->key[l];
	cur[k].at = keys[k].fill ? seek_lazy(&keys[k], &cur[k], cur[k].at, seq, &ls->err, &ls->filled)
				 : seek(&keys[k], cur[k].at, seq);
	ls->at[l] = cur[k].at < keys[k].n ? keys[k].v[cur[k].at].seq : INT64_MAX;
}

/*
** The bound of list l's block under its cursor (its keys' largest), and
** *last lowered to that block's last seq.
*/
static double list_block(a2m_bmw_cursor *cur, const a2m_bmw_key *keys, const lists *ls,
			 uint32_t l, double k0, double k1, int64_t *last)
{
	size_t lead = ls->key[l], b = block_of(&keys[lead], &cur[lead], cur[lead].at);
	double best = 0;
	for (size_t k = lead; k < ls->nkeys && keys[k].word == ls->word[l]; k++)
		if (cur[k].lead == lead) {
			double bound = a2m_bmw_block_bound(&keys[k], &cur[k], b, k0, k1);
			best = bound > best ? bound : best;
		}
	int64_t end = block_last(&keys[lead], b);
	*last = end < *last ? end : *last;
	return best;
}

/*
** Sorts ls->ord by ls->at again after the lists ord[0..moved) moved on
** (only ever forward): the others are still in order, so each moved one is
** put back in from the right.
*/
static void lists_resort(lists *ls, uint32_t moved)
{
	for (uint32_t i = moved; i-- > 0;) {
		uint32_t l = ls->ord[i], j = i;
		while (j + 1 < ls->n && ls->at[ls->ord[j + 1]] < ls->at[l]) {
			ls->ord[j] = ls->ord[j + 1];
			j++;
		}
		ls->ord[j] = l;
	}
}

/*
** WAND with block-max bounds, over lists: the lists taken by their
** cursors' seq, the pivot is the first at which their reaches (a word
** counting its largest) sum above the threshold. A record before the
** pivot's seq is held only by lists before it, whose reaches cannot beat
** the threshold: those lists are moved to the pivot's seq unread. At the
** pivot's seq, held by every list before it and any after it there too,
** the bounds of the blocks under their cursors are summed: when they cannot
** beat the threshold, neither can any record up to the first of those
** blocks' end (nor the next list's seq), and the lists are moved past it;
** else the record is scored exactly. Returns 0, or -1 when memory runs out
** or a block cannot be filled; *rest as a2m_bmw_run's.
*/
static int walk_wand(a2m_bmw *w, const a2m_bmw_key *keys, size_t nkeys, double k0, double k1,
		     a2m_bmw_top *top, double *rest, a2m_bmw_cursor *cur, lists *ls)
{
	const a2m_posting *post[A2M_BMW_MAX_KEYS];
	int left_out = 0;
	uint32_t n = ls->n, moved = n;
	for (;;) {
		if (ls->err)
			return -1;
		lists_resort(ls, moved);
		ls->steps++;
		/* The pivot: the first list where the reaches so far beat the threshold. */
		double ub = 0;
		uint32_t p = n;
		a2m_bmw_sum_start(ls);
		for (uint32_t j = 0; j < n && ls->at[ls->ord[j]] != INT64_MAX; j++)
			if ((ub = a2m_bmw_sum_add(ls, ub, ls->ord[j], ls->reach[ls->ord[j]])) > top->tau) {
				p = j;
				break;
			}
		if (p == n) {
			/* No record left can beat the threshold. */
			left_out |= n && ls->at[ls->ord[0]] != INT64_MAX;
			break;
		}
		int64_t pd = ls->at[ls->ord[p]];
		if (ls->at[ls->ord[0]] < pd) {
			for (uint32_t j = 0; j < p; j++)
				if (ls->at[ls->ord[j]] < pd)
					a2m_bmw_list_seek(cur, keys, ls, ls->ord[j], pd);
			moved = p;
			left_out = 1;
			continue;
		}
		/* Every list before the pivot is at pd, and those after it up to q. */
		uint32_t q = p + 1;
		while (q < n && ls->at[ls->ord[q]] == pd)
			q++;
		int64_t last = INT64_MAX;
		double bsum = 0;
		a2m_bmw_sum_start(ls);
		for (uint32_t j = 0; j < q; j++)
			bsum = a2m_bmw_sum_add(ls, bsum, ls->ord[j],
					       list_block(cur, keys, ls, ls->ord[j], k0, k1, &last));
		if (bsum <= top->tau) {
			int64_t next = q < n && ls->at[ls->ord[q]] <= last ? ls->at[ls->ord[q]] : last + 1;
			for (uint32_t j = 0; j < q; j++)
				a2m_bmw_list_seek(cur, keys, ls, ls->ord[j], next);
			moved = q;
			left_out = 1;
			continue;
		}
		/* Scored as the complete path sums it: keys in the query's order. */
		for (uint32_t l = 0; l < n; l++)
			post[l] = ls->at[l] == pd ? &keys[ls->key[l]].v[cur[ls->key[l]].at] : NULL;
		int kept = a2m_bmw_score(w, keys, nkeys, cur, post, pd, k0, k1, top);
		if (kept < 0)
			return -1;
		left_out |= !kept;
		for (uint32_t j = 0; j < q; j++)
			a2m_bmw_list_seek(cur, keys, ls, ls->ord[j], pd + 1);
		moved = q;
	}
	*rest = left_out ? top->tau : 0;
	return 0;
}

#ifdef A2M_TEST_HOOKS
static double reach_share_for_tests = 1.0;

void a2m_bmw_reach_for_tests(double share)
{
	reach_share_for_tests = share;
}
#else
#define reach_share_for_tests 1.0
#endif

/*
** Makes the walk's lists from the keys (blockmax_internal.h): a word's
** keys with the same postings share one, each key's reach, each list's
** largest. Returns 0, 1 when a list without bounds is out of order, -1
** when a block cannot be filled.
*/
static int lists_make(const a2m_bmw_key *keys, size_t nkeys, double k0, double k1,
		      a2m_bmw_cursor *cur, lists *ls)
{
	ls->n = 0;
	ls->nkeys = nkeys;
	ls->err = 0;
	ls->filled = 0;
	ls->steps = 0;
	for (size_t k = 0; k < nkeys; k++) {
		cur[k] = (a2m_bmw_cursor){.block = SIZE_MAX, .lead = (uint16_t)k};
		if (!keys[k].n)
			continue;  /* no list: never at any record */
		if (list_reach(&keys[k], k0, k1, &cur[k].reach) != 0)
			return 1;
		cur[k].reach *= reach_share_for_tests;
		if (keys[k].fill) {
			ls->filled++;
			if (keys[k].fill(keys[k].ctx, 0) != 0)
				return -1;
		}
		/*
		** A word's surface form and its stems often hold the same
		** records: those keys share the first one's list and cursor, so
		** a record costs a pass per list, not per key.
		*/
		for (size_t j = k; j-- > 0 && keys[j].word == keys[k].word;)
			if (cur[j].lead == j && keys[j].n == keys[k].n &&
			    (keys[j].v == keys[k].v ||
			     (!keys[j].fill && !keys[k].fill &&
			      !memcmp(keys[j].v, keys[k].v, keys[k].n * sizeof *keys[k].v)))) {
				cur[k].lead = (uint16_t)j;
				break;
			}
		if (cur[k].lead == k) {
			cur[k].list = ls->n;
			ls->key[ls->n] = (uint16_t)k;
			ls->word[ls->n] = keys[k].word;
			ls->reach[ls->n] = cur[k].reach;
			ls->scale[ls->n] = keys[k].scale;
			ls->at[ls->n] = keys[k].v[0].seq;
			ls->ord[ls->n] = ls->n;
			ls->n++;
		} else {
			uint32_t l = cur[cur[k].lead].list;
			cur[k].list = l;
			ls->reach[l] = cur[k].reach > ls->reach[l] ? cur[k].reach : ls->reach[l];
			ls->scale[l] = keys[k].scale > ls->scale[l] ? keys[k].scale : ls->scale[l];
		}
	}
	return 0;
}

int a2m_bmw_run(a2m_bmw *w, const a2m_bmw_key *keys, size_t nkeys, double k0, double k1,
		size_t admit, double floor, a2m_acc *acc, double *rest)
{
	*rest = 0;
	w->skipped = w->scored = w->filled = w->steps = 0;
	if (!admit)
		admit = 1;
	if (!nkeys)
		return 0;
	if (nkeys > A2M_BMW_MAX_KEYS || keys[nkeys - 1].word > nkeys || !keys[0].word)
		return -1;
	if (room(&w->cur, &w->ncur, nkeys, sizeof *w->cur) != 0 ||
	    room(&w->heap, &w->nheap, admit, sizeof *w->heap) != 0)
		return -1;
	if (!w->ls && !(w->ls = calloc(1, sizeof *w->ls)))
		return -1;
	lists *ls = w->ls;
	int rc = lists_make(keys, nkeys, k0, k1, w->cur, ls);
	a2m_bmw_top top = {.acc = acc, .admit = admit, .floor = floor};
	if (rc == 0)
		rc = w->walk == A2M_BMW_WAND
			     ? walk_wand(w, keys, nkeys, k0, k1, &top, rest, w->cur, ls)
			     : a2m_bmw_maxscore(w, keys, nkeys, k0, k1, &top, rest, w->cur, ls);
	w->filled = ls->filled;
	w->steps = ls->steps;
	if (rc)
		return rc;
	for (size_t k = 0; k < nkeys; k++)
		w->skipped += keys[k].n;
	w->skipped = w->skipped > w->scored ? w->skipped - w->scored : 0;
	return 0;
}
