/*
** test_vector_quant.c — the quantized mode of vector search (the option
** vector_search = "quantized"; store.h a2m_vector_search.pool,
** store/vector_quant.c): on each engine's store, every figure a pool lists
** is the exact search's figure for that record, a pool as large as the
** rows is the exact search, filters hold, and the 8-bit codes follow
** writes (inserts, vector and tier changes, removals, transactions, a
** space that changes width) — each live record, asked for by its own
** vector with a pool of one, is the one found. Then through the protocol:
** the mode in describe, bad values refused, recall equal to the exact
** mode's with a pool as large as the store, a default pool's hits scored
** as exact scores them, filters that empty the pool answered from the
** wider one, then the exact search, and a private tier's records never
** returned to another owner, nor another session's to a session's recall.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "pg_helper.h"
#include "store/store.h"
#include "vector_filter.h"

#define DIMS 24
#define NREC 400

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static double unif(void)
{
	return (double)(check_rand(&rng_state) >> 11) / 9007199254740992.0;
}

static const char *const tiers[] = {"working", "semantic", NULL};
static const char *const owners[] = {NULL, "ann", "bob"};

static char db_path[64];
static char pg_schema[64];

enum { E_MEMORY, E_SQLITE, E_PG };

static a2m_store *open_engine(int engine)
{
	a2m_store *s = NULL;
	char err[256];
	int rc;
	check_remove_db(db_path);
	if (engine == E_PG) {
		pg_test_schema_drop(pg_schema);
		a2m_postgres_options po = {.schema = pg_schema};
		rc = a2m_store_postgres_open(pg_test_server(), &po, &s, err, sizeof err);
	} else if (engine == E_SQLITE) {
		rc = a2m_store_sqlite_open(db_path, NULL, &s, err, sizeof err);
	} else {
		rc = a2m_store_memory_open(&s, err, sizeof err);
	}
	if (rc)
		fprintf(stderr, "  open: %s\n", err);
	return s;
}

/* Record n, of width dims, in a random tier and owner; vectors of random length. */
static a2m_record *make_record(int n, size_t dims)
{
	a2m_record *r = a2m_record_new();
	char id[32];
	snprintf(id, sizeof id, "r%d", n);
	r->id = strdup(id);
	r->content = strdup("some words");
	r->created_at = 1700000000000 + n;
	const char *t = tiers[check_rand(&rng_state) % 3], *o = owners[check_rand(&rng_state) % 3];
	r->tier = t ? strdup(t) : NULL;
	r->owner = o ? strdup(o) : NULL;
	r->embedding = malloc(dims * sizeof *r->embedding);
	r->dims = dims;
	double len = 0.2 + 2 * unif();
	for (size_t i = 0; i < dims; i++)
		r->embedding[i] = len * (unif() * 2 - 1);
	return r;
}

static int search(a2m_store *s, const float *q, a2m_vector_measure m, const filt *f,
		  size_t pool, a2m_candidates *out)
{
	a2m_vector_filter vf = {filt_tier, (void *)f};
	a2m_vector_search vs = {.vector = q, .dims = DIMS, .measure = m, .filter = f ? &vf : NULL,
				.pool = pool};
	return s->ops->vector_search(s, &vs, out);
}

static const a2m_candidate *find(const a2m_candidates *c, int64_t seq)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].seq == seq)
			return &c->v[i];
	return NULL;
}

/* Higher is nearer: the measure, or the distance negated. */
static double nearness(a2m_vector_measure m, double fig)
{
	return m == A2M_VECTOR_L2 ? -fig : fig;
}

static int by_nearness_l2;
static int cmp_near(const void *a, const void *b)
{
	double x = ((const a2m_candidate *)a)->score, y = ((const a2m_candidate *)b)->score;
	if (by_nearness_l2)
		x = -x, y = -y;
	return x > y ? -1 : x < y;
}

static void random_query(float *q)
{
	for (int i = 0; i < DIMS; i++)
		q[i] = (float)(unif() * 2 - 1);
}

/* Counts the records visited that f turns away (ctx: a passing). */
typedef struct passing {
	const filt *f;
	size_t      seen, other;
} passing;

static int pass_visit(const a2m_record *rec, void *ctx)
{
	passing *p = ctx;
	p->seen++;
	p->other += (p->f->tier && !same(p->f->tier, rec->tier)) ||
		    (p->f->by_owner && !same(p->f->owner, rec->owner));
	return 0;
}

