/*
** stack.c — writes, reads and deletes under the tier policy (see stack.h);
** the movement between tiers is in flow.c.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stack/stack_internal.h"
#include "stack/where.h"
#include "util/clock.h"
#include "util/text.h"

#define DAY_MS (24.0 * 3600 * 1000)
#define META_DIMS "embedding_dims"

a2m_stack *a2m_stack_new(a2m_store *store, a2m_scorer *scorer, a2m_stack_config *cfg)
{
	a2m_stack *st = calloc(1, sizeof *st);
	if (!st) {
		store->ops->close(store);
		scorer->destroy(scorer);
		a2m_tiers_free(&cfg->tiers);
		return NULL;
	}
	st->store = store;
	st->scorer = scorer;
	st->cfg = *cfg;
	memset(&cfg->tiers, 0, sizeof cfg->tiers);
	st->dims = -1;
	st->counts = calloc(st->cfg.tiers.n + 1, sizeof *st->counts);
	if (!st->counts) {
		a2m_stack_free(st);
		return NULL;
	}
	return st;
}

void a2m_stack_free(a2m_stack *st)
{
	if (!st)
		return;
	st->store->ops->close(st->store);
	st->scorer->destroy(st->scorer);
	a2m_tiers_free(&st->cfg.tiers);
	free(st->counts);
	free(st);
}

void a2m_stack_on_change(a2m_stack *st, a2m_change_fn fn, void *ctx)
{
	st->on_change = fn;
	st->on_change_ctx = ctx;
}

const a2m_tier_layout *a2m_stack_tiers(const a2m_stack *st)
{
	return &st->cfg.tiers;
}

a2m_metric a2m_stack_metric(const a2m_stack *st)
{
	return st->cfg.metric;
}

const a2m_scorer *a2m_stack_scorer(const a2m_stack *st)
{
	return st->scorer;
}

const a2m_blend *a2m_stack_blend(const a2m_stack *st)
{
	return &st->cfg.blend;
}

int a2m_stack_index_stats(a2m_stack *st, a2m_index_stats *out, const char **engine,
			  a2m_error *err)
{
	a2m_store *s = st->store;
	memset(out, 0, sizeof *out);
	*engine = s->ops->engine;
	if (!s->ops->index_stats)
		return A2M_STORE_NO_INDEX;
	int rc = s->ops->index_stats(s, out);
	return rc < 0 ? a2m_stack_store_error(st, err, rc) : rc;
}

void a2m_hits_free(a2m_hit *hits, size_t n)
{
	if (!hits)
		return;
	for (size_t i = 0; i < n; i++)
		a2m_record_free(hits[i].rec);
	free(hits);
}

void a2m_sessions_free(a2m_session_info *s, size_t n)
{
	if (!s)
		return;
	for (size_t i = 0; i < n; i++) {
		free(s[i].session);
		free(s[i].tier_counts);
	}
	free(s);
}

const a2m_tier *a2m_stack_tier_of(const a2m_stack *st, const a2m_record *rec)
{
	return a2m_tiers_find(&st->cfg.tiers, rec->tier);
}

static int same_str(const char *a, const char *b)
{
	return (!a || !b) ? a == b : strcmp(a, b) == 0;
}

int a2m_stack_visible(const a2m_stack *st, const a2m_scope *scope, const a2m_record *rec)
{
	if (!scope || !scope->scoped)
		return 1;
	const a2m_tier *t = a2m_stack_tier_of(st, rec);
	/* Durable tiers are pooled; private tiers belong to their owner. */
	if (t && t->shared)
		return 1;
	return same_str(rec->owner, scope->owner);
}

int a2m_stack_store_error(a2m_stack *st, a2m_error *err, int rc)
{
	if (rc == A2M_READ_ONLY)
		return a2m_error_set(err, A2M_READ_ONLY, "this store is read-only");
	return a2m_error_set(err, A2M_INTERNAL_ERROR, "storage: %s",
			     st->store->errmsg[0] ? st->store->errmsg : "failed");
}

