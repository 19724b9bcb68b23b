/*
** test_pg_faults.c — what a PostgreSQL deployment of a2m servers survives,
** and how a server is told where it is, checked through the protocol only
** (tests/pg_servers.h): PostgreSQL stopped as by a crash and started again
** mid-load (a clear "store unavailable" error, the same server
** reconnecting, nothing acknowledged lost, no batch half written); a
** server killed with -9 mid-write; no password in any log; a read-only
** server on a streaming hot standby (pg_basebackup); $A2M_POSTGRES and the
** config file.
**
** Needs $A2M_TEST_POSTGRES (the shared test server) and scripts/pg.sh, with
** which it starts a cluster of its own to crash and copy
** ($A2M_TEST_PG_SH overrides the script's path).
*/
#include "check.h"
#include "pg_servers.h"

/* ---- faults --------------------------------------------------------------------------------- */

/*
** A writer of batches of three records with client ids, noting which
** batches were acknowledged and what the failures said, until told to stop.
*/
typedef struct batcher {
	a2m_client   *c;
	int           acked[2000];   /* 1: acknowledged; -1: failed */
	int           batches;
	int           unavailable;   /* failures that said the store is unavailable */
	int           other;         /* any other failure */
	char          other_why[256];
	int           after_ok;      /* acknowledged after stop_after_failures was seen */
	_Atomic int   stop;
} batcher;

static void *batch_writer(void *arg)
{
	batcher *w = arg;
	while (!atomic_load(&w->stop) && w->batches < 2000) {
		int b = w->batches;
		json_t *recs = json_array();
		for (int k = 0; k < 3; k++) {
			char id[32];
			snprintf(id, sizeof id, "b%d-%d", b, k);
			json_array_append_new(recs, json_pack("{s:s,s:s,s:s,s:{s:i}}", "id", id,
							      "content", "fault test record", "tier",
							      "semantic", "metadata", "batch", b));
		}
		json_t *resp = req(w->c, "memory/remember", json_pack("{s:o}", "records", recs));
		if (!resp) {
			w->acked[b] = -1;
			w->batches++;
			break;  /* the server is gone (killed) */
		}
		if (json_array_size(json_object_get(result_of(resp), "ids")) == 3) {
			w->acked[b] = 1;
			if (w->unavailable)
				w->after_ok++;
		} else {
			w->acked[b] = -1;
			if (code_of(resp) == -32603 && strstr(message_of(resp), "store unavailable"))
				w->unavailable++;
			else {
				w->other++;
				snprintf(w->other_why, sizeof w->other_why, "%d %s", code_of(resp),
					 message_of(resp));
			}
		}
		json_decref(resp);
		w->batches++;
		sleep_ms(5);
	}
	return NULL;
}

/*
** Every acknowledged batch is there, whole; every other one is there whole
** or not at all: read through c.
*/
static void check_batches(a2m_client *c, const batcher *w)
{
	json_t *recs = timeline(c, json_pack("{s:s}", "tier", "semantic"));
	int count[2000] = {0};
	json_t *r;
	size_t i;
	json_array_foreach(recs, i, r) {
		int b = (int)json_integer_value(json_object_get(json_object_get(r, "metadata"), "batch"));
		if (b >= 0 && b < 2000)
			count[b]++;
	}
	json_decref(recs);
	int lost = 0, half = 0;
	for (int b = 0; b < w->batches; b++) {
		if (w->acked[b] == 1 && count[b] != 3)
			lost++;
		if (count[b] != 0 && count[b] != 3)
			half++;
	}
	CHECK_INT(lost, 0);
	CHECK_INT(half, 0);
}

/* A cluster of the test's own under dir (pg.sh start), its string in conn. */
static int own_cluster(const char *dir, char *conn, size_t size)
{
	char args[600];
	snprintf(args, sizeof args, "start %s", dir);
	if (pg_sh_run(args, conn, size) != 0) {
		fprintf(stderr, "  pg.sh start: %s\n", conn);
		return -1;
	}
	/* The connection string is the last line printed. */
	char *last = strrchr(conn, '\n');
	if (last)
		memmove(conn, last + 1, strlen(last + 1) + 1);
	return 0;
}

static char fault_dir[256], fault_conn[512];

