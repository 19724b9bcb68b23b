/*
** write.c — everything that changes records: on a client's request,
** remember (ids, key replacement, vector width), forget, promote, reinforce
** and consolidate; on a recall's behalf, its touch and the promotions the
** touch earns (read.c hands its hits here: the read path writes nothing
** itself). Each write runs in one transaction and ends through
** a2m_stack_finish (finish.c), which reports its changes after the commit.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stack/stack_internal.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/text.h"

/* Replaces what a key write changes in old with rec's fields (spec §3.6). */
static int apply_replacement(a2m_record *old, a2m_record *rec, int has_salience)
{
	a2m_record next = {0};
	if (a2m_record_copy(&next, rec) != 0)
		return -1;
	/* Same id, same creation, next revision; placement kept unless asked. */
	free(next.id);
	next.id = old->id;
	old->id = NULL;
	next.seq = old->seq;
	next.created_at = old->created_at;
	next.revision = old->revision + 1;
	next.access_count = old->access_count;
	next.accessed_at = old->accessed_at;
	if (!has_salience)
		next.salience = old->salience;
	if (!rec->tier) {
		free(next.tier);
		next.tier = old->tier;
		old->tier = NULL;
	}
	if (!rec->session) {
		free(next.session);
		next.session = old->session;
		old->session = NULL;
	}
	a2m_record_clear(old);
	*old = next;
	return 0;
}

/*
** The event reporting rec as written. Sets *owes when rec landed outside a
** working tier, so may be owed a generated vector: knowing that saves the
** owed-set scan after the common working-tier write (docs/EMBEDDINGS.md
** §4.2).
*/
static void wrote(const a2m_stack *st, const a2m_record *rec, int64_t now, a2m_change *c,
		  int *owes)
{
	const a2m_tier *t = a2m_stack_tier_of(st, rec);
	*c = (a2m_change){.kind = A2M_CHANGE_WRITTEN, .at = now, .rec = rec,
			  .owner = rec->owner, .shared = t && t->shared};
	if (st->cfg.embedder && t && (!t->kind || strcmp(t->kind, "working") != 0))
		*owes = 1;
}

/*
** Has the scorer's indexer analyse the batch's texts on other cores while
** this thread writes them one by one (store.h, prepare). Only a speed-up:
** when it cannot, the store analyses as before.
** Returns the indexer to unprepare, or NULL.
*/
static a2m_indexer *analyse_ahead(a2m_stack *st, a2m_record **recs, size_t n,
				  const char ***texts)
{
	a2m_indexer *ix = st->scorer ? st->scorer->indexer : NULL;
	*texts = NULL;
	if (!ix || !ix->prepare || n < 2 || !(*texts = malloc(n * sizeof **texts)))
		return NULL;
	for (size_t i = 0; i < n; i++)
		(*texts)[i] = recs[i]->content;
	if (ix->prepare(ix, *texts, n) != 0) {
		free(*texts);
		*texts = NULL;
		return NULL;
	}
	return ix;
}

int a2m_stack_foresee(a2m_stack *st, const char *const *texts, size_t n)
{
	a2m_indexer *ix = st && st->scorer ? st->scorer->indexer : NULL;
	return ix && ix->foresee ? ix->foresee(ix, texts, n) : -1;
}

/* The expiry a write landing in tier without one of its own gets: the
** tier's ttl from now (x-expiry), or none. */
static int64_t tier_expiry(const a2m_stack *st, const char *tier, int64_t now)
{
	const a2m_tier *t = a2m_tiers_find(&st->cfg.tiers, tier);
	return t && t->ttl_ms ? now + t->ttl_ms : 0;
}

/*
** A duplicate write refreshes the record it repeats (x-dedup): accessed
** now, the higher of the two saliences, the later of the two expiries
** (none being the latest). Within the open transaction.
*/
static int refresh_duplicate(a2m_stack *st, a2m_record *dup, const a2m_record *rec,
			     int has_salience, int64_t now, a2m_error *err)
{
	double sal = has_salience ? rec->salience : st->cfg.default_salience;
	if (now > dup->accessed_at)
		dup->accessed_at = now;
	if (sal > dup->salience)
		dup->salience = sal;
	if (dup->expires_at && (!rec->expires_at || rec->expires_at > dup->expires_at))
		dup->expires_at = rec->expires_at;
	int rc = st->store->ops->update(st->store, dup);
	return rc ? a2m_stack_store_error(st, err, rc) : 0;
}

