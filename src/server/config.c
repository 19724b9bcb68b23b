/*
** config.c — the options a store is opened with: the one table that names,
** validates and defaults each of them, the public setters over it
** (include/a2m.h), the configuration file that fills what the caller left
** unset (docs/CONFIG.md), and the capability list.
*/
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "server/config.h"
#include "embed/embedder.h"
#include "protocol/protocol.h"
#include "stack/stack.h"
#include "util/buf.h"
#include "util/json_read.h"

typedef enum { OPT_TEXT, OPT_INT } opt_kind;

typedef struct option {
	const char *name;
	opt_kind    kind;
	size_t      offset;    /* of the char * (text) or int64_t (int) in a2m_config */
	const char *def_text;  /* text: the default (NULL: none) */
	const char *choices;   /* text: the values it may take, '|'-separated; NULL: any */
	int64_t     def, min, max;  /* int */
	const char *file;      /* its member in the configuration file, dotted; NULL: none */
} option;

#define TEXT(n, d, c, f)       {#n, OPT_TEXT, offsetof(a2m_config, n), d, c, 0, 0, 0, f}
#define INT(n, d, lo, hi, f)   {#n, OPT_INT, offsetof(a2m_config, n), NULL, NULL, d, lo, hi, f}

/* Every option, with its default and its bounds: the one place they live
** (describe reports whatever is in force). */
static const option options[] = {
	TEXT(engine, "sqlite", "sqlite|memory|postgres", NULL),
	TEXT(path, "a2m.db", NULL, NULL),
	/* The file's only when the caller chose no store (load_file). */
	TEXT(postgres, NULL, NULL, "postgres"),
	TEXT(name, "a2m", NULL, "name"),
	TEXT(capabilities, NULL, NULL, "capabilities"),
	TEXT(synchronous, "full", "full|normal", NULL),
	TEXT(config_file, NULL, NULL, NULL),
	TEXT(metric, "cosine", "cosine|dot|l2", "embeddings.metric"),
	/* Exact vector search is the default and the truth; "quantized" is
	** the opt-in approximate mode (docs/RANKING.md §6), vector_pool its
	** rows measured exactly per result wanted. */
	TEXT(vector_search, "exact", "exact|quantized", "embeddings.search"),
	TEXT(ranking, "bm25", "bm25|lexical", NULL),
	TEXT(embed_kind, NULL, "ollama|openai", "embeddings.embedder.kind"),
	TEXT(embed_url, NULL, NULL, "embeddings.embedder.url"),
	TEXT(embed_model, NULL, NULL, "embeddings.embedder.model"),
	TEXT(embed_api_key, NULL, NULL, NULL),
	INT(read_only, 0, 0, 1, NULL),
	INT(group_commit, 1, 0, 1, NULL),
	INT(capacity_after_sync, 0, 0, 1, NULL),
	INT(max_records_per_call, 1000, 1, INT64_MAX, "limits.max_records_per_call"),
	INT(max_content_length, 1048576, 1, INT64_MAX, "limits.max_content_length"),
	INT(max_recall_limit, 1000, 1, INT64_MAX, "limits.max_recall_limit"),
	INT(default_recall_limit, 10, 1, INT64_MAX, "limits.default_recall_limit"),
	/* Every other dimension of a request (docs/PROTOCOL.md, Limits): the
	** bounds keep each well below what jansson and the stores can hold. */
	INT(max_depth, 32, 4, 1000, "limits.max_depth"),
	INT(max_string_bytes, 65536, 64, INT64_MAX, "limits.max_string_bytes"),
	INT(max_metadata_bytes, 1048576, 64, INT64_MAX, "limits.max_metadata_bytes"),
	INT(max_ids_per_call, 10000, 1, INT64_MAX, "limits.max_ids_per_call"),
	INT(max_where_fields, 64, 1, INT64_MAX, "limits.max_where_fields"),
	INT(max_where_values, 1000, 1, INT64_MAX, "limits.max_where_values"),
	INT(max_dimensions, 65536, 1, 1048576, "limits.max_dimensions"),
	INT(events_retain, 1024, 1, INT64_MAX, "events.retain"),
	INT(touch_buffer, A2M_TOUCH_BUFFER, 1, INT64_MAX, NULL),
	/* -1, the default, is resolved at open (a2m_helpers_default): one per
	** core but the caller's, at most 4. */
	INT(helper_threads, -1, 0, A2M_HELPER_THREADS_MAX, "helper_threads"),
	/* SQLite: each connection's postings cache (docs/RANKING.md §5), in MiB. */
	/* 0, the default (not a value one may set): 64 MiB, growing with the
	** index to 256 MiB on the main connection (sqlite_index.h). */
	INT(postings_cache_mb, 0, 1, 65536, "postings_cache_mb"),
	/* SQLite: the file read through a memory map, in MiB (0: pread; SQLite
	** caps the map, at 2 GiB - 64 KiB in Debian's build; docs/CONFIG.md). */
	INT(mmap_mb, 2048, 0, 65536, "mmap_mb"),
	INT(embed_timeout_ms, A2M_EMBED_DEFAULT_TIMEOUT_MS, 1, 3600000, "embeddings.embedder.timeout_ms"),
	/* The generated vectors' share of a text query's relevance, in percent,
	** when an embedder is configured (docs/EMBEDDINGS.md; the default is
	** the blend `a2m bench memory` measured best with all-MiniLM-L6-v2:
	** 99 against 0-98 and 100, docs/BENCHMARKS.md). */
	INT(embed_weight, 99, 0, 100, "embeddings.embedder.weight"),
	/* x-history: earlier revisions kept per keyed record; 0 keeps none and
	** does not declare the capability. */
	INT(history_revisions, 10, 0, 10000, "history.revisions"),
	INT(vector_pool, 20, 1, 100000, "embeddings.pool"),
};
#define N_OPTIONS (sizeof options / sizeof options[0])

