/*
** postgres.c — the PostgreSQL storage engine (A2M_ENGINE_POSTGRES): open
** and close, the writes (insert, update, remove, touch) with the term
** index and vector rows they keep, and the ops table. The rest of the
** engine is listed in postgres_internal.h.
**
** It must behave exactly like memory.c and sqlite.c as far as store.h can
** observe: every behavioural test runs against all three. What it adds is
** that several a2m servers may share one deployment (a database schema)
** and behave as one memory: writes serialise on the deployment's write
** lock (postgres_txn.c), everything a server derives from the store is
** keyed on a version every commit moves (store.h, version), and the event
** log lives in the database (postgres_events.c), with other servers'
** commits heard as they happen (postgres_listen.c). docs/POSTGRES.md is
** the operator's view.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"
#include "util/hash.h"
#include "util/random.h"

/* ---- writes ---------------------------------------------------------------- */

static int refuse_read_only(pgstore *s, const char *op)
{
	if (!s->base.read_only)
		return 0;
	a2m_store_fail(&s->base, "%s: the store is read-only", op);
	return A2M_READ_ONLY;
}

/*
** A write in this transaction set salience: its commit raises the state
** row's bound when it is above (store.h, salience_bound). NaN raises
** nothing, as in the other engines.
*/
static void raise_bound(pgstore *s, double salience)
{
	if (salience > s->tx_salience) {
		s->tx_salience = salience;
		s->tx_raised = 1;
	}
}

/*
** Inserts are held and written many per statement (postgres_held.c); the
** seq is given here, from the deployment's mark read under the write lock.
*/
static int pg_insert(a2m_store *base, a2m_record *rec)
{
	pgstore *s = (pgstore *)base;
	s->stamp++;
	a2m_doc_terms dt;
	int own, rc;
	if ((rc = refuse_read_only(s, "insert")) ||
	    (rc = a2m_store_check_record(base, rec, "insert")))
		return rc;
	if ((rc = a2m_pg_autocommit_begin(s, &own)))
		return rc;
	int64_t seq = s->seq_next;
	a2m_record r = *rec;
	r.seq = seq;
	if (!r.embedding)
		r.dims = 0;
	if (!(rc = a2m_pg_index_analyze(s, rec->content, &dt)))
		rc = a2m_pg_index_apply(s, seq, &dt, 1);
	a2m_pg_index_release(s, &dt);
	if (!rc)
		rc = a2m_pg_held_add(s, &r);
	if (!rc) {
		s->seq_next++;
		s->wrote = 1;
		raise_bound(s, rec->salience);
		a2m_pg_vectors_put(s->vectors, &r);
	}
	/* On its own, refused at its commit: then it got no seq either. */
	if (!(rc = a2m_pg_autocommit_end(s, own, rc)))
		rec->seq = seq;
	return rc;
}

/* The stored row of id before a write: seq, content. *found 0 when there is none. */
static int old_row(pgstore *s, const char *id, int64_t *seq, char **content, int *found)
{
	pgparams p;
	PGresult *r;
	int oom = 0;
	*found = 0;
	*content = NULL;
	a2m_pg_params_init(&p);
	a2m_pg_param_text(&p, id);
	int rc = a2m_pg_run(s, &s->main, PG_OLD, &p, "write", &r);
	if (rc)
		return rc;
	if (s->pq->ntuples(r) > 0) {
		*found = 1;
		*seq = a2m_pg_int8(s, r, 0, 0);
		*content = a2m_pg_text(s, r, 0, 1, &oom);
	}
	s->pq->clear(r);
	return oom ? a2m_store_fail(&s->base, "write: out of memory") : 0;
}

/* Buffers the postings change of content old → new (NULL: removed) for seq. */
static int reindex(pgstore *s, int64_t seq, const char *old, const char *now)
{
	a2m_doc_terms a, b;
	int rc = 0;
	memset(&b, 0, sizeof b);
	if (!s->index || (now && strcmp(old, now) == 0))
		return 0;
	if (!(rc = a2m_pg_index_analyze(s, old, &a)))
		rc = a2m_pg_index_apply(s, seq, &a, -1);
	a2m_pg_index_release(s, &a);
	if (!rc && now && !(rc = a2m_pg_index_analyze(s, now, &b)))
		rc = a2m_pg_index_apply(s, seq, &b, 1);
	a2m_pg_index_release(s, &b);
	return rc;
}

