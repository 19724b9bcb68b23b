/*
** test_where_ops.c — x-where's operators (docs/PROTOCOL.md, Extensions),
** through the protocol on every engine (PostgreSQL when $A2M_TEST_POSTGRES
** names a server, pg_helper.h): a property test comparing what
** memory/timeline and memory/recall return for random `where` clauses with
** a brute-force evaluation, written here from the documentation and not
** from src/stack/where.c, over random records created at distinct times
** (the tests' clock); and the refusals (an unknown operator, any operator
** without the capability).
*/
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "pg_helper.h"
#include "util/clock.h"

#define N_RECORDS 80
#define N_CLAUSES 1000
/* The records are written a second apart from here (2026-01-01T00:00:00Z). */
#define T0 1767225600000LL

static a2m *h;
static const char *engine;
static char db_path[64];

/* What the test wrote, to judge by hand. */
typedef struct rec {
	char    id[64];
	int64_t created;
	json_t *wire;   /* the record as written: role, key, metadata */
} rec;

static rec recs[N_RECORDS];
static uint64_t seed = 0x9E3779B97F4A7C15ULL;

static uint64_t rnd(uint64_t n)
{
	return check_rand(&seed) % n;
}

static const char *const roles[] = {"user", "assistant", NULL};
static const char *const keys[] = {"app/a", "app/b", "app/ab", "other/a", NULL, NULL};
static const char *const strs[] = {"red", "green", "blue", "2026-01-01T00:00:30Z"};

static char *ts(int64_t ms)
{
	static char buf[4][A2M_TIMESTAMP_LEN];
	static int at;
	at = (at + 1) % 4;
	return a2m_clock_format(ms, buf[at]);
}

/* One random record: role, key, metadata n (int, real, null or absent), s, t, b. */
static json_t *random_record(int i)
{
	json_t *r = json_pack("{ss}", "content", "apple banana");
	json_object_set_new(r, "content", json_sprintf("apple banana %s", i % 3 ? "cherry" : "plum"));
	const char *role = roles[rnd(3)];
	if (role)
		json_object_set_new(r, "role", json_string(role));
	const char *key = keys[rnd(6)];
	if (key)
		json_object_set_new(r, "key", json_sprintf("%s/%d", key, i));
	json_t *m = json_object();
	switch (rnd(5)) {
	case 0: json_object_set_new(m, "n", json_integer((json_int_t)rnd(10))); break;
	case 1: json_object_set_new(m, "n", json_real((double)rnd(20) / 2.0)); break;
	case 2: json_object_set_new(m, "n", json_null()); break;
	case 3: json_object_set_new(m, "n", json_string("5")); break;
	default: break;
	}
	if (rnd(4))
		json_object_set_new(m, "s", json_string(strs[rnd(4)]));
	if (rnd(3))
		json_object_set_new(m, "t", json_string(ts(T0 + (int64_t)rnd(N_RECORDS) * 1000)));
	if (rnd(2))
		json_object_set_new(m, "b", json_boolean(rnd(2)));
	json_object_set_new(r, "metadata", m);
	return r;
}

/* ---- the brute force --------------------------------------------------- */

/* The value a where key sees on r: a field (role, key, created_at), else
** metadata; json null when absent (a new reference). */
static json_t *value_of(const rec *r, const char *k)
{
	if (strcmp(k, "created_at") == 0)
		return json_string(ts(r->created));
	if (strcmp(k, "role") == 0 || strcmp(k, "key") == 0) {
		json_t *v = json_object_get(r->wire, k);
		return v ? json_incref(v) : json_null();
	}
	json_t *v = json_object_get(json_object_get(r->wire, "metadata"), k);
	return v ? json_incref(v) : json_null();
}

static int equal(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	return json_equal((json_t *)a, (json_t *)b);
}

/* -1/0/1, or 2 when a number meets a non-number or a time a non-time. */
static int cmp(const json_t *a, const json_t *op)
{
	if (json_is_number(op)) {
		if (!json_is_number(a))
			return 2;
		double x = json_number_value(a), y = json_number_value(op);
		return x < y ? -1 : x > y;
	}
	int64_t x, y;
	if (!json_is_string(a) || a2m_clock_parse(json_string_value(a), &x) ||
	    a2m_clock_parse(json_string_value(op), &y))
		return 2;
	return x < y ? -1 : x > y;
}

