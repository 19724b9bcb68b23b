/*
** vector_index.c — contiguous float32 rows per tier and their 16-bit
** sketches: kept by seq, staged per transaction, interned owners (see
** vector_index.h; the search over them is vector_search.c, the arithmetic
** vector_kernels.c, the quantized mode's codes and approximate search
** vector_quant.c).
**
** The layout serves the scan, which is memory-bound (vector_search.c):
** rows of one tier are one array, with the seq, owner id and norm of each
** row beside it.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/unembedded.h"
#include "store/vector_index.h"
#include "store/vector_index_internal.h"
#include "util/grow.h"
#include "util/hash.h"

/* ---- hashing ----------------------------------------------------------- */

static size_t seq_hash(int64_t seq, size_t mask)
{
	return (size_t)(((uint64_t)seq * 0x9E3779B97F4A7C15ULL) >> 20) & mask;
}

static vslot *slot_find(vspace *sp, int64_t seq)
{
	if (!sp->nslots)
		return NULL;
	size_t mask = sp->nslots - 1;
	for (size_t i = seq_hash(seq, mask);; i = (i + 1) & mask) {
		if (sp->slots[i].seq == seq)
			return &sp->slots[i];
		if (sp->slots[i].seq == EMPTY_SEQ)
			return NULL;
	}
}

/* Room for one more slot (load at most one half). Returns 0 or -1. */
static int slots_reserve(vspace *vx)
{
	if ((vx->used + 1) * 2 <= vx->nslots)
		return 0;
	size_t n = vx->nslots ? vx->nslots * 2 : 1024;
	vslot *s = malloc(n * sizeof *s);
	if (!s)
		return -1;
	for (size_t i = 0; i < n; i++)
		s[i].seq = EMPTY_SEQ;
	for (size_t i = 0; i < vx->nslots; i++) {
		if (vx->slots[i].seq == EMPTY_SEQ)
			continue;
		size_t j = seq_hash(vx->slots[i].seq, n - 1);
		while (s[j].seq != EMPTY_SEQ)
			j = (j + 1) & (n - 1);
		s[j] = vx->slots[i];
	}
	free(vx->slots);
	vx->slots = s;
	vx->nslots = n;
	return 0;
}

/* Adds seq (absent; room reserved). */
static vslot *slot_add(vspace *vx, int64_t seq, uint32_t tier, uint32_t row)
{
	size_t mask = vx->nslots - 1, i = seq_hash(seq, mask);
	while (vx->slots[i].seq != EMPTY_SEQ)
		i = (i + 1) & mask;
	vx->slots[i] = (vslot){.seq = seq, .tier = tier, .row = row};
	vx->used++;
	return &vx->slots[i];
}

/* Deletes a slot, shifting back the ones its probe sequence displaced. */
static void slot_del(vspace *vx, vslot *sl)
{
	size_t mask = vx->nslots - 1, i = (size_t)(sl - vx->slots), j = i;
	vx->used--;
	for (;;) {
		vx->slots[i].seq = EMPTY_SEQ;
		for (;;) {
			j = (j + 1) & mask;
			if (vx->slots[j].seq == EMPTY_SEQ)
				return;
			size_t home = seq_hash(vx->slots[j].seq, mask);
			/* j may move to i only if its home is not in (i, j]. */
			if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
				break;
		}
		vx->slots[i] = vx->slots[j];
		i = j;
	}
}

/* See vector_index_internal.h. */
uint32_t a2m_vindex_owner_id(const a2m_vindex *vx, const char *owner, int *found)
{
	*found = 1;
	if (!owner)
		return 0;
	if (vx->notab) {
		size_t mask = vx->notab - 1;
		for (size_t i = a2m_hash_str(owner) & mask; vx->otab[i]; i = (i + 1) & mask)
			if (strcmp(vx->owners[vx->otab[i] - 1], owner) == 0)
				return vx->otab[i];
	}
	*found = 0;
	return 0;
}

