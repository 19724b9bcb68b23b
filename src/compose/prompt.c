/*
** prompt.c — the `template` rendering of spec §4.16 (see prompt.h).
**
** Each record becomes one entry and entries are joined by newlines:
**
**   facts       "- content"            (" [uri]" or " [key]" with cite)
**   transcript  "role: content"        (role "memory" when the record has none)
**
** A record's own newlines are kept, but every line after its first is
** indented, so an entry never looks like the start of another one. Budget
** trimming works on whole entries only: half a fact is worse than none,
** because nothing downstream can tell it was cut (§4.16).
*/
#include <stdlib.h>
#include <string.h>

#include "compose/prompt.h"
#include "util/buf.h"
#include "util/text.h"

/* What continues an entry onto its next line. */
#define CONTINUATION "\n  "

/* The role a transcript shows for a record that has none (§3.1's own value). */
#define DEFAULT_ROLE "memory"

json_t *a2m_prompt_describe(void)
{
	return json_pack("{s[sss] s[ss] so}", "styles", "auto", "facts", "transcript",
			 "methods", "template", "none", "model", json_null());
}

/* Reads one optional field of the prompt object; absent and null are alike. */
static json_t *field(const json_t *obj, const char *name)
{
	json_t *v = json_object_get(obj, name);
	return v && !json_is_null(v) ? v : NULL;
}

