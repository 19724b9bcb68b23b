/*
** bench_memory.c — `a2m bench memory`: a long-conversation memory benchmark
** in the shape of LongMemEval's question types, driven through the
** protocol as an agent would drive it (docs/BENCHMARKS.md).
**
** A deterministic generator writes, for each of several users (owners,
** every tier private, so each asks only of their own memory), weekly
** sessions of chit-chat between a user and an assistant into working
** memory, the turns that carry facts among them, and closes each session
** (memory/session/close) as a conversation ends. Then the users ask, each
** question one memory/recall (limit 5):
**
**   single   a fact told once ("What is my sister called?")
**   multi    two facts told in different sessions, both needed
**   update   a fact told, then superseded in a later session: the later
**            one is the evidence, the earlier a distractor
**   temporal an event that happened twice, asked of one month: the agent
**            narrows by the session's date (a where range, x-where)
**   absent   a fact never told: the right answer is no record at all
**
** recall@k is the share of a question's evidence turns among the first k
** records, averaged per type; the abstention rate is the share of absent
** questions answered with no record (and, beside it, how often a question
** that had an answer got none). The same conversation and questions run
** once with lexical ranking alone and, given an OpenAI-compatible embedder
** (--embed-url; bench/memory/run.sh serves a real sentence-embedding model),
** once per fusion weight of its vectors against the text (embed_weight).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "a2m.h"
#include "cli/bench.h"
#include "util/buf.h"
#include "util/curl_api.h"
#include "util/grow.h"

#define SESSIONS  30
#define MAX_EVID  2
#define QS_PER_USER 64 /* more than the questions plan_user() asks */
#define DAY_MS    86400000LL
/* 2024-01-07T00:00:00Z, a Sunday: session s happens 7 * s days later. */
#define FIRST_DAY 1704585600000LL

static const char *const names[] = {"Ana", "Bruno", "Clara", "Diego", "Elena", "Farid", "Greta",
	"Hugo", "Ines", "Jonas", "Kira", "Lucas", "Marta", "Nuno", "Olga", "Pavel"};
static const char *const jobs[] = {"nurse", "carpenter", "data analyst", "pharmacist",
	"architect", "translator", "baker", "electrician"};
static const char *const foods[] = {"peanuts", "shellfish", "sesame", "strawberries", "gluten",
	"kiwi"};
static const char *const bands[] = {"Radiohead", "ABBA", "Metallica", "Fleetwood Mac",
	"Daft Punk", "The Cure"};
static const char *const cars[] = {"Volvo estate", "Fiat Panda", "Toyota Corolla",
	"Renault Clio", "Mazda MX-5", "Skoda Octavia"};
static const char *const words[] = {"sunflower42", "bluewhale7", "maplesyrup9", "orbit2001",
	"tangerine88", "quietfox3"};
static const char *const cities[] = {"Porto", "Lisbon", "Madrid", "Lyon", "Krakow", "Ghent",
	"Turin", "Bergen", "Seville", "Graz"};
static const char *const bloods[] = {"O negative", "A positive", "B negative", "AB positive"};
static const char *const sports[] = {"squash", "badminton", "water polo", "table tennis",
	"volleyball", "fencing"};
static const char *const places[] = {"blue flowerpot", "doormat", "garden gnome",
	"loose brick by the gate", "bird feeder"};
static const char *const pets[] = {"Whiskers", "Pepper", "Mochi", "Biscuit", "Luna", "Rocky"};
static const char *const things[] = {"stand mixer", "cast iron pan", "espresso machine",
	"rice cooker", "toaster oven", "knife block"};
static const char *const instruments[] = {"violin", "trumpet", "cello", "drums", "flute",
	"ukulele"};
static const char *const books[] = {"Middlemarch", "Dune", "The Hobbit", "Beloved",
	"Moby Dick", "Persuasion"};
static const char *const langs[] = {"Japanese", "German", "Italian", "Korean", "Dutch", "Greek"};
static const char *const phones[] = {"Pixel", "iPhone", "Fairphone", "Galaxy", "Nokia"};
static const char *const restaurants[] = {"Casa Lupo", "The Green Fig", "Sakura House",
	"El Faro", "Bistro Nord", "Taverna Mia"};
static const char *const days[] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"};
static const char *const trails[] = {"Sintra", "the Arrábida ridge", "Monsanto park",
	"the Gerês falls", "Serra da Estrela", "the cliffs at Azenhas"};
