/*
** test_store_moves.c — the storage seam's rules (store.h) on narrow writes: move, and
** the stamp;
** each rule runs on the engines it names (the harness, output and files:
** tests/store_harness.h; what the rules share: tests/store_records.h).
*/
#include "store_records.h"

/* ---- narrow writes: move, and the stamp (store.h) --------------------- */

/* Moves the record id as get() reads it, naming it by tier and session as read. */
static int move_as_read(tctx *t, const char *id, const char *tier, const char *session,
			const char *to, double salience, int *moved)
{
	a2m_record *rec = NULL;
	*moved = -1;
	int rc = OPS->get(t->s, id, &rec);
	if (rc || !rec)
		return rc ? rc : A2M_UNKNOWN_RECORD;
	free(rec->tier);
	free(rec->session);
	rec->tier = tier ? strdup(tier) : NULL;
	rec->session = session ? strdup(session) : NULL;
	rc = OPS->move(t->s, rec, to, salience, moved);
	a2m_record_free(rec);
	return rc;
}

/*
** A move changes the tier and the salience and nothing else, only when the
** record is in the bucket it is named by (tier and session), on its own and
** in a transaction (a record inserted in it too), and a rollback undoes it;
** the counts follow every step. What a2m_store_move_whole did on every
** engine before the narrow ones (SQLite, PostgreSQL) came.
*/
static void test_move_changes_tier_and_salience_only(tctx *t)
{
	a2m_record want = full_record("full"), *got = NULL;
	int moved = -1;
	want.tier = "working";
	want.session = "s1";
	EXPECT_OK(OPS->insert(t->s, &want));
	EXPECT_OK(put_in(t, "b", 2, "working", NULL));
	EXPECT_STR(working_counts(t), "2 1 1 1 0");
	EXPECT_OK(move_as_read(t, "full", "working", "s1", "episodic", 0.25, &moved));
	EXPECT_INT(moved, 1);
	want.tier = "episodic";
	want.salience = 0.25;
	EXPECT_OK(OPS->get(t->s, "full", &got));
	EXPECT_SAME(got, &want);
	a2m_record_free(got);
	EXPECT_STR(working_counts(t), "1 0 1 1 1");
	/* Named by a bucket it is not in: nothing moves. */
	EXPECT_OK(move_as_read(t, "full", "working", "s1", "semantic", 0.5, &moved));
	EXPECT_INT(moved, 0);
	EXPECT_OK(move_as_read(t, "full", "episodic", "s2", "semantic", 0.5, &moved));
	EXPECT_INT(moved, 0);
	EXPECT_OK(move_as_read(t, "full", "episodic", NULL, "semantic", 0.5, &moved));
	EXPECT_INT(moved, 0);
	EXPECT_OK(move_as_read(t, "b", "working", "s1", "semantic", 0.5, &moved));
	EXPECT_INT(moved, 0);
	EXPECT_OK(OPS->get(t->s, "full", &got));
	EXPECT_SAME(got, &want);
	a2m_record_free(got);
	EXPECT_STR(working_counts(t), "1 0 1 1 1");
	/* Rolled back: b is where it was. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_as_read(t, "b", "working", NULL, "episodic", 0.5, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_STR(working_counts(t), "0 0 0 1 2");
	OPS->rollback(t->s);
	EXPECT_STR(working_counts(t), "1 0 1 1 1");
	/* In a transaction: a record inserted in it, then to no tier at all. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put_in(t, "c", 3, "working", "s1"));
	EXPECT_OK(move_as_read(t, "c", "working", "s1", "episodic", 0.125, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_OK(move_as_read(t, "b", "working", NULL, NULL, 0.5, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(working_counts(t), "0 0 0 2 2");
	EXPECT_INT(count_of(t, &all_q), 3);
	EXPECT_OK(OPS->get(t->s, "c", &got));
	EXPECT(got != NULL);
	EXPECT_STR(got->tier, "episodic");
	EXPECT(got->salience == 0.125);
	EXPECT_STR(got->session, "s1");
	a2m_record_free(got);
	EXPECT_OK(OPS->get(t->s, "b", &got));
	EXPECT(got != NULL);
	EXPECT_STR(got->tier, NULL);
	a2m_record_free(got);
}

/*
** A move inside a transaction with other writes of the same records around
** it (an update before and after, a touch, a remove) is undone with them,
** in order: every record back exactly, its tier's scan and counts too.
** Outside one, the move of the last record of a tier and session leaves
** the record whole. (The memory engine moves an entry in place and
** journals its names and salience, memory_narrow.c.)
*/
static void test_move_with_writes_around_it_rolls_back_whole(tctx *t)
{
	a2m_record full = full_record("full"), *got = NULL;
	int moved = -1, removed = -1;
	full.tier = "working";
	full.session = "s1";
	EXPECT_OK(OPS->insert(t->s, &full));
	EXPECT_OK(put_in(t, "b", 2, "working", NULL));
	EXPECT_OK(put_in(t, "c", 3, "episodic", "s1"));
	EXPECT_STR(working_counts(t), "2 1 1 2 1");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_as_read(t, "full", "working", "s1", "episodic", 0.25, &moved));
	EXPECT_INT(moved, 1);
	a2m_record changed = full;
	changed.tier = "episodic";
	changed.salience = 0.25;
	changed.content = "changed after the move";
	EXPECT_OK(OPS->update(t->s, &changed));
	EXPECT_OK(move_as_read(t, "full", "episodic", "s1", "semantic", 0.5, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_OK(OPS->touch(t->s, full.seq, 2, 1753900200000LL));
	EXPECT_OK(move_as_read(t, "b", "working", NULL, "episodic", 0.5, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_OK(OPS->remove(t->s, "b", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_OK(move_as_read(t, "c", "episodic", "s1", "working", 0.125, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_STR(working_counts(t), "1 1 0 2 0");
	EXPECT_OK(OPS->get(t->s, "full", &got));
	EXPECT(got != NULL);
	EXPECT_STR(got ? got->tier : "", "semantic");
	EXPECT_STR(got ? got->content : "", "changed after the move");
	a2m_record_free(got);
	OPS->rollback(t->s);
	EXPECT_STR(working_counts(t), "2 1 1 2 1");
	EXPECT_OK(OPS->get(t->s, "full", &got));
	EXPECT_SAME(got, &full);
	a2m_record_free(got);
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "working"}), "b,full");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "episodic"}), "c");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "semantic"}), "");
	/* The last record of (episodic, s1) leaves it, outside a transaction. */
	EXPECT_OK(move_as_read(t, "c", "episodic", "s1", "procedural", 0.5, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_OK(OPS->get(t->s, "c", &got));
	EXPECT(got != NULL);
	EXPECT_STR(got ? got->tier : "", "procedural");
	EXPECT_STR(got ? got->session : "", "s1");
	EXPECT_STR(got ? got->id : "", "c");
	a2m_record_free(got);
	EXPECT_STR(working_counts(t), "2 1 1 2 0");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "procedural"}), "c");
}

