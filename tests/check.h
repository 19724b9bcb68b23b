/*
** check.h — the unit tests' tiny harness.
**
** A test is a function; CHECK* record a failure with file:line and carry on
** within the test. run_tests() prints "ok NAME" or "FAIL NAME" per test and
** the closing line "N passed, M failed" that scripts/run-tests.sh adds up, and
** returns the exit status.
*/
#ifndef A2M_TEST_CHECK_H
#define A2M_TEST_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int check_failures_in_test;

/*
** The tests' random numbers (xorshift64): the same sequence on every run
** and machine, so a failure found once is found again. *state must not be 0.
*/
static inline uint64_t check_rand(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/*
** Removes the SQLite database at path and its companions (-wal, -shm,
** -journal), so a test starts from no file. An empty path is a no-op.
*/
static inline void check_remove_db(const char *path)
{
	static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
	char name[256];
	for (size_t i = 0; path[0] && i < sizeof suffixes / sizeof suffixes[0]; i++) {
		snprintf(name, sizeof name, "%s%s", path, suffixes[i]);
		unlink(name);
	}
}

/* Removes the directory dir and all it holds (a test's mkdtemp). */
static inline void check_remove_dir(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

#define CHECK(cond) do { \
	if (!(cond)) { \
		check_failures_in_test++; \
		fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
	} } while (0)

#define CHECK_INT(got, want) do { \
	long long g_ = (long long)(got), w_ = (long long)(want); \
	if (g_ != w_) { \
		check_failures_in_test++; \
		fprintf(stderr, "  %s:%d: %s == %lld, want %lld\n", __FILE__, __LINE__, #got, g_, w_); \
	} } while (0)

#define CHECK_STR(got, want) do { \
	const char *g_ = (got), *w_ = (want); \
	if (!g_ || !w_ || strcmp(g_, w_) != 0) { \
		check_failures_in_test++; \
		fprintf(stderr, "  %s:%d: %s == \"%s\", want \"%s\"\n", __FILE__, __LINE__, #got, \
			g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
	} } while (0)

#define CHECK_NEAR(got, want, eps) do { \
	double g_ = (got), w_ = (want); \
	if (!(fabs(g_ - w_) <= (eps))) { \
		check_failures_in_test++; \
		fprintf(stderr, "  %s:%d: %s == %.17g, want %.17g\n", __FILE__, __LINE__, #got, g_, w_); \
	} } while (0)

typedef struct test_case {
	const char *name;
	void (*fn)(void);
} test_case;

#define TEST(name) { #name, name }

/*
** Runs the tests in order. A2M_TEST_ONLY set (a word) runs only those whose
** name holds it: one test by hand, or, under ThreadSanitizer, only the
** tests of a binary that start threads (scripts/run-tests.sh).
** A2M_TEST_TIMES set prints each test's wall seconds to stderr (where a
** suite's time goes; never asserted on).
*/
static inline int run_tests(const test_case *tests)
{
	int passed = 0, failed = 0;
	const char *only = getenv("A2M_TEST_ONLY");
	int times = getenv("A2M_TEST_TIMES") != NULL;
	for (const test_case *t = tests; t->name; t++) {
		if (only && *only && !strstr(t->name, only))
			continue;
		check_failures_in_test = 0;
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		t->fn();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (times)
			fprintf(stderr, "TIME %s %.2f s\n", t->name,
				(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
		if (check_failures_in_test) {
			failed++;
			printf("FAIL %s\n", t->name);
		} else {
			passed++;
			printf("ok   %s\n", t->name);
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#endif
