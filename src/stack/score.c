/*
** score.c — the numbers the stack orders records by: a recalled record's
** score (its relevance blended with recency and salience, stack.h
** a2m_blend), recall's order over hits, the score of a recall without a
** query, and a record's retention, which capacity spills the weakest by
** (flow.c). Pure arithmetic over records and the layout: nothing here
** reads the store.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stack/stack_internal.h"

#define DAY_MS (24.0 * 3600 * 1000)

/* Higher score first; then newer first, so ties read like a recency list. */
int a2m_stack_hit_cmp(const void *a, const void *b)
{
	const a2m_hit *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->rec->created_at != y->rec->created_at)
		return x->rec->created_at > y->rec->created_at ? -1 : 1;
	return x->rec->seq > y->rec->seq ? -1 : (x->rec->seq < y->rec->seq);
}

/* 1 for now, halving every half_life (no decay when half_life is 0). */
static double decay(int64_t now, int64_t then, double half_life)
{
	if (half_life <= 0 || then >= now)
		return 1.0;
	return exp2(-(double)(now - then) / half_life);
}

double a2m_stack_blend_score(const a2m_stack *st, double rel, const a2m_record *r,
			     int64_t now)
{
	const a2m_blend *w = &st->cfg.blend;
	double sum = w->relevance + w->recency + w->salience;
	if (sum <= 0)
		return rel;
	const a2m_tier *t = a2m_stack_tier_of(st, r);
	double recency = decay(now, r->created_at, t ? t->half_life_ms : 0);
	double s = a2m_salience_clamp(r->salience);
	double sal = s > 0 ? s / (1.0 + s) : 0;
	return rel * (w->relevance + w->recency * recency + w->salience * sal) / sum;
}

double a2m_stack_recency_score(const a2m_record *r, int64_t now)
{
	return decay(now, r->created_at, DAY_MS);
}

int a2m_stack_weighs_age(const a2m_tier *t)
{
	/* Working memory is a transcript: it is replayed, not searched, so its
	** overflow is simply its oldest turns. Weighing recalls or salience there
	** would push the newest turn out by its own write. Equal ages tie, and
	** ties go to the older unit (flow.c). */
	return t && strcmp(t->kind, "working") == 0;
}

double a2m_stack_retention(const a2m_tier *t, const a2m_record *rec, int64_t now)
{
	return a2m_stack_retention_as(t, a2m_stack_weighs_age(t), rec, now);
}

double a2m_stack_retention_as(const a2m_tier *t, int by_age, const a2m_record *rec,
			      int64_t now)
{
	if (by_age)
		return decay(now, rec->created_at, t->half_life_ms);
	int64_t last = rec->accessed_at > rec->created_at ? rec->accessed_at : rec->created_at;
	double recency = decay(now, last, t ? t->half_life_ms : 0);
	return a2m_salience_clamp(rec->salience) * recency * (1.0 + (double)rec->access_count);
}

void a2m_hits_free(a2m_hit *hits, size_t n)
{
	if (!hits)
		return;
	for (size_t i = 0; i < n; i++)
		a2m_record_free(hits[i].rec);
	free(hits);
}
