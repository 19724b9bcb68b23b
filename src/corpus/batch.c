/*
** batch.c — the corpus indexer's writes, per batch of files, in the order
** batch.h explains: the table of files and the store kept so that a crash
** between any two steps leaves nothing the next sync cannot mend.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "corpus/batch.h"
#include "util/grow.h"
#include "util/json_read.h"
#include "util/json_write.h"

static int oom(a2m_corpus_batch *b)
{
	snprintf(b->err, sizeof b->err, "out of memory");
	return -1;
}

/* ---- the protocol ------------------------------------------------------ */

/*
** Whether reply is the success response to the request of that id: the
** library writes one as {"jsonrpc":"2.0","id":ID,"result":...}. Anything
** else is read whole (an error, to say why). A batch's result lists every
** id, and reading it only to find no "error" in it cost 2% of indexing
** (callgrind).
*/
static int succeeded(const char *reply, int id)
{
	char head[64];
	int n = snprintf(head, sizeof head, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":", id);
	return n > 0 && (size_t)n < sizeof head && strncmp(reply, head, (size_t)n) == 0;
}

/* What the handle answered (reply freed here) to the request of that id:
** 0, or -1 with the reason. */
static int answered(a2m_corpus_batch *b, int rc, char *reply, int id)
{
	if (rc != A2M_OK || !reply) {
		snprintf(b->err, sizeof b->err, "the store: %s", a2m_strerror(rc));
		a2m_free(reply);
		return -1;
	}
	if (succeeded(reply, id)) {
		a2m_free(reply);
		return 0;
	}
	json_t *r = json_loads(reply, 0, NULL);
	json_t *error = json_object_get(r, "error");
	if (!r || error) {
		json_t *m = json_object_get(error, "message");
		snprintf(b->err, sizeof b->err, "the store: %s",
			 json_is_string(m) ? json_string_value(m) : reply);
		rc = -1;
	}
	json_decref(r);
	a2m_free(reply);
	return rc ? -1 : 0;
}

/* Sends the request built in msg (freed here), whose id is id, on the
** indexer's handle; 0, or -1 with the reason. */
static int call(a2m_corpus_batch *b, a2m_buf *msg, int id)
{
	char *reply = NULL;
	if (msg->failed) {
		a2m_buf_free(msg);
		return oom(b);
	}
	int rc = a2m_handle(b->h, msg->p, msg->len, &reply);
	a2m_buf_free(msg);
	return answered(b, rc, reply, id);
}

/* The memory/remember of records [from, to) of the batch, into msg. */
static void remember_text(const a2m_corpus_batch *b, size_t from, size_t to, a2m_buf *msg)
{
	static const char head[] =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\",\"params\":{\"records\":[";
	a2m_buf_put(msg, head, sizeof head - 1);
	for (size_t i = from; i < to; i++) {
		size_t end = i + 1 < b->n_rec ? b->rec_off[i + 1] : b->records.len;
		if (i > from)
			a2m_buf_put(msg, ",", 1);
		a2m_buf_put(msg, b->records.p + b->rec_off[i], end - b->rec_off[i]);
	}
	a2m_buf_puts(msg, "]}}");
}

/* memory/remember of the records of call k (A2M_CORPUS_BATCH_RECORDS a
** call): the request read ahead when there is one, else its text. */
static int remember(a2m_corpus_batch *b, size_t k)
{
	if (k < b->n_ready && b->ready[k]) {
		/* The handle lets go of its reference; the batch keeps one for
		** a2m_corpus_batch_release, on the thread that read the request. */
		json_t *msg = json_incref(b->ready[k]);
		char *reply = NULL;
		/* Called first: answered() takes the reply it sets. */
		int rc = b->handle_value(b->h, msg, &reply);
		return answered(b, rc, reply, 1);
	}
	if (b->vals)
		return oom(b);  /* prepare failed: the records have no text */
	size_t from = k * A2M_CORPUS_BATCH_RECORDS, to = from + A2M_CORPUS_BATCH_RECORDS;
	a2m_buf msg = {0};
	remember_text(b, from, to < b->n_rec ? to : b->n_rec, &msg);
	return call(b, &msg, 1);
}

