/*
** test_salience_bound.c — the store's bound on salience (store.h,
** salience_bound) and text recall's use of it (stack/ranked.c: the stop's
** cap and the walk's floor / cap). The bound is never below any record's
** salience after inserts, reinforcement, updates, moves and rollbacks;
** and recall through a pruned text list returns exactly what the scan
** path (every record judged) returns, with saliences spread wide (0, 0.5,
** 1, 10, 1e6) and raised between queries. SQLite keeps the bound in its
** file (store/sqlite_bound.c): the same, and across connections, a
** rollback, a reopen and the migration of a version-12 file.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check.h"
#include "check_stack.h"
#include "pg_helper.h"
#include "rank/scorer.h"
#include "scorer_switch.h"
#include "stack/stack.h"
#include "stack/stack_internal.h"
#include "store/store.h"
#include "util/clock.h"

static char db_path[64];
static char pg_schema[64], pg_conninfo[512];  /* PostgreSQL's (pg_helper.h) */
static int  engines;                          /* 3 with a PostgreSQL server, else 2 */
static uint64_t rng_state = 0x243F6A8885A308D3ULL;

static uint64_t rng(void)
{
	return check_rand(&rng_state);
}

/* 2026-12-01T00:00:00Z: the tests' now; records are made after it (recency 1). */
#define T0 1796083200000LL
#define NREC 3000

/* A word of a 300-word vocabulary, the first ones far more common. */
static void word(char *out, size_t cap)
{
	uint64_t r = rng() % 1000;
	unsigned w = r < 600 ? (unsigned)(r % 20) : (unsigned)(20 + rng() % 280);
	snprintf(out, cap, "w%u", w);
}

static void sentence(char *out, size_t cap, int words)
{
	size_t at = 0;
	out[0] = '\0';
	for (int i = 0; i < words && at + 8 < cap; i++) {
		char w[16];
		word(w, sizeof w);
		at += (size_t)snprintf(out + at, cap - at, "%s%s", i ? " " : "", w);
	}
}

/*
** A stack over s (its scorer's switch in *sw), default tiers and blend;
** read-only, so a recall changes nothing. NULL (s closed) when it cannot
** be made.
*/
static a2m_stack *stack_over(a2m_store *s, switched **sw)
{
	a2m_stack_config cfg;
	a2m_scorer *bm = check_bm25_attach(s, &cfg);
	switched *w = bm ? calloc(1, sizeof *w) : NULL;
	if (!w) {
		if (bm) {
			s->ops->close(s);
			bm->destroy(bm);
		}
		return NULL;
	}
	w->base = *bm;
	w->base.relevance = sw_relevance;
	w->base.candidates = sw_candidates;
	w->base.destroy = sw_destroy;
	w->inner = bm;
	*sw = w;
	cfg.blend = (a2m_blend){0.75, 0.15, 0.10};
	cfg.metric = A2M_METRIC_COSINE;
	cfg.read_only = 1;  /* no touch: a recall changes nothing */
	return a2m_stack_new(s, &w->base, &cfg);
}

/* The SQLite store at db_path (read-only or not), or NULL with the error said. */
static a2m_store *sqlite_at(int read_only)
{
	char err[256];
	a2m_store *s = NULL;
	a2m_sqlite_options opt = {.read_only = read_only};
	if (a2m_store_sqlite_open(db_path, &opt, &s, err, sizeof err) != 0) {
		fprintf(stderr, "  open %s: %s\n", db_path, err);
		return NULL;
	}
	return s;
}

/* The PostgreSQL deployment in pg_schema, or NULL with the error said. */
static a2m_store *postgres_at(void)
{
	char err[256];
	a2m_store *s = NULL;
	if (a2m_store_postgres_open(pg_conninfo, NULL, &s, err, sizeof err) != 0) {
		fprintf(stderr, "  open postgres: %s\n", err);
		return NULL;
	}
	return s;
}

