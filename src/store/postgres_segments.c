/*
** postgres_segments.c — the rows of the PostgreSQL term index: a term's
** postings kept as a few values of delta-coded varints: a tail that each
** write transaction appends to, and sealed rows the tail is merged into
** when it grows.
**
** a2m_postings_seg (schema step 6) holds rows (term, seg, n, last_seq,
** data). A list is the SQLite segments' encoding (sqlite_segments.h:
** ascending seq, each entry varint(delta << 1 | deleted) [varint(tf)
** varint(dl)]); a deleted entry, a tombstone, says the posting is gone as of
** that list. A sealed row (seg < TAIL) holds one list; the term's tail (seg
** TAIL, at most one per term) holds chunks, varint(size) list each, one per
** flush that changed the term, oldest first. n counts a row's entries,
** last_seq is its highest seq. A term's lists in age order are its sealed
** rows by seg, then its tail's chunks; for a (term, seq) the newest list's
** entry wins.
**
** Writing: a flush appends one chunk per term it changed to the term's tail
** (INSERT ... ON CONFLICT DO UPDATE SET data = data || chunk): one statement,
** one row per term, an update of a small row PostgreSQL can keep on its
** page (HOT: no column of the key changes; the table leaves room). The
** previous layout wrote a row per posting, ~9 per record, each a b-tree
** insert; a layout of a new row per term and flush, merged later, paid a
** DELETE per row at the merge, more than it saved (docs/BENCHMARKS.md).
**
** Sealing, inside the writing transaction (so under the deployment's write
** lock, and crash-safe: a killed server's seal is rolled back with its
** writes): a tail past SEAL_BYTES is merged, with the newest sealed rows
** while each next older is no bigger than what is merged so far (or while
** the term has more than MAX_ROWS sealed rows), into one sealed row numbered
** with the flush's seg ((the commit's version) << 20 | the flush's number:
** it grows with every flush, the version moving at each commit that writes).
** Sealed sizes grow geometrically: a term keeps O(log n) rows and an entry
** is rewritten O(log n) times. A merge drops the tombstones no older row
** can need (seq above every older row's last_seq: seqs are never given out
** twice), all of them when it takes the term's oldest row.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"
#include "store/sqlite_segments.h"

/* The seg of a term's tail: after every sealed row. */
#define TAIL INT64_MAX
#define TAIL_SQL "9223372036854775807"
/* A tail of more bytes is sealed (below PostgreSQL's ~2 KB, where a value leaves the row). */
#define SEAL_BYTES 1200
/* Sealed rows of a term beyond which its newest are merged whatever their sizes. */
#define MAX_ROWS 16

/*
** Appends each chunk to its term's tail; returns, for the terms whose tail
** is now past $5 bytes, every row (term, seg, n, last_seq) in (term, seg)
** order, the tail as it is now: what a seal's plan reads. (The SELECT sees
** the rows as they were before the statement: the tails come from the
** upsert's RETURNING, the sealed rows, which it does not change, from the
** table.)
*/
#define SQL_APPEND \
	"WITH up AS (INSERT INTO a2m_postings_seg AS p (term, seg, n, last_seq, data)" \
	" SELECT u.t, " TAIL_SQL ", u.n, u.l, u.d" \
	" FROM unnest($1::bytea[], $2::int4[], $3::int8[], $4::bytea[]) AS u(t, n, l, d)" \
	" ON CONFLICT (term, seg) DO UPDATE SET n = p.n + excluded.n," \
	" last_seq = greatest(p.last_seq, excluded.last_seq), data = p.data || excluded.data" \
	" RETURNING p.term, p.n, p.last_seq, length(p.data) AS b)," \
	" big AS (SELECT term, n, last_seq FROM up WHERE b > $5::int8)" \
	" SELECT r.term, r.seg, r.n, r.last_seq FROM big JOIN a2m_postings_seg r" \
	" ON r.term = big.term AND r.seg < " TAIL_SQL \
	" UNION ALL SELECT term, " TAIL_SQL ", n, last_seq FROM big ORDER BY 1, 2"
#define SQL_INSERT \
	"INSERT INTO a2m_postings_seg (term, seg, n, last_seq, data)" \
	" SELECT u.t, $2, u.n, u.l, u.d" \
	" FROM unnest($1::bytea[], $3::int4[], $4::int8[], $5::bytea[]) AS u(t, n, l, d)"
