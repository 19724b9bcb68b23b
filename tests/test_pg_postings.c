/*
** test_pg_postings.c — the PostgreSQL term index's rows (a2m_postings_seg,
** src/store/postgres_segments.c), through `a2m serve` processes on a
** deployment (tests/pg_servers.h) and `a2m check --postgres`.
**
** What is checked: a term written by many commits of two servers, with
** forgets, key replacements and content changes among them, recalls
** exactly the records that hold it on both servers, while its rows are
** merged (far fewer rows than commits) and `a2m check` finds the index
** right; a deployment at schema step 5 (a row per posting) is migrated to
** step 6 and its index rebuilt from the records at the next open; a
** server killed with -9 while it writes and merges leaves an index that
** another server reads exactly and the check finds right.
**
** Needs $A2M_TEST_POSTGRES; without it, it says so and passes nothing.
*/
#include "check.h"
#include "pg_servers.h"

/* Sorts v[0..n) and joins it with commas into out. */
static void sort_join(const char **v, size_t n, char *out, size_t size)
{
	for (size_t a = 1; a < n; a++)
		for (size_t b = a; b > 0 && strcmp(v[b - 1], v[b]) > 0; b--) {
			const char *t = v[b];
			v[b] = v[b - 1];
			v[b - 1] = t;
		}
	size_t used = 0;
	out[0] = '\0';
	for (size_t k = 0; k < n && used < size; k++)
		used += (size_t)snprintf(out + used, size - used, "%s%s", k ? "," : "", v[k]);
}

/* The ids recall of query returns through c (limit 1000), sorted, comma-joined. */
static void recall_ids(a2m_client *c, const char *query, char *out, size_t size)
{
	json_t *resp = req(c, "memory/recall", json_pack("{s:s,s:i}", "query", query, "limit", 1000));
	json_t *recs = json_object_get(result_of(resp), "records"), *r;
	static const char *ids[1000];
	size_t i, n = 0;
	json_array_foreach(recs, i, r) {
		if (n < 1000)
			ids[n++] = json_string_value(json_object_get(r, "id"));
	}
	sort_join(ids, n, out, size);
	if (!recs)
		snprintf(out, size, "(no answer)");
	json_decref(resp);
}

static void remember(a2m_client *c, json_t *record)
{
	json_t *resp = req(c, "memory/remember", json_pack("{s:[o]}", "records", record));
	CHECK(result_of(resp) != NULL);
	json_decref(resp);
}

static void forget(a2m_client *c, const char *id)
{
	json_t *resp = req(c, "memory/forget", json_pack("{s:[s]}", "ids", id));
	CHECK_INT(json_integer_value(json_object_get(result_of(resp), "forgotten")), 1);
	json_decref(resp);
}

/* The rows of term in d's index. */
static long long term_rows(const deployment *d, const char *term)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.a2m_postings_seg WHERE term = $1::bytea",
		 d->schema);
	return pg_test_int(sql, term);
}

/* `a2m check --postgres` of d: its exit status (the output on failure goes to stderr). */
static int check_deployment(const deployment *d)
{
	char cmd[1400];
	snprintf(cmd, sizeof cmd, "'%s' check --postgres \"%s\" -q >&2", a2m_bin, d->conninfo);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Sorted, comma-joined names w0..w(n-1) that are set in keep. */
static void expected_ids(const int *keep, int n, const char *prefix, char *out, size_t size)
{
	static char names[8192][32];
	static const char *v[8192];
	size_t k = 0;
	for (int i = 0; i < n && k < 8192; i++)
		if (keep[i]) {
			snprintf(names[k], sizeof names[k], "%s%d", prefix, i);
			v[k] = names[k];
			k++;
		}
	sort_join(v, k, out, size);
}

/* The rows of term in d's index that are sealed (not its tail). */
static long long sealed_rows(const deployment *d, const char *term)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.a2m_postings_seg WHERE term = $1::bytea"
		 " AND seg < 9223372036854775807", d->schema);
	return pg_test_int(sql, term);
}

/* A number of d's state row (column col). */
static long long state_num(const deployment *d, const char *col)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT %s FROM %s.a2m_state", col, d->schema);
	return pg_test_int(sql, NULL);
}

/* The batch rows of d's index waiting to be folded. */
static long long batch_rows(const deployment *d)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.a2m_batches", d->schema);
	return pg_test_int(sql, NULL);
}

