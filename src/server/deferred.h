/*
** deferred.h — a network call whose wait for durability is taken apart
** from it (server/handle.c), for a transport that answers other requests
** on the same thread meanwhile: the HTTP binding gets these three through
** its a2m_http_defer seam (transport/http.h), which `a2m serve` fills.
**
** With group commit (store/sqlite_sync.c) a write is answered only once a
** sync of the log covers it. a2m_handle_network() waits for that sync on
** the calling thread; a2m_handle_network_deferred() returns as soon as the
** handle's lock is released, with the answer made and *pending saying
** whether it may be given yet.
*/
#ifndef A2M_SERVER_DEFERRED_H
#define A2M_SERVER_DEFERRED_H

#include <stddef.h>

#include "a2m.h"

/*
** As a2m_handle_network() (include/a2m.h), but returns without waiting for
** the sync the call owes: *pending is then non-NULL, and the answer in
** *reply must not be given before a2m_deferred_finish(pending). *pending
** NULL: the answer may go now (when memory for *pending runs out, the call
** waits here, as a2m_handle_network() would).
*/
int a2m_handle_network_deferred(a2m *h, const char *message, size_t len,
				const char *principal, char **reply, void **pending);

/*
** Waits (without any lock of the handle) until pending's sync is done, and
** when it failed replaces *reply (freed) by an INTERNAL_ERROR response for
** the same id (none for a notification). Frees pending. Any thread may
** call it. Returns A2M_OK, or A2M_NOMEM with *reply NULL when the error
** response could not be made.
*/
int a2m_deferred_finish(a2m *h, void *pending, char **reply);

/* Frees pending without waiting (its request will not be answered). NULL: no-op. */
void a2m_deferred_drop(void *pending);

#endif
