/*
** memory_packed.h — a postings list coded in bytes, for the in-memory
** term index's short lists (memory_index.c decides which lists are kept
** so; this file only codes them).
**
** Why: a posting lent as store.h's a2m_posting takes 16 bytes, and at 1M
** short records the index holds about 9M of them. The short lists (a
** term in fewer than 1/256 of the records) hold about half, and each is
** read by few recalls and costs little to decode when one does, so they
** are kept here in 2-4 bytes a posting instead. The long lists, which
** block-max walks without reading most of them, stay arrays lent in place.
**
** Coding, one posting after another in ascending seq:
**
**     varint(delta << 1 | small)   delta: seq minus the previous posting's
**                                  (the first's: minus 0), 64 bits wide
**     small 1: one byte (tf - 1) << 6 | dl     for tf 1..4 and dl < 64
**     small 0: varint(tf), varint(dl)
**
** A posting takes at most A2M_MPACKED_MAX bytes. Removing one never grows
** the list (the delta it leaves to its successor is at most the two it
** joins), so only an insert or a rewrite needs room, which reserve() makes
** before and which is never given back: as memory_index.h requires, no
** link, unlink or rewrite of a reserved list allocates or fails.
*/
#ifndef A2M_MEMORY_PACKED_H
#define A2M_MEMORY_PACKED_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* The most bytes a posting takes: a 64-bit varint and two 32-bit ones. */
#define A2M_MPACKED_MAX 20

typedef struct a2m_mpacked {
	uint8_t *b;      /* used bytes of cap; NULL while cap is 0 */
	uint32_t used, cap;
	int64_t  last;   /* the last posting's seq; 0 when empty */
} a2m_mpacked;

/* Reads postings in order: cursor over pk, at its first posting. */
typedef struct a2m_mpacked_cursor {
	const uint8_t *at, *end;
	int64_t        seq;
} a2m_mpacked_cursor;

static inline void a2m_mpacked_start(const a2m_mpacked *pk, a2m_mpacked_cursor *c)
{
	c->at = pk->b;
	c->end = pk->b + pk->used;
	c->seq = 0;
}

static inline uint64_t a2m_mpacked_varint(const uint8_t **p)
{
	const uint8_t *s = *p;
	uint64_t v = *s & 0x7f;
	for (unsigned shift = 7; *s++ & 0x80; shift += 7)
		v |= (uint64_t)(*s & 0x7f) << shift;
	*p = s;
	return v;
}

/* The next posting into *x; 0 at the end. */
static inline int a2m_mpacked_next(a2m_mpacked_cursor *c, a2m_posting *x)
{
	if (c->at >= c->end)
		return 0;
	uint64_t h = a2m_mpacked_varint(&c->at);
	c->seq += (int64_t)(h >> 1);
	x->seq = c->seq;
	if (h & 1) {
		uint8_t v = *c->at++;
		x->tf = (uint32_t)(v >> 6) + 1;
		x->dl = v & 63u;
	} else {
		x->tf = (uint32_t)a2m_mpacked_varint(&c->at);
		x->dl = (uint32_t)a2m_mpacked_varint(&c->at);
	}
	return 1;
}

/*
** Codes v[0..n) (ascending seq, n > 0) into *pk, which must be empty,
** with room for one more posting. Returns 0, or -1 when memory runs out
** (*pk still empty).
*/
int a2m_mpacked_encode(a2m_mpacked *pk, const a2m_posting *v, size_t n);

/* Makes room for one more insert or rewrite. Returns 0, or -1 when memory runs out. */
int a2m_mpacked_reserve(a2m_mpacked *pk);

/* Adds x (its seq not in pk) at its place; room reserved. Cannot fail. */
void a2m_mpacked_insert(a2m_mpacked *pk, a2m_posting x);

/* Removes the posting of seq; returns 1, or 0 when pk has none. Cannot fail. */
int a2m_mpacked_remove(a2m_mpacked *pk, int64_t seq);

/* Gives the posting of x.seq x's tf and dl; returns 1, or 0 when pk has
** none. Room reserved. Cannot fail. */
int a2m_mpacked_rewrite(a2m_mpacked *pk, a2m_posting x);

/* Frees pk's bytes and leaves it empty. */
void a2m_mpacked_free(a2m_mpacked *pk);

#endif
