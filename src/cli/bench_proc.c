/*
** bench_proc.c — servers as processes of their own, for the crash and
** soak runs (see bench_proc.h).
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/bench_proc.h"

const char bench_moving_config[] =
	"{\"limits\": {\"max_recall_limit\": 10000000, \"max_records_per_call\": 1000},\n"
	" \"tiers\": [\n"
	"  {\"name\": \"working\", \"kind\": \"working\", \"capacity\": 24, \"per_session\": true,\n"
	"   \"spill_to\": \"episodic\"},\n"
	"  {\"name\": \"episodic\", \"kind\": \"episodic\", \"capacity\": 400, \"spill_to\": \"semantic\",\n"
	"   \"promote_to\": \"semantic\", \"promote_after\": 2},\n"
	"  {\"name\": \"semantic\", \"kind\": \"semantic\"},\n"
	"  {\"name\": \"procedural\", \"kind\": \"procedural\"}]}\n";

const char *bench_self(void)
{
	static char path[PATH_MAX];
	if (!path[0]) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
		if (n <= 0)
			snprintf(path, sizeof path, "/proc/self/exe");
		else
			path[n] = '\0';
	}
	return path;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The argv of `a2m serve [pre...] args...`, NULL-terminated; free the array only. */
static char **serve_argv(const char *const *pre, char *const *args)
{
	size_t n = 0, k = 0, m = 0;
	while (args[n])
		n++;
	while (pre && pre[m])
		m++;
	char **v = calloc(n + m + 3, sizeof *v);
	if (!v)
		return NULL;
	v[k++] = (char *)bench_self();
	v[k++] = "serve";
	for (size_t i = 0; i < m; i++)
		v[k++] = (char *)pre[i];
	for (size_t i = 0; i < n; i++)
		v[k++] = args[i];
	return v;
}

/* The pids whose parent is this process, into v (at most max). */
static size_t children(pid_t *v, size_t max)
{
	DIR *d = opendir("/proc");
	size_t n = 0;
	if (!d)
		return 0;
	pid_t me = getpid();
	struct dirent *e;
	while ((e = readdir(d)) && n < max) {
		char path[300], buf[512];
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t got = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[got] = '\0';
		/* "pid (comm) state ppid ...": comm may hold anything but ends at the last ')'. */
		char *close = strrchr(buf, ')');
		char state;
		int ppid;
		if (close && sscanf(close + 1, " %c %d", &state, &ppid) == 2 && ppid == me)
			v[n++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return n;
}

int bench_spawn_stdio(char *const *args, int timeout_ms, a2m_client **c, pid_t *pid)
{
	pid_t before[256], after[256];
	size_t nb = children(before, 256), na;
	char **argv = serve_argv(NULL, args);
	*c = NULL;
	*pid = -1;
	if (!argv)
		return -1;
	int rc = a2m_client_spawn_stdio(argv, c);
	free(argv);
	if (rc != A2M_CLIENT_OK) {
		fprintf(stderr, "cannot start a2m serve: %s\n", a2m_client_spawn_errmsg());
		return -1;
	}
	a2m_client_set_timeout(*c, timeout_ms);
	na = children(after, 256);
	for (size_t i = 0; i < na && *pid < 0; i++) {
		int old = 0;
		for (size_t j = 0; j < nb && !old; j++)
			old = after[i] == before[j];
		if (!old)
			*pid = after[i];
	}
	if (*pid < 0) {
		fprintf(stderr, "cannot find the server's process\n");
		a2m_client_free(*c);
		*c = NULL;
		return -1;
	}
	return 0;
}

int bench_wait(pid_t pid, int ms)
{
	for (int waited = 0;; waited += 5) {
		int status;
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status)
			       : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
		if (r < 0 && errno != EINTR)
			return -1;
		if (ms > 0 && waited >= ms)
			return -1;
		sleep_ms(5);
	}
}

int bench_spawn_http(char *const *args, const char *log, pid_t *pid, char *url, size_t size)
{
	static const char *const pre[] = {"--http", "127.0.0.1:0", NULL};
	char **argv = serve_argv(pre, args);
	*pid = -1;
	url[0] = '\0';
	if (!argv)
		return -1;
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", log, strerror(errno));
		free(argv);
		return -1;
	}
	pid_t p = fork();
	if (p == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(fd, 2);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd);
	free(argv);
	if (p < 0) {
		fprintf(stderr, "fork: %s\n", strerror(errno));
		return -1;
	}
	*pid = p;
	for (int waited = 0; waited < 60000; waited += 10) {
		char buf[4096];
		FILE *f = fopen(log, "r");
		while (f && fgets(buf, sizeof buf, f)) {
			const char *at = strstr(buf, "listening on ");
			if (at && sscanf(at + 13, "%255s", url) == 1 && size > strlen(url)) {
				fclose(f);
				return 0;
			}
		}
		if (f)
			fclose(f);
		if (bench_wait(p, 1) >= 0)
			break;  /* it exited */
		sleep_ms(10);
	}
	fprintf(stderr, "a2m serve --http did not start; its log:\n");
	FILE *f = fopen(log, "r");
	char line[512];
	while (f && fgets(line, sizeof line, f))
		fputs(line, stderr);
	if (f)
		fclose(f);
	kill(p, SIGKILL);
	bench_wait(p, 0);
	*pid = -1;
	url[0] = '\0';
	return -1;
}

int bench_sample_proc(pid_t pid, bench_sample *out)
{
	char path[64], line[256];
	memset(out, 0, sizeof *out);
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		long long v;
		if (sscanf(line, "VmRSS: %lld", &v) == 1)
			out->rss_kib = v;
		else if (sscanf(line, "Threads: %lld", &v) == 1)
			out->threads = v;
	}
	fclose(f);
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			out->fds++;
	closedir(d);
	return 0;
}

int bench_run_self(char *const *args, a2m_buf *out)
{
	size_t n = 0;
	while (args[n])
		n++;
	char **argv = calloc(n + 2, sizeof *argv);
	int pipefd[2];
	if (!argv || pipe(pipefd) != 0) {
		free(argv);
		return -1;
	}
	argv[0] = (char *)bench_self();
	for (size_t i = 0; i < n; i++)
		argv[i + 1] = args[i];
	pid_t p = fork();
	if (p == 0) {
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		close(pipefd[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	free(argv);
	close(pipefd[1]);
	if (p < 0) {
		close(pipefd[0]);
		return -1;
	}
	char buf[4096];
	ssize_t r;
	while ((r = read(pipefd[0], buf, sizeof buf)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		a2m_buf_put(out, buf, (size_t)r);
	}
	close(pipefd[0]);
	return bench_wait(p, 0);
}

void bench_remove_tree(const char *dir)
{
	char *args[] = {"rm", "-rf", (char *)dir, NULL};
	pid_t p = fork();
	if (p == 0) {
		execvp("rm", args);
		_exit(127);
	}
	if (p > 0)
		bench_wait(p, 0);
}

void bench_prng_seed(bench_prng *r, uint64_t seed)
{
	r->s = seed ? seed : 0x9E3779B97F4A7C15ULL;
}

uint64_t bench_prng_next(bench_prng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545F4914F6CDD1DULL;
}

uint64_t bench_prng_below(bench_prng *r, uint64_t n)
{
	return bench_prng_next(r) % n;
}

double bench_prng_unit(bench_prng *r)
{
	return (double)(bench_prng_next(r) >> 11) / 9007199254740992.0;
}
