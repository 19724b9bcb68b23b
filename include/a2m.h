/*
** a2m.h — the public interface of liba2m, an Agent-to-Memory (A2M 0.1) server
** you can embed.
**
** The library is the in-process binding of the A2M specification (§8.1): open
** a store, hand it one JSON-RPC 2.0 message as a string, get the response back
** as a string. Strings in and out, exactly as they would cross a pipe or a
** socket, so an embedded store never accepts anything a remote one would
** refuse (spec §8.1), and any language with a C FFI can call it.
**
**   a2m_config *cfg;
**   a2m *db;
**   char *err = NULL, *reply;
**   if (a2m_config_new(&cfg) != A2M_OK) ...
**   a2m_config_set(cfg, "path", "memory.db");
**   int rc = a2m_open(cfg, &db, &err);
**   a2m_config_free(cfg);
**   if (rc != A2M_OK) { fprintf(stderr, "%s\n", err); a2m_free(err); ... }
**   const char *msg = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/describe\"}";
**   if (a2m_handle(db, msg, A2M_NUL_TERMINATED, &reply) == A2M_OK && reply) {
**           puts(reply);
**           a2m_free(reply);
**   }
**   a2m_close(db);
**
** Results: every function that can fail returns an int, A2M_OK (0) or a
** negative status of enum a2m_status; a2m_strerror() names it. A JSON-RPC
** error (an unknown tier, a malformed request) is not a failure of the call:
** it is a reply, and a2m_handle() returns A2M_OK with the error object in it.
**
** Threads: an a2m handle MAY be used from several threads at once. Every call
** that takes a handle holds a reader-writer lock owned by the handle: reads
** (memory/recall, memory/timeline) share it and run side by side, every
** other method holds it alone, so each write is applied completely, one at a
** time, and never beside a read. a2m_close() must not race with other calls
** on the same handle. An a2m_config is not shared: one thread at a time.
**
** Memory: every char * the library returns is owned by the caller and is
** released with a2m_free().
**
** Compatibility: the shared library's SONAME is liba2m.so.MAJOR.MINOR while
** the major version is 0 (a minor release may change the ABI, as the
** protocol's minor versions may), liba2m.so.MAJOR from 1.0 on. Only the
** functions marked A2M_API below are exported.
*/
#ifndef A2M_H
#define A2M_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the shared library exports: these declarations and nothing else. */
#if defined(__GNUC__)
#define A2M_API __attribute__((visibility("default")))
#else
#define A2M_API
#endif

/*
** The library's version, written once: A2M_VERSION is "MAJOR.MINOR.PATCH"
** and A2M_VERSION_NUMBER is MAJOR * 1000000 + MINOR * 1000 + PATCH, both
** made from the three numbers below (the Makefile reads them from here).
** Compare A2M_VERSION_NUMBER, which the program was compiled against, with
** a2m_libversion_number(), the library it runs against.
*/
#define A2M_VERSION_MAJOR 0
#define A2M_VERSION_MINOR 2
#define A2M_VERSION_PATCH 0
#define A2M_STRINGIFY_(x) #x
#define A2M_STRINGIFY(x)  A2M_STRINGIFY_(x)
#define A2M_VERSION \
	A2M_STRINGIFY(A2M_VERSION_MAJOR) "." A2M_STRINGIFY(A2M_VERSION_MINOR) "." \
	A2M_STRINGIFY(A2M_VERSION_PATCH)
#define A2M_VERSION_NUMBER \
	(A2M_VERSION_MAJOR * 1000000 + A2M_VERSION_MINOR * 1000 + A2M_VERSION_PATCH)

/* The protocol the library speaks (memory/describe's `protocol`). */
#define A2M_PROTOCOL "a2m/0.1"

/* The version of the library linked at run time: A2M_VERSION as it was when
** the library was built, and its A2M_VERSION_NUMBER. Cannot fail. */
A2M_API const char *a2m_libversion(void);
A2M_API int a2m_libversion_number(void);

