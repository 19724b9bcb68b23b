/*
** check_embeddings.c — checks of the embeddings capability (spec
** §3.7; DECISIONS 018): vectors the caller brings are stored verbatim,
** returned only when asked for, held to the store's width, and searched
** with the metric describe declares.
**
** A store's width is fixed by the first vector it ever receives, which may
** have been long before this run (a persistent file). So no check assumes
** a width: each reads `dimensions` from a fresh memory/describe and uses
** that, or 4 when nothing has fixed it yet.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

/* The width a check uses on a store whose width is not fixed yet. */
#define FRESH_WIDTH 4

/* ---- small helpers ---- */

/* The records of a recall or timeline (params stolen), or NULL after failing. */
static json_t *read_records(conf_ctx *cx, const char *method, json_t *params)
{
	json_t *result = conf_result(cx, method, params);
	if (!result)
		return NULL;
	json_t *records = json_object_get(result, "records");
	if (!json_is_array(records)) {
		conf_fail(cx, "%s returned no records array: %s", method, conf_show(cx, result));
		return NULL;
	}
	return records;
}

/* The store's embeddings object from a fresh describe, or NULL after failing. */
static json_t *embeddings_now(conf_ctx *cx)
{
	json_t *d = conf_result(cx, "memory/describe", NULL);
	if (!d)
		return NULL;
	json_t *e = json_object_get(d, "embeddings");
	if (!json_is_object(e)) {
		conf_fail(cx, "describe declares \"embeddings\" but reports embeddings %s, "
			  "expected an object (spec §3.7)", conf_show(cx, e));
		return NULL;
	}
	return e;
}

/*
** The store's width into *width: 0 while no vector has fixed it. Returns 1,
** or 0 after failing the check when describe reports something else.
*/
static int store_width(conf_ctx *cx, size_t *width)
{
	json_t *e = embeddings_now(cx);
	if (!e)
		return 0;
	json_t *dims = json_object_get(e, "dimensions");
	if (json_is_null(dims)) {
		*width = 0;
		return 1;
	}
	if (!json_is_integer(dims) || json_integer_value(dims) <= 0) {
		conf_fail(cx, "embeddings.dimensions is %s, expected null or a positive integer",
			  conf_show(cx, dims));
		return 0;
	}
	*width = (size_t)json_integer_value(dims);
	return 1;
}

/* The declared metric, or NULL after failing the check. */
static const char *store_metric(conf_ctx *cx)
{
	json_t *e = embeddings_now(cx);
	const char *metric = e ? conf_str_of(e, "metric") : NULL;
	if (e && (!metric || (strcmp(metric, "cosine") != 0 && strcmp(metric, "dot") != 0 &&
			      strcmp(metric, "l2") != 0))) {
		conf_fail(cx, "embeddings.metric is %s, expected \"cosine\", \"dot\" or \"l2\"",
			  conf_show(cx, json_object_get(e, "metric")));
		return NULL;
	}
	return metric;
}

/* A vector of width values: x, y, then zeros. Not kept (to be stolen). */
static json_t *plane_vector(size_t width, double x, double y)
{
	json_t *v = json_array();
	for (size_t i = 0; i < width; i++)
		json_array_append_new(v, json_real(i == 0 ? x : i == 1 ? y : 0.0));
	return v;
}

/*
** A vector of width values that a lossy store would not return intact:
** decimals with no exact binary form, a tiny exponent, pi to the last digit.
*/
static json_t *awkward_vector(size_t width)
{
	static const double head[] = {0.1, -2.5e-7, 3.141592653589793, 12345.678901};
	json_t *v = json_array();
	for (size_t i = 0; i < width; i++) {
		double x = i < CONF_COUNT(head) ? head[i]
						: (double)(i % 7) / 8.0 - 0.3 + 1e-9 * (double)i;
		json_array_append_new(v, json_real(x));
	}
	return v;
}

/* A record tagged with marker, carrying vector (stolen). Not kept. */
static json_t *vector_record(conf_ctx *cx, const char *content, const char *marker,
			     json_t *vector)
{
	json_t *rec = conf_record(cx, content, marker);
	json_object_set_new(rec, "embedding", vector);
	return rec;
}