/* Remembers record (keyed or not) with FILLERS records of its commit's that hold the word too. */
enum { FILLERS = 25 };
static void remember_with_fillers(a2m_client *c, int i, json_t *record)
{
	json_t *recs = json_array();
	json_array_append_new(recs, record);
	for (int k = 0; k < FILLERS; k++) {
		char id[32], text[64];
		snprintf(id, sizeof id, "f%dx%d", i, k);
		snprintf(text, sizeof text, "walrus filler %d of %d", k, i);
		json_array_append_new(recs, json_pack("{s:s,s:s,s:s}", "id", id, "content", text,
						      "tier", "semantic"));
	}
	json_t *resp = req(c, "memory/remember", json_pack("{s:o}", "records", recs));
	CHECK(result_of(resp) != NULL);
	json_decref(resp);
}

/*
** 90 commits through two servers in turn, each a record holding "walrus"
** under a key of its own, beside 25 fillers holding it too (so the term's
** tail grows past its bound and is sealed, again and again): every fifth
** also forgets an earlier record, every seventh rewrites an earlier one's
** content without the word (a key replacement: same record, same seq, new
** content). Every ninth writes the shared key "walrus/key" instead, whose
** record (w8, the first) keeps its id and takes the content, with the word
** or (every other time) without. Recall of "walrus" on both servers is
** exactly the records that still hold it: after 30 commits, fillers
** included, and at the end, once every filler is forgotten.
*/
static void test_a_term_written_by_many_commits_recalls_exactly_while_merged(void)
{
	deployment d;
	deployment_new(&d, "merge", NULL);
	a2m_client *s[2] = {serve(&d), serve(&d)};
	enum { N = 90 };
	int holds[N] = {0};
	char want[16384], got[16384], id[32], key[32], text[96];
	for (int i = 0; i < N; i++) {
		a2m_client *c = s[i % 2];
		snprintf(id, sizeof id, "w%d", i);
		if (i % 9 == 8) {
			int with = i % 18 == 8;
			snprintf(text, sizeof text, with ? "a keyed walrus note %d" : "a keyed seal %d", i);
			remember_with_fillers(c, i, json_pack("{s:s,s:s,s:s,s:s}", "id", id, "content",
							      text, "key", "walrus/key", "tier",
							      "semantic"));
			holds[8] = with;
		} else {
			snprintf(text, sizeof text, "the walrus number %d naps on rock%d", i, i);
			snprintf(key, sizeof key, "k/%d", i);
			remember_with_fillers(c, i, json_pack("{s:s,s:s,s:s,s:s}", "id", id, "content",
							      text, "key", key, "tier", "semantic"));
			holds[i] = 1;
		}
		int j = i - 3;
		if (i % 5 == 4 && holds[j] && j % 9 != 8) {
			snprintf(id, sizeof id, "w%d", j);
			forget(s[(i + 1) % 2], id);
			holds[j] = 0;
		}
		j = i - 5;
		if (i % 7 == 6 && holds[j] && j % 9 != 8) {
			snprintf(key, sizeof key, "k/%d", j);
			remember(s[(i + 1) % 2], json_pack("{s:s,s:s,s:s}", "content", "now only a seal",
							   "key", key, "tier", "semantic"));
			holds[j] = 0;
		}
		if (i == 29) {
			/* The records and every filler so far (30 * 25 of them). */
			const char *v[N * FILLERS + N];
			static char names[N * FILLERS][32];
			size_t n = 0;
			for (int w = 0; w <= i; w++)
				for (int k = 0; k < FILLERS; k++) {
					snprintf(names[n], sizeof names[n], "f%dx%d", w, k);
					v[n] = names[n];
					n++;
				}
			char tracked[2048];
			expected_ids(holds, i + 1, "w", tracked, sizeof tracked);
			for (char *t = strtok(tracked, ","); t; t = strtok(NULL, ","))
				v[n++] = t;
			sort_join(v, n, want, sizeof want);
			recall_ids(s[0], "walrus", got, sizeof got);
			CHECK_STR(got, want);
			recall_ids(s[1], "walrus", got, sizeof got);
			CHECK_STR(got, want);
		}
	}
	/* The fillers forgotten, 250 at a time, through both servers. */
	for (int i = 0; i < N; i += 10) {
		json_t *ids = json_array();
		for (int w = i; w < i + 10; w++)
			for (int k = 0; k < FILLERS; k++) {
				snprintf(id, sizeof id, "f%dx%d", w, k);
				json_array_append_new(ids, json_string(id));
			}
		json_t *resp = req(s[(i / 10) % 2], "memory/forget", json_pack("{s:o}", "ids", ids));
		CHECK_INT(json_integer_value(json_object_get(result_of(resp), "forgotten")),
			  10 * FILLERS);
		json_decref(resp);
	}
	expected_ids(holds, N, "w", want, sizeof want);
	recall_ids(s[0], "walrus", got, sizeof got);
	CHECK_STR(got, want);
	recall_ids(s[1], "walrus", got, sizeof got);
	CHECK_STR(got, want);
	recall_ids(s[1], "seal", got, sizeof got);
	CHECK(strstr(got, "w8") != NULL);  /* the last keyed write (i = 89) said "seal" */
	/* The term's tail was sealed as it grew, into a few rows. */
	CHECK(sealed_rows(&d, "walrus") >= 1);
	CHECK(term_rows(&d, "walrus") <= 12);
	/* A term written once, and folded (rock7: the eighth commit of ~130), is its tail. */
	CHECK_INT(term_rows(&d, "rock7"), 1);
	CHECK_INT(sealed_rows(&d, "rock7"), 0);
	/* The flushes' batch rows were folded as they came: few are left. */
	CHECK(state_num(&d, "batch_last") > 100);
	CHECK(batch_rows(&d) < 40);
	CHECK(state_num(&d, "fold_base") > 60);
	CHECK_INT(check_deployment(&d), 0);
	a2m_client_free(s[0]);
	a2m_client_free(s[1]);
	deployment_drop(&d);
}

