/*
** blockmax_internal.h — what the two walks of a2m_bmw_run share, for them
** only: blockmax.c (the lists made from the keys, their bounds and
** cursors, and WAND) and maxscore.c (MaxScore over windows of seqs).
*/
#ifndef A2M_BLOCKMAX_INTERNAL_H
#define A2M_BLOCKMAX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rank/blockmax.h"

/* A bound is widened by this share: the computed contributions round. */
#define BMW_BOUND_REL 1e-9

/* Per key, the walk's state. */
struct a2m_bmw_cursor {
	size_t   at;     /* the first posting not passed yet (a lead key's: its list's) */
	size_t   cb;     /* a list read a block at a time: the block at is in */
	size_t   block;  /* the block whose bound is in bound; SIZE_MAX: none yet */
	double   bound;  /* that block's, at this key's scale, widened */
	double   reach;  /* the whole list's, at this key's scale, widened */
	uint16_t lead;   /* the key of its word whose list (and cursor) it shares */
	uint32_t list;   /* its list (lists below) */
	/*
	** A list probed through peek (maxscore.c): the posting under the
	** cursor (at, in block cb, which need not be filled), and where the
	** peeks stopped; peeked 0 while v[at] is to be read instead.
	*/
	int         peeked;
	a2m_posting held;
	a2m_peek_at pk;
};

/*
** The walk's lists: one per distinct list of a word (its keys with the
** same postings share it), each with the most its keys add to a record.
*/
struct lists {
	uint32_t n;
	uint16_t key[A2M_BMW_MAX_KEYS];   /* its first key (the others' lead) */
	uint32_t word[A2M_BMW_MAX_KEYS];  /* its word, 1-based */
	double   reach[A2M_BMW_MAX_KEYS]; /* its keys' largest, widened */
	double   scale[A2M_BMW_MAX_KEYS]; /* its keys' largest scale */
	int64_t  at[A2M_BMW_MAX_KEYS];    /* the seq under its cursor; INT64_MAX: none */
	uint32_t ord[A2M_BMW_MAX_KEYS];   /* the lists by at (WAND) */
	size_t   nkeys;
	double   wmax[A2M_BMW_MAX_KEYS];  /* per word, a sum's scratch (sum_add) */
	uint32_t wstamp[A2M_BMW_MAX_KEYS];
	uint32_t stamp;
	int      err;     /* a block could not be filled */
	size_t   filled;  /* blocks filled */
	size_t   steps;   /* the walk's steps: WAND's pivots, MaxScore's candidates */
};

/*
** A running sum over lists where a word counts once, with its largest
** value: sum_start, then sum_add for each list's value; returns the sum.
*/
static inline void a2m_bmw_sum_start(struct lists *ls)
{
	if (++ls->stamp == 0) {
		memset(ls->wstamp, 0, sizeof ls->wstamp);
		ls->stamp = 1;
	}
}

static inline double a2m_bmw_sum_add(struct lists *ls, double sum, uint32_t l, double v)
{
	uint32_t w = ls->word[l] - 1;
	if (ls->wstamp[w] != ls->stamp) {
		ls->wstamp[w] = ls->stamp;
		ls->wmax[w] = v;
		return sum + v;
	}
	if (v <= ls->wmax[w])
		return sum;
	sum += v - ls->wmax[w];
	ls->wmax[w] = v;
	return sum;
}

/*
** The first posting of k in [from, end) whose seq is at least seq, or end
** (blockmax.c). Only v[from .. end) is read: a list read a block at a time
** has only its filled block there.
*/
size_t a2m_bmw_seek_in(const a2m_bmw_key *k, size_t from, size_t end, int64_t seq);

/* Moves list l's cursor to its first posting at or after seq (blockmax.c). */
void a2m_bmw_list_seek(a2m_bmw_cursor *cur, const a2m_bmw_key *keys, struct lists *ls,
		       uint32_t l, int64_t seq);

/*
** The bound of block b of key k's list (kept by the index, else read from
** the postings), at k's scale, widened; cached in c (blockmax.c).
*/
double a2m_bmw_block_bound(const a2m_bmw_key *k, a2m_bmw_cursor *c, size_t b, double k0,
			   double k1);

/* The records kept so far and the threshold they make. */
typedef struct a2m_bmw_top {
	a2m_acc *acc;    /* the records kept, with their sums */
	size_t   admit;  /* how many best sums make the threshold */
	double   floor;  /* its share of the admit-th best */
	size_t   nheap;  /* sums in the walk's heap (a2m_bmw.heap) */
	double   tau;    /* the threshold: 0 until admit are kept */
} a2m_bmw_top;

/*
** Scores the record seq exactly, as bm25.c's complete path sums it: keys
** in the query's order, a word counting its best key (post[l]: list l's
** posting of seq, or NULL when it holds none; w->scored counts each
** posting scored). Kept when its sum beats top->tau: put into top->acc,
** among the admit best, and tau raised to the admit-th best times floor
** once there are admit. Returns 1 when kept, 0 when not, -1 when memory
** runs out.
*/
int a2m_bmw_score(a2m_bmw *w, const a2m_bmw_key *keys, size_t nkeys, const a2m_bmw_cursor *cur,
		  const a2m_posting *const *post, int64_t seq, double k0, double k1,
		  a2m_bmw_top *top);

/*
** The first block of list k, from block b on, whose last seq is at least
** seq; k->nblocks when none is (k read a block at a time).
*/
size_t a2m_bmw_block_at(const a2m_bmw_key *k, size_t b, int64_t seq);

/*
** MaxScore over windows of seqs (maxscore.c): a2m_bmw_run's walk for the
** lists ls made, with a2m_bmw_run's arguments and answer.
*/
int a2m_bmw_maxscore(a2m_bmw *w, const a2m_bmw_key *keys, size_t nkeys, double k0, double k1,
		     a2m_bmw_top *top, double *rest, a2m_bmw_cursor *cur, struct lists *ls);

#endif
