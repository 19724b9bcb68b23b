/*
** deferred.c — network writes whose answers wait for durability, taken
** apart from the transport's thread (deferred.h), and the writes such a
** transport hands over together run as one transaction.
**
** Why: with group commit (store/sqlite_sync.c) sixteen clients writing at
** once share their fsyncs, but each write was still its own transaction,
** applied one after another under the handle's lock: a whole commit each
** (its log pages with their checksums, the readers' commit number, the
** locks of the log), and the CPU, not the disk, became the bound. A
** transport that can wait without blocking (the HTTP binding's sync
** thread, transport/http_durable.c) instead queues its writes unrun
** (a2m_handle_network_deferred) and hands them over in a batch
** (a2m_deferred_finish), which runs them here in one joint transaction of
** the stack (stack.h): one COMMIT, one sync, then every answer.
**
** Each call keeps its own behaviour: it runs its method whole (its own
** checks, limits, keys, capacity and spills) in turn, seeing the calls
** before it as a later transaction would. What differs is only what an
** undo takes:
**   - a call that fails undoes the joint transaction (the stack rolls the
**     store back, as it would the call's own), gets its own error, and the
**     calls before it that had succeeded are run again in a new joint
**     transaction, then the rest (so they stand as if it had run first;
**     their first answers were never given). The engines' transactions
**     keep side state (buffered postings, counts, staged vectors, the
**     mirror's notes) that a savepoint would have to mark and restore in
**     each of them; running the others again reuses the one rollback every
**     engine already has, and a write that fails inside its transaction is
**     rare (checks of the request come before it begins). Run again, a
**     call gives its new records the ids and the time its first run gave
**     them (stack.h, a2m_stack_joint_part: kept as they are made), so
**     they keep the time they came at, not that of the failed attempt;
**   - a failed COMMIT, or a failed sync, fails every call that had
**     succeeded in it, with that error;
**   - the events the calls reported (the stack reports a change when its
**     operation ends, before the joint COMMIT) are taken back from the log
**     with anything they were part of; nobody can read them meanwhile, the
**     handle's lock being held exclusively from the first call to the COMMIT,
**     so a reader on another connection never sees uncommitted writes.
** A connection that can be pushed to (a local subscriber) sees its events
** as they are reported, so while one is subscribed every call runs in a
** transaction of its own, as before.
*/
#include <stdlib.h>
#include <string.h>

#include "events/event_log.h"
#include "protocol/events_hook.h"
#include "rpc/rpc.h"
#include "server/deferred.h"
#include "server/server.h"
#include "util/log.h"

/* What a deferred call still owes before its answer may be given. */
typedef struct deferred {
	uint64_t        ticket;  /* the sync it waits for; 0: none */
	json_t         *id;      /* run at once: its id (a copy) for an error answer */
	int             queued;  /* not run by the handle: req, call and o are its */
	int             ran;     /* queued, and run since (a2m_deferred_run) */
	a2m_rpc_request req;
	a2m_call        call;
	a2m_rpc_outcome o;
	int             undid;   /* its successful runs that undid the transaction */
	a2m_stack_replay replay; /* what its run in a joint transaction made */
	/* a2m_deferred_join: the queue (h->join_*), and what its runner left */
	struct deferred *next;
	int             done;    /* run: reply and status below are its answer */
	char           *reply;
	int             status;
} deferred;

void *a2m_deferred_applied(uint64_t ticket, const json_t *id)
{
	deferred *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	d->ticket = ticket;
	d->id = id ? json_deep_copy(id) : NULL;  /* NULL on OOM: no error answer */
	return d;
}

void *a2m_deferred_queue(const a2m_call *call, a2m_rpc_request *req)
{
	deferred *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	d->queued = 1;
	d->req = *req;
	memset(req, 0, sizeof *req);
	d->call = *call;
	return d;
}

static void outcome_clear(a2m_rpc_outcome *o)
{
	json_decref(o->result);
	free(o->text);
	a2m_error_clear(&o->err);
	memset(o, 0, sizeof *o);
}

