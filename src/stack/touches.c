/*
** touches.c — recall's touches, written behind (docs/PROTOCOL.md, Salience).
**
** A recall adds one to the access_count of every record it returns and sets
** its accessed_at. Writing that at once cost a write transaction per recall
** (in SQLite a commit, the most expensive thing a recall did). Instead the
** touches wait here, one entry per record (repeated recalls of a record
** add up), and reach the store:
**   - inside the next write transaction, at its begin (a2m_stack_begin),
**     before anything in it reads a record: capacity, promotion, key
**     replacement and every whole-record update then see the counts;
**   - in a short transaction of their own, by the recall that finds
**     a2m_touches.max records waiting (a2m_config.touch_buffer, default
**     A2M_TOUCH_BUFFER) or the oldest A2M_TOUCH_MAX_AGE_MS old
**     (checked at recalls only: an idle server keeps them), and when the
**     stack is freed;
**   - at once when a touch earns a promotion (write.c, a2m_stack_touch).
** Until then every read outside a write transaction sees them: the stack
** lays them over the records it reads (a2m_stack_touched), so a recall
** returns its own touch, and a timeline, `where` or session/list right
** after it agree. Each reaches the store as an increment of the row as it
** is then (store.h, touch), so a record forgotten or rewritten in between
** is neither brought back nor clobbered.
**
** The trade: a crash loses at most the touches still waiting (the last
** touch_buffer records' counts, or the last second's), never a record.
**
** Recalls may run at once under the handle's shared lock (server/handle.c): noting
** and looking up take the buffer's own mutex, briefly. Writing the buffer
** (apply, flush: a write transaction) happens only under the exclusive
** lock; a shared recall that finds the buffer due asks for it instead
** (A2M_NEED_EXCLUSIVE, write.c). This file calls nothing of the stack: the
** transactions that write the buffer are base.c's.
*/
#include <stdlib.h>
#include <string.h>

#include "stack/stack_internal.h"
#include "util/grow.h"
#include "util/slots.h"

static uint64_t hash_seq(int64_t seq)
{
	return ((uint64_t)seq * 0x9E3779B97F4A7C15ULL) >> 20;
}

static size_t slot_of(int64_t seq, size_t nslots)
{
	return (size_t)hash_seq(seq) & (nslots - 1);
}

static uint64_t hash_entry(const void *ctx, size_t i)
{
	return hash_seq(((const a2m_touch *)ctx)[i].seq);
}

/* The entry of seq, or NULL. */
static a2m_touch *find(const a2m_touches *b, int64_t seq)
{
	if (!b->n)
		return NULL;
	size_t mask = b->nslots - 1;
	for (size_t j = slot_of(seq, b->nslots); b->slots[j]; j = (j + 1) & mask) {
		a2m_touch *t = &b->v[b->slots[j] - 1];
		if (t->seq == seq)
			return t;
	}
	return NULL;
}

/* Makes room for one more entry, growing both arrays at load 1/2. */
static int reserve(a2m_touches *b)
{
	if (b->n < b->cap)
		return 0;
	/* The capacity is taken only once the slots grew with it (2 x, load 1/2). */
	size_t cap = a2m_grow_cap(b->cap, b->n + 1 < 256 ? 256 : b->n + 1);
	if (!cap || cap > SIZE_MAX / 2 || a2m_resize((void **)&b->v, cap, sizeof *b->v) != 0)
		return -1;
	if (a2m_slots_rebuild(&b->slots, &b->nslots, cap * 2, b->n, hash_entry, b->v) != 0)
		return -1;
	b->cap = cap;
	return 0;
}

/* Counts one recall of seq at time at; b->mu held. Returns 0, or -1 when
** memory runs out. */
static int note_one(a2m_touches *b, int64_t seq, int64_t at)
{
	a2m_touch *t = find(b, seq);
	if (t) {
		t->add++;
		if (at > t->at)
			t->at = at;
		return 0;
	}
	if (reserve(b) != 0)
		return -1;
	size_t j = slot_of(seq, b->nslots);
	while (b->slots[j])
		j = (j + 1) & (b->nslots - 1);
	if (!b->n)
		b->oldest = at;
	b->v[b->n] = (a2m_touch){.seq = seq, .at = at, .add = 1};
	b->slots[j] = (uint32_t)(++b->n);
	return 0;
}

