/*
** client_cmds.c — the client commands' command line: `a2m recall`, `a2m
** remember` and the rest (the verbs themselves are client_verbs.c).
**
** Every verb takes the same connection options (--http URL, the default, or
** --stdio CMD... last), --owner, --json and --help, plus the options of its
** own from one shared table, so a flag means the same thing in every verb.
** Exit statuses: 0 ok, 1 a protocol or connection error (the message on
** stderr), 2 a command line that cannot be run (one line on stderr).
*/
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client_cmds.h"
#include "util/json_write.h"

/* The verb-specific options: flag, value name (NULL: a switch), help. */
static const struct {
	const char *flag;
	const char *value;
	const char *help;
} options[O_COUNT] = {
	[O_WHERE]     = {"--where", "JSON", "filter: field or metadata equality, e.g. '{\"role\":\"user\"}'"},
	[O_LIMIT]     = {"--limit", "N", "at most N records"},
	[O_TIER]      = {"--tier", "TIER", "the tier (see a2m describe)"},
	[O_KEY]       = {"--key", "KEY", "address the record: a later write to KEY replaces it"},
	[O_KEY_PREFIX] = {"--key-prefix", "P", "only records whose key is at or under P"},
	[O_SESSION]   = {"--session", "S", "the conversation it belongs to"},
	[O_META]      = {"--meta", "JSON", "metadata, a JSON object kept with the record"},
	[O_ROLE]      = {"--role", "ROLE", "who produced it: user, assistant, tool, system..."},
	[O_ID]        = {"--id", "ID", "a record id (repeatable)"},
	[O_GROUP]     = {"--group", "G", "records of one group are kept or moved together"},
	[O_QUERY]     = {"--query", "Q", "what the query recalls"},
	[O_AMOUNT]    = {"--amount", "X", "how much to add (default 1)"},
	[O_SALIENCE]  = {"--salience", "X", "salience"},
	[O_CURSOR]    = {"--cursor", "C", "read the events after this cursor (default: now)"},
	[O_KIND]      = {"--kind", "KIND", "only events of this kind (repeatable)"},
	[O_FOLLOW]    = {"--follow", NULL, "keep polling and print events as they arrive; ^C stops"},
	[O_INTERVAL]  = {"--interval", "MS", "with --follow: milliseconds between polls (default 1000)"},
	[O_LINES]     = {"--lines", NULL, "one record per line of the text"},
	[O_MIN_SCORE] = {"--min-score", "X", "drop records scoring below X (server-relative)"},
	[O_LONG]      = {"--long", NULL, "more detail: id, tier, key and session columns"},
	[O_INTO]      = {"--into", "TIER", "the tier the summary is written to"},
};

/* The text after `a2m` in the verb list of `a2m --help`. */
const char a2m_client_usage[] =
	"  describe       what the server is: capabilities, tiers, limits\n"
	"  remember       store text (arguments or stdin) as a record\n"
	"  recall         search by relevance: score and content, best first\n"
	"  timeline       replay in creation order: time, role, content\n"
	"  forget         delete records by id, query, where, tier or key prefix\n"
	"  fetch          read the record at a key (keys)\n"
	"  promote        move records to another tier (tiers)\n"
	"  consolidate    let the store reorganise its tiers (tiers)\n"
	"  reinforce      raise the salience of records (salience)\n"
	"  summarize      distill records into one stored summary (summarize)\n"
	"  events         what changed since a cursor; --follow to watch (events)\n"
	"  session list   the conversations in the store (sessions)\n"
	"  session close  end a conversation: flush it from working memory (sessions)\n";

int a2m_client_command(const char *name)
{
	if (strcmp(name, "session") == 0)
		return 1;
	for (size_t i = 0; i < cmd_verb_count; i++)
		if (strcmp(cmd_verbs[i].name, name) == 0)
			return 1;
	return 0;
}

int cmd_usage_error(cmd_ctx *cx, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s (try '%s --help')\n", cx->prog, msg, cx->prog);
	return A2M_EXIT_USAGE;
}

static void print_help(const cmd_ctx *cx)
{
	const cmd_verb *v = cx->verb;
	printf("usage: a2m %s [options]%s%s\n", v->name, *v->synopsis ? " " : "", v->synopsis);
	printf("       a2m %s [options] --stdio CMD [ARGS...]\n\n", v->name);
	printf("%s%s", v->summary, v->details ? v->details : "");
	printf("\noptions:\n");
	for (int o = 0; o < O_COUNT; o++) {
		if (!(v->options & OPT(o)))
			continue;
		char left[40];
		snprintf(left, sizeof left, "%s%s%s%s", o == O_LONG ? "-l, " : "", options[o].flag,
			 options[o].value ? " " : "", options[o].value ? options[o].value : "");
		printf("  %-20s  %s\n", left, options[o].help);
	}
	printf("  %-20s  %s\n", "--owner OWNER", "act as this owner (servers declaring scopes)");
	printf("  %-20s  %s\n", "--json", "print the raw result object as one line of JSON");
	printf("  %-20s  %s\n", "-h, --help", "show this help");
	printf("\nthe server:\n%s", cli_target_help_remote);
	printf("\nexit status: 0 ok, 1 protocol or connection error, 2 usage error\n");
}

