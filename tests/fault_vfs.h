/*
** fault_vfs.h — failing storage for tests/test_faults.c: an SQLite VFS that
** wraps the default one and can fail the nth read, write, fsync or file open,
** report a full disk, or fail SQLite's nth allocation.
**
** fault_vfs_install() must run before anything initialises SQLite (before
** the first a2m_open): it replaces SQLite's allocator with a counting one
** (sqlite3_config(SQLITE_CONFIG_MALLOC) is refused once the library is
** initialised) and registers the shim as the default VFS, so every
** connection a2m opens (main, readers, temporary files) goes through it.
**
** Every kind of operation is counted from fault_arm() on, whether armed or
** not, so an unfaulted run says how many points a sweep has. Armed with
** (kind, n), the nth operation of that kind fails once, as the disk or the
** allocator would make it fail; FAULT_FULL instead fails the nth write and
** every write after it with SQLITE_FULL (ENOSPC), until fault_disarm(),
** because a full disk stays full until space is freed. fault_fired() says
** how many operations were failed so far.
**
** The file's operations are forwarded untouched otherwise; reads through
** memory-mapped I/O would bypass xRead, so xFetch answers "not mapped"
** (SQLite then reads): a2m maps the file by default (mmap_mb), and under
** this VFS every page is still read through xRead, where a fault can land.
*/
#ifndef A2M_TEST_FAULT_VFS_H
#define A2M_TEST_FAULT_VFS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

/* What can be made to fail. FAULT_NONE arms nothing (the count still runs). */
typedef enum fault_kind {
	FAULT_NONE = 0,
	FAULT_READ,    /* xRead: SQLITE_IOERR_READ */
	FAULT_WRITE,   /* xWrite: SQLITE_IOERR_WRITE */
	FAULT_FULL,    /* xWrite, from the nth on: SQLITE_FULL */
	FAULT_SYNC,    /* xSync: SQLITE_IOERR_FSYNC */
	FAULT_OPEN,    /* xOpen: SQLITE_CANTOPEN */
	FAULT_SMALLOC, /* SQLite's own allocations: NULL */
	FAULT_MIRROR,  /* liba2m's own file calls (fault_files.h): -1, EIO or ENOSPC */
	FAULT_LOGSYNC, /* liba2m's fdatasync of the log, group commit's (fault_files.h): EIO */
	FAULT_KINDS
} fault_kind;

static const char *const fault_kind_names[FAULT_KINDS] = {
	"none", "read", "write", "full", "sync", "open", "sqlite-malloc", "mirror", "log-sync",
};

/* What each kind counts: FULL counts the writes, as WRITE does. */
static const fault_kind fault_counted_as[FAULT_KINDS] = {
	FAULT_NONE, FAULT_READ, FAULT_WRITE, FAULT_WRITE, FAULT_SYNC, FAULT_OPEN, FAULT_SMALLOC,
	FAULT_MIRROR, FAULT_LOGSYNC,
};

static struct {
	sqlite3_vfs          vfs;     /* the shim, registered as the default */
	sqlite3_vfs         *real;    /* the VFS it wraps */
	sqlite3_mem_methods  mem;     /* SQLite's allocator before ours */
	_Atomic int          kind;    /* armed kind, FAULT_NONE when disarmed */
	_Atomic int64_t      at;      /* the operation to fail (1-based) */
	_Atomic int64_t      count[FAULT_KINDS];
	_Atomic int64_t      fired;
	_Atomic int          counting;
	/* A second fault (fault_arm_then): the mth operation of kind2 counted
	** once the first has fired. */
	_Atomic int          kind2;
	_Atomic int64_t      at2;
	_Atomic int64_t      count2;
	_Atomic int          first_fired;
	_Atomic uintptr_t    fired_on;  /* pthread_self() of the last fault's thread */
} fault_vfs;