void a2m_stack_emit(a2m_stack *st, const a2m_change *c)
{
	if (st->on_change)
		st->on_change(st->on_change_ctx, c);
}

/* Reports a consolidation that moved anything, as one event (spec §4.12). */
static void emit_consolidated(a2m_stack *st, const a2m_consolidation *cons, int always)
{
	if (!always && !cons->moved && !cons->promoted && !cons->dropped && !cons->summarized)
		return;
	a2m_change c = {.kind = A2M_CHANGE_CONSOLIDATED, .at = a2m_clock_now_ms(),
			.cons = *cons, .shared = 1};
	a2m_stack_emit(st, &c);
}

int64_t a2m_stack_dimensions(a2m_stack *st)
{
	if (st->dims < 0) {
		char *v = NULL;
		st->dims = 0;
		if (st->store->ops->meta_get(st->store, META_DIMS, &v) == 0 && v)
			st->dims = strtoll(v, NULL, 10);
		free(v);
	}
	return st->dims;
}

/* Runs fn inside a transaction: commit on 0, rollback otherwise. */
static int begin(a2m_stack *st, a2m_error *err)
{
	int rc = st->store->ops->begin(st->store);
	return rc ? a2m_stack_store_error(st, err, rc) : 0;
}

/* As begin(), for bookkeeping that need not survive a power loss. */
static int begin_relaxed(a2m_stack *st, a2m_error *err)
{
	int rc = st->store->ops->begin_relaxed(st->store);
	return rc ? a2m_stack_store_error(st, err, rc) : 0;
}

static int commit(a2m_stack *st, a2m_error *err)
{
	st->counts_valid = 0;
	int rc = st->store->ops->commit(st->store);
	if (rc) {
		st->dims = -1;
		return a2m_stack_store_error(st, err, rc);
	}
	return 0;
}

static void rollback(a2m_stack *st)
{
	st->store->ops->rollback(st->store);
	st->counts_valid = 0;
	st->dims = -1; /* re-read: the transaction may have set it */
}

/* Replaces what a key write changes in old with rec's fields (spec §3.6). */
static int apply_replacement(a2m_record *old, a2m_record *rec, int has_salience)
{
	a2m_record next = {0};
	if (a2m_record_copy(&next, rec) != 0)
		return -1;
	/* Same id, same creation, next revision; placement kept unless asked. */
	free(next.id);
	next.id = old->id;
	old->id = NULL;
	next.seq = old->seq;
	next.created_at = old->created_at;
	next.revision = old->revision + 1;
	next.access_count = old->access_count;
	next.accessed_at = old->accessed_at;
	if (!has_salience)
		next.salience = old->salience;
	if (!rec->tier) {
		free(next.tier);
		next.tier = old->tier;
		old->tier = NULL;
	}
	if (!rec->session) {
		free(next.session);
		next.session = old->session;
		old->session = NULL;
	}
	a2m_record_clear(old);
	*old = next;
	return 0;
}

/* Checks and fixes the store's vector width inside the transaction. */
static int check_dims(a2m_stack *st, const a2m_record *rec, size_t i, a2m_error *err)
{
	if (!rec->embedding)
		return 0;
	int64_t dims = a2m_stack_dimensions(st);
	if (dims == 0) {
		char v[32];
		snprintf(v, sizeof v, "%zu", rec->dims);
		int rc = st->store->ops->meta_set(st->store, META_DIMS, v);
		if (rc)
			return a2m_stack_store_error(st, err, rc);
		st->dims = (int64_t)rec->dims;
		return 0;
	}
	if ((int64_t)rec->dims != dims) {
		a2m_error_set(err, A2M_EMBEDDING_MISMATCH,
			      "records[%zu].embedding has %zu dimensions; this store holds %lld",
			      i, rec->dims, (long long)dims);
		return a2m_error_data(err, json_pack("{sI sI}", "expected", (json_int_t)dims,
						     "got", (json_int_t)rec->dims));
	}
	return 0;
}

