/*
** postgres_batches.c — the term index's newest postings: one row of
** a2m_batches per flush, holding every term the flush changed, and each
** connection's cache of those rows.
**
** Why: a flush appended one chunk to each term's tail row (postgres_segments.c),
** an upsert per term, an index probe and a row update each: ~2 000 of them
** for a call of 500 records, more than half of PostgreSQL's time in a
** batched remember (docs/BENCHMARKS.md). A flush now writes one row (id,
** n, data), data being its terms in ascending order, each
**
**   varint(length) term  varint(size) list
**
** (the SQLite segments' block, sqlite_segments.h; a list as a tail's chunk
** holds it). Later write transactions fold those rows into the terms' tail
** and sealed rows in bounded steps (postgres_fold.c), where a term that
** many flushes changed costs one upsert for all of them.
**
** Ids: a2m_state.batch_last is the last id given out, fold_base the last
** id folded away, so the rows a snapshot holds are exactly the ids
** (fold_base, batch_last]; both move only under the deployment's write
** lock, in the committing UPDATE of the state row. Ids grow with commit
** order, and a committed id never names other bytes: a transaction that
** rolls back gave out ids the next one gives again, so the writer drops
** its own from its cache at a rollback (a2m_pg_batches_evict_above).
**
** Reading: a term's lists in age order are its sealed rows, its tail, then
** its list in each batch of the snapshot by id. A folded term may be in
** its tail and, until the pass that folded it ends, in the batch rows too
** (postgres_fold.c): the same entries twice, the later copy winning, which
** resolves to what one copy would. Each connection keeps the batch rows it
** read (they never change), indexed by term, and a read of a term fetches
** only the rows of its snapshot it lacks, all at once: a recall's terms
** look in memory for the batches and read the rest as before.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"
#include "store/sqlite_segments.h"

/* Batch rows a snapshot may name: a fold keeps a few dozen waiting (postgres_fold.c). */
#define MAX_WAITING 100000

#define SQL_PUT "INSERT INTO a2m_batches (id, n, data) VALUES ($1, $2, $3)"
#define SQL_GET "SELECT id, data FROM a2m_batches WHERE id = ANY($1::int8[]) ORDER BY id"

void a2m_pg_batches_free(a2m_pg_batches *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++) {
		free(b->v[i].data);
		free(b->v[i].terms);
	}
	free(b->v);
	free(b);
}

/* Drops b->v[i]. */
static void drop(a2m_pg_batches *b, size_t i)
{
	free(b->v[i].data);
	free(b->v[i].terms);
	memmove(&b->v[i], &b->v[i + 1], (b->n - i - 1) * sizeof *b->v);
	b->n--;
}

void a2m_pg_batches_evict_above(pgconn *c, int64_t id)
{
	a2m_pg_batches *b = c->batches;
	while (b && b->n && b->v[b->n - 1].id > id)
		drop(b, b->n - 1);
}

/* Drops the cached rows outside (base, last]. */
static void evict_outside(a2m_pg_batches *b, int64_t base, int64_t last)
{
	size_t k = 0;
	for (size_t i = 0; i < b->n; i++) {
		if (b->v[i].id > base && b->v[i].id <= last) {
			b->v[k++] = b->v[i];
			continue;
		}
		free(b->v[i].data);
		free(b->v[i].terms);
	}
	b->n = k;
}

