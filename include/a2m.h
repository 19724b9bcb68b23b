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
**   a2m_config cfg;
**   a2m_config_init(&cfg);
**   cfg.path = "memory.db";
**   a2m *db;
**   char *err;
**   if (a2m_open(&cfg, &db, &err) != 0) { fprintf(stderr, "%s\n", err); a2m_free(err); ... }
**   char *reply = a2m_handle(db, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/describe\"}");
**   ...
**   a2m_free(reply);
**   a2m_close(db);
**
** Threads: an a2m handle MAY be used from several threads at once. Every call
** that takes a handle holds a reader-writer lock owned by the handle: reads
** (memory/recall, memory/timeline) share it and run side by side, every
** other method holds it alone, so each write is applied completely, one at a
** time, and never beside a read. a2m_close() must not race with other calls
** on the same handle.
**
** Memory: every char * the library returns is owned by the caller and is
** released with a2m_free().
*/
#ifndef A2M_H
#define A2M_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's own version, and the protocol it speaks. */
#define A2M_VERSION  "0.1.0"
#define A2M_PROTOCOL "a2m/0.1"

/*
** Error codes, as they appear in JSON-RPC error objects (spec §7). The
** library's C functions also return these (0 is success).
*/
enum a2m_code {
	A2M_OK                       = 0,
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

/* Which storage engine holds the records. */
typedef enum a2m_engine {
	A2M_ENGINE_SQLITE = 0, /* one SQLite file, durable: the embedded default */
	A2M_ENGINE_MEMORY = 1  /* process memory only; gone at a2m_close() */
} a2m_engine;

/*
** How to open a store. Initialise with a2m_config_init(), then set what you
** need: every field left at its initial value takes the documented default,
** and memory/describe reports the values in force.
*/
typedef struct a2m_config {
	a2m_engine  engine;          /* default A2M_ENGINE_SQLITE */
	const char *path;            /* SQLite file; default "a2m.db". Ignored for memory. */
	const char *name;            /* server name in describe; default "a2m" */
	int64_t     max_records_per_call;  /* remember batch size; default 1000 */
	int64_t     max_content_length;    /* in Unicode code points; default 1048576 */
	int64_t     max_recall_limit;      /* largest recall limit; default 1000 */
	int64_t     default_recall_limit;  /* recall limit when absent; default 10 */
	int         sqlite_synchronous_normal; /* 0: synchronous=FULL, every
	                                          acknowledged write survives power
	                                          loss (default). 1: NORMAL, which in
	                                          WAL mode survives a process crash
	                                          but may lose the last commits on
	                                          power loss. */
	const char *capabilities;    /* comma-separated capabilities to declare
	                                (e.g. "core,tiers,keys"); NULL = all eleven.
	                                "core" is always declared. */
	int         read_only;       /* 1: serve an existing store and refuse every
	                                write with READ_ONLY (spec §2.1) */
	const char *config_file;     /* JSON configuration (docs/CONFIG.md): tiers,
	                                limits, metric, events; fields set in this
	                                struct take precedence over the file */
	const char *metric;          /* how vectors compare: "cosine" (default),
	                                "dot" or "l2" */
	int64_t     events_retain;   /* events kept for memory/events; default 1024 */
	const char *ranking;         /* how text is ranked: "bm25" (default: the
	                                indexed BM25 of docs/RANKING.md) or
	                                "lexical" (the old plain-scan term
	                                overlap, kept as a benchmark baseline) */
	/*
	** The server's own embedder (docs/EMBEDDINGS.md): a model server a2m
	** calls to embed text that arrived without a vector, so a text query
	** can match by meaning too. Off by default (embed_kind NULL).
	*/
	const char *embed_kind;      /* "ollama" | "openai"; NULL = no embedder */
	const char *embed_url;       /* ollama default http://127.0.0.1:11434;
	                                openai: required */
	const char *embed_model;     /* default "bge-m3" */
	const char *embed_api_key;   /* sent as a Bearer token; NULL = none */
	long        embed_timeout_ms;/* per request; default 2000 */
	/*
	** Recall's access counts wait in memory and are written behind
	** (docs/PROTOCOL.md, Salience): at the latest when this many records
	** have some waiting, or the oldest is a second old. A crash loses at
	** most those. Default 65536.
	*/
	int64_t     touch_buffer;
	/*
	** Threads a write may use besides the calling one (docs/CONFIG.md):
	** to analyse the texts of a remember of 64 records or more while the
	** calling thread stores them, and (SQLite) to merge the term index's
	** segments while a transaction goes on. They start with the call or
	** the transaction and end before it returns. -1 (default): one per
	** core but the caller's, at most 4 (none on one core); 0: none, every
	** write runs whole on the calling thread.
	*/
	int         helper_threads;
} a2m_config;

/* The most helper threads a2m_config.helper_threads may ask for. */
#define A2M_HELPER_THREADS_MAX 16

/* Fills *cfg with the defaults. Cannot fail. */
void a2m_config_init(a2m_config *cfg);

/* An open store with its server: the in-process binding. */
typedef struct a2m a2m;

/*
** Opens (creating if needed) the store described by cfg.
** Returns 0 and sets *out on success. On failure returns a negative code,
** sets *out to NULL and, when errmsg is not NULL, sets *errmsg to a message
** the caller frees with a2m_free().
*/
int a2m_open(const a2m_config *cfg, a2m **out, char **errmsg);

/*
** Handles one JSON-RPC 2.0 message (a NUL-terminated UTF-8 string) and
** returns the response as a compact, single-line JSON string the caller frees
** with a2m_free(). Returns NULL when the message was a notification, which by
** JSON-RPC gets no answer, and NULL if memory ran out. Malformed input is
** answered with a JSON-RPC error object, never by crashing or returning NULL.
*/
char *a2m_handle(a2m *h, const char *message);

/* As a2m_handle(), for a message of len bytes that need not be NUL-terminated. */
char *a2m_handle_n(a2m *h, const char *message, size_t len);

/*
** Who sent a message, for transports that know (spec §6). A local transport
** (stdio, in-process) passes NULL: the client's `owner` is taken as given.
** A network transport sets network = 1: it cannot carry notifications, and
** `scopes` is declared only when it authenticated the caller, whose
** principal then IS the owner — a request naming another owner is refused
** with SCOPE_DENIED.
*/
typedef struct a2m_request_ctx {
	int         network;    /* 1: a network transport (HTTP) */
	const char *principal;  /* the authenticated principal; NULL = none */
} a2m_request_ctx;

/* As a2m_handle_n(), on behalf of the caller described by ctx (NULL: local). */
char *a2m_handle_ctx(a2m *h, const char *message, size_t len, const a2m_request_ctx *ctx);

/*
** Receives the server's notifications (for example memory/event once a client
** has subscribed): fn is called with one complete JSON-RPC notification
** string, serialised like any response, and the user pointer. The string is
** borrowed for the duration of the call. fn is called from inside
** a2m_handle() on the calling thread, after the state change it reports; it
** must not call back into the same handle. Pass fn NULL to stop.
*/
typedef void (*a2m_notify_fn)(const char *notification, void *user);
void a2m_set_notify(a2m *h, a2m_notify_fn fn, void *user);

/*
** Whether this handle can deliver notifications: true once a callback is set
** with a2m_set_notify(). memory/describe reports it as events.push, and
** memory/events/subscribe is refused without it (spec §4.13).
*/

/* Commits and closes the store and frees the handle. NULL is a no-op. */
void a2m_close(a2m *h);

/* Frees a string returned by the library. NULL is a no-op. */
void a2m_free(void *p);

/* The library version, A2M_VERSION. */
const char *a2m_version(void);

#ifdef __cplusplus
}
#endif
#endif /* A2M_H */
