/*
** sqlite_schema.c — the SQLite engine's connection settings and schema.
**
** The schema is versioned in a2m_schema. migrations[] holds one step per
** version; opening a file applies the missing steps in order, each in its own
** transaction together with its version bump, and refuses a file written by
** a newer build rather than guess at columns it does not know. A read-only
** open migrates nothing: it checks the file is at exactly this version.
**
** Apart from sqlite.c because it runs once, at open, and is where the
** layout of the file is decided; the rest of the engine only uses it.
*/
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_internal.h"
#include "store/sqlite_walvfs.h"

#define BUSY_TIMEOUT_MS 5000

/* What the update trigger does; step 11 makes it again, firing on less. */
#define SQL_COUNTS_UPDATE_BODY \
	" WHEN old.tier IS NOT new.tier OR old.session IS NOT new.session BEGIN" \
	" UPDATE a2m_counts SET n = n - 1" \
	"  WHERE tier = ifnull(old.tier, x'') AND session = ifnull(old.session, x'');" \
	" DELETE FROM a2m_counts WHERE n <= 0" \
	"  AND tier = ifnull(old.tier, x'') AND session = ifnull(old.session, x'');" \
	" INSERT INTO a2m_counts(tier, session, n)" \
	"  VALUES(ifnull(new.tier, x''), ifnull(new.session, x''), 1)" \
	"  ON CONFLICT(tier, session) DO UPDATE SET n = n + 1;" \
	" END;"

/*
** The triggers that keep a2m_counts across removes and moves, made by step 4
** and again by step 8 (which drops them with the old records table): one
** text, so the two cannot drift. A file has run step 4 with this text, so
** it must never change; a new trigger is a new step.
*/
#define SQL_COUNTS_TRIGGERS \
	"CREATE TRIGGER a2m_counts_delete AFTER DELETE ON records BEGIN" \
	" UPDATE a2m_counts SET n = n - 1" \
	"  WHERE tier = ifnull(old.tier, x'') AND session = ifnull(old.session, x'');" \
	" DELETE FROM a2m_counts WHERE n <= 0" \
	"  AND tier = ifnull(old.tier, x'') AND session = ifnull(old.session, x'');" \
	" END;" \
	"CREATE TRIGGER a2m_counts_update AFTER UPDATE OF tier, session ON records" \
	SQL_COUNTS_UPDATE_BODY

