/*
** revisions.c — the history of keyed records (x-history, docs/PROTOCOL.md):
** the revision a key write replaces, kept in that write's transaction
** (store.h, history_put), and the revisions fetch reads back, newest first.
** The store bounds how many it keeps per record (history_keep) and drops
** them with the record: forgetting a key forgets its history.
*/
#include "stack/stack_internal.h"

/* The newest kept revision's superseded_at: when the current one was written. */
static int newest_visit(const a2m_revision *rev, void *ctx)
{
	*(int64_t *)ctx = rev->superseded_at;
	return 1;
}

int a2m_stack_keep_revision(a2m_stack *st, const a2m_record *old, int64_t now,
			    a2m_error *err)
{
	a2m_store *s = st->store;
	if (!st->cfg.history_keep || !s->ops->history_put || !s->ops->history_visit)
		return 0;
	/*
	** A record keeps its first created_at across revisions (§3.6), so when
	** revision r was written is when r - 1 was superseded: the newest
	** revision kept says it. Revision 0 was written at created_at; a
	** revision whose predecessor was never kept (history turned on later)
	** has no known time (0).
	*/
	int64_t written = old->created_at;
	int rc = 0;
	if (old->revision > 0) {
		written = 0;
		if ((rc = s->ops->history_visit(s, old->id, 1, newest_visit, &written)) < 0)
			return a2m_stack_store_error(st, err, rc);
	}
	a2m_revision rev = {.id = old->id, .revision = old->revision, .content = old->content,
			    .role = old->role, .metadata = old->metadata, .owner = old->owner,
			    .created_at = written, .superseded_at = now};
	if ((rc = s->ops->history_put(s, &rev, st->cfg.history_keep)))
		return a2m_stack_store_error(st, err, rc);
	return 0;
}

int a2m_stack_history(a2m_stack *st, const char *id, size_t max, a2m_revision_visit visit,
		      void *ctx, a2m_error *err)
{
	a2m_store *s = st->store;
	if (!s->ops->history_visit)
		return 0;
	int rc = s->ops->history_visit(s, id, max, visit, ctx);
	if (rc < 0 && !err->code)
		return a2m_stack_store_error(st, err, rc);
	return rc < 0 ? rc : 0;
}
