/*
** bench_stalls.c — the slow-call report of `a2m bench remember`: each
** call's time on a CPU, waiting for one and blocked (the kernel's count for
** the whole call), and phase by phase its time on and off a CPU, sleeps,
** preemptions and disk reads (util/phase.h); the calls over 100 ms named
** by the phases they spent it in.
**
** Why: issue 24 asks that no remember take over 100 ms at any size. On a
** shared machine most slow calls are the scheduler's (the thread runnable,
** no CPU free), which the store cannot remove; the report takes that wait
** off each call and says, of what remains, which phase held it: the
** BEGIN's locks, the tail's read, a merge ahead's read, the analysis
** workers, the commit's writes, a checkpoint, the log's fsync.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench.h"

/* A call slower than this is a stall (issue 24: none, at any size). */
#define STALL_MS 100.0

/* At most this many calls are reported one per line. */
#define STALL_LINES 40

int bench_calls_init(bench_calls *c, size_t n)
{
	memset(c, 0, sizeof *c);
	c->ms = calloc(n ? n : 1, sizeof *c->ms);
	c->cpu = calloc(n ? n : 1, sizeof *c->cpu);
	c->queued = calloc(n ? n : 1, sizeof *c->queued);
	c->phases = calloc((n ? n : 1) * A2M_PHASE_COUNT, sizeof *c->phases);
	if (!c->ms || !c->cpu || !c->queued || !c->phases) {
		bench_calls_free(c);
		return -1;
	}
	c->n = n;
	return 0;
}

void bench_calls_free(bench_calls *c)
{
	if (c->watching)
		a2m_phase_watch(NULL);
	free(c->ms);
	free(c->cpu);
	free(c->queued);
	free(c->phases);
	memset(c, 0, sizeof *c);
}

void bench_calls_before(bench_calls *c)
{
	if (!c->watching) {
		a2m_phase_watch(&c->clock);
		c->watching = 1;
	}
	a2m_phase_reset(&c->clock);
}

void bench_calls_after(bench_calls *c, size_t call, double ms)
{
	a2m_phase_read(&c->clock);
	a2m_phase_time *p = c->phases + call * A2M_PHASE_COUNT;
	double cpu = 0, queued = 0;
	for (int i = 0; i < A2M_PHASE_COUNT; i++) {
		p[i] = c->clock.t[i];
		cpu += p[i].cpu;
		queued += p[i].queued;
	}
	c->ms[call] = ms;
	c->cpu[call] = cpu;
	c->queued[call] = c->clock.queued_known ? queued : -1;
}

/* A phase's time off a CPU: waiting for one, or blocked (phase.h says which). */
static double off_cpu(const a2m_phase_time *t)
{
	/* The clocks are read a moment apart: a few µs below 0 is 0. */
	double b = t->ms - t->cpu;
	return b > 0 ? b : 0;
}

/*
** The calls over STALL_MS among n from at: how many, the most CPU one of
** them used, and the share of their time spent waiting for a CPU (-1:
** unknown).
*/
static size_t stalls(const bench_calls *c, size_t at, size_t n, double *cpu, double *queued)
{
	size_t k = 0;
	double ms = 0, q = 0;
	*cpu = 0;
	for (size_t i = at; i < at + n; i++) {
		if (c->ms[i] <= STALL_MS)
			continue;
		k++;
		ms += c->ms[i];
		if (c->cpu[i] > *cpu)
			*cpu = c->cpu[i];
		if (q >= 0)
			q = c->queued[i] < 0 ? -1 : q + c->queued[i];
	}
	*queued = k && q >= 0 ? q / ms : -1;
	return k;
}

