/*
** write.c — the router's writes: remember routed to the backend of each
** record's tier (ids assigned by the router, client ids kept idempotent
** across every backend, an occupied key replaced where it lives, a dedup
** tier's id-less write left to its backend to find a duplicate of), forget
** and reinforce fanned out, summarize over records of any tier. Every
** write then runs the policy's capacity pass (move.c) and reports its
** events in the router's log.
**
** A batch spanning several backends cannot be one transaction: the
** router checks what it can before writing anything, writes backend by
** backend, and when one refuses, forgets what the others had just created
** and returns the error, so no partial ids are ever answered (spec §4.2;
** a key replacement already made on another backend stands, which
** docs/FEDERATION.md says).
*/
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compose/summary.h"
#include "federate/fed.h"
#include "protocol/protocol.h"
#include "util/clock.h"
#include "util/text.h"

void fed_written_events(federation *f, const json_t *recs)
{
	size_t i;
	json_t *r;
	int64_t now = a2m_clock_now_ms();
	json_array_foreach(recs, i, r) {
		a2m_record rec = {0};
		int ti = fed_tier_of(f, r);
		rec.id = (char *)json_string_value(json_object_get(r, "id"));
		rec.tier = (char *)json_string_value(json_object_get(r, "tier"));
		rec.session = (char *)json_string_value(json_object_get(r, "session"));
		rec.key = (char *)json_string_value(json_object_get(r, "key"));
		rec.revision = json_integer_value(json_object_get(r, "revision"));
		const char *owner = json_string_value(json_object_get(r, "owner"));
		a2m_change c = {.kind = A2M_CHANGE_WRITTEN, .at = now, .rec = &rec, .owner = owner,
				.shared = ti >= 0 && f->layout.tiers[ti].shared};
		fed_event(f, &c);
	}
}

/* What one record of a batch became. */
typedef struct plan {
	json_t *rec;      /* the record as sent to its backend (owned) */
	int     ti;       /* its tier */
	int     skip;     /* its id exists already: nothing written */
	int     created;  /* written new: forgotten again if the batch fails */
	int     named;    /* the caller named its tier */
	int     dedup;    /* x-dedup may find it a duplicate: sent alone, without an id */
	int     repeated; /* it was: its id is the record it refreshed, nothing written */
	json_int_t revision;
} plan;

