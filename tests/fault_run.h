/*
** fault_run.h — one store under a fault, for tests/test_faults.c: the
** files it lives in, opening and closing it and sending it requests with
** liba2m's allocations counted (fault_alloc.h), reading every record back,
** and the checks of what is left on disk: PRAGMA integrity_check, the kept
** counts against the records, `a2m check` (every area the engine derives
** from its records: counts, index, vectors, mirror; and groups), the
** procedural mirror against the records byte for byte.
** A broken rule is noted in the run's outcome (problem()), the first one
** kept, and the caller judges.
*/
#ifndef A2M_TEST_FAULT_RUN_H
#define A2M_TEST_FAULT_RUN_H

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "a2m.h"
#include "check.h"
#include "fault_alloc.h"
#include "fault_files.h"
#include "fault_vfs.h"
#include "fault_workload.h"
#include "server/check.h"
#include "store/store.h"

/* The alloc sweep's kind, beside the storage ones. */
#define KIND_ALLOC FAULT_KINDS

static char dir[64];           /* the test's directory */
static char db_path[128];      /* its database */
static char mirror_dir[128];   /* the database's procedural mirror */
static char cfg_path[128];
static int  verbose;           /* one point asked for: say what happened */
static char point_name[64];    /* for the alarm */

/* ---- one run ------------------------------------------------------------- */

typedef struct run_opts {
	int        sqlite;   /* engine: SQLite, else memory */
	int        kind;     /* fault_kind, or KIND_ALLOC; FAULT_NONE: none */
	int64_t    n;        /* the point */
	uint64_t   omit;     /* steps not sent (a reference run) */
	int        kind2;    /* a second fault once the first fired (fault_arm_then); 0: none */
	int64_t    m;        /* its point, counted from the first */
} run_opts;

typedef struct run_out {
	int      open_failed;          /* the armed open failed (then reopened) */
	json_t  *resp[WL_MAX];         /* normalised reply; NULL: not sent, or none */
	int      status[WL_MAX];       /* a2m_handle's return */
	uint64_t failed;               /* steps answered with an error, or not at all */
	uint64_t nomem;                /* steps a2m_handle answered A2M_NOMEM */
	int64_t  fired;                /* faults fired in all */
	int64_t  points;               /* operations of the kind counted (unarmed: the sweep) */
	json_t  *dump_same;            /* normalised, on the run's handle */
	json_t  *dump_reopen;          /* normalised, on a fresh handle (SQLite) */
	char     problem[2048];        /* the first rule broken; "" when none */
} run_out;

static void run_free(run_out *o)
{
	for (size_t i = 0; i < WL_MAX; i++)
		json_decref(o->resp[i]);
	json_decref(o->dump_same);
	json_decref(o->dump_reopen);
	memset(o, 0, sizeof *o);
}

static void problem(run_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(run_out *o, const char *fmt, ...)
{
	va_list ap;
	if (verbose && o->problem[0]) {
		/* Told one point at a time: every rule broken, not only the first. */
		va_start(ap, fmt);
		fputs("  and: ", stdout);
		vprintf(fmt, ap);
		fputs("\n", stdout);
		va_end(ap);
	}
	if (o->problem[0])
		return;   /* the first is the one to read */
	va_start(ap, fmt);
	vsnprintf(o->problem, sizeof o->problem, fmt, ap);
	va_end(ap);
}

static void remove_files(void)
{
	check_remove_db(db_path);
	DIR *d = opendir(mirror_dir);
	if (d) {
		struct dirent *e;
		char p[600];
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' || strncmp(e->d_name, ".a2m-tmp-", 9) == 0) {
				snprintf(p, sizeof p, "%s/%s", mirror_dir, e->d_name);
				unlink(p);
			}
		closedir(d);
		rmdir(mirror_dir);
	}
}

