/*
** test_limits.c — every dimension of a request has a limit (docs/PROTOCOL.md,
** Limits): describe reports it, and a request at the limit is served while
** one past it is QUOTA_EXCEEDED with data {"limit": NAME, "max": N}, before
** anything is written. Small limits are set by option, so each edge is
** cheap to reach; every engine.
*/
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "pg_helper.h"

static a2m *h;

/* The limits this file opens with. */
#define DEPTH      6
#define STRING     64
#define METADATA   64
#define IDS        5
#define WHERE_F    3
#define WHERE_V    4
#define DIMS       8
#define CONTENT    16
#define RECORDS    4

/* Whether r is QUOTA_EXCEEDED naming limit and its max (and prints why not). */
static int exceeded(json_t *r, const char *limit, long long max)
{
	json_t *data = json_object_get(json_object_get(r, "error"), "data");
	int ok = check_error_code(r) == A2M_QUOTA_EXCEEDED &&
		 json_is_string(json_object_get(data, "limit")) &&
		 strcmp(json_string_value(json_object_get(data, "limit")), limit) == 0 &&
		 json_integer_value(json_object_get(data, "max")) == max;
	if (!ok) {
		char *s = json_dumps(r, JSON_COMPACT);
		fprintf(stderr, "  want %s %lld exceeded, got %s\n", limit, max, s ? s : "nothing");
		free(s);
	}
	json_decref(r);
	return ok;
}

/* Whether r is a success (and prints the error when not). */
static int served(json_t *r)
{
	int ok = json_object_get(r, "result") != NULL;
	if (!ok) {
		char *s = json_dumps(r, JSON_COMPACT);
		fprintf(stderr, "  want a result, got %s\n", s ? s : "nothing");
		free(s);
	}
	json_decref(r);
	return ok;
}

/* n characters of 'x' (n < 4096), in a static buffer. */
static const char *xs(size_t n)
{
	static char b[4096];
	memset(b, 'x', n);
	b[n] = '\0';
	return b;
}

/* How many records hold marker in their content. */
static long long count_marked(const char *marker)
{
	json_t *r = check_call(h, "memory/timeline", "{}");
	json_t *recs = json_object_get(json_object_get(r, "result"), "records");
	long long n = 0;
	for (size_t i = 0; i < json_array_size(recs); i++)
		if (strstr(json_string_value(json_object_get(json_array_get(recs, i), "content")),
			   marker))
			n++;
	json_decref(r);
	return n;
}

static void test_describe_reports_every_limit(void)
{
	json_t *r = check_call(h, "memory/describe", "{}");
	json_t *l = json_object_get(json_object_get(r, "result"), "limits");
	static const struct { const char *name; long long max; } want[] = {
		{"max_records_per_call", RECORDS}, {"max_content_length", CONTENT},
		{"max_recall_limit", 50}, {"max_depth", DEPTH}, {"max_string_bytes", STRING},
		{"max_metadata_bytes", METADATA}, {"max_ids_per_call", IDS},
		{"max_where_fields", WHERE_F}, {"max_where_values", WHERE_V},
		{"max_dimensions", DIMS}};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		CHECK(json_is_integer(json_object_get(l, want[i].name)));
		CHECK_INT(json_integer_value(json_object_get(l, want[i].name)), want[i].max);
	}
	json_decref(r);
}

/* params is depth 1, records 2, a record 3, metadata 4, and so on. */
static void test_depth_at_and_past_the_limit(void)
{
	CHECK(served(check_call(h, "memory/remember",
				"{\"records\":[{\"content\":\"deep-ok\",\"metadata\":{\"a\":{\"b\":{\"c\":1}}}}]}")));
	CHECK(exceeded(check_call(h, "memory/remember",
				  "{\"records\":[{\"content\":\"deep-no\",\"metadata\":{\"a\":{\"b\":{\"c\":[1]}}}}]}"),
		       "max_depth", DEPTH));
	CHECK_INT(count_marked("deep-no"), 0);
	/* Any method, any member: a where value nested past the limit too. */
	CHECK(exceeded(check_call(h, "memory/recall", "{\"x\":[[[[[[1]]]]]]}"), "max_depth", DEPTH));
	CHECK(served(check_call(h, "memory/recall", "{\"x\":[[[[1]]]]}")));
}