/* The store's stamp; 0 and a failure when the engine keeps none. */
static uint64_t stamp_of(tctx *t)
{
	if (!OPS->stamp) {
		snprintf(failure, sizeof failure, "the %s engine has no stamp", t->engine);
		return 0;
	}
	return OPS->stamp(t->s);
}

/*
** The stamp moves at every write of a record (insert, update, touch, move,
** remove) and at a rollback, and stays at a begin and this store's own
** commit (store.h, stamp): what capacity's rosters rely on (stack/roster.c).
*/
static void test_stamp_moves_at_every_write_and_rollback(tctx *t)
{
	a2m_record a = make("a", 1);
	int moved = 0, removed = 0;
	uint64_t v;
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->begin(t->s));
	v = stamp_of(t);
	EXPECT(!failure[0]);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT(stamp_of(t) == v);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT(stamp_of(t) == v);
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	EXPECT(stamp_of(t) != v);
	v = stamp_of(t);
	a.content = "changed";
	EXPECT_OK(OPS->update(t->s, &a));
	EXPECT(stamp_of(t) != v);
	v = stamp_of(t);
	EXPECT_OK(OPS->touch(t->s, a.seq, 1, 5));
	EXPECT(stamp_of(t) != v);
	v = stamp_of(t);
	EXPECT_OK(move_as_read(t, "a", NULL, NULL, "episodic", 0.5, &moved));
	EXPECT_INT(moved, 1);
	EXPECT(stamp_of(t) != v);
	v = stamp_of(t);
	EXPECT_OK(OPS->remove(t->s, "b", &removed));
	EXPECT(stamp_of(t) != v);
	v = stamp_of(t);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT(stamp_of(t) == v);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT(stamp_of(t) == v);
	EXPECT_OK(move_as_read(t, "a", "episodic", NULL, "semantic", 0.5, &moved));
	v = stamp_of(t);
	OPS->rollback(t->s);
	EXPECT(stamp_of(t) != v);
}

/*
** Another writer's commit (SQLite: a second connection to the file;
** PostgreSQL: another server on the schema) moves the stamp at this
** store's next begin; a begin after none leaves it.
*/
static void test_stamp_moves_when_another_writer_committed(tctx *t)
{
	uint64_t v;
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(OPS->begin(t->s));
	v = stamp_of(t);
	EXPECT(!failure[0]);
	EXPECT_OK(OPS->commit(t->s));
	a2m_store *o = open_other(t);
	if (!o)
		return;
	int rc = other_put(o, "b", 2);
	o->ops->close(o);
	EXPECT_INT(rc, 0);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT(stamp_of(t) != v);
	v = stamp_of(t);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT(stamp_of(t) == v);
	EXPECT_OK(OPS->commit(t->s));
}

int main(void)
{
	store_harness_start();
	RUN(test_move_changes_tier_and_salience_only);
	RUN(test_move_with_writes_around_it_rolls_back_whole);
	RUN(test_stamp_moves_at_every_write_and_rollback);
	RUN_DURABLE(test_stamp_moves_when_another_writer_committed);
	return store_records_done();
}