static const char *const films[] = {"Oppenheimer", "Past Lives", "Dune Part Two",
	"Perfect Days", "Poor Things", "Anatomy of a Fall"};
static const char *const repairs[] = {"washing machine", "garden fence", "bike brakes",
	"kitchen tap", "attic window", "doorbell"};
static const char *const months[] = {"January", "February", "March", "April", "May", "June",
	"July", "August"};

#define PICK(list) (list)[bench_rng() % (sizeof(list) / sizeof((list)[0]))]

/* A fact told once, and the question it answers. */
typedef struct single_t {
	const char *fact, *question;
	const char *const *values;
	size_t n;
} single_t;

#define LIST(l) (l), sizeof(l) / sizeof((l)[0])
static const single_t singles[] = {
	{"My sister's name is %s, she is two years older than me.", "What is my sister called?", LIST(names)},
	{"I work as a %s at a small firm downtown.", "What do I do for a living?", LIST(jobs)},
	{"I'm allergic to %s, so I always check the labels.", "Which food makes me ill?", LIST(foods)},
	{"My favourite band is %s, I've seen them live twice.", "Which music group do I like the most?", LIST(bands)},
	{"I drive an old %s that I bought second hand.", "What car do I own?", LIST(cars)},
	{"The wifi password at home is %s.", "What is the password of our home network?", LIST(words)},
	{"I was born in %s but grew up elsewhere.", "Where is my birthplace?", LIST(cities)},
	{"My blood type is %s.", "What blood type do I have?", LIST(bloods)},
	{"I play %s every Tuesday evening with friends.", "Which sport do I practise each week?", LIST(sports)},
	{"My dentist is Dr. %s, her clinic is near the park.", "Who looks after my teeth?", LIST(names)},
	{"The spare house key is hidden under the %s.", "Where did I leave the extra key to the house?", LIST(places)},
	{"My gym locker is number %s.", "Which locker is mine at the gym?", NULL, 0},
};

/* Two facts told in different sessions, both needed. */
typedef struct multi_t {
	const char *first, *second, *question;
	const char *const *values;
	size_t n;
} multi_t;

static const multi_t multis[] = {
	{"We adopted a kitten and named her %s.", "Our new puppy is called %s.", "What are the names of my pets?", LIST(pets)},
	{"I bought a %s for the kitchen today.", "I also ordered a %s for the kitchen.", "What did I buy for the kitchen recently?", LIST(things)},
	{"My son started taking %s lessons.", "My daughter wants to learn the %s.", "Which instruments are my children learning?", LIST(instruments)},
	{"I finished reading %s last night.", "Now I'm halfway through %s.", "Which books have I been reading?", LIST(books)},
	{"I signed up for a %s course at the library.", "I'm also practising %s with an app.", "What languages am I studying?", LIST(langs)},
	{"In spring we spent a week in %s.", "This autumn we travelled to %s.", "Which cities did we visit on our trips this year?", LIST(cities)},
};

/* A fact, then the fact that supersedes it. */
typedef struct update_t {
	const char *old, *now, *question;
	const char *const *values;
	size_t n;
} update_t;

static const update_t updates[] = {
	{"I live in a flat in %s.", "We finally moved to %s last week, the boxes are everywhere.", "Where do I live now?", LIST(cities)},
	{"My manager is %s, she is quite strict.", "%s replaced my old manager this month.", "Who is my manager at the moment?", LIST(names)},
	{"My phone is a %s.", "I switched to a %s, the battery is much better.", "What phone do I use now?", LIST(phones)},
	{"My favourite restaurant is %s.", "%s is my new favourite place to eat.", "Which restaurant do I like best these days?", LIST(restaurants)},
	{"My yoga class is on %s evenings.", "The yoga class moved to %s from now on.", "On which day is my yoga class?", LIST(days)},
	{"I commute to work by bus, it takes %s minutes.", "I cycle to work now, it takes only %s minutes.", "How long does my commute take now?", NULL, 0},
};

/* An event that happens twice; the question names the month of one. */
typedef struct temporal_t {
	const char *event, *question;
	const char *const *values;
	size_t n;
} temporal_t;

