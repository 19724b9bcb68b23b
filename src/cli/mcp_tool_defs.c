/*
** mcp_tool_defs.c — what each tool of the MCP bridge is called, what it says
** to a model, what it accepts and what it returns (see mcp_tool_defs.h).
**
** Input schemas are built from memory/describe: an argument exists only when
** the capability it belongs to is declared, tier arguments are an enum of
** the real tier names, limits carry the server's maxima. The descriptions
** are written for a model to act on: when to search (recall) and when to
** replay (timeline), what a key does, what cannot be undone.
*/
#include <stdio.h>
#include <string.h>

#include "cli/mcp_tool_defs.h"

/* Limits the bridge applies when the model gives none: a model's context
** is small, and A2M's own defaults (every record for timeline) are not. */
#define DEFAULT_RECALL_LIMIT   10
#define DEFAULT_TIMELINE_LIMIT 20
#define DEFAULT_EVENTS_LIMIT   50

/* ---- schema pieces ---- */

static int declares(const mcp_schema_ctx *s, const char *cap)
{
	return cli_conn_declares(s->conn, cap);
}

static void add(mcp_schema_ctx *s, const char *name, json_t *schema, int required)
{
	json_object_set_new(s->props, name, schema);
	if (required)
		json_array_append_new(s->required, json_string(name));
}

static json_t *typed(const char *type, const char *desc)
{
	return json_pack("{s:s, s:s}", "type", type, "description", desc);
}

/* A string that must not be empty. */
static json_t *text_arg(const char *desc)
{
	json_t *s = typed("string", desc);
	json_object_set_new(s, "minLength", json_integer(1));
	return s;
}

static json_t *strings_arg(const char *desc)
{
	json_t *s = typed("array", desc);
	json_object_set_new(s, "items", json_pack("{s:s, s:i}", "type", "string", "minLength", 1));
	json_object_set_new(s, "minItems", json_integer(1));
	return s;
}

/* An integer >= min, <= max when max > 0, with a default when def >= 0. */
static json_t *int_arg(const char *desc, long long min, long long max, long long def)
{
	json_t *s = typed("integer", desc);
	json_object_set_new(s, "minimum", json_integer(min));
	if (max > 0)
		json_object_set_new(s, "maximum", json_integer(max));
	if (def >= 0)
		json_object_set_new(s, "default", json_integer(def));
	return s;
}

/* A limit from describe's `limits`, or 0 when the server names none. */
static long long limit_of(const mcp_schema_ctx *s, const char *name)
{
	const json_t *v = json_object_get(json_object_get(s->describe, "limits"), name);
	return json_is_integer(v) && json_integer_value(v) > 0 ? json_integer_value(v) : 0;
}

static json_t *where_arg(const char *desc)
{
	return typed("object", desc);
}

#define WHERE_TEXT \
	"Exact-match filter on record fields, falling back to metadata keys; an array " \
	"value means any of, e.g. {\"role\": \"user\", \"topic\": [\"billing\", \"refunds\"]}."

/* What a tier of this kind is for, in a model's terms (spec §4.7 kinds). */
static const char *kind_purpose(const char *kind)
{
	if (!kind)
		return NULL;
	if (strcmp(kind, "working") == 0)
		return "the live conversation: replayed in order with memory_timeline, not searched";
	if (strcmp(kind, "episodic") == 0)
		return "what happened: past conversations and events, searched by memory_recall";
	if (strcmp(kind, "semantic") == 0)
		return "durable facts and knowledge, searched by memory_recall";
	if (strcmp(kind, "procedural") == 0)
		return "instructions and how-tos; nothing spills into it";
	return NULL;
}

