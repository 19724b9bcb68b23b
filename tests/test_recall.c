/*
** test_recall.c — ranking as a client sees it: memory/recall, forget and
** describe through the in-process binding, against both engines, with the
** BM25 scorer over the store's index (docs/RANKING.md).
** The handle on each engine and the calls most rules make are
** tests/recall_harness.h.
*/
#include "recall_harness.h"

static void test_rotate_finds_rotates(void)
{
	fresh();
	const char *t[] = {"The deploy key rotates every ninety days", "The cafeteria serves soup"};
	write_texts(NULL, t, 2);
	CHECK_STR(recall_q("rotate"), t[0]);
	CHECK_STR(recall_q("rotation"), t[0]);
}

static void test_unaccented_query_finds_accented_record(void)
{
	fresh();
	const char *t[] = {"Mia sorella vive in una città vicino a Köln", "Il treno parte alle otto"};
	write_texts(NULL, t, 2);
	CHECK_STR(recall_q("citta"), t[0]);
	CHECK_STR(recall_q("Koln"), t[0]);
	CHECK_STR(recall_q("CITTÀ"), t[0]);
}

static void test_inflected_query_finds_record_in_other_languages(void)
{
	fresh();
	const char *t[] = {"Мой брат живёт в Москве", "Die Katzen schlafen auf dem Sofa",
			   "Los perros duermen en el jardín"};
	write_texts(NULL, t, 3);
	CHECK_STR(recall_q("Москва"), t[0]);
	CHECK_STR(recall_q("Katze"), t[1]);
	CHECK_STR(recall_q("perro"), t[2]);
}

static void test_cjk_query_finds_cjk_record(void)
{
	fresh();
	const char *t[] = {"飞往东京的航班三月十二日起飞", "去维也纳的火车晚上八点出发"};
	write_texts(NULL, t, 2);
	CHECK_STR(recall_q("东京的航班"), t[0]);
	CHECK_STR(recall_q("维也纳"), t[1]);
}

static void test_stopword_only_query_abstains_to_recency(void)
{
	fresh();
	const char *t[] = {"first note about lighthouses", "second note about bread"};
	write_texts(NULL, t, 2);
	/* Nothing to judge: every record, newest first (DECISIONS 013). */
	CHECK_STR(recall_q("the and of"), "second note about bread | first note about lighthouses");
	CHECK_STR(recall_q("?!"), "second note about bread | first note about lighthouses");
}

static void test_unmatched_query_recalls_nothing(void)
{
	fresh();
	const char *t[] = {"first note about lighthouses", "second note about bread"};
	write_texts(NULL, t, 2);
	CHECK_STR(recall_q("zqxwvbnm"), "");
}

static void test_english_stopwords_do_not_match_italian(void)
{
	/* DECISIONS 015: "qual e la citta?" matched a record on the article "la". */
	fresh();
	const char *t[] = {"The deploy key for la production server", "La città di Marco è Milano"};
	write_texts(NULL, t, 2);
	const char *got = recall_q("qual e la citta?");
	CHECK(strncmp(got, t[1], strlen(t[1])) == 0);
}

static void test_relevant_record_ranks_first(void)
{
	fresh();
	const char *t[] = {"the cafeteria serves tomato soup on tuesdays",
			   "the deploy key rotates every ninety days; deploy key rotation is automatic",
			   "the parking garage closes at midnight"};
	write_texts(NULL, t, 3);
	const char *got = recall_q("deploy key rotation");
	CHECK(strncmp(got, t[1], strlen(t[1])) == 0);
}

static void test_scores_in_unit_interval_descending(void)
{
	fresh();
	const char *t[] = {"alpha beta gamma", "alpha beta", "alpha", "delta"};
	write_texts(NULL, t, 4);
	json_t *r = check_call(h, "memory/recall", "{\"query\":\"alpha beta gamma\"}");
	json_t *recs = json_object_get(json_object_get(r, "result"), "records");
	CHECK_INT(json_array_size(recs), 3);
	double prev = 2;
	for (size_t i = 0; i < json_array_size(recs); i++) {
		double s = json_number_value(json_object_get(json_array_get(recs, i), "score"));
		CHECK(s > 0 && s <= 1 && s <= prev);
		prev = s;
	}
	CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 0), "content")), t[0]);
	json_decref(r);
}

