/*
** sqlite_walvfs.c — a VFS shim over SQLite's default VFS ("unix") that
** gathers the write-ahead log's appends and writes a commit's frames with
** one pwrite.
**
** Why: SQLite writes each log frame as two writes, its 24-byte header and
** its page, so a lone commit of ~5.7 pages made ~11.4 pwrite calls (plus
** the locks' fcntl); each is a system call on the server's one thread
** between the request and its answer (docs/BENCHMARKS.md, "A lone commit
** in one write").
**
** How (SQLite's documented shim pattern: a VFS whose files wrap those of
** the VFS below): writes to a file opened as SQLITE_OPEN_WAL that continue the
** previous one are copied into a buffer (120 KiB, taken at the first
** write). The buffer is written out, in one pwrite, before anything could
** need what it holds:
**   - at the write that ends a commit frame: SQLite writes a frame as its
**     header then its page, and a commit frame's header carries the
**     database's size in pages (bytes 4-7, never 0; 0 in every other
**     frame). The page after such a header is appended and the buffer is
**     written in that same xWrite, whose error SQLite sees as the commit's
**     own (sqlite3WalFrames fails, no wal-index header is published, the
**     transaction rolls back);
**   - before every other operation on the log: xRead (a reader or a
**     checkpoint of this connection, walRewriteChecksums), xSync (FULL's
**     commit sync, the header's sync, a checkpoint's), xTruncate,
**     xFileSize, xFileControl, xFetch and xClose; and before a write that
**     does not continue the buffer (an overwrite in place) or overflows it;
**   - as a backstop, before the database file's xShmBarrier, xShmLock and
**     xShmUnmap (the database's wal-index calls; in SQLite 3.40,
**     walIndexWriteHdr calls xShmBarrier after the frames are written and
**     before the header that makes them visible is complete, and every lock
**     the writer gives up goes through xShmLock).
**
** Why it is as safe as writing each frame at once: nobody reads a frame
** until a published wal-index header names it (readers in this process and
** in others read the log only up to their snapshot's mxFrame, and a
** header is only accepted when both of its copies agree, the second copy
** being written after xShmBarrier), and the header of a commit is
** published after its frames are written (the commit frame's write). Until
** then the frames belong to a transaction no one else can see, under the
** log's write lock that this connection holds. A kill -9 before the
** write loses only a commit whose COMMIT had not returned, so whose answer
** was never sent: exactly as a kill between two of SQLite's own writes
** would. After the write the frames are in the page cache, as before; FULL
** still syncs after them (xSync writes first); group commit's own fdatasync
** (sqlite_sync.c) runs after COMMIT returned, so after the write.
** A backstop write that fails (xShmBarrier cannot return an error) makes
** the log refuse every later operation with SQLITE_IOERR_WRITE, so no
** commit is acknowledged past it; it is not expected to happen, since the
** commit frame's write leaves the buffer empty.
**
** A durable store (a2m_sqlite_walvfs_durable) also has its log grow 1 MiB
** at a time, written as zeros ahead of the frames (wal_ahead), so that a
** commit's fdatasync overwrites blocks the file has instead of recording a
** new size and new blocks (an ext4 journal commit and a second cache flush
** a commit, measured on a loop device: docs/BENCHMARKS.md).
**
** Only files SQLite opens as SQLITE_OPEN_MAIN_DB and SQLITE_OPEN_WAL are
** wrapped; every other file is the VFS below's own. The VFS below is the
** default one when the shim is first asked for (a test's failing VFS,
** tests/fault_vfs.h, stays under it). A log finds its
** database file by the name SQLite gives both (sqlite3_filename_database
** of the log's name is the pointer the database was opened with), in a
** list of open database files under a mutex taken only at open and close.
** A database file and its log belong to one connection, used by one thread
** at a time, so the buffer itself needs no lock.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store/sqlite_walvfs.h"
#include "util/log.h"

#define WALVFS_NAME "a2m-wal"
/*
** The buffer: room for a commit of 29 frames of 4 KiB; a larger one is
** written as it fills. Under 128 KiB because the unix VFS's write takes
** the length modulo 128 KiB (seekAndWriteFd: nBuf &= 0x1ffff), so a write
** of 128 KiB or more fails as "disk full" in SQLite 3.40.
*/
#define WALVFS_BUF (120 * 1024)
/* The file control a2m_sqlite_walvfs_durable sends ("A2M" and 1: no SQLite opcode). */
#define WALVFS_FCNTL_AHEAD 0x41324d01
/* A durable log's growth: zeros written this far ahead (wal_ahead). */
#define WALVFS_AHEAD (1024 * 1024)
/* SQLite's frame header (wal.c WAL_FRAME_HDRSIZE). */
#define FRAME_HDR 24

