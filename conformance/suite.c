/*
** suite.c — `a2m conformance` (a2m-conformance): runs the conformance checks against a
** server it reaches only through the protocol, and reports one line each.
**
**   ok   core/recall: limit 1 returns one record
**   FAIL rpc: an empty array is refused with -32600 and id null — got ...
**   skip core/forget: a read-only server refuses forget too — the server accepts writes
**   3 checks skipped
**   118/120 checks passed
**
** This file is the runner: the command line, the table of groups, starting
** (and restarting) the server, watching what it writes, running each check
** and reporting its verdict, and the clean-up. The helpers the checks are
** written with (conformance.h) are in helpers.c and
** helpers_records.c; the checks themselves live in one file per
** capability. It links nothing of the server: only the client
** (a2m_client.h) and jansson, so the suite judges our server exactly as it
** judges anyone's.
**
** The runner keeps the suite going when the server does not: a check that
** loses the server (it crashed, or hung past the timeout) fails, and the
** next check starts a fresh one and calls memory/describe again, as spec §2
** requires of any new connection.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define A2M_CONFORMANCE_INTERNAL
#include "suite.h"

/*
** The groups, in the order they run. A new capability adds its group here,
** before conf_group_stdio, which must stay last because it ends the server.
*/
static const conf_group *const groups[] = {
	&conf_group_describe,
	&conf_group_rpc,
	&conf_group_remember,
	&conf_group_recall,
	&conf_group_timeline,
	&conf_group_forget,
	/* groups A: entries below */
	&conf_group_tiers,
	&conf_group_capacity,
	&conf_group_salience,
	&conf_group_scopes,
	&conf_group_sessions,
	&conf_group_sessions_owner,
	&conf_group_keys,
	/* groups B: entries below */
	&conf_group_embeddings,
	&conf_group_external,
	&conf_group_events,
	&conf_group_events_push,
	&conf_group_summarize,
	&conf_group_prompt,
	/* our extensions (docs/PROTOCOL.md), skipped where not declared */
	&conf_group_xwhere,
	&conf_group_xexpiry,
	&conf_group_xhistory,
	&conf_group_xdedup,
	&conf_group_xtouch,
	&conf_group_read_only,
	&conf_group_http,
	&conf_group_stdio,
};

const conf_method conf_methods[] = {
	{"memory/describe", "core"},
	{"memory/remember", "core"},
	{"memory/recall", "core"},
	{"memory/timeline", "core"},
	{"memory/forget", "core"},
	{"memory/promote", "tiers"},
	{"memory/consolidate", "tiers"},
	{"memory/reinforce", "salience"},
	{"memory/session/list", "sessions"},
	{"memory/session/close", "sessions"},
	{"memory/fetch", "keys"},
	{"memory/events", "events"},
	{"memory/events/subscribe", "events"},
	{"memory/events/unsubscribe", "events"},
	{"memory/summarize", "summarize"},
	{NULL, NULL},
};

const char *conf_capability_of(const char *method)
{
	for (const conf_method *m = conf_methods; m->method; m++) {
		if (strcmp(m->method, method) == 0)
			return m->capability;
	}
	return NULL;
}

/* How long each wait for the server may take, unless --timeout says. */
#define DEFAULT_TIMEOUT_MS 5000
/* Restarts that may fail in a row before the runner stops trying. */
#define MAX_RESTART_FAILURES 3
/* How many timeline-then-forget passes the clean-up may make. */
#define CLEAN_UP_ROUNDS 20
/* How much of a line --verbose shows. */
#define TRACE_SHOWN 400

/* ---- watching the stream ---- */

