/*
** bloom.c — a Bloom filter over 64-bit hashes (see bloom.h).
*/
#include "store/bloom.h"

#define BITS_PER_KEY 10
#define PROBES       6

size_t a2m_bloom_bytes(size_t keys)
{
	size_t bytes = (keys * BITS_PER_KEY + 7) / 8;
	return bytes < 8 ? 8 : bytes;
}

/*
** The probe positions: h's low half plus i times its high half (made odd,
** so the steps never repeat early), after a multiply that spreads FNV-1a's
** weak low bits over the whole word.
*/
static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xFF51AFD7ED558CCDULL;
	h ^= h >> 33;
	return h;
}

void a2m_bloom_add(unsigned char *bits, size_t n, uint64_t h)
{
	uint64_t m = mix(h), a = m & 0xFFFFFFFFu, b = (m >> 32) | 1, nbits = (uint64_t)n * 8;
	for (int i = 0; i < PROBES; i++) {
		uint64_t bit = (a + (uint64_t)i * b) % nbits;
		bits[bit / 8] |= (unsigned char)(1u << (bit % 8));
	}
}

int a2m_bloom_maybe(const unsigned char *bits, size_t n, uint64_t h)
{
	uint64_t m = mix(h), a = m & 0xFFFFFFFFu, b = (m >> 32) | 1, nbits = (uint64_t)n * 8;
	if (!n)
		return 1;
	for (int i = 0; i < PROBES; i++) {
		uint64_t bit = (a + (uint64_t)i * b) % nbits;
		if (!(bits[bit / 8] & (1u << (bit % 8))))
			return 0;
	}
	return 1;
}
