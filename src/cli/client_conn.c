/*
** client_conn.c — one connection to one memory, embedded or remote (see
** client_conn.h).
**
** The embedded store is called through a2m_handle(), with the request
** serialised to JSON and the answer parsed back, exactly as if it had
** crossed a pipe: spec §8.1 asks in-process bindings to do that, and it
** means the commands and the bridge behave identically against a store in
** this process and one at the other end of a network.
*/
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "a2m_client.h"
#include "client/client_json.h"
#include "cli/client_conn.h"
#include "util/clock.h"
#include "util/json_write.h"
#include "util/text.h"

struct cli_conn {
	cli_conn_kind kind;
	a2m          *store;   /* CLI_CONN_EMBEDDED */
	a2m_client   *client;  /* CLI_CONN_STDIO, CLI_CONN_HTTP */
	json_t       *describe;
	long long     next_id; /* embedded request ids */
	int           last_rc; /* the client code of the last remote call */
};

const char cli_target_help_remote[] =
	"  --http URL            an A2M server over HTTP (default $A2M_URL, else\n"
	"                        " CLI_DEFAULT_URL ")\n"
	"  --token TOKEN         bearer token for --http (default $A2M_TOKEN)\n"
	"  --timeout MS          how long to wait for each answer (default 10000)\n"
	"  --stdio CMD [ARGS...] start CMD as an A2M server on stdio; everything after\n"
	"                        --stdio is its command line, so it comes last\n";

const char cli_target_help_embedded[] =
	"  --db PATH             an embedded SQLite store (default $A2M_DB, else ./a2m.db);\n"
	"                        its directory is created if missing\n"
	"  --memory              an embedded store in memory only: gone at exit\n"
	"  --postgres URL        an embedded server on a PostgreSQL deployment (default\n"
	"                        $A2M_POSTGRES when set; docs/POSTGRES.md)\n"
	"  --config FILE         embedded store: JSON configuration (docs/CONFIG.md)\n"
	"  --capabilities LIST   embedded store: declare only these, e.g. core,keys\n"
	"  --read-only           embedded store: refuse every write (-32004)\n"
	"  --name NAME           embedded store: the name describe reports\n"
	"  --synchronous-normal  embedded store: faster commits that survive a crash of\n"
	"                        the process but not a power loss\n"
	"  --vector-search MODE  embedded store: exact (default) or quantized vector\n"
	"                        search (--vector-pool N rows per result, default 20)\n";

int cli_target_init(cli_target *t, cli_conn_kind kind)
{
	memset(t, 0, sizeof *t);
	t->kind = kind;
	if (cli_store_init(&t->store) != 0)
		return -1;
	const char *url = getenv("A2M_URL");
	t->url = url && *url ? url : CLI_DEFAULT_URL;
	const char *token = getenv("A2M_TOKEN");
	t->token = token && *token ? token : NULL;
	t->mkdir_db = 1;
	return 0;
}

void cli_target_free(cli_target *t)
{
	cli_store_free(&t->store);
}

/* The value after argv[*i], or NULL (and a reason) when there is none. */
static const char *value_of(int argc, char **argv, int *i, const char *what, char *why,
			    size_t why_size)
{
	if (*i + 1 >= argc || !*argv[*i + 1]) {
		snprintf(why, why_size, "%s needs %s", argv[*i], what);
		return NULL;
	}
	return argv[++*i];
}

int cli_target_option(cli_target *t, int flags, int argc, char **argv, int *i,
		      char *why, size_t why_size)
{
	const char *a = argv[*i], *v;
	if (flags & CLI_TARGET_REMOTE) {
		if (strcmp(a, "--stdio") == 0) {
			if (*i + 1 >= argc) {
				snprintf(why, why_size, "--stdio needs the server command after it");
				return -1;
			}
			t->kind = CLI_CONN_STDIO;
			t->kind_set = 1;
			t->argv = argv + *i + 1;
			*i = argc;
			return 1;
		}
		if (strcmp(a, "--http") == 0) {
			if (!(v = value_of(argc, argv, i, "a URL", why, why_size)))
				return -1;
			t->kind = CLI_CONN_HTTP;
			t->kind_set = 1;
			t->url = v;
			return 1;
		}
		if (strcmp(a, "--token") == 0) {
			if (!(v = value_of(argc, argv, i, "a token", why, why_size)))
				return -1;
			t->token = v;
			return 1;
		}
		if (strcmp(a, "--timeout") == 0) {
			if (!(v = value_of(argc, argv, i, "a number of milliseconds", why, why_size)))
				return -1;
			char *end;
			errno = 0;
			long n = strtol(v, &end, 10);
			if (errno || *end || n < 1 || n > 3600000) {
				snprintf(why, why_size, "--timeout must be 1..3600000 milliseconds, not '%s'", v);
				return -1;
			}
			t->timeout_ms = (int)n;
			return 1;
		}
	}
	if (flags & CLI_TARGET_EMBEDDED) {
		int rc = cli_store_option(&t->store, argc, argv, i, why, why_size);
		/* Naming the store's engine or file makes the memory embedded. */
		if (rc > 0 && (strcmp(a, "--db") == 0 || strcmp(a, "--memory") == 0 ||
			       strcmp(a, "--postgres") == 0)) {
			t->kind = CLI_CONN_EMBEDDED;
			t->kind_set = 1;
		}
		if (rc)
			return rc;
	}
	return 0;
}