int a2m_prompt_parse(const json_t *param, a2m_prompt_opts *opts, int *wanted,
		     a2m_error *err)
{
	memset(opts, 0, sizeof *opts);
	opts->style = A2M_PROMPT_AUTO;
	*wanted = 0;
	if (!param || json_is_null(param) || json_is_false(param))
		return 0;
	if (json_is_true(param)) {
		*wanted = 1;
		return 0;
	}
	if (!json_is_object(param))
		return a2m_error_set(err, A2M_INVALID_PARAMS,
				     "prompt must be a boolean or an object");
	int render = 1;
	json_t *v = field(param, "method");
	if (v) {
		const char *m = json_string_value(v);
		if (!m)
			return a2m_error_set(err, A2M_INVALID_PARAMS, "prompt.method must be a string");
		if (strcmp(m, "none") == 0)
			render = 0;
		else if (strcmp(m, "template") != 0)
			/* Never substitute another method for the one asked (§4.16). */
			return a2m_error_set(err, A2M_INVALID_PARAMS,
					     "prompt.method '%.64s' is not offered; the methods are "
					     "\"template\" and \"none\"", m);
	}
	if (field(param, "model"))
		return a2m_error_set(err, A2M_INVALID_PARAMS,
				     "prompt.model: this server offers no model");
	if ((v = field(param, "style"))) {
		const char *s = json_string_value(v);
		if (s && strcmp(s, "auto") == 0)
			opts->style = A2M_PROMPT_AUTO;
		else if (s && strcmp(s, "facts") == 0)
			opts->style = A2M_PROMPT_FACTS;
		else if (s && strcmp(s, "transcript") == 0)
			opts->style = A2M_PROMPT_TRANSCRIPT;
		else
			return a2m_error_set(err, A2M_INVALID_PARAMS,
					     "prompt.style must be \"auto\", \"facts\" or \"transcript\"");
	}
	if ((v = field(param, "budget"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return a2m_error_set(err, A2M_INVALID_PARAMS,
					     "prompt.budget must be a non-negative integer");
		opts->budget = json_integer_value(v);
	}
	if ((v = field(param, "cite"))) {
		if (!json_is_boolean(v))
			return a2m_error_set(err, A2M_INVALID_PARAMS, "prompt.cite must be a boolean");
		opts->cite = json_is_true(v);
	}
	*wanted = render;
	return 0;
}

/* True when role is one a chat transcript speaks in. */
static int transcript_role(const char *role)
{
	static const char *const roles[] = {"user", "assistant", "tool", "system"};
	if (!role)
		return 0;
	for (size_t i = 0; i < sizeof roles / sizeof *roles; i++)
		if (strcmp(role, roles[i]) == 0)
			return 1;
	return 0;
}

/*
** Appends content with every line after the first indented. Trailing
** newlines are dropped: they carry nothing and would leave the entry ending
** in an empty continuation line.
*/
static void add_content(a2m_buf *b, const char *content)
{
	size_t n = strlen(content);
	while (n && content[n - 1] == '\n')
		n--;
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		if (content[i] != '\n')
			continue;
		a2m_buf_put(b, content + start, i - start);
		a2m_buf_puts(b, CONTINUATION);
		start = i + 1;
	}
	a2m_buf_put(b, content + start, n - start);
}

/* Renders one record as an entry (malloc'd), or NULL when memory runs out. */
static char *render_entry(const a2m_prompt_opts *opts, a2m_prompt_style style,
			  const a2m_record *rec)
{
	a2m_buf b = {0};
	if (style == A2M_PROMPT_TRANSCRIPT) {
		a2m_buf_puts(&b, rec->role ? rec->role : DEFAULT_ROLE);
		a2m_buf_puts(&b, ": ");
	} else {
		a2m_buf_puts(&b, "- ");
	}
	add_content(&b, rec->content ? rec->content : "");
	/* The uri is where the thing lives (§3.8); the key only names it. */
	const char *source = rec->uri ? rec->uri : rec->key;
	if (opts->cite && source) {
		a2m_buf_puts(&b, " [");
		a2m_buf_puts(&b, source);
		a2m_buf_puts(&b, "]");
	}
	return a2m_buf_take(&b, NULL);
}

int a2m_prompt_render(const a2m_prompt_opts *opts, const a2m_record *const *recs, size_t n,
		      int chronological, char **text, json_t **ids, a2m_error *err)
{
	char **entries = calloc(n + 1, sizeof *entries);
	size_t *chars = calloc(n + 1, sizeof *chars);
	json_t *out_ids = json_array();
	a2m_buf b = {0};
	*text = NULL;
	*ids = NULL;
	if (!entries || !chars || !out_ids)
		goto oom;

	a2m_prompt_style style = opts->style;
	if (style == A2M_PROMPT_AUTO) {
		/* A transcript only when every record spoke in a chat role; one
		** stored fact among them and the block reads as facts. */
		style = n ? A2M_PROMPT_TRANSCRIPT : A2M_PROMPT_FACTS;
		for (size_t i = 0; i < n; i++)
			if (!transcript_role(recs[i]->role))
				style = A2M_PROMPT_FACTS;
	}
	for (size_t i = 0; i < n; i++) {
		if (!(entries[i] = render_entry(opts, style, recs[i])))
			goto oom;
		chars[i] = a2m_utf8_length(entries[i], strlen(entries[i]));
	}

	/*
	** Keep the run [first, last) that fits: entries are joined by one
	** newline, so k entries cost their sum plus k - 1. A recall drops from
	** the end (the lowest ranked); a timeline drops from the start (the
	** oldest), so the recent end of a conversation survives.
	*/
	size_t first = 0, last = n;
	if (opts->budget > 0) {
		size_t budget = (size_t)opts->budget, used = 0, k = 0;
		if (chronological) {
			first = n;
			while (first > 0) {
				size_t cost = chars[first - 1] + (k ? 1 : 0);
				if (used + cost > budget)
					break;
				used += cost;
				k++;
				first--;
			}
		} else {
			last = 0;
			while (last < n) {
				size_t cost = chars[last] + (k ? 1 : 0);
				if (used + cost > budget)
					break;
				used += cost;
				k++;
				last++;
			}
		}
	}
	for (size_t i = first; i < last; i++) {
		if (i > first)
			a2m_buf_puts(&b, "\n");
		a2m_buf_puts(&b, entries[i]);
		if (json_array_append_new(out_ids, json_string(recs[i]->id ? recs[i]->id : "")))
			goto oom;
	}
	if (!(*text = a2m_buf_take(&b, NULL)))
		goto oom;
	for (size_t i = 0; i < n; i++)
		free(entries[i]);
	free(entries);
	free(chars);
	*ids = out_ids;
	return 0;
oom:
	for (size_t i = 0; entries && i < n; i++)
		free(entries[i]);
	free(entries);
	free(chars);
	a2m_buf_free(&b);
	json_decref(out_ids);
	return a2m_error_set(err, A2M_INTERNAL_ERROR, "out of memory");
}