static void test_postgres_crash_and_restart_mid_load(void)
{
	if (!fault_conn[0]) {
		CHECK(!"a cluster of its own");
		return;
	}
	char conninfo[700], args[400];
	snprintf(conninfo, sizeof conninfo, "%s options='-csearch_path=crash'", fault_conn);
	batcher *w = calloc(1, sizeof *w);
	w->c = serve_on(conninfo, NULL);
	CHECK(w->c != NULL);
	pthread_t t;
	pthread_create(&t, NULL, batch_writer, w);
	sleep_ms(800);
	snprintf(args, sizeof args, "crash %s", fault_dir);
	CHECK_INT(pg_sh_run(args, NULL, 0), 0);
	sleep_ms(1500);
	snprintf(args, sizeof args, "restart %s", fault_dir);
	CHECK_INT(pg_sh_run(args, NULL, 0), 0);
	/* The same server, reconnected by itself: writes go through again. */
	double until = now_s() + 20;
	while (now_s() < until && w->after_ok < 20)
		sleep_ms(50);
	atomic_store(&w->stop, 1);
	pthread_join(t, NULL);
	CHECK(w->unavailable > 0);
	CHECK(w->after_ok >= 20);
	CHECK_INT(w->other, 0);
	if (w->other)
		fprintf(stderr, "  another failure: %s\n", w->other_why);
	check_batches(w->c, w);
	a2m_client_free(w->c);
	free(w);
}

static void test_server_killed_mid_write_loses_nothing_acknowledged(void)
{
	deployment d;
	deployment_new(&d, "kill", NULL);
	batcher *w = calloc(1, sizeof *w);
	w->c = serve(&d);
	json_decref(req(w->c, "memory/describe", NULL));
	pthread_t t;
	pthread_create(&t, NULL, batch_writer, w);
	sleep_ms(700);
	a2m_client_kill(w->c);
	pthread_join(t, NULL);
	CHECK(w->batches > 5);
	a2m_client *c = serve(&d);
	check_batches(c, w);
	a2m_client_free(c);
	a2m_client_free(w->c);
	free(w);
	deployment_drop(&d);
}

