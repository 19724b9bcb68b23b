/*
** records.c — a record in wire form (spec §3.1).
**
** Only the fields of declared capabilities go out, so a core-only server
** never shows a field it does not implement. Timestamps are RFC 3339 strings
** (spec §3.3); metadata is the JSON the caller wrote, key order included.
**
** One walk over the fields (record_fields) feeds two sinks: a jansson object
** (a2m_record_to_json), and text written straight into a buffer
** (a2m_record_write_json), which is how recall answers: building ten
** objects of a dozen members each and serialising them cost more than the
** ranking. Both give the same JSON, member for member, in the same order.
*/
#include <math.h>
#include <string.h>

#include "protocol/protocol.h"
#include "util/clock.h"
#include "util/json_write.h"
#include "util/text.h"

/* Where the fields go. A NULL string is JSON null. Each returns nonzero on failure. */
typedef struct field_sink {
	int (*str)(void *ctx, const char *key, const char *s);
	int (*real)(void *ctx, const char *key, double d);
	int (*integer)(void *ctx, const char *key, int64_t v);
	int (*value)(void *ctx, const char *key, json_t *v);  /* takes v (NULL: failure) */
	int (*vector)(void *ctx, const char *key, const double *v, size_t n);
} field_sink;

/* Walks rec's wire fields into sink k; nonzero when a sink failed. */
static int record_fields(const a2m_call *call, const a2m_record *rec, int with_embedding,
			 const field_sink *k, void *ctx)
{
	char ts[A2M_TIMESTAMP_LEN];
	int bad = 0;
	bad |= k->str(ctx, "id", rec->id);
	bad |= k->str(ctx, "content", rec->content ? rec->content : "");
	bad |= k->str(ctx, "created_at", a2m_clock_format(rec->created_at, ts));
	if (rec->role)
		bad |= k->str(ctx, "role", rec->role);
	if (rec->metadata)
		bad |= k->value(ctx, "metadata",
				json_loads(rec->metadata, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL));
	if (rec->group)
		bad |= k->str(ctx, "group", rec->group);
	unsigned caps = call->caps;
	if ((caps & A2M_CAP_TIERS) && rec->tier)
		bad |= k->str(ctx, "tier", rec->tier);
	if (caps & A2M_CAP_SALIENCE) {
		/* Clamped: a file written before salience was bounded may hold
		** an infinity, which has no JSON spelling (stack.h). */
		bad |= k->real(ctx, "salience", a2m_salience_clamp(rec->salience));
		bad |= k->integer(ctx, "access_count", rec->access_count);
		if (rec->accessed_at)
			bad |= k->str(ctx, "accessed_at", a2m_clock_format(rec->accessed_at, ts));
	}
	if (caps & A2M_CAP_SCOPES)
		bad |= k->str(ctx, "owner", rec->owner);
	if (caps & A2M_CAP_SESSIONS)
		bad |= k->str(ctx, "session", rec->session);
	if (caps & A2M_CAP_KEYS) {
		bad |= k->str(ctx, "key", rec->key);
		bad |= k->integer(ctx, "revision", rec->revision);
	}
	if ((caps & A2M_CAP_EMBEDDINGS) && with_embedding && rec->embedding)
		bad |= k->vector(ctx, "embedding", rec->embedding, rec->dims);
	if (caps & A2M_CAP_EXTERNAL) {
		bad |= k->str(ctx, "uri", rec->uri);
		bad |= k->str(ctx, "media_type", rec->media_type);
	}
	/* x-expiry: only a record that expires says when, so a record without
	** an expiry reads exactly as it would without the extension. */
	if ((caps & A2M_CAP_X_EXPIRY) && rec->expires_at)
		bad |= k->str(ctx, "expires_at", a2m_clock_format(rec->expires_at, ts));
	return bad;
}

/* ---- into a jansson object ---------------------------------------------- */

static int obj_value(void *ctx, const char *key, json_t *v)
{
	return !v || json_object_set_new(ctx, key, v);
}

static int obj_str(void *ctx, const char *key, const char *s)
{
	return obj_value(ctx, key, s ? json_string(s) : json_null());
}

static int obj_real(void *ctx, const char *key, double d)
{
	/* jansson holds no infinity or NaN (json_real refuses it): null, as
	** the text writer spells one (a2m_json_format_real). */
	return obj_value(ctx, key, isfinite(d) ? json_real(d) : json_null());
}

