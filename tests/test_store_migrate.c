/*
** test_store_migrate.c — the storage seam's rules (store.h) on SQLite's schema steps
** on files older builds left, and stores opened read-only;
** each rule runs on the engines it names (the harness, output and files:
** tests/store_harness.h; what the rules share: tests/store_records.h).
*/
#include "store_records.h"

/* ---- SQLite only: migrating, read-only ---------------------------------- */

/* Closes t's store and removes its files, leaving t->s NULL. */
static void close_and_remove(tctx *t)
{
	t->s->ops->close(t->s);
	t->s = NULL;
	remove_files(t->path);
	remove_dir(t->dir);
}

/* Makes t->path a version-1 file as a build before settings wrote it. */
static int write_version_1_file(tctx *t)
{
	return raw_exec(t,
		"PRAGMA journal_mode=WAL;"
		"CREATE TABLE a2m_schema(version INTEGER NOT NULL);"
		"INSERT INTO a2m_schema(version) VALUES(1);"
		"CREATE TABLE records("
		" seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
		" content TEXT NOT NULL, created_at INTEGER NOT NULL, role TEXT,"
		" metadata TEXT, grp TEXT, tier TEXT, salience REAL NOT NULL DEFAULT 0,"
		" accessed_at INTEGER NOT NULL DEFAULT 0,"
		" access_count INTEGER NOT NULL DEFAULT 0, owner TEXT, session TEXT,"
		" key TEXT, revision INTEGER NOT NULL DEFAULT 0, embedding BLOB, uri TEXT,"
		" media_type TEXT);"
		"CREATE INDEX records_created ON records(created_at, seq);"
		"CREATE INDEX records_tier ON records(tier, created_at, seq);"
		"CREATE INDEX records_session ON records(session, created_at, seq);"
		"CREATE UNIQUE INDEX records_owner_key ON records(ifnull(owner, x''), key)"
		" WHERE key IS NOT NULL;"
		"CREATE INDEX records_grp ON records(grp);"
		"INSERT INTO records(id, content, created_at, owner, key)"
		" VALUES('old', 'from version 1', 42, 'alice', 'k');");
}

static void count_problems(void *ctx, a2m_check_area area, int problem, const char *msg);

/* Takes a file of this build back to before step 13 (no a2m_bound). */
#define SQL_BEFORE_STEP_13 "DROP TABLE a2m_bound;"
/* Takes a file of this build back to before step 12 (records_tier by name). */
#define SQL_BEFORE_STEP_12 SQL_BEFORE_STEP_13 \
	"DROP INDEX records_tier;" \
	"CREATE INDEX records_tier ON records(tier, created_at, seq);"

/* Closes t's store (t->s NULL after) and checks its file is at the current version. */
static void close_at_current_version(tctx *t)
{
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_STR(schema_versions(t), "13");
}

/*
** Takes t's file back to what a build at schema version `version` left:
** closes the store (t->s NULL after), runs rewind (SQL undoing the later
** steps) and marks the file with that version. Returns 0, or -1 with the
** failure set.
*/
static int rewind_to_version(tctx *t, const char *rewind, int version)
{
	char sql[1024], want[16];
	t->s->ops->close(t->s);
	t->s = NULL;
	snprintf(sql, sizeof sql, "%sUPDATE a2m_schema SET version = %d;", rewind, version);
	snprintf(want, sizeof want, "%d", version);
	int rc = raw_exec(t, sql);
	if (rc != SQLITE_OK || strcmp(schema_versions(t), want) != 0) {
		failf(__LINE__, "rewind to version %d: SQLite %d, the file says \"%s\"", version,
		      rc, schema_versions(t));
		return -1;
	}
	return 0;
}

/*
** Opens t's rewound file read-write (full sync), which migrates it.
** Returns 0 once it is open at the current version, else -1 with the
** failure set (t->s NULL when it did not open).
*/
static int reopen_migrated(tctx *t)
{
	char err[256] = "";
	if (open_store(t, 1, err, sizeof err) != 0 || !t->s) {
		failf(__LINE__, "reopen to migrate: %s", err);
		return -1;
	}
	if (strcmp(schema_versions(t), "13") != 0) {
		failf(__LINE__, "migrated to version \"%s\", want \"13\"", schema_versions(t));
		return -1;
	}
	return 0;
}

