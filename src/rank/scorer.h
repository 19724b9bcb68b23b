/*
** scorer.h — the ranking seam: how relevant is each candidate to a query?
**
** A scorer answers one of three things (DECISIONS 013):
**   - scores in [0,1] for every candidate, 0 meaning "judged: no match";
**   - A2M_SCORER_ABSTAIN, "I cannot judge this query" (it has no terms I can
**     use), on which recall falls back to recency and salience;
**   - a negative code on failure.
** Collapsing abstain into "nothing matched" would recall nothing for a
** stopword-only query; collapsing it into "everything matched" would recall
** everything. The scorer knows nothing of tiers, recency or salience: the
** blend (rank/blend.h) adds those afterwards.
*/
#ifndef A2M_SCORER_H
#define A2M_SCORER_H

#include <stddef.h>

#include "store/record.h"

#define A2M_SCORER_ABSTAIN 1

typedef struct a2m_scorer a2m_scorer;

struct a2m_scorer {
	const char *name;  /* reported by describe */
	/*
	** Fills scores[i] in [0,1] for each of the n candidates. Returns 0,
	** A2M_SCORER_ABSTAIN (scores untouched), or a negative code.
	*/
	int  (*relevance)(a2m_scorer *s, const char *query,
			  const a2m_record *const *cands, size_t n, double *scores);
	/* Frees the scorer. */
	void (*destroy)(a2m_scorer *s);
};

/*
** The built-in lexical scorer: terms are maximal runs of letters and digits
** (ASCII case-folded; any non-ASCII byte counts as a letter so UTF-8 words
** stay whole); a candidate's score is the IDF-weighted share of the query's
** distinct terms it contains, with a gentle bonus for repeated occurrences.
** Returns NULL when memory runs out.
*/
a2m_scorer *a2m_scorer_lexical_new(void);

#endif
