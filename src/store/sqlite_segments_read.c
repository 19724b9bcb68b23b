/*
** sqlite_segments_read.c — reading one term of the SQLite term index
** across its live segments (sqlite_segments.h): the directory of live
** segments and their term filters, kept between reads, and a term's block
** in each segment the filter does not rule out.
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

/* ---- reading ---- */

typedef struct visiting {
	a2m_posting_visit visit;
	void             *ctx;
} visiting;

static int visit_entry(const a2m_seg_entry *e, void *ctx)
{
	visiting *v = ctx;
	return v->visit(e->seq, e->tf, e->dl, v->ctx);
}

/*
** Finds term (len bytes) in the block of n bytes at blob (NULL: no block):
** *list, *lsize its list. Returns 1, 0 when the block does not hold it, -1
** when the block is corrupt.
*/
static int find_in_block(const unsigned char *blob, size_t n, const char *term, size_t len,
			 const unsigned char **list, size_t *lsize)
{
	const unsigned char *p = blob, *t;
	size_t tlen;
	int got;
	if (!blob)
		return 0;
	while ((got = a2m_seg_next_in_block(&p, blob + n, &t, &tlen, list, lsize)) == 1) {
		int c = a2m_seg_cmp_terms(t, tlen, (const unsigned char *)term, len);
		if (c >= 0)
			return c == 0;
	}
	return got;
}

/*
** A list at least this long is read into a buffer of its own (the reader
** may keep it: a2m_seg_lazy_new), not into s->buf: a frequent word's list
** at 10M records is megabytes, and s->buf grows by doubling, each time
** copying what it holds.
*/
#define OWN_BYTES 65536

#ifdef A2M_TEST_HOOKS
static size_t own_bytes_for_tests;

void a2m_segments_own_bytes_for_tests(size_t bytes)
{
	own_bytes_for_tests = bytes;
}
#define own_bytes (own_bytes_for_tests ? own_bytes_for_tests : OWN_BYTES)
#else
#define own_bytes OWN_BYTES
#endif

/* The lists of one term read so far: spans of s->buf, or own buffers. */
typedef struct term_read {
	a2m_segments  *s;
	const char    *term;
	size_t         len, k;
	unsigned char *own[A2M_SEG_MAX_LISTS];
	sqlite3_blob  *blob;  /* the handle of the long rows read so far, or NULL */
} term_read;

/*
** Reads n bytes at off of the row open in blob into dst: 0, or -1 (the
** row changed under the handle, or an I/O error).
*/
static int blob_get(sqlite3_blob *blob, void *dst, size_t n, size_t off)
{
	return n == 0 || sqlite3_blob_read(blob, dst, (int)n, (int)off) == SQLITE_OK ? 0 : -1;
}

/*
** Makes s->win hold the row's bytes [off, off + need) (need within the
** row), reading WIN_BYTES or more from off when it does not: a row of
** ~900 bytes is read in one call, and a long list's row only up to it.
*/
#define WIN_BYTES 1024

static int win_ensure(a2m_segments *s, sqlite3_blob *blob, size_t size, size_t off, size_t need)
{
	if (off >= s->win_off && off + need <= s->win_off + s->win.n)
		return 0;
	size_t n = need > WIN_BYTES ? need : WIN_BYTES;
	if (n > size - off)
		n = size - off;
	s->win.n = 0;
	if (a2m_seg_reserve(&s->win, n) != 0)
		return -2;
	if (blob_get(blob, s->win.p, n, off) != 0)
		return -1;
	s->win_off = off;
	s->win.n = n;
	return 0;
}

