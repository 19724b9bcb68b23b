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
#include "util/grow.h"

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
	for (size_t i = 0; h && id && i < h->n; i++)
		if (h->v[i].id && strcmp(h->v[i].id, id) == 0)
			return 1;
	return 0;
}

int a2m_pg_held_for_get(const a2m_pg_held *h, const char *id)
{
	/* A held touch may be of that record: its access fields would differ. */
	return h && (h->nt || a2m_pg_held_has(h, id));
}

int a2m_pg_held_add(pgstore *s, const a2m_record *rec)
{
	a2m_pg_held *h = s->held;
	if (a2m_grow((void **)&h->v, &h->cap, h->n + 1, sizeof *h->v))
		return a2m_store_fail(&s->base, "insert: out of memory");
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

/* One held INSERT being sent: rows [at, at + k), its parameters and their vectors' bytes. */
typedef struct insert_step {
	size_t   at, k;
	pgparams p;
	char   **scratch;
	char     name[24];
} insert_step;

static void insert_free(insert_step *st)
{
	for (size_t r = 0; st->scratch && r < st->k; r++)
		free(st->scratch[r]);
	free(st->scratch);
	a2m_pg_params_free(&st->p);
}

/* Binds rows [at, at + k) of what is held into st (zeroed by the caller). Returns 0 or fails. */
static int insert_bind(pgstore *s, insert_step *st, size_t at, size_t k, pgstep *step)
{
	a2m_pg_held *h = s->held;
	st->at = at;
	st->k = k;
	if (!(st->scratch = calloc(k, sizeof *st->scratch)) ||
	    a2m_pg_params_alloc(&st->p, (int)k * PG_NCOLUMNS) != 0)
		return a2m_store_fail(&s->base, "insert: out of memory");
	for (size_t r = 0; r < k; r++) {
		a2m_pg_param_int8(&st->p, h->v[at + r].seq);
		if (a2m_pg_bind_record(&st->p, &h->v[at + r], &st->scratch[r]) != 0)
			return a2m_store_fail(&s->base, "insert: out of memory");
	}
	const char *sql = insert_sql(k);
	if (!sql)
		return a2m_store_fail(&s->base, "insert: out of memory");
	snprintf(st->name, sizeof st->name, "a2m_ins%zu", k);
	*step = (pgstep){.st = PG_NSTMTS, .sql = sql, .p = &st->p, .keep = 1, .name = st->name};
	return 0;
}

/* An INSERT wrote fewer rows than it sent: the first whose seq it did not return is refused. */
static int insert_refused(pgstore *s, const insert_step *st, const PGresult *res)
{
	a2m_pg_held *h = s->held;
	size_t missing = 0;
	for (size_t r = 0; r < st->k; r++) {
		int found = 0;
		for (int i = 0; i < s->pq->ntuples(res) && !found; i++)
			found = a2m_pg_int8(s, res, i, 0) == h->v[st->at + r].seq;
		if (!found) {
			missing = r;
			break;
		}
	}
	a2m_store_fail(&s->base, "insert: id \"%s\" already exists", h->v[st->at + missing].id);
	return A2M_INVALID_PARAMS;
}

int a2m_pg_held_touch(pgstore *s, int64_t seq, int64_t add, int64_t at)
{
	a2m_pg_held *h = s->held;
	if (a2m_grow((void **)&h->t, &h->tcap, h->nt + 1, sizeof *h->t))
		return a2m_store_fail(&s->base, "touch: out of memory");
	h->t[h->nt++] = (held_touch){seq, add, at};
	return 0;
}

/* The touches held as PG_TOUCHES's parameters (seq, add, at arrays in a; bound into p). */
static int touch_bind(pgstore *s, pgarray a[3], pgparams *p)
{
	a2m_pg_held *h = s->held;
	for (int k = 0; k < 3; k++)
		a2m_pg_array_begin(&a[k], PG_OID_INT8);
	for (size_t i = 0; i < h->nt; i++) {
		a2m_pg_array_int8(&a[0], h->t[i].seq);
		a2m_pg_array_int8(&a[1], h->t[i].add);
		a2m_pg_array_int8(&a[2], h->t[i].at);
	}
	if (a2m_pg_array_end(&a[0]) | a2m_pg_array_end(&a[1]) | a2m_pg_array_end(&a[2]))
		return a2m_store_fail(&s->base, "touch: out of memory");
	a2m_pg_params_init(p);
	for (int k = 0; k < 3; k++)
		a2m_pg_param_bytea(p, a[k].buf, a[k].len);
	return 0;
}

/*
** Every held INSERT, then the touches (a touch may name a held record), in
** one round trip: a batched remember of 500 records was 8 of them.
*/
#ifdef A2M_TEST_HOOKS
static _Atomic long flushes;

long a2m_pg_held_flushes_for_tests(void)
{
	return flushes;
}
#endif

int a2m_pg_held_flush(pgstore *s)
{
	a2m_pg_held *h = s->held;
	if (!h || (!h->n && !h->nt))
		return 0;
#ifdef A2M_TEST_HOOKS
	flushes++;
#endif
	size_t ni = (h->n + PG_HELD_ROWS - 1) / PG_HELD_ROWS, n = ni + (h->nt ? 1 : 0);
	insert_step *ins = calloc(ni ? ni : 1, sizeof *ins);
	pgstep *steps = calloc(n, sizeof *steps);
	pgarray touches[3] = {{0}, {0}, {0}};
	pgparams tp;
	int rc = ins && steps ? 0 : a2m_store_fail(&s->base, "insert: out of memory");
	for (size_t i = 0; i < ni && !rc; i++) {
		size_t at = i * PG_HELD_ROWS, k = h->n - at < PG_HELD_ROWS ? h->n - at : PG_HELD_ROWS;
		rc = insert_bind(s, &ins[i], at, k, &steps[i]);
	}
	if (!rc && h->nt && !(rc = touch_bind(s, touches, &tp)))
		steps[ni] = (pgstep){.st = PG_TOUCHES, .p = &tp};
	if (!rc)
		rc = a2m_pg_pipeline(s, &s->main, steps, n, "insert");
	for (size_t i = 0; i < ni && steps; i++) {
		PGresult *res = steps[i].res;
		if (!rc && res && (size_t)s->pq->ntuples(res) != ins[i].k)
			rc = insert_refused(s, &ins[i], res);
		if (res)
			s->pq->clear(res);
	}
	for (size_t i = 0; i < ni && ins; i++)
		insert_free(&ins[i]);
	for (int k = 0; k < 3; k++)
		a2m_pg_array_free(&touches[k]);
	free(ins);
	free(steps);
	a2m_pg_held_drop(h);
	if (rc)
		a2m_pg_tx_fail(s);
	return rc;
}
