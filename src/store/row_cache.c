/*
** row_cache.c — the records the SQLite engine read last, by seq (see
** row_cache.h).
**
** A fixed array of entries, chained into buckets by seq and into one list
** from most to least recently used; free entries wait on a list of their
** own. Nothing is allocated after creation but the records' own strings,
** which come from the row they were read from.
*/
#include <stdlib.h>
#include <string.h>

#include "store/row_cache.h"

#define NONE UINT32_MAX

typedef struct rentry {
	a2m_record rec;
	size_t     bytes;
	uint32_t   chain;          /* next in the bucket, or on the free list */
	uint32_t   newer, older;   /* the use list */
} rentry;

struct a2m_row_cache {
	rentry   *e;
	uint32_t  cap;
	uint32_t *bucket;          /* nbuckets heads */
	uint32_t  nbuckets;        /* a power of two */
	uint32_t  free;            /* the free list */
	uint32_t  newest, oldest;
	size_t    n, bytes, budget;
	uint64_t  version;
	int       versioned;       /* version is that of the records held */
};

/* What a record takes: its struct, strings and vectors. */
static size_t record_bytes(const a2m_record *r)
{
	const char *s[] = {r->id, r->content, r->role, r->metadata, r->group, r->tier,
			   r->owner, r->session, r->key, r->uri, r->media_type};
	size_t n = sizeof(rentry) + r->dims * sizeof(double) + r->gen_dims * sizeof(float);
	for (size_t i = 0; i < sizeof s / sizeof *s; i++)
		if (s[i])
			n += strlen(s[i]) + 1;
	return n;
}

static uint32_t bucket_of(const a2m_row_cache *c, int64_t seq)
{
	return (uint32_t)(((uint64_t)seq * 0x9E3779B97F4A7C15ULL) >> 32) & (c->nbuckets - 1);
}

a2m_row_cache *a2m_row_cache_new(size_t max_rows, size_t budget)
{
	if (max_rows == 0 || max_rows >= NONE / 2)
		return NULL;
	a2m_row_cache *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->cap = (uint32_t)max_rows;
	c->nbuckets = 1;
	while (c->nbuckets < 2 * c->cap)
		c->nbuckets *= 2;
	c->e = calloc(c->cap, sizeof *c->e);
	c->bucket = malloc(c->nbuckets * sizeof *c->bucket);
	if (!c->e || !c->bucket) {
		free(c->e);
		free(c->bucket);
		free(c);
		return NULL;
	}
	c->budget = budget;
	c->newest = c->oldest = NONE;
	for (uint32_t b = 0; b < c->nbuckets; b++)
		c->bucket[b] = NONE;
	for (uint32_t i = 0; i < c->cap; i++)
		c->e[i].chain = i + 1 < c->cap ? i + 1 : NONE;
	c->free = 0;
	return c;
}

void a2m_row_cache_free(a2m_row_cache *c)
{
	if (!c)
		return;
	a2m_row_cache_clear(c);
	free(c->e);
	free(c->bucket);
	free(c);
}

static void unlist(a2m_row_cache *c, uint32_t i)
{
	rentry *e = &c->e[i];
	if (e->newer != NONE)
		c->e[e->newer].older = e->older;
	else
		c->newest = e->older;
	if (e->older != NONE)
		c->e[e->older].newer = e->newer;
	else
		c->oldest = e->newer;
}

static void list_newest(a2m_row_cache *c, uint32_t i)
{
	rentry *e = &c->e[i];
	e->newer = NONE;
	e->older = c->newest;
	if (c->newest != NONE)
		c->e[c->newest].newer = i;
	c->newest = i;
	if (c->oldest == NONE)
		c->oldest = i;
}

/* Forgets entry i: out of its bucket and the use list, onto the free list. */
static void drop(a2m_row_cache *c, uint32_t i)
{
	rentry *e = &c->e[i];
	uint32_t *link = &c->bucket[bucket_of(c, e->rec.seq)];
	while (*link != i)
		link = &c->e[*link].chain;
	*link = e->chain;
	unlist(c, i);
	c->bytes -= e->bytes;
	c->n--;
	a2m_record_clear(&e->rec);
	e->chain = c->free;
	c->free = i;
}

void a2m_row_cache_clear(a2m_row_cache *c)
{
	while (c->oldest != NONE)
		drop(c, c->oldest);
	c->versioned = 0;
}

void a2m_row_cache_validate(a2m_row_cache *c, uint64_t version)
{
	if (c->versioned && c->version == version)
		return;
	a2m_row_cache_clear(c);
	c->version = version;
	c->versioned = 1;
}

static uint32_t find(const a2m_row_cache *c, int64_t seq)
{
	uint32_t i = c->bucket[bucket_of(c, seq)];
	while (i != NONE && c->e[i].rec.seq != seq)
		i = c->e[i].chain;
	return i;
}

const a2m_record *a2m_row_cache_get(a2m_row_cache *c, int64_t seq)
{
	uint32_t i = find(c, seq);
	if (i == NONE)
		return NULL;
	unlist(c, i);
	list_newest(c, i);
	return &c->e[i].rec;
}

const a2m_record *a2m_row_cache_take(a2m_row_cache *c, a2m_record *rec)
{
	size_t bytes = record_bytes(rec);
	if (bytes > c->budget / 4 || find(c, rec->seq) != NONE)
		return NULL;
	while (c->oldest != NONE && (c->free == NONE || c->bytes + bytes > c->budget))
		drop(c, c->oldest);
	uint32_t i = c->free;
	rentry *e = &c->e[i];
	c->free = e->chain;
	e->rec = *rec;
	memset(rec, 0, sizeof *rec);
	e->bytes = bytes;
	uint32_t b = bucket_of(c, e->rec.seq);
	e->chain = c->bucket[b];
	c->bucket[b] = i;
	list_newest(c, i);
	c->bytes += bytes;
	c->n++;
	return &e->rec;
}

void a2m_row_cache_forget(a2m_row_cache *c, int64_t seq)
{
	uint32_t i = find(c, seq);
	if (i != NONE)
		drop(c, i);
}

void a2m_row_cache_touch(a2m_row_cache *c, int64_t seq, int64_t add, int64_t at)
{
	uint32_t i = find(c, seq);
	if (i == NONE)
		return;
	a2m_record *r = &c->e[i].rec;
	r->access_count += add;
	if (at > r->accessed_at)
		r->accessed_at = at;
}

void a2m_row_cache_adopt(a2m_row_cache *c, uint64_t from, uint64_t to)
{
	if (!c->versioned || c->version != from) {
		a2m_row_cache_clear(c);
		return;
	}
	c->version = to;
}

size_t a2m_row_cache_count(const a2m_row_cache *c)
{
	return c->n;
}
