/*
** test_joint.c — joint transactions (server/deferred.c): the writes a
** transport hands over together run in one transaction of the stack, and
** each is answered as if it had run alone. Groups are handed over
** in-process (a2m_handle_network_deferred, then a2m_deferred_finish), so
** what one transaction holds is known: a write that fails inside it, a
** refused COMMIT, a failed sync, two writes of one key, a reader beside
** the groups, callers on several threads joining one another, and what
** the log says of a run of refused COMMITs. (Split from test_durable.c,
** which kills a server of sixteen HTTP writers mid-stream.)
*/
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "store/store.h"
#include "server/deferred.h"
#include "util/clock.h"
#include "util/text.h"

static char tmpdir[] = "/tmp/a2m-test-joint.XXXXXX";

/*
** A handle on the SQLite store name of the test directory, its path put in
** path (name NULL: path as it is, to open the store again).
*/
static a2m *open_db(char *path, size_t size, const char *name)
{
	if (name)
		snprintf(path, size, "%s/%s", tmpdir, name);
	return check_open("engine", "sqlite", "path", path, NULL);
}

/*
** Fixes h's vector width at 4 with a first record that has one (its key
** key, NULL: none): a later write of another width then fails inside its
** transaction, after its begin.
*/
static void fix_width(a2m *h, const char *key)
{
	json_t *rec = json_pack("{ss s[iiii]}", "content", "width", "embedding", 1, 0, 0, 0);
	if (key)
		json_object_set_new(rec, "key", json_string(key));
	json_decref(check_result_of(h, "memory/remember", json_pack("{s[o]}", "records", rec)));
}


/* ---- groups: writes handed over together share one transaction ---- */

#define GROUP_MAX 8

/*
** Hands the n requests to h as the HTTP binding does (each queued unrun,
** server/deferred.h), then finishes them together: one joint transaction.
** out[i]: request i's response (NULL for a notification).
*/
static void run_group(a2m *h, const char *const *msgs, size_t n, json_t **out)
{
	void *pending[GROUP_MAX];
	char *replies[GROUP_MAX];
	int status[GROUP_MAX];
	for (size_t i = 0; i < n; i++) {
		replies[i] = NULL;
		pending[i] = NULL;
		CHECK_INT(a2m_handle_network_deferred(h, msgs[i], strlen(msgs[i]), NULL, &replies[i],
						      &pending[i]), A2M_OK);
		/* Queued, not run: nothing to answer yet. */
		CHECK(pending[i] != NULL);
		CHECK(replies[i] == NULL);
	}
	a2m_deferred_finish(h, pending, replies, status, n);
	for (size_t i = 0; i < n; i++) {
		CHECK_INT(status[i], A2M_OK);
		CHECK(pending[i] == NULL);
		out[i] = replies[i] ? json_loads(replies[i], 0, NULL) : NULL;
		a2m_free(replies[i]);
	}
}

static void free_all(json_t **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_decref(v[i]);
}

/* The events after cursor (a new reference), and the new cursor in *next. */
static json_t *events_after(a2m *h, const char *cursor, char *next, size_t nextlen)
{
	json_t *res = check_result_of(h, "memory/events",
				      cursor ? json_pack("{ss si}", "cursor", cursor, "limit", 100)
					     : json_object());
	json_t *ev = json_incref(json_object_get(res, "events"));
	if (next)
		snprintf(next, nextlen, "%s",
			 json_string_value(json_object_get(res, "cursor")) ?: "");
	json_decref(res);
	return ev;
}

/* How many written events of evs name the record id. */
static int written_for(const json_t *evs, const char *id)
{
	int n = 0;
	for (size_t i = 0; i < json_array_size(evs); i++) {
		json_t *e = json_array_get(evs, i);
		const char *eid = json_string_value(json_object_get(e, "id"));
		n += eid && strcmp(eid, id) == 0;
	}
	return n;
}

