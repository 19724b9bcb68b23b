/*
** sqlite_segments.h — the segments of the SQLite term index, for
** sqlite_index.c only (the layout is described in sqlite_index.h).
**
** A segment is a run of rows (seg, term, data) of a2m_segments in term
** order, each a block of terms (term: the block's first), data being
**
**   for each term:  varint(length) term  varint(size) list
**
** with a term's list its entries in ascending seq, each encoded as
**
**   varint((seq - previous seq) << 1 | deleted)  [varint(tf) varint(dl)]
**
** (tf and dl only when not deleted; the first entry's previous seq is 0).
** A deleted entry, a tombstone, says that the posting is gone as of this
** segment. For a (term, seq) the entry of the newest segment (the highest
** seg) wins. a2m_segdir lists the live segments with their level, and
** maxseq, the highest seq of a posting the segment may hold (NULL: not
** known, in a row written before the column was; sqlite_segments.c).
**
** Tombstones and maxseq: a tombstone is needed only while an older segment
** may hold the posting it hides. Seqs are never given out twice, so when a
** merge writes a run of segments, a tombstone whose seq is above every
** older segment's maxseq (the run's tombstone floor) hides nothing and is
** dropped. Without that, a store that keeps forgetting and remembering
** (its records steady, its seqs moving on) kept every tombstone until a
** merge reached the oldest segment, which happens ever more rarely as
** levels grow: its index grew without bound.
*/
#ifndef A2M_SQLITE_SEGMENTS_H
#define A2M_SQLITE_SEGMENTS_H

#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdint.h>
#include <string.h>

#include "store/store.h"

/*
** The tables' SQL (the caller creates a2m_index_stats beside them).
** a2m_segments is a rowid table with its key (seg, term) in an index, so
** that a seek compares keys in the index's small cells and a row's data,
** a long list overflowing into many pages, is read once, through a blob
** handle (postings/7; sqlite_index.c moves an older file's table over).
*/
#define A2M_SEGMENTS_TABLE(name) \
	"CREATE TABLE " name "(seg INTEGER NOT NULL, term TEXT NOT NULL," \
	" data BLOB NOT NULL);"
#define A2M_SEGMENTS_KEY \
	"CREATE UNIQUE INDEX a2m_segments_key ON a2m_segments(seg, term);"
#define A2M_SEGMENTS_CREATE \
	A2M_SEGMENTS_TABLE("a2m_segments") A2M_SEGMENTS_KEY \
	"CREATE TABLE a2m_segdir(seg INTEGER PRIMARY KEY, level INTEGER NOT NULL," \
	" entries INTEGER NOT NULL, bloom BLOB, nonce INTEGER NOT NULL, maxseq INTEGER);"

/* One entry of a term's list: a posting, or its tombstone (deleted). */
typedef struct a2m_seg_entry {
	int64_t  seq;
	uint32_t tf, dl;
	int      deleted;
} a2m_seg_entry;

/* A growing byte buffer (the encoded lists). Free p when done. */
typedef struct a2m_seg_bytes {
	unsigned char *p;
	size_t         n, cap;
} a2m_seg_bytes;

/*
** The byte helpers of the codec (sqlite_segments_codec.c), which
** sqlite_segments.c uses too. a2m_seg_grow makes the array *p (of *cap
** items of size bytes; p is the address of any object pointer) hold at
** least need items, doubling from 64; a2m_seg_reserve makes room for more
** bytes in b: both return 0, or -1 when memory runs out (nothing changed).
** a2m_seg_put_varint writes v at p (at most 10 bytes) and returns the
** bytes written; a2m_seg_get_varint reads one before end into *v,
** returning 1, or 0 when the bytes end first or run too long.
*/
int    a2m_seg_grow(void *p, size_t *cap, size_t need, size_t size);
int    a2m_seg_reserve(a2m_seg_bytes *b, size_t more);
size_t a2m_seg_put_varint(unsigned char *p, uint64_t v);
int    a2m_seg_get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v);

