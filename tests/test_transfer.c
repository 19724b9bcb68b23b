/*
** test_transfer.c — export and import (server/transfer.h, stack/transfer.c):
** a store written out and read back, memory → SQLite → memory (and
** through PostgreSQL), compared
** field by field; importing twice changes nothing; what happens to an id
** that exists, a key another id holds, a tier or a width the target does
** not have, a bad line; capacity kept and events told as for any write;
** a key's revisions memory → SQLite → PostgreSQL → memory with their record;
** the MCP memory server's graph; recall's touch: false.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "check_a2m.h"
#include "pg_helper.h"
#include "server/transfer.h"
#include "util/buf.h"

/* Named per process (main), so two runs at once never share a file. */
static char db_path[64], db2_path[64];
#define DB  db_path
#define DB2 db2_path

/* Removes a test database and its procedural mirror (DB's <name>.procedural/). */
static void drop_db(const char *path)
{
	char cmd[512];
	check_remove_db(path);
	snprintf(cmd, sizeof cmd, "rm -rf '%.*s.procedural'", (int)(strlen(path) - 3), path);
	CHECK_INT(system(cmd), 0);
}

/* The store's export as text (free with free()); the header is line 1. */
static char *export_text(a2m *h)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int64_t n = 0;
	char err[256] = "";
	CHECK(f != NULL);
	a2m_export_source src = {NULL};
	CHECK_INT(a2m_export(h, f, &src, NULL, &n, err, sizeof err), 0);
	fclose(f);
	if (err[0])
		fprintf(stderr, "  export: %s\n", err);
	return text;
}

/* The text after the header line: the records. */
static const char *records_of(const char *text)
{
	const char *nl = text ? strchr(text, '\n') : NULL;
	return nl ? nl + 1 : "";
}

/* Imports text into h; returns a2m_import's answer, fills *res and err. */
static int import_text(a2m *h, const char *text, size_t batch, a2m_import_result *res, char *err,
		       size_t errlen)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	a2m_import_options opt = {.name = "test", .batch = batch};
	int rc = a2m_import(h, f, &opt, NULL, res, err, errlen);
	fclose(f);
	return rc;
}

/* Imports text expecting success; returns how many were imported. */
static int64_t import_ok(a2m *h, const char *text, a2m_import_result *res)
{
	char err[512] = "";
	int rc = import_text(h, text, 0, res, err, sizeof err);
	CHECK_INT(rc, 0);
	if (rc)
		fprintf(stderr, "  import: %s\n", err);
	return res->imported;
}

static void call_ok(a2m *h, const char *method, const char *params)
{
	json_t *r = check_call(h, method, "%s", params);
	CHECK_INT(check_error_code(r), 0);
	json_decref(r);
}

/* A store with one of everything: sessions, keys rewritten, metadata of
** every JSON type, vectors, owners, groups, external records, access counts. */
static void fill(a2m *h)
{
	call_ok(h, "memory/remember", "{\"records\":["
		"{\"content\":\"first turn\",\"session\":\"s1\",\"role\":\"user\",\"owner\":\"ann\"},"
		"{\"content\":\"the answer\",\"session\":\"s1\",\"role\":\"assistant\",\"group\":\"t1\","
		" \"metadata\":{\"z\":1,\"a\":[0.1,-2.5e-300,true,null,\"\\u00e9\\u4e2d\"],\"n\":{\"deep\":{\"x\":9007199254740993}}}},"
		"{\"content\":\"tool result\",\"session\":\"s1\",\"role\":\"tool\",\"group\":\"t1\"},"
		"{\"content\":\"a fact with a vector\",\"tier\":\"semantic\",\"salience\":2.75,"
		" \"embedding\":[0.1,0.2,0.30000000000000004],\"key\":\"facts/v\"},"
		"{\"content\":\"\",\"uri\":\"https://example.com/doc.pdf\",\"media_type\":\"application/pdf\",\"tier\":\"semantic\"},"
		"{\"content\":\"how to deploy\",\"tier\":\"procedural\",\"key\":\"skills/deploy\",\"owner\":\"bob\"},"
		"{\"content\":\"<script>alert(1)</script>\",\"tier\":\"episodic\",\"salience\":-3}]}");
	/* A key rewritten (revision 1) and recalls (access counts, accessed_at). */
	call_ok(h, "memory/remember", "{\"records\":[{\"content\":\"a fact, corrected\",\"key\":\"facts/v\","
		"\"tier\":\"semantic\",\"embedding\":[0.3,0.2,0.1]}]}");
	call_ok(h, "memory/recall", "{\"query\":\"fact corrected\"}");
	call_ok(h, "memory/recall", "{\"query\":\"deploy\"}");
}

