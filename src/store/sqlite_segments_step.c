/*
** sqlite_segments_step.c — merging big levels of the SQLite term index a
** slice per commit (see sqlite_segments.h, "merges in steps").
**
** Why: a whole merge reads, merges and writes every input in one commit.
** At 2M records the first level-4 merge moved ~80 MB and stalled one
** remember for 1.65 s; the next level, near 16M, would stall for several
** seconds. A merge in steps writes a bounded amount per commit instead, as
** FTS5's incremental merges do:
**
**   - it is begun by writing its row in a2m_segmerge: the inputs (a whole
**     level, a contiguous run in age), the tombstone floor, and the output
**     segment's number, the newest input's plus one (free: new segments
**     are numbered from a multiple of A2M_SEG_GAP, sqlite_segments.c);
**   - each commit then merges the terms after the row's cursor, up to a
**     budget of bytes read, appends the output's blocks under its number,
**     the hashes of their terms as one row of a2m_seghashes (the output's
**     term filter is built from them at the end), and moves the cursor;
**   - the last step makes the output live (its a2m_segdir row, its filter
**     built from the hashes) and takes the inputs' directory rows out, in
**     one commit; their rows go to a2m_segdrop, deleted a budget at a time
**     by later commits.
**
** Until that last step the inputs stay live and the output is invisible
** (no directory row), so a read sees either every input or the output,
** never part of both; every step is inside the records' transaction, so a
** kill at any point leaves the merge at its last committed step, resumed by
** the next writer (any process: the state is all in the file).
*/
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/sqlite_segments.h"

/* The tables, created with the index or, in an older file, on first write. */
#define STEP_TABLES \
	"CREATE TABLE IF NOT EXISTS a2m_segmerge(out INTEGER PRIMARY KEY," \
	" level INTEGER NOT NULL, inputs BLOB NOT NULL, floor INTEGER NOT NULL," \
	" cursor TEXT, entries INTEGER NOT NULL, maxseq INTEGER NOT NULL," \
	" parts INTEGER NOT NULL);" \
	"CREATE TABLE IF NOT EXISTS a2m_seghashes(out INTEGER NOT NULL, part INTEGER NOT NULL," \
	" data BLOB NOT NULL, PRIMARY KEY(out, part)) WITHOUT ROWID;" \
	"CREATE TABLE IF NOT EXISTS a2m_segdrop(seg INTEGER PRIMARY KEY);"

/* One merge under way, as its a2m_segmerge row holds it. */
typedef struct step_merge {
	int64_t  out, floor, entries, maxseq, parts;
	int      level;
	int64_t *inputs;
	size_t   ninputs;
	char    *cursor;  /* the last term merged; NULL: none yet */
	size_t   clen;
} step_merge;

struct a2m_seg_steps {
	sqlite3       *db;
	sqlite3_stmt  *list, *begin, *rows, *add, *hashes_add, *update, *hashes, *end_hashes,
		      *end_merge, *drop_add, *drop_next, *drop_rows, *drop_done, *taken;
	step_merge    *m;
	size_t         n, cap;
	a2m_seg_input  in[A2M_SEG_MAX_LISTS];
};

static int fail(a2m_seg_steps *t, a2m_store *base, const char *op)
{
	return a2m_store_fail(base, "index merge %s: %s", op, sqlite3_errmsg(t->db));
}

static void reset(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

static void merges_free(a2m_seg_steps *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->m[i].inputs);
		free(t->m[i].cursor);
	}
	t->n = 0;
}

