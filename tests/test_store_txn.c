/*
** test_store_txn.c — the storage seam's rules (store.h) on transactions, and many
** inserts in one transaction (SQLite holds them: sqlite_held.c);
** each rule runs on the engines it names (the harness, output and files:
** tests/store_harness.h; what the rules share: tests/store_records.h).
*/
#include "store_records.h"

/* ---- transactions ------------------------------------------------------ */

static void test_commit_keeps_writes(tctx *t)
{
	a2m_record a = make("a", 1), *got;
	int removed;
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	a.content = "updated";
	EXPECT_OK(OPS->update(t->s, &a));
	EXPECT_OK(OPS->remove(t->s, "b", &removed));
	EXPECT_OK(OPS->commit(t->s));
	OPS->rollback(t->s);                    /* nothing open: changes nothing */
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_STR(got ? got->content : NULL, "updated");
	a2m_record_free(got);
	EXPECT_OK(OPS->get(t->s, "b", &got));
	EXPECT(got == NULL);
	EXPECT_INT(count_of(t, &all_q), 1);
}

static void test_rollback_discards_insert(tctx *t)
{
	a2m_record a = make("a", 2), again = make("a", 3), *got;
	a.owner = "o";
	a.key = "k";
	EXPECT_OK(put(t, "x", 1, NULL, NULL));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->get(t->s, "a", &got));   /* visible inside the transaction */
	EXPECT(got != NULL);
	a2m_record_free(got);
	OPS->rollback(t->s);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT(got == NULL);
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k", &got));
	EXPECT(got == NULL);
	EXPECT_STR(scan_ids(t, &all_q), "x");
	EXPECT_INT(count_of(t, &all_q), 1);
	/* The state is as before begin(): the id, key and seq are all free. */
	again.owner = "o";
	again.key = "k";
	EXPECT_OK(OPS->insert(t->s, &again));
	EXPECT_INT(again.seq, 2);
}

static void test_rollback_restores_updated_record(tctx *t)
{
	a2m_record a = full_record("a"), *got;
	EXPECT_OK(put(t, "first", 1, NULL, NULL));
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(put(t, "last", 1753999999999LL, NULL, NULL));
	EXPECT_OK(OPS->begin(t->s));
	a2m_record changed = make("a", 0);
	changed.owner = "bob";
	changed.key = "other";
	EXPECT_OK(OPS->update(t->s, &changed));
	EXPECT_STR(scan_ids(t, &all_q), "a,first,last");
	OPS->rollback(t->s);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_SAME(got, &a);
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, "alice", "prefs/theme", &got));
	EXPECT_STR(got ? got->id : NULL, "a");
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, "bob", "other", &got));
	EXPECT(got == NULL);
	EXPECT_STR(scan_ids(t, &all_q), "first,a,last");
}

