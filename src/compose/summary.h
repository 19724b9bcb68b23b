/*
** summary.h — the built-in summarizer behind memory/summarize (spec
** §4.15): deterministic and extractive, with no model. It picks the
** sentences of the sources that carry the most of what the sources share,
** in their original order, so the summary never says anything the sources
** did not.
*/
#ifndef A2M_COMPOSE_SUMMARY_H
#define A2M_COMPOSE_SUMMARY_H

#include <stddef.h>

#include "store/record.h"

/*
** Summarises the contents of n records (in the order given) into at most
** max_sentences sentences and about max_chars characters. Returns the text
** (malloc'd; caller frees), or NULL when there is nothing durable to say
** (no sources, no sentence with a content word) — the caller then declines
** — with errno 0, or NULL with errno ENOMEM when memory ran out.
** Same input, same output.
*/
char *a2m_summarize_extract(const a2m_record *const *recs, size_t n, size_t max_sentences,
			    size_t max_chars);

#endif