static const temporal_t temporals[] = {
	{"We went hiking at %s today, my legs hurt.", "Where did I go hiking in %s?", LIST(trails)},
	{"I had dinner with %s tonight, we talked for hours.", "Who did I have dinner with in %s?", LIST(names)},
	{"We watched %s at the cinema.", "Which film did we see at the cinema in %s?", LIST(films)},
	{"I finally fixed the %s this weekend.", "What did I repair in %s?", LIST(repairs)},
};

/* Questions whose answer was never told. */
static const char *const absents[] = {
	"What is my brother's name?", "Which university did I graduate from?",
	"What is my mother's maiden name?", "How tall am I?", "What is my shoe size?",
	"What is the name of my horse?",
};

/* Chit-chat, user then assistant, with words the questions use too. */
static const char *const chat_user[] = {
	"Can you suggest a quick recipe with %s for dinner?",
	"The weather in %s looks grim this week.",
	"My friend %s keeps sending me memes at work.",
	"I need a gift idea for a colleague who likes %s.",
	"Remind me how to stretch after playing %s.",
	"What should I watch tonight, something like %s?",
	"I'm thinking about repainting the living room, maybe in %s tones.",
	"Traffic was terrible near %s this morning.",
	"Do you know a good name for a %s themed party?",
	"I lost my keys again, this time at the %s.",
};
static const char *const chat_assistant[] = {
	"Sure, here is an idea you could try tonight.",
	"That sounds frustrating, maybe plan something indoors.",
	"Ha, it is nice to have friends who make you laugh.",
	"A thoughtful gift is often something small and personal.",
	"Gentle stretches for ten minutes help a lot after exercise.",
	"You might enjoy a slow drama or a light comedy.",
	"Warm neutral colours make a room feel calm.",
	"Leaving ten minutes earlier can avoid the worst of it.",
	"A playful name with a pun usually works well.",
	"Keeping a small tray by the door can help with keys.",
};
static const char *const chat_fill[] = {"mushrooms", "Oslo", "Tomas", "jazz", "tennis",
	"Casablanca", "olive green", "the station", "space", "supermarket", "lentils", "Vienna",
	"Rita", "gardening", "running", "Amelie", "terracotta", "the bridge", "pirate", "library"};

/* One question: its text, the where the agent adds, its evidence. */
typedef struct question {
	int         type;                 /* Q_* */
	int         user;
	char        text[160];
	int64_t     month_from, month_to; /* temporal: the date range (0: none) */
	char       *evidence[MAX_EVID];   /* ids, owned */
	int         n_evidence;
} question;

enum { Q_SINGLE, Q_MULTI, Q_UPDATE, Q_TEMPORAL, Q_ABSENT, Q_TYPES };
static const char *const type_names[Q_TYPES] = {"single", "multi", "update", "temporal",
						 "absent"};

/* A turn placed in a session: its text, and where its id goes. */
typedef struct planned {
	char   text[200];
	int    session;
	int    assistant; /* the assistant's turn, else the user's */
	char **id_out;    /* NULL: not evidence */
} planned;

typedef struct plan {
	planned *v;
	size_t   n, cap;
} plan;

static planned *place(plan *p, int session, char **id_out)
{
	if (a2m_grow((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v))
		return NULL;
	planned *t = &p->v[p->n++];
	memset(t, 0, sizeof *t);
	t->session = session;
	t->id_out = id_out;
	return t;
}

/* tmpl with its one "%s" replaced by value, into out (cap bytes). */
static void fill(char *out, size_t cap, const char *tmpl, const char *value)
{
	const char *at = strstr(tmpl, "%s");
	if (!at) {
		snprintf(out, cap, "%s", tmpl);
		return;
	}
	snprintf(out, cap, "%.*s%s%s", (int)(at - tmpl), tmpl, value, at + 2);
}

/* Draws two different values of a list (or two numbers). */
static void two_values(const char *const *values, size_t n, char *a, char *b, size_t cap)
{
	if (!values) {
		int x = 10 + (int)(bench_rng() % 40), y = x + 5 + (int)(bench_rng() % 30);
		snprintf(a, cap, "%d", y);
		snprintf(b, cap, "%d", x);
		return;
	}
	size_t i = bench_rng() % n, j = (i + 1 + bench_rng() % (n - 1)) % n;
	snprintf(a, cap, "%s", values[i]);
	snprintf(b, cap, "%s", values[j]);
}

static int64_t session_day(int s)
{
	return FIRST_DAY + (int64_t)s * 7 * DAY_MS;
}

/* The first day of the month (UTC) holding ms, and of the next. */
static void month_of(int64_t ms, int64_t *from, int64_t *to, int *month)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	tm.tm_mday = 1;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	*month = tm.tm_mon;
	*from = (int64_t)timegm(&tm) * 1000;
	tm.tm_mon++;
	*to = (int64_t)timegm(&tm) * 1000;
}