/*
** A deployment at step 5 kept a row per posting in a2m_postings; step 6
** drops it and marks the index built by no analysis, so the first server
** of this build rebuilds it from the records.
*/
static void test_a_step_5_deployment_is_migrated_and_its_index_rebuilt(void)
{
	deployment d;
	deployment_new(&d, "step5", NULL);
	a2m_client *c = serve(&d);
	remember(c, json_pack("{s:s,s:s,s:s}", "id", "m1", "content", "the narwhal tusk",
			      "tier", "semantic"));
	remember(c, json_pack("{s:s,s:s,s:s}", "id", "m2", "content", "a narwhal pod at dawn",
			      "tier", "semantic"));
	a2m_client_free(c);
	char sql[1400];
	snprintf(sql, sizeof sql,
		 "SET search_path = %s;"
		 " DROP TABLE a2m_postings_seg;"
		 " CREATE TABLE a2m_postings (term bytea NOT NULL, seq bigint NOT NULL,"
		 "  tf integer NOT NULL, dl integer NOT NULL, PRIMARY KEY (term, seq) INCLUDE (tf, dl));"
		 " INSERT INTO a2m_postings VALUES ('narwhal', 1, 1, 3), ('stale', 2, 1, 4);"
		 " UPDATE a2m_state SET index_version = 'pg1 an older analysis';"
		 " ALTER TABLE a2m_state DROP COLUMN salience_max;"  /* step 9's */
		 " DROP TABLE a2m_batches;"  /* step 8's */
		 " ALTER TABLE a2m_state DROP COLUMN batch_last, DROP COLUMN fold_base,"
		 "  DROP COLUMN fold_horizon, DROP COLUMN fold_budget, DROP COLUMN fold_cursor;"
		 " ALTER TABLE a2m_state DROP COLUMN event_tail;"  /* step 7's */
		 " UPDATE a2m_schema_version SET version = 5",
		 d.schema);
	CHECK_INT(pg_test_exec(sql), 0);
	/* A read-only server refuses a deployment at another step than its own. */
	const char *ro = "--read-only";
	a2m_client *r = serve_args(d.conninfo, &ro, 1);
	json_t *resp = req(r, "memory/describe", NULL);
	CHECK(result_of(resp) == NULL);
	json_decref(resp);
	a2m_client_free(r);

	c = serve(&d);
	char got[256];
	recall_ids(c, "narwhal", got, sizeof got);
	CHECK_STR(got, "m1,m2");
	recall_ids(c, "stale", got, sizeof got);
	CHECK_STR(got, "");
	a2m_client_free(c);
	snprintf(sql, sizeof sql, "SELECT version FROM %s.a2m_schema_version", d.schema);
	CHECK_INT(pg_test_int(sql, NULL), 9);  /* steps 6 to 9 applied */
	snprintf(sql, sizeof sql, "SELECT count(*) FROM pg_tables WHERE schemaname = $1"
		 " AND tablename = 'a2m_postings'");
	CHECK_INT(pg_test_int(sql, d.schema), 0);
	CHECK_INT(term_rows(&d, "narwhal"), 1);
	CHECK_INT(check_deployment(&d), 0);
	deployment_drop(&d);
}

