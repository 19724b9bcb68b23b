/*
** read.c — the router's reads: recall fanned out in parallel under one
** deadline and merged by rank fusion or rerank (DECISIONS 009), timeline
** merged by creation time, keys resolved across tiers, the session list
** summed; and the whole-record lookups the policy and the moves read
** through.
**
** A backend that does not answer in time is left out: the reply names the
** tiers it holds under "missing_tiers" (docs/FEDERATION.md), and only when
** every backend asked is missing is the call an error.
**
** Recall counts an access on the records it returns, and only those, as
** one server would: the backends are asked with touch: false, and the
** records the merge kept are then touched where they live (one more call to
** each backend holding one), which is also what reports their counts and
** what earns a promotion.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compose/prompt.h"
#include "federate/fed.h"
#include "protocol/protocol.h"
#include "stack/policy.h"
#include "util/clock.h"
#include "util/grow.h"

/* Recall's members passed on to a backend as they are. */
static const char *const recall_fwd[] = {"query", "where", "key_prefix", "embedding",
					 "embeddings", NULL};
static const char *const timeline_fwd[] = {"where", "key_prefix", "embeddings", "limit", NULL};

/* Reads the limit as a server would (spec §4.3; docs/PROTOCOL.md). */
static int read_limit(federation *f, const json_t *params, int64_t def, int64_t *out,
		      a2m_error *err)
{
	const json_t *v = json_object_get(params, "limit");
	*out = def;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return a2m_error_set(err, A2M_INVALID_PARAMS, "limit must be an integer, 0 or more");
	if (!def) {
		*out = json_integer_value(v);  /* timeline: 0 is every record, no max */
		return 0;
	}
	*out = json_integer_value(v) ? json_integer_value(v) : f->max_recall_limit;
	if (*out > f->max_recall_limit) {
		a2m_error_set(err, A2M_QUOTA_EXCEEDED, "limit %lld exceeds max_recall_limit %lld",
			      (long long)*out, (long long)f->max_recall_limit);
		return a2m_error_data(err, json_pack("{ss sI}", "limit", "max_recall_limit", "max",
						     (json_int_t)f->max_recall_limit));
	}
	return 0;
}

/* The tier asked for: -1 for every tier; -2 with err set when it is wrong. */
static int asked_tier(federation *f, const json_t *params, a2m_error *err)
{
	const json_t *t = json_object_get(params, "tier");
	if (!t || json_is_null(t))
		return -1;
	if (!json_is_string(t)) {
		a2m_error_set(err, A2M_INVALID_PARAMS, "tier must be a string");
		return -2;
	}
	int ti = a2m_tiers_index(&f->layout, json_string_value(t));
	if (ti < 0) {
		a2m_error_set(err, A2M_UNKNOWN_TIER, "no tier named '%s'", json_string_value(t));
		a2m_error_data(err, json_pack("{sO}", "tier", t));
		return -2;
	}
	return ti;
}

/*
** One job per backend a read of tier ti (-1: all) goes to, each with a copy
** of base plus the tier. *n jobs; NULL when memory ran out.
*/
static fed_job *read_jobs(federation *f, int ti, const char *method, const json_t *base,
			  size_t *n)
{
	fed_job *jobs = calloc(f->n_backends, sizeof *jobs);
	*n = 0;
	for (size_t b = 0; jobs && b < f->n_backends; b++) {
		if ((ti >= 0 && f->tier_backend[ti] != b) || !fed_backend_holds_tiers(f, b))
			continue;
		json_t *p = fed_adapt(&f->backends[b], method, base);
		if (!p)
			continue;  /* nothing of this read can be on it */
		fed_job *j = &jobs[(*n)++];
		j->b = &f->backends[b];
		j->method = method;
		j->params = p;
		if (ti >= 0 && (j->b->caps & A2M_CAP_TIERS))
			json_object_set_new(j->params, "tier", json_string(f->layout.tiers[ti].name));
	}
	return jobs;
}

