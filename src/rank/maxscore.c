/*
** maxscore.c — BM25's top-k over long postings lists, MaxScore document at
** a time over windows of seqs: a2m_bmw_run's default walk (blockmax.h;
** docs/RANKING.md §5).
**
** Why: on a Zipf corpus of short records a block's bound is nearly its
** list's (among 64 postings of a common word there is nearly always one of
** tf 2 in a short record), so block-max skips little, and a query of three
** frequent words must look at every record holding two of them. WAND then
** pays for each with a pivot step (lists re-sorted, reaches summed, a
** gallop per list moved): about 100 000 steps a query at 1M records.
** MaxScore looks at the same records for less: the lists are taken by
** reach; the first ones, whose reaches together cannot beat the threshold
** (non-essential), are only probed, for the records the others hold.
** The essential lists are read window by window (WINDOW seqs): each one's
** postings in the window summed into a table indexed by seq, a tight loop
** with no comparisons between lists (as Lucene's MaxScoreBulkScorer and
** BooleanScorer do); then the window's records, in seq order, each judged
** by its sum plus the non-essential lists' reaches, then probing those
** lists, highest first, while the sum so far and the reaches left can
** still beat the threshold. Only a record that survives every probe is
** scored exactly (a2m_bmw_exact: the complete path's sum, to the bit).
**
** A list read a block at a time (SQLite's skip tables) is probed block
** first: the block that would hold the record is found by the blocks'
** last seqs, and when its bound cannot lift the record past the threshold
** the record is dropped without decoding it; else, with a peek (store.h),
** the block is decoded only up to the record when its owner would not
** keep it decoded (at 10M records a probe per record of a rarer list
** lands in a block of its own: filling each faulted pages in per query).
**
** Exactness: a record held by no essential list reaches at most the
** non-essential lists' reaches (a word counting its largest), which the
** threshold had passed when they were made non-essential; a record dropped
** had a sum so far (each list's contribution, a word's lists added, not
** maxed: never less than the word's best) plus a bound of the lists not
** read at most the threshold then. Sums are widened by BMW_BOUND_REL for
** rounding. The threshold only rises: *rest, the final one, bounds every
** record left out.
*/
#include <stdlib.h>
#include <string.h>

#include "rank/blockmax_internal.h"

/*
** The seqs of a window: its table of sums is 32 KiB, in L1/L2, and a
** window holds enough postings of a common list (1 in 2 records) to
** amortise its per-window work.
*/
#define WINDOW 4096
#define WWORDS (WINDOW / 64)
#define FIRST_WINDOW 128

/*
** What one posting adds, for a window's sums: contrib[tf - 1][dl] for the
** usual (tf, dl), computed as a2m_bm25_contrib computes it, else computed.
*/
#define TAB_TF 4
#define TAB_DL 64

typedef struct contrib_tab {
	double c[TAB_TF][TAB_DL];
} contrib_tab;

static void tab_fill(contrib_tab *t, double scale, double k0, double k1)
{
	for (uint32_t tf = 1; tf <= TAB_TF; tf++)
		for (uint32_t dl = 0; dl < TAB_DL; dl++)
			t->c[tf - 1][dl] = a2m_bm25_contrib(scale, tf, dl, k0, k1);
}

