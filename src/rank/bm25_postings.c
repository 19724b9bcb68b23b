/*
** bm25_postings.c — the BM25 scorer's reading of a query's postings (lent
** by the index with its bounds, lent, or copied) and what each posting
** adds to its record's score (bm25.c has the formula), summed into the
** accumulators for a query scored whole. Pruning (bm25_prune.c) reads
** through the same functions and sums only some of it.
**
** Threads: every function here works on the caller's scratch alone.
*/
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "rank/bm25_internal.h"

/*
** Lends key's postings (*v, *n) when the source can (no copy); 1 when it
** did, 0 when they must be copied by source_postings, or a negative code.
*/
static int source_view(const bm25_source *src, const a2m_term *key, const a2m_posting **v,
		       size_t *n)
{
	int rc;
	if (src->mem)
		rc = a2m_mindex_view(src->mem, key->text, key->len, v, n);
	else if (src->store->ops->index_postings_view)
		rc = src->store->ops->index_postings_view(src->store, key->text, key->len, v, n);
	else
		return 0;
	if (rc == 1)
		return 0;  /* not lent (store.h): copy it */
	return rc < 0 ? rc : 1;
}

static int source_postings(const bm25_source *src, const a2m_term *key,
			   a2m_posting_visit visit, void *ctx)
{
	if (src->mem)
		return a2m_mindex_postings(src->mem, key->text, key->len, visit, ctx);
	return src->store->ops->index_postings(src->store, key->text, key->len, visit, ctx);
}

/*
** Lends key's postings with the bounds the index keeps (store.h
** index_postings_lend) into p; 0 when it did, 1 when they must be had
** another way (source_view), or a negative code.
*/
static int source_lend(const bm25_source *src, const a2m_term *key, bm25_plist *p)
{
	a2m_postings_lent l;
	if (src->mem || !src->store->ops->index_postings_lend)
		return 1;
	int rc = src->store->ops->index_postings_lend(src->store, key->text, key->len, &l);
	if (rc)
		return rc;
	p->v = l.v;
	p->n = l.n;
	p->blocks = l.blocks;
	p->all = l.all;
	p->has_all = 1;
	p->lent = l;
	return 0;
}

/*
** Makes every key's postings readable whole: a list lent a block at a time
** (store.h a2m_postings_lent) has its every block filled. Term at a time
** reads them all. Returns 0, or A2M_INTERNAL_ERROR when a block cannot be.
*/
static int lists_whole(const a2m_query_terms *q, bm25_scratch *sc)
{
	for (size_t k = 0; k < q->nkeys; k++) {
		bm25_plist *p = &sc->lists[k];
		for (size_t b = 0; p->lent.fill && b < p->lent.nblocks; b++)
			if (p->lent.fill(p->lent.ctx, b) != 0)
				return A2M_INTERNAL_ERROR;
		/* Its blocks are not of A2M_POSTINGS_BLOCK: no bounds by index. */
		if (p->lent.fill)
			p->blocks = NULL;
		p->lent.fill = NULL;
		p->lent.peek = NULL;
	}
	return 0;
}

static int plist_visit(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	bm25_plist *p = ctx;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		a2m_posting *v = realloc(p->own, cap * sizeof *v);
		if (!v) {
			p->oom = 1;
			return A2M_INTERNAL_ERROR;
		}
		p->own = v;
		p->cap = cap;
	}
	p->own[p->n++] = (a2m_posting){.seq = seq, .tf = tf, .dl = dl};
	p->v = p->own;
	return 0;
}

/* Ready pruning's arrays for nkeys keys. Returns 0, or -1 when memory runs out. */
static int scratch_keys(bm25_scratch *sc, size_t nkeys)
{
	if (nkeys <= sc->nkeys)
		return 0;
	double *reach = realloc(sc->reach, nkeys * sizeof *reach);
	if (reach)
		sc->reach = reach;
	size_t *kword = realloc(sc->kword, nkeys * sizeof *kword);
	if (kword)
		sc->kword = kword;
	size_t *order = realloc(sc->order, nkeys * sizeof *order);
	if (order)
		sc->order = order;
	double *kfloor = realloc(sc->kfloor, nkeys * sizeof *kfloor);
	if (kfloor)
		sc->kfloor = kfloor;
	if (!reach || !kword || !order || !kfloor)
		return -1;
	sc->nkeys = nkeys;
	return 0;
}

/* Ready lists for nkeys keys, each empty. Returns 0, or -1 when memory runs out. */
static int scratch_lists(bm25_scratch *sc, size_t nkeys)
{
	if (nkeys > sc->nlists) {
		bm25_plist *l = realloc(sc->lists, nkeys * sizeof *l);
		if (!l)
			return -1;
		memset(l + sc->nlists, 0, (nkeys - sc->nlists) * sizeof *l);
		sc->lists = l;
		sc->nlists = nkeys;
	}
	for (size_t k = 0; k < nkeys; k++) {
		bm25_plist *p = &sc->lists[k];
		p->n = 0, p->oom = 0, p->v = NULL, p->blocks = NULL, p->has_all = 0;
		p->lent.fill = NULL;
		p->lent.peek = NULL;
	}
	return 0;
}

