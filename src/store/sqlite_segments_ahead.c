/*
** sqlite_segments_ahead.c — when the SQLite term index's segments merge
** and how: ahead on a thread, whole inside a commit, or in steps; and the
** writing of a merge's output in place of its inputs. Apart from
** sqlite_segments.c (a segment's rows and directory row as a commit writes
** them) because this is policy and scheduling, which change on their own
** as measurements come in; the merge itself is sqlite_segments_merge.c's,
** the steps' bookkeeping sqlite_segments_step.c's.
**
** Merge policy, tiered: a commit writes a segment at level 0; a level that
** holds MERGE_FACTOR (8) segments is merged into one of the next level,
** and so on up: ahead, by the next write transaction (see "merging"
** below), or, with merge_inline, inside the commit that filled it. Since a
** merge takes a whole level and the levels below it are then empty (or
** hold only segments newer than it), the segments of a higher
** level are always older than those of a lower one, so the merged segments
** are always a contiguous run in age, and the merged one takes the number
** of the newest it replaced: newest-wins stays true.
** A merge drops the tombstones nothing older can need: those whose seq is
** above the maxseq of every segment older than its run (sqlite_segments.h),
** all of them when the run starts at the oldest live segment. A store that
** forgets what it remembered a while ago so keeps its index the size of
** its records, not of its history (`a2m bench soak` found that it did
** not: 4.5 million entries for 40 000 postings after ten minutes).
**
** The cost: a term is read from up to 8 segments per level (a seek each,
** skipped when the segment's Bloom filter of its terms rules the term out:
** most segments, for any but common words; measured at 10 000 records,
** 4 185 term reads found the term in 0.65 segments on average while each
** sought 3), and a merge is paid by the next write transaction, on a thread
** of its own (inline: by the commit that fills the level). With commits of 500
** records (~4 500 postings) a level-L segment holds ~4 500·8^L entries.
** Measured in `bench remember --single 0 --records 1000000` (a commit
** there takes ~38 ms): a level-2 merge (8 segments, 1.8 MB of rows) takes
** 37-77 ms, every 64 commits; the largest at 1M records, level 2 into 3
** (8 segments, ~2.3M entries, 10 MB of rows), 180-280 ms, every 512
** commits (3 of them in 2 000). The next, level 3 into 4 at ~2M records,
** would move ~80 MB: about 2 s, holding twice that in memory. (Those
** figures are from before merges ran ahead; a merge ahead overlaps the
** next transaction's own work, and its commit waits only for what is left
** of it.) Small merges are done whole, in memory (the inputs are read
** fully, and the output built in full before the inputs are deleted and it
** is written, so the freed pages are reused at once). A full level of
** STEP_MIN_ENTRIES or more is merged in steps instead, a budget of bytes
** per commit (sqlite_segments_step.c): the first level-4 merge, at 2.05M
** records, stalled one remember for 1.65 s when done whole. A level with a
** merge in steps under way waits for it (it may hold more than the merge
** factor's segments meanwhile), so no two merges of one level overlap and
** the runs stay contiguous in age.
*/
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "store/sqlite_index.h"
#include "store/sqlite_segments.h"
#include "store/sqlite_segments_internal.h"
#include "util/hash.h"
#include "util/phase.h"

/*
** A full level of fewer entries than this is merged inside the commit, not
** ahead: starting a thread and handing it the inputs costs more than a
** small merge (a single-record remember was 12% slower, its level 0 merged
** ahead every 8 commits). A commit's segment of a 500-record batch holds
** ~4 500 entries.
*/
#define AHEAD_MIN_ENTRIES LEVEL0_ENTRIES

/*
** A merge begun ahead whose thread has not finished when the commit comes
** is left running, and written by a later commit that finds it done: the
** writer does not wait for a thread the scheduler has not run. On two
** loaded cores (docs/BENCHMARKS.md, "Where a slow remember's time goes") a
** commit waited up to 488 ms for a merge of ~5 ms of CPU. The level's new
** segments are not merged while it is pending, so once the level is
** nearly full again the commit waits after all (ahead_defer).
*/
#ifdef A2M_TEST_HOOKS
static int ahead_wait_for_tests;

void a2m_segments_ahead_wait_for_tests(int mode)
{
	ahead_wait_for_tests = mode;
}
#else
#define ahead_wait_for_tests 0
#endif

