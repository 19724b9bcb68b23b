/*
** analyze_internal.h — what analyze.c and tokenize.c share, for them only:
** the longest word kept, the growable byte buffer both build strings in,
** and the stripping of marks that words and stems both go through.
*/
#ifndef A2M_ANALYZE_INTERNAL_H
#define A2M_ANALYZE_INTERNAL_H

#include "util/buf.h"

#include <stddef.h>

/*
** A word longer than this is cut at a character boundary: a term is for
** finding things, and nobody types the 500-letter run of a base64 blob.
** Long enough for a SHA-256 in hex.
*/
#define MAX_WORD_BYTES  128


/*
** Appends the marks-stripped spelling of s (len bytes of folded UTF-8) to
** b: analyze.h, step 3. Failing sets b->oom, as a2m_buf_put() does.
*/
void a2m_analyze_strip_into(a2m_buf *b, const char *s, size_t len);

/*
** Tests set this to turn every shortcut off: all text then goes through
** the general tokenizer (NFKC and case folding by utf8proc), which the
** ASCII path of a2m_tokenize must match byte for byte. Only the tests'
** build of the library has it (A2M_TEST_HOOKS, Makefile); in the release
** one it is the constant 0.
*/
#ifdef A2M_TEST_HOOKS
extern int a2m_analyze_slow_path;
#else
#define a2m_analyze_slow_path 0
#endif

/*
** What a batch analysed on a thread of its own holds for the whole batch
** (analyze_ahead.c): one of the analyser's stemming workers (its Snowball
** stemmers and its stem cache), taken once instead of once per text, so
** two threads analysing at once neither contend for the pool's lock on
** every text nor swap caches. NULL when memory runs out; give back what
** was taken, NULL included.
*/
struct a2m_analyzer;
void *a2m_analyzer_worker_take(struct a2m_analyzer *an);
void  a2m_analyzer_worker_give(struct a2m_analyzer *an, void *wk);

/*
** a2m_analyze_doc() with a worker the caller holds (wk NULL: fails, as
** when memory ran out).
*/
struct a2m_doc_terms;
int a2m_analyze_doc_on(struct a2m_analyzer *an, void *wk, const char *text,
		       struct a2m_doc_terms *out);

/*
** Moves dt's terms and their bytes into one block (a2m_doc_terms_free()
** frees it as before). A batch analysed on another thread is freed by the
** thread that writes it: one block per text instead of the dozen the
** analysis made, each of which would take the other thread's malloc arena
** lock, which is where the two threads met. Returns 0, or -1 when memory
** ran out (dt is then as it was).
*/
int a2m_doc_terms_pack(struct a2m_doc_terms *dt);

#endif