/* Whether file holds needle. */
static int file_has(const char *file, const char *needle)
{
	FILE *f = fopen(file, "r");
	char buf[65536];
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

static void test_no_password_is_ever_logged(void)
{
	static const char secret[] = "Sup3rS3cretPw";
	char log[128], cmd[2048];
	snprintf(log, sizeof log, "/tmp/a2m-test-pg-log-%d", (int)getpid());
	/* Refused at open: a key=value string, then a URL. */
	const char *strings[] = {
		"host=127.0.0.1 port=1 dbname=a2m user=nobody password=Sup3rS3cretPw connect_timeout=2",
		"postgresql://nobody:Sup3rS3cretPw@127.0.0.1:1/a2m?connect_timeout=2"};
	for (int i = 0; i < 2; i++) {
		snprintf(cmd, sizeof cmd, "%s serve --log-level debug --postgres '%s' </dev/null 2>%s",
			 a2m_bin, strings[i], log);
		int st = system(cmd);
		CHECK(st != 0);
		CHECK(file_has(log, "store unavailable"));
		CHECK(file_has(log, "127.0.0.1"));
		CHECK(!file_has(log, secret));
	}
	/* Served: the start-up line over HTTP names the store without it. */
	snprintf(cmd, sizeof cmd, "timeout -s TERM 3 %s serve --log-level debug --http 127.0.0.1:0"
		 " --postgres \"%s password=%s options='-csearch_path=a2m_ps_pw_%d'\" 2>%s",
		 a2m_bin, pg_test_server(), secret, (int)getpid(), log);
	CHECK(system(cmd) != -1);
	CHECK(file_has(log, "listening on"));
	CHECK(file_has(log, "store postgres"));
	CHECK(!file_has(log, secret));
	unlink(log);
	char schema[64];
	snprintf(schema, sizeof schema, "a2m_ps_pw_%d", (int)getpid());
	pg_test_schema_drop(schema);
}

static void test_read_only_server_on_a_hot_standby(void)
{
	char standby[512], args[400], primary[700], replica[700];
	if (!fault_conn[0]) {
		CHECK(!"a cluster of its own");
		return;
	}
	snprintf(args, sizeof args, "standby %s", fault_dir);
	if (pg_sh_run(args, standby, sizeof standby) != 0) {
		fprintf(stderr, "  pg.sh standby: %s\n", standby);
		CHECK(!"a standby");
		return;
	}
	char *last = strrchr(standby, '\n');
	if (last)
		memmove(standby, last + 1, strlen(last + 1) + 1);
	snprintf(primary, sizeof primary, "%s options='-csearch_path=rep'", fault_conn);
	snprintf(replica, sizeof replica, "%s options='-csearch_path=rep'", standby);
	a2m_client *p = serve_on(primary, NULL);
	json_decref(req(p, "memory/remember", json_pack("{s:[{s:s,s:s,s:s}]}", "records", "id",
							"before", "content", "the schema exists",
							"tier", "semantic")));
	/* The standby replays the schema: a read-only server opens once it has. */
	a2m_client *r = NULL;
	json_t *resp = NULL;
	for (double until = now_s() + 15; now_s() < until; sleep_ms(200)) {
		r = serve_on(replica, "--read-only");
		resp = req(r, "memory/describe", NULL);
		if (result_of(resp))
			break;
		json_decref(resp);
		resp = NULL;
		a2m_client_free(r);
		r = NULL;
	}
	CHECK(r != NULL);
	json_decref(resp);
	/* A write through the primary's server becomes visible through the standby's. */
	json_decref(req(p, "memory/remember",
			json_pack("{s:[{s:s,s:s,s:s}]}", "records", "id", "replicated", "content",
				  "the replicated lighthouse fact", "tier", "semantic")));
	int seen = 0;
	for (double until = now_s() + 15; r && !seen && now_s() < until; sleep_ms(100)) {
		resp = req(r, "memory/recall", json_pack("{s:s}", "query", "lighthouse"));
		json_t *first = json_array_get(json_object_get(result_of(resp), "records"), 0);
		seen = first && strcmp(json_string_value(json_object_get(first, "id")),
				       "replicated") == 0;
		json_decref(resp);
	}
	CHECK_INT(seen, 1);
	json_t *recs = timeline(r, json_pack("{s:s}", "tier", "semantic"));
	CHECK_INT(json_array_size(recs), 2);
	json_decref(recs);
	resp = req(r, "memory/remember",
		   json_pack("{s:[{s:s}]}", "records", "content", "refused on a replica"));
	CHECK_INT(code_of(resp), -32004);
	json_decref(resp);
	resp = req(r, "memory/events", NULL);
	CHECK(json_string_value(json_object_get(result_of(resp), "cursor")) != NULL);
	json_decref(resp);
	a2m_client_free(r);
	a2m_client_free(p);
	snprintf(args, sizeof args, "stop %s standby", fault_dir);
	pg_sh_run(args, NULL, 0);
}

/* ---- how a server is told where the deployment is ----------------------------------------------- */

/* describe's scorer.index through c ("postgres", "sqlite", ...). */
static char *index_of(a2m_client *c)
{
	json_t *resp = req(c, "memory/describe", NULL);
	const char *ix = json_string_value(json_object_get(
		json_object_get(result_of(resp), "scorer"), "index"));
	char *out = strdup(ix ? ix : "?");
	json_decref(resp);
	return out;
}

static void test_environment_and_config_file_name_the_deployment(void)
{
	deployment d;
	char cfg[128], db[128], *ix;
	deployment_new(&d, "env", NULL);
	setenv("A2M_POSTGRES", d.conninfo, 1);
	char *plain[] = {a2m_bin, "serve", NULL};
	a2m_client *c = NULL;
	CHECK(a2m_client_spawn_stdio(plain, &c) == A2M_CLIENT_OK);
	CHECK_STR(ix = index_of(c), "postgres");
	free(ix);
	a2m_client_free(c);
	unsetenv("A2M_POSTGRES");
	snprintf(cfg, sizeof cfg, "/tmp/a2m-test-pg-%d.json", (int)getpid());
	snprintf(db, sizeof db, "/tmp/a2m-test-pg-%d.db", (int)getpid());
	FILE *f = fopen(cfg, "w");
	json_t *file = json_pack("{s:s}", "postgres", d.conninfo);
	json_dumpf(file, f, 0);
	json_decref(file);
	fclose(f);
	char *with_file[] = {a2m_bin, "serve", "--config", cfg, NULL};
	CHECK(a2m_client_spawn_stdio(with_file, &c) == A2M_CLIENT_OK);
	CHECK_STR(ix = index_of(c), "postgres");
	free(ix);
	a2m_client_free(c);
	/* A store the flags name wins over the file's. */
	char *flags_win[] = {a2m_bin, "serve", "--db", db, "--config", cfg, NULL};
	CHECK(a2m_client_spawn_stdio(flags_win, &c) == A2M_CLIENT_OK);
	CHECK_STR(ix = index_of(c), "sqlite");
	free(ix);
	a2m_client_free(c);
	unlink(cfg);
	check_remove_db(db);
	deployment_drop(&d);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (!servers_init(argv[0]))
		return 0;
	/* A cluster of its own for the checks that crash and copy one. */
	snprintf(fault_dir, sizeof fault_dir, "/tmp/a2m-test-pg-faults-%d", (int)getpid());
	if (own_cluster(fault_dir, fault_conn, sizeof fault_conn) != 0)
		fault_conn[0] = '\0';
	static const test_case tests[] = {
		TEST(test_postgres_crash_and_restart_mid_load),
		TEST(test_server_killed_mid_write_loses_nothing_acknowledged),
		TEST(test_no_password_is_ever_logged),
		TEST(test_read_only_server_on_a_hot_standby),
		TEST(test_environment_and_config_file_name_the_deployment),
		{NULL, NULL}
	};
	int rc = run_tests(tests);
	if (fault_conn[0]) {
		char args[300];
		snprintf(args, sizeof args, "stop %s all", fault_dir);
		pg_sh_run(args, NULL, 0);
	}
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf %s", fault_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", fault_dir);
	return rc;
}