json_t *fed_adapt(const fed_backend *b, const char *method, const json_t *params)
{
	unsigned caps = b->caps;
	/* A method of a capability the backend lacks: it holds nothing it
	** would find (a read-only corpus has no keys, no sessions). */
	if ((strcmp(method, "memory/fetch") == 0 && !(caps & A2M_CAP_KEYS)) ||
	    (strncmp(method, "memory/session/", 15) == 0 && !(caps & A2M_CAP_SESSIONS)) ||
	    (strcmp(method, "memory/reinforce") == 0 && !(caps & A2M_CAP_SALIENCE)) ||
	    (json_object_get(params, "key_prefix") && !(caps & A2M_CAP_KEYS)))
		return NULL;
	json_t *p = json_deep_copy(params);
	if (!(caps & A2M_CAP_TIERS))
		json_object_del(p, "tier");
	if (!(caps & A2M_CAP_SCOPES)) {
		json_object_del(p, "owner");
		json_object_del(p, "all_owners");
	}
	if (!(caps & A2M_CAP_EMBEDDINGS)) {
		json_object_del(p, "embeddings");
		if (json_object_get(p, "embedding")) {
			/* A vector query it cannot judge: its text half only. */
			json_object_del(p, "embedding");
			if (!json_is_string(json_object_get(p, "query"))) {
				json_decref(p);
				return NULL;
			}
		}
	}
	return p;
}

/* Records of a backend without tiers carry the one tier it holds. */
static void tag_tiers(federation *f, fed_job *jobs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].b->caps & A2M_CAP_TIERS || !jobs[i].result)
			continue;
		const char *tier = NULL;
		for (size_t t = 0; t < f->layout.n; t++)
			if (fed_tier_backend(f, t) == jobs[i].b)
				tier = f->layout.tiers[t].name;
		json_t *recs = json_object_get(jobs[i].result, "records");
		json_t *one = json_object_get(jobs[i].result, "record");
		size_t k;
		json_t *r;
		json_array_foreach(recs, k, r)
			json_object_set_new(r, "tier", json_string(tier));
		if (json_is_object(one))
			json_object_set_new(one, "tier", json_string(tier));
	}
}

/*
** The jobs of read_jobs, sent to every backend at once under the overall
** deadline, each result tagged with its tiers; NULL when memory ran out.
*/
static fed_job *ask_backends(federation *f, int ti, const char *method, const json_t *base,
			     size_t *n)
{
	fed_job *jobs = read_jobs(f, ti, method, base, n);
	if (jobs) {
		fed_fanout(jobs, *n, f->deadline_ms);
		tag_tiers(f, jobs, *n);
	}
	return jobs;
}

/* The tiers of backend b that a read of tier ti asked, appended to missing. */
static void add_missing(federation *f, const fed_backend *b, int ti, json_t *missing)
{
	for (size_t t = 0; t < f->layout.n; t++)
		if (&f->backends[f->tier_backend[t]] == b && (ti < 0 || (size_t)ti == t))
			json_array_append_new(missing, json_string(f->layout.tiers[t].name));
}

/*
** The outcome of a read's fan-out: the first error that is not a backend
** being unreachable is the call's; unreachable backends go to *missing;
** all of them unreachable is an error naming them.
*/
static int gather(federation *f, fed_job *jobs, size_t n, int ti, json_t **missing,
		  a2m_error *err)
{
	size_t down = 0;
	*missing = json_array();
	for (size_t i = 0; i < n; i++) {
		if (!jobs[i].rc)
			continue;
		if (!fed_unreachable(&jobs[i].err)) {
			a2m_error_set(err, jobs[i].err.code, "%s", jobs[i].err.message);
			if (jobs[i].err.data)
				a2m_error_data(err, json_incref(jobs[i].err.data));
			return err->code;
		}
		add_missing(f, jobs[i].b, ti, *missing);
		down++;
	}
	if (n && down == n) {
		a2m_error_set(err, A2M_INTERNAL_ERROR, "no backend of the tiers asked answered");
		return a2m_error_data(err, json_pack("{sO}", "missing_tiers", *missing));
	}
	return 0;
}

/* Ranked entry of the rank fusion. */
typedef struct fused {
	json_t *rec;      /* borrowed */
	double  score;
	int64_t created;
	size_t  backend;
} fused;

static int cmp_fused(const void *a, const void *b)
{
	const fused *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->created != y->created)
		return x->created > y->created ? -1 : 1;  /* ties: the newer */
	return (x->backend > y->backend) - (x->backend < y->backend);
}

static int64_t created_of(const json_t *rec)
{
	int64_t ms = 0;
	const char *t = json_string_value(json_object_get(rec, "created_at"));
	if (t)
		a2m_clock_parse(t, &ms);
	return ms;
}

