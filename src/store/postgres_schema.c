/*
** postgres_schema.c — the PostgreSQL engine's schema, as numbered
** migrations.
**
** a2m_schema_version holds the number of steps a deployment has run;
** migrations[i] takes it from version i to i + 1. Opening read-write runs
** the missing steps, each in one transaction with its version bump, all
** under a session advisory lock of the deployment's own (DECISIONS 025:
** CREATE TABLE IF NOT EXISTS is not atomic against a concurrent creator,
** and two servers starting together collided on a table's sequence). So
** any number of servers may start at once against an empty database: the
** first to take the lock builds the schema, the others wait, then find it
** at their version and run nothing. A deployment at a newer version than
** this build knows is refused rather than guessed at. A read-only open
** migrates nothing and takes no lock (a hot standby could not): it checks
** the version only.
**
** Append steps, never edit one: a deployment in the field ran them.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"

/*
** What keeps a2m_counts: statement-level triggers over the transition
** tables, so a held INSERT of 64 rows is one upsert per (tier, session)
** it touches rather than one per row, and a touch (which changes neither
** column) costs nothing. NULL is its own key (tnull/snull), never ''.
*/
#define SQL_COUNTS \
	"CREATE TABLE a2m_counts (" \
	" tnull boolean NOT NULL, tier text COLLATE \"C\" NOT NULL," \
	" snull boolean NOT NULL, session text COLLATE \"C\" NOT NULL," \
	" n bigint NOT NULL," \
	" PRIMARY KEY (tnull, tier, snull, session));" \
	"CREATE FUNCTION a2m_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$" \
	"BEGIN" \
	"  IF TG_OP = 'INSERT' THEN" \
	"    INSERT INTO a2m_counts AS c (tnull, tier, snull, session, n)" \
	"      SELECT tier IS NULL, coalesce(tier, ''), session IS NULL," \
	"             coalesce(session, ''), count(*) FROM a2m_new" \
	"      GROUP BY 1, 2, 3, 4" \
	"    ON CONFLICT (tnull, tier, snull, session) DO UPDATE SET n = c.n + excluded.n;" \
	"  ELSIF TG_OP = 'DELETE' THEN" \
	"    UPDATE a2m_counts c SET n = c.n - d.k FROM (" \
	"      SELECT tier IS NULL AS tn, coalesce(tier, '') AS t, session IS NULL AS sn," \
	"             coalesce(session, '') AS s, count(*) AS k FROM a2m_old" \
	"      GROUP BY 1, 2, 3, 4) d" \
	"    WHERE c.tnull = d.tn AND c.tier = d.t AND c.snull = d.sn AND c.session = d.s;" \
	"    DELETE FROM a2m_counts WHERE n <= 0;" \
	"  ELSE" \
	"    WITH moved AS (" \
	"      SELECT tier IS NULL AS tn, coalesce(tier, '') AS t, session IS NULL AS sn," \
	"             coalesce(session, '') AS s, sum(k)::bigint AS k FROM (" \
	"        SELECT tier, session, -1 AS k FROM a2m_old" \
	"        UNION ALL SELECT tier, session, 1 FROM a2m_new) x" \
	"      GROUP BY 1, 2, 3, 4 HAVING sum(k) <> 0)" \
	"    INSERT INTO a2m_counts AS c (tnull, tier, snull, session, n)" \
	"      SELECT tn, t, sn, s, k FROM moved" \
	"    ON CONFLICT (tnull, tier, snull, session) DO UPDATE SET n = c.n + excluded.n;" \
	"    DELETE FROM a2m_counts WHERE n <= 0;" \
	"  END IF;" \
	"  RETURN NULL;" \
	"END $$;" \
	"CREATE TRIGGER a2m_counts_insert AFTER INSERT ON a2m_records" \
	" REFERENCING NEW TABLE AS a2m_new FOR EACH STATEMENT EXECUTE FUNCTION a2m_counts_apply();" \
	"CREATE TRIGGER a2m_counts_delete AFTER DELETE ON a2m_records" \
	" REFERENCING OLD TABLE AS a2m_old FOR EACH STATEMENT EXECUTE FUNCTION a2m_counts_apply();" \
	"CREATE TRIGGER a2m_counts_update AFTER UPDATE ON a2m_records" \
	" REFERENCING OLD TABLE AS a2m_old NEW TABLE AS a2m_new" \
	" FOR EACH STATEMENT EXECUTE FUNCTION a2m_counts_apply();"