/*
** A tier argument: an enum of the real tier names when describe lists them
** (the model cannot invent one), and each tier's purpose and capacity in
** the description when explain is set.
*/
static json_t *tier_arg(mcp_schema_ctx *s, const char *desc, int explain)
{
	const json_t *tiers = json_object_get(s->describe, "tiers");
	a2m_buf d = {0};
	a2m_buf_puts(&d, desc);
	json_t *names = json_array();
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		const json_t *tier = json_array_get(tiers, i);
		const char *name = json_string_value(json_object_get(tier, "name"));
		if (!name)
			continue;
		json_array_append_new(names, json_string(name));
		if (!explain)
			continue;
		const char *kind = json_string_value(json_object_get(tier, "kind"));
		const char *purpose = kind_purpose(kind);
		a2m_buf_printf(&d, "%s %s", json_array_size(names) == 1 ? " Tiers:" : ";", name);
		if (purpose)
			a2m_buf_printf(&d, " (%s)", purpose);
		const json_t *cap = json_object_get(tier, "capacity");
		const char *spill = json_string_value(json_object_get(tier, "spill_to"));
		if (json_is_integer(cap) && json_integer_value(cap) > 0)
			a2m_buf_printf(&d, ", holds %lld%s%s%s", (long long)json_integer_value(cap),
				       json_is_true(json_object_get(tier, "per_session")) ?
				       " per session" : "",
				       spill ? " then moves the oldest to " : "", spill ? spill : "");
	}
	if (explain && json_array_size(names))
		a2m_buf_puts(&d, ".");
	json_t *schema = typed("string", a2m_buf_str(&d));
	a2m_buf_free(&d);
	if (json_array_size(names))
		json_object_set(schema, "enum", names);
	json_decref(names);
	return schema;
}

/* ---- the inputs of each tool ---- */

static void in_remember(mcp_schema_ctx *s)
{
	add(s, "content", text_arg("The text to remember: one self-contained statement that "
				   "will make sense out of context (who, what, when). This "
				   "is what memory_recall searches."), 1);
	add(s, "role", typed("string", "Who produced it: user, assistant, tool, system or "
			     "memory (for something you concluded)."), 0);
	add(s, "metadata", typed("object", "Any JSON object to keep with it, e.g. "
				 "{\"topic\": \"billing\"}; memory_recall and memory_timeline can "
				 "filter on its keys with `where`."), 0);
	add(s, "group", typed("string", "Records sharing a group are kept or moved together, "
			      "e.g. the chunks of one document."), 0);
	add(s, "id", text_arg("Optional id of your own. Remembering the same id again stores "
			      "nothing new, which makes a retry safe; one is generated when "
			      "absent."), 0);
	if (declares(s, "tiers"))
		add(s, "tier", tier_arg(s, "Where to keep it; the store chooses when absent. Facts "
					"worth keeping for good belong in a semantic tier, not "
					"in working memory.", 1), 0);
	if (declares(s, "keys")) {
		add(s, "key", text_arg("An address for a fact that can change, slash-separated, "
				       "e.g. 'user/city'. Remembering to an occupied key REPLACES "
				       "the fact there (same id, next revision) instead of adding "
				       "a contradicting one; read it back with memory_fetch."), 0);
		a2m_buf_puts(s->desc, " For a fact that can change, give a `key`: a later "
			    "remember under the same key replaces it.");
	}
	if (declares(s, "sessions"))
		add(s, "session", text_arg("The conversation this belongs to, so conversations "
					   "do not evict each other and one can be replayed with "
					   "memory_timeline."), 0);
	if (declares(s, "salience"))
		add(s, "salience", typed("number", "How much it is worth keeping (higher ranks "
					 "and survives longer; default 1)."), 0);
	if (declares(s, "external")) {
		add(s, "uri", text_arg("Where the real thing lives (a file, a URL): the record "
				       "points at it and `content` describes it. Never fetched "
				       "by the memory."), 0);
		add(s, "media_type", typed("string", "The media type of what `uri` points at, "
					   "e.g. application/pdf."), 0);
	}
}

