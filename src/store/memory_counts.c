/*
** memory_counts.c — records grouped by tier, by (tier, session) and by
** session for the in-memory engine (see memory_counts.h).
**
** One chained hash table holds the three kinds of group; a record is in
** one of each, and its a2m_mlink says where (at[kind]).
*/
#include <stdlib.h>
#include <string.h>

#include "store/memory_counts.h"
#include "util/hash.h"

#define INITIAL_BUCKETS 16

enum { BY_TIER = 0, BY_BUCKET = 1, BY_SESSION = 2, KINDS = 3 };

typedef struct group group;
struct group {
	group      *next;
	uint64_t    hash;
	int         kind;
	int         listed;  /* on the empty list, awaiting settle() */
	char       *tier;    /* NULL = no tier (or not part of the key) */
	char       *session; /* NULL = no session (or not part of the key) */
	a2m_mlink **members;
	size_t      n, cap;  /* cap never shrinks: rollback relinks into it */
};

struct a2m_mcounts {
	group **buckets;
	size_t  nbuckets;    /* a power of two */
	size_t  count;
	group **empty;       /* groups emptied inside a transaction */
	size_t  nempty, ecap;
};

/* A tag byte keeps NULL apart from every string, the NUL the two strings apart. */
static uint64_t hash_str(uint64_t h, const char *s)
{
	unsigned char tag = s ? 1 : 0;
	h = a2m_hash_more(h, &tag, 1);
	return s ? a2m_hash_more(h, s, strlen(s) + 1) : h;
}

static uint64_t key_hash(int kind, const char *tier, const char *session)
{
	unsigned char k = (unsigned char)kind;
	return hash_str(hash_str(a2m_hash_bytes(&k, 1), tier), session);
}

static int same(const char *a, const char *b)
{
	return (!a || !b) ? a == b : strcmp(a, b) == 0;
}

/* The key of kind for (tier, session): the fields that kind does not use are NULL. */
static void key_of(int kind, const char **tier, const char **session)
{
	if (kind == BY_TIER)
		*session = NULL;
	else if (kind == BY_SESSION)
		*tier = NULL;
}

static group *find(const a2m_mcounts *c, int kind, const char *tier, const char *session)
{
	key_of(kind, &tier, &session);
	uint64_t h = key_hash(kind, tier, session);
	for (group *g = c->buckets[h & (c->nbuckets - 1)]; g; g = g->next)
		if (g->hash == h && g->kind == kind && same(g->tier, tier) &&
		    same(g->session, session))
			return g;
	return NULL;
}

a2m_mcounts *a2m_mcounts_new(void)
{
	a2m_mcounts *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->buckets = calloc(INITIAL_BUCKETS, sizeof *c->buckets);
	if (!c->buckets) {
		free(c);
		return NULL;
	}
	c->nbuckets = INITIAL_BUCKETS;
	return c;
}

static void group_free(group *g)
{
	free(g->tier);
	free(g->session);
	free(g->members);
	free(g);
}

void a2m_mcounts_free(a2m_mcounts *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nbuckets; i++) {
		group *g = c->buckets[i];
		while (g) {
			group *next = g->next;
			group_free(g);
			g = next;
		}
	}
	free(c->buckets);
	free(c->empty);
	free(c);
}

/* Doubles the table; failing to is harmless (chains get longer). */
static void grow(a2m_mcounts *c)
{
	size_t nb = c->nbuckets * 2;
	group **b = calloc(nb, sizeof *b);
	if (!b)
		return;
	for (size_t i = 0; i < c->nbuckets; i++) {
		group *g = c->buckets[i];
		while (g) {
			group *next = g->next;
			g->next = b[g->hash & (nb - 1)];
			b[g->hash & (nb - 1)] = g;
			g = next;
		}
	}
	free(c->buckets);
	c->buckets = b;
	c->nbuckets = nb;
}

/* Finds or creates one group, with room for one more member. 0 or -1. */
static int reserve_one(a2m_mcounts *c, int kind, const char *tier, const char *session)
{
	group *g = find(c, kind, tier, session);
	if (!g) {
		key_of(kind, &tier, &session);
		g = calloc(1, sizeof *g);
		if (!g || (tier && !(g->tier = strdup(tier))) ||
		    (session && !(g->session = strdup(session)))) {
			if (g)
				group_free(g);
			return -1;
		}
		g->hash = key_hash(kind, tier, session);
		g->kind = kind;
		if (c->count >= c->nbuckets)
			grow(c);
		g->next = c->buckets[g->hash & (c->nbuckets - 1)];
		c->buckets[g->hash & (c->nbuckets - 1)] = g;
		c->count++;
	}
	if (g->n < g->cap)
		return 0;
	size_t cap = g->cap ? g->cap * 2 : 4;
	a2m_mlink **m = realloc(g->members, cap * sizeof *m);
	if (!m)
		return -1; /* an empty new group reads as no group; close() frees it */
	g->members = m;
	g->cap = cap;
	return 0;
}