int a2m_seg_steps_open(sqlite3 *db, a2m_store *base, a2m_seg_steps **out)
{
	static const struct {
		size_t      at;
		const char *sql;
	} stmts[] = {
		{offsetof(a2m_seg_steps, list), "SELECT out, level, inputs, floor, cursor, entries,"
		 " maxseq, parts FROM a2m_segmerge ORDER BY level"},
		{offsetof(a2m_seg_steps, begin), "INSERT INTO a2m_segmerge(out, level, inputs, floor,"
		 " cursor, entries, maxseq, parts) VALUES(?1, ?2, ?3, ?4, NULL, 0, 0, 0)"},
		/* From the block that holds the cursor on; ?2 '' (no term is empty): all. */
		{offsetof(a2m_seg_steps, rows), "SELECT data FROM a2m_segments WHERE seg = ?1 AND"
		 " term >= coalesce((SELECT term FROM a2m_segments WHERE seg = ?1 AND term <= ?2"
		 " ORDER BY term DESC LIMIT 1), ?2) ORDER BY term"},
		{offsetof(a2m_seg_steps, add),
		 "INSERT INTO a2m_segments(seg, term, data) VALUES(?1, ?2, ?3)"},
		{offsetof(a2m_seg_steps, hashes_add),
		 "INSERT INTO a2m_seghashes(out, part, data) VALUES(?1, ?2, ?3)"},
		{offsetof(a2m_seg_steps, update), "UPDATE a2m_segmerge SET cursor = ?2, entries = ?3,"
		 " maxseq = ?4, parts = ?5 WHERE out = ?1"},
		{offsetof(a2m_seg_steps, hashes),
		 "SELECT data FROM a2m_seghashes WHERE out = ?1 ORDER BY part"},
		{offsetof(a2m_seg_steps, end_hashes), "DELETE FROM a2m_seghashes WHERE out = ?1"},
		{offsetof(a2m_seg_steps, end_merge), "DELETE FROM a2m_segmerge WHERE out = ?1"},
		{offsetof(a2m_seg_steps, drop_add), "INSERT INTO a2m_segdrop(seg) VALUES(?1)"},
		{offsetof(a2m_seg_steps, drop_next), "SELECT seg FROM a2m_segdrop ORDER BY seg LIMIT 1"},
		{offsetof(a2m_seg_steps, drop_rows), "DELETE FROM a2m_segments WHERE seg = ?1 AND term"
		 " IN (SELECT term FROM a2m_segments WHERE seg = ?1 ORDER BY term LIMIT ?2)"},
		{offsetof(a2m_seg_steps, drop_done), "DELETE FROM a2m_segdrop WHERE seg = ?1"},
		/* Whether a number is free for an output: no row, no directory row, no merge. */
		{offsetof(a2m_seg_steps, taken), "SELECT EXISTS(SELECT 1 FROM a2m_segments WHERE"
		 " seg = ?1) OR EXISTS(SELECT 1 FROM a2m_segdir WHERE seg = ?1) OR EXISTS(SELECT 1"
		 " FROM a2m_segmerge WHERE out = ?1) OR EXISTS(SELECT 1 FROM a2m_segdrop WHERE seg = ?1)"},
	};
	*out = NULL;
	if (sqlite3_exec(db, STEP_TABLES, NULL, NULL, NULL) != SQLITE_OK)
		return a2m_store_fail(base, "index merge: %s", sqlite3_errmsg(db));
	a2m_seg_steps *t = calloc(1, sizeof *t);
	if (!t)
		return a2m_store_fail(base, "index merge: out of memory");
	t->db = db;
	for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
		sqlite3_stmt **st = (sqlite3_stmt **)((char *)t + stmts[i].at);
		if (sqlite3_prepare_v3(db, stmts[i].sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL)
		    != SQLITE_OK) {
			int rc = fail(t, base, "prepare");
			a2m_seg_steps_close(t);
			return rc;
		}
	}
	*out = t;
	return 0;
}

void a2m_seg_steps_close(a2m_seg_steps *t)
{
	if (!t)
		return;
	sqlite3_stmt *all[] = {t->list, t->begin, t->rows, t->add, t->hashes_add, t->update,
			       t->hashes, t->end_hashes, t->end_merge, t->drop_add, t->drop_next,
			       t->drop_rows, t->drop_done, t->taken};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		sqlite3_finalize(all[i]);
	merges_free(t);
	free(t->m);
	free(t);
}

