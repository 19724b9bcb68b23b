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
** statistics are then the candidates' own.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "rank/scorer.h"
#include "store/memory_index.h"

#define BM25_K1 1.2
#define BM25_B  0.75

struct scratch;

typedef struct bm25 {
	a2m_scorer      base;
	a2m_analyzer   *an;
	struct scratch *sc;   /* reused by every query (see scratch below) */
} bm25;

/* ---- where postings come from ------------------------------------------- */

typedef struct source {
	a2m_store      *store;  /* the store's index, or */
	a2m_mindex     *mem;    /* a throw-away one, */
	a2m_mdoc      **docs;   /*   and the docs it points at */
	size_t          ndocs;
	a2m_index_stats stats;
} source;

static void source_free(source *src)
{
	a2m_mindex_free(src->mem);
	for (size_t i = 0; i < src->ndocs; i++)
		a2m_mdoc_free(src->docs[i]);
	free(src->docs);
	memset(src, 0, sizeof *src);
}

static int source_postings(const source *src, const a2m_term *key, a2m_posting_visit visit,
			   void *ctx)
{
	if (src->mem)
		return a2m_mindex_postings(src->mem, key->text, key->len, visit, ctx);
	return src->store->ops->index_postings(src->store, key->text, key->len, visit, ctx);
}

/* ---- per-record accumulators: seq -> score ------------------------------ */

/*
** Open addressing, the sums kept in the slots themselves. The table lives
** in the scorer and is reused from one query to the next: a slot belongs to
** the current query only when it carries the query's stamp, so nothing is
** cleared between queries and, once the table has grown to the store's
** usual queries, scoring allocates nothing.
*/
typedef struct acc_entry {
	int64_t  seq;
	double   total;      /* the sum over the words done so far */
	double   word_best;  /* the best key of the current word */
	uint32_t word;       /* which word word_best belongs to, + 1 */
	uint32_t stamp;      /* the query the slot belongs to */
} acc_entry;

typedef struct acc {
	acc_entry *slots;
	size_t     alloc;    /* slots allocated */
	size_t     nslots;   /* in use by this query: a power of two, at least twice n;
	                        sized to it, so a small query stays in cache */
	uint32_t  *used;     /* the slots in use, in order of first use */
	size_t     n;
	uint32_t   stamp;
} acc;

/* Scratch bigger than this (entries) is freed after the query that needed
** it rather than kept: a huge store's rare query must not pin its memory. */
#define SCRATCH_KEEP ((size_t)1 << 18)

static size_t slot_of(int64_t seq, size_t nslots)
{
	return (size_t)(((uint64_t)seq * 0x9E3779B97F4A7C15ULL) >> 17) & (nslots - 1);
}

/* Puts a slot of the current query at its place in slots (a fresh table). */
static void acc_place(acc_entry *slots, size_t ns, uint32_t *used, size_t i,
		      const acc_entry *e)
{
	size_t j = slot_of(e->seq, ns);
	while (slots[j].stamp == e->stamp)
		j = (j + 1) & (ns - 1);
	slots[j] = *e;
	used[i] = (uint32_t)j;
}

