/*
** check_capacity.c — the second half of the tiers capability (spec
** §3.4, §4.7; DECISIONS 006): consolidate, and capacity kept by spilling
** whole groups down the spill chain — never into procedural.
**
** Like check_tiers.c, everything is derived from describe's "tiers";
** a check the layout cannot exercise (no bounded tier with spill_to) skips.
** Tiers are read back with timeline, never recall: a recall is an access
** and may promote.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

/*
** A bounded tier whose capacity lies in [min, max]: one that spills to a
** described tier before one that drops (spec §4.7), per-session ones before
** others (a fresh session makes them empty), then the smallest. NULL and a
** skip when there is none.
*/
static const json_t *pick_bounded(conf_ctx *cx, int64_t min_capacity, int64_t max_capacity)
{
	const json_t *tiers = conf_tier_layout(cx);
	const json_t *best = NULL;
	int best_rank = 0;
	if (!tiers)
		return NULL;
	int sessions = conf_has_capability(cx, "sessions");
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const json_t *t = json_array_get(tiers, i);
		int64_t cap = conf_tier_capacity(t);
		const char *to = conf_tier_str(t, "spill_to");
		if (cap < min_capacity || cap > max_capacity || cap == 0 ||
		    (to && !conf_tier(cx, to)))
			continue;
		int rank = (to != NULL) * 2 + (sessions && conf_tier_flag(t, "per_session") == 1);
		if (!best || rank > best_rank ||
		    (rank == best_rank && cap < conf_tier_capacity(best))) {
			best = t;
			best_rank = rank;
		}
	}
	if (!best)
		conf_skip(cx, "the layout has no bounded tier with a capacity of %lld to %lld",
			  (long long)min_capacity, (long long)max_capacity);
	return best;
}

/* The most records a capacity check will write. */
#define MAX_FILL 2000

/* ---- consolidate (spec §4.7) ---- */

/* The consolidate result, after checking its shape; NULL after failing. */
static json_t *consolidate(conf_ctx *cx)
{
	static const char *const ints[] = {"moved", "promoted", "dropped", "summarized"};
	const json_t *tiers = conf_tier_layout(cx);
	json_t *r = tiers ? conf_result(cx, "memory/consolidate", NULL) : NULL;
	if (!r)
		return NULL;
	for (size_t i = 0; i < CONF_COUNT(ints); i++) {
		json_t *v = json_object_get(r, ints[i]);
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			conf_fail(cx, "consolidate returned %s %s, expected an integer >= 0",
				  ints[i], conf_show(cx, v));
			return NULL;
		}
	}
	json_t *counts = json_object_get(r, "counts");
	if (!json_is_object(counts) || json_object_size(counts) != json_array_size(tiers)) {
		conf_fail(cx, "consolidate returned counts %s, expected one integer per described "
			  "tier", conf_show(cx, counts));
		return NULL;
	}
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const char *name = conf_tier_str(json_array_get(tiers, i), "name");
		json_t *v = json_object_get(counts, name ? name : "");
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			conf_fail(cx, "consolidate's counts give tier \"%s\" %s, expected an "
				  "integer >= 0", name ? name : "?", conf_show(cx, v));
			return NULL;
		}
	}
	return r;
}

static void check_consolidate_shape(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_need_writes(cx))
		return;
	if (consolidate(cx))
		conf_pass(cx);
}

/*
** With scopes, a record private to an owner is in the store while both
** counts are taken: describe without owner and consolidate are two answers
** to one question (spec §4.1: owner is what scopes describe's counts, and
** consolidate has no owner), so they must agree on it too.
*/
static const char *write_owned_private(conf_ctx *cx, const char **m)
{
	const json_t *tiers = conf_tiers(cx);
	if (!conf_has_capability(cx, "scopes"))
		return NULL;
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const json_t *t = json_array_get(tiers, i);
		if (conf_tier_flag(t, "shared") != 0 || conf_tier_room(cx, t, 1) != 1)
			continue;
		const char *owner = conf_str(cx, "cfo-%s", conf_marker(cx));
		json_t *fields = conf_keep(cx, json_deep_copy(conf_tier_fields(cx,
						conf_tier_str(t, "name"))));
		json_object_set_new(fields, "owner", json_string(owner));
		*m = conf_marker(cx);
		return conf_write_n(cx, *m, 1, fields) ? owner : NULL;
	}
	return NULL;
}

static void compare_counts(conf_ctx *cx)
{
	json_t *r = consolidate(cx);
	json_t *now = r ? conf_tier_counts(cx, NULL) : NULL;
	if (!now)
		return;
	json_t *counts = json_object_get(r, "counts");
	const char *name;
	json_t *v;
	json_object_foreach(counts, name, v) {
		if (conf_tier_count_in(now, name) != json_integer_value(v)) {
			conf_fail(cx, "consolidate counted %lld in \"%s\"; describe right after "
				  "reports %lld", (long long)json_integer_value(v), name,
				  (long long)conf_tier_count_in(now, name));
			return;
		}
	}
	conf_pass(cx);
}