#ifdef A2M_TEST_HOOKS
static int64_t max_age_ms = A2M_TOUCH_MAX_AGE_MS;

void a2m_touches_max_age_for_tests(int64_t ms)
{
	max_age_ms = ms > 0 ? ms : A2M_TOUCH_MAX_AGE_MS;
}
#else
#define max_age_ms ((int64_t)A2M_TOUCH_MAX_AGE_MS)  /* no test hooks in a release build */
#endif

/* True when the touches waiting should be written now; b->mu held. */
static int due_at(const a2m_touches *b, int64_t now)
{
	return b->n >= b->max || (b->n && now - b->oldest >= max_age_ms);
}

int a2m_touches_init(a2m_touches *b, size_t max)
{
	memset(b, 0, sizeof *b);
	b->max = max ? max : A2M_TOUCH_BUFFER;
	return pthread_mutex_init(&b->mu, NULL) == 0 ? 0 : -1;
}

int a2m_touches_note(a2m_touches *b, const a2m_hit *hits, size_t n, int64_t now,
		     int refuse_due, int *due)
{
	int rc = 0;
	pthread_mutex_lock(&b->mu);
	if (refuse_due && due_at(b, now)) {
		pthread_mutex_unlock(&b->mu);
		*due = 1;
		return 1;
	}
	for (size_t i = 0; i < n && !rc; i++)
		rc = note_one(b, hits[i].rec->seq, now);
	*due = due_at(b, now);
	pthread_mutex_unlock(&b->mu);
	return rc;
}

void a2m_touches_clear(a2m_touches *b)
{
	pthread_mutex_lock(&b->mu);
	if (b->n)
		memset(b->slots, 0, b->nslots * sizeof *b->slots);
	b->n = 0;
	b->applied = 0;
	pthread_mutex_unlock(&b->mu);
}

void a2m_touches_free(a2m_touches *b)
{
	free(b->v);
	free(b->slots);
	pthread_mutex_destroy(&b->mu);
	memset(b, 0, sizeof *b);
}

/* The touch waiting for seq that reads must see, or NULL; b->mu held. */
static const a2m_touch *seen(const a2m_touches *b, int64_t seq)
{
	return b->n && !b->applied ? find(b, seq) : NULL;
}

/* Lays t over r as the store will apply it (store.h, touch). */
static void lay_over(const a2m_touch *t, a2m_record *r)
{
	r->access_count += t->add;
	if (t->at > r->accessed_at)
		r->accessed_at = t->at;
}

void a2m_stack_touched_hits(const a2m_stack *st, a2m_hit *hits, size_t n)
{
	a2m_touches *b = (a2m_touches *)&st->touches;  /* only its mutex changes */
	pthread_mutex_lock(&b->mu);
	for (size_t i = 0; i < n; i++) {
		const a2m_touch *t = seen(b, hits[i].rec->seq);
		if (t)
			lay_over(t, hits[i].rec);
	}
	pthread_mutex_unlock(&b->mu);
}

const a2m_record *a2m_stack_touched(const a2m_stack *st, const a2m_record *rec,
				    a2m_record *tmp)
{
	a2m_touches *b = (a2m_touches *)&st->touches;  /* only its mutex changes */
	const a2m_record *out = rec;
	pthread_mutex_lock(&b->mu);
	const a2m_touch *t = seen(b, rec->seq);
	if (t) {
		*tmp = *rec;
		lay_over(t, tmp);
		out = tmp;
	}
	pthread_mutex_unlock(&b->mu);
	return out;
}

int a2m_touches_apply(a2m_touches *b, a2m_store *s)
{
	for (size_t i = 0; i < b->n; i++) {
		int rc = s->ops->touch(s, b->v[i].seq, b->v[i].add, b->v[i].at);
		if (rc)
			return rc;
	}
	b->applied = b->n != 0;
	return 0;
}

int a2m_touches_due(a2m_touches *b, int64_t now)
{
	pthread_mutex_lock(&b->mu);
	int due = due_at(b, now);
	pthread_mutex_unlock(&b->mu);
	return due;
}