static void test_filters_apply_before_the_limit(void)
{
	/* Fifty strong matches in one tier, one weak match in another: asking
	   for that tier with limit 1 must still find it. */
	fresh();
	char text[64];
	for (int i = 0; i < 50; i++) {
		snprintf(text, sizeof text, "lighthouse lighthouse keeper log %d", i);
		const char *one[] = {text};
		write_texts("semantic", one, 1);
	}
	const char *weak[] = {"a long note that mentions a lighthouse once among many other words"};
	write_texts("episodic", weak, 1);
	CHECK_STR(recall("{\"query\":\"lighthouse\",\"tier\":\"episodic\",\"limit\":1}"), weak[0]);
	CHECK_STR(recall("{\"query\":\"lighthouse\",\"limit\":1,"
			 "\"where\":{\"tier\":\"episodic\"}}"), weak[0]);
}

static void test_owner_scope_applies_before_the_limit(void)
{
	fresh();
	json_t *r = check_call(h, "memory/remember", "{\"records\":["
		"{\"content\":\"budget budget budget review\",\"owner\":\"bob\",\"tier\":\"working\"},"
		"{\"content\":\"budget budget review notes\",\"owner\":\"bob\",\"tier\":\"working\"},"
		"{\"content\":\"the budget is due in a long while, said the memo\",\"owner\":\"ann\","
		"\"tier\":\"working\"}]}");
	json_decref(r);
	CHECK_STR(recall("{\"query\":\"budget\",\"owner\":\"ann\",\"limit\":1}"),
		  "the budget is due in a long while, said the memo");
}

static void test_min_score_drops_weak_matches(void)
{
	fresh();
	const char *t[] = {"alpha beta gamma", "alpha"};
	write_texts(NULL, t, 2);
	CHECK_STR(recall("{\"query\":\"alpha beta gamma\",\"min_score\":2}"), "");
	CHECK_STR(recall("{\"query\":\"alpha beta gamma\",\"min_score\":0}"),
		  "alpha beta gamma | alpha");
}

static void test_forget_by_query_deletes_only_matches(void)
{
	fresh();
	const char *t[] = {"the old wifi password", "the new router", "bread recipe"};
	write_texts(NULL, t, 3);
	json_t *r = check_call(h, "memory/forget", "{\"query\":\"passwords\"}");
	CHECK_INT(json_integer_value(json_object_get(json_object_get(r, "result"), "forgotten")), 1);
	json_decref(r);
	CHECK_STR(recall_q("password"), "");
	CHECK_STR(recall_q("router"), "the new router");
	r = check_call(h, "memory/forget", "{\"query\":\"the\"}");
	/* A query the scorer cannot judge selects nothing. */
	CHECK_INT(json_integer_value(json_object_get(json_object_get(r, "result"), "forgotten")), 0);
	json_decref(r);
}

static void test_key_replacement_reindexes(void)
{
	fresh();
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"favourite colour green\","
			 "\"key\":\"colour\"}]}");
	json_decref(r);
	r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"favourite colour blue\","
		 "\"key\":\"colour\"}]}");
	json_decref(r);
	CHECK_STR(recall_q("green"), "");
	CHECK_STR(recall_q("blue"), "favourite colour blue");
}