#define SQL_DELETE \
	"DELETE FROM a2m_postings_seg p USING unnest($1::bytea[], $2::int8[]) AS d(t, s)" \
	" WHERE p.term = d.t AND p.seg = d.s"
#define SQL_ROWS \
	"SELECT p.term, p.seg, p.data FROM unnest($1::bytea[], $2::int8[]) AS d(t, s)" \
	" JOIN a2m_postings_seg p ON p.term = d.t AND p.seg = d.s ORDER BY p.term, p.seg"
#define SQL_TERM "SELECT n, data, seg = " TAIL_SQL " FROM a2m_postings_seg WHERE term = $1 ORDER BY seg"

/* ---- merging lists ------------------------------------------------------------------ */

/* An encoded list being written (a merge's output). */
typedef struct enc {
	a2m_seg_bytes *b;
	int64_t        prev, n;
} enc;

static int put_entry(const a2m_seg_entry *e, void *ctx)
{
	enc *w = ctx;
	if (a2m_seg_put(w->b, &w->prev, e) != 0)
		return -1;
	w->n++;
	return 0;
}

/* A run of entries as their bytes: they continue the list as they are. */
static int put_run(const unsigned char *p, size_t n, int64_t count, int64_t last, void *ctx)
{
	enc *w = ctx;
	if (a2m_seg_reserve(w->b, n) != 0)
		return -1;
	memcpy(w->b->p + w->b->n, p, n);
	w->b->n += n;
	w->prev = last;
	w->n += count;
	return 0;
}

/*
** Merges any number of lists (oldest first) as a2m_seg_merge_lists does
** for up to A2M_SEG_MAX_LISTS: the oldest are merged first, tombstones
** kept, into one list that then stands for them. Returns 0, emit's or
** copy's negative code, or -1 with *corrupt set.
*/
static int merge_any(a2m_seg_list *lists, size_t n, int64_t floor, a2m_seg_emit emit,
		     a2m_seg_copy copy, void *ctx, int *corrupt)
{
	a2m_seg_bytes acc = {0}, next = {0};
	a2m_seg_list w[A2M_SEG_MAX_LISTS];
	size_t at = 0, k;
	int have = 0, rc = 0;
	*corrupt = 0;
	while (n - at + (size_t)have > A2M_SEG_MAX_LISTS) {
		enc e = {&next, 0, 0};
		k = 0;
		if (have)
			a2m_seg_list_init(&w[k++], acc.p, acc.n);
		while (k < A2M_SEG_MAX_LISTS)
			w[k++] = lists[at++];
		next.n = 0;
		if ((rc = a2m_seg_merge_lists(w, k, INT64_MAX, put_entry, put_run, &e, corrupt)))
			goto out;
		a2m_seg_bytes t = acc;
		acc = next;
		next = t;
		have = 1;
	}
	k = 0;
	if (have)
		a2m_seg_list_init(&w[k++], acc.p, acc.n);
	while (at < n)
		w[k++] = lists[at++];
	rc = a2m_seg_merge_lists(w, k, floor, emit, copy, ctx, corrupt);
out:
	free(acc.p);
	free(next.p);
	return rc;
}

/* Live postings collected by a read. */
typedef struct collect {
	a2m_posting *v;
	size_t       n, cap;
} collect;

static int put_posting(const a2m_seg_entry *e, void *ctx)
{
	collect *c = ctx;
	if (e->deleted)
		return 0;
	if (c->n == c->cap && a2m_seg_grow(&c->v, &c->cap, c->n + 1, sizeof *c->v) != 0)
		return -1;
	c->v[c->n++] = (a2m_posting){e->seq, e->tf, e->dl};
	return 0;
}

/* An entry of a tail being collapsed: the chunk order breaks ties of seq. */
typedef struct tail_entry {
	a2m_seg_entry e;
	size_t        at;
} tail_entry;

static int tail_cmp(const void *pa, const void *pb)
{
	const tail_entry *a = pa, *b = pb;
	if (a->e.seq != b->e.seq)
		return a->e.seq < b->e.seq ? -1 : 1;
	return (a->at > b->at) - (a->at < b->at);
}