#ifdef A2M_TEST_HOOKS
static int64_t ahead_min_for_tests = -1;

void a2m_segments_ahead_min_for_tests(int64_t entries)
{
	ahead_min_for_tests = entries;
}
#else
#define ahead_min_for_tests ((int64_t)-1)
#endif

/*
** A full level of at least this many entries is merged in steps, a budget
** of bytes per commit (sqlite_segments_step.c), not whole: level 1 into 2
** (8 segments of ~36 000 entries with 500-record commits, 1.8 MB) took
** 37-77 ms whole, level 2 into 3 180-280 ms, level 3 into 4 1.65 s.
*/
#define STEP_MIN_ENTRIES 100000

/*
** The bytes of inputs a commit's steps read: STEP_FACTOR times its own
** segment's bytes, within STEP_MIN_BYTES and STEP_MAX_BYTES. Each level
** rewrites every entry once, so the steps keep up while the factor exceeds
** the levels (7 at 10M records); the cap bounds the pause of a big commit.
*/
#define STEP_FACTOR    8
#define STEP_MIN_BYTES ((size_t)64 << 10)
#define STEP_MAX_BYTES ((size_t)512 << 10)

/*
** With this many live segments, merges under way are finished at once,
** whatever it costs: a read takes at most A2M_SEG_MAX_LISTS segments.
*/
#define STEP_PANIC_SEGS 48

#ifdef A2M_TEST_HOOKS
static int64_t step_min_for_tests = -1;
static size_t  step_budget_for_tests;

void a2m_segments_steps_for_tests(int64_t min_entries, size_t budget)
{
	step_min_for_tests = min_entries;
	step_budget_for_tests = budget;
}
#else
#define step_min_for_tests    ((int64_t)-1)
#define step_budget_for_tests ((size_t)0)
#endif

/* The fewest entries of a full level merged ahead: none when merging inline. */
int64_t a2m_seg_ahead_min(const a2m_segments *s)
{
	if (s->inline_merges)
		return INT64_MAX;
	return ahead_min_for_tests >= 0 ? ahead_min_for_tests : AHEAD_MIN_ENTRIES;
}

/* ---- merging ---- */

/*
** Merges are computed apart from SQLite (sqlite_segments_merge.c): the
** inputs are read whole, merged in memory, then deleted, and the output
** written, so the freed pages are reused at once. A level that holds the
** merge factor's segments when a write transaction begins is merged ahead:
** read then, merged on a thread of its own while the transaction goes on,
** written by its commit (a2m_segments_maintain), or by a later one when
** its thread has not finished (AHEAD_MIN_ENTRIES). The inputs cannot
** change meanwhile within the transaction: it holds the write lock, and
** only its commit writes segments; this connection's later commits leave
** them out of their merges (level_row), and another writer's merge of them
** is noticed by their nonces (ahead_intact). A level that holds more (no
** thread would start, or a merge filled the next level) is merged inside
** the commit, as before.
*/

/* The store error for a2m_seg_merge_inputs's or a2m_seg_input_add's code. */
static int merge_failed(a2m_store *base, int code)
{
	return a2m_store_fail(base, code == -2 ? "index merge: a corrupt segment"
					       : "index merge: out of memory");
}

static int load_row(sqlite3_stmt *st, a2m_store *base, void *ctx)
{
	const void *data = sqlite3_column_blob(st, 0);
	size_t n = (size_t)sqlite3_column_bytes(st, 0);
	int got = n && !data ? -1 : a2m_seg_input_add(ctx, data, n);
	return got ? merge_failed(base, got) : 0;
}

static int load(a2m_segments *s, a2m_store *base, a2m_seg_input *in)
{
	int bound = sqlite3_bind_int64(s->load, 1, in->seg) == SQLITE_OK;
	return each_row(s, base, s->load, bound, "merge", load_row, in);
}

/* Deletes segment seg: its rows and its directory row, which must exist. */
static int drop(a2m_segments *s, a2m_store *base, int64_t seg)
{
	int ok = sqlite3_bind_int64(s->drop_rows, 1, seg) == SQLITE_OK &&
		sqlite3_step(s->drop_rows) == SQLITE_DONE &&
		sqlite3_bind_int64(s->drop_dir, 1, seg) == SQLITE_OK &&
		sqlite3_step(s->drop_dir) == SQLITE_DONE;
	int gone = ok && sqlite3_changes(s->db) == 1;
	reset(s->drop_rows);
	reset(s->drop_dir);
	s->dir_valid = 0;
	if (ok && !gone)
		return a2m_store_fail(base, "index merge: segment %lld is not there",
				      (long long)seg);
	return ok ? 0 : fail(s, base, "merge");
}

