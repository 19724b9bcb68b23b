/*
** fault_threads.h — faults that land on the SQLite engine's other threads,
** for tests/test_faults.c (docs/FAULTS.md, "Threads").
**
** The workload of fault_workload.h runs with no helper thread and one
** caller, so that a point is the same operation on every run. Here the
** store runs as a server does: helper threads on (the index's merges run on
** a thread of their own while the next transaction goes on,
** sqlite_segments_merge.c), group commit on (the writers' commits share
** fsyncs of the log, which one of the waiting callers runs for all,
** sqlite_sync.c), and TH_WRITERS callers writing batches of records and
** recalling at the same time on one handle. With the index's merge factor
** at 2, nearly every write transaction starts a merge; with the log's
** checkpoint mark at TH_CHECKPOINT_PAGES, the checkpointer's thread
** (sqlite_checkpoint.c) copies the log into the database every few commits.
**
** Fault n of a kind is armed for the whole run, on every thread: SQLite's
** reads, writes, syncs and allocations on the writers' connection and the
** readers', liba2m's allocations (the merge thread's included), the log's
** fdatasync and its open. Which operation is the nth depends on how the
** threads met, so a point is not the same on two runs; every run is judged
** on its own:
**   - every reply is a result, or -32603 naming the store (or A2M_NOMEM);
**   - a batch acknowledged is in the file, whole; a batch refused is not
**     there at all, but for the two answers that say the outcome is not
**     known (a failed sync of the log: "applied but could not be made
**     durable"; a reply that memory could not be found for): then it is
**     there whole or not at all. No batch is ever there in part;
**   - PRAGMA integrity_check, the counts and a2m check pass;
**   - once the fault is gone the same handle writes and finds a record,
**     unless a failed sync of the log poisoned the store (sqlite_sync.c),
**     which then refuses writes until reopened; the file opened again
**     serves either way;
**   - nothing liba2m allocated is left after a2m_close.
*/
#ifndef A2M_TEST_FAULT_THREADS_H
#define A2M_TEST_FAULT_THREADS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "fault_sweep.h"

#define TH_WRITERS 3
#define TH_BATCHES 8    /* per writer */
#define TH_BATCH   5    /* records per batch */
#define TH_CHECKPOINT_PAGES 8  /* the log's checkpoint mark in the run */
#if defined(__SANITIZE_ADDRESS__)
#define TH_SAMPLE  3    /* points of each kind in the test command */
#else
#define TH_SAMPLE  6
#endif

typedef struct th_writer {
	a2m      *h;
	int       w;
	pthread_t self;
	int       outcome[TH_BATCHES];  /* 1 acknowledged, 0 refused, 2 unknown */
	char      problem[400];         /* the first wrong reply */
} th_writer;

/* A batch's records: "t<writer>-<batch>-<i>", a few words each. */
static void th_batch(char *buf, size_t len, int id, int w, int b)
{
	static const char *const words[] = {
		"alpha", "river", "mountain", "harbour", "lantern", "quartz", "meadow", "timber",
	};
	size_t at = (size_t)snprintf(buf, len, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":"
				     "\"memory/remember\",\"params\":{\"records\":[", id);
	for (int i = 0; i < TH_BATCH && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at,
				       "%s{\"id\":\"t%d-%d-%d\",\"tier\":\"semantic\",\"content\":"
				       "\"writer %d batch %d %s %s %s\"}", i ? "," : "", w, b, i, w, b,
				       words[(w + b + i) % 8], words[(b * 3 + i) % 8],
				       words[(w * 5 + i * 7) % 8]);
	if (at < len)
		snprintf(buf + at, len - at, "]}}");
}

/* Judges one reply (NULL: none, status). Returns 1 ok, 0 refused, 2 unknown. */
static int th_judge(th_writer *t, const char *what, const char *reply, int status, int kind)
{
	if (!reply) {
		if (status == A2M_NOMEM && kind == KIND_ALLOC)
			return 2;
		if (!t->problem[0])
			snprintf(t->problem, sizeof t->problem, "%s: no reply (status %d)", what,
				 status);
		return 0;
	}
	if (strstr(reply, "\"result\":"))
		return 1;
	int durable = strstr(reply, "could not be made durable") != NULL;
	if (!strstr(reply, "\"code\":-32603") ||
	    (kind != KIND_ALLOC && !strstr(reply, "storage") && !durable)) {
		if (!t->problem[0])
			snprintf(t->problem, sizeof t->problem, "%s: not a clean failure: %.300s",
				 what, reply);
		return 0;
	}
	/* Memory short for the reply: the write may have committed before. */
	return durable || kind == KIND_ALLOC ? 2 : 0;
}

