/*
** test_timeline.c — memory/timeline with `where` on a session (and more)
** gives exactly what the unfiltered timeline filtered afterwards gives, on
** random data, against both storage engines. The store answers a session
** equality itself (stack/sessions.c, a2m_stack_narrow_by_where); the rest
** of `where` must still apply.
*/
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "check.h"

static a2m *h;

static json_t *call(const char *method, json_t *params)
{
	json_t *req = json_pack("{ss si ss so}", "jsonrpc", "2.0", "id", 1, "method", method,
				"params", params);
	char *text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	char *out = text ? a2m_handle(h, text) : NULL;
	free(text);
	json_t *resp = out ? json_loads(out, 0, NULL) : NULL;
	a2m_free(out);
	json_t *res = json_incref(json_object_get(resp, "result"));
	CHECK(res != NULL);
	json_decref(resp);
	return res;
}

static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

static const char *const sessions[] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7",
				       "s8", "s9", "", NULL};
#define N_SESSIONS (sizeof sessions / sizeof sessions[0])
static const char *const roles[] = {"user", "assistant"};
static const char *const tiers[] = {"semantic", "episodic", "procedural"};

/* 600 records, in batches, over the sessions (NULL: none) at random. */
static void load(void)
{
	uint64_t x = 7;
	for (int b = 0; b < 30; b++) {
		json_t *recs = json_array();
		for (int i = 0; i < 20; i++) {
			const char *s = sessions[lcg(&x) % N_SESSIONS];
			json_t *r = json_pack("{ss ss ss}", "content", "a turn of some conversation",
					      "role", roles[lcg(&x) % 2],
					      "tier", tiers[lcg(&x) % 3]);
			if (s)
				json_object_set_new(r, "session", json_string(s));
			json_array_append_new(recs, r);
		}
		json_decref(call("memory/remember", json_pack("{so}", "records", recs)));
	}
}

/* Does rec pass where? Only the keys the tests use: session, role, tier. */
static int passes(const json_t *rec, const json_t *where)
{
	const char *k;
	json_t *want;
	json_object_foreach((json_t *)where, k, want) {
		json_t *got = json_object_get(rec, k);
		if (!json_equal(got ? got : json_null(), want))
			return 0;
	}
	return 1;
}

/* The ids of a timeline answer, or of the last `limit` of `all` passing where. */
static char *ids_of(const json_t *records, const json_t *where, size_t limit)
{
	json_t *ids = json_array();
	size_t n = json_array_size(records), start = 0;
	if (where) {
		json_t *kept = json_array();
		for (size_t i = 0; i < n; i++)
			if (passes(json_array_get(records, i), where))
				json_array_append(kept, json_array_get(records, i));
		n = json_array_size(kept);
		start = limit && n > limit ? n - limit : 0;
		for (size_t i = start; i < n; i++)
			json_array_append(ids, json_object_get(json_array_get(kept, i), "id"));
		json_decref(kept);
	} else {
		for (size_t i = 0; i < n; i++)
			json_array_append(ids, json_object_get(json_array_get(records, i), "id"));
	}
	char *s = json_dumps(ids, JSON_COMPACT);
	json_decref(ids);
	return s;
}

static void compare(const json_t *all, json_t *where, size_t limit)
{
	json_t *params = json_pack("{sO}", "where", where);
	if (limit)
		json_object_set_new(params, "limit", json_integer((json_int_t)limit));
	json_t *res = call("memory/timeline", params);
	char *got = ids_of(json_object_get(res, "records"), NULL, 0);
	char *want = ids_of(all, where, limit);
	CHECK(got && want && strcmp(got, want) == 0);
	if (got && want && strcmp(got, want) != 0) {
		char *w = json_dumps(where, JSON_COMPACT);
		fprintf(stderr, "  where %s limit %zu:\n    got  %.300s\n    want %.300s\n",
			w ? w : "?", limit, got, want);
		free(w);
	}
	free(got);
	free(want);
	json_decref(res);
	json_decref(where);
}

static void test_timeline_by_session_equals_filtering_afterwards(void)
{
	json_t *all = call("memory/timeline", json_object());
	json_t *records = json_object_get(all, "records");
	CHECK_INT(json_array_size(records), 600);
	static const size_t limits[] = {0, 1, 7, 20, 1000};
	for (size_t s = 0; s < N_SESSIONS; s++) {
		json_t *sv = sessions[s] ? json_string(sessions[s]) : json_null();
		for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
			compare(records, json_pack("{sO}", "session", sv), limits[l]);
			/* The rest of where still applies. */
			compare(records, json_pack("{sO ss}", "session", sv, "role", "user"),
				limits[l]);
			compare(records, json_pack("{sO ss}", "session", sv, "tier", "episodic"),
				limits[l]);
		}
		json_decref(sv);
	}
	/* A session no record has, and a value no session can equal. */
	compare(records, json_pack("{ss}", "session", "nobody"), 20);
	compare(records, json_pack("{si}", "session", 3), 20);
	compare(records, json_pack("{ss}", "tier", "procedural"), 20);
	json_decref(all);
}

static const test_case tests[] = {
	TEST(test_timeline_by_session_equals_filtering_afterwards),
	{NULL, NULL},
};

/* Removes the SQLite file at path and its companions. */
static void remove_store(const char *path)
{
	static const char *const suffix[] = {"", "-wal", "-shm"};
	char f[600];
	for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
		snprintf(f, sizeof f, "%s%s", path, suffix[i]);
		unlink(f);
	}
}

int main(void)
{
	char path[] = "/tmp/a2m-test-timeline-XXXXXX";
	int fd = mkstemp(path), status = 0;
	if (fd < 0)
		return 1;
	close(fd);
	for (int sqlite = 0; sqlite < 2 && !status; sqlite++) {
		a2m_config cfg;
		char *err = NULL;
		a2m_config_init(&cfg);
		cfg.engine = sqlite ? A2M_ENGINE_SQLITE : A2M_ENGINE_MEMORY;
		cfg.path = path;
		cfg.max_records_per_call = 100;
		remove_store(path);
		if (a2m_open(&cfg, &h, &err) != 0) {
			fprintf(stderr, "open: %s\n", err ? err : "?");
			a2m_free(err);
			status = 1;
			break;
		}
		printf("# engine %s\n", sqlite ? "sqlite" : "memory");
		load();
		status = run_tests(tests);
		a2m_close(h);
	}
	remove_store(path);
	return status;
}
