/*
** test_index_tail.c — the tail of SQLite's term index (sqlite_index_tail.c):
** lone inserts held until written out, two writers on one file, rollbacks,
** kills and closes, and files from before the tail.
** Each rule runs on the engines it names (the analyser and the harness:
** tests/index_harness.h; the model of the records: tests/index_model.h).
*/
#include "index_harness.h"
#include "index_model.h"

/* ---- the tail (sqlite_index_tail.c) ---- */

/* A second store on t's file (read-only or not), with tix: a second server. */
static a2m_store *second_store(tctx *t, int read_only)
{
	a2m_store *o = NULL;
	char err[256];
	a2m_sqlite_options opt = {.read_only = read_only};
	if (a2m_store_sqlite_open(t->path, &opt, &o, err, sizeof err) != 0)
		return NULL;
	if (o->ops->index_attach(o, &tix.base) != 0) {
		o->ops->close(o);
		return NULL;
	}
	return o;
}

static a2m_store *second_writer(tctx *t)
{
	return second_store(t, 0);
}

static int df_in(a2m_store *s, const char *term)
{
	plist p = {0};
	if (s->ops->index_postings(s, term, strlen(term), collect, &p) != 0)
		return -1;
	return p.n;
}

/*
** Lone inserts leave their postings in the tail: no segment, the mark
** unmoved, and yet every read (postings, figures) finds them. A removal
** writes the tail out, mark and all, and the index is then exactly the
** records', as the check says.
*/
static void test_lone_inserts_wait_in_the_tail_until_a_removal(tctx *t)
{
	char why[320];
	EXPECT(insert(t, "t1", "apple pear") > 0);
	EXPECT(insert(t, "t2", "apple plum") > 0);
	int64_t s3 = insert(t, "t3", "fig");
	EXPECT(s3 > 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 0);
	EXPECT_INT(sql_int(t, "SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'indexed'"), 0);
	EXPECT_INT(df(t, "apple"), 2);
	EXPECT_INT(df(t, "fig"), 1);
	EXPECT_INT(stats(t).docs, 3);
	EXPECT_INT(stats(t).total_len, 5);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "with a tail: %s", why);
	int removed = 0;
	EXPECT_OK(t->s->ops->remove(t->s, "t2", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(sql_int(t, "SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'indexed'"), s3);
	EXPECT_INT(df(t, "apple"), 1);
	EXPECT_INT(df(t, "plum"), 0);
	EXPECT_INT(stats(t).docs, 2);
	EXPECT_INT(sql_int(t, "SELECT docs FROM a2m_index_stats"), 2);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "after the removal: %s", why);
}

