/*
** analyze_ahead.c — a batch's texts analysed before its writes, on every
** core (the indexer's prepare/unprepare, store.h).
**
** Why: a store writes a batch on one thread, inside one transaction, and
** analysing each record's text there was about a sixth of a batched
** remember's work. The analysis needs nothing of the store, so the stack
** hands the batch's texts over first; they are cut into one contiguous
** run per core, each analysed on its own thread (the analyser is
** thread-safe: analyze.c), and the results wait for the store's analyze()
** calls, which then take them instead of working.
**
** The results belong to the thread that called prepare (a thread-local
** pointer): the store calls analyze() on that same thread, and another
** thread's analyses are never handed a result meant for a different call.
** A text is matched by its pointer and then its bytes, so a text freed and
** another allocated at the same address can never take the wrong terms.
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rank/analyze.h"
#include "rank/analyze_ahead.h"

/* Fewer texts than this are analysed on the caller's own thread, as they come. */
#define AHEAD_MIN      64
/* No run shorter than this gets a thread of its own: starting one costs. */
#define AHEAD_PER_RUN  32
#define AHEAD_THREADS  8

/* What prepare analysed, for the thread that called it. */
typedef struct ahead {
	a2m_analyzer      *an;
	const char *const *texts;  /* the caller's array: alive until unprepare */
	a2m_doc_terms     *dt;     /* dt[i]: texts[i]'s terms, until taken */
	int               *rc;     /* rc[i]: 0 analysed, -1 failed, 1 taken or none */
	size_t             n;
	size_t             next;   /* where the next lookup starts */
} ahead;

static _Thread_local ahead *mine;

/* One run of texts, for one thread. */
typedef struct run {
	ahead    *a;
	size_t    from, to;
	pthread_t thread;
	int       started;
} run;

static void analyse_run(run *r)
{
	ahead *a = r->a;
	for (size_t i = r->from; i < r->to; i++) {
		if (!a->texts[i]) {
			a->rc[i] = 1;
			continue;
		}
		a->rc[i] = a2m_analyze_doc(a->an, a->texts[i], &a->dt[i]) == 0 ? 0 : -1;
		if (a->rc[i])
			a2m_doc_terms_free(&a->dt[i]);
	}
}

static void *run_main(void *arg)
{
	analyse_run(arg);
	return NULL;
}

static size_t threads_for(size_t n)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t k = cpus > 1 ? (size_t)cpus : 1;
	if (k > AHEAD_THREADS)
		k = AHEAD_THREADS;
	if (k > n / AHEAD_PER_RUN)
		k = n / AHEAD_PER_RUN;
	return k ? k : 1;
}

static void ahead_free(ahead *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		if (a->rc[i] == 0)
			a2m_doc_terms_free(&a->dt[i]);
	free(a->dt);
	free(a->rc);
	free(a);
}

int a2m_analyze_ahead(a2m_analyzer *an, const char *const *texts, size_t n)
{
	a2m_analyze_ahead_drop();
	if (n < AHEAD_MIN)
		return 0;
	ahead *a = calloc(1, sizeof *a);
	run runs[AHEAD_THREADS];
	if (!a || !(a->dt = calloc(n, sizeof *a->dt)) || !(a->rc = calloc(n, sizeof *a->rc))) {
		if (a)
			free(a->dt);
		free(a);
		return -1;
	}
	a->an = an;
	a->texts = texts;
	a->n = n;
	size_t k = threads_for(n);
	for (size_t t = 0; t < k; t++)
		runs[t] = (run){.a = a, .from = n * t / k, .to = n * (t + 1) / k};
	/* Runs 1.. on threads of their own; a thread that will not start is run here. */
	for (size_t t = 1; t < k; t++)
		runs[t].started = pthread_create(&runs[t].thread, NULL, run_main, &runs[t]) == 0;
	analyse_run(&runs[0]);
	for (size_t t = 1; t < k; t++) {
		if (runs[t].started)
			pthread_join(runs[t].thread, NULL);
		else
			analyse_run(&runs[t]);
	}
	mine = a;
	return 0;
}

int a2m_analyze_ahead_take(const a2m_analyzer *an, const char *text, a2m_doc_terms *out)
{
	ahead *a = mine;
	if (!a || a->an != an)
		return 0;
	/* The store asks in the batch's order; records it skips are passed over. */
	for (size_t i = a->next; i < a->n; i++) {
		if (a->texts[i] != text || a->rc[i] != 0)
			continue;
		if (strcmp(a->texts[i], text) != 0)
			return 0;
		*out = a->dt[i];
		memset(&a->dt[i], 0, sizeof a->dt[i]);
		a->rc[i] = 1;
		a->next = i + 1;
		return 1;
	}
	return 0;
}

void a2m_analyze_ahead_drop(void)
{
	ahead_free(mine);
	mine = NULL;
}
