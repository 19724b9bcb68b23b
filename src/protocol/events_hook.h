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

#endif