/*
** The tail is written out once it holds the limit of records, not before
** (the test's limit: 4).
*/
static void test_a_full_tail_is_written_out(tctx *t)
{
	a2m_sqlite_index_tail_for_tests(4);
	char id[16];
	for (int i = 0; i < 3; i++) {
		snprintf(id, sizeof id, "f%d", i);
		EXPECT(insert(t, id, "kiwi") > 0);
	}
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 0);
	EXPECT(insert(t, "f3", "kiwi") > 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(sql_int(t, "SELECT sum(entries) FROM a2m_segdir"), 4);
	EXPECT(insert(t, "f4", "kiwi") > 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(df(t, "kiwi"), 5);
	a2m_sqlite_index_tail_for_tests(0);
}

/*
** Two servers on one file: each one's lone writes wait in its tail, and
** each sees the other's, in its reads and in its own tail when it writes;
** whichever writes the tail out writes both's, and a reader (read-only,
** a third connection) sees every record throughout.
*/
static void test_two_writers_on_one_file_see_each_others_tail(tctx *t)
{
	char why[320], err[256];
	a2m_store *o = second_writer(t), *r = NULL;
	EXPECT(o != NULL);
	a2m_sqlite_options ro = {.read_only = 1};
	EXPECT_OK(a2m_store_sqlite_open(t->path, &ro, &r, err, sizeof err));
	if (!o || !r || r->ops->index_attach(r, &tix.base) != 0) {
		snprintf(failure, sizeof failure, "cannot open the other connections");
		goto out;
	}
	EXPECT(insert(t, "a1", "cherry lime") > 0);
	EXPECT_INT(df_in(r, "cherry"), 1);
	EXPECT_INT(df_in(o, "cherry"), 1);
	a2m_record rec;
	memset(&rec, 0, sizeof rec);
	rec.id = "b1";
	rec.content = "cherry mango";
	rec.tier = "semantic";
	EXPECT_OK(o->ops->insert(o, &rec));
	EXPECT(insert(t, "a2", "cherry") > 0);  /* t's tail takes b1 in first */
	EXPECT_INT(df(t, "cherry"), 3);
	EXPECT_INT(df_in(o, "cherry"), 3);
	EXPECT_INT(df_in(r, "cherry"), 3);
	EXPECT_INT(df_in(r, "mango"), 1);
	a2m_index_stats st;
	EXPECT_OK(r->ops->index_stats(r, &st));
	EXPECT_INT(st.docs, 3);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 0);
	/* o rewrites a1 (a rewrite writes the whole tail out, t's records too). */
	a2m_record *a1 = NULL;
	EXPECT_OK(o->ops->get(o, "a1", &a1));
	if (a1) {
		free(a1->content);
		a1->content = strdup("lime only");
		EXPECT_OK(o->ops->update(o, a1));
		a2m_record_free(a1);
	}
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(df_in(r, "cherry"), 2);
	EXPECT_INT(df(t, "cherry"), 2);
	EXPECT_INT(df(t, "lime"), 1);
	EXPECT(insert(t, "a3", "cherry") > 0);  /* a tail again, above the new mark */
	EXPECT_INT(df_in(o, "cherry"), 3);
	EXPECT_INT(df_in(r, "cherry"), 3);
	EXPECT_OK(r->ops->index_stats(r, &st));
	EXPECT_INT(st.docs, 4);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
out:
	if (o)
		o->ops->close(o);
	if (r)
		r->ops->close(r);
}

/*
** A transaction that writes the tail out (a removal, read inside it) and
** is then rolled back: the tail is back in the file, not in a segment,
** and the connection reads it again.
*/
static void test_a_rolled_back_write_out_keeps_the_tail(tctx *t)
{
	EXPECT(insert(t, "r1", "olive") > 0);
	EXPECT(insert(t, "r2", "olive grape") > 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	int removed = 0;
	EXPECT_OK(t->s->ops->remove(t->s, "r1", &removed));
	EXPECT_INT(df(t, "olive"), 1);  /* written out, inside the transaction */
	t->s->ops->rollback(t->s);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 0);
	EXPECT_INT(df(t, "olive"), 2);
	EXPECT(insert(t, "r3", "olive") > 0);
	EXPECT_INT(df(t, "olive"), 3);
	EXPECT_INT(stats(t).docs, 3);
}