/*
** a2m_seg_get_varint inline, for the loops that read a varint per field:
** a long list's skip table, walked whole each time the list is read from
** SQLite, read seven a block through the call (a2m_seg_skip_next was 8% of
** a 10M recall's instructions, most of it the calls).
*/
static inline int a2m_seg_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	/* Most are one byte (deltas of seq, tf, dl): no loop for those. */
	if (*p < end && **p < 0x80) {
		*v = *(*p)++;
		return 1;
	}
	uint64_t r = 0;
	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		unsigned char c = *(*p)++;
		r |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = r;
			return 1;
		}
	}
	return 0;
}

/*
** The first 8 bytes of a term as a big-endian integer, zero-padded: two
** terms whose prefixes differ are ordered as their prefixes (SQLite's
** BINARY order); with equal prefixes, the shorter, when 8 bytes or less,
** is a prefix of the other, so their lengths decide, and else the bytes
** after the eighth do, then the lengths. Inline: flush takes one for every
** buffered posting (a call to another file was 1% of a batched remember).
*/
static inline uint64_t a2m_seg_prefix(const void *term, size_t len)
{
	unsigned char t[8] = {0};
	memcpy(t, term, len < 8 ? len : 8);
	/* One load and a byte swap, as compilers see it. */
	return (uint64_t)t[0] << 56 | (uint64_t)t[1] << 48 | (uint64_t)t[2] << 40 |
		(uint64_t)t[3] << 32 | (uint64_t)t[4] << 24 | (uint64_t)t[5] << 16 |
		(uint64_t)t[6] << 8 | t[7];
}

/*
** Reads the next term of a block at *p (before end): *term, *tlen, *list,
** *lsize. Returns 1, 0 at the end, -1 when the block is corrupt.
*/
int a2m_seg_next_in_block(const unsigned char **p, const unsigned char *end,
			  const unsigned char **term, size_t *tlen, const unsigned char **list,
			  size_t *lsize);

/*
** Decodes count entries of a list from the n bytes at p, the first's
** delta from seq prev, into out: 0 when they are all postings (no
** tombstone) and take exactly n bytes, with *last the last one's seq; -1
** when not (corrupt, for a block whose skip table says so).
*/
int a2m_seg_decode_block(const unsigned char *p, size_t n, int64_t prev, a2m_posting *out,
			 size_t count, int64_t *last);

/*
** Decodes the entries of a block as a2m_seg_decode_block does (n bytes at
** p, count entries, the first's delta from the *prev given with *i and
** *off 0), from entry *i at byte *off, up to the first whose seq is at
** least seq: 1 with it in *out, *i, *off and *prev past it (so a call for
** a higher seq goes on from there); 0 when every entry left is below seq;
** -1 when the bytes are corrupt (a tombstone, or not ending where the
** entries do).
*/
int a2m_seg_decode_until(const unsigned char *p, size_t n, size_t count, int64_t seq, size_t *i,
			 size_t *off, int64_t *prev, a2m_posting *out);

/* Orders two terms as SQLite's BINARY collation does (and the rows are). */
int a2m_seg_cmp_terms(const unsigned char *a, size_t an, const unsigned char *b, size_t bn);

/*
** Appends e, whose predecessor in the list has seq *prev (0 for the first),
** to b, and sets *prev to e->seq. e->seq must be greater than *prev.
** Returns 0, or -1 when memory runs out (b is then unchanged).
*/
int a2m_seg_put(a2m_seg_bytes *b, int64_t *prev, const a2m_seg_entry *e);

/* A decoder over one encoded list. */
typedef struct a2m_seg_list {
	const unsigned char *p, *end;
	int64_t              seq;   /* the last entry's */
	int                  corrupt;  /* its skip table's head cannot be read */
} a2m_seg_list;

/* Starts l on the n bytes at p (past its skip table, if it has one). */
void a2m_seg_list_init(a2m_seg_list *l, const void *p, size_t n);

