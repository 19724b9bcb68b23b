/*
** sqlite_segments.c — the SQLite term index's segments: their rows, the
** read of one term across them, and their writes (see sqlite_segments.h;
** the bytes of a list are sqlite_segments_codec.c's).
**
** Why segments: a b-tree of one row per (term, seq) clustered by term made
** every commit of a batch rewrite nearly every leaf of it (a batch of 500
** records holds postings of ~2 100 terms spread over the whole table), and
** log each of those pages in the WAL. A commit's segment is appended at the
** end of a2m_segments, keyed (seg, term): a few new pages per commit.
**
** Why a row per block of terms and not per term: an INSERT costs SQLite
** ~7 000 instructions whatever its size (callgrind), and a commit of 500
** records holds ~2 100 terms of ~14 bytes of postings each; rows of about
** BLOCK_BYTES (which stay in their page, unless one term's list makes the
** row longer than a page) cut those inserts 40-fold. A read of a term seeks the block whose first term is the
** greatest not after it, and walks that block's terms: about 40 to skip.
** When and how segments merge is sqlite_segments_ahead.c's.
*/
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/bloom.h"
#include "store/sqlite_index.h"
#include "store/sqlite_segments.h"
#include "store/sqlite_segments_internal.h"
#include "util/hash.h"
#include "util/random.h"

#define MERGE_FACTOR 8

/* A2M_SEG_MAX_LISTS in SQL text: keep the two equal. */
#define A2M_SEG_MAX_LISTS_SQL "64"

#ifdef A2M_TEST_HOOKS
static int merge_factor_for_tests;

void a2m_segments_merge_factor_for_tests(int k)
{
	merge_factor_for_tests = k;
}
#else
#define merge_factor_for_tests 0  /* the release library has no test hooks */
#endif

int a2m_seg_merge_factor(void)
{
	return merge_factor_for_tests > 1 ? merge_factor_for_tests : MERGE_FACTOR;
}

/* ---- statements (the struct: sqlite_segments_internal.h) ---- */

