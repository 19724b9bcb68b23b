/*
** transfer_cmd.c — `a2m export` and `a2m import`: a store to JSON Lines and
** back, in this process, on the store the options name (server/export.c
** and server/import.c do the work; docs/EXPORT.md is the format).
**
** Both show a progress line when stderr is a terminal (util/progress.h).
** Export opens the file read-only, so it can run beside a server; import
** writes through the same path as every write of the server.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "cli/cli.h"
#include "cli/store_options.h"
#include "server/transfer.h"
#include "util/progress.h"

static const char export_usage[] =
	"usage: a2m export [--db PATH] [--config FILE] [store options] [-o FILE]\n"
	"\n"
	"Writes every record of an a2m database as JSON Lines: a header line naming\n"
	"the source and its configuration (memory/describe's result, the format's\n"
	"version, the number of records), then one record a line, oldest first, with\n"
	"every field: id, content, created_at, role, metadata, group, tier, salience,\n"
	"access_count, accessed_at, owner, session, key, revision, embedding, uri,\n"
	"media_type. The database is opened read-only, so a server may go on using\n"
	"it; the export is one snapshot. See docs/EXPORT.md.\n"
	"\n"
	"options:\n"
	"  --db PATH      the SQLite file (default $A2M_DB, else ./a2m.db)\n"
	"  --config FILE  the server's configuration file (its tiers)\n"
	"  -o, --output FILE  write there instead of standard output\n"
	"  -h, --help     show this help\n"
	"A progress line is shown on stderr when it is a terminal.\n"
	"\n"
	"exit status: 0 written; 1 the store could not be read or the file written; 2 usage.\n";

static const char import_usage[] =
	"usage: a2m import [--db PATH] [--config FILE] [store options] [--format F]\n"
	"                  [--tier NAME] [--batch N] [--dry-run] FILE|-\n"
	"\n"
	"Reads records into an a2m database: an a2m export (a2m export), or the\n"
	"knowledge graph of the MCP memory server (@modelcontextprotocol/server-memory,\n"
	"its memory.jsonl). Ids, timestamps, access counts and vectors are kept, so\n"
	"importing the same file twice changes nothing. A record whose id exists is\n"
	"skipped; a record whose key is held by another record (of the same owner) is\n"
	"not written, and named. The tiers the file uses must exist here (--config),\n"
	"and its vectors must have this store's width: both are checked before\n"
	"anything is written. Each batch is one transaction, ended as every write is\n"
	"(capacity kept). See docs/EXPORT.md.\n"
	"\n"
	"options:\n"
	"  --db PATH      the SQLite file (default $A2M_DB, else ./a2m.db; made if missing)\n"
	"  --config FILE  the server's configuration file (its tiers)\n"
	"  --memory       import into a store in memory, which is then dropped: a check\n"
	"                 that the whole file goes in\n"
	"  --format F     auto (default: from the first line), a2m or mcp-memory\n"
	"  --tier NAME    mcp-memory: the tier its records go to (default: the default tier)\n"
	"  --batch N      records per transaction (default 1000)\n"
	"  --dry-run      read and check every line; write nothing\n"
	"  -h, --help     show this help\n"
	"A progress line is shown on stderr when it is a terminal. The summary goes to\n"
	"standard output.\n"
	"\n"
	"exit status: 0 imported (records skipped or not written are counted, not\n"
	"errors); 1 the file or the store failed (the batches before the failure are\n"
	"written: import again once fixed); 2 usage.\n";

/* Reads the store options and the command's own; -1 on a usage error
** (already reported), 1 after --help. */
typedef struct cmd_args {
	const char *output;            /* export */
	const char *input;             /* import */
	a2m_import_options opt;        /* import */
} cmd_args;

