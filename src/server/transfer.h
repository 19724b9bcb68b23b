/*
** transfer.h — `a2m export` and `a2m import` on an open handle: a store
** written as JSON Lines, and such a file (or the knowledge graph of the MCP
** memory server) read into a store. docs/EXPORT.md is the format and the
** rules; the stack (stack.h, transfer.c) reads and writes the records.
**
** Both stream: one record at a time out, one batch at a time in, so the
** memory they use does not grow with the store or the file.
*/
#ifndef A2M_SERVER_TRANSFER_H
#define A2M_SERVER_TRANSFER_H

#include <stdint.h>
#include <stdio.h>

#include "a2m.h"
#include "util/progress.h"

/* The version of the export format this build writes, and the newest it reads. */
#define A2M_EXPORT_VERSION 2

/* What the header line names as the source (docs/EXPORT.md). */
typedef struct a2m_export_source {
	const char *path;     /* the SQLite file (NULL: an in-memory store) */
} a2m_export_source;

/*
** Writes every record of h to out, oldest first, after a header line
** naming the source and its configuration (memory/describe's result).
** Holds h's lock shared throughout (reads may go on beside it; writes
** wait), and reads one snapshot. progress (NULL: none) is told the total
** and each record. *written = records written (not counting the header).
** Returns 0, or -1 with a message in err (a write error: the file is then
** incomplete).
*/
int a2m_export(a2m *h, FILE *out, const a2m_export_source *src, a2m_progress *progress,
	       int64_t *written, char *err, size_t errlen);

/* The formats a2m_import reads. */
typedef enum a2m_import_format {
	A2M_FORMAT_AUTO = 0,   /* from the first line */
	A2M_FORMAT_A2M,        /* an a2m export */
	A2M_FORMAT_MCP_MEMORY  /* the knowledge graph of @modelcontextprotocol/server-memory */
} a2m_import_format;

typedef struct a2m_import_options {
	a2m_import_format format;
	const char *name;       /* the input, for messages ("-": standard input) */
	size_t      batch;      /* records per transaction; 0: A2M_IMPORT_BATCH */
	const char *tier;       /* mcp-memory: the tier its records go to (NULL: the default) */
	int         dry_run;    /* read and check every line, write nothing */
} a2m_import_options;

/* Records per transaction when none is asked for: large enough that a
** commit's cost is shared, small enough to keep the memory of one batch
** (and SQLite's journal) small. */
#define A2M_IMPORT_BATCH 1000

/* The longest line read, in bytes: a line is one record, bounded by the
** largest record a store holds. */
#define A2M_IMPORT_MAX_LINE ((size_t)256 << 20)

/* How many held keys an import names (the rest are counted). */
#define A2M_IMPORT_NAMED 10

typedef struct a2m_import_result {
	a2m_import_format format;   /* the one read */
	int64_t lines;              /* records read (the header not counted) */
	int64_t imported;           /* written */
	int64_t skipped;            /* their id existed: left as stored */
	int64_t key_held;           /* their key was another id's: not written */
	int64_t revisions;          /* revision lines read (kept with their imported records) */
	char   *held[A2M_IMPORT_NAMED];  /* the first of those ids (owned; a2m_import_result_free) */
} a2m_import_result;

/*
** Reads in (a file of opt->format) into h, batch by batch, each batch one
** transaction that ends as every write does (capacity, events). Checks the
** header first (the format's version, the tiers its records use, the
** vector width) so that a file that cannot go in writes nothing. A line
** that is not a valid record stops the import with its line number: the
** batches before it are committed, and importing the file again after
** fixing it skips them (ids are kept). progress (NULL: none) is told each
** record. Fills *res (free with a2m_import_result_free). Returns 0, or -1
** with a message in err.
*/
int a2m_import(a2m *h, FILE *in, const a2m_import_options *opt, a2m_progress *progress,
	       a2m_import_result *res, char *err, size_t errlen);

/* Frees what res holds. */
void a2m_import_result_free(a2m_import_result *res);

/* The format's name as the command line spells it ("a2m", "mcp-memory"). */
const char *a2m_import_format_name(a2m_import_format f);

#endif
