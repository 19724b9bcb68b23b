/*
** fault_sweep.h — the sweeps of tests/test_faults.c (docs/FAULTS.md).
**
** The workload's: run() sends the whole workload with one point armed;
** point() judges it against a reference, the same workload unfaulted
** without the requests that failed (reference_of, cached); sweep() runs
** every point of a kind, or the test command's sample of them.
**
** One request's: request_sweep() arms every point one request reaches on
** a store prepared without faults; its reply must be the unfaulted one or
** a clean failure, and the records those before or after it. The
** regression tests of the bugs the sweeps found are such sweeps.
*/
#ifndef A2M_TEST_FAULT_SWEEP_H
#define A2M_TEST_FAULT_SWEEP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "fault_run.h"

/* The test command's sample of each kind; ASan makes each run ~3x dearer. */
#if defined(__SANITIZE_ADDRESS__)
#define SWEEP_HEAD   30   /* points of each kind always run */
#define SWEEP_SAMPLE 30   /* and this many more, evenly spread */
#else
#define SWEEP_HEAD   60
#define SWEEP_SAMPLE 60
#endif
#define POINT_ALARM_S 300 /* a point that takes longer has hung */
/* A request's sweep of SQLite's allocations, in the test command. */
#define REQUEST_HEAD   40
#define REQUEST_STRIDE 8
#define REQUEST_TAIL   40