/* ---- the merges under way ---- */

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Takes one a2m_segmerge row into t->m. */
static int merge_row(a2m_seg_steps *t, a2m_store *base)
{
	sqlite3_stmt *st = t->list;
	if (a2m_seg_grow(&t->m, &t->cap, t->n + 1, sizeof *t->m) != 0)
		return a2m_store_fail(base, "index merge: out of memory");
	step_merge *m = &t->m[t->n];
	memset(m, 0, sizeof *m);
	m->out = sqlite3_column_int64(st, 0);
	m->level = sqlite3_column_int(st, 1);
	const unsigned char *in = sqlite3_column_blob(st, 2);
	size_t nin = (size_t)sqlite3_column_bytes(st, 2);
	m->floor = sqlite3_column_int64(st, 3);
	const unsigned char *c = sqlite3_column_text(st, 4);
	m->clen = (size_t)sqlite3_column_bytes(st, 4);
	m->entries = sqlite3_column_int64(st, 5);
	m->maxseq = sqlite3_column_int64(st, 6);
	m->parts = sqlite3_column_int64(st, 7);
	if (!in || nin % 8 || nin / 8 < 2 || nin / 8 > A2M_SEG_MAX_LISTS || m->level < 0 ||
	    m->level >= A2M_SEG_MAX_LISTS)
		return a2m_store_fail(base, "index merge: a corrupt merge row (%lld)",
				      (long long)m->out);
	t->n++;  /* owned from here: freed with the others */
	m->ninputs = nin / 8;
	if (!(m->inputs = malloc(nin)) || (c && !(m->cursor = malloc(m->clen + 1))))
		return a2m_store_fail(base, "index merge: out of memory");
	for (size_t i = 0; i < m->ninputs; i++)
		m->inputs[i] = (int64_t)get64(in + 8 * i);
	if (c)
		memcpy(m->cursor, c, m->clen + 1);
	return 0;
}

int a2m_seg_steps_load(a2m_seg_steps *t, a2m_store *base)
{
	merges_free(t);
	int rc = 0;
	for (;;) {
		int step = sqlite3_step(t->list);
		if (step == SQLITE_DONE)
			break;
		if (step != SQLITE_ROW || (rc = merge_row(t, base))) {
			rc = rc ? rc : fail(t, base, "list");
			break;
		}
	}
	reset(t->list);
	return rc;
}

int a2m_seg_steps_busy(const a2m_seg_steps *t, int level)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->m[i].level == level)
			return 1;
	return 0;
}

int a2m_seg_steps_is_input(const a2m_seg_steps *t, int64_t seg)
{
	for (size_t i = 0; i < t->n; i++)
		for (size_t j = 0; j < t->m[i].ninputs; j++)
			if (t->m[i].inputs[j] == seg)
				return 1;
	return 0;
}

int a2m_seg_steps_begin(a2m_seg_steps *t, a2m_store *base, const int64_t *segs, size_t n,
			int level, int64_t floor)
{
	if (n < 2 || n > A2M_SEG_MAX_LISTS)
		return 1;
	int64_t out = segs[n - 1] + 1;
	int taken = 1;
	/* A file numbered before the gaps may hold the next number: merge it whole. */
	if (sqlite3_bind_int64(t->taken, 1, out) != SQLITE_OK ||
	    sqlite3_step(t->taken) != SQLITE_ROW) {
		reset(t->taken);
		return fail(t, base, "begin");
	}
	taken = sqlite3_column_int(t->taken, 0);
	reset(t->taken);
	if (taken || out % A2M_SEG_GAP == 0)
		return 1;
	unsigned char blob[8 * A2M_SEG_MAX_LISTS];
	for (size_t i = 0; i < n; i++)
		put64(blob + 8 * i, (uint64_t)segs[i]);
	sqlite3_stmt *st = t->begin;
	int ok = sqlite3_bind_int64(st, 1, out) == SQLITE_OK &&
		sqlite3_bind_int(st, 2, level) == SQLITE_OK &&
		sqlite3_bind_blob(st, 3, blob, (int)(8 * n), SQLITE_STATIC) == SQLITE_OK &&
		sqlite3_bind_int64(st, 4, floor) == SQLITE_OK && sqlite3_step(st) == SQLITE_DONE;
	reset(st);
	if (!ok)
		return fail(t, base, "begin");
	return a2m_seg_steps_load(t, base);
}

/* ---- one step of one merge ---- */

