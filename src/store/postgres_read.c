/*
** postgres_read.c — the PostgreSQL engine's reads: by id, by (owner, key),
** by seq, scan and count over an a2m_query, and the records a server
** embedder may owe a vector.
**
** Every read goes through the calling thread's connection: its read
** bracket's snapshot when it holds one (postgres_pool.c), else the main
** connection, where a write transaction sees its own writes (the held
** inserts are written first).
**
** A scan reads pages in (created_at, seq) order, each a prepared statement
** continuing after the last row of the one before (keyset paging: no
** cursor to hold open, and a visit may write on the same connection
** between pages). Pages grow from 64 rows, so a timeline of the newest 20
** reads one small page and a full pass few large ones. Records a visit
** inserts have seqs at or above the one given out next when the scan
** began, and are left out, as store.h asks. The WHERE clause is built from
** fixed fragments with every value a parameter; each shape is prepared
** once per connection, under a name that spells the shape.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"

/*
** The connection a read uses, ready: on main outside a transaction,
** reconnected if the server came back; inside one, the held inserts
** written first so the read sees them.
*/
static int read_conn(pgstore *s, pgconn **c)
{
	*c = a2m_pg_conn(s);
	if (*c != &s->main)
		return 0;
	if (s->in_tx)
		return s->tx_failed ? A2M_INTERNAL_ERROR : a2m_pg_held_flush(s);
	return a2m_pg_ready(s, *c);
}

/* After a failed read on c: a write transaction on main can only roll back now. */
static int read_failed(pgstore *s, pgconn *c, int rc)
{
	if (c == &s->main)
		a2m_pg_tx_fail(s);
	return rc;
}

int a2m_pg_read_conn(pgstore *s, pgconn **c)
{
	return read_conn(s, c);
}

int a2m_pg_read_failed(pgstore *s, pgconn *c, int rc)
{
	return read_failed(s, c, rc);
}

int a2m_pg_fetch_one(pgstore *s, PGresult *r, a2m_record **out)
{
	int rc = 0;
	*out = NULL;
	if (s->pq->ntuples(r) > 0) {
		a2m_record *rec = a2m_record_new();
		if (!rec)
			rc = a2m_store_fail(&s->base, "read: out of memory");
		else if ((rc = a2m_pg_read_row(s, r, 0, rec)))
			free(rec);
		else
			*out = rec;
	}
	s->pq->clear(r);
	return rc;
}

static int lookup(pgstore *s, pg_stmt st, pgparams *p, const char *op, a2m_record **out)
{
	pgconn *c;
	PGresult *r;
	int rc = read_conn(s, &c);
	if (rc)
		return read_failed(s, c, rc);
	if ((rc = a2m_pg_run(s, c, st, p, op, &r)))
		return read_failed(s, c, rc);
	return a2m_pg_fetch_one(s, r, out);
}

int a2m_pg_get(a2m_store *base, const char *id, a2m_record **out)
{
	pgstore *s = (pgstore *)base;
	pgparams p;
	*out = NULL;
	if (!id)
		return 0;
	a2m_pg_params_init(&p);
	a2m_pg_param_text(&p, id);
	/*
	** In a transaction the held inserts are written first only when one
	** has the id (a2m_pg_held_for_get): a remember of records with ids
	** asks for each one before its insert, and a flush each time wrote
	** them one INSERT per record instead of PG_HELD_ROWS a statement, as
	** SQLite's get did (sqlite_pool.c, a2m_sqlite_pooled_get).
	*/
	pgconn *c = a2m_pg_conn(s);
	if (c == &s->main && s->in_tx && !s->tx_failed && !a2m_pg_held_for_get(s->held, id)) {
		PGresult *r;
		int rc = a2m_pg_run(s, c, PG_GET, &p, "get", &r);
		return rc ? read_failed(s, c, rc) : a2m_pg_fetch_one(s, r, out);
	}
	return lookup(s, PG_GET, &p, "get", out);
}

int a2m_pg_get_by_key(a2m_store *base, const char *owner, const char *key, a2m_record **out)
{
	pgparams p;
	*out = NULL;
	if (!key)
		return 0;
	a2m_pg_params_init(&p);
	a2m_pg_param_bool(&p, owner == NULL);
	a2m_pg_param_text(&p, owner ? owner : "");
	a2m_pg_param_bytea(&p, key, strlen(key));
	return lookup((pgstore *)base, PG_GET_BY_KEY, &p, "get_by_key", out);
}

/* ---- the shape of a selection ------------------------------------------------ */