static const cmd_verb *find_verb(const char *name)
{
	for (size_t i = 0; i < cmd_verb_count; i++)
		if (strcmp(cmd_verbs[i].name, name) == 0)
			return &cmd_verbs[i];
	return NULL;
}

/* Parses argv (after the verb's name) into cx. Returns -1 to go on, or the
** exit status to end with (help printed, usage error). */
static int parse(cmd_ctx *cx, int argc, char **argv)
{
	char why[256];
	cx->args = calloc((size_t)argc + 1, sizeof *cx->args);
	cx->ids = json_array();
	cx->kinds = json_array();
	if (!cx->args || !cx->ids || !cx->kinds) {
		fprintf(stderr, "%s: out of memory\n", cx->prog);
		return A2M_EXIT_ERROR;
	}
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		/* Everything we send is JSON text, which is UTF-8 (spec §8.2). */
		json_t *probe = json_string(a);
		if (!probe)
			return cmd_usage_error(cx, "argument %d is not valid UTF-8", i + 1);
		json_decref(probe);
		int used = cli_target_option(&cx->target, CLI_TARGET_REMOTE, argc, argv, &i, why,
					     sizeof why);
		if (used < 0)
			return cmd_usage_error(cx, "%s", why);
		if (used)
			continue;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			print_help(cx);
			return A2M_EXIT_OK;
		}
		if (strcmp(a, "--json") == 0) {
			cx->json = 1;
			continue;
		}
		if (strcmp(a, "--owner") == 0) {
			if (i + 1 >= argc || !*argv[i + 1])
				return cmd_usage_error(cx, "--owner needs a name");
			cx->owner = argv[++i];
			continue;
		}
		if (strcmp(a, "-l") == 0 && (cx->verb->options & OPT(O_LONG))) {
			cx->long_form = 1;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			while (++i < argc)
				cx->args[cx->nargs++] = argv[i];
			break;
		}
		if (a[0] == '-' && a[1] == '-') {
			int o;
			for (o = 0; o < O_COUNT; o++)
				if ((cx->verb->options & OPT(o)) && strcmp(a, options[o].flag) == 0)
					break;
			if (o == O_COUNT)
				return cmd_usage_error(cx, "unknown option '%s'", a);
			if (!options[o].value) {
				cx->opt[o] = "";
				if (o == O_LONG)
					cx->long_form = 1;
				continue;
			}
			if (i + 1 >= argc)
				return cmd_usage_error(cx, "%s needs %s", a, options[o].value);
			cx->opt[o] = argv[++i];
			if (o == O_ID)
				json_array_append_new(cx->ids, json_string(cx->opt[o]));
			if (o == O_KIND)
				json_array_append_new(cx->kinds, json_string(cx->opt[o]));
			continue;
		}
		if (a[0] == '-' && a[1] && a[1] != '-' && !(a[1] >= '0' && a[1] <= '9'))
			return cmd_usage_error(cx, "unknown option '%s'", a);
		cx->args[cx->nargs++] = argv[i];
	}
	return -1;
}

int a2m_cmd_client(int argc, char **argv)
{
	cmd_ctx cx;
	memset(&cx, 0, sizeof cx);
	char prog[64];
	const char *name = argv[0];
	int skip = 1;
	if (strcmp(name, "session") == 0) {
		/* Two-word verbs: "session list", "session close". */
		if (argc < 2 || argv[1][0] == '-') {
			if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
				printf("usage: a2m session list [options]\n"
				       "       a2m session close SESSION [options]\n"
				       "Run 'a2m session list --help' or 'a2m session close --help'.\n");
				return A2M_EXIT_OK;
			}
			fprintf(stderr, "a2m session: say list or close (try 'a2m --help')\n");
			return A2M_EXIT_USAGE;
		}
		snprintf(prog, sizeof prog, "session %s", argv[1]);
		name = prog;
		skip = 2;
	}
	cx.verb = find_verb(name);
	if (!cx.verb) {
		fprintf(stderr, "a2m: unknown command '%s' (try 'a2m --help')\n", name);
		return A2M_EXIT_USAGE;
	}
	char progname[80];
	snprintf(progname, sizeof progname, "a2m %s", cx.verb->name);
	cx.prog = progname;
	if (cli_target_init(&cx.target, CLI_CONN_HTTP) != 0) {
		fprintf(stderr, "%s: out of memory\n", progname);
		return A2M_EXIT_ERROR;
	}

	int rc = parse(&cx, argc - skip, argv + skip);
	if (rc < 0)
		rc = cx.verb->run(&cx);
	cli_conn_close(cx.conn);
	cli_target_free(&cx.target);
	json_decref(cx.ids);
	json_decref(cx.kinds);
	free(cx.args);
	return rc;
}

