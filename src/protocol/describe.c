/*
** describe.c — memory/describe (spec §4.1): discovery and version
** negotiation. Everything a client may rely on is reported from the live
** configuration, so describe can never disagree with what the server does.
*/
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "events/event_log.h"
#include "compose/prompt.h"

#include "protocol/protocol.h"
#include "stack/where.h"
#include "util/json_write.h"

int a2m_protocol_compatible(const char *v)
{
	const size_t n = strlen(A2M_PROTOCOL);
	if (strncmp(v, A2M_PROTOCOL, n) != 0)
		return 0;
	if (v[n] == '\0')
		return 1;
	if (v[n] != '.' || !v[n + 1])
		return 0;
	for (const char *p = v + n + 1; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	return 1;
}

/* The tier layout with live counts, scoped like a read by owner (§4.1, §4.7). */
static json_t *describe_tiers(a2m_call *call, const a2m_scope *scope, a2m_error *err)
{
	const a2m_tier_layout *l = a2m_stack_tiers(call->srv->stack);
	int64_t *counts = calloc(l->n + 1, sizeof *counts);
	if (!counts || a2m_stack_tier_counts(call->srv->stack, scope, counts, err) != 0) {
		free(counts);
		if (!err->code)
			a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		return NULL;
	}
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < l->n; i++) {
		const a2m_tier *t = &l->tiers[i];
		json_t *o = json_pack("{ss sI ss sI so so sI sb sb}",
			"name", t->name, "count", (json_int_t)counts[i], "kind", t->kind,
			"capacity", (json_int_t)t->capacity,
			"spill_to", t->spill_to ? json_string(t->spill_to) : json_null(),
			"promote_to", t->promote_to ? json_string(t->promote_to) : json_null(),
			"promote_after", (json_int_t)t->promote_after,
			"shared", t->shared, "per_session", t->per_session);
		if (o && t->half_life_ms > 0 &&
		    json_object_set_new(o, "half_life_seconds", json_real(t->half_life_ms / 1000.0))) {
			json_decref(o);
			o = NULL;
		}
		/* The extensions' settings of the tier, only where declared. */
		if (o && (call->caps & A2M_CAP_X_DEDUP) &&
		    json_object_set_new(o, "dedup", json_boolean(t->dedup))) {
			json_decref(o);
			o = NULL;
		}
		if (o && (call->caps & A2M_CAP_X_EXPIRY) && t->ttl_ms &&
		    json_object_set_new(o, "ttl_seconds", json_real((double)t->ttl_ms / 1000.0))) {
			json_decref(o);
			o = NULL;
		}
		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	free(counts);
	if (!arr)
		a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	return arr;
}

/*
** Our own extension: the server's embedder, when one is configured
** (docs/EMBEDDINGS.md §4.1). `model` of embeddings stays null: it would
** name the caller's model, which we do not know. dimensions is null until
** the embedder first answered.
*/
static int describe_generated(const a2m_call *call, json_t *emb)
{
	const a2m_embedder *e = a2m_stack_embedder(call->srv->stack);
	if (!e)
		return 0;
	size_t dims = a2m_stack_gen_dims(call->srv->stack);
	a2m_embedder *me = (a2m_embedder *)e; /* model() only reads */
	return json_object_set_new(emb, "generated", json_pack("{ss ss so}", "kind", e->kind,
		"model", me->model(me),
		"dimensions", dims ? json_integer((json_int_t)dims) : json_null()));
}

/*
** How the caller's vectors are searched (docs/RANKING.md §6), from the
** scorer that searches them: exactly (the default), or in the opt-in
** quantized mode, approximate, with its pool of rows per result.
*/
static json_t *describe_vector_search(const a2m_scorer *sc)
{
	if (!sc->vector_pool)
		return json_pack("{ss sb}", "mode", "exact", "approximate", 0);
	return json_pack("{ss sb ss sI}", "mode", "quantized", "approximate", 1, "codes", "int8",
			 "pool", (json_int_t)sc->vector_pool);
}

/*
** How recall ranks, from the objects that do it (DESIGN §4): the scorer,
** its text analysis, where its index lives, and the blend weights. Sets
** *unindexed to the records that hold text but yield no term (DECISIONS
** 015), which describe reports beside it.
*/
static json_t *describe_scorer(a2m_call *call, int64_t *unindexed, a2m_error *err)
{
	const a2m_scorer *sc = a2m_stack_scorer(call->srv->stack);
	const a2m_blend *w = a2m_stack_blend(call->srv->stack);
	a2m_index_stats stats;
	const char *engine;
	int rc = a2m_stack_index_stats(call->srv->stack, &stats, &engine, err);
	if (rc < 0)
		return NULL;
	*unindexed = stats.unindexed;
	json_t *o = json_pack("{ss ss s{sf sf sf}}", "name", sc->name,
			      "metric", sc->metric ? sc->metric : sc->name,
			      "blend", "relevance", w->relevance, "recency", w->recency,
			      "salience", w->salience);
	if (!o) {
		a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		return NULL;
	}
	int bad = 0;
	if (sc->analyzer)
		bad |= json_object_set_new(o, "analyzer", json_string(sc->analyzer));
	/* "memory"/"sqlite"/"postgres": the store's own index; "scan": every record is read. */
	bad |= json_object_set_new(o, "index", json_string(rc == 0 && sc->indexer ? engine : "scan"));
	if (sc->k1 > 0)
		bad |= json_object_set_new(o, "k1", json_real(sc->k1));
	if (sc->b > 0)
		bad |= json_object_set_new(o, "b", json_real(sc->b));
	if (rc == 0 && sc->indexer)
		bad |= json_object_set_new(o, "indexed", json_integer(stats.docs));
	if (bad) {
		json_decref(o);
		a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		return NULL;
	}
	return o;
}

/*
** Our extensions (docs/PROTOCOL.md, Extensions): one member per declared
** extension, named as the capability, saying what of it this server does.
** Nonzero when memory ran out (a member would be missing).
*/
static int describe_extensions(const a2m_call *call, json_t *res)
{
	int bad = 0;
	/*
	** The router's three (x-import, x-touch, x-all-owners) have nothing to
	** say beyond their declaration. "extensions" names them as servers did
	** before they were capabilities, for routers of those versions, which
	** look for them there (docs/PROTOCOL.md, Extensions): deprecated.
	*/
	static const struct {
		unsigned cap;
		const char *old_name;
	} routed[] = {{A2M_CAP_X_IMPORT, "import"}, {A2M_CAP_X_TOUCH, "touch"},
		      {A2M_CAP_X_ALL_OWNERS, "all_owners"}};
	json_t *old = json_array();
	for (size_t i = 0; old && i < sizeof routed / sizeof *routed; i++)
		if (call->caps & routed[i].cap)
			bad |= json_array_append_new(old, json_string(routed[i].old_name));
	bad |= json_object_set_new(res, "extensions", old);
	if (call->caps & A2M_CAP_X_WHERE) {
		json_t *ops = json_array();
		for (size_t i = 0; ops && a2m_where_operators[i]; i++)
			bad |= json_array_append_new(ops, json_string(a2m_where_operators[i]));
		/* What the store's own selection narrows by before `where` is
		** applied to each record (select.c). */
		bad |= json_object_set_new(res, "x-where", ops ? json_pack("{so s[ssss]}",
			"operators", ops, "narrowed", "tier", "session", "key", "created_at") : NULL);
	}
	if (call->caps & A2M_CAP_X_EXPIRY)
		bad |= json_object_set_new(res, "x-expiry", json_pack("{s[ss] sI}", "write_fields",
			"expires_at", "ttl_seconds", "ttl_seconds_max", (json_int_t)10000000000));
	if (call->caps & A2M_CAP_X_HISTORY)
		bad |= json_object_set_new(res, "x-history", json_pack("{sI}", "revisions",
			(json_int_t)a2m_stack_history_keep(call->srv->stack)));
	if (call->caps & A2M_CAP_X_DEDUP) {
		const a2m_tier_layout *l = a2m_stack_tiers(call->srv->stack);
		json_t *tiers = json_array();
		for (size_t i = 0; tiers && i < l->n; i++)
			if (l->tiers[i].dedup)
				bad |= json_array_append_new(tiers, json_string(l->tiers[i].name));
		bad |= json_object_set_new(res, "x-dedup", tiers ? json_pack("{so ss}", "tiers",
			tiers, "normal_form", "analyzer") : NULL);
	}
	return bad;
}

/* The describe result; *cacheable says whether it is the unscoped one,
** the same for every caller with the same capabilities and push. */
static int describe(a2m_call *call, json_t *params, json_t **result, int *cacheable,
		    a2m_error *err)
{
	const char *protocol;
	a2m_scope scope;
	int rc;
	if ((rc = a2m_param_string(params, "protocol", &protocol, err)) ||
	    (rc = a2m_param_scope(call, params, &scope, err)))
		return rc;
	if (protocol && !a2m_protocol_compatible(protocol)) {
		a2m_error_set(err, A2M_PROTOCOL_NOT_SUPPORTED,
			      "protocol %s is not supported; this server speaks %s",
			      protocol, A2M_PROTOCOL);
		return a2m_error_data(err, json_pack("{s[s]}", "supported", A2M_PROTOCOL));
	}
	*cacheable = 1;
	/* Every member counts: a describe short of one would be a wrong one. */
	int bad = 0;
	json_t *caps = json_array(), *methods = json_array();
	for (unsigned bit = 1; caps && bit <= A2M_CAP_LAST; bit <<= 1)
		if (call->caps & bit)
			bad |= json_array_append_new(caps, json_string(a2m_capability_name(bit)));
	for (const a2m_method *m = a2m_methods; methods && m->name; m++)
		if ((call->caps & m->cap) && m->fn)
			bad |= json_array_append_new(methods, json_string(m->name));
	const a2m_limits *l = &call->srv->limits;
	/* The spec's three first; the rest are ours (docs/PROTOCOL.md, Limits),
	** which a client tolerates as fields it does not know (§2). */
	json_t *res = json_pack("{ss ss so so s{sI sI sI sI sI sI sI sI sI sI}}",
		"protocol", A2M_PROTOCOL,
		"name", call->srv->name,
		"capabilities", caps,
		"methods", methods,
		"limits",
		"max_records_per_call", (json_int_t)l->max_records_per_call,
		"max_recall_limit", (json_int_t)l->max_recall_limit,
		"max_content_length", (json_int_t)l->max_content_length,
		"max_depth", (json_int_t)l->max_depth,
		"max_string_bytes", (json_int_t)l->max_string_bytes,
		"max_metadata_bytes", (json_int_t)l->max_metadata_bytes,
		"max_ids_per_call", (json_int_t)l->max_ids_per_call,
		"max_where_fields", (json_int_t)l->max_where_fields,
		"max_where_values", (json_int_t)l->max_where_values,
		"max_dimensions", (json_int_t)l->max_dimensions);
	if (!res)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	if (call->srv->read_only)
		bad |= json_object_set_new(res, "read_only", json_true());
	if (call->caps & A2M_CAP_TIERS) {
		/* `owner` scopes the counts (§4.1); without one they are the
		** store's. Over a network the principal always scopes them. */
		int scoped = scope.scoped && (scope.owner || call->network);
		*cacheable = !scoped;
		json_t *tiers = describe_tiers(call, scoped ? &scope : NULL, err);
		if (!tiers) {
			json_decref(res);
			return err->code;
		}
		bad |= json_object_set_new(res, "tiers", tiers);
	}
	if (call->caps & A2M_CAP_EMBEDDINGS) {
		int64_t dims;
		if ((rc = a2m_stack_dimensions(call->srv->stack, &dims, err))) {
			json_decref(res);
			return rc;
		}
		/* Every metric below is really implemented by the vector scorer. */
		json_t *emb = json_pack("{so ss s[sss] so so}",
			"dimensions", dims ? json_integer(dims) : json_null(),
			"metric", a2m_metric_name(a2m_stack_metric(call->srv->stack)),
			"metrics", "cosine", "dot", "l2",
			"model", json_null(),
			"search", describe_vector_search(a2m_stack_scorer(call->srv->stack)));
		bad |= !emb || describe_generated(call, emb);
		bad |= json_object_set_new(res, "embeddings", emb);
	}
	int64_t unindexed = 0;
	json_t *scorer = describe_scorer(call, &unindexed, err);
	if (!scorer) {
		json_decref(res);
		return err->code;
	}
	bad |= json_object_set_new(res, "scorer", scorer);
	bad |= json_object_set_new(res, "unindexed", json_integer(unindexed));
	if (call->caps & A2M_CAP_EVENTS)
		bad |= json_object_set_new(res, "events", json_pack("{sb sI}", "push", call->push,
			"retain", (json_int_t)a2m_event_log_capacity(call->srv->events)));
	if (call->caps & A2M_CAP_SUMMARIZE)
		bad |= json_object_set_new(res, "summarize", json_pack("{so ss}", "model",
								       json_null(), "method", "extractive"));
	if (call->caps & A2M_CAP_PROMPT)
		bad |= json_object_set_new(res, "prompt", a2m_prompt_describe());
	bad |= describe_extensions(call, res);
	if (bad) {
		json_decref(res);
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	}
	*result = res;
	return 0;
}

int a2m_method_describe(a2m_call *call, json_t *params, json_t **result, a2m_error *err)
{
	int cacheable;
	return describe(call, params, result, &cacheable, err);
}

/* ---- the cache ---- */

/* Variants a server answers: capabilities (scopes or not) × push. */
#define VARIANTS 4

typedef struct variant {
	char    *text;        /* the serialised result; NULL: an unused slot */
	size_t   len;
	unsigned caps;
	int      push;
	uint64_t generation;  /* of the stack when it was computed */
	size_t   gen_dims;    /* the embedder's width then (changes without a commit) */
} variant;

struct a2m_describe_cache {
	/* Readers (every describe) copy out side by side; a writer replaces a
	** slot only after a change, so the lock is almost never contended. */
	pthread_rwlock_t lock;
	variant          v[VARIANTS];
	unsigned         next;  /* the slot to reuse when every one is taken */
};

a2m_describe_cache *a2m_describe_cache_new(void)
{
	a2m_describe_cache *c = calloc(1, sizeof *c);
	if (c && pthread_rwlock_init(&c->lock, NULL) != 0) {
		free(c);
		return NULL;
	}
	return c;
}

void a2m_describe_cache_free(a2m_describe_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < VARIANTS; i++)
		free(c->v[i].text);
	pthread_rwlock_destroy(&c->lock);
	free(c);
}