/* Writes one record carrying vector (stolen); its id, or NULL. */
static const char *write_vector(conf_ctx *cx, const char *marker, json_t *vector)
{
	json_t *ids = conf_remember(cx, json_pack("[o]", vector_record(
		cx, conf_str(cx, "%s carries a vector", marker), marker, vector)));
	return ids ? json_string_value(json_array_get(ids, 0)) : NULL;
}

/*
** The width to write with: the store's, or FRESH_WIDTH when nothing has
** fixed it — in which case, when fix is set, one vector is written first so
** that the width is fixed before the check relies on it. 0 after failing.
*/
static size_t width_for(conf_ctx *cx, int fix)
{
	size_t width;
	if (!store_width(cx, &width))
		return 0;
	if (width)
		return width;
	if (fix && !write_vector(cx, conf_marker(cx), plane_vector(FRESH_WIDTH, 1, 0)))
		return 0;
	return FRESH_WIDTH;
}

/* x in the fewest digits that read back as x: 0.1, not 0.10000000000000001. */
static const char *shortest(conf_ctx *cx, double x)
{
	for (int digits = 1; digits < 17; digits++) {
		const char *s = conf_str(cx, "%.*g", digits, x);
		if (strtod(s, NULL) == x)
			return s;
	}
	return conf_str(cx, "%.17g", x);
}

/* Whether got is a number array equal to want element by element. */
static int same_vector(conf_ctx *cx, const char *what, const json_t *want, const json_t *got)
{
	if (!json_is_array(got) || json_array_size(got) != json_array_size(want)) {
		conf_fail(cx, "%s: embedding %s, expected the %zu numbers written", what,
			  conf_show(cx, got), json_array_size(want));
		return 0;
	}
	for (size_t i = 0; i < json_array_size(want); i++) {
		json_t *g = json_array_get(got, i);
		double w = json_number_value(json_array_get(want, i));
		if (!json_is_number(g) || json_number_value(g) != w) {
			conf_fail(cx, "%s: embedding[%zu] is %s, expected %s (stored verbatim, "
				  "spec §3.7)", what, i, json_is_number(g) ? shortest(cx,
				  json_number_value(g)) : conf_show(cx, g), shortest(cx, w));
			return 0;
		}
	}
	return 1;
}

/* Whether rec carries no vector: the field absent, or null. */
static int no_vector(conf_ctx *cx, const char *what, const json_t *rec)
{
	json_t *v = json_object_get(rec, "embedding");
	if (!v || json_is_null(v))
		return 1;
	conf_fail(cx, "%s returned embedding %s without being asked (spec §3.7: not by "
		  "default)", what, conf_show(cx, v));
	return 0;
}

/* The one record records holds with id, or NULL after failing. */
static json_t *the_record(conf_ctx *cx, const char *what, const json_t *records, const char *id)
{
	json_t *rec = conf_by_id(records, id);
	if (!rec)
		conf_fail(cx, "%s did not return the record %s: %s", what, id,
			  conf_show(cx, records));
	return rec;
}

/* ---- describe ---- */

static void check_describe(conf_ctx *cx, const void *arg)
{
	(void)arg;
	size_t width;
	json_t *e = embeddings_now(cx);
	if (!e || !store_width(cx, &width) || !store_metric(cx))
		return;
	json_t *model = json_object_get(e, "model");
	if (model && !json_is_string(model) && !json_is_null(model)) {
		conf_fail(cx, "embeddings.model is %s, expected a string or null",
			  conf_show(cx, model));
		return;
	}
	conf_pass(cx);
}

