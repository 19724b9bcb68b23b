/*
** test_vectors.c — the stores' vector search (store.h vector_search,
** store/vector_index.c) against a brute-force reference computed in double
** from the records themselves, on random data, for each metric and both
** engines: owner and tier filtering, updates that move a row between tiers
** or change its owner or vector, removals, rollback, a SQLite store reopened
** and one written by another connection; then the vector scorer's two paths
** and the hybrid's fused candidates against its relevance(). Records also
** carry generated vectors (gen_embedding, GDIMS wide), a second space
** searched apart (a2m_vector_search.generated) and checked the same way,
** through a model change that drops them all and brings another width.
** The stores, the records and the reference are tests/vectors_model.h.
*/
#include "vectors_model.h"

/* ---- the tests --------------------------------------------------------- */

/* A fresh store of engine sqlite holding n random records, checked once. */
static a2m_store *open_filled(int sqlite, int n)
{
	remove_db();
	a2m_store *s = open_engine(sqlite);
	CHECK(s != NULL);
	if (s && (insert_random(s, 0, n) != 0 || compare_all(s) != 0)) {
		CHECK(!"filled and searched");
		s->ops->close(s);
		s = NULL;
	}
	return s;
}

static void store_matches_reference(int sqlite)
{
	a2m_store *s = open_filled(sqlite, 400);
	if (!s)
		return;
	/* Writes after the first search (SQLite: after the cache was built). */
	CHECK_INT(insert_random(s, 400, 500), 0);
	CHECK_INT(churn(s, 500), 0);
	CHECK_INT(compare_all(s), 0);
	/* A reinforce: only the salience changes, above every other. */
	for (int i = 401; i < 420; i++) {
		char id[32];
		a2m_record *r = NULL;
		snprintf(id, sizeof id, "r%d", i);
		if (s->ops->get(s, id, &r) == 0 && r && r->embedding) {
			r->salience = 1e6;
			CHECK_INT(s->ops->update(s, r), 0);
			i = 420;
		}
		a2m_record_free(r);
	}
	CHECK_INT(compare_all(s), 0);
	s->ops->close(s);
	remove_db();
}

static void test_matches_reference(void)
{
	for (int e = 0; e < n_two; e++)
		store_matches_reference(two[e]);
}

/* Inside a transaction the rows wait; rollback drops, commit shows them. */
static void transactions(int sqlite)
{
	a2m_store *s = open_filled(sqlite, 200);
	if (!s)
		return;
	float q[DIMS] = {1};
	a2m_vector_search vs = {.vector = q, .dims = DIMS, .measure = A2M_VECTOR_COSINE};
	a2m_candidates got;

	CHECK_INT(s->ops->begin(s), 0);
	CHECK_INT(insert_random(s, 200, 260), 0);
	CHECK_INT(churn(s, 200), 0);
	/* The rows do not hold the open transaction's writes: the caller scans. */
	CHECK_INT(s->ops->vector_search(s, &vs, &got), A2M_STORE_NO_INDEX);
	s->ops->rollback(s);
	CHECK_INT(compare_all(s), 0);
	int64_t n = 0;
	a2m_query all = {0};
	CHECK_INT(s->ops->count(s, &all, &n), 0);
	CHECK_INT(n, 200);

	CHECK_INT(s->ops->begin(s), 0);
	CHECK_INT(insert_random(s, 200, 260), 0);
	CHECK_INT(churn(s, 260), 0);
	CHECK_INT(s->ops->commit(s), 0);
	CHECK_INT(compare_all(s), 0);
	s->ops->close(s);
	remove_db();
}

static void test_transactions(void)
{
	for (int e = 0; e < n_two; e++)
		transactions(two[e]);
}

/* The file is the truth: reopened, or written by another connection. */
static void test_sqlite_reopened_and_shared(void)
{
	a2m_store *s = open_filled(1, 300);
	if (!s)
		return;
	s->ops->close(s);
	s = open_engine(1);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_INT(compare_all(s), 0);
	/* Another connection writes: the first sees it at its next search. */
	a2m_store *other = open_engine(1);
	CHECK(other != NULL);
	if (other) {
		CHECK_INT(insert_random(other, 300, 340), 0);
		CHECK_INT(churn(other, 340), 0);
		other->ops->close(other);
	}
	CHECK_INT(compare_all(s), 0);
	s->ops->close(s);
	remove_db();
}

