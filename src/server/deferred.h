/*
** deferred.h — network calls whose answers wait for durability, taken
** apart from the calling thread (server/handle.c, server/deferred.c), for
** a transport that answers other requests on the same thread meanwhile:
** the HTTP binding gets these three through its a2m_http_defer seam
** (transport/http.h), which `a2m serve` fills.
**
** With group commit (store/sqlite_sync.c) a write is answered only once a
** sync of the log covers it. a2m_handle_network() waits for that sync on
** the calling thread. a2m_handle_network_deferred() does not: a write is
** queued unrun, and a2m_deferred_finish() later runs every write handed to
** it in one transaction (deferred.c: one COMMIT, one sync for them all);
** any other call that owes a sync returns once the handle's lock is
** released, with its answer made.
*/
#ifndef A2M_SERVER_DEFERRED_H
#define A2M_SERVER_DEFERRED_H

#include <stddef.h>

#include "a2m.h"

/*
** As a2m_handle_network() (include/a2m.h), but returns without waiting for
** the sync the call owes: *pending is then non-NULL, and the answer must
** not be given before a2m_deferred_finish() made it final — a write of a
** store that shares its syncs (stack.h, a2m_stack_joins) is not even run
** yet (*reply NULL), any other call has its answer in *reply. *pending
** NULL: the answer in *reply may go now (when memory for *pending runs
** out, the call runs and waits here, as a2m_handle_network() would).
*/
int a2m_handle_network_deferred(a2m *h, const char *message, size_t len,
				const char *principal, char **reply, void **pending);

/*
** Finishes n pending calls of h together (any thread; no lock of the handle
** held): the writes among them still to run are run, in order, in one
** joint transaction (deferred.c says what a failure undoes), then one wait
** covers every sync they owe. replies[i] is pending[i]'s answer, in and
** out: the answer made at a2m_handle_network_deferred (NULL for a queued
** write), replaced when the call ran here or its sync failed (an
** INTERNAL_ERROR response for the same id; none for a notification).
** status[i]: A2M_OK, or A2M_NOMEM with replies[i] NULL when an answer
** owed could not be made. Frees every pending[i] and sets it NULL.
*/
void a2m_deferred_finish(a2m *h, void **pending, char **replies, int *status, size_t n);

/*
** The first half of a2m_deferred_finish(): runs the queued writes among
** the n (as it would; replies[i] and status[i] as it sets them) and
** returns without waiting for their sync, so a transport can run the next
** batch while this one's sync runs. Every pending[i] stays, to be handed
** to a2m_deferred_finish() (which then only waits) or dropped.
*/
void a2m_deferred_run(a2m *h, void **pending, char **replies, int *status, size_t n);

#ifdef A2M_TEST_HOOKS  /* the tests' build of the library only (Makefile) */
/* For tests: fn (NULL: none) runs each time the calls of a joint
** transaction that another undid are about to run again. */
void a2m_deferred_before_again_for_tests(void (*fn)(void));
#endif

/* Frees pending without waiting (its request will not be answered; a
** queued write is never run). NULL: no-op. */
void a2m_deferred_drop(void *pending);

#endif
