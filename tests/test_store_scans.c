/*
** test_store_scans.c — the storage seam's rules (store.h) on scans (their order, early
** stops, filters and key prefixes), counts and scans by tier and session,
** and (memory) writes during a scan;
** each rule runs on the engines it names (the harness, output and files:
** tests/store_harness.h; what the rules share: tests/store_records.h).
*/
#include "store_records.h"

/* ---- scans ------------------------------------------------------------- */

static void test_same_ms_records_scan_in_insert_order(tctx *t)
{
	a2m_query desc = {.descending = 1};
	EXPECT_OK(put(t, "z", 1000, NULL, NULL));
	EXPECT_OK(put(t, "a", 1000, NULL, NULL));
	EXPECT_OK(put(t, "m", 1000, NULL, NULL));
	EXPECT_OK(put(t, "b", 1000, NULL, NULL));
	EXPECT_STR(scan_ids(t, &all_q), "z,a,m,b");
	EXPECT_STR(scan_ids(t, &desc), "b,m,a,z");
}

static void test_scan_orders_by_created_at_then_seq(tctx *t)
{
	a2m_query desc = {.descending = 1};
	a2m_record c = make("c", 300);
	EXPECT_OK(OPS->insert(t->s, &c));
	EXPECT_OK(put(t, "a", 100, NULL, NULL));
	EXPECT_OK(put(t, "b", 200, NULL, NULL));
	EXPECT_OK(put(t, "a2", 100, NULL, NULL));
	EXPECT_STR(scan_ids(t, &all_q), "a,a2,b,c");
	EXPECT_STR(scan_ids(t, &desc), "c,b,a2,a");
	/* An update that moves created_at moves the record; seq breaks the tie. */
	c.created_at = 100;
	EXPECT_OK(OPS->update(t->s, &c));
	EXPECT_STR(scan_ids(t, &all_q), "c,a,a2,b");
	EXPECT_STR(scan_ids(t, &desc), "b,a2,a,c");
}

static void test_scan_orders_records_inserted_out_of_order(tctx *t)
{
	char id[16];
	sbuf want = {0};
	/* Newest first, as an import of old records might arrive, with scans between. */
	for (int i = 100; i >= 1; i--) {
		snprintf(id, sizeof id, "r%03d", i);
		EXPECT_OK(put(t, id, i, NULL, NULL));
		if (i % 25 == 0)
			EXPECT_INT(count_of(t, &all_q), 101 - i);
		if (i == 50) {
			EXPECT_STR(first_id(t, &all_q), "r050");
			EXPECT_STR(first_id(t, &(a2m_query){.descending = 1}), "r100");
		}
	}
	for (int i = 1; i <= 100; i++)
		sb_add(&want, "%sr%03d", i > 1 ? "," : "", i);
	const char *got = scan_ids(t, &all_q);
	int same = strcmp(got, want.p) == 0;
	free(want.p);
	EXPECT(same);
}

static void test_out_of_order_records_can_be_removed_and_moved(tctx *t)
{
	a2m_query desc = {.descending = 1};
	a2m_record b = make("b", 20);
	int removed;
	EXPECT_OK(put(t, "a", 10, NULL, NULL));
	EXPECT_OK(OPS->insert(t->s, &b));
	EXPECT_OK(put(t, "c", 5, NULL, NULL));   /* older than what is there */
	EXPECT_OK(put(t, "d", 1, NULL, NULL));
	EXPECT_OK(OPS->remove(t->s, "c", &removed));
	b.created_at = 0;
	EXPECT_OK(OPS->update(t->s, &b));
	EXPECT_STR(scan_ids(t, &all_q), "b,d,a");
	EXPECT_STR(scan_ids(t, &desc), "a,d,b");
	EXPECT_OK(put(t, "e", 3, NULL, NULL));
	b.created_at = 30;
	EXPECT_OK(OPS->update(t->s, &b));
	EXPECT_OK(OPS->remove(t->s, "a", &removed));
	EXPECT_STR(scan_ids(t, &desc), "b,e,d");
	EXPECT_STR(scan_ids(t, &all_q), "d,e,b");
	EXPECT_INT(count_of(t, &all_q), 3);
}

