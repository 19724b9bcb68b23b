/*
** base.c — the ground floor of the stack: what every other file of it
** uses, calling nothing of theirs but recall's touch buffer (touches.c)
** and the layout — where a record lives and who may see it, store
** failures as errors, the embedding width, and transactions (begin,
** commit, rollback, read brackets), with recall's waiting touches written
** at every begin and on their own when due.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stack/stack_internal.h"
#include "util/clock.h"
#include "util/grow.h"
#include "util/text.h"

const a2m_tier *a2m_stack_tier_of(const a2m_stack *st, const a2m_record *rec)
{
	return a2m_tiers_find(&st->cfg.tiers, rec->tier);
}

int a2m_stack_same_str(const char *a, const char *b)
{
	return (!a || !b) ? a == b : strcmp(a, b) == 0;
}

int a2m_stack_visible(const a2m_stack *st, const a2m_scope *scope, const a2m_record *rec)
{
	if (!scope || !scope->scoped)
		return 1;
	const a2m_tier *t = a2m_stack_tier_of(st, rec);
	/* Durable tiers are pooled; private tiers belong to their owner. */
	if (t && t->shared)
		return 1;
	return a2m_stack_same_str(rec->owner, scope->owner);
}

int a2m_stack_store_error(a2m_stack *st, a2m_error *err, int rc)
{
	if (rc == A2M_READ_ONLY)
		return a2m_error_set(err, A2M_READ_ONLY, "this store is read-only");
	return a2m_error_set(err, A2M_INTERNAL_ERROR, "storage: %s",
			     st->store->errmsg[0] ? st->store->errmsg : "failed");
}

int a2m_stack_scorer_error(a2m_stack *st, a2m_error *err, int rc, unsigned failures)
{
	if (a2m_store_failures_here() != failures)
		return a2m_error_set(err, rc, "scorer %s failed: storage: %s", st->scorer->name,
				     st->store->errmsg[0] ? st->store->errmsg : "failed");
	return a2m_error_set(err, rc, "scorer %s failed", st->scorer->name);
}

/* What a shared read answers where it would write (stack.h). */
int a2m_stack_need_exclusive(a2m_error *err)
{
	return a2m_error_set(err, A2M_NEED_EXCLUSIVE, "needs the exclusive lock");
}

int a2m_stack_dimensions(a2m_stack *st, int64_t *dims, a2m_error *err)
{
	/* Not fixed yet here: another server sharing the store may have fixed
	** it. Kept only once read: a failed read is not "no width yet". */
	if (st->dims < 0 || (st->dims == 0 && st->store->ops->version)) {
		char *v = NULL;
		int rc = st->store->ops->meta_get(st->store, A2M_META_DIMS, &v);
		if (rc) {
			*dims = 0;
			return a2m_stack_store_error(st, err, rc);
		}
		st->dims = v ? strtoll(v, NULL, 10) : 0;
		free(v);
	}
	*dims = st->dims;
	return 0;
}

int a2m_stack_check_dims(a2m_stack *st, const a2m_record *rec, size_t i, a2m_error *err)
{
	if (!rec->embedding)
		return 0;
	int64_t dims;
	int rc = a2m_stack_dimensions(st, &dims, err);
	if (rc)
		return rc;
	if (dims == 0) {
		char v[32];
		snprintf(v, sizeof v, "%zu", rec->dims);
		rc = st->store->ops->meta_set(st->store, A2M_META_DIMS, v);
		if (rc)
			return a2m_stack_store_error(st, err, rc);
		st->dims = (int64_t)rec->dims;
		return 0;
	}
	if ((int64_t)rec->dims != dims) {
		a2m_error_set(err, A2M_EMBEDDING_MISMATCH,
			      "records[%zu].embedding has %zu dimensions; this store holds %lld",
			      i, rec->dims, (long long)dims);
		return a2m_error_data(err, json_pack("{sI sI}", "expected", (json_int_t)dims,
						     "got", (json_int_t)rec->dims));
	}
	return 0;
}

