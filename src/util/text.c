/*
** text.c — UTF-8 length and validity, id generation and optional strings (see text.h).
*/
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util/text.h"

size_t a2m_utf8_length(const char *s, size_t n)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			count++;
	return count;
}

size_t a2m_utf8_sequence(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0];
	size_t n;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c < 0xC2)
		return 0;
	if (c < 0xE0) {
		n = 2;
		cp = c & 0x1F;
	} else if (c < 0xF0) {
		n = 3;
		cp = c & 0x0F;
	} else if (c < 0xF5) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3Fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return 0;
	return n;
}

int a2m_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	while (p < end) {
		size_t k = a2m_utf8_sequence(p, end);
		if (!k)
			return 0;
		p += k;
	}
	return 1;
}

/*
** The random bits of ids are drawn from the system a batch at a time: one
** getrandom() per id was a system call per remembered record. Each thread
** keeps its own batch; a fork() makes the child start a fresh one, so
** parent and child never hand out the same bits.
*/
#define ID_RANDOM_BYTES 10
#define ID_BATCH        32

static atomic_uint forks;
static pthread_once_t fork_hook = PTHREAD_ONCE_INIT;

static void count_fork(void)
{
	atomic_fetch_add(&forks, 1);
}

static void hook_forks(void)
{
	pthread_atfork(NULL, NULL, count_fork);
}

/* Copies ID_RANDOM_BYTES fresh random bytes into out. Returns 0, or -1. */
static int id_random(unsigned char *out)
{
	static _Thread_local struct {
		unsigned char bytes[ID_RANDOM_BYTES * ID_BATCH];
		size_t        left;  /* the last `left` bytes are unused */
		unsigned      forks; /* the fork count when they were drawn */
	} batch;
	pthread_once(&fork_hook, hook_forks);
	unsigned now_forks = atomic_load(&forks);
	if (batch.left == 0 || batch.forks != now_forks) {
		size_t got = 0;
		batch.left = 0;
		while (got < sizeof batch.bytes) {
			ssize_t r = getrandom(batch.bytes + got, sizeof batch.bytes - got, 0);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				return -1;
			}
			got += (size_t)r;
		}
		batch.left = sizeof batch.bytes;
		batch.forks = now_forks;
	}
	unsigned char *take = batch.bytes + sizeof batch.bytes - batch.left;
	memcpy(out, take, ID_RANDOM_BYTES);
	/* Used bytes are wiped: nothing read from memory later shows them again. */
	memset(take, 0, ID_RANDOM_BYTES);
	batch.left -= ID_RANDOM_BYTES;
	return 0;
}

int a2m_id_generate(int64_t now_ms, char out[A2M_ID_LEN])
{
	static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	unsigned char rnd[ID_RANDOM_BYTES];
	if (id_random(rnd) != 0)
		return -1;
	/* 48 bits of time as 10 characters (the top 2 bits are always zero). */
	uint64_t t = (uint64_t)now_ms & 0xFFFFFFFFFFFFULL;
	for (int i = 9; i >= 0; i--) {
		out[i] = alphabet[t & 31];
		t >>= 5;
	}
	/* 80 random bits as 16 characters. */
	uint64_t hi = 0, lo = 0;
	for (int i = 0; i < 5; i++)
		hi = hi << 8 | rnd[i];
	for (int i = 5; i < 10; i++)
		lo = lo << 8 | rnd[i];
	for (int i = 17; i >= 10; i--) {
		out[i] = alphabet[hi & 31];
		hi >>= 5;
	}
	for (int i = 25; i >= 18; i--) {
		out[i] = alphabet[lo & 31];
		lo >>= 5;
	}
	out[26] = '\0';
	return 0;
}

int a2m_str_same(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

char *a2m_str_dup_opt(const char *s, int *oom)
{
	char *d = s ? strdup(s) : NULL;
	if (s && !d)
		*oom = 1;
	return d;
}
