/*
** mcp_tools.c — the tools one bridge offers and how a call runs (see
** mcp_tools.h). What each tool is called, says and accepts is the table in
** mcp_tool_defs.c; docs/MCP.md is the reader's version of both.
**
** A call goes: schema check (mcp_schema.c) → A2M params (every argument the
** schema names, copied; the schema's defaults; the bridge's owner) → one
** A2M call → text for the model (client_render.c) and the A2M result object
** as structuredContent. Errors keep the A2M code in both.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/client_render.h"
#include "cli/mcp_schema.h"
#include "cli/mcp_tool_defs.h"
#include "cli/mcp_tools.h"
#include "util/text.h"

/* One offered tool: its spec and the schemas built for this memory. */
typedef struct tool {
	const mcp_tool_spec *spec;
	char                *description; /* the spec's words plus what describe adds */
	json_t              *input;       /* inputSchema */
	json_t              *output;      /* outputSchema */
} tool;

struct mcp_tools {
	cli_conn     *conn;
	const json_t *describe;
	const char   *owner;   /* sent on every call when scopes is declared */
	tool         *tools;
	size_t        n;
};

/* ---- building ---- */

static int build_tool(mcp_tools *t, const mcp_tool_spec *spec, tool *out)
{
	a2m_buf desc = {0};
	a2m_buf_puts(&desc, spec->description);
	mcp_schema_ctx s = {t->conn, t->describe, json_object(), json_array(), &desc};
	if (spec->inputs)
		spec->inputs(&s);
	json_t *input = json_pack("{s:s, s:o}", "type", "object", "properties", s.props);
	if (input && json_array_size(s.required))
		json_object_set(input, "required", s.required);
	json_decref(s.required);

	json_t *props = json_object();
	spec->outputs(props);
	/* An error result carries the A2M error in the same structured field. */
	json_object_set_new(props, "error",
			    json_pack("{s:s, s:{s:{s:s}, s:{s:s}}, s:[s,s]}", "type", "object",
				      "properties", "code", "type", "integer", "message", "type",
				      "string", "required", "code", "message"));
	json_t *output = json_pack("{s:s, s:o}", "type", "object", "properties", props);

	out->spec = spec;
	out->description = a2m_buf_take(&desc, NULL);
	out->input = input;
	out->output = output;
	return out->description && input && output ? 0 : -1;
}

mcp_tools *mcp_tools_new(cli_conn *conn, const char *owner)
{
	mcp_tools *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->conn = conn;
	t->describe = cli_conn_describe(conn);
	t->owner = owner && cli_conn_declares(conn, "scopes") ? owner : NULL;
	t->tools = calloc(mcp_tool_spec_count, sizeof *t->tools);
	if (!t->tools) {
		free(t);
		return NULL;
	}
	/* A memory that says it refuses every write (describe's read_only, as
	** `a2m corpus` and --read-only stores do) gets no tool that writes:
	** an agent offered memory_remember would only ever meet -32004. */
	int read_only = json_is_true(json_object_get(t->describe, "read_only"));
	for (size_t i = 0; i < mcp_tool_spec_count; i++) {
		/* The negotiation surfacing through tools/list: no tool for a
		** capability the store did not declare (DECISIONS 027). */
		const char *cap = cli_method_capability(mcp_tool_specs[i].method);
		if (!cap || !cli_conn_declares(conn, cap))
			continue;
		if (read_only && !(mcp_tool_specs[i].hints & MCP_HINT_READ_ONLY))
			continue;
		if (build_tool(t, &mcp_tool_specs[i], &t->tools[t->n++]) != 0) {
			mcp_tools_free(t);
			return NULL;
		}
	}
	return t;
}

void mcp_tools_free(mcp_tools *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free(t->tools[i].description);
		json_decref(t->tools[i].input);
		json_decref(t->tools[i].output);
	}
	free(t->tools);
	free(t);
}

size_t mcp_tools_count(const mcp_tools *t)
{
	return t->n;
}

const char *mcp_tools_name(const mcp_tools *t, size_t i)
{
	return i < t->n ? t->tools[i].spec->name : NULL;
}

static const tool *find(const mcp_tools *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->tools[i].spec->name, name) == 0)
			return &t->tools[i];
	return NULL;
}

int mcp_tools_has(const mcp_tools *t, const char *name)
{
	return find(t, name) != NULL;
}