/* The memory/remember of the values of records [from, to), which it takes;
** NULL when memory ran out. */
static json_t *remember_values(a2m_corpus_batch *b, size_t from, size_t to)
{
	json_t *recs = json_array();
	for (size_t i = from; i < to; i++) {
		if (json_array_append_new(recs, b->vals[i]) != 0) {
			/* Taken by the array, or freed by it when it failed. */
			b->vals[i] = NULL;
			json_decref(recs);
			return NULL;
		}
		b->vals[i] = NULL;
	}
	/* As a2m_json_read would read the text remember_text writes. */
	json_t *msg = json_object(), *params = json_object();
	int rc = !msg || !params;
	if (!rc)
		rc = json_object_set_new_nocheck(params, "records", recs) ||
		     json_object_set_new_nocheck(msg, "jsonrpc", json_string("2.0")) ||
		     json_object_set_new_nocheck(msg, "id", json_integer(1)) ||
		     json_object_set_new_nocheck(msg, "method", json_string("memory/remember"));
	else
		json_decref(recs);
	if (!rc)
		rc = json_object_set_new_nocheck(msg, "params", params);
	else
		json_decref(params);
	if (rc) {
		json_decref(msg);
		return NULL;
	}
	return msg;
}

int a2m_corpus_batch_prepare(a2m_corpus_batch *b)
{
	size_t n = (b->n_rec + A2M_CORPUS_BATCH_RECORDS - 1) / A2M_CORPUS_BATCH_RECORDS;
	if (!b->handle_value || b->n_ready || !n || b->failed || b->records.failed)
		return 0;
	if (!(b->ready = calloc(n, sizeof *b->ready))) {
		b->failed = 1;
		return -1;
	}
	b->n_ready = n;
	for (size_t k = 0; k < n; k++) {
		size_t from = k * A2M_CORPUS_BATCH_RECORDS, to = from + A2M_CORPUS_BATCH_RECORDS;
		if (to > b->n_rec)
			to = b->n_rec;
		if (b->vals) {
			if (!(b->ready[k] = remember_values(b, from, to))) {
				b->failed = 1;
				return -1;
			}
			continue;
		}
		a2m_buf msg = {0};
		int nomem = 0;
		remember_text(b, from, to, &msg);
		/* Read as a2m_handle reads; what the reader leaves (none of ours
		** should be) goes as text, for a2m_handle to say why. */
		if (!msg.failed)
			b->ready[k] = a2m_json_read_ex(msg.p, msg.len, 1, &nomem);
		nomem |= msg.failed;
		a2m_buf_free(&msg);
		if (nomem) {
			b->failed = 1;
			return -1;
		}
	}
	return 0;
}

void a2m_corpus_batch_foresee(const a2m_corpus_batch *b)
{
	json_t *recs = b->n_ready && b->ready[0]
		? json_object_get(json_object_get(b->ready[0], "params"), "records") : NULL;
	size_t n = json_array_size(recs);
	const char **texts = n && b->foresee ? malloc(n * sizeof *texts) : NULL;
	if (!texts)
		return;
	/* As the protocol reads them: a content that is not a string is NULL. */
	for (size_t i = 0; i < n; i++)
		texts[i] = json_string_value(json_object_get(json_array_get(recs, i), "content"));
	b->foresee(b->h, texts, n);
	free(texts);
}

/* memory/forget of the ids, at most A2M_CORPUS_FORGET_IDS per call. */
static int forget(a2m_corpus_batch *b)
{
	const char *s = b->forget.p;
	size_t len = b->forget.len, start = 0;
	while (start < len) {
		/* The ids are JSON strings of hex digits: a comma ends one. */
		size_t end = start, count = 0;
		for (;;) {
			const char *comma = memchr(s + end, ',', len - end);
			size_t stop = comma ? (size_t)(comma - s) : len;
			if (++count == A2M_CORPUS_FORGET_IDS || !comma) {
				end = stop;
				break;
			}
			end = stop + 1;
		}
		a2m_buf msg = {0};
		a2m_buf_puts(&msg, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"memory/forget\","
				   "\"params\":{\"ids\":[");
		a2m_buf_put(&msg, s + start, end - start);
		a2m_buf_puts(&msg, "]}}");
		if (call(b, &msg, 2) != 0)
			return -1;
		start = end + 1;
	}
	return 0;
}

