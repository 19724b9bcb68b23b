/*
** watch.c — the folder followed with inotify (see watch.h).
**
** Each watch descriptor maps to the directory's path under the root, in an
** array indexed by the descriptor (the kernel hands them out small and
** rising). The map is touched only by whichever thread is syncing: the
** caller's before a2m_corpus_watch_start, the watch's own thread after.
**
** A directory moved away keeps its watch in the kernel, now reporting
** changes at its new place under the old name; so when a sync finds a
** watched path gone, the watches at and under it are removed. One moved
** within the folder is watched again by the walk of its new path.
*/
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "corpus/watch.h"
#include "util/log.h"
#include "util/thread.h"

#define WATCH_MASK \
	(IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVED_FROM | \
	 IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | \
	 IN_EXCL_UNLINK)

/* Bytes of events read at once. */
#define EVENT_BUF 65536

struct a2m_corpus_watch {
	a2m_corpus *c;
	int         fd;        /* inotify */
	int         stop;      /* an eventfd: the thread's cue to end */
	char      **dirs;      /* by watch descriptor: the directory's path, or NULL */
	size_t      n_dirs;
	int         full;      /* the limit on watches was met (said once) */
	char      **dirty;     /* the paths changed since the last sync */
	size_t      n_dirty, cap_dirty;
	char      **todo;      /* those a sync takes (cap_dirty of them) */
	int         failed;    /* memory ran out noting a change: sync everything */
	pthread_t   thread;
	int         started;
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The indexer's hook: watches the directory rel (abs on disk). */
static void on_dir(void *user, const char *rel, const char *abs)
{
	a2m_corpus_watch *w = user;
	int wd = inotify_add_watch(w->fd, abs, WATCH_MASK);
	if (wd < 0) {
		if (errno == ENOSPC && !w->full) {
			w->full = 1;
			a2m_log(A2M_LOG_WARN, "corpus: the limit on inotify watches is reached: "
				"changes under %s and other new directories are not followed (raise "
				"fs.inotify.max_user_watches)", *rel ? rel : ".");
		}
		return;
	}
	if ((size_t)wd >= w->n_dirs) {
		size_t n = w->n_dirs ? w->n_dirs : 64;
		while (n <= (size_t)wd)
			n *= 2;
		char **d = realloc(w->dirs, n * sizeof *d);
		if (!d) {
			inotify_rm_watch(w->fd, wd);
			return;
		}
		memset(d + w->n_dirs, 0, (n - w->n_dirs) * sizeof *d);
		w->dirs = d;
		w->n_dirs = n;
	}
	char *copy = strdup(rel);
	if (!copy) {
		inotify_rm_watch(w->fd, wd);
		return;
	}
	free(w->dirs[wd]);
	w->dirs[wd] = copy;
}

static void drop(a2m_corpus_watch *w, int wd)
{
	if (wd >= 0 && (size_t)wd < w->n_dirs) {
		free(w->dirs[wd]);
		w->dirs[wd] = NULL;
	}
}

int a2m_corpus_watch_new(a2m_corpus *c, a2m_corpus_watch **out, char *err, size_t errlen)
{
	*out = NULL;
	a2m_corpus_watch *w = calloc(1, sizeof *w);
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	w->c = c;
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	w->stop = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->fd < 0 || w->stop < 0) {
		snprintf(err, errlen, "--watch: %s", strerror(errno));
		if (w->fd >= 0)
			close(w->fd);
		if (w->stop >= 0)
			close(w->stop);
		free(w);
		return -1;
	}
	a2m_corpus_on_dir(c, on_dir, w);
	*out = w;
	return 0;
}

/* Notes that path changed. */
static void mark(a2m_corpus_watch *w, const char *path)
{
	if (w->n_dirty == w->cap_dirty) {
		size_t cap = w->cap_dirty ? w->cap_dirty * 2 : 32;
		char **d = realloc(w->dirty, cap * sizeof *d);
		if (d)
			w->dirty = d;
		char **t = d ? realloc(w->todo, cap * sizeof *t) : NULL;
		if (!t) {
			w->failed = 1;
			return;
		}
		w->todo = t;
		w->cap_dirty = cap;
	}
	if (!(w->dirty[w->n_dirty] = strdup(path)))
		w->failed = 1;
	else
		w->n_dirty++;
}

/* Notes what one event changed. */
static void take(a2m_corpus_watch *w, const struct inotify_event *ev)
{
	if (ev->mask & IN_Q_OVERFLOW) {
		mark(w, "");
		return;
	}
	if (ev->wd < 0 || (size_t)ev->wd >= w->n_dirs || !w->dirs[ev->wd])
		return;
	const char *dir = w->dirs[ev->wd];
	if (ev->mask & IN_IGNORED) {
		drop(w, ev->wd);
		return;
	}
	if (!ev->len || !ev->name[0]) {
		mark(w, dir);  /* the directory itself went or moved */
		return;
	}
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s%s%s", dir, *dir ? "/" : "", ev->name) >=
	    (int)sizeof path)
		return;
	if (!a2m_corpus_is_index(w->c, path))
		mark(w, path);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether a directory above path is among the n sorted dirty paths. */
