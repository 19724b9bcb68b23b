/*
** sqlite_index.c — the SQLite engine's term index (see sqlite_index.h).
**
** Postings are not written as each record is: they wait in a buffer until
** the transaction commits (or something reads the index), and are then
** grouped by term, put in (term, seq) order and written as one new segment
** (sqlite_index_flush.c; the segments are sqlite_segments.c's):
** rows of ~900 bytes, each a block of terms with their postings, appended
** at the end of the segments' b-tree, instead of a row per posting
** scattered over every leaf of a table clustered by term, which made the
** index dominate the cost of a write.
*/
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postings_cache.h"
#include "store/sqlite_index_internal.h"
#include "util/phase.h"

/* Bump when the tables' layout changes: the index is then rebuilt. */
#define INDEX_LAYOUT "postings/7"
/*
** The layout before a2m_segments was a rowid table (sqlite_segments.h):
** the same rows in a WITHOUT ROWID table. A read-write open moves them
** into the rowid table (move_segments; so do the two below) and names the
** file postings/7; a read-only open reads the old table as it is.
*/
#define INDEX_LAYOUT_KEYED "postings/6"
/*
** The layout before skip tables (sqlite_segments_skip.c): its lists are
** all plain, which this layout's readers take as they are. Taken as it
** is; a read-write open names it postings/7, so that an older build, which
** would misread the skip tables of the segments written from then on,
** rebuilds the index instead.
*/
#define INDEX_LAYOUT_UNSKIPPED "postings/5"
/*
** The layout before the tail (sqlite_index_tail.c), the same tables with
** every record indexed: taken as it is, its mark set to the last record.
*/
#define INDEX_LAYOUT_UNTAILED "postings/4"
_Static_assert(sizeof INDEX_LAYOUT == sizeof INDEX_LAYOUT_UNTAILED &&
	       sizeof INDEX_LAYOUT == sizeof INDEX_LAYOUT_UNSKIPPED &&
	       sizeof INDEX_LAYOUT == sizeof INDEX_LAYOUT_KEYED,
	       "layout_upgrade writes one name over the other");
#define META_NAME    "index"

/*
** A commit writes the buffer out as a segment once the tail would hold
** this many postings or records (else it leaves the postings there).
*/
#define TAIL_MAX_POSTINGS 4096
#define TAIL_MAX_RECORDS  512

#define SQL_CREATE \
	A2M_SEGMENTS_CREATE \
	"CREATE TABLE a2m_index_stats(docs INTEGER NOT NULL, total_len INTEGER NOT NULL," \
	" unindexed INTEGER NOT NULL);" \
	"INSERT INTO a2m_index_stats VALUES(0, 0, 0);"

/* Flush during a rebuild once this many postings wait. */
#define REBUILD_FLUSH 200000

#ifdef A2M_TEST_HOOKS
/* a2m_sqlite_index_rebuild_flush_for_tests: 0 = REBUILD_FLUSH. */
static size_t rebuild_flush_for_tests;

void a2m_sqlite_index_rebuild_flush_for_tests(size_t postings)
{
	rebuild_flush_for_tests = postings;
}
#else
#define rebuild_flush_for_tests ((size_t)0)  /* the release library has no test hooks */
#endif


#ifdef A2M_TEST_HOOKS
/* a2m_sqlite_index_tail_for_tests: 0 = TAIL_MAX_RECORDS. */
static size_t tail_for_tests;

void a2m_sqlite_index_tail_for_tests(size_t records)
{
	tail_for_tests = records;
}
#else
#define tail_for_tests ((size_t)0)
#endif

static int fail(sqlite3 *db, a2m_store *base, const char *op)
{
	return a2m_store_fail(base, "index %s: %s", op, sqlite3_errmsg(db));
}

static int exec(sqlite3 *db, a2m_store *base, const char *sql, const char *op)
{
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		a2m_store_fail(base, "index %s: %s", op, msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		return A2M_INTERNAL_ERROR;
	}
	return 0;
}

