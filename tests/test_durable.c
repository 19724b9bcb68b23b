/*
** test_durable.c — group commit (store/sqlite_sync.c): concurrent durable
** writers over HTTP share syncs, and what a writer was told is what the
** file holds after the server is killed with SIGKILL; a failed sync fails
** its writes and stops the store writing.
**
** The server runs in a child process (fork) so that it can be killed
** mid-stream; the test's own writers are sixteen HTTP clients, some of
** whose writes fail on purpose: a commit the test hook refuses (the key
** starts "doomed-"), and a batch whose second record is invalid. After
** the kill the parent opens the file itself and asks, through the
** protocol, for every key: each acknowledged one must be there with its
** content, no failed one may be. A write cut off by the kill (no answer)
** may be either. The writes the binding gathers run as one transaction
** (server/deferred.c), so the kill lands inside groups, and the tests
** before it hand groups over themselves to see what a failure in one
** undoes.
**
** Every store here checkpoints its log from 64 pages on (a test hook; the
** engine's mark is 10 000), so the kill also lands among checkpoints run
** by the checkpointer's thread (store/sqlite_checkpoint.c); and one test
** writes a few MB to see those checkpoints keep the log bounded.
*/
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "a2m.h"
#include "a2m_client.h"
#include "client/client_json.h"
#include "check.h"
#include "check_a2m.h"
#include "store/store.h"
#include "server/deferred.h"
#include "group_commit_server.h"
#include "transport/http.h"
#include "util/buf.h"

#define WRITERS 16
#define PER_WRITER 4000      /* keys a writer may use (it stops at the kill) */

static char tmpdir[] = "/tmp/a2m-test-durable.XXXXXX";

enum { UNSENT, ACKED, FAILED, UNKNOWN };

typedef struct writer {
	int          no;
	const char  *url;
	unsigned char outcome[PER_WRITER];  /* of write i */
	unsigned char kind[PER_WRITER];     /* enum below */
	int          code[PER_WRITER];      /* a failed one's error code */
	unsigned char by_commit[PER_WRITER];/* failed with the refused commit */
	int          sent;
} writer;

/*
** What a write is: plain; doomed (its commit is refused, and with it the
** commit of every write of its group); a batch whose second record is
** invalid (refused before any transaction); a record whose embedding is
** not the store's width (refused inside the transaction, which undoes the
** group's: the others of the group must stand all the same).
*/
enum { PLAIN, DOOMED, INVALID_BATCH, BAD_WIDTH };

static int kind_of(int i)
{
	return i % 23 == 3 ? DOOMED : i % 9 == 4 ? INVALID_BATCH : i % 11 == 6 ? BAD_WIDTH : PLAIN;
}

static atomic_int acks, stop_writing;

/* The key of writer w's write i (its second record's with part 'b'). */
static void key_of(char *out, size_t n, int w, int i, int kind, char part)
{
	snprintf(out, n, "%s-%d-%d%s%c", kind == DOOMED ? "doomed" : "k", w, i, part ? "-" : "",
		 part ? part : '\0');
}

static void content_of(char *out, size_t n, int w, int i)
{
	snprintf(out, n, "durable record %d of writer %d", i, w);
}

static json_t *params_of(int w, int i, int kind)
{
	char key[64], key_b[64], content[96];
	content_of(content, sizeof content, w, i);
	if (kind == BAD_WIDTH) {
		key_of(key, sizeof key, w, i, kind, 0);
		return json_pack("{s:[{s:s,s:s,s:s,s:[i,i,i]}]}", "records", "content", content,
				 "key", key, "tier", "semantic", "embedding", 1, 0, 0);
	}
	if (kind == INVALID_BATCH) {
		key_of(key, sizeof key, w, i, kind, 'a');
		key_of(key_b, sizeof key_b, w, i, kind, 'b');
		return json_pack("{s:[{s:s,s:s,s:s},{s:s,s:s,s:s,s:s}]}", "records",
				 "content", content, "key", key, "tier", "semantic",
				 "content", content, "key", key_b, "tier", "semantic",
				 "salience", "not a number");
	}
	key_of(key, sizeof key, w, i, kind, 0);
	return json_pack("{s:[{s:s,s:s,s:s}]}", "records", "content", content, "key", key,
			 "tier", "semantic");
}

