/*
** export.c — `a2m export`: a store as JSON Lines (docs/EXPORT.md). The
** first line is a header naming the source, its configuration (what
** memory/describe answers) and how many records and revision lines
** follow (an import checks both: a file cut short is told); then one record a
** line, oldest first, with every field the store keeps, whatever the
** server declares: the records are the store's, not one caller's view.
**
** A record's line is its wire form (protocol/records.c) with every
** capability's fields and its vector, so the file reads like a recall's
** records and a client can parse it with the same code. A keyed record's
** earlier revisions (x-history) follow its line, one line each, of their
** own kind ("kind": "revision", as fetch's history holds them), so an
** import keeps them with the record.
*/
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"
#include "server/server.h"
#include "server/transfer.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/json_write.h"

/* Flushed to the file past this many bytes: one write per many records. */
#define FLUSH_AT (64 * 1024)

/* Every field of every capability (records.c writes a field per bit). */
#define EVERY_FIELD (A2M_CAP_CORE | A2M_CAP_TIERS | A2M_CAP_SALIENCE | A2M_CAP_SCOPES | \
		     A2M_CAP_SESSIONS | A2M_CAP_KEYS | A2M_CAP_EMBEDDINGS | A2M_CAP_EXTERNAL | \
		     A2M_CAP_X_EXPIRY)

typedef struct writer {
	FILE         *out;
	a2m_buf       b;
	a2m_call      call;
	a2m_progress *progress;
	int64_t       n;
	int64_t       revisions; /* revision lines written */
	int           failed;    /* a write failed: errno in err_no */
	int           err_no;
	int           bad_record;/* a record could not be written as JSON */
} writer;

static int flush_out(writer *w)
{
	if (w->b.len && fwrite(w->b.p, 1, w->b.len, w->out) != w->b.len) {
		w->failed = 1;
		w->err_no = errno ? errno : EIO;
		return -1;
	}
	w->b.len = 0;
	return 0;
}

/* One revision line: {"kind": "revision", "id": its record's, ...fetch's fields}. */
static int write_revision(const a2m_revision *rev, void *ctx)
{
	writer *w = ctx;
	json_t *line = json_pack("{ss ss}", "kind", "revision", "id", rev->id);
	json_t *o = a2m_revision_to_json(&w->call, rev);
	if (!line || !o || json_object_update(line, o) != 0) {
		json_decref(line);
		json_decref(o);
		w->bad_record = 1;
		return A2M_INTERNAL_ERROR;
	}
	json_decref(o);
	a2m_json_put_value(&w->b, line);
	a2m_json_put_raw(&w->b, "\n", 1);
	json_decref(line);
	w->revisions++;
	return 0;
}

static int write_record(const a2m_record *rec, void *ctx)
{
	writer *w = ctx;
	if (a2m_record_write_json(&w->b, &w->call, rec, 1, NULL) != 0) {
		w->bad_record = 1;
		return A2M_INTERNAL_ERROR;
	}
	a2m_json_put_raw(&w->b, "\n", 1);
	/* Its earlier revisions (x-history), newest first, each a line. */
	if (rec->key) {
		a2m_error e = {0};
		int rc = a2m_stack_history(w->call.srv->stack, rec->id, 0, write_revision, w, &e);
		a2m_error_clear(&e);
		if (rc) {
			w->bad_record = 1;
			return rc < 0 ? rc : A2M_INTERNAL_ERROR;
		}
	}
	if (w->b.failed) {
		w->bad_record = 1;
		return A2M_INTERNAL_ERROR;
	}
	if (w->b.len >= FLUSH_AT && flush_out(w) != 0)
		return A2M_INTERNAL_ERROR;
	a2m_progress_update(w->progress, ++w->n);
	return 0;
}

/* memory/describe's result as a local caller gets it, or NULL. */
static json_t *describe(a2m *h)
{
	static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"memory/describe\","
				  "\"params\":{\"protocol\":\"" A2M_PROTOCOL "\"}}";
	char *reply = NULL;
	if (a2m_handle(h, req, sizeof req - 1, &reply) != A2M_OK || !reply)
		return NULL;
	json_t *r = json_loads(reply, 0, NULL);
	a2m_free(reply);
	json_t *result = json_incref(json_object_get(r, "result"));
	json_decref(r);
	return result;
}

