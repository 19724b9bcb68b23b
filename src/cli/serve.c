/*
** serve.c — `a2m serve`: the memory server, on stdio (the default) or HTTP.
**
** Shutdown is always clean: end of input, SIGTERM and SIGINT all stop the
** loop between two messages, after which the store is committed and closed.
** Over HTTP a signal stops accepting connections, lets the requests being
** handled finish, then closes the store. Every write was committed before it
** was acknowledged anyway, so a kill -9 loses nothing acknowledged either.
*/
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "a2m.h"
#include "cli/cli.h"
#include "cli/stop_signals.h"
#include "cli/store_options.h"
#include "transport/http.h"
#include "transport/stdio.h"
#include "transport/tokens.h"
#include "util/log.h"

static const char usage[] =
	"usage: a2m serve [options]\n"
	"\n"
	"Serves an A2M 0.1 memory store over stdio: one JSON-RPC message per line\n"
	"on stdin, one response per line on stdout; or over HTTP with --http: one\n"
	"JSON-RPC message per POST (docs/HTTP.md). Logs go to stderr.\n"
	"\n"
	"options:\n"
	"  --stdio               serve on stdin/stdout (the default)\n"
	"  --http [ADDR:]PORT    serve over HTTP instead (default 127.0.0.1:8778; PORT 0\n"
	"                        picks a free port; the start-up line on stderr says which)\n"
	"  --db PATH             SQLite file to use (default $A2M_DB, else ./a2m.db)\n"
	"  --memory              keep records in memory only; nothing is persisted\n"
	"  --name NAME           server name reported by memory/describe (default a2m)\n"
	"  --log-level LEVEL     error, warn, info or debug (default warn)\n"
	"  --max-line BYTES      longest message accepted (default 16777216)\n"
	"  --synchronous-normal  SQLite synchronous=NORMAL: faster commits that survive a\n"
	"                        crash of the process but not a power loss (default FULL)\n"
	"  --read-only           serve an existing database; refuse every write (-32004)\n"
	"  --config FILE         JSON configuration: tiers, limits, metric (docs/CONFIG.md)\n"
	"  --capabilities LIST   declare only these, e.g. core,tiers,keys (default: all)\n"
	"  --metric NAME         how vectors compare: cosine (default), dot or l2\n"
	"  --events-retain N     events kept for memory/events (default 1024)\n"
	"  --helper-threads N    threads a write may use besides its own: a batch's\n"
	"                        analysis, index merges (default: one per core but\n"
	"                        one, at most 4; 0: none)\n"
	"  --embed KIND          embed text server-side with a model server: ollama or\n"
	"                        openai (default: none; docs/EMBEDDINGS.md)\n"
	"  --embed-url URL       the model server (ollama default http://127.0.0.1:11434;\n"
	"                        openai: required)\n"
	"  --embed-model NAME    the model to ask for (default bge-m3)\n"
	"  --embed-key-env VAR   read the API key from environment variable VAR\n"
	"  --embed-timeout MS    per request (default 2000)\n"
	"  -h, --help            show this help\n"
	"\n"
	"HTTP options (with --http):\n"
	"  --path PATH           the JSON-RPC endpoint (default /)\n"
	"  --tokens FILE         require Authorization: Bearer; FILE holds one\n"
	"                        'TOKEN PRINCIPAL' pair per line, and the principal is\n"
	"                        the caller's owner (spec §6). Without it nobody is\n"
	"                        authenticated and scopes is not offered.\n"
	"  --allow-origin ORIGIN a browser Origin to accept, e.g. http://localhost:3000\n"
	"                        (repeatable; default none: any request with an Origin\n"
	"                        header is refused with 403)\n"
	"  --max-body BYTES      largest request body (default 16777216; larger: 413)\n"
	"  --timeout SECONDS     close a connection idle this long (default 30)\n"
	"  --max-connections N   connections open at once (default 256)\n"
	"  --threads N           worker threads (default: one per core, at most 16)\n"
	"  --tls-cert FILE       serve HTTPS with this PEM certificate ...\n"
	"  --tls-key FILE        ... and this PEM private key\n"
	"  --ui                  serve the memory inspector, a page for a browser, at\n"
	"                        /ui/ (docs/UI.md); its own origin is then accepted\n";