typedef struct walvfs_file walvfs_file;
struct walvfs_file {
	sqlite3_file   base;     /* pMethods: db_methods or wal_methods */
	sqlite3_file  *real;     /* the VFS below's file, just after this struct */
	/* A log: */
	unsigned char *buf;
	size_t         len;
	sqlite3_int64  start;    /* the file offset of buf[0] */
	int            commit_next; /* the last write was a commit frame's header */
	int            failed;   /* a backstop write failed: refuse everything */
	int            no_ahead; /* writing ahead failed once: not tried again */
	sqlite3_int64  size;     /* the file's size as last known, or -1 */
	walvfs_file   *db;       /* its database file, when found */
	/* A database file: */
	sqlite3_int64  ahead;    /* its log grows in chunks of this many bytes (durable), or 0 */
	const char    *name;     /* the pointer SQLite opened it with */
	walvfs_file   *wal;      /* its open log, if any */
	walvfs_file   *next;     /* the list of open database files */
};

static sqlite3_vfs        walvfs;
static sqlite3_vfs       *below;
static pthread_once_t     walvfs_once = PTHREAD_ONCE_INIT;
static int                walvfs_ok;
static pthread_mutex_t    dbs_mu = PTHREAD_MUTEX_INITIALIZER;
static walvfs_file       *dbs;
static atomic_ullong      n_flushes, n_appends;

static sqlite3_file *real_of(sqlite3_file *f)
{
	return ((walvfs_file *)f)->real;
}

/* Zeros for the log's growth, in writes under the unix VFS's 128 KiB limit. */
static const unsigned char zeros[64 * 1024];

/*
** A durable store's log grows a chunk at a time, written as zeros past the
** end a flush reached: the commits after it overwrite blocks the file has,
** so their fdatasync records no new size or blocks (on ext4, no journal
** commit beside the data). Only past what was written this transaction,
** under the log's write lock: what lies there is no frame of the log's
** current content (SQLite stops reading the log at the first frame whose
** salt and checksum fail, as zeros do). A failure is not the commit's: the
** log grows as it would have, and this file stops trying.
*/
static void wal_ahead(walvfs_file *w, sqlite3_int64 end)
{
	sqlite3_int64 chunk = w->db ? w->db->ahead : 0;
	if (chunk <= 0 || w->no_ahead)
		return;
	if (w->size < 0 && w->real->pMethods->xFileSize(w->real, &w->size) != SQLITE_OK) {
		w->size = -1;
		return;
	}
	if (end < w->size)
		return;
	sqlite3_int64 to = (end / chunk + 1) * chunk;
	for (sqlite3_int64 off = end; off < to;) {
		int n = to - off < (sqlite3_int64)sizeof zeros ? (int)(to - off) : (int)sizeof zeros;
		if (w->real->pMethods->xWrite(w->real, zeros, n, off) != SQLITE_OK) {
			w->no_ahead = 1;
			w->size = -1;
			return;
		}
		off += n;
	}
	w->size = to;
}