static void test_describe_reports_scorer_and_unindexed(void)
{
	fresh();
	const char *t[] = {"words to index", "!!! ???", "🙂", "the and of"};
	write_texts(NULL, t, 4);
	json_t *r = check_call(h, "memory/describe", "{}");
	json_t *res = json_object_get(r, "result");
	CHECK_INT(json_integer_value(json_object_get(res, "unindexed")), 3);
	json_t *sc = json_object_get(res, "scorer");
	CHECK_STR(json_string_value(json_object_get(sc, "name")), "bm25+vector");
	CHECK_STR(json_string_value(json_object_get(sc, "index")), engine == 2 ? "postgres" : engine ? "sqlite" : "memory");
	CHECK(json_string_value(json_object_get(sc, "analyzer")) != NULL);
	CHECK_NEAR(json_number_value(json_object_get(sc, "k1")), 1.2, 1e-12);
	CHECK_NEAR(json_number_value(json_object_get(sc, "b")), 0.75, 1e-12);
	json_t *blend = json_object_get(sc, "blend");
	CHECK_NEAR(json_number_value(json_object_get(blend, "relevance")), 0.75, 1e-12);
	CHECK_NEAR(json_number_value(json_object_get(blend, "recency")), 0.15, 1e-12);
	CHECK_NEAR(json_number_value(json_object_get(blend, "salience")), 0.10, 1e-12);
	json_decref(r);
}

static void test_index_survives_reopen(void)
{
	if (!engine_sqlite)
		return;
	fresh();
	const char *t[] = {"the deploy key rotates"};
	write_texts(NULL, t, 1);
	a2m_close(h);
	open_server(NULL, 0);
	CHECK_STR(recall_q("rotate"), t[0]);
}

static void test_lexical_baseline_still_ranks_by_scan(void)
{
	if (h)
		a2m_close(h);
	open_server("lexical", 1);
	const char *t[] = {"deploy key", "bread"};
	write_texts(NULL, t, 2);
	CHECK_STR(recall_q("deploy"), "deploy key");
	json_t *r = check_call(h, "memory/describe", "{}");
	json_t *sc = json_object_get(json_object_get(r, "result"), "scorer");
	CHECK_STR(json_string_value(json_object_get(sc, "index")), "scan");
	json_decref(r);
}

/* One field of the only record timeline returns for params, or -1. */
static long long timeline_number(const char *params, const char *field)
{
	json_t *r = check_call(h, "memory/timeline", "%s", params);
	json_t *recs = json_object_get(json_object_get(r, "result"), "records");
	long long v = json_array_size(recs) == 1
		? (long long)json_integer_value(json_object_get(json_array_get(recs, 0), field)) : -1;
	json_decref(r);
	return v;
}

/* The access_count recall reports for its first hit, or -1. */
static long long recall_count(const char *query)
{
	char p[256];
	snprintf(p, sizeof p, "{\"query\":\"%s\",\"limit\":1}", query);
	json_t *r = check_call(h, "memory/recall", "%s", p);
	json_t *recs = json_object_get(json_object_get(r, "result"), "records");
	long long v = json_array_size(recs) == 1
		? (long long)json_integer_value(json_object_get(json_array_get(recs, 0), "access_count"))
		: -1;
	json_decref(r);
	return v;
}

/* access_count of the record with this content, read from the file by a
** connection of its own: what is written, not what the server lays over. */
static long long stored_count(const char *content)
{
	if (engine == 2) {
		char sql[160];
		snprintf(sql, sizeof sql, "SELECT access_count FROM %s.a2m_records WHERE content = $1",
			 pg_schema);
		return pg_test_int(sql, content);
	}
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long long v = -1;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT access_count FROM records WHERE content = ?1", -1,
			       &st, NULL) == SQLITE_OK &&
	    sqlite3_bind_text(st, 1, content, -1, SQLITE_STATIC) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void test_recall_touch_is_seen_by_every_read(void)
{
	fresh();
	const char *t[] = {"the lighthouse keeper", "a quiet harbour"};
	write_texts(NULL, t, 2);
	CHECK_INT(recall_count("lighthouse"), 1);
	CHECK_INT(recall_count("lighthouse"), 2);
	CHECK_INT(recall_count("lighthouse"), 3);
	/* Reads before any write see the touches that are still waiting. */
	CHECK_INT(timeline_number("{\"where\":{\"access_count\":3}}", "access_count"), 3);
	CHECK_INT(timeline_number("{\"where\":{\"access_count\":0}}", "access_count"), 0);
	json_t *r = check_call(h, "memory/timeline", "{\"where\":{\"access_count\":3}}");
	json_t *recs = json_object_get(json_object_get(r, "result"), "records");
	CHECK(json_is_string(json_object_get(json_array_get(recs, 0), "accessed_at")));
	json_decref(r);
	/* A write in between neither loses nor doubles them. */
	const char *more[] = {"a third record"};
	write_texts(NULL, more, 1);
	CHECK_INT(recall_count("lighthouse"), 4);
	CHECK_INT(timeline_number("{\"where\":{\"access_count\":4}}", "access_count"), 4);
}