static const char *first_id(const json_t *resp)
{
	json_t *ids = json_object_get(json_object_get(resp, "result"), "ids");
	return json_string_value(json_array_get(ids, 0)) ?: "";
}

/*
** A write that fails inside the group's transaction (its embedding is not
** the store's width: the check runs after its begin) is rolled back and
** answered its own error; the writes before and after it stand, each
** written once, with one event each, in order.
*/
static void test_a_failing_write_in_a_group_rolls_back_only_itself(void)
{
	char path[256], cursor[128];
	a2m *h = open_db(path, sizeof path, "group-fail.db");
	if (!h)
		return;
	fix_width(h, "width");
	json_decref(events_after(h, NULL, cursor, sizeof cursor));
	static const char *const msgs[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"first of the group\",\"key\":\"g-a\"}]}}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"second\",\"key\":\"g-b\",\"embedding\":[1,0,0]}]}}",
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"third of the group\",\"key\":\"g-c\"}]}}",
	};
	json_t *out[3];
	run_group(h, msgs, 3, out);
	CHECK(json_object_get(out[0], "result") != NULL);
	CHECK_INT(check_error_code(out[1]), A2M_EMBEDDING_MISMATCH);
	CHECK(json_object_get(out[2], "result") != NULL);
	CHECK(check_holds(h, "g-a", "first of the group"));
	CHECK(check_holds(h, "g-b", NULL));
	CHECK(check_holds(h, "g-c", "third of the group"));
	CHECK_INT((int)check_stored(h), 3);
	json_t *evs = events_after(h, cursor, NULL, 0);
	CHECK_INT((int)json_array_size(evs), 2);
	CHECK_INT(written_for(evs, first_id(out[0])), 1);
	CHECK_INT(written_for(evs, first_id(out[2])), 1);
	const char *e0 = json_string_value(json_object_get(json_array_get(evs, 0), "id"));
	CHECK(e0 && strcmp(e0, first_id(out[0])) == 0);  /* in the group's order */
	json_decref(evs);
	free_all(out, 3);
	a2m_close(h);
	/* And in the file. */
	h = open_db(path, sizeof path, NULL);
	if (!h)
		return;
	CHECK(check_holds(h, "g-a", "first of the group"));
	CHECK(check_holds(h, "g-b", NULL));
	CHECK(check_holds(h, "g-c", "third of the group"));
	a2m_close(h);
}

/*
** A group's COMMIT that fails (the test hook refuses a commit that
** inserted a key starting "doomed-") fails every write of the group, none
** of them lands, and no event of them is told; the next group writes.
*/
static void test_a_failed_commit_fails_the_whole_group(void)
{
	char path[256], cursor[128];
	a2m *h = open_db(path, sizeof path, "group-doom.db");
	if (!h)
		return;
	json_decref(events_after(h, NULL, cursor, sizeof cursor));
	a2m_sqlite_fail_commits_for_tests("doomed-");
	static const char *const msgs[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"innocent one\",\"key\":\"d-a\"}]}}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"the doomed\",\"key\":\"doomed-b\"}]}}",
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"innocent two\",\"key\":\"d-c\"}]}}",
		/* A notification: no answer, and not written either. */
		"{\"jsonrpc\":\"2.0\",\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"innocent three\",\"key\":\"d-d\"}]}}",
	};
	json_t *out[4];
	run_group(h, msgs, 4, out);
	for (int i = 0; i < 3; i++) {
		CHECK_INT(check_error_code(out[i]), A2M_INTERNAL_ERROR);
		CHECK(strstr(check_error_message(out[i]), "refused by the test") != NULL);
	}
	CHECK(out[3] == NULL);
	free_all(out, 4);
	a2m_sqlite_fail_commits_for_tests(NULL);
	CHECK(check_holds(h, "d-a", NULL));
	CHECK(check_holds(h, "doomed-b", NULL));
	CHECK(check_holds(h, "d-c", NULL));
	CHECK(check_holds(h, "d-d", NULL));
	json_t *evs = events_after(h, cursor, NULL, 0);
	CHECK_INT((int)json_array_size(evs), 0);
	json_decref(evs);
	/* The store goes on: the same writes, now without the doomed one. */
	const char *again[] = {msgs[0], msgs[2]};
	run_group(h, again, 2, out);
	CHECK(json_object_get(out[0], "result") != NULL);
	CHECK(json_object_get(out[1], "result") != NULL);
	free_all(out, 2);
	CHECK(check_holds(h, "d-a", "innocent one"));
	CHECK(check_holds(h, "d-c", "innocent two"));
	evs = events_after(h, cursor, NULL, 0);
	CHECK_INT((int)json_array_size(evs), 2);
	json_decref(evs);
	a2m_close(h);
}

