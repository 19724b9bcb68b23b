/*
** sqlite_check_index.c — the consistency check of the SQLite term index
** (sqlite_check.h): does it hold exactly the postings the records' text
** yields under the analyser it claims?
**
** The live segments are read as one merge, term by term in the order the
** rows are kept: a cursor per segment steps its rows (blocks of terms) in
** term order, the smallest current term is taken from every segment that
** has it, oldest first, and their lists are merged newest-wins with the
** tombstones dropped (a2m_seg_merge_lists): exactly what a reader sees of
** that term (sqlite_segments.c, a2m_segments_term). Memory stays one block
** per segment, whatever the size of the index. On the way each segment is
** checked as a reader relies on it: a row's key is its block's first
** term, terms ascend, lists decode with ascending seqs, the entries add up
** to what the directory says, and the term filter admits every term it
** holds (a filter that rules out a term it has hides its postings from
** every read). The merged postings then go to store_check.c's comparison,
** against the records analysed one by one.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/bloom.h"
#include "store/sqlite_check.h"
#include "store/sqlite_index.h"
#include "store/sqlite_segments.h"
#include "store/store_check.h"
#include "util/hash.h"

/* Problems reported one by one before the rest are only counted. */
#define MAX_EXAMPLES 8

/* One live segment, read in term order. */
typedef struct cursor {
	int64_t        seg;
	int64_t        level, entries;   /* as the directory says */
	int64_t        seen;             /* entries read, tombstones included */
	int64_t        maxseq;           /* the directory's (-1: not known) */
	int64_t        top;              /* the highest seq of a posting read */
	unsigned char *bloom;            /* the directory's filter (a copy); NULL: none */
	size_t         nbloom;
	sqlite3_stmt  *rows;
	const unsigned char *p, *end;    /* the rest of the current block */
	const unsigned char *rowterm;    /* the current row's key, until its first term is read */
	size_t         rowlen;
	const unsigned char *term, *list;
	size_t         tlen, lsize;
	a2m_seg_bytes  prev;             /* the term before (a copy: rows go) */
	int            have_prev;
	int            done;             /* read to its end, or given up on */
} cursor;

typedef struct walk {
	sqlite3                 *db;
	a2m_store               *base;
	const a2m_check_options *o;
	a2m_check_terms         *terms;
	size_t                   problems;
	a2m_check_meter          meter;
	int                      oom;  /* a skip table could not be checked */
	int                      layout;  /* a2m_sqlite_index_version_ok's */
} walk;

static void problem(walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(walk *w, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	if (w->problems++ >= MAX_EXAMPLES)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	a2m_check_say(w->o, A2M_CHECK_INDEX, 1, "%s", msg);
}

static int db_failed(walk *w, const char *what)
{
	a2m_store_fail(w->base, "index %s: %s", what, sqlite3_errmsg(w->db));
	a2m_check_say(w->o, A2M_CHECK_INDEX, 1, "cannot read the index (%s): %s", what,
		      sqlite3_errmsg(w->db));
	w->problems++;
	return A2M_INTERNAL_ERROR;
}

/* One row (sqlite3_exec callback style) of a fixed query: its integer columns. */
int a2m_sqlite_check_ints(sqlite3 *db, const char *sql, int64_t *out, int n)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (int i = 0; i < n; i++)
			out[i] = sqlite3_column_int64(st, i);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_NOTFOUND;
	}
	sqlite3_finalize(st);
	return rc;
}

/* ---- the analyser, the tables, the figures -------------------------------- */

/* 1 when the index was built for ix, 0 when not (reported), < 0 on error. */
static int version_ok(walk *w)
{
	char *want = a2m_sqlite_index_version(w->o->ix);
	sqlite3_stmt *st = NULL;
	int ok = -1;
	if (!want) {
		a2m_store_fail(w->base, "index check: out of memory");
		return A2M_INTERNAL_ERROR;
	}
	if (sqlite3_prepare_v2(w->db, "SELECT value FROM a2m_meta WHERE name = 'index'", -1, &st,
			       NULL) != SQLITE_OK) {
		ok = db_failed(w, "a2m_meta");
		goto out;
	}
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		const char *have = (const char *)sqlite3_column_text(st, 0);
		/* The layout before the tail is as good (every record indexed). */
		w->layout = a2m_sqlite_index_version_ok(w->o->ix, have);
		ok = w->layout != 0;
		if (!ok)
			problem(w, "built for \"%s\", not this server's \"%s\" (the next read-write "
				"open rebuilds it)", have ? have : "", want);
	} else if (step == SQLITE_DONE) {
		ok = 0;
		problem(w, "marked stale: written without an analyser (the next read-write open "
			"rebuilds it)");
	} else {
		ok = db_failed(w, "a2m_meta");
	}