/* NaN salience marks "not given" on a record passed to remember. */
int a2m_stack_remember(a2m_stack *st, a2m_record **recs, size_t n, a2m_error *err)
{
	a2m_store *s = st->store;
	int64_t now = a2m_clock_now_ms();
	const a2m_tier_layout *l = &st->cfg.tiers;
	a2m_record **written = calloc(n ? n : 1, sizeof *written);
	int rc = 0;
	if (!written)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (recs[i]->tier && !a2m_tiers_find(l, recs[i]->tier)) {
			a2m_error_set(err, A2M_UNKNOWN_TIER, "records[%zu].tier: no tier named '%s'",
				      i, recs[i]->tier);
			free(written);
			return a2m_error_data(err, json_pack("{ss}", "tier", recs[i]->tier));
		}
	if ((rc = begin(st, err))) {
		free(written);
		return rc;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		a2m_record *rec = recs[i];
		int has_salience = !isnan(rec->salience);
		if ((rc = check_dims(st, rec, i, err)))
			break;
		if (rec->id) {
			a2m_record *old = NULL;
			if ((rc = s->ops->get(s, rec->id, &old))) {
				a2m_stack_store_error(st, err, rc);
				break;
			}
			if (old) {
				/* Idempotent retry: the record stands as first written. */
				a2m_record_free(old);
				continue;
			}
		}
		if (rec->key) {
			a2m_record *old = NULL;
			if ((rc = s->ops->get_by_key(s, rec->owner, rec->key, &old))) {
				a2m_stack_store_error(st, err, rc);
				break;
			}
			if (old) {
				/* An occupied key is replaced, never duplicated (§3.6). */
				if (apply_replacement(old, rec, has_salience) != 0) {
					a2m_record_free(old);
					rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
					break;
				}
				if ((rc = s->ops->update(s, old))) {
					a2m_record_free(old);
					a2m_stack_store_error(st, err, rc);
					break;
				}
				free(rec->id);
				rec->id = strdup(old->id);
				written[i] = old;
				if (!rec->id)
					rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
				continue;
			}
		}
		if (!rec->id) {
			char id[A2M_ID_LEN];
			if (a2m_id_generate(now, id) != 0 || !(rec->id = strdup(id))) {
				rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "cannot make an id");
				break;
			}
		}
		if (!rec->tier && !(rec->tier = strdup(l->tiers[l->default_tier].name))) {
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
			break;
		}
		if (!has_salience)
			rec->salience = st->cfg.default_salience;
		rec->created_at = now;
		rec->revision = 0;
		if ((rc = s->ops->insert(s, rec))) {
			a2m_stack_store_error(st, err, rc);
			break;
		}
		if (!(written[i] = a2m_record_dup(rec)))
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	a2m_consolidation cons = {0};
	if (!rc)
		rc = a2m_stack_rebalance(st, 0, &cons, err);
	if (!rc)
		rc = commit(st, err);
	if (rc) {
		rollback(st);
	} else {
		for (size_t i = 0; i < n; i++) {
			if (!written[i])
				continue;
			const a2m_tier *t = a2m_stack_tier_of(st, written[i]);
			a2m_change c = {.kind = A2M_CHANGE_WRITTEN, .at = now, .rec = written[i],
					.owner = written[i]->owner, .shared = t && t->shared};
			a2m_stack_emit(st, &c);
		}
		emit_consolidated(st, &cons, 0);
	}
	a2m_record_array_free(written, n);
	return rc;
}

/* Collects copies of the visible records a selection picks. */
typedef struct collect {
	a2m_stack           *st;
	const a2m_selection *sel;
	a2m_record         **recs;
	size_t               n, cap;
	size_t               stop_at;  /* 0 = collect all */
	int                  oom;
} collect;

static int collect_visit(const a2m_record *rec, void *ctx)
{
	collect *c = ctx;
	if (!a2m_stack_visible(c->st, &c->sel->scope, rec) ||
	    !a2m_where_matches(c->sel->where, rec, c->st->cfg.fields))
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
	c->st = st;
	c->sel = sel;
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
		return a2m_stack_store_error(st, err, rc);
	}
	return 0;
}

