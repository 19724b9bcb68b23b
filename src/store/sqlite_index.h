/*
** sqlite_index.h — the SQLite engine's term index, for sqlite.c only.
**
** Three tables of its own, beside the records, written in the records'
** transaction:
**
**   a2m_segments(seg, term, data)  a rowid table, its key (seg, term) in
**       the unique index a2m_segments_key (postings/7; a WITHOUT ROWID
**       table before, sqlite_segments.h says why no longer): the segments (sqlite_segments.h), each a run of rows appended by one
**       commit or merge; a row is a block of terms (term: its first), each
**       with its postings (seq, tf, dl: the record's length, so BM25 needs
**       no second lookup) and tombstones, in ascending seq.
**   a2m_segdir(seg, level, entries, bloom, nonce, maxseq)  the live segments, each with a
**       Bloom filter of its terms (bloom.h): a reader reads a term's block
**       from each segment whose filter does not rule the term out, the
**       newest segment's entry winning per seq; and the highest seq of a
**       posting each holds, by which merges drop the tombstones nothing
**       older needs (sqlite_segments.h).
**   a2m_index_stats(docs, total_len, unindexed)  one row.
**   a2m_segmerge, a2m_seghashes, a2m_segdrop  merges of big levels under
**       way, a step per commit, and the rows of segments they retired
**       (sqlite_segments_step.c).
**
** Postings are buffered until the transaction commits (or something reads
** the index inside it that cannot be read from the buffer) and then written
** as one new segment, which may start a merge (see sqlite_segments.c for
** the policy and its cost). A commit of fresh inserts only leaves them in
** the buffer instead, as the tail, until a few hundred records wait
** (sqlite_index_tail.c): a2m_meta's row "indexed" (the mark) is the last
** seq the segments account for, the records above it are the tail, and
** every connection reads them from the records to add their postings and
** figures to what the tables hold. Postings read outside a transaction
** are kept in memory (postings_cache.h) until the database changes.
**
** The row "index" of a2m_meta names the layout and the analyser version
** the tables were built with; when it is missing or differs, opening the
** index drops and rebuilds both tables from the records. The tables are
** not part of the schema migrations (sqlite_schema.c) because they are
** derived data: they can always be rebuilt, and a file from before the
** index simply gets one on its first read-write open.
**
** A record's postings are removed by analysing its old content again (the
** analyser is deterministic, and any other analyser would have rebuilt the
** index), which saves keeping a second copy of every term per record.
*/
#ifndef A2M_SQLITE_INDEX_H
#define A2M_SQLITE_INDEX_H

#include <sqlite3.h>

#include "store/store.h"

/* The page cache of a connection that keeps an index (PRAGMA cache_size). */
#define A2M_SQLITE_INDEX_CACHE_KIB "65536"

typedef struct a2m_sqlite_index a2m_sqlite_index;

/*
** Sets *out to the data version of db's main file (SQLITE_FCNTL_DATA_VERSION:
** it changes at every commit, this connection's or another's), which the
** engine's caches are keyed on. Returns 1, or 0 when it cannot be read
** (then a cache must not trust what it holds).
*/
int a2m_sqlite_data_version(sqlite3 *db, unsigned *out);

/*
** The value of a2m_meta's row "index" in a file whose index was built for
** ix: "layout|analyser version" (an index whose row differs is rebuilt at
** the next read-write open). malloc'd; NULL when memory runs out.
*/
char *a2m_sqlite_index_version(const a2m_indexer *ix);

/*
** Whether have (a2m_meta's row "index") names an index ix can use: 1 when
** it is a2m_sqlite_index_version(ix), 2 when it is the layout before the
** tail with ix's analyser (every record indexed: usable as it is), 3 when
** it is the layout before skip tables (plain lists: usable as it is), 4
** when it is the layout before the rowid table (postings/6: the same rows
** in a WITHOUT ROWID table; a read-write open moves them), 0 when none
** (NULL included).
*/
int a2m_sqlite_index_version_ok(const a2m_indexer *ix, const char *have);

/*
** Makes the index of a new file, empty, for ix, inside the caller's open
** transaction (the schema's: a2m_sqlite_migrate), as a rebuild of no
** records would: a2m_sqlite_index_open then finds it current. Errors go to
** base->errmsg. Returns 0 or a negative code.
*/
int a2m_sqlite_index_create(sqlite3 *db, a2m_store *base, const a2m_indexer *ix);

/*
** Opens the index of db for ix. Read-write: creates or rebuilds it as
** needed, in its own transaction (none may be open). Read-only: uses it if
** it was built with this very ix->version, else *out is NULL (no index).
** Errors go to base->errmsg. Returns 0 or a negative code.
*/
int a2m_sqlite_index_open(sqlite3 *db, a2m_store *base, int read_only, a2m_indexer *ix,
			  a2m_sqlite_index **out);

/* Finalizes the statements and frees x. NULL is a no-op. */
void a2m_sqlite_index_close(a2m_sqlite_index *x);