/* The id of owner, interning it. Returns 0 for NULL, UINT32_MAX when memory runs out. */
static uint32_t owner_intern(a2m_vindex *vx, const char *owner)
{
	int found;
	uint32_t id = a2m_vindex_owner_id(vx, owner, &found);
	if (found)
		return id;
	if ((vx->nowners + 1) * 2 > vx->notab) {
		size_t n = vx->notab ? vx->notab * 2 : 64;
		uint32_t *t = calloc(n, sizeof *t);
		if (!t)
			return UINT32_MAX;
		for (size_t k = 0; k < vx->nowners; k++) {
			size_t i = a2m_hash_str(vx->owners[k]) & (n - 1);
			while (t[i])
				i = (i + 1) & (n - 1);
			t[i] = (uint32_t)(k + 1);
		}
		free(vx->otab);
		vx->otab = t;
		vx->notab = n;
	}
	if (a2m_grow((void **)&vx->owners, &vx->ocap, vx->nowners + 1, sizeof *vx->owners))
		return UINT32_MAX;
	char *copy = strdup(owner);
	if (!copy)
		return UINT32_MAX;
	vx->owners[vx->nowners++] = copy;
	size_t i = a2m_hash_str(owner) & (vx->notab - 1);
	while (vx->otab[i])
		i = (i + 1) & (vx->notab - 1);
	vx->otab[i] = (uint32_t)vx->nowners;
	return (uint32_t)vx->nowners;
}

int a2m_vindex_tier_rule(const a2m_vindex *vx, const a2m_vector_search *q, const vtier *t,
			 uint32_t *oid)
{
	const char *owner = NULL;
	int rule = q->filter ? q->filter->tier(q->filter->ctx, t->name, &owner) : A2M_VF_ALL;
	int known = 1;
	*oid = 0;
	if (rule == A2M_VF_OWNER)
		*oid = a2m_vindex_owner_id(vx, owner, &known);
	if (rule == A2M_VF_SKIP || !known || !t->n)
		return 0;
	return rule == A2M_VF_OWNER ? 2 : 1;
}

/* ---- tiers and rows ---------------------------------------------------- */

/* x rounded up to a float (a bound must not shrink by its rounding). */
static float round_up(double x)
{
	return (float)(x * (1 + 1e-6) + 1e-30);
}


static int same_name(const char *a, const char *b)
{
	return (!a || !b) ? a == b : strcmp(a, b) == 0;
}

/* The index of tier name, adding it. Returns ODD_TIER when memory runs out. */
static uint32_t tier_of(vspace *vx, const char *name)
{
	for (size_t i = 0; i < vx->ntiers; i++)
		if (same_name(vx->tiers[i].name, name))
			return (uint32_t)i;
	if (a2m_grow((void **)&vx->tiers, &vx->tcap, vx->ntiers + 1, sizeof *vx->tiers))
		return ODD_TIER;
	vtier *t = &vx->tiers[vx->ntiers];
	memset(t, 0, sizeof *t);
	if (name && !(t->name = strdup(name)))
		return ODD_TIER;
	return (uint32_t)vx->ntiers++;
}

/* Room for one more row in t (its code too, when sp keeps them). Returns 0 or -1. */
static int rows_reserve(const vspace *sp, vtier *t)
{
	size_t dims = sp->dims;
	if (t->n < t->cap)
		return 0;
	/* Each array grows on its own; one that could not keeps its rows, and
	** t->cap moves only once all did. */
	size_t n = a2m_grow_cap(t->cap, t->n + 1);
	if (!n || a2m_resize((void **)&t->vecs, n, dims * sizeof *t->vecs) ||
	    a2m_resize((void **)&t->norms, n, sizeof *t->norms) ||
	    a2m_resize((void **)&t->seqs, n, sizeof *t->seqs) ||
	    a2m_resize((void **)&t->owners, n, sizeof *t->owners) ||
	    a2m_resize((void **)&t->sk, n, dims * sizeof *t->sk) ||
	    a2m_resize((void **)&t->sk_scale, n, sizeof *t->sk_scale) ||
	    a2m_resize((void **)&t->sk_err, n, sizeof *t->sk_err) ||
	    a2m_resize((void **)&t->sk_len, n, sizeof *t->sk_len) ||
	    a2m_resize((void **)&t->norm2, n, sizeof *t->norm2))
		return -1;
	if (sp->codes && a2m_vcodes_reserve(sp, t, n) != 0)
		return -1;
	t->cap = n;
	return 0;
}

static void row_write(const vspace *vx, vtier *t, size_t row, int64_t seq, uint32_t owner,
		      const float *vec)
{
	size_t d = vx->dims;
	float *dst = t->vecs + row * d;
	memcpy(dst, vec, d * sizeof *dst);
	t->norms[row] = (float)sqrt((double)a2m_vec_dot(dst, dst, d));
	t->seqs[row] = seq;
	t->owners[row] = owner;
	double err, len;
	t->sk_scale[row] = a2m_vec_sketch(dst, d, vx->sk_max, t->sk + row * d, &err, &len);
	t->sk_err[row] = round_up(err);
	t->sk_len[row] = round_up(len);
	double n2 = 0;
	for (size_t i = 0; i < d; i++)
		n2 += (double)dst[i] * dst[i];
	t->norm2[row] = n2;
	if (vx->codes)
		a2m_vcodes_write(vx, t, row);
}