int a2m_segments_open(sqlite3 *db, a2m_store *base, a2m_segments **out)
{
	static const struct {
		size_t      at;
		const char *sql;
	} stmts[] = {
		/* Above every number in use, a multiple of the gap (A2M_SEG_GAP). */
		{offsetof(a2m_segments, next_seg), "SELECT (max(coalesce((SELECT max(seg) FROM"
		 " a2m_segdir), 0), coalesce((SELECT max(seg) FROM a2m_segments), 0)) / 64 + 1) * 64"},
		{offsetof(a2m_segments, add),
		 "INSERT INTO a2m_segments(seg, term, data) VALUES(?1, ?2, ?3)"},
		/* Counted per level in C: a GROUP BY sorted, at 26k instructions a
		** commit (8% of a single-record remember). */
		{offsetof(a2m_segments, levels), "SELECT level, entries, seg FROM a2m_segdir"},
		{offsetof(a2m_segments, count), "SELECT count(*) FROM a2m_segdir"},
		{offsetof(a2m_segments, level_segs),
		 "SELECT seg FROM a2m_segdir WHERE level = ?1 ORDER BY seg"},
		{offsetof(a2m_segments, all_segs),
		 "SELECT seg FROM a2m_segdir ORDER BY seg LIMIT " A2M_SEG_MAX_LISTS_SQL},
		{offsetof(a2m_segments, load),
		 "SELECT data FROM a2m_segments WHERE seg = ?1 ORDER BY term"},
		{offsetof(a2m_segments, drop_rows), "DELETE FROM a2m_segments WHERE seg = ?1"},
		{offsetof(a2m_segments, drop_dir), "DELETE FROM a2m_segdir WHERE seg = ?1"},
		/* The live segments, the oldest first: a2m_seg_merge_lists wants
		** a term's lists in age order. */
		{offsetof(a2m_segments, dir_list),
		 "SELECT seg, level, entries, nonce FROM a2m_segdir ORDER BY seg"},
		{offsetof(a2m_segments, dir_bloom), "SELECT bloom FROM a2m_segdir WHERE seg = ?1"},
		{offsetof(a2m_segments, read_begin), "BEGIN"},
		{offsetof(a2m_segments, read_end), "COMMIT"},
	};
	/*
	** The block of segment ?1 that would hold term ?2: the last whose first
	** term is not after it, found in the key's index. Its rowid, and its
	** data when short: a row of up to ~4 000 bytes stays in its page (a
	** rowid table's leaf keeps 4 061 bytes of a row on a 4 KiB page), and
	** its column is read in one copy; a longer one is read through a blob
	** handle (sqlite_segments_read.c; length() reads no payload). A file
	** a read-only connection finds in a layout before postings/7 (a
	** WITHOUT ROWID table, which only a read-write open moves over) is
	** read by the block's column always.
	*/
	static const char block_sql[] =
		"SELECT rowid, CASE WHEN length(data) <= 4000 THEN data END FROM a2m_segments"
		" WHERE seg = ?1 AND term <= ?2 ORDER BY term DESC LIMIT 1";
	static const char block_sql_column[] =
		"SELECT NULL, data FROM a2m_segments WHERE seg = ?1 AND term <= ?2"
		" ORDER BY term DESC LIMIT 1";
	*out = NULL;
	/*
	** A file whose index was built before the column: add it (its rows then
	** have no maxseq, and a merge older than them keeps its tombstones, as
	** before). A read-only connection never writes a row, nor merges.
	*/
	sqlite3_stmt *probe = NULL;
	int has_maxseq = sqlite3_prepare_v2(db, "SELECT maxseq FROM a2m_segdir", -1, &probe,
					    NULL) == SQLITE_OK;
	sqlite3_finalize(probe);
	if (!has_maxseq && !sqlite3_db_readonly(db, "main") &&
	    sqlite3_exec(db, "ALTER TABLE a2m_segdir ADD COLUMN maxseq INTEGER", NULL, NULL,
			 NULL) != SQLITE_OK)
		return a2m_store_fail(base, "index: %s", sqlite3_errmsg(db));
	a2m_segments *s = calloc(1, sizeof *s);
	if (!s)
		return a2m_store_fail(base, "index: out of memory");
	s->db = db;
	s->maybe_full = 1;
	if (!sqlite3_db_readonly(db, "main") && a2m_seg_steps_open(db, base, &s->steps) != 0) {
		free(s);
		return A2M_INTERNAL_ERROR;
	}
	for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
		sqlite3_stmt **st = (sqlite3_stmt **)((char *)s + stmts[i].at);
		if (sqlite3_prepare_v3(db, stmts[i].sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL)
		    != SQLITE_OK) {
			int rc = fail(s, base, "prepare");
			a2m_segments_close(s);
			return rc;
		}
	}
	if (sqlite3_prepare_v3(db, block_sql, -1, SQLITE_PREPARE_PERSISTENT, &s->block_of, NULL)
	    != SQLITE_OK &&
	    sqlite3_prepare_v3(db, block_sql_column, -1, SQLITE_PREPARE_PERSISTENT, &s->block_of,
			       NULL) != SQLITE_OK) {
		int rc = fail(s, base, "prepare");
		a2m_segments_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void a2m_segments_close(a2m_segments *s)
{
	if (!s)
		return;
	sqlite3_stmt *all[] = {s->next_seg, s->add, s->finish, s->levels, s->count,
			       s->level_segs, s->all_segs, s->floor, s->load, s->drop_rows,
			       s->drop_dir, s->dir_list, s->dir_bloom, s->block_of,
			       s->read_begin, s->read_end, s->nonce_of};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		sqlite3_finalize(all[i]);
	a2m_segments_merge_cancel(s);
	a2m_seg_steps_close(s->steps);
	for (size_t i = 0; i < s->ndir; i++)
		free(s->dir[i].bloom);
	free(s->dir);
	a2m_seg_build_free(&s->build);
	free(s->buf.p);
	free(s->win.p);
	free(s->spans);
	free(s);
}

/* Steps st, which returns one integer row; *out gets it. */
int a2m_seg_one_int(a2m_segments *s, a2m_store *base, sqlite3_stmt *st, int64_t *out,
		    const char *op)
{
	int rc = 0;
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	else if (step == SQLITE_DONE)
		*out = -1;
	else
		rc = fail(s, base, op);
	reset(st);
	return rc;
}

int a2m_segments_start(a2m_segments *s, a2m_store *base, int64_t *seg)
{
	s->build.block.n = 0;
	s->build.nhashes = 0;
	s->commit_bytes = 0;
	return a2m_seg_one_int(s, base, s->next_seg, seg, "segment");
}

/* Writes a block (n bytes) as the row (seg, first: flen bytes). */
int a2m_seg_write_row(a2m_segments *s, a2m_store *base, int64_t seg, const void *first,
		      size_t flen, const void *block, size_t n)
{
	sqlite3_stmt *st = s->add;
	int ok = sqlite3_bind_int64(st, 1, seg) == SQLITE_OK &&
		sqlite3_bind_text64(st, 2, first, flen, SQLITE_STATIC, SQLITE_UTF8) == SQLITE_OK &&
		sqlite3_bind_blob64(st, 3, block, n, SQLITE_STATIC) == SQLITE_OK &&
		sqlite3_step(st) == SQLITE_DONE;
	reset(st);
	return ok ? 0 : fail(s, base, "add");
}

/* Writes the block being built, if any, as the row (seg, its first term). */
static int write_block(a2m_segments *s, a2m_store *base, int64_t seg)
{
	a2m_seg_build *b = &s->build;
	if (!b->block.n)
		return 0;
	int rc = a2m_seg_write_row(s, base, seg, b->first.p, b->first.n, b->block.p, b->block.n);
	s->commit_bytes += b->block.n;
	b->block.n = 0;
	return rc;
}

int a2m_segments_add(a2m_segments *s, a2m_store *base, int64_t seg, const char *term,
		     size_t len, const void *data, size_t n)
{
	int full = a2m_seg_build_add(&s->build, term, len, data, n);
	if (full < 0)
		return a2m_store_fail(base, "index: out of memory");
	return full ? write_block(s, base, seg) : 0;
}

/* A random 64-bit number for a new segment's directory row. */
static int64_t new_nonce(void)
{
	int64_t v;
	a2m_random_fill(&v, sizeof v);
	return v;
}

/* Prepares *st from sql unless it is: the statements a read-only connection never runs. */
int a2m_seg_prepare_once(a2m_segments *s, a2m_store *base, sqlite3_stmt **st, const char *sql)
{
	if (!*st && sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
		return fail(s, base, "prepare");
	return 0;
}

/*
** Writes segment seg's directory row: its level, its entries, the highest
** seq of a posting in it, and the filter of its terms (nhashes hashes),
** which reads test before a seek.
*/
int a2m_seg_write_dir(a2m_segments *s, a2m_store *base, int64_t seg, int level,
		      int64_t entries, int64_t maxseq, const uint64_t *hashes, size_t nhashes)
{
	if (a2m_seg_prepare_once(s, base, &s->finish, "INSERT INTO a2m_segdir(seg, level, entries, bloom,"
			 " nonce, maxseq) VALUES(?1, ?2, ?3, ?4, ?5, ?6)"))
		return A2M_INTERNAL_ERROR;
	size_t nbloom = a2m_bloom_bytes(nhashes);
	unsigned char *bloom = calloc(1, nbloom);
	if (!bloom)
		return a2m_store_fail(base, "index: out of memory");
	for (size_t i = 0; i < nhashes; i++)
		a2m_bloom_add(bloom, nbloom, hashes[i]);
	s->dir_valid = 0;
	/* Only a level of such segments can be big enough to merge ahead. */
	if (entries * a2m_seg_merge_factor() >= a2m_seg_ahead_min(s))
		s->maybe_full = 1;
	sqlite3_stmt *st = s->finish;
	int ok = sqlite3_bind_int64(st, 1, seg) == SQLITE_OK &&
		sqlite3_bind_int(st, 2, level) == SQLITE_OK &&
		sqlite3_bind_int64(st, 3, entries) == SQLITE_OK &&
		sqlite3_bind_blob64(st, 4, bloom, nbloom, SQLITE_STATIC) == SQLITE_OK &&
		sqlite3_bind_int64(st, 5, new_nonce()) == SQLITE_OK &&
		sqlite3_bind_int64(st, 6, maxseq) == SQLITE_OK &&
		sqlite3_step(st) == SQLITE_DONE;
	reset(st);
	free(bloom);
	return ok ? 0 : fail(s, base, "segment");
}

int a2m_segments_finish(a2m_segments *s, a2m_store *base, int64_t seg, int level,
			int64_t entries, int64_t maxseq)
{
	int rc = write_block(s, base, seg);
	if (!rc)
		rc = a2m_seg_write_dir(s, base, seg, level, entries, maxseq, s->build.hashes,
			       s->build.nhashes);
	s->build.nhashes = 0;
	return rc;
}

int a2m_segments_level_for(int64_t entries)
{
	int level = 0;
	for (int64_t size = LEVEL0_ENTRIES * (int64_t)a2m_seg_merge_factor(); size <= entries;
	     size *= a2m_seg_merge_factor())
		level++;
	return level;
}