static void *write_until_killed(void *p)
{
	writer *w = p;
	a2m_client_http_options o;
	a2m_client_http_options_init(&o);
	o.timeout_ms = 30000;
	a2m_client *c = NULL;
	if (a2m_client_connect_http(w->url, &o, &c) != A2M_CLIENT_OK)
		return NULL;
	for (int i = 0; i < PER_WRITER && !atomic_load(&stop_writing); i++) {
		int kind = kind_of(i);
		json_t *params = params_of(w->no, i, kind);
		json_t *resp = NULL;
		w->kind[i] = (unsigned char)kind;
		w->sent = i + 1;
		int rc = a2m_client_request_json(c, "memory/remember", params, &resp);
		json_decref(params);
		if (rc != A2M_CLIENT_OK) {
			w->outcome[i] = UNKNOWN;  /* the server died with it in flight */
			json_decref(resp);
			break;
		}
		if (json_object_get(resp, "result")) {
			w->outcome[i] = ACKED;
			atomic_fetch_add(&acks, 1);
		} else {
			json_t *e = json_object_get(resp, "error");
			const char *m = json_string_value(json_object_get(e, "message"));
			w->outcome[i] = FAILED;
			w->code[i] = (int)json_integer_value(json_object_get(e, "code"));
			w->by_commit[i] = m && strstr(m, "refused by the test") != NULL;
		}
		json_decref(resp);
	}
	a2m_client_free(c);
	return NULL;
}

/* The child: serves path over HTTP until killed; writes the port to fd. */
static void serve(const char *path, int fd)
{
	a2m_sqlite_fail_commits_for_tests("doomed-");
	a2m *h = check_open("engine", "sqlite", "path", path, NULL);
	/* The store's vectors are 4 wide: BAD_WIDTH's are not. */
	json_t *r = h ? check_call(h, "memory/remember", "{\"records\":[{\"content\":\"width\","
				   "\"tier\":\"semantic\",\"embedding\":[1,0,0,0]}]}") : NULL;
	if (!json_object_get(r, "result"))
		_exit(1);
	json_decref(r);
	a2m_http *http = h ? start_group_commit(h) : NULL;
	unsigned port = http ? a2m_http_port(http) : 0;
	if (write(fd, &port, sizeof port) != (ssize_t)sizeof port || !port)
		_exit(1);
	for (;;)
		pause();
}

/* Totals over the kill runs, for the checks that need many writes. */
static int total_doomed, total_batches, total_widths;

