/*
** sqlite_index_flush.c — the SQLite term index's buffer made into a
** segment: its ops grouped by term (a hash table of the distinct terms),
** the terms put in SQLite's BINARY order (a radix sort of their 8-byte
** prefixes, then the rest), each term's ops in (seq, arrival) order
** reduced to one entry per (term, seq), and the lists written as one new
** segment (sqlite_segments.c). Apart from sqlite_index.c (the buffer,
** open, rebuild and the commit's choice of tail or segment) because it is
** the hot path of a batch's commit, tuned on its own by instruction
** counts, and needs nothing of the rest but the buffer.
*/
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/sqlite_index_internal.h"
#include "util/hash.h"

/*
** Orders two of flush's distinct terms (indices of term_groups in arg[0],
** their bytes in the arena arg[1]) of equal prefixes as SQLite's BINARY
** collation does (bytes, then length): the shorter term, if 8 bytes or
** less, is a prefix of the other, so the lengths decide; else the bytes
** after the eighth do.
*/
static int cmp_groups(const void *a, const void *b, void *arg)
{
	const term_group *groups = ((void *const *)arg)[0];
	const char *t = ((void *const *)arg)[1];
	const term_group *x = &groups[((const group_key *)a)->group];
	const term_group *y = &groups[((const group_key *)b)->group];
	uint32_t n = x->len < y->len ? x->len : y->len;
	int c = n > 8 ? memcmp(t + x->term + 8, t + y->term + 8, n - 8) : 0;
	if (c)
		return c;
	return x->len < y->len ? -1 : (x->len > y->len);
}

/*
** Sorts the n keys at a by prefix, a byte a pass from the lowest (a stable
** radix sort: the qsort_r of every op it replaces was a third of a flush),
** with tmp room for n more. Passes where every key has the same byte are
** skipped. Returns the array that holds the result: a or tmp.
*/
static group_key *sort_prefixes(group_key *a, group_key *tmp, size_t n)
{
	for (unsigned shift = 0; n && shift < 64; shift += 8) {
		size_t count[256] = {0}, sum = 0;
		for (size_t i = 0; i < n; i++)
			count[a[i].prefix >> shift & 255]++;
		if (count[a[0].prefix >> shift & 255] == n)
			continue;
		for (size_t d = 0; d < 256; d++) {
			size_t k = count[d];
			count[d] = sum;
			sum += k;
		}
		for (size_t i = 0; i < n; i++)
			tmp[count[a[i].prefix >> shift & 255]++] = a[i];
		group_key *swap = a;
		a = tmp;
		tmp = swap;
	}
	return a;
}

/* Orders indices of ops (into the array ops) by (seq, arrival). */
static int cmp_seqs(const void *a, const void *b, void *ops)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int64_t x = ((const pending_op *)ops)[i].seq, y = ((const pending_op *)ops)[j].seq;
	if (x != y)
		return x < y ? -1 : 1;
	return i < j ? -1 : (i > j);
}

/*
** Encodes the final state of each (term, seq) of the n ops at idx (indices
** into x->ops, all of one term, in (seq, arrival) order) into x->list;
** *entries counts them, *maxseq is raised to the highest seq of a posting. The last op of a (term, seq) decides: an addition
** writes the posting, a removal a tombstone, unless its first op was an
** addition too (then the posting did not exist before the batch and does
** not after: nothing to write).
*/
static int encode_term(a2m_sqlite_index *x, const size_t *idx, size_t n, int64_t *entries,
		       int64_t *maxseq)
{
	int64_t prev = 0;
	x->list.n = 0;
	for (size_t i = 0; i < n;) {
		size_t k = i;
		while (k + 1 < n && x->ops[idx[k + 1]].seq == x->ops[idx[i]].seq)
			k++;
		const pending_op *first = &x->ops[idx[i]], *last = &x->ops[idx[k]];
		i = k + 1;
		if (first->sign > 0 && last->sign < 0)
			continue;
		a2m_seg_entry e = {.seq = last->seq, .tf = last->tf, .dl = last->dl,
				   .deleted = last->sign < 0};
		if (e.deleted)
			e.tf = e.dl = 0;
		else if (e.seq > *maxseq)
			*maxseq = e.seq;
		if (a2m_seg_put(&x->list, &prev, &e) != 0)
			return -1;
		++*entries;
	}
	return 0;
}

