/*
** roster.c — what capacity remembers of its buckets between writes.
**
** Why: once a bounded bucket is full, every write that lands in it spills
** its weakest unit, and choosing that unit weighs every record of the
** bucket (flow.c; the policy is stack/policy.h). Read from the store on
** each write, a lone remember into the default tiers (a working bucket of
** 24, an episodic tier of 256) read 280 rows: 2.9M instructions a
** remember through `a2m serve` on SQLite whole, 1.6M with only the fields
** the plan weighs (callgrind; docs/BENCHMARKS.md, "A lone write into full
** tiers"). So the stack keeps each bucket's facts (the records reduced to
** what the plan reads, flow.c) and reads them again only when it cannot
** vouch for them.
**
** How it stays exact: the store's stamp (store.h) changes at every write
** of a record, a rollback, and when another writer committed. A roster is
** used only while the stamp is the one it was taken at. The writes capacity
** makes, and a remember's insert, say what they wrote (a2m_stack_roster_note
** with the stamp read before the write): a roster that was current before
** it takes the change (the record out, and in again if it still belongs)
** and the new stamp; the others are dropped. Any write not noted here (an
** update, a forget, recall's touches, another process) leaves every roster
** stale, and the next capacity check reads its bucket again. The plan over
** a roster is the plan over the bucket as read, which does not depend on
** the order records come in (flow.c). A current roster is the bucket, so
** capacity takes its size for the store's count (the tests' build checks
** the two agree: a2m_stack_pick_check_for_tests).
**
** Each fact has its key beside it (spill_key.c), made once as it enters:
** the order of the bucket by retention, which the clock does not change,
** so a spill of one unit is a pass over the keys, not an exp2 a record.
*/
#include <stdlib.h>
#include <string.h>

#include "stack/stack_internal.h"
#include "util/clock.h"
#include "util/grow.h"

#ifdef A2M_TEST_HOOKS
static int rosters_off;

void a2m_stack_rosters_off_for_tests(int off)
{
	rosters_off = off;
}
#else
#define rosters_off 0
#endif

/* Frees r's facts and empties the slot. */
static void roster_clear(a2m_roster *r)
{
	a2m_record_array_free(r->v, r->n);
	free(r->keys);
	free(r->session);
	memset(r, 0, sizeof *r);
}

/* The tier of r's bucket. */
static const a2m_tier *roster_tier(const a2m_stack *st, const a2m_roster *r)
{
	return &st->cfg.tiers.tiers[r->tier];
}

/* r->keys[i] for the fact r->v[i] (spill_key.c). */
static void roster_key(const a2m_stack *st, const a2m_roster *r, size_t i)
{
	const a2m_tier *t = roster_tier(st, r);
	a2m_stack_spill_key(t, a2m_stack_weighs_age(t), r->v[i], r->base, &r->keys[i]);
}

void a2m_stack_rosters_free(a2m_stack *st)
{
	for (size_t i = 0; i < A2M_ROSTERS; i++)
		roster_clear(&st->rosters[i]);
}

uint64_t a2m_stack_roster_stamp(a2m_stack *st)
{
	a2m_store *s = st->store;
	return s->ops->stamp ? s->ops->stamp(s) : 0;
}

/* Whether rec (tier and session) belongs to r's bucket. */
static int in_bucket(const a2m_stack *st, const a2m_roster *r, const a2m_record *rec)
{
	int ti = a2m_tiers_index(&st->cfg.tiers, rec->tier);
	if (ti < 0 || (size_t)ti != r->tier)
		return 0;
	return !st->cfg.tiers.tiers[ti].per_session || a2m_stack_same_str(rec->session, r->session);
}

a2m_record **a2m_stack_roster_get(a2m_stack *st, size_t tier, const char *session,
				  size_t *n, a2m_roster_keys *keys)
{
	*n = 0;
	memset(keys, 0, sizeof *keys);
	if (!st->store->ops->stamp || rosters_off)
		return NULL;
	uint64_t now = a2m_stack_roster_stamp(st);
	for (size_t i = 0; i < A2M_ROSTERS; i++) {
		a2m_roster *r = &st->rosters[i];
		if (!r->live || r->tier != tier || !a2m_stack_same_str(r->session, session))
			continue;
		if (r->stamp != now) {
			roster_clear(r);
			return NULL;
		}
		r->used = ++st->roster_clock;
		*n = r->n;
		keys->v = r->keys;
		keys->base = r->base;
		return r->v;
	}
	return NULL;
}

