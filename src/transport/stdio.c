/*
** stdio.c — the stdio transport loop (see stdio.h).
**
** Input is read in chunks and cut at newlines; a line is held in memory only
** up to max_line, so a hostile or broken client cannot make the server
** allocate without bound. Each response is written whole before the next
** line is read, which keeps a notification from ever landing inside another
** message.
*/
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpc/rpc.h"
#include "transport/stdio.h"
#include "util/fd.h"
#include "util/log.h"
#include "util/spin.h"

#define CHUNK 65536

/* Writes one message and its newline. */
static int write_message(int fd, char *msg, size_t len)
{
	/* The writer leaves room for nothing; append the newline by a second
	** write only when realloc fails, to keep one write per message. */
	char *line = realloc(msg, len + 1);
	int rc;
	if (line) {
		line[len] = '\n';
		rc = a2m_write_all(fd, line, len + 1);
		free(line);
	} else {
		rc = a2m_write_all(fd, msg, len);
		if (!rc)
			rc = a2m_write_all(fd, "\n", 1);
		free(msg);
	}
	return rc;
}

static int is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

typedef struct push_ctx push_ctx;

/* write_message under the output's lock. */
static int write_locked(push_ctx *p, char *msg, size_t len);

/* Writes text (borrowed) and a newline under the output's lock; once one
** such write failed, the others are skipped. */
static int write_line_locked(push_ctx *p, const char *text);

/* Handles one complete line; returns -1 if the response could not be written. */
static int serve_line(a2m *h, push_ctx *out, const char *line, size_t len)
{
	if (is_blank(line, len))
		return 0;
	char *resp;
	if (a2m_handle(h, line, len, &resp) != A2M_OK) {
		/* Memory ran out making the response: the request still gets
		** one, without its id, which is lost with the rest. */
		return write_line_locked(out, a2m_rpc_oom_reply);
	}
	if (!resp)
		return 0; /* a notification */
	return write_locked(out, resp, strlen(resp));
}

static int refuse_oversize(push_ctx *out, size_t max_line)
{
	char msg[128];
	snprintf(msg, sizeof msg, "Invalid request: message longer than %zu bytes", max_line);
	size_t len;
	char *resp = a2m_rpc_error_text(NULL, A2M_INVALID_REQUEST, msg,
					json_pack("{sI}", "max_bytes", (json_int_t)max_line), &len);
	a2m_log(A2M_LOG_WARN, "refused a message longer than %zu bytes", max_line);
	return resp ? write_locked(out, resp, len) : 0;
}

/*
** Where push notifications go: the same stdout, one whole line each. With
** a store other servers share, a notification may come from the store's
** own thread (a2m.h, a2m_set_notify) while this loop writes a response:
** every line written holds mu, so no two lines mix.
*/
struct push_ctx {
	int out_fd;
	int failed;
	pthread_mutex_t mu;
};

static int write_locked(push_ctx *p, char *msg, size_t len)
{
	pthread_mutex_lock(&p->mu);
	int rc = write_message(p->out_fd, msg, len);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/* Called from inside a2m_handle() as each event happens, so a subscriber
** sees it without sending anything else; it is written before the response
** of the request that caused it, and never inside another message. */
static void push_notification(const char *text, void *user)
{
	write_line_locked(user, text);
}

static int write_line_locked(push_ctx *p, const char *text)
{
	pthread_mutex_lock(&p->mu);
	if (!p->failed && (a2m_write_all(p->out_fd, text, strlen(text)) != 0 ||
			   a2m_write_all(p->out_fd, "\n", 1) != 0))
		p->failed = 1;
	int rc = p->failed ? -1 : 0;
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/*
** Before sleeping in ppoll(), look again for a moment (util/spin.h) with
** poll()s that do not wait: a zero-timeout poll() never joins the
** descriptor's wait queue, so the client's write finds no one to wake.
** The stop signals stay blocked meanwhile; the spin is short enough for
** them to wait for the ppoll() after it. Returns poll()'s answer, 0 when
** the time ran out.
*/
static int spin(struct pollfd *pfd)
{
	int64_t until = a2m_spin_until();
	while (a2m_spin_more(until)) {
		int pr = poll(pfd, 1, 0);
		if (pr != 0)
			return pr;
	}
	return 0;
}

int a2m_stdio_serve(a2m *h, int in_fd, int out_fd, size_t max_line,
		    volatile sig_atomic_t *stop, const sigset_t *wait_mask)
{
	push_ctx push = {.out_fd = out_fd};
	pthread_mutex_init(&push.mu, NULL);
	a2m_set_notify(h, push_notification, &push);
	char *chunk = malloc(CHUNK);
	char *line = NULL;
	size_t len = 0, cap = 0;
	int discarding = 0, rc = 0;
	if (!chunk) {
		a2m_set_notify(h, NULL, NULL);
		pthread_mutex_destroy(&push.mu);
		return -1;
	}
	while (!*stop) {
		/* Idle, records still expire (x-expiry): the wait ends at the
		** next expiry, and what expired is removed before reading on. */
		int64_t next_ms = -1;
		a2m_sweep(h, &next_ms);
		struct timespec wake = {.tv_sec = next_ms / 1000,
					.tv_nsec = (long)(next_ms % 1000) * 1000000L};
		struct pollfd pfd = {.fd = in_fd, .events = POLLIN};
		int pr = spin(&pfd);
		if (pr == 0)
			pr = ppoll(&pfd, 1, next_ms < 0 ? NULL : &wake, wait_mask);
		if (pr == 0)
			continue;  /* the next expiry came: sweep */
		if (pr < 0) {
			if (errno == EINTR)
				continue; /* *stop is checked by the loop */
			rc = -1;
			break;
		}
		ssize_t got = read(in_fd, chunk, CHUNK);
		if (got < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			rc = -1;
			break;
		}
		if (got == 0) {
			/* EOF: a final line without its newline still counts. */
			if (len && !discarding)
				rc = serve_line(h, &push, line, len);
			break;
		}
		const char *p = chunk, *end = chunk + got;
		while (p < end && rc == 0) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t take = (size_t)((nl ? nl : end) - p);
			if (!discarding) {
				if (len + take > max_line) {
					discarding = 1;
					len = 0;
					rc = refuse_oversize(&push, max_line);
				} else {
					if (len + take > cap) {
						size_t ncap = cap ? cap : CHUNK;
						while (ncap < len + take)
							ncap *= 2;
						if (ncap > max_line)
							ncap = max_line;
						char *nb = realloc(line, ncap);
						if (!nb) {
							rc = -1;
							break;
						}
						line = nb;
						cap = ncap;
					}
					memcpy(line + len, p, take);
					len += take;
				}
			}
			if (nl) {
				if (!discarding && rc == 0)
					rc = serve_line(h, &push, line, len);
				discarding = 0;
				len = 0;
				/* Give back the memory of one huge line. */
				if (cap > 4 * CHUNK) {
					free(line);
					line = NULL;
					cap = 0;
				}
				p = nl + 1;
			} else {
				p = end;
			}
		}
		if (rc)
			break;
	}
	a2m_set_notify(h, NULL, NULL);  /* waits for no call: it takes the handle's lock */
	pthread_mutex_destroy(&push.mu);
	free(chunk);
	free(line);
	return rc ? rc : (push.failed ? -1 : 0);
}
