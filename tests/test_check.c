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
*/
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "a2m.h"
#include "check.h"
#include "rank/scorer.h"
#include "stack/stack.h"
#include "store/sqlite_index.h"
#include "store/store.h"
#include "util/hash.h"

/* Named per process (main), so two runs at once (two checkouts, two
** builds) never share a file. */
static char db_path[64], wal_path[72], mirror_path[72];
#define DB      db_path
#define MIRROR  mirror_path
#define TIER    "procedural"
/* Earlier revisions a keyed record may keep (load writes 2 per keyed record). */
#define HISTORY_KEEP 2

static a2m_scorer *bm25;   /* its indexer is the analyser the stores keep */

/* ---- findings ------------------------------------------------------------- */

typedef struct findings {
	int  ok[A2M_CHECK_AREAS], problems[A2M_CHECK_AREAS];
	char last[A2M_CHECK_AREAS][512];
	struct progress_log *progress;  /* test_progress_*: the calls noted */
} findings;

static void collect(void *ctx, a2m_check_area area, int problem, const char *msg)
{
	findings *f = ctx;
	if (problem)
		f->problems[area]++;
	else
		f->ok[area]++;
	snprintf(f->last[area], sizeof f->last[area], "%s", msg);
	if (getenv("A2M_TEST_VERBOSE"))
		fprintf(stderr, "    %s %s: %s\n", problem ? "PROBLEM" : "ok", a2m_check_area_name(area),
			msg);
}

static a2m_check_options options(findings *f, int mirror)
{
	a2m_check_options o = {.ix = bm25->indexer, .report = collect, .ctx = f,
			       .fingerprint = a2m_stack_fingerprint, .history_keep = HISTORY_KEEP};
	if (mirror) {
		o.procedural_dir = MIRROR;
		o.procedural_tier = TIER;
	}
	memset(f, 0, sizeof *f);
	return o;
}

/* The areas with problems, as a bit mask. */
static unsigned problem_areas(const findings *f)
{
	unsigned m = 0;
	for (int a = 0; a < A2M_CHECK_AREAS; a++)
		if (f->problems[a])
			m |= 1u << a;
	return m;
}

static void show(const findings *f)
{
	for (int a = 0; a < A2M_CHECK_AREAS; a++)
		if (f->problems[a])
			fprintf(stderr, "    problem in %s: %s\n", a2m_check_area_name(a), f->last[a]);
}

/* Checks s: the problem areas found (and they are shown when want differs). */
static unsigned check(a2m_store *s, int mirror, unsigned want)
{
	findings f;
	a2m_check_options o = options(&f, mirror);
	CHECK_INT(s->ops->check(s, &o), 0);
	unsigned got = problem_areas(&f);
	if (got != want)
		show(&f);
	return got;
}

#define BIT(a) (1u << (a))

/* ---- stores ------------------------------------------------------------------ */

static void remove_mirror(void)
{
	DIR *d = opendir(MIRROR);
	struct dirent *e;
	char name[512];
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' || strncmp(e->d_name, ".a2m", 4) == 0) {
			snprintf(name, sizeof name, "%s/%s", MIRROR, e->d_name);
			unlink(name);
		}
	if (d)
		closedir(d);
	rmdir(MIRROR);
}

static a2m_store *open_engine(const char *engine, int read_only)
{
	a2m_store *s = NULL;
	char err[256];
	int rc;
	if (strcmp(engine, "memory") == 0) {
		rc = a2m_store_memory_open(&s, err, sizeof err);
	} else {
		a2m_sqlite_options opt = {.synchronous_full = 0, .read_only = read_only,
					  .procedural_dir = MIRROR, .procedural_tier = TIER};
		rc = a2m_store_sqlite_open(DB, &opt, &s, err, sizeof err);
	}
	if (rc != 0) {
		fprintf(stderr, "  cannot open %s: %s\n", engine, err);
		return NULL;
	}
	if (s->ops->index_attach(s, bm25->indexer) != 0) {
		fprintf(stderr, "  index_attach: %s\n", s->errmsg);
		s->ops->close(s);
		return NULL;
	}
	return s;
}

static a2m_store *fresh(const char *engine)
{
	check_remove_db(DB);
	remove_mirror();
	return open_engine(engine, 0);
}

static uint64_t rng_state = 0x2545F4914F6CDD1DULL;

static const char *const words[] = {
	"river", "stone", "ledger", "harbour", "lantern", "orchard", "copper", "meadow",
	"signal", "quarry", "thistle", "compass", "glacier", "ember", "saddle", "tundra",
	"Zürich", "naïve", "東京", "données",
};

static void sentence(char *out, size_t cap)
{
	size_t n = 3 + check_rand(&rng_state) % 8, at = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n && at + 24 < cap; i++)
		at += (size_t)snprintf(out + at, cap - at, "%s%s", i ? " " : "",
				       words[check_rand(&rng_state) % (sizeof words / sizeof words[0])]);
}