static int pg_update(a2m_store *base, const a2m_record *rec)
{
	pgstore *s = (pgstore *)base;
	s->stamp++;
	pgparams p;
	PGresult *r = NULL;
	char *old = NULL, *scratch = NULL;
	int64_t seq = 0;
	int own, found = 0, rc;
	if ((rc = refuse_read_only(s, "update")) ||
	    (rc = a2m_store_check_record(base, rec, "update")))
		return rc;
	if ((rc = a2m_pg_autocommit_begin(s, &own)))
		return rc;
	if (!(rc = a2m_pg_held_flush(s)) && !(rc = old_row(s, rec->id, &seq, &old, &found)) &&
	    !found) {
		a2m_store_fail(base, "update: no record \"%s\"", rec->id);
		rc = A2M_UNKNOWN_RECORD;
	}
	if (!rc)
		rc = reindex(s, seq, old, rec->content);
	a2m_pg_params_init(&p);
	if (!rc && a2m_pg_bind_record(&p, rec, &scratch) != 0)
		rc = a2m_store_fail(base, "update: out of memory");
	if (!rc && !(rc = a2m_pg_run(s, &s->main, PG_UPDATE, &p, "update", &r))) {
		int changed = atoi(s->pq->cmd_tuples(r)) > 0;
		s->pq->clear(r);
		if (!changed) {
			/* The record is there (old_row): its key is another's. */
			a2m_store_fail(base, "update: key \"%s\" is already in use for this owner",
				       rec->key ? rec->key : "");
			free(scratch);
			free(old);
			return own ? a2m_pg_autocommit_end(s, own, A2M_INVALID_PARAMS)
				   : A2M_INVALID_PARAMS;
		}
		s->wrote = 1;
		raise_bound(s, rec->salience);
		a2m_record moved = *rec;
		moved.seq = seq;
		if (!moved.embedding)
			moved.dims = 0;
		a2m_pg_vectors_put(s->vectors, &moved);
	}
	free(scratch);
	free(old);
	/* A missing record changes nothing: the transaction stays usable (a
	** refused key, above, too: the UPDATE tests it instead of failing). */
	if (rc == A2M_UNKNOWN_RECORD && !own)
		return rc;
	return a2m_pg_autocommit_end(s, own, rc);
}

static int pg_remove(a2m_store *base, const char *id, int *removed)
{
	pgstore *s = (pgstore *)base;
	s->stamp++;
	pgparams p;
	PGresult *r;
	char *old = NULL;
	int64_t seq = 0;
	int own, found = 0, rc;
	*removed = 0;
	if ((rc = refuse_read_only(s, "remove")) || !id)
		return rc;
	if ((rc = a2m_pg_autocommit_begin(s, &own)))
		return rc;
	if (!(rc = a2m_pg_held_flush(s)) && !(rc = old_row(s, id, &seq, &old, &found)) && found)
		rc = reindex(s, seq, old, NULL);
	if (!rc && found) {
		a2m_pg_params_init(&p);
		a2m_pg_param_text(&p, id);
		if (!(rc = a2m_pg_run(s, &s->main, PG_REMOVE, &p, "remove", &r))) {
			*removed = atoi(s->pq->cmd_tuples(r)) > 0;
			s->pq->clear(r);
			s->wrote = 1;
			a2m_pg_vectors_remove(s->vectors, seq);
		}
	}
	free(old);
	rc = a2m_pg_autocommit_end(s, own, rc);
	if (rc)
		*removed = 0;
	return rc;
}

/*
** An increment of the row as it is now (store.h): never a whole-record
** write. Held with the inserts, so a transaction's touches are one
** statement (postgres_held.c), written before anything that could see them.
*/
static int pg_touch(a2m_store *base, int64_t seq, int64_t add, int64_t at)
{
	pgstore *s = (pgstore *)base;
	s->stamp++;
	int own, rc;
	if ((rc = refuse_read_only(s, "touch")))
		return rc;
	if ((rc = a2m_pg_autocommit_begin(s, &own)))
		return rc;
	if (!(rc = a2m_pg_held_touch(s, seq, add, at)))
		s->wrote = 1;
	return a2m_pg_autocommit_end(s, own, rc);
}

