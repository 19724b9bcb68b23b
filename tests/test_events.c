/*
** test_events.c — unit tests of the event log (src/events/event_log.c): the cursor
** rules of spec §4.12 and DECISIONS 026, read straight from the log without
** a server in front of it.
*/
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "events/event_log.h"
#include "events/shared.h"
#include "pg_helper.h"
#include "util/json_write.h"

/* 2026-07-28T10:15:30.123Z */
#define AT 1785233730123LL

/*
** The logs under test: a server's own (the ring), or, with shared_mode
** set, one kept in a PostgreSQL store (events/shared.c), each in a schema
** of its own on the test server (tests/pg_helper.h), as a deployment.
*/
static int shared_mode;
#define MAX_LOGS 4
static struct {
	a2m_event_log *log;
	a2m_store     *store;
	char           schema[64];
} logs[MAX_LOGS];

static a2m_event_log *new_log(size_t capacity)
{
	if (!shared_mode)
		return a2m_event_log_new(capacity);
	for (int i = 0; i < MAX_LOGS; i++) {
		if (logs[i].log)
			continue;
		char err[256];
		a2m_postgres_options po = {.schema = logs[i].schema};
		if (pg_test_schema_new(logs[i].schema, sizeof logs[i].schema) != 0 ||
		    a2m_store_postgres_open(pg_test_server(), &po, &logs[i].store, err,
					    sizeof err) != 0) {
			fprintf(stderr, "  postgres: %s\n", err);
			return NULL;
		}
		logs[i].log = a2m_event_log_new_shared(logs[i].store, capacity);
		return logs[i].log;
	}
	return NULL;
}

static void free_log(a2m_event_log *log)
{
	a2m_event_log_free(log);
	for (int i = 0; shared_mode && i < MAX_LOGS; i++)
		if (logs[i].log == log) {
			logs[i].store->ops->close(logs[i].store);
			pg_test_schema_drop(logs[i].schema);
			memset(&logs[i], 0, sizeof logs[i]);
		}
}

/* Appends c: in a shared log, written at once (a2m_events_settle's flush). */
static int appended(a2m_event_log *log, const a2m_change *c)
{
	if (!shared_mode)
		return a2m_event_log_append(log, c) != NULL;
	a2m_event_log_append(log, c);
	return a2m_event_shared_flush(a2m_event_log_shared(log)) == 0;
}

/* Appends one `written` event for a record with this id and owner. */
static void append_written(a2m_event_log *log, const char *id, const char *owner, int shared)
{
	a2m_record r = {.id = (char *)id, .tier = "episodic", .owner = (char *)owner};
	a2m_change c = {.kind = A2M_CHANGE_WRITTEN, .at = AT, .rec = &r, .owner = owner,
			.shared = shared};
	CHECK(appended(log, &c));
}

/* Appends n written events named "<prefix><first>".."<prefix><first+n-1>". */
static void append_many(a2m_event_log *log, const char *prefix, int first, int n)
{
	for (int i = first; i < first + n; i++) {
		char id[32];
		snprintf(id, sizeof id, "%s%d", prefix, i);
		append_written(log, id, NULL, 1);
	}
}

/* Reads and returns the result; NULL (and a failed check) on error. */
static json_t *poll_log(a2m_event_log *log, const char *cursor, size_t limit,
			const json_t *kinds, const a2m_scope *scope)
{
	json_t *res = NULL;
	a2m_error err = {0};
	CHECK_INT(a2m_event_log_read(log, cursor, limit, kinds, scope, &res, &err), 0);
	a2m_error_clear(&err);
	return res;
}

/* The ids of the events of a result, joined by commas ("" when none). */
static const char *ids_of(const json_t *res)
{
	static char out[1024];
	size_t i, at = 0;
	json_t *ev;
	out[0] = '\0';
	json_array_foreach(json_object_get(res, "events"), i, ev) {
		const char *id = json_string_value(json_object_get(ev, "id"));
		at += (size_t)snprintf(out + at, sizeof out - at, "%s%s", i ? "," : "",
				       id ? id : json_string_value(json_object_get(ev, "kind")));
	}
	return out;
}

/* The cursor of a result, copied (caller frees). */
static char *cursor_of(const json_t *res)
{
	const char *c = json_string_value(json_object_get(res, "cursor"));
	return c ? strdup(c) : NULL;
}