/* The term of row r of in (its bytes and length). */
static const unsigned char *row_term(const a2m_seg_input *in, size_t r, size_t *len)
{
	*len = in->rows[4 * r + 1];
	return in->bytes.p + in->rows[4 * r];
}

/* Compares in's row r's term with the n bytes at term. */
static int row_cmp(const a2m_seg_input *in, size_t r, const void *term, size_t n)
{
	size_t len;
	const unsigned char *p = row_term(in, r, &len);
	return a2m_seg_cmp_terms(p, len, term, n);
}

/*
** Reads input seg's blocks from the one holding m's cursor on, into in,
** until it holds at least want bytes and a term after the cursor, or the
** segment ends (*done set).
*/
static int read_input(a2m_seg_steps *t, a2m_store *base, const step_merge *m, int64_t seg,
		      size_t want, a2m_seg_input *in, int *done)
{
	sqlite3_stmt *st = t->rows;
	int rc = 0;
	*done = 0;
	if (sqlite3_bind_int64(st, 1, seg) != SQLITE_OK ||
	    sqlite3_bind_text64(st, 2, m->cursor ? m->cursor : "", m->cursor ? m->clen : 0,
				SQLITE_STATIC, SQLITE_UTF8) != SQLITE_OK)
		rc = fail(t, base, "read");
	while (!rc) {
		int step = sqlite3_step(st);
		if (step == SQLITE_DONE) {
			*done = 1;
			break;
		}
		if (step != SQLITE_ROW) {
			rc = fail(t, base, "read");
			break;
		}
		const void *data = sqlite3_column_blob(st, 0);
		size_t n = (size_t)sqlite3_column_bytes(st, 0);
		int got = n && !data ? -1 : a2m_seg_input_add(in, data, n);
		if (got)
			rc = a2m_store_fail(base, got == -2 ? "index merge: a corrupt segment"
							    : "index merge: out of memory");
		else if (in->bytes.n >= want && in->n &&
			 (!m->cursor || row_cmp(in, in->n - 1, m->cursor, m->clen) > 0))
			break;
	}
	reset(st);
	return rc;
}

/* Keeps of in's rows those after the cursor (lo) and not after last (hi). */
static void trim(a2m_seg_input *in, const step_merge *m, const unsigned char *last,
		 size_t lastlen)
{
	size_t lo = 0, hi = in->n;
	while (m->cursor && lo < hi && row_cmp(in, lo, m->cursor, m->clen) <= 0)
		lo++;
	while (last && hi > lo && row_cmp(in, hi - 1, last, lastlen) > 0)
		hi--;
	if (lo)
		memmove(in->rows, in->rows + 4 * lo, 4 * (hi - lo) * sizeof *in->rows);
	in->n = hi - lo;
	in->at = 0;
}

/* Writes out's blocks as rows of segment seg, and its terms' hashes as part. */
static int write_step(a2m_seg_steps *t, a2m_store *base, const step_merge *m,
		      const a2m_seg_build *out)
{
	const unsigned char *p = out->done.p, *end = p + out->done.n, *first, *block;
	size_t flen, blen;
	int got, rc = 0;
	while (!rc && (got = a2m_seg_next_in_block(&p, end, &first, &flen, &block, &blen)) == 1) {
		sqlite3_stmt *st = t->add;
		int ok = sqlite3_bind_int64(st, 1, m->out) == SQLITE_OK &&
			sqlite3_bind_text64(st, 2, (const char *)first, flen, SQLITE_STATIC,
					    SQLITE_UTF8) == SQLITE_OK &&
			sqlite3_bind_blob64(st, 3, block, blen, SQLITE_STATIC) == SQLITE_OK &&
			sqlite3_step(st) == SQLITE_DONE;
		reset(st);
		if (!ok)
			rc = fail(t, base, "write");
	}
	if (!rc && got < 0)
		rc = a2m_store_fail(base, "index merge: a corrupt block");
	if (rc || !out->nhashes)
		return rc;
	unsigned char *h = malloc(8 * out->nhashes);
	if (!h)
		return a2m_store_fail(base, "index merge: out of memory");
	for (size_t i = 0; i < out->nhashes; i++)
		put64(h + 8 * i, out->hashes[i]);
	sqlite3_stmt *st = t->hashes_add;
	int ok = sqlite3_bind_int64(st, 1, m->out) == SQLITE_OK &&
		sqlite3_bind_int64(st, 2, m->parts) == SQLITE_OK &&
		sqlite3_bind_blob64(st, 3, h, 8 * out->nhashes, SQLITE_STATIC) == SQLITE_OK &&
		sqlite3_step(st) == SQLITE_DONE;
	reset(st);
	free(h);
	return ok ? 0 : fail(t, base, "write");
}