/*
** Two writes of one key in one group: the second is an update of the
** record the first wrote (as it would be in the next transaction), so the
** key holds the second content, one record, under the first's id.
*/
static void test_two_writes_of_one_key_in_a_group(void)
{
	char path[256];
	a2m *h = open_db(path, sizeof path, "group-key.db");
	if (!h)
		return;
	static const char *const msgs[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"version one\",\"key\":\"same\"}]}}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"version two\",\"key\":\"same\"}]}}",
	};
	json_t *out[2];
	run_group(h, msgs, 2, out);
	CHECK(json_object_get(out[0], "result") != NULL);
	CHECK(json_object_get(out[1], "result") != NULL);
	CHECK(strcmp(first_id(out[0]), first_id(out[1])) == 0);
	free_all(out, 2);
	CHECK(check_holds(h, "same", "version two"));
	CHECK_INT((int)check_stored(h), 1);
	a2m_close(h);
	h = open_db(path, sizeof path, NULL);
	if (!h)
		return;
	CHECK(check_holds(h, "same", "version two"));
	CHECK_INT((int)check_stored(h), 1);
	a2m_close(h);
}

/* A failed sync after a group's commit fails every write of the group. */
static void test_a_failed_sync_fails_the_whole_group(void)
{
	char path[256];
	a2m *h = open_db(path, sizeof path, "group-sync.db");
	if (!h)
		return;
	static const char *const msgs[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"one\",\"key\":\"s-a\"}]}}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"two\",\"key\":\"s-b\"}]}}",
	};
	json_t *out[2];
	a2m_sqlite_sync_fail_next_for_tests(1);
	run_group(h, msgs, 2, out);
	for (int i = 0; i < 2; i++) {
		CHECK_INT(check_error_code(out[i]), A2M_INTERNAL_ERROR);
		CHECK(strstr(check_error_message(out[i]), "could not be made durable") != NULL);
	}
	free_all(out, 2);
	a2m_close(h);
}


/* ---- a write run again keeps what its first run made ---- */

static const int64_t first_ms = 1780000000000LL, again_ms = 1780000060000LL;

static void move_the_clock(void)
{
	a2m_clock_set_for_tests(again_ms);
}

/* The record under key, as memory/fetch answers it (a new reference). */
static json_t *record_of(a2m *h, const char *key)
{
	json_t *res = check_result_of(h, "memory/fetch", json_pack("{ss}", "key", key));
	json_t *rec = json_incref(json_object_get(res, "record"));
	json_decref(res);
	return rec;
}

