/*
** test_check.c — the engines' consistency check and repair (store.h, check
** and repair; store/sqlite_check*.c, store/memory_check.c).
**
** A store kept by its own writes must check clean, on both engines, after
** every transaction of a random workload (inserts, content and tier
** changes, removes, touches, rollbacks): the check as an oracle of the
** engines' derived data. Then, on SQLite, each area is damaged from a
** second connection as a bug or a bad disk would (the kept counts, the seq
** mark, the term index in five ways, a generated vector, the caller's own
** vector, the mirror's files): the check must find it, in that area and no
** other; the repair must make the store check clean again where the data
** is derivable, leave the caller's data alone where it is not, and change
** no record. The check itself must write nothing.
** The findings and the stores, made and damaged, are tests/check_stores.h.
*/
#include "check_stores.h"

/* ---- clean stores ------------------------------------------------------------ */

/* A store its own writes kept checks clean, each area said once. */
static void clean_engine(const char *engine)
{
	int sqlite = strcmp(engine, "sqlite") == 0;
	a2m_store *s = fresh(engine);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_INT(load(s, 200, 25), 0);
	findings f;
	a2m_check_options o = options(&f, sqlite);
	CHECK_INT(s->ops->check(s, &o), 0);
	CHECK_INT(problem_areas(&f), 0);
	show(&f);
	CHECK_INT(f.ok[A2M_CHECK_COUNTS], 1);
	CHECK_INT(f.ok[A2M_CHECK_SEQS], 1);
	CHECK_INT(f.ok[A2M_CHECK_INDEX], 1);
	CHECK_INT(f.ok[A2M_CHECK_VECTORS], 1);
	CHECK_INT(f.ok[A2M_CHECK_MIRROR], sqlite);
	CHECK(strstr(f.last[A2M_CHECK_INDEX], "200 records") != NULL);
	s->ops->close(s);
}

static void test_clean_memory(void)
{
	clean_engine("memory");
}

static void test_clean_sqlite(void)
{
	clean_engine("sqlite");
}

/*
** A random workload, checked after every transaction: the engine's
** derived data follows its writes, through updates, moves, removes,
** touches and rollbacks (the check is the oracle).
*/
static void workload_engine(const char *engine)
{
	int sqlite = strcmp(engine, "sqlite") == 0, next = 0, live = 0;
	a2m_store *s = fresh(engine);
	CHECK(s != NULL);
	if (!s)
		return;
	for (int txn = 0; txn < 60; txn++) {
		CHECK_INT(s->ops->begin(s), 0);
		for (int op = 0; op < 12; op++) {
			uint64_t u = check_rand(&rng_state) % 10;
			char id[32];
			snprintf(id, sizeof id, "rec-%d", live ? (int)(check_rand(&rng_state) % (uint64_t)next) : 0);
			a2m_record *r = NULL;
			if (u < 4 || !live) {
				CHECK_INT(insert(s, make(next++, u % 2 ? "episodic" : TIER, NULL, NULL,
							 u == 1 ? 6 : 0)), 0);
				live++;
			} else if (u < 7 && s->ops->get(s, id, &r) == 0 && r) {
				char text[256];
				sentence(text, sizeof text);
				free(r->content);
				r->content = strdup(text);
				/* As a write does (stack/write.c): the fingerprint follows the text. */
				if (r->fingerprint)
					r->fingerprint = a2m_stack_fingerprint(r->content, r->role);
				free(r->tier);
				r->tier = strdup(u == 5 ? "semantic" : TIER);
				r->revision++;
				CHECK_INT(s->ops->update(s, r), 0);
			} else if (u < 8) {
				int removed = 0;
				CHECK_INT(s->ops->remove(s, id, &removed), 0);
			} else if (s->ops->get(s, id, &r) == 0 && r) {
				CHECK_INT(s->ops->touch(s, r->seq, 1, 1700000009999), 0);
			}
			a2m_record_free(r);
		}
		if (txn % 7 == 3)
			s->ops->rollback(s);
		else
			CHECK_INT(s->ops->commit(s), 0);
		unsigned got = check(s, sqlite, 0);
		CHECK_INT(got, 0);
		if (got) {
			fprintf(stderr, "  after transaction %d\n", txn);
			break;
		}
	}
	s->ops->close(s);
}