/*
** Reciprocal rank fusion (DECISIONS 009): a record's score is the sum over
** the lists holding it of 1 / (k + its rank there), scaled so a first place
** scores 1; the backends' own scores are never read.
*/
static json_t *rank_fusion(federation *f, fed_job *jobs, size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += json_array_size(json_object_get(jobs[i].result, "records"));
	fused *v = calloc(total ? total : 1, sizeof *v);
	json_t *out = json_array();
	if (!v || !out) {
		free(v);
		json_decref(out);
		return NULL;
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		size_t r;
		json_t *rec;
		json_array_foreach(json_object_get(jobs[i].result, "records"), r, rec) {
			/* A record listed twice (a move cut short leaves a copy on
			** two servers) is one record: its ranks add up. */
			const char *id = json_string_value(json_object_get(rec, "id"));
			size_t k = 0;
			while (k < m && strcmp(json_string_value(json_object_get(v[k].rec, "id")), id))
				k++;
			if (k == m) {
				v[m].rec = rec;
				v[m].created = created_of(rec);
				v[m].backend = i;
				m++;
			}
			v[k].score += (double)(f->rrf_k + 1) / (double)(f->rrf_k + (int)r + 1);
		}
	}
	qsort(v, m, sizeof *v, cmp_fused);
	for (size_t i = 0; i < m; i++) {
		json_t *rec = json_copy(v[i].rec);
		json_object_set_new(rec, "score", json_real(v[i].score > 1 ? 1 : v[i].score));
		json_array_append_new(out, rec);
	}
	free(v);
	return out;
}

/* Rerank's pool: every backend's candidates for the query and, with the
** query withheld, its most recent ones, unique by id. */
static json_t *pool_of(fed_job *jobs, size_t n)
{
	json_t *out = json_array(), *seen = json_object();
	for (size_t i = 0; out && seen && i < n; i++) {
		size_t r;
		json_t *rec;
		json_array_foreach(json_object_get(jobs[i].result, "records"), r, rec) {
			const char *id = json_string_value(json_object_get(rec, "id"));
			if (!id || json_object_get(seen, id))
				continue;
			json_object_set_new(seen, id, json_true());
			json_array_append_new(out, json_copy(rec));
		}
	}
	json_decref(seen);
	return out;
}

/*
** Counts the access on what recall returns, where each record lives, and
** puts the records as they now are (their counts with this access) in
** place. The records whose tier promotes once recalled enough are added
** to c->earned.
*/
static void touch(fed_call *c, json_t *recs, int embeddings)
{
	federation *f = c->f;
	size_t n = 0;
	fed_job *jobs = calloc(f->n_backends, sizeof *jobs);
	if (!jobs)
		return;
	for (size_t b = 0; b < f->n_backends; b++) {
		json_t *ids = json_array();
		size_t i;
		json_t *rec;
		json_array_foreach(recs, i, rec) {
			int ti = fed_tier_of(f, rec);
			if (ti >= 0 && f->tier_backend[ti] == b)
				json_array_append(ids, json_object_get(rec, "id"));
		}
		if (!json_array_size(ids) || f->backends[b].read_only) {
			/* A read-only backend keeps no access counts. */
			json_decref(ids);
			continue;
		}
		jobs[n].b = &f->backends[b];
		jobs[n].method = "memory/recall";
		jobs[n].params = json_pack("{s{so} sI sb}", "where", "id", ids, "limit",
					   (json_int_t)json_array_size(ids), "embeddings", embeddings);
		if (c->scoped)
			json_object_set_new(jobs[n].params, "owner",
					    c->owner ? json_string(c->owner) : json_null());
		n++;
	}
	fed_fanout(jobs, n, f->deadline_ms);
	tag_tiers(f, jobs, n);
	json_t *now = json_object();
	for (size_t k = 0; now && k < n; k++) {
		size_t i;
		json_t *rec;
		json_array_foreach(json_object_get(jobs[k].result, "records"), i, rec)
			json_object_set(now, json_string_value(json_object_get(rec, "id")), rec);
	}
	size_t i;
	json_t *rec;
	json_array_foreach(recs, i, rec) {
		json_t *cur = json_object_get(now, json_string_value(json_object_get(rec, "id")));
		if (!cur)
			continue;
		json_t *score = json_incref(json_object_get(rec, "score"));
		json_object_update(rec, cur);
		json_object_set_new(rec, "score", score);
		int ti = fed_tier_of(f, rec);
		json_t *count = json_object_get(rec, "access_count");
		if (ti >= 0 && json_is_integer(count) &&
		    a2m_stack_promotion_earned(&f->layout.tiers[ti], json_integer_value(count))) {
			if (!c->earned)
				c->earned = json_array();
			json_array_append(c->earned, rec);
		}
	}
	json_decref(now);
	fed_jobs_free(jobs, n);
}

