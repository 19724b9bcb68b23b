/*
** import.c — `a2m import`: JSON Lines read into a store, batch by batch
** (docs/EXPORT.md). Two formats: an a2m export (a header line, then one
** record a line with every field), and the knowledge graph the MCP memory
** server keeps (import_mcp.c turns its lines into records).
**
** The header is checked before anything is written — the format's
** version, the tiers its records use, the vector width — so a file that
** cannot go in leaves the store as it was. Each batch is then one write
** of the stack (a2m_stack_import: one transaction, ended by
** a2m_stack_finish), holding the handle's lock only for that batch, so a
** long import does not shut out the readers of an embedding program.
** What is held in memory at any time is one line and one batch.
*/
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"
#include "server/import_mcp.h"
#include "server/server.h"
#include "server/transfer.h"
#include "util/clock.h"
#include "util/grow.h"
#include "util/json_write.h"
#include "util/log.h"

typedef struct importer {
	a2m                      *h;
	const a2m_import_options *opt;
	a2m_import_result        *res;
	a2m_progress             *progress;
	a2m_record              **batch;
	size_t                    n, cap;
	unsigned char            *outcome;
	a2m_import_revision      *revs;      /* the batch's records' revisions */
	size_t                    nrevs, revs_cap;
	int64_t                   line_no;   /* of the input, header included */
	int64_t                   want_records;   /* the header's counts; -1: not said */
	int64_t                   want_revisions;
	char                     *err;
	size_t                    errlen;
} importer;

const char *a2m_import_format_name(a2m_import_format f)
{
	return f == A2M_FORMAT_A2M ? "a2m" : f == A2M_FORMAT_MCP_MEMORY ? "mcp-memory" : "auto";
}

void a2m_import_result_free(a2m_import_result *res)
{
	for (size_t i = 0; i < A2M_IMPORT_NAMED; i++) {
		free(res->held[i]);
		res->held[i] = NULL;
	}
}

/* ---- lines ----------------------------------------------------------------- */

/*
** Reads the next line of in into *line (without its newline; grown as
** needed up to A2M_IMPORT_MAX_LINE). Returns 1 with a line, 0 at the end,
** -1 on a read error or a line too long (message in im->err).
*/
static int read_line(importer *im, FILE *in, char **line, size_t *cap, size_t *len)
{
	size_t n = 0;
	int c = 0;
	for (;;) {
		if (n + 2 > *cap) {
			if (*cap >= A2M_IMPORT_MAX_LINE) {
				snprintf(im->err, im->errlen, "%s:%lld: a line longer than %zu bytes",
					 im->opt->name, (long long)im->line_no + 1, A2M_IMPORT_MAX_LINE);
				return -1;
			}
			/* 64 KiB first, then doubled up to the limit. */
			if (a2m_grow((void **)line, cap, n + 2 < 64 * 1024 ? 64 * 1024 : n + 2, 1)) {
				snprintf(im->err, im->errlen, "out of memory");
				return -1;
			}
		}
		/* fgets stops at the newline or when the room is full. */
		if (!fgets(*line + n, (int)(*cap - n < 1 << 30 ? *cap - n : 1 << 30), in)) {
			if (ferror(in)) {
				snprintf(im->err, im->errlen, "%s: cannot read: %s", im->opt->name,
					 strerror(errno ? errno : EIO));
				return -1;
			}
			break;
		}
		c = 1;
		n += strlen(*line + n);
		if (n && (*line)[n - 1] == '\n')
			break;
	}
	if (!c && n == 0)
		return 0;
	while (n && ((*line)[n - 1] == '\n' || (*line)[n - 1] == '\r'))
		n--;
	(*line)[n] = '\0';
	*len = n;
	im->line_no++;
	return 1;
}

/* Whether the line holds nothing but white space. */
static int blank(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return *s == '\0';
}

/* ---- records of an a2m export -------------------------------------------- */

