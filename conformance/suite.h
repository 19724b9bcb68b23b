/*
** suite.h — what a group of conformance checks is, and the helpers a
** check is written with.
**
** The conformance suite is a program of its own, a2m-conformance (`a2m
** conformance` runs it): it speaks only the protocol, through the client
** side of the library (include/a2m_client.h, src/client/) and jansson, and
** links nothing of the server (the Makefile links it from this folder, the
** client and five neutral files of src/util/ alone; tests/library_test.sh
** checks its includes and symbols).
**
** The suite is a list of groups (suite.c), each a table of checks in
** one file per capability: check_rpc.c for the JSON-RPC envelope and
** the stdio framing, check_describe.c, _remember.c, _read.c and
** _forget.c for the core methods, check_http.c for the HTTP binding
** (run only over --http, as the stdio group runs only over --stdio). The
** helpers below are defined in helpers.c and
** helpers_records.c, unless a section says otherwise. To add the
** checks of a capability, write check_<cap>.c defining
**
**   static const conf_check checks[] = {
**           {"promote moves records to the named tier", check_promote_moves, NULL},
**           ...
**   };
**   const conf_group conf_group_<cap> = {"<cap>", "<cap>", checks,
**                                        CONF_COUNT(checks), 0};
**
** declare it below, and add it to the table in suite.c. The runner
** reports every check of a group whose capability the server does not
** declare as skipped, so a check may assume its capability is declared.
**
** A check is a function that talks to the server through cx and gives one
** verdict: conf_pass(), conf_fail() or conf_skip(). The first verdict
** stands; later ones are ignored, so a check can simply return after the
** first thing that went wrong. A check that gives none is reported as a
** failure, so a forgotten conf_pass() cannot hide behind an ok.
**
** Memory: every json_t and string the helpers return belongs to the check
** and is released when it ends (conf_keep); a check never frees anything
** it got from a helper. Values passed in as "params" are stolen.
**
** Isolation: the store may already hold records, ours from earlier checks or
** someone else's (a persistent SQLite file). A check therefore finds its own
** records by a marker — a word no other check uses (conf_marker) — put in
** their content and, under "cfm", their metadata. Every record the suite
** writes also carries "cfrun": the run's token, so the run can clean up.
*/
#ifndef A2M_CONFORMANCE_SUITE_H
#define A2M_CONFORMANCE_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "a2m_client.h"
#include "client/client_json.h"

/* The program's exit statuses: 0 every check passed, 1 one failed, 2 usage. */
#define CONF_EXIT_OK    0
#define CONF_EXIT_ERROR 1
#define CONF_EXIT_USAGE 2

/* Error codes of spec §7, for the checks' expectations. */
enum {
	CONF_PARSE_ERROR              = -32700,
	CONF_INVALID_REQUEST          = -32600,
	CONF_METHOD_NOT_FOUND         = -32601,
	CONF_INVALID_PARAMS           = -32602,
	CONF_CAPABILITY_NOT_SUPPORTED = -32003,
	CONF_READ_ONLY                = -32004,
	CONF_SCOPE_DENIED             = -32005,
	CONF_QUOTA_EXCEEDED           = -32006,
	CONF_PROTOCOL_NOT_SUPPORTED   = -32007
};

/* The protocol version the suite speaks and declares. */
#define CONF_PROTOCOL "a2m/0.1"

typedef struct conf_ctx conf_ctx;

typedef void (*conf_check_fn)(conf_ctx *cx, const void *arg);

typedef struct conf_check {
	const char *name;  /* printed after the group: "limit 1 returns one record" */
	conf_check_fn run;
	const void *arg;   /* handed to run, so one function can serve a family */
} conf_check;

typedef struct conf_group {
	const char *name;       /* printed before each check, e.g. "core/recall" */
	const char *capability; /* NULL: always run; else only when declared */
	const conf_check *checks;
	size_t n_checks;
	int ends_session;       /* it shuts the server down: run it last */
} conf_group;

#define CONF_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/*
** `a2m conformance`: argv[0] is "conformance". Returns the exit status: 0
** when every check passed or was skipped, 1 when one failed or the server
** could not be started, 2 for a usage error.
*/
int a2m_cmd_conformance(int argc, char **argv);