static int fill_five(tctx *t)
{
	char id[16];
	for (int i = 1; i <= 5; i++) {
		snprintf(id, sizeof id, "r%d", i);
		if (put(t, id, i, NULL, NULL) != 0)
			return -1;
	}
	return 0;
}

static void test_scan_descending_stops_early(tctx *t)
{
	a2m_query desc = {.descending = 1};
	seen w;
	memset(&w, 0, sizeof w);
	w.stop_at = 2;
	EXPECT(fill_five(t) == 0);
	int rc = OPS->scan(t->s, &desc, collect, &w);
	char *ids = w.ids.p;
	int ok = rc == 0 && w.n == 2 && ids && strcmp(ids, "r5,r4") == 0;
	if (!ok)
		failf(__LINE__, "rc %d, saw %d: %s", rc, w.n, ids ? ids : "");
	free(ids);
}

static void test_scan_ascending_stops_early(tctx *t)
{
	seen w;
	memset(&w, 0, sizeof w);
	w.stop_at = 3;
	EXPECT(fill_five(t) == 0);
	int rc = OPS->scan(t->s, &all_q, collect, &w);
	char *ids = w.ids.p;
	int ok = rc == 0 && w.n == 3 && ids && strcmp(ids, "r1,r2,r3") == 0;
	if (!ok)
		failf(__LINE__, "rc %d, saw %d: %s", rc, w.n, ids ? ids : "");
	free(ids);
}

static void test_scan_negative_visit_aborts_with_its_code(tctx *t)
{
	a2m_query desc = {.descending = 1};
	seen w;
	memset(&w, 0, sizeof w);
	w.abort_at = 2;
	w.abort_code = -7;
	EXPECT(fill_five(t) == 0);
	int rc = OPS->scan(t->s, &desc, collect, &w);
	char *ids = w.ids.p;
	int ok = rc == -7 && w.n == 2 && ids && strcmp(ids, "r5,r4") == 0;
	if (!ok)
		failf(__LINE__, "rc %d, saw %d: %s", rc, w.n, ids ? ids : "");
	free(ids);
}

/* a..e with the fields the filter test selects on. */
static int fill_filter_set(tctx *t)
{
	static const struct {
		const char *id, *tier, *owner, *session, *group;
	} rows[] = {
		{"a", "short", "u1", "s1", "g1"},
		{"b", "long", "u1", NULL, "g2"},
		{"c", "short", "u2", "s1", NULL},
		{"d", NULL, NULL, "s2", "g1"},
		{"e", "short", NULL, NULL, "g1"},
	};
	for (int i = 0; i < 5; i++) {
		a2m_record r = make(rows[i].id, i + 1);
		r.tier = (char *)rows[i].tier;
		r.owner = (char *)rows[i].owner;
		r.session = (char *)rows[i].session;
		r.group = (char *)rows[i].group;
		if (t->s->ops->insert(t->s, &r) != 0)
			return -1;
	}
	return 0;
}

/* Checks that q selects want (ids, in order) and that count agrees. */
#define EXPECT_SELECTS(q, want) do { \
	a2m_query q_ = q; \
	EXPECT_STR(scan_ids(t, &q_), want); \
	const char *w__ = (want); \
	int64_t n_ = w__[0] ? 1 : 0; \
	for (const char *p_ = w__; *p_; p_++) \
		n_ += *p_ == ','; \
	EXPECT_INT(count_of(t, &q_), n_); \
} while (0)