/* Writes the buffer out; it is empty afterwards whatever happened. */
static int wal_flush(walvfs_file *w)
{
	if (w->failed)
		return SQLITE_IOERR_WRITE;
	if (!w->len)
		return SQLITE_OK;
	sqlite3_int64 end = w->start + (sqlite3_int64)w->len;
	int rc = w->real->pMethods->xWrite(w->real, w->buf, (int)w->len, w->start);
	w->len = 0;
	w->commit_next = 0;
	atomic_fetch_add_explicit(&n_flushes, 1, memory_order_relaxed);
	if (rc == SQLITE_OK) {
		if (w->size >= 0 && end > w->size)
			w->size = end;
		wal_ahead(w, end);
	}
	return rc;
}

/*
** The backstop's write (the database file's wal-index calls): a failure
** marks the log failed, since the caller may have no way to report it.
*/
static int wal_backstop(walvfs_file *db)
{
	walvfs_file *w = db->wal;
	if (!w || !w->len)
		return SQLITE_OK;
	int rc = wal_flush(w);
	if (rc != SQLITE_OK && !w->failed) {
		w->failed = 1;
		a2m_log(A2M_LOG_ERROR, "sqlite store: writing the log failed (%d); "
			"the store refuses further writes", rc);
	}
	return rc;
}

static unsigned be32(const unsigned char *p)
{
	return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

/* ---- the log's methods ---- */

static int wal_write(sqlite3_file *f, const void *data, int n, sqlite3_int64 off)
{
	walvfs_file *w = (walvfs_file *)f;
	int rc;
	if (w->failed)
		return SQLITE_IOERR_WRITE;
	if (n < 0)
		return SQLITE_IOERR_WRITE;
	size_t un = (size_t)n;
	if (!w->buf && !(w->buf = malloc(WALVFS_BUF)))
		return w->real->pMethods->xWrite(w->real, data, n, off); /* unbuffered */
	if (w->len && (off != w->start + (sqlite3_int64)w->len || w->len + un > WALVFS_BUF)) {
		int commit = w->commit_next;
		if ((rc = wal_flush(w)) != SQLITE_OK)
			return rc;
		w->commit_next = commit;
	}
	if (un > WALVFS_BUF) {
		w->commit_next = 0;
		return w->real->pMethods->xWrite(w->real, data, n, off);
	}
	if (!w->len)
		w->start = off;
	memcpy(w->buf + w->len, data, un);
	w->len += un;
	atomic_fetch_add_explicit(&n_appends, 1, memory_order_relaxed);
	if (w->commit_next)
		return wal_flush(w); /* the commit frame's page: the commit is whole */
	if (un == FRAME_HDR && be32((const unsigned char *)data + 4) != 0)
		w->commit_next = 1;
	return SQLITE_OK;
}

static int wal_close(sqlite3_file *f)
{
	walvfs_file *w = (walvfs_file *)f;
	int rc = wal_flush(w);
	pthread_mutex_lock(&dbs_mu);
	if (w->db && w->db->wal == w)
		w->db->wal = NULL;
	pthread_mutex_unlock(&dbs_mu);
	int rc2 = w->real->pMethods ? w->real->pMethods->xClose(w->real) : SQLITE_OK;
	free(w->buf);
	w->buf = NULL;
	return rc != SQLITE_OK ? rc : rc2;
}

static int wal_read(sqlite3_file *f, void *data, int n, sqlite3_int64 off)
{
	walvfs_file *w = (walvfs_file *)f;
	int rc = wal_flush(w);
	return rc != SQLITE_OK ? rc : w->real->pMethods->xRead(w->real, data, n, off);
}

static int wal_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	walvfs_file *w = (walvfs_file *)f;
	int rc = wal_flush(w);
	w->size = -1;
	return rc != SQLITE_OK ? rc : w->real->pMethods->xTruncate(w->real, size);
}

