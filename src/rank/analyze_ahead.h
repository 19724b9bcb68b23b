/*
** analyze_ahead.h — analysing a batch's texts on other cores while its
** records are written; what the analyser's indexer offers as
** prepare/unprepare (store.h).
** See analyze_ahead.c for why.
*/
#ifndef A2M_ANALYZE_AHEAD_H
#define A2M_ANALYZE_AHEAD_H

#include <stdatomic.h>
#include <stddef.h>

#include "rank/analyze.h"

/* An analyser's worker threads, started at its first batch and kept until it is freed. */
typedef struct a2m_ahead_pool a2m_ahead_pool;

/*
** Has threads worker threads (-1: a2m_helpers_default; 0: none, and
** nothing is kept) analyse texts[0..n) with an, in order (NULL entries
** are skipped), for the calling thread's next analyses with an:
** a2m_analyze_ahead_take. The workers are *slot's (an's pool: made here
** at the first batch, started as needed; a2m_analyze_ahead_pool_free ends
** them). They read copies of the texts; texts (the array and the strings,
** matched by address) must stay alive and unchanged until
** a2m_analyze_ahead_drop. Fewer than 64 texts are not analysed ahead
** (their analyses then run as they come). Whatever this thread kept
** before is dropped first. Returns 0, or -1 when memory ran out or no
** thread would start (nothing is kept then; analyses run as they come).
*/
int a2m_analyze_ahead(a2m_analyzer *an, _Atomic(a2m_ahead_pool *) *slot,
		      const char *const *texts, size_t n, int threads);

/*
** Starts analysing texts[0..n) on *slot's workers (as a2m_analyze_ahead
** would, and after any batch queued before) for a batch write that has not
** begun: the next a2m_analyze_ahead, on any thread, of the same texts (byte
** for byte, in order) takes them as its batch, with what the workers did
** meanwhile; one of other texts lets them go. So a writer that knows its
** next batch while it commits the one before (the corpus indexer) has it
** analysed during the commit, when the workers would have nothing to do.
** One batch is foreseen at a time: a second lets the first go. The texts
** are copied: they need not outlive the call. Fewer than 64 are ignored.
** Returns 0, or -1 when memory ran out or no thread would start.
*/
int a2m_analyze_ahead_foresee(a2m_analyzer *an, _Atomic(a2m_ahead_pool *) *slot,
			      const char *const *texts, size_t n, int threads);

/*
** Hands over text's terms when this thread's batch holds text (analysed
** with an) and a worker has finished it (waiting some tens of
** microseconds for one that is on it): moves them to *out (the caller
** releases them as any analysis) and returns 1. Returns 0 when there are
** none (then analyse text as usual; a worker's result is dropped).
*/
int a2m_analyze_ahead_take(const a2m_analyzer *an, const char *text, a2m_doc_terms *out);

/* How many texts of this thread's batch the workers have finished (tests). */
size_t a2m_analyze_ahead_done(void);

/*
** Lets go of this thread's batch: the workers take no more of its texts,
** and it is freed, with what they analysed and nobody took, by whichever
** of this thread and the workers lets go of it last. Waits for nothing.
*/
void a2m_analyze_ahead_drop(void);

/*
** Stops p's workers (each finishes the text it is on) and frees p. Every
** batch must have been dropped first. p may be NULL.
*/
void a2m_analyze_ahead_pool_free(a2m_ahead_pool *p);

#ifdef A2M_TEST_HOOKS
/*
** For tests: while on, a worker that has claimed a text stops before
** analysing it (a thread the scheduler does not run); held says how many
** are stopped.
*/
void a2m_analyze_ahead_hold_for_tests(int on);
int  a2m_analyze_ahead_held_for_tests(void);
/* Whether this thread's batch is one a foresee made (a prepare took it). */
int  a2m_analyze_ahead_foreseen_for_tests(void);
#endif

#endif
