/*
** test_index_segments.c — SQLite's term index segments (sqlite_segments_*.c):
** the bytes a flush and a merge write, tombstones dropped, churn that keeps
** the index the size of its records, files of older builds, a failing
** rebuild, readers across merges and commits, the term filters.
** Each rule runs on the engines it names (the analyser and the harness:
** tests/index_harness.h; the model of the records: tests/index_model.h).
*/
#include "index_harness.h"
#include "index_model.h"

/*
** One text from SQL on t's file, through a connection of its own: into out
** (cut to cap), and *hash (FNV-1a) and *len of the whole; "" on failure.
*/
static void sql_text(tctx *t, const char *sql, char *out, size_t cap, uint64_t *hash,
		     size_t *len)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	out[0] = '\0';
	*hash = a2m_hash_bytes("", 0);
	*len = 0;
	if (sqlite3_open_v2(t->path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
		const char *v = (const char *)sqlite3_column_text(st, 0);
		snprintf(out, cap, "%s", v);
		*len = strlen(v);
		*hash = a2m_hash_bytes(v, *len);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* The newest segment's rows as "term:HEX(data)" joined by spaces. */
#define SQL_NEWEST_ROWS \
	"SELECT group_concat(term || ':' || hex(data), ' ') FROM" \
	" (SELECT term, data FROM a2m_segments WHERE seg =" \
	"  (SELECT max(seg) FROM a2m_segdir) ORDER BY term)"

/*
** Every segment's directory row (no nonce, no filter) and rows, in order;
** numbers divided by the gap new segments are numbered by (A2M_SEG_GAP),
** which kept the figures taken before it.
*/
#define SQL_ALL_SEGMENTS \
	"SELECT (SELECT group_concat((seg / 64) || ' ' || level || ' ' || entries, ',') FROM" \
	"  (SELECT * FROM a2m_segdir ORDER BY seg)) || ';' ||" \
	" (SELECT group_concat((seg / 64) || ' ' || term || ' ' || hex(data), ',') FROM" \
	"  (SELECT * FROM a2m_segments ORDER BY seg, term))"

/*
** A flush whose postings of one term arrive out of seq order (an update of
** an old record and removals after inserts of newer ones; an insert removed
** again in the same transaction; terms sharing 8-byte prefixes) writes the
** very bytes the sort of every posting by (term, seq, arrival) wrote.
*/
static void test_flush_of_out_of_order_seqs_writes_the_sorted_postings(tctx *t)
{
	int removed = 0;
	char rows[2048];
	uint64_t hash;
	size_t len;
	EXPECT(insert(t, "a", "alpha beta internationalise") > 0);
	EXPECT(insert(t, "b", "beta gamma international") > 0);
	EXPECT(insert(t, "c", "gamma delta alpha") > 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "d", "alpha delta delta internationalisation") > 0);
	EXPECT(insert(t, "e", "epsilon beta") > 0);
	EXPECT_OK(update(t, "a", "beta epsilon internationalist", 0));
	EXPECT_OK(t->s->ops->remove(t->s, "b", &removed));
	EXPECT(insert(t, "f", "alpha zeta gamma") > 0);
	EXPECT_OK(update(t, "d", "delta international", 0));
	EXPECT_OK(t->s->ops->remove(t->s, "e", &removed));
	EXPECT_OK(update(t, "c", "alpha alpha", 0));
	EXPECT(insert(t, "g", "zeta beta internationalise") > 0);
	EXPECT_OK(t->s->ops->commit(t->s));
	sql_text(t, SQL_NEWEST_ROWS, rows, sizeof rows, &hash, &len);
	/* As the code that sorted every posting wrote it (7f291d7). */
	EXPECT_STR(rows, "alpha:05616C7068610703040202060103046265746107020103030A0103"
			  "0564656C7461040702010207657073696C6F6E030201030567616D6D610505030601030D696E7465"
			  "726E6174696F6E616C040504010210696E7465726E6174696F6E616C69736504030C010310696E74"
			  "65726E6174696F6E616C69737403020103047A657461060C0103020103");
	static const struct {
		const char *term;
		int         df;
	} want[] = {{"alpha", 2}, {"beta", 2}, {"epsilon", 1}, {"international", 1}};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		EXPECT_INT(df(t, want[i].term), want[i].df);
}

/*
** Merges at every level (a factor of 3) of segments written by commits of
** several records, with records updated, removed and inserted again (ties
** of one seq across segments, tombstones kept and dropped): the segments
** hold the very bytes a merge that decodes and encodes every entry writes
** (7f291d7's, until merges dropped the tombstones above their run's floor:
** 272 and 106 entries then, 243 and 89 now; the figures below were taken
** from both, the copy of runs turned off and on, and agree).
*/
static void test_merges_write_the_bytes_of_decoding_every_entry(tctx *t)
{
	model m;
	char dump[64];
	uint64_t hash;
	size_t len;
	static const char *const words[] = {
		"internationalisation internat interna i", "internationale intern internataz",
		"internationalise international internatbz internationalisations"};
	memset(&m, 0, sizeof m);
	m.rand = 2463534242u;
	a2m_segments_merge_factor_for_tests(3);
	/* Terms sharing 8-byte prefixes, each in a segment of its own, merged. */
	for (int i = 0; i < 3; i++) {
		char id[16];
		snprintf(id, sizeof id, "w%d", i);
		EXPECT(insert(t, id, words[i]) > 0);
	}
	for (int round = 0; round < 120 && !failure[0]; round++) {
		if (t->s->ops->begin(t->s) != 0)
			break;
		for (int k = 0; k < 1 + round % 7; k++)
			if (model_step(t, &m) != 0)
				snprintf(failure, sizeof failure, "round %d: %s", round, t->s->errmsg);
		if (t->s->ops->commit(t->s) != 0)
			snprintf(failure, sizeof failure, "commit: %s", t->s->errmsg);
	}
	a2m_segments_merge_factor_for_tests(0);
	EXPECT(!failure[0]);
	EXPECT_POSTINGS(t->s, &m);
	sql_text(t, SQL_ALL_SEGMENTS, dump, sizeof dump, &hash, &len);
	EXPECT_STR(dump, "81 4 156,108 3 243,117 2 89;81 i 01690302010406696E7465726E0304");
	EXPECT_INT(len, 2773);
	EXPECT_INT(hash, 8425977374325601952);
}

/* A posting and its tombstone vanish together once a merge reaches the oldest segment. */
static void test_merge_with_the_oldest_segment_drops_tombstones(tctx *t)
{
	int removed = 0;
	a2m_segments_merge_factor_for_tests(2);
	EXPECT(insert(t, "a", "alpha") > 0);
	EXPECT_OK(t->s->ops->remove(t->s, "a", &removed));
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segments"), 0);
	EXPECT(insert(t, "b", "beta") > 0);
	EXPECT(insert(t, "c", "gamma") > 0);          /* [b c] at level 1 */
	EXPECT_OK(t->s->ops->remove(t->s, "b", &removed));  /* tombstone at level 0 */
	EXPECT_INT(sql_int(t, "SELECT sum(entries) FROM a2m_segdir"), 3);
	EXPECT_INT(df(t, "beta"), 0);
	EXPECT(insert(t, "d", "delta") > 0);          /* merges up to the oldest */
	a2m_segments_merge_factor_for_tests(0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(sql_int(t, "SELECT sum(entries) FROM a2m_segdir"), 2);
	EXPECT_INT(df(t, "beta"), 0);
	EXPECT_INT(df(t, "gamma"), 1);
	EXPECT_INT(df(t, "delta"), 1);
}

/*
** A store whose records stay few while their seqs move on (each round
** remembers one and forgets the oldest, 40 alive, 3 terms each): a merge
** drops every tombstone no older segment needs, not only those of a merge
** that reaches the oldest segment, so a segment holds at most the postings
** of the records its window added and kept (120) and the tombstones of
** the older ones it removed (120). Before, the tombstone of every record
** ever forgotten stayed: after 3 000 rounds one segment held 1 564
** entries, 3 196 in all (998 now), and the total grew with the history,
** not with the records.
*/
static void test_churn_keeps_the_index_the_size_of_its_records(tctx *t)
{
	static const char *const words[] = {"amber", "basil", "cedar", "dune", "ember", "fjord"};
	char id[32], text[64];
	int removed = 0;
	a2m_segments_merge_factor_for_tests(2);
	for (int i = 0; i < 3000 && !failure[0]; i++) {
		snprintf(id, sizeof id, "r%d", i);
		snprintf(text, sizeof text, "%s %s n%d", words[i % 6], words[(i / 6) % 6], i % 40);
		EXPECT(insert(t, id, text) > 0);
		if (i >= 40) {
			snprintf(id, sizeof id, "r%d", i - 40);
			EXPECT_OK(t->s->ops->remove(t->s, id, &removed));
			EXPECT_INT(removed, 1);
		}
	}
	a2m_segments_merge_factor_for_tests(0);
	EXPECT(sql_int(t, "SELECT max(entries) FROM a2m_segdir") <= 240);
	EXPECT(sql_int(t, "SELECT sum(entries) - 240 * count(*) FROM a2m_segdir") <= 0);
	EXPECT_INT(stats(t).docs, 40);
	/* The two words of the records alive, once when they are the same word. */
	int want = 0;
	for (int i = 2960; i < 3000; i++)
		want += 2 - (i % 6 == (i / 6) % 6);
	EXPECT_INT(df(t, "amber") + df(t, "basil") + df(t, "cedar") + df(t, "dune") + df(t, "ember") +
		   df(t, "fjord"), want);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE maxseq IS NULL"), 0);
}

/*
** An index an older build wrote has no maxseq column: the first read-write
** open adds it, rows without a value keep every tombstone a merge younger
** than them writes (as those builds did), and the postings stay exact
** through merges of old and new rows alike.
*/
static void test_index_of_an_older_build_gains_maxseq(tctx *t)
{
	model m;
	char why[128];
	memset(&m, 0, sizeof m);
	m.rand = 88172645463325252u;
	a2m_segments_merge_factor_for_tests(3);
	for (int round = 0; round < 60 && !failure[0]; round++)
		if (model_step(t, &m) != 0)
			snprintf(failure, sizeof failure, "round %d: %s", round, t->s->errmsg);
	close_store(t);
	sqlite3 *db = NULL;
	EXPECT(sqlite3_open(t->path, &db) == SQLITE_OK);
	int rc = sqlite3_exec(db, "ALTER TABLE a2m_segdir DROP COLUMN maxseq", NULL, NULL, NULL);
	sqlite3_close(db);
	EXPECT_INT(rc, SQLITE_OK);
	EXPECT_OK(open_indexed(t, &tix));
	int64_t old_rows = sql_int(t, "SELECT count(*) FROM a2m_segdir WHERE maxseq IS NULL");
	EXPECT(old_rows > 0);
	for (int round = 0; round < 300 && !failure[0]; round++) {
		if (model_step(t, &m) != 0)
			snprintf(failure, sizeof failure, "round %d: %s", round, t->s->errmsg);
		if (!failure[0] && round % 30 == 29 && !postings_match(t->s, &m, why, sizeof why))
			snprintf(failure, sizeof failure, "round %d: %s", round, why);
	}
	a2m_segments_merge_factor_for_tests(0);
	EXPECT_POSTINGS(t->s, &m);
}

/*
** A file of the layout before segments (a2m_postings, "postings/1") is
** rebuilt from its records on open, into a single segment, even when the
** rebuild flushes several times on the way.
*/
static void test_old_layout_file_is_rebuilt_into_one_segment(tctx *t)
{
	model m;
	memset(&m, 0, sizeof m);
	m.rand = 2463534242u;
	for (int i = 0; i < MODEL_IDS; i++) {
		char id[16];
		snprintf(id, sizeof id, "r%d", i);
		random_content(&m, m.content[i], sizeof m.content[i]);
		m.seq[i] = insert(t, id, m.content[i]);
		m.live[i] = 1;
		EXPECT(m.seq[i] > 0);
	}
	for (int i = 0; i < 30; i++) {  /* more records than one merge takes segments */
		char id[16];
		snprintf(id, sizeof id, "f%d", i);
		EXPECT(insert(t, id, "filler") > 0);
	}
	close_store(t);
	sqlite3 *db = NULL;
	EXPECT(sqlite3_open(t->path, &db) == SQLITE_OK);
	int rc = sqlite3_exec(db,
		"DROP TABLE a2m_segments; DROP TABLE a2m_segdir;"
		"CREATE TABLE a2m_postings(term TEXT NOT NULL, seq INTEGER NOT NULL,"
		" tf INTEGER NOT NULL, dl INTEGER NOT NULL, PRIMARY KEY(term, seq)) WITHOUT ROWID;"
		"INSERT INTO a2m_postings VALUES('v1', 1, 1, 1), ('bogus', 1, 1, 1);"
		"UPDATE a2m_meta SET value = 'postings/1|test-words/1' WHERE name = 'index';",
		NULL, NULL, NULL);
	sqlite3_close(db);
	EXPECT_INT(rc, SQLITE_OK);
	tix.calls = 0;
	a2m_sqlite_index_rebuild_flush_for_tests(1);  /* > A2M_SEG_MAX_LISTS segments */
	rc = open_indexed(t, &tix);
	a2m_sqlite_index_rebuild_flush_for_tests(0);
	EXPECT_OK(rc);
	EXPECT_INT(tix.calls, MODEL_IDS + 30);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM sqlite_master WHERE name = 'a2m_postings'"), 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(df(t, "bogus"), 0);
	EXPECT_INT(df(t, "filler"), 30);
	EXPECT_POSTINGS(t->s, &m);
	EXPECT_INT(stats(t).docs, MODEL_IDS + 30);
}

/*
** A rebuild that fails before it has made its segments (here DROP TABLE
** meets a view where a2m_segments should be; fuzz_corrupt_db met a damaged
** file) rolls back and refuses to attach the index. Its clean-up cancelled
** a merge on segments that did not exist yet, through NULL (SIGSEGV at
** open; found by fuzz_corrupt_db, docs/FUZZING.md).
*/
static void test_rebuild_failing_before_its_segments_fails_cleanly(tctx *t)
{
	EXPECT(insert(t, "r1", "alpha beta") > 0);
	close_store(t);
	sqlite3 *db = NULL;
	EXPECT(sqlite3_open(t->path, &db) == SQLITE_OK);
	int rc = sqlite3_exec(db,
		"DROP TABLE a2m_segments; CREATE VIEW a2m_segments AS SELECT 1 AS x;"
		"UPDATE a2m_meta SET value = 'postings/1|test-words/1' WHERE name = 'index';",
		NULL, NULL, NULL);
	sqlite3_close(db);
	EXPECT_INT(rc, SQLITE_OK);
	EXPECT(open_indexed(t, &tix) != 0);
	/* Nothing of the rebuild stays: the view and the old version are there. */
	close_store(t);
	EXPECT(sqlite3_open(t->path, &db) == SQLITE_OK);
	sqlite3_stmt *st = NULL;
	EXPECT(sqlite3_prepare_v2(db, "SELECT value FROM a2m_meta WHERE name = 'index'", -1, &st,
				  NULL) == SQLITE_OK);
	EXPECT(sqlite3_step(st) == SQLITE_ROW);
	EXPECT_STR((const char *)sqlite3_column_text(st, 0), "postings/1|test-words/1");
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/*
** Another connection (read-only, its own postings cache) reads what the
** writer reads, before and after the writer's merges, by visit and by loan.
*/
static void test_a_reader_sees_the_same_postings_after_merges(tctx *t)
{
	model m;
	memset(&m, 0, sizeof m);
	m.rand = 1181783497276652981u;
	a2m_segments_merge_factor_for_tests(2);
	for (int i = 0; i < 30; i++)
		EXPECT(model_step(t, &m) == 0);
	a2m_store *r = NULL;
	char err[256];
	a2m_sqlite_options opt = {.read_only = 1};
	EXPECT_OK(a2m_store_sqlite_open(t->path, &opt, &r, err, sizeof err));
	a2m_index_stats st;
	int ok = r->ops->index_attach(r, &tix.base) == 0 && r->ops->index_stats(r, &st) == 0;
	char why[128] = "";
	ok = ok && postings_match(r, &m, why, sizeof why);
	for (int i = 0; ok && i < 60; i++)
		ok = model_step(t, &m) == 0;
	/* As a query does: the figures first, which notice the writer's commits. */
	ok = ok && r->ops->index_stats(r, &st) == 0 && postings_match(r, &m, why, sizeof why);
	const a2m_posting *v = NULL;
	size_t n = 0;
	plist p = {0};
	ok = ok && r->ops->read_begin(r) == 0;
	ok = ok && r->ops->index_postings_view(r, "v3", 2, &v, &n) == 0 &&
		t->s->ops->index_postings(t->s, "v3", 2, collect, &p) == 0 && (int)n == p.n;
	for (size_t k = 0; ok && k < n; k++)
		ok = v[k].seq == p.seq[k] && v[k].tf == p.tf[k] && v[k].dl == p.dl[k];
	r->ops->read_end(r);
	r->ops->close(r);
	a2m_segments_merge_factor_for_tests(0);
	if (why[0])
		snprintf(failure, sizeof failure, "reader: %s", why);
	EXPECT(ok);
	EXPECT_POSTINGS(t->s, &m);
}

/*
** A term read skips the segments whose filter rules the term out: twelve
** segments each holding one word of its own, and each word is read from
** about one segment, not twelve (a filter may let 1% through).
*/
static void test_term_filters_skip_segments_without_the_term(tctx *t)
{
	char id[16], text[32];
	for (int i = 0; i < 12; i++) {
		snprintf(id, sizeof id, "f%d", i);
		snprintf(text, sizeof text, "common only%dword", i);
		EXPECT(insert(t, id, text) > 0);  /* autocommit: a segment each */
	}
	EXPECT(sql_int(t, "SELECT count(*) FROM a2m_segdir") >= 2);
	size_t before = a2m_segments_block_reads();
	for (int i = 0; i < 12; i++) {
		snprintf(text, sizeof text, "only%dword", i);
		EXPECT_INT(df(t, text), 1);
	}
	EXPECT_INT(df(t, "absentword"), 0);
	size_t reads = a2m_segments_block_reads() - before;
	EXPECT(reads >= 12 && reads <= 15);
	/* A word in every segment is read from each. */
	EXPECT_INT(df(t, "common"), 12);
}

/*
** A merge inside a transaction that is rolled back: the read after the
** rollback must list the segments as they are again, not as the merge had
** left them (the data version does not move on a rollback).
*/
static void test_rollback_of_a_merge_restores_the_segments_reads_see(tctx *t)
{
	a2m_segments_merge_factor_for_tests(2);
	EXPECT(insert(t, "a", "apple one") > 0);
	EXPECT(insert(t, "b", "banana two") > 0);  /* merged with a's */
	EXPECT_INT(df(t, "apple"), 1);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "c", "cherry three") > 0);
	EXPECT_INT(df(t, "cherry"), 1);  /* written as a segment of its own */
	EXPECT(insert(t, "d", "date four") > 0);
	EXPECT_INT(df(t, "date"), 1);    /* and merged, up to one with a's and b's */
	EXPECT_INT(df(t, "apple"), 1);
	t->s->ops->rollback(t->s);
	a2m_segments_merge_factor_for_tests(0);
	EXPECT_INT(df(t, "apple"), 1);
	EXPECT_INT(df(t, "banana"), 1);
	EXPECT_INT(df(t, "cherry"), 0);
	EXPECT_INT(df(t, "date"), 0);
}

/*
** A segment number given out again after a rollback must not inherit the
** filter of the segment that had it: the rolled-back one held other terms
** (the same count of them), and a read trusting its filter would skip the
** new one.
*/
static void test_segment_number_reused_after_rollback_gets_its_own_filter(tctx *t)
{
	EXPECT(insert(t, "x1", "alpha beta") > 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "x2", "gamma delta") > 0);
	EXPECT_INT(df(t, "gamma"), 1);  /* its segment is written, and its filter read */
	t->s->ops->rollback(t->s);
	EXPECT(insert(t, "x3", "omega sigma") > 0);  /* the same number, two terms again */
	EXPECT_INT(df(t, "omega"), 1);
	EXPECT_INT(df(t, "sigma"), 1);
	EXPECT_INT(df(t, "gamma"), 0);
	EXPECT_INT(df(t, "alpha"), 1);
}