/* Compares two exports record by record, field by field. */
static void same_records(const char *a, const char *b, const char *what)
{
	const char *pa = records_of(a), *pb = records_of(b);
	int line = 0;
	while (*pa || *pb) {
		line++;
		const char *ea = strchr(pa, '\n'), *eb = strchr(pb, '\n');
		if (!ea || !eb) {
			CHECK(ea == NULL && eb == NULL);
			break;
		}
		json_t *ra = json_loadb(pa, (size_t)(ea - pa), 0, NULL);
		json_t *rb = json_loadb(pb, (size_t)(eb - pb), 0, NULL);
		CHECK(ra && rb);
		const char *k;
		json_t *v;
		/* Every field of the one is in the other, equal; and no more. */
		json_object_foreach(ra, k, v) {
			if (!json_equal(v, json_object_get(rb, k))) {
				fprintf(stderr, "  %s: record %d: field %s differs\n", what, line, k);
				check_failures_in_test++;
			}
		}
		CHECK_INT(json_object_size(ra), json_object_size(rb));
		json_decref(ra);
		json_decref(rb);
		/* And byte for byte: metadata key order, reals' spelling. */
		CHECK((ea - pa) == (eb - pb) && memcmp(pa, pb, (size_t)(ea - pa)) == 0);
		pa = ea + 1;
		pb = eb + 1;
	}
}

/* A durable store of engine ("sqlite": DB; "postgres": the test schema). */
static char pg_schema[64], pg_conninfo[512];

static a2m *open_durable(const char *engine)
{
	int pg = strcmp(engine, "postgres") == 0;
	return check_open("engine", engine, "path", DB, "postgres", pg ? pg_conninfo : NULL, NULL);
}

/* memory -> engine -> memory: every field survives, through the protocol too. */
static void round_trip(const char *engine)
{
	char label[64], header[64];
	drop_db(DB);
	if (strcmp(engine, "postgres") == 0)
		pg_test_schema_fresh(pg_schema);
	snprintf(label, sizeof label, "memory -> %s", engine);
	snprintf(header, sizeof header, "\"engine\":\"%s\"", engine);
	a2m *src = check_open("engine", "memory", NULL);
	fill(src);
	char *a = export_text(src);
	/* Every field is in the file, the header first. */
	CHECK(strncmp(a, "{\"format\":\"a2m-export\",\"version\":2,", 35) == 0);
	/* The key's earlier revision (x-history) on a line of its own. */
	CHECK(strstr(records_of(a), "{\"kind\":\"revision\",\"id\":") != NULL);
	CHECK(strstr(records_of(a), "\"revision\":0,\"content\":\"a fact with a vector\"") != NULL);
	CHECK(strstr(a, "\"records\":7,") != NULL);
	CHECK(strstr(records_of(a), "\"revision\":1") != NULL);
	CHECK(strstr(records_of(a), "\"embedding\":[0.3,0.2,0.1]") != NULL);
	CHECK(strstr(records_of(a), "\"access_count\":1,\"accessed_at\":") != NULL);
	CHECK(strstr(records_of(a), "\"owner\":\"bob\"") != NULL);
	CHECK(strstr(records_of(a), "9007199254740993") != NULL);

	a2m *db = open_durable(engine);
	a2m_import_result res;
	CHECK_INT(import_ok(db, a, &res), 7);
	a2m_import_result_free(&res);
	a2m_close(db);
	/* Read back from the store, by a new process's worth of handle. */
	db = open_durable(engine);
	char *b = export_text(db);
	same_records(a, b, label);
	CHECK(strstr(b, header) != NULL);

	a2m *back = check_open("engine", "memory", NULL);
	CHECK_INT(import_ok(back, b, &res), 7);
	a2m_import_result_free(&res);
	char *c = export_text(back);
	strcat(label, " -> memory");
	same_records(a, c, label);

	/* The protocol sees the same records with every field and vector. */
	json_t *t1 = check_call(src, "memory/timeline", "{\"embeddings\":true}");
	json_t *t2 = check_call(back, "memory/timeline", "{\"embeddings\":true}");
	CHECK(json_equal(json_object_get(t1, "result"), json_object_get(t2, "result")));
	json_decref(t1);
	json_decref(t2);
	/* A key still addresses its record, the vector still ranks. */
	json_t *f = check_call(back, "memory/fetch", "{\"key\":\"facts/v\"}");
	CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(f, "result"),
					"record"), "content")), "a fact, corrected");
	json_decref(f);
	/* Its history came along, as the source answers it. */
	json_t *h1 = check_call(src, "memory/fetch", "{\"key\":\"facts/v\",\"history\":true}");
	json_t *h2 = check_call(back, "memory/fetch", "{\"key\":\"facts/v\",\"history\":true}");
	CHECK_INT(json_array_size(json_object_get(json_object_get(h2, "result"), "history")), 1);
	CHECK(json_equal(json_object_get(h1, "result"), json_object_get(h2, "result")));
	json_decref(h1);
	json_decref(h2);
	json_t *r = check_call(back, "memory/recall", "{\"embedding\":[0.3,0.2,0.1],\"limit\":1}");
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(
		json_object_get(r, "result"), "records"), 0), "key")), "facts/v");
	json_decref(r);
	free(a);
	free(b);
	free(c);
	a2m_close(src);
	a2m_close(db);
	a2m_close(back);
	drop_db(DB);
}