/*
** The writes before one that fails inside the group run again without it
** (deferred.c); their records keep the ids and the time their first run
** gave them: here the clock moves on a minute before they run again, and
** the first write's record still says the first minute, its id too (an
** id begins with its time), while the write after the failed one, which
** ran only once, after the move, says the second.
*/
static void test_a_write_run_again_keeps_its_id_and_time(void)
{
	char path[256], t_first[A2M_TIMESTAMP_LEN], t_again[A2M_TIMESTAMP_LEN];
	a2m *h = open_db(path, sizeof path, "group-again.db");
	if (!h)
		return;
	fix_width(h, "width");
	static const char *const msgs[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"came first\",\"key\":\"a-a\"}]}}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"wrong width\",\"key\":\"a-b\",\"embedding\":[1,0,0]}]}}",
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"came last\",\"key\":\"a-c\"}]}}",
	};
	json_t *out[3];
	a2m_clock_set_for_tests(first_ms);
	a2m_deferred_before_again_for_tests(move_the_clock);
	run_group(h, msgs, 3, out);
	a2m_deferred_before_again_for_tests(NULL);
	a2m_clock_set_for_tests(0);
	CHECK(json_object_get(out[0], "result") != NULL);
	CHECK_INT(check_error_code(out[1]), A2M_EMBEDDING_MISMATCH);
	CHECK(json_object_get(out[2], "result") != NULL);
	a2m_clock_format(first_ms, t_first);
	a2m_clock_format(again_ms, t_again);
	json_t *a = record_of(h, "a-a"), *c = record_of(h, "a-c");
	const char *a_id = json_string_value(json_object_get(a, "id"));
	CHECK_STR(json_string_value(json_object_get(a, "created_at")) ?: "", t_first);
	CHECK_STR(a_id ?: "", first_id(out[0]));
	CHECK_STR(json_string_value(json_object_get(c, "created_at")) ?: "", t_again);
	/* The id's first ten characters are its time. */
	char made[A2M_ID_LEN];
	CHECK(a2m_id_generate(first_ms, made) == 0);
	CHECK(a_id && strncmp(a_id, made, 10) == 0);
	json_decref(a);
	json_decref(c);
	free_all(out, 3);
	a2m_close(h);
}

/* ---- what the log says ---- */

/* Starts sending stderr to path; returns the descriptor to restore. */
static int stderr_to(const char *path)
{
	fflush(stderr);
	int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (saved < 0 || fd < 0 || dup2(fd, 2) < 0) {
		CHECK(!"cannot redirect stderr");
		if (fd >= 0)
			close(fd);
		return saved;
	}
	close(fd);
	return saved;
}

static void stderr_back(int saved)
{
	fflush(stderr);
	if (saved >= 0) {
		dup2(saved, 2);
		close(saved);
	}
}