static char **text_at(a2m_config *cfg, const option *o)
{
	return (char **)(void *)((char *)cfg + o->offset);
}

static int64_t *int_at(a2m_config *cfg, const option *o)
{
	return (int64_t *)(void *)((char *)cfg + o->offset);
}

static const option *find_option(const char *name)
{
	for (size_t i = 0; i < N_OPTIONS; i++)
		if (strcmp(options[i].name, name) == 0)
			return &options[i];
	return NULL;
}

static int fail(a2m_config *cfg, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(a2m_config *cfg, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cfg->errmsg, sizeof cfg->errmsg, fmt, ap);
	va_end(ap);
	return code;
}

/* Whether v is one of the '|'-separated choices. */
static int is_choice(const char *choices, const char *v)
{
	size_t n = strlen(v);
	for (const char *p = choices; *p;) {
		size_t len = strcspn(p, "|");
		if (len == n && strncmp(p, v, n) == 0)
			return 1;
		p += len + (p[len] == '|');
	}
	return 0;
}

static int set_int(a2m_config *cfg, const option *o, int64_t v)
{
	if (v < o->min || v > o->max) {
		if (o->max == 1 && o->min == 0)
			return fail(cfg, A2M_RANGE, "%s must be 0 or 1, not %" PRId64, o->name, v);
		if (o->max == INT64_MAX)
			return fail(cfg, A2M_RANGE, "%s must be an integer of at least %" PRId64
				    ", not %" PRId64, o->name, o->min, v);
		return fail(cfg, A2M_RANGE, "%s must be an integer from %" PRId64 " to %" PRId64
			    ", not %" PRId64, o->name, o->min, o->max, v);
	}
	*int_at(cfg, o) = v;
	return A2M_OK;
}

