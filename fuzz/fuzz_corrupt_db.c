/*
** fuzz_corrupt_db.c — the SQLite engine on a corrupted database file.
**
** At start this program makes a valid store (fuzz_seed()'s records and
** some more, in every tier, with keys, sessions and a group) and keeps its
** file's bytes. Each input is a list of 5-byte patches applied to a copy:
** a 24-bit offset (taken modulo the file's size), a byte, and how to apply
** it (bits 0-1: set the byte, xor it in, fill 16 bytes with it, or set it
** in the first 100 bytes, SQLite's header). The patched file is opened
** and every read method is called: describe, recall (text, tier, where),
** timeline, fetch, events, session/list.
**
** What must hold: a2m_open fails with a status and a message, or every
** reply is well-formed JSON-RPC with the request's id (the oracle of
** fuzz.h); no crash, no hang (libFuzzer's -timeout), no leak. Here an
** INTERNAL_ERROR is a fair answer: the disk image is malformed, which is
** the server's fault to report, not the caller's.
*/
#include "fuzz.h"

#define MAX_PATCHES 64

static unsigned char *image;
static size_t image_len;

static const char *const reads[] = {
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/describe\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"memory/recall\",\"params\":{\"query\":\"tea deploy note\"}}",
	("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"memory/recall\",\"params\":{\"query\":\"record\","
	 "\"tier\":\"semantic\",\"where\":{\"t\":\"ops\"}}}"),
	"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"memory/timeline\",\"params\":{\"limit\":1000}}",
	"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"memory/timeline\",\"params\":{\"tier\":\"working\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"memory/fetch\",\"params\":{\"key\":\"facts/deploy\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"memory/fetch\",\"params\":{\"key\":\"k/7\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"memory/events\",\"params\":{\"limit\":100}}",
	"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"memory/session/list\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"memory/timeline\",\"params\":{\"key_prefix\":\"k/\"}}",
};

/* Makes the valid store and reads its file into image. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *path = fuzz_fresh_store("template");
	a2m *h = fuzz_open("engine", "sqlite", "path", path, NULL);
	fuzz_seed(h);
	for (int i = 0; i < 40; i++) {
		static const char *const tier[] = {"working", "episodic", "semantic", "procedural"};
		char msg[512], *out = NULL;
		snprintf(msg, sizeof msg,
			 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"memory/remember\",\"params\":"
			 "{\"records\":[{\"content\":\"record %d about tea and deploy keys number %d\","
			 "\"tier\":\"%s\",\"key\":\"k/%d\",\"session\":\"s%d\",\"metadata\":{\"t\":\"ops\","
			 "\"i\":%d}}]}}",
			 i, i, i * 7, tier[i % 4], i, i % 3, i);
		if (a2m_handle(h, msg, A2M_NUL_TERMINATED, &out) != A2M_OK || !out ||
		    strstr(out, "\"error\""))
			fuzz_fail(out, out ? strlen(out) : 0, "making the template");
		a2m_free(out);
	}
	a2m_close(h);
	FILE *f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0)
		abort();
	long n = ftell(f);
	if (n <= 0 || fseek(f, 0, SEEK_SET) != 0 || !(image = malloc((size_t)n)) ||
	    fread(image, 1, (size_t)n, f) != (size_t)n)
		abort();
	fclose(f);
	image_len = (size_t)n;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *copy = malloc(image_len);
	if (!copy)
		abort();
	memcpy(copy, image, image_len);
	for (size_t i = 0; i + 5 <= size && i / 5 < MAX_PATCHES; i += 5) {
		size_t off = ((size_t)data[i] | (size_t)data[i + 1] << 8 | (size_t)data[i + 2] << 16);
		uint8_t v = data[i + 3];
		switch (data[i + 4] & 3) {
		case 0: copy[off % image_len] = v; break;
		case 1: copy[off % image_len] ^= v; break;
		case 2:
			off %= image_len;
			memset(copy + off, v, image_len - off < 16 ? image_len - off : 16);
			break;
		default: copy[off % 100] = v; break;
		}
	}
	const char *path = fuzz_fresh_store("corrupt");
	fuzz_write_file(path, copy, image_len);
	free(copy);

	a2m_config *cfg;
	if (a2m_config_new(&cfg) != A2M_OK || a2m_config_set(cfg, "engine", "sqlite") ||
	    a2m_config_set(cfg, "path", path) || a2m_config_set(cfg, "helper_threads", "0"))
		abort();
	a2m *h = NULL;
	char *err = NULL;
	int rc = a2m_open(cfg, &h, &err);
	a2m_config_free(cfg);
	if (rc != A2M_OK) {
		FUZZ_ASSERT(!h && err && *err, NULL, 0, "open failed (%d) without a message", rc);
		a2m_free(err);
		return 0;
	}
	fuzz_allow_internal = 1;
	for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
		fuzz_send(h, reads[i], strlen(reads[i]), 0, NULL);
	fuzz_allow_internal = 0;
	a2m_close(h);
	return 0;
}
