/*
** test_store_records.c — the storage seam's rules (store.h) on inserting and reading
** back, updating and removing, keys, and many removals;
** each rule runs on the engines it names (the harness, output and files:
** tests/store_harness.h; what the rules share: tests/store_records.h).
*/
#include "store_records.h"

/* ---- inserting and reading back ---------------------------------------- */

static void test_insert_assigns_increasing_seq(tctx *t)
{
	a2m_record a = make("a", 100), b = make("b", 100), c = make("c", 50);
	a2m_record *got;
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->insert(t->s, &b));
	EXPECT_OK(OPS->insert(t->s, &c));
	EXPECT_INT(a.seq, 1);
	EXPECT_INT(b.seq, 2);
	EXPECT_INT(c.seq, 3);
	EXPECT_OK(OPS->get(t->s, "c", &got));
	EXPECT(got != NULL);
	EXPECT_INT(got->seq, 3);
	a2m_record_free(got);
}

static void test_insert_duplicate_id_refused(tctx *t)
{
	a2m_record a = make("a", 100), dup = make("a", 200), c = make("c", 300);
	a2m_record *got;
	a.content = "first";
	dup.content = "second";
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_INT(OPS->insert(t->s, &dup), A2M_INVALID_PARAMS);
	EXPECT(t->s->errmsg[0] != '\0');
	EXPECT_INT(dup.seq, 0);
	EXPECT_INT(count_of(t, &all_q), 1);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT(got != NULL);
	EXPECT_STR(got->content, "first");
	EXPECT_INT(got->created_at, 100);
	EXPECT_INT(got->seq, 1);
	a2m_record_free(got);
	/* The refused insert did not use up a seq. */
	EXPECT_OK(OPS->insert(t->s, &c));
	EXPECT_INT(c.seq, 2);
}

static void test_insert_without_id_or_content_refused(tctx *t)
{
	a2m_record no_id = make(NULL, 1), no_content = make("b", 1), nan_sal = make("c", 1);
	no_content.content = NULL;
	nan_sal.salience = NAN;
	EXPECT_INT(OPS->insert(t->s, &no_id), A2M_INVALID_PARAMS);
	EXPECT_INT(OPS->insert(t->s, &no_content), A2M_INVALID_PARAMS);
	EXPECT_INT(OPS->insert(t->s, &nan_sal), A2M_INVALID_PARAMS);
	EXPECT_INT(count_of(t, &all_q), 0);
}

static void test_get_missing_returns_null(tctx *t)
{
	static a2m_record sentinel;             /* so the test sees *out being set */
	a2m_record *got = &sentinel;
	EXPECT_OK(put(t, "a", 1, "o", "k"));
	EXPECT_OK(OPS->get(t->s, "nope", &got));
	EXPECT(got == NULL);
	got = &sentinel;
	EXPECT_OK(OPS->get_by_key(t->s, "o", "other", &got));
	EXPECT(got == NULL);
	got = &sentinel;
	EXPECT_OK(OPS->get_by_key(t->s, "someone", "k", &got));
	EXPECT(got == NULL);
}

static void test_get_returns_independent_copy(tctx *t)
{
	a2m_record *src = a2m_record_new(), *got;
	EXPECT(src != NULL);
	src->id = strdup("a");
	src->content = strdup("hello");
	src->created_at = 5;
	EXPECT(src->id && src->content);
	EXPECT_OK(OPS->insert(t->s, src));
	a2m_record_free(src);                   /* the store kept its own copy */
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT(got != NULL);
	got->content[0] = 'J';                  /* and handed out another */
	a2m_record_free(got);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT(got != NULL);
	EXPECT_STR(got->content, "hello");
	a2m_record_free(got);
}

static int first_record(const a2m_record *r, void *ctx)
{
	*(a2m_record **)ctx = a2m_record_dup(r);
	return 1;
}