/* Saves m's cursor and figures in its row. */
static int save(a2m_seg_steps *t, a2m_store *base, const step_merge *m)
{
	sqlite3_stmt *st = t->update;
	int ok = sqlite3_bind_int64(st, 1, m->out) == SQLITE_OK &&
		(m->cursor ? sqlite3_bind_text64(st, 2, m->cursor, m->clen, SQLITE_STATIC,
						 SQLITE_UTF8)
			   : sqlite3_bind_null(st, 2)) == SQLITE_OK &&
		sqlite3_bind_int64(st, 3, m->entries) == SQLITE_OK &&
		sqlite3_bind_int64(st, 4, m->maxseq) == SQLITE_OK &&
		sqlite3_bind_int64(st, 5, m->parts) == SQLITE_OK && sqlite3_step(st) == SQLITE_DONE;
	reset(st);
	return ok ? 0 : fail(t, base, "save");
}

/* Runs st (bound to seg by the caller's arg) to its end. */
static int run_seg(a2m_seg_steps *t, a2m_store *base, sqlite3_stmt *st, int64_t seg,
		   const char *op)
{
	int ok = sqlite3_bind_int64(st, 1, seg) == SQLITE_OK && sqlite3_step(st) == SQLITE_DONE;
	reset(st);
	return ok ? 0 : fail(t, base, op);
}

/* The last step: the output made live by done, the inputs given to a2m_segdrop. */
static int finish(a2m_seg_steps *t, a2m_store *base, const step_merge *m,
		  a2m_seg_done_fn done, void *ctx)
{
	uint64_t *hashes = NULL;
	size_t nh = 0, cap = 0;
	int rc = 0;
	if (sqlite3_bind_int64(t->hashes, 1, m->out) != SQLITE_OK)
		rc = fail(t, base, "finish");
	while (!rc) {
		int step = sqlite3_step(t->hashes);
		if (step == SQLITE_DONE)
			break;
		if (step != SQLITE_ROW) {
			rc = fail(t, base, "finish");
			break;
		}
		const unsigned char *p = sqlite3_column_blob(t->hashes, 0);
		size_t n = (size_t)sqlite3_column_bytes(t->hashes, 0) / 8;
		if (n && (!p || a2m_seg_grow(&hashes, &cap, nh + n, sizeof *hashes) != 0)) {
			rc = a2m_store_fail(base, "index merge: out of memory");
			break;
		}
		for (size_t i = 0; i < n; i++)
			hashes[nh++] = get64(p + 8 * i);
	}
	reset(t->hashes);
	a2m_seg_done d = {m->out, m->level + 1, m->entries, m->maxseq, hashes, nh,
			  m->inputs, m->ninputs};
	if (!rc)
		rc = done(&d, ctx);
	free(hashes);
	for (size_t i = 0; !rc && i < m->ninputs; i++) {
		sqlite3_stmt *st = t->drop_add;
		int ok = sqlite3_bind_int64(st, 1, m->inputs[i]) == SQLITE_OK &&
			sqlite3_step(st) == SQLITE_DONE;
		reset(st);
		if (!ok)
			rc = fail(t, base, "finish");
	}
	if (!rc)
		rc = run_seg(t, base, t->end_hashes, m->out, "finish");
	if (!rc)
		rc = run_seg(t, base, t->end_merge, m->out, "finish");
	return rc;
}