/*
** Sixteen HTTP writers at a server killed with SIGKILL once kill_after
** writes were acknowledged; then every key checked in the file.
*/
static void kill_at(int run, int kill_after)
{
	char path[256];
	snprintf(path, sizeof path, "%s/kill-%d.db", tmpdir, run);
	int fds[2];
	CHECK(pipe(fds) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		serve(path, fds[1]);
	}
	close(fds[1]);
	unsigned port = 0;
	CHECK(read(fds[0], &port, sizeof port) == (ssize_t)sizeof port && port);
	close(fds[0]);
	if (!port) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return;
	}
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%u/", port);
	static writer ws[WRITERS];
	pthread_t th[WRITERS];
	atomic_store(&acks, 0);
	atomic_store(&stop_writing, 0);
	for (int i = 0; i < WRITERS; i++) {
		memset(&ws[i], 0, sizeof ws[i]);
		ws[i].no = i;
		ws[i].url = url;
		CHECK(pthread_create(&th[i], NULL, write_until_killed, &ws[i]) == 0);
	}
	/* Kill while all sixteen are writing (at most 60 s on a slow build). */
	for (int t = 0; t < 6000 && atomic_load(&acks) < kill_after; t++)
		usleep(10000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	atomic_store(&stop_writing, 1);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(th[i], NULL);

	a2m *h = check_open("engine", "sqlite", "path", path, NULL);
	CHECK(h != NULL);
	if (!h)
		return;
	int acked = 0, failed = 0, doomed = 0, batches = 0, widths = 0, shared = 0;
	int unknown = 0, wrong = 0;
	for (int w = 0; w < WRITERS; w++) {
		for (int i = 0; i < ws[w].sent; i++) {
			int kind = ws[w].kind[i], out = ws[w].outcome[i];
			char key[64], key_b[64], content[96];
			content_of(content, sizeof content, w, i);
			key_of(key, sizeof key, w, i, kind, kind == INVALID_BATCH ? 'a' : 0);
			key_of(key_b, sizeof key_b, w, i, kind, 'b');
			if (out == UNKNOWN || out == UNSENT) {
				unknown++;
				continue;
			}
			/*
			** What was meant to fail failed, each with its own error; a
			** plain write may fail only with the refused commit it
			** shared, never because a write beside it was refused.
			*/
			int code = ws[w].code[i], by_commit = ws[w].by_commit[i];
			int right = kind == PLAIN ? out == ACKED || by_commit
				: kind == DOOMED ? out == FAILED && by_commit
				: kind == INVALID_BATCH ? out == FAILED && code == A2M_INVALID_PARAMS
				: out == FAILED && code == A2M_EMBEDDING_MISMATCH;
			if (!right) {
				wrong++;
				fprintf(stderr, "  %s: outcome %d, code %d\n", key, out, code);
			}
			if (out == ACKED) {
				acked++;
				if (!check_holds(h, key, content)) {
					wrong++;
					fprintf(stderr, "  %s: acknowledged, not in the file\n", key);
				}
			} else {
				failed++;
				doomed += kind == DOOMED;
				batches += kind == INVALID_BATCH;
				widths += kind == BAD_WIDTH;
				shared += kind == PLAIN;
				if (!check_holds(h, key, NULL) ||
				    (kind == INVALID_BATCH && !check_holds(h, key_b, NULL))) {
					wrong++;
					fprintf(stderr, "  %s: failed, yet in the file\n", key);
				}
			}
		}
	}
	a2m_close(h);
	printf("  kill after %d acks: %d acknowledged, %d failed (%d refused commits and %d "
	       "writes that shared one, %d invalid batches, %d wrong widths), %d cut off\n",
	       kill_after, acked, failed, doomed, shared, batches, widths, unknown);
	CHECK_INT(wrong, 0);
	CHECK(acked >= kill_after);
	total_doomed += doomed;
	total_batches += batches;
	total_widths += widths;
}

/* Killed at several points of the stream, each on a fresh file. */
static void test_acknowledged_writes_survive_a_kill_and_failed_ones_never_land(void)
{
	static const int points[] = {40, 250, 600};
	total_doomed = total_batches = total_widths = 0;
	for (int i = 0; i < (int)(sizeof points / sizeof *points); i++)
		kill_at(i, points[i]);
	CHECK(total_doomed >= 20);
	CHECK(total_batches >= 20);
	CHECK(total_widths >= 20);
}