/* A vector of another width than the rows' is sent to a scan, never lost. */
static void test_other_width_sends_to_scan(void)
{
	for (int e_ = 0; e_ < n_two; e_++) {
		int sqlite = two[e_];
		a2m_store *s = open_filled(sqlite, 50);
		if (!s)
			return;
		float q[DIMS + 1] = {1};
		a2m_vector_search vs = {.vector = q, .dims = DIMS + 1, .measure = A2M_VECTOR_DOT};
		a2m_candidates got;
		/* No record has that width: judged, nothing. */
		CHECK_INT(s->ops->vector_search(s, &vs, &got), 0);
		CHECK_INT(got.n, 0);
		free(got.v);
		a2m_record *odd = make_record(1000, DIMS + 1);
		if (!odd->embedding) {
			odd->embedding = calloc(DIMS + 1, sizeof *odd->embedding);
			odd->dims = DIMS + 1;
		}
		CHECK_INT(s->ops->insert(s, odd), 0);
		a2m_record_free(odd);
		CHECK_INT(s->ops->vector_search(s, &vs, &got), A2M_STORE_NO_INDEX);
		/* The rows' own width still answers, without the odd one. */
		CHECK_INT(compare_all(s), 0);
		int removed = 0;
		CHECK_INT(s->ops->remove(s, "r1000", &removed), 0);
		CHECK_INT(s->ops->vector_search(s, &vs, &got), 0);
		CHECK_INT(got.n, 0);
		free(got.v);
		s->ops->close(s);
	}
	remove_db();
}

/* Sets (gen_dims 0: drops) the generated vector of every record, in one transaction. */
static int regenerate(a2m_store *s, size_t gen_dims, int commit)
{
	all_recs a = {0};
	a2m_query all = {0};
	int rc = s->ops->scan(s, &all, collect, &a) || s->ops->begin(s);
	for (size_t i = 0; i < a.n && !rc; i++) {
		a2m_record *r = a.v[i];
		free(r->gen_embedding);
		r->gen_embedding = gen_dims ? malloc(gen_dims * sizeof *r->gen_embedding) : NULL;
		r->gen_dims = gen_dims;
		for (size_t k = 0; k < gen_dims; k++)
			r->gen_embedding[k] = (float)(unif() * 2 - 1);
		rc = s->ops->update(s, r);
	}
	a2m_record_array_free(a.v, a.n);
	if (rc || !commit) {
		s->ops->rollback(s);
		return rc;
	}
	return s->ops->commit(s);
}

/*
** A model change (docs/EMBEDDINGS.md §4.4): every generated vector dropped
** in one transaction (rolled back: the rows are as before), then vectors of
** another width; the generated rows follow, the caller's are untouched.
*/
static void test_gen_model_change(void)
{
	for (int e_ = 0; e_ < n_two; e_++) {
		int sqlite = two[e_];
		a2m_store *s = open_filled(sqlite, 300);
		if (!s)
			return;
		CHECK_INT(regenerate(s, 0, 0), 0);
		CHECK_INT(compare_all(s), 0);
		CHECK_INT(regenerate(s, 0, 1), 0);
		float q[GDIMS] = {1};
		a2m_vector_search vs = {.vector = q, .dims = GDIMS, .measure = A2M_VECTOR_COSINE,
					.generated = 1};
		a2m_candidates got;
		CHECK_INT(s->ops->vector_search(s, &vs, &got), 0);
		CHECK_INT(got.n, 0);
		free(got.v);
		CHECK_INT(regenerate(s, GDIMS2, 1), 0);
		CHECK_INT(compare_gen(s, GDIMS2), 0);
		CHECK_INT(compare_all(s), 0);
		s->ops->close(s);
	}
	remove_db();
}

