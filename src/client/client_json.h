/*
** client_json.h — the client calls of include/a2m_client.h on jansson values
** instead of JSON text, for the programs of this tree that already work in
** jansson (the client commands, the MCP bridge, the conformance suite): no
** serialising a message only to parse it again. Not installed: the public
** client API speaks text, so its users need not build against our JSON
** library.
**
** A value passed in is borrowed: the caller keeps its reference. A value
** handed out through an out-parameter is a new reference the caller
** releases with json_decref(). Results as the text calls of a2m_client.h.
*/
#ifndef A2M_CLIENT_JSON_H
#define A2M_CLIENT_JSON_H

#include <jansson.h>

#include "a2m_client.h"

/* Serialises msg (any JSON value, compact, on one line) and writes it
** followed by '\n', without waiting for an answer. */
int a2m_client_send_json(a2m_client *c, const json_t *msg);

/* a2m_client_request() with params a value (NULL: none) and the response
** handed out as one. */
int a2m_client_request_json(a2m_client *c, const char *method, const json_t *params,
			    json_t **response);

/* a2m_client_wait_response() for the id given as a value. */
int a2m_client_wait_response_json(a2m_client *c, const json_t *id, json_t **response);

/* a2m_client_next_notification() and a2m_client_recv(), as values. */
int a2m_client_next_notification_json(a2m_client *c, json_t **out);
int a2m_client_recv_json(a2m_client *c, json_t **out);

#endif