static int wal_sync(sqlite3_file *f, int flags)
{
	walvfs_file *w = (walvfs_file *)f;
	int rc = wal_flush(w);
	return rc != SQLITE_OK ? rc : w->real->pMethods->xSync(w->real, flags);
}

static int wal_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	walvfs_file *w = (walvfs_file *)f;
	int rc = wal_flush(w);
	return rc != SQLITE_OK ? rc : w->real->pMethods->xFileSize(w->real, size);
}

static int wal_file_control(sqlite3_file *f, int op, void *arg)
{
	walvfs_file *w = (walvfs_file *)f;
	int rc = wal_flush(w);
	return rc != SQLITE_OK ? rc : w->real->pMethods->xFileControl(w->real, op, arg);
}

static int wal_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
	walvfs_file *w = (walvfs_file *)f;
	int rc = wal_flush(w);
	*pp = NULL;
	if (rc != SQLITE_OK)
		return rc;
	return w->real->pMethods->iVersion >= 3 ? w->real->pMethods->xFetch(w->real, off, n, pp)
						: SQLITE_OK;
}

/* ---- the methods both kinds pass through ---- */

static int pass_lock(sqlite3_file *f, int l)
{
	return real_of(f)->pMethods->xLock(real_of(f), l);
}

static int pass_unlock(sqlite3_file *f, int l)
{
	return real_of(f)->pMethods->xUnlock(real_of(f), l);
}

static int pass_check_reserved(sqlite3_file *f, int *out)
{
	return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}

static int pass_sector_size(sqlite3_file *f)
{
	return real_of(f)->pMethods->xSectorSize(real_of(f));
}

static int pass_device(sqlite3_file *f)
{
	return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}

static int pass_shm_map(sqlite3_file *f, int pg, int sz, int extend, void volatile **pp)
{
	return real_of(f)->pMethods->xShmMap(real_of(f), pg, sz, extend, pp);
}

static int pass_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	sqlite3_file *r = real_of(f);
	return r->pMethods->iVersion >= 3 ? r->pMethods->xUnfetch(r, off, p) : SQLITE_OK;
}

/* ---- the database file's methods ---- */

static int db_close(sqlite3_file *f)
{
	walvfs_file *d = (walvfs_file *)f;
	(void)wal_backstop(d);
	pthread_mutex_lock(&dbs_mu);
	for (walvfs_file **pp = &dbs; *pp; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	if (d->wal)
		d->wal->db = NULL;
	d->wal = NULL;
	pthread_mutex_unlock(&dbs_mu);
	return d->real->pMethods ? d->real->pMethods->xClose(d->real) : SQLITE_OK;
}

static int db_read(sqlite3_file *f, void *data, int n, sqlite3_int64 off)
{
	return real_of(f)->pMethods->xRead(real_of(f), data, n, off);
}

static int db_write(sqlite3_file *f, const void *data, int n, sqlite3_int64 off)
{
	return real_of(f)->pMethods->xWrite(real_of(f), data, n, off);
}

static int db_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	return real_of(f)->pMethods->xTruncate(real_of(f), size);
}

static int db_sync(sqlite3_file *f, int flags)
{
	return real_of(f)->pMethods->xSync(real_of(f), flags);
}

static int db_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	return real_of(f)->pMethods->xFileSize(real_of(f), size);
}

static int db_file_control(sqlite3_file *f, int op, void *arg)
{
	sqlite3_file *r = real_of(f);
	if (op == WALVFS_FCNTL_AHEAD) {
		((walvfs_file *)f)->ahead = *(sqlite3_int64 *)arg;
		return SQLITE_OK;
	}
	int rc = r->pMethods->xFileControl(r, op, arg);
	/* The VFS name SQLite reports names the whole stack (as shims do). */
	if (op == SQLITE_FCNTL_VFSNAME && rc == SQLITE_OK && arg) {
		char *inner = *(char **)arg;
		char *name = inner ? sqlite3_mprintf("%s/%z", WALVFS_NAME, inner)
				   : sqlite3_mprintf("%s", WALVFS_NAME);
		*(char **)arg = name;
	}
	return rc;
}

