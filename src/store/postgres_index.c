/*
** postgres_index.c — the PostgreSQL engine's term index (store.h, "The term
** index"): the same analyser and the same figures as the other engines, so
** BM25 (rank/bm25.c) ranks a PostgreSQL deployment exactly as it ranks a
** SQLite file holding the same records.
**
** A term's postings are a few rows of a2m_postings_seg, each a list of
** delta-coded varints, newest row winning per record (postgres_segments.c
** keeps the rows and seals a term's tail into them). The analysis runs in a2m, on the writing
** server, in the records' transaction: an insert's postings are buffered,
** and an update that changes content and a remove buffer the removal of the
** old postings by analysing the old content again (the analyser is
** deterministic, and a deployment has one: postgres_txn.c refuses a server
** of another). When something reads the index or the transaction commits,
** the buffer is flushed: one list per term, a posting per record that
** gained the term and a tombstone per record that lost it, appended to the
** term's tail row. The figures BM25 needs (records with terms, their total
** length, records with text but no term) live in a2m_state and move at
** each commit by what the transaction changed; a read bracket reads them
** with its snapshot.
**
** Postings read in read brackets are kept in memory (postings_cache.h),
** one cache per connection as in the SQLite engine, so a bracket lends
** from its own (index_postings_view) without a lock. A cached term stays
** valid for as long as its bucket's stamp does: the terms are hashed into
** PG_TERM_BUCKETS buckets, a commit that wrote postings sets the stamp of
** each bucket it wrote to its own new version (a2m_state.term_stamps, in
** the commit's UPDATE of the state row), and a bracket reads the stamps
** with its snapshot. So a commit that wrote no postings (recall's touches,
** promotions, meta) costs no cache anything, on any server, and one that
** wrote a few terms (a single remember) costs the entries of their buckets
** only. A seal of a term's rows changes none of its postings, and happens
** only in a flush that wrote the term anyway.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"
#include "store/sqlite_segments.h"
#include "util/grow.h"

/* Postings one connection's cache may hold (as a2m_posting, 16 bytes each). */
#define CACHE_POSTINGS ((size_t)1 << 21)
/* Buffered postings at which a transaction writes them out. */
#define FLUSH_AT 50000

typedef struct pending_op {
	size_t   term;    /* offset in the arena */
	uint32_t len, tf, dl;
	int      sign;
	int64_t  seq;
	size_t   at;      /* its place in the buffer: the later of two for one seq wins */
} pending_op;

struct a2m_pg_index {
	a2m_indexer    *ix;
	pending_op     *ops;
	size_t          nops, cap;
	char           *arena;
	size_t          used, acap;
	a2m_index_stats pending;     /* what the transaction adds to a2m_state */
	int             wrote;       /* postings written in this transaction */
	int             direct;      /* flushes go to the terms' rows, not a batch row
	                                (a rebuild: the index holds no batch row) */
	/* The buckets whose terms the transaction changed (their stamps move). */
	unsigned char   dirty[PG_TERM_BUCKETS / 8];
	/* A flush's lists (kept for the next flush: no allocation per commit). */
	pg_term_list   *lists;
	size_t          lcap;
	a2m_seg_bytes   bytes;
};

static void mark(a2m_pg_index *x, const char *term, size_t len)
{
	size_t b = a2m_pcache_bucket(term, len, PG_TERM_BUCKETS);
	x->dirty[b / 8] |= (unsigned char)(1u << (b % 8));
}

static a2m_pg_index *index_new(a2m_indexer *ix)
{
	a2m_pg_index *x = calloc(1, sizeof *x);
	if (x)
		x->ix = ix;
	return x;
}

void a2m_pg_index_free(a2m_pg_index *x)
{
	if (!x)
		return;
	free(x->ops);
	free(x->arena);
	free(x->lists);
	free(x->bytes.p);
	free(x);
}

