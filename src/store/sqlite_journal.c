/*
** sqlite_journal.c — what the main connection's last commits changed, so
** that the readers of its pool (sqlite_pool.c) keep their caches across
** them instead of emptying them at every change of the data version.
**
** Why: recall's touches (src/stack/touches.c) are committed by the main
** connection several times a second. Each commit moves the data version
** every reader's row and postings caches are keyed on, and a reader that
** empties them at every move runs cold: SQLite recall at 10k records on
** two threads served about 6 500 req/s with the flushes, over 9 400
** without. The main connection keeps its own caches across its commits
** (sqlite_txn.c, caches_committed) because it knows what it wrote; this
** file tells the readers the same.
**
** How: every write transaction of the main connection, once the pool has
** opened a reader, takes a number stored in the file, in the same
** transaction (the row "commits" of
** a2m_meta, made by the first commit that needs it: no migration; a plain
** update of the number this connection's last commit took while no other
** commit came since, a2m_sqlite_after_holds), and
** notes as it goes what the caches care about: the touches it applied,
** the seqs of the records it wrote, "a record of unknown seq was written"
** and whether it wrote postings. Just before COMMIT the notes go into a
** ring of the last JOURNAL_COMMITS commits, under the journal's mutex. A
** reader whose data version moved since its caches were synced reads the
** number in its new snapshot: when every number from the one its caches
** are at to the new one is in the ring, it replays those commits on its
** caches, as the main connection did on its own, and the caches adopt
** the new version; else (another process wrote and took a number, the
** ring overflowed, or the version moved but not the number: a writer that
** is not a2m) the caches are left to empty themselves at the new version,
** as before.
**
** The blind spot: a write that takes no number (plain SQL, or an a2m
** build from before the journal) landing between the same two brackets of
** a reader as one of our commits is not seen, since the numbers still run
** without a gap; the reader keeps rows or postings that write changed
** until the next change the journal cannot explain. Writing an a2m file
** with anything but a2m is not supported (the term index and its figures
** would go stale just the same), and one a2m build writes a file at a
** time; another a2m process of this build is always seen, because it
** takes a number of its own.
*/
#include <pthread.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_internal.h"

/* Commits remembered: more between two brackets of a reader empty its caches. */
#define JOURNAL_COMMITS 64

/* Notes one commit may keep; a bigger one forgets every row instead. */
#define JOURNAL_OPS_MAX 65536

/* The statements of the number: the main connection's bump, a reader's read. */
#define SQL_BUMP \
	"INSERT INTO a2m_meta(name, value) VALUES('commits', 1)" \
	" ON CONFLICT(name) DO UPDATE SET value = value + 1 RETURNING value"
#define SQL_NUMBER "SELECT value FROM a2m_meta WHERE name = 'commits'"
/* The bump when the number is known (a2m_sqlite_after_holds): no RETURNING. */
#define SQL_NUMBER_SET "UPDATE a2m_meta SET value = ?1 WHERE name = 'commits'"

enum { NOTE_TOUCH, NOTE_FORGET };

struct a2m_sqlite_note {
	int64_t seq, add, at;
	int     kind;
};

typedef struct entry {
	int64_t         no;        /* the number the commit took */
	a2m_sqlite_note *notes;    /* in the order they were made */
	size_t          n;
	int             all_rows;  /* forget every row (rows_unsure, or too many notes) */
	int             postings;  /* postings were written */
} entry;

struct a2m_sqlite_journal {
	pthread_mutex_t mu;
	entry           ring[JOURNAL_COMMITS];
	size_t          next;      /* the slot the next commit takes */
	size_t          count;     /* commits held, at most JOURNAL_COMMITS */
};

a2m_sqlite_journal *a2m_sqlite_journal_new(void)
{
	a2m_sqlite_journal *j = calloc(1, sizeof *j);
	if (j && pthread_mutex_init(&j->mu, NULL) != 0) {
		free(j);
		return NULL;
	}
	return j;
}

void a2m_sqlite_journal_free(a2m_sqlite_journal *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < JOURNAL_COMMITS; i++)
		free(j->ring[i].notes);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

/* ---- the main connection's side ---------------------------------------- */

/* Forgets the notes of the transaction (it begins, or was rolled back). */
void a2m_sqlite_journal_drop(sqlstore *s)
{
	s->notes_n = 0;
	s->notes_all_rows = 0;
	if (s->index)
		a2m_sqlite_index_take_wrote(s->index);
}

