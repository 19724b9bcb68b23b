/*
** mcp_tool_defs.h — the table of the MCP bridge's tools, between the file
** that defines them (mcp_tool_defs.c: names, words, schemas) and the file
** that offers and runs them (mcp_tools.c).
*/
#ifndef A2M_CLI_MCP_TOOL_DEFS_H
#define A2M_CLI_MCP_TOOL_DEFS_H

#include <stddef.h>

#include <jansson.h>

#include "cli/client_conn.h"
#include "cli/client_render.h"

/* Annotation hints (MCP 2025-03-26 ToolAnnotations). */
#define MCP_HINT_READ_ONLY   1u
#define MCP_HINT_DESTRUCTIVE 2u
#define MCP_HINT_IDEMPOTENT  4u

/*
** What an input-schema builder adds to, for one memory: the properties, the
** names required, and the tool's description, which may grow with what
** describe says (tiers, keys).
*/
typedef struct mcp_schema_ctx {
	cli_conn     *conn;      /* to ask which capabilities are declared */
	const json_t *describe;  /* tiers, limits */
	json_t       *props;
	json_t       *required;
	a2m_buf      *desc;
} mcp_schema_ctx;

/* One tool: one A2M method. */
typedef struct mcp_tool_spec {
	const char *name;        /* memory_recall */
	const char *method;      /* memory/recall; its capability earns the tool */
	const char *title;
	const char *description;
	unsigned    hints;       /* MCP_HINT_* */
	void      (*inputs)(mcp_schema_ctx *s);  /* NULL: no arguments */
	void      (*outputs)(json_t *props);     /* the result's properties */
} mcp_tool_spec;

extern const mcp_tool_spec mcp_tool_specs[];
extern const size_t mcp_tool_spec_count;

#endif