/*
** Every record c lists passes f, read back by its seq: a record of another
** tier or owner never comes back, whatever the comparison with the exact
** search says (both could let it through).
*/
static void all_pass(a2m_store *s, const a2m_candidates *c, const filt *f)
{
	if (!f || !c->n)
		return;
	int64_t *seqs = malloc(c->n * sizeof *seqs);
	CHECK(seqs != NULL);
	if (!seqs)
		return;
	for (size_t i = 0; i < c->n; i++)
		seqs[i] = c->v[i].seq;
	passing p = {f, 0, 0};
	CHECK_INT(s->ops->visit_seqs(s, seqs, c->n, pass_visit, &p), 0);
	CHECK_INT((long)p.seen, (long)c->n);
	CHECK_INT((long)p.other, 0);
	free(seqs);
}

/*
** For q under m and f: the pool of `pool` lists min(pool, rows) records,
** each with exactly the exact search's figure, and holds the exact top 5;
** a pool of every row is the exact list, not marked approximate; and
** neither lists a record f turns away.
*/
static void pool_against_exact(a2m_store *s, const float *q, a2m_vector_measure m, const filt *f,
			       size_t pool)
{
	a2m_candidates ex, ap, all;
	CHECK_INT(search(s, q, m, f, 0, &ex), 0);
	CHECK_INT(search(s, q, m, f, pool, &ap), 0);
	CHECK_INT(search(s, q, m, f, 100000, &all), 0);
	all_pass(s, &ex, f);
	all_pass(s, &ap, f);
	size_t want = ex.n < pool ? ex.n : pool;
	CHECK_INT((long)ap.n, (long)want);
	CHECK_INT(ap.approximate, ex.n > pool);
	for (size_t i = 0; i < ap.n; i++) {
		const a2m_candidate *e = find(&ex, ap.v[i].seq);
		CHECK(e != NULL);
		if (e)
			CHECK(e->score == ap.v[i].score); /* the same float32 arithmetic */
	}
	if (ap.approximate) {
		/* What the rest's best code gave is no better than the pool's worst
		** (but for the code's error)... */
		double worst = HUGE_VAL;
		for (size_t i = 0; i < ap.n; i++)
			worst = fmin(worst, nearness(m, ap.v[i].score));
		CHECK(nearness(m, ap.approx_rest) <= worst + 0.05 * (fabs(worst) + 1));
		/* ...and on random data the code keeps the exact top 5 in the pool. */
		by_nearness_l2 = m == A2M_VECTOR_L2;
		qsort(ex.v, ex.n, sizeof *ex.v, cmp_near);
		for (size_t i = 0; i < 5 && i < ex.n; i++)
			CHECK(find(&ap, ex.v[i].seq) != NULL);
	}
	CHECK_INT((long)all.n, (long)ex.n);
	CHECK_INT(all.approximate, 0);
	for (size_t i = 0; i < all.n; i++) {
		const a2m_candidate *e = find(&ex, all.v[i].seq);
		CHECK(e != NULL && e->score == all.v[i].score);
	}
	free(ex.v);
	free(ap.v);
	free(all.v);
}

static const filt filters[] = {
	{NULL, 0, NULL}, {"semantic", 0, NULL}, {NULL, 1, "ann"}, {"working", 1, NULL},
	{NULL, 1, "nobody"},
};

static void check_pools(a2m_store *s)
{
	float q[DIMS];
	for (int m = 0; m < 3; m++)
		for (int k = 0; k < 6; k++) {
			random_query(q);
			pool_against_exact(s, q, (a2m_vector_measure)m, NULL, 40);
			pool_against_exact(s, q, (a2m_vector_measure)m, &filters[k % 5], 20);
		}
}

