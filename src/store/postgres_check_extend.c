/*
** postgres_check_extend.c — the PostgreSQL engine's check and repair of
** the extensions' data (postgres_check.h; the extensions are in
** docs/PROTOCOL.md, their columns and table in postgres_schema.c step 4).
** The rules are the other engines' (sqlite_check_extend.c, memory_check.c):
**
** history: every row of a2m_history belongs to a live record with a key,
** is below its live revision, ascends with the times the revisions were
** superseded, and a record keeps at most the configured number. The rows
** are read in (id, revision) order through a cursor and judged by the
** walk every engine shares (store_check.c); it reads each record by get()
** on the same connection, inside the same snapshot. A repair deletes the
** rows that break a rule (what no reader may see anyway: a gone record's,
** one at or above the live revision, the oldest past the bound).
**
** expiry: every expires_at is a time after the clock's start (NULL is
** "never"). A bad time is the record's data, reported only; a repair
** rebuilds a2m_records_expiry, the partial index the sweeps read
** (REINDEX: PostgreSQL's own amcheck says whether it needed it).
**
** dedup: every fp is the fingerprint the stack gives the record's content
** and role (o->fingerprint), never 0 (that is NULL). A repair rebuilds
** a2m_records_fp and sets each fingerprint to its content's, in one
** UPDATE over the seqs that differ.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_check.h"

#define MAX_EXAMPLES PG_CHECK_EXAMPLES

/* ---- history ---------------------------------------------------------------- */

void a2m_pg_check_history(pgcheck *k)
{
	pgstore *s = k->s;
	a2m_check_history h;
	if (a2m_pg_check_declare(k, A2M_CHECK_HISTORY, "a2m_check_history",
				 "SELECT id, revision, created_at, superseded_at FROM a2m_history"
				 " ORDER BY id, revision", "a2m_history") != 0)
		return;
	a2m_check_history_begin(&h, &s->base, k->o);
	for (int done = 0; !done;) {
		PGresult *r = a2m_pg_check_fetch(k, A2M_CHECK_HISTORY, "a2m_check_history", 1,
						 "a2m_history");
		if (!r) {
			h.failed = 1;
			break;
		}
		int rows = s->pq->ntuples(r);
		done = rows == 0;
		for (int i = 0; i < rows && !done; i++) {
			a2m_revision rev;
			memset(&rev, 0, sizeof rev);
			rev.id = s->pq->getvalue(r, i, 0);
			rev.revision = a2m_pg_int8(s, r, i, 1);
			rev.created_at = a2m_pg_int8(s, r, i, 2);
			rev.superseded_at = a2m_pg_int8(s, r, i, 3);
			done = a2m_check_history_visit(&rev, &h) != 0;
		}
		s->pq->clear(r);
	}
	a2m_check_history_end(&h);
}

int a2m_pg_repair_history(pgcheck *k)
{
	char sql[640];
	int n = snprintf(sql, sizeof sql,
			 "DELETE FROM a2m_history h WHERE NOT EXISTS (SELECT 1 FROM a2m_records r"
			 " WHERE r.id = h.id AND r.key IS NOT NULL AND r.revision > h.revision);");
	if (k->o->history_keep)
		snprintf(sql + n, sizeof sql - (size_t)n,
			 "DELETE FROM a2m_history h USING (SELECT id, revision, row_number() OVER"
			 " (PARTITION BY id ORDER BY revision DESC) AS newer FROM a2m_history) x"
			 " WHERE h.id = x.id AND h.revision = x.revision AND x.newer > %zu",
			 k->o->history_keep);
	return a2m_pg_exec(k->s, &k->s->main, sql, "repair history", NULL);
}

/* ---- expiry -------------------------------------------------------------------- */

/* A bad expiry: not after the clock's start (NULL is "never"). */
#define BAD_TIME "expires_at <= 0"

void a2m_pg_check_expiry(pgcheck *k)
{
	pgstore *s = k->s;
	PGresult *r = a2m_pg_check_query(k, A2M_CHECK_EXPIRY, "SELECT count(*),"
					 " count(*) FILTER (WHERE " BAD_TIME "),"
					 " min(expires_at) FILTER (WHERE NOT " BAD_TIME ")"
					 " FROM a2m_records WHERE expires_at IS NOT NULL",
					 "the records' expiry");
	if (!r)
		return;
	int64_t n = a2m_pg_check_num(k, r, 0, 0), bad = a2m_pg_check_num(k, r, 0, 1);
	int64_t soonest = a2m_pg_check_num(k, r, 0, 2);
	s->pq->clear(r);
	if (!bad) {
		a2m_check_say_expiry(k->o, n, soonest, "");
		return;
	}
	r = a2m_pg_check_query(k, A2M_CHECK_EXPIRY, "SELECT id, expires_at FROM a2m_records"
			       " WHERE expires_at IS NOT NULL AND " BAD_TIME " ORDER BY seq LIMIT 8",
			       "the records' expiry");
	for (int i = 0; r && i < s->pq->ntuples(r); i++) {
		char q[A2M_CHECK_QUOTED];
		const char *id = s->pq->getvalue(r, i, 0);
		a2m_check_say(k->o, A2M_CHECK_EXPIRY, 1, "record %s: expires at %s, not a time after "
			      "the clock's start (the record's data: not repairable)",
			      a2m_check_quote(id, strlen(id), q, sizeof q), s->pq->getvalue(r, i, 1));
	}
	if (r)
		s->pq->clear(r);
	if (bad > MAX_EXAMPLES)
		a2m_check_say(k->o, A2M_CHECK_EXPIRY, 1, "%lld bad values in all", (long long)bad);
}