static void round_trip_memory_sqlite_memory(void)
{
	round_trip("sqlite");
}

static void round_trip_memory_postgres_memory(void)
{
	if (pg_test_server())
		round_trip("postgres");
	else
		printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
}

static void import_twice_changes_nothing(void)
{
	drop_db(DB);
	a2m *src = check_open("engine", "memory", NULL);
	fill(src);
	char *a = export_text(src);
	a2m *db = check_open("engine", "sqlite", "path", DB, NULL);
	a2m_import_result res;
	CHECK_INT(import_ok(db, a, &res), 7);
	a2m_import_result_free(&res);
	char *before = export_text(db);
	json_t *head = check_call(db, "memory/events", "{}");
	const char *cursor = json_string_value(json_object_get(json_object_get(head, "result"), "cursor"));
	CHECK_INT(import_ok(db, a, &res), 0);
	CHECK_INT(res.skipped, 7);
	CHECK_INT(res.lines, 7);
	a2m_import_result_free(&res);
	char *after = export_text(db);
	same_records(before, after, "imported twice");
	/* Nothing was written, so nothing was told. */
	json_t *ev = check_call(db, "memory/events", "{\"cursor\":\"%s\"}", cursor);
	CHECK_INT(json_array_size(json_object_get(json_object_get(ev, "result"), "events")), 0);
	json_decref(ev);
	json_decref(head);
	free(a);
	free(before);
	free(after);
	a2m_close(src);
	a2m_close(db);
	drop_db(DB);
}

/* A line of an export: id, created_at, then the rest verbatim. */
static const char *HEAD = "{\"format\":\"a2m-export\",\"version\":1,\"records\":2}\n";

static void key_held_by_another_id(void)
{
	a2m *h = check_open("engine", "memory", NULL);
	call_ok(h, "memory/remember", "{\"records\":[{\"id\":\"mine\",\"content\":\"ours\",\"key\":\"k\"}]}");
	char text[1024];
	snprintf(text, sizeof text, "%s"
		 "{\"id\":\"theirs\",\"content\":\"their fact\",\"created_at\":\"2026-01-02T03:04:05.678Z\",\"key\":\"k\"}\n"
		 "{\"id\":\"new\",\"content\":\"no clash\",\"created_at\":\"2026-01-02T03:04:05.679Z\",\"key\":\"k2\",\"revision\":4}\n",
		 HEAD);
	a2m_import_result res;
	CHECK_INT(import_ok(h, text, &res), 1);
	CHECK_INT(res.key_held, 1);
	CHECK_STR(res.held[0], "theirs");
	a2m_import_result_free(&res);
	json_t *f = check_call(h, "memory/fetch", "{\"key\":\"k\"}");
	json_t *rec = json_object_get(json_object_get(f, "result"), "record");
	CHECK_STR(json_string_value(json_object_get(rec, "id")), "mine");
	CHECK_STR(json_string_value(json_object_get(rec, "content")), "ours");
	json_decref(f);
	/* The other kept its own id, time and revision. */
	f = check_call(h, "memory/fetch", "{\"key\":\"k2\"}");
	rec = json_object_get(json_object_get(f, "result"), "record");
	CHECK_STR(json_string_value(json_object_get(rec, "id")), "new");
	CHECK_STR(json_string_value(json_object_get(rec, "created_at")), "2026-01-02T03:04:05.679Z");
	CHECK_INT(json_integer_value(json_object_get(rec, "revision")), 4);
	json_decref(f);
	a2m_close(h);
}

/* The number of records h holds, by describe. */
static int64_t count(a2m *h)
{
	json_t *d = check_call(h, "memory/describe", "{}");
	json_t *t;
	size_t i;
	int64_t n = 0;
	json_array_foreach(json_object_get(json_object_get(d, "result"), "tiers"), i, t)
		n += json_integer_value(json_object_get(t, "count"));
	json_decref(d);
	return n;
}

