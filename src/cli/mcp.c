/*
** mcp.c — `a2m mcp`: an MCP server on stdio whose tools are an A2M memory
** (DECISIONS 027). The memory is an embedded store (the default: one command
** gives an agent persistent memory) or a remote A2M server.
**
** This file is the MCP side: the stdio framing (newline-delimited JSON-RPC,
** stdout carrying nothing but MCP messages, logs on stderr — the same framing
** as A2M's own §8.2, DECISIONS 021), the lifecycle (initialize and version
** negotiation, notifications/initialized, ping) and tools/list and tools/call. The
** tools themselves are mcp_tools.c; docs/MCP.md describes the whole bridge.
*/
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "a2m.h"
#include "cli/cli.h"
#include "cli/client_conn.h"
#include "cli/mcp_tools.h"
#include "cli/stop_signals.h"
#include "util/fd.h"
#include "util/grow.h"
#include "util/json_write.h"
#include "util/log.h"

/*
** The MCP revisions we speak, newest first. Each one's initialize handshake
** is the same; what differs is what a tool definition may carry
** (mcp_tools.h). An initialize asking for a revision not listed here —
** older, or the handshake-less 2026-07-28 — is answered with the first,
** which is what MCP's version negotiation prescribes: the client then
** decides whether it can continue.
*/
static const struct {
	const char *version;
	unsigned    features;
} versions[] = {
	{"2025-11-25", MCP_FEATURE_ANNOTATIONS | MCP_FEATURE_STRUCTURED},
	{"2025-06-18", MCP_FEATURE_ANNOTATIONS | MCP_FEATURE_STRUCTURED},
	{"2025-03-26", MCP_FEATURE_ANNOTATIONS},
	{"2024-11-05", 0},
};

/* JSON-RPC codes MCP uses. */
#define RPC_PARSE_ERROR      (-32700)
#define RPC_INVALID_REQUEST  (-32600)
#define RPC_METHOD_NOT_FOUND (-32601)
#define RPC_INVALID_PARAMS   (-32602)
#define RPC_INTERNAL_ERROR   (-32603)

/* The longest message accepted; longer ones are refused and skipped. */
#define MAX_LINE ((size_t)16 << 20)
#define READ_CHUNK 65536

static const char usage[] =
	"usage: a2m mcp [options]\n"
	"       a2m mcp [options] --stdio CMD [ARGS...]\n"
	"\n"
	"Runs an MCP server on stdin/stdout whose tools are an A2M memory, so any MCP\n"
	"client (Claude Desktop, Claude Code, an IDE agent) can remember and recall.\n"
	"Tools follow the capabilities the memory declares: memory_remember,\n"
	"memory_recall, memory_timeline and memory_forget always; memory_fetch with\n"
	"keys; memory_events with events; memory_session_list and _close with sessions;\n"
	"memory_promote and memory_consolidate with tiers; memory_reinforce with\n"
	"salience; memory_summarize with summarize. See docs/MCP.md.\n"
	"\n"
	"the memory: an embedded store (the default) ...\n";

static const char usage_remote[] =
	"... or a remote A2M server:\n";

static const char usage_tail[] =
	"\n"
	"options:\n"
	"  --owner OWNER         act as this owner when the memory declares scopes\n"
	"  --log-level LEVEL     error, warn, info or debug (default warn); logs go to stderr\n"
	"  -h, --help            show this help\n"
	"\n"
	"Claude Code:  claude mcp add a2m -- a2m mcp --db ~/.a2m/memory.db\n";

/* ---- one session ---- */

typedef struct mcp_session {
	mcp_tools *tools;
	unsigned   features;    /* of the negotiated revision */
	int        initialized; /* initialize has been answered */
	int        out_fd;
	int        write_failed;
} mcp_session;

