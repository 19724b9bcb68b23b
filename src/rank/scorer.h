/*
** scorer.h — the ranking seam: how relevant is each candidate to a query?
**
** A scorer answers one of three things (DECISIONS 013):
**   - scores in [0,1] for every candidate, 0 meaning "judged: no match";
**   - A2M_SCORER_ABSTAIN, "I cannot judge this query" (no terms I can use,
**     no vector to compare), on which recall falls back to recency;
**   - a negative code on failure.
** Collapsing abstain into "nothing matched" would recall nothing for a
** stopword-only query; collapsing it into "everything matched" would recall
** everything. A scorer knows nothing of tiers, recency or salience: the
** stack blends those in afterwards.
**
** Two ways to ask. relevance() judges a list of candidates the caller
** gathered (a scan, or the records named by id). candidates(), when a
** scorer has it, finds the candidates itself, from the store's term index,
** so recall need not read every record: it returns every record the query
** can match with its score, before any filter, and the caller filters
** (tier, owner, where...) before it keeps the best. It may also answer
** A2M_SCORER_SCAN, "I cannot enumerate this query" (a store without an
** index, or one that cannot answer now): the caller then scans and calls
** relevance().
**
** Threads: relevance() and candidates() of every scorer here may be called
** by several threads at once on the same scorer (the server's concurrent
** reads), and concurrently with its indexer (which writers call); the
** answers are those of the same calls made one at a time. The store they
** are handed must itself allow concurrent reads. What a call changes is
** its own: BM25 takes a scratch from the scorer's pool for the call
** (pool.h), its analyser is thread-safe (analyze.h), and the other
** scorers keep no state between calls (docs/RANKING.md §9). Only
** destroy() must not overlap any other call.
**
** Implementations: bm25.c (the indexed BM25 scorer), lexical.c (the old
** plain-scan term overlap, kept as the benchmark's baseline), vector.c (the
** caller's embeddings under the store's metric), hybrid.c (several, fused).
*/
#ifndef A2M_SCORER_H
#define A2M_SCORER_H

#include <stddef.h>
#include <stdint.h>

#include "rank/analyze.h"
#include "store/record.h"
#include "store/store.h"

#define A2M_SCORER_ABSTAIN 1
#define A2M_SCORER_SCAN    2

/* What a recall asks for: text, a vector, or both. */
typedef struct a2m_rank_query {
	const char   *text;       /* NULL or "" when absent */
	const double *vector;     /* NULL when absent */
	size_t        dims;
	/* The server embedder's vector of text (docs/EMBEDDINGS.md §4.3): NULL
	** when there is none. Only ever compared with records' gen_embedding. */
	const float  *gen_vector;
	size_t        gen_dims;
	/*
	** What the caller will turn away anyway (store.h), which candidates()
	** may skip early; NULL: nothing. It only narrows: the caller still
	** checks every candidate.
	*/
	const a2m_vector_filter *filter;
	/*
	** What candidates() may leave out (docs/RANKING.md §5, pruning). want
	** is how many records the caller keeps (its limit). With want set and
	** complete 0, a scorer may list only the records likely to reach the
	** top and bound the others (a2m_candidates.rest_bound); the caller
	** asks again with complete = 1 when that bound does not let it finish.
	** With want 0 (unknown) or complete 1, it lists every match. floor is
	** the least share of a relevance the caller's score keeps of any
	** record (recall: its blend at the query's now, at the oldest ages the
	** store holds and salience 0, stack/blend_least.c; 0 is taken as 1),
	** min_relevance the
	** relevance below which it keeps nothing: both only tell the scorer
	** how far to read before its bound is likely to suffice. keeps_all:
	** 1 when no filter of the caller's narrows what the list offers (only
	** a record expired or gone since may be turned away), so want
	** records beating the rest suffice and no spare is kept for filters;
	** a hint too, a wrong one costs the caller a second request.
	*/
	size_t        want;
	int           complete;
	double        floor;
	double        min_relevance;
	int           keeps_all;
} a2m_rank_query;

/*
** A relevance() score meaning "this part cannot judge this candidate" (a
** generated-vector part and a record without a generated vector): the
** hybrid leaves the part out of that candidate's mean.
*/
#define A2M_SCORE_ABSTAIN (-1.0)

