/*
** expiry.c — records that expire (x-expiry, docs/PROTOCOL.md). Reads never
** return a record once its expires_at has come (every selection checks it,
** select.c and ranked.c; fetch, read.c); this file removes such records
** afterwards, a batch per transaction, reporting each batch as one
** forgotten event like any forget, marked expired. Who calls it and when
** (the handle, after a call or from its sweeper thread) is the server's
** business; the stack keeps the earliest expiry it knows of, so that
** asking whether a sweep is due costs a comparison.
*/
#include <stdlib.h>

#include "stack/stack_internal.h"
#include "util/clock.h"

/* Reads the store's earliest expiry into the cache. */
static int refresh(a2m_stack *st, a2m_error *err)
{
	a2m_store *s = st->store;
	int64_t at = 0;
	if (s->ops->next_expiry) {
		int rc = s->ops->next_expiry(s, &at);
		if (rc)
			return a2m_stack_store_error(st, err, rc);
	}
	atomic_store(&st->next_expiry, at);
	return 0;
}

void a2m_stack_expiry_noted(a2m_stack *st, int64_t at)
{
	int64_t cur = atomic_load(&st->next_expiry);
	while (at && (cur == 0 || at < cur) &&
	       !atomic_compare_exchange_weak(&st->next_expiry, &cur, at))
		;
}

int a2m_stack_expiry_due(a2m_stack *st, int64_t now)
{
	int64_t at = atomic_load_explicit(&st->next_expiry, memory_order_relaxed);
	return !st->cfg.read_only && at && at <= now;
}

int64_t a2m_stack_expiry_next(a2m_stack *st)
{
	return atomic_load_explicit(&st->next_expiry, memory_order_relaxed);
}

/* The expired records, copied (the store's visit may not write). */
typedef struct expired {
	a2m_record **v;
	size_t       n, max;
	int          oom;
} expired;

static int expired_visit(const a2m_record *rec, void *ctx)
{
	expired *e = ctx;
	if (!(e->v[e->n] = a2m_record_dup(rec))) {
		e->oom = 1;
		return -1;
	}
	return ++e->n == e->max ? 1 : 0;
}

int a2m_stack_expire(a2m_stack *st, size_t max, size_t *removed, a2m_error *err)
{
	a2m_store *s = st->store;
	*removed = 0;
	if (st->cfg.read_only || !s->ops->scan_expired)
		return 0;
	if (!max)
		max = 1;
	int64_t now = a2m_clock_now_ms();
	expired e = {.v = calloc(max, sizeof *e.v), .max = max};
	const char **gone = calloc(max, sizeof *gone);
	a2m_audience *aud = calloc(max, sizeof *aud);
	int rc = 0;
	if (!e.v || !gone || !aud) {
		rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		goto done;
	}
	if ((rc = a2m_stack_begin(st, err)))
		goto done;
	if ((rc = s->ops->scan_expired(s, now, expired_visit, &e)) != 0)
		rc = e.oom ? a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory")
			   : a2m_stack_store_error(st, err, rc);
	size_t count = 0;
	for (size_t i = 0; i < e.n && !rc; i++) {
		int was = 0;
		if ((rc = s->ops->remove(s, e.v[i]->id, &was))) {
			a2m_stack_store_error(st, err, rc);
			break;
		}
		if (was) {
			const a2m_tier *t = a2m_stack_tier_of(st, e.v[i]);
			aud[count] = (a2m_audience){e.v[i]->owner, t && t->shared};
			gone[count++] = e.v[i]->id;
		}
	}
	/* One event per sweep, as one per forget (spec §4.12), each reader
	** seeing the ids it could have recalled. */
	a2m_change ch = {.kind = A2M_CHANGE_FORGOTTEN, .ids = gone, .audience = aud,
			 .n_ids = count, .count = (int64_t)count, .shared = 1, .expired = 1};
	a2m_finish f = {.rebalance = A2M_REBALANCE_NONE, .changes = &ch, .n_changes = count != 0};
	if ((rc = a2m_stack_finish(st, rc, &f, err)) == 0) {
		*removed = count;
		/* A full batch may have left more: the cache says due again. */
		rc = e.n == max ? 0 : refresh(st, err);
	}
done:
	for (size_t i = 0; i < e.n; i++)
		a2m_record_free(e.v[i]);
	free(e.v);
	free(gone);
	free(aud);
	return rc;
}

int a2m_stack_expiry_init(a2m_stack *st)
{
	a2m_error err = {0};
	int rc = refresh(st, &err);
	a2m_error_clear(&err);
	return rc;
}
