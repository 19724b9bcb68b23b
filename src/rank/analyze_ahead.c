/*
** analyze_ahead.c — a batch's texts analysed on other cores while its
** records are written (the indexer's prepare/unprepare, store.h).
**
** Why: a store writes a batch on one thread, inside one transaction, and
** analysing each record's text there is about a third of a batched
** remember's work. The analysis needs nothing of the store, so the stack
** hands the batch's texts over first, and worker threads (one per core
** but the caller's) analyse them in order while the caller writes the
** store. The store's analyze() calls then take the results instead of
** working. A text no worker has reached yet (the cores are busy with
** other work, or the store writes faster than the workers analyse) is
** analysed by the caller itself, so the caller only ever waits for a text
** a worker is already on, which takes microseconds: it spins for that
** long before it sleeps.
**
** Each worker thread holds one of the analyser's stemming workers for the
** whole batch (analyze_internal.h), so it keeps a warm stem cache and does
** not contend with the caller for the pool on every text.
**
** The results belong to the thread that called prepare (a thread-local
** pointer): the store calls analyze() on that same thread, and another
** thread's analyses are never handed a result meant for a different call.
** A text is matched by its pointer and then its bytes, so a text freed and
** another allocated at the same address can never take the wrong terms.
*/
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "rank/analyze.h"
#include "rank/analyze_ahead.h"
#include "rank/analyze_internal.h"
#include "util/thread.h"

/* Fewer texts than this are analysed on the caller's own thread, as they come. */
#define AHEAD_MIN        64
/* No thread is started for fewer texts than this: starting one costs. */
#define AHEAD_PER_THREAD 32
/*
** Polls of a text a worker is on before the caller sleeps: a text takes a
** few microseconds, a sleep and a wake-up cost as much again, and most
** waits end within a few hundred polls.
*/
#define AHEAD_SPINS      4000

/* What prepare started analysing, for the thread that called it. */
typedef struct ahead {
	a2m_analyzer      *an;
	const char *const *texts;  /* the caller's array: alive until unprepare */
	a2m_doc_terms     *dt;     /* dt[i]: texts[i]'s terms, until taken */
	int               *rc;     /* rc[i]: 0 analysed, -1 failed, 1 taken or none */
	_Atomic int       *state;  /* state[i]: FREE, CLAIMED or DONE (dt[i], rc[i] written) */
	size_t             n;
	size_t             next;   /* where the next lookup starts */
	atomic_size_t      claim;  /* the next text a worker takes; n: stop */
	atomic_int         asleep; /* the caller sleeps (or is about to) on ready */
	pthread_mutex_t    mu;     /* with ready: the caller waiting for a text */
	pthread_cond_t     ready;
	pthread_t          threads[A2M_HELPER_THREADS_MAX];
	size_t             started;
} ahead;

/* A text's state: claimed by a worker, or by the caller itself (then never done). */
enum { FREE, CLAIMED, DONE };

static _Thread_local ahead *mine;

/* Claims text i for the caller; 1 when it was free. */
static int claim(ahead *a, size_t i)
{
	int expect = FREE;
	return atomic_compare_exchange_strong(&a->state[i], &expect, CLAIMED);
}

/*
** Marks text i done. The caller is woken only when it went to sleep: the
** store of DONE and the load of asleep here, against the store of asleep
** and the load of the state under mu in wait_done(), are sequentially
** consistent, so one side always sees the other's.
*/
static void finish(ahead *a, size_t i)
{
	atomic_store(&a->state[i], DONE);
	if (atomic_load(&a->asleep)) {
		pthread_mutex_lock(&a->mu);
		pthread_cond_broadcast(&a->ready);
		pthread_mutex_unlock(&a->mu);
	}
}

/* Waits until a worker has finished text i. */
static void wait_done(ahead *a, size_t i)
{
	for (int k = 0; k < AHEAD_SPINS; k++) {
		if (atomic_load_explicit(&a->state[i], memory_order_acquire) == DONE)
			return;
		if (k % 64 == 63)
			sched_yield();  /* the worker may share this core */
	}
	pthread_mutex_lock(&a->mu);
	atomic_store(&a->asleep, 1);
	while (atomic_load(&a->state[i]) != DONE)
		pthread_cond_wait(&a->ready, &a->mu);
	atomic_store(&a->asleep, 0);
	pthread_mutex_unlock(&a->mu);
}