/* The most --allow-origin values accepted. */
#define MAX_ORIGINS 64

/* Returns the value after a flag, or NULL when it is missing. */
static const char *flag_value(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

/* A non-negative decimal number, nothing else. Returns 0, or -1. */
static int parse_count(const char *v, unsigned long long *out)
{
	char *end;
	if (!v || *v < '0' || *v > '9')
		return -1;
	errno = 0;
	*out = strtoull(v, &end, 10);
	return errno || *end ? -1 : 0;
}

/*
** Parses --http's [ADDR:]PORT: "8778", "127.0.0.1:8778", "localhost:8778",
** "[::1]:8778". The address, without brackets, goes to buf. Returns 0, or
** -1 when it is none of those.
*/
static int parse_listen(const char *v, const char **addr, unsigned *port, char *buf,
			size_t size)
{
	const char *colon = strrchr(v, ':');
	const char *p = colon ? colon + 1 : v;
	unsigned long long n;
	if (parse_count(p, &n) != 0 || n > 65535)
		return -1;
	*port = (unsigned)n;
	if (!colon)
		return 0;
	size_t len = (size_t)(colon - v);
	if (len >= 2 && v[0] == '[' && v[len - 1] == ']') {
		v++;
		len -= 2;
	} else if (memchr(v, ':', len)) {
		return -1; /* an IPv6 address needs its brackets */
	}
	if (len == 0 || len >= size)
		return -1;
	memcpy(buf, v, len);
	buf[len] = '\0';
	*addr = buf;
	return 0;
}

/*
** The HTTP branch: serves until SIGTERM or SIGINT, then drains and closes
** the store. Consumes h and tokens (NULL: no authentication).
*/
static int serve_http(a2m *h, const cli_store *st, a2m_http_config *hcfg,
		      a2m_bearer_tokens *tokens, const sigset_t *wait_mask)
{
	char err[512];
	a2m_http *server = NULL;
	hcfg->tokens = tokens;
	if (a2m_http_start(h, hcfg, &server, err, sizeof err) != 0) {
		fprintf(stderr, "a2m serve: %s\n", err);
		a2m_bearer_free(tokens);
		a2m_close(h);
		return A2M_EXIT_ERROR;
	}
	/* The one line every start prints, whatever the log level: where, what,
	** and whether anyone is checked at the door. */
	char auth[64];
	if (tokens)
		snprintf(auth, sizeof auth, "on, %zu token%s", a2m_bearer_count(tokens),
			 a2m_bearer_count(tokens) == 1 ? "" : "s");
	else
		snprintf(auth, sizeof auth, "off");
	fprintf(stderr, "a2m serve: listening on %s (store %s, auth %s%s)\n",
		a2m_http_url(server),
		cli_store_in_memory(st) ? ":memory:" : cli_store_path(st), auth,
		hcfg->ui ? ", inspector at /ui/" : "");
	fflush(stderr);

	/* The workers were started with the stop signals blocked and inherit
	** that, so only this thread takes them, here. */
	while (!cli_stop_requested)
		sigsuspend(wait_mask);

	a2m_http_stop(server);
	a2m_close(h);
	a2m_bearer_free(tokens);
	a2m_log(A2M_LOG_INFO, "stopped (signal)");
	return A2M_EXIT_OK;
}

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
	size_t max_line = A2M_STDIO_MAX_LINE;
	a2m_http_config hcfg;
	memset(&hcfg, 0, sizeof hcfg);
	hcfg.port = A2M_HTTP_DEFAULT_PORT;
	char addr_buf[256];
	const char *origins[MAX_ORIGINS];
	size_t n_origins = 0;
	const char *tokens_file = NULL;
	const char *http_only = NULL, *stdio_only = NULL; /* a flag of the other transport */
	int http = 0, stdio = 0, erc;
	char why[256];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage, stdout);
			return A2M_EXIT_OK;
		} else if ((erc = cli_store_option(st, argc, argv, &i, why, sizeof why)) != 0) {
			if (erc < 0)
				return a2m_cli_usage("serve", "%s", why);
		} else if (strcmp(a, "--stdio") == 0) {
			/* the default: noted below, since it excludes --http */
		} else if (strcmp(a, "--log-level") == 0) {
			a2m_log_level level;
			if (!(v = flag_value(argc, argv, &i)))
				return a2m_cli_usage("serve", "%s needs one of error, warn, info, debug", a);
			if (a2m_log_parse_level(v, &level) != 0)
				return a2m_cli_usage("serve", "unknown log level '%s' (use error, warn, info or debug)", v);
			a2m_log_set_level(level);
		} else if (strcmp(a, "--max-line") == 0) {
			char *end;
			if (!(v = flag_value(argc, argv, &i)))
				return a2m_cli_usage("serve", "%s needs a number of bytes", a);
			errno = 0;
			unsigned long long n = strtoull(v, &end, 10);
			if (errno || *end || n < 64 || *v == '-')
				return a2m_cli_usage("serve", "--max-line must be a number of bytes >= 64, not '%s'", v);
			max_line = (size_t)n;
		} else if (strcmp(a, "--http") == 0) {
			/* The address is optional: a value that is not another flag is it. */
			http = 1;
			if (i + 1 < argc && argv[i + 1][0] != '-' &&
			    parse_listen(argv[++i], &hcfg.addr, &hcfg.port, addr_buf,
					 sizeof addr_buf) != 0)
				return a2m_cli_usage("serve", "--http wants [ADDR:]PORT, e.g. 127.0.0.1:8778 or "
						 "[::1]:8778, not '%s'", argv[i]);
		} else if (strcmp(a, "--path") == 0) {
			if (!(v = flag_value(argc, argv, &i)) || v[0] != '/')
				return a2m_cli_usage("serve", "%s needs a path starting with '/'", a);
			hcfg.path = v;
			http_only = a;
		} else if (strcmp(a, "--tokens") == 0) {
			if (!(v = flag_value(argc, argv, &i)) || !*v)
				return a2m_cli_usage("serve", "%s needs a file path", a);
			tokens_file = v;
			http_only = a;
		} else if (strcmp(a, "--allow-origin") == 0) {
			if (!(v = flag_value(argc, argv, &i)) || !*v)
				return a2m_cli_usage("serve", "%s needs an origin such as http://localhost:3000", a);
			if (n_origins == MAX_ORIGINS)
				return a2m_cli_usage("serve", "at most %d --allow-origin values", MAX_ORIGINS);
			origins[n_origins++] = v;
			http_only = a;
		} else if (strcmp(a, "--max-body") == 0) {
			unsigned long long n;
			if (!(v = flag_value(argc, argv, &i)) || parse_count(v, &n) != 0 || n < 64)
				return a2m_cli_usage("serve", "--max-body must be a number of bytes >= 64, not '%s'",
						 v ? v : "");
			hcfg.max_body = (size_t)n;
			http_only = a;
		} else if (strcmp(a, "--timeout") == 0) {
			unsigned long long n;
			if (!(v = flag_value(argc, argv, &i)) || parse_count(v, &n) != 0 || n < 1 ||
			    n > 86400)
				return a2m_cli_usage("serve", "--timeout must be 1 to 86400 seconds, not '%s'",
						 v ? v : "");
			hcfg.timeout_s = (unsigned)n;
			http_only = a;
		} else if (strcmp(a, "--max-connections") == 0) {
			unsigned long long n;
			if (!(v = flag_value(argc, argv, &i)) || parse_count(v, &n) != 0 || n < 1 ||
			    n > 1000000)
				return a2m_cli_usage("serve", "--max-connections must be 1 to 1000000, not '%s'",
						 v ? v : "");
			hcfg.max_connections = (unsigned)n;
			http_only = a;
		} else if (strcmp(a, "--threads") == 0) {
			unsigned long long n;
			if (!(v = flag_value(argc, argv, &i)) || parse_count(v, &n) != 0 || n < 1 ||
			    n > A2M_HTTP_MAX_THREADS)
				return a2m_cli_usage("serve", "--threads must be 1 to %d, not '%s'",
						     A2M_HTTP_MAX_THREADS, v ? v : "");
			hcfg.threads = (unsigned)n;
			http_only = a;
		} else if (strcmp(a, "--ui") == 0) {
			hcfg.ui = 1;
			http_only = a;
		} else if (strcmp(a, "--tls-cert") == 0) {
			if (!(v = flag_value(argc, argv, &i)) || !*v)
				return a2m_cli_usage("serve", "%s needs a PEM file", a);
			hcfg.tls_cert = v;
			http_only = a;
		} else if (strcmp(a, "--tls-key") == 0) {
			if (!(v = flag_value(argc, argv, &i)) || !*v)
				return a2m_cli_usage("serve", "%s needs a PEM file", a);
			hcfg.tls_key = v;
			http_only = a;
		} else {
			return a2m_cli_usage("serve", "unknown option '%s'", a);
		}
		if (strcmp(a, "--stdio") == 0)
			stdio = 1;
		else if (strcmp(a, "--max-line") == 0)
			stdio_only = a;
	}
	if (http && stdio)
		return a2m_cli_usage("serve", "--stdio and --http exclude each other");
	if (!http && http_only)
		return a2m_cli_usage("serve", "%s needs --http", http_only);
	if (http && stdio_only)
		return a2m_cli_usage("serve", "%s is for --stdio; over HTTP use --max-body", stdio_only);
	if (!hcfg.tls_cert != !hcfg.tls_key)
		return a2m_cli_usage("serve", "--tls-cert and --tls-key go together");
	if (cli_store_check(st, why, sizeof why) != 0)
		return a2m_cli_usage("serve", "%s", why);
	hcfg.origins = origins;
	hcfg.n_origins = n_origins;

	/* The loop takes the stop signals only while waiting. */
	sigset_t wait_mask;
	cli_stop_signals_block(&wait_mask);

	/* The token file is checked before the store is touched, so a typo in
	** it cannot leave a fresh database behind. The reason names the line,
	** never its content: the file is a secret and stderr often ends up in
	** someone's log collector. */
	a2m_bearer_tokens *tokens = NULL;
	if (tokens_file) {
		char terr[512];
		if (a2m_bearer_load(tokens_file, &tokens, terr, sizeof terr) != 0) {
			fprintf(stderr, "a2m serve: --tokens %s\n", terr);
			return A2M_EXIT_ERROR;
		}
	}

	a2m *h;
	char *err = NULL;
	if (a2m_open(st->cfg, &h, &err) != A2M_OK) {
		fprintf(stderr, "a2m serve: %s\n", err ? err : "cannot open the store");
		a2m_free(err);
		a2m_bearer_free(tokens);
		return A2M_EXIT_ERROR;
	}
	if (http)
		return serve_http(h, st, &hcfg, tokens, &wait_mask);
	a2m_log(A2M_LOG_INFO, "serving %s on stdio",
		cli_store_in_memory(st) ? "an in-memory store" : cli_store_path(st));
	int rc = a2m_stdio_serve(h, STDIN_FILENO, STDOUT_FILENO, max_line, &cli_stop_requested,
				 &wait_mask);
	a2m_close(h);
	a2m_log(A2M_LOG_INFO, "stopped (%s)", cli_stop_requested ? "signal" : "end of input");
	return rc == 0 ? A2M_EXIT_OK : A2M_EXIT_ERROR;
}