/* Whether params ask for nothing but the plain result: at most a protocol
** we speak (anything else takes the handler's path, errors included). */
static int plain_params(const json_t *params)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)params, key, v) {
		if (strcmp(key, "protocol") != 0)
			return 0;
		if (json_is_null(v))
			continue;
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v) ||
		    !a2m_protocol_compatible(json_string_value(v)))
			return 0;
	}
	return 1;
}

/* A copy of the variant's text when it is current, between head and tail
** (NUL-terminated strings); 0 on a miss. */
static int lookup(a2m_describe_cache *c, unsigned caps, int push, uint64_t generation,
		  size_t gen_dims, const char *head, const char *tail, char **text,
		  size_t *len)
{
	size_t head_len = strlen(head), tail_len = strlen(tail);
	int hit = 0;
	if (pthread_rwlock_rdlock(&c->lock) != 0)
		return 0;
	for (size_t i = 0; i < VARIANTS; i++) {
		const variant *v = &c->v[i];
		if (v->text && v->caps == caps && v->push == push &&
		    v->generation == generation && v->gen_dims == gen_dims) {
			if ((*text = malloc(head_len + v->len + tail_len + 1))) {
				memcpy(*text, head, head_len);
				memcpy(*text + head_len, v->text, v->len);
				memcpy(*text + head_len + v->len, tail, tail_len + 1);
				*len = head_len + v->len + tail_len;
				hit = 1;
			}
			break;
		}
	}
	pthread_rwlock_unlock(&c->lock);
	return hit;
}