/* A call that succeeded is failed after all: err (the failed COMMIT's). */
static void outcome_fail(a2m_rpc_outcome *o, const a2m_error *err)
{
	outcome_clear(o);
	o->rc = err->code ? err->code : A2M_INTERNAL_ERROR;
	a2m_error_set(&o->err, o->rc, "%s", err->message);
}

static void run(a2m *h, deferred *d)
{
	/* As a2m_handle: a local caller's push is read under the lock. */
	d->call.push = d->call.network ? 0 : h->srv.can_push;
	a2m_rpc_call(&d->call, &d->req, &d->o);
	/* A shared log's events (never in a joint transaction): logged now. */
	a2m_events_settle(&h->srv);
}

#ifdef A2M_TEST_HOOKS
static void (*before_again)(void);

void a2m_deferred_before_again_for_tests(void (*fn)(void))
{
	before_again = fn;
}
#endif

/* run() as a part of a joint transaction: what it makes is kept, or, run
** again, made the same (stack.h, a2m_stack_joint_part). */
static void run_part(a2m *h, deferred *d)
{
	a2m_stack_joint_part(h->srv.stack, &d->replay);
	run(h, d);
	a2m_stack_joint_part(h->srv.stack, NULL);
}

static uint64_t events_head(a2m *h)
{
	return h->srv.events ? a2m_event_log_head(h->srv.events) : 0;
}

static void events_undo(a2m *h, uint64_t head)
{
	if (h->srv.events)
		a2m_event_log_truncate(h->srv.events, head);
}

/*
** A joint COMMIT that failed: each of its n writes is answered the error,
** so the log only says that the store is failing, once for a run of
** failures (a full disk fails every batch: one line each would bury the
** log), and when a COMMIT succeeds again, how many it refused meanwhile.
*/
static void commit_failed(a2m *h, size_t n, const a2m_error *err)
{
	if (h->commits_failed++ == 0)
		a2m_log(A2M_LOG_ERROR, "a commit of %zu write%s failed, each answered %d "
			"(%s); until a commit succeeds, further failures are only counted",
			n, n == 1 ? "" : "s", err->code ? err->code : A2M_INTERNAL_ERROR,
			err->message);
	h->commits_failed_writes += n;
}

/* A joint COMMIT succeeded: the end of a run of failures, if one ran. */
static void commit_succeeded(a2m *h)
{
	if (!h->commits_failed)
		return;
	a2m_log(A2M_LOG_WARN, "commits succeed again, after %llu failed commit%s that "
		"refused %llu write%s", (unsigned long long)h->commits_failed,
		h->commits_failed == 1 ? "" : "s",
		(unsigned long long)h->commits_failed_writes,
		h->commits_failed_writes == 1 ? "" : "s");
	h->commits_failed = h->commits_failed_writes = 0;
}

/*
** Runs the calls todo names (indexes into d, n of them, in order) in joint
** transactions (the file's comment), under the handle's exclusive lock.
** Every call ends with its outcome in d[i]->o.
*/
static void run_joint(a2m *h, deferred **d, size_t *todo, size_t n)
{
	a2m_stack *st = h->srv.stack;
	while (n) {
		a2m_error err = {0};
		uint64_t mark = events_head(h);
		if (a2m_stack_joint_begin(st, &err) != 0) {
			/* Each alone, as without a batch: each gets the store's answer. */
			a2m_error_clear(&err);
			for (size_t k = 0; k < n; k++)
				run(h, d[todo[k]]);
			return;
		}
		size_t k = 0;
		while (k < n) {
			run_part(h, d[todo[k]]);
			if (a2m_stack_joint_undone(st))
				break;
			k++;
		}
		if (k == n) {
			if (a2m_stack_joint_commit(st, &err) != 0) {
				events_undo(h, mark);
				size_t failed = 0;
				for (k = 0; k < n; k++)
					if (d[todo[k]]->o.rc == 0) {
						outcome_fail(&d[todo[k]]->o, &err);
						failed++;
					}
				commit_failed(h, failed, &err);
			} else {
				commit_succeeded(h);
			}
			a2m_error_clear(&err);
			return;
		}
		/* todo[k] undid the transaction: again, without its writes. */
		events_undo(h, mark);
		a2m_stack_joint_end(st);
#ifdef A2M_TEST_HOOKS
		if (before_again)
			before_again();
#endif
		size_t m = 0;
		for (size_t j = 0; j < k; j++) {
			deferred *y = d[todo[j]];
			if (y->o.rc == 0) {  /* one that failed wrote nothing */
				outcome_clear(&y->o);
				y->replay.again = 1;
				todo[m++] = todo[j];
			}
		}
		deferred *x = d[todo[k]];
		if (x->o.rc == 0) {
			/* It succeeded, yet what it wrote was undone (a later part of
			** it, such as the embedding after a write, rolled back): once
			** more, and never acknowledged unwritten. */
			if (x->undid++ == 0) {
				outcome_clear(&x->o);
				x->replay.again = 1;
				todo[m++] = todo[k];
			} else {
				a2m_error_set(&err, A2M_INTERNAL_ERROR, "the write was rolled back "
					      "with the transaction it shared");
				outcome_fail(&x->o, &err);
				a2m_error_clear(&err);
			}
		}
		memmove(todo + m, todo + k + 1, (n - k - 1) * sizeof *todo);
		n = m + n - k - 1;
	}
}

