/*
** test_index_merges.c — SQLite's term index merged (sqlite_segments_*.c):
** merged segments, merges ahead on a thread and in steps, what a rollback
** or a pending merge leaves, skip tables, a kill -9 inside a merge; the
** postings always those the records' text makes.
** Each rule runs on the engines it names (the analyser and the harness:
** tests/index_harness.h; the model of the records: tests/index_model.h).
*/
#include "index_harness.h"
#include "index_model.h"

/* ---- segments (SQLite): merges, tombstones, rebuild, readers ---- */

/*
** The lists with a skip table (sqlite_segments_skip.c) among the rows the
** query lists (their data), each table checked against its entries: the
** count, or -1 when a table is wrong or a row cannot be read.
*/
static int64_t skip_tables(tctx *t, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t n = 0;
	if (sqlite3_open_v2(t->path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		n = -1;
	while (n >= 0 && sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *p = sqlite3_column_blob(st, 0), *term, *list;
		const unsigned char *end = p + sqlite3_column_bytes(st, 0);
		size_t tlen, lsize;
		int got = 0;
		while (n >= 0 && (got = a2m_seg_next_in_block(&p, end, &term, &tlen, &list, &lsize)) == 1) {
			int v = a2m_seg_skip_verify(list, lsize);
			n = v < 0 ? -1 : n + v;
		}
		if (got < 0)
			n = -1;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/*
** The random history of the merge tests, with a merge factor of 2: 400
** rounds, every ninth a transaction of five steps. Content changed back and
** forth and records forgotten and inserted again put additions and
** tombstones of one (term, seq) in several segments, some in one
** transaction. The postings are checked every 40 rounds and at the end, and
** the store's figures too; *most gets the most segments a level held
** between rounds. A failure is left in failure.
*/
static int64_t most_merges;  /* the most merges in steps under way between rounds */

static void merge_history(tctx *t, int64_t *most)
{
	model m;
	char why[128];
	memset(&m, 0, sizeof m);
	m.rand = 88172645463325252u;
	*most = 0;
	a2m_segments_merge_factor_for_tests(2);
	for (int round = 0; round < 400 && !failure[0]; round++) {
		int in_txn = round % 9 == 0;
		if (in_txn && t->s->ops->begin(t->s) != 0)
			break;
		for (int k = 0; k < (in_txn ? 5 : 1); k++)
			if (model_step(t, &m) != 0)
				snprintf(failure, sizeof failure, "round %d: %s", round, t->s->errmsg);
		if (in_txn && t->s->ops->commit(t->s) != 0)
			snprintf(failure, sizeof failure, "commit: %s", t->s->errmsg);
		int64_t fullest = sql_int(t, "SELECT max(n) FROM (SELECT count(*) AS n"
					     " FROM a2m_segdir GROUP BY level)");
		*most = fullest > *most ? fullest : *most;
		int64_t merges = sql_int(t, "SELECT count(*) FROM a2m_segmerge");
		most_merges = merges > most_merges ? merges : most_merges;
		if (!failure[0] && (round % 40 == 39 || round == 399) &&
		    !postings_match(t->s, &m, why, sizeof why))
			snprintf(failure, sizeof failure, "round %d: %s", round, why);
	}
	a2m_segments_merge_factor_for_tests(0);
	int live = 0;
	for (int i = 0; i < MODEL_IDS; i++)
		live += m.live[i];
	EXPECT_INT(stats(t).docs, live);
}

/*
** Merging inside the commit that fills a level (merge_inline): the
** postings stay those the records make, and levels are merged, not piled
** up: one segment per level between rounds, with a factor of 2.
*/
static void test_merged_segments_keep_the_records_postings(tctx *t)
{
	int64_t most;
	merge_history(t, &most);
	EXPECT_INT(most, 1);
	int64_t segs = sql_int(t, "SELECT count(*) FROM a2m_segdir");
	EXPECT(segs >= 1);
	EXPECT_INT(segs, sql_int(t, "SELECT count(DISTINCT level) FROM a2m_segdir"));
	EXPECT(sql_int(t, "SELECT max(level) FROM a2m_segdir") >= 4);
}

/*
** The same with merges ahead (the default): a level is merged on a thread
** while the next transaction goes on, and its commit writes the result. No
** level holds more than the merge factor's segments between rounds.
*/
static void test_merges_ahead_keep_the_records_postings(tctx *t)
{
	int64_t most;
	a2m_segments_ahead_min_for_tests(0);  /* these levels are small */
	a2m_segments_ahead_wait_for_tests(1);  /* every commit waits for its merge */
	merge_history(t, &most);
	a2m_segments_ahead_wait_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	EXPECT_INT(most, 2);
	EXPECT(sql_int(t, "SELECT max(level) FROM a2m_segdir") >= 4);
}

/*
** The same with every merge ahead left pending by the commit that began
** it, as one whose thread had not finished: the next transaction's commit
** writes it (with a merge factor of 2, the level is full again then). The
** level holds its inputs and the new segment between the two: 3.
*/
static void test_merges_ahead_left_pending_keep_the_records_postings(tctx *t)
{
	int64_t most;
	char why[320];
	a2m_segments_ahead_min_for_tests(0);
	a2m_segments_ahead_wait_for_tests(2);
	merge_history(t, &most);
	a2m_segments_ahead_wait_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	EXPECT_INT(most, 3);
	EXPECT(sql_int(t, "SELECT max(level) FROM a2m_segdir") >= 4);
	if (!failure[0] && !check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
}

/*
** A full level too small to be worth a thread (the default minimum, 4 096
** entries) is merged inside the commit that fills it, as inline: one
** segment per level between rounds, with a factor of 2.
*/
static void test_small_levels_are_merged_inside_the_commit(tctx *t)
{
	int64_t most;
	merge_history(t, &most);
	EXPECT_INT(most, 1);
	EXPECT(sql_int(t, "SELECT max(level) FROM a2m_segdir") >= 4);
}

/*
** A level left full by a commit is merged by the next write transaction:
** nothing changes in the file until its commit, which writes the merged
** segment (numbered as the newest input) even when it wrote no posting
** itself; a read inside the transaction sees the same postings throughout.
*/
static void test_a_full_level_is_merged_ahead_by_the_next_transaction(tctx *t)
{
	a2m_segments_merge_factor_for_tests(2);
	a2m_segments_ahead_min_for_tests(0);
	a2m_segments_ahead_wait_for_tests(1);  /* its commit waits for the thread */
	EXPECT(insert(t, "a", "apple one") > 0);
	EXPECT(insert(t, "b", "banana two") > 0);
	/* Full, not merged: that is the next transaction's work. */
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 2);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT_INT(df(t, "apple"), 1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 2);
	EXPECT_OK(t->s->ops->commit(t->s));
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(sql_int(t, "SELECT level FROM a2m_segdir"), 1);
	EXPECT_INT(sql_int(t, "SELECT sum(entries) FROM a2m_segdir"), 4);
	/* Then with postings of its own: the merge, and a new level-0 segment. */
	EXPECT(insert(t, "c", "cherry three") > 0);
	EXPECT(insert(t, "d", "date four") > 0);   /* level 0 full again */
	EXPECT(insert(t, "e", "elder five") > 0);  /* merges c and d ahead, adds e */
	a2m_segments_merge_factor_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	a2m_segments_ahead_wait_for_tests(0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 1"), 2);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 1);
	const char *words[] = {"apple", "banana", "cherry", "date", "elder", "one", "five"};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		EXPECT_INT(df(t, words[i]), 1);
}

/*
** Inserts one record through another connection to t's file, one that
** merges inside its commits (a level it finds full, it merges at once).
** Returns 0, or -1 when it cannot.
*/
static int insert_elsewhere(tctx *t, const char *id, const char *content)
{
	a2m_store *other = NULL;
	char err[256];
	a2m_sqlite_options opt = {.merge_inline = 1};
	if (a2m_store_sqlite_open(t->path, &opt, &other, err, sizeof err) != 0)
		return -1;
	a2m_record r;
	memset(&r, 0, sizeof r);
	r.id = (char *)id;
	r.content = (char *)content;
	r.tier = "semantic";
	int rc = other->ops->index_attach(other, &tix.base) != 0 ||
		 other->ops->insert(other, &r) != 0 ? -1 : 0;
	other->ops->close(other);
	return rc;
}

/*
** A transaction rolled back drops the merge it began: the file keeps the
** full level as it was, and the next transaction looks again. Here another
** connection (merging inline) commits in between and merges that level
** itself, so a merge kept from before would name segments no longer there.
*/
static void test_merge_ahead_is_dropped_with_a_rollback(tctx *t)
{
	int removed = 0;
	a2m_segments_merge_factor_for_tests(2);
	a2m_segments_ahead_min_for_tests(0);
	EXPECT(insert(t, "a", "apple one") > 0);
	EXPECT(insert(t, "b", "banana two") > 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "c", "cherry three") > 0);
	EXPECT_OK(t->s->ops->remove(t->s, "a", &removed));
	t->s->ops->rollback(t->s);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 2);
	EXPECT_INT(df(t, "apple"), 1);
	EXPECT_INT(df(t, "cherry"), 0);
	EXPECT_OK(insert_elsewhere(t, "o", "olive six"));
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 0);
	EXPECT(insert(t, "d", "date four") > 0);
	a2m_segments_merge_factor_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 1"), 1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 1);
	const char *words[] = {"apple", "banana", "date", "olive"};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		EXPECT_INT(df(t, words[i]), 1);
	EXPECT_INT(df(t, "cherry"), 0);
}

/*
** A commit does not wait for the thread of a merge begun ahead: with the
** thread held before it merges, two commits go through (their segments
** beside the merge's inputs, every posting read right), and the release
** finds the thread still held, as no commit waited for it (a commit that
** waited would stall until the hold's 30 s bound, and the release would
** say so). The merge factor's commit after the begin writes it.
*/
static void test_a_commit_does_not_wait_for_a_merge_ahead(tctx *t)
{
	char why[320];
	a2m_segments_merge_factor_for_tests(3);
	a2m_segments_ahead_min_for_tests(0);
	EXPECT(insert(t, "a", "apple one") > 0);
	EXPECT(insert(t, "b", "banana two") > 0);
	EXPECT(insert(t, "c", "cherry three") > 0);  /* level 0 full */
	a2m_seg_job_hold_for_tests(1);
	EXPECT(insert(t, "d", "date four") > 0);   /* begins the merge; not written */
	EXPECT(insert(t, "e", "elder five") > 0);  /* nor here */
	EXPECT_INT(a2m_seg_job_release_for_tests(), 1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 5);
	const char *words[] = {"apple", "banana", "cherry", "date", "elder", "one", "five"};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		EXPECT_INT(df(t, words[i]), 1);
	EXPECT(insert(t, "f", "fig six") > 0);  /* the third commit: written */
	a2m_segments_merge_factor_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 1"), 1);
	EXPECT_INT(sql_int(t, "SELECT entries FROM a2m_segdir WHERE level = 1"), 6);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 3);
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		EXPECT_INT(df(t, words[i]), 1);
	EXPECT_INT(df(t, "fig"), 1);
	if (!failure[0] && !check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
}

/*
** A merge ahead left pending across commits, whose inputs another writer
** on the file merges meanwhile (the other connection merges inline), is
** dropped by the commit that would write it: the write goes through, and
** the index is the other writer's merge plus the new segment.
*/
static void test_a_pending_merge_whose_inputs_went_is_dropped(tctx *t)
{
	char why[320];
	a2m_segments_merge_factor_for_tests(2);
	a2m_segments_ahead_min_for_tests(0);
	a2m_segments_ahead_wait_for_tests(2);
	EXPECT(insert(t, "a", "apple one") > 0);
	EXPECT(insert(t, "b", "banana two") > 0);
	EXPECT(insert(t, "c", "cherry three") > 0);  /* merges a and b ahead: pending */
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 3);
	EXPECT_OK(insert_elsewhere(t, "o", "olive seven"));
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 0);
	EXPECT(insert(t, "d", "date four") > 0);  /* would write the pending merge */
	a2m_segments_ahead_wait_for_tests(0);
	a2m_segments_merge_factor_for_tests(0);
	a2m_segments_ahead_min_for_tests(-1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), 1);
	const char *words[] = {"apple", "banana", "cherry", "date", "olive", "one", "four"};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		EXPECT_INT(df(t, words[i]), 1);
	if (!failure[0] && !check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
}