/* ---- helpers for the verbs ---- */

/* Connects and negotiates on first use. Returns 0 or an exit status. */
static int connect(cmd_ctx *cx)
{
	if (cx->conn)
		return 0;
	cli_error err = {0};
	if (cli_conn_open(&cx->target, cx->owner, &cx->conn, &err) != 0) {
		if (err.kind == CLI_ERR_PROTOCOL)
			fprintf(stderr, "%s: memory/describe failed: error %d %s: %s\n", cx->prog,
				err.code, cli_error_name(err.code), err.message);
		else
			fprintf(stderr, "%s: %s\n", cx->prog, err.message);
		cli_error_clear(&err);
		return A2M_EXIT_ERROR;
	}
	return 0;
}

int cmd_call(cmd_ctx *cx, const char *method, json_t *params, int retry_safe,
	     json_t **result)
{
	*result = NULL;
	int rc = connect(cx);
	if (rc != 0) {
		json_decref(params);
		return rc;
	}
	const char *cap = cli_method_capability(method);
	if (cap && !cli_conn_declares(cx->conn, cap)) {
		fprintf(stderr, "%s: the server does not declare the '%s' capability, so it has "
			"no %s\n", cx->prog, cap, method);
		json_decref(params);
		return A2M_EXIT_ERROR;
	}
	if (strcmp(method, "memory/describe") == 0) {
		/* Already asked, with the same owner, to negotiate. */
		json_decref(params);
		*result = json_incref((json_t *)cli_conn_describe(cx->conn));
		return 0;
	}
	cli_error err = {0};
	rc = cli_conn_call(cx->conn, method, params, retry_safe, result, &err);
	json_decref(params);
	if (rc == 0)
		return 0;
	if (err.kind == CLI_ERR_PROTOCOL) {
		fprintf(stderr, "%s: error %d %s: %s", cx->prog, err.code,
			cli_error_name(err.code), err.message);
		if (err.data) {
			char *data = a2m_json_write(err.data, NULL);
			fprintf(stderr, " (data: %s)", data ? data : "?");
			free(data);
		}
		fputc('\n', stderr);
	} else {
		fprintf(stderr, "%s: %s\n", cx->prog, err.message);
	}
	cli_error_clear(&err);
	return A2M_EXIT_ERROR;
}

json_t *cmd_params(cmd_ctx *cx)
{
	json_t *p = json_object();
	if (p && cx->owner)
		json_object_set_new(p, "owner", json_string(cx->owner));
	return p;
}

int cmd_put_int(cmd_ctx *cx, enum cmd_opt o, long long min, json_t *params, const char *name)
{
	const char *v = cx->opt[o];
	if (!v)
		return 0;
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (errno || end == v || *end || n < min)
		return cmd_usage_error(cx, "%s must be an integer >= %lld, not '%s'",
				       options[o].flag, min, v);
	json_object_set_new(params, name, json_integer(n));
	return 0;
}

int cmd_put_number(cmd_ctx *cx, enum cmd_opt o, json_t *params, const char *name)
{
	const char *v = cx->opt[o];
	if (!v)
		return 0;
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || end == v || *end || d != d)
		return cmd_usage_error(cx, "%s must be a number, not '%s'", options[o].flag, v);
	json_object_set_new(params, name, json_real(d));
	return 0;
}

int cmd_put_object(cmd_ctx *cx, enum cmd_opt o, json_t *params, const char *name)
{
	const char *v = cx->opt[o];
	if (!v)
		return 0;
	json_error_t jerr;
	json_t *obj = json_loads(v, JSON_DECODE_ANY, &jerr);
	if (!json_is_object(obj)) {
		json_decref(obj);
		return cmd_usage_error(cx, "%s must be a JSON object such as '{\"role\":\"user\"}'",
				       options[o].flag);
	}
	json_object_set_new(params, name, obj);
	return 0;
}

void cmd_put_string(cmd_ctx *cx, enum cmd_opt o, json_t *params, const char *name)
{
	if (cx->opt[o])
		json_object_set_new(params, name, json_string(cx->opt[o]));
}

void cmd_print_json(const json_t *v)
{
	size_t n;
	char *text = a2m_json_write(v, &n);
	if (text) {
		fwrite(text, 1, n, stdout);
		fputc('\n', stdout);
	}
	free(text);
}

int cmd_print(cmd_ctx *cx, char *text)
{
	if (!text) {
		fprintf(stderr, "%s: out of memory\n", cx->prog);
		return A2M_EXIT_ERROR;
	}
	fputs(text, stdout);
	free(text);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "%s: cannot write the output: %s\n", cx->prog, strerror(errno));
		return A2M_EXIT_ERROR;
	}
	return A2M_EXIT_OK;
}
