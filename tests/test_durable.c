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
	a2m_http_config hc;
	memset(&hc, 0, sizeof hc);
	hc.threads = 2;
	static const a2m_http_defer defer = {a2m_handle_network_deferred, a2m_deferred_run,
					     a2m_deferred_finish, a2m_deferred_drop};
	hc.defer = &defer;
	a2m_http *http = NULL;
	char err[256];
	unsigned port = 0;
	if (h && a2m_http_start(h, &hc, &http, err, sizeof err) == 0)
		port = a2m_http_port(http);
	if (write(fd, &port, sizeof port) != (ssize_t)sizeof port || !port)
		_exit(1);
	for (;;)
		pause();
}

/* 1 when key is in h with content (NULL: absent), checked through memory/fetch. */
static int holds(a2m *h, const char *key, const char *content)
{
	char req[256];
	snprintf(req, sizeof req,
		 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/fetch\","
		 "\"params\":{\"key\":\"%s\"}}", key);
	char *out = check_reply(h, req);
	json_t *resp = out ? json_loads(out, 0, NULL) : NULL;
	a2m_free(out);
	json_t *rec = json_object_get(json_object_get(resp, "result"), "record");
	int ok;
	if (!content)
		ok = json_is_null(rec);
	else
		ok = json_is_object(rec) &&
		     strcmp(json_string_value(json_object_get(rec, "content")) ?: "", content) == 0;
	json_decref(resp);
	return ok;
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
				if (!holds(h, key, content)) {
					wrong++;
					fprintf(stderr, "  %s: acknowledged, not in the file\n", key);
				}
			} else {
				failed++;
				doomed += kind == DOOMED;
				batches += kind == INVALID_BATCH;
				widths += kind == BAD_WIDTH;
				shared += kind == PLAIN;
				if (!holds(h, key, NULL) ||
				    (kind == INVALID_BATCH && !holds(h, key_b, NULL))) {
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

/* The message of resp's error, or "" (borrowed from resp). */
static const char *error_message(const json_t *resp)
{
	const char *m = json_string_value(json_object_get(json_object_get(resp, "error"),
							  "message"));
	return m ? m : "";
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
	CHECK(strstr(error_message(r), "could not be made durable") != NULL);
	json_decref(r);
	/* Poisoned: nothing more is written, so nothing more is acknowledged. */
	r = check_send(h, third);
	CHECK_INT(check_error_code(r), A2M_INTERNAL_ERROR);
	CHECK(strstr(error_message(r), "refuses writes") != NULL);
	json_decref(r);
	CHECK(holds(h, "after", NULL));
	a2m_close(h);

	/* Reopened, the store writes again; what was acknowledged is there. */
	h = check_open("engine", "sqlite", "path", path, NULL);
	if (!h)
		return;
	CHECK(holds(h, "before", "before"));
	r = check_send(h, third);
	CHECK(json_object_get(r, "result") != NULL);
	json_decref(r);
	CHECK(holds(h, "after", "after"));
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
	CHECK(holds(h, "next", "next"));
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
	CHECK(holds(h, "plain", "plain"));
	a2m_close(h);
	a2m_sqlite_sync_fail_next_for_tests(0);
}

static long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

/* Records in h: the sum of describe's tier counts. */
static long long stored(a2m *h)
{
	json_t *r = check_send(h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/describe\"}");
	json_t *tiers = json_object_get(json_object_get(r, "result"), "tiers");
	long long n = 0;
	for (size_t i = 0; i < json_array_size(tiers); i++)
		n += json_integer_value(json_object_get(json_array_get(tiers, i), "count"));
	json_decref(r);
	return n;
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
	snprintf(path, sizeof path, "%s/group-fail.db", tmpdir);
	a2m *h = check_open("engine", "sqlite", "path", path, NULL);
	if (!h)
		return;
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"width\","
			       "\"key\":\"width\",\"embedding\":[1,0,0,0]}]}");
	CHECK(json_object_get(r, "result") != NULL);
	json_decref(r);
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
	CHECK(holds(h, "g-a", "first of the group"));
	CHECK(holds(h, "g-b", NULL));
	CHECK(holds(h, "g-c", "third of the group"));
	CHECK_INT((int)stored(h), 3);
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
	h = check_open("engine", "sqlite", "path", path, NULL);
	if (!h)
		return;
	CHECK(holds(h, "g-a", "first of the group"));
	CHECK(holds(h, "g-b", NULL));
	CHECK(holds(h, "g-c", "third of the group"));
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
	snprintf(path, sizeof path, "%s/group-doom.db", tmpdir);
	a2m *h = check_open("engine", "sqlite", "path", path, NULL);
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
		CHECK(strstr(error_message(out[i]), "refused by the test") != NULL);
	}
	CHECK(out[3] == NULL);
	free_all(out, 4);
	a2m_sqlite_fail_commits_for_tests(NULL);
	CHECK(holds(h, "d-a", NULL));
	CHECK(holds(h, "doomed-b", NULL));
	CHECK(holds(h, "d-c", NULL));
	CHECK(holds(h, "d-d", NULL));
	json_t *evs = events_after(h, cursor, NULL, 0);
	CHECK_INT((int)json_array_size(evs), 0);
	json_decref(evs);
	/* The store goes on: the same writes, now without the doomed one. */
	const char *again[] = {msgs[0], msgs[2]};
	run_group(h, again, 2, out);
	CHECK(json_object_get(out[0], "result") != NULL);
	CHECK(json_object_get(out[1], "result") != NULL);
	free_all(out, 2);
	CHECK(holds(h, "d-a", "innocent one"));
	CHECK(holds(h, "d-c", "innocent two"));
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
	snprintf(path, sizeof path, "%s/group-key.db", tmpdir);
	a2m *h = check_open("engine", "sqlite", "path", path, NULL);
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
	CHECK(holds(h, "same", "version two"));
	CHECK_INT((int)stored(h), 1);
	a2m_close(h);
	h = check_open("engine", "sqlite", "path", path, NULL);
	if (!h)
		return;
	CHECK(holds(h, "same", "version two"));
	CHECK_INT((int)stored(h), 1);
	a2m_close(h);
}

