/*
** chunk.c — documents cut into chunks (see chunk.h for the rules).
**
** Three passes over one text: the start of every line; the blocks (a
** paragraph, a heading line, a fenced code block, front matter), each with
** the heading it sits under; then the blocks packed into chunks, a block
** too long for one chunk cut at its best boundaries. Only offsets are
** kept, never copies of the text.
*/
#include <stdlib.h>
#include <string.h>

#include "corpus/chunk.h"
#include "util/grow.h"

/* One block: whole lines, from its first line's start to its last line's
** end (no newline). */
typedef struct block {
	size_t start, end;
	long   section;   /* the heading in force (this one, for a heading) */
	int    heading;   /* a heading line (or two, for setext) */
	int    code;      /* fenced code or front matter: cut as source */
} block;

/* The state of one a2m_chunk_text call. */
typedef struct cutter {
	const char    *t;
	size_t         len;
	a2m_chunk_kind kind;
	size_t         max;
	a2m_chunks    *out;
	block         *b;
	size_t         nb;
	long           at_level[7];  /* the open heading of each level, or -1 */
} cutter;

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* ---- lines ---------------------------------------------------------- */

static size_t line_start(const cutter *c, size_t i)
{
	return c->out->lines[i];
}

/* The end of line i: before its newline and a carriage return. */
static size_t line_end(const cutter *c, size_t i)
{
	size_t e = i + 1 < c->out->n_lines ? c->out->lines[i + 1] - 1 : c->len;
	if (i + 1 >= c->out->n_lines && e > line_start(c, i) && c->t[e - 1] == '\n')
		e--;
	if (e > line_start(c, i) && c->t[e - 1] == '\r')
		e--;
	return e;
}

static int blank(const cutter *c, size_t i)
{
	for (size_t p = line_start(c, i), e = line_end(c, i); p < e; p++)
		if (!is_space(c->t[p]))
			return 0;
	return 1;
}

static int find_lines(cutter *c)
{
	a2m_chunks *o = c->out;
	o->n_lines = 0;
	for (size_t p = 0; p < c->len;) {
		if (a2m_grow((void **)&o->lines, &o->cap_lines, o->n_lines + 1, sizeof *o->lines))
			return -1;
		o->lines[o->n_lines++] = p;
		const char *nl = memchr(c->t + p, '\n', c->len - p);
		p = nl ? (size_t)(nl - c->t) + 1 : c->len;
	}
	return 0;
}

