/*
** layout.c — default and configured tier layouts (see layout.h).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "stack/layout.h"

#define MINUTE_MS (60.0 * 1000)
#define DAY_MS (24.0 * 60 * MINUTE_MS)

static char *dup(const char *s)
{
	return s ? strdup(s) : NULL;
}

void a2m_tiers_free(a2m_tier_layout *layout)
{
	for (size_t i = 0; i < layout->n; i++) {
		free(layout->tiers[i].name);
		free(layout->tiers[i].kind);
		free(layout->tiers[i].spill_to);
		free(layout->tiers[i].promote_to);
	}
	free(layout->tiers);
	memset(layout, 0, sizeof *layout);
}

int a2m_tiers_index(const a2m_tier_layout *layout, const char *name)
{
	/* The first letter first: recall asks this of every record it visits,
	** and tier names mostly differ there (working, episodic, semantic). */
	for (size_t i = 0; name && i < layout->n; i++)
		if (layout->tiers[i].name[0] == name[0] && strcmp(layout->tiers[i].name, name) == 0)
			return (int)i;
	return -1;
}

const a2m_tier *a2m_tiers_find(const a2m_tier_layout *layout, const char *name)
{
	int i = a2m_tiers_index(layout, name);
	return i < 0 ? NULL : &layout->tiers[i];
}

/* Checks names, references, the procedural rule and cycles. */
static int validate(const a2m_tier_layout *l, char *err, size_t errlen)
{
	if (l->n == 0) {
		snprintf(err, errlen, "a layout needs at least one tier");
		return -1;
	}
	/* Every tier has its name before any reference is looked up: a lookup
	** reads the names of all the tiers, later ones too. */
	for (size_t i = 0; i < l->n; i++) {
		const a2m_tier *t = &l->tiers[i];
		if (!t->name || !*t->name || !t->kind) {
			snprintf(err, errlen, "tier %zu needs a name and a kind", i);
			return -1;
		}
	}
	for (size_t i = 0; i < l->n; i++) {
		const a2m_tier *t = &l->tiers[i];
		for (size_t j = 0; j < i; j++)
			if (strcmp(l->tiers[j].name, t->name) == 0) {
				snprintf(err, errlen, "tier name '%s' is used twice", t->name);
				return -1;
			}
		const char *refs[2] = {t->spill_to, t->promote_to};
		for (int r = 0; r < 2; r++) {
			if (!refs[r])
				continue;
			const a2m_tier *to = a2m_tiers_find(l, refs[r]);
			if (!to) {
				snprintf(err, errlen, "tier '%s' refers to unknown tier '%s'", t->name, refs[r]);
				return -1;
			}
			if (to == t) {
				snprintf(err, errlen, "tier '%s' refers to itself", t->name);
				return -1;
			}
			/* A fact does not decay into a procedure (DECISIONS 006). */
			if (r == 0 && strcmp(to->kind, "procedural") == 0) {
				snprintf(err, errlen, "tier '%s' spills into procedural tier '%s'",
					 t->name, to->name);
				return -1;
			}
		}
		if (t->capacity < 0 || t->promote_after < 0 || t->half_life_ms < 0) {
			snprintf(err, errlen, "tier '%s': negative capacity, promote_after or half_life",
				 t->name);
			return -1;
		}
	}
	/* Following spill_to from any tier must end within n steps. */
	for (size_t i = 0; i < l->n; i++) {
		const a2m_tier *t = &l->tiers[i];
		for (size_t steps = 0; t && t->spill_to; steps++) {
			if (steps > l->n) {
				snprintf(err, errlen, "the spill chain from '%s' has a cycle",
					 l->tiers[i].name);
				return -1;
			}
			t = a2m_tiers_find(l, t->spill_to);
		}
	}
	return 0;
}

int a2m_tiers_default(a2m_tier_layout *layout)
{
	static const struct {
		const char *name, *kind, *spill, *promote;
		int64_t capacity, promote_after;
		int per_session, shared;
		double half_life_ms;
	} def[] = {
		{"working", "working", "episodic", NULL, 24, 0, 1, 0, 5 * MINUTE_MS},
		{"episodic", "episodic", "semantic", "semantic", 256, 3, 0, 1, DAY_MS},
		{"semantic", "semantic", NULL, NULL, 0, 0, 0, 1, 0},
		{"procedural", "procedural", NULL, NULL, 0, 0, 0, 1, 0},
	};
	memset(layout, 0, sizeof *layout);
	layout->tiers = calloc(4, sizeof *layout->tiers);
	if (!layout->tiers)
		return -1;
	layout->n = 4;
	for (size_t i = 0; i < 4; i++) {
		a2m_tier *t = &layout->tiers[i];
		t->name = dup(def[i].name);
		t->kind = dup(def[i].kind);
		t->spill_to = dup(def[i].spill);
		t->promote_to = dup(def[i].promote);
		t->capacity = def[i].capacity;
		t->promote_after = def[i].promote_after;
		t->per_session = def[i].per_session;
		t->shared = def[i].shared;
		t->half_life_ms = def[i].half_life_ms;
		if (!t->name || !t->kind || (def[i].spill && !t->spill_to) ||
		    (def[i].promote && !t->promote_to)) {
			a2m_tiers_free(layout);
			return -1;
		}
	}
	layout->default_tier = 0;
	return 0;
}