void cli_error_clear(cli_error *err)
{
	json_decref(err->data);
	memset(err, 0, sizeof *err);
}

static void set_error(cli_error *err, cli_err_kind kind, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set_error(cli_error *err, cli_err_kind kind, int code, const char *fmt, ...)
{
	cli_error_clear(err);
	err->kind = kind;
	err->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
}

const char *cli_error_name(int code)
{
	switch (code) {
	case A2M_PARSE_ERROR:              return "PARSE_ERROR";
	case A2M_INVALID_REQUEST:          return "INVALID_REQUEST";
	case A2M_METHOD_NOT_FOUND:         return "METHOD_NOT_FOUND";
	case A2M_INVALID_PARAMS:           return "INVALID_PARAMS";
	case A2M_INTERNAL_ERROR:           return "INTERNAL_ERROR";
	case A2M_UNKNOWN_RECORD:           return "UNKNOWN_RECORD";
	case A2M_UNKNOWN_TIER:             return "UNKNOWN_TIER";
	case A2M_CAPABILITY_NOT_SUPPORTED: return "CAPABILITY_NOT_SUPPORTED";
	case A2M_READ_ONLY:                return "READ_ONLY";
	case A2M_SCOPE_DENIED:             return "SCOPE_DENIED";
	case A2M_QUOTA_EXCEEDED:           return "QUOTA_EXCEEDED";
	case A2M_PROTOCOL_NOT_SUPPORTED:   return "PROTOCOL_NOT_SUPPORTED";
	case A2M_EMBEDDING_MISMATCH:       return "EMBEDDING_MISMATCH";
	default:                           return "ERROR";
	}
}

/* ---- opening ---- */

/*
** Creates the directories above path (mode 0700: a memory is private), so
** `--db ~/.a2m/memory.db` works on a fresh machine. Returns 0, or -1 with
** errno set.
*/
static int make_parent_dirs(const char *path)
{
	char *copy = strdup(path);
	if (!copy)
		return -1;
	int rc = 0;
	char *slash = strrchr(copy, '/');
	if (slash && slash != copy) {
		*slash = '\0';
		for (char *p = copy + 1; rc == 0; p++) {
			if (*p != '/' && *p != '\0')
				continue;
			char saved = *p;
			*p = '\0';
			if (mkdir(copy, 0700) != 0 && errno != EEXIST)
				rc = -1;
			*p = saved;
			if (saved == '\0')
				break;
		}
	}
	free(copy);
	return rc;
}

static int open_embedded(const cli_target *t, cli_conn *c, cli_error *err)
{
	a2m_config *cfg = t->store.cfg;
	if (!cli_store_in_memory(&t->store) && !cli_store_postgres(&t->store) && t->mkdir_db &&
	    strcmp(a2m_config_get(cfg, "read_only"), "0") == 0) {
		const char *path = cli_store_path(&t->store);
		if (make_parent_dirs(path) != 0) {
			set_error(err, CLI_ERR_TRANSPORT, 0, "cannot create the directory of %s: %s",
				  path, strerror(errno));
			return -1;
		}
	}
	char *msg = NULL;
	if (a2m_open(cfg, &c->store, &msg) != A2M_OK) {
		set_error(err, CLI_ERR_TRANSPORT, 0, "%s", msg ? msg : "cannot open the store");
		a2m_free(msg);
		return -1;
	}
	return 0;
}

/* An HTTP handle for t->url; nothing is sent until the first call. */
static int open_http(const cli_target *t, a2m_client **out, cli_error *err)
{
	a2m_client_http_options opts;
	a2m_client_http_options_init(&opts);
	opts.bearer_token = t->token;
	opts.timeout_ms = t->timeout_ms;
	int rc = a2m_client_connect_http(t->url, &opts, out);
	if (rc != A2M_CLIENT_OK) {
		set_error(err, CLI_ERR_TRANSPORT, 0, "cannot use %s: %s", t->url,
			  rc == A2M_CLIENT_ERR_MISUSE ? "not an http:// or https:// URL" :
			  a2m_client_strerror(rc));
		return -1;
	}
	return 0;
}

static int open_remote(const cli_target *t, cli_conn *c, cli_error *err)
{
	if (t->kind == CLI_CONN_STDIO) {
		if (a2m_client_spawn_stdio(t->argv, &c->client) != A2M_CLIENT_OK) {
			set_error(err, CLI_ERR_TRANSPORT, 0, "cannot start %s: %s", t->argv[0],
				  a2m_client_spawn_errmsg());
			return -1;
		}
	} else if (open_http(t, &c->client, err) != 0) {
		return -1;
	}
	if (t->timeout_ms > 0)
		a2m_client_set_timeout(c->client, t->timeout_ms);
	return 0;
}

int cli_conn_open(const cli_target *t, const char *owner, cli_conn **out, cli_error *err)
{
	*out = NULL;
	cli_error_clear(err);
	cli_conn *c = calloc(1, sizeof *c);
	if (!c) {
		set_error(err, CLI_ERR_TRANSPORT, 0, "out of memory");
		return -1;
	}
	c->kind = t->kind;
	c->next_id = 1;
	int rc = t->kind == CLI_CONN_EMBEDDED ? open_embedded(t, c, err) : open_remote(t, c, err);
	if (rc != 0) {
		cli_conn_close(c);
		return -1;
	}
	/* Spec §2: describe comes first; §4.1: say which version we speak. */
	json_t *params = json_pack("{s:s}", "protocol", A2M_PROTOCOL);
	if (params && owner)
		json_object_set_new(params, "owner", json_string(owner));
	json_t *result = NULL;
	rc = params ? cli_conn_call(c, "memory/describe", params, 1, &result, err) : -1;
	json_decref(params);
	if (rc != 0) {
		if (!params)
			set_error(err, CLI_ERR_TRANSPORT, 0, "out of memory");
		cli_conn_close(c);
		return -1;
	}
	const char *proto = json_string_value(json_object_get(result, "protocol"));
	if (!json_is_object(result) || !proto || strcmp(proto, A2M_PROTOCOL) != 0) {
		/* While the major version is 0 only an exact minor match is
		** compatible (spec §9). */
		set_error(err, CLI_ERR_PROTOCOL, A2M_PROTOCOL_NOT_SUPPORTED,
			  "the server speaks %s, not %s", proto ? proto : "no protocol version",
			  A2M_PROTOCOL);
		json_decref(result);
		cli_conn_close(c);
		return -1;
	}
	c->describe = result;
	*out = c;
	return 0;
}

const json_t *cli_conn_describe(const cli_conn *c)
{
	return c->describe;
}

int cli_conn_declares(const cli_conn *c, const char *capability)
{
	if (strcmp(capability, "core") == 0)
		return 1;
	const json_t *caps = json_object_get(c->describe, "capabilities");
	for (size_t i = 0; i < json_array_size(caps); i++) {
		const char *s = json_string_value(json_array_get(caps, i));
		if (s && strcmp(s, capability) == 0)
			return 1;
	}
	return 0;
}

const char *cli_method_capability(const char *method)
{
	static const struct {
		const char *method, *capability;
	} table[] = {
		{"memory/describe", "core"},         {"memory/remember", "core"},
		{"memory/recall", "core"},           {"memory/timeline", "core"},
		{"memory/forget", "core"},           {"memory/promote", "tiers"},
		{"memory/consolidate", "tiers"},     {"memory/reinforce", "salience"},
		{"memory/session/list", "sessions"}, {"memory/session/close", "sessions"},
		{"memory/fetch", "keys"},            {"memory/events", "events"},
		{"memory/events/subscribe", "events"}, {"memory/events/unsubscribe", "events"},
		{"memory/summarize", "summarize"},
	};
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (strcmp(table[i].method, method) == 0)
			return table[i].capability;
	return NULL;
}

/* ---- calling ---- */

/* Splits a whole JSON-RPC response into result or error. Takes resp. */
static int take_response(json_t *resp, json_t **result, cli_error *err)
{
	const json_t *error = json_object_get(resp, "error");
	json_t *res = json_object_get(resp, "result");
	if (json_is_object(error)) {
		const json_t *code = json_object_get(error, "code");
		const char *msg = json_string_value(json_object_get(error, "message"));
		set_error(err, CLI_ERR_PROTOCOL,
			  json_is_integer(code) ? (int)json_integer_value(code) : A2M_INTERNAL_ERROR,
			  "%s", msg ? msg : "(no message)");
		json_t *data = json_object_get(error, "data");
		if (data)
			err->data = json_incref(data);
		json_decref(resp);
		return -1;
	}
	if (!res) {
		set_error(err, CLI_ERR_TRANSPORT, 0, "the server sent a response with neither "
			  "result nor error");
		json_decref(resp);
		return -1;
	}
	*result = json_incref(res);
	json_decref(resp);
	return 0;
}

static int call_embedded(cli_conn *c, const char *method, const json_t *params,
			 json_t **result, cli_error *err)
{
	json_t *req = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id",
				(json_int_t)c->next_id++, "method", method);
	if (req && params)
		json_object_set(req, "params", (json_t *)params);
	size_t len = 0;
	char *text = req ? a2m_json_write(req, &len) : NULL;
	json_decref(req);
	char *reply = NULL;
	if (text)
		a2m_handle(c->store, text, len, &reply);
	free(text);
	if (!reply) {
		set_error(err, CLI_ERR_TRANSPORT, 0, "out of memory calling %s", method);
		return -1;
	}
	json_error_t jerr;
	json_t *resp = json_loads(reply, JSON_ALLOW_NUL, &jerr);
	a2m_free(reply);
	if (!resp) {
		set_error(err, CLI_ERR_TRANSPORT, 0, "unreadable answer to %s: %s", method, jerr.text);
		return -1;
	}
	return take_response(resp, result, err);
}

