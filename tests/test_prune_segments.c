/*
** test_prune_segments.c — BM25's dynamic pruning (docs/RANKING.md §5)
** over SQLite's term index read a block at a time: exact over segments
** and skip tables, too-tight bounds caught, an older file read as it is,
** long lists taken as read and decoded blocks shed, lists read while
** another connection commits and merges, a corrupt block a clear error,
** and the postings cache's budget. Pruned, complete and scanned recall
** compared as in test_prune.c (tests/prune_stack.h).
*/
#include "prune_bounds.h"
#include "prune_stack.h"
#include "store/sqlite_segments_skip.h"

/*
** SQLite's long lists read a block at a time (skip tables): exact over
** segments of disjoint seq ranges (a store filled over 12 commits: some
** merged, some not, the last ones plain-listed when short), block-max on
** every query; and a skip table whose bounds are too tight (a test hook)
** makes recall miss records, which the comparison and a2m check catch.
*/
static void test_skip_tables_over_segments_and_too_tight(void)
{
	counts_checked = 0;
	fill_commits = 12;
	int lazy_before = lent_lazily;
	a2m_bm25_blockmax(2);  /* MaxScore: probes a block's bound before decoding it */
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 51, 0);
	a2m_bm25_blockmax(3);  /* WAND: seeks by the blocks' last seqs */
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 51, 0);
	lent_bounds_bound_their_postings(1, 0);
	CHECK(lent_lazily > lazy_before + 10);
	/* A cache too small to keep them: lent for their read bracket only. */
	a2m_sqlite_index_cache_budget_for_tests(40);
	lazy_before = lent_lazily;
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 53, 0);
	a2m_bm25_blockmax(2);
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 53, 0);
	a2m_bm25_blockmax(3);
	lent_bounds_bound_their_postings(1, 0);
	CHECK(lent_lazily > lazy_before + 10);
	a2m_sqlite_index_cache_budget_for_tests(0);
	/* Too tight: the same comparison must fail (WAND trusts every block's bound). */
	int failures = check_failures_in_test;
	fprintf(stderr, "  (mismatches below are expected: skip tables made too tight)\n");
	a2m_seg_skip_for_tests(2);
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 51, 0);
	int missed = check_failures_in_test - failures;
	check_failures_in_test = failures;
	CHECK(missed > 0);
	/* ... and a2m check says which table is wrong. */
	a2m_scorer *sc = a2m_scorer_bm25_new(NULL);
	rng_state = 52;
	a2m_store *s = filled_store(1, sc, 2500);
	a2m_seg_skip_for_tests(0);
	CHECK(s != NULL);
	if (s) {
		int problems = 0;
		a2m_check_options o = {.ix = sc->indexer, .report = count_problem, .ctx = &problems};
		fprintf(stderr, "  (problems below are expected: skip tables made too tight)\n");
		CHECK_INT(s->ops->check(s, &o), 0);
		CHECK(problems > 0);
		/* --repair rebuilds the index: its tables right again. */
		CHECK_INT(s->ops->repair(s, &o, 1u << A2M_CHECK_INDEX), 0);
		problems = 0;
		CHECK_INT(s->ops->check(s, &o), 0);
		CHECK_INT(problems, 0);
		s->ops->close(s);
		sc->destroy(sc);
	}
	remove_db();
	fill_commits = 0;
	counts_checked = 1;
	a2m_bm25_blockmax(1);
}

