/*
** move.c — the policy at the router, and how a record crosses servers.
**
** The rules are the stack's, applied to what the backends hold
** (stack/policy.h): capacity counted per tier (per session in a
** per-session tier) after every write, the weakest units spilled whole to
** spill_to or dropped, promotion after promote_after recalls run first,
** session close flushing working memory and letting every tier below
** apply its rules.
**
** A move between two backends (DECISIONS 010) writes the records to the
** destination with their original ids and every field (remember's import
** form: created_at, access count and times, revision, vector...),
** verifies each field of what the destination now holds, and only then
** forgets them at the source. No transaction spans two servers, so each
** move is first written to a journal (one JSON line, fsync'd) and marked
** done after the delete: a router killed at any step leaves at worst a
** copy on both sides, and at its next start finishes every move the
** journal holds unfinished (import again, idempotent by id; verify;
** delete). Between two tiers of one backend a move is that backend's own
** memory/promote, one transaction.
*/
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "federate/fed.h"
#include "protocol/protocol.h"
#include "stack/policy.h"
#include "util/clock.h"
#include "util/grow.h"
#include "util/log.h"

void fed_arrive(federation *f, fed_arrivals *a, size_t ti, const char *session)
{
	const a2m_tier *t = &f->layout.tiers[ti];
	if (t->capacity <= 0)
		return;
	if (!t->per_session)
		session = NULL;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].ti == ti && (a->v[i].session == session ||
		    (a->v[i].session && session && strcmp(a->v[i].session, session) == 0)))
			return;
	if (a2m_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v)) {
		a->all = 1;
		return;
	}
	a->v[a->n].ti = ti;
	a->v[a->n].session = session ? strdup(session) : NULL;
	if (session && !a->v[a->n].session) {
		a->all = 1;
		return;
	}
	a->n++;
}

void fed_arrivals_free(fed_arrivals *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i].session);
	free(a->v);
	memset(a, 0, sizeof *a);
}

/* ---- the journal ------------------------------------------------------------ */

/* Appends one line and makes it durable before the step it announces. */
static int journal_put(federation *f, json_t *line, a2m_error *err)
{
	if (!f->journal && !(f->journal = fopen(f->journal_path, "a")))
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "cannot open the move journal %s",
				     f->journal_path);
	char *text = json_dumps(line, JSON_COMPACT);
	int ok = text && fprintf(f->journal, "%s\n", text) > 0 && fflush(f->journal) == 0 &&
		 fsync(fileno(f->journal)) == 0;
	free(text);
	return ok ? 0 : a2m_error_set(err, A2M_INTERNAL_ERROR, "cannot write the move journal");
}

/*
** Tests: dies here when told to (A2M_TEST_FEDERATE_CRASH_AT,
** docs/FEDERATION.md). Only the test build of the binary (build/tests/
** a2m-hooks) has the switch: the release a2m ignores the variable.
*/
static void step(federation *f, const char *name)
{
#ifdef A2M_TEST_HOOKS
	if (f->crash_at && strcmp(f->crash_at, name) == 0) {
		a2m_log(A2M_LOG_WARN, "crashing at '%s', as A2M_TEST_FEDERATE_CRASH_AT asks", name);
		raise(SIGKILL);
	}
#else
	(void)f;
	(void)name;
#endif
}

/* ---- moving records --------------------------------------------------------- */

/* The capability a record field belongs to (0: core). */
static unsigned field_cap(const char *k)
{
	static const struct {
		const char *name;
		unsigned    cap;
	} map[] = {{"owner", A2M_CAP_SCOPES}, {"session", A2M_CAP_SESSIONS},
		   {"key", A2M_CAP_KEYS}, {"revision", A2M_CAP_KEYS},
		   {"embedding", A2M_CAP_EMBEDDINGS}, {"uri", A2M_CAP_EXTERNAL},
		   {"media_type", A2M_CAP_EXTERNAL}, {"salience", A2M_CAP_SALIENCE},
		   {"access_count", A2M_CAP_SALIENCE}, {"accessed_at", A2M_CAP_SALIENCE}};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strcmp(map[i].name, k) == 0)
			return map[i].cap;
	return 0;
}