/* NaN salience marks "not given" on a record passed to remember. */
int a2m_stack_remember(a2m_stack *st, a2m_record **recs, size_t n, size_t *deduplicated,
		       a2m_error *err)
{
	a2m_store *s = st->store;
	int64_t now = a2m_stack_part_now(st);
	const a2m_tier_layout *l = &st->cfg.tiers;
	/*
	** One event per record written, naming what it became: rec itself
	** once inserted (borrowed: the caller's, and it stays as stored until
	** we return; a copy of each was 1.2% of a batched remember), or the
	** stored record it replaced (ours, in replaced[], freed below).
	*/
	a2m_change *written = malloc((n ? n : 1) * sizeof *written);
	a2m_record **replaced = calloc(n ? n : 1, sizeof *replaced);
	size_t nw = 0, ndup = 0;
	int rc = 0, owes = 0;
	if (deduplicated)
		*deduplicated = 0;
	if (!written || !replaced) {
		free(written);
		free(replaced);
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		if (recs[i]->tier && !a2m_tiers_find(l, recs[i]->tier)) {
			a2m_error_set(err, A2M_UNKNOWN_TIER, "records[%zu].tier: no tier named '%s'",
				      i, recs[i]->tier);
			free(written);
			free(replaced);
			return a2m_error_data(err, json_pack("{ss}", "tier", recs[i]->tier));
		}
	const char **texts = NULL;
	a2m_indexer *ahead = analyse_ahead(st, recs, n, &texts);
	if ((rc = a2m_stack_begin(st, err))) {
		if (ahead)
			ahead->unprepare(ahead);
		free(texts);
		free(written);
		free(replaced);
		return rc;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		a2m_record *rec = recs[i];
		int has_salience = !isnan(rec->salience);
		if ((rc = a2m_stack_check_dims(st, rec, i, err)))
			break;
		if (rec->id) {
			a2m_record *old = NULL;
			if ((rc = s->ops->get(s, rec->id, &old))) {
				a2m_stack_store_error(st, err, rc);
				break;
			}
			if (old) {
				/* Idempotent retry: the record stands as first written. */
				a2m_record_free(old);
				continue;
			}
		}
		if (st->cfg.fingerprints)
			rec->fingerprint = a2m_stack_fingerprint(rec->content, rec->role);
		if (rec->key) {
			a2m_record *old = NULL;
			if ((rc = s->ops->get_by_key(s, rec->owner, rec->key, &old))) {
				a2m_stack_store_error(st, err, rc);
				break;
			}
			if (old) {
				/* An occupied key is replaced, never duplicated (§3.6);
				** what it said is kept as its history (x-history). */
				if ((rc = a2m_stack_keep_revision(st, old, now, err))) {
					a2m_record_free(old);
					break;
				}
				if (apply_replacement(old, rec, has_salience) != 0) {
					a2m_record_free(old);
					rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
					break;
				}
				if (!old->expires_at)
					old->expires_at = tier_expiry(st, old->tier, now);
				if ((rc = s->ops->update(s, old))) {
					a2m_record_free(old);
					a2m_stack_store_error(st, err, rc);
					break;
				}
				a2m_stack_expiry_noted(st, old->expires_at);
				a2m_stack_note_arrival(st, old->tier, old->session);
				/* rec becomes the record as stored at the end. */
				replaced[i] = old;
				wrote(st, old, now, &written[nw++], &owes);
				continue;
			}
		}
		if (!rec->tier && !(rec->tier = strdup(l->tiers[l->default_tier].name))) {
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
			break;
		}
		if (!rec->expires_at)
			rec->expires_at = tier_expiry(st, rec->tier, now);
		const a2m_tier *lands = a2m_tiers_find(l, rec->tier);
		if (!rec->id && !rec->key && lands && lands->dedup) {
			/* A write carrying neither of the client's own addresses,
			** repeating a live record of its tier, session and owner:
			** that record is refreshed instead (x-dedup). */
			a2m_record *dup = NULL;
			if ((rc = a2m_stack_find_duplicate(st, rec, rec->tier, now, &dup, err)))
				break;
			if (dup) {
				rc = refresh_duplicate(st, dup, rec, has_salience, now, err);
				if (!rc && !(rec->id = strdup(dup->id)))
					rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
				a2m_stack_expiry_noted(st, dup->expires_at);
				a2m_record_free(dup);
				ndup++;
				continue;
			}
		}
		if (!rec->id) {
			char id[A2M_ID_LEN];
			if (a2m_stack_part_id(st, now, id) != 0 || !(rec->id = strdup(id))) {
				rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "cannot make an id");
				break;
			}
		}
		if (!has_salience)
			rec->salience = st->cfg.default_salience;
		rec->created_at = now;
		rec->revision = 0;
		uint64_t before = a2m_stack_roster_stamp(st);
		if ((rc = s->ops->insert(s, rec))) {
			a2m_stack_store_error(st, err, rc);
			break;
		}
		a2m_stack_roster_note(st, before, rec->seq, NULL, rec);
		a2m_stack_expiry_noted(st, rec->expires_at);
		a2m_stack_note_arrival(st, rec->tier, rec->session);
		wrote(st, rec, now, &written[nw++], &owes);
	}
	if (ahead)
		ahead->unprepare(ahead);
	free(texts);
	a2m_finish f = {.rebalance = A2M_REBALANCE_CAPACITY, .changes = written, .n_changes = nw,
			.owes = owes};
	rc = a2m_stack_finish(st, rc, &f, err);
	if (!rc && deduplicated)
		*deduplicated = ndup;
	/*
	** A replaced key's rec becomes the record as stored (its id, revision,
	** creation), swapped with ours rather than copied: the caller reports
	** it without a read after the commit, which could fail for a write
	** that stood. After finish: the analysis ahead read rec->content until
	** unprepared, and the events point at ours.
	*/
	for (size_t i = 0; i < n && !rc; i++) {
		if (replaced[i]) {
			a2m_record caller = *recs[i];
			*recs[i] = *replaced[i];
			*replaced[i] = caller;
		}
	}
	free(written);
	a2m_record_array_free(replaced, n);
	return rc;
}

