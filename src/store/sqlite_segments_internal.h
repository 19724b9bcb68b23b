/*
** sqlite_segments_internal.h — what sqlite_segments.c (writing),
** sqlite_segments_ahead.c (merging) and sqlite_segments_read.c (reading a
** term) share: the segments of one connection and the statement helpers.
** Not for any other file.
*/
#ifndef A2M_SQLITE_SEGMENTS_INTERNAL_H
#define A2M_SQLITE_SEGMENTS_INTERNAL_H

#include "store/sqlite_segments.h"

/* A live segment as a read sees it: its directory row and its term filter. */
typedef struct dir_entry {
	int64_t        seg, entries;
	int64_t        nonce;  /* random, set when written: tells a segment from a later one of its number */
	int            level;
	unsigned char *bloom;  /* NULL: no filter, always read */
	size_t         nbloom;
} dir_entry;

struct a2m_segments {
	sqlite3      *db;
	sqlite3_stmt *next_seg, *add, *finish, *levels, *count, *level_segs;
	sqlite3_stmt *all_segs;
	sqlite3_stmt *floor;  /* a run's tombstone floor; prepared at first use, as is finish */
	sqlite3_stmt *load, *drop_rows, *drop_dir, *dir_list, *dir_bloom, *block_of;
	sqlite3_stmt *read_begin, *read_end;  /* a term read outside any transaction */
	a2m_seg_build build;  /* the segment a commit is writing */
	size_t        commit_bytes;  /* its bytes so far: the steps' budget */
	a2m_seg_steps *steps;  /* merges in steps; NULL on a read-only connection */
	a2m_seg_job  *ahead;  /* the merge computed ahead, not yet written, or NULL */
	/*
	** Its inputs' nonces as their directory rows had them when it began:
	** written by a later transaction than the one that read them, it is
	** written only if every input is still there, unchanged (another
	** process may have merged them meanwhile).
	*/
	int64_t       ahead_nonce[A2M_SEG_MAX_LISTS];
	int           ahead_txns;  /* write transactions begun since it began */
	sqlite3_stmt *nonce_of;  /* prepared at first use */
	int           inline_merges;  /* a2m_segments_merge_inline */
	/*
	** This connection wrote a directory row that could fill a level to be
	** merged ahead, or rolled back, since it last found none: spares the
	** query at the start of every transaction (a single-record remember
	** paid it). A level filled by another process's commits is merged
	** inside a commit of ours once over full.
	*/
	int           maybe_full;
	/*
	** The live segments, oldest first, kept between reads of one
	** transaction: valid while its snapshot is taken, the database's data
	** version is dir_version and this connection has not written or
	** dropped a segment, nor rolled back, since (dir_valid). A new
	** transaction reads the list again (its snapshot may be newer).
	** Numbers come back (a merged segment takes the newest number it
	** replaces; a rolled-back one's is given out again; a rebuild starts
	** over), so a filter is kept across reloads only for the same number
	** and the same random nonce.
	*/
	dir_entry    *dir;
	int64_t       dir_entries;  /* the entries of dir's segments, summed as it is read */
	size_t        ndir, dir_cap;
	int           dir_valid;
	unsigned      dir_version;
	a2m_seg_bytes buf;    /* a term's lists as read (a2m_segments_term) */
	a2m_seg_bytes win;    /* a row's bytes from win_off, read through its blob handle */
	size_t        win_off;
	size_t       *spans;  /* their offset and length in buf, two per row */
	size_t        spans_cap;
};

static inline int fail(a2m_segments *s, a2m_store *base, const char *op)
{
	return a2m_store_fail(base, "index %s: %s", op, sqlite3_errmsg(s->db));
}

static inline void reset(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/* Takes one row of a statement; a non-zero return stops the walk. */
typedef int (*row_fn)(sqlite3_stmt *st, a2m_store *base, void *ctx);

/*
** Steps st, bound by the caller (bound says whether that worked), to its
** end, handing each row to row; resets st. Returns 0, row's code, or a
** negative code naming op.
*/
static inline int each_row(a2m_segments *s, a2m_store *base, sqlite3_stmt *st, int bound,
		    const char *op, row_fn row, void *ctx)
{
	int rc = bound ? 0 : fail(s, base, op);
	while (!rc) {
		int step = sqlite3_step(st);
		if (step == SQLITE_DONE)
			break;
		rc = step == SQLITE_ROW ? row(st, base, ctx) : fail(s, base, op);
	}
	reset(st);
	return rc;
}

/* The entries a commit's segment holds, roughly: level 0's size for level_for. */
#define LEVEL0_ENTRIES 4096

/*
** Shared by sqlite_segments.c and sqlite_segments_ahead.c; each fails as
** the store does (a2m_store_fail: the message on base, a negative code).
** a2m_seg_merge_factor: the segments of a full level (8, or the tests').
** a2m_seg_ahead_min: the fewest entries of a full level merged ahead
** (INT64_MAX when merging inline). a2m_seg_one_int steps st, which returns
** one integer row, into *out (-1 when it returns none).
** a2m_seg_write_row writes a block (n bytes) as the row (seg, first: flen
** bytes). a2m_seg_prepare_once prepares *st from sql unless it is.
** a2m_seg_write_dir writes segment seg's directory row.
*/
int     a2m_seg_merge_factor(void);
int64_t a2m_seg_ahead_min(const a2m_segments *s);
int     a2m_seg_one_int(a2m_segments *s, a2m_store *base, sqlite3_stmt *st, int64_t *out,
			const char *op);
int     a2m_seg_write_row(a2m_segments *s, a2m_store *base, int64_t seg, const void *first,
			  size_t flen, const void *block, size_t n);
int     a2m_seg_prepare_once(a2m_segments *s, a2m_store *base, sqlite3_stmt **st,
			     const char *sql);
int     a2m_seg_write_dir(a2m_segments *s, a2m_store *base, int64_t seg, int level,
			  int64_t entries, int64_t maxseq, const uint64_t *hashes, size_t nhashes);

#endif
