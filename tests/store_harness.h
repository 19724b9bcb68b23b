/*
** store_harness.h — the harness of the storage seam's rules
** (tests/test_store_*.c; header-only, for those programs).
**
** Every test function is one rule and runs once per engine: the in-memory
** store, SQLite on a fresh file under /tmp that is removed afterwards, and
** PostgreSQL in a fresh schema of the test server ($A2M_TEST_POSTGRES,
** tests/pg_helper.h), dropped afterwards. A few rules are about
** durability and run on the two engines that have any (DURABLE), a few
** about SQLite's file and only make sense there. Output is
** one line per (rule, engine) and a final "N passed, M failed"; the exit
** status is non-zero when anything failed. The procedural mirror's tests
** use the directory <file>.procedural, also removed afterwards.
*/
#ifndef A2M_TEST_STORE_HARNESS_H
#define A2M_TEST_STORE_HARNESS_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>
#include <fcntl.h>
#include <time.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/row_cache.h"
#include "store/sqlite_internal.h"
#include "store/store.h"
#include "util/grow.h"

#include "pg_helper.h"

/* ---- the harness ------------------------------------------------------- */

typedef struct tctx {
	const char *engine;     /* "memory", "sqlite" or "postgres" */
	char        path[128];  /* the SQLite file; "" for memory */
	char        schema[64]; /* PostgreSQL: the test's schema */
	char        dir[160];   /* path + ".procedural", for the mirror's tests */
	a2m_store  *s;
} tctx;

static int  n_passed, n_failed;
static char failure[1024];  /* set by a failing EXPECT; "" while all is well */

