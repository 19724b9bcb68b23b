/*
** vector_kernels.c — the measures the vector rows are searched with, and the
** 16-bit sketch of a row (see vector_index.h). Kept apart from the rows'
** bookkeeping: this is the arithmetic, and what its bounds rest on.
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "store/vector_index.h"

/* ---- the measures ------------------------------------------------------ */

/*
** A float reduction is vectorised only if the compiler may reorder its sum,
** which C forbids without -ffast-math (which would also change NaN and
** rounding rules everywhere). `omp simd reduction` allows exactly this loop
** to keep several partial sums in one vector register; the Makefile passes
** -fopenmp-simd, which honours the pragma without OpenMP's runtime.
*/
float a2m_vec_dot(const float *a, const float *b, size_t n)
{
	float acc = 0;
#pragma omp simd reduction(+ : acc)
	for (size_t i = 0; i < n; i++)
		acc += a[i] * b[i];
	return acc;
}

float a2m_vec_l2sq(const float *a, const float *b, size_t n)
{
	float acc = 0;
#pragma omp simd reduction(+ : acc)
	for (size_t i = 0; i < n; i++) {
		float d = a[i] - b[i];
		acc += d * d;
	}
	return acc;
}

#if defined(__SSE2__)
/* The four 32-bit lanes of v added. */
static int32_t sum_lanes(__m128i v)
{
	v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4e));
	v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xb1));
	return _mm_cvtsi128_si32(v);
}
#endif

/*
** Integer sums need no licence to be reordered, but gcc at -O2 vectorises
** this loop (with the pragma) into 16-bit multiplies and unpacking;
** pmaddwd (two products summed into 32 bits; SSE2, which every x86-64
** has) does it in a third of the instructions. The sum is exact either way.
*/
int32_t a2m_vec_dot16(const int16_t *a, const int16_t *b, size_t n)
{
	size_t i = 0;
	int32_t acc = 0;
#if defined(__SSE2__)
	__m128i sum = _mm_setzero_si128();
	for (; i + 8 <= n; i += 8)
		sum = _mm_add_epi32(sum, _mm_madd_epi16(
			_mm_loadu_si128((const __m128i *)(const void *)(a + i)),
			_mm_loadu_si128((const __m128i *)(const void *)(b + i))));
	acc = sum_lanes(sum);
#endif
	for (; i < n; i++)
		acc += (int32_t)a[i] * b[i];
	return acc;
}

double a2m_vec_measure(a2m_vector_measure m, const float *q, double qnorm, const float *r,
		       double rnorm, size_t n)
{
	switch (m) {
	case A2M_VECTOR_DOT:
		return a2m_vec_dot(q, r, n);
	case A2M_VECTOR_L2:
		return sqrt((double)a2m_vec_l2sq(q, r, n));
	default:
		if (qnorm == 0 || rnorm == 0)
			return 0; /* no direction: neither near nor far */
		return (double)a2m_vec_dot(q, r, n) / (qnorm * rnorm);
	}
}

/* ---- the sketch --------------------------------------------------------- */

/*
** Why a sketch: the float32 rows are 4 bytes a dimension, and reading them
** is all a search costs (it is memory-bound). A row as 16-bit integers R
** times a scale s is half of that, and the integer dot product of two
** sketches, Q·R, is exact in int32 when dims × max² < 2^31
** (a2m_vec_sketch_max).
** With e = r − sR and f = q − tQ (t the query's scale), for the float
** vectors taken as reals:
**
**     q·r = t s (Q·R) + s (f·R) + q·e,   so   |q·r − t s (Q·R)| ≤ |f| |sR| + |q| |e|
**
** a rigorous interval for the true product. What recall ranks by is the
** float32 kernel's figure, which differs from the true product by at most
** (n + 2)·2^-24·|q||r| (summation error): the bounds add twice that.
*/

/* See vector_index.h. */
int32_t a2m_vec_sketch_max(size_t dims)
{
	int log2 = 0;
	while (((size_t)1 << log2) < dims && log2 < 62)
		log2++;
	int bits = (31 - log2) / 2;
	if (bits > 15)
		bits = 15;
	return bits < 1 ? 1 : (int32_t)((1 << bits) - 1);
}

