/*
** fault_reopen.h — the tests of tests/test_faults.c about opening and
** reopening a store under faults (docs/FAULTS.md): that the oracle can
** fail, the term index rebuilt while SQLite's allocations fail, a2m_open
** while liba2m's fail, and the procedural mirror's files damaged between
** runs. Included once, by test_faults.c, after fault_sweep.h.
*/
#ifndef A2M_TEST_FAULT_REOPEN_H
#define A2M_TEST_FAULT_REOPEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

#include "a2m.h"
#include "check.h"
#include "store/sqlite_internal.h"
#include "store/sqlite_segments.h"
#include "store/store.h"

#include "fault_sweep.h"

/*
** The oracle must be able to fail: a run without one write is not a run
** with it, and the shim really fails what it is armed with.
*/
static void test_oracle_sees_a_missing_write(void)
{
	const run_out *all = reference_of(1, 0);
	const run_out *without = reference_of(1, UINT64_C(1) << 6);  /* the first bulk */
	char why[1200];
	compare(without, all, UINT64_C(1) << 6, why, sizeof why);
	CHECK(why[0] != '\0');
	compare(all, reference_of(1, 0), 0, why, sizeof why);
	CHECK_STR(why, "");
	CHECK(all->points == 0 && all->fired == 0);
	sweep_stats st = {0};
	/* The 3rd write fails: in the open's first migration. */
	run_opts opt = {.sqlite = 1, .kind = FAULT_WRITE, .n = 3};
	run_out o;
	run(&opt, &o);
	CHECK_INT(o.fired, 1);
	CHECK_STR(o.problem, "");
	run_free(&o);
	(void)st;
}

/*
** The file's checks can fail too: after an unfaulted run the file passes
** them; with one index directory row gone (what a rebuild or a merge that
** half landed would leave), a2m check finds it, though integrity_check
** and the counts are still sound.
*/
static void test_oracle_sees_a_damaged_index(void)
{
	run_opts opt = {.sqlite = 1, .kind = FAULT_NONE};
	run_out o;
	run(&opt, &o);
	CHECK_STR(o.problem, "");
	run_free(&o);
	memset(&o, 0, sizeof o);
	check_file(&o, 1);
	CHECK_STR(o.problem, "");
	sqlite3 *db = NULL;
	CHECK(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "DELETE FROM a2m_segdir WHERE seg = (SELECT max(seg) FROM a2m_segdir)",
			   NULL, NULL, NULL) == SQLITE_OK);
	CHECK(sqlite3_changes(db) == 1);
	sqlite3_close(db);
	check_file(&o, 0);
	CHECK_STR(o.problem, "");
	check_file(&o, 1);
	CHECK(strstr(o.problem, "a2m check finds a problem: index") != NULL);
	printf("# %s\n", o.problem);
}

/*
** Found by the sweep at sqlite-malloc:9111, in the first a2m_open's index
** rebuild: SQLite ran out of memory preparing the rebuild's first
** statement, and the rebuild's clean-up cancelled the merge of segments it
** had never opened, a NULL dereference (a2m_segments_merge_cancel). Every
** SQLite allocation of a rebuild fails it cleanly now, nothing of
** liba2m's is left allocated, and the next attach builds the index.
*/
static void test_index_rebuild_under_sqlite_malloc_faults(void)
{
	a2m_scorer *sc = a2m_scorer_bm25_new(NULL);
	int64_t n, failed = 0;
	CHECK(sc != NULL);
	for (n = 1; sc; n++) {
		a2m_store *s = NULL;
		char err[256];
		remove_files();
		size_t live = fault_alloc_live();
		fault_alloc_enter();
		if (a2m_store_sqlite_open(db_path, NULL, &s, err, sizeof err) != 0) {
			fault_alloc_leave();
			fprintf(stderr, "  open: %s\n", err);
			CHECK(0);
			break;
		}
		fault_arm(FAULT_SMALLOC, n);
		int rc = s->ops->index_attach(s, sc->indexer);
		int64_t fired = fault_fired();
		fault_disarm();
		if (rc != 0) {
			failed++;
			CHECK(s->errmsg[0] != '\0');
			CHECK_INT(s->ops->index_attach(s, sc->indexer), 0);
		}
		a2m_index_stats stats;
		CHECK_INT(s->ops->index_stats(s, &stats), 0);
		s->ops->close(s);
		fault_alloc_leave();
		CHECK_INT(fault_alloc_live(), live);
		if (!fired)
			break;
	}
	printf("# index rebuild under SQLite allocation failures: %lld points, %lld failed "
	       "the attach\n", (long long)n - 1, (long long)failed);
	if (sc)
		sc->destroy(sc);
}

