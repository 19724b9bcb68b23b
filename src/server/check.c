/*
** check.c — `a2m check` (see check.h and docs/CHECK.md): a store checked as
** a server of the same options would open it, repaired, and checked again.
**
** The store is opened through open.c's own steps, so the check looks at
** what a server would use: the same file, the tier layout of the same
** configuration (which names the mirrored tier), the same analyser (whose
** version the index must carry). The first pass opens the file read-only:
** it changes nothing, and can run while a server is using the file (it
** reads one snapshot). A repair opens it read-write, which is also what
** migrates an older file and reconciles the mirror at open, exactly as a
** server's start would; then the engine rebuilds what the first pass found
** wrong (store.h, repair).
**
** Groups are checked here rather than by the engine: that a group never
** spans tiers is a rule about where records are, which the stack keeps
** (flow.c); the engine only holds them. It is reported, never repaired: a
** check does not move records.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server/check.h"
#include "server/server.h"
#include "stack/stack.h"
#include "store/store_check.h"
#include "util/grow.h"

/* Areas a repair can rebuild: all but the groups (policy, not derived data). */
#define REPAIRABLE (((1u << A2M_CHECK_AREAS) - 1) & ~(1u << A2M_CHECK_GROUPS))

/* Groups spanning tiers reported one by one before the rest are only counted. */
#define MAX_EXAMPLES 8

/* One pass: its phase, and the areas it found problems in. */
typedef struct pass {
	a2m_check_run  *run;
	a2m_check_phase phase;
	unsigned        problems;
} pass;

static void on_report(void *ctx, a2m_check_area area, int problem, const char *msg)
{
	pass *p = ctx;
	if (problem)
		p->problems |= 1u << area;
	if (p->run->report)
		p->run->report(p->run->ctx, p->phase, area, problem, msg);
}

static void on_progress(void *ctx, a2m_check_area area, const char *unit, int64_t done,
			int64_t total)
{
	pass *p = ctx;
	p->run->progress(p->run->ctx, p->phase, area, unit, done, total);
}

/* What a pass is given: the resolved options and what they imply. */
typedef struct setup {
	a2m_config      *cfg;      /* resolved (the file's options in) */
	a2m_tier_layout  layout;
	a2m_scorer      *scorer;   /* its indexer is the index's analyser */
	char            *mirror_dir;
	const char      *mirror_tier;
	size_t           history_keep;  /* x-history's bound, when the capability is on */
} setup;

/* ---- groups ------------------------------------------------------------ */

/* One record of a group: which group, in which tier. */
typedef struct member {
	char *group, *tier;
} member;

typedef struct members {
	member *v;
	size_t  n, cap;
	int     oom;
	int64_t seen;
	a2m_check_meter meter;
} members;

static int member_visit(const a2m_record *rec, void *ctx)
{
	members *m = ctx;
	a2m_check_meter_at(&m->meter, ++m->seen);
	if (!rec->group)
		return 0;
	if (a2m_grow((void **)&m->v, &m->cap, m->n + 1, sizeof *m->v))
		goto oom;
	member *e = &m->v[m->n];
	e->group = strdup(rec->group);
	e->tier = rec->tier ? strdup(rec->tier) : NULL;
	if (!e->group || (rec->tier && !e->tier)) {
		free(e->group);
		free(e->tier);
		goto oom;
	}
	m->n++;
	return 0;
oom:
	m->oom = 1;
	return A2M_INTERNAL_ERROR;
}

static int cmp_members(const void *a, const void *b)
{
	const member *x = a, *y = b;
	int c = strcmp(x->group, y->group);
	if (c)
		return c;
	if (!x->tier || !y->tier)
		return (x->tier != NULL) - (y->tier != NULL);
	return strcmp(x->tier, y->tier);
}

static int same_tier(const char *a, const char *b)
{
	return (!a || !b) ? a == b : strcmp(a, b) == 0;
}

