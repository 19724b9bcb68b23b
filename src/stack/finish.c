/*
** finish.c — how every write ends. Each operation that changes records
** (remember, forget, promote, reinforce, consolidate, session close, the
** promotion a recall earns) begins one transaction, makes its own changes,
** and hands the outcome here; a2m_stack_finish is the only way out of it:
**
**   1. the tiers' rules run in the same transaction (promotion and
**      capacity, flow.c), so what commits already keeps them: capacity is
**      a promise, not a background chore (stack.h);
**   2. commit, or rollback when anything failed: an operation is written
**      whole or not at all, and whatever its answer needs from the store
**      is read before (an error after the commit would deny a write that
**      stood);
**   3. after the commit, and only then, the listener hears the changes,
**      so nothing is reported that a crash could still take back; a log
**      kept in the store itself (a deployment's, several servers') hears
**      them just before the commit instead and writes them into the same
**      transaction (a2m_stack_log_in_transaction): one commit for a write
**      and its events, which a crash keeps or takes back together;
**   4. records the write left owed a generated vector get one batch of
**      them embedded, outside every transaction (docs/EMBEDDINGS.md §4.2).
**
** One exception to 1, opt-in (capacity_after_sync, docs/CONFIG.md), for a
** durable lone write (group commit, a caller that asked with
** a2m_stack_capacity_apart): its capacity pass runs in a
** transaction of its own right after its commit, while the write's own
** sync runs on the store's sync thread (store.h, sync_start), and the
** call's ticket is the write's. The disk syncs the record while the CPU
** spills, where one came after the other, and the write's answer waits
** for neither the pass's pages nor its sync. Capacity still holds when
** the call returns; what changes is a moment between the two commits
** when the bucket holds one unit too many (another process may see it),
** and a power loss in the next moments, which can take the pass back
** (not the write; the next write's pass, or the full one after an open,
** spills again). A pass that fails is tried again at once; failing twice
** (a full disk) it is logged, the write stands without it, and the next
** write looks at every tier: tests/test_faults.c's writes are all or
** nothing, spills included, which is why this is not the default.
**
** This file is also the only caller of the change listener.
*/
#include <string.h>

#include "stack/stack_internal.h"
#include "util/clock.h"
#include "util/log.h"

/* Reports one change to the listener, if any; an `at` of 0 is now. */
static void emit(a2m_stack *st, const a2m_change *c)
{
	if (!st->on_change)
		return;
	if (c->at) {
		st->on_change(st->on_change_ctx, c);
		return;
	}
	a2m_change stamped = *c;
	stamped.at = a2m_clock_now_ms();
	st->on_change(st->on_change_ctx, &stamped);
}

/* Reports the consolidation as one event (spec §4.12), when it moved
** anything or always. */
static void emit_consolidated(a2m_stack *st, const a2m_consolidation *cons, int always)
{
	if (!always && !cons->moved && !cons->promoted && !cons->dropped && !cons->summarized)
		return;
	a2m_change c = {.kind = A2M_CHANGE_CONSOLIDATED, .cons = *cons, .shared = 1};
	emit(st, &c);
}

/* Every change of the write, in the order a reader must see them. */
static void emit_all(a2m_stack *st, const a2m_finish *f)
{
	if (f->cons_event == A2M_CONS_FIRST)
		emit_consolidated(st, &f->cons, 1);
	for (size_t i = 0; i < f->n_changes; i++)
		emit(st, &f->changes[i]);
	if (f->cons_event != A2M_CONS_FIRST)
		emit_consolidated(st, &f->cons, f->cons_event == A2M_CONS_ALWAYS);
}

void a2m_stack_capacity_apart(a2m_stack *st, int on)
{
	st->capacity_apart = on != 0;
	st->early_ticket = 0;
}