static void in_recall(mcp_schema_ctx *s)
{
	long long max = limit_of(s, "max_recall_limit");
	add(s, "query", typed("string", "What you are trying to remember, in natural "
			      "language. Empty or absent: the most recent records."), 0);
	add(s, "limit", int_arg("How many records at most.", 1, max, DEFAULT_RECALL_LIMIT), 0);
	add(s, "where", where_arg(WHERE_TEXT), 0);
	if (declares(s, "tiers"))
		add(s, "tier", tier_arg(s, "Search only this tier.", 0), 0);
	if (declares(s, "keys"))
		add(s, "key_prefix", text_arg("Only records whose key is at or under this "
					      "prefix, e.g. 'user/'."), 0);
}

static void in_timeline(mcp_schema_ctx *s)
{
	add(s, "limit", int_arg("How many of the most recent records (returned oldest first).",
				1, 0, DEFAULT_TIMELINE_LIMIT), 0);
	add(s, "where", where_arg(WHERE_TEXT), 0);
	if (declares(s, "sessions"))
		add(s, "session", text_arg("Replay this one conversation."), 0);
	if (declares(s, "tiers"))
		add(s, "tier", tier_arg(s, "Replay only this tier.", 0), 0);
	if (declares(s, "keys"))
		add(s, "key_prefix", text_arg("Only records whose key is at or under this "
					      "prefix."), 0);
}

static void in_forget(mcp_schema_ctx *s)
{
	add(s, "ids", strings_arg("Ids of the records to delete, as memory_recall or "
				  "memory_timeline showed them."), 0);
	add(s, "query", text_arg("Delete what this query recalls. Check with memory_recall "
				 "first: it deletes every match."), 0);
	add(s, "where", where_arg(WHERE_TEXT), 0);
	if (declares(s, "tiers"))
		add(s, "tier", tier_arg(s, "Delete only in this tier (alone: empties the tier).", 0), 0);
	if (declares(s, "keys"))
		add(s, "key_prefix", text_arg("Delete every record whose key is at or under this "
					      "prefix."), 0);
}

static void in_fetch(mcp_schema_ctx *s)
{
	add(s, "key", text_arg("The address to read, e.g. 'user/city'."), 1);
}

static void in_events(mcp_schema_ctx *s)
{
	add(s, "cursor", text_arg("The cursor the previous call returned. Absent: start "
				  "now (no events, just a cursor)."), 0);
	add(s, "limit", int_arg("How many events at most.", 1, 0, DEFAULT_EVENTS_LIMIT), 0);
	json_t *kinds = strings_arg("Only these kinds: written, forgotten, promoted, "
				    "consolidated, session_closed.");
	add(s, "kinds", kinds, 0);
}

static void in_session(mcp_schema_ctx *s)
{
	add(s, "session", text_arg("The session (conversation) to close."), 1);
}

static void in_promote(mcp_schema_ctx *s)
{
	add(s, "ids", strings_arg("Ids of the records to move."), 1);
	add(s, "tier", tier_arg(s, "The tier to move them to.", 0), 1);
	if (declares(s, "salience"))
		add(s, "salience", typed("number", "Salience to add to each record moved."), 0);
}

static void in_reinforce(mcp_schema_ctx *s)
{
	add(s, "ids", strings_arg("Ids of the records that proved useful."), 1);
	add(s, "amount", typed("number", "How much to raise their salience (default 1)."), 0);
}

static void in_summarize(mcp_schema_ctx *s)
{
	add(s, "ids", strings_arg("Summarize exactly these records."), 0);
	add(s, "query", text_arg("Summarize what this query recalls."), 0);
	add(s, "where", where_arg(WHERE_TEXT), 0);
	add(s, "limit", int_arg("How many source records at most.", 1, 0, -1), 0);
	if (declares(s, "tiers")) {
		add(s, "tier", tier_arg(s, "Read the sources from this tier only.", 0), 0);
		add(s, "into", tier_arg(s, "The tier the summary is written to.", 0), 0);
	}
	if (declares(s, "keys")) {
		add(s, "key_prefix", text_arg("Summarize the records whose key is at or under "
					      "this prefix."), 0);
		add(s, "key", text_arg("Store the summary at this key, replacing what is there."), 0);
	}
}