/* The groups, defined in their files and listed in suite.c. */
extern const conf_group conf_group_rpc;
extern const conf_group conf_group_stdio;
extern const conf_group conf_group_http;
extern const conf_group conf_group_describe;
extern const conf_group conf_group_remember;
extern const conf_group conf_group_recall;
extern const conf_group conf_group_timeline;
extern const conf_group conf_group_forget;
/* groups A (tiers, salience, scopes, sessions, keys): declarations below */
extern const conf_group conf_group_tiers;
extern const conf_group conf_group_capacity;
extern const conf_group conf_group_salience;
extern const conf_group conf_group_scopes;
extern const conf_group conf_group_sessions;
extern const conf_group conf_group_sessions_owner;
extern const conf_group conf_group_keys;
/* our extensions (docs/PROTOCOL.md, Extensions): check_x<name>.c */
extern const conf_group conf_group_xwhere;
extern const conf_group conf_group_xtouch;
extern const conf_group conf_group_xexpiry;
extern const conf_group conf_group_xhistory;
extern const conf_group conf_group_xdedup;

/*
** What those groups share, defined in helpers_layout.c: the tier layout
** as describe reports it (spec §4.7), and writes placed so they stay put.
** Nothing here hard-codes a layout; a check that needs a kind of tier the
** server lacks skips.
*/

/* describe's "tiers" array when "tiers" is declared and it is a non-empty
** array; NULL otherwise (no verdict). */
const json_t *conf_tiers(conf_ctx *cx);
/* conf_tiers for a group that runs only when "tiers" is declared: NULL
** means the server broke its declaration, so the check has failed. */
const json_t *conf_tier_layout(conf_ctx *cx);
/* The described tier called name, or NULL. */
const json_t *conf_tier(conf_ctx *cx, const char *name);
/* A string member of a tier entry ("name", "kind", "spill_to", ...); NULL
** when absent, null or not a string. */
const char *conf_tier_str(const json_t *tier, const char *member);
/* "capacity" when a positive integer, else 0: unbounded. */
int64_t conf_tier_capacity(const json_t *tier);
/* A boolean member: 1, 0, or -1 when absent or not a boolean. */
int conf_tier_flag(const json_t *tier, const char *member);
/* Whether name lies on the spill chain below tier from (from excluded). */
int conf_tier_below(conf_ctx *cx, const char *from, const char *name);
/*
** Whether writing n more records into tier from may end with some dropped
** rather than moved (spec §4.7 "dropped"): its spill chain ends in a
** bounded tier with no spill_to that the records above it, plus n, could
** overfill. 1 or 0 by describe's counts now; -1 after failing the check.
*/
int conf_tier_can_drop(conf_ctx *cx, const char *from, size_t n);
/* A fresh memory/describe (scoped to owner when not NULL) as an object
** tier name → count; NULL after failing the check. */
json_t *conf_tier_counts(conf_ctx *cx, const char *owner);
/* The count of name in counts, or -1. */
int64_t conf_tier_count_in(const json_t *counts, const char *name);
/*
** A tier where records written with conf_tier_fields stay put while a check
** runs: not procedural, unbounded and without promote_to where the layout
** allows, and with room. NULL when there is none, or no "tiers".
*/
const char *conf_tier_home(conf_ctx *cx);
/*
** Fields that place a record in tier (NULL: conf_tier_home) and, when
** "sessions" is declared, in a fresh session, so a per-session capacity
** starts empty. One session per call; kept.
*/
json_t *conf_tier_fields(conf_ctx *cx, const char *tier);
/*
** Whether n records written with conf_tier_fields fit in tier without
** anything having to spill: 1 yes, 0 no, -1 after failing the check.
*/
int conf_tier_room(conf_ctx *cx, const json_t *tier, size_t n);
/*
** Writes n records, content "<marker> item <i>", tagged with the marker,
** each carrying fields (may be NULL). One call when n fits the server's
** max_records_per_call, else consecutive calls. Returns the ids, in order;
** NULL after failing (or skipping, on a read-only server).
*/
json_t *conf_write_n(conf_ctx *cx, const char *marker, size_t n, const json_t *fields);
/*
** Runs memory/recall or memory/timeline with params (stolen) and returns
** the records whose metadata carries cfm = marker (all when marker is NULL),
** in the order returned. NULL after failing.
*/
json_t *conf_read(conf_ctx *cx, const char *method, json_t *params, const char *marker);
/* groups B (embeddings, external, events, summarize, prompt, read-only): declarations below */
extern const conf_group conf_group_embeddings;
extern const conf_group conf_group_external;
extern const conf_group conf_group_events;
extern const conf_group conf_group_events_push;
extern const conf_group conf_group_summarize;
extern const conf_group conf_group_prompt;
extern const conf_group conf_group_read_only;