/* Checks one record and places it (tier, id). */
static int place(fed_call *c, json_t *in, size_t i, plan *p, a2m_error *err)
{
	federation *f = c->f;
	if (!json_is_object(in))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "records[%zu] must be an object", i);
	const json_t *content = json_object_get(in, "content");
	int pointer = (c->caps & A2M_CAP_EXTERNAL) && json_is_string(json_object_get(in, "uri"));
	if (!content && !pointer)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "records[%zu].content is required", i);
	const json_t *tier = json_object_get(in, "tier");
	if (tier && !json_is_null(tier) && !json_is_string(tier))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "records[%zu].tier must be a string", i);
	p->ti = json_is_string(tier) ? a2m_tiers_index(&f->layout, json_string_value(tier))
				     : (int)f->layout.default_tier;
	if (p->ti < 0) {
		a2m_error_set(err, A2M_UNKNOWN_TIER, "records[%zu].tier: no tier named '%s'", i,
			      json_string_value(tier));
		return a2m_error_data(err, json_pack("{sO}", "tier", tier));
	}
	if (fed_tier_backend(f, (size_t)p->ti)->read_only)
		return a2m_error_set(err, A2M_READ_ONLY, "records[%zu]: tier '%s' is read-only", i,
				     f->layout.tiers[p->ti].name);
	const json_t *id = json_object_get(in, "id");
	if (id && !json_is_null(id) && (!json_is_string(id) || !json_string_length(id)))
		return a2m_error_set(err, A2M_INVALID_PARAMS,
				     "records[%zu].id must be a non-empty string", i);
	const json_t *owner = json_object_get(in, "owner");
	if (c->network && (c->caps & A2M_CAP_SCOPES) && json_is_string(owner) &&
	    strcmp(json_string_value(owner), c->principal) != 0)
		return a2m_error_set(err, A2M_SCOPE_DENIED, "records[%zu].owner is not the "
				     "authenticated principal", i);
	const json_t *vec = json_object_get(in, "embedding");
	int numbers = json_is_array(vec);
	for (size_t k = 0; numbers && k < json_array_size(vec); k++)
		numbers = json_is_number(json_array_get(vec, k));
	if ((c->caps & A2M_CAP_EMBEDDINGS) && numbers && json_array_size(vec)) {
		int64_t w = (int64_t)json_array_size(vec);
		if (f->dims && w != f->dims) {
			a2m_error_set(err, A2M_EMBEDDING_MISMATCH, "records[%zu].embedding has %lld "
				      "dimensions; this memory's are %lld", i, (long long)w,
				      (long long)f->dims);
			return a2m_error_data(err, json_pack("{sI sI}", "expected", (json_int_t)f->dims,
							     "got", (json_int_t)w));
		}
	}
	p->named = json_is_string(tier);
	p->rec = json_deep_copy(in);
	/* Fields of capabilities the router does not declare are ignored (§4.2). */
	static const struct {
		const char *field;
		unsigned    cap;
	} owned[] = {{"salience", A2M_CAP_SALIENCE}, {"owner", A2M_CAP_SCOPES},
		     {"session", A2M_CAP_SESSIONS}, {"key", A2M_CAP_KEYS},
		     {"embedding", A2M_CAP_EMBEDDINGS}, {"uri", A2M_CAP_EXTERNAL},
		     {"media_type", A2M_CAP_EXTERNAL},
		     /* A backend with x-expiry would honour them where the router
		      ** says nothing of expiry: hidden records, no event. */
		     {"expires_at", A2M_CAP_X_EXPIRY}, {"ttl_seconds", A2M_CAP_X_EXPIRY}};
	for (size_t k = 0; k < sizeof owned / sizeof owned[0]; k++)
		if (!(c->caps & owned[k].cap))
			json_object_del(p->rec, owned[k].field);
	json_object_set_new(p->rec, "tier", json_string(f->layout.tiers[p->ti].name));
	/* x-dedup: a write with neither id nor key landing in a dedup tier is
	** the backend's to find a duplicate of, and an id would stop it. */
	p->dedup = (c->caps & A2M_CAP_X_DEDUP) && f->layout.tiers[p->ti].dedup &&
		   !json_is_string(id) && !json_is_string(json_object_get(p->rec, "key"));
	if (!json_is_string(id) && !p->dedup) {
		char gen[A2M_ID_LEN];
		if (a2m_id_generate(a2m_clock_now_ms(), gen) != 0)
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "cannot make an id");
		json_object_set_new(p->rec, "id", json_string(gen));
	}
	return 0;
}

/* The owner a record is written for: its own, the call's default, the scope's. */
static const char *owner_of(const fed_call *c, const json_t *rec, const json_t *params)
{
	if (!(c->caps & A2M_CAP_SCOPES))
		return NULL;
	const char *o = json_string_value(json_object_get(rec, "owner"));
	if (!o)
		o = json_string_value(json_object_get(params, "owner"));
	return o ? o : c->owner;
}