static void test_rollback_restores_removed_record(tctx *t)
{
	a2m_record *got;
	int removed;
	EXPECT_OK(put(t, "r1", 1, NULL, NULL));
	EXPECT_OK(put(t, "r2", 2, NULL, NULL));
	EXPECT_OK(put(t, "r3", 3, "o", "k"));
	EXPECT_OK(put(t, "r4", 4, NULL, NULL));
	EXPECT_OK(put(t, "r5", 5, NULL, NULL));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->remove(t->s, "r3", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_OK(OPS->remove(t->s, "r1", &removed));
	EXPECT_STR(scan_ids(t, &all_q), "r2,r4,r5");
	OPS->rollback(t->s);
	EXPECT_STR(scan_ids(t, &all_q), "r1,r2,r3,r4,r5");
	EXPECT_STR(scan_ids(t, &(a2m_query){.descending = 1}), "r5,r4,r3,r2,r1");
	EXPECT_OK(OPS->get(t->s, "r3", &got));
	EXPECT(got != NULL);
	EXPECT_INT(got->seq, 3);
	EXPECT_INT(got->created_at, 3);
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k", &got));
	EXPECT_STR(got ? got->id : NULL, "r3");
	a2m_record_free(got);
	EXPECT_INT(count_of(t, &all_q), 5);
}

static void test_rollback_restores_exact_state(tctx *t)
{
	char id[24], key[24];
	int removed;
	for (int i = 1; i <= 20; i++) {
		snprintf(id, sizeof id, "r%d", i);
		a2m_record r = i == 7 ? full_record(id) : make(id, 1000 + i / 3);
		snprintf(key, sizeof key, "k%d", i);
		r.key = i % 2 ? key : NULL;
		r.owner = i % 4 == 1 ? "o" : NULL;
		EXPECT_OK(OPS->insert(t->s, &r));
	}
	char *before = dump(t);

	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "n1", 5, NULL, "new"));
	a2m_record r2 = make("r2", 999999);          /* moves in scan order */
	r2.key = "moved";
	EXPECT_OK(OPS->update(t->s, &r2));
	EXPECT_OK(OPS->remove(t->s, "r3", &removed));     /* r3 held (NULL, k3) */
	EXPECT_OK(put(t, "n2", 6, NULL, NULL));
	EXPECT_OK(OPS->remove(t->s, "n2", &removed));
	a2m_record r4 = make("r4", 1);
	EXPECT_OK(OPS->update(t->s, &r4));
	EXPECT_OK(OPS->remove(t->s, "r4", &removed));
	a2m_record n1 = make("n1", 7);
	n1.key = "k3";                              /* the key r3 freed */
	EXPECT_OK(OPS->update(t->s, &n1));
	EXPECT_OK(OPS->remove(t->s, "r5", &removed));
	a2m_record r5 = make("r5", 2);               /* the same id, reborn */
	r5.content = "impostor";
	EXPECT_OK(OPS->insert(t->s, &r5));
	a2m_record r7 = full_record("r7");
	r7.embedding = NULL;
	r7.dims = 0;
	r7.created_at = 1000;
	EXPECT_OK(OPS->update(t->s, &r7));
	OPS->rollback(t->s);

	char *after = dump(t);
	int same = strcmp(before, after) == 0;
	if (!same)
		failf(__LINE__, "state differs after rollback:\n--- before\n%.400s\n--- after\n%.400s",
		      before, after);
	free(before);
	free(after);
	if (!same)
		return;
	a2m_record z = make("z", 1);
	EXPECT_OK(OPS->insert(t->s, &z));
	EXPECT_INT(z.seq, 21);
}

static void test_begin_inside_transaction_refused(tctx *t)
{
	a2m_record *got;
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT(OPS->begin(t->s) < 0);
	EXPECT(t->s->errmsg[0] != '\0');
	EXPECT_OK(put(t, "b", 2, NULL, NULL));   /* the first transaction goes on */
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT(got != NULL);
	a2m_record_free(got);
	EXPECT_INT(count_of(t, &all_q), 2);
}