/* Adds the rendered prompt to result when the caller asked (spec §4.16). */
static int add_prompt(const json_t *param, json_t *result, int chronological, a2m_error *err)
{
	a2m_prompt_opts opts;
	int wanted;
	int rc = a2m_prompt_parse(param, &opts, &wanted, err);
	if (rc || !wanted)
		return rc;
	json_t *recs = json_object_get(result, "records");
	size_t n = json_array_size(recs);
	a2m_record **v = calloc(n ? n : 1, sizeof *v);
	if (!v)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	char why[256];
	for (size_t i = 0; i < n && !rc; i++)
		if (!(v[i] = a2m_record_new()) ||
		    a2m_record_from_wire(json_array_get(recs, i), v[i], why, sizeof why) != 0)
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "a backend's record: %s", why);
	char *text = NULL;
	json_t *ids = NULL;
	if (!rc)
		rc = a2m_prompt_render(&opts, (const a2m_record *const *)v, n, chronological, &text,
				       &ids, err);
	if (!rc) {
		json_object_set_new(result, "prompt", json_string(text));
		json_object_set_new(result, "prompt_ids", ids);
	}
	free(text);
	a2m_record_array_free(v, n);
	return rc;
}

int fed_recall(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	federation *f = c->f;
	int64_t limit;
	int rc, ti = asked_tier(f, params, err);
	if (ti == -2)
		return err->code;
	if ((rc = read_limit(f, params, f->default_recall_limit, &limit, err)))
		return rc;
	const json_t *ms = json_object_get(params, "min_score");
	if (ms && !json_is_null(ms) && !json_is_number(ms))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "min_score must be a number");
	const json_t *tp = json_object_get(params, "touch");
	if (tp && !json_is_boolean(tp))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "touch must be true or false");
	a2m_prompt_opts popts;
	int wanted;
	if ((rc = a2m_prompt_parse(json_object_get(params, "prompt"), &popts, &wanted, err)))
		return rc;
	int embeddings = json_is_true(json_object_get(params, "embeddings"));

	json_t *base = fed_params(c, params, recall_fwd);
	json_object_set_new(base, "touch", json_false());
	int rerank = f->merge == FED_RERANK;
	if (rerank) {
		/* The router judges: a broad pool, vectors included. */
		json_object_set_new(base, "limit", json_integer(f->pool < f->max_recall_limit
								? f->pool : f->max_recall_limit));
		json_object_set_new(base, "embeddings", json_true());
	} else {
		json_object_set_new(base, "limit", json_integer(limit));
	}
	size_t n;
	fed_job *jobs = read_jobs(f, ti, "memory/recall", base, &n);
	json_decref(base);
	if (!jobs)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	if (rerank) {
		/* The same again with the query withheld: what a backend's own
		** scorer would have dropped still reaches the router (009). */
		if (n > SIZE_MAX / 2 || a2m_resize((void **)&jobs, 2 * (n ? n : 1), sizeof *jobs)) {
			fed_jobs_free(jobs, n);
			return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		}
		for (size_t i = 0; i < n; i++) {
			jobs[n + i] = jobs[i];
			jobs[n + i].params = json_deep_copy(jobs[i].params);
			json_object_del(jobs[n + i].params, "query");
			json_object_del(jobs[n + i].params, "embedding");
		}
		n *= 2;
	}
	fed_fanout(jobs, n, f->deadline_ms);
	tag_tiers(f, jobs, n);
	json_t *missing = NULL, *recs = NULL;
	rc = gather(f, jobs, n, ti, &missing, err);
	if (!rc) {
		recs = rerank ? pool_of(jobs, n) : rank_fusion(f, jobs, n);
		if (!recs)
			rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		else if (rerank)
			rc = fed_rerank(f, params, recs, err);
	}
	fed_jobs_free(jobs, n);
	if (!rc) {
		/* min_score is the router's own: its scores are the ones returned. */
		double floor = json_is_number(ms) ? json_number_value(ms) : -INFINITY;
		json_t *kept = json_array();
		size_t i;
		json_t *rec;
		json_array_foreach(recs, i, rec) {
			if ((int64_t)json_array_size(kept) >= limit)
				break;
			if (json_number_value(json_object_get(rec, "score")) >= floor)
				json_array_append(kept, rec);
		}
		json_decref(recs);
		recs = kept;
		/* Rerank asked for vectors the caller may not want. */
		for (i = 0; !embeddings && i < json_array_size(recs); i++)
			json_object_del(json_array_get(recs, i), "embedding");
		if (!json_is_false(tp))
			touch(c, recs, embeddings);
		*result = json_pack("{so}", "records", recs);
		recs = NULL;
		if (json_array_size(missing))
			json_object_set(*result, "missing_tiers", missing);
		rc = add_prompt(json_object_get(params, "prompt"), *result, 0, err);
		if (rc) {
			json_decref(*result);
			*result = NULL;
		}
	}
	json_decref(recs);
	json_decref(missing);
	return rc;
}