/*
** Schema steps; migrations[i] takes a file from version i to i + 1. Append,
** never edit: a file in the field has already run the earlier steps.
*/
static const char *const migrations[] = {
	/*
	** 1: the records table.
	**
	** records_owner_key makes a key unique per owner. A record with no
	** owner is indexed under x'' (an empty BLOB) instead of NULL: NULLs
	** never collide in a UNIQUE index, so two ownerless records could
	** otherwise share a key, and SQLite never considers a BLOB equal to a
	** TEXT value, so no owner string at all ('' included) can collide with
	** "no owner". The partial WHERE leaves records without a key alone.
	*/
	"CREATE TABLE records("
	" seq          INTEGER PRIMARY KEY AUTOINCREMENT,"
	" id           TEXT NOT NULL UNIQUE,"
	" content      TEXT NOT NULL,"
	" created_at   INTEGER NOT NULL,"
	" role         TEXT,"
	" metadata     TEXT,"
	" grp          TEXT,"
	" tier         TEXT,"
	" salience     REAL NOT NULL DEFAULT 0,"
	" accessed_at  INTEGER NOT NULL DEFAULT 0,"
	" access_count INTEGER NOT NULL DEFAULT 0,"
	" owner        TEXT,"
	" session      TEXT,"
	" key          TEXT,"
	" revision     INTEGER NOT NULL DEFAULT 0,"
	" embedding    BLOB,"
	" uri          TEXT,"
	" media_type   TEXT"
	");"
	"CREATE INDEX records_created ON records(created_at, seq);"
	"CREATE INDEX records_tier ON records(tier, created_at, seq);"
	"CREATE INDEX records_session ON records(session, created_at, seq);"
	"CREATE UNIQUE INDEX records_owner_key ON records(ifnull(owner, x''), key)"
	" WHERE key IS NOT NULL;"
	"CREATE INDEX records_grp ON records(grp);",

	/* 2: store-level settings (meta_get/meta_set). */
	"CREATE TABLE a2m_meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);",

	/*
	** 3: the server's own vector of a record's content (docs/EMBEDDINGS.md
	** §4), floats in native byte order, kept apart from the caller's.
	*/
	"ALTER TABLE records ADD COLUMN gen_embedding BLOB;",

	/*
	** 4: records per (tier, session), kept by triggers in the same
	** transaction as the records, so that counting a tier (describe, the
	** stack's capacity check on every write) reads a few rows instead of
	** every record of the tier. NULL is stored as x'' (as in
	** records_owner_key): a key column cannot be NULL, and no string
	** equals a BLOB. A count that reaches zero is deleted, so the table
	** holds only the buckets that exist.
	*/
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
	SQL_COUNTS_TRIGGERS,

	/*
	** 5: the records without any vector that hold some text, by tier in
	** seq order: those a server embedder may owe a vector
	** (docs/EMBEDDINGS.md §4.2), found without a pass over the store.
	** Partial, so a store whose records all have vectors keeps it empty.
	*/
	"CREATE INDEX records_unembedded ON records(tier, seq) WHERE " A2M_SQLITE_UNEMBEDDED ";",

	/*
	** 6: records_grp only over records that have a group. Most have none,
	** and every insert paid for an index entry under NULL that no query
	** reads (a group is selected by grp = ?, which implies NOT NULL):
	** batched remember 10 100–10 600 → 11 200–12 700 records/s.
	*/
	"DROP INDEX records_grp;"
	"CREATE INDEX records_grp ON records(grp) WHERE grp IS NOT NULL;",

	/*
	** 7: records_unembedded only where an embedder reads it: made at open
	** when the server has one (a2m_sqlite_unembedded_index), since every
	** insert pays for an entry (batched remember 15–30% slower with it).
	*/
	"DROP INDEX IF EXISTS records_unembedded;",

	/*
	** 8: records rebuilt without AUTOINCREMENT, and no trigger counting
	** inserts: both wrote a row per inserted record (sqlite_sequence,
	** a2m_counts), about a third of a batched remember's CPU. The engine
	** now gives out seqs itself and counts a transaction's inserts per
	** (tier, session), writing each once at COMMIT (sqlite_pending.c); the
	** mark that keeps a removed newest record's seq from coming back is
	** a2m_meta's 'seq', seeded here from sqlite_sequence (what
	** AUTOINCREMENT remembered) or the highest seq there is.
	**
	** The delete and update triggers stay: a remove or a move between
	** tiers is one record at a time, never a batch of hundreds, and a
	** trigger keeps those counts in the same statement as the record,
	** which no bookkeeping in C can get wrong.
	**
	** Every index on records is made again as steps 1, 6 and 7 left it;
	** records_unembedded, made at open and not by a step, is made again
	** by a2m_sqlite_migrate() when the file had it.
	**
	** records_session stays whole, not partial on session IS NOT NULL
	** like records_grp: "no session" is a query (by_session with no
	** session, from `where: {"session": null}`, sqlite_read.c), and
	** without a tier only this index serves it. Measured: a partial
	** index saves 4.7k of 29.2k instructions of the INSERT of a record
	** without a session (callgrind, bench remember --records 5000; about
	** 4% of a remember), and at 200 000 records, 1% of them without a
	** session, makes that query a scan of records_created: 56 ms against
	** 10 ms (Python's sqlite3, the same indexes). With a tier, both use
	** records_tier (84 and 71 ms), so the capacity check gains nothing.
	*/
	"CREATE TABLE records_new("
	" seq          INTEGER PRIMARY KEY,"
	" id           TEXT NOT NULL UNIQUE,"
	" content      TEXT NOT NULL,"
	" created_at   INTEGER NOT NULL,"
	" role         TEXT,"
	" metadata     TEXT,"
	" grp          TEXT,"
	" tier         TEXT,"
	" salience     REAL NOT NULL DEFAULT 0,"
	" accessed_at  INTEGER NOT NULL DEFAULT 0,"
	" access_count INTEGER NOT NULL DEFAULT 0,"
	" owner        TEXT,"
	" session      TEXT,"
	" key          TEXT,"
	" revision     INTEGER NOT NULL DEFAULT 0,"
	" embedding    BLOB,"
	" uri          TEXT,"
	" media_type   TEXT,"
	" gen_embedding BLOB"
	");"
	"INSERT INTO records_new(seq, id, content, created_at, role, metadata, grp,"
	" tier, salience, accessed_at, access_count, owner, session, key, revision,"
	" embedding, uri, media_type, gen_embedding)"
	" SELECT seq, id, content, created_at, role, metadata, grp, tier, salience,"
	" accessed_at, access_count, owner, session, key, revision, embedding, uri,"
	" media_type, gen_embedding FROM records ORDER BY seq;"
	/* WHERE true: an upsert's INSERT ... SELECT needs one to parse. */
	"INSERT INTO a2m_meta(name, value)"
	" SELECT 'seq', max(ifnull((SELECT seq FROM sqlite_sequence WHERE name = 'records'), 0),"
	"                   ifnull((SELECT max(seq) FROM records), 0)) WHERE true"
	" ON CONFLICT(name) DO UPDATE SET value = excluded.value;"
	"DROP TABLE records;"
	"ALTER TABLE records_new RENAME TO records;"
	"CREATE INDEX records_created ON records(created_at, seq);"
	"CREATE INDEX records_tier ON records(tier, created_at, seq);"
	"CREATE INDEX records_session ON records(session, created_at, seq);"
	"CREATE UNIQUE INDEX records_owner_key ON records(ifnull(owner, x''), key)"
	" WHERE key IS NOT NULL;"
	"CREATE INDEX records_grp ON records(grp) WHERE grp IS NOT NULL;"
	SQL_COUNTS_TRIGGERS,

	/*
	** 9: the extensions (docs/PROTOCOL.md, Extensions). A record's expiry
	** (x-expiry) and its content's fingerprint (x-dedup), each NULL when
	** unused and each with a partial index that holds only the records
	** that have one, so a store that uses neither pays one NULL column
	** apiece per row. The earlier revisions of keyed records (x-history),
	** by record id, newest found by the key's range; the trigger deletes
	** them with their record, in the same statement, whichever path
	** removed it (forget, a capacity drop, an expiry).
	*/
	"ALTER TABLE records ADD COLUMN expires_at INTEGER;"
	"ALTER TABLE records ADD COLUMN fp INTEGER;"
	"CREATE INDEX records_expiry ON records(expires_at) WHERE expires_at IS NOT NULL;"
	"CREATE INDEX records_fp ON records(fp) WHERE fp IS NOT NULL;"
	"CREATE TABLE a2m_history("
	" id            TEXT NOT NULL,"
	" revision      INTEGER NOT NULL,"
	" content       TEXT NOT NULL,"
	" role          TEXT,"
	" metadata      TEXT,"
	" owner         TEXT,"
	" created_at    INTEGER NOT NULL,"
	" superseded_at INTEGER NOT NULL,"
	" PRIMARY KEY(id, revision)) WITHOUT ROWID;"
	"CREATE TRIGGER a2m_history_forget AFTER DELETE ON records BEGIN"
	" DELETE FROM a2m_history WHERE id = old.id;"
	" END;",

	/*
	** 10: the counts' tail (sqlite_counts.c). a2m_counts holds the records
	** up to a2m_meta's row 'counted'; a commit of inserts only leaves its
	** counts out until a later one writes them, and every connection
	** counts the records above the mark from their rows. Every earlier
	** build counted at each commit: the mark starts at the last record.
	** A lone insert wrote a2m_counts' page for its count (~8 k of ~157 k
	** instructions, one page of 7.7). A build before this step would
	** read the counts without the tail; it refuses the file instead.
	*/
	"INSERT INTO a2m_meta(name, value) SELECT 'counted', ifnull(max(seq), 0) FROM records"
	" WHERE true ON CONFLICT(name) DO UPDATE SET value = excluded.value;",

	/*
	** 11: the update trigger fires for an update that sets session (every
	** column: sqlite.c's update), no longer for a tier move (tier and
	** salience: sqlite_narrow.c's move), whose -1 and +1 the transaction
	** keeps and writes at COMMIT, netted per bucket (sqlite_pending.c). A
	** lone write into full default tiers moves two records (working to
	** episodic, episodic to semantic): two trigger runs, ~31 k instructions
	** each of a ~44 k UPDATE, where the netted counts write two rows
	** (callgrind; docs/BENCHMARKS.md). Step 8 kept the trigger because a
	** batch never moves hundreds; a spilling lone write moves twice every
	** time. A build before this step would leave a move uncounted; it
	** refuses the file.
	*/
	"DROP TRIGGER a2m_counts_update;"
	"CREATE TRIGGER a2m_counts_update AFTER UPDATE OF session ON records"
	SQL_COUNTS_UPDATE_BODY,

	/*
	** 12: records_tier keyed by the tier's key (A2M_SQLITE_TIER_KEY), not
	** its name, so that the default tiers lie in the index as semantic,
	** episodic, working: a spill's leaving entry (a tier's oldest) and its
	** entering one (the next tier's newest) are neighbours. By name they
	** lay as episodic, semantic, working: a lone write into full default
	** tiers wrote 3.32 pages of records_tier a commit, the episodic range's
	** two ends and the semantic end apart (bench/wal-pages.py;
	** docs/BENCHMARKS.md). On an expression, not a column: a generated
	** column made every UPDATE compute it (a touch, recall's access count:
	** +0.8 k instructions of 10.5 k, callgrind), where an index on the
	** expression is computed only by a write that sets tier. A build
	** before this step refuses the file (a newer version); asking by name,
	** it would keep the index right but scan.
	*/
	"DROP INDEX records_tier;"
	"CREATE INDEX records_tier ON records((" A2M_SQLITE_TIER_KEY("tier") "), created_at, seq);",

	/*
	** 13: a2m_bound, one row that no record's salience exceeds, raised
	** in the transaction of every write that sets a salience above it and
	** never lowered (sqlite_bound.c; store.h, salience_bound). Text recall
	** caps the blend with it (stack/ranked.c). Seeded from the records,
	** at least 0 as the memory engine's starts. A REAL column, not a row
	** of a2m_meta: a TEXT value of a double rounds, and the bound must
	** never fall below a salience. A build before this step would write
	** salience without raising it; it refuses the file.
	*/
	"CREATE TABLE a2m_bound(id INTEGER PRIMARY KEY CHECK(id = 1), salience REAL NOT NULL);"
	"INSERT INTO a2m_bound(id, salience)"
	" SELECT 1, max(0, ifnull(max(salience), 0)) FROM records;",
};

