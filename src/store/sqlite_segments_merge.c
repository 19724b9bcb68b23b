/*
** sqlite_segments_merge.c — building a segment's blocks, and merging
** segments in memory, apart from SQLite (see sqlite_segments.h).
**
** sqlite_segments_ahead.c reads a merge's inputs and writes its output; what
** happens in between needs nothing of SQLite, so it can run on a thread of
** its own while the writer goes on with its transaction (a merge of the
** index at 100 000 records was about a sixth of a batched remember's work
** on the writing thread).
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/sqlite_segments.h"
#include "util/hash.h"
#include "util/thread.h"

/* ---- blocks ---- */

/*
** Appends a then b (alen and blen bytes), each after its length as a
** varint: a term and its list in a block, or a block's first term and the
** block in done. a2m_seg_next_in_block reads both back. Returns 0, or -1
** when memory runs out.
*/
static int put_pair(a2m_seg_bytes *d, const void *a, size_t alen, const void *b, size_t blen)
{
	/* The capacity check spares a call per term (a merge adds every term). */
	if (d->n + 20 + alen + blen > d->cap && a2m_seg_reserve(d, 20 + alen + blen) != 0)
		return -1;
	d->n += a2m_seg_put_varint(d->p + d->n, alen);
	memcpy(d->p + d->n, a, alen);
	d->n += alen;
	d->n += a2m_seg_put_varint(d->p + d->n, blen);
	if (blen)
		memcpy(d->p + d->n, b, blen);
	d->n += blen;
	return 0;
}

int a2m_seg_build_add(a2m_seg_build *b, const char *term, size_t len, const void *data,
		      size_t n)
{
	/* The capacity checks spare a call per term (a merge adds every term). */
	if (b->nhashes == b->hashes_cap &&
	    a2m_seg_grow(&b->hashes, &b->hashes_cap, b->nhashes + 1, sizeof *b->hashes) != 0)
		return -1;
	b->hashes[b->nhashes++] = a2m_hash_bytes(term, len);
	if (!b->block.n) {
		b->first.n = 0;
		if (a2m_seg_reserve(&b->first, len + 1) != 0)
			return -1;
		memcpy(b->first.p, term, len);
		b->first.n = len;
	}
	int skip = a2m_seg_skip_build(data, n, &b->skip);
	if (skip < 0)
		return -1;
	if (skip) {
		data = b->skip.p;
		n = b->skip.n;
	}
	if (put_pair(&b->block, term, len, data, n) != 0)
		return -1;
	return b->block.n >= A2M_SEG_BLOCK_BYTES;
}

int a2m_seg_build_keep(a2m_seg_build *b)
{
	if (!b->block.n)
		return 0;
	if (put_pair(&b->done, b->first.p, b->first.n, b->block.p, b->block.n) != 0)
		return -1;
	b->block.n = 0;
	return 0;
}

void a2m_seg_build_free(a2m_seg_build *b)
{
	free(b->block.p);
	free(b->first.p);
	free(b->hashes);
	free(b->done.p);
	free(b->skip.p);
	memset(b, 0, sizeof *b);
}

/* ---- inputs ---- */

int a2m_seg_input_add(a2m_seg_input *l, const void *data, size_t n)
{
	if (a2m_seg_reserve(&l->bytes, n) != 0)
		return -1;
	size_t at = l->bytes.n;
	if (n)
		memcpy(l->bytes.p + at, data, n);
	l->bytes.n += n;
	const unsigned char *p = l->bytes.p + at, *end = p + n, *term, *list;
	size_t tlen, lsize;
	int got;
	while ((got = a2m_seg_next_in_block(&p, end, &term, &tlen, &list, &lsize)) == 1) {
		if (4 * (l->n + 1) > l->cap &&
		    a2m_seg_grow(&l->rows, &l->cap, 4 * (l->n + 1), sizeof *l->rows) != 0)
			return -1;
		size_t *r = &l->rows[4 * l->n++];
		r[0] = (size_t)(term - l->bytes.p);
		r[1] = tlen;
		r[2] = (size_t)(list - l->bytes.p);
		r[3] = lsize;
	}
	return got < 0 ? -2 : 0;
}

void a2m_seg_input_free(a2m_seg_input *l)
{
	free(l->bytes.p);
	free(l->rows);
	memset(l, 0, sizeof *l);
}

void a2m_seg_inputs_free(a2m_seg_input *in, size_t n)
{
	for (size_t i = 0; in && i < n; i++)
		a2m_seg_input_free(&in[i]);
	free(in);
}

/* ---- the merge ---- */

/* Notes the prefix of the term of l's current row, if any. */
static void note_prefix(a2m_seg_input *l)
{
	if (l->at < l->n)
		l->prefix = a2m_seg_prefix(l->bytes.p + l->rows[4 * l->at], l->rows[4 * l->at + 1]);
}

/*
** Orders the current rows of two inputs of a merge by term as
** a2m_seg_cmp_terms does, from the prefixes where they decide (see
** a2m_seg_prefix): most pairs, with no call to memcmp.
*/
static int cmp_rows(const a2m_seg_input *a, const a2m_seg_input *b)
{
	if (a->prefix != b->prefix)
		return a->prefix < b->prefix ? -1 : 1;
	const size_t *x = &a->rows[4 * a->at], *y = &b->rows[4 * b->at];
	if (x[1] > 8 && y[1] > 8)
		return a2m_seg_cmp_terms(a->bytes.p + x[0] + 8, x[1] - 8, b->bytes.p + y[0] + 8,
					 y[1] - 8);
	return x[1] < y[1] ? -1 : (x[1] > y[1]);
}

typedef struct encoder {
	a2m_seg_bytes *out;
	int64_t        prev, entries;
	int64_t        maxseq;  /* at least the highest seq of a posting written */
} encoder;