/* ---- the table --------------------------------------------------------- */

/* Writes one row per entry: step 1 (pending) or step 4 (final). */
static int rows(a2m_corpus_batch *b, int final)
{
	a2m_corpus_table *t = b->table;
	int any = 0;
	for (size_t i = 0; i < b->n_pend && !any; i++)
		any = final || (b->pend[i].new_ids && !b->pend[i].touch);
	if (!any)
		return 0;
	if (a2m_corpus_table_begin(t) != 0)
		goto fail;
	for (size_t i = 0; i < b->n_pend; i++) {
		const a2m_corpus_pending *p = &b->pend[i];
		int rc = 0;
		if (final && !p->new_ids) {
			rc = a2m_corpus_table_delete(t, p->path);
		} else if (final) {
			rc = a2m_corpus_table_put(t, p->path, p->size, p->mtime_ns, p->hash, p->new_ids);
		} else if (p->new_ids && !p->touch) {
			a2m_buf both = {0};
			a2m_buf_puts(&both, p->old_ids ? p->old_ids : "");
			a2m_buf_puts(&both, " ");
			a2m_buf_puts(&both, p->new_ids);
			int nomem = both.failed;
			if (!nomem)
				rc = a2m_corpus_table_put(t, p->path, -1, -1, "", both.p);
			a2m_buf_free(&both);
			if (nomem) {
				a2m_corpus_table_rollback(t);
				return oom(b);
			}
		}
		if (rc) {
			a2m_corpus_table_rollback(t);
			goto fail;
		}
	}
	if (a2m_corpus_table_commit(t) == 0)
		return 0;
fail:
	snprintf(b->err, sizeof b->err, "the table of files: %s", a2m_corpus_table_errmsg(t));
	return -1;
}

/* ---- the batch --------------------------------------------------------- */

a2m_corpus_pending *a2m_corpus_batch_file(a2m_corpus_batch *b, const char *path,
					  const char *old_ids)
{
	if (a2m_grow((void **)&b->pend, &b->cap_pend, b->n_pend + 1, sizeof *b->pend))
		return NULL;
	a2m_corpus_pending *p = &b->pend[b->n_pend];
	memset(p, 0, sizeof *p);
	p->path = strdup(path);
	p->old_ids = old_ids ? strdup(old_ids) : NULL;
	if (!p->path || (old_ids && !p->old_ids)) {
		free(p->path);
		free(p->old_ids);
		return NULL;
	}
	b->n_pend++;
	return p;
}

int a2m_corpus_batch_record(a2m_corpus_batch *b)
{
	if (a2m_grow((void **)&b->rec_off, &b->cap_rec, b->n_rec + 1, sizeof *b->rec_off)) {
		b->failed = 1;
		return -1;
	}
	b->rec_off[b->n_rec++] = b->records.len;
	return 0;
}

int a2m_corpus_batch_value(a2m_corpus_batch *b, json_t *rec)
{
	if (!rec || a2m_grow((void **)&b->vals, &b->cap_vals, b->n_rec + 1, sizeof *b->vals)) {
		json_decref(rec);
		b->failed = 1;
		return -1;
	}
	b->vals[b->n_rec++] = rec;
	return 0;
}