static void test_scan_filters_by_tier_owner_session_group(tctx *t)
{
	EXPECT(fill_filter_set(t) == 0);
	EXPECT_SELECTS(((a2m_query){.tier = "short"}), "a,c,e");
	EXPECT_SELECTS(((a2m_query){.tier = "long"}), "b");
	EXPECT_SELECTS(((a2m_query){.tier = "none"}), "");
	EXPECT_SELECTS(((a2m_query){.by_owner = 1, .owner = "u1"}), "a,b");
	EXPECT_SELECTS(((a2m_query){.by_owner = 1, .owner = NULL}), "d,e");
	EXPECT_SELECTS(((a2m_query){.by_owner = 1, .owner = ""}), "");
	EXPECT_SELECTS(((a2m_query){.owner = "u1"}), "a,b,c,d,e");  /* by_owner 0 */
	EXPECT_SELECTS(((a2m_query){.by_session = 1, .session = "s1"}), "a,c");
	EXPECT_SELECTS(((a2m_query){.by_session = 1, .session = NULL}), "b,e");
	EXPECT_SELECTS(((a2m_query){.group = "g1"}), "a,d,e");
	EXPECT_SELECTS(((a2m_query){.tier = "short", .group = "g1"}), "a,e");
	EXPECT_SELECTS(((a2m_query){.tier = "short", .by_owner = 1, .by_session = 1}), "e");
	EXPECT_SELECTS(((a2m_query){.tier = "short", .descending = 1}), "e,c,a");
	EXPECT_SELECTS(((a2m_query){.by_owner = 1, .owner = "u1", .by_session = 1,
				    .session = "s1", .group = "g1", .tier = "short"}), "a");
}

static void test_key_prefix_with_percent_and_underscore(tctx *t)
{
	static const char *const keys[] = {
		"a%b", "a_b", "axb", "a%", "ab", "A%b", "a\\b", "%", "_x", "a%%",
	};
	char id[16];
	for (int i = 0; i < 10; i++) {
		snprintf(id, sizeof id, "k%d", i + 1);
		EXPECT_OK(put(t, id, i + 1, NULL, keys[i]));
	}
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a%"}), "k1,k4,k10");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a%%"}), "k10");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a_"}), "k2");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "%"}), "k8");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "_"}), "k9");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a\\"}), "k7");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a"}), "k1,k2,k3,k4,k5,k7,k10");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "A"}), "k6");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a%b"}), "k1");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a%bc"}), "");
}

static void test_key_prefix_is_bytewise_utf8(tctx *t)
{
	static const char *const keys[] = {
		"é", "éa", "ê", "e", "ÿz", "Ā", "😀x", "😁", "é😀",
	};
	char id[16];
	for (int i = 0; i < 9; i++) {
		snprintf(id, sizeof id, "u%d", i + 1);
		EXPECT_OK(put(t, id, i + 1, "o", keys[i]));
	}
	EXPECT_SELECTS(((a2m_query){.key_prefix = "é"}), "u1,u2,u9");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "e"}), "u4");
	/* C3 BF: its upper bound C3 C0 must still exclude Ā (C4 80). */
	EXPECT_SELECTS(((a2m_query){.key_prefix = "ÿ"}), "u5");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "😀"}), "u7");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "é😀"}), "u9");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "\xC3"}), "u1,u2,u3,u5,u9");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "é", .by_owner = 1, .owner = "o"}),
		       "u1,u2,u9");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "é", .by_owner = 1, .owner = "p"}), "");
}

static void test_key_prefix_of_0xff_bytes(tctx *t)
{
	EXPECT_OK(put(t, "f1", 1, NULL, "\xFF\xFF"));
	EXPECT_OK(put(t, "f2", 2, NULL, "\xFF" "a"));
	EXPECT_OK(put(t, "f3", 3, NULL, "\xFE"));
	EXPECT_OK(put(t, "f4", 4, NULL, "a\xFF" "b"));
	EXPECT_OK(put(t, "f5", 5, NULL, "b"));
	EXPECT_SELECTS(((a2m_query){.key_prefix = "\xFF"}), "f1,f2");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "\xFF\xFF"}), "f1");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a\xFF"}), "f4");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "\xFE"}), "f3");
}

static void test_key_prefix_empty_selects_every_keyed_record(tctx *t)
{
	EXPECT_OK(put(t, "x", 1, NULL, "x"));
	EXPECT_OK(put(t, "none", 2, NULL, NULL));
	EXPECT_OK(put(t, "empty", 3, NULL, ""));
	EXPECT_SELECTS(((a2m_query){.key_prefix = ""}), "x,empty");
}