static void test_a_failed_sync_fails_the_write_and_stops_writes(void)
{
	char path[256];
	snprintf(path, sizeof path, "%s/sync.db", tmpdir);
	a2m *h = check_open("engine", "sqlite", "path", path, NULL);
	if (!h)
		return;
	static const char first[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\","
		"\"params\":{\"records\":[{\"content\":\"before\",\"key\":\"before\"}]}}";
	static const char second[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"memory/remember\","
		"\"params\":{\"records\":[{\"content\":\"during\",\"key\":\"during\"}]}}";
	static const char third[] = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"memory/remember\","
		"\"params\":{\"records\":[{\"content\":\"after\",\"key\":\"after\"}]}}";
	json_t *r = check_send(h, first);
	CHECK(json_object_get(r, "result") != NULL);
	json_decref(r);

	a2m_sqlite_sync_fail_next_for_tests(1);
	r = check_send(h, second);
	CHECK_INT(check_error_code(r), A2M_INTERNAL_ERROR);
	CHECK(strstr(check_error_message(r), "could not be made durable") != NULL);
	json_decref(r);
	/* Poisoned: nothing more is written, so nothing more is acknowledged. */
	r = check_send(h, third);
	CHECK_INT(check_error_code(r), A2M_INTERNAL_ERROR);
	CHECK(strstr(check_error_message(r), "refuses writes") != NULL);
	json_decref(r);
	CHECK(check_holds(h, "after", NULL));
	a2m_close(h);

	/* Reopened, the store writes again; what was acknowledged is there. */
	h = check_open("engine", "sqlite", "path", path, NULL);
	if (!h)
		return;
	CHECK(check_holds(h, "before", "before"));
	r = check_send(h, third);
	CHECK(json_object_get(r, "result") != NULL);
	json_decref(r);
	CHECK(check_holds(h, "after", "after"));
	a2m_close(h);
}

/*
** A durable commit made on the store itself, outside a2m_handle (as `a2m
** import` and `a2m check --repair` write), gets no ticket from a caller:
** closing the store syncs it. Seen through the failure hook: the close
** takes the armed failure (and logs it), so the next handle's open,
** whose own sync would otherwise meet it, succeeds.
*/
static void test_a_commit_outside_a_call_is_synced_at_close(void)
{
	char path[256];
	snprintf(path, sizeof path, "%s/outside.db", tmpdir);
	a2m_sqlite_options opt = {.synchronous_full = 1, .group_commit = 1};
	a2m_store *s = NULL;
	char err[256] = "";
	CHECK_INT(a2m_store_sqlite_open(path, &opt, &s, err, sizeof err), 0);
	if (!s)
		return;
	a2m_record *r = a2m_record_new();
	r->id = strdup("outside-1");
	r->content = strdup("written outside a call");
	r->tier = strdup("semantic");
	r->created_at = 1700000000000;
	r->salience = 1.0;
	CHECK_INT(s->ops->begin(s), 0);
	CHECK_INT(s->ops->insert(s, r), 0);
	CHECK_INT(s->ops->commit(s), 0);
	a2m_record_free(r);
	a2m_sqlite_sync_fail_next_for_tests(1);
	s->ops->close(s);

	a2m *h = check_open("engine", "sqlite", "path", path, NULL);
	CHECK(h != NULL);  /* an open that met the failure still armed fails */
	a2m_sqlite_sync_fail_next_for_tests(0);
	if (!h)
		return;
	json_t *reply = check_send(h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\","
				   "\"params\":{\"records\":[{\"content\":\"next\",\"key\":\"next\"}]}}");
	CHECK(json_object_get(reply, "result") != NULL);
	json_decref(reply);
	CHECK(check_holds(h, "next", "next"));
	a2m_close(h);
}

static void test_without_group_commit_sqlite_syncs_itself(void)
{
	char path[256];
	snprintf(path, sizeof path, "%s/plain.db", tmpdir);
	a2m *h = check_open("engine", "sqlite", "path", path, "group_commit", "0", NULL);
	if (!h)
		return;
	/* The hook only reaches group commit's own sync: this one never fails. */
	a2m_sqlite_sync_fail_next_for_tests(1);
	json_t *r = check_send(h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\","
			       "\"params\":{\"records\":[{\"content\":\"plain\",\"key\":\"plain\"}]}}");
	CHECK(json_object_get(r, "result") != NULL);
	json_decref(r);
	CHECK(check_holds(h, "plain", "plain"));
	a2m_close(h);
	a2m_sqlite_sync_fail_next_for_tests(0);
}

/* Records in tier (at most 100), through memory/timeline. */
static long long count_in(a2m *h, const char *tier)
{
	json_t *r = check_call(h, "memory/timeline", "{\"tier\":\"%s\",\"limit\":100}", tier);
	long long n = (long long)json_array_size(json_object_get(json_object_get(r, "result"),
								 "records"));
	json_decref(r);
	return n;
}

/*
** A lone durable write into full tiers (a2m_handle, no joint transaction)
** with capacity_after_sync: its capacity pass runs in a transaction of its
** own while the sync
** thread syncs the write (finish.c, sqlite_sync.c). Capacity still holds
** whenever a call has returned; the syncs are the thread's; the answer
** still waits for one (a failed sync fails the write that spilled apart);
** and what was acknowledged is in the file after a reopen.
*/
static void test_a_lone_write_spills_apart_while_its_sync_runs(void)
{
	enum { FILL = 300, WORKING = 24, EPISODIC = 256 };
	char path[256];
	snprintf(path, sizeof path, "%s/apart.db", tmpdir);
	a2m *h = check_open("engine", "sqlite", "path", path, "capacity_after_sync", "1", NULL);
	if (!h)
		return;
	uint64_t early = a2m_sqlite_sync_early_for_tests();
	int over = 0;
	for (int i = 0; i < FILL; i++) {
		json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":"
				       "\"lone note %d\",\"key\":\"lone-%d\"}]}", i, i);
		CHECK(json_object_get(r, "result") != NULL);
		json_decref(r);
		if (i % 10 == 9 && (count_in(h, "working") > WORKING ||
				    count_in(h, "episodic") > EPISODIC))
			over++;
	}
	CHECK_INT(over, 0);
	CHECK_INT(count_in(h, "working"), WORKING);
	CHECK_INT(count_in(h, "episodic") + count_in(h, "semantic") > 0, 1);
	/* Every write past the first spills apart; the thread led syncs. */
	CHECK(a2m_sqlite_sync_early_for_tests() > early);

	/* The answer of a write that spilled apart waits for its sync. */
	a2m_sqlite_sync_fail_next_for_tests(1);
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":"
			       "\"doomed note\",\"key\":\"doomed\"}]}");
	CHECK_INT(check_error_code(r), A2M_INTERNAL_ERROR);
	CHECK(strstr(check_error_message(r), "could not be made durable") != NULL);
	json_decref(r);
	a2m_sqlite_sync_fail_next_for_tests(0);
	a2m_close(h);

	h = check_open("engine", "sqlite", "path", path, NULL);
	if (!h)
		return;
	for (int i = 0; i < FILL; i += 37) {
		char key[32], content[32];
		snprintf(key, sizeof key, "lone-%d", i);
		snprintf(content, sizeof content, "lone note %d", i);
		CHECK(check_holds(h, key, content));
	}
	CHECK_INT(count_in(h, "working") <= WORKING + 1, 1);  /* the failed call's pass may lag */
	a2m_close(h);
}