static int db_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
	sqlite3_file *r = real_of(f);
	*pp = NULL;
	return r->pMethods->iVersion >= 3 ? r->pMethods->xFetch(r, off, n, pp) : SQLITE_OK;
}

static int db_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	walvfs_file *d = (walvfs_file *)f;
	int rc = wal_backstop(d);
	/* An unlock must still happen, or the lock would be held forever. */
	if (rc != SQLITE_OK && !(flags & SQLITE_SHM_UNLOCK))
		return rc;
	return d->real->pMethods->xShmLock(d->real, off, n, flags);
}

static void db_shm_barrier(sqlite3_file *f)
{
	walvfs_file *d = (walvfs_file *)f;
	(void)wal_backstop(d);
	d->real->pMethods->xShmBarrier(d->real);
}

static int db_shm_unmap(sqlite3_file *f, int del)
{
	walvfs_file *d = (walvfs_file *)f;
	(void)wal_backstop(d);
	return d->real->pMethods->xShmUnmap(d->real, del);
}

static const sqlite3_io_methods db_methods = {
	3, db_close, db_read, db_write, db_truncate, db_sync, db_file_size,
	pass_lock, pass_unlock, pass_check_reserved, db_file_control,
	pass_sector_size, pass_device, pass_shm_map, db_shm_lock, db_shm_barrier,
	db_shm_unmap, db_fetch, pass_unfetch,
};

/* The log has no wal-index of its own: its shm methods are the file below's (unused). */
static int wal_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	return real_of(f)->pMethods->xShmLock(real_of(f), off, n, flags);
}

static void wal_shm_barrier(sqlite3_file *f)
{
	real_of(f)->pMethods->xShmBarrier(real_of(f));
}

static int wal_shm_unmap(sqlite3_file *f, int del)
{
	return real_of(f)->pMethods->xShmUnmap(real_of(f), del);
}

static const sqlite3_io_methods wal_methods = {
	3, wal_close, wal_read, wal_write, wal_truncate, wal_sync, wal_file_size,
	pass_lock, pass_unlock, pass_check_reserved, wal_file_control,
	pass_sector_size, pass_device, pass_shm_map, wal_shm_lock, wal_shm_barrier,
	wal_shm_unmap, wal_fetch, pass_unfetch,
};

/* ---- the VFS ---- */

static int walvfs_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags,
		       int *out_flags)
{
	(void)vfs;
	int kind = flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL);
	if (!kind || !name)
		/* Not ours to wrap: the file below fills the room itself. */
		return below->xOpen(below, name, f, flags, out_flags);
	walvfs_file *w = (walvfs_file *)f;
	memset(w, 0, sizeof *w);
	w->size = -1;
	w->real = (sqlite3_file *)(w + 1);
	int rc = below->xOpen(below, name, w->real, flags, out_flags);
	if (rc != SQLITE_OK) {
		/* SQLite calls xClose only when pMethods is set; a failed open
		   below normally leaves nothing to close. */
		if (w->real->pMethods)
			w->real->pMethods->xClose(w->real);
		f->pMethods = NULL;
		return rc;
	}
	pthread_mutex_lock(&dbs_mu);
	if (kind & SQLITE_OPEN_MAIN_DB) {
		w->name = name;
		w->next = dbs;
		dbs = w;
		f->pMethods = &db_methods;
	} else {
		const char *db = sqlite3_filename_database(name);
		for (walvfs_file *d = dbs; d; d = d->next)
			if (d->name == db && !d->wal) {
				d->wal = w;
				w->db = d;
				break;
			}
		f->pMethods = &wal_methods;
	}
	pthread_mutex_unlock(&dbs_mu);
	return SQLITE_OK;
}