/*
** Replaces the n inputs in[] by the merged segment out (entries of them),
** at level (< 0: by its size), numbered as the newest it replaces: the run
** is contiguous in age, so the merged segment stands where the run stood.
*/
static int write_merged(a2m_segments *s, a2m_store *base, const a2m_seg_input *in, size_t n,
			const a2m_seg_build *out, int64_t entries, int level)
{
	int64_t seg = in[n - 1].seg;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		rc = drop(s, base, in[i].seg);
	const unsigned char *p = out->done.p, *end = p + out->done.n, *first, *block;
	size_t flen, blen;
	int got = 0;
	while (!rc && (got = a2m_seg_next_in_block(&p, end, &first, &flen, &block, &blen)) == 1)
		rc = a2m_seg_write_row(s, base, seg, first, flen, block, blen);
	if (!rc && got < 0)
		rc = merge_failed(base, -2);
	if (!rc && entries)
		rc = a2m_seg_write_dir(s, base, seg, level < 0 ? a2m_segments_level_for(entries) : level,
			       entries, out->maxseq, out->hashes, out->nhashes);
	return rc;
}

/* Segment numbers as a statement lists them. */
typedef struct seg_list {
	int64_t *segs;
	size_t   n, cap;
} seg_list;

static int list_row(sqlite3_stmt *st, a2m_store *base, void *ctx)
{
	seg_list *l = ctx;
	if (a2m_seg_grow(&l->segs, &l->cap, l->n + 1, sizeof *l->segs) != 0)
		return a2m_store_fail(base, "index merge: out of memory");
	l->segs[l->n++] = sqlite3_column_int64(st, 0);
	return 0;
}

/*
** The tombstone floor of a run that starts at segment first: the highest
** maxseq of the segments older than it, 0 when there are none, INT64_MAX
** when one of them does not know its own.
*/
static int tombstone_floor(a2m_segments *s, a2m_store *base, int64_t first, int64_t *floor)
{
	if (a2m_seg_prepare_once(s, base, &s->floor, "SELECT count(*) - count(maxseq), ifnull(max(maxseq), 0)"
			 " FROM a2m_segdir WHERE seg < ?1"))
		return A2M_INTERNAL_ERROR;
	int rc = 0;
	if (sqlite3_bind_int64(s->floor, 1, first) != SQLITE_OK ||
	    sqlite3_step(s->floor) != SQLITE_ROW)
		rc = fail(s, base, "merge");
	else
		*floor = sqlite3_column_int64(s->floor, 0) ? INT64_MAX
							    : sqlite3_column_int64(s->floor, 1);
	reset(s->floor);
	return rc;
}

/*
** Reads the segments st lists (bound by the caller), oldest first: *in
** (*n of them; a2m_seg_inputs_free) and the tombstone floor of their merge.
*/
static int load_listed(a2m_segments *s, a2m_store *base, sqlite3_stmt *st,
		       a2m_seg_input **in, size_t *n, int64_t *floor)
{
	seg_list l = {0};
	*in = NULL;
	*n = 0;
	*floor = INT64_MAX;
	int rc = each_row(s, base, st, 1, "merge", list_row, &l);
	if (!rc && l.n > A2M_SEG_MAX_LISTS)
		rc = a2m_store_fail(base, "index merge: too many segments");
	if (!rc && !(*in = calloc(l.n ? l.n : 1, sizeof **in)))
		rc = a2m_store_fail(base, "index merge: out of memory");
	for (size_t i = 0; !rc && i < l.n; i++) {
		(*in)[i].seg = l.segs[i];
		*n = i + 1;
		rc = load(s, base, &(*in)[i]);
	}
	if (!rc && l.n)
		rc = tombstone_floor(s, base, l.segs[0], floor);
	free(l.segs);
	return rc;
}

