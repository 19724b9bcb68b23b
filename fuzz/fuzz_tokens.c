/*
** fuzz_tokens.c — the bearer tokens file parser (src/transport/tokens.c).
**
** The input is the file. It is also read by a model of the format written
** here from docs/HTTP.md (one "TOKEN PRINCIPAL" pair per line, blanks and
** '#' comments skipped, a token printable ASCII of at most 1024 bytes, a
** principal without control characters, no token twice, lines of at most
** 4096 bytes without NUL, at least one pair), and the two must agree:
** a2m_bearer_load succeeds exactly when the model accepts the file; a
** refusal names the line the model refuses (and never holds the token);
** on success every token maps to its principal, and a token cut short or
** lengthened by one byte maps to nothing unless it is a token too.
*/
#include "fuzz.h"
#include "transport/tokens.h"

#define MAX_PAIRS 512

typedef struct pair {
	const char *tok, *prin;
	size_t tlen, plen;
} pair;

static char path[400];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(path, sizeof path, "%s/tokens", fuzz_dir());
	return 0;
}

static int blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The model: 0 with the pairs, or the number of the line refused (or -1:
** no pair at all). */
static long model(const char *s, size_t n, pair *pairs, size_t *np)
{
	long lineno = 0;
	*np = 0;
	for (size_t at = 0; at < n;) {
		const char *nl = memchr(s + at, '\n', n - at);
		size_t end = nl ? (size_t)(nl - s) : n, len = end - at;
		const char *l = s + at;
		at = end + 1;
		lineno++;
		if (len > 4096 || memchr(l, '\0', len))
			return lineno;
		if (len && l[len - 1] == '\r')
			len--;
		size_t i = 0;
		while (i < len && blank(l[i]))
			i++;
		if (i == len || l[i] == '#')
			continue;
		size_t t0 = i;
		while (i < len && !blank(l[i]))
			i++;
		size_t tlen = i - t0;
		while (i < len && blank(l[i]))
			i++;
		size_t p0 = i;
		while (i < len && !blank(l[i]))
			i++;
		size_t plen = i - p0;
		while (i < len && blank(l[i]))
			i++;
		if (plen == 0 || i != len || tlen > 1024)
			return lineno;
		for (size_t k = 0; k < tlen; k++)
			if ((unsigned char)l[t0 + k] < 0x21 || (unsigned char)l[t0 + k] > 0x7e)
				return lineno;
		for (size_t k = 0; k < plen; k++)
			if ((unsigned char)l[p0 + k] < 0x20 || (unsigned char)l[p0 + k] == 0x7f)
				return lineno;
		for (size_t k = 0; k < *np; k++)
			if (pairs[k].tlen == tlen && memcmp(pairs[k].tok, l + t0, tlen) == 0)
				return lineno;
		if (*np == MAX_PAIRS)
			return -2;  /* beyond the model: not judged */
		pairs[(*np)++] = (pair){l + t0, l + p0, tlen, plen};
	}
	return *np ? 0 : -1;
}

static int is_token(const pair *pairs, size_t np, const char *t, size_t len)
{
	for (size_t k = 0; k < np; k++)
		if (pairs[k].tlen == len && memcmp(pairs[k].tok, t, len) == 0)
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static pair pairs[MAX_PAIRS];
	const char *s = (const char *)data;
	fuzz_write_file(path, data, size);
	a2m_bearer_tokens *t = NULL;
	char err[512] = "";
	int rc = a2m_bearer_load(path, &t, err, sizeof err);
	size_t np;
	long want = model(s, size, pairs, &np);
	if (want == -2) {
		a2m_bearer_free(t);
		return 0;
	}
	if (want != 0) {
		FUZZ_ASSERT(rc == -1 && !t, s, size, "a file the model refuses (line %ld) was loaded",
			    want);
		char expect[600];
		if (want > 0)
			snprintf(expect, sizeof expect, "%s: line %ld: ", path, want);
		else
			snprintf(expect, sizeof expect, "%s: no TOKEN PRINCIPAL line", path);
		FUZZ_ASSERT(strncmp(err, expect, strlen(expect)) == 0, err, strlen(err),
			    "the refusal does not name line %ld", want);
		return 0;
	}
	FUZZ_ASSERT(rc == 0 && t, s, size, "a file the model accepts was refused: %s", err);
	FUZZ_ASSERT(a2m_bearer_count(t) == np, s, size, "%zu tokens, the model has %zu",
		    a2m_bearer_count(t), np);
	char probe[1100];
	for (size_t k = 0; k < np; k++) {
		const char *p = a2m_bearer_lookup(t, pairs[k].tok, pairs[k].tlen);
		FUZZ_ASSERT(p && strlen(p) == pairs[k].plen && memcmp(p, pairs[k].prin, pairs[k].plen) == 0,
			    s, size, "token %zu does not map to its principal", k);
		if (!is_token(pairs, np, pairs[k].tok, pairs[k].tlen - 1))
			FUZZ_ASSERT(!a2m_bearer_lookup(t, pairs[k].tok, pairs[k].tlen - 1), s, size,
				    "token %zu cut short is taken", k);
		memcpy(probe, pairs[k].tok, pairs[k].tlen);
		probe[pairs[k].tlen] = 'x';
		if (!is_token(pairs, np, probe, pairs[k].tlen + 1))
			FUZZ_ASSERT(!a2m_bearer_lookup(t, probe, pairs[k].tlen + 1), s, size,
				    "token %zu lengthened is taken", k);
	}
	a2m_bearer_free(t);
	return 0;
}
