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
** working.
**
** The writer never waits for a thread the scheduler has not run. On two
** loaded cores a worker may sit runnable for tens of milliseconds; when
** the writer waited for it (the join of a batch's threads at its end, or a
** text a worker had claimed), one call waited 40 ms for threads that had
** a few microseconds of work left (docs/BENCHMARKS.md, "Where a slow
** remember's time goes"). So:
**  - the workers are a pool started once per analyser, which outlives the
**    calls: a batch's end does not join anything. The workers read copies
**    of the batch's texts, so a worker still on a text when the caller
**    moves on reads nothing of the caller's; the batch is freed by the last
**    of the caller and the workers to let go of it;
**  - a text no worker has reached is analysed by the caller itself; one a
**    worker is on is waited for a few tens of microseconds (a text takes
**    about ten), then analysed by the caller too: the analysis is
**    deterministic, so whichever copy is used the terms are the same, and
**    the worker's is freed with the batch.
**
** Each worker holds one of the analyser's stemming workers while it works
** on a batch (analyze_internal.h), so it keeps a warm stem cache and does
** not contend with the caller for the pool on every text.
**
** The results belong to the thread that called prepare (a thread-local
** pointer): the store calls analyze() on that same thread, and another
** thread's analyses are never handed a result meant for a different call.
** A text is matched by its pointer and then its bytes, so a text freed and
** another allocated at the same address can never take the wrong terms.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "a2m.h"
#include "rank/analyze.h"
#include "rank/analyze_ahead.h"
#include "rank/analyze_internal.h"
#include "util/phase.h"
#include "util/thread.h"

/* Fewer texts than this are analysed on the caller's own thread, as they come. */
#define AHEAD_MIN     64
/*
** How long the caller waits for a text a worker is on before it analyses
** the text itself, ns: a text takes about 10 µs, so a worker on a CPU is
** done within this, and one that is not may not run for milliseconds.
*/
#define AHEAD_WAIT_NS 40000

/* What one prepare started: shared by its caller and the workers. */
typedef struct batch {
	a2m_analyzer      *an;
	const char *const *texts;  /* the caller's: matched by address, never read by a worker */
	const char       **own;    /* own[i]: the workers' copy of texts[i] (NULL: none) */
	char              *bytes;  /* the copies */
	a2m_doc_terms     *dt;     /* dt[i]: texts[i]'s terms, until taken */
	int               *rc;     /* rc[i]: 0 analysed, -1 failed, 1 taken or none */
	_Atomic int       *state;  /* state[i]: FREE, CLAIMED or DONE (dt[i], rc[i] written) */
	size_t             n;
	size_t             next;   /* the caller's: where the next lookup starts */
	a2m_ahead_pool    *pool;
	atomic_size_t      claim;  /* the next text a worker takes; n: stop */
	/* Under the pool's mu: */
	int                users;  /* the caller until unprepare, and each worker on it */
	int                queued; /* in the pool's queue */
	int                foreseen; /* made by foresee */
	struct batch      *later;  /* the queue's next */
} batch;

/* A text's state: claimed by a worker or by the caller, done by a worker. */
enum { FREE, CLAIMED, DONE };

struct a2m_ahead_pool {
	a2m_analyzer   *an;
	pthread_mutex_t mu;
	pthread_cond_t  work;      /* a batch was queued, or stop */
	batch          *first, *last;
	batch          *foreseen;  /* queued by foresee, for a prepare of its texts */
	pthread_t       threads[A2M_HELPER_THREADS_MAX];
	size_t          started;
	int             stop;
	pid_t           pid;       /* the process whose threads these are */
};

static _Thread_local batch *mine;

#ifdef A2M_TEST_HOOKS
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  hold_cv = PTHREAD_COND_INITIALIZER;
static int hold_on, held;

void a2m_analyze_ahead_hold_for_tests(int on)
{
	pthread_mutex_lock(&hold_mu);
	hold_on = on;
	pthread_cond_broadcast(&hold_cv);
	pthread_mutex_unlock(&hold_mu);
}

int a2m_analyze_ahead_held_for_tests(void)
{
	pthread_mutex_lock(&hold_mu);
	int n = held;
	pthread_mutex_unlock(&hold_mu);
	return n;
}

/* A worker that claimed a text stops here while the test holds it: a thread not run. */
static void hold_here(void)
{
	pthread_mutex_lock(&hold_mu);
	if (hold_on) {
		held++;
		while (hold_on)
			pthread_cond_wait(&hold_cv, &hold_mu);
		held--;
	}
	pthread_mutex_unlock(&hold_mu);
}
#else
#define hold_here() ((void)0)
#endif

/* Claims text i; 1 when it was free. */
static int claim(batch *b, size_t i)
{
	int expect = FREE;
	return atomic_compare_exchange_strong(&b->state[i], &expect, CLAIMED);
}

static void batch_free(batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (atomic_load(&b->state[i]) == DONE && b->rc[i] == 0)
			a2m_doc_terms_free(&b->dt[i]);
	free(b->own);
	free(b->bytes);
	free(b->dt);
	free(b->rc);
	free(b->state);
	free(b);
}

/* Takes b out of p's queue, if it is there. Under p->mu. */
static void unqueue(a2m_ahead_pool *p, batch *b)
{
	if (!b->queued)
		return;
	batch **at = &p->first, *prev = NULL;
	while (*at != b) {
		prev = *at;
		at = &(*at)->later;
	}
	*at = b->later;
	if (p->last == b)
		p->last = prev;
	b->later = NULL;
	b->queued = 0;
}

/*
** The caller's (or the foreseen slot's) hold on b ends: the workers claim
** no more of it (one on a text finishes it on its copy). Under p->mu;
** returns 1 when nobody holds b any more, for the caller to free it
** after unlocking.
*/
static int let_go(a2m_ahead_pool *p, batch *b)
{
	atomic_store(&b->claim, b->n);
	unqueue(p, b);
	return --b->users == 0;
}

/* A worker's turn on b: the texts it claims, in order, until none is left. */
static void work_on(batch *b)
{
	void *wk = a2m_analyzer_worker_take(b->an);
	for (;;) {
		size_t i = atomic_fetch_add(&b->claim, 1);
		if (i >= b->n)
			break;
		if (!claim(b, i))
			continue;  /* the caller reached it first */
		hold_here();
		if (!b->own[i]) {
			b->rc[i] = 1;
		} else if (a2m_analyze_doc_on(b->an, wk, b->own[i], &b->dt[i]) == 0 &&
			   a2m_doc_terms_pack(&b->dt[i]) == 0) {
			b->rc[i] = 0;
		} else {
			b->rc[i] = -1;
			a2m_doc_terms_free(&b->dt[i]);
		}
		atomic_store_explicit(&b->state[i], DONE, memory_order_release);
	}
	a2m_analyzer_worker_give(b->an, wk);
}

/* A worker: the queue's first batch while there is one, until the pool stops. */
static void *work(void *arg)
{
	a2m_ahead_pool *p = arg;
	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		batch *b = p->first;
		if (!b) {
			pthread_cond_wait(&p->work, &p->mu);
			continue;
		}
		b->users++;
		pthread_mutex_unlock(&p->mu);
		work_on(b);
		pthread_mutex_lock(&p->mu);
		unqueue(p, b);  /* every text is claimed */
		if (--b->users == 0)
			batch_free(b);  /* its caller let go of it meanwhile */
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/*
** threads as asked (-1: a2m_helpers_default, one per core but the
** caller's, which is busy writing meanwhile), at most
** A2M_HELPER_THREADS_MAX.
*/
static size_t threads_for(int threads)
{
	size_t k = (size_t)(threads >= 0 ? threads : a2m_helpers_default());
	return k > A2M_HELPER_THREADS_MAX ? A2M_HELPER_THREADS_MAX : k;
}

/*
** an's pool, made at its first use; NULL when it cannot be made. A child
** of fork() has none of its parent's threads, and the pool's lock may
** have been held at the fork: it makes a pool of its own, and leaves the
** parent's (a few bytes) alone.
*/
static a2m_ahead_pool *pool_of(a2m_analyzer *an, _Atomic(a2m_ahead_pool *) *slot)
{
	a2m_ahead_pool *old = atomic_load(slot), *p;
	pid_t pid = getpid();
	if (old && old->pid == pid)
		return old;
	p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	if (pthread_mutex_init(&p->mu, NULL) != 0) {
		free(p);
		return NULL;
	}
	if (pthread_cond_init(&p->work, NULL) != 0) {
		pthread_mutex_destroy(&p->mu);
		free(p);
		return NULL;
	}
	p->an = an;
	p->pid = pid;
	a2m_ahead_pool *was = old;
	if (atomic_compare_exchange_strong(slot, &was, p))
		return p;
	/* Another thread made it first: ours has no thread yet. */
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->mu);
	free(p);
	return was;
}

void a2m_analyze_ahead_pool_free(a2m_ahead_pool *p)
{
	if (!p)
		return;
	if (p->pid != getpid()) {
		free(p);  /* a parent's, copied by fork(): no thread of it runs here */
		return;
	}
	pthread_mutex_lock(&p->mu);
	batch *b = p->foreseen;
	p->foreseen = NULL;
	int last = b && let_go(p, b);
	p->stop = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	if (last)
		batch_free(b);
	for (size_t t = 0; t < p->started; t++)
		pthread_join(p->threads[t], NULL);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* A batch of texts[0..n) with copies for the workers; NULL when memory ran out. */
static batch *batch_new(a2m_analyzer *an, a2m_ahead_pool *pool, const char *const *texts,
			size_t n)
{
	batch *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += texts[i] ? strlen(texts[i]) + 1 : 0;
	b->n = n;  /* batch_free's loop: every state FREE (0) */
	b->own = calloc(n, sizeof *b->own);
	b->bytes = malloc(total ? total : 1);
	b->dt = calloc(n, sizeof *b->dt);
	b->rc = calloc(n, sizeof *b->rc);
	b->state = calloc(n, sizeof *b->state);
	if (!b->own || !b->bytes || !b->dt || !b->rc || !b->state) {
		batch_free(b);
		return NULL;
	}
	char *at = b->bytes;
	for (size_t i = 0; i < n; i++) {
		if (!texts[i])
			continue;
		size_t len = strlen(texts[i]) + 1;
		memcpy(at, texts[i], len);
		b->own[i] = at;
		at += len;
	}
	b->an = an;
	b->texts = texts;
	b->pool = pool;
	atomic_init(&b->claim, 0);
	b->users = 1;
	return b;
}

/*
** Starts p's workers (up to k) and queues b for them; 0, or -1 when no
** thread would start (b is not queued then). A batch being written goes
** before the foreseen one: its writer needs its texts first. Under p->mu.
*/
static int enqueue(a2m_ahead_pool *p, batch *b, size_t k)
{
	while (p->started < k && a2m_thread_start(&p->threads[p->started], work, p) == 0)
		p->started++;
	if (!p->started)
		return -1;
	batch **at = &p->first;
	while (*at && !(b != p->foreseen && *at == p->foreseen))
		at = &(*at)->later;
	b->later = *at;
	*at = b;
	if (!b->later)
		p->last = b;
	b->queued = 1;
	pthread_cond_broadcast(&p->work);
	return 0;
}

/* Whether b's copies are texts[0..n), byte for byte and in order. */
static int same_texts(const batch *b, const char *const *texts, size_t n)
{
	if (b->n != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!b->own[i] != !texts[i] || (texts[i] && strcmp(b->own[i], texts[i]) != 0))
			return 0;
	return 1;
}

/*
** The batch foresee queued, when its texts are texts[0..n): then it is
** this caller's. Another is left foreseen: the writer that foresaw it may
** still be finishing the write before (whose prepare this may be). NULL
** when there is none to take.
*/
static batch *take_foreseen(a2m_ahead_pool *p, const char *const *texts, size_t n)
{
	pthread_mutex_lock(&p->mu);
	batch *b = p->foreseen;
	p->foreseen = NULL;
	pthread_mutex_unlock(&p->mu);
	/* Ours now (the slot's hold): compared without the lock, which the
	** workers take between batches. */
	if (!b || same_texts(b, texts, n))
		return b;
	pthread_mutex_lock(&p->mu);
	int last = 0;
	if (!p->foreseen)
		p->foreseen = b;
	else
		last = let_go(p, b);  /* a later foresee came meanwhile */
	pthread_mutex_unlock(&p->mu);
	if (last)
		batch_free(b);
	return NULL;
}

int a2m_analyze_ahead(a2m_analyzer *an, _Atomic(a2m_ahead_pool *) *slot,
		      const char *const *texts, size_t n, int threads)
{
	a2m_analyze_ahead_drop();
	size_t k = threads_for(threads);
	if (n < AHEAD_MIN || !k)
		return 0;
	a2m_ahead_pool *p = pool_of(an, slot);
	batch *b = p ? take_foreseen(p, texts, n) : NULL;
	if (b) {
		/* Begun while the write before was committed: matched from now
		** on by this caller's pointers. */
		b->texts = texts;
		mine = b;
		return 0;
	}
	if (!(b = p ? batch_new(an, p, texts, n) : NULL))
		return -1;
	pthread_mutex_lock(&p->mu);
	int none = enqueue(p, b, k) != 0;
	pthread_mutex_unlock(&p->mu);
	if (none) {
		/* No thread would start: nothing is kept, analyses run as they come. */
		batch_free(b);
		return -1;
	}
	mine = b;
	return 0;
}

int a2m_analyze_ahead_foresee(a2m_analyzer *an, _Atomic(a2m_ahead_pool *) *slot,
			      const char *const *texts, size_t n, int threads)
{
	size_t k = threads_for(threads);
	if (n < AHEAD_MIN || !k)
		return 0;
	a2m_ahead_pool *p = pool_of(an, slot);
	batch *b = p ? batch_new(an, p, texts, n) : NULL;
	if (!b)
		return -1;
	/* Not the caller's pointers: the prepare that takes it sets its own. */
	b->texts = NULL;
	b->foreseen = 1;
	pthread_mutex_lock(&p->mu);
	batch *old = p->foreseen;
	int last = old && let_go(p, old);
	p->foreseen = b;
	int none = enqueue(p, b, k) != 0;
	if (none)
		p->foreseen = NULL;
	pthread_mutex_unlock(&p->mu);
	if (last)
		batch_free(old);
	if (none) {
		batch_free(b);
		return -1;
	}
	return 0;
}

/* Waits up to AHEAD_WAIT_NS for a worker to finish text i; 1 when it did. */
static int wait_done(batch *b, size_t i)
{
	if (atomic_load_explicit(&b->state[i], memory_order_acquire) == DONE)
		return 1;
	a2m_phase was = a2m_phase_enter(A2M_PHASE_ANALYSIS);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int done = 0;
	for (unsigned k = 1; !done; k++) {
		done = atomic_load_explicit(&b->state[i], memory_order_acquire) == DONE;
		if (done || k % 64)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > AHEAD_WAIT_NS)
			break;
	}
	a2m_phase_leave(was);
	return done;
}

int a2m_analyze_ahead_take(const a2m_analyzer *an, const char *text, a2m_doc_terms *out)
{
	batch *b = mine;
	if (!b || b->an != an)
		return 0;
	/* The store asks in the batch's order; records it skips are passed over. */
	size_t i = b->next;
	while (i < b->n && b->texts[i] != text)
		i++;
	if (i == b->n || strcmp(b->texts[i], text) != 0)
		return 0;
	b->next = i + 1;
	/*
	** Not reached by a worker (busy, or its core taken by other work): the
	** caller analyses it itself rather than wait. One a worker is on is
	** waited for briefly, then analysed here too.
	*/
	if (claim(b, i) || !wait_done(b, i))
		return 0;
	if (b->rc[i] != 0)
		return 0;  /* failed (out of memory): analysed again, as it comes */
	*out = b->dt[i];
	memset(&b->dt[i], 0, sizeof b->dt[i]);
	b->rc[i] = 1;
	return 1;
}

#ifdef A2M_TEST_HOOKS
int a2m_analyze_ahead_foreseen_for_tests(void)
{
	return mine && mine->foreseen;
}
#endif

size_t a2m_analyze_ahead_done(void)
{
	batch *b = mine;
	size_t n = 0;
	for (size_t i = 0; b && i < b->n; i++)
		n += atomic_load(&b->state[i]) == DONE;
	return n;
}

void a2m_analyze_ahead_drop(void)
{
	batch *b = mine;
	if (!b)
		return;
	mine = NULL;
	a2m_ahead_pool *p = b->pool;
	pthread_mutex_lock(&p->mu);
	int last = let_go(p, b);
	pthread_mutex_unlock(&p->mu);
	if (last)
		batch_free(b);
}
