/*
** client_verbs.c — the client commands, one function per A2M method: build
** the params from the command line, make the one call, print the result for
** a person (client_render.c) or, with --json, as the raw result object.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client_cmds.h"
#include "cli/client_render.h"
#include "util/text.h"

/* Prints result as JSON or through render; takes result. */
static int show(cmd_ctx *cx, json_t *result, void (*render)(cmd_ctx *, a2m_buf *, const json_t *))
{
	int rc = A2M_EXIT_OK;
	if (cx->json) {
		cmd_print_json(result);
	} else {
		a2m_buf b = {0};
		render(cx, &b, result);
		rc = cmd_print(cx, a2m_buf_take(&b, NULL));
	}
	json_decref(result);
	return rc;
}

/* The positional arguments joined by spaces, or NULL when there are none. */
static char *joined_args(const cmd_ctx *cx)
{
	if (!cx->nargs)
		return NULL;
	a2m_buf b = {0};
	for (int i = 0; i < cx->nargs; i++) {
		if (i)
			a2m_buf_puts(&b, " ");
		a2m_buf_puts(&b, cx->args[i]);
	}
	return a2m_buf_take(&b, NULL);
}

/* ---- describe ---- */

static void render_describe(cmd_ctx *cx, a2m_buf *b, const json_t *r)
{
	(void)cx;
	cli_render_describe(b, r);
}

static int run_describe(cmd_ctx *cx)
{
	if (cx->nargs)
		return cmd_usage_error(cx, "unexpected argument '%s'", cx->args[0]);
	json_t *result;
	int rc = cmd_call(cx, "memory/describe", NULL, 1, &result);
	return rc ? rc : show(cx, result, render_describe);
}

/* ---- remember ---- */

/* Reads all of stdin into a string; NULL when it could not. */
static char *read_stdin(void)
{
	a2m_buf b = {0};
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
		a2m_buf_put(&b, chunk, n);
	if (ferror(stdin)) {
		a2m_buf_free(&b);
		return NULL;
	}
	return a2m_buf_take(&b, NULL);
}

/* One record carrying text and the record options; NULL for a usage error
** (already reported) with *rc set. */
static json_t *make_record(cmd_ctx *cx, const char *text, int *rc)
{
	json_t *rec = json_object();
	json_t *content = json_string(text);
	if (!content) {
		*rc = cmd_usage_error(cx, "the text is not valid UTF-8");
		json_decref(rec);
		return NULL;
	}
	json_object_set_new(rec, "content", content);
	cmd_put_string(cx, O_ROLE, rec, "role");
	cmd_put_string(cx, O_TIER, rec, "tier");
	cmd_put_string(cx, O_KEY, rec, "key");
	cmd_put_string(cx, O_SESSION, rec, "session");
	cmd_put_string(cx, O_GROUP, rec, "group");
	if ((*rc = cmd_put_object(cx, O_META, rec, "metadata")) != 0 ||
	    (*rc = cmd_put_number(cx, O_SALIENCE, rec, "salience")) != 0) {
		json_decref(rec);
		return NULL;
	}
	/* Every record carries a client id, so sending it twice stores it
	** once (spec §3.2, DECISIONS 011): the call is safe to retry. */
	char id[A2M_ID_LEN];
	if (cx->opt[O_ID]) {
		json_object_set_new(rec, "id", json_string(cx->opt[O_ID]));
	} else if (cli_new_record_id(id) == 0) {
		json_object_set_new(rec, "id", json_string(id));
	} else {
		fprintf(stderr, "%s: cannot generate a record id: no randomness\n", cx->prog);
		*rc = A2M_EXIT_ERROR;
		json_decref(rec);
		return NULL;
	}
	return rec;
}

/* The records to write: the arguments as one, stdin as one, or with
** --lines each non-blank line of either. Returns 0 or an exit status. */
static int collect_records(cmd_ctx *cx, json_t *records)
{
	char *text = joined_args(cx);
	if (!text) {
		if (isatty(STDIN_FILENO))
			return cmd_usage_error(cx, "give the text as arguments or on stdin");
		if (!(text = read_stdin())) {
			fprintf(stderr, "%s: cannot read stdin\n", cx->prog);
			return A2M_EXIT_ERROR;
		}
		/* A trailing newline is how text ends in a file, not content. */
		size_t n = strlen(text);
		while (n && (text[n - 1] == '\n' || text[n - 1] == '\r'))
			text[--n] = '\0';
	}
	int rc = 0;
	if (cx->opt[O_LINES]) {
		char *save = NULL;
		for (char *line = strtok_r(text, "\n", &save); line && !rc;
		     line = strtok_r(NULL, "\n", &save)) {
			size_t n = strlen(line);
			if (n && line[n - 1] == '\r')
				line[--n] = '\0';
			if (!n || strspn(line, " \t") == n)
				continue;
			json_t *rec = make_record(cx, line, &rc);
			if (rec)
				json_array_append_new(records, rec);
		}
	} else if (*text) {
		json_t *rec = make_record(cx, text, &rc);
		if (rec)
			json_array_append_new(records, rec);
	}
	free(text);
	if (!rc && !json_array_size(records))
		rc = cmd_usage_error(cx, "nothing to remember: the text is empty");
	return rc;
}

