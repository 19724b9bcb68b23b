/*
** postgres_check_index.c — the PostgreSQL engine's check of its term
** index (docs/CHECK.md, area "index"): every record's content analysed
** into the postings it should have, the index's rows (a2m_postings_seg,
** each term's rows gathered across a cursor's pages, the batch rows of
** the snapshot folded in) read into the postings it has, and the two
** compared term by term with the kept figures (a2m_state). Apart from
** postgres_check.c (the ops, the areas' table, the other core areas)
** because it is the one area that knows the index's row layout and codec.
** Its repair is SQL of the areas' table: the index marked as built by no
** analysis, which index_attach rebuilds.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_check.h"
#include "store/sqlite_segments.h"

/* ---- the term index -------------------------------------------------------------------- */

/* Every record's content analysed into the expected side, through a cursor. */
static int expect_records(pgcheck *k, a2m_check_terms *t, a2m_index_stats *want)
{
	a2m_check_meter m;
	int64_t done = 0;
	PGresult *r;
	if (a2m_pg_check_declare(k, A2M_CHECK_INDEX, "a2m_check_records",
				 "SELECT seq, content FROM a2m_records", "the records") != 0)
		return -1;
	a2m_check_meter_start(&m, k->o, A2M_CHECK_INDEX, "records analysed", k->records);
	for (;;) {
		if (!(r = a2m_pg_check_fetch(k, A2M_CHECK_INDEX, "a2m_check_records", 0, "the records")))
			return -1;
		int rows = k->s->pq->ntuples(r);
		for (int i = 0; i < rows; i++)
			if (a2m_check_terms_expect(t, k->o->ix, a2m_pg_check_num(k, r, i, 0),
						   k->s->pq->getvalue(r, i, 1), want) != 0) {
				k->s->pq->clear(r);
				a2m_check_say(k->o, A2M_CHECK_INDEX, 1, "out of memory");
				return -1;
			}
		k->s->pq->clear(r);
		a2m_check_meter_at(&m, done += rows);
		if (!rows)
			break;
	}
	a2m_check_meter_end(&m, done);
	return 0;
}

/* One term's rows gathered across the cursor's pages (a page may end inside a term). */
typedef struct term_rows {
	a2m_seg_bytes term;    /* the term's bytes */
	a2m_seg_bytes data;    /* its rows' lists, one after another, oldest first */
	size_t       *ends;    /* where each row's list ends in data */
	int          *tails;   /* which row is the term's tail (chunks of lists) */
	size_t        n, cap, tcap;
	size_t        hint;    /* their entries */
	pg_walk      *walk;    /* the snapshot's batch rows, in term order */
} term_rows;

/* Adds a list (of a row, or of a batch row: tail 0) to g's term. Returns 0 or -1 (memory). */
static int add_list(term_rows *g, const void *list, size_t size, int32_t n, int tail)
{
	if (a2m_seg_reserve(&g->data, size) != 0 ||
	    a2m_seg_grow(&g->ends, &g->cap, g->n + 1, sizeof *g->ends) != 0 ||
	    a2m_seg_grow(&g->tails, &g->tcap, g->n + 1, sizeof *g->tails) != 0)
		return -1;
	memcpy(g->data.p + g->data.n, list, size);
	g->data.n += size;
	g->tails[g->n] = tail;
	g->ends[g->n++] = g->data.n;
	g->hint += n > 0 ? (size_t)n : 0;
	return 0;
}

/* Adds the term's lists in the batch rows (newer than its rows) to g, the walk moved past it. */
static int batch_lists(term_rows *g)
{
	const pg_batch_term *h = a2m_pg_walk_next(g->walk);
	if (!h || a2m_seg_cmp_terms(h->term, h->tlen, g->term.p, g->term.n) != 0)
		return 0;
	for (size_t i = 0; i < g->walk->k; i++) {
		const pg_batch *row = &g->walk->rows[i];
		size_t at = g->walk->at[i];
		if (at < row->nterms &&
		    a2m_seg_cmp_terms(row->terms[at].term, row->terms[at].tlen, g->term.p,
				      g->term.n) == 0 &&
		    add_list(g, row->terms[at].list, row->terms[at].lsize, 0, 0) != 0)
			return -1;
	}
	size_t n;
	a2m_pg_walk_take(g->walk, h, NULL, &n);
	return 0;
}

