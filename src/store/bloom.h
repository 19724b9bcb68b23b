/*
** bloom.h — a Bloom filter over 64-bit hashes, kept as plain bytes so it
** can be stored in a BLOB: the SQLite term index keeps one per segment, so
** a read of a term skips the segments that cannot hold it (sqlite_segments.c).
**
** Ten bits per key and six probes: about 1% of the keys not in the set are
** reported as maybe in it; a key in the set is never reported absent. The
** probes come from the key's hash alone (two halves, double hashing), so
** the bytes mean the same in every process: the layout must not change
** without the index layout's version (INDEX_LAYOUT in sqlite_index.c).
*/
#ifndef A2M_BLOOM_H
#define A2M_BLOOM_H

#include <stddef.h>
#include <stdint.h>

/* The bytes a filter of keys keys takes (at least 8). */
size_t a2m_bloom_bytes(size_t keys);

/* Adds the key hashed h to the filter of n bytes at bits (zeroed at first). */
void a2m_bloom_add(unsigned char *bits, size_t n, uint64_t h);

/* 0 when the key hashed h is surely not in the filter, 1 when it may be. */
int a2m_bloom_maybe(const unsigned char *bits, size_t n, uint64_t h);

#endif