/* ---- records without vectors (store.h, scan_unembedded) ---------------- */

typedef struct seq_list {
	int64_t *v;
	size_t   n;
	const char *tier;
	int      all;     /* reference: every record (filtered here) */
} seq_list;

static int bare_visit(const a2m_record *rec, void *ctx)
{
	seq_list *l = ctx;
	if (l->all) {
		int blank = 1;
		for (const char *p = rec->content; *p; p++)
			blank &= strchr(" \t\n\r\f\v", *p) != NULL;
		if (!same(rec->tier, l->tier) || rec->embedding || rec->gen_embedding || blank)
			return 0;
	}
	l->v = realloc(l->v, (l->n + 1) * sizeof *l->v);
	l->v[l->n++] = rec->seq;
	return 0;
}

/* scan_unembedded of every tier against a scan filtered here, in seq order. */
static int compare_unembedded(a2m_store *s)
{
	static const char *const names[] = {"working", "semantic", NULL, "nowhere"};
	int bad = 0;
	for (size_t t = 0; t < 4 && !bad; t++) {
		seq_list got = {.tier = names[t]}, want = {.tier = names[t], .all = 1};
		a2m_query all = {0};
		if (s->ops->scan_unembedded(s, names[t], bare_visit, &got) != 0 ||
		    s->ops->scan(s, &all, bare_visit, &want) != 0)
			bad = 1;
		if (want.n)
			qsort(want.v, want.n, sizeof *want.v, by_seq_int);
		bad |= got.n != want.n;
		for (size_t i = 0; !bad && i < got.n; i++)
			bad |= got.v[i] != want.v[i];
		if (bad)
			fprintf(stderr, "  tier %s: %zu without vectors, want %zu\n",
				names[t] ? names[t] : "(none)", got.n, want.n);
		free(got.v);
		free(want.v);
	}
	return bad ? -1 : 0;
}

/*
** The records a server embedder may owe a vector are found by the store
** (a partial index; the memory engine's bitmaps) exactly as a scan finds
** them, through inserts, churn, blank content, a rollback and a commit,
** and a model change; a visit that stops is not called again.
*/
static void test_unembedded_found_without_scan(void)
{
	for (int e_ = 0; e_ < n_three; e_++) {
		int sqlite = three[e_];
		a2m_store *s = open_filled(sqlite, 400);
		if (!s)
			return;
		CHECK_INT(compare_unembedded(s), 0);
		CHECK_INT(churn(s, 400), 0);
		/* Blank content is owed nothing; text again, it is. */
		for (int i = 1; i < 60; i += 7) {
			char id[32];
			a2m_record *r = NULL;
			snprintf(id, sizeof id, "r%d", i);
			if (s->ops->get(s, id, &r) == 0 && r) {
				free(r->content);
				r->content = strdup(i % 2 ? " \t\n" : "words again");
				CHECK_INT(s->ops->update(s, r), 0);
			}
			a2m_record_free(r);
		}
		CHECK_INT(compare_unembedded(s), 0);
		CHECK_INT(s->ops->begin(s), 0);
		CHECK_INT(insert_random(s, 400, 450), 0);
		CHECK_INT(churn(s, 450), 0);
		s->ops->rollback(s);
		CHECK_INT(compare_unembedded(s), 0);
		CHECK_INT(regenerate(s, 0, 1), 0);
		CHECK_INT(compare_unembedded(s), 0);
		CHECK_INT(regenerate(s, GDIMS2, 1), 0);
		CHECK_INT(compare_unembedded(s), 0);
		s->ops->close(s);
	}
	remove_db();
}

/* ---- the scorers ------------------------------------------------------- */