/*
** A worker: analyses the texts it claims, in order, until none is left.
** A text the caller reached first is the caller's (claim fails): skipped.
*/
static void *work(void *arg)
{
	ahead *a = arg;
	void *wk = a2m_analyzer_worker_take(a->an);
	for (;;) {
		size_t i = atomic_fetch_add(&a->claim, 1);
		if (i >= a->n)
			break;
		if (!claim(a, i))
			continue;
		if (!a->texts[i]) {
			a->rc[i] = 1;
		} else if (a2m_analyze_doc_on(a->an, wk, a->texts[i], &a->dt[i]) == 0 &&
			   a2m_doc_terms_pack(&a->dt[i]) == 0) {
			a->rc[i] = 0;
		} else {
			a->rc[i] = -1;
			a2m_doc_terms_free(&a->dt[i]);
		}
		finish(a, i);
	}
	a2m_analyzer_worker_give(a->an, wk);
	return NULL;
}

/*
** threads as asked (-1: a2m_helpers_default, one per core but the
** caller's, which is busy writing meanwhile), at most
** A2M_HELPER_THREADS_MAX, and fewer for a short batch.
*/
static size_t threads_for(size_t n, int threads)
{
	size_t k = (size_t)(threads >= 0 ? threads : a2m_helpers_default());
	if (k > A2M_HELPER_THREADS_MAX)
		k = A2M_HELPER_THREADS_MAX;
	if (k > n / AHEAD_PER_THREAD)
		k = n / AHEAD_PER_THREAD;
	return k;
}

/* Stops the workers (the texts nobody claimed yet stay unanalysed), frees a. */
static void ahead_free(ahead *a)
{
	if (!a)
		return;
	atomic_store(&a->claim, a->n);
	for (size_t t = 0; t < a->started; t++)
		pthread_join(a->threads[t], NULL);
	for (size_t i = 0; i < a->n; i++)
		if (atomic_load(&a->state[i]) == DONE && a->rc[i] == 0)
			a2m_doc_terms_free(&a->dt[i]);
	pthread_cond_destroy(&a->ready);
	pthread_mutex_destroy(&a->mu);
	free(a->dt);
	free(a->rc);
	free(a->state);
	free(a);
}

int a2m_analyze_ahead(a2m_analyzer *an, const char *const *texts, size_t n, int threads)
{
	a2m_analyze_ahead_drop();
	size_t k = threads_for(n, threads);
	if (n < AHEAD_MIN || !k)
		return 0;
	ahead *a = calloc(1, sizeof *a);
	if (!a)
		return -1;
	a->dt = calloc(n, sizeof *a->dt);
	a->rc = calloc(n, sizeof *a->rc);
	a->state = calloc(n, sizeof *a->state);  /* all FREE (0) */
	int sync_made = 0;
	if (a->dt && a->rc && a->state && pthread_mutex_init(&a->mu, NULL) == 0) {
		if (pthread_cond_init(&a->ready, NULL) == 0)
			sync_made = 1;
		else
			pthread_mutex_destroy(&a->mu);
	}
	if (!sync_made) {
		free(a->dt);
		free(a->rc);
		free(a->state);
		free(a);
		return -1;
	}
	a->an = an;
	a->texts = texts;
	a->n = n;
	atomic_init(&a->claim, 0);
	atomic_init(&a->asleep, 0);
	while (a->started < k &&
	       a2m_thread_start(&a->threads[a->started], work, a) == 0)
		a->started++;
	if (!a->started) {
		/* No thread would start: nothing is kept, analyses run as they come. */
		ahead_free(a);
		return -1;
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
	size_t i = a->next;
	while (i < a->n && a->texts[i] != text)
		i++;
	if (i == a->n || strcmp(a->texts[i], text) != 0)
		return 0;
	a->next = i + 1;
	/*
	** Not reached by a worker (busy, or its core taken by other work): the
	** caller analyses it itself rather than wait. One a worker is on is
	** waited for: it is already under way.
	*/
	if (claim(a, i))
		return 0;
	wait_done(a, i);
	if (a->rc[i] != 0)
		return 0;  /* failed (out of memory): analysed again, as it comes */
	*out = a->dt[i];
	memset(&a->dt[i], 0, sizeof a->dt[i]);
	a->rc[i] = 1;
	return 1;
}

size_t a2m_analyze_ahead_done(void)
{
	ahead *a = mine;
	size_t n = 0;
	for (size_t i = 0; a && i < a->n; i++)
		n += atomic_load(&a->state[i]) == DONE;
	return n;
}

void a2m_analyze_ahead_drop(void)
{
	ahead_free(mine);
	mine = NULL;
}