int a2m_pg_index_analyze(pgstore *s, const char *text, a2m_doc_terms *dt)
{
	memset(dt, 0, sizeof *dt);
	if (!s->index)
		return 0;
	if (s->index->ix->analyze(s->index->ix, text, dt) != 0)
		return a2m_store_fail(&s->base, "index: out of memory");
	return 0;
}

void a2m_pg_index_release(pgstore *s, a2m_doc_terms *dt)
{
	if (s->index)
		s->index->ix->release(s->index->ix, dt);
	memset(dt, 0, sizeof *dt);
}

int a2m_pg_index_apply(pgstore *s, int64_t seq, const a2m_doc_terms *dt, int sign)
{
	a2m_pg_index *x = s->index;
	if (!x)
		return 0;
	size_t bytes = 0;
	for (size_t i = 0; i < dt->n; i++)
		bytes += dt->terms[i].len;
	/* From 1024 ops and 16 KiB of terms, doubled. */
	size_t nops = x->nops + dt->n, used = x->used + bytes;
	if (a2m_grow((void **)&x->ops, &x->cap, nops < 1024 ? 1024 : nops, sizeof *x->ops) ||
	    a2m_grow((void **)&x->arena, &x->acap, used < 16384 ? 16384 : used, 1))
		return a2m_store_fail(&s->base, "index: out of memory");
	for (size_t i = 0; i < dt->n; i++) {
		const a2m_term *t = &dt->terms[i];
		memcpy(x->arena + x->used, t->text, t->len);
		mark(x, t->text, t->len);
		x->ops[x->nops] = (pending_op){.term = x->used, .len = t->len, .tf = t->tf,
					       .dl = dt->length, .sign = sign, .seq = seq,
					       .at = x->nops};
		x->nops++;
		x->used += t->len;
	}
	if (dt->n) {
		x->pending.docs += sign;
		x->pending.total_len += sign * (int64_t)dt->length;
	} else if (dt->has_text) {
		x->pending.unindexed += sign;
	}
	if (x->nops < FLUSH_AT)
		return 0;
	/*
	** A long transaction (an import, a big forget) folds as it writes: its
	** batch rows would otherwise wait, all of them, in every connection's
	** cache, for the write transactions after it.
	*/
	int rc = a2m_pg_index_flush(s);
	return rc ? rc : a2m_pg_index_fold(s);
}

/* The arena the sort below compares terms in (qsort has no context). */
static _Thread_local const char *sort_arena;

/* (term, seq, place) order: a term's list in seq order, a seq's changes in theirs. */
static int op_cmp(const void *pa, const void *pb)
{
	const pending_op *a = pa, *b = pb;
	int c = a2m_seg_cmp_terms((const unsigned char *)sort_arena + a->term, a->len,
				  (const unsigned char *)sort_arena + b->term, b->len);
	if (c)
		return c;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return (a->at > b->at) - (a->at < b->at);
}

/*
** Encodes the sorted ops as one list per term into x->lists and x->bytes:
** for each (term, seq) its last change, a posting or a tombstone. Returns
** the number of lists, or -1 when memory runs out.
*/
static long encode_lists(a2m_pg_index *x)
{
	size_t n = 0;
	x->bytes.n = 0;
	for (size_t a = 0, b; a < x->nops; a = b) {
		const pending_op *o = &x->ops[a];
		for (b = a + 1; b < x->nops && x->ops[b].len == o->len &&
				memcmp(x->arena + x->ops[b].term, x->arena + o->term, o->len) == 0;
		     b++)
			;
		if (a2m_seg_grow(&x->lists, &x->lcap, n + 1, sizeof *x->lists) != 0)
			return -1;
		pg_term_list *t = &x->lists[n++];
		size_t start = x->bytes.n;
		int64_t prev = 0;
		*t = (pg_term_list){x->arena + o->term, o->len, NULL, 0, 0, 0};
		for (size_t i = a; i < b; i++) {
			const pending_op *e = &x->ops[i];
			if (i + 1 < b && x->ops[i + 1].seq == e->seq)
				continue;  /* a later change of the same record wins */
			a2m_seg_entry en = {e->seq, e->tf, e->dl, e->sign < 0};
			if (a2m_seg_put(&x->bytes, &prev, &en) != 0)
				return -1;
			t->entries++;
			t->last_seq = e->seq;
		}
		/* An offset for now: the bytes may still move. */
		t->size = x->bytes.n - start;
		t->data = (const unsigned char *)(uintptr_t)start;
	}
	for (size_t i = 0; i < n; i++)
		x->lists[i].data = x->bytes.p + (uintptr_t)x->lists[i].data;
	return (long)n;
}

