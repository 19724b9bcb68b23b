/*
** memory_history.c — the in-memory engine's revision history (store.h,
** history_put, history_visit; x-history in docs/PROTOCOL.md): the earlier
** revisions of each keyed record, by record id, kept in the transaction of
** the write that superseded them and undone with it.
**
** A record's revisions are an array of pointers, oldest first, to
** revisions that never change once made. A write never edits an array in
** place: it builds the next one and, inside a transaction, notes the step
** (the array it replaced, the revision it added, the revisions it let
** go), so that commit frees what no one can reach any more and rollback
** puts every array back, newest step first, without allocating. Remove
** unlinks a record's whole list the same way.
*/
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/memory_internal.h"
#include "util/grow.h"
#include "util/hash.h"

#define INITIAL_BUCKETS 64

/* One kept revision; its strings live in the same block. */
typedef struct hrev {
	int64_t revision, created_at, superseded_at;
	char   *content, *role, *metadata, *owner;
} hrev;

/* A record's revisions, oldest first. */
typedef struct hlist {
	char         *id;
	uint64_t      hash;
	hrev        **v;
	size_t        n;
	struct hlist *next;
} hlist;

/* One change of the open transaction, to undo or to settle. */
typedef struct hstep {
	int     drop;      /* remove() unlinked list; else a put replaced its array */
	int     created;   /* the put made list */
	hlist  *list;
	hrev  **old_v;     /* put: the array it replaced (the revisions stay in use) */
	size_t  old_n;
	hrev   *added;     /* put: the revision it made, NULL if none */
	hrev  **pruned;    /* put: what it let go (freed at commit) */
	size_t  npruned;
} hstep;

struct a2m_mhistory {
	hlist **buckets;
	size_t  nbuckets, count;
	hstep  *steps;
	size_t  nsteps, cap;
};

a2m_mhistory *a2m_mhistory_new(void)
{
	a2m_mhistory *h = calloc(1, sizeof *h);
	if (h && !(h->buckets = calloc(INITIAL_BUCKETS, sizeof *h->buckets))) {
		free(h);
		return NULL;
	}
	if (h)
		h->nbuckets = INITIAL_BUCKETS;
	return h;
}

static void list_free(hlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	free(l->id);
	free(l);
}

void a2m_mhistory_free(a2m_mhistory *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->nbuckets; i++)
		for (hlist *l = h->buckets[i], *next; l; l = next) {
			next = l->next;
			list_free(l);
		}
	free(h->buckets);
	free(h->steps);
	free(h);
}

static hlist **slot_of(a2m_mhistory *h, uint64_t hash)
{
	return &h->buckets[(size_t)(hash & (h->nbuckets - 1))];
}

static hlist *find(a2m_mhistory *h, const char *id, uint64_t hash)
{
	for (hlist *l = *slot_of(h, hash); l; l = l->next)
		if (l->hash == hash && strcmp(l->id, id) == 0)
			return l;
	return NULL;
}

/* Links l in; growing the buckets is optional (chains just get longer). */
static void link_list(a2m_mhistory *h, hlist *l)
{
	if (h->count >= h->nbuckets) {
		size_t n = h->nbuckets * 2;
		hlist **b = calloc(n, sizeof *b);
		if (b) {
			for (size_t i = 0; i < h->nbuckets; i++)
				for (hlist *x = h->buckets[i], *next; x; x = next) {
					next = x->next;
					x->next = b[x->hash & (n - 1)];
					b[x->hash & (n - 1)] = x;
				}
			free(h->buckets);
			h->buckets = b;
			h->nbuckets = n;
		}
	}
	hlist **at = slot_of(h, l->hash);
	l->next = *at;
	*at = l;
	h->count++;
}

static void unlink_list(a2m_mhistory *h, hlist *l)
{
	for (hlist **pp = slot_of(h, l->hash); *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			l->next = NULL;
			h->count--;
			return;
		}
}

/* Room for one more step, inside a transaction. 0, or -1. */
static int reserve(mstore *s)
{
	a2m_mhistory *h = s->history;
	if (!s->in_tx || h->nsteps < h->cap)
		return 0;
	return a2m_grow((void **)&h->steps, &h->cap, h->nsteps + 1, sizeof *h->steps);
}

int a2m_mem_history_reserve(mstore *s)
{
	return reserve(s);
}

/* A revision copied into one block; NULL when memory runs out. */
static hrev *rev_new(const a2m_revision *r)
{
	const char *from[4] = {r->content ? r->content : "", r->role, r->metadata, r->owner};
	size_t len[4], total = sizeof(hrev);
	for (int i = 0; i < 4; i++) {
		len[i] = from[i] ? strlen(from[i]) + 1 : 0;
		total += len[i];
	}
	hrev *v = malloc(total);
	if (!v)
		return NULL;
	v->revision = r->revision;
	v->created_at = r->created_at;
	v->superseded_at = r->superseded_at;
	char *p = (char *)(v + 1);
	char **to[4] = {&v->content, &v->role, &v->metadata, &v->owner};
	for (int i = 0; i < 4; i++) {
		*to[i] = len[i] ? memcpy(p, from[i], len[i]) : NULL;
		p += len[i];
	}
	return v;
}