/*
** Adds the postings of essential list l below lim into the window that
** starts at base: win[seq - base] += its contribution (the list's largest
** scale; = when first, the window's first list, so nothing is read back),
** bits set for the seqs it holds, and cand for those whose contribution
** is above thr (mark_floor: below it, the record cannot pass the window's
** first test by this list). Its cursor is left on its first posting at or
** after lim. Nothing else is written per posting: a record scored finds
** its postings again (find). Returns 0, or -1 when a block cannot be
** filled.
*/
static int scan(const a2m_bmw_key *key, a2m_bmw_cursor *c, struct lists *ls, uint32_t l,
		int64_t base, int64_t lim, double k0, double k1, const contrib_tab *tab,
		double thr, int first, double *win, uint64_t *bits, uint64_t *cand)
{
	const a2m_posting *v = key->v;
	size_t pos = c->at, n = key->n;
	double scale = ls->scale[l];
	for (;;) {
		size_t end = key->fill ? key->start[c->cb + 1] : n;
		for (; pos < end && v[pos].seq < lim; pos++) {
			uint32_t i = (uint32_t)(v[pos].seq - base), tf = v[pos].tf, dl = v[pos].dl;
			double x = tf - 1 < TAB_TF && dl < TAB_DL
					   ? tab->c[tf - 1][dl]
					   : a2m_bm25_contrib(scale, tf, dl, k0, k1);
			uint64_t bit = (uint64_t)1 << (i & 63), *word = &bits[i >> 6];
			win[i] = first ? x : (*word & bit ? win[i] : 0.0) + x;
			*word |= bit;
			cand[i >> 6] |= (uint64_t)(x > thr) << (i & 63);
		}
		if (pos < end || pos >= n)
			break;
		/* The block is done: the next one (blocks may be empty). */
		size_t b = c->cb + 1;
		while (key->start[b + 1] <= pos)
			b++;
		c->cb = b;
		ls->filled++;
		if (key->fill(key->ctx, b) != 0)
			return -1;
	}
	c->at = pos;
	ls->at[l] = pos < n ? v[pos].seq : INT64_MAX;
	return 0;
}

/*
** The bound of list l's block b (its keys' largest; l read a block at a
** time, b in it).
*/
static double list_block_bound(a2m_bmw_cursor *cur, const a2m_bmw_key *keys,
			       const struct lists *ls, uint32_t l, size_t b, double k0, double k1)
{
	size_t lead = ls->key[l];
	double best = 0;
	for (size_t k = lead; k < ls->nkeys && keys[k].word == ls->word[l]; k++)
		if (cur[k].lead == lead) {
			double x = a2m_bmw_block_bound(&keys[k], &cur[k], b, k0, k1);
			best = x > best ? x : best;
		}
	return best;
}

/*
** Moves list l's cursor (c, of key) to its first posting at or after d
** through the key's peek, in block b (the first whose last seq is at least
** d): the posting held in c, its block not filled when its owner would
** rather not keep it. Returns 0, or -1 (ls->err set) when the block cannot
** be read.
*/
static int peek_to(a2m_bmw_cursor *c, const a2m_bmw_key *key, struct lists *ls, uint32_t l,
		   size_t b, int64_t d)
{
	if (b != c->cb)
		ls->filled++;
	/* 0 cannot be: last[b] is at least d. */
	if (key->peek(key->ctx, b, d, &c->pk, &c->held) != 1) {
		ls->err = 1;
		return -1;
	}
	c->cb = b;
	c->peeked = 1;
	c->at = key->start[b] + c->pk.i - 1;
	ls->at[l] = c->held.seq;
	return 0;
}