static const char *const migrations[] = {
	/*
	** 1: the records, store-level settings, the deployment's state row and
	** the kept counts.
	**
	** Text that is compared is COLLATE "C": bytes, as the other engines
	** compare them, whatever the database's locale. A key is bytea: a
	** key_prefix is a range of bytes (store.h: strncmp), whatever they are,
	** as on the other engines (a prefix may end inside a UTF-8 sequence,
	** which no text value may). A key is unique per owner; "no owner" is its own
	** value ((owner IS NULL) is part of the key), never equal to any
	** string, '' included. seq is given out by the engine under the
	** deployment's write lock (postgres_txn.c), from a2m_state.seq, so it
	** grows in commit order and a removed record's seq never comes back.
	** Vectors are bytes: the caller's as little-endian float64, the
	** server's as little-endian float32 (postgres_rows.c). Procedural
	** records keep their text here like any other (DECISIONS 024: a
	** networked store has no shared disk to mirror them to).
	**
	** a2m_state: version grows by one at every commit that wrote
	** (the number the servers' caches are keyed on, store.h version), seq
	** is the last seq given out, the index's figures, and the analysis the
	** index was built with.
	*/
	"CREATE TABLE a2m_records ("
	" seq          bigint PRIMARY KEY,"
	" id           text COLLATE \"C\" NOT NULL UNIQUE,"
	" content      text NOT NULL,"
	" created_at   bigint NOT NULL,"
	" role         text,"
	" metadata     text,"
	" grp          text COLLATE \"C\","
	" tier         text COLLATE \"C\","
	" salience     double precision NOT NULL DEFAULT 0,"
	" accessed_at  bigint NOT NULL DEFAULT 0,"
	" access_count bigint NOT NULL DEFAULT 0,"
	" owner        text COLLATE \"C\","
	" session      text COLLATE \"C\","
	" key          bytea,"
	" revision     bigint NOT NULL DEFAULT 0,"
	" embedding    bytea,"
	" uri          text,"
	" media_type   text,"
	" gen_embedding bytea);"
	"CREATE INDEX a2m_records_created ON a2m_records (created_at, seq);"
	"CREATE INDEX a2m_records_tier ON a2m_records (tier, created_at, seq);"
	"CREATE INDEX a2m_records_session ON a2m_records (session, created_at, seq);"
	"CREATE UNIQUE INDEX a2m_records_owner_key ON a2m_records"
	" ((owner IS NULL), coalesce(owner, ''), key) WHERE key IS NOT NULL;"
	"CREATE INDEX a2m_records_key ON a2m_records (key) WHERE key IS NOT NULL;"
	"CREATE INDEX a2m_records_grp ON a2m_records (grp) WHERE grp IS NOT NULL;"
	"CREATE TABLE a2m_meta (name text COLLATE \"C\" PRIMARY KEY, value text NOT NULL);"
	"CREATE TABLE a2m_state ("
	" one boolean PRIMARY KEY DEFAULT true CHECK (one),"
	" version bigint NOT NULL DEFAULT 0,"
	" seq bigint NOT NULL DEFAULT 0,"
	" docs bigint NOT NULL DEFAULT 0,"
	" total_len bigint NOT NULL DEFAULT 0,"
	" unindexed bigint NOT NULL DEFAULT 0,"
	" index_version text);"
	"INSERT INTO a2m_state DEFAULT VALUES;"
	SQL_COUNTS,

	/*
	** 2: the term index: one row per (term, record), with the term's count
	** in the record and the record's length, so BM25 reads a term's
	** postings as one index range and needs nothing else. Terms are the
	** analyser's bytes. Written in the records' transaction by the engine
	** (postgres_index.c), never by triggers: analysis happens in a2m.
	*/
	"CREATE TABLE a2m_postings ("
	" term bytea NOT NULL,"
	" seq  bigint NOT NULL,"
	" tf   integer NOT NULL,"
	" dl   integer NOT NULL,"
	" PRIMARY KEY (term, seq));",

	/*
	** 3: the event log of spec §4.12, one for every server of the
	** deployment (postgres_events.c): seq in commit order (appended under
	** the write lock), the event object as JSON text, who may see it. The
	** salt names this log in cursors: random per deployment, so a cursor
	** of another deployment (or of a server's memory log) is foreign.
	*/
	"CREATE TABLE a2m_events ("
	" seq      bigint PRIMARY KEY,"
	" at       bigint NOT NULL,"
	" body     text NOT NULL,"
	" owner    text COLLATE \"C\","
	" shared   boolean NOT NULL,"
	" audience text);"
	"ALTER TABLE a2m_state ADD COLUMN event_head bigint NOT NULL DEFAULT 0,"
	" ADD COLUMN event_salt text NOT NULL"
	" DEFAULT substr(md5(random()::text || clock_timestamp()::text), 1, 16);",

	/*
	** 4: the extensions (docs/PROTOCOL.md, Extensions; postgres_extend.c).
	** A record's expiry (x-expiry, ms) and its content's fingerprint
	** (x-dedup, the 64-bit hash as a signed bigint), each NULL when unused,
	** each with a partial index holding only the rows that have one, so a
	** deployment that uses neither pays a NULL apiece per row. Added as the
	** last columns: PG_COLUMNS reads them after gen_embedding. The earlier
	** revisions of keyed records (x-history), by record id and revision;
	** a statement-level trigger deletes them with their records in the
	** same statement, whichever path removed them (a forget, a capacity
	** drop, an expiry sweep), as SQLite's step 9 does row by row.
	*/
	"ALTER TABLE a2m_records ADD COLUMN expires_at bigint, ADD COLUMN fp bigint;"
	"CREATE INDEX a2m_records_expiry ON a2m_records (expires_at, seq)"
	" WHERE expires_at IS NOT NULL;"
	"CREATE INDEX a2m_records_fp ON a2m_records (fp) WHERE fp IS NOT NULL;"
	"CREATE TABLE a2m_history ("
	" id            text COLLATE \"C\" NOT NULL,"
	" revision      bigint NOT NULL,"
	" content       text NOT NULL,"
	" role          text,"
	" metadata      text,"
	" owner         text COLLATE \"C\","
	" created_at    bigint NOT NULL,"
	" superseded_at bigint NOT NULL,"
	" PRIMARY KEY (id, revision));"
	"CREATE FUNCTION a2m_history_forget() RETURNS trigger LANGUAGE plpgsql AS $$"
	"BEGIN"
	"  DELETE FROM a2m_history h USING a2m_old o WHERE h.id = o.id;"
	"  RETURN NULL;"
	"END $$;"
	"CREATE TRIGGER a2m_history_forget AFTER DELETE ON a2m_records"
	" REFERENCING OLD TABLE AS a2m_old FOR EACH STATEMENT"
	" EXECUTE FUNCTION a2m_history_forget();",

	/*
	** 5: the term index read from its key alone, and its caches kept per
	** bucket of terms (postgres_index.c).
	**
	** The key of a2m_postings now carries tf and dl, so a term's postings
	** are an index-only scan: one leaf page per couple of hundred postings,
	** where the heap fetch of each posting was a page of its own (a term's
	** postings are spread over every batch that wrote it). Measured on 8.8M
	** postings, a term of 4 000 postings: 0.65 ms and 26 pages, against 48
	** ms and 4 000 pages. Index-only scans need the pages marked all-visible
	** by VACUUM: the table, written mostly by inserts, is vacuumed after
	** each 2% of growth rather than PostgreSQL's default 20%.
	**
	** term_stamps: per bucket of terms, the version of the last commit that
	** changed one of its postings, which the servers' postings caches are
	** keyed on, so that a commit that wrote no postings, or other terms,
	** leaves what they hold valid.
	*/
	"ALTER TABLE a2m_postings DROP CONSTRAINT a2m_postings_pkey,"
	" ADD PRIMARY KEY (term, seq) INCLUDE (tf, dl);"
	"ALTER TABLE a2m_postings SET (autovacuum_vacuum_insert_scale_factor = 0.02);"
	"ALTER TABLE a2m_state ADD COLUMN term_stamps bigint[] NOT NULL"
	" DEFAULT array_fill(0::bigint, ARRAY[256]);",

	/*
	** 6: a term's postings as a few rows of varints (postgres_segments.c)
	** instead of a row each. A row per posting cost a b-tree insert per
	** posting when written and an index entry per posting when read
	** (thousands for a common term). Now a write transaction appends one
	** chunk per term it changed to the term's tail row (seg the largest
	** bigint), and seals a grown tail into the term's few sealed rows,
	** keyed (term, seg), seg ordering a term's rows by age. The key holds
	** nothing else, and pages are left a quarter free, so an append is an
	** update PostgreSQL keeps on the row's page without touching the key
	** (HOT). data is stored out of line uncompressed when large (varints do
	** not compress, and a read would pay the decompression).
	**
	** The postings of step 5 are not converted here (their analysis lives
	** in a2m, not in SQL): the index is marked as built by no analysis, so
	** the first read-write server of this build to open the deployment
	** rebuilds it from the records, in one transaction under the write
	** lock, as at a deployment's first open (postgres_index.c, attach).
	*/
	"CREATE TABLE a2m_postings_seg ("
	" term     bytea NOT NULL,"
	" seg      bigint NOT NULL,"
	" n        integer NOT NULL,"
	" last_seq bigint NOT NULL,"
	" data     bytea NOT NULL,"
	" PRIMARY KEY (term, seg)) WITH (fillfactor = 75);"
	"ALTER TABLE a2m_postings_seg ALTER COLUMN data SET STORAGE EXTERNAL;"
	"DROP TABLE a2m_postings;"
	"UPDATE a2m_state SET index_version = NULL, docs = 0, total_len = 0, unindexed = 0;",

	/*
	** 7: the event log's tail, the lowest seq its trims have not
	** deleted, so that each append's trim is the range from the tail to
	** the new bound (postgres_events.c) and the oldest retained event is
	** found from there: both used to start at the index's first entry and
	** walk every entry the trims had left dead since the table was last
	** vacuumed (a 1 000-event append after 200 of them: 4 409 buffers and
	** 552 index pages for its trim, against 1 021 and 6;
	** docs/BENCHMARKS.md).
	*/
	"ALTER TABLE a2m_state ADD COLUMN event_tail bigint NOT NULL DEFAULT 1;"
	"UPDATE a2m_state SET event_tail ="
	" coalesce((SELECT min(seq) FROM a2m_events), event_head + 1);",

	/*
	** 8: a flush's postings as one row holding every term it changed
	** (a2m_batches, postgres_batches.c), folded into the terms' rows by
	** later write transactions, a bounded step each (postgres_fold.c),
	** instead of an upsert per term per flush. Ids are given out from
	** a2m_state.batch_last; the rows a snapshot holds are the ids
	** (fold_base, batch_last]; a pass folds (fold_base, fold_horizon],
	** fold_budget terms a step, the terms after fold_cursor next. A flush's
	** id is also the seg of the sealed rows made from it, so the ids start
	** above every sealed row a step-7 deployment has (its segs were the
	** commit's version << 20 | the flush's number): its index stays as it
	** is, with no batch row yet.
	*/
	"CREATE TABLE a2m_batches ("
	" id   bigint PRIMARY KEY,"
	" n    bigint NOT NULL,"
	" data bytea NOT NULL);"
	"ALTER TABLE a2m_batches ALTER COLUMN data SET STORAGE EXTERNAL;"
	"ALTER TABLE a2m_state ADD COLUMN batch_last bigint NOT NULL DEFAULT 0,"
	" ADD COLUMN fold_base bigint NOT NULL DEFAULT 0,"
	" ADD COLUMN fold_horizon bigint NOT NULL DEFAULT 0,"
	" ADD COLUMN fold_budget bigint NOT NULL DEFAULT 0,"
	" ADD COLUMN fold_cursor bytea;"
	"UPDATE a2m_state SET batch_last = m, fold_base = m, fold_horizon = m"
	" FROM (SELECT coalesce(max(seg), 0) AS m FROM a2m_postings_seg"
	" WHERE seg < 9223372036854775807) x;",

	/*
	** 9: the bound on salience (store.h, salience_bound): no record's
	** salience above a2m_state.salience_max, raised by the commit of a
	** write transaction that set a higher one (under the write lock, from
	** the value its begin read: postgres_txn.c), never lowered. A read
	** bracket's snapshot reads it with the rest of the state row. Seeded
	** from the records, at least 0 as the other engines' starts.
	*/
	"ALTER TABLE a2m_state ADD COLUMN salience_max double precision NOT NULL DEFAULT 0;"
	"UPDATE a2m_state SET salience_max ="
	" (SELECT greatest(0, coalesce(max(salience), 0)) FROM a2m_records);",
};

