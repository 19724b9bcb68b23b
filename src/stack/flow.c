/*
** flow.c — how records move between tiers: whole-group moves, promotion
** earned by recall (the one place that decides it), and capacity enforced
** by spilling the weakest units (see the policy summary in stack.h). All
** within a transaction someone else opened: a write runs these through
** a2m_stack_finish (finish.c), which commits what they did.
*/
#include <stdlib.h>
#include <string.h>

#include "stack/stack_internal.h"
#include "util/clock.h"

/* A bounded bucket records entered: a tier, and a session in a per-session tier. */
struct a2m_arrival {
	size_t tier;
	char  *session;  /* NULL: no session, or the tier is not per session */
};

void a2m_stack_note_arrival(a2m_stack *st, const char *tier, const char *session)
{
	int ti = a2m_tiers_index(&st->cfg.tiers, tier);
	if (ti < 0 || st->cfg.tiers.tiers[ti].capacity <= 0)
		return; /* an unbounded tier cannot overflow */
	if (!st->cfg.tiers.tiers[ti].per_session)
		session = NULL;
	for (size_t i = 0; i < st->n_arrivals; i++)
		if (st->arrivals[i].tier == (size_t)ti &&
		    a2m_stack_same_str(st->arrivals[i].session, session))
			return;
	if (st->n_arrivals == st->cap_arrivals) {
		size_t cap = st->cap_arrivals ? st->cap_arrivals * 2 : 8;
		struct a2m_arrival *p = realloc(st->arrivals, cap * sizeof *p);
		if (!p) {
			st->arrivals_lost = 1;
			return;
		}
		st->arrivals = p;
		st->cap_arrivals = cap;
	}
	char *copy = session ? strdup(session) : NULL;
	if (session && !copy) {
		st->arrivals_lost = 1;
		return;
	}
	st->arrivals[st->n_arrivals].tier = (size_t)ti;
	st->arrivals[st->n_arrivals].session = copy;
	st->n_arrivals++;
}

/* Forgets the noted arrivals (keeping the array for the next ones). */
static void arrivals_clear(a2m_stack *st)
{
	for (size_t i = 0; i < st->n_arrivals; i++)
		free(st->arrivals[i].session);
	st->n_arrivals = 0;
}

void a2m_stack_arrivals_free(a2m_stack *st)
{
	arrivals_clear(st);
	free(st->arrivals);
	st->arrivals = NULL;
	st->cap_arrivals = 0;
}

void a2m_stack_capacity_committed(a2m_stack *st)
{
	if (st->full_pass_run)
		st->capacity_known = 1;
	st->full_pass_run = 0;
}

/*
** Copies of every record q selects, whoever owns them: the stack's collector
** with no scope and no `where`. Free with a2m_record_array_free(c->recs, c->n).
*/
static int scan_all(a2m_stack *st, const a2m_query *q, collect *c, a2m_error *err)
{
	a2m_selection sel = {0};
	sel.q = *q;
	sel.with_expired = 1;  /* what the tier holds, expired or not */
	int rc = a2m_stack_select_records(st, &sel, 0, 0, c, err);
	c->sel = NULL; /* sel lives only for the scan */
	return rc;
}

/*
** The records of one bucket as capacity weighs them: q's, each a record of
** its own holding only id, seq, created_at, group, tier, session,
** salience, accessed_at and access_count (the store reads no more of them:
** a2m_query.brief), with recall's waiting touches laid over.
*/
typedef struct facts {
	a2m_stack   *st;
	a2m_record **v;
	size_t       n, cap;
	int          oom;
} facts;

static int fact_visit(const a2m_record *rec, void *ctx)
{
	facts *f = ctx;
	a2m_record tmp;
	rec = a2m_stack_touched(f->st, rec, &tmp);
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		a2m_record **p = realloc(f->v, cap * sizeof *p);
		if (!p) {
			f->oom = 1;
			return -1;
		}
		f->v = p;
		f->cap = cap;
	}
	if (!(f->v[f->n] = a2m_stack_facts_of(rec))) {
		f->oom = 1;
		return -1;
	}
	f->n++;
	return 0;
}

