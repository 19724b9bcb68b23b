/*
** test_embed_stack.c — the server's own embedder wired into the stack
** (docs/EMBEDDINGS.md §4), through the public API against
** tests/embed_server, on both engines:
**   - a write into working memory is never embedded;
**   - a write into a non-working tier, or a spill out of working memory,
**     is embedded after its commit;
**   - a record with a caller vector is never embedded, and `embeddings:
**     true` returns that vector verbatim;
**   - a text query is embedded and ranks by the generated vectors (a record
**     sharing no word with the query is found and ranked by meaning), while
**     the lexical side still runs;
**   - SQLite keeps the vectors across a reopen, and drops them for another
**     model (they are re-embedded);
**   - the records owed a vector are paid one batch (64) per write or text
**     recall, found by the store without a scan: records with a caller
**     vector, in working memory or blank are never among them;
**   - with the embedder down, recall still answers, lexically, no error;
**   - the config file's embeddings.embedder is used.
**
**   test_embed_stack [EMBED_SERVER]   (as test_embed.c finds it)
*/
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "pg_helper.h"

#define DIMS 8
#define START_TIMEOUT_MS 20000

static const char *server_path;
static pid_t srv_pid = -1;
static int srv_port;
static a2m *h;
/* 0 memory, 1 SQLite, 2 PostgreSQL (tests/pg_helper.h). */
static int engine_sqlite;
static char pg_schema[64], pg_conninfo[512];
static char db_path[64];
static char url[64];
static const char *model_name; /* NULL: the default */

/* ---- the helper server (as in test_embed.c) ---- */

/* Starts embed_server on a free port; returns 0 or -1. */
static int server_start(void)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(fd[1], STDOUT_FILENO);
		close(fd[0]);
		close(fd[1]);
		execl(server_path, server_path, "0", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	char line[32];
	size_t len = 0;
	while (len + 1 < sizeof line) {
		struct pollfd p = {.fd = fd[0], .events = POLLIN};
		if (poll(&p, 1, START_TIMEOUT_MS) <= 0)
			break;
		if (read(fd[0], line + len, 1) <= 0 || line[len] == '\n')
			break;
		len++;
	}
	line[len] = '\0';
	close(fd[0]);
	srv_pid = pid;
	srv_port = atoi(line);
	if (srv_port <= 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		srv_pid = -1;
		return -1;
	}
	snprintf(url, sizeof url, "http://127.0.0.1:%d", srv_port);
	return 0;
}

static void server_stop(void)
{
	if (srv_pid <= 0)
		return;
	kill(srv_pid, SIGTERM);
	while (waitpid(srv_pid, NULL, 0) < 0 && errno == EINTR)
		;
	srv_pid = -1;
}

static size_t collect(char *data, size_t size, size_t n, void *user)
{
	char **buf = user;
	size_t old = *buf ? strlen(*buf) : 0;
	char *grown = realloc(*buf, old + size * n + 1);
	if (!grown)
		return 0;
	memcpy(grown + old, data, size * n);
	grown[old + size * n] = '\0';
	*buf = grown;
	return size * n;
}

/* Texts the server has embedded so far (GET /stats), -1 on failure. */
static long long texts_embedded(void)
{
	long long texts = -1;
	char u[96], *body = NULL;
	snprintf(u, sizeof u, "%s/stats", url);
	CURL *k = curl_easy_init();
	if (!k)
		return -1;
	curl_easy_setopt(k, CURLOPT_URL, u);
	curl_easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(k, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(k, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(k, CURLOPT_TIMEOUT_MS, 10000L);
	if (curl_easy_perform(k) == CURLE_OK && body) {
		json_t *v = json_loads(body, 0, NULL);
		texts = json_integer_value(json_object_get(v, "texts"));
		json_decref(v);
	}
	free(body);
	curl_easy_cleanup(k);
	return texts;
}

/* The bucket embed_server puts a one-word text in (its text_vector()). */
static unsigned bucket(const char *word)
{
	uint32_t hash = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)word; *p; p++)
		hash = (hash ^ *p) * 16777619u;
	return hash % DIMS;
}

/* ---- the a2m handle ---- */

