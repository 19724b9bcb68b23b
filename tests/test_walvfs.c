/*
** test_walvfs.c — the log's write buffer (src/store/sqlite_walvfs.c): what
** a connection through it commits is what every other connection, in this
** process or another, reads; no reader sees a commit in part; a kill -9
** loses no commit whose COMMIT returned.
**
** The writer goes through the shim; the readers through SQLite's default
** VFS, as another program on the same file would.
*/
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check.h"
#include "store/sqlite_walvfs.h"

static char db_path[128];
/* The writer's log grows ahead in zeroed chunks, as a durable store's does. */
static int durable;

static void name_db(const char *what)
{
	snprintf(db_path, sizeof db_path, "/tmp/test_walvfs-%d-%s.db", (int)getpid(), what);
	check_remove_db(db_path);
}

static int exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		fprintf(stderr, "  %s: %s\n", sql, msg ? msg : sqlite3_errstr(rc));
	sqlite3_free(msg);
	return rc;
}

/* A row's blob: bytes that follow from its id, so a page read wrong shows. */
static void fill_pattern(unsigned char *b, int len, long long id)
{
	uint64_t x = (uint64_t)id * 0x9e3779b97f4a7c15u + 1;
	for (int i = 0; i < len; i++)
		b[i] = (unsigned char)(check_rand(&x) >> 24);
}

/* SQL pattern_ok(id, b): 1 when b holds the bytes fill_pattern gives id. */
static void pattern_ok(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	(void)argc;
	long long id = sqlite3_value_int64(argv[0]);
	const unsigned char *b = sqlite3_value_blob(argv[1]);
	int len = sqlite3_value_bytes(argv[1]);
	unsigned char *want = malloc((size_t)len + 1);
	if (!want) {
		sqlite3_result_error_nomem(cx);
		return;
	}
	fill_pattern(want, len, id);
	sqlite3_result_int(cx, len == 0 || (b && memcmp(b, want, (size_t)len) == 0));
	free(want);
}

/* A connection to db_path in WAL mode, through the shim or the default VFS. */
static sqlite3 *open_db(int through_shim)
{
	sqlite3 *db = NULL;
	const char *vfs = through_shim ? a2m_sqlite_walvfs_name() : NULL;
	if (through_shim && !vfs)
		return NULL;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs) !=
		    SQLITE_OK ||
	    exec(db, "PRAGMA busy_timeout=10000; PRAGMA journal_mode=WAL;"
		     "PRAGMA synchronous=NORMAL") != SQLITE_OK ||
	    sqlite3_create_function(db, "pattern_ok", 2, SQLITE_UTF8, NULL, pattern_ok, NULL,
				    NULL) != SQLITE_OK ||
	    (through_shim && durable &&
	     (exec(db, "PRAGMA synchronous=FULL") != SQLITE_OK ||
	      a2m_sqlite_walvfs_durable(db) != SQLITE_OK))) {
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

/* One integer the query answers, or -1 on an error. */
static long long one_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	long long v = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int integrity_ok(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int ok = 0;
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 0);
		ok = t && strcmp((const char *)t, "ok") == 0;
		if (!ok)
			fprintf(stderr, "  integrity_check: %s\n", t ? (const char *)t : "(null)");
	}
	sqlite3_finalize(st);
	return ok;
}

static int insert_row(sqlite3 *db, long long id, long long n, int blob_len)
{
	sqlite3_stmt *st = NULL;
	unsigned char *b = malloc((size_t)blob_len + 1);
	if (!b)
		return SQLITE_NOMEM;
	fill_pattern(b, blob_len, id);
	int rc = sqlite3_prepare_v2(db, "INSERT INTO t(id, n, b) VALUES (?1, ?2, ?3)", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, n);
		sqlite3_bind_blob(st, 3, b, blob_len, SQLITE_STATIC);
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
	}
	sqlite3_finalize(st);
	free(b);
	return rc;
}

/* Rows whose blob is not theirs (a page read wrong), or -1 on an error. */
static long long bad_rows(sqlite3 *db)
{
	return one_int(db, "SELECT count(*) FROM t WHERE NOT pattern_ok(id, b)");
}