/*
** a2m_open of the workload's store with `helpers` helper threads ("0": a
** point is the same operation on every run), its allocations counted
** (fault_alloc.h).
*/
static int open_store_with(int sqlite, const char *helpers, a2m **h, char **err)
{
	a2m_config *cfg;
	*h = NULL;
	*err = NULL;
	if (a2m_config_new(&cfg) != A2M_OK)
		return A2M_NOMEM;
	int rc = A2M_OK;
	if (a2m_config_set(cfg, "engine", sqlite ? "sqlite" : "memory") != A2M_OK ||
	    (sqlite && a2m_config_set(cfg, "path", db_path) != A2M_OK) ||
	    a2m_config_set(cfg, "config_file", cfg_path) != A2M_OK ||
	    a2m_config_set(cfg, "helper_threads", helpers) != A2M_OK ||
	    a2m_config_set(cfg, "touch_buffer", "4") != A2M_OK)
		rc = A2M_MISUSE;
	if (rc == A2M_OK) {
		fault_alloc_enter();
		rc = a2m_open(cfg, h, err);
		fault_alloc_leave();
	}
	a2m_config_free(cfg);
	return rc;
}

static int open_store(int sqlite, a2m **h, char **err)
{
	return open_store_with(sqlite, "0", h, err);
}

static void close_store(a2m *h)
{
	fault_alloc_enter();
	a2m_close(h);
	fault_alloc_leave();
}

/*
** Sends one request with JSON-RPC id `id`; *status is a2m_handle's return.
** Returns the reply parsed (NULL: none), or NULL with a problem noted when
** it is not one line of JSON carrying that id.
*/
static json_t *send(a2m *h, int id, const char *method, const char *params, int *status,
		    run_out *o)
{
	char *msg = NULL, *reply = NULL;
	if (asprintf(&msg, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}", id,
		     method, params) < 0)
		abort();
	fault_alloc_enter();
	*status = a2m_handle(h, msg, A2M_NUL_TERMINATED, &reply);
	fault_alloc_leave();
	free(msg);
	if (*status != A2M_OK) {
		if (reply)
			problem(o, "%s: status %d came with a reply", method, *status);
		a2m_free(reply);
		return NULL;
	}
	if (!reply) {
		problem(o, "%s (id %d): no reply", method, id);
		return NULL;
	}
	json_error_t jerr;
	json_t *v = strchr(reply, '\n') ? NULL : json_loads(reply, 0, &jerr);
	if (!v || json_integer_value(json_object_get(v, "id")) != id ||
	    !json_is_integer(json_object_get(v, "id")) ||
	    !!json_object_get(v, "result") == !!json_object_get(v, "error"))
		problem(o, "%s (id %d): not one line of JSON-RPC with its id: %.300s", method, id,
			reply);
	a2m_free(reply);
	return v;
}

/* The error object of reply v, or NULL. */
static json_t *error_of(json_t *v)
{
	return json_object_get(v, "error");
}

/*
** Every record, as one normalised JSON array: the timeline of all of
** them, and one ranked recall (which reads the index). raw, when set,
** receives the timeline's records as they came (a new reference).
*/
static json_t *dump(a2m *h, run_out *o, const char *when, json_t **raw)
{
	int status;
	json_t *t = send(h, 9001, "memory/timeline", "{\"limit\":1000}", &status, o);
	json_t *r = send(h, 9002, "memory/recall", "{\"query\":\"alpha river\",\"limit\":20}", &status,
			 o);
	json_t *recs = json_object_get(json_object_get(t, "result"), "records");
	if (!recs || !json_object_get(r, "result"))
		problem(o, "%s: the records cannot be read: %s", when, wl_text(error_of(t ? t : r)));
	/* A group is never split between tiers (spec §3.4). */
	size_t i;
	json_t *rec;
	json_array_foreach(recs, i, rec) {
		json_t *g = json_object_get(rec, "group");
		for (size_t j = 0; g && j < i; j++) {
			json_t *other = json_array_get(recs, j);
			if (json_equal(json_object_get(other, "group"), g) &&
			    !json_equal(json_object_get(other, "tier"), json_object_get(rec, "tier")))
				problem(o, "%s: group %s is split between tiers", when,
					json_string_value(g));
		}
	}
	if (raw)
		*raw = json_incref(recs);
	/* Copies: raw keeps its clock. */
	json_t *out = json_pack("[oo]", recs ? json_deep_copy(recs) : json_null(),
				json_object_get(r, "result") ? json_deep_copy(json_object_get(r, "result"))
							     : json_null());
	json_decref(t);
	json_decref(r);
	wl_normalize(out);
	return out;
}