/* Why line is not a JSON-RPC 2.0 response or notification; NULL if it is. */
static const char *not_jsonrpc(const char *line, size_t len)
{
	json_error_t err;
	json_t *msg = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	const char *why = NULL;
	if (!msg)
		return "not JSON";
	json_t *ver = json_object_get(msg, "jsonrpc");
	json_t *id = json_object_get(msg, "id");
	json_t *method = json_object_get(msg, "method");
	json_t *result = json_object_get(msg, "result");
	json_t *error = json_object_get(msg, "error");
	if (!json_is_object(msg))
		why = "not a JSON object";
	else if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0)
		why = "jsonrpc is not \"2.0\"";
	else if (method) {
		/* A notification; a server never sends requests (spec §8). */
		if (id)
			why = "a request from the server (spec §8 forbids them)";
		else if (!json_is_string(method))
			why = "a notification whose method is not a string";
	} else if (!id)
		why = "neither a response (no id) nor a notification (no method)";
	else if (!json_is_string(id) && !json_is_number(id) && !json_is_null(id))
		why = "an id that is not a string, number or null";
	else if (!result == !error)
		why = "a response with both or neither of result and error";
	else if (error && (!json_is_object(error) ||
			   !json_is_integer(json_object_get(error, "code")) ||
			   !json_is_string(json_object_get(error, "message"))))
		why = "an error object without an integer code and a string message";
	json_decref(msg);
	return why;
}

static void show_bytes(FILE *out, const char *bytes, size_t len)
{
	size_t shown = len < TRACE_SHOWN ? len : TRACE_SHOWN;
	for (size_t i = 0; i < shown; i++) {
		unsigned char ch = (unsigned char)bytes[i];
		if (ch == '\n')
			fputs("\\n", out);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(out, "\\x%02x", ch);
		else
			fputc(ch, out);
	}
	if (shown < len)
		fprintf(out, "... (%zu bytes)", len);
	fputc('\n', out);
}

static void trace(void *user, enum a2m_client_dir dir, const char *bytes, size_t len)
{
	conf_ctx *cx = user;
	if (cx->verbose) {
		fputs(dir == A2M_CLIENT_SENT ? "  -> " : "  <- ", stderr);
		show_bytes(stderr, bytes, len);
	}
	if (dir != A2M_CLIENT_RECEIVED)
		return;
	cx->lines_received++;
	const char *why = not_jsonrpc(bytes, len);
	if (why && cx->lines_invalid++ == 0)
		snprintf(cx->first_invalid, sizeof cx->first_invalid, "%s: %.*s", why,
			 (int)(len < 160 ? len : 160), bytes);
}

size_t conf_stream_invalid(conf_ctx *cx, size_t *received, const char **first)
{
	*received = cx->lines_received;
	*first = cx->first_invalid;
	return cx->lines_invalid;
}

static int64_t limit_of(const json_t *limits, const char *name)
{
	json_t *v = json_object_get(limits, name);
	return json_is_integer(v) && json_integer_value(v) > 0 ? json_integer_value(v) : 0;
}

/*
** Starts the server and makes the memory/describe every connection begins
** with. Returns 0, or -1 when the server could not be started at all; a
** describe that fails is recorded in describe_error, not returned.
*/
static int connect_server(conf_ctx *cx)
{
	a2m_client *c;
	if (cx->http_url) {
		a2m_client_http_options opts;
		a2m_client_http_options_init(&opts);
		opts.bearer_token = cx->token;
		opts.ca_file = cx->cacert;
		if (a2m_client_connect_http(cx->http_url, &opts, &c) != A2M_CLIENT_OK) {
			snprintf(cx->describe_error, sizeof cx->describe_error,
				 "cannot use %s as an http:// or https:// URL", cx->http_url);
			return -1;
		}
	} else if (a2m_client_spawn_stdio(cx->server_argv, &c) != A2M_CLIENT_OK) {
		snprintf(cx->describe_error, sizeof cx->describe_error, "%s",
			 a2m_client_spawn_errmsg());
		return -1;
	}
	a2m_client_set_timeout(c, cx->timeout_ms);
	a2m_client_set_trace(c, trace, cx);
	cx->client = c;
	cx->lost = 0;

	json_decref(cx->describe);
	cx->describe = NULL;
	cx->describe_error[0] = '\0';
	memset(&cx->limits, 0, sizeof cx->limits);

	json_t *params = json_pack("{s:s}", "protocol", CONF_PROTOCOL);
	json_t *resp = NULL;
	int rc = a2m_client_request_json(c, "memory/describe", params, &resp);
	json_decref(params);
	json_t *result = json_object_get(resp, "result");
	if (rc != A2M_CLIENT_OK) {
		snprintf(cx->describe_error, sizeof cx->describe_error, "%s",
			 a2m_client_errmsg(c));
		cx->lost = 1;
	} else if (!json_is_object(result)) {
		char *text = json_dumps(resp, JSON_COMPACT);
		snprintf(cx->describe_error, sizeof cx->describe_error,
			 "memory/describe did not answer with a result object: %.300s",
			 text ? text : "?");
		free(text);
	} else {
		cx->describe = json_incref(result);
		json_t *limits = json_object_get(result, "limits");
		cx->limits.max_records_per_call = limit_of(limits, "max_records_per_call");
		cx->limits.max_recall_limit = limit_of(limits, "max_recall_limit");
		cx->limits.max_content_length = limit_of(limits, "max_content_length");
	}
	json_decref(resp);
	return 0;
}