static int parse(const char *cmd, cli_store *st, int argc, char **argv, cmd_args *a)
{
	char why[512];
	int erc, is_import = strcmp(cmd, "import") == 0;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
			fputs(is_import ? import_usage : export_usage, stdout);
			return 1;
		} else if ((erc = cli_store_option(st, argc, argv, &i, why, sizeof why)) != 0) {
			if (erc < 0)
				return a2m_cli_usage(cmd, "%s", why), -1;
		} else if (!is_import && (strcmp(s, "-o") == 0 || strcmp(s, "--output") == 0)) {
			if (i + 1 >= argc || !*argv[i + 1])
				return a2m_cli_usage(cmd, "%s needs a file", s), -1;
			a->output = argv[++i];
		} else if (is_import && strcmp(s, "--format") == 0) {
			const char *v = i + 1 < argc ? argv[++i] : "";
			if (strcmp(v, "auto") == 0)
				a->opt.format = A2M_FORMAT_AUTO;
			else if (strcmp(v, "a2m") == 0)
				a->opt.format = A2M_FORMAT_A2M;
			else if (strcmp(v, "mcp-memory") == 0)
				a->opt.format = A2M_FORMAT_MCP_MEMORY;
			else
				return a2m_cli_usage(cmd, "--format is auto, a2m or mcp-memory, not '%s'",
						     v), -1;
		} else if (is_import && strcmp(s, "--tier") == 0) {
			if (i + 1 >= argc || !*argv[i + 1])
				return a2m_cli_usage(cmd, "--tier needs a tier name"), -1;
			a->opt.tier = argv[++i];
		} else if (is_import && strcmp(s, "--batch") == 0) {
			char *end;
			const char *v = i + 1 < argc ? argv[++i] : "";
			errno = 0;
			unsigned long n = strtoul(v, &end, 10);
			if (errno || *end || !*v || *v == '-' || n < 1 || n > 100000)
				return a2m_cli_usage(cmd, "--batch is 1 to 100000 records, not '%s'", v), -1;
			a->opt.batch = n;
		} else if (is_import && strcmp(s, "--dry-run") == 0) {
			a->opt.dry_run = 1;
		} else if (is_import && (s[0] != '-' || strcmp(s, "-") == 0) && !a->input) {
			a->input = s;
		} else {
			return a2m_cli_usage(cmd, "unknown option '%s'", s), -1;
		}
	}
	if (cli_store_check(st, why, sizeof why) != 0)
		return a2m_cli_usage(cmd, "%s", why), -1;
	if (is_import && !a->input)
		return a2m_cli_usage(cmd, "name the file to read (- for standard input)"), -1;
	if (is_import && a->opt.tier && a->opt.format == A2M_FORMAT_A2M)
		return a2m_cli_usage(cmd, "--tier is for --format mcp-memory: an a2m export "
				     "names each record's tier"), -1;
	if (!is_import && cli_store_in_memory(st))
		return a2m_cli_usage(cmd, "a memory store is empty when this process opens it: "
				     "name a database with --db"), -1;
	return 0;
}

/* Opens the store the options name; NULL after saying why. */
static a2m *open_store(const char *cmd, cli_store *st)
{
	a2m *h = NULL;
	char *err = NULL;
	if (a2m_open(st->cfg, &h, &err) != A2M_OK) {
		fprintf(stderr, "a2m %s: %s\n", cmd, err ? err : "cannot open the store");
		a2m_free(err);
		return NULL;
	}
	return h;
}

static int run_export(cli_store *st, cmd_args *a)
{
	/* Read-only: the file must exist (nothing is made), and a server may
	** keep writing it meanwhile. */
	if (a2m_config_set(st->cfg, "read_only", "1") != A2M_OK) {
		fprintf(stderr, "a2m export: %s\n", a2m_config_errmsg(st->cfg));
		return A2M_EXIT_ERROR;
	}
	a2m *h = open_store("export", st);
	if (!h)
		return A2M_EXIT_ERROR;
	FILE *out = stdout;
	if (a->output && !(out = fopen(a->output, "w"))) {
		fprintf(stderr, "a2m export: %s: %s\n", a->output, strerror(errno));
		a2m_close(h);
		return A2M_EXIT_ERROR;
	}
	char err[512];
	int64_t n = 0;
	/* The header names the file absolutely (it is read elsewhere), or the
	** deployment without its password. */
	char *abs = cli_store_postgres(st) ? cli_store_shown(st) : realpath(cli_store_path(st), NULL);
	a2m_export_source src = {abs ? abs : cli_store_path(st)};
	a2m_progress *p = a2m_progress_start("a2m export", "records", 0);
	int rc = a2m_export(h, out, &src, p, &n, err, sizeof err);
	a2m_progress_end(p);
	free(abs);
	if (a->output && fclose(out) != 0 && rc == 0) {
		snprintf(err, sizeof err, "cannot write: %s", strerror(errno));
		rc = -1;
	}
	a2m_close(h);
	if (rc) {
		fprintf(stderr, "a2m export: %s%s%s\n", a->output ? a->output : "",
			a->output ? ": " : "", err);
		return A2M_EXIT_ERROR;
	}
	if (a->output)
		fprintf(stderr, "a2m export: %lld record%s to %s\n", (long long)n, n == 1 ? "" : "s",
			a->output);
	return A2M_EXIT_OK;
}