/* Reads an optional string member into *dst. */
static int opt_string(const json_t *o, const char *k, char **dst, char *err, size_t errlen,
		      size_t i)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v)) {
		snprintf(err, errlen, "tiers[%zu].%s must be a string", i, k);
		return -1;
	}
	*dst = strdup(json_string_value(v));
	if (!*dst) {
		snprintf(err, errlen, "out of memory");
		return A2M_NOMEM;
	}
	return 0;
}

static int opt_int(const json_t *o, const char *k, int64_t *dst, char *err, size_t errlen,
		   size_t i)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		snprintf(err, errlen, "tiers[%zu].%s must be a non-negative integer", i, k);
		return -1;
	}
	*dst = json_integer_value(v);
	return 0;
}

int a2m_tiers_from_json(const json_t *arr, a2m_tier_layout *layout, char *err, size_t errlen)
{
	memset(layout, 0, sizeof *layout);
	if (!json_is_array(arr)) {
		snprintf(err, errlen, "tiers must be an array of tier objects");
		return -1;
	}
	size_t n = json_array_size(arr);
	layout->tiers = calloc(n ? n : 1, sizeof *layout->tiers);
	if (!layout->tiers) {
		snprintf(err, errlen, "out of memory");
		return A2M_NOMEM;
	}
	layout->n = n;
	int have_default = 0, rc = -1;
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(arr, i);
		a2m_tier *t = &layout->tiers[i];
		if (!json_is_object(o)) {
			snprintf(err, errlen, "tiers[%zu] must be an object", i);
			goto fail;
		}
		if ((rc = opt_string(o, "name", &t->name, err, errlen, i)) ||
		    (rc = opt_string(o, "kind", &t->kind, err, errlen, i)) ||
		    (rc = opt_string(o, "spill_to", &t->spill_to, err, errlen, i)) ||
		    (rc = opt_string(o, "promote_to", &t->promote_to, err, errlen, i)) ||
		    (rc = opt_int(o, "capacity", &t->capacity, err, errlen, i)) ||
		    (rc = opt_int(o, "promote_after", &t->promote_after, err, errlen, i)))
			goto fail;
		rc = -1;
		if (!t->kind && t->name && !(t->kind = strdup(t->name))) {
			snprintf(err, errlen, "out of memory");
			rc = A2M_NOMEM;
			goto fail;
		}
		json_t *hl = json_object_get(o, "half_life_seconds");
		if (hl && !json_is_null(hl)) {
			/* Bounded (about 31 700 years) so the milliseconds stay finite. */
			if (!json_is_number(hl) || !(json_number_value(hl) >= 0 && json_number_value(hl) <= 1e12)) {
				snprintf(err, errlen, "tiers[%zu].half_life_seconds must be a number from 0 to 1e12", i);
				goto fail;
			}
			t->half_life_ms = json_number_value(hl) * 1000.0;
		}
		json_t *ttl = json_object_get(o, "ttl_seconds");
		if (ttl && !json_is_null(ttl)) {
			/* Bounded (about 317 years) so that now + ttl cannot overflow. */
			double v = json_is_number(ttl) ? json_number_value(ttl) : -1;
			if (!(v > 0 && v <= 1e10)) {
				snprintf(err, errlen, "tiers[%zu].ttl_seconds must be a number above 0, at most 1e10", i);
				goto fail;
			}
			t->ttl_ms = (int64_t)(v * 1000.0 + 0.5);
			if (t->ttl_ms < 1)
				t->ttl_ms = 1;
		}
		json_t *dd = json_object_get(o, "dedup");
		if (dd && !json_is_null(dd) && !json_is_boolean(dd)) {
			snprintf(err, errlen, "tiers[%zu].dedup must be true or false", i);
			goto fail;
		}
		t->dedup = json_is_true(dd);
		json_t *ps = json_object_get(o, "per_session"), *sh = json_object_get(o, "shared");
		t->per_session = json_is_true(ps);
		/* Durable tiers are pooled knowledge unless said otherwise; working
		** memory is a private transcript (implementing-a2m.md §7). */
		t->shared = sh ? json_is_true(sh) : !(t->kind && strcmp(t->kind, "working") == 0);
		if (json_is_true(json_object_get(o, "default"))) {
			layout->default_tier = i;
			have_default = 1;
		}
	}
	if (!have_default) {
		/* Writes land in the first working tier, else the first tier. */
		for (size_t i = 0; i < n; i++)
			if (layout->tiers[i].kind && strcmp(layout->tiers[i].kind, "working") == 0) {
				layout->default_tier = i;
				break;
			}
	}
	if (validate(layout, err, errlen) != 0)
		goto fail;
	return 0;
fail:
	a2m_tiers_free(layout);
	return rc;
}