enum {
	F_TIER = 1 << 0, F_TIER_NULL = 1 << 1, F_OWNER = 1 << 2, F_OWNER_NULL = 1 << 3,
	F_SESSION = 1 << 4, F_SESSION_NULL = 1 << 5, F_GROUP = 1 << 6, F_KEY = 1 << 7,
	F_KEY_UPPER = 1 << 8, F_DESC = 1 << 9, F_AFTER = 1 << 10, F_CAP = 1 << 11,
	F_CREATED_MIN = 1 << 12, F_CREATED_MAX = 1 << 13, F_BRIEF = 1 << 14
};

/*
** A brief scan's columns (store.h, a2m_query.brief): PG_COLUMNS' places,
** with constants where capacity reads nothing, so a2m_pg_read_row reads
** them; content is '' since a record always has some.
*/
#define PG_BRIEF_COLUMNS \
	"seq, id, ''::text, created_at, NULL::text, NULL::text, grp, tier, salience," \
	" accessed_at, access_count, NULL::text, session, NULL::text, 0::int8, NULL::bytea," \
	" NULL::text, NULL::text, NULL::bytea, NULL::int8, NULL::int8"

/* A selection's WHERE clause: its shape, its SQL, and its values. */
typedef struct shape {
	unsigned    mask;
	char        sql[1024];
	size_t      used;
	int         nterms, nparams;
	pgparams    p;
	char       *upper;   /* owned: key_prefix's upper bound (bytes) */
} shape;

static void put(shape *f, const char *text)
{
	size_t n = strlen(text);
	if (f->used + n < sizeof f->sql) {
		memcpy(f->sql + f->used, text, n + 1);
		f->used += n;
	}
}

/* Appends "AND <left> $k" (or the fixed condition when value is NULL and fixed). */
static void cond(shape *f, const char *left, int has_param)
{
	char num[16];
	put(f, f->nterms++ ? " AND " : " WHERE ");
	put(f, left);
	if (has_param) {
		snprintf(num, sizeof num, "$%d", ++f->nparams);
		put(f, num);
	}
}

/*
** Builds head + WHERE for q (values into f->p), with room for the paging
** conditions scan adds. Returns 0, or -1 when memory runs out.
*/
static int shape_build(const a2m_query *q, const char *head, shape *f)
{
	memset(f, 0, sizeof *f);
	a2m_pg_params_init(&f->p);
	put(f, head);
	if (q->tier) {
		f->mask |= F_TIER;
		cond(f, "tier = ", 1);
		a2m_pg_param_text(&f->p, q->tier);
	}
	if (q->by_owner) {
		if (q->owner) {
			f->mask |= F_OWNER;
			cond(f, "owner = ", 1);
			a2m_pg_param_text(&f->p, q->owner);
		} else {
			f->mask |= F_OWNER_NULL;
			cond(f, "owner IS NULL", 0);
		}
	}
	if (q->by_session) {
		if (q->session) {
			f->mask |= F_SESSION;
			cond(f, "session = ", 1);
			a2m_pg_param_text(&f->p, q->session);
		} else {
			f->mask |= F_SESSION_NULL;
			cond(f, "session IS NULL", 0);
		}
	}
	if (q->group) {
		f->mask |= F_GROUP;
		cond(f, "grp = ", 1);
		a2m_pg_param_text(&f->p, q->group);
	}
	/* Creation bounds (x-where): a range of a2m_records_created, or of the
	** tier's or session's index, whose next column is created_at. */
	if (q->created_min) {
		f->mask |= F_CREATED_MIN;
		cond(f, "created_at >= ", 1);
		a2m_pg_param_int8(&f->p, q->created_min);
	}
	if (q->created_max) {
		f->mask |= F_CREATED_MAX;
		cond(f, "created_at <= ", 1);
		a2m_pg_param_int8(&f->p, q->created_max);
	}
	if (q->key_prefix) {
		size_t ulen;
		if (a2m_store_prefix_upper(q->key_prefix, &f->upper, &ulen) != 0)
			return -1;
		f->mask |= F_KEY;
		cond(f, "key >= ", 1);
		a2m_pg_param_bytea(&f->p, q->key_prefix, strlen(q->key_prefix));
		if (f->upper) {
			f->mask |= F_KEY_UPPER;
			cond(f, "key < ", 1);
			a2m_pg_param_bytea(&f->p, f->upper, ulen);
		}
	}
	return 0;
}

static void shape_free(shape *f)
{
	free(f->upper);
}

/* ---- count ---------------------------------------------------------------------- */

/* Whether q selects by tier and/or session only: then a2m_counts answers. */
static int by_counts(const a2m_query *q)
{
	return !q->by_owner && !q->group && !q->key_prefix && !q->created_min && !q->created_max;
}