static int th_kind;  /* the run's kind, for the writers */

/*
** Another process's commits, meanwhile: a connection of the test's own,
** through the real VFS (not the shim: its reads and writes are not the
** store's), commits every millisecond or so, so a2m's connections find the
** file changed and read what they need from it, where reads can fail.
** Not for SQLite's allocations, which its connection would take a share of.
*/
static _Atomic int th_stop;

static void *th_foreign(void *arg)
{
	sqlite3 *db = NULL;
	(void)arg;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, "unix") == SQLITE_OK &&
	    sqlite3_busy_timeout(db, 5000) == SQLITE_OK)
		for (int i = 1; !atomic_load(&th_stop); i++) {
			char sql[48];
			snprintf(sql, sizeof sql, "PRAGMA user_version = %d", i);
			sqlite3_exec(db, sql, NULL, NULL, NULL);  /* a failure changes nothing */
			usleep(1000);
		}
	sqlite3_close(db);
	return NULL;
}

static void *th_write(void *arg)
{
	th_writer *t = arg;
	char msg[4096], what[64];
	for (int b = 0; b < TH_BATCHES; b++) {
		char *reply = NULL;
		th_batch(msg, sizeof msg, 100 * t->w + b, t->w, b);
		int status = a2m_handle(t->h, msg, A2M_NUL_TERMINATED, &reply);
		snprintf(what, sizeof what, "writer %d batch %d", t->w, b);
		t->outcome[b] = th_judge(t, what, reply, status, th_kind);
		a2m_free(reply);
		if (b % 3 == 1) {  /* a recall beside the writes: the readers' connections */
			reply = NULL;
			status = a2m_handle(t->h, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"memory/recall\","
					    "\"params\":{\"query\":\"river quartz\",\"limit\":3}}",
					    A2M_NUL_TERMINATED, &reply);
			snprintf(what, sizeof what, "writer %d recall %d", t->w, b);
			th_judge(t, what, reply, status, th_kind);
			a2m_free(reply);
		}
	}
	return NULL;
}

/* The ids in the store, as one string ",id,id," (malloc'd), or NULL. */
static char *th_ids(a2m *h, run_out *o, const char *when)
{
	int status;
	json_t *v = send(h, 9101, "memory/timeline", "{\"limit\":1000}", &status, o);
	json_t *recs = json_object_get(json_object_get(v, "result"), "records");
	if (!recs) {
		problem(o, "%s: the records cannot be read: %s", when, wl_text(error_of(v)));
		json_decref(v);
		return NULL;
	}
	size_t i, len = 2;
	json_t *r;
	json_array_foreach(recs, i, r)
		len += strlen(json_string_value(json_object_get(r, "id"))) + 1;
	char *out = calloc(1, len + 1);
	if (!out)
		abort();
	out[0] = ',';
	json_array_foreach(recs, i, r) {
		strcat(out, json_string_value(json_object_get(r, "id")));
		strcat(out, ",");
	}
	json_decref(v);
	return out;
}

/* Writes a probe record and finds it: the handle serves. 0 when it does. */
static int th_probe(a2m *h, run_out *o, int id)
{
	int status;
	char params[160];
	snprintf(params, sizeof params, "{\"records\":[{\"id\":\"probe%d\",\"content\":\"probe "
		 "written once the fault is gone\",\"tier\":\"semantic\"}]}", id);
	json_t *w = send(h, id, "memory/remember", params, &status, o);
	json_t *r = send(h, id + 1, "memory/recall", "{\"query\":\"probe written\",\"limit\":1}",
			 &status, o);
	const char *first = json_string_value(json_object_get(json_array_get(
		json_object_get(json_object_get(r, "result"), "records"), 0), "id"));
	int bad = !json_object_get(w, "result") || !first || strncmp(first, "probe", 5) != 0;
	if (bad)
		problem(o, "the handle does not serve: %s / %s", wl_text(error_of(w)),
			wl_text(error_of(r)));
	json_decref(w);
	json_decref(r);
	return bad;
}

