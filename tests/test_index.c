/*
** test_index.c — the term index of the storage seam (store.h: index_attach,
** index_stats, index_postings, visit_seqs), each rule against both engines.
**
** The stores are given a trivial analyser (words are runs of ASCII letters
** and digits, lower-cased) that counts its calls, so the rules are about
** the store, not the analysis: what is indexed when, in which transaction,
** and what survives a rollback or a reopen.
** The segments (test_index_merges.c, test_index_segments.c) and the tail
** (test_index_tail.c) have programs of their own; the analyser and the
** harness are tests/index_harness.h.
*/
#include "index_harness.h"

/* ---- the rules ---- */

static void test_insert_indexes_terms_with_counts_and_length(tctx *t)
{
	int64_t seq = insert(t, "a", "Deploy key, deploy often");
	EXPECT(seq > 0);
	plist p = {0};
	EXPECT_OK(t->s->ops->index_postings(t->s, "deploy", 6, collect, &p));
	EXPECT_INT(p.n, 1);
	EXPECT_INT(p.seq[0], seq);
	EXPECT_INT(p.tf[0], 2);
	EXPECT_INT(p.dl[0], 4);
	EXPECT_INT(df(t, "often"), 1);
	EXPECT_INT(df(t, "nowhere"), 0);
	a2m_index_stats st = stats(t);
	EXPECT_INT(st.docs, 1);
	EXPECT_INT(st.total_len, 4);
	EXPECT_INT(st.unindexed, 0);
}

static void test_text_without_terms_counts_as_unindexed(tctx *t)
{
	EXPECT(insert(t, "a", "!!! ???") > 0);
	EXPECT(insert(t, "b", "   ") > 0);
	EXPECT(insert(t, "c", "words here") > 0);
	a2m_index_stats st = stats(t);
	EXPECT_INT(st.docs, 1);
	EXPECT_INT(st.unindexed, 1);
}

static void test_update_without_new_content_does_not_reindex(tctx *t)
{
	EXPECT(insert(t, "a", "alpha beta") > 0);
	int before = tix.calls;
	EXPECT_OK(update(t, "a", NULL, 5));
	EXPECT_INT(tix.calls, before);
	EXPECT_INT(df(t, "alpha"), 1);
}

static void test_update_with_new_content_moves_postings(tctx *t)
{
	EXPECT(insert(t, "a", "alpha beta") > 0);
	EXPECT(insert(t, "b", "beta gamma") > 0);
	EXPECT_OK(update(t, "a", "gamma delta delta", 0));
	EXPECT_INT(df(t, "alpha"), 0);
	EXPECT_INT(df(t, "beta"), 1);
	EXPECT_INT(df(t, "gamma"), 2);
	EXPECT_INT(df(t, "delta"), 1);
	a2m_index_stats st = stats(t);
	EXPECT_INT(st.docs, 2);
	EXPECT_INT(st.total_len, 5);
}

