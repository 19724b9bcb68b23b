/*
** test_rank_threads.c — the rank layer called by several threads at once
** (scorer.h, analyze.h: "Threads"; docs/RANKING.md §9).
**
** Every answer is first computed on one thread; then four threads ask the
** same questions of the same objects, at once and in different orders, and
** every answer must be byte for byte the serial one: candidates (seqs and
** scores to the bit, with their bounds and flags) and relevances of every
** scorer of src/rank, the indexer's analysis (what a writer calls while
** readers query), and a2m_analyze_doc / a2m_analyze_query / a2m_stem of an
** analyser of its own. The corpus has records in eight languages and in
** none, so that every stemmer runs, and enough distinct words that the
** stem caches evict. Run under ThreadSanitizer too (make TSAN=1), where a
** shared scratch or stemmer is reported even when the answers survive it.
*/
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "check.h"
#include "rank/analyze.h"
#include "rank/scorer.h"
#include "store/record.h"
#include "store/store.h"

#define THREADS  4
#define ROUNDS   1
#define RECORDS  3000
#define QUERIES  240
#define DIMS     8
#define SLICE    200  /* the records relevance() judges per query */
#define NOINDEX  40   /* ... per query, when judged without the store's index */

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint64_t rng(void)
{
	return check_rand(&rng_state);
}

static double unif(void)
{
	return (double)(rng() >> 11) / 9007199254740992.0;
}

/* ---- a corpus in many languages ----------------------------------------- */

enum { LANGS = 8, NO_LANG = 8, CJK = 9, KINDS = 10 };

/* Inflected words, so that each language's stemmer has work to do. */
static const char *const words[LANGS][14] = {
	{"running", "runners", "connected", "connections", "rotates", "houses", "quickly",
	 "beautiful", "gardens", "walked", "memories", "remembering", "networks", "databases"},
	{"città", "case", "parlando", "mangiato", "bellissimo", "giardini", "ricordi",
	 "lavoravo", "amiche", "montagne", "perché", "finestre", "cantavano", "libri"},
	{"ciudades", "casas", "hablando", "comiendo", "corriendo", "jardines", "recuerdos",
	 "trabajando", "amigos", "niños", "montañas", "canciones", "escribió", "libros"},
	{"maisons", "parlons", "mangeons", "jardins", "souvenirs", "travaillaient", "amitiés",
	 "enfants", "montagnes", "château", "fenêtres", "chantaient", "écrivait", "livres"},
	{"Häuser", "Gärten", "arbeiten", "arbeitete", "Erinnerungen", "Kinder", "Straße",
	 "Bücher", "gefahren", "schönen", "Fenster", "sangen", "schrieb", "Bergen"},
	{"cidades", "irmã", "irmão", "trabalhando", "lembranças", "crianças", "coração",
	 "falando", "comendo", "montanhas", "janelas", "cantavam", "escreveu", "livros"},
	{"huizen", "tuinen", "werken", "werkte", "herinneringen", "kinderen", "fietsen",
	 "gefietst", "mooie", "bergen", "ramen", "zongen", "schreef", "boeken"},
	{"Москва", "столица", "России", "ёлка", "йогурт", "работать", "работали",
	 "воспоминания", "дети", "города", "книги", "окна", "пели", "писал"},
};

/* Function words: what the detector decides a text's language by. */
static const char *const stops[LANGS][5] = {
	{"the", "and", "of", "with", "is"},   {"il", "della", "che", "di", "non"},
	{"el", "los", "que", "de", "por"},    {"le", "les", "des", "et", "est"},
	{"der", "die", "und", "mit", "ist"},  {"o", "os", "não", "uma", "do"},
	{"het", "een", "niet", "zijn", "ook"}, {"и", "в", "не", "на", "что"},
};

static const char *const cjk[] = {"東京は日本の首都です", "한국어 문장", "中", "京都の寺"};

