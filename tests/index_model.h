/*
** index_model.h — what the rules on SQLite's segments and tail
** (tests/test_index_merges.c, _segments.c, _tail.c) share: a model of the
** records to recompute every posting by brute force, a random history of
** writes, SQL on the file, the store's check, and a writer to kill -9
** (header-only; after index_harness.h).
*/
#ifndef A2M_TEST_INDEX_MODEL_H
#define A2M_TEST_INDEX_MODEL_H

#include "index_harness.h"

/* What the records hold, to recompute every posting by brute force. */
#define MODEL_IDS  40
#define MODEL_WORDS 12

typedef struct model {
	char    content[MODEL_IDS][96];
	char    before[MODEL_IDS][96];  /* the content before the last change */
	int64_t seq[MODEL_IDS];
	int     live[MODEL_IDS];
	uint64_t rand;
} model;

static inline uint64_t next_rand(model *m)
{
	m->rand ^= m->rand << 13;
	m->rand ^= m->rand >> 7;
	m->rand ^= m->rand << 17;
	return m->rand;
}

/* 1 to 6 words of the vocabulary v0..v11, repeats allowed. */
static inline void random_content(model *m, char *buf, size_t cap)
{
	int n = 1 + (int)(next_rand(m) % 6);
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && used < cap; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%sv%d", i ? " " : "",
					 (int)(next_rand(m) % MODEL_WORDS));
}

/* The posting of word w in content: *tf occurrences, *dl words. */
static inline void count_word(const char *content, int w, uint32_t *tf, uint32_t *dl)
{
	char want[16], word[16];
	snprintf(want, sizeof want, "v%d", w);
	*tf = *dl = 0;
	for (const char *p = content; *p;) {
		size_t n = strcspn(p, " ");
		if (n && n < sizeof word) {
			memcpy(word, p, n);
			word[n] = '\0';
			(*dl)++;
			*tf += strcmp(word, want) == 0;
		}
		p += n;
		p += *p == ' ';
	}
}

/* 1 when store s gives every word the postings m's records make. */
static inline int postings_match(a2m_store *s, const model *m, char *why, size_t cap)
{
	for (int w = 0; w < MODEL_WORDS; w++) {
		char term[16];
		plist got = {0}, want = {0};
		snprintf(term, sizeof term, "v%d", w);
		/* Live records by ascending seq: ids are inserted in seq order except
		** re-inserts, so sort the few candidates. */
		int64_t order[MODEL_IDS];
		int n = 0;
		for (int i = 0; i < MODEL_IDS; i++)
			if (m->live[i])
				order[n++] = i;
		for (int a = 1; a < n; a++)
			for (int b = a; b > 0 && m->seq[order[b]] < m->seq[order[b - 1]]; b--) {
				int64_t tmp = order[b];
				order[b] = order[b - 1];
				order[b - 1] = tmp;
			}
		for (int k = 0; k < n; k++) {
			uint32_t tf, dl;
			count_word(m->content[order[k]], w, &tf, &dl);
			if (tf)
				collect(m->seq[order[k]], tf, dl, &want);
		}
		if (s->ops->index_postings(s, term, strlen(term), collect, &got) != 0) {
			snprintf(why, cap, "%s: %.100s", term, s->errmsg);
			return 0;
		}
		int same = got.n == want.n;
		for (int k = 0; same && k < got.n; k++)
			same = got.seq[k] == want.seq[k] && got.tf[k] == want.tf[k] &&
				got.dl[k] == want.dl[k];
		if (!same) {
			snprintf(why, cap, "%s: %d postings, want %d", term, got.n, want.n);
			return 0;
		}
	}
	return 1;
}

#define EXPECT_POSTINGS(s, m) do { \
	char why_[128]; \
	if (!postings_match((s), (m), why_, sizeof why_)) { \
		snprintf(failure, sizeof failure, "line %d: %s", __LINE__, why_); return; } \
} while (0)

