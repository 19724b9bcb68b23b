/*
** fuzz_config.c — the configuration file parser (src/server/config.c,
** a2m_config_load_file), through a2m_open with config_file.
**
** The input is the file. a2m_open must either refuse it with a status and
** a message (A2M_RANGE or A2M_CANTOPEN), or open a store that then serves: describe, a remember into
** each tier the file may name, a consolidate, a recall and a timeline,
** every reply judged by the oracle of fuzz.h (a configuration it accepted
** must never make the server fail internally).
**
** The embedder: a file may name one, with any URL. Options set on the
** configuration take precedence over the file's (docs/CONFIG.md), so the
** URL is set here to a closed port of this machine, and no request ever
** leaves it.
*/
#include "fuzz.h"

static char path[400];

static const char *const requests[] = {
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/describe\"}",
	("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"memory/remember\",\"params\":{\"records\":["
	 "{\"content\":\"w one\",\"session\":\"s\"},{\"content\":\"w two\",\"session\":\"s\"},"
	 "{\"content\":\"e one\",\"tier\":\"episodic\"},{\"content\":\"s one\",\"tier\":\"semantic\","
	 "\"key\":\"k\"},{\"content\":\"p one\",\"tier\":\"procedural\"}]}}"),
	("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"memory/remember\",\"params\":{\"records\":["
	 "{\"content\":\"x one\",\"tier\":\"x\"}]}}"),
	("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"memory/remember\",\"params\":{\"records\":["
	 "{\"content\":\"w three\",\"session\":\"s\"},{\"content\":\"one\"},{\"content\":\"two\"}]}}"),
	"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"memory/consolidate\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"memory/session/close\",\"params\":{\"session\":\"s\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"memory/recall\",\"params\":{\"query\":\"one\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"memory/timeline\",\"params\":{\"limit\":1000}}",
	"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"memory/events\"}",
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(path, sizeof path, "%s/config.json", fuzz_dir());
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_write_file(path, data, size);
	a2m_config *cfg;
	if (a2m_config_new(&cfg) != A2M_OK)
		abort();
	if (a2m_config_set(cfg, "engine", "memory") || a2m_config_set(cfg, "config_file", path) ||
	    a2m_config_set(cfg, "helper_threads", "0") ||
	    a2m_config_set(cfg, "embed_url", "http://127.0.0.1:9") ||
	    a2m_config_set(cfg, "embed_timeout_ms", "50"))
		fuzz_fail(NULL, 0, "option refused: %s", a2m_config_errmsg(cfg));
	a2m *h = NULL;
	char *err = NULL;
	int rc = a2m_open(cfg, &h, &err);
	a2m_config_free(cfg);
	if (rc != A2M_OK) {
		FUZZ_ASSERT(!h, (const char *)data, size, "a failed open set the handle");
		FUZZ_ASSERT(rc == A2M_RANGE || rc == A2M_CANTOPEN, (const char *)data, size,
			    "open failed with %d (%s): %s", rc, a2m_strerror(rc), err ? err : "");
		/* Not one line always: a message may quote the file, line breaks
		** and all ("unknown capability 'a\nb'"), which a2m.h allows. */
		FUZZ_ASSERT(err && *err, (const char *)data, size, "a refusal without a message");
		a2m_free(err);
		return 0;
	}
	FUZZ_ASSERT(!err, err, strlen(err), "a message from an open that succeeded");
	size_t pushes = 0;
	a2m_set_notify(h, fuzz_on_notify, &pushes);
	for (size_t i = 0; i < sizeof requests / sizeof requests[0]; i++)
		fuzz_send(h, requests[i], strlen(requests[i]), 0, NULL);
	a2m_close(h);
	return 0;
}
