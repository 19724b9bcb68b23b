/*
** test_corpus.c — the pieces of `a2m corpus` that do not talk the
** protocol: the chunker (src/corpus/chunk.c), the exclude patterns
** (exclude.c) and the kinds of files (kinds.c). What a client sees of a
** corpus (records, recall, watch, restart) is tested through the protocol
** in tests/corpus_test.sh.
*/
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "corpus/chunk.h"
#include "corpus/exclude.h"
#include "corpus/kinds.h"
#include "util/text.h"

/* The text of chunk i, as a string the test frees. */
static char *text_of(const char *t, const a2m_chunks *c, size_t i)
{
	return strndup(t + c->v[i].start, c->v[i].end - c->v[i].start);
}

/* The heading path of chunk i joined with " > " into out. */
static const char *path_of(const char *t, const a2m_chunks *c, size_t i, char *out, size_t n)
{
	long up[8];
	int k = 0;
	for (long h = c->v[i].heading; h >= 0 && k < 8; h = c->h[h].parent)
		up[k++] = h;
	out[0] = '\0';
	for (int j = k - 1; j >= 0; j--) {
		size_t len = strlen(out);
		snprintf(out + len, n - len, "%s%.*s", j < k - 1 ? " > " : "",
			 (int)c->h[up[j]].len, t + c->h[up[j]].start);
	}
	return out;
}

#define CHECK_CHUNK(t, c, i, want_text, want_path, first, last) do { \
	char *got_ = text_of(t, c, i); \
	char path_[256]; \
	CHECK_STR(got_, want_text); \
	CHECK_STR(path_of(t, c, i, path_, sizeof path_), want_path); \
	CHECK_INT((c)->v[i].first_line, first); \
	CHECK_INT((c)->v[i].last_line, last); \
	free(got_); \
	} while (0)

static void test_markdown_sections_carry_their_heading_path(void)
{
	const char *t =
		"Intro line.\n"               /* 1 */
		"\n"                          /* 2 */
		"# Guide\n"                   /* 3 */
		"## Install\n"                /* 4 */
		"\n"                          /* 5 */
		"Run make.\n"                 /* 6 */
		"\n"                          /* 7 */
		"### Debian\n"                /* 8 */
		"apt-get install jansson\n"   /* 9 */
		"## Use ##\n"                 /* 10 */
		"Start it.\n"                 /* 11 */
		"# Appendix\n";               /* 12 */
	a2m_chunks c = {0};
	CHECK_INT(a2m_chunk_text(t, strlen(t), A2M_CHUNK_MARKDOWN, 2000, &c), 0);
	CHECK_INT(c.n, 5);
	if (c.n == 5) {
		CHECK_CHUNK(t, &c, 0, "Intro line.", "", 1, 1);
		/* "# Guide" has nothing under it before "## Install": one chunk. */
		CHECK_CHUNK(t, &c, 1, "# Guide\n## Install\n\nRun make.", "Guide > Install", 3, 6);
		CHECK_CHUNK(t, &c, 2, "### Debian\napt-get install jansson",
			    "Guide > Install > Debian", 8, 9);
		CHECK_CHUNK(t, &c, 3, "## Use ##\nStart it.", "Guide > Use", 10, 11);
		CHECK_CHUNK(t, &c, 4, "# Appendix", "Appendix", 12, 12);
	}
	a2m_chunks_free(&c);
}

static void test_markdown_code_fences_and_front_matter_hold_no_headings(void)
{
	const char *t =
		"---\n"                       /* 1 */
		"title: x\n"                  /* 2 */
		"---\n"                       /* 3 */
		"Setext title\n"              /* 4 */
		"============\n"              /* 5 */
		"```sh\n"                     /* 6 */
		"# not a heading\n"           /* 7 */
		"\n"                          /* 8 */
		"echo hi\n"                   /* 9 */
		"```\n"                       /* 10 */
		"Sub\n"                       /* 11 */
		"---\n"                       /* 12 */
		"    # indented: code\n";     /* 13 */
	a2m_chunks c = {0};
	CHECK_INT(a2m_chunk_text(t, strlen(t), A2M_CHUNK_MARKDOWN, 2000, &c), 0);
	CHECK_INT(c.nh, 2);
	CHECK_INT(c.n, 3);
	if (c.n == 3) {
		CHECK_CHUNK(t, &c, 0, "---\ntitle: x\n---", "", 1, 3);
		CHECK_CHUNK(t, &c, 1, "Setext title\n============\n```sh\n# not a heading\n\n"
			    "echo hi\n```", "Setext title", 4, 10);
		CHECK_CHUNK(t, &c, 2, "Sub\n---\n    # indented: code", "Setext title > Sub", 11, 13);
	}
	a2m_chunks_free(&c);
}