/* Spec §3.7: metrics SHOULD be reported, and then names the one in use. */
static void check_describe_metrics(conf_ctx *cx, const void *arg)
{
	(void)arg;
	json_t *e = embeddings_now(cx);
	const char *metric = store_metric(cx);
	if (!e || !metric)
		return;
	json_t *metrics = json_object_get(e, "metrics");
	if (!metrics) {
		conf_skip(cx, "describe reports no metrics (a SHOULD)");
		return;
	}
	if (!json_is_array(metrics)) {
		conf_fail(cx, "embeddings.metrics is %s, expected an array of strings",
			  conf_show(cx, metrics));
		return;
	}
	int found = 0;
	size_t i;
	json_t *m;
	json_array_foreach(metrics, i, m) {
		if (!json_is_string(m)) {
			conf_fail(cx, "embeddings.metrics holds %s, expected only strings",
				  conf_show(cx, m));
			return;
		}
		found |= strcmp(json_string_value(m), metric) == 0;
	}
	if (!found)
		conf_fail(cx, "embeddings.metrics %s lacks the metric in use, \"%s\"",
			  conf_show(cx, metrics), metric);
	else
		conf_pass(cx);
}

/* ---- width ---- */

static void check_width_fixed(conf_ctx *cx, const void *arg)
{
	(void)arg;
	size_t before, after;
	if (!conf_need_writes(cx) || !store_width(cx, &before))
		return;
	size_t width = before ? before : FRESH_WIDTH;
	if (!write_vector(cx, conf_marker(cx), awkward_vector(width)) ||
	    !store_width(cx, &after))
		return;
	if (after != width)
		conf_fail(cx, "after a vector of %zu numbers (dimensions was %s), describe "
			  "reports dimensions %zu", width, before ? conf_str(cx, "%zu", before) : "null",
			  after);
	else
		conf_pass(cx);
}

/* How a check disturbs the width of a vector. */
static const long wider = 1, narrower = -1;

static void check_width_refused(conf_ctx *cx, const void *arg)
{
	long delta = *(const long *)arg;
	size_t width = conf_need_writes(cx) ? width_for(cx, 1) : 0;
	if (!width)
		return;
	if (delta < 0 && width == 1) {
		conf_skip(cx, "the store's vectors have one dimension; none is narrower");
		return;
	}
	size_t wrong = delta > 0 ? width + 1 : width - 1;
	const char *m = conf_marker(cx);
	json_t *batch = json_pack("[oo]",
		vector_record(cx, conf_str(cx, "%s fits", m), m, plane_vector(width, 1, 1)),
		vector_record(cx, conf_str(cx, "%s does not fit", m), m,
			      plane_vector(wrong, 1, 1)));
	if (!conf_expect_error(cx, "memory/remember", json_pack("{s:o}", "records", batch),
			       -32008, 0))
		return;
	json_t *left = conf_timeline_of(cx, m);
	if (!left)
		return;
	if (json_array_size(left) != 0)
		conf_fail(cx, "the refused batch still wrote %s (spec §4.2: atomic, and no "
			  "partial ids)", conf_show(cx, left));
	else
		conf_pass(cx);
}

static void check_query_width_refused(conf_ctx *cx, const void *arg)
{
	(void)arg;
	size_t width = width_for(cx, 1);
	if (!width)
		return;
	json_t *params = json_pack("{s:o,s:i}", "embedding", plane_vector(width + 1, 1, 0),
				   "limit", 5);
	if (conf_expect_error(cx, "memory/recall", params, -32008, 0))
		conf_pass(cx);
}

/* Vectors that are not vectors, each refused with -32602. */
static const char *const bad_vectors[] = {
	"[1, \"two\", 3]", "[1, null, 3]", "[true, 0, 0]", "[[1], 0, 0]", "[{}, 0, 0]",
	"\"1,2,3\"", "{\"0\": 1}",
};