static void test_roundtrip_every_field(tctx *t)
{
	a2m_record want = full_record("full"), *got, *by_key, *scanned = NULL;
	EXPECT_OK(OPS->insert(t->s, &want));
	EXPECT_INT(want.seq, 1);

	EXPECT_OK(OPS->get(t->s, "full", &got));
	EXPECT(got != NULL);
	EXPECT_SAME(got, &want);
	EXPECT(got->embedding != awkward);      /* a copy, not the caller's array */
	a2m_record_free(got);

	EXPECT_OK(OPS->get_by_key(t->s, "alice", "prefs/theme", &by_key));
	EXPECT_SAME(by_key, &want);
	a2m_record_free(by_key);

	EXPECT_OK(OPS->scan(t->s, &all_q, first_record, &scanned));
	EXPECT_SAME(scanned, &want);
	a2m_record_free(scanned);
}

static void test_roundtrip_absent_fields_stay_null(tctx *t)
{
	a2m_record want = make("bare", -42), *got;
	EXPECT_OK(OPS->insert(t->s, &want));
	EXPECT_OK(OPS->get(t->s, "bare", &got));
	EXPECT(got != NULL);
	EXPECT_SAME(got, &want);
	EXPECT(got->role == NULL && got->metadata == NULL && got->group == NULL);
	EXPECT(got->tier == NULL && got->owner == NULL && got->session == NULL);
	EXPECT(got->key == NULL && got->uri == NULL && got->media_type == NULL);
	EXPECT(got->embedding == NULL);
	EXPECT_INT(got->dims, 0);
	EXPECT_INT(got->created_at, -42);
	a2m_record_free(got);
}

/* The server's own vector is kept apart from the caller's, and update sets or clears it. */
static void test_generated_vector_roundtrips_apart_from_callers(tctx *t)
{
	float gen[3] = {0.5f, -1.25f, 3.0f};
	a2m_record want = make("gen", 7), *got = NULL;
	want.gen_embedding = gen;
	want.gen_dims = 3;
	EXPECT_OK(OPS->insert(t->s, &want));
	EXPECT_OK(OPS->get(t->s, "gen", &got));
	EXPECT_SAME(got, &want);
	EXPECT(got && got->embedding == NULL && got->gen_embedding != gen);
	a2m_record_free(got);
	want.gen_embedding = NULL;
	want.gen_dims = 0;
	EXPECT_OK(OPS->update(t->s, &want));
	EXPECT_OK(OPS->get(t->s, "gen", &got));
	EXPECT_SAME(got, &want);
	a2m_record_free(got);
}

static void test_large_content_roundtrips(tctx *t)
{
	const char *piece = "ünïcødé 😀 100%_ ";
	size_t plen = strlen(piece), n = 3 * 1024 * 1024 / plen;
	char *big = malloc(n * plen + 1);
	a2m_record r = make("big", 1), *got = NULL;
	EXPECT(big != NULL);
	for (size_t i = 0; i < n; i++)
		memcpy(big + i * plen, piece, plen);
	big[n * plen] = '\0';
	r.content = big;
	int rc = OPS->insert(t->s, &r);
	if (rc != 0)
		free(big);
	EXPECT_OK(rc);
	rc = OPS->get(t->s, "big", &got);
	if (rc != 0 || !got || strcmp(got->content, big) != 0) {
		free(big);
		a2m_record_free(got);
		failf(__LINE__, "3 MB content did not come back intact (rc %d)", rc);
		return;
	}
	free(big);
	a2m_record_free(got);
}