int a2m_bm25_read_lists(const bm25_source *src, const a2m_query_terms *q, bm25_scratch *sc,
			bm25_norm *norm, size_t *postings)
{
	int rc = 0;
	norm->n_docs = (double)src->stats.docs;
	double avgdl = src->stats.docs ? (double)src->stats.total_len / norm->n_docs : 1.0;
	if (avgdl <= 0)
		avgdl = 1.0;
	norm->k0 = BM25_K1 * (1.0 - BM25_B);
	norm->k1 = BM25_K1 * BM25_B / avgdl;
	*postings = 0;
	if (scratch_lists(sc, q->nkeys) != 0)
		return A2M_INTERNAL_ERROR;
	for (size_t k = 0; k < q->nkeys && !rc; k++) {
		bm25_plist *p = &sc->lists[k];
		/* Lent with bounds, else lent, else copied. */
		int copy = 0;
		rc = source_lend(src, &q->keys[k], p);
		if (rc == 1) {
			rc = source_view(src, &q->keys[k], &p->v, &p->n);
			copy = rc == 0;
			rc = rc == 1 ? 0 : rc;
		} else if (rc == 2) {
			copy = 1;
			rc = 0;
		}
		if (copy)
			rc = source_postings(src, &q->keys[k], plist_visit, p);
		if (!rc && p->oom)
			rc = A2M_INTERNAL_ERROR;
		*postings += p->n;
	}
	return rc;
}

double a2m_bm25_word_bound(const a2m_query_terms *q, const bm25_plist *lists,
			   const bm25_norm *norm, size_t w)
{
	double best_idf = 0;
	for (size_t k = q->word_at[w]; k < q->word_at[w + 1]; k++)
		if (lists[k].n && bm25_key_idf(norm, &lists[k]) * q->key_weight[k] > best_idf)
			best_idf = bm25_key_idf(norm, &lists[k]) * q->key_weight[k];
	return q->weight[w] * best_idf * (BM25_K1 + 1.0);
}

/*
** Fills p->c with what each posting of key k (of word w) adds to its
** record's word, and returns the largest. Returns -1 when memory runs out.
*/
static double key_contrib(const a2m_query_terms *q, bm25_plist *p, const bm25_norm *norm,
			  size_t w, size_t k)
{
	if (p->n > p->ccap) {
		size_t room = p->ccap ? p->ccap : 256;
		while (room < p->n)
			room *= 2;
		double *c = realloc(p->c, room * sizeof *c);
		if (!c)
			return -1;
		p->c = c;
		p->ccap = room;
	}
	double weight = q->weight[w] * q->key_weight[k];
	double scale = weight * bm25_key_idf(norm, p) * (BM25_K1 + 1.0);
	double reach = 0;
	for (size_t i = 0; i < p->n; i++) {
		double c = a2m_bm25_contrib(scale, p->v[i].tf, p->v[i].dl, norm->k0, norm->k1);
		p->c[i] = c;
		if (c > reach)
			reach = c;
	}
	return reach;
}

int a2m_bm25_contribs(const a2m_query_terms *q, bm25_scratch *sc, const bm25_norm *n,
		      double *best)
{
	bm25_norm norm = *n;
	int rc = lists_whole(q, sc);
	*best = 0;
	if (!rc && scratch_keys(sc, q->nkeys) != 0)
		rc = A2M_INTERNAL_ERROR;
	for (size_t w = 0; w < q->nwords && !rc; w++) {
		*best += a2m_bm25_word_bound(q, sc->lists, &norm, w);
		for (size_t k = q->word_at[w]; k < q->word_at[w + 1]; k++) {
			sc->kword[k] = w;
			if ((sc->reach[k] = key_contrib(q, &sc->lists[k], &norm, w, k)) < 0)
				rc = A2M_INTERNAL_ERROR;
		}
	}
	return rc;
}

int a2m_bm25_add_words(const a2m_query_terms *q, bm25_scratch *sc, int insert)
{
	a2m_acc *a = &sc->a;
	for (size_t w = 0; w < q->nwords; w++) {
		uint32_t word = (uint32_t)w + 1;
		for (size_t k = q->word_at[w]; k < q->word_at[w + 1]; k++) {
			const bm25_plist *p = &sc->lists[k];
			for (size_t i = 0; i < p->n; i++) {
				a2m_acc_entry *e = insert ? a2m_acc_get(a, p->v[i].seq) : a2m_acc_find(a, p->v[i].seq);
				if (e)
					a2m_acc_add(e, word, p->c[i]);
				else if (insert)
					return -1;
			}
		}
	}
	return 0;
}

int a2m_bm25_score_all(const bm25_source *src, const a2m_query_terms *q, bm25_scratch *sc,
		       double *best)
{
	size_t postings;
	bm25_norm norm;
	*best = 0;
	int rc = a2m_bm25_read_lists(src, q, sc, &norm, &postings);
	if (!rc)
		rc = a2m_bm25_contribs(q, sc, &norm, best);
	/* No record is scored twice per posting: the postings bound the table. */
	if (!rc && (a2m_acc_begin(&sc->a, postings) != 0 || a2m_bm25_add_words(q, sc, 1) != 0))
		rc = A2M_INTERNAL_ERROR;
	return rc;
}