/*
** What a call of this API returns: 0, or one of these negative statuses.
** They are small numbers, apart from the JSON-RPC codes below, so one int
** never means both.
*/
enum a2m_status {
	A2M_OK       =  0,
	A2M_ERROR    = -1, /* a failure the accompanying message explains */
	A2M_NOMEM    = -2, /* memory ran out; nothing was changed */
	A2M_MISUSE   = -3, /* the API was called wrongly: a NULL handle or
	                      out-parameter, an unknown option name, an option
	                      of the other type */
	A2M_RANGE    = -4, /* an option's value is not one it can take */
	A2M_CANTOPEN = -5  /* the store could not be opened (the message says why) */
};

/*
** The error codes of JSON-RPC error objects (spec §7), for reading replies.
** a2m_strerror() names them too.
*/
enum a2m_code {
	A2M_PARSE_ERROR              = -32700,
	A2M_INVALID_REQUEST          = -32600,
	A2M_METHOD_NOT_FOUND         = -32601,
	A2M_INVALID_PARAMS           = -32602,
	A2M_INTERNAL_ERROR           = -32603,
	A2M_UNKNOWN_RECORD           = -32001,
	A2M_UNKNOWN_TIER             = -32002,
	A2M_CAPABILITY_NOT_SUPPORTED = -32003,
	A2M_READ_ONLY                = -32004,
	A2M_SCOPE_DENIED             = -32005,
	A2M_QUOTA_EXCEEDED           = -32006,
	A2M_PROTOCOL_NOT_SUPPORTED   = -32007,
	A2M_EMBEDDING_MISMATCH       = -32008
};

/*
** A short English description of code: an a2m_status ("out of memory") or
** a JSON-RPC code of enum a2m_code ("unknown tier"); "unknown error" for
** anything else. A static string; cannot fail.
*/
A2M_API const char *a2m_strerror(int code);

/* ---- configuration --------------------------------------------------- */