static int judge_ops(const json_t *a, const json_t *ops)
{
	const char *name;
	json_t *v;
	json_object_foreach((json_t *)ops, name, v) {
		int ok = 1, in = 0;
		size_t i;
		json_t *item;
		if (!strcmp(name, "$eq"))
			ok = equal(a, v);
		else if (!strcmp(name, "$ne"))
			ok = !equal(a, v);
		else if (!strcmp(name, "$in") || !strcmp(name, "$nin")) {
			json_array_foreach(v, i, item)
				in |= equal(a, item);
			ok = name[1] == 'i' ? in : !in;
		} else if (!strcmp(name, "$gt"))
			ok = cmp(a, v) == 1;
		else if (!strcmp(name, "$gte"))
			ok = cmp(a, v) == 1 || cmp(a, v) == 0;
		else if (!strcmp(name, "$lt"))
			ok = cmp(a, v) == -1;
		else if (!strcmp(name, "$lte"))
			ok = cmp(a, v) == -1 || cmp(a, v) == 0;
		else if (!strcmp(name, "$exists"))
			ok = json_is_null(a) != json_is_true(v);
		else if (!strcmp(name, "$prefix"))
			ok = json_is_string(a) && !strncmp(json_string_value(a), json_string_value(v),
							   strlen(json_string_value(v)));
		else if (!strcmp(name, "$not"))
			ok = !judge_ops(a, v);
		if (!ok)
			return 0;
	}
	return 1;
}

static int judge(const rec *r, const json_t *where)
{
	const char *k;
	json_t *want;
	json_object_foreach((json_t *)where, k, want) {
		json_t *a = value_of(r, k);
		int ok;
		if (json_is_array(want)) {
			size_t i;
			json_t *item;
			ok = 0;
			json_array_foreach(want, i, item)
				ok |= equal(a, item);
		} else if (json_is_object(want)) {
			ok = judge_ops(a, want);
		} else {
			ok = equal(a, want);
		}
		json_decref(a);
		if (!ok)
			return 0;
	}
	return 1;
}

/* ---- random clauses ----------------------------------------------------- */

/* A random scalar a where may compare with. */
static json_t *random_scalar(void)
{
	switch (rnd(7)) {
	case 0: return json_integer((json_int_t)rnd(10));
	case 1: return json_real((double)rnd(20) / 2.0);
	case 2: return json_string(strs[rnd(4)]);
	case 3: return json_string(roles[rnd(2)]);
	case 4: return json_null();
	case 5: return json_boolean(rnd(2));
	default: return json_string(ts(T0 + (int64_t)rnd(N_RECORDS + 2) * 1000 - 1000));
	}
}

static json_t *random_operand(int range)
{
	/* Drawn from the values the records hold, so equal ends come up. */
	if (range)
		switch (rnd(3)) {
		case 0: return json_integer((json_int_t)rnd(10));
		case 1: return json_real((double)rnd(20) / 2.0);
		default: return json_string(ts(T0 + (int64_t)rnd(N_RECORDS + 2) * 1000 - 1000 +
					       (int64_t)rnd(3) - 1));
		}
	return random_scalar();
}

static json_t *random_ops(int depth)
{
	static const char *const names[] = {"$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt",
					    "$lte", "$exists", "$prefix", "$not"};
	json_t *o = json_object();
	size_t n = 1 + rnd(2);
	for (size_t i = 0; i < n; i++) {
		const char *name = names[rnd(depth ? 10 : 11)];
		json_t *v;
		if (!strcmp(name, "$in") || !strcmp(name, "$nin")) {
			v = json_array();
			for (size_t k = rnd(4); k > 0; k--)
				json_array_append_new(v, random_scalar());
		} else if (!strcmp(name, "$exists")) {
			v = json_boolean(rnd(2));
		} else if (!strcmp(name, "$prefix")) {
			static const char *const p[] = {"app/", "app/a", "other", "", "re", "2026-01"};
			v = json_string(p[rnd(6)]);
		} else if (!strcmp(name, "$not")) {
			v = random_ops(depth + 1);
		} else {
			v = random_operand(name[1] == 'g' || name[1] == 'l');
		}
		json_object_set_new(o, name, v);
	}
	return o;
}

static json_t *random_where(void)
{
	static const char *const fields[] = {"role", "key", "created_at", "n", "s", "t", "b",
					     "absent", "n", "t", "created_at", "key"};
	json_t *w = json_object();
	size_t n = 1 + rnd(3);
	for (size_t i = 0; i < n; i++) {
		const char *f = fields[rnd(12)];
		json_t *v;
		switch (rnd(5)) {
		case 0: v = random_scalar(); break;
		case 1:
			v = json_array();
			for (size_t k = 1 + rnd(3); k > 0; k--)
				json_array_append_new(v, random_scalar());
			break;
		default: v = random_ops(0); break;
		}
		json_object_set_new(w, f, v);
	}
	return w;
}

