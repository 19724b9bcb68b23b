/*
** rpc.h — JSON-RPC 2.0, exactly: one message in, one response (or none) out.
**
** This layer owns the envelope and nothing else: it parses, refuses what is
** not a single request object (A2M has no batches, spec §8), echoes the id
** with its JSON type and value intact, finds the method and turns an
** a2m_error into an error object. What a method means is protocol/'s job.
*/
#ifndef A2M_RPC_H
#define A2M_RPC_H

#include <stddef.h>

#include <jansson.h>

#include "protocol/protocol.h"

/*
** Handles the message of len bytes. Returns the compact single-line response
** (caller frees with free()) and its length in *out_len, or NULL for a
** notification, which gets no answer, or when memory ran out.
*/
char *a2m_rpc_handle(a2m_server *srv, const char *msg, size_t len, size_t *out_len);

/*
** Builds the text of an error response with the given id (borrowed; NULL
** means JSON null), code, message and optional data (the reference is
** taken). Used by transports that refuse a message before it is parsed.
** Returns a string the caller frees with free(), or NULL when memory ran out.
*/
char *a2m_rpc_error_text(const json_t *id, int code, const char *message, json_t *data,
			 size_t *out_len);

/*
** Builds the text of a notification {"jsonrpc":"2.0","method":...,"params":...};
** takes the reference to params. Returns NULL when memory ran out.
*/
char *a2m_rpc_notification_text(const char *method, json_t *params, size_t *out_len);

#endif