/*
** How to open a store: an object the caller creates, sets options on by
** name, hands to a2m_open() and frees. Options are named, not struct
** fields, so a new one never changes the ABI; every option left unset takes
** the documented default, and memory/describe reports the values in force.
** Options set here take precedence over the configuration file's
** ("config_file", docs/CONFIG.md), which take precedence over the defaults.
**
** The options, by name (values as text for a2m_config_set; integers and
** booleans may also be given to a2m_config_set_int):
**
**   engine                "sqlite" (default: one durable file), "memory"
**                         (process memory only, gone at a2m_close) or
**                         "postgres" (a database several servers may share,
**                         docs/POSTGRES.md; needs the option postgres)
**   path                  the SQLite file; default "a2m.db"
**   postgres              the libpq connection string (URL or key=value) of
**                         a PostgreSQL deployment; setting it selects the
**                         engine "postgres". Never logged: it may hold a
**                         password.
**   name                  server name in describe; default "a2m"
**   capabilities          comma-separated capabilities to declare, e.g.
**                         "core,tiers,keys"; default all eleven and our
**                         extensions x-where, x-expiry, x-history, x-dedup
**                         (docs/PROTOCOL.md; "core" is always declared)
**   read_only             1: serve an existing store, refuse every write with
**                         READ_ONLY (spec §2.1); default 0
**   synchronous           "full" (default: an acknowledged write survives
**                         power loss) or "normal" (in WAL mode it survives a
**                         crash of the process, not a power loss)
**   group_commit          1 (default): with synchronous "full", concurrent
**                         writers' commits share fsyncs, each still answered
**                         only once its own data is durable; 0: each
**                         commit syncs on its own (docs/CONFIG.md)
**   capacity_after_sync   0 (default) or 1: with group commit, a lone
**                         write's capacity pass runs in a transaction of its
**                         own while the write's sync runs, so a pass that
**                         fails no longer fails the write (docs/CONFIG.md)
**   config_file           a JSON configuration file (docs/CONFIG.md): tiers,
**                         limits, metric, events, embedder
**   metric                how vectors compare: "cosine" (default), "dot", "l2"
**   vector_search         how a query vector is searched: "exact" (default)
**                         or "quantized", approximate: 8-bit codes read for
**                         a pool, the pool measured exactly (docs/CONFIG.md)
**   vector_pool           quantized: rows measured exactly per result asked
**                         for, 1 to 100000; default 20
**   ranking               how text is ranked: "bm25" (default) or "lexical"
**                         (the plain-scan baseline of the benchmarks)
**   max_records_per_call  records in one remember; default 1000
**   max_content_length    Unicode code points of one content; default 1048576
**   max_recall_limit      the largest recall limit; default 1000
**   default_recall_limit  recall's limit when absent; default 10
**   max_depth, max_string_bytes, max_metadata_bytes, max_ids_per_call,
**   max_where_fields, max_where_values, max_dimensions
**                         the other dimensions of a request, each with its
**                         default and bounds in docs/PROTOCOL.md, Limits
**   events_retain         events kept for memory/events; default 1024
**   touch_buffer          records whose recall access counts may wait in
**                         memory before being written (docs/PROTOCOL.md,
**                         Salience); default 65536
**   helper_threads        threads a write may use besides the calling one
**                         (docs/CONFIG.md): 0 (none) to A2M_HELPER_THREADS_MAX;
**                         default one per core but the caller's, at most 4
**   postings_cache_mb     SQLite: MiB of the term index's lists each
**                         connection keeps between queries, 1 to 65536;
**                         default 64, the main connection's growing with
**                         the index to 256 (docs/CONFIG.md)
**   mmap_mb               SQLite: MiB of a file of 64 MiB or more each
**                         connection reads through a memory map, 0 (none)
**                         to 65536; default 2048 (docs/CONFIG.md)
**   embed_kind            the server's own embedder (docs/EMBEDDINGS.md):
**                         "ollama" or "openai"; default none
**   embed_url             the model server (ollama default
**                         http://127.0.0.1:11434; openai: required)
**   embed_model           default "bge-m3"
**   embed_api_key         sent as a Bearer token; default none
**   embed_timeout_ms      per request; default 2000
**   embed_weight          the embedder's vectors' share of a text query's
**                         relevance against the text's, in percent (0-100);
**                         default 50 (docs/EMBEDDINGS.md)
**   history_revisions     earlier revisions kept per keyed record (the
**                         x-history extension); 0 keeps none; default 10
*/
typedef struct a2m_config a2m_config;

/* The most helper threads the option helper_threads may ask for. */
#define A2M_HELPER_THREADS_MAX 16

/*
** Creates a configuration with every option at its default. Returns A2M_OK
** and sets *out, which the caller frees with a2m_config_free(); A2M_NOMEM
** or A2M_MISUSE (out NULL) and *out NULL otherwise.
*/
A2M_API int a2m_config_new(a2m_config **out);

/* Frees cfg and the strings it copied. NULL is a no-op. */
A2M_API void a2m_config_free(a2m_config *cfg);

/*
** Sets the option called name to value, given as text ("5" for an integer,
** "1"/"0" or "true"/"false" for a boolean); value is copied. Returns
** A2M_OK; A2M_MISUSE for a NULL argument or a name that is no option;
** A2M_RANGE for a value the option cannot take (the option keeps its
** previous value); A2M_NOMEM. a2m_config_errmsg() then says why.
*/
A2M_API int a2m_config_set(a2m_config *cfg, const char *name, const char *value);

/* As a2m_config_set(), for an integer or boolean option; a text option is
** A2M_MISUSE. */
A2M_API int a2m_config_set_int(a2m_config *cfg, const char *name, int64_t value);

/*
** The value of the option called name as text ("sqlite", "1000"), or NULL
** for a text option with no value (embed_kind unset) or a name that is no
** option. Borrowed: valid until the next call on cfg.
*/
A2M_API const char *a2m_config_get(a2m_config *cfg, const char *name);

/*
** Why the last a2m_config_set or a2m_config_set_int on cfg failed, or ""
** when it did not. Borrowed: valid until the next call on cfg.
*/
A2M_API const char *a2m_config_errmsg(const a2m_config *cfg);

/* ---- the store ------------------------------------------------------- */

