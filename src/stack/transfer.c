/*
** transfer.c — records whole, out of a store and into one: what `a2m
** export` reads and `a2m import` writes (server/export.c, server/import.c
** make and read the file; docs/EXPORT.md says the format).
**
** An import is a write like any other: one transaction per batch, ended
** by a2m_stack_finish, so the tiers' capacity holds when it commits and
** every record written is reported. It differs from remember in what it
** keeps: the id, created_at, revision, access counts and expiry
** (x-expiry) are the ones given, not made here, since the records were made somewhere else. And
** where remember replaces the record at an occupied key, an import leaves
** it standing: the imported record is another record's history, not a
** newer fact, and which of the two should win is not ours to guess. A
** record's own earlier revisions (x-history) come in with it, in its
** transaction, and stay out when it does.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stack/stack_internal.h"

/* The `written` change of one imported record. Sets *owes as remember
** does: a record outside a working tier may be owed a generated vector. */
static void imported(const a2m_stack *st, const a2m_record *rec, a2m_change *c, int *owes)
{
	const a2m_tier *t = a2m_stack_tier_of(st, rec);
	*c = (a2m_change){.kind = A2M_CHANGE_WRITTEN, .rec = rec, .owner = rec->owner,
			  .shared = t && t->shared};
	if (st->cfg.embedder && t && (!t->kind || strcmp(t->kind, "working") != 0))
		*owes = 1;
}

/*
** Within the open transaction: writes rec unless its id exists or its key
** is another id's. *outcome says which; *written is set when it was.
*/
static int import_one(a2m_stack *st, a2m_record *rec, size_t i, unsigned char *outcome,
		      int *written, a2m_error *err)
{
	a2m_store *s = st->store;
	a2m_record *old = NULL;
	*written = 0;
	int rc = s->ops->get(s, rec->id, &old);
	if (rc)
		return a2m_stack_store_error(st, err, rc);
	if (old) {
		a2m_record_free(old);
		*outcome = A2M_IMPORT_SKIPPED;
		return 0;
	}
	if (rec->key) {
		if ((rc = s->ops->get_by_key(s, rec->owner, rec->key, &old)) != 0)
			return a2m_stack_store_error(st, err, rc);
		if (old) {
			a2m_record_free(old);
			*outcome = A2M_IMPORT_KEY_HELD;
			return 0;
		}
	}
	if ((rc = a2m_stack_check_dims(st, rec, i, err)) != 0)
		return rc;
	if (isnan(rec->salience))
		rec->salience = st->cfg.default_salience;
	/* Found as a duplicate like any record of its tier (x-dedup). Its
	** expiry is the one given, a record that never expired included. */
	if (st->cfg.fingerprints)
		rec->fingerprint = a2m_stack_fingerprint(rec->content, rec->role);
	if ((rc = s->ops->insert(s, rec)) != 0)
		return a2m_stack_store_error(st, err, rc);
	a2m_stack_expiry_noted(st, rec->expires_at);
	a2m_stack_note_arrival(st, rec->tier, rec->session);
	*outcome = A2M_IMPORTED;
	*written = 1;
	return 0;
}

/* Within the open transaction: the revisions of the records imported. */
static int import_revisions(a2m_stack *st, const unsigned char *out, size_t n,
			    const a2m_import_revision *revs, size_t nrevs, a2m_error *err)
{
	a2m_store *s = st->store;
	if (!st->cfg.history_keep || !s->ops->history_put)
		return 0;
	for (size_t i = 0; i < nrevs; i++) {
		if (revs[i].of >= n || out[revs[i].of] != A2M_IMPORTED)
			continue;
		int rc = s->ops->history_put(s, &revs[i].rev, st->cfg.history_keep);
		if (rc)
			return a2m_stack_store_error(st, err, rc);
	}
	return 0;
}