static void test_recall_writes_its_touch_behind(void)
{
	if (!engine_sqlite)
		return;
	fresh();
	const char *t[] = {"the lighthouse keeper", "a quiet harbour"};
	write_texts(NULL, t, 2);
	CHECK_INT(recall_count("lighthouse"), 1);
	CHECK_INT(recall_count("lighthouse"), 2);
	/* Recall wrote nothing itself; the next write carries both touches. */
	CHECK_INT(stored_count(t[0]), 0);
	const char *more[] = {"a third record"};
	write_texts(NULL, more, 1);
	CHECK_INT(stored_count(t[0]), 2);
	CHECK_INT(stored_count(t[1]), 0);
	/* Closing writes what waits. */
	CHECK_INT(recall_count("lighthouse"), 3);
	a2m_close(h);
	h = NULL;
	CHECK_INT(stored_count(t[0]), 3);
	open_server(NULL, 0);
	CHECK_INT(recall_count("lighthouse"), 4);
}

/* Records with access_count n in the file, by a connection of its own. */
static long long stored_with_count(int n)
{
	if (engine == 2) {
		char sql[160], num[16];
		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.a2m_records WHERE access_count = $1",
			 pg_schema);
		snprintf(num, sizeof num, "%d", n);
		return pg_test_int(sql, num);
	}
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long long v = -1;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM records WHERE access_count = ?1", -1,
			       &st, NULL) == SQLITE_OK &&
	    sqlite3_bind_int(st, 1, n) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* A full buffer is written by the recall that filled it, without any write. */
static void test_full_touch_buffer_is_written(void)
{
	if (!engine_sqlite)
		return;
	fresh();
	/* The count bound alone: under a sanitizer the five recalls may take
	** more than the second after which touches are written anyway. */
	a2m_touches_max_age_for_tests(3600 * 1000);
	/* Too big for check_call(h, )'s buffer: the message is built here. */
	char *batch = malloc(1000 * 80 + 128);
	for (int b = 0; batch && b < 5; b++) {
		size_t n = (size_t)sprintf(batch, "{\"jsonrpc\":\"2.0\",\"id\":1,"
					   "\"method\":\"memory/remember\",\"params\":{\"records\":[");
		for (int i = 0; i < 1000; i++)
			n += (size_t)sprintf(batch + n, "%s{\"content\":\"beacon %d\",\"tier\":\"semantic\","
					     "\"metadata\":{\"b\":%d}}", i ? "," : "", b * 1000 + i, b);
		sprintf(batch + n, "]}}");
		char *out = check_reply(h, batch);
		CHECK(out && strstr(out, "\"result\""));
		a2m_free(out);
	}
	free(batch);
	for (int b = 0; b < 5; b++) {
		char p[128];
		snprintf(p, sizeof p, "{\"query\":\"beacon\",\"limit\":1000,\"where\":{\"b\":%d}}", b);
		json_t *r = check_call(h, "memory/recall", "%s", p);
		CHECK_INT(json_array_size(json_object_get(json_object_get(r, "result"), "records")), 1000);
		json_decref(r);
		/* 4096 records waiting is the bound: the fifth recall writes them all. */
		CHECK_INT(stored_with_count(1), b < 4 ? 0 : 5000);
	}
	a2m_touches_max_age_for_tests(0);
}

