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
** Implementations: lexical.c (terms), vector.c (the caller's embeddings under
** the store's metric), hybrid.c (several scorers, fused).
*/
#ifndef A2M_SCORER_H
#define A2M_SCORER_H

#include <stddef.h>

#include "store/record.h"

#define A2M_SCORER_ABSTAIN 1

/* What a recall asks for: text, a vector, or both. */
typedef struct a2m_rank_query {
	const char   *text;       /* NULL or "" when absent */
	const double *vector;     /* NULL when absent */
	size_t        dims;
} a2m_rank_query;

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

typedef struct a2m_scorer a2m_scorer;

struct a2m_scorer {
	const char *name;  /* reported by describe */
	/*
	** Fills scores[i] in [0,1] for each of the n candidates. Returns 0,
	** A2M_SCORER_ABSTAIN (scores untouched), or a negative code.
	*/
	int  (*relevance)(a2m_scorer *s, const a2m_rank_query *q,
			  const a2m_record *const *cands, size_t n, double *scores);
	/* Frees the scorer. */
	void (*destroy)(a2m_scorer *s);
};

/*
** The lexical scorer: terms are maximal runs of letters and digits (ASCII
** case-folded; any non-ASCII byte counts as a letter so UTF-8 words stay
** whole); a candidate's score is the IDF-weighted share of the query's
** distinct terms it contains. Abstains when the query has no terms.
** Returns NULL when memory runs out.
*/
a2m_scorer *a2m_scorer_lexical_new(void);

/*
** The vector scorer: compares the query vector with each candidate's own
** vector under metric, mapped monotonically into [0,1] (cosine: (1+cos)/2;
** dot: logistic of the product; l2: 1/(1+distance)). Candidates without a
** vector, or of another width, score 0. Abstains when the query has no
** vector. Returns NULL when memory runs out.
*/
a2m_scorer *a2m_scorer_vector_new(a2m_metric metric);

/*
** Fuses n scorers (taking ownership, also on failure): each judges; those
** that abstain are left out; a candidate's score is the mean of the
** judging scorers' scores. Abstains only when all of them do.
*/
a2m_scorer *a2m_scorer_hybrid_new(a2m_scorer **parts, size_t n);

#endif
