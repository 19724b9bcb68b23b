/*
** exclude.c — .gitignore-style patterns (see exclude.h for what they mean).
**
** A pattern is kept as text, its leading '!' and '/' and trailing '/'
** taken off and noted as flags, and matched by a small backtracking
** matcher. The patterns are few and short (a command line's, a file's),
** so nothing is compiled.
*/
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus/exclude.h"
#include "util/grow.h"

typedef struct pattern {
	char *text;       /* the glob, without '!', leading '/' or trailing '/' */
	int   negate;     /* '!': a match includes */
	int   dir_only;   /* trailing '/': directories only */
	int   anchored;   /* a '/' at the start or middle: the whole path */
} pattern;

struct a2m_exclude {
	pattern *v;
	size_t   n, cap;
};

a2m_exclude *a2m_exclude_new(void)
{
	return calloc(1, sizeof(a2m_exclude));
}

void a2m_exclude_free(a2m_exclude *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->n; i++)
		free(x->v[i].text);
	free(x->v);
	free(x);
}

int a2m_exclude_add(a2m_exclude *x, const char *line)
{
	size_t len = strcspn(line, "\r\n");
	/* Trailing spaces go, unless the last one is escaped. */
	while (len > 0 && line[len - 1] == ' ' && !(len > 1 && line[len - 2] == '\\'))
		len--;
	if (len == 0 || line[0] == '#')
		return 0;
	pattern p = {0};
	if (line[0] == '!') {
		p.negate = 1;
		line++;
		len--;
	} else if (line[0] == '\\' && (line[1] == '#' || line[1] == '!')) {
		line++;
		len--;
	}
	if (len > 0 && line[len - 1] == '/') {
		p.dir_only = 1;
		len--;
	}
	if (memchr(line, '/', len))
		p.anchored = 1;
	if (len > 0 && line[0] == '/') {
		line++;
		len--;
	}
	if (len == 0)
		return 0;
	if (a2m_grow((void **)&x->v, &x->cap, x->n + 1, sizeof *x->v))
		return -1;
	if (!(p.text = strndup(line, len)))
		return -1;
	x->v[x->n++] = p;
	return 0;
}

int a2m_exclude_add_file(a2m_exclude *x, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;
	while (getline(&line, &cap, f) >= 0)
		if (a2m_exclude_add(x, line) != 0) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
			break;
		}
	if (!rc && ferror(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = -1;
	}
	free(line);
	fclose(f);
	return rc;
}

/*
** Matches the class starting at p ('[' already passed) against c. Sets
** *end past the closing ']'. Returns 1 or 0 for a match, -1 when the class
** is not closed (the '[' is then an ordinary character).
*/
static int match_class(const char *p, char c, const char **end)
{
	int negate = *p == '!' || *p == '^';
	if (negate)
		p++;
	int hit = 0;
	const char *start = p;
	while (*p && (*p != ']' || p == start)) {
		char lo = *p == '\\' && p[1] ? *++p : *p;
		char hi = lo;
		if (p[1] == '-' && p[2] && p[2] != ']') {
			p += 2;
			hi = *p == '\\' && p[1] ? *++p : *p;
		}
		if (c >= lo && c <= hi)
			hit = 1;
		p++;
	}
	if (*p != ']')
		return -1;
	*end = p + 1;
	return hit != negate;
}

/* Whether the glob p (which begins at start) matches all of s. */
static int glob(const char *start, const char *p, const char *s)
{
	while (*p) {
		if (p[0] == '*' && p[1] == '*' && (p == start || p[-1] == '/') &&
		    (p[2] == '/' || !p[2])) {
			if (!p[2])
				return 1;  /* a trailing "**": everything below */
			/* "**" then '/': no directory, or any number of them. */
			p += 3;
			for (;;) {
				if (glob(start, p, s))
					return 1;
				if (!(s = strchr(s, '/')))
					return 0;
				s++;
			}
		}
		if (*p == '*') {
			while (*p == '*')
				p++;
			for (;;) {
				if (glob(start, p, s))
					return 1;
				if (!*s || *s == '/')
					return 0;
				s++;
			}
		}
		if (!*s)
			return 0;
		if (*p == '?') {
			if (*s == '/')
				return 0;
			p++;
			s++;
			continue;
		}
		if (*p == '[') {
			const char *end;
			int m = *s == '/' ? 0 : match_class(p + 1, *s, &end);
			if (m == 0)
				return 0;
			if (m == 1) {
				p = end;
				s++;
				continue;
			}
			/* An unclosed class: the '[' is itself. */
		}
		if (*p == '\\' && p[1])
			p++;
		if (*p != *s)
			return 0;
		p++;
		s++;
	}
	return !*s;
}

int a2m_exclude_match(const a2m_exclude *x, const char *rel, int is_dir)
{
	if (!x)
		return 0;
	const char *base = strrchr(rel, '/');
	base = base ? base + 1 : rel;
	int excluded = 0;
	for (size_t i = 0; i < x->n; i++) {
		const pattern *p = &x->v[i];
		if (p->dir_only && !is_dir)
			continue;
		if (glob(p->text, p->text, p->anchored ? rel : base))
			excluded = !p->negate;
	}
	return excluded;
}

int a2m_exclude_path(const a2m_exclude *x, const char *rel, int is_dir)
{
	char path[PATH_MAX];
	size_t len = strlen(rel);
	if (len >= sizeof path)
		return 1;  /* longer than any path the walk can make: never indexed */
	memcpy(path, rel, len + 1);
	for (char *slash = strchr(path, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		int excluded = a2m_exclude_match(x, path, 1);
		*slash = '/';
		if (excluded)
			return 1;
	}
	return a2m_exclude_match(x, path, is_dir);
}
