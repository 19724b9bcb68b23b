/*
** stack.c — write placement, recall ranking, timeline and forget policy
** (see stack.h).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stack/stack.h"
#include "stack/where.h"
#include "util/clock.h"
#include "util/text.h"

#define DAY_MS (24.0 * 3600 * 1000)

a2m_stack *a2m_stack_new(a2m_store *store, a2m_scorer *scorer,
			 const a2m_stack_config *cfg)
{
	a2m_stack *st = calloc(1, sizeof *st);
	if (!st) {
		store->ops->close(store);
		scorer->destroy(scorer);
		return NULL;
	}
	st->store = store;
	st->scorer = scorer;
	st->cfg = *cfg;
	if (st->cfg.half_life_ms <= 0)
		st->cfg.half_life_ms = DAY_MS;
	return st;
}

void a2m_stack_free(a2m_stack *st)
{
	if (!st)
		return;
	st->store->ops->close(st->store);
	st->scorer->destroy(st->scorer);
	free(st);
}

void a2m_hits_free(a2m_hit *hits, size_t n)
{
	if (!hits)
		return;
	for (size_t i = 0; i < n; i++)
		a2m_record_free(hits[i].rec);
	free(hits);
}

/* Maps a store failure to an INTERNAL_ERROR the client can read. */
static int store_error(a2m_stack *st, a2m_error *err, int rc)
{
	return a2m_error_set(err, rc < 0 ? rc : A2M_INTERNAL_ERROR, "storage: %s",
			     st->store->errmsg[0] ? st->store->errmsg : "failed");
}

int a2m_stack_remember(a2m_stack *st, a2m_record **recs, size_t n, a2m_error *err)
{
	a2m_store *s = st->store;
	int64_t now = a2m_clock_now_ms();
	int rc = s->ops->begin(s);
	if (rc)
		return store_error(st, err, rc);
	for (size_t i = 0; i < n; i++) {
		a2m_record *rec = recs[i];
		if (rec->id) {
			a2m_record *old = NULL;
			rc = s->ops->get(s, rec->id, &old);
			if (rc)
				goto fail;
			if (old) {
				/* Idempotent retry: the record stands as first written. */
				a2m_record_free(old);
				continue;
			}
		} else {
			char id[A2M_ID_LEN];
			if (a2m_id_generate(now, id) != 0) {
				rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "no random source for ids");
				goto fail_set;
			}
			rec->id = strdup(id);
			if (!rec->id) {
				rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
				goto fail_set;
			}
		}
		rec->created_at = now;
		rc = s->ops->insert(s, rec);
		if (rc)
			goto fail;
	}
	rc = s->ops->commit(s);
	if (rc)
		goto fail;
	return 0;
fail:
	store_error(st, err, rc);
fail_set:
	s->ops->rollback(s);
	return err ? err->code : rc;
}

/* Collects copies of the records a selection picks. */
typedef struct collect {
	const a2m_selection *sel;
	unsigned             fields;
	a2m_record         **recs;
	size_t               n, cap;
	size_t               stop_at;  /* 0 = collect all */
	int                  oom;
} collect;

static int collect_visit(const a2m_record *rec, void *ctx)
{
	collect *c = ctx;
	if (!a2m_where_matches(c->sel->where, rec, c->fields))
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		a2m_record **p = realloc(c->recs, cap * sizeof *p);
		if (!p) {
			c->oom = 1;
			return -1;
		}
		c->recs = p;
		c->cap = cap;
	}
	a2m_record *copy = a2m_record_dup(rec);
	if (!copy) {
		c->oom = 1;
		return -1;
	}
	c->recs[c->n++] = copy;
	return c->stop_at && c->n >= c->stop_at ? 1 : 0;
}

static int select_records(a2m_stack *st, const a2m_selection *sel, int descending,
			  size_t stop_at, collect *c, a2m_error *err)
{
	memset(c, 0, sizeof *c);
	c->sel = sel;
	c->fields = st->cfg.fields;
	c->stop_at = stop_at;
	a2m_query q = sel->q;
	q.descending = descending;
	int rc = st->store->ops->scan(st->store, &q, collect_visit, c);
	if (rc || c->oom) {
		a2m_record_array_free(c->recs, c->n);
		c->recs = NULL;
		c->n = 0;
		if (c->oom)
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		return store_error(st, err, rc);
	}
	return 0;
}

/* Higher score first; then newer first, so ties read like a recency list. */
static int hit_cmp(const void *a, const void *b)
{
	const a2m_hit *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->rec->created_at != y->rec->created_at)
		return x->rec->created_at > y->rec->created_at ? -1 : 1;
	return x->rec->seq > y->rec->seq ? -1 : (x->rec->seq < y->rec->seq);
}

/* 1 for a record created now, halving every half-life. */
static double recency(const a2m_stack *st, int64_t now, int64_t created)
{
	double age = (double)(now - created);
	if (age < 0)
		age = 0;
	return exp2(-age / st->cfg.half_life_ms);
}