/*
** Ids around and past 255 bytes, every field set: the memory engine keeps
** an id's length in a byte, and reads one of 255 or more by its NUL.
*/
static void test_long_ids_roundtrip_through_every_read(tctx *t)
{
	static const size_t lens[] = {1, 254, 255, 256, 2000};
	char *ids[5];
	a2m_record *got = NULL;
	for (size_t i = 0; i < 5; i++) {
		ids[i] = malloc(lens[i] + 1);
		EXPECT(ids[i] != NULL);
		memset(ids[i], (int)('a' + i), lens[i]);
		ids[i][lens[i]] = '\0';
		a2m_record r = i % 2 ? full_record(ids[i]) : make(ids[i], (int64_t)i);
		char key[16];
		snprintf(key, sizeof key, "k%zu", i);
		r.key = key;
		r.content = ids[i];   /* content that must not run into the id */
		EXPECT_OK(OPS->insert(t->s, &r));
	}
	for (size_t i = 0; i < 5; i++) {
		char key[16];
		snprintf(key, sizeof key, "k%zu", i);
		EXPECT_OK(OPS->get(t->s, ids[i], &got));
		EXPECT(got && strcmp(got->id, ids[i]) == 0 && strcmp(got->content, ids[i]) == 0);
		a2m_record_free(got);
		EXPECT_OK(OPS->get_by_key(t->s, i % 2 ? "alice" : NULL, key, &got));
		EXPECT(got && strcmp(got->id, ids[i]) == 0);
		if (got) {
			free(got->content);
			got->content = strdup("changed");
			EXPECT_OK(OPS->update(t->s, got));
		}
		a2m_record_free(got);
		EXPECT_OK(OPS->get(t->s, ids[i], &got));
		EXPECT(got && strcmp(got->content, "changed") == 0);
		a2m_record_free(got);
	}
	for (size_t i = 0; i < 5; i++) {
		int removed = 0;
		EXPECT_OK(OPS->remove(t->s, ids[i], &removed));
		EXPECT_INT(removed, 1);
		free(ids[i]);
	}
	EXPECT_INT(count_of(t, &all_q), 0);
}

/* ---- updating and removing --------------------------------------------- */

static void test_update_replaces_every_field_keeps_seq(tctx *t)
{
	a2m_record full = full_record("x"), other = make("y", 5), *got;
	double emb[2] = {1.5, -2.25};
	EXPECT_OK(OPS->insert(t->s, &full));
	EXPECT_OK(OPS->insert(t->s, &other));

	/* Every field set -> every optional field absent. */
	a2m_record bare = make("x", 77);
	bare.content = "bare now";
	bare.seq = 99;                          /* ignored: seq is the store's */
	EXPECT_OK(OPS->update(t->s, &bare));
	EXPECT_OK(OPS->get(t->s, "x", &got));
	bare.seq = 1;
	EXPECT_SAME(got, &bare);
	a2m_record_free(got);

	/* And back to a different set of values. */
	a2m_record again = full_record("x");
	again.content = "again";
	again.tier = "short";
	again.embedding = emb;
	again.dims = 2;
	again.access_count = 8;
	EXPECT_OK(OPS->update(t->s, &again));
	EXPECT_OK(OPS->get(t->s, "x", &got));
	again.seq = 1;
	EXPECT_SAME(got, &again);
	a2m_record_free(got);

	EXPECT_OK(OPS->get(t->s, "y", &got));
	EXPECT_SAME(got, &other);
	a2m_record_free(got);
	EXPECT_INT(count_of(t, &all_q), 2);
}

static void test_update_unknown_id_returns_unknown_record(tctx *t)
{
	a2m_record ghost = make("ghost", 1), *got;
	EXPECT_INT(OPS->update(t->s, &ghost), A2M_UNKNOWN_RECORD);
	EXPECT(t->s->errmsg[0] != '\0');
	EXPECT_INT(count_of(t, &all_q), 0);
	EXPECT_OK(OPS->get(t->s, "ghost", &got));
	EXPECT(got == NULL);
}

static void test_update_to_taken_key_refused(tctx *t)
{
	a2m_record b = make("b", 2), *got;
	EXPECT_OK(put(t, "a", 1, "o", "k1"));
	b.owner = "o";
	b.key = "k2";
	EXPECT_OK(OPS->insert(t->s, &b));
	b.key = "k1";
	b.content = "changed";
	EXPECT_INT(OPS->update(t->s, &b), A2M_INVALID_PARAMS);
	EXPECT_OK(OPS->get(t->s, "b", &got));
	EXPECT_STR(got->key, "k2");
	EXPECT_STR(got->content, "content");
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k1", &got));
	EXPECT_STR(got ? got->id : NULL, "a");
	a2m_record_free(got);
	/* The same key under another owner is free. */
	b.owner = "p";
	EXPECT_OK(OPS->update(t->s, &b));
	EXPECT_OK(OPS->get_by_key(t->s, "p", "k1", &got));
	EXPECT_STR(got ? got->id : NULL, "b");
	a2m_record_free(got);
}

