/*
** select.c — what a selection picks (stack.h, a2m_selection): the visible
** records its exact part, scope and `where` let through, read in creation
** order (a2m_stack_select_records, under timeline and every file that must
** read records to act on them), or by ids, or by a query's relevance
** (a2m_stack_select, under forget). Reads only: nothing here writes.
*/
#include <stdlib.h>
#include <string.h>

#include "stack/stack_internal.h"
#include "stack/where.h"
#include "util/clock.h"
#include "util/grow.h"

/* The string (or JSON null: none) a `where` value asks a field to equal. */
static int where_equals(const json_t *v, const char **out)
{
	if (json_is_null(v)) {
		*out = NULL;
		return 1;
	}
	if (!json_is_string(v))
		return 0;
	*out = json_string_value(v);
	return 1;
}

void a2m_stack_narrow_by_where(const a2m_stack *st, const json_t *where, a2m_query *q)
{
	const char *v;
	if (!where)
		return;
	/* Only what the store can test exactly narrows; `where` itself is still
	** applied to every record, so an odd value (a number, a string with a
	** NUL) just selects a superset of what it matches. */
	if ((st->cfg.fields & A2M_FIELD_SESSION) && !q->by_session &&
	    where_equals(json_object_get(where, "session"), &v)) {
		q->by_session = 1;
		q->session = v;
	}
	if ((st->cfg.fields & A2M_FIELD_TIER) && !q->tier &&
	    where_equals(json_object_get(where, "tier"), &v) && v)
		q->tier = v;
	/*
	** x-where: a key's prefix, or the key itself (a prefix of itself), is
	** the store's key_prefix; a range of creation times, its created
	** bounds (store.h), which it reads in (created_at, seq) order.
	*/
	const json_t *key = json_object_get(where, "key");
	const json_t *prefix = json_is_object(key) ? json_object_get(key, "$prefix") : key;
	if ((st->cfg.fields & A2M_FIELD_KEY) && !q->key_prefix && json_is_string(prefix) &&
	    strlen(json_string_value(prefix)) == json_string_length(prefix))
		q->key_prefix = json_string_value(prefix);
	int64_t lo, hi;
	a2m_where_created_range(where, &lo, &hi);
	if (lo && (!q->created_min || lo > q->created_min))
		q->created_min = lo;
	if (hi && (!q->created_max || hi < q->created_max))
		q->created_max = hi;
}

int a2m_stack_collect_visit(const a2m_record *rec, void *ctx)
{
	collect *c = ctx;
	a2m_record tmp;
	rec = a2m_stack_touched(c->st, rec, &tmp);
	if ((!c->sel->with_expired && a2m_stack_expired(rec, c->now)) ||
	    !a2m_stack_visible(c->st, &c->sel->scope, rec))
		return 0;
	int m = a2m_where_matches(c->sel->where, rec, c->st->cfg.fields);
	if (m < 0) {
		c->oom = 1;
		return -1;
	}
	if (!m)
		return 0;
	if (a2m_grow((void **)&c->recs, &c->cap, c->n + 1, sizeof *c->recs)) {
		c->oom = 1;
		return -1;
	}
	a2m_record *copy = a2m_record_dup(rec);
	if (!copy) {
		c->oom = 1;
		return -1;
	}
	c->recs[c->n++] = copy;
	return c->stop_at && c->n >= c->stop_at ? 1 : 0;
}

static int cmp_seq(const void *a, const void *b)
{
	const a2m_record *x = *(a2m_record *const *)a, *y = *(a2m_record *const *)b;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/*
** A `where` naming ids (a string, or an array of at most ids_max strings):
** the records are read by id instead of scanning the store, then put in the
** scan's order. A federating router reads and touches records by id this
** way (docs/FEDERATION.md). Returns 1 when it applied, 0 when where names
** no ids so, -1 on a store error (rc set).
*/
static int select_by_ids(a2m_stack *st, const a2m_query *q, collect *c, int *rc)
{
	const json_t *ids = json_object_get(c->sel->where, "id");
	size_t n = json_is_string(ids) ? 1 : json_array_size(ids);
	if (!ids || (!json_is_string(ids) && !json_is_array(ids)) || n > 1000)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!json_is_string(json_is_string(ids) ? ids : json_array_get(ids, i)))
			return 0;
	size_t stop_at = c->stop_at;
	c->stop_at = 0;
	for (size_t i = 0; i < n && !c->oom; i++) {
		const json_t *v = json_is_string(ids) ? ids : json_array_get(ids, i);
		a2m_record *rec = NULL;
		if ((*rc = st->store->ops->get(st->store, json_string_value(v), &rec)) != 0)
			return -1;
		int dup = 0;
		for (size_t k = 0; rec && k < c->n && !dup; k++)
			dup = strcmp(c->recs[k]->id, rec->id) == 0;
		if (rec && !dup && a2m_query_matches(q, rec))
			a2m_stack_collect_visit(rec, c);
		a2m_record_free(rec);
	}
	if (c->n > 1)
		qsort(c->recs, c->n, sizeof *c->recs, cmp_seq);
	if (q->descending)
		for (size_t i = 0; i < c->n / 2; i++) {
			a2m_record *t = c->recs[i];
			c->recs[i] = c->recs[c->n - 1 - i];
			c->recs[c->n - 1 - i] = t;
		}
	while (stop_at && c->n > stop_at)
		a2m_record_free(c->recs[--c->n]);
	c->stop_at = stop_at;
	return 1;
}