static void test_commit_without_transaction_fails(tctx *t)
{
	EXPECT(OPS->commit(t->s) < 0);
	EXPECT(t->s->errmsg[0] != '\0');
	/* And the store is still usable. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_INT(count_of(t, &all_q), 1);
}

static void test_autocommit_writes_survive_later_rollback(tctx *t)
{
	a2m_record a = make("a", 1), *got;
	int removed;
	EXPECT_OK(OPS->insert(t->s, &a));
	a.content = "v2";
	EXPECT_OK(OPS->update(t->s, &a));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	EXPECT_OK(OPS->remove(t->s, "b", &removed));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "c", 3, NULL, NULL));
	OPS->rollback(t->s);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_STR(got ? got->content : NULL, "v2");
	a2m_record_free(got);
	EXPECT_STR(scan_ids(t, &all_q), "a");
}

static void test_refused_insert_inside_transaction_keeps_it_open(tctx *t)
{
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_INT(put(t, "a", 2, NULL, NULL), A2M_INVALID_PARAMS);
	EXPECT_OK(put(t, "b", 3, NULL, NULL));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(scan_ids(t, &all_q), "a,b");
}

/* ---- many inserts in one transaction ------------------------------------ */

/*
** SQLite holds a transaction's inserts and writes them several rows per
** statement (sqlite_held.c); every rule below must read the same as if
** each insert were written at once. HELD_N is more than one statement's
** rows and not a multiple of them.
*/
enum { HELD_N = 47 };

/*
** Inserts HELD_N records <prefix>00..46, created out of order, every third
** one keyed "<prefix>-k<i>" of owner "o", in session s<i % 3>; each copy of a record
** is the insert's own (freed right after, as a caller may). Returns 0 or
** the first failure's code.
*/
static int put_many(tctx *t, const char *prefix, int64_t seqs[HELD_N])
{
	for (int i = 0; i < HELD_N; i++) {
		char id[16], key[16], session[8], content[32];
		snprintf(id, sizeof id, "%s%02d", prefix, i);
		snprintf(key, sizeof key, "%s-k%02d", prefix, i);
		snprintf(session, sizeof session, "s%d", i % 3);
		snprintf(content, sizeof content, "text of %s", id);
		a2m_record r = make(id, 1000 + (i * 7) % HELD_N);
		r.content = content;
		r.owner = i % 3 == 0 ? "o" : NULL;
		r.key = i % 3 == 0 ? key : NULL;
		r.session = session;
		r.tier = "working";
		a2m_record *copy = a2m_record_dup(&r);
		if (!copy)
			return A2M_INTERNAL_ERROR;
		int rc = t->s->ops->insert(t->s, copy);
		if (seqs)
			seqs[i] = copy->seq;
		a2m_record_free(copy);
		if (rc)
			return rc;
	}
	return 0;
}

/* begin(), then put_many(). */
static int begin_many(tctx *t, const char *prefix, int64_t seqs[HELD_N])
{
	int rc = t->s->ops->begin(t->s);
	return rc ? rc : put_many(t, prefix, seqs);
}

/* The ids put_many's records scan in: by created_at, then seq. */
static const char *put_many_order(const char *prefix)
{
	static char buf[HELD_N * 8];
	size_t used = 0;
	buf[0] = '\0';
	for (int at = 0; at < HELD_N; at++)
		for (int i = 0; i < HELD_N; i++)
			if ((i * 7) % HELD_N == at)
				used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s%02d",
							 used ? "," : "", prefix, i);
	return buf;
}

/* Every record put_many wrote reads back by id, key and seq, and counts right. */
static void check_many(tctx *t, const char *prefix, const int64_t seqs[HELD_N])
{
	for (int i = 0; i < HELD_N; i++) {
		char id[16], key[16], content[32];
		a2m_record *got = NULL;
		snprintf(id, sizeof id, "%s%02d", prefix, i);
		snprintf(content, sizeof content, "text of %s", id);
		EXPECT_OK(OPS->get(t->s, id, &got));
		EXPECT_STR(got ? got->content : NULL, content);
		EXPECT_INT(got ? got->seq : 0, seqs[i]);
		a2m_record_free(got);
		if (i % 3)
			continue;
		snprintf(key, sizeof key, "%s-k%02d", prefix, i);
		got = NULL;
		EXPECT_OK(OPS->get_by_key(t->s, "o", key, &got));
		EXPECT_STR(got ? got->id : NULL, id);
		a2m_record_free(got);
	}
	int visited = 0;
	EXPECT_OK(OPS->visit_seqs(t->s, seqs, HELD_N, count_visit, &visited));
	EXPECT_INT(visited, HELD_N);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), HELD_N);
	EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1, .session = "s1"}), (HELD_N + 1) / 3);
	EXPECT_INT(count_of(t, &(a2m_query){.by_owner = 1, .owner = "o"}), (HELD_N + 2) / 3);
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "working"}), put_many_order(prefix));
}

static void test_transaction_reads_its_many_inserts_before_and_after_commit(tctx *t)
{
	int64_t seqs[HELD_N];
	EXPECT_OK(begin_many(t, "h", seqs));
	for (int i = 1; i < HELD_N; i++)
		EXPECT(seqs[i] == seqs[i - 1] + 1);
	check_many(t, "h", seqs);
	if (failure[0])
		return;
	EXPECT_OK(OPS->commit(t->s));
	check_many(t, "h", seqs);
	if (failure[0] || strcmp(t->engine, "sqlite") != 0 || reopen(t, 1) != 0)
		return;
	check_many(t, "h", seqs);
}