/* Plans one user's facts and questions; the questions' ids fill in as the turns are written. */
static int plan_user(int u, plan *p, question *qs, size_t *nq)
{
	char a[64], b[64];
	for (size_t i = 0; i < sizeof singles / sizeof *singles; i++) {
		question *q = &qs[(*nq)++];
		memset(q, 0, sizeof *q);
		q->type = Q_SINGLE;
		q->user = u;
		snprintf(q->text, sizeof q->text, "%s", singles[i].question);
		two_values(singles[i].values, singles[i].n, a, b, sizeof a);
		planned *t = place(p, (int)(bench_rng() % SESSIONS), &q->evidence[q->n_evidence++]);
		if (!t)
			return -1;
		fill(t->text, sizeof t->text, singles[i].fact, a);
	}
	for (size_t i = 0; i < sizeof multis / sizeof *multis; i++) {
		question *q = &qs[(*nq)++];
		memset(q, 0, sizeof *q);
		q->type = Q_MULTI;
		q->user = u;
		snprintf(q->text, sizeof q->text, "%s", multis[i].question);
		two_values(multis[i].values, multis[i].n, a, b, sizeof a);
		int s1 = (int)(bench_rng() % (SESSIONS / 2)), s2 = SESSIONS / 2 + (int)(bench_rng() % (SESSIONS / 2));
		planned *t1 = place(p, s1, &q->evidence[q->n_evidence++]);
		if (!t1)
			return -1;
		fill(t1->text, sizeof t1->text, multis[i].first, a);
		planned *t2 = place(p, s2, &q->evidence[q->n_evidence++]);
		if (!t2)
			return -1;
		fill(t2->text, sizeof t2->text, multis[i].second, b);
	}
	for (size_t i = 0; i < sizeof updates / sizeof *updates; i++) {
		question *q = &qs[(*nq)++];
		memset(q, 0, sizeof *q);
		q->type = Q_UPDATE;
		q->user = u;
		snprintf(q->text, sizeof q->text, "%s", updates[i].question);
		two_values(updates[i].values, updates[i].n, a, b, sizeof a);
		planned *old = place(p, (int)(bench_rng() % (SESSIONS / 3)), NULL);
		if (!old)
			return -1;
		fill(old->text, sizeof old->text, updates[i].old, a);
		planned *now = place(p, 2 * SESSIONS / 3 + (int)(bench_rng() % (SESSIONS / 3)),
				     &q->evidence[q->n_evidence++]);
		if (!now)
			return -1;
		fill(now->text, sizeof now->text, updates[i].now, b);
	}
	for (size_t i = 0; i < sizeof temporals / sizeof *temporals; i++) {
		question *q = &qs[(*nq)++];
		memset(q, 0, sizeof *q);
		q->type = Q_TEMPORAL;
		q->user = u;
		two_values(temporals[i].values, temporals[i].n, a, b, sizeof a);
		/* Two sessions at least five weeks apart: different months. */
		int s1 = (int)(bench_rng() % (SESSIONS / 2 - 5)), s2 = s1 + 5 + (int)(bench_rng() % (SESSIONS / 2));
		int asked = (int)(bench_rng() % 2);
		planned *t1 = place(p, s1, asked == 0 ? &q->evidence[q->n_evidence++] : NULL);
		planned *t2 = t1 ? place(p, s2, asked == 1 ? &q->evidence[q->n_evidence++] : NULL) : NULL;
		if (!t2)
			return -1;
		fill(p->v[p->n - 2].text, sizeof t1->text, temporals[i].event, a);
		fill(t2->text, sizeof t2->text, temporals[i].event, b);
		int month;
		month_of(session_day(asked ? s2 : s1), &q->month_from, &q->month_to, &month);
		fill(q->text, sizeof q->text, temporals[i].question, months[month]);
	}
	for (size_t i = 0; i < sizeof absents / sizeof *absents; i++) {
		question *q = &qs[(*nq)++];
		memset(q, 0, sizeof *q);
		q->type = Q_ABSENT;
		q->user = u;
		snprintf(q->text, sizeof q->text, "%s", absents[i]);
	}
	/* Chit-chat: three to six exchanges a session. */
	for (int s = 0; s < SESSIONS; s++)
		for (int k = 3 + (int)(bench_rng() % 4); k > 0; k--) {
			size_t c = bench_rng() % (sizeof chat_user / sizeof *chat_user);
			planned *t = place(p, s, NULL);
			if (!t)
				return -1;
			fill(t->text, sizeof t->text, chat_user[c], PICK(chat_fill));
			if (!(t = place(p, s, NULL)))
				return -1;
			t->assistant = 1;
			snprintf(t->text, sizeof t->text, "%s", chat_assistant[c]);
		}
	return 0;
}

