/*
** conversations.c — sessions, one conversation each (spec §3.5, §4.10, §4.11) and per-tier counts:
** closing a session percolates it down the stack; listing aggregates the
** named sessions a caller may see.
*/
#include <stdlib.h>
#include <string.h>

#include "stack/stack_internal.h"
#include "util/clock.h"
#include "util/grow.h"

int a2m_stack_session_close(a2m_stack *st, const a2m_scope *scope, const char *session,
			    int64_t *flushed, a2m_consolidation *out, int64_t *counts,
			    a2m_error *err)
{
	memset(out, 0, sizeof *out);
	*flushed = 0;
	const a2m_tier_layout *l = &st->cfg.tiers;
	int rc = a2m_stack_begin(st, err);
	for (size_t i = 0; i < l->n && !rc; i++) {
		const a2m_tier *t = &l->tiers[i];
		int working = t->per_session || strcmp(t->kind, "working") == 0;
		if (!working || !t->spill_to)
			continue;
		a2m_selection sel = {0};
		sel.q.tier = t->name;
		sel.q.by_session = 1;
		sel.q.session = session;
		if (scope)
			sel.scope = *scope;
		collect c;
		if ((rc = a2m_stack_select_records(st, &sel, 0, 0, &c, err)))
			break;
		for (size_t j = 0; j < c.n && !rc; j++) {
			a2m_record *cur = NULL;
			/* A group move may have taken it already. */
			if ((rc = st->store->ops->get(st->store, c.recs[j]->id, &cur))) {
				a2m_stack_store_error(st, err, rc);
				break;
			}
			if (cur && a2m_stack_same_str(cur->tier, t->name)) {
				int64_t moved = 0;
				rc = a2m_stack_move_unit(st, cur, t->spill_to, 0, &moved, err);
				*flushed += moved;
			}
			a2m_record_free(cur);
		}
		a2m_record_array_free(c.recs, c.n);
	}
	/*
	** Then every tier below applies its own rules to what arrived. One
	** consolidated event, then the close (spec §4.12); the records flushed
	** out of working memory are owed a vector.
	*/
	a2m_change c = {.kind = A2M_CHANGE_SESSION_CLOSED, .session = session,
			.owner = scope ? scope->owner : NULL, .shared = !scope || !scope->scoped};
	a2m_finish f = {.rebalance = A2M_REBALANCE_ALL, .changes = &c, .n_changes = 1,
			.cons_event = A2M_CONS_FIRST, .owes = *flushed != 0, .counts = counts};
	if ((rc = a2m_stack_finish(st, rc, &f, err)) != 0) {
		*flushed = 0;
		return rc;
	}
	*out = f.cons;
	return 0;
}

/* Accumulates per-session figures during a scan. */
typedef struct session_acc {
	a2m_stack        *st;
	const a2m_scope  *scope;
	a2m_session_info *v;
	size_t            n, cap;
	int               oom;
	int64_t           now;
} session_acc;

static int session_visit(const a2m_record *rec, void *ctx)
{
	session_acc *a = ctx;
	if (!rec->session || !a2m_stack_visible(a->st, a->scope, rec) ||
	    a2m_stack_expired(rec, a->now))
		return 0;
	size_t i;
	for (i = 0; i < a->n; i++)
		if (strcmp(a->v[i].session, rec->session) == 0)
			break;
	size_t ntiers = a->st->cfg.tiers.n;
	if (i == a->n) {
		if (a2m_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v)) {
			a->oom = 1;
			return -1;
		}
		a2m_session_info *s = &a->v[a->n];
		memset(s, 0, sizeof *s);
		s->session = strdup(rec->session);
		s->tier_counts = calloc(ntiers ? ntiers : 1, sizeof *s->tier_counts);
		if (!s->session || !s->tier_counts) {
			free(s->session);
			free(s->tier_counts);
			a->oom = 1;
			return -1;
		}
		s->opened_at = rec->created_at;
		a->n++;
	}
	a2m_session_info *s = &a->v[i];
	s->records++;
	int ti = a2m_tiers_index(&a->st->cfg.tiers, rec->tier);
	if (ti >= 0)
		s->tier_counts[ti]++;
	if (rec->created_at < s->opened_at)
		s->opened_at = rec->created_at;
	a2m_record tmp;
	const a2m_record *r = a2m_stack_touched(a->st, rec, &tmp);  /* recall's, waiting */
	int64_t touched = r->accessed_at > r->created_at ? r->accessed_at : r->created_at;
	if (touched > s->touched_at)
		s->touched_at = touched;
	return 0;
}

int a2m_stack_sessions(a2m_stack *st, const a2m_scope *scope, a2m_session_info **out,
		       size_t *n, a2m_error *err)
{
	session_acc a = {.st = st, .scope = scope, .now = a2m_clock_now_ms()};
	a2m_query q = {0};
	int rc = st->store->ops->scan(st->store, &q, session_visit, &a);
	if (rc || a.oom) {
		a2m_sessions_free(a.v, a.n);
		return a.oom ? a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory")
			     : a2m_stack_store_error(st, err, rc);
	}
	*out = a.v;
	*n = a.n;
	return 0;
}

typedef struct count_acc {
	a2m_stack       *st;
	const a2m_scope *scope;
	int64_t         *counts;
} count_acc;

static int count_visit(const a2m_record *rec, void *ctx)
{
	count_acc *a = ctx;
	if (a2m_stack_visible(a->st, a->scope, rec)) {
		int ti = a2m_tiers_index(&a->st->cfg.tiers, rec->tier);
		if (ti >= 0)
			a->counts[ti]++;
	}
	return 0;
}

int a2m_stack_tier_counts(a2m_stack *st, const a2m_scope *scope, int64_t *counts,
			  a2m_error *err)
{
	const a2m_tier_layout *l = &st->cfg.tiers;
	memset(counts, 0, l->n * sizeof *counts);
	int rc;
	if (!scope || !scope->scoped) {
		/* Unscoped: the store counts each tier itself, once per change —
		** describe is called far more often than the store changes. */
		uint64_t at = a2m_stack_generation(st);
		if (!st->counts_valid || st->counts_at != at) {
			if ((rc = a2m_stack_count_tiers(st, st->counts, err)))
				return rc;
			st->counts_valid = 1;
			st->counts_at = at;
		}
		memcpy(counts, st->counts, l->n * sizeof *counts);
		return 0;
	}
	count_acc a = {.st = st, .scope = scope, .counts = counts};
	a2m_query q = {0};
	rc = st->store->ops->scan(st->store, &q, count_visit, &a);
	return rc ? a2m_stack_store_error(st, err, rc) : 0;
}

void a2m_sessions_free(a2m_session_info *s, size_t n)
{
	if (!s)
		return;
	for (size_t i = 0; i < n; i++) {
		free(s[i].session);
		free(s[i].tier_counts);
	}
	free(s);
}