/* A stack over a store (0 memory, 1 SQLite at db_path, 2 PostgreSQL in
** pg_schema, each new) of NREC records of salience 0, 0.5 or 1; *sw its
** scorer's switch. NULL when the store cannot be made. */
static a2m_stack *filled_stack_at(int engine, switched **sw)
{
	char err[256], id[32], text[256];
	a2m_store *s = NULL;
	check_remove_db(db_path);
	if (engine == 2 && pg_test_schema_fresh(pg_schema) != 0)
		return NULL;
	if (engine == 2)
		s = postgres_at();
	else if (engine == 1)
		s = sqlite_at(0);
	else if (a2m_store_memory_open(&s, err, sizeof err) != 0)
		fprintf(stderr, "  open: %s\n", err);
	a2m_stack *st = s ? stack_over(s, sw) : NULL;
	if (!st || s->ops->begin(s) != 0) {
		a2m_stack_free(st);
		return NULL;
	}
	static const double sal[] = {0, 0.5, 1};
	static const char *const tiers[] = {"semantic", "episodic", "procedural"};
	int rc = 0;
	for (int i = 0; i < NREC && !rc; i++) {
		a2m_record *r = a2m_record_new();
		if (!r) {
			rc = -1;
			break;
		}
		snprintf(id, sizeof id, "r%d", i);
		sentence(text, sizeof text, 3 + (int)(rng() % 12));
		r->id = strdup(id);
		r->content = strdup(text);
		r->tier = strdup(tiers[rng() % 3]);
		r->created_at = T0 + 1000 + i;
		r->salience = sal[rng() % 3];
		rc = s->ops->insert(s, r);
		a2m_record_free(r);
	}
	if (rc || s->ops->commit(s) != 0) {
		a2m_stack_free(st);
		return NULL;
	}
	return st;
}

/* filled_stack_at with the clock standing at T0 (done() frees it), checked. */
static a2m_stack *filled_stack(int engine, switched **sw)
{
	a2m_clock_set_for_tests(T0);
	a2m_stack *st = filled_stack_at(engine, sw);
	CHECK(st != NULL);
	return st;
}

/* Ends a test's stack: frees it, the clock free again. */
static void done(a2m_stack *st)
{
	a2m_stack_free(st);
	a2m_clock_set_for_tests(0);
}

static int recall(a2m_stack *st, const char *text, size_t limit, a2m_hit **out, size_t *n)
{
	a2m_error err = {0};
	a2m_selection sel;
	memset(&sel, 0, sizeof sel);
	a2m_rank_query q = {.text = text};
	int rc = a2m_stack_read_begin(st, &err);
	if (!rc) {
		rc = a2m_stack_recall(st, &sel, &q, 0, limit, out, n, &err);
		a2m_stack_read_end(st, &err);
	}
	if (rc)
		fprintf(stderr, "  recall: %s\n", err.message);
	a2m_error_clear(&err);
	return rc;
}

/* Random queries: the pruned path's hits are the scan path's, to the bit. */
static void recalls_exact(a2m_stack *st, switched *sw, const char *what)
{
	uint64_t pruned = st->pruned_reads;
	for (int k = 0; k < 150; k++) {
		char text[64];
		sentence(text, sizeof text, 1 + (int)(rng() % 3));
		size_t limit = 1 + rng() % 20, np = 0, ns = 0;
		a2m_hit *p = NULL, *s = NULL;
		sw->mode = ASK_AS_IS;
		CHECK_INT(recall(st, text, limit, &p, &np), 0);
		sw->mode = ASK_SCAN;
		CHECK_INT(recall(st, text, limit, &s, &ns), 0);
		CHECK_INT(np, ns);
		for (size_t i = 0; i < np && i < ns; i++) {
			if (strcmp(p[i].rec->id, s[i].rec->id) != 0 || p[i].score != s[i].score) {
				fprintf(stderr, "  %s: \"%s\" hit %zu: %s %.17g, want %s %.17g\n", what,
					text, i, p[i].rec->id, p[i].score, s[i].rec->id, s[i].score);
				check_failures_in_test++;
				break;
			}
		}
		a2m_hits_free(p, np);
		a2m_hits_free(s, ns);
	}
	sw->mode = ASK_AS_IS;
	CHECK(st->pruned_reads > pruned + 20);  /* the lists were pruned */
}