/* Each read op inside the transaction sees the insert just made. */
static void test_each_read_sees_the_insert_before_it(tctx *t)
{
	a2m_record *got = NULL;
	int visited = 0;
	EXPECT_OK(begin_many(t, "h", NULL));
	a2m_record a = make("a", 1), b = make("b", 2), c = make("c", 3), d = make("d", 4);
	a.owner = "o";
	a.key = "ka";
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->get_by_key(t->s, "o", "ka", &got));
	EXPECT_STR(got ? got->id : NULL, "a");
	a2m_record_free(got);
	EXPECT_OK(OPS->insert(t->s, &b));
	EXPECT_OK(OPS->visit_seqs(t->s, &b.seq, 1, count_visit, &visited));
	EXPECT_INT(visited, 1);
	c.key = "kc";
	EXPECT_OK(OPS->insert(t->s, &c));
	EXPECT_INT(count_of(t, &(a2m_query){.key_prefix = "kc"}), 1);
	EXPECT_OK(OPS->insert(t->s, &d));
	EXPECT_OK(OPS->touch(t->s, d.seq, 5, 99));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(OPS->get(t->s, "d", &got));
	EXPECT_INT(got ? got->access_count : -1, 5);
	EXPECT_INT(got ? got->accessed_at : -1, 99);
	a2m_record_free(got);
	EXPECT_INT(count_of(t, &all_q), HELD_N + 4);
}

/*
** Every field survives the insert's copy, written with a statement's other
** rows; so does a long content, whose copy is not kept once written.
*/
static void test_many_inserts_keep_every_field(tctx *t)
{
	static float gen[3] = {0.5f, -1.25f, 3.0f};
	enum { BIG = 3 << 20 };
	a2m_record full = full_record("full"), big = make("big", 7);
	full.gen_embedding = gen;
	full.gen_dims = 3;
	big.content = malloc(BIG + 1);
	EXPECT(big.content);
	memset(big.content, 'x', BIG);
	big.content[BIG] = '\0';
	a2m_record *got = NULL, *got_big = NULL;
	int rc = OPS->begin(t->s);
	if (!rc)
		rc = put_many(t, "h", NULL);
	if (!rc)
		rc = OPS->insert(t->s, &full);
	if (!rc)
		rc = OPS->insert(t->s, &big);
	if (!rc)
		rc = put_many(t, "j", NULL);
	if (!rc)
		rc = OPS->commit(t->s);
	if (!rc)
		rc = OPS->get(t->s, "big", &got_big);
	int big_same = got_big && strcmp(got_big->content, big.content) == 0;
	free(big.content);
	a2m_record_free(got_big);
	EXPECT_OK(rc);
	EXPECT(big_same);
	EXPECT_OK(OPS->get(t->s, "full", &got));
	EXPECT_SAME(got, &full);
	a2m_record_free(got);
}

/*
** One transaction of HELD_N records m00..m46 (m00, m05, ... keyed "k<i>" of
** owner "o"), with extra inserted after m25. Stops at the first failure,
** of an insert or (SQLite, which may write the rows later) of commit,
** rolls back and returns its code; 0 when it all committed.
*/
static int put_many_with(tctx *t, const a2m_record *extra)
{
	int rc = t->s->ops->begin(t->s);
	for (int i = 0; i < HELD_N && !rc; i++) {
		char id[16], key[16];
		snprintf(id, sizeof id, "m%02d", i);
		snprintf(key, sizeof key, "k%02d", i);
		rc = put(t, id, 2000 + i, i % 5 ? NULL : "o", i % 5 ? NULL : key);
		if (!rc && i == 25) {
			a2m_record r = *extra;  /* insert assigns its seq */
			rc = t->s->ops->insert(t->s, &r);
		}
	}
	if (!rc)
		rc = t->s->ops->commit(t->s);
	if (rc)
		t->s->ops->rollback(t->s);
	return rc;
}