/* One integer from SQL on t's file, through a connection of its own (-1: error). */
static inline int64_t sql_int(tctx *t, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = -1;
	if (sqlite3_open_v2(t->path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/*
** One step of the random history: insert an absent id, or change a present
** one's content (to new words, back to its previous content, or to the same
** text), or remove it.
*/
static inline int model_step(tctx *t, model *m)
{
	int i = (int)(next_rand(m) % MODEL_IDS), removed = 0;
	char id[16];
	snprintf(id, sizeof id, "r%d", i);
	if (!m->live[i]) {
		random_content(m, m->content[i], sizeof m->content[i]);
		strcpy(m->before[i], m->content[i]);
		m->seq[i] = insert(t, id, m->content[i]);
		m->live[i] = m->seq[i] > 0;
		return m->live[i] ? 0 : -1;
	}
	uint64_t what = next_rand(m) % 10;
	if (what < 2) {
		m->live[i] = 0;
		return t->s->ops->remove(t->s, id, &removed) || !removed ? -1 : 0;
	}
	char next[96];
	if (what < 5)
		strcpy(next, m->before[i]);         /* back and forth */
	else if (what < 6)
		strcpy(next, m->content[i]);        /* unchanged */
	else
		random_content(m, next, sizeof next);
	strcpy(m->before[i], m->content[i]);
	strcpy(m->content[i], next);
	return update(t, id, next, 0);
}

/* The findings of a store's check: problems per area, and the last one's message. */
typedef struct found {
	int  problems;
	char last[256];
} found;

static inline void found_report(void *ctx, a2m_check_area area, int problem, const char *msg)
{
	found *f = ctx;
	if (problem) {
		f->problems++;
		snprintf(f->last, sizeof f->last, "%s: %s", a2m_check_area_name(area), msg);
	}
}

/* 1 when the store's check (the index against tix's analysis) finds nothing wrong. */
static inline int check_clean(a2m_store *s, char *why, size_t cap)
{
	found f = {0, ""};
	a2m_check_options o = {.ix = &tix.base, .report = found_report, .ctx = &f};
	if (s->ops->check(s, &o) != 0) {
		snprintf(why, cap, "check failed: %s", s->errmsg);
		return 0;
	}
	snprintf(why, cap, "%d problems, the last %s", f.problems, f.last);
	return f.problems == 0;
}

/* The i-th record of the kill test: 40 words of a 3 000-word vocabulary. */
static inline void kill_content(uint64_t i, char *buf, size_t cap)
{
	size_t used = 0;
	uint64_t r = i * 0x9E3779B97F4A7C15ull + 1;
	for (int k = 0; k < 40 && used < cap; k++) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		used += (size_t)snprintf(buf + used, cap - used, "%sword%u", k ? " " : "",
					 (unsigned)(r % 3000));
	}
}

/*
** The writer of the kill test, in a child: commits of three new records
** and an older one changed (tombstones), or (lone) of one new record
** each, acknowledged on fd after its commit with the count of records
** written; never returns.
*/
static inline void kill_writer(tctx *t, int fd, uint64_t first, int lone)
{
	char id[32], text[512];
	uint64_t per = lone ? 1 : 3;
	if (open_indexed(t, &tix) != 0)
		_exit(2);
	for (uint64_t n = first;; n += per) {
		if (!lone && t->s->ops->begin(t->s) != 0)
			_exit(3);
		for (uint64_t i = n; i < n + per; i++) {
			snprintf(id, sizeof id, "k%llu", (unsigned long long)i);
			kill_content(i, text, sizeof text);
			if (insert(t, id, text) < 0)
				_exit(4);
		}
		if (n && !lone) {
			snprintf(id, sizeof id, "k%llu", (unsigned long long)((n * 2654435761ull >> 7) % n));
			kill_content(n + 1000000, text, sizeof text);
			if (update(t, id, text, 0) != 0)
				_exit(5);
		}
		if (!lone && t->s->ops->commit(t->s) != 0)
			_exit(6);
		uint64_t done = n + per;
		if (write(fd, &done, sizeof done) != (ssize_t)sizeof done)
			_exit(7);
	}
}

/*
** Runs kill_writer in a child from *acked on, kills it with SIGKILL once
** it acknowledged want records and delay µs more went by, and sets *acked
** to the last count it acknowledged. Returns 0, or -1 (failure set).
*/
static inline int kill_round(tctx *t, uint64_t *acked, uint64_t want, useconds_t delay, int lone)
{
	int fds[2];
	if (pipe(fds) != 0) {
		snprintf(failure, sizeof failure, "pipe");
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		kill_writer(t, fds[1], *acked, lone);
	}
	close(fds[1]);
	uint64_t done;
	while (*acked < want && read(fds[0], &done, sizeof done) == (ssize_t)sizeof done)
		*acked = done;
	usleep(delay);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	while (read(fds[0], &done, sizeof done) == (ssize_t)sizeof done)
		*acked = done;
	close(fds[0]);
	return 0;
}

#endif
