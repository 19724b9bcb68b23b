/*
** memory.c — the in-memory storage engine (A2M_ENGINE_MEMORY).
**
** Everything lives in process memory and is gone at close. It must behave
** exactly like sqlite.c as far as store.h can observe, because every
** behavioural test runs against both and the layers above must not care which
** one they were given.
**
** This file holds entries, the writes (insert, update, remove), the term
** index and vector rows they keep, open, close and the ops table; the
** structures below are in memory_internal.h, the hash tables and order[] in
** memory_tables.c, the writes in place (touch, move) in memory_narrow.c,
** the journal and transactions in memory_txn.c, the reads in memory_scan.c.
**
** Layout:
**
**   entry        one record plus its bookkeeping (slot, id hash, groups), in
**                one allocation holding only the fields the record has
**                (memory_internal.h). Readers are lent an a2m_record filled
**                from it (a2m_mem_entry_view). An entry's address never
**                changes while it is in the store, so the tables and the
**                journal can point at it; an update puts a new entry in its
**                place.
**   order[]      entries in (created_at, seq) order, the scan order: a
**                sorted prefix and a (usually empty) unsorted tail. A
**                removed entry leaves a NULL tombstone so that removal is
**                O(1); the array is compacted once more than half of its
**                slots are dead, which keeps a scan O(live records) amortised
**                however removals and scans interleave. Trailing tombstones
**                are dropped at once (outside scans), so appends stay in
**                order and the array does not creep.
**   ids          hash table id -> entry (FNV-1a), for get/update/remove;
**                probed (memory_tables.c), so entries carry no link for it.
**   keys         chained hash table (owner, key) -> entry (the link in the
**                key's optional slots), for get_by_key and the per-owner
**                key uniqueness that sqlite.c gets from its UNIQUE index. A NULL owner hashes and compares differently
**                from every string, "" included.
**   seqs         hash table seq -> entry, for visit_seqs and touch; probed too.
**   fps          chained hash table fingerprint -> entries (those that have
**                one), for by_fingerprint (x-dedup).
**   history      the earlier revisions of keyed records, by id
**                (memory_history.c); remove drops a record's.
**   index        the term index (memory_index.c), once attached. An entry
**                keeps no doc of its content (a doc is ~140 bytes a record
**                of 9 terms): insert analyses the content and links the
**                doc; remove and a content-changing update analyse the
**                stored content again (the analysis is deterministic) and
**                describe the postings it linked (a2m_mindex_describe), to
**                unlink them. Outside a transaction a doc is freed as soon
**                as it is linked or unlinked; inside one the journal keeps
**                the docs an undo needs until commit. Empty terms are
**                swept only when no undo can need them (commit, end of
**                rollback, a write outside a transaction).
**   journal[]    while a transaction is open, one undo step per write;
**                rollback() replays it backwards.
**   counts       records grouped by tier, (tier, session) and session
**                (memory_counts.c): count() of such a selection is a
**                lookup, and a scan of a small group sorts its members'
**                slots instead of passing over every record (the stack's
**                capacity check; a timeline by session).
**   names        tier, session, role and owner, each combination interned
**                once (memory_intern.c); an entry points at its own.
**   metas[]      the store-level settings (meta_get/meta_set), a short
**                array searched linearly: a store has a handful. A deleted
**                setting keeps its slot with a NULL value, so that undoing
**                its deletion never needs memory.
**
** There is no procedural mirror here: a memory store has no disk to put
** files on, and its records are gone at close anyway (store.h).
**
** Records normally arrive in created_at order, so an insert is an append to
** the sorted prefix. One that does not (an import with an old created_at, an
** update that moves created_at) goes to the unsorted tail; the next scan
** sorts the tail and merges it in, O(n + k log k) for k such writes. That
** keeps every write O(1), and a batch of out-of-order writes costs one merge
** rather than a memmove each or a full sort per scan.
**
** Writes from inside a visit callback are allowed: while a scan runs the
** array is neither compacted, trimmed nor reordered, and anything appended
** lands beyond every slot the scan has yet to visit. So a scan visits each
** record at most once, never one inserted (or moved by an update) during
** it, and never touches freed memory.
*/
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/memory_internal.h"

/* ---- entries ------------------------------------------------------------ */