/* *nonce gets segment seg's nonce; 0 when it has no directory row (or none). */
static int nonce_of(a2m_segments *s, a2m_store *base, int64_t seg, int64_t *nonce)
{
	if (a2m_seg_prepare_once(s, base, &s->nonce_of, "SELECT nonce FROM a2m_segdir WHERE seg = ?1"))
		return A2M_INTERNAL_ERROR;
	*nonce = 0;
	int rc = 0, step = SQLITE_DONE;
	if (sqlite3_bind_int64(s->nonce_of, 1, seg) != SQLITE_OK ||
	    ((step = sqlite3_step(s->nonce_of)) != SQLITE_ROW && step != SQLITE_DONE))
		rc = fail(s, base, "merge");
	else if (step == SQLITE_ROW)
		*nonce = sqlite3_column_int64(s->nonce_of, 0);
	reset(s->nonce_of);
	return rc;
}

/*
** Whether the inputs of the merge begun ahead are all still live as it
** read them (*intact): each input's directory row there with the nonce it
** had. Only a merge takes a segment out, and new segments get new numbers
** or, after a rebuild, new nonces.
*/
static int ahead_intact(a2m_segments *s, a2m_store *base, int *intact)
{
	*intact = 1;
	for (size_t i = 0; i < s->ahead->n && *intact; i++) {
		int64_t nonce;
		int rc = nonce_of(s, base, s->ahead->in[i].seg, &nonce);
		if (rc)
			return rc;
		*intact = nonce == s->ahead_nonce[i];
	}
	return 0;
}

/* Merges the segments st lists into one, at level (< 0: by its size), here and now. */
static int merge_listed(a2m_segments *s, a2m_store *base, sqlite3_stmt *st, int level)
{
	a2m_seg_input *in = NULL;
	a2m_seg_build out = {0};
	size_t n = 0;
	int64_t entries = 0, floor = INT64_MAX;
	int rc = load_listed(s, base, st, &in, &n, &floor);
	if (!rc && n) {
		int got = a2m_seg_merge_inputs(in, n, floor, &out, &entries);
		rc = got ? merge_failed(base, got) : write_merged(s, base, in, n, &out, entries, level);
	}
	a2m_seg_build_free(&out);
	a2m_seg_inputs_free(in, n);
	return rc;
}

/* What a2m_segdir holds per level, but the inputs of merges under way. */
typedef struct level_counts {
	const a2m_seg_steps *steps;
	const a2m_seg_job   *ahead;
	int64_t segs[A2M_SEG_MAX_LISTS], entries[A2M_SEG_MAX_LISTS];
	int64_t live;  /* every live segment */
	int     n;     /* levels 0 .. n-1 */
} level_counts;

static int level_row(sqlite3_stmt *st, a2m_store *base, void *ctx)
{
	level_counts *c = ctx;
	int64_t level = sqlite3_column_int64(st, 0);
	if (level < 0 || level >= A2M_SEG_MAX_LISTS)
		return a2m_store_fail(base, "index merge: a segment at level %lld", (long long)level);
	c->live++;
	int64_t seg = sqlite3_column_int64(st, 2);
	if (c->steps && a2m_seg_steps_is_input(c->steps, seg))
		return 0;
	for (size_t i = 0; c->ahead && i < c->ahead->n; i++)
		if (c->ahead->in[i].seg == seg)
			return 0;  /* a merge ahead still pending has it */
	c->segs[level]++;
	c->entries[level] += sqlite3_column_int64(st, 1);
	if (level >= c->n)
		c->n = (int)level + 1;
	return 0;
}

/* The fewest entries of a full level merged in steps. */
static int64_t step_min(const a2m_segments *s)
{
	if (!s->steps)
		return INT64_MAX;
	return step_min_for_tests >= 0 ? step_min_for_tests : STEP_MIN_ENTRIES;
}

/* How a level is merged (level_to_merge). */
enum { MERGE_NONE, MERGE_WHOLE, MERGE_AHEAD, MERGE_STEPS };