int a2m_pg_index_flush(pgstore *s)
{
	a2m_pg_index *x = s->index;
	int rc = 0;
	if (!x || !x->nops)
		return 0;
	sort_arena = x->arena;
	qsort(x->ops, x->nops, sizeof *x->ops, op_cmp);
	long n = encode_lists(x);
	/* The flush's id: its batch row's, or (direct) its sealed rows' seg. */
	int64_t id = ++s->fold.last;
	s->fold.dirty = 1;
	if (n < 0) {
		rc = a2m_store_fail(&s->base, "index: out of memory");
	} else if (x->direct) {
		rc = a2m_pg_segs_write(s, x->lists, (size_t)n, id);
		s->fold.base = s->fold.horizon = id;
	} else {
		rc = a2m_pg_batches_put(s, id, x->lists, (size_t)n);
	}
	x->nops = 0;
	x->used = 0;
	x->wrote = 1;
	s->wrote = 1;
	if (rc)
		a2m_pg_tx_fail(s);
	return rc;
}

int a2m_pg_index_fold(pgstore *s)
{
	if (!s->index || !s->index->wrote || s->index->direct)
		return 0;
	int rc = a2m_pg_fold_step(s, &s->fold);
	if (rc)
		a2m_pg_tx_fail(s);
	return rc;
}

void a2m_pg_index_pending(const pgstore *s, a2m_index_stats *out)
{
	memset(out, 0, sizeof *out);
	if (s->index)
		*out = s->index->pending;
}

void a2m_pg_index_stamp_sql(const pgstore *s, a2m_buf *sql)
{
	const a2m_pg_index *x = s->index;
	if (!x)
		return;
	for (size_t b = 0; b < PG_TERM_BUCKETS; b++)
		if (x->dirty[b / 8] & (1u << (b % 8)))
			a2m_buf_printf(sql, ", term_stamps[%zu] = version + 1", b + 1);
}

void a2m_pg_index_end(pgstore *s)
{
	a2m_pg_index *x = s->index;
	if (!x)
		return;
	/* No cache to move along: what this commit wrote moved its buckets' stamps. */
	x->nops = 0;
	x->used = 0;
	x->wrote = 0;
	x->direct = 0;
	memset(x->dirty, 0, sizeof x->dirty);
	memset(&x->pending, 0, sizeof x->pending);
}

/* ---- attach, and the rebuild ------------------------------------------------------ */

