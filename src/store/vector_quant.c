/*
** vector_quant.c — the quantized mode's approximate search (store.h,
** a2m_vector_search.pool): each row also kept as an 8-bit code, every code
** read for a pool of the rows that measure best on it, and only the pool
** then measured exactly in float32, as the exact search measures it.
**
** Why: the exact search reads every row's 16-bit sketch (768 bytes at 384
** dimensions) and lists every row, which the scorer then maps and orders:
** at 1M rows, 768 MB read and a list of 1M per query. A code is 384 bytes
** and the scan keeps only its pool (a small heap), so what grows with the
** store is one pass over half the bytes. What it gives up: a row whose
** code measures below the pool's worst is never measured exactly, though
** its true figure might have entered the top; the code's error is about
** half of 1/127 of the row's largest component, per component. Recall@10
** against the exact search is measured, not promised (docs/RANKING.md §6,
** docs/BENCHMARKS.md).
**
** The codes cost nothing until the first approximate search of a space
** asks for them: it builds them from the float rows (one pass); from then
** on every row written carries its code (vector_index.c calls the hooks
** below), until the space empties and changes width.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/vector_index_internal.h"
#include "util/grow.h"

/* ---- the codes, kept beside the rows ----------------------------------- */

int a2m_vcodes_reserve(const vspace *sp, vtier *t, size_t cap)
{
	if (a2m_resize((void **)&t->q8, cap, sp->dims * sizeof *t->q8) ||
	    a2m_resize((void **)&t->q8_scale, cap, sizeof *t->q8_scale) ||
	    a2m_resize((void **)&t->q8_unit, cap, sizeof *t->q8_unit))
		return -1;
	return 0;
}

void a2m_vcodes_write(const vspace *sp, vtier *t, size_t row)
{
	size_t d = sp->dims;
	float s = a2m_vec_code8(t->vecs + row * d, d, t->q8 + row * d);
	t->q8_scale[row] = s;
	t->q8_unit[row] = t->norms[row] > 0 ? s / t->norms[row] : 0;
}

void a2m_vcodes_move(const vspace *sp, vtier *t, size_t dst, size_t src)
{
	memcpy(t->q8 + dst * sp->dims, t->q8 + src * sp->dims, sp->dims * sizeof *t->q8);
	t->q8_scale[dst] = t->q8_scale[src];
	t->q8_unit[dst] = t->q8_unit[src];
}

void a2m_vcodes_release(vtier *t)
{
	free(t->q8);
	free(t->q8_scale);
	free(t->q8_unit);
	t->q8 = NULL;
	t->q8_scale = t->q8_unit = NULL;
}

int a2m_vcodes_build(vspace *sp)
{
	for (size_t i = 0; i < sp->ntiers; i++)
		if (sp->tiers[i].cap && a2m_vcodes_reserve(sp, &sp->tiers[i], sp->tiers[i].cap) != 0)
			return -1; /* what was allocated stays, freed with the rows */
	for (size_t i = 0; i < sp->ntiers; i++)
		for (size_t r = 0; r < sp->tiers[i].n; r++)
			a2m_vcodes_write(sp, &sp->tiers[i], r);
	sp->codes = 1;
	return 0;
}

size_t a2m_vcodes_row_bytes(const vspace *sp)
{
	return sp->codes ? sp->dims * sizeof(int8_t) + 2 * sizeof(float) : 0;
}

/* ---- the search ---------------------------------------------------------- */

/* A row in the pool: its key (higher is nearer) and where it is. */
typedef struct pooled {
	double   key;
	uint32_t tier, row;
} pooled;

/* The pool: a binary heap whose root has the lowest key, at most cap long. */
typedef struct pool {
	pooled *v;
	size_t  n, cap;
	double  rest;      /* the best key of a row left out; -HUGE_VAL: none */
} pool;

static void pool_down(pooled *v, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, low = i;
		if (l < n && v[l].key < v[low].key)
			low = l;
		if (r < n && v[r].key < v[low].key)
			low = r;
		if (low == i)
			return;
		pooled t = v[i];
		v[i] = v[low];
		v[low] = t;
		i = low;
	}
}

static void pool_offer(pool *p, double key, uint32_t tier, uint32_t row)
{
	if (p->n < p->cap) {
		size_t c = p->n++;
		p->v[c] = (pooled){key, tier, row};
		while (c > 0 && p->v[(c - 1) / 2].key > p->v[c].key) {
			pooled t = p->v[c];
			p->v[c] = p->v[(c - 1) / 2];
			p->v[(c - 1) / 2] = t;
			c = (c - 1) / 2;
		}
		return;
	}
	if (key <= p->v[0].key) {
		if (key > p->rest)
			p->rest = key;
		return;
	}
	if (p->v[0].key > p->rest)
		p->rest = p->v[0].key;
	p->v[0] = (pooled){key, tier, row};
	pool_down(p->v, p->n, 0);
}

