/*
** test_prompt.c — unit tests of the `prompt` rendering (src/compose/prompt.c, spec
** §4.16) and of the extractive summarizer behind memory/summarize
** (src/compose/summary.c, §4.15).
*/
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "compose/prompt.h"
#include "compose/summary.h"
#include "util/json_write.h"

/* ---- prompt: the parameter ---- */

/* Parses the JSON text of a prompt param; returns the code. */
static int parse(const char *text, a2m_prompt_opts *opts, int *wanted)
{
	json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
	a2m_error err = {0};
	CHECK(!text || v != NULL);
	int rc = a2m_prompt_parse(v, opts, wanted, &err);
	json_decref(v);
	a2m_error_clear(&err);
	return rc;
}

static void test_prompt_absent_false_null_render_nothing(void)
{
	a2m_prompt_opts o;
	int wanted = -1;
	CHECK_INT(parse(NULL, &o, &wanted), 0);
	CHECK_INT(wanted, 0);
	wanted = -1;
	CHECK_INT(parse("false", &o, &wanted), 0);
	CHECK_INT(wanted, 0);
	wanted = -1;
	CHECK_INT(parse("null", &o, &wanted), 0);
	CHECK_INT(wanted, 0);
	wanted = -1;
	CHECK_INT(parse("{\"method\":\"none\"}", &o, &wanted), 0);
	CHECK_INT(wanted, 0);
}

static void test_prompt_true_means_template_defaults(void)
{
	a2m_prompt_opts o;
	int wanted = 0;
	CHECK_INT(parse("true", &o, &wanted), 0);
	CHECK_INT(wanted, 1);
	CHECK_INT(o.style, A2M_PROMPT_AUTO);
	CHECK_INT(o.budget, 0);
	CHECK_INT(o.cite, 0);
	wanted = 0;
	CHECK_INT(parse("{}", &o, &wanted), 0);
	CHECK_INT(wanted, 1);
	CHECK_INT(o.style, A2M_PROMPT_AUTO);
}

static void test_prompt_object_fields_are_read(void)
{
	a2m_prompt_opts o;
	int wanted = 0;
	CHECK_INT(parse("{\"method\":\"template\",\"style\":\"transcript\",\"budget\":120,"
			"\"cite\":true}", &o, &wanted), 0);
	CHECK_INT(wanted, 1);
	CHECK_INT(o.style, A2M_PROMPT_TRANSCRIPT);
	CHECK_INT(o.budget, 120);
	CHECK_INT(o.cite, 1);
	CHECK_INT(parse("{\"style\":\"facts\",\"budget\":null,\"cite\":false,\"model\":null}",
			&o, &wanted), 0);
	CHECK_INT(o.style, A2M_PROMPT_FACTS);
	CHECK_INT(o.budget, 0);
	CHECK_INT(o.cite, 0);
}

static void test_prompt_method_or_model_not_offered_is_invalid_params(void)
{
	static const char *const bad[] = {
		"{\"method\":\"model\"}", "{\"method\":\"llm\"}", "{\"method\":3}",
		"{\"model\":\"gpt-x\"}", "{\"method\":\"template\",\"model\":\"m\"}",
		"{\"method\":\"none\",\"model\":\"m\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		a2m_prompt_opts o;
		int wanted = 0;
		CHECK_INT(parse(bad[i], &o, &wanted), A2M_INVALID_PARAMS);
	}
	/* The message says what is offered, so the error is avoidable. */
	json_t *v = json_pack("{ss}", "method", "model");
	a2m_prompt_opts o;
	int wanted;
	a2m_error err = {0};
	CHECK_INT(a2m_prompt_parse(v, &o, &wanted, &err), A2M_INVALID_PARAMS);
	CHECK_STR(err.message, "prompt.method 'model' is not offered; the methods are "
			       "\"template\" and \"none\"");
	a2m_error_clear(&err);
	json_decref(v);
}

static void test_prompt_bad_style_budget_cite_or_type_is_invalid_params(void)
{
	static const char *const bad[] = {
		"{\"style\":\"bullets\"}", "{\"style\":1}", "{\"budget\":-1}",
		"{\"budget\":1.5}", "{\"budget\":\"10\"}", "{\"cite\":\"yes\"}", "{\"cite\":1}",
		"\"yes\"", "3", "[]",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		a2m_prompt_opts o;
		int wanted = 0;
		CHECK_INT(parse(bad[i], &o, &wanted), A2M_INVALID_PARAMS);
	}
}

static void test_prompt_describe_names_styles_and_methods(void)
{
	json_t *d = a2m_prompt_describe();
	char *text = a2m_json_write(d, NULL);
	CHECK_STR(text, "{\"styles\":[\"auto\",\"facts\",\"transcript\"],"
			"\"methods\":[\"template\",\"none\"],\"model\":null}");
	free(text);
	json_decref(d);
}

