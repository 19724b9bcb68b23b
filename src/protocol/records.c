/*
** records.c — a record in wire form (spec §3.1).
**
** Only the fields of declared capabilities go out, so a core-only server
** never shows a field it does not implement. Timestamps are RFC 3339 strings
** (spec §3.3); metadata is the JSON the caller wrote, key order included.
*/
#include "protocol/protocol.h"
#include "util/clock.h"

/* Sets key to s, or to JSON null when s is NULL. */
static int set_str_or_null(json_t *o, const char *key, const char *s)
{
	return json_object_set_new(o, key, s ? json_string(s) : json_null());
}

json_t *a2m_record_to_json(const a2m_server *srv, const a2m_record *rec,
			   int with_embedding)
{
	char ts[A2M_TIMESTAMP_LEN];
	json_t *o = json_object();
	if (!o)
		return NULL;
	int bad = 0;
	bad |= json_object_set_new(o, "id", json_string(rec->id));
	bad |= json_object_set_new(o, "content", json_string(rec->content ? rec->content : ""));
	bad |= json_object_set_new(o, "created_at",
				   json_string(a2m_clock_format(rec->created_at, ts)));
	if (rec->role)
		bad |= json_object_set_new(o, "role", json_string(rec->role));
	if (rec->metadata) {
		json_t *m = json_loads(rec->metadata, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (m)
			bad |= json_object_set_new(o, "metadata", m);
		else
			bad = 1;
	}
	if (rec->group)
		bad |= json_object_set_new(o, "group", json_string(rec->group));
	unsigned caps = srv->caps;
	if ((caps & A2M_CAP_TIERS) && rec->tier)
		bad |= json_object_set_new(o, "tier", json_string(rec->tier));
	if (caps & A2M_CAP_SALIENCE) {
		bad |= json_object_set_new(o, "salience", json_real(rec->salience));
		bad |= json_object_set_new(o, "access_count", json_integer(rec->access_count));
		if (rec->accessed_at)
			bad |= json_object_set_new(o, "accessed_at",
						   json_string(a2m_clock_format(rec->accessed_at, ts)));
	}
	if (caps & A2M_CAP_SCOPES)
		bad |= set_str_or_null(o, "owner", rec->owner);
	if (caps & A2M_CAP_SESSIONS)
		bad |= set_str_or_null(o, "session", rec->session);
	if (caps & A2M_CAP_KEYS) {
		bad |= set_str_or_null(o, "key", rec->key);
		bad |= json_object_set_new(o, "revision", json_integer(rec->revision));
	}
	if ((caps & A2M_CAP_EMBEDDINGS) && with_embedding && rec->embedding) {
		json_t *v = json_array();
		for (size_t i = 0; v && i < rec->dims; i++)
			bad |= json_array_append_new(v, json_real(rec->embedding[i]));
		bad |= json_object_set_new(o, "embedding", v);
	}
	if (caps & A2M_CAP_EXTERNAL) {
		bad |= set_str_or_null(o, "uri", rec->uri);
		bad |= set_str_or_null(o, "media_type", rec->media_type);
	}
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}