static void test_paragraphs_pack_up_to_the_size(void)
{
	/* Four paragraphs of 29 bytes: two fit in 64 (29 + 2 + 29 = 60). */
	const char *t =
		"aaaa aaaa aaaa aaaa aaaa aaaa\n\n"
		"bbbb bbbb bbbb bbbb bbbb bbbb\n\n"
		"cccc cccc cccc cccc cccc cccc\n\n"
		"dddd dddd dddd dddd dddd dddd\n";
	a2m_chunks c = {0};
	CHECK_INT(a2m_chunk_text(t, strlen(t), A2M_CHUNK_TEXT, 64, &c), 0);
	CHECK_INT(c.n, 2);
	if (c.n == 2) {
		CHECK_CHUNK(t, &c, 0, "aaaa aaaa aaaa aaaa aaaa aaaa\n\nbbbb bbbb bbbb bbbb bbbb bbbb",
			    "", 1, 3);
		CHECK_CHUNK(t, &c, 1, "cccc cccc cccc cccc cccc cccc\n\ndddd dddd dddd dddd dddd dddd",
			    "", 5, 7);
	}
	a2m_chunks_free(&c);
}

static void test_a_long_paragraph_is_cut_at_sentences(void)
{
	/* One line of 4 sentences of 56 bytes and a space, cut into <= 100:
	** at each sentence's end, though a space nearer 100 is there too. */
	char t[512] = "";
	for (int i = 0; i < 4; i++)
		strcat(t, "One two three four five six seven eight nine ten eleven. ");
	t[strlen(t) - 1] = '\n';
	a2m_chunks c = {0};
	CHECK_INT(a2m_chunk_text(t, strlen(t), A2M_CHUNK_MARKDOWN, 100, &c), 0);
	CHECK_INT(c.n, 4);
	for (size_t i = 0; i < c.n; i++) {
		char *s = text_of(t, &c, i);
		CHECK(strlen(s) <= 100);
		CHECK_STR(s, "One two three four five six seven eight nine ten eleven.");
		CHECK_INT(c.v[i].first_line, 1);
		CHECK_INT(c.v[i].last_line, 1);
		free(s);
	}
	a2m_chunks_free(&c);
}

static void test_a_long_wrapped_paragraph_is_cut_at_lines(void)
{
	/* 10 lines of 39 bytes and no sentence end: cut between lines. */
	char t[512] = "";
	for (int i = 0; i < 10; i++)
		strcat(t, "wrapped prose wrapped prose wrapped pr\n");
	a2m_chunks c = {0};
	CHECK_INT(a2m_chunk_text(t, strlen(t), A2M_CHUNK_TEXT, 100, &c), 0);
	CHECK_INT(c.n, 5);
	for (size_t i = 0; i < c.n; i++) {
		CHECK_INT(c.v[i].first_line, 2 * i + 1);
		CHECK_INT(c.v[i].last_line, 2 * i + 2);
		CHECK_INT(c.v[i].end - c.v[i].start, 38 * 2 + 1);
	}
	a2m_chunks_free(&c);
}

static void test_a_line_without_spaces_is_cut_between_characters(void)
{
	/* 300 three-byte characters on one line: no piece splits one. */
	char t[1024];
	size_t n = 0;
	for (int i = 0; i < 300; i++) {
		memcpy(t + n, "\xe2\x82\xac", 3);  /* € */
		n += 3;
	}
	a2m_chunks c = {0};
	CHECK_INT(a2m_chunk_text(t, n, A2M_CHUNK_TEXT, 100, &c), 0);
	size_t covered = 0;
	for (size_t i = 0; i < c.n; i++) {
		size_t len = c.v[i].end - c.v[i].start;
		CHECK(len <= 100);
		CHECK(a2m_utf8_valid(t + c.v[i].start, len));
		covered += len;
	}
	CHECK_INT(covered, n);
	CHECK_INT(c.n, 10);  /* 99 bytes (33 characters) at a time */
	a2m_chunks_free(&c);
}

static void test_source_blocks_begin_at_top_level_definitions(void)
{
	const char *t =
		"#include <stdio.h>\n"           /* 1 */
		"\n"                             /* 2 */
		"static int f(void)\n"           /* 3 */
		"{\n"                            /* 4 */
		"\tint x = 1;\n"                 /* 5 */
		"\n"                             /* 6 */
		"\treturn x;\n"                  /* 7 */
		"}\n"                            /* 8 */
		"\n"                             /* 9 */
		"def g():\n"                     /* 10 */
		"    a = 1\n"                    /* 11 */
		"\n"                             /* 12 */
		"    return a\n";                /* 13 */
	a2m_chunks c = {0};
	/* 60 bytes: the include and f's first half would fit together, but a
	** blank line inside a definition does not end it. */
	CHECK_INT(a2m_chunk_text(t, strlen(t), A2M_CHUNK_SOURCE, 60, &c), 0);
	CHECK_INT(c.n, 3);
	if (c.n == 3) {
		CHECK_CHUNK(t, &c, 0, "#include <stdio.h>", "", 1, 1);
		CHECK_CHUNK(t, &c, 1, "static int f(void)\n{\n\tint x = 1;\n\n\treturn x;\n}", "",
			    3, 8);
		CHECK_CHUNK(t, &c, 2, "def g():\n    a = 1\n\n    return a", "", 10, 13);
	}
	a2m_chunks_free(&c);
}

