/*
** index.c — the corpus indexer (see index.h): the walk, each file read,
** cut and turned into records, handed to the batch (batch.c) that writes
** them through the protocol with the table of files kept in step.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "a2m.h"
#include "corpus/batch.h"
#include "corpus/chunk.h"
#include "corpus/files.h"
#include "corpus/index.h"
#include "corpus/kinds.h"
#include "corpus/record.h"
#include "util/buf.h"
#include "util/grow.h"
#include "util/json_write.h"
#include "util/log.h"
#include "util/text.h"

/* Bumped whenever a chunk's cut or its record changes: the table then
** makes every file pending, and each is cut again. */
#define CHUNKER_VERSION 1

/* The hash of a file that is not text: it has no chunks. */
#define SKIPPED "skipped"

/* How often the progress line is redrawn. */
#define PROGRESS_MS 100

struct a2m_corpus {
	char              *root;
	char              *root_uri;     /* file:// and the root, percent-encoded */
	char              *index_rel;    /* the index under root, or NULL */
	const a2m_exclude *exclude;
	size_t             max_chunk, max_file;
	int                progress;
	a2m               *h;
	a2m_corpus_table  *table;
	a2m_corpus_dir_fn  on_dir;
	void              *on_dir_user;
	/* one file */
	char              *data;
	size_t             data_cap;
	a2m_chunks         chunks;
	a2m_buf            body, uri;
	a2m_corpus_id     *ids;
	size_t             cap_ids;
	a2m_corpus_batch   batch;        /* being filled */
	/* The batch before, written on a thread of its own (flush_start). */
	a2m_corpus_batch   out;
	pthread_t          writer;
	int                writing;      /* writer runs, or ran and is not joined */
	int                out_rc;
	size_t             out_added, out_removed, out_records;
	a2m_corpus_stats  *st;
	int64_t            drawn_ms;
	char               err[512];
};

static int oom(a2m_corpus *c)
{
	snprintf(c->err, sizeof c->err, "out of memory");
	return -1;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void hex64(uint64_t v, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 15; i >= 0; i--, v >>= 4)
		out[i] = digits[v & 15];
	out[16] = '\0';
}