/*
** Non-essential list l asked whether it holds seq d: what it adds to d's
** sum (0: it does not hold it), or -1 when d cannot beat tau with it:
** have is d's sum so far plus a bound of the lists left after l, widened.
** A list read a block at a time has its block found by last seqs, and its
** bound checked, before the block is decoded; with a peek (store.h), the
** block is decoded only up to d when its owner would not keep it.
*/
static double probe(a2m_bmw_cursor *cur, const a2m_bmw_key *keys, struct lists *ls,
		    uint32_t l, int64_t d, double have, double tau, double k0, double k1)
{
	size_t k = ls->key[l];
	const a2m_bmw_key *key = &keys[k];
	a2m_bmw_cursor *c = &cur[k];
	if (ls->at[l] < d) {
		size_t b = key->fill ? c->cb : 0;
		if (key->fill && key->last[b] < d) {
			b = a2m_bmw_block_at(key, b, d);
			if (b < key->nblocks && have + list_block_bound(cur, keys, ls, l, b, k0, k1) <= tau)
				return -1;
		}
		if (key->peek) {
			if (b == key->nblocks) {
				c->at = key->n;
				c->peeked = 0;
				ls->at[l] = INT64_MAX;
				return 0;
			}
			if (peek_to(c, key, ls, l, b, d) != 0)
				return 0;
		} else if (key->fill) {
			a2m_bmw_list_seek(cur, keys, ls, l, d);
			if (ls->err)
				return 0;
		} else {
			/* Most probes land a few postings on: step, then seek. */
			size_t a = c->at, stop = a + 8 < key->n ? a + 8 : key->n;
			while (a < stop && key->v[a].seq < d)
				a++;
			c->at = a;
			if (a == stop && a < key->n && key->v[a].seq < d)
				a2m_bmw_list_seek(cur, keys, ls, l, d);
			else
				ls->at[l] = a < key->n ? key->v[a].seq : INT64_MAX;
		}
	}
	if (ls->at[l] != d)
		return 0;
	const a2m_posting *p = c->peeked ? &c->held : &key->v[c->at];
	return a2m_bm25_contrib(ls->scale[l], p->tf, p->dl, k0, k1);
}

/*
** Essential list k's posting of seq d, or NULL, in v[from, to): the part
** of it the window's scan passed.
*/
static const a2m_posting *find(const a2m_bmw_key *k, size_t from, size_t to, int64_t d)
{
	size_t i = a2m_bmw_seek_in(k, from, to, d);
	return i < to && k->v[i].seq == d ? &k->v[i] : NULL;
}

/*
** The contribution an essential list's posting must pass for its record to
** be worth a step: the record passes the window's first test only when its
** sum, widened, plus ne_ub (the non-essential lists' bound) beats tau, and
** its sum is at most this list's contribution plus others (the other
** essential lists' reaches, added). Lowered by a share of the figures far
** above rounding: marking too many only costs steps.
*/
static double mark_floor(double tau, double ne_ub, double others)
{
	return (tau - ne_ub) / (1.0 + 2 * BMW_BOUND_REL) - others -
	       BMW_BOUND_REL * (tau + ne_ub + others);
}

