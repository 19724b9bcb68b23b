/*
** test_spill_key.c — capacity's keyed pick (src/stack/spill_key.c) against
** the plan it stands in for (a2m_stack_spill_plan, flow.c), with no store:
**
**   - on thousands of random buckets built to be near ties (salience 2^k
**     created k half-lives earlier has the very same retention as a real
**     number, so only rounding orders them; records of one millisecond;
**     access counts; ages of hundreds of half-lives), whenever the pick
**     answers it names the unit the plan sends first, in a working tier and
**     in an episodic one, with and without decay;
**   - it does answer on most of those buckets, with keys taken long before
**     the spill (a roster kept for days);
**   - records not yet past (the one just written, created now; one in the
**     future), whose decay the plan holds at 1, are weighed as it weighs
**     them;
**   - it refuses (the plan decides) what its bound does not cover: a
**     group, more than one unit to leave, a salience at or below zero or
**     tiny, a record older than 1 000 half-lives.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "stack/stack_internal.h"

#define MAXN 64

typedef struct bucket {
	a2m_tier      t;
	int           by_age;
	a2m_record   *v[MAXN];
	a2m_spill_key k[MAXN];
	size_t        n;
	int64_t       base;
} bucket;

static void bucket_init(bucket *b, const char *kind, double half_life_ms, int64_t base)
{
	memset(b, 0, sizeof *b);
	b->t.name = (char *)kind;
	b->t.kind = (char *)kind;
	b->t.half_life_ms = half_life_ms;
	b->by_age = a2m_stack_weighs_age(&b->t);
	b->base = base;
}

static a2m_record *bucket_add(bucket *b, int64_t created, double salience, int64_t count,
			      int64_t accessed)
{
	a2m_record *r = a2m_record_new();
	if (!r)
		abort();
	r->seq = (int64_t)b->n + 1;
	r->created_at = created;
	r->salience = salience;
	r->access_count = count;
	r->accessed_at = accessed;
	b->v[b->n++] = r;
	return r;
}

static void bucket_free(bucket *b)
{
	for (size_t i = 0; i < b->n; i++)
		a2m_record_free(b->v[i]);
	b->n = 0;
}

/* The keys as a roster takes them (at b->base). */
static void bucket_keys(bucket *b)
{
	for (size_t i = 0; i < b->n; i++)
		a2m_stack_spill_key(&b->t, b->by_age, b->v[i], b->base, &b->k[i]);
}

/* -1: the pick refused; else 1 when it agrees with the plan, 0 when not. */
static int pick_agrees(bucket *b, int64_t now)
{
	bucket_keys(b);
	b->t.capacity = (int64_t)b->n - 1;
	size_t w;
	if (!a2m_stack_spill_pick(&b->t, b->by_age, b->v, b->k, b->n, b->base, now, &w))
		return -1;
	a2m_record *copy[MAXN];
	memcpy(copy, b->v, b->n * sizeof *copy);
	a2m_spill_unit *units;
	size_t nu, leave;
	if (a2m_stack_spill_plan(&b->t, copy, b->n, now, &units, &nu, &leave) != 0)
		abort();
	int same = leave == 1 && units[0].first == b->v[w];
	if (!same)
		printf("  pick seq %lld, plan seq %lld (%s, %zu records)\n", (long long)b->v[w]->seq,
		       (long long)(leave ? units[0].first->seq : -1), b->t.kind, b->n);
	free(units);
	return same;
}

/*
** Random near-tie buckets: records whose retentions are equal as real
** numbers (salience 2^k, k half-lives older; access counts 2^j - 1, j
** half-lives older), give or take a millisecond.
*/
static void random_buckets(const char *kind, double half_life_ms, int64_t age_span,
			   int rounds, int *answered, int *wrong)
{
	static const double sal[] = {1, 2, 4, 0.5, 0.25, 3, 1.5, 8, 1e6, 1e-5};
	static const int64_t counts[] = {0, 1, 3, 7, 2};
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	const int64_t now = 1700000000000LL;
	for (int round = 0; round < rounds; round++) {
		bucket b;
		/* Keys taken up to a few days before the spill, or after. */
		int64_t base = now - (int64_t)(check_rand(&seed) % 400000000ULL) + 100000000;
		bucket_init(&b, kind, half_life_ms, base);
		size_t n = 2 + check_rand(&seed) % 40;
		int64_t anchor = now - 1 - (int64_t)(check_rand(&seed) % (uint64_t)age_span);
		for (size_t i = 0; i < n; i++) {
			double s = sal[check_rand(&seed) % (sizeof sal / sizeof sal[0])];
			int64_t count = counts[check_rand(&seed) % (sizeof counts / sizeof counts[0])];
			double logs = log2(s) + log2(1.0 + (double)count);
			double hl = half_life_ms > 0 ? half_life_ms : 1000;
			int64_t c = anchor - (int64_t)llround(logs * hl) +
				    (int64_t)(check_rand(&seed) % 3) - 1;
			/* One in eight just written, or a little ahead of the clock. */
			uint64_t late = check_rand(&seed) % 16;
			if (late < 2)
				c = now + (int64_t)late * 3;
			int64_t accessed = check_rand(&seed) % 4 == 0 ? c + 5 : 0;
			bucket_add(&b, c, s, count, accessed);
		}
		int r = pick_agrees(&b, now);
		if (r >= 0)
			(*answered)++;
		if (r == 0)
			(*wrong)++;
		bucket_free(&b);
	}
}