static void test_workload_memory(void)
{
	workload_engine("memory");
}

static void test_workload_sqlite(void)
{
	workload_engine("sqlite");
}

/* A repair of every area of a clean store changes no record and leaves it clean. */
static void repair_clean_engine(const char *engine)
{
	int sqlite = strcmp(engine, "sqlite") == 0;
	a2m_store *s = fresh(engine);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_INT(load(s, 120, 30), 0);
	char *before = records_of(s);
	findings f;
	a2m_check_options o = options(&f, sqlite);
	CHECK_INT(s->ops->repair(s, &o, (1u << A2M_CHECK_AREAS) - 1), 0);
	CHECK_INT(problem_areas(&f), 0);
	char *after = records_of(s);
	CHECK(before && after && strcmp(before, after) == 0);
	CHECK_INT(check(s, sqlite, 0), 0);
	free(before);
	free(after);
	s->ops->close(s);
}

static void test_repair_clean_memory(void)
{
	repair_clean_engine("memory");
}

static void test_repair_clean_sqlite(void)
{
	repair_clean_engine("sqlite");
}

/* ---- progress ---------------------------------------------------------------------- */

/* The calls of one walk (area, unit) as the check made them. */
typedef struct walk_calls {
	int         area;
	const char *unit;
	int64_t     first, last, last_total, calls;
	int         monotonic, ended;
} walk_calls;

typedef struct progress_log {
	walk_calls w[16];
	int        n, bad;   /* bad: a call after its walk ended, or of a walk not started at 0 */
} progress_log;

static void note_progress(void *ctx, a2m_check_area area, const char *unit, int64_t done,
			  int64_t total)
{
	progress_log *l = ((findings *)ctx)->progress;
	walk_calls *w = l->n ? &l->w[l->n - 1] : NULL;
	if (!w || w->ended || w->area != (int)area || w->unit != unit) {
		if (l->n == 16 || done != 0) {
			l->bad++;
			return;
		}
		w = &l->w[l->n++];
		memset(w, 0, sizeof *w);
		w->area = (int)area;
		w->unit = unit;
		w->monotonic = 1;
	} else if (done < w->last) {
		w->monotonic = 0;
	}
	w->calls++;
	w->last = done;
	w->last_total = total;
	w->ended = done == total;
}

/*
** Each walk of a check says done 0 first and done == total last (and only
** then), in between never goes back, and calls at most once per
** A2M_CHECK_PROGRESS_EVERY units (and the two ends).
*/
static void progress_engine(const char *engine)
{
	int sqlite = strcmp(engine, "sqlite") == 0;
	a2m_store *s = fresh(engine);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_INT(load(s, 3000, 500), 0);
	findings f;
	progress_log log;
	memset(&log, 0, sizeof log);
	a2m_check_options o = options(&f, sqlite);
	f.progress = &log;
	o.progress = note_progress;
	CHECK_INT(s->ops->check(s, &o), 0);
	CHECK_INT(problem_areas(&f), 0);
	CHECK_INT(log.bad, 0);
	CHECK(log.n >= (sqlite ? 5 : 2));
	int index_records = 0;
	for (int i = 0; i < log.n; i++) {
		const walk_calls *w = &log.w[i];
		CHECK(w->ended);
		CHECK(w->monotonic);
		CHECK(w->calls <= w->last / A2M_CHECK_PROGRESS_EVERY + 2);
		if (w->area == A2M_CHECK_INDEX && strcmp(w->unit, "records analysed") == 0) {
			index_records = 1;
			CHECK_INT(w->last, 3000);
			CHECK(w->calls >= 3);  /* 0, at least one in between, the end */
		}
	}
	CHECK(index_records);
	s->ops->close(s);
}

static void test_progress_memory(void)
{
	progress_engine("memory");
}

static void test_progress_sqlite(void)
{
	progress_engine("sqlite");
}

/* ---- damage, found and repaired (SQLite) ---------------------------------------- */