/* Opens a fresh store (fresh: removing the file) with an embedder at url. */
static void open_store(int fresh)
{
	if (h)
		a2m_close(h);
	h = NULL;
	if (fresh && engine_sqlite == 2)
		pg_test_schema_fresh(pg_schema);
	if (fresh && engine_sqlite == 1) {
		static const char *const sfx[] = {"", "-wal", "-shm"};
		char name[96];
		for (int i = 0; i < 3; i++) {
			snprintf(name, sizeof name, "%s%s", db_path, sfx[i]);
			unlink(name);
		}
	}
	if (engine_sqlite == 2)
		pg_test_conninfo(pg_schema, pg_conninfo, sizeof pg_conninfo);
	h = check_open("engine", pg_test_engine_names[engine_sqlite], "path", db_path,
		       "synchronous", "normal", "embed_kind", "ollama", "embed_url", url,
		       "embed_timeout_ms", "5000", "embed_model", model_name, "postgres",
		       engine_sqlite == 2 ? pg_conninfo : NULL, NULL);
}

static void remember(const char *tier, const char *content)
{
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"%s\",\"tier\":\"%s\"}]}",
			 content, tier);
	CHECK(json_object_get(r, "result") != NULL);
	json_decref(r);
}

/* The contents a text recall returns, joined by " | "; "(error)" on error. */
static const char *recall_text(const char *query)
{
	static char buf[2048];
	json_t *r = check_call(h, "memory/recall", "{\"query\":\"%s\",\"limit\":10}", query);
	json_t *recs = json_object_get(json_object_get(r, "result"), "records");
	size_t n = 0;
	buf[0] = '\0';
	if (!recs)
		snprintf(buf, sizeof buf, "(error)");
	for (size_t i = 0; i < json_array_size(recs) && n < sizeof buf; i++) {
		const char *c = json_string_value(json_object_get(json_array_get(recs, i), "content"));
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? " | " : "", c ? c : "?");
	}
	json_decref(r);
	return buf;
}

/* ---- the tests ---- */

static void test_working_writes_are_never_embedded(void)
{
	open_store(1);
	long long before = texts_embedded();
	remember("working", "the user said hello");
	remember("working", "the assistant answered politely");
	CHECK_INT(texts_embedded(), before);
}

static void test_spill_out_of_working_memory_is_embedded(void)
{
	open_store(1);
	long long before = texts_embedded();
	char text[64];
	/* The default working tier holds 24: the 25th write spills the oldest. */
	for (int i = 0; i < 25; i++) {
		snprintf(text, sizeof text, "turn number %d of the chat", i);
		remember("working", text);
	}
	CHECK_INT(texts_embedded(), before + 1);
}

static void test_semantic_write_is_embedded_after_commit(void)
{
	open_store(1);
	long long before = texts_embedded();
	remember("semantic", "paris is the capital of france");
	CHECK_INT(texts_embedded(), before + 1);
	/* Already embedded: a second write embeds only the new record. */
	remember("semantic", "berlin is the capital of germany");
	CHECK_INT(texts_embedded(), before + 2);
	json_t *d = check_call(h, "memory/describe", "{}");
	json_t *gen = json_object_get(json_object_get(json_object_get(d, "result"), "embeddings"),
				      "generated");
	CHECK_STR(json_string_value(json_object_get(gen, "kind")), "ollama");
	CHECK_STR(json_string_value(json_object_get(gen, "model")), "bge-m3");
	CHECK_INT(json_integer_value(json_object_get(gen, "dimensions")), DIMS);
	/* The caller's model stays unnamed, its width unset. */
	json_t *emb = json_object_get(json_object_get(d, "result"), "embeddings");
	CHECK(json_is_null(json_object_get(emb, "model")));
	CHECK(json_is_null(json_object_get(emb, "dimensions")));
	json_decref(d);
}

