/*
** test_sqlite_mmap.c — the option mmap_mb (docs/CONFIG.md): each SQLite
** connection of a store, the main one and the pool's readers, reads a file
** its page cache cannot hold through a memory map of that size (SQLite's
** mmap_size), none with 0; a smaller file is read as before; out of its
** bounds the option is refused; a recall answers the same either way.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "a2m.h"
#include "check.h"
#include "check_a2m.h"
#include "server/server.h"
#include "stack/stack_internal.h"
#include "store/sqlite_internal.h"
#include "store/store.h"

static char db_path[256];

/* The connection's mmap_size, or -1 when it cannot be read. */
static long long mmap_size(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	long long v = -1;
	if (sqlite3_prepare_v2(db, "PRAGMA mmap_size", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* 1 when this process maps the store's file (/proc/self/maps), else 0. */
static int file_is_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];
	int found = 0;
	size_t n = strlen(db_path);
	while (f && !found && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		size_t len = strlen(line);
		found = len >= n && strcmp(line + len - n, db_path) == 0;
	}
	if (f)
		fclose(f);
	return found;
}

typedef struct reader_map {
	a2m_store *s;
	int        lent;  /* a reader, not the main connection, served the bracket */
	long long  size;
} reader_map;

/* In a bracket of its own (the main connection being held): the reader's map. */
static void *map_of_a_reader(void *arg)
{
	reader_map *rm = arg;
	if (rm->s->ops->read_begin(rm->s) != 0)
		return NULL;
	sqlstore *c = a2m_sqlite_conn(rm->s);
	rm->lent = c != (sqlstore *)rm->s;
	rm->size = mmap_size(c->db);
	rm->s->ops->read_end(rm->s);
	return NULL;
}

/* The map of h's main connection, and of a reader lent while the main one is held. */
static void maps_of(a2m *h, long long *main_size, long long *reader_size)
{
	a2m_store *s = h->srv.stack->store;
	*main_size = mmap_size(((sqlstore *)s)->db);
	reader_map rm = {s, 0, -2};
	pthread_t t;
	if (s->ops->read_begin(s) == 0) {
		CHECK(pthread_create(&t, NULL, map_of_a_reader, &rm) == 0 &&
		      pthread_join(t, NULL) == 0);
		s->ops->read_end(s);
	}
	CHECK(rm.lent);
	*reader_size = rm.size;
}

/* The ids recall answers for text, joined into out. */
static void recalled_ids(a2m *h, const char *text, char *out, size_t cap)
{
	json_t *res = check_result_of(h, "memory/recall", json_pack("{ss si}", "query", text,
								    "limit", 10));
	json_t *recs = json_object_get(res, "records"), *r;
	size_t i, used = 0;
	out[0] = '\0';
	json_array_foreach(recs, i, r) {
		int k = snprintf(out + used, cap - used, "%s,",
				 json_string_value(json_object_get(r, "id")));
		if (k > 0 && (size_t)k < cap - used)
			used += (size_t)k;
	}
	CHECK(json_array_size(recs) > 0);
	json_decref(res);
}

static void test_the_option_is_refused_out_of_its_bounds(void)
{
	a2m_config *cfg = NULL;
	CHECK_INT(a2m_config_new(&cfg), A2M_OK);
	CHECK(a2m_config_set(cfg, "mmap_mb", "-1") != A2M_OK);
	CHECK(a2m_config_set(cfg, "mmap_mb", "65537") != A2M_OK);
	CHECK_INT(a2m_config_set(cfg, "mmap_mb", "0"), A2M_OK);
	CHECK_INT(a2m_config_set(cfg, "mmap_mb", "65536"), A2M_OK);
	a2m_config_free(cfg);
}

/* A store of 500 records at db_path, far smaller than a page cache. */
static void small_store(void)
{
	check_remove_db(db_path);
	a2m *h = check_open("engine", "sqlite", "path", db_path, NULL);
	CHECK(h != NULL);
	if (!h)
		return;
	json_t *recs = json_array();
	for (int i = 0; i < 500; i++) {
		char text[64];
		snprintf(text, sizeof text, "kalo w%d lolo w%d", i % 7, i % 13);
		json_array_append_new(recs, json_pack("{ss}", "content", text));
	}
	json_decref(check_result_of(h, "memory/remember", json_pack("{so}", "records", recs)));
	a2m_close(h);
}

/* A file the page cache holds whole is read with pread, mmap_mb or not. */
static void test_a_file_the_page_cache_holds_is_not_mapped(void)
{
	small_store();
	long long m, r;
	char ids[1024];
	a2m *h = check_open("engine", "sqlite", "path", db_path, NULL);
	CHECK(h != NULL);
	if (h) {
		recalled_ids(h, "kalo w3", ids, sizeof ids);
		CHECK(!file_is_mapped());
		maps_of(h, &m, &r);
		CHECK(m == 0 && r == 0);
		a2m_close(h);
	}
	check_remove_db(db_path);
}

/*
** A file past the threshold (here any): by default every connection maps
** it (SQLite caps the size: any positive answer), and a recall reads
** through the map; with 1 MiB each maps 1 MiB; with 0 none maps it, and
** the recall is the same.
*/
static void test_every_connection_reads_through_the_map_it_is_given(void)
{
	small_store();
	a2m_sqlite_mmap_from_for_tests(0);
	char want[1024], got[1024];
	long long m, r;
	a2m *h = check_open("engine", "sqlite", "path", db_path, NULL);
	CHECK(h != NULL);
	if (h) {
		recalled_ids(h, "kalo w3", want, sizeof want);
		CHECK(file_is_mapped());
		maps_of(h, &m, &r);
		CHECK(m > 0 && m <= (long long)2048 << 20);
		CHECK(r == m);
		a2m_close(h);
	}
	CHECK(!file_is_mapped());

	h = check_open("engine", "sqlite", "path", db_path, "mmap_mb", "1", NULL);
	CHECK(h != NULL);
	if (h) {
		recalled_ids(h, "kalo w3", got, sizeof got);
		CHECK(strcmp(got, want) == 0);
		maps_of(h, &m, &r);
		CHECK(m == 1 << 20 && r == m);
		a2m_close(h);
	}

	h = check_open("engine", "sqlite", "path", db_path, "mmap_mb", "0", NULL);
	CHECK(h != NULL);
	if (h) {
		recalled_ids(h, "kalo w3", got, sizeof got);
		CHECK(strcmp(got, want) == 0);
		CHECK(!file_is_mapped());
		maps_of(h, &m, &r);
		CHECK(m == 0 && r == 0);
		a2m_close(h);
	}
	a2m_sqlite_mmap_from_for_tests((uint64_t)A2M_SQLITE_MMAP_FROM_KIB << 10);
	check_remove_db(db_path);
}

int main(void)
{
	snprintf(db_path, sizeof db_path, "/tmp/a2m-test-sqlite-mmap-%d.db", (int)getpid());
	static const test_case tests[] = {
		TEST(test_the_option_is_refused_out_of_its_bounds),
		TEST(test_a_file_the_page_cache_holds_is_not_mapped),
		TEST(test_every_connection_reads_through_the_map_it_is_given),
		{NULL, NULL},
	};
	alarm(300);
	return run_tests(tests);
}
