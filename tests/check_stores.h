/*
** check_stores.h — what tests/test_check.c (which includes it once) checks
** with: the findings a check reports, per area, and the stores, written
** by a random workload on each engine and damaged from a second
** connection (SQL on the file, the mirror's files).
*/
#ifndef A2M_TEST_CHECK_STORES_H
#define A2M_TEST_CHECK_STORES_H

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

#endif
