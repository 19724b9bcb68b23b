/*
** test_store.c — the storage seam's rules (store.h), each checked against
** every engine.
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

static void failf(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(int line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(failure, sizeof failure, "line %d: ", line);
	va_start(ap, fmt);
	vsnprintf(failure + n, sizeof failure - (size_t)n, fmt, ap);
	va_end(ap);
}

static int opt_eq(const char *a, const char *b)
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

static int open_store(tctx *t, int synchronous_full, char *err, size_t errlen)
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

static void remove_files(const char *path)
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
static void remove_dir(const char *dir)
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

static void run(const char *name, test_fn fn, int which)
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
static int reopen(tctx *t, int synchronous_full)
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

/* ---- records and what a scan saw --------------------------------------- */

/* A record with only the required fields; strings are borrowed literals. */
static a2m_record make(const char *id, int64_t created_at)
{
	a2m_record r;
	memset(&r, 0, sizeof r);
	r.id = (char *)id;
	r.content = "content";
	r.created_at = created_at;
	return r;
}

static int put(tctx *t, const char *id, int64_t created_at, const char *owner,
	       const char *key)
{
	a2m_record r = make(id, created_at);
	r.owner = (char *)owner;
	r.key = (char *)key;
	return t->s->ops->insert(t->s, &r);
}

/* NULL when a and b hold the same value in every field, else the field's name. */
static const char *record_diff(const a2m_record *a, const a2m_record *b)
{
	if (!a || !b)
		return a == b ? NULL : "presence (one is NULL)";
#define STR(f) if (!opt_eq(a->f, b->f)) return #f
#define NUM(f) if (a->f != b->f) return #f
	STR(id); STR(content); NUM(created_at); NUM(seq); STR(role); STR(metadata);
	STR(group); STR(tier); NUM(accessed_at); NUM(access_count); STR(owner);
	STR(session); STR(key); NUM(revision); STR(uri); STR(media_type); NUM(dims);
#undef STR
#undef NUM
	if (memcmp(&a->salience, &b->salience, sizeof(double)) != 0)
		return "salience";
	if (!a->embedding != !b->embedding)
		return "embedding (presence)";
	if (a->dims && memcmp(a->embedding, b->embedding, a->dims * sizeof(double)) != 0)
		return "embedding";
	if (a->gen_dims != b->gen_dims || !a->gen_embedding != !b->gen_embedding)
		return "gen_embedding (presence)";
	if (a->gen_dims &&
	    memcmp(a->gen_embedding, b->gen_embedding, a->gen_dims * sizeof(float)) != 0)
		return "gen_embedding";
	return NULL;
}

/* A growable string. */
typedef struct sbuf {
	char  *p;
	size_t len, cap;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (a2m_grow((void **)&b->p, &b->cap, b->len + (size_t)n + 1, 1)) {
		fprintf(stderr, "test_store: out of memory\n");
		exit(2);
	}
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* What a scan saw, and how the visit callback should behave. */
typedef struct seen {
	sbuf ids;        /* "a,b,c" */
	int  n;
	int  stop_at;    /* return 1 at the stop_at-th record; 0 never */
	int  abort_at;   /* return abort_code at the abort_at-th record; 0 never */
	int  abort_code;
} seen;

static int collect(const a2m_record *r, void *ctx)
{
	seen *w = ctx;
	sb_add(&w->ids, "%s%s", w->n ? "," : "", r->id);
	w->n++;
	if (w->abort_at && w->n == w->abort_at)
		return w->abort_code;
	return w->stop_at && w->n == w->stop_at ? 1 : 0;
}

static sbuf last_ids;  /* scan_ids()'s answer, valid until its next call */

/* The ids q selects, in scan order, comma-separated ("" for none). */
static const char *scan_ids(tctx *t, const a2m_query *q)
{
	seen w;
	memset(&w, 0, sizeof w);
	w.ids = last_ids;
	w.ids.len = 0;
	sb_add(&w.ids, "%s", "");
	int rc = t->s->ops->scan(t->s, q, collect, &w);
	if (rc != 0) {
		w.ids.len = 0;
		sb_add(&w.ids, "<scan failed %d: %s>", rc, t->s->errmsg);
	}
	last_ids = w.ids;
	return last_ids.p;
}

/* The id of the first record q selects ("" for none). */
static const char *first_id(tctx *t, const a2m_query *q)
{
	seen w;
	memset(&w, 0, sizeof w);
	w.ids = last_ids;
	w.ids.len = 0;
	sb_add(&w.ids, "%s", "");
	w.stop_at = 1;
	if (t->s->ops->scan(t->s, q, collect, &w) != 0) {
		w.ids.len = 0;
		sb_add(&w.ids, "<scan failed: %s>", t->s->errmsg);
	}
	last_ids = w.ids;
	return last_ids.p;
}

static int64_t count_of(tctx *t, const a2m_query *q)
{
	int64_t n = -1;
	if (t->s->ops->count(t->s, q, &n) != 0)
		return -1;
	return n;
}

/* The first column of sql's first row on t's file (defined with raw_exec). */
static int raw_query(tctx *t, const char *sql, char *buf, size_t len);

static const a2m_query all_q;  /* selects everything, oldest first */

/* The columns of records_tier in t's file, comma-separated; an expression is "<expr>". */
static const char *tier_index_columns(tctx *t)
{
	static char buf[96];
	if (raw_query(t, "SELECT group_concat(ifnull(name, '<expr>'))"
		      " FROM pragma_index_info('records_tier')",
		      buf, sizeof buf) != SQLITE_OK)
		snprintf(buf, sizeof buf, "<query failed>");
	return buf;
}
static const a2m_sqlite_options full_sync = {.synchronous_full = 1};

static void dump_record(sbuf *b, const a2m_record *r)
{
#define O(x) ((x) ? (x) : "<NULL>")
	uint64_t bits;
	memcpy(&bits, &r->salience, sizeof bits);
	sb_add(b, "seq=%lld id=%s content=%s created=%lld role=%s meta=%s grp=%s "
	       "tier=%s sal=%016llx accessed=%lld count=%lld owner=%s session=%s "
	       "key=%s rev=%lld uri=%s type=%s emb=[",
	       (long long)r->seq, O(r->id), O(r->content), (long long)r->created_at,
	       O(r->role), O(r->metadata), O(r->group), O(r->tier),
	       (unsigned long long)bits, (long long)r->accessed_at,
	       (long long)r->access_count, O(r->owner), O(r->session), O(r->key),
	       (long long)r->revision, O(r->uri), O(r->media_type));
#undef O
	for (size_t i = 0; i < r->dims; i++) {
		memcpy(&bits, &r->embedding[i], sizeof bits);
		sb_add(b, "%s%016llx", i ? "," : "", (unsigned long long)bits);
	}
	sb_add(b, "]\n");
}

static int dump_visit(const a2m_record *r, void *ctx)
{
	dump_record(ctx, r);
	return 0;
}

/* Every field of every record, in scan order. The caller frees the string. */
static char *dump(tctx *t)
{
	sbuf b = {0};
	sb_add(&b, "%s", "");
	if (t->s->ops->scan(t->s, &all_q, dump_visit, &b) != 0)
		sb_add(&b, "<scan failed: %s>", t->s->errmsg);
	return b.p;
}

/* Whether the store's dump() is before (which this frees). */
static int same_as_dump(tctx *t, char *before)
{
	char *after = dump(t);
	int same = strcmp(before, after) == 0;
	free(before);
	free(after);
	return same;
}

/* A record with every field set, the embedding holding awkward doubles. */
static double awkward[8];

static a2m_record full_record(const char *id)
{
	awkward[0] = 0.1;
	awkward[1] = -0.0;
	awkward[2] = 4.9406564584124654e-324;   /* the smallest subnormal */
	awkward[3] = INFINITY;
	awkward[4] = -INFINITY;
	awkward[5] = 1.7976931348623157e308;
	awkward[6] = 1.0 / 3.0;
	awkward[7] = NAN;
	a2m_record r = make(id, 1753900000123LL);
	r.content = "Ünïcödé content, \"quoted\", 100% real_ly\nsecond line 😀";
	r.role = "user";
	r.metadata = "{\"note\":\"h\\u00e9llo — 世界 😀\",\"n\":[1,2.5,null],\"t\":true}";
	r.group = "project-x";
	r.tier = "long";
	r.salience = 0.75;
	r.accessed_at = 1753900099999LL;
	r.access_count = 7;
	r.owner = "alice";
	r.session = "sess-1";
	r.key = "prefs/theme";
	r.revision = 3;
	r.embedding = awkward;
	r.dims = 8;
	r.uri = "file:///tmp/notes.txt";
	r.media_type = "text/plain; charset=utf-8";
	return r;
}

/* ---- inserting and reading back ---------------------------------------- */

static void test_insert_assigns_increasing_seq(tctx *t)
{
	a2m_record a = make("a", 100), b = make("b", 100), c = make("c", 50);
	a2m_record *got;
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->insert(t->s, &b));
	EXPECT_OK(OPS->insert(t->s, &c));
	EXPECT_INT(a.seq, 1);
	EXPECT_INT(b.seq, 2);
	EXPECT_INT(c.seq, 3);
	EXPECT_OK(OPS->get(t->s, "c", &got));
	EXPECT(got != NULL);
	EXPECT_INT(got->seq, 3);
	a2m_record_free(got);
}

static void test_insert_duplicate_id_refused(tctx *t)
{
	a2m_record a = make("a", 100), dup = make("a", 200), c = make("c", 300);
	a2m_record *got;
	a.content = "first";
	dup.content = "second";
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_INT(OPS->insert(t->s, &dup), A2M_INVALID_PARAMS);
	EXPECT(t->s->errmsg[0] != '\0');
	EXPECT_INT(dup.seq, 0);
	EXPECT_INT(count_of(t, &all_q), 1);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT(got != NULL);
	EXPECT_STR(got->content, "first");
	EXPECT_INT(got->created_at, 100);
	EXPECT_INT(got->seq, 1);
	a2m_record_free(got);
	/* The refused insert did not use up a seq. */
	EXPECT_OK(OPS->insert(t->s, &c));
	EXPECT_INT(c.seq, 2);
}

static void test_insert_without_id_or_content_refused(tctx *t)
{
	a2m_record no_id = make(NULL, 1), no_content = make("b", 1), nan_sal = make("c", 1);
	no_content.content = NULL;
	nan_sal.salience = NAN;
	EXPECT_INT(OPS->insert(t->s, &no_id), A2M_INVALID_PARAMS);
	EXPECT_INT(OPS->insert(t->s, &no_content), A2M_INVALID_PARAMS);
	EXPECT_INT(OPS->insert(t->s, &nan_sal), A2M_INVALID_PARAMS);
	EXPECT_INT(count_of(t, &all_q), 0);
}

static void test_get_missing_returns_null(tctx *t)
{
	static a2m_record sentinel;             /* so the test sees *out being set */
	a2m_record *got = &sentinel;
	EXPECT_OK(put(t, "a", 1, "o", "k"));
	EXPECT_OK(OPS->get(t->s, "nope", &got));
	EXPECT(got == NULL);
	got = &sentinel;
	EXPECT_OK(OPS->get_by_key(t->s, "o", "other", &got));
	EXPECT(got == NULL);
	got = &sentinel;
	EXPECT_OK(OPS->get_by_key(t->s, "someone", "k", &got));
	EXPECT(got == NULL);
}

static void test_get_returns_independent_copy(tctx *t)
{
	a2m_record *src = a2m_record_new(), *got;
	EXPECT(src != NULL);
	src->id = strdup("a");
	src->content = strdup("hello");
	src->created_at = 5;
	EXPECT(src->id && src->content);
	EXPECT_OK(OPS->insert(t->s, src));
	a2m_record_free(src);                   /* the store kept its own copy */
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT(got != NULL);
	got->content[0] = 'J';                  /* and handed out another */
	a2m_record_free(got);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT(got != NULL);
	EXPECT_STR(got->content, "hello");
	a2m_record_free(got);
}

static int first_record(const a2m_record *r, void *ctx)
{
	*(a2m_record **)ctx = a2m_record_dup(r);
	return 1;
}

static void test_roundtrip_every_field(tctx *t)
{
	a2m_record want = full_record("full"), *got, *by_key, *scanned = NULL;
	EXPECT_OK(OPS->insert(t->s, &want));
	EXPECT_INT(want.seq, 1);

	EXPECT_OK(OPS->get(t->s, "full", &got));
	EXPECT(got != NULL);
	EXPECT_SAME(got, &want);
	EXPECT(got->embedding != awkward);      /* a copy, not the caller's array */
	a2m_record_free(got);

	EXPECT_OK(OPS->get_by_key(t->s, "alice", "prefs/theme", &by_key));
	EXPECT_SAME(by_key, &want);
	a2m_record_free(by_key);

	EXPECT_OK(OPS->scan(t->s, &all_q, first_record, &scanned));
	EXPECT_SAME(scanned, &want);
	a2m_record_free(scanned);
}

static void test_roundtrip_absent_fields_stay_null(tctx *t)
{
	a2m_record want = make("bare", -42), *got;
	EXPECT_OK(OPS->insert(t->s, &want));
	EXPECT_OK(OPS->get(t->s, "bare", &got));
	EXPECT(got != NULL);
	EXPECT_SAME(got, &want);
	EXPECT(got->role == NULL && got->metadata == NULL && got->group == NULL);
	EXPECT(got->tier == NULL && got->owner == NULL && got->session == NULL);
	EXPECT(got->key == NULL && got->uri == NULL && got->media_type == NULL);
	EXPECT(got->embedding == NULL);
	EXPECT_INT(got->dims, 0);
	EXPECT_INT(got->created_at, -42);
	a2m_record_free(got);
}

/* The server's own vector is kept apart from the caller's, and update sets or clears it. */
static void test_generated_vector_roundtrips_apart_from_callers(tctx *t)
{
	float gen[3] = {0.5f, -1.25f, 3.0f};
	a2m_record want = make("gen", 7), *got = NULL;
	want.gen_embedding = gen;
	want.gen_dims = 3;
	EXPECT_OK(OPS->insert(t->s, &want));
	EXPECT_OK(OPS->get(t->s, "gen", &got));
	EXPECT_SAME(got, &want);
	EXPECT(got && got->embedding == NULL && got->gen_embedding != gen);
	a2m_record_free(got);
	want.gen_embedding = NULL;
	want.gen_dims = 0;
	EXPECT_OK(OPS->update(t->s, &want));
	EXPECT_OK(OPS->get(t->s, "gen", &got));
	EXPECT_SAME(got, &want);
	a2m_record_free(got);
}

static void test_large_content_roundtrips(tctx *t)
{
	const char *piece = "ünïcødé 😀 100%_ ";
	size_t plen = strlen(piece), n = 3 * 1024 * 1024 / plen;
	char *big = malloc(n * plen + 1);
	a2m_record r = make("big", 1), *got = NULL;
	EXPECT(big != NULL);
	for (size_t i = 0; i < n; i++)
		memcpy(big + i * plen, piece, plen);
	big[n * plen] = '\0';
	r.content = big;
	int rc = OPS->insert(t->s, &r);
	if (rc != 0)
		free(big);
	EXPECT_OK(rc);
	rc = OPS->get(t->s, "big", &got);
	if (rc != 0 || !got || strcmp(got->content, big) != 0) {
		free(big);
		a2m_record_free(got);
		failf(__LINE__, "3 MB content did not come back intact (rc %d)", rc);
		return;
	}
	free(big);
	a2m_record_free(got);
}

/*
** Ids around and past 255 bytes, every field set: the memory engine keeps
** an id's length in a byte, and reads one of 255 or more by its NUL.
*/
static void test_long_ids_roundtrip_through_every_read(tctx *t)
{
	static const size_t lens[] = {1, 254, 255, 256, 2000};
	char *ids[5];
	a2m_record *got = NULL;
	for (size_t i = 0; i < 5; i++) {
		ids[i] = malloc(lens[i] + 1);
		EXPECT(ids[i] != NULL);
		memset(ids[i], (int)('a' + i), lens[i]);
		ids[i][lens[i]] = '\0';
		a2m_record r = i % 2 ? full_record(ids[i]) : make(ids[i], (int64_t)i);
		char key[16];
		snprintf(key, sizeof key, "k%zu", i);
		r.key = key;
		r.content = ids[i];   /* content that must not run into the id */
		EXPECT_OK(OPS->insert(t->s, &r));
	}
	for (size_t i = 0; i < 5; i++) {
		char key[16];
		snprintf(key, sizeof key, "k%zu", i);
		EXPECT_OK(OPS->get(t->s, ids[i], &got));
		EXPECT(got && strcmp(got->id, ids[i]) == 0 && strcmp(got->content, ids[i]) == 0);
		a2m_record_free(got);
		EXPECT_OK(OPS->get_by_key(t->s, i % 2 ? "alice" : NULL, key, &got));
		EXPECT(got && strcmp(got->id, ids[i]) == 0);
		if (got) {
			free(got->content);
			got->content = strdup("changed");
			EXPECT_OK(OPS->update(t->s, got));
		}
		a2m_record_free(got);
		EXPECT_OK(OPS->get(t->s, ids[i], &got));
		EXPECT(got && strcmp(got->content, "changed") == 0);
		a2m_record_free(got);
	}
	for (size_t i = 0; i < 5; i++) {
		int removed = 0;
		EXPECT_OK(OPS->remove(t->s, ids[i], &removed));
		EXPECT_INT(removed, 1);
		free(ids[i]);
	}
	EXPECT_INT(count_of(t, &all_q), 0);
}

/* ---- updating and removing --------------------------------------------- */

static void test_update_replaces_every_field_keeps_seq(tctx *t)
{
	a2m_record full = full_record("x"), other = make("y", 5), *got;
	double emb[2] = {1.5, -2.25};
	EXPECT_OK(OPS->insert(t->s, &full));
	EXPECT_OK(OPS->insert(t->s, &other));

	/* Every field set -> every optional field absent. */
	a2m_record bare = make("x", 77);
	bare.content = "bare now";
	bare.seq = 99;                          /* ignored: seq is the store's */
	EXPECT_OK(OPS->update(t->s, &bare));
	EXPECT_OK(OPS->get(t->s, "x", &got));
	bare.seq = 1;
	EXPECT_SAME(got, &bare);
	a2m_record_free(got);

	/* And back to a different set of values. */
	a2m_record again = full_record("x");
	again.content = "again";
	again.tier = "short";
	again.embedding = emb;
	again.dims = 2;
	again.access_count = 8;
	EXPECT_OK(OPS->update(t->s, &again));
	EXPECT_OK(OPS->get(t->s, "x", &got));
	again.seq = 1;
	EXPECT_SAME(got, &again);
	a2m_record_free(got);

	EXPECT_OK(OPS->get(t->s, "y", &got));
	EXPECT_SAME(got, &other);
	a2m_record_free(got);
	EXPECT_INT(count_of(t, &all_q), 2);
}

static void test_update_unknown_id_returns_unknown_record(tctx *t)
{
	a2m_record ghost = make("ghost", 1), *got;
	EXPECT_INT(OPS->update(t->s, &ghost), A2M_UNKNOWN_RECORD);
	EXPECT(t->s->errmsg[0] != '\0');
	EXPECT_INT(count_of(t, &all_q), 0);
	EXPECT_OK(OPS->get(t->s, "ghost", &got));
	EXPECT(got == NULL);
}

static void test_update_to_taken_key_refused(tctx *t)
{
	a2m_record b = make("b", 2), *got;
	EXPECT_OK(put(t, "a", 1, "o", "k1"));
	b.owner = "o";
	b.key = "k2";
	EXPECT_OK(OPS->insert(t->s, &b));
	b.key = "k1";
	b.content = "changed";
	EXPECT_INT(OPS->update(t->s, &b), A2M_INVALID_PARAMS);
	EXPECT_OK(OPS->get(t->s, "b", &got));
	EXPECT_STR(got->key, "k2");
	EXPECT_STR(got->content, "content");
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k1", &got));
	EXPECT_STR(got ? got->id : NULL, "a");
	a2m_record_free(got);
	/* The same key under another owner is free. */
	b.owner = "p";
	EXPECT_OK(OPS->update(t->s, &b));
	EXPECT_OK(OPS->get_by_key(t->s, "p", "k1", &got));
	EXPECT_STR(got ? got->id : NULL, "b");
	a2m_record_free(got);
}

static void test_update_moves_key(tctx *t)
{
	a2m_record a = make("a", 1), *got;
	a.owner = "o";
	a.key = "k1";
	EXPECT_OK(OPS->insert(t->s, &a));
	a.key = "k2";
	EXPECT_OK(OPS->update(t->s, &a));
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k1", &got));
	EXPECT(got == NULL);
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k2", &got));
	EXPECT_STR(got ? got->id : NULL, "a");
	a2m_record_free(got);
	a.key = NULL;
	EXPECT_OK(OPS->update(t->s, &a));
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k2", &got));
	EXPECT(got == NULL);
	EXPECT_OK(put(t, "c", 2, "o", "k2"));
	EXPECT_OK(put(t, "d", 3, "o", "k1"));
}

