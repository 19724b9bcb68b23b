/*
** store_check.h — what the engines' consistency checks share (store.h,
** check and repair), for the engines only: reporting a finding, and the
** comparison of a term index with the postings the records' text yields.
**
** The comparison keeps, per distinct term, a fingerprint of each side: how
** many postings, and two sums over a mix of each posting's (seq, tf,
** length) that do not depend on the order they come in. The expected side
** is filled from the records (analysed as an insert would be), the found
** side from the index as a reader would see it; a term whose fingerprints
** differ holds different postings. Memory is one entry per distinct term,
** not per posting, so a store of millions of records is checked in the
** memory of its vocabulary.
*/
#ifndef A2M_STORE_CHECK_H
#define A2M_STORE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* Reports one finding through o->report, its message from a printf format. */
void a2m_check_say(const a2m_check_options *o, a2m_check_area area, int problem,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
** One walk's progress (a2m_check_options.progress), called at a bounded
** rate: start, then at(done) as often as is convenient (a call that is
** not due costs a comparison), then end.
*/
typedef struct a2m_check_meter {
	const a2m_check_options *o;
	a2m_check_area           area;
	const char              *unit;   /* a literal */
	int64_t                  total;  /* -1: not known */
	int64_t                  next;   /* the done at which the next call is due */
} a2m_check_meter;

/*
** Starts m (and says done 0) for a walk of total units (0 or less: not
** known). o->progress may be NULL: nothing is called then.
*/
void a2m_check_meter_start(a2m_check_meter *m, const a2m_check_options *o, a2m_check_area area,
			   const char *unit, int64_t total);

/* The walk has done done units: passed on when due. */
void a2m_check_meter_tell(a2m_check_meter *m, int64_t done);
static inline void a2m_check_meter_at(a2m_check_meter *m, int64_t done)
{
	if (done >= m->next)
		a2m_check_meter_tell(m, done);
}

/* The walk ended after done units: said with total = done (the last call). */
void a2m_check_meter_end(a2m_check_meter *m, int64_t done);

/*
** Writes the n bytes of a term, id or file name as a quoted string fit for
** a one-line message into out (size bytes, A2M_CHECK_QUOTED holds any: at
** most 160 of the bytes are shown, then "..."; control bytes, quotes and
** backslashes as \xNN). Returns out.
*/
#define A2M_CHECK_QUOTED 700
char *a2m_check_quote(const char *text, size_t n, char *out, size_t size);

/*
** Whether the n bytes at b are whole elements of size bytes (8: doubles,
** 4: floats), every one finite: a stored vector a search may use. The
** bytes are in this machine's order, or little-endian when little_endian
** is set (PostgreSQL's columns).
*/
int a2m_check_vector_ok(const void *b, size_t n, size_t size, int little_endian);

typedef struct a2m_check_terms a2m_check_terms;

/* The two sides a posting is added to. */
enum { A2M_TERMS_EXPECTED = 0, A2M_TERMS_FOUND = 1 };

/* An empty comparison. NULL when memory runs out. */
a2m_check_terms *a2m_check_terms_new(void);

/* Frees t. NULL is a no-op. */
void a2m_check_terms_free(a2m_check_terms *t);

/*
** Adds the posting (seq, tf, dl) of term (len bytes) to side. Returns 0,
** or -1 when memory runs out.
*/
int a2m_check_terms_add(a2m_check_terms *t, int side, const char *term, size_t len,
			int64_t seq, uint32_t tf, uint32_t dl);

/*
** Analyses content with ix as the record seq and adds its postings to the
** expected side, and its figures to *stats as an index counts them (docs,
** total_len, unindexed). Returns 0, or -1 when memory runs out.
*/
int a2m_check_terms_expect(a2m_check_terms *t, a2m_indexer *ix, int64_t seq,
			   const char *content, a2m_index_stats *stats);

/* What a comparison found. */
typedef struct a2m_check_terms_result {
	size_t  terms_expected, terms_found;  /* distinct terms with postings */
	int64_t postings_expected, postings_found;
	size_t  differing;                    /* terms whose postings differ */
} a2m_check_terms_result;

/*
** Compares the two sides: fills *r and reports (A2M_CHECK_INDEX, problem
** 1) up to max_examples of the terms that differ, each with its counts.
*/
void a2m_check_terms_compare(const a2m_check_terms *t, const a2m_check_options *o,
			     size_t max_examples, a2m_check_terms_result *r);

/* ---- the extensions' data (the engines that keep it) ------------------------ */

/*
** The revision history (x-history) read by an engine in (record id,
** revision ascending) order, one revision per visit: each record's
** revisions must belong to a live record with a key, be below its live
** revision, ascend with the times they were superseded, and number at most
** o->history_keep (when not 0). begin, visit every revision, end; end
** reports the area's summary. The engine reads its own snapshot: get()
** must see the same records as the revisions.
*/
typedef struct a2m_check_history {
	a2m_store               *s;
	const a2m_check_options *o;
	char                    *id;      /* the record being read (a copy); NULL: none yet */
	int64_t                  live;    /* its live revision; -1: no live keyed record */
	int64_t                  prev, prev_superseded;
	size_t                   n;       /* its revisions so far */
	int64_t                  revisions, records;
	size_t                   problems;
	int                      failed;  /* a read failed, or memory ran out (reported) */
	a2m_check_meter          meter;
} a2m_check_history;

void a2m_check_history_begin(a2m_check_history *h, a2m_store *s, const a2m_check_options *o);
/* An a2m_revision_visit: ctx is the a2m_check_history. Returns 0, or -1 after a failure. */
int  a2m_check_history_visit(const a2m_revision *rev, void *ctx);
/* Ends the walk and reports its summary (a finding of its own when the walk failed). */
void a2m_check_history_end(a2m_check_history *h);

/* The expiry area's summary: n records expire, the soonest at soonest (ms), then tail. */
void a2m_check_say_expiry(const a2m_check_options *o, int64_t n, int64_t soonest,
			  const char *tail);

/*
** A record's kept fingerprint (x-dedup) against o->fingerprint of its
** content and role, counted in *problems (the first few reported, by id).
** A record kept with none is not a problem: it was written before its
** store fingerprinted. Returns 1 when they differ, else 0.
*/
int  a2m_check_fingerprint(const a2m_check_options *o, const char *id, const char *content,
			   const char *role, uint64_t kept, size_t *problems);

#endif