static int run_remember(cmd_ctx *cx)
{
	if (cx->opt[O_ID] && cx->opt[O_LINES])
		return cmd_usage_error(cx, "--id names one record; it cannot go with --lines");
	if (cx->opt[O_KEY] && cx->opt[O_LINES])
		return cmd_usage_error(cx, "--key addresses one record; it cannot go with --lines");
	if (json_array_size(cx->ids) > 1)
		return cmd_usage_error(cx, "give --id once");
	json_t *records = json_array();
	int rc = collect_records(cx, records);
	if (rc) {
		json_decref(records);
		return rc;
	}
	/* Batches no larger than the server accepts (spec §4.1 limits). */
	json_t *ids = json_array();
	size_t total = json_array_size(records), per_call = total, done = 0;
	json_t *batch_limit = NULL;
	json_t *probe;
	if ((rc = cmd_call(cx, "memory/describe", NULL, 1, &probe)) != 0)
		goto out;
	batch_limit = json_object_get(json_object_get(probe, "limits"), "max_records_per_call");
	if (json_is_integer(batch_limit) && json_integer_value(batch_limit) > 0 &&
	    (size_t)json_integer_value(batch_limit) < per_call)
		per_call = (size_t)json_integer_value(batch_limit);
	json_decref(probe);
	while (done < total) {
		json_t *params = cmd_params(cx), *batch = json_array(), *result;
		for (size_t i = done; i < total && i < done + per_call; i++)
			json_array_append(batch, json_array_get(records, i));
		json_object_set_new(params, "records", batch);
		if ((rc = cmd_call(cx, "memory/remember", params, 1, &result)) != 0) {
			if (done)
				fprintf(stderr, "%s: the first %zu record(s) were stored\n", cx->prog, done);
			goto out;
		}
		json_array_extend(ids, json_object_get(result, "ids"));
		json_decref(result);
		done += per_call;
	}
	if (cx->json) {
		json_t *out = json_pack("{s:O}", "ids", ids);
		cmd_print_json(out);
		json_decref(out);
	} else {
		a2m_buf b = {0};
		for (size_t i = 0; i < json_array_size(ids); i++)
			a2m_buf_printf(&b, "%s\n", json_string_value(json_array_get(ids, i)));
		rc = cmd_print(cx, a2m_buf_take(&b, NULL));
	}
out:
	json_decref(ids);
	json_decref(records);
	return rc;
}

/* ---- recall and timeline ---- */

static void render_recall(cmd_ctx *cx, a2m_buf *b, const json_t *r)
{
	cli_render_table(b, json_object_get(r, "records"), CLI_RECORDS_RECALL, cx->long_form);
}

static void render_timeline(cmd_ctx *cx, a2m_buf *b, const json_t *r)
{
	cli_render_table(b, json_object_get(r, "records"), CLI_RECORDS_TIMELINE, cx->long_form);
}

/* The options recall, timeline and forget share into params. */
static int selection(cmd_ctx *cx, json_t *params)
{
	int rc;
	if ((rc = cmd_put_object(cx, O_WHERE, params, "where")) != 0)
		return rc;
	cmd_put_string(cx, O_TIER, params, "tier");
	cmd_put_string(cx, O_KEY_PREFIX, params, "key_prefix");
	return 0;
}

static int run_recall(cmd_ctx *cx)
{
	json_t *params = cmd_params(cx), *result;
	char *query = joined_args(cx);
	if (query)
		json_object_set_new(params, "query", json_string(query));
	free(query);
	int rc;
	if ((rc = selection(cx, params)) != 0 || (rc = cmd_put_int(cx, O_LIMIT, 0, params, "limit")) ||
	    (rc = cmd_put_number(cx, O_MIN_SCORE, params, "min_score"))) {
		json_decref(params);
		return rc;
	}
	rc = cmd_call(cx, "memory/recall", params, 1, &result);
	return rc ? rc : show(cx, result, render_recall);
}