/* The term_group of op, found in or added to the table of 2^bits slots. */
static size_t group_of(a2m_sqlite_index *x, const pending_op *op, unsigned bits)
{
	size_t mask = ((size_t)1 << bits) - 1;
	const char *t = x->arena + op->term;
	/* The prefix stands for the first 8 bytes; longer terms share prefixes. */
	uint64_t h = op->prefix ^ op->len;
	if (op->len > 8)
		h = a2m_hash_more(h, t + 8, op->len - 8);
	/* Fibonacci hashing: the product's top bits depend on every bit of h. */
	h *= 0x9E3779B97F4A7C15ULL;
	for (size_t s = (size_t)(h >> (64 - bits));; s = (s + 1) & mask) {
		if (!x->slots[s]) {
			x->groups[x->ngroups] = (term_group){.prefix = op->prefix, .term = op->term,
							     .len = op->len, .last = op->seq, .slot = s};
			x->slots[s] = ++x->ngroups;
			return x->ngroups - 1;
		}
		const term_group *g = &x->groups[x->slots[s] - 1];
		/* The prefix holds a term of 8 bytes or less whole. */
		if (g->prefix == op->prefix && g->len == op->len &&
		    (op->len <= 8 || memcmp(x->arena + g->term + 8, t + 8, op->len - 8) == 0))
			return x->slots[s] - 1;
	}
}

/*
** Fills x->sorted with the distinct terms of the ops in term order and
** x->byterm with the ops' indices in (term, seq, arrival) order, each
** term's ops ending at its group's at. Returns 0, or -1 when memory runs out.
*/
static int group_ops(a2m_sqlite_index *x)
{
	unsigned bits = 6;
	while (((size_t)1 << bits) < 2 * x->nops)
		bits++;
	size_t had = x->slots_cap;
	if (a2m_seg_grow(&x->slots, &x->slots_cap, (size_t)1 << bits, sizeof *x->slots) != 0)
		return -1;
	/* Emptied after each use (below): only new slots need clearing. */
	memset(x->slots + had, 0, (x->slots_cap - had) * sizeof *x->slots);
	if (a2m_seg_grow(&x->groups, &x->groups_cap, x->nops, sizeof *x->groups) != 0 ||
	    a2m_seg_grow(&x->sorted, &x->sorted_cap, 2 * x->nops, sizeof *x->sorted) != 0 ||
	    a2m_seg_grow(&x->byterm, &x->byterm_cap, x->nops, sizeof *x->byterm) != 0)
		return -1;
	x->ngroups = 0;
	for (size_t i = 0; i < x->nops; i++) {
		pending_op *op = &x->ops[i];
		term_group *g = &x->groups[op->group = group_of(x, op, bits)];
		if (op->seq < g->last)
			g->unsorted = 1;
		g->last = op->seq;
		g->n++;
	}
	for (size_t i = 0; i < x->ngroups; i++) {
		x->slots[x->groups[i].slot] = 0;
		x->sorted[i] = (group_key){x->groups[i].prefix, i};
	}
	group_key *keys = sort_prefixes(x->sorted, x->sorted + x->ngroups, x->ngroups);
	/* Terms of one prefix (longer than 8 bytes, or prefixes of each other)
	** are ordered by the rest. qsort_r (glibc): handles in other threads
	** may be flushing too. */
	void *arg[2] = {x->groups, x->arena};
	for (size_t i = 0, j; i < x->ngroups; i = j) {
		for (j = i + 1; j < x->ngroups && keys[j].prefix == keys[i].prefix; j++)
			;
		if (j - i > 1)
			qsort_r(keys + i, j - i, sizeof *keys, cmp_groups, arg);
	}
	if (keys != x->sorted)
		memcpy(x->sorted, keys, x->ngroups * sizeof *keys);
	size_t at = 0;
	for (size_t i = 0; i < x->ngroups; i++) {
		x->groups[x->sorted[i].group].at = at;
		at += x->groups[x->sorted[i].group].n;
	}
	/* In arrival order within each term: (seq, arrival) order where seqs rose. */
	for (size_t i = 0; i < x->nops; i++)
		x->byterm[x->groups[x->ops[i].group].at++] = i;
	for (size_t i = 0; i < x->ngroups; i++) {
		const term_group *g = &x->groups[i];
		if (g->unsorted)
			qsort_r(x->byterm + g->at - g->n, g->n, sizeof *x->byterm, cmp_seqs, x->ops);
	}
	return 0;
}

/* Writes the buffered postings as one new segment, then merges (merge set). */
int a2m_sqlite_index_write_segment(a2m_sqlite_index *x, a2m_store *base, int merge)
{
	int64_t seg = 0, entries = 0, maxseq = 0;
	if (group_ops(x) != 0)
		return a2m_store_fail(base, "index flush: out of memory");
	int rc = a2m_segments_start(x->segs, base, &seg);
	for (size_t i = 0; !rc && i < x->ngroups; i++) {
		const term_group *g = &x->groups[x->sorted[i].group];
		if (encode_term(x, x->byterm + g->at - g->n, g->n, &entries, &maxseq) != 0)
			rc = a2m_store_fail(base, "index flush: out of memory");
		else if (x->list.n)
			rc = a2m_segments_add(x->segs, base, seg, x->arena + g->term, g->len,
					      x->list.p, x->list.n);
	}
	if (!rc && entries)
		rc = a2m_segments_finish(x->segs, base, seg, 0, entries, maxseq);
	if (!rc && entries && merge)
		rc = a2m_segments_maintain(x->segs, base, 0);
	return rc;
}
