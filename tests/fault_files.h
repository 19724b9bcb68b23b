/*
** fault_files.h — failing files outside SQLite for tests/test_faults.c:
** the system calls liba2m makes itself, which in the workload are those of
** the procedural mirror (src/store/mirror.c: its directory, its temporary
** files, their fsync and rename, the removal of a stale file, the reads
** that compare a file with what it should hold).
**
** test_faults is linked with -Wl,--wrap for each call below (the Makefile's
** FAULT_WRAP), and links liba2m-test.a statically, so every call liba2m's
** own code makes lands here (the mirror's, and the log descriptor group
** commit syncs through, src/store/sqlite_sync.c); SQLite's, jansson's and libc's own calls do
** not (they are in shared libraries). Each is counted as FAULT_MIRROR while
** the VFS counts (fault_vfs.h: from fault_arm() to fault_disarm(), not
** while paused), and the armed one fails once as the disk would make it
** fail: -1 with ENOSPC for a write or a directory made, EIO otherwise;
** fdatasync, which only group commit calls, counts as FAULT_LOGSYNC. The
** standard descriptors pass untouched (a log line, the alarm's message).
*/
#ifndef A2M_TEST_FAULT_FILES_H
#define A2M_TEST_FAULT_FILES_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "fault_vfs.h"

int     __real_open(const char *path, int flags, ...);
int     __real_openat(int dirfd, const char *path, int flags, ...);
ssize_t __real_read(int fd, void *buf, size_t n);
ssize_t __real_write(int fd, const void *buf, size_t n);
int     __real_fsync(int fd);
int     __real_fdatasync(int fd);
int     __real_fchmod(int fd, mode_t mode);
int     __real_mkdir(const char *path, mode_t mode);
int     __real_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
int     __real_unlinkat(int dirfd, const char *path, int flags);

int     __wrap_open(const char *path, int flags, ...);
int     __wrap_openat(int dirfd, const char *path, int flags, ...);
ssize_t __wrap_read(int fd, void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
int     __wrap_fsync(int fd);
int     __wrap_fdatasync(int fd);
int     __wrap_fchmod(int fd, mode_t mode);
int     __wrap_mkdir(const char *path, mode_t mode);
int     __wrap_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
int     __wrap_unlinkat(int dirfd, const char *path, int flags);

/* 1 (errno set to err) when this call is the one to fail. */
static int fault_file_hit(int err)
{
	if (!fault_hit(FAULT_MIRROR))
		return 0;
	errno = err;
	return 1;
}

/* The mode an open passes only when it may create the file. */
#define FAULT_OPEN_MODE(flags, last, mode) do { \
	if ((flags) & (O_CREAT | O_TMPFILE)) { \
		va_list ap_; \
		va_start(ap_, last); \
		mode = (mode_t)va_arg(ap_, unsigned int); \
		va_end(ap_); \
	} \
} while (0)

int __wrap_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	FAULT_OPEN_MODE(flags, flags, mode);
	if (fault_file_hit(EIO))
		return -1;
	return __real_open(path, flags, mode);
}

int __wrap_openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	FAULT_OPEN_MODE(flags, flags, mode);
	if (fault_file_hit(EIO))
		return -1;
	return __real_openat(dirfd, path, flags, mode);
}

ssize_t __wrap_read(int fd, void *buf, size_t n)
{
	if (fd > 2 && fault_file_hit(EIO))
		return -1;
	return __real_read(fd, buf, n);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
	if (fd > 2 && fault_file_hit(ENOSPC))
		return -1;
	return __real_write(fd, buf, n);
}

int __wrap_fsync(int fd)
{
	return fault_file_hit(EIO) ? -1 : __real_fsync(fd);
}

/* Group commit's sync of the log (sqlite_sync.c): a kind of its own, so the
** mirror's sweep does not poison the store it checks. */
int __wrap_fdatasync(int fd)
{
	if (!fault_hit(FAULT_LOGSYNC))
		return __real_fdatasync(fd);
	errno = EIO;
	return -1;
}

int __wrap_fchmod(int fd, mode_t mode)
{
	return fault_file_hit(EIO) ? -1 : __real_fchmod(fd, mode);
}

int __wrap_mkdir(const char *path, mode_t mode)
{
	return fault_file_hit(ENOSPC) ? -1 : __real_mkdir(path, mode);
}

int __wrap_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
	return fault_file_hit(EIO) ? -1 : __real_renameat(olddirfd, oldpath, newdirfd, newpath);
}

int __wrap_unlinkat(int dirfd, const char *path, int flags)
{
	return fault_file_hit(EIO) ? -1 : __real_unlinkat(dirfd, path, flags);
}

#endif