/*
** Loads a store, closes it, damages it with sql, reopens it: the check must
** find want (areas), the repair of those areas must leave left (areas that
** hold the caller's data) and change no record.
*/
static void damaged(const char *what, const char *sql, unsigned want, unsigned left)
{
	a2m_store *s = fresh("sqlite");
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_INT(load(s, 400, 20), 0);
	s->ops->close(s);
	if (sql)
		CHECK_INT(damage(sql), 0);
	s = open_engine("sqlite", 0);
	CHECK(s != NULL);
	if (!s)
		return;
	char *before = records_of(s);
	unsigned got = check(s, 1, want);
	if (got != want)
		fprintf(stderr, "  %s: found %#x, want %#x\n", what, got, want);
	CHECK_INT(got, want);
	findings f;
	a2m_check_options o = options(&f, 1);
	CHECK_INT(s->ops->repair(s, &o, got), 0);
	char *after = records_of(s);
	CHECK(before && after && strcmp(before, after) == 0);
	got = check(s, 1, left);
	if (got != left)
		fprintf(stderr, "  %s: after the repair %#x, want %#x\n", what, got, left);
	CHECK_INT(got, left);
	free(before);
	free(after);
	s->ops->close(s);
}

static void test_counts(void)
{
	damaged("counts", "UPDATE a2m_counts SET n = n + 3 WHERE tier = 'episodic'",
		BIT(A2M_CHECK_COUNTS), 0);
	damaged("counts", "DELETE FROM a2m_counts WHERE tier = 'semantic'", BIT(A2M_CHECK_COUNTS), 0);
}

/* The extensions' data (x-history, x-expiry, x-dedup) damaged in the file. */
static void test_extensions(void)
{
	damaged("history of a record that is gone",
		"INSERT INTO a2m_history VALUES('nobody', 0, 'x', NULL, NULL, NULL, 1, 2)",
		BIT(A2M_CHECK_HISTORY), 0);
	damaged("history at the live revision",
		"INSERT INTO a2m_history SELECT id, 2, 'x', NULL, NULL, NULL, 1, 2 FROM records"
		" WHERE key IS NOT NULL ORDER BY seq LIMIT 1", BIT(A2M_CHECK_HISTORY), 0);
	damaged("history beyond the bound",
		"UPDATE records SET revision = 3 WHERE key IS NOT NULL;"
		" INSERT INTO a2m_history SELECT id, 2, 'x', NULL, NULL, NULL, 1, 9e12 FROM records"
		" WHERE key IS NOT NULL", BIT(A2M_CHECK_HISTORY), 0);
	damaged("history out of order", "UPDATE a2m_history SET superseded_at = 0 WHERE revision = 1",
		BIT(A2M_CHECK_HISTORY), BIT(A2M_CHECK_HISTORY));
	damaged("an expiry before the clock's start",
		"UPDATE records SET expires_at = -5 WHERE seq = 3", BIT(A2M_CHECK_EXPIRY),
		BIT(A2M_CHECK_EXPIRY));
	damaged("a fingerprint not its content's",
		"UPDATE records SET fp = 12345 WHERE seq = (SELECT min(seq) FROM records"
		" WHERE fp IS NOT NULL)", BIT(A2M_CHECK_DEDUP), 0);
	damaged("a fingerprint of 0", "UPDATE records SET fp = 0 WHERE seq = 2",
		BIT(A2M_CHECK_DEDUP), 0);
}

/* The memory engine's extensions, broken through its own ops as a bug in the stack would. */
static void test_extensions_memory(void)
{
	a2m_store *s = fresh("memory");
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_INT(load(s, 120, 30), 0);
	CHECK_INT(check(s, 0, 0), 0);
	a2m_revision orphan = {.id = "nobody", .revision = 0, .content = "x", .superseded_at = 5};
	a2m_record *r = make(1000, "semantic", NULL, NULL, 0);
	r->fingerprint = 42;
	r->expires_at = -5;
	CHECK_INT(s->ops->begin(s), 0);
	CHECK_INT(s->ops->history_put(s, &orphan, HISTORY_KEEP), 0);
	CHECK_INT(insert(s, r), 0);
	CHECK_INT(s->ops->commit(s), 0);
	findings f;
	a2m_check_options o = options(&f, 0);
	CHECK_INT(s->ops->check(s, &o), 0);
	CHECK_INT(problem_areas(&f), BIT(A2M_CHECK_HISTORY) | BIT(A2M_CHECK_EXPIRY) |
		  BIT(A2M_CHECK_DEDUP));
	CHECK(strstr(f.last[A2M_CHECK_HISTORY], "\"nobody\": revisions kept of a record that is gone"));
	CHECK(strstr(f.last[A2M_CHECK_EXPIRY], "\"rec-1000\": expires at -5"));
	CHECK(strstr(f.last[A2M_CHECK_DEDUP], "\"rec-1000\": fingerprint 000000000000002a kept"));
	s->ops->close(s);
}