static void test_late_touch_never_resurrects_or_clobbers(void)
{
	fresh();
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"colour green\","
			 "\"key\":\"colour\",\"tier\":\"semantic\"},"
			 "{\"content\":\"green tea\",\"tier\":\"semantic\"}]}");
	json_decref(r);
	CHECK_INT(recall_count("colour"), 1);
	CHECK_INT(recall_count("tea"), 1);
	/* Rewritten by key while its touch waits: the new content, the count kept. */
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"colour blue\","
			 "\"key\":\"colour\",\"tier\":\"semantic\"}]}"));
	json_t *f = check_call(h, "memory/fetch", "{\"key\":\"colour\"}");
	json_t *rec = json_object_get(json_object_get(f, "result"), "record");
	CHECK_STR(json_string_value(json_object_get(rec, "content")), "colour blue");
	CHECK_INT(json_integer_value(json_object_get(rec, "access_count")), 1);
	CHECK_INT(json_integer_value(json_object_get(rec, "revision")), 1);
	json_decref(f);
	/* Forgotten while its touch waits: gone for good. */
	CHECK_INT(recall_count("tea"), 2);
	json_decref(check_call(h, "memory/forget", "{\"query\":\"tea\"}"));
	CHECK_STR(recall_q("tea"), "");
	CHECK_INT(timeline_number("{\"where\":{\"content\":\"green tea\"}}", "access_count"), -1);
	if (engine_sqlite) {
		a2m_close(h);
		h = NULL;
		CHECK_INT(stored_count("green tea"), -1);
		CHECK_INT(stored_count("colour blue"), 1);
		open_server(NULL, 0);
	}
}

/* The number of records recall returns for query. */
static size_t recall_hits(a2m *on, const char *query)
{
	a2m *keep = h;
	h = on;
	char p[256];
	snprintf(p, sizeof p, "{\"query\":\"%s\",\"limit\":10}", query);
	json_t *r = check_call(h, "memory/recall", "%s", p);
	size_t n = json_array_size(json_object_get(json_object_get(r, "result"), "records"));
	json_decref(r);
	h = keep;
	return n;
}

static void test_postings_read_again_after_another_writer(void)
{
	if (!engine_sqlite)
		return;
	fresh();
	const char *t[] = {"the lighthouse keeper", "a quiet harbour"};
	write_texts(NULL, t, 2);
	CHECK_INT(recall_hits(h, "lighthouse"), 1);
	CHECK_INT(recall_hits(h, "lighthouse"), 1);
	/* A second server on the same file writes: the first must see it. */
	a2m *first = h;
	h = NULL;
	open_server(NULL, 0);
	a2m *second = h;
	h = second;
	const char *more[] = {"the lighthouse lamp", "lighthouse stairs"};
	write_texts(NULL, more, 2);
	CHECK_INT(recall_hits(first, "lighthouse"), 3);
	CHECK_INT(recall_hits(second, "lighthouse"), 3);
	json_decref(check_call(h, "memory/forget", "{\"query\":\"stairs\"}"));
	CHECK_INT(recall_hits(first, "lighthouse"), 2);
	a2m_close(second);
	h = first;
	/* And its own writes, of course. */
	const char *last[] = {"lighthouse again"};
	write_texts(NULL, last, 1);
	CHECK_INT(recall_hits(h, "lighthouse"), 3);
}

/* The raw reply text to a request (free with a2m_free). */
static char *reply_text(const char *method, const char *params)
{
	char msg[4096];
	snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\",\"params\":%s}",
		 method, params);
	return check_reply(h, msg);
}

/* Overwrites the values of access_count and accessed_at in s with '#'. */
static void blank_access(char *s)
{
	static const char *const keys[] = {"\"access_count\":", "\"accessed_at\":"};
	for (int k = 0; k < 2; k++) {
		char *p = strstr(s, keys[k]);
		for (p = p ? p + strlen(keys[k]) : NULL; p && *p && *p != ',' && *p != '}'; p++)
			*p = '#';
	}
}

