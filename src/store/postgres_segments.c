/*
** postgres_segments.c — the rows of the PostgreSQL term index: a term's
** postings kept as a few values of delta-coded varints, written once per
** term by each flush of a write transaction and merged as they accumulate.
**
** a2m_postings_seg (schema step 6) holds rows (term, seg, n, last_seq,
** data): data is one list of the SQLite segments' encoding
** (sqlite_segments.h: ascending seq, each entry varint(delta << 1 |
** deleted) [varint(tf) varint(dl)]), n its entries, last_seq its highest
** seq. A deleted entry, a tombstone, says the posting is gone as of that
** row. seg orders a term's rows by age: a flush writes its rows with
** ((the commit's version) << 20 | the transaction's flush number), and the
** version moves at every commit that writes (under the deployment's write
** lock, postgres_txn.c), so a later flush always has the larger seg. For a
** (term, seq) the entry of the newest row wins.
**
** Why: one row per (term, record) cost PostgreSQL a b-tree insert per
** posting when written (~13 µs each: batched remember was capped near
** 8 700 records/s whatever else was done) and an index entry per posting
** when read (~4 000 for a common term at 1M records, ~2.6 ms inside the
** server). Here a flush writes one row per distinct term, and a read
** gets a handful of values and decodes them in a2m.
**
** Merges, per term, inside the writing transaction (so under the write
** lock, crash-safe: a killed server's merge is rolled back with its
** writes). Each server counts, per hashed term, the rows it wrote; at
** MERGE_EVERY it reads the term's row sizes and merges the newest rows
** into the flush's own row while each next older row is no bigger than
** what is merged so far (or while the term has more than MAX_ROWS rows):
** sizes grow geometrically, a term keeps O(log n) rows and an entry is
** rewritten O(log n) times. A merge drops the tombstones no older row
** can need (seq above every older row's last_seq: seqs are never given
** out twice), all of them when it takes the term's oldest row. A flush's
** merges read at most MERGE_BUDGET entries beyond the first merge; a term
** left over keeps its count and is merged at its next write. Several
** servers each count their own writes, so a term has at most about
** MERGE_EVERY rows per server beyond its merged ones.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"
#include "store/sqlite_segments.h"

/* A server's writes of a term (its hashed counter) between looks at its rows. */
#define MERGE_EVERY 8
/* Rows of a term beyond which its newest are merged whatever their sizes. */
#define MAX_ROWS 16
/* Entries a flush's merges read, beyond its first merge. */
#define MERGE_BUDGET 500000

#define SQL_INSERT \
	"INSERT INTO a2m_postings_seg (term, seg, n, last_seq, data)" \
	" SELECT u.t, $2, u.n, u.l, u.d" \
	" FROM unnest($1::bytea[], $3::int4[], $4::int8[], $5::bytea[]) AS u(t, n, l, d)"
#define SQL_DELETE \
	"DELETE FROM a2m_postings_seg p USING unnest($1::bytea[], $2::int8[]) AS d(t, s)" \
	" WHERE p.term = d.t AND p.seg = d.s"
#define SQL_SIZES \
	"SELECT term, seg, n, last_seq FROM a2m_postings_seg" \
	" WHERE term = ANY($1::bytea[]) ORDER BY term, seg"
#define SQL_ROWS \
	"SELECT p.term, p.seg, p.data FROM unnest($1::bytea[], $2::int8[]) AS d(t, s)" \
	" JOIN a2m_postings_seg p ON p.term = d.t AND p.seg = d.s ORDER BY p.term, p.seg"
#define SQL_TERM "SELECT n, data FROM a2m_postings_seg WHERE term = $1 ORDER BY seg"

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

