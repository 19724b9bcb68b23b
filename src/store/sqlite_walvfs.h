/*
** sqlite_walvfs.h — a VFS shim over SQLite's "unix" that writes a commit's
** log frames with one system call instead of two per page.
**
** sqlite_walvfs.c explains what it buffers, when it writes, and why that is
** as safe as writing each frame at once.
*/
#ifndef A2M_STORE_SQLITE_WALVFS_H
#define A2M_STORE_SQLITE_WALVFS_H

#include <sqlite3.h>

/*
** The shim's VFS name, registering it (not as the default) on the first
** call; pass it to sqlite3_open_v2. NULL when it cannot be had (no "unix"
** VFS, out of memory): the caller opens with SQLite's default instead.
** Safe to call from several threads.
*/
const char *a2m_sqlite_walvfs_name(void);

/*
** Tells the shim that db's commits are synced (synchronous=FULL, or group
** commit's own fdatasync): its log then grows 1 MiB at a time, written as
** zeros ahead of the frames, so that a commit's sync has no new size or
** blocks to record. Returns SQLITE_OK, or SQLITE_NOTFOUND when db was not
** opened through the shim (nothing changes).
*/
int a2m_sqlite_walvfs_durable(sqlite3 *db);

/*
** The shim's figures since the process started, for tests and benchmarks:
** how many times buffered log bytes were written (*flushes) and how many
** writes SQLite asked for that went into the buffer (*appends). Either
** pointer may be NULL.
*/
void a2m_sqlite_walvfs_counts(unsigned long long *flushes, unsigned long long *appends);

#endif
