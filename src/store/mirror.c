/*
** mirror.c — procedural memory as files beside the database (DECISIONS 024).
**
** One Markdown file per record of one tier, so a person can review skills
** and version them with git. The database is the source of truth; this file
** only ever makes a directory agree with it. The contract (file names,
** contents, when files change, what a failure means) is written once, at
** a2m_sqlite_options in store.h; the notes here are about how.
**
** The engine calls a2m_mirror_note() for each write that may change a file
** while its transaction is open, and a2m_mirror_apply() after a successful
** commit. A note holds only the id and the name the record's file had
** before the write; apply reads the record back through the store and
** writes whatever the database now says. So a rolled-back transaction needs
** no undo (its notes are dropped, or if they survive, they rewrite the same
** bytes), and memory is bounded by ids, not by content.
**
** Every path is built from the directory and one name that cannot contain
** '/' (mirror_file.c makes the names and the files' text), and every file operation is relative to a descriptor of the
** directory (openat, renameat, unlinkat): a record can never name a file
** outside it.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "a2m.h"
#include "store/mirror_file.h"
#include "store/store.h"
#include "store/store_check.h"
#include "util/buf.h"
#include "util/fd.h"
#include "util/grow.h"

#define TMP_PREFIX    ".a2m-tmp-"
#define TMP_STALE_S   60   /* a temporary file this old is left over from a crash */
#define TMP_ATTEMPTS  100
#define FILE_MODE     0644
#define DIR_MODE      0755

/* A write that may change id's file; old_name is its file before it, or NULL. */
typedef struct note {
	char *id;
	char *old_name;
} note;

struct a2m_mirror {
	char     *dir;
	char     *tier;
	note     *notes;
	size_t    nnotes, cap;
	int       dirty;    /* reconcile fully at the next apply */
	unsigned  tmp_seq;  /* for temporary file names */
};

/* ---- the directory ----------------------------------------------------- */

/*
** One apply or reconcile: the directory handle and the first failure. A
** verification (a2m_mirror_verify) is a reconcile that writes and removes
** nothing: each file it would have written or removed is reported instead.
*/
typedef struct pass {
	a2m_mirror *m;
	a2m_store  *s;
	int         dirfd;    /* -1 until opened */
	int         changed;  /* a name was added or removed: fsync the directory */
	int         failed;
	char       *err;
	size_t      errlen;
	const a2m_check_options *verify;  /* NULL: write */
	a2m_mirror_tally tally;  /* verify: what it found */
} pass;

/* Verify's examples of differing files, before the rest are only counted. */
#define VERIFY_EXAMPLES 8

/* Verify found that file name differs from the database: what says how. */
static void differs(pass *ps, const char *name, const char *what)
{
	char q[A2M_CHECK_QUOTED];
	if (ps->tally.differ++ < VERIFY_EXAMPLES)
		a2m_check_say(ps->verify, A2M_CHECK_MIRROR, 1, "file %s %s",
			      a2m_check_quote(name, strlen(name), q, sizeof q), what);
}

