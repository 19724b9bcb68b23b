/*
** hash.h — FNV-1a, the one string hash of the project: the in-memory
** tables, the term index and caches, the analyser, the summarizer and the
** mirror's file names all hash bytes with it. Inline because it sits on
** the hot paths of indexing and recall. The mirror's file names depend on
** its values: they must never change.
*/
#ifndef A2M_UTIL_HASH_H
#define A2M_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The starting value of a hash (FNV-1a's offset basis). */
#define A2M_HASH_SEED 14695981039346656037ULL

/* h continued over the n bytes at p: hashes of several parts chain. */
static inline uint64_t a2m_hash_more(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* The hash of the n bytes at p. */
static inline uint64_t a2m_hash_bytes(const void *p, size_t n)
{
	return a2m_hash_more(A2M_HASH_SEED, p, n);
}

/* The hash of the NUL-terminated s (its NUL excluded). */
static inline uint64_t a2m_hash_str(const char *s)
{
	return a2m_hash_bytes(s, strlen(s));
}

#endif