/*
** Collapses a tail's chunks (oldest first) into one list in out (emptied
** first): for each seq the newest chunk's entry, tombstones kept. A tail is
** mostly chunks of ever higher seqs, already in order; one that is not
** (a forget or a change of older records) is sorted. Returns 0, -1 when
** memory runs out, -2 when the chunks do not frame the bytes or one is
** not a list.
*/
static int collapse_tail(const unsigned char *p, size_t size, a2m_seg_bytes *out)
{
	const unsigned char *end = p + size;
	tail_entry *v = NULL;
	size_t n = 0, cap = 0;
	int sorted = 1, rc = 0;
	out->n = 0;
	while (p < end && !rc) {
		uint64_t len;
		a2m_seg_list l;
		a2m_seg_entry e;
		int got;
		if (!a2m_seg_get_varint(&p, end, &len) || len > (uint64_t)(end - p)) {
			rc = -2;
			break;
		}
		a2m_seg_list_init(&l, p, (size_t)len);
		p += len;
		while ((got = a2m_seg_list_next(&l, &e)) > 0) {
			if (a2m_seg_grow(&v, &cap, n + 1, sizeof *v) != 0) {
				rc = -1;
				break;
			}
			sorted &= !n || v[n - 1].e.seq < e.seq;
			v[n] = (tail_entry){e, n};
			n++;
		}
		if (got < 0)
			rc = -2;
	}
	if (!rc && !sorted)
		qsort(v, n, sizeof *v, tail_cmp);
	int64_t prev = 0;
	for (size_t i = 0; i < n && !rc; i++)
		if ((i + 1 == n || v[i + 1].e.seq != v[i].e.seq) && a2m_seg_put(out, &prev, &v[i].e))
			rc = -1;
	free(v);
	return rc;
}

/*
** Appends the list of one row to *lists (*n of *cap): the row itself, or a
** tail's chunks collapsed into scratch (which must then stay unchanged
** while the list is used: a term has one tail). Returns 0, -1 when memory
** runs out, -2 when a tail is corrupt.
*/
static int row_lists(const unsigned char *p, size_t size, int tail, a2m_seg_bytes *scratch,
		     a2m_seg_list **lists, size_t *n, size_t *cap)
{
	int rc;
	if (a2m_seg_grow(lists, cap, *n + 1, sizeof **lists) != 0)
		return -1;
	if (!tail) {
		a2m_seg_list_init(&(*lists)[(*n)++], p, size);
		return 0;
	}
	if ((rc = collapse_tail(p, size, scratch)))
		return rc;
	a2m_seg_list_init(&(*lists)[(*n)++], scratch->p, scratch->n);
	return 0;
}

int a2m_pg_segs_resolve(const unsigned char *const *data, const size_t *size, const int *tail,
			size_t n, size_t hint, a2m_posting **v, size_t *count)
{
	collect c = {NULL, 0, 0};
	a2m_seg_list *lists = NULL;
	a2m_seg_bytes scratch = {0};
	size_t nlists = 0, cap = 0;
	int corrupt = 0, rc = 0;
	*v = NULL;
	*count = 0;
	if (a2m_seg_grow(&c.v, &c.cap, hint ? hint : 1, sizeof *c.v) != 0)
		return -1;
	for (size_t i = 0; i < n && !rc; i++)
		rc = row_lists(data[i], size[i], tail && tail[i], &scratch, &lists, &nlists, &cap);
	/* Floor 0: a tombstone hides what is older and is never itself emitted. */
	if (!rc && (rc = merge_any(lists, nlists, 0, put_posting, NULL, &c, &corrupt)))
		rc = corrupt ? -2 : -1;
	free(lists);
	free(scratch.p);
	if (rc) {
		free(c.v);
		return rc;
	}
	*v = c.v;
	*count = c.n;
	return 0;
}

/* ---- reading one term ------------------------------------------------------------------- */

int a2m_pg_segs_merge(a2m_seg_list *lists, size_t n, a2m_seg_bytes *out, int64_t *entries,
		      int64_t *last)
{
	enc e = {out, 0, 0};
	int corrupt = 0;
	/* Floor INT64_MAX: every tombstone kept, for the older rows it hides. */
	if (merge_any(lists, n, INT64_MAX, put_entry, put_run, &e, &corrupt) != 0)
		return corrupt ? -2 : -1;
	*entries = e.n;
	*last = e.prev;
	return 0;
}

