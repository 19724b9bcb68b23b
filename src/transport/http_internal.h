/*
** http_internal.h — what the HTTP binding's files (http.c, http_request.c,
** http_gate.c, http_ui.c, http_durable.c) share, for them only: the
** server's state, one request's state, libmicrohttpd's callbacks, the
** function that judges a request by its headers and the ones that queue a
** response.
*/
#ifndef A2M_HTTP_INTERNAL_H
#define A2M_HTTP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "transport/http.h"
#include "transport/mhd_api.h"

/* One stage of http_durable.c: its list of requests and its thread. */
typedef struct a2m_http_stage {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	struct request *head, *tail;
	size_t          n;        /* how many in the list */
	pthread_t       thread;
	int             started;  /* the thread runs */
	int             stop;     /* under mu: the thread ends once the list is empty */
	int             busy;     /* under mu: a batch taken from the list is being
	                             handed over (the run stage: by its thread, or
	                             by a worker that found the stage idle) */
} a2m_http_stage;

struct a2m_http {
	a2m *h;
	/* One daemon per worker thread, each with its own listening socket on
	** the same port (SO_REUSEPORT): see a2m_http_start. */
	struct MHD_Daemon *daemons[A2M_HTTP_MAX_THREADS];
	unsigned n_daemons;
	const char *path;
	const char *const *origins;
	size_t n_origins;
	const a2m_bearer_tokens *tokens;
	int ui;                /* the inspector is served (http_ui.c) */
	/* With ui: the origins the page itself has, as a browser names them
	** (the address bound, the name it was given, localhost on loopback).
	** Set once the port is bound, after the workers started: n_own is
	** stored last (release) and read first (acquire). */
	char own_origins[3][320];
	atomic_size_t n_own;
	char path_json[600];   /* the endpoint as a JSON string (the page's config) */
	size_t max_body;
	unsigned timeout_s;
	unsigned port;
	char url[320];
	char *cert, *key;      /* PEM text, kept until the daemon is stopped */
	size_t cert_len, key_len;

	atomic_int in_flight;  /* requests between their headers and completion */
	atomic_int stopping;   /* a2m_http_stop has begun */
	/* libmicrohttpd aborts the process (MHD_PANIC) when a daemon is stopped
	** with a connection still suspended, so the stop waits for suspended to
	** reach 0 once closing is set, and a write that comes after that (on a
	** kept-alive connection) is finished on its worker, not suspended
	** (http_durable.c). Both sequentially consistent: the worker raises
	** suspended before it reads closing, the stop sets closing before it
	** reads suspended, so one of the two always sees the other. */
	atomic_int suspended;  /* connections suspended by http_durable.c, not yet resumed */
	atomic_int closing;    /* the daemons are about to stop: suspend no more */
	/* A sync may never end (a disk that hangs): the stop waits for the
	** two counts above and below only until a deadline, and a worker
	** waiting for a sync itself (finish_here) would hang the join of its
	** daemon. So finishing counts those workers, and once shut is set
	** (after the stop's last look at finishing) a write is dropped unrun
	** and its connection closed; the same seq_cst pairing as above. */
	atomic_int finishing;  /* workers inside http_durable.c's finish_here */
	atomic_int shut;       /* the stop looked for the last time: run no write */
	int quiesced;          /* the stop's thread only: listen_fds taken */
	MHD_socket listen_fds[A2M_HTTP_MAX_THREADS]; /* closed once the daemons stop */

	/* Inside MHD_start_daemon: keep its last error. Atomic: the workers
	** it starts may log while the main thread clears it. */
	atomic_int starting;
	char start_error[256];

	/* Requests whose answers wait for a sync (http_durable.c): two stages,
	** each a list and a thread — the writes run, then their sync waited for. */
	const a2m_http_defer *defer;  /* NULL: none wait here */
	a2m_http_stage run, wait;
	uint64_t durable_calls, durable_batches; /* the run stage's, for the log at stop */
	int durable_started;   /* both stages run */
};