/*
** Notes are kept only inside a transaction: a write in autocommit moves the
** version without a number, and readers empty their caches for it anyway;
** kept, it would be replayed a second time with the next commit.
*/
static void note(sqlstore *s, int kind, int64_t seq, int64_t add, int64_t at)
{
	if (!s->journal || s->notes_all_rows || sqlite3_get_autocommit(s->db))
		return;
	if (s->notes_n == s->notes_cap) {
		size_t cap = s->notes_cap ? 2 * s->notes_cap : 64;
		a2m_sqlite_note *v = cap <= JOURNAL_OPS_MAX
			? realloc(s->notes, cap * sizeof *v) : NULL;
		if (!v) {  /* too many, or no memory: the readers forget every row */
			s->notes_all_rows = 1;
			return;
		}
		s->notes = v;
		s->notes_cap = cap;
	}
	s->notes[s->notes_n++] = (a2m_sqlite_note){seq, add, at, kind};
}

void a2m_sqlite_journal_touch(sqlstore *s, int64_t seq, int64_t add, int64_t at)
{
	note(s, NOTE_TOUCH, seq, add, at);
}

void a2m_sqlite_journal_forget(sqlstore *s, int64_t seq)
{
	if (seq)
		note(s, NOTE_FORGET, seq, 0, 0);
	else if (s->journal)
		s->notes_all_rows = 1;
}

int a2m_sqlite_journal_stage(sqlstore *s)
{
	s->staged = 0;
	/* No reader yet: nobody replays the ring, and a lone insert saves the
	** a2m_meta page the number is written to (a reader opened meanwhile
	** sees the data version move without a number, and empties its
	** caches, as for any writer it cannot follow). */
	if (!s->journal || sqlite3_get_autocommit(s->db))
		return 0;
	if (!a2m_sqlite_pool_readers_seen(s->pool)) {
		s->unnumbered = 1;
		return 0;
	}
	int64_t no = 0;
	int rc = 0;
	/* The number our last commit took, when nothing committed since: a
	** plain update (the upsert with RETURNING was a tenth of a lone
	** remember). */
	if (s->after_number && a2m_sqlite_after_holds(s)) {
		if (!s->number_set &&
		    sqlite3_prepare_v3(s->db, SQL_NUMBER_SET, -1, SQLITE_PREPARE_PERSISTENT,
				       &s->number_set, NULL) != SQLITE_OK)
			return a2m_sqlite_db_fail(s, "commit number");
		if (sqlite3_bind_int64(s->number_set, 1, s->after_number + 1) != SQLITE_OK ||
		    sqlite3_step(s->number_set) != SQLITE_DONE)
			rc = a2m_sqlite_db_fail(s, "commit number");
		else if (sqlite3_changes(s->db) == 1)
			no = s->after_number + 1;
		sqlite3_reset(s->number_set);
		if (rc)
			return rc;
	}
	if (!no) {
		if (!s->number &&
		    sqlite3_prepare_v3(s->db, SQL_BUMP, -1, SQLITE_PREPARE_PERSISTENT, &s->number,
				       NULL) != SQLITE_OK)
			return a2m_sqlite_db_fail(s, "commit number");
		int step = sqlite3_step(s->number);
		no = step == SQLITE_ROW ? sqlite3_column_int64(s->number, 0) : 0;
		if (step == SQLITE_ROW)
			step = sqlite3_step(s->number);
		rc = step == SQLITE_DONE ? 0 : a2m_sqlite_db_fail(s, "commit number");
		sqlite3_reset(s->number);
		if (rc)
			return rc;
	}
	s->staged_no = no;
	/* The entry goes in before COMMIT: a reader that sees the number in its
	** snapshot finds what it changed. A failed COMMIT takes it out again
	** (unstage) before any snapshot can hold the number. */
	pthread_mutex_lock(&s->journal->mu);
	entry *e = &s->journal->ring[s->journal->next];
	free(e->notes);
	/* The first number after a commit that took none while a reader was
	** opening: the reader may have synced before that commit landed, and
	** would find no gap in the numbers, so this one empties its caches. */
	*e = (entry){.no = no, .notes = s->notes, .n = s->notes_n,
		     .all_rows = s->notes_all_rows || s->unnumbered,
		     .postings = (s->index && a2m_sqlite_index_take_wrote(s->index)) ||
				 s->unnumbered};
	s->journal->next = (s->journal->next + 1) % JOURNAL_COMMITS;
	if (s->journal->count < JOURNAL_COMMITS)
		s->journal->count++;
	pthread_mutex_unlock(&s->journal->mu);
	s->notes = NULL;
	s->notes_n = s->notes_cap = 0;
	s->notes_all_rows = 0;
	s->staged = 1;  /* and unnumbered is cleared once the COMMIT is in (sqlite_txn.c) */
	return 0;
}