/* The cursor this log would issue for seq, built from one it issued. */
static char *cursor_at(a2m_event_log *log, unsigned long long seq)
{
	json_t *res = poll_log(log, NULL, 0, NULL, NULL);
	const char *head = json_string_value(json_object_get(res, "cursor"));
	const char *dot = head ? strrchr(head, '.') : NULL;
	char *out = NULL;
	if (dot) {
		size_t keep = (size_t)(dot - head) + 1;
		out = malloc(keep + 24);
		if (out) {
			memcpy(out, head, keep);
			snprintf(out + keep, 24, "%llu", seq);
		}
	}
	json_decref(res);
	return out;
}

static int flag(const json_t *res, const char *name)
{
	return json_is_true(json_object_get(res, name));
}

static void test_absent_cursor_returns_head_and_no_events(void)
{
	a2m_event_log *log = new_log(8);
	append_many(log, "r", 1, 3);
	json_t *res = poll_log(log, NULL, 0, NULL, NULL);
	CHECK_INT(json_array_size(json_object_get(res, "events")), 0);
	CHECK_INT(json_object_size(res), 2);
	char *head = cursor_of(res);
	char *want = cursor_at(log, 3);
	CHECK_STR(head, want);
	json_decref(res);
	/* From now on, only what happens next. */
	res = poll_log(log, head, 0, NULL, NULL);
	CHECK_STR(ids_of(res), "");
	CHECK_INT(flag(res, "reset"), 0);
	CHECK_STR(json_string_value(json_object_get(res, "cursor")), head);
	json_decref(res);
	append_written(log, "r4", NULL, 1);
	res = poll_log(log, head, 0, NULL, NULL);
	CHECK_STR(ids_of(res), "r4");
	json_decref(res);
	free(want);
	free(head);
	free_log(log);
}

static void test_cursor_format_is_salted_and_names_seq(void)
{
	a2m_event_log *log = new_log(4);
	json_t *res = poll_log(log, NULL, 0, NULL, NULL);
	const char *c = json_string_value(json_object_get(res, "cursor"));
	/* "c1." + 16 hex digits + ".0" */
	CHECK_INT(c ? strlen(c) : 0, 21);
	CHECK_INT(c && strncmp(c, "c1.", 3) == 0, 1);
	CHECK_INT(c ? strspn(c + 3, "0123456789abcdef") : 0, 16);
	CHECK_STR(c ? c + 19 : NULL, ".0");
	json_decref(res);
	free_log(log);
}

static void test_polls_see_every_event_once_in_order(void)
{
	a2m_event_log *log = new_log(64);
	json_t *res = poll_log(log, NULL, 0, NULL, NULL);
	char *cursor = cursor_of(res);
	json_decref(res);
	append_many(log, "r", 1, 10);
	char seen[1024] = "";
	int polls = 0, mores = 0, appended = 10;
	for (;;) {
		res = poll_log(log, cursor, 3, NULL, NULL);
		CHECK_INT(flag(res, "reset"), 0);
		const char *ids = ids_of(res);
		size_t at = strlen(seen);
		if (*ids)
			snprintf(seen + at, sizeof seen - at, "%s%s", at ? "," : "", ids);
		mores += flag(res, "more");
		int more = flag(res, "more");
		free(cursor);
		cursor = cursor_of(res);
		json_decref(res);
		polls++;
		/* Writes keep arriving between polls. */
		if (appended < 20) {
			append_many(log, "r", appended + 1, 5);
			appended += 5;
		} else if (!more || polls == 50) {
			break;  /* 50: a cursor that stopped advancing must fail, not hang */
		}
	}
	CHECK_STR(seen, "r1,r2,r3,r4,r5,r6,r7,r8,r9,r10,r11,r12,r13,r14,r15,r16,r17,r18,r19,r20");
	CHECK_INT(polls, 7);
	CHECK_INT(mores, 6);
	free(cursor);
	free_log(log);
}

