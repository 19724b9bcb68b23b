/*
** backend.h — what differs between two HTTP embedding APIs, and nothing
** else: the endpoint, the request body, how to read the answer. The HTTP
** exchange, batching and the width check across requests are embedder.c's.
** Private to src/embed/: the rest of the tree sees only embedder.h.
*/
#ifndef A2M_EMBED_BACKEND_H
#define A2M_EMBED_BACKEND_H

#include <stddef.h>

#include <jansson.h>

#include "embed/embedder.h"

typedef struct a2m_embed_backend {
	const char *kind;          /* "ollama", "openai" */
	const char *default_url;   /* NULL: the configuration must name one */
	/*
	** How a configured URL becomes the endpoint (embedder.c, resolve_url):
	** a URL whose path ends in `endpoint` is used as given; one whose path
	** ends in `base_suffix` (when not NULL) gets `after_base`; any other
	** gets `path`.
	*/
	const char *endpoint;      /* "/api/embed", "/embeddings" */
	const char *base_suffix;   /* NULL, "/v1" */
	const char *after_base;    /* NULL, "/embeddings" */
	const char *path;          /* "/api/embed", "/v1/embeddings" */
	/*
	** The request body for n texts, or NULL when memory runs out or a text
	** is not valid UTF-8; *bad_text is then the index of that text, or n
	** when memory ran out.
	*/
	json_t *(*request)(const char *model, const char *const *texts, size_t n,
			   size_t *bad_text);
	/*
	** Reads a 2xx response body answering n texts (n >= 1) into *out: n *
	** *dims floats, malloc'd, text i's vector at [i * dims]. Returns 0,
	** A2M_EMBED_EPROTO with a message in err, or A2M_EMBED_ENOMEM; *out is
	** NULL on failure. Checks that there are exactly n vectors, each
	** non-empty, all of one width, every component a finite float.
	*/
	int (*parse)(const json_t *body, size_t n, float **out, size_t *dims,
		     char *err, size_t errlen);
	/* The server's own message in an error body, or NULL. Borrowed from body. */
	const char *(*error_message)(const json_t *body);
} a2m_embed_backend;

extern const a2m_embed_backend a2m_embed_ollama;
extern const a2m_embed_backend a2m_embed_openai;

/*
** Copies one JSON array of exactly width numbers into dst[0..width).
** Returns 0, or -1 when arr is not an array of that length or an element is
** not a number or not finite once rounded to float. Shared, so that both
** parsers apply one rule.
*/
int a2m_embed_read_vector(const json_t *arr, float *dst, size_t width);

/*
** The request body both APIs share: {"model": model, "input": [texts...]},
** `input` an array even for one text, so the answer is always an array of
** vectors. Implements a2m_embed_backend.request.
*/
json_t *a2m_embed_request_inputs(const char *model, const char *const *texts, size_t n,
				 size_t *bad_text);

/*
** Formats a message into err (when err != NULL and errlen > 0) and returns
** status, so a parser can write `return embed_fail(err, len, EPROTO, ...)`.
*/
int a2m_embed_fail(char *err, size_t errlen, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
