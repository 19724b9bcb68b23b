/*
** stop_signals.c — SIGTERM and SIGINT as a flag (see stop_signals.h).
*/
#include <string.h>

#include "cli/stop_signals.h"

volatile sig_atomic_t cli_stop_requested;

void cli_stop_on_signal(int sig)
{
	(void)sig;
	cli_stop_requested = 1;
}

void cli_stop_signals_block(sigset_t *wait_mask)
{
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, wait_mask);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = cli_stop_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}
