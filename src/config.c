/*
** config.c — reading the configuration file and the capability list (see
** config.h and docs/CONFIG.md).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "protocol/protocol.h"

int a2m_config_parse_capabilities(const char *list, unsigned *caps, char *err, size_t errlen)
{
	*caps = A2M_CAP_CORE;
	const char *p = list;
	while (*p) {
		size_t len = strcspn(p, ",");
		int found = 0;
		for (unsigned bit = 1; bit <= A2M_CAP_PROMPT; bit <<= 1) {
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

/* Reads a positive integer member into *dst when *dst still has its default. */
static int take_limit(const json_t *o, const char *k, int64_t *dst, int64_t def, char *err,
		      size_t errlen)
{
	json_t *v = json_object_get(o, k);
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) <= 0) {
		snprintf(err, errlen, "%s must be a positive integer", k);
		return -1;
	}
	if (*dst == def)
		*dst = json_integer_value(v);
	return 0;
}

/* A string field of o into *dst, unless the caller already set *dst. */
static int take_string(const json_t *o, const char *k, const char **dst, char *err,
		       size_t errlen)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v) || *dst)
		return 0;
	if (!json_is_string(v)) {
		snprintf(err, errlen, "%s must be a string", k);
		return -1;
	}
	*dst = json_string_value(v);
	return 0;
}

/*
** embeddings.embedder (docs/EMBEDDINGS.md §3): kind, url, model, key_env
** (the name of an environment variable holding the key, never the key)
** and timeout_ms. Fields the caller set in cfg win. Absent: no-op.
*/
static int take_embedder(const json_t *e, a2m_config *cfg, char *err, size_t errlen)
{
	if (!e || json_is_null(e))
		return 0;
	if (!json_is_object(e)) {
		snprintf(err, errlen, "must be an object");
		return -1;
	}
	const char *key_env = NULL;
	if (take_string(e, "kind", &cfg->embed_kind, err, errlen) ||
	    take_string(e, "url", &cfg->embed_url, err, errlen) ||
	    take_string(e, "model", &cfg->embed_model, err, errlen) ||
	    take_string(e, "key_env", &key_env, err, errlen))
		return -1;
	if (key_env && !cfg->embed_api_key)
		cfg->embed_api_key = getenv(key_env);
	json_t *t = json_object_get(e, "timeout_ms");
	if (t && cfg->embed_timeout_ms <= 0) {
		if (!json_is_integer(t) || json_integer_value(t) <= 0) {
			snprintf(err, errlen, "timeout_ms must be a positive integer");
			return -1;
		}
		cfg->embed_timeout_ms = (long)json_integer_value(t);
	}
	return 0;
}

int a2m_config_load_file(const char *path, a2m_config *cfg, const a2m_config *defaults,
			 a2m_tier_layout *layout, json_t **keep, char *err, size_t errlen)
{
	json_error_t jerr;
	*keep = NULL;
	err[0] = '\0';
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		snprintf(err, errlen, "%s:%d: %s", path, jerr.line, jerr.text);
		return -1;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "%s: the configuration must be a JSON object", path);
		goto fail;
	}
	json_t *v;
	if ((v = json_object_get(root, "name")) && cfg->name == defaults->name) {
		if (!json_is_string(v)) {
			snprintf(err, errlen, "%s: name must be a string", path);
			goto fail;
		}
		cfg->name = json_string_value(v);
	}
	if ((v = json_object_get(root, "capabilities")) && !cfg->capabilities) {
		if (!json_is_string(v)) {
			snprintf(err, errlen, "%s: capabilities must be a comma-separated string", path);
			goto fail;
		}
		cfg->capabilities = json_string_value(v);
	}
	if ((v = json_object_get(root, "limits"))) {
		if (!json_is_object(v) ||
		    take_limit(v, "max_records_per_call", &cfg->max_records_per_call,
			       defaults->max_records_per_call, err, errlen) ||
		    take_limit(v, "max_content_length", &cfg->max_content_length,
			       defaults->max_content_length, err, errlen) ||
		    take_limit(v, "max_recall_limit", &cfg->max_recall_limit,
			       defaults->max_recall_limit, err, errlen) ||
		    take_limit(v, "default_recall_limit", &cfg->default_recall_limit,
			       defaults->default_recall_limit, err, errlen)) {
			if (!*err)
				snprintf(err, errlen, "%s: limits must be an object", path);
			goto fail;
		}
	}
	if ((v = json_object_get(root, "embeddings"))) {
		json_t *m = json_object_get(v, "metric");
		if (m && !cfg->metric) {
			if (!json_is_string(m)) {
				snprintf(err, errlen, "%s: embeddings.metric must be a string", path);
				goto fail;
			}
			cfg->metric = json_string_value(m);
		}
		if (take_embedder(json_object_get(v, "embedder"), cfg, err, errlen)) {
			char why[256];
			snprintf(why, sizeof why, "%s", err);
			snprintf(err, errlen, "%s: embeddings.embedder: %s", path, why);
			goto fail;
		}
	}
	if ((v = json_object_get(root, "helper_threads"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > A2M_HELPER_THREADS_MAX) {
			snprintf(err, errlen, "%s: helper_threads must be an integer from 0 to %d", path,
				 A2M_HELPER_THREADS_MAX);
			goto fail;
		}
		if (cfg->helper_threads == defaults->helper_threads)
			cfg->helper_threads = (int)json_integer_value(v);
	}
	if ((v = json_object_get(root, "events"))) {
		if (take_limit(v, "retain", &cfg->events_retain, defaults->events_retain, err, errlen))
			goto fail;
	}
	if ((v = json_object_get(root, "tiers"))) {
		char why[200];
		if (a2m_tiers_from_json(v, layout, why, sizeof why) != 0) {
			snprintf(err, errlen, "%s: %s", path, why);
			goto fail;
		}
	}
	*keep = root;
	return 0;
fail:
	json_decref(root);
	return -1;
}