/* ---- the tests ---------------------------------------------------------- */

static void write_records(void)
{
	for (int i = 0; i < N_RECORDS; i++) {
		a2m_clock_set_for_tests(T0 + (int64_t)i * 1000);
		recs[i].created = T0 + (int64_t)i * 1000;
		recs[i].wire = random_record(i);
		json_t *res = check_result_of(h, "memory/remember",
			json_pack("{s[O]}", "records", recs[i].wire));
		snprintf(recs[i].id, sizeof recs[i].id, "%s",
			 json_string_value(json_array_get(json_object_get(res, "ids"), 0)));
		json_decref(res);
	}
	a2m_clock_set_for_tests(T0 + (int64_t)N_RECORDS * 1000);
}

/* Whether the ids of arr (records) are exactly those recs judge matches, in order. */
static int same_as_judged(const json_t *arr, const json_t *where, int ordered)
{
	size_t at = 0, want = 0;
	for (int i = 0; i < N_RECORDS; i++) {
		if (!judge(&recs[i], where))
			continue;
		want++;
		if (!ordered)
			continue;
		const char *id = json_string_value(json_object_get(json_array_get(arr, at++), "id"));
		if (!id || strcmp(id, recs[i].id) != 0)
			return 0;
	}
	return want == json_array_size(arr);
}

/* Every clause's timeline is the brute force's answer, oldest first. */
static void test_timeline_matches_brute_force(void)
{
	int matched_some = 0, bad = 0;
	for (int c = 0; c < N_CLAUSES; c++) {
		json_t *where = random_where();
		json_t *resp = check_call_json(h, "memory/timeline",
					       json_pack("{sO}", "where", where));
		json_t *arr = json_object_get(json_object_get(resp, "result"), "records");
		if (!arr || !same_as_judged(arr, where, 1)) {
			if (bad++ < 5) {
				char *w = json_dumps(where, JSON_COMPACT);
				fprintf(stderr, "  where %s: %zu records, error %d\n", w,
					json_array_size(arr), check_error_code(resp));
				free(w);
			}
		}
		matched_some += json_array_size(arr) > 0;
		json_decref(resp);
		json_decref(where);
	}
	CHECK_INT(bad, 0);
	/* The clauses were not all empty answers. */
	CHECK(matched_some > N_CLAUSES / 10);
}

/*
** recall filters before it keeps the best limit: for each clause, recall
** with where and limit 3 is the first 3 of recall without where (every
** record matches the query) filtered by the brute force.
*/
static void test_recall_filters_before_top_k(void)
{
	json_t *all = check_result_of(h, "memory/recall",
		json_pack("{ss si}", "query", "apple banana cherry", "limit", N_RECORDS));
	json_t *ranked = json_object_get(all, "records");
	CHECK_INT(json_array_size(ranked), N_RECORDS);
	int bad = 0;
	for (int c = 0; c < N_CLAUSES / 4; c++) {
		json_t *where = random_where();
		json_t *res = check_result_of(h, "memory/recall",
			json_pack("{ss si sO}", "query", "apple banana cherry", "limit", 3, "where", where));
		json_t *got = json_object_get(res, "records");
		size_t k = 0;
		for (size_t i = 0; i < json_array_size(ranked) && k < 3; i++) {
			const char *id = json_string_value(json_object_get(json_array_get(ranked, i), "id"));
			const rec *r = NULL;
			for (int j = 0; j < N_RECORDS; j++)
				if (!strcmp(recs[j].id, id))
					r = &recs[j];
			if (!r || !judge(r, where))
				continue;
			const char *g = json_string_value(json_object_get(json_array_get(got, k), "id"));
			if (!g || strcmp(g, id) != 0)
				bad++;
			k++;
		}
		if (k != json_array_size(got))
			bad++;
		json_decref(res);
		json_decref(where);
	}
	json_decref(all);
	CHECK_INT(bad, 0);
}