/*
** candidates() and relevance() of sc over every record of s: the records
** judged above 0 are exactly the candidates, with the same relevance.
*/
static int paths_agree(a2m_scorer *sc, a2m_store *s, const a2m_rank_query *q)
{
	all_recs a = {0};
	a2m_query all = {0};
	a2m_candidates c;
	int bad = 0;
	if (s->ops->scan(s, &all, collect, &a) || sc->candidates(sc, s, q, &c) != 0)
		return -1;
	double *rel = calloc(a.n + 1, sizeof *rel);
	if (sc->relevance(sc, s, q, (const a2m_record *const *)a.v, a.n, rel) != 0)
		bad = 1;
	size_t judged = 0;
	for (size_t i = 0; i < a.n && !bad; i++) {
		if (rel[i] <= 0)
			continue;
		judged++;
		size_t k = 0;
		while (k < c.n && c.v[k].seq != a.v[i]->seq)
			k++;
		/* A bound is never below the relevance, and near it. */
		int off = k == c.n || (c.bounded ? c.v[k].score < rel[i] ||
						      c.v[k].score - rel[i] > 0.01
						    : fabs(c.v[k].score - rel[i]) > 1e-9);
		if (off) {
			fprintf(stderr, "  %s: relevance %.12g, candidate %.12g\n", a.v[i]->id, rel[i],
				k == c.n ? -1.0 : c.v[k].score);
			bad = 1;
		}
	}
	if (c.bounded != NULL && c.bounded != q)
		bad = 1;
	if (!bad && judged != c.n) {
		fprintf(stderr, "  %zu candidates, %zu judged\n", c.n, judged);
		bad = 1;
	}
	free(rel);
	free(c.v);
	a2m_record_array_free(a.v, a.n);
	return bad ? -1 : 0;
}

static void test_scorer_paths_agree(void)
{
	for (int e_ = 0; e_ < n_two; e_++) {
		int sqlite = two[e_];
		remove_db();
		a2m_store *s = open_engine(sqlite);
		CHECK(s != NULL);
		if (!s)
			return;
		a2m_scorer *text = a2m_scorer_bm25_new(NULL);
		CHECK(text && s->ops->index_attach(s, text->indexer) == 0);
		CHECK_INT(insert_random(s, 0, 300), 0);
		double qv[DIMS];
		for (size_t i = 0; i < DIMS; i++)
			qv[i] = unif() * 2 - 1;
		for (int m = 0; m < 3; m++) {
			a2m_scorer *v = a2m_scorer_vector_new((a2m_metric)m, 0);
			a2m_rank_query q = {.vector = qv, .dims = DIMS};
			CHECK_INT(paths_agree(v, s, &q), 0);
			/* Text and vector: the hybrid's fused lists are its mean. */
			a2m_scorer *parts[2] = {a2m_scorer_bm25_new(NULL), v};
			a2m_scorer *h = a2m_scorer_hybrid_new(parts, 2);
			CHECK(h != NULL);
			a2m_rank_query tq = {.text = "apples", .vector = qv, .dims = DIMS};
			CHECK_INT(paths_agree(h, s, &tq), 0);
			h->destroy(h);
		}
		/*
		** Text and a generated vector, as a2m_open builds it: a record
		** without a generated vector is left out of that part's mean.
		*/
		float gv[GDIMS];
		for (size_t i = 0; i < GDIMS; i++)
			gv[i] = (float)(unif() * 2 - 1);
		a2m_scorer *parts[3] = {a2m_scorer_bm25_new(NULL), a2m_scorer_vector_new(A2M_METRIC_COSINE, 0),
					a2m_scorer_gen_vector_new(A2M_GEN_MIN_COSINE)};
		a2m_scorer *h = a2m_scorer_hybrid_new(parts, 3);
		CHECK(h != NULL);
		static const char *const texts[] = {"apples", "record", "zebra", NULL};
		for (size_t i = 0; h && i < sizeof texts / sizeof *texts; i++) {
			a2m_rank_query gq = {.text = texts[i], .gen_vector = gv, .gen_dims = GDIMS};
			CHECK_INT(paths_agree(h, s, &gq), 0);
		}
		if (h)
			h->destroy(h);
		text->destroy(text);
		s->ops->close(s);
	}
	remove_db();
}