/* The largest of n values. */
static double most(const double *v, size_t n)
{
	double m = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

void bench_print_windows(const bench_calls *c, long per)
{
	size_t calls = c->n, win = (size_t)(100000 / per);
	if (!win || calls <= win)
		return;
	double *w = malloc(win * sizeof *w);
	if (!w)
		return;
	printf("  per 100 000 records (calls over %.0f ms: how many, the most CPU one ran):\n",
	       STALL_MS);
	for (size_t at = 0; at < calls; at += win) {
		size_t n = calls - at < win ? calls - at : win;
		double cpu, queued;
		size_t k = stalls(c, at, n, &cpu, &queued);
		memcpy(w, c->ms + at, n * sizeof *w);
		qsort(w, n, sizeof *w, bench_cmp_double);
		printf("    %8zu-%-8zu p99 %8.1f ms  max %8.1f ms  over: %3zu", at * (size_t)per,
		       (at + n) * (size_t)per, bench_percentile(w, n, 0.99), w[n - 1], k);
		if (k)
			printf(" (cpu %5.1f ms)", cpu);
		printf("\n");
	}
	free(w);
}

/*
** One call's phases of 1 ms or more, the longest first: "commit 80.2 (on a
** CPU 3.1, 3 sleeps, 2 preempted, 1 disk read), ...".
*/
static void print_phases(const a2m_phase_time *p)
{
	int order[A2M_PHASE_COUNT], n = 0;
	for (int i = 0; i < A2M_PHASE_COUNT; i++)
		if (p[i].ms >= 1.0)
			order[n++] = i;
	for (int a = 1; a < n; a++)
		for (int b = a; b > 0 && p[order[b]].ms > p[order[b - 1]].ms; b--) {
			int t = order[b];
			order[b] = order[b - 1];
			order[b - 1] = t;
		}
	if (!n)
		printf("none of 1 ms or more");
	for (int i = 0; i < n; i++) {
		const a2m_phase_time *t = &p[order[i]];
		printf("%s%s %.1f (on a CPU %.1f", i ? ", " : "", a2m_phase_name((a2m_phase)order[i]),
		       t->ms, t->cpu);
		if (t->sleeps)
			printf(", %ld sleep%s", t->sleeps, t->sleeps == 1 ? "" : "s");
		if (t->preempted)
			printf(", %ld preempted", t->preempted);
		if (t->reads)
			printf(", %ld disk read%s", t->reads, t->reads == 1 ? "" : "s");
		printf(")");
	}
}

/*
** The calls' time summed by phase over those keep() keeps, one line a
** phase that took any: in all, on a CPU (and the most one call ran in it),
** off one (and the most one call spent off one in it), sleeps,
** preemptions, blocks read from the disk.
*/
static void print_phase_sums(const bench_calls *c, const char *title,
			     int (*keep)(const bench_calls *c, size_t i))
{
	a2m_phase_time sum[A2M_PHASE_COUNT];
	double most_off[A2M_PHASE_COUNT], most_cpu[A2M_PHASE_COUNT];
	memset(sum, 0, sizeof sum);
	memset(most_off, 0, sizeof most_off);
	memset(most_cpu, 0, sizeof most_cpu);
	size_t k = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (!keep(c, i))
			continue;
		k++;
		for (int f = 0; f < A2M_PHASE_COUNT; f++) {
			const a2m_phase_time *t = &c->phases[i * A2M_PHASE_COUNT + f];
			sum[f].ms += t->ms;
			sum[f].cpu += t->cpu;
			sum[f].sleeps += t->sleeps;
			sum[f].preempted += t->preempted;
			sum[f].reads += t->reads;
			if (off_cpu(t) > most_off[f])
				most_off[f] = off_cpu(t);
			if (t->cpu > most_cpu[f])
				most_cpu[f] = t->cpu;
		}
	}
	if (!k)
		return;
	printf("  %s (%zu calls), by phase, ms: in all; on a CPU (the most in one call); off"
	       " one (the most in one call); sleeps, preemptions, disk reads:\n", title, k);
	for (int f = 0; f < A2M_PHASE_COUNT; f++) {
		const a2m_phase_time *t = &sum[f];
		if (t->ms < 0.05)
			continue;
		printf("    %-10s %10.1f %10.1f (%6.1f) %10.1f (%6.1f) %7ld %7ld %7ld\n",
		       a2m_phase_name((a2m_phase)f), t->ms, t->cpu, most_cpu[f], off_cpu(t),
		       most_off[f], t->sleeps, t->preempted, t->reads);
	}
}

