/*
** sqlite_index_tail.c — the term index's tail: postings of committed
** records that wait in a connection's buffer instead of being written as
** a segment at every commit (sqlite_index.h).
**
** Why: a segment per commit was half of a lone remember's cost (the
** segment's row, its directory row, the figures, the levels' upkeep:
** ~100 k instructions and three pages of the log out of ~300 k and 11).
** Written every few hundred records instead, its cost is shared by them.
**
** What keeps it right: a2m_meta's row 'indexed' (the mark) says that every
** record with a seq up to it has its postings in the segments and its
** figures in a2m_index_stats, and no record above it has either. The
** records above the mark are the tail; they are in the file (committed
** with their rows), so a crash loses nothing, and any connection can
** rebuild the tail by analysing them again: a writer when it begins, a
** reader (another connection of the pool, another process) when the data
** version moved since it last looked. Only fresh inserts may wait: a
** transaction that removes or rewrites postings, or inserts below the
** mark, writes the whole buffer out at its commit, so a record is never
** changed while in the tail and a reader can keep what it analysed of the
** tail until the mark passes it.
**
** A clean close writes the tail out (sqlite.c, close_write_tail), so the
** next open and the readers find none to analyse.
**
** The buffer's ops are chained by term (heads), so a read adds a term's
** tail postings after the segments' (they have higher seqs than any
** segment) without scanning the buffer.
*/
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/sqlite_index_internal.h"
#include "util/hash.h"

/*
** The mark (the row, or for a file written before it every record, as
** the builds before the tail indexed all at each commit) and the records
** above max(mark, ?1), in one statement: one snapshot.
*/
#define SQL_TAIL_ROWS \
	"SELECT m.v, r.seq, r.content FROM (SELECT ifnull((SELECT CAST(value AS INTEGER)" \
	" FROM a2m_meta WHERE name = 'indexed'), (SELECT ifnull(max(seq), 0) FROM records))" \
	" AS v) AS m LEFT JOIN records AS r ON r.seq > max(m.v, ?1) ORDER BY r.seq"
#define SQL_MARK_SET \
	"INSERT INTO a2m_meta(name, value) VALUES('indexed', ?1)" \
	" ON CONFLICT(name) DO UPDATE SET value = excluded.value"

static uint32_t slot_of(const pending_op *op, const char *t)
{
	uint64_t h = op->prefix ^ op->len;
	if (op->len > 8)
		h = a2m_hash_more(h, t + 8, op->len - 8);
	/* Fibonacci hashing: the product's top bits depend on every bit of h. */
	h *= 0x9E3779B97F4A7C15ULL;
	return (uint32_t)(h >> 52);  /* 12 bits: A2M_TAIL_SLOTS */
}

_Static_assert(A2M_TAIL_SLOTS == 1 << 12, "slot_of takes 12 bits");

void a2m_tail_link(a2m_sqlite_index *x, size_t i)
{
	pending_op *op = &x->ops[i];
	if (!x->heads) {
		op->slot = 0;
		op->chain = 0;
		return;  /* no chains (no memory at open): reads flush instead */
	}
	op->slot = slot_of(op, x->arena + op->term);
	op->chain = x->heads[op->slot];
	x->heads[op->slot] = (uint32_t)(i + 1);
}

void a2m_tail_unlink_to(a2m_sqlite_index *x, size_t n)
{
	/* Each op went on top of its chain: taken off newest first, the heads
	** are as they were. */
	for (size_t i = x->nops; x->heads && i > n; i--)
		x->heads[x->ops[i - 1].slot] = x->ops[i - 1].chain;
}

void a2m_tail_clear_chains(a2m_sqlite_index *x)
{
	if (x->heads)
		memset(x->heads, 0, A2M_TAIL_SLOTS * sizeof *x->heads);
}

