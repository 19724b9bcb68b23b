/*
** test_embed.c — the embedder seam (src/embed/) against tests/embed_server:
** both backends, one test per rule of embedder.h.
**
**   test_embed [EMBED_SERVER]
**
** The server binary is argv[1], else $A2M_EMBED_SERVER, else embed_server
** beside this test's own binary (build/tests/, build-san/tests/). Its
** absence is a build bug, reported as a failure, never skipped.
**
** Nothing here asserts a duration: a timeout test checks that the call
** failed as a timeout, not how long it took, so a slow machine (valgrind,
** sanitizers) cannot make it flake.
**
** The helper server, its /stats, the reference vector and the embedders
** are tests/embed_harness.h.
*/
#include "embed_harness.h"

/* ---- the rules ---- */

static void test_vectors_are_the_servers_exactly(void)
{
	for (size_t k = 0; k < 2; k++) {
		a2m_embedder *e = make(kinds[k], url_of(&main_srv, NULL), 0, 0, NULL);
		CHECK(e != NULL);
		if (!e)
			continue;
		float *v = NULL;
		size_t d = 0;
		char err[256] = "";
		CHECK_INT(e->embed(e, sample, N_SAMPLE, &v, &d, err, sizeof err), 0);
		CHECK_INT(d, DIMS);
		if (v && d == DIMS)
			CHECK_INT(mismatches(sample, N_SAMPLE, v, d), 0);
		CHECK_STR(err, "");
		free(v);
		e->destroy(e);
	}
}

static void test_openai_vectors_are_placed_by_index_not_position(void)
{
	/* The server answers /v1/embeddings in reverse order, index attached. */
	const char *const texts[] = {"alpha beta", "gamma", "delta epsilon zeta"};
	a2m_embedder *e = make("openai", url_of(&main_srv, NULL), 0, 0, NULL);
	CHECK(e != NULL);
	if (!e)
		return;
	float *v = NULL;
	size_t d = 0;
	CHECK_INT(e->embed(e, texts, 3, &v, &d, NULL, 0), 0);
	CHECK(v && d == DIMS && mismatches(texts, 3, v, d) == 0);
	free(v);
	e->destroy(e);
}

static void test_openai_without_index_is_read_by_position(void)
{
	const char *const texts[] = {"alpha beta", "gamma", "delta epsilon zeta"};
	a2m_embedder *e = make("openai", url_of(&main_srv, "/noindex"), 0, 0, NULL);
	CHECK(e != NULL);
	if (!e)
		return;
	float *v = NULL;
	size_t d = 0;
	CHECK_INT(e->embed(e, texts, 3, &v, &d, NULL, 0), 0);
	CHECK(v && d == DIMS && mismatches(texts, 3, v, d) == 0);
	free(v);
	e->destroy(e);
}

static void test_batch_splits_into_ceil_n_over_batch_requests(void)
{
	const char *texts[10];
	char buf[10][32];
	for (size_t i = 0; i < 10; i++) {
		snprintf(buf[i], sizeof buf[i], "record number %zu of ten", i);
		texts[i] = buf[i];
	}
	static const struct {
		size_t n, batch;
		long long requests;
	} cases[] = {{10, 4, 3}, {10, 5, 2}, {10, 10, 1}, {10, 64, 1}, {1, 4, 1}, {10, 1, 10}};
	for (size_t k = 0; k < 2; k++)
		for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
			a2m_embedder *e = make(kinds[k], url_of(&main_srv, NULL), cases[c].batch, 0,
					       NULL);
			CHECK(e != NULL);
			if (!e)
				continue;
			stats before = get_stats(&main_srv);
			float *v = NULL;
			size_t d = 0;
			CHECK_INT(e->embed(e, texts, cases[c].n, &v, &d, NULL, 0), 0);
			stats after = get_stats(&main_srv);
			CHECK_INT(after.requests - before.requests, cases[c].requests);
			CHECK_INT(after.texts - before.texts, (long long)cases[c].n);
			/* The pieces come back in the order of the texts. */
			CHECK(v && d == DIMS && mismatches(texts, cases[c].n, v, d) == 0);
			free(v);
			e->destroy(e);
		}
}

