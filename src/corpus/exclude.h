/*
** exclude.h — which paths of a corpus are left out: patterns with the
** meaning of .gitignore lines (`a2m corpus --exclude`, `--exclude-from`).
**
** What a pattern means, as git says it (gitignore(5)):
**   - a blank line, or one starting with '#', is no pattern ("\#" is a '#');
**   - '!' in front negates: a path it matches is included again;
**   - a trailing '/' matches directories only;
**   - a pattern with a '/' at its start or middle is anchored at the
**     corpus's root and matched against the whole relative path; one
**     without is matched against the last component, at any depth;
**   - '*' is any run of characters but '/', '?' one character but '/',
**     '[a-z]' / '[!a-z]' a class, '\' escapes the next character;
**   - '**' as a whole component: "**" followed by '/' is any number of
**     directories (none included), a trailing "/" then "**" everything inside;
**   - the last pattern that matches decides.
** A path is tested one component at a time as the walk goes down, so a
** file inside an excluded directory stays out whatever a later '!' says,
** as in git.
*/
#ifndef A2M_CORPUS_EXCLUDE_H
#define A2M_CORPUS_EXCLUDE_H

#include <stddef.h>

typedef struct a2m_exclude a2m_exclude;

/* A list with no patterns (it excludes nothing), or NULL when memory ran out. */
a2m_exclude *a2m_exclude_new(void);

/* Frees x. NULL is a no-op. */
void a2m_exclude_free(a2m_exclude *x);

/*
** Adds one line of .gitignore syntax (a blank or comment line adds
** nothing). Returns 0, or -1 when memory ran out.
*/
int a2m_exclude_add(a2m_exclude *x, const char *line);

/*
** Adds every line of the file at path. Returns 0, or -1 with a one-line
** reason in err (the file cannot be read, memory ran out).
*/
int a2m_exclude_add_file(a2m_exclude *x, const char *path, char *err, size_t errlen);

/*
** Whether the path rel (relative to the root, '/'-separated, no leading
** '/') is excluded by itself, its parents not considered: is_dir says
** whether it is a directory. Returns 1 or 0 (always 0 for x NULL).
*/
int a2m_exclude_match(const a2m_exclude *x, const char *rel, int is_dir);

/*
** Whether rel or any directory above it is excluded: what the walk decides
** one component at a time, for a path met on its own (a change the watcher
** reports). Returns 1 or 0.
*/
int a2m_exclude_path(const a2m_exclude *x, const char *rel, int is_dir);

#endif