/* Every group whose records are not all in one tier. */
static void check_groups(a2m_store *s, const a2m_check_options *o)
{
	members m;
	a2m_query q;
	int64_t total = 0;
	memset(&m, 0, sizeof m);
	memset(&q, 0, sizeof q);
	if (o->progress && s->ops->count(s, &q, &total) != 0)
		total = 0;
	a2m_check_meter_start(&m.meter, o, A2M_CHECK_GROUPS, "records", total);
	int rc = s->ops->scan(s, &q, member_visit, &m);
	if (!rc && !m.oom)
		a2m_check_meter_end(&m.meter, m.seen);
	if (rc || m.oom) {
		a2m_check_say(o, A2M_CHECK_GROUPS, 1, "cannot read the records: %s",
			      m.oom ? "out of memory" : s->errmsg);
	} else {
		size_t groups = 0, split = 0;
		if (m.n)
			qsort(m.v, m.n, sizeof *m.v, cmp_members);
		for (size_t i = 0, j; i < m.n; i = j) {
			size_t tiers = 1;
			for (j = i + 1; j < m.n && strcmp(m.v[j].group, m.v[i].group) == 0; j++)
				tiers += !same_tier(m.v[j].tier, m.v[j - 1].tier);
			groups++;
			if (tiers == 1 || split++ >= MAX_EXAMPLES)
				continue;
			char g[A2M_CHECK_QUOTED], t1[A2M_CHECK_QUOTED], t2[A2M_CHECK_QUOTED];
			a2m_check_say(o, A2M_CHECK_GROUPS, 1, "group %s: %zu records in %zu tiers "
				      "(%s ... %s)", a2m_check_quote(m.v[i].group, strlen(m.v[i].group),
								     g, sizeof g), j - i, tiers,
				      m.v[i].tier ? a2m_check_quote(m.v[i].tier, strlen(m.v[i].tier), t1,
								    sizeof t1) : "(none)",
				      m.v[j - 1].tier ? a2m_check_quote(m.v[j - 1].tier,
									strlen(m.v[j - 1].tier), t2,
									sizeof t2) : "(none)");
		}
		if (split > MAX_EXAMPLES)
			a2m_check_say(o, A2M_CHECK_GROUPS, 1, "%zu groups across tiers in all", split);
		if (!split)
			a2m_check_say(o, A2M_CHECK_GROUPS, 0, "%zu group%s of %zu records, each in one tier",
				      groups, groups == 1 ? "" : "s", m.n);
	}
	for (size_t i = 0; i < m.n; i++) {
		free(m.v[i].group);
		free(m.v[i].tier);
	}
	free(m.v);
}

/* ---- the passes ----------------------------------------------------------- */

/* st->cfg opened read-only (check) or read-write (repair). NULL after a finding. */
static a2m_store *open_as(const setup *st, int read_only, const a2m_check_options *o)
{
	char why[480];
	a2m_store *s = NULL;
	a2m_config *cfg = a2m_config_copy(st->cfg);
	if (!cfg || a2m_config_set(cfg, "read_only", read_only ? "1" : "0") != A2M_OK) {
		a2m_check_say(o, A2M_CHECK_FILE, 1, "out of memory");
	} else if (a2m_server_open_store(cfg, &st->layout, o->ix, &s, why, sizeof why) != A2M_OK) {
		/* A deployment is named by its open's message (never its connection string). */
		if (strcmp(cfg->engine, "postgres") == 0)
			a2m_check_say(o, A2M_CHECK_FILE, 1, "cannot open the deployment: %s", why);
		else
			a2m_check_say(o, A2M_CHECK_FILE, 1, "cannot open %s: %s", cfg->path, why);
		s = NULL;
	}
	a2m_config_free(cfg);
	return s;
}

static void options_of(const setup *st, pass *p, a2m_check_options *o)
{
	memset(o, 0, sizeof *o);
	o->ix = st->scorer->indexer;
	o->procedural_dir = st->mirror_dir;
	o->procedural_tier = st->mirror_tier;
	/* The extensions' data checked by the rules the stack writes it by. */
	o->fingerprint = a2m_stack_fingerprint;
	o->history_keep = st->history_keep;
	o->report = on_report;
	o->progress = p->run->progress ? on_progress : NULL;
	o->ctx = p;
}

/* A check of the store as it is. Returns the areas with problems. */
static unsigned check_pass(const setup *st, a2m_check_run *run, a2m_check_phase phase)
{
	pass p = {run, phase, 0};
	a2m_check_options o;
	options_of(st, &p, &o);
	a2m_store *s = open_as(st, 1, &o);
	if (!s)
		return p.problems;
	if (!s->ops->check) {
		a2m_check_say(&o, A2M_CHECK_FILE, 0, "the %s engine has no check of its own",
			      s->ops->engine);
	} else if (s->ops->check(s, &o) != 0 && !p.problems) {
		a2m_check_say(&o, A2M_CHECK_FILE, 1, "%s", s->errmsg);
	}
	if (!o.ix)
		a2m_check_say(&o, A2M_CHECK_INDEX, 0, "not kept by this configuration (ranking %s)",
			      st->cfg->ranking ? st->cfg->ranking : "?");
	check_groups(s, &o);
	s->ops->close(s);
	return p.problems;
}

