/*
** sqlite_mirror.c — the SQLite engine's side of the procedural mirror
** (mirror.c): setting it up at open, telling whether a write touches a
** mirrored record's file (read before the write, while the old row is at
** hand), and bringing the mirror up to date after a commit. Apart from
** sqlite.c, which does the writes, because it is a concern of its own that
** only a store opened with a procedural tier ever meets.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "a2m.h"
#include "store/sqlite_internal.h"

/* What a record's mirror file depends on, when it is in the mirrored tier. */
#define SQL_MIRROR_OLD \
	"SELECT key, content, owner, created_at, revision FROM records" \
	" WHERE id = ?1 AND tier = ?2"

/* ---- the procedural mirror --------------------------------------------- */

/*
** Brings the mirror up to date after a commit. The commit has happened, so
** a failure here is not the caller's failure: it is kept in errmsg and
** counted (store.h, a2m_sqlite_options), and the next commit reconciles.
*/
void a2m_sqlite_mirror_apply(sqlstore *s)
{
	char err[sizeof s->base.errmsg];
	if (!s->mirror)
		return;
	if (a2m_mirror_apply(s->mirror, &s->base, err, sizeof err) != 0) {
		snprintf(s->base.errmsg, sizeof s->base.errmsg, "%s", err);
		s->base.mirror_failures++;
	}
}

/* After a successful write: applies it at once if it committed on its own. */
void a2m_sqlite_after_write(sqlstore *s)
{
	if (s->mirror && sqlite3_get_autocommit(s->db))
		a2m_sqlite_mirror_apply(s);
}

int a2m_sqlite_in_mirror_tier(const sqlstore *s, const char *tier)
{
	return tier && strcmp(tier, a2m_mirror_tier(s->mirror)) == 0;
}

static int same_text(const unsigned char *a, const char *b)
{
	if (!a || !b)
		return !a && !b;
	return strcmp((const char *)a, b) == 0;
}

/*
** Before an update or remove of id: whether the record is in the mirrored
** tier (*was_in), its file name then (*old_name, malloc'd, NULL when it is
** not), and whether rec (NULL for a remove) would leave that file's bytes
** unchanged (*same), which lets the frequent bookkeeping updates (access
** counts) skip the mirror entirely. The name is taken while the row is at
** hand: its text must not be read after the write.
*/
int a2m_sqlite_mirror_before(sqlstore *s, const char *id, const a2m_record *rec,
			     int *was_in, int *same, char **old_name)
{
	int rc = 0;
	*was_in = *same = 0;
	*old_name = NULL;
	if (a2m_sqlite_bind_text(s->mirror_old, 1, id) != SQLITE_OK ||
	    a2m_sqlite_bind_text(s->mirror_old, 2, a2m_mirror_tier(s->mirror)) != SQLITE_OK) {
		rc = a2m_sqlite_db_fail(s, "mirror");
		goto out;
	}
	int step = sqlite3_step(s->mirror_old);
	if (step == SQLITE_DONE)
		goto out;
	if (step != SQLITE_ROW) {
		rc = a2m_sqlite_db_fail(s, "mirror");
		goto out;
	}
	const unsigned char *key = sqlite3_column_text(s->mirror_old, 0);
	const unsigned char *content = sqlite3_column_text(s->mirror_old, 1);
	const unsigned char *owner = sqlite3_column_text(s->mirror_old, 2);
	a2m_record old;
	memset(&old, 0, sizeof old);
	old.id = (char *)id;
	old.key = (char *)key;
	old.content = (char *)content;
	*old_name = a2m_mirror_file_name(&old);
	if (!*old_name || !content) {
		free(*old_name);
		*old_name = NULL;
		rc = a2m_store_fail(&s->base, "mirror: out of memory");
		goto out;
	}
	*was_in = 1;
	*same = rec && same_text(key, rec->key) && same_text(content, rec->content) &&
		same_text(owner, rec->owner) &&
		sqlite3_column_int64(s->mirror_old, 3) == rec->created_at &&
		sqlite3_column_int64(s->mirror_old, 4) == rec->revision;
out:
	a2m_sqlite_done(s->mirror_old);
	return rc;
}

/* Sets up the mirror, if opt asks for one, and heals the directory. */
int a2m_sqlite_open_mirror(sqlstore *s, const a2m_sqlite_options *opt)
{
	char err[sizeof s->base.errmsg];
	if (s->base.read_only || !opt->procedural_dir || !opt->procedural_dir[0] ||
	    !opt->procedural_tier || !opt->procedural_tier[0])
		return 0;
	s->mirror = a2m_mirror_new(opt->procedural_dir, opt->procedural_tier);
	if (!s->mirror)
		return a2m_store_fail(&s->base, "procedural mirror: out of memory");
	if (a2m_sqlite_prepare(s, &s->mirror_old, SQL_MIRROR_OLD))
		return A2M_INTERNAL_ERROR;
	if (a2m_mirror_reconcile(s->mirror, &s->base, err, sizeof err) != 0)
		return a2m_store_fail(&s->base, "%s", err);
	return 0;
}