static void refused_before_anything_is_written(void)
{
	a2m *h = check_open("engine", "memory", NULL);
	a2m_import_result res;
	char err[512];
	const char *rec = "{\"id\":\"x\",\"content\":\"c\",\"created_at\":\"2026-01-02T03:04:05.678Z\"}\n";
	char text[1024];
	/* A tier this store does not have. */
	snprintf(text, sizeof text, "{\"format\":\"a2m-export\",\"version\":1,\"describe\":{\"tiers\":"
		 "[{\"name\":\"working\",\"count\":1},{\"name\":\"archive\",\"count\":1}]}}\n%s", rec);
	CHECK_INT(import_text(h, text, 0, &res, err, sizeof err), -1);
	CHECK(strstr(err, "'archive'") != NULL);
	CHECK_INT(count(h), 0);
	/* A vector width other than the store's. */
	call_ok(h, "memory/remember", "{\"records\":[{\"content\":\"v\",\"embedding\":[1,2,3]}]}");
	snprintf(text, sizeof text, "{\"format\":\"a2m-export\",\"version\":1,\"describe\":{\"embeddings\":"
		 "{\"dimensions\":4,\"metric\":\"cosine\"}}}\n%s", rec);
	CHECK_INT(import_text(h, text, 0, &res, err, sizeof err), -1);
	CHECK(strstr(err, "4 dimensions") != NULL);
	CHECK_INT(count(h), 1);
	/* A newer format. */
	snprintf(text, sizeof text, "{\"format\":\"a2m-export\",\"version\":3}\n%s", rec);
	CHECK_INT(import_text(h, text, 0, &res, err, sizeof err), -1);
	CHECK(strstr(err, "version 3") != NULL);
	/* Neither format; and an export without its header. */
	CHECK_INT(import_text(h, "{\"hello\":1}\n", 0, &res, err, sizeof err), -1);
	CHECK(strstr(err, "neither") != NULL);
	CHECK_INT(import_text(h, "", 0, &res, err, sizeof err), -1);
	CHECK_INT(count(h), 1);
	a2m_close(h);
}

static void a_bad_line_stops_where_it_is(void)
{
	a2m *h = check_open("engine", "memory", NULL);
	a2m_import_result res;
	char err[512];
	const char *text = "{\"format\":\"a2m-export\",\"version\":1}\n"
		"{\"id\":\"a\",\"content\":\"one\",\"created_at\":\"2026-01-02T03:04:05.678Z\"}\n"
		"\n"
		"{\"id\":\"b\",\"content\":\"two\"}\n"
		"{\"id\":\"c\",\"content\":\"three\",\"created_at\":\"2026-01-02T03:04:05.678Z\"}\n";
	/* One record a batch: the first is committed before the bad line. */
	CHECK_INT(import_text(h, text, 1, &res, err, sizeof err), -1);
	CHECK(strstr(err, "test:4: created_at is required") != NULL);
	CHECK_INT(res.imported, 1);
	CHECK_INT(count(h), 1);
	const char *bad[] = {
		"{\"id\":\"a\",\"content\":7,\"created_at\":\"2026-01-02T03:04:05.678Z\"}",
		"{\"id\":\"\",\"created_at\":\"2026-01-02T03:04:05.678Z\"}",
		"{\"id\":\"a\",\"created_at\":\"yesterday\"}",
		"{\"id\":\"a\",\"created_at\":\"2026-01-02T03:04:05.678Z\",\"embedding\":[1,\"x\"]}",
		"{\"id\":\"a\",\"created_at\":\"2026-01-02T03:04:05.678Z\",\"metadata\":[1]}",
		"{\"id\":\"a\",\"created_at\":\"2026-01-02T03:04:05.678Z\",\"access_count\":-1}",
		"{\"id\":\"a\",\"created_at\":\"2026-01-02T03:04:05.678Z\",\"tier\":\"nowhere\"}",
		"{\"id\":\"a\\u0000b\",\"created_at\":\"2026-01-02T03:04:05.678Z\"}",
		"not json",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char t[512];
		snprintf(t, sizeof t, "{\"format\":\"a2m-export\",\"version\":1}\n%s\n", bad[i]);
		CHECK_INT(import_text(h, t, 0, &res, err, sizeof err), -1);
		CHECK_INT(res.imported, 0);
	}
	CHECK_INT(count(h), 1);
	a2m_close(h);
}

