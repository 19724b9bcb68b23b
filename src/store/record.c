/*
** record.c — allocation, copying and release of a2m_record (see record.h).
*/
#include <stdlib.h>
#include <string.h>

#include "store/record.h"

a2m_record *a2m_record_new(void)
{
	return calloc(1, sizeof(a2m_record));
}

void a2m_record_clear(a2m_record *rec)
{
	if (!rec)
		return;
	free(rec->id);
	free(rec->content);
	free(rec->role);
	free(rec->metadata);
	free(rec->group);
	free(rec->tier);
	free(rec->owner);
	free(rec->session);
	free(rec->key);
	free(rec->embedding);
	free(rec->gen_embedding);
	free(rec->uri);
	free(rec->media_type);
	memset(rec, 0, sizeof *rec);
}

void a2m_record_free(a2m_record *rec)
{
	a2m_record_clear(rec);
	free(rec);
}

/* strdup that passes NULL through; sets *failed when memory runs out. */
static char *dup_or_null(const char *s, int *failed)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*failed = 1;
	return d;
}

int a2m_record_copy(a2m_record *dst, const a2m_record *src)
{
	int failed = 0;
	*dst = *src;
	dst->id = dup_or_null(src->id, &failed);
	dst->content = dup_or_null(src->content, &failed);
	dst->role = dup_or_null(src->role, &failed);
	dst->metadata = dup_or_null(src->metadata, &failed);
	dst->group = dup_or_null(src->group, &failed);
	dst->tier = dup_or_null(src->tier, &failed);
	dst->owner = dup_or_null(src->owner, &failed);
	dst->session = dup_or_null(src->session, &failed);
	dst->key = dup_or_null(src->key, &failed);
	dst->uri = dup_or_null(src->uri, &failed);
	dst->media_type = dup_or_null(src->media_type, &failed);
	dst->embedding = NULL;
	dst->dims = 0;
	if (src->embedding && src->dims) {
		dst->dims = src->dims;
		dst->embedding = malloc(src->dims * sizeof(double));
		if (dst->embedding)
			memcpy(dst->embedding, src->embedding, src->dims * sizeof(double));
		else
			failed = 1;
	}
	dst->gen_embedding = NULL;
	dst->gen_dims = 0;
	if (src->gen_embedding && src->gen_dims) {
		dst->gen_dims = src->gen_dims;
		dst->gen_embedding = malloc(src->gen_dims * sizeof(float));
		if (dst->gen_embedding)
			memcpy(dst->gen_embedding, src->gen_embedding,
			       src->gen_dims * sizeof(float));
		else
			failed = 1;
	}
	if (failed) {
		a2m_record_clear(dst);
		return -1;
	}
	return 0;
}

a2m_record *a2m_record_dup(const a2m_record *src)
{
	a2m_record *rec = malloc(sizeof *rec);
	if (!rec)
		return NULL;
	if (a2m_record_copy(rec, src) != 0) {
		free(rec);
		return NULL;
	}
	return rec;
}

void a2m_record_array_free(a2m_record **recs, size_t n)
{
	if (!recs)
		return;
	for (size_t i = 0; i < n; i++)
		a2m_record_free(recs[i]);
	free(recs);
}
