/*
** progress.c — the progress line of progress.h: a count, a rate and an
** estimate, redrawn in place on stderr when stderr is a terminal.
**
** The rate is the average since the start, not since the last drawing:
** it moves less, and the estimate from it is the one a reader would make.
** Numbers are grouped by thousands with a space (412 000), which reads the
** same in every locale.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/progress.h"

/* Nothing is drawn before the job is this old, nor more often than this. */
#define FIRST_MS  1000
#define EVERY_MS  200

struct a2m_progress {
	char    *what, *unit;
	int64_t  first_ms;  /* nothing is drawn before the job is this old */
	int64_t  total;     /* 0: not known */
	int64_t  done;
	int64_t  start_ms;
	int64_t  drawn_ms;  /* the last drawing; 0: none yet */
	int      shown;     /* the line is on the terminal (drawn, not cleared) */
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

a2m_progress *a2m_progress_start(const char *what, const char *unit, int64_t total)
{
	if (!isatty(STDERR_FILENO))
		return NULL;
	a2m_progress *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->what = strdup(what ? what : "a2m");
	p->unit = strdup(unit ? unit : "");
	if (!p->what || !p->unit) {
		free(p->what);
		free(p->unit);
		free(p);
		return NULL;
	}
	p->total = total > 0 ? total : 0;
	p->start_ms = now_ms();
	/* A test shows the line of a job that ends at once (a shorter wait
	** changes nothing else); nobody else need set it. */
	const char *first = getenv("A2M_PROGRESS_FIRST_MS");
	p->first_ms = first && *first ? strtoll(first, NULL, 10) : FIRST_MS;
	return p;
}

void a2m_progress_total(a2m_progress *p, int64_t total)
{
	if (p)
		p->total = total > 0 ? total : 0;
}

/* n grouped by thousands: "1 234 567". */
static const char *grouped(int64_t n, char out[32])
{
	char digits[24];
	int len = snprintf(digits, sizeof digits, "%lld", (long long)(n < 0 ? 0 : n));
	int o = 0;
	for (int i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			out[o++] = ' ';
		out[o++] = digits[i];
	}
	out[o] = '\0';
	return out;
}

/* s seconds as "m:ss", or "h:mm:ss" from an hour on. */
static const char *duration(int64_t s, char out[32])
{
	if (s >= 3600)
		snprintf(out, 32, "%lld:%02lld:%02lld", (long long)(s / 3600),
			 (long long)(s / 60 % 60), (long long)(s % 60));
	else
		snprintf(out, 32, "%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
	return out;
}

/* Writes the line for the figures as of now; final: the time taken instead
** of the estimate, and a newline. */
static void draw(a2m_progress *p, int64_t now, int final)
{
	char line[256], a[32], b[32], c[32];
	int64_t ms = now - p->start_ms;
	double rate = ms > 0 ? (double)p->done * 1000.0 / (double)ms : 0;
	int n = snprintf(line, sizeof line, "\r%s: %s", p->what, grouped(p->done, a));
	if (p->total && n > 0 && (size_t)n < sizeof line)
		n += snprintf(line + n, sizeof line - (size_t)n, " of %s %s (%d%%)",
			      grouped(p->total, b), p->unit,
			      (int)(p->done >= p->total ? 100 : p->done * 100 / p->total));
	else if (n > 0 && (size_t)n < sizeof line)
		n += snprintf(line + n, sizeof line - (size_t)n, " %s", p->unit);
	if (n > 0 && (size_t)n < sizeof line)
		n += snprintf(line + n, sizeof line - (size_t)n, ", %s/s",
			      grouped((int64_t)(rate + 0.5), c));
	if (n > 0 && (size_t)n < sizeof line) {
		if (final)
			n += snprintf(line + n, sizeof line - (size_t)n, ", in %s",
				      duration((ms + 500) / 1000, a));
		else if (p->total && rate > 0 && p->done < p->total)
			n += snprintf(line + n, sizeof line - (size_t)n, ", about %s left",
				      duration((int64_t)((double)(p->total - p->done) / rate + 0.5), a));
	}
	/* Clears what a longer drawing left to the right. */
	fprintf(stderr, "%s\033[K%s", line, final ? "\n" : "");
	fflush(stderr);
	p->drawn_ms = now;
	p->shown = !final;
}

void a2m_progress_update(a2m_progress *p, int64_t done)
{
	if (!p)
		return;
	p->done = done;
	int64_t now = now_ms();
	if (now - p->start_ms < p->first_ms || (p->drawn_ms && now - p->drawn_ms < EVERY_MS))
		return;
	draw(p, now, 0);
}

void a2m_progress_end(a2m_progress *p)
{
	if (!p)
		return;
	if (p->drawn_ms)
		draw(p, now_ms(), 1);
	free(p->what);
	free(p->unit);
	free(p);
}

void a2m_progress_clear(a2m_progress *p)
{
	if (!p || !p->shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->shown = 0;
}

void a2m_progress_erase(a2m_progress *p)
{
	if (!p)
		return;
	a2m_progress_clear(p);
	free(p->what);
	free(p->unit);
	free(p);
}