/* The plan SQLite makes for a scan of q on t's file: its details, joined by ';'. */
static const char *scan_plan(tctx *t, const a2m_query *q)
{
	static char plan[512];
	char sql[1100];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	size_t used = 0;
	plan[0] = '\0';
	memcpy(sql, "EXPLAIN QUERY PLAN ", 19);
	if (a2m_sqlite_scan_sql_for_tests(t->s, q, sql + 19, sizeof sql - 19) != 0)
		return "<no scan SQL>";
	if (sqlite3_open(t->path, &db) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(plan, sizeof plan, "<%s>", sqlite3_errmsg(db));
	} else {
		while (sqlite3_step(st) == SQLITE_ROW && used < sizeof plan)
			used += (size_t)snprintf(plan + used, sizeof plan - used, "%s;",
						 (const char *)sqlite3_column_text(st, 3));
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return plan;
}

/*
** Makes t's file one a version-11 build left, holding n records r00, r01,
** ... (created 100 on) in the tiers working, episodic, semantic, long and
** none in turn, every other one in session s1; t->s closed. Returns 0,
** or -1 with the failure set.
*/
static int version_11_file(tctx *t, int n)
{
	static const char *const tiers[] = {"working", "episodic", "semantic", "long", NULL};
	for (int i = 0; i < n; i++) {
		char id[16];
		snprintf(id, sizeof id, "r%02d", i);
		if (put_in(t, id, 100 + i, tiers[i % 5], i % 2 ? "s1" : NULL) != 0) {
			failf(__LINE__, "put %s: %s", id, t->s->errmsg);
			return -1;
		}
	}
	return rewind_to_version(t, SQL_BEFORE_STEP_12, 11);
}

/*
** Step 12 on a file a build of version 11 left (records_tier by tier
** name): the index is made again keyed by the tier's key, the default
** tiers in the order semantic, episodic, working; every scan by tier
** (alone, with no session, brief, newest first from a bound) searches it,
** one naming a session searches records_session as before; the records,
** their scans by tier and their counts, and the check are what they were.
*/
static void test_migrates_version_11_file_to_tier_keys(tctx *t)
{
	char buf[160];
	int problems = 0;
	if (version_11_file(t, 20) != 0)
		return;
	EXPECT_STR(tier_index_columns(t), "tier,created_at,seq");
	if (reopen_migrated(t) != 0)
		return;
	EXPECT_STR(tier_index_columns(t), "<expr>,created_at,seq");
	/* The default tiers in the index: semantic, episodic, working; no tier first. */
	EXPECT_INT(raw_query(t, "SELECT group_concat(ifnull(tier, '-')) FROM (SELECT DISTINCT tier"
			     " FROM records INDEXED BY records_tier ORDER BY "
			     A2M_SQLITE_TIER_KEY("tier") ")", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "-,semantic,episodic,working,long");
	const char *want = "SEARCH records USING INDEX records_tier (<expr>=?";
	EXPECT(strstr(scan_plan(t, &(a2m_query){.tier = "working"}), want) != NULL);
	EXPECT(strstr(scan_plan(t, &(a2m_query){.tier = "episodic", .by_session = 1,
						 .brief = 1}), want) != NULL);
	EXPECT(strstr(scan_plan(t, &(a2m_query){.tier = "long", .descending = 1,
						 .created_min = 3}), want) != NULL);
	EXPECT(strstr(scan_plan(t, &(a2m_query){.tier = "working", .by_session = 1,
						 .session = "s1", .brief = 1}),
		      "SEARCH records USING INDEX records_session (session=?") != NULL);
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "working"}), "r00,r05,r10,r15");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "long", .by_session = 1, .session = "s1"}),
		   "r03,r13");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "long", .by_session = 1}), "r08,r18");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "semantic", .descending = 1}),
		   "r17,r12,r07,r02");
	/* A tier named like a key's number is its own: no record is in "1". */
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "1"}), "");
	EXPECT_STR(working_counts(t), "4 2 2 10 4");
	a2m_check_options o = {.report = count_problems, .ctx = &problems};
	EXPECT_INT(OPS->check(t->s, &o), 0);
	EXPECT_INT(problems, 0);
}