static void test_remove_reports_whether_removed(tctx *t)
{
	int removed = -1;
	a2m_record *got;
	EXPECT_OK(put(t, "a", 1, "o", "k"));
	EXPECT_OK(OPS->remove(t->s, "a", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_OK(OPS->remove(t->s, "a", &removed));
	EXPECT_INT(removed, 0);
	EXPECT_OK(OPS->remove(t->s, "never", &removed));
	EXPECT_INT(removed, 0);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT(got == NULL);
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k", &got));
	EXPECT(got == NULL);
	EXPECT_INT(count_of(t, &all_q), 0);
	/* Its key is free again. */
	EXPECT_OK(put(t, "b", 2, "o", "k"));
}

static void test_seq_never_reused_after_remove(tctx *t)
{
	a2m_record d = make("d", 4), e = make("e", 5);
	int removed;
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	EXPECT_OK(put(t, "c", 3, NULL, NULL));
	EXPECT_OK(OPS->remove(t->s, "c", &removed));
	EXPECT_OK(OPS->insert(t->s, &d));
	EXPECT_INT(d.seq, 4);
	EXPECT_OK(OPS->remove(t->s, "a", &removed));
	EXPECT_OK(OPS->remove(t->s, "b", &removed));
	EXPECT_OK(OPS->remove(t->s, "d", &removed));
	EXPECT_OK(OPS->insert(t->s, &e));
	EXPECT_INT(e.seq, 5);
}

/*
** The seq of a removed newest record is not given out again, whether the
** remove was on its own or in a transaction, across a close and reopen,
** and by another store sharing the file (another process, as far as the
** file can tell).
*/
static void test_seq_not_reused_after_removing_newest_across_reopen(tctx *t)
{
	a2m_record d = make("d", 4), e = make("e", 5), f = make("f", 6), g = make("g", 7);
	a2m_store *other = NULL;
	char err[256] = "", buf[32];
	int removed;
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	EXPECT_OK(put(t, "c", 3, NULL, NULL));
	EXPECT_OK(OPS->remove(t->s, "c", &removed));
	if (reopen(t, 1) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &d));
	EXPECT_INT(d.seq, 4);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->remove(t->s, "d", &removed));
	EXPECT_OK(OPS->commit(t->s));
	if (reopen(t, 1) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &e));
	EXPECT_INT(e.seq, 5);
	/* Another store on the file reads the mark this one wrote, and back. */
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &other, err, sizeof err), 0);
	if (!other)
		return;
	EXPECT_OK(OPS->remove(t->s, "e", &removed));
	EXPECT_OK(other->ops->insert(other, &f));
	EXPECT_INT(f.seq, 6);
	EXPECT_OK(other->ops->remove(other, "f", &removed));
	other->ops->close(other);
	EXPECT_OK(OPS->insert(t->s, &g));
	EXPECT_INT(g.seq, 7);
	t->s->ops->close(t->s);
	t->s = NULL;
	/* Inserts leave the mark alone; the remove of f raised it to 6. */
	EXPECT_INT(raw_query(t, "SELECT value FROM a2m_meta WHERE name = 'seq'", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "6");
}

/* ---- keys -------------------------------------------------------------- */

static void test_key_unique_per_owner(tctx *t)
{
	a2m_record *got;
	EXPECT_OK(put(t, "r1", 1, "alice", "k"));
	EXPECT_OK(put(t, "r2", 2, "bob", "k"));
	EXPECT_OK(put(t, "r3", 3, NULL, "k"));
	EXPECT_OK(put(t, "r4", 4, "", "k"));
	EXPECT_INT(put(t, "r5", 5, "alice", "k"), A2M_INVALID_PARAMS);
	EXPECT_INT(put(t, "r6", 6, NULL, "k"), A2M_INVALID_PARAMS);
	EXPECT_INT(put(t, "r7", 7, "", "k"), A2M_INVALID_PARAMS);
	EXPECT_OK(put(t, "r8", 8, "alice", NULL));  /* no key: no constraint */
	EXPECT_OK(put(t, "r9", 9, "alice", NULL));
	EXPECT_OK(put(t, "r10", 10, NULL, NULL));
	EXPECT_OK(put(t, "r11", 11, NULL, NULL));
	EXPECT_INT(count_of(t, &all_q), 8);

	EXPECT_OK(OPS->get_by_key(t->s, "alice", "k", &got));
	EXPECT_STR(got ? got->id : NULL, "r1");
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, "bob", "k", &got));
	EXPECT_STR(got ? got->id : NULL, "r2");
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, NULL, "k", &got));
	EXPECT_STR(got ? got->id : NULL, "r3");
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, "", "k", &got));
	EXPECT_STR(got ? got->id : NULL, "r4");
	a2m_record_free(got);
}

static void test_null_owner_distinct_from_empty_owner(tctx *t)
{
	a2m_record *got;
	EXPECT_OK(put(t, "unowned", 1, NULL, "k"));
	EXPECT_OK(OPS->get_by_key(t->s, "", "k", &got));
	EXPECT(got == NULL);
	EXPECT_OK(put(t, "empty", 2, "", "j"));
	EXPECT_OK(OPS->get_by_key(t->s, NULL, "j", &got));
	EXPECT(got == NULL);
	EXPECT_OK(OPS->get_by_key(t->s, "", "j", &got));
	EXPECT_STR(got ? got->id : NULL, "empty");
	a2m_record_free(got);
}

/* ---- scans ------------------------------------------------------------- */

static void test_same_ms_records_scan_in_insert_order(tctx *t)
{
	a2m_query desc = {.descending = 1};
	EXPECT_OK(put(t, "z", 1000, NULL, NULL));
	EXPECT_OK(put(t, "a", 1000, NULL, NULL));
	EXPECT_OK(put(t, "m", 1000, NULL, NULL));
	EXPECT_OK(put(t, "b", 1000, NULL, NULL));
	EXPECT_STR(scan_ids(t, &all_q), "z,a,m,b");
	EXPECT_STR(scan_ids(t, &desc), "b,m,a,z");
}

static void test_scan_orders_by_created_at_then_seq(tctx *t)
{
	a2m_query desc = {.descending = 1};
	a2m_record c = make("c", 300);
	EXPECT_OK(OPS->insert(t->s, &c));
	EXPECT_OK(put(t, "a", 100, NULL, NULL));
	EXPECT_OK(put(t, "b", 200, NULL, NULL));
	EXPECT_OK(put(t, "a2", 100, NULL, NULL));
	EXPECT_STR(scan_ids(t, &all_q), "a,a2,b,c");
	EXPECT_STR(scan_ids(t, &desc), "c,b,a2,a");
	/* An update that moves created_at moves the record; seq breaks the tie. */
	c.created_at = 100;
	EXPECT_OK(OPS->update(t->s, &c));
	EXPECT_STR(scan_ids(t, &all_q), "c,a,a2,b");
	EXPECT_STR(scan_ids(t, &desc), "b,a2,a,c");
}

static void test_scan_orders_records_inserted_out_of_order(tctx *t)
{
	char id[16];
	sbuf want = {0};
	/* Newest first, as an import of old records might arrive, with scans between. */
	for (int i = 100; i >= 1; i--) {
		snprintf(id, sizeof id, "r%03d", i);
		EXPECT_OK(put(t, id, i, NULL, NULL));
		if (i % 25 == 0)
			EXPECT_INT(count_of(t, &all_q), 101 - i);
		if (i == 50) {
			EXPECT_STR(first_id(t, &all_q), "r050");
			EXPECT_STR(first_id(t, &(a2m_query){.descending = 1}), "r100");
		}
	}
	for (int i = 1; i <= 100; i++)
		sb_add(&want, "%sr%03d", i > 1 ? "," : "", i);
	const char *got = scan_ids(t, &all_q);
	int same = strcmp(got, want.p) == 0;
	free(want.p);
	EXPECT(same);
}

static void test_out_of_order_records_can_be_removed_and_moved(tctx *t)
{
	a2m_query desc = {.descending = 1};
	a2m_record b = make("b", 20);
	int removed;
	EXPECT_OK(put(t, "a", 10, NULL, NULL));
	EXPECT_OK(OPS->insert(t->s, &b));
	EXPECT_OK(put(t, "c", 5, NULL, NULL));   /* older than what is there */
	EXPECT_OK(put(t, "d", 1, NULL, NULL));
	EXPECT_OK(OPS->remove(t->s, "c", &removed));
	b.created_at = 0;
	EXPECT_OK(OPS->update(t->s, &b));
	EXPECT_STR(scan_ids(t, &all_q), "b,d,a");
	EXPECT_STR(scan_ids(t, &desc), "a,d,b");
	EXPECT_OK(put(t, "e", 3, NULL, NULL));
	b.created_at = 30;
	EXPECT_OK(OPS->update(t->s, &b));
	EXPECT_OK(OPS->remove(t->s, "a", &removed));
	EXPECT_STR(scan_ids(t, &desc), "b,e,d");
	EXPECT_STR(scan_ids(t, &all_q), "d,e,b");
	EXPECT_INT(count_of(t, &all_q), 3);
}

static int fill_five(tctx *t)
{
	char id[16];
	for (int i = 1; i <= 5; i++) {
		snprintf(id, sizeof id, "r%d", i);
		if (put(t, id, i, NULL, NULL) != 0)
			return -1;
	}
	return 0;
}

static void test_scan_descending_stops_early(tctx *t)
{
	a2m_query desc = {.descending = 1};
	seen w;
	memset(&w, 0, sizeof w);
	w.stop_at = 2;
	EXPECT(fill_five(t) == 0);
	int rc = OPS->scan(t->s, &desc, collect, &w);
	char *ids = w.ids.p;
	int ok = rc == 0 && w.n == 2 && ids && strcmp(ids, "r5,r4") == 0;
	if (!ok)
		failf(__LINE__, "rc %d, saw %d: %s", rc, w.n, ids ? ids : "");
	free(ids);
}

static void test_scan_ascending_stops_early(tctx *t)
{
	seen w;
	memset(&w, 0, sizeof w);
	w.stop_at = 3;
	EXPECT(fill_five(t) == 0);
	int rc = OPS->scan(t->s, &all_q, collect, &w);
	char *ids = w.ids.p;
	int ok = rc == 0 && w.n == 3 && ids && strcmp(ids, "r1,r2,r3") == 0;
	if (!ok)
		failf(__LINE__, "rc %d, saw %d: %s", rc, w.n, ids ? ids : "");
	free(ids);
}

static void test_scan_negative_visit_aborts_with_its_code(tctx *t)
{
	a2m_query desc = {.descending = 1};
	seen w;
	memset(&w, 0, sizeof w);
	w.abort_at = 2;
	w.abort_code = -7;
	EXPECT(fill_five(t) == 0);
	int rc = OPS->scan(t->s, &desc, collect, &w);
	char *ids = w.ids.p;
	int ok = rc == -7 && w.n == 2 && ids && strcmp(ids, "r5,r4") == 0;
	if (!ok)
		failf(__LINE__, "rc %d, saw %d: %s", rc, w.n, ids ? ids : "");
	free(ids);
}

/* a..e with the fields the filter test selects on. */
static int fill_filter_set(tctx *t)
{
	static const struct {
		const char *id, *tier, *owner, *session, *group;
	} rows[] = {
		{"a", "short", "u1", "s1", "g1"},
		{"b", "long", "u1", NULL, "g2"},
		{"c", "short", "u2", "s1", NULL},
		{"d", NULL, NULL, "s2", "g1"},
		{"e", "short", NULL, NULL, "g1"},
	};
	for (int i = 0; i < 5; i++) {
		a2m_record r = make(rows[i].id, i + 1);
		r.tier = (char *)rows[i].tier;
		r.owner = (char *)rows[i].owner;
		r.session = (char *)rows[i].session;
		r.group = (char *)rows[i].group;
		if (t->s->ops->insert(t->s, &r) != 0)
			return -1;
	}
	return 0;
}

/* Checks that q selects want (ids, in order) and that count agrees. */
#define EXPECT_SELECTS(q, want) do { \
	a2m_query q_ = q; \
	EXPECT_STR(scan_ids(t, &q_), want); \
	const char *w__ = (want); \
	int64_t n_ = w__[0] ? 1 : 0; \
	for (const char *p_ = w__; *p_; p_++) \
		n_ += *p_ == ','; \
	EXPECT_INT(count_of(t, &q_), n_); \
} while (0)

static void test_scan_filters_by_tier_owner_session_group(tctx *t)
{
	EXPECT(fill_filter_set(t) == 0);
	EXPECT_SELECTS(((a2m_query){.tier = "short"}), "a,c,e");
	EXPECT_SELECTS(((a2m_query){.tier = "long"}), "b");
	EXPECT_SELECTS(((a2m_query){.tier = "none"}), "");
	EXPECT_SELECTS(((a2m_query){.by_owner = 1, .owner = "u1"}), "a,b");
	EXPECT_SELECTS(((a2m_query){.by_owner = 1, .owner = NULL}), "d,e");
	EXPECT_SELECTS(((a2m_query){.by_owner = 1, .owner = ""}), "");
	EXPECT_SELECTS(((a2m_query){.owner = "u1"}), "a,b,c,d,e");  /* by_owner 0 */
	EXPECT_SELECTS(((a2m_query){.by_session = 1, .session = "s1"}), "a,c");
	EXPECT_SELECTS(((a2m_query){.by_session = 1, .session = NULL}), "b,e");
	EXPECT_SELECTS(((a2m_query){.group = "g1"}), "a,d,e");
	EXPECT_SELECTS(((a2m_query){.tier = "short", .group = "g1"}), "a,e");
	EXPECT_SELECTS(((a2m_query){.tier = "short", .by_owner = 1, .by_session = 1}), "e");
	EXPECT_SELECTS(((a2m_query){.tier = "short", .descending = 1}), "e,c,a");
	EXPECT_SELECTS(((a2m_query){.by_owner = 1, .owner = "u1", .by_session = 1,
				    .session = "s1", .group = "g1", .tier = "short"}), "a");
}

static void test_key_prefix_with_percent_and_underscore(tctx *t)
{
	static const char *const keys[] = {
		"a%b", "a_b", "axb", "a%", "ab", "A%b", "a\\b", "%", "_x", "a%%",
	};
	char id[16];
	for (int i = 0; i < 10; i++) {
		snprintf(id, sizeof id, "k%d", i + 1);
		EXPECT_OK(put(t, id, i + 1, NULL, keys[i]));
	}
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a%"}), "k1,k4,k10");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a%%"}), "k10");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a_"}), "k2");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "%"}), "k8");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "_"}), "k9");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a\\"}), "k7");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a"}), "k1,k2,k3,k4,k5,k7,k10");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "A"}), "k6");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a%b"}), "k1");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a%bc"}), "");
}

static void test_key_prefix_is_bytewise_utf8(tctx *t)
{
	static const char *const keys[] = {
		"é", "éa", "ê", "e", "ÿz", "Ā", "😀x", "😁", "é😀",
	};
	char id[16];
	for (int i = 0; i < 9; i++) {
		snprintf(id, sizeof id, "u%d", i + 1);
		EXPECT_OK(put(t, id, i + 1, "o", keys[i]));
	}
	EXPECT_SELECTS(((a2m_query){.key_prefix = "é"}), "u1,u2,u9");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "e"}), "u4");
	/* C3 BF: its upper bound C3 C0 must still exclude Ā (C4 80). */
	EXPECT_SELECTS(((a2m_query){.key_prefix = "ÿ"}), "u5");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "😀"}), "u7");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "é😀"}), "u9");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "\xC3"}), "u1,u2,u3,u5,u9");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "é", .by_owner = 1, .owner = "o"}),
		       "u1,u2,u9");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "é", .by_owner = 1, .owner = "p"}), "");
}

static void test_key_prefix_of_0xff_bytes(tctx *t)
{
	EXPECT_OK(put(t, "f1", 1, NULL, "\xFF\xFF"));
	EXPECT_OK(put(t, "f2", 2, NULL, "\xFF" "a"));
	EXPECT_OK(put(t, "f3", 3, NULL, "\xFE"));
	EXPECT_OK(put(t, "f4", 4, NULL, "a\xFF" "b"));
	EXPECT_OK(put(t, "f5", 5, NULL, "b"));
	EXPECT_SELECTS(((a2m_query){.key_prefix = "\xFF"}), "f1,f2");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "\xFF\xFF"}), "f1");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "a\xFF"}), "f4");
	EXPECT_SELECTS(((a2m_query){.key_prefix = "\xFE"}), "f3");
}

static void test_key_prefix_empty_selects_every_keyed_record(tctx *t)
{
	EXPECT_OK(put(t, "x", 1, NULL, "x"));
	EXPECT_OK(put(t, "none", 2, NULL, NULL));
	EXPECT_OK(put(t, "empty", 3, NULL, ""));
	EXPECT_SELECTS(((a2m_query){.key_prefix = ""}), "x,empty");
}

static void test_count_matches_scan(tctx *t)
{
	static const char *const tiers[] = {"short", "long", NULL};
	static const char *const owners[] = {NULL, "u1", "u2", "u3"};
	char id[24], key[24];
	for (int i = 0; i < 60; i++) {
		snprintf(id, sizeof id, "r%02d", i);
		a2m_record r = make(id, i / 2);   /* pairs share a millisecond */
		snprintf(key, sizeof key, "%s/%02d", i % 2 ? "odd" : "even", i);
		r.tier = (char *)tiers[i % 3];
		r.owner = (char *)owners[i % 4];
		r.key = key;
		EXPECT_OK(OPS->insert(t->s, &r));
	}
	const a2m_query qs[] = {
		{0},
		{.tier = "short"},
		{.tier = "long", .descending = 1},
		{.by_owner = 1},
		{.by_owner = 1, .owner = "u1"},
		{.tier = "short", .by_owner = 1},
		{.key_prefix = "odd/"},
		{.key_prefix = "even/1", .tier = "short"},
		{.by_session = 1},
		{.by_session = 1, .session = "s"},
	};
	const int64_t want[] = {60, 20, 20, 15, 15, 5, 30, 2, 60, 0};
	for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
		seen w;
		memset(&w, 0, sizeof w);
		int rc = OPS->scan(t->s, &qs[i], collect, &w);
		free(w.ids.p);
		EXPECT_INT(rc, 0);
		EXPECT_INT(w.n, want[i]);
		EXPECT_INT(count_of(t, &qs[i]), want[i]);
	}
}

/* ---- counts and scans by tier and session -------------------------------- */

/* Copies of every record, oldest first, for the brute-force answers below. */
typedef struct rec_list {
	a2m_record **v;
	size_t       n, cap;
} rec_list;

static int keep_copy(const a2m_record *r, void *ctx)
{
	rec_list *l = ctx;
	if (a2m_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v))
		return -1;
	if (!(l->v[l->n] = a2m_record_dup(r)))
		return -1;
	l->n++;
	return 0;
}

static const char *const group_tiers[] = {NULL, "t0", "t1", "t2"};
static const char *const group_sessions[] = {NULL, "", "s0", "s1", "s2", "s3", "s4", "s5",
					     "s6", "s7", "s8", "s9", "s10", "s11"};
#define N_GROUP_TIERS (sizeof group_tiers / sizeof group_tiers[0])
#define N_GROUP_SESSIONS (sizeof group_sessions / sizeof group_sessions[0])

/*
** Every selection by tier, session or both (either way round) must count
** and scan exactly what filtering every record gives. Returns 0, or -1
** with failure set.
*/
static int check_groups(tctx *t, const char *when)
{
	rec_list all = {0};
	int rc = t->s->ops->scan(t->s, &all_q, keep_copy, &all);
	for (size_t ti = 0; ti < N_GROUP_TIERS && !rc; ti++) {
		for (size_t si = 0; si <= N_GROUP_SESSIONS && !rc; si++) {
			a2m_query q = {0};
			q.tier = group_tiers[ti];
			q.by_session = si < N_GROUP_SESSIONS;
			q.session = q.by_session ? group_sessions[si] : NULL;
			if (!q.tier && !q.by_session)
				continue;
			for (q.descending = 0; q.descending < 2 && !rc; q.descending++) {
				sbuf want = {0};
				int64_t n = 0;
				sb_add(&want, "%s", "");
				for (size_t k = 0; k < all.n; k++) {
					size_t i = q.descending ? all.n - 1 - k : k;
					if (a2m_query_matches(&q, all.v[i]))
						sb_add(&want, "%s%s", n++ ? "," : "", all.v[i]->id);
				}
				const char *got = scan_ids(t, &q);
				int64_t counted = count_of(t, &q);
				if (strcmp(got, want.p) != 0 || counted != n) {
					snprintf(failure, sizeof failure,
						 "%s: tier %s session %s%s: scan %.200s count %lld,"
						 " want %.200s count %lld", when,
						 q.tier ? q.tier : "(any)",
						 q.by_session ? (q.session ? q.session : "NULL") : "(any)",
						 q.descending ? " descending" : "", got, (long long)counted,
						 want.p, (long long)n);
					rc = -1;
				}
				free(want.p);
			}
		}
	}
	a2m_record_array_free(all.v, all.n);
	if (rc > 0 || (rc < 0 && !failure[0]))
		snprintf(failure, sizeof failure, "%s: scan failed: %s", when, t->s->errmsg);
	return rc ? -1 : 0;
}