/*
** A taken id or (owner, key) among a transaction's many inserts refuses it
** with A2M_INVALID_PARAMS (SQLite's message naming the constraint), whether
** the record it meets was committed before or inserted earlier in the same
** transaction; after the rollback the store is exactly as before.
*/
static void test_many_inserts_with_a_taken_id_or_key_refused_whole(tctx *t)
{
	EXPECT_OK(put(t, "old", 1, "o", "taken"));
	char *before = dump(t);
	a2m_record id_old = make("old", 5), id_new = make("m03", 5);
	a2m_record key_old = make("x", 5), key_new = make("y", 5);
	key_old.owner = key_new.owner = "o";
	key_old.key = "taken";
	key_new.key = "k10";
	const struct {
		const a2m_record *rec;
		const char       *says;
	} cases[] = {
		{&id_old, "UNIQUE constraint failed: records.id"},
		{&id_new, "UNIQUE constraint failed: records.id"},
		{&key_old, "UNIQUE constraint failed: index 'records_owner_key'"},
		{&key_new, "UNIQUE constraint failed: index 'records_owner_key'"},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0] && !failure[0]; k++) {
		EXPECT_INT(put_many_with(t, cases[k].rec), A2M_INVALID_PARAMS);
		if (strcmp(t->engine, "sqlite") == 0 && !strstr(t->s->errmsg, cases[k].says))
			failf(__LINE__, "case %zu: errmsg \"%s\" does not say \"%s\"", k,
			      t->s->errmsg, cases[k].says);
		EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1}), 1);  /* a2m_counts */
		char *after = dump(t);
		if (!failure[0] && strcmp(after, before) != 0)
			failf(__LINE__, "case %zu: the store changed:\n%s\nwas\n%s", k, after, before);
		free(after);
	}
	free(before);
	/* Nothing of the refused transactions is left to collide with. */
	EXPECT_OK(put_many_with(t, &(a2m_record){.id = "z", .content = "c"}));
	EXPECT_INT(count_of(t, &all_q), HELD_N + 2);
}

/*
** SQLite: once a held row is refused, the transaction can only be rolled
** back. Every later op and the commit fail alike, so the rows its statement
** wrote before the refused one never land, and nothing changes.
*/
static void test_sqlite_commit_after_a_refused_row_fails_and_keeps_nothing(tctx *t)
{
	a2m_record *got = NULL;
	EXPECT_OK(put(t, "old", 1, NULL, NULL));
	char *before = dump(t);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "n1", 2, NULL, NULL));
	EXPECT_OK(put(t, "n2", 3, NULL, NULL));
	EXPECT_OK(put(t, "old", 4, NULL, NULL));  /* held: refused by the next op */
	EXPECT_INT(OPS->get(t->s, "n1", &got), A2M_INVALID_PARAMS);
	EXPECT(strstr(t->s->errmsg, "insert: UNIQUE constraint failed: records.id"));
	EXPECT_INT(OPS->get(t->s, "n2", &got), A2M_INVALID_PARAMS);
	EXPECT(!got);
	EXPECT_INT(OPS->commit(t->s), A2M_INVALID_PARAMS);
	EXPECT(same_as_dump(t, before));
	EXPECT_OK(put(t, "n1", 5, NULL, NULL));  /* a fresh write goes through */
	EXPECT_INT(count_of(t, &all_q), 2);
}

/* A rollback takes back every insert of the transaction, written or not. */
static void test_rollback_discards_many_inserts(tctx *t)
{
	int64_t seqs[HELD_N];
	EXPECT_OK(put(t, "old", 1, NULL, NULL));
	char *before = dump(t);
	EXPECT_OK(begin_many(t, "h", NULL));
	OPS->rollback(t->s);
	EXPECT(same_as_dump(t, before));
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), 0);
	/* Again, committed: the same ids and keys are free. */
	EXPECT_OK(begin_many(t, "h", seqs));
	EXPECT_OK(OPS->commit(t->s));
	check_many(t, "h", seqs);
}

/*
** A get inside the transaction finds each record inserted before it,
** whether its row was written or is still held, and not one never
** inserted (SQLite writes the held rows only for a get of one of them).
*/
static void test_get_of_many_inserts_in_their_transaction(tctx *t)
{
	/* HELD_N rows: the first ones written a statement at a time, the last held. */
	static const char *const ids[] = {"g00", "g01", "g19", "g20", "g39", "g46", "g40"};
	a2m_record *got = NULL;
	EXPECT_OK(begin_many(t, "g", NULL));
	EXPECT_OK(OPS->get(t->s, "g47", &got));
	EXPECT(!got);
	for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
		char want[32];
		snprintf(want, sizeof want, "text of %s", ids[i]);
		EXPECT_OK(OPS->get(t->s, ids[i], &got));
		EXPECT_STR(got ? got->content : NULL, want);
		a2m_record_free(got);
		got = NULL;
	}
	EXPECT_OK(OPS->get(t->s, "g47", &got));
	EXPECT(!got);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), HELD_N);
}