/*
** Runs the queued calls of d, under the handle's exclusive lock, and gives
** each that succeeded the ticket of the sync that covers them. A result
** that holds the server's objects is serialised before the lock goes.
*/
static void run_queued(a2m *h, deferred **d, size_t n, char **replies, int *status)
{
	size_t nq = 0, *todo = malloc(n * sizeof *todo);
	pthread_rwlock_wrlock(&h->lock);
	for (size_t i = 0; i < n; i++) {
		if (!d[i]->queued || d[i]->ran)
			continue;
		if (todo)
			todo[nq++] = i;
		else
			run(h, d[i]);  /* out of memory: one after another */
	}
	/* A subscriber is pushed each event as it is reported: nothing of it
	** could be taken back. */
	if (nq && h->srv.subscribed && h->srv.notify) {
		for (size_t k = 0; k < nq; k++)
			run(h, d[todo[k]]);
	} else if (nq) {
		run_joint(h, d, todo, nq);
	}
	free(todo);
	uint64_t ticket = a2m_stack_sync_owed(h->srv.stack);
	for (size_t i = 0; i < n; i++) {
		if (!d[i]->queued || d[i]->ran)
			continue;
		d[i]->ticket = d[i]->o.rc == 0 ? ticket : 0;
		if (d[i]->req.method->shares)
			status[i] = a2m_rpc_reply(&d[i]->req, &d[i]->o, &replies[i], NULL);
	}
	pthread_rwlock_unlock(&h->lock);
	a2m_handle_swept(h);
	for (size_t i = 0; i < n; i++)
		if (d[i]->queued && !d[i]->ran && !d[i]->req.method->shares)
			status[i] = a2m_rpc_reply(&d[i]->req, &d[i]->o, &replies[i], NULL);
}

/*
** The sync every call of d waits for, waited for once (the tickets are in
** commit order, so the highest covers them all); when it failed, the
** answer of each call that owed it turns into an error.
*/
static void await_all(a2m *h, deferred **d, size_t n, char **replies, int *status)
{
	uint64_t top = 0;
	for (size_t i = 0; i < n; i++)
		if (d[i]->ticket > top)
			top = d[i]->ticket;
	char msg[256];
	if (!top || a2m_stack_sync_wait(h->srv.stack, top, msg, sizeof msg) == 0)
		return;
	a2m_log(A2M_LOG_ERROR, "%s", msg);
	for (size_t i = 0; i < n; i++) {
		if (!d[i]->ticket)
			continue;
		const json_t *id = d[i]->ran ? d[i]->req.id : d[i]->id;
		free(replies[i]);
		replies[i] = NULL;
		status[i] = A2M_OK;
		if (id && !(replies[i] = a2m_rpc_error_text(id, A2M_INTERNAL_ERROR, msg, NULL, NULL)))
			status[i] = A2M_NOMEM;
	}
}

