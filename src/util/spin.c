/*
** spin.c — the bounded busy wait of spin.h.
*/
#include "util/spin.h"

#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t a2m_spin_until(void)
{
	/* 0 unknown, 1 spin, 2 do not: the CPUs online at the first call. */
	static atomic_int worth;
	int w = atomic_load_explicit(&worth, memory_order_relaxed);
	if (w == 0) {
		w = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 1 : 2;
		atomic_store_explicit(&worth, w, memory_order_relaxed);
	}
	return w == 1 ? now_ns() + A2M_SPIN_NS : 0;
}

int a2m_spin_more(int64_t until)
{
	return until > 0 && now_ns() < until;
}