static int set_text(a2m_config *cfg, const option *o, const char *v)
{
	if (o->choices && !is_choice(o->choices, v)) {
		char list[64];
		snprintf(list, sizeof list, "%s", o->choices);
		for (char *p = list; *p; p++)
			if (*p == '|')
				*p = ',';
		return fail(cfg, A2M_RANGE, "%s must be one of %s, not '%s'", o->name, list, v);
	}
	char *copy = strdup(v);
	if (!copy)
		return fail(cfg, A2M_NOMEM, "out of memory");
	char *old = *text_at(cfg, o);
	if (old && o->offset == offsetof(a2m_config, postgres))
		memset(old, 0, strlen(old));  /* it may hold a password */
	free(old);
	*text_at(cfg, o) = copy;
	return A2M_OK;
}

/* A decimal integer, or true/false; the whole of v. Returns 0, or -1. */
static int parse_int(const char *v, int64_t *out)
{
	if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0) {
		*out = v[0] == 't';
		return 0;
	}
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (errno || end == v || *end)
		return -1;
	*out = n;
	return 0;
}

int a2m_config_new(a2m_config **out)
{
	if (!out)
		return A2M_MISUSE;
	*out = a2m_config_copy(NULL);
	return *out ? A2M_OK : A2M_NOMEM;
}

a2m_config *a2m_config_copy(const a2m_config *from)
{
	a2m_config *cfg = calloc(1, sizeof *cfg);
	if (!cfg)
		return NULL;
	for (size_t i = 0; i < N_OPTIONS; i++) {
		const option *o = &options[i];
		if (o->kind == OPT_INT) {
			*int_at(cfg, o) = from ? *int_at((a2m_config *)from, o) : o->def;
			continue;
		}
		const char *v = from ? *text_at((a2m_config *)from, o) : o->def_text;
		if (v && !(*text_at(cfg, o) = strdup(v))) {
			a2m_config_free(cfg);
			return NULL;
		}
	}
	cfg->set = from ? from->set : 0;
	return cfg;
}

void a2m_config_free(a2m_config *cfg)
{
	if (!cfg)
		return;
	/* A connection string may hold a password: not left in freed memory. */
	if (cfg->postgres)
		memset(cfg->postgres, 0, strlen(cfg->postgres));
	for (size_t i = 0; i < N_OPTIONS; i++)
		if (options[i].kind == OPT_TEXT)
			free(*text_at(cfg, &options[i]));
	free(cfg);
}

int a2m_config_set(a2m_config *cfg, const char *name, const char *value)
{
	if (!cfg)
		return A2M_MISUSE;
	cfg->errmsg[0] = '\0';
	if (!name || !value)
		return fail(cfg, A2M_MISUSE, "a2m_config_set needs a name and a value");
	const option *o = find_option(name);
	if (!o)
		return fail(cfg, A2M_MISUSE, "no option is called '%s'", name);
	int rc;
	if (o->kind == OPT_TEXT) {
		rc = set_text(cfg, o, value);
	} else {
		int64_t n;
		if (parse_int(value, &n) != 0)
			return fail(cfg, A2M_RANGE, "%s must be an integer, not '%s'", name, value);
		rc = set_int(cfg, o, n);
	}
	if (rc == A2M_OK)
		cfg->set |= (uint64_t)1 << (o - options);
	return rc;
}

int a2m_config_set_int(a2m_config *cfg, const char *name, int64_t value)
{
	if (!cfg)
		return A2M_MISUSE;
	cfg->errmsg[0] = '\0';
	const option *o = name ? find_option(name) : NULL;
	if (!o)
		return fail(cfg, A2M_MISUSE, "no option is called '%s'", name ? name : "(null)");
	if (o->kind != OPT_INT)
		return fail(cfg, A2M_MISUSE, "%s takes text: use a2m_config_set", name);
	int rc = set_int(cfg, o, value);
	if (rc == A2M_OK)
		cfg->set |= (uint64_t)1 << (o - options);
	return rc;
}