/*
** Every allocation of a2m_open fails it with A2M_NOMEM, or A2M_CANTOPEN
** for the store's own, and a message saying that memory ran out. Found by
** the sweep at memory malloc:9 and many points after it (the workload
** opens first, so its points are a2m_open's): jansson's decoder, short of
** memory, says "invalid token" (or nothing) about the valid configuration
** file, and a2m_open called the file invalid (A2M_RANGE); at malloc:80 the
** tier layout's reader, short of memory, returned without a message, and
** a2m_open's message was whatever bytes the stack held.
*/
static void test_open_under_malloc_faults(void)
{
	int64_t n, failed = 0;
	for (n = 1;; n++) {
		a2m *h = NULL;
		char *err = NULL;
		remove_files();
		size_t live = fault_alloc_live();
		fault_alloc_arm(n);
		int rc = open_store(0, &h, &err);
		int64_t fired = fault_alloc_fired();
		fault_alloc_disarm();
		if (rc != A2M_OK) {
			failed++;
			if ((rc != A2M_NOMEM && rc != A2M_CANTOPEN) || !err ||
			    !strstr(err, "out of memory")) {
				fprintf(stderr, "  malloc %lld of a2m_open: %d, %s\n", (long long)n, rc,
					err ? err : "(no message)");
				CHECK(0);
			}
		}
		a2m_free(err);
		close_store(h);
		CHECK_INT(fault_alloc_live(), live);
		if (!fired)
			break;
	}
	printf("# a2m_open under allocation failures: %lld points, %lld failed it\n",
	       (long long)n - 1, (long long)failed);
}

/*
** The mirror directory's files whose names hold needle: removed (text
** NULL) or rewritten to text. Returns how many.
*/
static int change_mirror_files(const char *needle, const char *text)
{
	DIR *d = opendir(mirror_dir);
	struct dirent *e;
	char p[600];
	int n = 0;
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, needle)) {
			snprintf(p, sizeof p, "%s/%s", mirror_dir, e->d_name);
			FILE *f = text ? fopen(p, "w") : NULL;
			if (text ? f && fputs(text, f) >= 0 : unlink(p) == 0)
				n++;
			if (f && fclose(f) != 0)
				n--;
		}
	if (d)
		closedir(d);
	return n;
}

/* Procedural records, mirrored as files. */
static const wl_msg procedural_store[] = {
	{"memory/remember", "{\"records\":["
	 "{\"id\":\"m1\",\"content\":\"Deploy with make.\",\"tier\":\"procedural\"},"
	 "{\"id\":\"m2\",\"content\":\"Roll back with git revert.\",\"tier\":\"procedural\",\"key\":\"skills/undo\"},"
	 "{\"id\":\"m3\",\"content\":\"Page the owner.\",\"tier\":\"procedural\"}]}"},
	{NULL, NULL},
};

/*
** An open reconciles the procedural mirror with the database (store.h,
** a2m_sqlite_options): with the directory left stale (a record's file
** gone, another's rewritten, a file of a record that does not exist),
** every file call of that reconciliation fails in turn. The open fails
** cleanly (A2M_CANTOPEN, with a message) or opens with the directory
** right; either way the next open finds it right, and nothing is left
** allocated.
*/
static void test_reopen_under_mirror_faults(void)
{
	int64_t n, failed = 0;
	for (n = 1;; n++) {
		run_out o = {0};
		a2m *h = prepared(1, procedural_store, &o);
		char *err = NULL;
		close_store(h);
		CHECK(h != NULL);
		if (!h)
			break;
		FILE *f;
		char p[600];
		CHECK_INT(change_mirror_files("--m1.md", NULL), 1);
		CHECK_INT(change_mirror_files("--m3.md", "edited by hand\n"), 1);
		snprintf(p, sizeof p, "%s/gone--gone.md", mirror_dir);
		CHECK((f = fopen(p, "w")) != NULL && fputs("no record\n", f) >= 0 && fclose(f) == 0);
		size_t live = fault_alloc_live();
		fault_arm(FAULT_MIRROR, n);
		int rc = open_store(1, &h, &err);
		int64_t fired = fault_fired();
		fault_disarm();
		json_t *raw = NULL;
		if (rc != A2M_OK) {
			failed++;
			/* liba2m's own file calls at open: the mirror's, and the
			** descriptor group commit syncs the log through (sqlite_sync.c). */
			if (rc != A2M_CANTOPEN || !err ||
			    (!strstr(err, "procedural mirror") && !strstr(err, "fsync of the log")))
				problem(&o, "a failed open answered %d: %s", rc, err ? err : "(none)");
		} else {
			json_decref(dump(h, &o, "opened", &raw));
			check_mirror(raw, &o);
			json_decref(raw);
			close_store(h);
		}
		a2m_free(err);
		err = NULL;
		if (open_store(1, &h, &err) != A2M_OK) {
			problem(&o, "the next open: %s", err ? err : "(none)");
			a2m_free(err);
		} else {
			json_decref(dump(h, &o, "reopened", &raw));
			check_mirror(raw, &o);
			json_decref(raw);
			close_store(h);
		}
		if (fault_alloc_live() != live)
			problem(&o, "%zd blocks liba2m allocated are left",
				(ssize_t)(fault_alloc_live() - live));
		if (o.problem[0]) {
			fprintf(stderr, "  mirror call %lld of a2m_open: %s\n", (long long)n, o.problem);
			CHECK(0);
		}
		if (!fired)
			break;
	}
	printf("# a2m_open's reconciliation of a stale mirror under file faults: %lld points, "
	       "%lld failed it\n", (long long)n - 1, (long long)failed);
}

#endif