/* Reads the next entry into *e: 1, 0 at the end, -1 when the bytes are corrupt. */
int a2m_seg_list_next(a2m_seg_list *l, a2m_seg_entry *e);

/* Receives the entries of a merge; a negative return stops it (and is returned). */
typedef int (*a2m_seg_emit)(const a2m_seg_entry *e, void *ctx);

/*
** Receives count entries of a merge as their n encoded bytes at p: the
** first's seq delta is from the entry emitted just before (0 when none
** was), the last's seq is last. Appending the bytes as they are continues
** the list a2m_seg_put writes. A negative return stops the merge (and is
** returned).
*/
typedef int (*a2m_seg_copy)(const unsigned char *p, size_t n, int64_t count, int64_t last,
			    void *ctx);

/*
** Merges the n lists of one term, lists[0] the oldest, into ascending seq
** where for each seq the newest list's entry wins; a tombstone is emitted
** only when its seq is at most tombstone_floor (0: none is; INT64_MAX: all
** are). Entries go to emit one by one, except, when
** copy is not NULL, runs of one list's entries before every other list's
** next, holding no tombstone to drop, that follow an entry of it emitted
** (or start the only list): those go to copy as their bytes, which spares
** decoding and encoding again most entries of a merge of segments of
** disjoint seq ranges. Returns 0, or emit's or copy's negative code, or -1
** with *corrupt set when a list's bytes are not a list (or n >
** A2M_SEG_MAX_LISTS).
*/
int a2m_seg_merge_lists(a2m_seg_list *lists, size_t n, int64_t tombstone_floor,
			a2m_seg_emit emit, a2m_seg_copy copy, void *ctx, int *corrupt);

/*
** The most lists one merge takes, and so the most live segments a read of a
** term can take: tiered merging keeps at most 8 per level, and 8 levels hold
** over 8^8 commits. Small, as the merges keep their heads on the stack.
*/
#define A2M_SEG_MAX_LISTS 64

/* ---- skip tables (sqlite_segments_skip.c) ---- */

/*
** A list of more than one block of A2M_POSTINGS_BLOCK entries is written
** with a skip table before its entries:
**
**   0x00 varint(head bytes) varint(entries) varint(live) varint(blocks)
**   per block: varint(last seq - previous block's last seq)
**              varint(its entries' bytes)
**              varint(tf) varint(dl[0]) then for dl[1..3] varint(0) when
**              UINT32_MAX (none), else varint(dl[i] - dl[i - 1] + 1)
**
** with the bound (store.h a2m_tf_bound) of the block's postings (tombstones
** bound nothing), live the entries that are postings, and a block every
** A2M_POSTINGS_BLOCK entries, tombstones counted, the last one partial. A
** plain list's first byte is never 0: its first entry's seq is at least 1.
** Shorter lists, and every list of the previous layout (postings/5), are
** plain: readers take both.
*/
#define A2M_SEG_SKIP_MARK 0x00

/*
** Writes into out (emptied first) the n bytes of the plain list at data
** with its skip table ahead of them. Returns 1; 0 when the list needs none
** (one block at most, or it has one already: out is then empty and the
** list is written as it is); -1 when memory runs out; -2 when the list is
** corrupt.
*/
int a2m_seg_skip_build(const void *data, size_t n, a2m_seg_bytes *out);

/* A list's skip table as a2m_seg_skip_open finds it. */
typedef struct a2m_seg_skip {
	int64_t              entries, live;
	size_t               nblocks;
	const unsigned char *blocks, *blocks_end;  /* the per-block figures */
	const unsigned char *entries_at, *end;     /* the entries */
} a2m_seg_skip;

/*
** Reads the head of the list of n bytes at data into *sk. Returns 1 when
** it has a skip table, 0 when it is plain (sk->entries_at, sk->end: the
** list), -1 when the head is corrupt.
*/
int a2m_seg_skip_open(const void *data, size_t n, a2m_seg_skip *sk);

