/*
** embedder.h — the embedding seam: turn texts into vectors with a model the
** server runs, for records that arrived without a vector of their own.
**
** This seam is optional (DESIGN.md §2). A store needs no embedder at all:
** vectors the caller brings are stored and ranked verbatim (spec §3.7,
** DECISIONS 018). What an embedder produces is the server's own vector, in
** the server's model's space; it never replaces, and is never compared with,
** a vector the caller gave (see docs/EMBEDDINGS.md for the whole policy).
**
** Two implementations, both over HTTP with libcurl:
**   - "ollama": POST {url}/api/embed    {"model","input":[...]}
**                                       → {"embeddings":[[...],...]}
**   - "openai": POST {url}/v1/embeddings {"model","input":[...]}
**                                       → {"data":[{"embedding":[...],"index":i},...]}
**     (any OpenAI-compatible server: OpenAI, vLLM, llama.cpp, LM Studio,
**     Ollama's /v1, text-embeddings-inference...).
** embedder.c holds what both share (the HTTP exchange, batching, the
** checks on what came back); ollama.c and openai.c only write the request
** body and read the response body.
**
** Conventions:
**   - An embedder never prints, never exits and never retries on its own:
**     every failure is returned as a negative a2m_embed_status with a
**     one-line message in err (which never contains the API key).
**   - Constructing one does no network I/O: the model server may be down
**     at start-up and come up later. A failed call leaves the embedder
**     usable; the next call tries again (a fresh connection if need be).
**   - One connection, kept alive between calls. Calls from several threads
**     are safe and are serialised.
*/
#ifndef A2M_EMBEDDER_H
#define A2M_EMBEDDER_H

#include <stddef.h>

/* What embed() returns: 0, or one of these (always negative). */
typedef enum a2m_embed_status {
	A2M_EMBED_OK          =  0,
	/* texts NULL (with n > 0), a NULL text, a NULL output pointer, or a
	** text that is not valid UTF-8. Nothing was sent. */
	A2M_EMBED_EINVAL      = -1,
	/* Memory ran out. */
	A2M_EMBED_ENOMEM      = -2,
	/* No exchange with the server: connection refused, name not
	** resolved, TLS handshake failed, connection dropped before an answer.
	** Typical of a model server that is down; worth retrying later. */
	A2M_EMBED_EUNREACHABLE = -3,
	/* No complete answer within timeout_ms (connecting included). */
	A2M_EMBED_ETIMEOUT    = -4,
	/* The server answered with a status other than 2xx (a missing model is
	** 404 on Ollama, a bad key 401 on OpenAI). err carries the status and
	** the server's own message when it sent one. */
	A2M_EMBED_EHTTP       = -5,
	/* A 2xx answer that is not what the protocol promises: not JSON, the
	** wrong shape, another number of vectors than texts, an empty vector,
	** a non-numeric or non-finite component, vectors of different widths
	** (within one answer or across the requests of one call), or a body
	** larger than any sane answer to the request. */
	A2M_EMBED_EPROTO      = -6
} a2m_embed_status;

typedef struct a2m_embedder a2m_embedder;

struct a2m_embedder {
	/* "ollama" or "openai": for logs and describe. Static storage. */
	const char *kind;
	/*
	** Embeds n texts. On success returns 0 and sets *vectors_out to one
	** malloc'd array of n * *dims_out floats, text i's vector at
	** [i * dims, (i+1) * dims), which the caller frees with free(); every
	** vector has the same width, and the values are the server's, rounded
	** to float. More than `batch` texts are sent as ceil(n / batch)
	** requests, in order; one failing request fails the whole call.
	** n == 0 sends nothing, returns 0 with *vectors_out NULL and
	** *dims_out 0.
	**
	** On failure returns a negative a2m_embed_status, sets *vectors_out to
	** NULL and *dims_out to 0, and writes a NUL-terminated message into
	** err (when err is not NULL and errlen > 0; truncated to fit).
	**
	** texts are borrowed. The call blocks for up to timeout_ms per request.
	** Callers should not send empty or blank texts: some servers refuse
	** them, which fails the whole batch.
	*/
	int (*embed)(a2m_embedder *e, const char *const *texts, size_t n,
		     float **vectors_out, size_t *dims_out, char *err, size_t errlen);
	/* The model name sent with every request (borrowed, lives as long as e). */
	const char *(*model)(a2m_embedder *e);
	/* Closes the connection and frees e. NULL is a no-op. */
	void (*destroy)(a2m_embedder *e);
};

/* The defaults a2m_embedder_new applies to fields left 0 / NULL. */
#define A2M_EMBED_DEFAULT_MODEL      "bge-m3"   /* DECISIONS 014, both kinds */
#define A2M_EMBED_DEFAULT_OLLAMA_URL "http://127.0.0.1:11434"
#define A2M_EMBED_DEFAULT_TIMEOUT_MS 2000L
#define A2M_EMBED_DEFAULT_BATCH      64

typedef struct a2m_embedder_config {
	const char *kind;     /* "ollama" | "openai"; NULL means "ollama" */
	/*
	** Where the model server is. Either a base URL, to which the backend's
	** path is appended, or the full endpoint, used as given:
	**   ollama: "http://host:11434" → http://host:11434/api/embed; a URL
	**           whose path already ends in /api/embed is used as is.
	**           Default A2M_EMBED_DEFAULT_OLLAMA_URL.
	**   openai: "https://api.openai.com/v1" → .../v1/embeddings;
	**           "http://host:8080" → http://host:8080/v1/embeddings; a URL
	**           whose path already ends in /embeddings is used as is.
	**           Required: there is no default OpenAI-compatible server.
	*/
	const char *url;
	const char *model;    /* NULL: A2M_EMBED_DEFAULT_MODEL */
	/* Sent as "Authorization: Bearer KEY" when not NULL or "" (both kinds:
	** an Ollama behind an authenticating proxy needs it too). */
	const char *api_key;
	long        timeout_ms; /* per request; <= 0: A2M_EMBED_DEFAULT_TIMEOUT_MS */
	size_t      batch;      /* most texts per request; 0: A2M_EMBED_DEFAULT_BATCH */
} a2m_embedder_config;

/*
** Creates an embedder from cfg, whose strings are copied (cfg may be freed
** afterwards); a NULL cfg takes every default (Ollama on 127.0.0.1:11434,
** bge-m3). Does not contact the server. Returns NULL, with a message in
** err (when err is not NULL and errlen > 0), when the kind is unknown, the
** URL is missing (openai) or not http(s), or memory or libcurl's set-up
** fails. Free the result with e->destroy(e).
*/
a2m_embedder *a2m_embedder_new(const a2m_embedder_config *cfg, char *err, size_t errlen);

/* "ok", "invalid argument", "out of memory", "unreachable", "timed out",
** "HTTP error", "bad response"; "unknown" for anything else. Static. */
const char *a2m_embed_strerror(int status);

#endif
