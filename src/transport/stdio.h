/*
** stdio.h — the stdio binding (spec §8.2): one JSON-RPC message per line in,
** one per line out.
*/
#ifndef A2M_TRANSPORT_STDIO_H
#define A2M_TRANSPORT_STDIO_H

#include <signal.h>
#include <stddef.h>

#include "a2m.h"

/* The default longest line accepted, newline excluded: 16 MiB. */
#define A2M_STDIO_MAX_LINE ((size_t)16 << 20)

/*
** Serves h over in_fd/out_fd until end of input or until *stop becomes
** nonzero. Blank lines are ignored. A line longer than max_line is refused
** with an error response as soon as it passes the limit, and the rest of it
** is skipped without being held in memory; serving resumes at the next
** newline. Nothing but JSON-RPC is written to out_fd.
**
** Signals: the caller blocks the signals that should stop the server and
** passes in wait_mask the mask to wait under (normally the mask from before
** blocking), so a signal can only be taken while the loop waits for input
** and never mid-request; its handler sets *stop.
**
** Returns 0 on a clean end (EOF or *stop), -1 when writing the output failed
** (the reader went away) or reading failed.
*/
int a2m_stdio_serve(a2m *h, int in_fd, int out_fd, size_t max_line,
		    volatile sig_atomic_t *stop, const sigset_t *wait_mask);

#endif
