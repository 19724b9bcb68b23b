/*
** memory_scan.c — the in-memory engine's reads: get by id and by (owner,
** key), scan and count over an a2m_query, and visits by seq.
**
** Apart from memory.c because reads change nothing a reader sees: a scan
** only sorts order[]'s tail and picks the cheaper pass (a small group's
** members, memory_counts.c, or every record); writes from a visit callback
** are safe for the reasons memory.c's opening comment gives.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "store/memory_internal.h"

/* ---- reads ------------------------------------------------------------- */

/*
** Several threads may read at once, each inside a read bracket, while no
** write runs (store.h). The reads here change nothing but scanning (atomic),
** provided order[] is tidy: sorted, compacted as due and without trailing
** tombstones, for then a scan's normalize, trim and compact find nothing to
** do. Writes leave it untidy, so the first bracket after them tidies it,
** under tidy_mu; the later ones find it tidy (the mutex orders their reads
** after its writes).
*/
int a2m_mem_read_begin(a2m_store *base)
{
	mstore *s = (mstore *)base;
	pthread_mutex_lock(&s->tidy_mu);
	a2m_mem_maybe_compact(s);
	a2m_mem_order_normalize(s);
	a2m_mem_order_trim(s);
	pthread_mutex_unlock(&s->tidy_mu);
	return 0;
}

int a2m_mem_read_end(a2m_store *base)
{
	(void)base;
	return 0;
}

/* Hands out a deep copy of e's record (or NULL for no entry). */
static int copy_out(mstore *s, const entry *e, a2m_record **out)
{
	a2m_record view;
	*out = NULL;
	if (!e)
		return 0;
	a2m_mem_entry_view(e, &view);
	*out = a2m_record_dup(&view);
	if (!*out)
		return a2m_store_fail(&s->base, "out of memory");
	return 0;
}

int a2m_mem_get(a2m_store *base, const char *id, a2m_record **out)
{
	mstore *s = (mstore *)base;
	*out = NULL;
	if (!id)
		return 0;
	return copy_out(s, a2m_mem_find_id(s, id), out);
}

int a2m_mem_get_by_key(a2m_store *base, const char *owner, const char *key,
		       a2m_record **out)
{
	mstore *s = (mstore *)base;
	*out = NULL;
	if (!key)
		return 0;
	return copy_out(s, a2m_mem_find_key(s, owner, key), out);
}

