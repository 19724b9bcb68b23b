/*
** corpus.c — `a2m corpus DIR`: a folder of documents served as a read-only
** A2M server (spec §2.1, "the smallest useful A2M server"; docs/CORPUS.md).
**
** Two handles on one SQLite file. The indexer (src/corpus/) writes the
** chunks through a writable handle of its own, with memory/remember and
** memory/forget like any client; the server answers clients from a second
** handle opened read-only, which refuses every write with READ_ONLY and
** follows the indexer's commits as any reader of the file does (the
** engine's data version, src/store/sqlite_journal.c). So nothing of the
** server had to change to serve a corpus, and what the indexer writes is
** exactly what a client could have written.
**
** The first sync runs before the server starts: a restart reads only the
** files that changed. With --watch the indexer keeps running on a thread
** of the watcher's (src/corpus/watch.c) while the server serves.
*/
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "a2m.h"
#include "cli/cli.h"
#include "cli/stop_signals.h"
#include "cli/transport_options.h"
#include "corpus/chunk.h"
#include "corpus/exclude.h"
#include "corpus/index.h"
#include "corpus/watch.h"
#include "server/inprocess.h"
#include "util/log.h"

static const char usage_head[] =
	"usage: a2m corpus [options] DIR\n"
	"\n"
	"Serves the documents under DIR as a read-only A2M 0.1 server, over stdio\n"
	"(the default) or HTTP: Markdown, plain text and source files, cut into\n"
	"chunks along headings and paragraphs, one record per chunk with the file's\n"
	"path, its heading path and its lines (docs/CORPUS.md). memory/recall and\n"
	"memory/timeline answer; every write is refused with READ_ONLY (-32004).\n"
	"The index is a SQLite file; a restart reads only the files that changed.\n"
	"\n"
	"options:\n";

static const char usage_corpus[] =
	"  --index PATH          the index's SQLite file (default DIR/" A2M_CORPUS_INDEX_NAME ")\n"
	"  --exclude PATTERN     leave out what PATTERN matches, a .gitignore line such as\n"
	"                        'build/', '*.min.js' or '/vendor' (repeatable; .git, .hg\n"
	"                        and .svn are always left out)\n"
	"  --exclude-from FILE   the patterns of FILE, one per line (a .gitignore)\n"
	"  --watch               follow changes while serving (inotify): an edited file\n"
	"                        is searchable again within a second\n"
	"  --chunk-size BYTES    the largest chunk (default 2000; 64 to 65536)\n"
	"  --max-file-size BYTES larger files are skipped (default 4194304)\n"
	"  --rebuild             throw the index away and build it again\n"
	"  --index-only          bring the index up to date, then exit without serving\n"
	"  --name NAME           server name reported by memory/describe (default\n"
	"                        a2m-corpus)\n"
	"  -h, --help            show this help\n"
	"\n";

/* What the server declares: what a read-only store fully implements
** (spec §2: nothing it could only half do). */
#define CORPUS_CAPABILITIES "core,external,prompt"

typedef struct corpus_args {
	const char  *dir;
	const char  *index;
	const char  *name;
	a2m_exclude *exclude;
	size_t       max_chunk;
	size_t       max_file;
	int          watch, rebuild, index_only;
} corpus_args;

/* A number of bytes within [lo, hi]; 0, or -1. */
static int parse_bytes(const char *v, size_t lo, size_t hi, size_t *out)
{
	char *end;
	if (!v || *v < '0' || *v > '9')
		return -1;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || *end || n < lo || n > hi)
		return -1;
	*out = (size_t)n;
	return 0;
}

