/*
** query.c — what the store seam shares between engines: the exact-selection
** predicate and the byte range of a key prefix, the checks every write
** passes, error reporting, freeing a shared log's events, and a tier move
** as a whole update.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/store.h"
#include "util/text.h"

/* a2m_store_failures_here(): per thread, so readers side by side keep theirs. */
static _Thread_local unsigned failures_here;

unsigned a2m_store_failures_here(void)
{
	return failures_here;
}

int a2m_store_fail(a2m_store *s, const char *fmt, ...)
{
	va_list ap;
	failures_here++;
	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof s->errmsg, fmt, ap);
	va_end(ap);
	return A2M_INTERNAL_ERROR;
}

int a2m_store_check_record(a2m_store *s, const a2m_record *rec, const char *op)
{
	if (!rec || !rec->id || !rec->content) {
		a2m_store_fail(s, "%s: a record needs an id and content", op);
		return A2M_INVALID_PARAMS;
	}
	if (isnan(rec->salience)) {
		a2m_store_fail(s, "%s: salience is NaN", op);
		return A2M_INVALID_PARAMS;
	}
	return 0;
}

int a2m_query_matches(const a2m_query *q, const a2m_record *rec)
{
	if (q->tier && !a2m_str_same(q->tier, rec->tier))
		return 0;
	if (q->by_owner && !a2m_str_same(q->owner, rec->owner))
		return 0;
	if (q->by_session && !a2m_str_same(q->session, rec->session))
		return 0;
	if (q->group && !a2m_str_same(q->group, rec->group))
		return 0;
	if ((q->created_min && rec->created_at < q->created_min) ||
	    (q->created_max && rec->created_at > q->created_max))
		return 0;
	if (q->key_prefix) {
		if (!rec->key || strncmp(rec->key, q->key_prefix, strlen(q->key_prefix)) != 0)
			return 0;
	}
	return 1;
}

void a2m_event_rows_free(a2m_event_rows *r)
{
	if (!r)
		return;
	free(r->v);
	free(r->arena);
	memset(r, 0, sizeof *r);
}

int a2m_store_prefix_upper(const char *prefix, char **upper, size_t *len)
{
	size_t n = strlen(prefix);
	*upper = NULL;
	*len = 0;
	while (n > 0 && (unsigned char)prefix[n - 1] == 0xFF)
		n--;
	if (n == 0)
		return 0;
	char *u = malloc(n + 1);
	if (!u)
		return -1;
	memcpy(u, prefix, n);
	u[n - 1] = (char)((unsigned char)u[n - 1] + 1);
	u[n] = '\0';
	*upper = u;
	*len = n;
	return 0;
}

int a2m_store_move_whole(a2m_store *s, const a2m_record *named, const char *to,
			 double salience, int *moved)
{
	a2m_record *rec = NULL;
	*moved = 0;
	int rc = s->ops->get(s, named->id, &rec);
	if (rc || !rec || !a2m_str_same(rec->tier, named->tier) ||
	    !a2m_str_same(rec->session, named->session)) {
		a2m_record_free(rec);
		return rc;
	}
	char *copy = to ? strdup(to) : NULL;
	if (to && !copy) {
		a2m_record_free(rec);
		return a2m_store_fail(s, "move: out of memory");
	}
	free(rec->tier);
	rec->tier = copy;
	rec->salience = salience;
	rc = s->ops->update(s, rec);
	*moved = rc == 0;
	a2m_record_free(rec);
	return rc;
}