/* Remembers n records "<prefix><i>" (i from first) holding text, in one call. */
static void remember_many(a2m_client *c, const char *prefix, int first, int n, const char *text)
{
	json_t *recs = json_array();
	for (int i = first; i < first + n; i++) {
		char id[32], body[96];
		snprintf(id, sizeof id, "%s%d", prefix, i);
		snprintf(body, sizeof body, "%s %d", text, i);
		json_array_append_new(recs, json_pack("{s:s,s:s,s:s}", "id", id, "content", body,
						      "tier", "semantic"));
	}
	json_t *resp = req(c, "memory/remember", json_pack("{s:o}", "records", recs));
	CHECK(result_of(resp) != NULL);
	json_decref(resp);
}

/*
** A pass of the fold half done: the terms before its cursor are in their
** tails and still in the batch rows, the others in the batch rows only.
** 16 commits of 41 records, each with words of its own, make 16 batch rows
** of ~650 distinct terms, more than one step folds (512), so the 16th
** commit's step leaves the pass with a cursor: "aardvark" folded, "zebra"
** not. Both read exactly on the other server, then after a forget of one
** of each, which ends the pass.
*/
static void test_a_term_reads_exactly_in_the_middle_of_a_pass(void)
{
	deployment d;
	deployment_new(&d, "pass", NULL);
	a2m_client *s[2] = {serve(&d), serve(&d)};
	char want[4096], got[4096];
	int keep[16];
	for (int c = 0; c < 16; c++) {
		json_t *recs = json_array();
		char id[32], text[96];
		snprintf(id, sizeof id, "z%d", c);
		json_array_append_new(recs, json_pack("{s:s,s:s,s:s}", "id", id, "content",
						      "an aardvark beside a zebra", "tier", "semantic"));
		for (int k = 0; k < 40; k++) {
			snprintf(text, sizeof text, "wq%dv%d", c, k);
			json_array_append_new(recs, json_pack("{s:s,s:s}", "content", text, "tier",
							      "semantic"));
		}
		json_t *resp = req(s[0], "memory/remember", json_pack("{s:o}", "records", recs));
		CHECK(result_of(resp) != NULL);
		json_decref(resp);
		keep[c] = 1;
	}
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.a2m_state WHERE fold_cursor IS NOT NULL"
		 " AND fold_horizon > fold_base", d.schema);
	CHECK_INT(pg_test_int(sql, NULL), 1);  /* a pass under way */
	CHECK_INT(term_rows(&d, "aardvark"), 1);  /* folded: its tail */
	CHECK_INT(term_rows(&d, "zebra"), 0);     /* not yet: batch rows only */
	CHECK_INT(batch_rows(&d), 16);
	expected_ids(keep, 16, "z", want, sizeof want);
	recall_ids(s[1], "aardvark", got, sizeof got);
	CHECK_STR(got, want);
	recall_ids(s[1], "zebra", got, sizeof got);
	CHECK_STR(got, want);
	CHECK_INT(check_deployment(&d), 0);
	forget(s[0], "z3");
	keep[3] = 0;
	expected_ids(keep, 16, "z", want, sizeof want);
	recall_ids(s[1], "aardvark", got, sizeof got);
	CHECK_STR(got, want);
	recall_ids(s[1], "zebra", got, sizeof got);
	CHECK_STR(got, want);
	recall_ids(s[0], "zebra", got, sizeof got);
	CHECK_STR(got, want);
	/* The forget's step finished the pass: its 16 rows deleted, the forget's own left. */
	CHECK_INT(batch_rows(&d), 1);
	CHECK_INT(term_rows(&d, "zebra"), 1);
	CHECK_INT(state_num(&d, "fold_base"), state_num(&d, "fold_horizon"));
	CHECK_INT(check_deployment(&d), 0);
	a2m_client_free(s[0]);
	a2m_client_free(s[1]);
	deployment_drop(&d);
}