/*
** What the events and events/push groups share, defined in
** helpers_event_log.c: reading the log of spec §4.12.
*/

/* Polls one read may take before the suite suspects a loop. */
#define CONF_MAX_POLLS 200

/* Whether an event has a string kind and a wire timestamp; fails if not. */
int conf_event_ok(conf_ctx *cx, const json_t *ev);
/*
** memory/events with params (stolen). Returns the result after checking its
** shape (an events array of well-formed events, a cursor string, more and
** reset booleans when present), or NULL after failing the check.
*/
json_t *conf_events_poll(conf_ctx *cx, json_t *params);
/* The head: a poll without a cursor, which must carry no events. NULL
** after failing the check. */
const char *conf_events_head(conf_ctx *cx);
/*
** Every event after cursor, polling with extra params (stolen, may be NULL)
** until more is no longer true. Sets *next to the last cursor when next is
** not NULL. NULL after failing the check, also when a cursor taken moments
** before is answered with reset: true.
*/
json_t *conf_events_since(conf_ctx *cx, const char *cursor, json_t *extra, const char **next);
/* The events of kind; when ids is not NULL, only those naming one of ids. */
json_t *conf_events_of_kind(conf_ctx *cx, const json_t *events, const char *kind,
			    const json_t *ids);
/*
** Whether written holds exactly one `written` event per id of ids, in that
** order; fails the check if not.
*/
int conf_written_in_order(conf_ctx *cx, const json_t *written, const json_t *ids);
/* Writes n records "<m> event <i>" as one batch tagged m; the ids, or NULL
** after failing (or skipping). */
json_t *conf_events_write(conf_ctx *cx, const char *m, size_t n);
/* The first tier whose describe entry says shared: false, or NULL. */
const char *conf_private_tier(conf_ctx *cx);

/* The methods of spec §2's table and the capability each belongs to. */
typedef struct conf_method {
	const char *method;
	const char *capability;
} conf_method;

/* Every one of them, core first, ending with {NULL, NULL}. */
extern const conf_method conf_methods[];

/* The capability method belongs to, or NULL when it is not an A2M method. */
const char *conf_capability_of(const char *method);

/* ---- what a check may read about the server ---- */

/* The result of the memory/describe made on connecting; NULL if it failed. */
const json_t *conf_describe(conf_ctx *cx);

/* Why that memory/describe failed, or "". */
const char *conf_describe_error(conf_ctx *cx);

/* Whether describe declared capability cap. */
int conf_has_capability(conf_ctx *cx, const char *cap);

/* The limits from describe (spec §4.1), 0 when not declared. */
typedef struct conf_limits {
	int64_t max_records_per_call;
	int64_t max_recall_limit;
	int64_t max_content_length;
} conf_limits;
const conf_limits *conf_server_limits(conf_ctx *cx);

/* ---- verdicts ---- */

