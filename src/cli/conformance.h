/*
** conformance.h — what a group of conformance checks is, and the helpers a
** check is written with.
**
** The suite is a list of groups (conformance.c), each a table of checks in
** one file per capability: conformance_rpc.c for the JSON-RPC envelope and
** the stdio framing, conformance_core.c for the core methods. To add the
** checks of a capability, write conformance_<cap>.c defining
**
**   static const conf_check checks[] = {
**           {"promote moves records to the named tier", check_promote_moves, NULL},
**           ...
**   };
**   const conf_group conf_group_<cap> = {"<cap>", "<cap>", checks,
**                                        CONF_COUNT(checks), 0};
**
** declare it below, and add it to the table in conformance.c. The runner
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
#ifndef A2M_CONFORMANCE_H
#define A2M_CONFORMANCE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "a2m_client.h"

/* Error codes of spec §7, for the checks' expectations. */
enum {
	CONF_PARSE_ERROR              = -32700,
	CONF_INVALID_REQUEST          = -32600,
	CONF_METHOD_NOT_FOUND         = -32601,
	CONF_INVALID_PARAMS           = -32602,
	CONF_CAPABILITY_NOT_SUPPORTED = -32003,
	CONF_READ_ONLY                = -32004,
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

/* The groups, defined in their files and listed in conformance.c. */
extern const conf_group conf_group_rpc;
extern const conf_group conf_group_stdio;
extern const conf_group conf_group_describe;
extern const conf_group conf_group_remember;
extern const conf_group conf_group_recall;
extern const conf_group conf_group_timeline;
extern const conf_group conf_group_forget;
/* groups A (tiers, salience, scopes, sessions, keys): declarations below */
/* groups B (embeddings, external, events, summarize, prompt, read-only): declarations below */

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

/* ---- talking to the server ---- */

/*
** Sends a request (params stolen, NULL for none) and returns the whole
** response, or NULL after failing the check when there was none (timeout,
** server gone).
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

/* Sleeps long enough that the next write gets a later millisecond. */
void conf_tick(void);

/* Wall-clock milliseconds since the epoch. */
int64_t conf_now_ms(void);

/* Parses an RFC 3339 timestamp as spec §3.3 writes it; 0 on success. */
int conf_parse_time(const char *text, int64_t *ms);

#endif
