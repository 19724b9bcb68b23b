/*
** pool.h — the rank layer's per-call state, shared by the threads that use
** one scorer or analyser at once (docs/RANKING.md §9).
**
** A scorer or an analyser keeps what one call scribbles on (bm25.c's
** postings lists and accumulators, analyze.c's stemmers and stem cache)
** between calls, because rebuilding it made a recall about twice as dear.
** Several threads may now call the same object, so that state is kept in
** items on a pool: a call takes one (the owner makes a new one when the
** pool is empty), uses it alone, and gives it back. The lock is held only
** to take and to give, never during the call. The pool is a stack, so a
** single thread always gets back the item it just gave, warm.
**
** The pool knows nothing of what its items are: each begins with an
** a2m_pool_item, and its owner creates and frees them. A pool ends up
** holding as many items as calls ever ran at once; they live until the
** pool is destroyed.
*/
#ifndef A2M_RANK_POOL_H
#define A2M_RANK_POOL_H

#include <pthread.h>

/* The first member of a pooled item. */
typedef struct a2m_pool_item {
	struct a2m_pool_item *next;
} a2m_pool_item;

typedef struct a2m_pool {
	pthread_mutex_t lock;
	a2m_pool_item  *free;  /* the items not in use, last given first */
} a2m_pool;

/* Makes an empty pool. Returns 0, or -1 when the mutex cannot be made. */
int a2m_pool_init(a2m_pool *p);

/*
** Takes an item off the pool for the caller's use alone, or returns NULL
** when none is free (the caller then makes one). Thread-safe.
*/
a2m_pool_item *a2m_pool_take(a2m_pool *p);

/* Gives item back to the pool (NULL: nothing). Thread-safe; cannot fail. */
void a2m_pool_give(a2m_pool *p, a2m_pool_item *item);

/*
** Frees every item on the pool with free_item, and the pool's mutex. No
** item may be in use: the caller destroys a pool no thread is calling.
*/
void a2m_pool_destroy(a2m_pool *p, void (*free_item)(a2m_pool_item *item));

#endif
