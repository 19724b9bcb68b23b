/*
** http_durable.c — the HTTP binding's answers that wait for a sync (group
** commit, store/sqlite_sync.c), waited for on a thread of their own.
**
** Why: a worker thread serves many connections. Were it to wait for the
** fsync of each write it ran, its other connections would wait too, and
** with a worker per core no more than two writes could ever share a sync.
** So a worker that took a write suspends that connection (libmicrohttpd's
** suspend and resume) and goes on. Two threads of this file take it from
** there, a stage each: the first takes every write handed to it since it
** last looked and has them run in one transaction (a2m_http_defer,
** http.h; server/deferred.c); the second waits for the one sync that
** covers them, then resumes their connections, whose workers give the
** answers. So while one batch's sync runs, the next batch is applied,
** and more gather meanwhile.
**
** A thread is woken only when it has something to do: a write held back
** (hold, below) does not wake the run stage, and the writes held back
** until a sync ends are run by the wait stage's own thread, which then
** syncs them, rather than handed back to the run stage's. Each needless
** wake was a context switch, and on two cores shared with the clients
** those were the largest cost of an acknowledged write ("Group commit",
** docs/BENCHMARKS.md).
*/
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/http_internal.h"
#include "util/log.h"
#include "util/thread.h"

/* The most writes one transaction runs (the rest wait for the next). */
#define BATCH_MAX 64

/*
** A batch's arrays, kept by a stage's thread and grown as needed; when
** they cannot grow, the requests are handed over one at a time.
*/
typedef struct batch {
	void **pending;
	char **replies;
	int   *status;
	size_t cap;
} batch;

static int batch_fit(batch *b, size_t n)
{
	if (n <= b->cap)
		return 1;
	void **p = realloc(b->pending, n * sizeof *p);
	if (p)
		b->pending = p;
	char **q = realloc(b->replies, n * sizeof *q);
	if (q)
		b->replies = q;
	int *t = realloc(b->status, n * sizeof *t);
	if (t)
		b->status = t;
	if (!p || !q || !t)
		return 0;
	b->cap = n;
	return 1;
}

