/*
** protocol.h — the A2M methods: one handler per method, the capability gate,
** parameter validation and the documented limits. No SQL here and no
** transport: handlers take decoded params and produce a result object.
*/
#ifndef A2M_PROTOCOL_H
#define A2M_PROTOCOL_H

#include <stdint.h>

#include <jansson.h>

#include "stack/stack.h"
#include "util/error.h"

/*
** The capabilities of spec §2, as bits, then our extensions (docs/PROTOCOL.md,
** Extensions): each named with an "x-" prefix, which no capability of the
** specification has, so a future version cannot declare one of them with
** another meaning.
*/
enum a2m_capability {
	A2M_CAP_CORE       = 1u << 0,
	A2M_CAP_TIERS      = 1u << 1,
	A2M_CAP_SALIENCE   = 1u << 2,
	A2M_CAP_SCOPES     = 1u << 3,
	A2M_CAP_SESSIONS   = 1u << 4,
	A2M_CAP_KEYS       = 1u << 5,
	A2M_CAP_EMBEDDINGS = 1u << 6,
	A2M_CAP_EXTERNAL   = 1u << 7,
	A2M_CAP_EVENTS     = 1u << 8,
	A2M_CAP_SUMMARIZE  = 1u << 9,
	A2M_CAP_PROMPT     = 1u << 10,
	A2M_CAP_X_WHERE    = 1u << 11,  /* "x-where": operators in `where` */
	A2M_CAP_X_EXPIRY   = 1u << 12,  /* "x-expiry": expires_at, tiers' ttl */
	A2M_CAP_X_HISTORY  = 1u << 13,  /* "x-history": a key's earlier revisions */
	A2M_CAP_X_DEDUP    = 1u << 14,  /* "x-dedup": exact duplicates refresh */
	/* Parameters for a federating router (docs/FEDERATION.md), once
	** declared in describe's "extensions" list only (still named there). */
	A2M_CAP_X_IMPORT   = 1u << 15,  /* "x-import": remember's import form */
	A2M_CAP_X_TOUCH    = 1u << 16,  /* "x-touch": recall's touch: false */
	A2M_CAP_X_ALL_OWNERS = 1u << 17 /* "x-all-owners": every owner's records */
};

/* The last capability bit: loops over every capability stop here. */
#define A2M_CAP_LAST A2M_CAP_X_ALL_OWNERS

/* The name of one capability bit ("core", "tiers", ...). */
const char *a2m_capability_name(unsigned cap);

/*
** The limits describe reports and every handler enforces, one for every
** dimension of a request (docs/PROTOCOL.md, Limits): exceeding one is
** QUOTA_EXCEEDED with data {"limit": NAME, "max": N}.
*/
typedef struct a2m_limits {
	int64_t max_records_per_call;
	int64_t max_content_length;   /* Unicode code points of a content or a query */
	int64_t max_recall_limit;
	int64_t default_recall_limit;
	int64_t max_depth;            /* nesting of params: params itself is 1 */
	int64_t max_string_bytes;     /* any other string of a request */
	int64_t max_metadata_bytes;   /* one record's metadata, as JSON text */
	int64_t max_ids_per_call;     /* an `ids` list */
	int64_t max_where_fields;     /* members of one `where` */
	int64_t max_where_values;     /* values of one any-of list */
	int64_t max_dimensions;       /* elements of one vector */
} a2m_limits;

struct a2m_event_log;

/*
** The server: what every call of a method shares, and nothing of any one
** call (a2m_call has that), so calls running side by side under the
** handle's shared lock (server/handle.c) read one server without copying it.
*/
typedef struct a2m_server {
	const char *name;        /* owned */
	unsigned    declared;    /* capabilities configured for this server */
	a2m_limits  limits;
	a2m_stack  *stack;       /* owned */
	int         read_only;   /* every write method answers READ_ONLY (§2.1) */
	struct a2m_event_log *events;  /* owned; NULL without the events capability */
	int         can_push;    /* the local connection can carry notifications */
	/* The connection's push subscription (§4.13): per connection, opt-in. */
	int         subscribed;
	json_t     *sub_kinds;   /* owned; NULL = every kind */
	char       *sub_owner;   /* owned; the subscriber's scope */
	uint64_t    push_after;  /* a shared log: the last event pushed or passed */
	/*
	** Delivers one notification: the method and its params (borrowed). The
	** handle frames it as it frames a response (server/handle.c): this layer says
	** what to tell, not how a message is written.
	*/
	void      (*notify)(void *ctx, const char *method, json_t *params);
	void       *notify_ctx;
	struct a2m_describe_cache *describe_cache;  /* owned; NULL: no caching */
} a2m_server;