static void test_strings_at_and_past_the_limit(void)
{
	CHECK(served(check_call(h, "memory/remember",
				"{\"records\":[{\"content\":\"str-ok\",\"key\":\"%s\",\"role\":\"%s\"}]}",
				xs(STRING), xs(STRING))));
	CHECK(exceeded(check_call(h, "memory/remember",
				  "{\"records\":[{\"content\":\"str-no\",\"group\":\"%s\"}]}", xs(STRING + 1)),
		       "max_string_bytes", STRING));
	CHECK_INT(count_marked("str-no"), 0);
	/* A string param of the request itself. */
	CHECK(served(check_call(h, "memory/timeline", "{\"key_prefix\":\"%s\"}", xs(STRING))));
	CHECK(exceeded(check_call(h, "memory/timeline", "{\"key_prefix\":\"%s\"}", xs(STRING + 1)),
		       "max_string_bytes", STRING));
	/* A query is text, held to the content limit (in characters). */
	CHECK(served(check_call(h, "memory/recall", "{\"query\":\"%s\"}", xs(CONTENT))));
	CHECK(exceeded(check_call(h, "memory/recall", "{\"query\":\"%s\"}", xs(CONTENT + 1)),
		       "max_content_length", CONTENT));
	/* Characters, not bytes: 16 two-byte characters are within it. */
	CHECK(served(check_call(h, "memory/recall",
				"{\"query\":\"\xc3\xa0\xc3\xa0\xc3\xa0\xc3\xa0\xc3\xa0\xc3\xa0\xc3\xa0\xc3\xa0"
				"\xc3\xa0\xc3\xa0\xc3\xa0\xc3\xa0\xc3\xa0\xc3\xa0\xc3\xa0\xc3\xa0\"}")));
}

static void test_content_and_records_at_and_past_the_limit(void)
{
	CHECK(served(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"%s\"}]}",
				xs(CONTENT))));
	CHECK(exceeded(check_call(h, "memory/remember", "{\"records\":[{\"content\":\"%s\"}]}",
				  xs(CONTENT + 1)), "max_content_length", CONTENT));
	CHECK(served(check_call(h, "memory/remember",
				"{\"records\":[{\"content\":\"rec-a\"},{\"content\":\"rec-a\"},"
				"{\"content\":\"rec-a\"},{\"content\":\"rec-a\"}]}")));
	CHECK(exceeded(check_call(h, "memory/remember",
				  "{\"records\":[{\"content\":\"rec-b\"},{\"content\":\"rec-b\"},"
				  "{\"content\":\"rec-b\"},{\"content\":\"rec-b\"},{\"content\":\"rec-b\"}]}"),
		       "max_records_per_call", RECORDS));
	CHECK_INT(count_marked("rec-b"), 0);
}

/* {"k":"..."} is 8 bytes of JSON around the value. */
static void test_metadata_at_and_past_the_limit(void)
{
	CHECK(served(check_call(h, "memory/remember",
				"{\"records\":[{\"content\":\"meta-ok\",\"metadata\":{\"k\":\"%s\"}}]}",
				xs(METADATA - 8))));
	CHECK(exceeded(check_call(h, "memory/remember",
				  "{\"records\":[{\"content\":\"meta-no\",\"metadata\":{\"k\":\"%s\"}}]}",
				  xs(METADATA - 7)), "max_metadata_bytes", METADATA));
	CHECK_INT(count_marked("meta-no"), 0);
}

static void test_ids_at_and_past_the_limit(void)
{
	CHECK(served(check_call(h, "memory/forget", "{\"ids\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}")));
	CHECK(exceeded(check_call(h, "memory/forget", "{\"ids\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]}"),
		       "max_ids_per_call", IDS));
	CHECK(exceeded(check_call(h, "memory/reinforce", "{\"ids\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]}"),
		       "max_ids_per_call", IDS));
	CHECK(exceeded(check_call(h, "memory/promote",
				  "{\"ids\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"],\"tier\":\"semantic\"}"),
		       "max_ids_per_call", IDS));
}

static void test_where_at_and_past_the_limits(void)
{
	CHECK(served(check_call(h, "memory/recall", "{\"where\":{\"a\":1,\"b\":2,\"c\":[1,2,3,4]}}")));
	CHECK(exceeded(check_call(h, "memory/recall", "{\"where\":{\"a\":1,\"b\":2,\"c\":3,\"d\":4}}"),
		       "max_where_fields", WHERE_F));
	CHECK(exceeded(check_call(h, "memory/timeline", "{\"where\":{\"c\":[1,2,3,4,5]}}"),
		       "max_where_values", WHERE_V));
	CHECK(exceeded(check_call(h, "memory/forget", "{\"where\":{\"c\":[1,2,3,4,5]}}"),
		       "max_where_values", WHERE_V));
}

static void test_vector_width_at_and_past_the_limit(void)
{
	CHECK(served(check_call(h, "memory/remember",
				"{\"records\":[{\"content\":\"vec-ok\",\"embedding\":[1,0,0,0,0,0,0,1]}]}")));
	CHECK(exceeded(check_call(h, "memory/remember",
				  "{\"records\":[{\"content\":\"vec-no\",\"embedding\":[1,0,0,0,0,0,0,0,1]}]}"),
		       "max_dimensions", DIMS));
	CHECK(served(check_call(h, "memory/recall", "{\"embedding\":[1,0,0,0,0,0,0,1]}")));
	CHECK(exceeded(check_call(h, "memory/recall", "{\"embedding\":[1,0,0,0,0,0,0,0,1]}"),
		       "max_dimensions", DIMS));
}