/* Reads q's facts into f (free f->v with a2m_record_array_free(f->v, f->n)). */
static int read_facts(a2m_stack *st, const a2m_query *q, facts *f, a2m_error *err)
{
	memset(f, 0, sizeof *f);
	f->st = st;
	a2m_query brief = *q;
	brief.brief = 1;
	int rc = st->store->ops->scan(st->store, &brief, fact_visit, f);
	int oom = f->oom;
	if (!rc && !oom)
		return 0;
	a2m_record_array_free(f->v, f->n);
	memset(f, 0, sizeof *f);
	return oom ? a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory")
		   : a2m_stack_store_error(st, err, rc);
}

int a2m_stack_move_unit(a2m_stack *st, const a2m_record *rec, const char *to,
			double salience_add, int64_t *n, a2m_error *err)
{
	a2m_store *s = st->store;
	facts l;
	int rc = 0;
	*n = 0;
	if (rec->group) {
		/* A group leaves its tier whole (spec §3.4). */
		a2m_query q = {0};
		q.tier = rec->tier;
		q.group = rec->group;
		if ((rc = read_facts(st, &q, &l, err)))
			return rc;
	} else {
		memset(&l, 0, sizeof l);
		if (!(l.v = malloc(sizeof *l.v)) || !(l.v[0] = a2m_stack_facts_of(rec))) {
			free(l.v);
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		}
		l.n = 1;
	}
	for (size_t i = 0; i < l.n && !rc; i++) {
		a2m_record *r = l.v[i];
		uint64_t before = a2m_stack_roster_stamp(st);
		if (!to) {
			int removed = 0;
			rc = s->ops->remove(s, r->id, &removed);
			*n += removed;
			if (!rc)
				a2m_stack_roster_note(st, before, r->seq, r, NULL);
		} else {
			/* Only its tier and salience change (store.h, move). */
			char *tier = strdup(to);
			if (!tier) {
				rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
				break;
			}
			int moved = 0;
			r->salience = a2m_salience_add(r->salience, salience_add);
			rc = s->ops->move(s, r, to, r->salience, &moved);
			a2m_record was = *r;  /* its tier as it was, for the rosters */
			r->tier = tier;
			*n += moved;
			if (!rc && moved) {
				a2m_stack_roster_note(st, before, r->seq, &was, r);
				a2m_stack_note_arrival(st, to, r->session);
			}
			free(was.tier);
		}
		if (rc && !err->code)
			a2m_stack_store_error(st, err, rc);
	}
	a2m_record_array_free(l.v, l.n);
	return rc ? err->code : 0;
}

static int cmp_group(const void *a, const void *b)
{
	const a2m_record *x = *(a2m_record *const *)a, *y = *(a2m_record *const *)b;
	if (!x->group || !y->group)
		return (x->group != NULL) - (y->group != NULL);
	return strcmp(x->group, y->group);
}

/* Weakest first; among equals, the older goes first. */
static int cmp_unit(const void *a, const void *b)
{
	const a2m_spill_unit *x = a, *y = b;
	if (x->retention != y->retention)
		return x->retention < y->retention ? -1 : 1;
	if (x->newest != y->newest)
		return x->newest < y->newest ? -1 : 1;
	return (x->newest_seq > y->newest_seq) - (x->newest_seq < y->newest_seq);
}

/* Moves the weakest of units[from..n) to units[from]. */
static void weakest_first(a2m_spill_unit *units, size_t from, size_t n)
{
	size_t w = from;
	for (size_t i = from + 1; i < n; i++)
		if (cmp_unit(&units[i], &units[w]) < 0)
			w = i;
	a2m_spill_unit tmp = units[from];
	units[from] = units[w];
	units[w] = tmp;
}

/* Units picked one pass at a time before sorting the rest is cheaper. */
#define PICKED_BY_PASS 8

