/*
** transport_options.c — the transport options of a server command, and the
** loop that serves over the one chosen (see transport_options.h).
**
** Shutdown is always clean: end of input, SIGTERM and SIGINT all stop the
** loop between two messages. Over HTTP a signal stops accepting
** connections and lets the requests being handled finish before this
** returns; the caller then closes the store.
*/
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/stop_signals.h"
#include "cli/transport_options.h"
#include "server/deferred.h"
#include "transport/stdio.h"
#include "transport/tokens.h"
#include "util/log.h"

const char cli_transport_usage[] =
	"  --stdio               serve on stdin/stdout (the default)\n"
	"  --http [ADDR:]PORT    serve over HTTP instead (default 127.0.0.1:8778; PORT 0\n"
	"                        picks a free port; the start-up line on stderr says which)\n"
	"  --log-level LEVEL     error, warn, info or debug (default warn)\n"
	"  --max-line BYTES      longest message accepted (default 16777216)\n";

const char cli_transport_usage_http[] =
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

void cli_transport_init(cli_transport *t)
{
	memset(t, 0, sizeof *t);
	t->max_line = A2M_STDIO_MAX_LINE;
	t->hcfg.port = A2M_HTTP_DEFAULT_PORT;
}

/* Writes a usage error's reason to why; always -1. */
__attribute__((format(printf, 3, 4)))
static int bad(char *why, size_t why_size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, why_size, fmt, ap);
	va_end(ap);
	return -1;
}

/* A number flag of the HTTP options within [lo, hi]; its value in *out. */
static int http_number(int argc, char **argv, int *i, unsigned long long lo,
		       unsigned long long hi, unsigned long long *out)
{
	const char *v = *i + 1 < argc ? argv[++*i] : NULL;
	return parse_count(v, out) == 0 && *out >= lo && *out <= hi ? 0 : -1;
}

int cli_transport_option(cli_transport *t, int argc, char **argv, int *i, char *why,
			 size_t why_size)
{
	const char *a = argv[*i];
	const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	unsigned long long n;
	if (strcmp(a, "--stdio") == 0) {
		t->stdio = 1;
	} else if (strcmp(a, "--log-level") == 0) {
		a2m_log_level level;
		if (!v)
			return bad(why, why_size, "%s needs one of error, warn, info, debug", a);
		++*i;
		if (a2m_log_parse_level(v, &level) != 0)
			return bad(why, why_size, "unknown log level '%s' (use error, warn, info or debug)", v);
		a2m_log_set_level(level);
	} else if (strcmp(a, "--max-line") == 0) {
		if (!v)
			return bad(why, why_size, "%s needs a number of bytes", a);
		++*i;
		if (parse_count(v, &n) != 0 || n < 64)
			return bad(why, why_size, "--max-line must be a number of bytes >= 64, not '%s'", v);
		t->max_line = (size_t)n;
		t->stdio_only = a;
	} else if (strcmp(a, "--http") == 0) {
		/* The address is optional: a value that looks like one is it (a
		** port, an address with its port), so `a2m corpus --http DIR`
		** still reads DIR as the folder. */
		t->http = 1;
		if (v && ((v[0] >= '0' && v[0] <= '9') || v[0] == '[' || strchr(v, ':'))) {
			++*i;
			if (parse_listen(v, &t->hcfg.addr, &t->hcfg.port, t->addr_buf,
					 sizeof t->addr_buf) != 0)
				return bad(why, why_size, "--http wants [ADDR:]PORT, e.g. 127.0.0.1:8778 "
					   "or [::1]:8778, not '%s'", v);
		}
	} else if (strcmp(a, "--path") == 0) {
		if (!v || v[0] != '/')
			return bad(why, why_size, "%s needs a path starting with '/'", a);
		t->hcfg.path = argv[++*i];
		t->http_only = a;
	} else if (strcmp(a, "--tokens") == 0) {
		if (!v || !*v)
			return bad(why, why_size, "%s needs a file path", a);
		t->tokens_file = argv[++*i];
		t->http_only = a;
	} else if (strcmp(a, "--allow-origin") == 0) {
		if (!v || !*v)
			return bad(why, why_size, "%s needs an origin such as http://localhost:3000", a);
		if (t->n_origins == CLI_MAX_ORIGINS)
			return bad(why, why_size, "at most %d --allow-origin values", CLI_MAX_ORIGINS);
		t->origins[t->n_origins++] = argv[++*i];
		t->http_only = a;
	} else if (strcmp(a, "--max-body") == 0) {
		if (http_number(argc, argv, i, 64, ~0ULL, &n) != 0)
			return bad(why, why_size, "--max-body must be a number of bytes >= 64, not '%s'", v ? v : "");
		t->hcfg.max_body = (size_t)n;
		t->http_only = a;
	} else if (strcmp(a, "--timeout") == 0) {
		if (http_number(argc, argv, i, 1, 86400, &n) != 0)
			return bad(why, why_size, "--timeout must be 1 to 86400 seconds, not '%s'", v ? v : "");
		t->hcfg.timeout_s = (unsigned)n;
		t->http_only = a;
	} else if (strcmp(a, "--max-connections") == 0) {
		if (http_number(argc, argv, i, 1, 1000000, &n) != 0)
			return bad(why, why_size, "--max-connections must be 1 to 1000000, not '%s'", v ? v : "");
		t->hcfg.max_connections = (unsigned)n;
		t->http_only = a;
	} else if (strcmp(a, "--threads") == 0) {
		if (http_number(argc, argv, i, 1, A2M_HTTP_MAX_THREADS, &n) != 0)
			return bad(why, why_size, "--threads must be 1 to %d, not '%s'",
				   A2M_HTTP_MAX_THREADS, v ? v : "");
		t->hcfg.threads = (unsigned)n;
		t->http_only = a;
	} else if (strcmp(a, "--ui") == 0) {
		t->hcfg.ui = 1;
		t->http_only = a;
	} else if (strcmp(a, "--tls-cert") == 0 || strcmp(a, "--tls-key") == 0) {
		if (!v || !*v)
			return bad(why, why_size, "%s needs a PEM file", a);
		if (a[6] == 'c')
			t->hcfg.tls_cert = argv[++*i];
		else
			t->hcfg.tls_key = argv[++*i];
		t->http_only = a;
	} else {
		return 0;
	}
	return 1;
}

