/*
** store_options.h — the command-line options that describe a store: --db,
** --memory, --postgres, --config, --capabilities, --name, --read-only,
** --synchronous-normal, --metric, --events-retain, --helper-threads and the
** --embed* options. `a2m serve`, `a2m mcp` and the client commands'
** embedded store read them here, each into the library option of the same
** meaning (include/a2m.h), so a flag means one thing everywhere.
*/
#ifndef A2M_CLI_STORE_OPTIONS_H
#define A2M_CLI_STORE_OPTIONS_H

#include <stddef.h>

#include "a2m.h"

/* The store options of one command line: the configuration they set, and
** what the checks across several flags need to know. */
typedef struct cli_store {
	a2m_config *cfg;          /* owned */
	int         embed_other;  /* an --embed-* flag other than --embed was given */
} cli_store;

/*
** Starts st with the defaults, $A2M_DB as the file when it is set, and
** $A2M_POSTGRES as the store when that is set (--db or --memory override it).
** Returns 0, or -1 when memory ran out.
*/
int cli_store_init(cli_store *st);

/* Frees st's configuration. */
void cli_store_free(cli_store *st);

/*
** Consumes argv[*i] if it is a store option, setting it on st and
** advancing *i past its value. Returns 1 when consumed, 0 when it is not a
** store option, -1 on a usage error (a one-line reason in why).
*/
int cli_store_option(cli_store *st, int argc, char **argv, int *i, char *why,
		     size_t why_size);

/*
** The checks across flags, once all are read: the --embed-* options need
** --embed (or a configuration file that may name the embedder), and
** --embed openai needs --embed-url. Returns 0, or -1 with the reason.
*/
int cli_store_check(const cli_store *st, char *why, size_t why_size);

/* Whether the store is in memory only (--memory). */
int cli_store_in_memory(const cli_store *st);

/* The SQLite file (borrowed from st; changes with the next option). */
const char *cli_store_path(const cli_store *st);

/* Whether the store is a PostgreSQL deployment (--postgres, $A2M_POSTGRES). */
int cli_store_postgres(const cli_store *st);

/*
** What a log or a start-up line may call the store: ":memory:", the file,
** or the deployment without its password or options (a2m_postgres_describe).
** The caller frees it; NULL when memory ran out.
*/
char *cli_store_shown(const cli_store *st);

#endif
