/*
** store_check.c — what the engines' consistency checks share: reporting,
** and the comparison of an index with the records' postings (see
** store_check.h).
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_check.h"
#include "util/clock.h"
#include "util/hash.h"

static const char *const area_names[A2M_CHECK_AREAS] = {
	"file", "counts", "index", "seqs", "vectors", "mirror", "events", "history", "expiry",
	"dedup", "groups",
};

const char *a2m_check_area_name(a2m_check_area area)
{
	return (unsigned)area < A2M_CHECK_AREAS ? area_names[area] : "?";
}

void a2m_check_say(const a2m_check_options *o, a2m_check_area area, int problem,
		   const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	if (!o->report)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	o->report(o->ctx, area, problem, msg);
}

void a2m_check_meter_start(a2m_check_meter *m, const a2m_check_options *o, a2m_check_area area,
			   const char *unit, int64_t total)
{
	m->o = o;
	m->area = area;
	m->unit = unit;
	m->total = total > 0 ? total : -1;
	m->next = o->progress ? 0 : INT64_MAX;
	a2m_check_meter_at(m, 0);
}

void a2m_check_meter_tell(a2m_check_meter *m, int64_t done)
{
	if (!m->o->progress)
		return;
	m->next = done + A2M_CHECK_PROGRESS_EVERY;
	/* Only the end has done == total: a total reached early (or too low: the
	** store moved under a count) is not known any more. */
	m->o->progress(m->o->ctx, m->area, m->unit, done, done >= m->total ? -1 : m->total);
}

void a2m_check_meter_end(a2m_check_meter *m, int64_t done)
{
	if (m->o->progress)
		m->o->progress(m->o->ctx, m->area, m->unit, done, done);
	m->next = INT64_MAX;
}

char *a2m_check_quote(const char *text, size_t n, char *out, size_t size)
{
	size_t at = 0, shown = n < 160 ? n : 160;
	if (size < 8) {
		if (size)
			out[0] = '\0';
		return out;
	}
	out[at++] = '"';
	for (size_t i = 0; i < shown && at + 6 < size; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
			at += (size_t)snprintf(out + at, size - at, "\\x%02x", c);
		else
			out[at++] = (char)c;
	}
	out[at++] = '"';
	if (shown < n && at + 4 < size) {
		memcpy(out + at, "...", 3);
		at += 3;
	}
	out[at] = '\0';
	return out;
}

/* ---- the revision history ------------------------------------------------- */

#define MAX_EXAMPLES 8