/* Fails the line: "NAME:LINE: " and the message. Returns -1. */
static int bad(importer *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(importer *im, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(im->err, im->errlen, "%s:%lld: %s", im->opt->name, (long long)im->line_no, msg);
	return -1;
}

/* ---- batches --------------------------------------------------------------- */

/* Notes the id of a record whose key was held, among the first named. */
static void note_held(importer *im, const char *id)
{
	int64_t k = im->res->key_held++;
	if (k < A2M_IMPORT_NAMED)
		im->res->held[k] = strdup(id);
}

/* Forgets the batch gathered so far (written, or not to be). */
static void drop_batch(importer *im)
{
	for (size_t i = 0; i < im->n; i++)
		a2m_record_free(im->batch[i]);
	im->n = 0;
	for (size_t i = 0; i < im->nrevs; i++)
		a2m_revision_wire_free(&im->revs[i].rev);
	im->nrevs = 0;
}

/* Writes the batch gathered so far (one transaction), then frees it. */
static int flush_batch(importer *im)
{
	if (!im->n)
		return 0;
	int rc = 0;
	if (im->opt->dry_run) {
		/* Nothing written, but what would refuse the batch is said. */
		const a2m_tier_layout *l = a2m_stack_tiers(im->h->srv.stack);
		for (size_t i = 0; i < im->n && !rc; i++)
			if (im->batch[i]->tier && !a2m_tiers_find(l, im->batch[i]->tier)) {
				snprintf(im->err, im->errlen, "%s: the batch ending at line %lld: no "
					 "tier named '%s'", im->opt->name, (long long)im->line_no,
					 im->batch[i]->tier);
				rc = -1;
			}
	} else {
		a2m_error e = {0};
		pthread_rwlock_wrlock(&im->h->lock);
		rc = a2m_stack_import(im->h->srv.stack, im->batch, im->n, im->outcome, im->revs,
				      im->nrevs, &e);
		pthread_rwlock_unlock(&im->h->lock);
		if (rc) {
			snprintf(im->err, im->errlen, "%s: the batch ending at line %lld: %s",
				 im->opt->name, (long long)im->line_no, e.message);
		} else {
			for (size_t i = 0; i < im->n; i++) {
				if (im->outcome[i] == A2M_IMPORTED)
					im->res->imported++;
				else if (im->outcome[i] == A2M_IMPORT_SKIPPED)
					im->res->skipped++;
				else
					note_held(im, im->batch[i]->id);
			}
		}
		a2m_error_clear(&e);
	}
	drop_batch(im);
	return rc ? -1 : 0;
}

/*
** Adds rec (taken) to the batch, after writing the batch when it is full:
** not at once when it fills, since the revision lines that follow a
** record go into its batch (its transaction, its outcome).
*/
static int add_record(importer *im, a2m_record *rec)
{
	if (im->n == im->cap && flush_batch(im) != 0) {
		a2m_record_free(rec);
		return -1;
	}
	im->batch[im->n++] = rec;
	im->res->lines++;
	a2m_progress_update(im->progress, im->res->lines);
	return 0;
}

/* A revision line (x-history): an earlier revision of the record just read. */
static int add_revision(importer *im, const json_t *v)
{
	char why[256];
	a2m_import_revision r;
	memset(&r, 0, sizeof r);
	if (a2m_revision_from_wire(v, &r.rev, why, sizeof why) != 0) {
		a2m_revision_wire_free(&r.rev);
		return bad(im, "%s", why);
	}
	if (!im->n || strcmp(im->batch[im->n - 1]->id, r.rev.id) != 0) {
		a2m_revision_wire_free(&r.rev);
		return bad(im, "a revision line must follow the line of its record");
	}
	if (a2m_grow((void **)&im->revs, &im->revs_cap, im->nrevs + 1, sizeof *im->revs)) {
		a2m_revision_wire_free(&r.rev);
		snprintf(im->err, im->errlen, "out of memory");
		return -1;
	}
	r.of = im->n - 1;
	im->revs[im->nrevs++] = r;
	im->res->revisions++;
	return 0;
}

/* ---- the header ------------------------------------------------------------ */

/* Tiers the header says hold records and this store does not have. */
static int check_tiers(importer *im, const json_t *tiers)
{
	const a2m_tier_layout *l = a2m_stack_tiers(im->h->srv.stack);
	char missing[256] = "";
	size_t i, at = 0;
	json_t *t;
	json_array_foreach(tiers, i, t) {
		const char *name = json_string_value(json_object_get(t, "name"));
		json_int_t count = json_integer_value(json_object_get(t, "count"));
		if (!name || count <= 0 || a2m_tiers_find(l, name))
			continue;
		int n = snprintf(missing + at, sizeof missing - at, "%s'%s'", at ? ", " : "", name);
		if (n > 0 && (size_t)n < sizeof missing - at)
			at += (size_t)n;
	}
	if (!at)
		return 0;
	snprintf(im->err, im->errlen,
		 "%s: its records are in tiers this store does not have: %s (open the store "
		 "with a --config that has them; nothing was written)", im->opt->name, missing);
	return -1;
}

/* The header of an a2m export: version, tiers, vector width, metric. */
static int check_header(importer *im, const json_t *head)
{
	json_t *version = json_object_get(head, "version");
	if (!json_is_integer(version) || json_integer_value(version) < 1) {
		snprintf(im->err, im->errlen, "%s:1: the header has no version", im->opt->name);
		return -1;
	}
	if (json_integer_value(version) > A2M_EXPORT_VERSION) {
		snprintf(im->err, im->errlen, "%s: format version %lld is newer than this a2m "
			 "reads (%d)", im->opt->name, (long long)json_integer_value(version),
			 A2M_EXPORT_VERSION);
		return -1;
	}
	json_t *d = json_object_get(head, "describe");
	a2m_stack *st = im->h->srv.stack;
	pthread_rwlock_rdlock(&im->h->lock);
	int rc = check_tiers(im, json_object_get(d, "tiers"));
	json_t *emb = json_object_get(d, "embeddings");
	json_t *dims = json_object_get(emb, "dimensions");
	int64_t ours = 0;
	a2m_error e = {0};
	if (!rc && a2m_stack_dimensions(st, &ours, &e) != 0) {
		snprintf(im->err, im->errlen, "%s: %s (nothing was written)", im->opt->name,
			 e.message);
		a2m_error_clear(&e);
		rc = -1;
	}
	if (!rc && json_is_integer(dims) && ours && json_integer_value(dims) != ours) {
		snprintf(im->err, im->errlen, "%s: its vectors have %lld dimensions and this "
			 "store's have %lld (nothing was written)", im->opt->name,
			 (long long)json_integer_value(dims), (long long)ours);
		rc = -1;
	}
	const char *metric = json_string_value(json_object_get(emb, "metric"));
	const char *our_metric = a2m_metric_name(a2m_stack_metric(st));
	pthread_rwlock_unlock(&im->h->lock);
	/* Vectors are kept verbatim whatever the metric; ranking them under
	** another one is allowed, and worth a word (spec §3.7). */
	if (!rc && metric && strcmp(metric, our_metric) != 0)
		a2m_log(A2M_LOG_WARN, "%s: its vectors were compared by %s; this store compares "
			"by %s", im->opt->name, metric, our_metric);
	json_t *records = json_object_get(head, "records");
	json_t *revisions = json_object_get(head, "revisions");
	if (json_is_integer(records))
		a2m_progress_total(im->progress, json_integer_value(records));
	/* Checked at the end (counts_match): a file cut short, or lines lost
	** on the way, is told rather than taken for the whole store. An export
	** before the header counted revision lines says nothing of them. */
	im->want_records = json_is_integer(records) ? json_integer_value(records) : -1;
	im->want_revisions = json_is_integer(revisions) ? json_integer_value(revisions) : -1;
	return rc;
}

/*
** After the last line of an a2m export: whether the file held as many
** records and revision lines as its header counts. Sets the message and
** returns -1 when not (the batches before are written, as after a bad line).
*/
static int counts_match(importer *im)
{
	const a2m_import_result *r = im->res;
	int records = im->want_records >= 0 && im->want_records != r->lines;
	if (!records && (im->want_revisions < 0 || im->want_revisions == r->revisions))
		return 0;
	snprintf(im->err, im->errlen, "%s: the header counts %lld %s; the file holds %lld "
		 "(cut short?)", im->opt->name,
		 (long long)(records ? im->want_records : im->want_revisions),
		 records ? "records" : "revision lines",
		 (long long)(records ? r->lines : r->revisions));
	return -1;
}

/* Which format the first line is, or AUTO when it is neither. */
static a2m_import_format sniff(const json_t *first)
{
	const char *format = json_string_value(json_object_get(first, "format"));
	if (format && strcmp(format, "a2m-export") == 0)
		return A2M_FORMAT_A2M;
	if (a2m_mcp_memory_line(first))
		return A2M_FORMAT_MCP_MEMORY;
	return A2M_FORMAT_AUTO;
}

/* ---- the import ------------------------------------------------------------ */

/* One line of input (after the header), as records into the batch. */
static int take_line(importer *im, json_t *v, int64_t now)
{
	if (im->res->format == A2M_FORMAT_A2M) {
		const char *kind = json_string_value(json_object_get(v, "kind"));
		if (kind && strcmp(kind, "revision") == 0)
			return add_revision(im, v);
		if (kind)
			return bad(im, "a line of kind \"%s\", which this a2m does not know", kind);
		/* A full batch is written before the next record's line is
		** read: the records before a bad line are in. */
		if (im->n == im->cap && flush_batch(im) != 0)
			return -1;
		a2m_record *rec = a2m_record_new();
		if (!rec) {
			snprintf(im->err, im->errlen, "out of memory");
			return -1;
		}
		char why[256];
		if (a2m_record_from_wire(v, rec, why, sizeof why) != 0) {
			a2m_record_free(rec);
			return bad(im, "%s", why);
		}
		a2m_record_wire_fit(rec, im->h->srv.declared);
		return add_record(im, rec);
	}
	a2m_record **recs = NULL;
	size_t n = 0;
	char why[200];
	if (a2m_mcp_memory_records(v, now, im->opt->tier, &recs, &n, why, sizeof why) != 0)
		return bad(im, "%s", why);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		if (rc)
			a2m_record_free(recs[i]);
		else
			rc = add_record(im, recs[i]);
	}
	free(recs);
	return rc;
}