static void test_more_points_just_after_last_returned(void)
{
	a2m_event_log *log = new_log(16);
	char *start = cursor_at(log, 0);
	append_many(log, "r", 1, 5);
	json_t *res = poll_log(log, start, 2, NULL, NULL);
	CHECK_STR(ids_of(res), "r1,r2");
	CHECK_INT(flag(res, "more"), 1);
	char *want = cursor_at(log, 2);
	CHECK_STR(json_string_value(json_object_get(res, "cursor")), want);
	free(want);
	char *next = cursor_of(res);
	json_decref(res);
	res = poll_log(log, next, 3, NULL, NULL);
	CHECK_STR(ids_of(res), "r3,r4,r5");
	/* Exactly limit left: nothing remains, so no `more`. */
	CHECK_INT(json_object_get(res, "more") == NULL, 1);
	want = cursor_at(log, 5);
	CHECK_STR(json_string_value(json_object_get(res, "cursor")), want);
	free(want);
	json_decref(res);
	free(next);
	free(start);
	free_log(log);
}

static void test_limit_zero_reads_every_retained(void)
{
	a2m_event_log *log = new_log(8);
	char *start = cursor_at(log, 0);
	append_many(log, "r", 1, 6);
	json_t *res = poll_log(log, start, 0, NULL, NULL);
	CHECK_STR(ids_of(res), "r1,r2,r3,r4,r5,r6");
	CHECK_INT(json_object_size(res), 2);
	json_decref(res);
	free(start);
	free_log(log);
}

static void test_foreign_salt_resets_to_oldest(void)
{
	a2m_event_log *a = new_log(8), *b = new_log(8);
	append_many(a, "a", 1, 2);
	append_many(b, "b", 1, 3);
	/* A cursor of another log (another server, or a previous run) at a
	** position b also has must not be read as that position. */
	char *foreign = cursor_at(a, 1);
	json_t *res = poll_log(b, foreign, 0, NULL, NULL);
	CHECK_INT(flag(res, "reset"), 1);
	CHECK_STR(ids_of(res), "b1,b2,b3");
	char *want = cursor_at(b, 3);
	CHECK_STR(json_string_value(json_object_get(res, "cursor")), want);
	free(want);
	json_decref(res);
	free(foreign);
	free_log(a);
	free_log(b);
}

static void test_garbage_cursor_resets(void)
{
	a2m_event_log *log = new_log(8);
	append_many(log, "r", 1, 2);
	char *good = cursor_at(log, 1);
	char bad[6][96];
	snprintf(bad[0], sizeof bad[0], "%s", "not a cursor");
	snprintf(bad[1], sizeof bad[1], "%s", "");
	snprintf(bad[2], sizeof bad[2], "%.*sx", (int)strlen(good) - 1, good);   /* seq "x" */
	snprintf(bad[3], sizeof bad[3], "%s ", good);                             /* trailing junk */
	snprintf(bad[4], sizeof bad[4], "%.*s99999999999999999999999", (int)strlen(good) - 1, good);
	snprintf(bad[5], sizeof bad[5], "c2%s", good + 2);                        /* version */
	for (int i = 0; i < 6; i++) {
		json_t *res = poll_log(log, bad[i], 0, NULL, NULL);
		CHECK_INT(flag(res, "reset"), 1);
		CHECK_STR(ids_of(res), "r1,r2");
		json_decref(res);
	}
	json_t *res = poll_log(log, good, 0, NULL, NULL);
	CHECK_INT(json_object_get(res, "reset") == NULL, 1);
	CHECK_STR(ids_of(res), "r2");
	json_decref(res);
	free(good);
	free_log(log);
}

static void test_evicted_cursor_resets_to_oldest_retained(void)
{
	a2m_event_log *log = new_log(4);
	CHECK_INT(a2m_event_log_capacity(log), 4);
	char *start = cursor_at(log, 0);
	append_many(log, "r", 1, 10);
	/* r1..r6 were evicted: a cursor before r7 may have missed some. */
	json_t *res = poll_log(log, start, 0, NULL, NULL);
	CHECK_INT(flag(res, "reset"), 1);
	CHECK_STR(ids_of(res), "r7,r8,r9,r10");
	char *want = cursor_at(log, 10);
	CHECK_STR(json_string_value(json_object_get(res, "cursor")), want);
	free(want);
	json_decref(res);
	/* A reset read honours limit like any other. */
	res = poll_log(log, start, 3, NULL, NULL);
	CHECK_INT(flag(res, "reset"), 1);
	CHECK_INT(flag(res, "more"), 1);
	CHECK_STR(ids_of(res), "r7,r8,r9");
	json_decref(res);
	/* Just before the window: nothing after it was lost. */
	char *edge = cursor_at(log, 6);
	res = poll_log(log, edge, 0, NULL, NULL);
	CHECK_INT(json_object_get(res, "reset") == NULL, 1);
	CHECK_STR(ids_of(res), "r7,r8,r9,r10");
	json_decref(res);
	char *lost = cursor_at(log, 5);
	res = poll_log(log, lost, 0, NULL, NULL);
	CHECK_INT(flag(res, "reset"), 1);
	CHECK_STR(ids_of(res), "r7,r8,r9,r10");
	json_decref(res);
	free(lost);
	free(edge);
	free(start);
	free_log(log);
}

