/*
** config.h — the options a store is opened with (the public a2m_config of
** include/a2m.h), and the configuration file (docs/CONFIG.md) that fills the
** options the caller left unset, plus the tier layout.
**
** One table of options (config.c) serves the named setters of the public
** API, the file's members and the defaults alike, so an option is declared,
** validated and defaulted in one place.
*/
#ifndef A2M_SERVER_CONFIG_H
#define A2M_SERVER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "a2m.h"
#include "stack/layout.h"

/* The options, resolved. Text options are owned copies (NULL: unset). */
struct a2m_config {
	char    *engine;          /* "sqlite" | "memory" | "postgres" */
	char    *path;
	char    *postgres;        /* libpq connection string; never logged */
	char    *name;
	char    *capabilities;
	char    *synchronous;     /* "full" | "normal" */
	char    *config_file;
	char    *metric;
	char    *vector_search;   /* "exact" | "quantized" */
	char    *ranking;
	char    *embed_kind;
	char    *embed_url;
	char    *embed_model;
	char    *embed_api_key;
	int64_t  read_only;
	int64_t  group_commit;     /* 1: durable commits share fsyncs (sqlite_sync.c) */
	int64_t  capacity_after_sync; /* 1: a lone durable write's capacity pass
	                                 runs apart, while its sync runs (finish.c) */
	int64_t  max_records_per_call;
	int64_t  max_content_length;
	int64_t  max_recall_limit;
	int64_t  default_recall_limit;
	int64_t  max_depth;
	int64_t  max_string_bytes;
	int64_t  max_metadata_bytes;
	int64_t  max_ids_per_call;
	int64_t  max_where_fields;
	int64_t  max_where_values;
	int64_t  max_dimensions;
	int64_t  events_retain;
	int64_t  touch_buffer;
	int64_t  helper_threads;
	int64_t  postings_cache_mb; /* SQLite: each connection's postings cache (0: scaled, sqlite_index.h) */
	int64_t  mmap_mb;          /* SQLite: each connection's memory map of the file */
	int64_t  embed_timeout_ms;
	int64_t  embed_weight;
	int64_t  history_revisions;
	int64_t  vector_pool;      /* quantized: rows measured exactly per result */
	uint64_t set;             /* one bit per option the caller set */
	char     errmsg[256];
	char     value[24];       /* a2m_config_get's text of an integer */
};

/*
** A new configuration holding what cfg holds (the defaults when cfg is
** NULL), the caller's marks of what it set included. NULL when memory ran
** out. Free with a2m_config_free().
*/
a2m_config *a2m_config_copy(const a2m_config *cfg);

/* Whether the caller set the option called name (the file's do not count). */
int a2m_config_was_set(const a2m_config *cfg, const char *name);

/*
** Reads the JSON file at path into cfg: each member sets its option unless
** the caller set that option already, through the same checks as
** a2m_config_set ("postgres" only when the caller named neither an engine
** nor a path: a store the caller chose is not the file's to change);
** "tiers" fills layout (left untouched when the file has none). Returns 0;
** A2M_RANGE with a message naming the file and the member in err (cfg may
** then hold some of the file's options); A2M_NOMEM when memory ran out,
** never mistaken for an invalid file.
*/
int a2m_config_load_file(a2m_config *cfg, const char *path, a2m_tier_layout *layout,
			 char *err, size_t errlen);

/*
** Parses a comma-separated capability list into capability bits (core is
** always included). Returns 0, or -1 naming the unknown capability in err.
*/
int a2m_config_parse_capabilities(const char *list, unsigned *caps, char *err, size_t errlen);

#endif