/* Analyses text with the index's analyser into *dt (zeroed first). */
int a2m_sqlite_index_analyze(a2m_sqlite_index *x, a2m_store *base, const char *text,
			     a2m_doc_terms *dt);

/* Releases what a2m_sqlite_index_analyze made. x NULL: a no-op. */
void a2m_sqlite_index_release(a2m_sqlite_index *x, a2m_doc_terms *dt);

/*
** Before an update or remove of record id, which must take its postings
** out: *found = whether it exists, *seq its seq, *changed = whether
** new_content (NULL for a remove) differs from its content, and *dt the
** analysis of its current content when it changed (release it in any case).
*/
int a2m_sqlite_index_old_terms(a2m_sqlite_index *x, a2m_store *base, const char *id,
			       const char *new_content, int64_t *seq, a2m_doc_terms *dt,
			       int *found, int *changed);

/*
** Makes room to buffer the postings of a and b (either may be NULL), so
** that the apply calls of one write cannot fail half way. Returns 0, or -1
** when memory runs out.
*/
int a2m_sqlite_index_reserve(a2m_sqlite_index *x, const a2m_doc_terms *a,
			     const a2m_doc_terms *b);

/*
** Buffers the addition (sign +1) or removal (-1) of the postings of record
** seq whose content analysed to dt, and changes the pending figures by as
** much. Room must have been reserved. Nothing reaches the database before
** a2m_sqlite_index_flush.
*/
void a2m_sqlite_index_apply(a2m_sqlite_index *x, int64_t seq, const a2m_doc_terms *dt,
			    int sign);

/*
** At COMMIT, inside the caller's transaction: leaves the buffer as the tail
** when it holds only inserts above the mark and is small, else writes the
** buffered postings, sorted by (term, seq), as one segment, then the
** pending figures and the mark; and writes the merge begun at the
** transaction's start if any. Returns 0 or a negative code; the caller
** then rolls back.
*/
int a2m_sqlite_index_flush(a2m_sqlite_index *x, a2m_store *base);

/*
** At the start of a write transaction, with the write lock: brings the tail
** to what the file holds (another connection may have written), then
** begins merging a full level of the index on a thread of its own
** (a2m_segments_merge_ahead), for the commit to write (only a head start:
** a failure leaves it to the commit). Returns 0, or a negative code when
** the tail cannot be read (the caller rolls back).
*/
int a2m_sqlite_index_begin(a2m_sqlite_index *x, a2m_store *base);

/* The transaction's COMMIT succeeded: the buffer is the file's tail now. */
void a2m_sqlite_index_txn_done(a2m_sqlite_index *x);

/* The next commit writes the whole buffer out (before a close, for instance). */
void a2m_sqlite_index_write_out(a2m_sqlite_index *x);

/*
** Whether the connection may have a tail to write out: it holds one, or
** has not read the file's yet (a2m_sqlite_index_begin tells which).
*/
int a2m_sqlite_index_may_hold_tail(const a2m_sqlite_index *x);

/* Records in the tail as last committed or read (for tests and the bench). */
size_t a2m_sqlite_index_tail(const a2m_sqlite_index *x);

/*
** A connection's postings cache holds at least A2M_SQLITE_INDEX_CACHE_BASE
** bytes and, unless an option sets its budget, at most
** A2M_SQLITE_INDEX_CACHE_MOST (docs/CONFIG.md, postings_cache_mb).
*/
#define A2M_SQLITE_INDEX_CACHE_BASE ((size_t)64 << 20)
#define A2M_SQLITE_INDEX_CACHE_MOST ((size_t)256 << 20)

/*
** The bytes x's postings cache may hold from now on. 0: the default, which
** follows the index (a2m_sqlite_index_scaled_budget of the live segments'
** entries, re-read as terms are read from SQLite); a test's budget,
** a2m_sqlite_index_cache_budget_for_tests, wins over both.
*/
void a2m_sqlite_index_cache_budget(a2m_sqlite_index *x, size_t bytes);

/*
** The default budget for an index whose segments hold entries entries:
** about their lists' bytes, in whole MiB, never below
** A2M_SQLITE_INDEX_CACHE_BASE nor above A2M_SQLITE_INDEX_CACHE_MOST.
*/
size_t a2m_sqlite_index_scaled_budget(int64_t entries);

/* The bytes x's postings cache may hold now (0: it has none). */
size_t a2m_sqlite_index_cache_bytes(const a2m_sqlite_index *x);

/* on: every merge inside the commit that needs it (a2m_segments_merge_inline). */
void a2m_sqlite_index_merge_inline(a2m_sqlite_index *x, int on);

/*
** The store is closing: the transactions from now on (the close's own, which
** writes the tails out) begin no merge ahead. A merge begun there would be
** either dropped unfinished or written by the close, holding it up for a
** merge of any size, and which of the two happened depended on the thread's
** timing.
*/
void a2m_sqlite_index_closing(a2m_sqlite_index *x);

/*
** The data version moved from "from" to "to" by commits that wrote no
** postings, or by this connection's own commit (a2m_sqlite_index_txn_done
** first): the postings cache keeps what it holds (see a2m_pcache_adopt)
** and the tail stays what it is.
*/
void a2m_sqlite_index_committed(a2m_sqlite_index *x, uint64_t from, uint64_t to);