static void test_remove_drops_postings_and_figures(tctx *t)
{
	int removed = 0;
	EXPECT(insert(t, "a", "alpha beta") > 0);
	EXPECT(insert(t, "b", "beta") > 0);
	EXPECT(insert(t, "c", "...") > 0);
	EXPECT_OK(t->s->ops->remove(t->s, "a", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_OK(t->s->ops->remove(t->s, "c", &removed));
	EXPECT_INT(df(t, "alpha"), 0);
	EXPECT_INT(df(t, "beta"), 1);
	a2m_index_stats st = stats(t);
	EXPECT_INT(st.docs, 1);
	EXPECT_INT(st.total_len, 1);
	EXPECT_INT(st.unindexed, 0);
}

/*
** A term whose list outgrew a block keeps block bounds (memory_index.c):
** removing every record holding it frees the term with them (a leak the
** sanitizer build reports at exit otherwise).
*/
static void test_remove_every_posting_of_a_long_list(tctx *t)
{
	char id[16];
	int removed = 0;
	for (int i = 0; i < 200; i++) {
		snprintf(id, sizeof id, "w%d", i);
		EXPECT(insert(t, id, "walrus on the ice") > 0);
	}
	EXPECT_INT(df(t, "walrus"), 64);  /* collect() keeps 64 */
	for (int i = 0; i < 200; i++) {
		snprintf(id, sizeof id, "w%d", i);
		EXPECT_OK(t->s->ops->remove(t->s, id, &removed));
		EXPECT_INT(removed, 1);
	}
	EXPECT_INT(df(t, "walrus"), 0);
	EXPECT_INT(stats(t).docs, 0);
}

static void test_rollback_restores_the_index(tctx *t)
{
	int removed = 0;
	EXPECT(insert(t, "a", "alpha beta") > 0);
	EXPECT(insert(t, "b", "beta gamma") > 0);
	a2m_index_stats before = stats(t);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "c", "gamma delta") > 0);
	EXPECT_OK(update(t, "a", "epsilon", 0));
	EXPECT_OK(t->s->ops->remove(t->s, "b", &removed));
	EXPECT_INT(df(t, "epsilon"), 1);
	EXPECT_INT(df(t, "beta"), 0);
	t->s->ops->rollback(t->s);
	EXPECT_INT(df(t, "alpha"), 1);
	EXPECT_INT(df(t, "beta"), 2);
	EXPECT_INT(df(t, "gamma"), 1);
	EXPECT_INT(df(t, "delta"), 0);
	EXPECT_INT(df(t, "epsilon"), 0);
	a2m_index_stats after = stats(t);
	EXPECT_INT(after.docs, before.docs);
	EXPECT_INT(after.total_len, before.total_len);
}

static void test_commit_keeps_the_index(tctx *t)
{
	int removed = 0;
	EXPECT(insert(t, "a", "alpha") > 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "b", "alpha beta") > 0);
	EXPECT_OK(t->s->ops->remove(t->s, "a", &removed));
	EXPECT_OK(t->s->ops->commit(t->s));
	EXPECT_INT(df(t, "alpha"), 1);
	EXPECT_INT(df(t, "beta"), 1);
	EXPECT_INT(stats(t).docs, 1);
}