static void test_default_batch_is_64_texts_per_request(void)
{
	const char *texts[130];
	for (size_t i = 0; i < 130; i++)
		texts[i] = i % 2 ? "odd text" : "even text";
	a2m_embedder *e = make("ollama", url_of(&main_srv, NULL), 0, 0, NULL);
	CHECK(e != NULL);
	if (!e)
		return;
	stats before = get_stats(&main_srv);
	float *v = NULL;
	size_t d = 0;
	CHECK_INT(e->embed(e, texts, 130, &v, &d, NULL, 0), 0);
	stats after = get_stats(&main_srv);
	CHECK_INT(after.requests - before.requests, 3);
	CHECK(v && mismatches(texts, 130, v, d) == 0);
	free(v);
	e->destroy(e);
}

static void test_zero_texts_send_no_request(void)
{
	for (size_t k = 0; k < 2; k++) {
		a2m_embedder *e = make(kinds[k], url_of(&main_srv, NULL), 0, 0, NULL);
		CHECK(e != NULL);
		if (!e)
			continue;
		stats before = get_stats(&main_srv);
		float *v = (float *)1;
		size_t d = 7;
		CHECK_INT(e->embed(e, NULL, 0, &v, &d, NULL, 0), 0);
		CHECK(v == NULL);
		CHECK_INT(d, 0);
		CHECK_INT(get_stats(&main_srv).requests, before.requests);
		e->destroy(e);
	}
}

static void test_default_model_is_bge_m3(void)
{
	for (size_t k = 0; k < 2; k++) {
		a2m_embedder *e = make(kinds[k], url_of(&main_srv, NULL), 0, 0, NULL);
		CHECK(e != NULL);
		if (!e)
			continue;
		CHECK_STR(e->model(e), "bge-m3");
		CHECK_STR(e->kind, kinds[k]);
		const char *t = "x";
		float *v = NULL;
		size_t d = 0;
		CHECK_INT(e->embed(e, &t, 1, &v, &d, NULL, 0), 0);
		CHECK_STR(get_stats(&main_srv).model, "bge-m3");
		free(v);
		e->destroy(e);
	}
}

static void test_configured_model_is_sent_and_copied(void)
{
	char model[] = "nomic-embed-text";
	a2m_embedder_config cfg = {.kind = "openai", .url = url_of(&main_srv, NULL),
				   .model = model};
	a2m_embedder *e = a2m_embedder_new(&cfg, NULL, 0);
	CHECK(e != NULL);
	if (!e)
		return;
	memset(model, 'z', sizeof model - 1); /* the embedder kept its own copy */
	CHECK_STR(e->model(e), "nomic-embed-text");
	const char *t = "x";
	float *v = NULL;
	size_t d = 0;
	CHECK_INT(e->embed(e, &t, 1, &v, &d, NULL, 0), 0);
	CHECK_STR(get_stats(&main_srv).model, "nomic-embed-text");
	free(v);
	e->destroy(e);
}

static void test_url_may_be_a_base_or_the_endpoint(void)
{
	static const struct {
		const char *kind, *suffix;
	} cases[] = {
		{"ollama", ""},           {"ollama", "/"},        {"ollama", "/api/embed"},
		{"ollama", "/api/embed/"}, {"openai", ""},         {"openai", "/"},
		{"openai", "/v1"},        {"openai", "/v1/"},     {"openai", "/v1/embeddings"},
		{"openai", "/v1/embeddings?api-version=1"},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		a2m_embedder *e = make(cases[c].kind, url_of(&main_srv, cases[c].suffix), 0, 0, NULL);
		CHECK(e != NULL);
		if (!e)
			continue;
		const char *t = "hello";
		float *v = NULL;
		size_t d = 0;
		char err[256] = "";
		int rc = e->embed(e, &t, 1, &v, &d, err, sizeof err);
		if (rc)
			fprintf(stderr, "  %s %s: %s\n", cases[c].kind, cases[c].suffix, err);
		CHECK_INT(rc, 0);
		free(v);
		e->destroy(e);
	}
}

static void test_http_error_status_is_ehttp_with_the_servers_message(void)
{
	const char *const t[] = {"a", "b"};
	for (size_t k = 0; k < 2; k++) {
		expect_failure(kinds[k], "/fail/500", 0, t, 2, A2M_EMBED_EHTTP,
			       "HTTP 500: failing as asked");
		expect_failure(kinds[k], "/fail/404", 0, t, 2, A2M_EMBED_EHTTP, "HTTP 404");
		expect_failure(kinds[k], "/fail/302", 0, t, 2, A2M_EMBED_EHTTP, "HTTP 302");
	}
	/* A path the server does not serve is an HTTP error, not a crash. */
	expect_failure("ollama", "/nowhere/api/embed", 0, t, 2, A2M_EMBED_EHTTP, "404");
}