/*
** Finds term (len bytes) in the block of row rowid (size bytes, open in
** blob), reading only its terms' heads up to it: *at, *lsize its list's
** offset in the row and size. Returns 1, 0 when the block does not hold
** it, -1 when the row cannot be read or is corrupt, -2 when memory runs out.
*/
static int find_in_row(a2m_segments *s, sqlite3_blob *blob, size_t size, const char *term,
		       size_t len, size_t *at, size_t *lsize)
{
	size_t off = 0;
	s->win.n = 0;
	while (off < size) {
		/* A head: two varints (10 bytes at most each) around the term. */
		size_t head = size - off < 20 ? size - off : 20;
		int rc = win_ensure(s, blob, size, off, head);
		if (rc)
			return rc;
		const unsigned char *p = s->win.p + (off - s->win_off), *end = p + head;
		uint64_t tlen, n;
		if (!a2m_seg_get_varint(&p, end, &tlen) || tlen > size - off)
			return -1;
		size_t tat = off + (size_t)(p - (s->win.p + (off - s->win_off)));
		head = tat - off + (size_t)tlen + 10;
		if (head > size - off)
			head = size - off;
		if ((rc = win_ensure(s, blob, size, off, head)))
			return rc;
		const unsigned char *t = s->win.p + (tat - s->win_off);
		p = t + tlen;
		end = s->win.p + (off - s->win_off) + head;
		if (p > end || !a2m_seg_get_varint(&p, end, &n))
			return -1;
		size_t list = (size_t)(p - s->win.p) + s->win_off;
		if (n > size - list)
			return -1;
		int c = a2m_seg_cmp_terms(t, (size_t)tlen, (const unsigned char *)term, len);
		if (c >= 0) {
			*at = list;
			*lsize = (size_t)n;
			return c == 0;
		}
		off = list + (size_t)n;
	}
	return 0;
}

/*
** Makes room for the term's next list, n bytes (in an own buffer when
** long), kept in r at once so that a failure frees it with the others:
** *dst is where to copy it. Returns 0 or a negative code.
*/
static int list_room(term_read *r, a2m_store *base, size_t n, unsigned char **dst)
{
	a2m_segments *s = r->s;
	if (r->k == A2M_SEG_MAX_LISTS)
		return a2m_store_fail(base, "index postings: too many segments");
	if (a2m_seg_grow(&s->spans, &s->spans_cap, 2 * r->k + 2, sizeof *s->spans) != 0)
		return a2m_store_fail(base, "index postings: out of memory");
	r->own[r->k] = NULL;
	if (n >= own_bytes) {
		if (!(*dst = r->own[r->k] = malloc(n)))
			return a2m_store_fail(base, "index postings: out of memory");
		s->spans[2 * r->k] = 0;
	} else {
		if (a2m_seg_reserve(&s->buf, n) != 0)
			return a2m_store_fail(base, "index postings: out of memory");
		*dst = s->buf.p + s->buf.n;
		s->spans[2 * r->k] = s->buf.n;
		s->buf.n += n;
	}
	s->spans[2 * r->k + 1] = n;
	r->k++;
	return 0;
}

/*
** Copies the term's list out of row rowid of a2m_segments, a long one,
** read through the blob handle r->blob (opened at the first such row,
** moved to the others): only the block's heads up to the term, then the
** list, once, straight into the buffer kept. The layout before postings/7
** (a WITHOUT ROWID table) assembled a long list's overflowing row in the
** seek's key compare, again in the column read, and a third time in our
** copy.
*/
static int term_row_blob(term_read *r, a2m_store *base, int64_t rowid)
{
	a2m_segments *s = r->s;
	sqlite3_blob **blob = &r->blob;
	int brc = *blob ? sqlite3_blob_reopen(*blob, rowid)
		       : sqlite3_blob_open(s->db, "main", "a2m_segments", "data", rowid, 0, blob);
	if (brc != SQLITE_OK)
		return fail(s, base, "postings");
	size_t size = (size_t)sqlite3_blob_bytes(*blob), at = 0, n = 0;
	int got = find_in_row(s, *blob, size, r->term, r->len, &at, &n);
	if (got == 0)
		return 0;  /* not in this segment */
	if (got == -2)
		return a2m_store_fail(base, "index postings: out of memory");
	if (got < 0)
		return a2m_store_fail(base, "index postings: a corrupt segment");
	unsigned char *dst;
	int rc = list_room(r, base, n, &dst);
	if (rc)
		return rc;
	if (at >= s->win_off && at + n <= s->win_off + s->win.n)
		memcpy(dst, s->win.p + (at - s->win_off), n);
	else if (blob_get(*blob, dst, n, at) != 0)
		return fail(s, base, "postings");
	return 0;
}

