/*
** postgres_fold.c — the batch rows of the term index (postgres_batches.c)
** folded into each term's tail and sealed rows (postgres_segments.c), a
** bounded step per write transaction.
**
** A pass takes the rows waiting when it begins, (base, horizon], and walks
** their terms in ascending order: each step (one per write transaction
** that wrote postings, under the deployment's write lock) merges the next
** budget terms' lists across those rows into one chunk per term, appends
** it to the term's tail (sealing the tails grown past their bound into
** rows numbered horizon), and moves the cursor past them. When no term is
** left, the pass deletes its rows and base becomes horizon. Meanwhile the
** folded terms are both in their tails and in the rows (postgres_batches.c
** says why reading both is exact), and later flushes add rows above the
** horizon, which the next pass takes.
**
** Why a pass over many rows: a term that k flushes of the pass changed
** costs one upsert instead of k. With the benchmarks' corpus (Zipf over a
** 20 000-word vocabulary), 16 calls of 500 records change ~11 000 distinct
** terms where each call alone changes ~2 000: a step folds about a third of
** what a call wrote. A pass begins when FOLD_START rows wait, and its
** budget spreads its terms over FOLD_STEPS steps, so rows waiting stay
** below about FOLD_START + FOLD_STEPS flushes' worth, and a step's cost is
** bounded by what the pass holds, not by the term index's size.
**
** Crash safety: the step, the rows it deletes and the state it moves are
** the write transaction's: a killed server's step is rolled back with it.
*/
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"
#include "store/sqlite_segments.h"

/* Rows waiting at which a pass begins. */
#define FOLD_START 16
/* Steps a pass's terms are spread over. */
#define FOLD_STEPS 16
/* Terms a step folds at least (a small pass is folded in a step or two). */
#define FOLD_MIN 512

#define SQL_DROP "DELETE FROM a2m_batches WHERE id > $1 AND id <= $2"

/* The distinct terms of the rows (a pass's size). */
static size_t distinct(pg_walk *w)
{
	size_t d = 0, n;
	const pg_batch_term *t;
	memset(w->at, 0, w->k * sizeof *w->at);
	while ((t = a2m_pg_walk_next(w))) {
		a2m_pg_walk_take(w, t, NULL, &n);
		d++;
	}
	return d;
}

/* Sets f's cursor to term. Returns 0, or -1 when memory runs out. */
static int set_cursor(pg_fold *f, const unsigned char *term, size_t len)
{
	unsigned char *c = realloc(f->cursor, len ? len : 1);
	if (!c)
		return -1;
	memcpy(c, term, len);
	f->cursor = c;
	f->cursor_len = len;
	f->has_cursor = 1;
	return 0;
}

/*
** Merges the next budget terms of w into lists (one per term, their bytes
** in out). *n gets how many; *more whether terms are left after them.
** Returns 0, -1 when memory runs out, -2 when a list is corrupt.
*/
static int gather(pg_walk *w, int64_t budget, pg_term_list **lists, size_t *n, size_t *cap,
		  a2m_seg_bytes *out, int *more)
{
	a2m_seg_list *in = malloc((w->k ? w->k : 1) * sizeof *in);
	const pg_batch_term *t;
	int rc = 0;
	*n = 0;
	if (!in)
		return -1;
	while ((int64_t)*n < budget && (t = a2m_pg_walk_next(w))) {
		size_t k, at = out->n;
		int64_t entries = 0, last = 0;
		const pg_batch_term term = *t;
		a2m_pg_walk_take(w, t, in, &k);
		if ((rc = a2m_pg_segs_merge(in, k, out, &entries, &last)))
			break;
		if (a2m_seg_grow(lists, cap, *n + 1, sizeof **lists) != 0) {
			rc = -1;
			break;
		}
		/* An offset for now: out may still move. */
		(*lists)[(*n)++] = (pg_term_list){(const char *)term.term, term.tlen,
						  (const unsigned char *)(uintptr_t)at, out->n - at,
						  entries, last};
	}
	free(in);
	if (rc)
		return rc;
	for (size_t i = 0; i < *n; i++)
		(*lists)[i].data = out->p + (uintptr_t)(*lists)[i].data;
	*more = a2m_pg_walk_next(w) != NULL;
	return 0;
}

/* Ends the pass: its rows deleted, base moved to its horizon. */
static int end_pass(pgstore *s, pg_fold *f)
{
	pgparams p;
	PGresult *r;
	a2m_pg_params_init(&p);
	a2m_pg_param_int8(&p, f->base);
	a2m_pg_param_int8(&p, f->horizon);
	int rc = a2m_pg_run_named(s, &s->main, "a2m_fold_drop", SQL_DROP, &p, "index", &r);
	if (rc)
		return rc;
	s->pq->clear(r);
	f->base = f->horizon;
	f->has_cursor = 0;
	f->cursor_len = 0;
	f->dirty = 1;
	return 0;
}

int a2m_pg_fold_step(pgstore *s, pg_fold *f)
{
	int rc;
	if (f->horizon == f->base && f->last - f->base < FOLD_START)
		return 0;
	if ((rc = a2m_pg_batches_sync(s, &s->main, f->base, f->last)))
		return rc;
	const a2m_pg_batches *b = s->main.batches;
	size_t k = 0;
	if (f->horizon == f->base)
		f->horizon = f->last;
	while (k < b->n && b->v[k].id <= f->horizon)
		k++;
	pg_walk w = {b->v, k, calloc(k ? k : 1, sizeof(size_t))};
	if (!w.at)
		return a2m_store_fail(&s->base, "index: out of memory");
	f->dirty = 1;
	if (!f->has_cursor && f->budget <= 0) {
		/* A new pass: its budget spreads its terms over FOLD_STEPS steps. */
		int64_t d = (int64_t)distinct(&w);
		f->budget = (d + FOLD_STEPS - 1) / FOLD_STEPS;
		if (f->budget < FOLD_MIN)
			f->budget = FOLD_MIN;
	}
	for (size_t i = 0; i < k; i++)
		w.at[i] = f->has_cursor ? a2m_pg_batch_after(&b->v[i], f->cursor, f->cursor_len) : 0;
	pg_term_list *lists = NULL;
	size_t n = 0, cap = 0;
	a2m_seg_bytes out = {0};
	int more = 0;
	rc = gather(&w, f->budget, &lists, &n, &cap, &out, &more);
	if (rc)
		rc = rc == -2 ? a2m_store_fail(&s->base, "index: a batch row of the term index is"
					       " corrupt (a2m check --postgres --repair rebuilds it)")
			      : a2m_store_fail(&s->base, "index: out of memory");
	/* Sealed rows take the pass's horizon: above every row of the terms' before it. */
	if (!rc && n)
		rc = a2m_pg_segs_write(s, lists, n, f->horizon);
	if (!rc && more && set_cursor(f, (const unsigned char *)lists[n - 1].term,
				      lists[n - 1].len) != 0)
		rc = a2m_store_fail(&s->base, "index: out of memory");
	if (!rc && !more) {
		rc = end_pass(s, f);
		f->budget = 0;
	}
	free(lists);
	free(out.p);
	free(w.at);
	return rc;
}