/* How many lines of the file at path contain what. */
static int lines_with(const char *path, const char *what)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[1024];
	int n = 0;
	while (fgets(line, sizeof line, f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

/*
** A run of groups whose COMMIT is refused (a full disk would refuse every
** one) is logged once, as an error naming the cause, not once a group;
** the first COMMIT that succeeds after it says, once, how many failed.
*/
static void test_a_run_of_refused_commits_is_logged_once(void)
{
	enum { ROUNDS = 20 };
	char path[256], log[256];
	snprintf(log, sizeof log, "%s/group-log.txt", tmpdir);
	a2m *h = open_db(path, sizeof path, "group-log.db");
	if (!h)
		return;
	a2m_sqlite_fail_commits_for_tests("doomed-");
	int saved = stderr_to(log);
	for (int r = 0; r < ROUNDS; r++) {
		char a[256], b[256];
		snprintf(a, sizeof a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			 "\"memory/remember\",\"params\":{\"records\":[{\"content\":"
			 "\"refused %d\",\"key\":\"r-%d\"}]}}", r, r);
		snprintf(b, sizeof b, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
			 "\"memory/remember\",\"params\":{\"records\":[{\"content\":"
			 "\"doomed %d\",\"key\":\"doomed-%d\"}]}}", r, r);
		const char *msgs[] = {a, b};
		json_t *out[2];
		run_group(h, msgs, 2, out);
		CHECK_INT(check_error_code(out[0]), A2M_INTERNAL_ERROR);
		free_all(out, 2);
	}
	a2m_sqlite_fail_commits_for_tests(NULL);
	static const char *const fine[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\",\"params\":"
		"{\"records\":[{\"content\":\"fine again\",\"key\":\"fine\"}]}}",
	};
	json_t *out[1];
	run_group(h, fine, 1, out);
	CHECK(json_object_get(out[0], "result") != NULL);
	free_all(out, 1);
	run_group(h, fine, 1, out);
	free_all(out, 1);
	stderr_back(saved);
	CHECK_INT(lines_with(log, "a2m: error: "), 1);
	CHECK_INT(lines_with(log, "a commit of 2 writes failed, each answered -32603 "
			     "(storage: commit: refused by the test)"), 1);
	CHECK_INT(lines_with(log, "a2m: warn: commits succeed again, after 20 failed commits "
			     "that refused 40 writes"), 1);
	CHECK_INT(lines_with(log, "a2m: "), 2);
	a2m_close(h);
}

/* ---- a reader beside the groups ---- */

enum { UNSEEN_ROUNDS = 50, UNSEEN_WRITES = 6 };

typedef struct peeker {
	a2m        *h;
	atomic_int  round;    /* the round whose keys to look for; -1: stop */
	atomic_int  looks, seen;
} peeker;

static void *peek(void *p)
{
	peeker *k = p;
	int r;
	while ((r = atomic_load(&k->round)) >= 0) {
		for (int i = 0; i < UNSEEN_WRITES; i++) {
			char key[64];
			snprintf(key, sizeof key, "u-%d-%d", r, i);
			if (!check_holds(k->h, key, NULL))
				atomic_fetch_add(&k->seen, 1);
			atomic_fetch_add(&k->looks, 1);
		}
	}
	return NULL;
}

/*
** Another caller reading while groups run never sees a group's writes
** before its COMMIT: here every group's COMMIT is refused (its last write
** is doomed), so a reader that ever found one of its keys saw a write that
** was never committed.
*/
static void test_readers_never_see_a_group_before_its_commit(void)
{
	char path[256];
	a2m *h = open_db(path, sizeof path, "group-unseen.db");
	if (!h)
		return;
	a2m_sqlite_fail_commits_for_tests("doomed-");
	static peeker k;
	k.h = h;
	atomic_store(&k.round, 0);
	atomic_store(&k.looks, 0);
	atomic_store(&k.seen, 0);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, peek, &k) == 0);
	/* The reader is looking before the first group starts. */
	for (int t = 0; t < 3000 && atomic_load(&k.looks) == 0; t++)
		usleep(1000);
	int answered_ok = 0;
	for (int r = 0; r < UNSEEN_ROUNDS; r++) {
		char texts[UNSEEN_WRITES + 1][256];
		const char *msgs[UNSEEN_WRITES + 1];
		for (int i = 0; i <= UNSEEN_WRITES; i++) {
			snprintf(texts[i], sizeof texts[i],
				 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"memory/remember\",\"params\":"
				 "{\"records\":[{\"content\":\"round %d write %d of a group never "
				 "committed\",\"key\":\"%s-%d-%d\"}]}}", i, r, i,
				 i == UNSEEN_WRITES ? "doomed" : "u", r, i);
			msgs[i] = texts[i];
		}
		atomic_store(&k.round, r);
		json_t *out[UNSEEN_WRITES + 1];
		run_group(h, msgs, UNSEEN_WRITES + 1, out);
		for (int i = 0; i <= UNSEEN_WRITES; i++)
			answered_ok += json_object_get(out[i], "result") != NULL;
		free_all(out, UNSEEN_WRITES + 1);
	}
	atomic_store(&k.round, -1);
	pthread_join(th, NULL);
	a2m_sqlite_fail_commits_for_tests(NULL);
	CHECK_INT(answered_ok, 0);
	CHECK_INT(atomic_load(&k.seen), 0);
	CHECK(atomic_load(&k.looks) > 0);
	a2m_close(h);
}