/* Every live record, asked for by its own vector with a pool of one, is found. */
static void each_finds_itself(a2m_store *s, int upto)
{
	for (int n = 0; n < upto; n++) {
		char id[32];
		a2m_record *r = NULL;
		snprintf(id, sizeof id, "r%d", n);
		if (s->ops->get(s, id, &r) != 0 || !r)
			continue;
		float q[DIMS];
		for (int i = 0; i < DIMS; i++)
			q[i] = (float)r->embedding[i];
		for (int m = 0; m < 3; m += 2) { /* cosine and l2: a vector is nearest itself */
			a2m_candidates c;
			CHECK_INT(search(s, q, (a2m_vector_measure)m, NULL, 1, &c), 0);
			CHECK_INT((long)c.n, 1);
			if (c.n && c.v[0].seq != r->seq)
				fprintf(stderr, "  %s (seq %lld) not found by its own vector, metric %d\n",
					id, (long long)r->seq, m);
			CHECK(c.n && c.v[0].seq == r->seq);
			free(c.v);
		}
		a2m_record_free(r);
	}
}

/* Updates, moves and removals after the codes were built (the first pool search). */
static int churn(a2m_store *s, int n)
{
	for (int i = 0; i < n; i += 2) {
		char id[32];
		snprintf(id, sizeof id, "r%d", i);
		a2m_record *r = NULL, *fresh = make_record(i, DIMS);
		int rc = s->ops->get(s, id, &r), removed;
		if (!rc && r) {
			if (i % 6 == 0) {
				rc = s->ops->remove(s, id, &removed);
			} else if (i % 6 == 2) { /* a new vector */
				free(r->embedding);
				r->embedding = fresh->embedding, fresh->embedding = NULL;
				rc = s->ops->update(s, r);
			} else { /* another tier and owner */
				free(r->tier);
				free(r->owner);
				r->tier = fresh->tier, fresh->tier = NULL;
				r->owner = fresh->owner, fresh->owner = NULL;
				rc = s->ops->update(s, r);
			}
		}
		a2m_record_free(r);
		a2m_record_free(fresh);
		if (rc)
			return rc;
	}
	return 0;
}

static int insert_range(a2m_store *s, int from, int to, size_t dims)
{
	for (int i = from; i < to; i++) {
		a2m_record *r = make_record(i, dims);
		int rc = s->ops->insert(s, r);
		a2m_record_free(r);
		if (rc)
			return rc;
	}
	return 0;
}

static void store_pools(int engine)
{
	a2m_store *s = open_engine(engine);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_INT(insert_range(s, 0, NREC, DIMS), 0);
	check_pools(s);
	each_finds_itself(s, NREC);
	/* The codes exist now: writes must keep them. */
	CHECK_INT(churn(s, NREC), 0);
	CHECK_INT(insert_range(s, NREC, NREC + 50, DIMS), 0);
	/* A transaction rolled back leaves them as they were; one committed moves them. */
	CHECK_INT(s->ops->begin(s), 0);
	CHECK_INT(insert_range(s, NREC + 50, NREC + 60, DIMS), 0);
	s->ops->rollback(s);
	CHECK_INT(s->ops->begin(s), 0);
	CHECK_INT(churn(s, 40), 0);
	CHECK_INT(insert_range(s, NREC + 60, NREC + 80, DIMS), 0);
	CHECK_INT(s->ops->commit(s), 0);
	check_pools(s);
	each_finds_itself(s, NREC + 80);
	/* Emptied, the space takes another width: its codes are built anew. */
	for (int n = 0; n < NREC + 80; n++) {
		char id[32];
		int removed;
		snprintf(id, sizeof id, "r%d", n);
		CHECK_INT(s->ops->remove(s, id, &removed), 0);
	}
	CHECK_INT(insert_range(s, 1000, 1100, 16), 0);
	float q[16];
	for (int i = 0; i < 16; i++)
		q[i] = (float)(unif() * 2 - 1);
	a2m_vector_search vs = {.vector = q, .dims = 16, .pool = 10};
	a2m_candidates c;
	CHECK_INT(s->ops->vector_search(s, &vs, &c), 0);
	CHECK_INT((long)c.n, 10);
	CHECK_INT(c.approximate, 1);
	free(c.v);
	s->ops->close(s);
}

static void test_store_pools_memory(void)
{
	store_pools(E_MEMORY);
}

static void test_store_pools_sqlite(void)
{
	store_pools(E_SQLITE);
	check_remove_db(db_path);
}

static void test_store_pools_postgres(void)
{
	if (!pg_test_server()) {
		printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
		return;
	}
	store_pools(E_PG);
	pg_test_schema_drop(pg_schema);
}

/* ---- through the protocol ------------------------------------------------ */