/*
** Transactions of one row to hundreds of pages (past the 120 KiB buffer and
** the unix VFS's 128 KiB write), some rolled back, a tiny page cache so big
** ones spill frames before their commit and rewrite them, and checkpoints
** that restart the log so later frames overwrite earlier ones: after each
** commit a second connection reads exactly what was committed.
*/
static void every_size_read_back(void)
{
	static const int sizes[] = {1, 100, 3000, 5000, 70000, 140000, 300000, 8};
	name_db("sizes");
	unsigned long long flushes0, appends0, flushes1, appends1;
	a2m_sqlite_walvfs_counts(&flushes0, &appends0);
	sqlite3 *w = open_db(1), *r = open_db(0);
	CHECK(w && r);
	if (!w || !r)
		goto out;
	CHECK_INT(exec(w, "PRAGMA cache_size=8; CREATE TABLE t(id INTEGER PRIMARY KEY, n, b)"),
		  SQLITE_OK);
	long long rows = 0, sum_n = 0, sum_len = 0, id = 0;
	uint64_t rnd = 77;
	for (int txn = 0; txn < 80; txn++) {
		int k = 1 + (int)(check_rand(&rnd) % 6), undo = txn % 7 == 3;
		long long add_rows = 0, add_n = 0, add_len = 0;
		CHECK_INT(exec(w, "BEGIN IMMEDIATE"), SQLITE_OK);
		for (int i = 0; i < k; i++) {
			int len = sizes[(size_t)(txn + i) % (sizeof sizes / sizeof sizes[0])];
			CHECK_INT(insert_row(w, ++id, txn, len), SQLITE_OK);
			add_rows++, add_n += txn, add_len += len;
		}
		/* Rewrites pages this transaction wrote (and maybe spilled). */
		CHECK_INT(exec(w, "UPDATE t SET n = n + 1 WHERE id % 5 = 0"), SQLITE_OK);
		long long bumped = one_int(w, "SELECT count(*) FROM t WHERE id % 5 = 0");
		CHECK_INT(exec(w, undo ? "ROLLBACK" : "COMMIT"), SQLITE_OK);
		if (!undo)
			rows += add_rows, sum_n += add_n + bumped, sum_len += add_len;
		else
			id -= add_rows;
		CHECK_INT(one_int(r, "SELECT count(*) FROM t"), rows);
		CHECK_INT(one_int(r, "SELECT coalesce(sum(n), 0) FROM t"), sum_n);
		CHECK_INT(one_int(r, "SELECT coalesce(sum(length(b)), 0) FROM t"), sum_len);
		CHECK_INT(bad_rows(r), 0);
		if (txn % 10 == 9)
			CHECK_INT(exec(w, "PRAGMA wal_checkpoint(RESTART)"), SQLITE_OK);
	}
	CHECK(integrity_ok(r));
	a2m_sqlite_walvfs_counts(&flushes1, &appends1);
	/* The shim was there, and gathered: fewer writes than SQLite asked for. */
	CHECK(appends1 - appends0 > 2 * (flushes1 - flushes0));
	CHECK(flushes1 > flushes0);
	sqlite3_close(w);
	sqlite3_close(r);
	w = r = NULL;
	/* And the file alone, reopened, holds the same. */
	r = open_db(0);
	CHECK(r != NULL);
	if (r) {
		CHECK_INT(one_int(r, "SELECT count(*) FROM t"), rows);
		CHECK_INT(one_int(r, "SELECT coalesce(sum(length(b)), 0) FROM t"), sum_len);
		CHECK_INT(bad_rows(r), 0);
		CHECK(integrity_ok(r));
	}
out:
	sqlite3_close(w);
	sqlite3_close(r);
	check_remove_db(db_path);
}