/*
** A tier move (store.h): tier and salience alone, one UPDATE, where
** a2m_store_move_whole reads the record, then its old row, then writes
** every column (three round trips, the content compared to see whether
** the index moves). The counts' trigger moves its count (postgres_schema.c)
** as it does for any UPDATE. The whole update instead once the vector
** cache is built: it keeps each vector's tier.
*/
static int pg_move(a2m_store *base, const a2m_record *rec, const char *to, double salience,
		   int *moved)
{
	pgstore *s = (pgstore *)base;
	pgparams p;
	PGresult *r;
	int own, rc;
	*moved = 0;
	if (a2m_pg_vectors_built(s->vectors))
		return a2m_store_move_whole(base, rec, to, salience, moved);
	s->stamp++;
	if ((rc = refuse_read_only(s, "move")))
		return rc;
	if ((rc = a2m_pg_autocommit_begin(s, &own)))
		return rc;
	/* The record may be one of the held inserts. */
	if (!(rc = a2m_pg_held_flush(s))) {
		a2m_pg_params_init(&p);
		a2m_pg_param_int8(&p, rec->seq);
		a2m_pg_param_text(&p, rec->id);
		a2m_pg_param_text(&p, rec->tier);
		a2m_pg_param_text(&p, to);
		a2m_pg_param_float8(&p, salience);
		a2m_pg_param_text(&p, rec->session);
		if (!(rc = a2m_pg_run(s, &s->main, PG_MOVE, &p, "move", &r))) {
			*moved = atoi(s->pq->cmd_tuples(r)) > 0;
			s->pq->clear(r);
			if (*moved) {
				s->wrote = 1;
				raise_bound(s, salience);
			}
		}
	}
	rc = a2m_pg_autocommit_end(s, own, rc);
	if (rc)
		*moved = 0;
	return rc;
}

/*
** The bound as the thread's read bracket's snapshot read it with the state
** row; inside the exclusive holder's write transaction (no bracket: store.h,
** read_begin), as its begin read it and its writes raised it; else unknown.
*/
static int pg_salience_bound(a2m_store *base, double *max)
{
	pgstore *s = (pgstore *)base;
	*max = 0;
	if (a2m_pg_in_bracket(s)) {
		pgconn *c = a2m_pg_conn(s);
		if (!c->salience_known)
			return 0;
		*max = c->salience_max;
		return 1;
	}
	if (!s->in_tx)
		return 0;
	*max = s->tx_salience;
	return 1;
}

static uint64_t pg_stamp(a2m_store *base)
{
	return ((pgstore *)base)->stamp;
}

static int pg_index_attach(a2m_store *base, a2m_indexer *ix)
{
	return a2m_pg_index_attach((pgstore *)base, ix);
}

/* ---- the shared parts: the version -------------------------------------------------- */

static int read_version(pgstore *s, pgconn *c, void *ctx)
{
	pgstate st;
	int rc = a2m_pg_state(s, c, "version", &st);
	*(uint64_t *)ctx = st.version;
	return rc;
}

uint64_t a2m_pg_version(a2m_store *base)
{
	pgstore *s = (pgstore *)base;
	uint64_t v = 0;
	/* In a bracket: its snapshot's (no second connection taken meanwhile). */
	if (a2m_pg_in_bracket(s))
		return a2m_pg_conn(s)->version + 1;
	if (a2m_pg_with_conn(s, read_version, &v) != 0)
		return 0;
	/* 0 means "cannot tell"; a deployment's first version is 0 too. */
	return v + 1;
}

/* ---- open and close ------------------------------------------------------------------ */

/*
** Rolls back an open transaction (never commits: close is also the path of
** a caller that gave up half way), stops the listener, closes everything.
*/
static void pg_close(a2m_store *base)
{
	pgstore *s = (pgstore *)base;
	if (!s)
		return;
	a2m_pg_listen_free(s->listen);
	s->listen = NULL;
	if (s->pool)
		a2m_pg_read_end(base);
	a2m_pg_rollback(base);
	a2m_pg_pool_free(s, s->pool);
	a2m_pg_disconnect(s, &s->main);
	a2m_pcache_free(s->main.pcache);
	a2m_pg_batches_free(s->main.batches);
	free(s->fold.cursor);
	a2m_pg_held_free(s->held);
	a2m_pg_index_free(s->index);
	a2m_pg_vectors_free(s->vectors);
	if (s->conninfo) {
		/* It may hold a password: not left in freed memory. */
		memset(s->conninfo, 0, strlen(s->conninfo));
		free(s->conninfo);
	}
	free(s->where);
	free(s->schema);
	free(s);
}