static int covered(char **dirty, size_t n, const char *path)
{
	if (!*path)
		return 0;
	const char *root = "";
	if (bsearch(&root, dirty, n, sizeof *dirty, cmp_str))
		return 1;
	char up[PATH_MAX];
	snprintf(up, sizeof up, "%s", path);
	for (char *slash = strchr(up, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		const char *key = up;
		int hit = bsearch(&key, dirty, n, sizeof *dirty, cmp_str) != NULL;
		*slash = '/';
		if (hit)
			return 1;
	}
	return 0;
}

/* Removes the watches at and under path, which is no directory any more. */
static void unwatch(a2m_corpus_watch *w, const char *path)
{
	size_t n = strlen(path);
	for (size_t wd = 0; wd < w->n_dirs; wd++) {
		const char *d = w->dirs[wd];
		if (d && (!n || (strncmp(d, path, n) == 0 && (!d[n] || d[n] == '/')))) {
			inotify_rm_watch(w->fd, (int)wd);
			drop(w, (int)wd);
		}
	}
}

/* Syncs every path changed since the last time, each once. */
static void sync_dirty(a2m_corpus_watch *w)
{
	if (w->failed) {
		for (size_t i = 0; i < w->n_dirty; i++)
			free(w->dirty[i]);
		w->n_dirty = 0;
		w->failed = 0;
		mark(w, "");
	}
	char **dirty = w->dirty;
	size_t n = w->n_dirty;
	if (n)
		qsort(dirty, n, sizeof *dirty, cmp_str);
	/* Each path once, and none under another (a directory covers what is
	** in it), synced in one batch. */
	size_t synced = 0;
	for (size_t i = 0; i < n; i++)
		if (!(i > 0 && strcmp(dirty[i], dirty[i - 1]) == 0) && !covered(dirty, n, dirty[i]))
			w->todo[synced++] = dirty[i];
	a2m_corpus_stats st = {0};
	int64_t t0 = now_ms();
	if (a2m_corpus_sync_paths(w->c, (const char *const *)w->todo, synced, &st) != 0)
		a2m_log(A2M_LOG_WARN, "corpus: %zu change%s: %s", synced, synced == 1 ? "" : "s",
			a2m_corpus_errmsg(w->c));
	for (size_t i = 0; i < synced; i++) {
		/* Gone, or no longer a directory: its watches go too. */
		char abs[PATH_MAX];
		struct stat sb;
		snprintf(abs, sizeof abs, "%s%s%s", a2m_corpus_root(w->c), *w->todo[i] ? "/" : "",
			 w->todo[i]);
		if (lstat(abs, &sb) != 0 || !S_ISDIR(sb.st_mode))
			unwatch(w, w->todo[i]);
	}
	for (size_t i = 0; i < n; i++)
		free(dirty[i]);
	w->n_dirty = 0;
	if (synced && (st.read || st.removed || st.skipped))
		a2m_log(A2M_LOG_INFO, "corpus: %zu change%s: %zu file%s read, %zu removed, "
			"%zu skipped; %zu chunks added, %zu removed (%lld ms)", synced,
			synced == 1 ? "" : "s", st.read, st.read == 1 ? "" : "s", st.removed,
			st.skipped, st.chunks_added, st.chunks_removed, (long long)(now_ms() - t0));
}

static void *run(void *arg)
{
	a2m_corpus_watch *w = arg;
	char *buf = malloc(EVENT_BUF);
	if (!buf) {
		a2m_log(A2M_LOG_ERROR, "corpus: --watch: out of memory; changes are not followed");
		return NULL;
	}
	int64_t first = 0, last = 0;
	for (;;) {
		int timeout = -1;
		if (w->n_dirty || w->failed) {
			int64_t now = now_ms();
			int64_t left = last + A2M_WATCH_QUIET_MS - now;
			int64_t cap = first + A2M_WATCH_MAX_WAIT_MS - now;
			if (cap < left)
				left = cap;
			timeout = left > 0 ? (int)left : 0;
		}
		struct pollfd p[2] = {{w->fd, POLLIN, 0}, {w->stop, POLLIN, 0}};
		int r = poll(p, 2, timeout);
		if (r < 0 && errno != EINTR) {
			a2m_log(A2M_LOG_ERROR, "corpus: --watch: %s; changes are not followed",
				strerror(errno));
			break;
		}
		if (r > 0 && p[1].revents)
			break;
		if (r > 0 && p[0].revents) {
			ssize_t got;
			while ((got = read(w->fd, buf, EVENT_BUF)) > 0) {
				for (char *q = buf; q < buf + got;) {
					const struct inotify_event *ev = (const struct inotify_event *)q;
					take(w, ev);
					q += sizeof *ev + ev->len;
				}
			}
			int64_t now = now_ms();
			if ((w->n_dirty || w->failed) && !first)
				first = now;
			last = now;
			continue;
		}
		if (w->n_dirty || w->failed) {
			sync_dirty(w);
			first = 0;
		}
	}
	free(buf);
	return NULL;
}

int a2m_corpus_watch_start(a2m_corpus_watch *w, char *err, size_t errlen)
{
	int rc = a2m_thread_start(&w->thread, run, w);
	if (rc) {
		snprintf(err, errlen, "--watch: cannot start its thread: %s", strerror(rc));
		return -1;
	}
	w->started = 1;
	return 0;
}

void a2m_corpus_watch_free(a2m_corpus_watch *w)
{
	if (!w)
		return;
	if (w->started) {
		uint64_t one = 1;
		if (write(w->stop, &one, sizeof one) != (ssize_t)sizeof one)
			a2m_log(A2M_LOG_WARN, "corpus: --watch: cannot stop its thread: %s",
				strerror(errno));
		else
			pthread_join(w->thread, NULL);
	}
	a2m_corpus_on_dir(w->c, NULL, NULL);
	close(w->fd);
	close(w->stop);
	for (size_t i = 0; i < w->n_dirs; i++)
		free(w->dirs[i]);
	free(w->dirs);
	for (size_t i = 0; i < w->n_dirty; i++)
		free(w->dirty[i]);
	free(w->dirty);
	free(w->todo);
	free(w);
}