/*
** Whether the destination's copy d holds every field of s as sent. A field
** of a capability the destination does not declare to the router (owner,
** on an HTTP server without tokens) is kept by the import but not shown,
** so cannot be compared.
*/
static int same_record(const json_t *s, const json_t *d, unsigned dest_caps)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)s, k, v) {
		if (strcmp(k, "score") == 0 || (field_cap(k) && !(dest_caps & field_cap(k))))
			continue;
		const json_t *w = json_object_get(d, k);
		if (strcmp(k, "salience") == 0) {
			double a = json_number_value(v), b = json_number_value(w);
			if (!w || fabs(a - b) > 1e-9 * (fabs(a) > 1 ? fabs(a) : 1))
				return 0;
		} else if (!w || !json_equal(v, w)) {
			return 0;
		}
	}
	return 1;
}

/* The records of ids in tier ti, whole: a new array. */
static int records_in(federation *f, size_t ti, const json_t *ids, json_t **out, a2m_error *err)
{
	json_t *p = json_pack("{ss s{sO} sb sb}", "tier", f->layout.tiers[ti].name, "where", "id",
			      ids, "embeddings", 1, "all_owners", 1), *res = NULL;
	int rc = fed_backend_call(fed_tier_backend(f, ti), "memory/timeline", p, 0, &res, err);
	json_decref(p);
	*out = rc ? NULL : json_incref(json_object_get(res, "records"));
	json_decref(res);
	return rc;
}

/*
** Writes srcs (records of tier from, whole) to tier to on its backend,
** verifies, deletes them at the source. Journaled by the caller.
*/
static int cross(federation *f, json_t *srcs, size_t from, size_t to, double add,
		 a2m_error *err)
{
	json_t *sent = json_array(), *ids = json_array(), *res = NULL;
	size_t i;
	json_t *r;
	json_array_foreach(srcs, i, r) {
		json_t *c = json_deep_copy(r);
		json_object_del(c, "score");
		json_object_set_new(c, "tier", json_string(f->layout.tiers[to].name));
		if (add != 0 && json_is_number(json_object_get(c, "salience")))
			json_object_set_new(c, "salience", json_real(
				json_number_value(json_object_get(c, "salience")) + add));
		json_array_append_new(sent, c);
		json_array_append(ids, json_object_get(r, "id"));
	}
	json_t *p = json_pack("{sO sb}", "records", sent, "import", 1);
	int rc = fed_backend_call(fed_tier_backend(f, to), "memory/remember", p, 0, &res, err);
	json_decref(p);
	json_decref(res);
	step(f, "written");
	json_t *back = NULL;
	if (!rc)
		rc = records_in(f, to, ids, &back, err);
	json_array_foreach(sent, i, r) {
		size_t k;
		json_t *d;
		int ok = 0;
		json_array_foreach(back, k, d)
			if (json_equal(json_object_get(d, "id"), json_object_get(r, "id")))
				ok = same_record(r, d, fed_tier_backend(f, to)->caps);
		if (!rc && !ok)
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "moving %s to '%s': the copy "
					   "written differs from the record; the record stays where "
					   "it was", json_string_value(json_object_get(r, "id")),
					   f->layout.tiers[to].name);
	}
	json_decref(back);
	step(f, "verified");
	if (!rc) {
		p = json_pack("{sO ss sb}", "ids", ids, "tier", f->layout.tiers[from].name,
			      "all_owners", 1);
		rc = fed_backend_call(fed_tier_backend(f, from), "memory/forget", p, 0, &res, err);
		json_decref(p);
		json_decref(res);
		step(f, "deleted");
	}
	json_decref(sent);
	json_decref(ids);
	return rc;
}

