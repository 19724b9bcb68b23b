/*
** pg_servers.h — what the multi-server PostgreSQL tests share
** (test_pg_servers.c, test_pg_faults.c; header-only): a2m serve processes
** on a deployment, spoken to over stdio through include/a2m_client.h, never
** a store opened in the test's process; and scripts/pg.sh for the clusters
** a test stops, crashes and copies.
*/
#ifndef A2M_TEST_PG_SERVERS_H
#define A2M_TEST_PG_SERVERS_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m_client.h"
#include "client/client_json.h"
#include "check.h"
#include "pg_helper.h"

/* The a2m binary next to the test's directory, and scripts/pg.sh. */
static char a2m_bin[512];
static const char *pg_sh = "scripts/pg.sh";

/* ---- servers ---------------------------------------------------------------- */

/* One deployment: a schema of a server, and the string naming both. */
typedef struct deployment {
	char schema[64];
	char conninfo[700];
	const char *config;   /* a config file its servers start with (NULL: none) */
} deployment;

/*
** A deployment named after what (and this run) on the server at base (NULL:
** the shared test server), with nothing in it yet: its schema is dropped,
** so the first server to open it creates it.
*/
static inline void deployment_new(deployment *d, const char *what, const char *base)
{
	snprintf(d->schema, sizeof d->schema, "a2m_ps_%s_%d", what, (int)getpid());
	snprintf(d->conninfo, sizeof d->conninfo, "%s options='-csearch_path=%s'",
		 base ? base : pg_test_server(), d->schema);
	d->config = NULL;
	if (!base)
		pg_test_schema_drop(d->schema);
}

static inline void deployment_drop(const deployment *d)
{
	pg_test_schema_drop(d->schema);
}

/* `a2m serve --postgres <conninfo> [extra...]` (at most 4) on stdio; NULL on failure. */
static inline a2m_client *serve_args(const char *conninfo, const char *const *extra, int n_extra)
{
	char *argv[9] = {a2m_bin, "serve", "--postgres", (char *)conninfo, NULL};
	int n = 4;
	for (int i = 0; i < n_extra && i < 4; i++)
		argv[n++] = (char *)extra[i];
	a2m_client *c = NULL;
	if (a2m_client_spawn_stdio(argv, &c) != A2M_CLIENT_OK) {
		fprintf(stderr, "  spawn: %s\n", a2m_client_spawn_errmsg());
		return NULL;
	}
	a2m_client_set_timeout(c, 30000);
	return c;
}

/* `a2m serve --postgres <conninfo> [extra]` on stdio; NULL on failure. */
static inline a2m_client *serve_on(const char *conninfo, const char *extra)
{
	return serve_args(conninfo, &extra, extra ? 1 : 0);
}

/* A server of d, with d's config file when it has one. */
static inline a2m_client *serve(const deployment *d)
{
	const char *extra[2] = {"--config", d->config};
	return serve_args(d->conninfo, extra, d->config ? 2 : 0);
}

static inline json_t *req(a2m_client *c, const char *method, json_t *params)
{
	json_t *resp = NULL;
	if (!c || a2m_client_request_json(c, method, params, &resp) != A2M_CLIENT_OK)
		resp = NULL;
	json_decref(params);
	return resp;
}

/* Opens the deployment once with one server (which makes its schema). */
static inline void prepare(const deployment *d)
{
	a2m_client *c = serve(d);
	json_decref(req(c, "memory/describe", NULL));
	a2m_client_free(c);
}

static inline json_t *result_of(const json_t *resp)
{
	return json_object_get(resp, "result");
}

/* The error code of resp, 0 when it is a result. */
static inline int code_of(const json_t *resp)
{
	return (int)json_integer_value(json_object_get(json_object_get(resp, "error"), "code"));
}

static inline const char *message_of(const json_t *resp)
{
	const char *m = json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
	return m ? m : "";
}

/* Records of a timeline of every record (at most 1000) through c, with extra params. */
static inline json_t *timeline(a2m_client *c, json_t *extra)
{
	json_t *p = extra ? extra : json_object();
	json_object_set_new(p, "limit", json_integer(1000));
	json_t *resp = req(c, "memory/timeline", p);
	json_t *recs = json_incref(json_object_get(result_of(resp), "records"));
	json_decref(resp);
	return recs ? recs : json_array();
}

/* describe's count of tier through c, or -1. */
static inline long long tier_count(a2m_client *c, const char *tier)
{
	json_t *resp = req(c, "memory/describe", NULL);
	json_t *t;
	size_t i;
	long long n = -1;
	json_array_foreach(json_object_get(result_of(resp), "tiers"), i, t) {
		if (strcmp(json_string_value(json_object_get(t, "name")), tier) == 0)
			n = json_integer_value(json_object_get(t, "count"));
	}
	json_decref(resp);
	return n;
}

static inline double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline void sleep_ms(long ms)
{
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

/* Runs `scripts/pg.sh ARGS`, its output to out (size bytes; NULL: dropped). Returns its status. */
static inline int pg_sh_run(const char *args, char *out, size_t size)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s %s 2>&1", pg_sh, args);
	FILE *f = popen(cmd, "r");
	if (!f)
		return -1;
	size_t n = 0;
	char buf[512];
	while (fgets(buf, sizeof buf, f)) {
		if (out && n + strlen(buf) < size) {
			memcpy(out + n, buf, strlen(buf) + 1);
			n += strlen(buf);
		}
	}
	int st = pclose(f);
	if (out) {
		while (n && (out[n - 1] == '\n'))
			out[--n] = '\0';
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}


/*
** Finds a2m beside the test (argv0's directory, then ..) and pg.sh. Returns
** 0 (saying so, with a closing line of no tests) when there is no test
** server: the caller then exits 0.
*/
static inline int servers_init(const char *argv0)
{
	const char *slash = strrchr(argv0, '/');
	snprintf(a2m_bin, sizeof a2m_bin, "%.*s../a2m", slash ? (int)(slash - argv0 + 1) : 0,
		 argv0);
	if (getenv("A2M_TEST_PG_SH"))
		pg_sh = getenv("A2M_TEST_PG_SH");
	signal(SIGPIPE, SIG_IGN);
	if (pg_test_server())
		return 1;
	printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
	printf("0 passed, 0 failed\n");
	return 0;
}

#endif