static void test_future_cursor_resets(void)
{
	a2m_event_log *log = new_log(8);
	append_many(log, "r", 1, 3);
	char *future = cursor_at(log, 4);
	json_t *res = poll_log(log, future, 0, NULL, NULL);
	CHECK_INT(flag(res, "reset"), 1);
	CHECK_STR(ids_of(res), "r1,r2,r3");
	json_decref(res);
	free(future);
	free_log(log);
}

/* One event of every kind, in this order. */
static void append_each_kind(a2m_event_log *log)
{
	static const char *const ids[] = {"x1", "x2"};
	a2m_record r = {.id = "w1", .tier = "semantic", .session = "s1", .key = "user/city",
			.revision = 2};
	a2m_change c[5] = {
		{.kind = A2M_CHANGE_WRITTEN, .at = AT, .rec = &r, .shared = 1},
		{.kind = A2M_CHANGE_FORGOTTEN, .at = AT, .ids = ids, .n_ids = 2, .count = 2,
		 .shared = 1},
		{.kind = A2M_CHANGE_PROMOTED, .at = AT, .ids = ids, .n_ids = 1, .tier = "semantic",
		 .shared = 1},
		{.kind = A2M_CHANGE_CONSOLIDATED, .at = AT,
		 .cons = {.moved = 3, .promoted = 1, .dropped = 2, .summarized = 0}, .shared = 1},
		{.kind = A2M_CHANGE_SESSION_CLOSED, .at = AT, .session = "s1", .shared = 1},
	};
	for (int i = 0; i < 5; i++)
		CHECK(appended(log, &c[i]));
}

static void test_event_objects_match_the_spec(void)
{
	a2m_event_log *log = new_log(8);
	char *start = cursor_at(log, 0);
	append_each_kind(log);
	append_written(log, "w2", NULL, 1);
	json_t *res = poll_log(log, start, 0, NULL, NULL);
	json_t *events = json_object_get(res, "events");
	static const char *const want[] = {
		"{\"kind\":\"written\",\"at\":\"2026-07-28T10:15:30.123Z\",\"id\":\"w1\","
		"\"tier\":\"semantic\",\"session\":\"s1\",\"key\":\"user/city\",\"revision\":2}",
		"{\"kind\":\"forgotten\",\"at\":\"2026-07-28T10:15:30.123Z\",\"count\":2,"
		"\"ids\":[\"x1\",\"x2\"]}",
		"{\"kind\":\"promoted\",\"at\":\"2026-07-28T10:15:30.123Z\",\"ids\":[\"x1\"],"
		"\"tier\":\"semantic\"}",
		"{\"kind\":\"consolidated\",\"at\":\"2026-07-28T10:15:30.123Z\",\"moved\":3,"
		"\"promoted\":1,\"dropped\":2,\"summarized\":0}",
		"{\"kind\":\"session_closed\",\"at\":\"2026-07-28T10:15:30.123Z\",\"session\":\"s1\"}",
		/* No session and no key: absent, not null. */
		"{\"kind\":\"written\",\"at\":\"2026-07-28T10:15:30.123Z\",\"id\":\"w2\","
		"\"tier\":\"episodic\",\"revision\":0}",
	};
	CHECK_INT(json_array_size(events), 6);
	for (size_t i = 0; i < 6; i++) {
		char *text = a2m_json_write(json_array_get(events, i), NULL);
		CHECK_STR(text, want[i]);
		free(text);
	}
	json_decref(res);
	free(start);
	free_log(log);
}

