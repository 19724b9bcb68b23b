/*
** memory_head.c — a long postings list's head (see memory_head.h).
*/
#include <stdlib.h>
#include <string.h>

#include "store/memory_head.h"

/* The lengths told apart when the cut is chosen; longer ones count as this. */
#define CUT_MAX 64

/*
** The head holds at most this share of its list: a head of most of the
** list would leave a tail as costly to probe as the list and save little.
*/
#define HEAD_SHARE 4

void a2m_mhead_free(a2m_mhead *h)
{
	free(h->v);
	memset(h, 0, sizeof *h);
	a2m_tf_bound_empty(&h->all);
	a2m_tf_bound_empty(&h->tail);
}

int a2m_mhead_build(a2m_mhead *h, const a2m_posting *v, uint32_t n, double avgdl)
{
	uint32_t by[4][CUT_MAX] = {{0}};  /* postings per tf (4: 4 and more) and length */
	a2m_mhead_free(h);
	for (uint32_t i = 0; i < n; i++)
		if (v[i].dl < CUT_MAX)
			by[(v[i].tf < 4 ? v[i].tf : 4) - 1][v[i].dl]++;
	/*
	** Cells (tf, length) taken by impact, highest first, while the head
	** stays within its share: each tf's lengths from the shortest, so a
	** cut per tf says which. The shape tf / (tf + 0.3 + 0.9 dl / avgdl)
	** is BM25's at its usual k1 and b.
	*/
	uint32_t held = 0, most = n / HEAD_SHARE;
	int closed[4] = {0};  /* a tf whose next length would not fit: its cut is final */
	double k1 = 0.9 / (avgdl > 0 ? avgdl : 1);
	for (;;) {
		int best = -1;
		double top = -1;
		for (int t = 0; t < 4; t++) {
			if (closed[t] || h->cut[t] >= CUT_MAX)
				continue;
			double x = (t + 1.0) / (t + 1.3 + k1 * h->cut[t]);
			if (x > top)
				top = x, best = t;
		}
		if (best < 0)
			break;
		if (held + by[best][h->cut[best]] > most) {
			/* The lower tfs' longer records are worth less: closed with it. */
			for (int t = 0; t <= best; t++)
				closed[t] = 1;
			continue;
		}
		held += by[best][h->cut[best]++];
	}
	/* The cuts rise with tf (a2m_postings_in_head's promise); a head of nothing would not pay. */
	for (int t = 1; t < 4; t++)
		if (h->cut[t] < h->cut[t - 1])
			h->cut[t] = h->cut[t - 1];
	held = 0;
	for (uint32_t i = 0; i < n; i++)
		held += a2m_mhead_holds(h->cut, v[i].tf, v[i].dl);
	if (!held || held > n / 2)
		return -1;
	uint32_t cap = held + held / 8 + 16;
	if (!(h->v = malloc(cap * sizeof *h->v)))
		return -1;
	h->cap = cap;
	for (uint32_t i = 0; i < n; i++)
		if (a2m_mhead_holds(h->cut, v[i].tf, v[i].dl)) {
			h->v[h->n++] = v[i];
			a2m_tf_bound_add(&h->all, v[i].tf, v[i].dl);
		} else {
			a2m_tf_bound_add(&h->tail, v[i].tf, v[i].dl);
		}
	h->valid = 1;
	return 0;
}

void a2m_mhead_reserve(a2m_mhead *h)
{
	if (!h->valid || h->n < h->cap)
		return;
	uint32_t cap = h->cap + h->cap / 2 + 16;
	a2m_posting *v = realloc(h->v, cap * sizeof *v);
	if (!v) {
		h->valid = 0;
		return;
	}
	h->v = v;
	h->cap = cap;
}

/* The first of h's postings at or after seq. */
static uint32_t head_seek(const a2m_mhead *h, int64_t seq)
{
	uint32_t lo = 0, hi = h->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (h->v[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void a2m_mhead_insert(a2m_mhead *h, a2m_posting x)
{
	if (!h->valid)
		return;
	if (!a2m_mhead_holds(h->cut, x.tf, x.dl)) {
		a2m_tf_bound_add(&h->tail, x.tf, x.dl);
		return;
	}
	if (h->n == h->cap) {
		h->valid = 0;  /* no room, and none may be made here: built again in sweep */
		return;
	}
	uint32_t pos = h->n && h->v[h->n - 1].seq > x.seq ? head_seek(h, x.seq) : h->n;
	if (pos < h->n)
		memmove(&h->v[pos + 1], &h->v[pos], (h->n - pos) * sizeof *h->v);
	h->v[pos] = x;
	h->n++;
	a2m_tf_bound_add(&h->all, x.tf, x.dl);
}

void a2m_mhead_remove(a2m_mhead *h, a2m_posting x)
{
	/* A posting leaving the tail leaves its bound looser, never wrong. */
	if (!h->valid || !a2m_mhead_holds(h->cut, x.tf, x.dl))
		return;
	uint32_t pos = head_seek(h, x.seq);
	if (pos == h->n || h->v[pos].seq != x.seq) {
		h->valid = 0;  /* not held: the caller's invariant says never */
		return;
	}
	h->n--;
	memmove(&h->v[pos], &h->v[pos + 1], (h->n - pos) * sizeof *h->v);
}