/*
** Counts one operation of kind k and answers whether it must fail: the
** armed one, or for a full disk any write from the armed one on.
*/
static inline int fault_hit(fault_kind k)
{
	if (!atomic_load(&fault_vfs.counting))
		return 0;
	int64_t n = atomic_fetch_add(&fault_vfs.count[k], 1) + 1;
	fault_kind armed = (fault_kind)atomic_load(&fault_vfs.kind);
	if (armed == FAULT_NONE)
		return 0;
	/* After the first fault, the second counts the operations of its kind. */
	fault_kind second = (fault_kind)atomic_load(&fault_vfs.kind2);
	if (second != FAULT_NONE && fault_counted_as[second] == k &&
	    atomic_load(&fault_vfs.first_fired) &&
	    atomic_fetch_add(&fault_vfs.count2, 1) + 1 == atomic_load(&fault_vfs.at2)) {
		atomic_fetch_add(&fault_vfs.fired, 1);
		return 1;
	}
	if (fault_counted_as[armed] != k)
		return 0;
	int64_t at = atomic_load(&fault_vfs.at);
	if (n == at || (armed == FAULT_FULL && n > at)) {
		atomic_fetch_add(&fault_vfs.fired, 1);
		atomic_store(&fault_vfs.fired_on, (uintptr_t)pthread_self());
		atomic_store(&fault_vfs.first_fired, 1);
		return 1;
	}
	return 0;
}

/* Starts counting from zero, with (kind, n) armed (FAULT_NONE: none). */
static inline void fault_arm(fault_kind kind, int64_t n)
{
	for (int k = 0; k < FAULT_KINDS; k++)
		atomic_store(&fault_vfs.count[k], 0);
	atomic_store(&fault_vfs.fired, 0);
	atomic_store(&fault_vfs.kind2, FAULT_NONE);
	atomic_store(&fault_vfs.first_fired, 0);
	atomic_store(&fault_vfs.count2, 0);
	atomic_store(&fault_vfs.at, n);
	atomic_store(&fault_vfs.kind, kind);
	atomic_store(&fault_vfs.counting, 1);
}

/*
** After fault_arm(kind, n): once that fault has fired, the mth operation
** of kind2 counted from then on fails too, once (not FAULT_FULL): a second
** failure while the store recovers from the first (its rollback, the
** retried open, the log's recovery when the file is opened again).
*/
static inline void fault_arm_then(fault_kind kind2, int64_t m)
{
	atomic_store(&fault_vfs.count2, 0);
	atomic_store(&fault_vfs.at2, m);
	atomic_store(&fault_vfs.kind2, kind2);
}

/* Whether the second fault (fault_arm_then) could be reached: the
** operations of its kind counted after the first fired. */
static inline int64_t fault_count_then(void)
{
	return atomic_load(&fault_vfs.count2);
}

/* Nothing fails from now on; the counts stay readable. */
static inline void fault_disarm(void)
{
	atomic_store(&fault_vfs.kind, FAULT_NONE);
	atomic_store(&fault_vfs.kind2, FAULT_NONE);
	atomic_store(&fault_vfs.counting, 0);
}

/*
** Stops counting (and failing) for a while: the test's own use of SQLite
** between two requests. Returns what fault_resume() takes back.
*/
static inline int fault_pause(void)
{
	return atomic_exchange(&fault_vfs.counting, 0);
}

static inline void fault_resume(int was)
{
	atomic_store(&fault_vfs.counting, was);
}

static inline int64_t fault_count(fault_kind counted)
{
	return atomic_load(&fault_vfs.count[counted]);
}

static inline int64_t fault_fired(void)
{
	return atomic_load(&fault_vfs.fired);
}

/* ---- SQLite's allocator -------------------------------------------------- */

static void *fault_sqlite_malloc(int n)
{
	return fault_hit(FAULT_SMALLOC) ? NULL : fault_vfs.mem.xMalloc(n);
}

static void fault_sqlite_free(void *p)
{
	fault_vfs.mem.xFree(p);
}

static void *fault_sqlite_realloc(void *p, int n)
{
	return fault_hit(FAULT_SMALLOC) ? NULL : fault_vfs.mem.xRealloc(p, n);
}

static int fault_sqlite_size(void *p)
{
	return fault_vfs.mem.xSize(p);
}

static int fault_sqlite_roundup(int n)
{
	return fault_vfs.mem.xRoundup(n);
}

static int fault_sqlite_init(void *app)
{
	return fault_vfs.mem.xInit(app);
}

