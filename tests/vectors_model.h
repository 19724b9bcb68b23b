/*
** vectors_model.h — the stores and the reference of tests/test_vectors.c
** (included once, by it): the stores of every engine and variant, random
** records with caller's and generated vectors, and the brute-force
** reference every search is compared to, in double, from the records
** themselves.
*/
#ifndef A2M_TEST_VECTORS_MODEL_H
#define A2M_TEST_VECTORS_MODEL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "a2m.h"
#include "check.h"
#include "pg_helper.h"
#include "rank/scorer.h"
#include "stack/stack.h"
#include "store/store.h"
#include "store/vector_index.h"
#include "vector_filter.h"

#define DIMS 24
/* The generated space's width; after a model change, GDIMS2. */
#define GDIMS  8
#define GDIMS2 12

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rng(void)
{
	return check_rand(&rng_state);
}

static double unif(void)
{
	return (double)(rng() >> 11) / 9007199254740992.0;
}

static const char *const tiers[] = {"working", "semantic", NULL};
static const char *const owners[] = {NULL, "ann", "bob"};

/* ---- stores ------------------------------------------------------------ */

static char db_path[64];
static char pg_schema[64];  /* the PostgreSQL engine's (pg_helper.h) */

/* The engines a test runs on: two (every engine as served without an
** embedder), and every variant of each (three). */
enum { E_MEMORY = 0, E_SQLITE = 1, E_SQLITE_EMBED = 2, E_PG = 3, E_PG_EMBED = 4 };
static int two[3] = {E_MEMORY, E_SQLITE, E_PG}, n_two = 2;
static int three[5] = {E_MEMORY, E_SQLITE, E_SQLITE_EMBED, E_PG, E_PG_EMBED}, n_three = 3;

/* Empties every engine's storage: the SQLite file, the PostgreSQL schema. */
static void remove_db(void)
{
	check_remove_db(db_path);
	if (pg_test_server() && pg_schema[0])
		pg_test_schema_drop(pg_schema);
}

/* sqlite: an E_ code. The _EMBED ones are the engine as served with an
** embedder (with its index of the records owed a vector). */
static a2m_store *open_engine(int sqlite)
{
	static const a2m_sqlite_options with_embedder = {.synchronous_full = 1,
							  .unembedded_index = 1};
	a2m_store *s = NULL;
	char err[256];
	int rc;
	if (sqlite >= E_PG) {
		a2m_postgres_options po = {.schema = pg_schema,
					   .unembedded_index = sqlite == E_PG_EMBED};
		rc = a2m_store_postgres_open(pg_test_server(), &po, &s, err, sizeof err);
	} else {
		rc = sqlite ? a2m_store_sqlite_open(db_path, sqlite == 2 ? &with_embedder : NULL,
						    &s, err, sizeof err)
			    : a2m_store_memory_open(&s, err, sizeof err);
	}
	if (rc)
		fprintf(stderr, "  open: %s\n", err);
	return s;
}

/* A random record n: vector of dims components with a random length. */
static a2m_record *make_record(int n, size_t dims)
{
	a2m_record *r = a2m_record_new();
	char id[32], content[64];
	snprintf(id, sizeof id, "r%d", n);
	snprintf(content, sizeof content, "record %d about %s", n, n % 2 ? "apples" : "pears");
	r->id = strdup(id);
	r->content = strdup(content);
	r->created_at = 1700000000000 + n;
	const char *t = tiers[rng() % 3], *o = owners[rng() % 3];
	r->tier = t ? strdup(t) : NULL;
	r->owner = o ? strdup(o) : NULL;
	if (rng() % 10) { /* one in ten has no vector */
		r->embedding = malloc(dims * sizeof *r->embedding);
		r->dims = dims;
		double len = 0.2 + 2 * unif();
		for (size_t i = 0; i < dims; i++)
			r->embedding[i] = len * (unif() * 2 - 1);
	}
	if (rng() % 4) { /* three in four have a generated vector */
		r->gen_embedding = malloc(GDIMS * sizeof *r->gen_embedding);
		r->gen_dims = GDIMS;
		for (size_t i = 0; i < GDIMS; i++)
			r->gen_embedding[i] = (float)(unif() * 2 - 1);
	}
	return r;
}