/* Eight bytes of p, little-endian whatever the machine. */
static uint64_t load64(const unsigned char *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
	       (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
	       (uint64_t)p[7] << 56;
}

static uint64_t mix(uint64_t h, uint64_t w)
{
	h ^= w * 0xC2B2AE3D27D4EB4FULL;
	return (h << 31 | h >> 33) * 0x9E3779B185EBCA87ULL;
}

/*
** A 64-bit hash of n bytes taken eight at a time: a file's content in the
** table of files, and each record's (its id). FNV-1a, the project's string
** hash, goes a byte at a time, and hashing every file and record with it
** was a tenth of indexing. Indexes store its values: change it only with
** CHUNKER_VERSION.
*/
static uint64_t hash_bytes(const void *data, size_t n)
{
	const unsigned char *p = data;
	uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
	for (; n >= 8; n -= 8, p += 8)
		h = mix(h, load64(p));
	unsigned char tail[8] = {0};
	memcpy(tail, p, n);
	h = mix(h, load64(tail));
	h ^= h >> 33;
	h *= 0xFF51AFD7ED558CCDULL;
	h ^= h >> 33;
	h *= 0xC4CEB9FE1A85EC53ULL;
	return h ^ h >> 33;
}

/* Whether the n bytes at s are text: no NUL, well-formed UTF-8 (as the
** JSON reader judges it). Runs of ASCII go eight bytes at a time. */
static int is_text(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	while (p < end) {
		if (end - p >= 8) {
			uint64_t w = load64(p);
			uint64_t high = w & 0x8080808080808080ULL;
			uint64_t zero = (w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL;
			if (!high && !zero) {
				p += 8;
				continue;
			}
		}
		if (!*p)
			return 0;
		size_t k = *p < 0x80 ? 1 : a2m_utf8_sequence(p, end);
		if (!k)
			return 0;
		p += k;
	}
	return 1;
}

/* Appends s percent-encoded as a URI path: unreserved characters and '/'
** as they are, every other byte as %XX (RFC 3986). */
static void put_uri_path(a2m_buf *b, const char *s)
{
	static const char digits[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~/", *p)) {
			a2m_buf_put(b, p, 1);
		} else {
			char e[3] = {'%', digits[*p >> 4], digits[*p & 15]};
			a2m_buf_put(b, e, 3);
		}
	}
}

/*
** The writes of a batch (batch.c) go on a thread of their own while the
** walk reads, cuts and encodes the next batch's files: the store's work
** (the JSON read, the INSERTs, the commit) and the indexer's then use both
** cores. One batch is written at a time, in the order they were filled, so
** what a crash leaves is what it left before (batch.h). The table of files
** is the writer's while it runs: the walk touches it only after
** flush_wait (sync_path loads its rows there).
*/
static void *write_out(void *arg)
{
	a2m_corpus *c = arg;
	c->out_rc = a2m_corpus_batch_flush(&c->out, &c->out_added, &c->out_removed);
	return NULL;
}

/* What the batch written did: 0, or -1 with why it failed. */
static int written(a2m_corpus *c)
{
	c->out_records = 0;
	if (c->out_rc) {
		snprintf(c->err, sizeof c->err, "%s", c->out.err);
		return -1;
	}
	c->st->chunks_added += c->out_added;
	c->st->chunks_removed += c->out_removed;
	return 0;
}

/* Waits for the batch being written; 0, or -1 with why it failed. */
static int flush_wait(a2m_corpus *c)
{
	if (!c->writing)
		return 0;
	pthread_join(c->writer, NULL);
	c->writing = 0;
	return written(c);
}

/* Once the batch before is written, makes the batch filled the one to
** write (c->out) and an empty one the one to fill; 0, or -1 with the reason
** the batch before failed. */
static int hand_over(a2m_corpus *c)
{
	if (flush_wait(c) != 0)
		return -1;
	a2m_corpus_batch full = c->batch;
	c->batch = c->out;
	c->out = full;
	c->out_records = c->out.n_rec;
	return 0;
}

/* Hands the batch to the writer (once the one before is written) and goes
** on with an empty one; 0, or -1 with the reason a write failed. */
static int flush_start(a2m_corpus *c)
{
	/* Read while the batch before is still being written, and its texts
	** analysed as soon as the helpers are done with the one before's: while
	** it commits, they would have nothing to do. */
	a2m_corpus_batch_prepare(&c->batch);
	a2m_corpus_batch_foresee(&c->batch);
	if (hand_over(c) != 0)
		return -1;
	if (pthread_create(&c->writer, NULL, write_out, c) != 0) {
		/* No thread to be had: written here, the walk waiting. */
		write_out(c);
		a2m_corpus_batch_release(&c->batch);
		a2m_corpus_batch_release(&c->out);
		return written(c);
	}
	c->writing = 1;
	/* The batch written before, freed here while this one is written. */
	a2m_corpus_batch_release(&c->batch);
	return 0;
}

/* Writes the batch, here, after the one before; 0, or -1 with the reason. */
static int flush(a2m_corpus *c)
{
	/* As flush_start: read, and analysed, while the one before commits. */
	a2m_corpus_batch_prepare(&c->batch);
	a2m_corpus_batch_foresee(&c->batch);
	if (hand_over(c) != 0)
		return -1;
	write_out(c);
	a2m_corpus_batch_release(&c->batch);
	a2m_corpus_batch_release(&c->out);
	return written(c);
}

static int flush_if_full(a2m_corpus *c)
{
	return a2m_corpus_batch_full(&c->batch) ? flush_start(c) : 0;
}

/* ---- one file ---------------------------------------------------------- */

/* Reads the open file fd (size bytes by fstat) into c->data; its length, or
** -1 (errno set; EFBIG when it grew past max_file). */
static ssize_t read_file(a2m_corpus *c, int fd, size_t size)
{
	if (a2m_grow((void **)&c->data, &c->data_cap, size + 1, 1))
		return -1;
	size_t got = 0;
	for (;;) {
		if (got == c->data_cap - 1 &&
		    a2m_grow((void **)&c->data, &c->data_cap, c->data_cap + 65536, 1))
			return -1;
		ssize_t r = read(fd, c->data + got, c->data_cap - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
		if (got > c->max_file) {
			errno = EFBIG;
			return -1;
		}
	}
	return (ssize_t)got;
}

static void progress(a2m_corpus *c, int done)
{
	if (!c->progress)
		return;
	int64_t now = now_ms();
	if (done) {
		if (c->drawn_ms)
			fputs("\r\033[K", stderr);  /* the line goes: the summary follows */
		c->drawn_ms = 0;
	} else if (!c->drawn_ms || now - c->drawn_ms >= PROGRESS_MS) {
		fprintf(stderr, "\ra2m corpus: %zu files, %.1f MB read, %zu chunks\033[K",
			c->st->files, (double)c->st->bytes / 1e6, c->st->chunks_added + c->out_records + c->batch.n_rec);
		c->drawn_ms = now;
	} else {
		return;
	}
	fflush(stderr);
}

/*
** Indexes the regular file name in dirfd, which is rel under the root and
** was stat'ed as sb; row is its row or NULL. Returns 0 (a file that cannot
** be read is skipped), or -1 when a batch could not be written.
*/
static int index_file(a2m_corpus *c, int dirfd, const char *name, const char *rel,
		      const struct stat *sb, a2m_corpus_row *row)
{
	a2m_corpus_stats *st = c->st;
	int64_t mtime = (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec;
	/* A record's group and path are JSON strings: a name that is not UTF-8
	** cannot be one (it failed the whole batch with a parse error). */
	if (!is_text(rel, strlen(rel))) {
		a2m_log(A2M_LOG_INFO, "corpus: %s: skipped, its name is not UTF-8", rel);
		st->skipped++;
		return 0;
	}
	if (row && row->hash[0] && row->size == (int64_t)sb->st_size && row->mtime_ns == mtime) {
		row->seen = 1;
		if (strcmp(row->hash, SKIPPED) == 0) {
			st->skipped++;
		} else {
			st->files++;
			st->unchanged++;
		}
		return 0;
	}
	if ((size_t)sb->st_size > c->max_file) {
		a2m_log(A2M_LOG_INFO, "corpus: %s: skipped, larger than %zu bytes", rel, c->max_file);
		st->skipped++;
		return 0;
	}
	/* O_NONBLOCK: a FIFO put in the file's place since the walk saw it must
	** not hang the indexer; fstat then finds it is no regular file. */
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	struct stat now;
	ssize_t len = -1;
	if (fd >= 0 && fstat(fd, &now) == 0 && S_ISREG(now.st_mode))
		len = read_file(c, fd, (size_t)now.st_size);
	int why = errno;
	if (fd >= 0)
		close(fd);
	if (len < 0) {
		if (why == ENOMEM)
			return oom(c);
		a2m_log(A2M_LOG_INFO, "corpus: %s: skipped: %s", rel, strerror(why));
		st->skipped++;
		return 0;
	}
	const char *text = c->data;
	size_t n = (size_t)len;
	int binary = !is_text(text, n);
	if (row)
		row->seen = 1;
	a2m_corpus_pending *p = a2m_corpus_batch_file(&c->batch, rel, row ? row->ids : NULL);
	if (!p)
		return oom(c);
	p->size = (int64_t)now.st_size;
	p->mtime_ns = (int64_t)now.st_mtim.tv_sec * 1000000000 + now.st_mtim.tv_nsec;
	if (binary) {
		/* Noted, so that a restart does not read it again until it changes. */
		a2m_log(A2M_LOG_DEBUG, "corpus: %s: skipped, not UTF-8 text", rel);
		st->skipped++;
		strcpy(p->hash, SKIPPED);
		p->touch = !row || !row->ids[0];
		if (!(p->new_ids = strdup("")))
			return oom(c);
		if (!p->touch)
			a2m_corpus_batch_forget(&c->batch, row->ids, NULL, 0);
		return flush_if_full(c);
	}
	st->files++;
	st->read++;
	st->bytes += n;
	hex64(hash_bytes(text, n), p->hash);
	if (row && row->hash[0] && strcmp(row->hash, p->hash) == 0) {
		p->touch = 1;  /* touched, not changed */
		if (!(p->new_ids = strdup(row->ids)))
			return oom(c);
		return flush_if_full(c);
	}

	/* A byte-order mark is not text: the lines are the same without it. */
	size_t bom = n >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
	a2m_chunk_kind kind;
	const char *media_type;
	const char *base = strrchr(rel, '/');
	a2m_corpus_kind(base ? base + 1 : rel, &kind, &media_type);
	if (a2m_chunk_text(text + bom, n - bom, kind, c->max_chunk, &c->chunks) != 0 ||
	    a2m_grow((void **)&c->ids, &c->cap_ids, c->chunks.n + 1, sizeof *c->ids))
		return oom(c);
	text += bom;

	c->uri.len = 0;
	a2m_buf_puts(&c->uri, c->root_uri);
	a2m_buf_put(&c->uri, "/", 1);
	put_uri_path(&c->uri, rel);
	char path_hash[17];
	hex64(hash_bytes(rel, strlen(rel)), path_hash);

	/* A pending row's old ids may name chunks the store never got:
	** remember every chunk then, not only those the row lacks. */
	char *copy, **old;
	size_t n_old;
	int all = !row || !row->hash[0];
	if (a2m_corpus_ids_parse(row ? row->ids : NULL, &copy, &old, &n_old) != 0) {
		free(old);
		free(copy);
		return oom(c);
	}
	a2m_corpus_batch *b = &c->batch;
	a2m_buf ids = {0};
	a2m_corpus_chunk_ref ref = {&c->chunks, 0, rel, text, c->uri.p, c->uri.len, media_type};
	for (size_t k = 0; k < c->chunks.n; k++) {
		ref.k = k;
		a2m_corpus_record_body(&c->body, &ref);
		memcpy(c->ids[k], path_hash, 16);
		hex64(hash_bytes(c->body.p, c->body.len), c->ids[k] + 16);
		const char *id = c->ids[k];
		if (k)
			a2m_buf_put(&ids, " ", 1);
		a2m_buf_put(&ids, id, A2M_CORPUS_ID_LEN);
		if (!all && a2m_corpus_ids_has(old, n_old, id))
			continue;
		if (b->handle_value) {
			a2m_corpus_batch_value(b, a2m_corpus_record_value(&ref, id));
			continue;
		}
		if (a2m_corpus_batch_record(b))
			continue;
		a2m_buf_puts(&b->records, "{\"id\":\"");
		a2m_buf_put(&b->records, id, A2M_CORPUS_ID_LEN);
		a2m_buf_puts(&b->records, "\",");
		a2m_buf_put(&b->records, c->body.p, c->body.len);
	}
	free(copy);
	free(old);
	a2m_corpus_batch_forget(b, row ? row->ids : NULL, c->ids, c->chunks.n);
	p->new_ids = a2m_buf_take(&ids, NULL);
	if (!p->new_ids || c->body.failed || c->uri.failed)
		return oom(c);
	b->bytes += n;
	progress(c, 0);
	return flush_if_full(c);
}

/* ---- the walk ---------------------------------------------------------- */

int a2m_corpus_is_index(const a2m_corpus *c, const char *rel)
{
	if (!c->index_rel)
		return 0;
	size_t n = strlen(c->index_rel);
	if (strncmp(rel, c->index_rel, n) != 0)
		return 0;
	return !rel[n] || strcmp(rel + n, "-wal") == 0 || strcmp(rel + n, "-shm") == 0 ||
	       strcmp(rel + n, "-journal") == 0;
}

/* Tells the watcher about the directory rel. */
static void entered(a2m_corpus *c, const char *rel)
{
	if (!c->on_dir)
		return;
	char abs[PATH_MAX];
	if (snprintf(abs, sizeof abs, "%s%s%s", c->root, *rel ? "/" : "", rel) < (int)sizeof abs)
		c->on_dir(c->on_dir_user, rel, abs);
}

/* Walks the directory fd (consumed), which is rel (a buffer of PATH_MAX
** bytes) under the root. */
static int walk(a2m_corpus *c, int fd, char *rel, a2m_corpus_row *rows, size_t n_rows)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;  /* gone, or unreadable: as if empty */
	}
	entered(c, rel);
	size_t len = strlen(rel);
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		const char *name = e->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		if (len + 1 + strlen(name) >= PATH_MAX)
			continue;
		sprintf(rel + len, "%s%s", len ? "/" : "", name);
		struct stat sb;
		if (fstatat(dirfd(d), name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
			rel[len] = '\0';
			continue;
		}
		if (S_ISDIR(sb.st_mode) && !a2m_exclude_match(c->exclude, rel, 1)) {
			int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				rc = walk(c, sub, rel, rows, n_rows);
		} else if (S_ISREG(sb.st_mode) && !a2m_corpus_is_index(c, rel) &&
			   !a2m_exclude_match(c->exclude, rel, 0)) {
			rc = index_file(c, dirfd(d), name, rel, &sb,
					a2m_corpus_rows_find(rows, n_rows, rel));
		}
		rel[len] = '\0';
	}
	closedir(d);
	return rc;
}

/* One path's part of a sync: what it finds goes into the batch. */
static int sync_path(a2m_corpus *c, const char *rel)
{
	a2m_corpus_row *rows;
	size_t n_rows;
	if (flush_wait(c) != 0)
		return -1;
	if (a2m_corpus_table_load(c->table, rel, &rows, &n_rows) != 0) {
		snprintf(c->err, sizeof c->err, "the table of files: %s",
			 a2m_corpus_table_errmsg(c->table));
		return -1;
	}
	char path[PATH_MAX];
	int rc = 0;
	if (strlen(rel) >= sizeof path) {
		/* never walked: nothing there is indexed */
	} else if (!*rel) {
		int fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			snprintf(c->err, sizeof c->err, "%s: %s", c->root, strerror(errno));
			a2m_corpus_rows_free(rows, n_rows);
			return -1;
		}
		path[0] = '\0';
		rc = walk(c, fd, path, rows, n_rows);
	} else {
		struct stat sb;
		int root = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		strcpy(path, rel);
		if (root >= 0 && fstatat(root, rel, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISDIR(sb.st_mode) && !a2m_exclude_path(c->exclude, rel, 1)) {
				int fd = openat(root, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (fd >= 0)
					rc = walk(c, fd, path, rows, n_rows);
			} else if (S_ISREG(sb.st_mode) && !a2m_corpus_is_index(c, rel) &&
				   !a2m_exclude_path(c->exclude, rel, 0)) {
				rc = index_file(c, root, rel, rel, &sb,
						a2m_corpus_rows_find(rows, n_rows, rel));
			}
		}
		if (root >= 0)
			close(root);
	}
	/* What the walk did not meet is gone. */
	for (size_t i = 0; !rc && i < n_rows; i++) {
		if (rows[i].seen)
			continue;
		if (!a2m_corpus_batch_file(&c->batch, rows[i].path, rows[i].ids)) {
			rc = oom(c);
			break;
		}
		a2m_corpus_batch_forget(&c->batch, rows[i].ids, NULL, 0);
		c->st->removed++;
		rc = flush_if_full(c);
	}
	a2m_corpus_rows_free(rows, n_rows);
	return rc;
}

int a2m_corpus_sync_paths(a2m_corpus *c, const char *const *rels, size_t n,
			  a2m_corpus_stats *st)
{
	int rc = 0;
	c->st = st;
	c->err[0] = '\0';
	for (size_t i = 0; !rc && i < n; i++)
		rc = sync_path(c, rels[i]);
	if (!rc) {
		rc = flush(c);
	} else {
		/* The reason kept is the first: the batch written meanwhile may
		** fail too, but after it. */
		char why[sizeof c->err];
		memcpy(why, c->err, sizeof why);
		flush_wait(c);
		memcpy(c->err, why, sizeof why);
		a2m_corpus_batch_reset(&c->batch);
	}
	progress(c, 1);
	return rc;
}

int a2m_corpus_sync(a2m_corpus *c, const char *rel, a2m_corpus_stats *st)
{
	return a2m_corpus_sync_paths(c, &rel, 1, st);
}

/* ---- open and close ---------------------------------------------------- */

void a2m_corpus_on_dir(a2m_corpus *c, a2m_corpus_dir_fn fn, void *user)
{
	c->on_dir = fn;
	c->on_dir_user = user;
}

const char *a2m_corpus_root(const a2m_corpus *c)
{
	return c->root;
}

const char *a2m_corpus_errmsg(const a2m_corpus *c)
{
	return c->err;
}

/* The store the indexer writes: its tiers (to place chunks in semantic),
** external (uri, media_type), and nothing it does not use. */
static int open_store(a2m_corpus *c, const char *path, char *err, size_t errlen)
{
	a2m_config *cfg;
	char *msg = NULL;
	if (a2m_config_new(&cfg) != A2M_OK) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int rc = a2m_config_set(cfg, "engine", "sqlite");
	if (!rc)
		rc = a2m_config_set(cfg, "path", path);
	if (!rc)
		rc = a2m_config_set(cfg, "capabilities", "core,tiers,external");
	/* Power loss may cost the last commits, which the next sync redoes. */
	if (!rc)
		rc = a2m_config_set(cfg, "synchronous", "normal");
	/* One memory/remember, one transaction, per batch (batch.h). */
	char per_call[32];
	snprintf(per_call, sizeof per_call, "%d", A2M_CORPUS_BATCH_RECORDS);
	if (!rc)
		rc = a2m_config_set(cfg, "max_records_per_call", per_call);
	if (rc) {
		snprintf(err, errlen, "%s", a2m_config_errmsg(cfg));
		a2m_config_free(cfg);
		return -1;
	}
	rc = a2m_open(cfg, &c->h, &msg);
	a2m_config_free(cfg);
	if (rc != A2M_OK) {
		snprintf(err, errlen, "%s", msg ? msg : a2m_strerror(rc));
		a2m_free(msg);
		return -1;
	}
	return 0;
}

/* Where the index is under the root, when it is: it is never indexed. */
static int find_index(a2m_corpus *c, const char *index)
{
	char real[PATH_MAX];
	if (!realpath(index, real))
		return 0;
	size_t n = strlen(c->root);
	if (strncmp(real, c->root, n) == 0 && real[n] == '/' && !(c->index_rel = strdup(real + n + 1)))
		return -1;
	return 0;
}

int a2m_corpus_open(const a2m_corpus_options *o, a2m_corpus **out, char *err, size_t errlen)
{
	*out = NULL;
	a2m_corpus *c = calloc(1, sizeof *c);
	a2m_buf uri = {0};
	char settings[PATH_MAX + 64];
	if (!c || !(c->root = strdup(o->root)))
		goto nomem;
	c->exclude = o->exclude;
	c->max_chunk = o->max_chunk;
	c->max_file = o->max_file;
	c->progress = o->progress;
	a2m_buf_puts(&uri, "file://");
	put_uri_path(&uri, strcmp(o->root, "/") == 0 ? "" : o->root);
	if (!(c->root_uri = a2m_buf_take(&uri, NULL)))
		goto nomem;
	if (open_store(c, o->index, err, errlen) != 0)
		goto fail;
	if (find_index(c, o->index) != 0)
		goto nomem;
	snprintf(settings, sizeof settings, "a2m-corpus/%d chunk=%zu root=%s", CHUNKER_VERSION,
		 c->max_chunk, c->root);
	int reset;
	if (a2m_corpus_table_open(o->index, settings, &c->table, &reset, err, errlen) != 0)
		goto fail;
	c->batch.h = c->out.h = c->h;
	c->batch.table = c->out.table = c->table;
	c->batch.handle_value = c->out.handle_value = o->handle_value;
	c->batch.foresee = c->out.foresee = o->foresee;
	if (reset)
		a2m_log(A2M_LOG_INFO, "corpus: the folder or the chunk size changed: every file "
			"is cut again");
	*out = c;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
fail:
	a2m_corpus_close(c);
	return -1;
}

void a2m_corpus_close(a2m_corpus *c)
{
	if (!c)
		return;
	if (c->writing)
		pthread_join(c->writer, NULL);
	a2m_corpus_batch_free(&c->batch);
	a2m_corpus_batch_free(&c->out);
	a2m_corpus_table_close(c->table);
	a2m_close(c->h);
	a2m_chunks_free(&c->chunks);
	a2m_buf_free(&c->body);
	a2m_buf_free(&c->uri);
	free(c->ids);
	free(c->data);
	free(c->root_uri);
	free(c->index_rel);
	free(c->root);
	free(c);
}