static void test_refused_insert_leaves_index_and_transaction(tctx *t)
{
	EXPECT(insert(t, "a", "alpha") > 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	EXPECT(insert(t, "b", "beta") > 0);
	if (strcmp(t->engine, "memory") != 0) {
		/* SQLite and PostgreSQL may refuse it at a later op (store.h): then
		** all rolls back. */
		int64_t rc = insert(t, "a", "gamma");  /* a duplicate id */
		if (rc > 0)
			rc = t->s->ops->commit(t->s);
		EXPECT(rc == -1 || rc == A2M_INVALID_PARAMS);  /* -1: insert() refused it */
		t->s->ops->rollback(t->s);
		EXPECT_INT(df(t, "gamma"), 0);
		EXPECT_INT(df(t, "beta"), 0);
		EXPECT_INT(stats(t).docs, 1);
		return;
	}
	EXPECT(insert(t, "a", "gamma") < 0);  /* a duplicate id */
	EXPECT_INT(df(t, "gamma"), 0);
	EXPECT_OK(t->s->ops->commit(t->s));
	EXPECT_INT(df(t, "beta"), 1);
	EXPECT_INT(stats(t).docs, 2);
}

static void test_removing_and_reinserting_many_keeps_postings_exact(tctx *t)
{
	/* Swap-removal moves postings around; the survivors must all be found. */
	char id[16], text[64];
	int removed;
	for (int i = 0; i < 60; i++) {
		snprintf(id, sizeof id, "r%d", i);
		snprintf(text, sizeof text, "common w%d %s", i, i % 2 ? "odd" : "even");
		EXPECT(insert(t, id, text) > 0);
	}
	EXPECT_OK(t->s->ops->begin(t->s));
	for (int i = 0; i < 60; i += 3) {
		snprintf(id, sizeof id, "r%d", i);
		EXPECT_OK(t->s->ops->remove(t->s, id, &removed));
	}
	t->s->ops->rollback(t->s);
	EXPECT_INT(df(t, "common"), 60);
	for (int i = 0; i < 60; i += 3) {
		snprintf(id, sizeof id, "r%d", i);
		EXPECT_OK(t->s->ops->remove(t->s, id, &removed));
	}
	EXPECT_INT(df(t, "common"), 40);
	EXPECT_INT(df(t, "w3"), 0);
	EXPECT_INT(df(t, "w4"), 1);
	plist p = {0};
	EXPECT_OK(t->s->ops->index_postings(t->s, "odd", 3, collect, &p));
	EXPECT_INT(p.n, 20);
	EXPECT_INT(stats(t).docs, 40);
}

/*
** One transaction whose flush writes many postings, additions and removals
** interleaved (SQLite writes runs of additions several rows per statement):
** every posting lands exactly.
*/
static void test_large_transaction_writes_every_posting(tctx *t)
{
	char id[16], text[64];
	int removed;
	EXPECT_OK(t->s->ops->begin(t->s));
	for (int i = 0; i < 50; i++) {
		snprintf(id, sizeof id, "r%d", i);
		snprintf(text, sizeof text, "common w%d %s", i, i % 2 ? "odd" : "even");
		EXPECT(insert(t, id, text) > 0);
	}
	EXPECT_OK(t->s->ops->commit(t->s));
	EXPECT_OK(t->s->ops->begin(t->s));
	for (int i = 50; i < 100; i++) {
		snprintf(id, sizeof id, "r%d", i);
		snprintf(text, sizeof text, "common w%d %s", i, i % 2 ? "odd" : "even");
		EXPECT(insert(t, id, text) > 0);
	}
	for (int i = 0; i < 100; i += 5) {
		snprintf(id, sizeof id, "r%d", i);
		EXPECT_OK(t->s->ops->remove(t->s, id, &removed));
		snprintf(id, sizeof id, "r%d", i + 1);
		EXPECT_OK(update(t, id, "quux zebra", 0));
	}
	EXPECT_OK(t->s->ops->commit(t->s));
	EXPECT_INT(df(t, "common"), 60);
	EXPECT_INT(df(t, "quux"), 20);
	EXPECT_INT(df(t, "w0"), 0);
	EXPECT_INT(df(t, "w1"), 0);
	EXPECT_INT(df(t, "w2"), 1);
	EXPECT_INT(df(t, "w98"), 1);
	EXPECT_INT(df(t, "odd"), 30);
	EXPECT_INT(df(t, "even"), 30);
	EXPECT_INT(stats(t).docs, 80);
}

/*
** Terms that share their first 8 bytes or are prefixes of each other, in
** one flush: each keeps exactly its postings (SQLite orders a flush by the
** terms' first 8 bytes before the rest, and finds a term in a block of
** terms by that order).
*/
static void test_terms_sharing_long_prefixes_keep_their_postings(tctx *t)
{
	static const char *const words[] = {"internationalisation", "international", "internat",
					    "interna", "internationale", "internationalise", "i",
					    "internationalisations", "intern", "internatbz", "internataz"};
	size_t nw = sizeof words / sizeof words[0];
	char id[16], text[256];
	EXPECT_OK(t->s->ops->begin(t->s));
	for (size_t i = 0; i < nw; i++) {
		/* Record i holds words i..nw-1, so word k is in k + 1 records. */
		size_t used = 0;
		text[0] = '\0';
		for (size_t k = i; k < nw; k++)
			used += (size_t)snprintf(text + used, sizeof text - used, "%s ", words[k]);
		snprintf(id, sizeof id, "p%zu", i);
		EXPECT(insert(t, id, text) > 0);
	}
	EXPECT_OK(t->s->ops->commit(t->s));
	for (size_t k = 0; k < nw; k++)
		EXPECT_INT(df(t, words[k]), k + 1);
	EXPECT_INT(df(t, "internationa"), 0);
	EXPECT_INT(df(t, "internationalisationsx"), 0);
}

/* The first letters of the ids visited, in order. */
typedef struct visited {
	char ids[8];
	int  n;
} visited;

static int visit_first_letter(const a2m_record *r, void *ctx)
{
	visited *got = ctx;
	if (got->n < 7)
		got->ids[got->n++] = r->id[0];
	return 0;
}

static void test_visit_seqs_keeps_order_and_skips_missing(tctx *t)
{
	int64_t a = insert(t, "a", "x"), b = insert(t, "b", "y"), c = insert(t, "c", "z");
	EXPECT(a > 0 && b > 0 && c > 0);
	int64_t seqs[] = {c, 999999, a, b};
	visited got = {{0}, 0};
	EXPECT_OK(t->s->ops->visit_seqs(t->s, seqs, 4, visit_first_letter, &got));
	EXPECT_INT(got.n, 3);
	EXPECT(strcmp(got.ids, "cab") == 0);
}

static void test_index_survives_reopen_without_rebuild(tctx *t)
{
	EXPECT(insert(t, "a", "alpha beta") > 0);
	close_store(t);
	tix.calls = 0;
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(tix.calls, 0);
	EXPECT_INT(df(t, "alpha"), 1);
	EXPECT_INT(stats(t).docs, 1);
}

static void test_another_analyser_rebuilds_the_index(tctx *t)
{
	EXPECT(insert(t, "a", "alpha beta") > 0);
	EXPECT(insert(t, "b", "gamma") > 0);
	close_store(t);
	EXPECT_OK(open_indexed(t, &tix2));
	EXPECT_INT(tix2.calls, 2);
	EXPECT_INT(df(t, "gamma"), 1);
	EXPECT_INT(stats(t).docs, 2);
}

static void test_write_without_analyser_marks_index_stale(tctx *t)
{
	close_store(t);
	EXPECT_OK(open_plain(t, 0));
	EXPECT(insert(t, "a", "written without an index") > 0);
	close_store(t);
	tix.calls = 0;
	EXPECT_OK(open_indexed(t, &tix));
	EXPECT_INT(tix.calls, 1);  /* rebuilt: the new record is found */
	EXPECT_INT(df(t, "index"), 1);
}

static void test_read_only_uses_a_current_index_and_no_stale_one(tctx *t)
{
	EXPECT(insert(t, "a", "alpha") > 0);
	close_store(t);
	EXPECT_OK(open_plain(t, 1));
	EXPECT_OK(t->s->ops->index_attach(t->s, &tix.base));
	EXPECT_INT(df(t, "alpha"), 1);
	close_store(t);
	EXPECT_OK(open_plain(t, 1));
	EXPECT_OK(t->s->ops->index_attach(t->s, &tix2.base));
	a2m_index_stats st;
	EXPECT_INT(t->s->ops->index_stats(t->s, &st), A2M_STORE_NO_INDEX);
	EXPECT_INT(tix2.calls, 0);
}

/* Inserts id with content through a second connection to t's file. */
static int other_insert(tctx *t, const char *id, const char *content)
{
	a2m_store *o = NULL;
	char err[256];
	a2m_sqlite_options opt = {0};
	if (a2m_store_sqlite_open(t->path, &opt, &o, err, sizeof err) != 0)
		return -1;
	a2m_record r;
	memset(&r, 0, sizeof r);
	r.id = (char *)id;
	r.content = (char *)content;
	r.created_at = 2000;
	int rc = o->ops->index_attach(o, &tix.base);
	if (rc == 0)
		rc = o->ops->insert(o, &r);
	o->ops->close(o);
	return rc;
}

/* Begins, touches seq, commits: a commit of this connection with no postings. */
static int touch_commit(tctx *t, int64_t seq)
{
	int rc = t->s->ops->begin(t->s);
	if (rc == 0 && (rc = t->s->ops->touch(t->s, seq, 1, 5)) != 0)
		t->s->ops->rollback(t->s);
	return rc ? rc : t->s->ops->commit(t->s);
}

/*
** The postings cache keeps what it read across this connection's commits
** that write no postings (recall's touches), but never across another
** connection's commit, even one followed by such a commit of this one.
*/
static void test_postings_cache_survives_only_own_commits(tctx *t)
{
	a2m_index_stats st;
	int64_t a = insert(t, "a", "apple pie");
	EXPECT(a > 0);
	EXPECT_OK(t->s->ops->index_stats(t->s, &st));
	EXPECT_INT(df(t, "apple"), 1);              /* read, now cached */
	EXPECT_OK(touch_commit(t, a));
	EXPECT_OK(t->s->ops->index_stats(t->s, &st));
	EXPECT_INT(df(t, "apple"), 1);
	EXPECT_INT(other_insert(t, "b", "apple tart"), 0);
	EXPECT_OK(touch_commit(t, a));
	EXPECT_OK(t->s->ops->index_stats(t->s, &st));
	EXPECT_INT(st.docs, 2);
	EXPECT_INT(df(t, "apple"), 2);
	EXPECT_INT(df(t, "tart"), 1);
}

/*
** A lent array of postings holds what a visit gives, before and after
** writes. SQLite lends inside a read bracket only (store.h), so every
** round is one.
*/
static void test_postings_view_matches_the_visit(tctx *t)
{
	static const char *const terms[] = {"apple", "pie", "tart", "none"};
	EXPECT(t->s->ops->index_postings_view != NULL);
	EXPECT(insert(t, "a", "apple pie apple") > 0);
	EXPECT(insert(t, "b", "apple tart") > 0);
	EXPECT(insert(t, "c", "pie") > 0);
	for (int round = 0; round < 2; round++) {
		EXPECT_OK(t->s->ops->read_begin(t->s));
		for (size_t i = 0; i < sizeof terms / sizeof *terms; i++) {
			plist p = {0};
			const a2m_posting *v = NULL;
			size_t n = 99;
			EXPECT_OK(t->s->ops->index_postings(t->s, terms[i], strlen(terms[i]), collect, &p));
			EXPECT_OK(t->s->ops->index_postings_view(t->s, terms[i], strlen(terms[i]), &v, &n));
			EXPECT_INT(n, p.n);
			for (size_t j = 0; j < n; j++) {
				EXPECT_INT(v[j].seq, p.seq[j]);
				EXPECT_INT(v[j].tf, p.tf[j]);
				EXPECT_INT(v[j].dl, p.dl[j]);
			}
		}
		t->s->ops->read_end(t->s);
		/* A removal moves postings around (swap-removal): lend again. */
		int removed = 0;
		if (round == 0) {
			EXPECT_OK(t->s->ops->remove(t->s, "a", &removed));
			EXPECT_INT(removed, 1);
		}
	}
}

/* The content of record i of the pinning test: terms w0..w39, some repeated. */
static void pin_content(int i, char *buf, size_t cap)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int j = 0; j < 40; j++) {
		if ((i + j) % 4 == 0)
			continue;
		for (int r = 0; r <= (i * j) % 3 && used + 8 < cap; r++)
			used += (size_t)snprintf(buf + used, cap - used, "w%d ", j);
	}
}

