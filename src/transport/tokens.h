/*
** tokens.h — bearer tokens and the principals they stand for (spec §6.1).
**
** The HTTP binding authenticates a caller by the token in its
** "Authorization: Bearer" header, and the principal the token maps to is the
** caller's owner (spec §6). The file that holds them is the deployment's
** secret: nothing here ever prints a token, and the lookup takes the same
** time whichever token, if any, matches.
**
** File format (docs/HTTP.md): one "TOKEN PRINCIPAL" pair per line, the two
** separated by spaces or tabs; blank lines and lines whose first non-blank
** character is '#' are ignored. A token is printable ASCII without spaces
** (RFC 6750's token68 fits), at most A2M_BEARER_MAX bytes; a principal is any
** run of non-blank, non-control bytes. A token may appear only once.
*/
#ifndef A2M_TRANSPORT_TOKENS_H
#define A2M_TRANSPORT_TOKENS_H

#include <stddef.h>

/* The longest token accepted, in bytes. */
#define A2M_BEARER_MAX 1024

typedef struct a2m_bearer_tokens a2m_bearer_tokens;

/*
** Reads the token file at path. Returns 0 and sets *out on success. On
** failure returns -1, sets *out to NULL and writes a one-line reason to err
** (errlen bytes) that names the file and the line number, never a token:
** "line 3: expected TOKEN PRINCIPAL". A file with no token at all is refused
** too, since it would let nobody in. The caller frees *out with
** a2m_bearer_free().
*/
int a2m_bearer_load(const char *path, a2m_bearer_tokens **out, char *err, size_t errlen);

/*
** The principal of the token of len bytes (not NUL-terminated), or NULL when
** it is not one of ours. Every configured token is compared, each over the
** length of the longest one, without an early exit, so the time taken does
** not tell an attacker how much of a guess was right or which token it was
** close to. The string returned is borrowed from t.
*/
const char *a2m_bearer_lookup(const a2m_bearer_tokens *t, const char *token, size_t len);

/* How many tokens t holds. */
size_t a2m_bearer_count(const a2m_bearer_tokens *t);

/* Wipes the tokens from memory and frees t. NULL is a no-op. */
void a2m_bearer_free(a2m_bearer_tokens *t);

#endif
