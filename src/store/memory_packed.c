/*
** memory_packed.c — a postings list coded in bytes (see memory_packed.h).
**
** Every change is a splice: the bytes of the posting (or two) it touches
** are coded again and the tail moved by the difference, as the plain
** lists move their tail with memmove. A change in the middle first walks
** the list to the posting, which is why only short lists are kept so.
*/
#include <stdlib.h>
#include <string.h>

#include "store/memory_packed.h"

/* Codes v into out; returns the bytes written (at most 10). */
static size_t put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

/* Codes a posting delta after its predecessor into out; returns its bytes. */
static size_t put_posting(uint8_t *out, uint64_t delta, uint32_t tf, uint32_t dl)
{
	if (tf >= 1 && tf <= 4 && dl < 64) {
		size_t n = put_varint(out, delta << 1 | 1);
		out[n++] = (uint8_t)((tf - 1) << 6 | dl);
		return n;
	}
	size_t n = put_varint(out, delta << 1);
	n += put_varint(out + n, tf);
	return n + put_varint(out + n, dl);
}

/* Grows pk's room to at least need bytes. Returns 0 or -1. */
static int grow(a2m_mpacked *pk, size_t need)
{
	if (need <= pk->cap)
		return 0;
	/* 1.5 times, as the plain lists grow. */
	size_t cap = pk->cap + pk->cap / 2;
	if (cap < need)
		cap = need;
	if (cap > UINT32_MAX)
		return -1;
	uint8_t *b = realloc(pk->b, cap);
	if (!b)
		return -1;
	pk->b = b;
	pk->cap = (uint32_t)cap;
	return 0;
}

int a2m_mpacked_reserve(a2m_mpacked *pk)
{
	return grow(pk, (size_t)pk->used + A2M_MPACKED_MAX);
}

int a2m_mpacked_encode(a2m_mpacked *pk, const a2m_posting *v, size_t n)
{
	size_t need = A2M_MPACKED_MAX;
	int64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t tmp[A2M_MPACKED_MAX];
		need += put_posting(tmp, (uint64_t)(v[i].seq - prev), v[i].tf, v[i].dl);
		prev = v[i].seq;
	}
	if (grow(pk, need) != 0)
		return -1;
	prev = 0;
	for (size_t i = 0; i < n; i++) {
		pk->used += (uint32_t)put_posting(pk->b + pk->used, (uint64_t)(v[i].seq - prev),
						  v[i].tf, v[i].dl);
		prev = v[i].seq;
	}
	pk->last = prev;
	return 0;
}

/*
** Where the posting of seq is, or would go: *off its first byte (used:
** past the end), *prev the seq before it (0: none), *x the posting found
** there and *xlen its bytes (none: xlen 0). The walk every change makes.
*/
static void locate(const a2m_mpacked *pk, int64_t seq, uint32_t *off, int64_t *prev,
		   a2m_posting *x, uint32_t *xlen)
{
	a2m_mpacked_cursor c;
	a2m_mpacked_start(pk, &c);
	*prev = 0;
	for (;;) {
		const uint8_t *at = c.at;
		if (!a2m_mpacked_next(&c, x)) {
			*off = pk->used;
			*xlen = 0;
			return;
		}
		if (x->seq >= seq) {
			*off = (uint32_t)(at - pk->b);
			*xlen = (uint32_t)(c.at - at);
			return;
		}
		*prev = x->seq;
	}
}

/* Replaces the len bytes at off by the n bytes at src (room there). */
static void splice(a2m_mpacked *pk, uint32_t off, uint32_t len, const uint8_t *src, size_t n)
{
	uint8_t *at = pk->b + off;
	if (n != len)
		memmove(at + n, at + len, pk->used - off - len);
	memcpy(at, src, n);
	pk->used = (uint32_t)(pk->used - len + n);
}

void a2m_mpacked_insert(a2m_mpacked *pk, a2m_posting x)
{
	if (!pk->used || x.seq > pk->last) {
		pk->used += (uint32_t)put_posting(pk->b + pk->used, (uint64_t)(x.seq - pk->last),
						  x.tf, x.dl);
		pk->last = x.seq;
		return;
	}
	/* Before next: x after prev, then next after x instead of after prev. */
	uint32_t off, len;
	int64_t prev;
	a2m_posting next;
	locate(pk, x.seq, &off, &prev, &next, &len);
	uint8_t tmp[2 * A2M_MPACKED_MAX];
	size_t n = put_posting(tmp, (uint64_t)(x.seq - prev), x.tf, x.dl);
	n += put_posting(tmp + n, (uint64_t)(next.seq - x.seq), next.tf, next.dl);
	splice(pk, off, len, tmp, n);
}

int a2m_mpacked_remove(a2m_mpacked *pk, int64_t seq)
{
	uint32_t off, len;
	int64_t prev;
	a2m_posting x, next = {0, 0, 0};
	locate(pk, seq, &off, &prev, &x, &len);
	if (!len || x.seq != seq)
		return 0;
	if (off + len == pk->used) {
		pk->used = off;
		pk->last = prev;
		return 1;
	}
	/* Its successor now follows prev. */
	a2m_mpacked_cursor c = {pk->b + off + len, pk->b + pk->used, seq};
	const uint8_t *at = c.at;
	a2m_mpacked_next(&c, &next);
	uint8_t tmp[A2M_MPACKED_MAX];
	size_t n = put_posting(tmp, (uint64_t)(next.seq - prev), next.tf, next.dl);
	splice(pk, off, len + (uint32_t)(c.at - at), tmp, n);
	return 1;
}

int a2m_mpacked_rewrite(a2m_mpacked *pk, a2m_posting x)
{
	uint32_t off, len;
	int64_t prev;
	a2m_posting old;
	locate(pk, x.seq, &off, &prev, &old, &len);
	if (!len || old.seq != x.seq)
		return 0;
	uint8_t tmp[A2M_MPACKED_MAX];
	size_t n = put_posting(tmp, (uint64_t)(x.seq - prev), x.tf, x.dl);
	splice(pk, off, len, tmp, n);
	return 1;
}

void a2m_mpacked_free(a2m_mpacked *pk)
{
	free(pk->b);
	memset(pk, 0, sizeof *pk);
}