/* The header is what every record pays; the rest is what it has (memory_internal.h). */
_Static_assert(sizeof(void *) != 8 || sizeof(entry) == 72, "entry header outgrew 72 bytes");

const uint8_t a2m_mem_opt_width[OPT_COUNT] = {
	[OPT_FP] = 2, [OPT_KEY] = 3, [OPT_EXPIRES] = 1, [OPT_REVISION] = 1,
	[OPT_META] = 1, [OPT_GROUP] = 1,
	[OPT_URI] = 1, [OPT_MEDIA] = 1, [OPT_EMB] = 2, [OPT_GEN] = 2,
};

void a2m_mem_entry_free(mstore *s, entry *e)
{
	if (!e)
		return;
	a2m_mintern_put(s->names, e->names);
	free(e);
}

/* A string's bytes in the block, NUL included; 0 for NULL. */
static size_t str_size(const char *str)
{
	return str ? strlen(str) + 1 : 0;
}

/* Copies str (n bytes, from str_size) to *at and advances it; NULL stays NULL. */
static const char *put_str(char **at, const char *str, size_t n)
{
	if (!str)
		return NULL;
	char *p = memcpy(*at, str, n);
	*at += n;
	return p;
}

/*
** One allocation (rec->id and rec->content set, as a2m_store_check_record
** requires): the header, the optional fields' slots, id and content,
** the other strings, then the vectors (8-aligned). Against the full
** a2m_record every entry used to carry, a short record without optional
** fields saves about 150 bytes (docs/BENCHMARKS.md).
*/
entry *a2m_mem_entry_new(mstore *s, const a2m_record *rec)
{
	const char *str[OPT_COUNT] = {0};
	size_t len[OPT_COUNT] = {0};
	unsigned has = 0;
	int emb = rec->embedding && rec->dims, gen = rec->gen_embedding && rec->gen_dims;
	has |= rec->fingerprint ? 1u << OPT_FP : 0;
	has |= rec->key ? 1u << OPT_KEY : 0;
	has |= rec->expires_at ? 1u << OPT_EXPIRES : 0;
	has |= rec->revision ? 1u << OPT_REVISION : 0;
	has |= rec->metadata ? 1u << OPT_META : 0;
	has |= rec->group ? 1u << OPT_GROUP : 0;
	has |= rec->uri ? 1u << OPT_URI : 0;
	has |= rec->media_type ? 1u << OPT_MEDIA : 0;
	has |= emb ? 1u << OPT_EMB : 0;
	has |= gen ? 1u << OPT_GEN : 0;
	/* The strings the block copies (tier, session, role and owner are interned). */
	str[OPT_KEY] = rec->key;
	str[OPT_META] = rec->metadata;
	str[OPT_GROUP] = rec->group;
	str[OPT_URI] = rec->uri;
	str[OPT_MEDIA] = rec->media_type;
	size_t nslots = 0, id_len = strlen(rec->id), clen = strlen(rec->content) + 1;
	size_t strings = id_len + 1 + clen;
	for (unsigned b = 0; b < OPT_COUNT; b++) {
		if (has & (1u << b))
			nslots += a2m_mem_opt_width[b];
		len[b] = str_size(str[b]);
		strings += len[b];
	}
	size_t vec = (strings + 7) & ~(size_t)7;
	size_t bytes = sizeof(entry) + nslots * sizeof(eslot) + vec +
		       (emb ? rec->dims * sizeof(double) : 0) +
		       (gen ? rec->gen_dims * sizeof(float) : 0);
	entry *e = malloc(bytes);
	if (!e)
		return NULL;
	memset(e, 0, sizeof *e + nslots * sizeof(eslot));
	a2m_mnames want = {rec->tier, rec->session, rec->role, rec->owner};
	if (!(e->names = a2m_mintern_get(s->names, &want))) {
		free(e);
		return NULL;
	}
	e->has = (uint16_t)has;
	e->nslots = (uint8_t)nslots;
	e->id_len = (uint8_t)(id_len < 255 ? id_len : 255);
	e->seq = rec->seq;
	e->created_at = rec->created_at;
	e->accessed_at = rec->accessed_at;
	e->access_count = rec->access_count;
	e->salience = rec->salience;
	/* Every insert and update makes its entry here: the bound follows. */
	if (rec->salience > s->salience_max)
		s->salience_max = rec->salience;
	e->slot = NO_SLOT;

	char *at = (char *)(e->tail + nslots);
	put_str(&at, rec->id, id_len + 1);
	put_str(&at, rec->content, clen);
	eslot *o = e->tail;
	char *vecs = (char *)(e->tail + nslots) + vec;
	for (unsigned b = 0; b < OPT_COUNT; b++) {
		if (!(has & (1u << b)))
			continue;
		switch (b) {
		case OPT_FP:       o[0].u = rec->fingerprint; break;
		case OPT_KEY:      o[0].s = put_str(&at, str[b], len[b]); break;
		case OPT_EXPIRES:  o[0].i = rec->expires_at; break;
		case OPT_REVISION: o[0].i = rec->revision; break;
		case OPT_EMB:
			o[0].p = memcpy(vecs, rec->embedding, rec->dims * sizeof(double));
			o[1].n = rec->dims;
			vecs += rec->dims * sizeof(double);
			break;
		case OPT_GEN:
			o[0].p = memcpy(vecs, rec->gen_embedding, rec->gen_dims * sizeof(float));
			o[1].n = rec->gen_dims;
			break;
		default:           o[0].s = put_str(&at, str[b], len[b]); break;
		}
		o += a2m_mem_opt_width[b];
	}
	return e;
}