/* Whether a lent array holds exactly what index_postings visits. */
static int same_postings(const a2m_posting *v, size_t n, const plist *p)
{
	if ((int)n != p->n)
		return 0;
	for (size_t j = 0; j < n; j++)
		if (v[j].seq != p->seq[j] || v[j].tf != p->tf[j] || v[j].dl != p->dl[j])
			return 0;
	return 1;
}

/*
** SQLite lends from its postings cache and keeps every array it lent in a
** bracket until the bracket's read_end, even when they add up to more than
** the cache's budget (here 64 postings for 40 terms of 8 to 12 each).
*/
static void test_sqlite_view_keeps_what_it_lent_until_read_end(tctx *t)
{
	enum { TERMS = 40, RECORDS = 12 };
	char buf[1024], term[16], id[16];
	close_store(t);
	a2m_sqlite_index_cache_budget_for_tests(64);
	int rc = open_indexed(t, &tix);
	a2m_sqlite_index_cache_budget_for_tests(0);
	EXPECT_INT(rc, 0);
	EXPECT_OK(t->s->ops->begin(t->s));
	for (int i = 0; i < RECORDS; i++) {
		snprintf(id, sizeof id, "r%d", i);
		pin_content(i, buf, sizeof buf);
		EXPECT(insert(t, id, buf) > 0);
	}
	EXPECT_OK(t->s->ops->commit(t->s));

	const a2m_posting *v[TERMS];
	size_t n[TERMS];
	static plist want[TERMS];
	EXPECT_OK(t->s->ops->read_begin(t->s));
	for (int j = 0; j < TERMS; j++) {
		snprintf(term, sizeof term, "w%d", j);
		EXPECT_OK(t->s->ops->index_postings_view(t->s, term, strlen(term), &v[j], &n[j]));
		EXPECT(n[j] >= 8 && n[j] <= 12);
	}
	for (int j = 0; j < TERMS; j++) {
		snprintf(term, sizeof term, "w%d", j);
		memset(&want[j], 0, sizeof want[j]);
		EXPECT_OK(t->s->ops->index_postings(t->s, term, strlen(term), collect, &want[j]));
	}
	for (int j = 0; j < TERMS; j++)
		EXPECT(same_postings(v[j], n[j], &want[j]));
	t->s->ops->read_end(t->s);

	/* Outside a bracket nothing would end a loan: "copy it" (1). */
	EXPECT_INT(t->s->ops->index_postings_view(t->s, "w1", 2, &v[1], &n[1]), 1);

	/* The main connection commits postings: the next bracket lends them. */
	EXPECT(insert(t, "new", "w1 w1 w1") > 0);
	EXPECT_OK(t->s->ops->read_begin(t->s));
	EXPECT_OK(t->s->ops->index_postings_view(t->s, "w1", 2, &v[1], &n[1]));
	EXPECT_INT(n[1], want[1].n + 1);
	EXPECT_INT(v[1][n[1] - 1].seq, RECORDS + 1);
	EXPECT_INT(v[1][n[1] - 1].tf, 3);
	EXPECT_INT(v[1][n[1] - 1].dl, 3);
	EXPECT(same_postings(v[1], n[1] - 1, &want[1]));
	t->s->ops->read_end(t->s);
}

