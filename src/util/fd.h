/*
** fd.h — writing to file descriptors: the stdio transport's responses, the
** MCP bridge's messages and the procedural mirror's files all go through it.
*/
#ifndef A2M_UTIL_FD_H
#define A2M_UTIL_FD_H

#include <stddef.h>

/*
** Writes all len bytes of buf to fd, again after a short write or an
** interrupted one (EINTR). Returns 0, or -1 with errno set when a write
** failed (EPIPE: the reader is gone; the caller ignores SIGPIPE).
*/
int a2m_write_all(int fd, const void *buf, size_t len);

#endif