/*
** Runs the workload as opt says: the fault armed from before a2m_open to
** the end of the workload, then the checks that need no reference.
*/
static void run(const run_opts *opt, run_out *o)
{
	a2m *h = NULL;
	char *err = NULL;
	memset(o, 0, sizeof *o);
	remove_files();
	size_t live = fault_alloc_live();
	alarm(POINT_ALARM_S);
	arm(opt);
	int rc = open_store(opt->sqlite, &h, &err);
	if (rc != A2M_OK && opt->kind2) {
		/* Opened again at once, still armed: the second fault may land in
		** the recovery of what the failed open left. */
		if (rc != A2M_CANTOPEN && rc != A2M_NOMEM)
			problem(o, "a failed open answered %d (%s)", rc, err ? err : "(none)");
		if (verbose)
			printf("  open failed (%d), opened again armed: %s\n", rc, err ? err : "");
		a2m_free(err);
		rc = open_store(opt->sqlite, &h, &err);
	}
	if (rc != A2M_OK) {
		o->open_failed = 1;
		if (opt->kind == FAULT_NONE)
			problem(o, "open failed unarmed: %s", err ? err : "(no message)");
		else if (!err && rc != A2M_NOMEM)
			problem(o, "a failed open (%d) said nothing", rc);
		else if (rc != A2M_CANTOPEN && rc != A2M_NOMEM)
			problem(o, "a failed open answered %d (%s)", rc, err);
		if (verbose)
			printf("  open failed (%d): %s\n", rc, err ? err : "");
		a2m_free(err);
		o->points = disarm(opt, o);
		if (opt->sqlite)
			check_file(o, 0);
		if ((rc = open_store(opt->sqlite, &h, &err)) != A2M_OK) {
			problem(o, "reopen after a failed open: %s", err ? err : "(no message)");
			a2m_free(err);
			alarm(0);
			return;
		}
	}
	for (size_t i = 0; i < wl_n; i++) {
		if (opt->omit & (UINT64_C(1) << i))
			continue;
		if (opt->sqlite)
			foreign_commit((int)i + 1, o);
		int64_t before = opt->kind == KIND_ALLOC ? fault_alloc_fired() : fault_fired();
		json_t *v = send(h, (int)i + 1, wl_steps[i].method, wl_steps[i].params,
				 &o->status[i], o);
		int64_t fired = (opt->kind == KIND_ALLOC ? fault_alloc_fired() : fault_fired()) -
				before;
		/*
		** A failure is -32603 or no reply; any other error is an answer
		** like a result (the workload asks for one on purpose), which
		** the reference must give too.
		*/
		json_t *e = error_of(v);
		int code = e ? (int)json_integer_value(json_object_get(e, "code")) : 0;
		const char *msg = e ? json_string_value(json_object_get(e, "message")) : NULL;
		int fail = o->status[i] != A2M_OK || code == A2M_INTERNAL_ERROR;
		if (verbose && fired)
			printf("  the fault fired in step %zu (%s)\n", i + 1, wl_steps[i].method);
		if (fail) {
			o->failed |= UINT64_C(1) << i;
			if (verbose)
				printf("  step %zu %s failed (status %d): %s\n", i + 1,
				       wl_steps[i].method, o->status[i], e ? wl_text(e) : "");
		}
		if (o->status[i] == A2M_NOMEM)
			o->nomem |= UINT64_C(1) << i;
		if (o->status[i] != A2M_OK && opt->kind != KIND_ALLOC)
			problem(o, "step %zu (%s): a2m_handle returned %d under a storage fault",
				i + 1, wl_steps[i].method, o->status[i]);
		if (e && !msg)
			problem(o, "step %zu (%s): an error without a message: %s", i + 1,
				wl_steps[i].method, wl_text(e));
		else if (code == A2M_INTERNAL_ERROR && opt->kind != KIND_ALLOC && !strstr(msg, "storage"))
			problem(o, "step %zu (%s): the error does not name the store: %s", i + 1,
				wl_steps[i].method, wl_text(e));
		/* A file of the mirror is written after the commit, which stands
		** (store.h, a2m_sqlite_options): never the request's failure. */
		if (fail && opt->kind == FAULT_MIRROR)
			problem(o, "step %zu (%s) failed for a mirror file: %s", i + 1,
				wl_steps[i].method, e ? wl_text(e) : "(no reply)");
		if (fail && !fired && opt->kind != FAULT_FULL)
			problem(o, "step %zu (%s) failed without a fault of its own", i + 1,
				wl_steps[i].method);
		if (v && !fail)
			wl_answer(v);
		o->resp[i] = v;
	}
	/*
	** Closed and opened again, still armed: a close and an open of a
	** file with records can fail too. Not with a full disk: its close
	** could not write recall's last access counts, which a close then
	** loses (docs/PROTOCOL.md, Salience), and the run would differ. Nor
	** for a mirror file: the open would reconcile the directory, and what
	** is checked is that the next commit does (the probe below; an open's
	** reconciliation has test_reopen_under_mirror_faults).
	*/
	if (opt->sqlite && !o->open_failed && opt->kind != FAULT_FULL &&
	    opt->kind != FAULT_MIRROR) {
		close_store(h);
		rc = open_store(1, &h, &err);
		if (rc != A2M_OK && opt->kind2) {
			if (rc != A2M_CANTOPEN && rc != A2M_NOMEM)
				problem(o, "a failed reopen answered %d (%s)", rc, err ? err : "(none)");
			if (verbose)
				printf("  reopen failed (%d), opened again armed: %s\n", rc,
				       err ? err : "");
			a2m_free(err);
			rc = open_store(1, &h, &err);
		}
		if (rc != A2M_OK) {
			o->open_failed = 1;
			if (rc != A2M_CANTOPEN && rc != A2M_NOMEM)
				problem(o, "a failed reopen answered %d (%s)", rc, err);
			if (verbose)
				printf("  reopen failed (%d): %s\n", rc, err ? err : "");
			a2m_free(err);
			o->points = disarm(opt, o);
			if ((rc = open_store(1, &h, &err)) != A2M_OK) {
				problem(o, "reopen after a failed reopen: %s", err ? err : "(none)");
				a2m_free(err);
				alarm(0);
				return;
			}
		}
	}
	if (!o->open_failed)
		o->points = disarm(opt, o);
	/* The fault is gone: the same handle must read, write and find. */
	o->dump_same = dump(h, o, "same handle", NULL);
	int status;
	json_t *w = send(h, 9003, "memory/remember",
			 "{\"records\":[{\"id\":\"probe\",\"content\":\"probe written once the fault is gone\",\"tier\":\"semantic\"}]}",
			 &status, o);
	json_t *r = send(h, 9004, "memory/recall", "{\"query\":\"probe written\",\"limit\":1}", &status,
			 o);
	json_t *first = json_array_get(json_object_get(json_object_get(r, "result"), "records"), 0);
	const char *first_id = json_string_value(json_object_get(first, "id"));
	if (!json_object_get(w, "result") || !first_id || strcmp(first_id, "probe") != 0)
		problem(o, "the handle does not serve once the fault is gone: %s / %s",
			wl_text(error_of(w)), wl_text(error_of(r)));
	json_decref(w);
	json_decref(r);
	close_store(h);
	if (opt->sqlite) {
		check_file(o, 1);
		json_t *raw = NULL;
		if (open_store(1, &h, &err) != A2M_OK) {
			problem(o, "reopen: %s", err ? err : "(no message)");
			a2m_free(err);
		} else {
			o->dump_reopen = dump(h, o, "reopened", &raw);
			check_mirror(raw, o);
			json_decref(raw);
			close_store(h);
		}
	}
	if (fault_alloc_live() != live) {
		problem(o, "%zd blocks liba2m allocated are still there after a2m_close",
			(ssize_t)(fault_alloc_live() - live));
		fault_alloc_show_live();
	}
	alarm(0);
}