static int run_timeline(cmd_ctx *cx)
{
	if (cx->nargs)
		return cmd_usage_error(cx, "unexpected argument '%s'", cx->args[0]);
	json_t *params = cmd_params(cx), *result;
	int rc;
	if ((rc = selection(cx, params)) != 0 || (rc = cmd_put_int(cx, O_LIMIT, 0, params, "limit"))) {
		json_decref(params);
		return rc;
	}
	if (cx->opt[O_SESSION]) {
		/* One conversation is a where on its session (spec §3.5). */
		json_t *where = json_object_get(params, "where");
		if (!where)
			json_object_set_new(params, "where", where = json_object());
		json_object_set_new(where, "session", json_string(cx->opt[O_SESSION]));
	}
	rc = cmd_call(cx, "memory/timeline", params, 1, &result);
	return rc ? rc : show(cx, result, render_timeline);
}

/* ---- forget ---- */

static void render_forget(cmd_ctx *cx, a2m_buf *b, const json_t *r)
{
	(void)cx;
	json_int_t n = json_integer_value(json_object_get(r, "forgotten"));
	a2m_buf_printf(b, "forgot %lld record%s\n", (long long)n, n == 1 ? "" : "s");
}

/* Positional arguments are ids too: `a2m forget --id A B C`. */
static void take_positional_ids(cmd_ctx *cx)
{
	for (int i = 0; i < cx->nargs; i++)
		json_array_append_new(cx->ids, json_string(cx->args[i]));
}

static int run_forget(cmd_ctx *cx)
{
	take_positional_ids(cx);
	if (!json_array_size(cx->ids) && !cx->opt[O_WHERE] && !cx->opt[O_QUERY] &&
	    !cx->opt[O_TIER] && !cx->opt[O_KEY_PREFIX])
		return cmd_usage_error(cx, "say what to forget: --id, --where, --query, --tier or "
				       "--key-prefix");
	json_t *params = cmd_params(cx), *result;
	int rc;
	if ((rc = selection(cx, params)) != 0) {
		json_decref(params);
		return rc;
	}
	if (json_array_size(cx->ids))
		json_object_set(params, "ids", cx->ids);
	cmd_put_string(cx, O_QUERY, params, "query");
	/* Deleting the same selection twice deletes nothing more. */
	rc = cmd_call(cx, "memory/forget", params, 1, &result);
	return rc ? rc : show(cx, result, render_forget);
}

/* ---- fetch ---- */

static void render_fetch(cmd_ctx *cx, a2m_buf *b, const json_t *r)
{
	const json_t *record = json_object_get(r, "record");
	if (json_is_object(record))
		cli_render_record(b, record, cx->long_form);
	else /* an unused key is an ordinary answer, not an error (spec §4.9) */
		fprintf(stderr, "%s: no record at key '%s'\n", cx->prog, cx->args[0]);
}

static int run_fetch(cmd_ctx *cx)
{
	if (cx->nargs != 1)
		return cmd_usage_error(cx, "give exactly one KEY");
	json_t *params = cmd_params(cx), *result;
	json_object_set_new(params, "key", json_string(cx->args[0]));
	int rc = cmd_call(cx, "memory/fetch", params, 1, &result);
	return rc ? rc : show(cx, result, render_fetch);
}

/* ---- promote, consolidate, reinforce ---- */

static void render_counts(cmd_ctx *cx, a2m_buf *b, const json_t *r)
{
	(void)cx;
	cli_render_counts(b, r);
}

static int run_promote(cmd_ctx *cx)
{
	take_positional_ids(cx);
	if (!json_array_size(cx->ids))
		return cmd_usage_error(cx, "give the ids of the records to promote");
	if (!cx->opt[O_TIER])
		return cmd_usage_error(cx, "--tier names the tier to promote to");
	json_t *params = cmd_params(cx), *result;
	json_object_set(params, "ids", cx->ids);
	cmd_put_string(cx, O_TIER, params, "tier");
	int rc = cmd_put_number(cx, O_SALIENCE, params, "salience");
	if (rc) {
		json_decref(params);
		return rc;
	}
	rc = cmd_call(cx, "memory/promote", params, 0, &result);
	return rc ? rc : show(cx, result, render_counts);
}

static int run_consolidate(cmd_ctx *cx)
{
	if (cx->nargs)
		return cmd_usage_error(cx, "unexpected argument '%s'", cx->args[0]);
	json_t *result;
	int rc = cmd_call(cx, "memory/consolidate", cmd_params(cx), 0, &result);
	return rc ? rc : show(cx, result, render_counts);
}