/* ---- prompt: rendering ---- */

/* Renders recs and checks the text and the ids (comma-joined). */
static void check_render(const a2m_prompt_opts *o, a2m_record *recs, size_t n,
			 int chronological, const char *want_text, const char *want_ids)
{
	const a2m_record *order[8];
	for (size_t i = 0; i < n; i++)
		order[i] = &recs[i];
	char *text = NULL;
	json_t *ids = NULL;
	a2m_error err = {0};
	CHECK_INT(a2m_prompt_render(o, order, n, chronological, &text, &ids, &err), 0);
	CHECK_STR(text, want_text);
	char joined[256] = "";
	size_t i, at = 0;
	json_t *id;
	json_array_foreach(ids, i, id)
		at += (size_t)snprintf(joined + at, sizeof joined - at, "%s%s", i ? "," : "",
				       json_string_value(id));
	CHECK_STR(joined, want_ids);
	free(text);
	json_decref(ids);
	a2m_error_clear(&err);
}

static void test_render_facts_one_bullet_per_record(void)
{
	a2m_record r[] = {
		{.id = "r1", .content = "Rome is the capital", .role = "user"},
		{.id = "r2", .content = "Paris is in France"},
	};
	a2m_prompt_opts o = {.style = A2M_PROMPT_FACTS};
	check_render(&o, r, 2, 0, "- Rome is the capital\n- Paris is in France", "r1,r2");
}

static void test_render_multiline_record_stays_one_entry(void)
{
	a2m_record r[] = {
		{.id = "r1", .content = "first line\nsecond line\n"},
		{.id = "r2", .content = "other"},
	};
	a2m_prompt_opts o = {.style = A2M_PROMPT_FACTS};
	check_render(&o, r, 2, 0, "- first line\n  second line\n- other", "r1,r2");
	o.style = A2M_PROMPT_TRANSCRIPT;
	check_render(&o, r, 2, 0, "memory: first line\n  second line\nmemory: other", "r1,r2");
}

static void test_render_transcript_role_colon_content(void)
{
	a2m_record r[] = {
		{.id = "r1", .content = "hi", .role = "user"},
		{.id = "r2", .content = "hello", .role = "assistant"},
		{.id = "r3", .content = "noted"},
	};
	a2m_prompt_opts o = {.style = A2M_PROMPT_TRANSCRIPT};
	check_render(&o, r, 3, 1, "user: hi\nassistant: hello\nmemory: noted", "r1,r2,r3");
}

static void test_render_auto_picks_transcript_only_for_chat_roles(void)
{
	a2m_record chat[] = {
		{.id = "r1", .content = "hi", .role = "user"},
		{.id = "r2", .content = "ok", .role = "assistant"},
		{.id = "r3", .content = "42", .role = "tool"},
		{.id = "r4", .content = "be brief", .role = "system"},
	};
	a2m_prompt_opts o = {.style = A2M_PROMPT_AUTO};
	check_render(&o, chat, 4, 1, "user: hi\nassistant: ok\ntool: 42\nsystem: be brief",
		     "r1,r2,r3,r4");
	a2m_record mixed[] = {
		{.id = "r1", .content = "hi", .role = "user"},
		{.id = "r2", .content = "likes tea", .role = "memory"},
	};
	check_render(&o, mixed, 2, 1, "- hi\n- likes tea", "r1,r2");
	a2m_record norole[] = {
		{.id = "r1", .content = "hi", .role = "user"},
		{.id = "r2", .content = "likes tea"},
	};
	check_render(&o, norole, 2, 1, "- hi\n- likes tea", "r1,r2");
	check_render(&o, NULL, 0, 0, "", "");
}

static void test_render_cite_prefers_uri_then_key(void)
{
	a2m_record r[] = {
		{.id = "r1", .content = "the report", .key = "docs/report",
		 .uri = "https://example.com/r.pdf"},
		{.id = "r2", .content = "lives in Rome", .key = "user/city"},
		{.id = "r3", .content = "plain"},
	};
	a2m_prompt_opts o = {.style = A2M_PROMPT_FACTS, .cite = 1};
	check_render(&o, r, 3, 0, "- the report [https://example.com/r.pdf]\n"
				  "- lives in Rome [user/city]\n- plain", "r1,r2,r3");
	o.style = A2M_PROMPT_TRANSCRIPT;
	check_render(&o, r, 2, 0, "memory: the report [https://example.com/r.pdf]\n"
				  "memory: lives in Rome [user/city]", "r1,r2");
	o.cite = 0;
	o.style = A2M_PROMPT_FACTS;
	check_render(&o, r, 2, 0, "- the report\n- lives in Rome", "r1,r2");
}