out:
	sqlite3_finalize(st);
	free(want);
	return ok;
}

/* 1 when the three tables are there, 0 when not (reported). */
static int tables_ok(walk *w)
{
	int64_t n = 0;
	if (a2m_sqlite_check_ints(w->db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND"
		       " name IN ('a2m_segments', 'a2m_segdir', 'a2m_index_stats')", &n, 1)
	    != SQLITE_OK)
		return db_failed(w, "sqlite_master");
	if (n != 3)
		problem(w, "its tables are missing (the next read-write open builds them)");
	return n == 3;
}

/*
** a2m_segments as its layout has it: postings/7 a rowid table whose key
** (seg, term) is the unique index a2m_segments_key (without it every read
** scans the table, and nothing keeps a key once); an older layout a
** WITHOUT ROWID table, which the next read-write open moves over.
*/
static void table_shape(walk *w)
{
	int64_t n[2] = {0, 0};
	if (a2m_sqlite_check_ints(w->db, "SELECT"
		       " (SELECT count(*) FROM pragma_index_list('a2m_segments') WHERE origin = 'pk'),"
		       " (SELECT count(*) FROM pragma_index_list('a2m_segments') AS l"
		       "   WHERE l.name = 'a2m_segments_key' AND l.\"unique\" AND"
		       "   (SELECT group_concat(name, ',') FROM (SELECT name FROM"
		       "    pragma_index_info(l.name) ORDER BY seqno)) = 'seg,term')", n, 2)
	    != SQLITE_OK) {
		db_failed(w, "sqlite_master");
		return;
	}
	if (n[0] && w->layout == 1)
		problem(w, "a2m_segments is a WITHOUT ROWID table, not the rowid table postings/7"
			" names (readable; --repair rebuilds it)");
	else if (!n[0] && n[1] != 1)
		problem(w, "a2m_segments has no unique index a2m_segments_key on (seg, term)"
			" (--repair rebuilds it)");
}

/* The kept figures against those of the records. */
static void figures(walk *w, const a2m_index_stats *want)
{
	int64_t got[3] = {0, 0, 0}, rows = 0;
	if (a2m_sqlite_check_ints(w->db, "SELECT count(*) FROM a2m_index_stats", &rows, 1) != SQLITE_OK ||
	    (rows == 1 && a2m_sqlite_check_ints(w->db, "SELECT docs, total_len, unindexed FROM a2m_index_stats",
				     got, 3) != SQLITE_OK)) {
		db_failed(w, "a2m_index_stats");
		return;
	}
	if (rows != 1) {
		problem(w, "a2m_index_stats has %lld rows, not one", (long long)rows);
		return;
	}
	if (got[0] != want->docs || got[1] != want->total_len || got[2] != want->unindexed)
		problem(w, "kept figures: %lld documents, %lld terms in all, %lld without a term;"
			" the records make %lld, %lld, %lld", (long long)got[0], (long long)got[1],
			(long long)got[2], (long long)want->docs, (long long)want->total_len,
			(long long)want->unindexed);
}

/*
** The index's mark (sqlite_index_tail.c): every record up to it is in the
** tables, none above it (the tail, which readers analyse as they go).
** Without the row (a file from before the tail), every record.
*/
#define SQL_MARK \
	"SELECT ifnull((SELECT CAST(value AS INTEGER) FROM a2m_meta WHERE name = 'indexed')," \
	" (SELECT ifnull(max(seq), 0) FROM records))"

