/*
** main.c — the a2m binary: git-style subcommands (docs/ARCHITECTURE.md).
*/
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "a2m.h"
#include "cli/cli.h"

/*
** mimalloc's options, when its header is installed; its calls are weak
** references (as bench_common.c's mi_version), so the same source builds
** with ALLOC=libc and then leaves the allocator alone.
*/
#if defined(__has_include)
#if __has_include(<mimalloc.h>)
#include <mimalloc.h>
#pragma weak mi_option_set
#define HAVE_MIMALLOC_H 1
#endif
#endif

/*
** Freed memory kept mapped for 2 s before mimalloc gives it back (its
** default: 25 ms). A recall at 10M records reads megabytes of lists into
** fresh buffers (SQLite's, the index's) and frees them; given back at
** once, the next recall's took a page fault per 4 KiB again: 2 797 faults
** a recall against 1 079 with the delay (docs/BENCHMARKS.md, "Ten
** million: where a recall goes"). MIMALLOC_DECOMMIT_DELAY, when set,
** still decides.
*/
static void allocator_options(void)
{
#ifdef HAVE_MIMALLOC_H
	if (mi_option_set && !getenv("MIMALLOC_DECOMMIT_DELAY"))
		mi_option_set(mi_option_decommit_delay, 2000);
#endif
}

static const char usage_head[] =
	"usage: a2m <command> [options]\n"
	"\n"
	"commands:\n"
	"  serve         run the memory server (stdio or HTTP; see a2m serve --help)\n"
	"  corpus        serve a folder of documents as a read-only A2M server\n"
	"  federate      serve one memory whose tiers live on other A2M servers\n"
	"  mcp           run an MCP server whose tools are an A2M memory\n"
	"  conformance   run the A2M conformance suite against a server\n"
	"  bench         run the benchmarks (quality, latency; crash and soak runs)\n"
	"  export        write a database as JSON Lines, every field of every record\n"
	"  import        read an export, or an MCP memory server's graph, into a database\n"
	"  check         check a database's consistency, and --repair what is derivable\n"
	"\n"
	"client commands (against --http URL, default http://127.0.0.1:8778/, or\n"
	"--stdio CMD...):\n";

static const char usage_tail[] =
	"\n"
	"options:\n"
	"  -h, --help    show this help\n"
	"  --version     print the version and the protocol spoken\n"
	"\n"
	"Run 'a2m <command> --help' for the options of one command.\n";

static void print_usage(FILE *to)
{
	fputs(usage_head, to);
	fputs(a2m_client_usage, to);
	fputs(usage_tail, to);
}

/*
** `a2m conformance`: the suite is a program of its own, a2m-conformance
** (conformance/), which links nothing of the server; it is run from the
** directory this binary is in, where the build and make install put it.
*/
static int run_conformance(char **argv)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
	char *slash = n > 0 ? memrchr(path, '/', (size_t)n) : NULL;
	if (!slash) {
		fprintf(stderr, "a2m conformance: cannot tell where a2m is: %s\n", strerror(errno));
		return A2M_EXIT_ERROR;
	}
	strcpy(slash + 1, "a2m-conformance");
	argv[0] = path;
	execv(path, argv);
	fprintf(stderr, "a2m conformance: cannot run %s: %s\n", path, strerror(errno));
	return A2M_EXIT_ERROR;
}

int main(int argc, char **argv)
{
	allocator_options();
	if (argc < 2) {
		print_usage(stderr);
		return A2M_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		print_usage(stdout);
		return A2M_EXIT_OK;
	}
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
		printf("a2m %s (%s)\n", a2m_libversion(), A2M_PROTOCOL);
		return A2M_EXIT_OK;
	}
	if (strcmp(cmd, "serve") == 0)
		return a2m_cmd_serve(argc - 1, argv + 1);
	if (strcmp(cmd, "conformance") == 0)
		return run_conformance(argv);
	if (strcmp(cmd, "corpus") == 0)
		return a2m_cmd_corpus(argc - 1, argv + 1);
	if (strcmp(cmd, "federate") == 0)
		return a2m_cmd_federate(argc - 1, argv + 1);
	if (strcmp(cmd, "mcp") == 0)
		return a2m_cmd_mcp(argc - 1, argv + 1);
	if (strcmp(cmd, "bench") == 0)
		return a2m_cmd_bench(argc - 1, argv + 1);
	if (strcmp(cmd, "export") == 0)
		return a2m_cmd_export(argc - 1, argv + 1);
	if (strcmp(cmd, "import") == 0)
		return a2m_cmd_import(argc - 1, argv + 1);
	if (strcmp(cmd, "check") == 0)
		return a2m_cmd_check(argc - 1, argv + 1);
	if (a2m_client_command(cmd))
		return a2m_cmd_client(argc - 1, argv + 1);
	fprintf(stderr, "a2m: unknown command '%s' (try 'a2m --help')\n", cmd);
	return A2M_EXIT_USAGE;
}