static void capacity_and_events_as_for_any_write(void)
{
	a2m *h = check_open("engine", "memory", NULL);
	json_t *head = check_call(h, "memory/events", "{}");
	char *cursor = strdup(json_string_value(json_object_get(json_object_get(head, "result"), "cursor")));
	json_decref(head);
	/* 30 turns of one session: the working tier holds 24 per session. */
	a2m_buf b = {0};
	a2m_buf_puts(&b, "{\"format\":\"a2m-export\",\"version\":1}\n");
	for (int i = 0; i < 30; i++)
		a2m_buf_printf(&b, "{\"id\":\"t%02d\",\"content\":\"turn %d\",\"created_at\":"
			       "\"2026-01-02T03:04:%02d.000Z\",\"tier\":\"working\",\"session\":\"s\"}\n",
			       i, i, i);
	a2m_import_result res;
	CHECK_INT(import_ok(h, a2m_buf_str(&b), &res), 30);
	a2m_buf_free(&b);
	json_t *d = check_call(h, "memory/describe", "{}");
	json_t *tiers = json_object_get(json_object_get(d, "result"), "tiers");
	CHECK_INT(json_integer_value(json_object_get(json_array_get(tiers, 0), "count")), 24);
	CHECK_INT(json_integer_value(json_object_get(json_array_get(tiers, 1), "count")), 6);
	json_decref(d);
	/* The oldest turns spilled, as a transcript does. */
	json_t *t = check_call(h, "memory/timeline", "{\"tier\":\"episodic\",\"limit\":1}");
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(
		json_object_get(t, "result"), "records"), 0), "id")), "t05");
	json_decref(t);
	json_t *ev = check_call(h, "memory/events", "{\"cursor\":\"%s\",\"limit\":100}", cursor);
	json_t *events = json_object_get(json_object_get(ev, "result"), "events");
	size_t written = 0, consolidated = 0, i;
	json_t *e;
	json_array_foreach(events, i, e) {
		const char *kind = json_string_value(json_object_get(e, "kind"));
		written += strcmp(kind, "written") == 0;
		consolidated += strcmp(kind, "consolidated") == 0;
	}
	CHECK_INT(written, 30);
	CHECK_INT(consolidated, 1);
	json_decref(ev);
	free(cursor);
	a2m_close(h);
}

static void the_mcp_memory_graph(void)
{
	a2m *h = check_open("engine", "memory", NULL);
	const char *graph =
		"{\"type\":\"entity\",\"name\":\"Ada\",\"entityType\":\"person\",\"observations\":"
		"[\"writes programs\",\"likes tea\"]}\n"
		"{\"type\":\"entity\",\"name\":\"Engine\",\"entityType\":\"machine\",\"observations\":[]}\n"
		"{\"type\":\"relation\",\"from\":\"Ada\",\"to\":\"Engine\",\"relationType\":\"programs\"}\n";
	a2m_import_result res;
	CHECK_INT(import_ok(h, graph, &res), 4);
	CHECK_INT(res.format, A2M_FORMAT_MCP_MEMORY);
	a2m_import_result_free(&res);
	json_t *t = check_call(h, "memory/timeline", "{}");
	json_t *recs = json_object_get(json_object_get(t, "result"), "records");
	CHECK_INT(json_array_size(recs), 4);
	json_t *r0 = json_array_get(recs, 0), *r2 = json_array_get(recs, 2), *r3 = json_array_get(recs, 3);
	CHECK_STR(json_string_value(json_object_get(r0, "content")), "writes programs");
	CHECK_STR(json_string_value(json_object_get(r0, "group")), "mcp-memory:Ada");
	CHECK_STR(json_string_value(json_object_get(json_object_get(r0, "metadata"), "entityType")), "person");
	CHECK(strncmp(json_string_value(json_object_get(r0, "id")), "mcp-memory:", 11) == 0);
	CHECK_STR(json_string_value(json_object_get(r2, "content")), "Engine (machine)");
	CHECK_STR(json_string_value(json_object_get(r3, "content")), "Ada programs Engine");
	CHECK_STR(json_string_value(json_object_get(json_object_get(r3, "metadata"), "to")), "Engine");
	json_decref(t);
	/* The same graph again writes nothing; one more observation, one record. */
	CHECK_INT(import_ok(h, graph, &res), 0);
	CHECK_INT(res.skipped, 4);
	a2m_import_result_free(&res);
	CHECK_INT(import_ok(h, "{\"type\":\"entity\",\"name\":\"Ada\",\"entityType\":\"person\","
			    "\"observations\":[\"writes programs\",\"likes tea\",\"met Babbage\"]}\n", &res), 1);
	a2m_import_result_free(&res);
	char err[256];
	CHECK_INT(import_text(h, "{\"type\":\"entity\",\"name\":\"X\"}\n", 0, &res, err, sizeof err), -1);
	CHECK(strstr(err, "entityType") != NULL);
	a2m_close(h);
}

