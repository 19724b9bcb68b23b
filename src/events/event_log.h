/*
** events.h — the change log behind the `events` capability (spec §4.12–4.14,
** DECISIONS 026, implementing-a2m.md §11).
**
** One bounded log per server, in memory: a restart empties it, which is
** right, because a cursor is only valid on the server run that issued it.
** Every committed change is appended once (the stack reports it); polling
** walks the log with an opaque cursor, and push mirrors each append to a
** subscribed connection — two views of one log.
*/
#ifndef A2M_EVENTS_EVENT_LOG_H
#define A2M_EVENTS_EVENT_LOG_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "stack/stack.h"
#include "util/error.h"

typedef struct a2m_event_log a2m_event_log;

/* Who may see one id of an event (a copy of the change's a2m_audience). */
typedef struct a2m_event_audience {
	char *owner;       /* NULL = no owner */
	int   shared;      /* in a shared tier: everyone */
} a2m_event_audience;

/* What a written event reports, kept until its object is first asked for. */
typedef struct a2m_event_written {
	int64_t at;
	char   *id, *tier, *session, *key;  /* tier, session, key: NULL when absent */
	int64_t revision;
} a2m_event_written;

/*
** One retained event: the wire object and who may see it. A written event
** (the one of every record a remember stores) starts with written set and
** obj NULL: its object is built the first time a view asks for it, since
** most are evicted unread and building one was about 5% of a batched
** remember. Like the rest of the log, that is done under the handle's
** exclusive lock (every method touching the log takes it).
*/
typedef struct a2m_event {
	uint64_t            seq;      /* position in the log, from 1 */
	json_t             *obj;      /* the event object of §4.12 (kind, at, ...); NULL: see written */
	a2m_event_written  *written;  /* a written event's fields until obj is built */
	char               *owner;    /* with shared 0: only this owner (NULL = no owner) sees it */
	int                 shared;   /* visible to every caller */
	a2m_event_audience *audience; /* NULL, or one per entry of obj's "ids" */
	size_t              n_audience;
} a2m_event;

/* A cursor's text: "c1.", 16 hex digits of salt, ".", a seq; NUL included. */
#define A2M_EVENT_CURSOR_LEN (3 + 16 + 1 + 20 + 1)

typedef struct a2m_event_shared a2m_event_shared;

/*
** Creates an empty log retaining at most capacity events, with a fresh
** random salt so cursors of another run are recognised as foreign. Returns
** NULL when memory runs out.
*/
a2m_event_log *a2m_event_log_new(size_t capacity);

/*
** Creates a log kept in store (store.h, events_append and events_read: a
** PostgreSQL deployment), one for every server that shares the store:
** cursors are valid on all of them and across restarts, since the seqs and
** the salt are the store's. Appends wait in the log until
** a2m_event_shared_write puts them into the write's own transaction, just
** before its commit (events/shared.h; the server installs it with
** a2m_stack_log_in_transaction), or a2m_event_shared_flush, which the
** handle calls at the end of each method, writes what is left in one of
** its own. Returns NULL when memory runs out.
*/
a2m_event_log *a2m_event_log_new_shared(a2m_store *store, size_t capacity);

/* The log's part in the store, or NULL for a log of the server's own. */
a2m_event_shared *a2m_event_log_shared(const a2m_event_log *log);

/* Frees the log. NULL is a no-op. */
void a2m_event_log_free(a2m_event_log *log);

/*
** The event object of spec §4.12 for one change (what a log keeps for it),
** or NULL when memory runs out.
*/
json_t *a2m_event_build(const a2m_change *c);

/* Writes the cursor naming seq in the log salted salt (16 hex digits). */
void a2m_event_cursor_format(const char *salt, uint64_t seq, char out[A2M_EVENT_CURSOR_LEN]);

/*
** The seq a cursor names, when it is exactly a cursor of the log salted
** salt. Returns 0, or -1 (foreign, malformed).
*/
int a2m_event_cursor_parse(const char *salt, const char *text, uint64_t *seq);

/* The number of events the log retains at most. */
size_t a2m_event_log_capacity(const a2m_event_log *log);

/*
** Appends the change as one event and returns it (borrowed; valid until the
** next append), or NULL when memory runs out, and always NULL for a shared
** log (its event has no seq before the flush; events/shared.h pushes). Kinds: written (id, and tier,
** session, key, revision), forgotten (count, ids), promoted (ids, tier),
** consolidated (moved, promoted, dropped, summarized), session_closed
** (session); all carry `at`.
*/
a2m_event *a2m_event_log_append(a2m_event_log *log, const a2m_change *c);

/*
** A group of writes in one transaction (server/group.c) reports its events
** as each write ends, before the group commits; readers cannot see them
** yet (the group holds the handle's lock), and when the group's
** transaction is rolled back they are taken back. a2m_event_log_head()
** is the seq of the newest event (0: none yet; always 0 for a shared log,
** which is never grouped); a2m_event_log_truncate() drops every event
** after head, as if never appended (an event an append evicted for room
** stays gone: a reader that needed it is told reset).
*/
uint64_t a2m_event_log_head(const a2m_event_log *log);
void a2m_event_log_truncate(a2m_event_log *log, uint64_t head);

/*
** What scope may be shown of ev (the rules of recall, §4.12), when its kind
** is among kinds (a JSON array of strings; NULL = every kind): a new
** reference to the event object, or to a copy cut down to the ids scope
** could have recalled (a forgotten event's count then counts those); NULL
** when scope may see none of it, the kind is not wanted, or memory ran out
** (*oom set; may be NULL).
*/
json_t *a2m_event_view(a2m_event *ev, const a2m_scope *scope, const json_t *kinds,
		       int *oom);

/*
** Polls: with cursor NULL returns no events and the current head cursor.
** Otherwise returns, oldest first, up to limit (0 = every retained) events
** after the cursor that are wanted by scope and kinds, the cursor after the
** last one examined, `more` when retained events remain beyond limit, and
** `reset: true` when the cursor was foreign, malformed or older than the
** retained window (the read then starts at the oldest retained event).
** *result = {"events": [...], "cursor": "...", "more"?: true, "reset"?: true}.
*/
int a2m_event_log_read(a2m_event_log *log, const char *cursor, size_t limit,
		       const json_t *kinds, const a2m_scope *scope, json_t **result,
		       a2m_error *err);

#endif
