/*
** batch.h — what the corpus indexer writes, gathered per batch of files
** and written in an order a crash cannot break (batch.c).
**
** The indexer adds, for each file it read or found gone, one pending
** entry (what its row of the table of files becomes), the records of its
** new chunks and the ids of the chunks it no longer has; then flushes:
**   1. the table: each changed file's row made pending, naming its old
**      chunks and its new ones (files.h);
**   2. memory/remember of the new chunks, through the indexer's handle;
**   3. memory/forget of the chunks that are gone;
**   4. the table: each row final (size, time, hash, the new chunks), the
**      rows of removed files deleted.
** A pending row is always read again by the next sync, all its new chunks
** remembered (those already there are a no-op: a chunk's id is a hash of
** its whole record, so the same id is the same record, spec §3.2) and
** every id it names that is no longer wanted forgotten. So whatever a
** crash left between two steps, the next sync converges on the folder.
*/
#ifndef A2M_CORPUS_BATCH_H
#define A2M_CORPUS_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "a2m.h"
#include "corpus/files.h"
#include "util/buf.h"

/* Characters of a chunk's id: the path's hash and the record's, in hex. */
#define A2M_CORPUS_ID_LEN 32
typedef char a2m_corpus_id[A2M_CORPUS_ID_LEN + 1];

/*
** Records per memory/remember, one transaction each: the indexer's store is
** opened with max_records_per_call at this (index.c). Each commit writes a
** segment of the term index and rewrites the pages it dirtied, and fewer,
** larger segments need fewer merges: at 10 000 generated files, 8 000
** records a call against the default 1 000 took the store's pwrite calls
** from 231 k to 130 k and its reads from 115 k to 51 k (docs/BENCHMARKS.md,
** "`a2m corpus`"). A batch is flushed once it holds that many, or this much
** text, or this many files.
*/
#define A2M_CORPUS_BATCH_RECORDS 8000
#define A2M_CORPUS_BATCH_BYTES   ((size_t)16 << 20)
#define A2M_CORPUS_BATCH_FILES   4096

/* Ids per memory/forget: the store's default max_ids_per_call. */
#define A2M_CORPUS_FORGET_IDS 10000

/* One file of the batch, and what its row becomes. */
typedef struct a2m_corpus_pending {
	char    *path;
	int64_t  size, mtime_ns;
	char     hash[17];     /* hex; or "skipped" for a file that is not text */
	char    *old_ids;      /* the row's ids, or NULL */
	char    *new_ids;      /* NULL: the file is gone (its row is deleted) */
	int      touch;        /* no chunk changes: only the row is rewritten */
} a2m_corpus_pending;

/* Zero-initialise, set h and table, use, then a2m_corpus_batch_free. */
typedef struct a2m_corpus_batch {
	a2m                *h;          /* the indexer's writable handle (borrowed) */
	a2m_corpus_table   *table;      /* borrowed */
	a2m_corpus_pending *pend;
	size_t              n_pend, cap_pend;
	a2m_buf             records;    /* the new chunks' records, back to back */
	size_t             *rec_off;    /* where each starts */
	json_t            **vals;       /* or, with handle_value, each as a JSON value */
	size_t              n_rec, cap_rec, cap_vals;
	/* a2m_corpus_options.handle_value (NULL: requests go as text) */
	int               (*handle_value)(a2m *h, json_t *msg, char **reply);
	/* a2m_corpus_options.foresee (NULL: none) */
	int               (*foresee)(a2m *h, const char *const *texts, size_t n);
	json_t            **ready;      /* the memory/remember requests read ahead
	                                   (a2m_corpus_batch_prepare), one per call;
	                                   NULL entries go as text */
	size_t              n_ready;
	a2m_buf             forget;     /* ids to forget, as JSON strings, comma-separated */
	size_t              n_forget;
	size_t              bytes;      /* of text read for the batch */
	int                 failed;     /* memory ran out filling it */
	char                err[512];   /* why the last flush failed */
} a2m_corpus_batch;

/*
** Adds an entry for the file at path, whose row named old_ids (NULL: no
** row), and returns it for the caller to fill (size, time, hash,
** new_ids, touch). NULL when memory ran out.
*/
a2m_corpus_pending *a2m_corpus_batch_file(a2m_corpus_batch *b, const char *path,
					  const char *old_ids);

/*
** Starts a new record at the end of b->records, which the caller then
** appends (one JSON object). Returns 0, or -1 when memory ran out.
*/
int a2m_corpus_batch_record(a2m_corpus_batch *b);

/*
** Adds a new chunk's record as a JSON value (its reference taken, also on
** failure), for a batch with handle_value: the request is then built from
** the values, never read from text (a2m_corpus_batch_prepare). Returns 0,
** or -1 when memory ran out (rec NULL counts as that).
*/
int a2m_corpus_batch_value(a2m_corpus_batch *b, json_t *rec);

/*
** Adds to the ids to forget every id of the space-separated list old that
** is not among the n ids of keep (which it sorts).
*/
void a2m_corpus_batch_forget(a2m_corpus_batch *b, const char *old, a2m_corpus_id *keep,
			     size_t n);

/*
** Makes the batch's memory/remember requests ahead of the flush, which
** then sends them as they are (b->handle_value): the indexer does it on
** its walking thread while the batch before is written on another, so the
** writing thread reads no JSON. Records added as values
** (a2m_corpus_batch_value) go into the requests as they are; records
** added as text are read. Call it once the batch is full; a flush does it
** itself for values it finds not made into requests, and sends records
** added as text, in a batch without handle_value, as text. Returns 0, or
** -1 when memory ran out (the flush then fails with that reason).
*/
int a2m_corpus_batch_prepare(a2m_corpus_batch *b);

/*
** Tells the store, through b->foresee, the texts of the first
** memory/remember the flush will send (a2m_corpus_batch_prepare made it):
** their analysis begins on its helper threads while the batch before
** commits. Only a hint: nothing is kept and nothing fails.
*/
void a2m_corpus_batch_foresee(const a2m_corpus_batch *b);

/* Whether the batch is due to be flushed. */
int a2m_corpus_batch_full(const a2m_corpus_batch *b);

/*
** Writes the batch in the four steps above and empties it (also when a
** step fails), but for the requests read ahead, which it keeps for
** a2m_corpus_batch_release. *added and *removed get the chunks remembered
** and forgotten. Returns 0, or -1 with a reason in b->err.
*/
int a2m_corpus_batch_flush(a2m_corpus_batch *b, size_t *added, size_t *removed);

/*
** Frees the requests read ahead (a2m_corpus_batch_prepare) that a flush
** sent or left. A flush on another thread leaves them to this call on the
** thread that read them: freeing 1 000 records' JSON values was a tenth
** of the writing thread's work (callgrind), which the walk has to spare,
** and the allocator frees its own thread's memory cheaper. Call it before
** the batch is filled again.
*/
void a2m_corpus_batch_release(a2m_corpus_batch *b);

/* Empties the batch, writing nothing (the requests read ahead freed too). */
void a2m_corpus_batch_reset(a2m_corpus_batch *b);

/* Frees what the batch holds (not h or table). */
void a2m_corpus_batch_free(a2m_corpus_batch *b);

/*
** The ids of the space-separated list (NULL or "": none), sorted for
** a2m_corpus_ids_has, pointing into *copy; the caller frees *copy and
** *ids. Returns 0, or -1 when memory ran out.
*/
int a2m_corpus_ids_parse(const char *list, char **copy, char ***ids, size_t *n);

/* Whether id is among the n sorted ids. */
int a2m_corpus_ids_has(char **ids, size_t n, const char *id);

#endif