/* Writes one message and its newline; takes msg. Compact JSON has no raw
** newline, which the framing needs. */
static void send_message(mcp_session *s, json_t *msg)
{
	if (!msg) {
		a2m_log(A2M_LOG_ERROR, "out of memory building a response");
		return;
	}
	size_t len;
	char *text = a2m_json_write(msg, &len);
	json_decref(msg);
	if (!text) {
		a2m_log(A2M_LOG_ERROR, "out of memory writing a response");
		return;
	}
	char *line = realloc(text, len + 1);
	if (!line) {
		free(text);
		return;
	}
	line[len] = '\n';
	if (!s->write_failed && a2m_write_all(s->out_fd, line, len + 1) != 0) {
		a2m_log(A2M_LOG_WARN, "stdout closed: %s", strerror(errno));
		s->write_failed = 1;
	}
	free(line);
}

static void send_error(mcp_session *s, const json_t *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* A response carrying result (taken); id borrowed. */
static void send_result(mcp_session *s, const json_t *id, json_t *result)
{
	if (!result) {
		/* Still answer, or the client waits for this id forever. */
		send_error(s, id, RPC_INTERNAL_ERROR, "Internal error: out of memory");
		return;
	}
	send_message(s, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

static void send_error(mcp_session *s, const json_t *id, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_t *null = json_null();
	send_message(s, json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
				  id ? id : null, "error", "code", code, "message", msg));
	json_decref(null);
}

/* ---- the methods ---- */

static void on_initialize(mcp_session *s, const json_t *id, const json_t *params)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	if (!asked) {
		send_error(s, id, RPC_INVALID_PARAMS,
			   "Invalid params: initialize needs protocolVersion (a string)");
		return;
	}
	/* The client's revision when we speak it, else our latest. */
	size_t chosen = 0;
	for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++)
		if (strcmp(versions[i].version, asked) == 0)
			chosen = i;
	s->features = versions[chosen].features;
	s->initialized = 1;
	const json_t *info = json_object_get(params, "clientInfo");
	const char *client = json_string_value(json_object_get(info, "name"));
	a2m_log(A2M_LOG_INFO, "initialize from %s asking %s; speaking %s",
		client ? client : "an unnamed client", asked, versions[chosen].version);

	json_t *server_info = json_pack("{s:s, s:s}", "name", "a2m", "version", a2m_libversion());
	if (server_info && (s->features & MCP_FEATURE_STRUCTURED))
		json_object_set_new(server_info, "title", json_string("a2m memory (A2M 0.1)"));
	char *instructions = mcp_tools_instructions(s->tools);
	json_t *result = json_pack("{s:s, s:{s:{}}, s:o, s:s}", "protocolVersion",
				   versions[chosen].version, "capabilities", "tools", "serverInfo",
				   server_info, "instructions", instructions ? instructions : "");
	free(instructions);
	send_result(s, id, result);
}

static void on_tools_call(mcp_session *s, const json_t *id, const json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	if (!name) {
		send_error(s, id, RPC_INVALID_PARAMS, "Invalid params: tools/call needs a tool name");
		return;
	}
	/* An unknown tool is a protocol error in MCP, unlike bad arguments. */
	if (!mcp_tools_has(s->tools, name)) {
		send_error(s, id, RPC_INVALID_PARAMS, "Unknown tool: %s", name);
		return;
	}
	const json_t *args = json_object_get(params, "arguments");
	if (args && !json_is_object(args) && !json_is_null(args)) {
		/* Still the tool's input, so still the tool's error. */
		json_t *bad = json_pack("{s:[{s:s, s:s}], s:{s:{s:i, s:s}}, s:b}", "content", "type",
					"text", "text",
					"Error -32602 INVALID_PARAMS: arguments must be an object",
					"structuredContent", "error", "code", RPC_INVALID_PARAMS,
					"message", "arguments must be an object", "isError", 1);
		send_result(s, id, bad);
		return;
	}
	send_result(s, id, mcp_tools_call(s->tools, name, json_is_object(args) ? args : NULL));
}

