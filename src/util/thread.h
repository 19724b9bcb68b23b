/*
** thread.h — starting the helper threads a write may use (analyze_ahead.c,
** sqlite_segments_merge.c).
*/
#ifndef A2M_THREAD_H
#define A2M_THREAD_H

#include <pthread.h>

/*
** Starts fn(arg) on a new joinable thread with every signal blocked: a
** library's helper must never be the thread a process-directed signal
** (SIGTERM, SIGINT) lands on, whatever mask the calling thread has.
** Returns 0, or pthread_create's error number.
*/
int a2m_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);

/*
** The cores this process may run on: its CPU affinity (a container's
** cpuset, taskset), else the cores online; at least 1.
*/
int a2m_cpus_usable(void);

/*
** How many helper threads a write uses when not told (a2m_config's
** helper_threads -1): one per usable core but the writer's, at most 4;
** none on one core, where a helper would only take turns with the writer.
*/
int a2m_helpers_default(void);

#endif