/*
** Big levels merged in steps (every full level, here, a few hundred bytes
** of inputs per commit): the postings stay those the records make at every
** point, merges are under way across commits, and the store's check finds
** the index right, with the merges' outputs and retired rows accounted for.
*/
static void test_merges_in_steps_keep_the_records_postings(tctx *t)
{
	int64_t most;
	char why[320];
	most_merges = 0;
	a2m_segments_steps_for_tests(0, 300);
	merge_history(t, &most);
	a2m_segments_steps_for_tests(-1, 0);
	EXPECT(most_merges >= 1);
	EXPECT(most <= 4);
	EXPECT(sql_int(t, "SELECT max(level) FROM a2m_segdir") >= 3);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
}

static int count_posting(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	(void)seq, (void)tf, (void)dl;
	++*(int64_t *)ctx;
	return 0;
}

/*
** A common word's list past a block of 64 entries gets its skip table in
** every segment that writes it: the merges' outputs, whole and in steps,
** and the tables are right (the store's check rebuilds each from its
** entries, as skip_tables does).
*/
static void test_merges_write_skip_tables(tctx *t)
{
	char id[32], text[64], why[320];
	a2m_segments_merge_factor_for_tests(2);
	a2m_sqlite_index_tail_for_tests(1);  /* a segment per commit */
	for (int steps = 0; steps < 2 && !failure[0]; steps++) {
		a2m_segments_steps_for_tests(steps ? 0 : -1, steps ? 300 : 0);
		for (int i = 0; i < 150 && !failure[0]; i++) {
			snprintf(id, sizeof id, "s%d-%d", steps, i);
			snprintf(text, sizeof text, "common w%d", i % 17);
			if (insert(t, id, text) <= 0)
				snprintf(failure, sizeof failure, "insert %s: %s", id, t->s->errmsg);
		}
	}
	a2m_segments_steps_for_tests(-1, 0);
	a2m_segments_merge_factor_for_tests(0);
	a2m_sqlite_index_tail_for_tests(0);
	int64_t all = 0;
	EXPECT_OK(t->s->ops->index_postings(t->s, "common", 6, count_posting, &all));
	EXPECT_INT(all, 300);
	EXPECT(skip_tables(t, "SELECT data FROM a2m_segments WHERE seg IN"
			   " (SELECT seg FROM a2m_segdir WHERE level >= 1)") > 0);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
}

