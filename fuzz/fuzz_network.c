/*
** fuzz_network.c — messages from a network caller: a2m_handle_network, with
** and without an authenticated principal (spec §6, §8.3).
**
** Byte 0 picks the caller: nobody authenticated (NULL), "alice", "bob" or
** "" (an empty principal); the rest is split at '\n' into at most
** MAX_LINES messages, all from that caller, on a fresh memory store holding
** fuzz_seed()'s records (some of them bob's). Besides the oracle of fuzz.h:
** a network caller never receives a push (it has no channel for one), and
** an authenticated caller never reads another owner's record in a private
** tier (working, in the default layout; the others are shared, spec §6 and
** docs/PROTOCOL.md): the seed has one of bob's there.
*/
#include "fuzz.h"

#define MAX_LINES 16

/* Aborts when a record of reply is another owner's, in the working tier. */
static void check_private(const char *principal, const char *reply)
{
	json_t *v = json_loadb(reply, strlen(reply), JSON_ALLOW_NUL, NULL);
	json_t *res = json_object_get(v, "result");
	json_t *recs = json_object_get(res, "records"), *one = json_object_get(res, "record");
	size_t n = json_is_array(recs) ? json_array_size(recs) : 0;
	for (size_t i = 0; i <= n; i++) {
		json_t *r = i < n ? json_array_get(recs, i) : one;
		json_t *owner = json_object_get(r, "owner"), *tier = json_object_get(r, "tier");
		if (json_is_string(owner) && strcmp(json_string_value(owner), principal) != 0 &&
		    json_is_string(tier) && strcmp(json_string_value(tier), "working") == 0)
			fuzz_fail(reply, strlen(reply), "%s read a private record of %s's", principal,
				  json_string_value(owner));
	}
	json_decref(v);
}

static const char *const principals[] = {NULL, "alice", "bob", ""};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *principal = principals[data[0] % 4];
	a2m *h = fuzz_open("engine", "memory", NULL);
	fuzz_seed(h);
	/* Set after the seed (a local caller's own): from here on, nothing
	** may be pushed, since every caller is a network one. */
	size_t pushes = 0;
	a2m_set_notify(h, fuzz_on_notify, &pushes);
	const uint8_t *p = data + 1, *end = data + size;
	for (int lines = 0; p < end && lines < MAX_LINES; lines++) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		const uint8_t *stop = nl ? nl : end;
		size_t n = (size_t)(stop - p);
		char *reply = NULL;
		int rc = a2m_handle_network(h, (const char *)p, n, principal, &reply);
		fuzz_check_reply((const char *)p, n, rc, reply);
		if (reply && principal)
			check_private(principal, reply);
		a2m_free(reply);
		FUZZ_ASSERT(pushes == 0, (const char *)p, n, "a network caller got a push");
		p = stop + 1;
	}
	a2m_close(h);
	return 0;
}
