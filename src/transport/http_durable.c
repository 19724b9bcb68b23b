/*
** http_durable.c — the HTTP binding's answers that wait for a sync (group
** commit, store/sqlite_sync.c), waited for on a thread of their own.
**
** Why: a worker thread serves many connections. Were it to wait for the
** fsync of each write it ran, its other connections would wait too, and
** with a worker per core no more than two writes could ever share a sync.
** So a worker that ran a write suspends that connection (libmicrohttpd's
** suspend and resume) and goes on; this file's thread waits for the sync
** of every write handed to it since its last one — the first wait runs
** the sync, and it covers all of them — then resumes their connections,
** whose workers give the answers. The answer is made before the wait; a
** failed sync turns it into an error (a2m_http_defer, http.h).
*/
#include <errno.h>
#include <stdlib.h>

#include "transport/http_internal.h"
#include "util/thread.h"

static void *durable_main(void *arg)
{
	a2m_http *s = arg;
	pthread_mutex_lock(&s->durable_mu);
	for (;;) {
		while (!s->durable_head && !s->durable_stop)
			pthread_cond_wait(&s->durable_cv, &s->durable_mu);
		request *r = s->durable_head;
		if (!r)
			break;  /* stopping, and nothing left to resume */
		s->durable_head = s->durable_tail = NULL;
		pthread_mutex_unlock(&s->durable_mu);
		while (r) {
			/* Read before the resume: the worker may free r from then on. */
			request *next = r->next;
			struct MHD_Connection *c = r->conn;
			r->next = NULL;
			void *pending = r->pending;
			r->pending = NULL;
			if (s->defer->finish(s->h, pending, &r->reply) != A2M_OK)
				r->reply_owed = 1;  /* no error answer could be made */
			a2m_mhd()->resume_connection(c);
			r = next;
		}
		pthread_mutex_lock(&s->durable_mu);
	}
	pthread_mutex_unlock(&s->durable_mu);
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