static void history_problem(a2m_check_history *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void history_problem(a2m_check_history *h, const char *fmt, ...)
{
	char msg[600], q[A2M_CHECK_QUOTED];
	va_list ap;
	if (h->problems++ >= MAX_EXAMPLES)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	a2m_check_say(h->o, A2M_CHECK_HISTORY, 1, "record %s: %s",
		      a2m_check_quote(h->id, strlen(h->id), q, sizeof q), msg);
}

void a2m_check_history_begin(a2m_check_history *h, a2m_store *s, const a2m_check_options *o)
{
	memset(h, 0, sizeof *h);
	h->s = s;
	h->o = o;
	a2m_check_meter_start(&h->meter, o, A2M_CHECK_HISTORY, "revisions", 0);
}

/* The record just read is over: its count against the bound. */
static void history_record_end(a2m_check_history *h)
{
	if (h->id && h->o->history_keep && h->n > h->o->history_keep)
		history_problem(h, "%zu earlier revisions kept, beyond the bound of %zu", h->n,
				h->o->history_keep);
}

int a2m_check_history_visit(const a2m_revision *rev, void *ctx)
{
	a2m_check_history *h = ctx;
	const char *id = rev->id ? rev->id : "";
	a2m_check_meter_at(&h->meter, ++h->revisions);
	if (!h->id || strcmp(h->id, id) != 0) {
		a2m_record *live = NULL;
		history_record_end(h);
		free(h->id);
		if (!(h->id = strdup(id))) {
			a2m_check_say(h->o, A2M_CHECK_HISTORY, 1, "out of memory");
			h->failed = 1;
			return -1;
		}
		h->records++;
		h->n = 0;
		h->live = -1;
		if (h->s->ops->get(h->s, id, &live) != 0) {
			a2m_check_say(h->o, A2M_CHECK_HISTORY, 1, "cannot read the records: %s",
				      h->s->errmsg);
			h->failed = 1;
			return -1;
		}
		if (!live)
			history_problem(h, "revisions kept of a record that is gone (forgetting a "
					"record forgets its history)");
		else if (!live->key)
			history_problem(h, "revisions kept of a record without a key");
		else
			h->live = live->revision;
		a2m_record_free(live);
	} else if (rev->revision <= h->prev) {
		history_problem(h, "revision %lld kept after %lld: out of order",
				(long long)rev->revision, (long long)h->prev);
	} else if (rev->superseded_at < h->prev_superseded) {
		history_problem(h, "revision %lld superseded at %lld, before revision %lld was "
				"(at %lld)", (long long)rev->revision, (long long)rev->superseded_at,
				(long long)h->prev, (long long)h->prev_superseded);
	}
	if (h->live >= 0 && rev->revision >= h->live)
		history_problem(h, "revision %lld kept as an earlier one; the live revision is %lld",
				(long long)rev->revision, (long long)h->live);
	h->n++;
	h->prev = rev->revision;
	h->prev_superseded = rev->superseded_at;
	return 0;
}

void a2m_check_history_end(a2m_check_history *h)
{
	if (!h->failed) {
		history_record_end(h);
		a2m_check_meter_end(&h->meter, h->revisions);
		if (h->problems > MAX_EXAMPLES)
			a2m_check_say(h->o, A2M_CHECK_HISTORY, 1, "%zu problems in all", h->problems);
		else if (!h->problems)
			a2m_check_say(h->o, A2M_CHECK_HISTORY, 0, "%lld earlier revision%s of %lld keyed "
				      "record%s, each below its live revision, in order%s",
				      (long long)h->revisions, h->revisions == 1 ? "" : "s",
				      (long long)h->records, h->records == 1 ? "" : "s",
				      h->o->history_keep ? ", within the bound" : "");
	}
	free(h->id);
	h->id = NULL;
}

void a2m_check_say_expiry(const a2m_check_options *o, int64_t n, int64_t soonest,
			  const char *tail)
{
	char at[A2M_TIMESTAMP_LEN];
	if (!n)
		a2m_check_say(o, A2M_CHECK_EXPIRY, 0, "no record expires");
	else
		a2m_check_say(o, A2M_CHECK_EXPIRY, 0, "%lld record%s expire%s, the soonest at %s%s",
			      (long long)n, n == 1 ? "" : "s", n == 1 ? "s" : "",
			      a2m_clock_format(soonest, at), tail);
}

int a2m_check_fingerprint(const a2m_check_options *o, const char *id, const char *content,
			  const char *role, uint64_t kept, size_t *problems)
{
	if (!o->fingerprint || !kept)
		return 0;
	uint64_t want = o->fingerprint(content, role);
	if (want == kept)
		return 0;
	if ((*problems)++ < MAX_EXAMPLES) {
		char q[A2M_CHECK_QUOTED];
		a2m_check_say(o, A2M_CHECK_DEDUP, 1, "record %s: fingerprint %016llx kept, its content "
			      "makes %016llx (a duplicate of it would not be found)",
			      a2m_check_quote(id ? id : "", id ? strlen(id) : 0, q, sizeof q),
			      (unsigned long long)kept, (unsigned long long)want);
	}
	return 1;
}

int a2m_check_vector_ok(const void *b, size_t n, size_t size, int little_endian)
{
	const unsigned char *p = b;
	if (!n || n % size || (size != 4 && size != 8))
		return 0;
	for (size_t i = 0; i < n / size; i++, p += size) {
		unsigned char e[8];
		double x;
		memcpy(e, p, size);
		if (little_endian) {
			/* Assembled from its bytes: right whatever this machine's order. */
			uint64_t u = 0;
			for (size_t j = size; j-- > 0;)
				u = u << 8 | p[j];
			if (size == 8) {
				memcpy(e, &u, 8);
			} else {
				uint32_t w = (uint32_t)u;
				memcpy(e, &w, 4);
			}
		}
		if (size == 8) {
			memcpy(&x, e, 8);
		} else {
			float f;
			memcpy(&f, e, 4);
			x = f;
		}
		if (!isfinite(x))
			return 0;
	}
	return 1;
}

/* ---- the term comparison ------------------------------------------------- */

/* One side's fingerprint of a term's postings. */
typedef struct side {
	int64_t  n;
	uint64_t sum, mix;
} side;

typedef struct term_entry {
	uint64_t hash;
	size_t   off;    /* of its bytes in the arena */
	uint32_t len;
	int      used;
	side     s[2];
} term_entry;

struct a2m_check_terms {
	term_entry *v;
	size_t      cap, n;   /* cap: a power of two */
	char       *arena;
	size_t      used, acap;
};

a2m_check_terms *a2m_check_terms_new(void)
{
	a2m_check_terms *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->cap = 1024;
	t->v = calloc(t->cap, sizeof *t->v);
	if (!t->v) {
		free(t);
		return NULL;
	}
	return t;
}

void a2m_check_terms_free(a2m_check_terms *t)
{
	if (!t)
		return;
	free(t->v);
	free(t->arena);
	free(t);
}

/* splitmix64's finaliser: every bit of x moves every bit of the result. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ULL;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

static int grow(a2m_check_terms *t)
{
	size_t cap = t->cap * 2;
	term_entry *v = calloc(cap, sizeof *v);
	if (!v)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->v[i].used)
			continue;
		size_t j = (size_t)t->v[i].hash & (cap - 1);
		while (v[j].used)
			j = (j + 1) & (cap - 1);
		v[j] = t->v[i];
	}
	free(t->v);
	t->v = v;
	t->cap = cap;
	return 0;
}

/* The entry of term, added when missing. NULL when memory runs out. */
static term_entry *entry_of(a2m_check_terms *t, const char *term, size_t len)
{
	uint64_t h = a2m_hash_bytes(term, len);
	size_t j = (size_t)h & (t->cap - 1);
	for (; t->v[j].used; j = (j + 1) & (t->cap - 1)) {
		term_entry *e = &t->v[j];
		if (e->hash == h && e->len == len && memcmp(t->arena + e->off, term, len) == 0)
			return e;
	}
	if (2 * (t->n + 1) > t->cap) {
		if (grow(t) != 0)
			return NULL;
		return entry_of(t, term, len);
	}
	if (t->used + len > t->acap) {
		size_t cap = t->acap ? t->acap : 65536;
		while (cap < t->used + len)
			cap *= 2;
		char *a = realloc(t->arena, cap);
		if (!a)
			return NULL;
		t->arena = a;
		t->acap = cap;
	}
	memcpy(t->arena + t->used, term, len);
	term_entry *e = &t->v[j];
	memset(e, 0, sizeof *e);
	e->used = 1;
	e->hash = h;
	e->off = t->used;
	e->len = (uint32_t)len;
	t->used += len;
	t->n++;
	return e;
}

int a2m_check_terms_add(a2m_check_terms *t, int side_no, const char *term, size_t len,
			int64_t seq, uint32_t tf, uint32_t dl)
{
	term_entry *e = entry_of(t, term, len);
	if (!e)
		return -1;
	uint64_t h = mix64((uint64_t)seq) ^ mix64(((uint64_t)tf << 32 | dl) + 0x5851F42D4C957F2DULL);
	side *s = &e->s[side_no];
	s->n++;
	s->sum += h;
	s->mix ^= mix64(h);
	return 0;
}

int a2m_check_terms_expect(a2m_check_terms *t, a2m_indexer *ix, int64_t seq,
			   const char *content, a2m_index_stats *stats)
{
	a2m_doc_terms dt;
	memset(&dt, 0, sizeof dt);
	int rc = ix->analyze(ix, content ? content : "", &dt);
	for (size_t i = 0; rc == 0 && i < dt.n; i++)
		rc = a2m_check_terms_add(t, A2M_TERMS_EXPECTED, dt.terms[i].text, dt.terms[i].len,
					 seq, dt.terms[i].tf, dt.length);
	if (rc == 0) {
		/* As the indexes count a document (sqlite_index.c, memory_index.c). */
		if (dt.n) {
			stats->docs++;
			stats->total_len += dt.length;
		} else if (dt.has_text) {
			stats->unindexed++;
		}
	}
	ix->release(ix, &dt);
	return rc ? -1 : 0;
}

void a2m_check_terms_compare(const a2m_check_terms *t, const a2m_check_options *o,
			     size_t max_examples, a2m_check_terms_result *r)
{
	memset(r, 0, sizeof *r);
	for (size_t i = 0; i < t->cap; i++) {
		const term_entry *e = &t->v[i];
		if (!e->used)
			continue;
		const side *want = &e->s[A2M_TERMS_EXPECTED], *got = &e->s[A2M_TERMS_FOUND];
		r->terms_expected += want->n > 0;
		r->terms_found += got->n > 0;
		r->postings_expected += want->n;
		r->postings_found += got->n;
		if (want->n == got->n && want->sum == got->sum && want->mix == got->mix)
			continue;
		if (r->differing++ < max_examples) {
			char q[A2M_CHECK_QUOTED];
			a2m_check_quote(t->arena + e->off, e->len, q, sizeof q);
			a2m_check_say(o, A2M_CHECK_INDEX, 1,
				      "term %s: %lld posting%s expected from the records, %lld in the index%s",
				      q, (long long)want->n, want->n == 1 ? "" : "s", (long long)got->n,
				      want->n == got->n ? " (with other records or figures)" : "");
		}
	}
}