static int run_import(cli_store *st, cmd_args *a)
{
	FILE *in = stdin;
	if (strcmp(a->input, "-") != 0 && !(in = fopen(a->input, "r"))) {
		fprintf(stderr, "a2m import: %s: %s\n", a->input, strerror(errno));
		return A2M_EXIT_ERROR;
	}
	a->opt.name = strcmp(a->input, "-") == 0 ? "(standard input)" : a->input;
	a2m *h = open_store("import", st);
	if (!h) {
		if (in != stdin)
			fclose(in);
		return A2M_EXIT_ERROR;
	}
	char err[512];
	a2m_import_result res;
	a2m_progress *p = a2m_progress_start("a2m import", "records", 0);
	int rc = a2m_import(h, in, &a->opt, p, &res, err, sizeof err);
	a2m_progress_end(p);
	if (in != stdin)
		fclose(in);
	a2m_close(h);
	if (rc) {
		fprintf(stderr, "a2m import: %s\n", err);
		if (res.imported)
			fprintf(stderr, "a2m import: %lld record%s were written before it; importing "
				"the file again skips them\n", (long long)res.imported,
				res.imported == 1 ? "" : "s");
		a2m_import_result_free(&res);
		return A2M_EXIT_ERROR;
	}
	for (int64_t i = 0; i < res.key_held && i < A2M_IMPORT_NAMED; i++)
		fprintf(stderr, "a2m import: not written: %s (its key is held by another record)\n",
			res.held[i] ? res.held[i] : "(out of memory)");
	if (res.key_held > A2M_IMPORT_NAMED)
		fprintf(stderr, "a2m import: ... and %lld more not written for the same reason\n",
			(long long)(res.key_held - A2M_IMPORT_NAMED));
	if (a->opt.dry_run)
		printf("a2m import: %s (%s): %lld record%s read and checked; nothing written "
		       "(--dry-run)\n", a->opt.name, a2m_import_format_name(res.format),
		       (long long)res.lines, res.lines == 1 ? "" : "s");
	else
		/* Revisions (x-history) said only when the file had some. */
		printf("a2m import: %s (%s): %lld read, %lld imported, %lld skipped (id exists), "
		       "%lld not written (key held)%s%.0lld%s\n", a->opt.name,
		       a2m_import_format_name(res.format), (long long)res.lines,
		       (long long)res.imported, (long long)res.skipped, (long long)res.key_held,
		       res.revisions ? ", " : "", (long long)res.revisions,
		       !res.revisions ? "" : res.revisions == 1 ? " earlier revision read"
							     : " earlier revisions read");
	a2m_import_result_free(&res);
	return A2M_EXIT_OK;
}

static int transfer(const char *cmd, int argc, char **argv)
{
	cli_store st;
	cmd_args a;
	memset(&a, 0, sizeof a);
	if (cli_store_init(&st) != 0) {
		fprintf(stderr, "a2m %s: out of memory\n", cmd);
		return A2M_EXIT_ERROR;
	}
	int rc = parse(cmd, &st, argc, argv, &a);
	if (rc == 0)
		rc = strcmp(cmd, "import") == 0 ? run_import(&st, &a) : run_export(&st, &a);
	else
		rc = rc > 0 ? A2M_EXIT_OK : A2M_EXIT_USAGE;
	cli_store_free(&st);
	return rc;
}

int a2m_cmd_export(int argc, char **argv)
{
	return transfer("export", argc, argv);
}

int a2m_cmd_import(int argc, char **argv)
{
	return transfer("import", argc, argv);
}