void a2m_mem_entry_view(const entry *e, a2m_record *r)
{
	const char *id = a2m_mem_id(e);
	r->id = (char *)(uintptr_t)id;
	r->content = (char *)(uintptr_t)(id + (e->id_len < 255 ? e->id_len : strlen(id)) + 1);
	r->created_at = e->created_at;
	r->seq = e->seq;
	r->tier = (char *)(uintptr_t)e->names->tier;
	r->session = (char *)(uintptr_t)e->names->session;
	r->role = (char *)(uintptr_t)e->names->role;
	r->owner = (char *)(uintptr_t)e->names->owner;
	r->salience = e->salience;
	r->accessed_at = e->accessed_at;
	r->access_count = e->access_count;
	r->metadata = r->group = r->key = r->uri = r->media_type = NULL;
	r->revision = r->expires_at = 0;
	r->fingerprint = 0;
	r->embedding = NULL;
	r->gen_embedding = NULL;
	r->dims = r->gen_dims = 0;
	const eslot *o = e->tail;
	for (unsigned has = e->has, b = 0; has; has >>= 1, b++) {
		if (!(has & 1))
			continue;
		switch (b) {
		case OPT_FP:       r->fingerprint = o[0].u; break;
		case OPT_KEY:      r->key = (char *)(uintptr_t)o[0].s; break;
		case OPT_EXPIRES:  r->expires_at = o[0].i; break;
		case OPT_REVISION: r->revision = o[0].i; break;
		case OPT_META:     r->metadata = (char *)(uintptr_t)o[0].s; break;
		case OPT_GROUP:    r->group = (char *)(uintptr_t)o[0].s; break;
		case OPT_URI:      r->uri = (char *)(uintptr_t)o[0].s; break;
		case OPT_MEDIA:    r->media_type = (char *)(uintptr_t)o[0].s; break;
		case OPT_EMB:
			r->embedding = (double *)(uintptr_t)o[0].p;
			r->dims = o[1].n;
			break;
		case OPT_GEN:
			r->gen_embedding = (float *)(uintptr_t)o[0].p;
			r->gen_dims = o[1].n;
			break;
		default: break;
		}
		o += a2m_mem_opt_width[b];
	}
}

/* Frees the terms no posting needs any more, once no undo can need them. */
void a2m_mem_index_settle(mstore *s)
{
	if (s->index && !s->in_tx)
		a2m_mindex_sweep(s->index);
}

/*
** Analyses content into a doc for record seq (NULL *out without an index):
** linked 0, ready to link (a2m_mindex_prepare); linked 1, the postings of
** a record already linked from that very content (a2m_mindex_describe).
** Changes nothing a reader sees. Returns 0 or fails.
*/
static int index_doc(mstore *s, const char *content, int64_t seq, int linked, a2m_mdoc **out)
{
	a2m_doc_terms dt;
	*out = NULL;
	if (!s->index)
		return 0;
	memset(&dt, 0, sizeof dt);
	int rc = s->ix->analyze(s->ix, content, &dt);
	if (rc == 0)
		rc = (linked ? a2m_mindex_describe : a2m_mindex_prepare)(s->index, &dt, seq, out);
	s->ix->release(s->ix, &dt);
	return rc ? a2m_store_fail(&s->base, "index: out of memory") : 0;
}

