/*
** memory_index.h — the in-memory engine's term index: memory.c keeps its
** records' index in one, and the BM25 scorer builds a throw-away one over
** the candidates it judges when a store keeps no index (rank/bm25.c).
**
** A term maps to its postings, (seq, tf, length) kept in ascending seq
** through every write (so block-max can walk any list): an array lent in
** place, or for a short list bytes copied out on request (memory_packed.h,
** memory_index.c); a doc
** is one record's analysed text. Linking a doc whose seq is above every
** posting of its terms appends (O(its terms)); unlinking a doc, or linking
** one at a seq below a term's last, finds its posting by binary search and
** shifts the term's tail by one. Docs are owned by the caller. A seq has
** the postings of at most one text linked at a time; a doc describing them
** again (a2m_mindex_describe) counts as linked beside the one that linked
** them, and either can unlink them (the other's mark is then stale: the
** caller uses one of them).
**
** The split between prepare (may allocate, changes nothing visible) and
** link/unlink (never allocate, never fail) is what lets memory.c keep its
** promise that rollback cannot fail: a transaction's undo only ever links
** and unlinks docs it kept, into posting arrays that never shrink while a
** transaction is open. Terms left without postings are freed by sweep(),
** which memory.c calls once no undo step can need them any more.
*/
#ifndef A2M_MEMORY_INDEX_H
#define A2M_MEMORY_INDEX_H

#include <stdint.h>

#include "store/store.h"

typedef struct a2m_mindex a2m_mindex;
typedef struct a2m_mdoc a2m_mdoc;

/* An empty index. Returns NULL when memory runs out. */
a2m_mindex *a2m_mindex_new(void);

/* Frees the index and its terms (docs belong to their records). NULL: no-op. */
void a2m_mindex_free(a2m_mindex *ix);

/*
** Builds the doc of record seq from its analysed text, creating any term it
** lacks and making room for one more posting in each. Nothing a reader sees
** changes. Returns 0 and sets *out (free with a2m_mdoc_free unless linked
** and kept), or -1 when memory runs out.
*/
int a2m_mindex_prepare(a2m_mindex *ix, const a2m_doc_terms *dt, int64_t seq,
		       a2m_mdoc **out);

/*
** The doc of postings record seq already has in the index, built from the
** text they were linked from analysed again (analysis is deterministic,
** store.h): it is marked linked, so that unlink or replace can take them
** out, and it creates no term and makes no room. An engine that keeps no
** doc per record (memory.c) builds one this way when a record leaves or
** changes. Returns 0 and sets *out (free with a2m_mdoc_free once unlinked
** and no longer needed), or -1 when memory runs out.
*/
int a2m_mindex_describe(a2m_mindex *ix, const a2m_doc_terms *dt, int64_t seq,
			a2m_mdoc **out);

/* Adds a prepared (or previously unlinked) doc's postings. Cannot fail. */
void a2m_mindex_link(a2m_mindex *ix, a2m_mdoc *d);

/* Removes a linked doc's postings; the doc can be linked again. Cannot fail. */
void a2m_mindex_unlink(a2m_mindex *ix, a2m_mdoc *d);

/*
** Replaces linked doc old by d, a prepared (or unlinked) doc of the same
** seq: as unlinking old and linking d, but a term both hold has its
** posting rewritten where it sits, so a rewrite that keeps most of its
** words (the common terms, the long lists) moves no postings. With old
** NULL, unlinked or of another seq, it unlinks and links. Cannot fail.
*/
void a2m_mindex_replace(a2m_mindex *ix, a2m_mdoc *old, a2m_mdoc *d);

/* Frees an unlinked doc. NULL is a no-op. */
void a2m_mdoc_free(a2m_mdoc *d);

/* Frees the terms that are left without postings. */
void a2m_mindex_sweep(a2m_mindex *ix);

void a2m_mindex_stats(const a2m_mindex *ix, a2m_index_stats *out);

/* Lends term's postings (*n at *v; NULL and 0 when none) until the next
** change to the index. Returns 0, or 1 when they are kept packed and not
** lent (store.h index_postings_view: a2m_mindex_postings copies them). */
int a2m_mindex_view(const a2m_mindex *ix, const char *term, size_t len,
		    const a2m_posting **v, size_t *n);

/*
** Lends term's postings with their bounds (store.h a2m_postings_lent; none:
** n 0) until the next change to the index. Returns 0, or 2 when they are
** kept packed (a short list, memory_packed.h) and must be copied with
** a2m_mindex_postings (store.h index_postings_lend).
*/
int a2m_mindex_lend(const a2m_mindex *ix, const char *term, size_t len,
		    a2m_postings_lent *out);

/* Visits the postings of term; returns 0 or the visit's negative code. */
int a2m_mindex_postings(const a2m_mindex *ix, const char *term, size_t len,
			a2m_posting_visit visit, void *ctx);

/* Receives one term (len bytes at term) and its n postings; nonzero stops the walk. */
typedef int (*a2m_mindex_term_visit)(const char *term, size_t len, const a2m_posting *p,
				     size_t n, void *ctx);

/*
** Visits every term the index holds, in no particular order, with its
** postings (a term left without any, until sweep() frees it, included;
** a packed list decoded into a buffer of the call's). Returns 0, the
** visit's nonzero code, or -1 when memory runs out. For the consistency
** check.
*/
int a2m_mindex_each(const a2m_mindex *ix, a2m_mindex_term_visit visit, void *ctx);

#endif
