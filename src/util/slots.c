/*
** slots.c — rebuilding the index of an open-addressing table (see slots.h).
*/
#include <stdlib.h>

#include "util/slots.h"

int a2m_slots_rebuild(uint32_t **slots, size_t *nslots, size_t ns, size_t n,
		      uint64_t (*hash)(const void *ctx, size_t i), const void *ctx)
{
	uint32_t *s = calloc(ns, sizeof *s);
	if (!s)
		return -1;
	for (size_t i = 0; i < n; i++) {
		size_t j = (size_t)hash(ctx, i) & (ns - 1);
		while (s[j])
			j = (j + 1) & (ns - 1);
		s[j] = (uint32_t)(i + 1);
	}
	free(*slots);
	*slots = s;
	*nslots = ns;
	return 0;
}
