/*
** sqlite.c — the SQLite storage engine: one database file (DESIGN §5).
**
** The file is opened in WAL mode with synchronous=FULL by default, so a
** write the caller acknowledges after commit() survives a crash or power
** loss; NORMAL trades the last commits on power loss for speed. Every value
** reaches SQLite through a bound parameter: the only SQL text built at run
** time is the WHERE clause of scan/count, assembled from fixed fragments.
**
** The schema is versioned in a2m_schema. migrations[] holds one step per
** version; opening a file applies the missing steps in order, each in its own
** transaction together with its version bump, and refuses a file written by
** a newer build rather than guess at columns it does not know.
**
** Read-only (a2m_sqlite_options.read_only) opens with SQLITE_OPEN_READONLY,
** creates and migrates nothing, and refuses every write with A2M_READ_ONLY
** before SQLite sees it, so the refusal is the same whatever the file's
** permissions. With a procedural tier, the engine notes each write that may
** change a mirrored file and hands the notes to mirror.c after the commit.
**
** Once an analyser is attached (index_attach), every write also keeps the
** term index (sqlite_index.c) in the same transaction: its postings are
** buffered and written just before COMMIT (a write outside a transaction
** gets its own BEGIN IMMEDIATE ... COMMIT), so a record and its postings are
** one change. Without an analyser, a write marks the index stale instead,
** and the next attach rebuilds it.
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_index.h"
#include "store/sqlite_vectors.h"
#include "store/store.h"

#define BUSY_TIMEOUT_MS 5000
/* WAL pages (4 KiB) between automatic checkpoints once an index is kept. */
#define A2M_SQLITE_CHECKPOINT_PAGES "10000"

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
	" END;",
};

#define SCHEMA_VERSION ((sqlite3_int64)(sizeof migrations / sizeof migrations[0]))

/* The columns every SELECT returns, in the order read_row() reads them. */
#define COLUMNS \
	"seq, id, content, created_at, role, metadata, grp, tier, salience," \
	" accessed_at, access_count, owner, session, key, revision, embedding," \
	" uri, media_type, gen_embedding"

/* ?1 is the id; ?2..?18 are the other fields, as bind_record() binds them. */
#define SQL_INSERT \
	"INSERT INTO records(id, content, created_at, role, metadata, grp, tier," \
	" salience, accessed_at, access_count, owner, session, key, revision," \
	" embedding, uri, media_type, gen_embedding)" \
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14," \
	" ?15, ?16, ?17, ?18)"
#define SQL_UPDATE \
	"UPDATE records SET content = ?2, created_at = ?3, role = ?4," \
	" metadata = ?5, grp = ?6, tier = ?7, salience = ?8, accessed_at = ?9," \
	" access_count = ?10, owner = ?11, session = ?12, key = ?13," \
	" revision = ?14, embedding = ?15, uri = ?16, media_type = ?17," \
	" gen_embedding = ?18" \
	" WHERE id = ?1"
/* Written with records_owner_key's own expression so that index serves it. */
#define SQL_GET_BY_KEY \
	"SELECT " COLUMNS " FROM records" \
	" WHERE ifnull(owner, x'') = ifnull(?1, x'') AND key = ?2"
#define SQL_META_SET \
	"INSERT INTO a2m_meta(name, value) VALUES(?1, ?2)" \
	" ON CONFLICT(name) DO UPDATE SET value = excluded.value"
/*
** count() by tier, session or both, from a2m_counts (migration 4): ?1 the
** tier, ?2 the session, NULL for "no session" (stored as x'').
*/
#define SQL_COUNT_TIER \
	"SELECT ifnull(sum(n), 0) FROM a2m_counts WHERE tier = ?1"
#define SQL_COUNT_BUCKET \
	"SELECT ifnull(sum(n), 0) FROM a2m_counts" \
	" WHERE tier = ?1 AND session = ifnull(?2, x'')"
#define SQL_COUNT_SESSION \
	"SELECT ifnull(sum(n), 0) FROM a2m_counts WHERE session = ifnull(?2, x'')"
/* What a record's mirror file depends on, when it is in the mirrored tier. */
#define SQL_MIRROR_OLD \
	"SELECT key, content, owner, created_at, revision FROM records" \
	" WHERE id = ?1 AND tier = ?2"

typedef struct sqlstore {
	a2m_store     base;
	sqlite3      *db;
	sqlite3_stmt *begin;
	sqlite3_stmt *commit;
	sqlite3_stmt *rollback;
	sqlite3_stmt *get;
	sqlite3_stmt *get_by_key;
	sqlite3_stmt *insert;
	sqlite3_stmt *update;
	sqlite3_stmt *remove;
	sqlite3_stmt *meta_get;
	sqlite3_stmt *meta_set;
	sqlite3_stmt *meta_del;
	sqlite3_stmt *mirror_old;  /* only with a mirror */
	a2m_mirror   *mirror;      /* NULL: no procedural mirror */
	sqlite3_stmt *by_seq;
	sqlite3_stmt *touch;       /* prepared at the first touch */
	sqlite3_stmt *stale;       /* marks the index stale (no analyser) */
	sqlite3_stmt *count_tier;  /* SQL_COUNT_TIER, _BUCKET, _SESSION */
	sqlite3_stmt *count_bucket;
	sqlite3_stmt *count_session;
	a2m_sqlite_index *index;   /* NULL until index_attach, or when unusable */
	a2m_sqlite_vectors *vectors; /* vector rows, cached at the first search */
	int           synchronous_full; /* the configured level */
	int           relaxed;     /* this transaction commits with synchronous=NORMAL */
} sqlstore;

/* ---- helpers ----------------------------------------------------------- */

/* Reports the connection's last error, prefixed with what was being done. */
static int db_fail(sqlstore *s, const char *op)
{
	return a2m_store_fail(&s->base, "%s: %s", op, sqlite3_errmsg(s->db));
}

/*
** Readies a cached statement for its next use. Clearing the bindings matters:
** values are bound SQLITE_STATIC (no copy of multi-MB content), so they must
** not stay attached to the statement once the caller's record is gone.
*/
static void done(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/* Runs fixed SQL that returns no values. */
static int exec(sqlstore *s, const char *sql, const char *op)
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
		return db_fail(s, op);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		if (rc == SQLITE_DONE)
			a2m_store_fail(&s->base, "%s: no result", op);
		else
			db_fail(s, op);
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

static int bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (!v)
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_text64(st, i, v, strlen(v), SQLITE_STATIC, SQLITE_UTF8);
}

