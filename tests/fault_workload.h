/*
** fault_workload.h — the mixed workload tests/test_faults.c runs with a
** fault armed, and the oracle that judges what is left afterwards.
**
** The workload is a fixed list of requests over a small tier layout that
** makes everything happen: batches with groups, keys and sessions, recalls
** that touch (a touch buffer of 4, so the touches are written behind by
** recalls as well as by writes), key replacement, forget, promote (also into
** the procedural tier, whose records are mirrored as files), consolidate,
** session close, reinforce, and 200 records in bulk (the index's merge
** factor is set to 2, so its segments merge at several levels), the
** caller's vectors and one of the wrong width, which must be refused
** (-32008) whatever failed before it. Every record has a client id, so two
** runs name the same records alike.
**
** The oracle is a second run. A request that failed must have failed
** whole, so the run must look exactly like a run of the same workload
** without that request (the reference, cached per set of failed requests):
** every other response, the records on the same handle afterwards, the
** records in the file reopened with a fresh handle. Responses are compared
** with what depends on the clock taken out (timestamps, scores).
*/
#ifndef A2M_TEST_FAULT_WORKLOAD_H
#define A2M_TEST_FAULT_WORKLOAD_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define WL_MAX 64  /* requests at most: a set of them is a uint64_t */

/*
** The layout: working memory of 3 records per session spilling whole groups
** into an episodic tier of 12, which spills into semantic and promotes
** there after 2 recalls; and a procedural tier, mirrored as files.
*/
static const char wl_config[] =
	"{\"tiers\": ["
	"{\"name\": \"working\", \"kind\": \"working\", \"capacity\": 3, \"per_session\": true,"
	" \"spill_to\": \"episodic\"},"
	"{\"name\": \"episodic\", \"kind\": \"episodic\", \"capacity\": 12,"
	" \"spill_to\": \"semantic\", \"promote_to\": \"semantic\", \"promote_after\": 2},"
	"{\"name\": \"semantic\", \"kind\": \"semantic\"},"
	"{\"name\": \"procedural\", \"kind\": \"procedural\"}]}\n";

typedef struct wl_step {
	const char *method;
	char       *params;   /* malloc'd JSON text */
} wl_step;

static wl_step wl_steps[WL_MAX];
static size_t  wl_n;