static void test_crlf_lines_are_counted_and_trimmed(void)
{
	const char *t = "# A\r\n\r\ntext one\r\n\r\n# B\r\nmore\r\n";
	a2m_chunks c = {0};
	CHECK_INT(a2m_chunk_text(t, strlen(t), A2M_CHUNK_MARKDOWN, 2000, &c), 0);
	CHECK_INT(c.n, 2);
	if (c.n == 2) {
		CHECK_CHUNK(t, &c, 0, "# A\r\n\r\ntext one", "A", 1, 3);
		CHECK_CHUNK(t, &c, 1, "# B\r\nmore", "B", 5, 6);
	}
	a2m_chunks_free(&c);
}

static void test_blank_text_has_no_chunks(void)
{
	a2m_chunks c = {0};
	CHECK_INT(a2m_chunk_text("", 0, A2M_CHUNK_MARKDOWN, 2000, &c), 0);
	CHECK_INT(c.n, 0);
	CHECK_INT(a2m_chunk_text(" \n\t\n\n", 5, A2M_CHUNK_TEXT, 2000, &c), 0);
	CHECK_INT(c.n, 0);
	a2m_chunks_free(&c);
}

/* Random documents: every chunk within the size, in order, never
** overlapping, and every non-blank byte in exactly one chunk. */
static void test_chunks_never_exceed_the_size_and_cover_the_text(void)
{
	static const char *const pieces[] = {
		"# Heading\n", "## Sub heading\n", "word ", "longerword ", "end. ", "\n", "\n\n",
		"```\n", "    indented\n", "}\n", "\xc3\xa9t\xc3\xa9 ", "x\r\n", "===\n", "---\n",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	};
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	a2m_chunks c = {0};
	char *t = malloc(20000);
	for (int round = 0; round < 300 && t; round++) {
		size_t n = 0;
		size_t want = check_rand(&rng) % 15000;
		while (n < want) {
			const char *p = pieces[check_rand(&rng) % (sizeof pieces / sizeof *pieces)];
			memcpy(t + n, p, strlen(p));
			n += strlen(p);
		}
		size_t max = 64 + check_rand(&rng) % 1000;
		a2m_chunk_kind kind = (a2m_chunk_kind)(round % 3);
		CHECK_INT(a2m_chunk_text(t, n, kind, max, &c), 0);
		size_t at = 0;
		int bad = 0;
		for (size_t i = 0; i < c.n && !bad; i++) {
			const a2m_chunk *k = &c.v[i];
			if (k->end - k->start > max || k->start < at || k->end <= k->start ||
			    k->first_line > k->last_line)
				bad = 1;
			for (size_t p = at; p < k->start && !bad; p++)
				if (!strchr(" \t\r\n", t[p]))
					bad = 2;  /* a byte of text fell between chunks */
			if (!a2m_utf8_valid(t + k->start, k->end - k->start))
				bad = 3;
			at = k->end;
		}
		for (size_t p = at; p < n && !bad; p++)
			if (!strchr(" \t\r\n", t[p]))
				bad = 2;
		if (bad)
			fprintf(stderr, "  round %d (kind %d, max %zu): failure %d\n", round, kind, max,
				bad);
		CHECK_INT(bad, 0);
	}
	free(t);
	a2m_chunks_free(&c);
}

/* ---- exclude ---------------------------------------------------------- */

static a2m_exclude *patterns(const char *const *lines)
{
	a2m_exclude *x = a2m_exclude_new();
	for (; x && *lines; lines++)
		CHECK_INT(a2m_exclude_add(x, *lines), 0);
	return x;
}