/* Every record up to the mark analysed, into the expected side. */
static int expect_records(walk *w, int64_t mark, a2m_index_stats *stats, int64_t *records)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	int64_t total = 0;
	memset(stats, 0, sizeof *stats);
	*records = 0;
	if (w->o->progress && a2m_sqlite_check_ints(w->db, "SELECT count(*) FROM records", &total, 1) != SQLITE_OK)
		return db_failed(w, "records");
	a2m_check_meter_start(&w->meter, w->o, A2M_CHECK_INDEX, "records analysed", total);
	if (sqlite3_prepare_v2(w->db, "SELECT seq, content FROM records WHERE seq <= ?1", -1, &st,
			       NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, mark) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_failed(w, "records");
	}
	for (;;) {
		int step = sqlite3_step(st);
		if (step == SQLITE_DONE)
			break;
		if (step != SQLITE_ROW) {
			rc = db_failed(w, "records");
			break;
		}
		const char *content = (const char *)sqlite3_column_text(st, 1);
		if (a2m_check_terms_expect(w->terms, w->o->ix, sqlite3_column_int64(st, 0), content,
					   stats) != 0) {
			rc = a2m_store_fail(w->base, "index check: out of memory");
			break;
		}
		a2m_check_meter_at(&w->meter, ++*records);
	}
	sqlite3_finalize(st);
	if (!rc)
		a2m_check_meter_end(&w->meter, *records);
	return rc;
}

/* ---- the segments ------------------------------------------------------- */

static void cursors_free(cursor *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		sqlite3_finalize(c[i].rows);
		free(c[i].bloom);
		free(c[i].prev.p);
	}
	free(c);
}

/* The directory, oldest first, each segment with its row statement. */
static int open_cursors(walk *w, cursor **out, size_t *n)
{
	sqlite3_stmt *st = NULL;
	cursor *c = NULL;
	size_t cap = 0;
	int rc = 0;
	*out = NULL;
	*n = 0;
	/* maxseq, a later column, when the file has it (else none is known). */
	if (sqlite3_prepare_v2(w->db, "SELECT seg, level, entries, bloom, maxseq FROM a2m_segdir"
			       " ORDER BY seg", -1, &st, NULL) != SQLITE_OK &&
	    sqlite3_prepare_v2(w->db, "SELECT seg, level, entries, bloom, NULL FROM a2m_segdir"
			       " ORDER BY seg", -1, &st, NULL) != SQLITE_OK)
		return db_failed(w, "a2m_segdir");
	for (;;) {
		int step = sqlite3_step(st);
		if (step == SQLITE_DONE)
			break;
		if (step != SQLITE_ROW) {
			rc = db_failed(w, "a2m_segdir");
			break;
		}
		if (a2m_seg_grow(&c, &cap, *n + 1, sizeof *c) != 0) {
			rc = a2m_store_fail(w->base, "index check: out of memory");
			break;
		}
		cursor *k = &c[(*n)++];
		memset(k, 0, sizeof *k);
		k->seg = sqlite3_column_int64(st, 0);
		k->level = sqlite3_column_int64(st, 1);
		k->entries = sqlite3_column_int64(st, 2);
		k->maxseq = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1
								    : sqlite3_column_int64(st, 4);
		const void *b = sqlite3_column_blob(st, 3);
		size_t nb = (size_t)sqlite3_column_bytes(st, 3);
		if (b && nb) {
			if (!(k->bloom = malloc(nb))) {
				rc = a2m_store_fail(w->base, "index check: out of memory");
				break;
			}
			memcpy(k->bloom, b, nb);
			k->nbloom = nb;
		}
		if (sqlite3_prepare_v2(w->db, "SELECT term, data FROM a2m_segments WHERE seg = ?1"
				       " ORDER BY term", -1, &k->rows, NULL) != SQLITE_OK ||
		    sqlite3_bind_int64(k->rows, 1, k->seg) != SQLITE_OK) {
			rc = db_failed(w, "a2m_segments");
			break;
		}
		if (k->level < 0 || k->level >= A2M_SEG_MAX_LISTS)
			problem(w, "segment %lld is at level %lld", (long long)k->seg,
				(long long)k->level);
	}
	sqlite3_finalize(st);
	*out = c;
	return rc;
}