static void fault_sqlite_shutdown(void *app)
{
	fault_vfs.mem.xShutdown(app);
}

/* ---- a file ---------------------------------------------------------------- */

typedef struct fault_file {
	sqlite3_file  base;
	sqlite3_file *real;   /* the wrapped VFS's file, right after this struct */
} fault_file;

#define FAULT_REAL(f) (((fault_file *)(f))->real)

static int fault_close(sqlite3_file *f)
{
	return FAULT_REAL(f)->pMethods->xClose(FAULT_REAL(f));
}

static int fault_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	if (fault_hit(FAULT_READ))
		return SQLITE_IOERR_READ;
	return FAULT_REAL(f)->pMethods->xRead(FAULT_REAL(f), buf, n, off);
}

static int fault_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	if (fault_hit(FAULT_WRITE))
		return atomic_load(&fault_vfs.kind) == FAULT_FULL ? SQLITE_FULL : SQLITE_IOERR_WRITE;
	return FAULT_REAL(f)->pMethods->xWrite(FAULT_REAL(f), buf, n, off);
}

static int fault_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	return FAULT_REAL(f)->pMethods->xTruncate(FAULT_REAL(f), size);
}

static int fault_sync(sqlite3_file *f, int flags)
{
	if (fault_hit(FAULT_SYNC))
		return SQLITE_IOERR_FSYNC;
	return FAULT_REAL(f)->pMethods->xSync(FAULT_REAL(f), flags);
}

static int fault_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	return FAULT_REAL(f)->pMethods->xFileSize(FAULT_REAL(f), size);
}

static int fault_lock(sqlite3_file *f, int level)
{
	return FAULT_REAL(f)->pMethods->xLock(FAULT_REAL(f), level);
}

static int fault_unlock(sqlite3_file *f, int level)
{
	return FAULT_REAL(f)->pMethods->xUnlock(FAULT_REAL(f), level);
}

static int fault_check_reserved(sqlite3_file *f, int *out)
{
	return FAULT_REAL(f)->pMethods->xCheckReservedLock(FAULT_REAL(f), out);
}

static int fault_file_control(sqlite3_file *f, int op, void *arg)
{
	return FAULT_REAL(f)->pMethods->xFileControl(FAULT_REAL(f), op, arg);
}

static int fault_sector_size(sqlite3_file *f)
{
	return FAULT_REAL(f)->pMethods->xSectorSize(FAULT_REAL(f));
}

static int fault_device(sqlite3_file *f)
{
	return FAULT_REAL(f)->pMethods->xDeviceCharacteristics(FAULT_REAL(f));
}

static int fault_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **pp)
{
	return FAULT_REAL(f)->pMethods->xShmMap(FAULT_REAL(f), page, size, extend, pp);
}

static int fault_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
	return FAULT_REAL(f)->pMethods->xShmLock(FAULT_REAL(f), offset, n, flags);
}

static void fault_shm_barrier(sqlite3_file *f)
{
	FAULT_REAL(f)->pMethods->xShmBarrier(FAULT_REAL(f));
}

static int fault_shm_unmap(sqlite3_file *f, int del)
{
	return FAULT_REAL(f)->pMethods->xShmUnmap(FAULT_REAL(f), del);
}

/* Never mapped: every read goes through xRead, where it can fail. */
static int fault_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
	(void)f, (void)off, (void)n;
	*pp = NULL;
	return SQLITE_OK;
}

static int fault_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	(void)f, (void)off, (void)p;
	return SQLITE_OK;
}

/* The methods, once per version the wrapped files may have (index 1..3). */
#define FAULT_IO(version) { \
	version, fault_close, fault_read, fault_write, fault_truncate, fault_sync, \
	fault_file_size, fault_lock, fault_unlock, fault_check_reserved, \
	fault_file_control, fault_sector_size, fault_device, fault_shm_map, \
	fault_shm_lock, fault_shm_barrier, fault_shm_unmap, fault_fetch, fault_unfetch }
static const sqlite3_io_methods fault_io[4] = {
	FAULT_IO(1), FAULT_IO(1), FAULT_IO(2), FAULT_IO(3),
};

/* ---- the VFS --------------------------------------------------------------- */