static void disconnect_server(conf_ctx *cx)
{
	a2m_client_free(cx->client);
	cx->client = NULL;
}

/* Makes sure a usable server is there before a check. Returns 0 if so. */
static int ensure_server(conf_ctx *cx)
{
	if (cx->client && !cx->lost && a2m_client_alive(cx->client))
		return 0;
	if (cx->restart_failures >= MAX_RESTART_FAILURES)
		return -1;
	if (cx->client)
		fprintf(stderr, "a2m conformance: the server was lost; starting it again\n");
	disconnect_server(cx);
	if (connect_server(cx) != 0 || cx->lost) {
		cx->restart_failures++;
		return -1;
	}
	cx->restart_failures = 0;
	return 0;
}

/* ---- running ---- */

static void report(conf_ctx *cx, const conf_group *g, const conf_check *check)
{
	switch (cx->verdict) {
	case V_PASS:
		cx->passed++;
		printf("ok   %s: %s\n", g->name, check->name);
		break;
	case V_SKIP:
		cx->skipped++;
		printf("skip %s: %s — %s\n", g->name, check->name, cx->detail);
		break;
	case V_NONE:
		snprintf(cx->detail, sizeof cx->detail, "suite bug: the check gave no verdict");
		/* fall through */
	case V_FAIL:
		cx->failed++;
		printf("FAIL %s: %s — %s\n", g->name, check->name, cx->detail);
		break;
	}
	fflush(stdout);
}

static void run_check(conf_ctx *cx, const conf_group *g, const conf_check *check)
{
	cx->verdict = V_NONE;
	cx->detail[0] = '\0';
	if (cx->verbose)
		fprintf(stderr, "[%s: %s]\n", g->name, check->name);
	if (ensure_server(cx) != 0) {
		conf_fail(cx, "no server to check: %s", cx->describe_error);
	} else {
		/* Whatever an earlier check left unread must not be taken for
		** this one's answer. */
		a2m_client_discard_pending(cx->client);
		check->run(cx, check->arg);
		if (cx->client)
			a2m_client_set_timeout(cx->client, cx->timeout_ms);
	}
	conf_release_scratch(cx);
	report(cx, g, check);
}

/*
** Removes what this run wrote, so a persistent store is left as it was
** found. Only when a timeline of the same filter shows it selects nothing
** but our own records: a forget with a `where` the server mishandles could
** otherwise empty someone's store.
*/
static void clean_up(conf_ctx *cx)
{
	if (!cx->wrote || cx->read_only)
		return;
	/* A server may cap a timeline it was given no limit for: repeat. */
	for (int round = 0; round < CLEAN_UP_ROUNDS; round++) {
		if (ensure_server(cx) != 0)
			return;
		cx->verdict = V_NONE;
		json_t *result = conf_result(cx, "memory/timeline",
					     json_pack("{s:{s:s}}", "where", "cfrun", cx->run));
		json_t *records = json_object_get(result, "records");
		size_t i;
		json_t *rec;
		int ours = json_is_array(records) && json_array_size(records) > 0;
		json_array_foreach(records, i, rec) {
			json_t *run = json_object_get(json_object_get(rec, "metadata"), "cfrun");
			if (!json_is_string(run) || strcmp(json_string_value(run), cx->run) != 0)
				ours = 0;
		}
		json_int_t forgotten = 0;
		if (ours) {
			result = conf_result(cx, "memory/forget",
					     json_pack("{s:{s:s}}", "where", "cfrun", cx->run));
			forgotten = json_integer_value(json_object_get(result, "forgotten"));
			if (cx->verbose)
				fprintf(stderr, "[clean-up: forgot %lld]\n", (long long)forgotten);
		}
		conf_release_scratch(cx);
		cx->verdict = V_NONE;
		if (forgotten <= 0)
			return;
	}
}

