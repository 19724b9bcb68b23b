/*
** methods.c — the method table and the capability gate.
**
** Every method the specification defines is listed here, whatever this
** server declares, because an undeclared method must answer -32003 naming its
** capability, never -32601 (spec §2, DECISIONS 002).
*/
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"

static const char *const cap_names[] = {
	"core", "tiers", "salience", "scopes", "sessions", "keys",
	"embeddings", "external", "events", "summarize", "prompt",
	"x-where", "x-expiry", "x-history", "x-dedup", "x-import", "x-touch", "x-all-owners"
};

const char *a2m_capability_name(unsigned cap)
{
	for (unsigned i = 0; i < sizeof cap_names / sizeof *cap_names; i++)
		if (cap == 1u << i)
			return cap_names[i];
	return "unknown";
}

/*
** Read brackets (stack.h, a2m_stack_read_begin). Every method that does
** not write runs inside one, opened here once rather than in each handler:
** at 10k records a SQLite recall spent over a third of its time taking and
** dropping a read lock per statement, and a bracket also makes what one
** answer reads (the index's figures, its postings, the records) agree with
** each other. It is right for every such method: the writes some of them
** may make (recall's touches, a promotion it earned, vectors the server
** owed) each run in a transaction of their own, which ends the bracket
** first (store.h); and one that reads nothing (subscribe) pays for one
** small statement. A method that writes runs as before: its transaction
** is its snapshot. The bracket opens after the gate, so a refusal reads
** and locks nothing.
**
** rpc.c calls a text handler itself, not a2m_protocol_call, so recall's
** is bracketed by its entry below (recall_text). describe's is not: server/handle.c
** recognises it by its address to answer a cached describe without the
** handle's lock, and a miss reads only a few figures, once per change.
*/
static int read_end(a2m_call *call, int rc, a2m_error *err)
{
	a2m_error end = {0};
	int ended = a2m_stack_read_end(call->srv->stack, &end);
	if (ended && !rc) {
		*err = end;  /* the request fails: what it read may not stand */
		return ended;
	}
	a2m_error_clear(&end);
	return rc;
}

static int recall_text(a2m_call *call, json_t *params, char **text, size_t *len,
		       a2m_error *err)
{
	int rc = a2m_stack_read_begin(call->srv->stack, err);
	if (rc)
		return rc;
	rc = read_end(call, a2m_method_recall_text(call, params, text, len, err), err);
	if (rc && *text) {
		free(*text);
		*text = NULL;
	}
	return rc;
}

const a2m_method a2m_methods[] = {
	{"memory/describe",           A2M_CAP_CORE,      a2m_method_describe,      0, 0,
	 a2m_describe_text, 0},
	{"memory/remember",           A2M_CAP_CORE,      a2m_method_remember,      1, 0, NULL, 0},
	{"memory/recall",             A2M_CAP_CORE,      a2m_method_recall,        0, 0,
	 recall_text, 1},
	{"memory/timeline",           A2M_CAP_CORE,      a2m_method_timeline,      0, 0, NULL, 1},
	{"memory/forget",             A2M_CAP_CORE,      a2m_method_forget,        1, 0, NULL, 0},
	{"memory/promote",            A2M_CAP_TIERS,     a2m_method_promote,       1, 0, NULL, 0},
	{"memory/consolidate",        A2M_CAP_TIERS,     a2m_method_consolidate,   1, 0, NULL, 0},
	{"memory/reinforce",          A2M_CAP_SALIENCE,  a2m_method_reinforce,     1, 0, NULL, 0},
	{"memory/fetch",              A2M_CAP_KEYS,      a2m_method_fetch,         0, 0, NULL, 0},
	{"memory/session/list",       A2M_CAP_SESSIONS,  a2m_method_session_list,  0, 0, NULL, 0},
	{"memory/session/close",      A2M_CAP_SESSIONS,  a2m_method_session_close, 1, 0, NULL, 0},
	{"memory/events",             A2M_CAP_EVENTS,    a2m_method_events,        0, 1, NULL, 0},
	{"memory/events/subscribe",   A2M_CAP_EVENTS,    a2m_method_subscribe,     0, 0, NULL, 0},
	{"memory/events/unsubscribe", A2M_CAP_EVENTS,    a2m_method_unsubscribe,   0, 0, NULL, 0},
	{"memory/summarize",          A2M_CAP_SUMMARIZE, a2m_method_summarize,     1, 0, NULL, 0},
	{NULL, 0, NULL, 0, 0, NULL, 0}
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

int a2m_protocol_call(a2m_call *call, const a2m_method *m, json_t *params,
		      json_t **result, a2m_error *err)
{
	/* A handler only exists for what this build implements; a declared
	** capability always has every one of its handlers. */
	if (!(call->caps & m->cap) || !m->fn)
		return a2m_error_capability(err, m->cap, m->name);
	/* Refused consistently, every time, before anything is read (§2.1). */
	if (call->srv->read_only && m->writes)
		return a2m_error_set(err, A2M_READ_ONLY, "%s: this server is read-only", m->name);
	int rc = a2m_param_limits(call, params, err);
	if (rc)
		return rc;
	if (m->writes)
		return m->fn(call, params, result, err);
	if ((rc = a2m_stack_read_begin(call->srv->stack, err)))
		return rc;
	rc = read_end(call, m->fn(call, params, result, err), err);
	if (rc && *result) {
		json_decref(*result);
		*result = NULL;
	}
	return rc;
}