/*
** A made-up word, a Latin one of the lists with two letters and an ending
** added: thousands of them, each stemmed under seven languages when its
** text has none, so that the stem caches fill and evict.
*/
static void made_up(char *out, size_t cap)
{
	static const char *const ending[] = {"", "s", "ing", "ed", "ità", "ões"};
	size_t i = (size_t)(unif() * unif() * 4000);
	snprintf(out, cap, "%s%c%c%s", words[i % 7][i / 7 % 14], 'a' + (int)(i % 26),
		 'a' + (int)(i / 26 % 26), ending[rng() % 6]);
}

/* A text of `count` words of kind (a language, NO_LANG or CJK). */
static void text_of(char *out, size_t cap, int kind, size_t count)
{
	char w[64];
	size_t n = 0;
	out[0] = '\0';
	for (size_t j = 0; j < count && n + 80 < cap; j++) {
		uint64_t r = rng() % 10;
		if (kind == CJK && r < 3)
			snprintf(w, sizeof w, "%s", cjk[rng() % 4]);
		else if (kind < LANGS && r < 3)
			snprintf(w, sizeof w, "%s", stops[kind][rng() % 5]);
		else if (kind < LANGS && r < 7)
			snprintf(w, sizeof w, "%s", words[kind][rng() % 14]);
		else
			made_up(w, sizeof w);
		n += (size_t)snprintf(out + n, cap - n, "%s%s", j ? " " : "", w);
	}
}

static double *random_vector(void)
{
	double *v = malloc(DIMS * sizeof *v);
	for (size_t i = 0; v && i < DIMS; i++)
		v[i] = unif() * 2 - 1;
	return v;
}

static float *random_floats(void)
{
	float *v = malloc(DIMS * sizeof *v);
	for (size_t i = 0; v && i < DIMS; i++)
		v[i] = (float)(unif() * 2 - 1);
	return v;
}

/* ---- what is asked ------------------------------------------------------ */

/* One query: text and vectors, and how much of the list it wants. */
typedef struct question {
	char   text[256];
	double vector[DIMS];
	float  gen[DIMS];
	int    kind;  /* which parts it has (see ask) */
} question;

typedef struct world {
	a2m_store   *store;
	a2m_scorer  *hybrid;     /* BM25, the caller's vectors, generated ones */
	a2m_scorer  *part[3];    /* its parts, owned by it */
	a2m_scorer  *lexical;
	a2m_record **recs;       /* every record, for relevance() */
	size_t       nrecs;
	question     q[QUERIES];
} world;

static void ask(const question *qs, a2m_rank_query *rq)
{
	memset(rq, 0, sizeof *rq);
	rq->text = qs->kind == 5 ? NULL : qs->text;
	rq->want = qs->kind == 1 ? 0 : qs->kind == 2 ? 5 : 10;
	rq->complete = qs->kind == 1;
	rq->floor = 0.75;
	rq->min_relevance = qs->kind == 2 ? 0.3 : 0;
	if (qs->kind == 3 || qs->kind == 5) {
		rq->vector = qs->vector;
		rq->dims = DIMS;
	}
	if (qs->kind == 4 || qs->kind == 5) {
		rq->gen_vector = qs->gen;
		rq->gen_dims = DIMS;
	}
}

/* ---- answers as bytes --------------------------------------------------- */

/* A growable byte string: one question's every answer, to compare whole. */
typedef struct sink {
	unsigned char *p;
	size_t         n, cap;
	int            oom;
} sink;

static void put(sink *s, const void *v, size_t n)
{
	if (s->oom || s->n + n > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		while (cap < s->n + n)
			cap *= 2;
		unsigned char *p = s->oom ? NULL : realloc(s->p, cap);
		if (!p) {
			s->oom = 1;
			return;
		}
		s->p = p;
		s->cap = cap;
	}
	memcpy(s->p + s->n, v, n);
	s->n += n;
}

static void put_int(sink *s, long long v)
{
	put(s, &v, sizeof v);
}

/* Bits, not values: -0.0 and 0.0, or two NaNs, differ here. */
static void put_double(sink *s, double v)
{
	put(s, &v, sizeof v);
}

