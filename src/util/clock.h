/*
** clock.h — wall-clock time and its one wire format.
**
** Internally a time is int64 milliseconds since the Unix epoch, UTC. On the
** wire it is always RFC 3339 with milliseconds and a Z (spec §3.3,
** DECISIONS 003): never a number.
*/
#ifndef A2M_CLOCK_H
#define A2M_CLOCK_H

#include <stdint.h>

/* Room for "YYYY-MM-DDTHH:MM:SS.mmmZ" and its NUL. */
#define A2M_TIMESTAMP_LEN 25

/* The current time in milliseconds since the epoch. */
int64_t a2m_clock_now_ms(void);

/*
** From now on a2m_clock_now_ms() answers ms (0: the real clock again), in
** the whole process. For `a2m bench --now` (cli/bench.c): with the clock
** the blend's recency, the touches and the records' times read pinned, a
** run does the same work each time and callgrind counts compare exactly.
** Nothing a client sends reaches it. Any thread; readers see it at once.
*/
void a2m_clock_pin(int64_t ms);

#ifdef A2M_TEST_HOOKS  /* the tests' build of the library only (Makefile) */
/*
** For tests: a2m_clock_pin(ms), so a test can stand at the millisecond a
** record expires instead of sleeping until it does.
*/
void a2m_clock_set_for_tests(int64_t ms);
#endif

/*
** Writes ms as "2026-07-28T10:15:30.123Z" into out (A2M_TIMESTAMP_LEN
** bytes). Returns out. Years outside 0000..9999 are clamped.
*/
char *a2m_clock_format(int64_t ms, char out[A2M_TIMESTAMP_LEN]);

/*
** Parses an RFC 3339 UTC timestamp ("...Z", fractional seconds optional, any
** number of digits, truncated to milliseconds) into *ms. Returns 0, or -1 when
** the text is not such a timestamp.
*/
int a2m_clock_parse(const char *text, int64_t *ms);

#endif
