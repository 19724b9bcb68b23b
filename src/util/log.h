/*
** log.h — the library's diagnostics, always to stderr.
**
** On the stdio transport stdout carries JSON-RPC and nothing else (spec
** §8.2), so no code in this project writes a log line anywhere but stderr.
*/
#ifndef A2M_LOG_H
#define A2M_LOG_H

typedef enum a2m_log_level {
	A2M_LOG_ERROR = 0,
	A2M_LOG_WARN  = 1,
	A2M_LOG_INFO  = 2,
	A2M_LOG_DEBUG = 3
} a2m_log_level;

/* Sets the most verbose level that is printed (default A2M_LOG_WARN). */
void a2m_log_set_level(a2m_log_level level);

/*
** Parses "error", "warn", "info" or "debug" into *level. Returns 0, or -1 for
** any other name.
*/
int a2m_log_parse_level(const char *name, a2m_log_level *level);

/* Prints one line "a2m: LEVEL: message" to stderr when level is enabled. */
void a2m_log(a2m_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