/*
** The block that would hold the term in one segment (block_of's row):
** its data when short (in the row's page: one copy), else only its rowid,
** the row then read through the blob handle.
*/
static int term_row(sqlite3_stmt *st, a2m_store *base, void *ctx)
{
	term_read *r = ctx;
	if (sqlite3_column_type(st, 1) == SQLITE_NULL)
		return term_row_blob(r, base, sqlite3_column_int64(st, 0));
	const unsigned char *data = NULL;
	unsigned char *dst;
	size_t n = 0;
	int got = find_in_block(sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1),
				r->term, r->len, &data, &n);
	if (got == 0)
		return 0;
	if (got < 0)
		return a2m_store_fail(base, "index postings: a corrupt segment");
	int rc = list_room(r, base, n, &dst);
	if (!rc && n)
		memcpy(dst, data, n);
	return rc;
}

void a2m_seg_term_lists_free(a2m_seg_term_lists *tl)
{
	for (size_t i = 0; i < tl->k; i++) {
		free(tl->own[i]);
		tl->own[i] = NULL;
	}
}

void a2m_segments_forget(a2m_segments *s)
{
	if (s) {
		s->dir_valid = 0;
		s->maybe_full = 1;  /* a rollback may have brought a full level back */
	}
}

/* Blocks read for terms by every connection (tests): relaxed, a count only. */
static atomic_size_t block_reads;

size_t a2m_segments_block_reads(void)
{
	return atomic_load_explicit(&block_reads, memory_order_relaxed);
}

/* Finds the filter of the same segment (number and nonce) among the old list's and takes it. */
static void take_bloom(dir_entry *old, size_t nold, dir_entry *e)
{
	for (size_t i = 0; i < nold; i++)
		if (old[i].bloom && old[i].seg == e->seg && old[i].nonce == e->nonce) {
			e->bloom = old[i].bloom;
			e->nbloom = old[i].nbloom;
			old[i].bloom = NULL;
			return;
		}
}

static int dir_row(sqlite3_stmt *st, a2m_store *base, void *ctx)
{
	a2m_segments *s = ctx;
	if (a2m_seg_grow(&s->dir, &s->dir_cap, s->ndir + 1, sizeof *s->dir) != 0)
		return a2m_store_fail(base, "index postings: out of memory");
	s->dir[s->ndir] = (dir_entry){.seg = sqlite3_column_int64(st, 0),
				      .level = sqlite3_column_int(st, 1),
				      .entries = sqlite3_column_int64(st, 2),
				      .nonce = sqlite3_column_int64(st, 3)};
	s->dir_entries += s->dir[s->ndir++].entries;
	return 0;
}

/* Reads seg's filter into e; none stored (or no memory) leaves e without one. */
static int dir_bloom(a2m_segments *s, a2m_store *base, dir_entry *e)
{
	sqlite3_stmt *st = s->dir_bloom;
	int rc = 0;
	if (sqlite3_bind_int64(st, 1, e->seg) != SQLITE_OK)
		return fail(s, base, "postings");
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		const void *b = sqlite3_column_blob(st, 0);
		size_t n = (size_t)sqlite3_column_bytes(st, 0);
		if (b && n && (e->bloom = malloc(n))) {
			memcpy(e->bloom, b, n);
			e->nbloom = n;
		}
	} else if (step != SQLITE_DONE) {
		rc = fail(s, base, "postings");
	}
	reset(st);
	return rc;
}

/*
** Makes s->dir the live segments, unless it still is (see the struct).
** The filters of segments already known are kept, the others read.
*/
static int dir_load(a2m_segments *s, a2m_store *base)
{
	unsigned version = 0;
	/* Before the transaction's first statement its snapshot is not taken,
	** and the data version may be older than what the reads will see. */
	int taken = sqlite3_txn_state(s->db, "main") > SQLITE_TXN_NONE;
	if (s->dir_valid && taken && a2m_sqlite_data_version(s->db, &version) &&
	    version == s->dir_version)
		return 0;
	dir_entry *old = s->dir;
	size_t nold = s->ndir;
	s->dir = NULL;
	s->ndir = s->dir_cap = 0;
	s->dir_entries = 0;
	s->dir_valid = 0;
	int rc = each_row(s, base, s->dir_list, 1, "postings", dir_row, s);
	for (size_t i = 0; !rc && i < s->ndir; i++) {
		take_bloom(old, nold, &s->dir[i]);
		if (!s->dir[i].bloom)
			rc = dir_bloom(s, base, &s->dir[i]);
	}
	for (size_t i = 0; i < nold; i++)
		free(old[i].bloom);
	free(old);
	if (!rc && s->ndir > A2M_SEG_MAX_LISTS)
		rc = a2m_store_fail(base, "index postings: too many segments");
	/* The list was read in this transaction's snapshot: the version now is its. */
	if (!rc && a2m_sqlite_data_version(s->db, &version)) {
		s->dir_valid = 1;
		s->dir_version = version;
	}
	return rc;
}