int a2m_tail_visit(a2m_sqlite_index *x, a2m_store *base, const char *term, size_t len,
		   a2m_posting_visit visit, void *ctx)
{
	if (!x->nops || !x->heads)
		return 0;
	pending_op probe = {.prefix = a2m_seg_prefix(term, len), .len = (uint32_t)len};
	size_t n = 0;
	for (uint32_t i = x->heads[slot_of(&probe, term)]; i; i = x->ops[i - 1].chain) {
		const pending_op *op = &x->ops[i - 1];
		if (op->prefix != probe.prefix || op->len != len ||
		    (len > 8 && memcmp(x->arena + op->term + 8, term + 8, len - 8) != 0))
			continue;
		if (a2m_seg_grow(&x->hits, &x->hits_cap, n + 1, sizeof *x->hits) != 0)
			return a2m_store_fail(base, "index tail: out of memory");
		x->hits[n++] = i - 1;
	}
	/* Newest first in the chain; inserts take rising seqs, so oldest first
	** is ascending seq. */
	for (size_t k = n; k > 0; k--) {
		const pending_op *op = &x->ops[x->hits[k - 1]];
		int rc = visit(op->seq, op->tf, op->dl, ctx);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Forgets the buffer (the tail is read again). */
static void tail_reset(a2m_sqlite_index *x)
{
	a2m_tail_clear_chains(x);
	x->nops = x->used = x->records = 0;
	memset(&x->pending, 0, sizeof x->pending);
	a2m_sqlite_index_mark(x, &x->committed);
}

static int tail_fail(a2m_sqlite_index *x, a2m_store *base, const char *op)
{
	tail_reset(x);
	x->tail_known = 0;
	return a2m_store_fail(base, "index tail %s: %s", op, sqlite3_errmsg(x->db));
}

/* Analyses the rows st has yet to give (seq, content in columns 1, 2). */
static int tail_add_rows(a2m_sqlite_index *x, a2m_store *base, sqlite3_stmt *st, int step)
{
	for (; step == SQLITE_ROW; step = sqlite3_step(st)) {
		if (sqlite3_column_type(st, 1) == SQLITE_NULL)
			continue;  /* the LEFT JOIN's row when nothing is above the mark */
		const char *content = (const char *)sqlite3_column_text(st, 2);
		a2m_doc_terms dt;
		memset(&dt, 0, sizeof dt);
		int rc = x->ix->analyze(x->ix, content ? content : "", &dt) != 0 ||
			a2m_sqlite_index_reserve(x, &dt, NULL) != 0;
		if (!rc)
			a2m_sqlite_index_apply(x, sqlite3_column_int64(st, 1), &dt, 1);
		x->ix->release(x->ix, &dt);
		if (rc) {
			tail_reset(x);
			x->tail_known = 0;
			return a2m_store_fail(base, "index tail: out of memory");
		}
	}
	return step == SQLITE_DONE ? 0 : tail_fail(x, base, "read");
}

/* Whether the tail is the file's at data version v. */
static int tail_current(const a2m_sqlite_index *x, int stamped, unsigned v)
{
	return x->tail_known && x->tail_stamped && stamped && v == x->tail_version;
}

int a2m_tail_sync(a2m_sqlite_index *x, a2m_store *base)
{
	/* The data version is the file's only while a transaction is open (a
	** read bracket's, a write's); else it is as of the last one, and is
	** read inside the statement's own. */
	unsigned v = 0;
	int open = sqlite3_txn_state(x->db, "main") != SQLITE_TXN_NONE;
	int stamped = open && a2m_sqlite_data_version(x->db, &v);
	if (open && tail_current(x, stamped, v))
		return 0;
	if (!x->tail_rows &&
	    sqlite3_prepare_v3(x->db, SQL_TAIL_ROWS, -1, SQLITE_PREPARE_PERSISTENT, &x->tail_rows,
			       NULL) != SQLITE_OK)
		return tail_fail(x, base, "prepare");
	sqlite3_stmt *st = x->tail_rows;
	int rc = 0;
	for (int pass = 0; pass < 2; pass++) {
		int known = x->tail_known;
		if (sqlite3_bind_int64(st, 1, known ? x->top : -1) != SQLITE_OK) {
			rc = tail_fail(x, base, "read");
			break;
		}
		int step = sqlite3_step(st);
		if (step != SQLITE_ROW) {
			rc = tail_fail(x, base, "read");
			break;
		}
		if (!open) {
			stamped = a2m_sqlite_data_version(x->db, &v);
			if (tail_current(x, stamped, v))
				break;
		}
		int64_t mark = sqlite3_column_int64(st, 0);
		if (known && mark != x->mark && mark < x->top) {
			/* The mark moved but not past what is held: not this build's
			** way of writing; start again from the mark. */
			sqlite3_reset(st);
			tail_reset(x);
			x->tail_known = 0;
			continue;
		}
		if (!known || mark != x->mark) {
			/* Written out (by whoever wrote the mark): what the buffer
			** held is in the segments now. */
			tail_reset(x);
			x->mark = x->top = mark;
		}
		x->tail_known = 1;
		rc = tail_add_rows(x, base, st, step);
		break;
	}
	sqlite3_reset(st);
	/* Postings cached before the version moved lack the tail's new ones. */
	if (stamped && x->cache)
		a2m_pcache_validate(x->cache, v);
	else
		a2m_pcache_clear(x->cache);
	if (!rc) {
		a2m_sqlite_index_mark(x, &x->committed);
		x->tail_version = v;
		x->tail_stamped = stamped;
	}
	return rc;
}

int a2m_tail_mark_write(a2m_sqlite_index *x, a2m_store *base)
{
	if (!x->mark_set &&
	    sqlite3_prepare_v3(x->db, SQL_MARK_SET, -1, SQLITE_PREPARE_PERSISTENT, &x->mark_set,
			       NULL) != SQLITE_OK)
		return a2m_store_fail(base, "index mark: %s", sqlite3_errmsg(x->db));
	int ok = sqlite3_bind_int64(x->mark_set, 1, x->top) == SQLITE_OK &&
		sqlite3_step(x->mark_set) == SQLITE_DONE;
	sqlite3_reset(x->mark_set);
	if (!ok)
		return a2m_store_fail(base, "index mark: %s", sqlite3_errmsg(x->db));
	x->mark = x->top;
	return 0;
}

void a2m_tail_close(a2m_sqlite_index *x)
{
	sqlite3_finalize(x->tail_rows);
	sqlite3_finalize(x->mark_set);
	x->tail_rows = x->mark_set = NULL;
}