#define VERSION ((int)(sizeof migrations / sizeof migrations[0]))

/* Step 5 made that many stamps: another count needs a step of its own. */
_Static_assert(PG_TERM_BUCKETS == 256, "a2m_state.term_stamps holds 256 buckets");

/* The version the deployment is at (0: none yet). */
static int read_version(pgstore *s, int *version)
{
	PGresult *r;
	int rc = a2m_pg_exec(s, &s->main, "SELECT version FROM a2m_schema_version", "schema",
			     &r);
	if (rc)
		return rc;
	*version = s->pq->ntuples(r) > 0 ? atoi(s->pq->getvalue(r, 0, 0)) : 0;
	s->pq->clear(r);
	return 0;
}

/* Whether a2m_schema_version exists (read-only: nothing may be created). */
static int has_schema(pgstore *s, int *yes)
{
	PGresult *r;
	int rc = a2m_pg_exec(s, &s->main, "SELECT to_regclass('a2m_schema_version') IS NOT NULL",
			     "schema", &r);
	if (rc)
		return rc;
	*yes = s->pq->ntuples(r) > 0 && strcmp(s->pq->getvalue(r, 0, 0), "t") == 0;
	s->pq->clear(r);
	return 0;
}

/* Runs the steps the deployment lacks, under the migration lock (held by the caller). */
static int run_steps(pgstore *s)
{
	int version = 0, rc;
	if ((rc = a2m_pg_exec(s, &s->main,
			      "CREATE TABLE IF NOT EXISTS a2m_schema_version (version integer NOT NULL);"
			      "INSERT INTO a2m_schema_version SELECT 0"
			      " WHERE NOT EXISTS (SELECT 1 FROM a2m_schema_version)",
			      "schema", NULL)) ||
	    (rc = read_version(s, &version)))
		return rc;
	if (version > VERSION)
		return a2m_store_fail(&s->base, "the deployment's schema is at version %d; this"
				      " a2m knows %d: upgrade a2m", version, VERSION);
	for (int v = version; v < VERSION; v++) {
		char bump[96];
		snprintf(bump, sizeof bump, "UPDATE a2m_schema_version SET version = %d", v + 1);
		if ((rc = a2m_pg_exec(s, &s->main, "BEGIN", "schema", NULL)))
			return rc;
		if ((rc = a2m_pg_exec(s, &s->main, migrations[v], "schema", NULL)) ||
		    (rc = a2m_pg_exec(s, &s->main, bump, "schema", NULL)) ||
		    (rc = a2m_pg_exec(s, &s->main, "COMMIT", "schema", NULL))) {
			char msg[sizeof s->base.errmsg];
			snprintf(msg, sizeof msg, "%s", s->base.errmsg);
			PGresult *r = s->pq->exec(s->main.conn, "ROLLBACK");
			if (r)
				s->pq->clear(r);
			a2m_store_fail(&s->base, "schema step %d: %s", v + 1, msg);
			return rc;
		}
	}
	return 0;
}

