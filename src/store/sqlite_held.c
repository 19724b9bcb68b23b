/*
** sqlite_held.c — the SQLite engine's inserts, held back and written
** several rows per statement.
**
** Why: a batched remember is one transaction of hundreds of inserts, and
** SQLite's work per statement (set-up, halt, cursors) is paid once for
** many rows: a batched record cost 100.3 k instructions inside a2m_handle
** with one INSERT each, 85.0 k with 20 rows per INSERT (callgrind, 30 000
** records; docs/BENCHMARKS.md).
**
** How: an insert (sqlite.c) does everything else it does at once (checks,
** analysis, seq, postings, counts, vectors, mirror note) and hands its row
** here, copied, since the caller may free its record as soon as insert
** returns. The held rows are written by one statement of HELD_ROWS rows
** when the next row finds the buffer full, and the rest before anything
** else runs on the connection: every op of the ops table but insert (and
** begin, begin_relaxed, rollback, close, read_begin, read_end, which run
** no statement while rows are held) calls
** a2m_sqlite_held_flush() first, as does the COMMIT path before it writes
** the postings, counts and seq mark; get only when a held row has its id
** (a2m_sqlite_held_has_id: for any other id the table answers the same).
** So every read of the transaction sees its own inserts, and the triggers
** of update and remove find the rows.
**
** A UNIQUE constraint (id, or (owner, key)) then fails at the flush, in
** whatever op flushed, and the rows stay held: each later op, and the
** commit, tries them again and fails the same way (at the latest on a row
** the failed statement did write), until rollback() drops them. So the
** transaction can only be rolled back, and nothing of it lands. Outside a
** transaction, the insert's own BEGIN ... COMMIT flushes its one row before
** the COMMIT (sqlite.c, write_close).
**
** INSERT OR FAIL, not the default ABORT: a statement of several rows that
** may abort half way must be able to undo its first rows, so SQLite keeps a
** statement journal of the pages it changes, and past 64 KiB spills it to a
** temporary file: 3.5 times the pwrite calls of a batched remember (strace,
** 30 000 records), and more system time. FAIL stops at the refused row and
** keeps the rows before it, which the paragraph above makes harmless.
**
** The statements are built at run time from fixed fragments only (the
** column list and a row of 19 placeholders), one per row count, each
** prepared at its first use and kept.
*/
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_internal.h"

/*
** Rows one statement writes. Instructions per batched record (callgrind,
** 10 000 records): 10 rows 86.1 k, 16 85.2 k, 20 84.9 k, 32 84.6 k, 50
** 84.3 k, one 98.8 k; and 20 leaves no rest in a call of 500 or 1 000.
** 19 parameters a row stays far under the oldest SQLITE_MAX_VARIABLE_NUMBER,
** 999.
*/
#define HELD_ROWS 20
#define HELD_PARAMS 21
/*
** A row's buffer is kept for the next row up to this size; a bigger one
** (a long content) is freed once written, so a few large records do not
** pin HELD_ROWS times their size for the connection's life.
*/
#define HELD_KEEP_BYTES ((size_t)64 << 10)
_Static_assert(HELD_ROWS * HELD_PARAMS <= 999, "too many parameters per statement");

/* Column order: ?1..?20 as a2m_sqlite_bind_record() binds them, then the seq. */
#define SQL_HELD_INSERT \
	"INSERT OR FAIL INTO records(id, content, created_at, role, metadata, grp, tier," \
	" salience, accessed_at, access_count, owner, session, key, revision," \
	" embedding, uri, media_type, gen_embedding, expires_at, fp, seq) VALUES"
#define SQL_HELD_ROW "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"

/* One held row: rec's strings and vectors point into buf (owned, kept for reuse). */
typedef struct held_row {
	a2m_record rec;
	unsigned char *buf;
	size_t      cap;
} held_row;

struct a2m_sqlite_held {
	held_row      rows[HELD_ROWS];
	size_t        n;                  /* rows held, rows[0..n) */
	sqlite3_stmt *insert[HELD_ROWS];  /* insert[k]: k + 1 rows; NULL until first used */
};

/* The text fields a row copies, as pointers into the record (dst) and the source. */
#define TEXT_FIELDS 11
static void text_fields(a2m_record *r, const a2m_record *src, char **dst[TEXT_FIELDS],
			const char *from[TEXT_FIELDS])
{
	char **d[TEXT_FIELDS] = {&r->id, &r->content, &r->role, &r->metadata, &r->group,
				 &r->tier, &r->owner, &r->session, &r->key, &r->uri,
				 &r->media_type};
	const char *f[TEXT_FIELDS] = {src->id, src->content, src->role, src->metadata,
				      src->group, src->tier, src->owner, src->session,
				      src->key, src->uri, src->media_type};
	memcpy(dst, d, sizeof d);
	memcpy(from, f, sizeof f);
}