static int run_reinforce(cmd_ctx *cx)
{
	take_positional_ids(cx);
	if (!json_array_size(cx->ids))
		return cmd_usage_error(cx, "give the ids of the records to reinforce");
	json_t *params = cmd_params(cx), *result;
	json_object_set(params, "ids", cx->ids);
	int rc = cmd_put_number(cx, O_AMOUNT, params, "amount");
	if (rc) {
		json_decref(params);
		return rc;
	}
	rc = cmd_call(cx, "memory/reinforce", params, 0, &result);
	return rc ? rc : show(cx, result, render_counts);
}

/* ---- summarize ---- */

static void render_summary(cmd_ctx *cx, a2m_buf *b, const json_t *r)
{
	const json_t *records = json_object_get(r, "records");
	if (!json_array_size(records))
		/* Declining is not an error (spec §4.15). */
		fprintf(stderr, "%s: nothing durable to say; no summary written\n", cx->prog);
	for (size_t i = 0; i < json_array_size(records); i++)
		cli_render_record(b, json_array_get(records, i), cx->long_form);
}

static int run_summarize(cmd_ctx *cx)
{
	take_positional_ids(cx);
	if (!json_array_size(cx->ids) && !cx->opt[O_WHERE] && !cx->opt[O_QUERY] &&
	    !cx->opt[O_TIER] && !cx->opt[O_KEY_PREFIX])
		return cmd_usage_error(cx, "say what to summarize: ids, --where, --query, --tier or "
				       "--key-prefix");
	json_t *params = cmd_params(cx), *result;
	int rc;
	if ((rc = selection(cx, params)) != 0 || (rc = cmd_put_int(cx, O_LIMIT, 1, params, "limit"))) {
		json_decref(params);
		return rc;
	}
	if (json_array_size(cx->ids))
		json_object_set(params, "ids", cx->ids);
	cmd_put_string(cx, O_QUERY, params, "query");
	cmd_put_string(cx, O_INTO, params, "into");
	cmd_put_string(cx, O_KEY, params, "key");
	rc = cmd_call(cx, "memory/summarize", params, 0, &result);
	return rc ? rc : show(cx, result, render_summary);
}

/* ---- events ---- */

static void render_events(cmd_ctx *cx, a2m_buf *b, const json_t *r)
{
	(void)cx;
	if (json_is_true(json_object_get(r, "reset")))
		fprintf(stderr, "%s: the cursor could not be honoured; events may have been "
			"missed\n", cx->prog);
	cli_render_events(b, json_object_get(r, "events"));
	const char *cursor = json_string_value(json_object_get(r, "cursor"));
	a2m_buf_printf(b, "cursor %s%s\n", cursor ? cursor : "-",
		       json_is_true(json_object_get(r, "more")) ? " (more waiting)" : "");
}

static int run_events(cmd_ctx *cx)
{
	if (cx->nargs)
		return cmd_usage_error(cx, "unexpected argument '%s'", cx->args[0]);
	if (cx->opt[O_INTERVAL] && !cx->opt[O_FOLLOW])
		return cmd_usage_error(cx, "--interval goes with --follow");
	json_t *params = cmd_params(cx), *result;
	int rc = cmd_put_int(cx, O_LIMIT, 1, params, "limit");
	if (rc) {
		json_decref(params);
		return rc;
	}
	cmd_put_string(cx, O_CURSOR, params, "cursor");
	if (json_array_size(cx->kinds))
		json_object_set(params, "kinds", cx->kinds);
	if (cx->opt[O_FOLLOW])
		return cmd_follow_events(cx, params);
	rc = cmd_call(cx, "memory/events", params, 1, &result);
	return rc ? rc : show(cx, result, render_events);
}

/* ---- sessions ---- */

static void render_sessions(cmd_ctx *cx, a2m_buf *b, const json_t *r)
{
	(void)cx;
	cli_render_sessions(b, json_object_get(r, "sessions"));
}

static int run_session_list(cmd_ctx *cx)
{
	if (cx->nargs)
		return cmd_usage_error(cx, "unexpected argument '%s'", cx->args[0]);
	json_t *result;
	int rc = cmd_call(cx, "memory/session/list", cmd_params(cx), 1, &result);
	return rc ? rc : show(cx, result, render_sessions);
}

static int run_session_close(cmd_ctx *cx)
{
	if (cx->nargs != 1 || !*cx->args[0])
		return cmd_usage_error(cx, "give exactly one SESSION");
	json_t *params = cmd_params(cx), *result;
	json_object_set_new(params, "session", json_string(cx->args[0]));
	int rc = cmd_call(cx, "memory/session/close", params, 1, &result);
	return rc ? rc : show(cx, result, render_counts);
}

/* ---- the table ---- */