/* Binds ?1 = id and ?2..?18 = the other fields (SQL_INSERT / SQL_UPDATE). */
static int bind_record(sqlite3_stmt *st, const a2m_record *rec)
{
	int rc = SQLITE_OK;
#define B(call) do { if (rc == SQLITE_OK) rc = (call); } while (0)
	B(bind_text(st, 1, rec->id));
	B(bind_text(st, 2, rec->content));
	B(sqlite3_bind_int64(st, 3, rec->created_at));
	B(bind_text(st, 4, rec->role));
	B(bind_text(st, 5, rec->metadata));
	B(bind_text(st, 6, rec->group));
	B(bind_text(st, 7, rec->tier));
	B(sqlite3_bind_double(st, 8, rec->salience));
	B(sqlite3_bind_int64(st, 9, rec->accessed_at));
	B(sqlite3_bind_int64(st, 10, rec->access_count));
	B(bind_text(st, 11, rec->owner));
	B(bind_text(st, 12, rec->session));
	B(bind_text(st, 13, rec->key));
	B(sqlite3_bind_int64(st, 14, rec->revision));
	/* The doubles as they lie in memory: native byte order, dims = bytes / 8. */
	if (rec->embedding && rec->dims)
		B(sqlite3_bind_blob64(st, 15, rec->embedding,
				      (sqlite3_uint64)rec->dims * sizeof(double),
				      SQLITE_STATIC));
	else
		B(sqlite3_bind_null(st, 15));
	B(bind_text(st, 16, rec->uri));
	B(bind_text(st, 17, rec->media_type));
	if (rec->gen_embedding && rec->gen_dims)
		B(sqlite3_bind_blob64(st, 18, rec->gen_embedding,
				      (sqlite3_uint64)rec->gen_dims * sizeof(float),
				      SQLITE_STATIC));
	else
		B(sqlite3_bind_null(st, 18));
#undef B
	return rc;
}

/* Copies text column col into *out (NULL for SQL NULL). */
static int column_text(sqlstore *s, sqlite3_stmt *st, int col, char **out)
{
	*out = NULL;
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return 0;
	const unsigned char *t = sqlite3_column_text(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col);
	if (!t)
		return a2m_store_fail(&s->base, "read: out of memory");
	*out = malloc(n + 1);
	if (!*out)
		return a2m_store_fail(&s->base, "read: out of memory");
	memcpy(*out, t, n);
	(*out)[n] = '\0';
	return 0;
}

static int column_embedding(sqlstore *s, sqlite3_stmt *st, int col, a2m_record *rec)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return 0;
	const void *b = sqlite3_column_blob(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col);
	if (n == 0)
		return 0;
	if (!b)
		return a2m_store_fail(&s->base, "read: out of memory");
	if (n % sizeof(double) != 0)
		return a2m_store_fail(&s->base, "read: embedding of %zu bytes is not a "
				      "whole number of doubles", n);
	rec->embedding = malloc(n);
	if (!rec->embedding)
		return a2m_store_fail(&s->base, "read: out of memory");
	memcpy(rec->embedding, b, n);
	rec->dims = n / sizeof(double);
	return 0;
}

/* The server's own vector (column col): floats, native byte order. */
static int column_gen_embedding(sqlstore *s, sqlite3_stmt *st, int col, a2m_record *rec)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return 0;
	const void *b = sqlite3_column_blob(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col);
	if (n == 0 || n % sizeof(float) != 0)
		return 0; /* derived data: an odd blob is simply no vector */
	if (!b)
		return a2m_store_fail(&s->base, "read: out of memory");
	rec->gen_embedding = malloc(n);
	if (!rec->gen_embedding)
		return a2m_store_fail(&s->base, "read: out of memory");
	memcpy(rec->gen_embedding, b, n);
	rec->gen_dims = n / sizeof(float);
	return 0;
}

/* Fills the zeroed rec from the current row (COLUMNS order). Clears it on failure. */
static int read_row(sqlstore *s, sqlite3_stmt *st, a2m_record *rec)
{
	rec->seq = sqlite3_column_int64(st, 0);
	rec->created_at = sqlite3_column_int64(st, 3);
	rec->salience = sqlite3_column_double(st, 8);
	rec->accessed_at = sqlite3_column_int64(st, 9);
	rec->access_count = sqlite3_column_int64(st, 10);
	rec->revision = sqlite3_column_int64(st, 14);
	if (column_text(s, st, 1, &rec->id) || column_text(s, st, 2, &rec->content) ||
	    column_text(s, st, 4, &rec->role) || column_text(s, st, 5, &rec->metadata) ||
	    column_text(s, st, 6, &rec->group) || column_text(s, st, 7, &rec->tier) ||
	    column_text(s, st, 11, &rec->owner) || column_text(s, st, 12, &rec->session) ||
	    column_text(s, st, 13, &rec->key) || column_embedding(s, st, 15, rec) ||
	    column_text(s, st, 16, &rec->uri) || column_text(s, st, 17, &rec->media_type) ||
	    column_gen_embedding(s, st, 18, rec)) {
		a2m_record_clear(rec);
		return A2M_INTERNAL_ERROR;
	}
	return 0;
}

/* Steps a bound single-row lookup and hands out the row, or NULL for none. */
static int fetch_one(sqlstore *s, sqlite3_stmt *st, const char *op, a2m_record **out)
{
	a2m_record *rec = NULL;
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		rc = 0;
		goto out;
	}
	if (rc != SQLITE_ROW) {
		rc = db_fail(s, op);
		goto out;
	}
	rec = a2m_record_new();
	if (!rec) {
		rc = a2m_store_fail(&s->base, "%s: out of memory", op);
		goto out;
	}
	rc = read_row(s, st, rec);
	if (rc) {
		free(rec);
		rec = NULL;
	}
out:
	done(st);
	*out = rec;
	return rc;
}

/*
** What a store refuses whatever the engine (memory.c checks the same): the
** NOT NULL columns, and a NaN salience, which SQLite would turn into NULL.
*/
static int check_record(sqlstore *s, const a2m_record *rec, const char *op)
{
	if (!rec || !rec->id || !rec->content) {
		a2m_store_fail(&s->base, "%s: a record needs an id and content", op);
		return A2M_INVALID_PARAMS;
	}
	if (isnan(rec->salience)) {
		a2m_store_fail(&s->base, "%s: salience is NaN", op);
		return A2M_INVALID_PARAMS;
	}
	return 0;
}

/* ---- the procedural mirror --------------------------------------------- */

