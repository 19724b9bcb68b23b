/*
** unembedded.h — the records that carry no vector at all, neither the
** caller's nor a generated one, and hold some text: those a server
** embedder may owe a vector (docs/EMBEDDINGS.md §4.2). Kept per tier as a
** bitmap by seq, so that finding the next few is a pass over words of 64
** records, and a tier holding none costs nothing to ask.
**
** The memory engine keeps one inside its vector index (vector_index.h),
** which sees every write; SQLite answers the same question from a partial
** index instead. It is derived data: a put that runs out of memory says
** so, and the owner rebuilds.
*/
#ifndef A2M_UNEMBEDDED_H
#define A2M_UNEMBEDDED_H

#include <stddef.h>
#include <stdint.h>

typedef struct a2m_unembedded a2m_unembedded;

/* An empty set. Returns NULL when memory runs out. */
a2m_unembedded *a2m_unembedded_new(void);

/* Frees u. NULL is a no-op. */
void a2m_unembedded_free(a2m_unembedded *u);

/* Empties u (its tiers' names are kept). */
void a2m_unembedded_clear(a2m_unembedded *u);

/*
** Record seq (positive) is now in tier (borrowed; NULL: no tier) and in
** the set (in nonzero), or not in the set (in 0; tier ignored): it leaves
** whichever tier held it. Returns 0, or -1 when memory runs out (seq is
** then in no tier of the set).
*/
int a2m_unembedded_put(a2m_unembedded *u, int64_t seq, const char *tier, int in);

/*
** The seqs of tier in the set above after, ascending, at most max of them,
** into out. Returns how many.
*/
size_t a2m_unembedded_next(const a2m_unembedded *u, const char *tier, int64_t after,
			   int64_t *out, size_t max);

/* Nonzero when text holds something other than ASCII white space. */
int a2m_has_text(const char *text);

#endif
