/*
** open.c — a2m_open and a2m_close (include/a2m.h): the server built from the
** options (server/config.h) — the store engine, the scorer and the index it
** keeps, the tier stack, the event log, the limits — and taken apart again.
*/
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "events/event_log.h"
#include "events/shared.h"
#include "protocol/events_hook.h"
#include "protocol/protocol.h"
#include "rank/scorer.h"
#include "server/config.h"
#include "server/delegate.h"
#include "server/server.h"
#include "stack/stack.h"
#include "stack/where.h"
#include "store/store.h"
#include "util/thread.h"

/*
** How recall blends relevance with recency and salience (stack.h,
** a2m_blend; DESIGN §4). describe reports them.
*/
#define BLEND_RELEVANCE 0.75
#define BLEND_RECENCY   0.15
#define BLEND_SALIENCE  0.10

static int open_fail(char **errmsg, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int open_fail(char **errmsg, int code, const char *fmt, ...)
{
	if (errmsg) {
		char buf[512];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(buf, sizeof buf, fmt, ap);
		va_end(ap);
		*errmsg = strdup(buf);
	}
	return code;
}

/*
** The server's embedder, when cfg asks for one (docs/EMBEDDINGS.md): 0
** with *out NULL when it does not, -1 with a message in err for a bad
** configuration. No network I/O: the model server may still be down.
*/
static int make_embedder(const a2m_config *cfg, a2m_embedder **out, char *err,
			 size_t errlen)
{
	*out = NULL;
	if (!cfg->embed_kind)
		return 0;
	a2m_embedder_config ec = {.kind = cfg->embed_kind, .url = cfg->embed_url,
				  .model = cfg->embed_model, .api_key = cfg->embed_api_key,
				  .timeout_ms = (long)cfg->embed_timeout_ms};
	*out = a2m_embedder_new(&ec, err, errlen);
	return *out ? 0 : -1;
}

/* See server.h. */
size_t a2m_server_vector_pool(const a2m_config *cfg)
{
	int quantized = cfg->vector_search && strcmp(cfg->vector_search, "quantized") == 0;
	return quantized ? (size_t)cfg->vector_pool : 0;
}

/*
** The scorer: text ranked by ranking ("bm25", the default, or the old
** "lexical"), fused with the caller's vectors under metric (searched
** exactly, or in the quantized mode with vector_pool rows per result), and with the
** embedder's generated vectors when generated is set; BM25's analyser
** analyses a batch on helper_threads (a2m_config). NULL with a message
** in err.
*/
a2m_scorer *a2m_server_scorer(const char *ranking, a2m_metric metric, size_t vector_pool,
			      int generated, int helper_threads, int64_t embed_weight, char *err,
			      size_t errlen)
{
	a2m_scorer *text;
	if (!ranking || strcmp(ranking, "bm25") == 0) {
		a2m_analyzer_options opt;
		a2m_analyzer_options_init(&opt);
		opt.batch_threads = helper_threads;
		text = a2m_scorer_bm25_new(&opt);
	} else if (strcmp(ranking, "lexical") == 0) {
		text = a2m_scorer_lexical_new();
	} else {
		snprintf(err, errlen, "unknown ranking '%s' (use bm25 or lexical)", ranking);
		return NULL;
	}
	/*
	** With an embedder, a third part compares generated vectors only, and
	** weighs embed_weight percent against the text's 100 - embed_weight.
	** The caller's vectors weigh what the text weighs: a query carrying a
	** vector is never embedded (the third part abstains on it), so it
	** ranks by the even mean of text and vector, as it would without an
	** embedder, at any embed_weight (at 100 the text counts for nothing
	** and the caller's vector alone ranks). Without one, the plain mean.
	*/
	a2m_scorer *parts[3] = {text, a2m_scorer_vector_new(metric, vector_pool),
				generated ? a2m_scorer_gen_vector_new(A2M_GEN_MIN_COSINE) : NULL};
	double text_w = (double)(100 - embed_weight);
	double weights[3] = {text_w, text_w > 0 ? text_w : 1, (double)embed_weight};
	a2m_scorer *scorer = generated ? a2m_scorer_hybrid_weighted(parts, weights, 3)
				       : a2m_scorer_hybrid_new(parts, 2);
	if (!scorer)
		snprintf(err, errlen, "out of memory");
	return scorer;
}

/* The directory procedural records are mirrored into: beside the database
** (DECISIONS 024), "memory.db" → "memory.procedural". */
static char *procedural_dir(const char *db_path)
{
	size_t len = strlen(db_path);
	if (len > 3 && strcmp(db_path + len - 3, ".db") == 0)
		len -= 3;
	char *dir = malloc(len + sizeof ".procedural");
	if (dir) {
		memcpy(dir, db_path, len);
		memcpy(dir + len, ".procedural", sizeof ".procedural");
	}
	return dir;
}

/* Which record fields `where` may test: those of the declared capabilities. */
static unsigned where_fields(unsigned caps)
{
	unsigned f = 0;
	if (caps & A2M_CAP_TIERS)
		f |= A2M_FIELD_TIER;
	if (caps & A2M_CAP_SALIENCE)
		f |= A2M_FIELD_SALIENCE;
	if (caps & A2M_CAP_SCOPES)
		f |= A2M_FIELD_OWNER;
	if (caps & A2M_CAP_SESSIONS)
		f |= A2M_FIELD_SESSION;
	if (caps & A2M_CAP_KEYS)
		f |= A2M_FIELD_KEY;
	if (caps & A2M_CAP_EXTERNAL)
		f |= A2M_FIELD_EXTERNAL;
	if (caps & A2M_CAP_X_EXPIRY)
		f |= A2M_FIELD_EXPIRY;
	return f;
}

/*
** The extensions (docs/PROTOCOL.md) as this store can serve them: each is
** declared only when the engine has the ops it needs (store.h) and, for
** x-history, revisions are kept. A layout asking for what is not declared
** has that part ignored when the capability was left out on purpose, and
** is refused when the engine cannot do it. 0, or A2M_RANGE with err set.
*/
static int gate_extensions(const a2m_config *cfg, const a2m_store *store,
			   a2m_tier_layout *layout, unsigned *caps, char *err, size_t errlen)
{
	const a2m_store_ops *ops = store->ops;
	int can_expire = ops->next_expiry && ops->scan_expired;
	/* History is a key's: without keys there is nothing to keep it for. */
	if (!ops->history_put || !ops->history_visit || cfg->history_revisions == 0 ||
	    !(*caps & A2M_CAP_KEYS))
		*caps &= ~(unsigned)A2M_CAP_X_HISTORY;
	for (size_t i = 0; i < layout->n; i++) {
		a2m_tier *t = &layout->tiers[i];
		if (t->ttl_ms && (*caps & A2M_CAP_X_EXPIRY) && !can_expire) {
			snprintf(err, errlen, "tier '%s' has ttl_seconds, and the %s engine cannot "
				 "expire records", t->name, ops->engine);
			return A2M_RANGE;
		}
		if (t->dedup && (*caps & A2M_CAP_X_DEDUP) && !ops->by_fingerprint) {
			snprintf(err, errlen, "tier '%s' has dedup, and the %s engine cannot find "
				 "duplicates", t->name, ops->engine);
			return A2M_RANGE;
		}
		if (!(*caps & A2M_CAP_X_EXPIRY))
			t->ttl_ms = 0;
		if (!(*caps & A2M_CAP_X_DEDUP))
			t->dedup = 0;
	}
	if (!can_expire)
		*caps &= ~(unsigned)A2M_CAP_X_EXPIRY;
	if (!ops->by_fingerprint)
		*caps &= ~(unsigned)A2M_CAP_X_DEDUP;
	return 0;
}

/* Whether a tier of the layout suppresses duplicates. */
static int any_dedup(const a2m_tier_layout *layout)
{
	for (size_t i = 0; i < layout->n; i++)
		if (layout->tiers[i].dedup)
			return 1;
	return 0;
}

int a2m_server_mirror(const a2m_config *cfg, const a2m_tier_layout *layout, char **dir,
		      const char **tier)
{
	*dir = NULL;
	*tier = NULL;
	if (strcmp(cfg->engine, "sqlite") != 0 || strcmp(cfg->path, ":memory:") == 0)
		return 0;
	for (size_t i = 0; i < layout->n && !*tier; i++)
		if (strcmp(layout->tiers[i].kind, "procedural") == 0)
			*tier = layout->tiers[i].name;
	if (*tier && !(*dir = procedural_dir(cfg->path))) {
		*tier = NULL;
		return -1;
	}
	return 0;
}

int a2m_server_open_store(const a2m_config *cfg, const a2m_tier_layout *layout,
			  const a2m_indexer *indexer, a2m_store **store, char *err, size_t errlen)
{
	if (strcmp(cfg->engine, "memory") == 0) {
		if (cfg->read_only) {
			snprintf(err, errlen, "a read-only server needs an existing database (--db)");
			return A2M_RANGE;
		}
		return a2m_store_memory_open(store, err, errlen) ? A2M_CANTOPEN : A2M_OK;
	}
	if (strcmp(cfg->engine, "postgres") == 0) {
		/* Procedural records keep their text in the row (DECISIONS 024). */
		a2m_postgres_options po = {.read_only = cfg->read_only != 0,
					   .unembedded_index = cfg->embed_kind != NULL};
		if (!cfg->postgres) {
			snprintf(err, errlen, "the PostgreSQL engine needs a connection string");
			return A2M_RANGE;
		}
		return a2m_store_postgres_open(cfg->postgres, &po, store, err, errlen)
			? A2M_CANTOPEN : A2M_OK;
	}
	a2m_sqlite_options opt = {0};
	opt.synchronous_full = strcmp(cfg->synchronous, "normal") != 0;
	opt.read_only = cfg->read_only != 0;
	opt.group_commit = cfg->group_commit != 0;
	opt.unembedded_index = cfg->embed_kind != NULL;
	opt.merge_inline = cfg->helper_threads == 0;
	opt.postings_cache_bytes = (size_t)cfg->postings_cache_mb << 20;
	opt.mmap_bytes = (size_t)cfg->mmap_mb << 20;
	opt.indexer = indexer;
	char *dir = NULL;
	if (a2m_server_mirror(cfg, layout, &dir, &opt.procedural_tier) != 0) {
		snprintf(err, errlen, "out of memory");
		return A2M_NOMEM;
	}
	opt.procedural_dir = dir;
	int rc = a2m_store_sqlite_open(cfg->path, &opt, store, err, errlen);
	free(dir);
	return rc ? A2M_CANTOPEN : A2M_OK;
}

/*
** The server over an opened store and its scorer: index, stack, event log,
** limits. Takes store, scorer and embedder (closed on failure) and the
** layout; NULL with a message in err, and *code, on failure.
*/
static a2m *make_handle(const a2m_config *cfg, unsigned caps, a2m_metric metric,
			a2m_store *store, a2m_scorer *scorer, a2m_embedder *embedder,
			a2m_tier_layout *layout, int *code, char *err, size_t errlen)
{
	a2m_stack *stack = NULL;
	a2m *h = NULL;
	*code = A2M_NOMEM;
	/*
	** The store keeps the scorer's index from now on, in the same
	** transactions as the records; an index built by another analysis is
	** rebuilt here, once (docs/RANKING.md).
	*/
	if (scorer->indexer && store->ops->index_attach &&
	    store->ops->index_attach(store, scorer->indexer) != 0) {
		snprintf(err, errlen, "cannot build the search index: %s", store->errmsg);
		*code = A2M_CANTOPEN;
		goto fail;
	}
	a2m_stack_config scfg = {0};
	scfg.tiers = *layout;
	scfg.fields = where_fields(caps);
	scfg.metric = metric;
	scfg.default_salience = 1.0;
	scfg.blend = (a2m_blend){BLEND_RELEVANCE, BLEND_RECENCY, BLEND_SALIENCE};
	scfg.read_only = cfg->read_only != 0;
	scfg.capacity_after_sync = cfg->capacity_after_sync != 0;
	scfg.embedder = embedder;
	scfg.touch_max = (size_t)cfg->touch_buffer;
	scfg.history_keep = (caps & A2M_CAP_X_HISTORY) ? (size_t)cfg->history_revisions : 0;
	scfg.fingerprints = (caps & A2M_CAP_X_DEDUP) && any_dedup(layout);
	/* From here the stack owns the store, the scorer, the embedder and the
	** layout, and a2m_stack_free releases them, also when it fails. */
	memset(layout, 0, sizeof *layout);
	embedder = NULL;
	stack = a2m_stack_new(store, scorer, &scfg);
	/* Servers sharing a store share its event log (events/shared.h). */
	a2m_store *shared = stack && store->ops->events_append ? store : NULL;
	store = NULL;
	scorer = NULL;
	h = calloc(1, sizeof *h);
	char *name = strdup(cfg->name);
	a2m_event_log *events = !(caps & A2M_CAP_EVENTS) ? NULL
		: shared ? a2m_event_log_new_shared(shared, (size_t)cfg->events_retain)
		: a2m_event_log_new((size_t)cfg->events_retain);
	if (!stack || !h || !name || ((caps & A2M_CAP_EVENTS) && !events)) {
		a2m_event_log_free(events);
		free(name);
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* Without a cache describe is only slower. A read-only handle has
	** none: the commits it follows are another writer's, which move no
	** generation of its stack, so a cached result would go stale. */
	if (!cfg->read_only)
		h->srv.describe_cache = a2m_describe_cache_new();
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&h->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&h->join_mu, NULL);
	pthread_cond_init(&h->join_cv, NULL);
	h->srv.name = name;
	h->srv.declared = caps;
	h->srv.stack = stack;
	h->srv.read_only = cfg->read_only != 0;
	h->srv.events = events;
	h->srv.limits.max_records_per_call = cfg->max_records_per_call;
	h->srv.limits.max_content_length = cfg->max_content_length;
	h->srv.limits.max_recall_limit = cfg->max_recall_limit;
	h->srv.limits.default_recall_limit = cfg->default_recall_limit;
	h->srv.limits.max_depth = cfg->max_depth;
	h->srv.limits.max_string_bytes = cfg->max_string_bytes;
	h->srv.limits.max_metadata_bytes = cfg->max_metadata_bytes;
	h->srv.limits.max_ids_per_call = cfg->max_ids_per_call;
	h->srv.limits.max_where_fields = cfg->max_where_fields;
	h->srv.limits.max_where_values = cfg->max_where_values;
	h->srv.limits.max_dimensions = cfg->max_dimensions;
	a2m_stack_on_change(stack, a2m_events_on_change, &h->srv);
	/* A deployment's log commits with the write it describes: one commit. */
	if (events && a2m_event_log_shared(events))
		a2m_stack_log_in_transaction(stack, a2m_events_write);
	/* Other servers' events need a listener only once a channel can push
	** (a2m_set_notify starts it). */
	if (events && a2m_event_log_shared(events) && shared->ops->watch)
		h->watched = shared;
	*code = A2M_OK;
	return h;
fail:
	if (!stack) {
		if (embedder)
			embedder->destroy(embedder);
		if (scorer)
			scorer->destroy(scorer);
		if (store)
			store->ops->close(store);
		a2m_tiers_free(layout);
	}
	a2m_stack_free(stack);
	free(h);
	return NULL;
}

/*
** The configuration as it will be served: the caller's options over the
** file's over the defaults, and what follows from them. 0, or a status with
** a message in err.
*/
int a2m_server_resolve(a2m_config *cfg, a2m_tier_layout *layout, unsigned *caps,
		       a2m_metric *metric, char *err, size_t errlen)
{
	int rc;
	if (cfg->config_file &&
	    (rc = a2m_config_load_file(cfg, cfg->config_file, layout, err, errlen)) != 0)
		return rc;
	if (!layout->n && a2m_tiers_default(layout) != 0) {
		snprintf(err, errlen, "out of memory");
		return A2M_NOMEM;
	}
	if (cfg->default_recall_limit > cfg->max_recall_limit)
		cfg->default_recall_limit = cfg->max_recall_limit;
	/* A connection string selects PostgreSQL unless an engine was named. */
	if (cfg->postgres && !a2m_config_was_set(cfg, "engine") && !a2m_config_was_set(cfg, "path") &&
	    a2m_config_set(cfg, "engine", "postgres") != A2M_OK) {
		snprintf(err, errlen, "out of memory");
		return A2M_NOMEM;
	}
	if (strcmp(cfg->engine, "postgres") == 0 && !cfg->postgres) {
		snprintf(err, errlen, "the engine postgres needs a connection string (option postgres)");
		return A2M_RANGE;
	}
	/* After the file: resolved once, for the analyser and the store alike. */
	if (cfg->helper_threads < 0)
		cfg->helper_threads = a2m_helpers_default();
	*caps = ~0u;
	if (cfg->capabilities &&
	    a2m_config_parse_capabilities(cfg->capabilities, caps, err, errlen) != 0)
		return A2M_RANGE;
	*caps &= (A2M_CAP_LAST << 1) - 1;
	if (a2m_metric_parse(cfg->metric, metric) != 0) {
		snprintf(err, errlen, "unknown metric '%s' (use cosine, dot or l2)", cfg->metric);
		return A2M_RANGE;
	}
	return A2M_OK;
}

int a2m_open(const a2m_config *cfg_in, a2m **out, char **errmsg)
{
	if (errmsg)
		*errmsg = NULL;
	if (!out)
		return A2M_MISUSE;
	*out = NULL;
	/* A copy: the file fills it, the caller's stays as it was. */
	a2m_config *cfg = a2m_config_copy(cfg_in);
	if (!cfg)
		return open_fail(errmsg, A2M_NOMEM, "out of memory");
	char err[512] = "";
	a2m_tier_layout layout = {0};
	unsigned caps;
	a2m_metric metric;
	a2m_embedder *embedder = NULL;
	a2m_store *store = NULL;
	a2m_scorer *scorer = NULL;
	int rc = a2m_server_resolve(cfg, &layout, &caps, &metric, err, sizeof err);
	/* No network I/O at open: the model server may still be down. */
	if (!rc && make_embedder(cfg, &embedder, err, sizeof err) != 0)
		rc = A2M_RANGE;
	/* Before the store: a new file gets the scorer's index in the
	** transaction that makes it (store.h, a2m_sqlite_options.indexer). */
	if (!rc && !(scorer = a2m_server_scorer(cfg->ranking, metric, a2m_server_vector_pool(cfg),
						embedder != NULL, (int)cfg->helper_threads,
						cfg->embed_weight, err, sizeof err)))
		rc = A2M_NOMEM;
	char why[480];
	if (!rc && (rc = a2m_server_open_store(cfg, &layout, scorer->indexer, &store, why,
					       sizeof why)) != 0)
		snprintf(err, sizeof err, "cannot open store: %s", why);
	if (!rc)
		rc = gate_extensions(cfg, store, &layout, &caps, err, sizeof err);
	if (!rc && !(*out = make_handle(cfg, caps, metric, store, scorer, embedder, &layout, &rc,
					err, sizeof err)))
		store = NULL, scorer = NULL, embedder = NULL;  /* make_handle released them */
	if (rc) {
		if (embedder)
			embedder->destroy(embedder);
		if (scorer)
			scorer->destroy(scorer);
		if (store)
			store->ops->close(store);
		a2m_tiers_free(&layout);
		open_fail(errmsg, rc, "%s", err);
	}
	a2m_config_free(cfg);
	return rc;
}

int a2m_open_delegate(const a2m_delegate *ops, void *ctx, a2m **out)
{
	a2m *h = calloc(1, sizeof *h);
	*out = NULL;
	if (!h)
		return A2M_NOMEM;
	if (pthread_rwlock_init(&h->lock, NULL) != 0) {
		free(h);
		return A2M_NOMEM;
	}
	h->delegate = ops;
	h->delegate_ctx = ctx;
	*out = h;
	return A2M_OK;
}

void a2m_close(a2m *h)
{
	if (!h)
		return;
	if (h->delegate) {
		h->delegate->close(h->delegate_ctx);
		pthread_rwlock_destroy(&h->lock);
		free(h);
		return;
	}
	/* No call from the store's thread may reach a handle being freed. */
	if (h->watching)
		h->watched->ops->watch(h->watched, NULL, NULL);
	a2m_stack_free(h->srv.stack);
	a2m_event_log_free(h->srv.events);
	a2m_describe_cache_free(h->srv.describe_cache);
	json_decref(h->srv.sub_kinds);
	free(h->srv.sub_owner);
	free((char *)h->srv.name);
	pthread_cond_destroy(&h->join_cv);
	pthread_mutex_destroy(&h->join_mu);
	pthread_rwlock_destroy(&h->lock);
	free(h);
}