json_t *mcp_tools_list(const mcp_tools *t, unsigned features)
{
	json_t *list = json_array();
	for (size_t i = 0; list && i < t->n; i++) {
		const tool *tl = &t->tools[i];
		json_t *def = json_pack("{s:s, s:s, s:O}", "name", tl->spec->name, "description",
					tl->description, "inputSchema", tl->input);
		if (!def) {
			json_decref(list);
			return NULL;
		}
		if (features & MCP_FEATURE_STRUCTURED) {
			json_object_set_new(def, "title", json_string(tl->spec->title));
			json_object_set(def, "outputSchema", tl->output);
		}
		if (features & MCP_FEATURE_ANNOTATIONS) {
			unsigned h = tl->spec->hints;
			json_t *ann = json_pack("{s:b, s:b}", "readOnlyHint", (h & MCP_HINT_READ_ONLY) != 0,
						/* a memory is a closed world (MCP's own example) */
						"openWorldHint", 0);
			if (ann && !(h & MCP_HINT_READ_ONLY)) {
				/* A remember to an occupied key replaces a fact. */
				int destructive = (h & MCP_HINT_DESTRUCTIVE) ||
						  (strcmp(tl->spec->method, "memory/remember") == 0 &&
						   cli_conn_declares(t->conn, "keys"));
				json_object_set_new(ann, "destructiveHint", json_boolean(destructive));
				json_object_set_new(ann, "idempotentHint",
						    json_boolean((h & MCP_HINT_IDEMPOTENT) != 0));
			}
			if (ann && (features & MCP_FEATURE_STRUCTURED))
				json_object_set_new(ann, "title", json_string(tl->spec->title));
			json_object_set_new(def, "annotations", ann);
		}
		json_array_append_new(list, def);
	}
	return list;
}

/* ---- calling ---- */

/* A CallToolResult: one text block, the structured object, the error flag.
** Takes text (malloc'd) and structured. */
static json_t *tool_result(char *text, json_t *structured, int is_error)
{
	json_t *r = NULL;
	if (text && structured)
		r = json_pack("{s:[{s:s, s:s}], s:O}", "content", "type", "text", "text", text,
			      "structuredContent", structured);
	if (r && is_error)
		json_object_set_new(r, "isError", json_true());
	free(text);
	json_decref(structured);
	return r;
}

/*
** An error as a tool result: the code and its name in the text and in
** structuredContent.error, with the A2M error's data when there is some.
*/
static json_t *error_result(int code, const char *message, const json_t *data)
{
	a2m_buf b = {0};
	a2m_buf_printf(&b, "Error %d %s: %s", code, cli_error_name(code), message);
	json_t *error = json_pack("{s:i, s:s}", "code", code, "message", message);
	if (data && error) {
		json_object_set(error, "data", (json_t *)data);
		a2m_buf_puts(&b, " (data: ");
		cli_buf_json(&b, data);
		a2m_buf_puts(&b, ")");
	}
	a2m_buf_puts(&b, "\n");
	return tool_result(a2m_buf_take(&b, NULL), error ? json_pack("{s:o}", "error", error) : NULL, 1);
}

/*
** The A2M params for a call: every argument the input schema names (so an
** argument the model made up goes nowhere), integers normalised (a model's
** 5.0 is JSON Schema's integer 5), absent ones given the schema's default.
*/
static json_t *params_from(const tool *tl, const json_t *args)
{
	json_t *params = json_object();
	const json_t *props = json_object_get(tl->input, "properties");
	const char *key;
	json_t *schema;
	json_object_foreach((json_t *)props, key, schema) {
		const json_t *v = json_object_get(args, key);
		const char *type = json_string_value(json_object_get(schema, "type"));
		json_t *copy;
		if (!v) {
			const json_t *def = json_object_get(schema, "default");
			if (!def)
				continue;
			copy = json_incref((json_t *)def);
		} else if (type && strcmp(type, "integer") == 0 && json_is_real(v)) {
			copy = json_integer((json_int_t)json_real_value(v));
		} else {
			copy = json_incref((json_t *)v);
		}
		json_object_set_new(params, key, copy);
	}
	return params;
}

