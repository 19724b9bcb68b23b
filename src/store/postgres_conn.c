/*
** postgres_conn.c — one connection of the PostgreSQL engine: connecting
** and reconnecting, the prepared statements (run one at a time or several
** in one round trip), and telling a lost server from a refused statement.
** The binary values they take and give are postgres_wire.c's.
**
** Every statement is prepared once per connection, the first time it runs
** there, and every result comes back in binary: numbers as 8 big-endian
** bytes instead of decimal text, vectors as the bytes they were stored as.
**
** A server that went away (stopped, restarted, the network cut) shows as
** an error on the statement that met it: the connection is marked broken,
** the store's message says "store unavailable: ...", and the next use of
** the connection outside a transaction connects again (a2m_pg_ready). A
** statement outside any transaction that finds its connection dead (the
** server restarted while it was idle) is sent once more on a new one: it
** did nothing. A transaction the loss cut is never resumed on the new
** connection: its writes died with the old one, so its ops keep failing
** until rollback.
**
** The connection string is a secret (it may carry a password): it goes to
** libpq and nowhere else. Messages name the server by a2m_pg_describe()'s
** text, and libpq's own messages, which never contain the password.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"

/* ---- the statements ----------------------------------------------------- */

#define FROM_RECORDS " FROM a2m_records"