/* One integer from the test's SQLite file (-1 when the query fails). */
static int64_t sql_int64(const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = -1;
	if (sqlite3_open(db_path, &db) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* A SQLite file of n records indexed for sc, closed (sc destroyed): 1, or 0 (checked). */
static int filled_file(a2m_scorer *sc, int n)
{
	a2m_store *s = filled_store(1, sc, n);
	CHECK(s != NULL);
	if (!s)
		return 0;
	s->ops->close(s);
	sc->destroy(sc);
	return 1;
}

/*
** A file of the previous layout (postings/5: no skip table anywhere) is
** taken as it is, renamed postings/6 at a read-write open, and read
** exactly: its plain lists beside the skip tables of the segments
** written after it.
*/
static void test_a_file_without_skip_tables_is_read_as_it_is(void)
{
	a2m_scorer *sc = a2m_scorer_bm25_new(NULL);
	a2m_seg_skip_for_tests(1);
	rng_state = 61;
	fill_commits = 3;
	int made = filled_file(sc, 2000);
	fill_commits = 0;
	a2m_seg_skip_for_tests(0);
	if (!made)
		return;
	sqlite3 *db = NULL;
	CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
	CHECK_INT(sqlite3_exec(db, "UPDATE a2m_meta SET value = replace(value, 'postings/7|',"
			       " 'postings/5|') WHERE name = 'index'", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	/* Opened: the index taken as it is (its rows unchanged), renamed. */
	int64_t bytes = sql_int64("SELECT sum(length(data)) FROM a2m_segments");
	CHECK(bytes > 0);
	CHECK_INT(sql_int64("SELECT value LIKE 'postings/5|%' FROM a2m_meta WHERE name = 'index'"), 1);
	keep_db = 1;
	filled_file(a2m_scorer_bm25_new(NULL), 2000);
	keep_db = 0;
	CHECK_INT(sql_int64("SELECT sum(length(data)) FROM a2m_segments"), bytes);
	CHECK_INT(sql_int64("SELECT value LIKE 'postings/7|%' FROM a2m_meta WHERE name = 'index'"), 1);
	/* Churned (new segments, with tables), compared. */
	a2m_bm25_blockmax(2);
	counts_checked = 0;
	churn_commits = 4;
	keep_db = 1;
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 62, 0);
	keep_db = 0;
	churn_commits = 0;
	counts_checked = 1;
	a2m_bm25_blockmax(1);
	remove_db();
}

/*
** 150 random queries over st, each recalled twice pruned and once
** complete (each in a bracket of its own): the same hits every time.
*/
static void pruned_twice_and_complete(a2m_stack *st)
{
	a2m_selection sel;
	memset(&sel, 0, sizeof sel);
	for (int k = 0; st && k < 150; k++) {
		char text[256];
		query_text(text, sizeof text);
		size_t limit = 1 + rng() % 5;
		a2m_hit *h[3] = {NULL, NULL, NULL};
		size_t n[3] = {0, 0, 0};
		CHECK_INT(recall_as(st, ASK_AS_IS, &sel, text, 0, limit, &h[0], &n[0]), 0);
		CHECK_INT(recall_as(st, ASK_AS_IS, &sel, text, 0, limit, &h[1], &n[1]), 0);
		CHECK_INT(recall_as(st, ASK_COMPLETE, &sel, text, 0, limit, &h[2], &n[2]), 0);
		same_hits(h[1], n[1], h[0], n[0], "pruned again vs pruned");
		same_hits(h[0], n[0], h[2], n[2], "pruned vs complete");
		for (int m = 0; m < 3; m++)
			a2m_hits_free(h[m], n[m]);
	}
}

/* pruned_twice_and_complete over a store of 20 000 records (rng 73), then gone. */
static void pruned_over_20000(void)
{
	rng_state = 73;
	a2m_stack *st = prune_stack(1, 20000, (a2m_blend){0.75, 0.15, 0.10});
	CHECK(st != NULL);
	pruned_twice_and_complete(st);
	a2m_stack_free(st);
	remove_db();
}

/*
** Long lists read into buffers of their own and taken as they are by the
** lazily read term (sqlite_segments_read.c, OWN_BYTES: here every list of
** 64 bytes or more), exact; then with a cache so small that the blocks a
** kept term gathers outweigh what an entry may hold: with probes that
** fill every block they stop in (as before peeks), those blocks are shed
** between queries (decoded again when asked); with peeks (the default),
** a probe decodes its block up to the record and keeps nothing, with the
** cache small or with room for every block. Exact every way.
*/
static void test_long_lists_taken_as_read_and_shed(void)
{
	a2m_bm25_blockmax(2);
	counts_checked = 0;
	fill_commits = 12;
	a2m_segments_own_bytes_for_tests(64);
	int lazy_before = lent_lazily;
	recall_same_as_complete(1, (a2m_blend){0.75, 0.15, 0.10}, 71, 0);
	lent_bounds_bound_their_postings(1, 0);
	CHECK(lent_lazily > lazy_before + 10);
	/*
	** A kept term's blocks decoded by one pruned recall, shed before the
	** next one's, then the list read whole (complete: too big to keep
	** then, let go at the bracket's end); over 20 000 records, whose
	** frequent words have lists of dozens of blocks (a budget of 5 000
	** bytes: half of it is the most a term may hold).
	*/
	size_t sheds = a2m_seg_lazy_sheds(), peeks = a2m_seg_lazy_peeks();
	a2m_sqlite_index_cache_budget_for_tests(5000);
	a2m_sqlite_index_peeks_fill_for_tests(1);
	pruned_over_20000();
	CHECK(a2m_seg_lazy_sheds() > sheds);
	CHECK(a2m_seg_lazy_peeks() == peeks);
	/* The same with peeks: blocks decoded up to a record, not kept. */
	a2m_sqlite_index_peeks_fill_for_tests(0);
	pruned_over_20000();
	CHECK(a2m_seg_lazy_peeks() > peeks);
	a2m_sqlite_index_cache_budget_for_tests(0);
	/*
	** With the cache's whole budget, room for every block: probes into
	** long lists still peek and keep nothing (sqlite_index_read.c,
	** PEEK_FILL_BYTES, here 4 KiB: 20 000 records' lists are short),
	** exact all the same.
	*/
	peeks = a2m_seg_lazy_peeks();
	a2m_sqlite_index_peek_fill_bytes_for_tests(4096);
	pruned_over_20000();
	CHECK(a2m_seg_lazy_peeks() > peeks);
	a2m_sqlite_index_peek_fill_bytes_for_tests(0);
	a2m_segments_own_bytes_for_tests(0);
	fill_commits = 0;
	counts_checked = 1;
	a2m_bm25_blockmax(1);
}

/* A second connection writing to the file while the test reads it. */
typedef struct writer {
	pthread_t   thread;
	atomic_int  stop;
	atomic_int  queries;  /* the reader's, so far: the writer keeps pace */
	int         commits, rc;
	char      (*texts)[256];
	size_t      ntexts;
} writer;

/*
** Commits of 40 records each until told to stop (segments flushed and
** merged), at most two ahead of the reader's queries: unpaced, it wrote
** 3 781 commits (151 000 records) while the reader ran its 200 queries,
** every one of which scans the store, for nothing the test checks.
*/
static void *write_on(void *arg)
{
	writer *w = arg;
	a2m_scorer *sc = server_scorer();
	a2m_store *s = NULL;
	char err[256], id[32];
	size_t at = 0;
	if (!sc || a2m_store_sqlite_open(db_path, NULL, &s, err, sizeof err) != 0 ||
	    s->ops->index_attach(s, sc->indexer) != 0) {
		w->rc = -1;
		goto out;
	}
	while (!atomic_load(&w->stop) && !w->rc) {
		if (w->commits > atomic_load(&w->queries) + 2) {
			usleep(200);
			continue;
		}
		w->rc = s->ops->begin(s);
		for (int i = 0; i < 40 && !w->rc; i++, at++) {
			a2m_record *r = a2m_record_new();
			if (!r) {
				w->rc = -1;
				break;
			}
			snprintf(id, sizeof id, "w%zu", at);
			r->id = strdup(id);
			r->content = strdup(w->texts[at % w->ntexts]);
			r->tier = strdup(tiers[at % 4]);
			r->created_at = 4102444800000LL + 100000 + (int64_t)at;
			r->salience = 1;
			w->rc = s->ops->insert(s, r);
			a2m_record_free(r);
		}
		if (!w->rc)
			w->rc = s->ops->commit(s);
		else
			s->ops->rollback(s);
		w->commits++;
	}
out:
	if (s)
		s->ops->close(s);
	if (sc)
		sc->destroy(sc);
	return NULL;
}

/*
** Lists read a block at a time while another connection commits to the
** file and merges its segments (rows rewritten, segments dropped): each
** query pruned, complete and scanned in one read bracket, so in one
** snapshot, the same; the lists a bracket reads are its own copies, and
** the cache sees every commit (its data version).
*/
static void test_lists_read_while_another_connection_merges(void)
{
	a2m_bm25_blockmax(2);
	counts_checked = 0;
	fill_commits = 9;
	a2m_segments_own_bytes_for_tests(64);
	rng_state = 81;
	a2m_stack *st = prune_stack(1, 2500, (a2m_blend){0.75, 0.15, 0.10});
	CHECK(st != NULL);
	static char texts[600][256];
	for (size_t i = 0; i < 600; i++)
		sentence(texts[i], sizeof texts[i], 4 + rng() % 14, 0);
	writer w = {.texts = texts, .ntexts = 600};
	atomic_init(&w.stop, 0);
	atomic_init(&w.queries, 0);
	int started = st && pthread_create(&w.thread, NULL, write_on, &w) == 0;
	CHECK(started);
	size_t skipped = a2m_bm25_blockmax_skipped();
	size_t reads_before = a2m_segments_block_reads();
	for (int k = 0; started && k < 200; k++) {
		char text[256];
		query_text(text, sizeof text);
		a2m_selection sel;
		memset(&sel, 0, sizeof sel);
		a2m_error err = {0};
		a2m_hit *h[3] = {NULL, NULL, NULL};
		size_t n[3] = {0, 0, 0};
		size_t limit = 1 + rng() % 20;
		a2m_rank_query q = {.text = text};
		int rc = a2m_stack_read_begin(st, &err);
		CHECK_INT(rc, 0);
		for (int m = 0; !rc && m < 3; m++) {
			the_switch->mode = m;
			rc = a2m_stack_recall(st, &sel, &q, 0, limit, &h[m], &n[m], &err);
			CHECK_INT(rc, 0);
			if (rc)
				fprintf(stderr, "  recall: %s\n", err.message);
		}
		if (!rc)
			a2m_stack_read_end(st, &err);
		a2m_error_clear(&err);
		same_hits(h[ASK_AS_IS], n[ASK_AS_IS], h[ASK_COMPLETE], n[ASK_COMPLETE],
			  "pruned vs complete");
		same_hits(h[ASK_AS_IS], n[ASK_AS_IS], h[ASK_SCAN], n[ASK_SCAN], "pruned vs scan");
		for (int m = 0; m < 3; m++)
			a2m_hits_free(h[m], n[m]);
		atomic_fetch_add(&w.queries, 1);
	}
	if (started) {
		atomic_store(&w.stop, 1);
		pthread_join(w.thread, NULL);
		CHECK_INT(w.rc, 0);
		/* Enough commits for merges (a level is merged at 8 segments). */
		CHECK(w.commits > 8);
		CHECK(a2m_bm25_blockmax_skipped() > skipped);
		CHECK(a2m_segments_block_reads() > reads_before);
	}
	a2m_stack_free(st);
	remove_db();
	a2m_segments_own_bytes_for_tests(0);
	fill_commits = 0;
	counts_checked = 1;
	a2m_bm25_blockmax(1);
}

/*
** A block whose bytes do not decode as its skip table says (one byte of
** the first block of the longest list set to a varint's continuation): a
** recall reading the term a block at a time fails with a store error that
** names the term and says what a2m check says, which reports it too.
*/
static void test_a_corrupt_block_is_a_clear_error(void)
{
	a2m_scorer *sc = a2m_scorer_bm25_new(NULL);
	rng_state = 91;
	if (!filled_file(sc, 2500))
		return;
	/* The longest row: a list long enough to have a skip table. */
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
	CHECK_INT(sqlite3_prepare_v2(db, "SELECT seg, term, data FROM a2m_segments"
				     " ORDER BY length(data) DESC LIMIT 1", -1, &st, NULL), SQLITE_OK);
	CHECK_INT(sqlite3_step(st), SQLITE_ROW);
	int64_t seg = sqlite3_column_int64(st, 0);
	char key[256], term[256] = "";
	snprintf(key, sizeof key, "%s", (const char *)sqlite3_column_text(st, 1));
	size_t n = (size_t)sqlite3_column_bytes(st, 2);
	unsigned char *data = malloc(n);
	CHECK(data != NULL);
	if (data)
		memcpy(data, sqlite3_column_blob(st, 2), n);
	sqlite3_finalize(st);
	/* Its longest list. */
	const unsigned char *p = data, *t, *list = NULL, *l;
	size_t tlen, lsize = 0, ls;
	while (data && a2m_seg_next_in_block(&p, data + n, &t, &tlen, &l, &ls) == 1)
		if (ls > lsize && tlen < sizeof term) {
			list = l;
			lsize = ls;
			memcpy(term, t, tlen);
			term[tlen] = '\0';
		}
	a2m_seg_skip sk;
	CHECK_INT(a2m_seg_skip_open(list, lsize, &sk), 1);
	CHECK(sk.nblocks > 2);
	a2m_seg_skip_iter it;
	a2m_seg_skip_block b = {0};
	a2m_seg_skip_first(&sk, &it);
	CHECK_INT(a2m_seg_skip_next(&it, &b), 1);
	/* Block 0's last byte: its last entry's varint now runs past the block. */
	data[(size_t)(sk.entries_at - data) + b.at + b.bytes - 1] |= 0x80;
	CHECK_INT(sqlite3_prepare_v2(db, "UPDATE a2m_segments SET data = ?3 WHERE seg = ?1"
				     " AND term = ?2", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, seg);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 3, data, (int)n, SQLITE_STATIC);
	CHECK_INT(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(data);
	/* Recalled through block-max: the clear error, naming the term. */
	a2m_bm25_blockmax(2);
	keep_db = 1;
	a2m_stack *stk = prune_stack(1, 2500, (a2m_blend){0.75, 0.15, 0.10});
	keep_db = 0;
	CHECK(stk != NULL);
	if (stk) {
		a2m_selection sel;
		memset(&sel, 0, sizeof sel);
		a2m_error err = {0};
		a2m_hit *h = NULL;
		size_t nh = 0;
		a2m_rank_query q = {.text = term};
		the_switch->mode = ASK_AS_IS;
		int rc = a2m_stack_read_begin(stk, &err);
		CHECK_INT(rc, 0);
		if (!rc) {
			CHECK_INT(a2m_stack_recall(stk, &sel, &q, 0, 5, &h, &nh, &err),
				  A2M_INTERNAL_ERROR);
			a2m_stack_read_end(stk, &(a2m_error){0});
		}
		char want[512];
		snprintf(want, sizeof want, "block 0 of the list of \"%s\" does not match its skip "
			 "table (a2m check reports it", term);
		CHECK(strstr(err.message, want) != NULL);
		if (!strstr(err.message, want))
			fprintf(stderr, "  got: %s\n", err.message);
		a2m_error_clear(&err);
		a2m_hits_free(h, nh);
		/* a2m check names the same table. */
		int problems = 0;
		a2m_check_options o = {.ix = the_switch->inner->indexer, .report = count_problem,
				       .ctx = &problems};
		fprintf(stderr, "  (problems below are expected: a block made corrupt)\n");
		CHECK_INT(stk->store->ops->check(stk->store, &o), 0);
		CHECK(problems > 0);
		a2m_stack_free(stk);
	}
	a2m_bm25_blockmax(1);
	remove_db();
}

/* The ids of a recall of query on h (limit 20), as one string. */
static void recalled_ids(a2m *h, const char *query, char *out, size_t cap)
{
	json_t *r = check_call(h, "memory/recall", "{\"query\":\"%s\",\"limit\":20}", query);
	json_t *recs = json_object_get(json_object_get(r, "result"), "records"), *rec;
	size_t i, n = 0;
	out[0] = '\0';
	json_array_foreach(recs, i, rec)
		n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s ",
				      json_string_value(json_object_get(rec, "id")));
	CHECK(json_array_size(recs) == 20);
	json_decref(r);
}

/* Counts a term's postings (index_postings' visit). */
static int count_postings(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	(void)seq, (void)tf, (void)dl;
	++*(size_t *)ctx;
	return 0;
}

/* The postings cache budget of the connection a bracket on s is lent (0: none). */
typedef struct reader_budget {
	a2m_store *s;
	size_t     budget;
} reader_budget;

static void *budget_on_a_reader(void *arg)
{
	reader_budget *rb = arg;
	if (rb->s->ops->read_begin(rb->s) != 0)
		return NULL;
	sqlstore *c = a2m_sqlite_conn(rb->s);
	/* A term read first: a budget that follows the index is set then. */
	size_t n = 0;
	CHECK_INT(rb->s->ops->index_postings(rb->s, "kalo", 4, count_postings, &n), 0);
	CHECK(n > 0);
	if (c != (sqlstore *)rb->s && c->index && c->index->cache)
		(void)a2m_pcache_used(c->index->cache, &rb->budget);
	rb->s->ops->read_end(rb->s);
	return NULL;
}

/*
** What the postings cache of h's store holds once every term of the corpus
** was read through it, and its budget: *main, the main connection's (read
** outside a bracket, so through its cache), *bracket the budget of a
** reader of the pool, as a read bracket is lent one (0: none was). Returns the postings read, 0 when the store could not be reached.
*/
static size_t fill_postings_cache(a2m *h, size_t *used, size_t *main, size_t *bracket)
{
	a2m_store *s = h->srv.stack->store;
	sqlstore *m = (sqlstore *)s;
	*used = *main = *bracket = 0;
	if (strcmp(s->ops->engine, "sqlite") != 0 || !m->index || !m->index->cache)
		return 0;
	/* Every surface form word() can draw, analysed: the corpus's terms. */
	static const char *const syl[] = {"ka", "lo", "mi", "ren", "to", "vas", "qui", "del",
					  "no", "par", "su", "fin"};
	static const char *const suffix[] = {"", "s", "ing", "ed"};
	a2m_buf text = {0};
	for (size_t i = 12; i < VOCAB + 12; i++)
		for (size_t k = 0; k < 4; k++) {
			for (size_t j = i; j; j /= 12)
				a2m_buf_puts(&text, syl[j % 12]);
			a2m_buf_printf(&text, "%s ", suffix[k]);
		}
	a2m_indexer *ix = m->index->ix;
	a2m_doc_terms dt;
	memset(&dt, 0, sizeof dt);
	size_t n = 0;
	if (!text.failed && ix->analyze(ix, text.p, &dt) == 0)
		for (size_t t = 0; t < dt.n; t++)
			CHECK_INT(s->ops->index_postings(s, dt.terms[t].text, dt.terms[t].len,
							 count_postings, &n), 0);
	ix->release(ix, &dt);
	a2m_buf_free(&text);
	*used = a2m_pcache_used(m->index->cache, main);
	/* While this thread holds the main connection in a bracket, another's
	** bracket is lent a reader of the pool. */
	pthread_t t;
	reader_budget rb = {s, 0};
	if (s->ops->read_begin(s) == 0) {
		CHECK(pthread_create(&t, NULL, budget_on_a_reader, &rb) == 0 &&
		      pthread_join(t, NULL) == 0);
		s->ops->read_end(s);
	}
	*bracket = rb.budget;
	return n;
}

/*
** A fresh SQLite file at db_path, opened through the library, holding
** batches of 1 000 random sentences drawn from seed (one remember each).
** NULL, with a failure counted, when it cannot be opened.
*/
static a2m *filled_handle(uint64_t seed, int batches)
{
	remove_db();
	a2m *h = check_open("engine", "sqlite", "path", db_path, NULL);
	CHECK(h != NULL);
	char text[256];
	rng_state = seed;
	for (int b = 0; h && b < batches; b++) {
		json_t *recs = json_array();
		for (int i = 0; i < 1000; i++) {
			sentence(text, sizeof text, 4 + rng() % 14, 0);
			json_array_append_new(recs, json_pack("{ss}", "content", text));
		}
		json_t *r = check_call_json(h, "memory/remember", json_pack("{so}", "records", recs));
		CHECK_INT(check_error_code(r), 0);
		json_decref(r);
	}
	return h;
}

/*
** The option postings_cache_mb (1 to 65536) through the library: refused
** out of its bounds; a server keeping 1 MiB of lists gives that budget to
** every connection (the main one, the readers), keeps no more than that of
** a corpus whose lists take more, and recalls what one with the default
** (which keeps them all) recalls, on the same file.
*/
static void test_the_postings_cache_budget_is_an_option(void)
{
	a2m_config *cfg = NULL;
	CHECK_INT(a2m_config_new(&cfg), A2M_OK);
	CHECK(a2m_config_set(cfg, "postings_cache_mb", "0") != A2M_OK);
	CHECK(a2m_config_set(cfg, "postings_cache_mb", "65537") != A2M_OK);
	CHECK_INT(a2m_config_set(cfg, "postings_cache_mb", "1"), A2M_OK);
	a2m_config_free(cfg);
	a2m *h = filled_handle(101, 6);
	char text[256];
	char want[2048], got[2048];
	size_t used, main_budget, bracket_budget, postings;
	snprintf(text, sizeof text, "kalo lolo");
	if (h) {
		recalled_ids(h, text, want, sizeof want);
		/* The default keeps every list: more than 1 MiB of them. */
		postings = fill_postings_cache(h, &used, &main_budget, &bracket_budget);
		CHECK(main_budget == (size_t)64 << 20 && bracket_budget == main_budget);
		CHECK(postings * sizeof(a2m_posting) > (size_t)1 << 20);
		CHECK(used > (size_t)1 << 20);
		a2m_close(h);
	}
	h = check_open("engine", "sqlite", "path", db_path, "postings_cache_mb", "1", NULL);
	CHECK(h != NULL);
	if (h) {
		recalled_ids(h, text, got, sizeof got);
		CHECK(strcmp(got, want) == 0);
		postings = fill_postings_cache(h, &used, &main_budget, &bracket_budget);
		CHECK(main_budget == (size_t)1 << 20 && bracket_budget == main_budget);
		CHECK(postings * sizeof(a2m_posting) > (size_t)1 << 20);
		CHECK(used <= (size_t)1 << 20 && used > (size_t)1 << 19);
		a2m_close(h);
	}
	remove_db();
}

/*
** The default budget follows the index: 64 MiB up to 64 MiB of lists
** (the bench's 1M file: 8.8 M entries), as many bytes as the lists
** above, 256 MiB at most (its 10M file: 88 M entries). A store whose
** entries count for more (the test hook) gets the scaled budget on its
** main connection once a term is read, its readers keep 64 MiB, the option
** wins over it, and the recall is the same.
*/
static void test_the_default_budget_grows_with_the_index(void)
{
	const size_t mib = (size_t)1 << 20;
	CHECK(a2m_sqlite_index_scaled_budget(0) == 64 * mib);
	CHECK(a2m_sqlite_index_scaled_budget(8796443) == 64 * mib);
	CHECK(a2m_sqlite_index_scaled_budget(24 << 20) == 96 * mib);
	CHECK(a2m_sqlite_index_scaled_budget((24 << 20) + 1) == 97 * mib);
	CHECK(a2m_sqlite_index_scaled_budget(87973926) == 256 * mib);
	CHECK(a2m_sqlite_index_scaled_budget(INT64_MAX) == 256 * mib);
	a2m *h = filled_handle(103, 4);
	char text[256];
	char want[2048], got[2048];
	size_t used, main_budget, bracket_budget;
	snprintf(text, sizeof text, "kalo lolo");
	if (h) {
		recalled_ids(h, text, want, sizeof want);
		a2m_close(h);
	}
	/* 4 KiB an entry: the store's few ten thousand entries call for more than 64 MiB. */
	a2m_sqlite_index_entry_bytes_for_tests(4096);
	h = check_open("engine", "sqlite", "path", db_path, NULL);
	CHECK(h != NULL);
	if (h) {
		sqlstore *m = (sqlstore *)h->srv.stack->store;
		CHECK(m->index && a2m_sqlite_index_cache_bytes(m->index) == 64 * mib);
		recalled_ids(h, text, got, sizeof got);
		CHECK(strcmp(got, want) == 0);
		CHECK(fill_postings_cache(h, &used, &main_budget, &bracket_budget) > 0);
		int64_t entries = *a2m_segments_entries(m->index->segs);
		CHECK(entries > 16384);
		CHECK(main_budget == a2m_sqlite_index_scaled_budget(entries));
		CHECK(main_budget > 64 * mib && main_budget <= 256 * mib);
		CHECK(bracket_budget == 64 * mib);
		a2m_close(h);
	}
	h = check_open("engine", "sqlite", "path", db_path, "postings_cache_mb", "2", NULL);
	CHECK(h != NULL);
	if (h) {
		recalled_ids(h, text, got, sizeof got);
		CHECK(strcmp(got, want) == 0);
		CHECK(fill_postings_cache(h, &used, &main_budget, &bracket_budget) > 0);
		CHECK(main_budget == 2 * mib && bracket_budget == 2 * mib);
		a2m_close(h);
	}
	a2m_sqlite_index_entry_bytes_for_tests(0);
	remove_db();
}

int main(void)
{
	prune_stack_start();
	static const test_case tests[] = {
		TEST(test_skip_tables_over_segments_and_too_tight),
		TEST(test_a_file_without_skip_tables_is_read_as_it_is),
		TEST(test_long_lists_taken_as_read_and_shed),
		TEST(test_lists_read_while_another_connection_merges),
		TEST(test_a_corrupt_block_is_a_clear_error),
		TEST(test_the_postings_cache_budget_is_an_option),
		TEST(test_the_default_budget_grows_with_the_index),
		{NULL, NULL},
	};
	int rc = run_tests(tests);
	remove_db();
	return rc;
}
