/*
** embed.c — the stack's use of the server's own embedder
** (docs/EMBEDDINGS.md §4): which records are owed a generated vector,
** paying that debt outside every write transaction, embedding a recall's
** query text, and the breaker that keeps an embedder that is down from
** costing every request a timeout.
**
** Nothing here ever touches a record's `embedding` (the caller's vector):
** generated vectors live in gen_embedding only, and a record that carries a
** caller vector is never embedded at all (spec §3.7, DECISIONS 018).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stack/stack_internal.h"
#include "store/unembedded.h"
#include "util/clock.h"
#include "util/grow.h"
#include "util/log.h"

const a2m_embedder *a2m_stack_embedder(const a2m_stack *st)
{
	return st->cfg.embedder;
}

size_t a2m_stack_gen_dims(const a2m_stack *st)
{
	return st->gen_dims;
}

/* True when rec is owed a generated vector (docs/EMBEDDINGS.md §4.2). */
static int is_owed(const a2m_stack *st, const a2m_record *rec)
{
	const a2m_tier *t = a2m_stack_tier_of(st, rec);
	if (!t || (t->kind && strcmp(t->kind, "working") == 0))
		return 0;
	return !rec->embedding && !rec->gen_embedding && a2m_has_text(rec->content);
}

/* ---- the embedder's identity (docs/EMBEDDINGS.md §4.4) ---- */

/* Store meta naming the embedder every stored gen_embedding came from. */
#define META_GEN_MODEL "gen_model"

typedef struct id_list {
	char  **v;
	size_t  n, cap;
	int     oom;
} id_list;

/* Scan visitor: collects the ids of records holding a generated vector. */
static int with_gen_visit(const a2m_record *rec, void *ctx)
{
	id_list *l = ctx;
	if (!rec->gen_embedding)
		return 0;
	if (a2m_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
		l->oom = 1;
		return 1;
	}
	if (!(l->v[l->n] = strdup(rec->id))) {
		l->oom = 1;
		return 1;
	}
	l->n++;
	return 0;
}

/* Drops the generated vector of each listed record. In a transaction. */
static int drop_vectors(a2m_store *s, const id_list *l)
{
	int rc = 0;
	for (size_t i = 0; i < l->n && !rc; i++) {
		a2m_record *cur = NULL;
		if ((rc = s->ops->get(s, l->v[i], &cur)) || !cur)
			continue;
		free(cur->gen_embedding);
		cur->gen_embedding = NULL;
		cur->gen_dims = 0;
		rc = s->ops->update(s, cur);
		a2m_record_free(cur);
	}
	return rc;
}