static void test_messages_cut_to_fit_stay_valid_utf8(void)
{
	/* The server's message ends in "citt\xc3\xa0)": every cut must land
	** between characters, or the message could not go into a JSON string. */
	const char *const t[] = {"a"};
	a2m_embedder *e = make("ollama", url_of(&main_srv, "/fail/500"), 0, 0, NULL);
	CHECK(e != NULL);
	if (!e)
		return;
	for (size_t len = 1; len < 80; len++) {
		char err[80];
		memset(err, 'x', sizeof err);
		float *v = NULL;
		size_t d = 0;
		CHECK_INT(e->embed(e, t, 1, &v, &d, err, len), A2M_EMBED_EHTTP);
		CHECK(strlen(err) < len);
		json_t *s = json_string(err);
		CHECK(s != NULL);
		json_decref(s);
	}
	e->destroy(e);
}

static void test_malformed_json_is_eproto(void)
{
	const char *const t[] = {"a", "b"};
	for (size_t k = 0; k < 2; k++)
		expect_failure(kinds[k], "/malformed", 0, t, 2, A2M_EMBED_EPROTO, "not JSON");
}

static void test_wrong_shape_is_eproto(void)
{
	const char *const t[] = {"a", "b"};
	for (size_t k = 0; k < 2; k++)
		expect_failure(kinds[k], "/wrongshape", 0, t, 2, A2M_EMBED_EPROTO, NULL);
}

static void test_fewer_vectors_than_texts_is_eproto(void)
{
	const char *const t[] = {"a", "b", "c"};
	for (size_t k = 0; k < 2; k++)
		expect_failure(kinds[k], "/short", 0, t, 3, A2M_EMBED_EPROTO, "2 vectors for 3 texts");
}

static void test_vectors_of_different_widths_in_one_answer_are_eproto(void)
{
	const char *const t[] = {"a", "b", "c"};
	for (size_t k = 0; k < 2; k++)
		expect_failure(kinds[k], "/ragged", 0, t, 3, A2M_EMBED_EPROTO, "width");
}

static void test_widths_differing_across_requests_of_one_call_are_eproto(void)
{
	/* batch 2, 4 texts: two requests, answered DIMS then DIMS+1 wide (or
	** the other way round: the server alternates). */
	const char *const t[] = {"a", "b", "c", "d"};
	for (size_t k = 0; k < 2; k++)
		expect_failure(kinds[k], "/alternate", 2, t, 4, A2M_EMBED_EPROTO, "width");
}

static void test_component_beyond_float_range_is_eproto(void)
{
	const char *const t[] = {"a"};
	for (size_t k = 0; k < 2; k++)
		expect_failure(kinds[k], "/huge", 0, t, 1, A2M_EMBED_EPROTO, "finite");
}

static void test_openai_repeated_index_is_eproto(void)
{
	const char *const t[] = {"a", "b"};
	expect_failure("openai", "/dupindex", 0, t, 2, A2M_EMBED_EPROTO, "index");
}

static void test_api_key_is_sent_as_bearer_and_never_echoed(void)
{
	server s;
	const char *args[] = {"--key", "s3cret-k3y", "0", NULL};
	CHECK_INT(server_start(&s, args), 0);
	if (s.pid <= 0)
		return;
	const char *t = "hello";
	for (size_t k = 0; k < 2; k++) {
		static const struct {
			const char *key;
			int want;
		} cases[] = {{"s3cret-k3y", 0}, {NULL, A2M_EMBED_EHTTP}, {"wrong-s3cret", A2M_EMBED_EHTTP}};
		for (size_t c = 0; c < 3; c++) {
			a2m_embedder *e = make(kinds[k], url_of(&s, NULL), 0, 0, cases[c].key);
			CHECK(e != NULL);
			if (!e)
				continue;
			float *v = NULL;
			size_t d = 0;
			char err[256] = "";
			CHECK_INT(e->embed(e, &t, 1, &v, &d, err, sizeof err), cases[c].want);
			if (cases[c].want) {
				CHECK(strstr(err, "401") != NULL);
				CHECK(strstr(err, "s3cret") == NULL);
			}
			free(v);
			e->destroy(e);
		}
	}
	CHECK_INT(server_stop(&s), 0);
}