/* Reads the command line; 0, or an exit status (help, or a usage error). */
static int parse(int argc, char **argv, corpus_args *a, cli_transport *t, int *exit_status)
{
	char why[512];
	int rc;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
			fputs(usage_head, stdout);
			fputs(cli_transport_usage, stdout);
			fputs(usage_corpus, stdout);
			fputs(cli_transport_usage_http, stdout);
			*exit_status = A2M_EXIT_OK;
			return 1;
		} else if ((rc = cli_transport_option(t, argc, argv, &i, why, sizeof why)) != 0) {
			if (rc < 0)
				goto usage;
		} else if (strcmp(o, "--index") == 0 || strcmp(o, "--name") == 0) {
			if (!v || !*v) {
				snprintf(why, sizeof why, "%s needs %s", o,
					 o[2] == 'i' ? "a file path" : "a name");
				goto usage;
			}
			*(o[2] == 'i' ? &a->index : &a->name) = argv[++i];
		} else if (strcmp(o, "--exclude") == 0) {
			if (!v || !*v) {
				snprintf(why, sizeof why, "%s needs a pattern such as 'build/'", o);
				goto usage;
			}
			if (a2m_exclude_add(a->exclude, argv[++i]) != 0) {
				snprintf(why, sizeof why, "out of memory");
				goto usage;
			}
		} else if (strcmp(o, "--exclude-from") == 0) {
			char err[400];
			if (!v || !*v) {
				snprintf(why, sizeof why, "%s needs a file path", o);
				goto usage;
			}
			if (a2m_exclude_add_file(a->exclude, argv[++i], err, sizeof err) != 0) {
				snprintf(why, sizeof why, "--exclude-from %s", err);
				goto usage;
			}
		} else if (strcmp(o, "--chunk-size") == 0) {
			if (parse_bytes(v, A2M_CHUNK_MIN, A2M_CORPUS_MAX_CHUNK_MAX, &a->max_chunk) != 0) {
				snprintf(why, sizeof why, "--chunk-size must be %d to %d bytes, not '%s'",
					 A2M_CHUNK_MIN, A2M_CORPUS_MAX_CHUNK_MAX, v ? v : "");
				goto usage;
			}
			i++;
		} else if (strcmp(o, "--max-file-size") == 0) {
			if (parse_bytes(v, 1, (size_t)1 << 30, &a->max_file) != 0) {
				snprintf(why, sizeof why, "--max-file-size must be 1 to 1073741824 bytes, "
					 "not '%s'", v ? v : "");
				goto usage;
			}
			i++;
		} else if (strcmp(o, "--watch") == 0) {
			a->watch = 1;
		} else if (strcmp(o, "--rebuild") == 0) {
			a->rebuild = 1;
		} else if (strcmp(o, "--index-only") == 0) {
			a->index_only = 1;
		} else if (o[0] == '-' && o[1]) {
			snprintf(why, sizeof why, "unknown option '%s'", o);
			goto usage;
		} else if (a->dir) {
			snprintf(why, sizeof why, "one folder only ('%s' and '%s')", a->dir, o);
			goto usage;
		} else {
			a->dir = o;
		}
	}
	if (!a->dir) {
		snprintf(why, sizeof why, "which folder? (a2m corpus DIR)");
		goto usage;
	}
	if (cli_transport_check(t, why, sizeof why) != 0)
		goto usage;
	if (a->index_only && a->watch) {
		snprintf(why, sizeof why, "--index-only and --watch exclude each other");
		goto usage;
	}
	return 0;
usage:
	*exit_status = a2m_cli_usage("corpus", "%s", why);
	return 1;
}

/* The server's handle: the index, read-only. NULL after printing why. */
static a2m *open_server(const char *index, const char *name)
{
	a2m_config *cfg;
	a2m *h = NULL;
	char *err = NULL;
	if (a2m_config_new(&cfg) != A2M_OK) {
		fprintf(stderr, "a2m corpus: out of memory\n");
		return NULL;
	}
	int rc = a2m_config_set(cfg, "engine", "sqlite");
	if (!rc)
		rc = a2m_config_set(cfg, "path", index);
	if (!rc)
		rc = a2m_config_set(cfg, "read_only", "1");
	if (!rc)
		rc = a2m_config_set(cfg, "capabilities", CORPUS_CAPABILITIES);
	if (!rc)
		rc = a2m_config_set(cfg, "name", name);
	if (rc)
		fprintf(stderr, "a2m corpus: %s\n", a2m_config_errmsg(cfg));
	else if (a2m_open(cfg, &h, &err) != A2M_OK)
		fprintf(stderr, "a2m corpus: %s: %s\n", index, err ? err : "cannot open");
	a2m_free(err);
	a2m_config_free(cfg);
	return h;
}

