/*
** test_analyze_ahead.c — the analysis workers of rank/analyze_ahead.h: a
** batch analysed ahead (or foreseen) gives the writer the same terms it
** would have made itself, and the workers never hold a batch's end.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "rank/analyze.h"
#include "rank/analyze_ahead.h"
#include "rank/analyze_internal.h"

static a2m_analyzer *an;
/* The same terms, counts and length, in the same order. */
static int same_analysis(const a2m_doc_terms *a, const a2m_doc_terms *b)
{
	if (a->n != b->n || a->length != b->length || a->has_text != b->has_text)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->terms[i].len != b->terms[i].len || a->terms[i].tf != b->terms[i].tf ||
		    memcmp(a->terms[i].text, b->terms[i].text, a->terms[i].len) != 0)
			return 0;
	return 1;
}

/* Waits (20 s at most) until the workers finished this thread's n texts. */
static int workers_finish(size_t n)
{
	for (int waited = 0; a2m_analyze_ahead_done() < n && waited < 20000; waited++)
		usleep(1000);
	return a2m_analyze_ahead_done() == n;
}

/* Asks for texts[i] of own (the batch's strings) for i not skipped; counts handovers. */
static size_t ask_batch(char *const *own, const char *const *texts, size_t n, size_t *taken)
{
	a2m_indexer *ix = a2m_analyzer_indexer(an);
	size_t asked = 0;
	*taken = 0;
	for (size_t i = 0; i < n; i++) {
		if (i % 10 == 3)
			continue;  /* skipped, as an idempotent retry is */
		a2m_doc_terms got, want;
		memset(&got, 0, sizeof got);
		const char *text = texts[i] ? own[i] : "a text the batch did not hold";
		int took = a2m_analyze_ahead_take(an, text, &got);
		*taken += (size_t)took;
		if (!took)
			CHECK(ix->analyze(ix, text, &got) == 0);
		CHECK(a2m_analyze_doc(an, text, &want) == 0);
		CHECK(same_analysis(&got, &want));
		ix->release(ix, &got);
		a2m_doc_terms_free(&want);
		asked++;
	}
	return asked;
}

/*
** A batch analysed ahead (by worker threads) hands each text exactly the
** terms the analyser gives it directly; texts asked for out of order, not
** in the batch, or after the drop are analysed as usual; and when the
** caller is ahead of the workers, it analyses the text itself.
*/
static void test_batch_analysed_ahead_gives_the_same_terms(void)
{
	enum { N = 300 };
	static const char *const words[] = {
		"rotating", "città", "Köln", "the", "engines", "東京都", "читать", "gatos",
		"und", "running", "quickly", "zebra"};
	char *own[N];
	const char *texts[N];
	a2m_indexer *ix = a2m_analyzer_indexer(an);
	for (size_t i = 0; i < N; i++) {
		char buf[256];
		snprintf(buf, sizeof buf, "%s %s %s record %zu", words[i % 12], words[(i * 7) % 12],
			 words[(i * 5 + 3) % 12], i);
		own[i] = strdup(buf);
		texts[i] = i % 50 == 7 ? NULL : own[i];  /* a record without text */
	}
	CHECK(ix->prepare != NULL && ix->unprepare != NULL);
	/* Once the workers are done, every text in the batch and asked for is handed over. */
	CHECK(ix->prepare(ix, texts, N) == 0);
	CHECK(workers_finish(N));
	size_t taken;
	CHECK(ask_batch(own, texts, N, &taken) == N - N / 10);
	CHECK(taken == N - N / 10 - N / 50);
	/* A copy of a text at another address is analysed afresh, not matched. */
	char *copy = strdup(own[0]);
	a2m_doc_terms d;
	memset(&d, 0, sizeof d);
	CHECK(a2m_analyze_ahead_take(an, copy, &d) == 0);
	ix->unprepare(ix);
	/* After the drop nothing is handed over, even a text never taken. */
	CHECK(a2m_analyze_ahead_take(an, own[3], &d) == 0);
	/* Asked at once, racing the workers: whoever analyses a text, the terms are right. */
	CHECK(ix->prepare(ix, texts, N) == 0);
	CHECK(ask_batch(own, texts, N, &taken) == N - N / 10);
	CHECK(taken <= N - N / 10 - N / 50);
	ix->unprepare(ix);
	free(copy);
	for (size_t i = 0; i < N; i++)
		free(own[i]);
}