void a2m_deferred_run(a2m *h, void **pending, char **replies, int *status, size_t n)
{
	deferred **d = (deferred **)pending;
	int any_queued = 0;
	for (size_t i = 0; i < n; i++) {
		status[i] = A2M_OK;
		any_queued |= d[i]->queued && !d[i]->ran;
	}
	if (!any_queued)
		return;
	run_queued(h, d, n, replies, status);
	for (size_t i = 0; i < n; i++)
		d[i]->ran |= d[i]->queued;
}

void a2m_deferred_finish(a2m *h, void **pending, char **replies, int *status, size_t n)
{
	deferred **d = (deferred **)pending;
	int any_queued = 0;
	for (size_t i = 0; i < n; i++)
		any_queued |= d[i]->queued && !d[i]->ran;
	if (any_queued)
		a2m_deferred_run(h, pending, replies, status, n);
	else
		for (size_t i = 0; i < n; i++)
			status[i] = A2M_OK;
	await_all(h, d, n, replies, status);
	for (size_t i = 0; i < n; i++) {
		a2m_deferred_drop(d[i]);
		pending[i] = NULL;
	}
}

void a2m_deferred_drop(void *pending)
{
	deferred *d = pending;
	if (!d)
		return;
	json_decref(d->id);
	a2m_rpc_request_free(&d->req);
	outcome_clear(&d->o);
	a2m_stack_replay_free(&d->replay);
	free(d);
}

/* ---- in-process callers on several threads ---- */

int a2m_deferred_join(a2m *h, const a2m_call *call, struct a2m_rpc_request *req,
		      char **reply)
{
	pthread_mutex_lock(&h->join_mu);
	if (!h->joining) {
		h->joining = 1;  /* this caller runs writes until it drains */
		pthread_mutex_unlock(&h->join_mu);
		return A2M_JOIN_RUN;
	}
	deferred *d = a2m_deferred_queue(call, req);
	if (!d) {
		pthread_mutex_unlock(&h->join_mu);
		return A2M_JOIN_ALONE;  /* no memory to queue: after the runner, as before */
	}
	if (h->join_tail)
		h->join_tail->next = d;
	else
		h->join_head = d;
	h->join_tail = d;
	while (!d->done)
		pthread_cond_wait(&h->join_cv, &h->join_mu);
	pthread_mutex_unlock(&h->join_mu);
	void *p = d;
	char *r = d->reply;
	int ran = d->status, waited;
	d->reply = NULL;
	a2m_deferred_finish(h, &p, &r, &waited, 1);
	*reply = r;
	return ran != A2M_OK ? ran : waited;
}

void a2m_deferred_join_drain(a2m *h)
{
	pthread_mutex_lock(&h->join_mu);
	while (h->join_head) {
		size_t n = 0;
		for (deferred *d = h->join_head; d; d = d->next)
			n++;
		void **pending = malloc(n * sizeof *pending);
		char **replies = malloc(n * sizeof *replies);
		int *status = malloc(n * sizeof *status);
		/* Out of memory: one at a time, in arrays of one. */
		size_t take = pending && replies && status ? n : 1;
		void *one_p[1];
		char *one_r[1];
		int one_s[1];
		void **pp = take > 1 ? pending : one_p;
		char **rr = take > 1 ? replies : one_r;
		int *ss = take > 1 ? status : one_s;
		deferred *first = h->join_head;
		deferred *d = first;
		for (size_t i = 0; i < take; i++, d = d->next) {
			pp[i] = d;
			rr[i] = NULL;
		}
		h->join_head = d;
		if (!d)
			h->join_tail = NULL;
		pthread_mutex_unlock(&h->join_mu);
		a2m_deferred_run(h, pp, rr, ss, take);
		pthread_mutex_lock(&h->join_mu);
		d = first;
		for (size_t i = 0; i < take; i++) {
			deferred *next = d->next;
			d->next = NULL;
			d->reply = rr[i];
			d->status = ss[i];
			d->done = 1;
			d = next;
		}
		pthread_cond_broadcast(&h->join_cv);
		free(pending);
		free(replies);
		free(status);
	}
	h->joining = 0;
	pthread_mutex_unlock(&h->join_mu);
}