static void test_count_matches_scan(tctx *t)
{
	static const char *const tiers[] = {"short", "long", NULL};
	static const char *const owners[] = {NULL, "u1", "u2", "u3"};
	char id[24], key[24];
	for (int i = 0; i < 60; i++) {
		snprintf(id, sizeof id, "r%02d", i);
		a2m_record r = make(id, i / 2);   /* pairs share a millisecond */
		snprintf(key, sizeof key, "%s/%02d", i % 2 ? "odd" : "even", i);
		r.tier = (char *)tiers[i % 3];
		r.owner = (char *)owners[i % 4];
		r.key = key;
		EXPECT_OK(OPS->insert(t->s, &r));
	}
	const a2m_query qs[] = {
		{0},
		{.tier = "short"},
		{.tier = "long", .descending = 1},
		{.by_owner = 1},
		{.by_owner = 1, .owner = "u1"},
		{.tier = "short", .by_owner = 1},
		{.key_prefix = "odd/"},
		{.key_prefix = "even/1", .tier = "short"},
		{.by_session = 1},
		{.by_session = 1, .session = "s"},
	};
	const int64_t want[] = {60, 20, 20, 15, 15, 5, 30, 2, 60, 0};
	for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
		seen w;
		memset(&w, 0, sizeof w);
		int rc = OPS->scan(t->s, &qs[i], collect, &w);
		free(w.ids.p);
		EXPECT_INT(rc, 0);
		EXPECT_INT(w.n, want[i]);
		EXPECT_INT(count_of(t, &qs[i]), want[i]);
	}
}

/* ---- counts and scans by tier and session -------------------------------- */

static uint64_t lcg_next(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

/*
** Random inserts, moves between tiers and sessions, out-of-order times and
** removes, in committed and rolled-back transactions and on their own: the
** kept counts and group scans always agree with the records.
*/
static void test_counts_and_group_scans_follow_writes_and_rollback(tctx *t)
{
	uint64_t x = 42;
	int next_id = 0, in_tx = 0, removed;
	char id[24], when[64];
	for (int step = 1; step <= 600; step++) {
		uint64_t op = lcg_next(&x) % 20;
		if (op == 0 && !in_tx) {
			EXPECT_OK(OPS->begin(t->s));
			in_tx = 1;
		} else if (op <= 1 && in_tx) {
			if (lcg_next(&x) % 2)
				EXPECT_OK(OPS->commit(t->s));
			else
				OPS->rollback(t->s);
			in_tx = 0;
			snprintf(when, sizeof when, "after step %d, which ended a transaction",
				 step);
			if (check_groups(t, when) != 0)
				return;
		} else if (op < 11 || next_id < 20) {
			snprintf(id, sizeof id, "r%d", next_id++);
			a2m_record r = make(id, (int64_t)(lcg_next(&x) % 500));
			r.tier = (char *)group_tiers[lcg_next(&x) % N_GROUP_TIERS];
			r.session = (char *)group_sessions[lcg_next(&x) % N_GROUP_SESSIONS];
			EXPECT_OK(OPS->insert(t->s, &r));
		} else {
			snprintf(id, sizeof id, "r%d", (int)(lcg_next(&x) % (uint64_t)next_id));
			a2m_record *cur = NULL;
			EXPECT_OK(OPS->get(t->s, id, &cur));
			if (!cur)
				continue;
			if (op < 17) {
				char *tier = cur->tier, *session = cur->session;
				const char *nt = group_tiers[lcg_next(&x) % N_GROUP_TIERS];
				const char *ns = group_sessions[lcg_next(&x) % N_GROUP_SESSIONS];
				cur->tier = (char *)nt;
				cur->session = (char *)ns;
				if (op == 16)
					cur->created_at = (int64_t)(lcg_next(&x) % 500);
				int rc = OPS->update(t->s, cur);
				cur->tier = tier;
				cur->session = session;
				if (rc != 0) {
					a2m_record_free(cur);
					EXPECT_OK(rc);
				}
			} else {
				EXPECT_OK(OPS->remove(t->s, id, &removed));
			}
			a2m_record_free(cur);
		}
		if (step % 50 == 0) {
			snprintf(when, sizeof when, "after step %d", step);
			if (check_groups(t, when) != 0)
				return;
		}
	}
	if (in_tx)
		OPS->rollback(t->s);
	if (check_groups(t, "at the end") != 0)
		return;
	if (strcmp(t->engine, "sqlite") == 0) {
		if (reopen(t, 1) != 0)
			return;
		if (check_groups(t, "after reopening") != 0)
			return;
	}
}

/*
** A count inside a transaction sees the inserts made in it so far; a
** refused insert (a duplicate id, here in a bucket nothing else is in)
** counts nothing; a remove and a move after inserts count right; a
** rollback takes back exactly what it undid, and a commit keeps the rest.
** (SQLite may refuse an insert only at a later op of its transaction, which
** then can only be rolled back: there the refusals are left out, and
** test_many_inserts_with_a_taken_id_or_key_refused_whole has the rule.)
*/
static void test_counts_follow_inserts_refusals_and_rollback_in_transaction(tctx *t)
{
	a2m_record d = make("d", 4);
	int removed;
	EXPECT_OK(put_in(t, "a", 1, "working", "s1"));  /* committed on its own */
	EXPECT_STR(working_counts(t), "1 1 0 1 0");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put_in(t, "b", 2, "working", "s1"));
	EXPECT_OK(put_in(t, "c", 3, "working", NULL));
	EXPECT_OK(put_in(t, "d", 4, "episodic", "s1"));
	EXPECT_STR(working_counts(t), "3 2 1 3 1");
	int refusals = strcmp(t->engine, "memory") == 0;
	if (refusals) {
		EXPECT_INT(put_in(t, "b", 5, "semantic", "s9"), A2M_INVALID_PARAMS);
		EXPECT_INT(count_of(t, &(a2m_query){.tier = "semantic"}), 0);
		EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1, .session = "s9"}), 0);
	}
	EXPECT_STR(working_counts(t), "3 2 1 3 1");
	EXPECT_OK(OPS->remove(t->s, "c", &removed));
	EXPECT_STR(working_counts(t), "2 2 0 3 1");
	d.tier = "working";
	d.session = "s1";
	EXPECT_OK(OPS->update(t->s, &d));
	EXPECT_STR(working_counts(t), "3 3 0 3 0");
	EXPECT_OK(put_in(t, "e", 6, "working", "s1"));
	EXPECT_STR(working_counts(t), "4 4 0 4 0");
	OPS->rollback(t->s);
	EXPECT_STR(working_counts(t), "1 1 0 1 0");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put_in(t, "b", 7, "working", "s1"));
	if (refusals)
		EXPECT_INT(put_in(t, "a", 8, "episodic", NULL), A2M_INVALID_PARAMS);
	EXPECT_OK(put_in(t, "f", 9, "working", NULL));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(working_counts(t), "3 2 1 2 0");
	if (check_groups(t, "after the commit") != 0)
		return;
	if (strcmp(t->engine, "sqlite") != 0)
		return;
	if (reopen(t, 1) != 0)
		return;
	EXPECT_STR(working_counts(t), "3 2 1 2 0");
	t->s->ops->close(t->s);
	t->s = NULL;
	char buf[64];
	/* The refused inserts' buckets left no row behind, not even of 0. */
	EXPECT_INT(raw_query(t, "SELECT count(*) || ' ' || sum(n) FROM a2m_counts", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "2 3");
}

