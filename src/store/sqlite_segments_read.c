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
} term_read;

/* Copies the term's list out of a segment's block: the blob lives only until the next step. */
static int term_row(sqlite3_stmt *st, a2m_store *base, void *ctx)
{
	term_read *r = ctx;
	a2m_segments *s = r->s;
	const unsigned char *data = NULL;
	size_t n = 0;
	int got = find_in_block(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
				r->term, r->len, &data, &n);
	if (got == 0)
		return 0;  /* not in this segment */
	if (got < 0)
		return a2m_store_fail(base, "index postings: a corrupt segment");
	if (r->k == A2M_SEG_MAX_LISTS)
		return a2m_store_fail(base, "index postings: too many segments");
	if (a2m_seg_grow(&s->spans, &s->spans_cap, 2 * r->k + 2, sizeof *s->spans) != 0 ||
	    (n && !data))
		return a2m_store_fail(base, "index postings: out of memory");
	r->own[r->k] = NULL;
	if (n >= own_bytes) {
		if (!(r->own[r->k] = malloc(n)))
			return a2m_store_fail(base, "index postings: out of memory");
		memcpy(r->own[r->k], data, n);
		s->spans[2 * r->k] = 0;
	} else {
		if (a2m_seg_reserve(&s->buf, n) != 0)
			return a2m_store_fail(base, "index postings: out of memory");
		if (n)
			memcpy(s->buf.p + s->buf.n, data, n);
		s->spans[2 * r->k] = s->buf.n;
		s->buf.n += n;
	}
	s->spans[2 * r->k + 1] = n;
	r->k++;
	return 0;
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
	s->dir[s->ndir++] = (dir_entry){.seg = sqlite3_column_int64(st, 0),
					.level = sqlite3_column_int(st, 1),
					.entries = sqlite3_column_int64(st, 2),
					.nonce = sqlite3_column_int64(st, 3)};
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

int a2m_segments_term_lists(a2m_segments *s, a2m_store *base, const char *term, size_t len,
			    a2m_seg_term_lists *out)
{
	term_read r = {s, term, len, 0, {NULL}};
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