int a2m_stack_spill_plan(const a2m_tier *t, a2m_record **recs, size_t n, int64_t now,
			 a2m_spill_unit **out, size_t *n_units, size_t *n_leave)
{
	*out = NULL;
	*n_units = *n_leave = 0;
	if ((int64_t)n <= t->capacity)
		return 0;
	/* Members of a group side by side; with no group, each record is a unit. */
	int grouped = 0;
	for (size_t i = 0; i < n && !grouped; i++)
		grouped = recs[i]->group != NULL;
	if (grouped)
		qsort(recs, n, sizeof *recs, cmp_group);
	/* Not calloc: each unit is filled as it starts, and zeroing a bucket's
	** worth cost more than the pass below (mimalloc, callgrind). */
	a2m_spill_unit *units = malloc(n * sizeof *units);
	if (!units)
		return -1;
	int by_age = a2m_stack_weighs_age(t);
	size_t nu = 0;
	for (size_t i = 0; i < n; i++) {
		double ret = a2m_stack_retention_as(t, by_age, recs[i], now);
		int same = nu && recs[i]->group && units[nu - 1].first->group &&
			   strcmp(recs[i]->group, units[nu - 1].first->group) == 0;
		if (!same) {
			units[nu].first = recs[i];
			units[nu].retention = ret;
			units[nu].newest = recs[i]->created_at;
			units[nu].newest_seq = recs[i]->seq;
			units[nu].size = 0;
			nu++;
		}
		a2m_spill_unit *u = &units[nu - 1];
		u->size++;
		/* A group is as strong as its strongest member. */
		if (ret > u->retention)
			u->retention = ret;
		if (recs[i]->created_at > u->newest ||
		    (recs[i]->created_at == u->newest && recs[i]->seq > u->newest_seq)) {
			u->newest = recs[i]->created_at;
			u->newest_seq = recs[i]->seq;
		}
	}
	/*
	** The leaving units in order, weakest first: a write over capacity by
	** one needs one pass for its one unit, not a sort of the bucket. The
	** order is total (no two units share a newest seq), so picking and
	** sorting agree.
	*/
	int64_t excess = (int64_t)n - t->capacity;
	size_t leave = 0;
	while (leave < nu && excess > 0) {
		if (leave == PICKED_BY_PASS)
			qsort(units + leave, nu - leave, sizeof *units, cmp_unit);
		else if (leave < PICKED_BY_PASS)
			weakest_first(units, leave, nu);
		excess -= (int64_t)units[leave++].size;
	}
	*out = units;
	*n_units = nu;
	*n_leave = leave;
	return 0;
}

#ifdef A2M_TEST_HOOKS
static int pick_check;
static a2m_pick_stats pick_stats;

void a2m_stack_pick_check_for_tests(int on, a2m_pick_stats *out)
{
	pick_check = on;
	if (out)
		*out = pick_stats;
	memset(&pick_stats, 0, sizeof pick_stats);
}

/* For tests: whether the plan over the same facts sends the same unit. */
static void pick_against_plan(const a2m_tier *t, a2m_record **recs, size_t n, int64_t now,
			      const a2m_record *picked)
{
	a2m_spill_unit *units;
	size_t nu, leave;
	if (!pick_check || a2m_stack_spill_plan(t, recs, n, now, &units, &nu, &leave) != 0)
		return;
	pick_stats.picks++;
	if (leave != 1 || units[0].first != picked)
		pick_stats.picks_wrong++;
	free(units);
}

/* For tests: whether the store counts the bucket a roster answered for. */
static void count_against_roster(a2m_stack *st, const a2m_query *q, size_t n)
{
	int64_t count = -1;
	if (!pick_check)
		return;
	pick_stats.rosters++;
	if (st->store->ops->count(st->store, q, &count) != 0 || count != (int64_t)n)
		pick_stats.rosters_wrong++;
}
#else
#define pick_against_plan(t, recs, n, now, picked) ((void)0)
#define count_against_roster(st, q, n) ((void)0)
#endif

/*
** Which units of recs[0..n) leave (a2m_stack_spill_plan's answer): by the
** keys when they vouch for it (keys->v set: a roster's, spill_key.c), else
** by the plan, which weighs every record.
*/
static int plan_bucket(const a2m_tier *t, a2m_record **recs, size_t n,
		       const a2m_roster_keys *keys, int64_t now, a2m_spill_unit **units,
		       size_t *nu, size_t *leave)
{
	size_t w;
	if (keys && keys->v &&
	    a2m_stack_spill_pick(t, a2m_stack_weighs_age(t), recs, keys->v, n, keys->base, now,
				 &w)) {
		pick_against_plan(t, recs, n, now, recs[w]);
		if (!(*units = malloc(sizeof **units)))
			return -1;
		(*units)[0].first = recs[w];
		*nu = *leave = 1;
		return 0;
	}
	return a2m_stack_spill_plan(t, recs, n, now, units, nu, leave);
}

