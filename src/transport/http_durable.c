/*
** http_durable.c — the HTTP binding's answers that wait for a sync (group
** commit, store/sqlite_sync.c), waited for on a thread of their own.
**
** Why: a worker thread serves many connections. Were it to wait for the
** fsync of each write it ran, its other connections would wait too, and
** with a worker per core no more than two writes could ever share a sync.
** So a worker that took a write suspends that connection (libmicrohttpd's
** suspend and resume) and goes on; this file's thread takes every write
** handed to it since it last looked, has them run in one transaction and
** waits for the one sync that covers them (a2m_http_defer, http.h;
** server/deferred.c), then resumes their connections, whose workers give
** the answers. While it runs one batch and waits, the next one gathers.
*/
#include <errno.h>
#include <stdlib.h>

#include "transport/http_internal.h"
#include "util/thread.h"

/*
** Finishes the n requests of the list at r together (the writes among
** them run in one transaction: server/deferred.c) and resumes their
** connections, whose workers give the answers. The arrays are b's, kept
** by the thread and grown here; when they cannot grow, the requests are
** finished one at a time.
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

static void finish_list(a2m_http *s, request *r, size_t n, batch *b)
{
	void *one_pending[1];
	char *one_reply[1];
	int one_status[1];
	int whole = batch_fit(b, n);
	while (r) {
		size_t k = whole ? n : 1;
		void **pending = whole ? b->pending : one_pending;
		char **replies = whole ? b->replies : one_reply;
		int *status = whole ? b->status : one_status;
		request *first = r;
		for (size_t i = 0; i < k; i++, r = r->next) {
			pending[i] = r->pending;
			r->pending = NULL;
			replies[i] = r->reply;
			r->reply = NULL;
		}
		s->defer->finish(s->h, pending, replies, status, k);
		r = first;
		for (size_t i = 0; i < k; i++) {
			/* Read before the resume: the worker may free r from then on. */
			request *next = r->next;
			struct MHD_Connection *c = r->conn;
			r->next = NULL;
			r->reply = replies[i];
			if (status[i] != A2M_OK)
				r->reply_owed = 1;  /* no answer could be made */
			a2m_mhd()->resume_connection(c);
			r = next;
		}
	}
}

static void *durable_main(void *arg)
{
	a2m_http *s = arg;
	batch b = {0};
	pthread_mutex_lock(&s->durable_mu);
	for (;;) {
		while (!s->durable_head && !s->durable_stop)
			pthread_cond_wait(&s->durable_cv, &s->durable_mu);
		request *r = s->durable_head;
		if (!r)
			break;  /* stopping, and nothing left to resume */
		size_t n = s->durable_n;
		s->durable_head = s->durable_tail = NULL;
		s->durable_n = 0;
		pthread_mutex_unlock(&s->durable_mu);
		finish_list(s, r, n, &b);
		pthread_mutex_lock(&s->durable_mu);
	}
	pthread_mutex_unlock(&s->durable_mu);
	free(b.pending);
	free(b.replies);
	free(b.status);
	return NULL;
}

int a2m_http_durable_start(a2m_http *s)
{
	int e = pthread_mutex_init(&s->durable_mu, NULL);
	if (e)
		return e;
	if ((e = pthread_cond_init(&s->durable_cv, NULL)) != 0) {
		pthread_mutex_destroy(&s->durable_mu);
		return e;
	}
	s->durable_head = s->durable_tail = NULL;
	s->durable_n = 0;
	s->durable_stop = 0;
	if ((e = a2m_thread_start(&s->durable_thread, durable_main, s)) != 0) {
		pthread_cond_destroy(&s->durable_cv);
		pthread_mutex_destroy(&s->durable_mu);
		return e;
	}
	s->durable_started = 1;
	return 0;
}

enum MHD_Result a2m_http_durable_wait(a2m_http *s, struct MHD_Connection *c, request *r)
{
	/* Suspended before the thread can see it, so its resume finds it so. */
	r->conn = c;
	r->next = NULL;
	a2m_mhd()->suspend_connection(c);
	pthread_mutex_lock(&s->durable_mu);
	if (s->durable_tail)
		s->durable_tail->next = r;
	else
		s->durable_head = r;
	s->durable_tail = r;
	s->durable_n++;
	pthread_cond_signal(&s->durable_cv);
	pthread_mutex_unlock(&s->durable_mu);
	return MHD_YES;
}

void a2m_http_durable_stop(a2m_http *s)
{
	if (!s->durable_started)
		return;
	pthread_mutex_lock(&s->durable_mu);
	s->durable_stop = 1;
	pthread_cond_signal(&s->durable_cv);
	pthread_mutex_unlock(&s->durable_mu);
	pthread_join(s->durable_thread, NULL);
	pthread_cond_destroy(&s->durable_cv);
	pthread_mutex_destroy(&s->durable_mu);
	s->durable_started = 0;
}