static uint64_t lcg_next(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

/*
** Random inserts, moves between tiers and sessions, out-of-order times and
** removes, in committed and rolled-back transactions and on their own: the
** kept counts and group scans always agree with the records.
*/
static void test_counts_and_group_scans_follow_writes_and_rollback(tctx *t)
{
	uint64_t x = 42;
	int next_id = 0, in_tx = 0, removed;
	char id[24], when[64];
	for (int step = 1; step <= 600; step++) {
		uint64_t op = lcg_next(&x) % 20;
		if (op == 0 && !in_tx) {
			EXPECT_OK(OPS->begin(t->s));
			in_tx = 1;
		} else if (op <= 1 && in_tx) {
			if (lcg_next(&x) % 2)
				EXPECT_OK(OPS->commit(t->s));
			else
				OPS->rollback(t->s);
			in_tx = 0;
			snprintf(when, sizeof when, "after step %d, which ended a transaction",
				 step);
			if (check_groups(t, when) != 0)
				return;
		} else if (op < 11 || next_id < 20) {
			snprintf(id, sizeof id, "r%d", next_id++);
			a2m_record r = make(id, (int64_t)(lcg_next(&x) % 500));
			r.tier = (char *)group_tiers[lcg_next(&x) % N_GROUP_TIERS];
			r.session = (char *)group_sessions[lcg_next(&x) % N_GROUP_SESSIONS];
			EXPECT_OK(OPS->insert(t->s, &r));
		} else {
			snprintf(id, sizeof id, "r%d", (int)(lcg_next(&x) % (uint64_t)next_id));
			a2m_record *cur = NULL;
			EXPECT_OK(OPS->get(t->s, id, &cur));
			if (!cur)
				continue;
			if (op < 17) {
				char *tier = cur->tier, *session = cur->session;
				const char *nt = group_tiers[lcg_next(&x) % N_GROUP_TIERS];
				const char *ns = group_sessions[lcg_next(&x) % N_GROUP_SESSIONS];
				cur->tier = (char *)nt;
				cur->session = (char *)ns;
				if (op == 16)
					cur->created_at = (int64_t)(lcg_next(&x) % 500);
				int rc = OPS->update(t->s, cur);
				cur->tier = tier;
				cur->session = session;
				if (rc != 0) {
					a2m_record_free(cur);
					EXPECT_OK(rc);
				}
			} else {
				EXPECT_OK(OPS->remove(t->s, id, &removed));
			}
			a2m_record_free(cur);
		}
		if (step % 50 == 0) {
			snprintf(when, sizeof when, "after step %d", step);
			if (check_groups(t, when) != 0)
				return;
		}
	}
	if (in_tx)
		OPS->rollback(t->s);
	if (check_groups(t, "at the end") != 0)
		return;
	if (strcmp(t->engine, "sqlite") == 0) {
		if (reopen(t, 1) != 0)
			return;
		if (check_groups(t, "after reopening") != 0)
			return;
	}
}

/* A record in tier and session (either may be NULL), created at created_at. */
static int put_in(tctx *t, const char *id, int64_t created_at, const char *tier,
		  const char *session)
{
	a2m_record r = make(id, created_at);
	r.tier = (char *)tier;
	r.session = (char *)session;
	return t->s->ops->insert(t->s, &r);
}

/* The counts of tier "working": all, session s1, no session; of session s1; of "episodic". */
static const char *working_counts(tctx *t)
{
	static char buf[96];
	snprintf(buf, sizeof buf, "%lld %lld %lld %lld %lld",
		 (long long)count_of(t, &(a2m_query){.tier = "working"}),
		 (long long)count_of(t, &(a2m_query){.tier = "working", .by_session = 1,
						     .session = "s1"}),
		 (long long)count_of(t, &(a2m_query){.tier = "working", .by_session = 1}),
		 (long long)count_of(t, &(a2m_query){.by_session = 1, .session = "s1"}),
		 (long long)count_of(t, &(a2m_query){.tier = "episodic"}));
	return buf;
}

/*
** A count inside a transaction sees the inserts made in it so far; a
** refused insert (a duplicate id, here in a bucket nothing else is in)
** counts nothing; a remove and a move after inserts count right; a
** rollback takes back exactly what it undid, and a commit keeps the rest.
** (SQLite may refuse an insert only at a later op of its transaction, which
** then can only be rolled back: there the refusals are left out, and
** test_many_inserts_with_a_taken_id_or_key_refused_whole has the rule.)
*/
static void test_counts_follow_inserts_refusals_and_rollback_in_transaction(tctx *t)
{
	a2m_record d = make("d", 4);
	int removed;
	EXPECT_OK(put_in(t, "a", 1, "working", "s1"));  /* committed on its own */
	EXPECT_STR(working_counts(t), "1 1 0 1 0");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put_in(t, "b", 2, "working", "s1"));
	EXPECT_OK(put_in(t, "c", 3, "working", NULL));
	EXPECT_OK(put_in(t, "d", 4, "episodic", "s1"));
	EXPECT_STR(working_counts(t), "3 2 1 3 1");
	int refusals = strcmp(t->engine, "memory") == 0;
	if (refusals) {
		EXPECT_INT(put_in(t, "b", 5, "semantic", "s9"), A2M_INVALID_PARAMS);
		EXPECT_INT(count_of(t, &(a2m_query){.tier = "semantic"}), 0);
		EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1, .session = "s9"}), 0);
	}
	EXPECT_STR(working_counts(t), "3 2 1 3 1");
	EXPECT_OK(OPS->remove(t->s, "c", &removed));
	EXPECT_STR(working_counts(t), "2 2 0 3 1");
	d.tier = "working";
	d.session = "s1";
	EXPECT_OK(OPS->update(t->s, &d));
	EXPECT_STR(working_counts(t), "3 3 0 3 0");
	EXPECT_OK(put_in(t, "e", 6, "working", "s1"));
	EXPECT_STR(working_counts(t), "4 4 0 4 0");
	OPS->rollback(t->s);
	EXPECT_STR(working_counts(t), "1 1 0 1 0");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put_in(t, "b", 7, "working", "s1"));
	if (refusals)
		EXPECT_INT(put_in(t, "a", 8, "episodic", NULL), A2M_INVALID_PARAMS);
	EXPECT_OK(put_in(t, "f", 9, "working", NULL));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(working_counts(t), "3 2 1 2 0");
	if (check_groups(t, "after the commit") != 0)
		return;
	if (strcmp(t->engine, "sqlite") != 0)
		return;
	if (reopen(t, 1) != 0)
		return;
	EXPECT_STR(working_counts(t), "3 2 1 2 0");
	t->s->ops->close(t->s);
	t->s = NULL;
	char buf[64];
	/* The refused inserts' buckets left no row behind, not even of 0. */
	EXPECT_INT(raw_query(t, "SELECT count(*) || ' ' || sum(n) FROM a2m_counts", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "2 3");
}

/*
** One transaction inserting into more (tier, session) buckets than the
** SQLite engine keeps pending (64: it writes them out and goes on): every
** count is right inside it, after its commit, and a rollback of a second
** such transaction leaves them as the commit did.
*/
static void test_counts_right_over_many_buckets_in_one_transaction(tctx *t)
{
	char id[32], session[32];
	for (int round = 0; round < 2; round++) {
		EXPECT_OK(OPS->begin(t->s));
		for (int i = 0; i < 300; i++) {
			snprintf(id, sizeof id, "r%d-%d", round, i);
			snprintf(session, sizeof session, "s%d", i % 150);
			EXPECT_OK(put_in(t, id, i, i % 3 ? "working" : "episodic", session));
		}
		EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), 200 * (round + 1));
		EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1, .session = "s7"}),
			   2 * (round + 1));
		EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic", .by_session = 1,
						    .session = "s3"}), 2 * (round + 1));
		if (round == 0)
			EXPECT_OK(OPS->commit(t->s));
		else
			OPS->rollback(t->s);
	}
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), 200);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic"}), 100);
	EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1, .session = "s149"}), 2);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working", .by_session = 1,
					    .session = "s3"}), 0);
	if (strcmp(t->engine, "sqlite") == 0 && reopen(t, 1) == 0)
		EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic", .by_session = 1,
						    .session = "s3"}), 2);
}

/* ---- transactions ------------------------------------------------------ */

static void test_commit_keeps_writes(tctx *t)
{
	a2m_record a = make("a", 1), *got;
	int removed;
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	a.content = "updated";
	EXPECT_OK(OPS->update(t->s, &a));
	EXPECT_OK(OPS->remove(t->s, "b", &removed));
	EXPECT_OK(OPS->commit(t->s));
	OPS->rollback(t->s);                    /* nothing open: changes nothing */
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_STR(got ? got->content : NULL, "updated");
	a2m_record_free(got);
	EXPECT_OK(OPS->get(t->s, "b", &got));
	EXPECT(got == NULL);
	EXPECT_INT(count_of(t, &all_q), 1);
}

static void test_rollback_discards_insert(tctx *t)
{
	a2m_record a = make("a", 2), again = make("a", 3), *got;
	a.owner = "o";
	a.key = "k";
	EXPECT_OK(put(t, "x", 1, NULL, NULL));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->get(t->s, "a", &got));   /* visible inside the transaction */
	EXPECT(got != NULL);
	a2m_record_free(got);
	OPS->rollback(t->s);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT(got == NULL);
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k", &got));
	EXPECT(got == NULL);
	EXPECT_STR(scan_ids(t, &all_q), "x");
	EXPECT_INT(count_of(t, &all_q), 1);
	/* The state is as before begin(): the id, key and seq are all free. */
	again.owner = "o";
	again.key = "k";
	EXPECT_OK(OPS->insert(t->s, &again));
	EXPECT_INT(again.seq, 2);
}

static void test_rollback_restores_updated_record(tctx *t)
{
	a2m_record a = full_record("a"), *got;
	EXPECT_OK(put(t, "first", 1, NULL, NULL));
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(put(t, "last", 1753999999999LL, NULL, NULL));
	EXPECT_OK(OPS->begin(t->s));
	a2m_record changed = make("a", 0);
	changed.owner = "bob";
	changed.key = "other";
	EXPECT_OK(OPS->update(t->s, &changed));
	EXPECT_STR(scan_ids(t, &all_q), "a,first,last");
	OPS->rollback(t->s);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_SAME(got, &a);
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, "alice", "prefs/theme", &got));
	EXPECT_STR(got ? got->id : NULL, "a");
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, "bob", "other", &got));
	EXPECT(got == NULL);
	EXPECT_STR(scan_ids(t, &all_q), "first,a,last");
}

static void test_rollback_restores_removed_record(tctx *t)
{
	a2m_record *got;
	int removed;
	EXPECT_OK(put(t, "r1", 1, NULL, NULL));
	EXPECT_OK(put(t, "r2", 2, NULL, NULL));
	EXPECT_OK(put(t, "r3", 3, "o", "k"));
	EXPECT_OK(put(t, "r4", 4, NULL, NULL));
	EXPECT_OK(put(t, "r5", 5, NULL, NULL));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->remove(t->s, "r3", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_OK(OPS->remove(t->s, "r1", &removed));
	EXPECT_STR(scan_ids(t, &all_q), "r2,r4,r5");
	OPS->rollback(t->s);
	EXPECT_STR(scan_ids(t, &all_q), "r1,r2,r3,r4,r5");
	EXPECT_STR(scan_ids(t, &(a2m_query){.descending = 1}), "r5,r4,r3,r2,r1");
	EXPECT_OK(OPS->get(t->s, "r3", &got));
	EXPECT(got != NULL);
	EXPECT_INT(got->seq, 3);
	EXPECT_INT(got->created_at, 3);
	a2m_record_free(got);
	EXPECT_OK(OPS->get_by_key(t->s, "o", "k", &got));
	EXPECT_STR(got ? got->id : NULL, "r3");
	a2m_record_free(got);
	EXPECT_INT(count_of(t, &all_q), 5);
}

static void test_rollback_restores_exact_state(tctx *t)
{
	char id[24], key[24];
	int removed;
	for (int i = 1; i <= 20; i++) {
		snprintf(id, sizeof id, "r%d", i);
		a2m_record r = i == 7 ? full_record(id) : make(id, 1000 + i / 3);
		snprintf(key, sizeof key, "k%d", i);
		r.key = i % 2 ? key : NULL;
		r.owner = i % 4 == 1 ? "o" : NULL;
		EXPECT_OK(OPS->insert(t->s, &r));
	}
	char *before = dump(t);

	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "n1", 5, NULL, "new"));
	a2m_record r2 = make("r2", 999999);          /* moves in scan order */
	r2.key = "moved";
	EXPECT_OK(OPS->update(t->s, &r2));
	EXPECT_OK(OPS->remove(t->s, "r3", &removed));     /* r3 held (NULL, k3) */
	EXPECT_OK(put(t, "n2", 6, NULL, NULL));
	EXPECT_OK(OPS->remove(t->s, "n2", &removed));
	a2m_record r4 = make("r4", 1);
	EXPECT_OK(OPS->update(t->s, &r4));
	EXPECT_OK(OPS->remove(t->s, "r4", &removed));
	a2m_record n1 = make("n1", 7);
	n1.key = "k3";                              /* the key r3 freed */
	EXPECT_OK(OPS->update(t->s, &n1));
	EXPECT_OK(OPS->remove(t->s, "r5", &removed));
	a2m_record r5 = make("r5", 2);               /* the same id, reborn */
	r5.content = "impostor";
	EXPECT_OK(OPS->insert(t->s, &r5));
	a2m_record r7 = full_record("r7");
	r7.embedding = NULL;
	r7.dims = 0;
	r7.created_at = 1000;
	EXPECT_OK(OPS->update(t->s, &r7));
	OPS->rollback(t->s);

	char *after = dump(t);
	int same = strcmp(before, after) == 0;
	if (!same)
		failf(__LINE__, "state differs after rollback:\n--- before\n%.400s\n--- after\n%.400s",
		      before, after);
	free(before);
	free(after);
	if (!same)
		return;
	a2m_record z = make("z", 1);
	EXPECT_OK(OPS->insert(t->s, &z));
	EXPECT_INT(z.seq, 21);
}

static void test_begin_inside_transaction_refused(tctx *t)
{
	a2m_record *got;
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT(OPS->begin(t->s) < 0);
	EXPECT(t->s->errmsg[0] != '\0');
	EXPECT_OK(put(t, "b", 2, NULL, NULL));   /* the first transaction goes on */
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT(got != NULL);
	a2m_record_free(got);
	EXPECT_INT(count_of(t, &all_q), 2);
}

static void test_commit_without_transaction_fails(tctx *t)
{
	EXPECT(OPS->commit(t->s) < 0);
	EXPECT(t->s->errmsg[0] != '\0');
	/* And the store is still usable. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_INT(count_of(t, &all_q), 1);
}

static void test_autocommit_writes_survive_later_rollback(tctx *t)
{
	a2m_record a = make("a", 1), *got;
	int removed;
	EXPECT_OK(OPS->insert(t->s, &a));
	a.content = "v2";
	EXPECT_OK(OPS->update(t->s, &a));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	EXPECT_OK(OPS->remove(t->s, "b", &removed));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "c", 3, NULL, NULL));
	OPS->rollback(t->s);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_STR(got ? got->content : NULL, "v2");
	a2m_record_free(got);
	EXPECT_STR(scan_ids(t, &all_q), "a");
}

static void test_refused_insert_inside_transaction_keeps_it_open(tctx *t)
{
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_INT(put(t, "a", 2, NULL, NULL), A2M_INVALID_PARAMS);
	EXPECT_OK(put(t, "b", 3, NULL, NULL));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(scan_ids(t, &all_q), "a,b");
}

/* ---- many inserts in one transaction ------------------------------------ */

/*
** SQLite holds a transaction's inserts and writes them several rows per
** statement (sqlite_held.c); every rule below must read the same as if
** each insert were written at once. HELD_N is more than one statement's
** rows and not a multiple of them.
*/
enum { HELD_N = 47 };

/*
** Inserts HELD_N records <prefix>00..46, created out of order, every third
** one keyed "<prefix>-k<i>" of owner "o", in session s<i % 3>; each copy of a record
** is the insert's own (freed right after, as a caller may). Returns 0 or
** the first failure's code.
*/
static int put_many(tctx *t, const char *prefix, int64_t seqs[HELD_N])
{
	for (int i = 0; i < HELD_N; i++) {
		char id[16], key[16], session[8], content[32];
		snprintf(id, sizeof id, "%s%02d", prefix, i);
		snprintf(key, sizeof key, "%s-k%02d", prefix, i);
		snprintf(session, sizeof session, "s%d", i % 3);
		snprintf(content, sizeof content, "text of %s", id);
		a2m_record r = make(id, 1000 + (i * 7) % HELD_N);
		r.content = content;
		r.owner = i % 3 == 0 ? "o" : NULL;
		r.key = i % 3 == 0 ? key : NULL;
		r.session = session;
		r.tier = "working";
		a2m_record *copy = a2m_record_dup(&r);
		if (!copy)
			return A2M_INTERNAL_ERROR;
		int rc = t->s->ops->insert(t->s, copy);
		if (seqs)
			seqs[i] = copy->seq;
		a2m_record_free(copy);
		if (rc)
			return rc;
	}
	return 0;
}

/* begin(), then put_many(). */
static int begin_many(tctx *t, const char *prefix, int64_t seqs[HELD_N])
{
	int rc = t->s->ops->begin(t->s);
	return rc ? rc : put_many(t, prefix, seqs);
}

/* The ids put_many's records scan in: by created_at, then seq. */
static const char *put_many_order(const char *prefix)
{
	static char buf[HELD_N * 8];
	size_t used = 0;
	buf[0] = '\0';
	for (int at = 0; at < HELD_N; at++)
		for (int i = 0; i < HELD_N; i++)
			if ((i * 7) % HELD_N == at)
				used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s%02d",
							 used ? "," : "", prefix, i);
	return buf;
}

static int count_visit(const a2m_record *r, void *ctx);

/* Every record put_many wrote reads back by id, key and seq, and counts right. */
static void check_many(tctx *t, const char *prefix, const int64_t seqs[HELD_N])
{
	for (int i = 0; i < HELD_N; i++) {
		char id[16], key[16], content[32];
		a2m_record *got = NULL;
		snprintf(id, sizeof id, "%s%02d", prefix, i);
		snprintf(content, sizeof content, "text of %s", id);
		EXPECT_OK(OPS->get(t->s, id, &got));
		EXPECT_STR(got ? got->content : NULL, content);
		EXPECT_INT(got ? got->seq : 0, seqs[i]);
		a2m_record_free(got);
		if (i % 3)
			continue;
		snprintf(key, sizeof key, "%s-k%02d", prefix, i);
		got = NULL;
		EXPECT_OK(OPS->get_by_key(t->s, "o", key, &got));
		EXPECT_STR(got ? got->id : NULL, id);
		a2m_record_free(got);
	}
	int visited = 0;
	EXPECT_OK(OPS->visit_seqs(t->s, seqs, HELD_N, count_visit, &visited));
	EXPECT_INT(visited, HELD_N);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), HELD_N);
	EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1, .session = "s1"}), (HELD_N + 1) / 3);
	EXPECT_INT(count_of(t, &(a2m_query){.by_owner = 1, .owner = "o"}), (HELD_N + 2) / 3);
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "working"}), put_many_order(prefix));
}

static void test_transaction_reads_its_many_inserts_before_and_after_commit(tctx *t)
{
	int64_t seqs[HELD_N];
	EXPECT_OK(begin_many(t, "h", seqs));
	for (int i = 1; i < HELD_N; i++)
		EXPECT(seqs[i] == seqs[i - 1] + 1);
	check_many(t, "h", seqs);
	if (failure[0])
		return;
	EXPECT_OK(OPS->commit(t->s));
	check_many(t, "h", seqs);
	if (failure[0] || strcmp(t->engine, "sqlite") != 0 || reopen(t, 1) != 0)
		return;
	check_many(t, "h", seqs);
}

/* Each read op inside the transaction sees the insert just made. */
static void test_each_read_sees_the_insert_before_it(tctx *t)
{
	a2m_record *got = NULL;
	int visited = 0;
	EXPECT_OK(begin_many(t, "h", NULL));
	a2m_record a = make("a", 1), b = make("b", 2), c = make("c", 3), d = make("d", 4);
	a.owner = "o";
	a.key = "ka";
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->get_by_key(t->s, "o", "ka", &got));
	EXPECT_STR(got ? got->id : NULL, "a");
	a2m_record_free(got);
	EXPECT_OK(OPS->insert(t->s, &b));
	EXPECT_OK(OPS->visit_seqs(t->s, &b.seq, 1, count_visit, &visited));
	EXPECT_INT(visited, 1);
	c.key = "kc";
	EXPECT_OK(OPS->insert(t->s, &c));
	EXPECT_INT(count_of(t, &(a2m_query){.key_prefix = "kc"}), 1);
	EXPECT_OK(OPS->insert(t->s, &d));
	EXPECT_OK(OPS->touch(t->s, d.seq, 5, 99));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(OPS->get(t->s, "d", &got));
	EXPECT_INT(got ? got->access_count : -1, 5);
	EXPECT_INT(got ? got->accessed_at : -1, 99);
	a2m_record_free(got);
	EXPECT_INT(count_of(t, &all_q), HELD_N + 4);
}

/*
** Every field survives the insert's copy, written with a statement's other
** rows; so does a long content, whose copy is not kept once written.
*/
static void test_many_inserts_keep_every_field(tctx *t)
{
	static float gen[3] = {0.5f, -1.25f, 3.0f};
	enum { BIG = 3 << 20 };
	a2m_record full = full_record("full"), big = make("big", 7);
	full.gen_embedding = gen;
	full.gen_dims = 3;
	big.content = malloc(BIG + 1);
	EXPECT(big.content);
	memset(big.content, 'x', BIG);
	big.content[BIG] = '\0';
	a2m_record *got = NULL, *got_big = NULL;
	int rc = OPS->begin(t->s);
	if (!rc)
		rc = put_many(t, "h", NULL);
	if (!rc)
		rc = OPS->insert(t->s, &full);
	if (!rc)
		rc = OPS->insert(t->s, &big);
	if (!rc)
		rc = put_many(t, "j", NULL);
	if (!rc)
		rc = OPS->commit(t->s);
	if (!rc)
		rc = OPS->get(t->s, "big", &got_big);
	int big_same = got_big && strcmp(got_big->content, big.content) == 0;
	free(big.content);
	a2m_record_free(got_big);
	EXPECT_OK(rc);
	EXPECT(big_same);
	EXPECT_OK(OPS->get(t->s, "full", &got));
	EXPECT_SAME(got, &full);
	a2m_record_free(got);
}

/*
** One transaction of HELD_N records m00..m46 (m00, m05, ... keyed "k<i>" of
** owner "o"), with extra inserted after m25. Stops at the first failure,
** of an insert or (SQLite, which may write the rows later) of commit,
** rolls back and returns its code; 0 when it all committed.
*/
static int put_many_with(tctx *t, const a2m_record *extra)
{
	int rc = t->s->ops->begin(t->s);
	for (int i = 0; i < HELD_N && !rc; i++) {
		char id[16], key[16];
		snprintf(id, sizeof id, "m%02d", i);
		snprintf(key, sizeof key, "k%02d", i);
		rc = put(t, id, 2000 + i, i % 5 ? NULL : "o", i % 5 ? NULL : key);
		if (!rc && i == 25) {
			a2m_record r = *extra;  /* insert assigns its seq */
			rc = t->s->ops->insert(t->s, &r);
		}
	}
	if (!rc)
		rc = t->s->ops->commit(t->s);
	if (rc)
		t->s->ops->rollback(t->s);
	return rc;
}