/* One block of a skip table. */
typedef struct a2m_seg_skip_block {
	int64_t      prev, last;  /* the seq before the block (its delta base) and its last */
	size_t       at, bytes;   /* its entries: at bytes past entries_at, bytes long */
	size_t       count;       /* entries in it */
	a2m_tf_bound bound;
} a2m_seg_skip_block;

typedef struct a2m_seg_skip_iter {
	const unsigned char *p, *end;
	int64_t              last, left;
	size_t               at, size;
} a2m_seg_skip_iter;

/* Walks sk's blocks: first, then next until 0 (-1: the table is corrupt) ... */
void a2m_seg_skip_first(const a2m_seg_skip *sk, a2m_seg_skip_iter *it);

/* ... and a2m_seg_skip_next (inline: sqlite_segments_skip.h) reads the next. */

/*
** Checks a list's skip table against its entries (a2m check): 1 when it
** is the one they make, 0 when the list is plain, -1 when it is wrong or
** corrupt, -2 when memory runs out.
*/
int a2m_seg_skip_verify(const void *data, size_t n);

/* ---- a term's postings a block at a time (sqlite_segments_lazy.c) ---- */

typedef struct a2m_seg_lazy a2m_seg_lazy;

/*
** Makes *out the postings of a term from its k lists (lists[i], sizes[i]
** bytes each, oldest first) and the ntail postings after them (ascending
** seq, above every list's; copied), decoded a block at a time: the lists
** with a skip table only when asked (a2m_seg_lazy_fill), the others now.
** A list's bytes are copied, unless own (NULL: none) has own[i], a malloc'd
** buffer starting at lists[i]: *out then takes it as it is, and sets
** own[i] to NULL (whatever own still holds stays the caller's). Returns 1;
** 0 when they cannot be read so (no list has a skip table, one holds a
** tombstone, their seq ranges overlap: merge them instead), -1 when memory
** runs out, -2 when a list is corrupt: own is then untouched.
** a2m_seg_lazy_free frees (NULL: a no-op).
*/
int  a2m_seg_lazy_new(const unsigned char *const *lists, const size_t *sizes, size_t k,
		      const a2m_posting *tail, size_t ntail, unsigned char **own,
		      a2m_seg_lazy **out);
void a2m_seg_lazy_free(a2m_seg_lazy *lz);

/*
** Names lz's term (copied) and its store: a block found corrupt when
** filled then sets base's error (a2m_store_fail) to say which. Without a
** name (or no memory for it) fill fails the same, saying less.
*/
void a2m_seg_lazy_name(a2m_seg_lazy *lz, a2m_store *base, const char *term, size_t len);

/* Lends lz as store.h's a2m_postings_lent (fill: a2m_seg_lazy_fill, ctx lz). */
void a2m_seg_lazy_lend(a2m_seg_lazy *lz, a2m_postings_lent *out);

/* Decodes block b of lz (ctx) if not yet: 0, or -1 when its bytes are not what its skip table says. */
int  a2m_seg_lazy_fill(void *ctx, size_t b);
/* Decodes every block: 0 or -1. */
int  a2m_seg_lazy_fill_all(a2m_seg_lazy *lz);

/*
** store.h's peek for lz (ctx): block b filled first while lz's cost with
** it stays within its cap (a2m_seg_lazy_cap), else decoded up to seq and
** not kept.
*/
int  a2m_seg_lazy_peek(void *ctx, size_t b, int64_t seq, a2m_peek_at *at, a2m_posting *out);

/*
** The most lz may hold (a2m_seg_lazy_cost) before a peek stops filling
** blocks (SIZE_MAX until set: a peek always fills). The SQLite index sets
** a small one, so that probes into long lists never fill
** (sqlite_index_read.c, PEEK_FILL_BYTES).
*/
void a2m_seg_lazy_cap(a2m_seg_lazy *lz, size_t cap);