static int obj_integer(void *ctx, const char *key, int64_t v)
{
	return obj_value(ctx, key, json_integer(v));
}

static int obj_vector(void *ctx, const char *key, const double *v, size_t n)
{
	json_t *a = json_array();
	int bad = !a;
	for (size_t i = 0; a && i < n; i++)
		bad |= json_array_append_new(a, isfinite(v[i]) ? json_real(v[i]) : json_null());
	if (bad) {
		json_decref(a);
		return 1;
	}
	return obj_value(ctx, key, a);
}

static const field_sink to_object = {obj_str, obj_real, obj_integer, obj_value, obj_vector};

json_t *a2m_record_to_json(const a2m_call *call, const a2m_record *rec,
			   int with_embedding)
{
	json_t *o = json_object();
	if (o && record_fields(call, rec, with_embedding, &to_object, o) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- into text ------------------------------------------------------------ */

typedef struct text_ctx {
	a2m_buf *b;
	int           first;
} text_ctx;

/* Writes ,"key": (no comma before the first member). */
static void text_key(text_ctx *t, const char *key)
{
	/* One write for the three pieces: the keys are our own short names. */
	char piece[32];
	size_t n = strlen(key), at = t->first ? 1 : 0;
	if (n + 4 > sizeof piece) {
		a2m_json_put_raw(t->b, &",\""[at], 2 - at);
		a2m_json_put_raw(t->b, key, n);
		a2m_json_put_raw(t->b, "\":", 2);
		t->first = 0;
		return;
	}
	memcpy(piece, ",\"", 2);
	memcpy(piece + 2, key, n);
	memcpy(piece + 2 + n, "\":", 2);
	a2m_json_put_raw(t->b, piece + at, n + 4 - at);
	t->first = 0;
}

/*
** Whether s (n bytes) is valid UTF-8, as json_string() requires: a file
** written by something else could hold anything, and the object path fails
** on it rather than send invalid JSON. ASCII, the usual case, is one pass.
*/
static int valid_utf8(const char *s, size_t n)
{
	unsigned char high = 0;
	for (size_t i = 0; i < n; i++)
		high |= (unsigned char)s[i];
	return high < 0x80 || a2m_utf8_valid(s, n);
}

static int text_str(void *ctx, const char *key, const char *s)
{
	text_ctx *t = ctx;
	size_t n = s ? strlen(s) : 0;
	if (s && !valid_utf8(s, n))
		return 1;
	text_key(t, key);
	if (s)
		a2m_json_put_string(t->b, s, n);
	else
		a2m_json_put_raw(t->b, "null", 4);
	return 0;
}

static int text_real(void *ctx, const char *key, double d)
{
	text_ctx *t = ctx;
	text_key(t, key);
	a2m_json_put_real(t->b, d);
	return 0;
}

static int text_integer(void *ctx, const char *key, int64_t v)
{
	text_ctx *t = ctx;
	text_key(t, key);
	a2m_json_put_int(t->b, v);
	return 0;
}

static int text_value(void *ctx, const char *key, json_t *v)
{
	text_ctx *t = ctx;
	if (!v)
		return 1;
	text_key(t, key);
	a2m_json_put_value(t->b, v);
	json_decref(v);
	return 0;
}

static int text_vector(void *ctx, const char *key, const double *v, size_t n)
{
	text_ctx *t = ctx;
	text_key(t, key);
	a2m_json_put_raw(t->b, "[", 1);
	for (size_t i = 0; i < n; i++) {
		if (i)
			a2m_json_put_raw(t->b, ",", 1);
		a2m_json_put_real(t->b, v[i]);
	}
	a2m_json_put_raw(t->b, "]", 1);
	return 0;
}

static const field_sink to_text = {text_str, text_real, text_integer, text_value, text_vector};

int a2m_record_write_json(a2m_buf *b, const a2m_call *call, const a2m_record *rec,
			  int with_embedding, const double *score)
{
	text_ctx t = {.b = b, .first = 1};
	a2m_json_put_raw(b, "{", 1);
	int bad = record_fields(call, rec, with_embedding, &to_text, &t);
	if (score)
		text_real(&t, "score", *score);
	a2m_json_put_raw(b, "}", 1);
	return bad || b->failed;
}