/* Reads every record's content in seq order, a page at a time, indexing it. */
static int rebuild(pgstore *s)
{
	int64_t after = 0;
	int rc;
	if ((rc = a2m_pg_exec(s, &s->main, "DELETE FROM a2m_postings_seg;"
			      " DELETE FROM a2m_batches;"
			      " UPDATE a2m_state SET docs = 0, total_len = 0, unindexed = 0",
			      "index rebuild", NULL)))
		return rc;
	/* Every term may have gone: every bucket's stamp moves at the commit. */
	memset(s->index->dirty, 0xff, sizeof s->index->dirty);
	s->wrote = 1;
	/*
	** No batch row is left: the postings go straight to the terms' rows,
	** each flush taking a new id (ids are never given twice), and the fold
	** starts again from the last.
	*/
	s->index->direct = 1;
	s->fold.base = s->fold.horizon = s->fold.last;
	s->fold.has_cursor = 0;
	s->fold.cursor_len = 0;
	s->fold.budget = 0;
	s->fold.dirty = 1;
	for (;;) {
		pgparams p;
		PGresult *r;
		a2m_pg_params_init(&p);
		a2m_pg_param_int8(&p, after);
		rc = a2m_pg_run_named(s, &s->main, "a2m_rebuild",
				      "SELECT seq, content FROM a2m_records WHERE seq > $1"
				      " ORDER BY seq LIMIT 2000", &p, "index rebuild", &r);
		if (rc)
			return rc;
		int rows = s->pq->ntuples(r);
		for (int i = 0; i < rows && !rc; i++) {
			a2m_doc_terms dt;
			after = a2m_pg_int8(s, r, i, 0);
			if (!(rc = a2m_pg_index_analyze(s, s->pq->getvalue(r, i, 1), &dt)))
				rc = a2m_pg_index_apply(s, after, &dt, 1);
			a2m_pg_index_release(s, &dt);
		}
		s->pq->clear(r);
		if (rc || rows < 2000)
			return rc;
	}
}

int a2m_pg_index_attach(pgstore *s, a2m_indexer *ix)
{
	if (s->in_tx)
		return a2m_store_fail(&s->base, "index_attach: a transaction is open");
	a2m_pg_index_free(s->index);
	s->index = NULL;
	a2m_pg_index *x = index_new(ix);
	if (!x)
		return a2m_store_fail(&s->base, "index_attach: out of memory");
	snprintf(s->index_version, sizeof s->index_version, "pg2 %s", ix->version);
	/* Begun without the index: the version check at begin is what a
	** rebuild is about to settle. */
	int rc = a2m_pg_begin(&s->base);
	if (rc) {
		a2m_pg_index_free(x);
		return rc;
	}
	PGresult *r;
	if ((rc = a2m_pg_run(s, &s->main, PG_STATE, NULL, "index_attach", &r))) {
		a2m_pg_rollback(&s->base);
		a2m_pg_index_free(x);
		return rc;
	}
	int same = s->pq->ntuples(r) > 0 && !s->pq->getisnull(r, 0, 5) &&
		   strcmp(s->pq->getvalue(r, 0, 5), s->index_version) == 0;
	s->pq->clear(r);
	if (same || s->base.read_only) {
		a2m_pg_rollback(&s->base);
		/* Read-only and built by another analysis: no index (store.h). */
		if (same)
			s->index = x;
		else
			a2m_pg_index_free(x);
		return 0;
	}
	s->index = x;
	pgparams p;
	a2m_pg_params_init(&p);
	a2m_pg_param_text(&p, s->index_version);
	if (!(rc = rebuild(s)) &&
	    !(rc = a2m_pg_run_named(s, &s->main, "a2m_index_version",
				    "UPDATE a2m_state SET index_version = $1", &p, "index_attach",
				    &r)))
		s->pq->clear(r);
	if (rc) {
		a2m_pg_rollback(&s->base);
		s->index = NULL;
		a2m_pg_index_free(x);
		return rc;
	}
	if ((rc = a2m_pg_commit(&s->base))) {
		s->index = NULL;
		a2m_pg_index_free(x);
	}
	return rc;
}

/* ---- reads ---------------------------------------------------------------------------- */

/*
** Where the figures come from: a bracket's snapshot, the write transaction
** (its start plus what it added), or the state row now.
*/
int a2m_pg_index_stats(a2m_store *base, a2m_index_stats *out)
{
	pgstore *s = (pgstore *)base;
	pgconn *c = a2m_pg_conn(s);
	memset(out, 0, sizeof *out);
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	if (c != &s->main && c->stats_known) {
		*out = c->stats;
		return 0;
	}
	int rc = 0;
	pgstate st;
	if (c == &s->main && !s->in_tx)
		rc = a2m_pg_ready(s, c);
	if (!rc)
		rc = a2m_pg_state(s, c, "index_stats", &st);
	if (rc) {
		if (c == &s->main)
			a2m_pg_tx_fail(s);
		return rc;
	}
	*out = st.stats;
	if (c == &s->main && s->in_tx) {
		out->docs += s->index->pending.docs;
		out->total_len += s->index->pending.total_len;
		out->unindexed += s->index->pending.unindexed;
	}
	return 0;
}