/* The 1-based line holding byte off. */
static unsigned line_of(const cutter *c, size_t off)
{
	size_t lo = 0, hi = c->out->n_lines;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->out->lines[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return (unsigned)(lo + 1);
}

/* ---- Markdown's lines ------------------------------------------------- */

/* The first byte of line i after at most three spaces of indentation, or
** the line's end when it is indented further (code, not structure). */
static size_t md_content(const cutter *c, size_t i)
{
	size_t p = line_start(c, i), e = line_end(c, i);
	for (int n = 0; n < 3 && p < e && c->t[p] == ' '; n++)
		p++;
	return p < e && (c->t[p] == ' ' || c->t[p] == '\t') ? e : p;
}

/* An ATX heading: its level (1-6) and text, or 0. */
static int md_atx(const cutter *c, size_t i, size_t *ts, size_t *te)
{
	size_t p = md_content(c, i), e = line_end(c, i);
	int level = 0;
	while (p < e && c->t[p] == '#' && level < 7) {
		p++;
		level++;
	}
	if (level < 1 || level > 6 || (p < e && c->t[p] != ' ' && c->t[p] != '\t'))
		return 0;
	while (p < e && is_space(c->t[p]))
		p++;
	while (e > p && is_space(c->t[e - 1]))
		e--;
	/* A closing run of '#'s, if a space separates it (or it is all). */
	size_t h = e;
	while (h > p && c->t[h - 1] == '#')
		h--;
	if (h < e && (h == p || c->t[h - 1] == ' ' || c->t[h - 1] == '\t')) {
		e = h;
		while (e > p && is_space(c->t[e - 1]))
			e--;
	}
	*ts = p;
	*te = e;
	return level;
}

/* A code fence: its character and length, or 0. */
static size_t md_fence(const cutter *c, size_t i, char *ch)
{
	size_t p = md_content(c, i), e = line_end(c, i), n = 0;
	if (p >= e || (c->t[p] != '`' && c->t[p] != '~'))
		return 0;
	*ch = c->t[p];
	while (p + n < e && c->t[p + n] == *ch)
		n++;
	return n >= 3 ? n : 0;
}

/* Whether line i closes a fence of n characters ch. */
static int md_fence_closes(const cutter *c, size_t i, char ch, size_t n)
{
	char got;
	size_t m = md_fence(c, i, &got);
	if (!m || got != ch || m < n)
		return 0;
	for (size_t p = md_content(c, i) + m, e = line_end(c, i); p < e; p++)
		if (!is_space(c->t[p]))
			return 0;
	return 1;
}

/* A setext underline: 1 for "===", 2 for "---", else 0. */
static int md_setext(const cutter *c, size_t i)
{
	size_t p = md_content(c, i), e = line_end(c, i);
	while (e > p && is_space(c->t[e - 1]))
		e--;
	if (p >= e || (c->t[p] != '=' && c->t[p] != '-'))
		return 0;
	for (size_t q = p; q < e; q++)
		if (c->t[q] != c->t[p])
			return 0;
	return c->t[p] == '=' ? 1 : 2;
}

/* Whether line i is exactly "---" (or "..." when closing), front matter's fence. */
static int md_front_fence(const cutter *c, size_t i, int closing)
{
	size_t p = line_start(c, i), e = line_end(c, i);
	while (e > p && is_space(c->t[e - 1]))
		e--;
	return e - p == 3 && (memcmp(c->t + p, "---", 3) == 0 ||
			      (closing && memcmp(c->t + p, "...", 3) == 0));
}

/* ---- blocks ------------------------------------------------------------ */

static int add_block(cutter *c, size_t first, size_t last, long section, int heading, int code)
{
	a2m_chunks *o = c->out;
	if (a2m_grow(&o->blocks, &o->cap_blocks, c->nb + 1, sizeof(block)))
		return -1;
	c->b = o->blocks;
	c->b[c->nb++] = (block){line_start(c, first), line_end(c, last), section, heading, code};
	return 0;
}

/* Opens a heading of level at [ts, te); its index, or -1 when memory ran out. */
static long add_heading(cutter *c, int level, size_t ts, size_t te)
{
	a2m_chunks *o = c->out;
	if (a2m_grow((void **)&o->h, &o->cap_h, o->nh + 1, sizeof *o->h))
		return -1;
	long parent = -1;
	for (int l = level - 1; l >= 1 && parent < 0; l--)
		parent = c->at_level[l];
	long idx = (long)o->nh;
	o->h[o->nh++] = (a2m_heading){ts, te - ts, level, parent};
	c->at_level[level] = idx;
	for (int l = level + 1; l <= 6; l++)
		c->at_level[l] = -1;
	return idx;
}

/* Whether line i stops a Markdown paragraph that is going on. */
static int md_interrupts(const cutter *c, size_t i)
{
	size_t ts, te;
	char ch;
	return blank(c, i) || md_fence(c, i, &ch) || md_atx(c, i, &ts, &te);
}

/* The blocks of a Markdown text. */
static int md_blocks(cutter *c)
{
	size_t n = c->out->n_lines, i = 0;
	long section = -1;
	if (n > 1 && md_front_fence(c, 0, 0)) {
		size_t k = 1;
		while (k < n && !md_front_fence(c, k, 1))
			k++;
		if (k < n) {
			if (add_block(c, 0, k, section, 0, 1))
				return -1;
			i = k + 1;
		}
	}
	while (i < n) {
		size_t ts, te;
		char ch;
		size_t fence;
		int level;
		if (blank(c, i)) {
			i++;
		} else if ((fence = md_fence(c, i, &ch))) {
			size_t k = i + 1;
			while (k < n && !md_fence_closes(c, k, ch, fence))
				k++;
			if (k == n)
				k = n - 1;  /* unclosed: code to the end */
			if (add_block(c, i, k, section, 0, 1))
				return -1;
			i = k + 1;
		} else if ((level = md_atx(c, i, &ts, &te)) ||
			   (i + 1 < n && (level = md_setext(c, i + 1)))) {
			int setext = !md_atx(c, i, &ts, &te);
			if (setext) {
				ts = md_content(c, i);
				te = line_end(c, i);
				while (te > ts && is_space(c->t[te - 1]))
					te--;
			}
			if ((section = add_heading(c, level, ts, te)) < 0 ||
			    add_block(c, i, i + (size_t)setext, section, 1, 0))
				return -1;
			i += 1 + (size_t)setext;
		} else {
			size_t k = i;
			while (k + 1 < n && !md_interrupts(c, k + 1))
				k++;
			if (add_block(c, i, k, section, 0, 0))
				return -1;
			i = k + 1;
		}
	}
	return 0;
}

/* Whether a source block starting at line i continues the one before. */
static int continues(const cutter *c, size_t i)
{
	char first = c->t[line_start(c, i)];
	return first == ' ' || first == '\t' || first == '}' || first == ')' || first == ']';
}

/* The blocks of text or source: paragraphs between blank lines. */
static int plain_blocks(cutter *c)
{
	size_t n = c->out->n_lines, i = 0;
	while (i < n) {
		if (blank(c, i)) {
			i++;
			continue;
		}
		size_t k = i;
		while (k + 1 < n && !blank(c, k + 1))
			k++;
		if (c->kind == A2M_CHUNK_SOURCE && c->nb > 0 && continues(c, i))
			c->b[c->nb - 1].end = line_end(c, k);
		else if (add_block(c, i, k, -1, 0, 0))
			return -1;
		i = k + 1;
	}
	return 0;
}

/* ---- chunks ------------------------------------------------------------ */

static int emit(cutter *c, size_t start, size_t end, long section)
{
	while (end > start && (is_space(c->t[end - 1]) || c->t[end - 1] == '\n'))
		end--;
	if (end == start)
		return 0;
	a2m_chunks *o = c->out;
	if (a2m_grow((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v))
		return -1;
	o->v[o->n++] = (a2m_chunk){start, end, line_of(c, start), line_of(c, end - 1), section};
	return 0;
}

/* Whether the bytes just before p end a sentence. */
static int sentence_end(const char *t, size_t s, size_t p)
{
	if (p > s && strchr("\"')]", t[p - 1]))
		p--;
	if (p > s && (t[p - 1] == '.' || t[p - 1] == '!' || t[p - 1] == '?'))
		return 1;
	/* 。 ！ ？ */
	return p >= s + 3 && (memcmp(t + p - 3, "\xe3\x80\x82", 3) == 0 ||
			      memcmp(t + p - 3, "\xef\xbc\x81", 3) == 0 ||
			      memcmp(t + p - 3, "\xef\xbc\x9f", 3) == 0);
}

/* The boundaries a long block is cut at, best first. */
enum { CUT_BLANK, CUT_LINE_SENTENCE, CUT_LINE, CUT_SENTENCE, CUT_SPACE, CUT_RANKS };

/*
** Where to end the piece that starts at s and may run to w: the best
** boundary in the window's second half, else w moved back to the start of
** a UTF-8 character.
*/
static size_t best_cut(const cutter *c, size_t s, size_t w, int code)
{
	const char *t = c->t;
	while (w > s + 1 && ((unsigned char)t[w] & 0xC0) == 0x80)
		w--;
	size_t lo = s + (w - s) / 2, best[CUT_RANKS] = {0};
	for (size_t p = w; p > lo; p--) {
		char prev = t[p - 1];
		if (prev == '\n') {
			size_t q = p - 1;
			while (q > s && is_space(t[q - 1]))
				q--;
			int rank = q > s && t[q - 1] == '\n' ? CUT_BLANK
				 : !code && sentence_end(t, s, q) ? CUT_LINE_SENTENCE : CUT_LINE;
			if (!best[rank])
				best[rank] = p;
		} else if (prev == ' ' || prev == '\t') {
			int rank = !code && sentence_end(t, s, p - 1) ? CUT_SENTENCE : CUT_SPACE;
			if (!best[rank])
				best[rank] = p;
		} else if (!code && p >= s + 3 && sentence_end(t, s, p) && (unsigned char)t[p - 1] >= 0x80) {
			if (!best[CUT_SENTENCE])
				best[CUT_SENTENCE] = p;  /* CJK: no space follows */
		}
	}
	for (int r = 0; r < CUT_RANKS; r++)
		if (best[r])
			return best[r];
	return w;
}

/* Past blank lines and, inside a line, spaces: where the next piece starts. */
static size_t skip_blank(const char *t, size_t s, size_t e)
{
	for (;;) {
		size_t q = s;
		while (q < e && is_space(t[q]))
			q++;
		if (q < e && t[q] == '\n') {
			s = q + 1;
			continue;
		}
		if (q == e)
			return e;
		return s == 0 || t[s - 1] == '\n' ? s : q;
	}
}

/* Emits [s, e) as pieces of at most max bytes. */
static int split(cutter *c, size_t s, size_t e, long section, int code)
{
	s = skip_blank(c->t, s, e);
	while (e - s > c->max) {
		size_t p = best_cut(c, s, s + c->max, code);
		if (emit(c, s, p, section))
			return -1;
		s = skip_blank(c->t, p, e);
	}
	return s < e ? emit(c, s, e, section) : 0;
}

/* Packs the blocks, in order, into chunks. */
static int pack(cutter *c)
{
	const a2m_heading *h = c->out->h;
	int open = 0, body = 0, code = 0;
	size_t start = 0, end = 0;
	long section = -1;
	for (size_t i = 0; i < c->nb; i++) {
		const block *b = &c->b[i];
		/* A heading with nothing under it yet goes on with a deeper one. */
		int fits = open && (b->section == section ||
				    (!body && b->heading && h[b->section].parent == section));
		if (b->end - b->start > c->max) {
			if (open && !fits && emit(c, start, end, section))
				return -1;
			if (split(c, fits ? start : b->start, b->end, b->section, b->code ||
				  (fits && code) || c->kind == A2M_CHUNK_SOURCE))
				return -1;
			open = 0;
			continue;
		}
		if (open && (!fits || b->end - start > c->max)) {
			if (emit(c, start, end, section))
				return -1;
			open = 0;
		}
		if (!open) {
			open = 1;
			body = 0;
			code = 0;
			start = b->start;
		}
		end = b->end;
		section = b->section;
		body |= !b->heading;
		code |= b->code;
	}
	return open ? emit(c, start, end, section) : 0;
}

int a2m_chunk_text(const char *text, size_t len, a2m_chunk_kind kind, size_t max,
		   a2m_chunks *out)
{
	cutter c = {text, len, kind, max < A2M_CHUNK_MIN ? A2M_CHUNK_MIN : max, out,
		    out->blocks, 0, {-1, -1, -1, -1, -1, -1, -1}};
	out->n = 0;
	out->nh = 0;
	int rc = find_lines(&c);
	if (!rc)
		rc = kind == A2M_CHUNK_MARKDOWN ? md_blocks(&c) : plain_blocks(&c);
	if (!rc)
		rc = pack(&c);
	if (rc) {
		out->n = 0;
		out->nh = 0;
	}
	return rc;
}

void a2m_chunks_free(a2m_chunks *out)
{
	free(out->v);
	free(out->h);
	free(out->lines);
	free(out->blocks);
	memset(out, 0, sizeof *out);
}