/*
** Visits matches in (created_at, seq) order, either way round. order[] is
** re-read every step because a callback's insert may reallocate it; slots
** below the starting count keep their meaning (see the header).
*/
static int cmp_slot(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/*
** When q selects by tier and/or session and that group is small next to the
** store, sets *slots (free with free(); NULL when the group is empty) to
** its members' slots in scan order and returns 1. Returns 0 when a pass
** over every record is the better scan, or memory runs out. order[] must be
** normalized, so that slot order is (created_at, seq) order.
*/
static int group_slots(mstore *s, const a2m_query *q, uint32_t **slots, size_t *n)
{
	size_t k;
	*slots = NULL;
	*n = 0;
	if (!q->tier && !q->by_session)
		return 0;
	a2m_mlink *const *m = a2m_mcounts_members(s->counts, q->tier != NULL, q->tier,
						  q->by_session, q->session, &k);
	/* Sorting k slots beats testing every record while k log k is small. */
	if (k > s->live / 8)
		return 0;
	if (k == 0)
		return 1;
	uint32_t *v = malloc(k * sizeof *v);
	if (!v)
		return 0;
	for (size_t i = 0; i < k; i++)
		v[i] = ((const entry *)((const char *)m[i] - offsetof(entry, link)))->slot;
	qsort(v, k, sizeof *v, cmp_slot);
	*slots = v;
	*n = k;
	return 1;
}

/*
** Visits the records at slots[from..n) (slots NULL: the slots from..n) in
** scan order. A slot emptied or a record changed by a visit is skipped:
** slots keep their meaning while a scan runs (see the header), and what a
** visit appends lies past n, so nothing is visited twice. Each record is
** filled into one record on the stack, lent to the match and the visit.
*/
static int scan_slots(mstore *s, const a2m_query *q, const uint32_t *slots, size_t from,
		      size_t n, a2m_record_visit visit, void *ctx)
{
	a2m_record view;
	for (size_t j = from; j < n; j++) {
		size_t k = q->descending ? n - 1 - (j - from) : j;
		entry *e = s->order[slots ? slots[k] : k];
		if (!e)
			continue;
		a2m_mem_entry_view(e, &view);
		if (!a2m_query_matches(q, &view))
			continue;
		int r = visit(&view, ctx);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	return 0;
}

/*
** The first slot of order[] (normalized: sorted, tombstones between) whose
** record was created after t (after: 1) or at or after t (after: 0), by
** binary search; a tombstone probed is passed over to the next live slot.
*/
static size_t slot_from(mstore *s, int64_t t, int after)
{
	size_t lo = 0, hi = s->nslots;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2, at = mid;
		while (at < hi && !s->order[at])
			at++;
		if (at == hi) {
			hi = mid;
			continue;
		}
		int64_t c = s->order[at]->created_at;
		if (after ? c <= t : c < t)
			lo = at + 1;
		else
			hi = mid;
	}
	return lo;
}

int a2m_mem_scan(a2m_store *base, const a2m_query *q, a2m_record_visit visit,
		 void *ctx)
{
	mstore *s = (mstore *)base;
	int rc = 0;
	uint32_t *slots;
	size_t nslots;

	a2m_mem_order_normalize(s);
	int grouped = group_slots(s, q, &slots, &nslots);
	s->scanning++;
	if (grouped) {
		rc = scan_slots(s, q, slots, 0, nslots, visit, ctx);
		free(slots);
	} else if (q->created_min || q->created_max) {
		/* A range of creation times is a range of order[]: read only it. */
		size_t lo = q->created_min ? slot_from(s, q->created_min, 0) : 0;
		size_t hi = q->created_max ? slot_from(s, q->created_max, 1) : s->nslots;
		rc = scan_slots(s, q, NULL, lo, hi > lo ? hi : lo, visit, ctx);
	} else {
		rc = scan_slots(s, q, NULL, 0, s->nslots, visit, ctx);
	}
	s->scanning--;
	a2m_mem_order_trim(s);
	a2m_mem_maybe_compact(s);
	return rc;
}

int a2m_mem_count(a2m_store *base, const a2m_query *q, int64_t *out)
{
	mstore *s = (mstore *)base;
	int64_t n = 0;
	int narrow = q->by_owner || q->key_prefix || q->group || q->created_min || q->created_max;
	if (!q->tier && !q->by_session && !narrow) {
		*out = (int64_t)s->live;
		return 0;
	}
	/* By tier, session or both: the group's size (memory_counts.c). */
	if (!narrow) {
		size_t n_members;
		a2m_mcounts_members(s->counts, q->tier != NULL, q->tier, q->by_session,
				    q->session, &n_members);
		*out = (int64_t)n_members;
		return 0;
	}
	a2m_record view;
	for (size_t i = 0; i < s->nslots; i++) {
		entry *e = s->order[i];
		if (!e)
			continue;
		a2m_mem_entry_view(e, &view);
		if (a2m_query_matches(q, &view))
			n++;
	}
	*out = n;
	return 0;
}

/* ---- by seq ------------------------------------------------------------ */

int a2m_mem_visit_seqs(a2m_store *base, const int64_t *seqs, size_t n,
		       a2m_record_visit visit, void *ctx)
{
	mstore *s = (mstore *)base;
	a2m_record view;
	for (size_t i = 0; i < n; i++) {
		entry *e = a2m_mem_find_seq(s, seqs[i]);
		if (!e)
			continue;
		a2m_mem_entry_view(e, &view);
		int r = visit(&view, ctx);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	return 0;
}

/* ---- expiry and fingerprints (x-expiry, x-dedup) -------------------------- */

/*
** A pass over every record: expiry is read when a sweep falls due and at
** open, never on a request's path, so no ordered index is kept for it.
*/
int a2m_mem_next_expiry(a2m_store *base, int64_t *at)
{
	mstore *s = (mstore *)base;
	int64_t best = 0;
	for (size_t i = 0; i < s->nslots; i++) {
		entry *e = s->order[i];
		int64_t at_e = e ? a2m_mem_expires(e) : 0;
		if (at_e && (!best || at_e < best))
			best = at_e;
	}
	*at = best;
	return 0;
}

static int cmp_expiry(const void *a, const void *b)
{
	const entry *x = *(entry *const *)a, *y = *(entry *const *)b;
	int64_t ex = a2m_mem_expires(x), ey = a2m_mem_expires(y);
	if (ex != ey)
		return ex < ey ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

int a2m_mem_scan_expired(a2m_store *base, int64_t by, a2m_record_visit visit, void *ctx)
{
	mstore *s = (mstore *)base;
	size_t n = 0, cap = 0;
	entry **v = NULL;
	for (size_t i = 0; i < s->nslots; i++) {
		entry *e = s->order[i];
		int64_t at = e ? a2m_mem_expires(e) : 0;
		if (!at || at > by)
			continue;
		if (n == cap) {
			size_t c = cap ? cap * 2 : 16;
			entry **p = realloc(v, c * sizeof *p);
			if (!p) {
				free(v);
				return a2m_store_fail(base, "scan_expired: out of memory");
			}
			v = p;
			cap = c;
		}
		v[n++] = e;
	}
	if (n > 1)
		qsort(v, n, sizeof *v, cmp_expiry);
	int rc = 0;
	a2m_record view;
	for (size_t i = 0; i < n; i++) {
		a2m_mem_entry_view(v[i], &view);
		int r = visit(&view, ctx);
		if (r != 0) {
			rc = r < 0 ? r : 0;
			break;
		}
	}
	free(v);
	return rc;
}

int a2m_mem_by_fingerprint(a2m_store *base, uint64_t fp, a2m_record_visit visit, void *ctx)
{
	mstore *s = (mstore *)base;
	if (!fp)
		return 0;
	a2m_record view;
	for (entry *e = a2m_mem_fp_chain(s, fp); e; e = a2m_mem_fp_next(e)) {
		if (a2m_mem_fingerprint(e) != fp)
			continue;
		a2m_mem_entry_view(e, &view);
		int r = visit(&view, ctx);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	return 0;
}
