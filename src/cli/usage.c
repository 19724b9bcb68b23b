/*
** usage.c — the one-line usage error every subcommand prints: what was
** wrong, and where to look, then exit status 2.
*/
#include <stdarg.h>
#include <stdio.h>

#include "cli/cli.h"

int a2m_cli_usage(const char *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "a2m %s: %s (try 'a2m %s --help')\n", cmd, msg, cmd);
	return A2M_EXIT_USAGE;
}