/*
** One call of a method: the server, and who is calling. server/handle.c makes one
** per request.
*/
typedef struct a2m_call {
	a2m_server *srv;
	unsigned    caps;       /* capabilities declared to this caller: the
	                           server's less scopes for an unauthenticated
	                           network caller (spec §6) */
	int         network;    /* it came over a network transport */
	const char *principal;  /* its authenticated principal, or NULL */
	int         push;       /* its connection can carry notifications (§4.13) */
	/* It holds the handle's lock only shared, beside other readers
	** (server/handle.c): it must change nothing of the server (a2m_selection.shared). */
	int         shared;
} a2m_call;

/* A method handler: params is always an object (empty when absent). On
** success returns 0 and sets *result; otherwise returns a code with err set. */
typedef int (*a2m_method_fn)(a2m_call *call, json_t *params, json_t **result,
			     a2m_error *err);

/* A handler that answers with its result already serialised: 0 with *text
** (free with free()) and *len, or a code with err set. */
typedef int (*a2m_method_text_fn)(a2m_call *call, json_t *params, char **text,
				  size_t *len, a2m_error *err);

/* One entry of the method table. */
typedef struct a2m_method {
	const char   *name;       /* "memory/remember" */
	unsigned      cap;        /* the capability it belongs to */
	a2m_method_fn fn;         /* NULL: not implemented by this build */
	int           writes;     /* refused with READ_ONLY on a read-only server */
	/* Its result may hold references into the server's state (the event
	** log's objects): serialise it before letting go of the handle. */
	int           shares;
	a2m_method_text_fn text;  /* NULL, or preferred to fn (describe's cache) */
	/* It may run under the shared lock (server/handle.c): it only reads, and where it
	** would write (recall's promotions, the touches' flush) it answers
	** A2M_NEED_EXCLUSIVE (stack.h) to be run again exclusively. */
	int           shared;
} a2m_method;

/*
** Every A2M method of the specification, NULL-terminated by name. A method
** whose capability is not declared still has an entry, so it answers
** CAPABILITY_NOT_SUPPORTED rather than METHOD_NOT_FOUND (DECISIONS 002).
*/
extern const a2m_method a2m_methods[];

/* The entry for name, or NULL when name is not an A2M method at all. */
const a2m_method *a2m_method_find(const char *name);

/*
** Runs method with params: the capability gate, then the handler. Returns 0
** with *result set, or a code with err set.
*/
int a2m_protocol_call(a2m_call *call, const a2m_method *m, json_t *params,
		      json_t **result, a2m_error *err);