/* What lz holds now, in bytes (the postings cache's budget). */
size_t a2m_seg_lazy_cost(const a2m_seg_lazy *lz);

/*
** Lets go of the blocks decoded from lz's bytes (they are decoded again
** when asked): its postings move to a new v, so only while nothing of lz
** is lent. Nothing changes when lz is decoded whole (its bytes are gone
** then) or memory runs out.
*/
void a2m_seg_lazy_shed(a2m_seg_lazy *lz);

/* 1 when every block of lz is decoded (its bytes let go: nothing to shed), else 0. */
int  a2m_seg_lazy_whole(const a2m_seg_lazy *lz);

/* ---- merging in memory (sqlite_segments_merge.c) ---- */

/* A block is closed once it holds this many bytes (sqlite_segments.c). */
#define A2M_SEG_BLOCK_BYTES 900

/*
** A segment being built: its terms added in ascending order fill blocks of
** about A2M_SEG_BLOCK_BYTES; each term's hash is kept for the segment's
** filter. A full block is either written at once (a commit's new segment:
** sqlite_segments.c) or kept in done (a merge made apart from SQLite), as
**
**   varint(length) first-term  varint(size) block
**
** Zero-initialise; free with a2m_seg_build_free.
*/
typedef struct a2m_seg_build {
	a2m_seg_bytes block;   /* the block being filled */
	a2m_seg_bytes first;   /* its first term */
	uint64_t     *hashes;  /* every term added, hashed */
	size_t        nhashes, hashes_cap;
	a2m_seg_bytes done;    /* blocks kept by a2m_seg_build_keep */
	a2m_seg_bytes skip;    /* a long list with its skip table (a2m_seg_skip_build) */
	int64_t       maxseq;  /* a merge's: at least the highest seq of a posting written */
} a2m_seg_build;

/*
** Adds term (len bytes) with its encoded list (n bytes at data) to the
** block, with a skip table when the list is long enough for one. Returns 1 when the block is now full (write or keep it), 0 when
** not, -1 when memory runs out.
*/
int  a2m_seg_build_add(a2m_seg_build *b, const char *term, size_t len, const void *data,
		       size_t n);
/* Moves the block (if it holds anything) to done. Returns 0, or -1 when memory runs out. */
int  a2m_seg_build_keep(a2m_seg_build *b);
void a2m_seg_build_free(a2m_seg_build *b);

/* One input segment of a merge, read whole: its rows' bytes and where its terms are. */
typedef struct a2m_seg_input {
	int64_t       seg;
	a2m_seg_bytes bytes;
	size_t       *rows;    /* per term: term offset, term length, list offset, list length */
	size_t        n, cap, at;
	uint64_t      prefix;  /* rows[at]'s term's (a2m_seg_prefix) */
} a2m_seg_input;

/* Appends a row's block (n bytes) to in. Returns 0, -1 (no memory), -2 (corrupt). */
int  a2m_seg_input_add(a2m_seg_input *in, const void *data, size_t n);
void a2m_seg_input_free(a2m_seg_input *in);
/* Frees in[0..n) and the array itself (NULL: nothing). */
void a2m_seg_inputs_free(a2m_seg_input *in, size_t n);

/*
** Merges in[0..n) (oldest first, a contiguous run in age) into out, whose
** blocks are all kept in out->done; *entries gets the entries written, and
** out->maxseq at least the highest seq of a posting among them. A
** tombstone is kept only when its seq is at most tombstone_floor, the
** highest maxseq of the segments older than the run (0 when the run starts
** at the oldest; INT64_MAX when one of them is not known). Pure: no
** SQLite, so it may run on a thread of its own. Returns 0, -1 when memory
** runs out, -2 when an input is corrupt.
*/
int a2m_seg_merge_inputs(a2m_seg_input *in, size_t n, int64_t tombstone_floor,
			 a2m_seg_build *out, int64_t *entries);