/*
** Moves k to its next term, stepping to its next row when a block ends.
** Returns 0 (k->done set at the end or after a corrupt block, reported),
** or a negative code when SQLite fails.
*/
static int advance(walk *w, cursor *k)
{
	for (;;) {
		if (k->p && k->p < k->end) {
			const unsigned char *t, *l;
			size_t tlen, lsize;
			int got = a2m_seg_next_in_block(&k->p, k->end, &t, &tlen, &l, &lsize);
			if (got < 0) {
				problem(w, "segment %lld: a block that cannot be read", (long long)k->seg);
				k->done = 1;
				return 0;
			}
			if (k->rowterm) {
				if (a2m_seg_cmp_terms(k->rowterm, k->rowlen, t, tlen) != 0) {
					char q[A2M_CHECK_QUOTED];
					problem(w, "segment %lld: the row keyed %s does not begin with its key",
						(long long)k->seg,
						a2m_check_quote((const char *)k->rowterm, k->rowlen, q, sizeof q));
				}
				k->rowterm = NULL;
			}
			if (k->have_prev && a2m_seg_cmp_terms(k->prev.p, k->prev.n, t, tlen) >= 0) {
				char q[A2M_CHECK_QUOTED];
				problem(w, "segment %lld: term %s is out of order", (long long)k->seg,
					a2m_check_quote((const char *)t, tlen, q, sizeof q));
			}
			k->prev.n = 0;
			if (a2m_seg_reserve(&k->prev, tlen ? tlen : 1) != 0)
				return a2m_store_fail(w->base, "index check: out of memory");
			memcpy(k->prev.p, t, tlen);
			k->prev.n = tlen;
			k->have_prev = 1;
			k->term = t;
			k->tlen = tlen;
			k->list = l;
			k->lsize = lsize;
			return 0;
		}
		int step = sqlite3_step(k->rows);
		if (step == SQLITE_DONE) {
			k->done = 1;
			return 0;
		}
		if (step != SQLITE_ROW)
			return db_failed(w, "a2m_segments");
		k->p = sqlite3_column_blob(k->rows, 1);
		k->end = k->p + sqlite3_column_bytes(k->rows, 1);
		k->rowterm = sqlite3_column_text(k->rows, 0);
		k->rowlen = (size_t)sqlite3_column_bytes(k->rows, 0);
		if (!k->p || k->p == k->end) {
			problem(w, "segment %lld: an empty row", (long long)k->seg);
			k->p = NULL;
		}
	}
}

/*
** Checks the current term of k as a reader relies on it: its filter admits
** it, its list decodes with ascending seqs. Counts its entries.
*/
static void check_term(walk *w, cursor *k)
{
	a2m_seg_list l;
	a2m_seg_entry e;
	int got;
	int64_t prev = 0;
	if (k->bloom && !a2m_bloom_maybe(k->bloom, k->nbloom, a2m_hash_bytes(k->term, k->tlen))) {
		char q[A2M_CHECK_QUOTED];
		problem(w, "segment %lld: its term filter rules out %s, which it holds (reads miss "
			"its postings)", (long long)k->seg,
			a2m_check_quote((const char *)k->term, k->tlen, q, sizeof q));
	}
	/* A skip table (sqlite_segments_skip.c) must be the entries' own: a
	** bound too tight would make a recall pass over records it should score. */
	int skip = a2m_seg_skip_verify(k->list, k->lsize);
	if (skip == -1) {
		char q[A2M_CHECK_QUOTED];
		problem(w, "segment %lld: the skip table of %s does not match its postings",
			(long long)k->seg, a2m_check_quote((const char *)k->term, k->tlen, q, sizeof q));
	} else if (skip == -2) {
		w->oom = 1;
	}
	a2m_seg_list_init(&l, k->list, k->lsize);
	while ((got = a2m_seg_list_next(&l, &e)) == 1) {
		if (e.seq <= prev) {
			got = -1;
			break;
		}
		prev = e.seq;
		k->seen++;
		if (!e.deleted && e.seq > k->top)
			k->top = e.seq;
	}
	if (got < 0) {
		char q[A2M_CHECK_QUOTED];
		problem(w, "segment %lld: the list of %s cannot be read", (long long)k->seg,
			a2m_check_quote((const char *)k->term, k->tlen, q, sizeof q));
	}
}

