/*
** test_blend_least.c — the blend's floor (src/stack/blend_least.c): the
** least share of a relevance recall's blend leaves any record, which the
** scorer's pruning takes as its floor. It bounds every record's factor at
** the query's now, on both engines, over ages and saliences spread wide,
** and is close to the least factor (salience aside); it follows a record
** older than any read before once the stack has committed and a second
** has passed, and is not read again while nothing was committed.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "check_stack.h"
#include "rank/scorer.h"
#include "stack/stack.h"
#include "stack/stack_internal.h"
#include "store/store.h"
#include "util/clock.h"

static char db_path[64];
static uint64_t rng_state = 0x2545F4914F6CDD1DULL;

static uint64_t rng(void)
{
	return check_rand(&rng_state);
}

static double unif(void)
{
	return (double)(rng() >> 11) / 9007199254740992.0;
}

static const char *const tiers[] = {"semantic", "episodic", "working", "procedural"};

/* 2026-12-01T00:00:00Z: the tests' now. */
#define T0 1796083200000LL

/* A stack over an empty store (memory, or SQLite at db_path), default tiers and blend. */
static a2m_stack *new_stack(int sqlite)
{
	a2m_stack_config cfg;
	a2m_store *s = check_store_empty(sqlite, db_path);
	a2m_scorer *sc = s ? check_bm25_attach(s, &cfg) : NULL;
	if (!sc)
		return NULL;
	cfg.blend = (a2m_blend){0.75, 0.15, 0.10};
	cfg.metric = A2M_METRIC_COSINE;
	return a2m_stack_new(s, sc, &cfg);
}

/* Writes one record through the stack's transaction: tier, age before T0, salience. */
static int add(a2m_stack *st, int i, const char *tier, int64_t created, double salience)
{
	a2m_error err = {0};
	char id[32];
	a2m_record *r = a2m_record_new();
	if (!r)
		return -1;
	snprintf(id, sizeof id, "r%d", i);
	r->id = strdup(id);
	r->content = strdup("alpha beta gamma");
	r->tier = strdup(tier);
	r->created_at = created;
	r->salience = salience;
	int rc = a2m_stack_begin(st, &err);
	if (!rc && (rc = st->store->ops->insert(st->store, r)) != 0)
		st->store->ops->rollback(st->store);
	else if (!rc)
		rc = a2m_stack_commit(st, &err);
	a2m_record_free(r);
	a2m_error_clear(&err);
	return rc;
}

/* What every record's factor is checked against, at one now. */
typedef struct factors {
	a2m_stack *st;
	int64_t    now;
	double     floor;
	double     least_plain;  /* the least factor with salience taken as 0 */
	size_t     n, below;
} factors;

static int check_one(const a2m_record *rec, void *ctx)
{
	factors *f = ctx;
	double factor = a2m_stack_blend_score(f->st, 1.0, rec, f->now);
	a2m_record plain = *rec;
	plain.salience = 0;
	double p = a2m_stack_blend_score(f->st, 1.0, &plain, f->now);
	if (p < f->least_plain)
		f->least_plain = p;
	if (factor < f->floor) {
		if (f->below++ == 0)
			fprintf(stderr, "  %s (%s, %lld ms old, salience %g): factor %.17g < floor %.17g\n",
				rec->id, rec->tier, (long long)(f->now - rec->created_at), rec->salience,
				factor, f->floor);
	}
	f->n++;
	return 0;
}

/* The floor at now against every record's factor: a bound, and a tight one. */
static double floor_checked(a2m_stack *st, int64_t now, size_t records)
{
	a2m_clock_set_for_tests(now);
	factors f = {.st = st, .now = now, .floor = a2m_stack_blend_least(st, now), .least_plain = 2};
	a2m_query q = {0};
	CHECK_INT(st->store->ops->scan(st->store, &q, check_one, &f), 0);
	CHECK_INT(f.n, records);
	CHECK_INT(f.below, 0);
	/* Within the margin of the least factor salience aside: the oldest
	** record of the tier that decays most is there to reach it. */
	CHECK(f.floor >= f.least_plain * (1 - 1e-5));
	return f.floor;
}

/*
** Ages from seconds to days, in every tier (two decay: working in 5
** minutes, episodic in a day), saliences from -4 to 8: the floor bounds
** every record's factor, at the time they were written and later.
*/
static void floor_bounds_every_record(int sqlite)
{
	static const int64_t spans[] = {10000, 2 * 3600000LL, 3 * 86400000LL};
	for (size_t k = 0; k < sizeof spans / sizeof spans[0]; k++) {
		a2m_clock_set_for_tests(T0);
		a2m_stack *st = new_stack(sqlite);
		CHECK(st != NULL);
		if (!st)
			return;
		size_t n = 120;
		for (size_t i = 0; i < n; i++)
			CHECK_INT(add(st, (int)i, tiers[rng() % 4], T0 - (int64_t)(rng() % (uint64_t)spans[k]),
				      unif() * 12 - 4),
				  0);
		double fresh = floor_checked(st, T0, n);
		/* Ten seconds old at most: nearly the blend at recency 1 (0.9). */
		if (k == 0)
			CHECK(fresh > 0.89);
		/* Later, with nothing written: the ages read still bound, the floor
		** lower (or the relevance's share already: the working tier's
		** oldest is hours old from the second span on). */
		double later = floor_checked(st, T0 + 3600000, n);
		CHECK(later < fresh || fresh < 0.75 + 1e-6);
		CHECK(floor_checked(st, T0 + 30 * 86400000LL, n) >= 0.75 * (1 - 1e-9));
		a2m_stack_free(st);
	}
	a2m_clock_set_for_tests(0);
	check_remove_db(db_path);
}

static void test_floor_bounds_every_record_memory(void)
{
	floor_bounds_every_record(0);
}

