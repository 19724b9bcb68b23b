/*
** test_corpus_values.c — the corpus indexer's two ways of sending its
** records (src/corpus/index.c, batch.c) give the same index: as text read
** by a2m_handle (no handle_value), and as JSON values the walk builds
** (record_value, a2m_corpus_batch_value) sent by a2m_handle_value. A
** folder of Markdown with headings, source and text full of what JSON
** escapes is indexed both ways, and every record read back is compared,
** field by field but the time it was written.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "check.h"
#include "corpus/index.h"
#include "server/inprocess.h"

static char dir[] = "/tmp/a2m-test-corpus-values-XXXXXX";

static void put_file(const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* Indexes dir into index, sending the records as text or as values. */
static void index_into(const char *index, int values)
{
	a2m_corpus_options o = {dir, index, NULL, 200, A2M_CORPUS_MAX_FILE, 0,
				values ? a2m_handle_value : NULL, values ? a2m_handle_foresee : NULL};
	a2m_corpus *c = NULL;
	char err[512];
	a2m_corpus_stats st;
	memset(&st, 0, sizeof st);
	CHECK_INT(a2m_corpus_open(&o, &c, err, sizeof err), 0);
	if (!c)
		return;
	CHECK_INT(a2m_corpus_sync(c, "", &st), 0);
	CHECK_INT((long)st.files, 4);
	CHECK(st.chunks_added >= 6);
	a2m_corpus_close(c);
}

/* The index's records as one JSON text, sorted by id, without created_at. */
static char *records_of(const char *index)
{
	a2m_config *cfg = NULL;
	a2m *h = NULL;
	char *msg = NULL, *reply = NULL;
	CHECK_INT(a2m_config_new(&cfg), A2M_OK);
	CHECK_INT(a2m_config_set(cfg, "engine", "sqlite"), 0);
	CHECK_INT(a2m_config_set(cfg, "path", index), 0);
	CHECK_INT(a2m_config_set(cfg, "capabilities", "core,tiers,external"), 0);
	CHECK_INT(a2m_open(cfg, &h, &msg), A2M_OK);
	a2m_config_free(cfg);
	a2m_free(msg);
	static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/timeline\","
				  "\"params\":{\"limit\":1000}}";
	CHECK_INT(a2m_handle(h, req, sizeof req - 1, &reply), A2M_OK);
	a2m_close(h);
	json_t *r = reply ? json_loads(reply, 0, NULL) : NULL;
	a2m_free(reply);
	json_t *recs = json_object_get(json_object_get(r, "result"), "records");
	CHECK(json_array_size(recs) >= 6);
	/* Keyed by id in an object: dumped with sorted keys, the order is the ids'. */
	json_t *by_id = json_object();
	size_t i;
	json_t *rec;
	json_array_foreach(recs, i, rec) {
		json_object_del(rec, "created_at");
		json_object_set(by_id, json_string_value(json_object_get(rec, "id")), rec);
	}
	char *out = json_dumps(by_id, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(by_id);
	json_decref(r);
	return out;
}

static void test_records_as_values_are_the_records_as_text(void)
{
	put_file("guide.md",
		 "# Guide \"quoted\"\n\nIntro with a \\backslash, a\ttab and caf\xc3\xa9.\n\n"
		 "## Install \xe2\x80\x94 steps\n\nRun `make`.\n\n```sh\necho \"hi\" \\\n  done\n```\n\n"
		 "### Deep \xf0\x9f\x98\x80\n\nA control \x01 character and a DEL \x7f here.\n\n"
		 "## Other\n\nText / with slashes </script> and \\u0041 written out.\n");
	put_file("code.c", "/* a comment */\nint main(void)\n{\n\treturn 0;\n}\n\n"
			   "static const char *s = \"a \\\"string\\\"\\n\";\n");
	put_file("notes.txt", "Line one.\r\nLine two, with CRLF.\r\n\r\nAnother paragraph of "
			      "words, words and words to pass the chunk size of two hundred bytes "
			      "so that this file is cut into more than one chunk, at a sentence. "
			      "Then more words follow here.\n");
	put_file("empty.md", "\n\n");
	char text_db[128], value_db[128];
	snprintf(text_db, sizeof text_db, "%s-text.db", dir);
	snprintf(value_db, sizeof value_db, "%s-values.db", dir);
	index_into(text_db, 0);
	index_into(value_db, 1);
	char *a = records_of(text_db), *b = records_of(value_db);
	CHECK(a != NULL && b != NULL);
	if (a && b)
		CHECK_STR(b, a);
	free(a);
	free(b);
	check_remove_db(text_db);
	check_remove_db(value_db);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	static const test_case tests[] = {
		TEST(test_records_as_values_are_the_records_as_text),
		{NULL, NULL},
	};
	int status = run_tests(tests);
	const char *names[] = {"guide.md", "code.c", "notes.txt", "empty.md"};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		char path[256];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
	return status;
}