static int group_selected(const conf_group *g, char **only, size_t n_only)
{
	if (n_only == 0)
		return 1;
	for (size_t i = 0; i < n_only; i++) {
		if (strncmp(g->name, only[i], strlen(only[i])) == 0)
			return 1;
	}
	return 0;
}

/*
** Why group g cannot run over the transport in use, or NULL when it can.
** The stdio group checks the framing of spec §8.2, the http group the
** binding of §8.3. The scopes group plays several owners from one client,
** which over HTTP is exactly what §6 forbids: there the owner is the
** authenticated principal, and the http group checks that instead.
*/
static const char *not_on_this_transport(conf_ctx *cx, const conf_group *g)
{
	if (g == &conf_group_stdio && cx->http_url)
		return "the server is reached over HTTP; these check the stdio binding (spec §8.2)";
	if (g == &conf_group_http && !cx->http_url)
		return "the server is reached over stdio; these check the HTTP binding (spec §8.3)";
	if (g == &conf_group_scopes && cx->http_url)
		return "over HTTP the owner is the authenticated principal (spec §6), so one "
		       "client cannot play several owners; the http group checks that rule";
	return NULL;
}

static void run_group(conf_ctx *cx, const conf_group *g)
{
	const char *elsewhere = not_on_this_transport(cx, g);
	for (size_t i = 0; i < g->n_checks; i++) {
		const conf_check *check = &g->checks[i];
		if (elsewhere && !(g->capability && !conf_has_capability(cx, g->capability))) {
			cx->verdict = V_SKIP;
			snprintf(cx->detail, sizeof cx->detail, "%s", elsewhere);
			report(cx, g, check);
			continue;
		}
		if (g->capability && !conf_has_capability(cx, g->capability)) {
			cx->verdict = V_SKIP;
			if (cx->describe)
				snprintf(cx->detail, sizeof cx->detail,
					 "the server does not declare \"%s\"", g->capability);
			else
				snprintf(cx->detail, sizeof cx->detail,
					 "memory/describe failed, so \"%s\" is not known to be "
					 "declared", g->capability);
			report(cx, g, check);
			continue;
		}
		run_check(cx, g, check);
	}
}

/*
** --list: every check's name as the report prints it ("GROUP: CHECK"), one
** a line in the order they run, without starting a server. The claims
** register (conformance/claims.json, docs/CLAIMS.md) names checks so, and
** its tool reads this list to know which names exist.
*/
static int list_checks(void)
{
	for (size_t g = 0; g < CONF_COUNT(groups); g++) {
		for (size_t i = 0; i < groups[g]->n_checks; i++)
			printf("%s: %s\n", groups[g]->name, groups[g]->checks[i].name);
	}
	return fflush(stdout) == 0 && !ferror(stdout) ? CONF_EXIT_OK : CONF_EXIT_ERROR;
}

static void usage(FILE *out)
{
	fputs("usage: a2m conformance [--verbose] [--timeout SECONDS] [--group NAME]...\n"
	      "                       --stdio CMD [ARGS...]\n"
	      "       a2m conformance [options] --http URL [--token TOKEN] [--cacert FILE]\n"
	      "       a2m conformance --list\n"
	      "\n"
	      "Checks an A2M 0.1 server against the specification, speaking only the\n"
	      "protocol: starts CMD and talks JSON-RPC over its stdin and stdout (spec §8.2),\n"
	      "or POSTs to the running server at URL (spec §8.3, with the checks of the\n"
	      "HTTP binding itself), and prints one line per check (ok, FAIL or skip),\n"
	      "then \"N/M checks passed\".\n"
	      "Exit status 0 when no check failed, 1 when one did, 2 for a usage error.\n"
	      "\n"
	      "The checks write and forget records. Point it at a scratch store.\n"
	      "\n"
	      "  --stdio CMD...    the server command; everything after it is its argv\n"
	      "  --http URL        the server's endpoint, e.g. http://127.0.0.1:8778/\n"
	      "  --token TOKEN     with --http: a bearer token the server accepts; adds the\n"
	      "                    checks of authentication and owner = principal (spec §6)\n"
	      "  --cacert FILE     with --http: trust this PEM certificate for https\n"
	      "  --timeout S       how long to wait for each answer (default 5)\n"
	      "  --group NAME      run only the groups whose name starts with NAME\n"
	      "                    (repeatable), e.g. --group core/recall\n"
	      "  --verbose         show every line sent and received on stderr\n"
	      "  --list            print every check's name (\"GROUP: CHECK\") and exit\n"
	      "  --help            this text\n",
	      out);
}

