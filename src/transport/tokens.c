/*
** tokens.c — the bearer token file and its constant-time lookup (tokens.h).
**
** Tokens are kept side by side in one block, each zero-padded to the width
** of the longest, so a lookup is the same sequence of byte comparisons
** whatever is presented: a guess that shares a long prefix with a real token
** costs exactly as much as one that shares nothing (a plain strcmp would
** leak the prefix, one byte at a time, to anyone who can time it).
*/
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tokens.h"
#include "util/grow.h"

typedef struct token_entry {
	size_t len;       /* of the token, in bytes */
	char *principal;
} token_entry;

struct a2m_bearer_tokens {
	size_t n, cap;
	size_t width;         /* the longest token; every slot is this wide */
	token_entry *entries;
	unsigned char *pad;   /* n slots of width bytes, zero-padded */
	size_t pad_cap;       /* in slots */
};

/* The longest line read from the file; a longer one is refused. */
#define LINE_MAX_BYTES 4096

/* Overwrites n bytes in a way the compiler may not drop as a dead store. */
static void wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;
	while (n--)
		*v++ = 0;
}

static int is_blank(int c)
{
	return c == ' ' || c == '\t';
}

/*
** Adds one pair. The token is stored at the current width; a longer one
** widens every slot. Returns 0, or -1 when memory ran out.
*/
static int add_entry(a2m_bearer_tokens *t, const char *tok, size_t len, const char *principal,
		     size_t plen)
{
	if (a2m_grow((void **)&t->entries, &t->cap, t->n + 1, sizeof *t->entries))
		return -1;
	size_t width = len > t->width ? len : t->width;
	if (width != t->width || t->n == t->pad_cap) {
		size_t slots = t->n == t->pad_cap ? (t->pad_cap ? t->pad_cap * 2 : 8) : t->pad_cap;
		unsigned char *pad = calloc(slots, width);
		if (!pad)
			return -1;
		for (size_t i = 0; i < t->n; i++)
			memcpy(pad + i * width, t->pad + i * t->width, t->width);
		if (t->pad) {
			wipe(t->pad, t->pad_cap * t->width);
			free(t->pad);
		}
		t->pad = pad;
		t->pad_cap = slots;
		t->width = width;
	}
	char *p = malloc(plen + 1);
	if (!p)
		return -1;
	memcpy(p, principal, plen);
	p[plen] = '\0';
	memcpy(t->pad + t->n * t->width, tok, len);
	t->entries[t->n].len = len;
	t->entries[t->n].principal = p;
	t->n++;
	return 0;
}

/*
** Parses one line (without its newline) of the file. Returns 0 when it was
** blank, a comment or a good pair (added); otherwise -1 with the reason in
** why. Never puts any part of the line into why.
*/
static int parse_line(a2m_bearer_tokens *t, char *line, size_t len, const char **why)
{
	if (len && line[len - 1] == '\r')
		line[--len] = '\0';
	size_t i = 0;
	while (i < len && is_blank(line[i]))
		i++;
	if (i == len || line[i] == '#')
		return 0;
	size_t tok = i;
	while (i < len && !is_blank(line[i]))
		i++;
	size_t tok_len = i - tok;
	while (i < len && is_blank(line[i]))
		i++;
	size_t prin = i;
	while (i < len && !is_blank(line[i]))
		i++;
	size_t prin_len = i - prin;
	while (i < len && is_blank(line[i]))
		i++;
	if (prin_len == 0 || i != len) {
		*why = "expected TOKEN PRINCIPAL";
		return -1;
	}
	if (tok_len > A2M_BEARER_MAX) {
		*why = "the token is longer than 1024 bytes";
		return -1;
	}
	for (size_t k = 0; k < tok_len; k++) {
		unsigned char c = (unsigned char)line[tok + k];
		if (c < 0x21 || c > 0x7e) {
			*why = "a token may hold only printable ASCII";
			return -1;
		}
	}
	for (size_t k = 0; k < prin_len; k++) {
		unsigned char c = (unsigned char)line[prin + k];
		if (c < 0x20 || c == 0x7f) {
			*why = "the principal holds a control character";
			return -1;
		}
	}
	/* At load time, with no attacker on the line, a plain comparison is
	** fine: a duplicate is a mistake in the file, and which principal a
	** token meant would otherwise be decided by its order. */
	for (size_t k = 0; k < t->n; k++) {
		if (t->entries[k].len == tok_len &&
		    memcmp(t->pad + k * t->width, line + tok, tok_len) == 0) {
			*why = "this token is already on an earlier line";
			return -1;
		}
	}
	if (add_entry(t, line + tok, tok_len, line + prin, prin_len) != 0) {
		*why = "out of memory";
		return -1;
	}
	return 0;
}

int a2m_bearer_load(const char *path, a2m_bearer_tokens **out, char *err, size_t errlen)
{
	*out = NULL;
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	a2m_bearer_tokens *t = calloc(1, sizeof *t);
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	unsigned long lineno = 0;
	int rc = -1;
	if (!t) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto done;
	}
	errno = 0;
	while ((got = getline(&line, &cap, f)) >= 0) {
		lineno++;
		size_t len = (size_t)got;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		const char *why = NULL;
		if (len > LINE_MAX_BYTES)
			why = "the line is longer than 4096 bytes";
		else if (memchr(line, '\0', len))
			why = "the line holds a NUL byte";
		if (why || parse_line(t, line, len, &why) != 0) {
			snprintf(err, errlen, "%s: line %lu: %s", path, lineno, why);
			goto done;
		}
		wipe(line, len);
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
		goto done;
	}
	if (t->n == 0) {
		snprintf(err, errlen, "%s: no TOKEN PRINCIPAL line, so nobody could connect",
			 path);
		goto done;
	}
	*out = t;
	t = NULL;
	rc = 0;
done:
	if (line) {
		wipe(line, cap);
		free(line);
	}
	a2m_bearer_free(t);
	fclose(f);
	return rc;
}

/* 1 when x is 0, else 0, without a branch on x. */
static size_t is_zero(unsigned x)
{
	uint64_t v = x;
	return (size_t)(((v - 1) >> 63) & 1);
}

const char *a2m_bearer_lookup(const a2m_bearer_tokens *t, const char *token, size_t len)
{
	if (!t || t->n == 0 || !token)
		return NULL;
	/* The presented token, zero-padded to the slot width like ours. A
	** longer one cannot match; it is still compared in full width so its
	** length is the only thing that decides the time taken. */
	unsigned char given[A2M_BEARER_MAX];
	unsigned too_long = len > t->width;
	size_t n = too_long ? t->width : len;
	memset(given, 0, t->width);
	memcpy(given, token, n);

	size_t match = 0; /* 1 + the index of the matching slot, or 0 */
	for (size_t i = 0; i < t->n; i++) {
		const unsigned char *slot = t->pad + i * t->width;
		volatile unsigned diff = too_long | (unsigned)(t->entries[i].len != len);
		for (size_t k = 0; k < t->width; k++)
			diff |= (unsigned)(slot[k] ^ given[k]);
		match |= (i + 1) & (0 - is_zero(diff));
	}
	wipe(given, t->width);
	return match ? t->entries[match - 1].principal : NULL;
}

size_t a2m_bearer_count(const a2m_bearer_tokens *t)
{
	return t ? t->n : 0;
}

void a2m_bearer_free(a2m_bearer_tokens *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->entries[i].principal);
	if (t->pad) {
		wipe(t->pad, t->pad_cap * t->width);
		free(t->pad);
	}
	free(t->entries);
	wipe(t, sizeof *t);
	free(t);
}