static void check_consolidate_counts(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_need_writes(cx))
		return;
	const char *m = NULL;
	const char *owner = write_owned_private(cx, &m);
	compare_counts(cx);
	/* The runner's clean-up reads without an owner; it may not reach this. */
	if (owner)
		conf_call(cx, "memory/forget",
			  json_pack("{s:{s:s},s:s}", "where", "cfm", m, "owner", owner));
}

/* After consolidate, no bounded tier counted as a whole is over capacity
** (a per-session tier's capacity is per session, so its total may be). */
static void check_consolidate_within(conf_ctx *cx, const void *arg)
{
	(void)arg;
	if (!conf_need_writes(cx))
		return;
	json_t *r = consolidate(cx);
	if (!r)
		return;
	const json_t *tiers = conf_tiers(cx);
	json_t *counts = json_object_get(r, "counts");
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const json_t *t = json_array_get(tiers, i);
		const char *name = conf_tier_str(t, "name");
		int64_t cap = conf_tier_capacity(t);
		int64_t n = conf_tier_count_in(counts, name);
		if (cap > 0 && conf_tier_flag(t, "per_session") != 1 && n > cap) {
			conf_fail(cx, "after consolidate, tier \"%s\" holds %lld records, over its "
				  "capacity %lld", name, (long long)n, (long long)cap);
			return;
		}
	}
	conf_pass(cx);
}

/* ---- capacity, spills, groups (spec §3.4, §4.7; DECISIONS 006) ---- */

/* How many records share the bucket the fields wrote into in tier t: the
** session's when t is per-session and fields name one, else the whole
** tier. -1 after failing. */
static int64_t bucket_count(conf_ctx *cx, const json_t *t, const json_t *fields)
{
	const char *name = conf_tier_str(t, "name");
	const char *session = conf_str_of(fields, "session");
	if (conf_tier_flag(t, "per_session") == 1 && session) {
		json_t *in = conf_read(cx, "memory/timeline",
				       json_pack("{s:s,s:{s:s},s:I}", "tier", name, "where",
						 "session", session, "limit",
						 (json_int_t)(conf_tier_capacity(t) + MAX_FILL)),
				       NULL);
		return in ? (int64_t)json_array_size(in) : -1;
	}
	json_t *counts = conf_tier_counts(cx, NULL);
	return counts ? conf_tier_count_in(counts, name) : -1;
}

/*
** After n records of the marker went into bounded tier t: the bucket holds
** at least min_out fewer, what left went down t's spill chain and nowhere
** else, and — unless may_drop, from conf_tier_can_drop before the writes —
** every record is still there.
** Returns the records read back, or NULL after failing.
*/
static json_t *spilled_down(conf_ctx *cx, const json_t *t, const json_t *fields,
			    const char *m, size_t n, size_t min_out, int may_drop)
{
	const char *name = conf_tier_str(t, "name");
	int64_t cap = conf_tier_capacity(t);
	int64_t held = bucket_count(cx, t, fields);
	if (held < 0)
		return NULL;
	if (held > cap) {
		conf_fail(cx, "tier \"%s\" (capacity %lld) holds %lld records after the writes, "
			  "without a consolidate", name, (long long)cap, (long long)held);
		return NULL;
	}
	json_t *mine = conf_read(cx, "memory/timeline",
				 json_pack("{s:{s:s},s:I}", "where", "cfm", m, "limit",
					   (json_int_t)(n + 16)),
				 m);
	if (!mine)
		return NULL;
	if (json_array_size(mine) != n && !may_drop) {
		conf_fail(cx, "%zu of the %zu records written are left, though nothing below "
			  "\"%s\" drops records", json_array_size(mine), n, name);
		return NULL;
	}
	size_t out = 0;
	size_t i;
	json_t *rec;
	json_array_foreach(mine, i, rec) {
		const char *at = conf_str_of(rec, "tier");
		if (at && strcmp(at, name) == 0)
			continue;
		if (!at || !conf_tier_below(cx, name, at)) {
			conf_fail(cx,
				  "a record overflowing \"%s\" is in tier %s, which is not on "
				  "its spill chain",
				  name, conf_show(cx, json_object_get(rec, "tier")));
			return NULL;
		}
		out++;
	}
	out += n - json_array_size(mine);
	if (out < min_out) {
		conf_fail(cx, "only %zu of %zu records written into \"%s\" (capacity %lld) left "
			  "it, expected at least %zu", out, n, name, (long long)cap, min_out);
		return NULL;
	}
	return mine;
}

/* The sum of the counts of procedural tiers; -1 after failing. */
static int64_t procedural_total(conf_ctx *cx, int *any)
{
	const json_t *tiers = conf_tiers(cx);
	json_t *counts = conf_tier_counts(cx, NULL);
	int64_t sum = 0;
	*any = 0;
	if (!counts)
		return -1;
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const json_t *t = json_array_get(tiers, i);
		const char *kind = conf_tier_str(t, "kind");
		if (kind && strcmp(kind, "procedural") == 0) {
			*any = 1;
			sum += conf_tier_count_in(counts, conf_tier_str(t, "name"));
		}
	}
	return sum;
}