const cmd_verb cmd_verbs[] = {
	{"describe", "memory/describe", "",
	 "What the server is: its name, protocol, capabilities, tiers and limits.\n", NULL, 0,
	 run_describe},
	{"remember", "memory/remember", "[TEXT...]",
	 "Stores TEXT (the arguments, or stdin when there are none) as one record and\n"
	 "prints its id. Every record gets a client id, so a retry never stores twice.\n",
	 "With --lines, each non-blank line is a record of its own.\n",
	 OPT(O_TIER) | OPT(O_KEY) | OPT(O_SESSION) | OPT(O_META) | OPT(O_ROLE) | OPT(O_ID) |
		 OPT(O_GROUP) | OPT(O_SALIENCE) | OPT(O_LINES),
	 run_remember},
	{"recall", "memory/recall", "[QUERY...]",
	 "Searches by relevance and prints score and content, best first. Without a\n"
	 "query: the most recent records. Scores only order this one list.\n", NULL,
	 OPT(O_WHERE) | OPT(O_LIMIT) | OPT(O_TIER) | OPT(O_KEY_PREFIX) | OPT(O_MIN_SCORE) |
		 OPT(O_LONG),
	 run_recall},
	{"timeline", "memory/timeline", "",
	 "Replays records in creation order, oldest first: time, role, content. With\n"
	 "--limit N, the newest N.\n", NULL,
	 OPT(O_WHERE) | OPT(O_LIMIT) | OPT(O_TIER) | OPT(O_KEY_PREFIX) | OPT(O_SESSION) |
		 OPT(O_LONG),
	 run_timeline},
	{"forget", "memory/forget", "[ID...]",
	 "Deletes records and prints how many. Give at least one selector: ids (as\n"
	 "arguments or --id), --where, --query, --tier or --key-prefix; given\n"
	 "together, a record must match all of them.\n", NULL,
	 OPT(O_ID) | OPT(O_WHERE) | OPT(O_QUERY) | OPT(O_TIER) | OPT(O_KEY_PREFIX), run_forget},
	{"fetch", "memory/fetch", "KEY",
	 "Prints the content of the record at KEY (keys capability). An unused key\n"
	 "prints nothing on stdout and exits 0: it is not an error.\n", NULL, OPT(O_LONG),
	 run_fetch},
	{"promote", "memory/promote", "ID... --tier TIER",
	 "Moves records to TIER because they earned it (tiers capability).\n", NULL,
	 OPT(O_ID) | OPT(O_TIER) | OPT(O_SALIENCE), run_promote},
	{"consolidate", "memory/consolidate", "",
	 "Lets the store reorganise itself: promotions, then capacity (tiers\n"
	 "capability). It may delete records.\n", NULL, 0, run_consolidate},
	{"reinforce", "memory/reinforce", "ID...",
	 "Raises the salience of records that proved useful (salience capability).\n", NULL,
	 OPT(O_ID) | OPT(O_AMOUNT), run_reinforce},
	{"summarize", "memory/summarize", "[ID...]",
	 "Distills the selected records into one summary record, stored like any\n"
	 "other, and prints it (summarize capability). The sources are kept. Select\n"
	 "with ids (arguments or --id), --where, --query, --tier or --key-prefix.\n",
	 "Writing nothing is a valid answer when there is nothing durable to say.\n",
	 OPT(O_ID) | OPT(O_WHERE) | OPT(O_QUERY) | OPT(O_TIER) | OPT(O_KEY_PREFIX) |
		 OPT(O_LIMIT) | OPT(O_INTO) | OPT(O_KEY) | OPT(O_LONG),
	 run_summarize},
	{"events", "memory/events", "",
	 "Prints what changed after --cursor (without one, from now: no events, only\n"
	 "the cursor to pass next time), then the next cursor (events capability).\n",
	 "With --follow it keeps polling from that cursor and prints events as they\n"
	 "arrive until interrupted (Ctrl-C); with --json, one event per line.\n",
	 OPT(O_CURSOR) | OPT(O_LIMIT) | OPT(O_KIND) | OPT(O_FOLLOW) | OPT(O_INTERVAL),
	 run_events},
	{"session list", "memory/session/list", "",
	 "Lists the sessions (conversations) in the store (sessions capability).\n", NULL, 0,
	 run_session_list},
	{"session close", "memory/session/close", "SESSION",
	 "Ends a conversation: its records leave working memory and move down the\n"
	 "tiers; nothing is deleted unless a full bottom tier drops it.\n", NULL, 0,
	 run_session_close},
};

const size_t cmd_verb_count = sizeof cmd_verbs / sizeof cmd_verbs[0];