static void test_unknown_operator_refused(void)
{
	const char *bad[] = {
		"{\"n\":{\"$foo\":1}}", "{\"n\":{\"gt\":1}}", "{\"n\":{}}", "{\"n\":{\"$gt\":\"x\"}}",
		"{\"n\":{\"$in\":3}}", "{\"n\":{\"$exists\":1}}", "{\"key\":{\"$prefix\":3}}",
		"{\"n\":{\"$not\":{\"$bar\":1}}}", "{\"n\":{\"$in\":[{\"a\":1}]}}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		json_t *r = check_call(h, "memory/timeline", "{\"where\":%s}", bad[i]);
		CHECK_INT(check_error_code(r), A2M_INVALID_PARAMS);
		json_decref(r);
		r = check_call(h, "memory/forget", "{\"where\":%s}", bad[i]);
		CHECK_INT(check_error_code(r), A2M_INVALID_PARAMS);
		json_decref(r);
	}
	/* Nothing was forgotten by the refused calls. */
	json_t *r = check_result_of(h, "memory/timeline", json_object());
	CHECK_INT(json_array_size(json_object_get(r, "records")), N_RECORDS);
	json_decref(r);
}

/* An $in longer than max_where_values is over the limit, as an any-of list is. */
static void test_operator_lists_are_limited(void)
{
	json_t *list = json_array();
	for (int i = 0; i < 1001; i++)
		json_array_append_new(list, json_integer(i));
	json_t *r = check_call_json(h, "memory/timeline",
		json_pack("{s{s{so}}}", "where", "n", "$nin", list));
	CHECK_INT(check_error_code(r), A2M_QUOTA_EXCEEDED);
	json_decref(r);
}

/* describe names the extension and its operators. */
static void test_describe_lists_operators(void)
{
	json_t *d = check_result_of(h, "memory/describe", json_object());
	json_t *caps = json_object_get(d, "capabilities");
	int found = 0;
	for (size_t i = 0; i < json_array_size(caps); i++)
		found |= !strcmp(json_string_value(json_array_get(caps, i)), "x-where");
	CHECK(found);
	json_t *ops = json_object_get(json_object_get(d, "x-where"), "operators");
	CHECK_INT(json_array_size(ops), 11);
	json_decref(d);
}

static const test_case tests[] = {
	TEST(test_timeline_matches_brute_force),
	TEST(test_recall_filters_before_top_k),
	TEST(test_unknown_operator_refused),
	TEST(test_operator_lists_are_limited),
	TEST(test_describe_lists_operators),
	{NULL, NULL}
};

/* Without x-where, an operator is refused, never read as an equality. */
static int without_the_capability(void)
{
	a2m *plain = check_open("engine", "memory", "capabilities", "core,keys", NULL);
	if (!plain)
		return 1;
	json_decref(check_call(plain, "memory/remember", "{\"records\":[{\"content\":\"x\",\"metadata\":{\"n\":{\"$gt\":1}}}]}"));
	json_t *r = check_call(plain, "memory/timeline", "{\"where\":{\"n\":{\"$gt\":1}}}");
	int failed = check_error_code(r) != A2M_INVALID_PARAMS;
	json_decref(r);
	json_t *d = check_call(plain, "memory/describe", "{}");
	failed |= json_object_get(json_object_get(d, "result"), "x-where") != NULL;
	json_decref(d);
	a2m_close(plain);
	printf("%s without x-where: operators refused\n%d passed, %d failed\n",
	       failed ? "FAIL" : "ok  ", !failed, failed);
	return failed;
}

int main(void)
{
	int status = 0;
	/* One tier without decay, capacity or promotion: recall's order is then
	** the relevance alone, newest first among equals, call after call. */
	char cfg[64];
	snprintf(cfg, sizeof cfg, "/tmp/a2m-test-where-%d.json", (int)getpid());
	FILE *f = fopen(cfg, "w");
	if (!f || fputs("{\"tiers\":[{\"name\":\"main\",\"kind\":\"semantic\"}]}", f) < 0 ||
	    fclose(f) != 0)
		return 1;
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-where-%d.db", (int)getpid());
	char pg_schema[64], pg_conninfo[512];
	int engines = pg_test_engines("a2m_tw", pg_schema, sizeof pg_schema, pg_conninfo,
				      sizeof pg_conninfo);
	for (int e = 0; e < engines; e++) {
		engine = pg_test_engine_names[e];
		check_remove_db(db_path);
		seed = 0x9E3779B97F4A7C15ULL;
		if (!(h = check_open("engine", engine, "path", db_path, "config_file", cfg,
				     "postgres", e == 2 ? pg_conninfo : NULL, NULL)))
			return 1;
		printf("# engine %s\n", engine);
		write_records();
		status |= run_tests(tests);
		a2m_close(h);
		for (int i = 0; i < N_RECORDS; i++)
			json_decref(recs[i].wire);
		a2m_clock_set_for_tests(0);
	}
	check_remove_db(db_path);
	pg_test_schema_drop(pg_schema);
	unlink(cfg);
	status |= without_the_capability();
	return status;
}
