/*
** memory_check.c — the in-memory engine's consistency check and repair
** (store.h, check and repair).
**
** A memory store has no file, so what there is to check is what its
** tables derive from the entries: the seq table and the next seq, the
** groups that count (memory_counts.c), the term index (memory_index.c) and
** the vector rows (vector_index.c). The tests use it as an oracle after a
** workload; a program embedding the library may call it too. Repair
** rebuilds the index, the groups and the vector rows from the entries,
** and moves the next seq past the highest; it changes no record.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/memory_internal.h"
#include "store/store_check.h"
#include "util/grow.h"

/* Findings of one area reported one by one before the rest are only counted. */
#define MAX_EXAMPLES 8

#define EACH_ENTRY(s, e) A2M_MEM_EACH(s, e)

/* ---- seqs ----------------------------------------------------------------- */

static void check_seqs(mstore *s, const a2m_check_options *o)
{
	size_t n = 0, problems = 0;
	int64_t hi = 0;
	EACH_ENTRY(s, e) {
		n++;
		if (e->seq > hi)
			hi = e->seq;
		const char *why = NULL;
		if (e->seq < 1 || e->seq >= s->next_seq)
			why = "outside the seqs given out";
		else if (a2m_mem_find_seq(s, e->seq) != e)
			why = "not found by its seq (shared, or the table lost it)";
		if (why && problems++ < MAX_EXAMPLES)
			a2m_check_say(o, A2M_CHECK_SEQS, 1, "record \"%s\": seq %lld is %s", a2m_mem_id(e),
				      (long long)e->seq, why);
	}
	if (s->seqs.count != n) {
		problems++;
		a2m_check_say(o, A2M_CHECK_SEQS, 1, "the seq table holds %zu records, the ids %zu",
			      s->seqs.count, n);
	}
	if (problems > MAX_EXAMPLES)
		a2m_check_say(o, A2M_CHECK_SEQS, 1, "%zu problems in all", problems);
	if (!problems)
		a2m_check_say(o, A2M_CHECK_SEQS, 0, "%zu records, seqs unique, highest %lld, next %lld",
			      n, (long long)hi, (long long)s->next_seq);
}

/* ---- counts --------------------------------------------------------------- */

/* Members per kind (tier; tier and session; session) over every group. */
typedef struct kinds {
	size_t n[3];
} kinds;

static int sum_group(void *ctx, int by_tier, const char *tier, int by_session,
		     const char *session, size_t n)
{
	(void)tier;
	(void)session;
	kinds *k = ctx;
	k->n[by_tier ? (by_session ? 1 : 0) : 2] += n;
	return 0;
}

static void check_counts(mstore *s, const a2m_check_options *o)
{
	static const char *const kind_names[3] = {"tier", "(tier, session)", "session"};
	size_t n = 0, problems = 0;
	kinds k = {{0, 0, 0}};
	EACH_ENTRY(s, e) {
		n++;
		for (int kind = 0; kind < 3; kind++) {
			size_t m = 0;
			a2m_mlink *const *v = a2m_mcounts_members(s->counts, kind != 2, e->names->tier,
								  kind != 0, e->names->session, &m);
			/* The kinds' order in a2m_mlink.at: tier, bucket, session. */
			size_t at = e->link.at[kind];
			if ((!v || at >= m || v[at] != &e->link) && problems++ < MAX_EXAMPLES)
				a2m_check_say(o, A2M_CHECK_COUNTS, 1, "record \"%s\" is not counted in "
					      "its %s group", a2m_mem_id(e), kind_names[kind]);
		}
	}
	a2m_mcounts_each(s->counts, sum_group, &k);
	for (int kind = 0; kind < 3; kind++)
		if (k.n[kind] != n && problems++ < MAX_EXAMPLES)
			a2m_check_say(o, A2M_CHECK_COUNTS, 1, "the %s groups count %zu records, not %zu",
				      kind_names[kind], k.n[kind], n);
	if (problems > MAX_EXAMPLES)
		a2m_check_say(o, A2M_CHECK_COUNTS, 1, "%zu problems in all", problems);
	if (!problems)
		a2m_check_say(o, A2M_CHECK_COUNTS, 0, "%zu records, each counted once in its groups", n);
}

/* ---- the index ------------------------------------------------------------ */

typedef struct found {
	a2m_check_terms *t;
	int              oom;
} found;

