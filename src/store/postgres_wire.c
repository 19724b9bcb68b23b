/*
** postgres_wire.c — the PostgreSQL engine's values in binary: statement
** parameters (text, int8, float8, bool, bytea), one-dimensional arrays in
** PostgreSQL's array wire format (what unnest() takes: a batch's postings,
** its events, a visit's seqs), and the cells of binary results read back.
**
** Binary because a number costs 8 bytes and no parsing either way, and a
** vector's bytes go as they are stored (postgres_rows.c).
*/
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"
#include "util/grow.h"

/* ---- parameters ----------------------------------------------------------- */

void a2m_pg_params_init(pgparams *p)
{
	memset(p, 0, sizeof *p);
	p->max = 24;
	p->values = p->v_;
	p->lengths = p->l_;
	p->formats = p->f_;
	p->num = p->num_;
}

int a2m_pg_params_alloc(pgparams *p, int max)
{
	a2m_pg_params_init(p);
	if (max <= 24)
		return 0;
	p->values = calloc((size_t)max, sizeof *p->values);
	p->lengths = calloc((size_t)max, sizeof *p->lengths);
	p->formats = calloc((size_t)max, sizeof *p->formats);
	p->num = calloc((size_t)max, sizeof *p->num);
	p->max = max;
	if (!p->values || !p->lengths || !p->formats || !p->num) {
		a2m_pg_params_free(p);
		return -1;
	}
	return 0;
}

void a2m_pg_params_free(pgparams *p)
{
	if (p->values != p->v_) {
		free(p->values);
		free(p->lengths);
		free(p->formats);
		free(p->num);
	}
	a2m_pg_params_init(p);
}

/* The next slot; a caller never asks for more than it made room for. */
static int slot(pgparams *p)
{
	if (p->n >= p->max)
		abort();
	return p->n++;
}

void a2m_pg_param_text(pgparams *p, const char *s)
{
	int i = slot(p);
	p->values[i] = s;
	p->lengths[i] = 0;
	p->formats[i] = 0;
}

void a2m_pg_put64(char *out, uint64_t v)
{
	for (int k = 7; k >= 0; k--) {
		out[k] = (char)(v & 0xff);
		v >>= 8;
	}
}

uint64_t a2m_pg_get64(const char *in)
{
	uint64_t v = 0;
	for (int k = 0; k < 8; k++)
		v = v << 8 | (unsigned char)in[k];
	return v;
}

void a2m_pg_put32(char *out, uint32_t v)
{
	for (int k = 3; k >= 0; k--) {
		out[k] = (char)(v & 0xff);
		v >>= 8;
	}
}

uint32_t a2m_pg_get32(const char *in)
{
	uint32_t v = 0;
	for (int k = 0; k < 4; k++)
		v = v << 8 | (unsigned char)in[k];
	return v;
}

void a2m_pg_param_int8(pgparams *p, int64_t v)
{
	int i = slot(p);
	a2m_pg_put64(p->num[i], (uint64_t)v);
	p->values[i] = p->num[i];
	p->lengths[i] = 8;
	p->formats[i] = 1;
}

void a2m_pg_param_float8(pgparams *p, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof bits);
	int i = slot(p);
	a2m_pg_put64(p->num[i], bits);
	p->values[i] = p->num[i];
	p->lengths[i] = 8;
	p->formats[i] = 1;
}

void a2m_pg_param_bool(pgparams *p, int v)
{
	int i = slot(p);
	p->num[i][0] = v ? 1 : 0;
	p->values[i] = p->num[i];
	p->lengths[i] = 1;
	p->formats[i] = 1;
}

void a2m_pg_param_bytea(pgparams *p, const void *data, size_t len)
{
	int i = slot(p);
	p->values[i] = data;
	p->lengths[i] = (int)len;
	p->formats[i] = 1;
}

/* ---- binary arrays ---------------------------------------------------------- */

