/*
** mcp_schema.h — checks a tool's arguments against the JSON Schema the
** bridge advertised for them, so the schema in tools/list and the check in
** tools/call cannot drift apart: there is one schema, and this reads it.
**
** Only the keywords the bridge emits are understood (JSON Schema 2020-12
** meanings): type (a name or a list of names), enum, properties, required,
** items, minimum, maximum, minLength, minItems. Any other keyword is
** ignored, never refused.
*/
#ifndef A2M_CLI_MCP_SCHEMA_H
#define A2M_CLI_MCP_SCHEMA_H

#include <stddef.h>

#include <jansson.h>

/*
** Returns 0 when value satisfies schema. Otherwise returns -1 and writes one
** sentence into why naming the offending argument and what it must be, e.g.
** "'limit' must be an integer >= 1", for a model to correct its call. name is
** what to call value in that sentence ("arguments" at the top).
*/
int mcp_schema_check(const json_t *schema, const json_t *value, const char *name, char *why,
		     size_t why_size);

/* Whether v is a JSON Schema "integer": an integer, or a real with no
** fractional part (2020-12 counts 5.0 as an integer). */
int mcp_schema_is_integer(const json_t *v);

#endif
