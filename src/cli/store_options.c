/*
** store_options.c — the command-line options that describe a store, read
** into the library's named options (see store_options.h).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/store_options.h"
#include "server/deployment.h"

/* A flag that sets one library option to the value after it. */
typedef struct valued {
	const char *flag;
	const char *option;
	const char *needs;  /* what the value is, for the usage message */
} valued;

static const valued valued_flags[] = {
	{"--db", "path", "a file path"},
	{"--postgres", "postgres", "a connection string"},
	{"--name", "name", "a name"},
	{"--config", "config_file", "a file path"},
	{"--capabilities", "capabilities", "a list such as core,tiers,keys"},
	{"--metric", "metric", "cosine, dot or l2"},
	{"--vector-search", "vector_search", "exact or quantized"},
	{"--vector-pool", "vector_pool", "a number of rows per result, 1 to 100000"},
	{"--events-retain", "events_retain", "a positive number"},
	{"--helper-threads", "helper_threads", "a number of threads"},
	{"--postings-cache-mb", "postings_cache_mb", "a number of MiB, 1 to 65536"},
	{"--mmap-mb", "mmap_mb", "a number of MiB, 0 to 65536"},
	{"--embed", "embed_kind", "ollama or openai"},
	{"--embed-url", "embed_url", "a URL"},
	{"--embed-model", "embed_model", "a model name"},
	{"--embed-timeout", "embed_timeout_ms", "a number of milliseconds"},
	{"--embed-weight", "embed_weight", "a percentage, 0 to 100"},
};

int cli_store_init(cli_store *st)
{
	memset(st, 0, sizeof *st);
	if (a2m_config_new(&st->cfg) != A2M_OK)
		return -1;
	const char *db = getenv("A2M_DB");
	if (db && *db && a2m_config_set(st->cfg, "path", db) != A2M_OK) {
		cli_store_free(st);
		return -1;
	}
	/* A deployment named in the environment is the default store. */
	const char *pg = getenv("A2M_POSTGRES");
	if (pg && *pg && (a2m_config_set(st->cfg, "postgres", pg) != A2M_OK ||
			  a2m_config_set(st->cfg, "engine", "postgres") != A2M_OK)) {
		cli_store_free(st);
		return -1;
	}
	return 0;
}

void cli_store_free(cli_store *st)
{
	a2m_config_free(st->cfg);
	st->cfg = NULL;
}

/* Sets option to v, with the library's reason when it refuses. */
static int set(cli_store *st, const char *flag, const char *option, const char *v, char *why,
	       size_t why_size)
{
	if (a2m_config_set(st->cfg, option, v) == A2M_OK)
		return 1;
	snprintf(why, why_size, "%s: %s", flag, a2m_config_errmsg(st->cfg));
	return -1;
}

int cli_store_option(cli_store *st, int argc, char **argv, int *i, char *why,
		     size_t why_size)
{
	const char *a = argv[*i];
	if (strcmp(a, "--memory") == 0)
		return set(st, a, "engine", "memory", why, why_size);
	if (strcmp(a, "--read-only") == 0)
		return set(st, a, "read_only", "1", why, why_size);
	if (strcmp(a, "--synchronous-normal") == 0)
		return set(st, a, "synchronous", "normal", why, why_size);
	if (strcmp(a, "--no-group-commit") == 0)
		return set(st, a, "group_commit", "0", why, why_size);
	if (strcmp(a, "--capacity-after-sync") == 0)
		return set(st, a, "capacity_after_sync", "1", why, why_size);
	const valued *f = NULL;
	for (size_t k = 0; k < sizeof valued_flags / sizeof valued_flags[0]; k++)
		if (strcmp(a, valued_flags[k].flag) == 0)
			f = &valued_flags[k];
	/* The key is only ever named by an environment variable: a command
	** line is visible to every user of the machine. */
	int key_env = strcmp(a, "--embed-key-env") == 0;
	if (!f && !key_env)
		return 0;
	if (*i + 1 >= argc || !*argv[*i + 1]) {
		snprintf(why, why_size, "%s needs %s", a, f ? f->needs : "a variable name");
		return -1;
	}
	const char *v = argv[++*i];
	if (strncmp(a, "--embed-", 8) == 0)
		st->embed_other = 1;
	if (key_env) {
		const char *key = getenv(v);
		if (!key || !*key) {
			snprintf(why, why_size, "--embed-key-env: environment variable %s is not set", v);
			return -1;
		}
		return set(st, a, "embed_api_key", key, why, why_size);
	}
	/* --db names a file, --postgres a deployment: each also chooses its engine. */
	if (strcmp(a, "--db") == 0 && set(st, a, "engine", "sqlite", why, why_size) < 0)
		return -1;
	if (strcmp(a, "--postgres") == 0 && set(st, a, "engine", "postgres", why, why_size) < 0)
		return -1;
	return set(st, a, f->option, v, why, why_size);
}

int cli_store_check(const cli_store *st, char *why, size_t why_size)
{
	const char *kind = a2m_config_get(st->cfg, "embed_kind");
	int file = a2m_config_get(st->cfg, "config_file") != NULL;
	if (!kind && st->embed_other && !file) {
		snprintf(why, why_size, "the --embed-* options need --embed ollama|openai");
		return -1;
	}
	if (kind && strcmp(kind, "openai") == 0 && !a2m_config_get(st->cfg, "embed_url") && !file) {
		snprintf(why, why_size, "--embed openai needs --embed-url");
		return -1;
	}
	return 0;
}

int cli_store_in_memory(const cli_store *st)
{
	return strcmp(a2m_config_get(st->cfg, "engine"), "memory") == 0;
}

const char *cli_store_path(const cli_store *st)
{
	return a2m_config_get(st->cfg, "path");
}

int cli_store_postgres(const cli_store *st)
{
	return strcmp(a2m_config_get(st->cfg, "engine"), "postgres") == 0;
}

char *cli_store_shown(const cli_store *st)
{
	if (cli_store_in_memory(st))
		return strdup(":memory:");
	if (cli_store_postgres(st))
		return a2m_deployment_shown(a2m_config_get(st->cfg, "postgres"));
	return strdup(cli_store_path(st));
}