static void test_timeout_is_etimeout_and_the_embedder_recovers(void)
{
	server slow, fast;
	const char *args[] = {"--delay-ms", "60000", "0", NULL};
	CHECK_INT(server_start(&slow, args), 0);
	if (slow.pid <= 0)
		return;
	int port = slow.port;
	for (size_t k = 0; k < 2; k++) {
		a2m_embedder *e = make(kinds[k], url_of(&slow, NULL), 0, 100, NULL);
		CHECK(e != NULL);
		if (!e)
			continue;
		const char *t = "hello";
		float *v = (float *)1;
		size_t d = 9;
		char err[256] = "";
		CHECK_INT(e->embed(e, &t, 1, &v, &d, err, sizeof err), A2M_EMBED_ETIMEOUT);
		CHECK(v == NULL);
		CHECK_INT(d, 0);
		CHECK(strstr(err, "100 ms") != NULL);
		e->destroy(e);
	}
	/* The same embedder, once the server answers in time again: with a
	** timeout that a server under valgrind still meets when not stalled. */
	a2m_embedder *e = make("ollama", url_of(&slow, NULL), 0, 1500, NULL);
	const char *t = "hello again";
	float *v = NULL;
	size_t d = 0;
	CHECK(e && e->embed(e, &t, 1, &v, &d, NULL, 0) == A2M_EMBED_ETIMEOUT);
	CHECK_INT(server_stop(&slow), 0);
	CHECK_INT(server_start_on(&fast, port), 0);
	if (e && fast.pid > 0) {
		char err[256] = "";
		CHECK_INT(e->embed(e, &t, 1, &v, &d, err, sizeof err), 0);
		CHECK(v && d == DIMS && mismatches(&t, 1, v, d) == 0);
		free(v);
	}
	if (e)
		e->destroy(e);
	if (fast.pid > 0)
		CHECK_INT(server_stop(&fast), 0);
}

static void test_unreachable_is_eunreachable_and_the_embedder_recovers(void)
{
	server s;
	CHECK_INT(server_start_on(&s, 0), 0);
	if (s.pid <= 0)
		return;
	int port = s.port;
	a2m_embedder *e[2];
	const char *t[] = {"first call", "second"};
	for (size_t k = 0; k < 2; k++) {
		e[k] = make(kinds[k], url_of(&s, NULL), 0, 0, NULL);
		float *v = NULL;
		size_t d = 0;
		/* A first call leaves a kept-alive connection behind. */
		CHECK(e[k] && e[k]->embed(e[k], t, 2, &v, &d, NULL, 0) == 0);
		free(v);
	}
	CHECK_INT(server_stop(&s), 0);
	for (size_t k = 0; k < 2; k++) {
		if (!e[k])
			continue;
		float *v = (float *)1;
		size_t d = 3;
		char err[256] = "";
		/* Twice: the dead kept-alive connection, then a refused new one. */
		for (int round = 0; round < 2; round++) {
			CHECK_INT(e[k]->embed(e[k], t, 2, &v, &d, err, sizeof err),
				  A2M_EMBED_EUNREACHABLE);
			CHECK(v == NULL);
			CHECK_INT(d, 0);
			CHECK(err[0] != '\0');
		}
	}
	CHECK_INT(server_start_on(&s, port), 0);
	for (size_t k = 0; k < 2; k++) {
		if (!e[k])
			continue;
		float *v = NULL;
		size_t d = 0;
		char err[256] = "";
		if (s.pid > 0) {
			CHECK_INT(e[k]->embed(e[k], t, 2, &v, &d, err, sizeof err), 0);
			CHECK(v && d == DIMS && mismatches(t, 2, v, d) == 0);
		}
		free(v);
		e[k]->destroy(e[k]);
	}
	if (s.pid > 0)
		CHECK_INT(server_stop(&s), 0);
}