/* 1 when the file has records_unembedded, else 0. */
#define SQL_HAS_UNEMBEDDED \
	"SELECT count(*) FROM sqlite_master" \
	" WHERE type = 'index' AND name = 'records_unembedded'"

/* The step that rebuilds records, dropping every index on it (step 8). */
#define REBUILD_STEP 8

/* The index of step 5, as a read-write open with an embedder keeps it. */
#define SQL_UNEMBEDDED_INDEX \
	"CREATE INDEX IF NOT EXISTS records_unembedded ON records(tier, seq)" \
	" WHERE " A2M_SQLITE_UNEMBEDDED


#define SCHEMA_VERSION ((sqlite3_int64)(sizeof migrations / sizeof migrations[0]))

/*
** The oldest version a read-only open reads as it is, unmigrated (it cannot
** migrate): step 12 changed only records_tier's key, and every scan by tier
** spells both the key and +tier (sqlite_read.c), right on either index (on
** a version-11 file the key matches no index: such a scan reads by another,
** slower, same rows). So `a2m check` and a --read-only server read a file a
** version-11 build left. Step 13 only adds a2m_bound, which a read-only
** open of an older file does without (sqlite_bound.c: the bound is then
** "unknown", and recall walks uncapped, as before). A step that changes
** what a read sees moves this up to its own version.
*/
#define READ_ONLY_SINCE 11