/* Three entries of 5, 4 and 3 code points: "- aaa", "- bb", "- c". */
static a2m_record abc[] = {
	{.id = "a", .content = "aaa"},
	{.id = "b", .content = "bb"},
	{.id = "c", .content = "c"},
};

static void test_budget_recall_drops_lowest_ranked_whole(void)
{
	a2m_prompt_opts o = {.style = A2M_PROMPT_FACTS, .budget = 14};
	check_render(&o, abc, 3, 0, "- aaa\n- bb\n- c", "a,b,c");
	o.budget = 13;
	check_render(&o, abc, 3, 0, "- aaa\n- bb", "a,b");
	o.budget = 10;
	check_render(&o, abc, 3, 0, "- aaa\n- bb", "a,b");
	o.budget = 9;
	check_render(&o, abc, 3, 0, "- aaa", "a");
	o.budget = 5;
	check_render(&o, abc, 3, 0, "- aaa", "a");
}

static void test_budget_timeline_drops_oldest_whole(void)
{
	a2m_prompt_opts o = {.style = A2M_PROMPT_FACTS, .budget = 13};
	check_render(&o, abc, 3, 1, "- bb\n- c", "b,c");
	o.budget = 8;
	check_render(&o, abc, 3, 1, "- bb\n- c", "b,c");
	o.budget = 7;
	check_render(&o, abc, 3, 1, "- c", "c");
	o.budget = 3;
	check_render(&o, abc, 3, 1, "- c", "c");
}

static void test_budget_nothing_fits_gives_empty_prompt(void)
{
	a2m_prompt_opts o = {.style = A2M_PROMPT_FACTS, .budget = 2};
	check_render(&o, abc, 3, 0, "", "");
	check_render(&o, abc, 3, 1, "", "");
	/* A first entry that is too long is never cut to fit. */
	o.budget = 4;
	check_render(&o, abc, 3, 0, "", "");
}

static void test_budget_counts_code_points(void)
{
	/* "- città" is 7 code points in 8 bytes. */
	a2m_record r[] = {{.id = "r1", .content = "citt\xc3\xa0"}};
	a2m_prompt_opts o = {.style = A2M_PROMPT_FACTS, .budget = 7};
	check_render(&o, r, 1, 0, "- citt\xc3\xa0", "r1");
	o.budget = 6;
	check_render(&o, r, 1, 0, "", "");
}

/* ---- summarize ---- */

/* Summarises the contents given (NULL-terminated); caller frees. */
static char *summarize(const char *const *contents, size_t max_sentences, size_t max_chars)
{
	a2m_record recs[8];
	const a2m_record *order[8];
	size_t n = 0;
	memset(recs, 0, sizeof recs);
	for (; contents[n]; n++) {
		recs[n].id = "r";
		recs[n].content = (char *)contents[n];
		order[n] = &recs[n];
	}
	return a2m_summarize_extract(order, n, max_sentences, max_chars);
}

static const char *const italy[] = {
	"Rome is the capital of Italy. Pasta is popular.",
	"The capital of Italy is Rome! Weather today is sunny.",
	"Rome hosts the Italian parliament.",
	NULL,
};

static void test_summary_picks_what_sources_share(void)
{
	/* Scores: 7/sqrt(3) for both capital sentences (tie: earlier first),
	** 6/sqrt(4) for the parliament, less for the rest. */
	char *s = summarize(italy, 2, 2000);
	CHECK_STR(s, "Rome is the capital of Italy. The capital of Italy is Rome!");
	free(s);
	s = summarize(italy, 3, 2000);
	CHECK_STR(s, "Rome is the capital of Italy. The capital of Italy is Rome! "
		     "Rome hosts the Italian parliament.");
	free(s);
}

static void test_summary_is_deterministic(void)
{
	char *a = summarize(italy, 5, 2000), *b = summarize(italy, 5, 2000);
	CHECK_STR(a, "Rome is the capital of Italy. Pasta is popular. "
		     "The capital of Italy is Rome! Weather today is sunny. "
		     "Rome hosts the Italian parliament.");
	CHECK_STR(b, a);
	free(a);
	free(b);
}

static void test_summary_keeps_source_order(void)
{
	/* The later sentence ranks higher (7/sqrt(4) > 6/sqrt(3)) and still
	** comes second. */
	static const char *const src[] = {
		"Pasta is popular. Rome is the capital of Italy.",
		"Italy has Rome as capital city.",
		NULL,
	};
	char *s = summarize(src, 1, 2000);
	CHECK_STR(s, "Italy has Rome as capital city.");
	free(s);
	s = summarize(src, 2, 2000);
	CHECK_STR(s, "Rome is the capital of Italy. Italy has Rome as capital city.");
	free(s);
}

