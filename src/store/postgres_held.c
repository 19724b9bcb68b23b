/*
** postgres_held.c — a PostgreSQL write transaction's inserts, held (copied)
** and written PG_HELD_ROWS rows per INSERT statement: a batched remember of
** 500 records is 8 statements instead of 500 round trips. Its touches
** (recall's access counts, store.h touch) are held the same way and written
** after the inserts in one UPDATE over arrays, however many: the touch
** buffer of a busy server (tens of thousands of records a second) was a
** statement per record.
**
** Every op of the engine but insert, touch, begin, rollback and close
** writes what is held before its first statement (reads through read_conn, the writes
** and commit directly), so each sees, and acts on, every insert before it.
** A refused insert is therefore refused at a later op of the transaction or
** at its commit, as store.h allows, and the transaction can only be rolled
** back.
**
** Each INSERT says ON CONFLICT (id) DO NOTHING RETURNING seq: a client id
** already stored is the one collision the write lock cannot rule out for a
** writer that went around it, and it must never become a second record
** (spec §3.2, DECISIONS 024). The row count returned tells it: a row that
** was not written is refused with A2M_INVALID_PARAMS, like a taken id on
** the other engines, and nothing of the transaction lands. A taken
** (owner, key) is a unique violation (A2M_INVALID_PARAMS too).
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"

/* One touch held (store.h, touch): an increment of a row. */
typedef struct held_touch {
	int64_t seq, add, at;
} held_touch;

struct a2m_pg_held {
	a2m_record *v;
	size_t      n, cap;
	held_touch *t;          /* touches, in the order they came */
	size_t      nt, tcap;
};


a2m_pg_held *a2m_pg_held_new(void)
{
	return calloc(1, sizeof(a2m_pg_held));
}

void a2m_pg_held_drop(a2m_pg_held *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++)
		a2m_record_clear(&h->v[i]);
	h->n = 0;
	h->nt = 0;
}

void a2m_pg_held_free(a2m_pg_held *h)
{
	if (!h)
		return;
	a2m_pg_held_drop(h);
	free(h->v);
	free(h->t);
	free(h);
}

int a2m_pg_held_has(const a2m_pg_held *h, const char *id)
{
	for (size_t i = 0; h && i < h->n; i++)
		if (strcmp(h->v[i].id, id) == 0)
			return 1;
	return 0;
}

int a2m_pg_held_add(pgstore *s, const a2m_record *rec)
{
	a2m_pg_held *h = s->held;
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : PG_HELD_ROWS;
		a2m_record *v = realloc(h->v, cap * sizeof *v);
		if (!v)
			return a2m_store_fail(&s->base, "insert: out of memory");
		h->v = v;
		h->cap = cap;
	}
	if (a2m_record_copy(&h->v[h->n], rec) != 0)
		return a2m_store_fail(&s->base, "insert: out of memory");
	h->n++;
	return h->n >= PG_HELD_ROWS ? a2m_pg_held_flush(s) : 0;
}

/* The INSERT of k rows: "a2m_ins<k>", PG_NCOLUMNS parameters per row. */
static char *make_insert_sql(size_t k)
{
	static const char head[] = "INSERT INTO a2m_records (" PG_COLUMNS ") VALUES ";
	static const char tail[] = " ON CONFLICT (id) DO NOTHING RETURNING seq";
	size_t cap = sizeof head + sizeof tail + k * (PG_NCOLUMNS * 7 + 4);
	char *sql = malloc(cap);
	if (!sql)
		return NULL;
	size_t n = (size_t)snprintf(sql, cap, "%s", head);
	int param = 1;
	for (size_t r = 0; r < k; r++) {
		n += (size_t)snprintf(sql + n, cap - n, "%s(", r ? ", " : "");
		for (int c = 0; c < PG_NCOLUMNS; c++)
			n += (size_t)snprintf(sql + n, cap - n, "%s$%d", c ? ", " : "", param++);
		n += (size_t)snprintf(sql + n, cap - n, ")");
	}
	snprintf(sql + n, cap - n, "%s", tail);
	return sql;
}

/*
** The INSERT of k rows, made once per process (every connection prepares
** the same text). NULL when memory runs out.
*/
static const char *insert_sql(size_t k)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static char *made[PG_HELD_ROWS + 1];
	pthread_mutex_lock(&mu);
	if (!made[k])
		made[k] = make_insert_sql(k);
	const char *sql = made[k];
	pthread_mutex_unlock(&mu);
	return sql;
}

