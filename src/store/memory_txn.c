/*
** memory_txn.c — the in-memory engine's transactions: the journal of undo
** steps, begin, commit and rollback (which replays the journal backwards),
** and the store-level settings (meta_get, meta_set), whose changes are
** journalled like the records'.
**
** Apart from memory.c because undoing is its own concern: every write
** records its step here, and only this file knows how each step is undone
** or, at commit, freed.
*/
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/memory_internal.h"

/* ---- the journal -------------------------------------------------------- */

/* Makes room for one more undo step, if a transaction is open. */
int a2m_mem_journal_reserve(mstore *s)
{
	if (!s->in_tx || s->njournal < s->jcap)
		return 0;
	size_t n = s->jcap ? s->jcap * 2 : 16;
	undo *j = realloc(s->journal, n * sizeof *j);
	if (!j)
		return -1;
	s->journal = j;
	s->jcap = n;
	return 0;
}

/* Records an undo step (room reserved). */
undo *a2m_mem_journal_push(mstore *s, undo_kind kind, entry *e)
{
	undo *u = &s->journal[s->njournal++];
	memset(u, 0, sizeof *u);
	u->kind = kind;
	u->e = e;
	return u;
}

/* ---- transactions ------------------------------------------------------ */

int a2m_mem_begin(a2m_store *base)
{
	mstore *s = (mstore *)base;
	if (s->in_tx)
		return a2m_store_fail(base, "begin: a transaction is already open");
	s->in_tx = 1;
	s->tx_next_seq = s->next_seq;
	s->njournal = 0;
	a2m_vindex_begin(s->vectors);
	return 0;
}

/* Ends the transaction, keeping its writes: frees what undo would have needed. */
int a2m_mem_commit(a2m_store *base)
{
	mstore *s = (mstore *)base;
	if (!s->in_tx)
		return a2m_store_fail(base, "commit: no transaction is open");
	for (size_t i = 0; i < s->njournal; i++) {
		undo *u = &s->journal[i];
		a2m_mdoc_free(u->doc);
		a2m_mdoc_free(u->old_doc);
		if (u->kind == UNDO_REMOVE) {
			a2m_mem_entry_free(s, u->e);
		} else if (u->kind == UNDO_UPDATE) {
			a2m_mem_entry_free(s, u->old);
		} else if (u->kind == UNDO_META) {
			free(u->old_value);
		} else if (u->kind == UNDO_MOVE) {
			a2m_mintern_put(s->names, u->names);
		}
	}
	s->njournal = 0;
	s->in_tx = 0;
	a2m_mem_history_commit(s);
	a2m_vindex_commit(s->vectors);
	a2m_mem_maybe_compact(s);
	a2m_mem_index_settle(s);
	a2m_mcounts_settle(s->counts);
	return 0;
}

