/*
** client_stdio.c — the stdio transport of an a2m_client (spec §8.2): the
** server is our child, one JSON message per '\n'-terminated line each way.
** Its stdout is a pipe; its stdin is one end of a stream socket pair (a
** pipe's reads and EOF to the server; to us, a write that cannot raise
** SIGPIPE: see stdio_write_bytes).
**
** Both ends we hold are non-blocking and every wait goes through poll() with
** the caller's deadline, so a server that stops reading or stops answering
** costs a timeout, never a hung process. A write that would block reads
** while it waits: a server may answer a long line before it has all of it
** (an error for a line over its size limit, say), and if we did not drain
** its stdout while it blocked on writing to it, the two processes would wait
** on each other.
*/
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/client_internal.h"
#include "util/spin.h"

extern char **environ;

/* How much one read() takes from the server's stdout. */
#define READ_CHUNK ((size_t)64 << 10)

typedef struct stdio_impl {
	pid_t pid;
	int to_fd;       /* our end of the server's stdin; -1 once closed */
	int from_fd;     /* our end of the server's stdout */
	int eof;         /* the server closed its stdout */
	int reaped;      /* the process has exited and been waited for */
	int status;      /* its exit code, or 128 + signal */
	int write_failed;/* a write hit EPIPE: the server no longer reads */
	char *buf;       /* bytes received, not yet handed out: buf[off..len) */
	size_t off, len, cap;
	size_t scanned;  /* buf[off..scanned) is known to hold no '\n' */
} stdio_impl;

static _Thread_local char spawn_error[256];

const char *a2m_client_spawn_errmsg(void)
{
	return spawn_error;
}

static stdio_impl *impl_of(a2m_client *c)
{
	return c->impl;
}

/* ---- the child process ---- */

static int decode_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 255;
}