/* Removes the row sl names; the last row of its tier takes its place. */
static void row_drop(vspace *vx, vslot *sl)
{
	vtier *t = &vx->tiers[sl->tier];
	size_t row = sl->row, last = t->n - 1;
	if (row != last) {
		memcpy(t->vecs + row * vx->dims, t->vecs + last * vx->dims,
		       vx->dims * sizeof *t->vecs);
		t->norms[row] = t->norms[last];
		t->seqs[row] = t->seqs[last];
		t->owners[row] = t->owners[last];
		memcpy(t->sk + row * vx->dims, t->sk + last * vx->dims, vx->dims * sizeof *t->sk);
		t->sk_scale[row] = t->sk_scale[last];
		t->sk_err[row] = t->sk_err[last];
		t->sk_len[row] = t->sk_len[last];
		t->norm2[row] = t->norm2[last];
		if (vx->codes)
			a2m_vcodes_move(vx, t, row, last);
		vslot *moved = slot_find(vx, t->seqs[row]);
		if (moved)
			moved->row = (uint32_t)row;
	}
	t->n--;
}

static void apply_remove(vspace *vx, int64_t seq)
{
	vslot *sl = slot_find(vx, seq);
	if (!sl)
		return;
	if (sl->tier == ODD_TIER)
		vx->odd--;
	else
		row_drop(vx, sl);
	slot_del(vx, sl);
}

/* Frees the rows of every tier of an empty space, whose width may change. */
static void rows_release(vspace *sp)
{
	for (size_t i = 0; i < sp->ntiers; i++) {
		vtier *t = &sp->tiers[i];
		free(t->vecs);
		free(t->norms);
		free(t->seqs);
		free(t->owners);
		free(t->sk);
		free(t->sk_scale);
		free(t->sk_err);
		free(t->sk_len);
		free(t->norm2);
		a2m_vcodes_release(t);
		char *name = t->name;
		memset(t, 0, sizeof *t);
		t->name = name;
	}
	sp->codes = 0; /* built again, for the new width, at the next approximate search */
}

/*
** The write of one record in space vx, now: vec NULL means it has no
** vector there. An empty space takes the width of its next vector (the
** generated space changes width with the model, §4.4 of EMBEDDINGS.md).
*/
static void apply_put(a2m_vindex *ix, vspace *vx, int64_t seq, const char *tier,
		      const char *owner, double salience, const float *vec, size_t dims)
{
	if (!vec || !dims) {
		apply_remove(vx, seq);
		return;
	}
	if (!vx->used && vx->dims != dims) {
		rows_release(vx);
		vx->dims = dims;
		vx->sk_max = a2m_vec_sketch_max(dims);
	}
	vslot *sl = slot_find(vx, seq);
	if (!sl && slots_reserve(vx) != 0)
		goto oom;
	if (dims != vx->dims) {
		if (sl && sl->tier == ODD_TIER)
			return;
		if (sl) {
			row_drop(vx, sl);
			sl->tier = ODD_TIER;
		} else {
			slot_add(vx, seq, ODD_TIER, 0);
		}
		vx->odd++;
		return;
	}
	uint32_t ti = tier_of(vx, tier), oid = owner_intern(ix, owner);
	if (ti == ODD_TIER || oid == UINT32_MAX)
		goto oom;
	if (salience > ix->salience_max)
		ix->salience_max = salience;
	vtier *t = &vx->tiers[ti];
	if (sl && sl->tier == ti) {
		row_write(vx, t, sl->row, seq, oid, vec);
		return;
	}
	if (rows_reserve(vx, t) != 0)
		goto oom;
	if (sl && sl->tier == ODD_TIER)
		vx->odd--;
	else if (sl)
		row_drop(vx, sl);
	if (sl) {
		sl->tier = ti;
		sl->row = (uint32_t)t->n;
	} else {
		slot_add(vx, seq, ti, (uint32_t)t->n);
	}
	row_write(vx, t, t->n++, seq, oid, vec);
	return;
oom:
	ix->valid = 0;
}