static void test_bad_arguments_are_einval_and_send_nothing(void)
{
	a2m_embedder *e = make("ollama", url_of(&main_srv, NULL), 0, 0, NULL);
	CHECK(e != NULL);
	if (!e)
		return;
	stats before = get_stats(&main_srv);
	float *v = (float *)1;
	size_t d = 5;
	char err[256] = "";
	const char *with_null[] = {"a", NULL};
	CHECK_INT(e->embed(e, with_null, 2, &v, &d, err, sizeof err), A2M_EMBED_EINVAL);
	CHECK(v == NULL && d == 0 && strstr(err, "text 1") != NULL);
	const char *bad_utf8[] = {"fine", "caf\xc3", "fine"};
	CHECK_INT(e->embed(e, bad_utf8, 3, &v, &d, err, sizeof err), A2M_EMBED_EINVAL);
	CHECK(v == NULL && d == 0 && strstr(err, "text 1") != NULL);
	e->destroy(e);
	/* Batches of one: the bad text is the third request's, yet nothing
	** at all is sent, and the index named is the caller's, not the batch's. */
	e = make("openai", url_of(&main_srv, NULL), 1, 0, NULL);
	CHECK(e != NULL);
	if (!e)
		return;
	CHECK_INT(e->embed(e, bad_utf8, 3, &v, &d, err, sizeof err), A2M_EMBED_EINVAL);
	CHECK(v == NULL && d == 0 && strstr(err, "text 1") != NULL);
	const char *bad_last[] = {"fine", "fine", "fine", "\xff"};
	CHECK_INT(e->embed(e, bad_last, 4, &v, &d, err, sizeof err), A2M_EMBED_EINVAL);
	CHECK(strstr(err, "text 3") != NULL);
	CHECK_INT(e->embed(e, NULL, 1, &v, &d, err, sizeof err), A2M_EMBED_EINVAL);
	CHECK_INT(e->embed(e, with_null, 1, NULL, &d, err, sizeof err), A2M_EMBED_EINVAL);
	CHECK_INT(e->embed(e, with_null, 1, &v, NULL, NULL, 0), A2M_EMBED_EINVAL);
	CHECK_INT(get_stats(&main_srv).requests, before.requests);
	e->destroy(e);
}

static void test_bad_configuration_is_refused_without_contacting_anyone(void)
{
	static const struct {
		a2m_embedder_config cfg;
		const char *in_message;
	} cases[] = {
		{{.kind = "cohere", .url = "http://127.0.0.1:1"}, "unknown kind"},
		{{.kind = "openai"}, "URL is required"},
		{{.kind = "openai", .url = ""}, "URL is required"},
		{{.kind = "ollama", .url = "ftp://127.0.0.1:1"}, "http://"},
		{{.kind = "ollama", .url = "127.0.0.1:11434"}, "http://"},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		char err[256] = "";
		a2m_embedder *e = a2m_embedder_new(&cases[c].cfg, err, sizeof err);
		CHECK(e == NULL);
		CHECK(strstr(err, cases[c].in_message) != NULL);
		if (e)
			e->destroy(e);
	}
	/* Defaults: no configuration at all is Ollama on its usual port, and
	** construction does not need the server to be up. */
	char err[8] = "x";
	a2m_embedder *e = a2m_embedder_new(NULL, err, sizeof err);
	CHECK(e != NULL);
	CHECK_STR(err, "");
	if (e) {
		CHECK_STR(e->kind, "ollama");
		CHECK_STR(e->model(e), "bge-m3");
		e->destroy(e);
	}
	a2m_embedder_config cfg = {.kind = "openai", .url = "https://api.example.invalid/v1"};
	e = a2m_embedder_new(&cfg, NULL, 0);
	CHECK(e != NULL);
	if (e)
		e->destroy(e);
}

static void test_texts_sharing_words_are_nearer(void)
{
	/* What later tests of vector recall lean on (tests/embed_server.c). */
	const char *const t[] = {"the cat sat on the mat", "a cat on a mat",
				 "quarterly revenue report"};
	a2m_embedder *e = make("ollama", url_of(&main_srv, NULL), 0, 0, NULL);
	CHECK(e != NULL);
	if (!e)
		return;
	float *v = NULL;
	size_t d = 0;
	CHECK_INT(e->embed(e, t, 3, &v, &d, NULL, 0), 0);
	if (v && d == DIMS) {
		CHECK(cosine(v, v + d, d) > cosine(v, v + 2 * d, d));
		CHECK_NEAR(cosine(v, v, d), 1.0, 1e-6);
	}
	free(v);
	e->destroy(e);
}

typedef struct worker {
	a2m_embedder *e;
	int           failures;
} worker;