/* Higher score first; then newer first, so ties read like a recency list. */
int a2m_stack_hit_cmp(const void *a, const void *b)
{
	const a2m_hit *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->rec->created_at != y->rec->created_at)
		return x->rec->created_at > y->rec->created_at ? -1 : 1;
	return x->rec->seq > y->rec->seq ? -1 : (x->rec->seq < y->rec->seq);
}

/* 1 for now, halving every half_life (no decay when half_life is 0). */
static double decay(int64_t now, int64_t then, double half_life)
{
	if (half_life <= 0 || then >= now)
		return 1.0;
	return exp2(-(double)(now - then) / half_life);
}

double a2m_stack_blend_score(const a2m_stack *st, double rel, const a2m_record *r,
			     int64_t now)
{
	const a2m_blend *w = &st->cfg.blend;
	double sum = w->relevance + w->recency + w->salience;
	if (sum <= 0)
		return rel;
	const a2m_tier *t = a2m_stack_tier_of(st, r);
	double recency = decay(now, r->created_at, t ? t->half_life_ms : 0);
	double sal = r->salience > 0 ? r->salience / (1.0 + r->salience) : 0;
	return rel * (w->relevance + w->recency * recency + w->salience * sal) / sum;
}

/*
** Touches the returned records (access_count, accessed_at) and promotes what
** has earned it, in one transaction; refreshes the hits from the store.
*/
static int touch(a2m_stack *st, a2m_hit *hits, size_t n, a2m_error *err)
{
	a2m_store *s = st->store;
	int64_t now = a2m_clock_now_ms();
	/* Access counts are bookkeeping, not data a client was promised: they
	** need not cost a synchronous flush on every recall. */
	int rc = begin_relaxed(st, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		a2m_record *r = hits[i].rec;
		r->access_count++;
		r->accessed_at = now;
		if ((rc = s->ops->update(s, r)))
			a2m_stack_store_error(st, err, rc);
	}
	/* Promotion after promote_after recalls (DECISIONS 006). */
	a2m_consolidation cons = {0};
	const char **promoted = calloc(n ? n : 1, sizeof *promoted);
	size_t np = 0;
	const char *dest = NULL;
	if (!promoted && !rc)
		rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	for (size_t i = 0; i < n && !rc; i++) {
		a2m_record *r = hits[i].rec, *cur = NULL;
		const a2m_tier *t = a2m_stack_tier_of(st, r);
		if (!t || !t->promote_to || t->promote_after <= 0 || r->access_count < t->promote_after)
			continue;
		if ((rc = s->ops->get(s, r->id, &cur))) {
			a2m_stack_store_error(st, err, rc);
			break;
		}
		if (cur && same_str(cur->tier, t->name)) {
			int64_t moved = 0;
			rc = a2m_stack_move_unit(st, cur, t->promote_to, 0, &moved, err);
			cons.promoted += moved;
			promoted[np++] = r->id;
			dest = t->promote_to;
		}
		a2m_record_free(cur);
	}
	if (!rc && cons.promoted)
		rc = a2m_stack_rebalance(st, 0, &cons, err);
	if (!rc)
		rc = commit(st, err);
	if (rc) {
		rollback(st);
		free(promoted);
		return rc;
	}
	/* Before the refresh below: promoted[] points into the hits' records. */
	if (np) {
		a2m_change c = {.kind = A2M_CHANGE_PROMOTED, .at = now, .ids = promoted,
				.n_ids = np, .tier = dest, .shared = 1};
		a2m_stack_emit(st, &c);
		emit_consolidated(st, &cons, 0);
	}
	free(promoted);
	/* Report what the client now holds as the stored truth. */
	for (size_t i = 0; i < n; i++) {
		a2m_record *cur = NULL;
		if (s->ops->get(s, hits[i].rec->id, &cur) == 0 && cur) {
			a2m_record_free(hits[i].rec);
			hits[i].rec = cur;
		}
	}
	return 0;
}