static void test_the_pick_is_the_plans_on_near_ties(void)
{
	static const struct {
		const char *kind;
		double      half_life_ms;
		int64_t     age_span;
	} cases[] = {
		{"episodic", 86400000.0, 86400000LL * 30},  /* the default episodic tier */
		{"episodic", 10000.0, 10000LL * 900},       /* hundreds of half-lives */
		{"episodic", 1000.0, 5000},
		{"episodic", 0, 1000000},                   /* no decay */
		{"working", 300000.0, 300000LL * 50},       /* the default working tier */
		{"working", 1000.0, 3000},
		{"working", 0, 1000},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int answered = 0, wrong = 0;
		random_buckets(cases[i].kind, cases[i].half_life_ms, cases[i].age_span, 3000,
			       &answered, &wrong);
		CHECK_INT(wrong, 0);
		/* Most buckets are within the bound: the pick is not a refusal. */
		if (answered < 2000)
			printf("  %s, half-life %g ms: %d of 3000 answered\n", cases[i].kind,
			       cases[i].half_life_ms, answered);
		CHECK(answered >= 2000);
	}
}

/* Equal retentions, computed equal: the older, then the lower seq, leaves. */
static void test_ties_go_to_the_older_then_the_lower_seq(void)
{
	const int64_t now = 1700000000000LL;
	bucket b;
	bucket_init(&b, "episodic", 0, now);
	bucket_add(&b, now - 50, 1, 0, 0);
	a2m_record *older = bucket_add(&b, now - 90, 1, 0, 0);
	bucket_add(&b, now - 10, 1, 0, 0);
	CHECK_INT(pick_agrees(&b, now), 1);
	size_t w = 99;
	CHECK(a2m_stack_spill_pick(&b.t, b.by_age, b.v, b.k, b.n, b.base, now, &w));
	CHECK(w < b.n && b.v[w] == older);
	bucket_free(&b);

	bucket_init(&b, "working", 300000.0, now);
	bucket_add(&b, now - 40, 1, 0, 0);
	a2m_record *first = bucket_add(&b, now - 40, 1, 0, 0);
	first->seq = 0; /* the lower seq of one millisecond */
	bucket_add(&b, now - 40, 1, 0, 0);
	CHECK_INT(pick_agrees(&b, now), 1);
	CHECK(a2m_stack_spill_pick(&b.t, b.by_age, b.v, b.k, b.n, b.base, now, &w));
	CHECK(w < b.n && b.v[w] == first);
	bucket_free(&b);
}

/* What the bound does not cover, the pick leaves to the plan. */
static void test_the_pick_refuses_what_its_bound_does_not_cover(void)
{
	const int64_t now = 1700000000000LL, day = 86400000LL;
	bucket b;
	size_t w;
	struct {
		int64_t created;
		double  salience;
		const char *group;
		int64_t capacity_less;
	} cases[] = {
		{now - 10, 0, NULL, 1},                          /* salience 0 */
		{now - 10, -1, NULL, 1},                         /* negative */
		{now - 10, 1e-7, NULL, 1},                       /* below 2^-20 */
		{now - 10, NAN, NULL, 1},
		{now - 1001 * day, 1, NULL, 1},                  /* past 1 000 half-lives */
		{now - 10, 1, "g", 1},                           /* a group */
		{now - 10, 1, NULL, 2},                          /* two to leave */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bucket_init(&b, "episodic", (double)day, now - day);
		bucket_add(&b, now - 3 * day, 2, 0, 0);
		bucket_add(&b, now - 2 * day, 1, 1, 0);
		a2m_record *r = bucket_add(&b, cases[i].created, cases[i].salience, 0, 0);
		if (cases[i].group)
			r->group = strdup(cases[i].group);
		bucket_keys(&b);
		b.t.capacity = (int64_t)b.n - cases[i].capacity_less;
		if (a2m_stack_spill_pick(&b.t, b.by_age, b.v, b.k, b.n, b.base, now, &w)) {
			printf("  case %zu answered\n", i);
			CHECK(0);
		}
		bucket_free(&b);
	}
	/* The same bucket with none of them: answered, records not yet past
	** among them (held at a decay of 1, as the plan holds them). */
	bucket_init(&b, "episodic", (double)day, now - day);
	bucket_add(&b, now - 3 * day, 2, 0, 0);
	bucket_add(&b, now - 2 * day, 1, 1, 0);
	bucket_add(&b, now - 10, 1, 0, 0);
	bucket_add(&b, now, 0.5, 0, 0);
	bucket_add(&b, now + 5, 0.125, 0, 0);
	CHECK_INT(pick_agrees(&b, now), 1);
	size_t w2 = 99;
	CHECK(a2m_stack_spill_pick(&b.t, b.by_age, b.v, b.k, b.n, b.base, now, &w2));
	CHECK(w2 < b.n && b.v[w2]->created_at == now + 5);  /* 0.125 × 1: the weakest */
	bucket_free(&b);
	/* A working tier weighs age alone: its salience does not matter. */
	bucket_init(&b, "working", 300000.0, now);
	bucket_add(&b, now - 20, -5, 0, 0);
	bucket_add(&b, now - 30, 0, 0, 0);
	CHECK_INT(pick_agrees(&b, now), 1);
	bucket_free(&b);
}

static const test_case tests[] = {
	TEST(test_the_pick_is_the_plans_on_near_ties),
	TEST(test_ties_go_to_the_older_then_the_lower_seq),
	TEST(test_the_pick_refuses_what_its_bound_does_not_cover),
	{NULL, NULL},
};

int main(void)
{
	return run_tests(tests);
}