/*
** Brings the mirror up to date after a commit. The commit has happened, so
** a failure here is not the caller's failure: it is kept in errmsg and
** counted (store.h, a2m_sqlite_options), and the next commit reconciles.
*/
static void mirror_apply(sqlstore *s)
{
	char err[sizeof s->base.errmsg];
	if (!s->mirror)
		return;
	if (a2m_mirror_apply(s->mirror, &s->base, err, sizeof err) != 0) {
		snprintf(s->base.errmsg, sizeof s->base.errmsg, "%s", err);
		s->base.mirror_failures++;
	}
}

/* After a successful write: applies it at once if it committed on its own. */
static void after_write(sqlstore *s)
{
	if (s->mirror && sqlite3_get_autocommit(s->db))
		mirror_apply(s);
}

static int in_mirror_tier(const sqlstore *s, const char *tier)
{
	return tier && strcmp(tier, a2m_mirror_tier(s->mirror)) == 0;
}

static int same_text(const unsigned char *a, const char *b)
{
	if (!a || !b)
		return !a && !b;
	return strcmp((const char *)a, b) == 0;
}

/*
** Before an update or remove of id: whether the record is in the mirrored
** tier (*was_in), its file name then (*old_name, malloc'd, NULL when it is
** not), and whether rec (NULL for a remove) would leave that file's bytes
** unchanged (*same), which lets the frequent bookkeeping updates (access
** counts) skip the mirror entirely. The name is taken while the row is at
** hand: its text must not be read after the write.
*/
static int mirror_before(sqlstore *s, const char *id, const a2m_record *rec,
			 int *was_in, int *same, char **old_name)
{
	int rc = 0;
	*was_in = *same = 0;
	*old_name = NULL;
	if (bind_text(s->mirror_old, 1, id) != SQLITE_OK ||
	    bind_text(s->mirror_old, 2, a2m_mirror_tier(s->mirror)) != SQLITE_OK) {
		rc = db_fail(s, "mirror");
		goto out;
	}
	int step = sqlite3_step(s->mirror_old);
	if (step == SQLITE_DONE)
		goto out;
	if (step != SQLITE_ROW) {
		rc = db_fail(s, "mirror");
		goto out;
	}
	const unsigned char *key = sqlite3_column_text(s->mirror_old, 0);
	const unsigned char *content = sqlite3_column_text(s->mirror_old, 1);
	const unsigned char *owner = sqlite3_column_text(s->mirror_old, 2);
	a2m_record old;
	memset(&old, 0, sizeof old);
	old.id = (char *)id;
	old.key = (char *)key;
	old.content = (char *)content;
	*old_name = a2m_mirror_file_name(&old);
	if (!*old_name || !content) {
		free(*old_name);
		*old_name = NULL;
		rc = a2m_store_fail(&s->base, "mirror: out of memory");
		goto out;
	}
	*was_in = 1;
	*same = rec && same_text(key, rec->key) && same_text(content, rec->content) &&
		same_text(owner, rec->owner) &&
		sqlite3_column_int64(s->mirror_old, 3) == rec->created_at &&
		sqlite3_column_int64(s->mirror_old, 4) == rec->revision;
out:
	done(s->mirror_old);
	return rc;
}

/* Every write checks this first: a read-only store refuses before SQLite sees it. */
static int refuse_read_only(sqlstore *s, const char *op)
{
	if (!s->base.read_only)
		return 0;
	a2m_store_fail(&s->base, "%s: the store is read-only", op);
	return A2M_READ_ONLY;
}

/* ---- transactions ------------------------------------------------------ */

/*
** BEGIN IMMEDIATE takes the write lock up front (waiting up to the busy
** timeout). A deferred BEGIN would take it at the first write, and if another
** connection had written since our first read, that write would fail with
** SQLITE_BUSY half way through the batch, which busy_timeout cannot cure.
*/
static int sql_begin(a2m_store *base)
{
	sqlstore *s = (sqlstore *)base;
	int rc = sqlite3_step(s->begin);
	rc = rc == SQLITE_DONE ? 0 : db_fail(s, "begin");
	done(s->begin);
	if (!rc)
		a2m_sqlite_vectors_begin(s->vectors);
	return rc;
}

/* Puts synchronous back to the configured level after a relaxed transaction. */
static void end_relaxed(sqlstore *s)
{
	if (!s->relaxed)
		return;
	s->relaxed = 0;
	if (sqlite3_exec(s->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL) != SQLITE_OK)
		db_fail(s, "synchronous");
}

/*
** In WAL mode a commit under synchronous=NORMAL skips the fsync of the log;
** the frames are still in order, so the next durable commit makes them
** durable too, and a crash of the process loses nothing. Only a power loss
** can take the bookkeeping of the last moments, never acknowledged data.
*/
static int sql_begin_relaxed(a2m_store *base)
{
	sqlstore *s = (sqlstore *)base;
	if (s->synchronous_full && !s->base.read_only) {
		if (sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK)
			return db_fail(s, "synchronous");
		s->relaxed = 1;
	}
	int rc = sql_begin(base);
	if (rc)
		end_relaxed(s);
	return rc;
}

/*
** A failed COMMIT is rolled back here if SQLite left the transaction open,
** so the outcome is always definite: success, or nothing written.
*/
static int sql_commit(a2m_store *base)
{
	sqlstore *s = (sqlstore *)base;
	int rc = s->index && !sqlite3_get_autocommit(s->db)
		? a2m_sqlite_index_flush(s->index, base) : 0;
	if (!rc) {
		rc = sqlite3_step(s->commit);
		rc = rc == SQLITE_DONE ? 0 : db_fail(s, "commit");
		done(s->commit);
	}
	if (rc && s->index)
		a2m_sqlite_index_discard(s->index);
	if (rc && !sqlite3_get_autocommit(s->db)) {
		sqlite3_step(s->rollback);
		done(s->rollback);
	}
	if (rc)
		a2m_sqlite_vectors_rollback(s->vectors);
	else
		a2m_sqlite_vectors_commit(s->vectors);
	if (rc)
		a2m_mirror_discard(s->mirror);
	else
		mirror_apply(s);
	end_relaxed(s);
	return rc;
}

/* A no-op when no transaction is open (for instance after a failed commit). */
static void sql_rollback(a2m_store *base)
{
	sqlstore *s = (sqlstore *)base;
	a2m_mirror_discard(s->mirror);
	a2m_sqlite_vectors_rollback(s->vectors);
	if (s->index)
		a2m_sqlite_index_discard(s->index);
	if (!sqlite3_get_autocommit(s->db)) {
		if (sqlite3_step(s->rollback) != SQLITE_DONE)
			db_fail(s, "rollback");
		done(s->rollback);
	}
	end_relaxed(s);
}

/* ---- reads ------------------------------------------------------------- */

