/*
** error.h — how a failure travels from deep in the library to the JSON-RPC
** error object that reports it.
**
** Every layer returns an int (0 ok, otherwise a negative code of enum
** a2m_code) and, where it can say more, fills an a2m_error. The rpc layer turns
** the struct into {"code", "message", "data"}.
*/
#ifndef A2M_ERROR_H
#define A2M_ERROR_H

#include <jansson.h>

#include "a2m.h"

/* One error: the JSON-RPC code, a human message and optional data. */
typedef struct a2m_error {
	int     code;          /* enum a2m_code; 0 when no error is set */
	char    message[256];  /* for humans (spec §7: clients must not parse it) */
	json_t *data;          /* owned; NULL when there is no structured detail */
} a2m_error;

/* Clears err to "no error", releasing any data it held. */
void a2m_error_clear(a2m_error *err);

/*
** Sets code and a printf-style message (truncated to fit) and returns code,
** so a caller can write `return a2m_error_set(err, A2M_INVALID_PARAMS, ...)`.
** Any previous data is released. err may be NULL.
*/
int a2m_error_set(a2m_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Attaches data (the error takes the reference) and returns err->code. */
int a2m_error_data(a2m_error *err, json_t *data);

#endif