/* ---- references: the same workload, unfaulted, without some requests ------ */

typedef struct reference {
	int      sqlite;
	uint64_t omit;
	run_out  out;
} reference;

static reference refs[2 * WL_MAX + 8];
static size_t nrefs;

static const run_out *reference_of(int sqlite, uint64_t omit)
{
	for (size_t i = 0; i < nrefs; i++)
		if (refs[i].sqlite == sqlite && refs[i].omit == omit)
			return &refs[i].out;
	if (nrefs == sizeof refs / sizeof refs[0])
		abort();
	reference *r = &refs[nrefs++];
	run_opts opt = {.sqlite = sqlite, .kind = FAULT_NONE, .omit = omit};
	r->sqlite = sqlite;
	r->omit = omit;
	run(&opt, &r->out);
	if (r->out.problem[0] || r->out.failed) {
		fprintf(stderr, "  the reference run (omitting %#llx) failed: %s\n",
			(unsigned long long)omit, r->out.problem);
		check_failures_in_test++;
	}
	return &r->out;
}

/* Compares o with reference ref, skipping the steps in skip. "" when equal. */
static void compare(const run_out *o, const run_out *ref, uint64_t skip, char *why, size_t len)
{
	why[0] = '\0';
	for (size_t i = 0; i < wl_n; i++) {
		if (skip & (UINT64_C(1) << i))
			continue;
		if ((o->resp[i] || ref->resp[i]) && !json_equal(o->resp[i], ref->resp[i])) {
			char *a = wl_text(o->resp[i]), *b = wl_text(ref->resp[i]);
			snprintf(why, len, "step %zu (%s): got %.400s, want %.400s", i + 1,
				 wl_steps[i].method, a, b);
			free(a);
			free(b);
			return;
		}
	}
	const json_t *got[2] = {o->dump_same, o->dump_reopen};
	const json_t *want[2] = {ref->dump_same, ref->dump_reopen};
	static const char *const when[2] = {"the same handle", "the reopened file"};
	for (int k = 0; k < 2; k++)
		if ((got[k] || want[k]) && !json_equal(got[k], want[k])) {
			char diff[800];
			wl_diff(got[k], want[k], diff, sizeof diff);
			snprintf(why, len, "%s holds other records than a run without step(s) %#llx: %s",
				 when[k], (unsigned long long)o->failed, diff);
			return;
		}
}

/* ---- a sweep ----------------------------------------------------------------- */

typedef struct sweep_stats {
	int64_t points, run, fired, failed_requests, open_failures, committed_anyway;
	int64_t last_points;  /* the operations the last point's run counted */
	int64_t fired_twice;  /* runs where the second fault fired too */
	double  seconds;
} sweep_stats;

