/*
** a2m.c — the handle of the public API (include/a2m.h): builds a server from
** a config (store engine, scorer, stack, limits) and serialises every call on
** one mutex, which is what makes a handle safe to share between threads.
*/
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "protocol/protocol.h"
#include "rank/scorer.h"
#include "rpc/rpc.h"
#include "stack/stack.h"
#include "store/store.h"

struct a2m {
	pthread_mutex_t mu;
	a2m_server      srv;
	a2m_notify_fn   notify;
	void           *notify_user;
};

/* The one place the defaults live; describe reports whatever is in force. */
void a2m_config_init(a2m_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->engine = A2M_ENGINE_SQLITE;
	cfg->path = "a2m.db";
	cfg->name = "a2m";
	cfg->max_records_per_call = 1000;
	cfg->max_content_length = 1048576;
	cfg->max_recall_limit = 1000;
	cfg->default_recall_limit = 10;
}

static int open_fail(char **errmsg, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int open_fail(char **errmsg, int code, const char *fmt, ...)
{
	if (errmsg) {
		char buf[512];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(buf, sizeof buf, fmt, ap);
		va_end(ap);
		*errmsg = strdup(buf);
	}
	return code;
}

int a2m_open(const a2m_config *cfg_in, a2m **out, char **errmsg)
{
	a2m_config cfg;
	a2m_config_init(&cfg);
	*out = NULL;
	if (errmsg)
		*errmsg = NULL;
	if (cfg_in) {
		/* Zero or NULL fields keep their default. */
		cfg.engine = cfg_in->engine;
		cfg.sqlite_synchronous_normal = cfg_in->sqlite_synchronous_normal;
		if (cfg_in->path)
			cfg.path = cfg_in->path;
		if (cfg_in->name)
			cfg.name = cfg_in->name;
		if (cfg_in->max_records_per_call > 0)
			cfg.max_records_per_call = cfg_in->max_records_per_call;
		if (cfg_in->max_content_length > 0)
			cfg.max_content_length = cfg_in->max_content_length;
		if (cfg_in->max_recall_limit > 0)
			cfg.max_recall_limit = cfg_in->max_recall_limit;
		if (cfg_in->default_recall_limit > 0)
			cfg.default_recall_limit = cfg_in->default_recall_limit;
	}
	if (cfg.default_recall_limit > cfg.max_recall_limit)
		cfg.default_recall_limit = cfg.max_recall_limit;

	char err[256] = "";
	a2m_store *store = NULL;
	int rc;
	switch (cfg.engine) {
	case A2M_ENGINE_MEMORY:
		rc = a2m_store_memory_open(&store, err, sizeof err);
		break;
	case A2M_ENGINE_SQLITE:
		rc = a2m_store_sqlite_open(cfg.path, !cfg.sqlite_synchronous_normal, &store,
					   err, sizeof err);
		break;
	default:
		return open_fail(errmsg, A2M_INVALID_PARAMS, "unknown storage engine %d",
				 (int)cfg.engine);
	}
	if (rc)
		return open_fail(errmsg, rc, "cannot open store: %s", err);

	a2m_scorer *scorer = a2m_scorer_lexical_new();
	if (!scorer) {
		store->ops->close(store);
		return open_fail(errmsg, A2M_INTERNAL_ERROR, "out of memory");
	}
	a2m_stack_config scfg = {0};
	a2m_stack *stack = a2m_stack_new(store, scorer, &scfg);
	a2m *h = calloc(1, sizeof *h);
	char *name = strdup(cfg.name);
	if (!stack || !h || !name) {
		a2m_stack_free(stack);
		free(h);
		free(name);
		return open_fail(errmsg, A2M_INTERNAL_ERROR, "out of memory");
	}
	pthread_mutex_init(&h->mu, NULL);
	h->srv.name = name;
	h->srv.caps = A2M_CAP_CORE;
	h->srv.stack = stack;
	h->srv.limits.max_records_per_call = cfg.max_records_per_call;
	h->srv.limits.max_content_length = cfg.max_content_length;
	h->srv.limits.max_recall_limit = cfg.max_recall_limit;
	h->srv.limits.default_recall_limit = cfg.default_recall_limit;
	*out = h;
	return 0;
}

char *a2m_handle_n(a2m *h, const char *message, size_t len)
{
	pthread_mutex_lock(&h->mu);
	char *out = a2m_rpc_handle(&h->srv, message, len, NULL);
	pthread_mutex_unlock(&h->mu);
	return out;
}

char *a2m_handle(a2m *h, const char *message)
{
	return a2m_handle_n(h, message, strlen(message));
}

void a2m_set_notify(a2m *h, a2m_notify_fn fn, void *user)
{
	pthread_mutex_lock(&h->mu);
	h->notify = fn;
	h->notify_user = user;
	pthread_mutex_unlock(&h->mu);
}

void a2m_close(a2m *h)
{
	if (!h)
		return;
	a2m_stack_free(h->srv.stack);
	free((char *)h->srv.name);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

void a2m_free(void *p)
{
	free(p);
}

const char *a2m_version(void)
{
	return A2M_VERSION;
}
