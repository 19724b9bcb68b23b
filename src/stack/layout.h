/*
** layout.h — the tier layout: which tiers exist, what each is for, and how
** records flow between them (spec §4.7, DESIGN.md §3, implementing-a2m.md).
**
** A layout is plain data, loaded from defaults or from the "tiers" array of
** a config file, and validated once: names unique, every spill_to and
** promote_to names a tier, nothing spills into a procedural tier (DECISIONS
** 006), and the spill chain has no cycle.
*/
#ifndef A2M_STACK_LAYOUT_H
#define A2M_STACK_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

typedef struct a2m_tier {
	char    *name;
	char    *kind;          /* working | episodic | semantic | procedural (or other) */
	int64_t  capacity;      /* records; 0 = unbounded */
	int      per_session;   /* capacity applies within each session (§3.5) */
	char    *spill_to;      /* where records go under pressure; NULL = dropped */
	char    *promote_to;    /* where records go once earned; NULL = none */
	int64_t  promote_after; /* recalls that earn promotion; 0 = never */
	double   half_life_ms;  /* recency half-life for ranking; 0 = no decay */
	int      shared;        /* visible to every owner (else private to its owner) */
	int      dedup;         /* x-dedup: an exact duplicate written here refreshes
	                           the record it repeats instead of being stored */
	int64_t  ttl_ms;        /* x-expiry: what a write landing here without an
	                           expiry of its own lives for; 0 = forever */
} a2m_tier;

typedef struct a2m_tier_layout {
	a2m_tier *tiers;
	size_t    n;
	size_t    default_tier; /* index of the tier a write without `tier` lands in */
} a2m_tier_layout;

/* Fills layout with the default four tiers of DESIGN.md §3. Returns 0 or -1 (no memory). */
int a2m_tiers_default(a2m_tier_layout *layout);

/*
** Reads a layout from a JSON array of tier objects (see docs/CONFIG.md) and
** validates it. Returns 0; -1 with a message in err for a layout that is
** not valid; A2M_NOMEM ("out of memory" in err) when memory ran out.
*/
int a2m_tiers_from_json(const json_t *arr, a2m_tier_layout *layout, char *err, size_t errlen);

/* Frees what layout holds. */
void a2m_tiers_free(a2m_tier_layout *layout);

/* The tier called name, or NULL. */
const a2m_tier *a2m_tiers_find(const a2m_tier_layout *layout, const char *name);

/* Index of the tier called name, or -1. */
int a2m_tiers_index(const a2m_tier_layout *layout, const char *name);

#endif