int a2m_mcounts_reserve(a2m_mcounts *c, const char *tier, const char *session)
{
	for (int k = 0; k < KINDS; k++)
		if (reserve_one(c, k, tier, session) != 0)
			return -1;
	return 0;
}

static void link_kind(a2m_mcounts *c, int k, const char *tier, const char *session,
		      a2m_mlink *l)
{
	group *g = find(c, k, tier, session);
	if (!g || g->n >= g->cap)
		return; /* not reserved: a caller bug, but never a crash */
	l->at[k] = (uint32_t)g->n;
	g->members[g->n++] = l;
}

void a2m_mcounts_link(a2m_mcounts *c, const char *tier, const char *session, a2m_mlink *l)
{
	for (int k = 0; k < KINDS; k++)
		link_kind(c, k, tier, session, l);
}

static void unlink_free(a2m_mcounts *c, group *dead)
{
	group **pp = &c->buckets[dead->hash & (c->nbuckets - 1)];
	while (*pp && *pp != dead)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = dead->next;
		c->count--;
	}
	group_free(dead);
}

/* An emptied group: freed now, or listed for settle() inside a transaction. */
static void emptied(a2m_mcounts *c, group *g, int in_tx)
{
	if (!in_tx) {
		unlink_free(c, g);
		return;
	}
	if (g->listed)
		return;
	if (c->nempty == c->ecap) {
		size_t cap = c->ecap ? c->ecap * 2 : 16;
		group **e = realloc(c->empty, cap * sizeof *e);
		if (!e)
			return; /* it stays, empty, until a write fills it again */
		c->empty = e;
		c->ecap = cap;
	}
	g->listed = 1;
	c->empty[c->nempty++] = g;
}

static void unlink_kind(a2m_mcounts *c, int k, const char *tier, const char *session,
			a2m_mlink *l, int in_tx)
{
	group *g = find(c, k, tier, session);
	size_t at = l->at[k];
	if (!g || at >= g->n || g->members[at] != l)
		return;
	a2m_mlink *last = g->members[--g->n];
	g->members[at] = last;
	last->at[k] = (uint32_t)at;
	if (g->n == 0)
		emptied(c, g, in_tx);
}

void a2m_mcounts_unlink(a2m_mcounts *c, const char *tier, const char *session, a2m_mlink *l,
			int in_tx)
{
	for (int k = 0; k < KINDS; k++)
		unlink_kind(c, k, tier, session, l, in_tx);
}

void a2m_mcounts_move(a2m_mcounts *c, const char *old_tier, const char *old_session,
		      a2m_mlink *old, const char *tier, const char *session, a2m_mlink *l,
		      int in_tx)
{
	for (int k = 0; k < KINDS; k++) {
		const char *ot = old_tier, *os = old_session, *nt = tier, *ns = session;
		key_of(k, &ot, &os);
		key_of(k, &nt, &ns);
		if (same(ot, nt) && same(os, ns)) {
			/* The same group: l takes old's place in it. */
			group *g = old == l ? NULL : find(c, k, ot, os);
			size_t at = old->at[k];
			if (g && at < g->n && g->members[at] == old) {
				g->members[at] = l;
				l->at[k] = (uint32_t)at;
			}
			continue;
		}
		unlink_kind(c, k, old_tier, old_session, old, in_tx);
		link_kind(c, k, tier, session, l);
	}
}

void a2m_mcounts_settle(a2m_mcounts *c)
{
	for (size_t i = 0; i < c->nempty; i++) {
		group *g = c->empty[i];
		g->listed = 0;
		if (g->n == 0)
			unlink_free(c, g);
	}
	c->nempty = 0;
}

a2m_mlink *const *a2m_mcounts_members(const a2m_mcounts *c, int by_tier, const char *tier,
				      int by_session, const char *session, size_t *n)
{
	int kind = by_tier ? (by_session ? BY_BUCKET : BY_TIER) : BY_SESSION;
	group *g = (by_tier || by_session) ? find(c, kind, tier, session) : NULL;
	*n = g ? g->n : 0;
	return g && g->n ? g->members : NULL;
}

int a2m_mcounts_each(const a2m_mcounts *c, a2m_mcounts_visit visit, void *ctx)
{
	for (size_t i = 0; i < c->nbuckets; i++)
		for (const group *g = c->buckets[i]; g; g = g->next) {
			int rc = visit(ctx, g->kind != BY_SESSION, g->tier, g->kind != BY_TIER,
				       g->session, g->n);
			if (rc)
				return rc;
		}
	return 0;
}