int a2m_pg_count(a2m_store *base, const a2m_query *q, int64_t *out)
{
	pgstore *s = (pgstore *)base;
	pgconn *c;
	PGresult *r;
	pgparams p;
	int rc;
	*out = 0;
	if ((rc = read_conn(s, &c)))
		return read_failed(s, c, rc);
	if (by_counts(q)) {
		pg_stmt st = PG_COUNT_ALL;
		a2m_pg_params_init(&p);
		if (q->tier) {
			a2m_pg_param_bool(&p, 0);
			a2m_pg_param_text(&p, q->tier);
			st = PG_COUNT_TIER;
		}
		if (q->by_session) {
			a2m_pg_param_bool(&p, q->session == NULL);
			a2m_pg_param_text(&p, q->session ? q->session : "");
			st = q->tier ? PG_COUNT_BUCKET : PG_COUNT_SESSION;
		}
		rc = a2m_pg_run(s, c, st, &p, "count", &r);
	} else {
		shape f;
		char name[40];
		if (shape_build(q, "SELECT count(*)::int8 FROM a2m_records", &f) != 0)
			return a2m_store_fail(base, "count: out of memory");
		snprintf(name, sizeof name, "a2m_count_%x", f.mask);
		rc = a2m_pg_run_named(s, c, name, f.sql, &f.p, "count", &r);
		shape_free(&f);
	}
	if (rc)
		return read_failed(s, c, rc);
	*out = s->pq->ntuples(r) > 0 ? a2m_pg_int8(s, r, 0, 0) : 0;
	s->pq->clear(r);
	return 0;
}

/* ---- scan ------------------------------------------------------------------------- */

#define PAGE_FIRST 64
#define PAGE_MAX   2048

int a2m_pg_scan(a2m_store *base, const a2m_query *q, a2m_record_visit visit, void *ctx)
{
	pgstore *s = (pgstore *)base;
	pgconn *c;
	shape f;
	int rc = read_conn(s, &c);
	if (rc)
		return read_failed(s, c, rc);
	/*
	** Inside a write transaction the next seq is known; in a bracket the
	** snapshot holds nothing newer; outside both the mark is read when a
	** second page may follow.
	*/
	int64_t cap = c == &s->main && s->in_tx ? s->seq_next : INT64_MAX;
	int cap_known = c != &s->main || s->in_tx;
	int desc = q->descending != 0;
	int64_t after_at = 0, after_seq = 0, page = PAGE_FIRST;
	int first = 1;
	if (shape_build(q, q->brief ? "SELECT " PG_BRIEF_COLUMNS " FROM a2m_records"
				    : "SELECT " PG_COLUMNS " FROM a2m_records", &f) != 0)
		return a2m_store_fail(base, "scan: out of memory");
	if (q->brief)
		f.mask |= F_BRIEF;  /* the statement's name spells its columns too */
	size_t base_used = f.used;
	int base_terms = f.nterms, base_params = f.nparams, base_n = f.p.n;
	unsigned base_mask = f.mask;
	for (;;) {
		char name[40], num[96];
		/* The page's own conditions and order, after the selection's. */
		f.used = base_used;
		f.sql[f.used] = '\0';
		f.nterms = base_terms;
		f.nparams = base_params;
		f.p.n = base_n;
		f.mask = base_mask | (desc ? F_DESC : 0);
		if (!first) {
			f.mask |= F_AFTER;
			put(&f, f.nterms++ ? " AND " : " WHERE ");
			snprintf(num, sizeof num, "(created_at, seq) %s ($%d, $%d)", desc ? "<" : ">",
				 f.nparams + 1, f.nparams + 2);
			f.nparams += 2;
			put(&f, num);
			a2m_pg_param_int8(&f.p, after_at);
			a2m_pg_param_int8(&f.p, after_seq);
		}
		if (cap != INT64_MAX) {
			f.mask |= F_CAP;
			cond(&f, "seq < ", 1);
			a2m_pg_param_int8(&f.p, cap);
		}
		snprintf(num, sizeof num, " ORDER BY created_at%s, seq%s LIMIT $%d",
			 desc ? " DESC" : "", desc ? " DESC" : "", ++f.nparams);
		put(&f, num);
		a2m_pg_param_int8(&f.p, page);
		if (f.used + 1 >= sizeof f.sql) {
			rc = a2m_store_fail(base, "scan: query text too long");
			break;
		}
		snprintf(name, sizeof name, "a2m_scan_%x", f.mask);
		PGresult *r;
		if ((rc = a2m_pg_run_named(s, c, name, f.sql, &f.p, "scan", &r))) {
			read_failed(s, c, rc);
			break;
		}
		int rows = s->pq->ntuples(r);
		if (!cap_known && rows == page) {
			cap_known = 1;
			pgstate st;
			if ((rc = a2m_pg_state(s, c, "scan", &st))) {
				s->pq->clear(r);
				break;
			}
			cap = st.seq + 1;
		}
		int stop = 0;
		for (int i = 0; i < rows && !rc && !stop; i++) {
			a2m_record rec;
			memset(&rec, 0, sizeof rec);
			if ((rc = a2m_pg_read_row(s, r, i, &rec)))
				break;
			after_at = rec.created_at;
			after_seq = rec.seq;
			if (rec.seq < cap) {
				int v = visit(&rec, ctx);
				if (v < 0)
					rc = v;
				else if (v > 0)
					stop = 1;
			}
			a2m_record_clear(&rec);
		}
		s->pq->clear(r);
		if (rc || stop || rows < page)
			break;
		first = 0;
		if (page < PAGE_MAX)
			page *= 2;
		/* A visit may have inserted: the next page sees those rows too. */
		if (c == &s->main && s->in_tx && (rc = a2m_pg_held_flush(s)))
			break;
	}
	shape_free(&f);
	return rc;
}