/*
** Spills (or drops) the weakest units of recs[0..n) — the facts of one
** bucket of tier t, with their keys when a roster lends them (else NULL)
** — until at most t->capacity remain.
*/
static int spill_bucket(a2m_stack *st, const a2m_tier *t, a2m_record **recs, size_t n,
			const a2m_roster_keys *keys, a2m_consolidation *cons, a2m_error *err)
{
	a2m_spill_unit *units;
	size_t nu, leave;
	if (plan_bucket(t, recs, n, keys, a2m_clock_now_ms(), &units, &nu, &leave) != 0)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	int rc = 0;
	/* The leaving units' facts, copied: a move changes the roster that
	** recs may be, freeing the facts of what left it. */
	a2m_record **first = leave ? calloc(leave, sizeof *first) : NULL;
	for (size_t i = 0; i < leave && !rc; i++)
		if (!first || !(first[i] = a2m_stack_facts_of(units[i].first)))
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	free(units);
	for (size_t i = 0; i < leave && !rc; i++) {
		int64_t moved = 0;
		rc = a2m_stack_move_unit(st, first[i], t->spill_to, 0, &moved, err);
		if (t->spill_to)
			cons->moved += moved;
		else
			cons->dropped += moved;
	}
	if (first)
		a2m_record_array_free(first, leave);
	return rc;
}

static int cmp_session(const void *a, const void *b)
{
	const a2m_record *x = *(a2m_record *const *)a, *y = *(a2m_record *const *)b;
	if (!x->session || !y->session)
		return (x->session != NULL) - (y->session != NULL);
	return strcmp(x->session, y->session);
}

/*
** Spills from the records q selects, one bucket of tier t, while they are
** more than t's capacity: by the roster's facts when it is current (no
** count: a lone write into full default tiers asked the store twice, ~9 k
** instructions on SQLite), else counts them through the store first, and
** reads them only when they are over.
*/
static int enforce_bucket(a2m_stack *st, const a2m_tier *t, const a2m_query *q,
			  a2m_consolidation *cons, a2m_error *err)
{
	/* The bucket's facts as kept since the last write, when the store's
	** stamp vouches for them: then they are the bucket, and as many as a
	** count would find (roster.c), so the store is not asked. */
	size_t ti = (size_t)(t - st->cfg.tiers.tiers), n;
	const char *session = q->by_session ? q->session : NULL;
	a2m_roster_keys keys;
	a2m_record **kept = a2m_stack_roster_get(st, ti, session, &n, &keys);
	if (kept) {
		count_against_roster(st, q, n);
		return (int64_t)n <= t->capacity ? 0 : spill_bucket(st, t, kept, n, &keys, cons, err);
	}
	int64_t count = 0;
	int rc = st->store->ops->count(st->store, q, &count);
	if (rc)
		return a2m_stack_store_error(st, err, rc);
	if (count <= t->capacity)
		return 0;
	facts f;
	if ((rc = read_facts(st, q, &f, err)))
		return rc;
	if (a2m_stack_roster_put(st, ti, session, f.v, f.n)) {
		kept = a2m_stack_roster_get(st, ti, session, &n, &keys);
		return spill_bucket(st, t, kept, n, &keys, cons, err);
	}
	rc = spill_bucket(st, t, f.v, f.n, NULL, cons, err);
	a2m_record_array_free(f.v, f.n);
	return rc;
}

/* Enforces t's capacity; *changed is set when anything left the tier. */
static int enforce_capacity(a2m_stack *st, const a2m_tier *t, a2m_consolidation *cons,
			    int *changed, a2m_error *err)
{
	if (t->capacity <= 0)
		return 0;
	a2m_query q = {0};
	q.tier = t->name;
	int64_t before = cons->moved + cons->dropped;
	int rc;
	if (!t->per_session) {
		rc = enforce_bucket(st, t, &q, cons, err);
	} else {
		facts f;
		if ((rc = read_facts(st, &q, &f, err)))
			return rc;
		/* Conversations must not evict each other (spec §3.5). */
		if (f.n)
			qsort(f.v, f.n, sizeof *f.v, cmp_session);
		size_t start = 0;
		for (size_t i = 1; i <= f.n && !rc; i++) {
			if (i == f.n || cmp_session(&f.v[start], &f.v[i]) != 0) {
				rc = spill_bucket(st, t, f.v + start, i - start, NULL, cons, err);
				start = i;
			}
		}
		a2m_record_array_free(f.v, f.n);
	}
	if (cons->moved + cons->dropped > before)
		*changed = 1;
	return rc;
}

