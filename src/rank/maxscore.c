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
** Three refinements (docs/RANKING.md §5, "What the slowest queries did"):
** the threshold is seeded by scoring every record of the rarest lists
** first (seed); the non-essential lists are the set holding the most
** postings each time the threshold rises, not a prefix by reach (choose);
** a list the index split by impact (a head and the rest, blockmax.h tail)
** walks split only while its head is essential and its rest not, else
** the rest is read whole and the head left out (absorb).
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
** scale), bits (every list's) and lbits (l's) set for the seqs it holds,
** lpos[seq - base] its posting's place after the cursor's. Its cursor is
** left on its first posting at or after lim. Returns 0, or -1 when a
** block cannot be filled.
*/
static int scan(const a2m_bmw_key *key, a2m_bmw_cursor *c, struct lists *ls, uint32_t l,
		int64_t base, int64_t lim, double k0, double k1, const contrib_tab *tab,
		double *win, uint64_t *bits, uint64_t *lbits, uint16_t *lpos)
{
	int split = key->tail && !ls->whole[l];
	const a2m_posting *v = key->v;
	size_t pos = c->at, n = key->n, from = pos;
	double scale = ls->scale[l];
	for (;;) {
		size_t end = key->fill ? key->start[c->cb + 1] : n;
		for (; pos < end && v[pos].seq < lim; pos++) {
			uint32_t i = (uint32_t)(v[pos].seq - base), tf = v[pos].tf, dl = v[pos].dl;
			if (split && a2m_postings_in_head(key->cut, tf, dl))
				continue;  /* its head's, read there */
			double x = tf - 1 < TAB_TF && dl < TAB_DL
					   ? tab->c[tf - 1][dl]
					   : a2m_bm25_contrib(scale, tf, dl, k0, k1);
			uint64_t bit = (uint64_t)1 << (i & 63), *word = &bits[i >> 6];
			win[i] = (*word & bit ? win[i] : 0.0) + x;
			*word |= bit;
			lbits[i >> 6] |= bit;
			lpos[i] = (uint16_t)(pos - from);
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
	if (!ls->whole[l] && !a2m_bmw_held(key, p))
		return 0;  /* its head's: counted there */
	return a2m_bm25_contrib(ls->scale[l], p->tf, p->dl, k0, k1);
}

/*
** The lists of highest reach (a query's rare words) are seeded when they
** hold at most this share of the query's postings (or SEED_MIN).
*/
#define SEED_SHARE 256
#define SEED_MIN   256

static int cmp_seq(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/*
** The threshold seeded: the walk's threshold is 0 until admit records are
** kept, and rises only as it meets the records of the rare words, spread
** over every seq; until then a common word's list cannot be left out, and
** a query of one rare and one common word read all of the common one. So
** every record of the lists of highest reach (idx's last, ascending reach),
** while they hold few postings (SEED_SHARE), is scored first, each found
** in the other lists by search. Sets *seeded to how many lists (idx's
** last) are done so: the walk leaves them out and skips the records they
** hold (w->seeded, ascending; *nrec of them). Only for lists read whole.
** Returns 0, or -1 when memory runs out.
*/
static int seed(a2m_bmw *w, const a2m_bmw_key *keys, size_t nkeys, double k0, double k1,
		a2m_bmw_top *top, a2m_bmw_cursor *cur, const struct lists *ls, const uint32_t *idx,
		uint32_t *seeded, size_t *nrec, int *left_out)
{
	uint32_t n = ls->n, p = 0;
	size_t total = 0, taken = 0, at[A2M_BMW_MAX_KEYS];
	const a2m_posting *pos[A2M_BMW_MAX_KEYS];
	*seeded = 0;
	*nrec = 0;
	for (uint32_t l = 0; l < n; l++) {
		if (keys[ls->key[l]].fill)
			return 0;
		total += keys[ls->key[l]].n;
	}
	size_t budget = total / SEED_SHARE > SEED_MIN ? total / SEED_SHARE : SEED_MIN;
	while (p < n && taken + keys[ls->key[idx[n - 1 - p]]].n <= budget)
		taken += keys[ls->key[idx[n - 1 - p++]]].n;
	if (!p)
		return 0;
	if (taken > w->nseeded) {
		int64_t *s = realloc(w->seeded, taken * sizeof *s);
		if (!s)
			return -1;
		w->seeded = s;
		w->nseeded = taken;
	}
	size_t ns = 0;
	for (uint32_t i = 0; i < p; i++) {
		const a2m_bmw_key *ks = &keys[ls->key[idx[n - 1 - i]]];
		memset(at, 0, n * sizeof *at);
		for (size_t q = 0; q < ks->n; q++) {
			if (!a2m_bmw_held(ks, &ks->v[q]))
				continue;
			int64_t d = ks->v[q].seq;
			for (uint32_t l = 0; l < n; l++) {
				const a2m_bmw_key *k = &keys[ls->key[l]];
				size_t a = at[l] = a2m_bmw_seek_in(k, at[l], k->n, d);
				pos[l] = a < k->n && k->v[a].seq == d && a2m_bmw_held(k, &k->v[a])
						 ? &k->v[a]
						 : NULL;
			}
			/* Held by a list seeded before: scored then. */
			int done = 0;
			for (uint32_t j = 0; j < i && !done; j++)
				done = pos[idx[n - 1 - j]] != NULL;
			if (done)
				continue;
			w->seeded[ns++] = d;
			int kept = a2m_bmw_score(w, keys, nkeys, cur, pos, d, k0, k1, top);
			if (kept < 0)
				return -1;
			*left_out |= !kept;
		}
	}
	if (p > 1)
		qsort(w->seeded, ns, sizeof *w->seeded, cmp_seq);
	*seeded = p;
	*nrec = ns;
	return 0;
}

/*
** Choosing the non-essential lists: per word, its lists by ascending reach
** (a word gives up its lists of lowest reach first: its bound is the
** largest it gave); the choice that gives up the most postings within the
** threshold, found by trying every combination while they are few.
*/
#define CHOICES_MAX 4096

typedef struct choice {
	uint32_t nw, first[A2M_BMW_MAX_KEYS + 1];  /* word w's lists: by[first[w] .. first[w + 1]) */
	uint32_t by[A2M_BMW_MAX_KEYS];
	uint32_t take[A2M_BMW_MAX_KEYS], best_take[A2M_BMW_MAX_KEYS];
	double   reach[A2M_BMW_MAX_KEYS];           /* by's reaches */
	size_t   len[A2M_BMW_MAX_KEYS];             /* by's postings */
	double   tau;
	size_t   best;
} choice;

static void choose_word(choice *c, uint32_t w, double cost, size_t gave)
{
	if (w == c->nw) {
		if (gave > c->best) {
			c->best = gave;
			memcpy(c->best_take, c->take, c->nw * sizeof *c->take);
		}
		return;
	}
	size_t more = 0;
	for (uint32_t k = 0; c->first[w] + k <= c->first[w + 1]; k++) {
		if (k)
			more += c->len[c->first[w] + k - 1];
		double x = k ? c->reach[c->first[w] + k - 1] : 0;
		if (cost + x > c->tau)
			break;
		c->take[w] = k;
		choose_word(c, w + 1, cost + x, gave + more);
	}
}

/*
** Orders idx[0..n) for threshold tau: first the non-essential lists, by
** ascending reach, chosen to hold the most postings (the fewest are then
** read) among the sets whose records, held by no other list, cannot beat
** tau; then the others. ubp[j] bounds a record held by idx[0..j] only.
** Returns how many are non-essential. By reach alone (a prefix of the
** lists by ascending reach), a word's head, a short list of high reach,
** could not be left out before its tail, which holds most of its
** postings; and a word could be left out only after every word of lower
** reach.
*/
/*
** A word split in a head and the rest (store.h) pays only while its head
** is essential and the rest not; otherwise reading or probing both costs
** more than the whole list once. So, with idx[0..ne) the non-essential
** lists: a rest on the same side as its head reads as the whole list
** (ls->whole: its head's postings too, at the head's reach) and its head
** is left out of the walk, put last, after *nact lists. ubp is made again
** for the order. Returns the non-essential lists' count.
*/
static uint32_t absorb(struct lists *ls, uint32_t *idx, uint32_t n, uint32_t ne, double *ubp,
		       uint32_t *nact)
{
	uint8_t side[A2M_BMW_MAX_KEYS], gone[A2M_BMW_MAX_KEYS] = {0};
	uint32_t out[A2M_BMW_MAX_KEYS], no = 0, one = 0;
	memset(side, 2, ls->n);  /* 2: not walked (a seeded list) */
	for (uint32_t i = 0; i < n; i++)
		side[idx[i]] = i < ne;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t l = idx[i], h = ls->head[l];
		ls->whole[l] = h != UINT32_MAX && side[h] == side[l];
		if (ls->whole[l])
			gone[h] = 1;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!gone[idx[i]])
			out[no++] = idx[i];
	for (uint32_t i = 0; i < ne; i++)
		one += !gone[idx[i]];
	*nact = no;
	for (uint32_t i = 0; i < n; i++)
		if (gone[idx[i]])
			out[no++] = idx[i];
	memcpy(idx, out, n * sizeof *idx);
	/* A whole list bounds its head's postings too: its word counts the head's reach. */
	double ub = 0;
	a2m_bmw_sum_start(ls);
	for (uint32_t i = 0; i < *nact; i++) {
		uint32_t l = idx[i];
		double r = ls->whole[l] && ls->reach[ls->head[l]] > ls->reach[l] ? ls->reach[ls->head[l]]
										  : ls->reach[l];
		ubp[i] = ub = a2m_bmw_sum_add(ls, ub, l, r);
	}
	return one;
}

static uint32_t choose(choice *c, struct lists *ls, const a2m_bmw_key *keys, uint32_t *idx,
		       uint32_t n, double tau, double *ubp, uint32_t *nact)
{
	uint32_t group[A2M_BMW_MAX_KEYS + 1], count[A2M_BMW_MAX_KEYS + 1];
	size_t combos = 1;
	/* idx by ascending reach (it holds the last choice's order). */
	for (uint32_t i = 1; i < n; i++) {
		uint32_t l = idx[i], j = i;
		for (; j > 0 && ls->reach[idx[j - 1]] > ls->reach[l]; j--)
			idx[j] = idx[j - 1];
		idx[j] = l;
	}
	/* The words' groups, in order of their lowest reach; each group by ascending reach. */
	c->nw = 0;
	for (uint32_t i = 0; i < n; i++)
		group[ls->word[idx[i]]] = UINT32_MAX;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t wd = ls->word[idx[i]];
		if (group[wd] == UINT32_MAX) {
			count[c->nw] = 0;
			group[wd] = c->nw++;
		}
		count[group[wd]]++;
	}
	c->first[0] = 0;
	for (uint32_t g = 0; g < c->nw; g++) {
		c->first[g + 1] = c->first[g] + count[g];
		combos = combos <= CHOICES_MAX ? combos * (count[g] + 1) : combos;
		count[g] = 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t g = group[ls->word[idx[i]]], at = c->first[g] + count[g]++;
		c->by[at] = idx[i];
		c->reach[at] = ls->reach[idx[i]];
		c->len[at] = keys[ls->key[idx[i]]].n;
	}
	/*
	** A list that lends peeks (SQLite's, read a block at a time) keeps
	** its place by peeking while it is non-essential, its block not
	** filled: it must never become essential again, so such a query takes
	** the prefix by reach, which only grows as the threshold rises.
	*/
	for (uint32_t i = 0; i < n && combos <= CHOICES_MAX; i++)
		if (keys[ls->key[i]].peek)
			combos = CHOICES_MAX + 1;
	uint32_t ne = 0;
	if (combos <= CHOICES_MAX) {
		c->tau = tau;
		c->best = 0;
		memset(c->best_take, 0, c->nw * sizeof *c->best_take);
		choose_word(c, 0, 0, 0);
		/* The chosen first, by ascending reach, then the others (idx's order kept). */
		uint32_t out[A2M_BMW_MAX_KEYS], no = 0;
		uint8_t chosen[A2M_BMW_MAX_KEYS] = {0};
		for (uint32_t g = 0; g < c->nw; g++)
			for (uint32_t k = 0; k < c->best_take[g]; k++)
				chosen[c->by[c->first[g] + k]] = 1;
		for (uint32_t i = 0; i < n; i++)
			if (chosen[idx[i]])
				out[no++] = idx[i];
		ne = no;
		for (uint32_t i = 0; i < n; i++)
			if (!chosen[idx[i]])
				out[no++] = idx[i];
		memcpy(idx, out, n * sizeof *idx);
	}
	double ub = 0;
	a2m_bmw_sum_start(ls);
	for (uint32_t i = 0; i < n; i++)
		ubp[i] = ub = a2m_bmw_sum_add(ls, ub, idx[i], ls->reach[idx[i]]);
	/* Rounding aside the chosen are within tau; by reach alone when too many to try. */
	while (ne > 0 && ubp[ne - 1] > tau)
		ne--;
	if (combos > CHOICES_MAX)
		while (ne < n && ubp[ne] <= tau)
			ne++;
	return absorb(ls, idx, n, ne, ubp, nact);
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
	/* The window's bits: every list's, then each list's; then each list's places. */
	size_t nwords = (size_t)(n + 1) * WWORDS;
	size_t need = nwords * sizeof(uint64_t) + (size_t)n * WINDOW * sizeof(uint16_t);
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
	uint64_t *bits = w->winbits;
	uint16_t *places = (uint16_t *)(void *)(bits + nwords);
	/* The lists by reach, lowest first; ubp[j]: a bound of a record held by idx[0..j] only. */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t j = i;
		for (; j > 0 && ls->reach[idx[j - 1]] > ls->reach[i]; j--)
			idx[j] = idx[j - 1];
		idx[j] = i;
	}
	/* A rest's head: the list of the key before it (bm25_prune.c, blockmax.h). */
	for (uint32_t l = 0; l < n; l++) {
		size_t k = ls->key[l];
		ls->whole[l] = 0;
		ls->head[l] = keys[k].tail && k > 0 ? cur[k - 1].list : UINT32_MAX;
	}
	/* The rare words' records first; the walk then leaves their lists out. */
	uint32_t nseed, nact = 0;
	size_t nrec, si = 0;
	if (seed(w, keys, nkeys, k0, k1, top, cur, ls, idx, &nseed, &nrec, &left_out) != 0)
		return -1;
	const int64_t *seeded = w->seeded;
	n -= nseed;
	choice ch;
	double chosen_at = -1;  /* the threshold the lists were last chosen for */
	int64_t done = INT64_MIN;  /* every record below is judged */
	for (;;) {
		if (top->tau != chosen_at) {
			ne = choose(&ch, ls, keys, idx, n, top->tau, ubp, &nact);
			while (ne > 0 && ubp[ne - 1] > top->tau)
				ne--;  /* rounding: the same bound summed in another order */
			chosen_at = top->tau;
			/* A list essential again was only probed: on to what is not judged yet. */
			for (uint32_t j = ne; j < nact; j++)
				if (ls->at[idx[j]] < done) {
					a2m_bmw_list_seek(cur, keys, ls, idx[j], done);
					if (ls->err)
						return -1;
				}
		}
		/* The records held only by non-essential lists are left out. */
		left_out |= ne > 0;
		int64_t base = INT64_MAX;
		for (uint32_t j = ne; j < nact; j++)
			base = ls->at[idx[j]] < base ? ls->at[idx[j]] : base;
		if (base == INT64_MAX)
			break;
		/* A window: the essential lists' postings in it summed. */
		int64_t lim = base > INT64_MAX - span ? INT64_MAX : base + span;
		span = span < WINDOW ? span * 2 : WINDOW;
		done = lim;
		memset(bits, 0, WWORDS * sizeof *bits);
		for (uint32_t j = ne; j < nact; j++) {
			uint32_t l = idx[j];
			uint64_t *lb = bits + (size_t)(l + 1) * WWORDS;
			memset(lb, 0, WWORDS * sizeof *lb);
			winstart[l] = cur[ls->key[l]].at;
			if (scan(&keys[ls->key[l]], &cur[ls->key[l]], ls, l, base, lim, k0, k1, &tabs[l],
				 win, bits, lb, places + (size_t)l * WINDOW) != 0)
				return -1;
		}
		/* Its records, in seq order. */
		double ne_ub = ne ? ubp[ne - 1] : 0;
		for (uint32_t wi = 0; wi < WWORDS; wi++)
			for (uint64_t word = bits[wi]; word; word &= word - 1) {
				uint32_t i = wi * 64 + (uint32_t)__builtin_ctzll(word);
				double have = win[i];
				int64_t d = base + i;
				ls->steps++;
				/* Scored already, seeded. */
				while (si < nrec && seeded[si] < d)
					si++;
				if (si < nrec && seeded[si] == d)
					continue;
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
				for (uint32_t j = nact; j < n + nseed; j++)
					post[idx[j]] = NULL;  /* seeded (d is in none) or absorbed */
				for (uint32_t j = 0; j < nact; j++) {
					uint32_t l = idx[j];
					size_t k = ls->key[l];
					if (j < ne) {
						post[l] = ls->at[l] != d ? NULL
							  : cur[k].peeked ? &cur[k].held
									  : &keys[k].v[cur[k].at];
						continue;
					}
					/* An essential list's: where the window's scan saw it. */
					uint64_t lw = bits[(size_t)(l + 1) * WWORDS + wi];
					post[l] = lw & (word & -word)
							  ? &keys[k].v[winstart[l] +
								       places[(size_t)l * WINDOW + i]]
							  : NULL;
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