static long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : 0;
}


/*
** The log's checkpoints run on the checkpointer's thread and keep the log
** bounded. 200 calls of 10 records write a few MB of frames; with a mark
** of 64 pages, a commit that takes the log to the hard mark (256 pages)
** restarts it, so the log never holds more than the hard mark and one
** commit's frames, however far the thread lags behind (on a loaded machine
** it may do no pass at all in a while). The file ends up holding the data,
** and every record is there after a reopen.
**
** The bound is checked against the frames the WAL hook saw each commit
** add, not a guess: a merge of the index writes many more pages than a
** call of ten records.
*/
static void test_checkpoints_run_off_the_writer_and_bound_the_log(void)
{
	enum { CALLS = 200, PER_CALL = 10, PAGE = 4096, FRAME = PAGE + 24 };
	static const char *const words[] = {"harbour", "lantern", "orchard", "quarry",
		"meadow", "glacier", "tundra", "canyon", "estuary", "plateau", "lagoon", "delta"};
	char path[256], wal[300];
	snprintf(path, sizeof path, "%s/checkpoints.db", tmpdir);
	snprintf(wal, sizeof wal, "%s-wal", path);
	uint64_t passes0, in_commit0, passes, in_commit;
	int longest, largest_commit, missed;
	a2m_sqlite_checkpoint_counts_for_tests(&passes0, &in_commit0);
	a2m_sqlite_checkpoint_log_for_tests(&longest, &largest_commit, &missed);
	a2m *h = check_open("engine", "sqlite", "path", path, NULL);
	if (!h)
		return;
	long most = 0;
	int failed = 0;
	for (int call = 0; call < CALLS && !failed; call++) {
		a2m_buf req = {0};
		a2m_buf_puts(&req, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\","
			     "\"params\":{\"records\":[");
		for (int i = 0; i < PER_CALL; i++) {
			a2m_buf_printf(&req, "%s{\"content\":\"record %d of call %d:", i ? "," : "", i,
				       call);
			for (int w = 0; w < 24; w++)
				a2m_buf_printf(&req, " %s%d", words[(call * 7 + i * 3 + w) % 12],
					       (call + w) % 50);
			a2m_buf_puts(&req, "\"}");
		}
		a2m_buf_puts(&req, "]}}");
		char *text = a2m_buf_take(&req, NULL);
		json_t *r = text ? check_send(h, text) : NULL;
		failed = !json_object_get(r, "result");
		json_decref(r);
		free(text);
		long now = file_size(wal);
		if (now > most)
			most = now;
	}
	CHECK(!failed);
	a2m_sqlite_checkpoint_counts_for_tests(&passes, &in_commit);
	a2m_sqlite_checkpoint_log_for_tests(&longest, &largest_commit, &missed);
	CHECK(passes > passes0);  /* the thread ran */
	CHECK(missed == 0);       /* every hard-mark checkpoint restarted the log */
	/* A commit is far smaller than the mark, so the bound below means something. */
	CHECK(largest_commit > 0 && largest_commit < 4 * 64);
	/* Below the hard mark before a commit; the hard mark and one commit after. */
	CHECK(longest < 4 * 64 + largest_commit);
	/* A durable log grows in zeroed chunks of 1 MiB (sqlite_walvfs.c): the
	   file is the frames' bound rounded up to the next one. */
	long bound = ((long)longest * FRAME + 32) / (1L << 20) * (1L << 20) + (1L << 20);
	CHECK(most > 0 && most <= bound);
	if (most > bound || longest >= 4 * 64 + largest_commit)
		fprintf(stderr, "  log: %ld frames in the file, %d at most after a commit, "
			"%d the largest commit\n", most / FRAME, longest, largest_commit);
	a2m_close(h);
	/*
	** The data went into the file: the clean close, the last connection,
	** copied every frame and removed the log. (Not "the file is larger
	** than the log ever was": a lagging thread lets the log pass the
	** file's size on a loaded machine.)
	*/
	struct stat st;
	CHECK(stat(wal, &st) != 0 && errno == ENOENT);
	CHECK(file_size(path) > 0);
	h = check_open("engine", "sqlite", "path", path, NULL);
	if (!h)
		return;
	CHECK(check_stored(h) == (long long)CALLS * PER_CALL);
	a2m_close(h);
	(void)in_commit0;
	(void)in_commit;
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	a2m_sqlite_checkpoint_pages_for_tests(64);
	static const test_case tests[] = {
		TEST(test_checkpoints_run_off_the_writer_and_bound_the_log),
		TEST(test_a_failed_sync_fails_the_write_and_stops_writes),
		TEST(test_a_lone_write_spills_apart_while_its_sync_runs),
		TEST(test_without_group_commit_sqlite_syncs_itself),
		TEST(test_a_commit_outside_a_call_is_synced_at_close),
		TEST(test_acknowledged_writes_survive_a_kill_and_failed_ones_never_land),
		{NULL, NULL}
	};
	int rc = run_tests(tests);
	check_remove_dir(tmpdir);
	return rc;
}