static int cmp_id(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static int cmp_chunk_id(const void *x, const void *y)
{
	return strcmp((const char *)x, (const char *)y);
}

int a2m_corpus_ids_parse(const char *list, char **copy, char ***ids, size_t *n)
{
	*copy = NULL;
	*ids = NULL;
	*n = 0;
	if (!list || !*list)
		return 0;
	if (!(*copy = strdup(list)))
		return -1;
	size_t cap = 1;
	for (const char *p = list; *p; p++)
		cap += *p == ' ';
	if (!(*ids = malloc(cap * sizeof **ids)))
		return -1;
	for (char *save = NULL, *tok = strtok_r(*copy, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save))
		(*ids)[(*n)++] = tok;
	if (*n)
		qsort(*ids, *n, sizeof **ids, cmp_id);
	return 0;
}

int a2m_corpus_ids_has(char **ids, size_t n, const char *id)
{
	return n && bsearch(&id, ids, n, sizeof *ids, cmp_id) != NULL;
}

void a2m_corpus_batch_forget(a2m_corpus_batch *b, const char *old, a2m_corpus_id *keep,
			     size_t n)
{
	char *copy, **ids;
	size_t n_old;
	if (a2m_corpus_ids_parse(old, &copy, &ids, &n_old) != 0) {
		b->failed = 1;
	} else {
		if (n)
			qsort(keep, n, sizeof *keep, cmp_chunk_id);
		for (size_t i = 0; i < n_old; i++) {
			if (i > 0 && strcmp(ids[i], ids[i - 1]) == 0)
				continue;
			if (n && bsearch(ids[i], keep, n, sizeof *keep, cmp_chunk_id))
				continue;
			if (b->n_forget++)
				a2m_buf_put(&b->forget, ",", 1);
			a2m_json_put_string(&b->forget, ids[i], strlen(ids[i]));
		}
	}
	free(copy);
	free(ids);
}

int a2m_corpus_batch_full(const a2m_corpus_batch *b)
{
	return b->n_rec >= A2M_CORPUS_BATCH_RECORDS || b->bytes >= A2M_CORPUS_BATCH_BYTES ||
	       b->n_pend >= A2M_CORPUS_BATCH_FILES;
}

/* Empties the batch but for the requests read ahead (a2m_corpus_batch_release). */
static void empty(a2m_corpus_batch *b);

int a2m_corpus_batch_flush(a2m_corpus_batch *b, size_t *added, size_t *removed)
{
	int rc = 0;
	*added = *removed = 0;
	if (b->failed || b->records.failed || b->forget.failed)
		rc = oom(b);
	/* Values not made into requests yet (the last batch of a sync). */
	if (!rc && b->vals && b->n_rec && !b->n_ready && a2m_corpus_batch_prepare(b) != 0)
		rc = oom(b);
	if (!rc && b->n_pend)
		rc = rows(b, 0);
	for (size_t k = 0; !rc && k * A2M_CORPUS_BATCH_RECORDS < b->n_rec; k++)
		rc = remember(b, k);
	if (!rc && b->n_forget)
		rc = forget(b);
	if (!rc && b->n_pend)
		rc = rows(b, 1);
	if (!rc) {
		*added = b->n_rec;
		*removed = b->n_forget;
	}
	empty(b);
	return rc;
}

void a2m_corpus_batch_release(a2m_corpus_batch *b)
{
	for (size_t k = 0; k < b->n_ready; k++)
		json_decref(b->ready[k]);
	free(b->ready);
	b->ready = NULL;
	b->n_ready = 0;
}

void a2m_corpus_batch_reset(a2m_corpus_batch *b)
{
	a2m_corpus_batch_release(b);
	empty(b);
}

static void empty(a2m_corpus_batch *b)
{
	for (size_t i = 0; i < b->n_pend; i++) {
		free(b->pend[i].path);
		free(b->pend[i].old_ids);
		free(b->pend[i].new_ids);
	}
	b->n_pend = 0;
	if (b->vals)
		for (size_t i = 0; i < b->n_rec; i++)
			json_decref(b->vals[i]);
	b->n_rec = 0;
	b->records.len = 0;
	b->forget.len = 0;
	b->n_forget = 0;
	b->bytes = 0;
	b->failed = b->records.failed = b->forget.failed = 0;
}

void a2m_corpus_batch_free(a2m_corpus_batch *b)
{
	a2m_corpus_batch_reset(b);
	a2m_buf_free(&b->records);
	a2m_buf_free(&b->forget);
	free(b->pend);
	free(b->rec_off);
	free(b->vals);
	memset(b, 0, sizeof *b);
}
