/*
** inprocess.h — a call whose message the caller has already read into a
** JSON value (server/handle.c), for code in the same process that reads
** its requests on a thread other than the one that sends them: the corpus
** indexer reads a batch's memory/remember on its walking thread while the
** batch before is written on another (corpus/index.c), so the writer does
** not spend a seventh of its time reading JSON text.
**
** Nothing else differs from a2m_handle(): the same envelope checks
** (a2m_rpc_accept), capability gate, validation, limits, lock, events and
** wait for durability, and the same reply text.
*/
#ifndef A2M_SERVER_INPROCESS_H
#define A2M_SERVER_INPROCESS_H

#include <jansson.h>

#include "a2m.h"

/*
** As a2m_handle(h, text of msg, ...), msg being what the reader of
** util/json_read.h made of that text (allow_nul on, as a2m_handle reads).
** Takes msg's reference whatever it returns. *reply as a2m_handle's
** (free with a2m_free; NULL for a notification). A delegated handle is sent
** the message as text.
*/
int a2m_handle_value(a2m *h, json_t *msg, char **reply);

/*
** A hint: the next memory/remember on h will carry these texts as its
** records' content, in this order (a2m_stack_foresee): their analysis
** starts now on the handle's helper threads, while the caller's write
** before is still committing. Nothing a call answers changes. A no-op for
** a delegated handle. Returns 0, or -1 when nothing was started.
*/
int a2m_handle_foresee(a2m *h, const char *const *texts, size_t n);

#endif