static void read_only_refuses(void)
{
	drop_db(DB2);
	a2m *h = check_open("engine", "sqlite", "path", DB2, NULL);
	call_ok(h, "memory/remember", "{\"records\":[{\"content\":\"x\"}]}");
	a2m_close(h);
	h = check_open("engine", "sqlite", "path", DB2, "read_only", "1", NULL);
	a2m_import_result res;
	char err[512];
	CHECK_INT(import_text(h, "{\"format\":\"a2m-export\",\"version\":1}\n"
			      "{\"id\":\"a\",\"content\":\"c\",\"created_at\":\"2026-01-02T03:04:05.678Z\"}\n",
			      0, &res, err, sizeof err), -1);
	CHECK(strstr(err, "read-only") != NULL);
	/* Export reads it all the same. */
	char *text = export_text(h);
	CHECK(strstr(records_of(text), "\"content\":\"x\"") != NULL);
	free(text);
	a2m_close(h);
	drop_db(DB2);
}

static void recall_touch_false_counts_nothing(void)
{
	a2m *h = check_open("engine", "memory", NULL);
	call_ok(h, "memory/remember", "{\"records\":[{\"content\":\"lighthouse log\",\"tier\":\"episodic\"}]}");
	for (int i = 0; i < 5; i++)
		call_ok(h, "memory/recall", "{\"query\":\"lighthouse\",\"touch\":false}");
	json_t *t = check_call(h, "memory/timeline", "{}");
	json_t *r = json_array_get(json_object_get(json_object_get(t, "result"), "records"), 0);
	CHECK_INT(json_integer_value(json_object_get(r, "access_count")), 0);
	CHECK(json_object_get(r, "accessed_at") == NULL);
	CHECK_STR(json_string_value(json_object_get(r, "tier")), "episodic");  /* not promoted */
	json_decref(t);
	call_ok(h, "memory/recall", "{\"query\":\"lighthouse\",\"touch\":true}");
	t = check_call(h, "memory/timeline", "{}");
	r = json_array_get(json_object_get(json_object_get(t, "result"), "records"), 0);
	CHECK_INT(json_integer_value(json_object_get(r, "access_count")), 1);
	json_decref(t);
	t = check_call(h, "memory/recall", "{\"query\":\"lighthouse\",\"touch\":\"no\"}");
	CHECK_INT(check_error_code(t), A2M_INVALID_PARAMS);
	json_decref(t);
	a2m_close(h);
}

/*
** x-expiry and x-dedup across a move: the expiry given is kept (a record
** already past it is written, never returned, and swept), and a dedup
** tier of the importing store finds an imported record as the duplicate
** of a later write.
*/
static void expiry_and_duplicates_survive_a_move(void)
{
	static const char layout[] =
		"{\"tiers\":[{\"name\":\"working\",\"kind\":\"working\",\"per_session\":true,"
		"\"spill_to\":\"semantic\"},{\"name\":\"semantic\",\"kind\":\"semantic\"},"
		"{\"name\":\"facts\",\"kind\":\"semantic\",\"dedup\":true}]}";
	char cfg[96];
	snprintf(cfg, sizeof cfg, "/tmp/a2m-test-transfer-%d.json", (int)getpid());
	FILE *f = fopen(cfg, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(layout, f);
	fclose(f);
	drop_db(DB);
	a2m *src = check_open("engine", "memory", "config_file", cfg, NULL);
	call_ok(src, "memory/remember", "{\"records\":["
		"{\"content\":\"lasts\",\"tier\":\"semantic\",\"expires_at\":\"2099-01-01T00:00:00Z\"},"
		"{\"content\":\"gone\",\"tier\":\"semantic\",\"expires_at\":\"2098-01-01T00:00:00Z\"},"
		"{\"content\":\"A fact, told once.\",\"tier\":\"facts\"}]}");
	char *a = export_text(src);
	CHECK(strstr(records_of(a), "\"expires_at\":\"2099-01-01T00:00:00.000Z\"") != NULL);
	/* The second one expired long ago, as far as the file says. */
	char *at = strstr(a, "\"2098-");
	CHECK(at != NULL);
	if (at)
		memcpy(at, "\"2001-", 6);
	a2m *db = check_open("engine", "sqlite", "path", DB, "config_file", cfg, NULL);
	a2m_import_result res;
	CHECK_INT(import_ok(db, a, &res), 3);
	a2m_import_result_free(&res);
	json_t *t = check_call(db, "memory/timeline", "{\"tier\":\"semantic\"}");
	json_t *recs = json_object_get(json_object_get(t, "result"), "records");
	CHECK_INT((int)json_array_size(recs), 1);
	CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 0), "content")), "lasts");
	CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 0), "expires_at")),
		  "2099-01-01T00:00:00.000Z");
	json_decref(t);
	int64_t next = 0;
	CHECK_INT(a2m_sweep(db, &next), A2M_OK);
	char *b = export_text(db);
	CHECK(strstr(b, "\"gone\"") == NULL);
	CHECK(strstr(b, "\"lasts\"") != NULL);
	/* The same words again, in other case and spacing: the imported record. */
	json_t *r = check_call(db, "memory/remember",
			       "{\"records\":[{\"content\":\"a  FACT told once\",\"tier\":\"facts\"}]}");
	json_t *result = json_object_get(r, "result");
	CHECK_INT((int)json_integer_value(json_object_get(result, "deduplicated")), 1);
	const char *id = json_string_value(json_array_get(json_object_get(result, "ids"), 0));
	CHECK(id && strstr(a, id) != NULL);
	json_decref(r);
	free(a);
	free(b);
	a2m_close(src);
	a2m_close(db);
	drop_db(DB);
	unlink(cfg);
}