/* After the store's begin: recall's waiting touches go first (touches.c). */
static int begun(a2m_stack *st, int rc, a2m_error *err)
{
	if (rc)
		return a2m_stack_store_error(st, err, rc);
	if (st->touches.n && !st->cfg.read_only &&
	    (rc = a2m_touches_apply(&st->touches, st->store)) != 0) {
		rc = a2m_stack_store_error(st, err, rc);
		a2m_stack_rollback(st);
	}
	return rc;
}

/* Joint transactions (stack.h): what st->joint holds. */
enum { JOINT_NONE, JOINT_OPEN, JOINT_UNDONE };

/* A begin inside a joint transaction: a part of it, or refused once an
** earlier part rolled it back (nothing this call does may stand alone). */
static int joint_part(a2m_stack *st, a2m_error *err)
{
	if (st->joint == JOINT_OPEN)
		return 0;
	return a2m_error_set(err, A2M_INTERNAL_ERROR, "the transaction this write shared "
			     "with others was rolled back");
}

int a2m_stack_begin(a2m_stack *st, a2m_error *err)
{
	if (st->joint)
		return joint_part(st, err);
	return begun(st, st->store->ops->begin(st->store), err);
}

/* As a2m_stack_begin(), for bookkeeping that need not survive a power loss. */
int a2m_stack_begin_relaxed(a2m_stack *st, a2m_error *err)
{
	if (st->joint)
		return joint_part(st, err);  /* durable with the rest */
	return begun(st, st->store->ops->begin_relaxed(st->store), err);
}

int a2m_stack_joins(const a2m_stack *st)
{
	return st->store->group_commit && !st->log_write;
}

int a2m_stack_joint_begin(a2m_stack *st, a2m_error *err)
{
	st->joint = JOINT_NONE;
	int rc = a2m_stack_begin(st, err);
	if (rc)
		return rc;
	st->joint = JOINT_OPEN;
	st->joint_capacity_known = st->capacity_known;
	return 0;
}

int a2m_stack_joint_undone(const a2m_stack *st)
{
	return st->joint == JOINT_UNDONE;
}

void a2m_stack_joint_end(a2m_stack *st)
{
	st->joint = JOINT_NONE;
}

int a2m_stack_joint_commit(a2m_stack *st, a2m_error *err)
{
	if (st->joint != JOINT_OPEN) {
		st->joint = JOINT_NONE;
		return joint_part(st, err);
	}
	st->joint = JOINT_NONE;
	int rc = a2m_stack_commit(st, err);
	if (rc) {
		a2m_stack_rollback(st);
		/* A full pass a part committed was undone with it. */
		st->capacity_known = st->joint_capacity_known;
	}
	return rc;
}

void a2m_stack_joint_part(a2m_stack *st, a2m_stack_replay *r)
{
	st->replay = r;
	if (r)
		r->next = 0;
}

void a2m_stack_replay_free(a2m_stack_replay *r)
{
	free(r->ids);
	memset(r, 0, sizeof *r);
}

int64_t a2m_stack_part_now(a2m_stack *st)
{
	a2m_stack_replay *r = st->replay;
	if (r && r->again && r->now)
		return r->now;
	int64_t now = a2m_clock_now_ms();
	if (r && !r->now)
		r->now = now;
	return now;
}

int a2m_stack_part_id(a2m_stack *st, int64_t now, char out[A2M_ID_LEN])
{
	a2m_stack_replay *r = st->replay;
	if (r && r->again && r->next < r->n) {
		memcpy(out, r->ids[r->next++], A2M_ID_LEN);
		return 0;
	}
	if (a2m_id_generate(now, out) != 0)
		return -1;
	if (r && !r->again) {
		/* Kept for a run again; without room, that run makes its own. */
		if (a2m_grow((void **)&r->ids, &r->cap, r->n + 1, sizeof *r->ids) != 0)
			return 0;
		memcpy(r->ids[r->n++], out, A2M_ID_LEN);
	}
	return 0;
}

int a2m_stack_read_begin(a2m_stack *st, a2m_error *err)
{
	a2m_store *s = st->store;
	int rc = s->ops->read_begin ? s->ops->read_begin(s) : 0;
	return rc ? a2m_stack_store_error(st, err, rc) : 0;
}