/*
** Whether postings were written (a2m_sqlite_index_flush) since the last
** call or discard; the call clears the note. The commit journal
** (sqlite_journal.c) tells the readers' caches from it.
*/
int a2m_sqlite_index_take_wrote(a2m_sqlite_index *x);

/* Empties the postings cache: another connection of this process wrote postings. */
void a2m_sqlite_index_forget_postings(a2m_sqlite_index *x);

/* How many terms' postings were read from SQLite rather than the cache (for tests). */
size_t a2m_sqlite_index_reads(const a2m_sqlite_index *x);

/*
** Forgets what the transaction buffered (it was rolled back): back to the
** tail as committed, or, when the transaction wrote the tail out, to no
** tail, read again at the next use.
*/
void a2m_sqlite_index_discard(a2m_sqlite_index *x);

/* A point in the buffer, to go back to when one write of a transaction fails. */
typedef struct a2m_sqlite_index_point {
	size_t          nops, used, records;
	int64_t         top;
	a2m_index_stats pending;
} a2m_sqlite_index_point;

void a2m_sqlite_index_mark(const a2m_sqlite_index *x, a2m_sqlite_index_point *p);
void a2m_sqlite_index_undo(a2m_sqlite_index *x, const a2m_sqlite_index_point *p);

/*
** The figures and the postings of a term. Both write the buffer first, so
** a transaction reads its own writes.
*/
int a2m_sqlite_index_stats(a2m_sqlite_index *x, a2m_store *base, a2m_index_stats *out);
int a2m_sqlite_index_postings(a2m_sqlite_index *x, a2m_store *base, const char *term,
			      size_t len, a2m_posting_visit visit, void *ctx);

/*
** Lends term's postings from the postings cache (*v, *n: in the order the
** cache keeps them, which is the order index_postings visits them), reading
** them into the cache first when they are not there. For a read bracket
** only (store.h): the array stays valid until a2m_sqlite_index_bracket is
** next called (at the bracket's read_end) or this connection writes.
** Returns 0 when lent, 1 when not (inside a transaction, no cache, a term
** bigger than the cache keeps, no memory: copy it with
** a2m_sqlite_index_postings), or a negative code.
*/
int a2m_sqlite_index_view(a2m_sqlite_index *x, a2m_store *base, const char *term,
			  size_t len, const a2m_posting **v, size_t *n);

/*
** a2m_sqlite_index_view with the bounds the cache computed when it read
** the postings (store.h a2m_postings_lent, index_postings_lend): returns 0
** when lent, 1 when not (as a2m_sqlite_index_view), 2 when the cache will
** not keep the term (copy it: a view would read it again), or a negative
** code.
*/
int a2m_sqlite_index_lend(a2m_sqlite_index *x, a2m_store *base, const char *term, size_t len,
			  a2m_postings_lent *out);

/*
** A read bracket begins or ends on this connection (sqlite_pool.c): what
** a2m_sqlite_index_view lent before may be evicted again.
*/
void a2m_sqlite_index_bracket(a2m_sqlite_index *x);

#ifdef A2M_TEST_HOOKS  /* the tests' build of the library only (Makefile) */
/*
** For tests: the postings (16 bytes each) every index opened from now on
** may cache (0: the default, 64 MiB). Set it before opening stores, from
** one thread.
*/
void a2m_sqlite_index_cache_budget_for_tests(size_t postings);

/*
** For tests: the bytes a segment entry counts for in the default budget
** (0: the estimate, 4), so that a small index can pass the base.
*/
void a2m_sqlite_index_entry_bytes_for_tests(size_t bytes);

/*
** For tests: on (the default), a term whose lists have skip tables is
** cached a block at a time (sqlite_segments_lazy.c); off, decoded whole.
*/
void a2m_sqlite_index_lazy_for_tests(int on);

/*
** For tests: on, a probe of a term cached a block at a time fills the
** block whatever the term holds already (as before peeks: the blocks it
** gathers are then shed between queries); off (the default), past what
** the cache lets a term hold or PEEK_FILL_BYTES (sqlite_index_read.c),
** it decodes up to the seq asked and keeps nothing (a2m_seg_lazy_peek).
*/
void a2m_sqlite_index_peeks_fill_for_tests(int on);

/* For tests: PEEK_FILL_BYTES made bytes (0: the default, 256 KiB). */
void a2m_sqlite_index_peek_fill_bytes_for_tests(size_t bytes);

/*
** For tests: a rebuild writes a segment each time this many postings wait
** (0: the default, 200 000), all merged into one at its end.
*/
void a2m_sqlite_index_rebuild_flush_for_tests(size_t postings);

/*
** For tests: a commit writes the tail out once it would hold this many
** records (0: the default, 512; 1: every commit writes its postings, as
** before the tail). Set it from one thread, between transactions.
*/
void a2m_sqlite_index_tail_for_tests(size_t records);
#endif

#endif