typedef struct emitting {
	walk                *w;
	const unsigned char *term;
	size_t               len;
	int                  oom;
} emitting;

static int emit_posting(const a2m_seg_entry *e, void *ctx)
{
	emitting *em = ctx;
	if (a2m_check_terms_add(em->w->terms, A2M_TERMS_FOUND, (const char *)em->term, em->len,
				e->seq, e->tf, e->dl) != 0) {
		em->oom = 1;
		return -1;
	}
	return 0;
}

/* The merge of every segment, term by term, into the found side. */
static int merge_segments(walk *w, cursor *c, size_t n)
{
	int rc = 0;
	int64_t total = 0, read = 0, terms = 0;
	for (size_t i = 0; i < n; i++)
		total += c[i].entries;
	a2m_check_meter_start(&w->meter, w->o, A2M_CHECK_INDEX, "postings read", total);
	for (size_t i = 0; i < n && !rc; i++)
		rc = advance(w, &c[i]);
	while (!rc) {
		/* The entries read so far, summed every 64 terms. */
		if ((++terms & 63) == 0) {
			read = 0;
			for (size_t i = 0; i < n; i++)
				read += c[i].seen;
			a2m_check_meter_at(&w->meter, read);
		}
		const cursor *min = NULL;
		for (size_t i = 0; i < n; i++)
			if (!c[i].done && (!min || a2m_seg_cmp_terms(c[i].term, c[i].tlen, min->term,
								     min->tlen) < 0))
				min = &c[i];
		if (!min)
			break;
		a2m_seg_list lists[A2M_SEG_MAX_LISTS];
		cursor *at[A2M_SEG_MAX_LISTS];
		size_t k = 0;
		for (size_t i = 0; i < n && k < A2M_SEG_MAX_LISTS; i++)
			if (!c[i].done && a2m_seg_cmp_terms(c[i].term, c[i].tlen, min->term,
							    min->tlen) == 0) {
				check_term(w, &c[i]);
				a2m_seg_list_init(&lists[k], c[i].list, c[i].lsize);
				at[k++] = &c[i];
			}
		emitting em = {w, min->term, min->tlen, 0};
		int corrupt = 0;
		a2m_seg_merge_lists(lists, k, 0, emit_posting, NULL, &em, &corrupt);
		if (em.oom || w->oom)
			return a2m_store_fail(w->base, "index check: out of memory");
		for (size_t i = 0; i < k && !rc; i++)
			rc = advance(w, at[i]);
	}
	read = 0;
	for (size_t i = 0; i < n; i++)
		read += c[i].seen;
	if (!rc)
		a2m_check_meter_end(&w->meter, read);
	for (size_t i = 0; i < n; i++) {
		if (c[i].seen != c[i].entries)
			problem(w, "segment %lld: the directory says %lld entries, its rows hold %lld",
				(long long)c[i].seg, (long long)c[i].entries, (long long)c[i].seen);
		/* Below the truth, it would let a merge drop a tombstone still needed. */
		if (c[i].maxseq >= 0 && c[i].top > c[i].maxseq)
			problem(w, "segment %lld: holds a posting of seq %lld, above its maxseq %lld",
				(long long)c[i].seg, (long long)c[i].top, (long long)c[i].maxseq);
	}
	return rc;
}

/*
** Rows of segments the directory does not list, but the outputs of merges
** in steps under way and retired inputs not yet deleted
** (sqlite_segments_step.c): a write that went half way. A merge's output
** listed as live is one too.
*/
static void orphans(walk *w)
{
	int64_t n = 0, steps = 0;
	if (a2m_sqlite_check_ints(w->db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND"
		       " name IN ('a2m_segmerge', 'a2m_segdrop')", &steps, 1) != SQLITE_OK) {
		db_failed(w, "sqlite_master");
		return;
	}
	if (a2m_sqlite_check_ints(w->db, steps == 2
			      ? "SELECT count(DISTINCT seg) FROM a2m_segments WHERE seg NOT IN"
				" (SELECT seg FROM a2m_segdir UNION ALL SELECT out FROM a2m_segmerge"
				" UNION ALL SELECT seg FROM a2m_segdrop)"
			      : "SELECT count(DISTINCT seg) FROM a2m_segments"
				" WHERE seg NOT IN (SELECT seg FROM a2m_segdir)", &n, 1) != SQLITE_OK)
		db_failed(w, "a2m_segments");
	else if (n)
		problem(w, "rows of %lld segment%s the directory does not list", (long long)n,
			n == 1 ? "" : "s");
	if (steps == 2 && a2m_sqlite_check_ints(w->db, "SELECT count(*) FROM a2m_segdir WHERE seg IN"
				     " (SELECT out FROM a2m_segmerge UNION ALL SELECT seg FROM"
				     " a2m_segdrop)", &n, 1) != SQLITE_OK)
		db_failed(w, "a2m_segmerge");
	else if (steps == 2 && n)
		problem(w, "%lld live segment%s listed as a merge's output or as retired",
			(long long)n, n == 1 ? "" : "s");
}

