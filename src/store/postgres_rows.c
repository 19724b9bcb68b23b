/*
** postgres_rows.c — a record's row in the PostgreSQL engine: its values as
** statement parameters, and a result row read back into a record.
**
** Vectors are bytea: the caller's embedding as little-endian IEEE float64
** (verbatim, spec §3.7: every bit of every double comes back), the
** server's gen_embedding as little-endian float32, whatever the byte order
** of the machine that wrote them, so servers of one deployment may differ.
** A vector column whose length is not a whole number of elements reads as
** no vector, as the SQLite engine treats a malformed blob.
*/
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/postgres_internal.h"

/* The bytes of n doubles (or floats, with width 4), little-endian, into out. */
static void put_le(char *out, const void *v, size_t n, size_t width)
{
	const unsigned char *in = v;
	for (size_t i = 0; i < n; i++, in += width, out += width) {
		uint64_t bits = 0;
		if (width == 8) {
			memcpy(&bits, in, 8);
		} else {
			uint32_t b32;
			memcpy(&b32, in, 4);
			bits = b32;
		}
		for (size_t k = 0; k < width; k++)
			out[k] = (char)((bits >> (8 * k)) & 0xff);
	}
}

/* n elements of width bytes from little-endian bytes into v. */
static void get_le(void *v, const char *in, size_t n, size_t width)
{
	unsigned char *out = v;
	for (size_t i = 0; i < n; i++, in += width, out += width) {
		uint64_t bits = 0;
		for (size_t k = 0; k < width; k++)
			bits |= (uint64_t)(unsigned char)in[k] << (8 * k);
		if (width == 8) {
			memcpy(out, &bits, 8);
		} else {
			uint32_t b32 = (uint32_t)bits;
			memcpy(out, &b32, 4);
		}
	}
}

int a2m_pg_bind_record(pgparams *p, const a2m_record *rec, char **scratch)
{
	size_t dims = rec->embedding ? rec->dims : 0;
	size_t gdims = rec->gen_embedding ? rec->gen_dims : 0;
	char *buf = NULL;
	*scratch = NULL;
	if (dims || gdims) {
		if (!(buf = malloc(dims * 8 + gdims * 4 + 1)))
			return -1;
		put_le(buf, rec->embedding, dims, 8);
		put_le(buf + dims * 8, rec->gen_embedding, gdims, 4);
		*scratch = buf;
	}
	a2m_pg_param_text(p, rec->id);
	a2m_pg_param_text(p, rec->content);
	a2m_pg_param_int8(p, rec->created_at);
	a2m_pg_param_text(p, rec->role);
	a2m_pg_param_text(p, rec->metadata);
	a2m_pg_param_text(p, rec->group);
	a2m_pg_param_text(p, rec->tier);
	a2m_pg_param_float8(p, rec->salience);
	a2m_pg_param_int8(p, rec->accessed_at);
	a2m_pg_param_int8(p, rec->access_count);
	a2m_pg_param_text(p, rec->owner);
	a2m_pg_param_text(p, rec->session);
	if (rec->key)
		a2m_pg_param_bytea(p, rec->key, strlen(rec->key));
	else
		a2m_pg_param_text(p, NULL);
	a2m_pg_param_int8(p, rec->revision);
	if (dims)
		a2m_pg_param_bytea(p, buf, dims * 8);
	else
		a2m_pg_param_text(p, NULL);
	a2m_pg_param_text(p, rec->uri);
	a2m_pg_param_text(p, rec->media_type);
	if (gdims)
		a2m_pg_param_bytea(p, buf + dims * 8, gdims * 4);
	else
		a2m_pg_param_text(p, NULL);
	/* Extensions (schema step 4): NULL when unused, as 0 means none. */
	if (rec->expires_at)
		a2m_pg_param_int8(p, rec->expires_at);
	else
		a2m_pg_param_text(p, NULL);
	if (rec->fingerprint)
		a2m_pg_param_int8(p, (int64_t)rec->fingerprint);
	else
		a2m_pg_param_text(p, NULL);
	return 0;
}

int a2m_pg_read_row(pgstore *s, const PGresult *r, int row, a2m_record *rec)
{
	const a2m_pq_api *pq = s->pq;
	int oom = 0;
	rec->seq = a2m_pg_int8(s, r, row, 0);
	rec->id = a2m_pg_text(s, r, row, 1, &oom);
	rec->content = a2m_pg_text(s, r, row, 2, &oom);
	rec->created_at = a2m_pg_int8(s, r, row, 3);
	rec->role = a2m_pg_text(s, r, row, 4, &oom);
	rec->metadata = a2m_pg_text(s, r, row, 5, &oom);
	rec->group = a2m_pg_text(s, r, row, 6, &oom);
	rec->tier = a2m_pg_text(s, r, row, 7, &oom);
	rec->salience = a2m_pg_float8(s, r, row, 8);
	rec->accessed_at = a2m_pg_int8(s, r, row, 9);
	rec->access_count = a2m_pg_int8(s, r, row, 10);
	rec->owner = a2m_pg_text(s, r, row, 11, &oom);
	rec->session = a2m_pg_text(s, r, row, 12, &oom);
	rec->key = a2m_pg_text(s, r, row, 13, &oom);
	rec->revision = a2m_pg_int8(s, r, row, 14);
	if (!pq->getisnull(r, row, 15)) {
		size_t bytes = (size_t)pq->getlength(r, row, 15);
		if (bytes && bytes % 8 == 0) {
			if ((rec->embedding = malloc(bytes))) {
				rec->dims = bytes / 8;
				get_le(rec->embedding, pq->getvalue(r, row, 15), rec->dims, 8);
			} else {
				oom = 1;
			}
		}
	}
	rec->uri = a2m_pg_text(s, r, row, 16, &oom);
	rec->media_type = a2m_pg_text(s, r, row, 17, &oom);
	if (!pq->getisnull(r, row, 18)) {
		size_t bytes = (size_t)pq->getlength(r, row, 18);
		if (bytes && bytes % 4 == 0) {
			if ((rec->gen_embedding = malloc(bytes))) {
				rec->gen_dims = bytes / 4;
				get_le(rec->gen_embedding, pq->getvalue(r, row, 18), rec->gen_dims, 4);
			} else {
				oom = 1;
			}
		}
	}
	/* NULL reads as 0: no expiry, no fingerprint. */
	rec->expires_at = a2m_pg_int8(s, r, row, 19);
	rec->fingerprint = (uint64_t)a2m_pg_int8(s, r, row, 20);
	if (oom || !rec->id || !rec->content) {
		a2m_record_clear(rec);
		return a2m_store_fail(&s->base, "read: out of memory");
	}
	return 0;
}