/*
** A mark that is no number is a finding. One below max(seq) is not: inserts
** leave the mark there (sqlite_pending.c), only a remove raises it.
*/
static void test_seq_mark(void)
{
	damaged("seq mark", "UPDATE a2m_meta SET value = 'x' WHERE name = 'seq'",
		BIT(A2M_CHECK_SEQS), 0);
	damaged("seq mark below max(seq)", "UPDATE a2m_meta SET value = '3' WHERE name = 'seq'",
		0, 0);
}

static void test_index_rows(void)
{
	/* A block of a segment gone: its terms' postings with it. */
	damaged("index row", "DELETE FROM a2m_segments WHERE (seg, term) IN"
		" (SELECT seg, term FROM a2m_segments ORDER BY seg, term LIMIT 1 OFFSET 2)",
		BIT(A2M_CHECK_INDEX), 0);
	/* A segment the directory forgot: its rows are orphans, its postings unread. */
	damaged("index directory", "DELETE FROM a2m_segdir WHERE seg = (SELECT max(seg) FROM a2m_segdir)",
		BIT(A2M_CHECK_INDEX), 0);
}

static void test_index_filter_and_bytes(void)
{
	/* A term filter that rules out terms its segment holds: reads miss them. */
	damaged("index filter", "UPDATE a2m_segdir SET bloom = zeroblob(length(bloom))"
		" WHERE seg = (SELECT min(seg) FROM a2m_segdir)", BIT(A2M_CHECK_INDEX), 0);
	/* Bytes of a block overwritten. */
	damaged("index bytes", "UPDATE a2m_segments SET data = substr(data, 1, 3) ||"
		" x'ffffffffffffffffffff' || substr(data, 14)"
		" WHERE (seg, term) IN (SELECT seg, term FROM a2m_segments LIMIT 1)",
		BIT(A2M_CHECK_INDEX), 0);
}

static void test_index_figures_and_text(void)
{
	damaged("index figures", "UPDATE a2m_index_stats SET docs = docs + 1", BIT(A2M_CHECK_INDEX), 0);
	/* A maxseq below a posting's seq: a merge would drop a tombstone still needed. */
	damaged("index maxseq", "UPDATE a2m_segdir SET maxseq = 1 WHERE seg = (SELECT max(seg)"
		" FROM a2m_segdir)", BIT(A2M_CHECK_INDEX), 0);
	/* Text changed behind the index's back (plain SQL: unsupported, store.h): its
	** fingerprint (the record has one, x-dedup) is no longer its content's either. */
	damaged("record text", "UPDATE records SET content = 'quarry quarry ember' WHERE seq = 7",
		BIT(A2M_CHECK_INDEX) | BIT(A2M_CHECK_DEDUP), 0);
	/* Marked stale: written by a server without an analyser. */
	damaged("index stale", "DELETE FROM a2m_meta WHERE name = 'index'", 0, 0);
}

static void test_vectors(void)
{
	/* A generated vector is derived: a malformed one is dropped (the embedder makes it again). */
	damaged("generated vector", "UPDATE records SET gen_embedding = x'010203' WHERE seq = 6",
		BIT(A2M_CHECK_VECTORS), 0);
	/* The caller's own vector is the caller's: found, never changed. */
	damaged("own vector", "UPDATE records SET embedding = x'000000000000f87f' ||"
		" substr(embedding, 9) WHERE seq = 6", BIT(A2M_CHECK_VECTORS),
		BIT(A2M_CHECK_VECTORS));
}

