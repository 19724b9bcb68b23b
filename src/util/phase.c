/*
** phase.c — a thread's time split by the phases the write path names
** (phase.h): the wall clock, the thread's CPU clock and its wait for a CPU
** read at each change of phase.
**
** Why three clocks: on a loaded machine a call that takes 120 ms may have
** run 8 ms and waited 100 for a CPU, which no change to the store can
** remove; what is left once both are taken off is time the thread was
** blocked, and the phase it was blocked in says on what (the BEGIN's
** locks, a helper thread, the disk).
*/
#include <fcntl.h>
#include <sys/resource.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/phase.h"

static _Thread_local a2m_phase_clock *watched;

static const char *const names[A2M_PHASE_COUNT] = {
	"other", "begin", "tail", "ahead-read", "analysis", "flush", "merge", "steps",
	"commit", "checkpoint", "sync"};

const char *a2m_phase_name(a2m_phase p)
{
	return (unsigned)p < A2M_PHASE_COUNT ? names[p] : "?";
}

static double clock_ms(clockid_t id)
{
	struct timespec ts;
	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The thread's wait for a CPU so far, ms (schedstat's second field); -1 unknown. */
static double queued_ms(int fd)
{
	char b[96];
	ssize_t got = fd >= 0 ? pread(fd, b, sizeof b - 1, 0) : -1;
	unsigned long long ran, queued;
	if (got <= 0)
		return -1;
	b[got] = 0;
	if (sscanf(b, "%llu %llu", &ran, &queued) != 2)
		return -1;
	return (double)queued / 1e6;
}

/*
** Charges the time since the last mark to the phase running. A preemption
** the kernel has decided on (a thread this one just woke or started)
** takes place at the return from the next system call: that is the first
** here, whose result is not used, so the wait lands in the phase that
** caused it and not half in the next (the wall clock is read without a
** system call).
*/
static void mark(a2m_phase_clock *c)
{
	(void)clock_ms(CLOCK_THREAD_CPUTIME_ID);
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		memset(&ru, 0, sizeof ru);
	double q = c->queued_known ? queued_ms(c->fd) : -1;
	double cpu = clock_ms(CLOCK_THREAD_CPUTIME_ID), ms = clock_ms(CLOCK_MONOTONIC);
	a2m_phase_time *t = &c->t[c->at];
	t->sleeps += ru.ru_nvcsw - c->sleeps0;
	t->preempted += ru.ru_nivcsw - c->preempted0;
	t->reads += ru.ru_inblock - c->reads0;
	c->sleeps0 = ru.ru_nvcsw;
	c->preempted0 = ru.ru_nivcsw;
	c->reads0 = ru.ru_inblock;
	t->ms += ms - c->ms0;
	t->cpu += cpu - c->cpu0;
	if (q >= 0)
		t->queued += q - c->queued0;
	c->ms0 = ms;
	c->cpu0 = cpu;
	c->queued0 = q >= 0 ? q : 0;
}

void a2m_phase_watch(a2m_phase_clock *c)
{
	if (watched && watched->fd >= 0)
		close(watched->fd);
	watched = c;
	if (!c)
		return;
	memset(c, 0, sizeof *c);
	c->fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	double q = queued_ms(c->fd);
	c->queued_known = q >= 0;
	c->queued0 = q >= 0 ? q : 0;
	c->ms0 = clock_ms(CLOCK_MONOTONIC);
	c->cpu0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) == 0) {
		c->sleeps0 = ru.ru_nvcsw;
		c->preempted0 = ru.ru_nivcsw;
		c->reads0 = ru.ru_inblock;
	}
	c->at = A2M_PHASE_OTHER;
}

void a2m_phase_reset(a2m_phase_clock *c)
{
	mark(c);
	memset(c->t, 0, sizeof c->t);
}

void a2m_phase_read(a2m_phase_clock *c)
{
	mark(c);
}

a2m_phase a2m_phase_enter(a2m_phase p)
{
	a2m_phase_clock *c = watched;
	if (!c)
		return A2M_PHASE_OTHER;
	mark(c);
	a2m_phase was = (a2m_phase)c->at;
	c->at = p;
	return was;
}

void a2m_phase_leave(a2m_phase back)
{
	a2m_phase_clock *c = watched;
	if (!c)
		return;
	mark(c);
	c->at = back;
}
