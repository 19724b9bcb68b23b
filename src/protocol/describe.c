/*
** describe.c — memory/describe (spec §4.1): discovery and version
** negotiation. Everything a client may rely on is reported from the live
** configuration, so describe can never disagree with what the server does.
*/
#include <ctype.h>
#include <string.h>

#include "protocol/protocol.h"

/*
** While the major version is 0, versions are compatible only when the minor
** matches exactly (spec §4.1), so "a2m/0.1" and a patch level "a2m/0.1.3"
** are ours and nothing else is.
*/
static int protocol_compatible(const char *v)
{
	const size_t n = strlen(A2M_PROTOCOL);
	if (strncmp(v, A2M_PROTOCOL, n) != 0)
		return 0;
	if (v[n] == '\0')
		return 1;
	if (v[n] != '.' || !v[n + 1])
		return 0;
	for (const char *p = v + n + 1; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	return 1;
}

int a2m_method_describe(a2m_server *srv, json_t *params, json_t **result, a2m_error *err)
{
	const char *protocol;
	int rc;
	if ((rc = a2m_param_string(params, "protocol", &protocol, err)) ||
	    (rc = a2m_param_requires(srv, params, "owner", A2M_CAP_SCOPES, err)))
		return rc;
	if (protocol && !protocol_compatible(protocol)) {
		a2m_error_set(err, A2M_PROTOCOL_NOT_SUPPORTED,
			      "protocol %s is not supported; this server speaks %s",
			      protocol, A2M_PROTOCOL);
		return a2m_error_data(err, json_pack("{s[s]}", "supported", A2M_PROTOCOL));
	}
	json_t *caps = json_array(), *methods = json_array();
	for (unsigned bit = 1; bit <= A2M_CAP_PROMPT; bit <<= 1)
		if (srv->caps & bit)
			json_array_append_new(caps, json_string(a2m_capability_name(bit)));
	for (const a2m_method *m = a2m_methods; m->name; m++)
		if ((srv->caps & m->cap) && m->fn)
			json_array_append_new(methods, json_string(m->name));
	json_t *res = json_pack("{ss ss so so s{sI sI sI}}",
		"protocol", A2M_PROTOCOL,
		"name", srv->name,
		"capabilities", caps,
		"methods", methods,
		"limits",
		"max_records_per_call", (json_int_t)srv->limits.max_records_per_call,
		"max_recall_limit", (json_int_t)srv->limits.max_recall_limit,
		"max_content_length", (json_int_t)srv->limits.max_content_length);
	if (!res)
		return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
	*result = res;
	return 0;
}
