/*
** serve.c — `a2m serve`: the memory server on stdio.
**
** Shutdown is always clean: end of input, SIGTERM and SIGINT all stop the
** loop between two messages, after which the store is committed and closed.
** Every write was committed before it was acknowledged anyway, so a kill -9
** loses nothing acknowledged either.
*/
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "a2m.h"
#include "cli/cli.h"
#include "transport/stdio.h"
#include "util/log.h"

static const char usage[] =
	"usage: a2m serve [options]\n"
	"\n"
	"Serves an A2M 0.1 memory store over stdio: one JSON-RPC message per line\n"
	"on stdin, one response per line on stdout; logs go to stderr.\n"
	"\n"
	"options:\n"
	"  --stdio               serve on stdin/stdout (the default)\n"
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
	"  -h, --help            show this help\n";

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* Reports a usage error in one line and returns the usage exit status. */
static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad_usage(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "a2m serve: %s (try 'a2m serve --help')\n", msg);
	return A2M_EXIT_USAGE;
}

/* Returns the value after a flag, or NULL when it is missing. */
static const char *flag_value(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

int a2m_cmd_serve(int argc, char **argv)
{
	a2m_config cfg;
	a2m_config_init(&cfg);
	const char *env_db = getenv("A2M_DB");
	if (env_db && *env_db)
		cfg.path = env_db;
	size_t max_line = A2M_STDIO_MAX_LINE;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage, stdout);
			return A2M_EXIT_OK;
		} else if (strcmp(a, "--stdio") == 0) {
			/* the only transport until the HTTP binding lands */
		} else if (strcmp(a, "--memory") == 0) {
			cfg.engine = A2M_ENGINE_MEMORY;
		} else if (strcmp(a, "--synchronous-normal") == 0) {
			cfg.sqlite_synchronous_normal = 1;
		} else if (strcmp(a, "--db") == 0) {
			if (!(v = flag_value(argc, argv, &i)) || !*v)
				return bad_usage("%s needs a file path", a);
			cfg.path = v;
			cfg.engine = A2M_ENGINE_SQLITE;
		} else if (strcmp(a, "--name") == 0) {
			if (!(v = flag_value(argc, argv, &i)) || !*v)
				return bad_usage("%s needs a name", a);
			cfg.name = v;
		} else if (strcmp(a, "--log-level") == 0) {
			a2m_log_level level;
			if (!(v = flag_value(argc, argv, &i)))
				return bad_usage("%s needs one of error, warn, info, debug", a);
			if (a2m_log_parse_level(v, &level) != 0)
				return bad_usage("unknown log level '%s' (use error, warn, info or debug)", v);
			a2m_log_set_level(level);
		} else if (strcmp(a, "--max-line") == 0) {
			char *end;
			if (!(v = flag_value(argc, argv, &i)))
				return bad_usage("%s needs a number of bytes", a);
			errno = 0;
			unsigned long long n = strtoull(v, &end, 10);
			if (errno || *end || n < 64 || *v == '-')
				return bad_usage("--max-line must be a number of bytes >= 64, not '%s'", v);
			max_line = (size_t)n;
		} else if (strcmp(a, "--read-only") == 0) {
			cfg.read_only = 1;
		} else if (strcmp(a, "--config") == 0) {
			if (!(v = flag_value(argc, argv, &i)) || !*v)
				return bad_usage("%s needs a file path", a);
			cfg.config_file = v;
		} else if (strcmp(a, "--capabilities") == 0) {
			if (!(v = flag_value(argc, argv, &i)) || !*v)
				return bad_usage("%s needs a list such as core,tiers", a);
			cfg.capabilities = v;
		} else if (strcmp(a, "--metric") == 0) {
			if (!(v = flag_value(argc, argv, &i)))
				return bad_usage("%s needs cosine, dot or l2", a);
			if (strcmp(v, "cosine") && strcmp(v, "dot") && strcmp(v, "l2"))
				return bad_usage("unknown metric '%s' (use cosine, dot or l2)", v);
			cfg.metric = v;
		} else if (strcmp(a, "--events-retain") == 0) {
			char *end;
			if (!(v = flag_value(argc, argv, &i)))
				return bad_usage("%s needs a number", a);
			errno = 0;
			long long n = strtoll(v, &end, 10);
			if (errno || *end || n < 1)
				return bad_usage("--events-retain must be a positive number, not '%s'", v);
			cfg.events_retain = n;
		} else if (strcmp(a, "--http") == 0) {
			return bad_usage("%s is not available in this build yet; use --stdio", a);
		} else {
			return bad_usage("unknown option '%s'", a);
		}
	}

	/* Block the stop signals; the loop takes them only while waiting. */
	sigset_t block, wait_mask;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &wait_mask);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* A vanished client is an EPIPE from write(), handled there. */
	signal(SIGPIPE, SIG_IGN);

	a2m *h;
	char *err = NULL;
	if (a2m_open(&cfg, &h, &err) != 0) {
		fprintf(stderr, "a2m serve: %s\n", err ? err : "cannot open the store");
		a2m_free(err);
		return A2M_EXIT_ERROR;
	}
	a2m_log(A2M_LOG_INFO, "serving %s on stdio",
		cfg.engine == A2M_ENGINE_MEMORY ? "an in-memory store" : cfg.path);
	int rc = a2m_stdio_serve(h, STDIN_FILENO, STDOUT_FILENO, max_line, &stop_requested,
				 &wait_mask);
	a2m_close(h);
	a2m_log(A2M_LOG_INFO, "stopped (%s)", stop_requested ? "signal" : "end of input");
	return rc == 0 ? A2M_EXIT_OK : A2M_EXIT_ERROR;
}
