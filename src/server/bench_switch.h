/*
** bench_switch.h — the ranking switches `a2m bench` turns between runs of
** one query, in this process, so that two ways of answering are timed
** side by side (the CLI reaches the rank layer only through the server's).
*/
#ifndef A2M_BENCH_SWITCH_H
#define A2M_BENCH_SWITCH_H

#include <stddef.h>

/*
** BM25's pruning for every scorer of the process (rank/scorer.h,
** a2m_bm25_blockmax): 0 term at a time, 1 document at a time (MaxScore)
** for queries of 16 384 postings or more (the default), 2 document at a
** time for every pruned query, 3 the same walked by WAND with block-max.
*/
void a2m_server_bench_blockmax(int mode);

/*
** What BM25's document-at-a-time walks did in this process so far
** (rank/scorer.h a2m_bm25_walked): the walks run, their steps, the
** postings they scored exactly, the blocks they decoded. A recall may walk
** more than once: when it asks again (retries), and when it ran under the
** shared lock and had to write (its touches due, a promotion earned), since
** the handle then runs it again under the exclusive one (server/handle.c).
*/
typedef struct a2m_server_walked {
	size_t walks, steps, scored, filled;
	size_t retries;  /* recalls that asked again (a2m_stack_pruned_retries_all) */
	size_t queries;  /* the bench's own count: recalls that walked at least once */
} a2m_server_walked;

void a2m_server_bench_walked(a2m_server_walked *out);

/*
** On nonzero, every vector scorer of the process searches exactly, whatever
** its vector_search (rank/scorer.h, a2m_vector_force_exact); 0 restores
** each one's own: `a2m bench vectors` times both modes on one store.
*/
void a2m_server_bench_vector_exact(int on);

#endif