typedef struct th_stats {
	int64_t points, run, fired, on_helper, refused, unknown, poisoned;
} th_stats;

/*
** One run with fault n of kind armed; st->points gets how many operations
** of the kind it counted (armed at INT64_MAX: an unfaulted run, which says
** how many points the kind has). Returns 0 when all is well.
*/
static int th_run(int kind, int64_t n, th_stats *st)
{
	run_out o = {0};
	a2m *h = NULL;
	char *err = NULL;
	th_writer t[TH_WRITERS];
	int helper = 0, poisoned = 0, started = 0;
	remove_files();
	size_t live = fault_alloc_live();
	snprintf(point_name, sizeof point_name, "threads %s:%lld",
		 kind == KIND_ALLOC ? "malloc" : fault_kind_names[kind], (long long)n);
	alarm(POINT_ALARM_S);
	if (open_store_with(1, "2", &h, &err) != A2M_OK) {
		problem(&o, "open: %s", err ? err : "(no message)");
		a2m_free(err);
		goto out;
	}
	run_opts opt = {.sqlite = 1, .kind = kind, .n = n};
	pthread_t foreign;
	int other = kind != FAULT_SMALLOC &&
		    (atomic_store(&th_stop, 0), pthread_create(&foreign, NULL, th_foreign, NULL) == 0);
	th_kind = kind;
	atomic_store(&fault_vfs.fired_on, 0);
	atomic_store(&fault_alloc.fired_on, 0);
	arm(&opt);
	fault_alloc_enter();  /* every thread's allocations count from here */
	for (int w = 0; w < TH_WRITERS; w++) {
		memset(&t[w], 0, sizeof t[w]);
		t[w].h = h;
		t[w].w = w;
		if (pthread_create(&t[w].self, NULL, th_write, &t[w]) != 0)
			break;
		started++;
	}
	for (int w = 0; w < started; w++)
		pthread_join(t[w].self, NULL);
	fault_alloc_leave();
	if (other) {
		atomic_store(&th_stop, 1);
		pthread_join(foreign, NULL);
	}
	int64_t counted = disarm(&opt, &o);
	if (started < TH_WRITERS)
		problem(&o, "cannot start the writers");
	st->points = counted;
	uintptr_t on = kind == KIND_ALLOC ? atomic_load(&fault_alloc.fired_on)
					  : atomic_load(&fault_vfs.fired_on);
	helper = on != 0;
	for (int w = 0; w < started; w++)
		helper &= on != (uintptr_t)t[w].self;
	st->run++;
	st->fired += o.fired > 0;
	st->on_helper += o.fired > 0 && helper;
	for (int w = 0; w < started; w++) {
		if (t[w].problem[0])
			problem(&o, "%s", t[w].problem);
		for (int b = 0; b < TH_BATCHES; b++) {
			st->refused += t[w].outcome[b] == 0;
			st->unknown += t[w].outcome[b] == 2;
		}
	}
	/* The same handle, the fault gone: it serves, unless a failed sync of
	** the log poisoned the store, which then says so. */
	int status;
	json_t *v = send(h, 9201, "memory/remember",
			 "{\"records\":[{\"id\":\"after\",\"content\":\"after the fault\"}]}", &status,
			 &o);
	const char *msg = json_string_value(json_object_get(error_of(v), "message"));
	if (msg && strstr(msg, "refuses writes until it is reopened"))
		poisoned = 1;
	else if (!json_object_get(v, "result") || th_probe(h, &o, 9202))
		problem(&o, "the handle does not serve once the fault is gone: %s",
			wl_text(error_of(v)));
	json_decref(v);
	st->poisoned += poisoned;
	close_store(h);
	h = NULL;
	check_file(&o, 1);
	if (open_store_with(1, "2", &h, &err) != A2M_OK) {
		problem(&o, "reopen: %s", err ? err : "(no message)");
		a2m_free(err);
		goto out;
	}
	char *ids = th_ids(h, &o, "reopened");
	for (int w = 0; ids && w < started; w++)
		for (int b = 0; b < TH_BATCHES; b++) {
			int there = 0;
			for (int i = 0; i < TH_BATCH; i++) {
				char id[48];
				snprintf(id, sizeof id, ",t%d-%d-%d,", w, b, i);
				there += strstr(ids, id) != NULL;
			}
			int out_b = t[w].outcome[b];
			if (there != 0 && there != TH_BATCH)
				problem(&o, "batch %d of writer %d is there in part (%d of %d)", b, w,
					there, TH_BATCH);
			else if (out_b == 1 && there != TH_BATCH)
				problem(&o, "batch %d of writer %d was acknowledged and is not there", b,
					w);
			else if (out_b == 0 && there)
				problem(&o, "batch %d of writer %d was refused and is there", b, w);
		}
	free(ids);
	th_probe(h, &o, 9301);
	close_store(h);
	h = NULL;
out:
	if (fault_alloc_live() != live) {
		problem(&o, "%zd blocks liba2m allocated are left after a2m_close",
			(ssize_t)(fault_alloc_live() - live));
		fault_alloc_show_live();
	}
	alarm(0);
	if (verbose)
		printf("  %s: %lld fired%s%s, %s\n", point_name, (long long)o.fired,
		       helper && o.fired ? " on a helper thread" : "",
		       poisoned ? ", the store poisoned" : "", o.problem[0] ? o.problem : "fine");
	if (o.problem[0]) {
		fprintf(stderr, "  %s: %s\n", point_name, o.problem);
		check_failures_in_test++;
	}
	int bad = o.problem[0] != 0;
	run_free(&o);
	return bad;
}