/* Runs fixed SQL that returns no values. */
int a2m_sqlite_exec(sqlstore *s, const char *sql, const char *op)
{
	char *msg = NULL;
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		a2m_store_fail(&s->base, "%s: %s", op, msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return A2M_INTERNAL_ERROR;
	}
	return 0;
}

/*
** Runs fixed SQL that yields one row and returns its first column: as an
** integer in *num when num is set, as text in buf (len bytes) when buf is.
*/
static int query_one(sqlstore *s, const char *sql, const char *op,
		     sqlite3_int64 *num, char *buf, size_t len)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return a2m_sqlite_db_fail(s, op);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		if (rc == SQLITE_DONE)
			a2m_store_fail(&s->base, "%s: no result", op);
		else
			a2m_sqlite_db_fail(s, op);
		sqlite3_finalize(st);
		return A2M_INTERNAL_ERROR;
	}
	if (num)
		*num = sqlite3_column_int64(st, 0);
	if (buf) {
		const unsigned char *t = sqlite3_column_text(st, 0);
		snprintf(buf, len, "%s", t ? (const char *)t : "");
	}
	sqlite3_finalize(st);
	return 0;
}

/* The smallest file a connection maps: one its page cache cannot hold. */
#ifdef A2M_TEST_HOOKS
static uint64_t mmap_from = (uint64_t)A2M_SQLITE_MMAP_FROM_KIB << 10;