static void test_update_moves_key(tctx *t)
{
	a2m_record a = make("a", 1), *got;
	a.owner = "o";
	a.key = "k1";
	EXPECT_OK(OPS->insert(t->s, &a));
	a.key = "k2";
	EXPECT_OK(OPS->update(t->s, &a));
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k1", &got));
	EXPECT(got == NULL);
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k2", &got));
	EXPECT_STR(got ? got->id : NULL, "a");
	a2m_record_free(got);
	a.key = NULL;
	EXPECT_OK(OPS->update(t->s, &a));
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k2", &got));
	EXPECT(got == NULL);
	EXPECT_OK(put(t, "c", 2, "o", "k2"));
	EXPECT_OK(put(t, "d", 3, "o", "k1"));
}

static void test_remove_reports_whether_removed(tctx *t)
{
	int removed = -1;
	a2m_record *got;
	EXPECT_OK(put(t, "a", 1, "o", "k"));
	EXPECT_OK(OPS->remove(t->s, "a", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_OK(OPS->remove(t->s, "a", &removed));
	EXPECT_INT(removed, 0);
	EXPECT_OK(OPS->remove(t->s, "never", &removed));
	EXPECT_INT(removed, 0);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT(got == NULL);
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k", &got));
	EXPECT(got == NULL);
	EXPECT_INT(count_of(t, &all_q), 0);
	/* Its key is free again. */
	EXPECT_OK(put(t, "b", 2, "o", "k"));
}

static void test_seq_never_reused_after_remove(tctx *t)
{
	a2m_record d = make("d", 4), e = make("e", 5);
	int removed;
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	EXPECT_OK(put(t, "c", 3, NULL, NULL));
	EXPECT_OK(OPS->remove(t->s, "c", &removed));
	EXPECT_OK(OPS->insert(t->s, &d));
	EXPECT_INT(d.seq, 4);
	EXPECT_OK(OPS->remove(t->s, "a", &removed));
	EXPECT_OK(OPS->remove(t->s, "b", &removed));
	EXPECT_OK(OPS->remove(t->s, "d", &removed));
	EXPECT_OK(OPS->insert(t->s, &e));
	EXPECT_INT(e.seq, 5);
}

/*
** The seq of a removed newest record is not given out again, whether the
** remove was on its own or in a transaction, across a close and reopen,
** and by another store sharing the file (another process, as far as the
** file can tell).
*/
static void test_seq_not_reused_after_removing_newest_across_reopen(tctx *t)
{
	a2m_record d = make("d", 4), e = make("e", 5), f = make("f", 6), g = make("g", 7);
	a2m_store *other = NULL;
	char err[256] = "", buf[32];
	int removed;
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	EXPECT_OK(put(t, "c", 3, NULL, NULL));
	EXPECT_OK(OPS->remove(t->s, "c", &removed));
	if (reopen(t, 1) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &d));
	EXPECT_INT(d.seq, 4);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->remove(t->s, "d", &removed));
	EXPECT_OK(OPS->commit(t->s));
	if (reopen(t, 1) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &e));
	EXPECT_INT(e.seq, 5);
	/* Another store on the file reads the mark this one wrote, and back. */
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &other, err, sizeof err), 0);
	if (!other)
		return;
	EXPECT_OK(OPS->remove(t->s, "e", &removed));
	EXPECT_OK(other->ops->insert(other, &f));
	EXPECT_INT(f.seq, 6);
	EXPECT_OK(other->ops->remove(other, "f", &removed));
	other->ops->close(other);
	EXPECT_OK(OPS->insert(t->s, &g));
	EXPECT_INT(g.seq, 7);
	t->s->ops->close(t->s);
	t->s = NULL;
	/* Inserts leave the mark alone; the remove of f raised it to 6. */
	EXPECT_INT(raw_query(t, "SELECT value FROM a2m_meta WHERE name = 'seq'", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "6");
}