/* ---- the outputs of each tool (MCP 2025-06-18 outputSchema) ---- */

static json_t *nullable(const char *type)
{
	return json_pack("{s:[s,s]}", "type", type, "null");
}

/* A record as any A2M server may send it: only id is certain, and optional
** fields may be null (spec §3.1). Unknown fields are allowed. */
static json_t *record_schema(int or_null)
{
	json_t *p = json_object();
	json_object_set_new(p, "id", json_pack("{s:s}", "type", "string"));
	json_object_set_new(p, "content", nullable("string"));
	json_object_set_new(p, "created_at", nullable("string"));
	static const char *const strs[] = {"role", "group", "tier", "accessed_at", "owner",
					   "session", "key", "uri", "media_type"};
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
		json_object_set_new(p, strs[i], nullable("string"));
	json_object_set_new(p, "metadata", nullable("object"));
	json_object_set_new(p, "score", nullable("number"));
	json_object_set_new(p, "salience", nullable("number"));
	json_object_set_new(p, "access_count", nullable("integer"));
	json_object_set_new(p, "revision", nullable("integer"));
	json_t *r = json_pack("{s:o, s:o, s:[s]}", "type",
			      or_null ? json_pack("[s,s]", "object", "null") : json_string("object"),
			      "properties", p, "required", "id");
	return r;
}

static json_t *array_of(json_t *items)
{
	return json_pack("{s:s, s:o}", "type", "array", "items", items);
}

static json_t *integer(void)
{
	return json_pack("{s:s}", "type", "integer");
}

static void out_ids(json_t *p)
{
	json_object_set_new(p, "ids", array_of(json_pack("{s:s}", "type", "string")));
}

static void out_records(json_t *p)
{
	json_object_set_new(p, "records", array_of(record_schema(0)));
}

static void out_record(json_t *p)
{
	json_object_set_new(p, "record", record_schema(1));
}

static void out_forgotten(json_t *p)
{
	json_object_set_new(p, "forgotten", integer());
}

static void out_events(json_t *p)
{
	json_t *event = json_pack("{s:s, s:{s:{s:s}, s:{s:s}}, s:[s,s]}", "type", "object",
				  "properties", "kind", "type", "string", "at", "type", "string",
				  "required", "kind", "at");
	json_object_set_new(p, "events", array_of(event));
	json_object_set_new(p, "cursor", json_pack("{s:s}", "type", "string"));
	json_object_set_new(p, "more", json_pack("{s:s}", "type", "boolean"));
	json_object_set_new(p, "reset", json_pack("{s:s}", "type", "boolean"));
}

static void out_sessions(json_t *p)
{
	json_t *session = json_pack("{s:s, s:{s:{s:s}, s:{s:s}}, s:[s]}", "type", "object",
				    "properties", "session", "type", "string", "records", "type",
				    "integer", "required", "session");
	json_object_set_new(p, "sessions", array_of(session));
}

static void out_consolidated(json_t *p)
{
	static const char *const counts[] = {"moved", "promoted", "dropped", "summarized",
					     "flushed"};
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
		json_object_set_new(p, counts[i], integer());
	json_object_set_new(p, "counts", json_pack("{s:s}", "type", "object"));
	json_object_set_new(p, "closed", json_pack("{s:s}", "type", "string"));
}

static void out_promoted(json_t *p)
{
	json_object_set_new(p, "promoted", integer());
}

static void out_reinforced(json_t *p)
{
	json_object_set_new(p, "reinforced", integer());
}

static void out_summary(json_t *p)
{
	out_records(p);
	json_object_set_new(p, "read", integer());
	json_object_set_new(p, "written", integer());
}

/* ---- the table ---- */