static void test_exclude_follows_gitignore(void)
{
	static const char *const lines[] = {
		"# a comment", "", "*.o", "/build", "tmp/", "docs/**/draft.md", "**/cache",
		"vendor/**", "!keep.o", "file[0-9].txt", "\\#hash", "a?c", NULL,
	};
	a2m_exclude *x = patterns(lines);
	if (!x)
		return;
	CHECK_INT(a2m_exclude_match(x, "x.o", 0), 1);
	CHECK_INT(a2m_exclude_match(x, "src/deep/x.o", 0), 1);
	CHECK_INT(a2m_exclude_match(x, "src/keep.o", 0), 0);        /* the later '!' wins */
	CHECK_INT(a2m_exclude_match(x, "build", 1), 1);
	CHECK_INT(a2m_exclude_match(x, "src/build", 1), 0);         /* anchored at the root */
	CHECK_INT(a2m_exclude_match(x, "tmp", 1), 1);
	CHECK_INT(a2m_exclude_match(x, "tmp", 0), 0);               /* directories only */
	CHECK_INT(a2m_exclude_match(x, "a/tmp", 1), 1);             /* any depth */
	CHECK_INT(a2m_exclude_match(x, "docs/draft.md", 0), 1);     /* ** is no directory too */
	CHECK_INT(a2m_exclude_match(x, "docs/a/b/draft.md", 0), 1);
	CHECK_INT(a2m_exclude_match(x, "other/draft.md", 0), 0);
	CHECK_INT(a2m_exclude_match(x, "cache", 1), 1);
	CHECK_INT(a2m_exclude_match(x, "a/b/cache", 0), 1);
	CHECK_INT(a2m_exclude_match(x, "vendor", 1), 0);            /* "vendor/" then "**": inside only */
	CHECK_INT(a2m_exclude_match(x, "vendor/x/y.c", 0), 1);
	CHECK_INT(a2m_exclude_match(x, "file7.txt", 0), 1);
	CHECK_INT(a2m_exclude_match(x, "fileX.txt", 0), 0);
	CHECK_INT(a2m_exclude_match(x, "#hash", 0), 1);
	CHECK_INT(a2m_exclude_match(x, "abc", 0), 1);
	CHECK_INT(a2m_exclude_match(x, "a/c", 0), 0);               /* ? is never '/' */
	CHECK_INT(a2m_exclude_match(x, "readme.md", 0), 0);
	/* A path met on its own is judged with its parents. */
	CHECK_INT(a2m_exclude_path(x, "build/out/readme.md", 0), 1);
	CHECK_INT(a2m_exclude_path(x, "src/tmp/readme.md", 0), 1);
	CHECK_INT(a2m_exclude_path(x, "src/readme.md", 0), 0);
	a2m_exclude_free(x);
}

static void test_exclude_negation_and_star_runs(void)
{
	static const char *const lines[] = {"*", "!*.md", "!*/", "**/secret*", NULL};
	a2m_exclude *x = patterns(lines);
	if (!x)
		return;
	CHECK_INT(a2m_exclude_match(x, "a.c", 0), 1);
	CHECK_INT(a2m_exclude_match(x, "docs/a.md", 0), 0);
	CHECK_INT(a2m_exclude_match(x, "docs", 1), 0);
	CHECK_INT(a2m_exclude_match(x, "docs/secret-plan.md", 0), 1);
	a2m_exclude_free(x);
}

/* ---- kinds ------------------------------------------------------------ */

static void test_kinds_by_name(void)
{
	a2m_chunk_kind k;
	const char *mt;
	a2m_corpus_kind("README.md", &k, &mt);
	CHECK_INT(k, A2M_CHUNK_MARKDOWN);
	CHECK_STR(mt, "text/markdown");
	a2m_corpus_kind("chunk.C", &k, &mt);
	CHECK_INT(k, A2M_CHUNK_SOURCE);
	CHECK_STR(mt, "text/x-c");
	a2m_corpus_kind("tool.py", &k, &mt);
	CHECK_STR(mt, "text/x-python");
	a2m_corpus_kind("Makefile", &k, &mt);
	CHECK_INT(k, A2M_CHUNK_SOURCE);
	a2m_corpus_kind("notes", &k, &mt);
	CHECK_INT(k, A2M_CHUNK_TEXT);
	CHECK_STR(mt, "text/plain");
	a2m_corpus_kind(".bashrc", &k, &mt);
	CHECK_STR(mt, "text/plain");
}

int main(void)
{
	static const test_case tests[] = {
		TEST(test_markdown_sections_carry_their_heading_path),
		TEST(test_markdown_code_fences_and_front_matter_hold_no_headings),
		TEST(test_paragraphs_pack_up_to_the_size),
		TEST(test_a_long_paragraph_is_cut_at_sentences),
		TEST(test_a_long_wrapped_paragraph_is_cut_at_lines),
		TEST(test_a_line_without_spaces_is_cut_between_characters),
		TEST(test_source_blocks_begin_at_top_level_definitions),
		TEST(test_crlf_lines_are_counted_and_trimmed),
		TEST(test_blank_text_has_no_chunks),
		TEST(test_chunks_never_exceed_the_size_and_cover_the_text),
		TEST(test_exclude_follows_gitignore),
		TEST(test_exclude_negation_and_star_runs),
		TEST(test_kinds_by_name),
		{NULL, NULL},
	};
	return run_tests(tests);
}
