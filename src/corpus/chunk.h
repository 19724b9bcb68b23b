/*
** chunk.h — a document cut into chunks of bounded size, each a run of
** whole lines where it can be, with the headings it sits under.
**
** A2M has no chunker (spec §3.4): the ingester decides the boundaries, and
** `a2m corpus` is an ingester. The rules (docs/CORPUS.md says them for
** users):
**   - Markdown is cut into sections at its headings (ATX "# ..." and
**     setext underlines; not inside fenced code, not in front matter),
**     and a chunk never spans two sections, so it has one heading path.
**     A heading with nothing under it before a deeper one travels with
**     that one ("# A" straight followed by "## B" is one chunk under A > B).
**   - Text and source are cut at blank lines. In source a block that
**     starts indented, or with a closing bracket, belongs to the block
**     before it, so a function's inner blank lines do not cut it: blocks
**     begin at top-level definitions.
**   - Blocks are packed in order into chunks of at most max bytes. A block
**     longer than max is cut at the best boundary in the second half of
**     each window: a blank line, the end of a line that ends a sentence,
**     any line end, a sentence end (not in source), a space, and at worst
**     anywhere between two UTF-8 characters.
**   - A chunk's text starts at a non-blank line (or, inside a cut line,
**     a non-blank character) and carries no trailing white space.
** Pure: no I/O, the text is only read.
*/
#ifndef A2M_CORPUS_CHUNK_H
#define A2M_CORPUS_CHUNK_H

#include <stddef.h>

typedef enum a2m_chunk_kind {
	A2M_CHUNK_TEXT,
	A2M_CHUNK_MARKDOWN,
	A2M_CHUNK_SOURCE
} a2m_chunk_kind;

/* The smallest max accepted: below it a chunk holds too little to find. */
#define A2M_CHUNK_MIN 64

/* One heading of a Markdown file. */
typedef struct a2m_heading {
	size_t start, len;  /* its text in the file: no '#'s, no surrounding spaces */
	int    level;       /* 1 to 6 */
	long   parent;      /* the heading it is under, or -1 */
} a2m_heading;

/* One chunk: bytes [start, end) of the text, end - start <= max. */
typedef struct a2m_chunk {
	size_t   start, end;
	unsigned first_line, last_line;  /* 1-based, inclusive */
	long     heading;                /* its innermost heading, or -1 */
} a2m_chunk;

/* The chunks of one text and its headings; zero-initialise, reuse, free. */
typedef struct a2m_chunks {
	a2m_chunk   *v;
	size_t       n, cap;
	a2m_heading *h;
	size_t       nh, cap_h;
	size_t      *lines;      /* scratch: the start of each line */
	size_t       n_lines, cap_lines;
	void        *blocks;     /* scratch */
	size_t       cap_blocks;
} a2m_chunks;

/*
** Cuts the len bytes of text (UTF-8) as kind says into chunks of at most
** max bytes (max >= A2M_CHUNK_MIN), replacing what out held. An empty or
** all-blank text has no chunks. Returns 0, or -1 when memory ran out (out
** is then empty but still to be freed).
*/
int a2m_chunk_text(const char *text, size_t len, a2m_chunk_kind kind, size_t max,
		   a2m_chunks *out);

/* Frees what out holds and leaves it empty. */
void a2m_chunks_free(a2m_chunks *out);

#endif