static void test_bad_values_refused(void)
{
	a2m_config *cfg;
	CHECK_INT(a2m_config_new(&cfg), A2M_OK);
	CHECK(a2m_config_set(cfg, "vector_search", "fast") != A2M_OK);
	CHECK(strstr(a2m_config_errmsg(cfg), "exact") != NULL);
	CHECK(a2m_config_set(cfg, "vector_pool", "0") != A2M_OK);
	CHECK(strstr(a2m_config_errmsg(cfg), "vector_pool") != NULL);
	CHECK(a2m_config_set(cfg, "vector_pool", "many") != A2M_OK);
	CHECK_INT(a2m_config_set(cfg, "vector_search", "quantized"), A2M_OK);
	CHECK_INT(a2m_config_set(cfg, "vector_pool", "7"), A2M_OK);
	a2m_config_free(cfg);
}

static json_t *search_of(a2m *h)
{
	json_t *d = check_call(h, "memory/describe", "{}");
	json_t *s = json_incref(json_object_get(json_object_get(json_object_get(d, "result"),
								"embeddings"), "search"));
	json_decref(d);
	return s;
}

static void test_describe_declares_mode(void)
{
	a2m *ex = check_open("engine", "memory", NULL);
	a2m *qz = check_open("engine", "memory", "vector_search", "quantized", NULL);
	a2m *q7 = check_open("engine", "sqlite", "path", db_path, "vector_search", "quantized",
			     "vector_pool", "7", NULL);
	CHECK(ex && qz && q7);
	if (ex && qz && q7) {
		json_t *a = search_of(ex), *b = search_of(qz), *c = search_of(q7);
		CHECK_STR(json_string_value(json_object_get(a, "mode")), "exact");
		CHECK(json_is_false(json_object_get(a, "approximate")));
		CHECK(json_object_get(a, "pool") == NULL);
		CHECK_STR(json_string_value(json_object_get(b, "mode")), "quantized");
		CHECK(json_is_true(json_object_get(b, "approximate")));
		CHECK_INT((long)json_integer_value(json_object_get(b, "pool")), 20);
		CHECK_INT((long)json_integer_value(json_object_get(c, "pool")), 7);
		json_decref(a);
		json_decref(b);
		json_decref(c);
	}
	a2m_close(ex);
	a2m_close(qz);
	a2m_close(q7);
	check_remove_db(db_path);
}

/* Random vector as JSON text (dims components). */
static void put_vector(char *out, size_t size, int dims)
{
	size_t n = (size_t)snprintf(out, size, "[");
	for (int i = 0; i < dims && n < size; i++)
		n += (size_t)snprintf(out + n, size - n, "%s%.6f", i ? "," : "", unif() * 2 - 1);
	if (n < size)
		snprintf(out + n, size - n, "]");
}

/* The same NREC records into each handle: tiers, sessions, owners. */
static void fill(a2m **hs, int nh)
{
	for (int n = 0; n < NREC; n++) {
		char vec[DIMS * 16], params[DIMS * 16 + 256];
		put_vector(vec, sizeof vec, DIMS);
		snprintf(params, sizeof params,
			 "{\"records\":[{\"content\":\"note %d\",\"tier\":\"semantic\","
			 "\"session\":\"s%d\",\"key\":\"k%d\",\"metadata\":{\"n\":%d},"
			 "\"embedding\":%s}]}",
			 n, n % 40, n, n % 10, vec);
		for (int i = 0; i < nh; i++) {
			json_t *r = check_call(hs[i], "memory/remember", "%s", params);
			CHECK_INT(check_error_code(r), 0);
			json_decref(r);
		}
	}
}

/* Recall params with a fresh random query vector and what else extra adds. */
static void recall_params(char *out, size_t size, int limit, const char *extra)
{
	char vec[DIMS * 16];
	put_vector(vec, sizeof vec, DIMS);
	snprintf(out, size, "{\"embedding\":%s,\"limit\":%d%s}", vec, limit, extra);
}

static json_t *records_of(a2m *h, const char *params)
{
	json_t *r = check_call(h, "memory/recall", "%s", params);
	CHECK_INT(check_error_code(r), 0);
	json_t *recs = json_incref(json_object_get(json_object_get(r, "result"), "records"));
	json_decref(r);
	return recs ? recs : json_array();
}

