/*
** serve.c — `a2m serve`: the memory server, on stdio (the default) or HTTP.
**
** Shutdown is always clean: end of input, SIGTERM and SIGINT all stop the
** loop between two messages, after which the store is committed and closed.
** Over HTTP a signal stops accepting connections, lets the requests being
** handled finish, then closes the store. Every write was committed before it
** was acknowledged anyway, so a kill -9 loses nothing acknowledged either.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "cli/cli.h"
#include "cli/stop_signals.h"
#include "cli/store_options.h"
#include "cli/transport_options.h"

static const char usage_head[] =
	"usage: a2m serve [options]\n"
	"\n"
	"Serves an A2M 0.1 memory store over stdio: one JSON-RPC message per line\n"
	"on stdin, one response per line on stdout; or over HTTP with --http: one\n"
	"JSON-RPC message per POST (docs/HTTP.md). Logs go to stderr.\n"
	"\n"
	"options:\n";

static const char usage_store[] =
	"  --db PATH             SQLite file to use (default $A2M_DB, else ./a2m.db)\n"
	"  --memory              keep records in memory only; nothing is persisted\n"
	"  --postgres URL        a PostgreSQL deployment several servers may share\n"
	"                        (libpq URL or key=value; default $A2M_POSTGRES when\n"
	"                        set; docs/POSTGRES.md)\n"
	"  --name NAME           server name reported by memory/describe (default a2m)\n"
	"  --synchronous-normal  SQLite synchronous=NORMAL: faster commits that survive a\n"
	"                        crash of the process but not a power loss (default FULL)\n"
	"  --no-group-commit     with FULL, sync each commit on its own rather than sharing\n"
	"                        one sync among concurrent writers\n"
	"  --capacity-after-sync with group commit, run a lone write's capacity pass in a\n"
	"                        transaction of its own while its sync runs\n"
	"  --read-only           serve an existing database; refuse every write (-32004)\n"
	"  --config FILE         JSON configuration: tiers, limits, metric (docs/CONFIG.md)\n"
	"  --capabilities LIST   declare only these, e.g. core,tiers,keys (default: all)\n"
	"  --metric NAME         how vectors compare: cosine (default), dot or l2\n"
	"  --vector-search MODE  exact (default) or quantized: an approximate search\n"
	"                        of 8-bit codes, its pool measured exactly (RANKING.md)\n"
	"  --vector-pool N       quantized: rows measured exactly per result (default 20)\n"
	"  --events-retain N     events kept for memory/events (default 1024)\n"
	"  --helper-threads N    threads a write may use besides its own: a batch's\n"
	"                        analysis, index merges (default: one per core but\n"
	"                        one, at most 4; 0: none)\n"
	"  --postings-cache-mb N SQLite: MiB of index lists each connection keeps\n"
	"                        between queries (default 64)\n"
	"  --mmap-mb N           SQLite: MiB of a file of 64 MiB or more each connection\n"
	"                        reads through a memory map (default 2048; 0: pread)\n"
	"  --embed KIND          embed text server-side with a model server: ollama or\n"
	"                        openai (default: none; docs/EMBEDDINGS.md)\n"
	"  --embed-url URL       the model server (ollama default http://127.0.0.1:11434;\n"
	"                        openai: required)\n"
	"  --embed-model NAME    the model to ask for (default bge-m3)\n"
	"  --embed-key-env VAR   read the API key from environment variable VAR\n"
	"  --embed-timeout MS    per request (default 2000)\n"
	"  --embed-weight P      the generated vectors' share of a text query's\n"
	"                        relevance, in percent (default 99; 0: text alone)\n"
	"  -h, --help            show this help\n"
	"\n";

static int serve(cli_store *st, int argc, char **argv);

int a2m_cmd_serve(int argc, char **argv)
{
	cli_store st;
	if (cli_store_init(&st) != 0) {
		fprintf(stderr, "a2m serve: out of memory\n");
		return A2M_EXIT_ERROR;
	}
	int rc = serve(&st, argc, argv);
	cli_store_free(&st);
	return rc;
}

/* a2m serve, on the store options of st. */
static int serve(cli_store *st, int argc, char **argv)
{
	cli_transport t;
	cli_transport_init(&t);
	int erc;
	char why[256];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage_head, stdout);
			fputs(cli_transport_usage, stdout);
			fputs(usage_store, stdout);
			fputs(cli_transport_usage_http, stdout);
			return A2M_EXIT_OK;
		} else if ((erc = cli_store_option(st, argc, argv, &i, why, sizeof why)) != 0 ||
			   (erc = cli_transport_option(&t, argc, argv, &i, why, sizeof why)) != 0) {
			if (erc < 0)
				return a2m_cli_usage("serve", "%s", why);
		} else {
			return a2m_cli_usage("serve", "unknown option '%s'", a);
		}
	}
	if (cli_transport_check(&t, why, sizeof why) != 0 ||
	    cli_store_check(st, why, sizeof why) != 0)
		return a2m_cli_usage("serve", "%s", why);

	/* The loop takes the stop signals only while waiting. */
	sigset_t wait_mask;
	cli_stop_signals_block(&wait_mask);

	/* The token file is checked before the store is touched, so a typo in
	** it cannot leave a fresh database behind. */
	a2m_bearer_tokens *tokens;
	if (cli_transport_tokens(&t, "serve", &tokens) != 0)
		return A2M_EXIT_ERROR;

	a2m *h;
	char *err = NULL;
	if (a2m_open(st->cfg, &h, &err) != A2M_OK) {
		fprintf(stderr, "a2m serve: %s\n", err ? err : "cannot open the store");
		a2m_free(err);
		a2m_bearer_free(tokens);
		return A2M_EXIT_ERROR;
	}
	/* Never a connection string as given: it may hold a password. */
	char *shown = cli_store_shown(st);
	const char *store = cli_store_in_memory(st) ? (t.http ? ":memory:" : "an in-memory store")
						    : shown ? shown : "?";
	int rc = cli_transport_serve(&t, "serve", h, store, tokens, &wait_mask);
	free(shown);
	a2m_close(h);
	return rc;
}