/*
** An occupied key (spec §3.6) is replaced where it lives: the record goes
** to that backend, in the tier it is in unless it names one. A replacement
** naming a tier on another backend is written there with the old id,
** creation and counts, and the old one then forgotten.
*/
static int resolve_key(fed_call *c, const json_t *params, plan *p, a2m_error *err)
{
	federation *f = c->f;
	const char *key = json_string_value(json_object_get(p->rec, "key"));
	if (!key || !(c->caps & A2M_CAP_KEYS))
		return 0;
	const char *owner = owner_of(c, p->rec, params);
	json_t *q = json_pack("{ss sb}", "key", key, "embeddings", 1), *res = NULL;
	/* Keys are per owner (§3.6): looked up in the owner's scope. */
	fed_call inner = *c;
	inner.scoped = owner != NULL;
	inner.owner = owner;
	int rc = fed_fetch(&inner, q, &res, err);
	json_decref(q);
	json_t *old = rc ? NULL : json_object_get(res, "record");
	if (json_is_object(old)) {
		int at = fed_tier_of(f, old);
		int named = p->named;
		/* The backend replaces it itself (same id, next revision). */
		p->revision = json_integer_value(json_object_get(old, "revision")) + 1;
		if (at >= 0 && (!named || f->tier_backend[at] == f->tier_backend[p->ti])) {
			if (!named)
				p->ti = at;
			json_object_set_new(p->rec, "tier", json_string(f->layout.tiers[p->ti].name));
		} else if (at >= 0) {
			/* Across servers: the replacement carries the old record's
			** identity, and the old copy goes once it is written. */
			json_t *next = json_deep_copy(old);
			json_object_update(next, p->rec);
			json_object_set(next, "created_at", json_object_get(old, "created_at"));
			json_object_set_new(next, "revision", json_integer(p->revision));
			json_object_del(next, "score");
			json_t *imp = json_pack("{s[o] sb}", "records", next, "import", 1), *r2 = NULL;
			json_t *ids = json_pack("[O]", json_object_get(old, "id"));
			json_t *fg = json_pack("{so ss sb}", "ids", ids, "tier", f->layout.tiers[at].name,
					       "all_owners", 1);
			fed_backend *from = fed_tier_backend(f, (size_t)at);
			fed_backend *to = fed_tier_backend(f, (size_t)p->ti);
			if (!(rc = fed_backend_call(to, "memory/remember", imp, 0, &r2, err))) {
				json_decref(r2);
				rc = fed_backend_call(from, "memory/forget", fg, 0, &r2, err);
			}
			json_decref(r2);
			json_decref(imp);
			json_decref(fg);
			json_object_set(p->rec, "id", json_object_get(old, "id"));
			p->skip = 2;  /* written already */
		}
	}
	json_decref(res);
	return rc;
}

/*
** Sends the records p[idx[0..m)] to backend b in one remember and takes the
** ids it answers (a key it replaced keeps its id). A dedup write is sent
** alone (m = 1), so the answer's `deduplicated` says whether it repeated a
** live record: then its id is that record's, and nothing was created.
** Adds the answer's count to *repeated. Returns 0, or the backend's error.
*/
static int send_records(fed_call *c, const json_t *params, size_t b, plan *p, const size_t *idx,
			size_t m, int64_t *repeated, a2m_error *err)
{
	federation *f = c->f;
	static const char *const fwd[] = {"session", NULL};
	json_t *recs = json_array();
	for (size_t j = 0; j < m; j++)
		json_array_append(recs, p[idx[j]].rec);
	json_t *q = fed_params(c, params, fwd), *res = NULL;
	const char *def = c->caps & A2M_CAP_SCOPES
				  ? json_string_value(json_object_get(params, "owner")) : NULL;
	if (def || c->scoped)
		json_object_set_new(q, "owner", json_string(def ? def : c->owner));
	if (c->network && c->scoped)
		json_object_set_new(q, "owner", json_string(c->principal));
	json_object_set_new(q, "records", recs);
	int rc = fed_backend_call(&f->backends[b], "memory/remember", q, 0, &res, err);
	json_decref(q);
	json_int_t dup = rc ? 0 : json_integer_value(json_object_get(res, "deduplicated"));
	for (size_t j = 0; !rc && j < m; j++) {
		plan *pj = &p[idx[j]];
		json_t *id = json_array_get(json_object_get(res, "ids"), j);
		if (json_is_string(id))
			json_object_set(pj->rec, "id", id);
		else if (!json_is_string(json_object_get(pj->rec, "id")))
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "backend '%s' answered no id for "
					   "a record it wrote", f->backends[b].name);
		pj->repeated = !rc && pj->dedup && dup > 0;
		pj->created = !rc && !pj->revision && !pj->repeated;
	}
	if (!rc)
		*repeated += dup;
	json_decref(res);
	return rc;
}