/*
** A key's earlier revisions (x-history) go memory -> SQLite -> PostgreSQL
** (when there is one) -> memory with their record, every line equal, in
** batches of one record (its revisions travel in its batch). A record
** not imported (its id is there) brings none of its revisions, and a
** revision line that does not follow its record's line is refused.
*/
static void history_travels_with_its_record(void)
{
	const char *chain[] = {"sqlite", "postgres", "memory"};
	size_t links = pg_test_server() ? 3 : 2;
	drop_db(DB);
	pg_test_schema_fresh(pg_schema);
	a2m *src = check_open("engine", "memory", NULL);
	for (int i = 0; i < 4; i++) {
		char p[160];
		snprintf(p, sizeof p, "{\"records\":[{\"content\":\"city %d\",\"key\":\"u/city\","
			 "\"role\":\"user\",\"metadata\":{\"n\":%d}}]}", i, i);
		call_ok(src, "memory/remember", p);
	}
	call_ok(src, "memory/remember", "{\"records\":[{\"content\":\"no key, no history\"}]}");
	char *first = export_text(src), *text = first;
	CHECK(strstr(text, "\"revision\":2,\"content\":\"city 2\"") != NULL);
	json_t *want = check_call(src, "memory/fetch", "{\"key\":\"u/city\",\"history\":true}");
	CHECK_INT(json_array_size(json_object_get(json_object_get(want, "result"), "history")), 3);
	for (size_t k = 0; k < (links == 3 ? 3u : 2u); k++) {
		const char *engine = links == 3 ? chain[k] : k ? "memory" : "sqlite";
		a2m *h = strcmp(engine, "memory") == 0 ? check_open("engine", "memory", NULL)
						       : open_durable(engine);
		a2m_import_result res;
		char err[512] = "";
		CHECK_INT(import_text(h, text, 1, &res, err, sizeof err), 0);
		CHECK_INT(res.imported, 2);
		CHECK_INT(res.revisions, 3);
		a2m_import_result_free(&res);
		json_t *got = check_call(h, "memory/fetch", "{\"key\":\"u/city\",\"history\":true}");
		CHECK(json_equal(json_object_get(want, "result"), json_object_get(got, "result")));
		json_decref(got);
		char *next = export_text(h);
		same_records(first, next, engine);
		if (text != first)
			free(text);
		text = next;
		/* Imported again: the records are there, their revisions not doubled. */
		CHECK_INT(import_text(h, first, 0, &res, err, sizeof err), 0);
		CHECK_INT(res.skipped, 2);
		a2m_import_result_free(&res);
		got = check_call(h, "memory/fetch", "{\"key\":\"u/city\",\"history\":true}");
		CHECK(json_equal(json_object_get(want, "result"), json_object_get(got, "result")));
		json_decref(got);
		a2m_close(h);
	}
	if (text != first)
		free(text);
	json_decref(want);
	/* A revision line whose record is not the line before it. */
	a2m *h = check_open("engine", "memory", NULL);
	a2m_import_result res;
	char err[512] = "";
	const char *stray = "{\"format\":\"a2m-export\",\"version\":2}\n"
		"{\"id\":\"a\",\"content\":\"one\",\"created_at\":\"2026-01-02T03:04:05.678Z\"}\n"
		"{\"kind\":\"revision\",\"id\":\"b\",\"revision\":0,\"content\":\"x\","
		"\"created_at\":null,\"superseded_at\":\"2026-01-02T03:04:05.678Z\"}\n";
	CHECK_INT(import_text(h, stray, 0, &res, err, sizeof err), -1);
	CHECK(strstr(err, "test:3: a revision line must follow the line of its record") != NULL);
	CHECK_INT(count(h), 0);
	a2m_close(h);
	free(first);
	a2m_close(src);
	drop_db(DB);
}

