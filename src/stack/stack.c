/*
** stack.c — the stack as the server holds it: creation and freeing (the
** store, scorer, layout and embedder it owns; recall's touches still
** waiting written once, durably, at close), the change listener, and what
** the server reads of its configuration. The stack's other files and how
** they call each other: docs/ARCHITECTURE.md (The stack's files); the
** policy they apply: stack.h.
*/
#include <stdlib.h>
#include <string.h>

#include "stack/stack_internal.h"
#include "util/log.h"

a2m_stack *a2m_stack_new(a2m_store *store, a2m_scorer *scorer, a2m_stack_config *cfg)
{
	a2m_stack *st = calloc(1, sizeof *st);
	if (!st || a2m_stack_oldest_init(&st->oldest, cfg->tiers.n) != 0) {
		free(st);
		store->ops->close(store);
		scorer->destroy(scorer);
		a2m_tiers_free(&cfg->tiers);
		if (cfg->embedder)
			cfg->embedder->destroy(cfg->embedder);
		cfg->embedder = NULL;
		return NULL;
	}
	st->store = store;
	st->scorer = scorer;
	st->cfg = *cfg;
	memset(&cfg->tiers, 0, sizeof cfg->tiers);
	st->dims = -1;
	atomic_init(&st->generation, 0);
	atomic_init(&st->next_expiry, 0);
	cfg->embedder = NULL;
	st->counts = calloc(st->cfg.tiers.n + 1, sizeof *st->counts);
	if (!st->counts || a2m_touches_init(&st->touches, st->cfg.touch_max) != 0) {
		a2m_stack_free(st);
		return NULL;
	}
	/* What the store holds may have expired while it was closed. */
	(void)a2m_stack_expiry_init(st);
	return st;
}

void a2m_stack_free(a2m_stack *st)
{
	if (!st)
		return;
	if (st->touches.n && !st->cfg.read_only) {
		/* What recalls counted since the last write: durable, once. */
		a2m_error err = {0};
		if (a2m_stack_touches_flush(st, 1, &err) != 0)
			a2m_log(A2M_LOG_WARN, "access counts not written at close: %s", err.message);
		a2m_error_clear(&err);
	}
	a2m_touches_free(&st->touches);
	st->store->ops->close(st->store);
	st->scorer->destroy(st->scorer);
	a2m_tiers_free(&st->cfg.tiers);
	if (st->cfg.embedder)
		st->cfg.embedder->destroy(st->cfg.embedder);
	free(st->counts);
	a2m_stack_arrivals_free(st);
	a2m_stack_rosters_free(st);
	a2m_stack_oldest_free(&st->oldest);
	free(st);
}

void a2m_stack_on_change(a2m_stack *st, a2m_change_fn fn, void *ctx)
{
	st->on_change = fn;
	st->on_change_ctx = ctx;
}

void a2m_stack_log_in_transaction(a2m_stack *st, a2m_change_write_fn write)
{
	st->log_write = write;
}

const a2m_tier_layout *a2m_stack_tiers(const a2m_stack *st)
{
	return &st->cfg.tiers;
}

size_t a2m_stack_history_keep(const a2m_stack *st)
{
	return st->cfg.history_keep;
}

a2m_metric a2m_stack_metric(const a2m_stack *st)
{
	return st->cfg.metric;
}

const a2m_scorer *a2m_stack_scorer(const a2m_stack *st)
{
	return st->scorer;
}

const a2m_blend *a2m_stack_blend(const a2m_stack *st)
{
	return &st->cfg.blend;
}

int a2m_stack_index_stats(a2m_stack *st, a2m_index_stats *out, const char **engine,
			  a2m_error *err)
{
	a2m_store *s = st->store;
	memset(out, 0, sizeof *out);
	*engine = s->ops->engine;
	if (!s->ops->index_stats)
		return A2M_STORE_NO_INDEX;
	int rc = s->ops->index_stats(s, out);
	return rc < 0 ? a2m_stack_store_error(st, err, rc) : rc;
}