int fed_remember(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	federation *f = c->f;
	json_t *in = json_object_get(params, "records");
	if (!json_is_array(in))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "records must be an array of records");
	size_t n = json_array_size(in);
	if (n == 0)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "records must hold at least one record");
	if ((int64_t)n > f->max_records_per_call) {
		a2m_error_set(err, A2M_QUOTA_EXCEEDED, "%zu records in one call; "
			      "max_records_per_call is %lld", n, (long long)f->max_records_per_call);
		return a2m_error_data(err, json_pack("{ss sI}", "limit", "max_records_per_call",
						     "max", (json_int_t)f->max_records_per_call));
	}
	if (json_is_true(json_object_get(params, "import")))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "the import form is not served by "
				     "a federation; import into its backends");
	plan *p = calloc(n, sizeof *p);
	if (!p)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	int rc = 0;
	json_t *given = json_array();
	for (size_t i = 0; i < n && !rc; i++) {
		rc = place(c, json_array_get(in, i), i, &p[i], err);
		if (!rc && json_is_string(json_object_get(json_array_get(in, i), "id")))
			json_array_append(given, json_object_get(p[i].rec, "id"));
	}
	/* Client ids are idempotent across the whole federation (spec §3.2). */
	json_t *existing = NULL;
	if (!rc && json_array_size(given))
		rc = fed_lookup(f, given, 1, &existing, err);
	for (size_t i = 0; !rc && i < n; i++) {
		if (p[i].dedup)
			continue;  /* neither id nor key yet: nothing to match */
		const char *id = json_string_value(json_object_get(p[i].rec, "id"));
		size_t k;
		json_t *r;
		json_array_foreach(existing, k, r)
			if (strcmp(json_string_value(json_object_get(r, "id")), id) == 0)
				p[i].skip = 1;
		for (k = 0; k < i && !p[i].skip; k++)
			if (!p[k].dedup &&
			    strcmp(json_string_value(json_object_get(p[k].rec, "id")), id) == 0)
				p[i].skip = 1;
		if (!p[i].skip)
			rc = resolve_key(c, params, &p[i], err);
	}
	json_decref(existing);
	json_decref(given);

	/* Backend by backend, in tier order; on each, the records in the
	** batch's order, a dedup tier's write alone (send_records). */
	size_t *idx = calloc(n, sizeof *idx);
	int64_t repeated = 0;
	if (!idx && !rc)
		rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	for (size_t b = 0; !rc && b < f->n_backends; b++) {
		size_t m = 0;
		for (size_t i = 0; !rc && i < n; i++) {
			if (p[i].skip || f->tier_backend[p[i].ti] != b)
				continue;
			if (!p[i].dedup) {
				idx[m++] = i;
				continue;
			}
			if (m)
				rc = send_records(c, params, b, p, idx, m, &repeated, err);
			m = 0;
			if (!rc)
				rc = send_records(c, params, b, p, &i, 1, &repeated, err);
		}
		if (!rc && m)
			rc = send_records(c, params, b, p, idx, m, &repeated, err);
	}
	free(idx);
	if (rc) {
		/* What this batch created elsewhere goes again: no partial write. */
		for (size_t k = 0; k < f->n_backends; k++) {
			json_t *ids = json_array(), *res = NULL;
			for (size_t i = 0; i < n; i++)
				if (p[i].created && f->tier_backend[p[i].ti] == k)
					json_array_append(ids, json_object_get(p[i].rec, "id"));
			if (json_array_size(ids)) {
				a2m_error e = {0};
				json_t *q = json_pack("{sO}", "ids", ids);
				fed_backend_call(&f->backends[k], "memory/forget", q, 0, &res, &e);
				json_decref(q);
				json_decref(res);
				a2m_error_clear(&e);
			}
			json_decref(ids);
		}
	}
	json_t *ids = json_array(), *written = json_array();
	fed_arrivals arr = {0};
	for (size_t i = 0; !rc && i < n; i++) {
		json_array_append(ids, json_object_get(p[i].rec, "id"));
		if (p[i].skip == 1 || p[i].repeated)
			continue;  /* nothing written: no event, no arrival */
		json_object_set_new(p[i].rec, "revision", json_integer(p[i].revision));
		if (!json_object_get(p[i].rec, "owner")) {
			const char *o = owner_of(c, p[i].rec, params);
			if (o)
				json_object_set_new(p[i].rec, "owner", json_string(o));
		}
		if (!json_object_get(p[i].rec, "session") &&
		    json_is_string(json_object_get(params, "session")))
			json_object_set(p[i].rec, "session", json_object_get(params, "session"));
		json_array_append(written, p[i].rec);
		fed_arrive(f, &arr, (size_t)p[i].ti,
			   json_string_value(json_object_get(p[i].rec, "session")));
		const json_t *vec = json_object_get(p[i].rec, "embedding");
		if (!f->dims && json_is_array(vec) && json_array_size(vec))
			f->dims = (int64_t)json_array_size(vec);
	}
	if (!rc) {
		fed_written_events(f, written);
		fed_cons cons = {0};
		a2m_error e = {0};
		/* The write is acknowledged whatever the capacity pass meets. */
		if (fed_rebalance(f, 0, &arr, &cons, &e) == 0 &&
		    (cons.moved || cons.promoted || cons.dropped)) {
			a2m_change ch = {.kind = A2M_CHANGE_CONSOLIDATED, .at = a2m_clock_now_ms(),
					 .cons = {cons.moved, cons.promoted, cons.dropped, 0},
					 .shared = 1};
			fed_event(f, &ch);
		}
		a2m_error_clear(&e);
		*result = json_pack("{sO}", "ids", ids);
		if (repeated)  /* as a server says it: only when some were (x-dedup) */
			json_object_set_new(*result, "deduplicated", json_integer(repeated));
	}
	fed_arrivals_free(&arr);
	json_decref(ids);
	json_decref(written);
	for (size_t i = 0; i < n; i++)
		json_decref(p[i].rec);
	free(p);
	return rc;
}

