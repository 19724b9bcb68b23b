/*
** fuzz_message.c — one message through a2m_handle, on either engine.
**
** The input's first byte picks the engine (even: memory; odd: SQLite on a
** file of the scratch directory); the rest is the message, handed over
** with its length (so it may hold NULs and need not end in one). The
** reply, and any notification, is judged by the oracle of fuzz.h.
**
** The stores: opening one costs some twenty times what handling one
** message does (the analyser's tables, SQLite's schema), so each engine's
** store serves RESET_EVERY inputs and is then made anew: removed, opened
** and given fuzz_seed()'s records again. A crash that does not come back
** when its input is run alone needed some of the inputs before it;
** fuzz_sequence.c, where every input starts from a fresh store, is the
** target for what a state brings about.
*/
#include "fuzz.h"

#define RESET_EVERY 64

static a2m *store[2];
static unsigned served[2];
static size_t pushes;

static void fresh(int sqlite)
{
	a2m_close(store[sqlite]);
	store[sqlite] = sqlite ? fuzz_open("engine", "sqlite", "path", fuzz_fresh_store("message"),
					   "synchronous", "normal", NULL)
			       : fuzz_open("engine", "memory", NULL);
	a2m_set_notify(store[sqlite], fuzz_on_notify, &pushes);
	fuzz_seed(store[sqlite]);
	served[sqlite] = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int sqlite = data[0] & 1;
	if (!store[sqlite] || served[sqlite]++ == RESET_EVERY)
		fresh(sqlite);
	fuzz_send(store[sqlite], (const char *)data + 1, size - 1, 0, NULL);
	return 0;
}
