/*
** methods.c — the method table and the capability gate.
**
** Every method the specification defines is listed here, whatever this
** server declares, because an undeclared method must answer -32003 naming its
** capability, never -32601 (spec §2, DECISIONS 002).
*/
#include <string.h>

#include "protocol/protocol.h"

static const char *const cap_names[] = {
	"core", "tiers", "salience", "scopes", "sessions", "keys",
	"embeddings", "external", "events", "summarize", "prompt"
};

const char *a2m_capability_name(unsigned cap)
{
	for (unsigned i = 0; i < sizeof cap_names / sizeof *cap_names; i++)
		if (cap == 1u << i)
			return cap_names[i];
	return "unknown";
}

const a2m_method a2m_methods[] = {
	{"memory/describe",           A2M_CAP_CORE,      a2m_method_describe},
	{"memory/remember",           A2M_CAP_CORE,      a2m_method_remember},
	{"memory/recall",             A2M_CAP_CORE,      a2m_method_recall},
	{"memory/timeline",           A2M_CAP_CORE,      a2m_method_timeline},
	{"memory/forget",             A2M_CAP_CORE,      a2m_method_forget},
	{"memory/promote",            A2M_CAP_TIERS,     NULL},
	{"memory/consolidate",        A2M_CAP_TIERS,     NULL},
	{"memory/reinforce",          A2M_CAP_SALIENCE,  NULL},
	{"memory/fetch",              A2M_CAP_KEYS,      NULL},
	{"memory/session/list",       A2M_CAP_SESSIONS,  NULL},
	{"memory/session/close",      A2M_CAP_SESSIONS,  NULL},
	{"memory/events",             A2M_CAP_EVENTS,    NULL},
	{"memory/events/subscribe",   A2M_CAP_EVENTS,    NULL},
	{"memory/events/unsubscribe", A2M_CAP_EVENTS,    NULL},
	{"memory/summarize",          A2M_CAP_SUMMARIZE, NULL},
	{NULL, 0, NULL}
};

const a2m_method *a2m_method_find(const char *name)
{
	for (const a2m_method *m = a2m_methods; m->name; m++)
		if (strcmp(m->name, name) == 0)
			return m;
	return NULL;
}

int a2m_error_capability(a2m_error *err, unsigned cap, const char *what)
{
	const char *name = a2m_capability_name(cap);
	a2m_error_set(err, A2M_CAPABILITY_NOT_SUPPORTED,
		      "%s needs the '%s' capability, which this server does not declare",
		      what, name);
	return a2m_error_data(err, json_pack("{ss}", "capability", name));
}

int a2m_protocol_call(a2m_server *srv, const a2m_method *m, json_t *params,
		      json_t **result, a2m_error *err)
{
	/* A handler only exists for what this build implements; a declared
	** capability always has every one of its handlers. */
	if (!(srv->caps & m->cap) || !m->fn)
		return a2m_error_capability(err, m->cap, m->name);
	return m->fn(srv, params, result, err);
}