/* Writes rows [at, at + k) of what is held in one statement. */
static int write_rows(pgstore *s, size_t at, size_t k)
{
	a2m_pg_held *h = s->held;
	pgparams p;
	char **scratch = calloc(k, sizeof *scratch);
	char name[24];
	int rc = 0;
	if (!scratch || a2m_pg_params_alloc(&p, (int)k * PG_NCOLUMNS) != 0) {
		free(scratch);
		return a2m_store_fail(&s->base, "insert: out of memory");
	}
	for (size_t r = 0; r < k && !rc; r++) {
		a2m_pg_param_int8(&p, h->v[at + r].seq);
		if (a2m_pg_bind_record(&p, &h->v[at + r], &scratch[r]) != 0)
			rc = a2m_store_fail(&s->base, "insert: out of memory");
	}
	const char *sql = rc ? NULL : insert_sql(k);
	if (!rc && !sql)
		rc = a2m_store_fail(&s->base, "insert: out of memory");
	PGresult *res = NULL;
	if (!rc) {
		snprintf(name, sizeof name, "a2m_ins%zu", k);
		rc = a2m_pg_run_named(s, &s->main, name, sql, &p, "insert", &res);
	}
	if (!rc && (size_t)s->pq->ntuples(res) != k) {
		/* Which row was not written: the first whose seq is not returned. */
		size_t missing = 0;
		for (size_t r = 0; r < k; r++) {
			int found = 0;
			for (int i = 0; i < s->pq->ntuples(res) && !found; i++)
				found = a2m_pg_int8(s, res, i, 0) == h->v[at + r].seq;
			if (!found) {
				missing = r;
				break;
			}
		}
		a2m_store_fail(&s->base, "insert: id \"%s\" already exists", h->v[at + missing].id);
		rc = A2M_INVALID_PARAMS;
	}
	if (res)
		s->pq->clear(res);
	for (size_t r = 0; r < k; r++)
		free(scratch[r]);
	free(scratch);
	a2m_pg_params_free(&p);
	return rc;
}

int a2m_pg_held_touch(pgstore *s, int64_t seq, int64_t add, int64_t at)
{
	a2m_pg_held *h = s->held;
	if (h->nt == h->tcap) {
		size_t cap = h->tcap ? h->tcap * 2 : 256;
		held_touch *t = realloc(h->t, cap * sizeof *t);
		if (!t)
			return a2m_store_fail(&s->base, "touch: out of memory");
		h->t = t;
		h->tcap = cap;
	}
	h->t[h->nt++] = (held_touch){seq, add, at};
	return 0;
}

/* Writes the touches held (PG_TOUCHES), after the inserts: a touch may name one of them. */
static int write_touches(pgstore *s)
{
	a2m_pg_held *h = s->held;
	pgarray seq, add, at;
	pgparams p;
	PGresult *r;
	a2m_pg_array_begin(&seq, PG_OID_INT8);
	a2m_pg_array_begin(&add, PG_OID_INT8);
	a2m_pg_array_begin(&at, PG_OID_INT8);
	for (size_t i = 0; i < h->nt; i++) {
		a2m_pg_array_int8(&seq, h->t[i].seq);
		a2m_pg_array_int8(&add, h->t[i].add);
		a2m_pg_array_int8(&at, h->t[i].at);
	}
	int rc = a2m_pg_array_end(&seq) | a2m_pg_array_end(&add) | a2m_pg_array_end(&at);
	if (rc) {
		rc = a2m_store_fail(&s->base, "touch: out of memory");
	} else {
		a2m_pg_params_init(&p);
		a2m_pg_param_bytea(&p, seq.buf, seq.len);
		a2m_pg_param_bytea(&p, add.buf, add.len);
		a2m_pg_param_bytea(&p, at.buf, at.len);
		if (!(rc = a2m_pg_run(s, &s->main, PG_TOUCHES, &p, "touch", &r)))
			s->pq->clear(r);
	}
	a2m_pg_array_free(&seq);
	a2m_pg_array_free(&add);
	a2m_pg_array_free(&at);
	return rc;
}

int a2m_pg_held_flush(pgstore *s)
{
	a2m_pg_held *h = s->held;
	int rc = 0;
	if (!h || (!h->n && !h->nt))
		return 0;
	for (size_t at = 0; at < h->n && !rc; at += PG_HELD_ROWS) {
		size_t k = h->n - at < PG_HELD_ROWS ? h->n - at : PG_HELD_ROWS;
		rc = write_rows(s, at, k);
	}
	if (!rc && h->nt)
		rc = write_touches(s);
	a2m_pg_held_drop(h);
	if (rc)
		a2m_pg_tx_fail(s);
	return rc;
}