/* A record as a remember would make it; vectors of width dims (0: none). */
static a2m_record *make(int no, const char *tier, const char *group, const char *key, size_t dims)
{
	char id[32], text[256];
	a2m_record *r = a2m_record_new();
	snprintf(id, sizeof id, "rec-%d", no);
	sentence(text, sizeof text);
	r->id = strdup(id);
	r->content = strdup(text);
	r->created_at = 1700000000000 + no;
	r->tier = tier ? strdup(tier) : NULL;
	r->group = group ? strdup(group) : NULL;
	r->key = key ? strdup(key) : NULL;
	r->session = strdup(no % 2 ? "s1" : "s2");
	r->salience = 1.0;
	/* The extensions' data, as the stack writes it (x-dedup, x-expiry, x-history). */
	if (no % 3 == 0)
		r->fingerprint = a2m_stack_fingerprint(r->content, NULL);
	if (no % 7 == 0)
		r->expires_at = 1800000000000 + no;
	if (key)
		r->revision = 2;
	if (dims) {
		r->embedding = calloc(dims, sizeof *r->embedding);
		r->dims = dims;
		for (size_t d = 0; d < dims; d++)
			r->embedding[d] = (double)(check_rand(&rng_state) % 1000) / 1000.0 - 0.5;
		r->gen_embedding = calloc(4, sizeof *r->gen_embedding);
		r->gen_dims = 4;
		for (size_t d = 0; d < 4; d++)
			r->gen_embedding[d] = (float)d;
	}
	return r;
}

static int insert(a2m_store *s, a2m_record *r)
{
	int rc = s->ops->insert(s, r);
	if (rc)
		fprintf(stderr, "  insert %s: %s\n", r->id, s->errmsg);
	a2m_record_free(r);
	return rc;
}

/* Loads n records in commits of `per`: groups, keys, vectors, the mirrored tier. */
static int load(a2m_store *s, int n, int per)
{
	static const char *const tiers[] = {"working", "episodic", "semantic", TIER};
	for (int i = 0; i < n;) {
		if (s->ops->begin(s) != 0)
			return -1;
		for (int k = 0; k < per && i < n; k++, i++) {
			const char *tier = tiers[i % 4];
			char group[32], key[32];
			snprintf(group, sizeof group, "g%d", i / 3);
			snprintf(key, sizeof key, "skill/%d", i);
			a2m_record *r = make(i, tier, strcmp(tier, TIER) ? group : NULL,
					     strcmp(tier, TIER) == 0 ? key : NULL, i % 5 == 0 ? 6 : 0);
			/* A keyed record at revision 2 keeps revisions 0 and 1 (x-history). */
			for (int64_t rev = 0; r->key && rev < 2; rev++) {
				a2m_revision h = {.id = r->id, .revision = rev, .content = "before",
						  .created_at = r->created_at - 10 + rev,
						  .superseded_at = r->created_at - 9 + rev};
				if (s->ops->history_put(s, &h, HISTORY_KEEP) != 0) {
					a2m_record_free(r);
					s->ops->rollback(s);
					return -1;
				}
			}
			if (insert(s, r) != 0) {
				s->ops->rollback(s);
				return -1;
			}
		}
		if (s->ops->commit(s) != 0)
			return -1;
	}
	return 0;
}

/* Every record, one line each of the fields a repair must not touch. */
typedef struct dump {
	char  *text;
	size_t len, cap;
} dump;

static int dump_visit(const a2m_record *r, void *ctx)
{
	dump *d = ctx;
	char line[4096];
	uint64_t vec = r->embedding ? a2m_hash_bytes(r->embedding, r->dims * sizeof *r->embedding) : 0;
	int n = snprintf(line, sizeof line, "%s|%s|%lld|%s|%s|%s|%s|%s|%lld|%g|%016llx\n", r->id,
			 r->content, (long long)r->created_at, r->tier ? r->tier : "-",
			 r->group ? r->group : "-", r->key ? r->key : "-",
			 r->session ? r->session : "-", r->owner ? r->owner : "-",
			 (long long)r->revision, r->salience, (unsigned long long)vec);
	if (n < 0)
		return -1;
	if (d->len + (size_t)n + 1 > d->cap) {
		d->cap = (d->len + (size_t)n + 1) * 2;
		d->text = realloc(d->text, d->cap);
		if (!d->text)
			return -1;
	}
	memcpy(d->text + d->len, line, (size_t)n + 1);
	d->len += (size_t)n;
	return 0;
}

static char *records_of(a2m_store *s)
{
	dump d = {NULL, 0, 0};
	a2m_query q;
	memset(&q, 0, sizeof q);
	if (s->ops->scan(s, &q, dump_visit, &d) != 0) {
		free(d.text);
		return NULL;
	}
	return d.text ? d.text : strdup("");
}

/* Runs sql on the file from a second connection, as a bug or a bad disk would. */
static int damage(const char *sql)
{
	sqlite3 *db = NULL;
	char *msg = NULL;
	int rc = sqlite3_open(DB, &db);
	if (rc == SQLITE_OK)
		sqlite3_busy_timeout(db, 5000), rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		fprintf(stderr, "  damage: %s: %s\n", sql, msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -1;
}

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
