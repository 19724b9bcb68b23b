/*
** bm25.c — the BM25 scorer (see scorer.h), over the term index the store
** keeps with our analyser (analyze.h).
**
** A query is a list of words, each with several keys (its surface form and
** its stems). A record's score for a word is the best of its keys:
**
**     w · idf(key) · tf·(k1 + 1) / (tf + k1·(1 − b + b·dl/avgdl))
**
** with idf = ln(1 + (N − df + 0.5)/(df + 0.5)) over the whole store (N
** records with terms, df of them holding the key), w the word's weight
** (analyze.h: 1, or less for a partial stopword). Taking the best key, not
** the sum, keeps a word that matches by surface and by stem from counting
** twice; and a surface match, rarer than its stem, naturally weighs more.
** The record's score is the sum over words, divided by the best any record
** could reach, Σ w · max idf · (k1 + 1), so relevance lies in [0,1] and
** keeps BM25's proportions (docs/RANKING.md).
**
** Where the postings come from: the store's index when it has one; else a
** throw-away index of the candidates being judged (memory_index.c), whose
** statistics are then the candidates' own. This file holds the scorer, its
** sources and its scratches; bm25_postings.c reads the postings and scores
** them, bm25_prune.c leaves out what cannot make the caller's list
** (bm25_internal.h).
**
** Threads: candidates() and relevance() may run on several threads at once
** over one scorer (scorer.h). Each call takes a scratch of its own from the
** scorer's pool (pool.h) and gives it back; the analyser is thread-safe
** itself; nothing else in the scorer changes after creation.
*/
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "rank/bm25_internal.h"

typedef struct bm25 {
	a2m_scorer      base;
	a2m_analyzer   *an;
	a2m_pool        scratches;  /* the free ones (bm25_internal.h, bm25_scratch) */
	int             pooled;     /* scratches was made (bm25_destroy) */
} bm25;

static void source_free(bm25_source *src)
{
	a2m_mindex_free(src->mem);
	for (size_t i = 0; i < src->ndocs; i++)
		a2m_mdoc_free(src->docs[i]);
	free(src->docs);
	memset(src, 0, sizeof *src);
}

/* Scratch bigger than this (entries) is freed after the query that needed
** it rather than kept: a huge store's rare query must not pin its memory. */
#define SCRATCH_KEEP A2M_ACC_KEEP

/* After a query: frees the postings buffers that grew huge. */
static void scratch_end(bm25_scratch *sc)
{
	for (size_t k = 0; k < sc->nlists; k++)
		if (sc->lists[k].cap > SCRATCH_KEEP || sc->lists[k].ccap > SCRATCH_KEEP) {
			free(sc->lists[k].own);
			free(sc->lists[k].c);
			memset(&sc->lists[k], 0, sizeof sc->lists[k]);
		}
	a2m_acc_end(&sc->a);
}

static void scratch_free(a2m_pool_item *item)
{
	bm25_scratch *sc = (bm25_scratch *)item;
	for (size_t k = 0; k < sc->nlists; k++) {
		free(sc->lists[k].own);
		free(sc->lists[k].c);
	}
	free(sc->lists);
	free(sc->reach);
	free(sc->kfloor);
	free(sc->kword);
	free(sc->order);
	free(sc->tmp);
	a2m_bmw_free(&sc->bmw);
	free(sc->bkeys);
	a2m_acc_free(&sc->a);
	free(sc);
}

/* A scratch for the caller alone (a free one, else a new one); NULL when
** memory runs out. Give it back with scratch_give. */
static bm25_scratch *scratch_take(bm25 *b)
{
	a2m_pool_item *item = a2m_pool_take(&b->scratches);
	return item ? (bm25_scratch *)item : calloc(1, sizeof(bm25_scratch));
}

/* Ends sc's query (scratch_end) and gives it back to the pool. */
static void scratch_give(bm25 *b, bm25_scratch *sc)
{
	scratch_end(sc);
	a2m_pool_give(&b->scratches, &sc->item);
}

static double normalised(double total, double best)
{
	if (best <= 0 || total <= 0)
		return 0;
	return total >= best ? 1.0 : total / best;
}

/* The store's index as a source; A2M_STORE_NO_INDEX when it has none. */
static int store_source(a2m_store *store, bm25_source *src)
{
	memset(src, 0, sizeof *src);
	if (!store || !store->ops->index_stats)
		return A2M_STORE_NO_INDEX;
	src->store = store;
	return store->ops->index_stats(store, &src->stats);
}

