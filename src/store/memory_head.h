/*
** memory_head.h — a long postings list's head for the in-memory term index
** (memory_index.c keeps one beside each long plain list; this file keeps
** it): a copy, in ascending seq, of the list's postings that can add the
** most to a score, about a quarter of them: those whose length is below
** the head's cut for their tf (store.h a2m_postings_in_head). The rest of
** the list, its tail, is bounded (tail) well below the list's reach.
**
** Why: on short records a block's bound is nearly its list's (docs/
** RANKING.md §5), so a query whose threshold is below a common word's
** reach must read every posting of that word. Split in two lists of the
** same word, head and tail, the walk (rank/maxscore.c) reads the head and
** only probes the tail once the tail's bound alone cannot beat the
** threshold: a query of one rare and one common word reads a quarter of
** the common word's postings instead of all of them.
**
** The head is optional: lent only while valid. Keeping it never fails a
** write: a change it has no room for (room is made by reserve, outside
** link and unlink, which must not allocate: memory_index.h) marks it
** invalid, and memory_index.c builds it again in sweep().
*/
#ifndef A2M_MEMORY_HEAD_H
#define A2M_MEMORY_HEAD_H

#include <stdint.h>

#include "store/store.h"

/* A list gets a head from this many postings (below, queries seldom walk it). */
#define A2M_MHEAD_MIN 4096

typedef struct a2m_mhead {
	a2m_posting *v;       /* the head's postings, ascending seq */
	uint32_t     n, cap;
	uint32_t     cut[4];  /* a posting of tf t is the head's when its length is below cut[min(t, 4) - 1] */
	uint8_t      valid;   /* 0: not kept up to date since a change it had no room for */
	a2m_tf_bound all;     /* bounds the head's postings */
	a2m_tf_bound tail;    /* bounds the list's other postings */
} a2m_mhead;

/* Whether posting (tf, dl) belongs in a head of this cut (store.h's rule). */
static inline int a2m_mhead_holds(const uint32_t *cut, uint32_t tf, uint32_t dl)
{
	return a2m_postings_in_head(cut, tf, dl);
}

/*
** Builds h from list v[0..n) (ascending seq): the cuts chosen so that the
** head holds the postings of highest impact (a BM25 contribution's shape
** at the records' average length avgdl: only how useful the split is
** depends on it, never its exactness), up to a quarter of the list; the
** postings copied. Returns 0, or -1 when memory runs out or no head would
** pay: h is then empty and invalid.
*/
int a2m_mhead_build(a2m_mhead *h, const a2m_posting *v, uint32_t n, double avgdl);

/* Room for one more posting in a valid head; without memory it turns invalid. */
void a2m_mhead_reserve(a2m_mhead *h);

/* Posting x entered the list: into the head at its place, or into the tail's bound. */
void a2m_mhead_insert(a2m_mhead *h, a2m_posting x);

/* Posting x (as it was) left the list. */
void a2m_mhead_remove(a2m_mhead *h, a2m_posting x);

/* Frees h's postings and leaves it empty and invalid. */
void a2m_mhead_free(a2m_mhead *h);

#endif