static void test_summary_drops_duplicate_sentences(void)
{
	static const char *const src[] = {
		"Rome is great. Rome is great.",
		"  Rome is great.  ",
		NULL,
	};
	char *s = summarize(src, 5, 2000);
	CHECK_STR(s, "Rome is great.");
	free(s);
}

static void test_summary_stays_within_max_chars(void)
{
	/* 29 characters each for the capital sentences: only one fits in 40,
	** and the best that still fit are taken after it. */
	char *s = summarize(italy, 5, 40);
	CHECK_STR(s, "Rome is the capital of Italy.");
	free(s);
	s = summarize(italy, 5, 47);
	CHECK_STR(s, "Rome is the capital of Italy. Pasta is popular.");
	free(s);
	s = summarize(italy, 5, 10);
	CHECK(s == NULL);
	free(s);
}

static void test_summary_sentence_boundaries(void)
{
	/* A point inside a number is not an end; newlines and CJK stops are. */
	static const char *const nums[] = {"Pi is 3.14 roughly. Euler number 2.71 differs.", NULL};
	char *s = summarize(nums, 5, 2000);
	CHECK_STR(s, "Pi is 3.14 roughly. Euler number 2.71 differs.");
	free(s);
	static const char *const lines[] = {"first line about rome\nsecond line about rome", NULL};
	s = summarize(lines, 5, 2000);
	CHECK_STR(s, "first line about rome second line about rome");
	free(s);
	static const char *const cjk[] = {
		"\xe6\x9d\xb1\xe4\xba\xac\xe3\x81\xaf\xe9\xa6\x96\xe9\x83\xbd\xe3\x80\x82"
		"\xe5\xa4\xa7\xe9\x98\xaa\xe3\x81\xaf\xe9\x83\xbd\xe5\xb8\x82\xef\xbc\x81",
		NULL,
	};
	s = summarize(cjk, 5, 2000);
	CHECK_STR(s, "\xe6\x9d\xb1\xe4\xba\xac\xe3\x81\xaf\xe9\xa6\x96\xe9\x83\xbd\xe3\x80\x82 "
		     "\xe5\xa4\xa7\xe9\x98\xaa\xe3\x81\xaf\xe9\x83\xbd\xe5\xb8\x82\xef\xbc\x81");
	free(s);
	static const char *const quote[] = {"He said \"stop.\" Then old rome fell?! Yes.", NULL};
	s = summarize(quote, 1, 2000);
	CHECK_STR(s, "Then old rome fell?!");
	free(s);
}

static void test_summary_declines_when_nothing_to_say(void)
{
	static const char *const none[] = {NULL};
	errno = EINVAL;
	char *s = summarize(none, 5, 2000);
	CHECK(s == NULL);
	CHECK_INT(errno, 0);
	static const char *const empty[] = {"", "   \n  ", NULL};
	s = summarize(empty, 5, 2000);
	CHECK(s == NULL);
	/* Only short words and stopwords: no sentence carries content. */
	static const char *const filler[] = {"It is a. And the. Ok!", "Es ist der und die.", NULL};
	errno = EINVAL;
	s = summarize(filler, 5, 2000);
	CHECK(s == NULL);
	CHECK_INT(errno, 0);
	s = summarize(italy, 0, 2000);
	CHECK(s == NULL);
}

int main(void)
{
	static const test_case tests[] = {
		TEST(test_prompt_absent_false_null_render_nothing),
		TEST(test_prompt_true_means_template_defaults),
		TEST(test_prompt_object_fields_are_read),
		TEST(test_prompt_method_or_model_not_offered_is_invalid_params),
		TEST(test_prompt_bad_style_budget_cite_or_type_is_invalid_params),
		TEST(test_prompt_describe_names_styles_and_methods),
		TEST(test_render_facts_one_bullet_per_record),
		TEST(test_render_multiline_record_stays_one_entry),
		TEST(test_render_transcript_role_colon_content),
		TEST(test_render_auto_picks_transcript_only_for_chat_roles),
		TEST(test_render_cite_prefers_uri_then_key),
		TEST(test_budget_recall_drops_lowest_ranked_whole),
		TEST(test_budget_timeline_drops_oldest_whole),
		TEST(test_budget_nothing_fits_gives_empty_prompt),
		TEST(test_budget_counts_code_points),
		TEST(test_summary_picks_what_sources_share),
		TEST(test_summary_is_deterministic),
		TEST(test_summary_keeps_source_order),
		TEST(test_summary_drops_duplicate_sentences),
		TEST(test_summary_stays_within_max_chars),
		TEST(test_summary_sentence_boundaries),
		TEST(test_summary_declines_when_nothing_to_say),
		{NULL, NULL}
	};
	return run_tests(tests);
}
