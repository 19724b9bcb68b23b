/*
** spin.h — a short busy wait before sleeping, for the two ends of a
** request over stdio.
**
** A client calling in a loop sends its next request microseconds after
** reading an answer, and the server answers a lone write in a few tens of
** microseconds. When the side that waits is asleep, the other side's write
** must wake it: on a small VM that wake-up and the trip through the
** scheduler cost more than the request itself. A waiter that reads again
** for a moment first is found awake and costs the writer nothing.
*/
#ifndef A2M_UTIL_SPIN_H
#define A2M_UTIL_SPIN_H

#include <stdint.h>

/* How long a waiter reads again before it sleeps (nanoseconds). */
#define A2M_SPIN_NS 200000

/*
** The moment a spin that starts now should end (CLOCK_MONOTONIC, ns), or
** 0 when spinning cannot help: with one CPU online the other side cannot
** run while this one spins.
*/
int64_t a2m_spin_until(void);

/* 1 while the spin ending at until (from a2m_spin_until) may go on. */
int a2m_spin_more(int64_t until);

#endif