static void test_kinds_filter_and_cursor_reaches_head(void)
{
	a2m_event_log *log = new_log(8);
	char *start = cursor_at(log, 0);
	append_each_kind(log);
	json_t *kinds = json_pack("[ss]", "session_closed", "forgotten");
	json_t *res = poll_log(log, start, 0, kinds, NULL);
	CHECK_STR(ids_of(res), "forgotten,session_closed");
	char *want = cursor_at(log, 5);
	CHECK_STR(json_string_value(json_object_get(res, "cursor")), want);
	json_decref(res);
	/* Only unwanted kinds after the cursor: none returned, still advanced. */
	json_t *only = json_pack("[s]", "promoted");
	char *after = cursor_at(log, 3);
	res = poll_log(log, after, 0, only, NULL);
	CHECK_STR(ids_of(res), "");
	CHECK_STR(json_string_value(json_object_get(res, "cursor")), want);
	json_decref(res);
	/* An empty list filters nothing, as an empty `where` does. */
	json_t *none = json_array();
	res = poll_log(log, start, 0, none, NULL);
	CHECK_STR(ids_of(res), "w1,forgotten,promoted,consolidated,session_closed");
	json_decref(res);
	json_decref(none);
	json_decref(only);
	json_decref(kinds);
	free(after);
	free(want);
	free(start);
	free_log(log);
}

static void test_scope_sees_own_and_shared_only(void)
{
	a2m_event_log *log = new_log(16);
	char *start = cursor_at(log, 0);
	append_written(log, "a1", "alice", 0);
	append_written(log, "b1", "bob", 0);
	append_written(log, "s1", "bob", 1);
	append_written(log, "n1", NULL, 0);
	a2m_scope alice = {.scoped = 1, .owner = "alice"};
	a2m_scope nobody = {.scoped = 1, .owner = NULL};
	a2m_scope unscoped = {.scoped = 0, .owner = "alice"};
	json_t *res = poll_log(log, start, 0, NULL, &alice);
	CHECK_STR(ids_of(res), "a1,s1");
	json_decref(res);
	res = poll_log(log, start, 0, NULL, &nobody);
	CHECK_STR(ids_of(res), "s1,n1");
	json_decref(res);
	res = poll_log(log, start, 0, NULL, &unscoped);
	CHECK_STR(ids_of(res), "a1,b1,s1,n1");
	json_decref(res);
	res = poll_log(log, start, 0, NULL, NULL);
	CHECK_STR(ids_of(res), "a1,b1,s1,n1");
	json_decref(res);
	free(start);
	free_log(log);
}

static void test_scoped_cursor_advances_past_filtered_events(void)
{
	a2m_event_log *log = new_log(16);
	char *cursor = cursor_at(log, 0);
	a2m_scope alice = {.scoped = 1, .owner = "alice"};
	append_written(log, "b1", "bob", 0);
	append_written(log, "a1", "alice", 0);
	append_written(log, "b2", "bob", 0);
	append_written(log, "a2", "alice", 0);
	append_written(log, "b3", "bob", 0);
	json_t *res = poll_log(log, cursor, 1, NULL, &alice);
	CHECK_STR(ids_of(res), "a1");
	CHECK_INT(flag(res, "more"), 1);
	/* Past b2, which alice may not see, up to a2, which did not fit. */
	char *want = cursor_at(log, 3);
	CHECK_STR(json_string_value(json_object_get(res, "cursor")), want);
	free(want);
	free(cursor);
	cursor = cursor_of(res);
	json_decref(res);
	res = poll_log(log, cursor, 1, NULL, &alice);
	CHECK_STR(ids_of(res), "a2");
	CHECK_INT(json_object_get(res, "more") == NULL, 1);
	want = cursor_at(log, 5);
	CHECK_STR(json_string_value(json_object_get(res, "cursor")), want);
	free(want);
	free(cursor);
	cursor = cursor_of(res);
	json_decref(res);
	append_written(log, "b4", "bob", 0);
	append_written(log, "a3", "alice", 0);
	res = poll_log(log, cursor, 1, NULL, &alice);
	CHECK_STR(ids_of(res), "a3");
	CHECK_INT(json_object_get(res, "reset") == NULL, 1);
	json_decref(res);
	free(cursor);
	free_log(log);
}

/* 1 when scope is shown anything of ev under kinds, else 0. */
static int viewed(a2m_event *ev, const a2m_scope *scope, const json_t *kinds)
{
	int oom = 0;
	json_t *v = a2m_event_view(ev, scope, kinds, &oom);
	CHECK_INT(oom, 0);
	json_decref(v);
	return v != NULL;
}