typedef struct most {
	double max;
} most;

static int note_salience(const a2m_record *rec, void *ctx)
{
	most *m = ctx;
	if (rec->salience > m->max)
		m->max = rec->salience;
	return 0;
}

/* The store's bound is at least every record's salience; returns it. */
static double bound_checked(a2m_stack *st)
{
	a2m_store *s = st->store;
	a2m_query q;
	memset(&q, 0, sizeof q);
	most m = {0};
	double bound = -1;
	CHECK(s->ops->salience_bound != NULL);
	if (!s->ops->salience_bound)
		return -1;
	/* In a read bracket, as recall asks (PostgreSQL answers from its snapshot). */
	CHECK_INT(s->ops->read_begin(s), 0);
	CHECK_INT(s->ops->salience_bound(s, &bound), 1);
	CHECK_INT(s->ops->scan(s, &q, note_salience, &m), 0);
	s->ops->read_end(s);
	if (bound < m.max) {
		fprintf(stderr, "  bound %g below a record's salience %g\n", bound, m.max);
		check_failures_in_test++;
	}
	return bound;
}

/* Sets n random records' salience to v in s's open transaction, through update or move. */
static void write_saliences(a2m_store *s, int n, double v, int by_move)
{
	char id[32];
	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof id, "r%d", (int)(rng() % NREC));
		a2m_record *r = NULL;
		CHECK_INT(s->ops->get(s, id, &r), 0);
		if (!r)
			continue;
		if (by_move) {
			int moved = 0;
			CHECK_INT(s->ops->move(s, r, r->tier, v, &moved), 0);
			CHECK_INT(moved, 1);
		} else {
			r->salience = v;
			CHECK_INT(s->ops->update(s, r), 0);
		}
		a2m_record_free(r);
	}
}

/* Sets the salience of n random records to v through update (or move), committed or not. */
static void set_saliences(a2m_stack *st, int n, double v, int by_move, int commit)
{
	a2m_error err = {0};
	CHECK_INT(a2m_stack_begin(st, &err), 0);
	write_saliences(st->store, n, v, by_move);
	if (commit)
		CHECK_INT(a2m_stack_commit(st, &err), 0);
	else
		a2m_stack_rollback(st);
	a2m_error_clear(&err);
}

/* Reinforces one record in ten by 9 (to 9..10: memory/reinforce). */
static void reinforce(a2m_stack *st)
{
	a2m_error err = {0};
	for (int i = 0; i < NREC / 10; i++) {
		char id[32];
		snprintf(id, sizeof id, "r%d", (int)(rng() % NREC));
		const char *ids[1] = {id};
		int64_t done = 0;
		a2m_scope scope = {0};
		CHECK_INT(a2m_stack_reinforce(st, &scope, ids, 1, 9, &done, &err), 0);
		CHECK_INT(done, 1);
	}
	a2m_error_clear(&err);
}

/*
** Memory: the bound follows every way a salience rises, and recall stays
** exact at each step: reinforcement (memory/reinforce) to 10, tier moves
** (a spill or promotion's write) to 1e3, updates to 1e6, and a raise rolled back
** (the bound stays high: only reads more).
*/
static void test_bound_follows_raises_memory(void)
{
	switched *sw = NULL;
	a2m_stack *st = filled_stack(0, &sw);
	if (!st)
		return;
	CHECK_NEAR(bound_checked(st), 1, 0);
	recalls_exact(st, sw, "saliences 0..1");

	reinforce(st);
	CHECK(bound_checked(st) >= 9);
	recalls_exact(st, sw, "reinforced");

	set_saliences(st, NREC / 10, 1e3, 1, 1);
	CHECK(bound_checked(st) >= 1e3);
	recalls_exact(st, sw, "moved");

	set_saliences(st, NREC / 10, 1e6, 0, 1);
	CHECK_NEAR(bound_checked(st), 1e6, 0);
	recalls_exact(st, sw, "updated");

	set_saliences(st, NREC / 10, 1e9, 0, 0);
	CHECK(bound_checked(st) >= 1e6);
	recalls_exact(st, sw, "rolled back");
	done(st);
}