static void reset(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

char *a2m_sqlite_index_version(const a2m_indexer *ix)
{
	size_t n = strlen(INDEX_LAYOUT) + strlen(ix->version) + 2;
	char *v = malloc(n);
	if (v)
		snprintf(v, n, "%s|%s", INDEX_LAYOUT, ix->version);
	return v;
}

int a2m_sqlite_index_version_ok(const a2m_indexer *ix, const char *have)
{
	const char *bar = have ? strchr(have, '|') : NULL;
	if (!bar || strcmp(bar + 1, ix->version) != 0)
		return 0;
	size_t n = (size_t)(bar - have);
	if (n == strlen(INDEX_LAYOUT) && memcmp(have, INDEX_LAYOUT, n) == 0)
		return 1;
	if (n == strlen(INDEX_LAYOUT_UNTAILED) && memcmp(have, INDEX_LAYOUT_UNTAILED, n) == 0)
		return 2;
	if (n == strlen(INDEX_LAYOUT_UNSKIPPED) && memcmp(have, INDEX_LAYOUT_UNSKIPPED, n) == 0)
		return 3;
	if (n == strlen(INDEX_LAYOUT_KEYED) && memcmp(have, INDEX_LAYOUT_KEYED, n) == 0)
		return 4;
	return 0;
}

/*
** 1 when the tables exist and were built for ix, 2 when in the layout
** before the tail, 3 before skip tables, 4 before the rowid table (all
** usable; a read-write open moves them on), 0 when neither, or < 0.
*/
static int is_current(sqlite3 *db, a2m_store *base, const a2m_indexer *ix)
{
	sqlite3_stmt *st = NULL;
	int ok = 0;
	if (sqlite3_prepare_v2(db,
		"SELECT (SELECT value FROM a2m_meta WHERE name = '" META_NAME "'),"
		" (SELECT count(*) FROM sqlite_master WHERE type = 'table'"
		"      AND name IN ('a2m_segments', 'a2m_segdir', 'a2m_index_stats')) = 3",
		-1, &st, NULL)
	    != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		ok = fail(db, base, "open");
	} else if (sqlite3_column_int(st, 1) == 1) {
		ok = a2m_sqlite_index_version_ok(ix, (const char *)sqlite3_column_text(st, 0));
	}
	sqlite3_finalize(st);
	return ok;
}

/*
** Moves a2m_segments' rows from a WITHOUT ROWID table (a layout before
** postings/7) into a rowid table with its key in an index, in the
** caller's transaction; nothing when it is one already (another process
** moved it). The rows are copied as they are, in key order, so that each
** segment's rows stay together in the new table; the index is made after,
** from sorted keys. Renamed, the table is the one every statement names.
*/
static int move_segments(sqlite3 *db, a2m_store *base)
{
	sqlite3_stmt *st = NULL;
	int keyed = -1;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_index_list('a2m_segments')"
			       " WHERE origin = 'pk'", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		keyed = sqlite3_column_int(st, 0) > 0;
	sqlite3_finalize(st);
	if (keyed < 0)
		return fail(db, base, "upgrade");
	if (!keyed)
		return 0;
	return exec(db, base, A2M_SEGMENTS_TABLE("a2m_segments_rowid")
		    "INSERT INTO a2m_segments_rowid(seg, term, data)"
		    " SELECT seg, term, data FROM a2m_segments ORDER BY seg, term;"
		    "DROP TABLE a2m_segments;"
		    "ALTER TABLE a2m_segments_rowid RENAME TO a2m_segments;"
		    A2M_SEGMENTS_KEY, "upgrade");
}

/*
** A file of the layout before the tail (untailed): every record is
** indexed, so the mark is the last record's seq; the layout's name moves
** on with it, so that a build without the tail rebuilds the index rather
** than miss the tail. A file before skip tables: only the name moves on
** (see INDEX_LAYOUT_UNSKIPPED). All three move a2m_segments into a rowid
** table (move_segments). Under the write lock, and only if the name is
** still the old one: another process of this build may have moved it on,
** and have a tail. current: is_current's.
*/
static int layout_upgrade(a2m_sqlite_index *x, a2m_store *base, const char *version,
			  int current)
{
	int untailed = current == 2;
	const char *from = untailed ? INDEX_LAYOUT_UNTAILED
		: current == 3 ? INDEX_LAYOUT_UNSKIPPED : INDEX_LAYOUT_KEYED;
	sqlite3_stmt *st = NULL;
	char *old = strdup(version);
	int rc = old ? exec(x->db, base, "BEGIN IMMEDIATE", "upgrade")
		     : a2m_store_fail(base, "index upgrade: out of memory");
	if (rc) {
		free(old);
		return rc;
	}
	memcpy(old, from, strlen(from));  /* same length */
	if (sqlite3_prepare_v2(x->db, "UPDATE a2m_meta SET value = ?1 WHERE name = '" META_NAME
			       "' AND value = ?2", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, version, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, old, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		rc = fail(x->db, base, "upgrade");
	int moved = !rc && sqlite3_changes(x->db) == 1 && untailed;
	sqlite3_finalize(st);
	st = NULL;
	if (moved &&
	    (sqlite3_prepare_v2(x->db, "INSERT INTO a2m_meta(name, value) SELECT 'indexed',"
				" ifnull(max(seq), 0) FROM records WHERE 1"
				" ON CONFLICT(name) DO UPDATE SET value = excluded.value", -1, &st,
				NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE))
		rc = fail(x->db, base, "upgrade");
	sqlite3_finalize(st);
	free(old);
	if (!rc)
		rc = move_segments(x->db, base);
	if (!rc)
		rc = exec(x->db, base, "COMMIT", "upgrade");
	if (rc && !sqlite3_get_autocommit(x->db))
		sqlite3_exec(x->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

static int prepare_all(a2m_sqlite_index *x, a2m_store *base)
{
	static const struct {
		size_t      at;
		const char *sql;
	} stmts[] = {
		{offsetof(a2m_sqlite_index, stats),
		 "SELECT docs, total_len, unindexed FROM a2m_index_stats"},
		{offsetof(a2m_sqlite_index, stats_add),
		 "UPDATE a2m_index_stats SET docs = docs + ?1, total_len = total_len + ?2,"
		 " unindexed = unindexed + ?3"},
		{offsetof(a2m_sqlite_index, old_content),
		 "SELECT seq, content FROM records WHERE id = ?1"},
	};
	for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
		sqlite3_stmt **st = (sqlite3_stmt **)((char *)x + stmts[i].at);
		if (sqlite3_prepare_v3(x->db, stmts[i].sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL)
		    != SQLITE_OK)
			return fail(x->db, base, "prepare");
	}
	int rc = a2m_segments_open(x->db, base, &x->segs);
	if (!rc)
		x->seg_entries = a2m_segments_entries(x->segs);
	return rc;
}


/* Names the index's layout and analyser (a2m_meta's row "index"): it is built. */
static int name_layout(sqlite3 *db, a2m_store *base, const char *version, const char *op)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (sqlite3_prepare_v2(db, "INSERT INTO a2m_meta(name, value) VALUES('" META_NAME
			       "', ?1) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, version, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		rc = fail(db, base, op);
	sqlite3_finalize(st);
	return rc;
}

int a2m_sqlite_index_create(sqlite3 *db, a2m_store *base, const a2m_indexer *ix)
{
	char *version = a2m_sqlite_index_version(ix);
	if (!version)
		return a2m_store_fail(base, "index: out of memory");
	/* The mark of a rebuild of no records (a2m_tail_mark_write): 0. */
	int rc = exec(db, base, SQL_CREATE "INSERT INTO a2m_meta(name, value) VALUES('indexed', 0)"
		      " ON CONFLICT(name) DO UPDATE SET value = excluded.value", "create");
	if (!rc)
		rc = name_layout(db, base, version, "create");
	free(version);
	return rc;
}

/*
** Drops and refills the tables from every record, in one transaction, then
** records version. A failure rolls everything back. The postings are
** flushed every REBUILD_FLUSH as a segment each, unmerged, and merged into
** one segment at the end: each posting is written about twice, not once per
** level.
*/
static int rebuild(a2m_sqlite_index *x, a2m_store *base, const char *version)
{
	sqlite3_stmt *st = NULL;
	int rc = exec(x->db, base, "BEGIN IMMEDIATE", "rebuild");
	if (rc)
		return rc;
	/* a2m_postings: the layout before segments ("postings/1"). */
	if ((rc = exec(x->db, base, "DROP TABLE IF EXISTS a2m_postings;"
		       "DROP TABLE IF EXISTS a2m_segments;DROP TABLE IF EXISTS a2m_segdir;"
		       "DROP TABLE IF EXISTS a2m_segmerge;DROP TABLE IF EXISTS a2m_seghashes;"
		       "DROP TABLE IF EXISTS a2m_segdrop;"
		       "DROP TABLE IF EXISTS a2m_index_stats;" SQL_CREATE, "rebuild")) ||
	    (rc = prepare_all(x, base)))
		goto out;
	if (sqlite3_prepare_v2(x->db, "SELECT seq, content FROM records", -1, &st, NULL)
	    != SQLITE_OK) {
		rc = fail(x->db, base, "rebuild");
		goto out;
	}
	for (;;) {
		int step = sqlite3_step(st);
		if (step == SQLITE_DONE)
			break;
		if (step != SQLITE_ROW) {
			rc = fail(x->db, base, "rebuild");
			goto out;
		}
		const char *content = (const char *)sqlite3_column_text(st, 1);
		a2m_doc_terms dt;
		memset(&dt, 0, sizeof dt);
		if (x->ix->analyze(x->ix, content ? content : "", &dt) != 0 ||
		    a2m_sqlite_index_reserve(x, &dt, NULL) != 0)
			rc = a2m_store_fail(base, "index rebuild: out of memory");
		else
			a2m_sqlite_index_apply(x, sqlite3_column_int64(st, 0), &dt, 1);
		x->ix->release(x->ix, &dt);
		if (!rc && x->nops >= (rebuild_flush_for_tests ? rebuild_flush_for_tests
							       : REBUILD_FLUSH))
			rc = a2m_sqlite_index_write(x, base, 0);
		if (rc)
			goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	if ((rc = a2m_sqlite_index_write(x, base, 0)) || (rc = a2m_segments_maintain(x->segs, base, 1)) ||
	    (rc = a2m_tail_mark_write(x, base)))
		goto out;
	if ((rc = name_layout(x->db, base, version, "rebuild")))
		goto out;
	rc = exec(x->db, base, "COMMIT", "rebuild");
out:
	sqlite3_finalize(st);
	if (rc && !sqlite3_get_autocommit(x->db))
		sqlite3_exec(x->db, "ROLLBACK", NULL, NULL, NULL);
	a2m_sqlite_index_discard(x);
	return rc;
}

static void finalize_all(a2m_sqlite_index *x)
{
	a2m_segments_close(x->segs);
	x->segs = NULL;
	x->seg_entries = NULL;
	sqlite3_finalize(x->stats);
	sqlite3_finalize(x->stats_add);
	sqlite3_finalize(x->old_content);
	x->stats = x->stats_add = x->old_content = NULL;
}

int a2m_sqlite_index_open(sqlite3 *db, a2m_store *base, int read_only, a2m_indexer *ix,
			  a2m_sqlite_index **out)
{
	*out = NULL;
	if (!sqlite3_get_autocommit(db))
		return a2m_store_fail(base, "index_attach: a transaction is open");
	char *version = a2m_sqlite_index_version(ix);
	a2m_sqlite_index *x = calloc(1, sizeof *x);
	int rc = 0;
	if (!version || !x) {
		rc = a2m_store_fail(base, "index_attach: out of memory");
		goto out;
	}
	x->db = db;
	x->ix = ix;
	/* Without one, every read goes to SQLite: slower, not wrong. */
	x->cache_budget = a2m_sqlite_index_first_budget();
	x->cache = a2m_pcache_new(x->cache_budget);
	if (!(x->heads = calloc(A2M_TAIL_SLOTS, sizeof *x->heads))) {
		rc = a2m_store_fail(base, "index_attach: out of memory");
		goto out;
	}
	int current = is_current(db, base, ix);
	if (current < 0) {
		rc = current;
		goto out;
	}
	if (!current && read_only)
		goto out;  /* no usable index, and no right to build one */
	if (current) {
		/* Before the statements: the upgrade may move a2m_segments. */
		if (current >= 2 && !read_only)
			rc = layout_upgrade(x, base, version, current);
		if (!rc)
			rc = prepare_all(x, base);
	} else {
		/* The statements would not survive the DROP: rebuild prepares them. */
		finalize_all(x);
		rc = rebuild(x, base, version);
	}
	if (!rc) {
		*out = x;
		x = NULL;
	}
out:
	a2m_sqlite_index_close(x);
	free(version);
	return rc;
}

void a2m_sqlite_index_close(a2m_sqlite_index *x)
{
	if (!x)
		return;
	finalize_all(x);
	a2m_tail_close(x);
	free(x->heads);
	free(x->hits);
	free(x->ops);
	free(x->arena);
	free(x->list.p);
	free(x->groups);
	free(x->slots);
	free(x->sorted);
	free(x->byterm);
	a2m_pcache_free(x->cache);
	free(x->rows);
	free(x);
}

int a2m_sqlite_index_analyze(a2m_sqlite_index *x, a2m_store *base, const char *text,
			     a2m_doc_terms *dt)
{
	memset(dt, 0, sizeof *dt);
	if (x->ix->analyze(x->ix, text, dt) != 0)
		return a2m_store_fail(base, "index: out of memory");
	return 0;
}

void a2m_sqlite_index_release(a2m_sqlite_index *x, a2m_doc_terms *dt)
{
	if (x)
		x->ix->release(x->ix, dt);
}

int a2m_sqlite_index_old_terms(a2m_sqlite_index *x, a2m_store *base, const char *id,
			       const char *new_content, int64_t *seq, a2m_doc_terms *dt,
			       int *found, int *changed)
{
	sqlite3_stmt *st = x->old_content;
	int rc = 0;
	*found = *changed = 0;
	memset(dt, 0, sizeof *dt);
	if (sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC) != SQLITE_OK) {
		rc = fail(x->db, base, "old content");
		goto out;
	}
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		const char *content = (const char *)sqlite3_column_text(st, 1);
		*found = 1;
		*seq = sqlite3_column_int64(st, 0);
		*changed = !new_content || !content || strcmp(content, new_content) != 0;
		/* Analysed while the row is at hand: its text dies with the reset. */
		if (*changed)
			rc = a2m_sqlite_index_analyze(x, base, content ? content : "", dt);
	} else if (step != SQLITE_DONE) {
		rc = fail(x->db, base, "old content");
	}
out:
	reset(st);
	return rc;
}

int a2m_sqlite_index_reserve(a2m_sqlite_index *x, const a2m_doc_terms *a,
			     const a2m_doc_terms *b)
{
	size_t nops = x->nops, bytes = x->used;
	for (int k = 0; k < 2; k++) {
		const a2m_doc_terms *dt = k ? b : a;
		for (size_t i = 0; dt && i < dt->n; i++) {
			nops++;
			bytes += dt->terms[i].len;
		}
	}
	if (nops > x->cap) {
		size_t cap = x->cap ? x->cap : 256;
		while (cap < nops)
			cap *= 2;
		pending_op *ops = realloc(x->ops, cap * sizeof *ops);
		if (!ops)
			return -1;
		x->ops = ops;
		x->cap = cap;
	}
	if (bytes > x->acap) {
		size_t cap = x->acap ? x->acap : 4096;
		while (cap < bytes)
			cap *= 2;
		char *arena = realloc(x->arena, cap);
		if (!arena)
			return -1;
		x->arena = arena;
		x->acap = cap;
	}
	return 0;
}

void a2m_sqlite_index_apply(a2m_sqlite_index *x, int64_t seq, const a2m_doc_terms *dt,
			    int sign)
{
	for (size_t i = 0; i < dt->n; i++) {
		const a2m_term *t = &dt->terms[i];
		pending_op *op = &x->ops[x->nops];
		memcpy(x->arena + x->used, t->text, t->len);
		*op = (pending_op){.prefix = a2m_seg_prefix(t->text, t->len), .term = x->used,
				   .len = t->len, .tf = t->tf, .dl = dt->length, .sign = sign,
				   .seq = seq};
		x->used += t->len;
		a2m_tail_link(x, x->nops++);
	}
	/* Only an insert above the mark may wait in the tail (sqlite_index_tail.c). */
	if (sign < 0 || seq <= x->mark)
		x->must_flush = 1;
	if (seq > x->top)
		x->top = seq;
	if (sign > 0)
		x->records++;
	if (dt->n) {
		x->pending.docs += sign;
		x->pending.total_len += sign * (int64_t)dt->length;
	} else if (dt->has_text) {
		x->pending.unindexed += sign;
	}
}

void a2m_sqlite_index_mark(const a2m_sqlite_index *x, a2m_sqlite_index_point *p)
{
	p->nops = x->nops;
	p->used = x->used;
	p->records = x->records;
	p->top = x->top;
	p->pending = x->pending;
}

void a2m_sqlite_index_undo(a2m_sqlite_index *x, const a2m_sqlite_index_point *p)
{
	a2m_tail_unlink_to(x, p->nops);
	x->nops = p->nops;
	x->used = p->used;
	x->records = p->records;
	x->top = p->top;
	x->pending = p->pending;
}

void a2m_sqlite_index_committed(a2m_sqlite_index *x, uint64_t from, uint64_t to)
{
	if (x->cache)
		a2m_pcache_adopt(x->cache, from, to);
	/* Commits that left the tail alone (or this connection's own, whose
	** tail it knows: a2m_sqlite_index_txn_done): it is still the file's. */
	if (x->tail_stamped && x->tail_version == (unsigned)from)
		x->tail_version = (unsigned)to;
}

void a2m_sqlite_index_txn_done(a2m_sqlite_index *x)
{
	a2m_sqlite_index_mark(x, &x->committed);
	x->must_flush = x->flushed = x->force = 0;
}

void a2m_sqlite_index_write_out(a2m_sqlite_index *x)
{
	x->force = 1;
}

int a2m_sqlite_index_may_hold_tail(const a2m_sqlite_index *x)
{
	return !x->tail_known || x->committed.records > 0;
}

size_t a2m_sqlite_index_tail(const a2m_sqlite_index *x)
{
	return x->committed.records;
}

int a2m_sqlite_index_take_wrote(a2m_sqlite_index *x)
{
	int wrote = x->wrote;
	x->wrote = 0;
	return wrote;
}

void a2m_sqlite_index_forget_postings(a2m_sqlite_index *x)
{
	a2m_pcache_clear(x->cache);
	x->tail_stamped = 0;  /* the tail may have grown: look at the file again */
}

size_t a2m_sqlite_index_reads(const a2m_sqlite_index *x)
{
	return x->reads;
}

void a2m_sqlite_index_discard(a2m_sqlite_index *x)
{
	/* Postings read inside the transaction may be what it wrote. */
	a2m_pcache_clear(x->cache);
	/* The segments it wrote or merged are undone: reads list them again. */
	a2m_segments_merge_cancel(x->segs);
	a2m_segments_forget(x->segs);
	x->wrote = 0;
	if (x->flushed) {
		/* The tail went into a segment that is undone: read it again. */
		a2m_tail_clear_chains(x);
		x->nops = x->used = x->records = 0;
		memset(&x->pending, 0, sizeof x->pending);
		x->tail_known = 0;
	} else {
		a2m_sqlite_index_undo(x, &x->committed);
	}
	x->must_flush = x->flushed = 0;
}

int a2m_sqlite_index_write(a2m_sqlite_index *x, a2m_store *base, int merge)
{
	if (x->nops) {
		a2m_pcache_clear(x->cache);  /* what it holds is about to change */
		x->wrote = 1;
		int rc = a2m_sqlite_index_write_segment(x, base, merge);
		if (rc)
			return rc;
	}
	a2m_tail_clear_chains(x);
	x->nops = 0;
	x->used = 0;
	x->records = 0;
	if (!sqlite3_get_autocommit(x->db))
		x->flushed = 1;
	if (x->top > x->mark) {
		int rc = a2m_tail_mark_write(x, base);
		if (rc)
			return rc;
	}
	const a2m_index_stats *p = &x->pending;
	if (!p->docs && !p->total_len && !p->unindexed)
		return 0;
	int ok = sqlite3_bind_int64(x->stats_add, 1, p->docs) == SQLITE_OK &&
		sqlite3_bind_int64(x->stats_add, 2, p->total_len) == SQLITE_OK &&
		sqlite3_bind_int64(x->stats_add, 3, p->unindexed) == SQLITE_OK &&
		sqlite3_step(x->stats_add) == SQLITE_DONE;
	reset(x->stats_add);
	if (!ok)
		return fail(x->db, base, "stats");
	memset(&x->pending, 0, sizeof x->pending);
	return 0;
}

/*
** The commit's: the buffer stays as the tail when only inserts above the
** mark are in it and it is small; else it is written out.
*/
int a2m_sqlite_index_flush(a2m_sqlite_index *x, a2m_store *base)
{
	int rc = 0;
	if (!x->must_flush && !x->force && x->tail_known && x->nops < TAIL_MAX_POSTINGS &&
	    x->records < (tail_for_tests ? tail_for_tests : TAIL_MAX_RECORDS)) {
		if (x->nops != x->committed.nops ||
		    memcmp(&x->pending, &x->committed.pending, sizeof x->pending) != 0) {
			a2m_pcache_clear(x->cache);  /* the postings read change */
			x->wrote = 1;                /* and the readers' (the journal) */
		}
	} else {
		rc = a2m_sqlite_index_write(x, base, 1);
	}
	/* A merge begun ahead is written even when no posting was. */
	if (!rc && a2m_segments_merging(x->segs))
		rc = a2m_segments_maintain(x->segs, base, 0);
	return rc;
}

void a2m_sqlite_index_merge_inline(a2m_sqlite_index *x, int on)
{
	a2m_segments_merge_inline(x->segs, on);
}

int a2m_sqlite_index_begin(a2m_sqlite_index *x, a2m_store *base)
{
	x->must_flush = x->flushed = 0;
	a2m_phase was = a2m_phase_enter(A2M_PHASE_TAIL);
	int rc = a2m_tail_sync(x, base);
	/* A failure leaves nothing under way: the commit merges what it must. */
	a2m_phase_enter(A2M_PHASE_AHEAD_READ);
	if (!rc && !x->closing)
		(void)a2m_segments_merge_ahead(x->segs, base);
	a2m_phase_leave(was);
	return rc;
}

void a2m_sqlite_index_closing(a2m_sqlite_index *x)
{
	x->closing = 1;
}
