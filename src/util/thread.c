/*
** thread.c — helper threads with every signal blocked (see thread.h).
*/
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include "util/thread.h"

int a2m_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	/* A new thread inherits its creator's mask: block all, create, restore. */
	sigset_t all, old;
	sigfillset(&all);
	int rc = pthread_sigmask(SIG_BLOCK, &all, &old);
	if (rc)
		return rc;
	rc = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int a2m_cpus_usable(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

int a2m_helpers_default(void)
{
	int k = a2m_cpus_usable() - 1;
	return k < 4 ? k : 4;
}