/*
** The scan path of recall: every record the selection picks, judged by the
** scorer's relevance() (judge set) or ranked by recency (judge unset, or
** the scorer abstains).
*/
static int recall_scan(a2m_stack *st, const a2m_selection *sel, const a2m_rank_query *q,
		       int judge, double min_score, size_t limit, a2m_hit **out, size_t *n,
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
	if (judge && c.n) {
		rc = st->scorer->relevance(st->scorer, st->store, q,
					   (const a2m_record *const *)c.recs, c.n, rel);
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
		a2m_record *r = c.recs[i];
		double score;
		if (judged) {
			/* Judged and no match: not recalled (DECISIONS 013). */
			if (rel[i] <= 0)
				continue;
			score = a2m_stack_blend_score(st, rel[i], r, now);
		} else {
			/* No query: newest first, whatever the tier. */
			score = decay(now, r->created_at, DAY_MS);
		}
		if (score < min_score)
			continue;
		hits[kept].rec = r;
		hits[kept].score = score;
		c.recs[i] = NULL;
		kept++;
	}
	qsort(hits, kept, sizeof *hits, a2m_stack_hit_cmp);
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

int a2m_stack_recall(a2m_stack *st, const a2m_selection *sel, const a2m_rank_query *q,
		     double min_score, size_t limit, a2m_hit **out, size_t *n,
		     a2m_error *err)
{
	a2m_hit *hits = NULL;
	size_t kept = 0;
	int rc;
	*out = NULL;
	*n = 0;
	int asked = (q->text && *q->text) || q->vector;
	int scan_judged = asked;
	if (asked && st->scorer->candidates) {
		/* The index names the candidates: no need to read every record. */
		a2m_candidates cands;
		rc = st->scorer->candidates(st->scorer, st->store, q, &cands);
		if (rc < 0)
			return a2m_error_set(err, rc, "scorer %s failed", st->scorer->name);
		if (rc == 0) {
			/* Judged: what it did not name did not match (DECISIONS 013). */
			rc = a2m_stack_ranked_collect(st, sel, &cands, limit, min_score, 1, &hits, &kept,
						      err);
			free(cands.v);
			if (rc)
				return rc;
			goto found;
		}
		/* Abstained: rank by recency. SCAN: judge a scan instead. */
		scan_judged = rc == A2M_SCORER_SCAN;
	}
	if ((rc = recall_scan(st, sel, q, scan_judged, min_score, limit, &hits, &kept, err)))
		return rc;
found:
	if (kept && !st->cfg.read_only && (rc = touch(st, hits, kept, err)) != 0) {
		a2m_hits_free(hits, kept);
		return rc;
	}
	*out = hits;
	*n = kept;
	return 0;
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
				collect_visit(rec, &c);
			a2m_record_free(rec);
		}
		if (c.oom) {
			a2m_record_array_free(c.recs, c.n);
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		}
	} else if (query && st->scorer->candidates) {
		/* The index names the candidates (see a2m_stack_recall). */
		a2m_rank_query rq = {.text = query};
		a2m_candidates cands;
		a2m_hit *hits = NULL;
		size_t kept = 0;
		rc = st->scorer->candidates(st->scorer, st->store, &rq, &cands);
		if (rc < 0)
			return a2m_error_set(err, rc, "scorer %s failed", st->scorer->name);
		/* An abstaining scorer cannot say what the query selects: nothing. */
		if (rc == A2M_SCORER_ABSTAIN)
			return 0;
		if (rc == 0) {
			rc = a2m_stack_ranked_collect(st, sel, &cands, limit, -1, 0, &hits, &kept, err);
			free(cands.v);
			if (rc)
				return rc;
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
		if ((rc = select_records(st, sel, 0, 0, &c, err)))
			return rc;
	} else if ((rc = select_records(st, sel, 0, 0, &c, err))) {
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
		rc = st->scorer->relevance(st->scorer, st->store, &rq,
					   (const a2m_record *const *)c.recs, c.n, rel);
		if (rc < 0) {
			free(hits);
			free(rel);
			a2m_record_array_free(c.recs, c.n);
			return a2m_error_set(err, rc, "scorer %s failed", st->scorer->name);
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

int a2m_stack_forget(a2m_stack *st, const a2m_selection *sel,
		     const char *const *ids, size_t n_ids, const char *query,
		     int64_t *forgotten, a2m_error *err)
{
	a2m_store *s = st->store;
	a2m_record **recs;
	size_t n;
	*forgotten = 0;
	int rc = a2m_stack_select(st, sel, ids, n_ids, query, 0, &recs, &n, err);
	if (rc)
		return rc;
	const char **gone = calloc(n + 1, sizeof *gone);
	if (!gone) {
		a2m_record_array_free(recs, n);
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	if ((rc = begin(st, err)))
		goto done;
	size_t count = 0;
	for (size_t i = 0; i < n; i++) {
		int removed = 0;
		if ((rc = s->ops->remove(s, recs[i]->id, &removed))) {
			a2m_stack_store_error(st, err, rc);
			break;
		}
		if (removed)
			gone[count++] = recs[i]->id;
	}
	if (!rc)
		rc = commit(st, err);
	if (rc) {
		rollback(st);
		goto done;
	}
	*forgotten = (int64_t)count;
	if (count) {
		a2m_change ch = {.kind = A2M_CHANGE_FORGOTTEN, .at = a2m_clock_now_ms(),
				 .ids = gone, .n_ids = count, .count = (int64_t)count,
				 .owner = sel->scope.owner, .shared = !sel->scope.scoped};
		a2m_stack_emit(st, &ch);
	}
done:
	free(gone);
	a2m_record_array_free(recs, n);
	return rc;
}

/* Fetches the visible record with id, or NULL. */
static int get_visible(a2m_stack *st, const a2m_scope *scope, const char *id,
		       a2m_record **out, a2m_error *err)
{
	*out = NULL;
	a2m_record *rec = NULL;
	int rc = st->store->ops->get(st->store, id, &rec);
	if (rc)
		return a2m_stack_store_error(st, err, rc);
	if (rec && !a2m_stack_visible(st, scope, rec)) {
		a2m_record_free(rec);
		rec = NULL;
	}
	*out = rec;
	return 0;
}

int a2m_stack_promote(a2m_stack *st, const a2m_scope *scope, const char *const *ids,
		      size_t n_ids, const char *tier, double salience_add,
		      int64_t *promoted, a2m_error *err)
{
	*promoted = 0;
	if (!a2m_tiers_find(&st->cfg.tiers, tier)) {
		a2m_error_set(err, A2M_UNKNOWN_TIER, "no tier named '%s'", tier);
		return a2m_error_data(err, json_pack("{ss}", "tier", tier));
	}
	const char **moved_ids = calloc(n_ids + 1, sizeof *moved_ids);
	if (!moved_ids)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	int rc = begin(st, err);
	size_t nm = 0;
	for (size_t i = 0; i < n_ids && !rc; i++) {
		a2m_record *rec = NULL;
		if ((rc = get_visible(st, scope, ids[i], &rec, err)))
			break;
		if (rec && !same_str(rec->tier, tier)) {
			int64_t n = 0;
			rc = a2m_stack_move_unit(st, rec, tier, salience_add, &n, err);
			if (!rc && n) {
				moved_ids[nm++] = ids[i];
				(*promoted)++;
			}
		}
		a2m_record_free(rec);
	}
	a2m_consolidation cons = {0};
	if (!rc)
		rc = a2m_stack_rebalance(st, 0, &cons, err);
	if (!rc)
		rc = commit(st, err);
	if (rc) {
		rollback(st);
		*promoted = 0;
	} else if (nm) {
		a2m_change c = {.kind = A2M_CHANGE_PROMOTED, .at = a2m_clock_now_ms(),
				.ids = moved_ids, .n_ids = nm, .tier = tier,
				.owner = scope ? scope->owner : NULL,
				.shared = !scope || !scope->scoped};
		a2m_stack_emit(st, &c);
		emit_consolidated(st, &cons, 0);
	}
	free(moved_ids);
	return rc;
}

int a2m_stack_consolidate(a2m_stack *st, a2m_consolidation *out, a2m_error *err)
{
	memset(out, 0, sizeof *out);
	int rc = begin(st, err);
	if (!rc)
		rc = a2m_stack_rebalance(st, 1, out, err);
	if (!rc)
		rc = commit(st, err);
	if (rc) {
		rollback(st);
		memset(out, 0, sizeof *out);
		return rc;
	}
	/* One event per consolidate call, however much moved (§4.12). */
	emit_consolidated(st, out, 1);
	return 0;
}

int a2m_stack_reinforce(a2m_stack *st, const a2m_scope *scope, const char *const *ids,
			size_t n_ids, double amount, int64_t *reinforced, a2m_error *err)
{
	*reinforced = 0;
	int rc = begin(st, err);
	for (size_t i = 0; i < n_ids && !rc; i++) {
		a2m_record *rec = NULL;
		if ((rc = get_visible(st, scope, ids[i], &rec, err)) || !rec)
			continue;
		rec->salience += amount;
		if ((rc = st->store->ops->update(st->store, rec)))
			a2m_stack_store_error(st, err, rc);
		else
			(*reinforced)++;
		a2m_record_free(rec);
	}
	if (!rc)
		rc = commit(st, err);
	if (rc) {
		rollback(st);
		*reinforced = 0;
	}
	return rc;
}

int a2m_stack_fetch(a2m_stack *st, const char *owner, const char *key, a2m_record **out,
		    a2m_error *err)
{
	int rc = st->store->ops->get_by_key(st->store, owner, key, out);
	return rc ? a2m_stack_store_error(st, err, rc) : 0;
}

int a2m_stack_session_close(a2m_stack *st, const a2m_scope *scope, const char *session,
			    int64_t *flushed, a2m_consolidation *out, a2m_error *err)
{
	memset(out, 0, sizeof *out);
	*flushed = 0;
	const a2m_tier_layout *l = &st->cfg.tiers;
	int rc = begin(st, err);
	for (size_t i = 0; i < l->n && !rc; i++) {
		const a2m_tier *t = &l->tiers[i];
		int working = t->per_session || strcmp(t->kind, "working") == 0;
		if (!working || !t->spill_to)
			continue;
		a2m_selection sel = {0};
		sel.q.tier = t->name;
		sel.q.by_session = 1;
		sel.q.session = session;
		if (scope)
			sel.scope = *scope;
		collect c;
		if ((rc = select_records(st, &sel, 0, 0, &c, err)))
			break;
		for (size_t j = 0; j < c.n && !rc; j++) {
			a2m_record *cur = NULL;
			/* A group move may have taken it already. */
			if ((rc = st->store->ops->get(st->store, c.recs[j]->id, &cur))) {
				a2m_stack_store_error(st, err, rc);
				break;
			}
			if (cur && same_str(cur->tier, t->name)) {
				int64_t moved = 0;
				rc = a2m_stack_move_unit(st, cur, t->spill_to, 0, &moved, err);
				*flushed += moved;
			}
			a2m_record_free(cur);
		}
		a2m_record_array_free(c.recs, c.n);
	}
	/* Then every tier below applies its own rules to what arrived. */
	if (!rc)
		rc = a2m_stack_rebalance(st, 1, out, err);
	if (!rc)
		rc = commit(st, err);
	if (rc) {
		rollback(st);
		memset(out, 0, sizeof *out);
		*flushed = 0;
		return rc;
	}
	emit_consolidated(st, out, 1);
	a2m_change c = {.kind = A2M_CHANGE_SESSION_CLOSED, .at = a2m_clock_now_ms(),
			.session = session, .owner = scope ? scope->owner : NULL,
			.shared = !scope || !scope->scoped};
	a2m_stack_emit(st, &c);
	return 0;
}

/* Accumulates per-session figures during a scan. */
typedef struct session_acc {
	a2m_stack        *st;
	const a2m_scope  *scope;
	a2m_session_info *v;
	size_t            n, cap;
	int               oom;
} session_acc;

static int session_visit(const a2m_record *rec, void *ctx)
{
	session_acc *a = ctx;
	if (!rec->session || !a2m_stack_visible(a->st, a->scope, rec))
		return 0;
	size_t i;
	for (i = 0; i < a->n; i++)
		if (strcmp(a->v[i].session, rec->session) == 0)
			break;
	size_t ntiers = a->st->cfg.tiers.n;
	if (i == a->n) {
		if (a->n == a->cap) {
			size_t cap = a->cap ? a->cap * 2 : 16;
			a2m_session_info *p = realloc(a->v, cap * sizeof *p);
			if (!p) {
				a->oom = 1;
				return -1;
			}
			a->v = p;
			a->cap = cap;
		}
		a2m_session_info *s = &a->v[a->n];
		memset(s, 0, sizeof *s);
		s->session = strdup(rec->session);
		s->tier_counts = calloc(ntiers ? ntiers : 1, sizeof *s->tier_counts);
		if (!s->session || !s->tier_counts) {
			free(s->session);
			free(s->tier_counts);
			a->oom = 1;
			return -1;
		}
		s->opened_at = rec->created_at;
		a->n++;
	}
	a2m_session_info *s = &a->v[i];
	s->records++;
	int ti = a2m_tiers_index(&a->st->cfg.tiers, rec->tier);
	if (ti >= 0)
		s->tier_counts[ti]++;
	if (rec->created_at < s->opened_at)
		s->opened_at = rec->created_at;
	int64_t touched = rec->accessed_at > rec->created_at ? rec->accessed_at : rec->created_at;
	if (touched > s->touched_at)
		s->touched_at = touched;
	return 0;
}

int a2m_stack_sessions(a2m_stack *st, const a2m_scope *scope, a2m_session_info **out,
		       size_t *n, a2m_error *err)
{
	session_acc a = {.st = st, .scope = scope};
	a2m_query q = {0};
	int rc = st->store->ops->scan(st->store, &q, session_visit, &a);
	if (rc || a.oom) {
		a2m_sessions_free(a.v, a.n);
		return a.oom ? a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory")
			     : a2m_stack_store_error(st, err, rc);
	}
	*out = a.v;
	*n = a.n;
	return 0;
}

typedef struct count_acc {
	a2m_stack       *st;
	const a2m_scope *scope;
	int64_t         *counts;
} count_acc;

static int count_visit(const a2m_record *rec, void *ctx)
{
	count_acc *a = ctx;
	if (a2m_stack_visible(a->st, a->scope, rec)) {
		int ti = a2m_tiers_index(&a->st->cfg.tiers, rec->tier);
		if (ti >= 0)
			a->counts[ti]++;
	}
	return 0;
}

int a2m_stack_tier_counts(a2m_stack *st, const a2m_scope *scope, int64_t *counts,
			  a2m_error *err)
{
	const a2m_tier_layout *l = &st->cfg.tiers;
	memset(counts, 0, l->n * sizeof *counts);
	int rc;
	if (!scope || !scope->scoped) {
		/* Unscoped: the store counts each tier itself, once per change —
		** describe is called far more often than the store changes. */
		if (!st->counts_valid) {
			for (size_t i = 0; i < l->n; i++) {
				a2m_query q = {0};
				q.tier = l->tiers[i].name;
				if ((rc = st->store->ops->count(st->store, &q, &st->counts[i])))
					return a2m_stack_store_error(st, err, rc);
			}
			st->counts_valid = 1;
		}
		memcpy(counts, st->counts, l->n * sizeof *counts);
		return 0;
	}
	count_acc a = {.st = st, .scope = scope, .counts = counts};
	a2m_query q = {0};
	rc = st->store->ops->scan(st->store, &q, count_visit, &a);
	return rc ? a2m_stack_store_error(st, err, rc) : 0;
}
