/*
** pool.c — a mutex-guarded stack of per-call state (see pool.h).
*/
#include <stddef.h>

#include "rank/pool.h"

int a2m_pool_init(a2m_pool *p)
{
	p->free = NULL;
	return pthread_mutex_init(&p->lock, NULL) == 0 ? 0 : -1;
}

a2m_pool_item *a2m_pool_take(a2m_pool *p)
{
	pthread_mutex_lock(&p->lock);
	a2m_pool_item *item = p->free;
	if (item)
		p->free = item->next;
	pthread_mutex_unlock(&p->lock);
	if (item)
		item->next = NULL;
	return item;
}

void a2m_pool_give(a2m_pool *p, a2m_pool_item *item)
{
	if (!item)
		return;
	pthread_mutex_lock(&p->lock);
	item->next = p->free;
	p->free = item;
	pthread_mutex_unlock(&p->lock);
}

void a2m_pool_destroy(a2m_pool *p, void (*free_item)(a2m_pool_item *item))
{
	a2m_pool_item *item = p->free;
	while (item) {
		a2m_pool_item *next = item->next;
		free_item(item);
		item = next;
	}
	p->free = NULL;
	pthread_mutex_destroy(&p->lock);
}