/* Rebuilds the areas of mask. Returns 0, or -1 when the store could not be repaired. */
static int repair_pass(const setup *st, a2m_check_run *run, unsigned mask)
{
	pass p = {run, A2M_CHECK_REPAIRING, 0};
	a2m_check_options o;
	options_of(st, &p, &o);
	/* A read-write open migrates, and reconciles the mirror, as a server's would. */
	a2m_store *s = open_as(st, 0, &o);
	if (!s)
		return -1;
	int rc = 0;
	/* Attaching rebuilds an index built by another analyser, or marked stale. */
	if (o.ix && s->ops->index_attach && (rc = s->ops->index_attach(s, o.ix)) != 0)
		a2m_check_say(&o, A2M_CHECK_INDEX, 1, "cannot rebuild: %s", s->errmsg);
	if (!rc && !s->ops->repair) {
		a2m_check_say(&o, A2M_CHECK_FILE, 1, "the %s engine has no repair", s->ops->engine);
		rc = -1;
	} else if (!rc && (rc = s->ops->repair(s, &o, mask)) != 0) {
		a2m_check_say(&o, A2M_CHECK_FILE, 1, "repair stopped: %s", s->errmsg);
	}
	s->ops->close(s);
	return rc ? -1 : 0;
}

static void setup_free(setup *st)
{
	if (st->scorer)
		st->scorer->destroy(st->scorer);
	a2m_tiers_free(&st->layout);
	a2m_config_free(st->cfg);
	free(st->mirror_dir);
}

int a2m_check_store(const a2m_config *cfg_in, a2m_check_run *run, char *err, size_t errlen)
{
	setup st;
	unsigned caps;
	a2m_metric metric;
	struct stat sb;
	int rc = A2M_RANGE;
	memset(&st, 0, sizeof st);
	run->found = run->remaining = 0;
	if (!(st.cfg = a2m_config_copy(cfg_in))) {
		snprintf(err, errlen, "out of memory");
		return A2M_NOMEM;
	}
	if (a2m_server_resolve(st.cfg, &st.layout, &caps, &metric, err, errlen) != A2M_OK)
		goto out;
	int pg = strcmp(st.cfg->engine, "postgres") == 0;
	if (!pg && strcmp(st.cfg->engine, "sqlite") != 0) {
		snprintf(err, errlen, "a %s store has nothing on disk to check: name a database "
			 "with --db, or a deployment with --postgres", st.cfg->engine);
		goto out;
	}
	/* A repair opens read-write, which would create a missing file. (A
	** deployment's read-only open refuses a schema that is not there.) */
	if (!pg && stat(st.cfg->path, &sb) != 0) {
		snprintf(err, errlen, "%s: %s", st.cfg->path, strerror(errno));
		goto out;
	}
	if (!(st.scorer = a2m_server_scorer(st.cfg->ranking, metric, 0, 0, 0, st.cfg->embed_weight, err, errlen)) ||
	    a2m_server_mirror(st.cfg, &st.layout, &st.mirror_dir, &st.mirror_tier) != 0) {
		snprintf(err, errlen, "out of memory");
		rc = A2M_NOMEM;
		goto out;
	}
	if (caps & A2M_CAP_X_HISTORY)
		st.history_keep = (size_t)st.cfg->history_revisions;
	rc = 0;
	run->found = run->remaining = check_pass(&st, run, A2M_CHECK_FIRST);
	if (!run->repair || !run->found)
		goto out;
	/* A file that could not be looked into at all: every derived area is suspect. */
	unsigned mask = run->found & (1u << A2M_CHECK_FILE) ? REPAIRABLE : run->found & REPAIRABLE;
	if (repair_pass(&st, run, mask) != 0) {
		run->remaining = run->found;
		goto out;
	}
	run->remaining = check_pass(&st, run, A2M_CHECK_AFTER);
out:
	setup_free(&st);
	return rc;
}
