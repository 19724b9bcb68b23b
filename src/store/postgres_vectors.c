/*
** postgres_vectors.c — vector search in the PostgreSQL engine: the vectors
** stay in the rows (bytea), and a search runs over a cache of them as
** contiguous float rows per tier (vector_index.h), exact, with the measure
** the caller asks for (store.h, vector_search): the same rows and the same
** arithmetic as the other engines, so a query ranks alike on all three.
**
** The cache is built at the first vector search, from one pass over the
** records that have a vector, and is keyed on the deployment's version
** (a2m_state.version): this server's own writes keep it current (staged
** per transaction, applied at commit, dropped at rollback), and any other
** server's commit makes the next search build it again. A store that never
** answers a vector query never reads a vector.
**
** pgvector is not used even where it is installed: its indexes are
** approximate, and its exact scan computes the same measures as this one
** over a column type only it defines; the rows here are plain bytea any
** server of the deployment can read.
*/
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"
#include "store/vector_index.h"

struct a2m_pg_vectors {
	a2m_vindex *vx;
	int         built;
	uint64_t    version;   /* the deployment's version the cache holds */
};

a2m_pg_vectors *a2m_pg_vectors_new(void)
{
	a2m_pg_vectors *v = calloc(1, sizeof *v);
	if (v && !(v->vx = a2m_vindex_new())) {
		free(v);
		return NULL;
	}
	return v;
}

void a2m_pg_vectors_free(a2m_pg_vectors *v)
{
	if (!v)
		return;
	a2m_vindex_free(v->vx);
	free(v);
}

void a2m_pg_vectors_begin(a2m_pg_vectors *v)
{
	if (v && v->built)
		a2m_vindex_begin(v->vx);
}

void a2m_pg_vectors_commit(a2m_pg_vectors *v, uint64_t from, uint64_t to)
{
	if (!v || !v->built)
		return;
	a2m_vindex_commit(v->vx);
	if (v->version == from)
		v->version = to;
	else
		v->built = 0;  /* it missed a commit: build again at the next search */
}

void a2m_pg_vectors_rollback(a2m_pg_vectors *v)
{
	if (v && v->built)
		a2m_vindex_rollback(v->vx);
}

void a2m_pg_vectors_put(a2m_pg_vectors *v, const a2m_record *rec)
{
	if (v && v->built)
		a2m_vindex_put(v->vx, rec);
}

int a2m_pg_vectors_built(const a2m_pg_vectors *v)
{
	return v && v->built;
}

void a2m_pg_vectors_remove(a2m_pg_vectors *v, int64_t seq)
{
	if (v && v->built && seq)
		a2m_vindex_remove(v->vx, seq);
}

/* The little-endian vectors of a row, into the scratch buffers. */
static int le_to(const char *in, size_t n, size_t width, void *out)
{
	unsigned char *o = out;
	for (size_t i = 0; i < n; i++, in += width, o += width) {
		uint64_t bits = 0;
		for (size_t k = 0; k < width; k++)
			bits |= (uint64_t)(unsigned char)in[k] << (8 * k);
		if (width == 8) {
			memcpy(o, &bits, 8);
		} else {
			uint32_t b = (uint32_t)bits;
			memcpy(o, &b, 4);
		}
	}
	return 0;
}

/* Fills the cache with every vector of the deployment as of version. */
static int build(pgstore *s, a2m_pg_vectors *v, uint64_t version)
{
	PGresult *r;
	int rc = a2m_pg_run(s, &s->main, PG_VECTORS, NULL, "vectors", &r);
	a2m_vindex_clear(v->vx);
	v->built = 0;
	if (rc)
		return rc;
	double *d = NULL;
	float *g = NULL;
	size_t dcap = 0, gcap = 0;
	int rows = s->pq->ntuples(r);
	for (int i = 0; i < rows && !rc; i++) {
		size_t bytes = s->pq->getisnull(r, i, 3) ? 0 : (size_t)s->pq->getlength(r, i, 3);
		size_t gbytes = s->pq->getisnull(r, i, 5) ? 0 : (size_t)s->pq->getlength(r, i, 5);
		size_t dims = bytes % 8 ? 0 : bytes / 8, gdims = gbytes % 4 ? 0 : gbytes / 4;
		if (!dims && !gdims)
			continue;
		if (dims > dcap) {
			free(d);
			if (!(d = malloc(dims * sizeof *d))) {
				rc = a2m_store_fail(&s->base, "vectors: out of memory");
				break;
			}
			dcap = dims;
		}
		if (gdims > gcap) {
			free(g);
			if (!(g = malloc(gdims * sizeof *g))) {
				rc = a2m_store_fail(&s->base, "vectors: out of memory");
				break;
			}
			gcap = gdims;
		}
		le_to(s->pq->getvalue(r, i, 3), dims, 8, d);
		le_to(s->pq->getvalue(r, i, 5), gdims, 4, g);
		a2m_record rec = {.seq = a2m_pg_int8(s, r, i, 0),
				  .tier = s->pq->getisnull(r, i, 1) ? NULL : s->pq->getvalue(r, i, 1),
				  .owner = s->pq->getisnull(r, i, 2) ? NULL : s->pq->getvalue(r, i, 2),
				  .embedding = dims ? d : NULL, .dims = dims,
				  .gen_embedding = gdims ? g : NULL, .gen_dims = gdims,
				  .salience = a2m_pg_float8(s, r, i, 4)};
		a2m_vindex_put(v->vx, &rec);
		if (!a2m_vindex_valid(v->vx))
			rc = a2m_store_fail(&s->base, "vectors: out of memory");
	}
	free(d);
	free(g);
	s->pq->clear(r);
	if (rc) {
		a2m_vindex_clear(v->vx);
		return rc;
	}
	v->built = 1;
	v->version = version;
	return 0;
}

/* The deployment's version as main sees it now (outside a transaction). */
static int current_version(pgstore *s, uint64_t *out)
{
	pgstate st;
	int rc = a2m_pg_ready(s, &s->main);
	if (!rc)
		rc = a2m_pg_state(s, &s->main, "vectors", &st);
	*out = rc ? 0 : st.version;
	return rc;
}

/* Never in a shared bracket (store.h): main, under the exclusive lock. */
int a2m_pg_vectors_search(a2m_store *base, const a2m_vector_search *q, a2m_candidates *out)
{
	pgstore *s = (pgstore *)base;
	a2m_pg_vectors *v = s->vectors;
	uint64_t version;
	int rc;
	memset(out, 0, sizeof *out);
	if (s->in_tx) {
		/* Its writes are staged; the caller scans, which sees them. */
		if (!v->built || v->version != s->tx_version)
			return A2M_STORE_NO_INDEX;
	} else {
		if ((rc = current_version(s, &version)))
			return rc;
		if (!v->built || v->version != version || !a2m_vindex_valid(v->vx))
			if ((rc = build(s, v, version)))
				return rc;
	}
	rc = a2m_vindex_search(v->vx, q, out);
	return rc == A2M_INTERNAL_ERROR ? a2m_store_fail(base, "vector search: out of memory") : rc;
}
