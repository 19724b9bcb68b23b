/*
** server.h — the handle of the public API (include/a2m.h), as the files
** of the server layer share it: open.c builds it from the options,
** handle.c runs each call on it; and the parts of opening that check.c
** (`a2m check`) reuses to open a store exactly as a server would.
*/
#ifndef A2M_SERVER_SERVER_H
#define A2M_SERVER_SERVER_H

#include <pthread.h>
#include <stdatomic.h>

#include "a2m.h"
#include "protocol/protocol.h"
#include "rank/scorer.h"
#include "server/config.h"
#include "stack/layout.h"
#include "store/store.h"

struct a2m {
	/* Writers first: under a steady stream of recalls a write must still
	** get its turn (glibc's default lets readers overtake it forever). */
	pthread_rwlock_t lock;
	a2m_server      srv;
	/* In-process writers from several threads (deferred.c, a2m_deferred_join):
	** while one runs a write, the others queue theirs here, and it runs them
	** after its own, in one transaction. Under join_mu. */
	pthread_mutex_t  join_mu;
	pthread_cond_t   join_cv;
	struct deferred *join_head, *join_tail;
	int              joining;     /* a caller is running writes */
	/* Joint transactions whose COMMIT failed since one last succeeded, and
	** the writes they failed (deferred.c: logged once a run of them, at
	** its start and its end). Under the handle's exclusive lock. */
	uint64_t         commits_failed, commits_failed_writes;
	a2m_store      *watched;     /* borrowed from the stack: it tells of other
	                                servers' commits (store.h, watch), which a
	                                channel that can push is told of */
	int             watching;    /* its watch runs: a notify callback is set */
	/* The shared store's version when a2m_sweep last reread the earliest
	** expiry: atomic, since a2m_sweep may be called from any thread. */
	_Atomic uint64_t expiry_seen;
	a2m_notify_fn   notify;
	void           *notify_user;
	/* A delegated handle (server/delegate.h): every call goes to it, and
	** srv is empty. NULL for a handle of a2m_open. */
	const struct a2m_delegate *delegate;
	void           *delegate_ctx;
};

/* ---- open.c's steps, shared with check.c ---- */

/*
** The configuration as it will be served: the caller's options over the
** file's (cfg->config_file) over the defaults, the tier layout (filled),
** the capabilities and the metric. Returns 0, or a status with a message
** in err.
*/
int a2m_server_resolve(a2m_config *cfg, a2m_tier_layout *layout, unsigned *caps,
		       a2m_metric *metric, char *err, size_t errlen);

/*
** Opens the store cfg names, as a2m_open would (its engine, path,
** durability, read-only flag, embedder's index, merges, and with SQLite
** the procedural mirror of layout's procedural tier). indexer (NULL:
** none): the analyser whose index will be attached, which a new SQLite
** file gets with its schema (a2m_sqlite_options.indexer). Returns A2M_OK
** and sets *store, or a status with a message in err.
*/
int a2m_server_open_store(const a2m_config *cfg, const a2m_tier_layout *layout,
			  const a2m_indexer *indexer, a2m_store **store, char *err,
			  size_t errlen);

/*
** The procedural mirror a server of cfg keeps (SQLite on a file, and a
** procedural tier in layout): *dir (malloc'd, beside the database) and
** *tier (borrowed from layout); both NULL when it keeps none. Returns 0,
** or -1 when memory runs out.
*/
int a2m_server_mirror(const a2m_config *cfg, const a2m_tier_layout *layout, char **dir,
		      const char **tier);

/*
** The caller's vectors' pool per result in the quantized mode (the options
** vector_search and vector_pool), 0 when the search is exact.
*/
size_t a2m_server_vector_pool(const a2m_config *cfg);

/*
** The scorer: text ranked by ranking ("bm25", the default, or "lexical"),
** fused with the caller's vectors under metric (searched exactly when
** vector_pool is 0, else in the quantized mode: a2m_scorer_vector_new),
** and with generated vectors
** when generated is set, those weighing embed_weight percent against the
** text's rest (the option embed_weight; docs/EMBEDDINGS.md); its indexer
** is the analyser a store keeps its index with. NULL with a message in
** err. Free with scorer->destroy.
*/
a2m_scorer *a2m_server_scorer(const char *ranking, a2m_metric metric, size_t vector_pool,
			      int generated, int helper_threads, int64_t embed_weight, char *err,
			      size_t errlen);

/* ---- what handle.c and deferred.c (deferred.h) share ---- */

/* A call already run that owes the sync of ticket; id copied for an
** error answer. NULL when memory runs out. deferred.c. */
void *a2m_deferred_applied(uint64_t ticket, const json_t *id);

/* A write queued unrun, for the call context call (copied); takes req
** (zeroed). NULL when memory runs out (req untouched). deferred.c. */
struct a2m_rpc_request;
void *a2m_deferred_queue(const a2m_call *call, struct a2m_rpc_request *req);

/*
** A write of an in-process caller (no transport's batching: a2m_handle,
** a2m_handle_network) on a handle whose writes may join. When no other
** caller is running writes, returns A2M_JOIN_RUN: the caller runs its
** write as always, then calls a2m_deferred_join_drain() once it released
** the handle's lock. Otherwise queues it for the caller running writes,
** which runs every write queued meanwhile in one joint transaction; waits
** for that, then for its sync; returns the status with the answer in
** *reply, as a2m_handle does (req is taken). A2M_JOIN_ALONE when memory
** runs out (req untouched): the caller runs its write as always, and
** drains nothing. deferred.c.
*/
#define A2M_JOIN_RUN   (-1000)
#define A2M_JOIN_ALONE (-1001)
int a2m_deferred_join(a2m *h, const a2m_call *call, struct a2m_rpc_request *req,
		      char **reply);

/* After a write that a2m_deferred_join() returned -1 for: runs what other
** callers queued meanwhile, in batches, then lets the next caller run. */
void a2m_deferred_join_drain(a2m *h);


/*
** After a write's lock is released: a record that expired since is
** removed, one batch of them (a call never waits for a large sweep).
*/
void a2m_handle_swept(a2m *h);

#endif