void a2m_sqlite_mmap_from_for_tests(uint64_t bytes)
{
	mmap_from = bytes;
}
#else
#define mmap_from ((uint64_t)A2M_SQLITE_MMAP_FROM_KIB << 10)
#endif

/*
** Connection settings; PRAGMAs fail silently, so each is read back (but
** mmap_size, below). A read-only connection leaves the journal mode alone:
** changing it writes the file header, and the file is whatever its last
** writer made it.
*/
int a2m_sqlite_configure(sqlstore *s, const char *path, int synchronous_full)
{
	char mode[32];
	sqlite3_int64 v;

	if (sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS) != SQLITE_OK)
		return a2m_sqlite_db_fail(s, "busy_timeout");
	sqlite3_extended_result_codes(s->db, 1);

	if (!s->base.read_only) {
		if (query_one(s, "PRAGMA journal_mode=WAL", "journal_mode", NULL, mode,
			      sizeof mode))
			return A2M_INTERNAL_ERROR;
		/* A private in-memory database cannot do WAL; that is fine for it. */
		if (strcasecmp(mode, "wal") != 0 &&
		    !(strcmp(path, ":memory:") == 0 && strcasecmp(mode, "memory") == 0))
			return a2m_store_fail(&s->base, "journal_mode: got \"%s\", not WAL",
					      mode);
	}

	if (a2m_sqlite_exec(s, synchronous_full ? "PRAGMA synchronous=FULL"
					       : "PRAGMA synchronous=NORMAL", "synchronous") ||
	    query_one(s, "PRAGMA synchronous", "synchronous", &v, NULL, 0))
		return A2M_INTERNAL_ERROR;
	if (v != (synchronous_full ? 2 : 1))
		return a2m_store_fail(&s->base, "synchronous: got %lld", (long long)v);
	/* Each commit syncs the log: grow it ahead (sqlite_walvfs.c). */
	if (synchronous_full && !s->base.read_only)
		(void)a2m_sqlite_walvfs_durable(s->db);

	/*
	** Pages read through a map: at 1M records a recall read ~80 pages it
	** did not hold (its lists' overflow pages, its rows), each a pread and
	** a page of SQLite's cache touched for the first time (docs/BENCHMARKS.md,
	** "Reads through a memory map"). Only a file the page cache cannot
	** hold: in WAL mode a page got through the map is first looked up in
	** the log, which a cache hit is not (+2% of a recall's instructions at
	** 10k records, all of them cached). Not read back: SQLite caps the
	** size (0 in a build without maps), and an in-memory database answers
	** no row.
	*/
	struct stat st;
	if (s->mmap_bytes && stat(path, &st) == 0 && (uint64_t)st.st_size >= mmap_from) {
		char sql[64];
		snprintf(sql, sizeof sql, "PRAGMA mmap_size=%zu", s->mmap_bytes);
		if (a2m_sqlite_exec(s, sql, "mmap_size"))
			return A2M_INTERNAL_ERROR;
	}

	if (a2m_sqlite_exec(s, "PRAGMA foreign_keys=ON", "foreign_keys") ||
	    query_one(s, "PRAGMA foreign_keys", "foreign_keys", &v, NULL, 0))
		return A2M_INTERNAL_ERROR;
	if (v != 1)
		return a2m_store_fail(&s->base, "foreign_keys: could not be enabled");
	return 0;
}

