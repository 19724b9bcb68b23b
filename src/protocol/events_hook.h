/*
** events_hook.h — connects the stack's change listener to the server's event
** log and push subscription (spec §4.12–4.13). Private to the library: the
** code that builds an a2m_server installs it with
**
**     a2m_stack_on_change(srv->stack, a2m_events_on_change, srv);
*/
#ifndef A2M_EVENTS_HOOK_H
#define A2M_EVENTS_HOOK_H

#include "stack/stack.h"

/*
** The a2m_change_fn of a server: ctx is the a2m_server *. Appends c to
** srv->events (nothing happens without a log: an event that was never
** logged must not be pushed either, or a client could not catch up on it by
** polling) and, when the connection subscribed and the event is wanted by
** the subscription's scope and kinds, hands one memory/event notification to
** srv->notify. Cannot fail: when memory runs out the log records a gap, so
** pollers see reset, and the notification is skipped.
*/
void a2m_events_on_change(void *ctx, const a2m_change *c);

/*
** A log shared by several servers (events/shared.h): writes the events
** this call buffered outside a write's transaction (those of a write went
** in with it, a2m_events_write), then pushes to the connection's subscription, in
** order, every event after the last it was sent — this server's and every
** other server's. Called by the handle with its lock held exclusively,
** after each method and whenever the store hears another server commit
** (store.h, watch). Cannot fail: a store that is down leaves the events
** for the next call (the cursor of the log is the recovery path). A
** no-op for a server's own log.
*/
void a2m_events_settle(void *srv);

/*
** The a2m_change_write_fn of a server whose log is shared (ctx: the
** a2m_server *): puts the events the write just reported into its
** transaction (events/shared.h). Returns 0 or the store's code.
*/
int  a2m_events_write(void *srv);

#endif
