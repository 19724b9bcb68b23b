/*
** import_mcp.c — the MCP memory server's knowledge graph as records
** (import_mcp.h says the mapping; docs/EXPORT.md, why).
**
** The graph has no ids and no times. Times are the import's. Ids are a
** 128-bit hash of what the line says (two FNV-1a chains from different
** bases, each part preceded by its length, so "ab"+"c" and "a"+"bc"
** differ): the same observation of the same entity is the same record in
** every import, which is what makes a second import write nothing.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/import_mcp.h"
#include "util/hash.h"
#include "util/json_write.h"

/* Every id starts with this, so where a record came from stays visible. */
#define ID_PREFIX "mcp-memory:"

/* Groups too: an entity's records never join a group of the store's own. */
#define GROUP_PREFIX "mcp-memory:"

int a2m_mcp_memory_line(const json_t *v)
{
	const char *type = json_string_value(json_object_get(v, "type"));
	return type && (strcmp(type, "entity") == 0 || strcmp(type, "relation") == 0);
}

/* The id of the parts (NULL-terminated list), "mcp-memory:" and 32 hex digits. */
static char *make_id(const char *const *parts)
{
	uint64_t a = A2M_HASH_SEED, b = A2M_HASH_SEED ^ 0x9e3779b97f4a7c15ULL;
	for (size_t i = 0; parts[i]; i++) {
		uint64_t len = strlen(parts[i]);
		a = a2m_hash_more(a2m_hash_more(a, &len, sizeof len), parts[i], len);
		b = a2m_hash_more(a2m_hash_more(b, parts[i], len), &len, sizeof len);
	}
	char *id = malloc(sizeof ID_PREFIX + 32);
	if (id)
		snprintf(id, sizeof ID_PREFIX + 32, ID_PREFIX "%016llx%016llx", (unsigned long long)a,
			 (unsigned long long)b);
	return id;
}

/* prefix followed by s, or NULL. */
static char *prefixed(const char *prefix, const char *s)
{
	size_t p = strlen(prefix), n = strlen(s);
	char *out = malloc(p + n + 1);
	if (out) {
		memcpy(out, prefix, p);
		memcpy(out + p, s, n + 1);
	}
	return out;
}

/* A string member without NUL, or NULL. */
static const char *member(const json_t *v, const char *name)
{
	const json_t *m = json_object_get(v, name);
	if (!json_is_string(m) || strlen(json_string_value(m)) != json_string_length(m))
		return NULL;
	return json_string_value(m);
}

/*
** One record: content (copied), id from parts, the group and metadata
** given (metadata taken and released), in tier at now. NULL when memory
** runs out.
*/
static a2m_record *make(const char *content, const char *const *parts, const char *group_of,
			json_t *metadata, int64_t now, const char *tier)
{
	a2m_record *rec = a2m_record_new();
	int bad = !rec || !metadata;
	if (!bad) {
		rec->id = make_id(parts);
		rec->content = strdup(content);
		rec->group = prefixed(GROUP_PREFIX, group_of);
		rec->metadata = a2m_json_write(metadata, NULL);
		rec->tier = tier ? strdup(tier) : NULL;
		rec->created_at = now;
		rec->salience = NAN;
		bad = !rec->id || !rec->content || !rec->group || !rec->metadata || (tier && !rec->tier);
	}
	json_decref(metadata);
	if (bad) {
		a2m_record_free(rec);
		return NULL;
	}
	return rec;
}

/* The records of an entity line. */
static int entity(const json_t *v, int64_t now, const char *tier, a2m_record ***recs,
		  size_t *n, char *why, size_t why_size)
{
	const char *name = member(v, "name"), *type = member(v, "entityType");
	const json_t *obs = json_object_get(v, "observations");
	if (!name || !type) {
		snprintf(why, why_size, "an entity needs \"name\" and \"entityType\" strings");
		return -1;
	}
	if (obs && !json_is_array(obs)) {
		snprintf(why, why_size, "an entity's \"observations\" must be an array of strings");
		return -1;
	}
	size_t count = json_array_size(obs);
	*recs = calloc(count ? count : 1, sizeof **recs);
	if (!*recs)
		goto oom;
	if (count == 0) {
		/* Nothing observed yet: the entity itself is what is known. */
		size_t len = strlen(name) + strlen(type) + 4;
		char *text = malloc(len);
		if (!text)
			goto oom;
		snprintf(text, len, "%s (%s)", name, type);
		const char *parts[] = {"entity", name, type, NULL};
		(*recs)[0] = make(text, parts, name,
				  json_pack("{ss ss}", "entity", name, "entityType", type), now, tier);
		free(text);
		if (!(*recs)[0])
			goto oom;
		*n = 1;
		return 0;
	}
	for (size_t i = 0; i < count; i++) {
		const json_t *o = json_array_get(obs, i);
		const char *text = json_string_value(o);
		if (!text || strlen(text) != json_string_length(o)) {
			snprintf(why, why_size, "observations[%zu] of '%s' must be a string", i, name);
			goto fail;
		}
		const char *parts[] = {"observation", name, text, NULL};
		if (!((*recs)[i] = make(text, parts, name,
					json_pack("{ss ss}", "entity", name, "entityType", type),
					now, tier)))
			goto oom;
		*n = i + 1;
	}
	return 0;
oom:
	snprintf(why, why_size, "out of memory");
fail:
	for (size_t i = 0; *recs && i < *n; i++)
		a2m_record_free((*recs)[i]);
	free(*recs);
	*recs = NULL;
	*n = 0;
	return -1;
}

/* The record of a relation line: "A R B". */
static int relation(const json_t *v, int64_t now, const char *tier, a2m_record ***recs,
		    size_t *n, char *why, size_t why_size)
{
	const char *from = member(v, "from"), *to = member(v, "to");
	const char *type = member(v, "relationType");
	if (!from || !to || !type) {
		snprintf(why, why_size, "a relation needs \"from\", \"to\" and \"relationType\" strings");
		return -1;
	}
	size_t len = strlen(from) + strlen(type) + strlen(to) + 3;
	char *text = malloc(len);
	*recs = malloc(sizeof **recs);
	if (!text || !*recs) {
		free(text);
		free(*recs);
		*recs = NULL;
		snprintf(why, why_size, "out of memory");
		return -1;
	}
	snprintf(text, len, "%s %s %s", from, type, to);
	const char *parts[] = {"relation", from, type, to, NULL};
	(*recs)[0] = make(text, parts, from,
			  json_pack("{ss ss ss}", "relation", type, "from", from, "to", to), now,
			  tier);
	free(text);
	if (!(*recs)[0]) {
		free(*recs);
		*recs = NULL;
		snprintf(why, why_size, "out of memory");
		return -1;
	}
	*n = 1;
	return 0;
}

int a2m_mcp_memory_records(const json_t *v, int64_t now, const char *tier,
			   a2m_record ***recs, size_t *n, char *why, size_t why_size)
{
	*recs = NULL;
	*n = 0;
	const char *type = json_string_value(json_object_get(v, "type"));
	if (type && strcmp(type, "entity") == 0)
		return entity(v, now, tier, recs, n, why, why_size);
	if (type && strcmp(type, "relation") == 0)
		return relation(v, now, tier, recs, n, why, why_size);
	snprintf(why, why_size, "a line of type %s%s%s: the MCP memory file has \"entity\" and "
		 "\"relation\" lines", type ? "'" : "", type ? type : "none", type ? "'" : "");
	return -1;
}
