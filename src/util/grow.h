/*
** grow.h — the one rule for growable arrays: capacity at least doubles
** (from 16), every size is checked against size_t overflow, and a failed
** growth leaves the array as it was. Inline: rosters and index rows grow
** on the write path.
**
** Use: if (a2m_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v))
**          return -1;
** Parallel arrays that share one capacity take the capacity from
** a2m_grow_cap() and resize each with a2m_resize().
*/
#ifndef A2M_UTIL_GROW_H
#define A2M_UTIL_GROW_H

#include <stdint.h>
#include <stdlib.h>

/*
** The capacity that holds n elements, grown from cap: cap itself when it
** holds them already, else cap doubled (16 from 0) until it does. Returns
** 0 when that would overflow size_t (n is never 0 then).
*/
static inline size_t a2m_grow_cap(size_t cap, size_t n)
{
	if (n <= cap)
		return cap;
	size_t k = cap ? cap : 16;
	while (k < n) {
		if (k > SIZE_MAX / 2)
			return 0;
		k *= 2;
	}
	return k;
}

/*
** Resizes *v to n elements of each bytes (one byte when that is 0, so a
** pointer always comes back). Returns 0, or -1 when n * each overflows or
** memory ran out (*v is left as it was).
*/
static inline int a2m_resize(void **v, size_t n, size_t each)
{
	if (each && n > SIZE_MAX / each)
		return -1;
	size_t bytes = n * each;
	void *p = realloc(*v, bytes ? bytes : 1);
	if (!p)
		return -1;
	*v = p;
	return 0;
}

/*
** Makes room in *v, an array of *cap elements of each bytes, for n (see
** a2m_grow_cap). Returns 0 (*v and *cap updated when it grew), or -1 when
** the size overflows or memory ran out (the array is left as it was).
*/
static inline int a2m_grow(void **v, size_t *cap, size_t n, size_t each)
{
	if (n <= *cap)
		return 0;
	size_t k = a2m_grow_cap(*cap, n);
	if (!k || a2m_resize(v, k, each) != 0)
		return -1;
	*cap = k;
	return 0;
}

#endif