static void stage_put(a2m_http_stage *g, request *first, request *last, size_t n)
{
	pthread_mutex_lock(&g->mu);
	if (g->tail)
		g->tail->next = first;
	else
		g->head = first;
	g->tail = last;
	g->n += n;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

#ifdef A2M_TEST_HOOKS
static atomic_int resumes_held;

void a2m_http_hold_resumes_for_tests(int on)
{
	atomic_store(&resumes_held, on);
}

/* Bounded (30 s), so a test that forgets to let go only slows down. */
static void resumes_wait(void)
{
	for (int i = 0; i < 300000 && atomic_load(&resumes_held); i++) {
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
}
#define RESUMES_WAIT() resumes_wait()
#else
#define RESUMES_WAIT() ((void)0)
#endif

/*
** The requests of the list at r (n of them; b may be NULL when n is 1),
** handed over together: the run stage (wait 0) has their writes run, then
** passes them on to the wait stage; the wait stage (wait 1) waits for
** their sync, and resumes their connections, whose workers give the
** answers.
*/
static void hand_over(a2m_http *s, request *r, size_t n, batch *b, int wait)
{
	void *one_pending[1];
	char *one_reply[1];
	int one_status[1];
	int whole = n > 1 && batch_fit(b, n);  /* one: the arrays below */
	while (r) {
		size_t k = whole ? n : 1;
		void **pending = whole ? b->pending : one_pending;
		char **replies = whole ? b->replies : one_reply;
		int *status = whole ? b->status : one_status;
		request *first = r, *last = r;
		for (size_t i = 0; i < k; i++, r = r->next) {
			pending[i] = r->pending;
			replies[i] = r->reply;
			r->reply = NULL;
			last = r;
		}
		if (wait) {
			s->defer->finish(s->h, pending, replies, status, k);
			RESUMES_WAIT();
		}
		else
			s->defer->run(s->h, pending, replies, status, k);
		r = first;
		for (size_t i = 0; i < k; i++) {
			/* Read before the resume: the worker may free r from then on. */
			request *next = r->next;
			r->reply = replies[i];
			if (status[i] != A2M_OK)
				r->reply_owed = 1;  /* no answer could be made */
			if (wait) {
				r->pending = NULL;  /* freed by finish */
				r->next = NULL;
				a2m_mhd()->resume_connection(r->conn);
				/* After the resume: the stop may go on from here. */
				atomic_fetch_sub(&s->suspended, 1);
			}
			r = next;
		}
		if (!wait) {
			last->next = NULL;
			stage_put(&s->wait, first, last, k);
		}
	}
}

/*
** Whether the run stage holds its few writes back (under its mu): while a
** sync is waited for, the writes that come cannot be answered before the
** next one anyway, so they gather into one transaction (fewer, larger
** commits: the CPU is what bounds a fast disk) until the sync ends or
** HOLD_UNTIL of them are waiting (then the next batch runs beside the
** sync, as a slow disk wants).
*/
#define HOLD_UNTIL 8

/* Whether a sync is waited for or a batch waits to be (takes wait.mu, so
** never under it: the order is run.mu, then wait.mu). */
static int syncing(a2m_http *s)
{
	pthread_mutex_lock(&s->wait.mu);
	int on = s->wait.busy || s->wait.head;
	pthread_mutex_unlock(&s->wait.mu);
	return on;
}

static int hold(a2m_http *s, const a2m_http_stage *g)
{
	if (g->n >= HOLD_UNTIL || g->stop)
		return 0;
	return syncing(s);
}

/* Whether the run stage's thread has something to do (under run.mu). */
static int run_due(a2m_http *s)
{
	const a2m_http_stage *g = &s->run;
	return g->stop || (g->head && !g->busy && !hold(s, g));
}

/*
** Takes the first batch of the stage's list (under its mu; the list not
** empty): all of it, or BATCH_MAX for the run stage, since one transaction
** holds the handle's lock from its first write to its COMMIT and readers
** wait no longer than this. Returns its first request; *n its length.
*/
static request *take(a2m_http_stage *g, int cap, size_t *n)
{
	request *r = g->head;
	*n = g->n;
	if (cap && g->n > BATCH_MAX) {
		request *last = r;
		for (size_t i = 1; i < BATCH_MAX; i++)
			last = last->next;
		g->head = last->next;
		last->next = NULL;
		g->n -= BATCH_MAX;
		*n = BATCH_MAX;
	} else {
		g->head = g->tail = NULL;
		g->n = 0;
	}
	g->busy = 1;
	return r;
}

/* After a batch of n was handed over by the run stage (under its mu). */
static void ran(a2m_http *s, size_t n)
{
	s->durable_calls += n;
	s->durable_batches++;
}

/*
** The sync is over (the wait stage's thread, no lock held): what the run
** stage held back meanwhile is run here, and put on the wait stage's list
** for this thread to sync next, which saves waking the run stage's thread
** only to wake this one again. Nothing when the run stage is running a
** batch itself: it hands it over when done.
*/
static void run_held(a2m_http *s, batch *b)
{
	a2m_http_stage *g = &s->run;
	pthread_mutex_lock(&g->mu);
	if (g->head && !g->busy) {
		size_t n;
		request *r = take(g, 1, &n);
		pthread_mutex_unlock(&g->mu);
		hand_over(s, r, n, b, 0);
		pthread_mutex_lock(&g->mu);
		g->busy = 0;
		ran(s, n);
	}
	/* What came meanwhile may be the run stage thread's (and its stop). */
	if (run_due(s))
		pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static void stage_loop(a2m_http *s, a2m_http_stage *g, int wait)
{
	batch b = {0};
	pthread_mutex_lock(&g->mu);
	for (;;) {
		/* A worker handing a batch over: what comes meanwhile is ours
		** once it is done (it signals). */
		while (((!g->head || g->busy) || (!wait && hold(s, g))) &&
		       !(g->stop && !g->busy && !g->head))
			pthread_cond_wait(&g->cv, &g->mu);
		if (!g->head)
			break;  /* stopping, and nothing left */
		size_t n;
		request *r = take(g, !wait, &n);
		pthread_mutex_unlock(&g->mu);
		hand_over(s, r, n, &b, wait);
		pthread_mutex_lock(&g->mu);
		g->busy = 0;
		if (!wait) {
			ran(s, n);
		} else if (!g->head) {
			pthread_mutex_unlock(&g->mu);
			run_held(s, &b);
			pthread_mutex_lock(&g->mu);
		}
	}
	pthread_mutex_unlock(&g->mu);
	free(b.pending);
	free(b.replies);
	free(b.status);
}

static void *run_main(void *arg)
{
	a2m_http *s = arg;
	stage_loop(s, &s->run, 0);
	return NULL;
}

static void *wait_main(void *arg)
{
	a2m_http *s = arg;
	stage_loop(s, &s->wait, 1);
	return NULL;
}

/* Ends the stage's thread once its list is empty. */
static void stage_join(a2m_http_stage *g)
{
	if (!g->started)
		return;
	pthread_mutex_lock(&g->mu);
	g->stop = 1;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
	pthread_join(g->thread, NULL);
	g->started = 0;
}

/* Frees a stage made by stage_start, its thread joined. */
static void stage_free(a2m_http_stage *g)
{
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
}

static int stage_start(a2m_http *s, a2m_http_stage *g, void *(*fn)(void *))
{
	memset(g, 0, sizeof *g);
	int e = pthread_mutex_init(&g->mu, NULL);
	if (e)
		return e;
	if ((e = pthread_cond_init(&g->cv, NULL)) != 0) {
		pthread_mutex_destroy(&g->mu);
		return e;
	}
	if ((e = a2m_thread_start(&g->thread, fn, s)) != 0) {
		pthread_cond_destroy(&g->cv);
		pthread_mutex_destroy(&g->mu);
		return e;
	}
	g->started = 1;
	return 0;
}

int a2m_http_durable_start(a2m_http *s)
{
	int e = stage_start(s, &s->wait, wait_main);
	if (!e && (e = stage_start(s, &s->run, run_main)) != 0) {
		stage_join(&s->wait);
		stage_free(&s->wait);
	}
	if (!e)
		s->durable_started = 1;
	return e;
}

/*
** The server is closing: r's call finished on the calling worker, which
** waits for its sync itself (a stop is under way; nothing else of this
** worker's is worth more than the connections being let go). Returns 0;
** -1 when the stop already took its last look at the workers (s->shut):
** then the call is dropped unrun, since a sync that hung here would hang
** the daemon's stop, and the connection is to be closed unanswered.
*/
static int finish_here(a2m_http *s, request *r)
{
	/* Counted before shut is read (http_internal.h). */
	atomic_fetch_add(&s->finishing, 1);
	if (atomic_load(&s->shut)) {
		atomic_fetch_sub(&s->finishing, 1);
		s->defer->drop(r->pending);
		r->pending = NULL;
		a2m_free(r->reply);
		r->reply = NULL;
		r->reply_owed = 0;
		return -1;
	}
	void *pending[1] = {r->pending};
	char *replies[1] = {r->reply};
	int status[1];
	r->pending = NULL;
	r->reply = NULL;
	s->defer->finish(s->h, pending, replies, status, 1);
	r->reply = replies[0];
	if (status[0] != A2M_OK)
		r->reply_owed = 1;  /* no answer could be made */
	atomic_fetch_sub(&s->finishing, 1);
	return 0;
}

int a2m_http_durable_wait(a2m_http *s, struct MHD_Connection *c, request *r)
{
	/* Counted before closing is read (http_internal.h): a stop that has
	** begun to wait for the count sees this one, or this one sees it. */
	atomic_fetch_add(&s->suspended, 1);
	if (atomic_load(&s->closing)) {
		atomic_fetch_sub(&s->suspended, 1);
		return finish_here(s, r);
	}
	/* Suspended before the thread can see it, so its resume finds it so. */
	r->conn = c;
	r->next = NULL;
	a2m_mhd()->suspend_connection(c);
	/*
	** Both stages idle (no batch running, no sync waited for): nothing
	** could share this write's transaction, so this worker runs it itself
	** (its other connections would wait for the handle's lock anyway),
	** which saves waking the run stage's thread, a hop that costs most on
	** a loaded machine. Otherwise the write waits for the batch running
	** now, gathering with the others that come meanwhile.
	*/
	a2m_http_stage *g = &s->run;
	pthread_mutex_lock(&g->mu);
	if (g->busy || g->head || syncing(s)) {
		/* Queued; the thread is woken only if it would run it now (not
		** busy, not held back): whoever is busy, or the end of the sync,
		** looks at the list again. */
		if (g->tail)
			g->tail->next = r;
		else
			g->head = r;
		g->tail = r;
		g->n++;
		if (run_due(s))
			pthread_cond_signal(&g->cv);
		pthread_mutex_unlock(&g->mu);
		return 1;
	}
	g->busy = 1;
	pthread_mutex_unlock(&g->mu);
	hand_over(s, r, 1, NULL, 0);
	pthread_mutex_lock(&g->mu);
	g->busy = 0;
	ran(s, 1);
	if (run_due(s))
		pthread_cond_signal(&g->cv);  /* what came meanwhile: the thread's */
	pthread_mutex_unlock(&g->mu);
	return 1;
}

void a2m_http_durable_stop(a2m_http *s)
{
	if (!s->durable_started)
		return;
	/* The run stage first: what it ran still goes through the wait stage,
	** which wakes the run stage's condition, so both are freed last. */
	stage_join(&s->run);
	stage_join(&s->wait);
	stage_free(&s->run);
	stage_free(&s->wait);
	s->durable_started = 0;
	if (s->durable_batches)
		a2m_log(A2M_LOG_INFO, "http: %llu calls waited for durability in %llu batches "
			"(%.1f a batch)", (unsigned long long)s->durable_calls,
			(unsigned long long)s->durable_batches,
			(double)s->durable_calls / (double)s->durable_batches);
	s->durable_calls = s->durable_batches = 0;
}
