/*
** vector_filter.h — the filter the vector tests hand a store's
** vector_search (store.h a2m_vector_filter): one tier or every tier, and
** one owner or every owner. Shared by tests/test_vectors.c (the exact
** search against a reference) and tests/test_vector_quant.c (the quantized
** pools against the exact search), so both filter by the same rule.
*/
#ifndef A2M_TEST_VECTOR_FILTER_H
#define A2M_TEST_VECTOR_FILTER_H

#include <string.h>

#include "store/store.h"

/* A filter keeping one tier (NULL: every tier), and one owner when by_owner. */
typedef struct filt {
	const char *tier;
	int         by_owner;
	const char *owner;  /* NULL: the records without one */
} filt;

/* Whether two strings, either of which may be NULL, are equal. */
static inline int same(const char *a, const char *b)
{
	return (!a || !b) ? a == b : strcmp(a, b) == 0;
}

/* a2m_vector_filter.tier for ctx, a filt: skip the tier, or all of it, or one owner's. */
static inline int filt_tier(void *ctx, const char *name, const char **owner)
{
	const filt *f = ctx;
	if (f->tier && !same(f->tier, name))
		return A2M_VF_SKIP;
	if (!f->by_owner)
		return A2M_VF_ALL;
	*owner = f->owner;
	return A2M_VF_OWNER;
}

#endif