/* a2m_check_run's report: the first problem found, kept in ctx. */
static void on_check_report(void *ctx, a2m_check_phase phase, a2m_check_area area,
			    int problem_found, const char *msg)
{
	char *first = ctx;
	(void)phase;
	if (problem_found && !first[0])
		snprintf(first, 400, "%s: %s", a2m_check_area_name(area), msg);
}

/*
** What `a2m check --db` says of the file (server/check.h): every area the
** engine derives from its records, read-only, opened as a2m_open would
** with the workload's layout. Unarmed: the check is not what is tested.
*/
static void check_store(run_out *o)
{
	a2m_config *cfg;
	char first[400] = "", err[512] = "";
	a2m_check_run cr = {.report = on_check_report, .ctx = first};
	int was = fault_pause();
	if (a2m_config_new(&cfg) != A2M_OK)
		abort();
	if (a2m_config_set(cfg, "engine", "sqlite") != A2M_OK ||
	    a2m_config_set(cfg, "path", db_path) != A2M_OK ||
	    a2m_config_set(cfg, "config_file", cfg_path) != A2M_OK ||
	    a2m_config_set(cfg, "helper_threads", "0") != A2M_OK)
		abort();
	if (a2m_check_store(cfg, &cr, err, sizeof err) != 0)
		problem(o, "a2m check cannot check the file: %s", err);
	else if (cr.remaining)
		problem(o, "a2m check finds a problem: %s", first[0] ? first : "(no message)");
	a2m_config_free(cfg);
	fault_resume(was);
}

/*
** PRAGMA integrity_check, a2m_counts against the records, and a2m check
** once the file has been opened whole (complete: not after a failed open,
** which may have left a file with no schema).
*/
static void check_file(run_out *o, int complete)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	struct stat sb;
	if (stat(db_path, &sb) != 0)
		return;   /* an open that failed before creating it */
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		problem(o, "the file cannot be opened: %s", sqlite3_errmsg(db));
		sqlite3_close(db);
		return;
	}
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW ||
	    strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0)
		problem(o, "integrity_check: %s",
			st && sqlite3_column_text(st, 0) ? (const char *)sqlite3_column_text(st, 0)
							 : sqlite3_errmsg(db));
	sqlite3_finalize(st);
	st = NULL;
	/* A file whose first migration failed has no table: nothing to count.
	** a2m_counts holds the records up to the counts' mark (schema step 10;
	** those above it are counted from their rows, sqlite_counts.c). */
#define FAULT_COUNTED_RECORDS \
	" SELECT ifnull(tier, x''), ifnull(session, x''), count(*) FROM records" \
	" WHERE seq <= ifnull((SELECT CAST(value AS INTEGER) FROM a2m_meta" \
	" WHERE name = 'counted'), 9223372036854775807) GROUP BY 1, 2"
	static const char counts[] =
		"SELECT (SELECT count(*) FROM (" FAULT_COUNTED_RECORDS
		" EXCEPT SELECT tier, session, n FROM a2m_counts))"
		" + (SELECT count(*) FROM (SELECT tier, session, n FROM a2m_counts EXCEPT"
		FAULT_COUNTED_RECORDS "))";
#undef FAULT_COUNTED_RECORDS
	int have = 0;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE name = 'a2m_counts'",
			       -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		have = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (have && (sqlite3_prepare_v2(db, counts, -1, &st, NULL) != SQLITE_OK ||
		     sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int(st, 0) != 0))
		problem(o, "a2m_counts disagrees with the records (%s)", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (complete)
		check_store(o);
}

