/*
** postgres_check.h — what the PostgreSQL engine's three check files share,
** for them only: postgres_check.c (the ops, the areas' table, the core
** areas), postgres_check_index.c (the term index) and
** postgres_check_extend.c (the extensions' data: history, expiry,
** fingerprints).
**
** A check runs inside one REPEATABLE READ, READ ONLY transaction on the
** main connection; a repair inside a write transaction of its own per
** area (the deployment's write lock held). Both read through the helpers
** below, which report a failed read as a finding of the area.
*/
#ifndef A2M_POSTGRES_CHECK_H
#define A2M_POSTGRES_CHECK_H

#include "store/postgres_internal.h"
#include "store/store_check.h"

/* Findings of one area reported one by one before the rest are only counted. */
#define PG_CHECK_EXAMPLES 8

typedef struct pgcheck {
	pgstore                 *s;
	const a2m_check_options *o;
	int64_t                  records;  /* in the snapshot (the file area reads it) */
} pgcheck;

/*
** Runs fixed SQL on the main connection (text results). A failure is a
** finding of area ("cannot read what"); NULL then. The caller clears.
*/
PGresult   *a2m_pg_check_query(pgcheck *k, a2m_check_area area, const char *sql,
			       const char *what);

/* A text cell as a number (NULL: 0). */
int64_t     a2m_pg_check_num(pgcheck *k, const PGresult *r, int row, int col);

/*
** Declares cursor name for sql (the caller's transaction), then each call
** of a2m_pg_check_fetch brings its next page, in binary (bytea as its
** bytes, numbers big-endian) or text; an empty page is the end. NULL
** after a finding of area. The caller clears each page.
*/
int         a2m_pg_check_declare(pgcheck *k, a2m_check_area area, const char *name,
				 const char *sql, const char *what);
PGresult   *a2m_pg_check_fetch(pgcheck *k, a2m_check_area area, const char *name, int binary,
				const char *what);

/* A text cell quoted for a message into out (size bytes); "(none)" for NULL. */
const char *a2m_pg_check_quoted(pgcheck *k, const PGresult *r, int row, int col, char *out,
				size_t size);

/* ---- postgres_check_index.c: the term index ------------------------------------ */

/* Inside the check's snapshot, with an analyser (o->ix): findings and summary. */
void a2m_pg_check_index(pgcheck *k);

/* ---- postgres_check_extend.c: the extensions' areas ---------------------------- */

/* Inside the check's snapshot: each reports its findings and its summary. */
void a2m_pg_check_history(pgcheck *k);
void a2m_pg_check_expiry(pgcheck *k);
void a2m_pg_check_dedup(pgcheck *k);

/*
** Inside the repair's write transaction: the revisions no reader may see
** deleted; the fingerprints set to their contents'. Return 0, or a code
** with errmsg set (the transaction is rolled back by the caller).
*/
int  a2m_pg_repair_history(pgcheck *k);
int  a2m_pg_repair_dedup(pgcheck *k);

#endif