static void test_autocommit_write_keeps_record_and_postings_together(tctx *t)
{
	/* Outside a transaction, and a failed write: neither half lands. */
	EXPECT(insert(t, "a", "alpha") > 0);
	EXPECT(insert(t, "a", "beta") < 0);
	EXPECT_INT(df(t, "beta"), 0);
	EXPECT_INT(stats(t).docs, 1);
}

int main(void)
{
	RUN(test_insert_indexes_terms_with_counts_and_length);
	RUN(test_text_without_terms_counts_as_unindexed);
	RUN(test_update_without_new_content_does_not_reindex);
	RUN(test_update_with_new_content_moves_postings);
	RUN(test_remove_drops_postings_and_figures);
	RUN(test_remove_every_posting_of_a_long_list);
	RUN(test_rollback_restores_the_index);
	RUN(test_commit_keeps_the_index);
	RUN(test_refused_insert_leaves_index_and_transaction);
	RUN(test_removing_and_reinserting_many_keeps_postings_exact);
	RUN(test_large_transaction_writes_every_posting);
	RUN(test_visit_seqs_keeps_order_and_skips_missing);
	RUN(test_terms_sharing_long_prefixes_keep_their_postings);
	RUN(test_autocommit_write_keeps_record_and_postings_together);
	RUN_DURABLE(test_index_survives_reopen_without_rebuild);
	RUN_SQLITE(test_postings_cache_survives_only_own_commits);
	RUN(test_postings_view_matches_the_visit);
	RUN_SQLITE(test_sqlite_view_keeps_what_it_lent_until_read_end);
	RUN_DURABLE(test_another_analyser_rebuilds_the_index);
	RUN_SQLITE(test_write_without_analyser_marks_index_stale);
	RUN_DURABLE(test_read_only_uses_a_current_index_and_no_stale_one);
	return index_harness_end();
}
