/*
** stop_signals.h — how the long-running commands stop: SIGTERM and SIGINT
** set one flag, which `a2m serve`, `a2m mcp` and `a2m events --follow`
** read between two pieces of work, so a signal never lands in the middle
** of a request.
*/
#ifndef A2M_CLI_STOP_SIGNALS_H
#define A2M_CLI_STOP_SIGNALS_H

#include <signal.h>

/* Set when SIGTERM or SIGINT arrived (once cli_stop_on_signal handles them). */
extern volatile sig_atomic_t cli_stop_requested;

/* The handler that sets cli_stop_requested. */
void cli_stop_on_signal(int sig);

/*
** For a server's loop: blocks SIGTERM and SIGINT, lets cli_stop_on_signal
** take them (without SA_RESTART) and ignores SIGPIPE (a vanished peer is an
** EPIPE from write(), handled there). *wait_mask gets the mask the loop
** waits with (sigsuspend, pselect), so the signals arrive only while it
** waits. Cannot fail.
*/
void cli_stop_signals_block(sigset_t *wait_mask);

#endif