/*
** kill -9 of a writer of lone inserts at many points: every acknowledged
** record's words find it after the reopen (those of the tail read from
** the records), the count by tier is every record's (those above the
** counts' mark counted from their rows), and the check finds the index
** and the counts right.
*/
static void test_a_kill_loses_no_record_of_the_tail(tctx *t)
{
	uint64_t acked = 0;
	char why[320], id[32], text[512];
	int tails = 0, counted = 0;
	close_store(t);
	for (int round = 0; round < 12 && !failure[0]; round++) {
		if (kill_round(t, &acked, acked + 20 + (uint64_t)(round * 37 % 90), 0, 1) != 0)
			break;
		if (open_indexed(t, &tix) != 0) {
			snprintf(failure, sizeof failure, "round %d: cannot open", round);
			break;
		}
		int64_t have = sql_int(t, "SELECT count(*) FROM records");
		if (have != (int64_t)acked && have != (int64_t)acked + 1)
			snprintf(failure, sizeof failure, "round %d: %lld records, %llu acknowledged",
				 round, (long long)have, (unsigned long long)acked);
		tails += sql_int(t, "SELECT count(*) FROM records WHERE seq > (SELECT"
				 " CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'indexed')") > 0;
		/* The counts too: those of the tail are counted from the rows. */
		counted += sql_int(t, "SELECT count(*) FROM records WHERE seq > (SELECT"
				   " CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'counted')") > 0;
		int64_t n = -1;
		if (t->s->ops->count(t->s, &(a2m_query){.tier = "semantic"}, &n) != 0 || n != have)
			snprintf(failure, sizeof failure, "round %d: %lld counted, %lld records", round,
				 (long long)n, (long long)have);
		/* Each record's first word lists it. */
		for (uint64_t i = 0; i < acked && !failure[0]; i++) {
			kill_content(i, text, sizeof text);
			char *sp = strchr(text, ' ');
			if (sp)
				*sp = '\0';
			plist p = {0};
			snprintf(id, sizeof id, "k%llu", (unsigned long long)i);
			int listed = 0;
			a2m_record *rec = NULL;
			if (t->s->ops->get(t->s, id, &rec) != 0 || !rec) {
				snprintf(failure, sizeof failure, "round %d: %s is gone", round, id);
				break;
			}
			if (t->s->ops->index_postings(t->s, text, strlen(text), collect, &p) == 0)
				for (int k = 0; k < p.n; k++)
					listed |= p.seq[k] == rec->seq;
			if (!listed && p.n < 64)
				snprintf(failure, sizeof failure, "round %d: %s not under \"%.60s\"", round,
					 id, text);
			a2m_record_free(rec);
		}
		if (!failure[0] && !check_clean(t->s, why, sizeof why))
			snprintf(failure, sizeof failure, "round %d: %s", round, why);
		acked = (uint64_t)have;
		close_store(t);
	}
	EXPECT(tails >= 6);  /* most kills left a tail to read back */
	EXPECT(counted >= 6);
	open_indexed(t, &tix);
}

#define SQL_MARK "SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'indexed'"

/*
** A clean close writes the tail out: the reopened file has its mark at the
** last record and the tail's postings in a segment, and is clean. A reader
** of the file (a second store) finds every record before and after.
*/
static void test_a_clean_close_writes_the_tail_out(tctx *t)
{
	char why[320];
	a2m_store *o = second_writer(t);
	EXPECT(o != NULL);
	if (!o)
		return;
	EXPECT(insert(t, "c1", "quince lime") > 0);
	EXPECT(insert(t, "c2", "quince") > 0);
	int64_t last = insert(t, "c3", "lime date");
	EXPECT(last > 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 0);
	EXPECT_INT(sql_int(t, SQL_MARK), 0);
	EXPECT_INT(df_in(o, "quince"), 2);
	close_store(t);
	EXPECT_INT(sql_int(t, SQL_MARK), last);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM a2m_segdir"), 1);
	EXPECT_INT(df_in(o, "quince"), 2);
	EXPECT_INT(df_in(o, "lime"), 2);
	o->ops->close(o);
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(df(t, "date"), 1);
	EXPECT_INT(stats(t).docs, 3);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "after the close: %s", why);
	/* A store that wrote nothing since holds no tail: its close writes nothing. */
	int64_t commits = sql_int(t, "SELECT CAST(value AS INTEGER) FROM a2m_meta"
				  " WHERE name = 'commits'");
	close_store(t);
	EXPECT_INT(sql_int(t, "SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'commits'"),
		   commits);
	EXPECT_OK(open_indexed(t, &tix));
}

