/*
** grow.h — the growable arrays of the corpus code (chunks, headings,
** blocks, pending files, record offsets): one doubling rule.
*/
#ifndef A2M_CORPUS_GROW_H
#define A2M_CORPUS_GROW_H

#include <stdlib.h>

/*
** Makes room in *v, an array of *cap elements of each bytes, for n: at
** least doubling, from 16. Returns 0 (*v and *cap updated), or -1 when
** memory ran out (the array is left as it was).
*/
static inline int a2m_corpus_grow(void **v, size_t *cap, size_t n, size_t each)
{
	if (n <= *cap)
		return 0;
	size_t k = *cap ? *cap * 2 : 16;
	while (k < n)
		k *= 2;
	void *p = realloc(*v, k * each);
	if (!p)
		return -1;
	*v = p;
	*cap = k;
	return 0;
}

#endif
