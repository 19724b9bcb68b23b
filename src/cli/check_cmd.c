/*
** check_cmd.c — `a2m check`: is a database consistent, and with --repair, make
** what is derivable consistent again (server/check.c does the work;
** docs/CHECK.md says what each area means).
**
** One line per finding on stdout, the area after a fixed-width tag, so a
** script can pick the problems out ("PROBLEM index: ..."); the summary
** last. Exit status: 0 nothing wrong (or nothing wrong left after a
** repair), 1 problems, 2 usage.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "a2m.h"
#include "cli/cli.h"
#include "cli/store_options.h"
#include "server/check.h"
#include "util/progress.h"

static const char usage[] =
	"usage: a2m check [--db PATH | --postgres URL] [--config FILE] [store options]\n"
	"                 [--repair] [--quiet]\n"
	"\n"
	"Checks that an a2m database agrees with itself: the SQLite file\n"
	"(integrity_check), the kept counts against the records, the term index\n"
	"against exactly the postings the records' text yields under this server's\n"
	"analyser, seqs (unique, at most the seq mark), the stored vectors, the\n"
	"procedural mirror's files against the database, the extensions' data\n"
	"(revision history, expiry, duplicate fingerprints), a PostgreSQL\n"
	"deployment's event log, and that no group spans tiers. The store is opened\n"
	"read-only (a deployment is read in one REPEATABLE READ snapshot) and nothing\n"
	"is changed, so it can run beside servers. Give it the options the server\n"
	"runs with: --config names the mirrored (procedural) tier and the ranking.\n"
	"See docs/CHECK.md.\n"
	"\n"
	"options:\n"
	"  --db PATH      the SQLite file (default $A2M_DB, else ./a2m.db)\n"
	"  --postgres URL a PostgreSQL deployment (a libpq connection string)\n"
	"  --config FILE  the server's configuration file (tiers, ranking)\n"
	"  --repair       rebuild what is derived from the records where it disagrees:\n"
	"                 the term index, the counts, the seq mark, malformed generated\n"
	"                 vectors, the mirror's files, SQLite's own indexes (REINDEX);\n"
	"                 each in a transaction; never a record's content. Then check\n"
	"                 again. Best run with the server stopped (on PostgreSQL each\n"
	"                 rebuild holds the deployment's write lock: servers wait).\n"
	"  -q, --quiet    print only the problems and the summary\n"
	"  -h, --help     show this help\n"
	"The other store options of a2m serve (--capabilities, --embed, ...) are\n"
	"accepted too, and mean what they mean there.\n"
	"\n"
	"Each finding is one line: 'ok', 'PROBLEM', 'repair' or 'FAILED', then the\n"
	"area (file, counts, index, seqs, vectors, mirror, events, history, expiry,\n"
	"dedup, groups) and what was found.\n"
	"\n"
	"A progress line is shown on stderr when it is a terminal.\n"
	"\n"
	"exit status: 0 no problem (with --repair: none left); 1 problems found (with\n"
	"--repair: problems it could not repair), or the file could not be read; 2 usage.\n";

typedef struct printer {
	int quiet;
	int after_shown;  /* the header of the check after the repair is printed */
	/* The progress line of the walk under way (NULL: none, or no terminal). */
	a2m_progress *bar;
	const char   *unit;  /* its walk: the engine's literal */
	int           area, phase;
} printer;

/*
** A walk's progress on stderr's terminal (util/progress.h draws nothing
** elsewhere): one line per walk, "a2m check: index: 41 000 of 100 000
** records analysed (41%), ...", gone when the walk ends.
*/
static void show_progress(void *ctx, a2m_check_phase phase, a2m_check_area area,
			  const char *unit, int64_t done, int64_t total)
{
	printer *p = ctx;
	if (p->bar && (p->unit != unit || p->area != (int)area || p->phase != (int)phase)) {
		a2m_progress_erase(p->bar);
		p->bar = NULL;
	}
	if (done == total) {
		a2m_progress_erase(p->bar);
		p->bar = NULL;
		return;
	}
	if (!p->bar) {
		char what[96];
		snprintf(what, sizeof what, "a2m check: %s%s", phase == A2M_CHECK_AFTER ? "again: " :
			 phase == A2M_CHECK_REPAIRING ? "repair: " : "", a2m_check_area_name(area));
		if (!(p->bar = a2m_progress_start(what, unit, total)))
			return;
		p->unit = unit;
		p->area = (int)area;
		p->phase = (int)phase;
	}
	a2m_progress_total(p->bar, total);
	a2m_progress_update(p->bar, done);
}

