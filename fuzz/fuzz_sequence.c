/*
** fuzz_sequence.c — sequences of messages on one handle, every reply and
** every push notification judged by the oracle of fuzz.h.
**
** A fuzzer that mutates whole JSON messages rarely writes three valid ones
** in a row, so it never reaches a session closed after a spill, or a key
** summarized and then forgotten. Here the input is a small program:
**
**   byte 0      flags: bit 0 the engine (SQLite on a fresh file, else
**               memory); bit 1 fewer capabilities (core, sessions, keys,
**               events), so refusals are reached too
**   then lines  split at '\n', at most MAX_LINES of them. A line that
**               starts with '{' is sent as it is. Any other line is an
**               operation: its first byte picks a template (below), the
**               second how the request's id is written (integer, string,
**               null, real, or none: a notification), and each later byte
**               fills the template's next hole from a small dictionary of
**               ids, tiers, sessions, keys, owners, numbers, texts, where
**               clauses and event kinds, so nearly every operation is a
**               valid request, on the same few records.
**
** One template reopens the store (SQLite: what was acknowledged must come
** back). The events cursor the last memory/events reply gave is kept, so a
** later read can continue from it.
*/
#include "fuzz.h"

#define MAX_LINES 48

/* The holes of a template, each filled from its own list by one byte. */
static const char *const ids[] = {"\"a\"", "\"b\"", "\"c\"", "\"d\"", "\"x\"", "\"y\"",
				  "\"\"", "\"ü-é\"", "\"a\\u0000b\"", "\"s1\""};
static const char *const tiers[] = {"\"working\"", "\"episodic\"", "\"semantic\"",
				    "\"procedural\"", "\"nope\"", "\"\"", "null"};
static const char *const sessions[] = {"\"s1\"", "\"s2\"", "\"s3\"", "\"\"", "null"};
static const char *const keys[] = {"\"facts/deploy\"", "\"k/1\"", "\"k/2\"", "\"k/\"",
				   "\"\"", "\"how/commit\"", "\"k/\\u00ff\""};
static const char *const owners[] = {"\"alice\"", "\"bob\"", "\"\"", "null"};
static const char *const numbers[] = {"0", "1", "-1", "0.5", "2", "3", "10", "100", "1000",
				      "1001", "1e308", "-1e308", "1e-320", "-0.0",
				      "9007199254740993", "9223372036854775807", "0.1", "60",
				      "86400", "-3", "1e3"};
static const char *const texts[] = {
	"\"the deploy key rotates every Monday\"", "\"Alice prefers tea\"", "\"tea\"",
	"\"città Köln straße\"", "\"東京の天気は晴れ\"", "\"\"", "\" \"", "\"the and of\"",
	"\"ops\"", "\"run make check\"", "\"\\u0000\"", "\"a\\nb\\tc\"",
	"\"Привет мир\"", "\"l'acqua è fresca\"", "\"🙂 emoji\"", "\"deploy\""};
static const char *const wheres[] = {"{\"t\":\"ops\"}", "{\"t\":[\"ops\",\"people\"]}",
				     "{\"n\":1}", "{\"tier\":\"semantic\"}", "{\"id\":\"a\"}",
				     "{\"session\":\"s1\"}", "{\"owner\":\"bob\"}",
				     "{\"key\":\"facts/deploy\"}", "{}", "{\"salience\":1}",
				     "{\"t\":null}", "{\"t\":{\"x\":1}}"};
static const char *const kinds[] = {"\"written\"", "\"forgotten\"", "\"promoted\"",
				    "\"reinforced\"", "\"summarized\"", "\"moved\"", "\"closed\"",
				    "\"bogus\""};
static const char *const roles[] = {"\"user\"", "\"assistant\"", "\"system\"", "\"tool\"",
				    "\"bogus\""};
static const char *const styles[] = {"\"auto\"", "\"facts\"", "\"transcript\"", "\"x\""};
static const char *const bools[] = {"true", "false", "null", "1"};

#define LIST(l) {l, sizeof l / sizeof l[0]}
static const struct {
	const char *const *v;
	size_t n;
} lists[] = {
	['I'] = LIST(ids),   ['T'] = LIST(tiers),   ['S'] = LIST(sessions), ['K'] = LIST(keys),
	['O'] = LIST(owners), ['N'] = LIST(numbers), ['C'] = LIST(texts),    ['W'] = LIST(wheres),
	['V'] = LIST(kinds), ['R'] = LIST(roles),   ['Y'] = LIST(styles),   ['B'] = LIST(bools),
};