static int add_term(const char *term, size_t len, const a2m_posting *p, size_t n, void *ctx)
{
	found *f = ctx;
	for (size_t i = 0; i < n; i++)
		if (a2m_check_terms_add(f->t, A2M_TERMS_FOUND, term, len, p[i].seq, p[i].tf,
					p[i].dl) != 0) {
			f->oom = 1;
			return 1;
		}
	return 0;
}

static void check_index(mstore *s, const a2m_check_options *o)
{
	a2m_indexer *ix = o->ix ? o->ix : s->ix;
	a2m_index_stats want = {0, 0, 0}, got;
	size_t records = 0;
	if (!s->index || !ix) {
		a2m_check_say(o, A2M_CHECK_INDEX, 0, "no index is kept");
		return;
	}
	found f = {a2m_check_terms_new(), 0};
	if (!f.t) {
		a2m_check_say(o, A2M_CHECK_INDEX, 1, "out of memory");
		return;
	}
	a2m_check_meter meter;
	a2m_check_meter_start(&meter, o, A2M_CHECK_INDEX, "records analysed",
			      (int64_t)s->ids.count);
	EACH_ENTRY(s, e) {
		a2m_check_meter_at(&meter, (int64_t)++records);
		if (!f.oom && a2m_check_terms_expect(f.t, ix, e->seq, a2m_mem_content(e), &want) != 0)
			f.oom = 1;
	}
	a2m_check_meter_end(&meter, (int64_t)records);
	if (!f.oom && a2m_mindex_each(s->index, add_term, &f) < 0)
		f.oom = 1;
	if (f.oom) {
		a2m_check_say(o, A2M_CHECK_INDEX, 1, "out of memory");
		a2m_check_terms_free(f.t);
		return;
	}
	a2m_check_terms_result r;
	a2m_check_terms_compare(f.t, o, MAX_EXAMPLES, &r);
	a2m_check_terms_free(f.t);
	a2m_mindex_stats(s->index, &got);
	int stats_differ = got.docs != want.docs || got.total_len != want.total_len ||
			   got.unindexed != want.unindexed;
	if (stats_differ)
		a2m_check_say(o, A2M_CHECK_INDEX, 1, "kept figures: %lld documents, %lld terms in all, "
			      "%lld without a term; the records make %lld, %lld, %lld",
			      (long long)got.docs, (long long)got.total_len, (long long)got.unindexed,
			      (long long)want.docs, (long long)want.total_len, (long long)want.unindexed);
	if (r.differing)
		a2m_check_say(o, A2M_CHECK_INDEX, 1, "%zu term%s whose postings differ from the "
			      "records' text (%lld postings expected, %lld found)", r.differing,
			      r.differing == 1 ? "" : "s", (long long)r.postings_expected,
			      (long long)r.postings_found);
	else if (!stats_differ)
		a2m_check_say(o, A2M_CHECK_INDEX, 0, "%zu records, %zu terms, %lld postings, as the "
			      "records' text yields", records, r.terms_found, (long long)r.postings_found);
}

/* ---- vector rows ------------------------------------------------------------ */

/* A record's vector in one space: its width and seq. */
typedef struct vec_of {
	size_t  width;
	int64_t seq;
} vec_of;