/*
** One step of m: up to budget bytes of its inputs read and merged. *used
** gets the bytes read; *finished whether this was the last step.
*/
static int step(a2m_seg_steps *t, a2m_store *base, step_merge *m, size_t budget,
		a2m_seg_done_fn done, void *ctx, size_t *used, int *finished)
{
	a2m_seg_input *in = t->in;
	a2m_seg_build out = {0};
	size_t n = m->ninputs, want = budget / n;
	int ended[A2M_SEG_MAX_LISTS];
	int rc = 0;
	*used = 0;
	*finished = 0;
	memset(in, 0, n * sizeof *in);
	for (size_t i = 0; !rc && i < n; i++) {
		in[i].seg = m->inputs[i];
		rc = read_input(t, base, m, m->inputs[i], want, &in[i], &ended[i]);
		*used += in[i].bytes.n;
	}
	/* The least of the last terms read from inputs not read to their end:
	** every input holds all its terms up to that one. */
	const unsigned char *last = NULL;
	size_t lastlen = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		if (ended[i] || !in[i].n)
			continue;
		size_t len;
		const unsigned char *p = row_term(&in[i], in[i].n - 1, &len);
		if (!last || a2m_seg_cmp_terms(p, len, last, lastlen) < 0) {
			last = p;
			lastlen = len;
		}
	}
	char *next = NULL;
	if (!rc && last && !(next = malloc(lastlen + 1)))
		rc = a2m_store_fail(base, "index merge: out of memory");
	if (next) {
		memcpy(next, last, lastlen);
		next[lastlen] = 0;
	}
	for (size_t i = 0; !rc && i < n; i++)
		trim(&in[i], m, (const unsigned char *)next, lastlen);
	int64_t entries = 0;
	if (!rc) {
		int got = a2m_seg_merge_inputs(in, n, m->floor, &out, &entries);
		if (got)
			rc = a2m_store_fail(base, got == -2 ? "index merge: a corrupt segment"
							    : "index merge: out of memory");
	}
	if (!rc)
		rc = write_step(t, base, m, &out);
	if (!rc) {
		m->entries += entries;
		if (entries && out.maxseq > m->maxseq)
			m->maxseq = out.maxseq;
		if (out.nhashes)
			m->parts++;
		free(m->cursor);
		m->cursor = next;
		m->clen = lastlen;
		next = NULL;
		if (m->cursor)
			rc = save(t, base, m);
		else {
			*finished = 1;
			rc = finish(t, base, m, done, ctx);
		}
	}
	free(next);
	a2m_seg_build_free(&out);
	for (size_t i = 0; i < n; i++)
		a2m_seg_input_free(&in[i]);
	return rc;
}

int a2m_seg_steps_run(a2m_seg_steps *t, a2m_store *base, size_t budget,
		      a2m_seg_done_fn done, void *ctx, int *changed)
{
	int rc = 0;
	*changed = 0;
	/* The lowest level first: its merges are the shortest, and fill the next. */
	for (size_t i = 0; !rc && i < t->n && budget; i++) {
		int finished = 0;
		while (!rc && !finished && budget) {
			size_t used = 0;
			rc = step(t, base, &t->m[i], budget, done, ctx, &used, &finished);
			budget = used >= budget ? 0 : budget - used;
		}
		*changed |= finished;
	}
	if (!rc && *changed)
		rc = a2m_seg_steps_load(t, base);
	return rc;
}

int a2m_seg_steps_drop(a2m_seg_steps *t, a2m_store *base, int64_t rows)
{
	int rc = 0;
	while (!rc && rows > 0) {
		int step = sqlite3_step(t->drop_next);
		int64_t seg = step == SQLITE_ROW ? sqlite3_column_int64(t->drop_next, 0) : 0;
		reset(t->drop_next);
		if (step == SQLITE_DONE)
			break;
		if (step != SQLITE_ROW)
			return fail(t, base, "drop");
		sqlite3_stmt *st = t->drop_rows;
		int ok = sqlite3_bind_int64(st, 1, seg) == SQLITE_OK &&
			sqlite3_bind_int64(st, 2, rows) == SQLITE_OK && sqlite3_step(st) == SQLITE_DONE;
		int64_t gone = ok ? sqlite3_changes64(t->db) : 0;
		reset(st);
		if (!ok)
			return fail(t, base, "drop");
		if (gone < rows)
			rc = run_seg(t, base, t->drop_done, seg, "drop");
		rows -= gone ? gone : 1;
	}
	return rc;
}
