/*
** federate.c — `a2m federate --config FILE`: one memory whose tiers live on
** other A2M servers (docs/FEDERATION.md), served over stdio or HTTP with
** exactly the flags and the loop of `a2m serve` (transport_options.c).
*/
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "a2m.h"
#include "cli/cli.h"
#include "cli/stop_signals.h"
#include "cli/transport_options.h"
#include "federate/federate.h"

static const char usage_head[] =
	"usage: a2m federate --config FILE [options]\n"
	"\n"
	"Serves one A2M memory whose tiers live on other A2M servers: in this\n"
	"process (memory, SQLite), children over stdio, servers over HTTP. The\n"
	"router owns the policy (capacity, spills, promotion, session close), its\n"
	"event log, summaries and prompts; the backends own the bytes\n"
	"(docs/FEDERATION.md). Logs go to stderr.\n"
	"\n"
	"options:\n"
	"  --config FILE         the federation: backends, tiers, merge (required)\n";

int a2m_cmd_federate(int argc, char **argv)
{
	cli_transport t;
	cli_transport_init(&t);
	const char *config = NULL;
	char why[256];
	int erc;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage_head, stdout);
			fputs(cli_transport_usage, stdout);
			fputs("  -h, --help            show this help\n\n", stdout);
			fputs(cli_transport_usage_http, stdout);
			return A2M_EXIT_OK;
		} else if (strcmp(a, "--config") == 0) {
			if (i + 1 >= argc)
				return a2m_cli_usage("federate", "--config needs a file");
			config = argv[++i];
		} else if ((erc = cli_transport_option(&t, argc, argv, &i, why, sizeof why)) != 0) {
			if (erc < 0)
				return a2m_cli_usage("federate", "%s", why);
		} else {
			return a2m_cli_usage("federate", "unknown option '%s'", a);
		}
	}
	if (!config)
		return a2m_cli_usage("federate", "--config FILE is required");
	if (cli_transport_check(&t, why, sizeof why) != 0)
		return a2m_cli_usage("federate", "%s", why);

	sigset_t wait_mask;
	cli_stop_signals_block(&wait_mask);
	a2m_bearer_tokens *tokens;
	if (cli_transport_tokens(&t, "federate", &tokens) != 0)
		return A2M_EXIT_ERROR;
	a2m *h;
	char err[512];
	if (a2m_federate_open(config, &h, err, sizeof err) != A2M_OK) {
		fprintf(stderr, "a2m federate: %s\n", err);
		a2m_bearer_free(tokens);
		return A2M_EXIT_ERROR;
	}
	int rc = cli_transport_serve(&t, "federate", h, config, tokens, &wait_mask);
	a2m_close(h);
	return rc;
}
