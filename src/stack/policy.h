/*
** policy.h — the tier policy's decisions as pure functions over records,
** with no store under them: how much a record is worth keeping, whether a
** record has earned its promotion, and which units leave a bucket over
** capacity, weakest first. The stack applies them to its store (flow.c);
** a federating router (src/federate/) applies the very same ones to
** records its backends hold, so `a2m federate` and `a2m serve` follow one
** set of rules (docs/FEDERATION.md).
*/
#ifndef A2M_STACK_POLICY_H
#define A2M_STACK_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "stack/layout.h"
#include "store/record.h"

/*
** The retention of rec, which lives in tier t (NULL: an unknown tier):
** salience × recency (t's half-life, since the last access) × (1 +
** access_count); in a working tier recency alone, since creation.
*/
double a2m_stack_retention(const a2m_tier *t, const a2m_record *rec, int64_t now);

/* Whether tier t (NULL: no) weighs its records by age alone (a working tier). */
int a2m_stack_weighs_age(const a2m_tier *t);

/*
** a2m_stack_retention with by_age = a2m_stack_weighs_age(t) already known:
** the same number, for a pass over many records of one tier.
*/
double a2m_stack_retention_as(const a2m_tier *t, int by_age, const a2m_record *rec,
			      int64_t now);

/*
** Whether a record of tier t (NULL: an unknown tier, never) recalled
** `recalls` times has earned its tier's promote_to (DECISIONS 006).
*/
int a2m_stack_promotion_earned(const a2m_tier *t, int64_t recalls);

/* One unit of eviction: a group (or a lone record) within one bucket. */
typedef struct a2m_spill_unit {
	const a2m_record *first;      /* any member (borrowed from the records given) */
	double            retention;  /* the strongest member's */
	int64_t           newest;     /* created_at of the newest member */
	int64_t           newest_seq; /* breaks ties within one millisecond */
	size_t            size;       /* members in the bucket */
} a2m_spill_unit;

/*
** Which units of recs[0..n) — one bucket of tier t (a tier, or one
** session of a per-session tier) — leave it for at most t->capacity to
** remain: *out (malloc'd, free()) holds every unit, and the first
** *n_leave of them leave, weakest first (among equals the older first);
** the units after them are in no particular order. recs may be reordered
** (by group); the units point into it. Nothing is over (n at
** most the capacity): *out NULL, 0 units. Returns 0, or -1 when memory
** runs out.
*/
int a2m_stack_spill_plan(const a2m_tier *t, a2m_record **recs, size_t n, int64_t now,
			 a2m_spill_unit **out, size_t *n_units, size_t *n_leave);

#endif