/* Fans a write out to the backends of tier ti (-1: all), summing the
** member `count` of their results. Any failure fails the call. */
static int fan_write(fed_call *c, int ti, const char *method, json_t *base, const char *count,
		     int64_t *sum, a2m_error *err)
{
	federation *f = c->f;
	size_t n = 0;
	fed_job *jobs = calloc(f->n_backends, sizeof *jobs);
	*sum = 0;
	if (!jobs)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	for (size_t b = 0; b < f->n_backends; b++) {
		if ((ti >= 0 && f->tier_backend[ti] != b) || f->backends[b].read_only ||
		    !fed_backend_holds_tiers(f, b))
			continue;
		json_t *p = fed_adapt(&f->backends[b], method, base);
		if (!p)
			continue;
		jobs[n].b = &f->backends[b];
		jobs[n].method = method;
		jobs[n++].params = p;
	}
	fed_fanout(jobs, n, 0);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].rc && !rc) {
			a2m_error_set(err, jobs[i].err.code, "%s", jobs[i].err.message);
			if (jobs[i].err.data)
				a2m_error_data(err, json_incref(jobs[i].err.data));
			rc = err->code;
		}
		*sum += json_integer_value(json_object_get(jobs[i].result, count));
	}
	fed_jobs_free(jobs, n);
	return rc;
}

