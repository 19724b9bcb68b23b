/*
** memory_intern.c — reference-counted interned strings for the in-memory
** engine (see memory_intern.h).
**
** A chained hash table of nodes, each a string with its hash and count in
** front; a string handed out is the node's text, and the node is found
** again from it by subtracting the text's offset. The table doubles at
** load 1; failing to is harmless (longer chains), so only a new string's
** node can run out of memory.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/memory_intern.h"
#include "util/hash.h"

#define INITIAL_BUCKETS 16

typedef struct inode inode;
struct inode {
	inode   *next;
	uint64_t hash;
	size_t   refs;
	char     text[];
};

struct a2m_mintern {
	inode  **buckets;
	size_t   nbuckets;  /* a power of two */
	size_t   count;
};

static inode *node_of(const char *text)
{
	return (inode *)(void *)((char *)(uintptr_t)text - offsetof(inode, text));
}

a2m_mintern *a2m_mintern_new(void)
{
	a2m_mintern *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	if (!(t->buckets = calloc(INITIAL_BUCKETS, sizeof *t->buckets))) {
		free(t);
		return NULL;
	}
	t->nbuckets = INITIAL_BUCKETS;
	return t;
}

void a2m_mintern_free(a2m_mintern *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nbuckets; i++)
		for (inode *n = t->buckets[i], *next; n; n = next) {
			next = n->next;
			free(n);
		}
	free(t->buckets);
	free(t);
}

static void grow(a2m_mintern *t)
{
	size_t nb = t->nbuckets * 2;
	inode **b = calloc(nb, sizeof *b);
	if (!b)
		return;
	for (size_t i = 0; i < t->nbuckets; i++)
		for (inode *n = t->buckets[i], *next; n; n = next) {
			next = n->next;
			n->next = b[n->hash & (nb - 1)];
			b[n->hash & (nb - 1)] = n;
		}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = nb;
}

const char *a2m_mintern_get(a2m_mintern *t, const char *str, int *oom)
{
	if (!str)
		return NULL;
	size_t len = strlen(str);
	uint64_t h = a2m_hash_bytes(str, len);
	for (inode *n = t->buckets[h & (t->nbuckets - 1)]; n; n = n->next)
		if (n->hash == h && strcmp(n->text, str) == 0) {
			n->refs++;
			return n->text;
		}
	inode *n = malloc(sizeof *n + len + 1);
	if (!n) {
		*oom = 1;
		return NULL;
	}
	n->hash = h;
	n->refs = 1;
	memcpy(n->text, str, len + 1);
	if (t->count >= t->nbuckets)
		grow(t);
	n->next = t->buckets[h & (t->nbuckets - 1)];
	t->buckets[h & (t->nbuckets - 1)] = n;
	t->count++;
	return n->text;
}

void a2m_mintern_ref(const char *str)
{
	if (str)
		node_of(str)->refs++;
}

void a2m_mintern_put(a2m_mintern *t, const char *str)
{
	if (!str)
		return;
	inode *n = node_of(str);
	if (--n->refs > 0)
		return;
	inode **pp = &t->buckets[n->hash & (t->nbuckets - 1)];
	while (*pp && *pp != n)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = n->next;
		t->count--;
	}
	free(n);
}

unsigned long a2m_mintern_count(const a2m_mintern *t)
{
	return (unsigned long)t->count;
}