/*
** A long list comes with its best first (a2m_candidates.sorted): that
** prefix sorted, nothing after it ranking before its last.
*/
static void test_long_list_best_first(void)
{
	a2m_store *s = open_filled(0, 3000);
	if (!s)
		return;
	double qv[DIMS];
	for (size_t i = 0; i < DIMS; i++)
		qv[i] = unif() * 2 - 1;
	for (int m = 0; m < 3; m++) {
		a2m_scorer *v = a2m_scorer_vector_new((a2m_metric)m, 0);
		a2m_rank_query q = {.vector = qv, .dims = DIMS};
		a2m_candidates c;
		CHECK_INT(v->candidates(v, s, &q, &c), 0);
		CHECK(c.sorted > 100 && c.sorted < c.n);
		for (size_t i = 1; i < c.sorted && i < c.n; i++)
			CHECK(c.v[i - 1].score > c.v[i].score ||
			      (c.v[i - 1].score == c.v[i].score && c.v[i - 1].seq > c.v[i].seq));
		for (size_t i = c.sorted; c.sorted && i < c.n; i++)
			CHECK(c.v[i].score < c.v[c.sorted - 1].score ||
			      (c.v[i].score == c.v[c.sorted - 1].score &&
			       c.v[i].seq < c.v[c.sorted - 1].seq));
		CHECK_INT(paths_agree(v, s, &q), 0);
		free(c.v);
		v->destroy(v);
	}
	s->ops->close(s);
}

/* ---- recall end to end --------------------------------------------------- */

/* The vector scorer without candidates(): recall then scans and judges all. */
static int no_candidates(a2m_scorer *s, a2m_store *store, const a2m_rank_query *q,
			 a2m_candidates *out)
{
	(void)s, (void)store, (void)q;
	memset(out, 0, sizeof *out);
	return A2M_SCORER_SCAN;
}

/*
** A stack over a store of n records (the same ones for the same seed): a
** memory store, or the SQLite file path; gen: with the generated-vector
** part, as a2m_open adds it when an embedder is configured.
*/
static a2m_stack *recall_stack_on(const char *path, a2m_metric metric, int scan, uint64_t seed,
				  int n, int all, int gen)
{
	a2m_store *s = NULL;
	char err[256];
	/* "pg:<schema>": the PostgreSQL engine in that schema. */
	if (path && strncmp(path, "pg:", 3) == 0) {
		a2m_postgres_options po = {.schema = path + 3};
		a2m_store_postgres_open(pg_test_server(), &po, &s, err, sizeof err);
	} else if (path) {
		a2m_store_sqlite_open(path, NULL, &s, err, sizeof err);
	} else {
		a2m_store_memory_open(&s, err, sizeof err);
	}
	a2m_scorer *parts[3] = {a2m_scorer_bm25_new(NULL), a2m_scorer_vector_new(metric, 0),
				gen ? a2m_scorer_gen_vector_new(A2M_GEN_MIN_COSINE) : NULL};
	a2m_scorer *v = a2m_scorer_hybrid_new(parts, gen ? 3 : 2);
	a2m_stack_config cfg;
	memset(&cfg, 0, sizeof cfg);
	if (!s || !v || a2m_tiers_default(&cfg.tiers) != 0 ||
	    s->ops->index_attach(s, v->indexer) != 0)
		return NULL;
	if (scan)
		v->candidates = no_candidates;
	/* Salience in the blend: scores fall below their relevance. */
	cfg.blend = (a2m_blend){0.6, 0, 0.4};
	cfg.metric = metric;
	cfg.read_only = 1;
	rng_state = seed;
	for (int i = 0; i < n; i++) {
		a2m_record *r = make_record(i, DIMS);
		free(r->tier);
		r->tier = strdup(i % 2 ? "semantic" : "episodic");
		if (all && !r->embedding) {
			/* Every text match in the vector list: the hybrid keeps its bound. */
			r->embedding = calloc(DIMS, sizeof *r->embedding);
			r->dims = DIMS;
			r->embedding[i % DIMS] = 1;
		}
		r->salience = unif() * 4;
		if (s->ops->insert(s, r) != 0)
			return NULL;
		a2m_record_free(r);
	}
	return a2m_stack_new(s, v, &cfg);
}