/* A doc linked or unlinked: the journal's to keep inside a transaction
** (an undo needs it), else freed now. */
static a2m_mdoc *doc_done(mstore *s, a2m_mdoc *d)
{
	if (s->in_tx)
		return d;
	a2m_mdoc_free(d);
	return NULL;
}

/* ---- writes ------------------------------------------------------------ */

static int mem_insert(a2m_store *base, a2m_record *rec)
{
	mstore *s = (mstore *)base;
	s->stamp++;
	int rc = a2m_store_check_record(&s->base, rec, "insert");
	if (rc)
		return rc;
	if (a2m_mem_find_id(s, rec->id)) {
		a2m_store_fail(base, "insert: id \"%s\" already exists", rec->id);
		return A2M_INVALID_PARAMS;
	}
	if (rec->key && a2m_mem_find_key(s, rec->owner, rec->key)) {
		a2m_store_fail(base, "insert: key \"%s\" is already in use for this owner",
			       rec->key);
		return A2M_INVALID_PARAMS;
	}
	/* Everything that can fail happens before the store changes. */
	if (a2m_mem_journal_reserve(s) != 0 || a2m_mem_order_reserve(s) != 0 ||
	    a2m_mem_ptable_reserve(&s->ids, 0) != 0 || a2m_mem_ptable_reserve(&s->seqs, 1) != 0 ||
	    a2m_mcounts_reserve(s->counts, rec->tier, rec->session) != 0)
		return a2m_store_fail(base, "out of memory");
	entry *e = a2m_mem_entry_new(s, rec);
	if (!e)
		return a2m_store_fail(base, "out of memory");
	a2m_mdoc *doc;
	rc = index_doc(s, rec->content, s->next_seq, 0, &doc);
	if (rc) {
		a2m_mem_entry_free(s, e);
		a2m_mem_index_settle(s);
		return rc;
	}

	e->seq = s->next_seq++;
	rec->seq = e->seq;
	e->id_hash = (uint32_t)a2m_mem_hash_id(rec->id);
	a2m_mem_ptable_link(&s->ids, e, 0);
	a2m_mem_ptable_link(&s->seqs, e, 1);
	a2m_mem_key_link(s, e);
	a2m_mem_order_append(s, e);
	a2m_mcounts_link(s->counts, e->names->tier, e->names->session, &e->link);
	if (doc)
		a2m_mindex_link(s->index, doc);
	doc = doc_done(s, doc);
	if (s->in_tx)
		a2m_mem_journal_push(s, UNDO_INSERT, e)->doc = doc;
	a2m_record view;
	a2m_mem_entry_view(e, &view);
	a2m_vindex_put(s->vectors, &view);
	a2m_mem_index_settle(s);  /* a list the insert made long or short changes form */
	return 0;
}

/*
** Puts n in e's place in every table, order[] and the groups (n's seq
** and id hash already e's); e is left in none. Cannot fail: the groups n
** joins that e was not in were reserved. Rollback calls it the other way
** round.
*/
void a2m_mem_entry_replace(mstore *s, entry *e, entry *n)
{
	a2m_mem_key_unlink(s, e);
	a2m_mem_ptable_replace(&s->ids, e, n, 0);
	a2m_mem_ptable_replace(&s->seqs, e, n, 1);
	a2m_mem_key_link(s, n);
	n->slot = e->slot;
	if (e->slot != NO_SLOT)
		s->order[e->slot] = n;
	e->slot = NO_SLOT;
	a2m_mcounts_move(s->counts, e->names->tier, e->names->session, &e->link,
			 n->names->tier, n->names->session, &n->link, s->in_tx);
}