/* Runs the point opt arms and judges it; returns 0 when all is well. */
static int judge(const run_opts *opt, sweep_stats *st)
{
	int sqlite = opt->sqlite, kind = opt->kind;
	run_out o;
	if (opt->kind2)
		snprintf(point_name, sizeof point_name, "sqlite %s:%lld then %s:%lld",
			 fault_kind_names[kind], (long long)opt->n, fault_kind_names[opt->kind2],
			 (long long)opt->m);
	else
		snprintf(point_name, sizeof point_name, "%s %s:%lld", sqlite ? "sqlite" : "memory",
			 kind == KIND_ALLOC ? "malloc" : fault_kind_names[kind], (long long)opt->n);
	run(opt, &o);
	if (opt->kind2)
		o.points = fault_count_then();  /* what the second could reach */
	st->run++;
	st->fired += o.fired > 0;
	st->open_failures += o.open_failed;
	st->failed_requests += __builtin_popcountll(o.failed);
	char why[1200] = "";
	if (!o.problem[0] && kind != FAULT_FULL &&
	    __builtin_popcountll(o.failed) > (opt->kind2 ? 2 : 1))
		problem(&o, "%d requests failed for one fault", __builtin_popcountll(o.failed));
	if (!o.problem[0]) {
		compare(&o, reference_of(sqlite, o.failed), o.failed, why, sizeof why);
		/*
		** A write whose reply could not be made may have committed
		** (a2m_handle: A2M_NOMEM; or a -32603 for memory the reply
		** needed): then the run is one with the request.
		*/
		if (why[0] && kind == KIND_ALLOC && o.failed) {
			char again[1200];
			compare(&o, reference_of(sqlite, 0), o.failed, again, sizeof again);
			if (!again[0]) {
				why[0] = '\0';
				st->committed_anyway++;
				if (verbose)
					printf("  %s: the failed request committed (a run with it)\n",
					       point_name);
			}
		}
	}
	if (o.problem[0] || why[0]) {
		fprintf(stderr, "  %s: %s\n", point_name, o.problem[0] ? o.problem : why);
		check_failures_in_test++;
	}
	if (verbose)
		printf("  %s: %lld fired, failed steps %#llx, %s\n", point_name, (long long)o.fired,
		       (unsigned long long)o.failed, o.problem[0] || why[0] ? "BROKEN" : "fine");
	int bad = o.problem[0] || why[0];
	st->last_points = o.points;
	st->fired_twice += o.fired >= 2;
	run_free(&o);
	return bad;
}

/* Runs fault point n of kind and judges it; returns 0 when all is well. */
static int point(int sqlite, int kind, int64_t n, sweep_stats *st)
{
	run_opts opt = {.sqlite = sqlite, .kind = kind, .n = n};
	return judge(&opt, st);
}

/*
** The points A2M_FAULTS asks a sweep for: "full", every one (1);
** "every:K", every Kth after the first SWEEP_HEAD (K); else 0, the test
** command's sample.
*/
static int64_t sweep_stride(void)
{
	const char *v = getenv("A2M_FAULTS");
	long long k;
	if (v && strcmp(v, "full") == 0)
		return 1;
	if (v && sscanf(v, "every:%lld", &k) == 1 && k > 0)
		return k;
	return 0;
}

/*
** A2M_FAULTS=count: each sweep runs only its counting run and prints how
** many points its kind has, none of them run (docs/FAULTS.md quotes it).
*/
static int sweep_count_only(void)
{
	const char *v = getenv("A2M_FAULTS");
	return v && strcmp(v, "count") == 0;
}