/*
** Step 10 on a file a build of version 9 left (every record in a2m_counts,
** no 'counted' mark): the mark starts at the last record; inserts after it
** wait in the counts' tail (a2m_counts without them, every count with
** them, another store on the file counting them from their rows); that
** store's close writes them in, and a remove writes the tail out first.
*/
static void test_migrates_version_9_file_to_the_counts_tail(tctx *t)
{
	char buf[64], err[256] = "";
	a2m_store *other = NULL;
	int removed = 0;
	a2m_record w1 = make("w1", 50), w2 = make("w2", 51), n1 = make("n1", 60),
		   n2 = make("n2", 61), n3 = make("n3", 62);
	w1.tier = w2.tier = n1.tier = n2.tier = n3.tier = "working";
	w1.session = n1.session = "s1";
	EXPECT_OK(OPS->insert(t->s, &w1));
	EXPECT_OK(OPS->insert(t->s, &w2));
	if (rewind_to_version(t, SQL_BEFORE_STEP_12 "DELETE FROM a2m_meta WHERE name = 'counted';",
			      9) != 0)
		return;
	EXPECT_INT(raw_query(t, "SELECT sum(n) FROM a2m_counts", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "2");
	if (reopen_migrated(t) != 0)
		return;
	EXPECT_INT(raw_query(t, "SELECT value FROM a2m_meta WHERE name = 'counted'", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "2");
	EXPECT_OK(OPS->insert(t->s, &n1));
	EXPECT_OK(OPS->insert(t->s, &n2));
	/* working; working s1; working, no session; s1; episodic */
	EXPECT_STR(working_counts(t), "4 2 2 2 0");
	EXPECT_INT(raw_query(t, "SELECT sum(n) FROM a2m_counts", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "2");
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &other, err, sizeof err), 0);
	if (other) {
		int64_t n = -1;
		EXPECT_OK(other->ops->count(other, &(a2m_query){.tier = "working"}, &n));
		EXPECT_INT(n, 4);
		other->ops->close(other);  /* it counted the tail: its close writes it in */
	}
	EXPECT_INT(raw_query(t, "SELECT sum(n) || ' ' || (SELECT value FROM a2m_meta"
			     " WHERE name = 'counted') FROM a2m_counts", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "4 4");
	EXPECT_STR(working_counts(t), "4 2 2 2 0");
	EXPECT_OK(OPS->insert(t->s, &n3));
	EXPECT_STR(working_counts(t), "5 2 3 2 0");
	EXPECT_OK(OPS->remove(t->s, "w2", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_INT(raw_query(t, "SELECT sum(n) || ' ' || (SELECT value FROM a2m_meta"
			     " WHERE name = 'counted') FROM a2m_counts", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "4 5");
	EXPECT_STR(working_counts(t), "4 2 2 2 0");
}

/* Counts the problems a check reports (ctx: an int). */
static void count_problems(void *ctx, a2m_check_area area, int problem, const char *msg)
{
	(void)area;
	if (problem) {
		printf("  check: %s\n", msg);
		(*(int *)ctx)++;
	}
}

/* Moves the record with this id to tier `to`, naming it by session (NULL: its own). */
static int move_named(tctx *t, const char *id, const char *to, const char *session,
		      int *moved)
{
	a2m_record *rec = NULL;
	*moved = -1;
	int rc = OPS->get(t->s, id, &rec);
	if (!rc && rec && session) {
		free(rec->session);
		rec->session = strdup(session);
	}
	if (!rc && rec)
		rc = OPS->move(t->s, rec, to, rec->salience, moved);
	a2m_record_free(rec);
	return rc;
}

/* The counts' mark and sum(n) of a2m_counts, as the file holds them. */
static const char *counted_of(tctx *t)
{
	static char buf[64];
	if (raw_query(t, "SELECT (SELECT value FROM a2m_meta WHERE name = 'counted')"
		      " || ' ' || ifnull(sum(n), 0) FROM a2m_counts", buf, sizeof buf) != SQLITE_OK)
		snprintf(buf, sizeof buf, "<query failed>");
	return buf;
}

/*
** A tier move is counted by the engine, not a trigger (schema step 11): a
** record under the counts' mark moves without the tail written out (the
** mark stays) and its -1 and +1 reach a2m_counts at COMMIT; a record above
** the mark has the tail written out first; a rollback keeps nothing; a move
** naming another session than the record's moves nothing; the last counted
** record of a bucket takes its row with it. Every count agrees with the
** records: in the transaction, after it, from a second store on the file,
** after a reopen, and for the check.
*/
static void test_sqlite_moves_are_counted_without_the_trigger(tctx *t)
{
	char err[256] = "";
	int moved = 0, problems = 0;
	a2m_store *other = NULL;
	EXPECT_OK(put_in(t, "a", 1, "working", "s1"));
	EXPECT_OK(put_in(t, "b", 2, "working", "s1"));
	EXPECT_OK(put_in(t, "c", 3, "working", NULL));
	if (reopen(t, 1) != 0)  /* the clean close writes the counts out: mark 3 */
		return;
	EXPECT_OK(put_in(t, "d", 4, "working", "s1"));  /* in the tail */
	EXPECT_STR(counted_of(t), "3 3");
	/* working; working s1; working, no session; s1; episodic */
	EXPECT_STR(working_counts(t), "4 3 1 3 0");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_named(t, "a", "episodic", NULL, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_STR(working_counts(t), "3 2 1 3 1");
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(counted_of(t), "3 3");  /* the tail stayed out; a's count moved */
	EXPECT_STR(working_counts(t), "3 2 1 3 1");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_named(t, "d", "episodic", NULL, &moved));  /* above the mark */
	EXPECT_INT(moved, 1);
	EXPECT_STR(working_counts(t), "2 1 1 3 2");
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(counted_of(t), "4 4");
	EXPECT_STR(working_counts(t), "2 1 1 3 2");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_named(t, "b", "episodic", NULL, &moved));
	EXPECT_STR(working_counts(t), "1 0 1 3 3");
	OPS->rollback(t->s);
	EXPECT_STR(working_counts(t), "2 1 1 3 2");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_named(t, "c", "episodic", "s1", &moved));  /* c has no session */
	EXPECT_INT(moved, 0);
	EXPECT_OK(move_named(t, "c", "episodic", NULL, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(working_counts(t), "1 1 0 3 3");
	char buf[64];
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM a2m_counts WHERE tier = 'working'"
			     " AND session = x''", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	/* Three buckets in one commit (the moves net to three buckets):
	** working s1 -1 (its last: the row goes), episodic s1 -1, semantic +2. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_named(t, "b", "semantic", NULL, &moved));
	EXPECT_OK(move_named(t, "a", "semantic", NULL, &moved));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(working_counts(t), "0 0 0 3 2");
	EXPECT_INT(raw_query(t, "SELECT group_concat(tier || '/' || session || '/' || n, ' ')"
			     " FROM (SELECT * FROM a2m_counts ORDER BY tier, session)",
			     buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "episodic/s1/1 episodic//1 semantic/s1/2");  /* text sorts before blob */
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &other, err, sizeof err), 0);
	if (other) {
		int64_t n = -1;
		EXPECT_OK(other->ops->count(other, &(a2m_query){.tier = "episodic"}, &n));
		EXPECT_INT(n, 2);
		EXPECT_OK(other->ops->count(other, &(a2m_query){.tier = "semantic"}, &n));
		EXPECT_INT(n, 2);
		EXPECT_OK(other->ops->count(other, &(a2m_query){.tier = "working",
								.by_session = 1,
								.session = "s1"}, &n));
		EXPECT_INT(n, 0);
		a2m_check_options o = {.report = count_problems, .ctx = &problems};
		EXPECT_INT(other->ops->check(other, &o), 0);
		EXPECT_INT(problems, 0);
		other->ops->close(other);
	}
	if (reopen(t, 1) != 0)
		return;
	EXPECT_STR(working_counts(t), "0 0 0 3 2");
	if (check_groups(t, "after the reopen") != 0)
		return;
	a2m_check_options o = {.report = count_problems, .ctx = &problems};
	EXPECT_INT(OPS->check(t->s, &o), 0);
	EXPECT_INT(problems, 0);
}

static void test_migrates_version_1_file_forward(tctx *t)
{
	char buf[64], err[256] = "";
	a2m_record *got = NULL;
	close_and_remove(t);
	EXPECT_INT(write_version_1_file(t), SQLITE_OK);
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err), 0);
	EXPECT_OK(OPS->get(t->s, "old", &got));
	EXPECT_STR(got ? got->content : NULL, "from version 1");
	EXPECT_INT(got ? got->seq : 0, 1);
	a2m_record_free(got);
	EXPECT_STR(meta_of(t, "embedding_dims"), "<unset>");
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "768"));
	EXPECT_OK(put(t, "new", 43, "alice", "k2"));
	EXPECT_INT(put(t, "dup", 44, "alice", "k"), A2M_INVALID_PARAMS);
	close_at_current_version(t);
	EXPECT_INT(raw_query(t, "SELECT value FROM a2m_meta WHERE name = 'embedding_dims'",
			     buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "768");
	EXPECT_INT(raw_query(t, "SELECT group_concat(id) FROM (SELECT id FROM records"
			     " ORDER BY seq)", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "old,new");
}

/*
** A version-3 file (the schema before the kept counts) holding records in
** several tiers and sessions: opening it read-write counts what is there,
** and writes keep the counts from then on.
*/
static void test_migrates_version_3_file_with_counts(tctx *t)
{
	char buf[64], err[256] = "";
	int removed;
	close_and_remove(t);
	EXPECT_INT(write_version_1_file(t), SQLITE_OK);
	EXPECT_INT(raw_exec(t,
		"CREATE TABLE a2m_meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);"
		"ALTER TABLE records ADD COLUMN gen_embedding BLOB;"
		"UPDATE a2m_schema SET version = 3;"
		"INSERT INTO records(id, content, created_at, tier, session) VALUES"
		" ('w1', 'c', 50, 'working', 's1'), ('w2', 'c', 51, 'working', 's1'),"
		" ('w3', 'c', 52, 'working', 's2'), ('w4', 'c', 53, 'working', NULL),"
		" ('e1', 'c', 54, 'episodic', 's1'), ('n1', 'c', 55, NULL, NULL);"),
		SQLITE_OK);
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err), 0);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), 4);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working", .by_session = 1,
					    .session = "s1"}), 2);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working", .by_session = 1}), 1);
	EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1, .session = "s1"}), 3);
	EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1}), 3);  /* w4, n1, old */
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic"}), 1);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "semantic"}), 0);
	if (check_groups(t, "after migrating") != 0)
		return;
	EXPECT_OK(OPS->remove(t->s, "w1", &removed));
	a2m_record w3 = make("w3", 52);
	w3.tier = "episodic";
	w3.session = "s1";
	EXPECT_OK(OPS->update(t->s, &w3));
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic", .by_session = 1,
					    .session = "s1"}), 2);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working", .by_session = 1,
					    .session = "s2"}), 0);
	if (check_groups(t, "after writes") != 0)
		return;
	close_at_current_version(t);
	/* A bucket left empty holds no row. */
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM a2m_counts WHERE n <= 0", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM a2m_counts", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "4");
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err), 0);
}

