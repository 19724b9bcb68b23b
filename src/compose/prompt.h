/*
** prompt.h — the `prompt` capability (spec §4.16): render recalled records as
** text for a model, alongside the records and never instead of them.
**
** Only the deterministic `template` method is offered (and `none`); there is
** no model, so `model` is never offered and asking for it is INVALID_PARAMS.
** Rendering never changes which records are selected or their order.
*/
#ifndef A2M_COMPOSE_PROMPT_H
#define A2M_COMPOSE_PROMPT_H

#include <stddef.h>

#include <jansson.h>

#include "store/record.h"
#include "util/error.h"

typedef enum a2m_prompt_style {
	A2M_PROMPT_AUTO,        /* decide from the records */
	A2M_PROMPT_FACTS,       /* one bullet per record */
	A2M_PROMPT_TRANSCRIPT   /* "role: content", one line per record */
} a2m_prompt_style;

typedef struct a2m_prompt_opts {
	a2m_prompt_style style;
	long long        budget;  /* maximum characters (code points); 0 = none */
	int              cite;    /* mark each entry with its uri or key */
} a2m_prompt_opts;

/*
** Reads the `prompt` param (absent, false, true, or an object with method,
** style, budget, cite, model). *wanted = 1 when text must be rendered (not
** for absent, false, or method "none"). A method or model not offered, an
** unknown style, a negative or non-integer budget → INVALID_PARAMS.
*/
int a2m_prompt_parse(const json_t *param, a2m_prompt_opts *opts, int *wanted,
		     a2m_error *err);

/*
** Renders recs (in the order given) into *text (malloc'd, caller frees)
** and *ids (a new JSON array of the ids the text contains). Whole records
** are dropped to fit the budget, never cut: for a recall (chronological 0)
** the lowest-ranked go first; for a timeline (chronological 1) the oldest go
** first, so the recent end of a transcript survives.
*/
int a2m_prompt_render(const a2m_prompt_opts *opts, const a2m_record *const *recs, size_t n,
		      int chronological, char **text, json_t **ids, a2m_error *err);

/* The describe object: {"styles": [...], "methods": [...], "model": null}. */
json_t *a2m_prompt_describe(void);

#endif