/* The bytes a2m writes for rec's mirror file (store.h, a2m_sqlite_options). */
static char *mirror_text(json_t *rec)
{
	char *text = NULL;
	const char *key = json_string_value(json_object_get(rec, "key"));
	const char *content = json_string_value(json_object_get(rec, "content"));
	size_t clen = strlen(content);
	if (asprintf(&text, "---\nid: \"%s\"\n%s%s%screated_at: %s\nrevision: %lld\n---\n%s%s",
		     json_string_value(json_object_get(rec, "id")), key ? "key: \"" : "",
		     key ? key : "", key ? "\"\n" : "",
		     json_string_value(json_object_get(rec, "created_at")),
		     (long long)json_integer_value(json_object_get(rec, "revision")), content,
		     clen && content[clen - 1] == '\n' ? "" : "\n") < 0)
		abort();
	return text;
}

/* The mirror directory holds exactly the files of the procedural records. */
static void check_mirror(json_t *recs, run_out *o)
{
	size_t i, expected = 0, found = 0;
	json_t *rec;
	json_array_foreach(recs, i, rec) {
		const char *tier = json_string_value(json_object_get(rec, "tier"));
		if (!tier || strcmp(tier, "procedural") != 0)
			continue;
		a2m_record r = {0};
		r.id = (char *)json_string_value(json_object_get(rec, "id"));
		r.key = (char *)json_string_value(json_object_get(rec, "key"));
		r.content = (char *)json_string_value(json_object_get(rec, "content"));
		char *name = a2m_mirror_file_name(&r), path[700], buf[4096];
		char *want = mirror_text(rec);
		snprintf(path, sizeof path, "%s/%s", mirror_dir, name);
		FILE *f = fopen(path, "r");
		size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
		buf[got] = '\0';
		if (!f || strcmp(buf, want) != 0)
			problem(o, "mirror file %s: %s%.300s%s%.300s", name, f ? "stale: " : "missing",
				f ? buf : "", f ? " instead of " : "", f ? want : "");
		if (f)
			fclose(f);
		free(want);
		free(name);
		expected++;
	}
	DIR *d = opendir(mirror_dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			found++;
	if (d)
		closedir(d);
	if (found != expected)
		problem(o, "the mirror holds %zu files for %zu procedural records", found, expected);
}

/*
** Commits to the file from a connection of the test's own, as another
** process sharing it would: a2m's connection then finds the file changed,
** drops SQLite's page cache and its own caches, and reads again what the
** next request needs, so reads fail where they would on a cold cache.
*/
static void foreign_commit(int step, run_out *o)
{
	int was = fault_pause();
	sqlite3 *db = NULL;
	char sql[64];
	snprintf(sql, sizeof sql, "PRAGMA user_version = %d", step);
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
	    sqlite3_busy_timeout(db, 5000) != SQLITE_OK ||
	    sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		problem(o, "the test's own commit failed: %s", sqlite3_errmsg(db));
	sqlite3_close(db);
	fault_resume(was);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "test_faults: a fault point hung: ";
	ssize_t w = write(2, msg, sizeof msg - 1);
	w += write(2, point_name, strlen(point_name));
	w += write(2, "\n", 1);
	(void)w;
	_exit(3);
}

static void arm(const run_opts *opt)
{
	if (opt->kind == KIND_ALLOC) {
		fault_arm(FAULT_NONE, 0);
		fault_alloc_arm(opt->n);
	} else {
		fault_arm((fault_kind)opt->kind, opt->n);
		if (opt->kind2)
			fault_arm_then((fault_kind)opt->kind2, opt->m);
		fault_alloc_arm(0);
	}
}

/* Ends the armed stretch; returns the operations of the run's kind counted. */
static int64_t disarm(const run_opts *opt, run_out *o)
{
	o->fired = opt->kind == KIND_ALLOC ? fault_alloc_fired() : fault_fired();
	int64_t points = opt->kind == KIND_ALLOC ? fault_alloc_count()
						  : fault_count(fault_counted_as[opt->kind]);
	fault_disarm();
	fault_alloc_disarm();
	return points;
}

#endif
