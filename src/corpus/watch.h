/*
** watch.h — `a2m corpus --watch`: the folder followed with inotify while
** the server runs, each change synced into the index (index.h) within a
** fraction of a second, without reading anything that did not change.
**
** Every directory a sync walks is watched as it is entered (the indexer's
** on_dir hook), the root's first walk included, so a directory created
** later is watched by the sync that indexes it, and nothing created while
** a walk runs goes unseen. A change names a path; the paths changed within
** a short quiet spell are synced together, each once (a directory covers
** what is under it). A lost event (the kernel's queue overflowed) syncs
** the whole folder, which reads only what changed.
*/
#ifndef A2M_CORPUS_WATCH_H
#define A2M_CORPUS_WATCH_H

#include <stddef.h>

#include "corpus/index.h"

/* How long the folder must be quiet before a change is synced, and the
** longest a change waits while it is not. */
#define A2M_WATCH_QUIET_MS 50
#define A2M_WATCH_MAX_WAIT_MS 300

typedef struct a2m_corpus_watch a2m_corpus_watch;

/*
** Makes the watch of c's folder and hooks it into c's walks: call it
** before the first sync, which then watches every directory it walks.
** Returns 0, or -1 with a reason in err (no inotify).
*/
int a2m_corpus_watch_new(a2m_corpus *c, a2m_corpus_watch **out, char *err, size_t errlen);

/*
** Starts following changes on a thread of its own (every signal blocked),
** which from then on is the only user of c until a2m_corpus_watch_free.
** Returns 0, or -1 with a reason in err.
*/
int a2m_corpus_watch_start(a2m_corpus_watch *w, char *err, size_t errlen);

/* Stops the thread (after the sync it may be running), unhooks and frees
** w. NULL is a no-op. */
void a2m_corpus_watch_free(a2m_corpus_watch *w);

#endif