/* An open store with its server: the in-process binding. */
typedef struct a2m a2m;

/*
** Opens (creating if needed) the store cfg describes; cfg NULL opens the
** defaults (./a2m.db). cfg is only read: free it when you like.
** Returns A2M_OK and sets *out. On failure returns A2M_CANTOPEN (the store
** or its index could not be opened), A2M_RANGE (the configuration file or
** an option's combination is invalid), A2M_NOMEM or A2M_MISUSE (out NULL),
** sets *out to NULL and, when errmsg is not NULL, sets *errmsg to a message
** the caller frees with a2m_free() (NULL if even that could not be made).
*/
A2M_API int a2m_open(const a2m_config *cfg, a2m **out, char **errmsg);

/* The length to pass for a message that is a NUL-terminated string. */
#define A2M_NUL_TERMINATED ((size_t)-1)

/*
** Handles one JSON-RPC 2.0 message of len bytes of UTF-8 (or
** A2M_NUL_TERMINATED) from a local caller (spec §8.1: the client's `owner`
** is taken as given).
**
** Returns A2M_OK and sets *reply to the response, a compact single-line JSON
** string the caller frees with a2m_free() — or to NULL when the message was
** a notification, which by JSON-RPC gets no answer (it was still carried
** out). Malformed input is answered with a JSON-RPC error object, never by
** crashing or failing the call. Returns A2M_NOMEM when memory ran out
** before the response could be made (the method may have run: a write that
** committed stays committed), A2M_MISUSE for a NULL argument; *reply is
** NULL then.
*/
A2M_API int a2m_handle(a2m *h, const char *message, size_t len, char **reply);

/*
** As a2m_handle(), for a message that arrived over a network transport the
** embedder runs itself (spec §6, §8.3): it cannot carry notifications, and
** `scopes` is declared only when the transport authenticated the caller.
** principal is that caller's authenticated identity, which then IS the
** owner of everything it reads and writes — a request naming another owner
** is refused with SCOPE_DENIED — or NULL when nobody was authenticated.
*/
A2M_API int a2m_handle_network(a2m *h, const char *message, size_t len,
			       const char *principal, char **reply);

/*
** Receives the server's notifications (for example memory/event once a
** client has subscribed): fn is called with one complete JSON-RPC
** notification string, serialised like any response, and the user pointer.
** The string is borrowed for the duration of the call. fn is called from
** inside a2m_handle() on the calling thread, after the state change it
** reports, and with a PostgreSQL store also from a thread of the library's
** when another server of the deployment committed, or when records expire
** (that thread also removes what expired, as a2m_sweep does, so an idle
** caller need not) (never two calls at once); it must not call back into
** the same handle. Pass fn NULL to
** stop. A handle with a callback set reports events.push true in describe;
** without one, memory/events/subscribe is refused (spec §4.13).
*/
typedef void (*a2m_notify_fn)(const char *notification, void *user);
A2M_API void a2m_set_notify(a2m *h, a2m_notify_fn fn, void *user);

/*
** Removes the records whose expiry has passed (the x-expiry extension,
** docs/PROTOCOL.md), as a2m_handle() also does after any call once one is
** due, reporting them as memory/events do a forget; reads never return an
** expired record either way. For a caller that may go idle: call it when
** *next_ms (when not NULL) says, the milliseconds until the next expiry
** the handle knows of (-1: none; 0: call again now). Cheap when nothing is
** due. On a store other servers write too (PostgreSQL) it first rereads
** the earliest expiry when one of them committed since, so their records
** are removed too. Same lock as a write. Returns A2M_OK; A2M_MISUSE for a NULL h;
** A2M_ERROR when the store failed (logged; the records stay, and reads go
** on hiding them).
*/
A2M_API int a2m_sweep(a2m *h, int64_t *next_ms);

/* Commits and closes the store and frees the handle. NULL is a no-op. */
A2M_API void a2m_close(a2m *h);

/* Frees a string returned by the library. NULL is a no-op. */
A2M_API void a2m_free(void *p);

#ifdef __cplusplus
}
#endif
#endif /* A2M_H */