/*
** A taken id or (owner, key) among a transaction's many inserts refuses it
** with A2M_INVALID_PARAMS (SQLite's message naming the constraint), whether
** the record it meets was committed before or inserted earlier in the same
** transaction; after the rollback the store is exactly as before.
*/
static void test_many_inserts_with_a_taken_id_or_key_refused_whole(tctx *t)
{
	EXPECT_OK(put(t, "old", 1, "o", "taken"));
	char *before = dump(t);
	a2m_record id_old = make("old", 5), id_new = make("m03", 5);
	a2m_record key_old = make("x", 5), key_new = make("y", 5);
	key_old.owner = key_new.owner = "o";
	key_old.key = "taken";
	key_new.key = "k10";
	const struct {
		const a2m_record *rec;
		const char       *says;
	} cases[] = {
		{&id_old, "UNIQUE constraint failed: records.id"},
		{&id_new, "UNIQUE constraint failed: records.id"},
		{&key_old, "UNIQUE constraint failed: index 'records_owner_key'"},
		{&key_new, "UNIQUE constraint failed: index 'records_owner_key'"},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0] && !failure[0]; k++) {
		EXPECT_INT(put_many_with(t, cases[k].rec), A2M_INVALID_PARAMS);
		if (strcmp(t->engine, "sqlite") == 0 && !strstr(t->s->errmsg, cases[k].says))
			failf(__LINE__, "case %zu: errmsg \"%s\" does not say \"%s\"", k,
			      t->s->errmsg, cases[k].says);
		EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1}), 1);  /* a2m_counts */
		char *after = dump(t);
		if (!failure[0] && strcmp(after, before) != 0)
			failf(__LINE__, "case %zu: the store changed:\n%s\nwas\n%s", k, after, before);
		free(after);
	}
	free(before);
	/* Nothing of the refused transactions is left to collide with. */
	EXPECT_OK(put_many_with(t, &(a2m_record){.id = "z", .content = "c"}));
	EXPECT_INT(count_of(t, &all_q), HELD_N + 2);
}

/*
** SQLite: once a held row is refused, the transaction can only be rolled
** back. Every later op and the commit fail alike, so the rows its statement
** wrote before the refused one never land, and nothing changes.
*/
static void test_sqlite_commit_after_a_refused_row_fails_and_keeps_nothing(tctx *t)
{
	a2m_record *got = NULL;
	EXPECT_OK(put(t, "old", 1, NULL, NULL));
	char *before = dump(t);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "n1", 2, NULL, NULL));
	EXPECT_OK(put(t, "n2", 3, NULL, NULL));
	EXPECT_OK(put(t, "old", 4, NULL, NULL));  /* held: refused by the next op */
	EXPECT_INT(OPS->get(t->s, "n1", &got), A2M_INVALID_PARAMS);
	EXPECT(strstr(t->s->errmsg, "insert: UNIQUE constraint failed: records.id"));
	EXPECT_INT(OPS->get(t->s, "n2", &got), A2M_INVALID_PARAMS);
	EXPECT(!got);
	EXPECT_INT(OPS->commit(t->s), A2M_INVALID_PARAMS);
	EXPECT(same_as_dump(t, before));
	EXPECT_OK(put(t, "n1", 5, NULL, NULL));  /* a fresh write goes through */
	EXPECT_INT(count_of(t, &all_q), 2);
}

/* A rollback takes back every insert of the transaction, written or not. */
static void test_rollback_discards_many_inserts(tctx *t)
{
	int64_t seqs[HELD_N];
	EXPECT_OK(put(t, "old", 1, NULL, NULL));
	char *before = dump(t);
	EXPECT_OK(begin_many(t, "h", NULL));
	OPS->rollback(t->s);
	EXPECT(same_as_dump(t, before));
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), 0);
	/* Again, committed: the same ids and keys are free. */
	EXPECT_OK(begin_many(t, "h", seqs));
	EXPECT_OK(OPS->commit(t->s));
	check_many(t, "h", seqs);
}

/*
** A get inside the transaction finds each record inserted before it,
** whether its row was written or is still held, and not one never
** inserted (SQLite writes the held rows only for a get of one of them).
*/
static void test_get_of_many_inserts_in_their_transaction(tctx *t)
{
	/* HELD_N rows: the first ones written a statement at a time, the last held. */
	static const char *const ids[] = {"g00", "g01", "g19", "g20", "g39", "g46", "g40"};
	a2m_record *got = NULL;
	EXPECT_OK(begin_many(t, "g", NULL));
	EXPECT_OK(OPS->get(t->s, "g47", &got));
	EXPECT(!got);
	for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
		char want[32];
		snprintf(want, sizeof want, "text of %s", ids[i]);
		EXPECT_OK(OPS->get(t->s, ids[i], &got));
		EXPECT_STR(got ? got->content : NULL, want);
		a2m_record_free(got);
		got = NULL;
	}
	EXPECT_OK(OPS->get(t->s, "g47", &got));
	EXPECT(!got);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), HELD_N);
}

/* postgres_held.c (test hook): flushes that wrote something, so far. */
long a2m_pg_held_flushes_for_tests(void);

/*
** PostgreSQL: a get in a transaction writes the held inserts only when one
** of them has its id. A remember of records with ids asks for each id
** before its insert (stack/write.c); a flush on each of those gets wrote
** every record by an INSERT of its own.
*/
static void test_pg_get_of_an_id_not_held_writes_nothing(tctx *t)
{
	a2m_record *got = NULL;
	EXPECT_OK(OPS->begin(t->s));
	long before = a2m_pg_held_flushes_for_tests();
	for (int i = 0; i < 10; i++) {
		char id[16];
		snprintf(id, sizeof id, "q%02d", i);
		EXPECT_OK(OPS->get(t->s, id, &got));  /* as the stack asks, before the insert */
		EXPECT(!got);
		EXPECT_OK(put(t, id, 1000 + i, NULL, NULL));
	}
	EXPECT_INT(a2m_pg_held_flushes_for_tests() - before, 0);
	/* A held id is written first, and found. */
	EXPECT_OK(OPS->get(t->s, "q07", &got));
	EXPECT(got != NULL);
	a2m_record_free(got);
	got = NULL;
	EXPECT_INT(a2m_pg_held_flushes_for_tests() - before, 1);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_INT(count_of(t, &all_q), 10);
}

/* An update and a remove of records inserted earlier in the transaction. */
static void test_update_and_remove_of_many_inserts_in_their_transaction(tctx *t)
{
	a2m_record *got = NULL;
	int removed = 0;
	EXPECT_OK(begin_many(t, "h", NULL));
	a2m_record last = make("h46", 1000);
	last.content = "rewritten";
	last.tier = "episodic";
	last.session = "s1";
	EXPECT_OK(OPS->update(t->s, &last));
	EXPECT_OK(OPS->remove(t->s, "h45", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_OK(put_many(t, "j", NULL));
	EXPECT_OK(OPS->remove(t->s, "j46", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_OK(OPS->get(t->s, "h46", &got));
	EXPECT_STR(got ? got->content : NULL, "rewritten");
	a2m_record_free(got);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(OPS->get(t->s, "h46", &got));
	EXPECT_STR(got ? got->tier : NULL, "episodic");
	a2m_record_free(got);
	EXPECT_OK(OPS->get(t->s, "h45", &got));
	EXPECT(!got);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), 2 * HELD_N - 3);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic", .by_session = 1,
					    .session = "s1"}), 1);
}

/* ---- many removals ----------------------------------------------------- */

static void test_many_removes_keep_order_and_lookups(tctx *t)
{
	enum { N = 1000 };
	char id[24], key[24];
	int removed;
	a2m_record *got;
	sbuf want = {0};

	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof id, "r%04d", i);
		snprintf(key, sizeof key, "k%04d", i);
		EXPECT_OK(put(t, id, i / 3, "o", key));
	}
	/* Every even one, then most of what is left from the front. */
	for (int i = 0; i < N; i += 2) {
		snprintf(id, sizeof id, "r%04d", i);
		EXPECT_OK(OPS->remove(t->s, id, &removed));
		EXPECT_INT(removed, 1);
	}
	EXPECT_INT(count_of(t, &all_q), N / 2);
	for (int i = 1; i < 801; i += 2) {
		snprintf(id, sizeof id, "r%04d", i);
		EXPECT_OK(OPS->remove(t->s, id, &removed));
		EXPECT_INT(removed, 1);
	}
	/* And the newest, from the tail. */
	EXPECT_OK(OPS->remove(t->s, "r0999", &removed));
	EXPECT_OK(OPS->remove(t->s, "r0997", &removed));
	EXPECT_INT(count_of(t, &all_q), 98);

	for (int i = 0; i < N; i++) {
		int alive = i % 2 == 1 && i > 800 && i < 997;
		snprintf(id, sizeof id, "r%04d", i);
		snprintf(key, sizeof key, "k%04d", i);
		EXPECT_OK(OPS->get(t->s, id, &got));
		EXPECT_INT(got != NULL, alive);
		a2m_record_free(got);
		EXPECT_OK(OPS->get_by_key(t->s, "o", key, &got));
		EXPECT_INT(got != NULL, alive);
		a2m_record_free(got);
	}
	EXPECT_OK(put(t, "late", 2000, NULL, NULL));
	EXPECT_OK(put(t, "early", 0, NULL, NULL));
	sb_add(&want, "early");
	for (int i = 801; i < 997; i += 2)
		sb_add(&want, ",r%04d", i);
	sb_add(&want, ",late");
	const char *got_ids = scan_ids(t, &all_q);
	int same = strcmp(got_ids, want.p) == 0;
	free(want.p);
	EXPECT(same);
	EXPECT_STR(scan_ids(t, &(a2m_query){.key_prefix = "k09", .descending = 1}),
		   "r0995,r0993,r0991,r0989,r0987,r0985,r0983,r0981,r0979,r0977,"
		   "r0975,r0973,r0971,r0969,r0967,r0965,r0963,r0961,r0959,r0957,"
		   "r0955,r0953,r0951,r0949,r0947,r0945,r0943,r0941,r0939,r0937,"
		   "r0935,r0933,r0931,r0929,r0927,r0925,r0923,r0921,r0919,r0917,"
		   "r0915,r0913,r0911,r0909,r0907,r0905,r0903,r0901");
	/* Removing everything leaves an empty store that still takes inserts. */
	EXPECT_OK(OPS->remove(t->s, "late", &removed));
	EXPECT_OK(OPS->remove(t->s, "early", &removed));
	for (int i = 801; i < 997; i += 2) {
		snprintf(id, sizeof id, "r%04d", i);
		EXPECT_OK(OPS->remove(t->s, id, &removed));
		EXPECT_INT(removed, 1);
	}
	EXPECT_STR(scan_ids(t, &all_q), "");
	EXPECT_INT(count_of(t, &all_q), 0);
	a2m_record last = make("last", 5);
	EXPECT_OK(OPS->insert(t->s, &last));
	EXPECT_INT(last.seq, N + 3);
	EXPECT_STR(scan_ids(t, &all_q), "last");
}

/*
** Removals in a random order, some rolled back, with every record looked
** up by id and by seq after each round: the memory engine's tables by id
** and seq are probed, and a removal moves later members of a cluster back.
*/
static void test_random_removes_keep_lookups_by_id_and_seq(tctx *t)
{
	enum { N = 3000, ROUND = 250 };
	static int64_t seqs[N];
	static int alive[N], order[N];
	char id[16];
	uint64_t x = 88172645463325252ULL;
	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof id, "q%d", i);
		a2m_record r = make(id, i);
		EXPECT_OK(OPS->insert(t->s, &r));
		seqs[i] = r.seq;
		alive[i] = 1;
		order[i] = i;
	}
	for (int i = N - 1; i > 0; i--) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int j = (int)(x % (uint64_t)(i + 1)), k = order[i];
		order[i] = order[j];
		order[j] = k;
	}
	for (int at = 0, round = 0; at < N; at += ROUND, round++) {
		int undo = round % 3 == 1, removed;
		if (undo)
			EXPECT_OK(OPS->begin(t->s));
		for (int i = at; i < at + ROUND && i < N; i++) {
			snprintf(id, sizeof id, "q%d", order[i]);
			EXPECT_OK(OPS->remove(t->s, id, &removed));
			EXPECT_INT(removed, 1);
			alive[order[i]] = undo;
		}
		if (undo)
			OPS->rollback(t->s);
		int wrong = 0;
		for (int i = 0; i < N; i++) {
			a2m_record *got = NULL;
			int visited = 0;
			snprintf(id, sizeof id, "q%d", i);
			EXPECT_OK(OPS->get(t->s, id, &got));
			EXPECT_OK(OPS->visit_seqs(t->s, &seqs[i], 1, count_visit, &visited));
			wrong += (got != NULL) != alive[i] || visited != alive[i] ||
				 (got && got->seq != seqs[i]);
			a2m_record_free(got);
		}
		EXPECT_INT(wrong, 0);
	}
}

static void test_rollback_after_many_removes_restores_all(tctx *t)
{
	enum { N = 600 };
	char id[24], key[24];
	int removed;
	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof id, "r%03d", i);
		snprintf(key, sizeof key, "k%03d", i);
		EXPECT_OK(put(t, id, 1000 - i / 2, i % 3 ? "o" : NULL, key));
	}
	char *before = dump(t);
	EXPECT_OK(OPS->begin(t->s));
	for (int i = 0; i < N; i++) {
		if (i % 11 == 0)
			continue;
		snprintf(id, sizeof id, "r%03d", i);
		EXPECT_OK(OPS->remove(t->s, id, &removed));
	}
	EXPECT_OK(put(t, "n1", 1, NULL, "k001"));
	EXPECT_OK(put(t, "n2", 5000, NULL, NULL));
	EXPECT_INT(count_of(t, &all_q), 55 + 2);
	OPS->rollback(t->s);
	EXPECT(same_as_dump(t, before));
	EXPECT_INT(count_of(t, &all_q), N);
}

typedef struct remover {
	a2m_store *s;
	int        visited;
	int        failed;
} remover;

static int remove_visited(const a2m_record *r, void *ctx)
{
	remover *m = ctx;
	int removed = 0;
	m->visited++;
	if (m->s->ops->remove(m->s, r->id, &removed) != 0 || !removed)
		m->failed++;
	return 0;
}

static void test_remove_current_record_inside_visit(tctx *t)
{
	remover m = {t->s, 0, 0};
	char id[16];
	for (int i = 0; i < 10; i++) {
		snprintf(id, sizeof id, "r%d", i);
		EXPECT_OK(put(t, id, i, NULL, NULL));
	}
	EXPECT_OK(OPS->scan(t->s, &all_q, remove_visited, &m));
	EXPECT_INT(m.visited, 10);
	EXPECT_INT(m.failed, 0);
	EXPECT_INT(count_of(t, &all_q), 0);

	for (int i = 0; i < 10; i++) {
		snprintf(id, sizeof id, "d%d", i);
		EXPECT_OK(put(t, id, i, NULL, NULL));
	}
	m.visited = 0;
	EXPECT_OK(OPS->scan(t->s, &(a2m_query){.descending = 1}, remove_visited, &m));
	EXPECT_INT(m.visited, 10);
	EXPECT_INT(m.failed, 0);
	EXPECT_STR(scan_ids(t, &all_q), "");
}

/* ---- memory only: writes during a scan ---------------------------------- */

/*
** SQLite leaves it undefined whether a scan sees rows changed under it; the
** memory engine promises each record at most once, so that is checked here.
*/
typedef struct mover {
	a2m_store *s;
	int64_t    shift;
	sbuf       ids;
	int        n;
	int        failed;
} mover;

static int move_visited(const a2m_record *r, void *ctx)
{
	mover *m = ctx;
	a2m_record *copy = a2m_record_dup(r);
	sb_add(&m->ids, "%s%s", m->n++ ? "," : "", r->id);
	if (!copy)
		return -1;
	copy->created_at += m->shift;
	if (m->s->ops->update(m->s, copy) != 0)
		m->failed++;
	a2m_record_free(copy);
	if (m->shift < 0 && m->n == 1) {        /* an insert mid-scan is not visited */
		a2m_record fresh = make("new", 0);
		if (m->s->ops->insert(m->s, &fresh) != 0)
			m->failed++;
	}
	return 0;
}

static void test_scan_visits_each_record_once_while_callback_writes(tctx *t)
{
	mover m = {t->s, -100, {0}, 0, 0};
	char id[16];
	int removed, ok;
	for (int i = 0; i < 10; i++) {
		snprintf(id, sizeof id, "r%d", i);
		EXPECT_OK(put(t, id, i, NULL, NULL));
	}
	EXPECT_OK(OPS->remove(t->s, "r8", &removed));   /* a tombstone below the last */
	EXPECT_OK(OPS->scan(t->s, &(a2m_query){.descending = 1}, move_visited, &m));
	ok = m.ids.p && strcmp(m.ids.p, "r9,r7,r6,r5,r4,r3,r2,r1,r0") == 0 && m.failed == 0;
	if (!ok)
		failf(__LINE__, "descending saw %s (%d failed)", m.ids.p ? m.ids.p : "", m.failed);
	free(m.ids.p);
	if (!ok)
		return;
	EXPECT_STR(scan_ids(t, &all_q), "r0,r1,r2,r3,r4,r5,r6,r7,r9,new");

	mover up = {t->s, 1000, {0}, 0, 0};
	EXPECT_OK(OPS->remove(t->s, "r2", &removed));
	EXPECT_OK(OPS->scan(t->s, &all_q, move_visited, &up));
	ok = up.ids.p && strcmp(up.ids.p, "r0,r1,r3,r4,r5,r6,r7,r9,new") == 0 && up.failed == 0;
	if (!ok)
		failf(__LINE__, "ascending saw %s (%d failed)", up.ids.p ? up.ids.p : "", up.failed);
	free(up.ids.p);
	if (!ok)
		return;
	EXPECT_STR(scan_ids(t, &all_q), "r0,r1,r3,r4,r5,r6,r7,r9,new");
	EXPECT_INT(count_of(t, &all_q), 9);
}

/* ---- SQLite only: the file ---------------------------------------------- */

static void test_reopen_finds_committed_records(tctx *t)
{
	a2m_record a = full_record("a"), *got;
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));   /* autocommit */
	if (reopen(t, 1) != 0)
		return;
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_SAME(got, &a);
	a2m_record_free(got);
	EXPECT_STR(scan_ids(t, &all_q), "b,a");
	a2m_record c = make("c", 3);
	EXPECT_OK(OPS->insert(t->s, &c));
	EXPECT_INT(c.seq, 3);
	/* NORMAL durability opens the same file. */
	if (reopen(t, 0) != 0)
		return;
	EXPECT_INT(count_of(t, &all_q), 3);
}

static void test_uncommitted_transaction_lost_on_reopen(tctx *t)
{
	a2m_record a = make("a", 1), *got;
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	a.content = "uncommitted";
	EXPECT_OK(OPS->update(t->s, &a));
	if (reopen(t, 1) != 0)                  /* close() with the transaction open */
		return;
	EXPECT_OK(OPS->get(t->s, "b", &got));
	EXPECT(got == NULL);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_STR(got ? got->content : NULL, "content");
	a2m_record_free(got);
	EXPECT_INT(count_of(t, &all_q), 1);
}

/* Runs sql on the file behind t's (closed) store. */
static int raw_exec(tctx *t, const char *sql)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open(t->path, &db);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

/* The first column of sql's first row as text into buf, or "" */
static int raw_query(tctx *t, const char *sql, char *buf, size_t len)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_open(t->path, &db);
	buf[0] = '\0';
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

/* The versions t's file says it is at, joined by ',': "13" once migrated. */
static const char *schema_versions(tctx *t)
{
	static char buf[64];
	if (raw_query(t, "SELECT group_concat(version) FROM a2m_schema", buf,
		      sizeof buf) != SQLITE_OK)
		snprintf(buf, sizeof buf, "<unreadable>");
	return buf;
}

static void test_refuses_newer_schema_version(tctx *t)
{
	char err[256] = "";
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(raw_exec(t, "UPDATE a2m_schema SET version = 1000"), SQLITE_OK);
	EXPECT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(strstr(err, "schema version 1000") != NULL);
}