int fed_move_unit(federation *f, const json_t *rec, size_t from, int to, double salience_add,
		  fed_arrivals *arr, int64_t *n, a2m_error *err)
{
	json_t *members = NULL, *res = NULL;
	const char *group = json_string_value(json_object_get(rec, "group"));
	int rc = 0;
	*n = 0;
	/* A group leaves its tier whole (spec §3.4). */
	if (group)
		rc = fed_tier_records(f, from, 0, NULL, group, &members, err);
	else
		members = json_pack("[O]", rec);
	if (rc)
		return rc;
	json_t *ids = json_array();
	size_t i;
	json_t *r;
	json_array_foreach(members, i, r)
		json_array_append(ids, json_object_get(r, "id"));
	fed_backend *src = fed_tier_backend(f, from);
	if (to < 0) {
		json_t *p = json_pack("{sO ss sb}", "ids", ids, "tier", f->layout.tiers[from].name,
				      "all_owners", 1);
		rc = fed_backend_call(src, "memory/forget", p, 0, &res, err);
		*n = rc ? 0 : json_integer_value(json_object_get(res, "forgotten"));
		json_decref(p);
	} else if (fed_tier_backend(f, (size_t)to) == src) {
		json_t *p = json_pack("{sO ss sf sb}", "ids", ids, "tier", f->layout.tiers[to].name,
				      "salience", salience_add, "all_owners", 1);
		rc = fed_backend_call(src, "memory/promote", p, 0, &res, err);
		*n = rc ? 0 : json_integer_value(json_object_get(res, "promoted"));
		json_decref(p);
	} else {
		uint64_t seq = ++f->next_move;
		json_t *line = json_pack("{sI sO ss ss sf}", "move", (json_int_t)seq, "ids", ids,
					 "from", f->layout.tiers[from].name, "to",
					 f->layout.tiers[to].name, "add", salience_add);
		rc = journal_put(f, line, err);
		json_decref(line);
		step(f, "journaled");
		if (!rc)
			rc = cross(f, members, from, (size_t)to, salience_add, err);
		if (!rc) {
			line = json_pack("{sI}", "done", (json_int_t)seq);
			rc = journal_put(f, line, err);
			json_decref(line);
			*n = (int64_t)json_array_size(members);
		}
	}
	if (!rc && to >= 0)
		json_array_foreach(members, i, r)
			fed_arrive(f, arr, (size_t)to,
				   json_string_value(json_object_get(r, "session")));
	json_decref(res);
	json_decref(ids);
	json_decref(members);
	return rc;
}

int fed_journal_recover(federation *f, char *errbuf, size_t errlen)
{
	FILE *in = fopen(f->journal_path, "r");
	if (!in)
		return 0;  /* no journal yet: nothing was ever in progress */
	json_t *open = json_object();
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, in) > 0) {
		json_t *v = json_loads(line, 0, NULL);
		char key[32];
		if (!v)
			continue;  /* a line cut short by the crash: its move never began */
		json_int_t seq = json_integer_value(json_object_get(v, "move"));
		if (seq) {
			snprintf(key, sizeof key, "%lld", (long long)seq);
			json_object_set(open, key, v);
			if ((uint64_t)seq > f->next_move)
				f->next_move = (uint64_t)seq;
		} else if ((seq = json_integer_value(json_object_get(v, "done")))) {
			snprintf(key, sizeof key, "%lld", (long long)seq);
			json_object_del(open, key);
		}
		json_decref(v);
	}
	free(line);
	fclose(in);
	int rc = 0;
	const char *k;
	json_t *m;
	a2m_error err = {0};
	json_object_foreach(open, k, m) {
		int from = a2m_tiers_index(&f->layout, json_string_value(json_object_get(m, "from")) ?: "");
		int to = a2m_tiers_index(&f->layout, json_string_value(json_object_get(m, "to")) ?: "");
		json_t *ids = json_object_get(m, "ids"), *left = NULL;
		if (from < 0 || to < 0) {
			a2m_log(A2M_LOG_WARN, "move %s names a tier this layout lacks; left as it is", k);
			continue;
		}
		/* What is still at the source goes again: written (idempotent by
		** id), verified, deleted. Nothing there: it was done. */
		if ((rc = records_in(f, (size_t)from, ids, &left, &err)) == 0 && json_array_size(left))
			rc = cross(f, left, (size_t)from, (size_t)to,
				   json_number_value(json_object_get(m, "add")), &err);
		if (!rc)
			a2m_log(A2M_LOG_INFO, "finished move %s (%zu records)", k, json_array_size(left));
		json_decref(left);
		if (rc) {
			snprintf(errbuf, errlen, "finishing an interrupted move of the journal %s: %s",
				 f->journal_path, err.message);
			break;
		}
	}
	json_decref(open);
	a2m_error_clear(&err);
	if (!rc && truncate(f->journal_path, 0) != 0) {
		snprintf(errbuf, errlen, "cannot empty the move journal %s", f->journal_path);
		rc = -1;
	}
	return rc ? -1 : 0;
}

/* ---- capacity and promotion ------------------------------------------------- */

