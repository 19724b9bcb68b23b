/*
** test_pg_segments.c — how the PostgreSQL term index resolves a term's
** rows into its postings (a2m_pg_segs_resolve, src/store/postgres_segments.c):
** the newest row's entry wins per record, a tombstone hides what is older
** and is never a posting itself, any number of rows (past the 64 one merge
** of the codec takes), a tail's chunks newer than every sealed row and
** newest last, and bytes that are no list are refused. Pure: no
** PostgreSQL is needed (the rows' writing and merging are test_pg_postings').
*/
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store/postgres_internal.h"
#include "store/sqlite_segments.h"

/* A list being built: entries appended in ascending seq. */
typedef struct list {
	a2m_seg_bytes b;
	int64_t       prev;
} list;

static void add(list *l, int64_t seq, uint32_t tf, int deleted)
{
	a2m_seg_entry e = {seq, tf, 7, deleted};
	CHECK_INT(a2m_seg_put(&l->b, &l->prev, &e), 0);
}

/* Resolves lists[0..n) (oldest first): 0, or resolve's code; *v and *count as it sets them. */
static int resolve(list *lists, size_t n, a2m_posting **v, size_t *count)
{
	const unsigned char **data = calloc(n ? n : 1, sizeof *data);
	size_t *size = calloc(n ? n : 1, sizeof *size);
	for (size_t i = 0; i < n; i++) {
		data[i] = lists[i].b.p;
		size[i] = lists[i].b.n;
	}
	int rc = a2m_pg_segs_resolve(data, size, NULL, n, 0, v, count);
	free(data);
	free(size);
	return rc;
}

static void test_one_row_gives_its_postings_and_hides_its_tombstones(void)
{
	list l = {{0}, 0};
	add(&l, 3, 2, 0);
	add(&l, 5, 1, 1);
	add(&l, 900, 4, 0);
	a2m_posting *v;
	size_t n;
	CHECK_INT(resolve(&l, 1, &v, &n), 0);
	CHECK_INT(n, 2);
	CHECK_INT(v[0].seq, 3);
	CHECK_INT(v[0].tf, 2);
	CHECK_INT(v[0].dl, 7);
	CHECK_INT(v[1].seq, 900);
	CHECK_INT(v[1].tf, 4);
	free(v);
	free(l.b.p);
}

static void test_the_newest_row_wins_per_record(void)
{
	list l[3] = {{{0}, 0}, {{0}, 0}, {{0}, 0}};
	add(&l[0], 1, 1, 0);
	add(&l[0], 2, 1, 0);
	add(&l[0], 3, 1, 0);
	add(&l[1], 2, 1, 1);   /* forgotten */
	add(&l[1], 3, 5, 0);   /* its content changed */
	add(&l[1], 4, 1, 0);
	add(&l[2], 1, 1, 1);   /* forgotten */
	add(&l[2], 2, 9, 0);   /* a tombstone does not outlive a newer posting */
	a2m_posting *v;
	size_t n;
	CHECK_INT(resolve(l, 3, &v, &n), 0);
	CHECK_INT(n, 3);
	CHECK_INT(v[0].seq, 2);
	CHECK_INT(v[0].tf, 9);
	CHECK_INT(v[1].seq, 3);
	CHECK_INT(v[1].tf, 5);
	CHECK_INT(v[2].seq, 4);
	free(v);
	for (int i = 0; i < 3; i++)
		free(l[i].b.p);
}

/*
** 150 rows: each rewrites record 1 (tf = its number), adds record 1000 + i
** and forgets the one the row before added. What remains: record 1 as the
** newest row wrote it, and the newest row's own record.
*/
static void test_more_rows_than_one_merge_takes(void)
{
	enum { N = 150 };
	list *l = calloc(N, sizeof *l);
	for (int i = 0; i < N; i++) {
		add(&l[i], 1, (uint32_t)i + 1, 0);
		if (i)
			add(&l[i], 1000 + i - 1, 1, 1);
		add(&l[i], 1000 + i, 1, 0);
	}
	a2m_posting *v;
	size_t n;
	CHECK_INT(resolve(l, N, &v, &n), 0);
	CHECK_INT(n, 2);
	CHECK_INT(v[0].seq, 1);
	CHECK_INT(v[0].tf, N);
	CHECK_INT(v[1].seq, 1000 + N - 1);
	free(v);
	for (int i = 0; i < N; i++)
		free(l[i].b.p);
	free(l);
}