int a2m_stack_forget(a2m_stack *st, const a2m_selection *sel,
		     const char *const *ids, size_t n_ids, const char *query,
		     int64_t *forgotten, a2m_error *err)
{
	a2m_store *s = st->store;
	a2m_record **recs;
	size_t n;
	*forgotten = 0;
	int rc = a2m_stack_select(st, sel, ids, n_ids, query, 0, &recs, &n, err);
	if (rc)
		return rc;
	const char **gone = calloc(n + 1, sizeof *gone);
	a2m_audience *aud = calloc(n + 1, sizeof *aud);
	if (!gone || !aud) {
		free(gone);
		free(aud);
		a2m_record_array_free(recs, n);
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	if ((rc = a2m_stack_begin(st, err)))
		goto done;
	size_t count = 0;
	for (size_t i = 0; i < n; i++) {
		int removed = 0;
		if ((rc = s->ops->remove(s, recs[i]->id, &removed))) {
			a2m_stack_store_error(st, err, rc);
			break;
		}
		if (removed) {
			const a2m_tier *t = a2m_stack_tier_of(st, recs[i]);
			aud[count] = (a2m_audience){recs[i]->owner, t && t->shared};
			gone[count++] = recs[i]->id;
		}
	}
	/* One event however many went (spec §4.12), stamped after the commit. */
	a2m_change ch = {.kind = A2M_CHANGE_FORGOTTEN, .ids = gone, .audience = aud,
			 .n_ids = count, .count = (int64_t)count, .owner = sel->scope.owner,
			 .shared = !sel->scope.scoped};
	a2m_finish f = {.rebalance = A2M_REBALANCE_NONE, .changes = &ch, .n_changes = count != 0};
	if ((rc = a2m_stack_finish(st, rc, &f, err)) == 0)
		*forgotten = (int64_t)count;
done:
	free(gone);
	free(aud);
	a2m_record_array_free(recs, n);
	return rc;
}

/* Fetches the visible record with id, or NULL (also once it expired). */
static int get_visible(a2m_stack *st, const a2m_scope *scope, const char *id,
		       a2m_record **out, a2m_error *err)
{
	*out = NULL;
	a2m_record *rec = NULL;
	int rc = st->store->ops->get(st->store, id, &rec);
	if (rc)
		return a2m_stack_store_error(st, err, rc);
	if (rec && (!a2m_stack_visible(st, scope, rec) ||
		    a2m_stack_expired(rec, a2m_clock_now_ms()))) {
		a2m_record_free(rec);
		rec = NULL;
	}
	*out = rec;
	return 0;
}

int a2m_stack_promote(a2m_stack *st, const a2m_scope *scope, const char *const *ids,
		      size_t n_ids, const char *tier, double salience_add,
		      int64_t *promoted, a2m_error *err)
{
	*promoted = 0;
	if (!a2m_tiers_find(&st->cfg.tiers, tier)) {
		a2m_error_set(err, A2M_UNKNOWN_TIER, "no tier named '%s'", tier);
		return a2m_error_data(err, json_pack("{ss}", "tier", tier));
	}
	const char **moved_ids = calloc(n_ids + 1, sizeof *moved_ids);
	/* Who could recall each moved record where it now is; the owners are
	** copied because the records are freed as the loop goes. */
	a2m_audience *aud = calloc(n_ids + 1, sizeof *aud);
	const a2m_tier *dest = a2m_tiers_find(&st->cfg.tiers, tier);
	if (!moved_ids || !aud) {
		free(moved_ids);
		free(aud);
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	int rc = a2m_stack_begin(st, err);
	size_t nm = 0;
	for (size_t i = 0; i < n_ids && !rc; i++) {
		a2m_record *rec = NULL;
		if ((rc = get_visible(st, scope, ids[i], &rec, err)))
			break;
		if (rec && !a2m_stack_same_str(rec->tier, tier)) {
			int64_t n = 0;
			rc = a2m_stack_move_unit(st, rec, tier, salience_add, &n, err);
			if (!rc && n) {
				aud[nm].shared = dest && dest->shared;
				if (rec->owner && !(aud[nm].owner = strdup(rec->owner)))
					rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
				moved_ids[nm++] = ids[i];
				(*promoted)++;
			}
		}
		a2m_record_free(rec);
	}
	/* One event per call, naming the ids moved (spec §4.12); the records
	** moved may now be owed a vector. */
	a2m_change c = {.kind = A2M_CHANGE_PROMOTED, .ids = moved_ids, .audience = aud,
			.n_ids = nm, .tier = tier, .owner = scope ? scope->owner : NULL,
			.shared = !scope || !scope->scoped};
	a2m_finish f = {.rebalance = A2M_REBALANCE_CAPACITY, .changes = &c, .n_changes = nm != 0,
			.owes = nm != 0};
	if ((rc = a2m_stack_finish(st, rc, &f, err)) != 0)
		*promoted = 0;
	for (size_t i = 0; i < nm; i++)
		free((char *)aud[i].owner);
	free(aud);
	free(moved_ids);
	return rc;
}

int a2m_stack_consolidate(a2m_stack *st, a2m_consolidation *out, int64_t *counts,
			  a2m_error *err)
{
	/* One event per consolidate call, however much moved (§4.12); then
	** whatever is owed a vector, moved or not. */
	a2m_finish f = {.rebalance = A2M_REBALANCE_ALL, .cons_event = A2M_CONS_ALWAYS, .owes = 1,
			.counts = counts};
	int rc = a2m_stack_finish(st, a2m_stack_begin(st, err), &f, err);
	*out = rc ? (a2m_consolidation){0} : f.cons;
	return rc;
}

int a2m_stack_reinforce(a2m_stack *st, const a2m_scope *scope, const char *const *ids,
			size_t n_ids, double amount, int64_t *reinforced, a2m_error *err)
{
	*reinforced = 0;
	int rc = a2m_stack_begin(st, err);
	for (size_t i = 0; i < n_ids && !rc; i++) {
		a2m_record *rec = NULL;
		if ((rc = get_visible(st, scope, ids[i], &rec, err)) || !rec)
			continue;
		rec->salience = a2m_salience_add(rec->salience, amount);
		if ((rc = st->store->ops->update(st->store, rec)))
			a2m_stack_store_error(st, err, rc);
		else
			(*reinforced)++;
		a2m_record_free(rec);
	}
	a2m_finish f = {.rebalance = A2M_REBALANCE_NONE};
	if ((rc = a2m_stack_finish(st, rc, &f, err)) != 0)
		*reinforced = 0;
	return rc;
}

/*
** Promotes the hits that have earned it (DECISIONS 006), in one
** transaction which also writes every waiting touch
** (a2m_stack_begin_relaxed) and this recall's own, so that a failed write
** leaves nothing of the recall behind; then refreshes the hits from the
** store.
*/
static int promote_hits(a2m_stack *st, a2m_hit *hits, size_t n, int64_t now,
			a2m_error *err)
{
	a2m_store *s = st->store;
	/* Access counts are bookkeeping, not data a client was promised: they
	** need not cost a synchronous flush. */
	int rc = a2m_stack_begin_relaxed(st, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++)
		if ((rc = s->ops->touch(s, hits[i].rec->seq, 1, now)))
			a2m_stack_store_error(st, err, rc);
	a2m_finish f = {0};
	const char **promoted = calloc(n ? n : 1, sizeof *promoted);
	const char **dests = calloc(n ? n : 1, sizeof *dests);
	a2m_audience *aud = calloc(n ? n : 1, sizeof *aud);
	a2m_change *events = calloc(n ? n : 1, sizeof *events);
	size_t np = 0, ne = 0;
	if ((!promoted || !dests || !aud || !events) && !rc)
		rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	for (size_t i = 0; i < n && !rc; i++) {
		const a2m_record *r = hits[i].rec;
		const char *to_name;
		if ((rc = a2m_stack_promote_earned(st, r, &to_name, &f.cons, err)) || !to_name)
			continue;
		const a2m_tier *to = a2m_tiers_find(&st->cfg.tiers, to_name);
		aud[np] = (a2m_audience){r->owner, to && to->shared};
		dests[np] = to_name;
		promoted[np++] = r->id;
	}
	/* promoted[] points into the hits' records: the events are reported
	** before the refresh below. One event per destination, so each names
	** the tier its ids went to; the audience lets each reader see only the
	** ids it could recall. */
	for (size_t first = 0, end; first < np; first = end) {
		end = first;
		for (size_t k = first; k < np; k++) {
			if (strcmp(dests[k], dests[first]) != 0)
				continue;
			/* Swap k into the run [first, end): the three arrays stay aligned. */
			const char *id = promoted[k], *to = dests[k];
			a2m_audience a = aud[k];
			promoted[k] = promoted[end];
			dests[k] = dests[end];
			aud[k] = aud[end];
			promoted[end] = id;
			dests[end] = to;
			aud[end] = a;
			end++;
		}
		events[ne++] = (a2m_change){.kind = A2M_CHANGE_PROMOTED, .at = now,
					    .ids = promoted + first, .audience = aud + first,
					    .n_ids = end - first, .tier = dests[first], .shared = 1};
	}
	/* Capacity only where a promotion landed. A recall does not wait for
	** the embedder: what the promotion left owed is embedded by the next
	** write, or the next recall that embeds its query (embed_query). */
	f.rebalance = f.cons.promoted ? A2M_REBALANCE_CAPACITY : A2M_REBALANCE_NONE;
	f.changes = events;
	f.n_changes = ne;
	f.no_embed = 1;
	rc = a2m_stack_finish(st, rc, &f, err);
	free(events);
	free(promoted);
	free(dests);
	free(aud);
	if (rc)
		return rc;
	/* Report what the client now holds as the stored truth. */
	for (size_t i = 0; i < n; i++) {
		a2m_record *cur = NULL;
		if (s->ops->get(s, hits[i].rec->id, &cur) == 0 && cur) {
			a2m_record_free(hits[i].rec);
			hits[i].rec = cur;
		}
	}
	return 0;
}

/* Recall's touch, and the promotions it earns (stack_internal.h). */
int a2m_stack_touch(a2m_stack *st, a2m_hit *hits, size_t n, int shared, a2m_error *err)
{
	int64_t now = a2m_clock_now_ms();
	int earned = 0, due = 0;
	for (size_t i = 0; i < n; i++) {
		/* r came through a2m_stack_touched: earlier touches are in it. */
		const a2m_record *r = hits[i].rec;
		earned |= a2m_stack_promotion_earned(a2m_stack_tier_of(st, r), r->access_count + 1);
	}
	/* A shared read writes nothing: a promotion or a due flush asks for
	** the exclusive lock, before anything is counted. */
	if (shared && earned)
		return a2m_stack_need_exclusive(err);
	/* A recall that fails leaves nothing behind: its touches are counted
	** only once nothing can fail it (a promotion writes them itself). */
	int rc = earned ? 0 : a2m_touches_note(&st->touches, hits, n, now, shared, &due);
	if (rc > 0)
		return a2m_stack_need_exclusive(err);
	if (rc < 0)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	for (size_t i = 0; i < n; i++) {
		a2m_record *r = hits[i].rec;
		r->access_count++;
		if (now > r->accessed_at)
			r->accessed_at = now;
	}
	if (earned)
		return promote_hits(st, hits, n, now, err);
	/* A buffer that cannot be written now is not the recall's failure (a
	** full disk must not stop reads): the touches wait for the next write,
	** as after a shared recall (server/handle.c, settle). */
	if (due && !shared && a2m_stack_touches_flush(st, 0, err) != 0) {
		a2m_log(A2M_LOG_WARN, "writing recall's access counts: %s", err->message);
		a2m_error_clear(err);
	}
	return 0;
}