/*
** The lowest level to merge (*level, -1 for none) and how (*how). A level
** with a merge in steps under way waits for it. Ahead: one full, big enough
** to be worth a thread and too small for steps. Else, inside the commit:
** one full and big enough for steps (begun), or over full, or full and too
** small for a thread (inline: every full one). *live gets the live segments.
*/
static int level_to_merge(a2m_segments *s, a2m_store *base, int ahead, int64_t *level,
			  int *how, int64_t *live)
{
	level_counts c;
	memset(&c, 0, sizeof c);
	c.steps = s->steps;
	c.ahead = s->ahead;
	*level = -1;
	*how = MERGE_NONE;
	int rc = each_row(s, base, s->levels, 1, "merge", level_row, &c);
	int k = a2m_seg_merge_factor();
	for (int l = 0; !rc && l < c.n && *level < 0; l++) {
		if (c.segs[l] < k || (s->steps && a2m_seg_steps_busy(s->steps, l)))
			continue;
		int big = c.entries[l] >= a2m_seg_ahead_min(s), steps = c.entries[l] >= step_min(s);
		if (ahead)
			*how = big && !steps ? MERGE_AHEAD : MERGE_NONE;
		else if (steps)
			*how = MERGE_STEPS;
		else
			*how = c.segs[l] > k || !big ? MERGE_WHOLE : MERGE_NONE;
		if (*how != MERGE_NONE)
			*level = l;
	}
	if (live)
		*live = c.live;
	return rc;
}

int a2m_segments_merge_ahead(a2m_segments *s, a2m_store *base)
{
	int64_t level = -1;
	int how;
	if (s->ahead)
		s->ahead_txns++;
	if (s->ahead || s->inline_merges || !s->maybe_full)
		return 0;
	if (s->steps && a2m_seg_steps_load(s->steps, base))
		return A2M_INTERNAL_ERROR;
	int rc = level_to_merge(s, base, 1, &level, &how, NULL);
	if (!rc && level < 0)
		s->maybe_full = 0;
	if (rc || level < 0)
		return rc;
	if (sqlite3_bind_int64(s->level_segs, 1, level) != SQLITE_OK)
		return fail(s, base, "merge");
	a2m_seg_input *in = NULL;
	size_t n = 0;
	int64_t floor = INT64_MAX;
	rc = load_listed(s, base, s->level_segs, &in, &n, &floor);
	for (size_t i = 0; !rc && i < n; i++)
		rc = nonce_of(s, base, in[i].seg, &s->ahead_nonce[i]);
	/* Without a thread the level waits: the commit merges a level over full. */
	if (!rc && n && (s->ahead = a2m_seg_job_start(in, n, floor, (int)level + 1))) {
		s->ahead_txns = 0;
		return 0;
	}
	a2m_seg_inputs_free(in, n);
	return rc;
}

void a2m_segments_merge_inline(a2m_segments *s, int on)
{
	s->inline_merges = on;
}

int a2m_segments_merging(const a2m_segments *s)
{
	return s->ahead != NULL;
}

void a2m_segments_merge_cancel(a2m_segments *s)
{
	if (!s)  /* a rebuild that failed before it opened its segments */
		return;
	a2m_seg_job_free(s->ahead);
	s->ahead = NULL;
}

/* The last step of a merge in steps (a2m_seg_done_fn): the output in, the inputs out. */
typedef struct step_ctx {
	a2m_segments *s;
	a2m_store    *base;
} step_ctx;

static int step_done(const a2m_seg_done *d, void *ctx)
{
	step_ctx *c = ctx;
	a2m_segments *s = c->s;
	int rc = 0;
	for (size_t i = 0; i < d->ninputs && !rc; i++) {
		int ok = sqlite3_bind_int64(s->drop_dir, 1, d->inputs[i]) == SQLITE_OK &&
			sqlite3_step(s->drop_dir) == SQLITE_DONE;
		int gone = ok && sqlite3_changes(s->db) == 1;
		reset(s->drop_dir);
		if (!ok)
			rc = fail(s, c->base, "merge");
		else if (!gone)
			rc = a2m_store_fail(c->base, "index merge: segment %lld is not there",
					    (long long)d->inputs[i]);
	}
	s->dir_valid = 0;
	s->maybe_full = 1;
	if (!rc && d->entries)
		rc = a2m_seg_write_dir(s, c->base, d->out, d->level, d->entries, d->maxseq, d->hashes,
			       d->nhashes);
	return rc;
}

/* The bytes this commit's steps read (see STEP_FACTOR). */
static size_t step_budget(const a2m_segments *s)
{
	if (step_budget_for_tests)
		return step_budget_for_tests;
	size_t b = STEP_FACTOR * s->commit_bytes;
	return b < STEP_MIN_BYTES ? STEP_MIN_BYTES : b > STEP_MAX_BYTES ? STEP_MAX_BYTES : b;
}