int a2m_pg_segs_read(pgstore *s, pgconn *c, const char *term, size_t len, a2m_posting **v,
		     size_t *count)
{
	pgparams p;
	pgbatchget g;
	PGresult *r = NULL;
	*v = NULL;
	*count = 0;
	a2m_pg_params_init(&p);
	a2m_pg_param_bytea(&p, term, len);
	/* The batch rows the connection lacks, if any, in the same round trip. */
	int rc = a2m_pg_batches_plan(s, c, c->batch_base, c->batch_last, &g);
	if (!rc && !g.want) {
		rc = a2m_pg_run_named(s, c, "a2m_seg_term", SQL_TERM, &p, "index_postings", &r);
	} else if (!rc) {
		pgstep steps[2] = {g.step, {.st = PG_NSTMTS, .sql = SQL_TERM, .p = &p, .keep = 1,
					    .name = "a2m_seg_term"}};
		if (!(rc = a2m_pg_pipeline(s, c, steps, 2, "index_postings"))) {
			rc = a2m_pg_batches_absorb(s, c, &g, steps[0].res);
			r = steps[1].res;
		}
		if (steps[0].res)
			s->pq->clear(steps[0].res);
		if (rc && r)
			s->pq->clear(r);
	}
	a2m_pg_array_free(&g.ids);
	if (rc)
		return rc;
	enum { FEW = 32 };
	/* The term's rows, then its list in each batch row c holds (postgres_batches.c). */
	const a2m_pg_batches *b = c->batches;
	size_t rows = (size_t)s->pq->ntuples(r), max = rows + (b ? b->n : 0), n = 0;
	const unsigned char *few_d[FEW], **data = max > FEW ? malloc(max * sizeof *data) : few_d;
	size_t few_n[FEW], *size = max > FEW ? malloc(max * sizeof *size) : few_n, hint = 0;
	int few_t[FEW], *tail = max > FEW ? malloc(max * sizeof *tail) : few_t;
	int got = -1;
	if (data && size && tail) {
		for (size_t i = 0; i < rows; i++, n++) {
			hint += (size_t)a2m_pg_int4(s, r, (int)i, 0);
			data[n] = (const unsigned char *)s->pq->getvalue(r, (int)i, 1);
			size[n] = (size_t)s->pq->getlength(r, (int)i, 1);
			tail[n] = *s->pq->getvalue(r, (int)i, 2) != 0;
		}
		for (size_t i = 0; b && i < b->n; i++) {
			const pg_batch_term *t = a2m_pg_batch_find(&b->v[i], term, len);
			if (!t)
				continue;
			data[n] = t->list;
			size[n] = t->lsize;
			tail[n++] = 0;
		}
		got = a2m_pg_segs_resolve(data, size, tail, n, hint, v, count);
	}
	if (max > FEW) {
		free(data);
		free(size);
		free(tail);
	}
	s->pq->clear(r);
	if (got == -2)
		return a2m_store_fail(&s->base, "index_postings: a row of the term index is corrupt"
				      " (a2m check --postgres --repair rebuilds it)");
	if (got)
		return a2m_store_fail(&s->base, "index_postings: out of memory");
	return 0;
}

/* ---- writing a flush, sealing as it goes ------------------------------------------------ */

/* A row a seal takes: term (an index into the flush's lists) and seg. */
typedef struct taken {
	size_t  term;
	int64_t seg;
} taken;

/* What a flush's seals take: rows, and per list of the flush its floor (-1: not sealed). */
typedef struct plan {
	taken   *rows;
	size_t   n, cap;
	int64_t *floor;
} plan;

/* Terms in the order of a2m_postings_seg's key (bytea: bytes, then length). */
static int cmp_term(const char *a, size_t an, const char *b, size_t bn)
{
	return a2m_seg_cmp_terms((const unsigned char *)a, an, (const unsigned char *)b, bn);
}

/* The list of the flush whose term this is (binary search; the lists are sorted), or n. */
static size_t find_term(const pg_term_list *t, size_t n, const char *term, size_t len)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_term(t[mid].term, t[mid].len, term, len);
		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return n;
}