/* Recall writes its records as text; fetch serialises objects: the same bytes. */
static void test_recall_text_is_the_object_json(void)
{
	fresh();
	json_decref(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"zebra \\\"q\\\" back\\\\slash"
			 "\\n tab\\t ctl\\u0001 citt\\u00e0 \\ud83d\\ude00\",\"role\":\"user\","
			 "\"metadata\":{\"b\":0.1,\"a\":[1,2.5e-7,null,true,\"\\u00fc\"],\"z\":{}},"
			 "\"group\":\"g1\",\"tier\":\"semantic\",\"owner\":\"ann\",\"session\":\"s1\","
			 "\"key\":\"k1\",\"salience\":0.3,\"embedding\":[0.25,-1,3.0e10,-0.0,1e15,999999999999999,1e-7],"
			 "\"uri\":\"file:///x\",\"media_type\":\"text/plain\"}]}"));
	json_decref(check_call(h, "memory/recall", "{\"query\":\"zebra\",\"owner\":\"ann\"}"));
	char *f = reply_text("memory/fetch", "{\"key\":\"k1\",\"owner\":\"ann\",\"embeddings\":true}");
	char *r = reply_text("memory/recall", "{\"query\":\"zebra\",\"owner\":\"ann\",\"embeddings\":true}");
	char *fr = f ? strstr(f, "\"record\":{") : NULL;
	char *rr = r ? strstr(r, "\"records\":[{") : NULL;
	char *score = rr ? strstr(rr, ",\"score\":") : NULL;
	CHECK(fr && rr && score);
	if (fr && rr && score) {
		fr += strlen("\"record\":");
		rr += strlen("\"records\":[");
		size_t n = (size_t)(score - rr);
		/* The recall touched the record after the fetch read it. */
		blank_access(fr);
		blank_access(rr);
		CHECK(strncmp(fr, rr, n) == 0 && fr[n] == '}');
		if (strncmp(fr, rr, n) != 0)
			fprintf(stderr, "  fetch:  %s\n  recall: %s\n", fr, rr);
	}
	a2m_free(f);
	a2m_free(r);
}

static void test_unknown_ranking_refused(void)
{
	a2m_config *cfg;
	CHECK_INT(a2m_config_new(&cfg), A2M_OK);
	CHECK_INT(a2m_config_set(cfg, "ranking", "tfidf"), A2M_RANGE);
	CHECK(strstr(a2m_config_errmsg(cfg), "tfidf") != NULL);
	/* The refused value was not kept: the default opens. */
	CHECK_STR(a2m_config_get(cfg, "ranking"), "bm25");
	a2m_config_free(cfg);
}

/*
** One remember of many records (their texts are analysed ahead, on other
** threads: store.h, prepare) indexes each under its own words: around a
** record skipped as a retry of an id written earlier in the call, and for
** records replacing an occupied key (their text is a copy the analysis
** ahead never saw: analysed on the writing thread). Run with the default
** threads, with none, and with three.
*/
static void test_batch_indexes_each_record_under_its_own_words(void)
{
	enum { N = 150, KEYS = 12 };
	static const int threads[] = {-1, 0, 3};
	for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
		helper_threads = threads[t];
		fresh();
		json_t *first = json_array();
		for (int k = 0; k < KEYS; k++) {
			char text[64], key[16];
			snprintf(text, sizeof text, "keyed note oldword%d", k);
			snprintf(key, sizeof key, "k%d", k);
			json_array_append_new(first, json_pack("{s:s,s:s,s:s}", "content", text,
							       "tier", "semantic", "key", key));
		}
		remember(json_pack("{s:o}", "records", first));
		json_t *recs = json_array();
		for (int i = 0; i < N; i++) {
			char text[128];
			snprintf(text, sizeof text, "batch entry uniq%dword about rotating engines", i);
			json_t *r = json_pack("{s:s,s:s}", "content", text, "tier", "semantic");
			/* 41 repeats 40's id: a retry, skipped, its text never indexed. */
			if (i == 40 || i == 41)
				json_object_set_new(r, "id", json_string("01BATCHRETRYID0000000000AA"));
			/* Every tenth replaces keyed note i / 10. */
			if (i % 10 == 5) {
				char key[16];
				snprintf(key, sizeof key, "k%d", i / 10);
				json_object_set_new(r, "key", json_string(key));
			}
			json_array_append_new(recs, r);
		}
		remember(json_pack("{s:o}", "records", recs));
		for (int i = 0; i < N; i++) {
			char q[32], want[128];
			snprintf(q, sizeof q, "uniq%dword", i);
			snprintf(want, sizeof want, "batch entry uniq%dword about rotating engines", i);
			CHECK_STR(recall_q(q), i == 41 ? "" : want);
		}
		for (int k = 0; k < KEYS; k++) {
			char q[32], want[64];
			snprintf(q, sizeof q, "oldword%d", k);
			snprintf(want, sizeof want, "keyed note oldword%d", k);
			/* Replaced keys (0 to N/10 - 1) lost their old words. */
			CHECK_STR(recall_q(q), k < N / 10 ? "" : want);
		}
	}
	helper_threads = -1;
}

