/*
** store_records.h — what the storage seam's rules (tests/test_store_*.c)
** share beside the harness: records made and compared, what a scan saw,
** dumps, the SQLite file read raw, counts by tier and session against
** brute force, the settings, and a second connection (header-only).
*/
#ifndef A2M_TEST_STORE_RECORDS_H
#define A2M_TEST_STORE_RECORDS_H

#include "store_harness.h"

/* Runs sql on the file behind t's (closed) store. */
static inline int raw_exec(tctx *t, const char *sql)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open(t->path, &db);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

/* The first column of sql's first row as text into buf, or "" */
static inline int raw_query(tctx *t, const char *sql, char *buf, size_t len)
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
static inline const char *schema_versions(tctx *t)
{
	static char buf[64];
	if (raw_query(t, "SELECT group_concat(version) FROM a2m_schema", buf,
		      sizeof buf) != SQLITE_OK)
		snprintf(buf, sizeof buf, "<unreadable>");
	return buf;
}

/* ---- records and what a scan saw --------------------------------------- */

/* A record with only the required fields; strings are borrowed literals. */
static inline a2m_record make(const char *id, int64_t created_at)
{
	a2m_record r;
	memset(&r, 0, sizeof r);
	r.id = (char *)id;
	r.content = "content";
	r.created_at = created_at;
	return r;
}

static inline int put(tctx *t, const char *id, int64_t created_at, const char *owner,
	       const char *key)
{
	a2m_record r = make(id, created_at);
	r.owner = (char *)owner;
	r.key = (char *)key;
	return t->s->ops->insert(t->s, &r);
}

/* NULL when a and b hold the same value in every field, else the field's name. */
static inline const char *record_diff(const a2m_record *a, const a2m_record *b)
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

static inline void sb_add(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void sb_add(sbuf *b, const char *fmt, ...)
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

static inline int collect(const a2m_record *r, void *ctx)
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
static inline const char *scan_ids(tctx *t, const a2m_query *q)
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
static inline const char *first_id(tctx *t, const a2m_query *q)
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

static inline int64_t count_of(tctx *t, const a2m_query *q)
{
	int64_t n = -1;
	if (t->s->ops->count(t->s, q, &n) != 0)
		return -1;
	return n;
}

static const a2m_query all_q;  /* selects everything, oldest first */

/* The columns of records_tier in t's file, comma-separated; an expression is "<expr>". */
static inline const char *tier_index_columns(tctx *t)
{
	static char buf[96];
	if (raw_query(t, "SELECT group_concat(ifnull(name, '<expr>'))"
		      " FROM pragma_index_info('records_tier')",
		      buf, sizeof buf) != SQLITE_OK)
		snprintf(buf, sizeof buf, "<query failed>");
	return buf;
}
static const a2m_sqlite_options full_sync = {.synchronous_full = 1};

static inline void dump_record(sbuf *b, const a2m_record *r)
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

static inline int dump_visit(const a2m_record *r, void *ctx)
{
	dump_record(ctx, r);
	return 0;
}

/* Every field of every record, in scan order. The caller frees the string. */
static inline char *dump(tctx *t)
{
	sbuf b = {0};
	sb_add(&b, "%s", "");
	if (t->s->ops->scan(t->s, &all_q, dump_visit, &b) != 0)
		sb_add(&b, "<scan failed: %s>", t->s->errmsg);
	return b.p;
}

/* Whether the store's dump() is before (which this frees). */
static inline int same_as_dump(tctx *t, char *before)
{
	char *after = dump(t);
	int same = strcmp(before, after) == 0;
	free(before);
	free(after);
	return same;
}

/* A record with every field set, the embedding holding awkward doubles. */
static double awkward[8];

static inline a2m_record full_record(const char *id)
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

/* Copies of every record, oldest first, for the brute-force answers below. */
typedef struct rec_list {
	a2m_record **v;
	size_t       n, cap;
} rec_list;

static inline int keep_copy(const a2m_record *r, void *ctx)
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
static inline int check_groups(tctx *t, const char *when)
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

/* A record in tier and session (either may be NULL), created at created_at. */
static inline int put_in(tctx *t, const char *id, int64_t created_at, const char *tier,
		  const char *session)
{
	a2m_record r = make(id, created_at);
	r.tier = (char *)tier;
	r.session = (char *)session;
	return t->s->ops->insert(t->s, &r);
}

/* The counts of tier "working": all, session s1, no session; of session s1; of "episodic". */
static inline const char *working_counts(tctx *t)
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

/* meta_get's answer as a string: the value, "<unset>", or "<failed N>". */
static char meta_buf[256];

static inline const char *meta_of(tctx *t, const char *name)
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

/* Opens t's file read-only (options otherwise as given) into t->s. */
static inline int open_read_only(tctx *t, char *err, size_t errlen)
{
	if (strcmp(t->engine, "postgres") == 0) {
		a2m_postgres_options po = {.read_only = 1, .schema = t->schema};
		return a2m_store_postgres_open(pg_test_server(), &po, &t->s, err, errlen);
	}
	a2m_sqlite_options opt = {.synchronous_full = 1, .read_only = 1,
				  .procedural_dir = t->dir, .procedural_tier = "procedural"};
	return a2m_store_sqlite_open(t->path, &opt, &t->s, err, errlen);
}

/* Calls an optional op: 0 when the engine has none (memory). */
#define READ_BEGIN(t) ((t)->s->ops->read_begin ? (t)->s->ops->read_begin((t)->s) : 0)
#define READ_END(t)   ((t)->s->ops->read_end ? (t)->s->ops->read_end((t)->s) : 0)

/* A second connection to t's file, as another server process would hold. */
static inline a2m_store *open_other(tctx *t)
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
static inline void with_other(tctx *t, void (*body)(tctx *t, a2m_store *o))
{
	a2m_store *o = open_other(t);
	if (!o)
		return;
	body(t, o);
	o->ops->close(o);
}

static inline int other_put(a2m_store *o, const char *id, int64_t created_at)
{
	a2m_record r = make(id, created_at);
	return o->ops->insert(o, &r);
}

/* Whether t's store finds id now (-1 when get fails). */
static inline int has(tctx *t, const char *id)
{
	a2m_record *got = NULL;
	if (t->s->ops->get(t->s, id, &got) != 0)
		return -1;
	a2m_record_free(got);
	return got != NULL;
}

static inline int count_visit(const a2m_record *r, void *ctx)
{
	(void)r;
	(*(int *)ctx)++;
	return 0;
}

/* After the rules: frees what the helpers kept, then store_harness_end(). */
static inline int store_records_done(void)
{
	free(last_ids.p);
	return store_harness_end();
}

#endif
