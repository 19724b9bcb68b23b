/*
** memory_intern.c — reference-counted interned names for the in-memory
** engine (see memory_intern.h).
**
** A chained hash table of nodes, each a combination with its hash and
** count, its strings copied after it in the same allocation. A
** combination handed out is the node's first member, so the node is the
** same address. The table doubles at load 1; failing to is harmless
** (longer chains), so only a new combination's node can run out of memory.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/memory_intern.h"
#include "util/hash.h"
#include "util/text.h"

#define INITIAL_BUCKETS 16

typedef struct inode inode;
struct inode {
	a2m_mnames names;  /* first: a combination handed out is its node */
	inode     *next;
	uint64_t   hash;
	size_t     refs;
	char       text[];
};

struct a2m_mintern {
	inode  **buckets;
	size_t   nbuckets;  /* a power of two */
	size_t   count;
};

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

/* A tag byte keeps NULL apart from every string, the NUL the strings apart. */
static uint64_t hash_field(uint64_t h, const char *s)
{
	unsigned char tag = s ? 1 : 0;
	h = a2m_hash_more(h, &tag, 1);
	return s ? a2m_hash_more(h, s, strlen(s) + 1) : h;
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

/* Copies s (if any) to *at, advancing it. */
static const char *copy_field(char **at, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *p = memcpy(*at, s, n);
	*at += n;
	return p;
}

const a2m_mnames *a2m_mintern_get(a2m_mintern *t, const a2m_mnames *w)
{
	uint64_t h = hash_field(hash_field(hash_field(hash_field(A2M_HASH_SEED, w->tier),
						      w->session), w->role), w->owner);
	for (inode *n = t->buckets[h & (t->nbuckets - 1)]; n; n = n->next)
		if (n->hash == h && a2m_str_same(n->names.tier, w->tier) &&
		    a2m_str_same(n->names.session, w->session) && a2m_str_same(n->names.role, w->role) &&
		    a2m_str_same(n->names.owner, w->owner)) {
			n->refs++;
			return &n->names;
		}
	size_t len = (w->tier ? strlen(w->tier) + 1 : 0) + (w->session ? strlen(w->session) + 1 : 0) +
		     (w->role ? strlen(w->role) + 1 : 0) + (w->owner ? strlen(w->owner) + 1 : 0);
	inode *n = malloc(sizeof *n + len);
	if (!n)
		return NULL;
	char *at = n->text;
	n->names.tier = copy_field(&at, w->tier);
	n->names.session = copy_field(&at, w->session);
	n->names.role = copy_field(&at, w->role);
	n->names.owner = copy_field(&at, w->owner);
	n->hash = h;
	n->refs = 1;
	if (t->count >= t->nbuckets)
		grow(t);
	n->next = t->buckets[h & (t->nbuckets - 1)];
	t->buckets[h & (t->nbuckets - 1)] = n;
	t->count++;
	return &n->names;
}

void a2m_mintern_put(a2m_mintern *t, const a2m_mnames *names)
{
	if (!names)
		return;
	inode *n = (inode *)(uintptr_t)names;
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