/* Both spaces' writes of one record, and whether it is without a vector. */
static void apply_both(a2m_vindex *vx, int64_t seq, const char *tier, const char *owner,
		       double salience, const float *vec, size_t dims, const float *gvec,
		       size_t gdims, int bare)
{
	apply_put(vx, &vx->sp[0], seq, tier, owner, salience, vec, dims);
	if (vx->valid)
		apply_put(vx, &vx->sp[1], seq, tier, owner, salience, gvec, gdims);
	if (vx->valid && vx->bare && a2m_unembedded_put(vx->bare, seq, tier, bare) != 0)
		vx->valid = 0;
}

static void apply_remove_all(a2m_vindex *vx, int64_t seq)
{
	apply_remove(&vx->sp[0], seq);
	apply_remove(&vx->sp[1], seq);
	if (vx->bare)
		(void)a2m_unembedded_put(vx->bare, seq, NULL, 0); /* a removal cannot fail */
}

/* ---- the interface ----------------------------------------------------- */

a2m_vindex *a2m_vindex_new(void)
{
	a2m_vindex *vx = calloc(1, sizeof *vx);
	if (vx)
		vx->valid = 1;
	return vx;
}

static void log_drop(a2m_vindex *vx)
{
	for (size_t i = 0; i < vx->nlog; i++) {
		free(vx->log[i].tier);
		free(vx->log[i].owner);
		free(vx->log[i].vec);
		free(vx->log[i].gvec);
	}
	vx->nlog = 0;
}

void a2m_vindex_clear(a2m_vindex *vx)
{
	log_drop(vx);
	for (int k = 0; k < 2; k++) {
		vspace *sp = &vx->sp[k];
		rows_release(sp);
		for (size_t i = 0; i < sp->ntiers; i++)
			free(sp->tiers[i].name);
		free(sp->tiers);
		free(sp->slots);
	}
	for (size_t i = 0; i < vx->nowners; i++)
		free(vx->owners[i]);
	free(vx->owners);
	free(vx->otab);
	free(vx->log);
	free(vx->scratch);
	int in_tx = vx->in_tx;
	a2m_unembedded *bare = vx->bare;
	a2m_unembedded_clear(bare);
	memset(vx, 0, sizeof *vx);
	vx->in_tx = in_tx;
	vx->bare = bare;
	vx->valid = 1;
}

void a2m_vindex_free(a2m_vindex *vx)
{
	if (!vx)
		return;
	a2m_vindex_clear(vx);
	a2m_unembedded_free(vx->bare);
	free(vx);
}

int a2m_vindex_valid(const a2m_vindex *vx)
{
	return vx->valid;
}

void a2m_vindex_invalidate(a2m_vindex *vx)
{
	vx->valid = 0;
	log_drop(vx);
}

/* rec's vector as floats: into scratch (put now) or a copy (staged). */
static float *to_float(a2m_vindex *vx, const a2m_record *rec, int copy)
{
	float *f;
	if (copy) {
		f = malloc(rec->dims * sizeof *f);
	} else {
		if (vx->scratch_n < rec->dims) {
			free(vx->scratch);
			vx->scratch_n = 0;
			if (!(vx->scratch = malloc(rec->dims * sizeof *vx->scratch)))
				return NULL;
			vx->scratch_n = rec->dims;
		}
		f = vx->scratch;
	}
	for (size_t i = 0; f && i < rec->dims; i++)
		f[i] = (float)rec->embedding[i];
	return f;
}

/* Stages a write. Returns 0, or -1 when memory runs out (nothing staged). */
static int stage(a2m_vindex *vx, const staged *w)
{
	if (a2m_grow((void **)&vx->log, &vx->logcap, vx->nlog + 1, sizeof *vx->log))
		return -1;
	vx->log[vx->nlog++] = *w;
	return 0;
}