/* Whether this write's capacity pass runs after its commit (the header). */
static int apart(const a2m_stack *st, const a2m_finish *f)
{
	return st->capacity_apart && st->cfg.capacity_after_sync && f->rebalance == A2M_REBALANCE_CAPACITY &&
	       f->cons_event == A2M_CONS_IF_MOVED && !f->counts && st->n_arrivals &&
	       st->capacity_known && !st->arrivals_lost && !st->joint && !st->log_write &&
	       st->store->group_commit && st->store->ops->sync_start;
}

/* One capacity pass in a transaction of its own; 0 once committed. */
static int pass_alone(a2m_stack *st, a2m_consolidation *cons, a2m_error *e)
{
	int rc = a2m_stack_begin(st, e);
	if (rc)
		return rc;
	if ((rc = a2m_stack_rebalance(st, 0, cons, e)) == 0)
		rc = a2m_stack_commit(st, e);
	if (rc) {
		a2m_stack_rollback(st);
		/* The arrivals it took are gone with it: look at every tier. */
		st->arrivals_lost = 1;
		*cons = (a2m_consolidation){0};
	}
	return rc;
}

/*
** The capacity pass of a write that committed, in a transaction of its
** own, begun once the write's sync is (the header). Cannot fail the write:
** a pass that fails is rolled back and logged, and the next write's pass
** looks at every tier.
*/
static void capacity_after(a2m_stack *st)
{
	uint64_t ticket = st->store->ops->sync_start(st->store);
	if (ticket > st->early_ticket)
		st->early_ticket = ticket;
	a2m_consolidation cons = {0};
	a2m_error e = {0};
	/* A failure that passes (an allocation, one I/O error) is tried again
	** at once, a full pass this time, so capacity holds when the call
	** returns as it did when the pass shared the write's transaction. */
	int rc = pass_alone(st, &cons, &e);
	if (rc) {
		a2m_error_clear(&e);
		rc = pass_alone(st, &cons, &e);
	}
	if (rc) {
		a2m_log(A2M_LOG_ERROR, "the capacity pass after a write failed (%s); the next "
			"write's pass looks at every tier", e.message);
		a2m_error_clear(&e);
		return;
	}
	a2m_stack_capacity_committed(st);
	emit_consolidated(st, &cons, 0);
	if (cons.moved || cons.promoted)
		a2m_stack_embed_after_write(st);
}

int a2m_stack_finish(a2m_stack *st, int rc, a2m_finish *f, a2m_error *err)
{
	int later = !rc && apart(st, f);
	if (later)
		f->rebalance = A2M_REBALANCE_NONE;  /* run by capacity_after() */
	if (!rc && f->rebalance != A2M_REBALANCE_NONE)
		rc = a2m_stack_rebalance(st, f->rebalance == A2M_REBALANCE_ALL, &f->cons, err);
	/*
	** What the answer reports of the store is read before the commit:
	** read after it, a failed read would answer an error for a write that
	** stood (found by test_faults at sqlite-malloc, session close).
	*/
	if (!rc && f->counts)
		rc = a2m_stack_count_tiers(st, f->counts, err);
	/* A log kept in the store takes the changes into this transaction. */
	int logged = !rc && st->log_write && st->on_change;
	if (logged) {
		emit_all(st, f);
		if ((rc = st->log_write(st->on_change_ctx)))
			a2m_stack_store_error(st, err, rc);
	}
	if (!rc)
		rc = a2m_stack_commit(st, err);
	if (rc) {
		a2m_stack_rollback(st);
		return rc;
	}
	if (f->rebalance != A2M_REBALANCE_NONE)
		a2m_stack_capacity_committed(st);
	if (!logged)
		emit_all(st, f);
	/* A record that left a working tier (or landed outside one) may now
	** be owed a vector; embedding it waits for no transaction. */
	if (!f->no_embed && (f->owes || f->cons.moved || f->cons.promoted))
		a2m_stack_embed_after_write(st);
	if (later)
		capacity_after(st);
	return 0;
}