int a2m_stack_import(a2m_stack *st, a2m_record **recs, size_t n, unsigned char *outcome,
		     const a2m_import_revision *revs, size_t nrevs, a2m_error *err)
{
	const a2m_tier_layout *l = &st->cfg.tiers;
	for (size_t i = 0; i < n; i++) {
		if (!recs[i]->id || !*recs[i]->id)
			return a2m_error_set(err, A2M_INVALID_PARAMS, "records[%zu] has no id", i);
		if (recs[i]->tier && !a2m_tiers_find(l, recs[i]->tier)) {
			a2m_error_set(err, A2M_UNKNOWN_TIER, "records[%zu].tier: no tier named '%s'",
				      i, recs[i]->tier);
			return a2m_error_data(err, json_pack("{ss}", "tier", recs[i]->tier));
		}
		if (!recs[i]->tier && !(recs[i]->tier = strdup(l->tiers[l->default_tier].name)))
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	a2m_change *changes = malloc((n ? n : 1) * sizeof *changes);
	unsigned char *own = outcome ? NULL : malloc(n ? n : 1);
	if (!changes || (!outcome && !own)) {
		free(changes);
		free(own);
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	unsigned char *out = outcome ? outcome : own;
	size_t nc = 0;
	int owes = 0;
	int rc = a2m_stack_begin(st, err);
	for (size_t i = 0; i < n && !rc; i++) {
		int written;
		if ((rc = import_one(st, recs[i], i, &out[i], &written, err)) == 0 && written)
			imported(st, recs[i], &changes[nc++], &owes);
	}
	if (!rc)
		rc = import_revisions(st, out, n, revs, nrevs, err);
	a2m_finish f = {.rebalance = A2M_REBALANCE_CAPACITY, .changes = changes, .n_changes = nc,
			.owes = owes};
	rc = a2m_stack_finish(st, rc, &f, err);
	free(changes);
	free(own);
	return rc;
}

/* The caller's visit, with the touches still waiting laid over each record. */
typedef struct export_ctx {
	const a2m_stack *st;
	a2m_record_visit visit;
	void            *ctx;
	int              aborted;  /* the visit's own negative code */
} export_ctx;

static int export_visit(const a2m_record *rec, void *ctx)
{
	export_ctx *e = ctx;
	a2m_record tmp;
	int rc = e->visit(a2m_stack_touched(e->st, rec, &tmp), e->ctx);
	if (rc < 0)
		e->aborted = rc;
	return rc;
}

/* Counting the revisions an export will write (a2m_stack_export). */
typedef struct revision_count {
	a2m_store *s;
	int64_t    n;
} revision_count;

static int count_one(const a2m_revision *rev, void *ctx)
{
	(void)rev;
	(*(int64_t *)ctx)++;
	return 0;
}

static int count_revisions(const a2m_record *rec, void *ctx)
{
	revision_count *c = ctx;
	int rc = c->s->ops->history_visit(c->s, rec->id, 0, count_one, &c->n);
	return rc < 0 ? rc : 0;
}

int a2m_stack_export(a2m_stack *st, int64_t *total, int64_t *revisions, a2m_record_visit visit,
		     void *ctx, a2m_error *err)
{
	a2m_store *s = st->store;
	a2m_query all;
	memset(&all, 0, sizeof all);
	int rc = a2m_stack_read_begin(st, err);
	if (rc)
		return rc;
	if (total && (rc = s->ops->count(s, &all, total)) != 0)
		a2m_stack_store_error(st, err, rc);
	if (revisions)
		*revisions = 0;
	if (!rc && revisions && s->ops->history_visit) {
		/* Only a keyed record has revisions; "" is every key's prefix. */
		a2m_query keyed;
		memset(&keyed, 0, sizeof keyed);
		keyed.key_prefix = "";
		revision_count c = {s, 0};
		if ((rc = s->ops->scan(s, &keyed, count_revisions, &c)) < 0)
			a2m_stack_store_error(st, err, rc);
		*revisions = c.n;
	}
	export_ctx e = {st, visit, ctx, 0};
	if (!rc && (rc = s->ops->scan(s, &all, export_visit, &e)) < 0 && !e.aborted)
		a2m_stack_store_error(st, err, rc);
	a2m_error ignored = {0};
	a2m_stack_read_end(st, &ignored);
	a2m_error_clear(&ignored);
	return rc < 0 ? rc : 0;
}