/*
** One transaction inserting into more (tier, session) buckets than the
** SQLite engine keeps pending (64: it writes them out and goes on): every
** count is right inside it, after its commit, and a rollback of a second
** such transaction leaves them as the commit did.
*/
static void test_counts_right_over_many_buckets_in_one_transaction(tctx *t)
{
	char id[32], session[32];
	for (int round = 0; round < 2; round++) {
		EXPECT_OK(OPS->begin(t->s));
		for (int i = 0; i < 300; i++) {
			snprintf(id, sizeof id, "r%d-%d", round, i);
			snprintf(session, sizeof session, "s%d", i % 150);
			EXPECT_OK(put_in(t, id, i, i % 3 ? "working" : "episodic", session));
		}
		EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), 200 * (round + 1));
		EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1, .session = "s7"}),
			   2 * (round + 1));
		EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic", .by_session = 1,
						    .session = "s3"}), 2 * (round + 1));
		if (round == 0)
			EXPECT_OK(OPS->commit(t->s));
		else
			OPS->rollback(t->s);
	}
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), 200);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic"}), 100);
	EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1, .session = "s149"}), 2);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working", .by_session = 1,
					    .session = "s3"}), 0);
	if (strcmp(t->engine, "sqlite") == 0 && reopen(t, 1) == 0)
		EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic", .by_session = 1,
						    .session = "s3"}), 2);
}