static int cmp_vec(const void *a, const void *b)
{
	const vec_of *x = a, *y = b;
	if (x->width != y->width)
		return x->width < y->width ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_cand(const void *a, const void *b)
{
	int64_t x = ((const a2m_candidate *)a)->seq, y = ((const a2m_candidate *)b)->seq;
	return (x > y) - (x < y);
}

/*
** The rows of one space (generated 0: the records' own vectors) against
** the records: for each width the records' vectors come in, a search of
** that width must find exactly those records, each once, unless the index
** sends it back to a scan (a width not the space's). *rows counts the
** rows found. Returns the problems found.
*/
static size_t check_space(mstore *s, const a2m_check_options *o, int generated, size_t *rows)
{
	vec_of *v = NULL;
	size_t n = 0, cap = 0, problems = 0;
	EACH_ENTRY(s, e) {
		a2m_record r;
		a2m_mem_entry_view(e, &r);
		size_t w = generated ? (r.gen_embedding ? r.gen_dims : 0)
				     : (r.embedding ? r.dims : 0);
		if (!w)
			continue;
		if (a2m_grow((void **)&v, &cap, n + 1, sizeof *v)) {
			free(v);
			a2m_check_say(o, A2M_CHECK_VECTORS, 1, "out of memory");
			return 1;
		}
		v[n++] = (vec_of){w, e->seq};
	}
	if (n)
		qsort(v, n, sizeof *v, cmp_vec);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && v[j].width == v[i].width; j++)
			;
		size_t w = v[i].width;
		float *q = malloc(w * sizeof *q);
		a2m_candidates c;
		memset(&c, 0, sizeof c);
		if (!q) {
			problems++;
			a2m_check_say(o, A2M_CHECK_VECTORS, 1, "out of memory");
			break;
		}
		for (size_t d = 0; d < w; d++)
			q[d] = 1.0f;
		a2m_vector_search search = {.vector = q, .dims = w, .measure = A2M_VECTOR_DOT,
					    .generated = generated};
		int rc = a2m_vindex_search(s->vectors, &search, &c);
		free(q);
		if (rc == A2M_STORE_NO_INDEX)
			continue;  /* not the space's width: such queries scan */
		if (rc != 0) {
			problems++;
			a2m_check_say(o, A2M_CHECK_VECTORS, 1, "out of memory");
			break;
		}
		if (c.n)
			qsort(c.v, c.n, sizeof *c.v, cmp_cand);
		int same = c.n == j - i;
		for (size_t k = 0; same && k < c.n; k++)
			same = c.v[k].seq == v[i + k].seq;
		if (!same && problems++ < MAX_EXAMPLES)
			a2m_check_say(o, A2M_CHECK_VECTORS, 1, "%s vectors of width %zu: %zu records "
				      "hold one, the rows searched are %zu", generated ? "generated" : "own",
				      w, j - i, c.n);
		*rows += c.n;
		free(c.v);
	}
	free(v);
	return problems;
}

static void check_vectors(mstore *s, const a2m_check_options *o)
{
	if (!a2m_vindex_valid(s->vectors)) {
		a2m_check_say(o, A2M_CHECK_VECTORS, 0, "the vector rows are marked for a rebuild "
			      "(done at the next search)");
		return;
	}
	size_t rows = 0, problems = check_space(s, o, 0, &rows) + check_space(s, o, 1, &rows);
	if (!problems && rows != a2m_vindex_rows(s->vectors)) {
		problems++;
		a2m_check_say(o, A2M_CHECK_VECTORS, 1, "%zu vector rows, of which searches find %zu",
			      a2m_vindex_rows(s->vectors), rows);
	}
	if (!problems)
		a2m_check_say(o, A2M_CHECK_VECTORS, 0, "%zu vector rows, each its record's", rows);
}

/* ---- the extensions' data --------------------------------------------------- */

static void check_history(mstore *s, const a2m_check_options *o)
{
	a2m_check_history h;
	a2m_check_history_begin(&h, &s->base, o);
	a2m_mhistory_each(s->history, a2m_check_history_visit, &h);
	a2m_check_history_end(&h);
}

/* Expiry times: none before the clock's start (0 is "never"). No table derives from them. */
static void check_expiry(mstore *s, const a2m_check_options *o)
{
	size_t n = 0, problems = 0;
	int64_t soonest = 0;
	EACH_ENTRY(s, e) {
		int64_t at = a2m_mem_expires(e);
		if (at < 0 && problems++ < MAX_EXAMPLES)
			a2m_check_say(o, A2M_CHECK_EXPIRY, 1, "record \"%s\": expires at %lld, before "
				      "the clock's start", a2m_mem_id(e), (long long)at);
		if (at > 0 && (!n++ || at < soonest))
			soonest = at;
	}
	if (problems > MAX_EXAMPLES)
		a2m_check_say(o, A2M_CHECK_EXPIRY, 1, "%zu problems in all", problems);
	if (!problems)
		a2m_check_say_expiry(o, (int64_t)n, soonest, "");
}

