/*
** event_log.c — the bounded change log behind memory/events (see event_log.h).
**
** The log is a ring of `capacity` slots. Event seq s lives in slot
** (s - 1) % capacity; the log retains the events head - count + 1 .. head,
** so appending to a full ring evicts the oldest. A cursor names the seq of
** the last event its reader has examined, plus the salt of the log that
** issued it:
**
**     c1.<16 hex digits of salt>.<seq>
**
** The salt is random per log, so a cursor of another server or of an
** earlier run of this one is recognised as foreign rather than misread as a
** position (DECISIONS 026). Every cursor that cannot be honoured — foreign,
** malformed, from the future, or older than the retained window — is
** answered with reset and a read from the oldest retained event (§4.12).
**
** Event objects are immutable once built: a read hands out references to
** them rather than copies. A written event's is built on its first read
** (events.h, a2m_event).
**
** A log made with a2m_event_log_new_shared keeps no ring: its events live
** in the store, for every server of a deployment (events/shared.c), and
** this file only dispatches to it; the view, the cursor's text and the
** event objects are the same code for both.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/event_log.h"
#include "events/shared.h"
#include "util/clock.h"
#include "util/random.h"
#include "util/text.h"

/* Bytes of salt; printed as twice as many hex digits. */
#define SALT_BYTES 8
#define SALT_HEX   (2 * SALT_BYTES)

/* "c1." + salt + "." + up to 20 digits of a uint64 + NUL. */
#define CURSOR_PREFIX "c1."
#define CURSOR_LEN    A2M_EVENT_CURSOR_LEN

struct a2m_event_log {
	a2m_event_shared *shared;    /* a log kept in the store (events/shared.c); else: */
	a2m_event *ring;             /* capacity slots */
	size_t     capacity;
	size_t     count;            /* events retained, <= capacity */
	uint64_t   head;             /* seq of the newest event; 0 before the first */
	char       salt[SALT_HEX + 1];
};

a2m_event_log *a2m_event_log_new(size_t capacity)
{
	/* A log that can hold nothing would reset every reader on every
	** append; one slot is the least that keeps the cursor meaningful. */
	if (capacity == 0)
		capacity = 1;
	a2m_event_log *log = calloc(1, sizeof *log);
	if (!log)
		return NULL;
	log->ring = calloc(capacity, sizeof *log->ring);
	if (!log->ring) {
		free(log);
		return NULL;
	}
	log->capacity = capacity;
	unsigned char raw[SALT_BYTES];
	/* The salt only has to differ between runs, not be secret. */
	a2m_random_fill(raw, sizeof raw);
	for (size_t i = 0; i < SALT_BYTES; i++)
		snprintf(log->salt + 2 * i, 3, "%02x", raw[i]);
	return log;
}

static void written_free(a2m_event_written *w)
{
	if (!w)
		return;
	free(w->id);
	free(w->tier);
	free(w->session);
	free(w->key);
	free(w);
}

/* Releases what one slot holds and empties it. */
static void slot_clear(a2m_event *ev)
{
	json_decref(ev->obj);
	written_free(ev->written);
	free(ev->owner);
	for (size_t i = 0; i < ev->n_audience; i++)
		free(ev->audience[i].owner);
	free(ev->audience);
	memset(ev, 0, sizeof *ev);
}

a2m_event_log *a2m_event_log_new_shared(a2m_store *store, size_t capacity)
{
	a2m_event_log *log = calloc(1, sizeof *log);
	if (!log)
		return NULL;
	log->capacity = capacity ? capacity : 1;
	if (!(log->shared = a2m_event_shared_new(store, log->capacity))) {
		free(log);
		return NULL;
	}
	return log;
}

a2m_event_shared *a2m_event_log_shared(const a2m_event_log *log)
{
	return log ? log->shared : NULL;
}

void a2m_event_log_free(a2m_event_log *log)
{
	if (!log)
		return;
	a2m_event_shared_free(log->shared);
	for (size_t i = 0; log->ring && i < log->capacity; i++)
		slot_clear(&log->ring[i]);
	free(log->ring);
	free(log);
}

size_t a2m_event_log_capacity(const a2m_event_log *log)
{
	return log->capacity;
}

/* The slot of seq (which must be retained). */
static a2m_event *slot_of(const a2m_event_log *log, uint64_t seq)
{
	return &log->ring[(seq - 1) % log->capacity];
}

/* The seq of the oldest retained event; head + 1 when none is retained. */
static uint64_t oldest_seq(const a2m_event_log *log)
{
	return log->head - log->count + 1;
}