/*
** A forget of 5 812 records in one request is one transaction of ~64 000
** tombstones: more than one flush (50 000), and a fold step at the first,
** over the 16 rows of the remembers before it and its own. What is left
** recalls exactly, and the check finds the index right.
*/
static void test_a_long_transaction_folds_as_it_flushes(void)
{
	deployment d;
	deployment_new(&d, "long", NULL);
	a2m_client *c = serve(&d);
	for (int k = 0; k < 16; k++)
		remember_many(c, "x", k * 400, 400, "a lynx crossed the frozen river at dawn near"
			      " the old camp by the northern ridge");
	json_t *ids = json_array();
	int keep[6400], forgotten = 0;
	for (int i = 0; i < 6400; i++) {
		char id[32];
		keep[i] = i % 16 == 0 || i >= 6200;
		if (keep[i])
			continue;
		snprintf(id, sizeof id, "x%d", i);
		json_array_append_new(ids, json_string(id));
		forgotten++;
	}
	json_t *resp = req(c, "memory/forget", json_pack("{s:o}", "ids", ids));
	CHECK_INT(json_integer_value(json_object_get(result_of(resp), "forgotten")), forgotten);
	json_decref(resp);
	CHECK(state_num(&d, "batch_last") >= 18);  /* the forget flushed twice */
	CHECK(state_num(&d, "fold_base") + state_num(&d, "fold_horizon") > 0);
	char want[16384], got[16384];
	expected_ids(keep, 6400, "x", want, sizeof want);
	recall_ids(c, "lynx", got, sizeof got);
	CHECK_STR(got, want);
	a2m_client_free(c);
	CHECK_INT(check_deployment(&d), 0);
	deployment_drop(&d);
}

/*
** A deployment at step 7 kept every posting in a2m_postings_seg, its sealed
** rows numbered (commit version << 20 | flush). Step 8 gives the batch rows
** ids above them, so the rows the fold seals later are newer than those:
** records of the old rows forgotten after the migration stay forgotten, and
** the check finds the index right. Step 9 seeds the bound on salience
** from the records.
*/
static void test_a_step_7_deployment_keeps_its_index_and_folds_after_it(void)
{
	deployment d;
	deployment_new(&d, "step7", NULL);
	a2m_client *c = serve(&d);
	for (int k = 0; k < 3; k++)
		remember_many(c, "n", k * 200, 200, "a narwhal sighting");
	a2m_client_free(c);
	/* Rebuilt at the next open: every posting in the terms' rows, sealed past their bound. */
	char sql[1400];
	snprintf(sql, sizeof sql, "UPDATE %s.a2m_state SET index_version = NULL", d.schema);
	CHECK_INT(pg_test_exec(sql), 0);
	c = serve(&d);
	a2m_client_free(c);
	CHECK(sealed_rows(&d, "narwhal") >= 1);
	CHECK_INT(batch_rows(&d), 0);
	/* Step 7's numbering of the sealed rows, and its state row. */
	snprintf(sql, sizeof sql,
		 "SET search_path = %s;"
		 " UPDATE a2m_postings_seg SET seg = (4000::int8 << 20) + seg"
		 "  WHERE seg < 9223372036854775807;"
		 " UPDATE a2m_records SET salience = 42 WHERE id = 'n7';"  /* as a step-7 server wrote */
		 " ALTER TABLE a2m_state DROP COLUMN salience_max;"  /* step 9's */
		 " DROP TABLE a2m_batches;"
		 " ALTER TABLE a2m_state DROP COLUMN batch_last, DROP COLUMN fold_base,"
		 "  DROP COLUMN fold_horizon, DROP COLUMN fold_budget, DROP COLUMN fold_cursor;"
		 " UPDATE a2m_schema_version SET version = 7",
		 d.schema);
	CHECK_INT(pg_test_exec(sql), 0);
	snprintf(sql, sizeof sql, "SELECT max(seg) FROM %s.a2m_postings_seg"
		 " WHERE seg < 9223372036854775807", d.schema);
	long long old_max = pg_test_int(sql, NULL);
	CHECK(old_max > (4000LL << 20));
	c = serve(&d);
	char got[16384], want[16384];
	recall_ids(c, "sighting", got, sizeof got);
	CHECK(strlen(got) > 0);
	CHECK_INT(state_num(&d, "batch_last"), old_max);
	CHECK_INT(state_num(&d, "salience_max"), 42);  /* step 9 seeded from the records */
	/* Half the old records forgotten, new ones written, over enough commits to fold. */
	int keep[1200] = {0};
	for (int i = 0; i < 600; i++)
		keep[i] = i % 2;
	for (int k = 0; k < 40; k++) {
		json_t *ids = json_array();
		for (int i = k * 15; i < k * 15 + 15; i++) {
			char id[32];
			if (i % 2)
				continue;
			snprintf(id, sizeof id, "n%d", i);
			json_array_append_new(ids, json_string(id));
		}
		json_decref(req(c, "memory/forget", json_pack("{s:o}", "ids", ids)));
		remember_many(c, "n", 600 + k * 15, 15, "a narwhal sighting");
		for (int i = 600 + k * 15; i < 615 + k * 15; i++)
			keep[i] = 1;
	}
	expected_ids(keep, 1200, "n", want, sizeof want);
	recall_ids(c, "narwhal", got, sizeof got);
	CHECK_STR(got, want);
	/* The fold sealed rows above the old ones. */
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.a2m_postings_seg WHERE term = $1::bytea"
		 " AND seg > %lld AND seg < 9223372036854775807", d.schema, old_max);
	CHECK(pg_test_int(sql, "narwhal") >= 1);
	a2m_client_free(c);
	CHECK_INT(check_deployment(&d), 0);
	deployment_drop(&d);
}