static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "a2m conformance: %s%s (try --help)\n", what, arg);
	return CONF_EXIT_USAGE;
}

int a2m_cmd_conformance(int argc, char **argv)
{
	conf_ctx cx;
	memset(&cx, 0, sizeof cx);
	cx.timeout_ms = DEFAULT_TIMEOUT_MS;
	char *only[16];
	size_t n_only = 0;

	int i;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return CONF_EXIT_OK;
		} else if (strcmp(a, "--list") == 0) {
			return list_checks();
		} else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
			cx.verbose = 1;
		} else if (strcmp(a, "--timeout") == 0) {
			char *end;
			if (i + 1 >= argc)
				return usage_error("a number of seconds must follow ", a);
			double s = strtod(argv[++i], &end);
			if (*end || !(s > 0 && s <= 3600))
				return usage_error("bad --timeout ", argv[i]);
			cx.timeout_ms = (int)(s * 1000);
		} else if (strcmp(a, "--group") == 0) {
			if (i + 1 >= argc)
				return usage_error("a group name must follow ", a);
			if (n_only == CONF_COUNT(only))
				return usage_error("too many options: ", a);
			only[n_only++] = argv[++i];
		} else if (strcmp(a, "--http") == 0) {
			if (i + 1 >= argc)
				return usage_error("a URL must follow ", a);
			cx.http_url = argv[++i];
			if (strncmp(cx.http_url, "http://", 7) != 0 &&
			    strncmp(cx.http_url, "https://", 8) != 0)
				return usage_error("--http wants an http:// or https:// URL, not ",
						   cx.http_url);
		} else if (strcmp(a, "--token") == 0) {
			if (i + 1 >= argc || !argv[i + 1][0])
				return usage_error("a token must follow ", a);
			cx.token = argv[++i];
		} else if (strcmp(a, "--cacert") == 0) {
			if (i + 1 >= argc || !argv[i + 1][0])
				return usage_error("a PEM file must follow ", a);
			cx.cacert = argv[++i];
		} else if (strcmp(a, "--stdio") == 0) {
			break;
		} else {
			return usage_error("unknown option ", a);
		}
	}
	if (cx.http_url && i < argc)
		return usage_error("--http and --stdio exclude each other", "");
	if (!cx.http_url && (cx.token || cx.cacert))
		return usage_error("--token and --cacert go with --http", "");
	if (!cx.http_url) {
		if (i >= argc)
			return usage_error("say which server to check: --stdio CMD [ARGS...] "
					   "or --http URL", "");
		if (i + 1 >= argc)
			return usage_error("--stdio needs a command", "");
		cx.server_argv = argv + i + 1;
	}

	conf_make_run_token(&cx);
	if (connect_server(&cx) != 0) {
		fprintf(stderr, "a2m conformance: %s\n", cx.describe_error);
		return CONF_EXIT_ERROR;
	}

	int cleaned = 0;
	for (size_t g = 0; g < CONF_COUNT(groups); g++) {
		if (groups[g]->ends_session && !cleaned) {
			clean_up(&cx);
			cleaned = 1;
		}
		if (group_selected(groups[g], only, n_only))
			run_group(&cx, groups[g]);
	}
	if (!cleaned)
		clean_up(&cx);

	disconnect_server(&cx);
	json_decref(cx.describe);
	free(cx.kept);
	free(cx.strs);

	printf("%u check%s skipped\n", cx.skipped, cx.skipped == 1 ? "" : "s");
	printf("%u/%u checks passed\n", cx.passed, cx.passed + cx.failed);
	return cx.failed ? CONF_EXIT_ERROR : CONF_EXIT_OK;
}