/*
** A close that cannot have the write lock (another store is in a write)
** leaves the tail where it is, promptly: nothing is lost, and the next
** open reads it back.
*/
static void test_a_close_kept_from_writing_keeps_the_tail(tctx *t)
{
	char why[320];
	a2m_store *o = second_writer(t);
	EXPECT(o != NULL);
	if (!o)
		return;
	EXPECT(insert(t, "d1", "walnut") > 0);
	int64_t last = insert(t, "d2", "walnut pecan");
	EXPECT(last > 0);
	EXPECT_OK(o->ops->begin(o));
	close_store(t);
	o->ops->rollback(o);
	EXPECT_INT(sql_int(t, SQL_MARK), 0);
	EXPECT_INT(sql_int(t, "SELECT max(seq) FROM records"), last);
	EXPECT_INT(df_in(o, "walnut"), 2);
	o->ops->close(o);  /* o's own close writes it out: it read the tail at begin */
	EXPECT_INT(sql_int(t, SQL_MARK), last);
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(df(t, "pecan"), 1);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "after the reopen: %s", why);
}

/*
** A writer keeps its last commit's number and seq figures while no other
** commit came: two writers taking turns on one file (and one writing twice
** in a row) still give out each seq once and take each commit number once.
*/
static void test_two_writers_taking_turns_share_seqs_and_numbers(tctx *t)
{
	a2m_store *o = second_writer(t);
	EXPECT(o != NULL);
	if (!o)
		return;
	/* Numbers are taken once a store has readers to replay them. */
	a2m_sqlite_number_commits_for_tests(t->s);
	a2m_sqlite_number_commits_for_tests(o);
	char id[16];
	int64_t before = sql_int(t, "SELECT ifnull(max(CAST(value AS INTEGER)), 0) FROM a2m_meta"
				 " WHERE name = 'commits'");
	for (int i = 0; i < 12; i++) {
		a2m_record r;
		memset(&r, 0, sizeof r);
		snprintf(id, sizeof id, "turn%d", i);
		r.id = id;
		r.content = "turn word";
		r.tier = "semantic";
		a2m_store *w = i % 3 == 2 ? o : t->s;  /* t twice, then o */
		EXPECT_OK(w->ops->insert(w, &r));
		if (i == 5) {
			int removed = 0;
			EXPECT_OK(o->ops->remove(o, "turn4", &removed));  /* the newest, by o */
			EXPECT_INT(removed, 1);
		}
	}
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM records"), 11);
	EXPECT_INT(sql_int(t, "SELECT count(DISTINCT seq) FROM records"), 11);
	EXPECT_INT(sql_int(t, "SELECT max(seq) FROM records"), 12);
	EXPECT_INT(sql_int(t, "SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'commits'"),
		   before + 13);
	EXPECT_INT(df(t, "turn"), 11);
	EXPECT_INT(df_in(o, "turn"), 11);
	o->ops->close(o);
}

/*
** A file of the layout before the tail (every record indexed, no mark) is
** taken as it is at a read-write open: no rebuild, its mark set to its last
** record, and its records found; a read-only open uses it too.
*/
static void test_an_untailed_file_is_taken_as_it_is(tctx *t)
{
	char why[320];
	a2m_sqlite_index_tail_for_tests(1);
	EXPECT(insert(t, "u1", "pine cedar") > 0);
	int64_t last = insert(t, "u2", "pine");
	a2m_sqlite_index_tail_for_tests(0);
	EXPECT(last > 0);
	close_store(t);
	sqlite3 *db = NULL;
	EXPECT_INT(sqlite3_open(t->path, &db), SQLITE_OK);
	EXPECT_INT(sqlite3_exec(db, "UPDATE a2m_meta SET value = replace(value, 'postings/7|',"
				" 'postings/4|') WHERE name = 'index';"
				"DELETE FROM a2m_meta WHERE name = 'indexed'", NULL, NULL, NULL),
		   SQLITE_OK);
	sqlite3_close(db);
	a2m_store *r = second_store(t, 1);
	EXPECT(r != NULL);
	if (r) {
		EXPECT_INT(df_in(r, "pine"), 2);
		r->ops->close(r);
	}
	tix.calls = 0;
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(tix.calls, 0);  /* nothing analysed: no rebuild */
	EXPECT_INT(sql_int(t, "SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'indexed'"),
		   last);
	EXPECT_INT(sql_int(t, "SELECT value LIKE 'postings/7|%' FROM a2m_meta WHERE name = 'index'"), 1);
	EXPECT_INT(df(t, "pine"), 2);
	EXPECT(insert(t, "u3", "pine") > 0);
	EXPECT_INT(df(t, "pine"), 3);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
}