/* One thread's batches for test_concurrent_batches: 0 when each was kept. */
enum { CB_THREADS = 3, CB_BATCHES = 3, CB_RECORDS = 80 };

static void *batch_writer(void *arg)
{
	int t = (int)(intptr_t)arg, bad = 0;
	for (int b = 0; b < CB_BATCHES; b++) {
		json_t *recs = json_array();
		for (int i = 0; i < CB_RECORDS; i++) {
			char text[96];
			snprintf(text, sizeof text, "thread note cb%dx%dx%dword", t, b, i);
			json_array_append_new(recs, json_pack("{s:s,s:s}", "content", text,
							      "tier", "semantic"));
		}
		json_t *params = json_pack("{s:o}", "records", recs);
		char *p = json_dumps(params, JSON_COMPACT);
		json_t *r = p ? check_call(h, "memory/remember", "%s", p) : NULL;
		bad |= !json_object_get(r, "result");
		json_decref(r);
		json_decref(params);
		free(p);
	}
	return (void *)(intptr_t)bad;
}

/*
** Batches remembered on several threads at once through one handle (each
** analysed ahead on threads of its own) are each indexed under their own
** words.
*/
static void test_concurrent_batches(void)
{
	fresh();
	pthread_t th[CB_THREADS];
	int started = 0;
	for (int t = 0; t < CB_THREADS; t++)
		started += pthread_create(&th[t], NULL, batch_writer, (void *)(intptr_t)t) == 0;
	CHECK_INT(started, CB_THREADS);
	for (int t = 0; t < started; t++) {
		void *bad = NULL;
		pthread_join(th[t], &bad);
		CHECK(bad == NULL);
	}
	for (int t = 0; t < CB_THREADS; t++)
		for (int b = 0; b < CB_BATCHES; b++)
			for (int i = 0; i < CB_RECORDS; i += 7) {
				char q[64], want[96];
				snprintf(q, sizeof q, "cb%dx%dx%dword", t, b, i);
				snprintf(want, sizeof want, "thread note %s", q);
				CHECK_STR(recall_q(q), want);
			}
}