int a2m_stack_read_end(a2m_stack *st, a2m_error *err)
{
	a2m_store *s = st->store;
	int rc = s->ops->read_end ? s->ops->read_end(s) : 0;
	return rc ? a2m_stack_store_error(st, err, rc) : 0;
}

int a2m_stack_count_tiers(a2m_stack *st, int64_t *counts, a2m_error *err)
{
	const a2m_tier_layout *l = &st->cfg.tiers;
	for (size_t i = 0; i < l->n; i++) {
		a2m_query q = {0};
		q.tier = l->tiers[i].name;
		int rc = st->store->ops->count(st->store, &q, &counts[i]);
		if (rc)
			return a2m_stack_store_error(st, err, rc);
	}
	return 0;
}

uint64_t a2m_stack_generation(const a2m_stack *st)
{
	uint64_t g = atomic_load_explicit(&st->generation, memory_order_acquire);
	/* A store other servers write (store.h, version) moves on its own. */
	const a2m_store *s = st->store;
	return s->ops->version ? g + s->ops->version(st->store) : g;
}

/* Whatever was cached from the store may be stale from here on. */
static void changed(a2m_stack *st)
{
	st->counts_valid = 0;
	atomic_fetch_add_explicit(&st->generation, 1, memory_order_acq_rel);
}

int a2m_stack_commit(a2m_stack *st, a2m_error *err)
{
	changed(st);
	if (st->joint)  /* a part: the joint transaction commits at its end */
		return joint_part(st, err);
	int rc = st->store->ops->commit(st->store);
	if (rc) {
		st->dims = -1;
		st->touches.applied = 0;  /* not written after all: still waiting */
		return a2m_stack_store_error(st, err, rc);
	}
	if (st->touches.applied)
		a2m_touches_clear(&st->touches);
	return 0;
}

uint64_t a2m_stack_sync_owed(a2m_stack *st)
{
	a2m_store *s = st->store;
	/* A write whose capacity pass ran apart: its own ticket, the pass's
	** commit left owed to the next one (finish.c). */
	uint64_t early = st->early_ticket;
	st->early_ticket = 0;
	if (early)
		return early;
	return s->ops->sync_owed ? s->ops->sync_owed(s) : 0;
}

int a2m_stack_sync_wait(a2m_stack *st, uint64_t ticket, char *msg, size_t msglen)
{
	a2m_store *s = st->store;
	return ticket && s->ops->sync_wait ? s->ops->sync_wait(s, ticket, msg, msglen) : 0;
}

void a2m_stack_rollback(a2m_stack *st)
{
	if (st->joint != JOINT_UNDONE)
		st->store->ops->rollback(st->store);
	if (st->joint == JOINT_OPEN) {
		/* Every part is undone, not only this one's (stack.h). */
		st->joint = JOINT_UNDONE;
		st->capacity_known = st->joint_capacity_known;
	}
	st->touches.applied = 0;  /* undone with the rest: still waiting */
	st->full_pass_run = 0;    /* its fixed point was undone too */
	changed(st);
	st->dims = -1; /* re-read: the transaction may have set it */
}

int a2m_stack_touches_flush(a2m_stack *st, int durable, a2m_error *err)
{
	if (!st->touches.n)
		return 0;
	/* begin writes the buffer into the transaction; commit empties it. */
	int rc = durable ? a2m_stack_begin(st, err) : a2m_stack_begin_relaxed(st, err);
	if (rc)
		return rc;
	if ((rc = a2m_stack_commit(st, err)) != 0)
		a2m_stack_rollback(st);
	return rc;
}

int a2m_stack_settle_due(a2m_stack *st)
{
	return !st->cfg.read_only && a2m_touches_due(&st->touches, a2m_clock_now_ms());
}

int a2m_stack_settle(a2m_stack *st, a2m_error *err)
{
	return a2m_stack_settle_due(st) ? a2m_stack_touches_flush(st, 0, err) : 0;
}