/* One request's state, from its headers to its completion. */
typedef struct request {
	char *body;
	size_t len, cap;
	size_t discarded;       /* bytes dropped after the body passed the limit */
	int too_big;
	const char *principal;  /* borrowed from the token table */
	const char *origin;     /* the allowed Origin it came with, to echo */
	int profile;            /* a GET of the well-known profile */
	/* Answered straight from libmicrohttpd's buffer (the whole body came
	** in one piece): the response waits for the request's last call. */
	int answered;
	char *reply;            /* the library's answer; NULL: none */
	void *pending;          /* the sync reply waits for (a2m_http_defer); NULL: none */
	struct MHD_Connection *conn; /* suspended, while pending */
	struct request *next;   /* in the list of http_durable.c */
	int reply_owed;         /* no answer, yet the body had an id: out of memory */
} request;

/* ---- http_request.c: one request, and the responses --------------------- */

/*
** libmicrohttpd's access handler (MHD_AccessHandlerCallback; cls is the
** a2m_http): the first call judges the headers (a2m_http_on_headers), the
** next ones take the body, the last one answers.
*/
enum MHD_Result a2m_http_on_request(void *cls, struct MHD_Connection *c, const char *url,
				    const char *method, const char *version,
				    const char *upload_data, size_t *upload_data_size,
				    void **con_cls);

/*
** libmicrohttpd's completion callback (MHD_OPTION_NOTIFY_COMPLETED): frees
** the request's state, drops a sync's reply that was never given, and
** takes the request out of s->in_flight.
*/
void a2m_http_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			   enum MHD_RequestTerminationCode toe);

/*
** Queues resp (which it releases, even on failure; NULL is MHD_NO) with the
** headers every response carries. Returns what MHD_queue_response does;
** MHD_NO closes the connection.
*/
enum MHD_Result a2m_http_send_response(a2m_http *s, struct MHD_Connection *c, request *r,
				       unsigned status, struct MHD_Response *resp);

/*
** Queues a short plain-text answer (text is a literal, not copied), with
** one more header when hname is set. Returns as a2m_http_send_response().
*/
enum MHD_Result a2m_http_send_text(a2m_http *s, struct MHD_Connection *c, request *r,
				   unsigned status, const char *text, const char *hname,
				   const char *hvalue);

/*
** Queues json (len bytes the library allocated; the response frees it,
** and so does a failure) as application/json. Returns as
** a2m_http_send_response().
*/
enum MHD_Result a2m_http_send_json(a2m_http *s, struct MHD_Connection *c, request *r,
				   unsigned status, char *json, size_t len);

/* ---- http_gate.c: the gate ---------------------------------------------- */

/*
** Everything decided from the headers of url/method (http.h has the order).
** Sets *admitted and returns MHD_YES with nothing queued when the request
** may go on (a POST whose body is to be read, or the well-known profile);
** otherwise *admitted is 0 and a refusal has been queued (or MHD_NO: close).
** Fills r->origin, r->principal, r->profile and r->cap.
*/
enum MHD_Result a2m_http_on_headers(a2m_http *s, struct MHD_Connection *c, request *r,
				    const char *url, const char *method, int *admitted);

/* ---- http_ui.c: the inspector's files ------------------------------------ */

/* Whether url is under A2M_HTTP_UI. */
int a2m_http_ui_path(const char *url);

/*
** Answers a request for url, under A2M_HTTP_UI, with method: a file of
** the page with its Content-Security-Policy, the page's configuration,
** 404, or 405 for a method other than GET and HEAD.
*/
enum MHD_Result a2m_http_ui(a2m_http *s, struct MHD_Connection *c, request *r, const char *url,
			    const char *method);

/* ---- http_durable.c: answers that wait for group commit's sync ---- */

/* Starts the thread that waits for syncs. Returns 0, or an errno. */
int a2m_http_durable_start(a2m_http *s);

/*
** Suspends c, whose request r has its answer made but owes a sync
** (r->pending), and hands r to the thread: once the sync is done (or
** failed, the answer then an error) it resumes c, and the access handler
** gives the answer in its next call. Returns 1 then. Once the server is
** closing (s->closing) c is not suspended: the call is finished on this
** thread, r->pending is NULL and its answer in r->reply (r->reply_owed
** when none could be made), to be given now; returns 0. Once it is shut
** (s->shut) the call is dropped unrun (r->pending NULL, no answer) and
** -1 says: close the connection.
*/
int a2m_http_durable_wait(a2m_http *s, struct MHD_Connection *c, request *r);

/* Ends the thread once every request handed to it is resumed. */
void a2m_http_durable_stop(a2m_http *s);

#endif
