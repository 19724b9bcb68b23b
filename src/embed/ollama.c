/*
** ollama.c — the Ollama backend: POST /api/embed.
**
**   request  {"model": "bge-m3", "input": ["text", ...]}
**   response {"model": "bge-m3", "embeddings": [[0.1, ...], ...], ...}
**   error    {"error": "model \"x\" not found, try pulling it first"}
**
** `input` is always an array, even for one text, so the answer is always
** an array of vectors in input order. Ollama's own defaults stand for the
** rest (`truncate`: true, so an over-long text is cut to the model's context
** rather than failing the whole batch; `keep_alive`: the server's setting).
** The older /api/embeddings (one `prompt`, one `embedding`) is not used: it
** takes one text per request, which is exactly the cost batching avoids.
*/
#include <stdlib.h>

#include "embed/backend.h"

static int ollama_parse(const json_t *body, size_t n, float **out, size_t *dims, char *err,
			size_t errlen)
{
	*out = NULL;
	*dims = 0;
	const json_t *embs = json_object_get(body, "embeddings");
	if (!json_is_array(embs))
		return a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
				      "response has no \"embeddings\" array");
	if (json_array_size(embs) != n)
		return a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
				      "%zu vectors for %zu texts", json_array_size(embs), n);
	const json_t *first = json_array_get(embs, 0);
	size_t width = json_is_array(first) ? json_array_size(first) : 0;
	if (width == 0)
		return a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
				      "embeddings[0] is not a non-empty array");
	float *v = malloc(n * width * sizeof *v);
	if (!v)
		return a2m_embed_fail(err, errlen, A2M_EMBED_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(embs, i);
		if (json_is_array(e) && json_array_size(e) != width) {
			free(v);
			return a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
					      "embeddings[%zu] has width %zu, embeddings[0] %zu", i,
					      json_array_size(e), width);
		}
		if (a2m_embed_read_vector(e, v + i * width, width) != 0) {
			free(v);
			return a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
					      "embeddings[%zu] is not an array of finite numbers", i);
		}
	}
	*out = v;
	*dims = width;
	return 0;
}

static const char *ollama_error_message(const json_t *body)
{
	return json_string_value(json_object_get(body, "error"));
}

const a2m_embed_backend a2m_embed_ollama = {
	.kind          = "ollama",
	.default_url   = A2M_EMBED_DEFAULT_OLLAMA_URL,
	.endpoint      = "/api/embed",
	.base_suffix   = NULL,
	.after_base    = NULL,
	.path          = "/api/embed",
	.request       = a2m_embed_request_inputs,
	.parse         = ollama_parse,
	.error_message = ollama_error_message,
};