/* ---- keys -------------------------------------------------------------- */

static void test_key_unique_per_owner(tctx *t)
{
	a2m_record *got;
	EXPECT_OK(put(t, "r1", 1, "alice", "k"));
	EXPECT_OK(put(t, "r2", 2, "bob", "k"));
	EXPECT_OK(put(t, "r3", 3, NULL, "k"));
	EXPECT_OK(put(t, "r4", 4, "", "k"));
	EXPECT_INT(put(t, "r5", 5, "alice", "k"), A2M_INVALID_PARAMS);
	EXPECT_INT(put(t, "r6", 6, NULL, "k"), A2M_INVALID_PARAMS);
	EXPECT_INT(put(t, "r7", 7, "", "k"), A2M_INVALID_PARAMS);
	EXPECT_OK(put(t, "r8", 8, "alice", NULL));  /* no key: no constraint */
	EXPECT_OK(put(t, "r9", 9, "alice", NULL));
	EXPECT_OK(put(t, "r10", 10, NULL, NULL));
	EXPECT_OK(put(t, "r11", 11, NULL, NULL));
	EXPECT_INT(count_of(t, &all_q), 8);

	EXPECT_OK(OPS->get_by_key(t->s, "alice", "k", &got));
	EXPECT_STR(got ? got->id : NULL, "r1");
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, "bob", "k", &got));
	EXPECT_STR(got ? got->id : NULL, "r2");
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, NULL, "k", &got));
	EXPECT_STR(got ? got->id : NULL, "r3");
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, "", "k", &got));
	EXPECT_STR(got ? got->id : NULL, "r4");
	a2m_record_free(got);
}

static void test_null_owner_distinct_from_empty_owner(tctx *t)
{
	a2m_record *got;
	EXPECT_OK(put(t, "unowned", 1, NULL, "k"));
	EXPECT_OK(OPS->get_by_key(t->s, "", "k", &got));
	EXPECT(got == NULL);
	EXPECT_OK(put(t, "empty", 2, "", "j"));
	EXPECT_OK(OPS->get_by_key(t->s, NULL, "j", &got));
	EXPECT(got == NULL);
	EXPECT_OK(OPS->get_by_key(t->s, "", "j", &got));
	EXPECT_STR(got ? got->id : NULL, "empty");
	a2m_record_free(got);
}

/* ---- many removals ----------------------------------------------------- */

