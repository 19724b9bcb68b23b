/*
** vector_index.h — the caller's vectors as contiguous float32 rows, per
** tier, for exact search (store.h, vector_search); and beside them, as a
** second space with its own width and rows, the server's generated
** vectors (gen_embedding, docs/EMBEDDINGS.md §4), searched apart
** (a2m_vector_search.generated): a put writes both of a record's vectors,
** each to its own space, and the two are never compared. Both engines keep one:
** memory.c from the start, sqlite.c as a cache built from the file at the
** first search. It is derived data: whenever it cannot follow a write
** (memory ran out), it marks itself invalid and the engine rebuilds it.
**
** Rows are kept per tier, each row with its record's seq, an owner id
** (owners are interned; 0 = no owner) and its Euclidean norm, so that cosine
** is one dot product per row and a filter can skip a whole tier or test an
** integer per row. Each row also has a 16-bit sketch with its error, which
** a bound search reads instead (half the bytes; store.h, bound), and, once
** an approximate search asked for them, an 8-bit code (vector_quant.c;
** store.h, pool). A seq → (tier, row) table serves removes and moves.
** Only vectors of a space's width (fixed by the first vector put, and
** again by the first put after the space emptied: a model change drops
** every generated vector, then brings vectors of its own width) get a
** row; a record whose vector has another width is counted as odd, so a
** query of that width can be sent back to a scan.
**
** Transactions: between begin() and commit(), puts and removes are staged
** in a log and change nothing a search sees; commit() applies them in
** order, rollback() drops them. A search while the log is not empty answers
** A2M_STORE_NO_INDEX (the caller scans the store, which sees its own
** writes). Nothing here fails its caller: a write that cannot be followed
** invalidates the index instead.
*/
#ifndef A2M_VECTOR_INDEX_H
#define A2M_VECTOR_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct a2m_vindex a2m_vindex;

/* An empty, valid index. Returns NULL when memory runs out. */
a2m_vindex *a2m_vindex_new(void);

/* Frees vx. NULL is a no-op. */
void a2m_vindex_free(a2m_vindex *vx);

/* Empties vx (staged writes included) and makes it valid again, for a rebuild. */
void a2m_vindex_clear(a2m_vindex *vx);

/* Nonzero while vx follows every write; 0 once one could not be followed. */
int a2m_vindex_valid(const a2m_vindex *vx);

/* Marks vx invalid: the engine must clear and rebuild it before searching. */
void a2m_vindex_invalidate(a2m_vindex *vx);

/*
** rec (borrowed; its seq set) was inserted or updated: in each space its
** row now holds rec's vector of that space (embedding, gen_embedding),
** tier and owner (in place, or moved to another tier), or is removed when
** rec has no such vector.
*/
void a2m_vindex_put(a2m_vindex *vx, const a2m_record *rec);

/*
** Nonzero when the rows of a record updated from a to b may change: its
** vectors (either), tier, owner or salience differ (a search reports a bound on the
** rows' salience). A touch (access counts) differs in none.
*/
int a2m_vindex_differs(const a2m_record *a, const a2m_record *b);

/* The record seq was removed. Unknown seqs are ignored. */
void a2m_vindex_remove(a2m_vindex *vx, int64_t seq);

/* A store transaction: writes are staged until commit, dropped at rollback. */
void a2m_vindex_begin(a2m_vindex *vx);
void a2m_vindex_commit(a2m_vindex *vx);
void a2m_vindex_rollback(a2m_vindex *vx);

/*
** From now on vx also keeps the set of records that have neither vector
** and some text (unembedded.h): the records a server embedder may owe a
** vector, which the memory engine finds here rather than by a scan. When a
** record was put in vx already, vx is marked invalid, so the engine
** rebuilds it with every record. Returns 0,
** or -1 when memory runs out (nothing changed).
*/
int a2m_vindex_keep_unembedded(a2m_vindex *vx);

/*
** The seqs of that set's records in tier (NULL: without a tier) above
** after, ascending, at most max, into out, their number in *n. Returns 0,
** or A2M_STORE_NO_INDEX when the set is not kept, is invalid or writes are
** staged (the caller scans instead).
*/
int a2m_vindex_unembedded(const a2m_vindex *vx, const char *tier, int64_t after, int64_t *out,
			  size_t max, size_t *n);

/*
** Rows held (every tier) and the bytes they take, for describe and the
** benchmarks.
*/
size_t a2m_vindex_rows(const a2m_vindex *vx);
size_t a2m_vindex_bytes(const a2m_vindex *vx);

/*
** The search of store.h (vector_search): every row that passes q->filter,
** with its raw measure, into *out (its v freed with free()), and the bound
** on their records' salience. Returns 0,
** A2M_STORE_NO_INDEX (invalid, staged writes pending, or odd-width vectors
** the query might match) or A2M_INTERNAL_ERROR when memory runs out.
*/
int a2m_vindex_search(a2m_vindex *vx, const a2m_vector_search *q, a2m_candidates *out);

/*
** The measures themselves, shared with the scan path (rank/vector.c) so
** both give the same figure for the same pair. n floats each.
*/
float a2m_vec_dot(const float *a, const float *b, size_t n);
float a2m_vec_l2sq(const float *a, const float *b, size_t n);
/* The integer dot product of two sketches (exact: see vector_index.c). */
int32_t a2m_vec_dot16(const int16_t *a, const int16_t *b, size_t n);

/* The raw measure of store.h's a2m_vector_measure for a pair (norms given). */
double a2m_vec_measure(a2m_vector_measure m, const float *q, double qnorm, const float *r,
		       double rnorm, size_t n);

/*
** The 16-bit sketch (vector_kernels.c): the largest integer for a width,
** so that dims × max² stays below 2^31 and a2m_vec_dot16 is exact; and v
** (n floats) as integers R of magnitude at most max into out, returning
** the scale s, with |v − sR| in *err and |sR| in *len.
*/
int32_t a2m_vec_sketch_max(size_t dims);
float   a2m_vec_sketch(const float *v, size_t n, int32_t max, int16_t *out, double *err,
		       double *len);

/*
** The 8-bit code of the quantized mode (vector_kernels.c): v (n floats) as
** integers C of magnitude at most 127 into out, returning the scale s (v
** is about sC). A query is coded as a sketch (a2m_vec_sketch) whose
** largest integer is a2m_vec_code_qmax(n), which keeps a2m_vec_dot8 exact
** in int32.
*/
float   a2m_vec_code8(const float *v, size_t n, int8_t *out);
int32_t a2m_vec_code_qmax(size_t dims);
/* The integer product of a query's code q and a row's code c. */
int32_t a2m_vec_dot8(const int16_t *q, const int8_t *c, size_t n);

#endif