/*
** A version-7 file as the last build with AUTOINCREMENT and the insert
** trigger left it (steps 2 to 7 as they were, and records_unembedded as a
** server with an embedder made it), holding records whose newest was
** removed: opening it read-write rebuilds records keeping every seq, the
** counts, the unique keys and the index, and new records go on above the
** removed one's seq.
*/
static void test_migrates_version_7_file_keeping_seqs_counts_and_keys(tctx *t)
{
	char buf[128], err[256] = "";
	a2m_record *got = NULL;
	a2m_record n1 = make("n1", 60), n2 = make("n2", 61);
	int removed;
	close_and_remove(t);
	EXPECT_INT(write_version_1_file(t), SQLITE_OK);
	EXPECT_INT(raw_exec(t,
		"CREATE TABLE a2m_meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);"
		"ALTER TABLE records ADD COLUMN gen_embedding BLOB;"
		"CREATE TABLE a2m_counts(tier NOT NULL, session NOT NULL, n INTEGER NOT NULL,"
		" PRIMARY KEY(tier, session)) WITHOUT ROWID;"
		"INSERT INTO a2m_counts(tier, session, n)"
		" SELECT ifnull(tier, x''), ifnull(session, x''), count(*) FROM records"
		" GROUP BY 1, 2;"
		"CREATE TRIGGER a2m_counts_insert AFTER INSERT ON records BEGIN"
		" INSERT INTO a2m_counts(tier, session, n)"
		"  VALUES(ifnull(new.tier, x''), ifnull(new.session, x''), 1)"
		"  ON CONFLICT(tier, session) DO UPDATE SET n = n + 1;"
		" END;"
		"CREATE TRIGGER a2m_counts_delete AFTER DELETE ON records BEGIN"
		" UPDATE a2m_counts SET n = n - 1"
		"  WHERE tier = ifnull(old.tier, x'') AND session = ifnull(old.session, x'');"
		" DELETE FROM a2m_counts WHERE n <= 0"
		"  AND tier = ifnull(old.tier, x'') AND session = ifnull(old.session, x'');"
		" END;"
		"CREATE TRIGGER a2m_counts_update AFTER UPDATE OF tier, session ON records"
		" WHEN old.tier IS NOT new.tier OR old.session IS NOT new.session BEGIN"
		" UPDATE a2m_counts SET n = n - 1"
		"  WHERE tier = ifnull(old.tier, x'') AND session = ifnull(old.session, x'');"
		" DELETE FROM a2m_counts WHERE n <= 0"
		"  AND tier = ifnull(old.tier, x'') AND session = ifnull(old.session, x'');"
		" INSERT INTO a2m_counts(tier, session, n)"
		"  VALUES(ifnull(new.tier, x''), ifnull(new.session, x''), 1)"
		"  ON CONFLICT(tier, session) DO UPDATE SET n = n + 1;"
		" END;"
		"DROP INDEX records_grp;"
		"CREATE INDEX records_grp ON records(grp) WHERE grp IS NOT NULL;"
		"CREATE INDEX records_unembedded ON records(tier, seq) WHERE embedding IS NULL"
		" AND gen_embedding IS NULL AND trim(content, char(32, 9, 10, 11, 12, 13)) <> '';"
		"UPDATE a2m_schema SET version = 7;"
		"INSERT INTO records(id, content, created_at, tier, session, owner, key, grp)"
		" VALUES ('w1', 'c', 50, 'working', 's1', NULL, 'k1', 'g'),"
		" ('w2', 'c', 51, 'working', 's1', 'bob', 'k1', NULL),"
		" ('w3', 'c', 52, 'working', NULL, NULL, NULL, NULL),"
		" ('e1', 'c', 53, 'episodic', 's1', NULL, NULL, 'g'),"
		" ('gone', 'c', 54, 'working', 's1', NULL, NULL, NULL);"
		"DELETE FROM records WHERE id = 'gone';"), SQLITE_OK);
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err), 0);
	if (!t->s)
		return;
	EXPECT_STR(scan_ids(t, &all_q), "old,w1,w2,w3,e1");
	EXPECT_OK(OPS->get(t->s, "e1", &got));
	EXPECT_INT(got ? got->seq : 0, 5);
	a2m_record_free(got);
	EXPECT_STR(working_counts(t), "3 2 1 3 1");
	if (check_groups(t, "after migrating") != 0)
		return;
	/* Unique ids and (owner, key) pairs, with or without an owner. */
	EXPECT_INT(put(t, "w1", 70, NULL, NULL), A2M_INVALID_PARAMS);
	EXPECT_INT(put(t, "x1", 70, NULL, "k1"), A2M_INVALID_PARAMS);
	EXPECT_INT(put(t, "x2", 70, "bob", "k1"), A2M_INVALID_PARAMS);
	EXPECT_INT(put(t, "x3", 70, "alice", "k"), A2M_INVALID_PARAMS);
	/* 'gone' had seq 6: new records go on above it. */
	n1.tier = "working";
	n1.session = "s1";
	EXPECT_OK(OPS->insert(t->s, &n1));
	EXPECT_INT(n1.seq, 7);
	EXPECT_OK(OPS->remove(t->s, "w1", &removed));
	EXPECT_STR(working_counts(t), "3 2 1 3 1");
	EXPECT_OK(OPS->remove(t->s, "n1", &removed));
	if (reopen(t, 1) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &n2));
	EXPECT_INT(n2.seq, 8);
	EXPECT_STR(working_counts(t), "2 1 1 2 1");
	close_at_current_version(t);
	EXPECT_INT(raw_query(t, "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master"
			     " WHERE tbl_name = 'records' AND type = 'index' AND sql IS NOT NULL"
			     " ORDER BY name)", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "records_created,records_expiry,records_fp,records_grp,records_owner_key,"
		   "records_session,records_tier,records_unembedded");
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM sqlite_master WHERE name = 'records_new'"
			     " OR name = 'a2m_counts_insert' OR instr(sql, 'AUTOINCREMENT')",
			     buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM records INDEXED BY records_unembedded"
			     " WHERE tier = 'working' AND embedding IS NULL AND gen_embedding IS NULL"
			     " AND trim(content, char(32, 9, 10, 11, 12, 13)) <> ''", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "2");  /* w2, w3 */
}