static int sql_get(a2m_store *base, const char *id, a2m_record **out)
{
	sqlstore *s = (sqlstore *)base;
	*out = NULL;
	if (!id)
		return 0;
	if (bind_text(s->get, 1, id) != SQLITE_OK) {
		int rc = db_fail(s, "get");
		done(s->get);
		return rc;
	}
	return fetch_one(s, s->get, "get", out);
}

static int sql_get_by_key(a2m_store *base, const char *owner, const char *key,
			  a2m_record **out)
{
	sqlstore *s = (sqlstore *)base;
	*out = NULL;
	if (!key)
		return 0;
	if (bind_text(s->get_by_key, 1, owner) != SQLITE_OK ||
	    bind_text(s->get_by_key, 2, key) != SQLITE_OK) {
		int rc = db_fail(s, "get_by_key");
		done(s->get_by_key);
		return rc;
	}
	return fetch_one(s, s->get_by_key, "get_by_key", out);
}

/*
** The WHERE clause for an a2m_query: fixed fragments with ? placeholders,
** and the values to bind to them in order.
*/
#define MAX_BINDS 6

typedef struct filter {
	char        sql[1024];
	size_t      used;
	int         overflow;  /* sql[] was too small: never run a truncated query */
	int         nterms;
	const char *text[MAX_BINDS];
	size_t      len[MAX_BINDS];
	int         nbinds;
	char       *upper;     /* owned: key_prefix's upper bound */
} filter;

/*
** Appends fixed SQL. The fragments are literals totalling well under 1024
** bytes, but a cut-off WHERE clause could still parse and select too much,
** so running out of room is an error rather than a truncation.
*/
static void put(filter *f, const char *sql)
{
	size_t n = strlen(sql);
	if (f->used + n >= sizeof f->sql) {
		f->overflow = 1;
		return;
	}
	memcpy(f->sql + f->used, sql, n + 1);
	f->used += n;
}

static void term(filter *f, const char *sql, const char *value, size_t len)
{
	put(f, f->nterms++ ? " AND " : " WHERE ");
	put(f, sql);
	if (value) {
		f->text[f->nbinds] = value;
		f->len[f->nbinds] = len;
		f->nbinds++;
	}
}

/*
** The least string greater than every string that starts with prefix, in
** SQLite's BINARY (memcmp) order: drop trailing 0xFF bytes, then increment
** the last byte. Sets *upper NULL when nothing is left (the prefix is all
** 0xFF bytes), because then `key >= prefix` alone already implies the prefix.
*/
static int prefix_upper(const char *prefix, char **upper, size_t *len)
{
	size_t n = strlen(prefix);
	*upper = NULL;
	*len = 0;
	while (n > 0 && (unsigned char)prefix[n - 1] == 0xFF)
		n--;
	if (n == 0)
		return 0;
	char *u = malloc(n + 1);
	if (!u)
		return -1;
	memcpy(u, prefix, n);
	u[n - 1] = (char)((unsigned char)u[n - 1] + 1);
	u[n] = '\0';
	*upper = u;
	*len = n;
	return 0;
}

/*
** Builds head + WHERE for q. key_prefix becomes the range
** `key >= prefix AND key < upper`: exact for any bytes ('%', '_', '\' and
** multi-byte UTF-8 alike, where LIKE would treat the first two as wildcards
** and fold ASCII case, and substr() would count characters, not bytes), it
** agrees with a2m_query_matches()'s strncmp, and with by_owner it is a range
** on records_owner_key instead of a test applied to every row.
*/
static int filter_build(sqlstore *s, const a2m_query *q, const char *head, filter *f)
{
	memset(f, 0, sizeof *f);
	put(f, head);
	if (q->tier)
		term(f, "tier = ?", q->tier, strlen(q->tier));
	/*
	** by_owner is spelled with records_owner_key's expression (same meaning:
	** x'' equals no owner string), so owner + key_prefix is an index range.
	*/
	if (q->by_owner) {
		if (q->owner)
			term(f, "ifnull(owner, x'') = ?", q->owner, strlen(q->owner));
		else
			term(f, "ifnull(owner, x'') = x''", NULL, 0);
	}
	if (q->by_session) {
		if (q->session)
			term(f, "session = ?", q->session, strlen(q->session));
		else
			term(f, "session IS NULL", NULL, 0);
	}
	if (q->group)
		term(f, "grp = ?", q->group, strlen(q->group));
	if (q->key_prefix) {
		size_t ulen;
		if (prefix_upper(q->key_prefix, &f->upper, &ulen) != 0)
			return a2m_store_fail(&s->base, "scan: out of memory");
		term(f, "key >= ?", q->key_prefix, strlen(q->key_prefix));
		if (f->upper)
			term(f, "key < ?", f->upper, ulen);
	}
	return 0;
}

/* Prepares f's SQL and binds its values. The caller finalizes *st. */
static int filter_prepare(sqlstore *s, filter *f, const char *op, sqlite3_stmt **st)
{
	*st = NULL;
	if (f->overflow)
		return a2m_store_fail(&s->base, "%s: query text too long", op);
	if (sqlite3_prepare_v2(s->db, f->sql, (int)f->used, st, NULL) != SQLITE_OK)
		return db_fail(s, op);
	for (int i = 0; i < f->nbinds; i++) {
		if (sqlite3_bind_text64(*st, i + 1, f->text[i], f->len[i], SQLITE_STATIC,
					SQLITE_UTF8) != SQLITE_OK)
			return db_fail(s, op);
	}
	return 0;
}

static int sql_scan(a2m_store *base, const a2m_query *q, a2m_record_visit visit,
		    void *ctx)
{
	sqlstore *s = (sqlstore *)base;
	sqlite3_stmt *st = NULL;
	filter f;
	a2m_record rec;
	int rc;

	memset(&rec, 0, sizeof rec);
	rc = filter_build(s, q, "SELECT " COLUMNS " FROM records", &f);
	if (rc)
		goto out;
	put(&f, q->descending ? " ORDER BY created_at DESC, seq DESC"
			      : " ORDER BY created_at, seq");
	rc = filter_prepare(s, &f, "scan", &st);
	if (rc)
		goto out;
	for (;;) {
		int step = sqlite3_step(st);
		if (step == SQLITE_DONE)
			break;
		if (step != SQLITE_ROW) {
			rc = db_fail(s, "scan");
			break;
		}
		rc = read_row(s, st, &rec);
		if (rc)
			break;
		int r = visit(&rec, ctx);
		a2m_record_clear(&rec);
		if (r != 0) {
			rc = r < 0 ? r : 0;
			break;
		}
	}
out:
	sqlite3_finalize(st);
	free(f.upper);
	return rc;
}