/*
** A merge computed on a thread of its own while the transaction that will
** write it goes on (sqlite_segments_ahead.c): the inputs are the
** job's. a2m_seg_job_start returns NULL when memory runs out or no thread
** starts (in[] is then still the caller's); a2m_seg_job_done says, without
** waiting, whether the thread has finished; a2m_seg_job_finish waits for the
** thread and returns a2m_seg_merge_inputs's code, with the result in
** job->out and job->entries; a2m_seg_job_free waits too, then frees all.
*/
typedef struct a2m_seg_job {
	a2m_seg_input *in;
	size_t         n;
	int64_t        tombstone_floor;
	int            level;    /* the level the merged segment goes to */
	a2m_seg_build  out;
	int64_t        entries;
	int            rc;
	int            joined;
	atomic_int     done;     /* set by the thread as it ends (a2m_seg_job_done) */
	pthread_t      thread;
} a2m_seg_job;

a2m_seg_job *a2m_seg_job_start(a2m_seg_input *in, size_t n, int64_t tombstone_floor,
			       int level);
int          a2m_seg_job_done(a2m_seg_job *job);
int          a2m_seg_job_finish(a2m_seg_job *job);
void         a2m_seg_job_free(a2m_seg_job *job);

/* ---- merges in steps (sqlite_segments_step.c) ---- */

/*
** New segments are numbered from the next multiple of A2M_SEG_GAP above
** every number in use, so that the output of a merge in steps can take its
** newest input's number plus one while the inputs are still live, and stand
** where they stood in age once it replaces them.
*/
#define A2M_SEG_GAP 64

/* The merges in steps of one connection: statements and the merges under way. */
typedef struct a2m_seg_steps a2m_seg_steps;

/* What the last step of a merge hands back: the output to make live, the inputs to retire. */
typedef struct a2m_seg_done {
	int64_t         out;
	int             level;
	int64_t         entries, maxseq;
	const uint64_t *hashes;  /* of every term of the output, for its filter */
	size_t          nhashes;
	const int64_t  *inputs;
	size_t          ninputs;
} a2m_seg_done;

/*
** Writes the output's directory row (none when it holds no entry) and
** deletes the inputs' directory rows; returns 0 or a negative code.
*/
typedef int (*a2m_seg_done_fn)(const a2m_seg_done *d, void *ctx);

/*
** Creates the step tables if missing and prepares the statements on db (a
** read-write connection). Errors go to base. a2m_seg_steps_close frees
** (NULL: a no-op).
*/
int  a2m_seg_steps_open(sqlite3 *db, a2m_store *base, a2m_seg_steps **out);
void a2m_seg_steps_close(a2m_seg_steps *t);

/* Reads the merges under way from the file (at each commit: another process may have moved them). */
int a2m_seg_steps_load(a2m_seg_steps *t, a2m_store *base);

/* 1 when a merge of that level is under way; 1 when seg is one's input. */
int a2m_seg_steps_busy(const a2m_seg_steps *t, int level);
int a2m_seg_steps_is_input(const a2m_seg_steps *t, int64_t seg);

/*
** Begins merging segs[0..n) (a whole level, oldest first) into one of
** level + 1, in steps, with the run's tombstone floor. Returns 0, 1 when
** it cannot (the output's number is taken, in a file numbered before the
** gaps: merge the level whole), or a negative code.
*/
int a2m_seg_steps_begin(a2m_seg_steps *t, a2m_store *base, const int64_t *segs, size_t n,
			int level, int64_t floor);

/*
** Moves the merges under way on, the lowest level first, until budget
** bytes of their inputs are read; a merge whose last step this is calls
** done, and *changed is set. Returns 0 or a negative code.
*/
int a2m_seg_steps_run(a2m_seg_steps *t, a2m_store *base, size_t budget, a2m_seg_done_fn done,
		      void *ctx, int *changed);

/* Deletes up to rows rows of retired segments (a2m_segdrop). Returns 0 or a negative code. */
int a2m_seg_steps_drop(a2m_seg_steps *t, a2m_store *base, int64_t rows);