/* The SQL of each pg_stmt, by number (postgres_internal.h says what each takes). */
static const char *const stmt_sql[PG_NSTMTS] = {
	[PG_GET] = "SELECT " PG_COLUMNS FROM_RECORDS " WHERE id = $1",
	/* Spelled as a2m_records_owner_key's expressions, so it is that index. */
	[PG_GET_BY_KEY] = "SELECT " PG_COLUMNS FROM_RECORDS
		" WHERE (owner IS NULL) = $1 AND coalesce(owner, '') = $2 AND key = $3",
	[PG_BY_SEQ] = "SELECT " PG_COLUMNS FROM_RECORDS " WHERE seq = $1",
	[PG_BY_SEQS] = "SELECT " PG_COLUMNS FROM_RECORDS " WHERE seq = ANY($1::int8[])",
	[PG_OLD] = "SELECT seq, content, tier" FROM_RECORDS " WHERE id = $1",
	[PG_UPDATE] = "UPDATE a2m_records SET content = $2, created_at = $3, role = $4,"
		" metadata = $5, grp = $6, tier = $7, salience = $8, accessed_at = $9,"
		" access_count = $10, owner = $11, session = $12, key = $13, revision = $14,"
		" embedding = $15, uri = $16, media_type = $17, gen_embedding = $18,"
		" expires_at = $19, fp = $20"
		" WHERE id = $1 AND ($13::bytea IS NULL OR NOT EXISTS (SELECT 1 FROM a2m_records o"
		" WHERE (o.owner IS NULL) = ($11::text IS NULL) AND coalesce(o.owner, '') ="
		" coalesce($11::text, '') AND o.key = $13::bytea AND o.id <> $1))",
	[PG_REMOVE] = "DELETE FROM a2m_records WHERE id = $1",
	/* A tier move (store.h, move): named by its bucket as last read; the
	** counts' trigger moves its count, the index is not touched. */
	[PG_MOVE] = "UPDATE a2m_records SET tier = $4, salience = $5"
		" WHERE seq = $1 AND id = $2 AND tier IS NOT DISTINCT FROM $3::text"
		" AND session IS NOT DISTINCT FROM $6::text",
	/* An increment of the row as it is now (store.h, touch). */
	/*
	** Increments of the rows as they are now (store.h, touch): one
	** statement for every touch a transaction held (postgres_held.c), the
	** increments summed per seq, since one UPDATE changes a row once
	** however often its join names it; a seq that names no record is skipped.
	*/
	[PG_TOUCHES] = "UPDATE a2m_records r SET access_count = r.access_count + t.add,"
		" accessed_at = greatest(r.accessed_at, t.at) FROM (SELECT seq, sum(add)::int8 AS add,"
		" max(at) AS at FROM unnest($1::int8[], $2::int8[], $3::int8[]) AS u(seq, add, at)"
		" GROUP BY seq) t WHERE r.seq = t.seq",
	[PG_META_GET] = "SELECT value FROM a2m_meta WHERE name = $1",
	[PG_META_SET] = "INSERT INTO a2m_meta (name, value) VALUES ($1, $2)"
		" ON CONFLICT (name) DO UPDATE SET value = excluded.value",
	[PG_META_DEL] = "DELETE FROM a2m_meta WHERE name = $1",
	[PG_STATE] = "SELECT version, seq, docs, total_len, unindexed, index_version"
		" FROM a2m_state",
	[PG_COUNT_BUCKET] = "SELECT coalesce(sum(n), 0)::int8 FROM a2m_counts"
		" WHERE tnull = $1 AND tier = $2 AND snull = $3 AND session = $4",
	[PG_COUNT_TIER] = "SELECT coalesce(sum(n), 0)::int8 FROM a2m_counts"
		" WHERE tnull = $1 AND tier = $2",
	[PG_COUNT_SESSION] = "SELECT coalesce(sum(n), 0)::int8 FROM a2m_counts"
		" WHERE snull = $1 AND session = $2",
	[PG_COUNT_ALL] = "SELECT coalesce(sum(n), 0)::int8 FROM a2m_counts",
	/* The WHERE of a2m_records_unembedded (postgres_schema.c), exactly. */
	[PG_UNEMBEDDED] = "SELECT " PG_COLUMNS FROM_RECORDS
		" WHERE (tier IS NULL) = $1 AND coalesce(tier, '') = $2 AND seq > $3"
		" AND embedding IS NULL AND gen_embedding IS NULL"
		" AND btrim(content, E' \\t\\n\\013\\f\\r') <> ''"
		" ORDER BY seq LIMIT 256",
	[PG_VECTORS] = "SELECT seq, tier, owner, embedding, salience, gen_embedding"
		FROM_RECORDS " WHERE embedding IS NOT NULL OR gen_embedding IS NOT NULL",
	[PG_SEQ_OF] = "SELECT seq" FROM_RECORDS " WHERE id = $1",
	/*
	** One statement appends a batch after the head, moves the head, and
	** trims to the newest $6 events ($7: the batch's size). Its parts see
	** one snapshot, so the DELETE finds only older rows: the batch's own
	** beyond $6 are never inserted. The trim is the range from the tail
	** (every seq below it deleted already) to the new bound, and the tail
	** moves up to that bound: never a walk from the index's first entry
	** over the entries earlier trims left dead (schema step 7). Returns
	** the first seq given.
	*/
	[PG_EVENTS_ADD] = "WITH head AS (SELECT event_head AS h, event_tail AS t FROM a2m_state),"
		" ins AS (INSERT INTO a2m_events (seq, at, body, owner, shared, audience)"
		"  SELECT head.h + u.n, u.at, u.body, u.owner, u.shared, u.audience FROM head,"
		"  unnest($1::int8[], $2::text[], $3::text[], $4::bool[], $5::text[])"
		"   WITH ORDINALITY AS u(at, body, owner, shared, audience, n)"
		"  WHERE u.n > $7::int8 - $6::int8),"
		" upd AS (UPDATE a2m_state SET event_head = event_head + $7::int8,"
		"  event_tail = greatest(event_tail, event_head + $7::int8 - $6::int8 + 1)"
		"  RETURNING event_head),"
		" del AS (DELETE FROM a2m_events WHERE seq >= (SELECT t FROM head)"
		"  AND seq <= (SELECT h FROM head) + $7::int8 - $6::int8)"
		" SELECT h + 1 FROM head",
	[PG_EVENTS_READ] = "SELECT seq, at, body, owner, shared, audience FROM a2m_events"
		" WHERE seq > $1 ORDER BY seq LIMIT $2",
	/* The oldest retained is looked for from the tail on (schema step 7). */
	[PG_EVENTS_BOUNDS] = "SELECT (SELECT min(seq) FROM a2m_events WHERE seq >= event_tail),"
		" event_head, event_salt FROM a2m_state",
};

/* ---- connecting -------------------------------------------------------------- */

