/*
** embed_harness.h — what tests/test_embed.c (which includes it once) runs
** its rules against: the helper server (tests/embed_server) started and
** stopped, its /stats read, the vector it answers computed here
** independently, and the embedders made for it.
*/
#ifndef A2M_TEST_EMBED_HARNESS_H
#define A2M_TEST_EMBED_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
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

#include "check.h"
#include "embed/embedder.h"

#define DIMS 8               /* the server's default width */
#define START_TIMEOUT_MS 20000

static const char *server_path;

/* ---- the helper server ---- */

typedef struct server {
	pid_t pid;
	int   port;
} server;

/*
** Starts embed_server with args (NULL-terminated, after the program name)
** and reads the port it printed. Returns 0, or -1 (reported) on failure.
*/
static int server_start(server *s, const char *const *args)
{
	const char *argv[16];
	size_t n = 0;
	argv[n++] = server_path;
	for (; args && *args && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	int fd[2];
	s->pid = -1;
	s->port = 0;
	if (pipe(fd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		/* Should this test die, the server follows it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(fd[1], STDOUT_FILENO);
		close(fd[0]);
		close(fd[1]);
		execv(server_path, (char *const *)argv);
		_exit(127);
	}
	close(fd[1]);
	s->pid = pid;
	char line[32];
	size_t len = 0;
	while (len + 1 < sizeof line) {
		struct pollfd p = {.fd = fd[0], .events = POLLIN};
		if (poll(&p, 1, START_TIMEOUT_MS) <= 0)
			break;
		ssize_t r = read(fd[0], line + len, 1);
		if (r <= 0 || line[len] == '\n')
			break;
		len++;
	}
	line[len] = '\0';
	close(fd[0]);
	s->port = atoi(line);
	if (s->port <= 0) {
		fprintf(stderr, "  embed_server did not report a port (got \"%s\")\n", line);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		s->pid = -1;
		return -1;
	}
	return 0;
}

/* Stops the server with SIGTERM; returns its exit status (0 expected). */
static int server_stop(server *s)
{
	if (s->pid <= 0)
		return -1;
	int status = 0;
	kill(s->pid, SIGTERM);
	while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
		;
	s->pid = -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A plain server on the given port (0: any free one). */
static int server_start_on(server *s, int port)
{
	char p[16];
	snprintf(p, sizeof p, "%d", port);
	const char *args[] = {p, NULL};
	return server_start(s, args);
}

static server main_srv;

/* ---- reading /stats ---- */

typedef struct stats {
	long long requests, texts;
	char      model[128];
} stats;

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

static stats get_stats(const server *s)
{
	stats st = {-1, -1, ""};
	char url[64], *body = NULL;
	snprintf(url, sizeof url, "http://127.0.0.1:%d/stats", s->port);
	CURL *k = curl_easy_init();
	if (!k)
		return st;
	curl_easy_setopt(k, CURLOPT_URL, url);
	curl_easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(k, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(k, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(k, CURLOPT_TIMEOUT_MS, 10000L);
	if (curl_easy_perform(k) == CURLE_OK && body) {
		json_t *v = json_loads(body, 0, NULL);
		st.requests = json_integer_value(json_object_get(v, "requests"));
		st.texts = json_integer_value(json_object_get(v, "texts"));
		snprintf(st.model, sizeof st.model, "%s",
			 json_string_value(json_object_get(v, "model")) ?: "");
		json_decref(v);
	}
	free(body);
	curl_easy_cleanup(k);
	return st;
}

/* ---- the server's vector, computed here independently ---- */

static int word_byte(unsigned char c)
{
	return c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z');
}

/* Must agree bit for bit with text_vector() in tests/embed_server.c. */
static void expected_vector(const char *text, size_t d, float *out)
{
	double acc[64] = {0};
	const unsigned char *p = (const unsigned char *)text;
	int words = 0;
	while (*p) {
		if (!word_byte(*p)) {
			p++;
			continue;
		}
		uint32_t h = 2166136261u;
		for (; word_byte(*p); p++)
			h = (h ^ (unsigned char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p)) * 16777619u;
		acc[h % d] += 1.0;
		words++;
	}
	if (!words)
		acc[0] = 1.0;
	double norm = 0;
	for (size_t i = 0; i < d; i++)
		norm += acc[i] * acc[i];
	norm = sqrt(norm);
	for (size_t i = 0; i < d; i++)
		out[i] = (float)(acc[i] / norm);
}

/* Counts the components of got that differ from the expected vectors. */
static size_t mismatches(const char *const *texts, size_t n, const float *got, size_t d)
{
	size_t bad = 0;
	float want[64];
	for (size_t i = 0; i < n; i++) {
		expected_vector(texts[i], d, want);
		for (size_t j = 0; j < d; j++)
			bad += got[i * d + j] != want[j];
	}
	return bad;
}

static double cosine(const float *a, const float *b, size_t d)
{
	double ab = 0, aa = 0, bb = 0;
	for (size_t i = 0; i < d; i++) {
		ab += (double)a[i] * b[i];
		aa += (double)a[i] * a[i];
		bb += (double)b[i] * b[i];
	}
	return ab / sqrt(aa * bb);
}

/* ---- embedders ---- */

static char url_buf[256];

/* "http://127.0.0.1:PORT" + suffix (static buffer). */
static const char *url_of(const server *s, const char *suffix)
{
	snprintf(url_buf, sizeof url_buf, "http://127.0.0.1:%d%s", s->port, suffix ? suffix : "");
	return url_buf;
}

static a2m_embedder *make(const char *kind, const char *url, size_t batch, long timeout_ms,
			  const char *key)
{
	a2m_embedder_config cfg = {.kind = kind, .url = url, .batch = batch,
				   .timeout_ms = timeout_ms, .api_key = key};
	char err[256] = "";
	a2m_embedder *e = a2m_embedder_new(&cfg, err, sizeof err);
	if (!e)
		fprintf(stderr, "  a2m_embedder_new(%s, %s): %s\n", kind, url, err);
	return e;
}

static const char *const kinds[] = {"ollama", "openai"};

/* Embeds texts and expects a failure with status want; returns the message. */
static void expect_failure(const char *kind, const char *suffix, size_t batch,
			   const char *const *texts, size_t n, int want, const char *in_message)
{
	a2m_embedder *e = make(kind, url_of(&main_srv, suffix), batch, 0, NULL);
	CHECK(e != NULL);
	if (!e)
		return;
	float *v = (float *)1;
	size_t d = 99;
	char err[256] = "";
	int rc = e->embed(e, texts, n, &v, &d, err, sizeof err);
	if (rc != want)
		fprintf(stderr, "  %s %s: got %d (%s), want %d\n", kind, suffix, rc, err, want);
	CHECK_INT(rc, want);
	CHECK(v == NULL);
	CHECK_INT(d, 0);
	CHECK(err[0] != '\0');
	CHECK(strchr(err, '\n') == NULL);
	if (in_message && !strstr(err, in_message)) {
		fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", err, in_message);
		CHECK(0);
	}
	e->destroy(e);
}

static const char *const sample[] = {
	"The cat sat on the mat",
	"the CAT, the mat!",
	"",
	"... --- ...",
	"citt\xc3\xa0 \xe6\x9d\xb1\xe4\xba\xac caf\xc3\xa9",
	"one two three four five six seven eight nine ten eleven",
	"cat",
};
#define N_SAMPLE (sizeof sample / sizeof *sample)

#endif
