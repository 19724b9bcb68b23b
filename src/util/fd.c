/*
** fd.c — writing to file descriptors (see fd.h).
*/
#include <errno.h>
#include <unistd.h>

#include "util/fd.h"

int a2m_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}