const mcp_tool_spec mcp_tool_specs[] = {
	{"memory_remember", "memory/remember", "Remember",
	 "Store something in persistent memory so it can be recalled later, by you in another "
	 "conversation or by another agent sharing this memory. Remember one self-contained "
	 "statement per call.",
	 0, in_remember, out_ids},
	{"memory_recall", "memory/recall", "Recall (search memory)",
	 "Search memory by relevance: returns the records that best match the query, best "
	 "first. Use it before answering anything that may depend on earlier conversations or "
	 "on what you were told before. Scores only order this one list; never compare them "
	 "across calls. To replay a conversation in order, use memory_timeline instead.",
	 MCP_HINT_READ_ONLY, in_recall, out_records},
	{"memory_timeline", "memory/timeline", "Timeline (replay in order)",
	 "Replay memory in the order it was written, oldest first: the most recent records. "
	 "Use it to rebuild a conversation; working memory is replayed, not searched. To find "
	 "something by meaning, use memory_recall.",
	 MCP_HINT_READ_ONLY, in_timeline, out_records},
	{"memory_forget", "memory/forget", "Forget",
	 "Delete records permanently. Give at least one selector: ids, query, where, tier or "
	 "key_prefix; given together, a record must match all of them. There is deliberately "
	 "no way to delete everything at once. Returns how many records were removed.",
	 MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT, in_forget, out_forgotten},
	{"memory_fetch", "memory/fetch", "Fetch by key",
	 "Read the one record stored at a key such as 'user/city'. When nothing is stored "
	 "there yet the answer is no record, which is not an error.",
	 MCP_HINT_READ_ONLY, in_fetch, out_record},
	{"memory_events", "memory/events", "What changed",
	 "List what changed in memory since a cursor: records written, forgotten, promoted, "
	 "consolidations, closed sessions. Call once without a cursor to get the current "
	 "position, then pass the returned cursor back to see what happened in between. The "
	 "cursor is opaque: pass it back unchanged.",
	 MCP_HINT_READ_ONLY, in_events, out_events},
	{"memory_session_list", "memory/session/list", "List sessions",
	 "List the conversations (sessions) in memory, with how many records each holds and "
	 "when each was opened and last touched.",
	 MCP_HINT_READ_ONLY, NULL, out_sessions},
	{"memory_session_close", "memory/session/close", "Close a session",
	 "End a conversation: its records leave working memory now and move down to the "
	 "longer-term tiers, where each tier's own rules apply. Records move; they are not "
	 "deleted unless a full bottom tier drops them. Closing an unknown session does "
	 "nothing.",
	 MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT, in_session, out_consolidated},
	{"memory_promote", "memory/promote", "Promote",
	 "Move records to another tier because they proved worth keeping, e.g. a fact from "
	 "episodic to semantic memory. Ids that do not exist or are already there are "
	 "skipped.",
	 0, in_promote, out_promoted},
	{"memory_consolidate", "memory/consolidate", "Consolidate",
	 "Ask memory to reorganise itself: promote what has earned it, move what no longer "
	 "fits a tier down, and drop what does not fit the bottom tier. Records may be "
	 "deleted.",
	 MCP_HINT_DESTRUCTIVE, NULL, out_consolidated},
	{"memory_reinforce", "memory/reinforce", "Reinforce",
	 "Mark records as useful: raise their salience so they rank higher and are kept "
	 "longer. Use it on the records that actually helped.",
	 0, in_reinforce, out_reinforced},
	{"memory_summarize", "memory/summarize", "Summarize",
	 "Distill a set of records into a durable summary stored as an ordinary record; the "
	 "sources are kept. Select the sources with at least one of ids, query, where, tier or "
	 "key_prefix. Writing nothing is a valid answer when there is nothing durable to say.",
	 0, in_summarize, out_summary},
};

const size_t mcp_tool_spec_count = sizeof mcp_tool_specs / sizeof mcp_tool_specs[0];