static void array_put(pgarray *a, const void *data, size_t len)
{
	if (a->oom)
		return;
	size_t need = a->len + len;
	if (need < len || a2m_grow((void **)&a->buf, &a->cap, need < 256 ? 256 : need, 1)) {
		a->oom = 1;
		return;
	}
	memcpy(a->buf + a->len, data, len);
	a->len += len;
}

static void array_put32(pgarray *a, uint32_t v)
{
	char b[4];
	a2m_pg_put32(b, v);
	array_put(a, b, 4);
}

void a2m_pg_array_begin(pgarray *a, unsigned oid)
{
	memset(a, 0, sizeof *a);
	array_put32(a, 1);      /* one dimension */
	array_put32(a, 0);      /* has nulls: patched at the first NULL */
	array_put32(a, oid);
	a->count_at = a->len;
	array_put32(a, 0);      /* elements: patched at the end */
	array_put32(a, 1);      /* lower bound */
}

void a2m_pg_array_add(pgarray *a, const void *data, size_t len)
{
	array_put32(a, (uint32_t)len);
	array_put(a, data, len);
	a->n++;
}

void a2m_pg_array_null(pgarray *a)
{
	array_put32(a, 0xffffffffu);
	if (!a->oom)
		a2m_pg_put32(a->buf + 4, 1);
	a->n++;
}

void a2m_pg_array_int8(pgarray *a, int64_t v)
{
	char b[8];
	a2m_pg_put64(b, (uint64_t)v);
	a2m_pg_array_add(a, b, 8);
}

void a2m_pg_array_int4(pgarray *a, int32_t v)
{
	char b[4];
	a2m_pg_put32(b, (uint32_t)v);
	a2m_pg_array_add(a, b, 4);
}

void a2m_pg_array_bool(pgarray *a, int v)
{
	char b = v ? 1 : 0;
	a2m_pg_array_add(a, &b, 1);
}

int a2m_pg_array_end(pgarray *a)
{
	if (a->oom) {
		a2m_pg_array_free(a);
		return -1;
	}
	a2m_pg_put32(a->buf + a->count_at, (uint32_t)a->n);
	return 0;
}

void a2m_pg_array_free(pgarray *a)
{
	free(a->buf);
	memset(a, 0, sizeof *a);
}

/* ---- reading cells ----------------------------------------------------------- */

int a2m_pg_isnull(pgstore *s, const PGresult *r, int row, int col)
{
	return s->pq->getisnull(r, row, col);
}

int64_t a2m_pg_int8(pgstore *s, const PGresult *r, int row, int col)
{
	if (s->pq->getisnull(r, row, col) || s->pq->getlength(r, row, col) != 8)
		return 0;
	return (int64_t)a2m_pg_get64(s->pq->getvalue(r, row, col));
}

int32_t a2m_pg_int4(pgstore *s, const PGresult *r, int row, int col)
{
	if (s->pq->getisnull(r, row, col) || s->pq->getlength(r, row, col) != 4)
		return 0;
	return (int32_t)a2m_pg_get32(s->pq->getvalue(r, row, col));
}

double a2m_pg_float8(pgstore *s, const PGresult *r, int row, int col)
{
	if (s->pq->getisnull(r, row, col) || s->pq->getlength(r, row, col) != 8)
		return 0;
	uint64_t bits = a2m_pg_get64(s->pq->getvalue(r, row, col));
	double d;
	memcpy(&d, &bits, sizeof d);
	return d;
}

char *a2m_pg_text(pgstore *s, const PGresult *r, int row, int col, int *oom)
{
	if (s->pq->getisnull(r, row, col))
		return NULL;
	size_t len = (size_t)s->pq->getlength(r, row, col);
	char *out = malloc(len + 1);
	if (!out) {
		*oom = 1;
		return NULL;
	}
	memcpy(out, s->pq->getvalue(r, row, col), len);
	out[len] = '\0';
	return out;
}

