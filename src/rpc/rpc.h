/*
** rpc.h — JSON-RPC 2.0, exactly: one message in, one response (or none) out.
**
** This layer owns the envelope and nothing else: it parses, refuses what is
** not a single request object (A2M has no batches, spec §8), echoes the id
** with its JSON type and value intact, finds the method and turns an
** a2m_error into an error object. What a method means is protocol/'s job.
**
** A request goes through three steps, so a caller holding a lock only
** around the middle one keeps parsing and serialising outside it:
** a2m_rpc_parse (touches nothing shared), a2m_rpc_call (runs the method
** against the server), a2m_rpc_reply (serialises the outcome).
*/
#ifndef A2M_RPC_H
#define A2M_RPC_H

#include <stddef.h>

#include <jansson.h>

#include "protocol/protocol.h"

/* A request that passed the envelope checks, not yet executed. */
typedef struct a2m_rpc_request {
	json_t           *msg;     /* owned: the whole message */
	const json_t     *id;      /* borrowed from msg; NULL: a notification */
	const a2m_method *method;  /* the A2M method it names */
	json_t           *params;  /* an object: borrowed from msg, or owned (empty) */
	int               own_params;
} a2m_rpc_request;

/*
** Reads and checks msg. Returns 1 with req filled when it is a request for
** a2m_rpc_call (release it with a2m_rpc_request_free). Returns 0 when it has
** been answered already: *reply is the error response (free()), or NULL for
** a notification that gets none. Returns A2M_NOMEM, *reply NULL, when a
** response was owed and memory ran out, or when memory ran out reading msg
** (a valid message is never answered -32700 for want of memory). Reads
** nothing but msg: safe without any lock.
*/
int a2m_rpc_parse(const char *msg, size_t len, a2m_rpc_request *req, char **reply,
		  size_t *reply_len);

/*
** The checks of a2m_rpc_parse on a message already read into msgv (for an
** in-process caller that read its text itself, server/inprocess.h), with
** the same results; it takes msgv's reference whatever it returns.
*/
int a2m_rpc_accept(json_t *msgv, a2m_rpc_request *req, char **reply, size_t *reply_len);

/* Releases what a2m_rpc_parse filled in; a zeroed req is a no-op. */
void a2m_rpc_request_free(a2m_rpc_request *req);

/* What a method produced: a result, already serialised or not, or an error. */
typedef struct a2m_rpc_outcome {
	int       rc;        /* 0: success */
	json_t   *result;    /* owned; success without text */
	char     *text;      /* owned; success: the result's JSON text */
	size_t    text_len;
	a2m_error err;       /* rc != 0 */
} a2m_rpc_outcome;

/* Runs req's method against srv (the capability gate, then the handler). */
void a2m_rpc_call(a2m_call *call, const a2m_rpc_request *req, a2m_rpc_outcome *out);

/*
** The response to req for outcome (whose contents it releases) into *reply
** (free()): A2M_OK, with *reply NULL for a notification; A2M_NOMEM, *reply
** NULL, when memory ran out. Touches nothing of the server.
*/
int a2m_rpc_reply(const a2m_rpc_request *req, a2m_rpc_outcome *outcome, char **reply,
		  size_t *out_len);

/*
** The text of a success response with the given id (borrowed; NULL means
** JSON null) around a result already serialised: {"jsonrpc":"2.0","id":ID,
** "result":RESULT}, exactly what a2m_rpc_reply writes for the same result.
** NULL when memory ran out.
*/
char *a2m_rpc_result_text(const json_t *id, const char *result, size_t result_len,
			  size_t *out_len);

/*
** Writes the start of that success response, {"jsonrpc":"2.0","id":ID,
** "result": (NUL-terminated), into out of cap bytes and returns its
** length; 0 when it does not fit or memory ran out.
*/
size_t a2m_rpc_result_head(const json_t *id, char *out, size_t cap);

/*
** A memory/describe request recognised without a JSON parser, in the one
** shape clients send: an object whose members are "jsonrpc": "2.0",
** "method": "memory/describe", an "id" that is an integer of at most 18
** digits or a string of printable ASCII without escapes, and optionally
** "params" that is {} or {"protocol": such a string} — each once, in any
** order, with JSON whitespace between tokens and nothing after. Returns 1
** with q set (pointers into msg), or 0 for anything else, which the usual
** path then parses: recognising less never changes an answer.
*/
typedef struct a2m_rpc_quick {
	const char *id;        /* the id's JSON text as sent (with its quotes) */
	size_t      id_len;
	const char *protocol;  /* params.protocol's characters; NULL: absent */
	size_t      protocol_len;
} a2m_rpc_quick;

int a2m_rpc_quick_describe(const char *msg, size_t len, a2m_rpc_quick *q);

/* As a2m_rpc_result_head(), for the id of a recognised request. */
size_t a2m_rpc_quick_head(const a2m_rpc_quick *q, char *out, size_t cap);

/*
** Builds the text of an error response with the given id (borrowed; NULL
** means JSON null), code, message and optional data (the reference is
** taken). Used by transports that refuse a message before it is parsed.
** Returns a string the caller frees with free(), or NULL when memory ran out.
*/
char *a2m_rpc_error_text(const json_t *id, int code, const char *message, json_t *data,
			 size_t *out_len);

/*
** The response a transport sends when the library ran out of memory making
** the one a request was owed (a2m_handle's A2M_NOMEM): an internal error,
** id null, since the id is lost with the rest. A static string.
*/
extern const char a2m_rpc_oom_reply[];

/*
** Builds the text of a notification {"jsonrpc":"2.0","method":...,"params":...};
** takes the reference to params. Returns NULL when memory ran out.
*/
char *a2m_rpc_notification_text(const char *method, json_t *params, size_t *out_len);

#endif
