/*
** config.c — the federation's configuration file (docs/FEDERATION.md):
** the backends by name and kind, the tier layout with the backend each
** tier lives on, the merge, the deadline and the journal. Read once at
** start; a mistake is refused with a reason naming the member.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "federate/fed.h"
#include "protocol/protocol.h"
#include "rank/analyze.h"
#include "util/log.h"

static int bad(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* A string member, copied (NULL when absent); -1 when it is not a string. */
static int opt_str(const json_t *o, const char *name, char **out)
{
	const json_t *v = json_object_get(o, name);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -1;
	return (*out = strdup(json_string_value(v))) ? 0 : -1;
}

/* An integer member within [lo, hi], or def when absent. */
static int opt_int(const json_t *o, const char *name, long long lo, long long hi,
		   long long def, long long *out)
{
	const json_t *v = json_object_get(o, name);
	*out = def;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return -1;
	*out = json_integer_value(v);
	return 0;
}

/* One member of "backends". */
static int load_backend(fed_backend *b, const char *name, const json_t *o, char *err,
			size_t errlen)
{
	const char *kind = json_string_value(json_object_get(o, "kind"));
	if (!(b->name = strdup(name)))
		return bad(err, errlen, "out of memory");
	if (!json_is_object(o) || !kind)
		return bad(err, errlen, "backends.%s needs a \"kind\": memory, sqlite, "
			   "postgres, stdio or http", name);
	if (opt_str(o, "ranking", &b->ranking))
		return bad(err, errlen, "backends.%s: ranking must be bm25 or lexical", name);
	if (strcmp(kind, "memory") == 0) {
		b->kind = FED_MEMORY;
	} else if (strcmp(kind, "sqlite") == 0) {
		b->kind = FED_SQLITE;
		if (opt_str(o, "path", &b->url) || !b->url)
			return bad(err, errlen, "backends.%s: a sqlite backend needs \"path\"", name);
	} else if (strcmp(kind, "postgres") == 0) {
		/* The engine in this process, on a deployment other servers may
		** share (docs/POSTGRES.md): the connection string as `a2m serve
		** --postgres` takes it. */
		b->kind = FED_POSTGRES;
		if (opt_str(o, "url", &b->url) || !b->url)
			return bad(err, errlen, "backends.%s: a postgres backend needs \"url\", a "
				   "connection string", name);
	} else if (strcmp(kind, "stdio") == 0) {
		const json_t *cmd = json_object_get(o, "command");
		size_t n = json_array_size(cmd);
		b->kind = FED_STDIO;
		if (!json_is_array(cmd) || n == 0)
			return bad(err, errlen, "backends.%s: a stdio backend needs \"command\", "
				   "an array of strings", name);
		if (!(b->argv = calloc(n + 1, sizeof *b->argv)))
			return bad(err, errlen, "out of memory");
		for (size_t i = 0; i < n; i++) {
			const char *a = json_string_value(json_array_get(cmd, i));
			if (!a || !(b->argv[i] = strdup(a)))
				return bad(err, errlen, "backends.%s: command[%zu] must be a string",
					   name, i);
		}
	} else if (strcmp(kind, "http") == 0) {
		char *env = NULL;
		b->kind = FED_HTTP;
		if (opt_str(o, "url", &b->url) || !b->url)
			return bad(err, errlen, "backends.%s: an http backend needs \"url\"", name);
		if (opt_str(o, "token_env", &env))
			return bad(err, errlen, "backends.%s: token_env must name a variable", name);
		if (env) {
			/* The token itself never goes in the file. */
			const char *t = getenv(env);
			free(env);
			if (!t || !*t)
				return bad(err, errlen, "backends.%s: token_env names a variable "
					   "that is not set", name);
			if (!(b->token = strdup(t)))
				return bad(err, errlen, "out of memory");
		}
	} else {
		return bad(err, errlen, "backends.%s: unknown kind '%s' (memory, sqlite, stdio, "
			   "http)", name, kind);
	}
	return 0;
}