/* ---- in-process writers on several threads ---- */

enum { LOCAL_THREADS = 8, LOCAL_WRITES = 60 };

typedef struct local_writer {
	a2m *h;
	int  no, acked, failed;
} local_writer;

static void *write_locally(void *p)
{
	local_writer *w = p;
	for (int i = 0; i < LOCAL_WRITES; i++) {
		char req[320];
		/* One write in ten fails inside its transaction (wrong width). */
		snprintf(req, sizeof req,
			 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"memory/remember\",\"params\":"
			 "{\"records\":[{\"content\":\"local %d of thread %d\",\"key\":\"l-%d-%d\"%s}]}}",
			 i, i, w->no, w->no, i, i % 10 == 7 ? ",\"embedding\":[1,0,0]" : "");
		json_t *r = check_send(w->h, req);
		if (json_object_get(r, "result"))
			w->acked++;
		else if (check_error_code(r) == A2M_EMBEDDING_MISMATCH && i % 10 == 7)
			w->failed++;
		json_decref(r);
	}
	return NULL;
}

/*
** Callers of a2m_handle on several threads: while one runs a write, the
** others' writes join one transaction (server/deferred.c,
** a2m_deferred_join). Each is answered as alone: every plain write
** acknowledged and in the file, every wrong-width one refused and absent.
*/
static void test_in_process_writers_on_threads_join(void)
{
	char path[256];
	a2m *h = open_db(path, sizeof path, "local.db");
	if (!h)
		return;
	fix_width(h, NULL);
	static local_writer ws[LOCAL_THREADS];
	pthread_t th[LOCAL_THREADS];
	for (int i = 0; i < LOCAL_THREADS; i++) {
		ws[i] = (local_writer){.h = h, .no = i};
		CHECK(pthread_create(&th[i], NULL, write_locally, &ws[i]) == 0);
	}
	int acked = 0, failed = 0;
	for (int i = 0; i < LOCAL_THREADS; i++) {
		pthread_join(th[i], NULL);
		acked += ws[i].acked;
		failed += ws[i].failed;
	}
	CHECK_INT(acked, LOCAL_THREADS * LOCAL_WRITES * 9 / 10);
	CHECK_INT(failed, LOCAL_THREADS * LOCAL_WRITES / 10);
	a2m_close(h);
	h = open_db(path, sizeof path, NULL);
	if (!h)
		return;
	int wrong = 0;
	for (int t = 0; t < LOCAL_THREADS; t++) {
		for (int i = 0; i < LOCAL_WRITES; i++) {
			char key[32], content[64];
			snprintf(key, sizeof key, "l-%d-%d", t, i);
			snprintf(content, sizeof content, "local %d of thread %d", i, t);
			wrong += !check_holds(h, key, i % 10 == 7 ? NULL : content);
		}
	}
	CHECK_INT(wrong, 0);
	CHECK_INT((int)check_stored(h), 1 + LOCAL_THREADS * LOCAL_WRITES * 9 / 10);
	a2m_close(h);
}


int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	/* As test_durable.c's stores: checkpoints from 64 pages on. */
	a2m_sqlite_checkpoint_pages_for_tests(64);
	static const test_case tests[] = {
		TEST(test_a_failing_write_in_a_group_rolls_back_only_itself),
		TEST(test_a_failed_commit_fails_the_whole_group),
		TEST(test_a_write_run_again_keeps_its_id_and_time),
		TEST(test_two_writes_of_one_key_in_a_group),
		TEST(test_a_failed_sync_fails_the_whole_group),
		TEST(test_a_run_of_refused_commits_is_logged_once),
		TEST(test_readers_never_see_a_group_before_its_commit),
		TEST(test_in_process_writers_on_threads_join),
		{NULL, NULL}
	};
	int rc = run_tests(tests);
	check_remove_dir(tmpdir);
	return rc;
}
