/*
** where.h — the `where` filter of spec §5.2: a conjunction of tests against
** record fields, falling back to metadata keys; an array value means "any
** of". With x-where (docs/PROTOCOL.md, Extensions) a value may also be an
** object of operators ($eq, $ne, $in, $nin, $gt, $gte, $lt, $lte,
** $exists, $prefix, $not), all of which must hold.
*/
#ifndef A2M_WHERE_H
#define A2M_WHERE_H

#include <stdint.h>

#include <jansson.h>

#include "store/record.h"
#include "util/error.h"

/*
** Record fields that exist only with a capability. A `where` key naming one of
** these is a record field when its bit is set in `fields`, and a metadata key
** otherwise (a server without tiers has no `tier` field to test).
*/
enum a2m_where_field {
	A2M_FIELD_TIER     = 1u << 0,  /* tier */
	A2M_FIELD_SALIENCE = 1u << 1,  /* salience, access_count, accessed_at */
	A2M_FIELD_OWNER    = 1u << 2,  /* owner */
	A2M_FIELD_SESSION  = 1u << 3,  /* session */
	A2M_FIELD_KEY      = 1u << 4,  /* key, revision */
	A2M_FIELD_EXTERNAL = 1u << 5,  /* uri, media_type */
	A2M_FIELD_EXPIRY   = 1u << 6   /* expires_at (x-expiry) */
};

/* The operators x-where adds, NULL-terminated, as describe lists them. */
extern const char *const a2m_where_operators[];

/*
** Checks that where is an object whose values are scalars or arrays of
** scalars, or, with operators set (x-where declared), objects of known
** operators with operands of the right type. An operator this server does
** not know, or any operator without x-where, is refused: never read as an
** equality. Returns 0, or A2M_INVALID_PARAMS with err filled.
*/
int a2m_where_validate(const json_t *where, int operators, a2m_error *err);

/*
** 1 when rec passes every test of where (NULL passes everything), 0 when it
** does not, -1 when memory ran out before it could tell.
*/
int a2m_where_matches(const json_t *where, const a2m_record *rec, unsigned fields);

/*
** The bounds a `where` puts on created_at, in ms (0: that end open), from
** its operators ($gt, $gte, $lt, $lte with a time; $eq), for the store's
** exact selection to narrow by. Never narrower than where itself.
*/
void a2m_where_created_range(const json_t *where, int64_t *min, int64_t *max);

#endif