int cli_transport_check(cli_transport *t, char *why, size_t why_size)
{
	if (t->http && t->stdio)
		return bad(why, why_size, "--stdio and --http exclude each other");
	if (!t->http && t->http_only)
		return bad(why, why_size, "%s needs --http", t->http_only);
	if (t->http && t->stdio_only)
		return bad(why, why_size, "%s is for --stdio; over HTTP use --max-body", t->stdio_only);
	if (!t->hcfg.tls_cert != !t->hcfg.tls_key)
		return bad(why, why_size, "--tls-cert and --tls-key go together");
	t->hcfg.origins = t->origins;
	t->hcfg.n_origins = t->n_origins;
	return 0;
}

int cli_transport_tokens(const cli_transport *t, const char *cmd, a2m_bearer_tokens **out)
{
	*out = NULL;
	if (!t->tokens_file)
		return 0;
	char terr[512];
	if (a2m_bearer_load(t->tokens_file, out, terr, sizeof terr) != 0) {
		fprintf(stderr, "a2m %s: --tokens %s\n", cmd, terr);
		return -1;
	}
	return 0;
}

/* The HTTP branch: serves until SIGTERM or SIGINT, then drains. */
static int serve_http(cli_transport *t, const char *cmd, a2m *h, const char *store,
		      a2m_bearer_tokens *tokens, const sigset_t *wait_mask)
{
	/* Writes wait for their sync off the workers (server/deferred.h). */
	static const a2m_http_defer defer = {a2m_handle_network_deferred, a2m_deferred_run,
					     a2m_deferred_finish, a2m_deferred_drop};
	char err[512];
	a2m_http *server = NULL;
	t->hcfg.tokens = tokens;
	t->hcfg.defer = &defer;
	if (a2m_http_start(h, &t->hcfg, &server, err, sizeof err) != 0) {
		fprintf(stderr, "a2m %s: %s\n", cmd, err);
		a2m_bearer_free(tokens);
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
	fprintf(stderr, "a2m %s: listening on %s (store %s, auth %s%s)\n", cmd,
		a2m_http_url(server), store, auth, t->hcfg.ui ? ", inspector at /ui/" : "");
	fflush(stderr);

	/* The workers were started with the stop signals blocked and inherit
	** that, so only this thread takes them, here; between them it removes
	** the records that expire (x-expiry) when no request came to. A worker
	** may write a record that expires sooner than the wait computed here,
	** and nothing wakes this thread for it: so it looks again at least
	** every SWEEP_LOOK_MS (a load of one atomic when nothing is due). */
	enum { SWEEP_LOOK_MS = 200 };
	while (!cli_stop_requested) {
		int64_t next_ms = -1;
		a2m_sweep(h, &next_ms);
		if (next_ms < 0 || next_ms > SWEEP_LOOK_MS)
			next_ms = SWEEP_LOOK_MS;
		struct timespec wake = {.tv_sec = next_ms / 1000,
					.tv_nsec = (long)(next_ms % 1000) * 1000000L};
		ppoll(NULL, 0, &wake, wait_mask);
	}

	if (a2m_http_stop(server) != 0) {
		/* A sync that never ended: closing the store would wait for it
		** too. Exiting leaves those writes unanswered (never acknowledged)
		** and the store as a crash would, which loses nothing acknowledged. */
		a2m_log(A2M_LOG_ERROR, "stopped (signal) without closing the store: writes "
			"still wait for a sync");
		_exit(A2M_EXIT_ERROR);
	}
	a2m_bearer_free(tokens);
	a2m_log(A2M_LOG_INFO, "stopped (signal)");
	return A2M_EXIT_OK;
}

int cli_transport_serve(cli_transport *t, const char *cmd, a2m *h, const char *store,
			a2m_bearer_tokens *tokens, const sigset_t *wait_mask)
{
	if (t->http)
		return serve_http(t, cmd, h, store, tokens, wait_mask);
	a2m_bearer_free(tokens);
	a2m_log(A2M_LOG_INFO, "serving %s on stdio", store);
	int rc = a2m_stdio_serve(h, STDIN_FILENO, STDOUT_FILENO, t->max_line, &cli_stop_requested,
				 wait_mask);
	a2m_log(A2M_LOG_INFO, "stopped (%s)", cli_stop_requested ? "signal" : "end of input");
	return rc == 0 ? A2M_EXIT_OK : A2M_EXIT_ERROR;
}