/* Removes the index and its companions (--rebuild). */
static int remove_index(const char *index)
{
	static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
	char path[PATH_MAX];
	for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
		snprintf(path, sizeof path, "%s%s", index, suffix[i]);
		if (unlink(path) != 0 && errno != ENOENT) {
			fprintf(stderr, "a2m corpus: --rebuild: %s: %s\n", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
** The first sync, and its one line: on stderr when it is a terminal, else
** at --log-level info (what a restart did is how it is checked).
*/
static int first_sync(a2m_corpus *c, const char *dir)
{
	a2m_corpus_stats st = {0};
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (a2m_corpus_sync(c, "", &st) != 0) {
		fprintf(stderr, "a2m corpus: %s: %s\n", dir, a2m_corpus_errmsg(c));
		return -1;
	}
	double s = seconds_since(&t0);
	char line[512];
	snprintf(line, sizeof line, "indexed %s: %zu files (%zu read, %zu unchanged), %zu removed, "
		 "%zu skipped; %zu chunks added, %zu removed; %.1f MB in %.2f s", dir, st.files,
		 st.read, st.unchanged, st.removed, st.skipped, st.chunks_added, st.chunks_removed,
		 (double)st.bytes / 1e6, s);
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "a2m corpus: %s\n", line);
	else
		a2m_log(A2M_LOG_INFO, "corpus: %s", line);
	return 0;
}

static int corpus(corpus_args *a, cli_transport *t)
{
	char root[PATH_MAX], index[PATH_MAX], err[512];
	struct stat sb;
	errno = 0;
	if (!realpath(a->dir, root) || stat(root, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		fprintf(stderr, "a2m corpus: %s: %s\n", a->dir,
			errno ? strerror(errno) : "not a folder");
		return A2M_EXIT_ERROR;
	}
	if (a->index)
		snprintf(index, sizeof index, "%s", a->index);
	else if (snprintf(index, sizeof index, "%s/%s", root, A2M_CORPUS_INDEX_NAME) >=
		 (int)sizeof index)
		return a2m_cli_usage("corpus", "the folder's path is too long for the index");

	/* Before the index is touched: a typo in the token file leaves nothing. */
	a2m_bearer_tokens *tokens;
	if (cli_transport_tokens(t, "corpus", &tokens) != 0)
		return A2M_EXIT_ERROR;
	if (a->rebuild && remove_index(index) != 0) {
		a2m_bearer_free(tokens);
		return A2M_EXIT_ERROR;
	}

	a2m_corpus_options o = {root, index, a->exclude, a->max_chunk, a->max_file,
				isatty(STDERR_FILENO), a2m_handle_value, a2m_handle_foresee};
	a2m_corpus *c = NULL;
	a2m_corpus_watch *w = NULL;
	a2m *h = NULL;
	int rc = A2M_EXIT_ERROR;
	if (a2m_corpus_open(&o, &c, err, sizeof err) != 0) {
		fprintf(stderr, "a2m corpus: %s: %s\n", index, err);
		goto done;
	}
	if (a->watch && a2m_corpus_watch_new(c, &w, err, sizeof err) != 0) {
		fprintf(stderr, "a2m corpus: %s\n", err);
		goto done;
	}
	/* The stop signals still kill here: a first index may be long, and the
	** table of files makes an interrupted one resume where it stopped. */
	if (first_sync(c, a->dir) != 0)
		goto done;
	if (a->index_only) {
		rc = A2M_EXIT_OK;
		goto done;
	}
	if (!a->watch) {
		a2m_corpus_close(c);  /* nothing more to write */
		c = NULL;
	}

	/* The loop takes the stop signals only while waiting; the watcher's
	** thread blocks them all. */
	sigset_t wait_mask;
	cli_stop_signals_block(&wait_mask);
	if (!(h = open_server(index, a->name)))
		goto done;
	if (w && a2m_corpus_watch_start(w, err, sizeof err) != 0) {
		fprintf(stderr, "a2m corpus: %s\n", err);
		goto done;
	}
	rc = cli_transport_serve(t, "corpus", h, index, tokens, &wait_mask);
	tokens = NULL;
done:
	a2m_corpus_watch_free(w);
	a2m_corpus_close(c);
	a2m_close(h);
	a2m_bearer_free(tokens);
	return rc;
}

int a2m_cmd_corpus(int argc, char **argv)
{
	corpus_args a = {0};
	a.name = "a2m-corpus";
	a.max_chunk = A2M_CORPUS_MAX_CHUNK;
	a.max_file = A2M_CORPUS_MAX_FILE;
	cli_transport t;
	cli_transport_init(&t);
	int status = A2M_EXIT_OK;
	if (!(a.exclude = a2m_exclude_new()) || a2m_exclude_add(a.exclude, ".git/") != 0 ||
	    a2m_exclude_add(a.exclude, ".hg/") != 0 || a2m_exclude_add(a.exclude, ".svn/") != 0) {
		fprintf(stderr, "a2m corpus: out of memory\n");
		a2m_exclude_free(a.exclude);
		return A2M_EXIT_ERROR;
	}
	if (parse(argc, argv, &a, &t, &status) == 0)
		status = corpus(&a, &t);
	a2m_exclude_free(a.exclude);
	return status;
}