/* The same records (by key: each handle names its own ids), in the same order, with
** the same scores. */
static int same_hits(json_t *a, json_t *b)
{
	if (json_array_size(a) != json_array_size(b))
		return 0;
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *x = json_array_get(a, i), *y = json_array_get(b, i);
		if (strcmp(json_string_value(json_object_get(x, "key")),
			   json_string_value(json_object_get(y, "key"))) != 0 ||
		    json_real_value(json_object_get(x, "score")) !=
			    json_real_value(json_object_get(y, "score")))
			return 0;
	}
	return 1;
}

static const char *const extras[] = {
	"", ",\"session\":\"s7\"", ",\"where\":{\"n\":{\"$lt\":3}}", ",\"key_prefix\":\"k1\"",
	",\"min_score\":0.3",
};

/* engine: "memory" or "sqlite"; metric as the option takes it. */
static void recall_modes(const char *engine, const char *metric)
{
	char p2[80];
	snprintf(p2, sizeof p2, "%s-q", db_path);
	check_remove_db(db_path);
	check_remove_db(p2);
	int sq = strcmp(engine, "sqlite") == 0;
	a2m *h[3] = {
		check_open("engine", engine, "path", sq ? db_path : NULL, "metric", metric, NULL),
		/* a pool as large as the store: the exact answer */
		check_open("engine", "memory", "metric", metric, "vector_search", "quantized",
			   "vector_pool", "100000", NULL),
		check_open("engine", engine, "path", sq ? p2 : NULL, "metric", metric,
			   "vector_search", "quantized", NULL),
	};
	CHECK(h[0] && h[1] && h[2]);
	if (!h[0] || !h[1] || !h[2])
		goto out;
	fill(h, 3);
	double found = 0, wanted = 0;
	for (int k = 0; k < 40; k++) {
		char params[DIMS * 16 + 128];
		const char *extra = extras[k % 5];
		recall_params(params, sizeof params, 10, extra);
		json_t *ex = records_of(h[0], params), *big = records_of(h[1], params);
		json_t *def = records_of(h[2], params);
		CHECK(same_hits(ex, big));
		if (!same_hits(ex, big))
			fprintf(stderr, "  %s %s: a pool of the whole store differs from exact (%s)\n",
				engine, metric, extra);
		/* Every hit of the default pool has exactly the score exact gives it. */
		char all[DIMS * 16 + 128];
		snprintf(all, sizeof all, "%.*s", (int)(strstr(params, ",\"limit\"") - params), params);
		char wide[DIMS * 16 + 160];
		snprintf(wide, sizeof wide, "%s,\"limit\":1000%s}", all, extra);
		json_t *every = records_of(h[0], wide);
		for (size_t i = 0; i < json_array_size(def); i++) {
			json_t *d = json_array_get(def, i);
			int seen = 0;
			for (size_t j = 0; j < json_array_size(every); j++) {
				json_t *e = json_array_get(every, j);
				if (strcmp(json_string_value(json_object_get(e, "key")),
					   json_string_value(json_object_get(d, "key"))) == 0) {
					seen = 1;
					CHECK(json_real_value(json_object_get(e, "score")) ==
					      json_real_value(json_object_get(d, "score")));
				}
			}
			CHECK(seen);
			if (i)
				CHECK(json_real_value(json_object_get(d, "score")) <=
				      json_real_value(json_object_get(json_array_get(def, i - 1),
								      "score")));
		}
		/* recall@10 against exact, by key (the ids differ between handles) */
		for (size_t i = 0; i < json_array_size(ex); i++) {
			const char *key = json_string_value(json_object_get(json_array_get(ex, i), "key"));
			wanted++;
			for (size_t j = 0; j < json_array_size(def); j++)
				if (strcmp(key, json_string_value(json_object_get(json_array_get(def, j),
										     "key"))) == 0)
					found++;
		}
		json_decref(ex);
		json_decref(big);
		json_decref(def);
		json_decref(every);
	}
	/* Random data, 8-bit codes, a pool of 200 for 10: nothing is missed. */
	CHECK(wanted > 0 && found / wanted >= 0.99);
	printf("  %s %s: recall@10 of the default pool %.3f\n", engine, metric, found / wanted);
out:
	for (int i = 0; i < 3; i++)
		a2m_close(h[i]);
	check_remove_db(db_path);
	check_remove_db(p2);
}