static void *worker_run(void *arg)
{
	worker *w = arg;
	for (int i = 0; i < 20; i++) {
		char a[32], b[32];
		snprintf(a, sizeof a, "thread text %d", i);
		snprintf(b, sizeof b, "another %d", i * 7);
		const char *t[] = {a, b};
		float *v = NULL;
		size_t d = 0;
		if (w->e->embed(w->e, t, 2, &v, &d, NULL, 0) != 0 || d != DIMS ||
		    mismatches(t, 2, v, d) != 0)
			w->failures++;
		free(v);
	}
	return NULL;
}

static void test_calls_from_several_threads_are_safe(void)
{
	a2m_embedder *e = make("openai", url_of(&main_srv, NULL), 1, 0, NULL);
	CHECK(e != NULL);
	if (!e)
		return;
	worker w[3] = {{e, 0}, {e, 0}, {e, 0}};
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		CHECK_INT(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		CHECK_INT(w[i].failures, 0);
	}
	e->destroy(e);
}

static void test_strerror_names_every_status(void)
{
	CHECK_STR(a2m_embed_strerror(A2M_EMBED_OK), "ok");
	CHECK_STR(a2m_embed_strerror(A2M_EMBED_EINVAL), "invalid argument");
	CHECK_STR(a2m_embed_strerror(A2M_EMBED_ENOMEM), "out of memory");
	CHECK_STR(a2m_embed_strerror(A2M_EMBED_EUNREACHABLE), "unreachable");
	CHECK_STR(a2m_embed_strerror(A2M_EMBED_ETIMEOUT), "timed out");
	CHECK_STR(a2m_embed_strerror(A2M_EMBED_EHTTP), "HTTP error");
	CHECK_STR(a2m_embed_strerror(A2M_EMBED_EPROTO), "bad response");
	CHECK_STR(a2m_embed_strerror(-99), "unknown");
}

/* ---- main ---- */

static char default_path[4096];

int main(int argc, char **argv)
{
	/* The servers are on 127.0.0.1: no proxy may stand in between. */
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
	if (access(server_path, X_OK) != 0) {
		/* A missing helper is a build bug, never a reason to skip. */
		printf("FAIL embed_server: %s is missing or not executable\n", server_path);
		printf("0 passed, 1 failed\n");
		return 1;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (server_start_on(&main_srv, 0) != 0) {
		printf("FAIL embed_server: %s did not start\n", server_path);
		printf("0 passed, 1 failed\n");
		return 1;
	}

	static const test_case tests[] = {
		TEST(test_vectors_are_the_servers_exactly),
		TEST(test_openai_vectors_are_placed_by_index_not_position),
		TEST(test_openai_without_index_is_read_by_position),
		TEST(test_batch_splits_into_ceil_n_over_batch_requests),
		TEST(test_default_batch_is_64_texts_per_request),
		TEST(test_zero_texts_send_no_request),
		TEST(test_default_model_is_bge_m3),
		TEST(test_configured_model_is_sent_and_copied),
		TEST(test_url_may_be_a_base_or_the_endpoint),
		TEST(test_http_error_status_is_ehttp_with_the_servers_message),
		TEST(test_messages_cut_to_fit_stay_valid_utf8),
		TEST(test_malformed_json_is_eproto),
		TEST(test_wrong_shape_is_eproto),
		TEST(test_fewer_vectors_than_texts_is_eproto),
		TEST(test_vectors_of_different_widths_in_one_answer_are_eproto),
		TEST(test_widths_differing_across_requests_of_one_call_are_eproto),
		TEST(test_component_beyond_float_range_is_eproto),
		TEST(test_openai_repeated_index_is_eproto),
		TEST(test_api_key_is_sent_as_bearer_and_never_echoed),
		TEST(test_timeout_is_etimeout_and_the_embedder_recovers),
		TEST(test_unreachable_is_eunreachable_and_the_embedder_recovers),
		TEST(test_bad_arguments_are_einval_and_send_nothing),
		TEST(test_bad_configuration_is_refused_without_contacting_anyone),
		TEST(test_texts_sharing_words_are_nearer),
		TEST(test_calls_from_several_threads_are_safe),
		TEST(test_strerror_names_every_status),
		{NULL, NULL},
	};
	int rc = run_tests(tests);
	int status = server_stop(&main_srv);
	if (status != 0) {
		printf("FAIL embed_server exited with status %d\n", status);
		rc = 1;
	}
	curl_global_cleanup();
	return rc;
}
