/*
** shared.c — the event log kept in the store (see events/shared.h).
**
** Each event travels as a row (store.h, a2m_event_row): its §4.12 object
** as JSON text, who may see it (owner, shared) and, for an event naming
** records of several owners, its audience as JSON text, one [owner,
** shared] pair per id. A read turns each row back into an a2m_event for
** a2m_event_view, the one function that decides what a reader may see of
** an event in either kind of log.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/shared.h"
#include "util/grow.h"
#include "util/log.h"

/* Events read from the store per round trip. */
#define CHUNK 256

struct a2m_event_shared {
	a2m_store     *store;
	size_t         capacity;
	a2m_event_row *rows;       /* buffered until the flush; strings owned */
	size_t         n, cap;
	int            gaps;       /* events that could not be buffered */
};

a2m_event_shared *a2m_event_shared_new(a2m_store *store, size_t capacity)
{
	a2m_event_shared *sh = calloc(1, sizeof *sh);
	if (!sh)
		return NULL;
	sh->store = store;
	sh->capacity = capacity;
	return sh;
}

static void rows_drop(a2m_event_shared *sh)
{
	for (size_t i = 0; i < sh->n; i++) {
		free((char *)sh->rows[i].body);
		free((char *)sh->rows[i].owner);
		free((char *)sh->rows[i].audience);
	}
	sh->n = 0;
}

void a2m_event_shared_free(a2m_event_shared *sh)
{
	if (!sh)
		return;
	rows_drop(sh);
	free(sh->rows);
	free(sh);
}

void a2m_event_shared_gap(a2m_event_shared *sh)
{
	sh->gaps++;
}

/* The audience of c as JSON text, or NULL (none, or no memory: *oom). */
static char *audience_text(const a2m_change *c, int *oom)
{
	if (!c->audience || !c->n_ids)
		return NULL;
	json_t *a = json_array();
	for (size_t i = 0; a && i < c->n_ids; i++) {
		json_t *pair = json_pack("[o b]", c->audience[i].owner ? json_string(c->audience[i].owner)
									 : json_null(),
					 c->audience[i].shared);
		if (!pair || json_array_append_new(a, pair) != 0) {
			json_decref(a);
			a = NULL;
		}
	}
	char *text = a ? json_dumps(a, JSON_COMPACT) : NULL;
	json_decref(a);
	if (!text)
		*oom = 1;
	return text;
}

int a2m_event_shared_add(a2m_event_shared *sh, const a2m_change *c)
{
	int oom = 0;
	if (a2m_grow((void **)&sh->rows, &sh->cap, sh->n + 1, sizeof *sh->rows))
		return -1;
	json_t *obj = a2m_event_build(c);
	char *body = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	json_decref(obj);
	char *owner = c->owner ? strdup(c->owner) : NULL;
	char *audience = audience_text(c, &oom);
	if (!body || (c->owner && !owner) || oom) {
		free(body);
		free(owner);
		free(audience);
		return -1;
	}
	sh->rows[sh->n++] = (a2m_event_row){.at = c->at, .body = body, .owner = owner,
					    .shared = c->shared, .audience = audience};
	return 0;
}

/* Appends what is buffered (in the open transaction, if any) and forgets it. */
static int append(a2m_event_shared *sh)
{
	uint64_t first;
	if (sh->gaps) {
		a2m_log(A2M_LOG_WARN, "events: %d event(s) could not be kept (out of memory)",
			sh->gaps);
		sh->gaps = 0;
	}
	if (!sh->n)
		return 0;
	int rc = sh->store->ops->events_append(sh->store, sh->rows, sh->n,
					       (int64_t)sh->capacity, &first);
	rows_drop(sh);
	return rc;
}

int a2m_event_shared_write(a2m_event_shared *sh)
{
	return append(sh);
}

int a2m_event_shared_flush(a2m_event_shared *sh)
{
	size_t n = sh->n;
	int rc = append(sh);
	if (rc)
		a2m_log(A2M_LOG_WARN, "events: %zu event(s) of committed changes were not logged: %s",
			n, sh->store->errmsg);
	return rc;
}

/* ---- reading ------------------------------------------------------------------ */

/* A row as a2m_event_view takes it; release with event_clear. NULL obj: no memory. */
static void event_of(const a2m_event_row *row, a2m_event *ev)
{
	memset(ev, 0, sizeof *ev);
	ev->seq = row->seq;
	ev->obj = json_loads(row->body, 0, NULL);
	ev->owner = (char *)row->owner;
	ev->shared = row->shared;
	json_t *a = row->audience ? json_loads(row->audience, 0, NULL) : NULL;
	size_t n = json_array_size(a);
	if (n && (ev->audience = calloc(n, sizeof *ev->audience))) {
		for (size_t i = 0; i < n; i++) {
			json_t *pair = json_array_get(a, i);
			const char *o = json_string_value(json_array_get(pair, 0));
			ev->audience[i].owner = o ? strdup(o) : NULL;
			ev->audience[i].shared = json_is_true(json_array_get(pair, 1));
		}
		ev->n_audience = n;
	}
	json_decref(a);
}

