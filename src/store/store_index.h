/*
** store_index.h — the term index a store keeps (part of the storage seam,
** store.h, which includes it): the analyser the layer above hands the
** store, the postings it keeps and lends with their bounds, and the
** candidate lists a scorer builds from them.
*/
#ifndef A2M_STORE_INDEX_H
#define A2M_STORE_INDEX_H

#include <stddef.h>
#include <stdint.h>

/*
** ---- The term index ---------------------------------------------------
**
** A store may keep an inverted index of its records' content, written in
** the same transaction as the records themselves, so the two can never
** disagree. What a text is indexed AS is not the store's business: the
** layer above hands it an analyser (a2m_indexer, implemented by
** rank/analyze.c) through index_attach, and the store calls it on every
** insert, on every update that changes content (and only then: touches and
** tier moves leave the index alone), and on every remove. Ranking reads
** the index back through index_stats and index_postings; a store without an
** index, or whose index cannot be trusted, answers A2M_STORE_NO_INDEX and
** the scorer falls back to judging the candidates it is given.
*/

/* One distinct term of a text and how often it occurs there. */
typedef struct a2m_term {
	const char *text;     /* len bytes, not NUL-terminated */
	uint32_t    len;
	uint32_t    tf;
} a2m_term;

/* An analysed text: its distinct terms, and its length in tokens. */
typedef struct a2m_doc_terms {
	a2m_term *terms;
	size_t    n;
	uint32_t  length;     /* tokens counted for length normalisation */
	int       has_text;   /* the text holds something other than white space */
	void     *priv;       /* the analyser's memory behind terms */
} a2m_doc_terms;

typedef struct a2m_indexer a2m_indexer;
struct a2m_indexer {
	/*
	** Names the analysis. A persistent index remembers the version it was
	** built with, and index_attach rebuilds an index built by another.
	*/
	const char *version;
	/*
	** Analyses text into *out (zeroed by the caller). Deterministic: the
	** same text always yields the same terms. Returns 0, or -1 when memory
	** runs out; release() must be called in both cases.
	*/
	int  (*analyze)(a2m_indexer *ix, const char *text, a2m_doc_terms *out);
	void (*release)(a2m_indexer *ix, a2m_doc_terms *dt);
	/*
	** Optional (NULL: not offered). Starts analysing texts[0..n) (NULL
	** entries skipped) on other cores, for this thread's next analyze()
	** calls on those very strings, which then hand the results over
	** instead of working. A batch write calls it before its writes, so
	** the batch is analysed while the store writes it on this thread.
	** unprepare() waits for none of the threads: they may outlive the
	** call, on copies of the texts, until the indexer is freed.
	** texts must stay alive and unchanged until unprepare(). Returns 0,
	** or -1 when it could not (analyze() then works as usual).
	*/
	int  (*prepare)(a2m_indexer *ix, const char *const *texts, size_t n);
	/* Stops what prepare started for this thread; frees what analyze() did not take. */
	void (*unprepare)(a2m_indexer *ix);
	/*
	** Optional (NULL: not offered). Starts analysing texts[0..n) on other
	** cores for a batch write that has not begun: a later prepare() of the
	** same texts (byte for byte, in order), on any thread, finds them
	** begun; one of other texts drops them. The texts are copied. Returns
	** 0, or -1 when it could not (nothing changes then).
	*/
	int  (*foresee)(a2m_indexer *ix, const char *const *texts, size_t n);
};

/* The figures BM25 needs from an index, and describe reports. */
typedef struct a2m_index_stats {
	int64_t docs;        /* records with at least one term */
	int64_t total_len;   /* sum of their lengths */
	int64_t unindexed;   /* records holding text that yielded no term */
} a2m_index_stats;

/* index_stats / index_postings: "this store keeps no usable index". */
#define A2M_STORE_NO_INDEX 1

/*
** Called for each posting of a term: the record's seq, the term's count in
** it and the record's length. Return 0 to continue, a negative code to
** abort (index_postings returns it).
*/
typedef int (*a2m_posting_visit)(int64_t seq, uint32_t tf, uint32_t doc_len, void *ctx);

/* One posting as an index may lend it (index_postings_view). */
typedef struct a2m_posting {
	int64_t  seq;
	uint32_t tf;
	uint32_t dl;   /* the record's length in terms */
} a2m_posting;

/*
** What a run of postings can give a BM25 score, whatever the query: a
** contribution rises with tf and falls with the record's length, so the
** best one of a run is one of its postings that no other has both a higher
** tf and a shorter length than. Kept as the least length among the postings
** of tf >= 1, 2, 3 and 4 (dl[0..3]; UINT32_MAX: none) and the highest tf,
** which gives the run's best contribution exactly while no tf is above 3
** and a bound of it otherwise (rank/blockmax.h, a2m_bm25_bound). An index
** may keep one per block of A2M_POSTINGS_BLOCK postings and one per list,
** so that a query neither reads nor bounds the blocks it skips. Merging
** two runs' bounds bounds their union; a run that lost postings keeps a
** valid (looser) bound.
*/
typedef struct a2m_tf_bound {
	uint32_t dl[4];
	uint32_t tf;
} a2m_tf_bound;

/* The postings of a block of a list (index_postings_lend). */
#define A2M_POSTINGS_BLOCK 64

/* The bound of no posting. */
static inline void a2m_tf_bound_empty(a2m_tf_bound *b)
{
	b->dl[0] = b->dl[1] = b->dl[2] = b->dl[3] = UINT32_MAX;
	b->tf = 0;
}

