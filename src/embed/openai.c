/*
** openai.c — the OpenAI-compatible backend: POST /v1/embeddings, as served
** by OpenAI itself and by vLLM, llama.cpp, LM Studio, text-embeddings-
** inference, Ollama's /v1 and others.
**
**   request  {"model": "bge-m3", "input": ["text", ...]}
**   response {"object": "list", "model": "...",
**             "data": [{"object": "embedding", "index": 0, "embedding": [...]}, ...],
**             "usage": {...}}
**   error    {"error": {"message": "...", "type": "...", ...}}
**
** Each vector is placed by its `index`, not by its position: the API
** promises the index, not the order. A server that omits `index` everywhere
** is read by position; one that gives it for some items and not others, or
** names an index twice or out of range, is refused — a vector that might
** belong to another text is worse than none.
** `encoding_format` is not sent: its default is "float", and not every
** compatible server accepts the field.
*/
#include <stdlib.h>

#include "embed/backend.h"

/* The slot item i of `data` fills, or -1 (message in err). */
static long slot_of(const json_t *item, size_t i, size_t n, int by_index, char *err,
		    size_t errlen)
{
	const json_t *idx = json_object_get(item, "index");
	if (!by_index) {
		if (idx)
			return a2m_embed_fail(err, errlen, -1,
					      "data[%zu] has an \"index\", data[0] has none", i);
		return (long)i;
	}
	if (!json_is_integer(idx) || json_integer_value(idx) < 0 ||
	    (size_t)json_integer_value(idx) >= n)
		return a2m_embed_fail(err, errlen, -1,
				      "data[%zu].index is missing or not in 0..%zu", i, n - 1);
	return (long)json_integer_value(idx);
}

static int openai_parse(const json_t *body, size_t n, float **out, size_t *dims, char *err,
			size_t errlen)
{
	*out = NULL;
	*dims = 0;
	const json_t *data = json_object_get(body, "data");
	if (!json_is_array(data))
		return a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
				      "response has no \"data\" array");
	if (json_array_size(data) != n)
		return a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
				      "%zu vectors for %zu texts", json_array_size(data), n);
	const json_t *first = json_object_get(json_array_get(data, 0), "embedding");
	if (json_is_string(first))
		return a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
				      "data[0].embedding is a string (base64?), not numbers");
	size_t width = json_is_array(first) ? json_array_size(first) : 0;
	if (width == 0)
		return a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
				      "data[0].embedding is not a non-empty array");
	int by_index = json_object_get(json_array_get(data, 0), "index") != NULL;
	float *v = malloc(n * width * sizeof *v);
	unsigned char *seen = calloc(n, 1);
	if (!v || !seen) {
		free(v);
		free(seen);
		return a2m_embed_fail(err, errlen, A2M_EMBED_ENOMEM, "out of memory");
	}
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		const json_t *item = json_array_get(data, i);
		const json_t *e = json_object_get(item, "embedding");
		long slot = slot_of(item, i, n, by_index, err, errlen);
		if (slot < 0)
			rc = A2M_EMBED_EPROTO;
		else if (seen[slot])
			rc = a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
					    "data[%zu] repeats index %ld", i, slot);
		else if (json_is_array(e) && json_array_size(e) != width)
			rc = a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
					    "data[%zu].embedding has width %zu, data[0] %zu", i,
					    json_array_size(e), width);
		else if (a2m_embed_read_vector(e, v + (size_t)slot * width, width) != 0)
			rc = a2m_embed_fail(err, errlen, A2M_EMBED_EPROTO,
					    "data[%zu].embedding is not an array of finite numbers",
					    i);
		else
			seen[slot] = 1;
	}
	/* n items, each in a distinct slot of n: every slot is filled. */
	free(seen);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*dims = width;
	return 0;
}

static const char *openai_error_message(const json_t *body)
{
	const json_t *e = json_object_get(body, "error");
	if (json_is_string(e))
		return json_string_value(e); /* some compatible servers */
	return json_string_value(json_object_get(e, "message"));
}

const a2m_embed_backend a2m_embed_openai = {
	.kind          = "openai",
	.default_url   = NULL,
	.endpoint      = "/embeddings",
	.base_suffix   = "/v1",
	.after_base    = "/embeddings",
	.path          = "/v1/embeddings",
	.request       = a2m_embed_request_inputs,
	.parse         = openai_parse,
	.error_message = openai_error_message,
};
