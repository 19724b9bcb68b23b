/*
** record.h — one remembered thing, as every layer below the protocol sees it.
**
** A record is plain C data: strings are NUL-terminated UTF-8 owned by the
** record, absent optional fields are NULL (or 0). Times are milliseconds since
** the epoch (util/clock.h). Metadata is kept as the compact JSON text it was
** written as, so the stores never need to understand it and it round-trips
** exactly (spec §3.1).
*/
#ifndef A2M_RECORD_H
#define A2M_RECORD_H

#include <stddef.h>
#include <stdint.h>

typedef struct a2m_record {
	char    *id;            /* opaque, unique in the store (spec §3.2) */
	char    *content;       /* the text that is remembered and searched */
	int64_t  created_at;    /* ms since the epoch, UTC */
	int64_t  seq;           /* assigned by the store on insert: strictly
	                           increasing, so records created in the same
	                           millisecond still have one stable order */
	char    *role;          /* NULL when absent */
	char    *metadata;      /* JSON text of the metadata object; NULL when absent */
	char    *group;         /* NULL when absent */
	char    *tier;          /* NULL when the server has no tiers */
	double   salience;
	int64_t  accessed_at;   /* 0 = never recalled */
	int64_t  access_count;
	char    *owner;
	char    *session;
	char    *key;
	int64_t  revision;
	double  *embedding;     /* the caller's vector, verbatim; NULL when none */
	size_t   dims;          /* length of embedding */
	float   *gen_embedding; /* the server's own vector of content, made by
	                           its embedder (docs/EMBEDDINGS.md §4): derived
	                           data, never the caller's; NULL when none */
	size_t   gen_dims;      /* length of gen_embedding */
	char    *uri;
	char    *media_type;
	int64_t  expires_at;    /* when it stops being returned (x-expiry); 0 = never */
	uint64_t fingerprint;   /* its normalised content and role, hashed by
	                           the stack for duplicate suppression (x-dedup);
	                           0 = none. Only an engine with by_fingerprint
	                           keeps it (store.h) */
} a2m_record;

/* Allocates a zeroed record. Returns NULL when memory runs out. */
a2m_record *a2m_record_new(void);

/* Frees rec and everything it owns. NULL is a no-op. */
void a2m_record_free(a2m_record *rec);

/* Frees everything rec owns and zeroes it, keeping the struct itself. */
void a2m_record_clear(a2m_record *rec);

/*
** Returns a deep copy of src, or NULL when memory runs out. The caller frees
** it with a2m_record_free().
*/
a2m_record *a2m_record_dup(const a2m_record *src);

/*
** Deep-copies src into dst (which must be zeroed or cleared first). Returns 0,
** or -1 when memory runs out (dst is then cleared).
*/
int a2m_record_copy(a2m_record *dst, const a2m_record *src);

/* Frees an array of n records and the array itself. */
void a2m_record_array_free(a2m_record **recs, size_t n);

#endif