/*
** kill -9 at many points of merges in steps (small budgets, so a merge
** spans many commits): after each, the file opens, its check finds the
** index exactly the records' text, every acknowledged record is there, and
** the writer that follows takes the merges under way on from where they
** stopped. Some kills must land inside a merge.
*/
static void test_a_kill_in_a_merge_leaves_the_index_right(tctx *t)
{
	uint64_t acked = 0;
	int mid_merge = 0;
	char why[320];
	a2m_segments_merge_factor_for_tests(4);
	a2m_segments_steps_for_tests(0, 2000);
	close_store(t);
	for (int round = 0; round < 30 && !failure[0]; round++) {
		/* Some commits in, however slow the build (sanitizers, a loaded
		** machine), then a kill at a varying point of the next ones. */
		if (kill_round(t, &acked, acked + 3 * (uint64_t)(4 + round % 7),
			       (useconds_t)((round * 7717) % 20000), 0) != 0)
			break;
		if (open_indexed(t, &tix) != 0) {
			snprintf(failure, sizeof failure, "round %d: cannot open", round);
			break;
		}
		mid_merge += sql_int(t, "SELECT count(*) FROM a2m_segmerge WHERE cursor IS NOT NULL")
			     > 0;
		if (!check_clean(t->s, why, sizeof why))
			snprintf(failure, sizeof failure, "round %d: %s", round, why);
		int64_t have = sql_int(t, "SELECT count(*) FROM records");
		/* Every acknowledged record, and at most the transaction in flight. */
		if (have != (int64_t)acked && have != (int64_t)acked + 3)
			snprintf(failure, sizeof failure, "round %d: %lld records, %llu acknowledged",
				 round, (long long)have, (unsigned long long)acked);
		acked = (uint64_t)have;
		close_store(t);
	}
	a2m_segments_merge_factor_for_tests(0);
	a2m_segments_steps_for_tests(-1, 0);
	EXPECT(acked > 100);
	EXPECT(mid_merge >= 3);
	EXPECT_OK(open_indexed(t, &tix));
}

int main(void)
{
	RUN_INLINE(test_merged_segments_keep_the_records_postings);
	RUN_SQLITE(test_merges_ahead_keep_the_records_postings);
	RUN_NO_TAIL(RUN_SQLITE, test_merges_ahead_left_pending_keep_the_records_postings);
	RUN_NO_TAIL(RUN_SQLITE, test_a_commit_does_not_wait_for_a_merge_ahead);
	RUN_NO_TAIL(RUN_SQLITE, test_a_pending_merge_whose_inputs_went_is_dropped);
	RUN_SQLITE(test_small_levels_are_merged_inside_the_commit);
	RUN_NO_TAIL(RUN_SQLITE, test_a_full_level_is_merged_ahead_by_the_next_transaction);
	RUN_NO_TAIL(RUN_SQLITE, test_merge_ahead_is_dropped_with_a_rollback);
	RUN_SQLITE(test_merges_in_steps_keep_the_records_postings);
	RUN_SQLITE(test_merges_write_skip_tables);
	RUN_SQLITE(test_a_kill_in_a_merge_leaves_the_index_right);
	return index_harness_end();
}
