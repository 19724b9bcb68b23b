/*
** sqlite_vectors.c — the SQLite engine's cache of vector rows (see
** sqlite_vectors.h).
**
** Why a cache rather than reading the file per query: each 384-dimension
** vector is a 3 KB blob on overflow pages, so a scan of the table reads
** and copies every record (hundreds of milliseconds at 100 000 records).
** Held as float rows, the same search is one pass over contiguous memory.
*/
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/sqlite_vectors.h"
#include "store/vector_index.h"

struct a2m_sqlite_vectors {
	sqlite3      *db;
	a2m_vindex   *vx;
	sqlite3_stmt *seq_of;     /* prepared at the first need */
	int           built;      /* vx holds the file as of data_version */
	sqlite3_int64 data_version;
	double       *scratch;    /* a blob's doubles, aligned */
	size_t        scratch_n;
	float        *gscratch;   /* a gen_embedding blob's floats, aligned */
	size_t        gscratch_n;
};

/* Room for dims doubles and gdims floats in the scratch. Returns 0 or -1. */
static int scratch_fit(a2m_sqlite_vectors *v, size_t dims, size_t gdims)
{
	if (v->scratch_n < dims) {
		free(v->scratch);
		v->scratch_n = 0;
		if (!(v->scratch = malloc(dims * sizeof *v->scratch)))
			return -1;
		v->scratch_n = dims;
	}
	if (v->gscratch_n < gdims) {
		free(v->gscratch);
		v->gscratch_n = 0;
		if (!(v->gscratch = malloc(gdims * sizeof *v->gscratch)))
			return -1;
		v->gscratch_n = gdims;
	}
	return 0;
}

a2m_sqlite_vectors *a2m_sqlite_vectors_new(sqlite3 *db)
{
	a2m_sqlite_vectors *v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	v->db = db;
	if (!(v->vx = a2m_vindex_new())) {
		free(v);
		return NULL;
	}
	return v;
}

void a2m_sqlite_vectors_free(a2m_sqlite_vectors *v)
{
	if (!v)
		return;
	sqlite3_finalize(v->seq_of);
	a2m_vindex_free(v->vx);
	free(v->scratch);
	free(v->gscratch);
	free(v);
}

/* The hooks below do nothing until the cache is built. */
void a2m_sqlite_vectors_begin(a2m_sqlite_vectors *v)
{
	if (v)
		a2m_vindex_begin(v->vx);
}

void a2m_sqlite_vectors_commit(a2m_sqlite_vectors *v)
{
	if (v)
		a2m_vindex_commit(v->vx);
}

void a2m_sqlite_vectors_rollback(a2m_sqlite_vectors *v)
{
	if (v)
		a2m_vindex_rollback(v->vx);
}

int64_t a2m_sqlite_vectors_seq(a2m_sqlite_vectors *v, const char *id)
{
	int64_t seq = 0;
	if (!v || !v->built || !id)
		return 0;
	if (!v->seq_of && sqlite3_prepare_v3(v->db, "SELECT seq FROM records WHERE id = ?1", -1,
					     SQLITE_PREPARE_PERSISTENT, &v->seq_of, NULL) != SQLITE_OK) {
		a2m_vindex_invalidate(v->vx);
		return 0;
	}
	if (sqlite3_bind_text(v->seq_of, 1, id, -1, SQLITE_STATIC) != SQLITE_OK) {
		a2m_vindex_invalidate(v->vx);
	} else {
		int rc = sqlite3_step(v->seq_of);
		if (rc == SQLITE_ROW)
			seq = sqlite3_column_int64(v->seq_of, 0);
		else if (rc != SQLITE_DONE)
			a2m_vindex_invalidate(v->vx); /* cannot follow this write */
	}
	sqlite3_reset(v->seq_of);
	sqlite3_clear_bindings(v->seq_of);
	return seq;
}

void a2m_sqlite_vectors_put(a2m_sqlite_vectors *v, const a2m_record *rec, int64_t seq)
{
	if (!v || !v->built)
		return;
	if (!seq && !(seq = a2m_sqlite_vectors_seq(v, rec->id))) {
		a2m_vindex_invalidate(v->vx);
		return;
	}
	a2m_record r = *rec;
	r.seq = seq;
	a2m_vindex_put(v->vx, &r);
}

