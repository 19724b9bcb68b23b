/*
** log.c — leveled logging to stderr (see log.h).
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"

static a2m_log_level current = A2M_LOG_WARN;
static const char *const names[] = {"error", "warn", "info", "debug"};

void a2m_log_set_level(a2m_log_level level)
{
	current = level;
}

int a2m_log_parse_level(const char *name, a2m_log_level *level)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(name, names[i]) == 0) {
			*level = (a2m_log_level)i;
			return 0;
		}
	}
	return -1;
}

void a2m_log(a2m_log_level level, const char *fmt, ...)
{
	if (level > current)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	/* One fprintf per line so concurrent threads do not interleave within it. */
	fprintf(stderr, "a2m: %s: %s\n", names[level], line);
}