static void pass_fail(pass *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pass_fail(pass *ps, const char *fmt, ...)
{
	va_list ap;
	int n;
	if (ps->failed++ || !ps->err || !ps->errlen)
		return;   /* the first failure is the one worth reading */
	n = snprintf(ps->err, ps->errlen, "procedural mirror %s: ", ps->m->dir);
	if (n < 0 || (size_t)n >= ps->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

/*
** Opens the directory, creating it first when create is set. Without
** create, a missing directory leaves dirfd -1 and is not a failure: there
** is nothing in it to remove. Returns 0 or -1 (failure recorded).
*/
static int pass_dir(pass *ps, int create)
{
	if (ps->dirfd >= 0)
		return 0;
	if (create && mkdir(ps->m->dir, DIR_MODE) != 0 && errno != EEXIST) {
		pass_fail(ps, "cannot create the directory: %s", strerror(errno));
		return -1;
	}
	ps->dirfd = open(ps->m->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ps->dirfd < 0) {
		if (!create && errno == ENOENT)
			return 0;
		pass_fail(ps, "cannot open the directory: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* True when name in the directory is a regular file holding exactly text. */
static int holds(int dirfd, const char *name, const char *text, size_t len)
{
	struct stat st;
	char chunk[4096];
	size_t at = 0;
	int same = 0;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != len)
		goto out;
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (size_t)r > len - at)
			goto out;
		if (r == 0)
			break;
		if (memcmp(chunk, text + at, (size_t)r) != 0)
			goto out;
		at += (size_t)r;
	}
	same = at == len;
out:
	close(fd);
	return same;
}

/*
** Puts text in the file name atomically: a temporary file in the same
** directory, fsynced, then renamed over name, so a reader (or git) sees the
** old bytes or the new ones, never a torn file. Unchanged bytes are not
** rewritten. Returns 0 or -1 (failure recorded).
*/
static int put_file(pass *ps, const char *name, const char *text, size_t len)
{
	char tmp[64];
	int fd = -1;

	if (ps->verify) {
		if (pass_dir(ps, 0) == 0 && ps->dirfd >= 0 && holds(ps->dirfd, name, text, len)) {
			ps->tally.files++;
			return 0;
		}
		struct stat st;
		int there = ps->dirfd >= 0 && fstatat(ps->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
		differs(ps, name, there ? "does not hold its record as the database has it"
					: "is missing");
		return 0;
	}
	if (pass_dir(ps, 1) != 0)
		return -1;
	if (holds(ps->dirfd, name, text, len))
		return 0;
	for (int i = 0; i < TMP_ATTEMPTS && fd < 0; i++) {
		snprintf(tmp, sizeof tmp, TMP_PREFIX "%ld-%u", (long)getpid(), ps->m->tmp_seq++);
		fd = openat(ps->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    FILE_MODE);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		pass_fail(ps, "cannot create a temporary file: %s", strerror(errno));
		return -1;
	}
	/* O_CREAT's mode went through the umask; a skill file is for reading. */
	if (fchmod(fd, FILE_MODE) != 0 || a2m_write_all(fd, text, len) != 0 || fsync(fd) != 0) {
		pass_fail(ps, "cannot write %s: %s", name, strerror(errno));
		close(fd);
		unlinkat(ps->dirfd, tmp, 0);
		return -1;
	}
	if (close(fd) != 0 || renameat(ps->dirfd, tmp, ps->dirfd, name) != 0) {
		pass_fail(ps, "cannot write %s: %s", name, strerror(errno));
		unlinkat(ps->dirfd, tmp, 0);
		return -1;
	}
	ps->changed = 1;
	return 0;
}

/* Writes rec's file. Returns 0 or -1 (failure recorded). */
static int put_record(pass *ps, const a2m_record *rec, const char *name)
{
	a2m_buf b;
	if (a2m_mirror_file_text(rec, &b) != 0) {
		pass_fail(ps, "out of memory");
		return -1;
	}
	int rc = put_file(ps, name, a2m_buf_str(&b), b.len);
	a2m_buf_free(&b);
	return rc;
}

/* Removes name; a name that is already gone is fine. */
static void drop_file(pass *ps, const char *name)
{
	if (ps->verify) {
		differs(ps, name, "has no record in the procedural tier");
		return;
	}
	if (pass_dir(ps, 0) != 0 || ps->dirfd < 0)
		return;
	if (unlinkat(ps->dirfd, name, 0) == 0)
		ps->changed = 1;
	else if (errno != ENOENT)
		pass_fail(ps, "cannot remove %s: %s", name, strerror(errno));
}

/* Makes the renames and removals themselves durable. Returns 0 or A2M_INTERNAL_ERROR. */
static int pass_end(pass *ps)
{
	if (ps->dirfd >= 0) {
		if (ps->changed && fsync(ps->dirfd) != 0)
			pass_fail(ps, "cannot sync the directory: %s", strerror(errno));
		close(ps->dirfd);
		ps->dirfd = -1;
	}
	if (ps->failed) {
		ps->m->dirty = 1;
		return A2M_INTERNAL_ERROR;
	}
	return 0;
}

static void pass_begin(pass *ps, a2m_mirror *m, a2m_store *s, char *err, size_t errlen)
{
	memset(ps, 0, sizeof *ps);
	ps->m = m;
	ps->s = s;
	ps->dirfd = -1;
	ps->err = err;
	ps->errlen = errlen;
	if (err && errlen)
		err[0] = '\0';
}

/* ---- the mirror -------------------------------------------------------- */

a2m_mirror *a2m_mirror_new(const char *dir, const char *tier)
{
	a2m_mirror *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->dir = strdup(dir);
	m->tier = strdup(tier);
	if (!m->dir || !m->tier) {
		a2m_mirror_free(m);
		return NULL;
	}
	return m;
}

void a2m_mirror_discard(a2m_mirror *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nnotes; i++) {
		free(m->notes[i].id);
		free(m->notes[i].old_name);
	}
	m->nnotes = 0;
}

void a2m_mirror_free(a2m_mirror *m)
{
	if (!m)
		return;
	a2m_mirror_discard(m);
	free(m->notes);
	free(m->dir);
	free(m->tier);
	free(m);
}

const char *a2m_mirror_tier(const a2m_mirror *m)
{
	return m->tier;
}

void a2m_mirror_note(a2m_mirror *m, const char *id, const char *old_name)
{
	note n = {NULL, NULL};

	if (m->dirty)
		return;   /* the next apply looks at everything anyway */
	if (a2m_grow((void **)&m->notes, &m->cap, m->nnotes + 1, sizeof *m->notes))
		goto oom;
	n.id = strdup(id);
	if (!n.id || (old_name && !(n.old_name = strdup(old_name))))
		goto oom;
	m->notes[m->nnotes++] = n;
	return;
oom:
	free(n.id);
	a2m_mirror_discard(m);
	m->dirty = 1;
}

static int cmp_notes(const void *a, const void *b)
{
	return strcmp(((const note *)a)->id, ((const note *)b)->id);
}

/*
** Brings one id's file up to date: the file the record now needs (none if
** it is gone or left the tier), and none of the names it had before.
*/
static void apply_id(pass *ps, const note *first, size_t count)
{
	a2m_record *rec = NULL;
	char *name = NULL;

	if (ps->s->ops->get(ps->s, first->id, &rec) != 0) {
		pass_fail(ps, "cannot read record \"%s\": %s", first->id, ps->s->errmsg);
		return;
	}
	if (rec && rec->tier && strcmp(rec->tier, ps->m->tier) == 0) {
		name = a2m_mirror_file_name(rec);
		if (!name)
			pass_fail(ps, "out of memory");
		else
			put_record(ps, rec, name);
	}
	for (size_t i = 0; i < count; i++) {
		const char *old = first[i].old_name;
		if (old && !(name && strcmp(old, name) == 0))
			drop_file(ps, old);
	}
	free(name);
	a2m_record_free(rec);
}

int a2m_mirror_apply(a2m_mirror *m, a2m_store *s, char *err, size_t errlen)
{
	pass ps;

	if (m->dirty)
		return a2m_mirror_reconcile(m, s, err, errlen);
	if (m->nnotes == 0)
		return 0;
	pass_begin(&ps, m, s, err, errlen);
	if (m->nnotes)
		qsort(m->notes, m->nnotes, sizeof *m->notes, cmp_notes);
	for (size_t i = 0, j; i < m->nnotes; i = j) {
		for (j = i + 1; j < m->nnotes && strcmp(m->notes[j].id, m->notes[i].id) == 0; j++)
			;
		apply_id(&ps, &m->notes[i], j - i);
	}
	a2m_mirror_discard(m);
	return pass_end(&ps);
}

/* The names a reconciliation keeps, sorted for bsearch. */
typedef struct keep {
	pass   *ps;
	char  **names;
	size_t  n, cap;
	a2m_check_meter meter;  /* a verify's progress */
} keep;

static int reconcile_visit(const a2m_record *rec, void *ctx)
{
	keep *k = ctx;
	char *name = a2m_mirror_file_name(rec);
	if (!name) {
		pass_fail(k->ps, "out of memory");
		return A2M_INTERNAL_ERROR;
	}
	if (a2m_grow((void **)&k->names, &k->cap, k->n + 1, sizeof *k->names)) {
		free(name);
		pass_fail(k->ps, "out of memory");
		return A2M_INTERNAL_ERROR;
	}
	k->names[k->n++] = name;
	if (k->ps->verify)
		a2m_check_meter_at(&k->meter, (int64_t)k->n);
	/* Keep going after a failed write: heal as much as can be healed. */
	put_record(k->ps, rec, name);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* True for one of our temporary files that no write in progress can own. */
static int stale_tmp(int dirfd, const char *name)
{
	struct stat st;
	if (strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0)
		return 0;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return 0;
	return time(NULL) - st.st_mtime > TMP_STALE_S;
}

/* Removes every mirror-shaped name not in k, and stale temporary files. */
static void sweep(pass *ps, keep *k)
{
	DIR *d;
	int fd;

	if (pass_dir(ps, 0) != 0 || ps->dirfd < 0)
		return;
	fd = dup(ps->dirfd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		pass_fail(ps, "cannot list the directory: %s", strerror(errno));
		return;
	}
	if (k->n)
		qsort(k->names, k->n, sizeof *k->names, cmp_names);
	for (;;) {
		errno = 0;
		struct dirent *e = readdir(d);
		if (!e) {
			if (errno)
				pass_fail(ps, "cannot list the directory: %s", strerror(errno));
			break;
		}
		const char *name = e->d_name;
		if (a2m_mirror_is_file_name(name)) {
			/* No names at all: names may be NULL, which bsearch must
			** never be given. */
			if (k->n == 0 ||
			    !bsearch(&name, k->names, k->n, sizeof *k->names, cmp_names))
				drop_file(ps, name);
		} else if (stale_tmp(ps->dirfd, name)) {
			if (ps->verify)
				ps->tally.leftover++;  /* harmless: no reader looks at it */
			else
				drop_file(ps, name);
		}
	}
	closedir(d);
}

/* Reconciles, or with verify (not NULL) only reports what reconciling would change. */
static int reconcile(a2m_mirror *m, a2m_store *s, const a2m_check_options *verify,
		     a2m_mirror_tally *tally, char *err, size_t errlen)
{
	pass ps;
	keep k;
	a2m_query q;

	pass_begin(&ps, m, s, err, errlen);
	ps.verify = verify;
	memset(&k, 0, sizeof k);
	k.ps = &ps;
	if (verify)
		a2m_check_meter_start(&k.meter, verify, A2M_CHECK_MIRROR, "records", 0);
	if (!verify) {
		a2m_mirror_discard(m);
		m->dirty = 0;
	}
	memset(&q, 0, sizeof q);
	q.tier = m->tier;
	int rc = s->ops->scan(s, &q, reconcile_visit, &k);
	if (rc != 0 && !ps.failed)
		pass_fail(&ps, "cannot list the records: %s", s->errmsg);
	/* Sweep only with the complete list, or it would remove live files. */
	if (rc == 0)
		sweep(&ps, &k);
	if (verify)
		a2m_check_meter_end(&k.meter, (int64_t)k.n);
	for (size_t i = 0; i < k.n; i++)
		free(k.names[i]);
	free(k.names);
	if (tally)
		*tally = ps.tally;
	return pass_end(&ps);
}

int a2m_mirror_reconcile(a2m_mirror *m, a2m_store *s, char *err, size_t errlen)
{
	return reconcile(m, s, NULL, NULL, err, errlen);
}

int a2m_mirror_verify(a2m_mirror *m, a2m_store *s, const a2m_check_options *o,
		      a2m_mirror_tally *tally, char *err, size_t errlen)
{
	return reconcile(m, s, o, tally, err, errlen);
}