static void test_recall_modes_memory(void)
{
	recall_modes("memory", "cosine");
	recall_modes("memory", "dot");
	recall_modes("memory", "l2");
}

static void test_recall_modes_sqlite(void)
{
	recall_modes("sqlite", "cosine");
	recall_modes("sqlite", "l2");
}

/*
** A pool of one per result, and filters that turn nearly all of it away:
** the recall asks for the wider pool, then the exact search, and returns
** what exact returns. Then forgotten records never come back, and each
** kept one is found by its own vector.
*/
static void test_filtered_pool_falls_back(void)
{
	a2m *h[2] = {check_open("engine", "memory", NULL),
		     check_open("engine", "memory", "vector_search", "quantized", "vector_pool", "1",
				NULL)};
	CHECK(h[0] && h[1]);
	if (!h[0] || !h[1])
		goto out;
	fill(h, 2);
	for (int k = 0; k < 20; k++) {
		char params[DIMS * 16 + 128];
		/* a session holds 10 records of NREC; where leaves 1 to 10 of them */
		char extra[96];
		snprintf(extra, sizeof extra, ",\"session\":\"s%d\",\"where\":{\"n\":{\"$lt\":%d}}", k,
			 1 + k % 10);
		recall_params(params, sizeof params, 5, extra);
		json_t *a = records_of(h[0], params), *b = records_of(h[1], params);
		CHECK(same_hits(a, b));
		CHECK(json_array_size(b) > 0);
		json_decref(a);
		json_decref(b);
	}
	for (int n = 0; n < NREC; n += 3) {
		json_t *f = check_call(h[1], "memory/fetch", "{\"key\":\"k%d\"}", n);
		const char *id = json_string_value(
			json_object_get(json_object_get(json_object_get(f, "result"), "record"), "id"));
		CHECK(id != NULL);
		json_t *r = check_call(h[1], "memory/forget", "{\"ids\":[\"%s\"]}", id ? id : "");
		CHECK_INT(check_error_code(r), 0);
		CHECK_INT((long)json_integer_value(
				  json_object_get(json_object_get(r, "result"), "forgotten")), 1);
		json_decref(r);
		json_decref(f);
	}
	for (int n = 0; n < NREC; n++) {
		json_t *f = check_call(h[1], "memory/fetch", "{\"key\":\"k%d\",\"embeddings\":true}", n);
		json_t *rec = json_object_get(json_object_get(f, "result"), "record");
		json_t *emb = json_object_get(rec, "embedding");
		CHECK(n % 3 == 0 ? json_is_null(rec) : emb != NULL);
		if (emb) {
			char *v = json_dumps(emb, JSON_COMPACT);
			json_t *hits = NULL;
			if (v) {
				char params[DIMS * 32 + 64];
				snprintf(params, sizeof params, "{\"embedding\":%s,\"limit\":3}", v);
				hits = records_of(h[1], params);
			}
			free(v);
			CHECK(json_array_size(hits) == 3);
			for (size_t i = 0; i < json_array_size(hits); i++) {
				const char *key = json_string_value(json_object_get(json_array_get(hits, i),
										    "key"));
				CHECK(key && atoi(key + 1) % 3 != 0);
			}
			json_t *top = json_array_get(hits, 0);
			char want[16];
			snprintf(want, sizeof want, "k%d", n);
			CHECK_STR(json_string_value(json_object_get(top, "key")), want);
			json_decref(hits);
		}
		json_decref(f);
	}
out:
	a2m_close(h[0]);
	a2m_close(h[1]);
}

#define NOWN 90

/* One hit's string field, or "" when it has none. */
static const char *field_of(json_t *hit, const char *name)
{
	const char *v = json_string_value(json_object_get(hit, name));
	return v ? v : "";
}

