/*
** vector_search.c — the exact search over the vector rows, and the search
** for bounds over their 16-bit sketches (a2m_vindex_search; the rows are
** vector_index.c's, the kernels vector_kernels.c's; the quantized mode's
** pool goes to vector_quant.c).
**
** The scan is memory-bound: 100 000 rows of 384 floats are 154 MB read per
** query (77 MB of sketch), so everything else is kept off that path. The
** measure's loop is chosen once per tier, a tier the filter skips is never
** read, an owner test is one integer compare before the arithmetic, and
** cosine divides by a norm stored with the row.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/vector_index.h"
#include "store/vector_index_internal.h"

/*
** One tier's rows against q. owner_only: only rows of owner id oid. Each
** measure has its own loop so that the inner call is the bare kernel.
*/
static size_t scan_tier(const vspace *vx, const vtier *t, const a2m_vector_search *q,
			double qnorm, int owner_only, uint32_t oid, a2m_candidate *out)
{
	size_t k = 0, d = vx->dims;
	const float *row = t->vecs;
	switch (q->measure) {
	case A2M_VECTOR_DOT:
		for (size_t i = 0; i < t->n; i++, row += d)
			if (!owner_only || t->owners[i] == oid)
				out[k++] = (a2m_candidate){t->seqs[i], a2m_vec_dot(q->vector, row, d)};
		break;
	case A2M_VECTOR_L2:
		for (size_t i = 0; i < t->n; i++, row += d)
			if (!owner_only || t->owners[i] == oid)
				out[k++] = (a2m_candidate){
					t->seqs[i], sqrt((double)a2m_vec_l2sq(q->vector, row, d))};
		break;
	default:
		for (size_t i = 0; i < t->n; i++, row += d) {
			if (owner_only && t->owners[i] != oid)
				continue;
			double nr = t->norms[i], dot = a2m_vec_dot(q->vector, row, d);
			out[k++] = (a2m_candidate){t->seqs[i],
						   qnorm == 0 || nr == 0 ? 0 : dot / (qnorm * nr)};
		}
		break;
	}
	return k;
}

/* The query's side of a bound search (the sketch: vector_kernels.c). */
typedef struct qsketch {
	int16_t *Q;
	double   t;              /* the query's scale */
	double   flen, qlen;     /* |f|, |q| */
	double   qnorm;          /* the float kernel's |q|, as the measure uses it */
	double   q2;             /* |q|^2 in double */
	double   kslack;         /* the float kernel's error, per unit of |r| */
	double   pad;            /* a row's true |r| is at most its norm times this */
} qsketch;

/* The bound of one row's measure (see a2m_vector_search.bound). */
static double row_bound(const vtier *t, size_t i, const qsketch *qs, a2m_vector_measure m,
			int32_t QR)
{
	double rlen = t->norms[i] * qs->pad;
	double approx = qs->t * (double)t->sk_scale[i] * (double)QR;
	/* The true product's interval, widened for double rounding. */
	double hi = approx + qs->flen * t->sk_len[i] + qs->qlen * t->sk_err[i] +
		    1e-9 * qs->qlen * rlen;
	switch (m) {
	case A2M_VECTOR_DOT:
		return hi + qs->kslack * rlen;
	case A2M_VECTOR_L2: {
		double d2 = qs->q2 + t->norm2[i] - 2 * hi;
		d2 = d2 * (1 - 2 * qs->kslack / (qs->qlen > 0 ? qs->qlen : 1)) -
		     1e-9 * (qs->q2 + t->norm2[i]);
		return d2 > 0 ? sqrt(d2) : 0;
	}
	default: {
		double nr = t->norms[i];
		if (qs->qnorm == 0 || nr == 0)
			return 0;
		double c = (hi + qs->kslack * rlen) / (qs->qnorm * nr);
		return c + 1e-12 * fabs(c) + 1e-15;
	}
	}
}

static size_t scan_tier_bound(const vspace *vx, const vtier *t, const a2m_vector_search *q,
			      const qsketch *qs, int owner_only, uint32_t oid, a2m_candidate *out)
{
	size_t k = 0, d = vx->dims;
	const int16_t *row = t->sk;
	for (size_t i = 0; i < t->n; i++, row += d)
		if (!owner_only || t->owners[i] == oid)
			out[k++] = (a2m_candidate){
				t->seqs[i], row_bound(t, i, qs, q->measure, a2m_vec_dot16(qs->Q, row, d))};
	return k;
}

/* Sketches the query into qs (qs->Q allocated). Returns 0 or -1 (no memory). */
static int query_sketch(const vspace *vx, const float *v, size_t d, qsketch *qs)
{
	memset(qs, 0, sizeof *qs);
	if (!(qs->Q = malloc(d * sizeof *qs->Q)))
		return -1;
	double len;
	qs->t = a2m_vec_sketch(v, d, vx->sk_max, qs->Q, &qs->flen, &len);
	for (size_t i = 0; i < d; i++)
		qs->q2 += (double)v[i] * v[i];
	qs->qlen = sqrt(qs->q2) * (1 + 1e-9);
	qs->flen *= 1 + 1e-9;
	qs->qnorm = sqrt((double)a2m_vec_dot(v, v, d));
	/* Twice the worst summation error of the float kernels. */
	qs->kslack = 2.0 * (double)(d + 2) * 0x1p-24 * qs->qlen;
	/* The stored norm is the float kernel's: off by (d + 2) units at most. */
	qs->pad = 1 + 2.0 * (double)(d + 2) * 0x1p-24 + 1e-9;
	return 0;
}

int a2m_vindex_search(a2m_vindex *vx, const a2m_vector_search *q, a2m_candidates *out)
{
	memset(out, 0, sizeof *out);
	if (!vx->valid || vx->nlog)
		return A2M_STORE_NO_INDEX;
	vspace *sp = &vx->sp[q->generated ? 1 : 0];
	if (q->dims != sp->dims)
		/* No row has the query's width; an odd record might. */
		return sp->odd ? A2M_STORE_NO_INDEX : 0;
	size_t total = 0;
	for (size_t i = 0; i < sp->ntiers; i++)
		total += sp->tiers[i].n;
	if (!total)
		return 0;
	a2m_vector_search exact;
	if (q->pool) {
		int rc = a2m_vindex_search_pool(vx, sp, q, out);
		if (rc != A2M_STORE_NO_INDEX)
			return rc;
		/* No memory for the codes: the exact measures (the pool's kind of
		** figure, not bounds) of every row are still a right answer. */
		exact = *q;
		exact.pool = 0;
		exact.bound = 0;
		q = &exact;
	}
	if (!(out->v = malloc(total * sizeof *out->v)))
		return A2M_INTERNAL_ERROR;
	double qnorm = sqrt((double)a2m_vec_dot(q->vector, q->vector, q->dims));
	qsketch qs;
	if (q->bound && query_sketch(sp, q->vector, q->dims, &qs) != 0) {
		free(out->v);
		out->v = NULL;
		return A2M_INTERNAL_ERROR;
	}
	for (size_t i = 0; i < sp->ntiers; i++) {
		const vtier *t = &sp->tiers[i];
		uint32_t oid;
		int rule = a2m_vindex_tier_rule(vx, q, t, &oid);
		if (!rule)
			continue;
		out->n += q->bound ? scan_tier_bound(sp, t, q, &qs, rule == 2, oid, out->v + out->n)
				   : scan_tier(sp, t, q, qnorm, rule == 2, oid, out->v + out->n);
	}
	if (q->bound)
		free(qs.Q);
	out->salience_known = 1;
	out->salience_max = vx->salience_max;
	return 0;
}