/* A JSON array of n strings, or NULL when memory runs out. */
static json_t *string_array(const char *const *v, size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		if (json_array_append_new(arr, json_string(v[i] ? v[i] : ""))) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* Sets key to a new value, consuming it; nonzero when either failed. */
static int put(json_t *obj, const char *key, json_t *value)
{
	return !value || json_object_set_new(obj, key, value) != 0;
}

/* The fields of a written change, or NULL when memory runs out. */
static a2m_event_written *written_of(const a2m_change *c)
{
	const a2m_record *r = c->rec;
	a2m_event_written *w = calloc(1, sizeof *w);
	int bad = !w;
	if (bad)
		return NULL;
	w->at = c->at;
	w->revision = r->revision;
	w->id = a2m_str_dup_opt(r->id, &bad);
	w->tier = a2m_str_dup_opt(r->tier, &bad);
	w->session = a2m_str_dup_opt(r->session, &bad);
	w->key = a2m_str_dup_opt(r->key, &bad);
	if (bad || !w->id) {
		written_free(w);
		return NULL;
	}
	return w;
}

/* The object of a written event, or NULL when memory runs out. */
static json_t *written_object(const a2m_event_written *w)
{
	char at[A2M_TIMESTAMP_LEN];
	json_t *o = json_object();
	if (!o)
		return NULL;
	int bad = put(o, "kind", json_string("written"));
	bad |= put(o, "at", json_string(a2m_clock_format(w->at, at)));
	bad |= put(o, "id", json_string(w->id));
	/* Absent fields stay absent: a record without a session or key has
	** nothing to report there, and null would claim one. */
	if (w->tier)
		bad |= put(o, "tier", json_string(w->tier));
	if (w->session)
		bad |= put(o, "session", json_string(w->session));
	if (w->key)
		bad |= put(o, "key", json_string(w->key));
	/* revision > 0 is how a key replacement shows (§4.12). */
	bad |= put(o, "revision", json_integer(w->revision));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ev's object, built now if it waited (a2m_event); NULL when memory runs out. */
static json_t *event_obj(a2m_event *ev)
{
	if (!ev->obj && ev->written && (ev->obj = written_object(ev->written))) {
		written_free(ev->written);
		ev->written = NULL;
	}
	return ev->obj;
}

/* Builds the §4.12 wire object of c (not written: written_of), or NULL when memory runs out. */
static json_t *event_object(const a2m_change *c)
{
	char at[A2M_TIMESTAMP_LEN];
	json_t *o = json_object();
	if (!o)
		return NULL;
	int bad = 0;
	switch (c->kind) {
	case A2M_CHANGE_FORGOTTEN:
		bad |= put(o, "kind", json_string("forgotten"));
		bad |= put(o, "at", json_string(a2m_clock_format(c->at, at)));
		bad |= put(o, "count", json_integer(c->count));
		if (c->ids)
			bad |= put(o, "ids", string_array(c->ids, c->n_ids));
		/* Removed by the expiry sweep (x-expiry), not by a client's forget. */
		if (c->expired)
			bad |= put(o, "expired", json_true());
		break;
	case A2M_CHANGE_PROMOTED:
		bad |= put(o, "kind", json_string("promoted"));
		bad |= put(o, "at", json_string(a2m_clock_format(c->at, at)));
		bad |= put(o, "ids", string_array(c->ids, c->n_ids));
		bad |= put(o, "tier", json_string(c->tier ? c->tier : ""));
		break;
	case A2M_CHANGE_CONSOLIDATED:
		bad |= put(o, "kind", json_string("consolidated"));
		bad |= put(o, "at", json_string(a2m_clock_format(c->at, at)));
		bad |= put(o, "moved", json_integer(c->cons.moved));
		bad |= put(o, "promoted", json_integer(c->cons.promoted));
		bad |= put(o, "dropped", json_integer(c->cons.dropped));
		bad |= put(o, "summarized", json_integer(c->cons.summarized));
		break;
	case A2M_CHANGE_SESSION_CLOSED:
		bad |= put(o, "kind", json_string("session_closed"));
		bad |= put(o, "at", json_string(a2m_clock_format(c->at, at)));
		bad |= put(o, "session", json_string(c->session ? c->session : ""));
		break;
	default:
		bad = 1;
	}
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/*
** Called when an event cannot be recorded. Rather than let pollers pass the
** hole unaware, every retained event is dropped and head still advances, so
** every cursor issued before the hole is now older than the window and its
** next read reports reset — the honest signal that events were missed.
*/
static void record_gap(a2m_event_log *log)
{
	for (uint64_t s = oldest_seq(log); s <= log->head; s++)
		slot_clear(slot_of(log, s));
	log->count = 0;
	log->head++;
}

/* Copies the n entries of src; NULL (and *out NULL) when memory runs out. */
static int audience_copy(const a2m_audience *src, size_t n, a2m_event_audience **out)
{
	*out = NULL;
	if (!src || n == 0)
		return 0;
	a2m_event_audience *a = calloc(n, sizeof *a);
	if (!a)
		return -1;
	for (size_t i = 0; i < n; i++) {
		a[i].shared = src[i].shared;
		if (src[i].owner && !(a[i].owner = strdup(src[i].owner))) {
			while (i--)
				free(a[i].owner);
			free(a);
			return -1;
		}
	}
	*out = a;
	return 0;
}

json_t *a2m_event_build(const a2m_change *c)
{
	if (c->kind != A2M_CHANGE_WRITTEN)
		return event_object(c);
	a2m_event_written *w = written_of(c);
	json_t *o = w ? written_object(w) : NULL;
	written_free(w);
	return o;
}

a2m_event *a2m_event_log_append(a2m_event_log *log, const a2m_change *c)
{
	if (log->shared) {
		if (a2m_event_shared_add(log->shared, c) != 0)
			a2m_event_shared_gap(log->shared);
		return NULL;
	}
	int written = c->kind == A2M_CHANGE_WRITTEN;
	json_t *obj = written ? NULL : event_object(c);
	a2m_event_written *w = written ? written_of(c) : NULL;
	char *owner = NULL;
	a2m_event_audience *audience = NULL;
	size_t n_audience = c->audience ? c->n_ids : 0;
	int made = obj || w;
	if (made && ((c->owner && !(owner = strdup(c->owner))) ||
		     audience_copy(c->audience, n_audience, &audience) != 0)) {
		json_decref(obj);
		written_free(w);
		free(owner);
		made = 0;
	}
	if (!made) {
		record_gap(log);
		return NULL;
	}
	if (log->count == log->capacity) {
		slot_clear(slot_of(log, oldest_seq(log)));
		log->count--;
	}
	log->head++;
	log->count++;
	a2m_event *ev = slot_of(log, log->head);
	ev->seq = log->head;
	ev->obj = obj;
	ev->written = w;
	ev->owner = owner;
	ev->shared = c->shared;
	ev->audience = audience;
	ev->n_audience = n_audience;
	return ev;
}

uint64_t a2m_event_log_head(const a2m_event_log *log)
{
	return log->shared ? 0 : log->head;
}

void a2m_event_log_truncate(a2m_event_log *log, uint64_t head)
{
	if (log->shared)
		return;
	for (; log->head > head; log->head--) {
		if (log->count && log->head >= oldest_seq(log)) {
			slot_clear(slot_of(log, log->head));
			log->count--;
		}
	}
}

/* Whether ev's kind is among kinds; an empty list filters nothing, as an
** empty `where` does not. */
static int kind_wanted(const a2m_event *ev, const json_t *kinds)
{
	if (!kinds || json_array_size(kinds) == 0)
		return 1;
	const char *kind = ev->written ? "written"
				       : json_string_value(json_object_get(ev->obj, "kind"));
	size_t i;
	json_t *k;
	json_array_foreach(kinds, i, k) {
		if (json_is_string(k) && kind && strcmp(json_string_value(k), kind) == 0)
			return 1;
	}
	return 0;
}

/*
** ev cut down to the ids a scoped reader with owner could have recalled: a
** new object, or NULL when it may see none of them or memory runs out
** (*oom set then).
*/
static json_t *audience_view(const a2m_event *ev, const char *owner, int *oom)
{
	const json_t *ids = json_object_get(ev->obj, "ids");
	size_t seen = 0;
	json_t *kept = json_array();
	if (!kept) {
		*oom = 1;
		return NULL;
	}
	for (size_t i = 0; i < ev->n_audience; i++) {
		const a2m_event_audience *a = &ev->audience[i];
		if (!a->shared && !a2m_str_same(a->owner, owner))
			continue;
		seen++;
		if (ids && json_array_append(kept, json_array_get(ids, i)) != 0) {
			json_decref(kept);
			*oom = 1;
			return NULL;
		}
	}
	if (seen == 0) {
		json_decref(kept);
		return NULL;
	}
	if (seen == ev->n_audience) {
		json_decref(kept);
		return json_incref(ev->obj);
	}
	json_t *view = json_copy(ev->obj);
	int bad = !view;
	if (!bad && ids)
		bad = json_object_set(view, "ids", kept) != 0;
	if (!bad && json_object_get(view, "count"))
		bad = json_object_set_new(view, "count", json_integer((json_int_t)seen)) != 0;
	json_decref(kept);
	if (bad) {
		json_decref(view);
		*oom = 1;
		return NULL;
	}
	return view;
}

json_t *a2m_event_view(a2m_event *ev, const a2m_scope *scope, const json_t *kinds,
		       int *oom)
{
	int ignored = 0;
	if (!oom)
		oom = &ignored;
	*oom = 0;
	if (!kind_wanted(ev, kinds))
		return NULL;
	if (!event_obj(ev)) {
		*oom = 1;
		return NULL;
	}
	if (!scope || !scope->scoped)
		return json_incref(ev->obj);
	if (ev->audience)
		return audience_view(ev, scope->owner, oom);
	/* NULL equals NULL: records without an owner form their own scope (§6). */
	if (!ev->shared && !a2m_str_same(ev->owner, scope->owner))
		return NULL;
	return json_incref(ev->obj);
}

void a2m_event_cursor_format(const char *salt, uint64_t seq, char out[A2M_EVENT_CURSOR_LEN])
{
	snprintf(out, A2M_EVENT_CURSOR_LEN, CURSOR_PREFIX "%.16s.%" PRIu64, salt, seq);
}

/* Writes the cursor naming seq into out. */
static void format_cursor(const a2m_event_log *log, uint64_t seq, char out[CURSOR_LEN])
{
	a2m_event_cursor_format(log->salt, seq, out);
}

int a2m_event_cursor_parse(const char *salt, const char *text, uint64_t *seq)
{
	size_t plen = strlen(CURSOR_PREFIX);
	if (strlen(salt) != SALT_HEX || strncmp(text, CURSOR_PREFIX, plen) != 0)
		return -1;
	text += plen;
	if (strncmp(text, salt, SALT_HEX) != 0 || text[SALT_HEX] != '.')
		return -1;
	text += SALT_HEX + 1;
	if (*text < '0' || *text > '9')
		return -1;
	uint64_t v = 0;
	for (; *text; text++) {
		if (*text < '0' || *text > '9')
			return -1;
		unsigned d = (unsigned)(*text - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*seq = v;
	return 0;
}

int a2m_event_log_read(a2m_event_log *log, const char *cursor, size_t limit,
		       const json_t *kinds, const a2m_scope *scope, json_t **result,
		       a2m_error *err)
{
	char next[CURSOR_LEN];
	json_t *events = NULL, *res = NULL;
	*result = NULL;
	if (log->shared)
		return a2m_event_shared_read(log->shared, cursor, limit, kinds, scope, result, err);
	events = json_array();
	if (!events)
		goto oom;
	if (!cursor) {
		/* Absent means now: nothing to read, only where "now" is. */
		format_cursor(log, log->head, next);
		res = json_pack("{sO ss}", "events", events, "cursor", next);
		if (!res)
			goto oom;
		json_decref(events);
		*result = res;
		return 0;
	}
	uint64_t after;
	int reset = 0;
	/* The cursor is honoured only when every event after it is still held:
	** after + 1 >= oldest, and it does not point past the head. */
	if (a2m_event_cursor_parse(log->salt, cursor, &after) != 0 || after > log->head ||
	    after + 1 < oldest_seq(log)) {
		reset = 1;
		after = oldest_seq(log) - 1;
	}
	uint64_t last = after;  /* the last event examined: where the next read starts */
	size_t taken = 0;
	int more = 0;
	for (uint64_t s = after + 1; s <= log->head; s++) {
		a2m_event *ev = slot_of(log, s);
		int no_memory = 0;
		json_t *view = a2m_event_view(ev, scope, kinds, &no_memory);
		if (no_memory)
			goto oom;
		if (view) {
			if (limit && taken == limit) {
				json_decref(view);
				more = 1;
				break;
			}
			if (json_array_append_new(events, view))
				goto oom;
			taken++;
		}
		/* Skipped events are passed too, so the next poll does not
		** examine them again — and never misses a wanted one. */
		last = s;
	}
	format_cursor(log, last, next);
	res = json_pack("{sO ss}", "events", events, "cursor", next);
	if (!res)
		goto oom;
	if ((more && json_object_set_new(res, "more", json_true())) ||
	    (reset && json_object_set_new(res, "reset", json_true())))
		goto oom;
	json_decref(events);
	*result = res;
	return 0;
oom:
	json_decref(res);
	json_decref(events);
	return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
}