int a2m_stack_select_records(a2m_stack *st, const a2m_selection *sel, int descending,
			     size_t stop_at, collect *c, a2m_error *err)
{
	memset(c, 0, sizeof *c);
	c->st = st;
	c->sel = sel;
	c->stop_at = stop_at;
	c->now = a2m_clock_now_ms();
	a2m_query q = sel->q;
	q.descending = descending;
	a2m_stack_narrow_by_where(st, sel->where, &q);
	int rc = 0;
	if (select_by_ids(st, &q, c, &rc) == 0)
		rc = st->store->ops->scan(st->store, &q, a2m_stack_collect_visit, c);
	if (rc || c->oom) {
		a2m_record_array_free(c->recs, c->n);
		c->recs = NULL;
		c->n = 0;
		if (c->oom)
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		return a2m_stack_store_error(st, err, rc);
	}
	return 0;
}

int a2m_stack_timeline(a2m_stack *st, const a2m_selection *sel, size_t limit,
		       a2m_record ***out, size_t *n, a2m_error *err)
{
	collect c;
	/* With a limit, walk newest first and stop at limit; then reverse. */
	int rc = a2m_stack_select_records(st, sel, limit != 0, limit, &c, err);
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

int a2m_stack_select(a2m_stack *st, const a2m_selection *sel, const char *const *ids,
		     size_t n_ids, const char *query, size_t limit, a2m_record ***out,
		     size_t *n, a2m_error *err)
{
	a2m_store *s = st->store;
	collect c;
	int rc = 0;
	*out = NULL;
	*n = 0;
	if (ids) {
		memset(&c, 0, sizeof c);
		c.st = st;
		c.sel = sel;
		c.now = a2m_clock_now_ms();
		for (size_t i = 0; i < n_ids && !c.oom; i++) {
			a2m_record *rec = NULL;
			if ((rc = s->ops->get(s, ids[i], &rec))) {
				a2m_record_array_free(c.recs, c.n);
				return a2m_stack_store_error(st, err, rc);
			}
			int dup = 0;
			for (size_t k = 0; rec && k < c.n; k++)
				dup |= strcmp(c.recs[k]->id, rec->id) == 0;
			if (rec && !dup && a2m_query_matches(&sel->q, rec))
				a2m_stack_collect_visit(rec, &c);
			a2m_record_free(rec);
		}
		if (c.oom) {
			a2m_record_array_free(c.recs, c.n);
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		}
	} else if (query && st->scorer->candidates) {
		/* The index names the candidates (see a2m_stack_recall). */
		a2m_rank_query rq = {.text = query};
		a2m_hit *hits = NULL;
		size_t kept = 0;
		rc = a2m_stack_ranked(st, sel, &rq, limit, -1, 0, &hits, &kept, err);
		if (rc < 0)
			return rc;
		/* An abstaining scorer cannot say what the query selects: nothing. */
		if (rc == A2M_SCORER_ABSTAIN)
			return 0;
		if (rc == 0) {
			a2m_record **recs = calloc(kept + 1, sizeof *recs);
			if (!recs) {
				a2m_hits_free(hits, kept);
				return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
			}
			for (size_t i = 0; i < kept; i++)
				recs[i] = hits[i].rec;
			free(hits);
			*out = recs;
			*n = kept;
			return 0;
		}
		/* SCAN: fall through to judging a scan. */
		if ((rc = a2m_stack_select_records(st, sel, 0, 0, &c, err)))
			return rc;
	} else if ((rc = a2m_stack_select_records(st, sel, 0, 0, &c, err))) {
		return rc;
	}
	if (query && c.n) {
		a2m_rank_query rq = {.text = query};
		a2m_hit *hits = calloc(c.n, sizeof *hits);
		double *rel = calloc(c.n, sizeof *rel);
		if (!hits || !rel) {
			free(hits);
			free(rel);
			a2m_record_array_free(c.recs, c.n);
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		}
		unsigned failures = a2m_store_failures_here();
		rc = st->scorer->relevance(st->scorer, st->store, &rq,
					   (const a2m_record *const *)c.recs, c.n, rel);
		if (rc < 0) {
			free(hits);
			free(rel);
			a2m_record_array_free(c.recs, c.n);
			return a2m_stack_scorer_error(st, err, rc, failures);
		}
		/* An abstaining scorer cannot say what the query selects: nothing. */
		size_t kept = 0;
		for (size_t i = 0; i < c.n; i++) {
			if (rc == 0 && rel[i] > 0) {
				hits[kept].rec = c.recs[i];
				hits[kept++].score = rel[i];
			} else {
				a2m_record_free(c.recs[i]);
			}
		}
		rc = 0;
		qsort(hits, kept, sizeof *hits, a2m_stack_hit_cmp);
		for (size_t i = 0; i < kept; i++)
			c.recs[i] = hits[i].rec;
		c.n = kept;
		free(hits);
		free(rel);
	}
	if (limit && c.n > limit) {
		for (size_t i = limit; i < c.n; i++)
			a2m_record_free(c.recs[i]);
		c.n = limit;
	}
	*out = c.recs;
	*n = c.n;
	return 0;
}