/*
** Turns the copied arguments into the A2M params of tools whose shapes
** differ: remember wraps them as its one record and gives it a client id
** (DECISIONS 011), timeline's session becomes a `where` on it. Returns 0,
** or -1 with a reason in why.
*/
static int reshape(const tool *tl, json_t **params, char *why, size_t why_size)
{
	const char *method = tl->spec->method;
	if (strcmp(method, "memory/remember") == 0) {
		json_t *rec = *params;
		if (!json_object_get(rec, "id")) {
			char id[A2M_ID_LEN];
			if (cli_new_record_id(id) != 0) {
				snprintf(why, why_size, "cannot generate a record id: no randomness");
				return -1;
			}
			json_object_set_new(rec, "id", json_string(id));
		}
		*params = json_pack("{s:[o]}", "records", rec);
		return *params ? 0 : -1;
	}
	json_t *session = json_object_get(*params, "session");
	if (strcmp(method, "memory/timeline") == 0 && session) {
		json_t *where = json_object_get(*params, "where");
		if (!where) {
			where = json_object();
			json_object_set_new(*params, "where", where);
		}
		json_object_set(where, "session", session);
		json_object_del(*params, "session");
	}
	return 0;
}

json_t *mcp_tools_call(mcp_tools *t, const char *name, const json_t *arguments)
{
	const tool *tl = find(t, name);
	if (!tl)
		return NULL;
	char why[512];
	json_t *empty = NULL;
	if (!arguments)
		arguments = empty = json_object();
	if (mcp_schema_check(tl->input, arguments, "arguments", why, sizeof why) != 0) {
		json_decref(empty);
		char msg[600];
		snprintf(msg, sizeof msg, "Invalid arguments for %s: %s", name, why);
		return error_result(A2M_INVALID_PARAMS, msg, NULL);
	}
	json_t *params = params_from(tl, arguments);
	json_decref(empty);
	if (!params)
		return NULL;
	if (reshape(tl, &params, why, sizeof why) != 0) {
		json_decref(params);
		return error_result(A2M_INTERNAL_ERROR, why, NULL);
	}
	if (t->owner)
		json_object_set_new(params, "owner", json_string(t->owner));

	/* Reads, idempotent calls and a remember with its client id can be
	** sent again after a lost answer. */
	unsigned h = tl->spec->hints;
	int retry_safe = (h & (MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT)) ||
			 strcmp(tl->spec->method, "memory/remember") == 0;
	json_t *result = NULL;
	cli_error err = {0};
	int rc = cli_conn_call(t->conn, tl->spec->method, params, retry_safe, &result, &err);
	json_decref(params);
	if (rc != 0) {
		json_t *r;
		if (err.kind == CLI_ERR_PROTOCOL) {
			r = error_result(err.code, err.message, err.data);
		} else {
			char msg[600];
			snprintf(msg, sizeof msg, "the memory server did not answer: %s", err.message);
			r = error_result(A2M_INTERNAL_ERROR, msg, NULL);
		}
		cli_error_clear(&err);
		return r;
	}
	if (!json_is_object(result)) {
		json_decref(result);
		return error_result(A2M_INTERNAL_ERROR, "the memory server's result is not an object",
				    NULL);
	}
	a2m_buf text = {0};
	cli_render_for_model(&text, tl->spec->method, result);
	return tool_result(a2m_buf_take(&text, NULL), result, 0);
}

char *mcp_tools_instructions(const mcp_tools *t)
{
	a2m_buf b = {0};
	const char *name = json_string_value(json_object_get(t->describe, "name"));
	a2m_buf_printf(&b, "Persistent memory shared across conversations and agents (A2M store "
		       "'%s'). Before answering anything that may depend on earlier "
		       "conversations or on what you were told before, search it with "
		       "memory_recall. Store what is worth keeping beyond this conversation "
		       "with memory_remember, one self-contained statement per call. "
		       "memory_recall searches by relevance; memory_timeline replays records "
		       "in the order they were written, to rebuild a conversation, and is not "
		       "a search.", name ? name : "memory");
	if (mcp_tools_has(t, "memory_fetch"))
		a2m_buf_puts(&b, " Facts that can change (where the user lives, a preference) "
			    "belong under a key: remembering with the same key replaces the old "
			    "value instead of contradicting it, and memory_fetch reads it back.");
	if (mcp_tools_has(t, "memory_reinforce"))
		a2m_buf_puts(&b, " When recalled records helped, memory_reinforce them so they "
			    "are kept.");
	return a2m_buf_take(&b, NULL);
}