/*
** A reader outside any transaction that read a term before a writer's
** commit: its next term read lists the live segments again (the list it
** kept may be older than the snapshot the read takes), so a term only in
** the new segment is found even without the figures read first.
*/
static void test_reader_lists_segments_again_after_a_writers_commit(tctx *t)
{
	EXPECT(insert(t, "w1", "apple one") > 0);
	a2m_store *r = NULL;
	char err[256];
	a2m_sqlite_options opt = {.read_only = 1};
	EXPECT_OK(a2m_store_sqlite_open(t->path, &opt, &r, err, sizeof err));
	plist p = {0};
	int ok = r->ops->index_attach(r, &tix.base) == 0 &&
		r->ops->index_postings(r, "apple", 5, collect, &p) == 0 && p.n == 1;
	EXPECT(insert(t, "w2", "quince two") > 0);  /* a new segment, committed */
	memset(&p, 0, sizeof p);
	ok = ok && r->ops->index_postings(r, "quince", 6, collect, &p) == 0;
	EXPECT(ok);
	EXPECT_INT(p.n, 1);
	r->ops->close(r);
}

int main(void)
{
	RUN_NO_TAIL(RUN_INLINE, test_merge_with_the_oldest_segment_drops_tombstones);
	RUN_NO_TAIL(RUN_SQLITE, test_flush_of_out_of_order_seqs_writes_the_sorted_postings);
	RUN_NO_TAIL(RUN_INLINE, test_merges_write_the_bytes_of_decoding_every_entry);
	RUN_SQLITE(test_old_layout_file_is_rebuilt_into_one_segment);
	RUN_INLINE(test_churn_keeps_the_index_the_size_of_its_records);
	RUN_SQLITE(test_churn_keeps_the_index_the_size_of_its_records);
	RUN_SQLITE(test_index_of_an_older_build_gains_maxseq);
	RUN_SQLITE(test_rebuild_failing_before_its_segments_fails_cleanly);
	RUN_SQLITE(test_a_reader_sees_the_same_postings_after_merges);
	RUN_NO_TAIL(RUN_SQLITE, test_term_filters_skip_segments_without_the_term);
	RUN_INLINE(test_rollback_of_a_merge_restores_the_segments_reads_see);
	RUN_SQLITE(test_segment_number_reused_after_rollback_gets_its_own_filter);
	RUN_SQLITE(test_reader_lists_segments_again_after_a_writers_commit);
	return index_harness_end();
}