/*
** A reader in another process, reading without pause while the writer
** commits one row and the matching total per transaction: every snapshot
** it takes agrees with itself (sum of the rows == the total) and the
** counts never go back. Exit status: 0, or 1 for a torn or lost commit,
** 2 for an error.
*/
static int torn_reader(long long last)
{
	sqlite3 *r = open_db(0);
	if (!r)
		_exit(2);
	long long seen = 0;
	for (long i = 0; i < 20000000 && seen < last; i++) {
		if (exec(r, "BEGIN") != SQLITE_OK)
			_exit(2);
		long long n = one_int(r, "SELECT count(*) FROM t");
		long long sum = one_int(r, "SELECT coalesce(sum(n), 0) FROM t");
		long long total = one_int(r, "SELECT total FROM c");
		if (exec(r, "COMMIT") != SQLITE_OK || n < 0 || sum < 0 || total < 0)
			_exit(2);
		if (sum != total || n < seen) {
			fprintf(stderr, "  reader: %lld rows sum %lld, total %lld (saw %lld rows)\n",
				n, sum, total, seen);
			_exit(1);
		}
		seen = n;
	}
	sqlite3_close(r);
	_exit(seen == last ? 0 : 1);
}

static void test_no_reader_sees_a_commit_in_part(void)
{
	enum { N = 600 };
	name_db("torn");
	sqlite3 *w = open_db(1);
	CHECK(w != NULL);
	if (!w)
		return;
	CHECK_INT(exec(w, "CREATE TABLE t(id INTEGER PRIMARY KEY, n, b);"
			  "CREATE TABLE c(k INTEGER PRIMARY KEY, total);"
			  "INSERT INTO c VALUES (1, 0)"), SQLITE_OK);
	sqlite3_close(w);
	pid_t pid = fork();
	if (pid == 0)
		torn_reader(N);
	CHECK(pid > 0);
	w = open_db(1);
	sqlite3 *r = open_db(0); /* and one in this process, after every commit */
	CHECK(w && r);
	long long total = 0;
	uint64_t rnd = 5;
	sqlite3_stmt *bump = NULL;
	CHECK_INT(sqlite3_prepare_v2(w, "UPDATE c SET total = total + ?1", -1, &bump, NULL), SQLITE_OK);
	for (int i = 1; w && r && i <= N; i++) {
		int len = (int)(check_rand(&rnd) % 9000);
		CHECK_INT(exec(w, "BEGIN IMMEDIATE"), SQLITE_OK);
		CHECK_INT(insert_row(w, i, i, len), SQLITE_OK);
		sqlite3_bind_int(bump, 1, i);
		CHECK_INT(sqlite3_step(bump), SQLITE_DONE);
		sqlite3_reset(bump);
		CHECK_INT(exec(w, "COMMIT"), SQLITE_OK);
		total += i;
		CHECK_INT(one_int(r, "SELECT total FROM c"), total);
		CHECK_INT(one_int(r, "SELECT count(*) FROM t"), i);
		if (i % 50 == 0)
			CHECK_INT(bad_rows(r), 0);
		if (i % 150 == 0)
			CHECK_INT(exec(w, "PRAGMA wal_checkpoint(PASSIVE)"), SQLITE_OK);
	}
	sqlite3_finalize(bump);
	int status = 0;
	CHECK(pid <= 0 || waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_INT(WEXITSTATUS(status), 0);
	if (r)
		CHECK(integrity_ok(r));
	sqlite3_close(w);
	sqlite3_close(r);
	check_remove_db(db_path);
}

/* A writer of lone commits that tells the pipe each id once its COMMIT returned. */
static void acking_writer(int fd, long long from)
{
	sqlite3 *w = open_db(1);
	if (!w)
		_exit(2);
	uint64_t rnd = (uint64_t)from * 2654435761u + 1;
	for (long long id = from; id < from + 1000000; id++) {
		int len = (int)(check_rand(&rnd) % 12000);
		if (exec(w, "BEGIN IMMEDIATE") != SQLITE_OK || insert_row(w, id, id, len) != SQLITE_OK ||
		    exec(w, "COMMIT") != SQLITE_OK)
			_exit(2);
		if (write(fd, &id, sizeof id) != (ssize_t)sizeof id)
			_exit(2);
	}
	_exit(0);
}

/*
** Twelve kills -9 of a writer at different moments (after 1 to ~500
** acknowledged commits): every commit it acknowledged is in the file after,
** and the file is whole.
*/
static void kills_lose_nothing(void)
{
	name_db("kill");
	sqlite3 *db = open_db(0);
	CHECK(db != NULL);
	if (!db)
		return;
	CHECK_INT(exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, n, b)"), SQLITE_OK);
	sqlite3_close(db);
	uint64_t rnd = 11;
	long long next = 1;
	for (int round = 0; round < 12; round++) {
		int fds[2];
		CHECK_INT(pipe(fds), 0);
		pid_t pid = fork();
		if (pid == 0) {
			close(fds[0]);
			acking_writer(fds[1], next);
		}
		close(fds[1]);
		CHECK(pid > 0);
		long long want = 1 + (long long)(check_rand(&rnd) % 500), got = 0, id, acked = 0;
		ssize_t n;
		while ((n = read(fds[0], &id, sizeof id)) == (ssize_t)sizeof id) {
			acked = id;
			if (++got == want)
				kill(pid, SIGKILL);
		}
		close(fds[0]);
		int status = 0;
		waitpid(pid, &status, 0);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		db = open_db(0);
		CHECK(db != NULL);
		if (!db)
			return;
		/* Every acknowledged id, and at most the one commit in flight more. */
		CHECK_INT(one_int(db, "SELECT count(*) FROM t") >= acked, 1);
		char sql[96];
		snprintf(sql, sizeof sql, "SELECT count(*) FROM t WHERE id <= %lld", acked);
		CHECK_INT(one_int(db, sql), acked);
		CHECK_INT(bad_rows(db), 0);
		CHECK(integrity_ok(db));
		next = one_int(db, "SELECT max(id) FROM t") + 1;
		sqlite3_close(db);
	}
	check_remove_db(db_path);
}

static void test_transactions_of_every_size_read_back(void)
{
	durable = 0;
	every_size_read_back();
}

/* The same with the log grown ahead: zeros past the frames are no frames. */
static void test_every_size_read_back_with_the_log_grown_ahead(void)
{
	durable = 1;
	every_size_read_back();
	durable = 0;
}

static void test_a_kill_loses_no_acknowledged_commit(void)
{
	durable = 0;
	kills_lose_nothing();
}

static void test_a_kill_with_the_log_grown_ahead_loses_nothing(void)
{
	durable = 1;
	kills_lose_nothing();
	durable = 0;
}

/*
** A durable log grows in zeroed chunks: its size is a whole number of
** them beyond the frames; without, it ends at the last frame.
*/
static void test_a_durable_log_grows_ahead(void)
{
	for (int d = 0; d <= 1; d++) {
		durable = d;
		name_db("ahead");
		sqlite3 *w = open_db(1);
		CHECK(w != NULL);
		if (!w)
			break;
		CHECK_INT(exec(w, "CREATE TABLE t(id INTEGER PRIMARY KEY, n, b)"), SQLITE_OK);
		for (int i = 1; i <= 20; i++)
			CHECK_INT(insert_row(w, i, i, 100), SQLITE_OK);
		char wal[160];
		snprintf(wal, sizeof wal, "%s-wal", db_path);
		FILE *f = fopen(wal, "rb");
		long size = -1;
		if (f && fseek(f, 0, SEEK_END) == 0)
			size = ftell(f);
		if (f)
			fclose(f);
		/* 32-byte header, then frames of 24 + 4096 bytes. */
		if (d)
			CHECK_INT(size, 1024 * 1024);
		else
			CHECK_INT((size - 32) % 4120, 0);
		sqlite3 *r = open_db(0);
		CHECK(r && one_int(r, "SELECT count(*) FROM t") == 20 && integrity_ok(r));
		sqlite3_close(r);
		sqlite3_close(w);
		check_remove_db(db_path);
	}
	durable = 0;
}

int main(void)
{
	static const test_case tests[] = {
		TEST(test_transactions_of_every_size_read_back),
		TEST(test_every_size_read_back_with_the_log_grown_ahead),
		TEST(test_no_reader_sees_a_commit_in_part),
		TEST(test_a_kill_loses_no_acknowledged_commit),
		TEST(test_a_kill_with_the_log_grown_ahead_loses_nothing),
		TEST(test_a_durable_log_grows_ahead),
		{NULL, NULL},
	};
	return run_tests(tests);
}