/* Reaps the child if it has exited; returns whether it has. */
static int poll_exit(stdio_impl *s, int block)
{
	if (s->reaped)
		return 1;
	int wstatus;
	pid_t r;
	do
		r = waitpid(s->pid, &wstatus, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == s->pid) {
		s->reaped = 1;
		s->status = decode_status(wstatus);
		return 1;
	}
	if (r < 0) {
		/* Not our child any more (someone else reaped it): treat as gone. */
		s->reaped = 1;
		s->status = 255;
		return 1;
	}
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int remaining_ms(int64_t deadline)
{
	int64_t left = deadline - a2m_client_now_ms();
	if (left < 0)
		return 0;
	return left > 1000000 ? 1000000 : (int)left;
}

/* ---- reading ---- */

/*
** One read() from the server's stdout into the buffer. Returns 1 when bytes
** arrived, 0 when nothing was ready, or an a2m_client_code (< 0). EOF sets
** s->eof and returns 0.
*/
static int fill(a2m_client *c, stdio_impl *s)
{
	if (s->eof)
		return 0;
	if (s->off > 0 && (s->off == s->len || s->off > s->cap / 2)) {
		memmove(s->buf, s->buf + s->off, s->len - s->off);
		s->len -= s->off;
		s->scanned -= s->off;
		s->off = 0;
	}
	if (s->len - s->off > A2M_CLIENT_MAX_LINE) {
		a2m_client_set_error(c, "the server sent a line longer than %zu bytes",
				     A2M_CLIENT_MAX_LINE);
		return A2M_CLIENT_ERR_TOOBIG;
	}
	if (s->cap - s->len < READ_CHUNK) {
		size_t cap = s->cap ? s->cap : READ_CHUNK * 2;
		while (cap - s->len < READ_CHUNK)
			cap *= 2;
		char *grown = realloc(s->buf, cap);
		if (!grown) {
			a2m_client_set_error(c, "out of memory reading from the server");
			return A2M_CLIENT_ERR_NOMEM;
		}
		s->buf = grown;
		s->cap = cap;
	}
	ssize_t n = read(s->from_fd, s->buf + s->len, READ_CHUNK);
	if (n > 0) {
		s->len += (size_t)n;
		return 1;
	}
	if (n == 0) {
		s->eof = 1;
		return 0;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return 0;
	a2m_client_set_error(c, "reading the server's stdout: %s", strerror(errno));
	return A2M_CLIENT_ERR_IO;
}

/* Moves the first complete line, if there is one, out of the buffer. */
static int take_line(a2m_client *c, stdio_impl *s, char **line, size_t *len, int *found)
{
	*found = 0;
	if (s->scanned < s->off)
		s->scanned = s->off;
	char *nl = s->len > s->scanned ? memchr(s->buf + s->scanned, '\n', s->len - s->scanned)
				       : NULL;
	size_t end;
	if (nl) {
		end = (size_t)(nl - s->buf);
	} else if (s->eof && s->len > s->off) {
		/* A last line with no '\n': hand it over so it is seen. */
		end = s->len;
	} else {
		s->scanned = s->len;
		return A2M_CLIENT_OK;
	}
	size_t n = end - s->off;
	char *copy = malloc(n + 1);
	if (!copy) {
		a2m_client_set_error(c, "out of memory reading from the server");
		return A2M_CLIENT_ERR_NOMEM;
	}
	memcpy(copy, s->buf + s->off, n);
	copy[n] = '\0';
	s->off = end < s->len ? end + 1 : end;
	s->scanned = s->off;
	*line = copy;
	*len = n;
	*found = 1;
	return A2M_CLIENT_OK;
}

/*
** Before sleeping in poll(), read again for a moment (util/spin.h): a lone
** call's answer usually comes within a tenth of a millisecond, and a
** reader found awake costs the server's write no wake-up. Returns 1 when
** bytes came (or EOF), 0 when the time ran out, or an a2m_client_code.
*/
static int spin(a2m_client *c, stdio_impl *s)
{
	int64_t until = a2m_spin_until();
	while (a2m_spin_more(until)) {
		int rc = fill(c, s);
		if (rc != 0 || s->eof)
			return rc < 0 ? rc : 1;
	}
	return 0;
}

static int stdio_read_line(a2m_client *c, char **line, size_t *len, int64_t deadline)
{
	stdio_impl *s = impl_of(c);
	for (;;) {
		int found;
		int rc = take_line(c, s, line, len, &found);
		if (rc != A2M_CLIENT_OK || found)
			return rc;
		if (s->eof) {
			a2m_client_set_error(c, "the server closed its stdout%s",
					     poll_exit(s, 0) ? " and exited" : "");
			return A2M_CLIENT_ERR_CLOSED;
		}
		rc = spin(c, s);
		if (rc < 0)
			return rc;
		if (rc > 0)
			continue;
		struct pollfd p = {.fd = s->from_fd, .events = POLLIN};
		int ready = poll(&p, 1, remaining_ms(deadline));
		if (ready < 0 && errno != EINTR) {
			a2m_client_set_error(c, "poll: %s", strerror(errno));
			return A2M_CLIENT_ERR_IO;
		}
		if (ready > 0) {
			rc = fill(c, s);
			if (rc < 0)
				return rc;
		} else if (a2m_client_now_ms() >= deadline) {
			a2m_client_set_error(c, "timed out waiting for a line");
			return A2M_CLIENT_ERR_TIMEOUT;
		}
	}
}

/* ---- writing ---- */

/*
** Waits until the server's stdin has room, reading its stdout meanwhile (so
** a server blocked on answering cannot deadlock us). Returns A2M_CLIENT_OK
** when a write may go on, or an a2m_client_code (< 0).
*/
static int wait_for_room(a2m_client *c, stdio_impl *s, int64_t deadline)
{
	struct pollfd p2[2] = {
		{.fd = s->to_fd, .events = POLLOUT},
		{.fd = s->eof ? -1 : s->from_fd, .events = POLLIN},
	};
	int ready = poll(p2, 2, remaining_ms(deadline));
	if (ready < 0 && errno != EINTR) {
		a2m_client_set_error(c, "poll: %s", strerror(errno));
		return A2M_CLIENT_ERR_IO;
	}
	if (ready <= 0) {
		if (a2m_client_now_ms() >= deadline) {
			a2m_client_set_error(c, "timed out after %d ms writing to the "
					     "server (it stopped reading its stdin)",
					     c->timeout_ms);
			return A2M_CLIENT_ERR_TIMEOUT;
		}
		return A2M_CLIENT_OK;
	}
	if (p2[1].revents) {
		int rc = fill(c, s);
		if (rc < 0)
			return rc;
	}
	if (p2[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
		s->write_failed = 1;
		a2m_client_set_error(c, "the server closed its stdin (exited?)");
		return A2M_CLIENT_ERR_IO;
	}
	return A2M_CLIENT_OK;
}

/*
** The server's stdin is a socket, so MSG_NOSIGNAL makes writing to a dead
** server an EPIPE error and not a SIGPIPE ending the caller's process, with
** no signal-mask calls around it. The write is tried first and poll() is
** asked only when it would block: a lone request then costs one system call.
*/
static int stdio_write_bytes(a2m_client *c, const void *buf, size_t len, int64_t deadline)
{
	stdio_impl *s = impl_of(c);
	const char *p = buf;
	if (s->to_fd < 0) {
		a2m_client_set_error(c, "the server's stdin is already closed");
		return A2M_CLIENT_ERR_MISUSE;
	}
	if (s->write_failed) {
		a2m_client_set_error(c, "the server no longer reads its stdin");
		return A2M_CLIENT_ERR_IO;
	}
	while (len > 0) {
		ssize_t n = send(s->to_fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			s->write_failed = 1;
			a2m_client_set_error(c, "writing to the server: %s", strerror(errno));
			return A2M_CLIENT_ERR_IO;
		}
		int rc = wait_for_room(c, s, deadline);
		if (rc != A2M_CLIENT_OK)
			return rc;
	}
	return A2M_CLIENT_OK;
}

/* ---- ending ---- */

static int stdio_close_input(a2m_client *c, int *exit_status, int64_t deadline)
{
	stdio_impl *s = impl_of(c);
	if (s->to_fd >= 0) {
		close(s->to_fd);
		s->to_fd = -1;
	}
	while (!poll_exit(s, 0)) {
		if (a2m_client_now_ms() >= deadline) {
			a2m_client_set_error(c, "the server was still running %d ms after "
					     "its stdin was closed", c->timeout_ms);
			return A2M_CLIENT_ERR_TIMEOUT;
		}
		/* Keep its stdout flowing so a final burst cannot block its exit. */
		if (!s->eof) {
			struct pollfd p = {.fd = s->from_fd, .events = POLLIN};
			int wait = remaining_ms(deadline);
			if (poll(&p, 1, wait < 10 ? wait : 10) > 0 && fill(c, s) < 0)
				s->eof = 1; /* cannot buffer more: stop reading */
		} else {
			sleep_ms(5);
		}
	}
	*exit_status = s->status;
	return A2M_CLIENT_OK;
}

static int stdio_alive(a2m_client *c)
{
	stdio_impl *s = impl_of(c);
	return !s->write_failed && !s->eof && s->to_fd >= 0 && !poll_exit(s, 0);
}

static int stdio_kill(a2m_client *c)
{
	stdio_impl *s = impl_of(c);
	if (!poll_exit(s, 0)) {
		kill(s->pid, SIGKILL);
		poll_exit(s, 1);
	}
	return A2M_CLIENT_OK;
}

static void stdio_destroy(a2m_client *c)
{
	stdio_impl *s = impl_of(c);
	if (s->to_fd >= 0)
		close(s->to_fd);
	if (s->from_fd >= 0)
		close(s->from_fd);
	free(s->buf);
	free(s);
	c->impl = NULL;
}

static const a2m_client_ops stdio_ops = {
	.name = "stdio",
	.write_bytes = stdio_write_bytes,
	.read_line = stdio_read_line,
	.close_input = stdio_close_input,
	.alive = stdio_alive,
	.kill = stdio_kill,
	.destroy = stdio_destroy,
};

/* ---- starting ---- */

/*
** A pipe (or, for the server's stdin, a stream socket pair: see
** stdio_write_bytes) whose ends are close-on-exec and not 0, 1 or 2: were
** one of them a standard descriptor, dup2() onto itself in the child would
** keep the close-on-exec flag and the server would start with that stream
** closed.
*/
static int make_pipe(int fds[2], int socket_pair)
{
	if (socket_pair ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0
			: pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		if (fds[i] < 3) {
			int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
			if (moved < 0) {
				close(fds[0]);
				close(fds[1]);
				return -1;
			}
			close(fds[i]);
			fds[i] = moved;
		}
	}
	return 0;
}

static int set_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);
	return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int a2m_client_spawn_stdio(char *const argv[], a2m_client **out)
{
	int in[2] = {-1, -1}, outp[2] = {-1, -1};
	int rc = A2M_CLIENT_ERR_SPAWN, err;
	int have_actions = 0, have_attr = 0;
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attr;
	stdio_impl *s = NULL;
	pid_t pid = -1;

	spawn_error[0] = '\0';
	if (!out)
		return A2M_CLIENT_ERR_MISUSE;
	*out = NULL;
	if (!argv || !argv[0]) {
		snprintf(spawn_error, sizeof spawn_error, "no server command given");
		return A2M_CLIENT_ERR_MISUSE;
	}
	if (make_pipe(in, 1) < 0 || make_pipe(outp, 0) < 0) {
		snprintf(spawn_error, sizeof spawn_error, "pipe: %s", strerror(errno));
		goto fail;
	}
	if ((err = posix_spawn_file_actions_init(&actions)) != 0)
		goto spawn_failed;
	have_actions = 1;
	if ((err = posix_spawnattr_init(&attr)) != 0)
		goto spawn_failed;
	have_attr = 1;
	if ((err = posix_spawn_file_actions_adddup2(&actions, in[0], 0)) != 0 ||
	    (err = posix_spawn_file_actions_adddup2(&actions, outp[1], 1)) != 0)
		goto spawn_failed;

	/* The server starts with the signal state a shell would give it, not
	** ours: an ignored SIGPIPE in the caller must not leak into it. */
	sigset_t none, defaults;
	sigemptyset(&none);
	sigemptyset(&defaults);
	sigaddset(&defaults, SIGPIPE);
	sigaddset(&defaults, SIGINT);
	sigaddset(&defaults, SIGTERM);
	sigaddset(&defaults, SIGHUP);
	sigaddset(&defaults, SIGCHLD);
	if ((err = posix_spawnattr_setsigmask(&attr, &none)) != 0 ||
	    (err = posix_spawnattr_setsigdefault(&attr, &defaults)) != 0 ||
	    (err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
					    POSIX_SPAWN_SETSIGDEF)) != 0)
		goto spawn_failed;

	err = posix_spawnp(&pid, argv[0], &actions, &attr, argv, environ);
	if (err != 0)
		goto spawn_failed;

	close(in[0]);
	close(outp[1]);
	in[0] = outp[1] = -1;
	if (set_nonblocking(in[1]) < 0 || set_nonblocking(outp[0]) < 0) {
		snprintf(spawn_error, sizeof spawn_error, "fcntl: %s", strerror(errno));
		goto fail;
	}
	s = calloc(1, sizeof *s);
	if (!s) {
		rc = A2M_CLIENT_ERR_NOMEM;
		snprintf(spawn_error, sizeof spawn_error, "out of memory");
		goto fail;
	}
	s->pid = pid;
	s->to_fd = in[1];
	s->from_fd = outp[0];
	*out = a2m_client_new(&stdio_ops, s);
	if (!*out) {
		rc = A2M_CLIENT_ERR_NOMEM;
		snprintf(spawn_error, sizeof spawn_error, "out of memory");
		goto fail;
	}
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attr);
	return A2M_CLIENT_OK;

spawn_failed:
	snprintf(spawn_error, sizeof spawn_error, "cannot start %s: %s", argv[0],
		 strerror(err));
fail:
	free(s);
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (outp[i] >= 0)
			close(outp[i]);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (have_actions)
		posix_spawn_file_actions_destroy(&actions);
	if (have_attr)
		posix_spawnattr_destroy(&attr);
	return rc;
}