/*
** Resolves the gathered term's rows (newest wins per record, tombstones
** hide) into its live postings on the found side. A row that is not a
** list is reported (the first few by term) and counted in *corrupt.
** Returns 0, or -1 when memory runs out.
*/
static int found_term(pgcheck *k, a2m_check_terms *t, term_rows *g, int64_t *postings,
		      int64_t *corrupt)
{
	if (batch_lists(g) != 0)
		return -1;
	const unsigned char **data = malloc((g->n ? g->n : 1) * sizeof *data);
	size_t *size = malloc((g->n ? g->n : 1) * sizeof *size);
	a2m_posting *v = NULL;
	size_t count = 0;
	int rc = data && size ? 0 : -1;
	for (size_t i = 0; i < g->n && !rc; i++) {
		size_t from = i ? g->ends[i - 1] : 0;
		data[i] = g->data.p + from;
		size[i] = g->ends[i] - from;
	}
	if (!rc)
		rc = a2m_pg_segs_resolve(data, size, g->tails, g->n, g->hint, &v, &count);
	free(data);
	free(size);
	if (rc == -2) {
		if ((*corrupt)++ < PG_CHECK_EXAMPLES) {
			char q[A2M_CHECK_QUOTED];
			a2m_check_say(k->o, A2M_CHECK_INDEX, 1, "term %s: its rows are not lists of "
				      "postings", a2m_check_quote((const char *)g->term.p, g->term.n,
								  q, sizeof q));
		}
		rc = 0;
	}
	for (size_t i = 0; i < count && !rc; i++)
		rc = a2m_check_terms_add(t, A2M_TERMS_FOUND, (const char *)g->term.p, g->term.n,
					 v[i].seq, v[i].tf, v[i].dl);
	*postings += (int64_t)count;
	free(v);
	g->n = 0;
	g->hint = 0;
	g->data.n = 0;
	g->term.n = 0;
	return rc ? -1 : 0;
}

/* Makes term g's (g holds no row). Returns 0 or -1 (memory). */
static int set_term(term_rows *g, const void *term, size_t len)
{
	if (a2m_seg_reserve(&g->term, len + 1) != 0)
		return -1;
	memcpy(g->term.p, term, len);
	g->term.n = len;
	return 0;
}

/*
** Resolves the terms only the batch rows hold that come before term (every
** one left when term is NULL), g being empty. Returns 0 or -1 (memory).
*/
static int batches_before(pgcheck *k, a2m_check_terms *t, term_rows *g,
			  const unsigned char *term, size_t len, int64_t *postings,
			  int64_t *corrupt)
{
	const pg_batch_term *h;
	while ((h = a2m_pg_walk_next(g->walk)) &&
	       (!term || a2m_seg_cmp_terms(h->term, h->tlen, term, len) < 0))
		if (set_term(g, h->term, h->tlen) != 0 || found_term(k, t, g, postings, corrupt) != 0)
			return -1;
	return 0;
}

/* Adds a row (term, list of n entries) to g, resolving g's term first when it is another. */
static int found_row(pgcheck *k, a2m_check_terms *t, term_rows *g, const char *term, size_t len,
		     const char *list, size_t size, int32_t n, int tail, int64_t *postings,
		     int64_t *corrupt)
{
	if (g->n && (g->term.n != len || memcmp(g->term.p, term, len) != 0) &&
	    found_term(k, t, g, postings, corrupt) != 0)
		return -1;
	if (!g->n) {
		if (batches_before(k, t, g, (const unsigned char *)term, len, postings, corrupt) != 0 ||
		    set_term(g, term, len) != 0)
			return -1;
	}
	return add_list(g, list, size, n, tail);
}