static void test_file_is_wal_at_schema_version_13(tctx *t)
{
	char buf[64];
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(raw_query(t, "PRAGMA journal_mode", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "wal");
	EXPECT_STR(schema_versions(t), "13");
	EXPECT_INT(raw_query(t, "SELECT group_concat(name) FROM pragma_table_info('a2m_meta')",
			     buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "name,value");
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM records", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "1");
	/* Step 8: seqs and counts of inserts are the engine's, not SQLite's. */
	EXPECT_INT(raw_query(t, "SELECT instr(upper(sql), 'AUTOINCREMENT') FROM sqlite_master"
			     " WHERE name = 'records'", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	EXPECT_INT(raw_query(t, "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master"
			     " WHERE type = 'trigger' ORDER BY name)", buf, sizeof buf), SQLITE_OK);
	/* Step 9: a record's history goes with it, whoever removes it. */
	EXPECT_STR(buf, "a2m_counts_delete,a2m_counts_update,a2m_history_forget");
	/* Step 10: the counts' mark; the clean close wrote the insert's count out. */
	EXPECT_INT(raw_query(t, "SELECT value FROM a2m_meta WHERE name = 'counted'", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "1");  /* the clean close wrote it out */
	/* Step 11: the update trigger leaves a tier move (tier and salience) to the engine. */
	EXPECT_INT(raw_query(t, "SELECT instr(sql, 'AFTER UPDATE OF session ON records')"
			     " > 0 FROM sqlite_master WHERE name = 'a2m_counts_update'", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "1");
	/* Step 12: records_tier keyed by the tier's key, an expression of the tier. */
	EXPECT_STR(tier_index_columns(t), "<expr>,created_at,seq");
	/* The seq mark, as step 8 seeded it: an insert does not move it. */
	EXPECT_INT(raw_query(t, "SELECT value FROM a2m_meta WHERE name = 'seq'", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	EXPECT_INT(raw_query(t, "SELECT \"unique\" FROM pragma_index_list('records')"
			     " WHERE name = 'records_owner_key'", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "1");
	/* records_grp holds only records with a group, and a group query uses it. */
	EXPECT_INT(raw_query(t, "SELECT partial FROM pragma_index_list('records')"
			     " WHERE name = 'records_grp'", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "1");
	/* INDEXED BY fails ("no query solution") when the index cannot serve. */
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM records INDEXED BY records_grp"
			     " WHERE grp = 'g'", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	/* records_unembedded is made only for a server with an embedder, and
	** kept when the file is opened again without one. */
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM sqlite_master"
			     " WHERE name = 'records_unembedded'", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	char err0[256] = "";
	a2m_sqlite_options with_embedder = full_sync;
	with_embedder.unembedded_index = 1;
	EXPECT_INT(a2m_store_sqlite_open(t->path, &with_embedder, &t->s, err0, sizeof err0), 0);
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM sqlite_master"
			     " WHERE name = 'records_unembedded'", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "1");
	/* Reopening an up-to-date file migrates nothing. */
	char err[256] = "";
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err), 0);
	EXPECT_INT(count_of(t, &all_q), 1);
}

static void test_open_refuses_non_database_file(tctx *t)
{
	char err[256] = "";
	FILE *f;
	t->s->ops->close(t->s);
	t->s = NULL;
	remove_files(t->path);
	f = fopen(t->path, "w");
	EXPECT(f != NULL);
	fputs("this is not an SQLite database, not even slightly; padding padding "
	      "padding padding padding padding padding padding padding padding\n", f);
	fclose(f);
	EXPECT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(err[0] != '\0');
	EXPECT(a2m_store_sqlite_open("/nonexistent-a2m-dir/x.db", &full_sync, &t->s, err,
				     sizeof err) < 0);
	EXPECT(t->s == NULL);
}


/* ---- store-level settings ----------------------------------------------- */

/* meta_get's answer as a string: the value, "<unset>", or "<failed N>". */
static char meta_buf[256];

static const char *meta_of(tctx *t, const char *name)
{
	char *v = (char *)"stale";
	int rc = t->s->ops->meta_get(t->s, name, &v);
	if (rc != 0)
		snprintf(meta_buf, sizeof meta_buf, "<failed %d>", rc);
	else if (!v)
		snprintf(meta_buf, sizeof meta_buf, "<unset>");
	else
		snprintf(meta_buf, sizeof meta_buf, "%s", v);
	if (rc == 0)
		free(v);
	return meta_buf;
}

static void test_meta_unset_name_reads_null(tctx *t)
{
	EXPECT_STR(meta_of(t, "embedding_dims"), "<unset>");
	EXPECT_STR(meta_of(t, ""), "<unset>");
}

static void test_meta_set_overwrite_and_delete(tctx *t)
{
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "768"));
	EXPECT_STR(meta_of(t, "embedding_dims"), "768");
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "1024"));
	EXPECT_STR(meta_of(t, "embedding_dims"), "1024");
	EXPECT_OK(OPS->meta_set(t->s, "other", ""));
	EXPECT_STR(meta_of(t, "other"), "");           /* empty is not unset */
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", NULL));
	EXPECT_STR(meta_of(t, "embedding_dims"), "<unset>");
	EXPECT_STR(meta_of(t, "other"), "");
	EXPECT_OK(OPS->meta_set(t->s, "never-set", NULL)); /* deleting nothing is fine */
	EXPECT_STR(meta_of(t, "never-set"), "<unset>");
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "3"));
	EXPECT_STR(meta_of(t, "embedding_dims"), "3");
}

static void test_meta_null_name_refused(tctx *t)
{
	char *v = (char *)"stale";
	EXPECT_INT(OPS->meta_get(t->s, NULL, &v), A2M_INVALID_PARAMS);
	EXPECT(v == NULL);
	EXPECT_INT(OPS->meta_set(t->s, NULL, "x"), A2M_INVALID_PARAMS);
}

static void test_meta_is_not_a_record(tctx *t)
{
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "768"));
	EXPECT_INT(count_of(t, &all_q), 0);
	EXPECT_STR(scan_ids(t, &all_q), "");
}

static void test_meta_commit_keeps_values(tctx *t)
{
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->meta_set(t->s, "a", "1"));
	EXPECT_STR(meta_of(t, "a"), "1");              /* a transaction sees its writes */
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(meta_of(t, "a"), "1");
}

static void test_meta_rollback_restores_previous_values(tctx *t)
{
	EXPECT_OK(OPS->meta_set(t->s, "a", "1"));      /* autocommit */
	EXPECT_OK(OPS->meta_set(t->s, "d", "keep"));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->meta_set(t->s, "a", "2"));
	EXPECT_OK(OPS->meta_set(t->s, "a", "3"));
	EXPECT_OK(OPS->meta_set(t->s, "b", "new"));
	EXPECT_OK(OPS->meta_set(t->s, "d", NULL));
	EXPECT_OK(put(t, "r", 1, NULL, NULL));
	EXPECT_STR(meta_of(t, "a"), "3");
	EXPECT_STR(meta_of(t, "d"), "<unset>");
	OPS->rollback(t->s);
	EXPECT_STR(meta_of(t, "a"), "1");
	EXPECT_STR(meta_of(t, "b"), "<unset>");
	EXPECT_STR(meta_of(t, "d"), "keep");
	EXPECT_INT(count_of(t, &all_q), 0);
	/* And the store goes on working: the slots rollback left are usable. */
	EXPECT_OK(OPS->meta_set(t->s, "b", "later"));
	EXPECT_STR(meta_of(t, "b"), "later");
}

static void test_meta_survives_reopen(tctx *t)
{
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "768"));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->meta_set(t->s, "uncommitted", "x"));
	if (reopen(t, 1) != 0)                  /* close() with the transaction open */
		return;
	EXPECT_STR(meta_of(t, "embedding_dims"), "768");
	EXPECT_STR(meta_of(t, "uncommitted"), "<unset>");
}

/* ---- SQLite only: migrating, read-only ---------------------------------- */

/* Closes t's store and removes its files, leaving t->s NULL. */
static void close_and_remove(tctx *t)
{
	t->s->ops->close(t->s);
	t->s = NULL;
	remove_files(t->path);
	remove_dir(t->dir);
}

/* Makes t->path a version-1 file as a build before settings wrote it. */
static int write_version_1_file(tctx *t)
{
	return raw_exec(t,
		"PRAGMA journal_mode=WAL;"
		"CREATE TABLE a2m_schema(version INTEGER NOT NULL);"
		"INSERT INTO a2m_schema(version) VALUES(1);"
		"CREATE TABLE records("
		" seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
		" content TEXT NOT NULL, created_at INTEGER NOT NULL, role TEXT,"
		" metadata TEXT, grp TEXT, tier TEXT, salience REAL NOT NULL DEFAULT 0,"
		" accessed_at INTEGER NOT NULL DEFAULT 0,"
		" access_count INTEGER NOT NULL DEFAULT 0, owner TEXT, session TEXT,"
		" key TEXT, revision INTEGER NOT NULL DEFAULT 0, embedding BLOB, uri TEXT,"
		" media_type TEXT);"
		"CREATE INDEX records_created ON records(created_at, seq);"
		"CREATE INDEX records_tier ON records(tier, created_at, seq);"
		"CREATE INDEX records_session ON records(session, created_at, seq);"
		"CREATE UNIQUE INDEX records_owner_key ON records(ifnull(owner, x''), key)"
		" WHERE key IS NOT NULL;"
		"CREATE INDEX records_grp ON records(grp);"
		"INSERT INTO records(id, content, created_at, owner, key)"
		" VALUES('old', 'from version 1', 42, 'alice', 'k');");
}

static void count_problems(void *ctx, a2m_check_area area, int problem, const char *msg);

/* Takes a file of this build back to before step 13 (no a2m_bound). */
#define SQL_BEFORE_STEP_13 "DROP TABLE a2m_bound;"
/* Takes a file of this build back to before step 12 (records_tier by name). */
#define SQL_BEFORE_STEP_12 SQL_BEFORE_STEP_13 \
	"DROP INDEX records_tier;" \
	"CREATE INDEX records_tier ON records(tier, created_at, seq);"

/* Closes t's store (t->s NULL after) and checks its file is at the current version. */
static void close_at_current_version(tctx *t)
{
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_STR(schema_versions(t), "13");
}

/*
** Takes t's file back to what a build at schema version `version` left:
** closes the store (t->s NULL after), runs rewind (SQL undoing the later
** steps) and marks the file with that version. Returns 0, or -1 with the
** failure set.
*/
static int rewind_to_version(tctx *t, const char *rewind, int version)
{
	char sql[1024], want[16];
	t->s->ops->close(t->s);
	t->s = NULL;
	snprintf(sql, sizeof sql, "%sUPDATE a2m_schema SET version = %d;", rewind, version);
	snprintf(want, sizeof want, "%d", version);
	int rc = raw_exec(t, sql);
	if (rc != SQLITE_OK || strcmp(schema_versions(t), want) != 0) {
		failf(__LINE__, "rewind to version %d: SQLite %d, the file says \"%s\"", version,
		      rc, schema_versions(t));
		return -1;
	}
	return 0;
}

/*
** Opens t's rewound file read-write (full sync), which migrates it.
** Returns 0 once it is open at the current version, else -1 with the
** failure set (t->s NULL when it did not open).
*/
static int reopen_migrated(tctx *t)
{
	char err[256] = "";
	if (open_store(t, 1, err, sizeof err) != 0 || !t->s) {
		failf(__LINE__, "reopen to migrate: %s", err);
		return -1;
	}
	if (strcmp(schema_versions(t), "13") != 0) {
		failf(__LINE__, "migrated to version \"%s\", want \"13\"", schema_versions(t));
		return -1;
	}
	return 0;
}

/* The plan SQLite makes for a scan of q on t's file: its details, joined by ';'. */
static const char *scan_plan(tctx *t, const a2m_query *q)
{
	static char plan[512];
	char sql[1100];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	size_t used = 0;
	plan[0] = '\0';
	memcpy(sql, "EXPLAIN QUERY PLAN ", 19);
	if (a2m_sqlite_scan_sql_for_tests(t->s, q, sql + 19, sizeof sql - 19) != 0)
		return "<no scan SQL>";
	if (sqlite3_open(t->path, &db) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(plan, sizeof plan, "<%s>", sqlite3_errmsg(db));
	} else {
		while (sqlite3_step(st) == SQLITE_ROW && used < sizeof plan)
			used += (size_t)snprintf(plan + used, sizeof plan - used, "%s;",
						 (const char *)sqlite3_column_text(st, 3));
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return plan;
}

/*
** Makes t's file one a version-11 build left, holding n records r00, r01,
** ... (created 100 on) in the tiers working, episodic, semantic, long and
** none in turn, every other one in session s1; t->s closed. Returns 0,
** or -1 with the failure set.
*/
static int version_11_file(tctx *t, int n)
{
	static const char *const tiers[] = {"working", "episodic", "semantic", "long", NULL};
	for (int i = 0; i < n; i++) {
		char id[16];
		snprintf(id, sizeof id, "r%02d", i);
		if (put_in(t, id, 100 + i, tiers[i % 5], i % 2 ? "s1" : NULL) != 0) {
			failf(__LINE__, "put %s: %s", id, t->s->errmsg);
			return -1;
		}
	}
	return rewind_to_version(t, SQL_BEFORE_STEP_12, 11);
}

/*
** Step 12 on a file a build of version 11 left (records_tier by tier
** name): the index is made again keyed by the tier's key, the default
** tiers in the order semantic, episodic, working; every scan by tier
** (alone, with no session, brief, newest first from a bound) searches it,
** one naming a session searches records_session as before; the records,
** their scans by tier and their counts, and the check are what they were.
*/
static void test_migrates_version_11_file_to_tier_keys(tctx *t)
{
	char buf[160];
	int problems = 0;
	if (version_11_file(t, 20) != 0)
		return;
	EXPECT_STR(tier_index_columns(t), "tier,created_at,seq");
	if (reopen_migrated(t) != 0)
		return;
	EXPECT_STR(tier_index_columns(t), "<expr>,created_at,seq");
	/* The default tiers in the index: semantic, episodic, working; no tier first. */
	EXPECT_INT(raw_query(t, "SELECT group_concat(ifnull(tier, '-')) FROM (SELECT DISTINCT tier"
			     " FROM records INDEXED BY records_tier ORDER BY "
			     A2M_SQLITE_TIER_KEY("tier") ")", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "-,semantic,episodic,working,long");
	const char *want = "SEARCH records USING INDEX records_tier (<expr>=?";
	EXPECT(strstr(scan_plan(t, &(a2m_query){.tier = "working"}), want) != NULL);
	EXPECT(strstr(scan_plan(t, &(a2m_query){.tier = "episodic", .by_session = 1,
						 .brief = 1}), want) != NULL);
	EXPECT(strstr(scan_plan(t, &(a2m_query){.tier = "long", .descending = 1,
						 .created_min = 3}), want) != NULL);
	EXPECT(strstr(scan_plan(t, &(a2m_query){.tier = "working", .by_session = 1,
						 .session = "s1", .brief = 1}),
		      "SEARCH records USING INDEX records_session (session=?") != NULL);
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "working"}), "r00,r05,r10,r15");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "long", .by_session = 1, .session = "s1"}),
		   "r03,r13");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "long", .by_session = 1}), "r08,r18");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "semantic", .descending = 1}),
		   "r17,r12,r07,r02");
	/* A tier named like a key's number is its own: no record is in "1". */
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "1"}), "");
	EXPECT_STR(working_counts(t), "4 2 2 10 4");
	a2m_check_options o = {.report = count_problems, .ctx = &problems};
	EXPECT_INT(OPS->check(t->s, &o), 0);
	EXPECT_INT(problems, 0);
}

/*
** Step 10 on a file a build of version 9 left (every record in a2m_counts,
** no 'counted' mark): the mark starts at the last record; inserts after it
** wait in the counts' tail (a2m_counts without them, every count with
** them, another store on the file counting them from their rows); that
** store's close writes them in, and a remove writes the tail out first.
*/
static void test_migrates_version_9_file_to_the_counts_tail(tctx *t)
{
	char buf[64], err[256] = "";
	a2m_store *other = NULL;
	int removed = 0;
	a2m_record w1 = make("w1", 50), w2 = make("w2", 51), n1 = make("n1", 60),
		   n2 = make("n2", 61), n3 = make("n3", 62);
	w1.tier = w2.tier = n1.tier = n2.tier = n3.tier = "working";
	w1.session = n1.session = "s1";
	EXPECT_OK(OPS->insert(t->s, &w1));
	EXPECT_OK(OPS->insert(t->s, &w2));
	if (rewind_to_version(t, SQL_BEFORE_STEP_12 "DELETE FROM a2m_meta WHERE name = 'counted';",
			      9) != 0)
		return;
	EXPECT_INT(raw_query(t, "SELECT sum(n) FROM a2m_counts", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "2");
	if (reopen_migrated(t) != 0)
		return;
	EXPECT_INT(raw_query(t, "SELECT value FROM a2m_meta WHERE name = 'counted'", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "2");
	EXPECT_OK(OPS->insert(t->s, &n1));
	EXPECT_OK(OPS->insert(t->s, &n2));
	/* working; working s1; working, no session; s1; episodic */
	EXPECT_STR(working_counts(t), "4 2 2 2 0");
	EXPECT_INT(raw_query(t, "SELECT sum(n) FROM a2m_counts", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "2");
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &other, err, sizeof err), 0);
	if (other) {
		int64_t n = -1;
		EXPECT_OK(other->ops->count(other, &(a2m_query){.tier = "working"}, &n));
		EXPECT_INT(n, 4);
		other->ops->close(other);  /* it counted the tail: its close writes it in */
	}
	EXPECT_INT(raw_query(t, "SELECT sum(n) || ' ' || (SELECT value FROM a2m_meta"
			     " WHERE name = 'counted') FROM a2m_counts", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "4 4");
	EXPECT_STR(working_counts(t), "4 2 2 2 0");
	EXPECT_OK(OPS->insert(t->s, &n3));
	EXPECT_STR(working_counts(t), "5 2 3 2 0");
	EXPECT_OK(OPS->remove(t->s, "w2", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_INT(raw_query(t, "SELECT sum(n) || ' ' || (SELECT value FROM a2m_meta"
			     " WHERE name = 'counted') FROM a2m_counts", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "4 5");
	EXPECT_STR(working_counts(t), "4 2 2 2 0");
}

/* Counts the problems a check reports (ctx: an int). */
static void count_problems(void *ctx, a2m_check_area area, int problem, const char *msg)
{
	(void)area;
	if (problem) {
		printf("  check: %s\n", msg);
		(*(int *)ctx)++;
	}
}

/* Moves the record with this id to tier `to`, naming it by session (NULL: its own). */
static int move_named(tctx *t, const char *id, const char *to, const char *session,
		      int *moved)
{
	a2m_record *rec = NULL;
	*moved = -1;
	int rc = OPS->get(t->s, id, &rec);
	if (!rc && rec && session) {
		free(rec->session);
		rec->session = strdup(session);
	}
	if (!rc && rec)
		rc = OPS->move(t->s, rec, to, rec->salience, moved);
	a2m_record_free(rec);
	return rc;
}

/* The counts' mark and sum(n) of a2m_counts, as the file holds them. */
static const char *counted_of(tctx *t)
{
	static char buf[64];
	if (raw_query(t, "SELECT (SELECT value FROM a2m_meta WHERE name = 'counted')"
		      " || ' ' || ifnull(sum(n), 0) FROM a2m_counts", buf, sizeof buf) != SQLITE_OK)
		snprintf(buf, sizeof buf, "<query failed>");
	return buf;
}

/*
** A tier move is counted by the engine, not a trigger (schema step 11): a
** record under the counts' mark moves without the tail written out (the
** mark stays) and its -1 and +1 reach a2m_counts at COMMIT; a record above
** the mark has the tail written out first; a rollback keeps nothing; a move
** naming another session than the record's moves nothing; the last counted
** record of a bucket takes its row with it. Every count agrees with the
** records: in the transaction, after it, from a second store on the file,
** after a reopen, and for the check.
*/
static void test_sqlite_moves_are_counted_without_the_trigger(tctx *t)
{
	char err[256] = "";
	int moved = 0, problems = 0;
	a2m_store *other = NULL;
	EXPECT_OK(put_in(t, "a", 1, "working", "s1"));
	EXPECT_OK(put_in(t, "b", 2, "working", "s1"));
	EXPECT_OK(put_in(t, "c", 3, "working", NULL));
	if (reopen(t, 1) != 0)  /* the clean close writes the counts out: mark 3 */
		return;
	EXPECT_OK(put_in(t, "d", 4, "working", "s1"));  /* in the tail */
	EXPECT_STR(counted_of(t), "3 3");
	/* working; working s1; working, no session; s1; episodic */
	EXPECT_STR(working_counts(t), "4 3 1 3 0");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_named(t, "a", "episodic", NULL, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_STR(working_counts(t), "3 2 1 3 1");
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(counted_of(t), "3 3");  /* the tail stayed out; a's count moved */
	EXPECT_STR(working_counts(t), "3 2 1 3 1");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_named(t, "d", "episodic", NULL, &moved));  /* above the mark */
	EXPECT_INT(moved, 1);
	EXPECT_STR(working_counts(t), "2 1 1 3 2");
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(counted_of(t), "4 4");
	EXPECT_STR(working_counts(t), "2 1 1 3 2");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_named(t, "b", "episodic", NULL, &moved));
	EXPECT_STR(working_counts(t), "1 0 1 3 3");
	OPS->rollback(t->s);
	EXPECT_STR(working_counts(t), "2 1 1 3 2");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_named(t, "c", "episodic", "s1", &moved));  /* c has no session */
	EXPECT_INT(moved, 0);
	EXPECT_OK(move_named(t, "c", "episodic", NULL, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(working_counts(t), "1 1 0 3 3");
	char buf[64];
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM a2m_counts WHERE tier = 'working'"
			     " AND session = x''", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	/* Three buckets in one commit (the moves net to three buckets):
	** working s1 -1 (its last: the row goes), episodic s1 -1, semantic +2. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_named(t, "b", "semantic", NULL, &moved));
	EXPECT_OK(move_named(t, "a", "semantic", NULL, &moved));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(working_counts(t), "0 0 0 3 2");
	EXPECT_INT(raw_query(t, "SELECT group_concat(tier || '/' || session || '/' || n, ' ')"
			     " FROM (SELECT * FROM a2m_counts ORDER BY tier, session)",
			     buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "episodic/s1/1 episodic//1 semantic/s1/2");  /* text sorts before blob */
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &other, err, sizeof err), 0);
	if (other) {
		int64_t n = -1;
		EXPECT_OK(other->ops->count(other, &(a2m_query){.tier = "episodic"}, &n));
		EXPECT_INT(n, 2);
		EXPECT_OK(other->ops->count(other, &(a2m_query){.tier = "semantic"}, &n));
		EXPECT_INT(n, 2);
		EXPECT_OK(other->ops->count(other, &(a2m_query){.tier = "working",
								.by_session = 1,
								.session = "s1"}, &n));
		EXPECT_INT(n, 0);
		a2m_check_options o = {.report = count_problems, .ctx = &problems};
		EXPECT_INT(other->ops->check(other, &o), 0);
		EXPECT_INT(problems, 0);
		other->ops->close(other);
	}
	if (reopen(t, 1) != 0)
		return;
	EXPECT_STR(working_counts(t), "0 0 0 3 2");
	if (check_groups(t, "after the reopen") != 0)
		return;
	a2m_check_options o = {.report = count_problems, .ctx = &problems};
	EXPECT_INT(OPS->check(t->s, &o), 0);
	EXPECT_INT(problems, 0);
}

static void test_migrates_version_1_file_forward(tctx *t)
{
	char buf[64], err[256] = "";
	a2m_record *got = NULL;
	close_and_remove(t);
	EXPECT_INT(write_version_1_file(t), SQLITE_OK);
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err), 0);
	EXPECT_OK(OPS->get(t->s, "old", &got));
	EXPECT_STR(got ? got->content : NULL, "from version 1");
	EXPECT_INT(got ? got->seq : 0, 1);
	a2m_record_free(got);
	EXPECT_STR(meta_of(t, "embedding_dims"), "<unset>");
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "768"));
	EXPECT_OK(put(t, "new", 43, "alice", "k2"));
	EXPECT_INT(put(t, "dup", 44, "alice", "k"), A2M_INVALID_PARAMS);
	close_at_current_version(t);
	EXPECT_INT(raw_query(t, "SELECT value FROM a2m_meta WHERE name = 'embedding_dims'",
			     buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "768");
	EXPECT_INT(raw_query(t, "SELECT group_concat(id) FROM (SELECT id FROM records"
			     " ORDER BY seq)", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "old,new");
}

/*
** A version-3 file (the schema before the kept counts) holding records in
** several tiers and sessions: opening it read-write counts what is there,
** and writes keep the counts from then on.
*/
static void test_migrates_version_3_file_with_counts(tctx *t)
{
	char buf[64], err[256] = "";
	int removed;
	close_and_remove(t);
	EXPECT_INT(write_version_1_file(t), SQLITE_OK);
	EXPECT_INT(raw_exec(t,
		"CREATE TABLE a2m_meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);"
		"ALTER TABLE records ADD COLUMN gen_embedding BLOB;"
		"UPDATE a2m_schema SET version = 3;"
		"INSERT INTO records(id, content, created_at, tier, session) VALUES"
		" ('w1', 'c', 50, 'working', 's1'), ('w2', 'c', 51, 'working', 's1'),"
		" ('w3', 'c', 52, 'working', 's2'), ('w4', 'c', 53, 'working', NULL),"
		" ('e1', 'c', 54, 'episodic', 's1'), ('n1', 'c', 55, NULL, NULL);"),
		SQLITE_OK);
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err), 0);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working"}), 4);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working", .by_session = 1,
					    .session = "s1"}), 2);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working", .by_session = 1}), 1);
	EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1, .session = "s1"}), 3);
	EXPECT_INT(count_of(t, &(a2m_query){.by_session = 1}), 3);  /* w4, n1, old */
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic"}), 1);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "semantic"}), 0);
	if (check_groups(t, "after migrating") != 0)
		return;
	EXPECT_OK(OPS->remove(t->s, "w1", &removed));
	a2m_record w3 = make("w3", 52);
	w3.tier = "episodic";
	w3.session = "s1";
	EXPECT_OK(OPS->update(t->s, &w3));
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic", .by_session = 1,
					    .session = "s1"}), 2);
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "working", .by_session = 1,
					    .session = "s2"}), 0);
	if (check_groups(t, "after writes") != 0)
		return;
	close_at_current_version(t);
	/* A bucket left empty holds no row. */
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM a2m_counts WHERE n <= 0", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM a2m_counts", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "4");
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err), 0);
}