static void test_many_removes_keep_order_and_lookups(tctx *t)
{
	enum { N = 1000 };
	char id[24], key[24];
	int removed;
	a2m_record *got;
	sbuf want = {0};

	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof id, "r%04d", i);
		snprintf(key, sizeof key, "k%04d", i);
		EXPECT_OK(put(t, id, i / 3, "o", key));
	}
	/* Every even one, then most of what is left from the front. */
	for (int i = 0; i < N; i += 2) {
		snprintf(id, sizeof id, "r%04d", i);
		EXPECT_OK(OPS->remove(t->s, id, &removed));
		EXPECT_INT(removed, 1);
	}
	EXPECT_INT(count_of(t, &all_q), N / 2);
	for (int i = 1; i < 801; i += 2) {
		snprintf(id, sizeof id, "r%04d", i);
		EXPECT_OK(OPS->remove(t->s, id, &removed));
		EXPECT_INT(removed, 1);
	}
	/* And the newest, from the tail. */
	EXPECT_OK(OPS->remove(t->s, "r0999", &removed));
	EXPECT_OK(OPS->remove(t->s, "r0997", &removed));
	EXPECT_INT(count_of(t, &all_q), 98);

	for (int i = 0; i < N; i++) {
		int alive = i % 2 == 1 && i > 800 && i < 997;
		snprintf(id, sizeof id, "r%04d", i);
		snprintf(key, sizeof key, "k%04d", i);
		EXPECT_OK(OPS->get(t->s, id, &got));
		EXPECT_INT(got != NULL, alive);
		a2m_record_free(got);
		EXPECT_OK(OPS->get_by_key(t->s, "o", key, &got));
		EXPECT_INT(got != NULL, alive);
		a2m_record_free(got);
	}
	EXPECT_OK(put(t, "late", 2000, NULL, NULL));
	EXPECT_OK(put(t, "early", 0, NULL, NULL));
	sb_add(&want, "early");
	for (int i = 801; i < 997; i += 2)
		sb_add(&want, ",r%04d", i);
	sb_add(&want, ",late");
	const char *got_ids = scan_ids(t, &all_q);
	int same = strcmp(got_ids, want.p) == 0;
	free(want.p);
	EXPECT(same);
	EXPECT_STR(scan_ids(t, &(a2m_query){.key_prefix = "k09", .descending = 1}),
		   "r0995,r0993,r0991,r0989,r0987,r0985,r0983,r0981,r0979,r0977,"
		   "r0975,r0973,r0971,r0969,r0967,r0965,r0963,r0961,r0959,r0957,"
		   "r0955,r0953,r0951,r0949,r0947,r0945,r0943,r0941,r0939,r0937,"
		   "r0935,r0933,r0931,r0929,r0927,r0925,r0923,r0921,r0919,r0917,"
		   "r0915,r0913,r0911,r0909,r0907,r0905,r0903,r0901");
	/* Removing everything leaves an empty store that still takes inserts. */
	EXPECT_OK(OPS->remove(t->s, "late", &removed));
	EXPECT_OK(OPS->remove(t->s, "early", &removed));
	for (int i = 801; i < 997; i += 2) {
		snprintf(id, sizeof id, "r%04d", i);
		EXPECT_OK(OPS->remove(t->s, id, &removed));
		EXPECT_INT(removed, 1);
	}
	EXPECT_STR(scan_ids(t, &all_q), "");
	EXPECT_INT(count_of(t, &all_q), 0);
	a2m_record last = make("last", 5);
	EXPECT_OK(OPS->insert(t->s, &last));
	EXPECT_INT(last.seq, N + 3);
	EXPECT_STR(scan_ids(t, &all_q), "last");
}

/*
** Removals in a random order, some rolled back, with every record looked
** up by id and by seq after each round: the memory engine's tables by id
** and seq are probed, and a removal moves later members of a cluster back.
*/
static void test_random_removes_keep_lookups_by_id_and_seq(tctx *t)
{
	enum { N = 3000, ROUND = 250 };
	static int64_t seqs[N];
	static int alive[N], order[N];
	char id[16];
	uint64_t x = 88172645463325252ULL;
	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof id, "q%d", i);
		a2m_record r = make(id, i);
		EXPECT_OK(OPS->insert(t->s, &r));
		seqs[i] = r.seq;
		alive[i] = 1;
		order[i] = i;
	}
	for (int i = N - 1; i > 0; i--) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int j = (int)(x % (uint64_t)(i + 1)), k = order[i];
		order[i] = order[j];
		order[j] = k;
	}
	for (int at = 0, round = 0; at < N; at += ROUND, round++) {
		int undo = round % 3 == 1, removed;
		if (undo)
			EXPECT_OK(OPS->begin(t->s));
		for (int i = at; i < at + ROUND && i < N; i++) {
			snprintf(id, sizeof id, "q%d", order[i]);
			EXPECT_OK(OPS->remove(t->s, id, &removed));
			EXPECT_INT(removed, 1);
			alive[order[i]] = undo;
		}
		if (undo)
			OPS->rollback(t->s);
		int wrong = 0;
		for (int i = 0; i < N; i++) {
			a2m_record *got = NULL;
			int visited = 0;
			snprintf(id, sizeof id, "q%d", i);
			EXPECT_OK(OPS->get(t->s, id, &got));
			EXPECT_OK(OPS->visit_seqs(t->s, &seqs[i], 1, count_visit, &visited));
			wrong += (got != NULL) != alive[i] || visited != alive[i] ||
				 (got && got->seq != seqs[i]);
			a2m_record_free(got);
		}
		EXPECT_INT(wrong, 0);
	}
}

