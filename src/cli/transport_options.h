/*
** transport_options.h — how a server command is reached: the options that
** choose stdio or HTTP (--stdio, --http and the HTTP options, --max-line,
** --log-level), and the loop that serves an open handle over the one
** chosen until end of input or a stop signal. `a2m serve` and `a2m corpus`
** both read them here, so the two commands take the same flags, check
** them the same way and serve the same way.
*/
#ifndef A2M_CLI_TRANSPORT_OPTIONS_H
#define A2M_CLI_TRANSPORT_OPTIONS_H

#include <signal.h>
#include <stddef.h>

#include "a2m.h"
#include "transport/http.h"

/* The most --allow-origin values accepted. */
#define CLI_MAX_ORIGINS 64

/*
** The transport options of one command line. hcfg points into the struct
** itself (the address, the origins), so it must stay where it was
** initialised until serving ends.
*/
typedef struct cli_transport {
	int             http;         /* --http given */
	int             stdio;        /* --stdio given */
	size_t          max_line;     /* stdio: longest message */
	a2m_http_config hcfg;
	char            addr_buf[256];
	const char     *origins[CLI_MAX_ORIGINS];
	size_t          n_origins;
	const char     *tokens_file;  /* --tokens, or NULL */
	const char     *http_only;    /* an HTTP-only flag seen, for the check */
	const char     *stdio_only;   /* a stdio-only flag seen */
} cli_transport;

/* The help lines of the options read here: those every server command
** lists among its own (--stdio, --http, --log-level, --max-line), and the
** block of HTTP options it ends with. */
extern const char cli_transport_usage[];
extern const char cli_transport_usage_http[];

/* Starts t with the defaults: stdio, the default HTTP address and limits. */
void cli_transport_init(cli_transport *t);

/*
** Consumes argv[*i] if it is a transport option, advancing *i past its
** value. --log-level takes effect at once. Returns 1 when consumed, 0 when
** it is not a transport option, -1 on a usage error (a one-line reason in
** why).
*/
int cli_transport_option(cli_transport *t, int argc, char **argv, int *i, char *why,
			 size_t why_size);

/*
** The checks across flags, once all are read: --stdio and --http exclude
** each other, an HTTP option needs --http, --max-line is for stdio, TLS
** takes both files. Returns 0, or -1 with the reason.
*/
int cli_transport_check(cli_transport *t, char *why, size_t why_size);

/*
** Reads the --tokens file, if one was given, into *out (NULL without one).
** Call it before the store is touched, so a typo in the file cannot leave
** a fresh database behind. Returns 0, or -1 after printing "a2m CMD:
** --tokens <reason>" on stderr (the reason names the line, never a token).
*/
int cli_transport_tokens(const cli_transport *t, const char *cmd, a2m_bearer_tokens **out);

/*
** Serves h over the chosen transport until end of input (stdio) or a stop
** signal (cli_stop_requested), then returns; the caller closes h. The stop
** signals must be blocked already (cli_stop_signals_block), wait_mask the
** mask to wait under. Over HTTP one line goes to stderr once listening,
** "a2m CMD: listening on URL (store STORE, auth on|off)", which scripts
** wait for; over stdio nothing but JSON-RPC is written to stdout. tokens
** (NULL: nobody is authenticated) is consumed. Returns A2M_EXIT_OK, or
** A2M_EXIT_ERROR when the server could not start or the output failed.
*/
int cli_transport_serve(cli_transport *t, const char *cmd, a2m *h, const char *store,
			a2m_bearer_tokens *tokens, const sigset_t *wait_mask);

#endif