static void test_wanted_applies_scope_then_kinds(void)
{
	a2m_event_log *log = a2m_event_log_new(2);
	append_written(log, "a1", "alice", 0);
	a2m_event *ev = NULL;
	/* The borrowed event of the last append. */
	a2m_record r = {.id = "a2", .tier = "episodic", .owner = "alice"};
	a2m_change c = {.kind = A2M_CHANGE_WRITTEN, .at = AT, .rec = &r, .owner = "alice"};
	ev = a2m_event_log_append(log, &c);
	CHECK(ev != NULL);
	if (!ev) {
		a2m_event_log_free(log);
		return;
	}
	CHECK_INT(ev->seq, 2);
	CHECK_STR(ev->owner, "alice");
	CHECK_INT(ev->shared, 0);
	a2m_scope alice = {.scoped = 1, .owner = "alice"}, bob = {.scoped = 1, .owner = "bob"};
	json_t *written = json_pack("[s]", "written"), *other = json_pack("[s]", "forgotten");
	CHECK_INT(viewed(ev, &alice, NULL), 1);
	CHECK_INT(viewed(ev, &alice, written), 1);
	CHECK_INT(viewed(ev, &alice, other), 0);
	CHECK_INT(viewed(ev, &bob, written), 0);
	CHECK_INT(viewed(ev, NULL, written), 1);
	json_decref(written);
	json_decref(other);
	a2m_event_log_free(log);
}