/* How two vectors are compared (spec §3.7). */
typedef enum a2m_metric {
	A2M_METRIC_COSINE = 0,  /* angle only: length is ignored */
	A2M_METRIC_DOT    = 1,  /* inner product: longer vectors score higher */
	A2M_METRIC_L2     = 2   /* Euclidean distance: nearer scores higher */
} a2m_metric;

/* "cosine", "dot", "l2". */
const char *a2m_metric_name(a2m_metric m);
/* Parses a metric name; returns 0, or -1 when unknown. */
int a2m_metric_parse(const char *name, a2m_metric *m);

/* A scorer's candidates (store.h): seq, and relevance in (0,1] as score. */

typedef struct a2m_scorer a2m_scorer;

struct a2m_scorer {
	const char  *name;      /* reported by describe: "bm25", "lexical", ... */
	const char  *metric;    /* what relevance measures: "bm25", ... */
	const char  *analyzer;  /* the text analysis (its version); NULL: none */
	double       k1, b;     /* BM25's parameters; 0 for other scorers */
	/*
	** The vector part's search (a2m_scorer_vector_new): 0 exact, else the
	** quantized mode's pool per result wanted. A hybrid takes its parts'.
	*/
	size_t       vector_pool;
	/*
	** What the store should index for this scorer (store.h, index_attach);
	** NULL when it reads no index. Owned by the scorer. Its analyze() may
	** run while other threads call relevance() and candidates().
	*/
	a2m_indexer *indexer;
	/*
	** Fills scores[i] in [0,1] for each of the n candidates. store is the
	** store they came from (for corpus statistics); it may be NULL.
	** Returns 0, A2M_SCORER_ABSTAIN (scores untouched), or a negative code.
	** Thread-safe (see above).
	*/
	int  (*relevance)(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			  const a2m_record *const *cands, size_t n, double *scores);
	/*
	** Optional (NULL when absent). Sets *out to every record of store the
	** query matches, each once, with its relevance in (0,1], in no
	** particular order; returns 0 (n may be 0: nothing matched),
	** A2M_SCORER_ABSTAIN, A2M_SCORER_SCAN (see above), or a negative code.
	** A scorer may prune the list when q->want allows it (out->rest_bound);
	** with q->complete set it never does. The caller frees out->v.
	** Thread-safe (see above).
	*/
	int  (*candidates)(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			   a2m_candidates *out);
	/* Frees the scorer. No other call on it may be running. */
	void (*destroy)(a2m_scorer *s);
};

/*
** The BM25 scorer (k1 1.2, b 0.75) over the text analysis of analyze.h,
** with opt (NULL: the defaults). It reads the store's term index when there
** is one (candidates(), and corpus statistics for relevance()); over a store
** without one it judges the candidates it is given, with statistics taken
** from them. A relevance is the BM25 sum divided by the best sum the query
** could reach in this corpus, so it lies in [0,1]. Abstains when the query
** has no usable terms. candidates() prunes when q->want allows it
** (MaxScore over the query's keys, or block-max document at a time,
** blockmax.h, when a2m_bm25_blockmax asks: records that cannot reach the
** top are left out and bounded by rest_bound); the records it lists keep
** their exact relevance. Returns NULL when memory runs out.
*/
a2m_scorer *a2m_scorer_bm25_new(const a2m_analyzer_options *opt);

/*
** How every BM25 scorer of the process prunes, for `a2m bench` (both in
** one binary) and tests: mode 0 term at a time always; 1 (the default)
** document at a time (blockmax.h, MaxScore over windows) for queries of
** 16 384 postings or more, term at a time below; 2 document at a time
** always; 3 document at a time always, walked by WAND with block-max
** bounds instead of MaxScore. a2m_bm25_blockmax_skipped: the postings
** document at a time has left unscored, in all; a2m_bm25_blockmax_fallbacks:
** the queries it handed back to term at a time because a list was not in
** ascending seq.
*/
void   a2m_bm25_blockmax(int mode);
size_t a2m_bm25_blockmax_skipped(void);
size_t a2m_bm25_blockmax_fallbacks(void);

/*
** What the document-at-a-time walks did, summed over every walk run
** since the process began (deterministic for a given store and queries:
** `a2m bench latency` prints them per query beside the wall clock).
*/
typedef struct a2m_bm25_walked {
	size_t walks;    /* walks run document at a time (a query may walk more than once) */
	size_t steps;    /* WAND's pivot steps, MaxScore's records looked at */
	size_t scored;   /* postings scored exactly */
	size_t filled;   /* blocks decoded of lists read a block at a time */
} a2m_bm25_walked;