int a2m_pg_migrate(pgstore *s, int read_only)
{
	int rc, version = 0, exists = 0;
	if (read_only) {
		if ((rc = has_schema(s, &exists)))
			return rc;
		if (!exists)
			return a2m_store_fail(&s->base, "PostgreSQL at %s holds no a2m deployment%s%s"
					      " (a read-only server creates nothing)", s->where,
					      s->schema ? " in schema " : "", s->schema ? s->schema : "");
		if ((rc = read_version(s, &version)))
			return rc;
		if (version != VERSION)
			return a2m_store_fail(&s->base, "the deployment's schema is at version %d, this"
					      " a2m's is %d: open it read-write once to migrate it",
					      version, VERSION);
		return 0;
	}
	char sql[160], ident[200];
	if (s->schema) {
		/* Made under the lock too: two servers creating it would collide. */
		size_t j = 0;
		ident[j++] = '"';
		for (const char *p = s->schema; *p && j + 3 < sizeof ident; p++) {
			if (*p == '"')
				ident[j++] = '"';
			ident[j++] = *p;
		}
		ident[j++] = '"';
		ident[j] = '\0';
	}
	snprintf(sql, sizeof sql, "SELECT pg_advisory_lock(%d, %d)", (int)s->lock_class,
		 (int)s->lock_schema);
	if ((rc = a2m_pg_exec(s, &s->main, sql, "schema lock", NULL)))
		return rc;
	if (s->schema) {
		char create[260];
		snprintf(create, sizeof create, "CREATE SCHEMA IF NOT EXISTS %s", ident);
		rc = a2m_pg_exec(s, &s->main, create, "schema", NULL);
	}
	if (!rc)
		rc = run_steps(s);
	snprintf(sql, sizeof sql, "SELECT pg_advisory_unlock(%d, %d)", (int)s->lock_class,
		 (int)s->lock_schema);
	if (a2m_pg_exec(s, &s->main, sql, "schema unlock", NULL) && !rc) {
		/* The session lock would outlive the failure: drop the connection. */
		a2m_pg_disconnect(s, &s->main);
		rc = A2M_INTERNAL_ERROR;
	}
	return rc;
}