static int cmp_created(const void *a, const void *b)
{
	const fused *x = a, *y = b;
	if (x->created != y->created)
		return x->created < y->created ? -1 : 1;
	return (x->backend > y->backend) - (x->backend < y->backend);
}

int fed_timeline(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	federation *f = c->f;
	int64_t limit;
	int rc, ti = asked_tier(f, params, err);
	if (ti == -2)
		return err->code;
	if ((rc = read_limit(f, params, 0, &limit, err)))
		return rc;
	a2m_prompt_opts popts;
	int wanted;
	if ((rc = a2m_prompt_parse(json_object_get(params, "prompt"), &popts, &wanted, err)))
		return rc;
	json_t *base = fed_params(c, params, timeline_fwd);
	size_t n;
	fed_job *jobs = ask_backends(f, ti, "memory/timeline", base, &n);
	json_decref(base);
	if (!jobs)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	json_t *missing = NULL;
	rc = gather(f, jobs, n, ti, &missing, err);
	if (!rc) {
		size_t total = 0, m = 0;
		for (size_t i = 0; i < n; i++)
			total += json_array_size(json_object_get(jobs[i].result, "records"));
		fused *v = calloc(total ? total : 1, sizeof *v);
		json_t *recs = json_array();
		for (size_t i = 0; v && i < n; i++) {
			size_t r;
			json_t *rec;
			json_array_foreach(json_object_get(jobs[i].result, "records"), r, rec) {
				v[m].rec = rec;
				v[m].created = created_of(rec);
				v[m].backend = i;
				m++;
			}
		}
		if (v)
			qsort(v, m, sizeof *v, cmp_created);
		/* The most recent `limit`, still oldest first (spec §4.4). */
		size_t from = limit && (size_t)limit < m ? m - (size_t)limit : 0;
		for (size_t i = from; v && recs && i < m; i++)
			json_array_append(recs, v[i].rec);
		free(v);
		*result = json_pack("{so}", "records", recs);
		if (json_array_size(missing))
			json_object_set(*result, "missing_tiers", missing);
		rc = add_prompt(json_object_get(params, "prompt"), *result, 1, err);
		if (rc) {
			json_decref(*result);
			*result = NULL;
		}
	}
	json_decref(missing);
	fed_jobs_free(jobs, n);
	return rc;
}

int fed_fetch(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	federation *f = c->f;
	static const char *const fwd[] = {"key", "embeddings", NULL};
	const json_t *key = json_object_get(params, "key");
	if (!json_is_string(key) || !json_string_length(key))
		return a2m_error_set(err, A2M_INVALID_PARAMS, "key is required (a non-empty string)");
	json_t *base = fed_params(c, params, fwd);
	size_t n;
	fed_job *jobs = ask_backends(f, -1, "memory/fetch", base, &n);
	json_decref(base);
	if (!jobs)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	json_t *missing = NULL;
	int rc = gather(f, jobs, n, -1, &missing, err);
	json_t *found = NULL;
	for (size_t i = 0; !rc && !found && i < n; i++) {
		json_t *r = json_object_get(jobs[i].result, "record");
		if (json_is_object(r))
			found = r;
	}
	if (!rc && !found && json_array_size(missing)) {
		/* Not here may mean on the backend that did not answer. */
		a2m_error_set(err, A2M_INTERNAL_ERROR, "the key was not found, and a backend "
			      "that may hold it did not answer");
		rc = a2m_error_data(err, json_pack("{sO}", "missing_tiers", missing));
	}
	if (!rc)
		*result = json_pack("{sO}", "record", found ? found : json_null());
	json_decref(missing);
	fed_jobs_free(jobs, n);
	return rc;
}