/*
** Once per stack: when the store's vectors came from another embedder
** (kind:model), drops them all, in one transaction, and records ours; the
** owed set then re-embeds them. Vectors of two models are two spaces (spec
** §3.7). Returns 0, or nonzero (nothing changed; tried again next time).
*/
static int check_model(a2m_stack *st)
{
	a2m_store *s = st->store;
	a2m_embedder *e = st->cfg.embedder;
	if (st->model_checked || st->cfg.read_only)
		return 0;
	char want[256], *have = NULL;
	snprintf(want, sizeof want, "%s:%s", e->kind, e->model(e));
	if (s->ops->meta_get(s, META_GEN_MODEL, &have) != 0)
		return -1;
	int same = have && strcmp(have, want) == 0;
	free(have);
	if (same) {
		st->model_checked = 1;
		return 0;
	}
	id_list l = {0};
	a2m_query q = {0};
	a2m_error err = {0};
	int rc = a2m_stack_begin(st, &err);
	if (!rc) {
		rc = s->ops->scan(s, &q, with_gen_visit, &l);
		if (!rc && !l.oom && !(rc = drop_vectors(s, &l)) &&
		    !(rc = s->ops->meta_set(s, META_GEN_MODEL, want)))
			rc = a2m_stack_commit(st, &err);
		else
			a2m_stack_rollback(st);
	}
	if (!rc && !l.oom && l.n)
		a2m_log(A2M_LOG_WARN, "embedder is now %s: dropped %zu vectors of another model; "
			"they are embedded again", want, l.n);
	for (size_t i = 0; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
	a2m_error_clear(&err);
	st->model_checked = !rc && !l.oom;
	return st->model_checked ? 0 : -1;
}

/* Logs a failed embedder call once per outage and opens the breaker. */
static void note_failure(a2m_stack *st, int status, const char *msg)
{
	const char *kind = st->cfg.embedder->kind;
	int config = status == A2M_EMBED_EHTTP || status == A2M_EMBED_EPROTO;
	if (!st->embed_failing)
		a2m_log(config ? A2M_LOG_ERROR : A2M_LOG_WARN,
			"%s (%s %s); ranking lexically until it answers", msg, kind,
			a2m_embed_strerror(status));
	st->embed_failing = 1;
	st->embed_retry_at = a2m_clock_now_ms() + A2M_EMBED_BREAKER_MS;
}

/*
** Calls the embedder unless the breaker holds it off. Returns 0 with
** *vecs and *dims set, or nonzero (the embedder's status, or 1 for "held
** off") with *vecs NULL.
*/
static int embed_call(a2m_stack *st, const char *const *texts, size_t n, float **vecs,
		      size_t *dims)
{
	a2m_embedder *e = st->cfg.embedder;
	char msg[256] = "";
	*vecs = NULL;
	*dims = 0;
	if (!e)
		return 1;
	if (st->embed_retry_at && a2m_clock_now_ms() < st->embed_retry_at)
		return 1;
	int rc = e->embed(e, texts, n, vecs, dims, msg, sizeof msg);
	if (rc != 0) {
		note_failure(st, rc, msg);
		return rc;
	}
	if (st->embed_failing)
		a2m_log(A2M_LOG_INFO, "embedder %s answering again", e->kind);
	st->embed_failing = 0;
	st->embed_retry_at = 0;
	if (*dims)
		st->gen_dims = *dims;
	return 0;
}

int a2m_stack_embed_text(a2m_stack *st, const char *text, float **vec, size_t *dims)
{
	*vec = NULL;
	*dims = 0;
	if (!st->cfg.embedder || !a2m_has_text(text))
		return 1;
	if (check_model(st) != 0)
		return 1; /* stored vectors may be of another model: rank lexically */
	return embed_call(st, &text, 1, vec, dims);
}

/* One owed record as read: what must still hold when its vector is stored. */
typedef struct owed {
	char    *id;
	char    *content;
	int64_t  revision;
	int64_t  seq;
} owed;

typedef struct owed_list {
	a2m_stack *st;
	owed      *v;
	size_t     n;
	size_t     stop_at;  /* the visit stops once n reaches it */
	int        oom;
} owed_list;

/* Visitor: collects owed records until stop_at. */
static int owed_visit(const a2m_record *rec, void *ctx)
{
	owed_list *l = ctx;
	if (!is_owed(l->st, rec))
		return 0;
	owed *o = &l->v[l->n];
	o->id = strdup(rec->id);
	o->content = strdup(rec->content);
	o->revision = rec->revision;
	o->seq = rec->seq;
	if (!o->id || !o->content) {
		free(o->id);
		free(o->content);
		l->oom = 1;
		return 1;
	}
	return ++l->n >= l->stop_at ? 1 : 0;
}

/* Frees the records from the from-th on (the list's array stays). */
static void owed_drop(owed_list *l, size_t from)
{
	for (size_t i = from; i < l->n; i++) {
		free(l->v[i].id);
		free(l->v[i].content);
	}
	l->n = from < l->n ? from : l->n;
}

static void owed_free(owed_list *l)
{
	owed_drop(l, 0);
	free(l->v);
}

static int by_seq(const void *a, const void *b)
{
	const owed *x = a, *y = b;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/*
** The oldest max records owed a vector, into l (room for max per tier of
** the layout): the store's records without vectors (store.h,
** scan_unembedded), up to max of each non-working tier, the oldest max of
** them kept. Returns 0, A2M_STORE_NO_INDEX (l empty: the store cannot
** answer, scan instead) or the store's code.
*/
static int owed_indexed(a2m_stack *st, owed_list *l, size_t max)
{
	a2m_store *s = st->store;
	const a2m_tier_layout *lay = &st->cfg.tiers;
	int rc = s->ops->scan_unembedded ? 0 : A2M_STORE_NO_INDEX;
	for (size_t i = 0; i < lay->n && !rc && !l->oom; i++) {
		const a2m_tier *t = &lay->tiers[i];
		if (t->kind && strcmp(t->kind, "working") == 0)
			continue;
		l->stop_at = l->n + max;
		rc = s->ops->scan_unembedded(s, t->name, owed_visit, l);
	}
	if (rc) {
		owed_drop(l, 0);
		return rc;
	}
	if (l->n > max) {
		qsort(l->v, l->n, sizeof *l->v, by_seq);
		owed_drop(l, max);
	}
	return 0;
}

/* Stores vec as o's generated vector if the record is unchanged. In a transaction. */
static int store_one(a2m_stack *st, const owed *o, const float *vec, size_t dims,
		     size_t *done)
{
	a2m_store *s = st->store;
	a2m_record *cur = NULL;
	int rc = s->ops->get(s, o->id, &cur);
	if (rc || !cur)
		return rc;
	if (cur->revision == o->revision && strcmp(cur->content, o->content) == 0 &&
	    is_owed(st, cur)) {
		cur->gen_embedding = malloc(dims * sizeof *vec);
		if (!cur->gen_embedding) {
			a2m_record_free(cur);
			return a2m_store_fail(s, "out of memory");
		}
		memcpy(cur->gen_embedding, vec, dims * sizeof *vec);
		cur->gen_dims = dims;
		if ((rc = s->ops->update(s, cur)) == 0)
			(*done)++;
	}
	a2m_record_free(cur);
	return rc;
}

/* Writes the vectors back in one short transaction. */
static int store_vectors(a2m_stack *st, const owed_list *l, const float *vecs, size_t dims,
			 size_t *done, a2m_error *err)
{
	int rc = a2m_stack_begin(st, err);
	for (size_t i = 0; i < l->n && !rc; i++)
		if ((rc = store_one(st, &l->v[i], vecs + i * dims, dims, done)))
			a2m_stack_store_error(st, err, rc);
	if (!rc)
		return a2m_stack_commit(st, err);
	a2m_stack_rollback(st);
	*done = 0;
	return rc;
}

int a2m_stack_embed_owed(a2m_stack *st, size_t max, size_t *done, a2m_error *err)
{
	*done = 0;
	if (!st->cfg.embedder || st->cfg.read_only || !max)
		return 0;
	if (st->embed_retry_at && a2m_clock_now_ms() < st->embed_retry_at)
		return 0;
	if (check_model(st) != 0)
		return a2m_stack_store_error(st, err, A2M_INTERNAL_ERROR);
	size_t ntiers = st->cfg.tiers.n ? st->cfg.tiers.n : 1;
	owed_list l = {.st = st};
	if (!(l.v = calloc(max * ntiers, sizeof *l.v)))
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	int rc = owed_indexed(st, &l, max);
	if (rc == A2M_STORE_NO_INDEX) {
		/* No index of them, or not now: the oldest max of a scan. */
		a2m_query q = {0};
		l.stop_at = max;
		rc = st->store->ops->scan(st->store, &q, owed_visit, &l);
	}
	if (rc || l.oom) {
		rc = rc ? a2m_stack_store_error(st, err, rc)
			: a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
		owed_free(&l);
		return rc;
	}
	const char **texts = calloc(l.n + 1, sizeof *texts);
	float *vecs = NULL;
	size_t dims = 0;
	for (size_t i = 0; texts && i < l.n; i++)
		texts[i] = l.v[i].content;
	if (!texts)
		rc = a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	else if (l.n && (rc = embed_call(st, texts, l.n, &vecs, &dims)) != 0)
		rc = rc < 0 ? rc : 0; /* held off by the breaker: nothing to do */
	else if (l.n && dims)
		rc = store_vectors(st, &l, vecs, dims, done, err);
	free(vecs);
	free(texts);
	owed_free(&l);
	return rc;
}

void a2m_stack_embed_after_write(a2m_stack *st)
{
	size_t done = 0;
	a2m_error err = {0};
	if (!st->cfg.embedder || st->cfg.read_only)
		return;
	(void)a2m_stack_embed_owed(st, A2M_EMBED_DEFAULT_BATCH, &done, &err);
	a2m_error_clear(&err);
}