/* Spills bucket (ti, session) while it is over capacity. */
static int enforce(federation *f, size_t ti, int by_session, const char *session,
		   fed_arrivals *arr, fed_cons *cons, a2m_error *err)
{
	const a2m_tier *t = &f->layout.tiers[ti];
	json_t *recs = NULL;
	int rc = fed_tier_records(f, ti, by_session, session, NULL, &recs, err);
	size_t n = json_array_size(recs);
	if (rc || (int64_t)n <= t->capacity) {
		json_decref(recs);
		return rc;
	}
	a2m_record **v = calloc(n, sizeof *v);
	char why[256];
	for (size_t i = 0; v && i < n && !rc; i++) {
		if (!(v[i] = a2m_record_new()) ||
		    a2m_record_from_wire(json_array_get(recs, i), v[i], why, sizeof why) != 0)
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "a backend's record: %s", why);
		else
			v[i]->seq = (int64_t)i;  /* timeline's order is the store's */
	}
	a2m_spill_unit *units = NULL;
	size_t nu = 0, leave = 0;
	if (!v || (!rc && a2m_stack_spill_plan(t, v, n, a2m_clock_now_ms(), &units, &nu, &leave)))
		rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	int dest = t->spill_to ? a2m_tiers_index(&f->layout, t->spill_to) : -1;
	for (size_t u = 0; u < leave && !rc; u++) {
		int64_t moved = 0;
		json_t *first = json_array_get(recs, (size_t)units[u].first->seq);
		rc = fed_move_unit(f, first, ti, dest, 0, arr, &moved, err);
		if (dest >= 0)
			cons->moved += moved;
		else
			cons->dropped += moved;
	}
	free(units);
	if (v)
		a2m_record_array_free(v, n);
	json_decref(recs);
	return rc;
}

/*
** Promotes each record of recs (as read, touches counted) that earned it,
** noting arrivals in arr and counting in cons->promoted. A group promoted
** with one member is not moved again for another.
*/
static int promote_recs(federation *f, const json_t *recs, fed_arrivals *arr, fed_cons *cons,
			a2m_error *err)
{
	json_t *gone = json_object();
	size_t i;
	json_t *r;
	int rc = 0;
	json_array_foreach(recs, i, r) {
		int ti = fed_tier_of(f, r);
		const char *id = json_string_value(json_object_get(r, "id"));
		if (ti < 0 || !id || json_object_get(gone, id))
			continue;
		const a2m_tier *t = &f->layout.tiers[ti];
		if (!a2m_stack_promotion_earned(t, json_integer_value(json_object_get(r, "access_count"))))
			continue;
		int to = a2m_tiers_index(&f->layout, t->promote_to);
		/* Read again whole: recall's copy may lack the vector, and an
		** earlier group move may have taken it. */
		json_t *ids = json_pack("[s]", id), *now = NULL;
		rc = records_in(f, (size_t)ti, ids, &now, err);
		json_decref(ids);
		if (!rc && json_array_size(now)) {
			int64_t moved = 0;
			rc = fed_move_unit(f, json_array_get(now, 0), (size_t)ti, to, 0, arr, &moved, err);
			cons->promoted += moved;
			const char *g = json_string_value(json_object_get(r, "group"));
			json_object_set_new(gone, id, json_true());
			size_t k;
			json_t *o;
			json_array_foreach(recs, k, o)
				if (g && json_is_string(json_object_get(o, "group")) &&
				    strcmp(json_string_value(json_object_get(o, "group")), g) == 0)
					json_object_set_new(gone, json_string_value(json_object_get(o, "id")),
							    json_true());
		}
		json_decref(now);
		if (rc)
			break;
	}
	json_decref(gone);
	return rc;
}

/* Promotes, in every tier that promotes, each record that earned it. */
static int promote_all(federation *f, fed_arrivals *arr, fed_cons *cons, a2m_error *err)
{
	int rc = 0;
	for (size_t ti = 0; ti < f->layout.n && !rc; ti++) {
		const a2m_tier *t = &f->layout.tiers[ti];
		if (!t->promote_to || t->promote_after <= 0)
			continue;
		json_t *recs = NULL;
		if ((rc = fed_tier_records(f, ti, 0, NULL, NULL, &recs, err)))
			break;
		rc = promote_recs(f, recs, arr, cons, err);
		json_decref(recs);
	}
	return rc;
}

static void cons_event(federation *f, const fed_cons *cons);

