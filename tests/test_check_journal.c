/*
** test_check_journal.c — `a2m check` (server/check.c) on a SQLite file a
** kill left with a hot rollback journal: a write cut off before its commit
** in rollback-journal mode (the first open of a new file is in that mode
** until it makes the file a WAL file). Only a read-write open may roll it
** back, so the check's read-only open fails, and must say why (store/
** sqlite.c: SQLite's own words, "attempt to write a readonly database",
** say nothing of the cause) and write nothing; the repair's read-write
** open rolls it back, losing nothing committed. Until this test only the
** crash bench (`a2m bench crash`) reached that message.
*/
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "server/check.h"
#include "util/hash.h"

static char tmpdir[] = "/tmp/a2m-test-check-journal.XXXXXX";

/* Copies the file from to to (created or truncated). Returns 0 or -1. */
static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	char buf[65536];
	ssize_t n = 0;
	int rc = in >= 0 && out >= 0 ? 0 : -1;
	while (!rc && (n = read(in, buf, sizeof buf)) > 0)
		rc = write(out, buf, (size_t)n) == n ? 0 : -1;
	if (n < 0)
		rc = -1;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) != 0)
		rc = -1;
	return rc;
}

/* A hash of the file's bytes (0 when it cannot be read). */
static uint64_t hash_of(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	uint64_t h = A2M_HASH_SEED;
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		h = a2m_hash_more(h, buf, (size_t)n);
	close(fd);
	return h;
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* What a check run reported, as `a2m check` prints it. */
typedef struct findings {
	int  file_problems, problems;
	char file_msg[1024];
} findings;

static void collect(void *ctx, a2m_check_phase phase, a2m_check_area area, int problem,
		    const char *msg)
{
	findings *f = ctx;
	(void)phase;
	if (!problem)
		return;
	f->problems++;
	if (area == A2M_CHECK_FILE) {
		f->file_problems++;
		snprintf(f->file_msg, sizeof f->file_msg, "%s", msg);
	}
}

/* Runs the check (and with repair, the repair) on the file at path. */
static int check_file(const char *path, int repair, a2m_check_run *run, findings *f)
{
	memset(f, 0, sizeof *f);
	memset(run, 0, sizeof *run);
	run->repair = repair;
	run->report = collect;
	run->ctx = f;
	a2m_config *cfg;
	if (a2m_config_new(&cfg) != A2M_OK)
		return -1;
	char err[512] = "";
	int rc = a2m_config_set(cfg, "engine", "sqlite") == A2M_OK &&
			 a2m_config_set(cfg, "path", path) == A2M_OK
		 ? a2m_check_store(cfg, run, err, sizeof err)
		 : -1;
	if (rc)
		fprintf(stderr, "  check: %s\n", err);
	a2m_config_free(cfg);
	return rc;
}

/*
** A store with a record, its file turned to rollback-journal mode, and a
** write transaction left open on it; the file and its -journal copied
** then, as a kill at that moment would leave them (no process holds a
** lock on the copy: the journal is hot). synchronous=OFF makes SQLite
** write the journal's header whole at once, as it does before a write
** reaches the database file in the other modes.
*/
static int cut_off_write(const char *src, const char *dst)
{
	a2m *h = check_open("engine", "sqlite", "path", src, NULL);
	if (!h)
		return -1;
	json_t *r = check_call(h, "memory/remember", "{\"records\":[{\"content\":\"committed "
			       "before the cut\",\"key\":\"kept\",\"tier\":\"semantic\"}]}");
	int ok = json_object_get(r, "result") != NULL;
	json_decref(r);
	a2m_close(h);
	sqlite3 *db = NULL;
	char src_j[300], dst_j[300];
	snprintf(src_j, sizeof src_j, "%s-journal", src);
	snprintf(dst_j, sizeof dst_j, "%s-journal", dst);
	ok = ok && sqlite3_open(src, &db) == SQLITE_OK &&
	     sqlite3_exec(db, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=OFF; BEGIN; "
			  "UPDATE records SET content = 'cut off'",
			  NULL, NULL, NULL) == SQLITE_OK &&
	     exists(src_j) && copy_file(src, dst) == 0 && copy_file(src_j, dst_j) == 0;
	sqlite3_close(db);  /* rolls back the source's own */
	return ok ? 0 : -1;
}

static void test_a_hot_journal_is_named_and_left_to_a_read_write_open(void)
{
	char src[256], dst[256], dst_j[300];
	snprintf(src, sizeof src, "%s/source.db", tmpdir);
	snprintf(dst, sizeof dst, "%s/cut.db", tmpdir);
	snprintf(dst_j, sizeof dst_j, "%s-journal", dst);
	CHECK_INT(cut_off_write(src, dst), 0);
	CHECK(exists(dst_j));
	uint64_t file = hash_of(dst), journal = hash_of(dst_j);

	/* The check: one finding, about the file, saying what it is. */
	a2m_check_run run;
	findings f;
	CHECK_INT(check_file(dst, 0, &run, &f), 0);
	CHECK(run.found == 1u << A2M_CHECK_FILE);
	CHECK_INT(f.file_problems, 1);
	CHECK(strstr(f.file_msg, "a write that was cut off before its commit") != NULL);
	CHECK(strstr(f.file_msg, "a read-only open cannot roll it back") != NULL);
	if (!strstr(f.file_msg, "cannot roll it back"))
		fprintf(stderr, "  the check said: %s\n", f.file_msg);
	/* It wrote nothing: the journal is still there to be rolled back. */
	CHECK(hash_of(dst) == file);
	CHECK(hash_of(dst_j) == journal);

	/* The repair's read-write open rolls it back; then the check is clean
	** and the committed record is as it was committed. */
	CHECK_INT(check_file(dst, 1, &run, &f), 0);
	CHECK(run.found == 1u << A2M_CHECK_FILE);
	CHECK_INT(run.remaining, 0);
	CHECK(!exists(dst_j));
	CHECK_INT(check_file(dst, 0, &run, &f), 0);
	CHECK_INT(run.found, 0);
	a2m *h = check_open("engine", "sqlite", "path", dst, NULL);
	CHECK(h != NULL);
	if (h) {
		CHECK(check_holds(h, "kept", "committed before the cut"));
		a2m_close(h);
	}
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	static const test_case tests[] = {
		TEST(test_a_hot_journal_is_named_and_left_to_a_read_write_open),
		{NULL, NULL}
	};
	int rc = run_tests(tests);
	check_remove_dir(tmpdir);
	return rc;
}
