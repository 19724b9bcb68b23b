/*
** sqlite_index_read.c — the reads of the SQLite term index (sqlite_index.h):
** the figures, a term's postings (the segments', then the tail's), and the
** postings cache that keeps them between commits.
**
** Apart from sqlite_index.c (the buffer and its writing out) because a read
** has rules of its own: outside a transaction it first brings the tail to
** the file's snapshot (sqlite_index_tail.c); inside one it reads the
** transaction's own writes, from the buffer when they are all inserts above
** the mark, else after writing them out.
*/
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postings_cache.h"
#include "store/sqlite_index_internal.h"

static int fail(sqlite3 *db, a2m_store *base, const char *op)
{
	return a2m_store_fail(base, "index %s: %s", op, sqlite3_errmsg(db));
}

static void reset(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/*
** Before a read: outside a transaction, the tail as the file has it now;
** inside one, its own writes count, and only inserts above the mark can be
** read from the buffer beside the segments: anything else is written first.
*/
static int read_ready(a2m_sqlite_index *x, a2m_store *base)
{
	if (sqlite3_get_autocommit(x->db))
		return a2m_tail_sync(x, base);
	if (x->must_flush && x->nops)
		return a2m_sqlite_index_write(x, base, 1);
	return 0;
}

int a2m_sqlite_index_stats(a2m_sqlite_index *x, a2m_store *base, a2m_index_stats *out)
{
	int rc = 0;
	memset(out, 0, sizeof *out);
	if ((rc = read_ready(x, base)) != 0)
		return rc;
	if (sqlite3_step(x->stats) != SQLITE_ROW) {
		rc = fail(x->db, base, "stats");
	} else {
		/* The figures flush has not written yet (none after a flush). */
		out->docs = sqlite3_column_int64(x->stats, 0) + x->pending.docs;
		out->total_len = sqlite3_column_int64(x->stats, 1) + x->pending.total_len;
		out->unindexed = sqlite3_column_int64(x->stats, 2) + x->pending.unindexed;
		/* A query reads the figures first: the moment to notice that the
		** database changed (here or elsewhere) since the cache was filled. */
		unsigned version = 0;
		if (x->cache && a2m_sqlite_data_version(x->db, &version))
			a2m_pcache_validate(x->cache, version);
		else if (x->cache)
			a2m_pcache_clear(x->cache);
	}
	reset(x->stats);
	return rc;
}

/* Visits term's postings as the segments hold them (visit's negative code
** stops the walk). */
static int read_postings(a2m_sqlite_index *x, a2m_store *base, const char *term,
			 size_t len, a2m_posting_visit visit, void *ctx)
{
	x->reads++;
	int rc = a2m_segments_term(x->segs, base, term, len, visit, ctx);
	a2m_sqlite_index_scale_cache(x);
	/* The tail's postings: their seqs are above every segment's. */
	return rc ? rc : a2m_tail_visit(x, base, term, len, visit, ctx);
}

/* Collects the rows read for the cache in x->rows (n of them), or in v. */
typedef struct collect {
	a2m_sqlite_index *x;
	a2m_store        *base;
	size_t            n;
	a2m_posting     **v;    /* NULL: x->rows */
	size_t           *cap;
} collect;

static int collect_row(int64_t seq, uint32_t tf, uint32_t dl, void *ctx)
{
	collect *c = ctx;
	a2m_posting **v = c->v ? c->v : &c->x->rows;
	size_t *cap = c->v ? c->cap : &c->x->rows_cap;
	if (c->n == *cap) {
		size_t room = *cap ? *cap * 2 : 1024;
		a2m_posting *r = realloc(*v, room * sizeof *r);
		if (!r)
			return a2m_store_fail(c->base, "postings: out of memory");
		*v = r;
		*cap = room;
	}
	(*v)[c->n++] = (a2m_posting){.seq = seq, .tf = tf, .dl = dl};
	return 0;
}

/* ---- a term kept a block at a time (sqlite_segments.h, a2m_seg_lazy) ---- */

/*
** The most a lazily read term may hold (a2m_seg_lazy_cost) while a probe
** fills the block it lands in and keeps it decoded (a2m_seg_lazy_peek),
** unless the cache lets a term hold less; past it a probe decodes the
** block only up to the record and keeps nothing, however much room the
** cache has. Filling for later queries cost more than it saved on long
** lists: at 10M records a probe lands in a block no query had reached,
** and each fill wrote fresh pages of the term's postings array (40% of a
** recall's page faults; docs/BENCHMARKS.md, "Ten million: probes that
** keep nothing"). A short list (every list at 10k records) is cheap to
** keep whole.
*/
#define PEEK_FILL_BYTES ((size_t)256 << 10)

#ifdef A2M_TEST_HOOKS
static int lazy_off_for_tests, peeks_fill_for_tests;
static size_t peek_fill_bytes_for_tests;

void a2m_sqlite_index_peek_fill_bytes_for_tests(size_t bytes)
{
	peek_fill_bytes_for_tests = bytes;
}
#define peek_fill_bytes (peek_fill_bytes_for_tests ? peek_fill_bytes_for_tests : PEEK_FILL_BYTES)

void a2m_sqlite_index_lazy_for_tests(int on)
{
	lazy_off_for_tests = !on;
}

void a2m_sqlite_index_peeks_fill_for_tests(int on)
{
	peeks_fill_for_tests = on;
}
#else
#define lazy_off_for_tests 0
#define peeks_fill_for_tests 0
#define peek_fill_bytes PEEK_FILL_BYTES
#endif

static void lazy_lend(void *obj, a2m_postings_lent *out)
{
	a2m_seg_lazy_lend(obj, out);
}

static int lazy_fill_all(void *obj)
{
	return a2m_seg_lazy_fill_all(obj);
}

static size_t lazy_cost(const void *obj)
{
	return a2m_seg_lazy_cost(obj);
}

static void lazy_shed(void *obj)
{
	a2m_seg_lazy_shed(obj);
}

static int lazy_whole(const void *obj)
{
	return a2m_seg_lazy_whole(obj);
}

static void lazy_free(void *obj)
{
	a2m_seg_lazy_free(obj);
}

static const a2m_pcache_lazy_ops lazy_ops = {lazy_lend, lazy_fill_all, lazy_cost, lazy_shed,
					      lazy_whole, lazy_free};

/*
** Reads term into the cache: its lists with their skip tables, decoded a
** block at a time as queries ask (a2m_seg_lazy), when they allow it; else
** its postings merged and decoded whole, as read_postings reads them.
*/
static int cache_read(a2m_sqlite_index *x, a2m_store *base, const char *term, size_t len)
{
	a2m_seg_term_lists tl;
	a2m_posting *tail = NULL;
	size_t tail_cap = 0;
	collect t = {x, base, 0, &tail, &tail_cap};
	x->reads++;
	int rc = a2m_segments_term_lists(x->segs, base, term, len, &tl);
	a2m_sqlite_index_scale_cache(x);  /* before the put: it may allow a larger entry */
	/* The tail's postings: their seqs are above every segment's. */
	if (!rc)
		rc = a2m_tail_visit(x, base, term, len, collect_row, &t);
	a2m_seg_lazy *lz = NULL;
	int got = rc || lazy_off_for_tests ? 0 : a2m_seg_lazy_new(tl.p, tl.n, tl.k, tail, t.n,
								  tl.own, &lz);
	if (got == 1) {
		a2m_seg_lazy_name(lz, base, term, len);
		/* Probes fill its blocks only while it is small (PEEK_FILL_BYTES). */
		size_t most = a2m_pcache_entry_most(x->cache);
		a2m_seg_lazy_cap(lz, peeks_fill_for_tests ? SIZE_MAX
					: most < peek_fill_bytes ? most : peek_fill_bytes);
		a2m_pcache_put_lazy(x->cache, term, len, lz, &lazy_ops);
	} else if (got < 0) {
		rc = a2m_store_fail(base, got == -1 ? "index postings: out of memory"
						    : "index postings: a corrupt segment");
	} else if (!rc) {
		a2m_seg_list lists[A2M_SEG_MAX_LISTS];
		collect c = {x, base, 0, NULL, NULL};
		rc = a2m_segments_merge_term(base, &tl, collect_row, &c, lists);
		for (size_t i = 0; !rc && i < t.n; i++)
			rc = collect_row(tail[i].seq, tail[i].tf, tail[i].dl, &c);
		if (!rc)
			a2m_pcache_put(x->cache, term, len, x->rows, c.n);
	}
	a2m_seg_term_lists_free(&tl);  /* what lz did not take (none on a failed read) */
	free(tail);
	return rc;
}

/* A term's postings from the cache, or read into it and then visited. */
static int cached_postings(a2m_sqlite_index *x, a2m_store *base, const char *term,
			   size_t len, a2m_posting_visit visit, void *ctx)
{
	int rc = 0;
	if (a2m_pcache_visit(x->cache, term, len, visit, ctx, &rc))
		return rc;
	collect c = {x, base, 0, NULL, NULL};
	if ((rc = read_postings(x, base, term, len, collect_row, &c)) != 0)
		return rc;
	a2m_pcache_put(x->cache, term, len, x->rows, c.n);
	for (size_t i = 0; i < c.n; i++)
		if ((rc = visit(x->rows[i].seq, x->rows[i].tf, x->rows[i].dl, ctx)) < 0)
			return rc;
	return 0;
}

/*
** Inside a read bracket the cache is emptied by nothing but a write of this
** very connection, which ends the loans anyway (store.h): the data version
** cannot change within the bracket's snapshot, so a validate (here, or in
** a2m_sqlite_index_stats) finds the version it stamped; the commit journal
** is replayed (forget_postings, committed) at read_begin only, before any
** loan; flush, discard and committed run on a write, and the reader
** connections never write; a reader's index is closed only when the
** connection is given back (sqlite_pool.c, release), after read_end.
*/
/*
** Readies the postings cache to lend term: 0 when it may hold it now (read
** into it when missing; a term too big for it is still missing), 1 when it
** cannot lend (in a transaction, no cache, an unknown data version), or a
** negative code.
*/
static int cache_ready(a2m_sqlite_index *x, a2m_store *base, const char *term, size_t len)
{
	int rc = 0;
	unsigned version = 0;
	/* A transaction's own writes are not in the cache (a2m_sqlite_index_postings). */
	if (!x->cache || !sqlite3_get_autocommit(x->db))
		return 1;
	if ((rc = read_ready(x, base)) != 0)
		return rc;
	/* What the cache holds may be from before another connection's commit. */
	if (!a2m_sqlite_data_version(x->db, &version)) {
		a2m_pcache_clear(x->cache);
		return 1;
	}
	a2m_pcache_validate(x->cache, version);
	if (a2m_pcache_lend_bounds(x->cache, term, len, &(a2m_postings_lent){0}) != 0)
		return 0;
	return cache_read(x, base, term, len);
}

int a2m_sqlite_index_view(a2m_sqlite_index *x, a2m_store *base, const char *term,
			  size_t len, const a2m_posting **v, size_t *n)
{
	int rc = cache_ready(x, base, term, len);
	if (rc)
		return rc;
	/* Not kept (too big, no memory): index_postings reads it again. */
	return a2m_pcache_lend(x->cache, term, len, v, n) ? 0 : 1;
}

int a2m_sqlite_index_lend(a2m_sqlite_index *x, a2m_store *base, const char *term, size_t len,
			  a2m_postings_lent *out)
{
	int rc = cache_ready(x, base, term, len);
	if (rc)
		return rc;
	/* Out of order: the view lends it; not kept (too big): copy it, not read again twice. */
	switch (a2m_pcache_lend_bounds(x->cache, term, len, out)) {
	case 1:
		return 0;
	case 0:
		return 2;
	default:
		return 1;
	}
}

void a2m_sqlite_index_bracket(a2m_sqlite_index *x)
{
	if (x->cache)
		a2m_pcache_next_period(x->cache);
}

int a2m_sqlite_data_version(sqlite3 *db, unsigned *out)
{
	*out = 0;
	return sqlite3_file_control(db, "main", SQLITE_FCNTL_DATA_VERSION, out) == SQLITE_OK;
}

int a2m_sqlite_index_postings(a2m_sqlite_index *x, a2m_store *base, const char *term,
			      size_t len, a2m_posting_visit visit, void *ctx)
{
	int rc = read_ready(x, base);
	if (rc)
		return rc;
	/* Outside a transaction (a recall), through the cache. */
	if (x->cache && sqlite3_get_autocommit(x->db))
		return cached_postings(x, base, term, len, visit, ctx);
	return read_postings(x, base, term, len, visit, ctx);
}