/* libpq's notices (NOTICE: relation exists, ...) are not for stderr. */
static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/*
** A libpq message made one line: its first (libpq puts the cause there and
** advice on the lines after it), without "ERROR:  " or a trailing newline.
*/
static void clean(char *msg)
{
	char *nl = strchr(msg, '\n');
	if (nl)
		*nl = '\0';
	if (strncmp(msg, "ERROR:  ", 8) == 0)
		memmove(msg, msg + 8, strlen(msg + 8) + 1);
	size_t n = strlen(msg);
	while (n && msg[n - 1] == ' ')
		msg[--n] = '\0';
	for (char *p = msg; *p; p++)
		if (*p == '\t')
			*p = ' ';
}

/* Says the store is unavailable, with why (libpq's words, cleaned). */
static int unavailable(pgstore *s, const char *op, const char *why)
{
	char buf[200];
	const char *w = why && *why ? why : "no answer";
	size_t n = strnlen(w, sizeof buf - 1);
	memcpy(buf, w, n);
	buf[n] = '\0';
	clean(buf);
	return a2m_store_fail(&s->base, "store unavailable: %s: PostgreSQL at %s: %s", op,
			      s->where, buf);
}

void a2m_pg_disconnect(pgstore *s, pgconn *c)
{
	if (c->conn)
		s->pq->finish(c->conn);
	c->conn = NULL;
	c->prepared = 0;
	for (size_t i = 0; i < c->nscans; i++)
		free(c->scans[i]);
	free(c->scans);
	c->scans = NULL;
	c->nscans = 0;
	c->broken = 0;
	c->in_tx = 0;
	c->stats_known = 0;
}

/* Quotes name as an SQL identifier into out. Returns 0, or -1 when it does not fit. */
static int quote_ident(const char *name, char *out, size_t size)
{
	size_t j = 0;
	if (size < 3)
		return -1;
	out[j++] = '"';
	for (const char *p = name; *p; p++) {
		if (j + 3 >= size)
			return -1;
		if (*p == '"')
			out[j++] = '"';
		out[j++] = *p;
	}
	out[j++] = '"';
	out[j] = '\0';
	return 0;
}

int a2m_pg_connect(pgstore *s, pgconn *c)
{
	a2m_pg_disconnect(s, c);
	/*
	** Defaults before the caller's string (which overrides them), then
	** what the engine needs after it: libpq lets a later keyword win.
	** A connection never waits forever for a server that is gone.
	*/
	const char *const keys[] = {"connect_timeout", "application_name", "keepalives_idle",
				    "dbname", "client_encoding", NULL};
	const char *const values[] = {"10", "a2m", "30", s->conninfo, "UTF8", NULL};
	c->conn = s->pq->connectdb_params(keys, values, 1);
	if (!c->conn)
		return unavailable(s, "connect", "out of memory");
	if (s->pq->status(c->conn) != CONNECTION_OK) {
		char why[256];
		snprintf(why, sizeof why, "%s", s->pq->error_message(c->conn));
		a2m_pg_disconnect(s, c);
		return unavailable(s, "connect", why);
	}
	s->pq->set_notice_processor(c->conn, quiet, NULL);
	const char *enc = s->pq->parameter_status(c->conn, "server_encoding");
	if (!enc || strcmp(enc, "UTF8") != 0) {
		a2m_pg_disconnect(s, c);
		return a2m_store_fail(&s->base, "PostgreSQL at %s: the database's encoding is %s;"
				      " a2m needs UTF8 (createdb -E UTF8)", s->where,
				      enc ? enc : "unknown");
	}
	/*
	** One deployment, one schema: its objects are found and created there.
	** A transaction left idle by a stuck server must not hold the write
	** lock for ever. synchronous_commit 'off' would acknowledge writes a
	** crash can lose: raised to 'on' (stronger settings are kept).
	*/
	char sql[512], ident[200];
	int n = 0;
	if (s->schema) {
		if (quote_ident(s->schema, ident, sizeof ident) != 0) {
			a2m_pg_disconnect(s, c);
			return a2m_store_fail(&s->base, "schema name too long");
		}
		n = snprintf(sql, sizeof sql, "SET search_path = %s;", ident);
	}
	snprintf(sql + n, sizeof sql - (size_t)n,
		 "SET idle_in_transaction_session_timeout = '60s';"
		 "SELECT CASE WHEN current_setting('synchronous_commit') = 'off'"
		 " THEN set_config('synchronous_commit', 'on', false) END;");
	PGresult *r = s->pq->exec(c->conn, sql);
	int rc = a2m_pg_check(s, c, r, "connect");
	if (rc == 0)
		s->pq->clear(r);
	else
		a2m_pg_disconnect(s, c);
	return rc;
}