/*
** An update makes a new entry from rec and puts it in the old one's place
** (entries never change size). The old one goes to the journal inside a
** transaction, to be put back by rollback or freed by commit.
*/
static int mem_update(a2m_store *base, const a2m_record *rec)
{
	mstore *s = (mstore *)base;
	s->stamp++;
	int rc = a2m_store_check_record(&s->base, rec, "update");
	if (rc)
		return rc;
	entry *e = a2m_mem_find_id(s, rec->id);
	if (!e) {
		a2m_store_fail(base, "update: no record \"%s\"", rec->id);
		return A2M_UNKNOWN_RECORD;
	}
	if (rec->key) {
		entry *other = a2m_mem_find_key(s, rec->owner, rec->key);
		if (other && other != e) {
			a2m_store_fail(base, "update: key \"%s\" is already in use for this owner",
				       rec->key);
			return A2M_INVALID_PARAMS;
		}
	}
	int moves = rec->created_at != e->created_at;
	int recount = !a2m_str_same(rec->tier, e->names->tier) ||
		      !a2m_str_same(rec->session, e->names->session);
	if (a2m_mem_journal_reserve(s) != 0 || (moves && a2m_mem_order_reserve(s) != 0) ||
	    (recount && a2m_mcounts_reserve(s->counts, rec->tier, rec->session) != 0))
		return a2m_store_fail(base, "out of memory");
	entry *n = a2m_mem_entry_new(s, rec);
	if (!n)
		return a2m_store_fail(base, "out of memory");
	/* Only a change of content re-indexes: touches and tier moves do not.
	** The old content's postings are described again, to be replaced. */
	a2m_mdoc *doc = NULL, *old_doc = NULL;
	int reindex = s->index && strcmp(rec->content, a2m_mem_content(e)) != 0;
	if (reindex && ((rc = index_doc(s, rec->content, e->seq, 0, &doc)) != 0 ||
			(rc = index_doc(s, a2m_mem_content(e), e->seq, 1, &old_doc)) != 0)) {
		a2m_mdoc_free(doc);
		a2m_mem_entry_free(s, n);
		a2m_mem_index_settle(s);
		return rc;
	}

	n->seq = e->seq;
	n->id_hash = e->id_hash;
	a2m_mem_entry_replace(s, e, n);
	if (moves) {
		/* Out of its place: to the tail, for the next scan to merge in. */
		a2m_mem_order_remove(s, n);
		a2m_mem_order_append(s, n);
		a2m_mem_maybe_compact(s);
	}
	if (reindex) {
		a2m_mindex_replace(s->index, old_doc, doc);
		doc = doc_done(s, doc);
		old_doc = doc_done(s, old_doc);
	}
	a2m_record was, now;
	a2m_mem_entry_view(e, &was);
	a2m_mem_entry_view(n, &now);
	if (a2m_vindex_differs(&was, &now))
		a2m_vindex_put(s->vectors, &now);
	if (s->in_tx) {
		undo *u = a2m_mem_journal_push(s, UNDO_UPDATE, n);
		u->old = e;
		u->doc = doc;
		u->old_doc = old_doc;
	} else {
		a2m_mem_entry_free(s, e);
		a2m_mem_index_settle(s);
	}
	return 0;
}

static int mem_remove(a2m_store *base, const char *id, int *removed)
{
	mstore *s = (mstore *)base;
	s->stamp++;
	*removed = 0;
	entry *e = id ? a2m_mem_find_id(s, id) : NULL;
	if (!e)
		return 0;
	if (a2m_mem_journal_reserve(s) != 0 || a2m_mem_history_reserve(s) != 0)
		return a2m_store_fail(base, "out of memory");
	/* The postings its content linked, described again to be unlinked. */
	a2m_mdoc *doc;
	int rc = index_doc(s, a2m_mem_content(e), e->seq, 1, &doc);
	if (rc)
		return rc;
	/* Forgetting a key forgets what it used to say (store.h). */
	a2m_mem_history_drop(s, id);

	a2m_mem_ptable_unlink(&s->ids, e, 0);
	a2m_mem_ptable_unlink(&s->seqs, e, 1);
	a2m_mem_key_unlink(s, e);
	a2m_mem_order_remove(s, e);
	a2m_mem_maybe_compact(s);
	a2m_mcounts_unlink(s->counts, e->names->tier, e->names->session, &e->link, s->in_tx);
	if (doc)
		a2m_mindex_unlink(s->index, doc);
	doc = doc_done(s, doc);
	a2m_vindex_remove(s->vectors, e->seq);
	if (s->in_tx) {
		a2m_mem_journal_push(s, UNDO_REMOVE, e)->doc = doc;
	} else {
		a2m_mem_entry_free(s, e);
		a2m_mem_index_settle(s);
	}
	*removed = 1;
	return 0;
}

