/*
** sqlite_check.h — the SQLite engine's consistency check and repair
** (store.h, check and repair), for the engine's files only.
**
** sqlite_check.c holds the two ops and every area but the term index:
** the file itself (PRAGMA integrity_check, the schema version), the kept
** counts (a2m_counts against the records), the seqs and their mark, the
** stored vectors, and the procedural mirror. sqlite_check_index.c walks
** the index's segments as a reader merges them and compares the result
** with what the records' text yields; sqlite_check_extend.c the
** extensions' data (history, expiry, fingerprints).
*/
#ifndef A2M_SQLITE_CHECK_H
#define A2M_SQLITE_CHECK_H

#include <sqlite3.h>

#include "store/store.h"

/* The ops of the ops table (store.h says what each does). */
int a2m_sqlite_check(a2m_store *base, const a2m_check_options *o);
int a2m_sqlite_repair(a2m_store *base, const a2m_check_options *o, unsigned areas);

/*
** Checks the term index of db against its records with o->ix, inside the
** caller's read transaction: the analyser it was built with, every live
** segment's structure (blocks, term order, lists, entry counts, term
** filters, orphan rows), the postings a reader would see against those
** the records' text yields, and the kept figures (a2m_index_stats).
** Reports through o (A2M_CHECK_INDEX). Returns 0, or a negative code with
** base->errmsg set when the tables could not be read at all (reported too).
*/
int a2m_sqlite_check_index(sqlite3 *db, a2m_store *base, const a2m_check_options *o);

/*
** Runs a query of one row of integers on db into out[0..n). Returns
** SQLITE_OK, SQLITE_NOTFOUND when there is no row, or SQLite's code.
*/
int a2m_sqlite_check_ints(sqlite3 *db, const char *sql, int64_t *out, int n);

/*
** Checks the extensions' data of db inside the caller's read transaction:
** the revision history, the expiry times and their index, the
** fingerprints and theirs (A2M_CHECK_HISTORY, _EXPIRY, _DEDUP;
** sqlite_check_extend.c says what each rule is).
*/
void a2m_sqlite_check_extensions(sqlite3 *db, a2m_store *base, const a2m_check_options *o);

/*
** Repairs one of those areas inside the caller's write transaction.
** Returns 0, or a code with base->errmsg set.
*/
int a2m_sqlite_repair_extension(a2m_store *base, const a2m_check_options *o, a2m_check_area area);

#endif
