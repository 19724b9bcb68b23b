/*
** analyze_internal.h — what analyze.c and tokenize.c share, for them only:
** the longest word kept, the growable byte buffer both build strings in,
** and the stripping of marks that words and stems both go through.
*/
#ifndef A2M_ANALYZE_INTERNAL_H
#define A2M_ANALYZE_INTERNAL_H

#include <stddef.h>

/*
** A word longer than this is cut at a character boundary: a term is for
** finding things, and nobody types the 500-letter run of a base64 blob.
** Long enough for a SHA-256 in hex.
*/
#define MAX_WORD_BYTES  128


/* A growable byte buffer; oom is set, and sticks, once memory runs out. */
typedef struct sbuf {
	char  *p;
	size_t n, cap;
	int    oom;
} sbuf;

/*
** Appends n bytes of s to b. Failing leaves b->oom set and b as it was; the
** caller checks oom once, after the last append. The caller frees b->p.
*/
void a2m_analyze_sb_put(sbuf *b, const void *s, size_t n);

/*
** Appends the marks-stripped spelling of s (len bytes of folded UTF-8) to
** b: analyze.h, step 3. Failing sets b->oom, as a2m_analyze_sb_put() does.
*/
void a2m_analyze_strip_into(sbuf *b, const char *s, size_t len);

/*
** Tests set this to turn every shortcut off: all text then goes through
** the general tokenizer (NFKC and case folding by utf8proc), which the
** ASCII path of a2m_tokenize must match byte for byte. Never set outside
** tests.
*/
extern int a2m_analyze_slow_path;

#endif