/*
** The bound is used: the same queries over the same store read fewer
** records (a2m_stack.ranked_rows) with it than with the op taken away
** (cap 1, the floor undivided), and return the same hits.
*/
static void bound_reads_fewer_records(int engine)
{
	switched *sw = NULL;
	a2m_stack *st = filled_stack(engine, &sw);
	if (!st)
		return;
	a2m_store *s = st->store;
	const a2m_store_ops *with = s->ops;
	a2m_store_ops without = *with;
	without.salience_bound = NULL;
	uint64_t rows[2] = {0, 0};
	uint64_t seed = rng_state;
	a2m_hit *h[2][100];
	size_t n[2][100];
	for (int pass = 0; pass < 2; pass++) {
		rng_state = seed;
		s->ops = pass ? with : &without;
		uint64_t before = st->ranked_rows;
		for (int k = 0; k < 100; k++) {
			char text[64];
			sentence(text, sizeof text, 2 + (int)(rng() % 2));
			h[pass][k] = NULL;
			n[pass][k] = 0;
			CHECK_INT(recall(st, text, 10, &h[pass][k], &n[pass][k]), 0);
		}
		rows[pass] = st->ranked_rows - before;
	}
	s->ops = with;
	for (int k = 0; k < 100; k++) {
		CHECK_INT(n[0][k], n[1][k]);
		for (size_t i = 0; i < n[0][k] && i < n[1][k]; i++)
			CHECK(strcmp(h[0][k][i].rec->id, h[1][k][i].rec->id) == 0 &&
			      h[0][k][i].score == h[1][k][i].score);
		a2m_hits_free(h[0][k], n[0][k]);
		a2m_hits_free(h[1][k], n[1][k]);
	}
	fprintf(stderr, "  %s: records read, 100 recalls: %llu without the bound, %llu with it\n",
		pg_test_engine_names[engine], (unsigned long long)rows[0],
		(unsigned long long)rows[1]);
	CHECK(rows[1] < rows[0]);
	done(st);
	check_remove_db(db_path);
}

static void test_bound_reads_fewer_records(void)
{
	bound_reads_fewer_records(0);
}

static void test_bound_reads_fewer_records_sqlite(void)
{
	bound_reads_fewer_records(1);
}

/* Runs sql on db_path's file through a connection of its own; SQLite's code. */
static int raw_exec(const char *sql)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open(db_path, &db);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		fprintf(stderr, "  sqlite: %s\n", db ? sqlite3_errmsg(db) : "out of memory");
	sqlite3_close(db);
	return rc;
}