int a2m_stack_roster_put(a2m_stack *st, size_t tier, const char *session,
			 a2m_record **v, size_t n)
{
	if (!st->store->ops->stamp || rosters_off)
		return 0;
	a2m_roster *slot = NULL;
	for (size_t i = 0; i < A2M_ROSTERS; i++) {
		a2m_roster *r = &st->rosters[i];
		if (r->live && r->tier == tier && a2m_stack_same_str(r->session, session)) {
			slot = r;
			break;
		}
		if (!slot || (slot->live && (!r->live || r->used < slot->used)))
			slot = r;
	}
	char *copy = session ? strdup(session) : NULL;
	if (session && !copy)
		return 0;
	/* The facts' keys, when there is memory for them (else no keyed
	** pick for this bucket: the plan weighs it whole). */
	a2m_spill_key *keys = malloc((n ? n : 1) * sizeof *keys);
	roster_clear(slot);
	slot->live = 1;
	slot->tier = tier;
	slot->session = copy;
	slot->v = v;
	slot->n = slot->cap = n;
	slot->keys = keys;
	slot->base = a2m_clock_now_ms();
	for (size_t i = 0; keys && i < n; i++)
		roster_key(st, slot, i);
	slot->stamp = a2m_stack_roster_stamp(st);
	slot->used = ++st->roster_clock;
	return 1;
}

a2m_record *a2m_stack_facts_of(const a2m_record *rec)
{
	a2m_record *f = a2m_record_new();
	if (!f)
		return NULL;
	f->seq = rec->seq;
	f->created_at = rec->created_at;
	f->salience = rec->salience;
	f->accessed_at = rec->accessed_at;
	f->access_count = rec->access_count;
	if ((rec->id && !(f->id = strdup(rec->id))) ||
	    (rec->group && !(f->group = strdup(rec->group))) ||
	    (rec->tier && !(f->tier = strdup(rec->tier))) ||
	    (rec->session && !(f->session = strdup(rec->session)))) {
		a2m_record_free(f);
		return NULL;
	}
	return f;
}

/* Takes the record of seq out of r when it was there (was in r's bucket)
** and, when now belongs there, its facts in. */
static int roster_apply(const a2m_stack *st, a2m_roster *r, int64_t seq,
			const a2m_record *was, const a2m_record *now)
{
	size_t n = was && in_bucket(st, r, was) ? r->n : 0;
	for (size_t i = 0; i < n; i++) {
		if (r->v[i]->seq != seq)
			continue;
		a2m_record_free(r->v[i]);
		r->v[i] = r->v[--r->n];
		if (r->keys)
			r->keys[i] = r->keys[r->n];
		break;
	}
	if (!now || !in_bucket(st, r, now))
		return 0;
	/* v and keys share one capacity (util/grow.h). */
	if (r->n == r->cap) {
		size_t cap = a2m_grow_cap(r->cap, r->n + 1);
		if (!cap || a2m_resize((void **)&r->v, cap, sizeof *r->v) ||
		    (r->keys && a2m_resize((void **)&r->keys, cap, sizeof *r->keys)))
			return -1; /* the roster is dropped (a2m_stack_roster_note) */
		r->cap = cap;
	}
	a2m_record *f = a2m_stack_facts_of(now);
	if (!f)
		return -1;
	r->v[r->n++] = f;
	if (r->keys)
		roster_key(st, r, r->n - 1);
	return 0;
}

void a2m_stack_roster_note(a2m_stack *st, uint64_t before, int64_t seq, const a2m_record *was,
			   const a2m_record *now)
{
	if (!st->store->ops->stamp)
		return;
	uint64_t after = a2m_stack_roster_stamp(st);
	for (size_t i = 0; i < A2M_ROSTERS; i++) {
		a2m_roster *r = &st->rosters[i];
		if (!r->live)
			continue;
		if (r->stamp != before || roster_apply(st, r, seq, was, now) != 0)
			roster_clear(r);  /* stale, or it could not follow */
		else
			r->stamp = after;
	}
}
