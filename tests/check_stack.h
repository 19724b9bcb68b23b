/*
** check_stack.h — what the unit tests that build a stack themselves
** (tests/test_blend_least.c, test_salience_bound.c) share: an empty store,
** and a BM25 scorer attached to it with the default tiers (header-only).
*/
#ifndef A2M_TEST_CHECK_STACK_H
#define A2M_TEST_CHECK_STACK_H

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "rank/scorer.h"
#include "stack/stack.h"
#include "store/store.h"

/*
** An empty store: memory, or SQLite at path (its old file removed first).
** NULL, with why said, when it cannot be opened.
*/
static inline a2m_store *check_store_empty(int sqlite, const char *path)
{
	char err[256];
	a2m_store *s = NULL;
	check_remove_db(path);
	int rc = sqlite ? a2m_store_sqlite_open(path, NULL, &s, err, sizeof err)
			: a2m_store_memory_open(&s, err, sizeof err);
	if (rc) {
		fprintf(stderr, "  open: %s\n", err);
		return NULL;
	}
	return s;
}

/*
** A BM25 scorer whose indexer s keeps, and *cfg zeroed with the default
** tiers. NULL, with s closed, when either cannot be had.
*/
static inline a2m_scorer *check_bm25_attach(a2m_store *s, a2m_stack_config *cfg)
{
	a2m_scorer *bm = a2m_scorer_bm25_new(NULL);
	memset(cfg, 0, sizeof *cfg);
	if (!bm || s->ops->index_attach(s, bm->indexer) != 0 || a2m_tiers_default(&cfg->tiers) != 0) {
		s->ops->close(s);
		if (bm)
			bm->destroy(bm);
		return NULL;
	}
	return bm;
}

#endif