/* Each fingerprint in the table under itself, and that of its record's content. */
static void check_dedup(mstore *s, const a2m_check_options *o)
{
	size_t n = 0, problems = 0;
	EACH_ENTRY(s, e) {
		uint64_t fp = a2m_mem_fingerprint(e);
		if (!fp)
			continue;
		n++;
		const entry *x = a2m_mem_fp_chain(s, fp);
		while (x && x != e)
			x = a2m_mem_fp_next(x);
		if (!x && problems++ < MAX_EXAMPLES)
			a2m_check_say(o, A2M_CHECK_DEDUP, 1, "record \"%s\": not found by its "
				      "fingerprint", a2m_mem_id(e));
		a2m_record r;
		a2m_mem_entry_view(e, &r);
		a2m_check_fingerprint(o, r.id, r.content, r.role, fp, &problems);
	}
	if (s->fps.count != n) {
		problems++;
		a2m_check_say(o, A2M_CHECK_DEDUP, 1, "the fingerprint table holds %zu records, %zu "
			      "have a fingerprint", s->fps.count, n);
	}
	if (problems > MAX_EXAMPLES)
		a2m_check_say(o, A2M_CHECK_DEDUP, 1, "%zu problems in all", problems);
	if (!problems)
		a2m_check_say(o, A2M_CHECK_DEDUP, 0, "%zu fingerprinted record%s, each found by its "
			      "fingerprint%s", n, n == 1 ? "" : "s", o->fingerprint ? ", each its content's" : "");
}

/* ---- the ops ---------------------------------------------------------------- */

int a2m_mem_check(a2m_store *base, const a2m_check_options *o)
{
	mstore *s = (mstore *)base;
	a2m_check_say(o, A2M_CHECK_FILE, 0, "in memory: no file");
	check_counts(s, o);
	check_seqs(s, o);
	check_vectors(s, o);
	check_index(s, o);
	check_history(s, o);
	check_expiry(s, o);
	check_dedup(s, o);
	return 0;
}

/*
** The groups counted again from the entries, into a fresh table. Each
** entry's link is rewritten as it joins; should memory run out half way,
** the links are put back as they were, for the old table they stay in.
*/
static int repair_counts(mstore *s)
{
	size_t n = s->ids.count, k = 0;
	a2m_mlink *saved = malloc((n ? n : 1) * sizeof *saved);
	a2m_mcounts *c = saved ? a2m_mcounts_new() : NULL;
	int rc = c ? 0 : -1;
	EACH_ENTRY(s, e) {
		if (rc || k == n)
			break;
		saved[k++] = e->link;
		if (a2m_mcounts_reserve(c, e->names->tier, e->names->session) != 0)
			rc = -1;
		else
			a2m_mcounts_link(c, e->names->tier, e->names->session, &e->link);
	}
	if (!rc && k != n)
		rc = -1;  /* the ids table's count is off: leave the groups alone */
	if (rc) {
		size_t j = 0;
		EACH_ENTRY(s, e)
			if (j < k)
				e->link = saved[j++];
		a2m_mcounts_free(c);
		free(saved);
		return -1;
	}
	free(saved);
	a2m_mcounts_free(s->counts);
	s->counts = c;
	return 0;
}

int a2m_mem_repair(a2m_store *base, const a2m_check_options *o, unsigned areas)
{
	mstore *s = (mstore *)base;
	if (s->in_tx)
		return a2m_store_fail(base, "repair: a transaction is open");
	if ((areas & (1u << A2M_CHECK_SEQS))) {
		int64_t hi = 0;
		EACH_ENTRY(s, e)
			if (e->seq > hi)
				hi = e->seq;
		if (s->next_seq <= hi)
			s->next_seq = hi + 1;
		a2m_check_say(o, A2M_CHECK_SEQS, 0, "the next seq set past the highest");
	}
	if ((areas & (1u << A2M_CHECK_COUNTS))) {
		if (repair_counts(s) != 0)
			return a2m_store_fail(base, "repair counts: out of memory");
		a2m_check_say(o, A2M_CHECK_COUNTS, 0, "counted again from the records");
	}
	if ((areas & (1u << A2M_CHECK_VECTORS))) {
		a2m_vindex_clear(s->vectors);
		a2m_record r;
		EACH_ENTRY(s, e) {
			a2m_mem_entry_view(e, &r);
			a2m_vindex_put(s->vectors, &r);
		}
		a2m_check_say(o, A2M_CHECK_VECTORS, 0, "the vector rows rebuilt from the records");
	}
	if ((areas & (1u << A2M_CHECK_INDEX)) && s->ix) {
		int rc = base->ops->index_attach(base, o->ix ? o->ix : s->ix);
		if (rc)
			return rc;
		a2m_check_say(o, A2M_CHECK_INDEX, 0, "rebuilt from the records");
	}
	return 0;
}