static int call_remote(cli_conn *c, const char *method, const json_t *params,
		       json_t **result, cli_error *err)
{
	json_t *resp = NULL;
	int rc = a2m_client_request_json(c->client, method, params, &resp);
	c->last_rc = rc;
	if (rc != A2M_CLIENT_OK) {
		const char *detail = a2m_client_errmsg(c->client);
		set_error(err, CLI_ERR_TRANSPORT, 0, "%s: %s", a2m_client_strerror(rc),
			  detail && *detail ? detail : "no detail");
		return -1;
	}
	if (!json_is_object(resp)) {
		json_decref(resp);
		set_error(err, CLI_ERR_TRANSPORT, 0, "the server answered %s with a non-object", method);
		return -1;
	}
	return take_response(resp, result, err);
}

/*
** Whether a failed remote call may succeed if sent again: over HTTP when
** the request timed out or the connection failed (the next request opens a
** new one) but not when the server answered with an HTTP error status; over
** stdio only while the server is still running.
*/
static int worth_retrying(cli_conn *c)
{
	if (c->kind == CLI_CONN_HTTP)
		return c->last_rc == A2M_CLIENT_ERR_TIMEOUT || !a2m_client_alive(c->client);
	return a2m_client_alive(c->client);
}

int cli_conn_call(cli_conn *c, const char *method, const json_t *params, int retry_safe,
		  json_t **result, cli_error *err)
{
	*result = NULL;
	cli_error_clear(err);
	if (c->kind == CLI_CONN_EMBEDDED)
		return call_embedded(c, method, params, result, err);
	int rc = call_remote(c, method, params, result, err);
	/* A lost answer looks the same as a lost request; only a call that is
	** safe to repeat may find out which by repeating it (DECISIONS 011). */
	if (rc != 0 && err->kind == CLI_ERR_TRANSPORT && retry_safe && worth_retrying(c)) {
		cli_error_clear(err);
		rc = call_remote(c, method, params, result, err);
	}
	return rc;
}

void cli_conn_close(cli_conn *c)
{
	if (!c)
		return;
	a2m_close(c->store);
	a2m_client_free(c->client);
	json_decref(c->describe);
	free(c);
}

int cli_new_record_id(char *out)
{
	return a2m_id_generate(a2m_clock_now_ms(), out);
}