int a2m_mem_history_put(a2m_store *base, const a2m_revision *rev, size_t keep)
{
	mstore *s = (mstore *)base;
	a2m_mhistory *h = s->history;
	if (!rev || !rev->id)
		return a2m_store_fail(base, "history_put: no record id");
	if (keep < 1)
		keep = 1;
	uint64_t hash = a2m_hash_str(rev->id);
	hlist *l = find(h, rev->id, hash), *made = NULL;
	size_t old_n = l ? l->n : 0;
	/* Everything that can fail first: the step, the list, the arrays. */
	hrev *added = rev_new(rev);
	hrev **v = malloc((old_n + 1) * sizeof *v);
	hrev **pruned = malloc((old_n + 1) * sizeof *pruned);
	if (!l && (made = calloc(1, sizeof *made)) && !(made->id = strdup(rev->id))) {
		free(made);
		made = NULL;
	}
	if (!added || !v || !pruned || (!l && !made) || reserve(s) != 0) {
		free(added);
		free(v);
		free(pruned);
		if (made)
			free(made->id);
		free(made);
		return a2m_store_fail(base, "history_put: out of memory");
	}
	if (made) {
		made->hash = hash;
		link_list(h, made);
		l = made;
	}
	/* The next array: the old revisions in order, the new one where its
	** number puts it, a revision of the same number let go. */
	size_t n = 0, np = 0;
	int placed = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i]->revision == added->revision) {
			pruned[np++] = l->v[i];
			continue;
		}
		if (!placed && l->v[i]->revision > added->revision) {
			v[n++] = added;
			placed = 1;
		}
		v[n++] = l->v[i];
	}
	if (!placed)
		v[n++] = added;
	/* Oldest beyond keep go. */
	size_t cut = n > keep ? n - keep : 0;
	for (size_t i = 0; i < cut; i++) {
		if (v[i] == added) {
			free(added);   /* older than all it keeps: never kept at all */
			added = NULL;
		} else {
			pruned[np++] = v[i];
		}
	}
	memmove(v, v + cut, (n - cut) * sizeof *v);
	n -= cut;
	hrev **old_v = l->v;
	l->v = v;
	l->n = n;
	if (s->in_tx) {
		h->steps[h->nsteps++] = (hstep){.created = made != NULL, .list = l, .old_v = old_v,
						.old_n = old_n, .added = added, .pruned = pruned,
						.npruned = np};
		return 0;
	}
	for (size_t i = 0; i < np; i++)
		free(pruned[i]);
	free(pruned);
	free(old_v);
	return 0;
}

void a2m_mem_history_drop(mstore *s, const char *id)
{
	a2m_mhistory *h = s->history;
	hlist *l = id ? find(h, id, a2m_hash_str(id)) : NULL;
	if (!l)
		return;
	unlink_list(h, l);
	if (s->in_tx)
		h->steps[h->nsteps++] = (hstep){.drop = 1, .list = l};  /* room reserved */
	else
		list_free(l);
}

void a2m_mem_history_commit(mstore *s)
{
	a2m_mhistory *h = s->history;
	for (size_t i = 0; i < h->nsteps; i++) {
		hstep *st = &h->steps[i];
		if (st->drop) {
			list_free(st->list);
			continue;
		}
		for (size_t k = 0; k < st->npruned; k++)
			free(st->pruned[k]);
		free(st->pruned);
		free(st->old_v);
	}
	h->nsteps = 0;
}

void a2m_mem_history_rollback(mstore *s)
{
	a2m_mhistory *h = s->history;
	for (size_t i = h->nsteps; i-- > 0;) {
		hstep *st = &h->steps[i];
		hlist *l = st->list;
		if (st->drop) {
			link_list(h, l);
			continue;
		}
		free(l->v);
		l->v = st->old_v;
		l->n = st->old_n;
		free(st->added);
		free(st->pruned);
		if (st->created) {
			unlink_list(h, l);
			list_free(l);
		}
	}
	h->nsteps = 0;
}

int a2m_mhistory_each(const a2m_mhistory *h, a2m_revision_visit visit, void *ctx)
{
	for (size_t b = 0; b < h->nbuckets; b++)
		for (const hlist *l = h->buckets[b]; l; l = l->next)
			for (size_t i = 0; i < l->n; i++) {
				const hrev *r = l->v[i];
				a2m_revision out = {.id = l->id, .revision = r->revision,
						    .content = r->content, .role = r->role,
						    .metadata = r->metadata, .owner = r->owner,
						    .created_at = r->created_at,
						    .superseded_at = r->superseded_at};
				int rc = visit(&out, ctx);
				if (rc)
					return rc < 0 ? rc : 0;
			}
	return 0;
}

int a2m_mem_history_visit(a2m_store *base, const char *id, size_t max,
			  a2m_revision_visit visit, void *ctx)
{
	mstore *s = (mstore *)base;
	hlist *l = id ? find(s->history, id, a2m_hash_str(id)) : NULL;
	for (size_t i = l ? l->n : 0, seen = 0; i-- > 0 && (!max || seen < max); seen++) {
		const hrev *r = l->v[i];
		a2m_revision out = {.id = l->id, .revision = r->revision, .content = r->content,
				    .role = r->role, .metadata = r->metadata, .owner = r->owner,
				    .created_at = r->created_at, .superseded_at = r->superseded_at};
		int rc = visit(&out, ctx);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	return 0;
}