int a2m_pg_ready(pgstore *s, pgconn *c)
{
	if (c->conn && !c->broken && s->pq->status(c->conn) == CONNECTION_OK)
		return 0;
	return a2m_pg_connect(s, c);
}

int a2m_pg_lost(pgstore *s, pgconn *c)
{
	return !c->conn || c->broken || s->pq->status(c->conn) != CONNECTION_OK;
}

/* ---- running statements --------------------------------------------------- */

/*
** Whether a failed result means the server is gone or going: the
** connection dropped, or SQLSTATE class 08 (connection exception), 57P01..
** 57P03 (shut down, crashed, not accepting connections yet). A failed
** result with no SQLSTATE at all was made by libpq, not the server: in
** pipeline mode "server closed the connection unexpectedly" comes so,
** before the connection's status has turned bad. It is taken as gone too
** (the connection is made again at its next use, which costs one
** reconnect if it was anything else).
*/
static int server_gone(pgstore *s, pgconn *c, const PGresult *res)
{
	if (!c->conn || s->pq->status(c->conn) != CONNECTION_OK)
		return 1;
	const char *state = res ? s->pq->result_error_field(res, PG_DIAG_SQLSTATE) : NULL;
	if (!state)
		return 1;
	return strncmp(state, "08", 2) == 0 || strcmp(state, "57P01") == 0 ||
	       strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0;
}

int a2m_pg_check(pgstore *s, pgconn *c, PGresult *res, const char *op)
{
	ExecStatusType st = res ? s->pq->result_status(res) : PGRES_FATAL_ERROR;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
		return 0;
	char why[256];
	snprintf(why, sizeof why, "%s",
		 res ? s->pq->result_error_message(res) : s->pq->error_message(c->conn));
	clean(why);
	int gone = server_gone(s, c, res);
	const char *state = res ? s->pq->result_error_field(res, PG_DIAG_SQLSTATE) : NULL;
	int unique = state && strcmp(state, "23505") == 0;
	int read_only = state && strcmp(state, "25006") == 0;
	if (res)
		s->pq->clear(res);
	if (gone) {
		c->broken = 1;
		return unavailable(s, op, why);
	}
	a2m_store_fail(&s->base, "%s: %s", op, why);
	if (unique)
		return A2M_INVALID_PARAMS;
	return read_only ? A2M_READ_ONLY : A2M_INTERNAL_ERROR;
}

/* Sends a statement only on a connection that is there. */
static int usable(pgstore *s, pgconn *c, const char *op)
{
	if (c->conn && !c->broken)
		return 0;
	return unavailable(s, op, "the connection was lost; it is made again at the next request");
}

/* Prepares sql under name on c. */
static int prepare(pgstore *s, pgconn *c, const char *name, const char *sql, const char *op)
{
	PGresult *r = s->pq->prepare(c->conn, name, sql, 0, NULL);
	int rc = a2m_pg_check(s, c, r, op);
	if (rc == 0)
		s->pq->clear(r);
	return rc;
}

static int execute(pgstore *s, pgconn *c, const char *name, const pgparams *p,
		   const char *op, PGresult **res)
{
	PGresult *r = s->pq->exec_prepared(c->conn, name, p ? p->n : 0, p ? p->values : NULL,
					   p ? p->lengths : NULL, p ? p->formats : NULL, 1);
	int rc = a2m_pg_check(s, c, r, op);
	*res = rc ? NULL : r;
	return rc;
}

/*
** Whether a failed statement may be sent again on a new connection: the
** connection was up before it (so it died since: the server restarted while
** it was idle), and no transaction was open on it, so the statement did
** nothing. Reconnects c when so. A statement in a transaction is never
** retried: the transaction died with the connection.
*/
static int retry(pgstore *s, pgconn *c, int was_up, int rc)
{
	if (!rc || !was_up || c->in_tx || !a2m_pg_lost(s, c))
		return 0;
	return a2m_pg_connect(s, c) == 0;
}