/*
** A batch foreseen (its texts handed over before any write began, here
** from copies freed at once) is taken by the prepare of the same texts at
** other addresses, with what the workers did meanwhile, and every text
** asked for gets its own terms. A prepare of other texts starts afresh
** and leaves it for its own; a second foresee lets it go. The terms are
** right all the same.
*/
static void test_foreseen_batch_taken_by_the_prepare_of_its_texts(void)
{
	enum { N = 300 };
	char *own[N];
	const char *texts[N], *early[N];
	a2m_indexer *ix = a2m_analyzer_indexer(an);
	CHECK(ix->foresee != NULL);
	for (size_t i = 0; i < N; i++) {
		char buf[128];
		snprintf(buf, sizeof buf, "foreseen gatos und engines %zu rotating", i);
		own[i] = strdup(buf);
		texts[i] = i % 50 == 7 ? NULL : own[i];
	}
	for (size_t i = 0; i < N; i++)
		early[i] = texts[i] ? strdup(texts[i]) : NULL;
	CHECK(ix->foresee(ix, early, N) == 0);
	for (size_t i = 0; i < N; i++)
		free((char *)early[i]);
	CHECK(ix->prepare(ix, texts, N) == 0);
	CHECK(a2m_analyze_ahead_foreseen_for_tests());
	CHECK(workers_finish(N));
	size_t taken;
	CHECK(ask_batch(own, texts, N, &taken) == N - N / 10);
	CHECK(taken == N - N / 10 - N / 50);
	ix->unprepare(ix);
	/* Not the texts foreseen (one byte differs): a fresh batch. */
	char *changed = strdup(own[5]);
	changed[0] = 'F';
	const char *other[N];
	memcpy(other, texts, sizeof other);
	CHECK(ix->foresee(ix, texts, N) == 0);
	other[5] = changed;
	CHECK(ix->prepare(ix, other, N) == 0);
	CHECK(!a2m_analyze_ahead_foreseen_for_tests());
	CHECK(ask_batch(own, other, N, &taken) == N - N / 10);
	ix->unprepare(ix);
	/* ... which left the foreseen one for the write it was foreseen for. */
	CHECK(ix->prepare(ix, texts, N) == 0);
	CHECK(a2m_analyze_ahead_foreseen_for_tests());
	CHECK(ask_batch(own, texts, N, &taken) == N - N / 10);
	ix->unprepare(ix);
	/* A second foresee lets the first go. */
	CHECK(ix->foresee(ix, texts, N) == 0);
	CHECK(ix->foresee(ix, other, N) == 0);
	CHECK(ix->prepare(ix, texts, N) == 0);
	CHECK(!a2m_analyze_ahead_foreseen_for_tests());
	CHECK(ask_batch(own, texts, N, &taken) == N - N / 10);
	ix->unprepare(ix);
	/* Left foreseen by an analyser freed then: freed with its pool (ASan:
	** nothing leaks, no worker left running). */
	a2m_analyzer *other_an = a2m_analyzer_new(NULL);
	a2m_indexer *oix = other_an ? a2m_analyzer_indexer(other_an) : NULL;
	CHECK(oix && oix->foresee(oix, texts, N) == 0);
	a2m_analyzer_free(other_an);
	free(changed);
	for (size_t i = 0; i < N; i++)
		free(own[i]);
}

static atomic_int released;

/* Lets the held worker go after 3 s, unless the test did first. */
static void *release_later(void *arg)
{
	(void)arg;
	for (int i = 0; i < 300 && !atomic_load(&released); i++)
		usleep(10000);
	a2m_analyze_ahead_hold_for_tests(0);
	return NULL;
}