static int walvfs_delete(sqlite3_vfs *v, const char *name, int sync_dir)
{
	(void)v;
	return below->xDelete(below, name, sync_dir);
}

static int walvfs_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
	(void)v;
	return below->xAccess(below, name, flags, out);
}

static int walvfs_full_pathname(sqlite3_vfs *v, const char *name, int n, char *out)
{
	(void)v;
	return below->xFullPathname(below, name, n, out);
}

static void *walvfs_dl_open(sqlite3_vfs *v, const char *name)
{
	(void)v;
	return below->xDlOpen(below, name);
}

static void walvfs_dl_error(sqlite3_vfs *v, int n, char *msg)
{
	(void)v;
	below->xDlError(below, n, msg);
}

static void (*walvfs_dl_sym(sqlite3_vfs *v, void *h, const char *sym))(void)
{
	(void)v;
	return below->xDlSym(below, h, sym);
}

static void walvfs_dl_close(sqlite3_vfs *v, void *h)
{
	(void)v;
	below->xDlClose(below, h);
}

static int walvfs_randomness(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return below->xRandomness(below, n, out);
}

static int walvfs_sleep(sqlite3_vfs *v, int us)
{
	(void)v;
	return below->xSleep(below, us);
}

static int walvfs_current_time(sqlite3_vfs *v, double *out)
{
	(void)v;
	return below->xCurrentTime(below, out);
}

static int walvfs_last_error(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return below->xGetLastError ? below->xGetLastError(below, n, out) : 0;
}

static int walvfs_current_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
	(void)v;
	return below->xCurrentTimeInt64(below, out);
}

static void walvfs_register(void)
{
	if (sqlite3_initialize() != SQLITE_OK)
		return;
	/* The default VFS at the first open: "unix", or a test's shim over it
	   (tests/fault_vfs.h registers its failing VFS as the default first). */
	below = sqlite3_vfs_find(NULL);
	if (!below || below->iVersion < 2 || !below->xCurrentTimeInt64 ||
	    strcmp(below->zName, WALVFS_NAME) == 0)
		return;
	walvfs = (sqlite3_vfs){
		.iVersion = 2,
		.szOsFile = (int)sizeof(walvfs_file) + below->szOsFile,
		.mxPathname = below->mxPathname,
		.zName = WALVFS_NAME,
		.xOpen = walvfs_open,
		.xDelete = walvfs_delete,
		.xAccess = walvfs_access,
		.xFullPathname = walvfs_full_pathname,
		.xDlOpen = walvfs_dl_open,
		.xDlError = walvfs_dl_error,
		.xDlSym = walvfs_dl_sym,
		.xDlClose = walvfs_dl_close,
		.xRandomness = walvfs_randomness,
		.xSleep = walvfs_sleep,
		.xCurrentTime = walvfs_current_time,
		.xGetLastError = walvfs_last_error,
		.xCurrentTimeInt64 = walvfs_current_time64,
	};
	walvfs_ok = sqlite3_vfs_register(&walvfs, 0) == SQLITE_OK;
}

const char *a2m_sqlite_walvfs_name(void)
{
	pthread_once(&walvfs_once, walvfs_register);
	return walvfs_ok ? WALVFS_NAME : NULL;
}

int a2m_sqlite_walvfs_durable(sqlite3 *db)
{
	sqlite3_int64 chunk = WALVFS_AHEAD;
	return sqlite3_file_control(db, "main", WALVFS_FCNTL_AHEAD, &chunk);
}

void a2m_sqlite_walvfs_counts(unsigned long long *flushes, unsigned long long *appends)
{
	if (flushes)
		*flushes = atomic_load_explicit(&n_flushes, memory_order_relaxed);
	if (appends)
		*appends = atomic_load_explicit(&n_appends, memory_order_relaxed);
}
