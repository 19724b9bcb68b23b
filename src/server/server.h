/*
** server.h — the handle of the public API (include/a2m.h), as the two files
** of the server layer share it: open.c builds it from the options,
** handle.c runs each call on it.
*/
#ifndef A2M_SERVER_SERVER_H
#define A2M_SERVER_SERVER_H

#include <pthread.h>

#include "a2m.h"
#include "protocol/protocol.h"

struct a2m {
	/* Writers first: under a steady stream of recalls a write must still
	** get its turn (glibc's default lets readers overtake it forever). */
	pthread_rwlock_t lock;
	a2m_server      srv;
	a2m_notify_fn   notify;
	void           *notify_user;
};

#endif