/*
** Copies src into row r, in one buffer: the doubles first (malloc's
** alignment), then the floats, then the strings. Returns 0, or -1 when
** memory runs out (r then holds nothing that matters).
*/
static int copy_row(held_row *r, const a2m_record *src, int64_t seq)
{
	char **dst[TEXT_FIELDS];
	const char *from[TEXT_FIELDS];
	size_t len[TEXT_FIELDS];
	size_t vec = src->embedding && src->dims ? src->dims * sizeof(double) : 0;
	size_t gen = src->gen_embedding && src->gen_dims ? src->gen_dims * sizeof(float) : 0;
	size_t need = vec + gen;
	text_fields(&r->rec, src, dst, from);
	for (int i = 0; i < TEXT_FIELDS; i++) {
		len[i] = from[i] ? strlen(from[i]) + 1 : 0;
		need += len[i];
	}
	if (need > r->cap) {
		free(r->buf);  /* not realloc: the old bytes need no copy */
		r->cap = 0;
		if (!(r->buf = malloc(need)))
			return -1;
		r->cap = need;
	}
	unsigned char *p = r->buf;
	r->rec = *src;  /* the numbers; every pointer is set below */
	r->rec.seq = seq;
	r->rec.embedding = vec ? memcpy(p, src->embedding, vec) : NULL;
	p += vec;
	r->rec.gen_embedding = gen ? memcpy(p, src->gen_embedding, gen) : NULL;
	p += gen;
	for (int i = 0; i < TEXT_FIELDS; i++) {
		*dst[i] = len[i] ? memcpy(p, from[i], len[i]) : NULL;
		p += len[i];
	}
	return 0;
}

/* The statement of k + 1 rows, prepared at its first use. NULL on failure. */
static sqlite3_stmt *statement(sqlstore *s, size_t k)
{
	a2m_sqlite_held *h = s->held;
	char sql[sizeof SQL_HELD_INSERT + HELD_ROWS * sizeof SQL_HELD_ROW];
	if (h->insert[k])
		return h->insert[k];
	size_t used = sizeof SQL_HELD_INSERT - 1;
	memcpy(sql, SQL_HELD_INSERT, used);
	for (size_t i = 0; i <= k; i++) {
		if (i)
			sql[used++] = ',';
		memcpy(sql + used, SQL_HELD_ROW, sizeof SQL_HELD_ROW - 1);
		used += sizeof SQL_HELD_ROW - 1;
	}
	sql[used] = '\0';
	if (sqlite3_prepare_v3(s->db, sql, (int)used, SQLITE_PREPARE_PERSISTENT,
			       &h->insert[k], NULL) != SQLITE_OK) {
		a2m_sqlite_db_fail(s, "insert");
		return NULL;
	}
	return h->insert[k];
}

/* Forgets the held rows, freeing the buffers grown past HELD_KEEP_BYTES. */
static void forget_rows(a2m_sqlite_held *h)
{
	for (size_t i = 0; i < h->n; i++) {
		if (h->rows[i].cap > HELD_KEEP_BYTES) {
			free(h->rows[i].buf);
			h->rows[i].buf = NULL;
			h->rows[i].cap = 0;
		}
	}
	h->n = 0;
}

int a2m_sqlite_held_flush(sqlstore *s)
{
	a2m_sqlite_held *h = s->held;
	if (!h || !h->n)
		return 0;
	/* An error that ended the transaction must not let the rows commit alone. */
	if (sqlite3_get_autocommit(s->db))
		return a2m_store_fail(&s->base, "insert: the transaction ended before its "
				      "rows were written");
	sqlite3_stmt *st = statement(s, h->n - 1);
	if (!st)
		return A2M_INTERNAL_ERROR;
	int rc = 0;
	for (size_t i = 0; i < h->n && !rc; i++) {
		int at = (int)i * HELD_PARAMS;
		if (a2m_sqlite_bind_record(st, at, &h->rows[i].rec) != SQLITE_OK ||
		    sqlite3_bind_int64(st, at + HELD_PARAMS, h->rows[i].rec.seq) != SQLITE_OK)
			rc = a2m_sqlite_db_fail(s, "insert");
	}
	int step = rc ? SQLITE_OK : sqlite3_step(st);
	if (!rc && (step & 0xff) == SQLITE_CONSTRAINT && step != SQLITE_CONSTRAINT_COMMITHOOK) {
		/* A duplicate id or (owner, key), as from memory.c. */
		a2m_sqlite_db_fail(s, "insert");
		rc = A2M_INVALID_PARAMS;
	} else if (!rc && step != SQLITE_DONE) {
		rc = a2m_sqlite_db_fail(s, "insert");
	}
	a2m_sqlite_done(st);  /* unbinds the rows before any buffer is freed */
	if (!rc)
		forget_rows(h);
	return rc;
}

int a2m_sqlite_held_put(sqlstore *s, const a2m_record *rec, int64_t seq)
{
	if (!s->held && !(s->held = calloc(1, sizeof *s->held)))
		return a2m_store_fail(&s->base, "insert: out of memory");
	a2m_sqlite_held *h = s->held;
	if (h->n == HELD_ROWS) {
		int rc = a2m_sqlite_held_flush(s);
		if (rc)
			return rc;
	}
	if (copy_row(&h->rows[h->n], rec, seq) != 0)
		return a2m_store_fail(&s->base, "insert: out of memory");
	h->n++;
	return 0;
}

int a2m_sqlite_held_has_id(const sqlstore *s, const char *id)
{
	const a2m_sqlite_held *h = s->held;
	for (size_t i = 0; h && id && i < h->n; i++)
		if (h->rows[i].rec.id && strcmp(h->rows[i].rec.id, id) == 0)
			return 1;
	return 0;
}

void a2m_sqlite_held_drop(sqlstore *s)
{
	if (s->held)
		forget_rows(s->held);
}

void a2m_sqlite_held_free(sqlstore *s)
{
	a2m_sqlite_held *h = s->held;
	if (!h)
		return;
	for (size_t i = 0; i < HELD_ROWS; i++) {
		free(h->rows[i].buf);
		sqlite3_finalize(h->insert[i]);
	}
	free(h);
	s->held = NULL;
}