/* Where id goes in b (the first cached row with an id not below it). */
static size_t find_id(const a2m_pg_batches *b, int64_t id)
{
	size_t lo = 0, hi = b->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (b->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
** Adds the row id whose bytes are data (size of them; taken over, freed
** on failure too) to b, its terms indexed. Returns 0, -1 when memory runs
** out, -2 when the bytes are not terms in ascending order with their lists.
*/
static int add(a2m_pg_batches *b, int64_t id, unsigned char *data, size_t size)
{
	pg_batch row = {id, data, size, NULL, 0};
	size_t cap = 0;
	const unsigned char *p = data, *end = data + size, *term, *list;
	size_t tlen, lsize;
	int got, rc = 0;
	while ((got = a2m_seg_next_in_block(&p, end, &term, &tlen, &list, &lsize)) > 0) {
		if (row.nterms &&
		    a2m_seg_cmp_terms(row.terms[row.nterms - 1].term, row.terms[row.nterms - 1].tlen,
				      term, tlen) >= 0) {
			rc = -2;
			break;
		}
		if (a2m_seg_grow(&row.terms, &cap, row.nterms + 1, sizeof *row.terms) != 0) {
			rc = -1;
			break;
		}
		row.terms[row.nterms++] = (pg_batch_term){term, list, tlen, lsize};
	}
	if (!rc && got < 0)
		rc = -2;
	size_t at = find_id(b, id);
	if (!rc && at < b->n && b->v[at].id == id)
		rc = -2;  /* one id, two rows: never from a snapshot */
	if (!rc && a2m_seg_grow(&b->v, &b->cap, b->n + 1, sizeof *b->v) != 0)
		rc = -1;
	if (rc) {
		free(row.terms);
		free(data);
		return rc;
	}
	memmove(&b->v[at + 1], &b->v[at], (b->n - at) * sizeof *b->v);
	b->v[at] = row;
	b->n++;
	return 0;
}

/* c's cache, made at its first use (NULL when memory runs out). */
static a2m_pg_batches *cache_of(pgconn *c)
{
	if (!c->batches)
		c->batches = calloc(1, sizeof *c->batches);
	return c->batches;
}

int a2m_pg_batches_plan(pgstore *s, pgconn *c, int64_t base, int64_t last, pgbatchget *g)
{
	a2m_pg_batches *b = cache_of(c);
	g->want = 0;
	a2m_pg_array_begin(&g->ids, PG_OID_INT8);
	if (!b)
		return a2m_store_fail(&s->base, "index: out of memory");
	/* A fold keeps them to a few dozen: far more is a damaged state row, not a wait. */
	if (last < base || last - base > MAX_WAITING)
		return a2m_store_fail(&s->base, "index: the state row names batch rows (%lld, %lld]:"
				      " not what a fold leaves (a2m check --postgres --repair rebuilds"
				      " the index)", (long long)base, (long long)last);
	evict_outside(b, base, last);
	if ((int64_t)b->n == last - base)
		return 0;
	/* The ids of the snapshot the cache lacks. */
	size_t at = 0;
	for (int64_t id = base + 1; id <= last; id++) {
		while (at < b->n && b->v[at].id < id)
			at++;
		if (at < b->n && b->v[at].id == id)
			continue;
		a2m_pg_array_int8(&g->ids, id);
		g->want++;
	}
	if (a2m_pg_array_end(&g->ids) != 0)
		return a2m_store_fail(&s->base, "index: out of memory");
	a2m_pg_params_init(&g->p);
	a2m_pg_param_bytea(&g->p, g->ids.buf, g->ids.len);
	g->step = (pgstep){.st = PG_NSTMTS, .sql = SQL_GET, .p = &g->p, .keep = 1,
			   .name = "a2m_batch_get"};
	return 0;
}

int a2m_pg_batches_absorb(pgstore *s, pgconn *c, pgbatchget *g, const PGresult *r)
{
	a2m_pg_batches *b = c->batches;
	int rows = s->pq->ntuples(r), rc = 0;
	for (int i = 0; i < rows && !rc; i++) {
		size_t size = (size_t)s->pq->getlength(r, i, 1);
		unsigned char *data = malloc(size ? size : 1);
		if (!data) {
			rc = -1;
			break;
		}
		memcpy(data, s->pq->getvalue(r, i, 1), size);
		rc = add(b, a2m_pg_int8(s, r, i, 0), data, size);
	}
	if (rc == -1)
		return a2m_store_fail(&s->base, "index: out of memory");
	if (rc || (size_t)rows != g->want)
		return a2m_store_fail(&s->base, "index: %s (a2m check --postgres --repair rebuilds"
				      " the index)", rc ? "a batch row of the term index is corrupt"
				      : "a batch row of the term index is missing");
	return 0;
}

int a2m_pg_batches_sync(pgstore *s, pgconn *c, int64_t base, int64_t last)
{
	pgbatchget g;
	PGresult *r;
	int rc = a2m_pg_batches_plan(s, c, base, last, &g);
	if (!rc && g.want &&
	    !(rc = a2m_pg_run_named(s, c, g.step.name, g.step.sql, &g.p, "index_postings", &r))) {
		rc = a2m_pg_batches_absorb(s, c, &g, r);
		s->pq->clear(r);
	}
	a2m_pg_array_free(&g.ids);
	return rc;
}

const pg_batch_term *a2m_pg_batch_find(const pg_batch *row, const char *term, size_t len)
{
	/* The last term not after it, if it is the term. */
	size_t at = a2m_pg_batch_after(row, (const unsigned char *)term, len);
	const pg_batch_term *t = at ? &row->terms[at - 1] : NULL;
	return t && a2m_seg_cmp_terms(t->term, t->tlen, (const unsigned char *)term, len) == 0 ? t
											     : NULL;
}

int a2m_pg_batches_put(pgstore *s, int64_t id, const pg_term_list *t, size_t n)
{
	a2m_seg_bytes out = {0};
	int64_t entries = 0;
	for (size_t i = 0; i < n; i++) {
		if (a2m_seg_reserve(&out, 20 + t[i].len + t[i].size) != 0) {
			free(out.p);
			return a2m_store_fail(&s->base, "index: out of memory");
		}
		out.n += a2m_seg_put_varint(out.p + out.n, t[i].len);
		memcpy(out.p + out.n, t[i].term, t[i].len);
		out.n += t[i].len;
		out.n += a2m_seg_put_varint(out.p + out.n, t[i].size);
		memcpy(out.p + out.n, t[i].data, t[i].size);
		out.n += t[i].size;
		entries += t[i].entries;
	}
	pgparams p;
	PGresult *r;
	a2m_pg_params_init(&p);
	a2m_pg_param_int8(&p, id);
	a2m_pg_param_int8(&p, entries);
	a2m_pg_param_bytea(&p, out.p ? (const void *)out.p : "", out.n);
	int rc = a2m_pg_run_named(s, &s->main, "a2m_batch_put", SQL_PUT, &p, "index", &r);
	if (rc) {
		free(out.p);
		return rc;
	}
	s->pq->clear(r);
	/* The writer reads its own row from memory; its terms are in order already. */
	a2m_pg_batches *b = cache_of(&s->main);
	int got = b ? add(b, id, out.p ? out.p : malloc(1), out.n) : -1;
	if (!b)
		free(out.p);
	return got ? a2m_store_fail(&s->base, "index: out of memory") : 0;
}

size_t a2m_pg_batch_after(const pg_batch *row, const unsigned char *term, size_t len)
{
	size_t lo = 0, hi = row->nterms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a2m_seg_cmp_terms(row->terms[mid].term, row->terms[mid].tlen, term, len) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const pg_batch_term *a2m_pg_walk_next(const pg_walk *w)
{
	const pg_batch_term *best = NULL;
	for (size_t i = 0; i < w->k; i++) {
		if (w->at[i] == w->rows[i].nterms)
			continue;
		const pg_batch_term *t = &w->rows[i].terms[w->at[i]];
		if (!best || a2m_seg_cmp_terms(t->term, t->tlen, best->term, best->tlen) < 0)
			best = t;
	}
	return best;
}

void a2m_pg_walk_take(pg_walk *w, const pg_batch_term *t, struct a2m_seg_list *lists, size_t *n)
{
	const unsigned char *term = t->term;
	size_t len = t->tlen;
	*n = 0;
	for (size_t i = 0; i < w->k; i++) {
		if (w->at[i] == w->rows[i].nterms)
			continue;
		const pg_batch_term *h = &w->rows[i].terms[w->at[i]];
		if (a2m_seg_cmp_terms(h->term, h->tlen, term, len) != 0)
			continue;
		if (lists)
			a2m_seg_list_init(&lists[*n], h->list, h->lsize);
		(*n)++;
		w->at[i]++;
	}
}