/*
** Every point of kind the unfaulted workload reaches (one past the last
** too: arming it must change nothing), or the bounded sample of them.
*/
static void sweep(int sqlite, int kind)
{
	sweep_stats st = {0};
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* How many points the kind has: an armed run at a point never reached. */
	run_opts probe = {.sqlite = sqlite, .kind = kind, .n = INT64_MAX};
	run_out o;
	run(&probe, &o);
	st.points = o.points;
	if (o.problem[0] || o.fired) {
		fprintf(stderr, "  counting run: %s\n", o.problem);
		check_failures_in_test++;
	}
	run_free(&o);
	if (sweep_count_only()) {
		printf("# faults %s %s: %lld points (counted, none run)\n", sqlite ? "sqlite" : "memory",
		       kind == KIND_ALLOC ? "malloc" : fault_kind_names[kind], (long long)st.points);
		return;
	}
	int64_t last = st.points + 1;
	int64_t asked = sweep_stride();
	int full = asked == 1;
	int64_t stride = asked ? asked
			       : last > SWEEP_HEAD ? (last - SWEEP_HEAD + SWEEP_SAMPLE - 1) / SWEEP_SAMPLE : 1;
	if (stride < 1)
		stride = 1;
	char how[32];
	if (full || !asked)
		snprintf(how, sizeof how, "%s", full ? "all" : "sampled");
	else
		snprintf(how, sizeof how, "every %lldth", (long long)stride);
	for (int64_t n = 1; n <= last; n++) {
		if (!full && n > SWEEP_HEAD && (n - SWEEP_HEAD) % stride != 0 && n != last)
			continue;
		point(sqlite, kind, n, &st);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	st.seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("# faults %s %s: %lld points, %lld run (%s), %lld fired, %lld requests failed, "
	       "%lld opens failed",
	       sqlite ? "sqlite" : "memory", kind == KIND_ALLOC ? "malloc" : fault_kind_names[kind],
	       (long long)st.points, (long long)st.run, how,
	       (long long)st.fired, (long long)st.failed_requests, (long long)st.open_failures);
	if (kind == KIND_ALLOC)
		printf(", %lld committed though answered with an error",
		       (long long)st.committed_anyway);
	printf(", %.1f s\n", st.seconds);
}

/* ---- a second fault while recovering from the first -------------------------- */

/* The test command's sample of each pair: first points, and second points
** after each (1..PAIR_SAMPLE_M). make faults: every first point, and the
** PAIR_WINDOW operations after it. */
#if defined(__SANITIZE_ADDRESS__)
#define PAIR_SAMPLE_N 2
#define PAIR_SAMPLE_M 1
#else
#define PAIR_SAMPLE_N 3
#define PAIR_SAMPLE_M 2
#endif
#define PAIR_WINDOW 16

/*
** Fault n of kind first, then, once it has fired, the mth operation of
** kind second after it: the rollback of the failed request, the next
** request, the open tried again after a failed one, the log's recovery
** when the file is opened again after a close that could not checkpoint.
** The same oracle as a single fault: the run equals one without the
** (at most two) requests that failed, the file is sound, the handle
** serves. m runs from 1 until the second no longer fires (the workload
** has no more such operations after the first) or past the window.
*/
static void sweep_pairs(fault_kind first, fault_kind second)
{
	sweep_stats st = {0};
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	run_opts probe = {.sqlite = 1, .kind = first, .n = INT64_MAX};
	run_out o;
	run(&probe, &o);
	st.points = o.points;
	run_free(&o);
	if (sweep_count_only()) {
		printf("# faults sqlite %s then %s: %lld first points (counted, none run)\n",
		       fault_kind_names[first], fault_kind_names[second], (long long)st.points);
		return;
	}
	int64_t asked = sweep_stride();
	/* SQLite's allocations have some 35 000 first points: every 50th even in
	** make faults (each with the window after it is some 11 000 runs). */
	if (asked == 1 && first == FAULT_SMALLOC)
		asked = 50;
	int64_t stride = asked ? asked : (st.points + PAIR_SAMPLE_N - 1) / PAIR_SAMPLE_N;
	int64_t window = asked ? PAIR_WINDOW : PAIR_SAMPLE_M;
	if (stride < 1)
		stride = 1;
	for (int64_t n = asked ? 1 : stride / 2 + 1; n <= st.points; n += stride) {
		for (int64_t m = 1; m <= window; m++) {
			run_opts opt = {.sqlite = 1, .kind = first, .n = n, .kind2 = second, .m = m};
			judge(&opt, &st);
			if (st.last_points < m)
				break;  /* the second was not reached: no later one is */
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("# faults sqlite %s then %s: %lld first points, %s (stride %lld, window %lld), "
	       "%lld run, %lld with both "
	       "fired, %lld requests failed, %lld opens failed, %.1f s\n",
	       fault_kind_names[first], fault_kind_names[second], (long long)st.points,
	       asked == 1 ? "all" : asked ? "every Kth" : "sampled", (long long)stride,
	       (long long)window,
	       (long long)st.run, (long long)st.fired_twice, (long long)st.failed_requests,
	       (long long)st.open_failures, secs);
}

/* ---- every point of one request ---------------------------------------------- */

typedef struct wl_msg {
	const char *method, *params;
} wl_msg;

/* A fresh store, prepared by setup (nothing armed): the handle, or NULL. */
static a2m *prepared(int sqlite, const wl_msg *setup, run_out *o)
{
	a2m *h;
	char *err = NULL;
	remove_files();
	if (open_store(sqlite, &h, &err) != A2M_OK) {
		problem(o, "open: %s", err ? err : "(no message)");
		a2m_free(err);
		return NULL;
	}
	for (int i = 0; setup && setup[i].method; i++) {
		int status;
		json_t *v = send(h, 100 + i, setup[i].method, setup[i].params, &status, o);
		json_t *e = error_of(v);
		if (!v || json_integer_value(json_object_get(e, "code")) == A2M_INTERNAL_ERROR)
			problem(o, "setup %s: %s", setup[i].method, wl_text(e));
		json_decref(v);
	}
	return h;
}

/* a and b are equal but for access counts. */
static int same_but_counts(const json_t *a, const json_t *b)
{
	static const char *const counts[] = {"access_count"};
	json_t *x = json_deep_copy(a), *y = json_deep_copy(b);
	wl_drop_keys(x, counts, 1);
	wl_drop_keys(y, counts, 1);
	int same = json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return same;
}

/*
** Every fault point of kind that one request reaches, on a store setup
** prepared: sent with point n armed, for each n, its reply must be the
** unfaulted one or a clean failure (-32603, or A2M_NOMEM for an
** allocation), and the records afterwards those before the request (it
** failed) or those after it (it succeeded; or, for an allocation, its reply
** could not be made). The regression tests of the bugs the sweeps found
** are such sweeps: they do not depend on where in the workload a point
** falls.
*/
static void request_sweep(int sqlite, int kind, const wl_msg *setup, const char *method,
			  const char *params)
{
	run_out base = {0}, o;
	run_opts opt = {.sqlite = sqlite, .kind = kind, .n = INT64_MAX};
	int status;
	/* Each dump is the store's first (its recall counts accesses). */
	a2m *h = prepared(sqlite, setup, &base);
	json_t *before = h ? dump(h, &base, "before", NULL) : NULL;
	close_store(h);
	h = prepared(sqlite, setup, &base);
	if (!h) {
		fprintf(stderr, "  %s\n", base.problem);
		CHECK(0);
		json_decref(before);
		return;
	}
	/* Another connection's commit: the request reads what it needs from the file. */
	if (sqlite)
		foreign_commit(1, &base);
	arm(&opt);
	json_t *want = send(h, 1, method, params, &status, &base);
	int64_t points = disarm(&opt, &base);
	wl_answer(want);
	json_t *after = dump(h, &base, "after", NULL);
	close_store(h);
	if (base.problem[0] || !want ||
	    json_integer_value(json_object_get(error_of(want), "code")) == A2M_INTERNAL_ERROR) {
		fprintf(stderr, "  unfaulted %s: %s %s\n", method, base.problem, wl_text(want));
		CHECK(0);
	}
	int64_t failed = 0;
	/* A2M_FAULTS_AT=N: that point of each request sweep alone, told. */
	const char *at = getenv("A2M_FAULTS_AT");
	int64_t only = at ? strtoll(at, NULL, 10) : 0;
	if (only)
		verbose = 1;
	/*
	** SQLite's allocations are many (a session close makes some 1 100):
	** the test command runs the first REQUEST_HEAD, every
	** REQUEST_STRIDE-th, and the last REQUEST_TAIL (where the commit and
	** what follows it are); A2M_FAULTS=full or every:K all of them.
	*/
	int sample = kind == FAULT_SMALLOC && !sweep_stride() && !only;
	int64_t ran = 0;
	for (int64_t n = only ? only : 1; n <= points && !base.problem[0]; n++) {
		if (only && n > only)
			break;
		if (sample && n > REQUEST_HEAD && n % REQUEST_STRIDE != 0 &&
		    n <= points - REQUEST_TAIL)
			continue;
		ran++;
		memset(&o, 0, sizeof o);
		opt.n = n;
		snprintf(point_name, sizeof point_name, "%s %s of %s:%lld", sqlite ? "sqlite" : "memory",
			 kind == KIND_ALLOC ? "malloc" : fault_kind_names[kind], method, (long long)n);
		size_t live = fault_alloc_live();
		alarm(POINT_ALARM_S);
		h = prepared(sqlite, setup, &o);
		if (!h)
			break;
		if (sqlite)
			foreign_commit(1, &o);
		arm(&opt);
		json_t *got = send(h, 1, method, params, &status, &o);
		disarm(&opt, &o);
		json_t *e = error_of(got);
		int failure = json_integer_value(json_object_get(e, "code")) == A2M_INTERNAL_ERROR;
		int ok = got && !failure;
		if (ok)
			wl_answer(got);
		if (ok && !json_equal(got, want))
			problem(&o, "a wrong answer: %.600s", wl_text(got));
		if (failure && kind != KIND_ALLOC &&
		    !strstr(json_string_value(json_object_get(e, "message")), "storage"))
			problem(&o, "not a clean failure: %s", wl_text(e));
		if (!got && status != A2M_NOMEM)
			problem(&o, "no reply, status %d", status);
		failed += !ok;
		json_t *now = dump(h, &o, "afterwards", NULL);
		if (only) {
			char *a = wl_text(got), *b = wl_text(now);
			printf("  %s: %lld fired; the reply %s\n  the records afterwards %s\n",
			       point_name, (long long)fault_fired(), a, b);
			free(a);
			free(b);
		}
		if (!json_equal(now, ok ? after : before) &&
		    !(kind == KIND_ALLOC && json_equal(now, after))) {
			char why[800];
			wl_diff(now, ok ? after : before, why, sizeof why);
			problem(&o, "the records afterwards are not those %s it: %s",
				ok ? "after" : "before", why);
		}
		close_store(h);
		if (sqlite) {
			/* The file as a fresh handle finds it, the mirror reconciled. */
			char *err = NULL;
			json_t *raw = NULL, *again;
			check_file(&o, 1);
			if (open_store(1, &h, &err) != A2M_OK) {
				problem(&o, "reopen: %s", err ? err : "(no message)");
				a2m_free(err);
			} else {
				again = dump(h, &o, "reopened", &raw);
				/* The first dump's recall counted an access of each hit. */
				if (!same_but_counts(again, now))
					problem(&o, "the reopened file holds other records");
				check_mirror(raw, &o);
				json_decref(raw);
				json_decref(again);
				close_store(h);
			}
		}
		if (fault_alloc_live() != live) {
			problem(&o, "%zd blocks liba2m allocated are left after a2m_close",
				(ssize_t)(fault_alloc_live() - live));
			fault_alloc_show_live();
		}
		alarm(0);
		if (o.problem[0]) {
			fprintf(stderr, "  %s: %s\n", point_name, o.problem);
			CHECK(0);
		}
		json_decref(got);
		json_decref(now);
	}
	printf("# %s %s of %s: %lld points, %lld run, %lld failed it\n", sqlite ? "sqlite" : "memory",
	       kind == KIND_ALLOC ? "malloc" : fault_kind_names[kind], method, (long long)points,
	       (long long)ran, (long long)failed);
	json_decref(want);
	json_decref(before);
	json_decref(after);
}

#endif