static inline void failf(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void failf(int line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(failure, sizeof failure, "line %d: ", line);
	va_start(ap, fmt);
	vsnprintf(failure + n, sizeof failure - (size_t)n, fmt, ap);
	va_end(ap);
}

static inline int opt_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

#define EXPECT(cond) do { \
	if (!(cond)) { failf(__LINE__, "%s", #cond); return; } \
} while (0)

#define EXPECT_INT(got, want) do { \
	long long g_ = (long long)(got), w_ = (long long)(want); \
	if (g_ != w_) { failf(__LINE__, "%s is %lld, want %lld", #got, g_, w_); return; } \
} while (0)

#define EXPECT_STR(got, want) do { \
	const char *g_ = (got), *w_ = (want); \
	if (!opt_eq(g_, w_)) { \
		failf(__LINE__, "%s is %s%s%s, want %s%s%s", #got, g_ ? "\"" : "", \
		      g_ ? g_ : "NULL", g_ ? "\"" : "", w_ ? "\"" : "", \
		      w_ ? w_ : "NULL", w_ ? "\"" : ""); \
		return; \
	} \
} while (0)

/* A store call that must succeed; on failure shows the store's message. */
#define EXPECT_OK(call) do { \
	int rc_ = (call); \
	if (rc_ != 0) { failf(__LINE__, "%s returned %d (%s)", #call, rc_, t->s->errmsg); return; } \
} while (0)

#define EXPECT_SAME(got, want) do { \
	const char *d_ = record_diff((got), (want)); \
	if (d_) { failf(__LINE__, "%s and %s differ in %s", #got, #want, d_); return; } \
} while (0)

#define OPS (t->s->ops)

static inline int open_store(tctx *t, int synchronous_full, char *err, size_t errlen)
{
	if (strcmp(t->engine, "memory") == 0)
		return a2m_store_memory_open(&t->s, err, errlen);
	if (strcmp(t->engine, "postgres") == 0) {
		a2m_postgres_options po = {.schema = t->schema};
		return a2m_store_postgres_open(pg_test_server(), &po, &t->s, err, errlen);
	}
	a2m_sqlite_options opt = {.synchronous_full = synchronous_full};
	return a2m_store_sqlite_open(t->path, &opt, &t->s, err, errlen);
}

static inline void remove_files(const char *path)
{
	static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
	char name[160];
	if (!path[0])
		return;
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		snprintf(name, sizeof name, "%s%s", path, suffixes[i]);
		unlink(name);
	}
}

/* Removes dir and the files in it (or dir itself when it is a file). */
static inline void remove_dir(const char *dir)
{
	char name[512];
	DIR *d;
	struct dirent *e;
	if (!dir[0])
		return;
	d = opendir(dir);
	if (!d) {
		unlink(dir);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(name, sizeof name, "%s/%s", dir, e->d_name);
		unlink(name);
	}
	closedir(d);
	rmdir(dir);
}

typedef void (*test_fn)(tctx *t);

/* Which engines a rule runs on: every one, or the named ones. */
enum { BOTH = 7, MEMORY_ONLY = 1, SQLITE_ONLY = 2, POSTGRES_ONLY = 4, DURABLE = 6 };

static inline void run(const char *name, test_fn fn, int which)
{
	static const char *const engines[] = {"memory", "sqlite", "postgres"};
	static int files;
	for (int i = 0; i < 3; i++) {
		tctx t;
		char err[256] = "";
		if (!(which & (1 << i)) || (i == 2 && !pg_test_server()))
			continue;
		memset(&t, 0, sizeof t);
		t.engine = engines[i];
		if (i == 1) {
			snprintf(t.path, sizeof t.path, "/tmp/a2m-test-store-%ld-%d.db",
				 (long)getpid(), ++files);
			snprintf(t.dir, sizeof t.dir, "%s.procedural", t.path);
		}
		failure[0] = '\0';
		/* One schema for the program, emptied before each rule. */
		if (i == 2)
			snprintf(t.schema, sizeof t.schema, "a2m_ts_%d", (int)getpid());
		if (i == 2 && pg_test_schema_reset(t.schema) != 0)
			snprintf(failure, sizeof failure, "cannot make a schema on the test server");
		remove_files(t.path);
		remove_dir(t.dir);
		if (failure[0])
			;
		else if (open_store(&t, 1, err, sizeof err) != 0)
			snprintf(failure, sizeof failure, "open: %s", err);
		else
			fn(&t);
		if (t.s)
			t.s->ops->close(t.s);
		remove_files(t.path);
		remove_dir(t.dir);
		if (failure[0]) {
			printf("FAIL %s [%s]: %s\n", name, t.engine, failure);
			n_failed++;
		} else {
			printf("ok %s [%s]\n", name, t.engine);
			n_passed++;
		}
	}
}

#define RUN(fn)        run(#fn, fn, BOTH)
#define RUN_MEMORY(fn) run(#fn, fn, MEMORY_ONLY)
#define RUN_SQLITE(fn) run(#fn, fn, SQLITE_ONLY)
#define RUN_DURABLE(fn) run(#fn, fn, DURABLE)
#define RUN_POSTGRES(fn) run(#fn, fn, POSTGRES_ONLY)

/* Closes and reopens t's store (SQLite: the same file). Returns 0 or sets failure. */
static inline int reopen(tctx *t, int synchronous_full)
{
	char err[256] = "";
	t->s->ops->close(t->s);
	t->s = NULL;
	if (open_store(t, synchronous_full, err, sizeof err) != 0) {
		snprintf(failure, sizeof failure, "reopen: %s", err);
		return -1;
	}
	return 0;
}

/* Before the rules: the umask the mirror's modes are checked against, and
** whether PostgreSQL runs. */
static inline void store_harness_start(void)
{
	umask(022);   /* the mirror's modes are checked exactly */
	if (!pg_test_server())
		printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
}

/* After the rules: drops the program's schema, prints the counts; the exit status. */
static inline int store_harness_end(void)
{
	char schema[64];
	snprintf(schema, sizeof schema, "a2m_ts_%d", (int)getpid());
	pg_test_schema_drop(schema);
	printf("%d passed, %d failed\n", n_passed, n_failed);
	return n_failed ? 1 : 0;
}

#endif