/* How many lines of text contain needle. */
static int64_t lines_with(const char *text, const char *needle)
{
	int64_t n = 0;
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		char *line = strndup(l, len);
		n += line && strstr(line, needle) != NULL;
		free(line);
		l = nl ? nl + 1 : NULL;
	}
	return n;
}

/*
** The header counts the records and the revision lines that follow it (on
** every engine the export reads), and an import holds the file to them:
** a file cut short by a revision line or by a record is refused, named.
*/
static void the_header_counts_what_follows(void)
{
	const char *engines[] = {"memory", "sqlite", "postgres"};
	for (size_t k = 0; k < (pg_test_server() ? 3u : 2u); k++) {
		drop_db(DB);
		pg_test_schema_fresh(pg_schema);
		a2m *h = k ? open_durable(engines[k]) : check_open("engine", "memory", NULL);
		for (int i = 0; i < 4; i++) {
			char p[160];
			snprintf(p, sizeof p, "{\"records\":[{\"content\":\"city %d\","
				 "\"key\":\"u/city\"}]}", i);
			call_ok(h, "memory/remember", p);
		}
		call_ok(h, "memory/remember", "{\"records\":[{\"content\":\"no key\"}]}");
		call_ok(h, "memory/remember", "{\"records\":[{\"content\":\"pet cat\",\"key\":\"u/pet\"}]}");
		call_ok(h, "memory/remember", "{\"records\":[{\"content\":\"pet dog\",\"key\":\"u/pet\"}]}");
		char *text = export_text(h);
		a2m_close(h);
		json_t *head = json_loadb(text, strcspn(text, "\n"), 0, NULL);
		CHECK_INT(json_integer_value(json_object_get(head, "records")), 3);
		CHECK(json_is_integer(json_object_get(head, "revisions")));
		CHECK_INT(json_integer_value(json_object_get(head, "revisions")), 4);
		CHECK_INT(lines_with(records_of(text), "\"kind\":\"revision\""), 4);
		json_decref(head);
		/* Whole, it goes in; cut after its last record's line (that
		** record's revision missing), or before that record, it does not. */
		a2m_import_result res;
		char err[512] = "";
		a2m *to = check_open("engine", "memory", NULL);
		CHECK_INT(import_text(to, text, 0, &res, err, sizeof err), 0);
		CHECK_INT(res.revisions, 4);
		a2m_import_result_free(&res);
		a2m_close(to);
		size_t len = strlen(text);
		char *cut = strdup(text);
		cut[len - 1] = '\0';
		*(strrchr(cut, '\n') + 1) = '\0';  /* the last line gone: u/pet's revision */
		to = check_open("engine", "memory", NULL);
		CHECK_INT(import_text(to, cut, 0, &res, err, sizeof err), -1);
		CHECK(strstr(err, "test: the header counts 4 revision lines; the file holds 3 "
			      "(cut short?)") != NULL);
		a2m_import_result_free(&res);
		a2m_close(to);
		cut[strlen(cut) - 1] = '\0';
		*(strrchr(cut, '\n') + 1) = '\0';  /* and u/pet's line */
		to = check_open("engine", "memory", NULL);
		CHECK_INT(import_text(to, cut, 0, &res, err, sizeof err), -1);
		CHECK(strstr(err, "test: the header counts 3 records; the file holds 2 (cut short?)")
		      != NULL);
		a2m_import_result_free(&res);
		a2m_close(to);
		free(cut);
		free(text);
	}
}

int main(void)
{
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-transfer-%d.db", (int)getpid());
	snprintf(db2_path, sizeof db2_path, "/tmp/a2m-test-transfer-%d-2.db", (int)getpid());
	static const test_case tests[] = {
		TEST(round_trip_memory_sqlite_memory),
		TEST(round_trip_memory_postgres_memory),
		TEST(import_twice_changes_nothing),
		TEST(key_held_by_another_id),
		TEST(refused_before_anything_is_written),
		TEST(a_bad_line_stops_where_it_is),
		TEST(capacity_and_events_as_for_any_write),
		TEST(the_mcp_memory_graph),
		TEST(read_only_refuses),
		TEST(recall_touch_false_counts_nothing),
		TEST(expiry_and_duplicates_survive_a_move),
		TEST(history_travels_with_its_record),
		TEST(the_header_counts_what_follows),
		{NULL, NULL},
	};
	snprintf(pg_schema, sizeof pg_schema, "a2m_tx_%d", (int)getpid());
	pg_test_conninfo(pg_schema, pg_conninfo, sizeof pg_conninfo);
	int status = run_tests(tests);
	pg_test_schema_drop(pg_schema);
	return status;
}