static void test_caller_vector_is_never_embedded_and_returned_verbatim(void)
{
	open_store(1);
	long long before = texts_embedded();
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"vector fact\","
			 "\"tier\":\"semantic\",\"embedding\":[0.5,0.25,0.125]}]}");
	CHECK(json_object_get(r, "result") != NULL);
	json_decref(r);
	CHECK_INT(texts_embedded(), before);
	r = check_call(h, "memory/recall", "{\"embedding\":[0.5,0.25,0.125],\"embeddings\":true}");
	json_t *rec = json_array_get(json_object_get(json_object_get(r, "result"), "records"), 0);
	json_t *v = json_object_get(rec, "embedding");
	CHECK_INT(json_array_size(v), 3);
	CHECK(json_real_value(json_array_get(v, 0)) == 0.5);
	CHECK(json_real_value(json_array_get(v, 2)) == 0.125);
	json_decref(r);
	/* A vector query is not embedded: it is compared with caller vectors. */
	CHECK_INT(texts_embedded(), before);
}

static void test_text_query_ranks_by_generated_vectors(void)
{
	static const char *const words[] = {
		"quokka", "walrus", "narwhal", "ocelot", "tapir", "okapi", "lemur", "gecko",
		"ibis", "kudu", "marmot", "pangolin", "serval", "tamarin", "vicuna", "wombat"};
	/* Three distinct words: query and near share a bucket, far does not. */
	const char *query = NULL, *near = NULL, *far = NULL;
	size_t nw = sizeof words / sizeof *words;
	for (size_t i = 0; i < nw && !near; i++)
		for (size_t j = i + 1; j < nw && !near; j++)
			if (bucket(words[i]) == bucket(words[j]))
				query = words[i], near = words[j];
	for (size_t i = 0; near && i < nw && !far; i++)
		if (bucket(words[i]) != bucket(query))
			far = words[i];
	CHECK(query && near && far);
	if (!query || !near || !far)
		return;
	open_store(1);
	remember("semantic", far);
	remember("semantic", near);
	char both[64];
	snprintf(both, sizeof both, "a %s grazing", query);
	remember("semantic", both);
	long long before = texts_embedded();
	/* Lexically only the third matches; by meaning near does too, and far
	** (orthogonal to the query) is no match at all. At the default weight
	** (the generated vectors' 99% against the text's 1%, docs/EMBEDDINGS.md)
	** near, the query's own vector (cosine 1, score 1), ranks above the
	** third (cosine 1/sqrt(3), score 0.155, plus its text's 1%). */
	char want[256];
	snprintf(want, sizeof want, "%s | %s", near, both);
	const char *got = recall_text(query);
	CHECK_STR(got, want);
	CHECK_INT(texts_embedded(), before + 1); /* the query, once */
	if (engine_sqlite) {
		/* The vectors are kept: after a reopen only the query is embedded. */
		open_store(0);
		before = texts_embedded();
		CHECK_STR(recall_text(query), want);
		CHECK_INT(texts_embedded(), before + 1);
		/* Another model: its vectors are another space, all re-embedded. */
		model_name = "another-model";
		open_store(0);
		before = texts_embedded();
		CHECK_STR(recall_text(query), want);
		CHECK_INT(texts_embedded(), before + 4); /* three records, the query */
		model_name = NULL;
	}
}

/* Remembers n records "note i about <word>" into tier (with a caller vector: vec). */
static void remember_many(const char *tier, int from, int n, const char *word, int vec)
{
	static char body[65536];
	size_t k = (size_t)snprintf(body, sizeof body, "{\"records\":[");
	for (int i = from; i < from + n && k < sizeof body; i++)
		k += (size_t)snprintf(body + k, sizeof body - k,
				      "%s{\"content\":\"note %d about %s\",\"tier\":\"%s\"%s}",
				      i > from ? "," : "", i, word, tier,
				      vec ? ",\"embedding\":[1,0,0]" : "");
	snprintf(body + k, sizeof body - k, "]}");
	json_t *r = check_call(h, "memory/remember", "%s", body);
	CHECK(json_object_get(r, "result") != NULL);
	json_decref(r);
}