static int encode(const a2m_seg_entry *e, void *ctx)
{
	encoder *en = ctx;
	en->entries++;
	if (!e->deleted && e->seq > en->maxseq)
		en->maxseq = e->seq;
	return a2m_seg_put(en->out, &en->prev, e);
}

/* Appends entries already encoded after the last one encode wrote (a2m_seg_copy). */
static int encode_copy(const unsigned char *p, size_t n, int64_t count, int64_t last,
		       void *ctx)
{
	encoder *en = ctx;
	if (a2m_seg_reserve(en->out, n) != 0)
		return -1;
	memcpy(en->out->p + en->out->n, p, n);
	en->out->n += n;
	en->entries += count;
	en->prev = last;
	/* The run ends at last: a bound, whether last is a posting or not. */
	if (last > en->maxseq)
		en->maxseq = last;
	return 0;
}

int a2m_seg_merge_inputs(a2m_seg_input *in, size_t n, int64_t tombstone_floor,
			 a2m_seg_build *out, int64_t *entries)
{
	a2m_seg_list lists[A2M_SEG_MAX_LISTS];
	a2m_seg_bytes list = {0};
	encoder en = {&list, 0, 0, 0};
	int rc = 0;
	*entries = 0;
	if (n > A2M_SEG_MAX_LISTS)
		return -2;
	for (size_t i = 0; i < n; i++) {
		in[i].at = 0;
		note_prefix(&in[i]);
	}
	while (!rc) {
		/* The inputs whose row holds the least term, oldest first. */
		size_t at[A2M_SEG_MAX_LISTS], k = 0;
		for (size_t i = 0; i < n; i++) {
			if (in[i].at == in[i].n)
				continue;
			int c = k ? cmp_rows(&in[i], &in[at[0]]) : -1;
			if (c < 0)
				k = 0;
			if (c <= 0)
				at[k++] = i;
		}
		if (!k)
			break;
		const size_t *r = &in[at[0]].rows[4 * in[at[0]].at];
		const unsigned char *term = in[at[0]].bytes.p + r[0];
		size_t tlen = r[1];
		for (size_t j = 0; j < k; j++) {
			a2m_seg_input *l = &in[at[j]];
			r = &l->rows[4 * l->at];
			a2m_seg_list_init(&lists[j], l->bytes.p + r[2], r[3]);
			l->at++;
			note_prefix(l);
		}
		list.n = 0;
		en.prev = 0;
		int corrupt = 0;
		rc = a2m_seg_merge_lists(lists, k, tombstone_floor, encode, encode_copy, &en,
					 &corrupt);
		if (corrupt)
			rc = -2;
		else if (rc)
			rc = -1;
		else if (list.n) {
			int full = a2m_seg_build_add(out, (const char *)term, tlen, list.p, list.n);
			if (full < 0 || (full && a2m_seg_build_keep(out) != 0))
				rc = -1;
		}
	}
	if (!rc && a2m_seg_build_keep(out) != 0)
		rc = -1;
	free(list.p);
	*entries = en.entries;
	out->maxseq = en.maxseq;
	return rc;
}

/* ---- on a thread of its own ---- */

#ifdef A2M_TEST_HOOKS
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  hold_cv = PTHREAD_COND_INITIALIZER;
static int             hold_next, held, hold_timed_out;

void a2m_seg_job_hold_for_tests(int n)
{
	pthread_mutex_lock(&hold_mu);
	hold_next = n;
	hold_timed_out = 0;
	pthread_mutex_unlock(&hold_mu);
}

int a2m_seg_job_release_for_tests(void)
{
	pthread_mutex_lock(&hold_mu);
	int ok = !hold_timed_out;
	hold_next = 0;
	held = 0;
	pthread_cond_broadcast(&hold_cv);
	pthread_mutex_unlock(&hold_mu);
	return ok;
}

/* A held job waits here for the release, or 30 s. */
static void hold(void)
{
	pthread_mutex_lock(&hold_mu);
	if (hold_next > 0) {
		hold_next--;
		held = 1;
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 30;
		while (held && !hold_timed_out)
			if (pthread_cond_timedwait(&hold_cv, &hold_mu, &until) != 0)
				hold_timed_out = 1;
	}
	pthread_mutex_unlock(&hold_mu);
}
#else
#define hold() ((void)0)
#endif

static void *job_run(void *arg)
{
	a2m_seg_job *job = arg;
	hold();
	job->rc = a2m_seg_merge_inputs(job->in, job->n, job->tombstone_floor, &job->out,
				       &job->entries);
	atomic_store_explicit(&job->done, 1, memory_order_release);
	return NULL;
}

a2m_seg_job *a2m_seg_job_start(a2m_seg_input *in, size_t n, int64_t tombstone_floor,
			       int level)
{
	a2m_seg_job *job = calloc(1, sizeof *job);
	if (!job)
		return NULL;
	job->in = in;
	job->n = n;
	job->tombstone_floor = tombstone_floor;
	job->level = level;
	atomic_init(&job->done, 0);
	if (a2m_thread_start(&job->thread, job_run, job) != 0) {
		free(job);
		return NULL;
	}
	return job;
}

int a2m_seg_job_done(a2m_seg_job *job)
{
	return job->joined || atomic_load_explicit(&job->done, memory_order_acquire);
}

int a2m_seg_job_finish(a2m_seg_job *job)
{
	if (!job->joined) {
		pthread_join(job->thread, NULL);
		job->joined = 1;
	}
	return job->rc;
}

void a2m_seg_job_free(a2m_seg_job *job)
{
	if (!job)
		return;
	a2m_seg_job_finish(job);
	a2m_seg_inputs_free(job->in, job->n);
	a2m_seg_build_free(&job->out);
	free(job);
}