static void test_read_only_refuses_writes_and_still_reads(tctx *t)
{
	char err[256] = "", *v = (char *)"stale";
	a2m_record a = make("a", 1), b = make("b", 2), *got = NULL;
	int removed = -1;
	struct stat before, after;

	a.tier = "procedural";
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "768"));
	t->s->ops->close(t->s);
	t->s = NULL;
	int file = strcmp(t->engine, "sqlite") == 0;
	EXPECT(!file || stat(t->path, &before) == 0);

	EXPECT_INT(open_read_only(t, err, sizeof err), 0);
	EXPECT_INT(t->s->read_only, 1);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_STR(got ? got->content : NULL, "content");
	a2m_record_free(got);
	EXPECT_STR(scan_ids(t, &all_q), "a");
	EXPECT_INT(count_of(t, &all_q), 1);
	EXPECT_STR(meta_of(t, "embedding_dims"), "768");

	EXPECT_INT(OPS->insert(t->s, &b), A2M_READ_ONLY);
	EXPECT(strstr(t->s->errmsg, "read-only") != NULL);
	a.content = "changed";
	EXPECT_INT(OPS->update(t->s, &a), A2M_READ_ONLY);
	EXPECT_INT(OPS->remove(t->s, "a", &removed), A2M_READ_ONLY);
	EXPECT_INT(removed, 0);
	EXPECT_INT(OPS->meta_set(t->s, "embedding_dims", "1024"), A2M_READ_ONLY);
	EXPECT_INT(OPS->meta_set(t->s, "embedding_dims", NULL), A2M_READ_ONLY);
	/* Refused before any check: even an invalid record gets A2M_READ_ONLY. */
	EXPECT_INT(OPS->insert(t->s, &(a2m_record){0}), A2M_READ_ONLY);

	/* A read transaction works, and a write inside it is refused alike. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_INT(count_of(t, &all_q), 1);
	EXPECT_INT(OPS->insert(t->s, &b), A2M_READ_ONLY);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(OPS->begin(t->s));
	OPS->rollback(t->s);

	/* Nothing changed: not the records, not the settings, not the file. */
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_STR(got ? got->content : NULL, "content");
	a2m_record_free(got);
	EXPECT_INT(OPS->meta_get(t->s, "embedding_dims", &v), 0);
	EXPECT_STR(v, "768");
	free(v);
	t->s->ops->close(t->s);
	t->s = NULL;
	if (!file)
		return;
	EXPECT_INT(stat(t->path, &after), 0);
	EXPECT_INT(after.st_size, before.st_size);
	EXPECT_INT(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
	EXPECT_INT(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
	/* Nor was the procedural mirror reconciled into existence. */
	EXPECT_INT(access(t->dir, F_OK), -1);
}

static void test_read_only_open_of_missing_file_fails_and_creates_nothing(tctx *t)
{
	char err[256] = "", name[200];
	close_and_remove(t);
	EXPECT(open_read_only(t, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(strstr(err, "read-only") != NULL);
	EXPECT(strstr(err, "No such file") != NULL);
	EXPECT_INT(access(t->path, F_OK), -1);
	snprintf(name, sizeof name, "%s-wal", t->path);
	EXPECT_INT(access(name, F_OK), -1);
	snprintf(name, sizeof name, "%s-shm", t->path);
	EXPECT_INT(access(name, F_OK), -1);
	EXPECT_INT(access(t->dir, F_OK), -1);
}

static void test_read_only_refuses_file_without_a2m_schema(tctx *t)
{
	char err[256] = "", buf[64];
	close_and_remove(t);
	EXPECT_INT(raw_exec(t, "CREATE TABLE other(x)"), SQLITE_OK);
	EXPECT(open_read_only(t, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(strstr(err, "has no a2m schema") != NULL);
	EXPECT_INT(raw_query(t, "SELECT group_concat(name) FROM sqlite_master", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "other");
	/* An empty file is an empty database: no schema either, and it stays empty. */
	remove_files(t->path);
	FILE *f = fopen(t->path, "w");
	EXPECT(f != NULL);
	fclose(f);
	EXPECT(open_read_only(t, err, sizeof err) < 0);
	EXPECT(strstr(err, "has no a2m schema") != NULL);
	struct stat st;
	EXPECT_INT(stat(t->path, &st), 0);
	EXPECT_INT(st.st_size, 0);
}

static void test_read_only_refuses_older_schema_without_migrating(tctx *t)
{
	char err[256] = "", buf[64];
	close_and_remove(t);
	EXPECT_INT(write_version_1_file(t), SQLITE_OK);
	EXPECT(open_read_only(t, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(strstr(err, "schema version 1") != NULL);
	EXPECT(strstr(err, "open it once read-write to migrate it") != NULL);
	EXPECT_STR(schema_versions(t), "1");
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM sqlite_master WHERE name = 'a2m_meta'",
			     buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	/* Opened read-write once, it is migrated, and then serves read-only. */
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err), 0);
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(open_read_only(t, err, sizeof err), 0);
	EXPECT_INT(count_of(t, &all_q), 1);
}

/*
** A file a version-11 build left (records_tier by tier name) is read
** read-only as it is: step 12 changed no read, only the index's key. The
** scans by tier find what they found before the rewind, and the file is
** still at version 11; one step older (10) is refused as before.
*/
static void test_read_only_reads_a_version_11_file_as_it_is(tctx *t)
{
	char err[256] = "";
	if (version_11_file(t, 10) != 0)
		return;
	EXPECT_INT(open_read_only(t, err, sizeof err), 0);
	if (!t->s)
		return;
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "working"}), "r00,r05");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "long", .by_session = 1, .session = "s1"}),
		   "r03");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "semantic", .descending = 1}), "r07,r02");
	EXPECT_STR(scan_ids(t, &(a2m_query){.by_session = 1}), "r00,r02,r04,r06,r08");
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic"}), 2);
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_STR(schema_versions(t), "11");
	EXPECT_INT(raw_exec(t, "UPDATE a2m_schema SET version = 10"), SQLITE_OK);
	EXPECT(open_read_only(t, err, sizeof err) < 0);
	EXPECT(strstr(err, "open it once read-write to migrate it") != NULL);
}

