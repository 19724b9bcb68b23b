/*
** spill_key.c — the weakest unit of a full bucket, picked without weighing
** every record on every write.
**
** Why: once a bucket is full, each write that lands in it spills one unit,
** and the plan (flow.c, a2m_stack_spill_plan) computes the retention of
** every record, an exp2 each, because retention follows the clock: a lone
** remember into full default tiers weighed 24 + 256 records, ~36 k of its
** ~264 k instructions on SQLite (callgrind; docs/BENCHMARKS.md, "A lone
** write into full tiers, the keyed pick").
**
** How: a record's retention (score.c) is, as a real number,
**     R = S × C × 2^(-(now - L) / h)  =  2^(K - (now - base) / h)
** with S its salience, C = 1 + access_count, L its last access (its
** creation in a working tier, where S = C = 1), h the tier's half-life and
**     K = log2 S + log2 C + (L - base) / h,
** a key that does not depend on now. So the order of R between records is
** the order of K at every moment: the roster (roster.c) keeps K for each
** fact, computed once when the fact enters, and a pick is a pass over the
** keys. With no decay (h = 0), K = log2 S + log2 C and R = S × C.
**
** Why the pick is the plan's, exactly: the plan compares the retentions as
** computed in floating point, not R. Both the computed retention and the
** computed key are within a small relative error of the real numbers (below
** 2^-40 each, given a libm whose exp2 and log2 are within 2^-41: glibc's
** are within 2 ULP, 2^-51), so of two records whose keys differ by more than
** `margin` (2^-30 times their size, a thousandfold that bound), the one
** with the smaller key has the smaller computed retention. The pick finds
** the smallest key, then weighs with the plan's own arithmetic
** (a2m_stack_retention_as) every record whose key is within margin of it,
** and orders those as the plan does (retention, then creation, then seq):
** no record outside can be the plan's weakest, so the pick is its answer.
** A record whose time is not yet past (the one just written: created now)
** has its decay held at 1 by the plan, so it is weighed with the key it
** has at now (key_at). The bound needs numbers in the normal range: the
** pick is used only when every record's age is within 1 000 half-lives (no
** underflow) and every salience is at least 2^-20 (S × decay stays
** normal); a group anywhere, a salience below that, more than one unit to
** leave: the plan decides, as before.
** tests/test_spill_key.c compares the pick with the plan on near ties, and
** tests/test_spill.c on every spill of a random run (a2m_stack_pick_check).
*/
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "stack/stack_internal.h"

/* The oldest record the pick weighs, in half-lives: 2^-1000 stays normal. */
#define MAX_HALF_LIVES 1000.0
/* The least salience it weighs: S × 2^-1000 stays normal (above 2^-1022). */
#define MIN_SALIENCE 0x1p-20
/* |log2 S| + |log2 C| at most (S ≤ 1e6 < 2^20, C ≤ 2^64), for the margin. */
#define MAX_LOG_TERMS 84.0
/* The margin, relative to the keys' size: 2^10 times their error bound. */
#define MARGIN 0x1p-30

void a2m_stack_spill_key(const a2m_tier *t, int by_age, const a2m_record *f,
			 int64_t base, a2m_spill_key *out)
{
	double h = t->half_life_ms;
	out->key = NAN;
	out->last = f->created_at;
	if (f->group)
		return; /* a unit of several: the plan weighs it */
	double k = 0;
	if (!by_age) {
		double s = a2m_salience_clamp(f->salience);
		if (!(s >= MIN_SALIENCE) || f->access_count < 0)
			return;
		if (f->accessed_at > f->created_at)
			out->last = f->accessed_at;
		/* The same C the retention multiplies by (score.c). */
		k = log2(s) + log2(1.0 + (double)f->access_count);
	}
	if (h > 0)
		k += (double)(out->last - base) / h;
	out->key = k;
}

/*
** keys[i]'s key as the plan weighs it at now: a record not yet past (its
** last time at or after now, such as the one just written) has its decay
** held at 1 by the plan (score.c), so its key is taken as if its time were
** now: log2 of S × C, moved to base.
*/
static double key_at(const a2m_spill_key *k, double h, int64_t now)
{
	if (h > 0 && k->last >= now)
		return k->key - (double)(k->last - now) / h;
	return k->key;
}

int a2m_stack_spill_pick(const a2m_tier *t, int by_age, a2m_record *const *v,
			 const a2m_spill_key *keys, size_t n, int64_t base, int64_t now,
			 size_t *pick)
{
	double h = t->half_life_ms;
	if (n == 0 || (int64_t)n != t->capacity + 1)
		return 0; /* more than one leaves: the plan */
	/* One pass: the least key, the span of times, and the keys' sum,
	** which is NaN when one is (a pass a write over 257 facts: kept to
	** loads, compares and an add). */
	double kmin = INFINITY, sum = 0;
	int64_t first = INT64_MAX, latest = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		double k = keys[i].key;
		int64_t l = keys[i].last;
		sum += k;
		kmin = k < kmin ? k : kmin;
		first = l < first ? l : first;
		latest = l > latest ? l : latest;
	}
	if (isnan(sum))
		return 0; /* a NaN key (or keys summing to inf - inf: safe to refuse) */
	/* A record not yet past weighs as of now (key_at): again, when any. */
	int held = h > 0 && latest >= now;
	for (size_t i = 0; held && i < n; i++) {
		double k = key_at(&keys[i], h, now);
		kmin = k < kmin ? k : kmin;
	}
	double span = 0;
	if (h > 0) {
		/* Young enough that every decay is a normal number. */
		if ((double)(now - first) > MAX_HALF_LIVES * h)
			return 0;
		/* Every time, and now, is within first..latest widened to now:
		** the farthest from base sets the keys' size. */
		int64_t lo = first < now ? first : now, hi = latest > now ? latest : now;
		double a = fabs((double)(lo - base)), b = fabs((double)(hi - base));
		span = 2 * (a > b ? a : b) / h;
	}
	double bound = kmin + (MAX_LOG_TERMS + span + 1.0) * MARGIN;
	/* Among the keys within margin of the least, the plan's own order. */
	size_t w = n;
	double wr = 0;
	for (size_t i = 0; i < n; i++) {
		if (keys[i].key > bound && (!held || key_at(&keys[i], h, now) > bound))
			continue; /* (a held key is below its raw key: both are over) */
		const a2m_record *r = v[i];
		double ret = a2m_stack_retention_as(t, by_age, r, now);
		if (w == n || ret < wr ||
		    (ret == wr && (r->created_at < v[w]->created_at ||
				   (r->created_at == v[w]->created_at && r->seq < v[w]->seq)))) {
			w = i;
			wr = ret;
		}
	}
	if (w == n)
		return 0;
	*pick = w;
	return 1;
}