static int bm25_candidates(a2m_scorer *s, a2m_store *store, const a2m_rank_query *rq,
			   a2m_candidates *out)
{
	bm25 *b = (bm25 *)s;
	a2m_query_terms q;
	bm25_source src;
	double best;
	memset(out, 0, sizeof *out);
	if (!rq->text || !*rq->text)
		return A2M_SCORER_ABSTAIN;
	int rc = store_source(store, &src);
	if (rc == A2M_STORE_NO_INDEX)
		return A2M_SCORER_SCAN;
	if (rc)
		return rc;
	if (a2m_analyze_query(b->an, rq->text, &q) != 0) {
		a2m_query_terms_free(&q);
		return A2M_INTERNAL_ERROR;
	}
	if (!q.nwords) {
		a2m_query_terms_free(&q);
		return A2M_SCORER_ABSTAIN;
	}
	bm25_scratch *sc = scratch_take(b);
	if (!sc) {
		a2m_query_terms_free(&q);
		return A2M_INTERNAL_ERROR;
	}
	double rest = 0;
	if (rq->want && !rq->complete && q.nwords <= BM25_PRUNE_WORDS)
		rc = a2m_bm25_score_pruned(&src, &q, rq, sc, &best, &rest);
	else
		rc = a2m_bm25_score_all(&src, &q, sc, &best);
	a2m_query_terms_free(&q);
	const a2m_acc *a = &sc->a;
	if (!rc && a->n && !(out->v = malloc(a->n * sizeof *out->v)))
		rc = A2M_INTERNAL_ERROR;
	/* Locals, not best and *a: the stores to out->v could alias them. */
	const double top = best;
	const a2m_acc_entry *slots = a->slots;
	const uint32_t *used = a->used;
	size_t nout = 0;
	for (size_t i = 0, n = a->n; !rc && i < n; i++) {
		const a2m_acc_entry *e = &slots[used[i]];
		double score = normalised(e->total, top);
		if (score > 0)
			out->v[nout++] = (a2m_candidate){.seq = e->seq, .score = score};
	}
	out->n = nout;
	scratch_give(b, sc);
	if (rc) {
		free(out->v);
		memset(out, 0, sizeof *out);
	} else if (rest > 0) {
		out->rest_bound = a2m_bm25_rest_relevance(rest, best);
	}
	return rc;
}

/*
** A throw-away index of the candidates (seq = their position), for a store
** that keeps none: its statistics are the candidates'.
*/
static int candidate_source(bm25 *b, const a2m_record *const *cands, size_t n, bm25_source *src)
{
	memset(src, 0, sizeof *src);
	if (!(src->mem = a2m_mindex_new()) || !(src->docs = calloc(n + 1, sizeof *src->docs)))
		return A2M_INTERNAL_ERROR;
	for (size_t i = 0; i < n; i++) {
		a2m_doc_terms dt;
		a2m_mdoc *d = NULL;
		int rc = a2m_analyze_doc(b->an, cands[i]->content ? cands[i]->content : "", &dt);
		if (rc == 0)
			rc = a2m_mindex_prepare(src->mem, &dt, (int64_t)i, &d);
		a2m_doc_terms_free(&dt);
		if (rc)
			return A2M_INTERNAL_ERROR;
		a2m_mindex_link(src->mem, d);
		src->docs[src->ndocs++] = d;
	}
	a2m_mindex_stats(src->mem, &src->stats);
	return 0;
}

static int bm25_relevance(a2m_scorer *s, a2m_store *store, const a2m_rank_query *rq,
			  const a2m_record *const *cands, size_t n, double *scores)
{
	bm25 *b = (bm25 *)s;
	a2m_query_terms q;
	bm25_source src;
	double best = 0;
	if (!rq->text || !*rq->text)
		return A2M_SCORER_ABSTAIN;
	if (a2m_analyze_query(b->an, rq->text, &q) != 0) {
		a2m_query_terms_free(&q);
		return A2M_INTERNAL_ERROR;
	}
	if (!q.nwords) {
		a2m_query_terms_free(&q);
		return A2M_SCORER_ABSTAIN;
	}
	int own = 0;
	int rc = store_source(store, &src);
	if (rc == A2M_STORE_NO_INDEX) {
		own = 1;
		rc = candidate_source(b, cands, n, &src);
	}
	bm25_scratch *sc = rc ? NULL : scratch_take(b);
	if (!rc && !sc)
		rc = A2M_INTERNAL_ERROR;
	if (!rc)
		rc = a2m_bm25_score_all(&src, &q, sc, &best);
	for (size_t i = 0; !rc && i < n; i++) {
		const a2m_acc_entry *e = a2m_acc_find(&sc->a, own ? (int64_t)i : cands[i]->seq);
		scores[i] = e ? normalised(e->total, best) : 0;
	}
	a2m_query_terms_free(&q);
	if (sc)
		scratch_give(b, sc);
	if (own)
		source_free(&src);
	return rc;
}

static void bm25_destroy(a2m_scorer *s)
{
	bm25 *b = (bm25 *)s;
	a2m_analyzer_free(b->an);
	if (b->pooled)
		a2m_pool_destroy(&b->scratches, scratch_free);
	free(b);
}

a2m_scorer *a2m_scorer_bm25_new(const a2m_analyzer_options *opt)
{
	bm25 *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->pooled = a2m_pool_init(&b->scratches) == 0;
	if (!b->pooled || !(b->an = a2m_analyzer_new(opt))) {
		bm25_destroy(&b->base);
		return NULL;
	}
	b->base.name = "bm25";
	b->base.metric = "bm25";
	b->base.analyzer = a2m_analyzer_version(b->an);
	b->base.k1 = BM25_K1;
	b->base.b = BM25_B;
	b->base.indexer = a2m_analyzer_indexer(b->an);
	b->base.relevance = bm25_relevance;
	b->base.candidates = bm25_candidates;
	b->base.destroy = bm25_destroy;
	return &b->base;
}