/* The planned turns of (user, session) written as one batch, facts among them. */
static int write_session(a2m *h, int u, int s, plan *p, const char *owner)
{
	json_t *recs = json_array();
	planned *order[256];
	size_t n = 0;
	char date[32];
	time_t t = (time_t)(session_day(s) / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(date, sizeof date, "%Y-%m-%dT10:00:00.000Z", &tm);
	for (size_t i = 0; i < p->n && n < 256; i++)
		if (p->v[i].session == s)
			order[n++] = &p->v[i];
	/* Facts and chit-chat interleaved, deterministically. */
	for (size_t i = n; i > 1; i--) {
		size_t j = bench_rng() % i;
		planned *x = order[i - 1];
		order[i - 1] = order[j];
		order[j] = x;
	}
	char sid[32];
	snprintf(sid, sizeof sid, "u%d-s%d", u, s);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(recs, json_pack("{ss ss ss ss s{ss}}", "content", order[i]->text,
			"role", order[i]->assistant ? "assistant" : "user", "owner", owner,
			"session", sid, "metadata", "date", date));
	json_t *r = bench_call(h, "memory/remember", json_pack("{so}", "records", recs), NULL);
	if (!r)
		return -1;
	json_t *ids = json_object_get(r, "ids");
	for (size_t i = 0; i < n; i++)
		if (order[i]->id_out)
			*order[i]->id_out = strdup(json_string_value(json_array_get(ids, i)));
	json_decref(r);
	/* The conversation ends: its turns leave working memory (§4.11). */
	json_decref(bench_call(h, "memory/session/close",
			       json_pack("{ss ss}", "session", sid, "owner", owner), NULL));
	return 0;
}

/* Every tier private (each user asks of their own memory), nothing evicted. */
static const char layout_json[] =
	"{\"tiers\":["
	"{\"name\":\"working\",\"kind\":\"working\",\"per_session\":true,\"capacity\":200,"
	"\"spill_to\":\"episodic\",\"shared\":false},"
	"{\"name\":\"episodic\",\"kind\":\"episodic\",\"shared\":false},"
	"{\"name\":\"semantic\",\"kind\":\"semantic\",\"shared\":false},"
	"{\"name\":\"procedural\",\"kind\":\"procedural\",\"shared\":false}]}";

typedef struct tally {
	double recall1[Q_TYPES], recall5[Q_TYPES];
	int    n[Q_TYPES];
	int    abstained, silent;  /* absent answered with nothing; others answered with nothing */
} tally;

/* Asks every question, through recall, and scores it. */
static void ask(a2m *h, question *qs, size_t nq, int use_where, tally *t)
{
	memset(t, 0, sizeof *t);
	for (size_t i = 0; i < nq; i++) {
		question *q = &qs[i];
		char owner[16];
		snprintf(owner, sizeof owner, "user%d", q->user);
		json_t *params = json_pack("{ss si ss}", "query", q->text, "limit", 5, "owner", owner);
		if (use_where && q->month_from) {
			char from[32], to[32];
			time_t a = (time_t)(q->month_from / 1000), b = (time_t)(q->month_to / 1000);
			struct tm ta, tb;
			gmtime_r(&a, &ta);
			gmtime_r(&b, &tb);
			strftime(from, sizeof from, "%Y-%m-%dT%H:%M:%SZ", &ta);
			strftime(to, sizeof to, "%Y-%m-%dT%H:%M:%SZ", &tb);
			json_object_set_new(params, "where", json_pack("{s{ssss}}", "date", "$gte", from,
								       "$lt", to));
		}
		json_t *r = bench_call(h, "memory/recall", params, NULL);
		json_t *recs = json_object_get(r, "records");
		size_t got = json_array_size(recs);
		t->n[q->type]++;
		if (q->type == Q_ABSENT) {
			t->abstained += got == 0;
		} else {
			t->silent += got == 0;
			int hit1 = 0, hit5 = 0;
			for (int e = 0; e < q->n_evidence; e++)
				for (size_t k = 0; k < got && k < 5; k++) {
					const char *id = json_string_value(json_object_get(json_array_get(recs, k), "id"));
					if (id && q->evidence[e] && strcmp(id, q->evidence[e]) == 0) {
						hit5++;
						hit1 += k == 0;
					}
				}
			t->recall1[q->type] += (double)hit1 / q->n_evidence;
			t->recall5[q->type] += (double)hit5 / q->n_evidence;
		}
		json_decref(r);
	}
}

static void print_tally(const char *label, const tally *t, int nq)
{
	printf("%-18s", label);
	double all1 = 0, all5 = 0;
	int answerable = 0;
	for (int k = 0; k < Q_ABSENT; k++) {
		printf("  %5.3f/%5.3f", t->n[k] ? t->recall1[k] / t->n[k] : 0,
		       t->n[k] ? t->recall5[k] / t->n[k] : 0);
		all1 += t->recall1[k];
		all5 += t->recall5[k];
		answerable += t->n[k];
	}
	printf("  %5.3f/%5.3f  %5.3f  %5.3f\n", all1 / answerable, all5 / answerable,
	       t->n[Q_ABSENT] ? (double)t->abstained / t->n[Q_ABSENT] : 0,
	       answerable ? (double)t->silent / answerable : 0);
	(void)nq;
}

static size_t probe_body(char *p, size_t size, size_t n, void *ctx)
{
	a2m_buf_put(ctx, p, size * n);
	return size * n;
}

/*
** Asks the embedder at url for one vector, as src/embed/openai.c would.
** A server that is down must fail the benchmark: the stack ranks lexically
** while its embedder is unreachable (docs/EMBEDDINGS.md), and every
** "hybrid" row would silently be the lexical one. 0 when it answered 200
** with an embedding, else -1 after saying why on stderr.
*/
static int probe_embedder(const char *url)
{
	const char *why = NULL;
	const a2m_curl_api *cu = a2m_curl(&why);
	if (!cu) {
		fprintf(stderr, "a2m bench memory: no libcurl: %s\n", why ? why : "?");
		return -1;
	}
	static const char body[] = "{\"model\":\"all-MiniLM-L6-v2\",\"input\":[\"probe\"]}";
	a2m_buf got = {0};
	long status = 0;
	CURL *k = cu->easy_init();
	struct curl_slist *hdr = cu->slist_append(NULL, "Content-Type: application/json");
	CURLcode rc = CURLE_FAILED_INIT;
	if (k && hdr && a2m_curl_post_setup(cu, k, url, hdr, probe_body, &got, "a2m-bench") == 0 &&
	    cu->easy_setopt(k, CURLOPT_POSTFIELDS, body) == CURLE_OK &&
	    cu->easy_setopt(k, CURLOPT_TIMEOUT_MS, 60000L) == CURLE_OK) {
		rc = cu->easy_perform(k);
		if (rc == CURLE_OK)
			cu->easy_getinfo(k, CURLINFO_RESPONSE_CODE, &status);
	}
	int ok = rc == CURLE_OK && status == 200 && strstr(a2m_buf_str(&got), "\"embedding\"");
	if (!ok)
		fprintf(stderr, "a2m bench memory: the embedder at %s did not answer (%s, HTTP %ld)\n",
			url, rc == CURLE_OK ? "no embedding" : cu->easy_strerror(rc), status);
	cu->slist_free_all(hdr);
	if (k)
		cu->easy_cleanup(k);
	a2m_buf_free(&got);
	return ok ? 0 : -1;
}

/* One run: a fresh store in memory, the conversation written, the questions asked. */
static int run_mode(const char *label, const char *cfg_path, const char *embed_url, int weight,
		    int use_where, uint64_t seed, int users)
{
	a2m_config *cfg;
	a2m *h = NULL;
	char *err = NULL, w[16];
	if (a2m_config_new(&cfg) != A2M_OK)
		return 1;
	a2m_config_set(cfg, "engine", "memory");
	a2m_config_set(cfg, "config_file", cfg_path);
	if (embed_url) {
		snprintf(w, sizeof w, "%d", weight);
		a2m_config_set(cfg, "embed_kind", "openai");
		a2m_config_set(cfg, "embed_url", embed_url);
		a2m_config_set(cfg, "embed_model", "all-MiniLM-L6-v2");
		a2m_config_set(cfg, "embed_timeout_ms", "60000");
		a2m_config_set(cfg, "embed_weight", w);
	}
	int rc = a2m_open(cfg, &h, &err);
	a2m_config_free(cfg);
	if (rc != A2M_OK) {
		fprintf(stderr, "a2m bench memory: %s\n", err ? err : "cannot open");
		a2m_free(err);
		return 1;
	}
	bench_seed(seed);
	question *qs = calloc((size_t)users * QS_PER_USER, sizeof *qs);
	size_t nq = 0, turns = 0;
	double t0 = bench_now_ms();
	for (int u = 0; u < users && qs; u++) {
		plan p = {0};
		char owner[16];
		snprintf(owner, sizeof owner, "user%d", u);
		if (plan_user(u, &p, qs, &nq) != 0)
			break;
		for (int s = 0; s < SESSIONS; s++)
			write_session(h, u, s, &p, owner);
		turns += p.n;
		free(p.v);
	}
	/* Vectors for what left working memory: one batch per write, so a
	** few consolidations settle what the closes left owed. */
	for (size_t k = 0; embed_url && k < turns / 64 + 4; k++)
		json_decref(bench_call(h, "memory/consolidate", json_object(), NULL));
	double load = bench_now_ms() - t0;
	tally t;
	t0 = bench_now_ms();
	ask(h, qs, nq, use_where, &t);
	double asking = bench_now_ms() - t0;
	print_tally(label, &t, (int)nq);
	fflush(stdout);
	fprintf(stderr, "  (%s: %zu turns written in %.0f ms, %zu questions in %.0f ms)\n", label,
		turns, load, nq, asking);
	for (size_t i = 0; i < nq; i++)
		for (int e = 0; e < qs[i].n_evidence; e++)
			free(qs[i].evidence[e]);
	free(qs);
	a2m_close(h);
	return 0;
}

int a2m_bench_memory(int argc, char **argv)
{
	const char *embed_url = NULL, *weights = "25,50,75,100";
	uint64_t seed = 23;
	int users = 5;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--embed-url") == 0 && i + 1 < argc)
			embed_url = argv[++i];
		else if (strcmp(argv[i], "--weights") == 0 && i + 1 < argc)
			weights = argv[++i];
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--users") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0 &&
			 atoi(argv[i + 1]) <= 1000)
			users = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: a2m bench memory [--embed-url URL] [--weights W,W,...] [--seed N]"
					" [--users U]\n");
			return 2;
		}
	}
	if (embed_url && probe_embedder(embed_url) != 0)
		return 1;
	char cfg_path[] = "/tmp/a2m-bench-memory-XXXXXX";
	int fd = mkstemp(cfg_path);
	if (fd < 0 || write(fd, layout_json, strlen(layout_json)) != (ssize_t)strlen(layout_json)) {
		fprintf(stderr, "a2m bench memory: cannot write the layout\n");
		return 1;
	}
	close(fd);
	printf("a2m bench memory: %d users x %d weekly sessions, recall limit 5, seed %llu\n",
	       users, SESSIONS, (unsigned long long)seed);
	printf("recall@1/recall@5 per type; abstention = absent questions answered with no "
	       "record; silent = answerable ones answered with none\n");
	printf("%-18s", "mode");
	for (int k = 0; k < Q_ABSENT; k++)
		printf("  %-11s", type_names[k]);
	printf("  %-11s  %-5s  %-5s\n", "all", "abst.", "silent");
	int rc = run_mode("lexical", cfg_path, NULL, 0, 1, seed, users);
	rc |= run_mode("lexical, no where", cfg_path, NULL, 0, 0, seed, users);
	for (const char *p = weights; embed_url && *p;) {
		int w = atoi(p);
		char label[32];
		snprintf(label, sizeof label, w == 100 ? "vectors alone" : "hybrid %d%%", w);
		rc |= run_mode(label, cfg_path, embed_url, w, 1, seed, users);
		p += strcspn(p, ",");
		p += *p == ',';
	}
	unlink(cfg_path);
	return rc;
}