/* The end of the run of rows of r from a on whose first column is row a's. */
static int same_term_end(pgstore *s, const PGresult *r, int a, int rows)
{
	const char *term = s->pq->getvalue(r, a, 0);
	size_t len = (size_t)s->pq->getlength(r, a, 0);
	int b = a + 1;
	while (b < rows && cmp_term(s->pq->getvalue(r, b, 0), (size_t)s->pq->getlength(r, b, 0), term,
				    len) == 0)
		b++;
	return b;
}

/* A bytea[] of the given terms of t (all of them when idx is NULL), as $1 of p. */
static int terms_param(pgstore *s, const pg_term_list *t, const size_t *idx, size_t n,
		       pgarray *a, pgparams *p)
{
	a2m_pg_array_begin(a, PG_OID_BYTEA);
	for (size_t i = 0; i < n; i++) {
		const pg_term_list *l = &t[idx ? idx[i] : i];
		a2m_pg_array_add(a, l->term, l->len);
	}
	if (a2m_pg_array_end(a) != 0)
		return a2m_store_fail(&s->base, "index: out of memory");
	a2m_pg_params_init(p);
	a2m_pg_param_bytea(p, a->buf, a->len);
	return 0;
}

/*
** Decides which rows each seal takes (pl) from the rows of the terms whose
** tails are to be sealed (r: SQL_APPEND's answer). Returns 0 or fails.
*/
static int plan_seals(pgstore *s, const pg_term_list *t, size_t n, const PGresult *r, plan *pl)
{
	int rc = 0;
	int rows = s->pq->ntuples(r);
	for (int a = 0, b; a < rows && !rc; a = b) {
		b = same_term_end(s, r, a, rows);
		size_t i = find_term(t, n, s->pq->getvalue(r, a, 0), (size_t)s->pq->getlength(r, a, 0));
		if (i == n || a2m_pg_int8(s, r, b - 1, 1) != TAIL)
			continue;
		/* The tail, and the newest sealed rows while each next older is no bigger. */
		int64_t acc = a2m_pg_int4(s, r, b - 1, 2);
		int j = b - 1;
		while (j > a && ((int64_t)a2m_pg_int4(s, r, j - 1, 2) <= acc || j - a > MAX_ROWS))
			acc += a2m_pg_int4(s, r, --j, 2);
		int64_t floor = 0;
		for (int k = a; k < j; k++) {
			int64_t last = a2m_pg_int8(s, r, k, 3);
			floor = last > floor ? last : floor;
		}
		pl->floor[i] = floor;
		if (a2m_seg_grow(&pl->rows, &pl->cap, pl->n + (size_t)(b - j), sizeof *pl->rows)) {
			rc = a2m_store_fail(&s->base, "index: out of memory");
			break;
		}
		for (int k = j; k < b; k++)
			pl->rows[pl->n++] = (taken){i, a2m_pg_int8(s, r, k, 1)};
	}
	return rc;
}

/* The (term, seg) arrays of the planned rows, as parameters $1, $2 of p. */
static int taken_params(pgstore *s, const pg_term_list *t, const plan *pl, pgarray *terms,
			pgarray *segs, pgparams *p)
{
	a2m_pg_array_begin(terms, PG_OID_BYTEA);
	a2m_pg_array_begin(segs, PG_OID_INT8);
	for (size_t i = 0; i < pl->n; i++) {
		a2m_pg_array_add(terms, t[pl->rows[i].term].term, t[pl->rows[i].term].len);
		a2m_pg_array_int8(segs, pl->rows[i].seg);
	}
	if (a2m_pg_array_end(terms) | a2m_pg_array_end(segs))
		return a2m_store_fail(&s->base, "index: out of memory");
	a2m_pg_params_init(p);
	a2m_pg_param_bytea(p, terms->buf, terms->len);
	a2m_pg_param_bytea(p, segs->buf, segs->len);
	return 0;
}

/* A sealed row made: its term, and where its list is in the seal's bytes. */
typedef struct sealed {
	size_t  term, at, size;
	int64_t entries, last_seq;
} sealed;