/* The row a2m_bound holds in db_path's file, read by a connection of its own (-1: none). */
static double file_bound(void)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	double v = -1;
	if (sqlite3_open(db_path, &db) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT salience FROM a2m_bound", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/*
** SQLite: the file's row follows every write path as memory's bound does
** (inserts, reinforcement, moves, updates), recall exact at each step. A
** raise rolled back leaves the row, and the connection does not trust
** what it raised: a later write between the row and the rolled-back value
** raises the row. A reopened store reads the row as it was left.
*/
static void test_bound_follows_raises_sqlite(void)
{
	switched *sw = NULL;
	a2m_stack *st = filled_stack(1, &sw);
	if (!st)
		return;
	CHECK_NEAR(bound_checked(st), 1, 0);
	CHECK_NEAR(file_bound(), 1, 0);
	recalls_exact(st, sw, "sqlite 0..1");
	reinforce(st);
	CHECK(bound_checked(st) >= 9);
	CHECK(file_bound() >= 9);
	recalls_exact(st, sw, "sqlite reinforced");
	set_saliences(st, NREC / 10, 1e3, 1, 1);
	CHECK_NEAR(bound_checked(st), 1e3, 0);
	recalls_exact(st, sw, "sqlite moved");
	set_saliences(st, NREC / 10, 1e6, 0, 1);
	CHECK_NEAR(bound_checked(st), 1e6, 0);
	CHECK_NEAR(file_bound(), 1e6, 0);
	recalls_exact(st, sw, "sqlite updated");
	set_saliences(st, NREC / 10, 1e9, 0, 0);
	CHECK(bound_checked(st) >= 1e6);
	CHECK_NEAR(file_bound(), 1e6, 0);
	recalls_exact(st, sw, "sqlite rolled back");
	set_saliences(st, 1, 1e7, 0, 1);
	CHECK_NEAR(file_bound(), 1e7, 0);
	done(st);

	a2m_store *s = sqlite_at(0);
	double b = -1;
	CHECK(s != NULL);
	if (s) {
		CHECK_INT(s->ops->salience_bound(s, &b), 1);
		CHECK_NEAR(b, 1e7, 0);
		s->ops->close(s);
	}
	check_remove_db(db_path);
}

/*
** Two stores on one file. A reads the bound in its recalls; B, another
** connection, raises saliences to 1e6: A's next recalls (after a commit
** of its own that raised nothing) must walk with the higher bound, or
** they miss records the scan finds. Then a writer whose
** cache is stale (A, before B raised again to 1e7) writes a salience
** between the two: the row keeps B's.
*/
static void test_two_stores_on_one_file(void)
{
	switched *sw = NULL;
	a2m_stack *st = filled_stack(1, &sw);
	if (!st)
		return;
	a2m_store *a = st->store, *b = sqlite_at(0);
	CHECK(b != NULL);
	if (!b) {
		done(st);
		return;
	}
	recalls_exact(st, sw, "A before B writes");
	double v = -1;
	CHECK_INT(a->ops->salience_bound(a, &v), 1);
	CHECK_NEAR(v, 1, 0);

	CHECK_INT(b->ops->begin(b), 0);
	write_saliences(b, NREC / 5, 1e6, 0);
	CHECK_INT(b->ops->commit(b), 0);
	/* A commit of A's own that sets no salience carries nothing over. */
	int removed = 0;
	CHECK_INT(a->ops->begin(a), 0);
	CHECK_INT(a->ops->remove(a, "r1", &removed), 0);
	CHECK_INT(a->ops->commit(a), 0);
	CHECK_INT(removed, 1);
	recalls_exact(st, sw, "A after B raised");
	CHECK_NEAR(bound_checked(st), 1e6, 0);

	CHECK_INT(b->ops->begin(b), 0);
	write_saliences(b, 1, 1e7, 0);
	CHECK_INT(b->ops->commit(b), 0);
	CHECK_INT(a->ops->begin(a), 0);
	write_saliences(a, 3, 5e6, 0);
	CHECK_INT(a->ops->commit(a), 0);
	CHECK_NEAR(file_bound(), 1e7, 0);
	CHECK_NEAR(bound_checked(st), 1e7, 0);
	v = -1;
	CHECK_INT(b->ops->salience_bound(b, &v), 1);
	CHECK_NEAR(v, 1e7, 0);
	b->ops->close(b);
	done(st);
	check_remove_db(db_path);
}

/*
** A file a version-12 build left (no a2m_bound), with records of salience
** 1e6 it wrote: a read-only open reads it as it is and answers "unknown"
** (recall exact, walking uncapped), the file left at 12; a read-write open
** migrates it, seeding the row with the records' highest salience.
*/
static void test_version_12_file(void)
{
	switched *sw = NULL;
	a2m_stack *st = filled_stack(1, &sw);
	if (!st)
		return;
	done(st);
	CHECK_INT(raw_exec("DROP TABLE a2m_bound; UPDATE a2m_schema SET version = 12;"
			   " UPDATE records SET salience = 1e6 WHERE seq % 7 = 0;"), SQLITE_OK);
	a2m_clock_set_for_tests(T0);
	a2m_store *s = sqlite_at(1);
	st = s ? stack_over(s, &sw) : NULL;
	CHECK(st != NULL);
	if (st) {
		double v = -1;
		CHECK_INT(s->ops->salience_bound(s, &v), 0);
		recalls_exact(st, sw, "version 12, read-only");
		done(st);
	}
	CHECK_NEAR(file_bound(), -1, 0);  /* still no row: nothing migrated */
	a2m_clock_set_for_tests(T0);
	s = sqlite_at(0);
	st = s ? stack_over(s, &sw) : NULL;
	CHECK(st != NULL);
	if (st) {
		CHECK_NEAR(bound_checked(st), 1e6, 0);
		recalls_exact(st, sw, "version 12, migrated");
		done(st);
	}
	CHECK_NEAR(file_bound(), 1e6, 0);
	check_remove_db(db_path);
}

static void test_bound_reads_fewer_records_postgres(void)
{
	if (engines > 2)
		bound_reads_fewer_records(2);
}

/*
** PostgreSQL: the state row's bound follows every write path, recall
** exact at each step; a raise rolled back leaves it; a second server of
** the deployment raising it is seen by the first's next recalls (its
** snapshot reads the row), and a write of the first whose begin read the
** row after that (under the write lock) never lowers it.
*/
static void test_bound_follows_raises_postgres(void)
{
	if (engines < 3)
		return;
	switched *sw = NULL;
	a2m_stack *st = filled_stack(2, &sw);
	if (!st)
		return;
	CHECK_NEAR(bound_checked(st), 1, 0);
	recalls_exact(st, sw, "postgres 0..1");
	reinforce(st);
	CHECK(bound_checked(st) >= 9);
	set_saliences(st, NREC / 10, 1e3, 1, 1);
	CHECK_NEAR(bound_checked(st), 1e3, 0);
	recalls_exact(st, sw, "postgres moved");
	set_saliences(st, NREC / 10, 1e9, 0, 0);
	CHECK_NEAR(bound_checked(st), 1e3, 0);
	a2m_store *a = st->store, *b = postgres_at();
	CHECK(b != NULL);
	if (b) {
		CHECK_INT(b->ops->begin(b), 0);
		write_saliences(b, NREC / 5, 1e6, 0);
		CHECK_INT(b->ops->commit(b), 0);
		recalls_exact(st, sw, "postgres after another server raised");
		CHECK_NEAR(bound_checked(st), 1e6, 0);
		CHECK_INT(a->ops->begin(a), 0);
		write_saliences(a, 3, 5e5, 0);
		CHECK_INT(a->ops->commit(a), 0);
		double v = -1;
		CHECK_INT(b->ops->read_begin(b), 0);
		CHECK_INT(b->ops->salience_bound(b, &v), 1);
		b->ops->read_end(b);
		CHECK_NEAR(v, 1e6, 0);
		b->ops->close(b);
	}
	done(st);
}

int main(void)
{
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-salience-bound-%d.db", (int)getpid());
	engines = pg_test_engines("salience_bound", pg_schema, sizeof pg_schema, pg_conninfo,
				  sizeof pg_conninfo);
	static const test_case tests[] = {
		TEST(test_bound_follows_raises_memory),
		TEST(test_bound_reads_fewer_records),
		TEST(test_bound_reads_fewer_records_sqlite),
		TEST(test_bound_follows_raises_sqlite),
		TEST(test_two_stores_on_one_file),
		TEST(test_version_12_file),
		TEST(test_bound_reads_fewer_records_postgres),
		TEST(test_bound_follows_raises_postgres),
		{NULL, NULL},
	};
	int rc = run_tests(tests);
	check_remove_db(db_path);
	if (engines > 2)
		pg_test_schema_drop(pg_schema);
	return rc;
}