/* The tier a write names: -1 for none; -2 with err set when it is wrong. */
static int named_tier(federation *f, const json_t *params, a2m_error *err)
{
	const json_t *t = json_object_get(params, "tier");
	if (!t || json_is_null(t))
		return -1;
	int ti = json_is_string(t) ? a2m_tiers_index(&f->layout, json_string_value(t)) : -3;
	if (ti == -3) {
		a2m_error_set(err, A2M_INVALID_PARAMS, "tier must be a string");
		return -2;
	}
	if (ti < 0) {
		a2m_error_set(err, A2M_UNKNOWN_TIER, "no tier named '%s'", json_string_value(t));
		a2m_error_data(err, json_pack("{sO}", "tier", t));
		return -2;
	}
	return ti;
}

int fed_forget(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	static const char *const fwd[] = {"ids", "query", "where", "key_prefix", "tier", NULL};
	const json_t *ids = json_object_get(params, "ids");
	const json_t *query = json_object_get(params, "query");
	const json_t *where = json_object_get(params, "where");
	const json_t *kp = json_object_get(params, "key_prefix");
	int ti = named_tier(c->f, params, err);
	if (ti == -2)
		return err->code;
	if (ids && !json_is_null(ids) && !json_is_array(ids))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "ids must be an array of strings");
	if (where && !json_is_null(where) && !json_is_object(where))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "where must be an object");
	int selective = json_is_array(ids) || (json_is_string(query) && json_string_length(query)) ||
			ti >= 0 || (json_is_string(kp) && (c->caps & A2M_CAP_KEYS)) ||
			json_object_size(where) > 0;
	if (!selective)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "forget needs a selector: ids, query, "
				     "tier, where or key_prefix");
	json_t *base = fed_params(c, params, fwd);
	int64_t n = 0;
	int rc = fan_write(c, ti, "memory/forget", base, "forgotten", &n, err);
	json_decref(base);
	if (rc)
		return rc;
	if (n > 0) {
		a2m_change ch = {.kind = A2M_CHANGE_FORGOTTEN, .at = a2m_clock_now_ms(), .count = n,
				 .owner = c->owner, .shared = !c->scoped};
		fed_event(c->f, &ch);
	}
	*result = json_pack("{sI}", "forgotten", (json_int_t)n);
	return 0;
}

int fed_reinforce(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	static const char *const fwd[] = {"ids", "amount", NULL};
	const json_t *ids = json_object_get(params, "ids");
	if (!json_is_array(ids))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "ids is required (an array of strings)");
	json_t *base = fed_params(c, params, fwd);
	int64_t n = 0;
	int rc = fan_write(c, -1, "memory/reinforce", base, "reinforced", &n, err);
	json_decref(base);
	if (!rc)
		*result = json_pack("{sI}", "reinforced", (json_int_t)n);
	return rc;
}

/* Source records read without a limit, and the most ever read (as a2m serve). */
#define SUMMARIZE_DEFAULT_LIMIT 50
#define SUMMARIZE_MAX_LIMIT     200