/* count() by tier and/or session: a few rows of a2m_counts. */
static int count_kept(sqlstore *s, const a2m_query *q, int64_t *out)
{
	sqlite3_stmt *st = !q->tier ? s->count_session
			 : q->by_session ? s->count_bucket : s->count_tier;
	int rc = 0;
	if ((q->tier && bind_text(st, 1, q->tier) != SQLITE_OK) ||
	    (q->by_session && bind_text(st, 2, q->session) != SQLITE_OK) ||
	    sqlite3_step(st) != SQLITE_ROW)
		rc = db_fail(s, "count");
	else
		*out = sqlite3_column_int64(st, 0);
	done(st);
	return rc;
}

static int sql_count(a2m_store *base, const a2m_query *q, int64_t *out)
{
	sqlstore *s = (sqlstore *)base;
	sqlite3_stmt *st = NULL;
	filter f;
	int rc;

	*out = 0;
	if ((q->tier || q->by_session) && !q->by_owner && !q->key_prefix && !q->group)
		return count_kept(s, q, out);
	rc = filter_build(s, q, "SELECT count(*) FROM records", &f);
	if (rc)
		goto out;
	rc = filter_prepare(s, &f, "count", &st);
	if (rc)
		goto out;
	if (sqlite3_step(st) != SQLITE_ROW) {
		rc = db_fail(s, "count");
		goto out;
	}
	*out = sqlite3_column_int64(st, 0);
out:
	sqlite3_finalize(st);
	free(f.upper);
	return rc;
}

/* ---- one write with its postings ----------------------------------------- */

/*
** A write and its postings must land together. Inside the caller's
** transaction the postings are buffered (sqlite_index.c), room for them
** reserved before the record statement runs; if the write fails, the buffer
** goes back to where it was, and the statement itself was undone by SQLite.
** Outside a transaction the write gets its own BEGIN IMMEDIATE ... COMMIT,
** with the buffer written just before the COMMIT.
*/
typedef struct write_ctx {
	int                    active;
	int                    outer;   /* we opened the transaction */
	a2m_sqlite_index_point mark;
} write_ctx;

static int step_once(sqlstore *s, sqlite3_stmt *st, const char *op)
{
	int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(s, op);
	done(st);
	return rc;
}

/* Opens a write whose postings are a and b (either may be NULL). */
static int write_open(sqlstore *s, write_ctx *w, const a2m_doc_terms *a,
		      const a2m_doc_terms *b)
{
	memset(w, 0, sizeof *w);
	if (!s->index)
		return 0;
	if (a2m_sqlite_index_reserve(s->index, a, b) != 0)
		return a2m_store_fail(&s->base, "index: out of memory");
	w->outer = sqlite3_get_autocommit(s->db);
	a2m_sqlite_index_mark(s->index, &w->mark);
	int rc = w->outer ? step_once(s, s->begin, "write") : 0;
	w->active = rc == 0;
	return rc;
}

/* Ends the write with outcome rc: keeps it when 0, undoes it otherwise. */
static int write_close(sqlstore *s, write_ctx *w, int rc)
{
	if (!w->active)
		return rc;
	if (w->outer) {
		if (!rc && !(rc = a2m_sqlite_index_flush(s->index, &s->base)))
			rc = step_once(s, s->commit, "commit");
		if (rc && !sqlite3_get_autocommit(s->db)) {
			sqlite3_step(s->rollback);
			done(s->rollback);
		}
		if (rc)
			a2m_sqlite_index_discard(s->index);
	} else if (rc) {
		a2m_sqlite_index_undo(s->index, &w->mark);
	}
	return rc;
}

/*
** Before a write without an analyser: the index will no longer match the
** records, so forget which analyser built it; the next attach rebuilds.
*/
static int mark_stale(sqlstore *s)
{
	return s->index ? 0 : step_once(s, s->stale, "index");
}

/* ---- writes ------------------------------------------------------------ */

/*
** A duplicate id or (owner, key) trips a UNIQUE constraint; the statement is
** then undone by SQLite, so nothing changes, and the caller hears
** A2M_INVALID_PARAMS exactly as from memory.c.
*/
static int sql_insert(a2m_store *base, a2m_record *rec)
{
	sqlstore *s = (sqlstore *)base;
	a2m_doc_terms dt;
	write_ctx w;
	memset(&dt, 0, sizeof dt);
	int rc = refuse_read_only(s, "insert");
	if (!rc)
		rc = check_record(s, rec, "insert");
	if (!rc && s->index)
		rc = a2m_sqlite_index_analyze(s->index, base, rec->content, &dt);
	if (!rc)
		rc = mark_stale(s);
	if (!rc)
		rc = write_open(s, &w, &dt, NULL);
	if (rc) {
		a2m_sqlite_index_release(s->index, &dt);
		return rc;
	}
	if (bind_record(s->insert, rec) != SQLITE_OK) {
		rc = db_fail(s, "insert");
		goto out;
	}
	int step = sqlite3_step(s->insert);
	if (step == SQLITE_DONE) {
		rec->seq = sqlite3_last_insert_rowid(s->db);
	} else if ((step & 0xff) == SQLITE_CONSTRAINT) {
		db_fail(s, "insert");
		rc = A2M_INVALID_PARAMS;
	} else {
		rc = db_fail(s, "insert");
	}
out:
	done(s->insert);
	if (rc == 0 && s->index)
		a2m_sqlite_index_apply(s->index, rec->seq, &dt, 1);
	rc = write_close(s, &w, rc);
	a2m_sqlite_index_release(s->index, &dt);
	if (rc == 0)
		a2m_sqlite_vectors_put(s->vectors, rec, rec->seq);
	if (rc == 0 && s->mirror && in_mirror_tier(s, rec->tier)) {
		a2m_mirror_note(s->mirror, rec->id, NULL);
		after_write(s);
	}
	return rc;
}