/* Doubles the table (or makes the first), keeping the current query's sums. */
static int acc_grow(acc *a)
{
	size_t ns = a->nslots ? a->nslots * 2 : 4096;
	acc_entry *slots = calloc(ns, sizeof *slots);
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
static int acc_begin(acc *a, size_t expected)
{
	size_t want = 1024;
	while (want < 2 * expected && want < ((size_t)1 << 31))
		want *= 2;
	a->n = 0;
	if (want > a->alloc) {
		acc_entry *slots = calloc(want, sizeof *slots);
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

static acc_entry *acc_get(acc *a, int64_t seq)
{
	if ((a->n + 1) * 2 > a->nslots && acc_grow(a) != 0)
		return NULL;
	size_t mask = a->nslots - 1, j = slot_of(seq, a->nslots);
	acc_entry *e;
	while ((e = &a->slots[j])->stamp == a->stamp) {
		if (e->seq == seq)
			return e;
		j = (j + 1) & mask;
	}
	*e = (acc_entry){.seq = seq, .stamp = a->stamp};
	a->used[a->n++] = (uint32_t)j;
	return e;
}

static const acc_entry *acc_find(const acc *a, int64_t seq)
{
	if (!a->nslots)
		return NULL;
	size_t j = slot_of(seq, a->nslots);
	const acc_entry *e;
	while ((e = &a->slots[j])->stamp == a->stamp) {
		if (e->seq == seq)
			return e;
		j = (j + 1) & (a->nslots - 1);
	}
	return NULL;
}

static void acc_free(acc *a)
{
	free(a->slots);
	free(a->used);
	memset(a, 0, sizeof *a);
}

/* After a query: keeps the table for the next one unless it grew huge. */
static void acc_end(acc *a)
{
	if (a->alloc > 2 * SCRATCH_KEEP)
		acc_free(a);
}

/* ---- scoring ---------------------------------------------------------------- */

typedef struct posting {
	int64_t  seq;
	uint32_t tf, dl;
} posting;

typedef struct plist {
	posting *v;
	size_t   n, cap;
	int      oom;
} plist;

static int plist_visit(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	plist *p = ctx;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		posting *v = realloc(p->v, cap * sizeof *v);
		if (!v) {
			p->oom = 1;
			return A2M_INTERNAL_ERROR;
		}
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n++] = (posting){.seq = seq, .tf = tf, .dl = dl};
	return 0;
}

/*
** What one query needs beyond its terms, kept by the scorer between
** queries so that scoring does not allocate: a postings list per key and
** the accumulators. A scorer is used by one thread at a time (the
** analyser already requires it), so one set suffices.
*/
struct scratch {
	plist  *lists;
	size_t  nlists;   /* lists allocated (each keeps its postings buffer) */
	acc     a;
};
typedef struct scratch scratch;

/* Ready lists for nkeys keys, each empty. Returns 0, or -1 when memory runs out. */
static int scratch_lists(scratch *sc, size_t nkeys)
{
	if (nkeys > sc->nlists) {
		plist *l = realloc(sc->lists, nkeys * sizeof *l);
		if (!l)
			return -1;
		memset(l + sc->nlists, 0, (nkeys - sc->nlists) * sizeof *l);
		sc->lists = l;
		sc->nlists = nkeys;
	}
	for (size_t k = 0; k < nkeys; k++)
		sc->lists[k].n = 0, sc->lists[k].oom = 0;
	return 0;
}

/* After a query: frees the postings buffers that grew huge. */
static void scratch_end(scratch *sc)
{
	for (size_t k = 0; k < sc->nlists; k++)
		if (sc->lists[k].cap > SCRATCH_KEEP) {
			free(sc->lists[k].v);
			memset(&sc->lists[k], 0, sizeof sc->lists[k]);
		}
	acc_end(&sc->a);
}

static void scratch_free(scratch *sc)
{
	for (size_t k = 0; k < sc->nlists; k++)
		free(sc->lists[k].v);
	free(sc->lists);
	acc_free(&sc->a);
	memset(sc, 0, sizeof *sc);
}

/*
** Scores every record holding a key of q into sc->a (a query begun here),
** and sets *best to the best sum a record could reach. The postings of
** every key are read first (a word's idf needs its df before its postings
** can be scored). Returns 0, or the store's negative code.
*/
static int score_all(const source *src, const a2m_query_terms *q, scratch *sc, double *best)
{
	int rc = 0;
	double n_docs = (double)src->stats.docs;
	double avgdl = src->stats.docs ? (double)src->stats.total_len / n_docs : 1.0;
	if (avgdl <= 0)
		avgdl = 1.0;
	*best = 0;
	acc *a = &sc->a;
	if (scratch_lists(sc, q->nkeys) != 0)
		return A2M_INTERNAL_ERROR;
	plist *lists = sc->lists;
	size_t postings = 0;
	for (size_t k = 0; k < q->nkeys && !rc; k++) {
		rc = source_postings(src, &q->keys[k], plist_visit, &lists[k]);
		if (!rc && lists[k].oom)
			rc = A2M_INTERNAL_ERROR;
		postings += lists[k].n;
	}
	/* No record is scored twice per posting: the postings bound the table. */
	if (!rc && acc_begin(a, postings) != 0)
		rc = A2M_INTERNAL_ERROR;
	/* The length normalisation of BM25, per document length seen. */
	double k_norm0 = BM25_K1 * (1.0 - BM25_B), k_norm1 = BM25_K1 * BM25_B / avgdl;
	for (size_t w = 0; w < q->nwords && !rc; w++) {
		double best_idf = 0;
		for (size_t k = q->word_at[w]; k < q->word_at[w + 1] && !rc; k++) {
			const plist *p = &lists[k];
			if (!p->n)
				continue;
			double df = (double)p->n;
			double idf = log(1.0 + (n_docs - df + 0.5) / (df + 0.5));
			double weight = q->weight[w] * q->key_weight[k];
			if (idf * q->key_weight[k] > best_idf)
				best_idf = idf * q->key_weight[k];
			double scale = weight * idf * (BM25_K1 + 1.0);
			uint32_t word = (uint32_t)w + 1;
			for (size_t i = 0; i < p->n; i++) {
				double tf = p->v[i].tf;
				double c = scale * tf / (tf + k_norm0 + k_norm1 * p->v[i].dl);
				acc_entry *e = acc_get(a, p->v[i].seq);
				if (!e) {
					rc = A2M_INTERNAL_ERROR;
					break;
				}
				if (e->word != word) {
					e->word = word;
					e->word_best = 0;
				}
				if (c > e->word_best) {
					e->total += c - e->word_best;
					e->word_best = c;
				}
			}
		}
		*best += q->weight[w] * best_idf * (BM25_K1 + 1.0);
	}
	return rc;
}

static double normalised(double total, double best)
{
	if (best <= 0 || total <= 0)
		return 0;
	return total >= best ? 1.0 : total / best;
}

/* The store's index as a source; A2M_STORE_NO_INDEX when it has none. */
static int store_source(a2m_store *store, source *src)
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
	source src;
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
	rc = score_all(&src, &q, b->sc, &best);
	a2m_query_terms_free(&q);
	const acc *a = &b->sc->a;
	if (!rc && a->n && !(out->v = malloc(a->n * sizeof *out->v)))
		rc = A2M_INTERNAL_ERROR;
	for (size_t i = 0; !rc && i < a->n; i++) {
		const acc_entry *e = &a->slots[a->used[i]];
		double score = normalised(e->total, best);
		if (score > 0)
			out->v[out->n++] = (a2m_candidate){.seq = e->seq, .score = score};
	}
	scratch_end(b->sc);
	if (rc) {
		free(out->v);
		memset(out, 0, sizeof *out);
	}
	return rc;
}

/*
** A throw-away index of the candidates (seq = their position), for a store
** that keeps none: its statistics are the candidates'.
*/
static int candidate_source(bm25 *b, const a2m_record *const *cands, size_t n, source *src)
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
	source src;
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
	if (!rc)
		rc = score_all(&src, &q, b->sc, &best);
	for (size_t i = 0; !rc && i < n; i++) {
		const acc_entry *e = acc_find(&b->sc->a, own ? (int64_t)i : cands[i]->seq);
		scores[i] = e ? normalised(e->total, best) : 0;
	}
	a2m_query_terms_free(&q);
	scratch_end(b->sc);
	if (own)
		source_free(&src);
	return rc;
}

static void bm25_destroy(a2m_scorer *s)
{
	bm25 *b = (bm25 *)s;
	a2m_analyzer_free(b->an);
	if (b->sc)
		scratch_free(b->sc);
	free(b->sc);
	free(b);
}

a2m_scorer *a2m_scorer_bm25_new(const a2m_analyzer_options *opt)
{
	bm25 *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	if (!(b->sc = calloc(1, sizeof *b->sc)) || !(b->an = a2m_analyzer_new(opt))) {
		free(b->sc);
		free(b);
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