/* The handlers (one file each under src/protocol/). */
int a2m_method_describe(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
int a2m_method_remember(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
int a2m_method_recall(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
/* memory/recall's text handler: the same result, written without objects. */
int a2m_method_recall_text(a2m_call *call, json_t *params, char **text, size_t *len,
			   a2m_error *err);
int a2m_method_timeline(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
int a2m_method_forget(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
int a2m_method_promote(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
int a2m_method_consolidate(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
int a2m_method_reinforce(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
int a2m_method_fetch(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
int a2m_method_session_list(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
int a2m_method_session_close(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
int a2m_method_events(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
int a2m_method_subscribe(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
int a2m_method_unsubscribe(a2m_call *call, json_t *params, json_t **result, a2m_error *err);
int a2m_method_summarize(a2m_call *call, json_t *params, json_t **result, a2m_error *err);

/*
** The describe cache (describe.c): memory/describe's result serialised,
** kept per variant (the capabilities declared to the caller, push) while
** the stack's generation stays the same, so a describe between two writes
** costs a copy. Only the unscoped result is kept: counts scoped to an
** owner or principal are computed every time.
*/
typedef struct a2m_describe_cache a2m_describe_cache;

/* A new, empty cache; NULL when memory runs out. */
a2m_describe_cache *a2m_describe_cache_new(void);

/* Frees the cache; NULL is a no-op. */
void a2m_describe_cache_free(a2m_describe_cache *c);

/* memory/describe's text handler: the cache, else the handler, then cached. */
int a2m_describe_text(a2m_call *call, json_t *params, char **text, size_t *len,
		      a2m_error *err);

/*
** memory/describe's result for call from the cache, between head and tail
** (*text: free with free(); a whole response in one allocation), when
** params held at most `protocol` (NUL-terminated; NULL: absent): 1 on a
** hit, 0 when the cache cannot answer (a protocol we do not speak, a server
** with an embedder, a stale or missing entry, no memory) — then ask
** a2m_describe_text under the handle's lock. Safe without the handle's
** lock: it reads what never changes after a2m_open, the cache (which has
** its own lock) and the stack's generation.
*/
int a2m_describe_cached(const a2m_call *call, const char *protocol, const char *head,
			const char *tail, char **text, size_t *len);

/* Whether describe's params hold nothing but a `protocol` we speak: the
** only params a2m_describe_cached can answer. */
int a2m_describe_plain(const json_t *params);

/*
** Whether v names our protocol: while the major version is 0, versions are
** compatible only when the minor matches exactly (spec §4.1), so "a2m/0.1"
** and a patch level "a2m/0.1.3" are ours and nothing else is. Used by
** describe's `protocol` param and the HTTP version header alike.
*/
int a2m_protocol_compatible(const char *v);

/* Shared by the handlers (params.c). */

/*
** Reads an optional string param. Returns 0 with *out the borrowed string or
** NULL when absent (or JSON null), A2M_INVALID_PARAMS with err set when it is
** another type or holds a NUL byte.
*/
int a2m_param_string(const json_t *params, const char *name, const char **out,
		     a2m_error *err);

/*
** Reads an optional non-negative integer param into *out (untouched when
** absent; *present says which). A2M_INVALID_PARAMS for any other type or a
** negative value.
*/
int a2m_param_count(const json_t *params, const char *name, int64_t *out,
		    int *present, a2m_error *err);

/*
** Reads a salience or an amount added to one (remember's salience,
** reinforce's amount, promote's salience) from v, which may be NULL or JSON
** null (absent: 0, *out untouched). A2M_INVALID_PARAMS naming `name` unless
** it is a number within ±A2M_SALIENCE_MAX (stack.h): a larger one would
** make salience, retention and scores non-finite.
*/
int a2m_param_salience(const json_t *v, const char *name, double *out, a2m_error *err);

/*
** QUOTA_EXCEEDED for the limit called name (its maximum max), with data
** {"limit": name, "max": max} and the message fmt formats. Returns the code.
*/
int a2m_limit_exceeded(a2m_error *err, const char *name, int64_t max, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
** The limits every request's params are held to before a handler reads
** them: nesting depth, and the length of every string member of params
** itself (`query` by max_content_length, the rest by max_string_bytes).
** The limits of fields inside params (records, where, vectors, ids) are
** the readers' of those fields. 0, or QUOTA_EXCEEDED.
*/
int a2m_param_limits(const a2m_call *call, const json_t *params, a2m_error *err);

/*
** The largest magnitude of one element of a vector (an embedding written, a
** query's): vectors are kept as float32 and compared with float sums, and
** within this bound no element, norm or sum of products can overflow.
** Embedding models write elements of magnitude below 100.
*/
#define A2M_VECTOR_ELEMENT_MAX 1e15

/*
** Whether v is a number a vector may hold (finite, within
** ±A2M_VECTOR_ELEMENT_MAX); its value in *out when it is.
*/
int a2m_param_vector_element(const json_t *v, double *out);

/*
** Refuses a param of an undeclared capability that would narrow or direct
** the operation (e.g. `tier` without tiers): silently dropping it would
** answer a different question than was asked. Returns 0 when the param is
** absent or cap is declared, else A2M_CAPABILITY_NOT_SUPPORTED naming cap.
*/
int a2m_param_requires(const a2m_call *call, const json_t *params, const char *name,
		       unsigned cap, a2m_error *err);

/*
** Fills sel from the selection params shared by recall, timeline, forget and
** summarize (tier, owner, key_prefix, where), validating each: an unknown
** tier is UNKNOWN_TIER. Borrowed pointers.
*/
int a2m_param_selection(const a2m_call *call, const json_t *params,
			a2m_selection *sel, a2m_error *err);

/*
** The caller's scope from params.owner (spec §6): on the local transports
** the client's owner is taken as given. Validates the type.
*/
int a2m_param_scope(const a2m_call *call, const json_t *params, a2m_scope *scope,
		    a2m_error *err);

/*
** On a network transport with an authenticated principal: *owner (a client
** claim, or NULL) must be the principal or absent, and becomes the
** principal. SCOPE_DENIED otherwise.
*/
int a2m_param_owner_is_principal(const a2m_call *call, const char **owner, a2m_error *err);

/*
** Reads params.ids, a required array of strings, into a new array of
** borrowed strings (caller frees the array). name is "ids".
*/
int a2m_param_ids(const a2m_call *call, const json_t *params, const char *name,
		  const char ***ids, size_t *n, a2m_error *err);

/*
** The wire form of the consolidation counts plus counts, the records per
** tier the write left (a2m_stack_consolidate reads them before its
** commit). NULL with err set when memory runs out.
*/
json_t *a2m_consolidation_to_json(a2m_call *call, const a2m_consolidation *c,
				  const int64_t *counts,
				  a2m_error *err);

/* Sets err to CAPABILITY_NOT_SUPPORTED for cap, with data naming it. */
int a2m_error_capability(a2m_error *err, unsigned cap, const char *what);

/*
** The wire form of rec: the core fields, plus the fields of each declared
** capability. Returns a new object, or NULL when memory runs out.
*/
json_t *a2m_record_to_json(const a2m_call *call, const a2m_record *rec,
			   int with_embedding);

/*
** Reads o, a record in wire form with every field as it was stored (an a2m
** export's line; the import form of memory/remember): id (non-empty) and
** created_at are required, and access_count, accessed_at, revision,
** salience (absent: NaN, the store's default), owner, session, key and
** embedding are taken as given. rec must be zeroed; on failure it may hold
** part of the record (free it with a2m_record_clear). Returns 0, or -1
** with the reason in err (naming the field).
*/
int a2m_record_from_wire(const json_t *o, a2m_record *rec, char *err, size_t errlen);

/*
** What of a record read by a2m_record_from_wire a server declaring caps
** keeps: an expires_at only with x-expiry. Spec §4.2 has a server ignore
** the fields of capabilities it does not declare (tier alone is refused);
** an expiry kept anyway would hide the record from every read, on a server
** that never said records expire. Cannot fail.
*/
void a2m_record_wire_fit(a2m_record *rec, unsigned caps);

/*
** A revision of a keyed record (x-history) as fetch's `history` holds it:
** revision, content, created_at (null when unknown), superseded_at, and
** role, metadata when it had them, owner when call declares scopes. A new
** object, or NULL when memory ran out. (keys.c)
*/
json_t *a2m_revision_to_json(const a2m_call *call, const a2m_revision *rev);

/*
** Reads o, a revision as an a2m export's revision line carries it (the
** object above with every field, and "id", its record's), into the zeroed
** rev, whose strings it allocates (a2m_revision_wire_free). Returns 0, or
** -1 with the reason in err (naming the field); rev may then hold some.
*/
int  a2m_revision_from_wire(const json_t *o, a2m_revision *rev, char *err, size_t errlen);
void a2m_revision_wire_free(a2m_revision *rev);

/*
** The same object as text, appended to b (util/json_write.h), with a
** "score" member last when score is not NULL (as recall adds it). Returns
** 0, or nonzero when memory ran out or the record cannot be written (text
** that is not UTF-8, metadata that is not JSON).
*/
struct a2m_buf;
int a2m_record_write_json(struct a2m_buf *b, const a2m_call *call,
			  const a2m_record *rec, int with_embedding, const double *score);

#endif