static void test_read_only_refuses_newer_schema(tctx *t)
{
	char err[256] = "";
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(raw_exec(t, "UPDATE a2m_schema SET version = 1000"), SQLITE_OK);
	EXPECT(open_read_only(t, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(strstr(err, "schema version 1000 is not one this build knows") != NULL);
}

int main(void)
{
	store_harness_start();
	RUN_SQLITE(test_migrates_version_1_file_forward);
	RUN_SQLITE(test_migrates_version_3_file_with_counts);
	RUN_SQLITE(test_migrates_version_7_file_keeping_seqs_counts_and_keys);
	RUN_SQLITE(test_migrates_version_9_file_to_the_counts_tail);
	RUN_SQLITE(test_migrates_version_11_file_to_tier_keys);
	RUN_SQLITE(test_sqlite_moves_are_counted_without_the_trigger);
	RUN_DURABLE(test_read_only_refuses_writes_and_still_reads);
	RUN_SQLITE(test_read_only_open_of_missing_file_fails_and_creates_nothing);
	RUN_SQLITE(test_read_only_refuses_file_without_a2m_schema);
	RUN_SQLITE(test_read_only_refuses_older_schema_without_migrating);
	RUN_SQLITE(test_read_only_reads_a_version_11_file_as_it_is);
	RUN_SQLITE(test_read_only_refuses_newer_schema);
	return store_records_done();
}