static int insert_random(a2m_store *s, int from, int to)
{
	for (int i = from; i < to; i++) {
		a2m_record *r = make_record(i, DIMS);
		int rc = s->ops->insert(s, r);
		a2m_record_free(r);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the reference ----------------------------------------------------- */

static double measure(a2m_vector_measure m, const float *q, const double *r, size_t n)
{
	double dot = 0, nq = 0, nr = 0, d2 = 0;
	for (size_t i = 0; i < n; i++) {
		dot += q[i] * r[i];
		nq += (double)q[i] * q[i];
		nr += r[i] * r[i];
		d2 += (q[i] - r[i]) * (q[i] - r[i]);
	}
	if (m == A2M_VECTOR_DOT)
		return dot;
	if (m == A2M_VECTOR_L2)
		return sqrt(d2);
	return nq == 0 || nr == 0 ? 0 : dot / sqrt(nq * nr);
}

typedef struct ref {
	const float        *q;
	size_t              dims;
	int                 gen;   /* the generated space */
	a2m_vector_measure  m;
	const filt         *f;
	a2m_candidates      want;
	size_t              cap;
	double              salience_max;  /* of the rows listed */
} ref;

static int ref_visit(const a2m_record *rec, void *ctx)
{
	ref *r = ctx;
	double v[GDIMS2 > DIMS ? GDIMS2 : DIMS];
	if (r->gen) {
		if (!rec->gen_embedding || rec->gen_dims != r->dims)
			return 0;
		for (size_t i = 0; i < r->dims; i++)
			v[i] = rec->gen_embedding[i];
	} else if (!rec->embedding || rec->dims != r->dims) {
		return 0;
	}
	if (r->f && r->f->tier && !same(r->f->tier, rec->tier))
		return 0;
	if (r->f && r->f->by_owner && !same(r->f->owner, rec->owner))
		return 0;
	if (r->want.n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->want.v = realloc(r->want.v, r->cap * sizeof *r->want.v);
	}
	r->want.v[r->want.n++] = (a2m_candidate){
		rec->seq, measure(r->m, r->q, r->gen ? v : rec->embedding, r->dims)};
	if (rec->salience > r->salience_max)
		r->salience_max = rec->salience;
	return 0;
}

/* The record with this seq (a copy), or NULL. */
static int seq_visit(const a2m_record *rec, void *ctx)
{
	*(a2m_record **)ctx = a2m_record_dup(rec);
	return 1;
}

static a2m_record *find_seq(a2m_store *s, int64_t seq)
{
	a2m_record *rec = NULL;
	s->ops->visit_seqs(s, &seq, 1, seq_visit, &rec);
	return rec;
}

typedef struct all_recs {
	a2m_record **v;
	size_t       n;
} all_recs;

static int collect(const a2m_record *rec, void *ctx)
{
	all_recs *a = ctx;
	a->v = realloc(a->v, (a->n + 1) * sizeof *a->v);
	a->v[a->n++] = a2m_record_dup(rec);
	return 0;
}

static int by_seq_int(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int by_seq(const void *a, const void *b)
{
	const a2m_candidate *x = a, *y = b;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/*
** Searches s with a random query under m and f and compares with the
** reference over a full scan: the same seqs, measures within float error.
** Returns the number of rows compared, or -1 after reporting a difference.
*/
static long compare_space(a2m_store *s, a2m_vector_measure m, const filt *f, int gen,
			  size_t dims)
{
	float q[GDIMS2 > DIMS ? GDIMS2 : DIMS];
	for (size_t i = 0; i < dims; i++)
		q[i] = (float)(unif() * 2 - 1);
	a2m_vector_filter vf = {filt_tier, (void *)f};
	a2m_vector_search vs = {.vector = q, .dims = dims, .measure = m, .filter = f ? &vf : NULL,
				.generated = gen};
	a2m_candidates got;
	ref r = {.q = q, .dims = dims, .gen = gen, .m = m, .f = f};
	int rc = s->ops->vector_search(s, &vs, &got);
	a2m_query all = {0};
	if (rc != 0 || s->ops->scan(s, &all, ref_visit, &r) != 0) {
		fprintf(stderr, "  search %d (%s)\n", rc, s->errmsg);
		return -1;
	}
	if (got.n)
		qsort(got.v, got.n, sizeof *got.v, by_seq);
	if (r.want.n)
		qsort(r.want.v, r.want.n, sizeof *r.want.v, by_seq);
	long ok = (long)got.n;
	/* The salience bound the stack relies on to stop early. */
	if (got.n && (!got.salience_known || got.salience_max < r.salience_max)) {
		fprintf(stderr, "  salience bound %g, a listed record has %g\n", got.salience_max,
			r.salience_max);
		ok = -1;
	}
	if (got.n != r.want.n) {
		fprintf(stderr, "  %zu rows, want %zu\n", got.n, r.want.n);
		ok = -1;
	}
	for (size_t i = 0; ok >= 0 && i < got.n; i++) {
		double g = got.v[i].score, w = r.want.v[i].score;
		if (got.v[i].seq != r.want.v[i].seq || fabs(g - w) > 1e-4 * (1 + fabs(w))) {
			fprintf(stderr, "  row %zu: seq %lld measure %.9g, want seq %lld %.9g\n", i,
				(long long)got.v[i].seq, g, (long long)r.want.v[i].seq, w);
			ok = -1;
		}
	}
	/*
	** The bound search: the same rows, each bound on the right side of the
	** float32 measure recall ranks by (the same kernels on the record's
	** vector), never the wrong side however close; and close.
	*/
	a2m_candidates b = {0};
	vs.bound = 1;
	if (ok >= 0 && (s->ops->vector_search(s, &vs, &b) != 0 || b.n != got.n))
		ok = -1;
	if (ok >= 0 && b.n)
		qsort(b.v, b.n, sizeof *b.v, by_seq);
	double qn = sqrt((double)a2m_vec_dot(q, q, dims));
	for (size_t i = 0; ok >= 0 && i < b.n; i++) {
		a2m_record *rec = NULL;
		float rf[GDIMS2 > DIMS ? GDIMS2 : DIMS];
		if (b.v[i].seq != got.v[i].seq || !(rec = find_seq(s, b.v[i].seq))) {
			ok = -1;
			break;
		}
		for (size_t k = 0; k < dims; k++)
			rf[k] = gen ? rec->gen_embedding[k] : (float)rec->embedding[k];
		double rn = (float)sqrt((double)a2m_vec_dot(rf, rf, dims));
		double x = a2m_vec_measure(m, q, qn, rf, rn, dims), bd = b.v[i].score;
		int wrong = m == A2M_VECTOR_L2 ? bd > x : bd < x;
		if (wrong || fabs(bd - x) > 0.01 * (1 + fabs(x))) {
			fprintf(stderr, "  bound %.12g for measure %.12g (metric %d)\n", bd, x, (int)m);
			ok = -1;
		}
		a2m_record_free(rec);
	}
	free(b.v);
	free(got.v);
	free(r.want.v);
	return ok;
}

static long compare(a2m_store *s, a2m_vector_measure m, const filt *f)
{
	return compare_space(s, m, f, 0, DIMS);
}

/* The generated space (cosine only, as the generated part asks) at width dims. */
static int compare_gen(a2m_store *s, size_t dims)
{
	static const filt filters[] = {{"semantic", 0, NULL}, {NULL, 1, "ann"}};
	if (compare_space(s, A2M_VECTOR_COSINE, NULL, 1, dims) < 0)
		return -1;
	for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
		if (compare_space(s, A2M_VECTOR_COSINE, &filters[i], 1, dims) < 0)
			return -1;
	return 0;
}

/* Every measure, unfiltered and under several filters; the generated space too. */
static int compare_all(a2m_store *s)
{
	static const filt filters[] = {
		{"semantic", 0, NULL}, {NULL, 1, "ann"}, {NULL, 1, NULL},
		{"working", 1, "bob"}, {NULL, 1, "nobody"},
	};
	for (int m = 0; m < 3; m++) {
		if (compare(s, (a2m_vector_measure)m, NULL) < 0)
			return -1;
		for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
			if (compare(s, (a2m_vector_measure)m, &filters[i]) < 0)
				return -1;
	}
	return compare_gen(s, GDIMS);
}

/* Updates some records (tier, owner, vector, no vector), removes others. */
static int churn(a2m_store *s, int n)
{
	for (int i = 0; i < n; i += 3) {
		char id[32];
		snprintf(id, sizeof id, "r%d", i);
		a2m_record *r = NULL;
		if (s->ops->get(s, id, &r) || !r)
			continue;
		a2m_record *fresh = make_record(i, DIMS);
		int rc = 0, removed;
		switch (i % 4) {
		case 0: /* a tier move, and more salience than any record had */
			free(r->tier);
			r->tier = fresh->tier, fresh->tier = NULL;
			r->salience = 10 + i;
			rc = s->ops->update(s, r);
			break;
		case 1: /* a new owner and vectors */
			free(r->owner);
			free(r->embedding);
			free(r->gen_embedding);
			r->owner = fresh->owner, fresh->owner = NULL;
			r->embedding = fresh->embedding, fresh->embedding = NULL;
			r->dims = r->embedding ? DIMS : 0;
			r->gen_embedding = fresh->gen_embedding, fresh->gen_embedding = NULL;
			r->gen_dims = r->gen_embedding ? GDIMS : 0;
			rc = s->ops->update(s, r);
			break;
		case 2: /* a touch: nothing the rows hold */
			r->access_count++;
			rc = s->ops->update(s, r);
			break;
		default:
			rc = s->ops->remove(s, id, &removed);
			break;
		}
		a2m_record_free(r);
		a2m_record_free(fresh);
		if (rc)
			return rc;
	}
	return 0;
}

#endif