static a2m_stack *recall_stack(a2m_metric metric, int scan, uint64_t seed, int n, int all)
{
	return recall_stack_on(NULL, metric, scan, seed, n, all, 0);
}

/* Selection k of a series: everything, scoped to ann, or bob's semantic records. */
static void vary_selection(int k, a2m_selection *sel)
{
	memset(sel, 0, sizeof *sel);
	if (k % 3 == 1)
		sel->scope = (a2m_scope){.scoped = 1, .owner = "ann"};
	if (k % 3 == 2)
		sel->q = (a2m_query){.by_owner = 1, .owner = "bob", .tier = "semantic"};
}

/*
** Recalls q from both stacks and checks that they return the same records
** in the same order with the same scores. Returns how many they returned.
*/
static size_t recall_agree(a2m_stack *fast, a2m_stack *slow, const a2m_selection *sel,
			   const a2m_rank_query *q, size_t limit)
{
	a2m_hit *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	a2m_error e1 = {0}, e2 = {0};
	CHECK_INT(a2m_stack_recall(fast, sel, q, 0, limit, &a, &na, &e1), 0);
	CHECK_INT(a2m_stack_recall(slow, sel, q, 0, limit, &b, &nb, &e2), 0);
	CHECK_INT(na, nb);
	for (size_t i = 0; i < na && i < nb; i++) {
		CHECK_STR(a[i].rec->id, b[i].rec->id);
		CHECK_NEAR(a[i].score, b[i].score, 1e-12);
	}
	a2m_hits_free(a, na);
	a2m_hits_free(b, nb);
	a2m_error_clear(&e1);
	a2m_error_clear(&e2);
	return na;
}

/*
** Recall through the vector rows (bounds, then the exact relevance of what
** is read) returns exactly what the scan path returns, scores included,
** for every metric, with and without text (fused by the hybrid), scoped
** and filtered by owner.
*/
static void test_recall_same_as_scan(void)
{
	for (int m = 0; m < 3; m++) {
		a2m_stack *fast = recall_stack((a2m_metric)m, 0, 7 + (uint64_t)m, 1500, m != 1);
		a2m_stack *slow = recall_stack((a2m_metric)m, 1, 7 + (uint64_t)m, 1500, m != 1);
		CHECK(fast && slow);
		for (int k = 0; fast && slow && k < 12; k++) {
			double qv[DIMS];
			for (size_t i = 0; i < DIMS; i++)
				qv[i] = unif() * 2 - 1;
			a2m_selection sel;
			vary_selection(k, &sel);
			/* Text as well one time in two: the hybrid fuses both lists. */
			a2m_rank_query q = {.vector = qv, .dims = DIMS, .text = k % 4 < 2 ? "apples" : NULL};
			size_t limit = k % 2 ? 10 : 40;
			CHECK(recall_agree(fast, slow, &sel, &q, limit) == limit);
		}
		a2m_stack_free(fast);
		a2m_stack_free(slow);
	}
}

