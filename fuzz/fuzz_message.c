/*
** fuzz_message.c — one message through a2m_handle, on either engine.
**
** The input's first byte picks the engine (even: memory; odd: SQLite on a
** file of the scratch directory); the rest is the message, handed over
** with its length (so it may hold NULs and need not end in one). Every
** input starts from the same state: a fresh store holding the records of
** fuzz_seed(), so what a crash needs is all in the input. The reply, and
** any notification, is judged by the oracle of fuzz.h.
*/
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int sqlite = data[0] & 1;
	a2m *h = sqlite ? fuzz_open("engine", "sqlite", "path", fuzz_fresh_store("message"),
				    "synchronous", "normal", NULL)
			: fuzz_open("engine", "memory", NULL);
	size_t pushes = 0;
	a2m_set_notify(h, fuzz_on_notify, &pushes);
	fuzz_seed(h);
	fuzz_send(h, (const char *)data + 1, size - 1, 0, NULL);
	a2m_close(h);
	return 0;
}