void conf_pass(conf_ctx *cx);
void conf_fail(conf_ctx *cx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void conf_skip(conf_ctx *cx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- scratch memory, released when the check ends ---- */

/* Returns value (NULL-safe). Out of memory releases it, fails the check and
** returns NULL. */
json_t *conf_keep(conf_ctx *cx, json_t *value);
/* A formatted string; out of memory fails the check and returns "". */
const char *conf_str(conf_ctx *cx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A compact, truncated rendering of v for a failure message. */
const char *conf_show(conf_ctx *cx, const json_t *v);

/* A fresh word, unique in this run and unlikely anywhere else: letters only,
** no vowels, so no tokenizer splits it and no stemmer shortens it. */
const char *conf_marker(conf_ctx *cx);
/* The run's token, the value of "cfrun" in every record the suite writes. */
const char *conf_run_token(conf_ctx *cx);

/* Parses JSON text (a test literal) and keeps it. Aborts the check with a
** failure if the literal is broken, which is a bug in the suite. */
json_t *conf_json(conf_ctx *cx, const char *text);

/* The string member key of obj; NULL when obj is not an object or the
** member is absent or not a string. Borrowed from obj. */
const char *conf_str_of(const json_t *obj, const char *key);

/* ---- talking to the server ---- */

/*
** Sends a request (params stolen, NULL for none) and returns the whole
** response, or NULL after failing the check when there was none (timeout,
** server gone). Over HTTP with --token, a request naming an owner that is
** refused with -32005 skips the check and returns NULL: there the owner is
** the token's principal (spec §6), so a check playing another owner cannot
** run. conf_expect_error() for -32005 itself is exempt.
*/
json_t *conf_call(conf_ctx *cx, const char *method, json_t *params);

/*
** As conf_call, and returns the response's "result" — or NULL after failing
** the check with what came back instead (an error object, a malformed
** response). A -32004 READ_ONLY answer is reported as a skip when the server
** has been seen to be read-only.
*/
json_t *conf_result(conf_ctx *cx, const char *method, json_t *params);

/*
** Sends a request that must fail with code (or alt, when alt is not 0).
** Returns 1 when it did; otherwise fails the check and returns 0.
*/
int conf_expect_error(conf_ctx *cx, const char *method, json_t *params, int code, int alt);

/* A call whose params (JSON text) must be refused with -32602: passes the
** check when it is, fails it otherwise. */
void conf_expect_invalid(conf_ctx *cx, const char *method, const char *params_text);

/* Checks that resp is an error response; sets *code. Returns 0 when it is not. */
int conf_error_code(const json_t *resp, int *code);

/* Writes bytes as they are. Returns 1, or 0 after failing the check. */
int conf_send_raw(conf_ctx *cx, const void *bytes, size_t len);

/* The next message the server sends, in order; NULL after failing the check. */
json_t *conf_recv(conf_ctx *cx);

/*
** Whether the server still answers a plain memory/describe correctly; fails
** the check (saying "after <what>") when it does not.
*/
int conf_still_serving(conf_ctx *cx, const char *after);

/*
** What the stream has carried so far: returns how many lines the server
** sent that were not a JSON-RPC 2.0 response or notification (spec §8.2),
** sets *received to the number of lines and *first to the first offender.
*/
size_t conf_stream_invalid(conf_ctx *cx, size_t *received, const char **first);

/* The connection, for checks that need the client directly (closing it). */
a2m_client *conf_client(conf_ctx *cx);

/* The command that starts the server (NULL-terminated), for a check that
** needs a second instance of it: a cursor from another server, say. */
char *const *conf_server_argv(conf_ctx *cx);

/*
** Over HTTP (--http URL) there is no command: conf_server_argv() is NULL,
** the server is shared with whoever else uses it, and the owner of every
** request is the principal of --token when one is given (spec §6).
*/
int conf_over_http(conf_ctx *cx);
/* --http's URL, --token and --cacert; NULL when not given. */
const char *conf_http_url(conf_ctx *cx);
const char *conf_http_token(conf_ctx *cx);
const char *conf_http_cacert(conf_ctx *cx);

/* How long a check that sends or stores megabytes may wait for each answer:
** the server is allowed to be slow there (under valgrind, say), not hung. */
#define CONF_HEAVY_TIMEOUT_MS 60000

/* The --timeout value, in milliseconds. */
int conf_timeout(conf_ctx *cx);

/* Sets the wait for each answer for the rest of the current check; the
** runner restores the --timeout value before the next one. */
void conf_set_timeout(conf_ctx *cx, int timeout_ms);

/* ---- writing and finding records ---- */

/*
** A record {"content": content, "metadata": {"cfrun": run, "cfm": marker}}
** (marker omitted when NULL). Not kept: a new value the caller may add
** fields to and then hands on to something that steals it (an array's
** append_new, a json_pack "o").
*/
json_t *conf_record(conf_ctx *cx, const char *content, const char *marker);

/*
** Writes records (a stolen array) with memory/remember and returns the "ids"
** array after checking it has one string per record. NULL after failing the
** check — or skipping it, when this is the write that shows the server to be
** read-only (spec §2.1; DECISIONS 001).
*/
json_t *conf_remember(conf_ctx *cx, json_t *records);

/* Skips the check and returns 0 when the server is read-only. */
int conf_need_writes(conf_ctx *cx);
/* Whether the server has refused a write with -32004. */
int conf_read_only(conf_ctx *cx);

/*
** Whether the server refuses writes, for the checks of the read-only
** profile (spec §2.1), which run only where every other group skips.
** Returns 1 when it does, 0 when it accepts them, -1 after failing the
** check. Unlike conf_remember it gives no verdict of its own: when no write
** has been tried yet it tries one (a record tagged with the run's token, so
** the clean-up removes it if it is taken) and notes the answer.
*/
int conf_probe_read_only(conf_ctx *cx);

/*
** The records recall returns for query (the given marker), keeping only
** those whose content contains it — so a server that pads a result with
** unrelated records is not confused with one that lost ours. NULL after
** failing the check.
*/
json_t *conf_find(conf_ctx *cx, const char *marker);

/* timeline {"where": {"cfm": marker}}, oldest first; NULL after failing. */
json_t *conf_timeline_of(conf_ctx *cx, const char *marker);

/* The record in records whose "id" is id, or NULL. */
json_t *conf_by_id(const json_t *records, const char *id);
/* The record in records whose content contains text, or NULL. */
json_t *conf_by_content(const json_t *records, const char *text);
/* Whether id (a JSON string) is one of ids. */
int conf_among(const json_t *ids, const json_t *id);

/* memory/recall or memory/timeline with params (stolen): the "records"
** array of the result, or NULL after failing the check. */
json_t *conf_recall(conf_ctx *cx, json_t *params);
json_t *conf_timeline(conf_ctx *cx, json_t *params);

/* The records carrying metadata cfm = marker, in the order given; kept. */
json_t *conf_tagged(conf_ctx *cx, const json_t *records, const char *marker);

/* Writes texts[0..n) in one batch, each tagged with cfm; returns the ids
** as conf_remember does. */
json_t *conf_write_batch(conf_ctx *cx, const char *cfm, const char *const *texts, size_t n);
/* Writes texts one call each, a tick apart, so their created_at differ;
** returns the ids, or NULL after failing (or skipping). */
json_t *conf_write_each(conf_ctx *cx, const char *cfm, const char *const *texts, size_t n);

/* Whether the contents of records are, in order, exactly texts[0..n);
** fails the check (naming what) when not. */
int conf_contents_are(conf_ctx *cx, const char *what, const json_t *records,
		      const char *const *texts, size_t n);
/* Whether records (NULL: a read that already failed) holds exactly n
** records; fails the check (naming what) when it holds another number. */
int conf_expect_count(conf_ctx *cx, const char *what, const json_t *records, size_t n);

/* Sleeps long enough that the next write gets a later millisecond. */
void conf_tick(void);

/* Wall-clock milliseconds since the epoch. */
int64_t conf_now_ms(void);

/* Parses an RFC 3339 timestamp as spec §3.3 writes it; 0 on success. */
int conf_parse_time(const char *text, int64_t *ms);

/* Whether s is "YYYY-MM-DDTHH:MM:SS.mmmZ", exactly (spec §3.3). */
int conf_is_wire_timestamp(const char *s);

#ifdef A2M_CONFORMANCE_INTERNAL
/*
** The runner's state, for suite.c, helpers.c and
** helpers_records.c only; a check sees conf_ctx through the functions
** above and never defines A2M_CONFORMANCE_INTERNAL.
*/

enum verdict { V_NONE, V_PASS, V_FAIL, V_SKIP };

struct conf_ctx {
	char **server_argv;
	const char *http_url;  /* --http: the endpoint; then server_argv is NULL */
	const char *token;     /* --token */
	const char *cacert;    /* --cacert */
	a2m_client *client;
	int timeout_ms;
	int verbose;

	json_t *describe;
	char describe_error[512];
	conf_limits limits;
	int read_only;    /* a write was refused with -32004 */
	int wrote;        /* a write was accepted */
	int lost;         /* the connection failed during the current check */
	int restart_failures;
	int scope_denied_expected; /* the current call is meant to get -32005 */

	char run[8];      /* the run's token: six consonants */
	unsigned seq;     /* markers handed out so far */

	enum verdict verdict;
	char detail[1024];

	json_t **kept;
	size_t n_kept, cap_kept;
	char **strs;
	size_t n_strs, cap_strs;

	/* What the server wrote on stdout that was not a JSON-RPC message. */
	size_t lines_received, lines_invalid;
	char first_invalid[320];

	unsigned passed, failed, skipped;
};

/* Releases what the check kept (conf_keep, conf_str); the runner calls it
** after each check. */
void conf_release_scratch(conf_ctx *cx);
/* Draws the run's token (cx->run) once, before the first check. */
void conf_make_run_token(conf_ctx *cx);
/* An error response as "error CODE (MESSAGE)", or resp shown whole when it
** is not one; kept. */
const char *conf_error_text(conf_ctx *cx, const json_t *resp);
#endif

#endif
