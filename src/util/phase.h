/*
** phase.h — where a thread's time goes, phase by phase: on a CPU, waiting
** for one, or blocked (the disk, a lock, another thread). For the
** benchmarks' report of a slow call (`a2m bench remember`): a thread that
** asks (a2m_phase_watch) gets its time split by the phases the write path
** names as it goes (a2m_phase_enter, a2m_phase_leave); on every other
** thread those calls cost one thread-local load and do nothing.
*/
#ifndef A2M_PHASE_H
#define A2M_PHASE_H

/* The phases a write names. A phase entered inside another is its own. */
typedef enum a2m_phase {
	A2M_PHASE_OTHER,      /* none of those below: parsing, the stack, analysis, inserts */
	A2M_PHASE_BEGIN,      /* BEGIN IMMEDIATE: the log's locks and read marks */
	A2M_PHASE_TAIL,       /* the term index's tail read at begin */
	A2M_PHASE_AHEAD_READ, /* a merge ahead's inputs read at begin */
	A2M_PHASE_ANALYSIS,   /* waiting for the analysis workers (analyze_ahead.c) */
	A2M_PHASE_FLUSH,      /* the commit's rows and its index segment written */
	A2M_PHASE_MERGE,      /* merges in the commit: whole ones, a merge ahead written */
	A2M_PHASE_STEPS,      /* merges in steps moved on by the commit */
	A2M_PHASE_COMMIT,     /* COMMIT: the log's frames written */
	A2M_PHASE_CHECKPOINT, /* a checkpoint run in the commit */
	A2M_PHASE_SYNC,       /* the group commit's fsync, waited for after the call */
	A2M_PHASE_COUNT
} a2m_phase;

/*
** A phase's share of a thread's time, ms. Off a CPU (ms - cpu), a thread
** either waits for one or is blocked; which, the kernel's wait count says
** exactly for a whole call, but not phase by phase: it adds a wait to the
** count a moment late (measured here: the wait after a wake-up, or after
** being preempted by a thread just started, lands in the next phase). So a
** phase's split is told by its sleeps (it blocked: the disk, a lock, a
** thread) and its preemptions (it waited for a CPU).
*/
typedef struct a2m_phase_time {
	double ms;      /* wall clock */
	double cpu;     /* on a CPU (CLOCK_THREAD_CPUTIME_ID) */
	double queued;  /* runnable, waiting for a CPU (/proc/thread-self/schedstat) */
	long   sleeps;  /* times the thread gave up its CPU to wait (voluntary switches) */
	long   preempted; /* times it was made to give it up (involuntary switches) */
	long   reads;   /* blocks read from a disk (the page cache missed) */
} a2m_phase_time;

/* One thread's account: what each phase took since the last a2m_phase_reset. */
typedef struct a2m_phase_clock {
	a2m_phase_time t[A2M_PHASE_COUNT];
	int            queued_known;  /* 0: the kernel does not say (queued is 0) */
	/* Internal: the phase running and when it began. */
	int            at;
	double         ms0, cpu0, queued0;
	long           sleeps0, preempted0, reads0;
	int            fd;            /* schedstat of the watched thread; -1 none */
} a2m_phase_clock;

/*
** The calling thread's phases are counted into c from now on (c zeroed
** first, in phase OTHER); NULL: no longer (the descriptor c holds is
** closed). c must stay alive while watched. Never fails: without
** schedstat the queued times stay 0 and queued_known says so.
*/
void a2m_phase_watch(a2m_phase_clock *c);

/* Zeroes c's times; the phase running goes on, counted from now. */
void a2m_phase_reset(a2m_phase_clock *c);

/* Brings c's times up to now: the phase running is counted to this moment. */
void a2m_phase_read(a2m_phase_clock *c);

/* The phase names, for reports: "begin", "tail", ... */
const char *a2m_phase_name(a2m_phase p);

/*
** Counts the time since the last change to the phase running and enters p.
** Returns the phase left, for a2m_phase_leave. Unwatched: returns
** A2M_PHASE_OTHER and does nothing.
*/
a2m_phase a2m_phase_enter(a2m_phase p);

/* Counts the time since the last change to the phase running, and returns to back. */
void a2m_phase_leave(a2m_phase back);

#endif