/*
** Replays the journal backwards. Nothing here allocates (links cannot fail,
** a2m_mem_order_rebuild reuses the array), so rollback always restores exactly the
** state at begin(), next seq included, as SQLite does for AUTOINCREMENT.
*/
void a2m_mem_rollback(a2m_store *base)
{
	mstore *s = (mstore *)base;
	s->stamp++;
	int rebuild = 0;
	if (!s->in_tx)
		return;
	for (size_t i = s->njournal; i-- > 0;) {
		undo *u = &s->journal[i];
		entry *e = u->e;
		switch (u->kind) {
		case UNDO_INSERT:
			a2m_mcounts_unlink(s->counts, e->names->tier, e->names->session, &e->link, 1);
			a2m_mem_ptable_unlink(&s->ids, e, 0);
			a2m_mem_ptable_unlink(&s->seqs, e, 1);
			a2m_mem_key_unlink(s, e);
			a2m_mem_order_remove(s, e);
			if (u->doc)
				a2m_mindex_unlink(s->index, u->doc);
			a2m_mem_entry_free(s, e);
			break;
		case UNDO_UPDATE:
			/* e is the entry the update made, u->old the one it replaced. */
			if (e->created_at != u->old->created_at)
				rebuild = 1;
			a2m_mem_entry_replace(s, e, u->old);
			if (u->doc) /* the content changed: back to the old text's postings */
				a2m_mindex_replace(s->index, u->doc, u->old_doc);
			a2m_mem_entry_free(s, e);
			break;
		case UNDO_REMOVE:
			a2m_mcounts_link(s->counts, e->names->tier, e->names->session, &e->link);
			a2m_mem_ptable_link(&s->ids, e, 0);
			a2m_mem_ptable_link(&s->seqs, e, 1);
			a2m_mem_key_link(s, e);
			if (u->doc)
				a2m_mindex_link(s->index, u->doc);
			e->slot = NO_SLOT; /* placed by a2m_mem_order_rebuild below */
			rebuild = 1;
			break;
		case UNDO_TOUCH:
			e->access_count = u->access_count;
			e->accessed_at = u->accessed_at;
			break;
		case UNDO_MOVE:
			/* Back to the groups it left, kept while the transaction is open. */
			if (!a2m_str_same(e->names->tier, u->names->tier))
				a2m_mcounts_move(s->counts, e->names->tier, e->names->session, &e->link,
						 u->names->tier, u->names->session, &e->link, 1);
			a2m_mintern_put(s->names, e->names);
			e->names = u->names;
			e->salience = u->salience;
			break;
		case UNDO_META:
			free(s->metas[u->meta].value);
			s->metas[u->meta].value = u->old_value;
			break;
		}
		a2m_mdoc_free(u->doc);
		a2m_mdoc_free(u->old_doc);
	}
	s->njournal = 0;
	s->in_tx = 0;
	a2m_mem_history_rollback(s);
	a2m_vindex_rollback(s->vectors);
	s->next_seq = s->tx_next_seq;
	if (rebuild)
		a2m_mem_order_rebuild(s);
	else
		a2m_mem_maybe_compact(s);
	a2m_mem_index_settle(s);
	a2m_mcounts_settle(s->counts);
}

/* ---- store-level settings --------------------------------------------- */

/* The slot named name, or NULL. Deleted settings keep their slot. */
static meta *find_meta(mstore *s, const char *name)
{
	for (size_t i = 0; i < s->nmetas; i++)
		if (strcmp(s->metas[i].name, name) == 0)
			return &s->metas[i];
	return NULL;
}

int a2m_mem_meta_get(a2m_store *base, const char *name, char **value)
{
	mstore *s = (mstore *)base;
	*value = NULL;
	if (!name) {
		a2m_store_fail(base, "meta_get: no name");
		return A2M_INVALID_PARAMS;
	}
	meta *m = find_meta(s, name);
	if (!m || !m->value)
		return 0;
	*value = strdup(m->value);
	if (!*value)
		return a2m_store_fail(base, "meta_get: out of memory");
	return 0;
}

/*
** Everything that can fail (the copy, a new slot, journal room) happens
** before the setting changes; the journal then owns the value replaced.
*/
int a2m_mem_meta_set(a2m_store *base, const char *name, const char *value)
{
	mstore *s = (mstore *)base;
	char *copy = NULL;
	if (!name) {
		a2m_store_fail(base, "meta_set: no name");
		return A2M_INVALID_PARAMS;
	}
	meta *m = find_meta(s, name);
	if (!m && !value)
		return 0;
	if (a2m_mem_journal_reserve(s) != 0)
		return a2m_store_fail(base, "meta_set: out of memory");
	if (value && !(copy = strdup(value)))
		return a2m_store_fail(base, "meta_set: out of memory");
	if (!m) {
		if (s->nmetas == s->mcap) {
			size_t n = s->mcap ? s->mcap * 2 : 8;
			meta *p = realloc(s->metas, n * sizeof *p);
			if (!p) {
				free(copy);
				return a2m_store_fail(base, "meta_set: out of memory");
			}
			s->metas = p;
			s->mcap = n;
		}
		char *nm = strdup(name);
		if (!nm) {
			free(copy);
			return a2m_store_fail(base, "meta_set: out of memory");
		}
		m = &s->metas[s->nmetas++];
		m->name = nm;
		m->value = NULL;
	}
	char *old = m->value;
	m->value = copy;
	if (s->in_tx) {
		undo *u = a2m_mem_journal_push(s, UNDO_META, NULL);
		u->meta = (size_t)(m - s->metas);
		u->old_value = old;
	} else {
		free(old);
	}
	return 0;
}