static int up(pgstore *s, pgconn *c)
{
	return c->conn && !c->broken && s->pq->status(c->conn) == CONNECTION_OK;
}

static int run_once(pgstore *s, pgconn *c, pg_stmt st, const pgparams *p, const char *op,
		    PGresult **res)
{
	char name[24];
	int rc;
	*res = NULL;
	if ((rc = usable(s, c, op)))
		return rc;
	snprintf(name, sizeof name, "a2m_s%d", (int)st);
	if (!(c->prepared & (1ull << st))) {
		if ((rc = prepare(s, c, name, stmt_sql[st], op)))
			return rc;
		c->prepared |= 1ull << st;
	}
	return execute(s, c, name, p, op, res);
}

int a2m_pg_run(pgstore *s, pgconn *c, pg_stmt st, const pgparams *p, const char *op,
	       PGresult **res)
{
	int was_up = up(s, c);
	int rc = run_once(s, c, st, p, op, res);
	if (retry(s, c, was_up, rc))
		rc = run_once(s, c, st, p, op, res);
	return rc;
}

static int run_named_once(pgstore *s, pgconn *c, const char *name, const char *sql,
			  const pgparams *p, const char *op, PGresult **res);
static int prepare_named(pgstore *s, pgconn *c, const char *name, const char *sql,
			 const char *op);

int a2m_pg_run_named(pgstore *s, pgconn *c, const char *name, const char *sql,
		     const pgparams *p, const char *op, PGresult **res)
{
	int was_up = up(s, c);
	int rc = run_named_once(s, c, name, sql, p, op, res);
	if (retry(s, c, was_up, rc))
		rc = run_named_once(s, c, name, sql, p, op, res);
	return rc;
}

static int run_named_once(pgstore *s, pgconn *c, const char *name, const char *sql,
			  const pgparams *p, const char *op, PGresult **res)
{
	int rc;
	*res = NULL;
	if ((rc = usable(s, c, op)) || (rc = prepare_named(s, c, name, sql, op)))
		return rc;
	return execute(s, c, name, p, op, res);
}

/* Prepares sql under name on c unless c has already. Returns 0 or fails. */
static int prepare_named(pgstore *s, pgconn *c, const char *name, const char *sql,
			 const char *op)
{
	int rc;
	size_t i;
	for (i = 0; i < c->nscans && strcmp(c->scans[i], name) != 0; i++)
		;
	if (i == c->nscans) {
		char **v = realloc(c->scans, (c->nscans + 1) * sizeof *v);
		if (!v)
			return a2m_store_fail(&s->base, "%s: out of memory", op);
		c->scans = v;
		if (!(v[c->nscans] = strdup(name)))
			return a2m_store_fail(&s->base, "%s: out of memory", op);
		if ((rc = prepare(s, c, name, sql, op))) {
			free(v[c->nscans]);
			return rc;
		}
		c->nscans++;
	}
	return 0;
}

static int exec_once(pgstore *s, pgconn *c, const char *sql, const char *op, PGresult **res)
{
	int rc;
	if (res)
		*res = NULL;
	if ((rc = usable(s, c, op)))
		return rc;
	PGresult *r = s->pq->exec(c->conn, sql);
	if ((rc = a2m_pg_check(s, c, r, op)))
		return rc;
	if (res)
		*res = r;
	else
		s->pq->clear(r);
	return 0;
}

int a2m_pg_exec(pgstore *s, pgconn *c, const char *sql, const char *op, PGresult **res)
{
	int was_up = up(s, c);
	int rc = exec_once(s, c, sql, op, res);
	if (retry(s, c, was_up, rc))
		rc = exec_once(s, c, sql, op, res);
	return rc;
}

/* ---- pipelines ------------------------------------------------------------------ */

