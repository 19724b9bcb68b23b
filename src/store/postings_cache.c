/*
** postings_cache.c — a term's postings kept between queries (see
** postings_cache.h): a chained hash table of entries on a doubly linked
** list, most recently used first.
**
** Lending (a2m_pcache_lend) pins an entry for the current lending period:
** each entry notes the period it was last lent in, and eviction passes by
** the entries of the current one, so the cache may exceed its budget until
** the period ends (a2m_pcache_next_period). Clearing drops pinned entries
** too: whoever lends must not clear while its loans are out.
*/
#include <stdlib.h>
#include <string.h>

#include "store/postings_cache.h"
#include "util/hash.h"

typedef struct pentry pentry;
struct pentry {
	pentry       *next;         /* hash chain */
	pentry       *newer, *older; /* recency list */
	uint64_t      hash;
	a2m_posting *v;
	size_t        n;
	a2m_tf_bound *blocks;       /* per block of A2M_POSTINGS_BLOCK; NULL: n fits one, or out of order */
	a2m_tf_bound  all;
	int           sorted;       /* v in ascending seq: lent with its bounds */
	uint64_t      lent;         /* the period it was last lent in; 0: never */
	uint64_t      stamp;        /* its bucket's stamp when put (stamped caches) */
	size_t        cost;         /* what it counts against the budget */
	size_t        floor;        /* lazy: its cost at put or last shed (cost - floor: decoded since) */
	void         *lazy;         /* a list decoded a block at a time (ops), or NULL */
	const a2m_pcache_lazy_ops *ops;
	pentry       *tnext;        /* transient (lazy, too big to keep): the next one; */
	int           transient;    /* not on the recency list, not counted, freed with its period */
	uint32_t      len;
	char          term[];
};

/*
** Buckets to start with; the table doubles whenever it holds more entries
** than buckets. It was fixed at 1 024, and a store of 10 000 records fills
** the cache with tens of thousands of terms: chains of dozens, walked
** entry by entry on every look-up (3% of a recall in perf).
*/
#define FIRST_BUCKETS 1024  /* a power of two */

/* What an entry counts against the budget, in bytes: its postings, and a
** little for itself, so that terms no record holds cannot pile up for free. */
#define ENTRY_BYTES 64
#define COST(n) ((n) * sizeof(a2m_posting) + ENTRY_BYTES)

/*
** The most one entry may hold: half the budget. At 10M records the
** commonest word's list, read a block at a time, is 14 MB of bytes and
** 4 MB of tables: with a quarter (16 MiB of 64) it was never kept, and
** every recall holding it read it again from SQLite (405 of the 870 MB
** that 200 recalls read; 587 MB in all with a half).
*/
#define ENTRY_MOST(c) ((c)->budget / 2)

struct a2m_pcache {
	pentry **buckets;
	size_t   nbuckets;       /* a power of two */
	size_t   count;          /* entries held */
	pentry  *newest, *oldest;
	pentry  *transients;     /* lazy entries too big to keep: this period's loans */
	size_t   used, budget;   /* bytes of the entries held (COST), and the most allowed */
	size_t   sheddable;      /* of used: what listed lazy entries decoded since put or shed */
	uint64_t version;
	int      has_version;
	uint64_t period;         /* the lending period; entries lent in it stay */
	const uint64_t *stamps;  /* per-bucket stamps (a2m_pcache_stamps), or NULL */
	size_t   nstamps;
};

a2m_pcache *a2m_pcache_new(size_t budget)
{
	a2m_pcache *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	if (!(c->buckets = calloc(FIRST_BUCKETS, sizeof *c->buckets))) {
		free(c);
		return NULL;
	}
	c->nbuckets = FIRST_BUCKETS;
	c->budget = budget;
	c->period = 1;
	return c;
}

static void unlist(a2m_pcache *c, pentry *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		c->newest = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		c->oldest = e->newer;
	e->newer = e->older = NULL;
}

static void list_first(a2m_pcache *c, pentry *e)
{
	e->older = c->newest;
	e->newer = NULL;
	if (c->newest)
		c->newest->newer = e;
	c->newest = e;
	if (!c->oldest)
		c->oldest = e;
}

/* What lazy entry e decoded since it was put or shed, counted in c->sheddable while listed. */
static size_t sheddable(const pentry *e)
{
	return e->lazy && !e->transient && e->cost > e->floor ? e->cost - e->floor : 0;
}

