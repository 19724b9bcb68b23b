/*
** random.c — random bytes that never fail to come (see random.h).
*/
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util/random.h"

void a2m_random_fill(void *buf, size_t n)
{
	static atomic_uint_fast64_t calls;
	unsigned char *b = buf;
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom(b + got, n - got, GRND_NONBLOCK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got == n)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t x = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^
		     ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)buf ^
		     (atomic_fetch_add(&calls, 1) << 48);
	for (size_t i = 0; i < n; i++) {
		/* splitmix64 step: spreads the few varying bits over every byte */
		x += 0x9E3779B97F4A7C15ULL;
		uint64_t z = x;
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
		b[i] = (unsigned char)(z ^ (z >> 31));
	}
}