int a2m_pg_pipeline(pgstore *s, pgconn *c, pgstep *steps, size_t n, const char *op)
{
	char name[24];
	int rc;
	for (size_t i = 0; i < n; i++)
		steps[i].res = NULL;
	if ((rc = usable(s, c, op)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		pg_stmt st = steps[i].st;
		if (st == PG_NSTMTS && steps[i].name &&
		    (rc = prepare_named(s, c, steps[i].name, steps[i].sql, op)))
			return rc;
		if (st < PG_NSTMTS && !(c->prepared & (1ull << st))) {
			snprintf(name, sizeof name, "a2m_s%d", (int)st);
			if ((rc = prepare(s, c, name, stmt_sql[st], op)))
				return rc;
			c->prepared |= 1ull << st;
		}
	}
	PGconn *k = c->conn;
	if (!s->pq->enter_pipeline_mode(k))
		return a2m_pg_check(s, c, NULL, op);
	int sent = 1;
	for (size_t i = 0; i < n && sent; i++) {
		const pgparams *p = steps[i].p;
		int np = p ? p->n : 0;
		if (steps[i].st < PG_NSTMTS || steps[i].name) {
			if (steps[i].st < PG_NSTMTS)
				snprintf(name, sizeof name, "a2m_s%d", (int)steps[i].st);
			sent = s->pq->send_query_prepared(k, steps[i].st < PG_NSTMTS ? name
							  : steps[i].name, np, p ? p->values : NULL,
							  p ? p->lengths : NULL,
							  p ? p->formats : NULL, 1);
		} else {
			sent = s->pq->send_query_params(k, steps[i].sql, np, NULL,
							p ? p->values : NULL, p ? p->lengths : NULL,
							p ? p->formats : NULL, 1);
		}
	}
	if (sent)
		sent = s->pq->pipeline_sync(k);
	/* Every statement's results, then the sync's: also after a failure. */
	rc = sent ? 0 : a2m_pg_check(s, c, NULL, op);
	for (size_t i = 0; sent && i < n; i++) {
		PGresult *r = s->pq->get_result(k);
		if (!r) {
			if (!rc)
				rc = a2m_pg_check(s, c, NULL, op);
			break;
		}
		ExecStatusType st = s->pq->result_status(r);
		if (st == PGRES_PIPELINE_ABORTED) {
			s->pq->clear(r);
		} else if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
			if (!rc)
				rc = a2m_pg_check(s, c, r, op);
			else
				s->pq->clear(r);
		} else if (steps[i].keep && !rc) {
			steps[i].res = r;
		} else {
			s->pq->clear(r);
		}
		/* The NULL that ends this statement's results. */
		while ((r = s->pq->get_result(k)) != NULL)
			s->pq->clear(r);
	}
	if (sent && !a2m_pg_lost(s, c)) {
		PGresult *r = s->pq->get_result(k);  /* PGRES_PIPELINE_SYNC */
		if (r)
			s->pq->clear(r);
	}
	if (!a2m_pg_lost(s, c))
		s->pq->exit_pipeline_mode(k);
	if (rc) {
		for (size_t i = 0; i < n; i++)
			if (steps[i].res) {
				s->pq->clear(steps[i].res);
				steps[i].res = NULL;
			}
	}
	return rc;
}

/* ---- describing a connection string -------------------------------------------- */

char *a2m_postgres_describe(const char *conninfo)
{
	static const char *const shown[] = {"host", "hostaddr", "port", "dbname", "user"};
	const char *why = NULL;
	const a2m_pq_api *pq = a2m_pq(&why);
	char out[512];
	size_t n = 0;
	if (!pq)
		return strdup("(PostgreSQL: libpq cannot be loaded)");
	char *err = NULL;
	PQconninfoOption *opts = pq->conninfo_parse(conninfo ? conninfo : "", &err);
	if (!opts) {
		if (err)
			pq->freemem(err);
		return strdup("(a connection string libpq cannot parse)");
	}
	n += (size_t)snprintf(out, sizeof out, "postgres");
	for (size_t k = 0; k < sizeof shown / sizeof *shown; k++)
		for (PQconninfoOption *o = opts; o->keyword; o++)
			if (strcmp(o->keyword, shown[k]) == 0 && o->val && *o->val &&
			    n < sizeof out)
				n += (size_t)snprintf(out + n, sizeof out - n, " %s=%s", o->keyword,
						      o->val);
	pq->conninfo_free(opts);
	return strdup(out);
}