static void test_owed_records_paid_a_batch_at_a_time(void)
{
	open_store(1);
	long long before = texts_embedded();
	/* Never owed: caller vectors, working memory, blank content. */
	remember_many("semantic", 0, 20, "herons", 1);
	remember_many("working", 20, 10, "egrets", 0);
	remember("semantic", " ");
	CHECK_INT(texts_embedded(), before);
	/* 150 owed: each write pays one batch after its commit. */
	remember_many("semantic", 100, 75, "storks", 0);
	CHECK_INT(texts_embedded(), before + 64);
	remember_many("episodic", 200, 75, "cranes", 0);
	CHECK_INT(texts_embedded(), before + 128);
	/* A text recall pays what is left (22), then its query; then only its query. */
	recall_text("cranes");
	CHECK_INT(texts_embedded(), before + 128 + 22 + 1);
	recall_text("storks");
	CHECK_INT(texts_embedded(), before + 151 + 1);
	/* Nothing is owed any more: a write outside working memory pays only itself. */
	remember("semantic", "one more heron");
	CHECK_INT(texts_embedded(), before + 153);
}

static void test_embedder_down_recall_still_answers_lexically(void)
{
	open_store(1);
	remember("semantic", "apple pie recipe");
	server_stop();
	/* Owed a vector now, and the model server is gone. */
	remember("semantic", "banana bread recipe");
	CHECK_STR(recall_text("banana"), "banana bread recipe");
	CHECK_STR(recall_text("apple"), "apple pie recipe");
	CHECK(server_start() == 0);
}

static void test_config_file_embedder_is_used(void)
{
	char path[96], body[256];
	snprintf(path, sizeof path, "%s.json", db_path);
	snprintf(body, sizeof body, "{\"embeddings\":{\"embedder\":{\"kind\":\"ollama\","
		 "\"url\":\"%s\",\"timeout_ms\":5000}}}", url);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(body, f);
	fclose(f);
	if (h)
		a2m_close(h);
	h = NULL;
	h = check_open("engine", "memory", "config_file", path, NULL);
	CHECK(h != NULL);
	unlink(path);
	if (!h)
		return;
	long long before = texts_embedded();
	remember("semantic", "configured from a file");
	CHECK_INT(texts_embedded(), before + 1);
}

/* ---- main ---- */

static char default_path[4096];

int main(int argc, char **argv)
{
	static const char *const proxies[] = {"http_proxy", "HTTP_PROXY", "https_proxy",
					      "HTTPS_PROXY", "all_proxy", "ALL_PROXY"};
	for (size_t i = 0; i < sizeof proxies / sizeof *proxies; i++)
		unsetenv(proxies[i]);
	server_path = argc > 1 ? argv[1] : getenv("A2M_EMBED_SERVER");
	if (!server_path) {
		const char *slash = strrchr(argv[0], '/');
		snprintf(default_path, sizeof default_path, "%.*sembed_server",
			 slash ? (int)(slash - argv[0] + 1) : 0, argv[0]);
		server_path = default_path;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (access(server_path, X_OK) != 0 || server_start() != 0) {
		printf("FAIL embed_server: %s did not start\n", server_path);
		printf("0 passed, 1 failed\n");
		return 1;
	}
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-embed-%d.db", (int)getpid());
	static const test_case tests[] = {
		TEST(test_working_writes_are_never_embedded),
		TEST(test_spill_out_of_working_memory_is_embedded),
		TEST(test_semantic_write_is_embedded_after_commit),
		TEST(test_caller_vector_is_never_embedded_and_returned_verbatim),
		TEST(test_text_query_ranks_by_generated_vectors),
		TEST(test_owed_records_paid_a_batch_at_a_time),
		TEST(test_embedder_down_recall_still_answers_lexically),
		TEST(test_config_file_embedder_is_used),
		{NULL, NULL}};
	int rc = 0;
	snprintf(pg_schema, sizeof pg_schema, "a2m_te_%d", (int)getpid());
	if (!pg_test_server())
		printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
	for (engine_sqlite = 0; engine_sqlite <= (pg_test_server() ? 2 : 1); engine_sqlite++) {
		static const char *const names[] = {"memory", "sqlite", "postgres"};
		printf("# engine %s\n", names[engine_sqlite]);
		rc |= run_tests(tests);
	}
	if (h)
		a2m_close(h);
	h = NULL;
	pg_test_schema_drop(pg_schema);
	if (h)
		a2m_close(h);
	server_stop();
	unlink(db_path);
	char name[96];
	snprintf(name, sizeof name, "%s-wal", db_path);
	unlink(name);
	snprintf(name, sizeof name, "%s-shm", db_path);
	unlink(name);
	curl_global_cleanup();
	return rc;
}
