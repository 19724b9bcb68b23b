/*
** dedup.c — exact duplicates (x-dedup, docs/PROTOCOL.md): a write's
** fingerprint, the hash of its content's normal form and its role, and
** the live record a write into a tier marked dedup repeats, found through
** the store's fingerprint index (store.h, by_fingerprint) and confirmed by
** comparing normal forms, so a collision of hashes never merges two texts.
**
** The normal form is the analyser's: the words the tokenizer cuts (folded,
** marks stripped, CJK as bigrams) in order, one space between, so that
** "The Cat sat." and "the cat sat" are one text while "the cat" and "a
** cat" stay two. Deterministic, no model. A text with no word in it has no
** fingerprint and is never a duplicate.
*/
#include <string.h>

#include "rank/analyze.h"
#include "stack/stack_internal.h"
#include "util/buf.h"
#include "util/hash.h"

/* The normal form of text into b (reset first). 0, or -1 when memory runs out. */
static int normal_form(const char *text, a2m_buf *b)
{
	a2m_tokens t;
	memset(&t, 0, sizeof t);
	b->len = 0;
	if (a2m_tokenize(text ? text : "", &t) != 0) {
		a2m_tokens_free(&t);
		return -1;
	}
	for (size_t i = 0; i < t.n; i++) {
		if (i)
			a2m_buf_put(b, " ", 1);
		a2m_buf_put(b, t.v[i].text, t.v[i].len);
	}
	a2m_tokens_free(&t);
	return b->failed ? -1 : 0;
}

uint64_t a2m_stack_fingerprint(const char *content, const char *role)
{
	a2m_buf b = {0};
	uint64_t h = 0;
	if (normal_form(content, &b) == 0 && b.len) {
		/* The role after a separator no text holds, "no role" apart
		** from every role string. */
		unsigned char tag = role ? 1 : 0;
		h = a2m_hash_more(a2m_hash_bytes(b.p, b.len), &tag, 1);
		if (role)
			h = a2m_hash_more(h, role, strlen(role));
		if (!h)
			h = 1;  /* 0 means "none" */
	}
	a2m_buf_free(&b);
	return h;
}

/* What a2m_stack_find_duplicate looks for, and what it found. */
typedef struct dup_find {
	const a2m_record *rec;
	const char       *tier;
	int64_t           now;
	a2m_buf           want, got;
	a2m_record       *found;
	int               oom;
} dup_find;

static int dup_visit(const a2m_record *r, void *ctx)
{
	dup_find *d = ctx;
	const a2m_record *w = d->rec;
	if (!a2m_stack_same_str(r->tier, d->tier) || !a2m_stack_same_str(r->session, w->session) ||
	    !a2m_stack_same_str(r->owner, w->owner) || !a2m_stack_same_str(r->role, w->role) ||
	    a2m_stack_expired(r, d->now))
		return 0;
	if (normal_form(r->content, &d->got) != 0) {
		d->oom = 1;
		return -1;
	}
	if (d->got.len != d->want.len || memcmp(d->got.p, d->want.p, d->want.len) != 0)
		return 0;
	if (!(d->found = a2m_record_dup(r))) {
		d->oom = 1;
		return -1;
	}
	return 1;
}

int a2m_stack_find_duplicate(a2m_stack *st, const a2m_record *rec, const char *tier,
			     int64_t now, a2m_record **out, a2m_error *err)
{
	a2m_store *s = st->store;
	*out = NULL;
	if (!rec->fingerprint || !s->ops->by_fingerprint)
		return 0;
	dup_find d = {.rec = rec, .tier = tier, .now = now};
	int rc = normal_form(rec->content, &d.want) ? -1 : 0;
	if (rc == 0)
		rc = s->ops->by_fingerprint(s, rec->fingerprint, dup_visit, &d);
	a2m_buf_free(&d.want);
	a2m_buf_free(&d.got);
	if (rc < 0 && d.oom)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	if (rc < 0) {
		a2m_record_free(d.found);
		return a2m_stack_store_error(st, err, rc);
	}
	*out = d.found;
	return 0;
}