static void event_clear(a2m_event *ev)
{
	json_decref(ev->obj);
	for (size_t i = 0; i < ev->n_audience; i++)
		free(ev->audience[i].owner);
	free(ev->audience);
	memset(ev, 0, sizeof *ev);
}

/* The view of row for scope and kinds (NULL: not for it); *oom when memory ran out. */
static json_t *row_view(const a2m_event_row *row, const a2m_scope *scope, const json_t *kinds,
			int *oom)
{
	a2m_event ev;
	event_of(row, &ev);
	*oom = 0;
	if (!ev.obj) {
		/* A body the store holds is ours and parses: no memory, then. */
		*oom = 1;
		return NULL;
	}
	json_t *view = a2m_event_view(&ev, scope, kinds, oom);
	event_clear(&ev);
	return view;
}

static int store_error(a2m_event_shared *sh, a2m_error *err, int rc)
{
	return a2m_error_set(err, rc == A2M_READ_ONLY ? A2M_READ_ONLY : A2M_INTERNAL_ERROR,
			     "storage: %s", sh->store->errmsg[0] ? sh->store->errmsg : "failed");
}

int a2m_event_shared_head(a2m_event_shared *sh, uint64_t *head)
{
	a2m_event_rows b;
	int rc = sh->store->ops->events_read(sh->store, 0, 0, &b);
	*head = rc ? 0 : b.head;
	a2m_event_rows_free(&b);
	return rc;
}

int a2m_event_shared_read(a2m_event_shared *sh, const char *cursor, size_t limit,
			  const json_t *kinds, const a2m_scope *scope, json_t **result,
			  a2m_error *err)
{
	char next[A2M_EVENT_CURSOR_LEN];
	a2m_event_rows b;
	json_t *events = json_array();
	uint64_t after = 0;
	int rc, reset = 0, more = 0, oom = 0;
	*result = NULL;
	if (!events)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	/* The bounds and the salt come with every read. */
	if ((rc = sh->store->ops->events_read(sh->store, 0, 0, &b))) {
		a2m_event_rows_free(&b);
		json_decref(events);
		return store_error(sh, err, rc);
	}
	if (!cursor) {
		a2m_event_cursor_format(b.salt, b.head, next);
	} else {
		/* Honoured only when every event after it is still held. */
		if (a2m_event_cursor_parse(b.salt, cursor, &after) != 0 || after > b.head ||
		    after + 1 < b.oldest) {
			reset = 1;
			after = b.oldest - 1;
		}
		uint64_t last = after;
		size_t taken = 0;
		int done = 0;
		while (!done && !rc && !oom) {
			a2m_event_rows chunk;
			if ((rc = sh->store->ops->events_read(sh->store, last, CHUNK, &chunk))) {
				a2m_event_rows_free(&chunk);
				break;
			}
			for (size_t i = 0; i < chunk.n && !done; i++) {
				json_t *view = row_view(&chunk.v[i], scope, kinds, &oom);
				if (oom)
					break;
				if (view) {
					if (limit && taken == limit) {
						json_decref(view);
						more = 1;
						done = 1;
						break;
					}
					if (json_array_append_new(events, view) != 0) {
						oom = 1;
						break;
					}
					taken++;
				}
				/* Skipped events are passed too (events.c). */
				last = chunk.v[i].seq;
			}
			if (chunk.n < CHUNK)
				done = 1;
			a2m_event_rows_free(&chunk);
		}
		a2m_event_cursor_format(b.salt, last, next);
	}
	a2m_event_rows_free(&b);
	if (rc) {
		json_decref(events);
		return store_error(sh, err, rc);
	}
	json_t *res = oom ? NULL : json_pack("{sO ss}", "events", events, "cursor", next);
	json_decref(events);
	if (res && ((more && json_object_set_new(res, "more", json_true())) ||
		    (reset && json_object_set_new(res, "reset", json_true())))) {
		json_decref(res);
		res = NULL;
	}
	if (!res)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	*result = res;
	return 0;
}

int a2m_event_shared_since(a2m_event_shared *sh, uint64_t *after, const a2m_scope *scope,
			   const json_t *kinds, void (*emit)(json_t *view, void *ctx), void *ctx)
{
	for (;;) {
		a2m_event_rows chunk;
		int rc = sh->store->ops->events_read(sh->store, *after, CHUNK, &chunk);
		if (rc) {
			a2m_event_rows_free(&chunk);
			return rc;
		}
		/* Events the log dropped before this reader came are passed by. */
		if (*after + 1 < chunk.oldest)
			*after = chunk.oldest - 1;
		for (size_t i = 0; i < chunk.n; i++) {
			int oom = 0;
			json_t *view = row_view(&chunk.v[i], scope, kinds, &oom);
			if (view)
				emit(view, ctx);
			*after = chunk.v[i].seq;
		}
		size_t n = chunk.n;
		a2m_event_rows_free(&chunk);
		if (n < CHUNK)
			return 0;
	}
}
