/*
** blockmax.c — BM25's top-k over long postings lists with block-max
** bounds, document at a time (see blockmax.h).
**
** Why: bm25.c's term-at-a-time pruning (MaxScore over keys) leaves nothing
** out when every word of a query is common — each key is needed — and
** then computes a contribution and a hash-table update for every posting:
** a three-word query of frequent words on a Zipf corpus of 1M records
** touched over a million accumulator slots. Here the lists are walked in
** seq order together, and a record is scored only when the bounds of the
** blocks under it can beat the threshold; whole runs of records are
** stepped over a block at a time.
**
** Exactness: a record left out has a sum at most the bounds' sum under it
** (each bound widened by BOUND_REL, so rounding cannot put a contribution
** above its block's bound), which was at most the threshold then, and the
** threshold only rises: *rest, the final threshold, bounds every record
** left out. A record scored gets the sum bm25.c's complete path gives it.
*/
#include <stdlib.h>
#include <string.h>

#include "rank/blockmax.h"

/* A bound is widened by this share: the computed contributions round. */
#define BOUND_REL 1e-9

void a2m_bmw_free(a2m_bmw *w)
{
	free(w->bound);
	free(w->at);
	free(w->heap);
	free(w->reach);
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

/* ---- the walk ---- */

/* The seq of key k's last posting in block b. */
static inline int64_t block_last(const a2m_bmw_key *k, size_t b)
{
	size_t end = (b + 1) * A2M_BMW_BLOCK;
	return k->v[(end < k->n ? end : k->n) - 1].seq;
}

/* The first posting of k at or after from whose seq is at least seq (binary search in its block). */
static size_t seek(const a2m_bmw_key *k, size_t from, int64_t seq)
{
	size_t lo = from, hi = k->n;
	/* Most seeks land near: gallop first. */
	for (size_t step = 1; lo + step < hi && k->v[lo + step].seq < seq; step *= 2)
		lo += step;
	if (lo < hi && k->v[lo].seq >= seq)
		return lo;
	while (lo + 1 < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (k->v[mid].seq < seq)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/* Fills the block bounds of every key; 0, or -1 when memory runs out. */
static int bounds(a2m_bmw *w, const a2m_bmw_key *keys, size_t nkeys, double k0, double k1)
{
	size_t total = 0;
	if (room(&w->at, &w->nat, 3 * nkeys, sizeof *w->at) != 0)
		return -1;
	for (size_t k = 0; k < nkeys; k++) {
		w->at[3 * k] = total;
		total += (keys[k].n + A2M_BMW_BLOCK - 1) / A2M_BMW_BLOCK;
	}
	if (room(&w->bound, &w->nbound, total ? total : 1, sizeof *w->bound) != 0)
		return -1;
	for (size_t k = 0; k < nkeys; k++) {
		const a2m_bmw_key *key = &keys[k];
		double *b = w->bound + w->at[3 * k];
		for (size_t i = 0; i < key->n; i += A2M_BMW_BLOCK) {
			size_t end = i + A2M_BMW_BLOCK < key->n ? i + A2M_BMW_BLOCK : key->n;
			uint32_t tf = 0, dl = UINT32_MAX;
			for (size_t j = i; j < end; j++) {
				tf = key->v[j].tf > tf ? key->v[j].tf : tf;
				dl = key->v[j].dl < dl ? key->v[j].dl : dl;
			}
			*b++ = a2m_bm25_contrib(key->scale, tf, dl, k0, k1) * (1.0 + BOUND_REL);
		}
		w->at[3 * k + 1] = 0;  /* cursor */
		w->at[3 * k + 2] = 0;  /* block */
	}
	return 0;
}

/*
** MaxScore's partition, over words: a record's sum counts each word once,
** with its best key, so a word's reach is its keys' largest. The words of
** least reach whose reaches sum to at most tau are non-essential (ess[w]
** 0): a record holding only them cannot beat it and is never visited;
** *nonreach gets that sum.
*/
static void partition(const double *wreach, uint32_t nw, double tau, unsigned char *ess,
		      double *nonreach)
{
	uint32_t ord[A2M_BMW_MAX_KEYS];
	for (uint32_t w = 0; w < nw; w++) {
		uint32_t j = w;
		while (j && wreach[ord[j - 1]] > wreach[w]) {
			ord[j] = ord[j - 1];
			j--;
		}
		ord[j] = w;
		ess[w] = 1;
	}
	double sum = 0;
	for (uint32_t j = 0; j < nw && sum + wreach[ord[j]] <= tau; j++) {
		sum += wreach[ord[j]];
		ess[ord[j]] = 0;
	}
	*nonreach = sum;
}

/*
** The bound of the records from d up to *end (set) from the blocks under
** the essential keys' cursors (each at its first posting at or after d), a
** word counting its best key's: keys of one word are contiguous.
*/
static double region_bound(const a2m_bmw *w, const a2m_bmw_key *keys, size_t nkeys,
			   const unsigned char *ess, const uint16_t *lead, int64_t *end)
{
	const size_t *at = w->at;
	double sum = 0, best = 0;
	uint32_t word = 0;
	*end = INT64_MAX;
	for (size_t k = 0; k < nkeys; k++) {
		const a2m_bmw_key *key = &keys[k];
		if (key->word != word) {
			sum += best;
			best = 0;
			word = key->word;
		}
		size_t cur = at[3 * lead[k] + 1];
		if (!ess[key->word - 1] || cur >= key->n)
			continue;
		size_t b = cur / A2M_BMW_BLOCK;
		double bound = w->bound[at[3 * k] + b];
		best = bound > best ? bound : best;
		if (block_last(key, b) < *end)
			*end = block_last(key, b);
	}
	return sum + best;
}

int a2m_bmw_run(a2m_bmw *w, const a2m_bmw_key *keys, size_t nkeys, double k0, double k1,
		size_t admit, double floor, a2m_acc *acc, double *rest)
{
	size_t nheap = 0;
	double tau = 0, nonreach = 0;
	int left_out = 0;
	*rest = 0;
	w->skipped = w->scored = 0;
	if (!admit)
		admit = 1;
	if (!nkeys)
		return 0;
	uint32_t nw = keys[nkeys - 1].word;
	if (nkeys > A2M_BMW_MAX_KEYS || nw > nkeys || !keys[0].word)
		return -1;
	if (bounds(w, keys, nkeys, k0, k1) != 0 || room(&w->heap, &w->nheap, admit, sizeof *w->heap) ||
	    room(&w->reach, &w->nreach, nkeys, sizeof *w->reach))
		return -1;
	size_t *at = w->at;
	double *wreach = w->reach;  /* per word: its keys' largest block bound */
	unsigned char ess[A2M_BMW_MAX_KEYS];
	memset(wreach, 0, nw * sizeof *wreach);
	for (size_t k = 0; k < nkeys; k++) {
		size_t nb = (keys[k].n + A2M_BMW_BLOCK - 1) / A2M_BMW_BLOCK;
		double *r = &wreach[keys[k].word - 1];
		for (size_t b = 0; b < nb; b++)
			if (w->bound[at[3 * k] + b] > *r)
				*r = w->bound[at[3 * k] + b];
	}
	partition(wreach, nw, tau, ess, &nonreach);
	/*
	** lead[k]: the first key of k's word whose list is k's (a word's surface
	** form and its stems often hold the same records): those keys share
	** its cursor, so a record costs a pass per list, not per key.
	*/
	uint16_t lead[A2M_BMW_MAX_KEYS];
	for (size_t k = 0; k < nkeys; k++) {
		lead[k] = (uint16_t)k;
		for (size_t j = k; j-- > 0 && keys[j].word == keys[k].word;)
			if (lead[j] == j && keys[j].n == keys[k].n &&
			    (keys[j].v == keys[k].v ||
			     !memcmp(keys[j].v, keys[k].v, keys[k].n * sizeof *keys[k].v))) {
				lead[k] = (uint16_t)j;
				break;
			}
	}
	int64_t region_end = -1;  /* the region checked last ends there */
	uint64_t here[A2M_BMW_MAX_KEYS / 64];  /* the essential keys whose cursor is at d */
	for (;;) {
		/* The least seq under an essential key's cursor. */
		int64_t d = INT64_MAX;
		for (size_t k = 0; k < nkeys; k++) {
			size_t cur = at[3 * k + 1];
			if (lead[k] == k && cur < keys[k].n && keys[k].v[cur].seq < d &&
			    ess[keys[k].word - 1])
				d = keys[k].v[cur].seq;
		}
		if (d == INT64_MAX)
			break;
		/* Once per region: the blocks under the cursors, up to the first's end. */
		if (d > region_end &&
		    nonreach + region_bound(w, keys, nkeys, ess, lead, &region_end) <= tau) {
			/* No record up to region_end can beat the threshold. */
			for (size_t k = 0; k < nkeys; k++) {
				size_t cur = at[3 * k + 1];
				if (lead[k] == k && ess[keys[k].word - 1] && cur < keys[k].n &&
				    keys[k].v[cur].seq <= region_end)
					at[3 * k + 1] = seek(&keys[k], cur, region_end + 1);
			}
			left_out = 1;
			continue;
		}
		/* d's own essential keys' blocks, a word its best, and the non-essential words' reach. */
		double mine = nonreach, best = 0;
		uint32_t word = 0;
		memset(here, 0, sizeof here);
		for (size_t k = 0; k < nkeys; k++) {
			if (keys[k].word != word) {
				mine += best;
				best = 0;
				word = keys[k].word;
			}
			size_t cur = at[3 * lead[k] + 1];
			if (cur < keys[k].n && keys[k].v[cur].seq == d && ess[word - 1]) {
				here[k / 64] |= (uint64_t)1 << (k % 64);
				double bound = w->bound[at[3 * k] + cur / A2M_BMW_BLOCK];
				best = bound > best ? bound : best;
			}
		}
		mine += best;
		if (mine <= tau) {
			left_out = 1;
		} else {
			a2m_acc_entry e = {.seq = d};
			/* In the query's order: the non-essential keys are sought to d. */
			for (size_t k = 0; k < nkeys; k++) {
				size_t cur = at[3 * lead[k] + 1];
				if (!(here[k / 64] >> (k % 64) & 1)) {
					if (ess[keys[k].word - 1] || cur >= keys[k].n)
						continue;
					/* A follower's leader came first and was sought already. */
					if (keys[k].v[cur].seq < d)
						at[3 * k + 1] = cur = seek(&keys[k], cur, d);
					if (cur >= keys[k].n || keys[k].v[cur].seq != d)
						continue;
				}
				w->scored++;
				a2m_acc_add(&e, keys[k].word,
					    a2m_bm25_contrib(keys[k].scale, keys[k].v[cur].tf,
							     keys[k].v[cur].dl, k0, k1));
			}
			a2m_acc_entry *slot = a2m_acc_get(acc, d);
			if (!slot)
				return -1;
			slot->total = e.total;
			slot->word_best = e.word_best;
			slot->word = e.word;
			heap_push(w->heap, &nheap, admit, e.total);
			if (nheap == admit && w->heap[0] * floor > tau) {
				tau = w->heap[0] * floor;
				partition(wreach, nw, tau, ess, &nonreach);
				region_end = -1;
			}
		}
		for (size_t k = 0; k < nkeys; k++)
			if (lead[k] == k && (here[k / 64] >> (k % 64) & 1))
				at[3 * k + 1]++;
	}
	/* Records holding only non-essential words were never visited. */
	for (uint32_t i = 0; i < nw; i++)
		left_out |= !ess[i];
	*rest = left_out ? tau : 0;
	for (size_t k = 0; k < nkeys; k++)
		w->skipped += keys[k].n;
	w->skipped -= w->scored;
	return 0;
}
