/*
** test_store_reads.c — the storage seam's rules (store.h) on read brackets (read_begin,
** read_end), visit_seqs over many seqs, and the SQLite engine's row cache;
** each rule runs on the engines it names (the harness, output and files:
** tests/store_harness.h; what the rules share: tests/store_records.h).
*/
#include "store_records.h"

/* ---- read brackets (store.h, read_begin and read_end) ------------------- */

static void snapshot_body(tctx *t, a2m_store *o)
{
	a2m_record b = make("b", 2);
	int visited = 0;
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_INT(has(t, "a"), 1);
	/* Another connection commits while the bracket is open... */
	EXPECT_INT(o->ops->insert(o, &b), 0);
	/* ...and every read in the bracket still sees the file as it was. */
	EXPECT_INT(has(t, "b"), 0);
	EXPECT_INT(count_of(t, &all_q), 1);
	EXPECT_STR(scan_ids(t, &all_q), "a");
	EXPECT_OK(OPS->visit_seqs(t->s, &b.seq, 1, count_visit, &visited));
	EXPECT_INT(visited, 0);
	EXPECT_OK(READ_END(t));
	/* Out of it, the reads see the commit. */
	EXPECT_INT(has(t, "b"), 1);
	EXPECT_INT(count_of(t, &all_q), 2);
	EXPECT_OK(OPS->visit_seqs(t->s, &b.seq, 1, count_visit, &visited));
	EXPECT_INT(visited, 1);
}

static void test_read_bracket_sees_one_snapshot(tctx *t)
{
	with_other(t, snapshot_body);
}

static void test_read_bracket_inside_write_transaction_is_a_no_op(tctx *t)
{
	/* read_end must neither commit the transaction nor end it... */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	EXPECT_INT(has(t, "b"), 1);
	EXPECT_OK(READ_END(t));
	EXPECT_OK(put(t, "c", 3, NULL, NULL));
	OPS->rollback(t->s);
	EXPECT_STR(scan_ids(t, &all_q), "");
	/* ...and commit still works after one. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(READ_END(t));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(scan_ids(t, &all_q), "a");
	EXPECT(OPS->commit(t->s) != 0);  /* no transaction is left open */
}

static void failed_read_body(tctx *t, a2m_store *o)
{
	seen w;
	memset(&w, 0, sizeof w);
	w.abort_at = 1;
	w.abort_code = A2M_INTERNAL_ERROR;
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_INT(OPS->scan(t->s, &all_q, collect, &w), A2M_INTERNAL_ERROR);
	free(w.ids.p);
	EXPECT_OK(READ_END(t));
	/* No snapshot is held any more: another connection's commit is seen. */
	EXPECT_INT(other_put(o, "b", 2), 0);
	EXPECT_INT(has(t, "b"), 1);
	/* And a write transaction opens as usual. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "c", 3, NULL, NULL));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(scan_ids(t, &all_q), "a,b,c");
}

static void test_read_end_after_failed_read_holds_no_snapshot(tctx *t)
{
	with_other(t, failed_read_body);
}

static void begin_in_bracket_body(tctx *t, a2m_store *o)
{
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_INT(has(t, "a"), 1);
	EXPECT_INT(other_put(o, "b", 2), 0);
	EXPECT_INT(has(t, "b"), 0);
	/* A write transaction starts from the newest state, not the snapshot. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_INT(has(t, "b"), 1);
	EXPECT_OK(put(t, "c", 3, NULL, NULL));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(READ_END(t));   /* the bracket ended at begin: a no-op */
	EXPECT_STR(scan_ids(t, &all_q), "a,b,c");
}

static void test_begin_inside_read_bracket_starts_from_newest_state(tctx *t)
{
	with_other(t, begin_in_bracket_body);
}

static void read_only_body(tctx *t, a2m_store *o)
{
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_INT(has(t, "a"), 1);
	EXPECT_INT(other_put(o, "b", 2), 0);
	EXPECT_INT(count_of(t, &all_q), 1);
	EXPECT_OK(READ_END(t));
	EXPECT_INT(count_of(t, &all_q), 2);
	/* A bracket and a read transaction, one after the other. */
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_INT(has(t, "b"), 1);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(READ_END(t));
}

static void test_read_bracket_on_read_only_store(tctx *t)
{
	char err[256] = "";
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(open_read_only(t, err, sizeof err), 0);
	EXPECT(t->s->ops->read_begin != NULL);
	with_other(t, read_only_body);
}

static void own_write_body(tctx *t, a2m_store *o)
{
	a2m_record *got = NULL;
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_INT(has(t, "a"), 1);
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	/* Committed at once, not held back until the bracket ends. */
	EXPECT_INT(o->ops->get(o, "b", &got), 0);
	EXPECT(got != NULL);
	a2m_record_free(got);
	EXPECT_INT(has(t, "b"), 1);
	EXPECT_OK(READ_END(t));
	EXPECT_STR(scan_ids(t, &all_q), "a,b");
}

static void test_write_outside_transaction_inside_bracket_commits_on_its_own(tctx *t)
{
	with_other(t, own_write_body);
}