/* postgres_held.c (test hook): flushes that wrote something, so far. */
long a2m_pg_held_flushes_for_tests(void);

/*
** PostgreSQL: a get in a transaction writes the held inserts only when one
** of them has its id. A remember of records with ids asks for each id
** before its insert (stack/write.c); a flush on each of those gets wrote
** every record by an INSERT of its own.
*/
static void test_pg_get_of_an_id_not_held_writes_nothing(tctx *t)
{
	a2m_record *got = NULL;
	EXPECT_OK(OPS->begin(t->s));
	long before = a2m_pg_held_flushes_for_tests();
	for (int i = 0; i < 10; i++) {
		char id[16];
		snprintf(id, sizeof id, "q%02d", i);
		EXPECT_OK(OPS->get(t->s, id, &got));  /* as the stack asks, before the insert */
		EXPECT(!got);
		EXPECT_OK(put(t, id, 1000 + i, NULL, NULL));
	}
	EXPECT_INT(a2m_pg_held_flushes_for_tests() - before, 0);
	/* A held id is written first, and found. */
	EXPECT_OK(OPS->get(t->s, "q07", &got));
	EXPECT(got != NULL);
	a2m_record_free(got);
	got = NULL;
	EXPECT_INT(a2m_pg_held_flushes_for_tests() - before, 1);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_INT(count_of(t, &all_q), 10);
}

/* An update and a remove of records inserted earlier in the transaction. */
static void test_update_and_remove_of_many_inserts_in_their_transaction(tctx *t)
{
	a2m_record *got = NULL;
	int removed = 0;
	EXPECT_OK(begin_many(t, "h", NULL));
	a2m_record last = make("h46", 1000);
	last.content = "rewritten";
	last.tier = "episodic";
	last.session = "s1";
	EXPECT_OK(OPS->update(t->s, &last));
	EXPECT_OK(OPS->remove(t->s, "h45", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_OK(put_many(t, "j", NULL));
	EXPECT_OK(OPS->remove(t->s, "j46", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_OK(OPS->get(t->s, "h46", &got));
	EXPECT_STR(got ? got->content : NULL, "rewritten");
	a2m_record_free(got);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(OPS->get(t->s, "h46", &got));
	EXPECT_STR(got ? got->tier : NULL, "episodic");
	a2m_record_free(got);
	EXPECT_OK(OPS->get(t->s, "h45", &got));
	EXPECT(!got);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), 2 * HELD_N - 3);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic", .by_session = 1,
					    .session = "s1"}), 1);
}

int main(void)
{
	store_harness_start();
	RUN(test_commit_keeps_writes);
	RUN(test_rollback_discards_insert);
	RUN(test_rollback_restores_updated_record);
	RUN(test_rollback_restores_removed_record);
	RUN(test_rollback_restores_exact_state);
	RUN(test_begin_inside_transaction_refused);
	RUN(test_commit_without_transaction_fails);
	RUN(test_autocommit_writes_survive_later_rollback);
	RUN_MEMORY(test_refused_insert_inside_transaction_keeps_it_open);
	RUN(test_transaction_reads_its_many_inserts_before_and_after_commit);
	RUN(test_each_read_sees_the_insert_before_it);
	RUN(test_many_inserts_keep_every_field);
	RUN(test_many_inserts_with_a_taken_id_or_key_refused_whole);
	RUN(test_rollback_discards_many_inserts);
	RUN_SQLITE(test_sqlite_commit_after_a_refused_row_fails_and_keeps_nothing);
	RUN(test_get_of_many_inserts_in_their_transaction);
	RUN_POSTGRES(test_pg_get_of_an_id_not_held_writes_nothing);
	RUN(test_update_and_remove_of_many_inserts_in_their_transaction);
	return store_records_done();
}