/* A read-only server refuses every write with READ_ONLY first (§2.1): a
** write it would refuse anyway must not get another answer by its size. */
static void test_read_only_refuses_before_the_limits(const char *engine, const char *path,
						    const char *postgres)
{
	a2m *ro = check_open("engine", engine, "path", path, "read_only", "1",
			     "max_metadata_bytes", "64", "postgres", postgres, NULL);
	CHECK(ro != NULL);
	if (!ro)
		return;
	json_t *r = check_call(ro, "memory/remember",
			       "{\"records\":[{\"content\":\"x\",\"metadata\":{\"k\":\"%s\"}}]}",
			       xs(200));
	CHECK_INT(check_error_code(r), A2M_READ_ONLY);
	json_decref(r);
	a2m_close(ro);
}

/* The limits are options like any other: the file sets them, the bounds hold. */
static void test_limits_from_the_file_and_their_bounds(void)
{
	char path[] = "/tmp/a2m-test-limits-conf-XXXXXX";
	int fd = mkstemp(path);
	static const char conf[] = "{\"limits\":{\"max_depth\":9,\"max_dimensions\":3}}";
	CHECK(fd >= 0 && write(fd, conf, sizeof conf - 1) == (ssize_t)(sizeof conf - 1));
	close(fd);
	a2m *f = check_open("engine", "memory", "config_file", path, NULL);
	CHECK(f != NULL);
	if (f) {
		json_t *r = check_call(f, "memory/describe", "{}");
		json_t *l = json_object_get(json_object_get(r, "result"), "limits");
		CHECK_INT(json_integer_value(json_object_get(l, "max_depth")), 9);
		CHECK_INT(json_integer_value(json_object_get(l, "max_dimensions")), 3);
		json_decref(r);
		a2m_close(f);
	}
	unlink(path);
	a2m_config *cfg;
	CHECK_INT(a2m_config_new(&cfg), A2M_OK);
	CHECK_INT(a2m_config_set(cfg, "max_depth", "3"), A2M_RANGE);
	CHECK_INT(a2m_config_set(cfg, "max_dimensions", "0"), A2M_RANGE);
	CHECK_INT(a2m_config_set(cfg, "max_string_bytes", "63"), A2M_RANGE);
	CHECK_INT(a2m_config_set(cfg, "max_where_values", "1"), A2M_OK);
	a2m_config_free(cfg);
}

/* The engine under test: 0 memory, 1 SQLite, 2 PostgreSQL (tests/pg_helper.h). */
static int engine;
static const char *db_path;
static char pg_schema[64], pg_conninfo[512];

static void test_read_only(void)
{
	if (engine)
		test_read_only_refuses_before_the_limits(pg_test_engine_names[engine], db_path,
							 engine == 2 ? pg_conninfo : NULL);
}

static const test_case tests[] = {
	TEST(test_describe_reports_every_limit),
	TEST(test_depth_at_and_past_the_limit),
	TEST(test_strings_at_and_past_the_limit),
	TEST(test_content_and_records_at_and_past_the_limit),
	TEST(test_metadata_at_and_past_the_limit),
	TEST(test_ids_at_and_past_the_limit),
	TEST(test_where_at_and_past_the_limits),
	TEST(test_vector_width_at_and_past_the_limit),
	TEST(test_limits_from_the_file_and_their_bounds),
	TEST(test_read_only),
	{NULL, NULL},
};

int main(void)
{
	char path[] = "/tmp/a2m-test-limits-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 1;
	close(fd);
	int status = 0;
	int engines = pg_test_engines("a2m_tl", pg_schema, sizeof pg_schema, pg_conninfo,
				      sizeof pg_conninfo);
	for (engine = 0; engine < engines; engine++) {
		check_remove_db(path);
		h = check_open("engine", pg_test_engine_names[engine], "path", path, "postgres",
			       engine == 2 ? pg_conninfo : NULL,
			       "max_depth", "6", "max_string_bytes", "64", "max_metadata_bytes", "64",
			       "max_ids_per_call", "5", "max_where_fields", "3",
			       "max_where_values", "4", "max_dimensions", "8",
			       "max_content_length", "16", "max_records_per_call", "4",
			       "max_recall_limit", "50", NULL);
		if (!h)
			return 1;
		db_path = path;
		printf("# engine %s\n", pg_test_engine_names[engine]);
		status |= run_tests(tests);
		a2m_close(h);
	}
	check_remove_db(path);
	pg_test_schema_drop(pg_schema);
	return status;
}
