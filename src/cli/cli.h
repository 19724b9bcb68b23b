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

int a2m_cmd_serve(int argc, char **argv);
int a2m_cmd_conformance(int argc, char **argv);

#endif