/* Handles one request (a message with an id). */
static void on_request(mcp_session *s, const json_t *id, const char *method,
		       const json_t *params)
{
	if (strcmp(method, "initialize") == 0) {
		on_initialize(s, id, params);
	} else if (strcmp(method, "ping") == 0) {
		send_result(s, id, json_object());
	} else if (strcmp(method, "tools/list") == 0) {
		/* Before initialize (which a client should not do) the latest
		** revision's shape applies. One page: the list is short. */
		unsigned features = s->initialized ? s->features : versions[0].features;
		json_t *tools = mcp_tools_list(s->tools, features);
		send_result(s, id, tools ? json_pack("{s:o}", "tools", tools) : NULL);
	} else if (strcmp(method, "tools/call") == 0) {
		on_tools_call(s, id, params);
	} else {
		send_error(s, id, RPC_METHOD_NOT_FOUND, "Method not found: %s", method);
	}
}

static int is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

/* Handles one line: a request is answered, a notification never is. */
static void on_line(mcp_session *s, const char *line, size_t len)
{
	if (is_blank(line, len))
		return;
	json_error_t jerr;
	json_t *msg = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!msg) {
		send_error(s, NULL, RPC_PARSE_ERROR, "Parse error: %s", jerr.text);
		return;
	}
	if (!json_is_object(msg)) {
		/* MCP dropped batches in 2025-06-18, as A2M never had them. */
		send_error(s, NULL, RPC_INVALID_REQUEST, "Invalid request: expected one JSON-RPC "
			   "object%s", json_is_array(msg) ? " (batches are not supported)" : "");
		json_decref(msg);
		return;
	}
	const json_t *id = json_object_get(msg, "id");
	const json_t *method = json_object_get(msg, "method");
	const json_t *params = json_object_get(msg, "params");
	const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
	int id_ok = id && (json_is_string(id) || json_is_integer(id));
	if (!method && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
		/* A response: we never send requests, so there is nothing it
		** could answer. */
		a2m_log(A2M_LOG_DEBUG, "ignoring a response from the client");
	} else if (!version || strcmp(version, "2.0") != 0 || !json_is_string(method) ||
		   (id && !id_ok) || (params && !json_is_object(params))) {
		if (id || !json_is_string(method))
			send_error(s, id_ok ? id : NULL, RPC_INVALID_REQUEST,
				   "Invalid request: not a JSON-RPC 2.0 request (jsonrpc \"2.0\", "
				   "a string method, a string or integer id, object params)");
	} else if (!id) {
		/* notifications/initialized, notifications/cancelled (every
		** call is answered before the next is read, so there is never
		** one in flight to cancel), and any other: no reply. */
		a2m_log(A2M_LOG_DEBUG, "notification %s", json_string_value(method));
	} else {
		on_request(s, id, json_string_value(method), params);
	}
	json_decref(msg);
}

/* ---- the stdio loop ---- */

/*
** Reads stdin until end of input, a stop signal or a failed write, handing
** each line to on_line. A line longer than MAX_LINE is refused as it passes
** the limit and skipped to its newline without being held.
*/
static int serve(mcp_session *s, const sigset_t *wait_mask)
{
	char *buf = malloc(READ_CHUNK);
	size_t len = 0, cap = READ_CHUNK, scanned = 0;
	int skipping = 0, rc = 0;
	if (!buf)
		return -1;
	while (!cli_stop_requested && !s->write_failed) {
		struct pollfd pfd = {STDIN_FILENO, POLLIN, 0};
		int ready = ppoll(&pfd, 1, NULL, wait_mask);
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			rc = -1;
			break;
		}
		if (a2m_grow((void **)&buf, &cap, len + READ_CHUNK, 1)) {
			rc = -1;
			break;
		}
		ssize_t n = read(STDIN_FILENO, buf + len, READ_CHUNK);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			rc = -1;
			break;
		}
		int eof = n == 0;
		len += (size_t)n;
		size_t start = 0;
		for (size_t i = scanned; i < len; i++) {
			if (buf[i] != '\n')
				continue;
			if (!skipping && i > start)
				on_line(s, buf + start, i - start);
			skipping = 0;
			start = i + 1;
		}
		if (eof && start < len && !skipping)
			on_line(s, buf + start, len - start); /* a last line without '\n' */
		memmove(buf, buf + start, len - start);
		len -= start;
		scanned = len;
		if (len > MAX_LINE) {
			if (!skipping)
				send_error(s, NULL, RPC_INVALID_REQUEST, "Invalid request: message "
					   "longer than %zu bytes", MAX_LINE);
			skipping = 1;
			len = scanned = 0;
		}
		if (eof)
			break;
	}
	free(buf);
	return rc;
}