/* Begins merging level in steps; 1 when it cannot (merge it whole then). */
static int begin_steps(a2m_segments *s, a2m_store *base, int64_t level)
{
	seg_list l = {0};
	int64_t floor = INT64_MAX;
	int rc = sqlite3_bind_int64(s->level_segs, 1, level) == SQLITE_OK
		 ? each_row(s, base, s->level_segs, 1, "merge", list_row, &l)
		 : fail(s, base, "merge");
	if (!rc && l.n)
		rc = tombstone_floor(s, base, l.segs[0], &floor);
	if (!rc)
		rc = a2m_seg_steps_begin(s->steps, base, l.segs, l.n, (int)level, floor);
	free(l.segs);
	return rc;
}

/*
** The merges of a commit: full levels merged whole or begun in steps, then
** the steps under way moved on by the commit's budget (all of them when the
** live segments near the cap), then retired segments' rows deleted.
*/
static int merge_levels(a2m_segments *s, a2m_store *base)
{
	int rc = s->steps ? a2m_seg_steps_load(s->steps, base) : 0;
	int64_t live = 0;
	for (;;) {
		int64_t level = -1;
		int how;
		if (rc || (rc = level_to_merge(s, base, 0, &level, &how, &live)) || level < 0)
			break;
		if (how == MERGE_STEPS && (rc = begin_steps(s, base, level)) <= 0)
			continue;
		if (sqlite3_bind_int64(s->level_segs, 1, level) != SQLITE_OK)
			return fail(s, base, "merge");
		rc = merge_listed(s, base, s->level_segs, (int)level + 1);
	}
	if (rc || !s->steps)
		return rc;
	size_t budget = live >= STEP_PANIC_SEGS ? SIZE_MAX : step_budget(s);
	step_ctx c = {s, base};
	int changed = 0;
	a2m_phase was = a2m_phase_enter(A2M_PHASE_STEPS);
	rc = a2m_seg_steps_run(s->steps, base, budget, step_done, &c, &changed);
	/* A finished merge may have filled the next level: the next commit looks. */
	if (!rc)
		rc = a2m_seg_steps_drop(s->steps, base, (int64_t)(step_budget(s) / A2M_SEG_BLOCK_BYTES));
	a2m_phase_leave(was);
	s->commit_bytes = 0;
	return rc;
}

/*
** Whether this commit leaves the merge begun ahead to a later one (see
** AHEAD_MIN_ENTRIES): not once the level holds, beside its inputs, one
** segment short of being full again.
*/
static int ahead_defer(const a2m_segments *s)
{
	if (ahead_wait_for_tests == 1)
		return 0;
	int done = ahead_wait_for_tests != 2 && a2m_seg_job_done(s->ahead);
	return !done && s->ahead_txns < a2m_seg_merge_factor() - 1;
}

static int maintain(a2m_segments *s, a2m_store *base, int all)
{
	int rc = 0, intact = 1;
	if (s->ahead && !all && ahead_defer(s))
		return merge_levels(s, base);
	if (s->ahead && (rc = ahead_intact(s, base, &intact)))
		return rc;
	if (s->ahead && !intact)
		a2m_segments_merge_cancel(s);  /* another writer merged its inputs */
	if (s->ahead) {
		a2m_seg_job *job = s->ahead;
		int got = a2m_seg_job_finish(job);
		rc = got ? merge_failed(base, got)
			 : write_merged(s, base, job->in, job->n, &job->out, job->entries, job->level);
		a2m_segments_merge_cancel(s);
		if (rc)
			return rc;
	}
	/* Merges under way first: their inputs are among the oldest. */
	if (all && s->steps) {
		step_ctx c = {s, base};
		int changed = 0;
		if ((rc = a2m_seg_steps_load(s->steps, base)) ||
		    (rc = a2m_seg_steps_run(s->steps, base, SIZE_MAX, step_done, &c, &changed)))
			return rc;
	}
	/* The oldest A2M_SEG_MAX_LISTS at a time: a contiguous run in age. */
	while (all) {
		int64_t count = 0;
		if ((rc = a2m_seg_one_int(s, base, s->count, &count, "merge")) || count < 2)
			return rc;
		if ((rc = merge_listed(s, base, s->all_segs, -1)))
			return rc;
	}
	return merge_levels(s, base);
}


int a2m_segments_maintain(a2m_segments *s, a2m_store *base, int all)
{
	a2m_phase was = a2m_phase_enter(A2M_PHASE_MERGE);
	int rc = maintain(s, base, all);
	a2m_phase_leave(was);
	return rc;
}
