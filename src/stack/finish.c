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
** This file is also the only caller of the change listener.
*/
#include <string.h>

#include "stack/stack_internal.h"
#include "util/clock.h"

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

int a2m_stack_finish(a2m_stack *st, int rc, a2m_finish *f, a2m_error *err)
{
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
	return 0;
}