static int count_visit(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	(void)seq, (void)tf, (void)dl;
	++*(int *)ctx;
	return 0;
}

/* How many postings term has in s, every one counted (-1 on failure). */
static int df_all(a2m_store *s, const char *term)
{
	int n = 0;
	return s->ops->index_postings(s, term, strlen(term), count_visit, &n) ? -1 : n;
}

/* What main's build (postings/6) made of a2m_segments: a WITHOUT ROWID table. */
#define SQL_KEYED_SEGMENTS \
	"CREATE TABLE keyed(seg INTEGER NOT NULL, term TEXT NOT NULL, data BLOB NOT NULL," \
	" PRIMARY KEY(seg, term)) WITHOUT ROWID;" \
	"INSERT INTO keyed SELECT seg, term, data FROM a2m_segments;" \
	"DROP TABLE a2m_segments;ALTER TABLE keyed RENAME TO a2m_segments;" \
	"UPDATE a2m_meta SET value = replace(value, 'postings/7|', 'postings/6|')" \
	" WHERE name = 'index';"
#define SQL_PK_INDEXES \
	"SELECT count(*) FROM pragma_index_list('a2m_segments') WHERE origin = 'pk'"

/*
** A file of the layout before the rowid table (postings/6: a2m_segments
** WITHOUT ROWID) with segments at two levels and long lists (skip tables,
** rows longer than a read's window): a read-only open reads the old table
** as it is; a read-write open moves its rows into the rowid table in
** place (nothing analysed: no rebuild), names it postings/7, and every
** term reads the same; writes go on and the check finds it clean.
*/
static void test_a_keyed_file_is_moved_in_place(tctx *t)
{
	enum { BATCHES = 5, PER = 1200, WORDS = 40 };
	char id[32], text[96], why[320], w[16];
	int want[WORDS + 1];
	a2m_segments_merge_factor_for_tests(2);
	for (int b = 0; b < BATCHES && !failure[0]; b++) {
		EXPECT_OK(t->s->ops->begin(t->s));
		for (int i = 0; i < PER; i++) {
			int k = b * PER + i;
			snprintf(id, sizeof id, "k%d", k);
			snprintf(text, sizeof text, "pine w%d w%d%s", k % WORDS, (k * 7) % WORDS,
				 k % 3 ? " cedar" : "");
			EXPECT(insert(t, id, text) > 0);
		}
		EXPECT_OK(t->s->ops->commit(t->s));
	}
	a2m_segments_merge_factor_for_tests(0);
	EXPECT(sql_int(t, "SELECT count(DISTINCT level) FROM a2m_segdir") >= 2);
	for (int i = 0; i < WORDS; i++) {
		snprintf(w, sizeof w, "w%d", i);
		want[i] = df_all(t->s, w);
	}
	want[WORDS] = df_all(t->s, "cedar");
	EXPECT_INT(df_all(t->s, "pine"), BATCHES * PER);
	int64_t bytes = sql_int(t, "SELECT sum(length(data)) FROM a2m_segments");
	EXPECT(sql_int(t, "SELECT max(length(data)) FROM a2m_segments") > 4500);
	close_store(t);
	sqlite3 *db = NULL;
	EXPECT_INT(sqlite3_open(t->path, &db), SQLITE_OK);
	EXPECT_INT(sqlite3_exec(db, SQL_KEYED_SEGMENTS, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	EXPECT_INT(sql_int(t, SQL_PK_INDEXES), 1);
	/* Read-only: the old table read by its column. */
	a2m_store *r = second_store(t, 1);
	EXPECT(r != NULL);
	if (r) {
		EXPECT_INT(df_all(r, "pine"), BATCHES * PER);
		EXPECT_INT(df_all(r, "w7"), want[7]);
		r->ops->close(r);
	}
	EXPECT_INT(sql_int(t, SQL_PK_INDEXES), 1);
	tix.calls = 0;
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(tix.calls, 0);  /* nothing analysed: no rebuild */
	EXPECT_INT(sql_int(t, SQL_PK_INDEXES), 0);
	EXPECT_INT(sql_int(t, "SELECT count(*) FROM pragma_index_list('a2m_segments')"
			      " WHERE name = 'a2m_segments_key' AND \"unique\""), 1);
	EXPECT_INT(sql_int(t, "SELECT value LIKE 'postings/7|%' FROM a2m_meta WHERE name = 'index'"), 1);
	EXPECT_INT(sql_int(t, "SELECT sum(length(data)) FROM a2m_segments"), bytes);
	EXPECT_INT(df_all(t->s, "pine"), BATCHES * PER);
	for (int i = 0; i < WORDS; i++) {
		snprintf(w, sizeof w, "w%d", i);
		EXPECT_INT(df_all(t->s, w), want[i]);
	}
	EXPECT_INT(df_all(t->s, "cedar"), want[WORDS]);
	EXPECT(insert(t, "after", "pine cedar") > 0);
	EXPECT_INT(df_all(t->s, "pine"), BATCHES * PER + 1);
	if (!check_clean(t->s, why, sizeof why))
		snprintf(failure, sizeof failure, "%s", why);
	/* The check sees a table its layout's name does not: without its key... */
	close_store(t);
	EXPECT_INT(sqlite3_open(t->path, &db), SQLITE_OK);
	EXPECT_INT(sqlite3_exec(db, "DROP INDEX a2m_segments_key", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(df_all(t->s, "cedar"), want[WORDS] + 1);
	EXPECT(!check_clean(t->s, why, sizeof why) && strstr(why, "a2m_segments_key"));
	/* ... or WITHOUT ROWID under postings/7's name: read by its column, right. */
	close_store(t);
	EXPECT_INT(sqlite3_open(t->path, &db), SQLITE_OK);
	EXPECT_INT(sqlite3_exec(db, SQL_KEYED_SEGMENTS "UPDATE a2m_meta SET value ="
				" replace(value, 'postings/6|', 'postings/7|') WHERE name = 'index';",
				NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(df_all(t->s, "pine"), BATCHES * PER + 1);
	EXPECT_INT(df_all(t->s, "w3"), want[3]);
	EXPECT(!check_clean(t->s, why, sizeof why) && strstr(why, "WITHOUT ROWID"));
}

int main(void)
{
	RUN_SQLITE(test_lone_inserts_wait_in_the_tail_until_a_removal);
	RUN_SQLITE(test_a_full_tail_is_written_out);
	RUN_SQLITE(test_two_writers_on_one_file_see_each_others_tail);
	RUN_SQLITE(test_a_rolled_back_write_out_keeps_the_tail);
	RUN_SQLITE(test_a_clean_close_writes_the_tail_out);
	RUN_SQLITE(test_a_close_kept_from_writing_keeps_the_tail);
	RUN_SQLITE(test_two_writers_taking_turns_share_seqs_and_numbers);
	RUN_SQLITE(test_an_untailed_file_is_taken_as_it_is);
	RUN_SQLITE(test_a_kill_loses_no_record_of_the_tail);
	RUN_NO_TAIL(RUN_SQLITE, test_a_keyed_file_is_moved_in_place);
	return index_harness_end();
}