void a2m_vindex_put(a2m_vindex *vx, const a2m_record *rec)
{
	if (!vx || !vx->valid)
		return;
	vx->written = 1;
	int has = rec->embedding && rec->dims;
	int gen = rec->gen_embedding && rec->gen_dims;
	int bare = vx->bare && !has && !gen && a2m_has_text(rec->content);
	if (!vx->in_tx) {
		float *f = has ? to_float(vx, rec, 0) : NULL;
		if (has && !f)
			vx->valid = 0;
		else
			apply_both(vx, rec->seq, rec->tier, rec->owner, rec->salience, f,
				   has ? rec->dims : 0, gen ? rec->gen_embedding : NULL,
				   gen ? rec->gen_dims : 0, bare);
		return;
	}
	staged w = {.seq = rec->seq, .put = 1, .dims = has ? rec->dims : 0,
		    .gdims = gen ? rec->gen_dims : 0, .salience = rec->salience, .bare = bare};
	if ((has && !(w.vec = to_float(vx, rec, 1))) ||
	    (gen && !(w.gvec = malloc(w.gdims * sizeof *w.gvec))) ||
	    (rec->tier && !(w.tier = strdup(rec->tier))) ||
	    (rec->owner && !(w.owner = strdup(rec->owner))) || stage(vx, &w) != 0) {
		free(w.vec);
		free(w.gvec);
		free(w.tier);
		free(w.owner);
		a2m_vindex_invalidate(vx);
		return;
	}
	if (gen)
		memcpy(vx->log[vx->nlog - 1].gvec, rec->gen_embedding, w.gdims * sizeof *w.gvec);
}

int a2m_vindex_differs(const a2m_record *a, const a2m_record *b)
{
	size_t da = a->embedding ? a->dims : 0, db = b->embedding ? b->dims : 0;
	size_t ga = a->gen_embedding ? a->gen_dims : 0, gb = b->gen_embedding ? b->gen_dims : 0;
	return da != db || ga != gb || !same_name(a->tier, b->tier) ||
	       a2m_has_text(a->content) != a2m_has_text(b->content) ||
	       !same_name(a->owner, b->owner) || a->salience != b->salience ||
	       (da && memcmp(a->embedding, b->embedding, da * sizeof *a->embedding) != 0) ||
	       (ga && memcmp(a->gen_embedding, b->gen_embedding, ga * sizeof *a->gen_embedding) != 0);
}

void a2m_vindex_remove(a2m_vindex *vx, int64_t seq)
{
	if (!vx || !vx->valid)
		return;
	if (!vx->in_tx) {
		apply_remove_all(vx, seq);
		return;
	}
	staged w = {.seq = seq};
	if (stage(vx, &w) != 0)
		a2m_vindex_invalidate(vx);
}

void a2m_vindex_begin(a2m_vindex *vx)
{
	if (!vx)
		return;
	log_drop(vx);
	vx->in_tx = 1;
}

void a2m_vindex_commit(a2m_vindex *vx)
{
	if (!vx)
		return;
	for (size_t i = 0; i < vx->nlog && vx->valid; i++) {
		staged *w = &vx->log[i];
		if (w->put) {
			apply_both(vx, w->seq, w->tier, w->owner, w->salience, w->vec, w->dims,
				   w->gvec, w->gdims, w->bare);
		} else {
			apply_remove_all(vx, w->seq);
		}
	}
	log_drop(vx);
	vx->in_tx = 0;
}

void a2m_vindex_rollback(a2m_vindex *vx)
{
	if (!vx)
		return;
	log_drop(vx);
	vx->in_tx = 0;
}

int a2m_vindex_keep_unembedded(a2m_vindex *vx)
{
	if (!vx->bare && !(vx->bare = a2m_unembedded_new()))
		return -1;
	/* What was put before is not in the set: rebuild. An index nothing was
	** put in (a store just opened) is complete as it is — invalidating it
	** would make it ignore every write until the first search rebuilt it
	** from all the records. */
	if (vx->written)
		vx->valid = 0;
	return 0;
}

int a2m_vindex_unembedded(const a2m_vindex *vx, const char *tier, int64_t after, int64_t *out,
			  size_t max, size_t *n)
{
	*n = 0;
	if (!vx->bare || !vx->valid || vx->nlog)
		return A2M_STORE_NO_INDEX;
	*n = a2m_unembedded_next(vx->bare, tier, after, out, max);
	return 0;
}

size_t a2m_vindex_rows(const a2m_vindex *vx)
{
	size_t n = 0;
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < vx->sp[k].ntiers; i++)
			n += vx->sp[k].tiers[i].n;
	return n;
}

size_t a2m_vindex_bytes(const a2m_vindex *vx)
{
	size_t b = 0;
	for (int k = 0; k < 2; k++) {
		const vspace *sp = &vx->sp[k];
		b += sp->nslots * sizeof(vslot);
		for (size_t i = 0; i < sp->ntiers; i++)
			b += sp->tiers[i].cap * (sp->dims * (sizeof(float) + sizeof(int16_t)) +
						 4 * sizeof(float) + sizeof(double) +
						 sizeof(int64_t) + sizeof(uint32_t) +
						 a2m_vcodes_row_bytes(sp));
	}
	return b;
}
