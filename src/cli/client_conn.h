/*
** client_conn.h — the A2M side of the client commands and of `a2m mcp`: one
** connection to one memory, which is either an embedded store (liba2m in
** this process, spec §8.1) or a remote server reached over stdio (§8.2) or
** HTTP (§8.3), behind one call function.
**
** Opening a connection negotiates: it calls memory/describe first (spec §2
** requires it before any other method) and keeps the answer, so callers can
** ask which capabilities are declared before they call anything.
*/
#ifndef A2M_CLI_CLIENT_CONN_H
#define A2M_CLI_CLIENT_CONN_H

#include <jansson.h>

#include "a2m.h"
#include "cli/store_options.h"

/* Where the memory is. */
typedef enum cli_conn_kind {
	CLI_CONN_EMBEDDED = 0, /* a store opened in this process */
	CLI_CONN_STDIO    = 1, /* a server we start as a child (spec §8.2) */
	CLI_CONN_HTTP     = 2  /* a server at a URL (spec §8.3) */
} cli_conn_kind;

/* The default URL of the client commands: the local HTTP server. */
#define CLI_DEFAULT_URL "http://127.0.0.1:8778/"

/*
** What to connect to. Fill with cli_target_init() and cli_target_option().
** Strings and argv are borrowed from the command line.
*/
typedef struct cli_target {
	cli_conn_kind kind;
	int           kind_set;   /* an option chose the kind */
	cli_store     store;      /* CLI_CONN_EMBEDDED: the store options */
	int           mkdir_db;   /* create the database's directory if missing */
	char        **argv;       /* CLI_CONN_STDIO: NULL-terminated command */
	const char   *url;        /* CLI_CONN_HTTP */
	const char   *token;      /* CLI_CONN_HTTP: bearer token, or NULL */
	int           timeout_ms; /* remote calls; 0 = the client default */
} cli_target;

/*
** Sets t to kind with its defaults: for an embedded store $A2M_DB or
** ./a2m.db; for HTTP $A2M_URL or CLI_DEFAULT_URL, token $A2M_TOKEN.
** Returns 0, or -1 when memory ran out. Release with cli_target_free().
*/
int cli_target_init(cli_target *t, cli_conn_kind kind);

/* Releases what cli_target_init made. */
void cli_target_free(cli_target *t);

/*
** Flags for cli_target_option: which kinds of memory a command accepts.
** The client commands take remote servers (and --db); `a2m mcp` takes all.
*/
#define CLI_TARGET_EMBEDDED 1 /* --db, --memory and the store options */
#define CLI_TARGET_REMOTE   2 /* --stdio, --http, --token, --timeout */

/*
** Consumes the option at argv[*i] if it is a connection option allowed by
** flags, advancing *i past its value. `--stdio` takes every remaining
** argument as the server command, so it must come last; *i is then argc.
** Returns 1 when the option was consumed, 0 when it is not a connection
** option, -1 on a usage error (a one-line reason in why).
*/
int cli_target_option(cli_target *t, int flags, int argc, char **argv, int *i,
		      char *why, size_t why_size);

/* The options cli_target_option accepts, for a --help text. */
extern const char cli_target_help_remote[];
extern const char cli_target_help_embedded[];

/* One open connection. */
typedef struct cli_conn cli_conn;

/* How a call failed. */
typedef enum cli_err_kind {
	CLI_ERR_NONE      = 0,
	CLI_ERR_PROTOCOL  = 1, /* the server answered with a JSON-RPC error */
	CLI_ERR_TRANSPORT = 2  /* no answer: could not connect, timed out, closed */
} cli_err_kind;

typedef struct cli_error {
	cli_err_kind kind;
	int          code;         /* CLI_ERR_PROTOCOL: the JSON-RPC error code */
	char         message[512]; /* for humans */
	json_t      *data;         /* CLI_ERR_PROTOCOL: the error's data, owned; or NULL */
} cli_error;

/* The spec §7 name of a JSON-RPC error code ("INVALID_PARAMS"), or "ERROR"
** for a code the spec does not name. Static. */
const char *cli_error_name(int code);

/* Releases err->data and resets err. */
void cli_error_clear(cli_error *err);

/*
** Connects (opening the store, starting the server, or reaching the URL) and
** negotiates with memory/describe, passing owner when it is not NULL.
** Returns 0 and sets *out, which the caller frees with cli_conn_close().
** On failure returns -1, sets *out to NULL and fills err.
*/
int cli_conn_open(const cli_target *t, const char *owner, cli_conn **out, cli_error *err);

/* The memory/describe result of the negotiation; borrowed. */
const json_t *cli_conn_describe(const cli_conn *c);

/* Whether the server declared capability (always true for "core"). */
int cli_conn_declares(const cli_conn *c, const char *capability);

/*
** The capability a method belongs to (spec §2's table), "core" for the core
** methods, or NULL when it is not an A2M method.
*/
const char *cli_method_capability(const char *method);

/*
** Calls method with params (borrowed; NULL for none) and waits for the
** answer. Returns 0 and sets *result (a new reference) on success. On
** failure returns -1, sets *result to NULL and fills err.
**
** retry_safe: the call may be sent twice without effect, e.g. a remember
** whose every record carries a client id (spec §3.2, DECISIONS 011). Such a
** call that failed in transport is sent once more before failing.
*/
int cli_conn_call(cli_conn *c, const char *method, const json_t *params, int retry_safe,
		  json_t **result, cli_error *err);

/* Closes the connection (commits and closes an embedded store, lets a child
** server exit). NULL is a no-op. */
void cli_conn_close(cli_conn *c);

/*
** Writes a fresh client id for a record into out (A2M_ID_LEN bytes, see
** util/text.h). Returns 0, or -1 when the random source failed.
*/
int cli_new_record_id(char *out);

#endif
