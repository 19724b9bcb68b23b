/*
** store_open.h — opening each engine (part of the storage seam, store.h,
** which includes it): the memory store, SQLite and its options,
** PostgreSQL and its options, a deployment's schema dropped, a
** connection string with its schema or as a log may say it; and the
** engines' switches for the tests' build.
*/
#ifndef A2M_STORE_OPEN_H
#define A2M_STORE_OPEN_H

#include <stddef.h>
#include <stdint.h>

#include "store/store_index.h"

typedef struct a2m_store a2m_store;

/*
** Opens an empty in-memory store. Returns 0 and sets *out, or a negative code
** with a message in err (errlen bytes). It has no disk, so it keeps no
** procedural mirror and is never read-only.
*/
int a2m_store_memory_open(a2m_store **out, char *err, size_t errlen);

#ifdef A2M_TEST_HOOKS  /* the tests' build of the library only (Makefile) */
/* For tests: the next fsync of any SQLite store's group commit fails (EIO)
** (on 1), or no longer will (on 0). */
void a2m_sqlite_sync_fail_next_for_tests(int on);

/* For tests: the syncs any SQLite store's sync thread led (sync_start)
** since the process began. */
uint64_t a2m_sqlite_sync_early_for_tests(void);

/*
** For tests: from now on the commit of any SQLite transaction that
** inserted a record whose key starts with prefix (copied; NULL: none)
** fails, after everything but the COMMIT statement ran, as a commit the
** disk refused would. Process-wide; set it before the writers start.
*/
void a2m_sqlite_fail_commits_for_tests(const char *prefix);

/*
** For tests: SQLite stores opened from now on checkpoint their log once it
** holds pages pages (the hard mark four times that), index or not; 0: the
** engine's own marks. And the checkpoints every store of the process ran
** so far: passes on a checkpointer thread, and blocking ones in a commit.
*/
void a2m_sqlite_checkpoint_pages_for_tests(int pages);
void a2m_sqlite_checkpoint_counts_for_tests(uint64_t *passes, uint64_t *in_commit);

/*
** For tests: what the WAL hooks of every store of the process saw since
** the last call (which starts the figures afresh): the longest log after a
** commit, the most frames one commit added, and the hard-mark checkpoints
** that could not restart the log (refused or left frames behind).
*/
void a2m_sqlite_checkpoint_log_for_tests(int *longest, int *largest_commit, int *missed);

/*
** For tests: the cycles of the log every store of the process ran so far
** (sqlite_checkpoint.c): closes run in a commit's WAL hook, and restarts
** of the log the hooks saw.
*/
void a2m_sqlite_checkpoint_cycles_for_tests(uint64_t *closes, uint64_t *restarts);

/*
** For tests: the SQLite store s numbers its commits from now on, as it does
** once its pool has opened a reader (sqlite_journal.c). Cannot fail.
*/
void a2m_sqlite_number_commits_for_tests(a2m_store *s);
#endif

/*
** How to open an SQLite store. Zero-initialise, then set what you need; a
** zeroed struct (or a NULL pointer) means NORMAL durability, read-write, no
** mirror.
*/
typedef struct a2m_sqlite_options {
	/* PRAGMA synchronous=FULL (nonzero) or NORMAL (0); see DESIGN §5. */
	int         synchronous_full;
	/*
	** Serve an existing file and refuse writes. The file is opened with
	** SQLITE_OPEN_READONLY: a missing file is an error (nothing is
	** created), a file without the a2m schema is an error, and a file at
	** another schema version is refused rather than migrated (open it once
	** read-write to migrate it). The journal mode is left as the file has
	** it, and the procedural mirror is neither reconciled nor written.
	** The database file itself is never written, but SQLite needs a WAL
	** file's -wal and -shm companions to read it safely while a writer
	** may be active, and creates them beside it when they are missing.
	*/
	int         read_only;
	/*
	** Keep the partial index records_unembedded (the records a server
	** embedder may owe a vector, for scan_unembedded): set when the server
	** has an embedder; a read-write open then creates it if it is missing.
	** Without it every insert would pay an index entry that only an
	** embedder reads (schema step 7 drops the one step 5 made), and
	** scan_unembedded reads the table instead.
	*/
	int         unembedded_index;
	/*
	** Merge the term index's segments inside the commit that needs it, on
	** the writing thread. 0 (default): a level found full when a write
	** transaction begins is merged on a thread of its own while the
	** transaction goes on, and its commit writes the result
	** (sqlite_segments.c).
	*/
	int         merge_inline;
	/*
	** The bytes each connection's postings cache may hold (the term
	** index's lists kept between queries, docs/RANKING.md §5); 0: the
	** default, 64 MiB on a reader, growing with the index on the main
	** connection (sqlite_index.h).
	*/
	size_t      postings_cache_bytes;
	/*
	** The most bytes of the database file each connection reads through
	** a memory map (SQLite's mmap_size; SQLite caps it, at 2 GiB - 64 KiB
	** in Debian's build), when the file is at least as large as the
	** connection's page cache as it opens: a page read there is no system
	** call and no copy into SQLite's page cache. 0: every page read with
	** pread, as before.
	** The trade (docs/CONFIG.md, mmap_mb): an I/O error or a file cut
	** short by something other than SQLite while mapped is a SIGBUS, not
	** an error.
	*/
	size_t      mmap_bytes;
	/*
	** With synchronous_full: group commit (sqlite_sync.c), durable commits
	** sharing their fsyncs through the ops sync_owed and sync_wait, which
	** a caller must then use before it reports a write durable. 0: SQLite
	** syncs inside every commit.
	*/
	int         group_commit;
	/*
	** The analyser whose index the layer above will attach (index_attach;
	** borrowed for the open). A file the open finds new then gets that
	** index, empty, in the one transaction that makes its schema, so a
	** kill in a store's very first open leaves no store or a whole one
	** (not one whose index tables are missing); index_attach finds it
	** built. NULL: index_attach builds it, in a transaction of its own.
	*/
	const a2m_indexer *indexer;
	/*
	** The procedural mirror (DECISIONS 024): when both are set (non-NULL
	** and non-empty), every record whose tier equals procedural_tier is
	** also kept as one Markdown file in procedural_dir, so that skills can
	** be reviewed and versioned with git. The database stays the source of
	** truth and the directory belongs to the store:
	**
	**   - a file is named <slug>--<id>.md. The slug comes from the record's
	**     key, or without one from the first six words of its content:
	**     ASCII letters lowercased, digits and non-ASCII UTF-8 kept, every
	**     other run of bytes one '-', at most 60 bytes (a word that does
	**     not fit is left out; a first word that does not fit is cut),
	**     "record" when nothing is left. The id is percent-encoded
	**     (everything but a-z, 0-9, '-', '_' and '.' becomes %XX, capitals
	**     included, so names stay distinct on case-insensitive file
	**     systems); an encoding longer than 160 bytes is cut to 120 and
	**     ends in ~ and a 64-bit hash of the id. No id can name a path
	**     outside the directory, and two ids share a file only if they are
	**     that long and their hashes collide.
	**   - the file holds a front-matter block (---, id, key, owner,
	**     created_at, revision, ---; strings as JSON strings, key and
	**     owner left out when absent, created_at as RFC 3339), then the
	**     content, ending in a newline (one is added when the content does
	**     not end in one).
	**   - files change only after a COMMIT succeeds (an autocommitted write:
	**     right after it), never for a write that is rolled back. Each is
	**     written to a temporary file in the directory, fsynced and renamed
	**     into place; the directory is created (0755) on first use. A file
	**     whose bytes are already right is left untouched.
	**   - if a file cannot be written or removed after its commit, the
	**     commit still returns 0, because it happened and the database is
	**     intact: the message goes to errmsg, mirror_failures grows, and the
	**     next commit reconciles the whole directory.
	**   - open reconciles the directory with the database: files of records
	**     that are gone are removed, missing or stale files are (re)written,
	**     so a crash between a commit and its file heals on the next open.
	**     Only names of the form above (<slug>--<encoded id>.md) and the
	**     store's own leftover temporary files are ever removed. Open fails
	**     when the reconciliation fails.
	*/
	const char *procedural_dir;
	const char *procedural_tier;
} a2m_sqlite_options;

