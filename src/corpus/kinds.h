/*
** kinds.h — what a file of a corpus is, from its name.
*/
#ifndef A2M_CORPUS_KINDS_H
#define A2M_CORPUS_KINDS_H

#include "corpus/chunk.h"

/*
** How the file called name (its last component) is cut, and the media
** type its records carry (a static string): Markdown by .md and its
** kin; source by the usual extensions and names (Makefile, Dockerfile);
** everything else is text, "text/plain" unless the extension says more
** (.csv, .rst). Cannot fail.
*/
void a2m_corpus_kind(const char *name, a2m_chunk_kind *chunk, const char **media_type);

#endif
