/*
** text.c — UTF-8 length, id generation and optional strings (see text.h).
*/
#include <errno.h>
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

int a2m_id_generate(int64_t now_ms, char out[A2M_ID_LEN])
{
	static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	unsigned char rnd[10];
	size_t got = 0;
	while (got < sizeof rnd) {
		ssize_t r = getrandom(rnd + got, sizeof rnd - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)r;
	}
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