/*
** Every op here but insert, touch, begin, begin_relaxed, rollback, close
** and the brackets writes the held inserts and touches before its first
** statement.
*/
static const a2m_store_ops postgres_ops = {
	.engine     = "postgres",
	.begin      = a2m_pg_begin,
	.begin_relaxed = a2m_pg_begin_relaxed,
	.commit     = a2m_pg_commit,
	.rollback   = a2m_pg_rollback,
	.read_begin = a2m_pg_read_begin,
	.read_end   = a2m_pg_read_end,
	.get        = a2m_pg_get,
	.get_by_key = a2m_pg_get_by_key,
	.insert     = pg_insert,
	.update     = pg_update,
	.remove     = pg_remove,
	.move       = pg_move,
	.scan       = a2m_pg_scan,
	.count      = a2m_pg_count,
	.meta_get   = a2m_pg_meta_get,
	.meta_set   = a2m_pg_meta_set,
	.close      = pg_close,
	.visit_seqs = a2m_pg_visit_seqs,
	.touch      = pg_touch,
	.index_attach   = pg_index_attach,
	.index_stats    = a2m_pg_index_stats,
	.index_postings = a2m_pg_index_postings,
	.index_postings_view = a2m_pg_index_view,
	.vector_search  = a2m_pg_vectors_search,
	.scan_unembedded = a2m_pg_scan_unembedded,
	.version        = a2m_pg_version,
	.watch          = a2m_pg_watch,
	.events_append  = a2m_pg_events_append,
	.events_read    = a2m_pg_events_read,
	.history_put    = a2m_pg_history_put,
	.history_visit  = a2m_pg_history_visit,
	.next_expiry    = a2m_pg_next_expiry,
	.scan_expired   = a2m_pg_scan_expired,
	.by_fingerprint = a2m_pg_by_fingerprint,
	.check          = a2m_pg_store_check,
	.repair         = a2m_pg_store_repair,
	.stamp          = pg_stamp,
	.salience_bound = pg_salience_bound,
};

/*
** The first schema search_path names (quotes removed), for a deployment
** whose schema does not exist yet: it becomes s->schema, created at
** migration. Fails when there is none ("$user" does not count).
*/
static int first_of_search_path(pgstore *s, char *out, size_t size)
{
	PGresult *r;
	int rc = a2m_pg_exec(s, &s->main, "SELECT current_setting('search_path')", "open", &r);
	if (rc)
		return rc;
	const char *p = s->pq->ntuples(r) > 0 ? s->pq->getvalue(r, 0, 0) : "";
	size_t n = 0;
	while (*p == ' ')
		p++;
	int quoted = *p == '"';
	if (quoted)
		p++;
	for (; *p && n + 1 < size; p++) {
		if (quoted && *p == '"') {
			if (p[1] != '"')
				break;
			p++;
		} else if (!quoted && (*p == ',' || *p == ' ')) {
			break;
		}
		out[n++] = *p;
	}
	out[n] = '\0';
	s->pq->clear(r);
	if (!n || strcmp(out, "$user") == 0)
		return a2m_store_fail(&s->base, "PostgreSQL at %s: no schema to keep the"
				      " deployment in (search_path names none)", s->where);
	if (!(s->schema = strdup(out)))
		return a2m_store_fail(&s->base, "open: out of memory");
	return 0;
}

/*
** The deployment's name (its schema), and what is derived from it: the
** advisory lock keys and the notification channel.
*/
static int name_deployment(pgstore *s)
{
	char schema[256];
	if (s->schema) {
		snprintf(schema, sizeof schema, "%s", s->schema);
	} else {
		PGresult *r;
		int rc = a2m_pg_exec(s, &s->main, "SELECT current_schema()", "open", &r);
		if (rc)
			return rc;
		int none = s->pq->ntuples(r) < 1 || s->pq->getisnull(r, 0, 0);
		if (!none)
			snprintf(schema, sizeof schema, "%s", s->pq->getvalue(r, 0, 0));
		s->pq->clear(r);
		/* search_path names a schema that does not exist yet: made at migration. */
		if (none && (rc = first_of_search_path(s, schema, sizeof schema)) != 0)
			return rc;
	}
	uint32_t h = (uint32_t)a2m_hash_bytes(schema, strlen(schema));
	/* 'a2m' in the first key: other users of advisory locks pick theirs. */
	s->lock_class = 0x61326d;
	s->lock_write = (int32_t)(h & 0x7fffffff);
	s->lock_schema = (int32_t)((h ^ 0x5bd1e995u) & 0x7fffffff);
	snprintf(s->channel, sizeof s->channel, "a2m_%08x", h);
	return 0;
}

/* The index of records owed a server vector, when asked for (read-write). */
static int unembedded_index(pgstore *s, int want)
{
	if (!want || s->base.read_only)
		return 0;
	s->unembedded_index = 1;
	/* Spelled as PG_UNEMBEDDED's WHERE, so that query is this index. */
	return a2m_pg_exec(s, &s->main,
			   "CREATE INDEX IF NOT EXISTS a2m_records_unembedded ON a2m_records"
			   " ((tier IS NULL), coalesce(tier, ''), seq)"
			   " WHERE embedding IS NULL AND gen_embedding IS NULL"
			   " AND btrim(content, E' \\t\\n\\013\\f\\r') <> ''",
			   "open", NULL);
}