/* Appends l's list to tail as a chunk: its size, then its bytes. */
static void chunk(a2m_seg_bytes *tail, const list *l)
{
	CHECK_INT(a2m_seg_reserve(tail, 10 + l->b.n), 0);
	tail->n += a2m_seg_put_varint(tail->p + tail->n, l->b.n);
	memcpy(tail->p + tail->n, l->b.p, l->b.n);
	tail->n += l->b.n;
}

/*
** A sealed row, then a tail of three chunks (oldest first): records added,
** forgotten, added back with another count, and one of the sealed row's
** forgotten from the tail.
*/
static void test_a_tails_chunks_are_newer_than_the_sealed_rows_and_in_order(void)
{
	list sealed = {{0}, 0}, c[3] = {{{0}, 0}, {{0}, 0}, {{0}, 0}};
	add(&sealed, 3, 1, 0);
	add(&sealed, 5, 1, 0);
	add(&c[0], 10, 1, 0);
	add(&c[0], 11, 1, 0);
	add(&c[1], 10, 1, 1);
	add(&c[1], 12, 1, 0);
	add(&c[2], 3, 1, 1);
	add(&c[2], 10, 5, 0);
	a2m_seg_bytes tail = {0};
	for (int i = 0; i < 3; i++)
		chunk(&tail, &c[i]);
	const unsigned char *data[2] = {sealed.b.p, tail.p};
	size_t size[2] = {sealed.b.n, tail.n};
	int tails[2] = {0, 1};
	a2m_posting *v;
	size_t n;
	CHECK_INT(a2m_pg_segs_resolve(data, size, tails, 2, 0, &v, &n), 0);
	CHECK_INT(n, 4);
	int64_t want[4] = {5, 10, 11, 12};
	for (size_t i = 0; i < n && i < 4; i++)
		CHECK_INT(v[i].seq, want[i]);
	CHECK_INT(v[1].tf, 5);
	free(v);
	/* A chunk longer than the bytes left is no tail. */
	size[1] = tail.n - 1;
	CHECK_INT(a2m_pg_segs_resolve(data, size, tails, 2, 0, &v, &n), -2);
	free(tail.p);
	free(sealed.b.p);
	for (int i = 0; i < 3; i++)
		free(c[i].b.p);
}

static void test_no_rows_is_no_postings(void)
{
	a2m_posting *v;
	size_t n = 9;
	CHECK_INT(resolve(NULL, 0, &v, &n), 0);
	CHECK_INT(n, 0);
	free(v);
}

static void test_bytes_that_are_no_list_are_refused(void)
{
	list l[2] = {{{0}, 0}, {{0}, 0}};
	add(&l[0], 4, 1, 0);
	unsigned char bad[] = {0xff, 0xff};
	l[1].b.p = bad;
	l[1].b.n = sizeof bad;
	a2m_posting *v = NULL;
	size_t n = 0;
	CHECK_INT(resolve(l, 2, &v, &n), -2);
	CHECK(v == NULL);
	CHECK_INT(resolve(&l[1], 1, &v, &n), -2);
	free(l[0].b.p);
}

int main(void)
{
	static const test_case tests[] = {
		TEST(test_one_row_gives_its_postings_and_hides_its_tombstones),
		TEST(test_the_newest_row_wins_per_record),
		TEST(test_more_rows_than_one_merge_takes),
		TEST(test_a_tails_chunks_are_newer_than_the_sealed_rows_and_in_order),
		TEST(test_no_rows_is_no_postings),
		TEST(test_bytes_that_are_no_list_are_refused),
		{NULL, NULL}
	};
	return run_tests(tests);
}
