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
** weak low bits over the whole word. a2m_bloom_add and a2m_bloom_maybe
** walk the same ones.
*/
typedef struct probes {
	uint64_t a, b, nbits;
} probes;

static probes probes_of(uint64_t h, size_t n)
{
	h ^= h >> 33;
	h *= 0xFF51AFD7ED558CCDULL;
	h ^= h >> 33;
	return (probes){h & 0xFFFFFFFFu, (h >> 32) | 1, (uint64_t)n * 8};
}

/* The bit of probe i. */
static uint64_t probe_bit(const probes *p, int i)
{
	return (p->a + (uint64_t)i * p->b) % p->nbits;
}

void a2m_bloom_add(unsigned char *bits, size_t n, uint64_t h)
{
	probes p = probes_of(h, n);
	for (int i = 0; i < PROBES; i++) {
		uint64_t bit = probe_bit(&p, i);
		bits[bit / 8] |= (unsigned char)(1u << (bit % 8));
	}
}

int a2m_bloom_maybe(const unsigned char *bits, size_t n, uint64_t h)
{
	if (!n)
		return 1;
	probes p = probes_of(h, n);
	for (int i = 0; i < PROBES; i++) {
		uint64_t bit = probe_bit(&p, i);
		if (!(bits[bit / 8] & (1u << (bit % 8))))
			return 0;
	}
	return 1;
}