/* The view of ev for scope, as compact JSON without "at" ("-" when none). */
static const char *view_text(a2m_event *ev, const a2m_scope *scope)
{
	static char out[512];
	int oom = 0;
	json_t *v = a2m_event_view(ev, scope, NULL, &oom);
	CHECK_INT(oom, 0);
	if (!v)
		return "-";
	json_t *shown = json_copy(v);
	json_decref(v);
	json_object_del(shown, "at");
	char *text = json_dumps(shown, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(shown);
	snprintf(out, sizeof out, "%s", text ? text : "?");
	free(text);
	return out;
}

/*
** A forget by an unscoped caller removing records of several owners: each
** scoped reader sees only the ids it could have recalled, and the count of
** those; an owner with none of them sees nothing; unscoped sees it whole.
*/
static void test_forget_of_many_owners_is_cut_per_reader(void)
{
	a2m_event_log *log = a2m_event_log_new(4);
	const char *ids[] = {"a1", "b1", "s1", "a2", "n1"};
	const a2m_audience aud[] = {
		{"alice", 0}, {"bob", 0}, {"bob", 1}, {"alice", 0}, {NULL, 0}};
	a2m_change c = {.kind = A2M_CHANGE_FORGOTTEN, .at = AT, .ids = ids, .audience = aud,
			.n_ids = 5, .count = 5, .shared = 1};
	a2m_event *ev = a2m_event_log_append(log, &c);
	CHECK(ev != NULL);
	if (!ev) {
		a2m_event_log_free(log);
		return;
	}
	a2m_scope alice = {.scoped = 1, .owner = "alice"}, bob = {.scoped = 1, .owner = "bob"},
		  carol = {.scoped = 1, .owner = "carol"}, nobody = {.scoped = 1, .owner = NULL};
	CHECK_STR(view_text(ev, &alice), "{\"count\":3,\"ids\":[\"a1\",\"s1\",\"a2\"],"
					  "\"kind\":\"forgotten\"}");
	CHECK_STR(view_text(ev, &bob), "{\"count\":2,\"ids\":[\"b1\",\"s1\"],"
					"\"kind\":\"forgotten\"}");
	CHECK_STR(view_text(ev, &carol), "{\"count\":1,\"ids\":[\"s1\"],"
					  "\"kind\":\"forgotten\"}");
	CHECK_STR(view_text(ev, &nobody), "{\"count\":2,\"ids\":[\"s1\",\"n1\"],"
					   "\"kind\":\"forgotten\"}");
	CHECK_STR(view_text(ev, NULL), "{\"count\":5,\"ids\":[\"a1\",\"b1\",\"s1\",\"a2\","
				       "\"n1\"],\"kind\":\"forgotten\"}");
	/* The log's own object is untouched by the views cut from it. */
	CHECK_INT((long long)json_array_size(json_object_get(ev->obj, "ids")), 5);

	/* A promotion naming only bob's private records is invisible to alice,
	** and a poll of hers passes it without returning it. */
	const char *pids[] = {"b7"};
	const a2m_audience paud[] = {{"bob", 0}};
	a2m_change p = {.kind = A2M_CHANGE_PROMOTED, .at = AT, .ids = pids, .audience = paud,
			.n_ids = 1, .tier = "semantic", .shared = 1};
	ev = a2m_event_log_append(log, &p);
	CHECK(ev != NULL);
	if (ev) {
		CHECK_STR(view_text(ev, &alice), "-");
		CHECK_STR(view_text(ev, &bob), "{\"ids\":[\"b7\"],\"kind\":\"promoted\","
						"\"tier\":\"semantic\"}");
	}
	json_t *res = poll_log(log, "", 0, NULL, &alice);
	CHECK_STR(ids_of(res), "forgotten");
	CHECK_INT((long long)json_integer_value(json_object_get(
			  json_array_get(json_object_get(res, "events"), 0), "count")), 3);
	json_decref(res);
	a2m_event_log_free(log);
}

/*
** A written event's object is built on its first view, once: a reader
** filtering it out by kind builds nothing, and two readers share the one
** object, whose fields are the record's as it was written.
*/
static void test_written_object_built_once_when_first_read(void)
{
	a2m_event_log *log = a2m_event_log_new(4);
	a2m_record r = {.id = "w9", .tier = "working", .session = "s2", .key = "k/1",
			.revision = 3};
	a2m_change c = {.kind = A2M_CHANGE_WRITTEN, .at = AT, .rec = &r, .shared = 1};
	a2m_event *ev = a2m_event_log_append(log, &c);
	CHECK(ev != NULL && ev->obj == NULL && ev->written != NULL);
	/* The change's record is the caller's: the event keeps copies. */
	r.id = "changed";
	r.tier = NULL;
	json_t *forgotten_only = json_pack("[s]", "forgotten");
	int oom = 0;
	CHECK(a2m_event_view(ev, NULL, forgotten_only, &oom) == NULL && !oom);
	CHECK(ev->obj == NULL);
	json_t *a = a2m_event_view(ev, NULL, NULL, &oom);
	json_t *b = a2m_event_view(ev, NULL, NULL, &oom);
	CHECK(a != NULL && a == b && ev->written == NULL);
	char *text = a2m_json_write(a, NULL);
	CHECK_STR(text, "{\"kind\":\"written\",\"at\":\"2026-07-28T10:15:30.123Z\",\"id\":\"w9\","
		  "\"tier\":\"working\",\"session\":\"s2\",\"key\":\"k/1\",\"revision\":3}");
	free(text);
	json_decref(a);
	json_decref(b);
	json_decref(forgotten_only);
	a2m_event_log_free(log);
}

int main(void)
{
	static const test_case tests[] = {
		TEST(test_absent_cursor_returns_head_and_no_events),
		TEST(test_cursor_format_is_salted_and_names_seq),
		TEST(test_polls_see_every_event_once_in_order),
		TEST(test_more_points_just_after_last_returned),
		TEST(test_limit_zero_reads_every_retained),
		TEST(test_foreign_salt_resets_to_oldest),
		TEST(test_garbage_cursor_resets),
		TEST(test_evicted_cursor_resets_to_oldest_retained),
		TEST(test_future_cursor_resets),
		TEST(test_event_objects_match_the_spec),
		TEST(test_kinds_filter_and_cursor_reaches_head),
		TEST(test_scope_sees_own_and_shared_only),
		TEST(test_scoped_cursor_advances_past_filtered_events),
		{NULL, NULL}
	};
	/* What a ring keeps per event, looked at directly. */
	static const test_case ring[] = {
		TEST(test_wanted_applies_scope_then_kinds),
		TEST(test_forget_of_many_owners_is_cut_per_reader),
		TEST(test_written_object_built_once_when_first_read),
		{NULL, NULL}
	};
	printf("# a server's own log\n");
	int rc = run_tests(tests) | run_tests(ring);
	if (pg_test_server()) {
		printf("# a log kept in PostgreSQL\n");
		shared_mode = 1;
		rc |= run_tests(tests);
	} else {
		printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
	}
	return rc;
}
