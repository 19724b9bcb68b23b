/*
** analyze_ahead.h — analysing a batch's texts on other cores while its
** records are written; what the analyser's indexer offers as
** prepare/unprepare (store.h).
** See analyze_ahead.c for why.
*/
#ifndef A2M_ANALYZE_AHEAD_H
#define A2M_ANALYZE_AHEAD_H

#include <stddef.h>

#include "rank/analyze.h"

/*
** Starts threads worker threads (-1: a2m_helpers_default; 0: none, and
** nothing is kept) analysing texts[0..n) with an, in order (NULL entries
** are skipped), for the calling thread's next analyses with an:
** a2m_analyze_ahead_take. texts must stay alive and unchanged until
** a2m_analyze_ahead_drop. Fewer than 64 texts are not analysed ahead
** (their analyses then run as they come). Whatever this thread kept
** before is dropped first. Returns 0, or -1 when memory ran out or no
** thread would start (nothing is kept then; analyses run as they come).
*/
int a2m_analyze_ahead(a2m_analyzer *an, const char *const *texts, size_t n, int threads);

/*
** Hands over text's terms when this thread's batch holds text (analysed
** with an): waits for a worker to finish it if need be, moves them to
** *out (the caller releases them as any analysis) and returns 1. Returns
** 0 when there are none (then analyse text as usual).
*/
int a2m_analyze_ahead_take(const a2m_analyzer *an, const char *text, a2m_doc_terms *out);

/* How many texts of this thread's batch the workers have finished (tests). */
size_t a2m_analyze_ahead_done(void);

/* Stops this thread's workers and frees what they analysed and nobody took. */
void a2m_analyze_ahead_drop(void);

#endif