/* ---- memory only: writes during a scan ---------------------------------- */

/*
** SQLite leaves it undefined whether a scan sees rows changed under it; the
** memory engine promises each record at most once, so that is checked here.
*/
typedef struct mover {
	a2m_store *s;
	int64_t    shift;
	sbuf       ids;
	int        n;
	int        failed;
} mover;

static int move_visited(const a2m_record *r, void *ctx)
{
	mover *m = ctx;
	a2m_record *copy = a2m_record_dup(r);
	sb_add(&m->ids, "%s%s", m->n++ ? "," : "", r->id);
	if (!copy)
		return -1;
	copy->created_at += m->shift;
	if (m->s->ops->update(m->s, copy) != 0)
		m->failed++;
	a2m_record_free(copy);
	if (m->shift < 0 && m->n == 1) {        /* an insert mid-scan is not visited */
		a2m_record fresh = make("new", 0);
		if (m->s->ops->insert(m->s, &fresh) != 0)
			m->failed++;
	}
	return 0;
}

static void test_scan_visits_each_record_once_while_callback_writes(tctx *t)
{
	mover m = {t->s, -100, {0}, 0, 0};
	char id[16];
	int removed, ok;
	for (int i = 0; i < 10; i++) {
		snprintf(id, sizeof id, "r%d", i);
		EXPECT_OK(put(t, id, i, NULL, NULL));
	}
	EXPECT_OK(OPS->remove(t->s, "r8", &removed));   /* a tombstone below the last */
	EXPECT_OK(OPS->scan(t->s, &(a2m_query){.descending = 1}, move_visited, &m));
	ok = m.ids.p && strcmp(m.ids.p, "r9,r7,r6,r5,r4,r3,r2,r1,r0") == 0 && m.failed == 0;
	if (!ok)
		failf(__LINE__, "descending saw %s (%d failed)", m.ids.p ? m.ids.p : "", m.failed);
	free(m.ids.p);
	if (!ok)
		return;
	EXPECT_STR(scan_ids(t, &all_q), "r0,r1,r2,r3,r4,r5,r6,r7,r9,new");

	mover up = {t->s, 1000, {0}, 0, 0};
	EXPECT_OK(OPS->remove(t->s, "r2", &removed));
	EXPECT_OK(OPS->scan(t->s, &all_q, move_visited, &up));
	ok = up.ids.p && strcmp(up.ids.p, "r0,r1,r3,r4,r5,r6,r7,r9,new") == 0 && up.failed == 0;
	if (!ok)
		failf(__LINE__, "ascending saw %s (%d failed)", up.ids.p ? up.ids.p : "", up.failed);
	free(up.ids.p);
	if (!ok)
		return;
	EXPECT_STR(scan_ids(t, &all_q), "r0,r1,r3,r4,r5,r6,r7,r9,new");
	EXPECT_INT(count_of(t, &all_q), 9);
}

int main(void)
{
	store_harness_start();
	RUN(test_same_ms_records_scan_in_insert_order);
	RUN(test_scan_orders_by_created_at_then_seq);
	RUN(test_scan_orders_records_inserted_out_of_order);
	RUN(test_out_of_order_records_can_be_removed_and_moved);
	RUN(test_scan_descending_stops_early);
	RUN(test_scan_ascending_stops_early);
	RUN(test_scan_negative_visit_aborts_with_its_code);
	RUN(test_scan_filters_by_tier_owner_session_group);
	RUN(test_key_prefix_with_percent_and_underscore);
	RUN(test_key_prefix_is_bytewise_utf8);
	RUN(test_counts_and_group_scans_follow_writes_and_rollback);
	RUN(test_counts_follow_inserts_refusals_and_rollback_in_transaction);
	RUN(test_counts_right_over_many_buckets_in_one_transaction);
	RUN(test_key_prefix_of_0xff_bytes);
	RUN(test_key_prefix_empty_selects_every_keyed_record);
	RUN(test_count_matches_scan);
	run("test_scan_visits_each_record_once_while_callback_writes",
	    test_scan_visits_each_record_once_while_callback_writes, MEMORY_ONLY | 4);
	return store_records_done();
}
