/*
** cli.h — the subcommands of the a2m binary, one file each. Each takes the
** arguments after "a2m" (argv[0] is the subcommand name) and returns the
** process exit status: 0 ok, 1 protocol or runtime error, 2 usage.
*/
#ifndef A2M_CLI_H
#define A2M_CLI_H

/* Exit statuses shared by every subcommand. */
#define A2M_EXIT_OK    0
#define A2M_EXIT_ERROR 1
#define A2M_EXIT_USAGE 2

/*
** Prints "a2m CMD: <message> (try 'a2m CMD --help')" to stderr, the message
** from a printf-style format, and returns A2M_EXIT_USAGE.
*/
int a2m_cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int a2m_cmd_serve(int argc, char **argv);
int a2m_cmd_mcp(int argc, char **argv);
int a2m_cmd_bench(int argc, char **argv);
int a2m_cmd_export(int argc, char **argv);  /* transfer.c */
int a2m_cmd_import(int argc, char **argv);  /* transfer.c */
int a2m_cmd_corpus(int argc, char **argv);

/* a2m federate: the router of src/federate/ served as a2m serve serves. */
int a2m_cmd_federate(int argc, char **argv);
int a2m_cmd_check(int argc, char **argv);

/*
** The client commands (client_cmds.c): describe, remember, recall, timeline,
** forget, fetch, promote, consolidate, reinforce, summarize, events and
** session, each
** one A2M call against a server. a2m_client_command says whether name is
** one of them; a2m_client_usage is their part of `a2m --help`.
*/
int a2m_client_command(const char *name);
int a2m_cmd_client(int argc, char **argv);
extern const char a2m_client_usage[];

#endif