/*
** The header line (docs/EXPORT.md), newline included, into w's buffer:
** d is describe's result (taken), engine the store's.
*/
static int put_header(writer *w, json_t *d, const char *engine, const a2m_export_source *src,
		      int64_t total, int64_t revisions)
{
	char ts[A2M_TIMESTAMP_LEN];
	json_t *source = json_pack("{ss ss* ss}", "engine", engine, "path", src ? src->path : NULL,
				   "library", A2M_VERSION);
	json_t *head = json_pack("{ss si ss so* sI sI so*}", "format", "a2m-export",
				 "version", A2M_EXPORT_VERSION,
				 "exported_at", a2m_clock_format(a2m_clock_now_ms(), ts),
				 "source", source, "records", (json_int_t)total,
				 "revisions", (json_int_t)revisions, "describe", d);
	if (!head)
		return -1;
	a2m_json_put_value(&w->b, head);
	a2m_json_put_raw(&w->b, "\n", 1);
	json_decref(head);
	return w->b.failed ? -1 : 0;
}

/* The header's counts are known only inside the snapshot: the first record
** (or the end, for an empty store) writes the header. */
typedef struct header_first {
	writer *w;
	json_t *describe;      /* taken by the header */
	const char *engine;
	const a2m_export_source *src;
	int64_t total;
	int64_t revisions;     /* the revision lines that will follow records */
	int done;
} header_first;

static int put_header_once(header_first *hf)
{
	if (hf->done)
		return 0;
	hf->done = 1;
	json_t *d = hf->describe;
	hf->describe = NULL;
	a2m_progress_total(hf->w->progress, hf->total);
	return put_header(hf->w, d, hf->engine, hf->src, hf->total, hf->revisions);
}

static int header_then_record(const a2m_record *rec, void *ctx)
{
	header_first *hf = ctx;
	if (put_header_once(hf) != 0) {
		hf->w->bad_record = 1;
		return A2M_INTERNAL_ERROR;
	}
	return write_record(rec, hf->w);
}

int a2m_export(a2m *h, FILE *out, const a2m_export_source *src, a2m_progress *progress,
	       int64_t *written, char *err, size_t errlen)
{
	writer w;
	memset(&w, 0, sizeof w);
	w.out = out;
	w.progress = progress;
	w.call = (a2m_call){.srv = &h->srv, .caps = EVERY_FIELD};
	*written = 0;
	/* describe runs through the handle, which takes the lock itself: it is
	** asked first. The header's count comes from the snapshot. */
	header_first hf = {&w, describe(h), NULL, src, 0, 0, 0};
	if (!hf.describe) {
		snprintf(err, errlen, "memory/describe failed");
		return -1;
	}
	a2m_error e = {0};
	a2m_index_stats stats;
	pthread_rwlock_rdlock(&h->lock);
	a2m_stack_index_stats(h->srv.stack, &stats, &hf.engine, &e);
	a2m_error_clear(&e);
	int rc = a2m_stack_export(h->srv.stack, &hf.total, &hf.revisions, header_then_record, &hf,
				  &e);
	pthread_rwlock_unlock(&h->lock);
	if (!rc && put_header_once(&hf) != 0)
		w.bad_record = 1;
	json_decref(hf.describe);
	if (!rc && !w.bad_record && !w.failed)
		flush_out(&w);
	if (!w.failed && !w.bad_record && fflush(out) != 0) {
		w.failed = 1;
		w.err_no = errno;
	}
	if (rc && !w.failed && !w.bad_record)
		snprintf(err, errlen, "%s", e.message[0] ? e.message : "the store could not be read");
	else if (w.failed)
		snprintf(err, errlen, "cannot write: %s", strerror(w.err_no));
	else if (w.bad_record)
		snprintf(err, errlen, "out of memory, or a record that is not valid UTF-8");
	a2m_error_clear(&e);
	a2m_buf_free(&w.b);
	*written = w.n;
	return rc || w.failed || w.bad_record ? -1 : 0;
}