static void check_remember_not_numbers(conf_ctx *cx, const void *arg)
{
	(void)arg;
	const char *m = conf_marker(cx);
	if (!conf_need_writes(cx))
		return;
	for (size_t i = 0; i < CONF_COUNT(bad_vectors); i++) {
		json_t *vec = conf_json(cx, bad_vectors[i]);
		if (!vec)
			return;
		json_t *rec = vector_record(cx, conf_str(cx, "%s bad vector", m), m,
					    json_incref(vec));
		json_t *resp = conf_call(cx, "memory/remember",
					 json_pack("{s:[o]}", "records", rec));
		int code;
		if (!resp)
			return;
		if (!conf_error_code(resp, &code) || code != CONF_INVALID_PARAMS) {
			conf_fail(cx, "remember with embedding %s answered %s, expected -32602",
				  bad_vectors[i], conf_show(cx, resp));
			return;
		}
	}
	json_t *left = conf_timeline_of(cx, m);
	if (!left)
		return;
	if (json_array_size(left) != 0)
		conf_fail(cx, "a refused write was stored anyway: %s", conf_show(cx, left));
	else
		conf_pass(cx);
}

static void check_query_not_numbers(conf_ctx *cx, const void *arg)
{
	(void)arg;
	for (size_t i = 0; i < CONF_COUNT(bad_vectors); i++) {
		json_t *vec = conf_json(cx, bad_vectors[i]);
		if (!vec)
			return;
		json_t *resp = conf_call(cx, "memory/recall",
					 json_pack("{s:O}", "embedding", vec));
		int code;
		if (!resp)
			return;
		if (!conf_error_code(resp, &code) || code != CONF_INVALID_PARAMS) {
			conf_fail(cx, "recall with embedding %s answered %s, expected -32602",
				  bad_vectors[i], conf_show(cx, resp));
			return;
		}
	}
	conf_pass(cx);
}

/* ---- stored verbatim, returned on request ---- */

enum reader { BY_RECALL, BY_TIMELINE, BY_FETCH };

/* Reads back the record of id (written under marker, and key when fetching). */
static json_t *read_back(conf_ctx *cx, enum reader how, const char *marker, const char *key,
			 const char *id, json_t *want_vectors)
{
	json_t *records;
	switch (how) {
	case BY_RECALL: {
		json_t *p = json_pack("{s:s,s:{s:s},s:i}", "query", marker, "where", "cfm", marker,
				      "limit", 10);
		if (want_vectors)
			json_object_set(p, "embeddings", want_vectors);
		records = read_records(cx, "memory/recall", p);
		return records ? the_record(cx, "recall", records, id) : NULL;
	}
	case BY_TIMELINE: {
		json_t *p = json_pack("{s:{s:s}}", "where", "cfm", marker);
		if (want_vectors)
			json_object_set(p, "embeddings", want_vectors);
		records = read_records(cx, "memory/timeline", p);
		return records ? the_record(cx, "timeline", records, id) : NULL;
	}
	case BY_FETCH: {
		json_t *p = json_pack("{s:s}", "key", key);
		if (want_vectors)
			json_object_set(p, "embeddings", want_vectors);
		json_t *result = conf_result(cx, "memory/fetch", p);
		json_t *rec = json_object_get(result, "record");
		if (result && !json_is_object(rec)) {
			conf_fail(cx, "fetch of the key just written returned %s",
				  conf_show(cx, result));
			return NULL;
		}
		return rec;
	}
	}
	return NULL;
}

static const char *const reader_names[] = {"recall", "timeline", "fetch"};

static const enum reader by_recall = BY_RECALL, by_timeline = BY_TIMELINE, by_fetch = BY_FETCH;

static void check_verbatim(conf_ctx *cx, const void *arg)
{
	enum reader how = *(const enum reader *)arg;
	if (how == BY_FETCH && !conf_has_capability(cx, "keys")) {
		conf_skip(cx, "the server does not declare \"keys\"");
		return;
	}
	size_t width = width_for(cx, 0);
	if (!width || !conf_need_writes(cx))
		return;
	const char *m = conf_marker(cx);
	const char *key = conf_str(cx, "cf/%s/vector", m);
	json_t *vec = conf_keep(cx, awkward_vector(width));
	json_t *rec = vector_record(cx, conf_str(cx, "%s keeps its vector", m), m,
				    json_incref(vec));
	if (how == BY_FETCH)
		json_object_set_new(rec, "key", json_string(key));
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	if (!ids)
		return;
	const char *id = json_string_value(json_array_get(ids, 0));
	const char *what = conf_str(cx, "%s with embeddings: true", reader_names[how]);
	json_t *got = read_back(cx, how, m, key, id, json_true());
	if (got && same_vector(cx, what, vec, json_object_get(got, "embedding")))
		conf_pass(cx);
}

