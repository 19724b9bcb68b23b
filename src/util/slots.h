/*
** slots.h — the index half of an open-addressing hash table whose entries
** live in an array of their own: slots[j] holds an entry's index + 1 (0 is
** free), collisions probe linearly, the size is a power of two. The term
** bags of analyze.c and recall's touches (stack/touches.c) are such tables.
*/
#ifndef A2M_UTIL_SLOTS_H
#define A2M_UTIL_SLOTS_H

#include <stddef.h>
#include <stdint.h>

/*
** Replaces *slots (of *nslots) by a table of ns slots (a power of two, more
** than n) holding entries 0..n-1, entry i at hash(ctx, i) & (ns - 1) or the
** first free slot after it. Returns 0, or -1 when memory runs out (*slots
** and *nslots unchanged).
*/
int a2m_slots_rebuild(uint32_t **slots, size_t *nslots, size_t ns, size_t n,
		      uint64_t (*hash)(const void *ctx, size_t i), const void *ctx);

#endif