/* Method, then params with holes: %X is filled from list X; %E is the last
** events cursor seen (or a forged one). NULL method: reopen the store. */
static const struct {
	const char *method, *params;
} templates[] = {
	{"memory/remember", "{\"records\":[{\"id\":%I,\"content\":%C}]}"},
	{"memory/remember", "{\"records\":[{\"id\":%I,\"content\":%C,\"tier\":%T}]}"},
	{"memory/remember", "{\"records\":[{\"content\":%C,\"session\":%S,\"role\":%R}]}"},
	{"memory/remember", "{\"records\":[{\"id\":%I,\"content\":%C,\"key\":%K,\"tier\":%T}],"
			    "\"owner\":%O}"},
	{"memory/remember", "{\"records\":[{\"id\":%I,\"content\":%C,\"salience\":%N,"
			    "\"metadata\":{\"t\":%C,\"n\":%N}}]}"},
	{"memory/remember", "{\"records\":[{\"id\":%I,\"content\":%C,\"embedding\":[%N,%N,%N]}]}"},
	{"memory/remember", "{\"records\":[{\"id\":%I,\"content\":%C,\"tier\":%T,\"embedding\":[%N,%N]}]}"},
	{"memory/remember", "{\"records\":[{\"content\":%C,\"session\":%S},{\"content\":%C,"
			    "\"tier\":%T},{\"id\":%I,\"content\":%C,\"key\":%K}]}"},
	{"memory/remember", "{\"records\":[{\"id\":%I,\"content\":%C,\"uri\":\"file:///x\","
			    "\"media_type\":\"text/plain\"}]}"},
	{"memory/recall", "{\"query\":%C}"},
	{"memory/recall", "{\"query\":%C,\"tier\":%T,\"limit\":%N}"},
	{"memory/recall", "{\"query\":%C,\"where\":%W,\"min_score\":%N}"},
	{"memory/recall", "{\"embedding\":[%N,%N,%N]}"},
	{"memory/recall", "{\"embedding\":[%N],\"query\":%C}"},
	{"memory/recall", "{\"query\":%C,\"prompt\":{\"style\":%Y,\"budget\":%N,\"cite\":%B}}"},
	{"memory/recall", "{\"query\":%C,\"owner\":%O,\"prompt\":%B}"},
	{"memory/timeline", "{\"tier\":%T,\"limit\":%N}"},
	{"memory/timeline", "{\"where\":%W,\"owner\":%O}"},
	{"memory/timeline", "{\"key_prefix\":%K}"},
	{"memory/fetch", "{\"key\":%K}"},
	{"memory/fetch", "{\"key\":%K,\"owner\":%O}"},
	{"memory/forget", "{\"ids\":[%I,%I]}"},
	{"memory/forget", "{\"ids\":[%I],\"owner\":%O}"},
	{"memory/reinforce", "{\"ids\":[%I],\"amount\":%N}"},
	{"memory/promote", "{\"ids\":[%I],\"tier\":%T}"},
	{"memory/promote", "{\"ids\":[%I,%I],\"tier\":%T,\"salience\":%N}"},
	{"memory/consolidate", "{}"},
	{"memory/consolidate", "{\"tier\":%T}"},
	{"memory/session/close", "{\"session\":%S}"},
	{"memory/session/list", "{}"},
	{"memory/session/list", "{\"owner\":%O}"},
	{"memory/summarize", "{\"ids\":[%I,%I],\"key\":%K}"},
	{"memory/summarize", "{\"ids\":[%I,%I,%I],\"into\":%T}"},
	{"memory/summarize", "{\"query\":%C,\"limit\":%N}"},
	{"memory/events", "{}"},
	{"memory/events", "{\"cursor\":%E,\"kinds\":[%V,%V]}"},
	{"memory/events", "{\"cursor\":%E,\"limit\":%N}"},
	{"memory/events/subscribe", "{}"},
	{"memory/events/subscribe", "{\"kinds\":[%V]}"},
	{"memory/events/unsubscribe", "{}"},
	{"memory/describe", "{}"},
	{"memory/describe", "{\"protocol\":\"a2m/0.1\"}"},
	{NULL, NULL},
};
#define N_TEMPLATES (sizeof templates / sizeof templates[0])