static void wl_add(const char *method, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void wl_add(const char *method, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *p = NULL;
	if (wl_n < WL_MAX && vasprintf(&p, fmt, ap) >= 0) {
		wl_steps[wl_n].method = method;
		wl_steps[wl_n].params = p;
		wl_n++;
	} else {
		fprintf(stderr, "fault workload: cannot add a step\n");
		abort();
	}
	va_end(ap);
}

/* A remember of the records b<first>..b<first+n-1>, each a few words of a
** small vocabulary (so recalls find several), every chunk of ten in group
** "<prefix>-<first/10>" when grouped, in tier. */
static void wl_bulk(int first, int n, const char *tier, int grouped)
{
	static const char *const words[] = {
		"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa",
		"lambda", "sigma", "omega", "river", "mountain", "engine", "garden", "harbour",
		"lantern", "meadow", "orchard", "pebble", "quartz", "saddle", "timber", "violet",
	};
	char *text = malloc((size_t)n * 256 + 64);
	size_t at = 0;
	uint64_t state = 0x9E3779B97F4A7C15ULL ^ (uint64_t)first;
	at += (size_t)sprintf(text + at, "{\"records\":[");
	for (int i = 0; i < n; i++) {
		int id = first + i;
		at += (size_t)sprintf(text + at, "%s{\"id\":\"b%d\",\"tier\":\"%s\",\"content\":\"record %d",
				      i ? "," : "", id, tier, id);
		for (int w = 0; w < 6; w++) {
			state ^= state << 13, state ^= state >> 7, state ^= state << 17;
			at += (size_t)sprintf(text + at, " %s",
					      words[state % (sizeof words / sizeof words[0])]);
		}
		at += (size_t)sprintf(text + at, "\"");
		if (grouped)
			at += (size_t)sprintf(text + at, ",\"group\":\"doc-%d\"", id / 10);
		at += (size_t)sprintf(text + at, "}");
	}
	sprintf(text + at, "]}");
	wl_add("memory/remember", "%s", text);
	free(text);
}

static void wl_build(void)
{
	if (wl_n)
		return;
	/* Session s1 in working memory: a group, a key; capacity 3 spills. */
	wl_add("memory/remember", "{\"records\":["
	       "{\"id\":\"a1\",\"content\":\"alpha apples in the orchard\",\"session\":\"s1\",\"group\":\"g1\",\"role\":\"assistant\"},"
	       "{\"id\":\"a2\",\"content\":\"tool result about apples\",\"session\":\"s1\",\"group\":\"g1\",\"role\":\"tool\"},"
	       "{\"id\":\"a3\",\"content\":\"the user likes rivers\",\"session\":\"s1\",\"metadata\":{\"n\":3,\"tags\":[\"x\"]}},"
	       "{\"id\":\"a4\",\"content\":\"the city is Paris\",\"session\":\"s1\",\"key\":\"user/city\"}]}");
	/* Procedural records, mirrored as files. */
	wl_add("memory/remember", "{\"records\":["
	       "{\"id\":\"p1\",\"tier\":\"procedural\",\"key\":\"skills/deploy\",\"content\":\"Deploy with make install, then restart.\"},"
	       "{\"id\":\"p2\",\"tier\":\"procedural\",\"content\":\"When a build fails, read the first error.\"}]}");
	wl_add("memory/recall", "{\"query\":\"apples\"}");
	/* Session s2: another group, a second key. */
	wl_add("memory/remember", "{\"records\":["
	       "{\"id\":\"c1\",\"content\":\"beta question about the harbour\",\"session\":\"s2\",\"group\":\"g2\"},"
	       "{\"id\":\"c2\",\"content\":\"beta answer about the harbour\",\"session\":\"s2\",\"group\":\"g2\"},"
	       "{\"id\":\"c3\",\"content\":\"the name is Ada\",\"session\":\"s2\",\"key\":\"user/name\"}]}");
	/* Key replacement: a4 takes the new content, revision 1. */
	wl_add("memory/remember", "{\"records\":[{\"id\":\"a4-v2\",\"content\":\"the city is Lyon\",\"session\":\"s1\",\"key\":\"user/city\"}]}");
	wl_add("memory/recall", "{\"query\":\"harbour\",\"where\":{\"session\":\"s2\"}}");
	wl_bulk(1, 40, "semantic", 0);
	wl_add("memory/recall", "{\"query\":\"gamma delta\",\"limit\":5}");
	/* The caller's vectors: the first fixes the store's width (3)... */
	wl_add("memory/remember", "{\"records\":["
	       "{\"id\":\"v1\",\"content\":\"vector one\",\"tier\":\"semantic\",\"embedding\":[0.1,0.2,0.3]},"
	       "{\"id\":\"v2\",\"content\":\"vector two\",\"tier\":\"semantic\",\"embedding\":[0.3,0.1,0.0]}]}");
	wl_add("memory/recall", "{\"embedding\":[0.1,0.2,0.25],\"limit\":3}");
	/* ...and a vector of another width is refused (-32008), whatever fails. */
	wl_add("memory/remember", "{\"records\":[{\"id\":\"v3\",\"content\":\"too short\",\"tier\":\"semantic\",\"embedding\":[1,2]}]}");
	wl_bulk(41, 30, "episodic", 1);
	wl_add("memory/promote", "{\"ids\":[\"a3\",\"b5\"],\"tier\":\"semantic\"}");
	wl_add("memory/promote", "{\"ids\":[\"b7\"],\"tier\":\"procedural\"}");
	wl_add("memory/forget", "{\"ids\":[\"b1\",\"b2\",\"p2\"]}");
	wl_add("memory/remember", "{\"records\":[{\"id\":\"p1-v2\",\"tier\":\"procedural\",\"key\":\"skills/deploy\",\"content\":\"Deploy with make install; restart; check the logs.\"}]}");
	wl_add("memory/reinforce", "{\"ids\":[\"b10\",\"a1\"],\"amount\":2}");
	wl_add("memory/recall", "{\"query\":\"river mountain\",\"tier\":\"episodic\"}");
	wl_add("memory/recall", "{\"query\":\"river mountain\",\"tier\":\"episodic\"}");
	wl_add("memory/consolidate", "{}");
	wl_add("memory/session/close", "{\"session\":\"s1\"}");
	wl_bulk(71, 40, "semantic", 0);
	wl_add("memory/recall", "{\"query\":\"epsilon\"}");
	wl_add("memory/recall", "{\"query\":\"omega lantern\"}");
	wl_add("memory/recall", "{\"query\":\"quartz\",\"limit\":3}");
	wl_add("memory/forget", "{\"key_prefix\":\"user/\"}");
	wl_add("memory/remember", "{\"records\":["
	       "{\"id\":\"d1\",\"content\":\"kappa call\",\"session\":\"s3\",\"group\":\"g3\",\"role\":\"assistant\"},"
	       "{\"id\":\"d2\",\"content\":\"kappa result\",\"session\":\"s3\",\"group\":\"g3\",\"role\":\"tool\"},"
	       "{\"id\":\"d3\",\"content\":\"sigma note\",\"session\":\"s3\"},"
	       "{\"id\":\"d4\",\"content\":\"sigma follow-up\",\"session\":\"s3\"}]}");
	wl_add("memory/session/close", "{\"session\":\"s2\"}");
	wl_add("memory/fetch", "{\"key\":\"skills/deploy\"}");
	wl_add("memory/timeline", "{\"limit\":20}");
	wl_add("memory/session/list", "{}");
	wl_bulk(111, 50, "episodic", 1);
	wl_add("memory/consolidate", "{}");
	wl_add("memory/forget", "{\"ids\":[\"b7\",\"b100\"]}");
	wl_bulk(161, 40, "semantic", 0);
	wl_add("memory/recall", "{\"query\":\"apples\",\"tier\":\"semantic\"}");
	wl_add("memory/describe", "{}");
	/* A write last: recall's touches are in the file before the close. */
	wl_add("memory/remember", "{\"records\":[{\"id\":\"z1\",\"content\":\"the last word\",\"tier\":\"semantic\"}]}");
}

/* ---- what the clock decides, taken out --------------------------------- */

/* Removes the members named in keys[0..n) from v, everywhere in it. */
static void wl_drop_keys(json_t *v, const char *const *keys, size_t n)
{
	if (json_is_object(v)) {
		const char *key;
		json_t *m;
		void *tmp;
		json_object_foreach_safe(v, tmp, key, m) {
			size_t i = 0;
			while (i < n && strcmp(key, keys[i]) != 0)
				i++;
			if (i < n)
				json_object_del(v, key);
			else
				wl_drop_keys(m, keys, n);
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *m;
		json_array_foreach(v, i, m)
			wl_drop_keys(m, keys, n);
	}
}

/* Removes the clock's fields from v, everywhere in it. */
static void wl_normalize(json_t *v)
{
	static const char *const keys[] = {
		"created_at", "accessed_at", "score", "opened_at", "touched_at",
	};
	wl_drop_keys(v, keys, sizeof keys / sizeof keys[0]);
}

/*
** A reply as the oracle compares it: without the clock's fields, nor an
** error's data, which a server short of memory may leave out of an error
** whose code and message stay exact (docs/FAULTS.md).
*/
static void wl_answer(json_t *v)
{
	wl_normalize(v);
	json_object_del(json_object_get(v, "error"), "data");
}

/* v as compact text (malloc'd), for messages. */
static char *wl_text(const json_t *v)
{
	char *t = v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
	return t ? t : strdup("(none)");
}

/* Where got and want part: "got ...X, want ...Y" from a little before. */
static void wl_diff(const json_t *got, const json_t *want, char *out, size_t len)
{
	char *a = wl_text(got), *b = wl_text(want);
	size_t at = 0;
	while (a[at] && a[at] == b[at])
		at++;
	at = at > 80 ? at - 80 : 0;
	snprintf(out, len, "got ...%.300s, want ...%.300s", a + at, b + at);
	free(a);
	free(b);
}

#endif