/* The mirror: a file missing, one altered, one without a record. */
static void test_mirror(void)
{
	a2m_store *s = fresh("sqlite");
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_INT(load(s, 40, 10), 0);
	CHECK_INT(check(s, 1, 0), 0);
	DIR *d = opendir(MIRROR);
	struct dirent *e;
	char first[512] = "", second[512] = "", name[600];
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			if (!first[0])
				snprintf(first, sizeof first, "%s", e->d_name);
			else if (!second[0])
				snprintf(second, sizeof second, "%s", e->d_name);
		}
	if (d)
		closedir(d);
	CHECK(first[0] && second[0]);
	snprintf(name, sizeof name, "%s/%s", MIRROR, first);
	CHECK_INT(unlink(name), 0);
	snprintf(name, sizeof name, "%s/%s", MIRROR, second);
	FILE *f = fopen(name, "a");
	CHECK(f != NULL);
	if (f)
		fputs("edited by hand\n", f), fclose(f);
	snprintf(name, sizeof name, "%s/stray-note--nobody.md", MIRROR);
	f = fopen(name, "w");
	if (f)
		fputs("no record\n", f), fclose(f);
	/* Not a mirror name: left alone and not reported. */
	snprintf(name, sizeof name, "%s/README", MIRROR);
	f = fopen(name, "w");
	if (f)
		fputs("notes\n", f), fclose(f);
	findings fs;
	a2m_check_options o = options(&fs, 1);
	CHECK_INT(s->ops->check(s, &o), 0);
	CHECK_INT(problem_areas(&fs), BIT(A2M_CHECK_MIRROR));
	CHECK_INT(fs.problems[A2M_CHECK_MIRROR], 3);
	char *before = records_of(s);
	o = options(&fs, 1);
	CHECK_INT(s->ops->repair(s, &o, BIT(A2M_CHECK_MIRROR)), 0);
	CHECK_INT(check(s, 1, 0), 0);
	char *after = records_of(s);
	CHECK(before && after && strcmp(before, after) == 0);
	CHECK_INT(access(name, F_OK), 0);
	unlink(name);
	free(before);
	free(after);
	s->ops->close(s);
}

/* The bytes of the database and its WAL, hashed. */
static uint64_t file_hash(void)
{
	uint64_t h = A2M_HASH_SEED;
	const char *const files[] = {DB, wal_path};
	char buf[65536];
	for (int i = 0; i < 2; i++) {
		int fd = open(files[i], O_RDONLY);
		ssize_t n;
		while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0)
			h = a2m_hash_more(h, buf, (size_t)n);
		if (fd >= 0)
			close(fd);
	}
	return h;
}

/* The check reads: a read-only store checks, and not a byte of the file changes. */
static void test_check_writes_nothing(void)
{
	a2m_store *s = fresh("sqlite");
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_INT(load(s, 100, 25), 0);
	s->ops->close(s);
	CHECK_INT(damage("UPDATE a2m_counts SET n = n + 1"), 0);
	uint64_t h = file_hash();
	s = open_engine("sqlite", 1);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_INT(check(s, 1, BIT(A2M_CHECK_COUNTS)), BIT(A2M_CHECK_COUNTS));
	findings f;
	a2m_check_options o = options(&f, 1);
	CHECK(s->ops->repair(s, &o, BIT(A2M_CHECK_COUNTS)) == A2M_READ_ONLY);
	s->ops->close(s);
	CHECK(file_hash() == h);
}

int main(void)
{
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-check-%d.db", (int)getpid());
	/* Every commit writes its postings out: the damage the tests do to the
	** segments must find them there (the tail's own checks: test_index_tail). */
	a2m_sqlite_index_tail_for_tests(1);
	snprintf(wal_path, sizeof wal_path, "%s-wal", db_path);
	snprintf(mirror_path, sizeof mirror_path, "/tmp/a2m-test-check-%d.procedural", (int)getpid());
	static const test_case tests[] = {
		TEST(test_clean_memory),
		TEST(test_clean_sqlite),
		TEST(test_workload_memory),
		TEST(test_workload_sqlite),
		TEST(test_repair_clean_memory),
		TEST(test_repair_clean_sqlite),
		TEST(test_progress_memory),
		TEST(test_progress_sqlite),
		TEST(test_counts),
		TEST(test_seq_mark),
		TEST(test_extensions),
		TEST(test_extensions_memory),
		TEST(test_index_rows),
		TEST(test_index_filter_and_bytes),
		TEST(test_index_figures_and_text),
		TEST(test_vectors),
		TEST(test_mirror),
		TEST(test_check_writes_nothing),
		{NULL, NULL},
	};
	bm25 = a2m_scorer_bm25_new(NULL);
	if (!bm25)
		return 1;
	int rc = run_tests(tests);
	bm25->destroy(bm25);
	check_remove_db(DB);
	remove_mirror();
	return rc;
}