/*
** A version-7 file as the last build with AUTOINCREMENT and the insert
** trigger left it (steps 2 to 7 as they were, and records_unembedded as a
** server with an embedder made it), holding records whose newest was
** removed: opening it read-write rebuilds records keeping every seq, the
** counts, the unique keys and the index, and new records go on above the
** removed one's seq.
*/
static void test_migrates_version_7_file_keeping_seqs_counts_and_keys(tctx *t)
{
	char buf[128], err[256] = "";
	a2m_record *got = NULL;
	a2m_record n1 = make("n1", 60), n2 = make("n2", 61);
	int removed;
	close_and_remove(t);
	EXPECT_INT(write_version_1_file(t), SQLITE_OK);
	EXPECT_INT(raw_exec(t,
		"CREATE TABLE a2m_meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);"
		"ALTER TABLE records ADD COLUMN gen_embedding BLOB;"
		"CREATE TABLE a2m_counts(tier NOT NULL, session NOT NULL, n INTEGER NOT NULL,"
		" PRIMARY KEY(tier, session)) WITHOUT ROWID;"
		"INSERT INTO a2m_counts(tier, session, n)"
		" SELECT ifnull(tier, x''), ifnull(session, x''), count(*) FROM records"
		" GROUP BY 1, 2;"
		"CREATE TRIGGER a2m_counts_insert AFTER INSERT ON records BEGIN"
		" INSERT INTO a2m_counts(tier, session, n)"
		"  VALUES(ifnull(new.tier, x''), ifnull(new.session, x''), 1)"
		"  ON CONFLICT(tier, session) DO UPDATE SET n = n + 1;"
		" END;"
		"CREATE TRIGGER a2m_counts_delete AFTER DELETE ON records BEGIN"
		" UPDATE a2m_counts SET n = n - 1"
		"  WHERE tier = ifnull(old.tier, x'') AND session = ifnull(old.session, x'');"
		" DELETE FROM a2m_counts WHERE n <= 0"
		"  AND tier = ifnull(old.tier, x'') AND session = ifnull(old.session, x'');"
		" END;"
		"CREATE TRIGGER a2m_counts_update AFTER UPDATE OF tier, session ON records"
		" WHEN old.tier IS NOT new.tier OR old.session IS NOT new.session BEGIN"
		" UPDATE a2m_counts SET n = n - 1"
		"  WHERE tier = ifnull(old.tier, x'') AND session = ifnull(old.session, x'');"
		" DELETE FROM a2m_counts WHERE n <= 0"
		"  AND tier = ifnull(old.tier, x'') AND session = ifnull(old.session, x'');"
		" INSERT INTO a2m_counts(tier, session, n)"
		"  VALUES(ifnull(new.tier, x''), ifnull(new.session, x''), 1)"
		"  ON CONFLICT(tier, session) DO UPDATE SET n = n + 1;"
		" END;"
		"DROP INDEX records_grp;"
		"CREATE INDEX records_grp ON records(grp) WHERE grp IS NOT NULL;"
		"CREATE INDEX records_unembedded ON records(tier, seq) WHERE embedding IS NULL"
		" AND gen_embedding IS NULL AND trim(content, char(32, 9, 10, 11, 12, 13)) <> '';"
		"UPDATE a2m_schema SET version = 7;"
		"INSERT INTO records(id, content, created_at, tier, session, owner, key, grp)"
		" VALUES ('w1', 'c', 50, 'working', 's1', NULL, 'k1', 'g'),"
		" ('w2', 'c', 51, 'working', 's1', 'bob', 'k1', NULL),"
		" ('w3', 'c', 52, 'working', NULL, NULL, NULL, NULL),"
		" ('e1', 'c', 53, 'episodic', 's1', NULL, NULL, 'g'),"
		" ('gone', 'c', 54, 'working', 's1', NULL, NULL, NULL);"
		"DELETE FROM records WHERE id = 'gone';"), SQLITE_OK);
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err), 0);
	if (!t->s)
		return;
	EXPECT_STR(scan_ids(t, &all_q), "old,w1,w2,w3,e1");
	EXPECT_OK(OPS->get(t->s, "e1", &got));
	EXPECT_INT(got ? got->seq : 0, 5);
	a2m_record_free(got);
	EXPECT_STR(working_counts(t), "3 2 1 3 1");
	if (check_groups(t, "after migrating") != 0)
		return;
	/* Unique ids and (owner, key) pairs, with or without an owner. */
	EXPECT_INT(put(t, "w1", 70, NULL, NULL), A2M_INVALID_PARAMS);
	EXPECT_INT(put(t, "x1", 70, NULL, "k1"), A2M_INVALID_PARAMS);
	EXPECT_INT(put(t, "x2", 70, "bob", "k1"), A2M_INVALID_PARAMS);
	EXPECT_INT(put(t, "x3", 70, "alice", "k"), A2M_INVALID_PARAMS);
	/* 'gone' had seq 6: new records go on above it. */
	n1.tier = "working";
	n1.session = "s1";
	EXPECT_OK(OPS->insert(t->s, &n1));
	EXPECT_INT(n1.seq, 7);
	EXPECT_OK(OPS->remove(t->s, "w1", &removed));
	EXPECT_STR(working_counts(t), "3 2 1 3 1");
	EXPECT_OK(OPS->remove(t->s, "n1", &removed));
	if (reopen(t, 1) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &n2));
	EXPECT_INT(n2.seq, 8);
	EXPECT_STR(working_counts(t), "2 1 1 2 1");
	close_at_current_version(t);
	EXPECT_INT(raw_query(t, "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master"
			     " WHERE tbl_name = 'records' AND type = 'index' AND sql IS NOT NULL"
			     " ORDER BY name)", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "records_created,records_expiry,records_fp,records_grp,records_owner_key,"
		   "records_session,records_tier,records_unembedded");
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM sqlite_master WHERE name = 'records_new'"
			     " OR name = 'a2m_counts_insert' OR instr(sql, 'AUTOINCREMENT')",
			     buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM records INDEXED BY records_unembedded"
			     " WHERE tier = 'working' AND embedding IS NULL AND gen_embedding IS NULL"
			     " AND trim(content, char(32, 9, 10, 11, 12, 13)) <> ''", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "2");  /* w2, w3 */
}

/* Opens t's file read-only (options otherwise as given) into t->s. */
static int open_read_only(tctx *t, char *err, size_t errlen)
{
	if (strcmp(t->engine, "postgres") == 0) {
		a2m_postgres_options po = {.read_only = 1, .schema = t->schema};
		return a2m_store_postgres_open(pg_test_server(), &po, &t->s, err, errlen);
	}
	a2m_sqlite_options opt = {.synchronous_full = 1, .read_only = 1,
				  .procedural_dir = t->dir, .procedural_tier = "procedural"};
	return a2m_store_sqlite_open(t->path, &opt, &t->s, err, errlen);
}

static void test_read_only_refuses_writes_and_still_reads(tctx *t)
{
	char err[256] = "", *v = (char *)"stale";
	a2m_record a = make("a", 1), b = make("b", 2), *got = NULL;
	int removed = -1;
	struct stat before, after;

	a.tier = "procedural";
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "768"));
	t->s->ops->close(t->s);
	t->s = NULL;
	int file = strcmp(t->engine, "sqlite") == 0;
	EXPECT(!file || stat(t->path, &before) == 0);

	EXPECT_INT(open_read_only(t, err, sizeof err), 0);
	EXPECT_INT(t->s->read_only, 1);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_STR(got ? got->content : NULL, "content");
	a2m_record_free(got);
	EXPECT_STR(scan_ids(t, &all_q), "a");
	EXPECT_INT(count_of(t, &all_q), 1);
	EXPECT_STR(meta_of(t, "embedding_dims"), "768");

	EXPECT_INT(OPS->insert(t->s, &b), A2M_READ_ONLY);
	EXPECT(strstr(t->s->errmsg, "read-only") != NULL);
	a.content = "changed";
	EXPECT_INT(OPS->update(t->s, &a), A2M_READ_ONLY);
	EXPECT_INT(OPS->remove(t->s, "a", &removed), A2M_READ_ONLY);
	EXPECT_INT(removed, 0);
	EXPECT_INT(OPS->meta_set(t->s, "embedding_dims", "1024"), A2M_READ_ONLY);
	EXPECT_INT(OPS->meta_set(t->s, "embedding_dims", NULL), A2M_READ_ONLY);
	/* Refused before any check: even an invalid record gets A2M_READ_ONLY. */
	EXPECT_INT(OPS->insert(t->s, &(a2m_record){0}), A2M_READ_ONLY);

	/* A read transaction works, and a write inside it is refused alike. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_INT(count_of(t, &all_q), 1);
	EXPECT_INT(OPS->insert(t->s, &b), A2M_READ_ONLY);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(OPS->begin(t->s));
	OPS->rollback(t->s);

	/* Nothing changed: not the records, not the settings, not the file. */
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_STR(got ? got->content : NULL, "content");
	a2m_record_free(got);
	EXPECT_INT(OPS->meta_get(t->s, "embedding_dims", &v), 0);
	EXPECT_STR(v, "768");
	free(v);
	t->s->ops->close(t->s);
	t->s = NULL;
	if (!file)
		return;
	EXPECT_INT(stat(t->path, &after), 0);
	EXPECT_INT(after.st_size, before.st_size);
	EXPECT_INT(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
	EXPECT_INT(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
	/* Nor was the procedural mirror reconciled into existence. */
	EXPECT_INT(access(t->dir, F_OK), -1);
}

static void test_read_only_open_of_missing_file_fails_and_creates_nothing(tctx *t)
{
	char err[256] = "", name[200];
	close_and_remove(t);
	EXPECT(open_read_only(t, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(strstr(err, "read-only") != NULL);
	EXPECT(strstr(err, "No such file") != NULL);
	EXPECT_INT(access(t->path, F_OK), -1);
	snprintf(name, sizeof name, "%s-wal", t->path);
	EXPECT_INT(access(name, F_OK), -1);
	snprintf(name, sizeof name, "%s-shm", t->path);
	EXPECT_INT(access(name, F_OK), -1);
	EXPECT_INT(access(t->dir, F_OK), -1);
}

static void test_read_only_refuses_file_without_a2m_schema(tctx *t)
{
	char err[256] = "", buf[64];
	close_and_remove(t);
	EXPECT_INT(raw_exec(t, "CREATE TABLE other(x)"), SQLITE_OK);
	EXPECT(open_read_only(t, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(strstr(err, "has no a2m schema") != NULL);
	EXPECT_INT(raw_query(t, "SELECT group_concat(name) FROM sqlite_master", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "other");
	/* An empty file is an empty database: no schema either, and it stays empty. */
	remove_files(t->path);
	FILE *f = fopen(t->path, "w");
	EXPECT(f != NULL);
	fclose(f);
	EXPECT(open_read_only(t, err, sizeof err) < 0);
	EXPECT(strstr(err, "has no a2m schema") != NULL);
	struct stat st;
	EXPECT_INT(stat(t->path, &st), 0);
	EXPECT_INT(st.st_size, 0);
}

static void test_read_only_refuses_older_schema_without_migrating(tctx *t)
{
	char err[256] = "", buf[64];
	close_and_remove(t);
	EXPECT_INT(write_version_1_file(t), SQLITE_OK);
	EXPECT(open_read_only(t, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(strstr(err, "schema version 1") != NULL);
	EXPECT(strstr(err, "open it once read-write to migrate it") != NULL);
	EXPECT_STR(schema_versions(t), "1");
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM sqlite_master WHERE name = 'a2m_meta'",
			     buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	/* Opened read-write once, it is migrated, and then serves read-only. */
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err), 0);
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(open_read_only(t, err, sizeof err), 0);
	EXPECT_INT(count_of(t, &all_q), 1);
}

/*
** A file a version-11 build left (records_tier by tier name) is read
** read-only as it is: step 12 changed no read, only the index's key. The
** scans by tier find what they found before the rewind, and the file is
** still at version 11; one step older (10) is refused as before.
*/
static void test_read_only_reads_a_version_11_file_as_it_is(tctx *t)
{
	char err[256] = "";
	if (version_11_file(t, 10) != 0)
		return;
	EXPECT_INT(open_read_only(t, err, sizeof err), 0);
	if (!t->s)
		return;
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "working"}), "r00,r05");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "long", .by_session = 1, .session = "s1"}),
		   "r03");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "semantic", .descending = 1}), "r07,r02");
	EXPECT_STR(scan_ids(t, &(a2m_query){.by_session = 1}), "r00,r02,r04,r06,r08");
	EXPECT_INT(count_of(t, &(a2m_query){.tier = "episodic"}), 2);
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_STR(schema_versions(t), "11");
	EXPECT_INT(raw_exec(t, "UPDATE a2m_schema SET version = 10"), SQLITE_OK);
	EXPECT(open_read_only(t, err, sizeof err) < 0);
	EXPECT(strstr(err, "open it once read-write to migrate it") != NULL);
}

static void test_read_only_refuses_newer_schema(tctx *t)
{
	char err[256] = "";
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(raw_exec(t, "UPDATE a2m_schema SET version = 1000"), SQLITE_OK);
	EXPECT(open_read_only(t, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(strstr(err, "schema version 1000 is not one this build knows") != NULL);
}

/* ---- SQLite only: the procedural mirror (DECISIONS 024) ----------------- */

/* (Re)opens t's file with the mirror on. Returns 0 or sets failure. */
static int open_mirrored(tctx *t)
{
	char err[256] = "";
	a2m_sqlite_options opt = {.synchronous_full = 1, .procedural_dir = t->dir,
				  .procedural_tier = "procedural"};
	if (t->s)
		t->s->ops->close(t->s);
	t->s = NULL;
	if (a2m_store_sqlite_open(t->path, &opt, &t->s, err, sizeof err) != 0) {
		snprintf(failure, sizeof failure, "open with a mirror: %s", err);
		return -1;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static sbuf dir_buf;  /* dir_list()'s answer, valid until its next call */

/* The names in t->dir, sorted and comma-separated; "<none>" when it does not exist. */
static const char *dir_list(tctx *t)
{
	char *names[64];
	size_t n = 0;
	struct dirent *e;
	DIR *d = opendir(t->dir);
	dir_buf.len = 0;
	sb_add(&dir_buf, "%s", "");
	if (!d) {
		sb_add(&dir_buf, "%s", "<none>");
		return dir_buf.p;
	}
	while ((e = readdir(d)) != NULL && n < 64)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof *names, cmp_str);
	for (size_t i = 0; i < n; i++) {
		sb_add(&dir_buf, "%s%s", i ? "," : "", names[i] ? names[i] : "<oom>");
		free(names[i]);
	}
	return dir_buf.p;
}

static sbuf file_buf;  /* file_of()'s answer, valid until its next call */

/* The whole of file name in t->dir, or "<missing>". */
static const char *file_of(tctx *t, const char *name)
{
	char path[512], chunk[4096];
	size_t r;
	snprintf(path, sizeof path, "%s/%s", t->dir, name);
	FILE *f = fopen(path, "rb");
	file_buf.len = 0;
	sb_add(&file_buf, "%s", "");
	if (!f) {
		sb_add(&file_buf, "%s", "<missing>");
		return file_buf.p;
	}
	while ((r = fread(chunk, 1, sizeof chunk - 1, f)) > 0) {
		chunk[r] = '\0';
		sb_add(&file_buf, "%s", chunk);
	}
	fclose(f);
	return file_buf.p;
}

/* Writes text to name in t->dir. */
static int write_in_dir(tctx *t, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", t->dir, name);
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static ino_t inode_of(tctx *t, const char *name)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", t->dir, name);
	return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* A record in the mirrored tier; strings are borrowed. */
static a2m_record skill(const char *id, const char *key, const char *content)
{
	a2m_record r = make(id, 1753900000123LL);
	r.tier = "procedural";
	r.key = (char *)key;
	r.content = (char *)content;
	r.owner = "alice";
	r.revision = 2;
	return r;
}

static void test_mirror_file_appears_after_commit_with_name_and_content(tctx *t)
{
	a2m_record r = skill("r1", "deploy/prod", "Run make deploy.\nThen check.");
	a2m_record other = make("r2", 5);
	struct stat st;
	char path[512];
	other.tier = "long";
	if (open_mirrored(t) != 0)
		return;
	EXPECT_STR(dir_list(t), "<none>");       /* created on first use */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->insert(t->s, &r));
	EXPECT_OK(OPS->insert(t->s, &other));
	EXPECT_STR(dir_list(t), "<none>");       /* nothing before the commit */
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(dir_list(t), "deploy-prod--r1.md");
	EXPECT_STR(file_of(t, "deploy-prod--r1.md"),
		   "---\n"
		   "id: \"r1\"\n"
		   "key: \"deploy/prod\"\n"
		   "owner: \"alice\"\n"
		   "created_at: 2025-07-30T18:26:40.123Z\n"
		   "revision: 2\n"
		   "---\n"
		   "Run make deploy.\n"
		   "Then check.\n");
	EXPECT_INT(stat(t->dir, &st), 0);
	EXPECT_INT(st.st_mode & 07777, 0755);
	snprintf(path, sizeof path, "%s/deploy-prod--r1.md", t->dir);
	EXPECT_INT(stat(path, &st), 0);
	EXPECT_INT(st.st_mode & 07777, 0644);
	EXPECT_INT(t->s->mirror_failures, 0);
}

static void test_mirror_names_files_by_key_or_first_words(tctx *t)
{
	char long_words[80];
	memset(long_words, 'a', 30);
	long_words[30] = ' ';
	memset(long_words + 31, 'b', 30);
	snprintf(long_words + 61, sizeof long_words - 61, " c");
	char long_word[71];                 /* one word past the cap: it is cut */
	memset(long_word, 'X', 70);
	long_word[70] = '\0';
	a2m_record r[] = {
		skill("c1", NULL, "  Deploy the Service: run `make` && ./deploy.sh --prod now"),
		skill("c2", NULL, "\xc3\x9c" "ber caf\xc3\xa9 na\xc3\xafve"),
		skill("c3", "///", "!!! ???"),
		skill("c4", NULL, long_words),
		skill("c5", NULL, "..hidden dot\x01" "file"),
		skill("c6", "Team.Runbooks/On-Call", "ignored when there is a key"),
		skill("c7", NULL, "Ends in newline\n"),
		skill("c8", NULL, long_word),
	};
	if (open_mirrored(t) != 0)
		return;
	for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
		EXPECT_OK(OPS->insert(t->s, &r[i]));
	EXPECT_STR(dir_list(t),
		   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa--c4.md,"
		   "deploy-the-service-run-make-deploy--c1.md,"
		   "ends-in-newline--c7.md,"
		   "hidden-dot-file--c5.md,"
		   "record--c3.md,"
		   "team-runbooks-on-call--c6.md,"
		   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx--c8.md,"
		   "\xc3\x9c" "ber-caf\xc3\xa9-na\xc3\xafve--c2.md");
	/* Content that ends in a newline gets no second one. */
	EXPECT_STR(file_of(t, "ends-in-newline--c7.md"),
		   "---\nid: \"c7\"\nowner: \"alice\"\ncreated_at: 2025-07-30T18:26:40.123Z\n"
		   "revision: 2\n---\nEnds in newline\n");
}

static void test_mirror_front_matter_quotes_what_it_holds(tctx *t)
{
	a2m_record r = skill("q\"1", "say \"hi\"\nthen \\ go", "---\nnot front matter");
	r.owner = NULL;
	r.revision = 0;
	r.created_at = 0;
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &r));
	EXPECT_STR(dir_list(t), "say-hi-then-go--q%221.md");
	EXPECT_STR(file_of(t, "say-hi-then-go--q%221.md"),
		   "---\n"
		   "id: \"q\\\"1\"\n"
		   "key: \"say \\\"hi\\\"\\nthen \\\\ go\"\n"
		   "created_at: 1970-01-01T00:00:00.000Z\n"
		   "revision: 0\n"
		   "---\n"
		   "---\nnot front matter\n");
}

static void test_mirror_writes_nothing_on_rollback(tctx *t)
{
	a2m_record r = skill("s1", "k", "first");
	int removed;
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->insert(t->s, &r));
	OPS->rollback(t->s);
	EXPECT_STR(dir_list(t), "<none>");
	EXPECT_OK(OPS->insert(t->s, &r));
	EXPECT_STR(dir_list(t), "k--s1.md");
	const char *before = "---\nid: \"s1\"\nkey: \"k\"\nowner: \"alice\"\n"
			     "created_at: 2025-07-30T18:26:40.123Z\nrevision: 2\n---\nfirst\n";
	EXPECT_STR(file_of(t, "k--s1.md"), before);
	EXPECT_OK(OPS->begin(t->s));
	r.content = "second";
	r.revision = 3;
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_OK(OPS->remove(t->s, "s1", &removed));
	a2m_record other = skill("s2", NULL, "another one");
	EXPECT_OK(OPS->insert(t->s, &other));
	OPS->rollback(t->s);
	EXPECT_STR(dir_list(t), "k--s1.md");
	EXPECT_STR(file_of(t, "k--s1.md"), before);
	/* The next commit does not replay the rolled-back writes either. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(dir_list(t), "k--s1.md");
	EXPECT_STR(file_of(t, "k--s1.md"), before);
}

static void test_mirror_renames_file_when_content_changes_its_name(tctx *t)
{
	a2m_record r = skill("s1", NULL, "alpha beta");
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &r));
	EXPECT_STR(dir_list(t), "alpha-beta--s1.md");
	r.content = "gamma delta";
	r.revision = 3;
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_STR(dir_list(t), "gamma-delta--s1.md");
	EXPECT_STR(file_of(t, "gamma-delta--s1.md"),
		   "---\nid: \"s1\"\nowner: \"alice\"\ncreated_at: 2025-07-30T18:26:40.123Z\n"
		   "revision: 3\n---\ngamma delta\n");
	/* Gaining a key renames it too. */
	r.key = "greek/letters";
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_STR(dir_list(t), "greek-letters--s1.md");
}