/*
** A text query the server embedded (docs/EMBEDDINGS.md §4.3): recall
** through the generated rows and the term index returns exactly what the
** scan path returns, scores included, on both engines: text matching many,
** few or no records (the generated list alone), scoped and filtered.
*/
static void test_gen_recall_same_as_scan(void)
{
	char slow_path[80];
	snprintf(slow_path, sizeof slow_path, "%s-scan", db_path);
	static const char *const texts[] = {"apples", "record 12", "zebra", "the"};
	for (int e_ = 0; e_ < n_two; e_++) {
		int sqlite = two[e_];
		remove_db();
		unlink(slow_path);
		char fast_pg[96], slow_pg[96];
		snprintf(fast_pg, sizeof fast_pg, "pg:%s", pg_schema);
		snprintf(slow_pg, sizeof slow_pg, "pg:%s_scan", pg_schema);
		if (sqlite == E_PG) {
			pg_test_schema_drop(slow_pg + 3);
		}
		a2m_stack *fast = recall_stack_on(sqlite == E_PG ? fast_pg : sqlite ? db_path : NULL,
						  A2M_METRIC_COSINE, 0, 21, 1500, 0, 1);
		a2m_stack *slow = recall_stack_on(sqlite == E_PG ? slow_pg : sqlite ? slow_path : NULL,
						  A2M_METRIC_COSINE, 1, 21, 1500, 0, 1);
		CHECK(fast && slow);
		for (int k = 0; fast && slow && k < 16; k++) {
			float gv[GDIMS];
			for (size_t i = 0; i < GDIMS; i++)
				gv[i] = (float)(unif() * 2 - 1);
			a2m_selection sel;
			vary_selection(k, &sel);
			a2m_rank_query q = {.text = texts[k % 4], .gen_vector = gv, .gen_dims = GDIMS};
			CHECK(recall_agree(fast, slow, &sel, &q, k % 2 ? 10 : 40) > 0);
		}
		a2m_stack_free(fast);
		a2m_stack_free(slow);
	}
	remove_db();
	unlink(slow_path);
	if (pg_test_server()) {
		char slow_schema[96];
		snprintf(slow_schema, sizeof slow_schema, "%s_scan", pg_schema);
		pg_test_schema_drop(slow_schema);
	}
}

/* The kernels against a double reference, lengths that are not a multiple of a vector. */
/*
** Keeping the set of unembedded records rebuilds the index only when
** something was put before: a fresh store's index must follow its writes
** from the start, not ignore them until a first search rebuilds it all.
*/
static void test_keep_unembedded_invalidates_only_a_used_index(void)
{
	double v[4] = {1, 0, 0, 0};
	a2m_record rec = {.id = "r1", .seq = 1, .content = "some text", .tier = "semantic",
			  .embedding = v, .dims = 4, .salience = 1.0};
	a2m_vindex *fresh = a2m_vindex_new(), *used = a2m_vindex_new();
	CHECK(fresh && used);
	if (!fresh || !used) {
		a2m_vindex_free(fresh);
		a2m_vindex_free(used);
		return;
	}
	CHECK_INT(a2m_vindex_keep_unembedded(fresh), 0);
	a2m_vindex_put(fresh, &rec);
	CHECK_INT(a2m_vindex_valid(fresh), 1);
	a2m_vindex_put(used, &rec);
	CHECK_INT(a2m_vindex_keep_unembedded(used), 0);
	CHECK_INT(a2m_vindex_valid(used), 0);
	a2m_vindex_free(fresh);
	a2m_vindex_free(used);
}

static void test_kernels(void)
{
	for (size_t n = 0; n < 40; n++) {
		float a[40], b[40];
		double dot = 0, l2 = 0;
		for (size_t i = 0; i < n; i++) {
			a[i] = (float)(unif() * 2 - 1);
			b[i] = (float)(unif() * 2 - 1);
			dot += (double)a[i] * b[i];
			l2 += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		}
		CHECK_NEAR(a2m_vec_dot(a, b, n), dot, 1e-5);
		CHECK_NEAR(a2m_vec_l2sq(a, b, n), l2, 1e-5);
	}
}

int main(void)
{
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-vectors-%d.db", (int)getpid());
	if (pg_test_server()) {
		snprintf(pg_schema, sizeof pg_schema, "a2m_tv_%d", (int)getpid());
		n_two = 3;
		n_three = 5;
	} else {
		printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
	}
	static const test_case tests[] = {
		TEST(test_kernels),
		TEST(test_keep_unembedded_invalidates_only_a_used_index),
		TEST(test_matches_reference),
		TEST(test_transactions),
		TEST(test_sqlite_reopened_and_shared),
		TEST(test_other_width_sends_to_scan),
		TEST(test_scorer_paths_agree),
		TEST(test_long_list_best_first),
		TEST(test_recall_same_as_scan),
		TEST(test_gen_model_change),
		TEST(test_unembedded_found_without_scan),
		TEST(test_gen_recall_same_as_scan),
		{NULL, NULL},
	};
	return run_tests(tests);
}