static void print_finding(void *ctx, a2m_check_phase phase, a2m_check_area area, int problem,
			  const char *msg)
{
	printer *p = ctx;
	int header = phase == A2M_CHECK_AFTER && !p->after_shown;
	p->after_shown |= header;
	if (p->quiet && !problem)
		return;
	/* A finding never shares the progress line: it is erased first and drawn
	** again below the finding at the next update that is due. */
	a2m_progress_clear(p->bar);
	if (header && !p->quiet)
		printf("after the repair:\n");
	const char *tag = phase == A2M_CHECK_REPAIRING ? (problem ? "FAILED " : "repair ")
						       : (problem ? "PROBLEM" : "ok     ");
	printf("%s %s: %s\n", tag, a2m_check_area_name(area), msg);
	/* Before the next drawing on stderr, when both are one terminal. */
	fflush(stdout);
}

/* "index, mirror": the names of the areas in mask. */
static void area_list(unsigned mask, char *out, size_t size)
{
	size_t at = 0;
	out[0] = '\0';
	for (int a = 0; a < A2M_CHECK_AREAS; a++)
		if (mask & (1u << a)) {
			int n = snprintf(out + at, size - at, "%s%s", at ? ", " : "",
					 a2m_check_area_name((a2m_check_area)a));
			if (n < 0 || (size_t)n >= size - at)
				break;
			at += (size_t)n;
		}
}

int a2m_cmd_check(int argc, char **argv)
{
	cli_store st;
	char why[512];
	int repair = 0, quiet = 0, erc;
	if (cli_store_init(&st) != 0) {
		fprintf(stderr, "a2m check: out of memory\n");
		return A2M_EXIT_ERROR;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage, stdout);
			cli_store_free(&st);
			return A2M_EXIT_OK;
		} else if ((erc = cli_store_option(&st, argc, argv, &i, why, sizeof why)) != 0) {
			if (erc < 0) {
				cli_store_free(&st);
				return a2m_cli_usage("check", "%s", why);
			}
		} else if (strcmp(a, "--repair") == 0) {
			repair = 1;
		} else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
			quiet = 1;
		} else {
			cli_store_free(&st);
			return a2m_cli_usage("check", "unknown option '%s'", a);
		}
	}
	if (cli_store_in_memory(&st)) {
		cli_store_free(&st);
		return a2m_cli_usage("check", "a memory store has nothing on disk to check: name a "
				     "database with --db");
	}
	if (cli_store_check(&st, why, sizeof why) != 0) {
		cli_store_free(&st);
		return a2m_cli_usage("check", "%s", why);
	}
	printer p;
	memset(&p, 0, sizeof p);
	p.quiet = quiet;
	a2m_check_run run;
	memset(&run, 0, sizeof run);
	run.repair = repair;
	run.report = print_finding;
	/* Only a terminal shows it: elsewhere the engines need not even count. */
	run.progress = isatty(STDERR_FILENO) ? show_progress : NULL;
	run.ctx = &p;
	/* What the summary may say of the store (a deployment's never holds a password). */
	char path[1024];
	char *shown = cli_store_shown(&st);
	snprintf(path, sizeof path, "%s", shown ? shown : "the store");
	free(shown);
	int rc = a2m_check_store(st.cfg, &run, why, sizeof why);
	a2m_progress_erase(p.bar);
	cli_store_free(&st);
	if (rc != 0) {
		fprintf(stderr, "a2m check: %s\n", why);
		return A2M_EXIT_ERROR;
	}
	char found[128], left[128];
	area_list(run.found, found, sizeof found);
	area_list(run.remaining, left, sizeof left);
	if (!run.found)
		printf("a2m check: %s: no problems\n", path);
	else if (!repair)
		printf("a2m check: %s: problems in %s (a2m check --repair rebuilds what is "
		       "derivable)\n", path, found);
	else if (!run.remaining)
		printf("a2m check: %s: problems in %s, repaired; none remain\n", path, found);
	else
		printf("a2m check: %s: problems in %s; after the repair, problems remain in %s\n",
		       path, found, left);
	fflush(stdout);
	return run.remaining ? A2M_EXIT_ERROR : A2M_EXIT_OK;
}