static void check_not_by_default(conf_ctx *cx, const void *arg)
{
	(void)arg;
	size_t width = width_for(cx, 0);
	if (!width || !conf_need_writes(cx))
		return;
	int keys = conf_has_capability(cx, "keys");
	const char *m = conf_marker(cx);
	const char *key = conf_str(cx, "cf/%s/hidden", m);
	json_t *rec = vector_record(cx, conf_str(cx, "%s hides its vector", m), m,
				    plane_vector(width, 0.5, 0.25));
	if (keys)
		json_object_set_new(rec, "key", json_string(key));
	json_t *ids = conf_remember(cx, json_pack("[o]", rec));
	if (!ids)
		return;
	const char *id = json_string_value(json_array_get(ids, 0));
	for (int how = BY_RECALL; how <= (keys ? BY_FETCH : BY_TIMELINE); how++) {
		/* Once with the parameter absent, once with it false. */
		json_t *got = read_back(cx, (enum reader)how, m, key, id, NULL);
		if (!got || !no_vector(cx, reader_names[how], got))
			return;
		got = read_back(cx, (enum reader)how, m, key, id, json_false());
		if (!got || !no_vector(cx, conf_str(cx, "%s with embeddings: false",
						    reader_names[how]), got))
			return;
	}
	conf_pass(cx);
}

/* ---- searching ---- */

/* recall {embedding: query, where: {cfm: marker}}: the ids in order. */
static json_t *vector_search(conf_ctx *cx, const char *marker, json_t *query)
{
	json_t *records = read_records(cx, "memory/recall",
		json_pack("{s:o,s:{s:s},s:i}", "embedding", query, "where", "cfm", marker,
			  "limit", 10));
	if (!records)
		return NULL;
	json_t *ids = conf_keep(cx, json_array());
	size_t i;
	json_t *rec;
	json_array_foreach(records, i, rec)
		json_array_append(ids, json_object_get(rec, "id"));
	return ids;
}

/* Writes one record per vector (stolen), in one batch, tagged m; the ids. */
static json_t *write_vectors(conf_ctx *cx, const char *m, json_t *const *vectors,
			     const char *const *names, size_t n)
{
	json_t *batch = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(batch, vector_record(cx, conf_str(cx, "%s %s", m, names[i]),
							   m, vectors[i]));
	return conf_remember(cx, batch);
}

/* The names of ids, by position in names, for a failure message. */
static const char *order_of(conf_ctx *cx, const json_t *got, const json_t *ids,
			    const char *const *names)
{
	const char *out = "";
	size_t i;
	json_t *id;
	json_array_foreach(got, i, id) {
		const char *name = "(another record)";
		for (size_t j = 0; j < json_array_size(ids); j++) {
			if (json_equal(id, json_array_get(ids, j)))
				name = names[j];
		}
		out = conf_str(cx, "%s%s%s", out, i ? ", " : "", name);
	}
	return out;
}

/*
** The vector equal to the query ranks first under any metric, one at right
** angles next, the opposite one last (if returned at all).
*/
static void check_nearest_first(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const char *const names[] = {"same", "orthogonal", "opposite"};
	size_t width = width_for(cx, 0);
	if (!width || !conf_need_writes(cx))
		return;
	if (width < 2) {
		conf_skip(cx, "the store's vectors have one dimension: no right angle");
		return;
	}
	const char *m = conf_marker(cx);
	json_t *vectors[] = {plane_vector(width, 1, 0), plane_vector(width, 0, 1),
			     plane_vector(width, -1, 0)};
	json_t *ids = write_vectors(cx, m, vectors, names, 3);
	json_t *got = ids ? vector_search(cx, m, plane_vector(width, 1, 0)) : NULL;
	if (!got)
		return;
	size_t n = json_array_size(got);
	int ok = n >= 1 && n <= 3;
	for (size_t i = 0; ok && i < n; i++)
		ok = json_equal(json_array_get(got, i), json_array_get(ids, i));
	if (!ok)
		conf_fail(cx, "a query vector equal to \"same\" ranked %s, expected same, "
			  "orthogonal, opposite (or a prefix of it)", order_of(cx, got, ids, names));
	else
		conf_pass(cx);
}

