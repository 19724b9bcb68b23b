/*
** stack.h — memory policy above the store: how a write is placed, what a
** recall selects and in which order, what a forget removes.
**
** The stack decides; the store (store/store.h) only keeps bytes, and the
** scorer (rank/scorer.h) only judges relevance. Nothing here speaks SQL or
** JSON-RPC. Every operation that writes runs in one store transaction and
** returns only after it committed, so what the caller acknowledges is durable.
*/
#ifndef A2M_STACK_H
#define A2M_STACK_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "rank/scorer.h"
#include "store/store.h"
#include "util/error.h"

typedef struct a2m_stack_config {
	double   half_life_ms; /* recency half-life for ranking; default 1 day */
	unsigned fields;       /* enum a2m_where_field: record fields `where` sees */
} a2m_stack_config;

typedef struct a2m_stack {
	a2m_store       *store;   /* owned */
	a2m_scorer      *scorer;  /* owned */
	a2m_stack_config cfg;
} a2m_stack;

/* What a read or a forget selects: an exact part the store applies itself,
** then `where` applied here. */
typedef struct a2m_selection {
	a2m_query     q;
	const json_t *where;   /* borrowed; NULL = no filter */
} a2m_selection;

/* One recalled record with its score. */
typedef struct a2m_hit {
	a2m_record *rec;       /* owned by the hit array */
	double      score;     /* in [0,1] */
} a2m_hit;

/*
** Creates a stack over store and scorer, taking ownership of both (also on
** failure). Returns NULL when memory runs out.
*/
a2m_stack *a2m_stack_new(a2m_store *store, a2m_scorer *scorer,
			 const a2m_stack_config *cfg);

/* Closes the store, frees the scorer and the stack. NULL is a no-op. */
void a2m_stack_free(a2m_stack *st);

/*
** Writes n records atomically: all of them or none. A record whose id is
** NULL gets a new id; a record whose id already exists (in the store, or
** earlier in this batch) is not written again, which makes client ids
** idempotent (spec §3.2). Every record gets the same created_at. On return
** each recs[i]->id holds the id to report. Returns 0, or a negative code with
** err filled (nothing was written).
*/
int a2m_stack_remember(a2m_stack *st, a2m_record **recs, size_t n, a2m_error *err);

/*
** Ranks what sel selects against query (NULL or "" ranks by recency) and
** returns at most limit hits by descending score in *out (free with
** a2m_hits_free). Hits scoring below min_score are dropped. Returns 0 or a
** negative code with err filled.
*/
int a2m_stack_recall(a2m_stack *st, const a2m_selection *sel, const char *query,
		     double min_score, size_t limit, a2m_hit **out, size_t *n,
		     a2m_error *err);

/*
** Returns what sel selects in creation order, oldest first; when limit is
** not 0, only the newest limit records (still oldest first). Free *out with
** a2m_record_array_free. Returns 0 or a negative code with err filled.
*/
int a2m_stack_timeline(a2m_stack *st, const a2m_selection *sel, size_t limit,
		       a2m_record ***out, size_t *n, a2m_error *err);

/*
** Deletes, in one transaction, the records selected by every given selector
** together: the ids (when ids is not NULL), sel, and query (when not NULL:
** only records the scorer judges relevant; an abstaining scorer selects
** nothing). *forgotten = how many were removed. Returns 0 or a negative code
** with err filled (nothing was removed).
*/
int a2m_stack_forget(a2m_stack *st, const a2m_selection *sel,
		     const char *const *ids, size_t n_ids, const char *query,
		     int64_t *forgotten, a2m_error *err);

/* Frees n hits and the array. */
void a2m_hits_free(a2m_hit *hits, size_t n);

#endif