int fed_summarize(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	federation *f = c->f;
	const json_t *ids = json_object_get(params, "ids");
	const json_t *query = json_object_get(params, "query");
	const json_t *where = json_object_get(params, "where");
	const json_t *kp = json_object_get(params, "key_prefix");
	const json_t *lim = json_object_get(params, "limit");
	int ti = named_tier(f, params, err);
	if (ti == -2)
		return err->code;
	int selective = json_is_array(ids) || (json_is_string(query) && json_string_length(query)) ||
			ti >= 0 || json_is_string(kp) || json_object_size(where) > 0;
	if (!selective)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "summarize needs a selector: ids, "
				     "query, tier, where or key_prefix");
	if (lim && !json_is_null(lim) && (!json_is_integer(lim) || json_integer_value(lim) < 0))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "limit must be an integer, 0 or more");
	json_int_t limit = json_is_integer(lim) ? json_integer_value(lim) : SUMMARIZE_DEFAULT_LIMIT;
	if (limit == 0 || limit > SUMMARIZE_MAX_LIMIT)
		limit = SUMMARIZE_MAX_LIMIT;
	const json_t *into = json_object_get(params, "into");
	const char *dest = NULL;
	if (into && !json_is_null(into)) {
		json_t *tp = json_pack("{sO}", "tier", into);
		int di = named_tier(f, tp, err);
		json_decref(tp);
		if (di == -2)
			return err->code;
		dest = f->layout.tiers[di].name;
	}
	for (size_t i = 0; !dest && i < f->layout.n; i++)
		if (strcmp(f->layout.tiers[i].kind, "semantic") == 0)
			dest = f->layout.tiers[i].name;
	if (!dest)
		dest = f->layout.tiers[f->layout.default_tier].name;

	/* The sources, as a2m serve selects them: ids, else what the query
	** recalls, else the newest of the selection. */
	json_t *src = NULL, *res = NULL;
	static const char *const sel[] = {"tier", "where", "key_prefix", "query", NULL};
	json_t *q = fed_params(NULL, params, sel);
	json_object_set_new(q, "limit", json_integer(limit));
	if (c->scoped)
		json_object_set_new(q, "owner", c->owner ? json_string(c->owner) : json_null());
	fed_call inner = *c;
	int rc;
	if (json_is_array(ids)) {
		json_t *w = json_is_object(where) ? json_deep_copy(where) : json_object();
		json_object_set_new(w, "id", json_incref((json_t *)ids));
		json_object_set_new(q, "where", w);
		json_object_del(q, "query");
		rc = fed_timeline(&inner, q, &res, err);
	} else if (json_is_string(query) && json_string_length(query)) {
		json_object_set_new(q, "touch", json_false());
		rc = fed_recall(&inner, q, &res, err);
	} else {
		rc = fed_timeline(&inner, q, &res, err);
	}
	json_decref(q);
	json_decref(inner.earned);
	if (rc)
		return rc;
	src = json_object_get(res, "records");
	size_t n = json_array_size(src);
	a2m_record **v = calloc(n ? n : 1, sizeof *v);
	char why[256];
	for (size_t i = 0; v && i < n && !rc; i++)
		if (!(v[i] = a2m_record_new()) ||
		    a2m_record_from_wire(json_array_get(src, i), v[i], why, sizeof why) != 0)
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "a backend's record: %s", why);
	errno = 0;
	char *text = rc || !v ? NULL : a2m_summarize_extract((const a2m_record *const *)v, n, 5, 2000);
	if (!rc && !text && errno == ENOMEM)
		rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	if (!rc && !text) {
		/* Declining is not an error (§4.15). */
		*result = json_pack("{s[] sI sI}", "records", "read", (json_int_t)n, "written", 0);
	} else if (!rc) {
		json_t *of = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append(of, json_object_get(json_array_get(src, i), "id"));
		json_t *rec = json_pack("{ss ss ss s{so}}", "content", text, "role", "memory", "tier",
					dest, "metadata", "summary_of", of);
		const json_t *key = json_object_get(params, "key");
		if (json_is_string(key) && (c->caps & A2M_CAP_KEYS))
			json_object_set_new(rec, "key", json_string(json_string_value(key)));
		json_t *wp = json_pack("{s[o]}", "records", rec), *wr = NULL;
		if (c->scoped && c->owner)
			json_object_set_new(wp, "owner", json_string(c->owner));
		rc = fed_remember(c, wp, &wr, err);
		json_decref(wp);
		json_t *back = NULL;
		if (!rc)
			rc = fed_lookup(f, json_object_get(wr, "ids"), 1, &back, err);
		json_decref(wr);
		for (size_t i = 0; !rc && i < json_array_size(back); i++) {
			json_object_del(json_array_get(back, i), "embedding");
			json_object_del(json_array_get(back, i), "score");
		}
		if (!rc)
			*result = json_pack("{so sI sI}", "records", back, "read", (json_int_t)n,
					    "written", (json_int_t)1);
	}
	free(text);
	if (v)
		a2m_record_array_free(v, n);
	json_decref(res);
	return rc;
}