const char *a2m_config_get(a2m_config *cfg, const char *name)
{
	const option *o = cfg && name ? find_option(name) : NULL;
	if (!o)
		return NULL;
	if (o->kind == OPT_TEXT)
		return *text_at(cfg, o);
	snprintf(cfg->value, sizeof cfg->value, "%" PRId64, *int_at(cfg, o));
	return cfg->value;
}

int a2m_config_was_set(const a2m_config *cfg, const char *name)
{
	const option *o = find_option(name);
	return o && (cfg->set & ((uint64_t)1 << (o - options))) != 0;
}

const char *a2m_config_errmsg(const a2m_config *cfg)
{
	return cfg ? cfg->errmsg : "a2m_config_errmsg: no configuration";
}

int a2m_config_parse_capabilities(const char *list, unsigned *caps, char *err, size_t errlen)
{
	*caps = A2M_CAP_CORE;
	const char *p = list;
	while (*p) {
		size_t len = strcspn(p, ",");
		int found = 0;
		for (unsigned bit = 1; bit <= A2M_CAP_LAST; bit <<= 1) {
			const char *name = a2m_capability_name(bit);
			if (strlen(name) == len && strncmp(name, p, len) == 0) {
				*caps |= bit;
				found = 1;
			}
		}
		if (!found && len) {
			snprintf(err, errlen, "unknown capability '%.*s'", (int)len, p);
			return -1;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* ---- the configuration file ------------------------------------------- */

/*
** The member at the dotted path in root, or NULL when it (or an object on
** the way) is absent or null. -1 when something on the way is not an
** object, with its dotted name in bad.
*/
static int member_at(const json_t *root, const char *path, const json_t **out, char *bad,
		     size_t badlen)
{
	const json_t *v = root;
	const char *p = path;
	*out = NULL;
	for (;;) {
		size_t len = strcspn(p, ".");
		char key[64];
		snprintf(key, sizeof key, "%.*s", (int)len, p);
		v = json_object_get(v, key);
		if (!v || json_is_null(v))
			return 0;
		if (!p[len])
			break;
		if (!json_is_object(v)) {
			snprintf(bad, badlen, "%.*s", (int)(p + len - path), path);
			return -1;
		}
		p += len + 1;
	}
	*out = v;
	return 0;
}

/* One member of the file into its option, unless the caller set it. */
static int load_member(a2m_config *cfg, const option *o, const json_t *v, const char *path,
		       char *err, size_t errlen)
{
	int rc;
	if (cfg->set & ((uint64_t)1 << (o - options)))
		return 0;
	if (o->kind == OPT_TEXT) {
		if (!json_is_string(v)) {
			snprintf(err, errlen, "%s: %s must be a string", path, o->file);
			return -1;
		}
		rc = set_text(cfg, o, json_string_value(v));
	} else {
		if (!json_is_integer(v) && !json_is_boolean(v)) {
			snprintf(err, errlen, "%s: %s must be an integer", path, o->file);
			return -1;
		}
		rc = set_int(cfg, o, json_is_integer(v) ? json_integer_value(v) : json_is_true(v));
	}
	if (rc != A2M_OK) {
		/* The option's own words, under the file's name for it. */
		const char *why = cfg->errmsg + (strncmp(cfg->errmsg, o->name, strlen(o->name)) == 0
						 ? strlen(o->name) : 0);
		snprintf(err, errlen, "%s: %s%s", path, o->file, why);
		return rc == A2M_NOMEM ? A2M_NOMEM : -1;
	}
	return 0;
}

/*
** Why jansson refused the file at path: A2M_NOMEM when memory ran out,
** A2M_RANGE when the text is not a configuration. jansson's decoder reports
** some failed allocations as syntax errors ("invalid token"), so a text it
** refused that the tree's own reader reads, or gives up on for want of
** memory, was refused for memory (util/json_read.h).
*/
static int load_failure(const char *path, const json_error_t *jerr)
{
	/*
	** jansson fills the text on every failure it explains; one it stops at
	** before it can (its reader's first buffer not allocated) leaves the
	** text empty and the code unset.
	*/
	if (jerr->text[0] == '\0')
		return A2M_NOMEM;
	switch (json_error_code(jerr)) {
	case json_error_out_of_memory:
		return A2M_NOMEM;
	case json_error_cannot_open_file:
	case json_error_duplicate_key:  /* which the tree's reader allows */
		return A2M_RANGE;
	default:
		break;
	}
	FILE *f = fopen(path, "rb");
	a2m_buf text = {0};
	char chunk[4096];
	size_t got;
	if (!f)
		return errno == ENOMEM ? A2M_NOMEM : A2M_RANGE;
	while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
		a2m_buf_put(&text, chunk, got);
	int unread = ferror(f);
	fclose(f);
	if (text.failed) {
		a2m_buf_free(&text);
		return A2M_NOMEM;
	}
	int oom = 0;
	json_t *v = unread ? NULL : a2m_json_read_ex(text.p, text.len, 0, &oom);
	a2m_buf_free(&text);
	json_decref(v);
	return v || oom ? A2M_NOMEM : A2M_RANGE;
}

int a2m_config_load_file(a2m_config *cfg, const char *path, a2m_tier_layout *layout,
			 char *err, size_t errlen)
{
	json_error_t jerr;
	int rc = A2M_RANGE;
	err[0] = '\0';
	memset(&jerr, 0, sizeof jerr);  /* jansson leaves the code unset on some failures */
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		rc = load_failure(path, &jerr);
		if (rc == A2M_NOMEM)
			snprintf(err, errlen, "%s: out of memory", path);
		else
			snprintf(err, errlen, "%s:%d: %s", path, jerr.line, jerr.text);
		return rc;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "%s: the configuration must be a JSON object", path);
		goto fail;
	}
	char bad[64];
	const json_t *v;
	/* A store the caller chose (an engine, a file) is not the file's to change. */
	uint64_t chose_store = (uint64_t)1 << (find_option("engine") - options) |
			       (uint64_t)1 << (find_option("path") - options);
	for (size_t i = 0; i < N_OPTIONS; i++) {
		const option *o = &options[i];
		if (!o->file)
			continue;
		if (strcmp(o->name, "postgres") == 0 && (cfg->set & chose_store))
			continue;
		if (member_at(root, o->file, &v, bad, sizeof bad) != 0) {
			snprintf(err, errlen, "%s: %s must be an object", path, bad);
			goto fail;
		}
		if (v && (rc = load_member(cfg, o, v, path, err, errlen)) != 0)
			goto fail;
	}
	/* The API key never goes in the file: the name of a variable holding it. */
	const option *key = find_option("embed_api_key");
	if (member_at(root, "embeddings.embedder.key_env", &v, bad, sizeof bad) == 0 && v &&
	    !(cfg->set & ((uint64_t)1 << (key - options)))) {
		if (!json_is_string(v)) {
			snprintf(err, errlen, "%s: embeddings.embedder.key_env must be a string", path);
			goto fail;
		}
		const char *value = getenv(json_string_value(v));
		if (value && (rc = set_text(cfg, key, value)) != A2M_OK) {
			snprintf(err, errlen, "%s", rc == A2M_NOMEM ? "out of memory" : cfg->errmsg);
			goto fail;
		}
	}
	if ((v = json_object_get(root, "tiers"))) {
		char why[200] = "";
		if ((rc = a2m_tiers_from_json(v, layout, why, sizeof why)) != 0) {
			snprintf(err, errlen, "%s: %s", path, why);
			goto fail;
		}
	}
	json_decref(root);
	return 0;
fail:
	json_decref(root);
	return rc == A2M_NOMEM ? A2M_NOMEM : A2M_RANGE;
}