typedef struct state {
	a2m *h;
	int sqlite, few_caps;
	const char *path;
	char cursor[256];  /* the last events cursor, as JSON text */
	size_t pushes;
} state;

static void open_store(state *st)
{
	const char *caps = st->few_caps ? "core,sessions,keys,events" : NULL;
	if (st->sqlite)
		st->h = caps ? fuzz_open("engine", "sqlite", "path", st->path, "synchronous", "normal",
					 "capabilities", caps, NULL)
			     : fuzz_open("engine", "sqlite", "path", st->path, "synchronous", "normal",
					 NULL);
	else
		st->h = caps ? fuzz_open("engine", "memory", "capabilities", caps, NULL)
			     : fuzz_open("engine", "memory", NULL);
	a2m_set_notify(st->h, fuzz_on_notify, &st->pushes);
}

/* Keeps the cursor of a memory/events reply, as JSON text. */
static void keep_cursor(state *st, const char *reply)
{
	json_t *v = json_loadb(reply, strlen(reply), JSON_ALLOW_NUL, NULL);
	json_t *c = json_object_get(json_object_get(v, "result"), "cursor");
	if (json_is_string(c)) {
		char *text = json_dumps(c, JSON_ENCODE_ANY);
		if (text && strlen(text) < sizeof st->cursor)
			strcpy(st->cursor, text);
		free(text);
	}
	json_decref(v);
}

/* Sends one message and judges it; keeps what later operations use. */
static void send_message(state *st, const char *msg, size_t len)
{
	char *reply = NULL;
	int rc = a2m_handle(st->h, msg, len, &reply);
	fuzz_check_reply(msg, len, rc, reply);
	if (reply && strstr(reply, "\"cursor\""))
		keep_cursor(st, reply);
	a2m_free(reply);
}

/* Runs the operation of line[0..n): builds its message and sends it. */
static void operate(state *st, const uint8_t *line, size_t n)
{
	size_t t = line[0] % N_TEMPLATES, at = 2;
	if (!templates[t].method) {
		a2m_close(st->h);
		open_store(st);
		return;
	}
	char msg[4096], id[64];
	uint8_t how = n > 1 ? line[1] : 0;
	switch (how % 6) {
	case 0: snprintf(id, sizeof id, "\"id\":%u,", how); break;
	case 1: snprintf(id, sizeof id, "\"id\":\"r%u\",", how); break;
	case 2: snprintf(id, sizeof id, "\"id\":null,"); break;
	case 3: snprintf(id, sizeof id, "\"id\":%u.5,", how); break;
	case 4: snprintf(id, sizeof id, "\"id\":-%u,", how); break;
	default: id[0] = '\0'; break;  /* a notification */
	}
	int w = snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",%s\"method\":\"%s\",\"params\":", id,
			 templates[t].method);
	size_t len = (size_t)w;
	for (const char *p = templates[t].params; *p && len < sizeof msg - 300; p++) {
		if (*p != '%') {
			msg[len++] = *p;
			continue;
		}
		unsigned char hole = (unsigned char)*++p;
		uint8_t pick = at < n ? line[at] : 0;
		at++;
		const char *fill;
		if (hole == 'E')
			fill = pick % 4 == 0 ? "\"e-forged\"" : st->cursor[0] ? st->cursor : "null";
		else
			fill = lists[hole].v[pick % lists[hole].n];
		size_t fl = strlen(fill);
		memcpy(msg + len, fill, fl);
		len += fl;
	}
	msg[len++] = '}';
	send_message(st, msg, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	state st = {.sqlite = data[0] & 1, .few_caps = (data[0] >> 1) & 1};
	if (st.sqlite)
		st.path = fuzz_fresh_store("sequence");
	open_store(&st);
	const uint8_t *p = data + 1, *end = data + size;
	for (int lines = 0; p < end && lines < MAX_LINES; lines++) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		const uint8_t *stop = nl ? nl : end;
		size_t n = (size_t)(stop - p);
		if (n > 0 && p[0] == '{')
			send_message(&st, (const char *)p, n);
		else if (n > 0)
			operate(&st, p, n);
		p = stop + 1;
	}
	a2m_close(st.h);
	return 0;
}