/* See vector_index.h. */
float a2m_vec_sketch(const float *v, size_t n, int32_t max, int16_t *out, double *err,
		     double *len)
{
	float top = 0;
	for (size_t i = 0; i < n; i++)
		top = fabsf(v[i]) > top ? fabsf(v[i]) : top;
	/* JSON cannot carry NaN or infinity; should one come, no UB: R = 0. */
	float s = top > 0 && isfinite(top) ? (float)((double)top / max) : 0;
	double e2 = 0, l2 = 0;
	for (size_t i = 0; i < n; i++) {
		double r = s > 0 ? nearbyint((double)v[i] / s) : 0;
		r = r > max ? max : r < -max ? -max : isnan(r) ? 0 : r;
		out[i] = (int16_t)r;
		double e = (double)v[i] - (double)s * r, sr = (double)s * r;
		e2 += e * e;
		l2 += sr * sr;
	}
	*err = sqrt(e2);
	*len = sqrt(l2);
	return s;
}

/* ---- the 8-bit code (the quantized mode, vector_quant.c) --------------- */

/*
** A row as 8-bit integers C times a scale c (|C| <= 127), a quarter of its
** float bytes; the query as 16-bit integers, exact in int32 with C when
** dims × qmax × 127 < 2^31 (a2m_vec_code_qmax; the query is coded as a
** sketch, a2m_vec_sketch, with that largest integer). Unlike the sketch's, the
** figure it gives carries no bound: it only chooses which rows are
** measured exactly (docs/RANKING.md §6, the quantized mode).
*/

/* See vector_index.h. */
int32_t a2m_vec_code_qmax(size_t dims)
{
	size_t q = (size_t)INT32_MAX / (127 * (dims ? dims : 1));
	return q > 32767 ? 32767 : q < 1 ? 1 : (int32_t)q;
}

/* See vector_index.h. */
float a2m_vec_code8(const float *v, size_t n, int8_t *out)
{
	float top = 0;
#pragma omp simd reduction(max : top)
	for (size_t i = 0; i < n; i++)
		top = fabsf(v[i]) > top ? fabsf(v[i]) : top;
	/* JSON cannot carry NaN, but a number beyond float's range is infinite
	** here: then, or for a row of zeros, C = 0. */
	float s = top > 0 && isfinite(top) ? (float)((double)top / 127) : 0;
	if (!(s > 0)) {
		memset(out, 0, n * sizeof *out);
		return 0;
	}
	/*
	** |v[i] × inv| is at most 127 (a rounding above it rounds back to 127),
	** so no clamp; adding and taking away 1.5 × 2^23 rounds it to the
	** nearest integer in float arithmetic, which vectorises where
	** nearbyint, a libm call per component, would not.
	*/
	float inv = 1.0f / s;
#pragma omp simd
	for (size_t i = 0; i < n; i++) {
		float c = (v[i] * inv + 0x1.8p23f) - 0x1.8p23f;
		out[i] = (int8_t)(int32_t)c;
	}
	return s;
}

/* As a2m_vec_dot16, each 8-bit code widened to 16 bits first. */
int32_t a2m_vec_dot8(const int16_t *q, const int8_t *c, size_t n)
{
	size_t i = 0;
	int32_t acc = 0;
#if defined(__SSE2__)
	__m128i sum = _mm_setzero_si128(), zero = _mm_setzero_si128();
	for (; i + 16 <= n; i += 16) {
		__m128i r = _mm_loadu_si128((const __m128i *)(const void *)(c + i));
		__m128i sign = _mm_cmpgt_epi8(zero, r);
		__m128i lo = _mm_unpacklo_epi8(r, sign), hi = _mm_unpackhi_epi8(r, sign);
		__m128i q0 = _mm_loadu_si128((const __m128i *)(const void *)(q + i));
		__m128i q1 = _mm_loadu_si128((const __m128i *)(const void *)(q + i + 8));
		sum = _mm_add_epi32(sum, _mm_madd_epi16(lo, q0));
		sum = _mm_add_epi32(sum, _mm_madd_epi16(hi, q1));
	}
	acc = sum_lanes(sum);
#endif
	for (; i < n; i++)
		acc += (int32_t)q[i] * c[i];
	return acc;
}