/*
** The writer never waits for a worker the scheduler does not run: with a
** worker stopped on the first text it claimed, every text is still handed
** the right terms (the caller analyses them itself, the stopped one after
** a short wait), and the batch's end returns while the worker is still
** stopped (it used to join the workers: it would wait the 3 s the releasing
** thread gives). Let go, the worker finishes on its copy of the text, after
** the caller freed its own, and frees the batch (ASan: nothing leaks, no
** use after free).
*/
static void test_batch_end_waits_for_no_worker(void)
{
	enum { N = 200 };
	char *own[N];
	const char *texts[N];
	for (size_t i = 0; i < N; i++) {
		char buf[64];
		snprintf(buf, sizeof buf, "held worker note %zu about gatos und engines", i);
		own[i] = strdup(buf);
		texts[i] = own[i];
	}
	a2m_indexer *ix = a2m_analyzer_indexer(an);
	a2m_analyze_ahead_hold_for_tests(1);
	CHECK(ix->prepare(ix, texts, N) == 0);
	for (int waited = 0; !a2m_analyze_ahead_held_for_tests() && waited < 5000; waited++)
		usleep(1000);
	CHECK(a2m_analyze_ahead_held_for_tests() >= 1);
	pthread_t rel;
	int timer = pthread_create(&rel, NULL, release_later, NULL) == 0;
	CHECK(timer);
	size_t taken;
	CHECK(ask_batch(own, texts, N, &taken) == N - N / 10);
	CHECK(taken == 0);
	ix->unprepare(ix);
	CHECK(a2m_analyze_ahead_held_for_tests() >= 1);
	for (size_t i = 0; i < N; i++) {
		memset(own[i], 'x', strlen(own[i]));
		free(own[i]);
	}
	a2m_analyze_ahead_hold_for_tests(0);
	atomic_store(&released, 1);
	if (timer)
		pthread_join(rel, NULL);
	/* The pool goes on: the next batch is analysed ahead as before. */
	for (size_t i = 0; i < N; i++) {
		char buf[64];
		snprintf(buf, sizeof buf, "second batch %zu rotating", i);
		own[i] = strdup(buf);
		texts[i] = own[i];
	}
	CHECK(ix->prepare(ix, texts, N) == 0);
	CHECK(workers_finish(N));
	CHECK(ask_batch(own, texts, N, &taken) == N - N / 10);
	CHECK(taken == N - N / 10);
	ix->unprepare(ix);
	for (size_t i = 0; i < N; i++)
		free(own[i]);
}

/* An analyser told to use no batch threads analyses every text as it comes. */
static void test_no_batch_threads_keeps_nothing_ahead(void)
{
	enum { N = 100 };
	a2m_analyzer_options opt;
	a2m_analyzer_options_init(&opt);
	CHECK(opt.batch_threads == -1);
	opt.batch_threads = 0;
	a2m_analyzer *none = a2m_analyzer_new(&opt);
	CHECK(none != NULL);
	if (!none)
		return;
	char own[N][32];
	const char *texts[N];
	for (int i = 0; i < N; i++) {
		snprintf(own[i], sizeof own[i], "plain text number %d", i);
		texts[i] = own[i];
	}
	a2m_indexer *ix = a2m_analyzer_indexer(none);
	CHECK(ix->prepare(ix, texts, N) == 0);
	usleep(20000);
	CHECK(a2m_analyze_ahead_done() == 0);
	a2m_doc_terms d;
	memset(&d, 0, sizeof d);
	CHECK(a2m_analyze_ahead_take(none, own[0], &d) == 0);
	CHECK(ix->analyze(ix, own[0], &d) == 0 && d.n >= 4 && d.length == 4);
	ix->release(ix, &d);
	ix->unprepare(ix);
	a2m_analyzer_free(none);
}

int main(void)
{
	an = a2m_analyzer_new(NULL);
	if (!an) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	static const test_case tests[] = {
		TEST(test_batch_analysed_ahead_gives_the_same_terms),
		TEST(test_foreseen_batch_taken_by_the_prepare_of_its_texts),
		TEST(test_batch_end_waits_for_no_worker),
		TEST(test_no_batch_threads_keeps_nothing_ahead),
		{NULL, NULL}
	};
	int rc = run_tests(tests);
	a2m_analyzer_free(an);
	return rc;
}
