/*
** langdetect.h — the stopword table and the language detector, for
** analyze.c only (the public face is a2m_detect_language and
** a2m_stopword_langs in analyze.h).
*/
#ifndef A2M_LANGDETECT_H
#define A2M_LANGDETECT_H

#include <stddef.h>

#include "rank/analyze.h"

typedef struct a2m_langdetect a2m_langdetect;

/*
** Builds the stopword table, folding every list exactly as text is folded
** (a2m_tokenize). Returns NULL when memory runs out.
*/
a2m_langdetect *a2m_langdetect_new(void);
void a2m_langdetect_free(a2m_langdetect *ld);

/* The languages (A2M_LANG_BIT) in which the surface word is a stopword. */
unsigned a2m_langdetect_stopword(const a2m_langdetect *ld, const char *word, size_t len);

/*
** Guesses the language of a tokenized text (see langdetect.c); each token's
** stop must be set (a2m_detect_language does it).
*/
void a2m_langdetect_guess(const a2m_tokens *toks, a2m_lang_guess *g);

#endif
