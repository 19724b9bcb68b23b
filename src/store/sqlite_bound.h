/*
** sqlite_bound.h — the SQLite engine's bound on salience (store.h,
** salience_bound; sqlite_bound.c), for the engine's files only: the op,
** and what opening, closing, the writes and the transaction's end call.
*/
#ifndef A2M_SQLITE_BOUND_H
#define A2M_SQLITE_BOUND_H

#include "store/sqlite_internal.h"

/*
** Prepares the row's statements after the schema is in place; a read-only
** open of a file that has no row (below step 13) keeps none and answers
** "unknown". Returns 0, or A2M_INTERNAL_ERROR with errmsg set.
*/
int a2m_sqlite_bound_open(sqlstore *s);

/* Finalizes the row's statements (at close). */
void a2m_sqlite_bound_free(sqlstore *s);

/*
** Inside the write transaction of a write that gives a record this
** salience: raises the row to it when it is above. Reads the row first
** unless what the connection holds was read at the version the
** transaction began at. Returns 0, or A2M_INTERNAL_ERROR with errmsg set
** (the caller's write fails).
*/
int a2m_sqlite_bound_raise(sqlstore *s, double salience);

/* After a rollback or a failed commit: what s holds may be above the row. */
void a2m_sqlite_bound_forget(sqlstore *s);

/*
** After this connection's commit, with v the data version after it (known:
** it could be read): what s held at the version the transaction began at
** (what it raised included) is the row at v; else it is forgotten.
*/
void a2m_sqlite_bound_committed(sqlstore *s, int known, unsigned v);

/* The op (store.h), on the thread's connection. */
int a2m_sqlite_salience_bound(a2m_store *base, double *max);

#endif
