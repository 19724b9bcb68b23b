/*
** progress.h — one progress line on a terminal for work that runs long:
** `a2m import` and `a2m export`, the benches, and whatever else counts
** through many units (a corpus being indexed, a store being checked).
**
**   a2m_progress *p = a2m_progress_start("a2m import", "records", total);
**   for (...) { ...; a2m_progress_update(p, done); }
**   a2m_progress_end(p);
**
** The line goes to stderr, and only when stderr is a terminal: piped or
** redirected (a script, a test, a log file) nothing at all is written, so
** no caller has to ask. It is redrawn in place at most five times a second
** and reads, for a known total:
**
**   a2m import: 412 000 of 1 000 000 records (41%), 52 310/s, about 0:11 left
**
** and without one "a2m import: 412 000 records, 52 310/s". The first
** drawing waits a second: work that ends sooner shows nothing. (The
** environment variable A2M_PROGRESS_FIRST_MS sets that wait, for the tests
** that look at the line of a short job.) The end
** leaves the last figures on the line with the time taken, and a newline;
** or, for a command that prints its own report next, erases the line.
**
** Every function accepts NULL (what start returns when there is no
** terminal, or no memory), so a caller never tests. One thread at a time.
*/
#ifndef A2M_UTIL_PROGRESS_H
#define A2M_UTIL_PROGRESS_H

#include <stdint.h>

typedef struct a2m_progress a2m_progress;

/*
** Starts a line for the job called what (e.g. "a2m import"), counting unit
** (e.g. "records"; both copied) up to total (0 or less: not known). Returns
** NULL when stderr is not a terminal, or memory ran out: nothing is shown.
*/
a2m_progress *a2m_progress_start(const char *what, const char *unit, int64_t total);

/* Sets the total once it is known (0 or less: not known). */
void a2m_progress_total(a2m_progress *p, int64_t total);

/* Says that done units are finished; redraws when the last drawing is
** 200 ms old. Cheap enough to call for every unit. */
void a2m_progress_update(a2m_progress *p, int64_t done);

/* Draws the last figures and the time taken (only when something was
** drawn before), ends the line, and frees p. */
void a2m_progress_end(a2m_progress *p);

/* Erases the line for now, keeping p: the next update draws it again
** (when a drawing is due). For a command that prints a line of its own
** between updates (`a2m check`'s findings), which must not land on it. */
void a2m_progress_clear(a2m_progress *p);

/* Erases the line instead (for a command whose own report follows on the
** same terminal: the benches), and frees p. */
void a2m_progress_erase(a2m_progress *p);

#endif