/*
** The snapshot's batch rows (a2m_batches, ids (fold_base, batch_last]),
** read into main's cache and set up in w for a walk in term order; a row
** outside those ids, a fold's state out of its bounds, or a row missing or
** corrupt is reported. Returns 0, or -1 (reported).
*/
static int batch_rows(pgcheck *k, pg_walk *w)
{
	pgstore *s = k->s;
	PGresult *r = a2m_pg_check_query(k, A2M_CHECK_INDEX, "SELECT fold_base, batch_last, fold_horizon,"
			    " (SELECT count(*) FROM a2m_batches b WHERE b.id <= fold_base"
			    " OR b.id > batch_last) FROM a2m_state", "a2m_batches");
	if (!r)
		return -1;
	int64_t base = a2m_pg_check_num(k, r, 0, 0), last = a2m_pg_check_num(k, r, 0, 1), horizon = a2m_pg_check_num(k, r, 0, 2);
	int64_t stray = a2m_pg_check_num(k, r, 0, 3);
	s->pq->clear(r);
	if (stray)
		a2m_check_say(k->o, A2M_CHECK_INDEX, 1, "%lld batch row%s outside the ids the state"
			      " row names (%lld, %lld]", (long long)stray, stray == 1 ? "" : "s",
			      (long long)base, (long long)last);
	if (horizon < base || horizon > last || base > last)
		a2m_check_say(k->o, A2M_CHECK_INDEX, 1, "the fold's state is out of its bounds:"
			      " base %lld, horizon %lld, last %lld", (long long)base,
			      (long long)horizon, (long long)last);
	if (a2m_pg_batches_sync(s, &s->main, base, last) != 0) {
		a2m_check_say(k->o, A2M_CHECK_INDEX, 1, "cannot read the batch rows: %s",
			      s->base.errmsg);
		return -1;
	}
	w->rows = s->main.batches->v;
	w->k = s->main.batches->n;
	if (!(w->at = calloc(w->k ? w->k : 1, sizeof *w->at))) {
		a2m_check_say(k->o, A2M_CHECK_INDEX, 1, "out of memory");
		return -1;
	}
	return 0;
}

/*
** Every row of a2m_postings_seg, through a cursor in (term, seg) order,
** each term's rows resolved into its postings on the found side.
*/
static int found_postings(pgcheck *k, a2m_check_terms *t, int64_t *postings, int64_t *corrupt)
{
	a2m_check_meter m;
	int64_t total = 0, entries = 0;
	pg_walk walk = {NULL, 0, NULL};
	term_rows g = {{0}, {0}, NULL, NULL, 0, 0, 0, 0, &walk};
	PGresult *r;
	pgstore *s = k->s;
	int rc = 0;
	*postings = *corrupt = 0;
	if (batch_rows(k, &walk) != 0)
		return -1;
	if (k->o->progress) {
		if (!(r = a2m_pg_check_query(k, A2M_CHECK_INDEX, "SELECT coalesce(sum(n), 0) FROM a2m_postings_seg",
				"a2m_postings_seg")))
			return -1;
		total = a2m_pg_check_num(k, r, 0, 0);
		s->pq->clear(r);
	}
	if (a2m_pg_check_declare(k, A2M_CHECK_INDEX, "a2m_check_postings",
				 "SELECT term, data, n, seg = 9223372036854775807 FROM a2m_postings_seg"
				 " ORDER BY term, seg", "a2m_postings_seg") != 0)
		return -1;
	a2m_check_meter_start(&m, k->o, A2M_CHECK_INDEX, "index entries read", total);
	for (;;) {
		if (!(r = a2m_pg_check_fetch(k, A2M_CHECK_INDEX, "a2m_check_postings", 1, "a2m_postings_seg"))) {
			rc = -1;
			break;
		}
		int rows = s->pq->ntuples(r);
		for (int i = 0; i < rows && !rc; i++) {
			int32_t n = a2m_pg_int4(s, r, i, 2);
			entries += n;
			if (found_row(k, t, &g, s->pq->getvalue(r, i, 0),
				      (size_t)s->pq->getlength(r, i, 0), s->pq->getvalue(r, i, 1),
				      (size_t)s->pq->getlength(r, i, 1), n,
				      *s->pq->getvalue(r, i, 3) != 0, postings, corrupt) != 0)
				rc = -2;
		}
		s->pq->clear(r);
		a2m_check_meter_at(&m, entries);
		if (rc || !rows)
			break;
	}
	if (!rc && g.n && found_term(k, t, &g, postings, corrupt) != 0)
		rc = -2;
	if (!rc && batches_before(k, t, &g, NULL, 0, postings, corrupt) != 0)
		rc = -2;
	if (rc == -2)
		a2m_check_say(k->o, A2M_CHECK_INDEX, 1, "out of memory");
	free(g.term.p);
	free(g.data.p);
	free(g.ends);
	free(g.tails);
	free(walk.at);
	a2m_check_meter_end(&m, entries);
	return rc ? -1 : 0;
}

