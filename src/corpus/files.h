/*
** files.h — the corpus's table of files: for each file indexed, the size
** and modification time it had, the hash of its content and the ids of its
** chunks, so a restart reads only what changed and knows what to forget.
**
** It lives in the index's SQLite file beside the store's own tables
** (corpus_files, corpus_meta), on a connection of its own: the store is
** written only through the protocol (a2m_handle), never with SQL. The
** table and the records are therefore written in separate transactions,
** and the indexer orders them so that a crash between any two leaves a row
** that names every chunk the store may hold for its file (index.c).
*/
#ifndef A2M_CORPUS_FILES_H
#define A2M_CORPUS_FILES_H

#include <stddef.h>
#include <stdint.h>

/* One file as the table knows it. A row whose hash is "" is pending: its
** file must be read again, and ids may name chunks the store never got. */
typedef struct a2m_corpus_row {
	char    *path;      /* relative to the corpus's root */
	int64_t  size;
	int64_t  mtime_ns;
	char    *hash;      /* hex, or "" */
	char    *ids;       /* the chunks' ids, separated by spaces */
	int      seen;      /* set by the walk that loaded it */
} a2m_corpus_row;

typedef struct a2m_corpus_table a2m_corpus_table;

/*
** Opens the table in the SQLite file at path, which exists (the store
** made it), creating the tables when missing. settings names how chunks
** are made (the chunker's version, the size, the root): when it differs
** from the one stored, every row is made pending, so each file is cut
** again and its old chunks forgotten, and *reset is set to 1 (else 0).
** Returns 0, or -1 with a reason in err.
*/
int a2m_corpus_table_open(const char *path, const char *settings, a2m_corpus_table **out,
			  int *reset, char *err, size_t errlen);

/* Closes t. NULL is a no-op. */
void a2m_corpus_table_close(a2m_corpus_table *t);

/* Why the last call on t failed. */
const char *a2m_corpus_table_errmsg(const a2m_corpus_table *t);

/*
** The rows of prefix and of everything under it (prefix "" is every
** row), sorted by path in byte order, into *rows and *n; the caller frees
** them with a2m_corpus_rows_free. Returns 0, or -1.
*/
int a2m_corpus_table_load(a2m_corpus_table *t, const char *prefix, a2m_corpus_row **rows,
			  size_t *n);

/* The row of path among n sorted rows, or NULL. */
a2m_corpus_row *a2m_corpus_rows_find(a2m_corpus_row *rows, size_t n, const char *path);

void a2m_corpus_rows_free(a2m_corpus_row *rows, size_t n);

/* A transaction around the writes below. Each returns 0, or -1. */
int a2m_corpus_table_begin(a2m_corpus_table *t);
int a2m_corpus_table_commit(a2m_corpus_table *t);
void a2m_corpus_table_rollback(a2m_corpus_table *t);

/* Writes the row of path (replacing it). hash "" makes it pending. */
int a2m_corpus_table_put(a2m_corpus_table *t, const char *path, int64_t size,
			 int64_t mtime_ns, const char *hash, const char *ids);

/* Removes the row of path. */
int a2m_corpus_table_delete(a2m_corpus_table *t, const char *path);

/* How many rows the table holds, or -1. */
int64_t a2m_corpus_table_count(a2m_corpus_table *t);

#endif