static int by_seq(const void *a, const void *b)
{
	const a2m_candidate *x = a, *y = b;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/*
** A candidate list: its flags and bound, its best-first prefix as given,
** the rest by seq (scorer.h leaves its order open).
*/
static void put_candidates(sink *s, int rc, a2m_candidates *c)
{
	put_int(s, rc);
	if (rc != 0)
		return;
	put_int(s, (long long)c->n);
	put_int(s, (long long)c->sorted);
	put_int(s, c->bounded != NULL);
	put_int(s, c->judged_listed);
	put_int(s, c->salience_known);
	put_double(s, c->salience_max);
	put_double(s, c->rest_bound);
	if (c->n > c->sorted)
		qsort(c->v + c->sorted, c->n - c->sorted, sizeof *c->v, by_seq);
	for (size_t i = 0; i < c->n; i++) {
		put_int(s, c->v[i].seq);
		put_double(s, c->v[i].score);
	}
}

static void put_doc(sink *s, int rc, const a2m_doc_terms *d)
{
	put_int(s, rc);
	put_int(s, d->length);
	put_int(s, d->has_text);
	for (size_t i = 0; i < d->n; i++) {
		put(s, d->terms[i].text, d->terms[i].len);
		put_int(s, d->terms[i].tf);
	}
}

static void put_query(sink *s, int rc, const a2m_query_terms *q)
{
	put_int(s, rc);
	put_int(s, q->guess.lang);
	put_int(s, q->guess.cands);
	for (size_t w = 0; w < q->nwords; w++) {
		put_double(s, q->weight[w]);
		for (size_t k = q->word_at[w]; k < q->word_at[w + 1]; k++) {
			put(s, q->keys[k].text, q->keys[k].len);
			put_double(s, q->key_weight[k]);
		}
		put_int(s, -1);
	}
}

/*
** Everything the scorers answer to question i, into s: each scorer's
** candidates, each one's relevances over a slice of the records, BM25's
** relevances without the index now and then (which analyses each record
** it judges), and the indexer's analysis of a record.
*/
static void answers(const world *w, size_t i, sink *s)
{
	a2m_rank_query rq;
	a2m_candidates c;
	ask(&w->q[i], &rq);
	a2m_scorer *const all[] = {w->hybrid, w->part[0], w->part[1], w->part[2], w->lexical};
	for (size_t k = 0; k < 5; k++) {
		if (!all[k]->candidates)
			continue;
		int rc = all[k]->candidates(all[k], w->store, &rq, &c);
		put_candidates(s, rc, &c);
		if (rc == 0)
			free(c.v);
	}
	size_t from = i * 37 % (w->nrecs - SLICE);
	const a2m_record *const *slice = (const a2m_record *const *)w->recs + from;
	double scores[SLICE];
	/* The lexical scorer reads every word of every record: a quarter of the time. */
	for (size_t k = 0; k < 5 - (i % 4 != 0); k++) {
		int rc = all[k]->relevance(all[k], w->store, &rq, slice, SLICE, scores);
		put_int(s, rc);
		for (size_t j = 0; rc == 0 && j < SLICE; j++)
			put_double(s, scores[j]);
	}
	if (i % 8 == 0) {
		int rc = w->part[0]->relevance(w->part[0], NULL, &rq, slice, NOINDEX, scores);
		put_int(s, rc);
		for (size_t j = 0; rc == 0 && j < NOINDEX; j++)
			put_double(s, scores[j]);
	}
	a2m_indexer *ix = w->hybrid->indexer;
	a2m_doc_terms d;
	int rc = ix->analyze(ix, w->recs[i * 11 % w->nrecs]->content, &d);
	put_doc(s, rc, &d);
	ix->release(ix, &d);
}

/* ---- the threads -------------------------------------------------------- */

/*
** One thread's run: every question of `count`, ROUNDS times, from a start
** and with a stride of its own, each answer compared with the serial one.
** The harness's counters are not for threads: mismatches are counted here.
*/
typedef struct runner {
	pthread_t          tid;
	pthread_barrier_t *go;
	size_t             count, start, stride;
	void             (*answer)(const void *ctx, size_t i, sink *s);
	const void        *ctx;
	const sink        *want;   /* the serial answers, count of them */
	size_t             wrong, first_wrong, oom;
} runner;

static void *run(void *arg)
{
	runner *r = arg;
	sink s = {0};
	pthread_barrier_wait(r->go);
	for (size_t round = 0; round < ROUNDS; round++)
		for (size_t j = 0; j < r->count; j++) {
			size_t i = (r->start + j * r->stride) % r->count;
			s.n = 0;
			r->answer(r->ctx, i, &s);
			if (s.oom) {
				r->oom++;
			} else if (s.n != r->want[i].n || memcmp(s.p, r->want[i].p, s.n) != 0) {
				if (!r->wrong++)
					r->first_wrong = i;
			}
		}
	free(s.p);
	return NULL;
}

/*
** Answers every one of count questions serially, then THREADS at once,
** and checks that every concurrent answer is the serial one.
*/
static void concurrent_equals_serial(void (*answer)(const void *ctx, size_t i, sink *s),
				     const void *ctx, size_t count)
{
	static const size_t strides[THREADS] = {1, 7, 11, 13};  /* prime to count */
	sink *want = calloc(count, sizeof *want);
	runner r[THREADS];
	pthread_barrier_t go;
	CHECK(want != NULL);
	if (!want)
		return;
	size_t bytes = 0;
	for (size_t i = 0; i < count; i++) {
		answer(ctx, i, &want[i]);
		CHECK(!want[i].oom);
		bytes += want[i].n;
	}
	CHECK(bytes > count * 64);  /* the answers are not all empty */
	CHECK_INT(pthread_barrier_init(&go, NULL, THREADS), 0);
	for (size_t t = 0; t < THREADS; t++) {
		r[t] = (runner){.go = &go, .count = count, .start = t * 61, .stride = strides[t],
				.answer = answer, .ctx = ctx, .want = want};
		CHECK_INT(pthread_create(&r[t].tid, NULL, run, &r[t]), 0);
	}
	for (size_t t = 0; t < THREADS; t++) {
		pthread_join(r[t].tid, NULL);
		CHECK_INT(r[t].oom, 0);
		if (r[t].wrong)
			fprintf(stderr, "  thread %zu: %zu answers differ, the first to question %zu\n",
				t, r[t].wrong, r[t].first_wrong);
		CHECK_INT(r[t].wrong, 0);
	}
	pthread_barrier_destroy(&go);
	for (size_t i = 0; i < count; i++)
		free(want[i].p);
	free(want);
}

/* ---- the world: a store, its scorers, records and questions ------------- */

static int collect(const a2m_record *rec, void *ctx)
{
	world *w = ctx;
	a2m_record **v = realloc(w->recs, (w->nrecs + 1) * sizeof *v);
	if (!v)
		return -1;
	w->recs = v;
	if (!(v[w->nrecs] = a2m_record_dup(rec)))
		return -1;
	w->nrecs++;
	return 0;
}

static void world_free(world *w)
{
	if (w->store)
		w->store->ops->close(w->store);
	if (w->hybrid)
		w->hybrid->destroy(w->hybrid);
	if (w->lexical)
		w->lexical->destroy(w->lexical);
	a2m_record_array_free(w->recs, w->nrecs);
	free(w);
}

/* RECORDS records in every language, indexed for the server's scorer. */
static world *world_new(void)
{
	world *w = calloc(1, sizeof *w);
	char err[256], text[1024], id[32];
	if (!w)
		return NULL;
	w->part[0] = a2m_scorer_bm25_new(NULL);
	w->part[1] = a2m_scorer_vector_new(A2M_METRIC_COSINE, 0);
	w->part[2] = a2m_scorer_gen_vector_new(A2M_GEN_MIN_COSINE);
	w->hybrid = a2m_scorer_hybrid_new(w->part, 3);
	w->lexical = a2m_scorer_lexical_new();
	if (!w->hybrid || !w->lexical || a2m_store_memory_open(&w->store, err, sizeof err) != 0 ||
	    w->store->ops->index_attach(w->store, w->hybrid->indexer) != 0) {
		world_free(w);
		return NULL;
	}
	rng_state = 0x9E3779B97F4A7C15ULL;
	for (int i = 0; i < RECORDS; i++) {
		a2m_record *r = a2m_record_new();
		if (!r)
			break;
		snprintf(id, sizeof id, "r%d", i);
		text_of(text, sizeof text, (int)(rng() % KINDS), 3 + rng() % 12);
		r->id = strdup(id);
		r->content = strdup(text);
		r->created_at = 4102444800000LL + i;
		/* Few vectors: their lists are long, and their scorers keep no state. */
		if (rng() % 4 == 0) {
			r->embedding = random_vector();
			r->dims = DIMS;
		}
		if (rng() % 4 == 0) {
			r->gen_embedding = random_floats();
			r->gen_dims = DIMS;
		}
		int rc = w->store->ops->insert(w->store, r);
		a2m_record_free(r);
		if (rc)
			break;
	}
	a2m_query every = {0};
	if (w->store->ops->scan(w->store, &every, collect, w) != 0 || w->nrecs != RECORDS) {
		world_free(w);
		return NULL;
	}
	for (size_t i = 0; i < QUERIES; i++) {
		question *q = &w->q[i];
		text_of(q->text, sizeof q->text, (int)(rng() % KINDS), 1 + rng() % 4);
		for (size_t k = 0; k < DIMS; k++) {
			q->vector[k] = unif() * 2 - 1;
			q->gen[k] = (float)(unif() * 2 - 1);
		}
		q->kind = (int)(i % 6);
	}
	return w;
}

static void world_answers(const void *ctx, size_t i, sink *s)
{
	answers(ctx, i, s);
}

/*
** candidates() and relevance() of BM25, the vector scorers, the hybrid and
** the lexical scorer, and the indexer, called by four threads at once on
** the same objects, answer exactly what they answer one at a time.
*/
static void test_scorers_answer_concurrent_queries_as_serial_ones(void)
{
	world *w = world_new();
	CHECK(w != NULL);
	if (!w)
		return;
	concurrent_equals_serial(world_answers, w, QUERIES);
	world_free(w);
}

/* ---- the analyser alone ------------------------------------------------- */

#define TEXTS 1200

typedef struct texts {
	a2m_analyzer *an;
	char         *v[TEXTS];
} texts;

/* What the analyser says of text i: as a record, as a query, its stems. */
static void analyses(const void *ctx, size_t i, sink *s)
{
	const texts *t = ctx;
	a2m_doc_terms d;
	a2m_query_terms q;
	int rc = a2m_analyze_doc(t->an, t->v[i], &d);
	put_doc(s, rc, &d);
	a2m_doc_terms_free(&d);
	rc = a2m_analyze_query(t->an, t->v[i], &q);
	put_query(s, rc, &q);
	a2m_query_terms_free(&q);
	char stem[512];
	size_t len = strcspn(t->v[i], " ");
	for (int l = 0; l < A2M_LANG_COUNT; l++)
		put_int(s, (long long)a2m_stem(t->an, l, t->v[i], len, stem, sizeof stem));
}

/*
** a2m_analyze_doc, a2m_analyze_query and a2m_stem, called by four threads
** at once on one analyser, answer exactly what they answer one at a time.
*/
static void test_analyser_answers_concurrent_calls_as_serial_ones(void)
{
	texts *t = calloc(1, sizeof *t);
	char text[1024];
	CHECK(t != NULL);
	if (!t)
		return;
	t->an = a2m_analyzer_new(NULL);
	CHECK(t->an != NULL);
	rng_state = 0x2545F4914F6CDD1DULL;
	for (size_t i = 0; i < TEXTS; i++) {
		text_of(text, sizeof text, (int)(rng() % KINDS), 1 + rng() % 16);
		t->v[i] = strdup(text);
		CHECK(t->v[i] != NULL);
	}
	if (t->an && !check_failures_in_test)
		concurrent_equals_serial(analyses, t, TEXTS);
	for (size_t i = 0; i < TEXTS; i++)
		free(t->v[i]);
	a2m_analyzer_free(t->an);
	free(t);
}

int main(void)
{
	static const test_case tests[] = {
		TEST(test_scorers_answer_concurrent_queries_as_serial_ones),
		TEST(test_analyser_answers_concurrent_calls_as_serial_ones),
		{NULL, NULL},
	};
	return run_tests(tests);
}