static void drop(a2m_pcache *c, pentry *e)
{
	pentry **pp = &c->buckets[e->hash & (c->nbuckets - 1)];
	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	if (e->transient) {
		for (pp = &c->transients; *pp != e; pp = &(*pp)->tnext)
			;
		*pp = e->tnext;
	} else {
		unlist(c, e);
		c->used -= e->cost;
		c->sheddable -= sheddable(e);
	}
	c->count--;
	if (e->lazy)
		e->ops->free(e->lazy);
	free(e->v);
	free(e->blocks);
	free(e);
}

/* Doubles the buckets; without memory for them the chains just grow. */
static void grow(a2m_pcache *c)
{
	size_t n = c->nbuckets * 2;
	pentry **b = calloc(n, sizeof *b);
	if (!b)
		return;
	for (size_t i = 0; i < c->nbuckets; i++)
		for (pentry *e = c->buckets[i], *next; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	free(c->buckets);
	c->buckets = b;
	c->nbuckets = n;
}

void a2m_pcache_clear(a2m_pcache *c)
{
	while (c && c->oldest)
		drop(c, c->oldest);
	while (c && c->transients)
		drop(c, c->transients);
}

void a2m_pcache_free(a2m_pcache *c)
{
	a2m_pcache_clear(c);
	if (c)
		free(c->buckets);
	free(c);
}

void a2m_pcache_adopt(a2m_pcache *c, uint64_t from, uint64_t to)
{
	if (!c->has_version)
		return;  /* emptied by a write: the next validate stamps it */
	if (c->version != from) {
		a2m_pcache_clear(c);
		return;
	}
	c->version = to;
}

void a2m_pcache_validate(a2m_pcache *c, uint64_t version)
{
	if (c->has_version && c->version == version)
		return;
	a2m_pcache_clear(c);
	c->version = version;
	c->has_version = 1;
}

void a2m_pcache_stamps(a2m_pcache *c, const uint64_t *stamps, size_t n)
{
	c->stamps = n ? stamps : NULL;
	c->nstamps = n;
}

size_t a2m_pcache_bucket(const char *term, size_t len, size_t n)
{
	return (size_t)(a2m_hash_bytes(term, len) & (n - 1));
}

/* The stamp an entry of hash h must carry now (0 when the cache is not stamped). */
static uint64_t stamp_of(const a2m_pcache *c, uint64_t h)
{
	return c->stamps ? c->stamps[h & (c->nstamps - 1)] : 0;
}

/*
** The entry of term, or NULL. In a stamped cache an entry written over
** since it was put (its bucket's stamp moved) is dropped here: it cannot
** be lent in this period (it was checked against the same stamps when it
** was), so dropping it is safe.
*/
static pentry *find(a2m_pcache *c, const char *term, size_t len, uint64_t h)
{
	for (pentry *e = c->buckets[h & (c->nbuckets - 1)]; e; e = e->next)
		if (e->hash == h && e->len == len && memcmp(e->term, term, len) == 0) {
			if (c->stamps && e->stamp != stamp_of(c, h)) {
				drop(c, e);
				return NULL;
			}
			return e;
		}
	return NULL;
}

/* Lets lazy entry e (listed, not lent in this period) go of the blocks it decoded. */
static void shed_entry(a2m_pcache *c, pentry *e)
{
	c->sheddable -= sheddable(e);
	e->ops->shed(e->lazy);
	size_t cost = e->ops->cost(e->lazy) + ENTRY_BYTES;
	c->used = c->used - e->cost + cost;
	e->cost = e->floor = cost;
}

/*
** Makes room for need more bytes: first the blocks lazy entries decoded,
** least recently used first, then whole entries, least recently used
** first, passing by those lent in the current period, and keep. A list
** evicted is read again from SQLite on its next use (a look-up per
** segment, 100k instructions at 1M records, and its blocks decoded again),
** where a list shed only decodes again the blocks that use asks for: at
** 1M records, 300 recalls read again 520 of the 1 551 lists the first
** 300 had read, every one of them from the cache once decoded blocks went
** first.
*/
static void make_room(a2m_pcache *c, size_t need, const pentry *keep)
{
	for (pentry *old = c->oldest; old && c->sheddable && c->used + need > c->budget;
	     old = old->newer)
		if (sheddable(old) && old->lent != c->period && old != keep && old->ops->shed)
			shed_entry(c, old);
	for (pentry *old = c->oldest; old && c->used + need > c->budget;) {
		pentry *newer = old->newer;
		if (old->lent != c->period && old != keep)
			drop(c, old);
		old = newer;
	}
}

size_t a2m_pcache_entry_most(const a2m_pcache *c)
{
	/*
	** A quarter, though an entry may hold half: the commonest word's bytes
	** and tables are kept, but probes do not fill its blocks past a
	** quarter (each filled block faulted a page of its postings in: 3 975
	** faults a 10M recall with half, against 3 544 with a quarter).
	*/
	return c->budget / 4 > ENTRY_BYTES ? c->budget / 4 - ENTRY_BYTES : 0;
}

void a2m_pcache_budget(a2m_pcache *c, size_t budget)
{
	c->budget = budget;
	make_room(c, 0, NULL);
}

size_t a2m_pcache_used(const a2m_pcache *c, size_t *budget)
{
	*budget = c->budget;
	return c->used;
}

/*
** Brings a lazy entry's cost up to what it holds now (blocks decoded
** since), making room for what it grew by. One grown past what an entry
** may hold with nothing it could shed (decoded whole: a complete read of
** a frequent word) is not kept past the period: it becomes transient, as
** if put so (a2m_pcache_put_lazy), instead of pushing every other out.
*/
static void recost(a2m_pcache *c, pentry *e)
{
	size_t cost = e->ops->cost(e->lazy) + ENTRY_BYTES;
	c->sheddable -= sheddable(e);
	if (!e->transient) {
		c->used -= e->cost;
		if (cost > ENTRY_MOST(c) && (!e->ops->shed || e->ops->whole(e->lazy))) {
			unlist(c, e);
			e->transient = 1;
			e->lent = c->period;
			e->tnext = c->transients;
			c->transients = e;
		} else {
			make_room(c, cost, e);
			c->used += cost;
		}
	}
	e->cost = cost;
	c->sheddable += sheddable(e);
}

/* Makes e the most recently used (a transient entry is on no list). */
static void touch(a2m_pcache *c, pentry *e)
{
	if (!e->transient) {
		unlist(c, e);
		list_first(c, e);
	}
}

/*
** A lazy entry's postings, every block decoded: 0, or -1 when they cannot
** be (the caller reads the term again the ordinary way, which reports the
** corrupt bytes). Its cost is brought up to date.
*/
static int whole(a2m_pcache *c, pentry *e, a2m_postings_lent *l)
{
	int rc = e->ops->fill_all(e->lazy);
	e->ops->lend(e->lazy, l);
	recost(c, e);
	return rc;
}

int a2m_pcache_visit(a2m_pcache *c, const char *term, size_t len, a2m_posting_visit visit,
		     void *ctx, int *rc)
{
	pentry *e = find(c, term, len, a2m_hash_bytes(term, len));
	a2m_postings_lent l = {.v = e ? e->v : NULL, .n = e ? e->n : 0};
	*rc = 0;
	if (!e || (e->lazy && whole(c, e, &l) != 0))
		return 0;
	touch(c, e);
	for (size_t i = 0; i < l.n; i++) {
		int r = visit(l.v[i].seq, l.v[i].tf, l.v[i].dl, ctx);
		if (r < 0) {
			*rc = r;
			break;
		}
	}
	return 1;
}

int a2m_pcache_lend(a2m_pcache *c, const char *term, size_t len, const a2m_posting **v,
		    size_t *n)
{
	pentry *e = find(c, term, len, a2m_hash_bytes(term, len));
	a2m_postings_lent l = {.v = e ? e->v : NULL, .n = e ? e->n : 0};
	if (!e || (e->lazy && whole(c, e, &l) != 0))
		return 0;
	touch(c, e);
	e->lent = c->period;
	*v = l.v;
	*n = l.n;
	return 1;
}

int a2m_pcache_lend_bounds(a2m_pcache *c, const char *term, size_t len,
			   a2m_postings_lent *out)
{
	pentry *e = find(c, term, len, a2m_hash_bytes(term, len));
	if (!e)
		return 0;
	if (e->lazy) {
		touch(c, e);
		/*
		** A list kept between queries gathers the blocks each decoded (16
		** bytes a posting, several times its bytes): once they weigh more
		** than an entry may, they are let go before its first loan of the
		** period, the list's bytes kept.
		*/
		if (e->lent != c->period && !e->transient && e->cost > ENTRY_MOST(c) && e->ops->shed)
			shed_entry(c, e);
		e->lent = c->period;
		e->ops->lend(e->lazy, out);
		recost(c, e);
		return 1;
	}
	if (!e->sorted)
		return -1;
	unlist(c, e);
	list_first(c, e);
	e->lent = c->period;
	memset(out, 0, sizeof *out);
	out->v = e->v;
	out->n = e->n;
	out->blocks = e->blocks;
	out->all = e->all;
	return 1;
}

/*
** Sets e's bounds from its postings (store.h a2m_tf_bound), when they are
** in ascending seq: its list's, and per block once it holds more than one.
** Without memory for the blocks' it is kept as out of order (lent without).
*/
static void bound_entry(pentry *e)
{
	e->sorted = 1;
	e->blocks = NULL;
	a2m_tf_bound_empty(&e->all);
	for (size_t i = 1; i < e->n; i++)
		if (e->v[i].seq <= e->v[i - 1].seq) {
			e->sorted = 0;
			return;
		}
	size_t nb = (e->n + A2M_POSTINGS_BLOCK - 1) / A2M_POSTINGS_BLOCK;
	if (nb > 1 && !(e->blocks = malloc(nb * sizeof *e->blocks))) {
		e->sorted = 0;
		return;
	}
	for (size_t b = 0; b < nb && e->blocks; b++)
		a2m_tf_bound_empty(&e->blocks[b]);
	for (size_t i = 0; i < e->n; i++) {
		a2m_tf_bound_add(&e->all, e->v[i].tf, e->v[i].dl);
		if (e->blocks)
			a2m_tf_bound_add(&e->blocks[i / A2M_POSTINGS_BLOCK], e->v[i].tf, e->v[i].dl);
	}
}

void a2m_pcache_next_period(a2m_pcache *c)
{
	c->period++;
	/* The loans of the period that ended are over: its transient entries go. */
	while (c->transients)
		drop(c, c->transients);
}

/*
** Makes room for cost (least recently used first, passing by what is lent
** in this period) and links e, filled by the caller but for its links.
*/
static void link_entry(a2m_pcache *c, pentry *e, const char *term, size_t len, uint64_t h,
		       size_t cost)
{
	make_room(c, cost, NULL);
	memcpy(e->term, term, len);
	e->len = (uint32_t)len;
	e->hash = h;
	e->stamp = stamp_of(c, h);
	e->cost = e->floor = cost;
	e->lent = 0;
	e->transient = 0;
	e->tnext = NULL;
	e->next = c->buckets[h & (c->nbuckets - 1)];
	c->buckets[h & (c->nbuckets - 1)] = e;
	list_first(c, e);
	c->used += cost;
	if (++c->count > c->nbuckets)
		grow(c);
}

void a2m_pcache_put(a2m_pcache *c, const char *term, size_t len, const a2m_posting *v,
		    size_t n)
{
	uint64_t h = a2m_hash_bytes(term, len);
	if (COST(n) > ENTRY_MOST(c) || len > UINT32_MAX || find(c, term, len, h))
		return;
	pentry *e = malloc(sizeof *e + len);
	a2m_posting *copy = n ? malloc(n * sizeof *copy) : NULL;
	if (!e || (n && !copy)) {
		free(e);
		free(copy);
		return;
	}
	if (n)
		memcpy(copy, v, n * sizeof *copy);
	e->v = copy;
	e->n = n;
	e->lazy = NULL;
	e->ops = NULL;
	bound_entry(e);
	link_entry(c, e, term, len, h, COST(n));
}

int a2m_pcache_put_lazy(a2m_pcache *c, const char *term, size_t len, void *obj,
			const a2m_pcache_lazy_ops *ops)
{
	uint64_t h = a2m_hash_bytes(term, len);
	size_t cost = ops->cost(obj) + ENTRY_BYTES;
	pentry *e = NULL;
	if (len > UINT32_MAX || find(c, term, len, h) || !(e = malloc(sizeof *e + len))) {
		ops->free(obj);
		return 0;
	}
	e->v = NULL;
	e->n = 0;
	e->blocks = NULL;
	e->sorted = 1;
	e->lazy = obj;
	e->ops = ops;
	a2m_tf_bound_empty(&e->all);
	if (cost <= ENTRY_MOST(c)) {
		link_entry(c, e, term, len, h, cost);
		return 1;
	}
	/* Too big to keep: lent for this period only, then freed. */
	memcpy(e->term, term, len);
	e->len = (uint32_t)len;
	e->hash = h;
	e->stamp = stamp_of(c, h);
	e->cost = e->floor = cost;
	e->lent = c->period;
	e->transient = 1;
	e->newer = e->older = NULL;
	e->tnext = c->transients;
	c->transients = e;
	e->next = c->buckets[h & (c->nbuckets - 1)];
	c->buckets[h & (c->nbuckets - 1)] = e;
	if (++c->count > c->nbuckets)
		grow(c);
	return 2;
}