/*
** The points of kind over the threaded workload: an unarmed run counts
** them (another run meets a few more or fewer); the test command runs
** TH_SAMPLE spread evenly, A2M_FAULTS=full every one, every:K every Kth.
*/
static void sweep_threads(int kind)
{
	th_stats st = {0}, probe = {0};
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Every full level of the index merges on a thread of its own, however
	** small (by default a small one merges inside the commit). */
	a2m_segments_ahead_min_for_tests(0);
	/* And the log is checkpointed every few pages, on the checkpointer's
	** thread and connection (sqlite_checkpoint.c). */
	a2m_sqlite_checkpoint_pages_for_tests(TH_CHECKPOINT_PAGES);
	uint64_t passes0, passes1, in_commit;
	a2m_sqlite_checkpoint_counts_for_tests(&passes0, &in_commit);
	/* Armed past the end: an unfaulted run, which counts the points. */
	th_run(kind, INT64_MAX, &probe);
	int64_t points = probe.points;
	if (probe.fired)
		check_failures_in_test++;
	int64_t asked = sweep_stride();
	int64_t stride = asked ? asked : (points + TH_SAMPLE - 1) / TH_SAMPLE;
	if (stride < 1)
		stride = 1;
	memset(&st, 0, sizeof st);
	for (int64_t n = asked ? 1 : stride / 2 + 1; n <= points && !sweep_count_only(); n += stride)
		th_run(kind, n, &st);
	a2m_segments_ahead_min_for_tests(-1);
	a2m_sqlite_checkpoint_pages_for_tests(0);
	a2m_sqlite_checkpoint_counts_for_tests(&passes1, &in_commit);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (sweep_count_only()) {
		printf("# faults on threads %s: about %lld points (counted, none run)\n",
		       kind == KIND_ALLOC ? "malloc" : fault_kind_names[kind], (long long)points);
		return;
	}
	printf("# faults on threads %s: about %lld points, %lld run (%s), %lld fired, %lld on a "
	       "helper thread, %lld batches refused, %lld of unknown outcome, %lld runs poisoned "
	       "the store, %llu checkpoint passes, %.1f s\n",
	       kind == KIND_ALLOC ? "malloc" : fault_kind_names[kind], (long long)points,
	       (long long)st.run, asked == 1 ? "all" : asked ? "every Kth" : "sampled",
	       (long long)st.fired, (long long)st.on_helper, (long long)st.refused,
	       (long long)st.unknown, (long long)st.poisoned,
	       (unsigned long long)(passes1 - passes0), secs);
}

#endif
