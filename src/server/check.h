/*
** check.h — `a2m check` (docs/CHECK.md): the consistency of a store as a
** server of the same options would open it. The engine verifies what it
** derives from its records (store.h, check); this layer opens the store as
** a2m_open would, adds the one rule that is about the records themselves
** (no group across tiers: spec §3.4), and runs the repair and the check
** after it.
*/
#ifndef A2M_SERVER_CHECK_H
#define A2M_SERVER_CHECK_H

#include "a2m.h"
#include "store/store.h"

/* The three passes a run may make. */
typedef enum a2m_check_phase {
	A2M_CHECK_FIRST = 0,   /* the check as asked */
	A2M_CHECK_REPAIRING,   /* the repair's own reports */
	A2M_CHECK_AFTER        /* the check again, after a repair */
} a2m_check_phase;

typedef struct a2m_check_run {
	int repair;   /* rebuild what is derivable when the first pass found problems */
	/* Each finding (store.h, a2m_check_options.report) with its phase. */
	void (*report)(void *ctx, a2m_check_phase phase, a2m_check_area area, int problem,
		       const char *msg);
	/*
	** How far each long walk has come (store.h, a2m_check_options.progress),
	** with its phase; NULL: not wanted. Same ctx as report.
	*/
	void (*progress)(void *ctx, a2m_check_phase phase, a2m_check_area area, const char *unit,
			 int64_t done, int64_t total);
	void *ctx;
	/* Set by the run: bit (1u << area) per area with problems. */
	unsigned found;      /* by the first pass */
	unsigned remaining;  /* at the end: the first pass's, or the last after a repair */
} a2m_check_run;

/*
** Checks the store cfg names (SQLite: the file must exist; it is opened
** read-only, so the check writes nothing and can run beside a server).
** With run->repair and problems found, opens it read-write (migrating an
** older schema, as a server would), repairs the areas that have a repair
** (every one when the file could not be checked at all), and checks again.
** Returns 0 when run has been filled (run->remaining says whether problems
** remain), or A2M_RANGE with a message in err when cfg names no store that
** can be checked (the memory engine, a missing file, a bad configuration).
*/
int a2m_check_store(const a2m_config *cfg, a2m_check_run *run, char *err, size_t errlen);

#endif