static void test_rollback_after_many_removes_restores_all(tctx *t)
{
	enum { N = 600 };
	char id[24], key[24];
	int removed;
	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof id, "r%03d", i);
		snprintf(key, sizeof key, "k%03d", i);
		EXPECT_OK(put(t, id, 1000 - i / 2, i % 3 ? "o" : NULL, key));
	}
	char *before = dump(t);
	EXPECT_OK(OPS->begin(t->s));
	for (int i = 0; i < N; i++) {
		if (i % 11 == 0)
			continue;
		snprintf(id, sizeof id, "r%03d", i);
		EXPECT_OK(OPS->remove(t->s, id, &removed));
	}
	EXPECT_OK(put(t, "n1", 1, NULL, "k001"));
	EXPECT_OK(put(t, "n2", 5000, NULL, NULL));
	EXPECT_INT(count_of(t, &all_q), 55 + 2);
	OPS->rollback(t->s);
	EXPECT(same_as_dump(t, before));
	EXPECT_INT(count_of(t, &all_q), N);
}

typedef struct remover {
	a2m_store *s;
	int        visited;
	int        failed;
} remover;

static int remove_visited(const a2m_record *r, void *ctx)
{
	remover *m = ctx;
	int removed = 0;
	m->visited++;
	if (m->s->ops->remove(m->s, r->id, &removed) != 0 || !removed)
		m->failed++;
	return 0;
}

static void test_remove_current_record_inside_visit(tctx *t)
{
	remover m = {t->s, 0, 0};
	char id[16];
	for (int i = 0; i < 10; i++) {
		snprintf(id, sizeof id, "r%d", i);
		EXPECT_OK(put(t, id, i, NULL, NULL));
	}
	EXPECT_OK(OPS->scan(t->s, &all_q, remove_visited, &m));
	EXPECT_INT(m.visited, 10);
	EXPECT_INT(m.failed, 0);
	EXPECT_INT(count_of(t, &all_q), 0);

	for (int i = 0; i < 10; i++) {
		snprintf(id, sizeof id, "d%d", i);
		EXPECT_OK(put(t, id, i, NULL, NULL));
	}
	m.visited = 0;
	EXPECT_OK(OPS->scan(t->s, &(a2m_query){.descending = 1}, remove_visited, &m));
	EXPECT_INT(m.visited, 10);
	EXPECT_INT(m.failed, 0);
	EXPECT_STR(scan_ids(t, &all_q), "");
}

int main(void)
{
	store_harness_start();
	RUN(test_insert_assigns_increasing_seq);
	RUN(test_insert_duplicate_id_refused);
	RUN(test_insert_without_id_or_content_refused);
	RUN(test_get_missing_returns_null);
	RUN(test_get_returns_independent_copy);
	RUN(test_roundtrip_every_field);
	RUN(test_roundtrip_absent_fields_stay_null);
	RUN(test_generated_vector_roundtrips_apart_from_callers);
	RUN(test_large_content_roundtrips);
	RUN(test_long_ids_roundtrip_through_every_read);
	RUN(test_update_replaces_every_field_keeps_seq);
	RUN(test_update_unknown_id_returns_unknown_record);
	RUN(test_update_to_taken_key_refused);
	RUN(test_update_moves_key);
	RUN(test_remove_reports_whether_removed);
	RUN(test_seq_never_reused_after_remove);
	RUN(test_key_unique_per_owner);
	RUN(test_null_owner_distinct_from_empty_owner);
	RUN(test_many_removes_keep_order_and_lookups);
	RUN(test_random_removes_keep_lookups_by_id_and_seq);
	RUN(test_rollback_after_many_removes_restores_all);
	RUN(test_remove_current_record_inside_visit);
	RUN_SQLITE(test_seq_not_reused_after_removing_newest_across_reopen);
	return store_records_done();
}