/* blockmax_internal.h */
int a2m_bmw_maxscore(a2m_bmw *w, const a2m_bmw_key *keys, size_t nkeys, double k0, double k1,
		     a2m_bmw_top *top, double *rest, a2m_bmw_cursor *cur, struct lists *ls)
{
	uint32_t n = ls->n, idx[A2M_BMW_MAX_KEYS], ne = 0;
	double ubp[A2M_BMW_MAX_KEYS];
	size_t winstart[A2M_BMW_MAX_KEYS];
	const a2m_posting *post[A2M_BMW_MAX_KEYS];
	/*
	** The first windows are short: until admit records are kept the
	** threshold is 0 and every record of a window is scored exactly.
	*/
	int64_t span = FIRST_WINDOW;
	int left_out = 0;
	if (!w->win && !(w->win = malloc(WINDOW * sizeof *w->win)))
		return -1;
	/* The window's bits: the seqs its lists hold, then those worth a step. */
	size_t need = 2 * WWORDS * sizeof(uint64_t);
	if (need > w->nwinbits) {
		void *b = realloc(w->winbits, need);
		if (!b)
			return -1;
		w->winbits = b;
		w->nwinbits = need;
	}
	if (!w->tabs && !(w->tabs = malloc(A2M_BMW_MAX_KEYS * sizeof(contrib_tab))))
		return -1;
	contrib_tab *tabs = w->tabs;
	for (uint32_t l = 0; l < n; l++)
		tab_fill(&tabs[l], ls->scale[l], k0, k1);
	double *win = w->win;
	uint64_t *bits = w->winbits, *cand = bits + WWORDS;
	/* The lists by reach, lowest first; ubp[j]: a bound of a record held by idx[0..j] only. */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t j = i;
		for (; j > 0 && ls->reach[idx[j - 1]] > ls->reach[i]; j--)
			idx[j] = idx[j - 1];
		idx[j] = i;
	}
	double ub = 0;
	a2m_bmw_sum_start(ls);
	for (uint32_t i = 0; i < n; i++)
		ubp[i] = ub = a2m_bmw_sum_add(ls, ub, idx[i], ls->reach[idx[i]]);
	for (;;) {
		while (ne < n && ubp[ne] <= top->tau)
			ne++;
		/* The records held only by non-essential lists are left out. */
		left_out |= ne > 0;
		int64_t base = INT64_MAX;
		for (uint32_t j = ne; j < n; j++)
			base = ls->at[idx[j]] < base ? ls->at[idx[j]] : base;
		if (base == INT64_MAX)
			break;
		/* A window: the essential lists' postings in it summed. */
		int64_t lim = base > INT64_MAX - span ? INT64_MAX : base + span;
		span = span < WINDOW ? span * 2 : WINDOW;
		memset(bits, 0, WWORDS * sizeof *bits);
		memset(cand, 0, WWORDS * sizeof *cand);
		double ne_ub = ne ? ubp[ne - 1] : 0, ess = 0;
		for (uint32_t j = ne; j < n; j++)
			ess += ls->reach[idx[j]];
		for (uint32_t j = ne; j < n; j++) {
			uint32_t l = idx[j];
			winstart[l] = cur[ls->key[l]].at;
			double thr = mark_floor(top->tau, ne_ub, ess - ls->reach[l]);
			if (scan(&keys[ls->key[l]], &cur[ls->key[l]], ls, l, base, lim, k0, k1, &tabs[l],
				 thr, j == ne, win, bits, cand) != 0)
				return -1;
		}
		/*
		** Its records worth a step, in seq order; the others could
		** not pass the first test below, the threshold only rises.
		*/
		if (!left_out)
			for (uint32_t wi = 0; wi < WWORDS; wi++)
				left_out |= bits[wi] != cand[wi];
		for (uint32_t wi = 0; wi < WWORDS; wi++)
			for (uint64_t word = cand[wi]; word; word &= word - 1) {
				uint32_t i = wi * 64 + (uint32_t)__builtin_ctzll(word);
				double have = win[i];
				int64_t d = base + i;
				ls->steps++;
				int in = have * (1.0 + BMW_BOUND_REL) + ne_ub > top->tau;
				for (uint32_t j = ne; in && j-- > 0;) {
					double wide = have * (1.0 + BMW_BOUND_REL);
					if (wide + ubp[j] <= top->tau) {
						in = 0;
						break;
					}
					double x = probe(cur, keys, ls, idx[j], d, wide + (j ? ubp[j - 1] : 0),
							 top->tau, k0, k1);
					if (ls->err)
						return -1;
					if (x < 0)
						in = 0;
					else
						have += x;
				}
				if (!in || have * (1.0 + BMW_BOUND_REL) <= top->tau) {
					left_out = 1;
					continue;
				}
				/* Every list's posting of d, and d scored exactly. */
				for (uint32_t j = 0; j < n; j++) {
					uint32_t l = idx[j];
					size_t k = ls->key[l];
					if (j < ne) {
						post[l] = ls->at[l] != d ? NULL
							  : cur[k].peeked ? &cur[k].held
									  : &keys[k].v[cur[k].at];
						continue;
					}
					/* An essential list's: in what the window's scan passed. */
					post[l] = find(&keys[k], winstart[l], cur[k].at, d);
				}
				int kept = a2m_bmw_score(w, keys, nkeys, cur, post, d, k0, k1, top);
				if (kept < 0)
					return -1;
				left_out |= !kept;
			}
	}
	*rest = left_out ? top->tau : 0;
	return 0;
}
