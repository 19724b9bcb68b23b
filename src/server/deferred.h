/*
** deferred.h — a network call whose wait for durability is taken apart
** from it (server/handle.c), for a transport that answers other requests
** on the same thread meanwhile (transport/http.c suspends the connection).
**
** With group commit (store/sqlite_sync.c) a write is answered only once a
** sync of the log covers it. a2m_handle_network() waits for that sync on
** the calling thread; a2m_handle_network_deferred() returns as soon as the
** lock is released, with the answer made and d saying whether it may be
** given yet.
*/
#ifndef A2M_SERVER_DEFERRED_H
#define A2M_SERVER_DEFERRED_H

#include <stdint.h>

#include <jansson.h>

#include "a2m.h"

/* What a call still owes before its answer may be given. */
typedef struct a2m_deferred {
	uint64_t ticket;  /* 0: nothing, the answer may go now */
	json_t  *id;      /* the request's id (a reference), for an error answer */
} a2m_deferred;

/*
** As a2m_handle_network() (include/a2m.h), but returns without waiting for
** the sync the call owes: d->ticket nonzero then, and the answer in
** *reply must not be given before a2m_deferred_finish(). d is zeroed
** first; with d->ticket 0 there is nothing to finish (finishing is a
** harmless no-op).
*/
int a2m_handle_network_deferred(a2m *h, const char *message, size_t len,
				const char *principal, char **reply, a2m_deferred *d);

/*
** Waits (without any lock of the handle) until d's sync is done, and when
** it failed replaces *reply (freed) by an INTERNAL_ERROR response for the
** same id (NULL for a notification). Releases d's reference and zeroes it.
** Any thread may call it. Returns A2M_OK, or A2M_NOMEM with *reply NULL
** when the error response could not be made.
*/
int a2m_deferred_finish(a2m *h, a2m_deferred *d, char **reply);

/* Forgets d without waiting (its request will not be answered). */
void a2m_deferred_drop(a2m_deferred *d);

#endif