/* Enforces the capacity of one noted bucket. */
static int enforce_arrival(a2m_stack *st, const struct a2m_arrival *a,
			   a2m_consolidation *cons, a2m_error *err)
{
	const a2m_tier *t = &st->cfg.tiers.tiers[a->tier];
	a2m_query q = {0};
	q.tier = t->name;
	q.by_session = t->per_session;
	q.session = a->session;
	return enforce_bucket(st, t, &q, cons, err);
}

/* Every bounded tier, whole (the first pass after open). */
static int enforce_all(a2m_stack *st, a2m_consolidation *cons, a2m_error *err)
{
	const a2m_tier_layout *l = &st->cfg.tiers;
	int rc;
	/* A spill can overfill the tier below; the chain has no cycle, so
	** n + 1 passes always reach a fixed point. */
	for (size_t pass = 0; pass <= l->n; pass++) {
		int changed = 0;
		for (size_t i = 0; i < l->n; i++)
			if ((rc = enforce_capacity(st, &l->tiers[i], cons, &changed, err)))
				return rc;
		if (!changed)
			break;
	}
	return 0;
}

/* True when t promotes at all: a destination, and a number of recalls. */
static int promotes(const a2m_tier *t)
{
	return t && t->promote_to && t->promote_after > 0;
}

int a2m_stack_promotion_earned(const a2m_tier *t, int64_t recalls)
{
	return promotes(t) && recalls >= t->promote_after;
}

int a2m_stack_promote_earned(a2m_stack *st, const a2m_record *rec, const char **to,
			     a2m_consolidation *cons, a2m_error *err)
{
	const a2m_tier *t = a2m_stack_tier_of(st, rec);
	a2m_record *cur = NULL;
	*to = NULL;
	if (!a2m_stack_promotion_earned(t, rec->access_count))
		return 0;
	/* An earlier group move may have taken it already. */
	int rc = st->store->ops->get(st->store, rec->id, &cur);
	if (rc)
		return a2m_stack_store_error(st, err, rc);
	if (cur && a2m_stack_same_str(cur->tier, t->name)) {
		int64_t moved = 0;
		rc = a2m_stack_move_unit(st, cur, t->promote_to, 0, &moved, err);
		cons->promoted += moved;
		*to = t->promote_to;
	}
	a2m_record_free(cur);
	return rc;
}

/* Promotes every record of every tier that has earned it (DECISIONS 006). */
static int promote_all(a2m_stack *st, a2m_consolidation *cons, a2m_error *err)
{
	const a2m_tier_layout *l = &st->cfg.tiers;
	for (size_t i = 0; i < l->n; i++) {
		const a2m_tier *t = &l->tiers[i];
		if (!promotes(t))
			continue;
		a2m_query q = {0};
		q.tier = t->name;
		collect recs;
		int rc = scan_all(st, &q, &recs, err);
		if (rc)
			return rc;
		for (size_t j = 0; j < recs.n && !rc; j++) {
			const char *to;
			rc = a2m_stack_promote_earned(st, recs.recs[j], &to, cons, err);
		}
		a2m_record_array_free(recs.recs, recs.n);
		if (rc)
			return rc;
	}
	return 0;
}

int a2m_stack_rebalance(a2m_stack *st, int with_promotion, a2m_consolidation *cons,
			a2m_error *err)
{
	int rc;
	/* Promotion first, or a record that keeps proving useful is displaced
	** by the volume arriving above it (DECISIONS 006). */
	if (with_promotion && (rc = promote_all(st, cons, err)))
		return rc;
	if (!st->capacity_known || st->arrivals_lost) {
		if ((rc = enforce_all(st, cons, err)))
			return rc;
		/* Every tier is at its fixed point: what arrived is covered. */
		arrivals_clear(st);
		st->arrivals_lost = 0;
		st->full_pass_run = 1;
		return 0;
	}
	/* A spill notes the tier below; the chain has no cycle, so this ends
	** after at most as many rounds as there are tiers. */
	while (st->n_arrivals) {
		struct a2m_arrival *round = st->arrivals;
		size_t n = st->n_arrivals;
		st->arrivals = NULL;
		st->n_arrivals = st->cap_arrivals = 0;
		rc = 0;
		for (size_t i = 0; i < n && !rc; i++)
			rc = enforce_arrival(st, &round[i], cons, err);
		for (size_t i = 0; i < n; i++)
			free(round[i].session);
		free(round);
		if (rc)
			return rc;
	}
	return 0;
}