/*
** Reads the planned rows and merges each term's into one list in out,
** noted in *made (*nmade of them). Returns 0 or fails.
*/
static int do_seals(pgstore *s, const pg_term_list *t, size_t n, const plan *pl,
		    a2m_seg_bytes *out, sealed **made, size_t *nmade)
{
	pgarray terms, segs;
	pgparams p;
	PGresult *r;
	size_t mcap = 0, lcap = 0;
	a2m_seg_list *lists = NULL;
	a2m_seg_bytes scratch = {0};
	int rc = taken_params(s, t, pl, &terms, &segs, &p);
	if (!rc)
		rc = a2m_pg_run_named(s, &s->main, "a2m_seg_rows", SQL_ROWS, &p, "index", &r);
	a2m_pg_array_free(&terms);
	a2m_pg_array_free(&segs);
	if (rc)
		return rc;
	int rows = s->pq->ntuples(r);
	for (int a = 0, b; a < rows && !rc; a = b) {
		b = same_term_end(s, r, a, rows);
		const char *term = s->pq->getvalue(r, a, 0);
		size_t len = (size_t)s->pq->getlength(r, a, 0), i = find_term(t, n, term, len), k = 0;
		if (i == n || pl->floor[i] < 0)
			continue;
		for (int j = a; j < b && !rc; j++)
			rc = row_lists((const unsigned char *)s->pq->getvalue(r, j, 2),
				       (size_t)s->pq->getlength(r, j, 2), a2m_pg_int8(s, r, j, 1) == TAIL,
				       &scratch, &lists, &k, &lcap);
		enc e = {out, 0, 0};
		int corrupt = rc == -2;
		size_t at = out->n;
		if (!rc && merge_any(lists, k, pl->floor[i], put_entry, put_run, &e, &corrupt) != 0)
			rc = -1;
		if (!rc && a2m_seg_grow(made, &mcap, *nmade + 1, sizeof **made) != 0)
			rc = -1;
		if (rc) {
			rc = corrupt ? a2m_store_fail(&s->base, "index: a row of term '%.*s' is corrupt"
						      " (a2m check --postgres --repair rebuilds the"
						      " index)", (int)(len < 64 ? len : 64), term)
				     : a2m_store_fail(&s->base, "index: out of memory");
			break;
		}
		(*made)[(*nmade)++] = (sealed){i, at, out->n - at, e.n, e.prev};
	}
	free(lists);
	free(scratch.p);
	s->pq->clear(r);
	return rc;
}

/* Deletes the planned rows and inserts the sealed ones, in one round trip. */
static int write_seals(pgstore *s, const pg_term_list *t, const plan *pl, const sealed *made,
		       size_t nmade, const a2m_seg_bytes *out, int64_t seg)
{
	pgarray terms, ns, lasts, datas, dterms = {0}, dsegs = {0};
	pgparams p, d;
	a2m_pg_array_begin(&terms, PG_OID_BYTEA);
	a2m_pg_array_begin(&ns, PG_OID_INT4);
	a2m_pg_array_begin(&lasts, PG_OID_INT8);
	a2m_pg_array_begin(&datas, PG_OID_BYTEA);
	for (size_t i = 0; i < nmade; i++) {
		if (!made[i].entries)
			continue;  /* the seal left nothing of the term */
		a2m_pg_array_add(&terms, t[made[i].term].term, t[made[i].term].len);
		a2m_pg_array_int4(&ns, (int32_t)made[i].entries);
		a2m_pg_array_int8(&lasts, made[i].last_seq);
		a2m_pg_array_add(&datas, out->p + made[i].at, made[i].size);
	}
	int rc = 0;
	if (a2m_pg_array_end(&terms) | a2m_pg_array_end(&ns) | a2m_pg_array_end(&lasts) |
	    a2m_pg_array_end(&datas)) {
		rc = a2m_store_fail(&s->base, "index: out of memory");
	} else if (!(rc = taken_params(s, t, pl, &dterms, &dsegs, &d))) {
		a2m_pg_params_init(&p);
		a2m_pg_param_bytea(&p, terms.buf, terms.len);
		a2m_pg_param_int8(&p, seg);
		a2m_pg_param_bytea(&p, ns.buf, ns.len);
		a2m_pg_param_bytea(&p, lasts.buf, lasts.len);
		a2m_pg_param_bytea(&p, datas.buf, datas.len);
		pgstep steps[] = {{PG_NSTMTS, SQL_DELETE, &d, 0, NULL, "a2m_seg_delete"},
				  {PG_NSTMTS, SQL_INSERT, &p, 0, NULL, "a2m_seg_insert"}};
		rc = a2m_pg_pipeline(s, &s->main, steps, 2, "index");
	}
	a2m_pg_array_free(&dterms);
	a2m_pg_array_free(&dsegs);
	a2m_pg_array_free(&terms);
	a2m_pg_array_free(&ns);
	a2m_pg_array_free(&lasts);
	a2m_pg_array_free(&datas);
	return rc;
}