/*
** The owner and session filters on the quantized path (docs/PROTOCOL.md,
** Scopes): NOWN records in the private tier working, owned by nobody, ann
** and bob in turn, in four sessions. Asked for by the very vector of a
** record ann does not own, ann never gets it, nor any record not hers,
** with a pool of one (the pool falls back, then to exact) and with the
** default pool; a recall of one session gets that session's only; one
** with no owner gets the records without one. On memory and SQLite.
*/
static void owner_filter(const char *engine)
{
	char *vecs[NOWN] = {NULL};
	char p1[80], p2[80];
	snprintf(p1, sizeof p1, "%s-o1", db_path);
	snprintf(p2, sizeof p2, "%s-o2", db_path);
	check_remove_db(p1);
	check_remove_db(p2);
	int sq = strcmp(engine, "sqlite") == 0;
	a2m *h[2] = {
		check_open("engine", engine, "path", sq ? p1 : NULL, "vector_search", "quantized",
			   "vector_pool", "1", NULL),
		check_open("engine", engine, "path", sq ? p2 : NULL, "vector_search", "quantized",
			   NULL),
	};
	CHECK(h[0] && h[1]);
	if (!h[0] || !h[1])
		goto out;
	for (int n = 0; n < NOWN; n++) {
		char params[DIMS * 16 + 256], owner[32] = "";
		char vec[DIMS * 16];
		put_vector(vec, sizeof vec, DIMS);
		vecs[n] = strdup(vec);
		CHECK(vecs[n] != NULL);
		if (!vecs[n])
			goto out;
		if (owners[n % 3])
			snprintf(owner, sizeof owner, ",\"owner\":\"%s\"", owners[n % 3]);
		snprintf(params, sizeof params,
			 "{\"records\":[{\"content\":\"note %d\",\"tier\":\"working\","
			 "\"session\":\"s%d\",\"key\":\"k%d\",\"embedding\":%s%s}]}",
			 n, n % 4, n, vec, owner);
		for (int i = 0; i < 2; i++) {
			json_t *r = check_call(h[i], "memory/remember", "%s", params);
			CHECK_INT(check_error_code(r), 0);
			json_decref(r);
		}
	}
	int leaks = 0, hits = 0;
	for (int n = 0; n < NOWN; n++) {
		const char *own = owners[n % 3], *vec = vecs[n];
		/* Asked by the other owners (and by nobody) with this record's vector. */
		for (int w = 0; w < 3; w++) {
			const char *who = owners[w];
			if (same(who, own))
				continue;
			char params[DIMS * 16 + 160], by[48] = "";
			if (who)
				snprintf(by, sizeof by, ",\"owner\":\"%s\"", who);
			snprintf(params, sizeof params, "{\"embedding\":%s,\"limit\":5%s%s}", vec,
				 by, n % 2 ? ",\"where\":{\"session\":\"s1\"}" : "");
			for (int i = 0; i < 2; i++) {
				json_t *recs = records_of(h[i], params);
				char key[16];
				snprintf(key, sizeof key, "k%d", n);
				for (size_t j = 0; j < json_array_size(recs); j++) {
					json_t *x = json_array_get(recs, j);
					int other = !same(who, json_string_value(json_object_get(x, "owner")));
					int wrong = other || strcmp(field_of(x, "key"), key) == 0 ||
						    (n % 2 && strcmp(field_of(x, "session"), "s1") != 0);
					if (wrong && leaks++ < 5)
						fprintf(stderr, "  %s, pool %s: %s of owner %s came back to %s\n",
							engine, i ? "default" : "1", field_of(x, "key"),
							field_of(x, "owner"), who ? who : "nobody");
					hits++;
				}
				json_decref(recs);
			}
		}
	}
	CHECK_INT(leaks, 0);
	CHECK(hits > 0);
out:
	for (int i = 0; i < 2; i++)
		a2m_close(h[i]);
	for (int n = 0; n < NOWN; n++)
		free(vecs[n]);
	check_remove_db(p1);
	check_remove_db(p2);
}

static void test_owner_and_session_filters_hold(void)
{
	owner_filter("memory");
	owner_filter("sqlite");
}

int main(void)
{
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-vquant-%d.db", (int)getpid());
	snprintf(pg_schema, sizeof pg_schema, "a2m_test_vquant_%d", (int)getpid());
	static const test_case tests[] = {
		TEST(test_store_pools_memory),
		TEST(test_store_pools_sqlite),
		TEST(test_store_pools_postgres),
		TEST(test_bad_values_refused),
		TEST(test_describe_declares_mode),
		TEST(test_recall_modes_memory),
		TEST(test_recall_modes_sqlite),
		TEST(test_filtered_pool_falls_back),
		TEST(test_owner_and_session_filters_hold),
		{NULL, NULL},
	};
	return run_tests(tests);
}