/* ---- open and close ---------------------------------------------------- */

/*
** Frees the store. An open transaction is rolled back first, as sqlite.c
** does: nothing uncommitted may look as if it had been kept.
*/
static void mem_close(a2m_store *base)
{
	mstore *s = (mstore *)base;
	if (!s)
		return;
	a2m_mem_rollback(base);
	if (s->ids.slots)
		A2M_MEM_EACH(s, e)
			a2m_mem_entry_free(s, e);
	free(s->ids.slots);
	free(s->keys.buckets);
	free(s->seqs.slots);
	free(s->fps.buckets);
	a2m_mhistory_free(s->history);
	a2m_mindex_free(s->index);
	a2m_vindex_free(s->vectors);
	a2m_mcounts_free(s->counts);
	a2m_mintern_free(s->names);
	free(s->order);
	free(s->journal);
	pthread_mutex_destroy(&s->tidy_mu);
	for (size_t i = 0; i < s->nmetas; i++) {
		free(s->metas[i].name);
		free(s->metas[i].value);
	}
	free(s->metas);
	free(s);
}

/* ---- the term index and the vector rows (touch: memory_narrow.c) ------- */

/*
** Indexes every record with ix. A memory store starts empty, so this is
** usually instant; should it hold records, a failure half way drops what
** was done and leaves the store without an index.
*/
static int mem_index_attach(a2m_store *base, a2m_indexer *ix)
{
	mstore *s = (mstore *)base;
	if (s->in_tx)
		return a2m_store_fail(base, "index_attach: a transaction is open");
	a2m_mindex_free(s->index);
	if (!(s->index = a2m_mindex_new()))
		return a2m_store_fail(base, "index_attach: out of memory");
	s->ix = ix;
	int rc = 0;
	A2M_MEM_EACH(s, e) {
		a2m_mdoc *doc;
		if (!rc && (rc = index_doc(s, a2m_mem_content(e), e->seq, 0, &doc)) == 0) {
			a2m_mindex_link(s->index, doc);
			a2m_mdoc_free(doc);
		}
	}
	if (rc) {
		a2m_mindex_free(s->index);
		s->index = NULL;
		s->ix = NULL;
		return rc;
	}
	a2m_mindex_sweep(s->index);
	return 0;
}

static int mem_index_stats(a2m_store *base, a2m_index_stats *out)
{
	mstore *s = (mstore *)base;
	memset(out, 0, sizeof *out);
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	a2m_mindex_stats(s->index, out);
	return 0;
}

static int mem_index_postings_view(a2m_store *base, const char *term, size_t len,
				   const a2m_posting **v, size_t *n)
{
	mstore *s = (mstore *)base;
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	return a2m_mindex_view(s->index, term, len, v, n);
}

static int mem_index_postings_lend(a2m_store *base, const char *term, size_t len,
				   a2m_postings_lent *out)
{
	mstore *s = (mstore *)base;
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	return a2m_mindex_lend(s->index, term, len, out);
}

static int mem_index_postings(a2m_store *base, const char *term, size_t len,
			      a2m_posting_visit visit, void *ctx)
{
	mstore *s = (mstore *)base;
	if (!s->index)
		return A2M_STORE_NO_INDEX;
	return a2m_mindex_postings(s->index, term, len, visit, ctx);
}

/*
** The vector rows follow every write; should one have been lost (memory ran
** out), they are rebuilt here from the records, outside a transaction.
*/
static void vectors_ready(mstore *s)
{
	if (!a2m_vindex_valid(s->vectors) && !s->in_tx) {
		a2m_vindex_clear(s->vectors);
		a2m_record view;
		A2M_MEM_EACH(s, e) {
			a2m_mem_entry_view(e, &view);
			a2m_vindex_put(s->vectors, &view);
		}
	}
}

static int mem_vector_search(a2m_store *base, const a2m_vector_search *q, a2m_candidates *out)
{
	mstore *s = (mstore *)base;
	vectors_ready(s);
	int rc = a2m_vindex_search(s->vectors, q, out);
	return rc == A2M_INTERNAL_ERROR ? a2m_store_fail(base, "vector search: out of memory") : rc;
}

