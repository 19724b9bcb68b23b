/*
** mcp_tools.h — the tools of the MCP bridge (`a2m mcp`), derived from what the
** A2M side declares (DECISIONS 027): a capability the store did not declare
** is a tool the MCP client never sees.
**
** Each tool is one A2M method: memory_remember is memory/remember,
** memory_session_close is memory/session/close. Its input schema is built
** from memory/describe (tier names as an enum, limits as maxima), and the
** same schema checks the arguments of every call, so what tools/list
** promises and what tools/call accepts cannot differ.
*/
#ifndef A2M_CLI_MCP_TOOLS_H
#define A2M_CLI_MCP_TOOLS_H

#include <jansson.h>

#include "cli/client_conn.h"

/*
** What the negotiated MCP revision lets a tool definition carry. Fields a
** revision does not define are left out for it rather than sent to be
** ignored.
*/
#define MCP_FEATURE_ANNOTATIONS 1u /* 2025-03-26: tool annotations (hints) */
#define MCP_FEATURE_STRUCTURED  2u /* 2025-06-18: title and outputSchema */

typedef struct mcp_tools mcp_tools;

/*
** Builds the tool set for the memory behind conn (borrowed; it must outlive
** the tools). owner, when not NULL, is sent as `owner` on every call if the
** store declares `scopes` (spec §6): the identity is the bridge's to set,
** never the model's. Returns NULL when memory ran out.
*/
mcp_tools *mcp_tools_new(cli_conn *conn, const char *owner);

void mcp_tools_free(mcp_tools *t);

/* The `tools` array of a tools/list result (a new reference), or NULL. */
json_t *mcp_tools_list(const mcp_tools *t, unsigned features);

/* Whether a tool of that name is offered. */
int mcp_tools_has(const mcp_tools *t, const char *name);

/* How many tools are offered, and the name of the i-th. */
size_t mcp_tools_count(const mcp_tools *t);
const char *mcp_tools_name(const mcp_tools *t, size_t i);

/*
** Runs the offered tool name with arguments (borrowed; NULL means none) and
** returns its CallToolResult (a new reference): text content and
** structuredContent, with isError set when the arguments were invalid or
** the A2M call failed — a tool failure the model can read and act on, never
** a protocol error. Returns NULL only when memory ran out.
*/
json_t *mcp_tools_call(mcp_tools *t, const char *name, const json_t *arguments);

/*
** The initialize result's `instructions`: how a model should use this
** memory, naming only the tools offered. The caller frees it with free().
*/
char *mcp_tools_instructions(const mcp_tools *t);

#endif