/* ---- the segments of one connection (sqlite_segments.c) ---- */

/* The segment statements of one connection. */
typedef struct a2m_segments a2m_segments;

/* Prepares the statements on db (the tables must exist). Errors go to base. */
int a2m_segments_open(sqlite3 *db, a2m_store *base, a2m_segments **out);

/* Finalizes and frees. NULL is a no-op. */
void a2m_segments_close(a2m_segments *s);

/*
** Starts a new segment, the newest (inside the caller's transaction):
** *seg is its number. Then a2m_segments_add for each term in ascending
** order, then a2m_segments_finish with the entries written and the
** highest seq of a posting among them (maxseq). Nothing is visible to
** reads before finish writes the directory row. Each returns 0 or a
** negative code.
*/
int a2m_segments_start(a2m_segments *s, a2m_store *base, int64_t *seg);
int a2m_segments_add(a2m_segments *s, a2m_store *base, int64_t seg, const char *term,
		     size_t len, const void *data, size_t n);
int a2m_segments_finish(a2m_segments *s, a2m_store *base, int64_t seg, int level,
			int64_t entries, int64_t maxseq);

/*
** The level a segment of that many entries starts at: 0 for a commit's,
** higher for a rebuild's single big segment, so that small commits after
** it do not rewrite it at their first merge.
*/
int a2m_segments_level_for(int64_t entries);

/*
** Tiered merging, inside the caller's transaction: writes the merge begun
** ahead (a2m_segments_merge_ahead), if any and its thread is done (or the
** level is nearly full again, or all is set: then it waits for it; a merge
** whose inputs another writer merged meanwhile is dropped); then, while some level holds
** more than the merge factor's segments, merges them all into one of the
** next level (all of them when all is set: one segment in the end).
** Returns 0 or a negative code.
*/
int a2m_segments_maintain(a2m_segments *s, a2m_store *base, int all);

/*
** At the start of a write transaction: when a level holds the merge
** factor's segments, reads them and merges them on a thread of its own
** while the transaction goes on; its commit's a2m_segments_maintain
** writes the result, or a later commit's if the thread has not finished
** (the writer does not wait for it). Returns 0 or a negative code (nothing
** is under way then; the commit merges the level if it must).
*/
int a2m_segments_merge_ahead(a2m_segments *s, a2m_store *base);

/* Drops the merge begun ahead, if any (a rollback; it may have been begun by
** an earlier transaction), waiting for its thread. s NULL (segments never
** opened) is a no-op. */
void a2m_segments_merge_cancel(a2m_segments *s);

/* 1 when a merge begun ahead waits to be written. */
int a2m_segments_merging(const a2m_segments *s);

/*
** on: no merge ahead; a level is merged inside the commit that fills it
** (at the merge factor's segments, not one more). Off by default.
*/
void a2m_segments_merge_inline(a2m_segments *s, int on);

/*
** Forgets the live segments a read keeps (see a2m_segments_term): after a
** rollback, which may undo segments written or dropped without changing
** the database's data version.
*/
void a2m_segments_forget(a2m_segments *s);

/* Blocks a2m_segments_term has read from SQLite, by every connection (tests). */
size_t a2m_segments_block_reads(void);

/*
** Visits term's live postings (tombstones resolved) in ascending seq,
** reading the term's block of every live segment whose term filter (a
** Bloom filter stored with the segment's directory row: bloom.h) does not
** rule the term out. The live segments and their filters are kept between
** reads while the data version stays and this connection writes none.
** visit's negative code stops the walk and is returned.
*/
int a2m_segments_term(a2m_segments *s, a2m_store *base, const char *term, size_t len,
		      a2m_posting_visit visit, void *ctx);