/* How many records past capacity the overflow checks write. */
#define OVERFLOW 3

/*
** Fills a bounded tier past capacity without consolidating. With arg
** "procedural", checks the procedural tiers did not grow instead.
*/
static void check_capacity(conf_ctx *cx, const void *arg)
{
	int procedural = arg != NULL;
	const json_t *t = pick_bounded(cx, 1, MAX_FILL - OVERFLOW);
	if (!t)
		return;
	int any = 0;
	int64_t proc_before = 0;
	if (procedural) {
		proc_before = procedural_total(cx, &any);
		if (proc_before < 0)
			return;
		if (!any) {
			conf_skip(cx, "the layout has no tier of kind procedural");
			return;
		}
	}
	const char *m = conf_marker(cx);
	json_t *fields = conf_tier_fields(cx, conf_tier_str(t, "name"));
	size_t n = (size_t)conf_tier_capacity(t) + OVERFLOW;
	int may_drop = conf_tier_can_drop(cx, conf_tier_str(t, "name"), n);
	if (may_drop < 0 || !conf_write_n(cx, m, n, fields) ||
	    !spilled_down(cx, t, fields, m, n, OVERFLOW, may_drop))
		return;
	if (procedural) {
		int64_t proc_after = procedural_total(cx, &any);
		if (proc_after < 0)
			return;
		if (proc_after != proc_before) {
			conf_fail(cx,
				  "the procedural tiers held %lld records before \"%s\" overflowed "
				  "and %lld after",
				  (long long)proc_before, conf_tier_str(t, "name"),
				  (long long)proc_after);
			return;
		}
	}
	conf_pass(cx);
}

/*
** Two groups written first (so the oldest), then singles to capacity + 2.
** A server that evicts record by record splits the first group; one that
** honours §3.4 moves it whole.
*/
static void check_spill_groups(conf_ctx *cx, const void *arg)
{
	(void)arg;
	enum { G1 = 3, G2 = 4, OVER = 2 };
	const json_t *t = pick_bounded(cx, G1 + G2, MAX_FILL - OVER);
	if (!t)
		return;
	int64_t cap = conf_tier_capacity(t);
	const char *m = conf_marker(cx);
	const char *groups[] = {conf_str(cx, "%s-g1", m), conf_str(cx, "%s-g2", m)};
	const size_t sizes[] = {G1, G2};
	json_t *fields = conf_tier_fields(cx, conf_tier_str(t, "name"));
	size_t n = (size_t)cap + OVER;
	int may_drop = conf_tier_can_drop(cx, conf_tier_str(t, "name"), n);
	if (may_drop < 0)
		return;
	for (size_t g = 0; g < 2; g++) {
		json_t *f = conf_keep(cx, json_deep_copy(fields));
		json_object_set_new(f, "group", json_string(groups[g]));
		if (!conf_write_n(cx, m, sizes[g], f))
			return;
	}
	size_t singles = (size_t)cap - G1 - G2;
	if ((singles && !conf_write_n(cx, m, singles, fields)) ||
	    !conf_write_n(cx, m, OVER, fields))
		return;
	json_t *mine = spilled_down(cx, t, fields, m, n, OVER, may_drop);
	if (!mine)
		return;
	for (size_t g = 0; g < 2; g++) {
		const char *tier = NULL;
		size_t found = 0;
		size_t i;
		json_t *rec;
		json_array_foreach(mine, i, rec) {
			const char *grp = conf_str_of(rec, "group");
			if (!grp || strcmp(grp, groups[g]) != 0)
				continue;
			found++;
			const char *at = conf_str_of(rec, "tier");
			if (!tier)
				tier = at;
			if (!at || strcmp(at, tier) != 0) {
				conf_fail(cx, "group %s is split: members in \"%s\" and %s",
					  groups[g], tier,
					  conf_show(cx, json_object_get(rec, "tier")));
				return;
			}
		}
		if (found != 0 && found != sizes[g]) {
			conf_fail(cx,
				  "%zu of the %zu records of group %s are left: a group is kept "
				  "or discarded whole (spec §3.4)",
				  found, sizes[g], groups[g]);
			return;
		}
	}
	conf_pass(cx);
}

static const conf_check capacity_checks[] = {
	{"consolidate returns integers moved, promoted, dropped, summarized and counts per tier",
	 check_consolidate_shape, NULL},
	{"consolidate's counts match describe's right after", check_consolidate_counts, NULL},
	{"after consolidate no bounded tier is over capacity", check_consolidate_within, NULL},
	{"a bounded tier keeps its capacity on write; the overflow goes down its spill chain",
	 check_capacity, NULL},
	{"an overflow never reaches a procedural tier", check_capacity, "procedural"},
	{"a spill moves a group whole", check_spill_groups, NULL},
};

const conf_group conf_group_capacity = {"tiers", "tiers", capacity_checks,
					CONF_COUNT(capacity_checks), 0};