/*
** Opens the SQLite store at path: read-write (creating the file, WAL,
** foreign keys, a schema version table; migrating an older schema forward)
** or read-only, as opt says (NULL: all defaults). opt and its strings are
** borrowed for the call only. Returns 0 and sets *out, or a negative code
** with a message in err (errlen bytes) and *out NULL.
*/
int a2m_store_sqlite_open(const char *path, const a2m_sqlite_options *opt,
			  a2m_store **out, char *err, size_t errlen);

/*
** How to open a PostgreSQL store. Zero-initialise, then set what you need;
** a zeroed struct (or a NULL pointer) means read-write, in the schema the
** connection string's search_path creates objects in.
*/
typedef struct a2m_postgres_options {
	/*
	** Serve an existing deployment and refuse writes (A2M_READ_ONLY before
	** anything is sent): nothing is created or migrated, and the schema
	** must be at exactly this build's version. Works against a hot standby.
	*/
	int         read_only;
	/*
	** The schema the deployment lives in, created when missing (read-write).
	** NULL: the first schema of the connection's search_path (normally
	** "public"). One schema is one deployment: its tables, advisory locks
	** and notification channel are its own.
	*/
	const char *schema;
	/* Keep an index of the records a server embedder may owe a vector. */
	int         unembedded_index;
} a2m_postgres_options;

/*
** Opens the deployment at conninfo (a libpq connection string: URL or
** key=value), migrating an empty or older schema forward under an advisory
** lock. libpq is loaded on the first call (store/postgres_api.h). opt and
** conninfo are copied. Returns 0 and sets *out, or a negative code with a
** message in err (errlen bytes; never the connection string or a password)
** and *out NULL.
*/
int a2m_store_postgres_open(const char *conninfo, const a2m_postgres_options *opt,
			    a2m_store **out, char *err, size_t errlen);

/*
** Drops the deployment in schema (its tables, everything in it) from the
** database at conninfo: for benchmarks and tests that make throw-away
** deployments. A schema that does not exist is not an error. Returns 0, or
** a negative code with a message in err (errlen bytes).
*/
int a2m_store_postgres_drop(const char *conninfo, const char *schema, char *err,
			    size_t errlen);

/*
** conninfo naming schema as the deployment (the first schema of its
** search_path): for a key=value string " options='-csearch_path=S'" is
** appended, for a URL "options=-csearch_path%3DS" as a query parameter.
** The schema name must be letters, digits and '_'. Returns a string the
** caller frees with free(), or NULL when memory runs out or the name is
** not such.
*/
char *a2m_postgres_with_schema(const char *conninfo, const char *schema);

/*
** What may be said of conninfo in a log: "postgres host=H port=P dbname=D
** user=U" with only the parts it names, never a password or any other
** option. Returns a string the caller frees with free(), or NULL when
** memory runs out. A string libpq cannot parse is described as such.
*/
char *a2m_postgres_describe(const char *conninfo);

#endif