int a2m_store_postgres_open(const char *conninfo, const a2m_postgres_options *opt,
			    a2m_store **out, char *err, size_t errlen)
{
	static const a2m_postgres_options defaults;
	const char *why = NULL;
	*out = NULL;
	if (!opt)
		opt = &defaults;
	const a2m_pq_api *pq = a2m_pq(&why);
	if (!pq) {
		if (err && errlen)
			snprintf(err, errlen, "PostgreSQL: %s (install libpq5)", why);
		return A2M_INTERNAL_ERROR;
	}
	pgstore *s = calloc(1, sizeof *s);
	if (!s) {
		if (err && errlen)
			snprintf(err, errlen, "postgres store: out of memory");
		return A2M_INTERNAL_ERROR;
	}
	s->base.ops = &postgres_ops;
	s->base.read_only = opt->read_only != 0;
	s->pq = pq;
	atomic_init(&s->version_seen, 0);
	unsigned char raw[8];
	a2m_random_fill(raw, sizeof raw);
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(s->origin + 2 * i, 3, "%02x", raw[i]);
	s->conninfo = strdup(conninfo ? conninfo : "");
	s->where = a2m_postgres_describe(conninfo ? conninfo : "");
	if (opt->schema && *opt->schema)
		s->schema = strdup(opt->schema);
	s->held = a2m_pg_held_new();
	s->vectors = a2m_pg_vectors_new();
	s->pool = a2m_pg_pool_new();
	int rc = A2M_INTERNAL_ERROR;
	if (!s->conninfo || !s->where || (opt->schema && *opt->schema && !s->schema) ||
	    !s->held || !s->vectors || !s->pool) {
		a2m_store_fail(&s->base, "postgres store: out of memory");
		goto fail;
	}
	if ((rc = a2m_pg_connect(s, &s->main)) || (rc = name_deployment(s)) ||
	    (rc = a2m_pg_migrate(s, s->base.read_only)) ||
	    (rc = unembedded_index(s, opt->unembedded_index)))
		goto fail;
	*out = &s->base;
	return 0;
fail:
	if (err && errlen)
		snprintf(err, errlen, "%s", s->base.errmsg);
	pg_close(&s->base);
	return rc ? rc : A2M_INTERNAL_ERROR;
}

/* ---- throw-away deployments -------------------------------------------------------------- */

int a2m_store_postgres_drop(const char *conninfo, const char *schema, char *err, size_t errlen)
{
	const char *why = NULL;
	const a2m_pq_api *pq = a2m_pq(&why);
	pgstore s;
	char sql[300];
	int rc;
	if (!pq) {
		snprintf(err, errlen, "PostgreSQL: %s", why);
		return A2M_INTERNAL_ERROR;
	}
	for (const char *p = schema; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_')) {
			snprintf(err, errlen, "drop: '%s' is not a plain schema name", schema);
			return A2M_INVALID_PARAMS;
		}
	memset(&s, 0, sizeof s);
	s.pq = pq;
	s.conninfo = (char *)conninfo;
	s.where = a2m_postgres_describe(conninfo);
	snprintf(sql, sizeof sql, "SET client_min_messages = warning;"
		 " DROP SCHEMA IF EXISTS \"%s\" CASCADE", schema);
	if (!(rc = a2m_pg_connect(&s, &s.main)))
		rc = a2m_pg_exec(&s, &s.main, sql, "drop", NULL);
	a2m_pg_disconnect(&s, &s.main);
	free(s.where);
	if (rc)
		snprintf(err, errlen, "%s", s.base.errmsg);
	return rc;
}

char *a2m_postgres_with_schema(const char *conninfo, const char *schema)
{
	for (const char *p = schema; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return NULL;
	size_t n = strlen(conninfo) + strlen(schema) + 48;
	char *out = malloc(n);
	if (!out)
		return NULL;
	if (strncmp(conninfo, "postgres://", 11) == 0 || strncmp(conninfo, "postgresql://", 13) == 0)
		snprintf(out, n, "%s%soptions=-csearch_path%%3D%s", conninfo,
			 strchr(conninfo, '?') ? "&" : "?", schema);
	else
		snprintf(out, n, "%s options='-csearch_path=%s'", conninfo, schema);
	return out;
}