static int sql_update(a2m_store *base, const a2m_record *rec)
{
	sqlstore *s = (sqlstore *)base;
	char *old_name = NULL;
	int was_in = 0, same = 0, found = 0, changed = 0;
	int64_t seq = 0;
	a2m_doc_terms old_dt, new_dt;
	write_ctx w;
	memset(&old_dt, 0, sizeof old_dt);
	memset(&new_dt, 0, sizeof new_dt);
	int rc = refuse_read_only(s, "update");
	if (!rc)
		rc = check_record(s, rec, "update");
	if (!rc && s->mirror)
		rc = mirror_before(s, rec->id, rec, &was_in, &same, &old_name);
	/* Only a change of content re-indexes: touches and tier moves do not. */
	if (!rc && s->index)
		rc = a2m_sqlite_index_old_terms(s->index, base, rec->id, rec->content, &seq,
						&old_dt, &found, &changed);
	if (!rc && changed)
		rc = a2m_sqlite_index_analyze(s->index, base, rec->content, &new_dt);
	if (!rc)
		rc = mark_stale(s);
	if (!rc)
		rc = write_open(s, &w, &old_dt, &new_dt);
	if (rc) {
		a2m_sqlite_index_release(s->index, &old_dt);
		a2m_sqlite_index_release(s->index, &new_dt);
		free(old_name);
		return rc;
	}
	if (bind_record(s->update, rec) != SQLITE_OK) {
		rc = db_fail(s, "update");
		goto out;
	}
	int step = sqlite3_step(s->update);
	if (step == SQLITE_DONE) {
		if (sqlite3_changes(s->db) == 0) {
			a2m_store_fail(base, "update: no record \"%s\"", rec->id);
			rc = A2M_UNKNOWN_RECORD;
		}
	} else if ((step & 0xff) == SQLITE_CONSTRAINT) {
		db_fail(s, "update");
		rc = A2M_INVALID_PARAMS;
	} else {
		rc = db_fail(s, "update");
	}
out:
	done(s->update);
	if (rc == 0 && changed) {
		a2m_sqlite_index_apply(s->index, seq, &old_dt, -1);
		a2m_sqlite_index_apply(s->index, seq, &new_dt, 1);
	}
	rc = write_close(s, &w, rc);
	a2m_sqlite_index_release(s->index, &old_dt);
	a2m_sqlite_index_release(s->index, &new_dt);
	if (rc == 0)
		a2m_sqlite_vectors_put(s->vectors, rec, found ? seq : 0);
	if (rc == 0 && s->mirror) {
		int now_in = in_mirror_tier(s, rec->tier);
		if ((was_in || now_in) && !(was_in && now_in && same)) {
			a2m_mirror_note(s->mirror, rec->id, old_name);
			after_write(s);
		}
	}
	free(old_name);
	return rc;
}

static int sql_remove(a2m_store *base, const char *id, int *removed)
{
	sqlstore *s = (sqlstore *)base;
	char *old_name = NULL;
	int was_in = 0, same = 0, found = 0, changed = 0;
	int64_t seq = 0;
	a2m_doc_terms old_dt;
	write_ctx w;
	memset(&old_dt, 0, sizeof old_dt);
	int rc = refuse_read_only(s, "remove");
	*removed = 0;
	if (rc || !id)
		return rc;
	if (s->mirror && (rc = mirror_before(s, id, NULL, &was_in, &same, &old_name)))
		return rc;
	if (s->index)
		rc = a2m_sqlite_index_old_terms(s->index, base, id, NULL, &seq, &old_dt, &found,
						&changed);
	if (!rc)
		rc = mark_stale(s);
	if (!rc)
		rc = write_open(s, &w, &old_dt, NULL);
	if (rc) {
		a2m_sqlite_index_release(s->index, &old_dt);
		free(old_name);
		return rc;
	}
	int64_t vseq = a2m_sqlite_vectors_seq(s->vectors, id);
	if (bind_text(s->remove, 1, id) != SQLITE_OK ||
	    sqlite3_step(s->remove) != SQLITE_DONE)
		rc = db_fail(s, "remove");
	else
		*removed = sqlite3_changes(s->db) > 0;
	done(s->remove);
	if (rc == 0 && *removed && found)
		a2m_sqlite_index_apply(s->index, seq, &old_dt, -1);
	rc = write_close(s, &w, rc);
	a2m_sqlite_index_release(s->index, &old_dt);
	if (rc)
		*removed = 0;
	if (*removed)
		a2m_sqlite_vectors_remove(s->vectors, vseq);
	if (rc == 0 && *removed && was_in) {
		a2m_mirror_note(s->mirror, id, old_name);
		after_write(s);
	}
	free(old_name);
	return rc;
}

/* ---- store-level settings --------------------------------------------- */

static int sql_meta_get(a2m_store *base, const char *name, char **value)
{
	sqlstore *s = (sqlstore *)base;
	int rc = 0;
	*value = NULL;
	if (!name) {
		a2m_store_fail(base, "meta_get: no name");
		return A2M_INVALID_PARAMS;
	}
	if (bind_text(s->meta_get, 1, name) != SQLITE_OK) {
		rc = db_fail(s, "meta_get");
		goto out;
	}
	int step = sqlite3_step(s->meta_get);
	if (step == SQLITE_ROW)
		rc = column_text(s, s->meta_get, 0, value);
	else if (step != SQLITE_DONE)
		rc = db_fail(s, "meta_get");
out:
	done(s->meta_get);
	return rc;
}

static int sql_meta_set(a2m_store *base, const char *name, const char *value)
{
	sqlstore *s = (sqlstore *)base;
	sqlite3_stmt *st = value ? s->meta_set : s->meta_del;
	int rc = refuse_read_only(s, "meta_set");
	if (rc)
		return rc;
	if (!name) {
		a2m_store_fail(base, "meta_set: no name");
		return A2M_INVALID_PARAMS;
	}
	if (bind_text(st, 1, name) != SQLITE_OK ||
	    (value && bind_text(st, 2, value) != SQLITE_OK) ||
	    sqlite3_step(st) != SQLITE_DONE)
		rc = db_fail(s, "meta_set");
	done(st);
	return rc;
}

/* ---- open and close ---------------------------------------------------- */