static int mcp(cli_target *target, int argc, char **argv);

int a2m_cmd_mcp(int argc, char **argv)
{
	cli_target target;
	if (cli_target_init(&target, CLI_CONN_EMBEDDED) != 0) {
		fprintf(stderr, "a2m mcp: out of memory\n");
		return A2M_EXIT_ERROR;
	}
	int rc = mcp(&target, argc, argv);
	cli_target_free(&target);
	return rc;
}

/* a2m mcp, connecting to target once its options are read. */
static int mcp(cli_target *target, int argc, char **argv)
{
	const char *owner = NULL;
	char why[256];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int used = cli_target_option(target, CLI_TARGET_EMBEDDED | CLI_TARGET_REMOTE, argc,
					     argv, &i, why, sizeof why);
		if (used < 0)
			return a2m_cli_usage("mcp", "%s", why);
		if (used)
			continue;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage, stdout);
			fputs(cli_target_help_embedded, stdout);
			fputs(usage_remote, stdout);
			fputs(cli_target_help_remote, stdout);
			fputs(usage_tail, stdout);
			return A2M_EXIT_OK;
		} else if (strcmp(a, "--owner") == 0) {
			if (i + 1 >= argc || !*argv[i + 1])
				return a2m_cli_usage("mcp", "--owner needs a name");
			owner = argv[++i];
			json_t *probe = json_string(owner);
			if (!probe)
				return a2m_cli_usage("mcp", "--owner must be valid UTF-8");
			json_decref(probe);
		} else if (strcmp(a, "--log-level") == 0) {
			a2m_log_level level;
			if (i + 1 >= argc || a2m_log_parse_level(argv[i + 1], &level) != 0)
				return a2m_cli_usage("mcp", "--log-level needs one of error, warn, info, debug");
			a2m_log_set_level(level);
			i++;
		} else {
			return a2m_cli_usage("mcp", "unknown option '%s'", a);
		}
	}

	/* Block the stop signals; the loop takes them only while it waits for
	** input, so a signal never lands in the middle of a tool call. */
	sigset_t wait_mask;
	cli_stop_signals_block(&wait_mask);

	cli_conn *conn;
	cli_error err = {0};
	if (cli_conn_open(target, owner, &conn, &err) != 0) {
		fprintf(stderr, "a2m mcp: %s%s\n", err.message,
			err.kind == CLI_ERR_PROTOCOL ? " (from memory/describe)" : "");
		cli_error_clear(&err);
		return A2M_EXIT_ERROR;
	}
	if (owner && !cli_conn_declares(conn, "scopes"))
		a2m_log(A2M_LOG_WARN, "--owner %s ignored: the memory does not declare scopes", owner);
	mcp_session s = {0};
	s.out_fd = STDOUT_FILENO;
	s.tools = mcp_tools_new(conn, owner);
	if (!s.tools) {
		fprintf(stderr, "a2m mcp: out of memory\n");
		cli_conn_close(conn);
		return A2M_EXIT_ERROR;
	}
	a2m_log(A2M_LOG_INFO, "serving MCP on stdio with %zu tools",
		mcp_tools_count(s.tools));
	int rc = serve(&s, &wait_mask);
	mcp_tools_free(s.tools);
	cli_conn_close(conn);
	a2m_log(A2M_LOG_INFO, "stopped (%s)", cli_stop_requested ? "signal" : "end of input");
	return rc == 0 ? A2M_EXIT_OK : A2M_EXIT_ERROR;
}