/* The analysis the index was built with, as index_attach names it (postgres_index.c). */
static void analysis_of(const a2m_check_options *o, char *out, size_t size)
{
	snprintf(out, size, "pg2 %s", o->ix->version);
}

void a2m_pg_check_index(pgcheck *k)
{
	char mine[160];
	pgstore *s = k->s;
	analysis_of(k->o, mine, sizeof mine);
	PGresult *r = a2m_pg_check_query(k, A2M_CHECK_INDEX, "SELECT index_version, docs, total_len, unindexed"
			    " FROM a2m_state", "a2m_state");
	if (!r)
		return;
	if (s->pq->getisnull(r, 0, 0) || strcmp(s->pq->getvalue(r, 0, 0), mine) != 0) {
		char q[A2M_CHECK_QUOTED];
		a2m_check_say(k->o, A2M_CHECK_INDEX, 1, "built with analysis %s, not this server's "
			      "(\"%s\"): a server of this build would rebuild it at its open",
			      a2m_pg_check_quoted(k, r, 0, 0, q, sizeof q), mine);
		s->pq->clear(r);
		return;
	}
	a2m_index_stats kept = {a2m_pg_check_num(k, r, 0, 1), a2m_pg_check_num(k, r, 0, 2), a2m_pg_check_num(k, r, 0, 3)};
	a2m_index_stats want = {0, 0, 0};
	s->pq->clear(r);
	a2m_check_terms *t = a2m_check_terms_new();
	int64_t rows = 0, corrupt = 0;
	if (!t) {
		a2m_check_say(k->o, A2M_CHECK_INDEX, 1, "out of memory");
		return;
	}
	if (expect_records(k, t, &want) != 0 || found_postings(k, t, &rows, &corrupt) != 0) {
		a2m_check_terms_free(t);
		return;
	}
	a2m_check_terms_result res;
	a2m_check_terms_compare(t, k->o, PG_CHECK_EXAMPLES, &res);
	a2m_check_terms_free(t);
	int figures = kept.docs != want.docs || kept.total_len != want.total_len ||
		      kept.unindexed != want.unindexed;
	if (figures)
		a2m_check_say(k->o, A2M_CHECK_INDEX, 1, "kept figures (a2m_state): %lld documents, "
			      "%lld terms in all, %lld without a term; the records make %lld, %lld, "
			      "%lld", (long long)kept.docs, (long long)kept.total_len,
			      (long long)kept.unindexed, (long long)want.docs, (long long)want.total_len,
			      (long long)want.unindexed);
	if (corrupt)
		a2m_check_say(k->o, A2M_CHECK_INDEX, 1, "%lld term%s whose rows are not lists of "
			      "postings", (long long)corrupt, corrupt == 1 ? "" : "s");
	if (res.differing)
		a2m_check_say(k->o, A2M_CHECK_INDEX, 1, "%zu term%s whose postings differ from the "
			      "records' text (%lld postings expected, %lld found)", res.differing,
			      res.differing == 1 ? "" : "s", (long long)res.postings_expected,
			      (long long)res.postings_found);
	else if (!figures && !corrupt)
		a2m_check_say(k->o, A2M_CHECK_INDEX, 0, "%lld records, %zu terms, %lld postings, as "
			      "the records' text yields", (long long)k->records, res.terms_found,
			      (long long)rows);
}