/*
** Appends each list to its term's tail as a chunk (its size, then it; the
** bytes made in scratch); *r gets the rows of the terms whose tails are now
** past SEAL_BYTES (SQL_APPEND; the caller clears it). Returns 0 or fails.
*/
static int append(pgstore *s, const pg_term_list *t, size_t n, a2m_seg_bytes *scratch,
		  PGresult **r)
{
	pgarray terms, ns, lasts, chunks;
	pgparams p;
	int rc = 0;
	scratch->n = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		if (a2m_seg_reserve(scratch, 10 + t[i].size) != 0) {
			rc = -1;
			break;
		}
		scratch->n += a2m_seg_put_varint(scratch->p + scratch->n, t[i].size);
		memcpy(scratch->p + scratch->n, t[i].data, t[i].size);
		scratch->n += t[i].size;
	}
	if (rc)
		return a2m_store_fail(&s->base, "index: out of memory");
	a2m_pg_array_begin(&ns, PG_OID_INT4);
	a2m_pg_array_begin(&lasts, PG_OID_INT8);
	a2m_pg_array_begin(&chunks, PG_OID_BYTEA);
	const unsigned char *at = scratch->p;
	for (size_t i = 0; i < n; i++) {
		unsigned char head[10];
		size_t h = a2m_seg_put_varint(head, t[i].size);
		a2m_pg_array_int4(&ns, (int32_t)t[i].entries);
		a2m_pg_array_int8(&lasts, t[i].last_seq);
		a2m_pg_array_add(&chunks, at, h + t[i].size);
		at += h + t[i].size;
	}
	int bad = a2m_pg_array_end(&ns) | a2m_pg_array_end(&lasts) | a2m_pg_array_end(&chunks);
	if (bad || (rc = terms_param(s, t, NULL, n, &terms, &p)) != 0) {
		if (!rc)
			rc = a2m_store_fail(&s->base, "index: out of memory");
	} else {
		a2m_pg_param_bytea(&p, ns.buf, ns.len);
		a2m_pg_param_bytea(&p, lasts.buf, lasts.len);
		a2m_pg_param_bytea(&p, chunks.buf, chunks.len);
		a2m_pg_param_int8(&p, SEAL_BYTES);
		rc = a2m_pg_run_named(s, &s->main, "a2m_seg_append", SQL_APPEND, &p, "index", r);
		a2m_pg_array_free(&terms);
	}
	a2m_pg_array_free(&ns);
	a2m_pg_array_free(&lasts);
	a2m_pg_array_free(&chunks);
	return rc;
}

int a2m_pg_segs_write(pgstore *s, const pg_term_list *t, size_t n, int64_t seg)
{
	plan pl = {NULL, 0, 0, NULL};
	size_t nmade = 0;
	sealed *made = NULL;
	a2m_seg_bytes out = {0};
	PGresult *r = NULL;
	int rc = append(s, t, n, &out, &r);
	if (!rc && s->pq->ntuples(r) > 0) {
		if (!(pl.floor = malloc(n * sizeof *pl.floor)))
			rc = a2m_store_fail(&s->base, "index: out of memory");
		for (size_t i = 0; i < n && pl.floor; i++)
			pl.floor[i] = -1;
		if (!rc)
			rc = plan_seals(s, t, n, r, &pl);
		out.n = 0;
		if (!rc && pl.n && !(rc = do_seals(s, t, n, &pl, &out, &made, &nmade)))
			rc = write_seals(s, t, &pl, made, nmade, &out, seg);
	}
	if (r)
		s->pq->clear(r);
	free(made);
	free(pl.rows);
	free(pl.floor);
	free(out.p);
	return rc;
}