int a2m_pg_segs_resolve(const unsigned char *const *data, const size_t *size, size_t n,
			size_t hint, a2m_posting **v, size_t *count)
{
	collect c = {NULL, 0, 0};
	a2m_seg_list one, *lists = n > 1 ? malloc(n * sizeof *lists) : &one;
	int corrupt = 0, rc;
	*v = NULL;
	*count = 0;
	if (!lists || a2m_seg_grow(&c.v, &c.cap, hint ? hint : 1, sizeof *c.v) != 0) {
		if (lists != &one)
			free(lists);
		free(c.v);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		a2m_seg_list_init(&lists[i], data[i], size[i]);
	/* Floor 0: a tombstone hides what is older and is never itself emitted. */
	rc = merge_any(lists, n, 0, put_posting, NULL, &c, &corrupt);
	if (lists != &one)
		free(lists);
	if (rc) {
		free(c.v);
		return corrupt ? -2 : -1;
	}
	*v = c.v;
	*count = c.n;
	return 0;
}

/* ---- reading one term ------------------------------------------------------------------- */

int a2m_pg_segs_read(pgstore *s, pgconn *c, const char *term, size_t len, a2m_posting **v,
		     size_t *count)
{
	pgparams p;
	PGresult *r;
	*v = NULL;
	*count = 0;
	a2m_pg_params_init(&p);
	a2m_pg_param_bytea(&p, term, len);
	int rc = a2m_pg_run_named(s, c, "a2m_seg_term", SQL_TERM, &p, "index_postings", &r);
	if (rc)
		return rc;
	int rows = s->pq->ntuples(r);
	const unsigned char *one_d, **data = rows > 1 ? malloc((size_t)rows * sizeof *data) : &one_d;
	size_t one_n, *size = rows > 1 ? malloc((size_t)rows * sizeof *size) : &one_n, hint = 0;
	if (!data || !size) {
		if (rows > 1) {
			free(data);
			free(size);
		}
		s->pq->clear(r);
		return a2m_store_fail(&s->base, "index_postings: out of memory");
	}
	for (int i = 0; i < rows; i++) {
		hint += (size_t)a2m_pg_int4(s, r, i, 0);
		data[i] = (const unsigned char *)s->pq->getvalue(r, i, 1);
		size[i] = (size_t)s->pq->getlength(r, i, 1);
	}
	int got = a2m_pg_segs_resolve(data, size, (size_t)rows, hint, v, count);
	if (rows > 1) {
		free(data);
		free(size);
	}
	s->pq->clear(r);
	if (got == -2)
		return a2m_store_fail(&s->base, "index_postings: a row of the term index is corrupt"
				      " (a2m check --postgres --repair rebuilds it)");
	if (got)
		return a2m_store_fail(&s->base, "index_postings: out of memory");
	return 0;
}

/* ---- writing a flush, merging as it goes ------------------------------------------------ */

/* A row a flush's merges take: term (as an index into the flush's lists) and seg. */
typedef struct taken {
	size_t  term;
	int64_t seg;
} taken;

/* What a flush plans: the rows its merges take, and each merged term's floor. */
typedef struct plan {
	taken   *rows;
	size_t   n, cap;
	int64_t *floor;      /* per list of the flush: -1 when its term is not merged */
} plan;

/* Terms in the order of a2m_postings_seg's key (bytea: bytes, then length). */
static int cmp_term(const char *a, size_t an, const char *b, size_t bn)
{
	return a2m_seg_cmp_terms((const unsigned char *)a, an, (const unsigned char *)b, bn);
}

/* The list of the flush whose term is the cell (binary search; the lists are sorted). */
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

/*
** Reads the row sizes of the candidate terms (cand[0..ncand)) and decides
** which rows each merge takes (pl). Returns 0 or fails.
*/
static int plan_merges(pgstore *s, const pg_term_list *t, size_t n, const size_t *cand,
		       size_t ncand, unsigned char *counters, size_t ncounters, plan *pl)
{
	pgarray terms;
	pgparams p;
	PGresult *r;
	a2m_pg_array_begin(&terms, PG_OID_BYTEA);
	for (size_t i = 0; i < ncand; i++)
		a2m_pg_array_add(&terms, t[cand[i]].term, t[cand[i]].len);
	if (a2m_pg_array_end(&terms) != 0)
		return a2m_store_fail(&s->base, "index: out of memory");
	a2m_pg_params_init(&p);
	a2m_pg_param_bytea(&p, terms.buf, terms.len);
	int rc = a2m_pg_run_named(s, &s->main, "a2m_seg_sizes", SQL_SIZES, &p, "index", &r);
	a2m_pg_array_free(&terms);
	if (rc)
		return rc;
	int rows = s->pq->ntuples(r);
	int64_t budget = MERGE_BUDGET;
	for (int a = 0, b; a < rows && !rc; a = b) {
		const char *term = s->pq->getvalue(r, a, 0);
		size_t len = (size_t)s->pq->getlength(r, a, 0);
		for (b = a + 1; b < rows && cmp_term(s->pq->getvalue(r, b, 0),
						     (size_t)s->pq->getlength(r, b, 0), term, len) == 0;
		     b++)
			;
		size_t i = find_term(t, n, term, len);
		if (i == n)
			continue;
		/* The newest rows while each next older is no bigger than what is taken. */
		int64_t acc = t[i].entries;
		int j = b;
		while (j > a && ((int64_t)a2m_pg_int4(s, r, j - 1, 2) <= acc || j - a > MAX_ROWS))
			acc += a2m_pg_int4(s, r, --j, 2);
		size_t bucket = a2m_pcache_bucket(term, len, ncounters);
		if (j == b) {
			counters[bucket] = 0;  /* its rows are in order: nothing to merge yet */
			continue;
		}
		if (budget < acc && pl->n)
			continue;  /* next time: its count stays */
		budget -= acc;
		counters[bucket] = 0;
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
	s->pq->clear(r);
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

/*
** Reads the planned rows and merges each term's with the flush's own list
** into out: the term's list in t is replaced by its merge (pointing into
** out, which the caller frees after writing). Returns 0 or fails.
*/
static int do_merges(pgstore *s, pg_term_list *t, size_t n, const plan *pl, a2m_seg_bytes *out)
{
	pgarray terms, segs;
	pgparams p;
	PGresult *r;
	int rc = taken_params(s, t, pl, &terms, &segs, &p);
	if (!rc)
		rc = a2m_pg_run_named(s, &s->main, "a2m_seg_rows", SQL_ROWS, &p, "index", &r);
	a2m_pg_array_free(&terms);
	a2m_pg_array_free(&segs);
	if (rc)
		return rc;
	int rows = s->pq->ntuples(r);
	size_t *off = NULL, ncap = 0;
	a2m_seg_list *lists = malloc(((size_t)rows + 1) * sizeof *lists);
	if (!lists || a2m_seg_grow(&off, &ncap, n, sizeof *off) != 0) {
		rc = a2m_store_fail(&s->base, "index: out of memory");
		goto done;
	}
	for (int a = 0, b; a < rows && !rc; a = b) {
		const char *term = s->pq->getvalue(r, a, 0);
		size_t len = (size_t)s->pq->getlength(r, a, 0);
		for (b = a + 1; b < rows && cmp_term(s->pq->getvalue(r, b, 0),
						     (size_t)s->pq->getlength(r, b, 0), term, len) == 0;
		     b++)
			;
		size_t i = find_term(t, n, term, len), k = 0;
		if (i == n || pl->floor[i] < 0)
			continue;
		for (int j = a; j < b; j++)
			a2m_seg_list_init(&lists[k++], s->pq->getvalue(r, j, 2),
					  (size_t)s->pq->getlength(r, j, 2));
		a2m_seg_list_init(&lists[k++], t[i].data, t[i].size);
		size_t start = out->n;
		enc e = {out, 0, 0};
		int corrupt = 0;
		if (merge_any(lists, k, pl->floor[i], put_entry, put_run, &e, &corrupt) != 0) {
			rc = corrupt ? a2m_store_fail(&s->base, "index: a row of term '%.*s' is corrupt"
						      " (a2m check --postgres --repair rebuilds the"
						      " index)", (int)(len < 64 ? len : 64), term)
				     : a2m_store_fail(&s->base, "index: out of memory");
			break;
		}
		off[i] = start;
		t[i].size = out->n - start;
		t[i].entries = e.n;
		t[i].last_seq = e.prev;
		t[i].data = NULL;  /* set below: out may still move */
	}
	for (size_t i = 0; i < n && !rc; i++)
		if (pl->floor[i] >= 0 && !t[i].data)
			t[i].data = out->p + off[i];
done:
	free(lists);
	free(off);
	s->pq->clear(r);
	return rc;
}

/* Deletes the planned rows and inserts the flush's, in one round trip. */
static int write_rows(pgstore *s, const pg_term_list *t, size_t n, int64_t seg, const plan *pl)
{
	pgarray terms, ns, lasts, datas, dterms = {0}, dsegs = {0};
	pgparams p, d;
	a2m_pg_array_begin(&terms, PG_OID_BYTEA);
	a2m_pg_array_begin(&ns, PG_OID_INT4);
	a2m_pg_array_begin(&lasts, PG_OID_INT8);
	a2m_pg_array_begin(&datas, PG_OID_BYTEA);
	for (size_t i = 0; i < n; i++) {
		if (!t[i].entries)
			continue;  /* a merge left nothing of the term */
		a2m_pg_array_add(&terms, t[i].term, t[i].len);
		a2m_pg_array_int4(&ns, (int32_t)t[i].entries);
		a2m_pg_array_int8(&lasts, t[i].last_seq);
		a2m_pg_array_add(&datas, t[i].data, t[i].size);
	}
	int rc = 0;
	if (a2m_pg_array_end(&terms) | a2m_pg_array_end(&ns) | a2m_pg_array_end(&lasts) |
	    a2m_pg_array_end(&datas)) {
		rc = a2m_store_fail(&s->base, "index: out of memory");
	} else {
		a2m_pg_params_init(&p);
		a2m_pg_param_bytea(&p, terms.buf, terms.len);
		a2m_pg_param_int8(&p, seg);
		a2m_pg_param_bytea(&p, ns.buf, ns.len);
		a2m_pg_param_bytea(&p, lasts.buf, lasts.len);
		a2m_pg_param_bytea(&p, datas.buf, datas.len);
		if (!pl->n) {
			PGresult *r;
			if (!(rc = a2m_pg_run_named(s, &s->main, "a2m_seg_insert", SQL_INSERT, &p,
						    "index", &r)))
				s->pq->clear(r);
		} else if (!(rc = taken_params(s, t, pl, &dterms, &dsegs, &d))) {
			pgstep steps[] = {{PG_NSTMTS, SQL_DELETE, &d, 0, NULL},
					  {PG_NSTMTS, SQL_INSERT, &p, 0, NULL}};
			rc = a2m_pg_pipeline(s, &s->main, steps, 2, "index");
		}
	}
	a2m_pg_array_free(&dterms);
	a2m_pg_array_free(&dsegs);
	a2m_pg_array_free(&terms);
	a2m_pg_array_free(&ns);
	a2m_pg_array_free(&lasts);
	a2m_pg_array_free(&datas);
	return rc;
}

int a2m_pg_segs_write(pgstore *s, pg_term_list *t, size_t n, int64_t seg,
		      unsigned char *counters, size_t ncounters)
{
	plan pl = {NULL, 0, 0, NULL};
	size_t *cand = NULL, ncand = 0, cap = 0;
	a2m_seg_bytes out = {0};
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		size_t b = a2m_pcache_bucket(t[i].term, t[i].len, ncounters);
		if (counters[b] < 255)
			counters[b]++;
		if (counters[b] < MERGE_EVERY)
			continue;
		if (a2m_seg_grow(&cand, &cap, ncand + 1, sizeof *cand) != 0)
			break;  /* no merge this time: the counts stay */
		cand[ncand++] = i;
	}
	if (ncand) {
		if (!(pl.floor = malloc(n * sizeof *pl.floor)))
			rc = a2m_store_fail(&s->base, "index: out of memory");
		for (size_t i = 0; i < n && pl.floor; i++)
			pl.floor[i] = -1;
		if (!rc)
			rc = plan_merges(s, t, n, cand, ncand, counters, ncounters, &pl);
		if (!rc && pl.n)
			rc = do_merges(s, t, n, &pl, &out);
	}
	if (!rc)
		rc = write_rows(s, t, n, seg, &pl);
	free(cand);
	free(pl.rows);
	free(pl.floor);
	free(out.p);
	return rc;
}
