/*
** delegate.h — a handle of the public API (include/a2m.h) whose calls are
** answered by something other than this library's own server: a federating
** router (src/federate/), which speaks to other A2M servers and keeps no
** store. The transports serve such a handle exactly as an ordinary one
** (they know only a2m_handle, a2m_handle_network and a2m_set_notify), so
** `a2m federate` takes the same flags and serves the same way as
** `a2m serve`.
*/
#ifndef A2M_SERVER_DELEGATE_H
#define A2M_SERVER_DELEGATE_H

#include <stddef.h>

#include "a2m.h"

/* What a delegated handle calls; ctx is the one given to a2m_open_delegate. */
typedef struct a2m_delegate {
	/* a2m_handle and a2m_handle_network (network 1, principal NULL when
	** nobody was authenticated): same contract, same statuses. Called from
	** several threads at once over HTTP. */
	int  (*handle)(void *ctx, const char *message, size_t len, int network,
		       const char *principal, char **reply);
	/* a2m_set_notify: fn NULL when the channel went away. */
	void (*set_notify)(void *ctx, a2m_notify_fn fn, void *user);
	/* a2m_close: frees ctx and everything it holds. */
	void (*close)(void *ctx);
} a2m_delegate;

/*
** A handle that hands every call to ops (borrowed: must outlive the
** handle) with ctx (owned by the handle from now on: a2m_close calls
** ops->close). Returns A2M_OK and sets *out, or A2M_NOMEM (ctx is then
** still the caller's).
*/
int a2m_open_delegate(const a2m_delegate *ops, void *ctx, a2m **out);

#endif