int fed_session_list(fed_call *c, json_t *params, json_t **result, a2m_error *err)
{
	federation *f = c->f;
	static const char *const none[] = {NULL};
	json_t *base = fed_params(c, params, none);
	size_t n;
	fed_job *jobs = ask_backends(f, -1, "memory/session/list", base, &n);
	json_decref(base);
	if (!jobs)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	json_t *missing = NULL;
	int rc = gather(f, jobs, n, -1, &missing, err);
	json_t *by = json_object(), *order = json_array();
	for (size_t i = 0; !rc && i < n; i++) {
		size_t k;
		json_t *s;
		json_array_foreach(json_object_get(jobs[i].result, "sessions"), k, s) {
			const char *name = json_string_value(json_object_get(s, "session"));
			json_t *acc = name ? json_object_get(by, name) : NULL;
			if (!name)
				continue;
			if (!acc) {
				json_object_set_new(by, name, json_deep_copy(s));
				json_array_append_new(order, json_string(name));
				continue;
			}
			json_object_set_new(acc, "records", json_integer(
				json_integer_value(json_object_get(acc, "records")) +
				json_integer_value(json_object_get(s, "records"))));
			json_object_update(json_object_get(acc, "tiers"), json_object_get(s, "tiers"));
			const char *o1 = json_string_value(json_object_get(acc, "opened_at"));
			const char *o2 = json_string_value(json_object_get(s, "opened_at"));
			if (o1 && o2 && strcmp(o2, o1) < 0)
				json_object_set(acc, "opened_at", json_object_get(s, "opened_at"));
			const char *t1 = json_string_value(json_object_get(acc, "touched_at"));
			const char *t2 = json_string_value(json_object_get(s, "touched_at"));
			if (t1 && t2 && strcmp(t2, t1) > 0)
				json_object_set(acc, "touched_at", json_object_get(s, "touched_at"));
		}
	}
	if (!rc) {
		json_t *list = json_array();
		size_t k;
		json_t *name;
		json_array_foreach(order, k, name)
			json_array_append(list, json_object_get(by, json_string_value(name)));
		*result = json_pack("{so}", "sessions", list);
		if (json_array_size(missing))
			json_object_set(*result, "missing_tiers", missing);
	}
	json_decref(by);
	json_decref(order);
	json_decref(missing);
	fed_jobs_free(jobs, n);
	return rc;
}

/* ---- whole records, for the policy and the moves --------------------------- */

int fed_lookup(federation *f, const json_t *ids, int skip_down, json_t **found, a2m_error *err)
{
	json_t *base = json_pack("{s{sO} sb sb}", "where", "id", ids, "embeddings", 1,
				 "all_owners", 1);
	size_t n;
	fed_job *jobs = ask_backends(f, -1, "memory/timeline", base, &n);
	json_decref(base);
	*found = NULL;
	if (!jobs)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	int rc = 0;
	json_t *out = json_array();
	for (size_t i = 0; !rc && i < n; i++) {
		if (jobs[i].rc) {
			if (skip_down && fed_unreachable(&jobs[i].err))
				continue;
			a2m_error_set(err, jobs[i].err.code, "%s", jobs[i].err.message);
			rc = err->code;
			break;
		}
		json_array_extend(out, json_object_get(jobs[i].result, "records"));
	}
	fed_jobs_free(jobs, n);
	if (rc)
		json_decref(out);
	else
		*found = out;
	return rc;
}

int fed_tier_records(federation *f, size_t ti, int by_session, const char *session,
		     const char *group, json_t **out, a2m_error *err)
{
	json_t *where = json_object();
	if (by_session)
		json_object_set_new(where, "session", session ? json_string(session) : json_null());
	if (group)
		json_object_set_new(where, "group", json_string(group));
	json_t *p = json_pack("{ss so sb sb}", "tier", f->layout.tiers[ti].name, "where", where,
			      "embeddings", 1, "all_owners", 1);
	json_t *res = NULL;
	int rc = fed_backend_call(fed_tier_backend(f, ti), "memory/timeline", p, f->deadline_ms,
				  &res, err);
	json_decref(p);
	*out = rc ? NULL : json_incref(json_object_get(res, "records"));
	json_decref(res);
	return rc;
}