/* Keeps a copy of text for the variant; without memory, simply does not. */
static void store(a2m_describe_cache *c, unsigned caps, int push, uint64_t generation,
		  size_t gen_dims, const char *text, size_t len)
{
	char *copy = malloc(len + 1);
	if (!copy)
		return;
	memcpy(copy, text, len + 1);
	if (pthread_rwlock_wrlock(&c->lock) != 0) {
		free(copy);
		return;
	}
	size_t slot = VARIANTS;
	for (size_t i = 0; i < VARIANTS && slot == VARIANTS; i++)
		if (!c->v[i].text || (c->v[i].caps == caps && c->v[i].push == push))
			slot = i;
	if (slot == VARIANTS)
		slot = c->next++ % VARIANTS;
	variant *v = &c->v[slot];
	free(v->text);
	*v = (variant){copy, len, caps, push, generation, gen_dims};
	pthread_rwlock_unlock(&c->lock);
}

int a2m_describe_text(a2m_call *call, json_t *params, char **text, size_t *len,
		      a2m_error *err)
{
	/* Read first: whatever the store holds afterwards is at least this new. */
	uint64_t generation = a2m_stack_generation(call->srv->stack);
	size_t gen_dims = a2m_stack_gen_dims(call->srv->stack);
	a2m_describe_cache *c = call->srv->describe_cache;
	if (c && plain_params(params) &&
	    lookup(c, call->caps, call->push, generation, gen_dims, "", "", text, len))
		return 0;
	json_t *result = NULL;
	int cacheable = 0;
	int rc = describe(call, params, &result, &cacheable, err);
	if (rc)
		return rc;
	*text = a2m_json_write(result, len);
	json_decref(result);
	if (!*text)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	if (c && cacheable)
		store(c, call->caps, call->push, generation, gen_dims, *text, *len);
	return 0;
}

int a2m_describe_plain(const json_t *params)
{
	return plain_params(params);
}

int a2m_describe_cached(const a2m_call *call, const char *protocol, const char *head,
			const char *tail, char **text, size_t *len)
{
	const a2m_server *srv = call->srv;
	if (protocol && !a2m_protocol_compatible(protocol))
		return 0;
	/* With an embedder the result changes when it first answers, which
	** is no commit: only a caller holding the handle may ask then. */
	if (!srv->describe_cache || a2m_stack_embedder(srv->stack) || !(call->caps & A2M_CAP_CORE))
		return 0;
	return lookup(srv->describe_cache, call->caps, call->push,
		      a2m_stack_generation(srv->stack), 0, head, tail, text, len);
}
