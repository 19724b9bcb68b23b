/*
** client_cmds.h — what the client commands share: the parsed command line of
** one invocation and the helpers every verb uses. client_cmds.c parses and
** dispatches; client_verbs.c holds one function per verb; client_follow.c
** is `events --follow`.
*/
#ifndef A2M_CLI_CLIENT_CMDS_H
#define A2M_CLI_CLIENT_CMDS_H

#include <jansson.h>

#include "cli/client_conn.h"

/* The verb-specific options; each verb accepts a subset (client_cmds.c). */
enum cmd_opt {
	O_WHERE, O_LIMIT, O_TIER, O_KEY, O_KEY_PREFIX, O_SESSION, O_META, O_ROLE, O_ID,
	O_GROUP, O_QUERY, O_AMOUNT, O_SALIENCE, O_CURSOR, O_KIND, O_FOLLOW, O_INTERVAL,
	O_LINES, O_MIN_SCORE, O_LONG, O_INTO,
	O_COUNT
};

#define OPT(o) (1ul << (o))

typedef struct cmd_ctx cmd_ctx;

/* One verb: `a2m recall`, `a2m session close`. */
typedef struct cmd_verb {
	const char   *name;      /* as typed: "recall", "session close" */
	const char   *method;    /* the A2M method it calls */
	const char   *synopsis;  /* arguments after the name, for the help */
	const char   *summary;   /* one line for `a2m --help` */
	const char   *details;   /* more lines for `a2m CMD --help`, or NULL */
	unsigned long options;   /* OPT() bits it accepts */
	int           (*run)(cmd_ctx *cx);
} cmd_verb;

struct cmd_ctx {
	const cmd_verb *verb;
	const char     *prog;           /* "a2m recall", for messages */
	cli_target      target;
	cli_conn       *conn;
	const char     *owner;          /* --owner, or NULL */
	int             json;           /* --json */
	int             long_form;      /* -l/--long */
	const char     *opt[O_COUNT];   /* each option's (last) value; "" for a flag */
	json_t         *ids;            /* --id values and positional ids, in order */
	json_t         *kinds;          /* --kind values */
	char          **args;           /* positional arguments */
	int             nargs;
};

/* The verbs, in the order `a2m --help` lists them (client_verbs.c). */
extern const cmd_verb cmd_verbs[];
extern const size_t cmd_verb_count;

/*
** Prints "a2m VERB: message" on stderr and returns A2M_EXIT_USAGE, for a
** command line that cannot be run (one line: spec of the CLI).
*/
int cmd_usage_error(cmd_ctx *cx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
** Calls method with params (taken) after checking that the server declares
** its capability (spec §2: a client must not call an undeclared one). On
** success returns 0 and sets *result. Otherwise prints the error on stderr
** ("a2m recall: error -32602 INVALID_PARAMS: ...") and returns
** A2M_EXIT_ERROR.
*/
int cmd_call(cmd_ctx *cx, const char *method, json_t *params, int retry_safe,
	     json_t **result);

/* A fresh params object carrying --owner when given. NULL when out of memory. */
json_t *cmd_params(cmd_ctx *cx);

/*
** Option values into params: an integer >= min, a number, a JSON object.
** Each returns 0 (absent options add nothing) or, for a malformed value,
** prints a usage error and returns A2M_EXIT_USAGE.
*/
int cmd_put_int(cmd_ctx *cx, enum cmd_opt o, long long min, json_t *params, const char *name);
int cmd_put_number(cmd_ctx *cx, enum cmd_opt o, json_t *params, const char *name);
int cmd_put_object(cmd_ctx *cx, enum cmd_opt o, json_t *params, const char *name);
/* A string option into params (absent adds nothing). */
void cmd_put_string(cmd_ctx *cx, enum cmd_opt o, json_t *params, const char *name);

/* Writes v as one line of compact JSON on stdout (the --json output). */
void cmd_print_json(const json_t *v);

/* Writes text to stdout; returns A2M_EXIT_OK, or A2M_EXIT_ERROR when it
** could not be written. Takes text (malloc'd; NULL means out of memory). */
int cmd_print(cmd_ctx *cx, char *text);

/* `a2m events` with --follow: polls until SIGINT or SIGTERM (client_follow.c). */
int cmd_follow_events(cmd_ctx *cx, json_t *params);

#endif