/* ---- fingerprints ----------------------------------------------------------------- */

/*
** Walks every fingerprinted record through a cursor: with report, each
** kept fingerprint judged against its content's (a2m_check_fingerprint,
** counting into *problems); with collect, the seqs whose fingerprint is
** not their content's and the right ones gathered into seqs and fps.
** Returns 0, or -1 after a finding (a read failed).
*/
static int walk_fingerprints(pgcheck *k, int collect, size_t *problems, pgarray *seqs,
			     pgarray *fps)
{
	pgstore *s = k->s;
	const a2m_check_options *o = k->o;
	if (a2m_pg_check_declare(k, A2M_CHECK_DEDUP, "a2m_check_fp", "SELECT seq, id, content,"
				 " role, fp FROM a2m_records WHERE fp IS NOT NULL", "the records") != 0)
		return -1;
	for (;;) {
		PGresult *r = a2m_pg_check_fetch(k, A2M_CHECK_DEDUP, "a2m_check_fp", 1, "the records");
		if (!r)
			return -1;
		int rows = s->pq->ntuples(r);
		for (int i = 0; i < rows; i++) {
			const char *id = s->pq->getvalue(r, i, 1), *content = s->pq->getvalue(r, i, 2);
			const char *role = a2m_pg_isnull(s, r, i, 3) ? NULL : s->pq->getvalue(r, i, 3);
			uint64_t kept = (uint64_t)a2m_pg_int8(s, r, i, 4);
			if (!collect) {
				a2m_check_fingerprint(o, id, content, role, kept, problems);
				continue;
			}
			uint64_t want = o->fingerprint(content, role);
			if (want == kept)
				continue;
			a2m_pg_array_int8(seqs, a2m_pg_int8(s, r, i, 0));
			a2m_pg_array_int8(fps, (int64_t)want);
		}
		s->pq->clear(r);
		if (!rows)
			break;
	}
	PGresult *r = a2m_pg_check_query(k, A2M_CHECK_DEDUP, "CLOSE a2m_check_fp", "the records");
	if (r)
		s->pq->clear(r);
	return r ? 0 : -1;
}

void a2m_pg_check_dedup(pgcheck *k)
{
	pgstore *s = k->s;
	const a2m_check_options *o = k->o;
	PGresult *r = a2m_pg_check_query(k, A2M_CHECK_DEDUP, "SELECT count(*),"
					 " count(*) FILTER (WHERE fp = 0) FROM a2m_records"
					 " WHERE fp IS NOT NULL", "the records' fingerprints");
	if (!r)
		return;
	int64_t n = a2m_pg_check_num(k, r, 0, 0), zero = a2m_pg_check_num(k, r, 0, 1);
	s->pq->clear(r);
	if (zero)
		a2m_check_say(o, A2M_CHECK_DEDUP, 1, "%lld record%s fingerprint 0, not a fingerprint "
			      "(0 is none)", (long long)zero, zero == 1 ? " has" : "s have");
	size_t problems = 0;
	if (o->fingerprint && walk_fingerprints(k, 0, &problems, NULL, NULL) != 0)
		return;
	if (problems > MAX_EXAMPLES)
		a2m_check_say(o, A2M_CHECK_DEDUP, 1, "%zu records whose fingerprint is not their "
			      "content's", problems);
	if (!zero && !problems)
		a2m_check_say(o, A2M_CHECK_DEDUP, 0, "%lld fingerprinted record%s%s", (long long)n,
			      n == 1 ? "" : "s", o->fingerprint ? ", each its content's" : "");
}

int a2m_pg_repair_dedup(pgcheck *k)
{
	pgstore *s = k->s;
	pgarray seqs, fps;
	if (!k->o->fingerprint)
		return 0;
	a2m_pg_array_begin(&seqs, PG_OID_INT8);
	a2m_pg_array_begin(&fps, PG_OID_INT8);
	int rc = walk_fingerprints(k, 1, NULL, &seqs, &fps) != 0 ? A2M_INTERNAL_ERROR : 0;
	int oom = a2m_pg_array_end(&seqs) | a2m_pg_array_end(&fps);
	if (!rc && oom)
		rc = a2m_store_fail(&s->base, "repair dedup: out of memory");
	if (!rc && seqs.n) {
		pgparams p;
		PGresult *r;
		a2m_pg_params_init(&p);
		a2m_pg_param_bytea(&p, seqs.buf, seqs.len);
		a2m_pg_param_bytea(&p, fps.buf, fps.len);
		rc = a2m_pg_run_named(s, &s->main, "a2m_repair_fp", "UPDATE a2m_records r"
				      " SET fp = nullif(u.fp, 0) FROM unnest($1::int8[], $2::int8[])"
				      " AS u(seq, fp) WHERE r.seq = u.seq", &p, "repair dedup", &r);
		if (!rc)
			s->pq->clear(r);
	}
	a2m_pg_array_free(&seqs);
	a2m_pg_array_free(&fps);
	return rc;
}
