/*
** client_follow.c — `a2m events --follow`: watch a store by polling
** memory/events with the cursor each answer returns (spec §4.12), printing
** events as they arrive, until SIGINT or SIGTERM.
**
** Polling rather than memory/events/subscribe because polling works on
** every binding (HTTP cannot push, §8.3) and loses nothing between two
** polls: the cursor is the position, so successive polls see every retained
** event exactly once.
**
** A stop signal ends the loop cleanly between polls, and also when it lands
** during one: in a terminal, Ctrl-C reaches a stdio server we started too,
** so a call failing after the signal is the stop, not an error.
*/
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client_cmds.h"
#include "cli/client_render.h"
#include "cli/stop_signals.h"

/* Milliseconds between two polls that found nothing. */
#define DEFAULT_INTERVAL_MS 1000

/* Sleeps ms milliseconds or until a signal arrives. */
static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (!cli_stop_requested && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Prints one poll's events: a line each for a person, or one JSON object
** per line. Returns 0, or -1 when stdout is gone. */
static int print_events(const cmd_ctx *cx, const json_t *result)
{
	const json_t *events = json_object_get(result, "events");
	if (json_is_true(json_object_get(result, "reset")))
		fprintf(stderr, "%s: the cursor could not be honoured; events may have been "
			"missed\n", cx->prog);
	if (cx->json) {
		for (size_t i = 0; i < json_array_size(events); i++)
			cmd_print_json(json_array_get(events, i));
	} else {
		a2m_buf b = {0};
		cli_render_events(&b, events);
		fputs(a2m_buf_str(&b), stdout);
		a2m_buf_free(&b);
	}
	return fflush(stdout) == 0 ? 0 : -1;
}

int cmd_follow_events(cmd_ctx *cx, json_t *params)
{
	long interval = DEFAULT_INTERVAL_MS;
	if (cx->opt[O_INTERVAL]) {
		char *end;
		errno = 0;
		interval = strtol(cx->opt[O_INTERVAL], &end, 10);
		if (errno || *end || end == cx->opt[O_INTERVAL] || interval < 10 || interval > 3600000) {
			json_decref(params);
			return cmd_usage_error(cx, "--interval must be 10..3600000 milliseconds");
		}
	}
	/* No SA_RESTART: the signal must cut a sleep short. */
	struct sigaction sa, old_int, old_term;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = cli_stop_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);

	/* Connect, negotiate and check the capability once, with the usual
	** messages; the polls below report their own failures. */
	json_t *result;
	int rc = cmd_call(cx, "memory/describe", NULL, 1, &result);
	json_decref(result);
	if (rc == 0 && !cli_conn_declares(cx->conn, "events")) {
		fprintf(stderr, "%s: the server does not declare the 'events' capability\n",
			cx->prog);
		rc = A2M_EXIT_ERROR;
	}
	if (rc == 0 && isatty(STDERR_FILENO))
		fprintf(stderr, "%s: following; Ctrl-C stops\n", cx->prog);
	while (rc == 0 && !cli_stop_requested) {
		cli_error err = {0};
		if (cli_conn_call(cx->conn, "memory/events", params, 1, &result, &err) != 0) {
			if (!cli_stop_requested) {
				if (err.kind == CLI_ERR_PROTOCOL)
					fprintf(stderr, "%s: error %d %s: %s\n", cx->prog, err.code,
						cli_error_name(err.code), err.message);
				else
					fprintf(stderr, "%s: %s\n", cx->prog, err.message);
				rc = A2M_EXIT_ERROR;
			}
			cli_error_clear(&err);
			break;
		}
		if (print_events(cx, result) != 0) {
			json_decref(result);
			break; /* the reader went away: nothing left to do */
		}
		/* Go on from where this answer ended (spec §4.12). */
		json_t *cursor = json_object_get(result, "cursor");
		if (json_is_string(cursor))
			json_object_set(params, "cursor", cursor);
		int more = json_is_true(json_object_get(result, "more"));
		json_decref(result);
		if (!more)
			pause_ms(interval);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	json_decref(params);
	return rc;
}