/* The tiers array, and the backend each tier lives on. */
static int load_tiers(federation *f, const json_t *tiers, char *err, size_t errlen)
{
	if (!json_is_array(tiers) || json_array_size(tiers) == 0)
		return bad(err, errlen, "\"tiers\" must be a non-empty array of tiers, each "
			   "with a \"backend\"");
	json_t *plain = json_deep_copy(tiers);
	size_t n = json_array_size(tiers);
	const char **names = calloc(n, sizeof *names);
	int rc = plain && names ? 0 : bad(err, errlen, "out of memory");
	for (size_t i = 0; !rc && i < n; i++) {
		json_t *t = json_array_get(plain, i);
		names[i] = json_string_value(json_object_get(json_array_get(tiers, i), "backend"));
		if (!names[i])
			rc = bad(err, errlen, "tiers[%zu] needs \"backend\", the name of one of "
				 "\"backends\"", i);
		json_object_del(t, "backend");
	}
	if (!rc && a2m_tiers_from_json(plain, &f->layout, err, errlen) != 0)
		rc = -1;
	/* Read by the layout, not served: a federation does not expire records
	** (x-expiry, docs/FEDERATION.md). Refused rather than ignored. */
	for (size_t i = 0; !rc && i < f->layout.n; i++)
		if (f->layout.tiers[i].ttl_ms > 0)
			rc = bad(err, errlen, "tiers[%zu]: ttl_seconds: a federation does not expire "
				 "records (x-expiry)", i);
	if (!rc && !(f->tier_backend = calloc(n, sizeof *f->tier_backend)))
		rc = bad(err, errlen, "out of memory");
	for (size_t i = 0; !rc && i < n; i++) {
		size_t k = 0;
		while (k < f->n_backends && strcmp(f->backends[k].name, names[i]) != 0)
			k++;
		if (k == f->n_backends)
			rc = bad(err, errlen, "tiers[%zu].backend: no backend named '%s'", i, names[i]);
		f->tier_backend[i] = k;
	}
	free(names);
	json_decref(plain);
	return rc;
}

int fed_config_load(federation *f, const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	long long n = 0;
	if (!root)
		return bad(err, errlen, "%s:%d: %s", path, je.line, je.text);
	int rc = 0;
	const json_t *backends = json_object_get(root, "backends");
	const char *merge = json_string_value(json_object_get(root, "merge"));
	if (!json_is_object(root) || !json_is_object(backends) || json_object_size(backends) == 0)
		rc = bad(err, errlen, "%s: needs \"backends\", an object of named backends", path);
	if (!rc && opt_str(root, "name", &f->name))
		rc = bad(err, errlen, "%s: name must be a string", path);
	if (!rc && !f->name && !(f->name = strdup("a2m-federation")))
		rc = bad(err, errlen, "out of memory");
	if (!rc && merge && strcmp(merge, "rank-fusion") != 0 && strcmp(merge, "rerank") != 0)
		rc = bad(err, errlen, "%s: merge must be \"rank-fusion\" or \"rerank\"", path);
	f->merge = merge && strcmp(merge, "rerank") == 0 ? FED_RERANK : FED_RRF;
	if (!rc && opt_int(root, "rrf_k", 1, 100000, 60, &n) != 0)
		rc = bad(err, errlen, "%s: rrf_k must be an integer 1 to 100000", path);
	f->rrf_k = (int)n;
	if (!rc && opt_int(root, "deadline_ms", 1, 3600000, 2000, &n) != 0)
		rc = bad(err, errlen, "%s: deadline_ms must be 1 to 3600000", path);
	f->deadline_ms = (int)n;
	if (!rc && opt_int(root, "pool", 1, 100000, 200, &n) != 0)
		rc = bad(err, errlen, "%s: pool must be 1 to 100000", path);
	f->pool = n;
	if (!rc && opt_str(root, "journal", &f->journal_path))
		rc = bad(err, errlen, "%s: journal must be a path", path);
	if (!rc && !f->journal_path) {
		size_t len = strlen(path) + sizeof ".journal";
		if ((f->journal_path = malloc(len)))
			snprintf(f->journal_path, len, "%s.journal", path);
		else
			rc = bad(err, errlen, "out of memory");
	}
	if (!rc && !(f->backends = calloc(json_object_size(backends), sizeof *f->backends)))
		rc = bad(err, errlen, "out of memory");
	const char *key;
	json_t *v;
	if (!rc)
		json_object_foreach((json_t *)backends, key, v) {
			if ((rc = load_backend(&f->backends[f->n_backends++], key, v, err, errlen)))
				break;
		}
	if (!rc)
		rc = load_tiers(f, json_object_get(root, "tiers"), err, errlen);
	json_decref(root);
	return rc;
}

void fed_free(federation *f)
{
	for (size_t i = 0; i < f->n_backends; i++) {
		fed_backend *b = &f->backends[i];
		fed_backend_stop(b);
		for (size_t k = 0; b->argv && b->argv[k]; k++)
			free(b->argv[k]);
		free(b->argv);
		free(b->name);
		free(b->url);
		free(b->token);
		free(b->ranking);
		json_decref(b->describe);
	}
	free(f->backends);
	free(f->tier_backend);
	a2m_tiers_free(&f->layout);
	free(f->name);
	free(f->journal_path);
	if (f->journal)
		fclose(f->journal);
	json_decref(f->limits);
	json_decref(f->embeddings);
	json_decref(f->xwhere);
	json_decref(f->sub_kinds);
	free(f->sub_owner);
	a2m_event_log_free(f->events);
	a2m_analyzer_free(f->analyzer);
}