void a2m_sqlite_journal_unstage(sqlstore *s)
{
	if (!s->staged)
		return;
	s->staged = 0;
	s->staged_no = 0;
	pthread_mutex_lock(&s->journal->mu);
	s->journal->next = (s->journal->next + JOURNAL_COMMITS - 1) % JOURNAL_COMMITS;
	s->journal->count--;
	entry *e = &s->journal->ring[s->journal->next];
	free(e->notes);
	*e = (entry){0};
	pthread_mutex_unlock(&s->journal->mu);
}

/* ---- a reader's side --------------------------------------------------- */

/* The number in c's snapshot: 1, 0 when the file has none yet, or < 0. */
static int read_number(sqlstore *c, int64_t *no)
{
	*no = 0;
	if (!c->number &&
	    sqlite3_prepare_v3(c->db, SQL_NUMBER, -1, SQLITE_PREPARE_PERSISTENT, &c->number, NULL)
	    != SQLITE_OK)
		return -1;
	int step = sqlite3_step(c->number);
	if (step == SQLITE_ROW)
		*no = sqlite3_column_int64(c->number, 0);
	sqlite3_reset(c->number);
	return step == SQLITE_ROW ? 1 : step == SQLITE_DONE ? 0 : -1;
}

/*
** Replays the commits numbered from + 1 .. to on c's caches. Returns 1, or
** 0 with the caches untouched when one of them is not in the ring.
*/
static int replay(a2m_sqlite_journal *j, sqlstore *c, int64_t from, int64_t to)
{
	int done = 0;
	pthread_mutex_lock(&j->mu);
	size_t oldest = (j->next + JOURNAL_COMMITS - j->count) % JOURNAL_COMMITS;
	size_t first = 0, found = 0;
	/* Numbers only grow from slot to slot, but not always by one: another
	** process's commits take theirs in between. */
	for (size_t k = 0; k < j->count; k++) {
		const entry *e = &j->ring[(oldest + k) % JOURNAL_COMMITS];
		if (e->no > from && e->no <= to && found++ == 0)
			first = k;
	}
	if (to - from <= JOURNAL_COMMITS && found == (size_t)(to - from)) {
		for (size_t k = first; k < first + found; k++) {
			const entry *e = &j->ring[(oldest + k) % JOURNAL_COMMITS];
			if (e->all_rows)
				a2m_row_cache_clear(c->rows);
			for (size_t i = 0; i < e->n && !e->all_rows; i++) {
				const a2m_sqlite_note *n = &e->notes[i];
				if (n->kind == NOTE_TOUCH)
					a2m_row_cache_touch(c->rows, n->seq, n->add, n->at);
				else
					a2m_row_cache_forget(c->rows, n->seq);
			}
			if (e->postings && c->index)
				a2m_sqlite_index_forget_postings(c->index);
		}
		done = 1;
	}
	pthread_mutex_unlock(&j->mu);
	return done;
}

void a2m_sqlite_journal_sync(a2m_sqlite_journal *j, sqlstore *c)
{
	unsigned v = 0;
	int64_t no = 0;
	if (!a2m_sqlite_data_version(c->db, &v)) {
		c->synced = 0;
		return;
	}
	if (c->synced && v == c->synced_version)
		return;
	int have = read_number(c, &no);
	if (have < 0) {
		c->synced = 0;  /* the caches empty themselves at the new version */
		return;
	}
	/* A version that moved with the number still (have == c->synced_have,
	** no == c->synced_no) was a writer that is not a2m: nothing replayed,
	** the caches find the version changed and empty themselves. */
	if (c->synced && have && no > c->synced_no &&
	    replay(j, c, c->synced_no, no)) {
		a2m_row_cache_adopt(c->rows, c->synced_version, v);
		if (c->index)
			a2m_sqlite_index_committed(c->index, c->synced_version, v);
	}
	c->synced = 1;
	c->synced_version = v;
	c->synced_no = no;
	c->synced_have = have;
}