/* A visit that notes whether it asked to stop (visit_seqs hides it). */
typedef struct stop_visit {
	a2m_record_visit visit;
	void            *ctx;
	int              stopped;
} stop_visit;

static int note_stop(const a2m_record *rec, void *ctx)
{
	stop_visit *v = ctx;
	int rc = v->visit(rec, v->ctx);
	v->stopped = rc != 0;
	return rc;
}

/* The vector index keeps the records without a vector (vector_index.h). */
static int mem_scan_unembedded(a2m_store *base, const char *tier, a2m_record_visit visit,
			       void *ctx)
{
	mstore *s = (mstore *)base;
	int64_t seqs[64], after = 0;
	size_t n = 0;
	stop_visit v = {visit, ctx, 0};
	int rc;
	vectors_ready(s);
	while (!v.stopped &&
	       (rc = a2m_vindex_unembedded(s->vectors, tier, after, seqs, 64, &n)) == 0 && n) {
		after = seqs[n - 1];
		if ((rc = a2m_mem_visit_seqs(base, seqs, n, note_stop, &v)) != 0)
			return rc;
	}
	return v.stopped ? 0 : rc;
}

static uint64_t mem_stamp(a2m_store *base)
{
	return ((mstore *)base)->stamp;
}

static int mem_salience_bound(a2m_store *base, double *max)
{
	*max = ((mstore *)base)->salience_max;
	return 1;
}

static const a2m_store_ops memory_ops = {
	.engine     = "memory",
	.begin      = a2m_mem_begin,
	.begin_relaxed = a2m_mem_begin,   /* nothing is durable here anyway */
	.commit     = a2m_mem_commit,
	.rollback   = a2m_mem_rollback,
	.read_begin = a2m_mem_read_begin,
	.read_end   = a2m_mem_read_end,
	.get        = a2m_mem_get,
	.get_by_key = a2m_mem_get_by_key,
	.insert     = mem_insert,
	.update     = mem_update,
	.remove     = mem_remove,
	.move       = a2m_mem_move,
	.scan       = a2m_mem_scan,
	.count      = a2m_mem_count,
	.meta_get   = a2m_mem_meta_get,
	.meta_set   = a2m_mem_meta_set,
	.close      = mem_close,
	.visit_seqs = a2m_mem_visit_seqs,
	.touch      = a2m_mem_touch,
	.index_attach   = mem_index_attach,
	.index_stats    = mem_index_stats,
	.index_postings = mem_index_postings,
	.index_postings_view = mem_index_postings_view,
	.index_postings_lend = mem_index_postings_lend,
	.vector_search  = mem_vector_search,
	.scan_unembedded = mem_scan_unembedded,
	.check      = a2m_mem_check,
	.repair     = a2m_mem_repair,
	.history_put    = a2m_mem_history_put,
	.history_visit  = a2m_mem_history_visit,
	.next_expiry    = a2m_mem_next_expiry,
	.scan_expired   = a2m_mem_scan_expired,
	.by_fingerprint = a2m_mem_by_fingerprint,
	.stamp          = mem_stamp,
	.salience_bound = mem_salience_bound,
};

int a2m_store_memory_open(a2m_store **out, char *err, size_t errlen)
{
	*out = NULL;
	mstore *s = calloc(1, sizeof *s);
	if (!s)
		goto fail;
	s->base.ops = &memory_ops;
	s->next_seq = 1;
	pthread_mutex_init(&s->tidy_mu, NULL);
	if (a2m_mem_ptable_init(&s->ids) != 0 || a2m_mem_table_init(&s->keys) != 0 ||
	    a2m_mem_ptable_init(&s->seqs) != 0 || a2m_mem_table_init(&s->fps) != 0 ||
	    !(s->counts = a2m_mcounts_new()) || !(s->history = a2m_mhistory_new()) ||
	    !(s->names = a2m_mintern_new()))
		goto fail;
	if (!(s->vectors = a2m_vindex_new()) || a2m_vindex_keep_unembedded(s->vectors) != 0)
		goto fail;
	*out = &s->base;
	return 0;

fail:
	if (s)
		mem_close(&s->base);
	if (err && errlen)
		snprintf(err, errlen, "memory store: out of memory");
	return A2M_INTERNAL_ERROR;
}