/*
** Finalizes the statements and closes the connection. An open transaction
** is rolled back, never committed: close() is also the path taken when the
** caller gave up half way, and nothing unacknowledged may persist.
*/
static void sql_close(a2m_store *base)
{
	sqlstore *s = (sqlstore *)base;
	if (!s)
		return;
	if (s->db && !sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_finalize(s->begin);
	sqlite3_finalize(s->commit);
	sqlite3_finalize(s->rollback);
	sqlite3_finalize(s->get);
	sqlite3_finalize(s->get_by_key);
	sqlite3_finalize(s->insert);
	sqlite3_finalize(s->update);
	sqlite3_finalize(s->remove);
	sqlite3_finalize(s->meta_get);
	sqlite3_finalize(s->meta_set);
	sqlite3_finalize(s->meta_del);
	sqlite3_finalize(s->mirror_old);
	sqlite3_finalize(s->by_seq);
	sqlite3_finalize(s->touch);
	sqlite3_finalize(s->stale);
	sqlite3_finalize(s->count_tier);
	sqlite3_finalize(s->count_bucket);
	sqlite3_finalize(s->count_session);
	a2m_sqlite_index_close(s->index);
	a2m_sqlite_vectors_free(s->vectors);
	sqlite3_close_v2(s->db);
	a2m_mirror_free(s->mirror);
	free(s);
}

/*
** Connection settings; PRAGMAs fail silently, so each is read back. A
** read-only connection leaves the journal mode alone: changing it writes
** the file header, and the file is whatever its last writer made it.
*/
static int configure(sqlstore *s, const char *path, int synchronous_full)
{
	char mode[32];
	sqlite3_int64 v;

	if (sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS) != SQLITE_OK)
		return db_fail(s, "busy_timeout");
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

	if (exec(s, synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
		 "synchronous") ||
	    query_one(s, "PRAGMA synchronous", "synchronous", &v, NULL, 0))
		return A2M_INTERNAL_ERROR;
	if (v != (synchronous_full ? 2 : 1))
		return a2m_store_fail(&s->base, "synchronous: got %lld", (long long)v);

	if (exec(s, "PRAGMA foreign_keys=ON", "foreign_keys") ||
	    query_one(s, "PRAGMA foreign_keys", "foreign_keys", &v, NULL, 0))
		return A2M_INTERNAL_ERROR;
	if (v != 1)
		return a2m_store_fail(&s->base, "foreign_keys: could not be enabled");
	return 0;
}

/* Records that the file is now at version. Runs inside migrate()'s transaction. */
static int set_version(sqlstore *s, sqlite3_int64 version)
{
	sqlite3_stmt *st = NULL;
	int rc = exec(s, "DELETE FROM a2m_schema", "migrate");
	if (rc)
		return rc;
	if (sqlite3_prepare_v2(s->db, "INSERT INTO a2m_schema(version) VALUES(?)", -1,
			       &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, version) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		rc = db_fail(s, "migrate");
	sqlite3_finalize(st);
	return rc;
}

/*
** Brings the file to SCHEMA_VERSION one step at a time. The version is read
** inside each step's BEGIN IMMEDIATE, so two processes opening a new file at
** once take turns instead of both creating the tables.
*/
static int migrate(sqlstore *s)
{
	for (;;) {
		sqlite3_int64 version;
		if (exec(s, "BEGIN IMMEDIATE", "migrate"))
			return A2M_INTERNAL_ERROR;
		if (exec(s, "CREATE TABLE IF NOT EXISTS a2m_schema(version INTEGER NOT NULL)",
			 "migrate") ||
		    query_one(s, "SELECT ifnull(max(version), 0) FROM a2m_schema", "migrate",
			      &version, NULL, 0))
			goto fail;
		if (version < 0 || version > SCHEMA_VERSION) {
			a2m_store_fail(&s->base, "schema version %lld is not one this build "
				       "knows (it knows up to %lld)", (long long)version,
				       (long long)SCHEMA_VERSION);
			goto fail;
		}
		if (version == SCHEMA_VERSION)
			return exec(s, "COMMIT", "migrate");
		if (exec(s, migrations[version], "migrate") || set_version(s, version + 1) ||
		    exec(s, "COMMIT", "migrate"))
			goto fail;
	}
fail:
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return A2M_INTERNAL_ERROR;
}

/*
** Read-only stand-in for migrate(): the file must already be an a2m store
** at exactly this build's version, since it cannot be brought there.
*/
static int check_schema(sqlstore *s, const char *path)
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
	if (version < SCHEMA_VERSION)
		return a2m_store_fail(&s->base, "%s is at schema version %lld and this build "
				      "needs %lld: open it once read-write to migrate it",
				      path, (long long)version, (long long)SCHEMA_VERSION);
	return 0;
}

static int prepare(sqlstore *s, sqlite3_stmt **st, const char *sql)
{
	if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL)
	    != SQLITE_OK)
		return db_fail(s, "prepare");
	return 0;
}

/* ---- by seq, and the term index --------------------------------------- */

static int sql_visit_seqs(a2m_store *base, const int64_t *seqs, size_t n,
			  a2m_record_visit visit, void *ctx)
{
	sqlstore *s = (sqlstore *)base;
	a2m_record rec;
	int rc = 0;
	memset(&rec, 0, sizeof rec);
	for (size_t i = 0; i < n && !rc; i++) {
		if (sqlite3_bind_int64(s->by_seq, 1, seqs[i]) != SQLITE_OK) {
			rc = db_fail(s, "visit_seqs");
			break;
		}
		int step = sqlite3_step(s->by_seq);
		if (step == SQLITE_ROW) {
			if (!(rc = read_row(s, s->by_seq, &rec))) {
				done(s->by_seq);
				int r = visit(&rec, ctx);
				a2m_record_clear(&rec);
				if (r != 0)
					return r < 0 ? r : 0;
				continue;
			}
		} else if (step != SQLITE_DONE) {
			rc = db_fail(s, "visit_seqs");
		}
		done(s->by_seq);
	}
	return rc;
}

/* An increment of the row as it is now (store.h): never a whole-record write. */
static int sql_touch(a2m_store *base, int64_t seq, int64_t add, int64_t at)
{
	sqlstore *s = (sqlstore *)base;
	int rc = refuse_read_only(s, "touch");
	if (rc)
		return rc;
	if (!s->touch && prepare(s, &s->touch,
				 "UPDATE records SET access_count = access_count + ?2,"
				 " accessed_at = max(accessed_at, ?3) WHERE seq = ?1"))
		return A2M_INTERNAL_ERROR;
	if (sqlite3_bind_int64(s->touch, 1, seq) != SQLITE_OK ||
	    sqlite3_bind_int64(s->touch, 2, add) != SQLITE_OK ||
	    sqlite3_bind_int64(s->touch, 3, at) != SQLITE_OK)
		rc = db_fail(s, "touch");
	else
		rc = step_once(s, s->touch, "touch");
	done(s->touch);
	return rc;
}

static int sql_index_attach(a2m_store *base, a2m_indexer *ix)
{
	sqlstore *s = (sqlstore *)base;
	a2m_sqlite_index_close(s->index);
	s->index = NULL;
	/*
	** Postings are written in term order, not record order, so each
	** remember touches as many b-tree pages as it has terms: SQLite's
	** default 2 MiB cache thrashes from a few ten thousand records on.
	** The same pages are dirtied by commit after commit, so checkpointing
	** every 1 000 WAL pages (the default) copies each of them into the
	** file again and again; a longer WAL copies each once per checkpoint.
	*/
	if (exec(s, "PRAGMA cache_size=-" A2M_SQLITE_INDEX_CACHE_KIB, "cache_size") ||
	    exec(s, "PRAGMA wal_autocheckpoint=" A2M_SQLITE_CHECKPOINT_PAGES, "wal_autocheckpoint"))
		return A2M_INTERNAL_ERROR;
	return a2m_sqlite_index_open(s->db, base, s->base.read_only, ix, &s->index);
}