int a2m_sqlite_vectors_built(const a2m_sqlite_vectors *v)
{
	return v && v->built;
}

void a2m_sqlite_vectors_remove(a2m_sqlite_vectors *v, int64_t seq)
{
	if (v && v->built && seq)
		a2m_vindex_remove(v->vx, seq);
}

static int data_version(a2m_sqlite_vectors *v, a2m_store *s, sqlite3_int64 *out)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(v->db, "PRAGMA data_version", -1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? 0 : a2m_store_fail(s, "vectors: %s", sqlite3_errmsg(v->db));
}

/*
** Fills the cache from the file: one pass over the rows that have a vector,
** the caller's or the server's (gen_embedding: floats in native order, as
** column_gen_embedding reads them).
*/
static int build(a2m_sqlite_vectors *v, a2m_store *s)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	a2m_vindex_clear(v->vx);
	v->built = 0;
	if (sqlite3_prepare_v2(v->db, "SELECT seq, tier, owner, embedding, salience, gen_embedding"
				      " FROM records WHERE embedding IS NOT NULL"
				      " OR gen_embedding IS NOT NULL", -1, &st, NULL) != SQLITE_OK)
		return a2m_store_fail(s, "vectors: %s", sqlite3_errmsg(v->db));
	int step;
	while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
		size_t bytes = (size_t)sqlite3_column_bytes(st, 3);
		const void *blob = sqlite3_column_blob(st, 3);
		size_t dims = bytes / sizeof(double);
		/* A malformed blob reads as no vector, as the engine's rows do. */
		if (!blob || !dims || bytes % sizeof(double))
			dims = 0;
		size_t gbytes = (size_t)sqlite3_column_bytes(st, 5);
		const void *gblob = sqlite3_column_blob(st, 5);
		size_t gdims = gbytes / sizeof(float);
		if (!gblob || !gdims || gbytes % sizeof(float))
			gdims = 0;
		if (!dims && !gdims)
			continue;
		if (scratch_fit(v, dims, gdims) != 0) {
			rc = a2m_store_fail(s, "vectors: out of memory");
			break;
		}
		if (dims)
			memcpy(v->scratch, blob, dims * sizeof(double));
		if (gdims)
			memcpy(v->gscratch, gblob, gdims * sizeof(float));
		a2m_record r = {.seq = sqlite3_column_int64(st, 0),
				.tier = (char *)sqlite3_column_text(st, 1),
				.owner = (char *)sqlite3_column_text(st, 2),
				.embedding = dims ? v->scratch : NULL, .dims = dims,
				.gen_embedding = gdims ? v->gscratch : NULL, .gen_dims = gdims,
				.salience = sqlite3_column_double(st, 4)};
		a2m_vindex_put(v->vx, &r);
		if (!a2m_vindex_valid(v->vx))
			rc = a2m_store_fail(s, "vectors: out of memory");
	}
	if (!rc && step != SQLITE_DONE)
		rc = a2m_store_fail(s, "vectors: %s", sqlite3_errmsg(v->db));
	sqlite3_finalize(st);
	if (rc)
		a2m_vindex_clear(v->vx);
	else
		v->built = 1;
	return rc;
}

int a2m_sqlite_vectors_search(a2m_sqlite_vectors *v, a2m_store *s, const a2m_vector_search *q,
			      a2m_candidates *out)
{
	sqlite3_int64 dv = 0;
	memset(out, 0, sizeof *out);
	/* Built inside a transaction, the cache could keep writes a rollback undoes. */
	int in_tx = !sqlite3_get_autocommit(v->db);
	if (!v->built && in_tx)
		return A2M_STORE_NO_INDEX;
	int rc = data_version(v, s, &dv);
	if (rc)
		return rc;
	if (!v->built || dv != v->data_version || !a2m_vindex_valid(v->vx)) {
		if (in_tx)
			return A2M_STORE_NO_INDEX;
		if ((rc = build(v, s)))
			return rc;
		v->data_version = dv;
	}
	rc = a2m_vindex_search(v->vx, q, out);
	return rc == A2M_INTERNAL_ERROR ? a2m_store_fail(s, "vector search: out of memory") : rc;
}