/* Widens b to bound a posting of tf (>= 1) at length dl too. */
static inline void a2m_tf_bound_add(a2m_tf_bound *b, uint32_t tf, uint32_t dl)
{
	for (uint32_t t = 0; t < 4 && t < tf; t++)
		if (dl < b->dl[t])
			b->dl[t] = dl;
	if (tf > b->tf)
		b->tf = tf;
}

/* Widens b to bound what o bounds too. */
static inline void a2m_tf_bound_merge(a2m_tf_bound *b, const a2m_tf_bound *o)
{
	for (int t = 0; t < 4; t++)
		if (o->dl[t] < b->dl[t])
			b->dl[t] = o->dl[t];
	if (o->tf > b->tf)
		b->tf = o->tf;
}

/*
** A term's postings lent with their bounds (index_postings_lend): v[0..n)
** in ascending seq, blocks[i] bounding v[i·A2M_POSTINGS_BLOCK ..] up to
** the next block (NULL: the index keeps none), all bounding every posting.
**
** A list read a block at a time (fill not NULL; SQLite's segments with
** their skip tables) has nblocks blocks of any size: block b is
** v[start[b] .. start[b + 1]), its last seq last[b], its bound blocks[b];
** its postings may be read only after fill(ctx, b) returned 0 (-1: the
** bytes are corrupt or memory ran out; nothing may be read then). Filling
** never moves v, nor changes a block already filled. Everything lent,
** fill's ctx too, lives as long as v.
**
** peek (NULL: none; only with fill) finds in block b the first posting
** whose seq is at least seq, into *out (1), without filling the block
** when the list's owner would rather not keep it decoded (a block filled
** is searched as it is): a probe for one record then decodes up to it,
** and writes nothing a later query faults in. 0: every posting of b is
** below seq; -1 as fill's. *at is the caller's, zeroed before its first
** peek of a list: where the last peek stopped, so that peeks of rising
** seqs in a block decode each entry once; out->seq below the next seq
** asked of b.
*/
typedef struct a2m_peek_at {
	size_t  block;   /* the block the last peek was in, plus one; 0: none */
	size_t  i;       /* its entries decoded so far */
	size_t  off;     /* its bytes read so far */
	int64_t prev;    /* the seq of its last entry decoded */
} a2m_peek_at;

typedef struct a2m_postings_lent {
	const a2m_posting  *v;
	size_t              n;
	const a2m_tf_bound *blocks;
	a2m_tf_bound        all;
	size_t              nblocks;
	const size_t       *start;
	const int64_t      *last;
	int               (*fill)(void *ctx, size_t b);
	int               (*peek)(void *ctx, size_t b, int64_t seq, a2m_peek_at *at,
				  a2m_posting *out);
	void               *ctx;
} a2m_postings_lent;

/*
** ---- Vector search (optional) ---------------------------------------------
**
** A store may keep the caller's vectors as contiguous float32 rows per tier
** (vector_index.h) and answer an exact search over them, so a query vector
** does not make recall read every record. The store only measures: how a
** measure becomes a relevance is the scorer's business, which rows are
** visible is the stack's, told to the store per tier through a filter.
*/

/* One record a search or a scorer found, by seq, with a figure. */
typedef struct a2m_candidate {
	int64_t seq;
	double  score;
} a2m_candidate;

typedef struct a2m_candidates {
	a2m_candidate *v;   /* free with free() */
	size_t         n;
	/*
	** A scorer's list (scorer.h) may come partly ordered: v[0..sorted) are
	** best first (higher score, then higher seq), and none after them
	** comes before v[sorted - 1]. 0: no order (zero-initialised).
	*/
	size_t         sorted;
	/*
	** NULL: each score is the candidate's relevance. Otherwise each score
	** is only an upper bound of it (a vector list measured on a sketch,
	** store/vector_index.h), and the caller judges each candidate it reads
	** with the scorer's relevance() for this query (the one the caller
	** passed to candidates(); borrowed). Bounds keep best-first reading
	** and its stop exact: a relevance is never above its bound.
	*/
	const struct a2m_rank_query *bounded;
	/*
	** salience_known: no listed record has a salience above salience_max
	** (a vector search reports it; 0, zero-initialised: unknown). With it
	** the stack bounds how much recency and salience can add to a
	** relevance, and so reads fewer candidates before it can stop.
	*/
	int            salience_known;
	double         salience_max;
	/*
	** 0 (zero-initialised): a record not listed was judged no match.
	** Nonzero: the scorer judged only the records it lists (a score of 0
	** there is "judged: no match") and abstains on every other one
	** (A2M_SCORE_ABSTAIN in scorer.h: the generated-vector part and a
	** record without a generated vector), so a fusion leaves it out of
	** their mean. A list handed to the stack never has this set.
	*/
	int            judged_listed;
	/*
	** 0 (zero-initialised): the list is complete, every record the query
	** matches is in it. Above 0: the scorer pruned it (scorer.h,
	** a2m_rank_query.want): a matching record not listed has a relevance
	** of at most rest_bound; those listed still have their exact one.
	*/
	double         rest_bound;
	/*
	** 0 (zero-initialised): the list is what rest_bound says. Nonzero: an
	** approximate pool (a vector search with a2m_vector_search.pool, the
	** server's opt-in quantized mode): the records it left out were judged
	** unlikely to enter on a coarse code of their vectors and are taken not
	** to, without a bound; approx_rest is the best figure (the scorer's
	** relevance) the coarse code gave any of them. The records listed
	** have their exact figure. Read to its end with fewer than the limit
	** kept (filters turned pool members away), the list is short, as a
	** pruned one is: the caller asks for a wider pool, then everything.
	*/
	int            approximate;
	double         approx_rest;
} a2m_candidates;

#endif