static int keep_all(const bench_calls *c, size_t i)
{
	(void)c;
	(void)i;
	return 1;
}

static int keep_slow(const bench_calls *c, size_t i)
{
	return c->ms[i] > STALL_MS;
}

/* Slow with its wait for a CPU taken off: what a machine with a free core would give. */
static int keep_slow_free(const bench_calls *c, size_t i)
{
	return c->ms[i] - (c->queued[i] > 0 ? c->queued[i] : 0) > STALL_MS;
}

void bench_print_stalls(const bench_calls *c, long per)
{
	size_t calls = c->n;
	if (!calls)
		return;
	size_t worst = 0;
	for (size_t i = 1; i < calls; i++)
		if (c->ms[i] > c->ms[worst])
			worst = i;
	double cpu, queued;
	size_t k = stalls(c, 0, calls, &cpu, &queued);
	printf("  calls over %.0f ms: %zu of %zu; the most CPU any call ran: %.1f ms", STALL_MS, k,
	       calls, most(c->cpu, calls));
	if (k)
		printf(" (of one over %.0f ms: %.1f ms)", STALL_MS, cpu);
	printf("\n");
	printf("  the worst call: %.1f ms (records %zu-%zu): on a CPU %.1f ms", c->ms[worst],
	       worst * (size_t)per, (worst + 1) * (size_t)per, c->cpu[worst]);
	if (c->queued[worst] >= 0) {
		double b = c->ms[worst] - c->cpu[worst] - c->queued[worst];
		printf(", waiting for one %.1f ms, blocked %.1f ms", c->queued[worst], b > 0 ? b : 0);
	}
	printf("\n    its phases: ");
	print_phases(c->phases + worst * A2M_PHASE_COUNT);
	printf("\n");
	/* What a CPU always free would still make slow: the call that ran the most. */
	size_t busiest = 0;
	for (size_t i = 1; i < calls; i++)
		if (c->cpu[i] > c->cpu[busiest])
			busiest = i;
	printf("  the call that ran the most: %.1f ms on a CPU in %.1f ms (records %zu-%zu); its"
	       " phases: ", c->cpu[busiest], c->ms[busiest], busiest * (size_t)per,
	       (busiest + 1) * (size_t)per);
	print_phases(c->phases + busiest * A2M_PHASE_COUNT);
	printf("\n");
	if (queued >= 0)
		printf("  the calls over %.0f ms spent %.0f%% of their time waiting for a CPU\n",
		       STALL_MS, 100 * queued);
	print_phase_sums(c, "every call", keep_all);
	print_phase_sums(c, "the calls over 100 ms", keep_slow);
	if (c->queued[worst] < 0)
		return;  /* the kernel does not say */
	size_t over = 0;
	double free_worst = 0;
	for (size_t i = 0; i < calls; i++) {
		double ms = c->ms[i] - c->queued[i];
		over += ms > STALL_MS;
		if (ms > free_worst)
			free_worst = ms;
	}
	printf("  each call less its wait for a CPU (a machine with one free): %zu over %.0f ms,"
	       " the worst %.1f ms\n", over, STALL_MS, free_worst);
	print_phase_sums(c, "those calls", keep_slow_free);
	size_t lines = 0;
	for (size_t i = 0; i < calls && lines < STALL_LINES; i++) {
		if (!keep_slow_free(c, i))
			continue;
		lines++;
		printf("    records %zu-%zu: %.1f ms, %.1f less its wait; ", i * (size_t)per,
		       (i + 1) * (size_t)per, c->ms[i], c->ms[i] - c->queued[i]);
		print_phases(c->phases + i * A2M_PHASE_COUNT);
		printf("\n");
	}
	if (over > lines)
		printf("    (%zu more)\n", over - lines);
}