int a2m_stack_recall(a2m_stack *st, const a2m_selection *sel, const char *query,
		     double min_score, size_t limit, a2m_hit **out, size_t *n,
		     a2m_error *err)
{
	*out = NULL;
	*n = 0;
	collect c;
	int rc = select_records(st, sel, 1, 0, &c, err);
	if (rc)
		return rc;
	a2m_hit *hits = calloc(c.n + 1, sizeof *hits);
	double *rel = calloc(c.n + 1, sizeof *rel);
	if (!hits || !rel) {
		rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		goto done;
	}
	int judged = 0;
	if (query && *query && c.n) {
		rc = st->scorer->relevance(st->scorer, query, (const a2m_record *const *)c.recs,
					   c.n, rel);
		if (rc < 0) {
			a2m_error_set(err, rc, "scorer %s failed", st->scorer->name);
			goto done;
		}
		judged = rc == 0;
		rc = 0;
	}
	int64_t now = a2m_clock_now_ms();
	size_t kept = 0;
	for (size_t i = 0; i < c.n; i++) {
		double r = recency(st, now, c.recs[i]->created_at);
		double score;
		if (judged) {
			/* Judged and no match: not recalled (DECISIONS 013). */
			if (rel[i] <= 0)
				continue;
			score = rel[i] * (0.8 + 0.2 * r);
		} else {
			score = r;
		}
		if (score < min_score)
			continue;
		hits[kept].rec = c.recs[i];
		hits[kept].score = score;
		c.recs[i] = NULL;
		kept++;
	}
	qsort(hits, kept, sizeof *hits, hit_cmp);
	if (limit && kept > limit) {
		for (size_t i = limit; i < kept; i++)
			a2m_record_free(hits[i].rec);
		kept = limit;
	}
	*out = hits;
	*n = kept;
	hits = NULL;
done:
	free(rel);
	free(hits);
	a2m_record_array_free(c.recs, c.n);
	return rc;
}

int a2m_stack_timeline(a2m_stack *st, const a2m_selection *sel, size_t limit,
		       a2m_record ***out, size_t *n, a2m_error *err)
{
	collect c;
	/* With a limit, walk newest first and stop at limit; then reverse. */
	int rc = select_records(st, sel, limit != 0, limit, &c, err);
	if (rc)
		return rc;
	if (limit) {
		for (size_t i = 0; i < c.n / 2; i++) {
			a2m_record *t = c.recs[i];
			c.recs[i] = c.recs[c.n - 1 - i];
			c.recs[c.n - 1 - i] = t;
		}
	}
	*out = c.recs;
	*n = c.n;
	return 0;
}

int a2m_stack_forget(a2m_stack *st, const a2m_selection *sel,
		     const char *const *ids, size_t n_ids, const char *query,
		     int64_t *forgotten, a2m_error *err)
{
	a2m_store *s = st->store;
	collect c;
	int rc;
	*forgotten = 0;
	if (ids) {
		memset(&c, 0, sizeof c);
		c.sel = sel;
		c.fields = st->cfg.fields;
		for (size_t i = 0; i < n_ids; i++) {
			a2m_record *rec = NULL;
			rc = s->ops->get(s, ids[i], &rec);
			if (rc) {
				a2m_record_array_free(c.recs, c.n);
				return store_error(st, err, rc);
			}
			if (rec && a2m_query_matches(&sel->q, rec))
				collect_visit(rec, &c);
			a2m_record_free(rec);
			if (c.oom) {
				a2m_record_array_free(c.recs, c.n);
				return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
			}
		}
	} else {
		rc = select_records(st, sel, 0, 0, &c, err);
		if (rc)
			return rc;
	}
	double *rel = NULL;
	if (query && c.n) {
		rel = calloc(c.n, sizeof *rel);
		if (!rel) {
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
			goto done;
		}
		rc = st->scorer->relevance(st->scorer, query, (const a2m_record *const *)c.recs,
					   c.n, rel);
		if (rc < 0) {
			a2m_error_set(err, rc, "scorer %s failed", st->scorer->name);
			goto done;
		}
		if (rc == A2M_SCORER_ABSTAIN)
			memset(rel, 0, c.n * sizeof *rel); /* cannot judge: delete nothing */
		rc = 0;
	}
	rc = s->ops->begin(s);
	if (rc) {
		store_error(st, err, rc);
		goto done;
	}
	int64_t count = 0;
	for (size_t i = 0; i < c.n; i++) {
		if (rel && rel[i] <= 0)
			continue;
		int removed = 0;
		rc = s->ops->remove(s, c.recs[i]->id, &removed);
		if (rc) {
			store_error(st, err, rc);
			s->ops->rollback(s);
			goto done;
		}
		count += removed;
	}
	rc = s->ops->commit(s);
	if (rc) {
		store_error(st, err, rc);
		s->ops->rollback(s);
		goto done;
	}
	*forgotten = count;
done:
	free(rel);
	a2m_record_array_free(c.recs, c.n);
	return rc ? (err && err->code ? err->code : rc) : 0;
}
