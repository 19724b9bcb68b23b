/*
** postings_cache.h — the SQLite index's memory of the postings it read
** (sqlite_index.c).
**
** Reading a term's postings from SQLite is a b-tree step per posting, and
** the terms queries use most are the ones with the most postings: at 10k
** records they were over half the cost of a recall. The cache keeps the
** postings of the terms read last, up to a budget, for as long as the
** database is the one they were read from: whoever fills or reads it passes
** the database's data version (SQLite's SQLITE_FCNTL_DATA_VERSION, which
** changes at every commit, this connection's or another's), and a version
** other than the one the entries were read at empties it. The index also
** empties it whenever it writes postings itself, before they are
** committed. Least recently used terms go first when the budget is full.
**
** A cache may instead be kept valid term by term (a2m_pcache_stamps, the
** PostgreSQL engine): the writer of the index moves a stamp for each
** bucket of terms it changed, an entry notes its bucket's stamp when it
** is put, and an entry whose bucket's stamp has moved since is dropped
** when it is next looked up. A commit then costs the entries of the
** buckets it wrote, not the whole cache.
*/
#ifndef A2M_POSTINGS_CACHE_H
#define A2M_POSTINGS_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* Postings are kept as store.h's a2m_posting (seq, tf, length). */
typedef struct a2m_pcache a2m_pcache;

/*
** A cache holding at most budget bytes in all (a posting is 16; an entry
** counts 64 more). NULL when memory runs out.
*/
a2m_pcache *a2m_pcache_new(size_t budget);

/* Makes budget bytes the most c holds, evicting what no longer fits. */
void a2m_pcache_budget(a2m_pcache *c, size_t budget);

/*
** The bytes c's entries count against its budget now (lazy entries too big
** to keep, this period's loans, not counted), and in *budget the most it
** may hold: what the postings_cache_mb option is seen by (tests).
*/
size_t a2m_pcache_used(const a2m_pcache *c, size_t *budget);

/* Frees the cache. NULL is a no-op. */
void a2m_pcache_free(a2m_pcache *c);

/* Forgets every entry. */
void a2m_pcache_clear(a2m_pcache *c);

/* Empties the cache when version is not the one its entries were read at. */
void a2m_pcache_validate(a2m_pcache *c, uint64_t version);

/*
** After this connection's own commit, which moved the data version from
** "from" to "to" without writing postings (a write of postings empties the
** cache first): the entries stay, now as of "to". A cache at another
** version is emptied.
*/
void a2m_pcache_adopt(a2m_pcache *c, uint64_t from, uint64_t to);

/*
** Keys the cache on per-bucket stamps from now on (instead of one
** version): n stamps (a power of two) at stamps, which the caller keeps
** unchanged and alive until the next call or the cache's end. A term's
** bucket is a2m_pcache_bucket(term, len, n). An entry put now notes its
** bucket's stamp; one found with another stamp in its bucket is dropped
** and reported missing. n 0 (stamps NULL) leaves stamped entries unchecked:
** only for a caller that will not look anything up before setting stamps.
*/
void a2m_pcache_stamps(a2m_pcache *c, const uint64_t *stamps, size_t n);

/* The bucket of term among n (a power of two) in a stamped cache. */
size_t a2m_pcache_bucket(const char *term, size_t len, size_t n);

/*
** Visits the cached postings of term (len bytes), in the order they were
** read. Returns 1 when the term is cached (*rc: 0, or the visit's negative
** code), 0 when it is not.
*/
int a2m_pcache_visit(a2m_pcache *c, const char *term, size_t len, a2m_posting_visit visit,
		     void *ctx, int *rc);

/*
** Lends the cached postings of term (len bytes): *v, *n of them (*v may be
** NULL when *n is 0), in the order they were read. Returns 1 when the term
** is cached, 0 when it is not. The array stays where it is, unchanged, until
** the current lending period ends (a2m_pcache_next_period) or the cache is
** emptied (clear, validate, adopt, free): eviction passes it by meanwhile,
** even if the cache then holds more than its budget.
*/
int a2m_pcache_lend(a2m_pcache *c, const char *term, size_t len, const a2m_posting **v,
		    size_t *n);

/*
** a2m_pcache_lend with the bounds of the postings (store.h
** a2m_postings_lent), computed when they were put. Returns 1 when lent, 0
** when the term is not cached, -1 when it is but its postings are not in
** ascending seq (lend them with a2m_pcache_lend).
*/
int a2m_pcache_lend_bounds(a2m_pcache *c, const char *term, size_t len,
			   a2m_postings_lent *out);

/*
** What a lazy entry's own cost (a2m_pcache_lazy_ops cost) may grow to by
** the blocks its owner fills at will (SQLite's probes: a2m_seg_lazy_cap):
** a quarter of the budget, less the entry's own bytes. An entry may be
** kept up to half (its bytes and tables), and sheds past that.
*/
size_t a2m_pcache_entry_most(const a2m_pcache *c);

/* Ends the current lending period: what was lent in it may be evicted again. */
void a2m_pcache_next_period(a2m_pcache *c);

/*
** Keeps a copy of the n postings of term (n may be 0: a term no record
** holds), making room by shedding the blocks lazy entries decoded (least
** recently used first), then by evicting the least recently used; a term
** bigger than half the budget, or no memory, is simply not kept.
** Entries lent in the current period are not evicted (a2m_pcache_lend).
*/
void a2m_pcache_put(a2m_pcache *c, const char *term, size_t len, const a2m_posting *v,
		    size_t n);

/*
** A list kept as its owner's object and read a block at a time (SQLite's
** segments with skip tables, sqlite_segments.h a2m_seg_lazy): lend lends
** it as it is (blocks filled on demand), fill_all decodes every block (0,
** or -1: not readable), cost says what it holds now in bytes, shed (NULL:
** none) lets go of the blocks decoded that it can decode again (called
** only while nothing of it is lent), whole says whether it is decoded
** whole with nothing left to shed (needed with shed), free frees it.
*/
typedef struct a2m_pcache_lazy_ops {
	void   (*lend)(void *obj, a2m_postings_lent *out);
	int    (*fill_all)(void *obj);
	size_t (*cost)(const void *obj);
	void   (*shed)(void *obj);
	int    (*whole)(const void *obj);
	void   (*free)(void *obj);
} a2m_pcache_lazy_ops;

/*
** Keeps obj (ops: how to read it) as term's entry, evicting as
** a2m_pcache_put does. Takes obj whatever happens: returns 1 when kept; 2
** when too big to keep (over half the budget) and so kept only
** until the current lending period ends (a2m_pcache_next_period; counted
** against no budget: the lender holds it for its loan, as it would a copy);
** 0 when it was freed (term already cached, no memory). Lent by
** a2m_pcache_lend_bounds as it is; a2m_pcache_lend and a2m_pcache_visit
** decode it whole first (reporting the term missing when they cannot).
** Its cost grows as blocks are decoded and is counted at each lend (others
** evicted for it); once over half the budget, its decoded blocks
** are shed (ops->shed) before its first loan of a period, or, decoded
** whole, it is let go when the period ends.
*/
int a2m_pcache_put_lazy(a2m_pcache *c, const char *term, size_t len, void *obj,
			const a2m_pcache_lazy_ops *ops);

#endif
