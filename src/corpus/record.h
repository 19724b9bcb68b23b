/*
** record.h — a chunk's record as the corpus indexer sends it: the JSON
** text whose hash is the record's id (index.c), and the JSON value that
** text reads as, which the indexer sends instead of the text when it can
** (a2m_corpus_batch_value, batch.h).
**
**   {"id":...,"content":CHUNK,"group":PATH,"tier":"semantic",
**    "uri":"file://ROOT/PATH#Lfirst-Llast","media_type":...,
**    "metadata":{"path":PATH,"headings":[outermost, ...],
**                "first_line":N,"last_line":N,"chunk":K}}
*/
#ifndef A2M_CORPUS_RECORD_H
#define A2M_CORPUS_RECORD_H

#include <stddef.h>

#include <jansson.h>

#include "corpus/chunk.h"
#include "util/buf.h"

/* Chunk k of a file's chunks, and what its record says of the file. */
typedef struct a2m_corpus_chunk_ref {
	const a2m_chunks *chunks;
	size_t            k;
	const char       *rel;         /* the path under the root (checked UTF-8) */
	const char       *text;        /* the file's text the chunks index (checked UTF-8) */
	const char       *uri;         /* the file's uri, without its lines */
	size_t            uri_len;
	const char       *media_type;
} a2m_corpus_chunk_ref;

/*
** The record's text without its id ("content" on, no braces) into b,
** emptied first: what the id hashes. Indexes store the ids: change it
** only with CHUNKER_VERSION (index.c).
*/
void a2m_corpus_record_body(a2m_buf *b, const a2m_corpus_chunk_ref *r);

/*
** The record with its id (A2M_CORPUS_ID_LEN characters) as the JSON value
** a2m_json_read makes of "{"id":ID," + a2m_corpus_record_body + "}": the
** same fields in the same order, the strings not checked again. NULL when
** memory ran out.
*/
json_t *a2m_corpus_record_value(const a2m_corpus_chunk_ref *r, const char *id);

#endif