/*
** One tier's codes against the query's (Q, scale tq). The key orders rows
** as the measure would on the codes: the approximate product for dot, the
** cosine times |q| for cosine, and 2 q·r − |r|² (|q − r|² less the query's
** own |q|², negated) for l2. Each measure has its own loop.
*/
static void pool_tier(const vspace *sp, const vtier *t, uint32_t ti, const int16_t *Q,
		      double tq, a2m_vector_measure m, int owner_only, uint32_t oid, pool *p)
{
	size_t d = sp->dims;
	const int8_t *c = t->q8;
	switch (m) {
	case A2M_VECTOR_DOT:
		for (size_t i = 0; i < t->n; i++, c += d)
			if (!owner_only || t->owners[i] == oid)
				pool_offer(p, tq * t->q8_scale[i] * a2m_vec_dot8(Q, c, d), ti,
					   (uint32_t)i);
		break;
	case A2M_VECTOR_L2:
		for (size_t i = 0; i < t->n; i++, c += d)
			if (!owner_only || t->owners[i] == oid)
				pool_offer(p, 2 * tq * t->q8_scale[i] * a2m_vec_dot8(Q, c, d) -
					   t->norm2[i], ti, (uint32_t)i);
		break;
	default:
		for (size_t i = 0; i < t->n; i++, c += d)
			if (!owner_only || t->owners[i] == oid)
				pool_offer(p, tq * t->q8_unit[i] * a2m_vec_dot8(Q, c, d), ti,
					   (uint32_t)i);
		break;
	}
}

/* A key as the raw figure of the measure (a2m_vector_search.pool, approx_rest). */
static double key_measure(a2m_vector_measure m, double key, double qnorm, double q2)
{
	switch (m) {
	case A2M_VECTOR_DOT:
		return key;
	case A2M_VECTOR_L2:
		return q2 - key > 0 ? sqrt(q2 - key) : 0;
	default:
		return qnorm > 0 ? key / qnorm : 0;
	}
}

int a2m_vindex_search_pool(a2m_vindex *vx, vspace *sp, const a2m_vector_search *q,
			   a2m_candidates *out)
{
	if (!sp->codes && a2m_vcodes_build(sp) != 0)
		return A2M_STORE_NO_INDEX;
	size_t d = sp->dims, total = 0;
	for (size_t i = 0; i < sp->ntiers; i++)
		total += sp->tiers[i].n;
	pool p = {.cap = q->pool < total ? q->pool : total, .rest = -HUGE_VAL};
	int16_t *Q = malloc(d * sizeof *Q);
	p.v = malloc(p.cap * sizeof *p.v);
	if (!Q || !p.v) {
		free(Q);
		free(p.v);
		return A2M_INTERNAL_ERROR;
	}
	double err, len, q2 = 0;
	double tq = a2m_vec_sketch(q->vector, d, a2m_vec_code_qmax(d), Q, &err, &len);
	for (size_t i = 0; i < d; i++)
		q2 += (double)q->vector[i] * q->vector[i];
	for (size_t i = 0; i < sp->ntiers; i++) {
		const vtier *t = &sp->tiers[i];
		uint32_t oid;
		int rule = a2m_vindex_tier_rule(vx, q, t, &oid);
		if (rule)
			pool_tier(sp, t, (uint32_t)i, Q, tq, q->measure, rule == 2, oid, &p);
	}
	free(Q);
	/* The pool, measured as the exact search measures (vector_search.c). */
	double qnorm = sqrt((double)a2m_vec_dot(q->vector, q->vector, d));
	if (!(out->v = malloc((p.n ? p.n : 1) * sizeof *out->v))) {
		free(p.v);
		return A2M_INTERNAL_ERROR;
	}
	for (size_t k = 0; k < p.n; k++) {
		const vtier *t = &sp->tiers[p.v[k].tier];
		size_t row = p.v[k].row;
		out->v[k] = (a2m_candidate){
			t->seqs[row], a2m_vec_measure(q->measure, q->vector, qnorm, t->vecs + row * d,
						      t->norms[row], d)};
	}
	free(p.v);
	out->n = p.n;
	if (p.rest > -HUGE_VAL) {
		out->approximate = 1;
		out->approx_rest = key_measure(q->measure, p.rest, qnorm, q2);
	}
	out->salience_known = 1;
	out->salience_max = vx->salience_max;
	return 0;
}
