/*
** memory_narrow.c — the in-memory engine's narrow writes: those that change
** an entry in place instead of making a new one (memory.c's update). touch
** (recall's access count and time) and move (a tier and a salience: a
** spill, a promotion, a session's close).
**
** Apart from memory.c because neither copies the record: a move of a
** whole-record update made a new entry (text, id and strings copied, every
** table relinked) for two fields no table is keyed on but the groups
** (memory_counts.c), ~12 k instructions of a lone write's two spills
** (docs/BENCHMARKS.md). An entry's address, size and text stay as they
** are; only its interned names (memory_intern.h) and salience change, and
** the journal keeps what they were.
*/
#include "a2m.h"
#include "store/memory_internal.h"
#include "store/vector_index.h"

/* In place: a touch changes two numbers, nothing any table is keyed on. */
int a2m_mem_touch(a2m_store *base, int64_t seq, int64_t add, int64_t at)
{
	mstore *s = (mstore *)base;
	s->stamp++;
	entry *e = a2m_mem_find_seq(s, seq);
	if (!e)
		return 0;
	if (a2m_mem_journal_reserve(s) != 0)
		return a2m_store_fail(base, "out of memory");
	if (s->in_tx) {
		undo *u = a2m_mem_journal_push(s, UNDO_TOUCH, e);
		u->access_count = e->access_count;
		u->accessed_at = e->accessed_at;
	}
	e->access_count += add;
	if (at > e->accessed_at)
		e->accessed_at = at;
	return 0;
}

/*
** A tier move (store.h): the entry's names become those with tier `to`
** (the same session, role and owner), its salience this one, and its
** groups follow. The record named must be there as named (seq, id, tier
** and session); else *moved stays 0 and nothing changes. Everything that
** can fail (the journal's room, the new groups, the new names) happens
** before the entry changes. rec's strings may point into the entry's
** names, so the new names are made from the entry's own.
*/
int a2m_mem_move(a2m_store *base, const a2m_record *rec, const char *to, double salience,
		 int *moved)
{
	mstore *s = (mstore *)base;
	*moved = 0;
	s->stamp++;
	entry *e = a2m_mem_find_seq(s, rec->seq);
	const a2m_mnames *was = e ? e->names : NULL;
	if (!e || strcmp(a2m_mem_id(e), rec->id) != 0 || !a2m_str_same(was->tier, rec->tier) ||
	    !a2m_str_same(was->session, rec->session))
		return 0;
	int regroup = !a2m_str_same(was->tier, to);
	a2m_mnames want = {to, was->session, was->role, was->owner};
	const a2m_mnames *now = NULL;
	if (a2m_mem_journal_reserve(s) != 0 ||
	    (regroup && a2m_mcounts_reserve(s->counts, to, was->session) != 0) ||
	    !(now = a2m_mintern_get(s->names, &want)))
		return a2m_store_fail(base, "out of memory");

	a2m_record before, after;
	a2m_mem_entry_view(e, &before);  /* its strings stay: was is not put yet */
	if (regroup)
		a2m_mcounts_move(s->counts, was->tier, was->session, &e->link, now->tier,
				 now->session, &e->link, s->in_tx);
	if (s->in_tx) {
		undo *u = a2m_mem_journal_push(s, UNDO_MOVE, e);
		u->names = was;
		u->salience = e->salience;
	}
	e->names = now;
	e->salience = salience;
	if (salience > s->salience_max)
		s->salience_max = salience;
	a2m_mem_entry_view(e, &after);
	if (a2m_vindex_differs(&before, &after))
		a2m_vindex_put(s->vectors, &after);
	if (!s->in_tx)
		a2m_mintern_put(s->names, was);
	*moved = 1;
	return 0;
}