void a2m_pg_index_bracket(pgconn *c, int begins)
{
	if (!c->pcache)
		return;
	/* Without the stamps (a state row of no row), nothing cached is trusted. */
	if (begins && !c->stamps_known)
		a2m_pcache_clear(c->pcache);
	a2m_pcache_next_period(c->pcache);
}

/*
** Reads term's postings from the database into a new array (*v, *n), on
** c: main inside a write transaction sees its own, flushed first.
*/
static int fetch(pgstore *s, pgconn *c, const char *term, size_t len, a2m_posting **v,
		 size_t *n)
{
	int rc = 0;
	*v = NULL;
	*n = 0;
	int own = 0;
	if (c == &s->main && s->in_tx)
		rc = s->tx_failed ? A2M_INTERNAL_ERROR : a2m_pg_held_flush(s);
	if (!rc && c == &s->main && s->in_tx) {
		rc = a2m_pg_index_flush(s);
		c->batch_base = s->fold.base;
		c->batch_last = s->fold.last;
	} else if (!rc && c == &s->main && !c->in_tx) {
		/* The term's rows and the batch rows must be read in one snapshot. */
		rc = a2m_pg_snapshot(s, c);
		own = rc == 0;
	}
	if (!rc)
		rc = a2m_pg_segs_read(s, c, term, len, v, n);
	if (own)
		a2m_pg_snapshot_end(s, c);
	if (rc && c == &s->main)
		a2m_pg_tx_fail(s);
	return rc;
}

/* The bracket's cache (made at its first use), or NULL outside a bracket. */
static a2m_pcache *bracket_cache(pgstore *s, pgconn *c)
{
	if (!a2m_pg_in_bracket(s) || !c->stamps_known)
		return NULL;
	if (!c->pcache && (c->pcache = a2m_pcache_new(CACHE_POSTINGS * sizeof(a2m_posting))))
		a2m_pcache_stamps(c->pcache, c->term_stamps, PG_TERM_BUCKETS);
	return c->pcache;
}

int a2m_pg_index_postings(a2m_store *base, const char *term, size_t len,
			  a2m_posting_visit visit, void *ctx)
{
	pgstore *s = (pgstore *)base;
	pgconn *c = a2m_pg_conn(s);
	a2m_pcache *cache;
	a2m_posting *v;
	size_t n;
	int rc = 0;
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	if ((cache = bracket_cache(s, c)) && a2m_pcache_visit(cache, term, len, visit, ctx, &rc))
		return rc;
	if ((rc = fetch(s, c, term, len, &v, &n)))
		return rc;
	for (size_t i = 0; i < n && !rc; i++)
		rc = visit(v[i].seq, v[i].tf, v[i].dl, ctx);
	if (cache && !rc)
		a2m_pcache_put(cache, term, len, v, n);
	free(v);
	return rc;
}

/* Lends from the bracket's cache, filling it first; outside a bracket: 1, not lent. */
int a2m_pg_index_view(a2m_store *base, const char *term, size_t len,
		      const a2m_posting **v, size_t *n)
{
	pgstore *s = (pgstore *)base;
	pgconn *c = a2m_pg_conn(s);
	a2m_pcache *cache;
	a2m_posting *got;
	size_t count;
	int rc;
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	if (!(cache = bracket_cache(s, c)))
		return 1;
	if (a2m_pcache_lend(cache, term, len, v, n))
		return 0;
	if ((rc = fetch(s, c, term, len, &got, &count)))
		return rc;
	a2m_pcache_put(cache, term, len, got, count);
	free(got);
	return a2m_pcache_lend(cache, term, len, v, n) ? 0 : 1;
}