static void test_mirror_removes_file_on_forget(tctx *t)
{
	a2m_record a = skill("a", "one", "x"), b = skill("b", "two", "y");
	int removed = 0;
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->insert(t->s, &b));
	EXPECT_STR(dir_list(t), "one--a.md,two--b.md");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->remove(t->s, "a", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_STR(dir_list(t), "one--a.md,two--b.md");   /* still there until commit */
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(dir_list(t), "two--b.md");
	EXPECT_OK(OPS->remove(t->s, "b", &removed));       /* autocommit */
	EXPECT_INT(removed, 1);
	EXPECT_STR(dir_list(t), "");
}

static void test_mirror_removes_file_when_record_leaves_tier(tctx *t)
{
	a2m_record r = skill("s1", "runbook", "steps");
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &r));
	EXPECT_STR(dir_list(t), "runbook--s1.md");
	r.tier = "long";
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_STR(dir_list(t), "");
	r.tier = NULL;
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_STR(dir_list(t), "");
	r.tier = "procedural";
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_STR(dir_list(t), "runbook--s1.md");
}

static void test_mirror_keeps_hostile_ids_inside_its_directory(tctx *t)
{
	static const char *const ids[] = {
		"../../etc/x", "a/b", "a%2Fb", "A", "a", ".hidden", "x\ny", "/abs", "..",
	};
	int removed;
	if (open_mirrored(t) != 0)
		return;
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		a2m_record r = skill(ids[i], NULL, "skill");
		EXPECT_OK(OPS->insert(t->s, &r));
	}
	/* One file each, all of them here: no id reached a path, none collided. */
	EXPECT_STR(dir_list(t),
		   "skill--%2Fabs.md,"
		   "skill--%41.md,"
		   "skill--..%2F..%2Fetc%2Fx.md,"
		   "skill--...md,"
		   "skill--.hidden.md,"
		   "skill--a%252%46b.md,"     /* capitals are escaped too: "A" is not "a" */
		   "skill--a%2Fb.md,"
		   "skill--a.md,"
		   "skill--x%0Ay.md");
	EXPECT_STR(file_of(t, "skill--x%0Ay.md"),
		   "---\nid: \"x\\ny\"\nowner: \"alice\"\ncreated_at: 2025-07-30T18:26:40.123Z\n"
		   "revision: 2\n---\nskill\n");
	EXPECT_OK(OPS->remove(t->s, "../../etc/x", &removed));
	EXPECT_OK(OPS->remove(t->s, "a/b", &removed));
	EXPECT_OK(OPS->remove(t->s, "..", &removed));
	EXPECT_STR(dir_list(t),
		   "skill--%2Fabs.md,skill--%41.md,skill--.hidden.md,skill--a%252%46b.md,"
		   "skill--a.md,skill--x%0Ay.md");
	/* Reconciling agrees with these names: it keeps every one. */
	if (open_mirrored(t) != 0)
		return;
	EXPECT_STR(dir_list(t),
		   "skill--%2Fabs.md,skill--%41.md,skill--.hidden.md,skill--a%252%46b.md,"
		   "skill--a.md,skill--x%0Ay.md");
}

static void test_mirror_cuts_a_long_id_and_hashes_it(tctx *t)
{
	char id[301];
	int removed;
	memset(id, 'Z', 300);
	id[300] = '\0';
	a2m_record r = skill(id, NULL, "skill");
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &r));
	const char *names = dir_list(t);
	/* "skill--", 40 escapes of 'Z' (120 bytes), '~', 16 hex digits, ".md" */
	EXPECT_INT(strlen(names), 7 + 120 + 17 + 3);
	EXPECT(strncmp(names, "skill--%5A%5A%5A", 16) == 0);
	EXPECT_INT(names[127], '~');
	EXPECT_INT(strspn(names + 128, "0123456789abcdef"), 16);
	EXPECT_STR(names + 144, ".md");
	if (open_mirrored(t) != 0)                     /* reconciling keeps it */
		return;
	EXPECT_INT(strlen(dir_list(t)), 147);
	EXPECT_OK(OPS->remove(t->s, id, &removed));
	EXPECT_STR(dir_list(t), "");
}

static void test_mirror_leaves_file_alone_when_its_bytes_would_not_change(tctx *t)
{
	a2m_record r = skill("s1", "k", "steps");
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &r));
	ino_t ino = inode_of(t, "k--s1.md");
	EXPECT(ino != 0);
	r.access_count = 9;                 /* bookkeeping a recall does */
	r.accessed_at = 1753900099999LL;
	r.salience = 0.5;
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT(inode_of(t, "k--s1.md") == ino);
	r.revision = 3;                     /* a real change: a new file, renamed in */
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT(inode_of(t, "k--s1.md") != ino);
	EXPECT_STR(dir_list(t), "k--s1.md");
}

static void test_mirror_many_writes_to_one_id_leave_the_last(tctx *t)
{
	a2m_record r = skill("s", NULL, "one two"), gone = skill("g", NULL, "short lived");
	int removed;
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->insert(t->s, &r));
	r.content = "three four";
	EXPECT_OK(OPS->update(t->s, &r));
	r.content = "five six";
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_OK(OPS->insert(t->s, &gone));
	EXPECT_OK(OPS->remove(t->s, "g", &removed));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(dir_list(t), "five-six--s.md");
}

static void test_mirror_reconciles_on_open(tctx *t)
{
	a2m_record a = skill("a", "alpha", "first"), b = skill("b", "beta", "second");
	a2m_record c = make("c", 3);
	char path[512];
	struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->insert(t->s, &b));
	EXPECT_OK(OPS->insert(t->s, &c));
	EXPECT_STR(dir_list(t), "alpha--a.md,beta--b.md");
	const char *b_text = "---\nid: \"b\"\nkey: \"beta\"\nowner: \"alice\"\n"
			     "created_at: 2025-07-30T18:26:40.123Z\nrevision: 2\n---\nsecond\n";
	t->s->ops->close(t->s);
	t->s = NULL;
	/* As a crash or a person might leave it. */
	snprintf(path, sizeof path, "%s/alpha--a.md", t->dir);
	EXPECT_INT(unlink(path), 0);
	EXPECT_INT(write_in_dir(t, "beta--b.md", "edited by hand\n"), 0);
	EXPECT_INT(write_in_dir(t, "gone-skill--zzz.md", "a record that was forgotten\n"), 0);
	EXPECT_INT(write_in_dir(t, "README.md", "not ours\n"), 0);
	EXPECT_INT(write_in_dir(t, ".a2m-tmp-1-1", "a write in progress\n"), 0);
	EXPECT_INT(write_in_dir(t, ".a2m-tmp-2-2", "left by a crash\n"), 0);
	snprintf(path, sizeof path, "%s/.a2m-tmp-2-2", t->dir);
	EXPECT_INT(utimensat(AT_FDCWD, path, old, 0), 0);
	if (open_mirrored(t) != 0)
		return;
	EXPECT_STR(dir_list(t), ".a2m-tmp-1-1,README.md,alpha--a.md,beta--b.md");
	EXPECT_STR(file_of(t, "beta--b.md"), b_text);
	EXPECT_STR(file_of(t, "alpha--a.md"),
		   "---\nid: \"a\"\nkey: \"alpha\"\nowner: \"alice\"\n"
		   "created_at: 2025-07-30T18:26:40.123Z\nrevision: 2\n---\nfirst\n");
	EXPECT_STR(file_of(t, "README.md"), "not ours\n");
}

/* A store with no record in the tier at all, beside a directory that still
** holds a mirror file (its database was removed, say): the stale file goes,
** and the empty list of names is never searched (bsearch on a NULL array is
** undefined: UBSan's nonnull-attribute, found by fuzz/fuzz_message.c). */
static void test_mirror_reconciles_an_empty_tier(tctx *t)
{
	if (open_mirrored(t) != 0)
		return;
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(mkdir(t->dir, 0755), 0);
	EXPECT_INT(write_in_dir(t, "gone-skill--zzz.md", "a record that was forgotten\n"), 0);
	EXPECT_INT(write_in_dir(t, "README.md", "not ours\n"), 0);
	if (open_mirrored(t) != 0)
		return;
	EXPECT_STR(dir_list(t), "README.md");
}