/* One integer from SQL on the SQLite file at path (-1 on failure). */
static long long file_int(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long long v = -1;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/*
** helper_threads in the configuration file: 0 to 16, else the open fails.
** It takes effect: eight remembers of 100 records fill the index's level 0;
** with helpers the level waits, full, for the next transaction to merge it
** ahead, and with none the eighth commit merges it.
*/
static void test_helper_threads_in_the_file(void)
{
	if (engine != 1)
		return;  /* the segments of SQLite's index */
	static const char *const files[] = {
		"{\"helper_threads\": 2}", "{\"helper_threads\": 0}", "{\"helper_threads\": -1}",
		"{\"helper_threads\": 17}", "{\"helper_threads\": \"two\"}"};
	char path[64], db[64];
	snprintf(path, sizeof path, "/tmp/a2m-test-recall-%d.json", (int)getpid());
	snprintf(db, sizeof db, "/tmp/a2m-test-recall-file-%d.db", (int)getpid());
	a2m *mine = h;
	/* Each batch its own segment, as the levels below expect (no tail). */
	a2m_sqlite_index_tail_for_tests(1);
	for (int i = 0; i < 5; i++) {
		FILE *f = fopen(path, "w");
		CHECK(f != NULL);
		if (!f)
			return;
		fputs(files[i], f);
		fclose(f);
		a2m_config *cfg;
		a2m *other = NULL;
		char *err = NULL;
		CHECK_INT(a2m_config_new(&cfg), A2M_OK);
		CHECK_INT(a2m_config_set(cfg, "path", db), A2M_OK);
		CHECK_INT(a2m_config_set(cfg, "synchronous", "normal"), A2M_OK);
		CHECK_INT(a2m_config_set(cfg, "config_file", path), A2M_OK);
		check_remove_db(db);
		int rc = a2m_open(cfg, &other, &err);
		a2m_config_free(cfg);
		if (i < 2) {
			CHECK(rc == 0 && other != NULL);
		} else {
			CHECK(rc != 0 && other == NULL);
			CHECK(err && strstr(err, "helper_threads"));
		}
		a2m_free(err);
		if (!other)
			continue;
		h = other;
		for (int b = 0; b < 8; b++) {
			json_t *recs = json_array();
			for (int k = 0; k < 100; k++) {
				char text[96];
				snprintf(text, sizeof text, "file batch %d note %d about cb%dx%dword", b, k, b, k);
				json_array_append_new(recs, json_pack("{s:s,s:s}", "content", text,
								      "tier", "semantic"));
			}
			remember(json_pack("{s:o}", "records", recs));
		}
		a2m_close(other);
		h = mine;
		CHECK_INT(file_int(db, "SELECT count(*) FROM a2m_segdir WHERE level = 0"), i ? 0 : 8);
		CHECK_INT(file_int(db, "SELECT count(*) FROM a2m_segdir WHERE level = 1"), i ? 1 : 0);
	}
	a2m_sqlite_index_tail_for_tests(0);
	check_remove_db(db);
	remove(path);
}

int main(void)
{
	static const test_case tests[] = {
		TEST(test_rotate_finds_rotates),
		TEST(test_unaccented_query_finds_accented_record),
		TEST(test_inflected_query_finds_record_in_other_languages),
		TEST(test_cjk_query_finds_cjk_record),
		TEST(test_stopword_only_query_abstains_to_recency),
		TEST(test_unmatched_query_recalls_nothing),
		TEST(test_english_stopwords_do_not_match_italian),
		TEST(test_relevant_record_ranks_first),
		TEST(test_scores_in_unit_interval_descending),
		TEST(test_filters_apply_before_the_limit),
		TEST(test_owner_scope_applies_before_the_limit),
		TEST(test_min_score_drops_weak_matches),
		TEST(test_forget_by_query_deletes_only_matches),
		TEST(test_key_replacement_reindexes),
		TEST(test_describe_reports_scorer_and_unindexed),
		TEST(test_index_survives_reopen),
		TEST(test_lexical_baseline_still_ranks_by_scan),
		TEST(test_unknown_ranking_refused),
		TEST(test_recall_touch_is_seen_by_every_read),
		TEST(test_recall_writes_its_touch_behind),
		TEST(test_late_touch_never_resurrects_or_clobbers),
		TEST(test_full_touch_buffer_is_written),
		TEST(test_postings_read_again_after_another_writer),
		TEST(test_recall_text_is_the_object_json),
		TEST(test_batch_indexes_each_record_under_its_own_words),
		TEST(test_helper_threads_in_the_file),
		TEST(test_concurrent_batches),
		{NULL, NULL}
	};
	int rc = 0;
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-recall-%d.db", (int)getpid());
	snprintf(pg_schema, sizeof pg_schema, "a2m_tr_%d", (int)getpid());
	if (!pg_test_server())
		printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
	for (engine = 0; engine < (pg_test_server() ? 3 : 2); engine++) {
		static const char *const names[] = {"memory", "sqlite", "postgres"};
		printf("# %s\n", names[engine]);
		rc |= run_tests(tests);
		if (h)
			a2m_close(h);
		h = NULL;
	}
	remove_db();
	pg_test_schema_drop(pg_schema);
	return rc;
}