int a2m_sqlite_check_index(sqlite3 *db, a2m_store *base, const a2m_check_options *o)
{
	walk w;
	memset(&w, 0, sizeof w);
	w.db = db;
	w.base = base;
	w.o = o;
	cursor *c = NULL;
	size_t n = 0;
	int64_t records = 0;
	int64_t mark = 0, tail = 0, above = 0;
	a2m_index_stats want;
	int rc = tables_ok(&w);
	if (rc <= 0)
		return rc;
	if ((rc = version_ok(&w)) <= 0)
		return rc;
	table_shape(&w);
	if (a2m_sqlite_check_ints(db, SQL_MARK, &mark, 1) != SQLITE_OK)
		return db_failed(&w, "a2m_meta");
	if (!(w.terms = a2m_check_terms_new()))
		return a2m_store_fail(base, "index check: out of memory");
	if (!(rc = expect_records(&w, mark, &want, &records)))
		rc = open_cursors(&w, &c, &n);
	/* A segment never holds a posting above the mark: readers add the
	** tail's to the segments', and would count such a posting twice. */
	for (size_t i = 0; !rc && i < n; i++)
		above += c[i].maxseq > mark;
	if (above)
		problem(&w, "%lld segment%s hold%s postings above the index's mark %lld",
			(long long)above, above == 1 ? "" : "s", above == 1 ? "s" : "",
			(long long)mark);
	if (!rc && n > A2M_SEG_MAX_LISTS)
		problem(&w, "%zu live segments; a read takes at most %d", n, A2M_SEG_MAX_LISTS);
	else if (!rc)
		rc = merge_segments(&w, c, n);
	if (!rc) {
		orphans(&w);
		figures(&w, &want);
		a2m_check_terms_result r;
		a2m_check_terms_compare(w.terms, o, w.problems < MAX_EXAMPLES ? MAX_EXAMPLES - w.problems
									       : 0, &r);
		if (r.differing) {
			w.problems += r.differing;
			a2m_check_say(o, A2M_CHECK_INDEX, 1, "%zu term%s whose postings differ from the "
				      "records' text (%lld postings expected, %lld found)", r.differing,
				      r.differing == 1 ? "" : "s", (long long)r.postings_expected,
				      (long long)r.postings_found);
		} else if (w.problems > MAX_EXAMPLES) {
			a2m_check_say(o, A2M_CHECK_INDEX, 1, "%zu problems in all", w.problems);
		} else if (!w.problems) {
			sqlite3_stmt *st = NULL;
			if (sqlite3_prepare_v2(db, "SELECT count(*) FROM records WHERE seq > ?1", -1,
					       &st, NULL) == SQLITE_OK &&
			    sqlite3_bind_int64(st, 1, mark) == SQLITE_OK &&
			    sqlite3_step(st) == SQLITE_ROW)
				tail = sqlite3_column_int64(st, 0);
			sqlite3_finalize(st);
			a2m_check_say(o, A2M_CHECK_INDEX, 0, "%lld records, %zu terms, %lld postings in "
				      "%zu segment%s, as the records' text yields; %lld more in the "
				      "tail, read from the records", (long long)records, r.terms_found,
				      (long long)r.postings_found, n, n == 1 ? "" : "s",
				      (long long)tail);
		}
	}
	cursors_free(c, n);
	a2m_check_terms_free(w.terms);
	return rc;
}