/* ---- by seq ------------------------------------------------------------------------- */

typedef struct seq_row {
	int64_t seq;
	int     row;
} seq_row;

static int by_seq(const void *a, const void *b)
{
	int64_t x = ((const seq_row *)a)->seq, y = ((const seq_row *)b)->seq;
	return (x > y) - (x < y);
}

int a2m_pg_visit_seqs(a2m_store *base, const int64_t *seqs, size_t n,
		      a2m_record_visit visit, void *ctx)
{
	pgstore *s = (pgstore *)base;
	pgconn *c;
	pgarray a;
	pgparams p;
	PGresult *r;
	int rc;
	if (n == 0)
		return 0;
	if ((rc = read_conn(s, &c)))
		return read_failed(s, c, rc);
	a2m_pg_array_begin(&a, PG_OID_INT8);
	for (size_t i = 0; i < n; i++)
		a2m_pg_array_int8(&a, seqs[i]);
	if (a2m_pg_array_end(&a) != 0)
		return a2m_store_fail(base, "visit_seqs: out of memory");
	a2m_pg_params_init(&p);
	a2m_pg_param_bytea(&p, a.buf, a.len);
	rc = a2m_pg_run(s, c, PG_BY_SEQS, &p, "visit_seqs", &r);
	a2m_pg_array_free(&a);
	if (rc)
		return read_failed(s, c, rc);
	int rows = s->pq->ntuples(r);
	seq_row *idx = malloc((size_t)(rows ? rows : 1) * sizeof *idx);
	if (!idx) {
		s->pq->clear(r);
		return a2m_store_fail(base, "visit_seqs: out of memory");
	}
	for (int i = 0; i < rows; i++)
		idx[i] = (seq_row){a2m_pg_int8(s, r, i, 0), i};
	qsort(idx, (size_t)rows, sizeof *idx, by_seq);
	/* In the order given; a seq that names no record is skipped. */
	for (size_t i = 0; i < n && !rc; i++) {
		seq_row key = {seqs[i], 0};
		seq_row *hit = bsearch(&key, idx, (size_t)rows, sizeof *idx, by_seq);
		if (!hit)
			continue;
		a2m_record rec;
		memset(&rec, 0, sizeof rec);
		if ((rc = a2m_pg_read_row(s, r, hit->row, &rec)))
			break;
		int v = visit(&rec, ctx);
		a2m_record_clear(&rec);
		if (v < 0)
			rc = v;
		else if (v > 0)
			break;
	}
	free(idx);
	s->pq->clear(r);
	return rc;
}

int a2m_pg_scan_unembedded(a2m_store *base, const char *tier, a2m_record_visit visit,
			   void *ctx)
{
	pgstore *s = (pgstore *)base;
	pgconn *c;
	int64_t after = 0;
	int rc = read_conn(s, &c);
	if (rc)
		return read_failed(s, c, rc);
	for (;;) {
		pgparams p;
		PGresult *r;
		a2m_pg_params_init(&p);
		a2m_pg_param_bool(&p, tier == NULL);
		a2m_pg_param_text(&p, tier ? tier : "");
		a2m_pg_param_int8(&p, after);
		if ((rc = a2m_pg_run(s, c, PG_UNEMBEDDED, &p, "scan_unembedded", &r)))
			return read_failed(s, c, rc);
		int rows = s->pq->ntuples(r), stop = 0;
		for (int i = 0; i < rows && !rc && !stop; i++) {
			a2m_record rec;
			memset(&rec, 0, sizeof rec);
			if ((rc = a2m_pg_read_row(s, r, i, &rec)))
				break;
			after = rec.seq;
			int v = visit(&rec, ctx);
			a2m_record_clear(&rec);
			if (v < 0)
				rc = v;
			else if (v > 0)
				stop = 1;
		}
		s->pq->clear(r);
		if (rc || stop || rows < 256)
			return rc;
	}
}
