/*
** federate.h — `a2m federate`: one memory whose tiers live on different A2M
** servers (docs/FEDERATION.md). A router in front owns the policy
** (capacity, whole-group spills, promotion, session close: the stack's own
** rules, stack/policy.h), its event log, summaries and prompts; each
** backend owns the bytes of its tiers and is reached only through the
** protocol: an in-process handle (a2m_handle), a child over stdio, a
** server over HTTP.
*/
#ifndef A2M_FEDERATE_FEDERATE_H
#define A2M_FEDERATE_FEDERATE_H

#include <stddef.h>

#include "a2m.h"

/*
** Reads the federation's configuration file at path, connects every
** backend, checks that each can serve its tiers (the capabilities and
** extensions the router needs; a refusal names the backend and what it
** lacks), finishes or cleans up the moves its journal says were in
** progress, and returns a handle the transports serve like any other
** (server/delegate.h). Returns A2M_OK and sets *out, or a status with a
** one-line reason in err (nothing is left running).
*/
int a2m_federate_open(const char *path, a2m **out, char *err, size_t errlen);

#endif