static int sql_index_stats(a2m_store *base, a2m_index_stats *out)
{
	sqlstore *s = (sqlstore *)base;
	memset(out, 0, sizeof *out);
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	return a2m_sqlite_index_stats(s->index, base, out);
}

static int sql_index_postings(a2m_store *base, const char *term, size_t len,
			      a2m_posting_visit visit, void *ctx)
{
	sqlstore *s = (sqlstore *)base;
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	return a2m_sqlite_index_postings(s->index, base, term, len, visit, ctx);
}

static int sql_vector_search(a2m_store *base, const a2m_vector_search *q,
			     a2m_candidates *out)
{
	sqlstore *s = (sqlstore *)base;
	return a2m_sqlite_vectors_search(s->vectors, base, q, out);
}

static const a2m_store_ops sqlite_ops = {
	.engine     = "sqlite",
	.begin      = sql_begin,
	.begin_relaxed = sql_begin_relaxed,
	.commit     = sql_commit,
	.rollback   = sql_rollback,
	.get        = sql_get,
	.get_by_key = sql_get_by_key,
	.insert     = sql_insert,
	.update     = sql_update,
	.remove     = sql_remove,
	.scan       = sql_scan,
	.count      = sql_count,
	.meta_get   = sql_meta_get,
	.meta_set   = sql_meta_set,
	.close      = sql_close,
	.visit_seqs = sql_visit_seqs,
	.touch      = sql_touch,
	.index_attach   = sql_index_attach,
	.index_stats    = sql_index_stats,
	.index_postings = sql_index_postings,
	.vector_search  = sql_vector_search,
};

/* Sets up the mirror, if opt asks for one, and heals the directory. */
static int open_mirror(sqlstore *s, const a2m_sqlite_options *opt)
{
	char err[sizeof s->base.errmsg];
	if (s->base.read_only || !opt->procedural_dir || !opt->procedural_dir[0] ||
	    !opt->procedural_tier || !opt->procedural_tier[0])
		return 0;
	s->mirror = a2m_mirror_new(opt->procedural_dir, opt->procedural_tier);
	if (!s->mirror)
		return a2m_store_fail(&s->base, "procedural mirror: out of memory");
	if (prepare(s, &s->mirror_old, SQL_MIRROR_OLD))
		return A2M_INTERNAL_ERROR;
	if (a2m_mirror_reconcile(s->mirror, &s->base, err, sizeof err) != 0)
		return a2m_store_fail(&s->base, "%s", err);
	return 0;
}

int a2m_store_sqlite_open(const char *path, const a2m_sqlite_options *opt,
			  a2m_store **out, char *err, size_t errlen)
{
	static const a2m_sqlite_options defaults;
	/*
	** NOMUTEX: store.h promises one thread at a time (the handle's mutex),
	** so SQLite's own per-connection mutex would be pure overhead.
	*/
	int flags = SQLITE_OPEN_NOMUTEX;
	int rc = A2M_INTERNAL_ERROR;
	struct stat st;

	*out = NULL;
	if (!opt)
		opt = &defaults;
	sqlstore *s = calloc(1, sizeof *s);
	if (!s) {
		if (err && errlen)
			snprintf(err, errlen, "sqlite store: out of memory");
		return A2M_INTERNAL_ERROR;
	}
	s->base.ops = &sqlite_ops;
	s->base.read_only = opt->read_only != 0;
	flags |= s->base.read_only ? SQLITE_OPEN_READONLY
				   : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	if (!path) {
		a2m_store_fail(&s->base, "sqlite store: no path");
		goto fail;
	}
	/* Said here in so many words: SQLite would only say "unable to open". */
	if (s->base.read_only && stat(path, &st) != 0) {
		a2m_store_fail(&s->base, "open %s read-only: %s (a read-only store serves "
			       "an existing database and creates nothing)", path,
			       strerror(errno));
		goto fail;
	}
	if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
		if (s->db)
			a2m_store_fail(&s->base, "open %s: %s", path, sqlite3_errmsg(s->db));
		else
			a2m_store_fail(&s->base, "open %s: out of memory", path);
		goto fail;
	}
	s->synchronous_full = opt->synchronous_full;
	if (configure(s, path, opt->synchronous_full) ||
	    (s->base.read_only ? check_schema(s, path) : migrate(s)) ||
	    /* Read-only: a deferred BEGIN, a read transaction; IMMEDIATE would
	       ask for the write lock a read-only connection cannot have. */
	    prepare(s, &s->begin, s->base.read_only ? "BEGIN" : "BEGIN IMMEDIATE") ||
	    prepare(s, &s->commit, "COMMIT") ||
	    prepare(s, &s->rollback, "ROLLBACK") ||
	    prepare(s, &s->get, "SELECT " COLUMNS " FROM records WHERE id = ?1") ||
	    prepare(s, &s->get_by_key, SQL_GET_BY_KEY) ||
	    prepare(s, &s->insert, SQL_INSERT) ||
	    prepare(s, &s->update, SQL_UPDATE) ||
	    prepare(s, &s->remove, "DELETE FROM records WHERE id = ?1") ||
	    prepare(s, &s->meta_get, "SELECT value FROM a2m_meta WHERE name = ?1") ||
	    prepare(s, &s->meta_set, SQL_META_SET) ||
	    prepare(s, &s->meta_del, "DELETE FROM a2m_meta WHERE name = ?1") ||
	    prepare(s, &s->by_seq, "SELECT " COLUMNS " FROM records WHERE seq = ?1") ||
	    prepare(s, &s->count_tier, SQL_COUNT_TIER) ||
	    prepare(s, &s->count_bucket, SQL_COUNT_BUCKET) ||
	    prepare(s, &s->count_session, SQL_COUNT_SESSION) ||
	    (!s->base.read_only &&
	     prepare(s, &s->stale, "DELETE FROM a2m_meta WHERE name = 'index'")) ||
	    open_mirror(s, opt))
		goto fail;
	if (!(s->vectors = a2m_sqlite_vectors_new(s->db))) {
		a2m_store_fail(&s->base, "sqlite store: out of memory");
		goto fail;
	}
	*out = &s->base;
	return 0;

fail:
	if (err && errlen)
		snprintf(err, errlen, "%s", s->base.errmsg);
	sql_close(&s->base);
	return rc;
}
