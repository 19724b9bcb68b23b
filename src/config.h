/*
** config.h — the configuration file (docs/CONFIG.md): one JSON object whose
** members fill whatever a2m_config left unset, plus the tier layout.
*/
#ifndef A2M_CONFIG_H
#define A2M_CONFIG_H

#include <stddef.h>

#include <jansson.h>

#include "a2m.h"
#include "stack/tiers.h"

/*
** Reads path and applies it to cfg for every field cfg leaves at its default
** (strings point into *keep, which the caller json_decref()s after use), and
** fills layout from its "tiers" (layout untouched when the file has none).
** Returns 0, or -1 with a message in err.
*/
int a2m_config_load_file(const char *path, a2m_config *cfg, const a2m_config *defaults,
			 a2m_tier_layout *layout, json_t **keep, char *err, size_t errlen);

/*
** Parses a comma-separated capability list into capability bits (core is
** always included). Returns 0, or -1 naming the unknown capability in err.
*/
int a2m_config_parse_capabilities(const char *list, unsigned *caps, char *err, size_t errlen);

#endif
