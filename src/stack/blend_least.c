/*
** blend_least.c — the least share of its relevance recall's blend leaves
** any record at a given now (a2m_stack_blend_least): the floor the
** scorer's pruning takes (a2m_rank_query.floor; docs/RANKING.md §5,
** "The blend's floor").
**
** A record's score is its relevance times (w_rel + w_rec × recency + w_sal
** × s/(1+s)) / (w_rel + w_rec + w_sal). The salience term is never below 0;
** recency is 2^(-age / half-life) by the record's tier (1 when the tier
** does not decay), least for the tier's oldest record. So the factor of
** every record is at least the least, over the tiers, of the oldest
** one's: with each decaying tier's oldest created_at (the first record of
** a scan of the tier in (created_at, seq) order: one step of an index in
** SQLite and PostgreSQL, a sort of a small tier's members or the first
** few of a big one in memory) that is a true bound, and on a store of
** recent records, or of records in tiers that do not decay, it is close
** to every record's factor, where the relevance share alone (0.75 with
** the default blend) leaves a quarter of the score range to the walk for
** nothing. One old record in a decaying tier brings it back near the
** share: a bound per record would not, and is the next step. The same
** read tells ranked.c whether a scope has any private record to turn away
** (a2m_stack_private_tiers_empty).
**
** The oldest created_at are kept between recalls and read again once this
** stack has committed or rolled back (a2m_stack_generation's own count)
** and a second has passed since the last read: a remember makes records of now,
** which never lower it, and the second bounds the cost to one scan step a
** second for a workload that writes between every recall. A record older
** than the kept value (an import, or another server's write) may make the
** floor too high for a second: the pruned list then cannot prove recall's
** stop and recall asks for the complete list (ranked.c). Exactness never
** rests on the floor, only the cost does.
*/
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "stack/stack_internal.h"

/* Read the oldest record again at most this often (ms) once writes come. */
#define OLDEST_REFRESH_MS 1000

/*
** Taken off the bound: the blend's arithmetic rounds, and the bound should
** leave room below a record whose factor equals it (the oldest itself),
** or a tie at the admit-th best could not prove recall's stop.
*/
#define LEAST_MARGIN 1e-6

int a2m_stack_oldest_init(a2m_stack_oldest *o, size_t ntiers)
{
	o->known = 0;
	o->reads = 0;
	if (!(o->at = calloc(ntiers ? ntiers : 1, sizeof *o->at)))
		return -1;
	if (pthread_mutex_init(&o->mu, NULL) != 0) {
		free(o->at);
		return -1;
	}
	return 0;
}

void a2m_stack_oldest_free(a2m_stack_oldest *o)
{
	pthread_mutex_destroy(&o->mu);
	free(o->at);
}

static int first_record(const a2m_record *rec, void *ctx)
{
	*(int64_t *)ctx = rec->created_at;
	return 1;  /* one is enough: the scan is in (created_at, seq) order */
}

/*
** Reads each decaying tier's oldest created_at into o->at (INT64_MAX: the
** tier holds nothing). Returns 0, or the store's failure.
*/
static int read_oldest(a2m_stack *st, a2m_stack_oldest *o)
{
	const a2m_tier_layout *l = &st->cfg.tiers;
	for (size_t i = 0; i < l->n; i++) {
		o->at[i] = INT64_MAX;
		if (!(l->tiers[i].half_life_ms > 0))
			continue;
		a2m_query q = {.tier = l->tiers[i].name, .brief = 1};
		int rc = st->store->ops->scan(st->store, &q, first_record, &o->at[i]);
		if (rc)
			return rc;
	}
	return 0;
}

/*
** The least recency any record has at now, by each tier's oldest record
** as last read (read again when due: see the header). Returns it in
** [0, 1], or -1 when the ages cannot be read.
*/
static double least_recency(a2m_stack *st, int64_t now)
{
	a2m_stack_oldest *o = &st->oldest;
	const a2m_tier_layout *l = &st->cfg.tiers;
	uint64_t gen = atomic_load_explicit(&st->generation, memory_order_acquire);
	double least = 1;
	pthread_mutex_lock(&o->mu);
	/* A read that failed is tried again as rarely as a stale one. */
	if (o->reads == 0 || ((o->gen != gen || !o->known) &&
			      (now - o->read_at >= OLDEST_REFRESH_MS || now < o->read_at))) {
		o->known = read_oldest(st, o) == 0;
		o->gen = gen;
		o->read_at = now;
		o->reads++;
	}
	if (!o->known)
		least = -1;
	/* As score.c's decay: a record of a tier outside the layout, or of one
	** that does not decay, or created after now, has recency 1. */
	for (size_t i = 0; i < l->n && least >= 0; i++) {
		double hl = l->tiers[i].half_life_ms;
		if (hl > 0 && o->at[i] < now) {
			double r = exp2(-(double)(now - o->at[i]) / hl);
			if (r < least)
				least = r;
		}
	}
	pthread_mutex_unlock(&o->mu);
	return least;
}

double a2m_stack_blend_least(a2m_stack *st, int64_t now)
{
	const a2m_blend *w = &st->cfg.blend;
	double sum = w->relevance + w->recency + w->salience;
	if (sum <= 0 || w->relevance <= 0 || w->recency < 0 || w->salience < 0)
		return 1;
	double share = w->relevance / sum;
	if (w->recency == 0)
		return share;
	double recency = least_recency(st, now);
	if (recency < 0)
		return share;
	double least = (w->relevance + w->recency * recency) / sum * (1.0 - LEAST_MARGIN);
	return least > share ? least : share;
}

uint64_t a2m_stack_oldest_reads(a2m_stack *st)
{
	pthread_mutex_lock(&st->oldest.mu);
	uint64_t n = st->oldest.reads;
	pthread_mutex_unlock(&st->oldest.mu);
	return n;
}

int a2m_stack_private_tiers_empty(a2m_stack *st)
{
	const a2m_tier_layout *l = &st->cfg.tiers;
	a2m_stack_oldest *o = &st->oldest;
	pthread_mutex_lock(&o->mu);
	int empty = o->reads > 0 && o->known;
	for (size_t i = 0; i < l->n && empty; i++)
		if (!l->tiers[i].shared)
			empty = l->tiers[i].half_life_ms > 0 && o->at[i] == INT64_MAX;
	pthread_mutex_unlock(&o->mu);
	return empty;
}
