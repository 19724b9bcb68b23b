/*
** import_mcp.h — the knowledge graph of the MCP memory server
** (@modelcontextprotocol/server-memory) as records, for `a2m import`
** (docs/EXPORT.md, "From the MCP memory server").
**
** Its file is JSON Lines of two kinds:
**   {"type":"entity","name":N,"entityType":T,"observations":[...]}
**   {"type":"relation","from":A,"to":B,"relationType":R}
** Each observation becomes a record of its own, grouped by its entity, with
** the entity's name and type in metadata; an entity without observations
** becomes one record saying what it is; a relation becomes a record saying
** "A R B". Ids are made from what the line says, so importing the same
** graph again writes nothing new.
*/
#ifndef A2M_SERVER_IMPORT_MCP_H
#define A2M_SERVER_IMPORT_MCP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "store/record.h"

/* Whether v is a line of that file: an object whose "type" is "entity" or
** "relation". */
int a2m_mcp_memory_line(const json_t *v);

/*
** The records line v says: *recs (an array the caller frees with free(),
** each record with a2m_record_free) of *n records, created at `now` (ms),
** in tier (NULL: the store's default). Returns 0, or -1 with a one-line
** reason in why (a line of another type, a member missing or not a string).
*/
int a2m_mcp_memory_records(const json_t *v, int64_t now, const char *tier,
			   a2m_record ***recs, size_t *n, char *why, size_t why_size);

#endif