int a2m_import(a2m *h, FILE *in, const a2m_import_options *opt, a2m_progress *progress,
	       a2m_import_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	importer im = {.h = h, .opt = opt, .res = res, .progress = progress, .err = err,
		       .errlen = errlen, .want_records = -1, .want_revisions = -1};
	im.cap = opt->batch ? opt->batch : A2M_IMPORT_BATCH;
	im.batch = calloc(im.cap, sizeof *im.batch);
	im.outcome = calloc(im.cap, 1);
	char *line = NULL;
	size_t cap = 0, len = 0;
	int rc = -1, got;
	int64_t now = a2m_clock_now_ms();
	if (!im.batch || !im.outcome) {
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	if (opt->tier && !a2m_tiers_find(a2m_stack_tiers(h->srv.stack), opt->tier)) {
		snprintf(err, errlen, "--tier: this store has no tier named '%s'", opt->tier);
		goto done;
	}
	res->format = opt->format;
	int first = 1;
	while ((got = read_line(&im, in, &line, &cap, &len)) > 0) {
		if (blank(line))
			continue;
		json_error_t jerr;
		json_t *v = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);
		if (!v) {
			bad(&im, "not JSON: %s", jerr.text);
			goto done;
		}
		if (first) {
			first = 0;
			a2m_import_format seen = sniff(v);
			if (res->format == A2M_FORMAT_AUTO)
				res->format = seen;
			if (res->format == A2M_FORMAT_AUTO) {
				json_decref(v);
				snprintf(err, errlen, "%s: neither an a2m export (its first line is a "
					 "header with \"format\": \"a2m-export\") nor an MCP memory file "
					 "(lines of \"type\": \"entity\" or \"relation\")", opt->name);
				goto done;
			}
			if (res->format == A2M_FORMAT_A2M) {
				int hrc = seen == A2M_FORMAT_A2M ? check_header(&im, v) : -1;
				if (seen != A2M_FORMAT_A2M)
					snprintf(err, errlen, "%s:%lld: an a2m export starts with its header "
						 "line", opt->name, (long long)im.line_no);
				json_decref(v);
				if (hrc)
					goto done;
				continue;
			}
		}
		int lrc = take_line(&im, v, now);
		json_decref(v);
		if (lrc)
			goto done;
	}
	if (got < 0 || flush_batch(&im) != 0)
		goto done;
	if (first) {
		snprintf(err, errlen, "%s: empty: not even a header", opt->name);
		goto done;
	}
	if (res->format == A2M_FORMAT_A2M && counts_match(&im) != 0)
		goto done;
	rc = 0;
done:
	/* What was read but not yet written is not written: an error stops
	** the import where it is. */
	drop_batch(&im);
	free(im.revs);
	free(im.batch);
	free(im.outcome);
	free(line);
	return rc;
}