/* Records that the file is now at version. Runs inside a2m_sqlite_migrate()'s transaction. */
static int set_version(sqlstore *s, sqlite3_int64 version)
{
	sqlite3_stmt *st = NULL;
	int rc = a2m_sqlite_exec(s, "DELETE FROM a2m_schema", "migrate");
	if (rc)
		return rc;
	if (sqlite3_prepare_v2(s->db, "INSERT INTO a2m_schema(version) VALUES(?)", -1,
			       &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, version) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		rc = a2m_sqlite_db_fail(s, "migrate");
	sqlite3_finalize(st);
	return rc;
}

/*
** Brings the file to SCHEMA_VERSION one step at a time. The version is read
** inside each step's BEGIN IMMEDIATE, so two processes opening a new file at
** once take turns instead of both creating the tables.
**
** A new file is made whole in one transaction: its steps, and the term
** index ix will use. Step by step, a kill between two commits of a first
** open left a file that was neither a store nor nothing (`a2m check` found
** its index tables missing; `a2m bench crash` once killed there).
*/
int a2m_sqlite_migrate(sqlstore *s, const a2m_indexer *ix)
{
	int fresh = 0;  /* this transaction makes a new file whole */
	for (;;) {
		sqlite3_int64 version;
		if (!fresh && a2m_sqlite_exec(s, "BEGIN IMMEDIATE", "migrate"))
			return A2M_INTERNAL_ERROR;
		if (a2m_sqlite_exec(s, "CREATE TABLE IF NOT EXISTS a2m_schema"
				    "(version INTEGER NOT NULL)", "migrate") ||
		    query_one(s, "SELECT ifnull(max(version), 0) FROM a2m_schema", "migrate",
			      &version, NULL, 0))
			goto fail;
		if (version < 0 || version > SCHEMA_VERSION) {
			a2m_store_fail(&s->base, "schema version %lld is not one this build "
				       "knows (it knows up to %lld)", (long long)version,
				       (long long)SCHEMA_VERSION);
			goto fail;
		}
		if (version == SCHEMA_VERSION) {
			if (fresh && ix && a2m_sqlite_index_create(s->db, &s->base, ix))
				goto fail;
			return a2m_sqlite_exec(s, "COMMIT", "migrate");
		}
		if (version == 0)
			fresh = 1;
		sqlite3_int64 unembedded = 0;
		if (version + 1 == REBUILD_STEP &&
		    query_one(s, SQL_HAS_UNEMBEDDED, "migrate", &unembedded, NULL, 0))
			goto fail;
		if (a2m_sqlite_exec(s, migrations[version], "migrate") ||
		    (unembedded && a2m_sqlite_exec(s, SQL_UNEMBEDDED_INDEX, "migrate")) ||
		    set_version(s, version + 1) ||
		    (!fresh && a2m_sqlite_exec(s, "COMMIT", "migrate")))
			goto fail;
	}
fail:
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return A2M_INTERNAL_ERROR;
}

/*
** Read-only stand-in for a2m_sqlite_migrate(): the file must already be an a2m store
** at a version this build reads as it is (READ_ONLY_SINCE on), since it cannot
** be brought to its own.
*/
int a2m_sqlite_check_schema(sqlstore *s, const char *path)
{
	sqlite3_int64 n, version;
	if (query_one(s, "SELECT count(*) FROM sqlite_master"
		      " WHERE type = 'table' AND name = 'a2m_schema'", "open", &n, NULL, 0))
		return A2M_INTERNAL_ERROR;
	if (n == 0)
		return a2m_store_fail(&s->base, "%s has no a2m schema: it is not an a2m "
				      "store (a read-only open creates nothing)", path);
	if (query_one(s, "SELECT ifnull(max(version), 0) FROM a2m_schema", "open",
		      &version, NULL, 0))
		return A2M_INTERNAL_ERROR;
	if (version > SCHEMA_VERSION || version < 0)
		return a2m_store_fail(&s->base, "schema version %lld is not one this build "
				      "knows (it knows up to %lld)", (long long)version,
				      (long long)SCHEMA_VERSION);
	if (version < READ_ONLY_SINCE)
		return a2m_store_fail(&s->base, "%s is at schema version %lld and this build "
				      "needs %lld: open it once read-write to migrate it",
				      path, (long long)version, (long long)SCHEMA_VERSION);
	return 0;
}

int a2m_sqlite_unembedded_index(sqlstore *s, int want)
{
	sqlite3_int64 n = 0;
	if (want && !s->base.read_only &&
	    a2m_sqlite_exec(s, SQL_UNEMBEDDED_INDEX, "unembedded index"))
		return A2M_INTERNAL_ERROR;
	if (query_one(s, SQL_HAS_UNEMBEDDED, "open", &n, NULL, 0))
		return A2M_INTERNAL_ERROR;
	s->unembedded_index = n > 0;
	return 0;
}
