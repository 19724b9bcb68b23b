/*
** client_render.h — how A2M results read: to a person at a terminal (the
** client commands' default output) and to a model (the text content of the
** MCP bridge's tool results). Both render the same result objects the
** protocol returns; `--json` and MCP's structuredContent carry them raw.
**
** Everything is written into an a2m_buf (util/buf.h), a growable string
** that remembers running out of memory instead of failing every call:
** a2m_buf_take() says so once, at the end.
*/
#ifndef A2M_CLI_CLIENT_RENDER_H
#define A2M_CLI_CLIENT_RENDER_H

#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"

/* Appends v as compact JSON with the shortest exact reals (util/json_write). */
void cli_buf_json(a2m_buf *b, const json_t *v);

/* ---- for a person: the client commands ---- */

/* What a table of records shows. */
enum cli_records_style {
	CLI_RECORDS_RECALL   = 0, /* SCORE  CONTENT */
	CLI_RECORDS_TIMELINE = 1  /* TIME  ROLE  CONTENT */
};

/*
** One record per line in aligned columns, content last with its line breaks
** shown as spaces. long_form adds ID, TIER, KEY and SESSION columns (those
** the records carry). Nothing at all for an empty array.
*/
void cli_render_table(a2m_buf *b, const json_t *records, enum cli_records_style style,
		      int long_form);

/* A memory/describe result as a summary: name, protocol, capabilities,
** tiers, limits and the capability objects. */
void cli_render_describe(a2m_buf *b, const json_t *describe);

/* One line per event: time, kind, then its other fields as name=value. */
void cli_render_events(a2m_buf *b, const json_t *events);

/* A memory/session/list result as a table. */
void cli_render_sessions(a2m_buf *b, const json_t *sessions);

/* A fetched record for a person: its content, and with long_form a line of
** its other fields first. */
void cli_render_record(a2m_buf *b, const json_t *record, int long_form);

/* The integer fields of a result ("moved 0, promoted 2, ...") then its
** "counts" object, for consolidate, session close and the like. */
void cli_render_counts(a2m_buf *b, const json_t *result);

/* ---- for a model: the MCP bridge ---- */

/*
** The readable text of an A2M result, for the tool that called method:
** every record with its content and then its id, time, role, tier, key,
** session and metadata, so a model can act on any of them (forget by id,
** fetch by key) without the structured copy.
*/
void cli_render_for_model(a2m_buf *b, const char *method, const json_t *result);

#endif