/*
** Three vectors that the three metrics order three different ways, against
** the query (1, 0, 0...):
**
**   long    10 × the query         cosine 1      dot 10     distance 9
**   near    unit, 0.1 rad away     cosine .995   dot .995   distance .0999
**   wide    20 × unit at 45°       cosine .707   dot 14.1   distance 19.3
**
** cosine ranks long first whatever its length, dot the longest projection
** (wide), l2 the nearest point (near).
*/
static void check_metric_order(conf_ctx *cx, const void *arg)
{
	(void)arg;
	static const char *const names[] = {"long", "near", "wide"};
	static const struct {
		const char *metric;
		size_t order[3];
	} expected[] = {
		{"cosine", {0, 1, 2}},
		{"dot", {2, 0, 1}},
		{"l2", {1, 0, 2}},
	};
	size_t width = width_for(cx, 0);
	const char *metric = width ? store_metric(cx) : NULL;
	if (!metric || !conf_need_writes(cx))
		return;
	if (width < 2) {
		conf_skip(cx, "the store's vectors have one dimension: the metrics cannot "
			  "be told apart by angle");
		return;
	}
	const double near = 0.1, wide = M_PI / 4;
	const char *m = conf_marker(cx);
	json_t *vectors[] = {plane_vector(width, 10, 0),
			     plane_vector(width, cos(near), sin(near)),
			     plane_vector(width, 20 * cos(wide), 20 * sin(wide))};
	json_t *ids = write_vectors(cx, m, vectors, names, 3);
	json_t *got = ids ? vector_search(cx, m, plane_vector(width, 1, 0)) : NULL;
	if (!got)
		return;
	for (size_t i = 0; i < CONF_COUNT(expected); i++) {
		if (strcmp(expected[i].metric, metric) != 0)
			continue;
		int ok = json_array_size(got) == 3;
		for (size_t j = 0; ok && j < 3; j++)
			ok = json_equal(json_array_get(got, j),
					json_array_get(ids, expected[i].order[j]));
		if (!ok)
			conf_fail(cx, "the declared metric is %s, which orders %s, %s, %s; the "
				  "server ranked %s", metric, names[expected[i].order[0]],
				  names[expected[i].order[1]], names[expected[i].order[2]],
				  order_of(cx, got, ids, names));
		else
			conf_pass(cx);
	}
}

static const conf_check checks[] = {
	{"describe reports dimensions (null or an integer) and a known metric",
	 check_describe, NULL},
	{"metrics lists the metric in use", check_describe_metrics, NULL},
	{"the first vector fixes dimensions and describe reports it", check_width_fixed, NULL},
	{"recall with embeddings: true returns the vector verbatim", check_verbatim, &by_recall},
	{"timeline with embeddings: true returns the vector verbatim", check_verbatim,
	 &by_timeline},
	{"fetch with embeddings: true returns the vector verbatim", check_verbatim, &by_fetch},
	{"vectors are not returned unless asked for", check_not_by_default, NULL},
	{"a wider vector is -32008 and its batch writes nothing", check_width_refused, &wider},
	{"a narrower vector is -32008 and its batch writes nothing", check_width_refused,
	 &narrower},
	{"a query vector of another width is -32008", check_query_width_refused, NULL},
	{"a vector that is not all numbers is -32602 and writes nothing",
	 check_remember_not_numbers, NULL},
	{"a query vector that is not all numbers is -32602", check_query_not_numbers, NULL},
	{"a query vector ranks the equal vector first", check_nearest_first, NULL},
	{"the declared metric decides the order", check_metric_order, NULL},
};

const conf_group conf_group_embeddings = {"embeddings", "embeddings", checks,
					  CONF_COUNT(checks), 0};