/* A failed sync after a group's commit fails every write of the group. */
static void test_a_failed_sync_fails_the_whole_group(void)
{
	char path[256];
	snprintf(path, sizeof path, "%s/group-sync.db", tmpdir);
	a2m *h = check_open("engine", "sqlite", "path", path, NULL);
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
		CHECK(strstr(error_message(out[i]), "could not be made durable") != NULL);
	}
	free_all(out, 2);
	a2m_close(h);
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
	CHECK(most > 0 && most <= (long)longest * FRAME + 32);
	if (most > (long)longest * FRAME + 32 || longest >= 4 * 64 + largest_commit)
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
	CHECK(stored(h) == (long long)CALLS * PER_CALL);
	a2m_close(h);
	(void)in_commit0;
	(void)in_commit;
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
			if (!holds(k->h, key, NULL))
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
	snprintf(path, sizeof path, "%s/group-unseen.db", tmpdir);
	a2m *h = check_open("engine", "sqlite", "path", path, NULL);
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
	snprintf(path, sizeof path, "%s/local.db", tmpdir);
	a2m *h = check_open("engine", "sqlite", "path", path, NULL);
	if (!h)
		return;
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"width\","
			       "\"embedding\":[1,0,0,0]}]}");
	CHECK(json_object_get(r, "result") != NULL);
	json_decref(r);
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
	h = check_open("engine", "sqlite", "path", path, NULL);
	if (!h)
		return;
	int wrong = 0;
	for (int t = 0; t < LOCAL_THREADS; t++) {
		for (int i = 0; i < LOCAL_WRITES; i++) {
			char key[32], content[64];
			snprintf(key, sizeof key, "l-%d-%d", t, i);
			snprintf(content, sizeof content, "local %d of thread %d", i, t);
			wrong += !holds(h, key, i % 10 == 7 ? NULL : content);
		}
	}
	CHECK_INT(wrong, 0);
	CHECK_INT((int)stored(h), 1 + LOCAL_THREADS * LOCAL_WRITES * 9 / 10);
	a2m_close(h);
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
		TEST(test_without_group_commit_sqlite_syncs_itself),
		TEST(test_a_commit_outside_a_call_is_synced_at_close),
		TEST(test_a_failing_write_in_a_group_rolls_back_only_itself),
		TEST(test_a_failed_commit_fails_the_whole_group),
		TEST(test_two_writes_of_one_key_in_a_group),
		TEST(test_a_failed_sync_fails_the_whole_group),
		TEST(test_readers_never_see_a_group_before_its_commit),
		TEST(test_in_process_writers_on_threads_join),
		TEST(test_acknowledged_writes_survive_a_kill_and_failed_ones_never_land),
		{NULL, NULL}
	};
	int rc = run_tests(tests);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return rc;
}