/*
** A term's lists in the live segments, oldest first (a2m_segments_term_lists):
** list i is n[i] bytes at p[i]; own[i] is p[i] when the list was read into
** a buffer of its own (a long one), which the caller may take over
** (a2m_seg_lazy_new), else NULL.
*/
typedef struct a2m_seg_term_lists {
	const unsigned char *p[A2M_SEG_MAX_LISTS];
	size_t               n[A2M_SEG_MAX_LISTS];
	unsigned char       *own[A2M_SEG_MAX_LISTS];
	size_t               k;
} a2m_seg_term_lists;

/*
** Where s keeps the entries (postings and tombstones) of the live segments
** as the last read of a term found them (0 before one), summed as it reads
** the directory: what the postings cache's default budget scales with
** (sqlite_index_budget.c), read through the pointer at the cost of a load.
** Valid until s is closed.
*/
const int64_t *a2m_segments_entries(const a2m_segments *s);

/*
** a2m_segments_term's read without its merge: *out gets the term's list in
** each live segment that holds it, oldest first, as the segments hold
** them (skip tables, tombstones), valid until the next read on s (the
** lists in out->own until a2m_seg_term_lists_free, which the caller must
** call after a read that returned 0). The bytes are copies: nothing of
** SQLite's is held once this returns.
*/
int a2m_segments_term_lists(a2m_segments *s, a2m_store *base, const char *term, size_t len,
			    a2m_seg_term_lists *out);

/* Frees the lists of tl still in tl->own (those not taken over). */
void a2m_seg_term_lists_free(a2m_seg_term_lists *tl);

/*
** Visits the postings of the lists tl (a2m_segments_term_lists) merged,
** tombstones resolved, in ascending seq; lists: room for tl->k decoders.
** visit's negative code stops the walk and is returned.
*/
int a2m_segments_merge_term(a2m_store *base, const a2m_seg_term_lists *tl,
			    a2m_posting_visit visit, void *ctx, a2m_seg_list *lists);

#ifdef A2M_TEST_HOOKS  /* the tests' build of the library only (Makefile) */
/*
** For tests: how skip tables are written from now on: 0 as they should be,
** 1 not at all (the previous layout, postings/5), 2 with bounds too tight
** (every block bounded as one occurrence in a record four times as long
** as its shortest: a recall trusting them misses records).
** a2m_seg_skip_verify judges by the entries whatever the mode.
*/
void a2m_seg_skip_for_tests(int mode);

/*
** For tests: a term's list of at least this many bytes is read into a
** buffer of its own (a2m_seg_term_lists.own; 0: the default, 64 KiB).
*/
void a2m_segments_own_bytes_for_tests(size_t bytes);

/* For tests: how many times a2m_seg_lazy_shed let blocks go, by every thread. */
size_t a2m_seg_lazy_sheds(void);

/* For tests: how many peeks decoded a block without filling it, by every thread. */
size_t a2m_seg_lazy_peeks(void);

/*
** For tests: the fewest entries of a full level merged in steps (< 0: the
** default, 100 000) and the bytes a commit's steps read (0: by its size).
*/
void a2m_segments_steps_for_tests(int64_t min_entries, size_t budget);

/* For tests: segments per level before a merge (0: the default, 8). */
void a2m_segments_merge_factor_for_tests(int k);

/*
** For tests: the fewest entries a full level needs to be merged ahead
** rather than inside the commit (< 0: the default, 4 096).
*/
void a2m_segments_ahead_min_for_tests(int64_t entries);

/*
** For tests: whether a commit leaves a merge begun ahead whose thread has
** not finished to a later commit: 0 (the default) when it has not
** finished, 1 never (it waits, as before), 2 always, as if the thread were
** never done before the level fills again.
*/
void a2m_segments_ahead_wait_for_tests(int mode);

/*
** For tests: the next n merges begun ahead hold their thread before they
** merge, until a2m_seg_job_release_for_tests() (or, as a bound, 30 s: the
** release then returns 0, telling the test that nothing waited for it
** to be asked). A commit that waited for a held merge would stall there.
*/
void a2m_seg_job_hold_for_tests(int n);
int  a2m_seg_job_release_for_tests(void);
#endif

#endif
