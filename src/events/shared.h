/*
** shared.h — an event log kept in the store, for every server of a
** deployment (spec §4.12–4.13 over store.h's events_append / events_read):
** the log behind a2m_event_log_new_shared (events.h), and push of what
** other servers appended.
**
** Appends are buffered per write and put into the write's own transaction
** by a2m_event_shared_write, just before its commit (the stack's
** a2m_stack_log_in_transaction), so a batched remember of 500 records is
** one append, not 500, and one commit with the records, not two.
** a2m_event_shared_flush writes what a caller buffered outside a write, in
** a transaction of its own. Reading and
** cursors follow events.c's rules exactly: the same cursor text (with the
** deployment's salt), reset for a foreign or expired cursor, kinds and
** scope applied per event, `more` beyond the limit.
*/
#ifndef A2M_EVENTS_SHARED_H
#define A2M_EVENTS_SHARED_H

#include <jansson.h>

#include "events/event_log.h"
#include "store/store.h"
#include "util/error.h"

/* A log in store retaining at most capacity events. NULL when memory runs out. */
a2m_event_shared *a2m_event_shared_new(a2m_store *store, size_t capacity);
void a2m_event_shared_free(a2m_event_shared *sh);

/*
** Buffers c's event until the flush. Returns 0, or -1 when memory runs
** out (then a2m_event_shared_gap).
*/
int  a2m_event_shared_add(a2m_event_shared *sh, const a2m_change *c);

/* An event could not be kept: logged once per flush. */
void a2m_event_shared_gap(a2m_event_shared *sh);

/*
** Appends what is buffered, in one transaction (none may be open), and
** forgets it. Returns 0, or the store's code with its message logged: the
** changes it describes are committed already, so their events are lost,
** and said so on stderr.
*/
int  a2m_event_shared_flush(a2m_event_shared *sh);

/*
** Appends what is buffered into the write transaction open on the store,
** to commit with the changes it describes, and forgets it. Returns 0, or
** the store's code (its errmsg set): the caller rolls the write back.
*/
int  a2m_event_shared_write(a2m_event_shared *sh);

/* events.h's a2m_event_log_read over the store. */
int  a2m_event_shared_read(a2m_event_shared *sh, const char *cursor, size_t limit,
			   const json_t *kinds, const a2m_scope *scope, json_t **result,
			   a2m_error *err);

/* *head = the newest event's seq now (0 before the first). Returns 0 or fails. */
int  a2m_event_shared_head(a2m_event_shared *sh, uint64_t *head);

/*
** Calls emit(view, ctx) for every event after *after that scope and kinds
** may see, oldest first, moving *after past every event examined; emit
** takes the view's reference. Returns 0 or the store's code.
*/
int  a2m_event_shared_since(a2m_event_shared *sh, uint64_t *after, const a2m_scope *scope,
			    const json_t *kinds, void (*emit)(json_t *view, void *ctx), void *ctx);

#endif