/*
** A writer killed with -9 mid-stream, its merges included: its open
** transaction dies with its connection, and what is committed reads
** exactly through another server; the check finds the index right.
*/
static void test_a_server_killed_while_merging_leaves_a_readable_index(void)
{
	deployment d;
	deployment_new(&d, "kill", NULL);
	prepare(&d);
	char cmd[2000];
	/* A writer of its own, fed remembers of one term until it is killed (the feed then stops). */
	snprintf(cmd, sizeof cmd,
		 "i=0; while [ $i -lt 100000 ]; do"
		 " printf '{\"jsonrpc\":\"2.0\",\"id\":%%d,\"method\":\"memory/remember\","
		 "\"params\":{\"records\":[{\"id\":\"k%%d\",\"content\":\"an otter and otter %%d\","
		 "\"tier\":\"semantic\"},{\"content\":\"a second otter\",\"tier\":\"semantic\"}]}}\\n'"
		 " $i $i $i 2>/dev/null || break; i=$((i+1)); done |"
		 " '%s' serve --postgres \"%s\" >/dev/null 2>&1 &"
		 " pid=$!; sleep 1.5; kill -9 $pid; wait 2>/dev/null; exit 0",
		 a2m_bin, d.conninfo);
	CHECK_INT(system(cmd), 0);
	a2m_client *c = serve(&d);
	json_t *resp = req(c, "memory/describe", NULL);
	long long stored = -1;
	json_t *t;
	size_t i;
	json_array_foreach(json_object_get(result_of(resp), "tiers"), i, t) {
		if (strcmp(json_string_value(json_object_get(t, "name")), "semantic") == 0)
			stored = json_integer_value(json_object_get(t, "count"));
	}
	json_decref(resp);
	CHECK(stored >= 0);
	resp = req(c, "memory/recall", json_pack("{s:s,s:i}", "query", "otter", "limit", 1000));
	long long found = (long long)json_array_size(json_object_get(result_of(resp), "records"));
	json_decref(resp);
	/* Every stored record holds the word: recall finds as many as it may return. */
	CHECK(stored > 0);
	CHECK_INT(found, stored < 1000 ? stored : 1000);
	CHECK_INT(check_deployment(&d), 0);
	a2m_client_free(c);
	deployment_drop(&d);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (!servers_init(argv[0]))
		return 0;
	static const test_case tests[] = {
		TEST(test_a_term_written_by_many_commits_recalls_exactly_while_merged),
		TEST(test_a_term_reads_exactly_in_the_middle_of_a_pass),
		TEST(test_a_long_transaction_folds_as_it_flushes),
		TEST(test_a_step_5_deployment_is_migrated_and_its_index_rebuilt),
		TEST(test_a_step_7_deployment_keeps_its_index_and_folds_after_it),
		TEST(test_a_server_killed_while_merging_leaves_a_readable_index),
		{NULL, NULL}
	};
	return run_tests(tests);
}