static int fault_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
		      int *out_flags)
{
	fault_file *ff = (fault_file *)f;
	(void)vfs;
	ff->base.pMethods = NULL;  /* SQLite calls no xClose after a failed open */
	ff->real = (sqlite3_file *)(ff + 1);
	if (fault_hit(FAULT_OPEN))
		return SQLITE_CANTOPEN;
	int rc = fault_vfs.real->xOpen(fault_vfs.real, name, ff->real, flags, out_flags);
	if (rc == SQLITE_OK && ff->real->pMethods) {
		int v = ff->real->pMethods->iVersion;
		ff->base.pMethods = &fault_io[v < 1 ? 1 : v > 3 ? 3 : v];
	}
	return rc;
}

static int fault_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	(void)vfs;
	return fault_vfs.real->xDelete(fault_vfs.real, name, sync_dir);
}

static int fault_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	return fault_vfs.real->xAccess(fault_vfs.real, name, flags, out);
}

static int fault_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	return fault_vfs.real->xFullPathname(fault_vfs.real, name, n, out);
}

static void *fault_dlopen(sqlite3_vfs *vfs, const char *name)
{
	(void)vfs;
	return fault_vfs.real->xDlOpen(fault_vfs.real, name);
}

static void fault_dlerror(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	fault_vfs.real->xDlError(fault_vfs.real, n, out);
}

static void (*fault_dlsym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
	(void)vfs;
	return fault_vfs.real->xDlSym(fault_vfs.real, h, sym);
}

static void fault_dlclose(sqlite3_vfs *vfs, void *h)
{
	(void)vfs;
	fault_vfs.real->xDlClose(fault_vfs.real, h);
}

static int fault_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return fault_vfs.real->xRandomness(fault_vfs.real, n, out);
}

static int fault_sleep(sqlite3_vfs *vfs, int us)
{
	(void)vfs;
	return fault_vfs.real->xSleep(fault_vfs.real, us);
}

static int fault_current_time(sqlite3_vfs *vfs, double *out)
{
	(void)vfs;
	return fault_vfs.real->xCurrentTime(fault_vfs.real, out);
}

static int fault_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return fault_vfs.real->xGetLastError(fault_vfs.real, n, out);
}

static int fault_current_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	(void)vfs;
	return fault_vfs.real->xCurrentTimeInt64(fault_vfs.real, out);
}

/*
** Installs the counting allocator and the shim as SQLite's default VFS.
** Call once, before SQLite is first used. Returns 0, or -1 (SQLite was
** initialised already, or has no default VFS).
*/
static inline int fault_vfs_install(void)
{
	static const sqlite3_mem_methods ours = {
		fault_sqlite_malloc, fault_sqlite_free, fault_sqlite_realloc, fault_sqlite_size,
		fault_sqlite_roundup, fault_sqlite_init, fault_sqlite_shutdown, NULL,
	};
	if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &fault_vfs.mem) != SQLITE_OK ||
	    sqlite3_config(SQLITE_CONFIG_MALLOC, &ours) != SQLITE_OK)
		return -1;
	sqlite3_vfs *real = sqlite3_vfs_find(NULL);
	if (!real || real->iVersion < 2)
		return -1;
	fault_vfs.real = real;
	sqlite3_vfs *v = &fault_vfs.vfs;
	v->iVersion = 2;
	v->szOsFile = (int)sizeof(fault_file) + real->szOsFile;
	v->mxPathname = real->mxPathname;
	v->zName = "a2m-fault";
	v->xOpen = fault_open;
	v->xDelete = fault_delete;
	v->xAccess = fault_access;
	v->xFullPathname = fault_full_pathname;
	v->xDlOpen = fault_dlopen;
	v->xDlError = fault_dlerror;
	v->xDlSym = fault_dlsym;
	v->xDlClose = fault_dlclose;
	v->xRandomness = fault_randomness;
	v->xSleep = fault_sleep;
	v->xCurrentTime = fault_current_time;
	v->xGetLastError = fault_last_error;
	v->xCurrentTimeInt64 = fault_current_time64;
	return sqlite3_vfs_register(v, 1) == SQLITE_OK ? 0 : -1;
}

#endif