int fed_promote_earned(federation *f, const json_t *recs, a2m_error *err)
{
	fed_arrivals arr = {0};
	fed_cons cons = {0};
	int rc = promote_recs(f, recs, &arr, &cons, err);
	if (!rc)
		rc = fed_rebalance(f, 0, &arr, &cons, err);
	if (!rc && (cons.promoted || cons.moved || cons.dropped))
		cons_event(f, &cons);
	fed_arrivals_free(&arr);
	return rc;
}

int fed_rebalance(federation *f, int with_promotion, fed_arrivals *a, fed_cons *cons,
		  a2m_error *err)
{
	int rc = 0;
	if (with_promotion) {
		/* Promotion first, or what keeps proving useful is displaced by
		** the volume arriving above it (DECISIONS 006). */
		rc = promote_all(f, a, cons, err);
		if (rc)
			return rc;
	}
	if (a->all) {
		a->all = 0;
		for (size_t ti = 0; ti < f->layout.n; ti++) {
			const a2m_tier *t = &f->layout.tiers[ti];
			if (t->capacity <= 0)
				continue;
			if (!t->per_session) {
				fed_arrive(f, a, ti, NULL);
				continue;
			}
			json_t *recs = NULL;
			if ((rc = fed_tier_records(f, ti, 0, NULL, NULL, &recs, err)))
				return rc;
			size_t i;
			json_t *r;
			json_array_foreach(recs, i, r)
				fed_arrive(f, a, ti, json_string_value(json_object_get(r, "session")));
			json_decref(recs);
		}
	}
	/* A spill notes the tier below; the chain has no cycle, so this ends. */
	while (a->n && !rc) {
		fed_arrival cur = a->v[0];
		memmove(a->v, a->v + 1, (a->n - 1) * sizeof *a->v);
		a->n--;
		rc = enforce(f, cur.ti, f->layout.tiers[cur.ti].per_session, cur.session, a, cons, err);
		free(cur.session);
	}
	return rc;
}

/* ---- the methods ---------------------------------------------------------- */

static json_t *cons_result(fed_call *c, const fed_cons *cons, a2m_error *err)
{
	json_t *counts = fed_counts(c, err);
	return counts ? json_pack("{sI sI sI sI so}", "moved", (json_int_t)cons->moved, "promoted",
				  (json_int_t)cons->promoted, "dropped", (json_int_t)cons->dropped,
				  "summarized", (json_int_t)0, "counts", counts)
		      : NULL;
}

static void cons_event(federation *f, const fed_cons *cons)
{
	a2m_change ch = {.kind = A2M_CHANGE_CONSOLIDATED, .at = a2m_clock_now_ms(),
			 .cons = {cons->moved, cons->promoted, cons->dropped, 0}, .shared = 1};
	fed_event(f, &ch);
}

int fed_promote(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	federation *f = c->f;
	const json_t *ids = json_object_get(params, "ids");
	const json_t *tier = json_object_get(params, "tier");
	const json_t *sal = json_object_get(params, "salience");
	if (!json_is_array(ids))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "ids is required (an array of strings)");
	if (!json_is_string(tier))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "tier is required (a string)");
	if (sal && !json_is_null(sal) && !json_is_number(sal))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "salience must be a number");
	int to = a2m_tiers_index(&f->layout, json_string_value(tier));
	if (to < 0) {
		a2m_error_set(err, A2M_UNKNOWN_TIER, "no tier named '%s'", json_string_value(tier));
		return a2m_error_data(err, json_pack("{sO}", "tier", tier));
	}
	json_t *found = NULL;
	int rc = fed_lookup(f, ids, 0, &found, err);
	int64_t promoted = 0;
	fed_arrivals arr = {0};
	json_t *moved = json_array(), *gone = json_object();
	size_t i;
	json_t *r;
	json_array_foreach(found, i, r) {
		int ti = fed_tier_of(f, r);
		const char *id = json_string_value(json_object_get(r, "id"));
		if (rc || ti < 0 || ti == to || json_object_get(gone, id))
			continue;
		if (c->scoped && !f->layout.tiers[ti].shared) {
			const char *o = json_string_value(json_object_get(r, "owner"));
			if (!o != !c->owner || (o && strcmp(o, c->owner)))
				continue;  /* not the caller's to move */
		}
		int64_t n = 0;
		rc = fed_move_unit(f, r, (size_t)ti, to, json_number_value(sal), &arr, &n, err);
		promoted += n;
		json_array_append(moved, json_object_get(r, "id"));
		json_object_set_new(gone, id, json_true());
	}
	fed_cons cons = {0};
	if (!rc && json_array_size(moved)) {
		const char **v = calloc(json_array_size(moved), sizeof *v);
		for (i = 0; v && i < json_array_size(moved); i++)
			v[i] = json_string_value(json_array_get(moved, i));
		a2m_change ch = {.kind = A2M_CHANGE_PROMOTED, .at = a2m_clock_now_ms(), .ids = v,
				 .n_ids = json_array_size(moved), .tier = f->layout.tiers[to].name,
				 .owner = c->owner, .shared = !c->scoped};
		fed_event(f, &ch);
		free(v);
		rc = fed_rebalance(f, 0, &arr, &cons, err);
		if (!rc && (cons.moved || cons.dropped))
			cons_event(f, &cons);
	}
	if (!rc)
		*result = json_pack("{sI}", "promoted", (json_int_t)promoted);
	fed_arrivals_free(&arr);
	json_decref(found);
	json_decref(moved);
	json_decref(gone);
	return rc;
}