/*
** The memory engine's bracket tidies the scan order (sorts the out-of-order
** tail, drops trailing tombstones), so that readers in brackets at once
** write nothing: scans inside it see the same order, either way round.
*/
static void test_memory_bracket_tidies_the_scan_order(tctx *t)
{
	a2m_query desc = {.descending = 1};
	EXPECT_OK(put(t, "c", 30, NULL, NULL));
	EXPECT_OK(put(t, "a", 10, NULL, NULL));
	EXPECT_OK(put(t, "d", 40, NULL, NULL));
	EXPECT_OK(put(t, "b", 20, NULL, NULL));
	int removed = 0;
	EXPECT_OK(OPS->remove(t->s, "d", &removed));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_STR(scan_ids(t, &all_q), "a,b,c");
	EXPECT_STR(scan_ids(t, &desc), "c,b,a");
	EXPECT_INT(count_of(t, &all_q), 3);
	EXPECT_OK(READ_END(t));
}

/* ---- visit_seqs over many seqs ------------------------------------------ */

/* ---- the SQLite engine's row cache (row_cache.h) ---- */

static a2m_record cache_rec(int64_t seq, const char *content)
{
	a2m_record r;
	memset(&r, 0, sizeof r);
	r.seq = seq;
	r.id = strdup("x");
	r.content = strdup(content);
	return r;
}

