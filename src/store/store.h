/*
** store.h — the storage seam: what a storage engine must do for the layers
** above it, and nothing about why.
**
** A store holds records and answers simple, exact selections (by id, by key,
** by tier/owner/session/key prefix, in creation order). It never decides
** policy: placement, spilling, scoping rules, ranking and the meaning of
** `where` all live above it (stack/, rank/). Two engines implement it:
** memory.c and sqlite.c; every behavioural test runs against both.
**
** Conventions for every function pointer below:
**   - return 0 on success, a negative enum a2m_code on failure (usually
**     A2M_INTERNAL_ERROR), with a message in store->errmsg;
**   - a record passed in is borrowed; a record handed out through `out` is
**     owned by the caller (free with a2m_record_free());
**   - a record passed to a visit callback is borrowed for that call only.
**   - writes between begin() and commit() are one transaction; rollback()
**     undoes every write since begin(). A write outside a transaction
**     commits on its own. begin() inside a transaction and commit() without
**     one are errors. A failed commit() leaves nothing written (the engine
**     rolls back), so the outcome is always all or nothing.
**   - an id or (owner, key) that would collide on insert or update is
**     refused with A2M_INVALID_PARAMS and changes nothing.
**   - a visit callback may write; records it inserts are not visited by the
**     scan in progress, and no record is visited twice.
**   - a store is used by one thread at a time (the handle's mutex sees to it).
*/
#ifndef A2M_STORE_H
#define A2M_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "store/record.h"

typedef struct a2m_store a2m_store;

/*
** An exact selection. Zero-initialise, then set what narrows it; every field
** left zero/NULL selects everything.
*/
typedef struct a2m_query {
	const char *tier;       /* only records in this tier */
	int         by_owner;   /* nonzero: only records whose owner equals owner */
	const char *owner;      /*   (NULL then means: records with no owner) */
	int         by_session; /* nonzero: only records whose session equals session */
	const char *session;    /*   (NULL then means: records with no session) */
	const char *key_prefix; /* only records whose key starts with this string */
	const char *group;      /* only records in this group */
	int         descending; /* scan newest first; default oldest first */
} a2m_query;

/*
** Called for each selected record in (created_at, seq) order. Return 0 to
** continue, a positive value to stop the scan early (scan then returns 0),
** or a negative code to abort it (scan returns that code).
*/
typedef int (*a2m_record_visit)(const a2m_record *rec, void *ctx);

typedef struct a2m_store_ops {
	const char *engine;   /* "memory", "sqlite" */

	int  (*begin)(a2m_store *s);
	int  (*commit)(a2m_store *s);
	void (*rollback)(a2m_store *s);

	/* *out = the record with this id, or NULL when there is none. */
	int  (*get)(a2m_store *s, const char *id, a2m_record **out);
	/* *out = the record at (owner, key), or NULL. owner NULL = no owner. */
	int  (*get_by_key)(a2m_store *s, const char *owner, const char *key,
			   a2m_record **out);
	/*
	** Inserts rec (id must be new; the caller checks). Assigns rec->seq.
	** Returns A2M_INVALID_PARAMS if the id already exists.
	*/
	int  (*insert)(a2m_store *s, a2m_record *rec);
	/* Replaces every field of the record with rec->id (seq is kept). */
	int  (*update)(a2m_store *s, const a2m_record *rec);
	/* Deletes the record with this id; *removed = 1 if it existed, else 0. */
	int  (*remove)(a2m_store *s, const char *id, int *removed);
	/* Visits every record selected by q in (created_at, seq) order. */
	int  (*scan)(a2m_store *s, const a2m_query *q, a2m_record_visit visit,
		     void *ctx);
	/* *out = how many records q selects. */
	int  (*count)(a2m_store *s, const a2m_query *q, int64_t *out);
	/* Rolls back any open transaction, closes and frees the store. */
	void (*close)(a2m_store *s);
} a2m_store_ops;

/* The part every engine's own struct starts with. */
struct a2m_store {
	const a2m_store_ops *ops;
	char errmsg[256];     /* the last failure, for humans */
};

/*
** Opens an empty in-memory store. Returns 0 and sets *out, or a negative code
** with a message in err (errlen bytes).
*/
int a2m_store_memory_open(a2m_store **out, char *err, size_t errlen);

/*
** Opens or creates the SQLite store at path (WAL, foreign keys, a schema
** version table; migrates an older schema forward). synchronous_full selects
** PRAGMA synchronous=FULL (1) or NORMAL (0). Returns 0 and sets *out, or a
** negative code with a message in err.
*/
int a2m_store_sqlite_open(const char *path, int synchronous_full,
			  a2m_store **out, char *err, size_t errlen);

/* Sets s->errmsg from a printf-style format. Returns A2M_INTERNAL_ERROR. */
int a2m_store_fail(a2m_store *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* True when rec matches the exact selection q (both engines share this). */
int a2m_query_matches(const a2m_query *q, const a2m_record *rec);

#endif
