/*
** group_commit_server.h — what test_durable.c and test_http_stop.c share:
** an HTTP server of a handle whose writes wait for their sync on the
** binding's threads, as `a2m serve` makes it (group commit,
** transport/http_durable.c). Include after check.h.
*/
#ifndef A2M_TEST_GROUP_COMMIT_SERVER_H
#define A2M_TEST_GROUP_COMMIT_SERVER_H

#include <stdio.h>
#include <string.h>

#include "a2m.h"
#include "server/deferred.h"
#include "transport/http.h"

/* The seam as `a2m serve` fills it (cli/transport_options.c). */
static const a2m_http_defer group_commit_defer = {a2m_handle_network_deferred,
						  a2m_deferred_run, a2m_deferred_finish,
						  a2m_deferred_drop};

/*
** A server of h on two workers whose writes go through defer, with
** connections closed after timeout_s idle seconds (0: the default); NULL
** (the reason printed) when it does not start.
*/
static inline a2m_http *start_group_commit_with(a2m *h, const a2m_http_defer *defer,
						unsigned timeout_s)
{
	a2m_http_config hc;
	memset(&hc, 0, sizeof hc);
	hc.threads = 2;
	hc.timeout_s = timeout_s;
	hc.defer = defer;
	a2m_http *http = NULL;
	char err[256];
	if (a2m_http_start(h, &hc, &http, err, sizeof err) != 0)
		fprintf(stderr, "  %s\n", err);
	return http;
}

/* start_group_commit_with() as `a2m serve` would start it. */
static inline a2m_http *start_group_commit(a2m *h)
{
	return start_group_commit_with(h, &group_commit_defer, 0);
}

#endif