void a2m_bm25_blockmax_walked(a2m_bm25_walked *out);

/*
** The old lexical scorer, the plain-scan baseline: terms are maximal runs of
** letters and digits (ASCII case-folded; any non-ASCII byte counts as a
** letter so UTF-8 words stay whole); a candidate's score is the
** IDF-weighted share of the query's distinct terms it contains. Abstains
** when the query has no terms. Returns NULL when memory runs out.
*/
a2m_scorer *a2m_scorer_lexical_new(void);

/*
** The vector scorer: compares the query vector with each candidate's own
** vector under metric, mapped monotonically into [0,1] (cosine: (1+cos)/2;
** dot: logistic of the product; l2: 1/(1+distance)), measured in float32.
** Candidates without a vector, or of another width, score 0. Abstains when
** the query has no vector. candidates() reads the store's vector rows
** (store.h, vector_search), applying q->filter during the scan, and lists
** upper bounds of the relevances (a2m_candidates.bounded) with the rows'
** salience bound; it answers SCAN for a store without them.
**
** pool 0: that exact search, always. pool above 0 (the opt-in quantized
** mode, docs/CONFIG.md vector_search): when the caller wants a limited
** number of records (q->want, not q->complete), the store's approximate
** search (store.h, a2m_vector_search.pool) is asked for q->want × pool
** rows, measured exactly, and the list is marked approximate
** (a2m_candidates.approximate): records left out are taken not to enter.
** Returns NULL when memory runs out.
*/
a2m_scorer *a2m_scorer_vector_new(a2m_metric metric, size_t pool);

/*
** For `a2m bench vectors`, which measures both modes on one store in one
** process: on nonzero, every vector scorer of the process searches exactly
** whatever its pool; 0 (the default) restores each one's own.
*/
void a2m_vector_force_exact(int on);

/*
** The generated-vector scorer: compares q->gen_vector (the server
** embedder's vector of the query text) with each candidate's gen_embedding
** by cosine. A cosine at or below min_cosine is "no match" (0), so a query
** near nothing recalls nothing (DECISIONS 013); above it the score is
** (cos - min_cosine) / (1 - min_cosine), measured with the float32
** kernels of store/vector_index.h. A candidate without a generated vector,
** or of another width, gets A2M_SCORE_ABSTAIN. Abstains when the query has
** no generated vector. candidates() reads the store's generated rows
** (a2m_vector_search.generated) and lists every record it judges — each
** one with a generated vector of the query's width, with a bound of its
** relevance, 0 included — and none other (a2m_candidates.judged_listed);
** it answers SCAN for a store without rows. Returns NULL when memory runs
** out.
*/
#define A2M_GEN_MIN_COSINE 0.5
a2m_scorer *a2m_scorer_gen_vector_new(double min_cosine);

/*
** Moves the best 1 024 of out (higher score, then higher seq) to its front,
** sorted, and sets out->sorted (store.h): one pass with a small heap, where
** ordering a list of 100 000 for a recall of 10 costs more than making it.
** When memory runs out, out is left as it was, unordered (only slower).
*/
void a2m_candidates_best_first(a2m_candidates *out);

/*
** Fuses n scorers (taking ownership, also on failure): each judges; those
** that abstain are left out; a candidate's score is the mean of the
** judging scorers' scores (a part that gave a candidate A2M_SCORE_ABSTAIN
** is left out of that candidate's mean). Abstains only when all of them do. It
** enumerates candidates when every judging part can, fusing their lists by
** the same mean (a list with judged_listed counts only for the records it
** holds), and lists only records above 0; a query one part judges but
** cannot enumerate makes it answer SCAN. Its name,
** metric, analyzer and indexer are those of its first part that has an
** analyzer; its vector_pool is the largest of its parts'.
*/
a2m_scorer *a2m_scorer_hybrid_new(a2m_scorer **parts, size_t n);

/*
** The same with a weight per part (weights[i] >= 0, NULL: all 1): each
** record's score is the weighted mean over the parts that judge it, 0 when
** their weights add up to 0. Takes the parts as a2m_scorer_hybrid_new does
** (all destroyed when it fails, a negative weight included).
*/
a2m_scorer *a2m_scorer_hybrid_weighted(a2m_scorer **parts, const double *weights, size_t n);

#endif
