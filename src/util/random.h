/*
** random.h — random bytes for identifiers that must differ, not stay
** secret: the event log's salt, the term index's segment nonces.
*/
#ifndef A2M_UTIL_RANDOM_H
#define A2M_UTIL_RANDOM_H

#include <stddef.h>

/*
** Fills buf with n random bytes from the system's source. When that fails
** it falls back to mixing the clock, the process id, an address and a
** counter rather than failing: two calls never give the same bytes in one
** process, and runs differ, which is all these uses ask.
*/
void a2m_random_fill(void *buf, size_t n);

#endif
