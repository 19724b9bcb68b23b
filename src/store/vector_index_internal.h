/*
** vector_index_internal.h — the vector rows' layout, shared by the files
** that keep and read them: vector_index.c (the rows, their sketch, the seq
** table, transactions), vector_search.c (the exact search and the search
** for bounds) and vector_quant.c (the 8-bit codes and the approximate
** search of the quantized mode). Nothing outside src/store/vector_*.c
** includes it.
*/
#ifndef A2M_VECTOR_INDEX_INTERNAL_H
#define A2M_VECTOR_INDEX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "store/unembedded.h"
#include "store/vector_index.h"

#define EMPTY_SEQ INT64_MIN
#define ODD_TIER  UINT32_MAX

typedef struct vtier {
	char     *name;     /* NULL: records without a tier */
	float    *vecs;     /* n rows of dims floats */
	float    *norms;    /* |row| */
	int64_t  *seqs;
	uint32_t *owners;   /* interned owner ids; 0 = no owner */
	/* The sketch (vector_kernels.c): each row as integers R times a scale s. */
	int16_t  *sk;       /* n rows of dims */
	float    *sk_scale; /* s */
	float    *sk_err;   /* |row - s R|, rounded up */
	float    *sk_len;   /* |s R|, rounded up */
	double   *norm2;    /* |row|^2 in double */
	/* The 8-bit codes of the quantized search (vector_quant.c), kept
	** once the space's first approximate search asked for them. */
	int8_t   *q8;       /* n rows of dims */
	float    *q8_scale; /* the row is about q8_scale times its code */
	float    *q8_unit;  /* q8_scale / |row| (0 for a row of no length) */
	size_t    n, cap;
} vtier;

/* Where a record's row is (open addressing, linear probing by seq). */
typedef struct vslot {
	int64_t  seq;       /* EMPTY_SEQ: a free slot */
	uint32_t tier;      /* ODD_TIER: a vector of another width, no row */
	uint32_t row;
} vslot;

/* A write waiting for its transaction's commit. */
typedef struct staged {
	int64_t seq;
	int     put;        /* 0: a removal */
	double  salience;
	char   *tier, *owner;
	float  *vec;        /* NULL: the record has no vector */
	size_t  dims;
	float  *gvec;       /* NULL: no generated vector */
	size_t  gdims;
	int     bare;       /* neither vector, and some text (unembedded.h) */
} staged;

/*
** One vector space: the caller's vectors (embedding) or the server's
** (gen_embedding). Each has its own width, rows and seq table: a record may
** sit in both, and the two are never compared (docs/EMBEDDINGS.md §4.1).
*/
typedef struct vspace {
	size_t    dims;     /* 0 until the first vector; reset when the space empties */
	int32_t   sk_max;   /* the sketch's largest integer, for dims */
	vtier    *tiers;
	size_t    ntiers, tcap;
	vslot    *slots;
	size_t    nslots, used;      /* nslots: 0 or a power of two */
	size_t    odd;               /* records whose vector has another width */
	int       codes;             /* every row has its 8-bit code (vector_quant.c) */
} vspace;

struct a2m_vindex {
	vspace    sp[2];             /* [0] the caller's, [1] the generated */
	char    **owners;            /* id i+1 is owners[i] (both spaces) */
	size_t    nowners, ocap;
	uint32_t *otab;              /* owner ids by name hash; 0 = free */
	size_t    notab;
	double    salience_max;      /* no row's record has more (never lowered
	                                but by a clear: a bound, not the max) */
	int       valid, in_tx;
	int       written;           /* a record was put since the last clear */
	staged   *log;
	size_t    nlog, logcap;
	float    *scratch;           /* a put's vector converted to float */
	size_t    scratch_n;
	a2m_unembedded *bare;        /* records without a vector; NULL: not kept */
};

/* The id of owner (NULL: 0), or 0 with *found 0 when it was never interned. */
uint32_t a2m_vindex_owner_id(const a2m_vindex *vx, const char *owner, int *found);

/*
** What q's filter reads of tier t: 0, none of its rows (skipped, empty, or
** its owner never interned); 1, every row; 2, only the rows of owner id
** *oid. The exact and approximate searches ask it alike.
*/
int a2m_vindex_tier_rule(const a2m_vindex *vx, const a2m_vector_search *q, const vtier *t,
			 uint32_t *oid);

/* ---- vector_quant.c: the 8-bit codes ---- */

/*
** Gives every row of sp its code (sp->codes set). Returns 0, or -1 when
** memory runs out (sp->codes 0, nothing else changed).
*/
int  a2m_vcodes_build(vspace *sp);

/* Room for cap rows of codes in t (sp->codes set). Returns 0 or -1. */
int  a2m_vcodes_reserve(const vspace *sp, vtier *t, size_t cap);

/* Row `row` of t was written (its float row is current): its code too. */
void a2m_vcodes_write(const vspace *sp, vtier *t, size_t row);

/* Row src's code moves to row dst (a row dropped, the last moved in). */
void a2m_vcodes_move(const vspace *sp, vtier *t, size_t dst, size_t src);

/* Frees t's codes. */
void a2m_vcodes_release(vtier *t);

/* The bytes a row's code takes beside its row, for a2m_vindex_bytes. */
size_t a2m_vcodes_row_bytes(const vspace *sp);

/*
** The approximate search of store.h (a2m_vector_search.pool) over space
** sp of vx, whose width is q->dims and which holds rows: see there.
** Returns 0, A2M_STORE_NO_INDEX when the codes cannot be built (memory;
** the caller then answers exactly), or A2M_INTERNAL_ERROR.
*/
int  a2m_vindex_search_pool(a2m_vindex *vx, vspace *sp, const a2m_vector_search *q,
			    a2m_candidates *out);

#endif