static void test_row_cache_keeps_evicts_and_forgets(tctx *t)
{
	(void)t;
	a2m_row_cache *c = a2m_row_cache_new(4, 1 << 20);
	EXPECT(c != NULL);
	if (!c)
		return;
	for (int64_t seq = 1; seq <= 5; seq++) {
		char text[16];
		snprintf(text, sizeof text, "row %d", (int)seq);
		a2m_record r = cache_rec(seq, text);
		const a2m_record *kept = a2m_row_cache_take(c, &r);
		EXPECT(kept != NULL && kept->seq == seq && strcmp(kept->content, text) == 0);
		EXPECT(r.content == NULL);  /* moved, not copied */
		a2m_record_clear(&r);
		/* 1 is used again after 3 arrive: 2 is then the least recent. */
		if (seq == 3)
			EXPECT(a2m_row_cache_get(c, 1) != NULL);
	}
	EXPECT_INT(a2m_row_cache_count(c), 4);
	EXPECT(a2m_row_cache_get(c, 2) == NULL);
	const a2m_record *one = a2m_row_cache_get(c, 1);
	EXPECT(one && strcmp(one->content, "row 1") == 0);
	/* A seq already kept is not replaced, and the caller keeps its record. */
	a2m_record again = cache_rec(5, "other");
	EXPECT(a2m_row_cache_take(c, &again) == NULL);
	EXPECT(again.content != NULL);
	a2m_record_clear(&again);
	/* The same version keeps everything, another empties the cache. */
	a2m_row_cache_validate(c, 7);
	EXPECT_INT(a2m_row_cache_count(c), 0);  /* the first version seen */
	a2m_record r = cache_rec(9, "nine");
	EXPECT(a2m_row_cache_take(c, &r) != NULL);
	a2m_row_cache_validate(c, 7);
	EXPECT_INT(a2m_row_cache_count(c), 1);
	a2m_row_cache_validate(c, 8);
	EXPECT_INT(a2m_row_cache_count(c), 0);
	EXPECT(a2m_row_cache_get(c, 9) == NULL);
	a2m_row_cache_free(c);

	/* The byte budget: a record over a quarter of it is not kept, and
	** the oldest go to make room for one that fits. */
	c = a2m_row_cache_new(100, 4096);
	EXPECT(c != NULL);
	if (!c)
		return;
	char big[1500];
	memset(big, 'b', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	a2m_record huge = cache_rec(1, big);
	EXPECT(a2m_row_cache_take(c, &huge) == NULL);
	a2m_record_clear(&huge);
	big[700] = '\0';
	for (int64_t seq = 1; seq <= 8; seq++) {
		a2m_record r2 = cache_rec(seq, big);
		EXPECT(a2m_row_cache_take(c, &r2) != NULL);
		a2m_record_clear(&r2);
	}
	EXPECT(a2m_row_cache_count(c) < 8 && a2m_row_cache_count(c) > 0);
	EXPECT(a2m_row_cache_get(c, 8) != NULL);
	EXPECT(a2m_row_cache_get(c, 1) == NULL);
	a2m_row_cache_free(c);
}

/* The content visit_seqs gives for seq, inside a read bracket. */
static char visited_text[64];
static int remember_content(const a2m_record *r, void *ctx)
{
	(void)ctx;
	snprintf(visited_text, sizeof visited_text, "%s/%lld", r->content ? r->content : "",
		 (long long)r->access_count);
	return 0;
}

static const char *bracket_read(tctx *t, int64_t seq)
{
	visited_text[0] = '\0';
	if (READ_BEGIN(t) != 0)
		return "(read_begin failed)";
	int rc = OPS->visit_seqs(t->s, &seq, 1, remember_content, NULL);
	OPS->read_end(t->s);
	return rc ? "(visit failed)" : visited_text;
}

static void rows_body(tctx *t, a2m_store *o)
{
	a2m_record a = make("a", 1), b = make("b", 2);
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->insert(t->s, &b));
	/* Read twice: the second comes from the cache, and is the same. */
	EXPECT_STR(bracket_read(t, a.seq), "content/0");
	EXPECT_STR(bracket_read(t, a.seq), "content/0");
	/* This connection's own update, touch and removal are seen... */
	a.content = "changed here";
	EXPECT_OK(OPS->update(t->s, &a));
	EXPECT_STR(bracket_read(t, a.seq), "changed here/0");
	EXPECT_OK(OPS->touch(t->s, a.seq, 3, 5));
	EXPECT_STR(bracket_read(t, a.seq), "changed here/3");
	/* ...in a transaction only once it commits, never after a rollback. */
	EXPECT_OK(OPS->begin(t->s));
	a.content = "rolled back";
	EXPECT_OK(OPS->update(t->s, &a));
	OPS->rollback(t->s);
	EXPECT_STR(bracket_read(t, a.seq), "changed here/3");
	/* Another connection's commit, then one of this connection's that
	** leaves a alone: a is read anew, not kept from before the other's. */
	EXPECT_STR(bracket_read(t, a.seq), "changed here/3");
	a.content = "changed there first";
	EXPECT_INT(o->ops->update(o, &a), 0);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->touch(t->s, b.seq, 2, 9));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(bracket_read(t, a.seq), "changed there first/0");
	EXPECT_STR(bracket_read(t, b.seq), "content/2");
	/* ...and so is another connection's own. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->touch(t->s, b.seq, -2, 9));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(bracket_read(t, b.seq), "content/0");
	/* A touch rolled back is not left in the kept copy. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->touch(t->s, b.seq, 5, 9));
	OPS->rollback(t->s);
	EXPECT_STR(bracket_read(t, b.seq), "content/0");
	b.content = "changed there";
	EXPECT_INT(o->ops->update(o, &b), 0);
	EXPECT_STR(bracket_read(t, b.seq), "changed there/0");
	int removed = 0;
	EXPECT_INT(o->ops->remove(o, "b", &removed), 0);
	EXPECT_STR(bracket_read(t, b.seq), "");
}

static void test_visit_seqs_through_the_row_cache_sees_every_commit(tctx *t)
{
	with_other(t, rows_body);
}

static void test_visit_seqs_many_in_given_order_skipping_missing(tctx *t)
{
	char id[16];
	int64_t seq[40], want_seqs[43];
	size_t n = 0;
	sbuf want = {0};
	seen w;
	for (int i = 0; i < 40; i++) {
		snprintf(id, sizeof id, "r%02d", i);
		a2m_record r = make(id, i);
		EXPECT_OK(OPS->insert(t->s, &r));
		seq[i] = r.seq;
	}
	/* Newest first, a seq of no record and a repeat in the middle. */
	sb_add(&want, "%s", "");
	for (int i = 39; i >= 0; i--) {
		want_seqs[n++] = seq[i];
		sb_add(&want, "%sr%02d", i == 39 ? "" : ",", i);
		if (i == 30)
			want_seqs[n++] = seq[39] + 1000;
		if (i == 20) {
			want_seqs[n++] = seq[25];
			sb_add(&want, ",r25");
		}
	}
	memset(&w, 0, sizeof w);
	EXPECT_OK(OPS->visit_seqs(t->s, want_seqs, n, collect, &w));
	EXPECT_STR(w.ids.p, want.p);
	free(want.p);
	free(w.ids.p);
	/* A stop in a later batch: nothing after it is visited. */
	memset(&w, 0, sizeof w);
	w.stop_at = 20;
	EXPECT_OK(OPS->visit_seqs(t->s, want_seqs, n, collect, &w));
	free(w.ids.p);
	EXPECT_INT(w.n, 20);
	memset(&w, 0, sizeof w);
	w.abort_at = 18;
	w.abort_code = A2M_INTERNAL_ERROR;
	EXPECT_INT(OPS->visit_seqs(t->s, want_seqs, n, collect, &w), A2M_INTERNAL_ERROR);
	free(w.ids.p);
	EXPECT_INT(w.n, 18);
}

int main(void)
{
	store_harness_start();
	RUN_DURABLE(test_read_bracket_sees_one_snapshot);
	RUN(test_read_bracket_inside_write_transaction_is_a_no_op);
	RUN_DURABLE(test_read_end_after_failed_read_holds_no_snapshot);
	RUN_DURABLE(test_begin_inside_read_bracket_starts_from_newest_state);
	RUN_DURABLE(test_read_bracket_on_read_only_store);
	RUN_DURABLE(test_write_outside_transaction_inside_bracket_commits_on_its_own);
	RUN_MEMORY(test_memory_bracket_tidies_the_scan_order);
	RUN(test_visit_seqs_many_in_given_order_skipping_missing);
	RUN_MEMORY(test_row_cache_keeps_evicts_and_forgets);
	RUN_SQLITE(test_visit_seqs_through_the_row_cache_sees_every_commit);
	return store_records_done();
}