static void test_mirror_failure_after_commit_keeps_the_commit_and_heals(tctx *t)
{
	a2m_record r = skill("s1", "k", "steps"), *got = NULL;
	char err[256] = "";
	if (open_mirrored(t) != 0)
		return;
	/* A file where the directory should be: every file write fails. */
	FILE *f = fopen(t->dir, "w");
	EXPECT(f != NULL);
	fclose(f);
	EXPECT_OK(OPS->insert(t->s, &r));              /* the commit happened: 0 */
	EXPECT_INT(t->s->mirror_failures, 1);
	EXPECT(strstr(t->s->errmsg, "procedural mirror") != NULL);
	EXPECT_OK(OPS->get(t->s, "s1", &got));
	EXPECT_STR(got ? got->content : NULL, "steps");
	a2m_record_free(got);
	/* Once the directory can be made, the next commit reconciles. */
	EXPECT_INT(unlink(t->dir), 0);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(dir_list(t), "k--s1.md");
	EXPECT_INT(t->s->mirror_failures, 1);
	/* Opening fails outright when the directory cannot be reconciled. */
	t->s->ops->close(t->s);
	t->s = NULL;
	remove_dir(t->dir);
	f = fopen(t->dir, "w");
	EXPECT(f != NULL);
	fclose(f);
	a2m_sqlite_options opt = {.procedural_dir = t->dir, .procedural_tier = "procedural"};
	EXPECT(a2m_store_sqlite_open(t->path, &opt, &t->s, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(strstr(err, "procedural mirror") != NULL);
}

static void test_mirror_needs_both_dir_and_tier(tctx *t)
{
	a2m_record r = skill("s1", "k", "steps");
	char err[256] = "";
	a2m_sqlite_options opt = {.procedural_dir = t->dir};
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(a2m_store_sqlite_open(t->path, &opt, &t->s, err, sizeof err), 0);
	EXPECT_OK(OPS->insert(t->s, &r));
	EXPECT_STR(dir_list(t), "<none>");
	t->s->ops->close(t->s);
	t->s = NULL;
	/* NULL options: the defaults, no mirror. */
	EXPECT_INT(a2m_store_sqlite_open(t->path, NULL, &t->s, err, sizeof err), 0);
	EXPECT_INT(count_of(t, &all_q), 1);
	EXPECT_STR(dir_list(t), "<none>");
}

/* ---- read brackets (store.h, read_begin and read_end) ------------------- */

/* Calls an optional op: 0 when the engine has none (memory). */
#define READ_BEGIN(t) ((t)->s->ops->read_begin ? (t)->s->ops->read_begin((t)->s) : 0)
#define READ_END(t)   ((t)->s->ops->read_end ? (t)->s->ops->read_end((t)->s) : 0)

/* A second connection to t's file, as another server process would hold. */
static a2m_store *open_other(tctx *t)
{
	char err[256] = "";
	a2m_store *o = NULL;
	a2m_postgres_options po = {.schema = t->schema};
	int rc = strcmp(t->engine, "postgres") == 0
		? a2m_store_postgres_open(pg_test_server(), &po, &o, err, sizeof err)
		: a2m_store_sqlite_open(t->path, &full_sync, &o, err, sizeof err);
	if (rc != 0)
		snprintf(failure, sizeof failure, "second connection: %s", err);
	return o;
}

/* Runs body with a second connection to t's file, closed afterwards. */
static void with_other(tctx *t, void (*body)(tctx *t, a2m_store *o))
{
	a2m_store *o = open_other(t);
	if (!o)
		return;
	body(t, o);
	o->ops->close(o);
}

static int other_put(a2m_store *o, const char *id, int64_t created_at)
{
	a2m_record r = make(id, created_at);
	return o->ops->insert(o, &r);
}

/* Whether t's store finds id now (-1 when get fails). */
static int has(tctx *t, const char *id)
{
	a2m_record *got = NULL;
	if (t->s->ops->get(t->s, id, &got) != 0)
		return -1;
	a2m_record_free(got);
	return got != NULL;
}

static int count_visit(const a2m_record *r, void *ctx)
{
	(void)r;
	(*(int *)ctx)++;
	return 0;
}

static void snapshot_body(tctx *t, a2m_store *o)
{
	a2m_record b = make("b", 2);
	int visited = 0;
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_INT(has(t, "a"), 1);
	/* Another connection commits while the bracket is open... */
	EXPECT_INT(o->ops->insert(o, &b), 0);
	/* ...and every read in the bracket still sees the file as it was. */
	EXPECT_INT(has(t, "b"), 0);
	EXPECT_INT(count_of(t, &all_q), 1);
	EXPECT_STR(scan_ids(t, &all_q), "a");
	EXPECT_OK(OPS->visit_seqs(t->s, &b.seq, 1, count_visit, &visited));
	EXPECT_INT(visited, 0);
	EXPECT_OK(READ_END(t));
	/* Out of it, the reads see the commit. */
	EXPECT_INT(has(t, "b"), 1);
	EXPECT_INT(count_of(t, &all_q), 2);
	EXPECT_OK(OPS->visit_seqs(t->s, &b.seq, 1, count_visit, &visited));
	EXPECT_INT(visited, 1);
}

static void test_read_bracket_sees_one_snapshot(tctx *t)
{
	with_other(t, snapshot_body);
}

static void test_read_bracket_inside_write_transaction_is_a_no_op(tctx *t)
{
	/* read_end must neither commit the transaction nor end it... */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	EXPECT_INT(has(t, "b"), 1);
	EXPECT_OK(READ_END(t));
	EXPECT_OK(put(t, "c", 3, NULL, NULL));
	OPS->rollback(t->s);
	EXPECT_STR(scan_ids(t, &all_q), "");
	/* ...and commit still works after one. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(READ_END(t));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(scan_ids(t, &all_q), "a");
	EXPECT(OPS->commit(t->s) != 0);  /* no transaction is left open */
}

static void failed_read_body(tctx *t, a2m_store *o)
{
	seen w;
	memset(&w, 0, sizeof w);
	w.abort_at = 1;
	w.abort_code = A2M_INTERNAL_ERROR;
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_INT(OPS->scan(t->s, &all_q, collect, &w), A2M_INTERNAL_ERROR);
	free(w.ids.p);
	EXPECT_OK(READ_END(t));
	/* No snapshot is held any more: another connection's commit is seen. */
	EXPECT_INT(other_put(o, "b", 2), 0);
	EXPECT_INT(has(t, "b"), 1);
	/* And a write transaction opens as usual. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "c", 3, NULL, NULL));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(scan_ids(t, &all_q), "a,b,c");
}

static void test_read_end_after_failed_read_holds_no_snapshot(tctx *t)
{
	with_other(t, failed_read_body);
}

static void begin_in_bracket_body(tctx *t, a2m_store *o)
{
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_INT(has(t, "a"), 1);
	EXPECT_INT(other_put(o, "b", 2), 0);
	EXPECT_INT(has(t, "b"), 0);
	/* A write transaction starts from the newest state, not the snapshot. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_INT(has(t, "b"), 1);
	EXPECT_OK(put(t, "c", 3, NULL, NULL));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(READ_END(t));   /* the bracket ended at begin: a no-op */
	EXPECT_STR(scan_ids(t, &all_q), "a,b,c");
}

static void test_begin_inside_read_bracket_starts_from_newest_state(tctx *t)
{
	with_other(t, begin_in_bracket_body);
}

static void read_only_body(tctx *t, a2m_store *o)
{
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_INT(has(t, "a"), 1);
	EXPECT_INT(other_put(o, "b", 2), 0);
	EXPECT_INT(count_of(t, &all_q), 1);
	EXPECT_OK(READ_END(t));
	EXPECT_INT(count_of(t, &all_q), 2);
	/* A bracket and a read transaction, one after the other. */
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_INT(has(t, "b"), 1);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(READ_END(t));
}

static void test_read_bracket_on_read_only_store(tctx *t)
{
	char err[256] = "";
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(open_read_only(t, err, sizeof err), 0);
	EXPECT(t->s->ops->read_begin != NULL);
	with_other(t, read_only_body);
}

static void own_write_body(tctx *t, a2m_store *o)
{
	a2m_record *got = NULL;
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_INT(has(t, "a"), 1);
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	/* Committed at once, not held back until the bracket ends. */
	EXPECT_INT(o->ops->get(o, "b", &got), 0);
	EXPECT(got != NULL);
	a2m_record_free(got);
	EXPECT_INT(has(t, "b"), 1);
	EXPECT_OK(READ_END(t));
	EXPECT_STR(scan_ids(t, &all_q), "a,b");
}

static void test_write_outside_transaction_inside_bracket_commits_on_its_own(tctx *t)
{
	with_other(t, own_write_body);
}

/*
** The memory engine's bracket tidies the scan order (sorts the out-of-order
** tail, drops trailing tombstones), so that readers in brackets at once
** write nothing: scans inside it see the same order, either way round.
*/
static void test_memory_bracket_tidies_the_scan_order(tctx *t)
{
	a2m_query desc = {.descending = 1};
	EXPECT_OK(put(t, "c", 30, NULL, NULL));
	EXPECT_OK(put(t, "a", 10, NULL, NULL));
	EXPECT_OK(put(t, "d", 40, NULL, NULL));
	EXPECT_OK(put(t, "b", 20, NULL, NULL));
	int removed = 0;
	EXPECT_OK(OPS->remove(t->s, "d", &removed));
	EXPECT_OK(READ_BEGIN(t));
	EXPECT_STR(scan_ids(t, &all_q), "a,b,c");
	EXPECT_STR(scan_ids(t, &desc), "c,b,a");
	EXPECT_INT(count_of(t, &all_q), 3);
	EXPECT_OK(READ_END(t));
}

/* ---- visit_seqs over many seqs ------------------------------------------ */

/* ---- the SQLite engine's row cache (row_cache.h) ---- */

static a2m_record cache_rec(int64_t seq, const char *content)
{
	a2m_record r;
	memset(&r, 0, sizeof r);
	r.seq = seq;
	r.id = strdup("x");
	r.content = strdup(content);
	return r;
}

static void test_row_cache_keeps_evicts_and_forgets(tctx *t)
{
	(void)t;
	a2m_row_cache *c = a2m_row_cache_new(4, 1 << 20);
	EXPECT(c != NULL);
	if (!c)
		return;
	for (int64_t seq = 1; seq <= 5; seq++) {
		char text[16];
		snprintf(text, sizeof text, "row %d", (int)seq);
		a2m_record r = cache_rec(seq, text);
		const a2m_record *kept = a2m_row_cache_take(c, &r);
		EXPECT(kept != NULL && kept->seq == seq && strcmp(kept->content, text) == 0);
		EXPECT(r.content == NULL);  /* moved, not copied */
		a2m_record_clear(&r);
		/* 1 is used again after 3 arrive: 2 is then the least recent. */
		if (seq == 3)
			EXPECT(a2m_row_cache_get(c, 1) != NULL);
	}
	EXPECT_INT(a2m_row_cache_count(c), 4);
	EXPECT(a2m_row_cache_get(c, 2) == NULL);
	const a2m_record *one = a2m_row_cache_get(c, 1);
	EXPECT(one && strcmp(one->content, "row 1") == 0);
	/* A seq already kept is not replaced, and the caller keeps its record. */
	a2m_record again = cache_rec(5, "other");
	EXPECT(a2m_row_cache_take(c, &again) == NULL);
	EXPECT(again.content != NULL);
	a2m_record_clear(&again);
	/* The same version keeps everything, another empties the cache. */
	a2m_row_cache_validate(c, 7);
	EXPECT_INT(a2m_row_cache_count(c), 0);  /* the first version seen */
	a2m_record r = cache_rec(9, "nine");
	EXPECT(a2m_row_cache_take(c, &r) != NULL);
	a2m_row_cache_validate(c, 7);
	EXPECT_INT(a2m_row_cache_count(c), 1);
	a2m_row_cache_validate(c, 8);
	EXPECT_INT(a2m_row_cache_count(c), 0);
	EXPECT(a2m_row_cache_get(c, 9) == NULL);
	a2m_row_cache_free(c);

	/* The byte budget: a record over a quarter of it is not kept, and
	** the oldest go to make room for one that fits. */
	c = a2m_row_cache_new(100, 4096);
	EXPECT(c != NULL);
	if (!c)
		return;
	char big[1500];
	memset(big, 'b', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	a2m_record huge = cache_rec(1, big);
	EXPECT(a2m_row_cache_take(c, &huge) == NULL);
	a2m_record_clear(&huge);
	big[700] = '\0';
	for (int64_t seq = 1; seq <= 8; seq++) {
		a2m_record r2 = cache_rec(seq, big);
		EXPECT(a2m_row_cache_take(c, &r2) != NULL);
		a2m_record_clear(&r2);
	}
	EXPECT(a2m_row_cache_count(c) < 8 && a2m_row_cache_count(c) > 0);
	EXPECT(a2m_row_cache_get(c, 8) != NULL);
	EXPECT(a2m_row_cache_get(c, 1) == NULL);
	a2m_row_cache_free(c);
}

/* The content visit_seqs gives for seq, inside a read bracket. */
static char visited_text[64];
static int remember_content(const a2m_record *r, void *ctx)
{
	(void)ctx;
	snprintf(visited_text, sizeof visited_text, "%s/%lld", r->content ? r->content : "",
		 (long long)r->access_count);
	return 0;
}

static const char *bracket_read(tctx *t, int64_t seq)
{
	visited_text[0] = '\0';
	if (READ_BEGIN(t) != 0)
		return "(read_begin failed)";
	int rc = OPS->visit_seqs(t->s, &seq, 1, remember_content, NULL);
	OPS->read_end(t->s);
	return rc ? "(visit failed)" : visited_text;
}

static void rows_body(tctx *t, a2m_store *o)
{
	a2m_record a = make("a", 1), b = make("b", 2);
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->insert(t->s, &b));
	/* Read twice: the second comes from the cache, and is the same. */
	EXPECT_STR(bracket_read(t, a.seq), "content/0");
	EXPECT_STR(bracket_read(t, a.seq), "content/0");
	/* This connection's own update, touch and removal are seen... */
	a.content = "changed here";
	EXPECT_OK(OPS->update(t->s, &a));
	EXPECT_STR(bracket_read(t, a.seq), "changed here/0");
	EXPECT_OK(OPS->touch(t->s, a.seq, 3, 5));
	EXPECT_STR(bracket_read(t, a.seq), "changed here/3");
	/* ...in a transaction only once it commits, never after a rollback. */
	EXPECT_OK(OPS->begin(t->s));
	a.content = "rolled back";
	EXPECT_OK(OPS->update(t->s, &a));
	OPS->rollback(t->s);
	EXPECT_STR(bracket_read(t, a.seq), "changed here/3");
	/* Another connection's commit, then one of this connection's that
	** leaves a alone: a is read anew, not kept from before the other's. */
	EXPECT_STR(bracket_read(t, a.seq), "changed here/3");
	a.content = "changed there first";
	EXPECT_INT(o->ops->update(o, &a), 0);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->touch(t->s, b.seq, 2, 9));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(bracket_read(t, a.seq), "changed there first/0");
	EXPECT_STR(bracket_read(t, b.seq), "content/2");
	/* ...and so is another connection's own. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->touch(t->s, b.seq, -2, 9));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(bracket_read(t, b.seq), "content/0");
	/* A touch rolled back is not left in the kept copy. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->touch(t->s, b.seq, 5, 9));
	OPS->rollback(t->s);
	EXPECT_STR(bracket_read(t, b.seq), "content/0");
	b.content = "changed there";
	EXPECT_INT(o->ops->update(o, &b), 0);
	EXPECT_STR(bracket_read(t, b.seq), "changed there/0");
	int removed = 0;
	EXPECT_INT(o->ops->remove(o, "b", &removed), 0);
	EXPECT_STR(bracket_read(t, b.seq), "");
}

static void test_visit_seqs_through_the_row_cache_sees_every_commit(tctx *t)
{
	with_other(t, rows_body);
}

static void test_visit_seqs_many_in_given_order_skipping_missing(tctx *t)
{
	char id[16];
	int64_t seq[40], want_seqs[43];
	size_t n = 0;
	sbuf want = {0};
	seen w;
	for (int i = 0; i < 40; i++) {
		snprintf(id, sizeof id, "r%02d", i);
		a2m_record r = make(id, i);
		EXPECT_OK(OPS->insert(t->s, &r));
		seq[i] = r.seq;
	}
	/* Newest first, a seq of no record and a repeat in the middle. */
	sb_add(&want, "%s", "");
	for (int i = 39; i >= 0; i--) {
		want_seqs[n++] = seq[i];
		sb_add(&want, "%sr%02d", i == 39 ? "" : ",", i);
		if (i == 30)
			want_seqs[n++] = seq[39] + 1000;
		if (i == 20) {
			want_seqs[n++] = seq[25];
			sb_add(&want, ",r25");
		}
	}
	memset(&w, 0, sizeof w);
	EXPECT_OK(OPS->visit_seqs(t->s, want_seqs, n, collect, &w));
	EXPECT_STR(w.ids.p, want.p);
	free(want.p);
	free(w.ids.p);
	/* A stop in a later batch: nothing after it is visited. */
	memset(&w, 0, sizeof w);
	w.stop_at = 20;
	EXPECT_OK(OPS->visit_seqs(t->s, want_seqs, n, collect, &w));
	free(w.ids.p);
	EXPECT_INT(w.n, 20);
	memset(&w, 0, sizeof w);
	w.abort_at = 18;
	w.abort_code = A2M_INTERNAL_ERROR;
	EXPECT_INT(OPS->visit_seqs(t->s, want_seqs, n, collect, &w), A2M_INTERNAL_ERROR);
	free(w.ids.p);
	EXPECT_INT(w.n, 18);
}

/* ---- narrow writes: move, and the stamp (store.h) --------------------- */

/* Moves the record id as get() reads it, naming it by tier and session as read. */
static int move_as_read(tctx *t, const char *id, const char *tier, const char *session,
			const char *to, double salience, int *moved)
{
	a2m_record *rec = NULL;
	*moved = -1;
	int rc = OPS->get(t->s, id, &rec);
	if (rc || !rec)
		return rc ? rc : A2M_UNKNOWN_RECORD;
	free(rec->tier);
	free(rec->session);
	rec->tier = tier ? strdup(tier) : NULL;
	rec->session = session ? strdup(session) : NULL;
	rc = OPS->move(t->s, rec, to, salience, moved);
	a2m_record_free(rec);
	return rc;
}

/*
** A move changes the tier and the salience and nothing else, only when the
** record is in the bucket it is named by (tier and session), on its own and
** in a transaction (a record inserted in it too), and a rollback undoes it;
** the counts follow every step. What a2m_store_move_whole did on every
** engine before the narrow ones (SQLite, PostgreSQL) came.
*/
static void test_move_changes_tier_and_salience_only(tctx *t)
{
	a2m_record want = full_record("full"), *got = NULL;
	int moved = -1;
	want.tier = "working";
	want.session = "s1";
	EXPECT_OK(OPS->insert(t->s, &want));
	EXPECT_OK(put_in(t, "b", 2, "working", NULL));
	EXPECT_STR(working_counts(t), "2 1 1 1 0");
	EXPECT_OK(move_as_read(t, "full", "working", "s1", "episodic", 0.25, &moved));
	EXPECT_INT(moved, 1);
	want.tier = "episodic";
	want.salience = 0.25;
	EXPECT_OK(OPS->get(t->s, "full", &got));
	EXPECT_SAME(got, &want);
	a2m_record_free(got);
	EXPECT_STR(working_counts(t), "1 0 1 1 1");
	/* Named by a bucket it is not in: nothing moves. */
	EXPECT_OK(move_as_read(t, "full", "working", "s1", "semantic", 0.5, &moved));
	EXPECT_INT(moved, 0);
	EXPECT_OK(move_as_read(t, "full", "episodic", "s2", "semantic", 0.5, &moved));
	EXPECT_INT(moved, 0);
	EXPECT_OK(move_as_read(t, "full", "episodic", NULL, "semantic", 0.5, &moved));
	EXPECT_INT(moved, 0);
	EXPECT_OK(move_as_read(t, "b", "working", "s1", "semantic", 0.5, &moved));
	EXPECT_INT(moved, 0);
	EXPECT_OK(OPS->get(t->s, "full", &got));
	EXPECT_SAME(got, &want);
	a2m_record_free(got);
	EXPECT_STR(working_counts(t), "1 0 1 1 1");
	/* Rolled back: b is where it was. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_as_read(t, "b", "working", NULL, "episodic", 0.5, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_STR(working_counts(t), "0 0 0 1 2");
	OPS->rollback(t->s);
	EXPECT_STR(working_counts(t), "1 0 1 1 1");
	/* In a transaction: a record inserted in it, then to no tier at all. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put_in(t, "c", 3, "working", "s1"));
	EXPECT_OK(move_as_read(t, "c", "working", "s1", "episodic", 0.125, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_OK(move_as_read(t, "b", "working", NULL, NULL, 0.5, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(working_counts(t), "0 0 0 2 2");
	EXPECT_INT(count_of(t, &all_q), 3);
	EXPECT_OK(OPS->get(t->s, "c", &got));
	EXPECT(got != NULL);
	EXPECT_STR(got->tier, "episodic");
	EXPECT(got->salience == 0.125);
	EXPECT_STR(got->session, "s1");
	a2m_record_free(got);
	EXPECT_OK(OPS->get(t->s, "b", &got));
	EXPECT(got != NULL);
	EXPECT_STR(got->tier, NULL);
	a2m_record_free(got);
}

/*
** A move inside a transaction with other writes of the same records around
** it (an update before and after, a touch, a remove) is undone with them,
** in order: every record back exactly, its tier's scan and counts too.
** Outside one, the move of the last record of a tier and session leaves
** the record whole. (The memory engine moves an entry in place and
** journals its names and salience, memory_narrow.c.)
*/
static void test_move_with_writes_around_it_rolls_back_whole(tctx *t)
{
	a2m_record full = full_record("full"), *got = NULL;
	int moved = -1, removed = -1;
	full.tier = "working";
	full.session = "s1";
	EXPECT_OK(OPS->insert(t->s, &full));
	EXPECT_OK(put_in(t, "b", 2, "working", NULL));
	EXPECT_OK(put_in(t, "c", 3, "episodic", "s1"));
	EXPECT_STR(working_counts(t), "2 1 1 2 1");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(move_as_read(t, "full", "working", "s1", "episodic", 0.25, &moved));
	EXPECT_INT(moved, 1);
	a2m_record changed = full;
	changed.tier = "episodic";
	changed.salience = 0.25;
	changed.content = "changed after the move";
	EXPECT_OK(OPS->update(t->s, &changed));
	EXPECT_OK(move_as_read(t, "full", "episodic", "s1", "semantic", 0.5, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_OK(OPS->touch(t->s, full.seq, 2, 1753900200000LL));
	EXPECT_OK(move_as_read(t, "b", "working", NULL, "episodic", 0.5, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_OK(OPS->remove(t->s, "b", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_OK(move_as_read(t, "c", "episodic", "s1", "working", 0.125, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_STR(working_counts(t), "1 1 0 2 0");
	EXPECT_OK(OPS->get(t->s, "full", &got));
	EXPECT(got != NULL);
	EXPECT_STR(got ? got->tier : "", "semantic");
	EXPECT_STR(got ? got->content : "", "changed after the move");
	a2m_record_free(got);
	OPS->rollback(t->s);
	EXPECT_STR(working_counts(t), "2 1 1 2 1");
	EXPECT_OK(OPS->get(t->s, "full", &got));
	EXPECT_SAME(got, &full);
	a2m_record_free(got);
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "working"}), "b,full");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "episodic"}), "c");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "semantic"}), "");
	/* The last record of (episodic, s1) leaves it, outside a transaction. */
	EXPECT_OK(move_as_read(t, "c", "episodic", "s1", "procedural", 0.5, &moved));
	EXPECT_INT(moved, 1);
	EXPECT_OK(OPS->get(t->s, "c", &got));
	EXPECT(got != NULL);
	EXPECT_STR(got ? got->tier : "", "procedural");
	EXPECT_STR(got ? got->session : "", "s1");
	EXPECT_STR(got ? got->id : "", "c");
	a2m_record_free(got);
	EXPECT_STR(working_counts(t), "2 1 1 2 0");
	EXPECT_STR(scan_ids(t, &(a2m_query){.tier = "procedural"}), "c");
}

/* The store's stamp; 0 and a failure when the engine keeps none. */
static uint64_t stamp_of(tctx *t)
{
	if (!OPS->stamp) {
		snprintf(failure, sizeof failure, "the %s engine has no stamp", t->engine);
		return 0;
	}
	return OPS->stamp(t->s);
}

/*
** The stamp moves at every write of a record (insert, update, touch, move,
** remove) and at a rollback, and stays at a begin and this store's own
** commit (store.h, stamp): what capacity's rosters rely on (stack/roster.c).
*/
static void test_stamp_moves_at_every_write_and_rollback(tctx *t)
{
	a2m_record a = make("a", 1);
	int moved = 0, removed = 0;
	uint64_t v;
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->begin(t->s));
	v = stamp_of(t);
	EXPECT(!failure[0]);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT(stamp_of(t) == v);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT(stamp_of(t) == v);
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	EXPECT(stamp_of(t) != v);
	v = stamp_of(t);
	a.content = "changed";
	EXPECT_OK(OPS->update(t->s, &a));
	EXPECT(stamp_of(t) != v);
	v = stamp_of(t);
	EXPECT_OK(OPS->touch(t->s, a.seq, 1, 5));
	EXPECT(stamp_of(t) != v);
	v = stamp_of(t);
	EXPECT_OK(move_as_read(t, "a", NULL, NULL, "episodic", 0.5, &moved));
	EXPECT_INT(moved, 1);
	EXPECT(stamp_of(t) != v);
	v = stamp_of(t);
	EXPECT_OK(OPS->remove(t->s, "b", &removed));
	EXPECT(stamp_of(t) != v);
	v = stamp_of(t);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT(stamp_of(t) == v);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT(stamp_of(t) == v);
	EXPECT_OK(move_as_read(t, "a", "episodic", NULL, "semantic", 0.5, &moved));
	v = stamp_of(t);
	OPS->rollback(t->s);
	EXPECT(stamp_of(t) != v);
}

/*
** Another writer's commit (SQLite: a second connection to the file;
** PostgreSQL: another server on the schema) moves the stamp at this
** store's next begin; a begin after none leaves it.
*/
static void test_stamp_moves_when_another_writer_committed(tctx *t)
{
	uint64_t v;
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	EXPECT_OK(OPS->begin(t->s));
	v = stamp_of(t);
	EXPECT(!failure[0]);
	EXPECT_OK(OPS->commit(t->s));
	a2m_store *o = open_other(t);
	if (!o)
		return;
	int rc = other_put(o, "b", 2);
	o->ops->close(o);
	EXPECT_INT(rc, 0);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT(stamp_of(t) != v);
	v = stamp_of(t);
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT(stamp_of(t) == v);
	EXPECT_OK(OPS->commit(t->s));
}

int main(void)
{
	umask(022);   /* the mirror's modes are checked exactly */
	if (!pg_test_server())
		printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
	RUN(test_insert_assigns_increasing_seq);
	RUN(test_insert_duplicate_id_refused);
	RUN(test_insert_without_id_or_content_refused);
	RUN(test_get_missing_returns_null);
	RUN(test_get_returns_independent_copy);
	RUN(test_roundtrip_every_field);
	RUN(test_roundtrip_absent_fields_stay_null);
	RUN(test_generated_vector_roundtrips_apart_from_callers);
	RUN(test_large_content_roundtrips);
	RUN(test_long_ids_roundtrip_through_every_read);
	RUN(test_update_replaces_every_field_keeps_seq);
	RUN(test_update_unknown_id_returns_unknown_record);
	RUN(test_update_to_taken_key_refused);
	RUN(test_update_moves_key);
	RUN(test_remove_reports_whether_removed);
	RUN(test_seq_never_reused_after_remove);
	RUN(test_key_unique_per_owner);
	RUN(test_null_owner_distinct_from_empty_owner);
	RUN(test_same_ms_records_scan_in_insert_order);
	RUN(test_scan_orders_by_created_at_then_seq);
	RUN(test_scan_orders_records_inserted_out_of_order);
	RUN(test_out_of_order_records_can_be_removed_and_moved);
	RUN(test_scan_descending_stops_early);
	RUN(test_scan_ascending_stops_early);
	RUN(test_scan_negative_visit_aborts_with_its_code);
	RUN(test_scan_filters_by_tier_owner_session_group);
	RUN(test_key_prefix_with_percent_and_underscore);
	RUN(test_key_prefix_is_bytewise_utf8);
	RUN(test_counts_and_group_scans_follow_writes_and_rollback);
	RUN(test_counts_follow_inserts_refusals_and_rollback_in_transaction);
	RUN(test_counts_right_over_many_buckets_in_one_transaction);
	RUN(test_key_prefix_of_0xff_bytes);
	RUN(test_key_prefix_empty_selects_every_keyed_record);
	RUN(test_count_matches_scan);
	RUN(test_commit_keeps_writes);
	RUN(test_rollback_discards_insert);
	RUN(test_rollback_restores_updated_record);
	RUN(test_rollback_restores_removed_record);
	RUN(test_rollback_restores_exact_state);
	RUN(test_begin_inside_transaction_refused);
	RUN(test_commit_without_transaction_fails);
	RUN(test_autocommit_writes_survive_later_rollback);
	RUN_MEMORY(test_refused_insert_inside_transaction_keeps_it_open);
	RUN(test_transaction_reads_its_many_inserts_before_and_after_commit);
	RUN(test_each_read_sees_the_insert_before_it);
	RUN(test_many_inserts_keep_every_field);
	RUN(test_many_inserts_with_a_taken_id_or_key_refused_whole);
	RUN(test_rollback_discards_many_inserts);
	RUN_SQLITE(test_sqlite_commit_after_a_refused_row_fails_and_keeps_nothing);
	RUN(test_get_of_many_inserts_in_their_transaction);
	RUN_POSTGRES(test_pg_get_of_an_id_not_held_writes_nothing);
	RUN(test_update_and_remove_of_many_inserts_in_their_transaction);
	RUN(test_many_removes_keep_order_and_lookups);
	RUN(test_random_removes_keep_lookups_by_id_and_seq);
	RUN(test_rollback_after_many_removes_restores_all);
	RUN(test_remove_current_record_inside_visit);
	run("test_scan_visits_each_record_once_while_callback_writes",
	    test_scan_visits_each_record_once_while_callback_writes, MEMORY_ONLY | 4);
	RUN_DURABLE(test_reopen_finds_committed_records);
	RUN_SQLITE(test_seq_not_reused_after_removing_newest_across_reopen);
	RUN_DURABLE(test_uncommitted_transaction_lost_on_reopen);
	RUN_SQLITE(test_refuses_newer_schema_version);
	RUN_SQLITE(test_file_is_wal_at_schema_version_13);
	RUN_SQLITE(test_open_refuses_non_database_file);
	RUN(test_meta_unset_name_reads_null);
	RUN(test_meta_set_overwrite_and_delete);
	RUN(test_meta_null_name_refused);
	RUN(test_meta_is_not_a_record);
	RUN(test_meta_commit_keeps_values);
	RUN(test_meta_rollback_restores_previous_values);
	RUN_DURABLE(test_meta_survives_reopen);
	RUN_SQLITE(test_migrates_version_1_file_forward);
	RUN_SQLITE(test_migrates_version_3_file_with_counts);
	RUN_SQLITE(test_migrates_version_7_file_keeping_seqs_counts_and_keys);
	RUN_SQLITE(test_migrates_version_9_file_to_the_counts_tail);
	RUN_SQLITE(test_migrates_version_11_file_to_tier_keys);
	RUN_SQLITE(test_sqlite_moves_are_counted_without_the_trigger);
	RUN_DURABLE(test_read_only_refuses_writes_and_still_reads);
	RUN_SQLITE(test_read_only_open_of_missing_file_fails_and_creates_nothing);
	RUN_SQLITE(test_read_only_refuses_file_without_a2m_schema);
	RUN_SQLITE(test_read_only_refuses_older_schema_without_migrating);
	RUN_SQLITE(test_read_only_reads_a_version_11_file_as_it_is);
	RUN_SQLITE(test_read_only_refuses_newer_schema);
	RUN_SQLITE(test_mirror_file_appears_after_commit_with_name_and_content);
	RUN_SQLITE(test_mirror_names_files_by_key_or_first_words);
	RUN_SQLITE(test_mirror_front_matter_quotes_what_it_holds);
	RUN_SQLITE(test_mirror_writes_nothing_on_rollback);
	RUN_SQLITE(test_mirror_renames_file_when_content_changes_its_name);
	RUN_SQLITE(test_mirror_removes_file_on_forget);
	RUN_SQLITE(test_mirror_removes_file_when_record_leaves_tier);
	RUN_SQLITE(test_mirror_keeps_hostile_ids_inside_its_directory);
	RUN_SQLITE(test_mirror_cuts_a_long_id_and_hashes_it);
	RUN_SQLITE(test_mirror_leaves_file_alone_when_its_bytes_would_not_change);
	RUN_SQLITE(test_mirror_many_writes_to_one_id_leave_the_last);
	RUN_SQLITE(test_mirror_reconciles_on_open);
	RUN_SQLITE(test_mirror_reconciles_an_empty_tier);
	RUN_SQLITE(test_mirror_failure_after_commit_keeps_the_commit_and_heals);
	RUN_SQLITE(test_mirror_needs_both_dir_and_tier);
	RUN_DURABLE(test_read_bracket_sees_one_snapshot);
	RUN(test_read_bracket_inside_write_transaction_is_a_no_op);
	RUN_DURABLE(test_read_end_after_failed_read_holds_no_snapshot);
	RUN_DURABLE(test_begin_inside_read_bracket_starts_from_newest_state);
	RUN_DURABLE(test_read_bracket_on_read_only_store);
	RUN_DURABLE(test_write_outside_transaction_inside_bracket_commits_on_its_own);
	RUN_MEMORY(test_memory_bracket_tidies_the_scan_order);
	RUN(test_visit_seqs_many_in_given_order_skipping_missing);
	RUN_MEMORY(test_row_cache_keeps_evicts_and_forgets);
	RUN_SQLITE(test_visit_seqs_through_the_row_cache_sees_every_commit);
	RUN(test_move_changes_tier_and_salience_only);
	RUN(test_move_with_writes_around_it_rolls_back_whole);
	RUN(test_stamp_moves_at_every_write_and_rollback);
	RUN_DURABLE(test_stamp_moves_when_another_writer_committed);

	free(last_ids.p);
	free(dir_buf.p);
	free(file_buf.p);
	char schema[64];
	snprintf(schema, sizeof schema, "a2m_ts_%d", (int)getpid());
	pg_test_schema_drop(schema);
	printf("%d passed, %d failed\n", n_passed, n_failed);
	return n_failed ? 1 : 0;
}
