/*
** index.h — the corpus indexer: a folder of documents kept as records of
** an A2M store, one record per chunk (docs/CORPUS.md).
**
** The indexer writes the store only through the protocol, on a writable
** handle of its own (a2m_handle: memory/remember and memory/forget), so
** the server that answers clients can open the same file read-only and
** follow its commits. A record:
**
**   id          derived from the file's path and the record's text, so
**               writing the same chunk again is a no-op (spec §3.2)
**   content     the chunk's text, exactly the file's bytes of its lines
**   group       the file's path: a document's chunks stay together (§3.4)
**   tier        "semantic" (a document has no working phase)
**   uri         file:///abs/path#L10-L24 (external, §3.8: never opened by
**               the server; the indexer reads the folder, not the uris)
**   media_type  from the file's name: text/markdown, text/x-c, ...
**   metadata    {"path", "headings" (the heading path, outermost first),
**                "first_line", "last_line" (1-based), "chunk" (its place)}
**
** Which files: every regular file under the root that is not excluded
** (exclude.h; symbolic links are not followed), not the index itself,
** no larger than max_file, with no NUL byte and well-formed UTF-8. How
** each is cut: chunk.h, by its name (Markdown, source, or text).
*/
#ifndef A2M_CORPUS_INDEX_H
#define A2M_CORPUS_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "a2m.h"
#include "corpus/exclude.h"

/* The defaults of `a2m corpus`. */
#define A2M_CORPUS_INDEX_NAME    ".a2m-corpus.db"
#define A2M_CORPUS_MAX_CHUNK     2000
#define A2M_CORPUS_MAX_CHUNK_MAX 65536
#define A2M_CORPUS_MAX_FILE      ((size_t)4 << 20)

typedef struct a2m_corpus_options {
	const char        *root;       /* the folder: an absolute path, no trailing '/' */
	const char        *index;      /* the SQLite file (created if missing) */
	const a2m_exclude *exclude;    /* borrowed; NULL: nothing excluded */
	size_t             max_chunk;  /* bytes of one chunk */
	size_t             max_file;   /* larger files are skipped */
	int                progress;   /* a progress line on stderr while walking */
	/*
	** How to send a request already read into a JSON value (its reference
	** taken) on the indexer's handle, as a2m_handle() would send its text:
	** the command gives the server layer's a2m_handle_value
	** (server/inprocess.h), which this folder may not include. With it a
	** full batch's memory/remember is read on the walking thread while the
	** batch before is written; NULL: every request goes as text.
	*/
	int (*handle_value)(a2m *h, json_t *msg, char **reply);
	/*
	** Optional (NULL: none): the server layer's a2m_handle_foresee
	** (server/inprocess.h). With it a full batch's texts are handed to
	** the store's analysis as soon as the batch is filled, so they are
	** analysed while the batch before commits.
	*/
	int (*foresee)(a2m *h, const char *const *texts, size_t n);
} a2m_corpus_options;

/* What one or more syncs did; the caller zeroes it. */
typedef struct a2m_corpus_stats {
	size_t   files;           /* files indexed now: read, or unchanged */
	size_t   unchanged;       /* not read: size and time as indexed */
	size_t   read;            /* read: new or changed (or only touched) */
	size_t   removed;         /* no longer there, excluded or readable */
	size_t   skipped;         /* binary, not UTF-8, too large, unreadable */
	size_t   chunks_added;
	size_t   chunks_removed;
	uint64_t bytes;           /* read */
} a2m_corpus_stats;

typedef struct a2m_corpus a2m_corpus;

/*
** Opens the indexer: the store at o->index (made if missing) and its table
** of files. The strings of o are copied; o->exclude must outlive c.
** Returns 0, or -1 with a one-line reason in err.
*/
int a2m_corpus_open(const a2m_corpus_options *o, a2m_corpus **out, char *err, size_t errlen);

/* Closes the store and frees c. NULL is a no-op. */
void a2m_corpus_close(a2m_corpus *c);

/*
** Called with each directory a sync walks into (its path relative to the
** root, "" for the root, and its absolute path), before its entries are
** read: the watcher watches it there, so nothing created during the walk
** is missed.
*/
typedef void (*a2m_corpus_dir_fn)(void *user, const char *rel, const char *abs);
void a2m_corpus_on_dir(a2m_corpus *c, a2m_corpus_dir_fn fn, void *user);

/*
** Brings the index in line with the folder at rel ("" for all of it): a
** file is indexed if new or changed (a changed file's chunks replaced, an
** unchanged file only stat'ed), a directory walked likewise, and whatever
** the index holds at or under rel that is no longer there (or is now
** excluded or skipped) is forgotten. Adds to *st. Returns 0, or -1 with a
** reason from a2m_corpus_errmsg (the index stays consistent: what was
** written can be written again).
*/
int a2m_corpus_sync(a2m_corpus *c, const char *rel, a2m_corpus_stats *st);

/*
** a2m_corpus_sync for each of the n paths, none of them under another,
** written together: one batch for many changes (a checkout that touched a
** thousand files is not a thousand batches). Returns 0, or -1 with the
** reason; the paths synced before a failure stay synced.
*/
int a2m_corpus_sync_paths(a2m_corpus *c, const char *const *rels, size_t n,
			  a2m_corpus_stats *st);

/* The root, as given in the options (borrowed). */
const char *a2m_corpus_root(const a2m_corpus *c);

/* Why the last call failed. */
const char *a2m_corpus_errmsg(const a2m_corpus *c);

/*
** Whether rel names the index itself or its companions (-wal, -shm,
** -journal) inside the root: never indexed, and the watcher ignores them.
*/
int a2m_corpus_is_index(const a2m_corpus *c, const char *rel);

#endif
