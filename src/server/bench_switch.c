/*
** bench_switch.c — the ranking switches of `a2m bench` (see bench_switch.h).
*/
#include "server/bench_switch.h"
#include "rank/scorer.h"
#include "stack/stack.h"

void a2m_server_bench_blockmax(int mode)
{
	a2m_bm25_blockmax(mode);
}

void a2m_server_bench_walked(a2m_server_walked *out)
{
	a2m_bm25_walked w;
	a2m_bm25_blockmax_walked(&w);
	*out = (a2m_server_walked){.walks = w.walks, .steps = w.steps, .scored = w.scored,
				   .filled = w.filled,
				   .retries = (size_t)a2m_stack_pruned_retries_all()};
}

void a2m_server_bench_vector_exact(int on)
{
	a2m_vector_force_exact(on);
}