int fed_consolidate(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	(void)params;
	fed_arrivals arr = {.all = 1};
	fed_cons cons = {0};
	int rc = fed_rebalance(c->f, 1, &arr, &cons, err);
	fed_arrivals_free(&arr);
	if (rc)
		return rc;
	cons_event(c->f, &cons);
	*result = cons_result(c, &cons, err);
	return *result ? 0 : err->code ? err->code : A2M_INTERNAL_ERROR;
}

int fed_session_close(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	federation *f = c->f;
	const json_t *s = json_object_get(params, "session");
	if (!json_is_string(s) || !json_string_length(s))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "session is required (a non-empty string)");
	const char *session = json_string_value(s);
	fed_arrivals arr = {0};
	int64_t flushed = 0;
	int rc = 0;
	/* A finished conversation leaves working memory now (spec §4.11). */
	for (size_t ti = 0; ti < f->layout.n && !rc; ti++) {
		const a2m_tier *t = &f->layout.tiers[ti];
		int working = t->per_session || strcmp(t->kind, "working") == 0;
		if (!working || !t->spill_to)
			continue;
		int to = a2m_tiers_index(&f->layout, t->spill_to);
		json_t *recs = NULL;
		if ((rc = fed_tier_records(f, ti, 1, session, NULL, &recs, err)))
			break;
		json_t *gone = json_object();
		size_t i;
		json_t *r;
		json_array_foreach(recs, i, r) {
			const char *id = json_string_value(json_object_get(r, "id"));
			const char *o = json_string_value(json_object_get(r, "owner"));
			if (rc || json_object_get(gone, id))
				continue;
			if (c->scoped && (!o != !c->owner || (o && strcmp(o, c->owner))))
				continue;
			int64_t n = 0;
			rc = fed_move_unit(f, r, ti, to, 0, &arr, &n, err);
			flushed += n;
			const char *g = json_string_value(json_object_get(r, "group"));
			size_t k;
			json_t *x;
			json_object_set_new(gone, id, json_true());
			json_array_foreach(recs, k, x)
				if (g && json_is_string(json_object_get(x, "group")) &&
				    strcmp(json_string_value(json_object_get(x, "group")), g) == 0)
					json_object_set_new(gone, json_string_value(json_object_get(x, "id")),
							    json_true());
		}
		json_decref(gone);
		json_decref(recs);
	}
	fed_cons cons = {0};
	/* Then every tier below applies its own rules to what arrived. */
	if (!rc)
		rc = fed_rebalance(f, 1, &arr, &cons, err);
	fed_arrivals_free(&arr);
	if (rc)
		return rc;
	cons_event(f, &cons);
	a2m_change ch = {.kind = A2M_CHANGE_SESSION_CLOSED, .at = a2m_clock_now_ms(),
			 .session = session, .owner = c->owner, .shared = !c->scoped};
	fed_event(f, &ch);
	*result = cons_result(c, &cons, err);
	if (!*result)
		return err->code ? err->code : A2M_INTERNAL_ERROR;
	json_object_set_new(*result, "closed", json_string(session));
	json_object_set_new(*result, "flushed", json_integer(flushed));
	return 0;
}