static void test_floor_bounds_every_record_sqlite(void)
{
	floor_bounds_every_record(1);
}

/*
** A record older than every one read before (an import's): the floor
** takes it once the stack has committed and a second has passed (until
** then it may be too high: recall then asks for the complete list), and
** the tiers' oldest are not read again while nothing is committed.
*/
static void floor_follows_an_older_record(int sqlite)
{
	a2m_clock_set_for_tests(T0);
	a2m_stack *st = new_stack(sqlite);
	CHECK(st != NULL);
	if (!st)
		return;
	for (int i = 0; i < 20; i++)
		CHECK_INT(add(st, i, tiers[i % 4], T0 - 1000 + i, 0), 0);
	double fresh = floor_checked(st, T0, 20);
	CHECK(fresh > 0.89);
	uint64_t reads = a2m_stack_oldest_reads(st);
	CHECK_INT(reads, 1);
	/* Nothing committed: an hour later, the same ages, no read. */
	(void)a2m_stack_blend_least(st, T0 + 3600000);
	CHECK_INT(a2m_stack_oldest_reads(st), reads);
	a2m_clock_set_for_tests(T0);
	CHECK_INT(add(st, 20, "episodic", T0 - 2 * 86400000LL, 0), 0);
	/* Within the second: not read again. */
	CHECK(a2m_stack_blend_least(st, T0 + 500) == a2m_stack_blend_least(st, T0 + 500));
	CHECK_INT(a2m_stack_oldest_reads(st), reads);
	/* A second on: read, and a bound again (0.75 + 0.15 / 4 for two days
	** at a day's half-life). */
	double older = floor_checked(st, T0 + 1000, 21);
	CHECK_INT(a2m_stack_oldest_reads(st), reads + 1);
	CHECK(older < 0.79);
	a2m_stack_free(st);
	a2m_clock_set_for_tests(0);
	check_remove_db(db_path);
}

static void test_floor_follows_an_older_record_memory(void)
{
	floor_follows_an_older_record(0);
}

static void test_floor_follows_an_older_record_sqlite(void)
{
	floor_follows_an_older_record(1);
}

/*
** Whether a scope has anything to turn away (a2m_stack_private_tiers_empty,
** ranked.c's keeps_all): not known before the tiers' oldest are read; 1
** while the private tier (working, which decays) holds nothing, as last
** read; 0 once a record in it is read, and for a private tier that does
** not decay (its oldest is never read).
*/
static void private_tiers_empty(int sqlite)
{
	a2m_clock_set_for_tests(T0);
	a2m_stack *st = new_stack(sqlite);
	CHECK(st != NULL);
	if (!st)
		return;
	CHECK_INT(add(st, 0, "semantic", T0 - 1000, 0), 0);
	CHECK_INT(add(st, 1, "episodic", T0 - 1000, 0), 0);
	CHECK_INT(a2m_stack_private_tiers_empty(st), 0);
	(void)a2m_stack_blend_least(st, T0);
	CHECK_INT(a2m_stack_private_tiers_empty(st), 1);
	CHECK_INT(add(st, 2, "working", T0 - 500, 0), 0);
	/* Within the second the last read stands: a hint, not a proof. */
	(void)a2m_stack_blend_least(st, T0 + 500);
	CHECK_INT(a2m_stack_private_tiers_empty(st), 1);
	(void)a2m_stack_blend_least(st, T0 + 1000);
	CHECK_INT(a2m_stack_private_tiers_empty(st), 0);
	a2m_stack_free(st);
	/* A private tier that does not decay is never read: not known empty. */
	st = new_stack(sqlite);
	CHECK(st != NULL);
	if (!st)
		return;
	CHECK_INT(add(st, 0, "semantic", T0 - 1000, 0), 0);
	st->cfg.tiers.tiers[0].half_life_ms = 0;  /* working */
	(void)a2m_stack_blend_least(st, T0);
	CHECK_INT(a2m_stack_private_tiers_empty(st), 0);
	a2m_stack_free(st);
	a2m_clock_set_for_tests(0);
	check_remove_db(db_path);
}

static void test_private_tiers_empty_memory(void)
{
	private_tiers_empty(0);
}

static void test_private_tiers_empty_sqlite(void)
{
	private_tiers_empty(1);
}

/* No blend, or only relevance: the floor is 1 and the share, nothing read. */
static void test_floor_without_recency(void)
{
	a2m_clock_set_for_tests(T0);
	a2m_stack *st = new_stack(0);
	CHECK(st != NULL);
	if (!st)
		return;
	CHECK_INT(add(st, 0, "episodic", T0 - 86400000LL * 30, 0), 0);
	st->cfg.blend = (a2m_blend){0.8, 0, 0.2};
	CHECK_NEAR(a2m_stack_blend_least(st, T0), 0.8, 1e-12);
	st->cfg.blend = (a2m_blend){0, 0, 0};
	CHECK_NEAR(a2m_stack_blend_least(st, T0), 1, 0);
	CHECK_INT(a2m_stack_oldest_reads(st), 0);
	a2m_stack_free(st);
	a2m_clock_set_for_tests(0);
}

int main(void)
{
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-blend-least-%d.db", (int)getpid());
	static const test_case tests[] = {
		TEST(test_floor_bounds_every_record_memory),
		TEST(test_floor_bounds_every_record_sqlite),
		TEST(test_floor_follows_an_older_record_memory),
		TEST(test_floor_follows_an_older_record_sqlite),
		TEST(test_floor_without_recency),
		TEST(test_private_tiers_empty_memory),
		TEST(test_private_tiers_empty_sqlite),
		{NULL, NULL},
	};
	int rc = run_tests(tests);
	check_remove_db(db_path);
	return rc;
}