const int64_t *a2m_segments_entries(const a2m_segments *s)
{
	return &s->dir_entries;
}

int a2m_segments_term_lists(a2m_segments *s, a2m_store *base, const char *term, size_t len,
			    a2m_seg_term_lists *out)
{
	term_read r = {s, term, len, 0, {NULL}, NULL};
	s->buf.n = 0;
	out->k = 0;
	/*
	** The list of segments and their blocks must come from one snapshot:
	** with no read transaction open each statement would take its own, and
	** a merge committed between them would hide postings. So such a read
	** opens one. A read bracket (a held statement: sqlite_pool.c) or a
	** write transaction already has its snapshot.
	*/
	int own = sqlite3_get_autocommit(s->db) &&
		sqlite3_txn_state(s->db, "main") == SQLITE_TXN_NONE;
	if (own && sqlite3_step(s->read_begin) != SQLITE_DONE) {
		reset(s->read_begin);
		return fail(s, base, "postings");
	}
	reset(s->read_begin);
	int rc = dir_load(s, base);
	uint64_t h = a2m_hash_bytes(term, len);
	for (size_t i = 0; !rc && i < s->ndir; i++) {
		const dir_entry *e = &s->dir[i];
		if (e->bloom && !a2m_bloom_maybe(e->bloom, e->nbloom, h))
			continue;  /* the segment surely has no such term */
		atomic_fetch_add_explicit(&block_reads, 1, memory_order_relaxed);
		int bound = sqlite3_bind_int64(s->block_of, 1, e->seg) == SQLITE_OK &&
			sqlite3_bind_text64(s->block_of, 2, term, len, SQLITE_STATIC,
					    SQLITE_UTF8) == SQLITE_OK;
		rc = each_row(s, base, s->block_of, bound, "postings", term_row, &r);
	}
	/* A blob handle is a statement: closed before the read ends. */
	sqlite3_blob_close(r.blob);
	/* A read transaction has nothing to keep: COMMIT only ends it. */
	if (own) {
		if (sqlite3_step(s->read_end) != SQLITE_DONE && !rc)
			rc = fail(s, base, "postings");
		reset(s->read_end);
		if (!sqlite3_get_autocommit(s->db))
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	}
	if (rc) {
		for (size_t i = 0; i < r.k; i++)
			free(r.own[i]);
		return rc;
	}
	for (size_t i = 0; i < r.k; i++) {
		out->own[i] = r.own[i];
		out->p[i] = r.own[i] ? r.own[i] : s->buf.p + s->spans[2 * i];
		out->n[i] = s->spans[2 * i + 1];
	}
	out->k = r.k;
	return 0;
}

int a2m_segments_term(a2m_segments *s, a2m_store *base, const char *term, size_t len,
		      a2m_posting_visit visit, void *ctx)
{
	a2m_seg_list lists[A2M_SEG_MAX_LISTS];
	a2m_seg_term_lists tl;
	int rc = a2m_segments_term_lists(s, base, term, len, &tl);
	if (rc)
		return rc;
	rc = a2m_segments_merge_term(base, &tl, visit, ctx, lists);
	a2m_seg_term_lists_free(&tl);
	return rc;
}

int a2m_segments_merge_term(a2m_store *base, const a2m_seg_term_lists *tl,
			    a2m_posting_visit visit, void *ctx, a2m_seg_list *lists)
{
	for (size_t i = 0; i < tl->k; i++)
		a2m_seg_list_init(&lists[i], tl->p[i], tl->n[i]);
	visiting v = {visit, ctx};
	int corrupt = 0;
	int rc = a2m_seg_merge_lists(lists, tl->k, 0, visit_entry, NULL, &v, &corrupt);
	return corrupt ? a2m_store_fail(base, "index postings: a corrupt segment") : rc;
}
